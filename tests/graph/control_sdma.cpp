// graph: device-evaluated control flow on an SDMA queue (graph/control.hpp, lowered by
// graph/detail/lower_sdma.hpp into COND_EXE). The condition word is written by an SDMA copy of the
// same graph just before the conditional, so only the engine knows it: the host writes the
// opposite value into the word before each replay. Bodies fill known constants; a WHILE body
// shifts a chain of values into the word (word <- chain[0], chain <- chain[1..]), so the number of
// iterations shows in what is left of the chain. Expected values are the C++ meaning of
// if / if-else / switch / while over the 64-bit word, as for PM4 (tests/graph/control.cpp). Each
// case runs in ring-copy and indirect-buffer replay mode, and eagerly.
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

constexpr std::uint32_t chain_len = 64;

struct fixture {
  rig r;
  rt::buffer<std::uint64_t> word = r.gpu.alloc<std::uint64_t>(1, rt::memory_kind::host);
  rt::buffer<std::uint64_t> decision = r.gpu.alloc<std::uint64_t>(1, rt::memory_kind::host);
  rt::buffer<std::uint64_t> flag2 = r.gpu.alloc<std::uint64_t>(1, rt::memory_kind::host);
  rt::buffer<std::uint32_t> out = r.host_buffer(4);
  rt::buffer<std::uint64_t> chain = r.gpu.alloc<std::uint64_t>(chain_len, rt::memory_kind::host);
  rt::buffer<std::uint64_t> tmp = r.gpu.alloc<std::uint64_t>(chain_len, rt::memory_kind::host);

  g::task<void> fill(std::uint32_t index, std::uint32_t value) {
    co_await g::on(r.sdma).fill(out.va() + aq::byte_count(4 * index), value, 4);
  }
  // The device decides: the word <- decision (set by the host to v before capture).
  g::task<void> set() { co_await g::on(r.sdma).copy(word, decision).label("decide"); }
  // word <- chain[0]; chain[0..] <- chain[1..] (through tmp: the copies do not overlap).
  g::task<void> shift() {
    co_await g::on(r.sdma).copy(word.va(), chain.va(), 8);
    co_await g::on(r.sdma).copy(tmp.va(), chain.va() + aq::byte_count(8), 8 * (chain_len - 1));
    co_await g::on(r.sdma).copy(chain.va(), tmp.va(), 8 * (chain_len - 1));
  }
  g::task<void> shift_and_maybe_fill() {
    co_await shift();
    co_await g::if_then(g::on(r.sdma), flag2, [this] { return fill(1, 9); });
  }

  g::task<void> if_prog() {
    co_await set();
    co_await g::if_then(g::on(r.sdma), word, [this] { return fill(0, 7); }).label("if");
  }
  g::task<void> if_else_prog() {
    co_await set();
    co_await g::if_then_else(g::on(r.sdma), word, [this] { return fill(0, 1); }, [this] { return fill(0, 2); });
  }
  g::task<void> switch_prog() {
    co_await set();
    std::vector<g::body_fn> cases;
    for (std::uint32_t k = 0; k < 3; ++k) cases.emplace_back([this, k] { return fill(0, 10 + k); });
    co_await g::switch_on(g::on(r.sdma), word, std::move(cases));
  }
  g::task<void> while_prog(std::uint32_t max) {
    co_await set();
    co_await g::while_loop(g::on(r.sdma), word, [this] { return shift(); }, {.max_iterations = max}).label("loop");
  }
  g::task<void> nested_prog() {
    co_await set();
    co_await g::while_loop(g::on(r.sdma), word, [this] { return shift_and_maybe_fill(); }, {.max_iterations = 16});
  }

  // Before a run: the word holds the opposite of what the engine will decide; the chain counts
  // down from k - 1 to 0 (then sentinels 1000 + i): a WHILE from k runs exactly k times.
  void reset(std::uint64_t v, std::uint64_t k = 0) {
    decision[0] = v;
    word[0] = v ? 0 : 1;
    for (std::uint32_t i = 0; i < 4; ++i) out[i] = 0;
    for (std::uint32_t i = 0; i < chain_len; ++i) chain[i] = i < k ? k - 1 - i : 1000 + i;
  }
};

const g::instantiate_options ring{};
const g::instantiate_options indirect{.replay_slots = 4, .wait = {}, .trace = false, .mode = g::replay_mode::indirect};

// For each v: capture `prog()` with decision v (captured once; the decision is device memory),
// replay it in both modes and run it eagerly; `check(v)` after each.
template <class Prog, class Check>
void each_way(fixture& f, const std::vector<std::uint64_t>& values, Prog prog, Check check, std::uint64_t k_of_v = 0) {
  const g::task_graph tg = g::capture(prog());
  for (const std::uint64_t v : values) {
    const std::uint64_t k = k_of_v ? v : 0;
    for (const auto* o : {&ring, &indirect}) {
      CAPTURE(v);
      CAPTURE(o == &indirect);
      auto e = g::instantiate(tg, *o);
      for (int rep = 0; rep < 2; ++rep) {
        f.reset(v, k);
        e.wait(e.launch());
        check(v);
      }
    }
    f.reset(v, k);
    g::sync_wait(prog());
    check(v);
  }
}
}  // namespace

