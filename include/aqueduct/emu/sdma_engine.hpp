// aqueduct/emu/sdma_engine.hpp — the emulated SDMA engine of one user-mode SDMA queue.
//
// Layer: emu. One `sdma_engine` per KFD SDMA queue, on its own thread, does what an SDMA engine's
// queue does (DESIGN.md §4): it polls the write pointer in memory (bytes; KFD's SDMA MQD sets
// RB_WPTR_POLL_ADDR to the queue's write pointer, kfd_mqd_manager_v9/v11.c update_mqd_sdma) and
// is woken by the doorbell (64-bit, the same byte count, spec kfd.md §3.3) — reading the doorbell
// word itself only when the queue has no write pointer, since a doorbell slot keeps the last value
// a previous queue of the same id rang — decodes packets at its read pointer (bytes, monotonic; the ring offset is the
// pointer modulo the ring size) and runs NOP, COPY_LINEAR, WRITE_UNTILED, CONSTANT_FILL, FENCE,
// TRAP, POLL_REGMEM (memory polls; the HDP-flush form completes at once: the emulator has no HDP),
// TIMESTAMP (GET, GET_GLOBAL), ATOMIC (ADD64), GCR_REQ (a no-op: memory is coherent), INDIRECT
// and COND_EXE (docs/pm4-sdma.md "Device-evaluated control flow"), in the
// layouts of engine versions 4, 5.0, 5.2, 6 and 7 (abi/sdma.hpp, spec/packets.md §3). After each
// packet it stores the new read pointer (release). Packets may straddle the ring end (Linux's own
// SDMA rings are written dword by dword with wrap-around, amdgpu_ring_write).
// Strict on purpose: every memory access is checked against the VM for the queue's GPU
// (`vm_access::is_mapped`) BEFORE it happens, and a miss stops the queue in an error state
// (`error()`: fault kind, the faulting address, the packet's ring offset and dwords) — never a
// crash. Also errors: unknown opcodes/sub-ops, bits set above a byte-count field's width, a
// COPY_LINEAR longer than 0x3FFF00 bytes on the 22-bit engines (Mesa: the hardware cannot copy
// the last 255 bytes of the range, spec §3.3), misaligned FENCE/POLL/TIMESTAMP/ATOMIC addresses,
// a dword fill with a ragged length. A POLL_REGMEM with a finite retry count gives up after that
// many polls and continues (hardware behaviour on exhaustion is UNVERIFIED).
// Preemption (a context switch of the engine away from this queue and back): on demand
// (request_preemption / resume) or on a timer (sdma_engine_options::preempt_interval, the fault
// plan's `preempt`). It is taken between packets — the engine first finishes the packet it runs,
// as KFD's SDMA dequeue clears RB_ENABLE and waits for CONTEXT_STATUS.IDLE before it reads the
// ring registers (amdgpu_amdkfd_gfx_v9.c kgd_gfx_v9_hqd_sdma_destroy; v10/v11 alike) — or while
// a POLL_REGMEM waits. The save writes RB_RPTR into the queue's MQD image (`sdma_mqd`, what
// hqd_sdma_destroy keeps: sdmax_rlcx_rb_rptr/_hi) and disables the doorbell; the engine forgets
// everything else it held (the packet it had read, a poll's retry count). The restore
// (kgd_hqd_sdma_load) sets RB_RPTR from the MQD and RB_WPTR from the queue's write pointer in
// memory (read_user_wptr) — so doorbells rung while the queue was off are not needed — and the
// engine fetches again from there. Not taken while a COND_EXE is discarding the dwords after it
// (the discard is part of that packet) or inside an indirect buffer (the IB runs whole).
// Thread safety: notify/ring_doorbell (emu/queue_wakeup.hpp), error/read_offset/wait_idle/stop may
// be called from any thread. The vm_access and event_notifier must outlive the engine.
#pragma once

#include <aqueduct/abi/sdma.hpp>
#include <aqueduct/core/result.hpp>
#include <aqueduct/emu/engine_error.hpp>
#include <aqueduct/emu/engine_ports.hpp>
#include <aqueduct/emu/queue_binding.hpp>
#include <aqueduct/emu/queue_wakeup.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

