// aqueduct/graph/detail/pool.hpp — graph memory at instantiation (not API): where each memory
// node's allocation lives in its exec graph's pool, and the placeholder addresses capture handed
// out replaced by pool addresses in every node that uses them.
//
// Layer: graph. Inside capture(), `co_await alloc<T>(gpu, n)` (graph/memory.hpp) records a
// mem_alloc node and returns a placeholder range: addresses from 2^62 up, which are not canonical
// on x86-64 and lie beyond every GPU's 48-bit (or 57-bit) virtual address space, so no real
// buffer has them and a device that reads one outside its graph faults. At instantiation:
//   - each allocation's lifetime runs from its mem_alloc node to its mem_free node (none: to the
//     end of the graph). An allocation made inside a conditional's body lives within that body:
//     it ends at its mem_free there, or at the body's end; its mem_free must be in the same body,
//     and a mem_free in a body frees only that body's memory (the CP may skip a body, or run a
//     WHILE body many times: a lifetime that crossed a body's edge would depend on the run). Each
//     WHILE iteration reuses the same addresses: iterations run one after another, and an
//     iteration's allocations end with it;
//   - two allocations of one pool (same GPU, same kind of memory) may share addresses only when
//     one's lifetime ends before the other's begins: its mem_free (or the end of a conditional
//     it was made in) is an ancestor of the other's mem_alloc in the graph (the flat graph's
//     edges, conditional bodies counted as their conditional), or the two are in different
//     bodies of one conditional (bodies run one after another on the conditional's queue, never
//     at once, and each body's allocations end with it);
//   - every node that uses an allocation (a pointer argument, a copy, fill, timestamp or
//     condition address inside its range) must come after its mem_alloc and before its mem_free
//     in that order — in the allocation's own body, counting a nested conditional as the node
//     there — else the graph is refused with the node named: a use after the free could read
//     memory a later allocation owns;
//   - layout: allocations in the order of their mem_alloc nodes, each at the lowest 256-byte
//     aligned offset that overlaps no allocation placed before it whose lifetime it shares
//     (first fit). The pool is the extent of that layout: for a graph whose allocations are
//     ordered (one strand: no when_all between them) that is the peak of the bytes live at once,
//     rounded to the alignment; concurrent branches can make it larger, never smaller.
//   - the pools are allocated once (one per GPU and kind), mapped to every GPU of the graph, and
//     each placeholder is rewritten to its pool address in the nodes' kernargs and packets.
//   - a child graph that allocates and is used more than once: each use's allocations are its own
//     (separate_child_uses, below), placed as above.
// Replays reuse the same addresses: no allocation per replay. Replays of one exec graph never run
// at the same time on the device (each waits for the previous one's end, graph/exec_graph.hpp),
// so one pool serves every replay slot.
// Thread safety: pure functions over values, except next_placeholder (atomic).
#pragma once

#include <aqueduct/core/result.hpp>
#include <aqueduct/core/units.hpp>
#include <aqueduct/graph/detail/plan.hpp>
#include <aqueduct/graph/task_graph.hpp>
#include <aqueduct/kfd/memory.hpp>
#include <aqueduct/runtime/detail/state.hpp>
#include <aqueduct/runtime/memory.hpp>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace aqueduct::graph::detail {

inline constexpr std::uint64_t placeholder_base = std::uint64_t{1} << 62;
inline constexpr std::uint64_t placeholder_limit = std::uint64_t{1} << 63;
inline constexpr std::uint64_t pool_alignment = 256;
[[nodiscard]] constexpr bool is_placeholder(std::uint64_t a) noexcept { return a >= placeholder_base && a < placeholder_limit; }
// A fresh placeholder range of `bytes`, 64 KiB aligned and followed by a 64 KiB gap (an address
// one past the end of an allocation is inside no other).
[[nodiscard]] inline std::uint64_t next_placeholder(std::uint64_t bytes) noexcept {
  static std::atomic<std::uint64_t> next{placeholder_base};
  return next.fetch_add((bytes + 0xFFFF) / 0x10000 * 0x10000 + 0x10000, std::memory_order_relaxed);
}

