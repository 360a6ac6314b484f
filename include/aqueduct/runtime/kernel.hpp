// aqueduct/runtime/kernel.hpp — kernels: what a dispatch needs (`kernel`), loaded executables,
// and the emulated code objects whose kernels are host functions.
//
// Layer: runtime. A `kernel` is the GPU address of a 64-byte kernel descriptor in code memory
// plus the sizes a dispatch packet repeats (kernarg, LDS, scratch). An `executable` owns the code
// memory its kernels live in.
// Loading goes through code/loader.hpp (code::try_load) with `detail::code_allocator`, which
// hands the loader kfd/ buffers of memory_use::code. On the emulated device kernels are host
// functions (emu/host_kernel.hpp): a `host_code_object` lists them; loading one registers each
// function and places, per kernel, a real kernel descriptor followed (at the 256-byte code entry)
// by an emulated code blob naming the function (code::emulated_code_object). The descriptor follows one fixed
// register ABI, `host_kernel_abi`: user SGPRs s[0:1] = dispatch packet pointer, s[2:3] = kernarg
// pointer; system SGPRs s4, s5, s6 = workgroup id X, Y, Z; VGPR v0 = work-item id X (wave64).
// `host_workgroup` decodes exactly those registers, so a host kernel finds its arguments the way
// compiled code does, and a wrong register setup gives a wrong answer.
// Real gfx code objects cannot run on the emulator: loading one there fails with
// errc::not_supported and says why (see agent::try_load).
// Thread safety: kernels and executables are values; host functions run on emulator threads.
#pragma once

#include <aqueduct/abi/aql.hpp>
#include <aqueduct/abi/kernel_descriptor.hpp>
#include <aqueduct/core/assert.hpp>
#include <aqueduct/core/result.hpp>
#include <aqueduct/core/units.hpp>
#include <aqueduct/code/elf.hpp>
#include <aqueduct/code/loader.hpp>
#include <aqueduct/emu/host_kernel.hpp>
#include <aqueduct/emu/wave_state.hpp>
#include <aqueduct/kfd/memory.hpp>
#include <aqueduct/runtime/any_device.hpp>
#include <aqueduct/runtime/kernel_args.hpp>

#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace aqueduct::runtime {

// Launch geometry in work-items (grid) and work-items per workgroup (block).
struct grid {
  std::uint32_t x = 1, y = 1, z = 1;
};
struct block {
  std::uint16_t x = 1, y = 1, z = 1;
};

// Where a kernel wants the hidden arguments the runtime fills (code object v5 metadata value
// kinds; -1: not listed), found once when the kernel is looked up. Filled at each dispatch as
// ROCr/CLR fill them (AMDGPUUsage "Code Object V5 Metadata"): block count = full workgroups,
// group size = the workgroup size, remainder = work-items of the partial last workgroup, grid
// dims = dimensions.
struct hidden_arg_offsets {
  std::int32_t block_count[3] = {-1, -1, -1};  // u32
  std::int32_t group_size[3] = {-1, -1, -1};   // u16
  std::int32_t remainder[3] = {-1, -1, -1};    // u16
  std::int32_t grid_dims = -1;                 // u16
  [[nodiscard]] static hidden_arg_offsets of(std::span<const code::kernel_arg> args) {
    hidden_arg_offsets h;
    static constexpr const char* xyz[3] = {"_x", "_y", "_z"};
    for (const auto& a : args) {
      if (!a.hidden()) continue;
      const auto off = static_cast<std::int32_t>(a.offset);
      for (int d = 0; d < 3; ++d) {
        if (a.value_kind == std::string("hidden_block_count") + xyz[d]) h.block_count[d] = off;
        if (a.value_kind == std::string("hidden_group_size") + xyz[d]) h.group_size[d] = off;
        if (a.value_kind == std::string("hidden_remainder") + xyz[d]) h.remainder[d] = off;
      }
      if (a.value_kind == "hidden_grid_dims") h.grid_dims = off;
    }
    return h;
  }
  // Writes them into a kernarg slot of `kernarg_size` bytes for grid `g` in blocks of `b`.
  void put(std::byte* slot, std::uint32_t kernarg_size, grid g, block b) const noexcept {
    const std::uint32_t gs[3] = {g.x, g.y, g.z};
    const std::uint32_t bs[3] = {b.x, b.y, b.z};
    const auto at = [&](std::int32_t off, auto v) {
      if (off >= 0 && std::uint64_t(off) + sizeof v <= kernarg_size) std::memcpy(slot + off, &v, sizeof v);
    };
    for (int d = 0; d < 3; ++d) {
      at(block_count[d], static_cast<std::uint32_t>(gs[d] / bs[d]));
      at(group_size[d], static_cast<std::uint16_t>(bs[d]));
      at(remainder[d], static_cast<std::uint16_t>(gs[d] % bs[d]));
    }
    at(grid_dims, static_cast<std::uint16_t>(g.z > 1 ? 3 : g.y > 1 ? 2 : 1));
  }
};

