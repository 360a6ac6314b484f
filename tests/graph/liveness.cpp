// buffer generations (graph/detail/liveness.hpp, runtime/detail/buffer_life.hpp): a replay
// launched after a runtime buffer one of its nodes uses (captured as an argument or a copy
// address, or bound by name) was freed fails at launch, naming the node and the buffer, and
// submits nothing; a new buffer at the same address does not revive it; giving the node a live
// buffer makes the graph launchable again; freeing a buffer the graph no longer (or never) used
// changes nothing. Expected values: host arithmetic (u32).
#include "kernels.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <thread>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

namespace aq = aqueduct;
namespace g = aqueduct::graph;
namespace rt = aqueduct::runtime;
using namespace graph_test;
using namespace std::chrono_literals;

namespace {
std::string hex(std::uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
  return b;
}
}  // namespace

TEST_CASE("a replay launched after a buffer it uses was freed fails at launch, naming the node and the buffer") {
  rig r;
  constexpr std::uint32_t n = 64;
  auto x = r.host_buffer(n), y = r.host_buffer(n), z = r.host_buffer(n);
  for (std::uint32_t i = 0; i < n; ++i) x[i] = i + 1;
  g::node_id k{}, cp{};
  auto prog = [&]() -> g::task<void> {
    k = co_await g::on(r.aql).dispatch(r.axpb_k, rt::grid{n}, rt::block{64}, y, x, 2u, 1u, n).label("scale");
    cp = co_await g::on(r.sdma).copy(z, y).label("move");
  };
  auto exec = g::instantiate(g::capture(prog()));
  exec.wait(exec.launch());
  CHECK(z[3] == 2 * 4 + 1);

  const std::uint64_t freed = y.address();
  y.reset();  // freed: the graph still holds its address
  std::fill_n(z.data(), n, 0xDEADu);
  auto t = exec.try_launch();
  REQUIRE_FALSE(t);
  const std::string d(t.get_failure().detail());
  MESSAGE(d);
  CHECK(contains(d, "scale"));       // the first node that uses it
  CHECK(contains(d, hex(freed)));    // the buffer
  CHECK(contains(d, "freed"));
  std::this_thread::sleep_for(20ms);
  CHECK(z[0] == 0xDEADu);  // nothing was submitted

  // A new buffer, maybe at the same address: a new generation, the node's record stays dead.
  auto y2 = r.host_buffer(n);
  if (y2.address() == freed) MESSAGE("the new buffer got the freed buffer's address");
  CHECK_FALSE(exec.try_launch());

  // The node given the live buffer: launchable again, results right.
  REQUIRE(exec.try_set_args(k, y2, x, 3u, 2u, n));
  CHECK_FALSE(exec.try_launch());  // "move" still copies from the freed buffer
  REQUIRE(exec.try_set_copy(cp, z.va(), y2.va(), 4ull * n));
  auto ok = exec.try_launch();
  REQUIRE(ok);
  exec.wait(*ok);
  CHECK(z[5] == 3 * 6 + 2);
}

TEST_CASE("buffer generations: bound buffers are checked, and only the buffers the graph uses now") {
  rig r;
  constexpr std::uint32_t n = 32;
  auto in1 = r.host_buffer(n, 5), in2 = r.host_buffer(n, 7), out = r.host_buffer(n);
  auto unrelated = r.host_buffer(n);
  auto prog = [&]() -> g::task<void> {
    co_await g::on(r.pm4).dispatch(r.add_k, rt::grid{n}, rt::block{32}, out, in1, 1u, n).label("bump");
  };
  auto graph = g::capture(prog());
  graph.name("in", in1);
  auto exec = g::instantiate(graph);
  unrelated.reset();  // a free elsewhere: the graph's buffers are all alive
  auto t = exec.try_launch();
  REQUIRE(t);
  exec.wait(*t);
  CHECK(out[0] == 6);

  REQUIRE(exec.try_bind("in", in2));
  in1.reset();  // no longer used by the graph: no refusal
  t = exec.try_launch();
  REQUIRE(t);
  exec.wait(*t);
  CHECK(out[0] == 8);

  const std::uint64_t freed = in2.address();
  in2.reset();  // the bound buffer
  auto bad = exec.try_launch();
  REQUIRE_FALSE(bad);
  CHECK(contains(bad.get_failure().detail(), "bump"));
  CHECK(contains(bad.get_failure().detail(), hex(freed)));
}

}  // namespace AQ_UNITY_ID
