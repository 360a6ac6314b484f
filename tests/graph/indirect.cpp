// graph: indirect-buffer replay mode (instantiate_options::mode = replay_mode::indirect). A PM4
// or SDMA segment's packets stay in graph-owned memory and a replay writes one INDIRECT_BUFFER
// packet per PM4 queue and one SDMA INDIRECT per SDMA queue, whatever the node count; results equal host arithmetic (and the ring-copy replay of
// the same graph) over random argument updates, an enable/disable update and a grid update; a
// fault inside the indirect buffer still names its node and what was not run; a replay makes no
// device-file call and no allocation. Expected values: host arithmetic on the same inputs (u32).
#include "counted_rig.hpp"
#include "counting_device.hpp"
#include "kernels.hpp"

#include "allocation_counter.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <random>
#include <string>
#include <vector>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

namespace aq = aqueduct;
namespace g = aqueduct::graph;
namespace rt = aqueduct::runtime;
using namespace graph_test;
using namespace std::chrono_literals;

namespace {

// x -(AQL)-> y = a*x + b -(SDMA)-> z = y -(PM4, k nodes)-> v[j] = v[j-1] + c[j] (v[0] = z).
struct chain {
  rig& r;
  std::uint32_t n, k;
  rt::buffer<std::uint32_t> x, y, z;
  std::vector<rt::buffer<std::uint32_t>> v;
  g::node_id scale{};
  std::vector<g::node_id> adds;
  chain(rig& rr, std::uint32_t count, std::uint32_t nodes)
      : r(rr), n(count), k(nodes), x(r.host_buffer(n)), y(r.host_buffer(n)), z(r.host_buffer(n)) {
    for (std::uint32_t i = 0; i < n; ++i) x[i] = i * 2654435761u;
    for (std::uint32_t j = 0; j < k; ++j) v.push_back(r.host_buffer(n));
  }
  g::task<void> run() {
    adds.clear();
    scale = co_await g::on(r.aql).dispatch(r.axpb_k, rt::grid{n}, rt::block{64}, y, x, 1u, 0u, n).label("scale");
    co_await g::on(r.sdma).copy(z, y).label("move");
    for (std::uint32_t j = 0; j < k; ++j)
      adds.push_back(co_await g::on(r.pm4).dispatch(r.add_k, rt::grid{n}, rt::block{64}, v[j], j ? v[j - 1] : z, 0u, n)
                         .label("add " + std::to_string(j)));
  }
  // The last buffer's expected element i when the scale is a*x + b and add j adds c[j].
  [[nodiscard]] std::uint32_t expect(std::uint32_t i, std::uint32_t a, std::uint32_t b, const std::vector<std::uint32_t>& c) const {
    std::uint32_t e = a * x[i] + b;
    for (std::uint32_t j = 0; j < k; ++j) e += c[j];
    return e;
  }
};

[[nodiscard]] std::size_t segment_of(const g::exec_graph& e, g::queue_type t) {
  for (std::size_t i = 0; i < e.state().segs.size(); ++i)
    if (e.state().segs[i].q.type == t) return i;
  return ~std::size_t{0};
}
[[nodiscard]] std::size_t pm4_segment(const g::exec_graph& e) { return segment_of(e, g::queue_type::pm4); }
}  // namespace

TEST_CASE("indirect mode: one INDIRECT_BUFFER per PM4 queue whatever the node count; ring copy grows with it") {
  rig r;
  for (std::uint32_t k : {1u, 40u}) {
    chain c(r, 64, k);
    const g::task_graph tg = g::capture(c.run());
    auto ib = g::instantiate(tg, {.replay_slots = 4, .wait = {}, .trace = false, .mode = g::replay_mode::indirect});
    auto ring = g::instantiate(tg);
    const std::size_t s = pm4_segment(ib);
    REQUIRE(s < ib.segments());
    // INDIRECT_BUFFER is 4 dwords (spec packets.md; abi::pm4::indirect_buffer::packet).
    CHECK(ib.replay_sizes()[s] == sizeof(aq::abi::pm4::indirect_buffer::packet) / 4);
    CHECK(ring.replay_sizes()[s] >= 10 * k);  // ring copy: every dispatch's packets, each replay
    // The SDMA copy's segment: one INDIRECT, 6 dwords (spec packets.md §3.4: 00000004, ib lo, hi, ndw, 0, 0).
    const std::size_t d = segment_of(ib, g::queue_type::sdma);
    REQUIRE(d < ib.segments());
    CHECK(ib.replay_sizes()[d] == 6);
    ib.wait(ib.launch());
    for (std::uint32_t i = 0; i < c.n; ++i) REQUIRE(c.v.back()[i] == c.x[i]);
  }
}

