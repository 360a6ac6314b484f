// kfd/memory.hpp: buffers allocated and released from several threads at once on the emulated
// KFD. Regression: try_release used to give the VA range back (munmap) before
// FREE_MEMORY_OF_GPU, so another thread's reservation could land on a range the kernel still had
// the old BO registered at, and its ALLOC_MEMORY_OF_GPU failed with EINVAL (seen about 1 run in 5
// by tests/runtime/multi_gpu.cpp's first version). Expected: every allocation succeeds.
#include <aqueduct/emu/device.hpp>
#include <aqueduct/kfd/driver.hpp>
#include <aqueduct/kfd/memory.hpp>

#include <doctest/doctest.h>

#include <atomic>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

namespace aq = aqueduct;
namespace kfd = aqueduct::kfd;

TEST_CASE("concurrent allocate/release never hands out a range still registered to a live BO") {
  auto dev = aq::emu::device::create(aq::emu::machine_config::try_parse("rx7900xtx").value());
  auto drv = kfd::driver<aq::emu::device>::open(std::move(dev));
  const kfd::node& gpu = *drv.topo().gpu_nodes().at(0);
  drv.try_acquire_vm(gpu).value();

  constexpr int threads = 4, rounds = 300;
  std::atomic<int> failures{0};
  std::string first_failure;
  std::atomic_flag recorded = ATOMIC_FLAG_INIT;
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      for (int i = 0; i < rounds; ++i) {
        // small and page-sized buffers, host and queue memory: the same VA region is reused often
        const auto size = aq::byte_count(4096u * (1u + static_cast<unsigned>((i + t) % 3)));
        auto b = kfd::buffer<aq::emu::device>::try_allocate(drv.ref(), gpu, size,
                                                            (i & 1) ? kfd::memory_use::host : kfd::memory_use::queue);
        if (!b) {
          failures.fetch_add(1);
          if (!recorded.test_and_set()) first_failure = b.get_failure().describe();
          continue;
        }
        if (b->try_release().has_value() == false) failures.fetch_add(1);
      }
    });
  for (auto& th : pool) th.join();
  INFO(first_failure);
  CHECK(failures.load() == 0);
}

}  // namespace AQ_UNITY_ID
