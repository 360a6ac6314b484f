// aqueduct/queue/sdma_queue.hpp — an SDMA (system DMA) queue over caller-supplied memory: a ring,
// the engine's read pointer, the write pointer and a 64-bit doorbell.
//
// Layer: queue. Memory comes from the caller (kfd::queue_resources for a KFD SDMA queue, a test's
// own buffer otherwise). Pointers are 64-bit BYTE counts that only grow; the ring offset is the
// count modulo the ring size (spec/kfd.md §2.7 "SDMA rptr/wptr in bytes", §3.3 "SDMA: write
// pointer in bytes"; Linux's SDMA rings use 64-bit pointers that are never masked). A submission
// is reserve → emit → commit:
//   reserve: claim `n` dwords; a packet never straddles the ring end — when it would, the rest of
//     the ring is filled with 1-dword NOPs (zero dwords) and the packet starts at offset 0, as
//     tinygrad does (spec/packets.md §3.4; whether the engine takes a straddling packet is
//     UNVERIFIED, §6 item 7). A full ring is detected before writing (requirement 3): the claim
//     waits for the engine's read pointer (sync::wait_until, backing off), publishing what is
//     pending first so the engine can make room, or fails with errc::queue_full and the queue
//     described — or with the engine's stop (sdma_queue_memory::stopped) once it stopped.
//   emit: plain stores into the reservation's span (the encoder, queue/sdma_encoder.hpp).
//   commit: the ONE publication point — the write pointer is release-stored to its word, then the
//     doorbell gets the same value with a release store (requirement 9). SDMA has no per-packet
//     valid bit: the engine consumes exactly up to the pointer it was given.
// An abandoned reservation is rolled back (nothing was published after it: single producer).
// Composite operations (copy, fill, signal, wait, timestamp, atomic) reserve per packet, batch the
// doorbell, and split copies into packets within the engine's limit (`copy_plan`) — except a
// one-packet copy that fits before the ring's end in a ring with room, which is written straight
// into the ring (no reservation object), then published the same way.
// Thread safety: single producer — one thread at a time submits (the runtime serialises); the
// engine runs concurrently. The queue must not move while a reservation is alive.
#pragma once

#include <aqueduct/abi/sdma.hpp>
#include <aqueduct/core/assert.hpp>
#include <aqueduct/core/result.hpp>
#include <aqueduct/core/units.hpp>
#include <aqueduct/queue/doorbell.hpp>
#include <aqueduct/queue/sdma_encoder.hpp>
#include <aqueduct/sync/atomics.hpp>
#include <aqueduct/sync/wait.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <span>
#include <string>
#include <utility>

namespace aqueduct::ring {

// The memory an SDMA queue runs on; all of it outlives the queue.
struct sdma_queue_memory {
  std::uint32_t* ring = nullptr;  // `ring_bytes` bytes
  std::uint64_t ring_bytes = 0;   // a power of two >= 1024 (KFD's minimum, spec/kfd.md §2.3)
  std::uint64_t* rptr = nullptr;  // the engine stores the bytes it consumed
  std::uint64_t* wptr = nullptr;  // we store the bytes published
  sync::stop_check stopped{};     // a wait for room reports the engine's stop (none: never)
};

template <abi::sdma::engine Engine, doorbell Doorbell = doorbell_ref>
class sdma_queue {
 public:
  using encoder = sdma::encoder<Engine>;
  static constexpr abi::sdma::engine engine = Engine;

  // If `initialize`, both pointers are set to 0 and the ring zeroed (zero dwords are NOPs) — do
  // this before the engine attaches. Otherwise the pointers already hold a consistent state.
  sdma_queue(sdma_queue_memory mem, Doorbell db, bool initialize = true) noexcept : mem_(mem), doorbell_(std::move(db)) {
    AQUEDUCT_ASSERT(mem.ring && mem.rptr && mem.wptr, "sdma_queue: null memory");
    AQUEDUCT_ASSERT(is_pow2(mem.ring_bytes) && mem.ring_bytes >= 1024, "sdma_queue: ring must be a power of two >= 1024 bytes");
    if (initialize) {
      std::memset(mem.ring, 0, mem.ring_bytes);
      sync::atomic_store(*mem.rptr, 0, std::memory_order_release);
      sync::atomic_store(*mem.wptr, 0, std::memory_order_release);
    }
    cursor_ = published_ = sync::atomic_load(*mem.wptr, std::memory_order_acquire);
  }
  sdma_queue(const sdma_queue&) = delete;
  sdma_queue& operator=(const sdma_queue&) = delete;

