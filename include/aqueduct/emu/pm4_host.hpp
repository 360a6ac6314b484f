// aqueduct/emu/pm4_host.hpp — attaching emulated PM4 processors to the PM4 queues an
// emu::device creates, and the host-side wait that turns a stalled PM4 queue into a diagnosis.
//
// Layer: emu. `pm4_binding_of(queue_info, gpu_node)` is the seam: everything a pm4_processor
// needs comes from what CREATE_QUEUE accepted (ring, pointers, EOP, CWSR area, ctl_stack_size)
// and the node (family, gfx_target_version, simd_arrays_per_engine, CWSR inputs). A runtime
// that owns the device's queue hooks (runtime/emulation.hpp) calls it from its own hook;
// `pm4_host` is a stand-alone owner of the hooks for programs without that runtime (examples,
// tests): it starts a processor for every PM4 queue created and stops it inside DESTROY_QUEUE.
// The host-side wait with diagnostics is emu::wait_value (emu/pm4_processor.hpp).
// Thread safety: pm4_host's hooks run on the ioctl's thread (one mutex); processor() from any.
#pragma once

#include <aqueduct/arch/family.hpp>
#include <aqueduct/core/result.hpp>
#include <aqueduct/emu/device.hpp>
#include <aqueduct/emu/device_adapters.hpp>
#include <aqueduct/emu/machine_config.hpp>
#include <aqueduct/emu/pm4_processor.hpp>
#include <aqueduct/emu/queues.hpp>
#include <aqueduct/sync/wait.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace aqueduct::emu {

// The processor binding of a PM4 queue that CREATE_QUEUE accepted on `node`.
[[nodiscard]] inline result<pm4_queue_binding> pm4_binding_of(const queue_info& q, const gpu_node& node) {
  if (q.type != abi::kfd::queue_type_compute)
    return failure(errc::invalid_argument, "queue " + std::to_string(q.queue_id) + " is not a PM4 compute queue");
  const auto fam = arch::family_of(node.props.gfx_target_version);
  if (!fam) return failure(errc::not_supported, "gfx_target_version " + std::to_string(node.props.gfx_target_version));
  pm4_queue_binding b;
  b.ring_va = q.ring_base_address;
  b.ring_bytes = q.ring_size;
  b.read_pointer_va = q.read_pointer_address;
  b.write_pointer_va = q.write_pointer_address;
  b.eop_buffer_va = q.eop_buffer_address;
  b.eop_buffer_bytes = q.eop_buffer_size;
  b.cwsr = {q.ctx_save_restore_address, q.ctx_save_restore_size, q.ctl_stack_size};
  b.node = cwsr_inputs_of(node.props);
  b.family = *fam;
  b.gfx_target_version = node.props.gfx_target_version;
  b.simd_arrays_per_engine = node.props.simd_arrays_per_engine;
  b.gpu_id = q.gpu_id;
  b.queue_id = q.queue_id;
  return b;
}

// Owns the device's queue hooks: a pm4_processor per PM4 queue (other queue types are left
// alone). Must outlive the device's use of the hooks; its destructor clears them.
class pm4_host {
 public:
  pm4_host(device& dev, pm4_processor_options opt = {},
           const host_kernel_registry& registry = host_kernel_registry::global())
      : dev_(&dev), opt_(std::move(opt)), registry_(&registry), events_(dev) {
    queue_hooks h;
    h.created = [this](const queue_info& q) { on_created(q); };
    h.destroyed = [this](const queue_info& q) { on_destroyed(q); };
    dev_->set_queue_hooks(std::move(h));
  }
  pm4_host(const pm4_host&) = delete;
  pm4_host& operator=(const pm4_host&) = delete;
  ~pm4_host() {
    dev_->set_queue_hooks({});
    std::map<std::uint32_t, entry> left;
    {
      std::lock_guard lock(mu_);
      left.swap(queues_);
    }
    for (auto& [id, e] : left)
      if (e.proc) e.proc->stop();
  }

  // The processor of PM4 queue `queue_id`, or nullptr (unknown queue, or its creation failed:
  // see attach_error()).
  [[nodiscard]] pm4_processor* processor(std::uint32_t queue_id) const {
    std::lock_guard lock(mu_);
    auto it = queues_.find(queue_id);
    return it == queues_.end() ? nullptr : it->second.proc.get();
  }
  [[nodiscard]] std::string attach_error(std::uint32_t queue_id) const {
    std::lock_guard lock(mu_);
    auto it = queues_.find(queue_id);
    return it == queues_.end() ? std::string("no such queue") : it->second.error;
  }

 private:
  struct entry {
    std::unique_ptr<device_vm_view> vm;
    std::unique_ptr<pm4_processor> proc;
    std::string error;
  };

  void on_created(const queue_info& q) {
    if (q.type != abi::kfd::queue_type_compute) return;
    entry e;
    const gpu_node* node = dev_->find_gpu(q.gpu_id);
    auto b = node ? pm4_binding_of(q, *node) : result<pm4_queue_binding>(failure(errc::not_found, "unknown gpu_id"));
    if (b) {
      e.vm = std::make_unique<device_vm_view>(*dev_, q.gpu_id);
      auto p = pm4_processor::try_create(*b, *e.vm, events_, *registry_, opt_);
      if (p) e.proc = std::move(*p);
      else e.error = p.get_failure().describe();
    } else {
      e.error = b.get_failure().describe();
    }
    std::lock_guard lock(mu_);
    queues_[q.queue_id] = std::move(e);
  }
  void on_destroyed(const queue_info& q) {
    entry e;
    {
      std::lock_guard lock(mu_);
      auto it = queues_.find(q.queue_id);
      if (it == queues_.end()) return;
      e = std::move(it->second);
      queues_.erase(it);
    }
    if (e.proc) e.proc->stop();
  }

  device* dev_;
  pm4_processor_options opt_;
  const host_kernel_registry* registry_;
  device_event_notifier events_;
  mutable std::mutex mu_;
  std::map<std::uint32_t, entry> queues_;
};

}  // namespace aqueduct::emu