namespace aqueduct::emu {

// Where an SDMA queue's memory is (from KFD CREATE_QUEUE) and which engine version decodes it. The
// pointers are u64 byte counts (the write pointer is the engine's wptr poll address); the ring a
// power of two >= 1024 bytes.
struct sdma_queue_binding : queue_binding {
  const std::uint64_t* doorbell = nullptr;  // the doorbell word (read only when write_pointer_va is 0)
  abi::sdma::engine engine = abi::sdma::engine::v6_0;
};

using abi::sdma::engine_name;

struct sdma_engine_options {
  std::chrono::microseconds idle_poll_max{1000};  // longest sleep between doorbell polls when idle
  std::chrono::microseconds spin{50};             // busy-poll this long before sleeping
  std::chrono::microseconds preempt_interval{0};  // preempted on this timer (0: only on demand)
  std::chrono::microseconds preempt_off_for{0};   // a timer preemption keeps the queue off this long
  // Pause after each FENCE write (0: none). A test knob: it widens the window in which a host that
  // saw one FENCE's value acts while the rest of that submission (a 64-bit value's second FENCE,
  // the event's FENCE and TRAP, the queue's own completion) has not run yet.
  std::chrono::microseconds fence_pause{0};
};

// What a preemption saves of an SDMA queue (KFD's SDMA MQD: the ring registers it reads back at a
// dequeue; the ring base, size and pointer addresses are the binding's and do not change).
struct sdma_mqd {
  std::uint64_t rb_rptr = 0;  // RB_RPTR / RB_RPTR_HI (bytes, monotonic)
  bool saved = false;         // the queue is off the engine
};

struct sdma_preemption_stats {
  std::uint64_t preemptions = 0;  // saves (each followed by a restore unless the queue stopped)
  std::uint64_t with_work = 0;    // of them, with published packets not yet run (rptr < wptr)
  std::uint64_t during_poll = 0;  // of them, while a POLL_REGMEM waited
};

class sdma_engine : public queue_wakeup {
 public:
  sdma_engine(const sdma_engine&) = delete;
  sdma_engine& operator=(const sdma_engine&) = delete;
  ~sdma_engine() { stop(); }

  // Starts the engine thread. invalid_argument if the ring or pointers are not mapped for the
  // GPU or the ring size is not a power of two >= 1024.
  [[nodiscard]] static result<std::unique_ptr<sdma_engine>> try_create(const sdma_queue_binding& b, const vm_access& vm,
                                                                      event_notifier& events, sdma_engine_options opt = {}) {
    if (b.ring_bytes < 1024 || (b.ring_bytes & (b.ring_bytes - 1)) != 0)
      return failure(errc::invalid_argument, "SDMA ring size must be a power of two >= 1024 bytes");
    if (b.ring_va % 4 != 0 || !vm.is_mapped(b.ring_va, b.ring_bytes))
      return failure(errc::invalid_argument, "SDMA ring is not mapped for the queue's GPU or not dword aligned");
    if (b.read_pointer_va % 8 != 0 || !vm.is_mapped(b.read_pointer_va, 8))
      return failure(errc::invalid_argument, "SDMA read pointer is not mapped or not 8-byte aligned");
    if (b.write_pointer_va == 0 ? !b.doorbell : (b.write_pointer_va % 8 != 0 || !vm.is_mapped(b.write_pointer_va, 8)))
      return failure(errc::invalid_argument, "SDMA write pointer is not mapped or not 8-byte aligned (and no doorbell)");
    std::unique_ptr<sdma_engine> e(new sdma_engine(b, vm, events, opt));
    e->thread_ = std::thread([p = e.get()] { p->run(); });
    return e;
  }
  [[nodiscard]] static std::unique_ptr<sdma_engine> create(const sdma_queue_binding& b, const vm_access& vm,
                                                           event_notifier& events, sdma_engine_options opt = {}) {
    return try_create(b, vm, events, opt).value();
  }

  // notify() / ring_doorbell(v) (queue_wakeup) wake the engine: the model of it noticing a
  // doorbell write. The work itself is found through the write pointer.
  [[nodiscard]] bool has_error() const noexcept { return errors_.has_error(); }
  // Why the queue stopped (engine_kind::sdma; position = the packet's read pointer in bytes).
  [[nodiscard]] std::optional<engine_error> error() const { return errors_.error(); }
  [[nodiscard]] std::uint64_t read_offset() const noexcept { return rptr_.load(std::memory_order_acquire); }
  [[nodiscard]] const sdma_queue_binding& binding() const noexcept { return b_; }
  // Bytes moved by COPY_LINEAR and CONSTANT_FILL so far.
  [[nodiscard]] std::uint64_t bytes_moved() const noexcept { return moved_.load(std::memory_order_relaxed); }