  // ---- reservation -----------------------------------------------------------------------------
  class [[nodiscard]] reservation {
   public:
    reservation(reservation&& o) noexcept
        : q_(std::exchange(o.q_, nullptr)), start_(o.start_), begin_(o.begin_), dwords_(o.dwords_) {}
    reservation& operator=(reservation&&) = delete;
    ~reservation() { abandon(); }

    // Where to emit: `size()` dwords, contiguous in the ring.
    [[nodiscard]] std::span<std::uint32_t> dwords() const noexcept {
      AQUEDUCT_ASSERT(q_, "reservation already committed or abandoned");
      return {q_->mem_.ring + (begin_ & (q_->mem_.ring_bytes - 1)) / 4, dwords_};
    }
    [[nodiscard]] std::uint32_t size() const noexcept { return dwords_; }
    // Byte offset (monotonic) of the first reserved dword.
    [[nodiscard]] std::uint64_t offset() const noexcept { return begin_; }

    // Publish now (write pointer, then doorbell) or leave it for the next publishing commit /
    // flush(). Every reserved dword must have been written.
    void commit(bool publish = true) noexcept {
      AQUEDUCT_ASSERT(q_, "reservation already committed or abandoned");
      sdma_queue* q = std::exchange(q_, nullptr);
      q->live_ = false;
      if (publish) q->flush();
    }
    // Give the dwords back (they are the last claimed: single producer).
    void abandon() noexcept {
      if (!q_) return;
      AQUEDUCT_VERIFY(q_->cursor_ == begin_ + std::uint64_t{dwords_} * 4, "SDMA reservations abandoned out of order");
      q_->cursor_ = start_;
      q_->live_ = false;
      q_ = nullptr;
    }

   private:
    friend class sdma_queue;
    reservation(sdma_queue* q, std::uint64_t start, std::uint64_t begin, std::uint32_t n) noexcept
        : q_(q), start_(start), begin_(begin), dwords_(n) {}
    sdma_queue* q_ = nullptr;
    std::uint64_t start_ = 0;  // cursor before the claim (incl. NOP padding)
    std::uint64_t begin_ = 0;
    std::uint32_t dwords_ = 0;
  };

  // Claim `n` contiguous dwords. If the ring lacks room, publish what is pending, then wait up
  // to `timeout` for the engine (backing off); then errc::queue_full, described — or, once the
  // engine stopped (sdma_queue_memory::stopped), that failure, described.
  result<reservation> try_reserve(std::uint32_t n, sync::nanoseconds timeout = sync::nanoseconds::zero()) {
    AQUEDUCT_ASSERT(n >= 1 && std::uint64_t{n} * 4 <= mem_.ring_bytes / 2, "SDMA reservation larger than half the ring");
    AQUEDUCT_ASSERT(!live_, "one SDMA reservation at a time: commit or abandon the previous one first");
    const std::uint64_t bytes = std::uint64_t{n} * 4;
    const std::uint64_t off = cursor_ & (mem_.ring_bytes - 1);
    const std::uint64_t pad = off + bytes > mem_.ring_bytes ? mem_.ring_bytes - off : 0;
    if (!room(pad + bytes)) AQUEDUCT_TRY_VOID(wait_for_room(n, pad + bytes, timeout));
    const std::uint64_t start = cursor_;
    if (pad) std::memset(mem_.ring + off / 4, 0, pad);  // 1-dword NOPs to the ring end
    cursor_ += pad + bytes;
    live_ = true;
    live_start_ = start;
    return reservation(this, start, start + pad, n);
  }
  reservation reserve(std::uint32_t n, sync::nanoseconds timeout = sync::infinite) { return try_reserve(n, timeout).value(); }

  // Publish every committed dword: write pointer (release), then doorbell (release).
  void flush() noexcept {
    const std::uint64_t end = committed_end();
    if (end == published_) return;
    publish_at(end);
  }

