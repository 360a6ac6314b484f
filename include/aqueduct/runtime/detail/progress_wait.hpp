// aqueduct/runtime/detail/progress_wait.hpp — the runtime's progress wait: the one wait loop
// (sync::wait_until) over a KFD event of the device.
//
// Layer: runtime (detail, not API). Every wait of the AQL, PM4 and SDMA queues (on a ticket, for
// everything submitted, for room in a full ring; runtime/detail/queue_waits.hpp) and of graph/'s
// replays spins per the caller's wait_policy, then blocks on the KFD event in slices of at most
// `max_block`, and reports the engine's stop or a timeout with the caller's diagnostics.
// Thread safety: as the calling queue's const members.
#pragma once

#include <aqueduct/core/result.hpp>
#include <aqueduct/runtime/detail/state.hpp>
#include <aqueduct/sync/wait.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <type_traits>

namespace aqueduct::runtime::detail {

// The stop check of a wait that a GPU memory fault ends: fault() -> std::optional<failure> (the
// engine's stop, or the GPU's fault as the system knows it). A wait that has not blocked for 100 ms
// looks at the memory event itself (kfd_waiter::poll_faults): a spinning wait is never woken by
// it. Asked only when the wait loop asks for a stop (every 64 spins), so a wait that ends sooner
// makes no system call for it.
template <class Fault>
class stop_or_fault {
 public:
  stop_or_fault(kfd_waiter& w, Fault& fault) noexcept : waiter_(w), fault_(fault) {}
  std::optional<failure> operator()() {
    std::optional<failure> f = fault_();
    if (AQUEDUCT_LIKELY(!f) && waiter_.faults) {
      const auto now = sync::clock::now();
      if (first_ == sync::clock::time_point{}) first_ = now;
      else if (now - first_ >= std::chrono::milliseconds(100)) {
        waiter_.poll_faults();
        f = fault_();
      }
    }
    return f;
  }

 private:
  kfd_waiter& waiter_;
  Fault& fault_;
  sync::clock::time_point first_{};
};

// done() -> bool: the awaited progress is reached. fault() -> std::optional<failure>: the engine
// stopped. timed_out(sync::nanoseconds waited) -> failure: the diagnostics for a timeout.
// arm() -> bool: called once, when the wait is about to block: make the device raise the event
// once the awaited progress is reached (the queue's commands ask for no interrupt of their own:
// issue 11); false if it cannot (e.g. no room in the ring): the wait then polls with back-off
// (sleeps of up to 1 ms) instead of blocking on the event.
template <class Done, class Fault, class TimedOut, class Arm>
[[nodiscard]] result<void> wait_for_progress(kfd_waiter waiter, std::uint32_t event_id, const sync::wait_policy& pol,
                                             sync::nanoseconds timeout, Done&& done, Fault&& fault,
                                             TimedOut&& timed_out, Arm&& arm) {
  stop_or_fault<std::remove_reference_t<Fault>> stopped(waiter, fault);
  return sync::wait_until(waiter, event_id, true, pol, timeout, done, stopped, timed_out, arm);
}

}  // namespace aqueduct::runtime::detail
