// Shared by the emulated-engine fuzz targets: GPU memory the engines may legitimately touch, at a
// fixed address (so random dwords can aim at it), and a VM that maps exactly what was allocated.
// The property every target checks: a random command stream ends in completion, a queue error
// with a detail, or a bounded wait (a POLL / WAIT_REG_MEM that never passes is what hardware
// does too) - never a crash, an out-of-bounds access (ASan) or undefined behaviour (UBSan).
#pragma once

#include <aqueduct/emu/aql_processor.hpp>
#include <aqueduct/emu/host_kernel.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <utility>
#include <vector>

#include <sys/mman.h>

namespace fuzz_emu {

namespace emu = aqueduct::emu;

class fuzz_vm final : public emu::vm_access {
 public:
  void map(const void* p, std::size_t n) {
    std::lock_guard l(mu_);
    ranges_.push_back({reinterpret_cast<std::uintptr_t>(p), n});
  }
  bool is_mapped(std::uint64_t va, std::uint64_t len) const noexcept override {
    std::lock_guard l(mu_);
    for (auto [b, n] : ranges_)
      if (va >= b && va + len <= b + n && va + len >= va) return true;
    return false;
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::pair<std::uintptr_t, std::size_t>> ranges_;
};

class fuzz_events final : public emu::event_notifier {
 public:
  void signal_event(std::uint32_t) noexcept override {}
};

// 1 MiB at 0x40000000 (below ASan's shadow on x86-64) when the address is free, else anywhere:
// the scratch memory a fuzzed packet may read and write.
inline constexpr std::uintptr_t scratch_address = 0x40000000;
inline constexpr std::size_t scratch_bytes = 1 << 20;
inline std::byte* scratch() {
  static std::byte* p = [] {
    void* m = ::mmap(reinterpret_cast<void*>(scratch_address), scratch_bytes, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (m == MAP_FAILED) m = ::mmap(nullptr, scratch_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) std::abort();
    return static_cast<std::byte*>(m);
  }();
  return p;
}

inline void* aligned(std::size_t bytes, std::size_t align = 4096) {
  void* p = std::aligned_alloc(align, (bytes + align - 1) / align * align);
  std::memset(p, 0, bytes);
  return p;
}

}  // namespace fuzz_emu