  // ---- composite operations (each reserves per packet; `publish` rings the doorbell) -----------
  // A copy of any size: COPY_LINEAR packets within encoder::max_copy_bytes (copy_plan).
  AQUEDUCT_ALWAYS_INLINE result<void> try_copy(gpu_va dst, gpu_va src, std::uint64_t bytes,
                                               sync::nanoseconds timeout = sync::infinite, bool publish = true) {
    // Fast path (issue 11): one packet (what copy_plan gives for a copy within the engine's limit
    // that it does not split off a dword tail), which fits before the ring's end, in a ring with
    // room (the cached read pointer, refreshed once if it says no): the dwords go straight into
    // the ring, then the write pointer and the doorbell — no reservation object, no result to
    // unwrap, no rollback. Anything else (a split copy, padding at the ring's end, a full ring,
    // an open reservation) takes copy_slow, which pads, waits or fails exactly as before.
    constexpr std::uint64_t pkt_bytes = std::uint64_t{encoder::copy_linear_dwords} * 4;
    const std::uint64_t off = cursor_ & (mem_.ring_bytes - 1);
    const bool split_tail = bytes > 4 && (bytes & 3u) != 0 && dst.aligned(4) && src.aligned(4);
    if (bytes >= 1 && bytes <= encoder::max_copy_bytes && !split_tail && !live_ && off + pkt_bytes <= mem_.ring_bytes &&
        room(pkt_bytes)) [[likely]] {
      encoder::copy_linear(std::span<std::uint32_t>(mem_.ring + off / 4, encoder::copy_linear_dwords), dst, src, bytes);
      const std::uint64_t end = cursor_ + pkt_bytes;
      cursor_ = end;
      // No reservation is open and a packet was just added: publish `end` itself (flush() would
      // re-read the reservation flag and compare with what was published: issue 11).
      if (publish) publish_at(end);
      return ok();
    }
    return copy_slow(dst, src, bytes, timeout, publish);
  }
  // A dword fill (dst and bytes multiples of 4): CONSTANT_FILL packets within max_fill_bytes.
  result<void> try_fill(gpu_va dst, std::uint32_t value, std::uint64_t bytes, sync::nanoseconds timeout = sync::infinite,
                        bool publish = true) {
    AQUEDUCT_ASSERT(dst.aligned(4) && bytes % 4 == 0, "SDMA fill: dword-aligned address and length");
    for (const sdma::copy_chunk c : sdma::copy_chunks(dst, dst, bytes, encoder::max_fill_bytes)) {
      AQUEDUCT_TRY(auto r, try_reserve(encoder::constant_fill_dwords, timeout));
      encoder::constant_fill(r.dwords(), c.dst, value, c.bytes);
      r.commit(false);
    }
    if (publish) flush();
    return ok();
  }
  // FENCE: the engine writes the 32-bit `value` at `addr` after every earlier packet.
  result<void> try_fence(gpu_va addr, std::uint32_t value, sync::nanoseconds timeout = sync::infinite, bool publish = true) {
    return emit(timeout, publish, encoder::fence_dwords, [&](std::span<std::uint32_t> s) { encoder::fence(s, addr, value); });
  }
  // A 64-bit value as two FENCEs, low dword first (Linux sdma_v6_0_ring_emit_fence, 64-bit seq).
  result<void> try_fence64(gpu_va addr, std::uint64_t value, sync::nanoseconds timeout = sync::infinite, bool publish = true) {
    AQUEDUCT_TRY_VOID(try_fence(addr, lo32(value), timeout, false));
    return try_fence(addr + byte_count(4), hi32(value), timeout, publish);
  }
  // TRAP: an interrupt carrying `int_context` (KFD: the event id).
  result<void> try_trap(std::uint32_t int_context, sync::nanoseconds timeout = sync::infinite, bool publish = true) {
    return emit(timeout, publish, encoder::trap_dwords, [&](std::span<std::uint32_t> s) { encoder::trap(s, int_context); });
  }
  // Completion as tinygrad's KFD path does it (spec/packets.md §3.4): FENCE the signal value, then
  // FENCE the event id into the event's mailbox slot and TRAP with the event id.
  result<void> try_signal_event(gpu_va mailbox_slot, std::uint32_t event_id, sync::nanoseconds timeout = sync::infinite,
                                bool publish = true) {
    AQUEDUCT_TRY_VOID(try_fence(mailbox_slot, event_id, timeout, false));
    return try_trap(event_id, timeout, publish);
  }
  // POLL_REGMEM on memory: later packets wait until `(*addr & mask) func reference`.
  result<void> try_wait(gpu_va addr, std::uint32_t reference, std::uint32_t mask = 0xFFFFFFFFu,
                        abi::sdma::poll_regmem::function func = abi::sdma::poll_regmem::function::greater_equal,
                        sync::nanoseconds timeout = sync::infinite, bool publish = true) {
    return emit(timeout, publish, encoder::poll_regmem_dwords,
                [&](std::span<std::uint32_t> s) { encoder::poll_regmem(s, addr, reference, mask, func); });
  }
  // TIMESTAMP GET_GLOBAL: the 64-bit GPU clock at an 8-byte aligned address.
  result<void> try_timestamp(gpu_va addr, sync::nanoseconds timeout = sync::infinite, bool publish = true) {
    return emit(timeout, publish, encoder::timestamp_dwords, [&](std::span<std::uint32_t> s) { encoder::timestamp(s, addr); });
  }
  // ATOMIC on a qword (e.g. abi::sdma::atomic::op_add64).
  result<void> try_atomic(gpu_va addr, std::uint32_t atomic_op, std::uint64_t src, std::uint64_t cmp = 0,
                          sync::nanoseconds timeout = sync::infinite, bool publish = true) {
    return emit(timeout, publish, encoder::atomic_dwords,
                [&](std::span<std::uint32_t> s) { encoder::atomic(s, addr, atomic_op, src, cmp); });
  }

