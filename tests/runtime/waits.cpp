// runtime: waits spin briefly, then block on the KFD event (DESIGN.md §6: a waiting thread must
// not burn a core). A dispatch held for 300 ms behind a barrier is waited for; the waiting
// thread's CPU time must stay far below the wall time (control: a spin-policy queue burns it).
// Also: a timeout names the queue's state and the stalled packet.
#include "host_kernels.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <ctime>
#include <string>
#include <thread>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

namespace aq = aqueduct;
namespace rt = aqueduct::runtime;
using namespace rt_test;
using namespace std::chrono_literals;

namespace {
double thread_cpu_ms() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}
// Holds queue `q` for `hold`, then measures (wall ms, cpu ms) of waiting for a dispatch behind it.
std::pair<double, double> held_wait(rt::queue& q, const rt::agent& gpu, const rt::untyped_kernel& k, std::chrono::milliseconds hold) {
  auto gate = gpu.make_signal(1);
  const aq::sync::signal_ref deps[] = {gate.ref()};
  REQUIRE(q.try_barrier_and(deps).has_value());
  const auto idx = q.dispatch(k, rt::grid{1}, rt::block{1});
  std::thread opener([&] {
    std::this_thread::sleep_for(hold);
    gate.store(0);
  });
  const auto w0 = std::chrono::steady_clock::now();
  const double c0 = thread_cpu_ms();
  auto r = q.try_wait(idx, 20s);
  const double cpu = thread_cpu_ms() - c0;
  const double wall = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - w0).count();
  opener.join();
  REQUIRE(r.has_value());
  return {wall, cpu};
}
}  // namespace

TEST_CASE("spin_then_block: a long wait sleeps in WAIT_EVENTS; spin: it burns the core (control)") {
  auto sys = rt::system::open({.machine = "mi300x"});
  const auto& gpu = sys.default_agent();
  auto exe = aq::emu::load(gpu, test_kernels());
  auto k = exe.get_untyped_kernel("nothing");
  double block_cpu = 0, spin_cpu = 0;
  {
    auto q = gpu.make_queue(aq::aql, {.slots = 16});  // default policy: spin 50 us, then block
    const auto [wall, cpu] = held_wait(q, gpu, k, 300ms);
    CHECK(wall >= 250.0);
    CHECK(cpu < 0.05 * wall);
    block_cpu = cpu;
  }
  {
    auto q = gpu.make_queue(aq::aql, {.slots = 16, .wait = aq::sync::wait_policy::spin()});
    const auto [wall, cpu] = held_wait(q, gpu, k, 300ms);
    CHECK(wall >= 250.0);
    spin_cpu = cpu;
  }
  // The control proves the measurement sees a burning waiter. It compares the two waiters rather
  // than holding the spinner to a share of the wall time: on a loaded 2-core machine (load 14 seen
  // here) a spinner gets as little as 12% of a core, yet still dozens of times the blocked one's.
  INFO("spin cpu ", spin_cpu, " ms, blocking cpu ", block_cpu, " ms");
  CHECK(spin_cpu > 10.0);
  CHECK(spin_cpu > 10.0 * block_cpu);
}

TEST_CASE("a wait that times out describes the queue and the stalled packet") {
  auto sys = rt::system::open({.machine = "rx7900xtx"});
  const auto& gpu = sys.default_agent();
  auto exe = aq::emu::load(gpu, test_kernels());
  auto k = exe.get_untyped_kernel("nothing");
  auto q = gpu.make_queue(aq::aql, {.slots = 16, .drain_timeout = 10ms});
  auto gate = gpu.make_signal(1);
  const aq::sync::signal_ref deps[] = {gate.ref()};
  REQUIRE(q.try_barrier_and(deps).has_value());
  const auto idx = q.dispatch(k, rt::grid{1}, rt::block{1});
  auto r = q.try_wait(idx, 50ms);
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error() == aq::errc::timeout);
  const std::string d(r.detail());
  CHECK(d.find("read_dispatch_id 0") != std::string::npos);
  // barrier, dispatch, and the wake barrier the blocking wait published (docs/runtime.md)
  CHECK(d.find("write_dispatch_id 3") != std::string::npos);
  CHECK(d.find("BARRIER_AND") != std::string::npos);
  gate.store(0);
  CHECK(q.try_finish(10s).has_value());
}

}  // namespace AQ_UNITY_ID