struct graph_allocation {
  std::uint32_t alloc = no_index;  // its mem_alloc node (flat)
  std::uint32_t free = no_index;   // its mem_free node (flat); none: live to the graph's end
  std::uint32_t pool = 0;
  std::uint64_t placeholder = 0, bytes = 0, offset = 0;
  std::vector<bool> after_end;  // per flat node: runs after the lifetime ended (its mem_free, its conditionals); empty: never
  // A second or later use of a child graph that allocates (separate_child_uses): the placeholder
  // capture handed out, which the nodes of `instance` (flat) mean when an update gives it again.
  std::uint64_t alias = 0;
  std::vector<bool> instance;  // empty: not such a use
  // Whether address `v` in flat node `f` is this allocation by its alias.
  [[nodiscard]] bool aliased_in(std::uint32_t f, std::uint64_t v) const noexcept {
    return f < instance.size() && instance[f] && v >= alias && v < alias + bytes;
  }
};
struct graph_pool {
  runtime::detail::agent_state* agent = nullptr;
  runtime::memory_kind kind = runtime::memory_kind::device;
  std::uint64_t bytes = 0;            // the layout's extent
  std::uint32_t extent_by = no_index;  // the allocation that reaches it
  kfd::buffer<runtime::detail::file_type> memory;
};
struct memory_plan {
  std::vector<graph_allocation> allocs;  // in the flat order of their mem_alloc nodes
  std::vector<graph_pool> pools;
  [[nodiscard]] const graph_allocation* find(std::uint64_t a) const noexcept {
    for (const graph_allocation& x : allocs)
      if (a >= x.placeholder && a < x.placeholder + x.bytes) return &x;
    return nullptr;
  }
  // The allocation address `a` means in flat node `f`: a later use of a child graph's own
  // allocation when f is in that use and `a` is the placeholder capture handed out.
  [[nodiscard]] const graph_allocation* find(std::uint64_t a, std::uint32_t f) const noexcept {
    for (const graph_allocation& x : allocs)
      if (x.aliased_in(f, a)) return &x;
    return find(a);
  }
  [[nodiscard]] std::uint64_t address(const graph_allocation& x) const noexcept {
    return pools[x.pool].memory.va().value + x.offset;
  }
};

// `from` and every node after it in the graph's order (a conditional's body counts as its owner).
[[nodiscard]] inline std::vector<bool> descendants(const plan& p, std::uint32_t from) {
  std::vector<bool> d(p.nodes.size(), false);
  d[from] = true;
  for (std::size_t k = from + 1; k < p.nodes.size(); ++k) {
    bool after = p.placed[k].owner != no_index && d[p.placed[k].owner];
    for (std::uint32_t x : p.nodes[k].deps) after = after || d[x];
    d[k] = after;
  }
  return d;
}
// `to` and every node before it.
[[nodiscard]] inline std::vector<bool> ancestors(const plan& p, std::uint32_t to) {
  std::vector<bool> a(p.nodes.size(), false);
  a[to] = true;
  for (std::size_t k = to + 1; k-- > 0;) {
    if (!a[k]) continue;
    for (std::uint32_t x : p.nodes[k].deps) a[x] = true;
    if (p.placed[k].owner != no_index) a[p.placed[k].owner] = true;
  }
  return a;
}

