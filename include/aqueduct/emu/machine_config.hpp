// aqueduct/emu/machine_config.hpp — what machine the emulated KFD device pretends to be.
//
// Layer: emu. A machine is a CPU node plus any number of GPU nodes built from presets
// (emu/presets.hpp), and the knobs that choose which kernel the device behaves like:
//   - kernel version: 6.12+ validates queue buffers and CWSR sizes (spec/kfd.md §1.6, §2.5);
//     older kernels accept wrong sizes (and the checks every kernel had still apply, §2.3);
//   - KFD ioctl minor version (17 or 18: 96-byte create_queue; 11..16: 88-byte, no engine ids);
//   - whether sysfs exports cwsr_size / ctl_stack_size (71776e0965f9, in 6.12.y);
//   - SDMA queues per engine and queue-count limits, to exercise exhaustion paths;
//   - a fault-injection hook that can fail a queue creation that passed validation, and the
//     fault plan (emu/fault_plan.hpp: memory faults, hangs, lost interrupts, errnos, resets ...).
// `machine_config::parse("mi300x,rx7900xtx")` or `("2*rx7900xtx")` builds a machine by name.
// Thread safety: values.
#pragma once

#include <aqueduct/abi/kfd_ioctl.hpp>
#include <aqueduct/arch/cwsr.hpp>
#include <aqueduct/core/result.hpp>
#include <aqueduct/emu/fault_plan.hpp>
#include <aqueduct/emu/presets.hpp>

#include <charconv>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace aqueduct::emu {

// Linux kernel version the emulated driver behaves like.
struct kernel_version {
  std::uint32_t major = 6;
  std::uint32_t minor = 17;
  friend constexpr auto operator<=>(const kernel_version&, const kernel_version&) = default;
  // Philip Yang's "Validate user queue buffers" series landed in 6.12 (spec/kfd.md §1.6).
  [[nodiscard]] constexpr bool validates_queue_buffers() const noexcept { return *this >= kernel_version{6, 12}; }
};
inline constexpr kernel_version kernel_strict{6, 17};   // current upstream semantics
inline constexpr kernel_version kernel_lenient{6, 8};   // before buffer validation

// The kernel's CWSR inputs of a node (spec/kfd.md §1.2).
[[nodiscard]] constexpr arch::cwsr_inputs cwsr_inputs_of(const gpu_properties& p) noexcept {
  return {p.gfx_target_version, p.simd_count, p.simd_per_cu, p.num_xcc, p.array_count, p.simd_arrays_per_engine,
          p.lds_size_in_kb};
}
[[nodiscard]] constexpr arch::cwsr_sizes node_cwsr_sizes(const gpu_properties& p) noexcept {
  return arch::kernel_cwsr_sizes(cwsr_inputs_of(p));
}

// Called after a CREATE_QUEUE passed every kernel check and before any resource is taken;
// return 0 to proceed or a negative errno to fail the ioctl with it (fault injection).
using queue_create_fault_hook = std::function<int(const abi::kfd::create_queue_args&)>;

struct machine_config {
  std::vector<gpu_properties> gpus;  // GPU nodes 1..n, in this order
  cpu_properties cpu{};              // node 0
  kernel_version kernel = kernel_strict;
  std::uint32_t ioctl_minor = abi::kfd::ioctl_minor_version;  // reported by GET_VERSION
  bool export_cwsr_sizes = true;     // write cwsr_size / ctl_stack_size into sysfs
  std::uint32_t sdma_queues_per_engine = 0;  // 0: the preset's num_sdma_queues_per_engine
  std::uint32_t max_queues_per_process = 0;  // per GPU; 0: kernel's 127 (255 on GC 9.4.3+)
  std::uint32_t max_queues_per_device = 4096;  // module parameter max_num_of_queues_per_device
  std::uint32_t render_minor_base = 128;     // node i's drm_render_minor = base + i - 1
  queue_create_fault_hook queue_create_fault{};
  // A GPU memory fault (an engine's not_mapped / memory_violation) does what Linux does with no
  // debugger attached (emu/detail/evictions.hpp): every queue of the process on that GPU is
  // evicted for good (later ones start evicted) and the process's KFD memory events are set with
  // the page and the GPU (kfd_signal_vm_fault_event; emu/events.hpp). false: only the faulting
  // queue stops and no memory event is set (not what a GPU does: for tests that inject many memory
  // faults into one system and go on after each, such as the soak; docs/emulator.md).
  bool memory_fault_events = true;
  fault_plan faults{};  // $AQUEDUCT_EMU_FAULTS, when set, replaces it (emu::device::try_create)

  // Builds a machine from "preset[,preset...]" where each item may be "N*preset".
  [[nodiscard]] static result<machine_config> try_parse(std::string_view spec) {
    machine_config m;
    while (!spec.empty()) {
      const auto comma = spec.find(',');
      std::string_view item = spec.substr(0, comma);
      spec = comma == std::string_view::npos ? std::string_view{} : spec.substr(comma + 1);
      std::uint32_t count = 1;
      if (const auto star = item.find('*'); star != std::string_view::npos) {
        const auto n = item.substr(0, star);
        const auto [ptr, ec] = std::from_chars(n.data(), n.data() + n.size(), count);
        if (ec != std::errc{} || ptr != n.data() + n.size() || count == 0 || count > 64)
          return failure(errc::invalid_argument, "emu machine \"" + std::string(item) + "\": bad count");
        item = item.substr(star + 1);
      }
      const gpu_properties* p = find_preset(item);
      if (!p)
        return failure(errc::invalid_argument, "emu machine: unknown preset \"" + std::string(item) +
                                                   "\" (known: mi300x, rx7900xtx, mi250x, rx6900xt, rx9070xt)");
      for (std::uint32_t i = 0; i < count; ++i) m.gpus.push_back(*p);
    }
    if (m.gpus.empty()) return failure(errc::invalid_argument, "emu machine: no GPU named");
    return m;
  }
  [[nodiscard]] static machine_config parse(std::string_view spec) { return try_parse(spec).value(); }

  // Per-process queue limit of GPU `p` (spec/kfd.md §2.6).
  [[nodiscard]] std::uint32_t queue_limit(const gpu_properties& p) const noexcept {
    if (max_queues_per_process) return max_queues_per_process;
    // GC 9.4.3 / 9.4.4 / 9.5.0 (gfx942, gfx950) allow 255.
    return p.gfx_target_version == 90402 || p.gfx_target_version == 90500 ? 255 : 127;
  }
  [[nodiscard]] std::uint32_t sdma_queues(const gpu_properties& p) const noexcept {
    return sdma_queues_per_engine ? sdma_queues_per_engine : p.num_sdma_queues_per_engine;
  }
};

}  // namespace aqueduct::emu