  // ---- preemption (see the header comment) ------------------------------------------------------
  // On demand: the queue goes off the engine at its next preemption point and stays off until
  // resume().
  void request_preemption() noexcept {
    {
      std::lock_guard lock(mu_);
      hold_.store(true, std::memory_order_relaxed);
      ++wake_seq_;
    }
    cv_.notify_all();
  }
  void resume() noexcept {
    {
      std::lock_guard lock(mu_);
      hold_.store(false, std::memory_order_relaxed);
    }
    cv_.notify_all();
  }
  // True once the queue is saved and off the engine (within `timeout`).
  bool wait_preempted(std::chrono::milliseconds timeout) const {
    std::unique_lock lock(mu_);
    return progress_cv_.wait_for(lock, timeout, [&] { return mqd_.saved || stop_; }) && mqd_.saved;
  }
  [[nodiscard]] sdma_preemption_stats preemption_stats() const {
    std::lock_guard lock(mu_);
    return pstats_;
  }
  // The MQD image (meaningful while the queue is off: mqd().saved).
  [[nodiscard]] sdma_mqd mqd() const {
    std::lock_guard lock(mu_);
    return mqd_;
  }

  // Blocks until the read pointer reaches `offset` (true), the timeout passes or the queue is in
  // error (false).
  bool wait_idle(std::uint64_t offset, std::chrono::milliseconds timeout) const {
    std::unique_lock lock(mu_);
    return progress_cv_.wait_for(lock, timeout, [&] { return read_offset() >= offset || has_error(); }) &&
           read_offset() >= offset;
  }

  void stop() noexcept {
    (void)request_stop();
    if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
  }

 private:
  sdma_engine(const sdma_queue_binding& b, const vm_access& vm, event_notifier& ev, sdma_engine_options opt)
      : b_(b), vm_(vm), events_(ev), opt_(opt) {
    next_preempt_ = std::chrono::steady_clock::now() + opt_.preempt_interval;
    ring_ = static_cast<const std::uint32_t*>(vm_.host_address(b_.ring_va));
    rptr_word_ = static_cast<std::uint64_t*>(vm_.host_address(b_.read_pointer_va));
    rptr_.store(std::atomic_ref<std::uint64_t>(*rptr_word_).load(std::memory_order_acquire), std::memory_order_release);
  }

  [[nodiscard]] std::uint64_t wptr() const noexcept {
    if (b_.write_pointer_va == 0) return std::atomic_ref<const std::uint64_t>(*b_.doorbell).load(std::memory_order_acquire);
    return std::atomic_ref<std::uint64_t>(*static_cast<std::uint64_t*>(vm_.host_address(b_.write_pointer_va)))
        .load(std::memory_order_acquire);
  }

  void run() {
    auto idle_since = std::chrono::steady_clock::now();
    std::chrono::microseconds nap{10};
    while (!stopping() && !has_error()) {
      if (skip_ == 0 && preemption_due()) {  // between packets, or while a POLL_REGMEM waits
        if (!preempt()) break;
        idle_since = std::chrono::steady_clock::now();
        continue;
      }
      const std::uint64_t seen = wake_seq();  // before looking, so no wake-up is lost
      const std::uint64_t w = wptr();
      const std::uint64_t r = read_offset();
      if (r < w && skip_ != 0) {  // COND_EXE discarded what follows it: consume those dwords as they arrive
        const std::uint64_t n = std::min<std::uint64_t>(skip_, (w - r) / 4);
        skip_ -= static_cast<std::uint32_t>(n);
        if (n != 0) advance(r + 4 * n);
        continue;
      }
      if (r < w && step(r, w)) {
        idle_since = std::chrono::steady_clock::now();
        nap = std::chrono::microseconds{10};
        continue;
      }
      if (has_error()) break;
      if (std::chrono::steady_clock::now() - idle_since < opt_.spin) {
        std::this_thread::yield();
        continue;
      }
      wait_for_wakeup(seen, nap);
      if (nap < opt_.idle_poll_max) nap *= 2;
    }
    progress_cv_.notify_all();
  }