TEST_CASE("indirect mode: 2,000 replays with random argument updates, a disabled node and a new grid match host arithmetic") {
  rig r;
  chain c(r, 128, 12);
  auto exec = g::instantiate(g::capture(c.run()), {.replay_slots = 3, .wait = {}, .trace = false, .mode = g::replay_mode::indirect});
  std::mt19937 rng(777);
  std::vector<std::uint32_t> add(c.k);
  int wrong = 0;
  for (int rep = 0; rep < 2000; ++rep) {
    const auto a = static_cast<std::uint32_t>(rng()), b = static_cast<std::uint32_t>(rng());
    REQUIRE(exec.try_set_args(c.scale, c.y, c.x, a, b, c.n));
    const std::uint32_t j = rng() % c.k;  // one add node's constant changes per replay
    add[j] = static_cast<std::uint32_t>(rng());
    REQUIRE(exec.try_set_args(c.adds[j], c.v[j], j ? c.v[j - 1] : c.z, add[j], c.n));
    exec.wait(exec.launch());
    for (std::uint32_t i = 0; i < c.n; ++i) wrong += c.v.back()[i] != c.expect(i, a, b, add);
  }
  CHECK(wrong == 0);

  // Disable the last add: its output keeps the previous replay's values; the one before it moves on.
  const std::vector<std::uint32_t> before(c.v.back().data(), c.v.back().data() + c.n);
  REQUIRE(exec.try_set_args(c.scale, c.y, c.x, 5u, 6u, c.n));
  REQUIRE(exec.try_set_enabled(c.adds.back(), false));
  exec.wait(exec.launch());
  CHECK(std::vector<std::uint32_t>(c.v.back().data(), c.v.back().data() + c.n) == before);
  std::uint32_t e3 = 5 * c.x[3] + 6;
  for (std::uint32_t j = 0; j + 1 < c.k; ++j) e3 += add[j];
  CHECK(c.v[c.k - 2][3] == e3);
  // Enabled again with half the grid: the first half moves on, the second half stays.
  REQUIRE(exec.try_set_enabled(c.adds.back(), true));
  REQUIRE(exec.try_set_grid(c.adds.back(), rt::grid{c.n / 2}, rt::block{64}));
  exec.wait(exec.launch());
  CHECK(c.v.back()[3] == e3 + add.back());
  CHECK(c.v.back()[c.n - 1] == before[c.n - 1]);
}

TEST_CASE("indirect mode: a fault inside the indirect buffer names the node and what was not run") {
  rig r;
  auto a = r.host_buffer(4), b = r.host_buffer(4);
  auto prog = [&]() -> g::task<void> {
    co_await g::on(r.pm4).dispatch(r.store_k, rt::grid{1}, rt::block{1}, a, 0u, 1u).label("first");
    co_await g::on(r.pm4).dispatch(r.store_k, rt::grid{1}, rt::block{1}, rt::device_ptr<std::uint32_t>::at(aq::gpu_va(0x10)), 0u, 2u)
        .label("bad store");
    co_await g::on(r.pm4).dispatch(r.store_k, rt::grid{1}, rt::block{1}, a, 1u, 3u).label("third");
    co_await g::on(r.sdma).copy(b.va(), a.va(), 16).label("after");
  };
  auto exec = g::instantiate(g::capture(prog()), {.replay_slots = 4, .wait = {}, .trace = false, .mode = g::replay_mode::indirect});
  auto res = exec.try_wait(exec.launch(), 10s);
  REQUIRE_FALSE(res);
  const std::string d(res.detail());
  CHECK(res.get_failure() == aq::errc::device_fault);
  CHECK_MESSAGE(contains(d, "kernel 'store' \"bad store\" at indirect.cpp:"), d);
  CHECK_MESSAGE(contains(d, "PM4 queue"), d);
  CHECK_MESSAGE(contains(d, "not run (they depend on it): kernel 'store' \"third\""), d);
  CHECK(a[0] == 1);
  CHECK(a[1] == 0);
  CHECK(b[0] == 0);
}

