// aqueduct/sync/host_events.hpp — `host_events`: an in-process table of auto-reset events that
// models sync::event_waiter, for tests and for device models that run in the same process.
//
// Layer: sync. Semantics follow KFD signal events (spec/kfd.md, events): `signal(id)` marks the
// event signaled and wakes its waiters; `wait(id, timeout)` returns at once if it is signaled,
// else blocks, and consumes the signaled state on return (auto-reset). A blocked waiter sleeps in
// a condition variable and uses no CPU. A condition variable, not Boost's futex wait
// (sync/atomics.hpp), because the wait needs a timeout and Boost 1.74 has no timed wait.
// Thread safety: every member may be called from any thread. Not address-free: in-process only.
#pragma once

#include <aqueduct/core/assert.hpp>
#include <aqueduct/sync/wait.hpp>

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>

namespace aqueduct::sync {

class host_events {
 public:
  // Events 0 .. capacity-1 (KFD event ids are small integers too). Allocates here, never after.
  explicit host_events(std::uint32_t capacity)
      : capacity_(capacity), signaled_(std::make_unique<bool[]>(capacity)), signal_count_(std::make_unique<std::uint64_t[]>(capacity)) {}
  host_events(const host_events&) = delete;
  host_events& operator=(const host_events&) = delete;

  [[nodiscard]] std::uint32_t capacity() const noexcept { return capacity_; }

  // Mark `event_id` signaled and wake its waiters.
  void signal(std::uint32_t event_id) noexcept {
    AQUEDUCT_ASSERT(event_id < capacity_, "host_events: event id out of range");
    {
      std::lock_guard lock(mutex_);
      signaled_[event_id] = true;
      ++signal_count_[event_id];
    }
    cv_.notify_all();
  }

  // Block until `event_id` is signaled (consuming it) or `timeout` passes.
  event_status wait(std::uint32_t event_id, nanoseconds timeout) noexcept {
    if (event_id >= capacity_) return event_status::failed;
    std::unique_lock lock(mutex_);
    auto ready = [&] { return signaled_[event_id]; };
    if (timeout == infinite) {
      cv_.wait(lock, ready);
    } else if (!cv_.wait_until(lock, deadline_after(timeout), ready)) {
      return event_status::timed_out;
    }
    signaled_[event_id] = false;
    return event_status::signaled;
  }

  // How many times `event_id` was signaled (for tests and statistics).
  [[nodiscard]] std::uint64_t signal_count(std::uint32_t event_id) const noexcept {
    AQUEDUCT_ASSERT(event_id < capacity_, "host_events: event id out of range");
    std::lock_guard lock(mutex_);
    return signal_count_[event_id];
  }

 private:
  std::uint32_t capacity_;
  std::unique_ptr<bool[]> signaled_;
  std::unique_ptr<std::uint64_t[]> signal_count_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
};

static_assert(event_waiter<host_events>);

}  // namespace aqueduct::sync
