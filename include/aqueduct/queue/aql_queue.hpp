// aqueduct/queue/aql_queue.hpp — typed AQL queues (single- or multi-producer) over caller-supplied
// memory: an abi::amd_queue, a ring of 64-byte slots and a doorbell.
//
// Layer: queue. Memory comes from the caller (kfd/ for a real queue, the emulator for an emulated
// one, a test for a fake): this type only reserves, writes and publishes. A submission is
// reserve → write (body, then header|setup, per packet; entry 0's header held back) → publish
// (entry 0's header, write index, doorbell) — see `reservation`. A full ring is detected before
// writing (requirement 3): reservation waits for the packet processor's read index (the one wait
// loop, sync::wait_until, backing off), or fails with errc::queue_full and a decoded description
// of the stalled queue — or, once the processor stopped (aql_queue_memory::stopped), with that
// failure. Abandoned reservations are
// rolled back when nothing was reserved after them, else turned into no-op packets
// (queue/aql_packets.hpp `nop_packet`).
// Multi-producer protocol (docs/queues.md):
//   claim: CAS on amd_queue::write_dispatch_id, bounded by read_dispatch_id (queue/ring.hpp);
//   publish: each producer release-stores its own headers whenever it is done — a packet
//     processor consumes strictly in index order and waits at an INVALID header, so producers
//     may finish out of order;
//   doorbell: each producer rings the last index of its own claim (one release store, as the
//     HSA sequence and ROCr on gfx9+: the CP goes by the headers, so the order of the producers'
//     doorbell stores does not matter).
// The cost of each step is measured against the HSA sequences in bench/ (aqueduct-bench).
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
#include <bit>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>