  // INDIRECT: the engine runs `ib_dwords` dwords at `ib` (32-byte aligned). NOPs go first so that
  // the packet ends on an 8-dword ring boundary, as the engine requires (Linux
  // sdma_v6_0_ring_emit_ib); the reservation's unused tail is 1-dword NOPs.
  static constexpr std::uint32_t indirect_reservation_dwords = encoder::indirect_dwords + 7;
  result<void> try_indirect(gpu_va ib, std::uint32_t ib_dwords, sync::nanoseconds timeout = sync::infinite, bool publish = true) {
    AQUEDUCT_TRY(auto r, try_reserve(indirect_reservation_dwords, timeout));
    const std::span<std::uint32_t> out = r.dwords();
    const std::size_t pad = encoder::indirect_pad_before(r.offset() / 4);
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = 0;  // 1-dword NOPs
    encoder::indirect(out.subspan(pad), ib, ib_dwords);
    r.commit(publish);
    return ok();
  }
  // COND_EXE, then `body_dwords` dwords that `write_body(std::span<std::uint32_t>)` fills with
  // packets: they run only if the 32-bit value at `addr` equals `reference`. One reservation, so
  // no ring-end NOP padding can fall inside the skipped span.
  template <class WriteBody>
  result<void> try_cond_exe(gpu_va addr, std::uint32_t reference, std::uint32_t body_dwords, WriteBody&& write_body,
                            sync::nanoseconds timeout = sync::infinite, bool publish = true) {
    return emit(timeout, publish, encoder::cond_exe_dwords + body_dwords, [&](std::span<std::uint32_t> s) {
      encoder::cond_exe(s.first(encoder::cond_exe_dwords), addr, reference, body_dwords);
      write_body(s.subspan(encoder::cond_exe_dwords));
    });
  }

  // ---- state and diagnostics -------------------------------------------------------------------
  [[nodiscard]] std::uint64_t ring_bytes() const noexcept { return mem_.ring_bytes; }
  // Bytes the engine consumed (its read pointer) and bytes published (the write pointer).
  [[nodiscard]] std::uint64_t read_offset() const noexcept { return sync::atomic_load(*mem_.rptr, std::memory_order_acquire); }
  [[nodiscard]] std::uint64_t write_offset() const noexcept { return published_; }
  // Bytes claimed so far (published or not).
  [[nodiscard]] std::uint64_t claimed_offset() const noexcept { return cursor_; }
  [[nodiscard]] bool idle() const noexcept { return read_offset() == published_; }
  [[nodiscard]] Doorbell& get_doorbell() noexcept { return doorbell_; }
  [[nodiscard]] const sdma_queue_memory& memory() const noexcept { return mem_; }

  // "SDMA queue (v6_0, ring 65536 bytes at 0x...): rptr 1024, wptr 2048; next packet at ring
  // offset 1024: 00000001 00000fff ..." — the stalled packet is the one at the read pointer.
  void describe(std::string& out) const {
    static constexpr const char* names[] = {"v4_0", "v5_0", "v5_2", "v6_0", "v7_0"};
    const std::uint64_t r = read_offset(), w = published_;
    char buf[200];
    std::snprintf(buf, sizeof buf, "SDMA queue (%s, ring %llu bytes at 0x%llx): rptr %llu, wptr %llu",
                  names[static_cast<int>(Engine)], static_cast<unsigned long long>(mem_.ring_bytes),
                  static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(mem_.ring)),
                  static_cast<unsigned long long>(r), static_cast<unsigned long long>(w));
    out += buf;
    if (r >= w) {
      out += "; empty";
      return;
    }
    std::snprintf(buf, sizeof buf, "; next packet at ring offset %llu:",
                  static_cast<unsigned long long>(r & (mem_.ring_bytes - 1)));
    out += buf;
    for (std::uint64_t i = 0; i < 8 && r + 4 * i < w; ++i) {
      const std::uint64_t off = ((r + 4 * i) & (mem_.ring_bytes - 1)) / 4;
      std::snprintf(buf, sizeof buf, " %08x", sync::atomic_load(mem_.ring[off], std::memory_order_relaxed));
      out += buf;
    }
  }
  [[nodiscard]] sync::diagnostics diagnostics() const noexcept { return sync::diagnostics(*this); }

