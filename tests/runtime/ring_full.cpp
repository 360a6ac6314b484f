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

}  // namespace AQ_UNITY_ID
