// aqueduct/graph/detail/liveness.hpp — buffer generations for exec graphs (not API): the runtime
// buffers a graph's nodes use, found when it is instantiated or updated, checked before each
// replay so that a replay never reads a freed buffer.
//
// Layer: graph. Every runtime::buffer carries a liveness record with a generation
// (runtime/detail/buffer_life.hpp). At instantiation, and when an update changes a node's
// addresses (a pointer argument, copy or fill addresses, a bind, a whole-graph update), each
// address the node uses — pointer arguments of typed dispatches, copy, fill, timestamp and
// condition addresses — is looked up among the live buffers and the records found are kept per
// node. Before a replay: if no runtime buffer was freed since the last check (one atomic load of
// the table's free count), nothing more; else every kept record must still be live (one atomic
// load per node and buffer), or the launch fails naming the node and the buffer. A buffer freed and another allocated
// at the same address is a new generation: the old record stays dead.
// Not covered: addresses no runtime::buffer holds (memory the program manages through kfd/
// directly, graph memory, which the exec graph owns), an address inside a by-value argument, and
// a buffer already freed when the graph was instantiated or updated (it is no buffer then; the
// device faults on it if the address is not reused).
// Thread safety: one thread launches and updates (the exec graph's rule); the table is thread-safe.
#pragma once

#include <aqueduct/core/result.hpp>
#include <aqueduct/graph/detail/plan.hpp>
#include <aqueduct/graph/detail/pool.hpp>
#include <aqueduct/graph/task_graph.hpp>
#include <aqueduct/runtime/detail/buffer_life.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace aqueduct::graph::detail {

// An order-sensitive digest of node x's pointer arguments: an argument update that leaves it
// unchanged (and finds the node's buffers alive) moved no pointer, so the node's buffers need not
// be looked up again.
[[nodiscard]] inline std::uint64_t pointer_digest(const node& x) noexcept {
  std::uint64_t d = 0;
  for (std::uint32_t off : x.pointers) {
    std::uint64_t v;
    std::memcpy(&v, x.args.data() + off, 8);
    d = (d ^ v) * 0x9E3779B97F4A7C15ull + off;
  }
  return d;
}

struct buffer_uses {
  std::vector<std::vector<std::shared_ptr<const runtime::detail::buffer_life>>> per_node;  // per flat node
  std::uint64_t checked = 0;  // the table's free count at the last check

  // Node i's buffers, looked up now (see the header comment).
  void collect(const plan& p, std::uint32_t i) {
    const auto& table = runtime::detail::buffer_table::instance();
    auto& mine = per_node[i];
    mine.clear();
    visit_addresses(p.nodes[i], [&](std::uint64_t a) {
      if (a == 0 || is_placeholder(a)) return;
      for (const auto& l : mine)
        if (a >= l->va && a < l->va + l->bytes) return;
      if (auto l = table.find(a)) mine.push_back(std::move(l));
    });
  }
  // Whether node i's buffers are all still alive.
  [[nodiscard]] bool all_live(std::uint32_t i) const noexcept {
    for (const auto& l : per_node[i])
      if (!l->live.load(std::memory_order_acquire)) return false;
    return true;
  }
  void collect_all(const plan& p) {
    checked = runtime::detail::buffer_table::instance().frees();
    per_node.resize(p.nodes.size());
    for (std::uint32_t i = 0; i < p.nodes.size(); ++i) collect(p, i);
  }
  // Before a replay: ok, or the first node whose buffer was freed, named with the buffer.
  [[nodiscard]] result<void> check(const plan& p) {
    const std::uint64_t frees = runtime::detail::buffer_table::instance().frees();
    if (AQUEDUCT_LIKELY(frees == checked)) return ok();
    for (std::uint32_t i = 0; i < per_node.size(); ++i)
      for (const auto& l : per_node[i])
        if (!l->live.load(std::memory_order_acquire)) {
          char range[96];
          std::snprintf(range, sizeof range, "[0x%llx, 0x%llx)", static_cast<unsigned long long>(l->va),
                        static_cast<unsigned long long>(l->va + l->bytes));
          return failure(errc::invalid_argument,
                         "graph replay not launched: " + p.nodes[i].describe() + " uses the buffer at " + range + " (" +
                             std::to_string(l->bytes) + " bytes, generation " + std::to_string(l->generation) +
                             "), which was freed after the graph was instantiated or the node updated; give the node a live "
                             "buffer (try_set_args, try_set_copy, try_bind) before the next launch");
        }
    checked = frees;
    return ok();
  }
};

}  // namespace aqueduct::graph::detail
