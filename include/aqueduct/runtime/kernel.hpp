// aqueduct/runtime/kernel.hpp — kernels: what a dispatch needs (`kernel`) and loaded
// executables.
//
// Layer: runtime. A `kernel` is the GPU address of a 64-byte kernel descriptor in code memory
// plus the sizes a dispatch packet repeats (kernarg, LDS, scratch). An `executable` owns the code
// memory its kernels live in.
// Loading goes through code/loader.hpp (code::try_load) with `detail::code_allocator`, which
// hands the loader kfd/ buffers of memory_use::code. Kernels of an emulated code object
// (code::emulated_code_object; host functions: aqueduct::emu::host_code_object in
// runtime/emulator.hpp) load the same way.
// Real gfx code objects cannot run on the emulator: loading one there fails with
// errc::not_supported and says why (see agent::try_load).
// Thread safety: kernels and executables are values.
#pragma once

#include <aqueduct/abi/aql.hpp>
#include <aqueduct/abi/kernel_descriptor.hpp>
#include <aqueduct/core/assert.hpp>
#include <aqueduct/core/result.hpp>
#include <aqueduct/core/units.hpp>
#include <aqueduct/code/elf.hpp>
#include <aqueduct/code/loader.hpp>
#include <aqueduct/kfd/memory.hpp>
#include <aqueduct/runtime/any_device.hpp>
#include <aqueduct/runtime/kernel_args.hpp>

#include <atomic>
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

// The per-queue and per-dispatch values of the hidden arguments that are not the geometry.
struct hidden_values {
  std::uint64_t queue_ptr = 0;           // hidden_queue_ptr: the AQL queue's amd_queue (0 on PM4)
  std::uint32_t dynamic_lds_bytes = 0;   // hidden_dynamic_lds_size
};

