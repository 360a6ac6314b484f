// aqueduct/graph/detail/plan.hpp — the first half of instantiation (not API): flatten child
// graphs, check the graph, and decide per node which queue segment runs it, what it waits for and
// which completion signal it needs.
//
// Layer: graph. Rules (docs/graph.md "Lowering"):
//   - child graphs are inlined: the child's roots take the child node's dependencies, the child
//     node's dependents depend on the child's leaves;
//   - a signal-wait node runs nowhere: each consumer waits for the signal itself and inherits the
//     signal-wait node's own dependencies; memory alloc/free nodes run nowhere either (their
//     dependents inherit their dependencies; graph/detail/pool.hpp places their memory);
//   - a dependency on a node of the same queue is kept by the queue's order (AQL: the barrier
//     bit; PM4 and SDMA execute a queue's commands in order);
//   - a dependency on another queue, engine, GPU or a host node is a wait on that node's
//     completion signal, placed right before the consumer on the consumer's queue (AQL
//     barrier-AND, PM4 WAIT_REG_MEM, SDMA POLL_REGMEM): no host round trip;
//   - so a node needs a completion signal when a consumer sits on another queue or on the host,
//     and a host node always has one (the device waits for it);
//   - a conditional node's bodies are flattened after it, each body node remembering its owner
//     and branch; they run inside the owner's indirect buffers, on its queue, in their own
//     program order — they are in no segment's order and wait for nothing across queues. Memory
//     nodes in a body run nowhere there either: they bound the lifetimes of the body's
//     allocations (graph/detail/pool.hpp).
// Thread safety: pure functions over values.
#pragma once

#include <aqueduct/core/result.hpp>
#include <aqueduct/graph/task_graph.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace aqueduct::graph::detail {

inline constexpr std::uint32_t no_index = ~std::uint32_t{0};

// An external signal condition a consumer waits for (from a signal-wait node).
struct external_wait {
  sync::signal_ref signal{};
  abi::signal_condition cond = abi::signal_condition::eq;
  std::int64_t value = 0;
};

struct planned_node {
  std::uint32_t segment = no_index;        // no_index: host node or signal-wait node
  std::uint32_t signal = no_index;         // its completion signal (index in a slot's node signals)
  bool same_queue_dep = false;             // ordered after earlier work of its own queue
  std::vector<std::uint32_t> waits;        // flat nodes whose completion signal it waits for
  std::vector<external_wait> external;     // external signals it waits for
  // Conditional bodies: owner != no_index for a node inside one (its conditional, and which body).
  std::uint32_t owner = no_index;
  std::uint32_t branch = 0;
  std::vector<std::vector<std::uint32_t>> branches;  // a conditional's bodies: their nodes, in order
  std::uint32_t loop_flag = no_index;                // a WHILE's overflow word (index in its segment)
  std::uint32_t cond_flag = no_index;                // SDMA IF/IF-ELSE/WHILE: its "word != 0" word (same place)
  std::uint32_t nesting = 0;                         // conditionals around this node
  // What the segment's cursor word holds while this node runs (indirect mode, tag + 1): its flat
  // index at instantiation; a topology update (exec_graph::try_update) keeps the tag of a node it
  // keeps, so the prebuilt packets of a segment it does not re-lower stay valid.
  std::uint32_t tag = no_index;
};

// The node ids of one captured graph (the top-level one, a child graph where it is used, a
// conditional's body) and where its children and bodies went: exec_graph::try_inner.
struct inner_scope {
  std::uint32_t node = 0;    // the child or conditional node, in this scope
  std::uint32_t branch = 0;  // which body (0 for a child graph)
  std::uint32_t scope = 0;   // its scope
};
struct node_scope {
  std::vector<std::uint32_t> to_flat;  // node id -> flat index (no_index: a child graph)
  std::vector<inner_scope> inner;
};

struct plan {
  node_vector nodes;                      // flattened (child graphs inlined), topological order
  std::vector<node_scope> scopes;         // 0: the top-level graph; then each child graph and body
  std::vector<planned_node> placed;       // parallel to nodes
  std::vector<queue_binding> segments;    // one per queue used
  std::vector<std::vector<std::uint32_t>> order;  // per segment: its nodes, in order
  std::uint32_t node_signals = 0;
  std::vector<std::uint32_t> host_nodes;
  std::vector<std::uint32_t> loop_flags;  // per segment: WHILE overflow words it needs
  std::vector<std::uint32_t> loops;       // the WHILE nodes (flat), checked after each replay
  std::uint32_t max_nesting = 0;          // deepest PM4 conditional nesting (1: conditionals, none nested; SDMA: unbounded)
};