  [[nodiscard]] bool preemption_due() {
    if (hold_.load(std::memory_order_relaxed)) return true;
    return opt_.preempt_interval.count() != 0 && std::chrono::steady_clock::now() >= next_preempt_;
  }
  // Save, stay off, restore (see the header comment). false: the engine was stopped meanwhile.
  bool preempt() {
    const bool on_demand = hold_.load(std::memory_order_relaxed);
    // Save: the engine is between packets (or in a poll, which restarts); RB_RPTR to the MQD.
    const std::uint64_t r = read_offset();
    const bool polling = poll_tries_ != 0;
    cur_.clear();
    poll_tries_ = 0;
    {
      std::lock_guard lock(mu_);
      mqd_.rb_rptr = r;
      mqd_.saved = true;
      rptr_.store(0, std::memory_order_release);  // the engine holds no queue state while it is off
      ++pstats_.preemptions;
      if (r < wptr()) ++pstats_.with_work;
      if (polling) ++pstats_.during_poll;
    }
    progress_cv_.notify_all();
    // Off: doorbells are not seen (the doorbell is disabled); only resume, the timer or a stop end it.
    {
      std::unique_lock lock(mu_);
      if (on_demand) cv_.wait(lock, [&] { return stop_ || !hold_.load(std::memory_order_relaxed); });
      else if (opt_.preempt_off_for.count() != 0) cv_.wait_for(lock, opt_.preempt_off_for, [&] { return stop_; });
      if (stop_) {
        rptr_.store(mqd_.rb_rptr, std::memory_order_release);
        return false;
      }
      // Restore: RB_RPTR from the MQD; RB_WPTR is read from the queue's write pointer at every fetch.
      rptr_.store(mqd_.rb_rptr, std::memory_order_release);
      mqd_.saved = false;
    }
    next_preempt_ = std::chrono::steady_clock::now() + opt_.preempt_interval;
    progress_cv_.notify_all();
    return true;
  }

  [[nodiscard]] std::uint32_t dw(std::uint64_t byte_offset) const noexcept {
    return std::atomic_ref<const std::uint32_t>(ring_[(byte_offset & (b_.ring_bytes - 1)) / 4]).load(std::memory_order_relaxed);
  }

  // Runs the packet at `r` if it is complete (true); false when it is not yet all published or
  // a POLL_REGMEM is still waiting (the engine dozes and retries).
  bool step(std::uint64_t r, std::uint64_t w);
  // A packet's length in dwords from its header (and dw3 for WRITE), 0 when `avail` dwords do
  // not tell it yet.
  [[nodiscard]] std::uint32_t packet_dwords(std::uint32_t h, std::uint32_t dw3, std::uint64_t avail) const noexcept;
  enum class outcome : std::uint8_t { done, retry, fault };
  // Runs one packet (its dwords in `pkt`) read at ring offset `r` (the INDIRECT packet's, for a
  // packet of an IB). COND_EXE sets skip_.
  outcome exec(std::span<const std::uint32_t> pkt, std::uint64_t r, bool in_ib);
  // INDIRECT: the IB's packets, in order; a POLL_REGMEM in it is waited for here.
  outcome run_ib(std::span<const std::uint32_t> pkt, std::uint64_t r);

  void advance(std::uint64_t to) {
    std::atomic_ref<std::uint64_t>(*rptr_word_).store(to, std::memory_order_release);
    {
      std::lock_guard lock(mu_);
      rptr_.store(to, std::memory_order_release);
    }
    progress_cv_.notify_all();
  }

  void fail(engine_fault f, std::uint64_t r, std::span<const std::uint32_t> pkt, std::uint64_t address, const std::string& why,
            bool in_ib = false) {
    engine_error e;
    e.engine = engine_kind::sdma;
    e.fault = f;
    e.position = r;
    e.write_position = wptr();
    e.address = address;
    e.in_indirect_buffer = in_ib;
    for (std::size_t i = 0; i < pkt.size() && i < 16; ++i) e.packet.push_back(pkt[i]);
    char buf[256];
    std::snprintf(buf, sizeof buf, "%s: %s%s%s at 0x%llx; %s queue %u on gpu_id %u, rptr %llu, wptr %llu; packet:",
                  engine_name(b_.engine), engine_fault_name(f), why.empty() ? "" : " — ", why.c_str(),
                  static_cast<unsigned long long>(address), engine_name(b_.engine), b_.queue_id, b_.gpu_id,
                  static_cast<unsigned long long>(r), static_cast<unsigned long long>(e.write_position));
    e.detail = buf;
    for (std::uint32_t v : e.packet) {
      std::snprintf(buf, sizeof buf, " %08x", v);
      e.detail += buf;
    }
    // A GPU page fault also reaches the process through the KFD's memory events (after the
    // queue's own record, so a waiter woken by it finds this queue stopped).
    if (errors_.record(std::move(e)) && is_memory_fault(f)) events_.memory_fault(b_.gpu_id, address);
    {
      std::lock_guard lock(mu_);  // pairs with wait_idle's predicate check
    }
    progress_cv_.notify_all();
  }

