// aqueduct/emu/sdma_attachments.hpp — an emulated SDMA engine for every SDMA queue the emulated
// KFD creates, through emu::device's per-queue hooks.
//
// Layer: emu. An SDMA queue needs nothing from userspace before it runs (unlike an AQL ring, whose
// headers must be INVALID first): the engine only reads what the write pointer publishes. So the
// `created` hook attaches an emu::sdma_engine at once — for any SDMA queue, whichever code made
// it (runtime/sdma_queue.hpp, or raw kfd::queue_resources) — and the `destroyed` hook stops and
// joins it inside DESTROY_QUEUE, before the queue's buffers can be freed. An UPDATE_QUEUE
// re-attaches (new ring or pointers; the engine resumes from the read pointer in memory). Queues
// KFD would not map (QUEUE_IS_ACTIVE false: ring 0 or percentage 0, spec/kfd.md §2.6) get no
// engine until an update activates them. The engine version comes from the node's
// gfx_target_version through the processor table (arch::find_processor_by_version → sdma_version).
// Use: `install(device)` when nothing else owns the device's hooks; runtime::emulator_link owns
// them in a runtime::system and forwards to its `sdma_attachments` (a seam in runtime/emulation.hpp).
// Thread safety: hooks may run on any thread (one mutex); find() returns a pointer that stays
// valid until the queue is destroyed. The device must outlive this object; destroying it stops
// every engine and, if installed, clears the hooks.
#pragma once

#include <aqueduct/abi/sdma.hpp>
#include <aqueduct/arch/processors.hpp>
#include <aqueduct/core/result.hpp>
#include <aqueduct/emu/device.hpp>
#include <aqueduct/emu/device_adapters.hpp>
#include <aqueduct/emu/queues.hpp>
#include <aqueduct/emu/sdma_engine.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

namespace aqueduct::emu {

// The SDMA packet format of a GPU (gfx_target_version), or nullopt for an unknown processor.
[[nodiscard]] constexpr std::optional<abi::sdma::engine> sdma_engine_of(std::uint32_t gfx_target_version) noexcept {
  const arch::processor_info* p = arch::find_processor_by_version(gfx_target_version);
  if (!p || p->sdma_version == 0) return std::nullopt;
  return abi::sdma::engine_from_ip(p->sdma_version / 10, p->sdma_version % 10);
}

class sdma_attachments {
 public:
  explicit sdma_attachments(device& dev, sdma_engine_options opt = {}) : dev_(&dev), opt_(opt), events_(dev) {}
  sdma_attachments(const sdma_attachments&) = delete;
  sdma_attachments& operator=(const sdma_attachments&) = delete;
  ~sdma_attachments() {
    if (installed_) dev_->set_queue_hooks({});
    std::map<std::uint32_t, record> left;
    {
      std::lock_guard lock(mu_);
      left.swap(engines_);
    }
    for (auto& [id, r] : left)
      if (r.engine) r.engine->stop();
  }

  // Makes these the device's queue hooks (replacing any others).
  void install() {
    queue_hooks h;
    h.created = [this](const queue_info& q) { on_created(q); };
    h.updated = [this](const queue_info& q) { on_updated(q); };
    h.destroyed = [this](const queue_info& q) { on_destroyed(q); };
    dev_->set_queue_hooks(std::move(h));
    installed_ = true;
  }

  // ---- the hooks --------------------------------------------------------------------------------
  void on_created(const queue_info& q) {
    if (!q.is_sdma()) return;
    attach(q);
  }
  void on_updated(const queue_info& q) {
    if (!q.is_sdma()) return;
    on_destroyed(q);
    attach(q);
  }
  // Inside DESTROY_QUEUE: the engine must stop touching the queue before the ioctl returns.
  void on_destroyed(const queue_info& q) {
    record r;
    {
      std::lock_guard lock(mu_);
      auto it = engines_.find(q.queue_id);
      if (it == engines_.end()) return;
      r = std::move(it->second);
      engines_.erase(it);
    }
    if (r.engine) r.engine->stop();
  }

  // The engine of SDMA queue `queue_id`, or nullptr (not an SDMA queue, inactive, or attaching
  // failed: see attach_error()).
  [[nodiscard]] sdma_engine* find(std::uint32_t queue_id) const {
    std::lock_guard lock(mu_);
    auto it = engines_.find(queue_id);
    return it == engines_.end() ? nullptr : it->second.engine.get();
  }
  [[nodiscard]] std::optional<failure> attach_error(std::uint32_t queue_id) const {
    std::lock_guard lock(mu_);
    auto it = engines_.find(queue_id);
    if (it == engines_.end() || !it->second.error) return std::nullopt;
    return it->second.error;
  }
  [[nodiscard]] std::size_t size() const {
    std::lock_guard lock(mu_);
    return engines_.size();
  }

 private:
  struct record {
    std::unique_ptr<device_vm_view> vm;
    std::unique_ptr<sdma_engine> engine;
    std::optional<failure> error;
  };

  void attach(const queue_info& q) {
    record r;
    const auto eng = sdma_engine_of(q.gfx_target_version);
    if (!eng) {
      r.error = failure(errc::not_supported, "no SDMA packet format known for gfx_target_version " +
                                                 std::to_string(q.gfx_target_version));
    } else if (q.active) {
      sdma_queue_binding b;
      b.ring_va = q.ring_base_address;
      b.ring_bytes = q.ring_size;
      b.read_pointer_va = q.read_pointer_address;
      b.write_pointer_va = q.write_pointer_address;
      b.doorbell = static_cast<const std::uint64_t*>(q.doorbell);
      b.engine = *eng;
      b.gpu_id = q.gpu_id;
      b.queue_id = q.queue_id;
      r.vm = std::make_unique<device_vm_view>(*dev_, q.gpu_id);
      auto e = sdma_engine::try_create(b, *r.vm, events_, opt_);
      if (e) r.engine = std::move(*e);
      else r.error = std::move(e).get_failure();
    }
    std::lock_guard lock(mu_);
    engines_[q.queue_id] = std::move(r);
  }

  device* dev_;
  sdma_engine_options opt_;
  device_event_notifier events_;
  bool installed_ = false;
  mutable std::mutex mu_;
  std::map<std::uint32_t, record> engines_;
};

}  // namespace aqueduct::emu
