// runtime/detail/buffer_cache.hpp: the buffers destroyed executable graphs give back to their GPU.
// What is kept and what is freed is read at the device file (tests/support/counting_device.hpp:
// ALLOC_MEMORY_OF_GPU 0x16 and FREE_MEMORY_OF_GPU 0x17 by their kfd_ioctl.h numbers); a buffer
// taken again is the same memory (its GPU VA), zeroed up to the size asked for, as fresh memory is.
#include "counting_device.hpp"

#include <aqueduct/runtime.hpp>
#include <aqueduct/runtime/emulator.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

namespace aq = aqueduct;
namespace rt = aqueduct::runtime;
namespace kfd = aqueduct::kfd;

namespace {
constexpr unsigned alloc_nr = 0x16, free_nr = 0x17;  // AMDKFD_IOC_ALLOC/FREE_MEMORY_OF_GPU (kfd_ioctl.h)

struct counted_gpus {
  aq::emu::device dev;
  std::shared_ptr<device_counts> counts = std::make_shared<device_counts>();
  rt::system sys;
  explicit counted_gpus(const char* machine)
      : dev(aq::emu::device::create(aq::emu::machine_config::try_parse(machine).value())),
        sys(rt::system::try_adopt(counting_device<aq::emu::device>(dev, counts), &dev).value()) {}
  std::int64_t allocs() const { return counts->calls[alloc_nr].load(); }
  std::int64_t frees() const { return counts->calls[free_nr].load(); }
};
}  // namespace

TEST_CASE("a kept buffer is taken back whole, zeroed, by a request of its use and GPU up to twice smaller" *
          doctest::skip(AQUEDUCT_ASAN != 0)) {  // ASan: nothing is kept (a late packet still faults)
  counted_gpus m("rx7900xtx");
  const rt::agent& gpu = m.sys.default_agent();
  auto& st = gpu.state();
  auto b = rt::detail::try_reusable_buffer(st, 3 * 4096, kfd::memory_use::host).value();
  const aq::gpu_va va = b.va();
  std::memset(b.host(), 0xAB, b.size().value);
  const auto frees = m.frees();
  st.kept.give(std::move(b));
  CHECK(m.frees() == frees);  // kept, not freed
  CHECK(gpu.kept_graph_memory() == 3 * 4096);

  SUBCASE("another use, or a request larger than it, allocates") {
    const auto allocs = m.allocs();
    auto q = rt::detail::try_reusable_buffer(st, 3 * 4096, kfd::memory_use::queue).value();
    auto big = rt::detail::try_reusable_buffer(st, 3 * 4096 + 1, kfd::memory_use::host).value();
    CHECK(m.allocs() == allocs + 2);
    CHECK(q.va() != va);
    CHECK(big.va() != va);
    CHECK(gpu.kept_graph_memory() == 3 * 4096);
  }
  SUBCASE("a request of less than half its size allocates") {
    const auto allocs = m.allocs();
    auto small = rt::detail::try_reusable_buffer(st, 4096, kfd::memory_use::host).value();
    CHECK(m.allocs() == allocs + 1);
    CHECK(small.va() != va);
  }
  SUBCASE("a request it fits is served by it, zeroed up to what was asked") {
    const auto allocs = m.allocs();
    auto again = rt::detail::try_reusable_buffer(st, 2 * 4096 - 8, kfd::memory_use::host).value();
    CHECK(m.allocs() == allocs);
    CHECK(again.va() == va);
    CHECK(gpu.kept_graph_memory() == 0);
    const auto* p = static_cast<const unsigned char*>(again.host());
    std::size_t nonzero = 0;
    for (std::size_t i = 0; i < 2 * 4096 - 8; ++i) nonzero += p[i] != 0;
    CHECK(nonzero == 0);
  }
  SUBCASE("trim frees it") {
    CHECK(gpu.trim_graph_memory() == 3 * 4096);
    CHECK(m.frees() == frees + 1);
    CHECK(gpu.kept_graph_memory() == 0);
  }
}

TEST_CASE("what is kept is bounded; a buffer mapped to another GPU is freed, not kept; the system's closing frees the kept ones") {
  counted_gpus m("2*mi300x");
  const rt::agent& gpu = m.sys.agents()[0];
  const rt::agent& other = m.sys.agents()[1];
  auto& st = gpu.state();
  {
    auto shared = rt::detail::try_reusable_buffer(st, 4096, kfd::memory_use::host).value();
    REQUIRE(shared.try_map_to(*other.state().node));
    const auto frees = m.frees();
    st.kept.give(std::move(shared));
    CHECK(m.frees() == frees + 1);
    CHECK(gpu.kept_graph_memory() == 0);
  }
  // Past the bound (64 MiB per GPU; in 8 MiB buffers): the ones that do not fit are freed.
  constexpr std::uint64_t piece = std::uint64_t{8} << 20;
  const std::uint64_t bound = rt::detail::buffer_cache<rt::detail::file_type>::kept_bytes;
  const auto frees = m.frees();
  const std::uint64_t n = bound / piece + 3;
  std::vector<kfd::buffer<rt::detail::file_type>> bufs;
  for (std::uint64_t i = 0; i < n; ++i) bufs.push_back(rt::detail::try_reusable_buffer(st, piece, kfd::memory_use::host).value());
  for (auto& b : bufs) st.kept.give(std::move(b));
  if (AQUEDUCT_ASAN) {
    CHECK(gpu.kept_graph_memory() == 0);  // ASan: nothing is kept
    CHECK(m.frees() == frees + static_cast<std::int64_t>(n));
  } else {
    CHECK(gpu.kept_graph_memory() == bound);
    CHECK(m.frees() == frees + static_cast<std::int64_t>(n - bound / piece));
  }
  // Closing the system frees what is kept: every BO allocated is freed.
  m.sys = rt::system{};
  CHECK(m.counts->bos.load() == 0);
}

}  // namespace AQ_UNITY_ID
