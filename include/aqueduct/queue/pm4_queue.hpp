// aqueduct/queue/pm4_queue.hpp — a PM4 compute queue (KFD queue_type 0, non-AQL), typed by its
// target, over caller-supplied memory: a ring of dwords, the write and read pointers, a doorbell.
//
// Layer: queue. KFD rules (spec/kfd.md §3.3, spec/packets.md §2.3): the write pointer and the
// 64-bit doorbell both hold the write pointer IN DWORDS; packets are written modulo the ring and
// may straddle its end. The read pointer is the CP's report of the dwords it has consumed; here
// it is a monotonic u64 in dwords (the emulator writes it so; a real CP's report wraps at the
// ring size — UNVERIFIED for the MEC, and not needed by anything this type does besides the
// full-ring check, which is conservative either way on an empty-or-partly-full ring).
// A submission is reserve(n dwords) → emit packets (each encoder call bounds-checked against
// the reservation) → commit: the ONE place that orders stores — packets are plain stores, then
// the write pointer is release-stored, then the doorbell (release) is rung with the same value
// (requirements 1, 3, 9). A PM4 CP reads nothing beyond the write pointer, so unlike AQL no
// header is published separately. Unused reserved dwords are given back; an abandoned
// reservation is rolled back (or, should that be impossible, filled with one NOP and committed).
// A full ring is detected before writing: reserve waits for the read pointer up to a timeout
// (sync::wait_until, backing off), then fails with errc::queue_full and the queue described — or
// with the CP's stop (pm4_queue_memory::stopped) once it stopped.
// A dispatch does not go through a reservation: its command is a dispatch template
// (queue/pm4_dispatch_template.hpp) — built by the encoder once per kernel and launch shape, kept
// for the last one used — copied into the claimed dwords and patched (grid, kernarg and
// dispatch-packet addresses, completion), then the same write pointer and doorbell stores.
// Operations compose the encoder's packets (queue/pm4_encoder.hpp) the way tinygrad and ROCT do
// (spec/packets.md §2.1–2.2): dispatch = ACQUIRE_MEM(pre-dispatch) + register setup +
// DISPATCH_DIRECT + EVENT_WRITE(CS_PARTIAL_FLUSH) + completion RELEASE_MEM (caches written back)
// [+ RELEASE_MEM interrupt to the signal's KFD event]. The COMPUTE_PGM_RSRC1.PRIV policy is the
// target's (arch/target.hpp): a pm4_queue<arch::gfx11_priv_target> sets PRIV on every dispatch.
// Thread safety: one producer thread; reservations are used by that thread, one at a time.
#pragma once

#include <aqueduct/core/assert.hpp>
#include <aqueduct/core/result.hpp>
#include <aqueduct/core/units.hpp>
#include <aqueduct/queue/doorbell.hpp>
#include <aqueduct/queue/pm4_describe.hpp>
#include <aqueduct/queue/pm4_dispatch_template.hpp>
#include <aqueduct/queue/pm4_encoder.hpp>
#include <aqueduct/queue/ring.hpp>
#include <aqueduct/sync/atomics.hpp>
#include <aqueduct/sync/wait.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <span>
#include <string>
#include <utility>

namespace aqueduct::ring {

// The memory a PM4 queue runs on; all of it outlives the queue (kfd::queue_resources).
struct pm4_queue_memory {
  std::uint32_t* ring = nullptr;                  // ring_dwords dwords
  std::uint32_t ring_dwords = 0;                  // power of two (KFD: ring_size bytes / 4)
  std::uint64_t* write_pointer = nullptr;         // CREATE_QUEUE write_pointer_address (u64, dwords)
  const std::uint64_t* read_pointer = nullptr;    // CREATE_QUEUE read_pointer_address (u64, dwords)
  sync::stop_check stopped{};                     // a wait for room reports the CP's stop (none: never)
};

// pm4_completion (how a command reports completion): queue/pm4_dispatch_template.hpp.

template <class Target, doorbell Doorbell = doorbell_ref>
class pm4_queue {
 public:
  using encoder = pm4::encoder<Target>;
  using target = typename encoder::target;
  // Largest single reservation (a dispatch with 16 user SGPRs and its fences is ~110 dwords).
  static constexpr std::uint32_t max_reservation_dwords = 1024;

