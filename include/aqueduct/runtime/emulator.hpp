// aqueduct/runtime/emulator.hpp — the runtime's one door to the emulated device: opening one
// (for runtime::system), and host kernels — the functions an emulated code object names.
//
// Layer: runtime. The ONLY runtime (or code) header that includes emu/ (tests/lint enforces it):
// everything else in the runtime sees a device file (runtime/any_device.hpp) and, for a queue, the
// device's queue port (core/queue_port.hpp); it never names an engine. The host-kernel API lives
// here under namespace aqueduct::emu:
//   - `host_kernel` / `host_code_object`: host functions, each called once per workgroup;
//   - `host_kernel_abi`: the descriptor every host kernel is "compiled" with — user SGPRs s[0:1] =
//     dispatch packet pointer, s[2:3] = kernarg pointer; system SGPRs s4, s5, s6 = workgroup id
//     X, Y, Z; VGPR v0 = work-item id X (wave64);
//   - `host_workgroup`: decodes exactly those registers, so a host kernel finds its arguments the
//     way compiled code does, and a wrong register setup gives a wrong answer;
//   - `try_load(agent, host_code_object)`: registers each function in the agent's emulated
//     device (emu::device::registry(); there is no process-wide registry) and loads one real
//     kernel descriptor + emulated code blob (abi/emulated_code.hpp) per kernel.
// Thread safety: host functions run on the emulator's engine threads; the rest as runtime::agent.
#pragma once

#include <aqueduct/abi/aql.hpp>
#include <aqueduct/abi/emulated_code.hpp>
#include <aqueduct/abi/kernel_descriptor.hpp>
#include <aqueduct/code/loader.hpp>
#include <aqueduct/core/assert.hpp>
#include <aqueduct/core/result.hpp>
#include <aqueduct/emu/device.hpp>
#include <aqueduct/emu/host_kernel.hpp>
#include <aqueduct/emu/machine_config.hpp>
#include <aqueduct/emu/wave_state.hpp>
#include <aqueduct/runtime/agent.hpp>
#include <aqueduct/runtime/any_device.hpp>
#include <aqueduct/runtime/kernel.hpp>
#include <aqueduct/runtime/kernel_args.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace aqueduct::emu {

// One host function of a host code object (an emulated code object whose kernels follow
// host_kernel_abi). `args` is its argument list as metadata (.args) would list it; declare it
// from the C++ parameter types with `host_kernel::with_args<P...>(name, fn)`, which also sets
// kernarg_size, so that get_kernel<P...> can check a dispatch's types against it.
struct host_kernel {
  std::string name;            // 1..47 bytes: also its name in the device's host_kernel_registry
  host_kernel_fn fn;           // called once per workgroup
  std::uint32_t kernarg_size = 0;
  std::uint32_t group_segment_size = 0;
  std::vector<code::kernel_arg> args{};

  template <class... P>
  [[nodiscard]] static host_kernel with_args(std::string name, host_kernel_fn fn, std::uint32_t group_segment_size = 0) {
    return host_kernel{std::move(name), std::move(fn), static_cast<std::uint32_t>(runtime::detail::kernel_layout<P...>::bytes),
                       group_segment_size, runtime::signature_args<P...>()};
  }
};
struct host_code_object {
  std::vector<host_kernel> kernels;
};

// The descriptor every emulated kernel is "compiled" with (see the header comment).
namespace host_kernel_abi {
inline constexpr unsigned dispatch_ptr_sgpr = 0;
inline constexpr unsigned kernarg_ptr_sgpr = 2;
inline constexpr unsigned workgroup_id_sgpr = 4;  // X, Y, Z at 4, 5, 6
inline constexpr unsigned user_sgpr_count = 4;

[[nodiscard]] constexpr abi::kernel_descriptor descriptor(std::uint32_t kernarg_size,
                                                          std::uint32_t group_segment_size) noexcept {
  namespace kcp = abi::kernel_code_properties;
  namespace r2 = abi::compute_pgm_rsrc2;
  abi::kernel_descriptor kd{};
  kd.group_segment_fixed_size = group_segment_size;
  kd.kernarg_size = kernarg_size;
  kd.kernel_code_properties = static_cast<std::uint16_t>(kcp::enable_sgpr_dispatch_ptr::put(1) |
                                                         kcp::enable_sgpr_kernarg_segment_ptr::put(1));
  kd.compute_pgm_rsrc2 = r2::user_sgpr_count::put(user_sgpr_count) | r2::enable_sgpr_workgroup_id_x::put(1) |
                         r2::enable_sgpr_workgroup_id_y::put(1) | r2::enable_sgpr_workgroup_id_z::put(1) |
                         r2::enable_vgpr_workitem_id::put(0);
  return kd;
}
}  // namespace host_kernel_abi

