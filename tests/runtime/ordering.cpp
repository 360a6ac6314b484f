// runtime: ordering on the emulated processor. A barrier-AND packet holds back everything after
// it until its dependency signals are 0 (host gate; another queue's completion signal); the
// barrier bit makes a dispatch wait for every earlier packet (a multi-workgroup dispatch that runs
// on the processor's workers must be complete before its reader starts). Each check has a
// control that observes the blocked state first, so the test fails if ordering is not enforced.
#include "host_kernels.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <thread>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

namespace aq = aqueduct;
namespace rt = aqueduct::runtime;
using namespace rt_test;
using namespace std::chrono_literals;

namespace {
// count_ok(c, n, expected_base, out): out[0] = number of i < n with c[i] == 3i + 0.5 (vadd of
// a[i] = i, b[i] = 2i + 0.5). One work-item; reads what the previous dispatch wrote.
struct count_args {
  std::uint64_t c;
  std::uint32_t n;
  std::uint32_t pad;
  std::uint64_t out;
};
void count_ok(aq::emu::workgroup_context& ctx) {
  const aq::emu::host_workgroup wg(ctx);
  const auto a = wg.args<count_args>();
  const float* c = ctx.ptr<const float>(a.c, a.n);
  std::uint32_t ok = 0;
  for (std::uint32_t i = 0; i < a.n; ++i) ok += c[i] == 3.0f * static_cast<float>(i) + 0.5f;
  ctx.store<std::uint32_t>(a.out, ok);
}
}  // namespace

TEST_CASE("barrier-AND on a host signal holds the queue; releasing it lets the dispatch run") {
  auto sys = rt::system::open({.machine = "rx7900xtx"});
  const auto& gpu = sys.default_agent();
  auto exe = aq::emu::load(gpu, test_kernels());
  auto store = exe.get_untyped_kernel("store");
  auto out = gpu.alloc<std::uint32_t>(4, rt::memory_kind::host);
  for (int i = 0; i < 4; ++i) out[i] = 0;
  auto q = gpu.make_queue(aq::aql, {.slots = 64});
  auto gate = gpu.make_signal(1);
  const aq::sync::signal_ref deps[] = {gate.ref()};
  REQUIRE(q.try_barrier_and(deps).has_value());
  const auto idx = q.dispatch(store, rt::grid{1}, rt::block{1}, out, 0u, 7u);
  // control: nothing passes the barrier while the gate is 1
  CHECK_FALSE(q.try_wait(idx, 100ms).has_value());
  CHECK(out[0] == 0u);
  CHECK(q.read_index() == 0);
  gate.store(0);
  auto w = q.try_wait(idx, 10s);
  INFO(std::string(w.detail()));
  REQUIRE(w.has_value());
  CHECK(out[0] == 7u);
}

TEST_CASE("cross-queue dependency: queue A waits for queue B's completion signal") {
  auto sys = rt::system::open({.machine = "mi300x"});
  const auto& gpu = sys.default_agent();
  auto exe = aq::emu::load(gpu, test_kernels());
  auto store = exe.get_untyped_kernel("store");
  auto chain = exe.get_untyped_kernel("chain");
  auto data = gpu.alloc<std::uint32_t>(4, rt::memory_kind::host);
  for (int i = 0; i < 4; ++i) data[i] = 0;
  auto qa = gpu.make_queue(aq::aql, {.slots = 64});
  auto qb = gpu.make_queue(aq::aql, {.slots = 64});
  auto b_done = gpu.make_signal(1);
  auto gate = gpu.make_signal(1);
  // A: wait for B's store, then data[2] = data[1] + 1.
  const aq::sync::signal_ref deps_a[] = {b_done.ref()};
  REQUIRE(qa.try_barrier_and(deps_a).has_value());
  const auto ia = qa.dispatch(chain, rt::grid{1}, rt::block{1}, data, 2u, 1u);
  // B: held by a host gate, then data[1] = 5 with b_done as its completion signal.
  const aq::sync::signal_ref deps_b[] = {gate.ref()};
  REQUIRE(qb.try_barrier_and(deps_b).has_value());
  rt::dispatch_options o;
  o.completion_signal = b_done.ref();
  REQUIRE(qb.try_dispatch_with(o, store, rt::grid{1}, rt::block{1}, data, 1u, 5u).has_value());
  CHECK_FALSE(qa.try_wait(ia, 100ms).has_value());  // control: A is blocked on B
  CHECK(data[2] == 0u);
  gate.store(0);
  REQUIRE(qa.try_wait(ia, 10s).has_value());
  CHECK(b_done.load() == 0);
  CHECK(data[1] == 5u);
  CHECK(data[2] == 6u);  // A ran after B's store was visible
  qb.finish(10s);
}

TEST_CASE("barrier bit: a reader dispatched with barrier=1 sees every element of a multi-workgroup write") {
  auto sys = rt::system::open({.machine = "mi250x"});
  const auto& gpu = sys.default_agent();
  aq::emu::host_code_object hco = test_kernels();
  hco.kernels.push_back({"count_ok", count_ok, sizeof(count_args), 0});
  auto exe = aq::emu::load(gpu, hco);
  auto vadd = exe.get_untyped_kernel("vadd");
  auto counter = exe.get_untyped_kernel("count_ok");
  constexpr std::uint32_t n = 1 << 18;  // 1024 workgroups: run by the processor's workers
  auto a = gpu.alloc<float>(n, rt::memory_kind::host), b = gpu.alloc<float>(n, rt::memory_kind::host), c = gpu.alloc<float>(n, rt::memory_kind::host);
  auto out = gpu.alloc<std::uint32_t>(1, rt::memory_kind::host);
  out[0] = 0;
  for (std::uint32_t i = 0; i < n; ++i) a[i] = static_cast<float>(i), b[i] = 2.0f * i + 0.5f, c[i] = -1.0f;
  auto q = gpu.make_queue(aq::aql);
  for (int round = 0; round < 3; ++round) {
    for (std::uint32_t i = 0; i < n; ++i) c[i] = -1.0f;
    q.dispatch(vadd, rt::grid{n}, rt::block{256}, a, b, c, n);
    rt::dispatch_options o;
    o.barrier = true;
    auto idx = q.try_dispatch_with(o, counter, rt::grid{1}, rt::block{1}, c, n, 0u, out);
    REQUIRE(idx.has_value());
    REQUIRE(q.try_wait(*idx, 20s).has_value());
    CHECK(out[0] == n);
  }
}

}  // namespace AQ_UNITY_ID
