// aqueduct/queue/doorbell.hpp — the `doorbell` concept and `doorbell_ref`, the 64-bit doorbell a
// producer rings after publishing packets.
//
// Layer: queue. An AQL doorbell is a 64-bit word in the doorbell page KFD maps for the process
// (spec/kfd.md, doorbells); the producer stores the index of the LAST packet it published (the
// HSA convention: `hsa_signal_store_screlease(q->doorbell_signal, index)` after writing packet
// `index`; ringing the first index of a batch hangs — spec/peers.md §3 item 11). The store is
// atomic and has release order (requirement 9). Tests and the emulator supply their own models
// (counting, or watching) of the concept; the queue is a template over it, so ringing costs one
// store and no virtual call.
// Thread safety: `doorbell_ref::ring` is one atomic store; any thread may ring.
#pragma once

#include <aqueduct/sync/atomics.hpp>

#include <concepts>
#include <cstdint>

namespace aqueduct::ring {

template <class D>
concept doorbell = std::copy_constructible<D> && requires(D& d, std::uint64_t last_index) {
  { d.ring(last_index) } noexcept;
};

// A doorbell in memory (the mmapped KFD doorbell page, or an emulator's watched word).
class doorbell_ref {
 public:
  constexpr doorbell_ref() noexcept = default;
  constexpr explicit doorbell_ref(std::uint64_t* word) noexcept : word_(word) {}
  void ring(std::uint64_t last_index) noexcept { sync::atomic_store(*word_, last_index, std::memory_order_release); }
  [[nodiscard]] std::uint64_t* get() const noexcept { return word_; }

 private:
  std::uint64_t* word_ = nullptr;
};
static_assert(doorbell<doorbell_ref>);

}  // namespace aqueduct::ring