// The host work of a launch (exec_state::launch_items: kernarg blocks written, segments, signals
// reset, dwords submitted) must not grow with the node count in indirect mode: a 1-node and a
// 2,000-node PM4 chain launch the same items, each replay; an update adds its one kernarg block to
// the next launch of each slot, nothing more. Ring copy, for contrast, submits every packet.
TEST_CASE("indirect mode: a launch goes through the same items for 1 and 2,000 nodes; an update adds one block") {
  rig r;
  constexpr std::uint32_t n = 64;
  auto v = r.host_buffer(n);
  for (std::uint32_t i = 0; i < n; ++i) v[i] = i;
  std::vector<std::uint64_t> items, ring_items;
  for (std::uint32_t k : {1u, 2000u}) {
    g::node_id first{};
    auto prog = [&]() -> g::task<void> {
      for (std::uint32_t j = 0; j < k; ++j) {
        const g::node_id id = co_await g::on(r.pm4).dispatch(r.add_k, rt::grid{n}, rt::block{64}, v, v, 1u, n);
        if (j == 0) first = id;
      }
    };
    const g::task_graph tg = g::capture(prog());
    auto ib = g::instantiate(tg, {.replay_slots = 4, .wait = aq::sync::wait_policy::spin(), .trace = false, .mode = g::replay_mode::indirect});
    std::uint64_t launched = 0;
    for (int i = 0; i < 8; ++i) {  // every slot twice
      ib.wait(ib.launch());
      ++launched;
      if (i > 0) CHECK(ib.state().launch_items == items.back());
      if (i == 0) items.push_back(ib.state().launch_items);
    }
    // One argument update: the next launch of each of the 4 slots writes that node's block, once.
    REQUIRE(ib.try_set_args(first, v, v, 2u, n));
    for (int i = 0; i < 8; ++i) {
      ib.wait(ib.launch());
      ++launched;
      CHECK(ib.state().launch_items == items.back() + (i < 4 ? 1 : 0));
    }
    // Each launch added k (the first node then 2 after its update: k + 1 per replay after it).
    for (std::uint32_t i = 0; i < n; ++i) REQUIRE(v[i] == i + 8 * k + 8 * (k + 1));
    auto ring = g::instantiate(tg, {.replay_slots = 4, .wait = aq::sync::wait_policy::spin()});
    ring.wait(ring.launch());
    ring_items.push_back(ring.state().launch_items);
    for (std::uint32_t i = 0; i < n; ++i) v[i] = i;
  }
  CHECK(items[0] == items[1]);
  CHECK(ring_items[1] >= ring_items[0] + 10 * 1999);  // ring copy: at least 10 dwords per dispatch
}

TEST_CASE("indirect mode: a replay makes no device-file call and no allocation") {
  counted_rig cr;
  const auto& gpu = cr.gpu;
  auto& exe = cr.exe;
  auto& counts = cr.counts;
  auto add_k = exe.get_kernel<std::uint32_t*, const std::uint32_t*, std::uint32_t, std::uint32_t>("add");
  auto pm4 = gpu.make_queue(aq::pm4);
  constexpr std::uint32_t n = 64;
  auto x = gpu.alloc<std::uint32_t>(n, rt::memory_kind::host), y = gpu.alloc<std::uint32_t>(n, rt::memory_kind::host),
       z = gpu.alloc<std::uint32_t>(n, rt::memory_kind::host);
  for (std::uint32_t i = 0; i < n; ++i) x[i] = i;
  g::node_id k1{};
  auto prog = [&]() -> g::task<void> {
    k1 = co_await g::on(pm4).dispatch(add_k, rt::grid{n}, rt::block{64}, y, x, 1u, n);
    co_await g::on(pm4).dispatch(add_k, rt::grid{n}, rt::block{64}, z, y, 2u, n);
  };
  auto exec = g::instantiate(g::capture(prog()),
                             {.replay_slots = 4, .wait = aq::sync::wait_policy::spin(), .trace = false, .mode = g::replay_mode::indirect});
  for (int i = 0; i < 5; ++i) exec.wait(exec.launch());
  const std::int64_t calls_before = counts->total_calls.load();
  aq_test::allocations = 0;
  bool ok = true;
  {
    aq_test::counting_allocations scope;
    for (std::uint32_t i = 0; i < 300; ++i) {
      ok &= exec.try_set_args(k1, y, x, i, n).has_value();
      auto t = exec.try_launch();
      ok &= t.has_value() && exec.try_wait(*t).has_value();
    }
  }
  CHECK(ok);
  CHECK(aq_test::allocations.load() == 0);
  CHECK(counts->total_calls.load() - calls_before == 0);
  CHECK(z[5] == 5 + 299 + 2);
}

TEST_CASE("indirect mode: an SDMA segment of 1 or 300 copies replays as one INDIRECT, results equal host copies") {
  rig r;
  for (std::uint32_t k : {1u, 300u}) {
    constexpr std::uint32_t n = 16;
    std::vector<rt::buffer<std::uint32_t>> v;
    for (std::uint32_t j = 0; j <= k; ++j) v.push_back(r.host_buffer(n));
    auto prog = [&]() -> g::task<void> {
      for (std::uint32_t j = 0; j < k; ++j) co_await g::on(r.sdma).copy(v[j + 1], v[j]);
    };
    const g::task_graph tg = g::capture(prog());
    auto ib = g::instantiate(tg, {.replay_slots = 3, .wait = {}, .trace = false, .mode = g::replay_mode::indirect});
    auto ring = g::instantiate(tg);
    const std::size_t d = segment_of(ib, g::queue_type::sdma);
    REQUIRE(d < ib.segments());
    CHECK(ib.replay_sizes()[d] == 6);                  // SDMA INDIRECT: 6 dwords (spec packets.md §3.4)
    CHECK(ring.replay_sizes()[d] >= 7 * std::size_t{k});  // COPY_LINEAR: 7 dwords per copy, each replay
    int wrong = 0;
    for (std::uint32_t rep = 0; rep < 5; ++rep) {
      for (std::uint32_t i = 0; i < n; ++i) v[0][i] = rep * 1000 + i * 7;
      ib.wait(ib.launch());
      for (std::uint32_t i = 0; i < n; ++i) wrong += v[k][i] != rep * 1000 + i * 7;
    }
    CHECK(wrong == 0);
  }
}