// Where a flattened node came from (parallel to plan::nodes while flattening).
struct flat_origin {
  std::uint32_t owner = no_index;
  std::uint32_t branch = 0;
};

// Appends `g`'s nodes to `out`, remapping edges; `roots_deps` are what the graph's roots wait
// for. Returns the flat indices of g's leaves (nodes no other node of g depends on).
inline std::vector<std::uint32_t> flatten_into(const task_graph& g, const std::vector<std::uint32_t>& roots_deps,
                                                node_vector& out, std::vector<node_scope>& scopes, std::uint32_t scope, int depth,
                                                std::vector<flat_origin>& origin, flat_origin here = {}) {
  const auto open_scope = [&](std::uint32_t node, std::uint32_t branch) {
    const auto inner = static_cast<std::uint32_t>(scopes.size());
    scopes.emplace_back();  // (invalidates references into scopes)
    scopes[scope].inner.push_back({node, branch, inner});
    return inner;
  };
  if (depth > 64) throw_failure(failure(errc::invalid_argument, "child graphs nested more than 64 deep (a cycle?)"));
  std::vector<std::vector<std::uint32_t>> done(g.size());  // per node of g: the flat nodes that stand for its completion
  std::vector<bool> used(g.size(), false);
  for (std::size_t i = 0; i < g.size(); ++i) {
    const node& n = g.nodes()[i];
    std::vector<std::uint32_t> deps;
    if (n.deps.empty()) deps = roots_deps;
    for (std::uint32_t d : n.deps) {
      used[d] = true;
      for (std::uint32_t f : done[d])
        if (std::find(deps.begin(), deps.end(), f) == deps.end()) deps.push_back(f);
    }
    if (n.kind == node_kind::child) {
      if (!n.child) throw_failure(failure(errc::invalid_argument, n.describe() + ": no graph"));
      const std::uint32_t inner = open_scope(static_cast<std::uint32_t>(i), 0);
      done[i] = flatten_into(*n.child, deps, out, scopes, inner, depth + 1, origin, here);
      if (done[i].empty()) done[i] = deps;  // an empty child stands for its dependencies
      scopes[scope].to_flat.push_back(no_index);
      continue;
    }
    node copy = n;
    copy.deps.assign(deps.begin(), deps.end());
    copy.child.reset();
    out.push_back(std::move(copy));
    origin.push_back(here);
    const auto idx = static_cast<std::uint32_t>(out.size() - 1);
    done[i] = {idx};
    scopes[scope].to_flat.push_back(idx);
    if (n.kind == node_kind::conditional)  // its bodies follow it; their roots wait for nothing (in order)
      for (std::uint32_t b = 0; b < n.bodies.size(); ++b) {
        if (!n.bodies[b]) throw_failure(failure(errc::invalid_argument, n.describe() + ": body " + std::to_string(b) + " is empty"));
        const std::uint32_t inner = open_scope(static_cast<std::uint32_t>(i), b);
        (void)flatten_into(*n.bodies[b], {}, out, scopes, inner, depth + 1, origin, flat_origin{idx, b});
      }
  }
  std::vector<std::uint32_t> leaves;
  for (std::size_t i = 0; i < g.size(); ++i)
    if (!used[i])
      for (std::uint32_t f : done[i])
        if (std::find(leaves.begin(), leaves.end(), f) == leaves.end()) leaves.push_back(f);
  return leaves;
}

// Nodes that run nowhere: their dependents inherit their dependencies (a signal wait adds its
// signal; memory nodes only order the nodes around them: graph/detail/pool.hpp).
[[nodiscard]] constexpr bool runs_nowhere(node_kind k) noexcept {
  return k == node_kind::signal_wait || k == node_kind::mem_alloc || k == node_kind::mem_free;
}

