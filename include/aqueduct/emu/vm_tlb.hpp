// aqueduct/emu/vm_tlb.hpp — a packet processor's translation cache: the GPU VM's answers to "is
// this range mapped?" kept per buffer, dropped whenever the VM changes.
//
// Layer: emu. A CP checks the kernel object, its code, the kernarg segment and the completion
// signal of every dispatch; asking the device for each (a lock and a tree lookup each time) was
// most of the emulated AQL processor's per-dispatch cost (docs/benchmarks.md, session 12). Real
// hardware caches translations in its TLBs and KFD flushes them when a mapping goes away; this
// is that: a few extents (the whole buffer around an address the VM found mapped, through
// vm_access::mapped_extent) reused until vm_access::generation() moves on — any allocation,
// mapping, unmapping, free, munmap or revocation of the VM moves it, so a check after an unmap
// fails exactly as it did without the cache. A VM that reports generation 0 is never cached.
// Only the processor's own structures are checked through it (is_mapped): a kernel's or copy's
// data accesses (data_access_ok, where the fault plan hooks in) always go to the VM.
// Thread safety: one thread (the processor's); the VM it wraps is queried from any thread.
#pragma once

#include <aqueduct/emu/engine_ports.hpp>

#include <array>
#include <cstddef>
#include <cstdint>

namespace aqueduct::emu {

class vm_tlb final : public vm_access {
 public:
  static constexpr std::size_t entries = 8;

  explicit vm_tlb(const vm_access& vm) noexcept : vm_(&vm) {}
  vm_tlb(const vm_tlb&) = delete;
  vm_tlb& operator=(const vm_tlb&) = delete;

  // Drops every extent if the VM changed since the last call (the processor calls it before
  // each packet it looks at; a flush costs nothing until the next miss).
  void sync() noexcept {
    const std::uint64_t g = vm_->generation();
    if (g != generation_ || g == 0) {
      used_ = 0;
      generation_ = g;
    }
  }

  // vm.is_mapped(va, len), from a cached extent when one holds the whole range.
  [[nodiscard]] bool is_mapped(std::uint64_t va, std::uint64_t len) const noexcept override {
    const std::uint64_t end = va + (len == 0 ? 1 : len);
    if (end < va) return false;  // wraps past 2^64: never mapped
    for (std::size_t i = 0; i < used_; ++i)
      if (va >= extent_[i].lo && end <= extent_[i].hi) {
        ++hits_;
        return true;
      }
    ++misses_;
    if (generation_ != 0) {
      std::uint64_t lo = 0, hi = 0;
      // Kept only if the VM did not change while it was read (the generation is read first by
      // sync(), then again here: an extent read across a change is used once, not cached).
      if (vm_->mapped_extent(va, lo, hi) && lo <= va && va < hi && vm_->generation() == generation_) {
        extent_[next_] = {lo, hi};
        next_ = (next_ + 1) % entries;
        if (used_ < entries) ++used_;
        if (end <= hi) return true;
      }
    }
    return vm_->is_mapped(va, len);  // spans several buffers, not mapped, or no cache support
  }
  // Data accesses are never cached (the fault plan decides them one by one).
  [[nodiscard]] bool data_access_ok(std::uint64_t va, std::uint64_t len) const noexcept override {
    return vm_->data_access_ok(va, len);
  }
  [[nodiscard]] void* host_address(std::uint64_t va) const noexcept override { return vm_->host_address(va); }
  // The generation the cached extents belong to: the one the last sync() read (0 before the
  // first, or for a VM without generations). Every check of one packet answers for it, and a
  // memo of those checks kept under it (detail::kernel_object_cache) is dropped at the next
  // sync() that finds the VM changed, as the extents are.
  [[nodiscard]] std::uint64_t generation() const noexcept override { return generation_; }
  [[nodiscard]] bool mapped_extent(std::uint64_t va, std::uint64_t& lo, std::uint64_t& hi) const noexcept override {
    return vm_->mapped_extent(va, lo, hi);
  }

  // Lookups answered from the cache / passed to the VM (tests, diagnostics).
  [[nodiscard]] std::uint64_t hits() const noexcept { return hits_; }
  [[nodiscard]] std::uint64_t misses() const noexcept { return misses_; }

 private:
  struct range {
    std::uint64_t lo = 0, hi = 0;
  };
  const vm_access* vm_;
  std::uint64_t generation_ = 0;
  // The cache is filled from const is_mapped (a vm_access query): mutable, one thread only.
  mutable std::array<range, entries> extent_{};
  mutable std::size_t used_ = 0, next_ = 0;
  mutable std::uint64_t hits_ = 0, misses_ = 0;
};

}  // namespace aqueduct::emu
