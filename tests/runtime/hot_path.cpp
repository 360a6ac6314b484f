// runtime: the dispatch path over the REAL emulated path (kfd/ queue on emu::device, the emulated
// processor attached) makes no heap allocation and no device-file call (DESIGN.md §6): a counting
// global operator new (this thread only) and a counting device_file wrapper around the emulator
// prove it, for untyped and typed dispatches, dispatches of a prepared launch (queue::prepare)
// and barrier packets, PM4 dispatches and SDMA copies (issue 11).
// Controls show both counters do count.
#include "counting_device.hpp"
#include "host_kernels.hpp"

#include "allocation_counter.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <new>
#include <thread>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

using aq_test::allocations;
using aq_test::counting;

namespace aq = aqueduct;
namespace rt = aqueduct::runtime;
using namespace rt_test;

// An emulated RX 7900 XTX behind a device file that counts every call, the test kernels loaded.
struct counted_rig {
  aq::emu::device dev = aq::emu::device::create(aq::emu::machine_config::parse("rx7900xtx"));
  std::shared_ptr<device_counts> counts = std::make_shared<device_counts>();
  rt::system sys = rt::system::try_adopt(counting_device<aq::emu::device>(dev, counts), &dev).value();
  const rt::agent& gpu = sys.default_agent();
  rt::executable exe = aq::emu::load(gpu, test_kernels());
};

TEST_CASE("dispatch hot path: no allocation, no device-file call (with controls)") {
  counted_rig c;
  device_counts& counts = *c.counts;
  REQUIRE(c.sys.emulated());
  const auto& gpu = c.gpu;
  auto& exe = c.exe;
  auto store = exe.get_untyped_kernel("store");
  constexpr std::uint32_t n = 2000;
  auto out = gpu.alloc<std::uint32_t>(n, rt::memory_kind::host);
  for (std::uint32_t i = 0; i < n; ++i) out[i] = 0;
  auto q = gpu.make_queue(aq::aql, {.slots = 8192});
  auto gate = gpu.make_signal(0);
  // The typed kernel through a launch prepared once (queue::prepare), and directly.
  auto typed = exe.get_kernel<std::uint32_t*, std::uint32_t, std::uint32_t>("store");
  const auto launch = q.prepare(typed, rt::block{1});
  auto out2 = gpu.alloc<std::uint32_t>(n, rt::memory_kind::host);
  auto out3 = gpu.alloc<std::uint32_t>(n, rt::memory_kind::host);
  for (std::uint32_t i = 0; i < n; ++i) out2[i] = out3[i] = 0;
  REQUIRE(q.try_finish(std::chrono::seconds(5)).has_value());

  const std::int64_t calls_before = counts.total_calls.load();
  allocations = 0;
  counting = true;
  bool all_ok = true;
  const aq::sync::signal_ref deps[] = {gate.ref()};
  for (std::uint32_t i = 0; i < n; ++i) {
    all_ok &= q.try_dispatch(store, rt::grid{1}, rt::block{1}, out, i, i + 1).has_value();
    all_ok &= q.try_dispatch(launch, rt::grid{1}, out2, i, i + 2).has_value();
    all_ok &= q.try_dispatch(typed, rt::grid{1}, rt::block{1}, out3, i, i + 3).has_value();
    if (i % 100 == 0) all_ok &= q.try_barrier_and(deps, false).has_value();
  }
  counting = false;
  const std::size_t allocs = allocations.load();
  const std::int64_t calls = counts.total_calls.load() - calls_before;
  CHECK(all_ok);
  CHECK(allocs == 0);
  CHECK(calls == 0);

  REQUIRE(q.try_finish(std::chrono::seconds(20)).has_value());
  std::uint32_t wrong = 0;
  for (std::uint32_t i = 0; i < n; ++i) wrong += (out[i] != i + 1) + (out2[i] != i + 2) + (out3[i] != i + 3);
  CHECK(wrong == 0);

  // Controls: the counters count.
  counting = true;
  auto extra = gpu.try_alloc<int>(16, rt::memory_kind::host);
  counting = false;
  CHECK(extra.has_value());
  CHECK(allocations.load() > 0);
  CHECK(counts.total_calls.load() - calls_before > 0);
}

