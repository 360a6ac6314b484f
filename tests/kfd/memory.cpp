// Tests for kfd/memory.hpp that need no device: the sub-allocator and the flags per use
// (flag bits from spec/kfd.md §5.2 / uapi kfd_ioctl.h, written out here as numbers).
#include <aqueduct/kfd/suballocator.hpp>

#include <doctest/doctest.h>

#include <random>
#include <vector>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

namespace kfd = aqueduct::kfd;

TEST_CASE("range_allocator: first fit, alignment, coalescing") {
  kfd::range_allocator r(1 << 20);
  auto a = r.allocate(1000, 256);
  auto b = r.allocate(4096, 4096);
  auto c = r.allocate(256, 256);
  REQUIRE(a);
  REQUIRE(b);
  REQUIRE(c);
  CHECK(*a == 0);
  CHECK(*b == 4096);  // 1000 rounded to the next 4096 boundary
  CHECK(*c == 1024);  // first fit: the gap between a and b
  CHECK(r.used() == 1000 + 4096 + 256);
  r.free(*b, 4096);
  r.free(*a, 1000);
  r.free(*c, 256);
  CHECK(r.empty());
  CHECK(r.fragments() == 1);  // everything coalesced back into one range
  CHECK_FALSE(r.allocate((1 << 20) + 1, 256));
  auto all = r.allocate(1 << 20, 256);
  REQUIRE(all);
  CHECK(*all == 0);
  CHECK_FALSE(r.allocate(1, 1));
}

TEST_CASE("range_allocator: random allocate/free never overlaps and ends empty") {
  std::mt19937 rng(42);
  kfd::range_allocator r(2 << 20);
  struct piece { std::uint64_t off, size; };
  std::vector<piece> live;
  for (int i = 0; i < 2000; ++i) {
    if (live.empty() || rng() % 3 != 0) {
      const std::uint64_t size = 1 + rng() % 20000;
      const std::uint64_t align = 1ull << (rng() % 13);
      if (auto off = r.allocate(size, align)) {
        CHECK(*off % align == 0);
        for (const auto& p : live) CHECK((*off + size <= p.off || p.off + p.size <= *off));
        live.push_back({*off, size});
      }
    } else {
      const auto k = rng() % live.size();
      r.free(live[k].off, live[k].size);
      live.erase(live.begin() + static_cast<long>(k));
    }
  }
  for (const auto& p : live) r.free(p.off, p.size);
  CHECK(r.empty());
  CHECK(r.fragments() == 1);
}

TEST_CASE("allocation flags per use (uapi bit values)") {
  constexpr std::uint32_t VRAM = 1, GTT = 2, DOORBELL = 8, WRITABLE = 1u << 31, EXECUTABLE = 1u << 30,
                          PUBLIC = 1u << 29, NO_SUBSTITUTE = 1u << 28, COHERENT = 1u << 26, UNCACHED = 1u << 25;
  CHECK(kfd::memory_flags(kfd::memory_use::device) == (VRAM | WRITABLE | EXECUTABLE | NO_SUBSTITUTE));
  CHECK(kfd::memory_flags(kfd::memory_use::code) == (VRAM | PUBLIC | WRITABLE | EXECUTABLE | NO_SUBSTITUTE));
  CHECK(kfd::memory_flags(kfd::memory_use::queue) ==
        (GTT | COHERENT | UNCACHED | WRITABLE | EXECUTABLE | NO_SUBSTITUTE));
  CHECK(kfd::memory_flags(kfd::memory_use::event_page) ==
        (GTT | COHERENT | UNCACHED | WRITABLE | EXECUTABLE | NO_SUBSTITUTE));
  CHECK(kfd::memory_flags(kfd::memory_use::doorbell) == (DOORBELL | WRITABLE | NO_SUBSTITUTE));
  CHECK(kfd::memory_flags(kfd::memory_use::host) == (GTT | COHERENT | WRITABLE | EXECUTABLE | NO_SUBSTITUTE));
  CHECK_FALSE(kfd::host_mapped(kfd::memory_use::device));
  CHECK(kfd::host_mapped(kfd::memory_use::doorbell));
}

}  // namespace AQ_UNITY_ID