namespace aqueduct::ring {

// The memory a queue runs on; all of it outlives the queue.
struct aql_queue_memory {
  abi::amd_queue* descriptor = nullptr;  // write_dispatch_id / read_dispatch_id live here
  abi::aql_slot* ring = nullptr;         // `size` slots, 64-byte aligned
  std::uint32_t size = 0;                // in packets, a power of two
  // What bounds a claim: slot i may be written for packet i + size once *reuse_bound > i. Null:
  // the packet processor's read_dispatch_id (the slot is free once its packet is launched). A
  // runtime that keeps per-slot data a packet uses until it COMPLETES (kernargs, a completion
  // signal) passes its own completion frontier instead, and `refresh` — called on the cold path
  // when a claim finds the ring full by that bound, before it retries — brings it up to date.
  const std::uint64_t* reuse_bound = nullptr;
  void (*refresh)(void* context) noexcept = nullptr;
  void* refresh_context = nullptr;
  // A wait for room reports the packet processor's stop (none: never stopped).
  sync::stop_check stopped{};
};

namespace detail {
// dword 0 of a slot, the word the packet processor polls.
inline std::uint32_t& header_word(abi::aql_slot& s) noexcept { return *reinterpret_cast<std::uint32_t*>(s.bytes); }
inline constexpr std::uint32_t invalid_header_dword = static_cast<std::uint32_t>(abi::packet_type::invalid);

// Bytes 4..63 of `packet` into the slot with plain stores (one u32, then seven u64). Word by word
// on purpose: GCC expands a fixed-size memcpy inline WITHOUT ThreadSanitizer instrumentation, so
// a body written that way is invisible to TSan and a body-after-header bug would go unreported.
// The words one by one, unrolled: GCC keeps a seven-step loop otherwise, whose own counting was
// ~3 of every 5 instructions of the copy (a replay copies each prebuilt packet through here).
AQUEDUCT_ALWAYS_INLINE void copy_word(unsigned char* d, const unsigned char* s) noexcept {
  std::uint64_t q;
  std::memcpy(&q, s, 8);
  std::memcpy(d, &q, 8);
}
template <std::size_t... I>
AQUEDUCT_ALWAYS_INLINE void copy_words(unsigned char* d, const unsigned char* s, std::index_sequence<I...>) noexcept {
  (copy_word(d + 8 * I, s + 8 * I), ...);
}
template <class Pk>
AQUEDUCT_ALWAYS_INLINE void write_body(abi::aql_slot& s, const Pk& packet) noexcept {
  const auto* src = reinterpret_cast<const unsigned char*>(&packet);
  std::uint32_t w;
  std::memcpy(&w, src + 4, 4);
  std::memcpy(s.bytes + 4, &w, 4);
  copy_words(s.bytes + 8, src + 8, std::make_index_sequence<(abi::aql_packet_size - 8) / 8>{});
}
// A kernel dispatch field by field, as hsa.h's users fill a slot: when the packet was just built
// by make_packet, the compiler keeps its fields in registers (or folds them to constants) and
// stores them straight into the slot — no 64-byte stack packet written and read back
// (issue 11: that round trip stalled store forwarding).
AQUEDUCT_ALWAYS_INLINE void write_body(abi::aql_slot& s, const abi::kernel_dispatch_packet& p) noexcept {
  auto* d = reinterpret_cast<abi::kernel_dispatch_packet*>(s.bytes);
  d->workgroup_size_x = p.workgroup_size_x;
  d->workgroup_size_y = p.workgroup_size_y;
  d->workgroup_size_z = p.workgroup_size_z;
  d->reserved0 = p.reserved0;
  d->grid_size_x = p.grid_size_x;
  d->grid_size_y = p.grid_size_y;
  d->grid_size_z = p.grid_size_z;
  d->private_segment_size = p.private_segment_size;
  d->group_segment_size = p.group_segment_size;
  d->kernel_object = p.kernel_object;
  d->kernarg_address = p.kernarg_address;
  d->reserved2 = p.reserved2;
  d->completion_signal = p.completion_signal;
}
// The same body as the eight 64-bit words make_packet builds it (hsa.h field order,
// little-endian): the upper half of word 0 (bytes 4..7), then words 1..7. Used by
// reservation::write, whose packet is usually a make_packet value just built: stored straight
// from make_packet's words, where field by field GCC split them into 16-bit pieces with shifts
// and masks (issue 11: 19.1 -> 17.1 instructions a packet in batches of 512, 41 -> 34 in a
// user's own translation unit at batch 8). Not for packets read from memory (prebuilt arrays:
// try_submit_batch), which field by field cost fewer instructions (22 against 30 a packet).
AQUEDUCT_ALWAYS_INLINE void write_body_words(abi::aql_slot& s, const abi::kernel_dispatch_packet& p) noexcept {
  const auto w = std::bit_cast<std::array<std::uint64_t, 8>>(p);
  auto* d = reinterpret_cast<abi::kernel_dispatch_packet*>(s.bytes);
  const auto lo = static_cast<std::uint32_t>(w[0] >> 32);
  std::memcpy(&d->workgroup_size_x, &lo, 4);
  std::memcpy(&d->workgroup_size_z, &w[1], 8);
  std::memcpy(&d->grid_size_y, &w[2], 8);
  std::memcpy(&d->private_segment_size, &w[3], 8);
  d->kernel_object = w[4];
  d->kernarg_address = w[5];
  d->reserved2 = w[6];
  d->completion_signal = w[7];
}
template <class Pk>
AQUEDUCT_ALWAYS_INLINE void write_body_words(abi::aql_slot& s, const Pk& packet) noexcept {
  write_body(s, packet);
}
template <class Barrier>
  requires std::is_same_v<Barrier, abi::barrier_and_packet> || std::is_same_v<Barrier, abi::barrier_or_packet>
AQUEDUCT_ALWAYS_INLINE void write_body(abi::aql_slot& s, const Barrier& p) noexcept {
  auto* d = reinterpret_cast<Barrier*>(s.bytes);  // reserved0 is dword 0's upper half: published with the header
  d->reserved1 = p.reserved1;
  for (std::size_t i = 0; i < 5; ++i) d->dep_signal[i] = p.dep_signal[i];
  d->reserved2 = p.reserved2;
  d->completion_signal = p.completion_signal;
}
}  // namespace detail

template <producer P, doorbell Doorbell = doorbell_ref>
class aql_queue {
 public:
  // Packets one reservation or batch may hold (and at most the ring's size). Nothing per entry
  // is held back until publish(), so this is only a sanity bound.
  static constexpr std::uint32_t max_batch = 1u << 16;
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
    reserver_ = ring_reserver<P>(mem.descriptor->write_dispatch_id,
                                 mem.reuse_bound ? *mem.reuse_bound : mem.descriptor->read_dispatch_id, mem.size);
  }
  aql_queue(const aql_queue&) = delete;
  aql_queue& operator=(const aql_queue&) = delete;