// The addresses node `x` uses that translate() rewrites: each is replaced by f(address).
template <class F>
void rewrite_addresses(node& x, F&& f) {
  if (x.kind == node_kind::kernel) {
    for (std::uint32_t off : x.pointers) {
      std::uint64_t v;
      std::memcpy(&v, x.args.data() + off, 8);
      v = f(v);
      std::memcpy(x.args.data() + off, &v, 8);
    }
    if (x.counts) x.counts.value = f(x.counts.value);
  } else if (x.kind == node_kind::copy || x.kind == node_kind::fill || x.kind == node_kind::timestamp ||
             x.kind == node_kind::conditional) {
    x.dst.value = f(x.dst.value);
    if (x.kind == node_kind::copy) x.src.value = f(x.src.value);
  }
}
// The same addresses, read only: f(address) for each.
template <class F>
void visit_addresses(const node& x, F&& f) {
  if (x.kind == node_kind::kernel) {
    for (std::uint32_t off : x.pointers) {
      std::uint64_t v;
      std::memcpy(&v, x.args.data() + off, 8);
      f(v);
    }
    if (x.counts) f(x.counts.value);
  } else if (x.kind == node_kind::copy || x.kind == node_kind::fill || x.kind == node_kind::timestamp ||
             x.kind == node_kind::conditional) {
    f(x.dst.value);
    if (x.kind == node_kind::copy) f(x.src.value);
  }
}

// Whether node `k` sits inside conditional `c`'s bodies (at any depth).
[[nodiscard]] inline bool nested_in(const plan& p, std::uint32_t k, std::uint32_t c) noexcept {
  for (std::uint32_t o = p.placed[k].owner; o != no_index; o = p.placed[o].owner)
    if (o == c) return true;
  return false;
}
// The nodes that run after conditional `c` has finished: its descendants, without `c` and its bodies.
[[nodiscard]] inline std::vector<bool> after_completion(const plan& p, std::uint32_t c) {
  std::vector<bool> d = descendants(p, c);
  d[c] = false;
  for (std::uint32_t k = c + 1; k < p.nodes.size(); ++k)
    if (nested_in(p, k, c)) d[k] = false;
  return d;
}
// `i`, or the conditional around it, that sits in the body (owner, branch) — the top level for
// owner no_index; no_index when `i` is not inside that body.
[[nodiscard]] inline std::uint32_t lift_to(const plan& p, std::uint32_t i, std::uint32_t owner, std::uint32_t branch) noexcept {
  for (std::uint32_t k = i;; k = p.placed[k].owner) {
    if (p.placed[k].owner == owner && (owner == no_index || p.placed[k].branch == branch)) return k;
    if (p.placed[k].owner == no_index) return no_index;
  }
}
// Whether `i` and `j` sit in different bodies of one conditional (which run one after the other).
[[nodiscard]] inline bool in_sibling_bodies(const plan& p, std::uint32_t i, std::uint32_t j) noexcept {
  for (std::uint32_t a = i; p.placed[a].owner != no_index; a = p.placed[a].owner)
    for (std::uint32_t b = j; p.placed[b].owner != no_index; b = p.placed[b].owner)
      if (p.placed[a].owner == p.placed[b].owner) return p.placed[a].branch != p.placed[b].branch;
  return false;
}

[[nodiscard]] inline std::string describe_alloc(const plan& p, const graph_allocation& a) {
  return p.nodes[a.alloc].describe() + " (" + std::to_string(a.bytes) + " bytes)";
}

