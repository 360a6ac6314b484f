// aqueduct/emu/pm4_processor.hpp — the emulated MEC (compute micro-engine) of one PM4 queue.
//
// Layer: emu. One `pm4_processor` per KFD compute (non-AQL) queue, on its own thread, reads the
// ring from its read pointer up to the write pointer (dwords; packets may straddle the ring's
// end), runs each type-3 packet and release-stores the read pointer after it.
// It is composed of parts that each do one thing (all in emu/detail/):
//   * pm4_decoder.hpp — pure: a packet's dwords → its fields, or why it is refused (reserved
//     bits, COUNT, values);
//   * sh_registers.hpp — the SH register file SET_SH_REG writes, read by name;
//   * pm4_dispatch.hpp — DISPATCH_DIRECT: the registers → a dispatch plan, run by the one
//     workgroup executor every engine shares (emu/workgroup_executor.hpp);
//   * cwsr_preemptor.hpp — the one CWSR preemptor (also the AQL engine's): on demand
//     (`request_preemption` / `resume`) or by a stress knob, the resident waves go through the
//     CWSR area and are restored from it.
// What stays here is what a packet does to the machine: memory it writes or polls (every access
// checked against the VM), interrupts it raises, indirect buffers it runs, and the ring itself.
// Packets: NOP, SET_SH_REG, DISPATCH_DIRECT, ACQUIRE_MEM, RELEASE_MEM, WAIT_REG_MEM(64), WRITE_DATA,
// INDIRECT_BUFFER (nested, chained), COND_INDIRECT_BUFFER, COND_EXEC, EVENT_WRITE, PRED_EXEC
// (spec/packets.md §1.3; docs/pm4.md; the control-flow packets: docs/pm4-sdma.md).
// Strictness: whatever the decoder refuses, an unknown opcode and an unmapped address stop the
// queue with an engine_error (fault, read/write pointers, the packet decoded). The GFX11 PRIV bug
// is modelled (spec/kfd.md §4): on a DEGFX11_12113 part a dispatch whose COMPUTE_PGM_RSRC1 lacks
// PRIV hangs at its first preemption; PRIV set on any other part hangs the queue at the dispatch.
// A save that does not fit the area hangs too.
// `wait_value` is the host side: wait for a completion word; on timeout errc::device_hang (the
// processor stopped: its fault, the packet decoded) or errc::timeout, with the queue described.
// Thread safety: ring_doorbell/notify/request_preemption/resume and the queries may be called
// from any thread. vm_access, event_notifier and registry must outlive the processor.
#pragma once

#include <aqueduct/abi/pm4.hpp>
#include <aqueduct/arch/cwsr.hpp>
#include <aqueduct/arch/family.hpp>
#include <aqueduct/core/bits.hpp>
#include <aqueduct/core/result.hpp>
#include <aqueduct/emu/cwsr.hpp>
#include <aqueduct/emu/detail/cwsr_preemptor.hpp>
#include <aqueduct/emu/detail/pm4_decoder.hpp>
#include <aqueduct/emu/detail/pm4_dispatch.hpp>
#include <aqueduct/emu/detail/sh_registers.hpp>
#include <aqueduct/emu/engine_error.hpp>
#include <aqueduct/emu/engine_ports.hpp>
#include <aqueduct/emu/host_kernel.hpp>
#include <aqueduct/emu/queue_binding.hpp>
#include <aqueduct/emu/queue_wakeup.hpp>
#include <aqueduct/emu/wave_state.hpp>
#include <aqueduct/emu/workgroup_executor.hpp>
#include <aqueduct/queue/pm4_describe.hpp>
#include <aqueduct/sync/wait.hpp>

#include <algorithm>
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

// Where a PM4 queue's memory is (CREATE_QUEUE) and what part it runs on. The pointers are u64
// dword counts; the ring a power of two >= 1024 bytes.
struct pm4_queue_binding : compute_queue_binding {
  std::uint64_t eop_buffer_va = 0;  // RELEASE_MEM needs one (tinygrad: "or it will NULL pointer")
  std::uint64_t eop_buffer_bytes = 0;
};

struct pm4_processor_options {
  preemption_options preemption{};                    // stress knobs (detail/cwsr_preemptor.hpp)
  std::uint32_t max_lds_bytes = 64 * 1024;
  // Wave-instructions one dispatch of machine code may execute (see aql_processor_options).
  std::int64_t instruction_budget = dispatch_plan::default_budget;
  unsigned max_ib_depth = 2;                          // IB inside IB allowed, not deeper
  std::chrono::microseconds idle_poll{2000};          // re-read the write pointer without a doorbell
  // After the ring runs dry, poll the write pointer this long before sleeping (as the AQL
  // processor's idle_spin; a CP polls too): a submission that follows closely is taken without a
  // sleep, and its doorbell wakes nobody (no futex wake, no context switch on the submitting
  // thread: bench_graph replay_indirect_*, docs/benchmarks.md session 15). 0: sleep at once.
  std::chrono::microseconds idle_spin{20};
  std::chrono::microseconds wait_poll{20};            // WAIT_REG_MEM re-poll
  std::uint64_t gpu_clock_hz = 100'000'000;           // GPU clock counter (tinygrad assumes 100 MHz, spec §2.2)
  // TEST ONLY: the MEC sees COMPUTE_PGM_RSRC1.PRIV as this value in every dispatch, whatever the
  // stream wrote — how a test gets the bit wrong through a typed encoder that cannot.
  std::optional<bool> test_force_rsrc1_priv{};
};