  // If `initialize`, both pointers are set to 0 (before the CP attaches).
  pm4_queue(pm4_queue_memory mem, Doorbell db, bool initialize = true) noexcept : mem_(mem), doorbell_(std::move(db)) {
    AQUEDUCT_ASSERT(mem.ring && mem.write_pointer && mem.read_pointer, "pm4_queue: null memory");
    AQUEDUCT_ASSERT(is_pow2(mem.ring_dwords) && mem.ring_dwords >= 256, "pm4_queue: ring must be a power of two >= 1 KiB");
    if (initialize) {
      sync::atomic_store(*mem.write_pointer, 0, std::memory_order_release);
      sync::atomic_store(*const_cast<std::uint64_t*>(mem.read_pointer), 0, std::memory_order_release);
    }
    reserver_ = ring_reserver<producer::single>(*mem.write_pointer, *mem.read_pointer, mem.ring_dwords);
  }
  pm4_queue(const pm4_queue&) = delete;
  pm4_queue& operator=(const pm4_queue&) = delete;

  // ---- reservation -----------------------------------------------------------------------------
  class [[nodiscard]] reservation {
   public:
    reservation(reservation&& o) noexcept
        : q_(std::exchange(o.q_, nullptr)), span_(o.span_), out_(o.out_), used_(o.used_), staged_(o.staged_) {}
    reservation& operator=(reservation&&) = delete;
    ~reservation() { abandon(); }

    [[nodiscard]] std::uint32_t capacity() const noexcept { return span_.count; }
    [[nodiscard]] std::uint32_t used() const noexcept { return used_; }
    // The write pointer (dwords) of the first reserved dword.
    [[nodiscard]] std::uint64_t begin() const noexcept { return span_.begin; }
    // What is left of the reservation, contiguous (a reservation that wraps is staged and
    // copied into the ring at commit).
    [[nodiscard]] std::span<std::uint32_t> rest() const noexcept { return out_.subspan(used_); }

    // Runs `fn(rest(), args...)`, an encoder member that returns the dwords it wrote; the
    // encoder asserts that its packet fits in rest().
    template <class Fn, class... A>
    std::size_t emit(Fn&& fn, A&&... args) noexcept {
      AQUEDUCT_ASSERT(q_, "reservation already committed or abandoned");
      const std::size_t n = fn(rest(), std::forward<A>(args)...);
      AQUEDUCT_ASSERT(n <= rest().size(), "packet overran the reservation");
      used_ += static_cast<std::uint32_t>(n);
      return n;
    }
    // The packets of a command.
    std::size_t acquire_mem(std::uint32_t cntl) noexcept { return emit(encoder::acquire_mem, cntl, 0xAu); }
    std::size_t dispatch(const pm4::dispatch_params& p) noexcept { return emit(encoder::dispatch, p); }
    std::size_t partial_flush() noexcept { return emit([](std::span<std::uint32_t> o) { return encoder::event_write(o); }); }
    std::size_t complete(const pm4_completion& c) noexcept {
      std::size_t n = 0;
      if (c.address) {
        if (c.b64)
          n += emit([&](std::span<std::uint32_t> o) {
            return encoder::release_mem(o, {.cache_action = encoder::signal_cache_action,
                                            .data_sel = abi::pm4::release_mem::data_sel_value::data64,
                                            .address = c.address,
                                            .data = c.value});
          });
        else
          n += emit(encoder::signal, c.address, static_cast<std::uint32_t>(c.value));
      }
      if (c.event_mailbox) n += emit(encoder::signal_event, c.event_mailbox, c.event_id);
      return n;
    }
    std::size_t wait(gpu_va addr, std::uint32_t reference, std::uint32_t mask = 0xFFFFFFFFu,
                     abi::pm4::wait_reg_mem::compare_function f = abi::pm4::wait_reg_mem::compare_function::greater_equal) noexcept {
      return emit([&](std::span<std::uint32_t> o) { return encoder::wait_reg_mem(o, addr, reference, mask, f); });
    }
    std::size_t timestamp(gpu_va addr) noexcept { return emit(encoder::timestamp, addr); }

    // Publishes what was emitted: unused dwords are given back, then the write pointer
    // (release) and the doorbell (release) are stored. Returns the new write pointer.
    std::uint64_t commit() noexcept {
      AQUEDUCT_ASSERT(q_, "reservation already committed or abandoned");
      pm4_queue* q = std::exchange(q_, nullptr);
      if (used_ < span_.count) {
        const bool back = q->reserver_.try_rollback({span_.begin + used_, span_.count - used_});
        AQUEDUCT_VERIFY(back, "single-producer tail rollback failed");
        span_.count = used_;
      }
      if (used_ == 0) {
        q->open_ = false;
        return span_.begin;
      }
      if (staged_) q->copy_in(span_.begin, out_.first(used_));
      return q->committed(span_);
    }