// Steady state of a small ring: claims are bounded by the completion frontier, which the
// queue brings up to date only when a claim finds the ring full by it (runtime/detail/
// aql_slots.hpp). That refresh must stay on the cheap side: no allocation, no device-file call,
// no failure built and thrown away — here every round wraps the 64-slot ring again while the
// earlier packets have completed without anyone refreshing the frontier.
TEST_CASE("dispatch hot path: a ring that wraps while its packets complete allocates nothing") {
  counted_rig c;
  device_counts& counts = *c.counts;
  const auto& gpu = c.gpu;
  auto& exe = c.exe;
  auto store = exe.get_untyped_kernel("store");
  constexpr std::uint32_t rounds = 40, per_round = 48, n = rounds * per_round;
  auto out = gpu.alloc<std::uint32_t>(n, rt::memory_kind::host);
  for (std::uint32_t i = 0; i < n; ++i) out[i] = 0;
  auto q = gpu.make_queue(aq::aql, {.slots = 64});
  REQUIRE(q.try_finish(std::chrono::seconds(5)).has_value());

  const std::int64_t calls_before = counts.total_calls.load();
  allocations = 0;
  counting = true;
  bool all_ok = true, all_done = true;
  for (std::uint32_t r = 0; r < rounds; ++r) {
    rt::aql_ticket last;
    for (std::uint32_t i = 0; i < per_round; ++i) {
      auto t = q.try_dispatch(store, rt::grid{1}, rt::block{1}, out, r * per_round + i, r * per_round + i + 1);
      all_ok &= t.has_value();
      if (t) last = *t;
    }
    // Completion seen through the ticket's own signal only (no wait, no frontier refresh).
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!q.completed(last) && std::chrono::steady_clock::now() < end) std::this_thread::yield();
    all_done &= q.completed(last);
  }
  counting = false;
  const std::size_t allocs = allocations.load();
  const std::int64_t calls = counts.total_calls.load() - calls_before;
  CHECK(all_ok);
  CHECK(all_done);
  CHECK(allocs == 0);
  CHECK(calls == 0);
  CHECK(q.write_index() == n);  // the ring wrapped rounds * 48 / 64 = 30 times
  REQUIRE(q.try_finish(std::chrono::seconds(20)).has_value());
  std::uint32_t wrong = 0;
  for (std::uint32_t i = 0; i < n; ++i) wrong += out[i] != i + 1;
  CHECK(wrong == 0);
}

TEST_CASE("PM4 dispatch and SDMA copy hot paths: no allocation, no device-file call") {
  counted_rig c;
  device_counts& counts = *c.counts;
  const auto& gpu = c.gpu;
  auto& exe = c.exe;
  auto store = get<store_kernel>(exe, "store");
  constexpr std::uint32_t n = 200;  // within the PM4 queue's 256 command slots: no slot-reuse wait
  auto out = gpu.alloc<std::uint32_t>(n, rt::memory_kind::host);
  auto src = gpu.alloc<std::uint32_t>(1024, rt::memory_kind::host);
  auto dst = gpu.alloc<std::uint32_t>(1024, rt::memory_kind::host);
  for (std::uint32_t i = 0; i < 1024; ++i) src[i] = i * 3 + 1, dst[i] = 0;
  auto p = gpu.make_queue(aq::pm4);
  auto e = gpu.make_queue(aq::sdma);
  REQUIRE(p.try_finish(std::chrono::seconds(5)));
  REQUIRE(e.try_finish(std::chrono::seconds(5)));

  const std::int64_t calls_before = counts.total_calls.load();
  allocations = 0;
  counting = true;
  bool all_ok = true;
  for (std::uint32_t i = 0; i < n; ++i) {
    all_ok &= p.try_dispatch(store, rt::grid{1}, rt::block{1}, out, i, i + 1).has_value();
    all_ok &= e.try_copy(dst.va(), src.va(), 4096).has_value();
  }
  counting = false;
  const std::size_t allocs = allocations.load();
  const std::int64_t calls = counts.total_calls.load() - calls_before;
  CHECK(all_ok);
  CHECK(allocs == 0);
  CHECK(calls == 0);

  REQUIRE(p.try_finish(std::chrono::seconds(20)));
  REQUIRE(e.try_finish(std::chrono::seconds(20)));
  std::uint32_t wrong = 0;
  for (std::uint32_t i = 0; i < n; ++i) wrong += out[i] != i + 1;
  for (std::uint32_t i = 0; i < 1024; ++i) wrong += dst[i] != i * 3 + 1;
  CHECK(wrong == 0);
}

}  // namespace AQ_UNITY_ID