// A child graph that allocates, used more than once (two child nodes of one graph, or one inside
// a child used twice): each use gets its own allocations. The first use keeps the placeholders
// capture handed out; each later one gets fresh placeholders in every node of that use (so the
// layout below gives it memory of its own, shared with the first only where their lifetimes do
// not overlap), remembered as aliases for updates. A node outside every use of such a child that
// holds one of its placeholders is refused: which use's memory it means cannot be told.
struct child_use_alias {
  std::uint64_t alias, placeholder, bytes;
  std::vector<bool> instance;
};
[[nodiscard]] inline std::vector<child_use_alias> separate_child_uses(plan& p) {
  const auto n = static_cast<std::uint32_t>(p.nodes.size());
  std::vector<child_use_alias> out;
  bool any = false;
  for (const node& x : p.nodes) any = any || x.kind == node_kind::mem_alloc;
  if (!any || p.scopes.size() < 2) return out;
  // Each flat node's scope; each scope's parent and whether it is a child graph's use.
  std::vector<std::uint32_t> scope_of(n, 0), parent(p.scopes.size(), no_index);
  std::vector<bool> child_use(p.scopes.size(), false);
  for (std::uint32_t s = 0; s < p.scopes.size(); ++s) {
    for (std::uint32_t f : p.scopes[s].to_flat)
      if (f != no_index) scope_of[f] = s;
    for (const inner_scope& in : p.scopes[s].inner) {
      parent[in.scope] = s;
      child_use[in.scope] = p.scopes[s].to_flat[in.node] == no_index;
    }
  }
  const auto use_of = [&](std::uint32_t f) {  // the innermost child-graph use around flat node f (0: none)
    std::uint32_t s = scope_of[f];
    while (s != 0 && !child_use[s]) s = parent[s];
    return s;
  };
  // The flat nodes inside a use (computed once per use: a child with several allocations asks
  // for the same use once per allocation).
  std::vector<std::vector<bool>> members_of(p.scopes.size());
  const auto members = [&](std::uint32_t use) -> const std::vector<bool>& {
    std::vector<bool>& in = members_of[use];
    if (!in.empty()) return in;
    in.assign(n, false);
    for (std::uint32_t f = 0; f < n; ++f)
      for (std::uint32_t s = scope_of[f]; s != no_index; s = parent[s])
        if (s == use) {
          in[f] = true;
          break;
        }
    return in;
  };
  struct first_use {
    std::uint64_t placeholder;
    std::uint32_t use, alloc;
  };
  std::vector<first_use> seen;
  for (std::uint32_t i = 0; i < n; ++i) {
    if (p.nodes[i].kind != node_kind::mem_alloc) continue;
    const std::uint64_t v = p.nodes[i].dst.value, bytes = p.nodes[i].bytes;
    const auto it = std::find_if(seen.begin(), seen.end(), [&](const first_use& u) { return u.placeholder == v; });
    if (it == seen.end()) {
      seen.push_back({v, use_of(i), i});
      continue;
    }
    const std::uint32_t use = use_of(i);
    if (use == 0 || use == it->use)
      throw_failure(failure(errc::invalid_argument, p.nodes[i].describe() + ": this allocation appears twice in the graph"));
    child_use_alias a{v, next_placeholder(bytes), bytes, members(use)};
    const auto move = [&](std::uint64_t x) { return x >= v && x < v + bytes ? a.placeholder + (x - v) : x; };
    for (std::uint32_t k = 0; k < n; ++k) {
      if (!a.instance[k]) continue;
      node& y = p.nodes[k];
      if (y.kind == node_kind::mem_alloc || y.kind == node_kind::mem_free) y.dst.value = move(y.dst.value);
      else rewrite_addresses(y, move);
    }
    out.push_back(std::move(a));
  }
  // Outside every use: the first use's placeholders would silently mean the first use's memory.
  // Per allocation that has later uses: the nodes of its first and later uses, then every other
  // node's addresses checked once.
  for (const first_use& f : seen) {
    std::vector<bool> covered;
    std::uint64_t bytes = 0;
    for (const child_use_alias& b : out) {
      if (b.alias != f.placeholder) continue;
      if (covered.empty()) covered = members(f.use);
      for (std::uint32_t k = 0; k < n; ++k)
        if (b.instance[k]) covered[k] = true;
      bytes = b.bytes;
    }
    if (covered.empty()) continue;  // used once
    for (std::uint32_t k = 0; k < n; ++k) {
      if (covered[k]) continue;
      visit_addresses(p.nodes[k], [&](std::uint64_t x) {
        if (x >= f.placeholder && x < f.placeholder + bytes)
          throw_failure(failure(errc::invalid_argument,
                                p.nodes[k].describe() + " uses memory that " + p.nodes[f.alloc].describe() +
                                    " allocates inside a child graph this graph uses more than once: which use's memory it means "
                                    "cannot be told (use that memory inside the child graph)"));
      });
    }
  }
  return out;
}