  static std::string hex(std::uint64_t v) {
    char b[24];
    std::snprintf(b, sizeof b, "%llx", static_cast<unsigned long long>(v));
    return b;
  }

  // [va, va+len) mapped for this GPU; otherwise the first unmapped byte (binary search on the
  // mapped prefix) in `bad`.
  bool check(std::uint64_t va, std::uint64_t len, std::uint64_t& bad) const {
    if (len == 0) return true;
    if (va + len >= va && vm_.data_access_ok(va, len)) return true;
    if (va + len >= va && vm_.is_mapped(va, len)) {  // an injected fault (emu/fault_plan.hpp): at the start
      bad = va;
      return false;
    }
    std::uint64_t lo = 0, hi = len;  // invariant: prefix lo is mapped, prefix hi is not
    while (hi - lo > 1) {
      const std::uint64_t mid = lo + (hi - lo) / 2;
      if (vm_.is_mapped(va, mid)) lo = mid;
      else hi = mid;
    }
    bad = va + lo;
    return false;
  }

  sdma_queue_binding b_;
  const vm_access& vm_;
  event_notifier& events_;
  sdma_engine_options opt_;
  const std::uint32_t* ring_ = nullptr;
  std::uint64_t* rptr_word_ = nullptr;
  std::atomic<std::uint64_t> rptr_{0};
  std::atomic<std::uint64_t> moved_{0};
  std::uint32_t poll_tries_ = 0;  // polls of the current POLL_REGMEM (engine thread only)
  std::uint32_t skip_ = 0;        // COND_EXE: dwords of the current stream to discard (engine thread only)
  std::vector<std::uint32_t> cur_;  // the packet being run (engine thread only)
  std::chrono::steady_clock::time_point next_preempt_{};  // engine thread only
  // Guarded by queue_wakeup::mu_: the MQD image, the statistics; hold_ (on demand) is written
  // under it and read without it at each preemption point.
  sdma_mqd mqd_;
  std::atomic<bool> hold_{false};
  sdma_preemption_stats pstats_;

