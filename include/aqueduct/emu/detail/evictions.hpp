// aqueduct/emu/detail/evictions.hpp — the GPUs on which a memory fault evicted the process's
// queues for good, as the Linux kernel does.
//
// Layer: emu (detail). On a GPU VM fault of a process with no debugger attached, the kernel
// (kfd_set_dbg_ev_from_interrupt with EC_DEVICE_MEMORY_VIOLATION, kfd_int_process_v9.c … v12,
// kfd_debug.c) evicts every queue of the process on that GPU (kfd_dqm_evict_pasid, newer kernels
// kfd_evict_process_device), never restores them, makes queues created afterwards start evicted
// (q->properties.is_evicted = !!qpd->evicted), and sets the process's memory events
// (kfd_signal_vm_fault_event). Queues on other GPUs are untouched. Read from the kernel sources in
// session 25; the kernel version of each step is UNVERIFIED.
// The emulated device (machine_config::memory_fault_events) evicts as the kernel does, by
// preempting the queue (queue_engine::request_preemption, a CWSR save on compute queues) and never
// resuming it; a queue created or updated on such a GPU is never started. Nothing is recorded as
// the queue's own fault: an evicted queue simply runs nothing more, and the host learns why from
// the memory event.
// Thread safety: internally synchronized.
#pragma once

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <vector>

namespace aqueduct::emu::detail {

class gpu_evictions {
 public:
  // Marks `gpu_id` evicted; false when it already was (its queues already run nothing).
  bool evict(std::uint32_t gpu_id) {
    std::lock_guard lock(mu_);
    if (std::ranges::find(gpus_, gpu_id) != gpus_.end()) return false;
    gpus_.push_back(gpu_id);
    return true;
  }
  [[nodiscard]] bool evicted(std::uint32_t gpu_id) const {
    std::lock_guard lock(mu_);
    return std::ranges::find(gpus_, gpu_id) != gpus_.end();
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::uint32_t> gpus_;
};

}  // namespace aqueduct::emu::detail
