// aqueduct/graph/exec_update.hpp — the update half of `exec_graph` (graph/exec_graph.hpp):
// try_inner, try_set_args/grid/copy/fill/enabled, try_bind_range and try_update (with the
// topology-changing update: graph/detail/topology.hpp decides what it keeps).
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
#include <aqueduct/graph/detail/shader_op.hpp>
#include <aqueduct/graph/detail/topology.hpp>
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
    if (!detail::translate(s_->mem, x, f)) {
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
  moved.queue = x.queue;
  moved.dst = dst;
  moved.src = src;
  moved.bytes = bytes;
  if (!detail::translate(s_->mem, moved, f))
    return failure(errc::invalid_argument, x.describe() + ": the new addresses hold a graph allocation of another graph");
  if (auto r = runtime::try_check_disjoint(moved.dst, moved.src, bytes); !r)  // every queue: not memmove
    return failure(r.get_failure().code(), x.describe() + ": " + std::string(r.detail()));
  if (detail::is_shader_op(moved))
    if (auto r = detail::check_shader_op(moved); !r) return failure(r.get_failure().code(), x.describe() + ": " + std::string(r.detail()));
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
  moved.queue = x.queue;
  moved.dst = dst;
  moved.bytes = bytes;
  if (!detail::translate(s_->mem, moved, f))
    return failure(errc::invalid_argument, x.describe() + ": the new address is a graph allocation of another graph");
  if (detail::is_shader_op(moved))
    if (auto r = detail::check_shader_op(moved); !r) return failure(r.get_failure().code(), x.describe() + ": " + std::string(r.detail()));
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
  if (!diff.empty()) {  // another topology: re-lower only the segments it changes, where that can be done
    AQUEDUCT_TRY(const bool done, try_update_topology(g));
    if (done) return ok();
    update_report rep = std::move(s_->last_update);  // why not: kept across the new instantiation
    AQUEDUCT_TRY_VOID(try_wait_all());
    AQUEDUCT_TRY(auto fresh, try_instantiate(g, s_->opt));
    s_ = std::move(fresh.s_);
    rep.relowered.assign(s_->segs.size(), true);
    s_->last_update = std::move(rep);
    return ok();
  }
  for (const node& b : g.nodes())  // a shader copy's new parameters, checked before anything changes
    if (detail::is_shader_op(b))
      if (auto r = detail::check_shader_op(b); !r) return failure(r.get_failure().code(), b.describe() + ": " + std::string(r.detail()));
  update_report rep;
  rep.relowered.assign(s_->segs.size(), false);
  for (const node& x : s_->p.nodes) rep.kept += detail::runs_nowhere(x.kind) ? 0 : 1;
  for (std::uint32_t i = 0; i < g.size(); ++i) {
    const std::uint32_t f = s_->p.scopes[0].to_flat[i];
    rep.moved.push_back(node_id{i});
    const node& b = g.nodes()[i];
    node& x = s_->p.nodes[f];
    const bool relower = detail::packets_differ(x, b);
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
    if (relower && s_->p.placed[f].segment != detail::no_index) rep.relowered[s_->p.placed[f].segment] = true;
  }
  s_->graph = g;
  s_->buffers.collect_all(s_->p);
  s_->last_update = std::move(rep);
  return ok();
}

// Room for `bytes` of kernargs per slot on `agent`: the index of an agent_memory block with that
// much left after `used`, else a new block of `block_bytes` per slot (allocated now: the slots of
// the existing blocks keep their addresses, which prebuilt packets hold).
inline result<std::uint32_t> exec_graph::try_kernarg_room(runtime::detail::agent_state* agent, std::uint64_t bytes, std::uint64_t block_bytes) {
  detail::exec_state& s = *s_;
  for (std::uint32_t i = static_cast<std::uint32_t>(s.agents.size()); i-- > 0;)
    if (s.agents[i].agent == agent && s.agents[i].slot_bytes - s.agents[i].used >= bytes) return i;
  detail::agent_memory m{agent, {}, std::max<std::uint64_t>((block_bytes + 255) / 256 * 256, 256), 0};
  AQUEDUCT_TRY(m.kernargs, runtime::detail::try_reusable_buffer(*agent, m.slot_bytes * s.slots(), kfd::memory_use::host));
  s.agents.push_back(std::move(m));
  return static_cast<std::uint32_t>(s.agents.size() - 1);
}