  // ---- reservation ------------------------------------------------------------------------------
  // Entry 0 of a reservation is its gate: its header dword waits in the reservation until
  // publish(), so the slot at index(0) stays INVALID and a packet processor — which consumes
  // strictly in index order and stops at an INVALID header — cannot reach entries 1..n-1 before
  // publish(). Those entries are therefore written like the HSA sequence writes a slot: body,
  // then ONE release store of header|setup, at write() time, with nothing held back. publish()
  // release-stores entry 0's header (which makes the whole reservation visible), then stores the
  // write index and rings the doorbell. A reservation is five words: nothing to copy when it is
  // moved out of a result, nothing to zero (issue 11).
  class [[nodiscard]] reservation {
   public:
    AQUEDUCT_ALWAYS_INLINE reservation(reservation&& o) noexcept
        : q_(std::exchange(o.q_, nullptr)), ring_(o.ring_), begin_(o.begin_), mask_(o.mask_), count_(o.count_), gate_(o.gate_),
          written_(o.written_) {}
    reservation& operator=(reservation&&) = delete;
    // (The cold paths take the reservation's values, not `this`: an object whose address never
    // escapes stays in registers once inlined.)
    AQUEDUCT_ALWAYS_INLINE ~reservation() {
      if (q_) [[unlikely]] aql_queue::abandon(q_, ring_span{begin_, count_});
    }

    [[nodiscard]] std::uint32_t size() const noexcept { return count_; }
    // The packet index (dispatch id) of entry i.
    [[nodiscard]] std::uint64_t index(std::uint32_t i = 0) const noexcept { return begin_ + i; }

    // Write packet i: its body (bytes 4..63) now; its header|setup dword now for i > 0 (gated by
    // entry 0), at publish() for i == 0.
    template <aql_packet Pk>
    AQUEDUCT_ALWAYS_INLINE void write(std::uint32_t i, const Pk& packet) noexcept {
      AQUEDUCT_ASSERT(q_ && i < count_, "reservation: entry out of range");
      abi::aql_slot& s = ring_[(begin_ + i) & mask_];
      AQUEDUCT_ASSERT(abi::header_type(static_cast<std::uint16_t>(
                          sync::atomic_load(detail::header_word(s), std::memory_order_relaxed))) == abi::packet_type::invalid,
                      "reserved slot still holds a valid packet: the processor did not invalidate it, or the entry was written twice");
      detail::write_body_words(s, packet);
      if (i == 0) gate_ = header_dword(packet);
      else sync::atomic_store(detail::header_word(s), header_dword(packet), std::memory_order_release);
      ++written_;
    }
    // A kernel dispatch described in place: the same as write(i, make_packet(d)).
    AQUEDUCT_ALWAYS_INLINE void write(std::uint32_t i, const kernel_dispatch& d) noexcept { write(i, make_packet(d)); }

    // THE publication order of aqueduct's AQL path (requirements 1 and 9):
    //   1. bodies: plain stores, by write();
    //   2. headers: header|setup as ONE u32 release store per packet, after its own body —
    //      entries 1..n-1 at write(), entry 0 (the gate) here, last; a processor that
    //      acquire-loads a valid header sees the whole body, and it reaches entries 1..n-1 only
    //      through entry 0, so it sees them all complete;
    //   3. write index (single producer): release store of the new end, never decreasing
    //      (multi-producer: already advanced by the claim's CAS);
    //   4. doorbell: one release store of the last published index per reservation.
    AQUEDUCT_ALWAYS_INLINE void publish() noexcept {
      AQUEDUCT_ASSERT(q_, "reservation already published or abandoned");
      AQUEDUCT_ASSERT(written_ >= count_, "publish before every entry was written");
      sync::atomic_store(detail::header_word(ring_[begin_ & mask_]), gate_, std::memory_order_release);
      std::exchange(q_, nullptr)->committed(ring_span{begin_, count_});
    }

