// aqueduct/graph/exec_update.hpp — the update half of `exec_graph` (graph/exec_graph.hpp):
// try_inner, try_set_args/grid/copy/fill/enabled, try_bind_range and try_update.
//
// Layer: graph. An update changes the node's parameters in the exec graph's plan and logs it;
// each slot applies the log when it is next used (kernargs rewritten, or the segment's packets
// re-lowered), so a replay in flight is never touched. Addresses of graph memory (placeholders of
// graph/memory.hpp) in new arguments or copy addresses are rewritten to the pool's addresses.
// exec_graph.hpp includes this header at its end; it compiles alone too.
// Thread safety: as exec_graph (one thread launches, updates and waits).
#pragma once

#include <aqueduct/core/result.hpp>
#include <aqueduct/graph/detail/exec_state.hpp>
#include <aqueduct/graph/detail/pool.hpp>
#include <aqueduct/graph/exec_graph.hpp>
#include <aqueduct/graph/task_graph.hpp>
#include <aqueduct/runtime/kernel_args.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace aqueduct::graph {

// ---- updates -----------------------------------------------------------------------------------------

inline result<node_id> exec_graph::try_inner(node_id outer, std::uint32_t branch, node_id inner) const {
  if (!s_) return failure(errc::invalid_argument, "this exec_graph is empty (default-constructed or moved-from)");
  if (outer.scope < s_->p.scopes.size())
    for (const detail::inner_scope& x : s_->p.scopes[outer.scope].inner)
      if (x.node == outer.value && x.branch == branch) {
        if (!inner || inner.scope != 0 || inner.value >= s_->p.scopes[x.scope].to_flat.size())
          return failure(errc::invalid_argument, "node " + std::to_string(inner.value) + " is not a node of body " + std::to_string(branch) +
                                                     " of node " + std::to_string(outer.value) + " (it has " +
                                                     std::to_string(s_->p.scopes[x.scope].to_flat.size()) + " nodes)");
        return node_id{inner.value, x.scope};
      }
  return failure(errc::invalid_argument, "node " + std::to_string(outer.value) + " of this graph has no body " + std::to_string(branch) +
                                             " (try_inner takes a child-graph or conditional node and one of its bodies)");
}

inline result<gpu_va> exec_graph::try_memory_address(node_id alloc) const {
  AQUEDUCT_TRY(const std::uint32_t f, try_flat(alloc, node_kind::mem_alloc));
  for (const detail::graph_allocation& a : s_->mem.allocs)
    if (a.alloc == f) return gpu_va(s_->mem.address(a));
  return failure(errc::not_found, s_->p.nodes[f].describe() + ": no allocation");
}

inline result<std::uint32_t> exec_graph::try_flat(node_id n, node_kind k) const {
  if (!s_) return failure(errc::invalid_argument, "this exec_graph is empty (default-constructed or moved-from)");
  const auto& sc = s_->p.scopes;
  if (!n || n.scope >= sc.size() || n.value >= sc[n.scope].to_flat.size() || sc[n.scope].to_flat[n.value] == detail::no_index)
    return failure(errc::invalid_argument, "node " + std::to_string(n.value) + " is not a node of this graph (a child graph or body node: "
                                           "take its id from try_inner)");
  const std::uint32_t f = sc[n.scope].to_flat[n.value];
  if (k == node_kind::child) return f;  // any kind
  if (s_->p.nodes[f].kind != k)
    return failure(errc::invalid_argument, s_->p.nodes[f].describe() + " is not a " + to_string(k) + " node");
  return f;
}

inline void exec_graph::logged(std::uint32_t flat, detail::update_kind k) {
  // A node already in the log where no slot has applied it yet needs no second entry: each slot
  // reads the node's current parameters when it gets there.
  detail::exec_state& s = *s_;
  const std::uint64_t furthest = s.log_base + *std::max_element(s.slot_log.begin(), s.slot_log.end());
  if (s.last_logged[flat] == ~std::uint64_t{0} || s.last_logged[flat] < furthest) {
    s.log.push_back(flat);
    s.last_logged[flat] = s.log_base + s.log.size() - 1;
  }
  if (k == detail::update_kind::relower) {
    const std::uint32_t seg = s_->p.placed[flat].segment;
    if (seg != detail::no_index)
      for (auto& c : s_->segs[seg].slots) c.stale = true;
  }
}