// The doorbell (queue_wakeup::ring_doorbell) carries the write pointer in dwords.
class pm4_processor : public queue_wakeup {
 public:
  pm4_processor(const pm4_processor&) = delete;
  pm4_processor& operator=(const pm4_processor&) = delete;
  ~pm4_processor() { stop(); }

  // Starts the processor thread. invalid_argument if the ring or pointers are not mapped or the
  // ring is not a power of two >= 1 KiB.
  [[nodiscard]] static result<std::unique_ptr<pm4_processor>> try_create(
      const pm4_queue_binding& b, const vm_access& vm, event_notifier& events,
      const host_kernel_registry& registry, pm4_processor_options opt = {}) {
    if (b.ring_bytes < 1024 || (b.ring_bytes & (b.ring_bytes - 1)) != 0)
      return failure(errc::invalid_argument, "PM4 ring size must be a power of two >= 1024 bytes");
    if (b.ring_va % 256 != 0 || !vm.is_mapped(b.ring_va, b.ring_bytes))
      return failure(errc::invalid_argument, "PM4 ring is not mapped or not 256-byte aligned");
    if (b.read_pointer_va % 8 != 0 || !vm.is_mapped(b.read_pointer_va, 8))
      return failure(errc::invalid_argument, "PM4 read pointer is not mapped or not 8-byte aligned");
    if (b.write_pointer_va % 8 != 0 || !vm.is_mapped(b.write_pointer_va, 8))
      return failure(errc::invalid_argument, "PM4 write pointer is not mapped or not 8-byte aligned");
    std::unique_ptr<pm4_processor> p(new pm4_processor(b, vm, events, registry, std::move(opt)));
    p->thread_ = std::thread([q = p.get()] { q->run(); });
    return p;
  }
  [[nodiscard]] static std::unique_ptr<pm4_processor> create(const pm4_queue_binding& b, const vm_access& vm,
                                                             event_notifier& events,
                                                             const host_kernel_registry& registry,
                                                             pm4_processor_options opt = {}) {
    return try_create(b, vm, events, registry, std::move(opt)).value();
  }

  // ---- preemption on demand (detail/cwsr_preemptor.hpp) ---------------------------------------
  // At the next preemption point (between workgroups or packets) the queue goes off the
  // hardware, its state saved in the CWSR area, until resume().
  void request_preemption() noexcept {
    preemptor_.request();
    notify();
  }
  void resume() noexcept { preemptor_.resume(); }
  // True once the queue is saved and off the hardware (false on timeout, or once it stopped).
  bool wait_preempted(std::chrono::milliseconds timeout) const { return preemptor_.wait_preempted(timeout); }
  [[nodiscard]] emu::preemption_stats preemption_stats() const { return preemptor_.stats(); }
  // Whether the area can hold a save of the whole machine (checked at creation).
  [[nodiscard]] const result<void>& cwsr_capacity() const noexcept { return preemptor_.capacity(); }
  [[nodiscard]] const cwsr_machine& machine() const noexcept { return preemptor_.machine(); }

  // ---- state ----------------------------------------------------------------------------------
  [[nodiscard]] bool has_error() const noexcept { return errors_.has_error(); }
  // Why the queue stopped (engine_kind::pm4; position = the read pointer in dwords).
  [[nodiscard]] std::optional<engine_error> error() const { return errors_.error(); }
  [[nodiscard]] std::uint64_t read_pointer() const noexcept { return rptr_pub_.load(std::memory_order_acquire); }
  [[nodiscard]] std::uint64_t write_pointer() const noexcept {
    return std::atomic_ref<std::uint64_t>(*wptr_).load(std::memory_order_acquire);
  }
  [[nodiscard]] std::uint64_t dispatches() const noexcept { return dispatches_.load(std::memory_order_acquire); }
  // How many times a WAIT_REG_MEM(64) polled memory and found its condition false: non-zero once
  // the queue is parked in a wait (what a test waits for instead of sleeping).
  [[nodiscard]] std::uint64_t unsatisfied_polls() const noexcept { return unsatisfied_polls_.load(std::memory_order_acquire); }
  [[nodiscard]] const pm4_queue_binding& binding() const noexcept { return b_; }
  // SH register (absolute dword address 0x2C00..0x2FFF) as the last dispatch (or fault) saw it; for tests.
  [[nodiscard]] std::uint32_t sh_register(std::uint32_t abs) const {
    std::lock_guard lock(mu_);
    return sh_snapshot_.at(abs);
  }