    // Gives the dwords back (nothing was published). Called by the destructor.
    void abandon() noexcept {
      if (!q_) return;
      pm4_queue* q = std::exchange(q_, nullptr);
      if (q->reserver_.try_rollback(span_)) {
        q->open_ = false;
        return;
      }
      // Unreachable with one producer and one open reservation; kept as the documented fallback:
      // one NOP over the whole span, published.
      std::array<std::uint32_t, max_reservation_dwords> nop{};
      encoder::nop(std::span<std::uint32_t>(nop.data(), span_.count), span_.count);
      q->copy_in(span_.begin, std::span<const std::uint32_t>(nop.data(), span_.count));
      (void)q->committed(span_);
    }

   private:
    friend class pm4_queue;
    reservation(pm4_queue* q, ring_span s, std::span<std::uint32_t> out, bool staged) noexcept
        : q_(q), span_(s), out_(out), staged_(staged) {}
    pm4_queue* q_ = nullptr;
    ring_span span_{};
    std::span<std::uint32_t> out_{};
    std::uint32_t used_ = 0;
    bool staged_ = false;
  };

  // Reserve `dwords` (<= max_reservation_dwords). If the ring is full, wait up to `timeout`
  // for the CP (back-off: pauses, yields, then sleeps of up to 1 ms); then errc::queue_full with
  // the queue described, or the CP's stop (pm4_queue_memory::stopped) once it stopped.
  result<reservation> try_reserve(std::uint32_t dwords, sync::nanoseconds timeout = sync::nanoseconds::zero()) {
    AQUEDUCT_ASSERT(dwords >= 1 && dwords <= max_reservation_dwords && dwords <= mem_.ring_dwords,
                    "PM4 reservation size out of range");
    AQUEDUCT_ASSERT(!open_, "one reservation at a time on a PM4 queue");
    AQUEDUCT_TRY(const ring_span s, claim(dwords, timeout));
    open_ = true;
    const std::uint32_t first = static_cast<std::uint32_t>(s.begin & (mem_.ring_dwords - 1));
    if (first + dwords <= mem_.ring_dwords)
      return reservation(this, s, std::span<std::uint32_t>(mem_.ring + first, dwords), false);
    return reservation(this, s, std::span<std::uint32_t>(staging_.data(), dwords), true);
  }
  reservation reserve(std::uint32_t dwords, sync::nanoseconds timeout = sync::infinite) {
    return try_reserve(dwords, timeout).value();
  }

  // Prebuilt dwords (`head`, then `tail`), as they are: copied into the ring and published with
  // ONE write-pointer store and doorbell when they fit in half the ring, else in parts of half the
  // ring (one doorbell each). `start` (optional) receives the write pointer of the first dword.
  // Returns the write pointer after the last.
  result<std::uint64_t> try_submit_dwords(std::span<const std::uint32_t> head, std::span<const std::uint32_t> tail,
                                          sync::nanoseconds timeout = sync::infinite, std::uint64_t* start = nullptr) {
    AQUEDUCT_ASSERT(!open_, "a PM4 reservation is open");
    if (start) *start = reserver_.write_index(std::memory_order_relaxed);
    const std::size_t total = head.size() + tail.size();
    std::uint64_t w = reserver_.write_index(std::memory_order_relaxed);
    for (std::size_t done = 0; done < total;) {
      const auto n = static_cast<std::uint32_t>(std::min<std::size_t>(total - done, mem_.ring_dwords / 2));
      AQUEDUCT_TRY(const ring_span s, claim(n, timeout));
      // The part of `head` in [done, done + n), then the part of `tail`.
      const std::size_t h = done < head.size() ? std::min<std::size_t>(n, head.size() - done) : 0;
      if (h) copy_in(s.begin, head.subspan(done, h));
      if (h < n) copy_in(s.begin + h, tail.subspan(done + h - head.size(), n - h));
      w = committed(s);
      done += n;
    }
    return w;
  }

