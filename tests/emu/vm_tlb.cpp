// emu/vm_tlb.hpp: the packet processors' translation cache answers exactly what the VM answers —
// from cached extents while the VM's generation stands still, from the VM again once it moved —
// and never caches a VM without a generation, a data access, or an extent read across a change.
// Also the generations it relies on: emu::gpu_vm moves on at every change, the device's
// locked_vm_view passes it through (emu/queue_engine.hpp). Expected answers are written out by
// hand from the ranges the tests map.
#include <aqueduct/abi/kfd_ioctl.hpp>
#include <aqueduct/emu/gpu_vm.hpp>
#include <aqueduct/emu/queue_engine.hpp>
#include <aqueduct/emu/vm_tlb.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <shared_mutex>
#include <utility>
#include <vector>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

namespace emu = aqueduct::emu;

namespace {

// Ranges [lo, hi) mapped by hand; counts every question the cache passes on.
class counting_vm final : public emu::vm_access {
 public:
  std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;
  std::uint64_t gen = 1;  // 0: no cache support
  bool move_during_extent = false;  // the VM changes while an extent is read
  mutable int is_mapped_calls = 0, extent_calls = 0, data_calls = 0;

  [[nodiscard]] bool is_mapped(std::uint64_t va, std::uint64_t len) const noexcept override {
    ++is_mapped_calls;
    std::uint64_t cur = va;
    const std::uint64_t end = va + (len ? len : 1);
    if (end < va) return false;
    while (cur < end) {  // adjacent ranges together hold a range, as emu::gpu_vm's BOs do
      bool found = false;
      for (auto [lo, hi] : ranges)
        if (cur >= lo && cur < hi) {
          cur = hi;
          found = true;
          break;
        }
      if (!found) return false;
    }
    return true;
  }
  [[nodiscard]] bool data_access_ok(std::uint64_t va, std::uint64_t len) const noexcept override {
    ++data_calls;
    return is_mapped(va, len);
  }
  [[nodiscard]] std::uint64_t generation() const noexcept override { return gen; }
  [[nodiscard]] bool mapped_extent(std::uint64_t va, std::uint64_t& lo, std::uint64_t& hi) const noexcept override {
    ++extent_calls;
    if (move_during_extent) ++const_cast<counting_vm*>(this)->gen;
    for (auto [l, h] : ranges)
      if (va >= l && va < h) {
        lo = l;
        hi = h;
        return true;
      }
    return false;
  }
  [[nodiscard]] int asked() const { return is_mapped_calls + extent_calls; }
};

}  // namespace

// The processors memoize under the TLB's generation (emu/detail/aql_dispatch.hpp's
// kernel_object_cache, the AQL processor's amd_queue address): it must be the one the cached
// extents belong to — 0 before the first sync, unchanged by a VM change until the next sync.
TEST_CASE("generation() is the one the last sync() read, 0 before any") {
  counting_vm vm;
  vm.gen = 7;
  emu::vm_tlb tlb(vm);
  CHECK(tlb.generation() == 0u);  // never synced: nothing may be memoized
  tlb.sync();
  CHECK(tlb.generation() == 7u);
  vm.gen = 8;                     // the VM moves on during a packet
  CHECK(tlb.generation() == 7u);  // this packet's answers still belong to 7
  tlb.sync();
  CHECK(tlb.generation() == 8u);
  vm.gen = 0;                     // a VM without generations: never memoized
  tlb.sync();
  CHECK(tlb.generation() == 0u);
}

TEST_CASE("hits inside a cached extent ask the VM nothing; a generation change drops every extent") {
  counting_vm vm;
  vm.ranges = {{0x10000, 0x20000}};
  emu::vm_tlb tlb(vm);
  tlb.sync();
  CHECK(tlb.is_mapped(0x10000, 64));  // miss: the extent is read
  CHECK(vm.extent_calls == 1);
  const int asked = vm.asked();
  CHECK(tlb.is_mapped(0x10040, 8));
  CHECK(tlb.is_mapped(0x1FFF8, 8));    // the last 8 bytes
  CHECK(tlb.is_mapped(0x1FFFF, 0));    // length 0 is one byte
  CHECK(vm.asked() == asked);          // all three from the cache
  CHECK(tlb.hits() == 3);
  CHECK_FALSE(tlb.is_mapped(0x1FFF9, 8));  // one byte past the end: asked, and refused
  CHECK_FALSE(tlb.is_mapped(0xFFF8, 16));  // starts before

  // The VM changes (the range goes away): without sync the packet in hand still uses its answer;
  // from the next sync on the VM is asked again.
  vm.ranges.clear();
  ++vm.gen;
  tlb.sync();
  CHECK_FALSE(tlb.is_mapped(0x10040, 8));
  vm.ranges = {{0x10000, 0x20000}};
  ++vm.gen;
  tlb.sync();
  CHECK(tlb.is_mapped(0x10040, 8));
}