 private:
  // Committed = claimed and not held by the live reservation (at most one, always the last claim).
  [[nodiscard]] std::uint64_t committed_end() const noexcept { return live_ ? live_start_ : cursor_; }
  // Write pointer (release), then doorbell (release), both `end`; from a value in hand, not read
  // back after the write-pointer store (which may alias it). `published_` is stored after the
  // write pointer: stored next to `cursor_`, GCC merged the two into one 16-byte store, which the
  // next command's 8-byte load of `cursor_` could not forward from (1.7x the peer's time on this
  // machine's EPYC, issue 11).
  AQUEDUCT_ALWAYS_INLINE void publish_at(std::uint64_t end) noexcept {
    sync::atomic_store(*mem_.wptr, end, std::memory_order_release);
    published_ = end;
    doorbell_.ring(end);
  }

  [[nodiscard]] bool room(std::uint64_t bytes) noexcept {
    if (cursor_ + bytes - cached_rptr_ <= mem_.ring_bytes) return true;
    cached_rptr_ = read_offset();
    return cursor_ + bytes - cached_rptr_ <= mem_.ring_bytes;
  }

  // The ring lacks `bytes`: publish what is pending (the engine can only make room by consuming
  // it), then the one wait loop (sync::wait_until) with nothing to block on (the engine raises no
  // interrupt for room): back off until there is room, the engine stopped, or `timeout` passed.
  AQUEDUCT_NOINLINE result<void> wait_for_room(std::uint32_t n, std::uint64_t bytes, sync::nanoseconds timeout) {
    flush();
    if (timeout == sync::nanoseconds::zero() && !room(bytes)) return full(n, sync::nanoseconds::zero());
    sync::no_events none;
    return sync::wait_until(
        none, 0, false, sync::wait_policy::block(), timeout, [&] { return room(bytes); },
        [&] { return mem_.stopped.described(*this); }, [&](sync::nanoseconds waited) { return full(n, waited); });
  }

  // try_copy's general case: one reservation per COPY_LINEAR packet (copy_plan), one doorbell.
  AQUEDUCT_NOINLINE result<void> copy_slow(gpu_va dst, gpu_va src, std::uint64_t bytes, sync::nanoseconds timeout,
                                           bool publish) {
    // One packet: no plan to iterate (issue 11: the range pipeline cost ~4x the packet itself).
    const bool split_tail = bytes > 4 && (bytes & 3u) != 0 && dst.aligned(4) && src.aligned(4);
    if (bytes >= 1 && bytes <= encoder::max_copy_bytes && !split_tail) {
      AQUEDUCT_TRY(auto r, try_reserve(encoder::copy_linear_dwords, timeout));
      encoder::copy_linear(r.dwords(), dst, src, bytes);
      r.commit(publish);
      return ok();
    }
    for (const sdma::copy_chunk c : sdma::copy_plan(dst, src, bytes, encoder::max_copy_bytes)) {
      AQUEDUCT_TRY(auto r, try_reserve(encoder::copy_linear_dwords, timeout));
      encoder::copy_linear(r.dwords(), c.dst, c.src, c.bytes);
      r.commit(false);
    }
    if (publish) flush();
    return ok();
  }

  template <class F>
  result<void> emit(sync::nanoseconds timeout, bool publish, std::uint32_t n, F&& write) {
    AQUEDUCT_TRY(auto r, try_reserve(n, timeout));
    write(r.dwords());
    r.commit(publish);
    return ok();
  }

  failure full(std::uint32_t n, sync::nanoseconds waited) const {
    char buf[120];
    std::snprintf(buf, sizeof buf, "no room for %u dword(s) after %.3f ms; ", n,
                  std::chrono::duration<double, std::milli>(waited).count());
    std::string d = buf;
    describe(d);
    return failure(errc::queue_full, std::move(d));
  }

  sdma_queue_memory mem_;
  Doorbell doorbell_;
  std::uint64_t cursor_ = 0;      // bytes claimed
  std::uint64_t published_ = 0;   // bytes published (== *wptr)
  std::uint64_t cached_rptr_ = 0;
  bool live_ = false;
  std::uint64_t live_start_ = 0;
};

}  // namespace aqueduct::ring
