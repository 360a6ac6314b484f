// aqueduct/runtime/detail/device_faults.hpp — GPU memory faults the KFD reported to this process:
// the system's memory event and what it has reported so far, per GPU.
//
// Layer: runtime (detail, not API). Why it exists: on a GPU VM fault the kernel sets every
// KFD_IOC_EVENT_MEMORY event of the process, with the faulting page and the GPU in the event's
// data (kfd_events.c: kfd_signal_vm_fault_event; copy_signaled_event_data copies it back to the
// WAIT_EVENTS that it completes), and — with no debugger attached — evicts every queue of the
// process on that GPU and does not restore them (kfd_set_dbg_ev_from_interrupt with
// EC_DEVICE_MEMORY_VIOLATION; read in the Linux sources, kernel range UNVERIFIED). Nothing that
// was submitted to any queue of that GPU completes after it, so a host waiting on one would wait
// for ever. The system therefore creates one memory event (detail::system_state), every runtime
// wait blocks on it beside its own event (kfd_waiter), and whoever is woken by it records the
// fault here; every queue of that GPU then reports it (errc::device_fault with the GPU and the
// page) from its stop check, as its own stop — the in-process device's port, which names the
// packet, is asked first.
// A wait that does not block (wait_policy::spin) and has lasted 100 ms looks at the event with a
// WAIT_EVENTS that does not block (kfd_waiter::poll_faults, detail/progress_wait.hpp), at most
// once per millisecond for the whole system (poll_due): no system call on a short wait.
// Thread safety: every member may be called from any thread.
#pragma once

#include <aqueduct/abi/kfd_ioctl.hpp>
#include <aqueduct/config.hpp>
#include <aqueduct/core/result.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace aqueduct::runtime::detail {

class device_faults {
 public:
  // The memory event's id (0: none; KFD ids of non-signal events start at 2^30).
  [[nodiscard]] std::uint32_t event_id() const noexcept { return event_id_; }
  void set_event_id(std::uint32_t id) noexcept { event_id_ = id; }

  // A memory event's data, as a completed WAIT_EVENTS copied it back (gpu_id 0: not activated).
  // Out of memory: not recorded (a later report of the same GPU may be).
  void record(const abi::kfd::hsa_memory_exception_data& m) noexcept {
    if (m.gpu_id == 0) return;
    std::lock_guard lock(mu_);
    if (find(m.gpu_id)) return;  // the first fault of a GPU is what stopped its queues
    try {
      faults_.push_back(m);
    } catch (...) {
      return;
    }
    any_.store(true, std::memory_order_release);
  }
  // The fault that stopped every queue of `gpu_id`, or none (one atomic load while none).
  [[nodiscard]] std::optional<failure> of(std::uint32_t gpu_id) const {
    if (AQUEDUCT_LIKELY(!any_.load(std::memory_order_acquire))) return std::nullopt;
    std::lock_guard lock(mu_);
    if (const auto* f = find(gpu_id)) return describe(*f);
    return std::nullopt;
  }
  // Whether a fault of `gpu_id` is known (a poll's test: no failure built).
  [[nodiscard]] bool any_on(std::uint32_t gpu_id) const {
    if (AQUEDUCT_LIKELY(!any_.load(std::memory_order_acquire))) return false;
    std::lock_guard lock(mu_);
    return find(gpu_id) != nullptr;
  }

  // Whether a non-blocking look at the event is due (at most one per `every` for the system);
  // the caller then does it (kfd_waiter::wait with a zero timeout) and records what it got.
  [[nodiscard]] bool poll_due(std::chrono::nanoseconds every = std::chrono::milliseconds(1)) noexcept {
    if (event_id_ == 0) return false;
    const std::int64_t now = std::chrono::steady_clock::now().time_since_epoch().count();
    std::int64_t next = next_poll_.load(std::memory_order_relaxed);
    if (now < next) return false;
    return next_poll_.compare_exchange_strong(next, now + every.count(), std::memory_order_relaxed);
  }

  // What a wait reports: the GPU, the page, and the failure bits as the KFD gave them.
  [[nodiscard]] static failure describe(const abi::kfd::hsa_memory_exception_data& f) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "GPU memory fault on gpu_id %u at page 0x%llx (%s%s%s%s)", f.gpu_id,
                  static_cast<unsigned long long>(f.va), f.failure.NotPresent ? "not present, " : "",
                  f.failure.ReadOnly ? "write to read-only, " : "", f.failure.NoExecute ? "no execute, " : "",
                  f.failure.imprecise ? "imprecise" : "precise");
    std::string d = buf;
    d += ", reported by the KFD memory event: the kernel stopped every queue of this process on that GPU";
    return failure(errc::device_fault, std::move(d));
  }

 private:
  [[nodiscard]] const abi::kfd::hsa_memory_exception_data* find(std::uint32_t gpu_id) const noexcept {  // under mu_
    for (const auto& f : faults_)
      if (f.gpu_id == gpu_id) return &f;
    return nullptr;
  }

  std::uint32_t event_id_ = 0;  // set once at system open, before any wait
  std::atomic<bool> any_{false};
  std::atomic<std::int64_t> next_poll_{0};
  mutable std::mutex mu_;
  std::vector<abi::kfd::hsa_memory_exception_data> faults_;  // one per GPU, the first
};

}  // namespace aqueduct::runtime::detail
