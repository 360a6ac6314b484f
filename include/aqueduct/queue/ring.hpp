// aqueduct/queue/ring.hpp — reservation of ring slots against a consumer's read index, for one
// producer or many, without overwriting a slot the consumer has not finished (requirement 3).
//
// Layer: queue. Indexes are 64-bit and monotonic (slot = index % size, size a power of two), as
// the AQL write_dispatch_id / read_dispatch_id are (spec/packets.md §5.4–5.5). The consumer
// advances the read index with a release store AFTER it is done with a slot; the producer
// acquire-loads it before claiming, so `write + n - read <= size` proves the claimed slots are
// free and the consumer's last reads of them happen-before the producer's writes.
// - producer::single: the claim cursor is private; the shared write index is stored (release) at
//   commit, i.e. after the headers are published, and never decreases.
// - producer::multi: the claim IS a compare-exchange on the shared write index (checked against
//   the read index inside the loop), so a claimed index range belongs to exactly one producer.
//   Commit stores nothing: the header of each packet is its publication (aql_queue.hpp).
// Rollback of an abandoned claim succeeds only if nothing was claimed after it (single: the
// cursor is at its end; multi: a CAS from its end back to its start); otherwise the owner must
// fill the slots with no-op packets.
// Thread safety: single — one producer thread; multi — any number of threads. Both tolerate a
// concurrent consumer.
#pragma once

#include <aqueduct/core/assert.hpp>
#include <aqueduct/core/units.hpp>
#include <aqueduct/sync/atomics.hpp>

#include <algorithm>
#include <cstdint>

namespace aqueduct::ring {

enum class producer : std::uint8_t { single, multi };

// A claimed range of indexes [begin, begin + count).
struct ring_span {
  std::uint64_t begin = 0;
  std::uint32_t count = 0;
  [[nodiscard]] constexpr std::uint64_t end() const noexcept { return begin + count; }
};

template <producer P>
class ring_reserver {
 public:
  ring_reserver() = default;
  // `write_index` / `read_index` are shared words (e.g. amd_queue::write_dispatch_id and
  // read_dispatch_id); `slots` is a power of two.
  ring_reserver(std::uint64_t& write_index, const std::uint64_t& read_index, std::uint32_t slots) noexcept
      : write_(&write_index), read_(&read_index), slots_(slots) {
    AQUEDUCT_ASSERT(is_pow2(slots), "ring size must be a power of two");
    if constexpr (P == producer::single) {
      cursor_ = sync::atomic_load(write_index, std::memory_order_relaxed);
    }
    cached_read_ = sync::atomic_load(read_index, std::memory_order_acquire);
  }

  [[nodiscard]] std::uint32_t slots() const noexcept { return slots_; }
  [[nodiscard]] AQUEDUCT_ALWAYS_INLINE std::uint64_t read_index(std::memory_order o = std::memory_order_acquire) const noexcept {
    return sync::atomic_load(*read_, o);
  }
  [[nodiscard]] AQUEDUCT_ALWAYS_INLINE std::uint64_t write_index(std::memory_order o = std::memory_order_acquire) const noexcept {
    return sync::atomic_load(*write_, o);
  }

  // Claim `n` slots if they are free now. Never blocks.
  AQUEDUCT_ALWAYS_INLINE bool try_claim(std::uint32_t n, ring_span& out) noexcept {
    AQUEDUCT_ASSERT(n >= 1 && n <= slots_, "reservation larger than the ring");
    if constexpr (P == producer::single) {
      if (cursor_ + n - cached_read_ > slots_) {
        cached_read_ = read_index(std::memory_order_acquire);
        if (cursor_ + n - cached_read_ > slots_) return false;
      }
      out = {cursor_, n};
      cursor_ += n;
      return true;
    } else {
      std::uint64_t w = sync::atomic_load(*write_, std::memory_order_relaxed);
      for (;;) {
        // Re-read the read index each round: it only grows, so a stale value is conservative.
        const std::uint64_t r = read_index(std::memory_order_acquire);
        if (w < r) {  // `w` is stale: others claimed and the consumer caught up since we read it
          w = sync::atomic_load(*write_, std::memory_order_relaxed);  // after the acquire: >= r
          AQUEDUCT_VERIFY(w >= r, "read index passed the write index: consumer or producer bug");
          continue;
        }
        if (w + n - r > slots_) return false;
        if (sync::atomic_compare_exchange(*write_, w, w + n, std::memory_order_acq_rel, std::memory_order_relaxed)) {
          out = {w, n};
          return true;
        }
      }
    }
  }

  // Give back an abandoned, unpublished claim if nothing was claimed after it.
  bool try_rollback(ring_span s) noexcept {
    if constexpr (P == producer::single) {
      if (s.end() != cursor_) return false;
      cursor_ = s.begin;
      return true;
    } else {
      // Release: the next producer to claim these slots (its CAS acquires) must see our stray
      // body writes as happening before its own.
      std::uint64_t expected = s.end();
      return sync::atomic_compare_exchange(*write_, expected, s.begin, std::memory_order_release,
                                           std::memory_order_relaxed);
    }
  }

  // After the span's headers are published. Single: store the write index (release; it never
  // decreases, even when spans are committed out of order: the new value is the larger of the
  // span's end and the word itself, which only this producer writes — read back rather than
  // mirrored in a member, one instruction less in a user's own function, issue 11). Multi:
  // nothing to store.
  // Returns the published end (single) or the span's end (multi).
  AQUEDUCT_ALWAYS_INLINE std::uint64_t commit(ring_span s) noexcept {
    if constexpr (P == producer::single) {
      const std::uint64_t cur = sync::atomic_load(*write_, std::memory_order_relaxed);
      const std::uint64_t end = s.end() > cur ? s.end() : cur;
      sync::atomic_store(*write_, end, std::memory_order_release);
      return end;
    } else {
      return s.end();
    }
  }
  // commit() for a span claimed by this same call with nothing claimed after it (aql_queue's
  // submit, submit_batch of a span, try_submit_in_place): its end is the producer's cursor, so no
  // published end can exceed it and the write index is stored without reading it back first
  // (three instructions a packet less than commit(); issue 11).
  AQUEDUCT_ALWAYS_INLINE std::uint64_t commit_newest(ring_span s) noexcept {
    if constexpr (P == producer::single) {
      AQUEDUCT_ASSERT(s.end() == cursor_, "commit_newest of a span that is not the newest claim");
      sync::atomic_store(*write_, s.end(), std::memory_order_release);
    }
    return s.end();
  }

 private:
  std::uint64_t* write_ = nullptr;
  const std::uint64_t* read_ = nullptr;
  std::uint32_t slots_ = 0;
  std::uint64_t cached_read_ = 0;
  // single producer only
  std::uint64_t cursor_ = 0;
};

}  // namespace aqueduct::ring
