// aqueduct/runtime/detail/aql_slots.hpp — completion of a runtime AQL queue's packets: one
// completion signal per ring slot, and the two frontiers the queue derives from them.
//
// Layer: runtime (detail, not API). Why: the read index is not a completion. The HSA
// specification lets a packet processor advance read_dispatch_id as soon as it has launched a
// packet (ROCm/ROCR-Runtime#105, AMD: "The read pointer may advance any time after the dispatch
// packet has been initiated"; ROCr itself waits for a PM4 packet on its completion signal on
// gfx9+, AqlQueue::ExecutePM4), and packets without the barrier bit complete in any order. So
// packet t carries the signal of its slot, whose value says which packet of that slot completed:
//   before the header is published the producer stores pending(t) = 2t + 2 (a plain store, no
//   read-modify-write); the packet processor decrements it at completion to complete(t) = 2t + 1.
// A slot's signal is written again only for packet t + size, which is claimed only after packet
// t completed (the claim is bounded by `free`, below), so its value never goes back: it is
// complete(t) or beyond once t completed. A value below complete(t) on a launched packet means
// the packet does not carry its slot's signal ("untracked": a raw packet through queue::aql(),
// the barrier that decrements a caller's completion signal).
// Frontiers (host words, monotonic, advanced by `refresh` on cold paths only):
//   done: every packet below it completed (the exact prefix; waits and finish use it);
//   free: every packet below it completed or, if untracked, was launched — its slot, kernarg area
//     and signal may be reused. The ring's claims are bounded by it (ring::aql_queue_memory::
//     reuse_bound), so a kernarg slot is rewritten only after the packet that read it completed.
// Thread safety: arm/mark/state from any producer or waiter; refresh from any thread (CAS-max).
#pragma once

#include <aqueduct/abi/amd_signal.hpp>
#include <aqueduct/config.hpp>
#include <aqueduct/sync/atomics.hpp>

#include <algorithm>
#include <cstdint>

namespace aqueduct::runtime::detail {

class aql_slot_signals {
 public:
  enum class state : std::uint8_t { pending, complete, untracked };

  static constexpr std::int64_t pending_value(std::uint64_t t) noexcept { return static_cast<std::int64_t>(2 * t + 2); }
  static constexpr std::int64_t complete_value(std::uint64_t t) noexcept { return static_cast<std::int64_t>(2 * t + 1); }

  aql_slot_signals() = default;
  // `sig`: `slots` zero-filled signals (host memory the device can write), `slots` a power of two.
  // Every value starts at -1: below complete(t) for every t (nothing tracked yet).
  void attach(abi::amd_signal* sig, std::uint32_t slots) noexcept {
    sig_ = sig;
    mask_ = slots - 1;
    for (std::uint32_t i = 0; i < slots; ++i) {
      sig_[i] = abi::amd_signal{};
      sig_[i].kind = static_cast<std::int64_t>(abi::amd_signal_kind::user);
      sync::atomic_store(sig_[i].value, std::int64_t{-1}, std::memory_order_relaxed);
    }
  }

  // The completion signal packet t carries.
  [[nodiscard]] AQUEDUCT_ALWAYS_INLINE std::uint64_t handle(std::uint64_t t) const noexcept {
    return reinterpret_cast<std::uintptr_t>(sig_ + (t & mask_));
  }
  // Packet t will carry handle(t): before its header is released (which orders this store).
  AQUEDUCT_ALWAYS_INLINE void arm(std::uint64_t t) const noexcept {
    sync::atomic_store(sig_[t & mask_].value, pending_value(t), std::memory_order_relaxed);
  }
  // arm(t) through handle(t), already computed (no reload of the signal array).
  AQUEDUCT_ALWAYS_INLINE static void arm_handle(std::uint64_t handle, std::uint64_t t) noexcept {
    sync::atomic_store(reinterpret_cast<abi::amd_signal*>(handle)->value, pending_value(t), std::memory_order_relaxed);
  }
  // Packet t carries another signal but is complete once launched (a barrier-bit packet with no
  // dependencies and no effect but its own signal: the wake-up barrier).
  void mark_complete(std::uint64_t t) const noexcept {
    sync::atomic_store(sig_[t & mask_].value, complete_value(t), std::memory_order_relaxed);
  }
  // Acquire: a `complete` answer makes the packet's results visible (the device decrements the
  // signal with the packet's release scope).
  [[nodiscard]] AQUEDUCT_ALWAYS_INLINE state of(std::uint64_t t) const noexcept {
    const std::int64_t v = sync::atomic_load(sig_[t & mask_].value, std::memory_order_acquire);
    if (v == pending_value(t)) return state::pending;
    return v >= complete_value(t) ? state::complete : state::untracked;
  }
  [[nodiscard]] bool complete(std::uint64_t t) const noexcept { return t < done() || of(t) == state::complete; }

  [[nodiscard]] std::uint64_t done() const noexcept { return sync::atomic_load(done_, std::memory_order_acquire); }
  [[nodiscard]] std::uint64_t free() const noexcept { return sync::atomic_load(free_, std::memory_order_acquire); }
  // The word ring claims are bounded by (ring::aql_queue_memory::reuse_bound).
  [[nodiscard]] const std::uint64_t* free_word() const noexcept { return &free_; }

  // Advances both frontiers over the packets below `launched` (the read index, acquire-loaded
  // by the caller: a tracked packet below it has its pending value visible). Returns done().
  std::uint64_t refresh(std::uint64_t launched) noexcept {
    std::uint64_t d = done();
    while (d < launched && of(d) == state::complete) ++d;
    std::uint64_t f = std::max(free(), d);
    while (f < launched && of(f) != state::pending) ++f;
    sync::atomic_fetch_max(done_, d, std::memory_order_acq_rel);
    sync::atomic_fetch_max(free_, f, std::memory_order_acq_rel);
    return done();
  }

 private:
  abi::amd_signal* sig_ = nullptr;
  std::uint64_t mask_ = 0;
  alignas(64) std::uint64_t done_ = 0;
  alignas(64) std::uint64_t free_ = 0;
};

}  // namespace aqueduct::runtime::detail