  mutable std::condition_variable progress_cv_;  // with queue_wakeup::mu_
  engine_error_slot errors_;
  std::thread thread_;
};

inline std::uint32_t sdma_engine::packet_dwords(std::uint32_t h, std::uint32_t dw3, std::uint64_t avail) const noexcept {
  namespace s = abi::sdma;
  const auto op = static_cast<s::op>(s::header_op::get(h));
  const std::uint32_t sub = s::header_sub_op::get(h);
  const s::engine eng = b_.engine;
  switch (op) {
    case s::op::nop: return 1 + s::nop::count::get(h);
    case s::op::copy: return sub == s::sub_op::copy_linear ? s::copy_linear::dwords(eng) : 1;
    case s::op::write:
      if (avail < 4) return 0;
      return sub == s::sub_op::write_linear ? s::write_untiled::head_dwords + s::write_untiled::count::get(dw3) + 1 : 1;
    case s::op::fence: return s::fence::dwords;
    case s::op::trap: return s::trap::dwords;
    case s::op::poll_regmem: return s::poll_regmem::dwords;
    case s::op::atomic: return s::atomic::dwords;
    case s::op::const_fill: return s::constant_fill::dwords;
    case s::op::timestamp: return s::timestamp::dwords;
    case s::op::gcr_req: return s::has_gcr_req(eng) ? s::gcr_req::dwords : 1;
    case s::op::indirect: return s::indirect::dwords;
    case s::op::cond_exe: return s::cond_exe::dwords;
    default: return 1;
  }
}

inline bool sdma_engine::step(std::uint64_t r, std::uint64_t w) {
  // Packet length first: an incomplete packet waits for more of the ring to be published.
  const std::uint64_t avail = (w - r) / 4;
  const std::uint32_t len = packet_dwords(dw(r), avail >= 4 ? dw(r + 12) : 0, avail);
  if (len == 0 || avail < len) return false;
  std::vector<std::uint32_t>& pkt = cur_;
  pkt.resize(len);
  for (std::uint32_t i = 0; i < len; ++i) pkt[i] = dw(r + 4ull * i);
  switch (exec(pkt, r, false)) {
    case outcome::done: advance(r + 4ull * len); return true;
    case outcome::retry:
    case outcome::fault: return false;
  }
  return false;
}

inline sdma_engine::outcome sdma_engine::run_ib(std::span<const std::uint32_t> pkt, std::uint64_t r) {
  namespace s = abi::sdma;
  namespace ib = s::indirect;
  auto refuse = [&](engine_fault f, std::uint64_t a, const std::string& why) {
    fail(f, r, pkt, a, why);
    return outcome::fault;
  };
  const std::uint32_t h = pkt[0];
  if ((h & ~(s::header_op::mask | ib::vmid::mask | (s::has_gcr_req(b_.engine) ? ib::priv_v5::mask : 0u))) != 0)
    return refuse(engine_fault::reserved_bits, 0, "INDIRECT header bits outside OP/VMID/PRIV");
  const std::uint64_t base = (std::uint64_t{pkt[2]} << 32) | pkt[1];
  const std::uint32_t size = ib::ib_size::get(pkt[3]);
  if (base % 32) return refuse(engine_fault::misaligned_address, base, "INDIRECT IB base must be 32-byte aligned");
  if ((pkt[3] & ~ib::ib_size::mask) != 0) return refuse(engine_fault::reserved_bits, 0, "INDIRECT dw3 outside IB_SIZE");
  if (size == 0) return refuse(engine_fault::bad_count, 0, "INDIRECT of 0 dwords");
  // The packet must END on an 8-dword boundary of the ring (Linux sdma_v6_0_ring_emit_ib pads NOPs first).
  if ((r + 4ull * pkt.size()) % 32 != 0)
    return refuse(engine_fault::misaligned_address, 0, "INDIRECT must end on an 8-dword ring boundary (pad NOPs before it: encoder::indirect_pad_before)");
  std::uint64_t bad = 0;
  if (!check(base, 4ull * size, bad)) return refuse(engine_fault::memory_violation, bad, "INDIRECT IB read");
  std::vector<std::uint32_t> buf(size);
  std::memcpy(buf.data(), vm_.host_address(base), 4ull * size);
  skip_ = 0;
  for (std::uint32_t at = 0; at < size;) {
    if (skip_ != 0) {  // COND_EXE inside the IB: its next dwords are discarded
      at += std::min(skip_, size - at);
      skip_ = 0;
      continue;
    }
    const std::uint32_t len = packet_dwords(buf[at], at + 3 < size ? buf[at + 3] : 0, size - at);
    if (len == 0 || at + len > size) {
      fail(engine_fault::bad_count, r, std::span<const std::uint32_t>(buf).subspan(at), base + 4ull * at,
           "packet runs past the end of its indirect buffer", true);
      return outcome::fault;
    }
    const auto p = std::span<const std::uint32_t>(buf).subspan(at, len);
    outcome o;
    while ((o = exec(p, r, true)) == outcome::retry) {  // a POLL_REGMEM in the IB: poll here
      std::unique_lock lock(mu_);
      if (stop_) return outcome::fault;
      cv_.wait_for(lock, opt_.idle_poll_max);
    }
    if (o != outcome::done) return o;
    at += len;
  }
  skip_ = 0;  // a skip does not reach past the end of its IB
  return outcome::done;
}

inline sdma_engine::outcome sdma_engine::exec(std::span<const std::uint32_t> pkt, std::uint64_t r, bool in_ib) {
  namespace s = abi::sdma;
  const std::uint32_t h = pkt[0];
  const auto op = static_cast<s::op>(s::header_op::get(h));
  const std::uint32_t sub = s::header_sub_op::get(h);
  const s::engine eng = b_.engine;
  const auto len = static_cast<std::uint32_t>(pkt.size());
  auto at = [&](std::uint32_t i) { return pkt[i]; };
  auto addr = [&](std::uint32_t i) { return (std::uint64_t{at(i + 1)} << 32) | at(i); };
  std::uint64_t bad = 0;
  auto refuse = [&](engine_fault f, std::uint64_t a, const std::string& why) {
    fail(f, r, pkt, a, why, in_ib);
    return outcome::fault;
  };

  switch (op) {
    case s::op::nop:
      break;
    case s::op::copy: {
      if (sub != s::sub_op::copy_linear)
        return refuse(engine_fault::unsupported_packet, 0, "COPY sub-op " + std::to_string(sub) + " (only LINEAR is modelled)");
      const unsigned bits = s::count_bits(eng);
      const std::uint32_t count = at(1);
      if (count >> bits) return refuse(engine_fault::reserved_bits, 0, "COPY_LINEAR count 0x" + hex(count) + " wider than " + std::to_string(bits) + " bits");
      const std::uint64_t bytes = std::uint64_t{count} + 1;
      if (bits == 22 && bytes > s::max_copy_bytes(eng))
        return refuse(engine_fault::bad_count, 0, std::to_string(bytes) + " bytes: a 22-bit engine cannot copy more than 0x3FFF00 (Mesa)");
      const std::uint64_t src = addr(3), dst = addr(5);
      if (!check(src, bytes, bad)) return refuse(engine_fault::memory_violation, bad, "COPY_LINEAR source read");
      if (!check(dst, bytes, bad)) return refuse(engine_fault::memory_violation, bad, "COPY_LINEAR destination write");
      std::memmove(vm_.host_address(dst), vm_.host_address(src), bytes);
      moved_.fetch_add(bytes, std::memory_order_relaxed);
      break;
    }
    case s::op::write: {
      if (sub != s::sub_op::write_linear) return refuse(engine_fault::unsupported_packet, 0, "WRITE sub-op " + std::to_string(sub));
      const std::uint64_t dst = addr(1);
      const std::uint64_t bytes = 4ull * (len - s::write_untiled::head_dwords);
      if (dst % 4) return refuse(engine_fault::misaligned_address, dst, "WRITE_UNTILED destination");
      if (!check(dst, bytes, bad)) return refuse(engine_fault::memory_violation, bad, "WRITE_UNTILED destination");
      auto* out = static_cast<std::uint32_t*>(vm_.host_address(dst));
      for (std::uint32_t i = s::write_untiled::head_dwords; i < len; ++i)
        std::atomic_ref<std::uint32_t>(out[i - s::write_untiled::head_dwords]).store(at(i), std::memory_order_relaxed);
      break;
    }
    case s::op::const_fill: {
      const unsigned bits = s::fill_count_bits(eng);
      const std::uint32_t count = at(4);
      if (count >> bits) return refuse(engine_fault::reserved_bits, 0, "CONSTANT_FILL count 0x" + hex(count) + " wider than " + std::to_string(bits) + " bits");
      const std::uint64_t bytes = std::uint64_t{count} + 1, dst = addr(1);
      const std::uint32_t size = s::constant_fill::fillsize::get(h), value = at(3);
      if (size != s::constant_fill::fillsize_byte && size != s::constant_fill::fillsize_dword)
        return refuse(engine_fault::unsupported_packet, 0, "CONSTANT_FILL FILLSIZE " + std::to_string(size));
      if (size == s::constant_fill::fillsize_dword && (bytes % 4 || dst % 4))
        return refuse(engine_fault::bad_count, dst, "dword fill of " + std::to_string(bytes) + " bytes");
      if (!check(dst, bytes, bad)) return refuse(engine_fault::memory_violation, bad, "CONSTANT_FILL destination");
      auto* out = static_cast<unsigned char*>(vm_.host_address(dst));
      if (size == s::constant_fill::fillsize_byte) {
        std::memset(out, static_cast<int>(value & 0xFF), bytes);
      } else {
        for (std::uint64_t i = 0; i < bytes; i += 4) std::memcpy(out + i, &value, 4);
      }
      moved_.fetch_add(bytes, std::memory_order_relaxed);
      break;
    }
    case s::op::fence: {
      const std::uint64_t a = addr(1);
      if (a % 4) return refuse(engine_fault::misaligned_address, a, "FENCE address");
      if (!check(a, 4, bad)) return refuse(engine_fault::memory_violation, bad, "FENCE write");
      std::atomic_ref<std::uint32_t>(*static_cast<std::uint32_t*>(vm_.host_address(a))).store(at(3), std::memory_order_release);
      if (AQUEDUCT_UNLIKELY(opt_.fence_pause.count() != 0)) std::this_thread::sleep_for(opt_.fence_pause);
      break;
    }
    case s::op::trap:
      // KFD: an SDMA trap interrupt signals the event named by INT_CONTEXT [27:0].
      events_.signal_event(s::trap::int_context::get(at(1)));
      break;
    case s::op::poll_regmem: {
      namespace p = s::poll_regmem;
      if (p::hdp_flush::get(h)) break;  // no HDP in the emulator: the flush is done at once
      if (!p::mem_poll::get(h)) return refuse(engine_fault::unsupported_packet, 0, "POLL_REGMEM on a register");
      const std::uint64_t a = addr(1);
      if (a % 4) return refuse(engine_fault::misaligned_address, a, "POLL_REGMEM address");
      if (!check(a, 4, bad)) return refuse(engine_fault::memory_violation, bad, "POLL_REGMEM read");
      const std::uint32_t v =
          std::atomic_ref<std::uint32_t>(*static_cast<std::uint32_t*>(vm_.host_address(a))).load(std::memory_order_acquire) & at(4);
      const std::uint32_t ref = at(3);
      bool pass = false;
      switch (static_cast<p::function>(p::func::get(h))) {
        case p::function::always: pass = true; break;
        case p::function::less: pass = v < ref; break;
        case p::function::less_equal: pass = v <= ref; break;
        case p::function::equal: pass = v == ref; break;
        case p::function::not_equal: pass = v != ref; break;
        case p::function::greater_equal: pass = v >= ref; break;
        case p::function::greater: pass = v > ref; break;
        default: return refuse(engine_fault::reserved_bits, 0, "POLL_REGMEM FUNC 7");
      }
      const std::uint32_t retries = p::retry_count::get(at(5));
      if (!pass && (retries == p::retry_forever || poll_tries_ < retries)) {
        ++poll_tries_;
        return outcome::retry;  // doze, then poll again
      }
      poll_tries_ = 0;
      break;
    }
    case s::op::timestamp: {
      if (sub != s::sub_op::timestamp_get && sub != s::sub_op::timestamp_get_global)
        return refuse(engine_fault::unsupported_packet, 0, "TIMESTAMP sub-op " + std::to_string(sub));
      const std::uint64_t a = addr(1);
      if (a % s::timestamp::addr_alignment) return refuse(engine_fault::misaligned_address, a, "TIMESTAMP address [31:3]");
      if (!check(a, 8, bad)) return refuse(engine_fault::memory_violation, bad, "TIMESTAMP write");
      std::atomic_ref<std::uint64_t>(*static_cast<std::uint64_t*>(vm_.host_address(a)))
          .store(events_.gpu_clock(), std::memory_order_release);  // the GPU clock counter, as RELEASE_MEM's
      break;
    }
    case s::op::atomic: {
      const std::uint32_t aop = s::atomic::atomic_op::get(h);
      if (aop != s::atomic::op_add64 || s::atomic::loop::get(h))
        return refuse(engine_fault::unsupported_packet, 0, "ATOMIC op " + std::to_string(aop) + (s::atomic::loop::get(h) ? " with LOOP" : "") + " (only ADD64 is modelled)");
      const std::uint64_t a = addr(1);
      if (a % 8) return refuse(engine_fault::misaligned_address, a, "ATOMIC address");
      if (!check(a, 8, bad)) return refuse(engine_fault::memory_violation, bad, "ATOMIC");
      std::atomic_ref<std::uint64_t>(*static_cast<std::uint64_t*>(vm_.host_address(a))).fetch_add(addr(3), std::memory_order_acq_rel);
      break;
    }
    case s::op::gcr_req:
      if (!s::has_gcr_req(eng)) return refuse(engine_fault::unknown_opcode, 0, "op 17 on SDMA 4");
      break;  // caches are coherent in the emulator
    case s::op::indirect:
      if (in_ib) return refuse(engine_fault::unsupported_packet, 0, "INDIRECT inside an IB (SDMA IBs do not nest)");
      return run_ib(pkt, r);
    case s::op::cond_exe: {
      namespace c = s::cond_exe;
      const std::uint64_t a = addr(1);
      if (a % 4) return refuse(engine_fault::misaligned_address, a, "COND_EXE address");
      if ((at(4) & ~c::exec_count::mask) != 0) return refuse(engine_fault::reserved_bits, 0, "COND_EXE dw4 outside EXEC_COUNT");
      if (!check(a, 4, bad)) return refuse(engine_fault::memory_violation, bad, "COND_EXE condition read");
      const std::uint32_t v =
          std::atomic_ref<std::uint32_t>(*static_cast<std::uint32_t*>(vm_.host_address(a))).load(std::memory_order_acquire);
      skip_ = v == at(3) ? 0 : c::exec_count::get(at(4));  // the next EXEC_COUNT dwords run only if *ADDR == REFERENCE
      break;
    }
    default:
      return refuse(engine_fault::unknown_opcode, 0, "opcode " + std::to_string(static_cast<unsigned>(op)));
  }
  return outcome::done;
}

}  // namespace aqueduct::emu
