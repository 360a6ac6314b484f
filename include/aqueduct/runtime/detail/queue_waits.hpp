// aqueduct/runtime/detail/queue_waits.hpp — the waits of every runtime queue (AQL, PM4, SDMA),
// written once over the queue's ticket kind: try_wait / wait on a ticket, try_finish / finish,
// completed / submitted, and why the device stopped the queue (fault / known_fault / own_fault).
//
// Layer: runtime (detail, not API). A queue `Q` derives from `queue_waits<Q, Kind>` and befriends
// it. The mixin reads from Q:
//   s_                  the queue's state (null when empty: every wait is then invalid_argument);
//                       its address names the tickets the queue issued; its `agent`, `event`,
//                       `opt.wait` are what a wait blocks on and how, its `stopped()` whether the
//                       device stopped the queue, and detail::arm_wake(*s_) asks the device for
//                       the event's interrupt before a wait blocks (issue 11);
//   queue_id(), describe(out), describe_queue(out) (without the device's fault), empty_queue();
//   PM4 / SDMA (sequence numbers): s_->progress (the last sequence number completed, written by
//     the device) and s_->submitted (the last one submitted);
//   s_->held            memory kept for owners that went away (detail/held_memory.hpp);
//   AQL (packet indexes, completion from per-slot signals, runtime/detail/aql_slots.hpp):
//     wait_ticket(index, timeout) (which refuses a packet not reserved yet BEFORE its fast path:
//     issue 13 bug 12), wait_all(timeout), ticket_complete(index), progress(), issued().
// Every wait goes through the one progress wait (detail/progress_wait.hpp, sync::wait_until):
// spin per the queue's wait_policy, then arm and block on the queue's KFD event, reporting the
// device's stop (with the queue described) or a timeout instead of waiting forever. A wait for
// room in a full ring (wait_room) spins at most wait_policy::spin_for whatever the policy, then
// backs off (the device raises nothing for room), and reports a stop or a timeout the same way.
// Thread safety: waits from any thread, as the queues' const members.
#pragma once

#include <aqueduct/config.hpp>
#include <aqueduct/core/result.hpp>
#include <aqueduct/runtime/detail/held_memory.hpp>
#include <aqueduct/runtime/detail/progress_wait.hpp>
#include <aqueduct/runtime/queue_kind.hpp>
#include <aqueduct/sync/atomics.hpp>
#include <aqueduct/sync/wait.hpp>

#include <chrono>
#include <concepts>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace aqueduct::runtime::detail {

template <class Q, queue_kind Kind>
class queue_waits {
  static constexpr bool sequenced = !std::same_as<Kind, aql_t>;

 public:
  // Until the ticket's work has completed (its results are visible to the host). A ticket of
  // another queue is errc::invalid_argument (naming both queues); errc::timeout with the queue
  // described; errc::device_hang / device_fault / queue_error when the device stopped the queue.
  [[nodiscard]] result<void> try_wait(ticket<Kind> t, sync::nanoseconds timeout = sync::infinite) const {
    const Q& q = self();
    if (AQUEDUCT_UNLIKELY(!q.s_)) return Q::empty_queue();
    if (AQUEDUCT_UNLIKELY(!t.issued_by(q.s_.get()))) return failure(errc::invalid_argument, t.mismatch(q.queue_id()));
    if constexpr (sequenced) {
      if (AQUEDUCT_LIKELY(completed() >= t.value())) return ok();
      return wait_progress([&] { return completed() >= t.value(); }, false, t.value(), timeout);
    } else {
      return q.wait_ticket(t.value(), timeout);
    }
  }
  void wait(ticket<Kind> t, sync::nanoseconds timeout = sync::infinite) const { try_wait(t, timeout).value(); }
  // Until everything submitted so far has completed.
  [[nodiscard]] result<void> try_finish(sync::nanoseconds timeout = sync::infinite) const {
    const Q& q = self();
    if (AQUEDUCT_UNLIKELY(!q.s_)) return Q::empty_queue();
    result<void> r = ok();
    if constexpr (sequenced) {
      const std::uint64_t end = submitted();
      r = wait_progress([&] { return completed() >= end; }, true, end, timeout);
    } else {
      r = q.wait_all(timeout);
    }
    if (r) q.s_->held.release_reached(completed());
    return r;
  }
  void finish(sync::nanoseconds timeout = sync::infinite) const { try_finish(timeout).value(); }

  // Keeps `p` alive until everything submitted to this queue so far has completed, or until the
  // queue is destroyed (after DESTROY_QUEUE: the device no longer reads anything of it) — for
  // memory the queue's commands may still read or write when its owner goes away without waiting
  // for them (an exec graph destroyed after a failed replay hands its memory to its queues: other
  // queues may wait forever on a signal in it). Freed at once when the queue has already done so;
  // else by a later try_finish / finish or hold that sees the progress, or by the destruction.
  void hold_until_done(std::shared_ptr<const void> p) noexcept {
    Q& q = static_cast<Q&>(*this);
    if (!q.s_ || !p) return;
    const std::uint64_t end = submitted();
    q.s_->held.release_reached(completed());
    if (completed() >= end) return;  // nothing submitted is left running: `p` goes now
    q.s_->held.hold(end, std::move(p));
  }
  // How many owners' memory the queue holds (hold_until_done).
  [[nodiscard]] std::size_t held() const noexcept { return self().s_ ? self().s_->held.size() : 0; }

