// aqueduct/queue/aql_queue.hpp — typed AQL queues (single- or multi-producer) over caller-supplied
// memory: an abi::amd_queue, a ring of 64-byte slots and a doorbell.
//
// Layer: queue. Memory comes from the caller (kfd/ for a real queue, the emulator for an emulated
// one, a test for a fake): this type only reserves, writes and publishes. A submission is
// reserve → write bodies → publish (the ONE place that orders stores: `reservation::publish`) →
// ring the doorbell once. A full ring is detected before writing (requirement 3): reservation
// waits for the packet processor's read index, or fails with errc::queue_full and a decoded
// description of the stalled queue. Abandoned reservations are rolled back when nothing was
// reserved after them, else turned into no-op packets (queue/aql_packets.hpp `nop_packet`).
// Multi-producer protocol (docs/queues.md):
//   claim: CAS on amd_queue::write_dispatch_id, bounded by read_dispatch_id (queue/ring.hpp);
//   publish: each producer release-stores its own headers, in order, whenever it is done — a
//     packet processor consumes strictly in index order and waits at an INVALID header, so
//     producers may finish out of order;
//   doorbell: raise a shared "highest published index" (an atomic max) and ring it; re-ring
//     while it grew meanwhile. The doorbell's final value is the highest published index (it may dip
//     transiently when two producers race, which only delays a wake-up, never loses one).
// Hot path (reserve with room + write + publish): no allocation, no system call, no lock, no
// virtual call (tests/queue/hot_path.cpp counts).
// Thread safety: producer::single — one thread submits; producer::multi — any threads. A
// reservation is used by one thread. The queue must not move while reservations are alive.
#pragma once

#include <aqueduct/abi/amd_queue.hpp>
#include <aqueduct/abi/aql.hpp>
#include <aqueduct/core/result.hpp>
#include <aqueduct/queue/aql_packets.hpp>
#include <aqueduct/queue/doorbell.hpp>
#include <aqueduct/queue/ring.hpp>
#include <aqueduct/sync/atomics.hpp>
#include <aqueduct/sync/wait.hpp>

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <span>
#include <string>
#include <utility>

namespace aqueduct::ring {

// The memory a queue runs on; all of it outlives the queue.
struct aql_queue_memory {
  abi::amd_queue* descriptor = nullptr;  // write_dispatch_id / read_dispatch_id live here
  abi::aql_slot* ring = nullptr;         // `size` slots, 64-byte aligned
  std::uint32_t size = 0;                // in packets, a power of two
};

namespace detail {
// dword 0 of a slot, the word the packet processor polls.
inline std::uint32_t& header_word(abi::aql_slot& s) noexcept { return *reinterpret_cast<std::uint32_t*>(s.bytes); }
inline constexpr std::uint32_t invalid_header_dword = static_cast<std::uint32_t>(abi::packet_type::invalid);

// Bytes 4..63 of `packet` into the slot with plain stores (one u32, then seven u64). Word by word
// on purpose: GCC expands a fixed-size memcpy inline WITHOUT ThreadSanitizer instrumentation, so
// a body written that way is invisible to TSan and a body-after-header bug would go unreported.
inline void write_body(abi::aql_slot& s, const void* packet) noexcept {
  const auto* src = static_cast<const unsigned char*>(packet);
  std::uint32_t w;
  std::memcpy(&w, src + 4, 4);
  std::memcpy(s.bytes + 4, &w, 4);
  for (std::size_t off = 8; off < abi::aql_packet_size; off += 8) {
    std::uint64_t q;
    std::memcpy(&q, src + off, 8);
    std::memcpy(s.bytes + off, &q, 8);
  }
}
}  // namespace detail

template <producer P, doorbell Doorbell = doorbell_ref>
class aql_queue {
 public:
  // Packets one reservation may hold (their header dwords wait in the reservation until publish).
  static constexpr std::uint32_t max_batch = 64;
  static constexpr producer producer_model = P;

