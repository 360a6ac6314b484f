// aqueduct/emu/engine_ports.hpp — what an emulated engine (AQL, PM4 or SDMA) is given of its device:
// the GPU VM of its queue and the interrupt line.
//
// Layer: emu. Every engine depends on these two small interfaces and on nothing else of the
// device, so a test can run an engine over memory of its own (tests/support/emu_ports.hpp) and
// emu::device runs it over its VM and event table (emu/queue_engine.hpp).
//   * `vm_access`: is [va, va+len) mapped for this queue's GPU (and may a kernel's or copy's data
//     access to it go ahead: the fault plan's hook), and where is it in this process; optionally
//     a generation and mapping extents, so that an engine may cache its checks (emu/vm_tlb.hpp).
//     The emulator maps GPU VAs at the same host address (identity), the default; a device that
//     does not can override `host_address`.
//   * `event_notifier`: raises the interrupt of a KFD event (emu::device::signal_event) and gives
//     the host time and the GPU clock counter (gpu_clock) the engines write into timestamps.
// Thread safety: implementations are called from engine threads concurrently.
#pragma once

#include <aqueduct/core/clock.hpp>

#include <cstdint>

namespace aqueduct::emu {

// The emulated GPU clock counter: 100 MHz (spec/packets.md §2.2), counting from an epoch of its
// own — a real GPU's counter starts at its power-on, not with the host's clocks — so a device
// timestamp used as host time without calibration (runtime/device_clock.hpp) is visibly wrong
// (about 11.6 days off) on the emulator too.
inline constexpr std::uint64_t emulated_gpu_clock_hz = 100'000'000;
inline constexpr std::uint64_t emulated_gpu_clock_epoch_ns = 1'000'000'000'000'000;
// The counter's value at host steady_clock time `steady_ns`, in ticks of `hz` (which divides 1e9).
[[nodiscard]] constexpr std::uint64_t emulated_gpu_clock(std::uint64_t steady_ns, std::uint64_t hz = emulated_gpu_clock_hz) noexcept {
  return (steady_ns + emulated_gpu_clock_epoch_ns) / (1'000'000'000 / hz);
}

class vm_access {
 public:
  virtual ~vm_access() = default;
  [[nodiscard]] virtual bool is_mapped(std::uint64_t va, std::uint64_t len) const noexcept = 0;
  // A data access of a kernel or a copy to [va, va+len): is_mapped, unless the device's fault plan
  // faults (or hangs) it (emu/fault_plan.hpp). Engines call this for the data they move, and
  // is_mapped for their own structures (rings, signals, descriptors, code).
  [[nodiscard]] virtual bool data_access_ok(std::uint64_t va, std::uint64_t len) const noexcept { return is_mapped(va, len); }
  [[nodiscard]] virtual void* host_address(std::uint64_t va) const noexcept {
    return reinterpret_cast<void*>(static_cast<std::uintptr_t>(va));
  }
  // For translation caches (emu/vm_tlb.hpp), optional: a number that moves on whenever any
  // mapping may have changed (0: this VM supports no caching), read without a lock; and the
  // extent [lo, hi) of the one mapping (buffer) that contains `va`, false if none does.
  [[nodiscard]] virtual std::uint64_t generation() const noexcept { return 0; }
  [[nodiscard]] virtual bool mapped_extent(std::uint64_t /*va*/, std::uint64_t& /*lo*/, std::uint64_t& /*hi*/) const noexcept {
    return false;
  }
};

class event_notifier {
 public:
  virtual ~event_notifier() = default;
  virtual void signal_event(std::uint32_t event_id) noexcept = 0;
  // The engine of a queue on `gpu_id` stopped with a GPU memory fault at `address` (a VM fault):
  // the KFD tells the process through its memory events (emu/events.hpp vm_fault). Default:
  // nothing (an engine tested on its own).
  virtual void memory_fault(std::uint32_t /*gpu_id*/, std::uint64_t /*address*/) noexcept {}
  // Timestamps written to profiled completion signals and by timestamp packets (ns of a steady
  // clock by default).
  [[nodiscard]] virtual std::uint64_t timestamp() const noexcept {
    return steady_now_ns();
  }
  // The GPU clock counter at timestamp(): what profiled completion signals (start_ts, end_ts),
  // RELEASE_MEM's GPU clock and SDMA TIMESTAMP write, and GET_CLOCK_COUNTERS reports.
  [[nodiscard]] std::uint64_t gpu_clock(std::uint64_t hz = emulated_gpu_clock_hz) const noexcept {
    return emulated_gpu_clock(timestamp(), hz);
  }
};

}  // namespace aqueduct::emu
