// graph memory (graph/memory.hpp, graph/detail/pool.hpp): co_await alloc / free eagerly and
// captured. Results computed through graph allocations equal host arithmetic in eager runs and in
// replays (ring copy and indirect mode); allocations whose lifetimes do not overlap get the same
// pool address, overlapping ones disjoint ranges (pool sizes computed by hand); two replays in
// flight do not corrupt each other's graph memory; a use outside an allocation's lifetime, a
// placeholder of another graph and a pool larger than the GPU's VRAM are refused with the node
// named. (The no-allocation, no-system-call replay test in replay.cpp runs a graph with memory
// nodes.)
#include "kernels.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <random>
#include <string>
#include <thread>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

namespace aq = aqueduct;
namespace g = aqueduct::graph;
namespace rt = aqueduct::runtime;
using namespace graph_test;
using namespace std::chrono_literals;

namespace {

constexpr std::uint64_t mib = 1u << 20;

// x -> (AQL) t1 = a*x + b -> (PM4) t2 = t1 + c -> free t1 -> (SDMA) out = t2 -> free t2;
// t1 and t2 are graph memory (device memory: the host sees them only through `out`).
struct through_pool {
  rig& r;
  std::uint32_t n;
  rt::buffer<std::uint32_t> x, out;
  g::node_id k1{}, k2{};
  rt::device_ptr<std::uint32_t> t1_ptr{}, t2_ptr{};  // the captured placeholders, for updates
  bool t1_placeholder = false;
  through_pool(rig& rr, std::uint32_t count) : r(rr), n(count), x(r.host_buffer(n)), out(r.host_buffer(n)) {
    for (std::uint32_t i = 0; i < n; ++i) x[i] = i * 2654435761u + 7;
  }
  g::task<void> run(std::uint32_t a, std::uint32_t b, std::uint32_t c) {
    auto t1 = co_await g::alloc<std::uint32_t>(r.gpu, n).label("t1");
    t1_ptr = t1;
    t1_placeholder = g::detail::is_placeholder(t1.address());
    k1 = co_await g::on(r.aql).dispatch(r.axpb_k, rt::grid{n}, rt::block{64}, t1, x, a, b, n);
    auto t2 = co_await g::alloc<std::uint32_t>(r.gpu, n).label("t2");
    t2_ptr = t2;
    k2 = co_await g::on(r.pm4).dispatch(r.add_k, rt::grid{n}, rt::block{64}, t2, t1, c, n);
    co_await g::free(t1);
    co_await g::on(r.sdma).copy(out.va(), t2.va(), 4ull * n);
    co_await g::free(t2);
  }
  std::uint32_t wrong(std::uint32_t a, std::uint32_t b, std::uint32_t c) const {
    std::uint32_t bad = 0;
    for (std::uint32_t i = 0; i < n; ++i) bad += out[i] != a * x[i] + b + c;
    return bad;
  }
};

}  // namespace

TEST_CASE("graph memory: results through it equal host arithmetic, eagerly and in replays (ring copy and indirect)") {
  rig r;
  through_pool p(r, 300);
  // Eagerly: real memory, allocated and freed by the run.
  aq::sync_wait(p.run(3, 4, 5));
  CHECK_FALSE(p.t1_placeholder);
  CHECK(p.wrong(3, 4, 5) == 0);
  // Captured: placeholders, nothing run.
  std::fill_n(p.out.data(), p.n, 0u);
  auto graph = g::capture(p.run(6, 7, 8));
  CHECK(p.t1_placeholder);
  CHECK(p.out[0] == 0);
  std::size_t mem_nodes = 0;
  for (const auto& x : graph.nodes()) mem_nodes += x.kind == g::node_kind::mem_alloc || x.kind == g::node_kind::mem_free;
  CHECK(mem_nodes == 4);
  for (const auto mode : {g::replay_mode::ring_copy, g::replay_mode::indirect}) {
    CAPTURE(static_cast<int>(mode));
    auto exec = g::instantiate(graph, {.mode = mode});
    // t1 and t2 overlap (t2 is made while t1 lives): two 1,200-byte ranges, the second at the next
    // 256-byte boundary.
    CHECK(exec.memory_pool_bytes() == 1280 + 1200);
    std::fill_n(p.out.data(), p.n, 0u);
    exec.wait(exec.launch());
    CHECK(p.wrong(6, 7, 8) == 0);
    std::mt19937 rng(42);
    std::uint32_t bad = 0;
    for (int i = 0; i < 200; ++i) {
      const std::uint32_t a = rng(), b = rng(), c = rng();
      REQUIRE(exec.try_set_args(p.k1, p.t1_ptr, p.x, a, b, p.n));  // a placeholder again: rewritten to the pool
      REQUIRE(exec.try_set_args(p.k2, p.t2_ptr, p.t1_ptr, c, p.n));
      std::fill_n(p.out.data(), p.n, 0u);
      exec.wait(exec.launch());
      bad += p.wrong(a, b, c);
    }
    CHECK(bad == 0);
  }
}