  // Blocks until the read pointer reaches `wptr` (true), the timeout passes, or the queue
  // stopped (false).
  bool wait_consumed(std::uint64_t wptr, std::chrono::milliseconds timeout) const {
    state_waiters_.fetch_add(1, std::memory_order_seq_cst);
    bool ok;
    {
      std::unique_lock lock(mu_);
      const auto consumed = [&] { return rptr_pub_.load(std::memory_order_seq_cst) >= wptr; };  // seq_cst: advance()'s pair
      ok = state_cv_.wait_for(lock, timeout, [&] { return consumed() || has_error(); }) && consumed();
    }
    state_waiters_.fetch_sub(1, std::memory_order_relaxed);
    return ok;
  }

  // "PM4 processor gpu_id 1 queue 3: rptr 40, wptr 120 (dwords), 0 preemption(s); stopped: <fault>: <detail>"
  void describe(std::string& out) const {
    char buf[200];
    std::snprintf(buf, sizeof buf, "PM4 processor gpu_id %u queue %u: rptr %llu, wptr %llu (dwords), %llu preemption(s)",
                  b_.gpu_id, b_.queue_id, static_cast<unsigned long long>(read_pointer()),
                  static_cast<unsigned long long>(write_pointer()),
                  static_cast<unsigned long long>(preemption_stats().preemptions));
    out += buf;
    if (auto e = error()) {
      out += "; stopped: ";
      out += e->detail;
    }
  }

  void stop() noexcept {
    preemptor_.halt();
    (void)request_stop();  // (begin_stop may have asked already: join all the same)
    if (thread_.joinable()) thread_.join();
  }

 private:
  enum class step { done, retry, fault, stopped };

  pm4_processor(const pm4_queue_binding& b, const vm_access& vm, event_notifier& ev, const host_kernel_registry& reg,
                pm4_processor_options opt)
      : b_(b), vm_(vm), events_(ev), registry_(reg), opt_(std::move(opt)),
        preemptor_(vm, b.cwsr, b.node, b.family, opt_.preemption) {
    ring_ = host<std::uint32_t>(b.ring_va);
    ring_dwords_ = b.ring_bytes / 4;
    rptr_ = host<std::uint64_t>(b.read_pointer_va);
    wptr_ = host<std::uint64_t>(b.write_pointer_va);
    rptr_local_ = std::atomic_ref<std::uint64_t>(*rptr_).load(std::memory_order_acquire);
    rptr_pub_.store(rptr_local_, std::memory_order_release);
    target_ = {b.family, b.gfx_target_version, b.simd_arrays_per_engine, opt_.max_lds_bytes, opt_.test_force_rsrc1_priv};
  }

  template <class T>
  [[nodiscard]] T* host(std::uint64_t va) const noexcept {
    return static_cast<T*>(vm_.host_address(va));
  }
  [[nodiscard]] std::uint32_t ring_at(std::uint64_t i) const noexcept {
    return std::atomic_ref<std::uint32_t>(ring_[i & (ring_dwords_ - 1)]).load(std::memory_order_relaxed);
  }

  // ------------------------------------------------------------------ the ring
  void run() {
    for (;;) {
      // No lock: the stop flag and the wake-up count are atomics (queue_wakeup), read before
      // looking for work as the AQL processor reads them.
      if (stopping()) return;
      const std::uint64_t seen = wake_seq();
      if (dead_) {
        wait_for_wakeup(seen, std::chrono::hours(1));
        continue;
      }
      if (preemption_point(nullptr) == step::stopped) return;
      const std::uint64_t w = write_pointer();
      if (rptr_local_ >= w) {
        if (!spin_for_work(seen)) wait_for_wakeup(seen, opt_.idle_poll);
        continue;
      }
      if (skip_ != 0) {  // COND_EXEC discarded what follows it: consume those dwords as they arrive
        const std::uint64_t n = std::min<std::uint64_t>(skip_, w - rptr_local_);
        skip_ -= static_cast<std::uint32_t>(n);
        advance(rptr_local_ + n);
        continue;
      }
      const std::uint32_t hdr = ring_at(rptr_local_);
      const std::uint64_t len = detail::pm4_packet_dwords(hdr);
      if (len > ring_dwords_) {
        const std::uint32_t one[1] = {hdr};
        fail(engine_fault::bad_count, one, 0, false, "packet longer than the ring");
        continue;
      }
      if (w - rptr_local_ < len) {  // the rest of the packet is not published yet
        wait_for_wakeup(seen, opt_.idle_poll);
        continue;
      }
      cur_.resize(len);
      for (std::uint64_t i = 0; i < len; ++i) cur_[i] = ring_at(rptr_local_ + i);
      const std::uint64_t notified = notify_seq();  // before a WAIT_REG_MEM reads its memory
      const step s = execute(cur_, 0, false);
      if (s == step::stopped) return;
      if (s == step::retry) {  // WAIT_REG_MEM not satisfied: re-poll, backing off up to 64x (no doorbell helps)
        wait_for_notify(notified, opt_.wait_poll * (1u << std::min(retries_++, 6u)));
        continue;
      }
      retries_ = 0;
      nonpreemptible_wait_ = false;
      if (s == step::fault) continue;
      advance(rptr_local_ + len);
    }
  }