    // Give the slots back (rollback if nothing was reserved after them) or fill them with no-op
    // packets and publish those. Called by the destructor of an unpublished reservation.
    void abandon() noexcept {
      if (q_) aql_queue::abandon(std::exchange(q_, nullptr), ring_span{begin_, count_});
    }

   private:
    friend class aql_queue;
    AQUEDUCT_ALWAYS_INLINE reservation(aql_queue* q, ring_span s) noexcept
        : q_(q), ring_(q->mem_.ring), begin_(s.begin), mask_(q->mem_.size - 1), count_(s.count) {}

    aql_queue* q_ = nullptr;
    // The ring's base and index mask, copied from the queue: write() stores through a typed
    // pointer that may alias the queue's own fields, so read through q_ they were loaded again
    // after every packet (issue 11); a reservation's own copies stay in registers.
    abi::aql_slot* ring_ = nullptr;
    std::uint64_t begin_ = 0;
    std::uint32_t mask_ = 0;
    std::uint32_t count_ = 0;
    std::uint32_t gate_ = 0;     // entry 0's header dword, stored by publish()
    std::uint32_t written_ = 0;  // write() calls (checked by publish() in debug builds)
  };

  // Reserve `n` consecutive slots. If the ring is full, wait up to `timeout` for the processor
  // (backing off: pauses, yields, then sleeps of up to 1 ms); then errc::queue_full with the
  // queue described, or the processor's stop (aql_queue_memory::stopped) as soon as it stopped.
  AQUEDUCT_ALWAYS_INLINE result<reservation> try_reserve(std::uint32_t n, sync::nanoseconds timeout = sync::nanoseconds::zero()) {
    AQUEDUCT_ASSERT(n >= 1 && n <= max_batch && n <= mem_.size, "reservation size out of range");
    ring_span s;
    if (!reserver_.try_claim(n, s)) [[unlikely]] {
      auto w = wait_and_claim(n, timeout);
      if (!w) return std::move(w).get_failure();
      s = *w;
    }
    return reservation(this, s);  // one construction after the paths merge: it stays in registers
  }
  reservation reserve(std::uint32_t n, sync::nanoseconds timeout = sync::infinite) {
    return try_reserve(n, timeout).value();
  }

  // One packet: claim, body, header, write index, doorbell — no reservation object at all.
  // Returns its packet index.
  template <aql_packet Pk>
  AQUEDUCT_ALWAYS_INLINE result<std::uint64_t> try_submit(const Pk& packet, sync::nanoseconds timeout = sync::nanoseconds::zero()) {
    ring_span s;
    if (AQUEDUCT_LIKELY(reserver_.try_claim(1, s))) [[likely]] {
      put(s.begin, packet);
      committed_newest(s);
      return s.begin;
    }
    AQUEDUCT_TRY(s, wait_and_claim(1, timeout));
    put(s.begin, packet);
    committed_newest(s);
    return s.begin;
  }
  template <aql_packet Pk>
  AQUEDUCT_ALWAYS_INLINE std::uint64_t submit(const Pk& packet, sync::nanoseconds timeout = sync::infinite) {
    ring_span s;
    if (AQUEDUCT_LIKELY(reserver_.try_claim(1, s))) [[likely]] {
      put<body_store::words>(s.begin, packet);
      committed_newest(s);
      return s.begin;
    }
    return try_submit(packet, timeout).value();
  }

  // One packet whose contents depend on its index (e.g. the per-slot kernarg area of that index):
  // claim one slot if one is free NOW, `fill(index)` returns the packet (it may write per-slot
  // data first), then body, header, write index, doorbell — what try_submit does, with the index
  // known before the packet is made. errc::queue_full (nothing claimed, `fill` not called) when
  // the ring is full: the caller decides how to wait.
  template <class Fill>
  AQUEDUCT_ALWAYS_INLINE result<std::uint64_t> try_submit_indexed(Fill&& fill) {
    ring_span s;
    if (!reserver_.try_claim(1, s)) [[unlikely]]
      if (!refreshed_claim(1, s)) return full(1, sync::nanoseconds::zero());
    put(s.begin, fill(s.begin));
    committed(s);
    return s.begin;
  }

