// aqueduct/sync/wait.hpp — how a host thread waits for the device: wait policies, the
// `event_waiter` concept that blocking goes through, timeouts, and the `diagnostics` hook that
// turns a timeout into something a person can debug.
//
// Layer: sync. Three policies (DESIGN.md §6: "waits spin briefly, then block on an event; a
// waiting thread must not burn a core for seconds"):
// - spin: poll with a CPU pause; lowest latency, burns a core. Use for microsecond waits.
// - spin_then_block (default): poll for `spin_for`, then block on the KFD event named by the
//   signal's mailbox, re-checking the condition after every wake-up.
// - block: block at once.
// Blocking goes through an `event_waiter`: `kfd/`'s KFD events (AMDKFD_IOC_WAIT_EVENTS) and the
// emulator's events both model it, as does sync::host_events (in-process, for tests). Where
// nothing can be blocked on (no event), the wait backs off with short sleeps instead.
// `wait_until` is THE wait loop: every host wait for the device goes through it — signal waits
// (sync/signal.hpp), the runtime queues' completion waits and waits for room
// (runtime/detail/progress_wait.hpp, runtime/detail/queue_waits.hpp), and the ring layers' waits
// for room (queue/), which back off and ask a `stop_check` whether the consumer stopped.
// Thread safety: values and pure functions; a `diagnostics` or `stop_check` view must outlive
// the wait.
#pragma once

#include <aqueduct/config.hpp>
#include <aqueduct/core/result.hpp>

#include <algorithm>
#include <chrono>
#include <concepts>
#include <cstdint>
#include <optional>
#include <string>
#include <thread>

namespace aqueduct::sync {

using clock = std::chrono::steady_clock;
using nanoseconds = std::chrono::nanoseconds;

// "Wait forever" (bounded by the clock's range, ~292 years).
inline constexpr nanoseconds infinite = nanoseconds::max();

// Outcome of one event_waiter::wait call.
enum class event_status : std::uint8_t {
  signaled,   // the event fired (the awaited condition may still be false: re-check)
  timed_out,  // `timeout` elapsed without the event
  failed,     // the wait itself failed (e.g. the ioctl); callers fall back to polling
};

// Something a thread can block on until a device event fires, using no CPU meanwhile.
// Contract: events are auto-reset, as KFD signal events are: a signal that arrives while nobody
// waits is kept until the next wait consumes it, so check-then-block loses no wake-up; a wait may
// return `signaled` spuriously (callers re-check their condition).
template <class W>
concept event_waiter = requires(W& w, std::uint32_t event_id, nanoseconds timeout) {
  { w.wait(event_id, timeout) } -> std::same_as<event_status>;
};

// A waiter with no events: every wait is "failed", so waits fall back to sleeping back-off.
struct no_events {
  event_status wait(std::uint32_t, nanoseconds) noexcept { return event_status::failed; }
};
static_assert(event_waiter<no_events>);

enum class wait_kind : std::uint8_t { spin, spin_then_block, block };

struct wait_policy {
  wait_kind kind = wait_kind::spin_then_block;
  nanoseconds spin_for = std::chrono::microseconds(50);  // spin_then_block: spin this long first
  // Longest single block: bounds the cost of a wake-up consumed by another waiter of the same
  // auto-reset event. Waking every 100 ms costs nothing measurable.
  nanoseconds max_block = std::chrono::milliseconds(100);

  static constexpr wait_policy spin() noexcept { return {wait_kind::spin, nanoseconds::zero(), nanoseconds::zero()}; }
  static constexpr wait_policy spin_then_block(nanoseconds spin = std::chrono::microseconds(50)) noexcept {
    return {wait_kind::spin_then_block, spin, std::chrono::milliseconds(100)};
  }
  static constexpr wait_policy block() noexcept {
    return {wait_kind::block, nanoseconds::zero(), std::chrono::milliseconds(100)};
  }
  // This policy with its spin bounded: `spin` becomes spin_then_block for 50 µs. For waits that
  // may last as long as the device is busy (room in a full ring), which must not burn a core for
  // their whole length whatever the caller's policy.
  [[nodiscard]] constexpr wait_policy bounded() const noexcept {
    return kind == wait_kind::spin ? spin_then_block() : *this;
  }
};

// A non-owning hook that appends a human-readable state description (a queue's read/write
// indexes and its stalled packet, decoded) to a timeout's detail. Called only on the error path.
// Default-constructed: describes nothing. The object it views must outlive the wait.
class diagnostics {
 public:
  constexpr diagnostics() noexcept = default;
  template <class T>
    requires requires(const T& t, std::string& s) { t.describe(s); }
  constexpr diagnostics(const T& source) noexcept  // NOLINT: implicit view, like string_view
      : ctx_(&source), fn_([](const void* c, std::string& out) { static_cast<const T*>(c)->describe(out); }) {}

  void describe(std::string& out) const {
    if (fn_) fn_(ctx_, out);
  }
  explicit operator bool() const noexcept { return fn_ != nullptr; }