template <class... A>
result<void> exec_graph::try_set_args(node_id n, const A&... args) {
  AQUEDUCT_TRY(const std::uint32_t f, try_flat(n, node_kind::kernel));
  node& x = s_->p.nodes[f];
  if (!runtime::detail::untyped_args_match<A...>(x.kernel.args, x.kernel.kernarg_size))
    return runtime::detail::untyped_args_mismatch<A...>(x.kernel.name, x.kernel.args, x.kernel.kernarg_size);
  const std::uint64_t pointers = detail::pointer_digest(x);
  if (AQUEDUCT_UNLIKELY(!s_->mem.allocs.empty())) {  // graph memory: placeholders become pool addresses
    std::vector<std::byte>& before = s_->args_before;  // sized at instantiation: no allocation here
    before.assign(x.args.begin(), x.args.end());
    runtime::detail::put_kernargs(x.args.data(), args...);
    if (!detail::translate(s_->mem, x)) {
      std::copy(before.begin(), before.end(), x.args.begin());
      return failure(errc::invalid_argument, x.describe() + ": the new arguments hold a graph allocation of another graph");
    }
  } else {
    runtime::detail::put_kernargs(x.args.data(), args...);
  }
  // New buffers (or a new buffer at a freed one's address): look up their generations.
  if (AQUEDUCT_UNLIKELY(detail::pointer_digest(x) != pointers || !s_->buffers.all_live(f))) s_->buffers.collect(s_->p, f);
  logged(f, detail::update_kind::args);
  return ok();
}

inline result<void> exec_graph::try_set_grid(node_id n, runtime::grid g, runtime::block b) {
  AQUEDUCT_TRY(const std::uint32_t f, try_flat(n, node_kind::kernel));
  if (!g.x || !g.y || !g.z || !b.x || !b.y || !b.z) return failure(errc::invalid_argument, "grid and block sizes must be positive");
  node& x = s_->p.nodes[f];
  if (x.counts)
    return failure(errc::invalid_argument, x.describe() + ": an indirect kernel's grid is the workgroup counts the GPU reads at run "
                                           "time; write the counts (or give the node new ones) instead of setting a grid");
  x.grid = g;
  x.block = b;
  logged(f, detail::update_kind::relower);  // the packet holds the grid (and hidden arguments change)
  return ok();
}

inline result<void> exec_graph::try_set_copy(node_id n, gpu_va dst, gpu_va src, std::uint64_t bytes) {
  AQUEDUCT_TRY(const std::uint32_t f, try_flat(n, node_kind::copy));
  node& x = s_->p.nodes[f];
  node moved;
  moved.kind = node_kind::copy;
  moved.dst = dst;
  moved.src = src;
  if (!detail::translate(s_->mem, moved))
    return failure(errc::invalid_argument, x.describe() + ": the new addresses hold a graph allocation of another graph");
  x.dst = moved.dst;
  x.src = moved.src;
  x.bytes = bytes;
  s_->buffers.collect(s_->p, f);
  logged(f, detail::update_kind::relower);
  return ok();
}

inline result<void> exec_graph::try_set_fill(node_id n, gpu_va dst, std::uint32_t value, std::uint64_t bytes) {
  AQUEDUCT_TRY(const std::uint32_t f, try_flat(n, node_kind::fill));
  if (!dst.aligned(4) || bytes % 4) return failure(errc::invalid_argument, "fill: address and length must be dword multiples");
  node& x = s_->p.nodes[f];
  node moved;
  moved.kind = node_kind::fill;
  moved.dst = dst;
  if (!detail::translate(s_->mem, moved))
    return failure(errc::invalid_argument, x.describe() + ": the new address is a graph allocation of another graph");
  x.dst = moved.dst;
  x.value32 = value;
  x.bytes = bytes;
  s_->buffers.collect(s_->p, f);
  logged(f, detail::update_kind::relower);
  return ok();
}

inline result<void> exec_graph::try_set_enabled(node_id n, bool enabled) {
  AQUEDUCT_TRY(const std::uint32_t f, try_flat(n, node_kind::child));
  node& x = s_->p.nodes[f];
  if (x.kind == node_kind::host || detail::runs_nowhere(x.kind))
    return failure(errc::not_supported, x.describe() + ": only device nodes can be disabled");
  if (x.enabled == enabled) return ok();
  x.enabled = enabled;
  logged(f, detail::update_kind::relower);
  return ok();
}

