// runtime: a full ring is detected before anything is written (requirement 3): a 16-slot queue
// whose head is held by a barrier refuses the 17th packet at once (errc::queue_full, the stalled
// packet decoded), blocks a producer with a timeout, and lets it proceed when the head retires.
#include "host_kernels.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

namespace aq = aqueduct;
namespace rt = aqueduct::runtime;
using namespace rt_test;
using namespace std::chrono_literals;

TEST_CASE("full 16-slot ring: refuse, block, then proceed; nothing overwritten") {
  auto sys = rt::system::open({.machine = "mi300x"});
  const auto& gpu = sys.default_agent();
  auto exe = aq::emu::load(gpu, test_kernels());
  auto store = exe.get_untyped_kernel("store");
  auto out = gpu.alloc<std::uint32_t>(32, rt::memory_kind::host);
  for (int i = 0; i < 32; ++i) out[i] = 0;
  auto q = gpu.make_queue(aq::aql, {.slots = 16});
  REQUIRE(q.size() == 16);
  auto gate = gpu.make_signal(1);
  const aq::sync::signal_ref deps[] = {gate.ref()};
  REQUIRE(q.try_barrier_and(deps).has_value());
  for (std::uint32_t i = 0; i < 15; ++i) REQUIRE(q.try_dispatch(store, rt::grid{1}, rt::block{1}, out, i, 100 + i).has_value());
  CHECK(q.write_index() == 16);

  rt::dispatch_options now;
  now.timeout = std::chrono::nanoseconds::zero();
  auto refused = q.try_dispatch_with(now, store, rt::grid{1}, rt::block{1}, out, 15u, 115u);
  REQUIRE_FALSE(refused.has_value());
  CHECK(refused.error() == aq::errc::queue_full);
  CHECK(std::string(refused.detail()).find("BARRIER_AND") != std::string::npos);  // the stalled head, decoded
  CHECK(q.write_index() == 16);

  std::atomic<bool> done{false};
  rt::aql_ticket late_index;
  std::thread producer([&] {
    rt::dispatch_options wait;
    wait.timeout = 30s;
    auto r = q.try_dispatch_with(wait, store, rt::grid{1}, rt::block{1}, out, 15u, 115u);
    if (r) late_index = *r;
    done.store(r.has_value(), std::memory_order_release);
  });
  std::this_thread::sleep_for(150ms);
  CHECK_FALSE(done.load(std::memory_order_acquire));  // control: blocked while the ring is full
  for (int i = 0; i < 15; ++i) CHECK(out[i] == 0u);
  gate.store(0);
  producer.join();
  REQUIRE(done.load());
  CHECK(late_index.value() == 16);
  REQUIRE(q.try_finish(10s).has_value());
  for (std::uint32_t i = 0; i < 16; ++i) CHECK(out[i] == 100 + i);
  // 17 packets, plus the wake-up barrier a blocking try_finish publishes when it has to sleep
  // (runtime/queue.hpp): 17 or 18.
  CHECK(q.read_index() >= 17);
  CHECK(q.read_index() <= 18);
}

// A producer waiting for room resumes once an eighth of the ring is free, not at the first free
// slot (runtime/queue.hpp, room_for: it would otherwise poll, packet after packet, the signal the
// device is decrementing). When fewer slots than that can free — a packet further on is held —
// it takes what there is after 1 ms instead of waiting for its timeout.
TEST_CASE("full 64-slot ring: a producer waiting for room takes the two slots that free behind a held packet") {
  auto sys = rt::system::open({.machine = "mi300x"});
  const auto& gpu = sys.default_agent();
  auto exe = aq::emu::load(gpu, test_kernels());
  auto store = exe.get_untyped_kernel("store");
  auto out = gpu.alloc<std::uint32_t>(128, rt::memory_kind::host);
  for (int i = 0; i < 128; ++i) out[i] = 0;
  auto q = gpu.make_queue(aq::aql, {.slots = 64});
  REQUIRE(q.size() == 64);
  auto first = gpu.make_signal(1), second = gpu.make_signal(1);
  const aq::sync::signal_ref a[] = {first.ref()}, b[] = {second.ref()};
  REQUIRE(q.try_barrier_and(a, true).has_value());  // index 0: held by `first`
  REQUIRE(q.try_dispatch(store, rt::grid{1}, rt::block{1}, out, 1u, 101u).has_value());
  REQUIRE(q.try_barrier_and(b, true).has_value());  // index 2: held by `second`
  for (std::uint32_t i = 3; i < 64; ++i) REQUIRE(q.try_dispatch(store, rt::grid{1}, rt::block{1}, out, i, 100 + i).has_value());
  CHECK(q.write_index() == 64);

  std::atomic<int> state{0};  // 0 waiting, 1 dispatched, 2 failed
  std::chrono::steady_clock::time_point t_done;
  std::thread producer([&] {
    rt::dispatch_options wait;
    wait.timeout = 30s;
    auto r = q.try_dispatch_with(wait, store, rt::grid{1}, rt::block{1}, out, 64u, 164u);
    t_done = std::chrono::steady_clock::now();
    state.store(r ? 1 : 2, std::memory_order_release);
  });
  std::this_thread::sleep_for(100ms);
  CHECK(state.load(std::memory_order_acquire) == 0);  // control: no room at all yet
  const auto t_open = std::chrono::steady_clock::now();
  first.store(0);  // packets 0 and 1 complete: two slots free, the rest stays held by `second`
  producer.join();
  CHECK(state.load() == 1);
  CHECK(t_done - t_open < 10s);  // not its 30 s timeout: it took the two slots there were
  CHECK(out[64] == 0u);         // queued behind `second`, not run
  second.store(0);
  REQUIRE(q.try_finish(10s).has_value());
  for (std::uint32_t i = 3; i < 65; ++i) CHECK(out[i] == 100 + i);
  CHECK(out[1] == 101u);
}

}  // namespace AQ_UNITY_ID