// What a dispatch needs of a loaded kernel: the descriptor's GPU address (AQL kernel_object), the
// sizes a dispatch packet repeats, the descriptor's host copy (a PM4 dispatch writes the
// registers from it) and the metadata's argument list (explicit and hidden; empty when the kernel
// declares none). Untyped: a dispatch of it checks the arguments against `args` at run time.
// `args` points into the executable's loaded kernels: a kernel must not outlive its executable.
struct untyped_kernel {
  std::string name;
  gpu_va object{};                       // the kernel descriptor (AQL kernel_object)
  std::uint32_t kernarg_size = 0;        // bytes of the kernarg segment (explicit + hidden)
  std::uint32_t group_segment_size = 0;  // static LDS
  std::uint32_t private_segment_size = 0;
  code::kernel_code_kind kind = code::kernel_code_kind::gfx_isa;
  abi::kernel_descriptor descriptor{};
  std::span<const code::kernel_arg> args{};
  hidden_arg_offsets hidden{};  // filled by every dispatch
};

// A kernel whose parameters are P... (runtime/kernel_args.hpp): made by executable::get_kernel<P...>,
// which checked P... against the kernel's metadata once; its dispatches take exactly those
// parameter types and check nothing at run time.
template <class... P>
class kernel {
 public:
  using layout = detail::kernel_layout<P...>;
  kernel() = default;
  // P... checked against k's metadata (check_signature).
  [[nodiscard]] static result<kernel> try_check(untyped_kernel k) {
    AQUEDUCT_TRY_VOID(check_signature<P...>(k.name, k.args, k.kernarg_size));
    return kernel(std::move(k));
  }
  [[nodiscard]] const untyped_kernel& info() const noexcept { return k_; }
  [[nodiscard]] const std::string& name() const noexcept { return k_.name; }
  [[nodiscard]] gpu_va object() const noexcept { return k_.object; }
  [[nodiscard]] explicit operator bool() const noexcept { return k_.object.value != 0; }

 private:
  explicit kernel(untyped_kernel k) noexcept : k_(std::move(k)) {}
  untyped_kernel k_;
};

// One host function of a host code object (an emulated code object whose kernels follow
// host_kernel_abi). `args` is its argument list as metadata (.args) would list it; declare it
// from the C++ parameter types with `host_kernel::with_args<P...>(name, fn)`, which also sets
// kernarg_size, so that get_kernel<P...> can check a dispatch's types against it.
struct host_kernel {
  std::string name;            // 1..47 bytes: also the host_kernel_registry name
  emu::host_kernel_fn fn;      // called once per workgroup
  std::uint32_t kernarg_size = 0;
  std::uint32_t group_segment_size = 0;
  std::vector<code::kernel_arg> args{};