  // Polls the write pointer (and the wake-up count: a notify, a stop) for up to idle_spin.
  // true: something to look at.
  bool spin_for_work(std::uint64_t seen) const noexcept {
    return poll_for(opt_.idle_spin, [&] { return write_pointer() > rptr_local_ || wake_seq() != seen; });
  }

  // Publishes the read pointer; wakes wait_consumed's sleepers only if there are any
  // (Dekker-style, as queue_wakeup::ring_doorbell: we store, then read the waiter count; a waiter
  // counts itself, then reads the pointer under the lock — one of the two sees the other).
  void advance(std::uint64_t to) {
    rptr_local_ = to;
    std::atomic_ref<std::uint64_t>(*rptr_).store(rptr_local_, std::memory_order_release);
    rptr_pub_.store(rptr_local_, std::memory_order_seq_cst);
    if (state_waiters_.load(std::memory_order_seq_cst) == 0) return;
    { std::lock_guard lock(mu_); }  // the waiter is in state_cv_.wait_for (or has not checked yet)
    state_cv_.notify_all();
  }

  void fail(engine_fault f, std::span<const std::uint32_t> pkt, std::uint64_t addr, bool in_ib, const std::string& why) {
    engine_error e;
    e.engine = engine_kind::pm4;
    e.fault = f;
    e.position = rptr_local_;
    e.write_position = write_pointer();
    e.address = addr;
    e.in_indirect_buffer = in_ib;
    e.packet.assign(pkt.begin(), pkt.end());
    char buf[200];
    std::snprintf(buf, sizeof buf, "PM4 queue %u (gpu_id %u, gfx_target_version %u): %s at rptr %llu (wptr %llu)%s", b_.queue_id,
                  b_.gpu_id, b_.gfx_target_version, engine_fault_name(f), static_cast<unsigned long long>(e.position),
                  static_cast<unsigned long long>(e.write_position), in_ib ? " inside an indirect buffer" : "");
    e.detail = buf;
    if (!why.empty()) e.detail += ": " + why;
    if (addr != 0) {
      std::snprintf(buf, sizeof buf, " (address 0x%llx)", static_cast<unsigned long long>(addr));
      e.detail += buf;
    }
    e.detail += "; packet: ";
    ring::pm4::describe_packet(pkt, e.detail);
    // A GPU page fault also reaches the process through the KFD's memory events (after the
    // queue's own record, so a waiter woken by it finds this queue stopped).
    if (errors_.record(std::move(e)) && is_memory_fault(f)) events_.memory_fault(b_.gpu_id, addr);
    dead_ = true;
    preemptor_.halt();
    {
      std::lock_guard lock(mu_);
      sh_snapshot_ = sh_;
    }
    state_cv_.notify_all();
  }
  step refuse(const detail::reject& r, std::span<const std::uint32_t> p, bool in_ib) {
    fail(r.fault, p, r.address, in_ib, r.why);
    return step::fault;
  }