TEST_CASE("graph memory: lifetimes that do not overlap share addresses, overlapping ones do not") {
  rig r;
  auto out = r.host_buffer(2);
  SUBCASE("one after the other: the same address, a pool of one allocation") {
    g::node_id ia{}, ib{};
    auto prog = [&]() -> g::task<void> {
      auto a = co_await g::alloc<std::uint32_t>(r.gpu, mib / 4).label("a");
      ia = a.node();
      co_await g::on(r.aql).dispatch(r.store_k, rt::grid{1}, rt::block{1}, a, 0u, 11u);
      co_await g::on(r.sdma).copy(out.va(), a.va(), 4);
      co_await g::free(a);
      auto b = co_await g::alloc<std::uint32_t>(r.gpu, mib / 4).label("b");
      ib = b.node();
      co_await g::on(r.aql).dispatch(r.store_k, rt::grid{1}, rt::block{1}, b, 0u, 22u);
      co_await g::on(r.sdma).copy(out.va() + aq::byte_count(4), b.va(), 4);
      co_await g::free(b);
    };
    auto exec = g::instantiate(g::capture(prog()));
    const auto va = exec.try_memory_address(ia), vb = exec.try_memory_address(ib);
    REQUIRE(va);
    REQUIRE(vb);
    CHECK(va->value == vb->value);
    CHECK(exec.memory_pool_bytes() == mib);
    exec.wait(exec.launch());
    CHECK(out[0] == 11);  // read before b reused the memory
    CHECK(out[1] == 22);
  }
  SUBCASE("overlapping: disjoint ranges; a third that outlives only the first takes its place") {
    g::node_id ia{}, ib{}, ic{};
    auto prog = [&]() -> g::task<void> {
      auto a = co_await g::alloc<std::uint32_t>(r.gpu, mib / 4).label("a");
      auto b = co_await g::alloc<std::uint32_t>(r.gpu, mib / 8).label("b");
      ia = a.node();
      ib = b.node();
      co_await g::on(r.aql).dispatch(r.store_k, rt::grid{1}, rt::block{1}, a, 0u, 1u);
      co_await g::on(r.aql).dispatch(r.store_k, rt::grid{1}, rt::block{1}, b, 0u, 2u);
      co_await g::free(a);
      auto c = co_await g::alloc<std::uint32_t>(r.gpu, mib / 16).label("c");
      ic = c.node();
      co_await g::on(r.aql).dispatch(r.store_k, rt::grid{1}, rt::block{1}, c, 0u, 3u);
      co_await g::on(r.sdma).copy(out.va(), b.va(), 4);  // b must still hold 2: c did not land on it
      co_await g::on(r.sdma).copy(out.va() + aq::byte_count(4), c.va(), 4);
      co_await g::free(b);
      co_await g::free(c);
    };
    auto exec = g::instantiate(g::capture(prog()));
    const std::uint64_t a = exec.try_memory_address(ia)->value, b = exec.try_memory_address(ib)->value,
                        c = exec.try_memory_address(ic)->value;
    CHECK((b >= a + mib || a >= b + mib / 2));  // a [a, a + 1 MiB) and b [b, b + 512 KiB) are disjoint
    CHECK(c == a);                              // first fit: where a was
    CHECK(exec.memory_pool_bytes() == mib + mib / 2);
    exec.wait(exec.launch());
    CHECK(out[0] == 2);
    CHECK(out[1] == 3);
  }
  SUBCASE("concurrent branches (when_all) never share, even when each frees its own") {
    g::node_id ia{}, ib{};
    auto branch = [&](std::uint32_t i, g::node_id& id) -> g::task<void> {
      auto m = co_await g::alloc<std::uint32_t>(r.gpu, mib / 4);
      id = m.node();
      co_await g::on(r.aql).dispatch(r.store_k, rt::grid{1}, rt::block{1}, m, 0u, 40u + i);
      co_await g::on(r.sdma).copy(out.va() + aq::byte_count(4 * i), m.va(), 4);
      co_await g::free(m);
    };
    auto prog = [&]() -> g::task<void> { co_await g::when_all(branch(0, ia), branch(1, ib)); };
    auto exec = g::instantiate(g::capture(prog()));
    const std::uint64_t a = exec.try_memory_address(ia)->value, b = exec.try_memory_address(ib)->value;
    CHECK((b >= a + mib || a >= b + mib));
    CHECK(exec.memory_pool_bytes() == 2 * mib);
    exec.wait(exec.launch());
    CHECK(out[0] == 40);
    CHECK(out[1] == 41);
  }
}