// The real waits of node `n`: signal-wait nodes are replaced by their signal and their own deps,
// memory nodes by their deps.
inline void resolve_deps(const node_vector& nodes, std::uint32_t n, std::vector<std::uint32_t>& real,
                         std::vector<external_wait>& ext) {
  for (std::uint32_t d : nodes[n].deps) {
    if (runs_nowhere(nodes[d].kind)) {
      const node& w = nodes[d];
      if (w.kind == node_kind::signal_wait) {
        bool seen = false;
        for (const auto& e : ext) seen |= e.signal == w.signal && e.cond == w.cond && e.value == w.value;
        if (!seen) ext.push_back({w.signal, w.cond, w.value});
      }
      resolve_deps(nodes, d, real, ext);
    } else if (std::find(real.begin(), real.end(), d) == real.end()) {
      real.push_back(d);
    }
  }
}

// A conditional node's own rules (graph/control.hpp checks them too, where the user calls it).
inline void check_conditional(const node& x) {
  const auto bad = [&](const std::string& why) { throw_failure(failure(errc::invalid_argument, x.describe() + ": " + why)); };
  if (x.queue.type != queue_type::pm4 && x.queue.type != queue_type::sdma)
    throw_failure(failure(errc::not_supported, x.describe() + ": device-evaluated control flow runs on PM4 queues "
                                                              "(COND_INDIRECT_BUFFER) and SDMA queues (COND_EXE); AQL has no "
                                                              "conditional packet"));
  if (!x.dst || !x.dst.aligned(8)) bad("the condition word must be a non-null, 8-byte aligned device address");
  const std::size_t want = x.condition == condition_kind::if_then_else ? 2 : x.condition == condition_kind::switch_on ? 0 : 1;
  if (want != 0 && x.bodies.size() != want) bad("needs " + std::to_string(want) + " bod" + (want == 1 ? "y" : "ies"));
  if (x.condition == condition_kind::switch_on && (x.bodies.empty() || x.bodies.size() > 4096))
    bad("a SWITCH takes 1 to 4096 cases");
  if (x.condition == condition_kind::while_loop && (x.max_iterations == 0 || x.max_iterations > 65536))
    bad("a WHILE's max_iterations must be 1 to 65536 (each iteration is one COND_INDIRECT_BUFFER packet)");
}

// Conditional `i`'s words in its segment's per-slot flag memory: a WHILE's overflow word; on SDMA,
// where COND_EXE only compares for equality, the word an IF, IF-ELSE or WHILE computes its
// "condition != 0" into (graph/detail/lower_sdma.hpp).
inline void place_flags(plan& p, std::uint32_t i) {
  const node& x = p.nodes[i];
  planned_node& me = p.placed[i];
  if (x.condition == condition_kind::while_loop) {
    me.loop_flag = p.loop_flags[me.segment]++;
    p.loops.push_back(i);
  }
  if (x.queue.type == queue_type::sdma && x.condition != condition_kind::switch_on) me.cond_flag = p.loop_flags[me.segment]++;
}

// A node inside a conditional's body: on the owner's queue, a kind its engine runs there.
inline void place_in_body(plan& p, std::uint32_t i, const flat_origin& o) {
  node& x = p.nodes[i];
  planned_node& me = p.placed[i];
  const planned_node& owner = p.placed[o.owner];
  const node& c = p.nodes[o.owner];
  me.owner = o.owner;
  me.branch = o.branch;
  if (x.kind == node_kind::mem_alloc || x.kind == node_kind::mem_free) return;  // runs nowhere: bounds its body's lifetimes (detail/pool.hpp)
  me.segment = owner.segment;  // an update that re-lowers it re-lowers the owner's segment
  me.nesting = owner.nesting + (x.kind == node_kind::conditional ? 1 : 0);
  if (c.queue.type == queue_type::pm4) p.max_nesting = std::max(p.max_nesting, me.nesting);
  const bool sdma = c.queue.type == queue_type::sdma;
  if (((sdma || x.kind != node_kind::kernel) && x.kind != node_kind::copy && x.kind != node_kind::fill && x.kind != node_kind::timestamp &&
       x.kind != node_kind::signal_record && x.kind != node_kind::conditional))
    throw_failure(failure(errc::not_supported, x.describe() + " inside the body of " + c.describe() +
                                                   (sdma ? ": an SDMA body holds copies, fills, timestamps, signal records and conditionals "
                                                           "of its conditional's queue, and graph memory allocations and frees (the engine "
                                                           "runs or skips it in place)"
                                                         : ": a body holds kernels, copies and fills (shader copies), timestamps, signal "
                                                           "records and conditionals of its conditional's queue, and graph memory "
                                                           "allocations and frees (the command processor runs it as an indirect buffer)")));
  if (!(x.queue == c.queue))
    throw_failure(failure(errc::not_supported, x.describe() + " inside the body of " + c.describe() +
                                                   ": a body runs on its conditional's queue only (" + queue_name(c.queue) + ")"));
  if (p.placed[o.owner].branches.size() <= o.branch) p.placed[o.owner].branches.resize(c.bodies.size());
  p.placed[o.owner].branches[o.branch].push_back(i);
  if (x.kind == node_kind::conditional) place_flags(p, i);
}