// Another topology (try_update): true when done by re-lowering only the segments it changes,
// false (last_update.reason says why) when the whole graph must be instantiated anew. Nothing
// changes on failure.
inline result<bool> exec_graph::try_update_topology(const task_graph& g) {
  detail::exec_state& s = *s_;
  update_report rep;
  rep.topology_changed = true;
  const auto whole = [&](std::string why) {
    rep.reinstantiated = true;
    rep.reason = std::move(why);
    s.last_update = std::move(rep);
    return false;
  };
  if (s.opt.trace) return whole("trace mode (each node's timestamps are laid out by its index)");
  detail::plan np;
  try {
    np = detail::make_plan(g, s.opt.trace);
  } catch (const error& x) {
    return x.get_failure();
  }
  for (const detail::plan* p : {&s.p, &np})
    for (const node& x : p->nodes) {
      if (x.kind == node_kind::mem_alloc || x.kind == node_kind::mem_free)
        return whole("graph memory (its pool layout is planned over the whole graph): " + x.describe());
      if (x.kind == node_kind::conditional)
        return whole("a conditional (its bodies and flag words are laid out over its segment): " + x.describe());
    }
  for (node& x : np.nodes)  // shader copies: their agent's kernel (a loaded graph's nodes have none yet)
    if (detail::is_shader_op(x)) AQUEDUCT_TRY_VOID(detail::try_prepare_shader_op(x));
  if (np.segments.size() != s.p.segments.size() || !std::equal(np.segments.begin(), np.segments.end(), s.p.segments.begin()))
    return whole("the queues differ, or the order in which the graph first uses them (" + std::to_string(np.segments.size()) +
                 " queues instead of " + std::to_string(s.p.segments.size()) + ")");
  if ((!np.host_nodes.empty() || !s.p.host_nodes.empty()) && s.launched && !done(replay_ticket{s.launched - 1}))
    return whole("host nodes, with a replay in flight (its reactor reads the plan)");
  const auto n = static_cast<std::uint32_t>(np.nodes.size());
  const std::vector<std::uint32_t> old_of_new = detail::match_nodes(s.p, np);
  std::vector<std::uint32_t> new_of_old(s.p.nodes.size(), detail::no_index);
  for (std::uint32_t j = 0; j < n; ++j)
    if (old_of_new[j] != detail::no_index) new_of_old[old_of_new[j]] = j;
  // Tags (the cursor word) and signals: a kept node keeps its own.
  std::vector<std::uint32_t> flat_of_tag(s.flat_of_tag.size(), detail::no_index);
  for (std::uint32_t j = 0; j < n; ++j) {
    const std::uint32_t o = old_of_new[j];
    np.placed[j].tag = o != detail::no_index ? s.p.placed[o].tag : static_cast<std::uint32_t>(flat_of_tag.size());
    if (o == detail::no_index) flat_of_tag.push_back(j);
    else flat_of_tag[np.placed[j].tag] = j;
  }
  const std::uint32_t live = detail::assign_signals(s.p, np, old_of_new, s.signals_per_slot);
  if (live == 0)
    return whole("more completion signals than the exec graph has room for (" + std::to_string(s.signals_per_slot) + " per slot)");
  std::vector<bool> host_waited = detail::host_waited(np);
  std::vector<bool> changed(np.segments.size());
  for (std::uint32_t seg = 0; seg < changed.size(); ++seg)
    changed[seg] = detail::segment_changed(s.p, np, old_of_new, seg, s.host_waited, host_waited);
  // Kernargs: a kept node keeps its block; a new kernel node gets room after the others'.
  std::vector<std::uint32_t> node_agent(n, 0);
  std::vector<std::uint64_t> kernarg_offset(n, 0);
  const std::size_t blocks_before = s.agents.size();
  std::vector<std::uint64_t> used_before;
  for (const detail::agent_memory& a : s.agents) used_before.push_back(a.used);
  const auto undo_blocks = [&] {
    s.agents.resize(blocks_before);
    for (std::size_t i = 0; i < blocks_before; ++i) s.agents[i].used = used_before[i];
  };
  std::uint64_t new_bytes = 0;  // all new kernel nodes' bytes: a new block holds them all
  for (std::uint32_t j = 0; j < n; ++j)
    if (detail::dispatches(np.nodes[j]) && old_of_new[j] == detail::no_index)
      new_bytes += detail::pm4_lowering::kernarg_bytes(np.nodes[j]) + (np.nodes[j].queue.type == queue_type::pm4 ? 64 : 0);
  for (std::uint32_t j = 0; j < n; ++j) {
    const node& x = np.nodes[j];
    if (!detail::dispatches(x)) continue;  // kernels and shader copies have kernargs
    if (const std::uint32_t o = old_of_new[j]; o != detail::no_index) {
      node_agent[j] = s.node_agent[o];
      kernarg_offset[j] = s.kernarg_offset[o];
      continue;
    }
    if (auto r = check_kernel_node(x); !r) {
      undo_blocks();
      return std::move(r).get_failure();
    }
    const std::uint64_t bytes = detail::pm4_lowering::kernarg_bytes(x) + (x.queue.type == queue_type::pm4 ? 64 : 0);
    auto b = try_kernarg_room(x.queue.agent, bytes, 2 * new_bytes);
    if (!b) {
      undo_blocks();
      return std::move(b).get_failure();
    }
    node_agent[j] = *b;
    kernarg_offset[j] = s.agents[*b].used;
    s.agents[*b].used += bytes;
  }
  // Commit, then lower each changed segment once off to the side (no slot's memory): a node its
  // queue cannot run is refused now, naming it, with everything put back.
  task_graph graph = g;
  std::swap(s.graph, graph);
  std::swap(s.p, np);  // np: the old plan from here on
  std::swap(s.node_agent, node_agent);
  std::swap(s.kernarg_offset, kernarg_offset);
  std::swap(s.host_waited, host_waited);
  std::swap(s.flat_of_tag, flat_of_tag);
  const auto undo = [&] {
    std::swap(s.graph, graph);
    std::swap(s.p, np);
    std::swap(s.node_agent, node_agent);
    std::swap(s.kernarg_offset, kernarg_offset);
    std::swap(s.host_waited, host_waited);
    std::swap(s.flat_of_tag, flat_of_tag);
    undo_blocks();
  };
  try {
    detail::segment_commands scratch;
    for (std::uint32_t seg = 0; seg < changed.size(); ++seg)
      if (changed[seg]) lower_into(seg, 0, scratch);
  } catch (const error& x) {
    undo();
    return x.get_failure();
  }
  const detail::plan& op = np;
  s.signals_live = live;
  // The update log: its entries name flat nodes of the old plan.
  for (std::uint32_t& e : s.log) e = new_of_old[e];
  s.last_logged.assign(n, ~std::uint64_t{0});
  for (std::size_t k = 0; k < s.log.size(); ++k)
    if (s.log[k] != detail::no_index) s.last_logged[s.log[k]] = s.log_base + k;
  for (std::uint32_t j = 0; j < n; ++j) {
    const std::uint32_t o = old_of_new[j];
    const node& x = s.p.nodes[j];
    if (detail::dispatches(x) && (o == detail::no_index || x.args != op.nodes[o].args || detail::packets_differ(x, op.nodes[o])))
      logged(j, detail::update_kind::args);  // kernargs (and hidden arguments) into each slot when next used
    if (detail::runs_nowhere(x.kind)) continue;  // (never aligned: they have no packets of their own)
    if (o == detail::no_index) ++rep.added;
    else ++rep.kept;
  }
  for (std::uint32_t i = 0; i < op.nodes.size(); ++i)
    if (new_of_old[i] == detail::no_index && !detail::runs_nowhere(op.nodes[i].kind)) ++rep.removed;
  // Segments: the changed ones are re-lowered in each slot when it is next used (never while it
  // runs); every slot's packet-to-node tables move to the new flat nodes (host memory only).
  for (std::uint32_t seg = 0; seg < s.segs.size(); ++seg)
    for (detail::segment_commands& c : s.segs[seg].slots) {
      if (changed[seg]) c.stale = true;
      for (std::uint32_t& x : c.aql_node)
        if (x != detail::no_index) x = new_of_old[x];
      for (std::uint32_t& x : c.cmd_node)
        if (x != detail::no_index) x = new_of_old[x];
    }
  s.signals_dirty.assign(s.slots(), true);
  s.buffers.collect_all(s.p);
  // Ids: the previous top-level graph's, moved to the new one's.
  std::vector<std::uint32_t> id_of_flat(n, detail::no_index);
  for (std::uint32_t i = 0; i < s.p.scopes[0].to_flat.size(); ++i)
    if (s.p.scopes[0].to_flat[i] != detail::no_index) id_of_flat[s.p.scopes[0].to_flat[i]] = i;
  for (std::uint32_t f : op.scopes[0].to_flat)
    rep.moved.push_back(f != detail::no_index && new_of_old[f] != detail::no_index && id_of_flat[new_of_old[f]] != detail::no_index
                            ? node_id{id_of_flat[new_of_old[f]]}
                            : node_id{});
  rep.relowered = std::move(changed);
  s.last_update = std::move(rep);
  return true;
}

}  // namespace aqueduct::graph