// Lifetimes, checks and layout (see the header comment); throws a failure naming the node.
// Separates the uses of a child graph that allocates first (separate_child_uses).
[[nodiscard]] inline memory_plan plan_memory(plan& p) {
  memory_plan m;
  std::vector<child_use_alias> aliases = separate_child_uses(p);
  const auto n = static_cast<std::uint32_t>(p.nodes.size());
  for (std::uint32_t i = 0; i < n; ++i) {
    const node& x = p.nodes[i];
    if (x.kind == node_kind::mem_alloc) {
      if (m.find(x.dst.value))
        throw_failure(failure(errc::invalid_argument, x.describe() + ": this allocation appears twice in the graph"));
      graph_allocation a;
      for (child_use_alias& c : aliases)  // each placeholder is one use's: its bitmap moves
        if (c.placeholder == x.dst.value) {
          a.alias = c.alias;
          a.instance = std::move(c.instance);
          break;
        }
      a.alloc = i;
      a.placeholder = x.dst.value;
      a.bytes = x.bytes;
      std::uint32_t pool = 0;
      while (pool < m.pools.size() && !(m.pools[pool].agent == x.pool_agent && m.pools[pool].kind == x.pool_kind)) ++pool;
      if (pool == m.pools.size()) m.pools.push_back(graph_pool{x.pool_agent, x.pool_kind, 0, no_index, {}});
      a.pool = pool;
      m.allocs.push_back(std::move(a));
    } else if (x.kind == node_kind::mem_free) {
      graph_allocation* a = nullptr;
      for (graph_allocation& y : m.allocs)
        if (y.placeholder == x.dst.value) a = &y;
      if (!a) throw_failure(failure(errc::invalid_argument, x.describe() + ": frees memory no memory alloc node of this graph allocated"));
      if (a->free != no_index)
        throw_failure(failure(errc::invalid_argument, x.describe() + ": " + describe_alloc(p, *a) + " was already freed by " +
                                                          p.nodes[a->free].describe()));
      const planned_node &at = p.placed[i], &from = p.placed[a->alloc];
      if (at.owner != from.owner || at.branch != from.branch)
        throw_failure(failure(errc::not_supported,
                              x.describe() + ": frees " + describe_alloc(p, *a) + " " +
                                  (from.owner == no_index ? std::string("made outside the conditional body it is in")
                                                          : "made in body " + std::to_string(from.branch) + " of " + p.nodes[from.owner].describe()) +
                                  "; memory made in a conditional's body is freed in that body (or at its end), and a body frees only "
                                  "its own (the device may skip the body, or run it many times)"));
      a->free = i;
    }
  }
  // Every use inside its allocation's lifetime (and none of another graph's placeholders).
  std::vector<std::vector<bool>> after_alloc(m.allocs.size()), before_free(m.allocs.size());
  for (std::size_t j = 0; j < m.allocs.size(); ++j) {
    graph_allocation& a = m.allocs[j];
    after_alloc[j] = descendants(p, a.alloc);
    if (a.free != no_index) {
      before_free[j] = ancestors(p, a.free);
      a.after_end = descendants(p, a.free);
    }
    for (std::uint32_t c = p.placed[a.alloc].owner; c != no_index; c = p.placed[c].owner) {  // made in a body: ends with it
      const std::vector<bool> after = after_completion(p, c);
      if (a.after_end.empty()) a.after_end.assign(n, false);
      for (std::uint32_t k = 0; k < n; ++k) a.after_end[k] = a.after_end[k] || after[k];
    }
  }
  for (std::uint32_t i = 0; i < n; ++i) {
    visit_addresses(p.nodes[i], [&](std::uint64_t v) {
      if (!is_placeholder(v)) return;
      const graph_allocation* a = m.find(v);
      if (!a)
        throw_failure(failure(errc::invalid_argument, p.nodes[i].describe() + " uses a graph allocation of another graph (or freed "
                                                                              "before this capture): its address is a placeholder no "
                                                                              "memory alloc node of this graph made"));
      const std::size_t j = static_cast<std::size_t>(a - m.allocs.data());
      const planned_node& made = p.placed[a->alloc];
      const std::uint32_t top = lift_to(p, i, made.owner, made.branch);  // the use, in the allocation's own body
      if (top == no_index)
        throw_failure(failure(errc::invalid_argument, p.nodes[i].describe() + " uses " + describe_alloc(p, *a) + ", which was made in body " +
                                                          std::to_string(made.branch) + " of " + p.nodes[made.owner].describe() +
                                                          " and lives only there (memory made in a conditional's body ends with the body)"));
      if (!after_alloc[j][top])
        throw_failure(failure(errc::invalid_argument, p.nodes[i].describe() + " uses " + describe_alloc(p, *a) +
                                                          " but is not ordered after its allocation"));
      if (a->free != no_index && !before_free[j][top])
        throw_failure(failure(errc::invalid_argument, p.nodes[i].describe() + " uses " + describe_alloc(p, *a) + " but is not ordered before " +
                                                          p.nodes[a->free].describe() +
                                                          " (it would run after the memory was freed, or concurrently with the free)"));
    });
  }
  // Layout: first fit against the placed allocations whose lifetimes overlap this one's.
  for (std::size_t j = 0; j < m.allocs.size(); ++j) {
    graph_allocation& a = m.allocs[j];
    std::vector<std::pair<std::uint64_t, std::uint64_t>> busy;
    for (std::size_t k = 0; k < j; ++k) {
      const graph_allocation& b = m.allocs[k];
      if (b.pool != a.pool) continue;
      const bool disjoint = (!b.after_end.empty() && b.after_end[a.alloc]) || (!a.after_end.empty() && a.after_end[b.alloc]) ||
                            in_sibling_bodies(p, a.alloc, b.alloc);
      if (!disjoint) busy.emplace_back(b.offset, b.offset + b.bytes);
    }
    std::sort(busy.begin(), busy.end());
    std::uint64_t at = 0;
    for (const auto& [lo, hi] : busy) {
      if (at + a.bytes <= lo) break;
      at = std::max(at, (hi + pool_alignment - 1) / pool_alignment * pool_alignment);
    }
    a.offset = at;
    graph_pool& pool = m.pools[a.pool];
    if (at + a.bytes > pool.bytes) {
      pool.bytes = at + a.bytes;
      pool.extent_by = static_cast<std::uint32_t>(j);
    }
  }
  return m;
}