  // One packet written straight into its slot: `fill(index, slot)` stores bytes 4..63 of the
  // slot (plain stores) and returns the header|setup dword, which is then release-stored; then
  // the write index and the doorbell. For a caller whose packet is a few precomputed words (the
  // runtime's prepared dispatches): no packet value is built and taken apart again.
  // Returns false (nothing claimed, `fill` not called, no failure built: the caller waits as it
  // chooses, e.g. for full_failure) when no slot is free now; else `index` is the packet's.
  // `fill` must not claim slots of this queue (the write index is stored as the claim's end).
  template <class Fill>
  AQUEDUCT_ALWAYS_INLINE bool try_submit_in_place(Fill&& fill, std::uint64_t& index) {
    ring_span s;
    if (!reserver_.try_claim(1, s)) [[unlikely]] {
      const auto again = refreshed_claim_one();  // (by value: `s` never has its address taken)
      if (!again) return false;
      s = {*again, 1};
    }
    abi::aql_slot& sl = slot(s.begin);
    const std::uint32_t header = fill(s.begin, sl);
    sync::atomic_store(detail::header_word(sl), header, std::memory_order_release);
    committed_newest(s);
    index = s.begin;
    return true;
  }
  // errc::queue_full for `n` slots after `waited`, with the queue described (what try_reserve
  // reports), for a caller that waited on its own.
  [[nodiscard]] failure full_failure(std::uint32_t n, sync::nanoseconds waited) const { return full(n, waited); }

  // A batch (<= max_batch packets): bodies and headers of entries 1..n-1, entry 0's header last,
  // one doorbell. Returns the index of the first packet.
  template <aql_packet Pk>
  AQUEDUCT_ALWAYS_INLINE result<std::uint64_t> try_submit_batch(std::span<const Pk> packets,
                                                                sync::nanoseconds timeout = sync::nanoseconds::zero()) {
    const auto n = static_cast<std::uint32_t>(packets.size());
    AQUEDUCT_ASSERT(n >= 1 && n <= max_batch && n <= mem_.size, "batch size out of range");
    ring_span s;
    if (AQUEDUCT_LIKELY(reserver_.try_claim(n, s))) [[likely]] {
      put_batch(s, packets);
      return s.begin;
    }
    AQUEDUCT_TRY(s, wait_and_claim(n, timeout));
    put_batch(s, packets);
    return s.begin;
  }
  template <aql_packet Pk>
  AQUEDUCT_ALWAYS_INLINE std::uint64_t submit_batch(std::span<const Pk> packets, sync::nanoseconds timeout = sync::infinite) {
    return try_submit_batch(packets, timeout).value();
  }

  // A batch of `n` (<= max_batch) packets built in place: `fill(i)` returns entry i's packet, and
  // is called once per entry, in order, each packet written into its slot as it is made (no
  // array written first and copied again: issue 11). Entries 1..n-1 get body then header, entry 0
  // its header last, then write index and one doorbell — put_batch's order. A full ring: wait up
  // to `timeout`, then errc::queue_full with `fill` never called and nothing claimed.
  template <class Fill>
    requires aql_packet<std::remove_cvref_t<std::invoke_result_t<Fill&, std::uint32_t>>>
  AQUEDUCT_ALWAYS_INLINE result<std::uint64_t> try_submit_batch(std::uint32_t n, Fill&& fill,
                                                                sync::nanoseconds timeout = sync::nanoseconds::zero()) {
    AQUEDUCT_ASSERT(n >= 1 && n <= max_batch && n <= mem_.size, "batch size out of range");
    ring_span s;
    if (!reserver_.try_claim(n, s)) [[unlikely]] {
      AQUEDUCT_TRY(s, wait_and_claim(n, timeout));
    }
    put_filled(s, fill);
    return s.begin;
  }
  template <class Fill>
    requires aql_packet<std::remove_cvref_t<std::invoke_result_t<Fill&, std::uint32_t>>>
  AQUEDUCT_ALWAYS_INLINE std::uint64_t submit_batch(std::uint32_t n, Fill&& fill, sync::nanoseconds timeout = sync::infinite) {
    return try_submit_batch(n, fill, timeout).value();
  }

