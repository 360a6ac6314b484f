// aqueduct/runtime/signal.hpp — `signal`: an owned completion/dependency signal of an agent.
//
// Layer: runtime. Signals come from the agent's sync::signal_pool over one page of amd_signals
// in queue memory (uncached GTT, shared by host and GPU); each has the agent's KFD signal event
// as its mailbox, so a wait spins briefly and then blocks in AMDKFD_IOC_WAIT_EVENTS
// (sync::wait_policy, spin_then_block by default). A signal released while its value is not 0
// is recycled only once the device has brought it to 0 (DESIGN.md requirement 2). A wait ends
// with errc::device_fault once the signal's GPU has had a memory fault (the KFD stopped every
// queue of the process on it, so none of them will set the signal; docs/runtime.md); a signal
// that another GPU or the host sets can be waited on through `ref()` (sync::signal_ref::try_wait).
// Use: handles in barrier-AND/OR packets (queue::try_barrier_and), completion signals of
// dispatches (dispatch_options::completion_signal), host-side gates.
// Thread safety: value operations and waits from any thread; creation/destruction lock the
// agent's mutex. A signal must be destroyed before its system.
#pragma once

#include <aqueduct/core/result.hpp>
#include <aqueduct/runtime/detail/progress_wait.hpp>
#include <aqueduct/runtime/detail/state.hpp>
#include <aqueduct/sync/signal.hpp>
#include <aqueduct/sync/signal_pool.hpp>
#include <aqueduct/sync/wait.hpp>

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <memory>
#include <utility>

namespace aqueduct::runtime {

class signal {
 public:
  signal() = default;
  signal(detail::agent_state& a, sync::pooled_signal s, std::shared_ptr<const void> keep = {}) noexcept
      : keep_(std::move(keep)), a_(&a), s_(std::move(s)) {}
  signal(signal&& o) noexcept : keep_(std::move(o.keep_)), a_(std::exchange(o.a_, nullptr)), s_(std::move(o.s_)) {}
  signal& operator=(signal&& o) noexcept {
    if (this != &o) {
      reset();
      a_ = std::exchange(o.a_, nullptr);
      s_ = std::move(o.s_);
      keep_ = std::move(o.keep_);
    }
    return *this;
  }
  ~signal() { reset(); }

  [[nodiscard]] sync::signal_ref ref() const noexcept { return s_.ref(); }
  [[nodiscard]] std::uint64_t handle() const noexcept { return s_.handle(); }
  [[nodiscard]] explicit operator bool() const noexcept { return static_cast<bool>(s_); }
  // The agent whose pool it came from (its KFD event is the signal's mailbox); null when empty.
  [[nodiscard]] detail::agent_state* agent_state() const noexcept { return a_; }

  [[nodiscard]] std::int64_t load() const noexcept { return ref().load(std::memory_order_acquire); }
  // Release store: what the host wrote before is visible to a packet that waited on the value.
  void store(std::int64_t v) const noexcept { ref().store(v, std::memory_order_release); }

  // Wait until value == `v` (or `cond` holds); errc::timeout with the signal described.
  [[nodiscard]] result<std::int64_t> try_wait(abi::signal_condition cond, std::int64_t v,
                                              sync::nanoseconds timeout = sync::infinite,
                                              sync::wait_policy policy = {}) const {
    if (!a_) return failure(errc::invalid_argument, "this signal is empty (default-constructed or moved-from): make one with agent::make_signal");
    detail::kfd_waiter w = a_->sys->waiter();
    // Ended by a memory fault of the signal's GPU: every queue of that GPU is stopped for good.
    auto gpu_fault = [a = a_]() -> std::optional<failure> {
      std::optional<failure> f = a->sys->device_stop(*a->node);
      if (AQUEDUCT_UNLIKELY(f)) return failure(f->code(), "wait for a signal of gpu_id " + std::to_string(a->node->gpu_id) + ": " + std::string(f->detail()));
      return f;
    };
    detail::stop_or_fault<decltype(gpu_fault)> stopped(w, gpu_fault);
    return ref().try_wait_or_stop(cond, v, timeout, w, stopped, policy);
  }
  [[nodiscard]] result<std::int64_t> try_wait_eq(std::int64_t v, sync::nanoseconds timeout = sync::infinite,
                                                 sync::wait_policy policy = {}) const {
    return try_wait(abi::signal_condition::eq, v, timeout, policy);
  }
  std::int64_t wait_eq(std::int64_t v, sync::nanoseconds timeout = sync::infinite) const {
    return try_wait_eq(v, timeout).value();
  }

  void reset() noexcept {
    if (!a_) return;
    {
      std::lock_guard lock(a_->mu);
      s_.reset();
      a_ = nullptr;
    }
    keep_.reset();  // after the lock: this may be the system's last owner
  }

 private:
  std::shared_ptr<const void> keep_;  // the system (released after the signal went back)
  detail::agent_state* a_ = nullptr;
  sync::pooled_signal s_;
};

}  // namespace aqueduct::runtime