  // ---- commands (one reservation, one doorbell each) ------------------------------------------
  // Dwords `try_dispatch` reserves for this descriptor.
  [[nodiscard]] static constexpr std::uint32_t dispatch_command_dwords(const abi::kernel_descriptor& kd) noexcept {
    return static_cast<std::uint32_t>(encoder::acquire_mem_dwords + encoder::dispatch_dwords(kd) +
                                      encoder::event_write_dwords + 2 * encoder::release_mem_dwords);
  }
  // ACQUIRE_MEM (invalidate before) + registers + DISPATCH_DIRECT + CS_PARTIAL_FLUSH + completion
  // RELEASE_MEM (write-back after). Without a completion address, an ACQUIRE_MEM full barrier
  // writes the caches back instead. Returns the write pointer after the command.
  // The dwords are those of a dispatch template (queue/pm4_dispatch_template.hpp) the queue keeps
  // for the last kernel and launch shape it dispatched: rebuilt by the encoder when anything but
  // grid, kernarg, dispatch pointer and completion address/value changes, copied otherwise.
  AQUEDUCT_ALWAYS_INLINE result<std::uint64_t> try_dispatch(const pm4::dispatch_params& p, const pm4_completion& c = {},
                                                            sync::nanoseconds timeout = sync::infinite) {
    AQUEDUCT_ASSERT(p.kd != nullptr, "dispatch needs a kernel descriptor");
    AQUEDUCT_ASSERT(!p.indirect_counts, "DISPATCH_INDIRECT: encoder::dispatch + try_submit_dwords, not a dispatch template");
    pm4::dispatch_patch x;
    const pm4::dispatch_template<Target>& t = last_dispatch_.get(p, c, x);
    return try_dispatch(t, x, timeout);
  }
  // A prebuilt command (pm4::dispatch_template, built once per kernel and launch shape) with its
  // per-dispatch fields: claim, one copy, the patches, write pointer, doorbell — no reservation
  // object. A full ring waits up to `timeout` (then errc::queue_full, nothing written).
  AQUEDUCT_ALWAYS_INLINE result<std::uint64_t> try_dispatch(const pm4::dispatch_template<Target>& t, const pm4::dispatch_patch& x,
                                                            sync::nanoseconds timeout = sync::infinite) {
    AQUEDUCT_ASSERT(!open_, "a PM4 reservation is open");
    AQUEDUCT_ASSERT(t.size() != 0, "empty dispatch template");
    ring_span s;
    if (!reserver_.try_claim(t.size(), s)) [[unlikely]] {
      AQUEDUCT_TRY(s, claim_slow(t.size(), timeout));
    }
    const std::uint32_t first = static_cast<std::uint32_t>(s.begin & (mem_.ring_dwords - 1));
    if (first + t.size() <= mem_.ring_dwords) [[likely]]
      t.write(mem_.ring + first, x);
    else
      t.write_wrapped(mem_.ring, mem_.ring_dwords, s.begin, x);
    return committed(s);
  }
  // Completion of everything before it.
  result<std::uint64_t> try_signal(const pm4_completion& c, sync::nanoseconds timeout = sync::infinite) {
    AQUEDUCT_TRY(auto r, try_reserve(2 * encoder::release_mem_dwords, timeout));
    r.complete(c);
    return r.commit();
  }
  // Stall the queue until `(*addr & mask) >= reference` (a signal wait, tinygrad's `wait`).
  result<std::uint64_t> try_wait(gpu_va addr, std::uint32_t reference, std::uint32_t mask = 0xFFFFFFFFu,
                                 sync::nanoseconds timeout = sync::infinite) {
    AQUEDUCT_TRY(auto r, try_reserve(encoder::wait_reg_mem_dwords, timeout));
    r.wait(addr, reference, mask);
    return r.commit();
  }
  // The GPU clock counter (64-bit) to `addr` at end of pipe.
  result<std::uint64_t> try_timestamp(gpu_va addr, sync::nanoseconds timeout = sync::infinite) {
    AQUEDUCT_TRY(auto r, try_reserve(encoder::release_mem_dwords, timeout));
    r.timestamp(addr);
    return r.commit();
  }
  // Full cache write-back and invalidation (tinygrad memory_barrier's ACQUIRE_MEM).
  result<std::uint64_t> try_barrier(sync::nanoseconds timeout = sync::infinite) {
    AQUEDUCT_TRY(auto r, try_reserve(encoder::acquire_mem_dwords, timeout));
    r.acquire_mem(encoder::full_barrier_cntl);
    return r.commit();
  }
  std::uint64_t dispatch(const pm4::dispatch_params& p, const pm4_completion& c = {}) { return try_dispatch(p, c).value(); }
  std::uint64_t signal(const pm4_completion& c) { return try_signal(c).value(); }
  std::uint64_t wait(gpu_va addr, std::uint32_t reference) { return try_wait(addr, reference).value(); }
  std::uint64_t timestamp(gpu_va addr) { return try_timestamp(addr).value(); }
  std::uint64_t barrier() { return try_barrier().value(); }

