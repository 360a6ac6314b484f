// aqueduct/emu/device_adapters.hpp — an emu::device seen through the small interfaces the packet
// engines take: `device_vm_view` (vm_access for one GPU: "is this range mapped to it?") and
// `device_event_notifier` (event_notifier: wake the KFD event waiters).
//
// Layer: emu. The AQL, PM4 and SDMA engines depend only on vm_access / event_notifier, not on
// emu::device; whoever attaches an engine to a device-created queue (emu::pm4_host,
// emu::sdma_attachments, the runtime's emulator link) uses these adapters. Both are noexcept:
// a failure inside the device counts as "not mapped" / "no event", never as a crash in an engine
// thread. Thread safety: as emu::device (is_mapped and signal_event may be called from any thread).
#pragma once

#include <aqueduct/emu/aql_processor.hpp>
#include <aqueduct/emu/device.hpp>
#include <aqueduct/emu/host_kernel.hpp>

#include <cstdint>

namespace aqueduct::emu {

// The GPU VM of `gpu_id` on `dev`, as an engine of that GPU sees it.
class device_vm_view final : public vm_access {
 public:
  device_vm_view(device& dev, std::uint32_t gpu_id) noexcept : dev_(&dev), gpu_id_(gpu_id) {}
  [[nodiscard]] bool is_mapped(std::uint64_t va, std::uint64_t len) const noexcept override {
    try {
      return dev_->is_mapped(gpu_id_, va, len);
    } catch (...) {
      return false;
    }
  }
  [[nodiscard]] std::uint32_t gpu_id() const noexcept { return gpu_id_; }

 private:
  device* dev_;
  std::uint32_t gpu_id_;
};

// Signals KFD events of `dev` (interrupts raised by the engines).
class device_event_notifier final : public event_notifier {
 public:
  explicit device_event_notifier(device& dev) noexcept : dev_(&dev) {}
  void signal_event(std::uint32_t id) noexcept override {
    try {
      dev_->signal_event(id);
    } catch (...) {
    }
  }

 private:
  device* dev_;
};

}  // namespace aqueduct::emu
