// graph memory inside conditional bodies (graph/detail/pool.hpp): an allocation made in an IF,
// IF-ELSE, SWITCH or WHILE body lives within that body. Results computed through such memory
// equal host arithmetic over many replays in ring-copy and indirect mode (PM4, and SDMA), with the
// device deciding each time; pool layouts are checked against offsets computed by hand (256-byte
// alignment, first fit): a body allocation overlapping an allocation live across its conditional
// gets its own range, the two bodies of an IF-ELSE share one, each WHILE iteration reuses the same
// addresses, a nested IF's allocation sits beside its WHILE body's; a use outside the body, a free
// in a body of memory made outside it, and a body's memory freed outside it are refused, named.
#include "kernels.hpp"

#include <aqueduct/graph/save.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <optional>
#include <random>
#include <string>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

namespace aq = aqueduct;
namespace g = aqueduct::graph;
namespace rt = aqueduct::runtime;
using namespace graph_test;

namespace {

const g::instantiate_options ring_copy{};
const g::instantiate_options indirect{.replay_slots = 4, .wait = {}, .trace = false, .mode = g::replay_mode::indirect};

constexpr std::uint32_t n = 1000;  // 4,000 bytes of u32: the next 256-byte aligned offset is 4,096

struct inputs {
  rt::buffer<std::uint32_t> x, out, out2;
  rt::buffer<std::uint64_t> word;
  explicit inputs(const rig& r)
      : x(r.host_buffer(n)), out(r.host_buffer(n)), out2(r.host_buffer(n)), word(r.gpu.alloc<std::uint64_t>(1, rt::memory_kind::host)) {
    for (std::uint32_t i = 0; i < n; ++i) x[i] = i * 2654435761u + 7;
  }
};

// The pool offset of allocation `alloc` (a node of body `branch` of conditional `cond`), from
// the pool's base `base`.
std::uint64_t offset_of(const g::exec_graph& e, g::node_id cond, std::uint32_t branch, g::node_id alloc, std::uint64_t base) {
  return e.try_memory_address(e.try_inner(cond, branch, alloc).value()).value().value - base;
}

}  // namespace

TEST_CASE("an IF body's allocation: results equal host arithmetic over replays, both modes; it gets its own range beside one live across the IF") {
  rig r;
  inputs in(r);
  g::node_id u_node{}, cond{}, t_node{}, k1{}, k2{};
  rt::device_ptr<std::uint32_t> t_ptr{};
  auto body = [&]() -> g::task<void> {
    auto t = co_await g::alloc<std::uint32_t>(r.gpu, n).label("t");
    t_node = t.node();
    t_ptr = t;
    k1 = co_await g::on(r.pm4).dispatch(r.axpb_k, rt::grid{n}, rt::block{64}, t, in.x, 3u, 4u, n);
    k2 = co_await g::on(r.pm4).dispatch(r.add_k, rt::grid{n}, rt::block{64}, in.out, t, 5u, n);
    co_await g::free(t);
  };
  auto prog = [&]() -> g::task<void> {
    auto u = co_await g::alloc<std::uint32_t>(r.gpu, n).label("u");  // live across the IF
    u_node = u.node();
    co_await g::on(r.pm4).dispatch(r.add_k, rt::grid{n}, rt::block{64}, u, in.x, 1u, n);
    cond = co_await g::if_then(g::on(r.pm4), in.word, body);
    co_await g::on(r.pm4).dispatch(r.add_k, rt::grid{n}, rt::block{64}, in.out2, u, 2u, n);
    co_await g::free(u);
  };
  const g::task_graph tg = g::capture(prog());
  for (const auto* opt : {&ring_copy, &indirect}) {
    CAPTURE(opt->mode == g::replay_mode::indirect);
    auto exec = g::instantiate(tg, *opt);
    // By hand: u [0, 4000); t is made while u lives, so it goes to the next aligned offset, 4,096.
    const std::uint64_t base = exec.try_memory_address(u_node).value().value;
    CHECK(offset_of(exec, cond, 0, t_node, base) == 4096);
    CHECK(exec.memory_pool_bytes() == 4096 + 4000);
    const g::node_id in_k1 = exec.try_inner(cond, 0, k1).value(), in_k2 = exec.try_inner(cond, 0, k2).value();
    std::mt19937 rng(opt == &indirect ? 2 : 1);
    std::uint32_t wrong = 0;
    for (int i = 0; i < 60; ++i) {
      const auto a = static_cast<std::uint32_t>(rng()), b = static_cast<std::uint32_t>(rng()), c = static_cast<std::uint32_t>(rng());
      const bool taken = rng() % 3 != 0;
      REQUIRE(exec.try_set_args(in_k1, t_ptr, in.x, a, b, n));  // the placeholder, rewritten to the pool
      REQUIRE(exec.try_set_args(in_k2, in.out, t_ptr, c, n));
      in.word[0] = taken ? std::uint64_t{1} << 40 : 0;  // a high bit alone: the CP compares 64 bits
      std::fill_n(in.out.data(), n, 0xDEADu);
      std::fill_n(in.out2.data(), n, 0u);
      exec.wait(exec.launch());
      for (std::uint32_t k = 0; k < n; ++k) {
        wrong += in.out[k] != (taken ? a * in.x[k] + b + c : 0xDEADu);
        wrong += in.out2[k] != in.x[k] + 1 + 2;  // u survived the IF (t did not overwrite it)
      }
    }
    CHECK(wrong == 0);
  }
  // Eagerly (the conditional runs as a one-node graph with its own pool).
  in.word[0] = 1;
  std::fill_n(in.out.data(), n, 0u);
  g::sync_wait(prog());
  std::uint32_t wrong = 0;
  for (std::uint32_t k = 0; k < n; ++k) wrong += in.out[k] != 3 * in.x[k] + 4 + 5;
  CHECK(wrong == 0);
}