  // ---- state and diagnostics -------------------------------------------------------------------
  [[nodiscard]] std::uint32_t ring_dwords() const noexcept { return mem_.ring_dwords; }
  [[nodiscard]] std::uint64_t read_pointer() const noexcept { return reserver_.read_index(std::memory_order_acquire); }
  [[nodiscard]] std::uint64_t write_pointer() const noexcept { return reserver_.write_index(std::memory_order_acquire); }
  [[nodiscard]] const pm4_queue_memory& memory() const noexcept { return mem_; }
  [[nodiscard]] Doorbell& get_doorbell() noexcept { return doorbell_; }

  // "PM4 queue (gfx11+pm4-priv, 16384 dwords, ring 0x...): rptr 120, wptr 240 (dwords);
  // packet at rptr: DISPATCH_DIRECT ..." — the stalled packet is the one at the read pointer.
  void describe(std::string& out) const {
    const std::uint64_t r = read_pointer(), w = write_pointer();
    char buf[200];
    std::snprintf(buf, sizeof buf, "PM4 queue (%s, %u dwords, ring 0x%llx): rptr %llu, wptr %llu (dwords)",
                  target::name().c_str(), mem_.ring_dwords,
                  static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(mem_.ring)),
                  static_cast<unsigned long long>(r), static_cast<unsigned long long>(w));
    out += buf;
    if (r >= w) {
      out += "; empty";
      return;
    }
    std::array<std::uint32_t, 32> pkt{};
    const std::uint64_t avail = std::min<std::uint64_t>(w - r, pkt.size());
    for (std::uint64_t i = 0; i < avail; ++i)
      pkt[i] = sync::atomic_load(mem_.ring[(r + i) & (mem_.ring_dwords - 1)], std::memory_order_relaxed);
    const std::uint64_t len = std::min<std::uint64_t>(avail, abi::pm4::type3_packet_dwords(pkt[0]));
    out += "; packet at rptr: ";
    pm4::describe_packet(std::span<const std::uint32_t>(pkt.data(), len), out);
  }
  [[nodiscard]] sync::diagnostics diagnostics() const noexcept { return sync::diagnostics(*this); }

 private:
  // Claims `n` dwords, waiting up to `timeout` for the CP to make room.
  AQUEDUCT_ALWAYS_INLINE result<ring_span> claim(std::uint32_t n, sync::nanoseconds timeout) {
    ring_span s;
    if (AQUEDUCT_LIKELY(reserver_.try_claim(n, s))) return s;
    return claim_slow(n, timeout);
  }
  // The ring is full: the one wait loop (sync::wait_until) with nothing to block on (the CP
  // raises no interrupt for room), so it backs off — pauses, yields, then sleeps of up to 1 ms —
  // until the claim succeeds, the CP stopped (mem_.stopped: that failure, the queue described),
  // or `timeout` passes (errc::queue_full, the queue described).
  AQUEDUCT_NOINLINE result<ring_span> claim_slow(std::uint32_t n, sync::nanoseconds timeout) {
    ring_span s;
    sync::no_events none;
    AQUEDUCT_TRY_VOID(sync::wait_until(
        none, 0, false, sync::wait_policy::block(), timeout, [&] { return reserver_.try_claim(n, s); },
        [&] { return mem_.stopped.described(*this); },
        [&](sync::nanoseconds waited) {
          char buf[120];
          std::snprintf(buf, sizeof buf, "no room for %u dwords after %.3f ms; ", n,
                        std::chrono::duration<double, std::milli>(waited).count());
          std::string d = buf;
          describe(d);
          return failure(errc::queue_full, std::move(d));
        }));
    return s;
  }
  // `src` to the ring from dword `at` on: at most two copies (before and after the ring's end).
  void copy_in(std::uint64_t at, std::span<const std::uint32_t> src) noexcept {
    if (src.empty()) return;
    const auto first = static_cast<std::size_t>(at & (mem_.ring_dwords - 1));
    const std::size_t before_end = std::min<std::size_t>(src.size(), mem_.ring_dwords - first);
    std::memcpy(mem_.ring + first, src.data(), before_end * 4);
    if (before_end < src.size()) std::memcpy(mem_.ring, src.data() + before_end, (src.size() - before_end) * 4);
  }
  // Write pointer (release), then doorbell (release) = write pointer in dwords (spec/kfd.md §3.3).
  std::uint64_t committed(ring_span s) noexcept {
    const std::uint64_t w = reserver_.commit(s);  // the value stored, not read back
    open_ = false;
    doorbell_.ring(w);
    return w;
  }

  pm4_queue_memory mem_;
  Doorbell doorbell_;
  ring_reserver<producer::single> reserver_;
  bool open_ = false;
  pm4::dispatch_template_cache<Target> last_dispatch_;
  std::array<std::uint32_t, max_reservation_dwords> staging_{};
};

}  // namespace aqueduct::ring
