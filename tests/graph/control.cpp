// graph: device-evaluated control flow (graph/control.hpp) on a PM4 queue of the emulated MEC.
// The condition word is written by a kernel of the same graph (put64) just before the conditional,
// so only the device can know it: the host writes the opposite value before each replay. Bodies
// store known constants or count their iterations; expected values are the C++ meaning of
// if / if-else / switch / while over the word (nothing computed by the code under test). Each
// case runs in ring-copy and indirect-buffer replay mode, and eagerly (sync_wait of the same task).
#include "kernels.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

namespace aq = aqueduct;
namespace g = aqueduct::graph;
namespace rt = aqueduct::runtime;
using namespace graph_test;

namespace {

struct fixture {
  rig r;
  rt::buffer<std::uint64_t> word = r.gpu.alloc<std::uint64_t>(1, rt::memory_kind::host);
  rt::buffer<std::uint64_t> word2 = r.gpu.alloc<std::uint64_t>(1, rt::memory_kind::host);
  rt::buffer<std::uint32_t> out = r.host_buffer(4);
  rt::buffer<std::uint32_t> count = r.host_buffer(1);

  g::task<void> store(std::uint32_t index, std::uint32_t value) {
    co_await g::on(r.pm4).dispatch(r.store_k, rt::grid{1}, rt::block{1}, out, index, value);
  }
  g::task<void> step() { co_await g::on(r.pm4).dispatch(r.countdown_k, rt::grid{1}, rt::block{1}, word, count); }
  // WHILE body with an IF inside (nesting): count down, and store 9 into out[1] when word2 != 0.
  g::task<void> step_and_maybe_store() {
    co_await step();
    co_await g::if_then(g::on(r.pm4), word2, [this] { return store(1, 9); });
  }
  g::task<void> set(std::uint64_t v) {
    co_await g::on(r.pm4).dispatch(r.put64_k, rt::grid{1}, rt::block{1}, word, v).label("decide");
  }

  g::task<void> if_prog(std::uint64_t v) {
    co_await set(v);
    co_await g::if_then(g::on(r.pm4), word, [this] { return store(0, 7); }).label("if");
  }
  g::task<void> if_else_prog(std::uint64_t v) {
    co_await set(v);
    co_await g::if_then_else(g::on(r.pm4), word, [this] { return store(0, 1); }, [this] { return store(0, 2); });
  }
  g::task<void> switch_prog(std::uint64_t v) {
    co_await set(v);
    std::vector<g::body_fn> cases;  // (GCC 12 rejects a braced list of lambdas inside a co_await)
    for (std::uint32_t k = 0; k < 3; ++k) cases.emplace_back([this, k] { return store(0, 10 + k); });
    co_await g::switch_on(g::on(r.pm4), word, std::move(cases));
  }
  g::task<void> while_prog(std::uint64_t k, std::uint32_t max) {
    co_await set(k);
    co_await g::while_loop(g::on(r.pm4), word, [this] { return step(); }, {.max_iterations = max}).label("loop");
  }
  g::task<void> nested_prog(std::uint64_t k) {
    co_await set(k);
    co_await g::while_loop(g::on(r.pm4), word, [this] { return step_and_maybe_store(); }, {.max_iterations = 16});
  }
  void reset(std::uint64_t host_word) {
    word[0] = host_word;  // the opposite of what the device decides: must not be what is read
    for (std::uint32_t i = 0; i < 4; ++i) out[i] = 0;
    count[0] = 0;
  }
};

const g::instantiate_options ring{};
const g::instantiate_options indirect{.replay_slots = 4, .wait = {}, .trace = false, .mode = g::replay_mode::indirect};

// Captures `prog(v)` for each v, replays it in both modes and runs it eagerly; `check(v)` after each.
template <class Prog, class Check>
void each_way(fixture& f, const std::vector<std::uint64_t>& values, Prog prog, Check check) {
  for (const std::uint64_t v : values) {
    const g::task_graph tg = g::capture(prog(v));
    for (const auto* o : {&ring, &indirect}) {
      CAPTURE(v);
      CAPTURE(o == &indirect);
      auto e = g::instantiate(tg, *o);
      for (int rep = 0; rep < 3; ++rep) {  // replays reuse the prebuilt slots
        f.reset(v ? 0 : 1);
        e.wait(e.launch());
        check(v);
      }
    }
    f.reset(v ? 0 : 1);
    g::sync_wait(prog(v));  // eagerly: a one-node graph replayed once
    check(v);
  }
}
}  // namespace