TEST_CASE("IF-ELSE: the two bodies' allocations share one range (the bodies never overlap), and one made after the IF-ELSE takes it") {
  rig r;
  inputs in(r);
  g::node_id cond{}, t0_node{}, t1_node{}, w_node{};
  auto then_body = [&]() -> g::task<void> {
    auto t0 = co_await g::alloc<std::uint32_t>(r.gpu, n).label("t0");
    t0_node = t0.node();
    co_await g::on(r.pm4).dispatch(r.axpb_k, rt::grid{n}, rt::block{64}, t0, in.x, 3u, 1u, n);
    co_await g::on(r.pm4).dispatch(r.add_k, rt::grid{n}, rt::block{64}, in.out, t0, 0u, n);
  };
  auto else_body = [&]() -> g::task<void> {
    auto t1 = co_await g::alloc<std::uint32_t>(r.gpu, 2 * n).label("t1");  // 8,000 bytes; not freed: ends with the body
    t1_node = t1.node();
    co_await g::on(r.pm4).dispatch(r.add_k, rt::grid{n}, rt::block{64}, t1, in.x, 7u, n);
    co_await g::on(r.pm4).dispatch(r.add_k, rt::grid{n}, rt::block{64}, in.out, t1, 0u, n);
  };
  auto prog = [&]() -> g::task<void> {
    cond = co_await g::if_then_else(g::on(r.pm4), in.word, then_body, else_body);
    auto w = co_await g::alloc<std::uint32_t>(r.gpu, n).label("w");  // after the IF-ELSE: both bodies' memory has ended
    w_node = w.node();
    co_await g::on(r.pm4).dispatch(r.add_k, rt::grid{n}, rt::block{64}, w, in.x, 5u, n);
    co_await g::on(r.pm4).dispatch(r.add_k, rt::grid{n}, rt::block{64}, in.out2, w, 0u, n);
    co_await g::free(w);
  };
  const g::task_graph tg = g::capture(prog());
  for (const auto* opt : {&ring_copy, &indirect}) {
    CAPTURE(opt->mode == g::replay_mode::indirect);
    auto exec = g::instantiate(tg, *opt);
    const std::uint64_t base = exec.try_memory_address(exec.try_inner(cond, 0, t0_node).value()).value().value;
    CHECK(offset_of(exec, cond, 1, t1_node, base) == 0);
    CHECK(exec.try_memory_address(w_node).value().value - base == 0);  // takes their place
    CHECK(exec.memory_pool_bytes() == 8000);  // the larger of the two, not their sum
    std::uint32_t wrong = 0;
    for (int i = 0; i < 20; ++i) {
      const bool taken = i % 2 == 0;
      in.word[0] = taken;
      std::fill_n(in.out.data(), n, 0u);
      exec.wait(exec.launch());
      for (std::uint32_t k = 0; k < n; ++k) wrong += in.out[k] != (taken ? 3 * in.x[k] + 1 : in.x[k] + 7) || in.out2[k] != in.x[k] + 5;
    }
    CHECK(wrong == 0);
  }
}