  // If `initialize`, every slot's header is set INVALID, both indexes to 0 and the hsa_queue
  // fields (type, features, base_address, size) are filled — do this before a processor
  // attaches. Otherwise the memory already holds a consistent queue (headers INVALID where
  // unpublished, read <= write).
  aql_queue(aql_queue_memory mem, Doorbell db, bool initialize = true) noexcept : mem_(mem), doorbell_(std::move(db)) {
    AQUEDUCT_ASSERT(mem.descriptor && mem.ring, "aql_queue: null memory");
    AQUEDUCT_ASSERT(is_pow2(mem.size) && mem.size >= 2, "aql_queue: size must be a power of two >= 2");
    AQUEDUCT_ASSERT(reinterpret_cast<std::uintptr_t>(mem.ring) % 64 == 0, "aql_queue: ring must be 64-byte aligned");
    if (initialize) {
      for (std::uint32_t i = 0; i < mem.size; ++i)
        sync::atomic_store(detail::header_word(mem.ring[i]), detail::invalid_header_dword, std::memory_order_relaxed);
      auto& hq = mem.descriptor->hsa;
      hq.type = static_cast<std::uint32_t>(P == producer::single ? abi::hsa_queue_type::single : abi::hsa_queue_type::multi);
      hq.features = abi::hsa_queue_feature::kernel_dispatch;
      hq.base_address = reinterpret_cast<std::uintptr_t>(mem.ring);
      hq.size = mem.size;
      sync::atomic_store(mem.descriptor->read_dispatch_id, 0, std::memory_order_release);
      sync::atomic_store(mem.descriptor->write_dispatch_id, 0, std::memory_order_release);
    }
    reserver_ = ring_reserver<P>(mem.descriptor->write_dispatch_id, mem.descriptor->read_dispatch_id, mem.size);
    published_end_ = sync::atomic_load(mem.descriptor->write_dispatch_id, std::memory_order_relaxed);
  }
  aql_queue(const aql_queue&) = delete;
  aql_queue& operator=(const aql_queue&) = delete;

  // ---- reservation ------------------------------------------------------------------------------
  class [[nodiscard]] reservation {
   public:
    reservation(reservation&& o) noexcept
        : q_(std::exchange(o.q_, nullptr)), span_(o.span_), written_(o.written_) {
      // Only the written entries hold values; the rest are deliberately left uninitialized.
      for (std::uint32_t i = 0; i < span_.count; ++i)
        if (written_ & (std::uint64_t{1} << i)) headers_[i] = o.headers_[i];
    }
    reservation& operator=(reservation&&) = delete;
    ~reservation() { abandon(); }

    [[nodiscard]] std::uint32_t size() const noexcept { return span_.count; }
    // The packet index (dispatch id) of entry i.
    [[nodiscard]] std::uint64_t index(std::uint32_t i = 0) const noexcept { return span_.begin + i; }

    // Write packet i's body (bytes 4..63) now; its header dword is kept for publish().
    template <aql_packet Pk>
    void write(std::uint32_t i, const Pk& packet) noexcept {
      AQUEDUCT_ASSERT(q_ && i < span_.count, "reservation: entry out of range");
      abi::aql_slot& s = q_->slot(span_.begin + i);
      AQUEDUCT_ASSERT(abi::header_type(static_cast<std::uint16_t>(
                          sync::atomic_load(detail::header_word(s), std::memory_order_relaxed))) == abi::packet_type::invalid,
                      "reserved slot still holds a valid packet: the processor did not invalidate it");
      detail::write_body(s, &packet);
      headers_[i] = header_dword(packet);
      written_ |= std::uint64_t{1} << i;
    }

    // THE publication order of aqueduct's AQL path (requirements 1 and 9), for every packet:
    //   1. bodies: plain stores, done by write() — all of them, for a batch;
    //   2. headers: header|setup as ONE u32 release store per packet, in index order, so a
    //      processor that acquire-loads a valid header sees the whole body (it may consume it
    //      at once, before any doorbell);
    //   3. write index (single producer): release store of the new end, never decreasing
    //      (multi-producer: already advanced by the claim's CAS);
    //   4. doorbell: one release store of the last published index per batch.
    void publish() noexcept {
      AQUEDUCT_ASSERT(q_, "reservation already published or abandoned");
      AQUEDUCT_ASSERT(written_ == full_mask(), "publish before every entry was written");
      for (std::uint32_t i = 0; i < span_.count; ++i)
        sync::atomic_store(detail::header_word(q_->slot(span_.begin + i)), headers_[i], std::memory_order_release);
      std::exchange(q_, nullptr)->committed(span_);
    }