// Where a kernel wants the hidden arguments the runtime fills (code object v5 metadata value
// kinds; -1: not listed), found once when the kernel is looked up. Filled at each dispatch as
// CLR fills them (AMDGPUUsage "Code Object V5 Metadata"; ROCm/clr rocclr/device/rocm/
// rocvirtual.cpp, VirtualGPU::submitKernelInternal): block count = full workgroups, group size =
// the workgroup size, remainder = work-items of the partial last workgroup, grid dims =
// dimensions, global offsets 0 (there is no grid offset here), the queue pointer = the AQL
// queue's amd_queue (hsa_queue_t), the dynamic LDS size = dispatch_options::dynamic_lds_bytes.
// hidden_heap_v1 = the agent's device heap (`heap_va`, set when the kernel is looked up): as CLR
// for HIP (rocclr/device/rocm/rocdevice.cpp Device::HiddenHeapAlloc, once per device, on the
// first dispatch of a kernel that lists it), 128 KiB of device memory, zeroed as
// __ockl_dm_init_v1 zeroes it, allocated by agent::try_load for the first code object whose
// kernels list it (docs/isa.md "Hidden arguments"). Every other byte of the hidden area is
// zeroed, so nothing an earlier dispatch left in the kernarg slot is read: the pointers CLR leaves
// null outside their features (printf/hostcall buffers, multigrid sync, default queue, completion
// action) are null.
struct hidden_arg_offsets {
  std::int32_t block_count[3] = {-1, -1, -1};  // u32
  std::int32_t group_size[3] = {-1, -1, -1};   // u16
  std::int32_t remainder[3] = {-1, -1, -1};    // u16
  std::int32_t grid_dims = -1;                 // u16
  std::int32_t queue_ptr = -1;                 // u64
  std::int32_t dynamic_lds_size = -1;          // u32
  std::int32_t heap = -1;                      // u64
  std::int32_t begin = -1;                     // the first hidden byte (the area zeroed)
  bool any = false;                            // at least one hidden argument is listed
  std::uint64_t heap_va = 0;                   // what hidden_heap_v1 gets (the agent's device heap)
  [[nodiscard]] static hidden_arg_offsets of(std::span<const code::kernel_arg> args) {
    hidden_arg_offsets h;
    static constexpr const char* xyz[3] = {"_x", "_y", "_z"};
    for (const auto& a : args) {
      if (!a.hidden()) continue;
      const auto off = static_cast<std::int32_t>(a.offset);
      if (h.begin < 0 || off < h.begin) h.begin = off;
      for (int d = 0; d < 3; ++d) {
        if (a.value_kind == std::string("hidden_block_count") + xyz[d]) h.block_count[d] = off;
        if (a.value_kind == std::string("hidden_group_size") + xyz[d]) h.group_size[d] = off;
        if (a.value_kind == std::string("hidden_remainder") + xyz[d]) h.remainder[d] = off;
      }
      if (a.value_kind == "hidden_grid_dims") h.grid_dims = off;
      if (a.value_kind == "hidden_queue_ptr") h.queue_ptr = off;
      if (a.value_kind == "hidden_dynamic_lds_size") h.dynamic_lds_size = off;
      if (a.value_kind == "hidden_heap_v1") h.heap = off;
    }
    h.any = h.begin >= 0;
    return h;
  }
  // Writes them into a kernarg slot of `kernarg_size` bytes for grid `g` in blocks of `b`.
  AQUEDUCT_ALWAYS_INLINE void put(std::byte* slot, std::uint32_t kernarg_size, grid g, block b, hidden_values v = {}) const noexcept {
    if (any) put_listed(slot, kernarg_size, g, b, v);  // (no divisions for a kernel without hidden arguments)
  }
  // The same for an indirect dispatch (PM4 only: no queue pointer, no dynamic LDS), whose grid the
  // GPU reads after the kernargs are written: the hidden area zeroed, group sizes, remainders 0
  // (PM4 dispatches whole workgroups), grid dims 3 (as the dispatch packet's setup); the block
  // counts are left for the queue's COPY_DATA (runtime/pm4_queue.hpp).
  AQUEDUCT_NOINLINE void put_indirect(std::byte* slot, std::uint32_t kernarg_size, block b) const noexcept {
    if (!any) return;
    if (std::uint32_t(begin) < kernarg_size) std::memset(slot + begin, 0, kernarg_size - std::uint32_t(begin));
    const std::uint32_t bs[3] = {b.x, b.y, b.z};
    const auto at = [&](std::int32_t off, auto val) {
      if (off >= 0 && std::uint64_t(off) + sizeof val <= kernarg_size) std::memcpy(slot + off, &val, sizeof val);
    };
    for (int d = 0; d < 3; ++d) {
      at(group_size[d], static_cast<std::uint16_t>(bs[d]));
      at(remainder[d], std::uint16_t{0});
    }
    at(grid_dims, std::uint16_t{3});
    at(heap, heap_va);
  }
  AQUEDUCT_NOINLINE void put_listed(std::byte* slot, std::uint32_t kernarg_size, grid g, block b, hidden_values v) const noexcept {
    if (std::uint32_t(begin) < kernarg_size) std::memset(slot + begin, 0, kernarg_size - std::uint32_t(begin));
    const std::uint32_t gs[3] = {g.x, g.y, g.z};
    const std::uint32_t bs[3] = {b.x, b.y, b.z};
    const auto at = [&](std::int32_t off, auto val) {
      if (off >= 0 && std::uint64_t(off) + sizeof val <= kernarg_size) std::memcpy(slot + off, &val, sizeof val);
    };
    for (int d = 0; d < 3; ++d) {
      at(block_count[d], static_cast<std::uint32_t>(gs[d] / bs[d]));
      at(group_size[d], static_cast<std::uint16_t>(bs[d]));
      at(remainder[d], static_cast<std::uint16_t>(gs[d] % bs[d]));
    }
    at(grid_dims, static_cast<std::uint16_t>(g.z > 1 ? 3 : g.y > 1 ? 2 : 1));
    at(queue_ptr, v.queue_ptr);
    at(dynamic_lds_size, v.dynamic_lds_bytes);
    at(heap, heap_va);
  }
};