  // ---- state and diagnostics -------------------------------------------------------------------
  [[nodiscard]] std::uint32_t size() const noexcept { return mem_.size; }
  // The packet processor's read_dispatch_id: packets below it were launched (not necessarily
  // completed: hardware may advance it as soon as a packet is launched).
  [[nodiscard]] std::uint64_t read_index() const noexcept {
    return sync::atomic_load(mem_.descriptor->read_dispatch_id, std::memory_order_acquire);
  }
  // What claims are bounded by: read_index(), or the caller's reuse_bound (aql_queue_memory).
  [[nodiscard]] std::uint64_t reuse_bound() const noexcept { return reserver_.read_index(std::memory_order_acquire); }
  [[nodiscard]] std::uint64_t write_index() const noexcept { return reserver_.write_index(std::memory_order_acquire); }
  [[nodiscard]] abi::amd_queue* descriptor() const noexcept { return mem_.descriptor; }
  [[nodiscard]] abi::aql_slot* ring() const noexcept { return mem_.ring; }
  [[nodiscard]] Doorbell& get_doorbell() noexcept { return doorbell_; }

  // "AQL queue (multi-producer, 16 slots, ring 0x...): read 5, write 21; packet 5 (slot 5):
  // KERNEL_DISPATCH ..." — the stalled packet is the one at the read index.
  // Race-free against producers (issue 13, found by ThreadSanitizer in runtime.stress): bodies
  // are written with plain stores (detail::write_body), so the description reads only what no
  // producer can be writing:
  //   - the header|setup dword, with an acquire load (it pairs with the producer's release
  //     store). An INVALID header is a head claimed but not yet published: said so, body unread;
  //   - the body (bytes 4..63) of a valid head only on a single-producer ring, whose one
  //     producer is the caller of full(): only it could reuse the slot. The read index and the
  //     header are loaded again after the copy; if either moved, the head was launched meanwhile
  //     and the copy is not decoded. On a multi-producer ring another producer may claim the
  //     slot the moment the processor launches the head and write its body while it is read,
  //     so only the header is decoded (type, barrier bit, scopes, dimensions).
  // (A single-producer ring, as all of its members, belongs to its producer's thread.)
  void describe(std::string& out) const {
    const std::uint64_t r = read_index(), w = write_index();
    char buf[224];
    int n = std::snprintf(buf, sizeof buf,
                          "AQL queue (%s-producer, %u slots, ring 0x%llx): read_dispatch_id %llu, write_dispatch_id %llu",
                          P == producer::single ? "single" : "multi", mem_.size,
                          static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(mem_.ring)),
                          static_cast<unsigned long long>(r), static_cast<unsigned long long>(w));
    out.append(buf, static_cast<std::size_t>(n));
    if (mem_.reuse_bound) {
      n = std::snprintf(buf, sizeof buf, ", slots reusable below %llu", static_cast<unsigned long long>(reuse_bound()));
      out.append(buf, static_cast<std::size_t>(n));
    }
    if (r == w) {
      out += "; empty";
      return;
    }
    n = std::snprintf(buf, sizeof buf, "; packet %llu (slot %llu): ", static_cast<unsigned long long>(r),
                      static_cast<unsigned long long>(r & (mem_.size - 1)));
    out.append(buf, static_cast<std::size_t>(n));
    auto* words = reinterpret_cast<std::uint32_t*>(const_cast<abi::aql_slot&>(slot(r)).bytes);
    const std::uint32_t header = sync::atomic_load(words[0], std::memory_order_acquire);
    const auto h = abi::decode_header(static_cast<std::uint16_t>(header));
    if (h.type == static_cast<std::uint8_t>(abi::packet_type::invalid)) {
      out += "not yet published (header INVALID: claimed, its producer has not stored the header yet); body not read";
      return;
    }
    if constexpr (P == producer::multi) {
      n = std::snprintf(buf, sizeof buf, "%s (header 0x%04x) barrier=%d acquire=%s release=%s", packet_type_name(h.type),
                        header & 0xFFFFu, h.barrier ? 1 : 0, fence_scope_name(h.acquire_scope), fence_scope_name(h.release_scope));
      out.append(buf, static_cast<std::size_t>(n));
      if (h.type == static_cast<std::uint8_t>(abi::packet_type::kernel_dispatch)) {
        n = std::snprintf(buf, sizeof buf, " dims=%u", abi::dispatch_setup::dimensions::get(static_cast<std::uint16_t>(header >> 16)));
        out.append(buf, static_cast<std::size_t>(n));
      }
      out += " (body not read: another producer may be reusing the slot)";
    } else {
      abi::aql_slot copy;
      std::memcpy(copy.bytes, &header, 4);
      std::memcpy(copy.bytes + 4, words + 1, sizeof copy.bytes - 4);
      const std::uint64_t r_after = read_index();
      if (r_after != r || sync::atomic_load(words[0], std::memory_order_acquire) != header) {
        n = std::snprintf(buf, sizeof buf, "launched while being described (read_dispatch_id now %llu); not decoded",
                          static_cast<unsigned long long>(r_after));
        out.append(buf, static_cast<std::size_t>(n));
        return;
      }
      describe_packet(copy, out);
    }
  }
  [[nodiscard]] sync::diagnostics diagnostics() const noexcept { return sync::diagnostics(*this); }

 private:
  [[nodiscard]] AQUEDUCT_ALWAYS_INLINE abi::aql_slot& slot(std::uint64_t index) const noexcept { return mem_.ring[index & (mem_.size - 1)]; }

  // An abandoned reservation's span: given back (rollback) if nothing was reserved after it, else
  // filled with no-op packets and published. Entries 1..n-1 may already hold valid headers
  // (reservation::write releases them); entry 0 is still INVALID, so no processor has looked
  // past it: invalidate them first.
  AQUEDUCT_NOINLINE static void abandon(aql_queue* q, ring_span s) noexcept {
    for (std::uint32_t i = 1; i < s.count; ++i)
      sync::atomic_store(detail::header_word(q->slot(s.begin + i)), detail::invalid_header_dword, std::memory_order_relaxed);
    if (q->reserver_.try_rollback(s)) return;
    const auto nop = nop_packet();
    for (std::uint32_t i = 1; i < s.count; ++i) q->put(s.begin + i, nop);
    q->put(s.begin, nop);
    q->committed(s);
  }

  // How put() stores a body: field by field (detail::write_body), or as the eight words
  // make_packet builds (detail::write_body_words) — for submit(), whose packet is usually a
  // make_packet value just built (issue 11, a user's own function: 77 -> 74 instructions with
  // the other changes; inline 32 -> 29; a prebuilt packet passed to submit(): 88 -> 81).
  // try_submit stores fields: sp_prebuilt's one-packet path (try_submit of a prebuilt packet)
  // went 35 -> 44 with words.
  enum class body_store : std::uint8_t { fields, words };
  // One packet into slot `index`: body, then header|setup with one release store.
  template <body_store How = body_store::fields, aql_packet Pk>
  AQUEDUCT_ALWAYS_INLINE void put(std::uint64_t index, const Pk& packet) noexcept {
    abi::aql_slot& s = slot(index);
    if constexpr (How == body_store::words)
      detail::write_body_words(s, packet);
    else
      detail::write_body(s, packet);
    sync::atomic_store(detail::header_word(s), header_dword(packet), std::memory_order_release);
  }
  // A claimed span from `packets`: entries 1..n-1 complete, then entry 0 (the gate), then
  // write index and doorbell (see reservation).
  // (Bodies field by field, as put: 16-byte copies of prebuilt bodies were measured in issue 11 —
  // 24.8 -> 24.0 instructions per packet for prebuilt batches of 8, but 42 -> 52 for a batch of
  // one built just before, whose fields GCC no longer forwarded — and not kept.)
  template <aql_packet Pk>
  AQUEDUCT_ALWAYS_INLINE void put_batch(ring_span s, std::span<const Pk> packets) noexcept {
    detail::write_body(slot(s.begin), packets[0]);
    for (std::uint32_t i = 1; i < s.count; ++i) put(s.begin + i, packets[i]);
    sync::atomic_store(detail::header_word(slot(s.begin)), header_dword(packets[0]), std::memory_order_release);
    committed_newest(s);
  }
  // try_submit_batch(n, fill)'s writes, in put_batch's order.
  template <class Fill>
  AQUEDUCT_ALWAYS_INLINE void put_filled(ring_span s, Fill& fill) noexcept {
    const auto first = fill(std::uint32_t{0});
    detail::write_body(slot(s.begin), first);
    for (std::uint32_t i = 1; i < s.count; ++i) put(s.begin + i, fill(i));
    sync::atomic_store(detail::header_word(slot(s.begin)), header_dword(first), std::memory_order_release);
    committed(s);
  }

  // Steps 3 and 4 of reservation::publish.
  AQUEDUCT_ALWAYS_INLINE void committed(ring_span s) noexcept { ring_doorbell(reserver_.commit(s)); }
  // The same for a span this call claimed with no user code run since (ring_reserver::commit_newest).
  AQUEDUCT_ALWAYS_INLINE void committed_newest(ring_span s) noexcept { ring_doorbell(reserver_.commit_newest(s)); }
  AQUEDUCT_ALWAYS_INLINE void ring_doorbell(std::uint64_t end) noexcept {
    // Multi-producer: each producer rings the last index of its own claim, as the HSA
    // multi-producer sequence and ROCr do on gfx9 and later ("hardware doorbell supports AQL
    // semantics": one release store of the caller's index, no ordering among producers). The CP
    // processes packets by their headers and waits at an INVALID one, so a value that names
    // another producer's unfinished packet, or one lower than a value rung before, loses
    // nothing. Every family aqueduct drives is gfx9 or later; the pre-gfx9 doorbell, which
    // needed a monotonic value (ROCr's legacy_doorbell_lock), is not supported. One store, no
    // fence, no read-modify-write (issue 11).
    doorbell_.ring(end - 1);
  }

  AQUEDUCT_NOINLINE result<ring_span> wait_and_claim(std::uint32_t n, sync::nanoseconds timeout) {
    ring_span s;
    if (refreshed_claim(n, s)) return s;
    if (timeout > sync::nanoseconds::zero()) {
      // The one wait loop (sync::wait_until), nothing to block on: back off.
      sync::no_events none;
      AQUEDUCT_TRY_VOID(sync::wait_until(
          none, 0, false, sync::wait_policy::block(), timeout, [&] { return refreshed_claim(n, s); },
          [&] { return mem_.stopped.described(*this); }, [&](sync::nanoseconds waited) { return full(n, waited); }));
      return s;
    }
    return full(n, sync::nanoseconds::zero());
  }

  // A claim after the caller's reuse bound was brought up to date (cold path: a claim found the
  // ring full by a bound that may be stale; no failure is built unless it is still full).
  AQUEDUCT_NOINLINE bool refreshed_claim(std::uint32_t n, ring_span& s) noexcept {
    if (mem_.refresh) mem_.refresh(mem_.refresh_context);
    return reserver_.try_claim(n, s);
  }

  AQUEDUCT_NOINLINE std::optional<std::uint64_t> refreshed_claim_one() noexcept {
    ring_span s;
    if (!refreshed_claim(1, s)) return std::nullopt;
    return s.begin;
  }

  AQUEDUCT_NOINLINE failure full(std::uint32_t n, sync::nanoseconds waited) const {
    // Cold, but a polling caller (zero timeout) comes here on every try: one allocation, a few
    // snprintf, no retry loop, no lock.
    std::string d;
    d.reserve(640);
    char buf[120];
    const int len = std::snprintf(buf, sizeof buf, "no %u free slot(s) after %.3f ms; ", n,
                                  std::chrono::duration<double, std::milli>(waited).count());
    d.append(buf, static_cast<std::size_t>(len));
    describe(d);
    return failure(errc::queue_full, std::move(d));
  }

  aql_queue_memory mem_;
  Doorbell doorbell_;
  ring_reserver<P> reserver_;
};

template <class Doorbell = doorbell_ref>
using aql_queue_sp = aql_queue<producer::single, Doorbell>;
template <class Doorbell = doorbell_ref>
using aql_queue_mp = aql_queue<producer::multi, Doorbell>;

}  // namespace aqueduct::ring