    // Give the slots back (rollback if nothing was reserved after them) or fill them with no-op
    // packets and publish those. Called by the destructor of an unpublished reservation.
    void abandon() noexcept {
      if (!q_) return;
      if (q_->reserver_.try_rollback(span_)) {
        q_ = nullptr;
        return;
      }
      const auto nop = nop_packet();
      for (std::uint32_t i = 0; i < span_.count; ++i) {
        abi::aql_slot& s = q_->slot(span_.begin + i);
        detail::write_body(s, &nop);
        headers_[i] = header_dword(nop);
      }
      written_ = full_mask();
      publish();
    }

   private:
    friend class aql_queue;
    reservation(aql_queue* q, ring_span s) noexcept : q_(q), span_(s) {}
    [[nodiscard]] std::uint64_t full_mask() const noexcept {
      return span_.count == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << span_.count) - 1;
    }
    aql_queue* q_ = nullptr;
    ring_span span_{};
    std::uint64_t written_ = 0;
    // Header dwords of written entries (bit i of written_). Not zero-initialized: clearing 256
    // bytes on every reservation was ~35% of a single-packet publish (bench/dispatch,
    // docs/benchmarks.md); publish() reads only entries write() or abandon() filled.
    std::array<std::uint32_t, max_batch> headers_;
  };

  // Reserve `n` consecutive slots. If the ring is full, wait up to `timeout` for the processor
  // (spin briefly, then sleep with back-off); then errc::queue_full with the queue described.
  result<reservation> try_reserve(std::uint32_t n, sync::nanoseconds timeout = sync::nanoseconds::zero()) {
    AQUEDUCT_ASSERT(n >= 1 && n <= max_batch && n <= mem_.size, "reservation size out of range");
    ring_span s;
    if (AQUEDUCT_LIKELY(reserver_.try_claim(n, s))) return reservation(this, s);
    return wait_and_reserve(n, timeout);
  }
  reservation reserve(std::uint32_t n, sync::nanoseconds timeout = sync::infinite) {
    return try_reserve(n, timeout).value();
  }

  // One packet: reserve, write, publish, ring. Returns its packet index.
  template <aql_packet Pk>
  result<std::uint64_t> try_submit(const Pk& packet, sync::nanoseconds timeout = sync::nanoseconds::zero()) {
    AQUEDUCT_TRY(auto r, try_reserve(1, timeout));
    r.write(0, packet);
    r.publish();
    return r.index(0);
  }
  template <aql_packet Pk>
  std::uint64_t submit(const Pk& packet, sync::nanoseconds timeout = sync::infinite) {
    return try_submit(packet, timeout).value();
  }

  // A batch (<= max_batch packets): every body, then every header in order, one doorbell.
  // Returns the index of the first packet.
  template <aql_packet Pk>
  result<std::uint64_t> try_submit_batch(std::span<const Pk> packets, sync::nanoseconds timeout = sync::nanoseconds::zero()) {
    AQUEDUCT_TRY(auto r, try_reserve(static_cast<std::uint32_t>(packets.size()), timeout));
    for (std::uint32_t i = 0; i < packets.size(); ++i) r.write(i, packets[i]);
    r.publish();
    return r.index(0);
  }

  // ---- state and diagnostics -------------------------------------------------------------------
  [[nodiscard]] std::uint32_t size() const noexcept { return mem_.size; }
  [[nodiscard]] std::uint64_t read_index() const noexcept { return reserver_.read_index(std::memory_order_acquire); }
  [[nodiscard]] std::uint64_t write_index() const noexcept { return reserver_.write_index(std::memory_order_acquire); }
  [[nodiscard]] abi::amd_queue* descriptor() const noexcept { return mem_.descriptor; }
  [[nodiscard]] abi::aql_slot* ring() const noexcept { return mem_.ring; }
  [[nodiscard]] Doorbell& get_doorbell() noexcept { return doorbell_; }