  // ------------------------------------------------------------------ packets
  step execute(std::span<const std::uint32_t> p, unsigned depth, bool in_ib) {
    namespace a = abi::pm4;
    const auto h = detail::decode_header(p, b_.family);
    if (!h) return refuse(h.why(), p, in_ib);
    if (h->filler) return step::done;
    switch (h->op) {
      case a::opcode::nop: return step::done;
      case a::opcode::set_sh_reg: {
        const auto d = detail::decode_set_sh_reg(p);
        if (!d) return refuse(d.why(), p, in_ib);
        sh_.write(d->offset, d->values);
        return step::done;
      }
      case a::opcode::dispatch_direct: {
        const auto d = detail::decode_dispatch_direct(p, b_.family);
        if (!d) return refuse(d.why(), p, in_ib);
        return dispatch(*d, p, in_ib);
      }
      case a::opcode::dispatch_indirect: {
        const auto d = detail::decode_dispatch_indirect(p, b_.family);
        if (!d) return refuse(d.why(), p, in_ib);
        return dispatch_indirect(*d, p, in_ib);
      }
      case a::opcode::copy_data: {
        const auto d = detail::decode_copy_data(p);
        if (!d) return refuse(d.why(), p, in_ib);
        return copy_data(*d, p, in_ib);
      }
      case a::opcode::acquire_mem: {
        // The emulated caches are coherent: nothing to write back or invalidate. Every workgroup of
        // earlier dispatches ran on this thread, so their stores are ordered before what follows.
        const auto d = detail::decode_acquire_mem(p, b_.family);
        return d ? step::done : refuse(d.why(), p, in_ib);
      }
      case a::opcode::release_mem: {
        const auto d = detail::decode_release_mem(p);
        if (!d) return refuse(d.why(), p, in_ib);
        return release_mem(*d, p, in_ib);
      }
      case a::opcode::wait_reg_mem: {
        const auto d = detail::decode_wait_reg_mem(p);
        if (!d) return refuse(d.why(), p, in_ib);
        return wait_reg_mem(*d, p, in_ib);
      }
      case a::opcode::write_data: {
        const auto d = detail::decode_write_data(p);
        if (!d) return refuse(d.why(), p, in_ib);
        return write_data(*d, p, in_ib);
      }
      case a::opcode::indirect_buffer: {
        if (p.size() == a::cond_indirect_buffer::dwords) {
          const auto d = detail::decode_cond_indirect_buffer(p);
          if (!d) return refuse(d.why(), p, in_ib);
          return cond_indirect_buffer(*d, p, depth);
        }
        const auto d = detail::decode_indirect_buffer(p);
        if (!d) return refuse(d.why(), p, in_ib);
        if (d->chain) {
          // A jump, not a call: the current IB ends here and continues in the new one (run_ib).
          if (depth == 0) return refuse({engine_fault::reserved_bits, "a chained INDIRECT_BUFFER outside an IB", 0}, p, in_ib);
          chain_ = *d;
          return step::done;
        }
        return run_ib(d->address, d->size_dw, depth + 1, p);
      }
      case a::opcode::cond_exec: {
        const auto d = detail::decode_cond_exec(p);
        if (!d) return refuse(d.why(), p, in_ib);
        if (!vm_.is_mapped(d->address, 4)) return refuse({engine_fault::not_mapped, "COND_EXEC condition", d->address}, p, in_ib);
        const std::uint32_t v = std::atomic_ref<std::uint32_t>(*host<std::uint32_t>(d->address)).load(std::memory_order_acquire);
        skip_ = v == 0 ? d->exec_count : 0;  // the stream's next EXEC_COUNT dwords are discarded
        return step::done;
      }
      case a::opcode::wait_reg_mem64: {
        const auto d = detail::decode_wait_reg_mem64(p);
        if (!d) return refuse(d.why(), p, in_ib);
        if (!vm_.is_mapped(d->address, 8)) return refuse({engine_fault::not_mapped, "WAIT_REG_MEM64 poll address", d->address}, p, in_ib);
        const std::uint64_t v = std::atomic_ref<std::uint64_t>(*host<std::uint64_t>(d->address)).load(std::memory_order_acquire);
        return waited(d->holds(v), d->preemptible());
      }
      case a::opcode::event_write: {
        // The emulated pipe is idle between packets: partial flushes complete at once.
        const auto d = detail::decode_event_write(p);
        return d ? step::done : refuse(d.why(), p, in_ib);
      }
      case a::opcode::pred_exec: {
        const auto d = detail::decode_pred_exec(p);
        if (!d) return refuse(d.why(), p, in_ib);
        // MEC firmware: outside an IB it acts as EXEC_COUNT 0 (spec §1.3). The emulator is XCC 0.
        if (in_ib) pred_skip_ = (d->xcc_mask & 1u) ? 0 : d->exec_count;
        return step::done;
      }
      default: break;
    }
    const char* name = ring::pm4::opcode_name(static_cast<std::uint32_t>(h->op));
    return refuse(detail::refuse(engine_fault::unknown_opcode, name ? std::string(name) + " is not run by this emulated MEC" : ""),
                  p, in_ib);
  }

  step release_mem(const detail::release_mem_fields& d, std::span<const std::uint32_t> p, bool in_ib) {
    using ds = abi::pm4::release_mem::data_sel_value;
    if (b_.eop_buffer_bytes == 0 || !vm_.is_mapped(b_.eop_buffer_va, b_.eop_buffer_bytes))
      return refuse({engine_fault::no_eop_buffer, "the queue has no mapped EOP buffer", 0}, p, in_ib);
    if (const std::uint32_t size = d.data_bytes(); size != 0) {
      if (!vm_.is_mapped(d.address, size)) return refuse({engine_fault::not_mapped, "RELEASE_MEM destination", d.address}, p, in_ib);
      // End of pipe: every earlier workgroup ran on this thread; the release store publishes them.
      if (size == 4) {
        std::atomic_ref<std::uint32_t>(*host<std::uint32_t>(d.address)).store(lo32(d.data), std::memory_order_release);
      } else {
        const std::uint64_t v = d.data_sel == ds::data64 ? d.data : gpu_clock();
        std::atomic_ref<std::uint64_t>(*host<std::uint64_t>(d.address)).store(v, std::memory_order_release);
      }
    }
    if (d.interrupts()) {
      // KFD: INT_CTXID is the event id; gfx9-class queues send 0 (tinygrad) and the kernel then
      // finds the event from the slot written — the emulator uses the value written instead.
      const bool gfx9 = detail::pm4_gfx9_form(b_.family);
      const std::uint32_t id = (d.int_ctxid != 0 || !gfx9 || d.data_sel != ds::data32_low) ? d.int_ctxid : lo32(d.data);
      events_.signal_event(id);
    }
    return step::done;
  }