TEST_CASE("WHILE: every iteration reuses the body's addresses; a nested IF's allocation sits beside the body's") {
  rig r;
  inputs in(r);
  auto acc = r.host_buffer(n), count = r.host_buffer(1);
  auto word2 = r.gpu.alloc<std::uint64_t>(1, rt::memory_kind::host);
  g::node_id loop{}, inner_if{}, s_node{}, t_node{}, v_node{};
  // One iteration: s = acc + 1, acc = s; IF word2 { t = acc, acc = t + 10 }; s = acc, acc = s
  // (s live across the IF); free s; v = acc, acc = v (v made after s's free: it takes s's place);
  // count += 1, word -= 1. So acc grows by 1, or 11 with word2 set, per iteration.
  auto inner = [&]() -> g::task<void> {
    auto t = co_await g::alloc<std::uint32_t>(r.gpu, n).label("t");
    t_node = t.node();
    co_await g::on(r.pm4).dispatch(r.add_k, rt::grid{n}, rt::block{64}, t, acc, 0u, n);
    co_await g::on(r.pm4).dispatch(r.add_k, rt::grid{n}, rt::block{64}, acc, t, 10u, n);
    co_await g::free(t);
  };
  auto body = [&]() -> g::task<void> {
    auto s = co_await g::alloc<std::uint32_t>(r.gpu, n).label("s");
    s_node = s.node();
    co_await g::on(r.pm4).dispatch(r.add_k, rt::grid{n}, rt::block{64}, s, acc, 1u, n);
    co_await g::on(r.pm4).dispatch(r.add_k, rt::grid{n}, rt::block{64}, acc, s, 0u, n);
    inner_if = co_await g::if_then(g::on(r.pm4), word2, inner);
    co_await g::on(r.pm4).dispatch(r.add_k, rt::grid{n}, rt::block{64}, s, acc, 0u, n);  // s is live across the IF
    co_await g::on(r.pm4).dispatch(r.add_k, rt::grid{n}, rt::block{64}, acc, s, 0u, n);
    co_await g::free(s);
    auto v = co_await g::alloc<std::uint32_t>(r.gpu, n).label("v");
    v_node = v.node();
    co_await g::on(r.pm4).dispatch(r.add_k, rt::grid{n}, rt::block{64}, v, acc, 0u, n);
    co_await g::on(r.pm4).dispatch(r.add_k, rt::grid{n}, rt::block{64}, acc, v, 0u, n);
    co_await g::on(r.pm4).dispatch(r.countdown_k, rt::grid{1}, rt::block{1}, in.word, count);
  };
  auto prog = [&]() -> g::task<void> { loop = co_await g::while_loop(g::on(r.pm4), in.word, body, {.max_iterations = 64}); };
  auto exec = g::instantiate(g::capture(prog()));  // ring copy: IF in WHILE is two IB levels
  // By hand: s [0, 4000); t inside the IF while s lives: 4,096; v after s's free: 0 again.
  const g::node_id t_id = exec.try_inner(exec.try_inner(loop, 0, inner_if).value(), 0, t_node).value();
  const std::uint64_t base = exec.try_memory_address(exec.try_inner(loop, 0, s_node).value()).value().value;
  CHECK(exec.try_memory_address(t_id).value().value - base == 4096);
  CHECK(offset_of(exec, loop, 0, v_node, base) == 0);
  CHECK(exec.memory_pool_bytes() == 4096 + 4000);
  std::mt19937 rng(5);
  std::uint32_t wrong = 0;
  for (int i = 0; i < 30; ++i) {
    const std::uint32_t k = rng() % 20, start = rng();
    const bool inner_taken = rng() % 2;
    std::fill_n(acc.data(), n, start);
    count[0] = 0;
    in.word[0] = k;
    word2[0] = inner_taken;
    exec.wait(exec.launch());
    wrong += count[0] != k;
    for (std::uint32_t e = 0; e < n; ++e) wrong += acc[e] != start + k * (1 + (inner_taken ? 10 : 0));
  }
  CHECK(wrong == 0);
}

TEST_CASE("an SDMA IF body's allocation (device memory): copies through it, both modes") {
  rig r;
  inputs in(r);
  auto prog = [&]() -> g::task<void> {
    co_await g::if_then(g::on(r.sdma), in.word, [&]() -> g::task<void> {
      auto t = co_await g::alloc<std::uint32_t>(r.gpu, n).label("t");
      co_await g::on(r.sdma).copy(t.va(), in.x.va(), 4ull * n);
      co_await g::on(r.sdma).copy(in.out.va(), t.va(), 4ull * n);
      co_await g::free(t);
    });
  };
  const g::task_graph tg = g::capture(prog());
  for (const auto* opt : {&ring_copy, &indirect}) {
    auto exec = g::instantiate(tg, *opt);
    CHECK(exec.memory_pool_bytes() == 4000);
    std::uint32_t wrong = 0;
    for (int i = 0; i < 6; ++i) {
      in.word[0] = i % 2;
      std::fill_n(in.out.data(), n, 0u);
      exec.wait(exec.launch());
      for (std::uint32_t k = 0; k < n; ++k) wrong += in.out[k] != (i % 2 ? in.x[k] : 0u);
    }
    CHECK(wrong == 0);
  }
}