inline result<void> exec_graph::try_bind_range(std::string_view name, gpu_va va, std::uint64_t bytes, std::uint32_t gpu_id) {
  if (!s_) return failure(errc::invalid_argument, "this exec_graph is empty");
  task_graph::binding* b = nullptr;
  for (const auto& x : s_->graph.bindings())
    if (x.name == name) b = const_cast<task_graph::binding*>(&x);
  if (!b) return failure(errc::not_found, "no buffer named '" + std::string(name) + "' in this graph (task_graph::name)");
  if (bytes < b->bytes)
    return failure(errc::invalid_argument, "bind('" + std::string(name) + "'): the buffer holds " + std::to_string(bytes) +
                                               " bytes, the graph uses " + std::to_string(b->bytes));
  if (gpu_id != b->gpu_id)
    return failure(errc::invalid_argument, "bind('" + std::string(name) + "'): the buffer is on gpu_id " + std::to_string(gpu_id) +
                                               ", the graph's on gpu_id " + std::to_string(b->gpu_id) + " (its nodes' queues expect that GPU)");
  const std::uint64_t lo = b->va.value, hi = b->va.value + b->bytes;
  const auto moved = [&](std::uint64_t a) { return a >= lo && a < hi ? va.value + (a - lo) : a; };
  for (std::uint32_t f = 0; f < s_->p.nodes.size(); ++f) {
    node& x = s_->p.nodes[f];
    bool changed = false;
    if (x.kind == node_kind::kernel)
      for (std::uint32_t off : x.pointers) {
        std::uint64_t p;
        std::memcpy(&p, x.args.data() + off, 8);
        const std::uint64_t q = moved(p);
        if (q != p) {
          std::memcpy(x.args.data() + off, &q, 8);
          changed = true;
        }
      }
    if (x.kind == node_kind::kernel && x.counts && moved(x.counts.value) != x.counts.value) {  // in the packets: relowered
      x.counts = gpu_va(moved(x.counts.value));
      logged(f, detail::update_kind::relower);
      s_->buffers.collect(s_->p, f);
      continue;
    }
    if (x.kind == node_kind::copy || x.kind == node_kind::fill || x.kind == node_kind::timestamp) {
      const gpu_va d(moved(x.dst.value)), s2(moved(x.src.value));
      changed = d != x.dst || s2 != x.src;
      x.dst = d;
      x.src = s2;
      if (changed) {
        logged(f, detail::update_kind::relower);
        s_->buffers.collect(s_->p, f);
      }
      continue;
    }
    if (changed) {
      logged(f, detail::update_kind::args);
      s_->buffers.collect(s_->p, f);
    }
  }
  b->va = va;
  return ok();
}

inline result<void> exec_graph::try_update(const task_graph& g) {
  if (!s_) return failure(errc::invalid_argument, "this exec_graph is empty");
  const task_graph& old = s_->graph;
  std::string diff;
  if (g.size() != old.size()) diff = std::to_string(g.size()) + " nodes instead of " + std::to_string(old.size());
  for (std::size_t i = 0; diff.empty() && i < g.size(); ++i) {
    const node& a = old.nodes()[i];
    const node& b = g.nodes()[i];
    if (a.kind != b.kind || !(a.queue == b.queue) || a.deps != b.deps || (a.kind == node_kind::kernel && a.kernel.object != b.kernel.object) ||
        a.kind == node_kind::child || a.kind == node_kind::conditional || a.kind == node_kind::mem_alloc)
      diff = "node " + std::to_string(i) + " (" + b.describe() + ") differs in kind, queue, kernel or edges";
  }
  if (!diff.empty()) {  // another topology: instantiate it anew, keeping nothing of the old
    AQUEDUCT_TRY_VOID(try_wait_all());
    AQUEDUCT_TRY(auto fresh, try_instantiate(g, s_->opt));
    s_ = std::move(fresh.s_);
    return ok();
  }
  for (std::uint32_t i = 0; i < g.size(); ++i) {
    const std::uint32_t f = s_->p.scopes[0].to_flat[i];
    const node& b = g.nodes()[i];
    node& x = s_->p.nodes[f];
    const bool relower = x.grid.x != b.grid.x || x.grid.y != b.grid.y || x.grid.z != b.grid.z || x.block.x != b.block.x ||
                         x.block.y != b.block.y || x.block.z != b.block.z || x.dst != b.dst || x.src != b.src ||
                         x.bytes != b.bytes || x.value32 != b.value32 || x.enabled != b.enabled || x.value != b.value ||
                         x.counts != b.counts;
    const bool args = x.args != b.args;
    x.args = b.args;
    x.grid = b.grid;
    x.block = b.block;
    x.counts = b.counts;
    x.dst = b.dst;
    x.src = b.src;
    x.bytes = b.bytes;
    x.value32 = b.value32;
    x.enabled = b.enabled;
    x.value = b.value;
    x.fn = b.fn;
    if (relower) logged(f, detail::update_kind::relower);
    else if (args) logged(f, detail::update_kind::args);
  }
  s_->graph = g;
  s_->buffers.collect_all(s_->p);
  return ok();
}

}  // namespace aqueduct::graph
