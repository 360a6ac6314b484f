// aqueduct/runtime/detail/progress_wait.hpp — the one wait loop of the runtime's queues (AQL, PM4,
// SDMA): spin per the queue's wait_policy, then block on the queue's KFD event in slices of at
// most `max_block`, reporting an engine fault or a timeout with the caller's diagnostics.
//
// Layer: runtime (detail, not API). Thread safety: as the calling queue's const members.
#pragma once

#include <aqueduct/config.hpp>
#include <aqueduct/core/result.hpp>
#include <aqueduct/runtime/detail/state.hpp>
#include <aqueduct/sync/wait.hpp>

#include <algorithm>
#include <cstdint>
#include <optional>

namespace aqueduct::runtime::detail {

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
  if (done()) return ok();
  const auto start = sync::clock::now();
  const auto deadline = sync::deadline_after(timeout);
  if (pol.kind != sync::wait_kind::block) {
    const auto spin_until =
        pol.kind == sync::wait_kind::spin ? deadline : std::min(deadline, sync::deadline_after(pol.spin_for));
    for (unsigned i = 0;; ++i) {
      if (done()) return ok();
      if ((i & 63) == 63 && (sync::clock::now() >= spin_until || fault())) break;
      AQUEDUCT_CPU_RELAX();
    }
  }
  bool can_block = true, armed = false;
  sync::backoff bo;
  for (;;) {
    if (done()) return ok();
    if (std::optional<failure> f = fault()) return *std::move(f);
    const auto now = sync::clock::now();
    if (now >= deadline) return timed_out(now - start);
    if (can_block && !armed) {  // once per wait; then look again before blocking
      armed = true;
      can_block = arm();
      continue;
    }
    if (can_block) {
      const auto slice = std::min<sync::nanoseconds>(deadline - now, pol.max_block);
      if (waiter.wait(event_id, slice) == sync::event_status::failed) can_block = false;
    } else {
      bo.pause();
    }
  }
}

}  // namespace aqueduct::runtime::detail