 private:
  const void* ctx_ = nullptr;
  void (*fn_)(const void*, std::string&) = nullptr;
};

// A deadline computed from a timeout without overflow.
[[nodiscard]] inline clock::time_point deadline_after(nanoseconds timeout) noexcept {
  const auto now = clock::now();
  if (timeout >= clock::time_point::max() - now) return clock::time_point::max();
  return now + timeout;
}

// Back-off for waits with nothing to block on: 64 CPU pauses, then 64 yields (cheap hand-over
// to a consumer sharing the core), then sleeps from 1 µs doubling to 1 ms.
class backoff {
 public:
  void pause() noexcept {
    if (spins_ < 128) {
      if (spins_++ < 64) AQUEDUCT_CPU_RELAX();
      else std::this_thread::yield();
      return;
    }
    std::this_thread::sleep_for(sleep_);
    if (sleep_ < std::chrono::milliseconds(1)) sleep_ *= 2;
  }

 private:
  unsigned spins_ = 0;
  nanoseconds sleep_ = std::chrono::microseconds(1);
};

// A non-owning "why did the consumer stop?" hook for the ring layers' waits for room (queue/):
// none while it runs; the device's failure once it stopped the queue (then a full ring never
// drains, and the wait reports that instead of waiting it out). Default-constructed: never
// stopped. The object it views must outlive the waits.
class stop_check {
 public:
  constexpr stop_check() noexcept = default;
  template <class T>
    requires requires(const T& t) {
      { t.stopped() } -> std::same_as<std::optional<failure>>;
    }
  explicit constexpr stop_check(const T& source) noexcept
      : ctx_(&source), fn_([](const void* c) { return static_cast<const T*>(c)->stopped(); }) {}

  [[nodiscard]] std::optional<failure> operator()() const { return fn_ ? fn_(ctx_) : std::nullopt; }
  explicit operator bool() const noexcept { return fn_ != nullptr; }
  // The stop, with `ring` described after the device's detail (what a ring's wait reports).
  template <class T>
    requires requires(const T& t, std::string& s) { t.describe(s); }
  [[nodiscard]] std::optional<failure> described(const T& ring) const {
    std::optional<failure> f = (*this)();
    if (!f) return f;
    std::string d(f->detail());
    d += "; ";
    ring.describe(d);
    return failure(f->code(), std::move(d), f->os_errno());
  }

 private:
  const void* ctx_ = nullptr;
  std::optional<failure> (*fn_)(const void*) = nullptr;
};

// Nothing stops this wait but its condition or its deadline.
struct never_stopped {
  std::optional<failure> operator()() const noexcept { return std::nullopt; }
};
// The event always fires once the awaited condition holds (a signal with a mailbox): no need to
// ask for it before blocking.
struct always_armed {
  bool operator()() const noexcept { return true; }
};

// THE wait loop. Until done():
//  1. spin per `policy` (spin: until the deadline; spin_then_block: policy.spin_for; block: not
//     at all), asking stopped() every 64 rounds;
//  2. then, when `can_block`, call arm() once (make the device raise `event_id` once the awaited
//     condition holds, e.g. a queue's wake-up packet; false: it cannot, e.g. no room in the ring)
//     and block on the event through `waiter` in slices of at most policy.max_block, re-checking
//     done() and stopped() after every wake-up; without an event (or once arming or the waiter
//     failed), back off (sync::backoff: pauses, yields, then sleeps of up to 1 ms).
// done() -> bool. stopped() -> std::optional<failure>: the device stopped; the wait returns that
// failure. timed_out(nanoseconds waited) -> failure, at the deadline (after a last done()).
template <event_waiter W, class Done, class Stopped, class TimedOut, class Arm = always_armed>
[[nodiscard]] result<void> wait_until(W& waiter, std::uint32_t event_id, bool can_block, const wait_policy& policy,
                                      nanoseconds timeout, Done&& done, Stopped&& stopped, TimedOut&& timed_out,
                                      Arm&& arm = Arm{}) {
  if (done()) return ok();
  const auto start = clock::now();
  const auto deadline = deadline_after(timeout);
  if (policy.kind != wait_kind::block) {
    const auto spin_until = policy.kind == wait_kind::spin ? deadline : std::min(deadline, deadline_after(policy.spin_for));
    for (unsigned i = 0;; ++i) {
      if (done()) return ok();
      if ((i & 63) == 63) {
        if (clock::now() >= spin_until) break;
        if (std::optional<failure> f = stopped()) return *std::move(f);
      }
      AQUEDUCT_CPU_RELAX();
    }
  }
  bool armed = false;
  backoff bo;
  for (;;) {
    if (done()) return ok();
    if (std::optional<failure> f = stopped()) return *std::move(f);
    const auto now = clock::now();
    if (now >= deadline) {
      if (done()) return ok();
      return timed_out(now - start);
    }
    if (can_block && !armed) {  // once per wait; then look again before blocking
      armed = true;
      can_block = arm();
      continue;
    }
    if (can_block) {
      const auto slice = std::min<nanoseconds>(deadline - now, policy.max_block);
      if (waiter.wait(event_id, slice) == event_status::failed) can_block = false;
    } else {
      bo.pause();
    }
  }
}

}  // namespace aqueduct::sync
