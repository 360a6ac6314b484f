// aqueduct/graph/detail/shader_op.hpp — copies and fills on compute queues (not API): a copy or
// fill node on an AQL or PM4 queue runs as a dispatch of its agent's copy or fill kernel
// (runtime/shader_copy.hpp), the "shader copy".
//
// Layer: graph. Such a node stays a copy or fill node (dst, src, bytes, value32: updated with
// try_set_copy / try_set_fill, rebound, saved and placed in graph memory as any copy); `kernel`
// holds the agent's kernel, set at capture and again at instantiation. Its grid, block and
// kernarg bytes are derived from the copy's parameters whenever it is lowered, so nothing else
// has to be kept in step: one workgroup of runtime::shader_copy_block work-items per
// runtime::shader_copy_chunk_bytes, at least one.
// Where no copy kernel exists (a real GPU so far) the capture, the eager operation and the
// instantiation fail with errc::not_supported naming the node; overlapping copy ranges and a
// fill that is not whole dwords are refused as runtime::copy_engine refuses them.
// Thread safety: pure functions over nodes (try_resolve_shader_kernel: as try_shader_kernels).
#pragma once

#include <aqueduct/core/result.hpp>
#include <aqueduct/graph/task_graph.hpp>
#include <aqueduct/runtime/agent.hpp>
#include <aqueduct/runtime/shader_copy.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace aqueduct::graph::detail {

// A shader copy's or fill's own rules (runtime/shader_copy.hpp), as copy_engine checks them.
[[nodiscard]] inline result<void> check_shader_op(const node& x) {
  if (x.kind == node_kind::copy) AQUEDUCT_TRY_VOID(runtime::try_check_disjoint(x.dst, x.src, x.bytes));
  if (x.kind == node_kind::fill && (!x.dst.aligned(4) || x.bytes % 4))
    return failure(errc::invalid_argument, "fill: address and length must be dword multiples");
  AQUEDUCT_TRY_VOID(runtime::try_shader_grid(x.bytes, runtime::shader_copy_chunk_bytes));
  return ok();
}

// Sets x.kernel to its agent's copy or fill kernel; errc::not_supported where none exists.
[[nodiscard]] inline result<void> try_resolve_shader_kernel(node& x) {
  auto k = runtime::try_shader_kernels(runtime::agent(*x.queue.agent));
  if (!k) return std::move(k).get_failure();
  x.kernel = x.kind == node_kind::copy ? (*k)->copy.info() : (*k)->fill.info();
  return ok();
}

// Both, at instantiation (or a topology update's new plan), with the node named on failure.
[[nodiscard]] inline result<void> try_prepare_shader_op(node& x) {
  auto r = check_shader_op(x);
  if (r) r = try_resolve_shader_kernel(x);
  if (!r) return failure(r.get_failure().code(), "instantiate: " + x.describe() + ": " + std::string(r.detail()));
  return ok();
}

// The geometry a dispatching node is lowered with (a shader op's from its bytes, checked when it
// was recorded or updated: check_shader_op).
[[nodiscard]] inline runtime::grid launch_grid(const node& x) noexcept {
  if (!is_shader_op(x)) return x.grid;
  const std::uint64_t c = runtime::shader_copy_chunk_bytes;
  const std::uint64_t groups = x.bytes / c + (x.bytes % c != 0);
  return runtime::grid{static_cast<std::uint32_t>((groups ? groups : 1) * runtime::shader_copy_block)};
}
[[nodiscard]] inline runtime::block launch_block(const node& x) noexcept {
  return is_shader_op(x) ? runtime::block{runtime::shader_copy_block} : x.block;
}

// A shader op's explicit kernarg bytes (the kernels' argument structs), at `at`.
inline void put_shader_args(std::byte* at, const node& x) noexcept {
  if (x.kind == node_kind::copy) {
    const runtime::copy_kernel_args a{x.dst.value, x.src.value, x.bytes, runtime::shader_copy_chunk_bytes};
    std::memcpy(at, &a, sizeof a);
  } else {
    const runtime::fill_kernel_args a{x.dst.value, x.bytes, runtime::shader_copy_chunk_bytes, x.value32};
    std::memcpy(at, &a, offsetof(runtime::fill_kernel_args, value) + 4);
  }
}

}  // namespace aqueduct::graph::detail