  // Whether the ticket's work has completed, without waiting (false for a ticket of another
  // queue; AQL: also for a raw packet through aql() until a later wait proved it complete).
  [[nodiscard]] bool completed(ticket<Kind> t) const noexcept {
    const Q& q = self();
    if (!q.s_ || !t.issued_by(q.s_.get())) return false;
    if constexpr (sequenced) return completed() >= t.value();
    else return q.ticket_complete(t.value());
  }
  // Progress so far, and the value it reaches once everything submitted so far has completed.
  // PM4 / SDMA: sequence numbers (the last completed / submitted). AQL: packets — every packet
  // below completed() has completed; submitted() is the write index.
  [[nodiscard]] std::uint64_t completed() const noexcept {
    if constexpr (sequenced) return sync::atomic_load(*self().s_->progress, std::memory_order_acquire);
    else return self().progress();
  }
  [[nodiscard]] std::uint64_t submitted() const noexcept {
    if constexpr (sequenced) return self().s_->submitted.load(std::memory_order_acquire);
    else return self().issued();
  }

  // Why the device stopped this queue, or none: the in-process device's report, else a GPU memory
  // fault of this queue's GPU (errc::device_fault with the GPU and the page). When none is known
  // yet it looks at the KFD memory event once without blocking (a system call), so it knows a
  // fault no wait has seen. An empty queue: none.
  [[nodiscard]] std::optional<failure> fault() const {
    const Q& q = self();
    return q.s_ ? queue_stop(q.s_->port, *q.s_->agent, true) : std::nullopt;
  }
  // The same as far as this process knows already, without the look (no system call: for a loop
  // that asks again and again, such as a graph's replay wait; a wait looks at the event itself).
  [[nodiscard]] std::optional<failure> known_fault() const {
    const Q& q = self();
    return q.s_ ? q.s_->stopped() : std::nullopt;
  }
  // The in-process device's own report of why it stopped this queue (it names the packet), or
  // none: what tells the queue that faulted from the others a GPU memory fault stopped too.
  [[nodiscard]] std::optional<failure> own_fault() const {
    const Q& q = self();
    return q.s_ ? port_fault(q.s_->port) : std::nullopt;
  }

 protected:
  // The queue's progress wait: until done(); a timeout names what it waited for: ticket `value`,
  // or (`all`) everything up to `value` (sequence numbers) / below it (AQL packet indexes).
  template <class Done>
  [[nodiscard]] result<void> wait_progress(Done&& done, bool all, std::uint64_t value, sync::nanoseconds timeout) const {
    const Q& q = self();
    return wait_for_progress(
        q.s_->agent->sys->waiter(), q.s_->event.id(), q.s_->opt.wait, timeout, done, [&] { return stopped(); },
        [&](sync::nanoseconds waited) { return timed_out(all, value, waited); }, [&] { return arm_wake(*q.s_); });
  }
  // A full ring: until room(), spinning at most wait_policy::spin_for, then backing off (nothing
  // to arm: the ring has no room for a wake-up packet). At the deadline: full(waited).
  template <class Room, class Full>
  [[nodiscard]] result<void> wait_room(Room&& room, sync::nanoseconds timeout, Full&& full) const {
    const Q& q = self();
    return wait_for_progress(
        q.s_->agent->sys->waiter(), q.s_->event.id(), q.s_->opt.wait.bounded(), timeout, room,
        [&] { return stopped(); }, full, [] { return false; });
  }
  // Why the device stopped the queue, with the queue described; none while it runs.
  [[nodiscard]] std::optional<failure> stopped() const {
    const Q& q = self();
    std::optional<failure> f = q.s_->stopped();
    if (AQUEDUCT_LIKELY(!f)) return f;
    std::string d(f->detail());
    d += "; ";
    q.describe_queue(d);
    return failure(f->code(), std::move(d), f->os_errno());
  }

 private:
  [[nodiscard]] const Q& self() const noexcept { return static_cast<const Q&>(*this); }
  AQUEDUCT_NOINLINE failure timed_out(bool all, std::uint64_t value, sync::nanoseconds waited) const {
    const char* what = sequenced ? (all ? "every command up to " : "command ") : (all ? "every packet below " : "packet ");
    std::string d = "waited " + std::to_string(std::chrono::duration<double, std::milli>(waited).count()) + " ms for " +
                    what + std::to_string(value) + " to complete on ";
    self().describe(d);
    return failure(errc::timeout, std::move(d));
  }
};

}  // namespace aqueduct::runtime::detail
