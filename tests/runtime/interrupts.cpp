// runtime: a completion asks for an interrupt only when a waiter may block (issue 11). Counted on
// the emulated device (emu::device::interrupts(): every AQL completion signal with an event
// mailbox, PM4 RELEASE_MEM with an interrupt, SDMA TRAP). Pipelined work followed by ONE wait
// that has to block raises at most one interrupt, on AQL, PM4 and SDMA queues; a wait that ends
// while spinning raises none; and the blocked waiter does wake up (correctness of the arming).
// Before the change every AQL packet, PM4 dispatch and SDMA submission raised one (16-17 here).
#include "host_kernels.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

namespace aq = aqueduct;
namespace rt = aqueduct::runtime;
using namespace std::chrono_literals;

namespace {

// 3 ms per dispatch: 16 of them keep a waiter far past any spin phase.
void slow(aq::emu::workgroup_context&) { std::this_thread::sleep_for(3ms); }
void quick(aq::emu::workgroup_context&) {}

aq::emu::host_code_object kernels() {
  aq::emu::host_code_object c;
  c.kernels.push_back(aq::emu::host_kernel::with_args<>("slow", slow));
  c.kernels.push_back(aq::emu::host_kernel::with_args<>("quick", quick));
  return c;
}

constexpr int pipelined = 16;

}  // namespace

TEST_CASE("AQL: pipelined dispatches and one blocking wait raise at most one interrupt") {
  auto sys = rt::system::open_emulated("rx7900xtx");
  const auto& gpu = sys.default_agent();
  auto* dev = aq::emu::device_of(gpu);
  REQUIRE(dev != nullptr);
  auto exe = aq::emu::load(gpu, kernels());
  auto k = exe.get_kernel<>("slow");
  for (auto policy : {aq::sync::wait_policy::block(), aq::sync::wait_policy::spin_then_block()}) {
    auto q = gpu.make_queue(aq::aql, {.slots = 64, .wait = policy});
    const std::uint64_t before = dev->interrupts();
    rt::aql_ticket last;
    for (int i = 0; i < pipelined; ++i) last = q.dispatch(k, rt::grid{1}, rt::block{1});
    const auto t0 = std::chrono::steady_clock::now();
    REQUIRE(q.try_wait(last, 20s));
    CHECK(std::chrono::steady_clock::now() - t0 >= 20ms);  // it did have to block
    const std::uint64_t raised = dev->interrupts() - before;
    CHECK(raised >= 1);  // the blocked waiter was woken by one
    CHECK(raised <= 1);
    q.finish(20s);
  }
}

TEST_CASE("AQL: a wait that ends while spinning raises no interrupt") {
  auto sys = rt::system::open_emulated("rx7900xtx");
  const auto& gpu = sys.default_agent();
  auto* dev = aq::emu::device_of(gpu);
  auto exe = aq::emu::load(gpu, kernels());
  auto k = exe.get_kernel<>("quick");
  auto q = gpu.make_queue(aq::aql, {.slots = 64, .wait = aq::sync::wait_policy::spin()});
  const std::uint64_t before = dev->interrupts();
  for (int i = 0; i < 50; ++i) q.wait(q.dispatch(k, rt::grid{1}, rt::block{1}), 20s);
  CHECK(dev->interrupts() - before == 0);
}

TEST_CASE("AQL: waiters on several threads each wake, one interrupt per blocking wait at most") {
  auto sys = rt::system::open_emulated("rx7900xtx");
  const auto& gpu = sys.default_agent();
  auto* dev = aq::emu::device_of(gpu);
  auto exe = aq::emu::load(gpu, kernels());
  auto k = exe.get_kernel<>("slow");
  auto q = gpu.make_queue(aq::aql, {.slots = 64, .wait = aq::sync::wait_policy::block()});
  const std::uint64_t before = dev->interrupts();
  rt::aql_ticket t[4];
  for (int i = 0; i < pipelined; ++i) {
    const auto x = q.dispatch(k, rt::grid{1}, rt::block{1});
    if (i % 4 == 3) t[i / 4] = x;
  }
  std::atomic<int> woke{0};
  std::thread w[4];
  for (int i = 0; i < 4; ++i)
    w[i] = std::thread([&, i] { woke += q.try_wait(t[i], 20s).has_value() ? 1 : 0; });
  for (auto& x : w) x.join();
  CHECK(woke == 4);
  CHECK(dev->interrupts() - before <= 4);
}

TEST_CASE("PM4: pipelined dispatches and one blocking wait raise at most one interrupt") {
  auto sys = rt::system::open_emulated("rx7900xtx");
  const auto& gpu = sys.default_agent();
  auto* dev = aq::emu::device_of(gpu);
  auto exe = aq::emu::load(gpu, kernels());
  auto k = exe.get_kernel<>("slow");
  auto p = gpu.make_queue(aq::pm4, {.wait = aq::sync::wait_policy::block()});
  const std::uint64_t before = dev->interrupts();
  rt::pm4_ticket last;
  for (int i = 0; i < pipelined; ++i) last = p.dispatch(k, rt::grid{1}, rt::block{1});
  const auto t0 = std::chrono::steady_clock::now();
  REQUIRE(p.try_wait(last, 20s));
  CHECK(std::chrono::steady_clock::now() - t0 >= 20ms);
  const std::uint64_t raised = dev->interrupts() - before;
  CHECK(raised >= 1);
  CHECK(raised <= 1);
}

TEST_CASE("SDMA: pipelined copies behind a memory wait and one blocking wait raise at most one interrupt") {
  auto sys = rt::system::open_emulated("rx7900xtx");
  const auto& gpu = sys.default_agent();
  auto* dev = aq::emu::device_of(gpu);
  auto e = gpu.make_queue(aq::sdma, {.wait = aq::sync::wait_policy::block()});
  auto flag = gpu.alloc<std::uint32_t>(1, rt::memory_kind::host);
  flag[0] = 0;
  auto a = gpu.alloc<unsigned char>(4096, rt::memory_kind::host);
  auto b = gpu.alloc<unsigned char>(4096, rt::memory_kind::host);
  for (int i = 0; i < 4096; ++i) a[i] = static_cast<unsigned char>(i * 7), b[i] = 0;
  const std::uint64_t before = dev->interrupts();
  REQUIRE(e.try_wait_memory(flag.va(), 1));  // the engine stalls here until the host sets it
  rt::sdma_ticket last;
  for (int i = 0; i < pipelined; ++i) last = e.try_copy(b.va(), a.va(), 4096).value();
  std::thread release([&] {
    std::this_thread::sleep_for(30ms);
    std::atomic_ref<std::uint32_t>(flag[0]).store(1, std::memory_order_release);
  });
  REQUIRE(e.try_wait(last, 20s));
  release.join();
  const std::uint64_t raised = dev->interrupts() - before;
  CHECK(raised >= 1);
  CHECK(raised <= 1);
  int wrong = 0;
  for (int i = 0; i < 4096; ++i) wrong += b[i] != static_cast<unsigned char>(i * 7);
  CHECK(wrong == 0);
}

}  // namespace AQ_UNITY_ID
