// graph: indirect-buffer replay mode (instantiate_options::mode = replay_mode::indirect). A PM4
// segment's packets stay in graph-owned memory and a replay writes one INDIRECT_BUFFER packet per
// PM4 queue, whatever the node count; results equal host arithmetic (and the ring-copy replay of
// the same graph) over random argument updates, an enable/disable update and a grid update; a
// fault inside the indirect buffer still names its node and what was not run; a replay makes no
// device-file call and no allocation. Expected values: host arithmetic on the same inputs (u32).
#include "counting_device.hpp"
#include "kernels.hpp"

#include "allocation_counter.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <random>
#include <string>
#include <vector>

namespace aq = aqueduct;
namespace g = aqueduct::graph;
namespace rt = aqueduct::runtime;
using namespace graph_test;
using namespace std::chrono_literals;

namespace {
bool contains(const std::string& s, const std::string& w) { return s.find(w) != std::string::npos; }

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

[[nodiscard]] std::size_t pm4_segment(const g::exec_graph& e) {
  for (std::size_t i = 0; i < e.state().segs.size(); ++i)
    if (e.state().segs[i].q.type == g::queue_type::pm4) return i;
  return ~std::size_t{0};
}
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

TEST_CASE("indirect mode: a replay makes no device-file call and no allocation") {
  auto dev = aq::emu::device::create(aq::emu::machine_config::parse("rx7900xtx"));
  auto counts = std::make_shared<device_counts>();
  auto sys = rt::system::try_adopt(counting_device<aq::emu::device>(dev, counts), &dev);
  REQUIRE(sys);
  const auto& gpu = sys->default_agent();
  auto exe = aq::emu::load(gpu, kernels());
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