TEST_CASE("SDMA IF: the body runs exactly when the 64-bit word the engine wrote is not 0") {
  fixture f;
  // 2^32: the low dword is 0, the word is not (COND_EXE compares 32 bits: both halves are read).
  each_way(f, {0, 1, 0x1'0000'0000ull, 0xFFFF'FFFF'0000'0000ull}, [&] { return f.if_prog(); },
           [&](std::uint64_t v) { CHECK(f.out[0] == (v != 0 ? 7u : 0u)); });
}

TEST_CASE("SDMA IF-ELSE: then when not 0, else when 0") {
  fixture f;
  each_way(f, {0, 1, 5, 0x2'0000'0000ull}, [&] { return f.if_else_prog(); },
           [&](std::uint64_t v) { CHECK(f.out[0] == (v != 0 ? 1u : 2u)); });
}

TEST_CASE("SDMA SWITCH: case k when the word is k; no case past the last, none when only the low dword matches") {
  fixture f;
  each_way(f, {0, 1, 2, 3, 0x1'0000'0001ull, ~std::uint64_t{0}}, [&] { return f.switch_prog(); },
           [&](std::uint64_t v) { CHECK(f.out[0] == (v < 3 ? 10u + static_cast<std::uint32_t>(v) : 0u)); });
}

TEST_CASE("SDMA WHILE: the body runs while the word is not 0, the engine deciding each iteration") {
  fixture f;
  each_way(
      f, {0, 1, 7, 20}, [&] { return f.while_prog(24); },
      [&](std::uint64_t k) {
        CHECK(f.word[0] == 0);
        // k shifts: chain[0] now holds what was at index k (the first sentinel: 1000 + k), or the
        // untouched 1000 when the loop never ran.
        CHECK(f.chain[0] == 1000 + k);
      },
      1);
}

TEST_CASE("SDMA WHILE past max_iterations: the wait fails naming the loop; the body ran max_iterations times") {
  fixture f;
  const g::task_graph tg = g::capture(f.while_prog(8));
  for (const auto* o : {&ring, &indirect}) {
    auto e = g::instantiate(tg, *o);
    f.reset(30, 30);  // 30 iterations needed, 8 allowed
    auto r = e.try_wait(e.launch());
    REQUIRE_FALSE(r);
    CHECK(r.get_failure() == aq::errc::cancelled);
    const std::string d(r.get_failure().detail());
    CHECK_MESSAGE(contains(d, "WHILE"), d);
    CHECK_MESSAGE(contains(d, "\"loop\""), d);
    CHECK_MESSAGE(contains(d, "SDMA queue"), d);
    CHECK_MESSAGE(contains(d, "(8)"), d);
    CHECK(f.chain[0] == 30 - 1 - 8);  // 8 shifts of 29, 28, ...
    CHECK(f.word[0] == 30 - 8);
    // The next replay, its loop ending within bounds, succeeds (the overflow word is per replay).
    f.reset(3, 3);
    e.wait(e.launch());
    CHECK(f.chain[0] == 1003);
  }
}

TEST_CASE("SDMA nested: an IF inside a WHILE, in both modes (SDMA conditionals run in place: no IB depth limit)") {
  fixture f;
  const g::task_graph tg = g::capture(f.nested_prog());
  for (const std::uint64_t flag : {0ull, 1ull})
    for (const auto* o : {&ring, &indirect}) {
      auto e = g::instantiate(tg, *o);
      f.reset(5, 5);
      f.flag2[0] = flag;
      e.wait(e.launch());
      CHECK(f.chain[0] == 1005);
      CHECK(f.out[1] == (flag ? 9u : 0u));
    }
}

TEST_CASE("SDMA conditionals: a kernel in the body, or a loop too large for a ring copy, is refused with the reason") {
  fixture f;
  auto kernel_body = [&]() -> g::task<void> {
    co_await g::if_then(g::on(f.r.sdma), f.word, [&f]() -> g::task<void> {
      co_await g::on(f.r.pm4).dispatch(f.r.store_k, rt::grid{1}, rt::block{1}, f.out, 0u, 1u);
    });
  };
  auto r = g::try_instantiate(g::capture(kernel_body()));
  REQUIRE_FALSE(r);
  CHECK(r.get_failure() == aq::errc::not_supported);
  CHECK_MESSAGE(contains(std::string(r.get_failure().detail()), "an SDMA body holds copies, fills"), r.get_failure().detail());

  // 1,024 iterations of a 3-copy body (~40 dwords each) are far more than half a 64 KiB ring.
  const g::task_graph big = g::capture(f.while_prog(1024));
  auto ring_copy = g::try_instantiate(big, ring);
  REQUIRE_FALSE(ring_copy);
  CHECK(ring_copy.get_failure() == aq::errc::invalid_argument);
  CHECK_MESSAGE(contains(std::string(ring_copy.get_failure().detail()), "use replay_mode::indirect"), ring_copy.get_failure().detail());
  // Indirect mode takes it, and runs it.
  auto e = g::instantiate(big, indirect);
  f.reset(100, 60);  // the chain ends at index 59 with 0: 60 iterations
  e.wait(e.launch());
  CHECK(f.chain[0] == 1060);
}

}  // namespace AQ_UNITY_ID