// With `trace`, every AQL dispatch (kernel or shader copy) gets a completion signal too: the
// packet processor writes its start_ts/end_ts there.
[[nodiscard]] inline plan make_plan(const task_graph& g, bool trace = false) {
  plan p;
  std::vector<flat_origin> origin;
  p.scopes.emplace_back();
  (void)flatten_into(g, {}, p.nodes, p.scopes, 0, 0, origin);
  const auto n = static_cast<std::uint32_t>(p.nodes.size());
  p.placed.resize(n);
  // Segments: one per queue, in order of first use.
  for (std::uint32_t i = 0; i < n; ++i) {
    node& x = p.nodes[i];
    if (x.kind == node_kind::conditional) check_conditional(x);
    if (origin[i].owner != no_index) {  // inside a conditional's body: runs in the owner's IBs
      place_in_body(p, i, origin[i]);
      continue;
    }
    if (x.kind == node_kind::host || runs_nowhere(x.kind)) {
      if (x.queue.type != queue_type::none)
        throw_failure(failure(errc::invalid_argument, x.describe() + ": a host, signal-wait or memory node has no queue"));
      if (x.kind == node_kind::host) p.host_nodes.push_back(i);
      continue;
    }
    if (x.queue.type == queue_type::none || !x.queue.queue)
      throw_failure(failure(errc::invalid_argument, x.describe() + ": no queue"));
    std::uint32_t s = 0;
    while (s < p.segments.size() && !(p.segments[s] == x.queue)) ++s;
    if (s == p.segments.size()) {
      p.segments.push_back(x.queue);
      p.order.emplace_back();
    }
    p.placed[i].segment = s;
    p.order[s].push_back(i);
    if (x.kind == node_kind::conditional) {
      p.placed[i].nesting = 1;
      if (x.queue.type == queue_type::pm4) p.max_nesting = std::max(p.max_nesting, 1u);
      if (p.loop_flags.size() < p.segments.size()) p.loop_flags.resize(p.segments.size(), 0);
      place_flags(p, i);
    }
  }
  // Waits and signals.
  std::vector<bool> needs_signal(n, false);
  p.loop_flags.resize(p.segments.size(), 0);
  for (std::uint32_t i = 0; i < n; ++i) {
    if (runs_nowhere(p.nodes[i].kind) || p.placed[i].owner != no_index) continue;
    std::vector<std::uint32_t> real;
    resolve_deps(p.nodes, i, real, p.placed[i].external);
    planned_node& me = p.placed[i];
    for (std::uint32_t d : real) {
      const planned_node& dep = p.placed[d];
      if (me.segment != no_index && dep.segment == me.segment) {
        me.same_queue_dep = true;
      } else {
        me.waits.push_back(d);
        needs_signal[d] = true;
      }
    }
    if (p.nodes[i].kind == node_kind::host) needs_signal[i] = true;
    if (trace && dispatches(p.nodes[i]) && p.nodes[i].queue.type == queue_type::aql) needs_signal[i] = true;
  }
  for (std::uint32_t i = 0; i < n; ++i) {
    p.placed[i].tag = i;
    if (needs_signal[i]) p.placed[i].signal = p.node_signals++;
    if (p.nodes[i].kind == node_kind::conditional) p.placed[i].branches.resize(p.nodes[i].bodies.size());  // empty bodies too
  }
  return p;
}

// Whether segment `seg` holds a conditional (it then needs a body buffer per slot).
[[nodiscard]] inline bool has_conditional(const plan& p, std::uint32_t seg) noexcept {
  for (std::uint32_t n : p.order[seg])
    if (p.nodes[n].kind == node_kind::conditional) return true;
  return false;
}

}  // namespace aqueduct::graph::detail
