// aqueduct/graph/detail/topology.hpp — what a topology-changing update keeps (not API): which
// nodes of a new plan are nodes of the old one, which queue segments' packets would differ, and
// which completion signal each node of the new plan gets so that the others need not move.
//
// Layer: graph. exec_graph::try_update (graph/exec_update.hpp) uses these when the new graph's
// nodes, queues or edges differ from the old one's, on the same queues in the same order:
//   - match_nodes: per segment (and among host nodes), old and new nodes are aligned in program
//     order by a longest common subsequence over (kind, queue, kernel, label, source location);
//     an aligned pair is one node kept (its kernargs, completion signal and cursor tag stay);
//   - segment_changed: a segment whose nodes are all kept, in the same order, with the same
//     packet parameters, waits (by kept node), external waits, completion signal and mailbox, is
//     left alone — its prebuilt packets stay valid bit for bit; any other is re-lowered;
//   - assign_signals: a kept node keeps its signal index; a node that needs a new one takes a
//     free index (of a removed node, or a spare: exec_graph.hpp reserves some per slot).
// Thread safety: pure functions over values.
#pragma once

#include <aqueduct/graph/detail/plan.hpp>
#include <aqueduct/graph/task_graph.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

namespace aqueduct::graph::detail {

// Whether `a` and `b` can be one node kept by an update (not their parameters: packets_differ).
[[nodiscard]] inline bool same_node(const node& a, const node& b) noexcept {
  if (a.kind != b.kind || !(a.queue == b.queue) || a.label != b.label || a.at != b.at) return false;
  if (a.where.line() != b.where.line() || a.where.column() != b.where.column() ||
      std::strcmp(a.where.file_name(), b.where.file_name()) != 0)
    return false;
  if (a.kind == node_kind::kernel)
    return a.kernel.object == b.kernel.object && a.kernel.kernarg_size == b.kernel.kernarg_size && bool(a.counts) == bool(b.counts);
  return true;
}

// Whether the packets of a node with `a`'s parameters differ from one with `b`'s (kernargs aside:
// those are rewritten per slot without re-lowering).
[[nodiscard]] inline bool packets_differ(const node& a, const node& b) noexcept {
  return a.grid.x != b.grid.x || a.grid.y != b.grid.y || a.grid.z != b.grid.z || a.block.x != b.block.x || a.block.y != b.block.y ||
         a.block.z != b.block.z || a.dst != b.dst || a.src != b.src || a.bytes != b.bytes || a.value32 != b.value32 ||
         a.enabled != b.enabled || a.value != b.value || a.counts != b.counts || a.signal.handle() != b.signal.handle();
}

// Aligns `olds` with `news` (flat nodes of the old and new plans, in program order): old_of_new[j]
// for each aligned pair. A common prefix and suffix first; the rest by a longest common
// subsequence when it is small enough (a quadratic table), else left unmatched (new).
inline void align(const node_vector& on, const std::vector<std::uint32_t>& olds, const node_vector& nn,
                  const std::vector<std::uint32_t>& news, std::vector<std::uint32_t>& old_of_new) {
  const auto eq = [&](std::size_t i, std::size_t j) { return same_node(on[olds[i]], nn[news[j]]); };
  std::size_t lo = 0, hi_o = olds.size(), hi_n = news.size();
  while (lo < hi_o && lo < hi_n && eq(lo, lo)) {
    old_of_new[news[lo]] = olds[lo];
    ++lo;
  }
  while (hi_o > lo && hi_n > lo && eq(hi_o - 1, hi_n - 1)) {
    --hi_o;
    --hi_n;
    old_of_new[news[hi_n]] = olds[hi_o];
  }
  const std::size_t a = hi_o - lo, b = hi_n - lo;
  if (a == 0 || b == 0 || a * b > (std::size_t{1} << 22)) return;
  std::vector<std::uint32_t> t((a + 1) * (b + 1), 0);  // t[i][j]: LCS of the suffixes from i and j
  const auto at = [&](std::size_t i, std::size_t j) -> std::uint32_t& { return t[i * (b + 1) + j]; };
  for (std::size_t i = a; i-- > 0;)
    for (std::size_t j = b; j-- > 0;) at(i, j) = eq(lo + i, lo + j) ? at(i + 1, j + 1) + 1 : std::max(at(i + 1, j), at(i, j + 1));
  for (std::size_t i = 0, j = 0; i < a && j < b;) {
    if (eq(lo + i, lo + j)) {
      old_of_new[news[lo + j]] = olds[lo + i];
      ++i;
      ++j;
    } else if (at(i + 1, j) >= at(i, j + 1)) {
      ++i;
    } else {
      ++j;
    }
  }
}

// Per flat node of `np`: the flat node of `op` it keeps, or no_index (new). Both plans have the
// same segments (checked by the caller).
[[nodiscard]] inline std::vector<std::uint32_t> match_nodes(const plan& op, const plan& np) {
  std::vector<std::uint32_t> old_of_new(np.nodes.size(), no_index);
  for (std::size_t s = 0; s < np.order.size(); ++s) align(op.nodes, op.order[s], np.nodes, np.order[s], old_of_new);
  align(op.nodes, op.host_nodes, np.nodes, np.host_nodes, old_of_new);
  return old_of_new;
}

// Gives np's nodes their signal indices: a kept node that had one keeps it, the others take free
// indices below `capacity` outside the done signals [done_base, done_base + segments). Sets
// np.node_signals to done_base (where the done signals stay). Returns the live signal count
// (every index used is below it), or 0 when `capacity` is too small.
[[nodiscard]] inline std::uint32_t assign_signals(const plan& op, plan& np, const std::vector<std::uint32_t>& old_of_new, std::uint32_t capacity) {
  const std::uint32_t done_base = op.node_signals, done_end = done_base + static_cast<std::uint32_t>(op.segments.size());
  std::vector<bool> taken(capacity, false);
  for (std::uint32_t i = done_base; i < done_end; ++i) taken[i] = true;
  std::vector<std::uint32_t> fresh;
  for (std::uint32_t j = 0; j < np.nodes.size(); ++j) {
    if (np.placed[j].signal == no_index) continue;
    const std::uint32_t o = old_of_new[j];
    if (o != no_index && op.placed[o].signal != no_index) {
      np.placed[j].signal = op.placed[o].signal;
      taken[op.placed[o].signal] = true;
    } else {
      fresh.push_back(j);
    }
  }
  std::uint32_t next = 0, live = done_end;
  for (std::uint32_t j : fresh) {
    while (next < capacity && taken[next]) ++next;
    if (next == capacity) return 0;
    np.placed[j].signal = next;
    taken[next] = true;
  }
  for (const planned_node& pn : np.placed)
    if (pn.signal != no_index) live = std::max(live, pn.signal + 1);
  np.node_signals = done_base;
  return live;
}

// Whether segment `seg`'s packets under np (signals and tags already assigned) differ from its
// packets under op. host_waited: per flat node of each plan, a host node waits for its signal.
[[nodiscard]] inline bool segment_changed(const plan& op, const plan& np, const std::vector<std::uint32_t>& old_of_new, std::uint32_t seg,
                                          const std::vector<bool>& old_host_waited, const std::vector<bool>& new_host_waited) {
  const std::vector<std::uint32_t>& ov = op.order[seg];
  const std::vector<std::uint32_t>& nv = np.order[seg];
  if (ov.size() != nv.size()) return true;
  for (std::size_t k = 0; k < nv.size(); ++k) {
    const std::uint32_t j = nv[k], i = ov[k];
    if (old_of_new[j] != i) return true;  // another node, or the same ones reordered
    const planned_node& a = op.placed[i];
    const planned_node& b = np.placed[j];
    // A host wait shows in PM4 and SDMA packets (they raise the event); an AQL packet only names
    // the signal, whose mailbox the slot sets when next used (exec_state::signals_dirty).
    const bool host_wait_in_packets = np.segments[seg].type != queue_type::aql && old_host_waited[i] != new_host_waited[j];
    if (a.same_queue_dep != b.same_queue_dep || a.signal != b.signal || a.tag != b.tag || host_wait_in_packets ||
        packets_differ(op.nodes[i], np.nodes[j]) || a.waits.size() != b.waits.size() || a.external.size() != b.external.size())
      return true;
    for (std::size_t w = 0; w < b.waits.size(); ++w)  // by signal: the same index is the same address
      if (np.placed[b.waits[w]].signal != op.placed[a.waits[w]].signal) return true;
    for (std::size_t w = 0; w < b.external.size(); ++w)
      if (a.external[w].signal.handle() != b.external[w].signal.handle() || a.external[w].cond != b.external[w].cond ||
          a.external[w].value != b.external[w].value)
        return true;
  }
  return false;
}

// Per flat node: a host node waits for its completion signal (its packets then raise the event).
[[nodiscard]] inline std::vector<bool> host_waited(const plan& p) {
  std::vector<bool> v(p.nodes.size(), false);
  for (std::uint32_t h : p.host_nodes)
    for (std::uint32_t w : p.placed[h].waits) v[w] = true;
  return v;
}

}  // namespace aqueduct::graph::detail