  // "AQL queue (multi-producer, 16 slots, ring 0x...): read 5, write 21; packet 5 (slot 5):
  // KERNEL_DISPATCH ..." — the stalled packet is the one at the read index.
  void describe(std::string& out) const {
    const std::uint64_t r = read_index(), w = write_index();
    char buf[200];
    std::snprintf(buf, sizeof buf, "AQL queue (%s-producer, %u slots, ring 0x%llx): read_dispatch_id %llu, write_dispatch_id %llu",
                  P == producer::single ? "single" : "multi", mem_.size,
                  static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(mem_.ring)),
                  static_cast<unsigned long long>(r), static_cast<unsigned long long>(w));
    out += buf;
    if (r == w) {
      out += "; empty";
      return;
    }
    // Copy the slot word by word with atomic loads: the processor may be touching its header.
    abi::aql_slot copy;
    auto* words = reinterpret_cast<std::uint32_t*>(const_cast<abi::aql_slot&>(slot(r)).bytes);
    for (std::size_t i = 0; i < 16; ++i) {
      const std::uint32_t v = sync::atomic_load(words[i], std::memory_order_acquire);
      std::memcpy(copy.bytes + 4 * i, &v, 4);
    }
    std::snprintf(buf, sizeof buf, "; packet %llu (slot %llu): ", static_cast<unsigned long long>(r),
                  static_cast<unsigned long long>(r & (mem_.size - 1)));
    out += buf;
    describe_packet(copy, out);
  }
  [[nodiscard]] sync::diagnostics diagnostics() const noexcept { return sync::diagnostics(*this); }

 private:
  [[nodiscard]] abi::aql_slot& slot(std::uint64_t index) const noexcept { return mem_.ring[index & (mem_.size - 1)]; }

  // Steps 3 and 4 of reservation::publish.
  void committed(ring_span s) noexcept {
    reserver_.commit(s);
    if constexpr (P == producer::single) {
      if (s.end() > published_end_) published_end_ = s.end();
      doorbell_.ring(published_end_ - 1);
    } else {
      // published_end_ is the highest published index + 1, changed only by RMWs, so each one
      // synchronizes with the next. Raise it, ring, then re-read it with an RMW: if it grew, the
      // producer that raised it may have rung before our (lower) store landed — ring again.
      // Whoever performed the last raise rings after every store that preceded its raise, so
      // the final doorbell value is the highest published index.
      std::uint64_t v = sync::atomic_fetch_max(published_end_, s.end(), std::memory_order_acq_rel);
      v = v > s.end() ? v : s.end();
      for (;;) {
        doorbell_.ring(v - 1);
        const std::uint64_t now = sync::atomic_fetch_add(published_end_, std::uint64_t{0}, std::memory_order_acq_rel);
        if (now <= v) break;
        v = now;
      }
    }
  }

  AQUEDUCT_NOINLINE result<reservation> wait_and_reserve(std::uint32_t n, sync::nanoseconds timeout) {
    ring_span s;
    if (timeout > sync::nanoseconds::zero()) {
      const auto start = sync::clock::now();
      const auto deadline = sync::deadline_after(timeout);
      sync::backoff bo;
      while (sync::clock::now() < deadline) {
        bo.pause();
        if (reserver_.try_claim(n, s)) return reservation(this, s);
      }
      if (reserver_.try_claim(n, s)) return reservation(this, s);
      return full(n, sync::clock::now() - start);
    }
    return full(n, sync::nanoseconds::zero());
  }

  failure full(std::uint32_t n, sync::nanoseconds waited) const {
    char buf[120];
    std::snprintf(buf, sizeof buf, "no %u free slot(s) after %.3f ms; ", n,
                  std::chrono::duration<double, std::milli>(waited).count());
    std::string d = buf;
    describe(d);
    return failure(errc::queue_full, std::move(d));
  }

  aql_queue_memory mem_;
  Doorbell doorbell_;
  ring_reserver<P> reserver_;
  // single: highest published end (private). multi: shared, accessed with atomic_ref.
  alignas(64) std::uint64_t published_end_ = 0;
};

template <class Doorbell = doorbell_ref>
using aql_queue_sp = aql_queue<producer::single, Doorbell>;
template <class Doorbell = doorbell_ref>
using aql_queue_mp = aql_queue<producer::multi, Doorbell>;

}  // namespace aqueduct::ring