TEST_CASE("IF: the body runs exactly when the word the device wrote is not 0") {
  fixture f;
  each_way(f, {0, 1, 0xFFFFFFFF00000000ull}, [&](std::uint64_t v) { return f.if_prog(v); },
           [&](std::uint64_t v) { CHECK(f.out[0] == (v != 0 ? 7u : 0u)); });
}

TEST_CASE("IF-ELSE: then when not 0, else when 0") {
  fixture f;
  each_way(f, {0, 1, 5}, [&](std::uint64_t v) { return f.if_else_prog(v); },
           [&](std::uint64_t v) { CHECK(f.out[0] == (v != 0 ? 1u : 2u)); });
}

TEST_CASE("SWITCH: case k when the word is k; no case past the last") {
  fixture f;
  each_way(f, {0, 1, 2, 3, ~std::uint64_t{0}}, [&](std::uint64_t v) { return f.switch_prog(v); },
           [&](std::uint64_t v) { CHECK(f.out[0] == (v < 3 ? 10u + static_cast<std::uint32_t>(v) : 0u)); });
}

TEST_CASE("WHILE: the body runs while the word is not 0, the device deciding each iteration") {
  fixture f;
  each_way(f, {0, 1, 7, 128}, [&](std::uint64_t k) { return f.while_prog(k, 128); },
           [&](std::uint64_t k) {
             CHECK(f.count[0] == k);
             CHECK(f.word[0] == 0);
           });
}

TEST_CASE("WHILE past max_iterations: the wait fails naming the loop; the body ran max_iterations times") {
  fixture f;
  const g::task_graph tg = g::capture(f.while_prog(200, 128));
  for (const auto* o : {&ring, &indirect}) {
    auto e = g::instantiate(tg, *o);
    f.reset(0);
    auto r = e.try_wait(e.launch());
    REQUIRE_FALSE(r);
    CHECK(r.get_failure() == aq::errc::cancelled);
    const std::string d(r.get_failure().detail());
    CHECK(contains(d, "WHILE"));
    CHECK(contains(d, "\"loop\""));
    CHECK(contains(d, "control.cpp"));
    CHECK(contains(d, "128"));
    CHECK(f.count[0] == 128);
    CHECK(f.word[0] == 200 - 128);
    // The overflow word is per replay: the next replay, its loop ending in bounds, succeeds.
    REQUIRE(e.try_set_args(tg.find("decide"), f.word, std::uint64_t{3}));
    f.reset(0);
    e.wait(e.launch());
    CHECK(f.count[0] == 3);
  }
}

TEST_CASE("nested: an IF inside a WHILE (ring copy); indirect mode refuses the third IB level by name") {
  fixture f;
  for (const std::uint64_t flag : {0ull, 1ull}) {
    const g::task_graph tg = g::capture(f.nested_prog(5));
    auto e = g::instantiate(tg, ring);
    f.reset(0);
    f.word2[0] = flag;
    e.wait(e.launch());
    CHECK(f.count[0] == 5);
    CHECK(f.out[1] == (flag ? 9u : 0u));
  }
  auto bad = g::try_instantiate(g::capture(f.nested_prog(5)), indirect);
  REQUIRE_FALSE(bad);
  CHECK(bad.get_failure() == aq::errc::not_supported);
  CHECK(contains(std::string(bad.get_failure().detail()), "nested 2 deep"));
}