TEST_CASE("graph memory: two replays in flight do not corrupt each other") {
  // Replay 1 writes t = a*x + b, then its PM4 node waits at a gate the host holds closed; replay 2
  // (other a, other output) is launched meanwhile. It shares the pool, so its first node must not
  // run before replay 1 has read t (the exec graph orders its replays on the device).
  rig r;
  constexpr std::uint32_t n = 64;
  auto x = r.host_buffer(n), out1 = r.host_buffer(n), out2 = r.host_buffer(n);
  for (std::uint32_t i = 0; i < n; ++i) x[i] = 3 * i + 1;
  auto gate = r.gpu.make_signal(1);
  g::node_id k1{}, k2{};
  rt::device_ptr<std::uint32_t> tp{};
  auto prog = [&]() -> g::task<void> {
    auto t = co_await g::alloc<std::uint32_t>(r.gpu, n).label("t");
    tp = t;
    k1 = co_await g::on(r.aql).dispatch(r.axpb_k, rt::grid{n}, rt::block{64}, t, x, 5u, 1u, n);
    co_await g::until(gate, aq::abi::signal_condition::eq, 0);
    k2 = co_await g::on(r.pm4).dispatch(r.add_k, rt::grid{n}, rt::block{64}, out1, t, 0u, n);
    co_await g::free(t);
  };
  auto exec = g::instantiate(g::capture(prog()));
  const auto first = exec.launch();
  std::this_thread::sleep_for(20ms);
  REQUIRE_FALSE(exec.done(first));
  REQUIRE(exec.try_set_args(k1, tp, x, 9u, 2u, n));
  REQUIRE(exec.try_set_args(k2, out2, tp, 0u, n));
  const auto second = exec.launch();
  std::this_thread::sleep_for(30ms);  // room for replay 2's first node, were it not ordered
  gate.store(0);
  exec.wait(second);
  std::uint32_t bad1 = 0, bad2 = 0;
  for (std::uint32_t i = 0; i < n; ++i) {
    bad1 += out1[i] != 5 * x[i] + 1;
    bad2 += out2[i] != 9 * x[i] + 2;
  }
  CHECK(bad1 == 0);
  CHECK(bad2 == 0);
}