// A workgroup as a host kernel compiled for host_kernel_abi sees it, decoded from wave 0's
// initial SGPRs and each wave's v0.
class host_workgroup {
 public:
  explicit host_workgroup(workgroup_context& ctx) : ctx_(&ctx) {
    const wave_state& w0 = ctx.wave(0);
    packet_ = ctx.load<abi::kernel_dispatch_packet>(w0.sgpr64(host_kernel_abi::dispatch_ptr_sgpr));
    kernarg_ = w0.sgpr64(host_kernel_abi::kernarg_ptr_sgpr);
    for (unsigned d = 0; d < 3; ++d) id_[d] = w0.sgpr[host_kernel_abi::workgroup_id_sgpr + d];
  }
  [[nodiscard]] workgroup_context& context() const noexcept { return *ctx_; }
  [[nodiscard]] const abi::kernel_dispatch_packet& packet() const noexcept { return packet_; }
  [[nodiscard]] std::uint64_t kernarg_address() const noexcept { return kernarg_; }
  // The kernarg segment as a struct (checked load).
  template <class Args>
  [[nodiscard]] Args args() const {
    return ctx_->load<Args>(kernarg_);
  }
  [[nodiscard]] std::uint32_t id(unsigned dim) const noexcept { return id_[dim]; }
  // Calls f(first_global_x, lanes) for each wave: its active lanes hold consecutive X ids.
  template <class F>
  void for_each_wave(F&& f) const {
    const std::uint64_t base = std::uint64_t(id_[0]) * packet_.workgroup_size_x;
    for (const wave_state& w : ctx_->waves()) {
      if (w.active_lanes == 0) continue;
      const std::uint32_t first = w.v0[0] & abi::packed_workitem_id::x::mask;
      AQUEDUCT_ASSERT((w.v0[w.active_lanes - 1] & abi::packed_workitem_id::x::mask) == first + w.active_lanes - 1,
                      "host_workgroup: lanes are not consecutive in X");
      f(base + first, static_cast<std::uint32_t>(w.active_lanes));
    }
  }
  // Calls f(global_x) for every active work-item.
  template <class F>
  void for_each_item(F&& f) const {
    for_each_wave([&](std::uint64_t first, std::uint32_t n) {
      for (std::uint32_t i = 0; i < n; ++i) f(first + i);
    });
  }

 private:
  workgroup_context* ctx_;
  abi::kernel_dispatch_packet packet_{};
  std::uint64_t kernarg_ = 0;
  std::uint32_t id_[3] = {0, 0, 0};
};

// The emulated device behind `gpu`, or nullptr on /dev/kfd.
[[nodiscard]] inline device* device_of(const runtime::agent& gpu) noexcept { return gpu.state().sys->emulator; }

// Host functions following host_kernel_abi: registers each in the agent's emulated device and
// loads their descriptors. errc::not_supported on a real GPU.
[[nodiscard]] inline result<runtime::executable> try_load(const runtime::agent& gpu, const host_code_object& hco) {
  device* dev = device_of(gpu);
  if (!dev)
    return failure(errc::not_supported, "host kernels run only on the emulated device; " + gpu.gfx_name() +
                                            " is a real GPU (load a gfx code object instead)");
  code::emulated_code_object eco;
  for (const auto& k : hco.kernels) {
    if (k.name.empty() || k.name.size() > abi::max_host_kernel_name)
      return failure(errc::invalid_argument, "host kernel name '" + k.name + "' must be 1.." +
                                                 std::to_string(abi::max_host_kernel_name) + " bytes");
    code::emulated_kernel ek;
    ek.name = k.name;
    ek.descriptor = host_kernel_abi::descriptor(k.kernarg_size, k.group_segment_size);
    for (const auto& arg : k.args)
      if (arg.offset > k.kernarg_size || arg.size > k.kernarg_size - arg.offset)
        return failure(errc::invalid_argument, "host kernel '" + k.name + "': declared argument at offset " +
                                                   std::to_string(arg.offset) + " lies outside its " +
                                                   std::to_string(k.kernarg_size) + " kernarg bytes");
    ek.args = k.args;
    eco.kernels.push_back(std::move(ek));
  }
  // Each load registers its functions under names of their own (issue 13 bug 9): another
  // executable with a kernel of the same name must not redirect this one's.
  // They are unregistered when the executable goes (or the load fails).
  std::vector<std::string> names;
  for (std::size_t i = 0; i < hco.kernels.size(); ++i)
    names.push_back(eco.kernels[i].host_kernel = dev->registry().add_unique(hco.kernels[i].name, hco.kernels[i].fn));
  auto unregister = [dev](const std::vector<std::string>& ns) {
    for (const auto& n : ns) dev->registry().remove(n);
  };
  auto exe = gpu.try_load(eco);
  if (!exe) {
    unregister(names);
    return exe;
  }
  exe->on_unload(std::shared_ptr<const void>(nullptr, [unregister, names = std::move(names)](const void*) { unregister(names); }));
  return exe;
}
[[nodiscard]] inline runtime::executable load(const runtime::agent& gpu, const host_code_object& hco) {
  return try_load(gpu, hco).value();
}

}  // namespace aqueduct::emu

namespace aqueduct::runtime::detail {

// An emulated machine as the device file a system drives, and the device inside it.
struct emulated_file {
  any_device_file file;
  emu::device* device = nullptr;
};
[[nodiscard]] inline result<emulated_file> try_open_emulated_file(emu::machine_config cfg) {
  AQUEDUCT_TRY(auto dev, emu::device::try_create(std::move(cfg)));
  emulated_file f{any_device_file(std::move(dev)), nullptr};
  f.device = f.file.target<emu::device>();
  return f;
}
// The emulated device inside `f` when f is exactly one (not a wrapper), else nullptr.
[[nodiscard]] inline emu::device* emulated_device_in(any_device_file& f) noexcept { return f.target<emu::device>(); }

}  // namespace aqueduct::runtime::detail