TEST_CASE("no generation, a wrapping range, a range over two extents, an extent read across a change") {
  counting_vm vm;
  vm.ranges = {{0x10000, 0x20000}, {0x20000, 0x30000}};
  SUBCASE("generation 0: every question goes to the VM") {
    vm.gen = 0;
    emu::vm_tlb tlb(vm);
    tlb.sync();
    for (int i = 0; i < 3; ++i) CHECK(tlb.is_mapped(0x10000, 8));
    CHECK(vm.is_mapped_calls == 3);
    CHECK(vm.extent_calls == 0);
  }
  SUBCASE("a range that wraps past 2^64 is never mapped, and the VM is not asked") {
    emu::vm_tlb tlb(vm);
    tlb.sync();
    CHECK_FALSE(tlb.is_mapped(~std::uint64_t{0} - 3, 8));
    CHECK(vm.asked() == 0);
  }
  SUBCASE("two adjacent extents hold a range together (the VM answers it)") {
    emu::vm_tlb tlb(vm);
    tlb.sync();
    CHECK(tlb.is_mapped(0x1FFF0, 32));
    CHECK(vm.is_mapped_calls == 1);
    CHECK(tlb.is_mapped(0x1FFF0, 32));  // never cached as one: asked again
    CHECK(vm.is_mapped_calls == 2);
  }
  SUBCASE("an extent read while the VM changed is used once, not kept") {
    vm.move_during_extent = true;
    emu::vm_tlb tlb(vm);
    tlb.sync();
    CHECK(tlb.is_mapped(0x10000, 8));
    CHECK(tlb.is_mapped(0x10000, 8));
    CHECK(vm.extent_calls == 2);
    CHECK(tlb.hits() == 0);
  }
  SUBCASE("more buffers than entries: the oldest is replaced, answers stay right") {
    for (std::uint64_t i = 0; i < 2 * emu::vm_tlb::entries; ++i) vm.ranges.push_back({0x100000 + i * 0x1000, 0x100800 + i * 0x1000});
    emu::vm_tlb tlb(vm);
    tlb.sync();
    for (int round = 0; round < 2; ++round)
      for (std::uint64_t i = 0; i < 2 * emu::vm_tlb::entries; ++i) {
        CHECK(tlb.is_mapped(0x100000 + i * 0x1000, 0x800));
        CHECK_FALSE(tlb.is_mapped(0x100800 + i * 0x1000, 8));  // the unmapped half of each page
      }
  }
}

TEST_CASE("data accesses are never cached (the fault plan decides each one)") {
  counting_vm vm;
  vm.ranges = {{0x10000, 0x20000}};
  emu::vm_tlb tlb(vm);
  tlb.sync();
  CHECK(tlb.is_mapped(0x10000, 8));
  CHECK(tlb.data_access_ok(0x10000, 8));
  CHECK(tlb.data_access_ok(0x10000, 8));
  CHECK(vm.data_calls == 2);
}

TEST_CASE("emu::gpu_vm moves its generation on at every change; the device's view and a TLB follow it") {
  namespace k = aqueduct::abi::kfd;
  emu::gpu_vm vm;
  std::shared_mutex m;
  emu::locked_vm_view view(m, vm, 7);
  emu::buffer_object b;
  b.handle = (std::uint64_t{7} << 32) | 1;
  b.gpu_id = 7;
  b.va = 0x7f0000000000;
  b.size = b.mapped_size = 0x2000;
  b.flags = k::alloc_mem_flags_userptr;  // accessible without placing memory at va
  b.mapped_gpus = {7};

  std::uint64_t g = view.generation();
  CHECK(g != 0);
  vm.add(b);
  CHECK(view.generation() > g);
  std::uint64_t lo = 0, hi = 0;
  REQUIRE(view.mapped_extent(b.va + 0x100, lo, hi));
  CHECK(lo == b.va);
  CHECK(hi == b.va + 0x2000);
  CHECK_FALSE(view.mapped_extent(b.va + 0x2000, lo, hi));

  emu::vm_tlb tlb(view);
  tlb.sync();
  CHECK(tlb.is_mapped(b.va + 8, 8));
  // Unmapped from the GPU (what AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU does through find()).
  g = view.generation();
  std::erase(vm.find(b.handle)->mapped_gpus, 7u);
  CHECK(view.generation() > g);
  tlb.sync();
  CHECK_FALSE(tlb.is_mapped(b.va + 8, 8));
  // Mapped again, then freed.
  vm.find(b.handle)->mapped_gpus.push_back(7);
  tlb.sync();
  CHECK(tlb.is_mapped(b.va + 8, 8));
  g = view.generation();
  vm.remove(b.handle);
  CHECK(view.generation() > g);
  tlb.sync();
  CHECK_FALSE(tlb.is_mapped(b.va + 8, 8));
  // A munmap of the range it lived in, and place/unplace, move it on too.
  g = view.generation();
  vm.note_unmap(b.va, 0x2000);
  CHECK(view.generation() > g);
}

}  // namespace AQ_UNITY_ID