// A child graph that allocates, used twice: each use gets memory of its own (graph/detail/pool.hpp,
// separate_child_uses) — shared with the other use only where their lifetimes do not overlap —
// and an update of a use's node that gives the placeholder capture handed out means that use's
// memory. Pool sizes by hand: 300 u32 = 1,200 bytes, the second range at the next 256-byte
// boundary (1,280).
TEST_CASE("graph memory: a child graph that allocates, used twice, gives each use its own memory") {
  rig r;
  constexpr std::uint32_t n = 300;
  auto x = r.host_buffer(n), out = r.host_buffer(n), out1 = r.host_buffer(n);
  for (std::uint32_t i = 0; i < n; ++i) x[i] = i * 2654435761u + 7;
  rt::device_ptr<std::uint32_t> t_ptr{};
  g::node_id k1{}, k2{};
  // t = a*x + b (AQL); out = t + c (PM4); t freed at the child's end or living to the graph's.
  auto child_prog = [&](bool free_it) -> g::task<void> {
    auto t = co_await g::alloc<std::uint32_t>(r.gpu, n).label("t");
    t_ptr = t;
    k1 = co_await g::on(r.aql).dispatch(r.axpb_k, rt::grid{n}, rt::block{64}, t, x, 3u, 4u, n);
    k2 = co_await g::on(r.pm4).dispatch(r.add_k, rt::grid{n}, rt::block{64}, out, t, 5u, n);
    if (free_it) co_await g::free(t);
  };
  const auto wrong = [&](const rt::buffer<std::uint32_t>& o, std::uint32_t a, std::uint32_t b, std::uint32_t c) {
    std::uint32_t bad = 0;
    for (std::uint32_t i = 0; i < n; ++i) bad += o[i] != a * x[i] + b + c;
    return bad;
  };
  SUBCASE("one after the other, freed: the uses share the range; at once: each has its own") {
    const g::task_graph child = g::capture(child_prog(true));
    auto seq = [&]() -> g::task<void> {
      co_await g::child(child);
      co_await g::child(child);
    };
    auto use = [&]() -> g::task<void> { co_await g::child(child); };
    auto both = [&]() -> g::task<void> { co_await g::when_all(use(), use()); };
    auto e1 = g::instantiate(g::capture(seq()));
    CHECK(e1.memory_pool_bytes() == 1200);
    e1.wait(e1.launch());
    CHECK(wrong(out, 3, 4, 5) == 0);
    auto e2 = g::instantiate(g::capture(both()));
    CHECK(e2.memory_pool_bytes() == 1280 + 1200);
    std::fill_n(out.data(), n, 0u);
    e2.wait(e2.launch());
    CHECK(wrong(out, 3, 4, 5) == 0);
  }
  SUBCASE("three uses: one after the other share one range; at once, three ranges; an outsider still refused") {
    const g::task_graph child = g::capture(child_prog(true));
    auto use = [&]() -> g::task<void> { co_await g::child(child); };
    auto seq = [&]() -> g::task<void> {
      for (int i = 0; i < 3; ++i) co_await g::child(child);
    };
    auto all = [&]() -> g::task<void> { co_await g::when_all(use(), use(), use()); };
    auto e1 = g::instantiate(g::capture(seq()));
    CHECK(e1.memory_pool_bytes() == 1200);
    e1.wait(e1.launch());
    CHECK(wrong(out, 3, 4, 5) == 0);
    auto e2 = g::instantiate(g::capture(all()));
    CHECK(e2.memory_pool_bytes() == 1280 + 1280 + 1200);  // 1,200 bytes each at 256-byte alignment
    std::fill_n(out.data(), n, 0u);
    e2.wait(e2.launch());
    CHECK(wrong(out, 3, 4, 5) == 0);
    const g::task_graph live = g::capture(child_prog(false));
    auto outsider = [&]() -> g::task<void> {
      for (int i = 0; i < 3; ++i) co_await g::child(live);
      co_await g::on(r.aql).dispatch(r.store_k, rt::grid{1}, rt::block{1}, t_ptr, 0u, 1u).label("outsider3");
    };
    auto e3 = g::try_instantiate(g::capture(outsider()));
    REQUIRE_FALSE(e3);
    CHECK_MESSAGE(contains(std::string(e3.get_failure().detail()), "outsider3"), e3.get_failure().detail());
  }
  SUBCASE("living to the graph's end: an update of the second use's node through the captured placeholder reaches its memory") {
    const g::task_graph child = g::capture(child_prog(false));
    g::node_id u1{}, u2{};
    auto seq = [&]() -> g::task<void> {
      u1 = co_await g::child(child);
      u2 = co_await g::child(child);
    };
    auto e = g::instantiate(g::capture(seq()));
    CHECK(e.memory_pool_bytes() == 1280 + 1200);  // both live to the end: disjoint
    e.wait(e.launch());
    CHECK(wrong(out, 3, 4, 5) == 0);  // the second use's, run last
    const auto a1 = e.try_inner(u1, 0, k2), b1 = e.try_inner(u2, 0, k1);
    REQUIRE(a1);
    REQUIRE(b1);
    // The first use's result into out1; the second use's first kernel given new constants through
    // t_ptr. Were t_ptr the first use's memory there, the second use's own t would keep the last
    // launch's values (3x + 4) and out would be stale.
    REQUIRE(e.try_set_args(*a1, out1, t_ptr, 9u, n));
    REQUIRE(e.try_set_args(*b1, t_ptr, x, 6u, 7u, n));
    e.wait(e.launch());
    CHECK(wrong(out1, 3, 4, 9) == 0);
    CHECK(wrong(out, 6, 7, 5) == 0);
  }
  SUBCASE("a node outside both uses that holds the child's placeholder is refused, named") {
    const g::task_graph child = g::capture(child_prog(false));
    auto prog = [&]() -> g::task<void> {
      co_await g::child(child);
      co_await g::child(child);
      co_await g::on(r.aql).dispatch(r.store_k, rt::grid{1}, rt::block{1}, t_ptr, 0u, 1u).label("outsider");
    };
    auto e = g::try_instantiate(g::capture(prog()));
    REQUIRE_FALSE(e);
    CHECK(e.get_failure() == aq::errc::invalid_argument);
    const std::string d(e.get_failure().detail());
    CHECK_MESSAGE(contains(d, "outsider"), d);
    CHECK_MESSAGE(contains(d, "more than once"), d);
  }
}