TEST_CASE("refused, naming the node: a body's memory used after its conditional, freed outside its body, or a free in a body of memory made outside") {
  rig r;
  inputs in(r);
  rt::device_ptr<std::uint32_t> escaped{};
  std::optional<g::graph_buffer<std::uint32_t>> kept;
  auto leaks = [&]() -> g::task<void> {
    co_await g::if_then(g::on(r.pm4), in.word, [&]() -> g::task<void> {
      auto t = co_await g::alloc<std::uint32_t>(r.gpu, n).label("t");
      escaped = t;
      co_await g::on(r.pm4).dispatch(r.add_k, rt::grid{n}, rt::block{64}, t, in.x, 1u, n);
    });
    co_await g::on(r.pm4).dispatch(r.add_k, rt::grid{n}, rt::block{64}, in.out, escaped, 1u, n).label("reader");
  };
  auto e1 = g::exec_graph::try_instantiate(g::capture(leaks()));
  REQUIRE_FALSE(e1);
  CHECK(e1.get_failure() == aq::errc::invalid_argument);
  CHECK_MESSAGE(contains(e1.get_failure().describe(), "\"reader\""), e1.get_failure().describe());
  CHECK_MESSAGE(contains(e1.get_failure().describe(), "lives only there"), e1.get_failure().describe());

  auto freed_outside = [&]() -> g::task<void> {
    co_await g::if_then(g::on(r.pm4), in.word, [&]() -> g::task<void> {
      kept.emplace(co_await g::alloc<std::uint32_t>(r.gpu, n).label("kept"));
    });
    co_await g::free(*kept);
  };
  auto e2 = g::exec_graph::try_instantiate(g::capture(freed_outside()));
  REQUIRE_FALSE(e2);
  CHECK(e2.get_failure() == aq::errc::not_supported);
  CHECK_MESSAGE(contains(e2.get_failure().describe(), "made in body 0 of conditional IF"), e2.get_failure().describe());

  auto freed_inside = [&]() -> g::task<void> {
    auto u = co_await g::alloc<std::uint32_t>(r.gpu, n).label("u");
    co_await g::if_then(g::on(r.pm4), in.word, [&]() -> g::task<void> { co_await g::free(u); });
  };
  auto e3 = g::exec_graph::try_instantiate(g::capture(freed_inside()));
  REQUIRE_FALSE(e3);
  CHECK(e3.get_failure() == aq::errc::not_supported);
  CHECK_MESSAGE(contains(e3.get_failure().describe(), "made outside the conditional body"), e3.get_failure().describe());
}

TEST_CASE("a graph with memory in a conditional body saves and loads: the same layout and results in another system") {
  rig r1;
  inputs in1(r1);
  auto body = [&]() -> g::task<void> {
    auto t = co_await g::alloc<std::uint32_t>(r1.gpu, n).label("t");
    co_await g::on(r1.pm4).dispatch(r1.axpb_k, rt::grid{n}, rt::block{64}, t, in1.x, 3u, 4u, n);
    co_await g::on(r1.pm4).dispatch(r1.add_k, rt::grid{n}, rt::block{64}, in1.out, t, 5u, n);
  };
  auto prog = [&]() -> g::task<void> {
    auto u = co_await g::alloc<std::uint32_t>(r1.gpu, n).label("u");
    co_await g::on(r1.pm4).dispatch(r1.add_k, rt::grid{n}, rt::block{64}, u, in1.x, 1u, n);
    co_await g::if_then(g::on(r1.pm4), in1.word, body);
    co_await g::on(r1.pm4).dispatch(r1.add_k, rt::grid{n}, rt::block{64}, in1.out2, u, 2u, n);
  };
  g::task_graph tg = g::capture(prog());
  tg.name("x", in1.x);
  tg.name("out", in1.out);
  tg.name("out2", in1.out2);
  tg.name("word", in1.word);
  auto bytes = g::try_save(tg, {&r1.exe});
  REQUIRE_MESSAGE(bytes, bytes.get_failure().describe());
  rig r2;
  inputs in2(r2);
  for (std::uint32_t i = 0; i < n; ++i) in2.x[i] = i ^ 0xA5A5u;
  g::load_context ctx;
  ctx.queue(r2.pm4).code(r2.exe).buffer("x", in2.x).buffer("out", in2.out).buffer("out2", in2.out2).buffer("word", in2.word);
  auto loaded = g::try_load_graph(*bytes, ctx);
  REQUIRE_MESSAGE(loaded, loaded.get_failure().describe());
  auto exec = g::instantiate(*loaded);
  CHECK(exec.memory_pool_bytes() == 4096 + 4000);  // u, and t beside it (u lives across the IF)
  in2.word[0] = 1;
  exec.wait(exec.launch());
  std::uint32_t wrong = 0;
  for (std::uint32_t k = 0; k < n; ++k) wrong += in2.out[k] != 3 * in2.x[k] + 4 + 5 || in2.out2[k] != in2.x[k] + 3;
  CHECK(wrong == 0);
}

}  // namespace AQ_UNITY_ID