TEST_CASE("a body node on another queue, or a misaligned word, is refused with the place named") {
  fixture f;
  auto other_queue = [&]() -> g::task<void> {
    co_await g::if_then(g::on(f.r.pm4), f.word, [&f]() -> g::task<void> {
      co_await g::on(f.r.aql).dispatch(f.r.store_k, rt::grid{1}, rt::block{1}, f.out, 0u, 1u);
    });
  };
  auto r = g::try_instantiate(g::capture(other_queue()));
  REQUIRE_FALSE(r);
  CHECK(r.get_failure() == aq::errc::not_supported);
  CHECK(contains(std::string(r.get_failure().detail()), "inside the body of conditional IF"));
  CHECK(contains(std::string(r.get_failure().detail()), "AQL queue"));

  auto misaligned = [&]() -> g::task<void> {
    co_await g::if_then(g::on(f.r.pm4), f.word.va() + aq::byte_count(4), [&f] { return f.store(0, 1); });
  };
  try {
    (void)g::capture(misaligned());
    FAIL("a misaligned condition word was accepted");
  } catch (const aq::error& e) {
    CHECK(e.get_failure() == aq::errc::invalid_argument);
    CHECK(contains(std::string(e.get_failure().detail()), "8-byte aligned"));
    CHECK(contains(std::string(e.get_failure().detail()), "control.cpp"));
  }
}

TEST_CASE("updates reach nodes inside bodies and child graphs through try_inner; bad paths are named") {
  fixture f;
  g::node_id cond{}, then_store{}, else_store{};
  // Each body is its own capture: the store's id is that body's node 0 (returned by the dispatch).
  auto then_body = [&]() -> g::task<void> {
    then_store = co_await g::on(f.r.pm4).dispatch(f.r.store_k, rt::grid{1}, rt::block{1}, f.out, 0u, 1u);
  };
  auto else_body = [&]() -> g::task<void> {
    else_store = co_await g::on(f.r.pm4).dispatch(f.r.store_k, rt::grid{1}, rt::block{1}, f.out, 0u, 2u);
  };
  auto prog = [&]() -> g::task<void> {
    co_await f.set(1);  // the device decides "then"
    cond = co_await g::if_then_else(g::on(f.r.pm4), f.word, then_body, else_body);
  };
  const g::task_graph tg = g::capture(prog());
  REQUIRE(cond);
  REQUIRE(then_store.value == 0);
  for (const auto* o : {&ring, &indirect}) {
    auto exec = g::instantiate(tg, *o);
    const auto t = exec.try_inner(cond, 0, then_store);
    REQUIRE(t);
    f.reset(0);
    exec.wait(exec.launch());
    CHECK(f.out[0] == 1);
    // New arguments for the body's store: index 2, value 55.
    REQUIRE(exec.try_set_args(*t, f.out, 2u, 55u));
    f.reset(0);
    exec.wait(exec.launch());
    CHECK(f.out[0] == 0);
    CHECK(f.out[2] == 55);
    // A new grid re-lowers the body (4 work-items store the same word: same result), then disabled.
    REQUIRE(exec.try_set_grid(*t, rt::grid{4}, rt::block{4}));
    f.reset(0);
    exec.wait(exec.launch());
    CHECK(f.out[2] == 55);
    REQUIRE(exec.try_set_enabled(*t, false));
    f.reset(0);
    exec.wait(exec.launch());
    CHECK(f.out[2] == 0);
    CHECK(f.out[0] == 0);
    // The else body is reachable too; its store did not run (the device chose "then").
    const auto e = exec.try_inner(cond, 1, else_store);
    REQUIRE(e);
    REQUIRE(exec.try_set_args(*e, f.out, 3u, 66u));
    f.reset(0);
    exec.wait(exec.launch());
    CHECK(f.out[3] == 0);
    // Bad paths: no body 2, no node 1 in body 0, a body node's id used as a top-level id.
    const auto no_body = exec.try_inner(cond, 2, then_store);
    REQUIRE_FALSE(no_body);
    CHECK_MESSAGE(contains(std::string(no_body.detail()), "has no body 2"), no_body.detail());
    const auto no_node = exec.try_inner(cond, 0, g::node_id{1});
    REQUIRE_FALSE(no_node);
    CHECK_MESSAGE(contains(std::string(no_node.detail()), "is not a node of body 0"), no_node.detail());
    const auto not_top = exec.try_inner(g::node_id{0}, 0, then_store);  // node 0 is the put64, no body
    REQUIRE_FALSE(not_top);
    const auto wrong_kind = exec.try_set_copy(*t, f.out.va(), f.out.va(), 4);
    REQUIRE_FALSE(wrong_kind);
    CHECK_MESSAGE(contains(std::string(wrong_kind.detail()), "is not a copy node"), wrong_kind.detail());
  }
}

