// aqueduct/runtime/shader_copy.hpp — the shader copy: the copy and fill kernels a compute queue
// runs where no SDMA engine moves the bytes (copy_engine's fallback, runtime/copy.hpp; copies
// and fills recorded on AQL and PM4 queues, graph/ops.hpp), loaded once per agent.
//
// Layer: runtime. On the emulator both are host kernels (runtime/emulator.hpp, the runtime's one
// door to the emulated device) dispatched like any kernel:
//   aqueduct_copy_bytes   {dst, src, bytes, chunk}   workgroup i copies [i*chunk, min((i+1)*chunk, bytes))
//   aqueduct_fill_dwords  {dst, bytes, chunk, value} workgroup i stores `value` over the same range
// through checked accesses, so an unmapped address faults the dispatch (errc::device_fault). On a
// real GPU no gfx copy kernel ships yet: try_shader_kernels is errc::not_supported, saying so.
// `try_shader_kernels(agent)` loads them on the agent's first use and keeps them in the agent's
// state for as long as the system's state lives; the executable does not keep the system alive
// (its state holding it would keep itself alive). The pointer it returns is valid while anything
// made from the system (an agent, a queue, a buffer) is.
// Thread safety: try_shader_kernels may be called from any thread (a race loads twice and keeps one).
#pragma once

#include <aqueduct/core/result.hpp>
#include <aqueduct/core/units.hpp>
#include <aqueduct/runtime/agent.hpp>
#include <aqueduct/runtime/emulator.hpp>
#include <aqueduct/runtime/kernel.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

namespace aqueduct::runtime {

// The copy kernel's arguments; workgroup i copies [i*chunk, min((i+1)*chunk, bytes)).
struct copy_kernel_args {
  std::uint64_t dst, src, bytes, chunk;
};
// The fill kernel's: `value` stored in every dword of [dst, dst + bytes) (dst and bytes dword multiples).
struct fill_kernel_args {
  std::uint64_t dst, bytes, chunk;
  std::uint32_t value;
};
inline constexpr const char* copy_kernel_name = "aqueduct_copy_bytes";
inline constexpr const char* fill_kernel_name = "aqueduct_fill_dwords";

inline void copy_kernel(emu::workgroup_context& ctx) {
  const emu::host_workgroup wg(ctx);
  const auto a = wg.args<copy_kernel_args>();
  const std::uint64_t off = std::uint64_t{wg.id(0)} * a.chunk;
  if (off >= a.bytes) return;
  const std::uint64_t n = std::min(a.chunk, a.bytes - off);
  const auto* s = ctx.ptr<const std::byte>(a.src + off, n);
  auto* d = ctx.ptr<std::byte>(a.dst + off, n, true);
  std::memmove(d, s, n);
}
inline void fill_kernel(emu::workgroup_context& ctx) {
  const emu::host_workgroup wg(ctx);
  const auto a = wg.args<fill_kernel_args>();
  const std::uint64_t off = std::uint64_t{wg.id(0)} * a.chunk;
  if (off >= a.bytes) return;
  const std::uint64_t n = std::min(a.chunk, a.bytes - off);
  auto* d = ctx.ptr<std::byte>(a.dst + off, n, true);
  for (std::uint64_t i = 0; i + 4 <= n; i += 4) std::memcpy(d + i, &a.value, 4);
}

using copy_kernel_type = kernel<void*, const void*, std::uint64_t, std::uint64_t>;
using fill_kernel_type = kernel<void*, std::uint64_t, std::uint64_t, std::uint32_t>;
static_assert(copy_kernel_type::layout::bytes == sizeof(copy_kernel_args));
static_assert(fill_kernel_type::layout::bytes == offsetof(fill_kernel_args, value) + 4);

// Work-items per workgroup of both kernels, and the bytes a workgroup moves unless told otherwise.
inline constexpr std::uint16_t shader_copy_block = 64;
inline constexpr std::uint64_t shader_copy_chunk_bytes = 1u << 20;

struct shader_kernels {
  executable exe;
  copy_kernel_type copy;
  fill_kernel_type fill;
};

// The grid (work-items) of a copy or fill of `bytes` in `chunk`-byte workgroups: one workgroup per
// chunk, at least one (a copy of 0 bytes runs one that moves nothing).
[[nodiscard]] inline result<grid> try_shader_grid(std::uint64_t bytes, std::uint64_t chunk) {
  if (chunk == 0) return failure(errc::invalid_argument, "a shader copy moves at least 1 byte per workgroup (chunk of 0)");
  const std::uint64_t groups = std::max<std::uint64_t>(bytes / chunk + (bytes % chunk != 0), 1);  // no bytes + chunk - 1: it wraps
  if (groups > 0xFFFFFFFFull / shader_copy_block)
    return failure(errc::invalid_argument, "shader copy of " + std::to_string(bytes) + " bytes in chunks of " + std::to_string(chunk) +
                                               " needs more than 2^32 work-items; use larger chunks or split it");
  return grid{static_cast<std::uint32_t>(groups * shader_copy_block)};
}

// A copy whose ranges overlap: refused (neither the SDMA engine nor the shader copy is memmove:
// docs/copies.md), with both ranges named.
[[nodiscard]] inline result<void> try_check_disjoint(gpu_va dst, gpu_va src, std::uint64_t bytes) {
  if (bytes != 0 && dst.value < src.value + bytes && src.value < dst.value + bytes)
    return failure(errc::invalid_argument, "copy: destination " + std::to_string(dst.value) + " and source " + std::to_string(src.value) +
                                               " ranges of " + std::to_string(bytes) +
                                               " bytes overlap; copies are not memmove: copy through a temporary buffer");
  return ok();
}

// The agent's copy and fill kernels, loaded on first use (see the header comment).
[[nodiscard]] inline result<const shader_kernels*> try_shader_kernels(const agent& gpu) {
  detail::agent_state& a = gpu.state();
  {
    std::lock_guard lock(a.mu);
    if (a.shader_code) return static_cast<const shader_kernels*>(a.shader_code.get());
  }
  if (!gpu.emulated())
    return failure(errc::not_supported, "no copy kernel for " + gpu.gfx_name() +
                                            ": aqueduct ships the shader copy (a copy or fill on a compute queue) only on the emulated "
                                            "device so far; copy and fill on an SDMA queue instead");
  emu::host_code_object hco;
  hco.kernels.push_back(emu::host_kernel::with_args<void*, const void*, std::uint64_t, std::uint64_t>(copy_kernel_name, copy_kernel));
  hco.kernels.push_back(emu::host_kernel::with_args<void*, std::uint64_t, std::uint64_t, std::uint32_t>(fill_kernel_name, fill_kernel));
  AQUEDUCT_TRY(auto exe, emu::try_load(gpu, hco));
  auto copy = exe.try_get_kernel<void*, const void*, std::uint64_t, std::uint64_t>(copy_kernel_name);
  if (!copy) return std::move(copy).get_failure();
  auto fill = exe.try_get_kernel<void*, std::uint64_t, std::uint64_t, std::uint32_t>(fill_kernel_name);
  if (!fill) return std::move(fill).get_failure();
  exe.release_system();  // held by the system's own state (see the header comment)
  auto k = std::make_shared<shader_kernels>(shader_kernels{std::move(exe), std::move(*copy), std::move(*fill)});
  std::lock_guard lock(a.mu);
  if (!a.shader_code) a.shader_code = std::move(k);  // else another thread's load won: ours is unloaded
  return static_cast<const shader_kernels*>(a.shader_code.get());
}

}  // namespace aqueduct::runtime