  step wait_reg_mem(const detail::wait_reg_mem_fields& d, std::span<const std::uint32_t> p, bool in_ib) {
    if (!d.memory) return step::done;  // register polls (HDP flush): the emulated HDP is always flushed
    if (!vm_.is_mapped(d.address, 4)) return refuse({engine_fault::not_mapped, "WAIT_REG_MEM poll address", d.address}, p, in_ib);
    const std::uint32_t v = std::atomic_ref<std::uint32_t>(*host<std::uint32_t>(d.address)).load(std::memory_order_acquire);
    return waited(d.holds(v), d.preemptible());
  }
  // A wait that does not hold yet is retried. Only OPERATION 3 (WAIT_MEM_PREEMPTABLE) lets the
  // queue be preempted meanwhile; any other wait holds a preemption off until it is satisfied,
  // as the MEC does — a queue stuck in one cannot be taken off the hardware.
  step waited(bool holds, bool preemptible) {
    if (holds) return step::done;
    nonpreemptible_wait_ = !preemptible;
    unsatisfied_polls_.fetch_add(1, std::memory_order_release);
    return step::retry;
  }

  step cond_indirect_buffer(const detail::cond_indirect_buffer_fields& d, std::span<const std::uint32_t> p, unsigned depth) {
    if (!vm_.is_mapped(d.compare_address, 8))
      return refuse({engine_fault::not_mapped, "COND_INDIRECT_BUFFER compare address", d.compare_address}, p, depth != 0);
    const std::uint64_t v = std::atomic_ref<std::uint64_t>(*host<std::uint64_t>(d.compare_address)).load(std::memory_order_acquire);
    if (d.holds(v)) return run_ib(d.ib1_address, d.ib1_size, depth + 1, p);
    if (d.if_then_else) return run_ib(d.ib2_address, d.ib2_size, depth + 1, p);
    return step::done;
  }

  step write_data(const detail::write_data_fields& d, std::span<const std::uint32_t> p, bool in_ib) {
    const std::size_t n = d.data.size();
    if (!vm_.is_mapped(d.address, d.fixed_address ? 4 : 4 * n))
      return refuse({engine_fault::not_mapped, "WRITE_DATA destination", d.address}, p, in_ib);
    auto* dst = host<std::uint32_t>(d.address);
    for (std::size_t i = 0; i < n; ++i)
      std::atomic_ref<std::uint32_t>(dst[d.fixed_address ? 0 : i]).store(d.data[i], std::memory_order_release);
    return step::done;
  }

  // COPY_DATA: the value is read and written when the MEC reaches the packet, before anything after
  // it (WR_CONFIRM or not: the emulated write lands at once).
  step copy_data(const detail::copy_data_fields& d, std::span<const std::uint32_t> p, bool in_ib) {
    const std::size_t n = d.b64 ? 2 : 1;
    if (!d.immediate && !vm_.is_mapped(d.src, 4 * n)) return refuse({engine_fault::not_mapped, "COPY_DATA source", d.src}, p, in_ib);
    if (!vm_.is_mapped(d.dst, 4 * n)) return refuse({engine_fault::not_mapped, "COPY_DATA destination", d.dst}, p, in_ib);
    std::uint32_t v[2] = {static_cast<std::uint32_t>(d.src), static_cast<std::uint32_t>(d.src >> 32)};
    if (!d.immediate) {
      auto* src = host<std::uint32_t>(d.src);
      for (std::size_t i = 0; i < n; ++i) v[i] = std::atomic_ref<std::uint32_t>(src[i]).load(std::memory_order_acquire);
    }
    auto* dst = host<std::uint32_t>(d.dst);
    for (std::size_t i = 0; i < n; ++i) std::atomic_ref<std::uint32_t>(dst[i]).store(v[i], std::memory_order_release);
    return step::done;
  }