  template <class... P>
  [[nodiscard]] static host_kernel with_args(std::string name, emu::host_kernel_fn fn, std::uint32_t group_segment_size = 0) {
    return host_kernel{std::move(name), std::move(fn), static_cast<std::uint32_t>(detail::kernel_layout<P...>::bytes),
                       group_segment_size, signature_args<P...>()};
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
  explicit host_workgroup(emu::workgroup_context& ctx) : ctx_(&ctx) {
    const emu::wave_state& w0 = ctx.wave(0);
    packet_ = ctx.load<abi::kernel_dispatch_packet>(w0.sgpr64(host_kernel_abi::dispatch_ptr_sgpr));
    kernarg_ = w0.sgpr64(host_kernel_abi::kernarg_ptr_sgpr);
    for (unsigned d = 0; d < 3; ++d) id_[d] = w0.sgpr[host_kernel_abi::workgroup_id_sgpr + d];
  }
  [[nodiscard]] emu::workgroup_context& context() const noexcept { return *ctx_; }
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
    for (const emu::wave_state& w : ctx_->waves()) {
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
  emu::workgroup_context* ctx_;
  abi::kernel_dispatch_packet packet_{};
  std::uint64_t kernarg_ = 0;
  std::uint32_t id_[3] = {0, 0, 0};
};

namespace detail {
// code::code_memory_allocator over kfd/ buffers of memory_use::code (host-mapped so the loader
// can write; VRAM | PUBLIC on /dev/kfd).
class code_allocator {
 public:
  code_allocator(kfd::driver_ref<any_device_file> d, const kfd::node& gpu) noexcept : d_(d), gpu_(&gpu) {}
  result<code::device_memory> try_allocate_code(std::uint64_t n, std::uint64_t align) {
    const std::uint64_t natural = n >= huge_page_size ? huge_page_size : page_size;
    if (align > natural && align > page_size)
      return failure(errc::not_supported, "code segment alignment " + std::to_string(align) + " above what the allocator gives");
    AQUEDUCT_TRY(auto bo, kfd::buffer<any_device_file>::try_allocate(d_, *gpu_, byte_count(n), kfd::memory_use::code));
    if (!bo.host()) return failure(errc::not_supported, "code memory has no host mapping");
    code::device_memory m{bo.va(), static_cast<std::byte*>(bo.host()), bo.size().value};
    blocks_.push_back(std::move(bo));
    return m;
  }
  void free_code(code::device_memory m) noexcept {
    for (auto it = blocks_.begin(); it != blocks_.end(); ++it)
      if (it->va() == m.va) {
        blocks_.erase(it);
        return;
      }
  }

 private:
  kfd::driver_ref<any_device_file> d_;
  const kfd::node* gpu_;
  std::vector<kfd::buffer<any_device_file>> blocks_;
};
static_assert(code::code_memory_allocator<code_allocator>);
}  // namespace detail

// Loaded code (code::try_load): owns the code memory, hands out kernels. Every lookup passes the
// dispatch gate: gfx machine code on the emulator (or a host kernel on a real GPU) is
// errc::not_supported, with the kernel and processor named (code::check_runnable).
class executable {
 public:
  using loaded_type = code::loaded_executable<detail::code_allocator>;
  executable() = default;
  executable(std::unique_ptr<detail::code_allocator> alloc, loaded_type exe, bool emulated) noexcept
      : alloc_(std::move(alloc)), exe_(std::make_unique<loaded_type>(std::move(exe))), emulated_(emulated) {}
  executable(executable&&) noexcept = default;
  executable& operator=(executable&& o) noexcept {
    if (this != &o) {
      exe_.reset();
      alloc_ = std::move(o.alloc_);
      exe_ = std::move(o.exe_);
      emulated_ = o.emulated_;
    }
    return *this;
  }
  ~executable() { exe_.reset(); }  // frees through the allocator, which goes after it

  [[nodiscard]] const std::vector<code::loaded_kernel>& kernels() const noexcept { return exe_->kernels(); }
  // The kernel `name` with parameters P..., checked against its metadata once (check_signature:
  // count, kinds, sizes, offsets); then the dispatch gate (code::check_runnable).
  template <class... P>
  [[nodiscard]] result<kernel<P...>> try_get_kernel(std::string_view name) const {
    AQUEDUCT_TRY(const code::loaded_kernel* k, try_find(name));
    AQUEDUCT_TRY(auto typed, kernel<P...>::try_check(info_of(*k)));
    AQUEDUCT_TRY_VOID(code::check_runnable(*k, emulated_));
    return typed;
  }
  template <class... P>
  [[nodiscard]] kernel<P...> get_kernel(std::string_view name) const {
    return try_get_kernel<P...>(name).value();
  }
  // The kernel without a declared parameter list: each dispatch checks its arguments' count,
  // sizes and offsets against the metadata at run time.
  [[nodiscard]] result<untyped_kernel> try_get_untyped_kernel(std::string_view name) const {
    AQUEDUCT_TRY(const code::loaded_kernel* k, try_find(name));
    AQUEDUCT_TRY_VOID(code::check_runnable(*k, emulated_));
    return info_of(*k);
  }
  [[nodiscard]] untyped_kernel get_untyped_kernel(std::string_view name) const { return try_get_untyped_kernel(name).value(); }
  [[nodiscard]] const loaded_type& loaded() const noexcept { return *exe_; }

 private:
  [[nodiscard]] result<const code::loaded_kernel*> try_find(std::string_view name) const {
    for (const auto& c : exe_->kernels())
      if (c.name == name || c.symbol == name) return &c;
    std::string known;
    for (const auto& c : exe_->kernels()) known += (known.empty() ? "" : ", ") + c.name;
    return failure(errc::not_found, "no kernel '" + std::string(name) + "' in this executable (has: " + known + ")");
  }
  [[nodiscard]] static untyped_kernel info_of(const code::loaded_kernel& k) {
    return untyped_kernel{k.name,          k.kernel_object, static_cast<std::uint32_t>(k.kernarg_segment_size),
                          k.group_segment_fixed_size, k.private_segment_fixed_size, k.code_kind, k.descriptor,
                          std::span<const code::kernel_arg>(k.args), hidden_arg_offsets::of(k.args)};
  }

  std::unique_ptr<detail::code_allocator> alloc_;
  std::unique_ptr<loaded_type> exe_;
  bool emulated_ = false;
};

}  // namespace aqueduct::runtime
