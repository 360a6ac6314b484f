// runtime: clean shutdown. After queues (one still blocked on a barrier, destroyed after its
// bounded drain), buffers, executables and signals are destroyed, the emulator has no queue and
// no processor thread left; after the system is destroyed every BO, GPU mapping, queue, event
// and render node it took is released (counted by a device_file wrapper), and the process has
// the threads it had before. Also: a memory violation in a kernel stops the queue and the wait
// reports it (errc::device_fault, faulting address).
#include "counting_device.hpp"
#include "host_kernels.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

namespace aq = aqueduct;
namespace rt = aqueduct::runtime;
using namespace rt_test;
using namespace std::chrono_literals;

namespace {
std::size_t thread_count() {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/task")) ++n;
  return n;
}
}  // namespace

TEST_CASE("shutdown releases everything and joins every emulator thread") {
  std::thread([] {}).join();  // sanitizer runtimes start their helper thread with the first thread
  const std::size_t threads_before = thread_count();
  auto dev = aq::emu::device::create(aq::emu::machine_config::parse("mi300x,rx7900xtx"));
  auto counts_ptr = std::make_shared<device_counts>();
  device_counts& counts = *counts_ptr;
  {
    auto sys = rt::system::try_adopt(counting_device<aq::emu::device>(dev, counts_ptr), &dev);
    REQUIRE(sys.has_value());
    std::vector<rt::queue> queues;
    for (const auto& gpu : sys->agents()) {
      auto exe = aq::emu::load(gpu, test_kernels());
      auto vadd = exe.get_untyped_kernel("vadd");
      constexpr std::uint32_t n = 10000;
      auto a = gpu.alloc<float>(n, rt::memory_kind::host), b = gpu.alloc<float>(n, rt::memory_kind::host), c = gpu.alloc<float>(n, rt::memory_kind::device_host_visible);
      for (std::uint32_t i = 0; i < n; ++i) a[i] = 1.0f, b[i] = 2.0f;
      auto q = gpu.make_queue(aq::aql, {.slots = 64});
      auto q2 = gpu.make_queue(aq::aql, {.slots = 16, .drain_timeout = 200ms});
      auto gate = gpu.make_signal(1);
      q.dispatch(vadd, rt::grid{n}, rt::block{128}, a, b, c, n);
      const aq::sync::signal_ref deps[] = {gate.ref()};
      REQUIRE(q2.try_barrier_and(deps).has_value());  // never released: q2 is destroyed blocked
      q2.dispatch(vadd, rt::grid{n}, rt::block{128}, a, b, c, n);
      REQUIRE(q.try_finish(10s).has_value());
      CHECK(c[n - 1] == 3.0f);
      CHECK(thread_count() > threads_before);  // control: processors run threads
      CHECK(dev.queues().size() == queues.size() + 2);
      q2.destroy();  // drains for 200 ms, then DESTROY_QUEUE stops its processor
      CHECK(dev.queues().size() == queues.size() + 1);
      queues.push_back(std::move(q));
    }
    CHECK(counts.queues.load() == 2);
    queues.clear();
    CHECK(dev.queues().size() == 0);
    CHECK(counts.queues.load() == 0);
    CHECK(counts.bos.load() > 0);  // control: the system still holds doorbells, signals, events
  }
  CHECK(counts.queues.load() == 0);
  CHECK(counts.events.load() == 0);
  CHECK(counts.render_nodes.load() == 0);
  // The event page, once registered with CREATE_EVENT, belongs to the (emulated) kernel until
  // the process closes the device (kfd/events.hpp: its FREE is refused with EPERM, so kfd/ drops
  // only its CPU mapping, and its GPU mappings, one per GPU that made an event, stay with it);
  // every other BO and GPU mapping is released.
  CHECK(counts.bos.load() <= 1);
  CHECK(counts.gpu_maps.load() <= 2);
  CHECK(thread_count() == threads_before);
}

TEST_CASE("a kernel that touches unmapped memory stops its queue; the wait says where") {
  auto sys = rt::system::open({.machine = "rx6900xt"});
  const auto& gpu = sys.default_agent();
  auto exe = aq::emu::load(gpu, test_kernels());
  auto store = exe.get_untyped_kernel("store");
  auto q = gpu.make_queue(aq::aql, {.slots = 16});
  const std::uint64_t bogus = 0x10000;  // never mapped to the GPU
  auto idx = q.try_dispatch(store, rt::grid{1}, rt::block{1}, bogus, 3u, 1u);
  REQUIRE(idx.has_value());
  auto w = q.try_wait(*idx, 10s);
  REQUIRE_FALSE(w.has_value());
  CHECK(w.error() == aq::errc::device_fault);
  CHECK(std::string(w.detail()).find("0x1000c") != std::string::npos);  // out + 4 * index
}

}  // namespace AQ_UNITY_ID