// Private memory per work-item a dispatch of `k` asks for. A kernel whose stack depth is not known
// at compile time (metadata .uses_dynamic_stack: recursion, indirect calls, dynamic allocas; its
// private_segment_fixed_size covers one frame only) gets the device stack size — HIP's default,
// 1024 bytes per work-item — or its fixed size if larger, as CLR sizes it (ROCm/clr
// rocclr/device/rocm/rocvirtual.cpp: the dispatch's private_segment_size for a kernel with a
// dynamic call stack is max(device stack size, private segment size), capped at 16 KiB;
// rocclr/device/device.hpp stack_size_{1024}). Unlike CLR, a fixed size above 16 KiB is kept
// (capping it would undersize the kernel's own frame). There is no hipDeviceSetLimit here yet.
inline constexpr std::uint32_t dynamic_stack_bytes = 1024;
[[nodiscard]] inline std::uint32_t dispatch_private_segment_size(const code::loaded_kernel& k) noexcept {
  if (!k.uses_dynamic_stack) return k.private_segment_fixed_size;
  return k.private_segment_fixed_size > dynamic_stack_bytes ? k.private_segment_fixed_size : dynamic_stack_bytes;
}

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
  // False once the executable that holds the code is destroyed (null: not from an executable).
  std::shared_ptr<const std::atomic<bool>> loaded{};
  [[nodiscard]] bool freed() const noexcept { return loaded && !loaded->load(std::memory_order_acquire); }
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
  // `heap_va`: the agent's device heap, for the kernels that list hidden_heap_v1 (0: none listed).
  executable(std::unique_ptr<detail::code_allocator> alloc, loaded_type exe, bool emulated,
             std::shared_ptr<const void> keep = {}, std::uint64_t heap_va = 0) noexcept
      : keep_(std::move(keep)), alloc_(std::move(alloc)), exe_(std::make_unique<loaded_type>(std::move(exe))),
        emulated_(emulated), loaded_(std::make_shared<std::atomic<bool>>(true)), heap_va_(heap_va) {}
  executable(executable&&) noexcept = default;
  executable& operator=(executable&& o) noexcept {
    if (this != &o) {
      unload();
      alloc_ = std::move(o.alloc_);
      exe_ = std::move(o.exe_);
      emulated_ = o.emulated_;
      heap_va_ = o.heap_va_;
      keep_ = std::move(o.keep_);
      on_unload_ = std::move(o.on_unload_);
      loaded_ = std::move(o.loaded_);
    }
    return *this;
  }
  ~executable() { unload(); }

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
  // `r` is released when the code is unloaded (aqueduct::emu::try_load unregisters the host
  // functions it registered, so loading and destroying executables does not grow the registry).
  void on_unload(std::shared_ptr<const void> r) noexcept { on_unload_ = std::move(r); }
  // Stops keeping the system alive: for code the system's own state holds (runtime/shader_copy.hpp),
  // which it would otherwise keep alive itself. It is then destroyed with that state.
  void release_system() noexcept { keep_.reset(); }

 private:
  [[nodiscard]] result<const code::loaded_kernel*> try_find(std::string_view name) const {
    for (const auto& c : exe_->kernels())
      if (c.name == name || c.symbol == name) return &c;
    std::string known;
    for (const auto& c : exe_->kernels()) known += (known.empty() ? "" : ", ") + c.name;
    return failure(errc::not_found, "no kernel '" + std::string(name) + "' in this executable (has: " + known + ")");
  }
  [[nodiscard]] untyped_kernel info_of(const code::loaded_kernel& k) const {
    hidden_arg_offsets h = hidden_arg_offsets::of(k.args);
    h.heap_va = heap_va_;
    return untyped_kernel{k.name,          k.kernel_object, static_cast<std::uint32_t>(k.kernarg_segment_size),
                          k.group_segment_fixed_size, dispatch_private_segment_size(k), k.code_kind, k.descriptor,
                          std::span<const code::kernel_arg>(k.args), h, loaded_};
  }

  std::shared_ptr<const void> keep_;  // the system (declared first: released last)
  std::shared_ptr<const void> on_unload_;
  // Marks the kernels handed out as freed, then frees through the allocator, which goes after it.
  void unload() noexcept {
    if (loaded_) loaded_->store(false, std::memory_order_release);
    exe_.reset();
    on_unload_.reset();
  }

  std::unique_ptr<detail::code_allocator> alloc_;
  std::unique_ptr<loaded_type> exe_;
  bool emulated_ = false;
  std::shared_ptr<std::atomic<bool>> loaded_;
  std::uint64_t heap_va_ = 0;
};

}  // namespace aqueduct::runtime
