// aqueduct/runtime/emulation.hpp — wiring the emulated device's command processors to the queues
// the runtime creates through the ordinary kfd/ path.
//
// Layer: runtime. `emulator_link` registers itself as the emu::device's per-queue hooks. The
// runtime creates every queue exactly as it would on /dev/kfd (kfd::queue_resources: ring,
// pointer page holding the amd_queue, EOP, CWSR area, CREATE_QUEUE, doorbell from the returned
// offset); the `created` hook records what the emulated KFD accepted, and once the runtime has
// initialized the ring (every header INVALID, as ROCr does before the first doorbell) it calls
// `try_attach_aql`, which starts an emu::aql_processor on that very memory. The processor is
// stopped and joined inside DESTROY_QUEUE (the `destroyed` hook), before the queue's buffers
// are freed. Completion signals reach KFD events through emu::device::signal_event.
// The doorbell: a store to the doorbell page cannot be observed by an in-process emulator, so
// the runtime's doorbell (runtime/queue.hpp) also tells the processor (`ring_doorbell`) — the
// emulator's model of the hardware noticing an MMIO write.
// Thread safety: hooks and attach may run on any thread (one mutex); the link must outlive the
// device's use of its hooks (its destructor clears them and joins every processor).
#pragma once

#include <aqueduct/arch/family.hpp>
#include <aqueduct/core/result.hpp>
#include <aqueduct/emu/aql_processor.hpp>
#include <aqueduct/emu/device.hpp>
#include <aqueduct/emu/device_adapters.hpp>
#include <aqueduct/emu/host_kernel.hpp>
#include <aqueduct/emu/queues.hpp>
#include <aqueduct/emu/sdma_attachments.hpp>  // seam (sdmaq): SDMA engines ride on these hooks

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace aqueduct::runtime {

// Knobs of the emulated machine's command processors.
struct emulation_options {
  // Processor options for every AQL queue: `adversarial` (poll headers eagerly, catch bodies
  // written after their header), worker threads, a per-packet `sequence_check` ...
  emu::aql_processor_options processor{};
};

class emulator_link {
 public:
  emulator_link(emu::device& dev, emulation_options opt, const emu::host_kernel_registry& registry)
      : dev_(&dev), opt_(std::move(opt)), registry_(&registry), events_(dev), sdma_(dev) {
    emu::queue_hooks h;
    // seam (sdmaq): every SDMA queue gets an emulated engine at creation (emu/sdma_attachments.hpp)
    h.created = [this](const emu::queue_info& q) { on_created(q); sdma_.on_created(q); };
    h.updated = [this](const emu::queue_info& q) { on_created(q); sdma_.on_updated(q); };
    h.destroyed = [this](const emu::queue_info& q) { on_destroyed(q); sdma_.on_destroyed(q); };
    dev_->set_queue_hooks(std::move(h));
  }
  emulator_link(const emulator_link&) = delete;
  emulator_link& operator=(const emulator_link&) = delete;
  ~emulator_link() {
    dev_->set_queue_hooks({});
    std::map<std::uint32_t, record> left;
    {
      std::lock_guard lock(mu_);
      left.swap(queues_);
    }
    for (auto& [id, r] : left)
      if (r.processor) r.processor->stop();
  }

  [[nodiscard]] emu::device& device() const noexcept { return *dev_; }
  [[nodiscard]] const emulation_options& options() const noexcept { return opt_; }

  // Starts the AQL processor of queue `queue_id` (created through CREATE_QUEUE on this device)
  // over the amd_queue at `amd_queue_va`, whose read/write_dispatch_id must be the queue's read
  // and write pointers. The ring must already hold INVALID headers.
  [[nodiscard]] result<emu::aql_processor*> try_attach_aql(std::uint32_t queue_id, std::uint64_t amd_queue_va,
                                                          arch::family fam) {
    std::lock_guard lock(mu_);
    auto it = queues_.find(queue_id);
    if (it == queues_.end())
      return failure(errc::not_found, "emulated KFD has no queue " + std::to_string(queue_id) + " to attach to");
    record& r = it->second;
    if (!r.info.is_aql())
      return failure(errc::invalid_argument, "queue " + std::to_string(queue_id) + " is not an AQL queue");
    if (r.processor) return r.processor.get();
    const std::uint64_t rptr = amd_queue_va + offsetof(abi::amd_queue, read_dispatch_id);
    const std::uint64_t wptr = amd_queue_va + offsetof(abi::amd_queue, write_dispatch_id);
    if (r.info.read_pointer_address != rptr || r.info.write_pointer_address != wptr)
      return failure(errc::invalid_argument, "queue " + std::to_string(queue_id) +
                                                 ": CREATE_QUEUE's read/write pointers are not the amd_queue's "
                                                 "read_dispatch_id/write_dispatch_id");
    emu::aql_queue_binding b;
    b.ring_va = r.info.ring_base_address;
    b.ring_bytes = r.info.ring_size;
    b.read_index_va = rptr;
    b.write_index_va = wptr;
    b.amd_queue_va = amd_queue_va;
    b.family = fam;
    b.gpu_id = r.info.gpu_id;
    b.queue_id = queue_id;
    r.vm = std::make_unique<emu::device_vm_view>(*dev_, r.info.gpu_id);
    AQUEDUCT_TRY(r.processor, emu::aql_processor::try_create(b, *r.vm, events_, *registry_, opt_.processor));
    return r.processor.get();
  }

  // seam (sdmaq): the emulated SDMA engines of this device's SDMA queues (runtime/sdma_queue.hpp).
  [[nodiscard]] emu::sdma_attachments& sdma() noexcept { return sdma_; }

  // Number of queues the emulated KFD reported and that are still alive.
  [[nodiscard]] std::size_t live_queues() const {
    std::lock_guard lock(mu_);
    return queues_.size();
  }

 private:
  struct record {
    emu::queue_info info;
    std::unique_ptr<emu::device_vm_view> vm;  // what the processor may touch
    std::unique_ptr<emu::aql_processor> processor;
  };

  void on_created(const emu::queue_info& q) {
    std::lock_guard lock(mu_);
    queues_[q.queue_id].info = q;
  }
  // Inside DESTROY_QUEUE: the processor must stop touching the queue before the ioctl returns.
  void on_destroyed(const emu::queue_info& q) {
    record r;
    {
      std::lock_guard lock(mu_);
      auto it = queues_.find(q.queue_id);
      if (it == queues_.end()) return;
      r = std::move(it->second);
      queues_.erase(it);
    }
    if (r.processor) r.processor->stop();
  }

  emu::device* dev_;
  emulation_options opt_;
  const emu::host_kernel_registry* registry_;
  emu::device_event_notifier events_;  // interrupts: the device's event table
  emu::sdma_attachments sdma_;  // seam (sdmaq)
  mutable std::mutex mu_;
  std::map<std::uint32_t, record> queues_;
};

}  // namespace aqueduct::runtime
