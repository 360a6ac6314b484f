// tests/support/emu_ports.hpp — the ports an emulated engine (AQL processor, PM4 processor, SDMA
// engine) is given in the engine-level tests, once: a GPU VM in which the GPU VA is the host
// address and a range is mapped once registered (`test_vm`, with the overflow guard: an access
// whose end wraps past 2^64 is never mapped), and an event notifier that records every event id
// raised (`test_events`, optionally with a fixed timestamp for byte-exact results).
// Replaces the copies in tests/emu/aql_processor.cpp, tests/emu/pm4_rig.hpp,
// tests/emu/sdma_engine.cpp and tests/queue/aql_queue_emu.cpp.
#pragma once

#include <aqueduct/emu/engine_ports.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

namespace aq_test {

class test_vm final : public aqueduct::emu::vm_access {
 public:
  void map(const void* p, std::size_t n) {
    std::lock_guard l(mu_);
    generation_.fetch_add(1);
    ranges_.push_back({reinterpret_cast<std::uintptr_t>(p), n});
  }
  // Unmaps the range that starts at `p`.
  void unmap(const void* p) {
    std::lock_guard l(mu_);
    generation_.fetch_add(1);
    std::erase_if(ranges_, [&](const auto& r) { return r.first == reinterpret_cast<std::uintptr_t>(p); });
  }
  void unmap_all() {
    std::lock_guard l(mu_);
    generation_.fetch_add(1);
    ranges_.clear();
  }
  // As emu::device's VM: a generation that moves on at every change, and the extent of a mapped
  // range, so that the engines' translation caches (emu/vm_tlb.hpp) run in these tests too.
  [[nodiscard]] std::uint64_t generation() const noexcept override { return generation_.load(); }
  [[nodiscard]] bool mapped_extent(std::uint64_t va, std::uint64_t& lo, std::uint64_t& hi) const noexcept override {
    std::lock_guard l(mu_);
    for (auto [b, n] : ranges_)
      if (va >= b && va - b < n) {
        lo = b;
        hi = b + n;
        return true;
      }
    return false;
  }
  [[nodiscard]] bool is_mapped(std::uint64_t va, std::uint64_t len) const noexcept override {
    if (va + len < va) return false;  // the range wraps: never mapped
    std::lock_guard l(mu_);
    for (auto [b, n] : ranges_)
      if (va >= b && va + len <= b + n) return true;
    return false;
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::pair<std::uintptr_t, std::size_t>> ranges_;
  std::atomic<std::uint64_t> generation_{1};
};

class test_events final : public aqueduct::emu::event_notifier {
 public:
  test_events() = default;
  // Every timestamp the engines ask for is `fixed` (byte-exact expected values).
  explicit test_events(std::uint64_t fixed) noexcept : fixed_(fixed) {}
  void signal_event(std::uint32_t id) noexcept override {
    std::lock_guard l(mu_);
    ids_.push_back(id);
  }
  [[nodiscard]] std::uint64_t timestamp() const noexcept override {
    return fixed_ ? *fixed_ : aqueduct::emu::event_notifier::timestamp();
  }
  // Room for `n` event ids: raising that many allocates nothing (tests that count allocations).
  void reserve(std::size_t n) {
    std::lock_guard l(mu_);
    ids_.reserve(n);
  }
  // The event ids raised so far, in order.
  [[nodiscard]] std::vector<std::uint32_t> ids() {
    std::lock_guard l(mu_);
    return ids_;
  }

 private:
  std::mutex mu_;
  std::vector<std::uint32_t> ids_;
  std::optional<std::uint64_t> fixed_;
};

}  // namespace aq_test