TEST_CASE("a child graph's node is updated through try_inner; the same child used twice has two scopes") {
  fixture f;
  g::node_id inner{};
  auto child_prog = [&]() -> g::task<void> {
    inner = co_await g::on(f.r.pm4).dispatch(f.r.store_k, rt::grid{1}, rt::block{1}, f.out, 0u, 5u);
  };
  const g::task_graph child = g::capture(child_prog());
  g::node_id first{}, second{};
  auto prog = [&]() -> g::task<void> {
    first = co_await g::child(child);
    second = co_await g::child(child);
  };
  auto exec = g::instantiate(g::capture(prog()));
  REQUIRE(first);
  REQUIRE(second);
  const auto a = exec.try_inner(first, 0, inner), b = exec.try_inner(second, 0, inner);
  REQUIRE(a);
  REQUIRE(b);
  CHECK_FALSE(*a == *b);
  REQUIRE(exec.try_set_args(*a, f.out, 1u, 11u));
  REQUIRE(exec.try_set_args(*b, f.out, 2u, 22u));
  f.reset(0);
  exec.wait(exec.launch());
  CHECK(f.out[0] == 0);
  CHECK(f.out[1] == 11);
  CHECK(f.out[2] == 22);
}

// An indirect kernel node (PM4 DISPATCH_INDIRECT, runtime/pm4_queue.hpp dispatch_indirect): a
// kernel of the graph writes the workgroup count just before it, so only the device knows how much
// work follows. add(out, in, 7, n) in workgroups of 64: exactly count * 64 elements become
// in[i] + 7, the rest keep 0xFFFFFFFF. The count changes per replay through the producer's
// arguments only (no re-instantiation), in both replay modes, a zero count included.
TEST_CASE("an indirect kernel node: the workgroup count a kernel before it wrote decides the work, eagerly and at every replay") {
  rig r;
  constexpr std::uint32_t n = 1024;
  auto in = r.host_buffer(n);
  for (std::uint32_t i = 0; i < n; ++i) in[i] = 3 * i + 1;
  auto out = r.host_buffer(n, ~0u);
  auto counts = r.host_buffer(3, 1);
  auto prog = [&](std::uint32_t groups) -> g::task<void> {
    co_await g::on(r.pm4).dispatch(r.store_k, rt::grid{1}, rt::block{1}, counts, 0u, groups).label("decide");
    co_await g::on(r.pm4).dispatch_indirect(r.add_k, counts.va(), rt::block{64}, out, in, 7u, n).label("work");
  };
  const auto reset = [&] {
    std::fill_n(out.data(), n, ~0u);
    counts[0] = 1;  // not what the device writes
  };
  const auto wrong = [&](std::uint32_t groups) {
    std::uint32_t bad = 0;
    for (std::uint32_t i = 0; i < n; ++i) bad += i < groups * 64 ? out[i] != in[i] + 7 : out[i] != ~0u;
    return bad;
  };
  reset();
  g::sync_wait(prog(3));  // eagerly
  CHECK(wrong(3) == 0);

  const g::task_graph tg = g::capture(prog(2));
  const g::node_id decide = tg.find("decide"), work = tg.find("work");
  CHECK(tg[work].counts == counts.va());
  CHECK(contains(tg[work].describe(), "kernel (indirect) 'add'"));
  CHECK(contains(tg.to_dot(), "kernel (indirect) add"));
  for (const auto* o : {&ring, &indirect}) {
    CAPTURE(o == &indirect);
    auto e = g::instantiate(tg, *o);
    for (std::uint32_t groups : {2u, 5u, 0u, 16u, 1u}) {
      CAPTURE(groups);
      REQUIRE(e.try_set_args(decide, counts, 0u, groups));
      reset();
      e.wait(e.launch());
      CHECK(wrong(groups) == 0);
    }
    auto s = e.try_set_grid(work, rt::grid{64}, rt::block{64});
    REQUIRE_FALSE(s.has_value());
    CHECK(contains(s.detail(), "indirect kernel's grid"));
  }
}

}  // namespace AQ_UNITY_ID