  // Runs `size_dw` dwords at `address` as an IB of nesting level `depth` (1: called from the
  // ring). A chained INDIRECT_BUFFER inside it replaces it (the rest of the IB is not run) at the
  // same level; PRED_EXEC and COND_EXEC skip dwords within the IB they are in.
  step run_ib(std::uint64_t address, std::uint32_t size_dw, unsigned depth, std::span<const std::uint32_t> launcher) {
    const bool nested = depth > 1;
    if (depth > opt_.max_ib_depth) return refuse({engine_fault::bad_count, "indirect buffers nested too deep", 0}, launcher, nested);
    for (;;) {  // once per chained IB
      if (!vm_.is_mapped(address, 4ull * size_dw)) return refuse({engine_fault::not_mapped, "indirect buffer", address}, launcher, nested);
      std::vector<std::uint32_t> buf(size_dw);
      std::memcpy(buf.data(), host<const std::uint32_t>(address), 4ull * size_dw);
      pred_skip_ = 0;
      skip_ = 0;
      chain_.reset();
      for (std::size_t at = 0; at < size_dw && !chain_;) {
        const std::uint64_t len = detail::pm4_packet_dwords(buf[at]);
        if (at + len > size_dw) {
          fail(engine_fault::bad_count, std::span<const std::uint32_t>(buf).subspan(at), address + 4 * at, true,
               "packet runs past the end of its indirect buffer");
          return step::fault;
        }
        if (const std::uint32_t s = std::max(pred_skip_, skip_); s != 0) {  // PRED_EXEC / COND_EXEC: skip
          pred_skip_ = skip_ = 0;
          at += std::min<std::uint64_t>(s, size_dw - at);
          continue;
        }
        const auto pk = std::span<const std::uint32_t>(buf).subspan(at, len);
        step st;
        while ((st = execute(pk, depth, true)) == step::retry) {
          if (preemption_point(nullptr) == step::stopped) return step::stopped;
          std::unique_lock lock(mu_);
          if (stop_) return step::stopped;
          cv_.wait_for(lock, opt_.wait_poll);
        }
        nonpreemptible_wait_ = false;
        if (st != step::done) return st;
        at += len;
      }
      pred_skip_ = skip_ = 0;  // a skip does not reach past the end of its IB
      if (!chain_) return step::done;
      address = chain_->address;
      size_dw = chain_->size_dw;
      launcher = {};
      if (stopping()) return step::stopped;
    }
  }

  // ------------------------------------------------------------------ dispatch
  struct running_dispatch {
    detail::pm4_dispatch d;
    std::uint64_t key = 0;  // the dispatch count when it started (its CWSR records name it)
    std::uint64_t next_wg = 0;
  };

  step dispatch(const detail::dispatch_direct_fields& dd, std::span<const std::uint32_t> p, bool in_ib) {
    auto planned = detail::plan_pm4_dispatch(dd, sh_, target_, vm_, registry_);
    if (!planned) return refuse(planned.why(), p, in_ib);
    planned->plan.budget->store(opt_.instruction_budget, std::memory_order_relaxed);
    running_dispatch run{*planned, dispatches_.fetch_add(1, std::memory_order_acq_rel) + 1, 0};
    {
      std::lock_guard lock(mu_);
      sh_snapshot_ = sh_;  // what sh_register() reports: the state of the last dispatch
    }
    workgroup_executor executor(vm_, 0);  // one workgroup at a time, on this thread
    std::vector<wave_state> waves;
    for (; run.next_wg < run.d.total_wg; ++run.next_wg) {
      const step pre = preemption_point(&run);
      if (pre != step::done) return pre;  // stopped, or the save/restore failed or hung: the queue stays here
      const std::uint64_t wg = run.next_wg;
      std::optional<workgroup_fault> f;
      switch (preemptor_.take(run.key, wg, waves)) {
        case detail::cwsr_preemptor::take_result::restored: f = executor.run(run.d.plan, wg, waves); break;
        case detail::cwsr_preemptor::take_result::not_restored: f = executor.run(run.d.plan, wg); break;
        case detail::cwsr_preemptor::take_result::corrupt:
          fail(engine_fault::cwsr_restore_failed, p, b_.cwsr.address, in_ib,
               "restored wave record of workgroup " + std::to_string(wg) + " is corrupt");
          return step::fault;
      }
      if (f) {
        fail(engine_fault_of(f->what), p, f->address, in_ib, f->detail);
        return step::fault;
      }
      preemptor_.note_workgroup();
    }
    return step::done;
  }

  // DISPATCH_INDIRECT: the counts are read now, when the MEC reaches the packet (a kernel before
  // it on this queue may have written them). A zero count discards the dispatch, as the hardware
  // does (abi/pm4.hpp); otherwise it runs as DISPATCH_DIRECT with those dimensions.
  step dispatch_indirect(const detail::dispatch_indirect_fields& di, std::span<const std::uint32_t> p, bool in_ib) {
    if (!vm_.is_mapped(di.address, abi::pm4::dispatch_indirect::args_bytes))
      return refuse({engine_fault::not_mapped, "DISPATCH_INDIRECT workgroup counts", di.address}, p, in_ib);
    detail::dispatch_direct_fields dd{{}, di.initiator};
    auto* counts = host<std::uint32_t>(di.address);
    for (int k = 0; k < 3; ++k) dd.dim[k] = std::atomic_ref<std::uint32_t>(counts[k]).load(std::memory_order_acquire);
    if (dd.dim[0] == 0 || dd.dim[1] == 0 || dd.dim[2] == 0) return step::done;
    return dispatch(dd, p, in_ib);
  }