TEST_CASE("graph memory: uses outside the lifetime, other graphs' placeholders and too large a pool are refused, named") {
  rig r;
  auto out = r.host_buffer(4);
  SUBCASE("a use after the free") {
    auto prog = [&]() -> g::task<void> {
      auto m = co_await g::alloc<std::uint32_t>(r.gpu, 4).label("scratch");
      rt::device_ptr<std::uint32_t> p = m;
      co_await g::on(r.aql).dispatch(r.store_k, rt::grid{1}, rt::block{1}, m, 0u, 1u);
      co_await g::free(m);
      co_await g::on(r.aql).dispatch(r.store_k, rt::grid{1}, rt::block{1}, p, 1u, 2u).label("late store");
    };
    auto e = g::try_instantiate(g::capture(prog()));
    REQUIRE_FALSE(e);
    CHECK(e.get_failure() == aq::errc::invalid_argument);
    const std::string d(e.get_failure().detail());
    CHECK(contains(d, "late store"));
    CHECK(contains(d, "scratch"));
    CHECK(contains(d, "not ordered before"));
  }
  SUBCASE("a placeholder of another graph") {
    rt::device_ptr<std::uint32_t> foreign{};
    auto other = [&]() -> g::task<void> {
      auto m = co_await g::alloc<std::uint32_t>(r.gpu, 4);
      foreign = m;
      co_await g::on(r.aql).dispatch(r.store_k, rt::grid{1}, rt::block{1}, m, 0u, 1u);
    };
    auto g1 = g::capture(other());
    auto prog = [&]() -> g::task<void> {
      co_await g::on(r.aql).dispatch(r.store_k, rt::grid{1}, rt::block{1}, foreign, 0u, 2u).label("stray");
    };
    auto e = g::try_instantiate(g::capture(prog()));
    REQUIRE_FALSE(e);
    CHECK(contains(e.get_failure().detail(), "stray"));
    CHECK(contains(e.get_failure().detail(), "another graph"));
    (void)g1;
    // Eagerly the placeholder is no memory: the device refuses it (a memory violation at it).
    rig r2;  // a fresh device: the fault stops its queue
    bool threw = false;
    try {
      auto eager = [&]() -> g::task<void> {
        co_await g::on(r2.aql).dispatch(r2.store_k, rt::grid{1}, rt::block{1}, foreign, 0u, 2u);
      };
      aq::sync_wait(eager());
    } catch (const aq::error& x) {
      threw = true;
      const std::string d(x.get_failure().detail());
      MESSAGE(d);
      CHECK(contains(d, "4000000000"));  // the fault names the placeholder address (2^62 + ...)
    }
    CHECK(threw);
  }
  SUBCASE("a pool larger than the GPU's memory (rx7900xtx: 24 GiB of VRAM)") {
    auto prog = [&]() -> g::task<void> {
      auto a = co_await g::alloc<std::byte>(r.gpu, 13ull << 30).label("first half");
      auto b = co_await g::alloc<std::byte>(r.gpu, 13ull << 30).label("second half");
      co_await g::on(r.aql).dispatch(r.store_k, rt::grid{1}, rt::block{1}, rt::device_ptr<std::uint32_t>::at(a.va()), 0u, 1u);
      co_await g::on(r.aql).dispatch(r.store_k, rt::grid{1}, rt::block{1}, rt::device_ptr<std::uint32_t>::at(b.va()), 0u, 1u);
    };
    auto e = g::try_instantiate(g::capture(prog()));
    REQUIRE_FALSE(e);
    const std::string d(e.get_failure().detail());
    CHECK(contains(d, "memory pool"));
    CHECK(contains(d, "second half"));  // the allocation whose end the pool would have to reach
    CHECK(contains(d, std::to_string((13ull << 30) + (13ull << 30))));
  }
}

}  // namespace AQ_UNITY_ID