TEST_CASE("indirect mode: a fault inside an SDMA indirect buffer names the copy and what was not run") {
  rig r;
  auto a = r.host_buffer(4, 9), b = r.host_buffer(4), c = r.host_buffer(4);
  auto prog = [&]() -> g::task<void> {
    co_await g::on(r.sdma).copy(b.va(), a.va(), 16).label("first");
    co_await g::on(r.sdma).copy(c.va(), aq::gpu_va(0x10), 16).label("bad copy");
    co_await g::on(r.sdma).copy(c.va(), a.va(), 16).label("third");
  };
  auto exec = g::instantiate(g::capture(prog()), {.replay_slots = 4, .wait = {}, .trace = false, .mode = g::replay_mode::indirect});
  auto res = exec.try_wait(exec.launch(), 10s);
  REQUIRE_FALSE(res);
  const std::string d(res.detail());
  CHECK(res.get_failure() == aq::errc::device_fault);
  CHECK_MESSAGE(contains(d, "\"bad copy\" at indirect.cpp:"), d);
  CHECK_MESSAGE(contains(d, "SDMA queue"), d);
  CHECK_MESSAGE(contains(d, "not run (they depend on it): copy \"third\""), d);
  CHECK(b[0] == 9);
  CHECK(c[0] == 0);
}

TEST_CASE("indirect buffers: whole packets, each buffer within the limit and on its granule") {
  rt::command_buffer cmds;
  for (std::size_t len : {3u, 5u, 7u, 2u, 6u}) std::fill_n(cmds.append(len).begin(), len, 1u);
  using chunk = g::detail::ib_chunk;
  const auto same = [](const std::vector<chunk>& got, const std::vector<chunk>& want) {
    bool eq = got.size() == want.size();
    for (std::size_t i = 0; eq && i < got.size(); ++i)
      eq = got[i].offset == want[i].offset && got[i].first == want[i].first && got[i].dwords == want[i].dwords && got[i].padded == want[i].padded;
    return eq;
  };
  // PM4 (granule 1), at most 10 dwords: 3+5 | 7+2 | 6, back to back.
  CHECK(same(g::detail::ib_chunks(cmds, 10, 1), {{0, 0, 8, 8}, {8, 8, 9, 9}, {17, 17, 6, 6}}));
  // SDMA (granule 8), at most 16 dwords: 3+5+7 = 15 (padded 16) | 2+6 = 8, each on an 8-dword boundary.
  CHECK(same(g::detail::ib_chunks(cmds, 16, 8), {{0, 0, 15, 16}, {16, 15, 8, 8}}));
  // Everything fits: one buffer.
  CHECK(same(g::detail::ib_chunks(cmds, 1000, 8), {{0, 0, 23, 24}}));
}

TEST_CASE("sdma_queue::try_submit_indirect refuses a buffer the engine cannot run, naming the rule") {
  rig r;
  auto buf = r.gpu.alloc<std::uint32_t>(64, rt::memory_kind::host);
  const rt::indirect_buffer_ref misaligned[] = {{buf.va() + aq::byte_count(4), 8}};
  const rt::indirect_buffer_ref odd[] = {{buf.va(), 12}};
  for (auto refs : {std::span<const rt::indirect_buffer_ref>(misaligned), std::span<const rt::indirect_buffer_ref>(odd)}) {
    auto t = r.sdma.try_submit_indirect(refs);
    REQUIRE_FALSE(t);
    CHECK(t.get_failure() == aq::errc::invalid_argument);
    CHECK_MESSAGE(contains(std::string(t.detail()), "32-byte aligned and the size a multiple of 8 dwords"), t.detail());
  }
  // A valid one runs (NOPs only) and completes.
  std::fill_n(buf.data(), 64, 0u);
  const rt::indirect_buffer_ref good[] = {{buf.va(), 16}};
  auto t = r.sdma.try_submit_indirect(good);
  REQUIRE(t);
  CHECK(r.sdma.try_wait(*t, 10s));
}

}  // namespace AQ_UNITY_ID