  // Serves a pending preemption (on demand, every N workgroups, timer). `run`: called before
  // workgroup run->next_wg of that dispatch; null between packets. done, fault (hang recorded) or stopped.
  step preemption_point(const running_dispatch* run) {
    if (stopping()) return step::stopped;
    if (nonpreemptible_wait_) return step::done;  // held off until the wait is satisfied
    if (!preemptor_.due(run != nullptr)) return step::done;
    detail::resident_dispatch resident[1];
    std::size_t n = 0;
    if (run) resident[n++] = {run->key, &run->d.plan, run->next_wg, run->d.total_wg, run->d.waves_per_wg, run->d.hangs_on_preemption};
    const auto out = preemptor_.preempt(std::span<const detail::resident_dispatch>(resident, n));
    switch (out.what) {
      case detail::cwsr_preemptor::outcome_kind::resumed: return step::done;
      case detail::cwsr_preemptor::outcome_kind::stopped: return step::stopped;
      case detail::cwsr_preemptor::outcome_kind::fault: break;
    }
    std::string why = out.why;
    if (out.fault == engine_fault::cwsr_hang_without_priv)
      // DEGFX11_12113: the waves of a PM4 dispatch without PRIV never reach the trap handler's
      // save; the queue does not come off the hardware and makes no more progress.
      why = "gfx_target_version " + std::to_string(b_.gfx_target_version) +
            " needs COMPUTE_PGM_RSRC1.PRIV=1 on PM4 dispatches (DEGFX11_12113, spec/kfd.md §4); " + why;
    fail(out.fault, cur_, out.address, false, why);
    return step::fault;
  }

  [[nodiscard]] std::uint64_t gpu_clock() const noexcept { return events_.gpu_clock(opt_.gpu_clock_hz); }

  // ------------------------------------------------------------------ state
  pm4_queue_binding b_;
  const vm_access& vm_;
  event_notifier& events_;
  const host_kernel_registry& registry_;
  pm4_processor_options opt_;
  detail::pm4_dispatch_target target_;
  std::uint32_t* ring_ = nullptr;
  std::uint64_t ring_dwords_ = 0;
  std::uint64_t* rptr_ = nullptr;
  std::uint64_t* wptr_ = nullptr;
  detail::cwsr_preemptor preemptor_;
  engine_error_slot errors_;

  // processor thread only
  std::uint64_t rptr_local_ = 0;
  detail::sh_register_file sh_;
  std::vector<std::uint32_t> cur_;
  bool dead_ = false;
  std::uint32_t pred_skip_ = 0;                              // PRED_EXEC in an IB
  std::uint32_t skip_ = 0;                                   // COND_EXEC: dwords of this stream to discard
  std::optional<detail::indirect_buffer_fields> chain_;      // a chained IB to continue in
  bool nonpreemptible_wait_ = false;                         // a WAIT_REG_MEM other than OPERATION 3 is waiting
  unsigned retries_ = 0;

  std::atomic<std::uint64_t> rptr_pub_{0};
  std::atomic<std::uint64_t> dispatches_{0};
  std::atomic<std::uint64_t> unsatisfied_polls_{0};

  // Guarded by queue_wakeup::mu_.
  mutable std::condition_variable state_cv_;
  mutable std::atomic<unsigned> state_waiters_{0};  // threads inside wait_consumed
  detail::sh_register_file sh_snapshot_;

  std::thread thread_;
};

// Waits until the 32-bit (or 64-bit) word at `word` is >= `value`. On timeout: device_hang if
// the processor stopped (its diagnosis), else timeout; both with `queue`'s description.
template <class Word>
[[nodiscard]] result<void> wait_value(const Word* word, Word value, std::chrono::nanoseconds timeout,
                                      const pm4_processor* proc, sync::diagnostics queue = {}) {
  static_assert(sizeof(Word) == 4 || sizeof(Word) == 8);
  const auto deadline = sync::deadline_after(timeout);
  sync::backoff bo;
  for (;;) {
    if (std::atomic_ref<Word>(*const_cast<Word*>(word)).load(std::memory_order_acquire) >= value) return ok();
    if (proc != nullptr && proc->has_error()) break;
    if (sync::clock::now() >= deadline) break;
    bo.pause();
  }
  std::string d;
  if (proc != nullptr) {
    if (auto e = proc->error()) {
      d = e->detail + "; ";
      queue.describe(d);
      return failure(e->to_failure().code(), std::move(d));
    }
  }
  d = "completion value " + std::to_string(value) + " not written within " +
      std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(timeout).count()) + " ms; ";
  queue.describe(d);
  if (proc != nullptr) {
    d += "; ";
    proc->describe(d);
  }
  return failure(errc::timeout, std::move(d));
}

}  // namespace aqueduct::emu