// Allocates the pools and maps each to every GPU in `gpus` (the graph's agents).
[[nodiscard]] inline result<void> allocate_pools(const plan& p, memory_plan& m, const std::vector<runtime::detail::agent_state*>& gpus) {
  for (graph_pool& pool : m.pools) {
    runtime::detail::agent_state& a = *pool.agent;
    auto b = kfd::buffer<runtime::detail::file_type>::try_allocate(a.sys->ref(), *a.node, byte_count(pool.bytes),
                                                                   runtime::to_memory_use(pool.kind));
    if (!b)
      return failure(b.get_failure().code(),
                     "instantiate: the graph's memory pool of " + std::to_string(pool.bytes) + " bytes of " + runtime::to_string(pool.kind) +
                         " memory on gpu_id " + std::to_string(a.node->gpu_id) + " (its extent is reached by " +
                         describe_alloc(p, m.allocs[pool.extent_by]) + ") could not be allocated: " + std::string(b.get_failure().detail()),
                     b.get_failure().os_errno());
    pool.memory = std::move(*b);
    for (runtime::detail::agent_state* g : gpus)
      if (g != pool.agent) AQUEDUCT_TRY_VOID(pool.memory.try_map_to(*g->node));
  }
  return ok();
}

// Rewrites the placeholders in node `x` to pool addresses; false if one belongs to no
// allocation of `m` (the caller names the node).
// `f`: the flat node whose addresses these are (a placeholder capture handed out means, in a later
// use of a child graph, that use's allocation).
[[nodiscard]] inline bool translate(const memory_plan& m, node& x, std::uint32_t f) noexcept {
  bool known = true;
  rewrite_addresses(x, [&](std::uint64_t v) {
    if (!is_placeholder(v)) return v;
    if (const graph_allocation* a = m.find(v, f)) return m.address(*a) + (v - (a->aliased_in(f, v) ? a->alias : a->placeholder));
    known = false;
    return v;
  });
  return known;
}

}  // namespace aqueduct::graph::detail
