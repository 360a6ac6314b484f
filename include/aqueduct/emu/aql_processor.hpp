// aqueduct/emu/aql_processor.hpp — the emulated AQL packet processor of one user-mode queue.
//
// Layer: emu. One `aql_processor` per AQL queue, on its own thread, does what the GPU's CP does
// (DESIGN.md §4, spec/packets.md §5.5): it reads the slot at its read index as soon as the
// header (dword 0, acquire load) is valid — before the doorbell if it likes — honours the
// barrier bit (a packet with it is not launched before every earlier packet has completed),
// launches kernel dispatches onto a small worker pool (one workgroup executor per thread,
// emu/workgroup_executor.hpp; the packet is checked and planned by emu/detail/aql_dispatch.hpp),
// and runs barrier-AND, barrier-OR and AMD barrier-value packets (a barrier packet holds the
// queue until it is satisfied).
// Launch and completion are two events, as on hardware:
//   launch: the packet is copied out of its slot, the header set to INVALID (release) and the
//     read index advanced (release) — the slot is the producer's again. The HSA specification
//     lets the read index advance any time after a packet is launched (ROCm/ROCR-Runtime#105,
//     AMD: "The read pointer may advance any time after the dispatch packet has been
//     initiated"), so read_dispatch_id says nothing about completion; this processor advances
//     it at launch, the earliest moment, so that a runtime treating it as completion fails here.
//   completion: when its workgroups have run (dispatch) or it is satisfied (barrier), the
//     completion signal is decremented with the packet's release scope (none → relaxed) and its
//     event notified (mailbox write of event_id, then `event_notifier::signal_event`). Packets
//     without the barrier bit complete in any order (a short kernel after a long one completes
//     first), as on hardware.
// A malformed packet stops the queue with an engine_error (`error()`, the packet decoded);
// nothing is thrown into the process. A faulting dispatch stops the queue: nothing completes
// after it.
// Preemption (emu/detail/cwsr_preemptor.hpp, the same preemptor as the PM4 engine's): on demand
// (`request_preemption` / `resume`) or by a stress knob, the workers finish the workgroups they
// are running, the next workgroups of the dispatches in flight are saved to the queue's CWSR area,
// the queue stays off, and the saved workgroups then run from the state read back from that area.
// Adversarial mode spins on the header and re-reads the body after a pause: a body written
// after its header is reported (and ThreadSanitizer sees the racing plain stores).
//
// It depends only on `vm_access`, `event_notifier` (emu/engine_ports.hpp) and `aql_queue_binding`.
// Thread safety: ring_doorbell/notify/error/read_index/completed/wait_retired and the preemption
// controls may be called from any thread. The vm_access, event_notifier and registry must outlive
// the processor.
#pragma once

#include <aqueduct/abi/amd_queue.hpp>
#include <aqueduct/abi/amd_signal.hpp>
#include <aqueduct/abi/aql.hpp>
#include <aqueduct/arch/family.hpp>
#include <aqueduct/config.hpp>
#include <aqueduct/core/result.hpp>
#include <aqueduct/emu/detail/aql_dispatch.hpp>
#include <aqueduct/emu/detail/cwsr_preemptor.hpp>
#include <aqueduct/emu/engine_error.hpp>
#include <aqueduct/emu/engine_ports.hpp>
#include <aqueduct/emu/host_kernel.hpp>
#include <aqueduct/emu/queue_binding.hpp>
#include <aqueduct/emu/queue_wakeup.hpp>
#include <aqueduct/emu/vm_tlb.hpp>
#include <aqueduct/emu/wave_state.hpp>
#include <aqueduct/emu/workgroup_executor.hpp>
#include <aqueduct/queue/aql_packets.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace aqueduct::emu {

// Where an AQL queue's memory is: CREATE_QUEUE's read/write pointers are the amd_queue's
// read_dispatch_id / write_dispatch_id (packet indexes; the write pointer is read for
// diagnostics only and may be 0), the ring a power-of-two multiple of 64 bytes.
struct aql_queue_binding : compute_queue_binding {
  std::uint64_t amd_queue_va = 0;  // 0 if unknown: queue ptr SGPRs, scratch SRD, profiling flag
};

struct aql_processor_options {
  bool adversarial = false;        // spin on headers; re-read bodies to catch header-first writes
  unsigned workers = 2;            // worker threads for multi-workgroup dispatches (0 = inline)
  std::uint64_t inline_max_workgroups = 1;  // dispatches this small run on the processor thread
  std::size_t max_inflight = 16;   // packets launched but not retired
  std::uint32_t max_lds_bytes = 64 * 1024;
  // Wave-instructions one dispatch of machine code may execute before it ends with a
  // shader_exception ("instruction budget exhausted"): a spinning kernel cannot hang the queue.
  std::int64_t instruction_budget = dispatch_plan::default_budget;
  std::chrono::microseconds idle_poll{2000};         // re-check the ring without a doorbell
  // After the ring runs dry, poll the next header this long before sleeping (a CP polls too):
  // packets that follow closely are taken without a sleep, and their doorbells wake nobody.
  std::chrono::microseconds idle_spin{20};
  std::chrono::microseconds adversarial_recheck{300};  // pause before re-reading a body
  preemption_options preemption{};                    // stress knobs (detail/cwsr_preemptor.hpp)
  // Called for every packet before it runs (e.g. a sequence number in reserved2 or kernarg);
  // false stops the queue with sequence_check_failed. Runs on the processor thread, once per
  // packet (a stalled barrier packet is not re-checked).
  std::function<bool(std::uint64_t packet_index, const abi::aql_slot&)> sequence_check;
};

// The doorbell (queue_wakeup::ring_doorbell) carries the index of the last packet written.
class aql_processor : public queue_wakeup {
 public:
  aql_processor(const aql_processor&) = delete;
  aql_processor& operator=(const aql_processor&) = delete;
  ~aql_processor() { stop(); }

  // Starts the processor thread (and workers). Fails with invalid_argument if the binding's ring
  // or indexes are not mapped or the ring size is not a power-of-two multiple of 64 bytes.
  [[nodiscard]] static result<std::unique_ptr<aql_processor>> try_create(
      const aql_queue_binding& b, const vm_access& vm, event_notifier& events,
      const host_kernel_registry& registry, aql_processor_options opt = {}) {
    const std::uint64_t n = b.ring_bytes / abi::aql_packet_size;
    if (b.ring_bytes < abi::aql_packet_size || b.ring_bytes % abi::aql_packet_size != 0 || (n & (n - 1)) != 0)
      return failure(errc::invalid_argument, "AQL ring size must be a power-of-two multiple of 64 bytes");
    if (b.ring_va % abi::aql_packet_size != 0 || !vm.is_mapped(b.ring_va, b.ring_bytes))
      return failure(errc::invalid_argument, "AQL ring is not mapped or not 64-byte aligned");
    if (b.read_pointer_va % 8 != 0 || !vm.is_mapped(b.read_pointer_va, 8))
      return failure(errc::invalid_argument, "AQL read index is not mapped or not 8-byte aligned");
    if (b.write_pointer_va != 0 && (b.write_pointer_va % 8 != 0 || !vm.is_mapped(b.write_pointer_va, 8)))
      return failure(errc::invalid_argument, "AQL write index is not mapped or not 8-byte aligned");
    if (b.amd_queue_va != 0 && (b.amd_queue_va % abi::amd_queue_align != 0 || !vm.is_mapped(b.amd_queue_va, sizeof(abi::amd_queue))))
      return failure(errc::invalid_argument, "amd_queue is not mapped or not 64-byte aligned");
    std::unique_ptr<aql_processor> p(new aql_processor(b, vm, events, registry, std::move(opt)));
    p->start();
    return p;
  }
  [[nodiscard]] static std::unique_ptr<aql_processor> create(const aql_queue_binding& b, const vm_access& vm,
                                                             event_notifier& events,
                                                             const host_kernel_registry& registry,
                                                             aql_processor_options opt = {}) {
    return try_create(b, vm, events, registry, std::move(opt)).value();
  }

  [[nodiscard]] bool has_error() const noexcept { return errors_.has_error(); }
  // Why the queue stopped (engine_kind::aql; position = the offending packet's index).
  [[nodiscard]] std::optional<engine_error> error() const { return errors_.error(); }
  // Packets launched: the read index the processor last published (not a completion).
  [[nodiscard]] std::uint64_t read_index() const noexcept {
    return std::atomic_ref<const std::uint64_t>(*rptr_).load(std::memory_order_acquire);
  }
  // Every packet below this index has completed (its completion signal was decremented).
  [[nodiscard]] std::uint64_t completed() const noexcept { return retired_.load(std::memory_order_acquire); }
  [[nodiscard]] const aql_queue_binding& binding() const noexcept { return b_; }

  // Blocks until every packet below `index` has completed (true), or the timeout passes, or the
  // queue is in error and nothing more will complete (false).
  bool wait_retired(std::uint64_t index, std::chrono::milliseconds timeout) const {
    retire_waiters_.fetch_add(1, std::memory_order_seq_cst);  // retire() notifies only if someone waits
    std::unique_lock lock(mu_);
    const bool ok = retire_cv_.wait_for(lock, timeout, [&] {
                      return retired_.load(std::memory_order_seq_cst) >= index ||
                             (has_error() && (quiet_.load(std::memory_order_acquire)));
                    }) &&
                    completed() >= index;
    retire_waiters_.fetch_sub(1, std::memory_order_relaxed);
    return ok;
  }

  // ---- preemption on demand (detail/cwsr_preemptor.hpp) ---------------------------------------
  void request_preemption() noexcept {
    preemptor_.request();
    notify();
  }
  void resume() noexcept { preemptor_.resume(); }
  bool wait_preempted(std::chrono::milliseconds timeout) const { return preemptor_.wait_preempted(timeout); }
  [[nodiscard]] emu::preemption_stats preemption_stats() const { return preemptor_.stats(); }
  [[nodiscard]] const result<void>& cwsr_capacity() const noexcept { return preemptor_.capacity(); }

  // Stops and joins every thread. In-flight workgroups finish; unlaunched packets stay.
  void stop() noexcept {
    preemptor_.halt();
    (void)request_stop();  // (begin_stop may have asked already: join all the same)
    worker_cv_.notify_all();
    idle_cv_.notify_all();
    if (thread_.joinable()) thread_.join();
    for (auto& t : workers_)
      if (t.joinable()) t.join();
  }

 private:
  // A kernel dispatch in flight. It lives inside its `inflight` entry, which the processor
  // recycles once the packet has retired (no heap allocation per dispatch in steady state): the
  // plan keeps its kernarg copy's capacity and its budget counter, and plan_aql_dispatch rewrites
  // every field a dispatch uses. Workers reach it through jobs_ and stop touching it before its
  // last workgroup sets `complete`; only then can the processor retire and reuse it.
  struct dispatch_job {
    detail::aql_dispatch d;
    std::uint64_t index = 0;                   // the packet (the CWSR records' dispatch key)
    std::uint64_t next_wg = 0;                 // guarded by mu_
    std::atomic<std::uint64_t> done_wg{0};
    std::atomic<bool> complete{false};  // every workgroup ran (or was skipped after a fault)
    std::atomic<bool> faulted{false};
    std::mutex fault_mu;
    engine_fault fault = engine_fault::none;
    std::uint64_t fault_address = 0;
    std::string fault_detail;

    void reset(std::uint64_t packet_index) noexcept {  // processor thread, entry not in jobs_
      index = packet_index;
      next_wg = 0;
      done_wg.store(0, std::memory_order_relaxed);
      complete.store(false, std::memory_order_relaxed);
      faulted.store(false, std::memory_order_relaxed);
      fault = engine_fault::none;
      fault_address = 0;
      fault_detail.clear();
    }
  };
  struct inflight {
    std::uint64_t index = 0;
    abi::aql_slot packet{};
    std::uint64_t signal = 0;  // completion signal VA
    std::uint8_t release_scope = 0;
    bool is_dispatch = false;          // `job` is this packet's (else a barrier packet)
    std::atomic<bool> complete{false};  // barrier packets
    dispatch_job job;

    [[nodiscard]] bool done() const noexcept {
      return (is_dispatch ? job.complete : complete).load(std::memory_order_acquire);
    }
  };

  aql_processor(const aql_queue_binding& b, const vm_access& vm, event_notifier& ev, const host_kernel_registry& reg,
                aql_processor_options opt)
      : b_(b), vm_(vm), events_(ev), registry_(reg), opt_(std::move(opt)),
        preemptor_(vm, b.cwsr, b.node, b.family, opt_.preemption) {
    ring_ = static_cast<abi::aql_slot*>(vm_.host_address(b_.ring_va));
    slots_ = b_.ring_bytes / abi::aql_packet_size;
    rptr_ = static_cast<std::uint64_t*>(vm_.host_address(b_.read_pointer_va));
    launch_ = std::atomic_ref<std::uint64_t>(*rptr_).load(std::memory_order_acquire);
    retired_.store(launch_, std::memory_order_release);
    // Made once: at most max_inflight packets are in flight, so nothing here grows later (a
    // packet never waits for an allocation, whatever the high-water mark of the work so far).
    const std::size_t cap = std::max<std::size_t>(opt_.max_inflight, 1);
    inflight_.reserve(cap);
    spare_inflight_.reserve(cap);
    jobs_.reserve(cap);
    entries_.reserve(cap);
    for (std::size_t i = 0; i < cap; ++i) {
      entries_.push_back(std::make_unique<inflight>());
      spare_inflight_.push_back(entries_.back().get());
    }
  }

  void start() {
    // Scratch slot 0 is the processor thread's (inline dispatches, restored workgroups), worker i
    // has slot i + 1.
    for (unsigned i = 0; i < opt_.workers; ++i) workers_.emplace_back([this, i] { worker_loop(i + 1); });
    thread_ = std::thread([this] { run(); });
  }

  template <class T>
  T* host(std::uint64_t va) const noexcept { return static_cast<T*>(vm_.host_address(va)); }

  // ---------------------------------------------------------------- processor thread
  void run() {
    std::chrono::microseconds backoff{20};
    while (!stopping()) {
      const std::uint64_t seen = wake_seq();  // before looking, so no doorbell is missed
      const std::uint64_t notified = notify_seq();  // nor a completion or stop (the held waits below)
      tlb_.sync();  // the VM changed since the last look: the cached translations go
      retire();
      if (!has_error() && !preemption_point()) break;
      if (has_error() || inflight_.size() >= opt_.max_inflight) {
        wait_for_wakeup(seen, opt_.idle_poll);
        continue;
      }
      abi::aql_slot& slot = ring_[launch_ & (slots_ - 1)];
      const std::uint32_t dw0 = std::atomic_ref<std::uint32_t>(*reinterpret_cast<std::uint32_t*>(slot.bytes))
                                    .load(std::memory_order_acquire);
      const auto h = abi::decode_header(static_cast<std::uint16_t>(dw0));
      if (h.type == static_cast<std::uint8_t>(abi::packet_type::invalid)) {
        if (opt_.adversarial)
          std::this_thread::yield();
        else if (!spin_for_work(slot, seen))
          wait_for_wakeup(seen, opt_.idle_poll);
        continue;
      }
      if (h.barrier && !inflight_.empty()) {  // wait for every earlier packet to complete (a
        wait_for_notify(notified, opt_.idle_poll);  // worker's notify, not a doorbell, says so)
        continue;
      }
      abi::aql_slot snap = read_slot(slot);
      if (opt_.adversarial) {
        std::this_thread::sleep_for(opt_.adversarial_recheck);
        const abi::aql_slot again = read_slot(slot);
        if (std::memcmp(snap.bytes, again.bytes, sizeof snap.bytes) != 0) {
          fail(engine_fault::body_modified_after_header, launch_, again, 0,
               "the packet changed after its header was observed valid (first read: " + describe(snap) + ")");
          continue;
        }
      }
      if (opt_.sequence_check && checked_ != launch_ + 1 && !opt_.sequence_check(launch_, snap)) {
        fail(engine_fault::sequence_check_failed, launch_, snap, 0, "");
        continue;
      }
      checked_ = launch_ + 1;  // a packet that stalls (barrier) is checked once
      if (h.reserved != 0 || h.acquire_scope == 3 || h.release_scope == 3) {
        fail(engine_fault::reserved_bits, launch_, snap, 0, "");
        continue;
      }
      bool advanced = false;
      switch (static_cast<abi::packet_type>(h.type)) {
        case abi::packet_type::kernel_dispatch: advanced = launch_dispatch(snap, h); break;
        case abi::packet_type::barrier_and:
        case abi::packet_type::barrier_or:
        case abi::packet_type::vendor_specific: {
          const int r = barrier_satisfied(snap, h);
          if (r < 0) break;  // faulted
          if (r == 0) {      // not yet: the queue stalls here, polling the signals (no doorbell helps)
            wait_for_notify(notified, backoff);
            backoff = std::min(backoff * 2, std::chrono::microseconds(1000));
            break;
          }
          inflight* e = push_inflight(take_inflight(), snap, h, false);
          e->complete.store(true, std::memory_order_release);
          release_slot(snap);  // launched and, being satisfied, complete: it retires below
          advanced = true;
          break;
        }
        case abi::packet_type::agent_dispatch:
          fail(engine_fault::unsupported_packet, launch_, snap, 0, "agent dispatch packets are not processed by a GPU queue");
          break;
        default: fail(engine_fault::reserved_packet_type, launch_, snap, 0, ""); break;
      }
      if (advanced) {
        ++launch_;
        backoff = std::chrono::microseconds(20);
        // A packet that completed at launch (an inline dispatch, a satisfied barrier) signals now,
        // not after the next look at the ring: the host waiting on it sees it that much sooner.
        retire();
      }
    }
    {
      std::lock_guard lock(mu_);
      workers_stop_ = true;
    }
    worker_cv_.notify_all();
  }

  // Polls `slot`'s header (and the wake-up count: a worker finished, a stop) for up to
  // idle_spin. true: something to look at.
  bool spin_for_work(abi::aql_slot& slot, std::uint64_t seen) {
    auto& header = *reinterpret_cast<std::uint32_t*>(slot.bytes);
    return poll_for(opt_.idle_spin, [&] {
      const auto dw0 = std::atomic_ref<std::uint32_t>(header).load(std::memory_order_relaxed);
      return abi::decode_header(static_cast<std::uint16_t>(dw0)).type != static_cast<std::uint8_t>(abi::packet_type::invalid) ||
             wake_seq() != seen;
    });
  }

  // The slot's eight words, each read once (relaxed: the header's acquire load came first).
  static abi::aql_slot read_slot(abi::aql_slot& s) noexcept {
    auto* q = reinterpret_cast<std::uint64_t*>(s.bytes);
    auto word = [q](int i) noexcept { return std::atomic_ref<std::uint64_t>(q[i]).load(std::memory_order_relaxed); };
    // Written out: GCC 12 keeps a loop over them as a loop.
    const std::uint64_t w[8] = {word(0), word(1), word(2), word(3), word(4), word(5), word(6), word(7)};
    abi::aql_slot out;
    std::memcpy(out.bytes, w, sizeof w);
    return out;
  }

  // An entry for the packet at launch_: a retired one recycled (all max_inflight are made at
  // construction; the fallback is never taken while fewer are in flight).
  inflight* take_inflight() {
    if (!spare_inflight_.empty()) {
      inflight* e = spare_inflight_.back();
      spare_inflight_.pop_back();
      return e;
    }
    entries_.push_back(std::make_unique<inflight>());
    return entries_.back().get();
  }
  inflight* push_inflight(inflight* e, const abi::aql_slot& snap, const abi::decoded_header& h, bool is_dispatch) {
    e->index = launch_;
    e->packet = snap;
    std::memcpy(&e->signal, snap.bytes + 56, 8);  // completion_signal is at 56 in every packet
    e->release_scope = h.release_scope;
    e->is_dispatch = is_dispatch;
    e->complete.store(false, std::memory_order_relaxed);
    inflight_.push_back(e);  // reserved for max_inflight: no allocation
    return e;
  }

  // Launch of the packet at launch_: its slot goes back to the producer — header INVALID (the
  // upper half of dword 0 kept), then the read index past it, both release. The processor never
  // reads or writes the slot again (the packet lives on in its snapshot).
  void release_slot(const abi::aql_slot& snap) noexcept {
    abi::aql_slot& slot = ring_[launch_ & (slots_ - 1)];
    std::uint32_t dw0;
    std::memcpy(&dw0, snap.bytes, 4);
    dw0 = (dw0 & 0xFFFF0000u) | static_cast<std::uint32_t>(abi::packet_type::invalid);
    std::atomic_ref<std::uint32_t>(*reinterpret_cast<std::uint32_t*>(slot.bytes)).store(dw0, std::memory_order_release);
    std::atomic_ref<std::uint64_t>(*rptr_).store(launch_ + 1, std::memory_order_release);
  }

  // The packet decoded (ring::describe_packet) and its 16 dwords as read.
  [[nodiscard]] static std::string describe(const abi::aql_slot& s) {
    std::string out;
    ring::describe_packet(s, out);
    out += " raw=";
    char buf[12];
    for (std::size_t i = 0; i < abi::aql_packet_size; i += 4) {
      std::uint32_t dw;
      std::memcpy(&dw, s.bytes + i, 4);
      std::snprintf(buf, sizeof buf, "%s%08x", i ? " " : "", dw);
      out += buf;
    }
    return out;
  }

  void fail(engine_fault f, std::uint64_t index, const abi::aql_slot& snap, std::uint64_t address, const std::string& why) {
    engine_error e;
    e.engine = engine_kind::aql;
    e.fault = f;
    e.position = index;
    e.address = address;
    e.packet.resize(abi::aql_packet_size / 4);
    std::memcpy(e.packet.data(), snap.bytes, abi::aql_packet_size);
    if (b_.write_pointer_va != 0)
      e.write_position = std::atomic_ref<std::uint64_t>(*host<std::uint64_t>(b_.write_pointer_va)).load(std::memory_order_acquire);
    char head[160];
    std::snprintf(head, sizeof head, "AQL queue %u (gpu %u) stopped at packet %llu: %s", b_.queue_id, b_.gpu_id,
                  static_cast<unsigned long long>(index), engine_fault_name(f));
    e.detail = head;
    if (!why.empty()) e.detail += " (" + why + ")";
    if (address != 0) {
      std::snprintf(head, sizeof head, " address=0x%llx", static_cast<unsigned long long>(address));
      e.detail += head;
    }
    e.detail += "; packet: " + describe(snap);
    // A GPU page fault also reaches the process through the KFD's memory events (after the
    // queue's own record, so a waiter woken by it finds this queue stopped).
    if (errors_.record(std::move(e)) && is_memory_fault(f)) events_.memory_fault(b_.gpu_id, address);
    preemptor_.halt();
    if (inflight_.empty()) quiet_.store(true, std::memory_order_release);
    {
      std::lock_guard lock(mu_);
      ++wake_seq_;
    }
    retire_cv_.notify_all();
  }

  std::int64_t signal_value(std::uint64_t va) const noexcept {
    return std::atomic_ref<std::int64_t>(host<abi::amd_signal>(va)->value).load(std::memory_order_acquire);
  }

  // false: the packet's signal at `va` stopped the queue (detail::aql_signal_fault).
  bool signal_usable(const abi::aql_slot& snap, std::uint64_t va, const char* which) {
    const engine_fault f = detail::aql_signal_fault(tlb_, va);
    if (f == engine_fault::none) return true;
    fail(f, launch_, snap, va, which);
    return false;
  }

  // 1 satisfied, 0 not yet, -1 faulted.
  int barrier_satisfied(const abi::aql_slot& snap, const abi::decoded_header& h) {
    const std::uint64_t completion = [&] { std::uint64_t v; std::memcpy(&v, snap.bytes + 56, 8); return v; }();
    if (completion != 0 && !signal_usable(snap, completion, "completion signal")) return -1;
    if (h.type == static_cast<std::uint8_t>(abi::packet_type::vendor_specific)) {
      abi::amd_barrier_value_packet p;
      std::memcpy(&p, snap.bytes, sizeof p);
      if (p.header.amd_format != static_cast<std::uint8_t>(abi::amd_packet_format::barrier_value)) {
        fail(engine_fault::reserved_packet_type, launch_, snap, 0, "vendor packet with an AmdFormat this CP does not run");
        return -1;
      }
      if (p.cond > static_cast<std::uint32_t>(abi::signal_condition::gte)) {
        fail(engine_fault::reserved_packet_type, launch_, snap, 0, "barrier-value condition out of range");
        return -1;
      }
      if (p.signal == 0) return 1;  // a null signal is satisfied (hsa_ext_amd.h)
      if (!signal_usable(snap, p.signal, "barrier-value signal")) return -1;
      return abi::condition_holds(static_cast<abi::signal_condition>(p.cond), signal_value(p.signal) & p.mask, p.value)
                 ? 1 : 0;
    }
    abi::barrier_and_packet p;
    std::memcpy(&p, snap.bytes, sizeof p);
    const bool is_and = h.type == static_cast<std::uint8_t>(abi::packet_type::barrier_and);
    bool any_dep = false, any_zero = false, all_zero = true;
    for (std::uint64_t s : p.dep_signal) {
      if (s == 0) continue;
      if (!signal_usable(snap, s, "dependency signal")) return -1;
      any_dep = true;
      const bool z = signal_value(s) == 0;
      any_zero = any_zero || z;
      all_zero = all_zero && z;
    }
    if (is_and) return all_zero ? 1 : 0;
    return (!any_dep || any_zero) ? 1 : 0;  // barrier-OR with no dependency completes at once
  }

  // Plans and launches a kernel dispatch (detail/aql_dispatch.hpp). false = faulted (no advance).
  bool launch_dispatch(const abi::aql_slot& snap, const abi::decoded_header& h) {
    abi::kernel_dispatch_packet p;
    std::memcpy(&p, snap.bytes, sizeof p);
    inflight* e = take_inflight();
    dispatch_job* job = &e->job;
    job->reset(launch_);
    if (b_.amd_queue_va != 0 && (amdq_generation_ != tlb_.generation() || amdq_generation_ == 0)) {
      amdq_ = host<abi::amd_queue>(b_.amd_queue_va);
      amdq_generation_ = tlb_.generation();
    }
    const detail::aql_dispatch_source src{b_.family, b_.ring_va + (launch_ & (slots_ - 1)) * abi::aql_packet_size, launch_,
                                          b_.amd_queue_va, opt_.max_lds_bytes, amdq_};
    if (const detail::reject r = detail::plan_aql_dispatch(p, src, tlb_, registry_, job->d, &kernels_);
        r.fault != engine_fault::none) {
      spare_inflight_.push_back(e);
      fail(r.fault, launch_, snap, r.address, r.why);
      return false;
    }
    job->d.plan.budget->store(opt_.instruction_budget, std::memory_order_relaxed);
    const bool run_inline = opt_.workers == 0 || job->d.total_wg <= opt_.inline_max_workgroups;
    // Run here with nothing else in flight: the packet is the oldest, so when its workgroups
    // run clean it completes at once, without passing through inflight_ (a fault takes the
    // common path: retire() reports it with the packet).
    const bool alone = run_inline && inflight_.empty();
    if (!alone) push_inflight(e, snap, h, true);
    if (job->d.profiling && p.completion_signal != 0)
      std::atomic_ref<std::uint64_t>(host<abi::amd_signal>(p.completion_signal)->start_ts)
          .store(events_.gpu_clock(), std::memory_order_relaxed);
    release_slot(snap);  // launched: the slot is the producer's again before any workgroup runs
    if (run_inline) {
      for (std::uint64_t i = 0; i < job->d.total_wg && !job->faulted.load(std::memory_order_relaxed); ++i) {
        report(*job, inline_executor_.run(job->d.plan, i));
        preemptor_.note_workgroup();
      }
      job->complete.store(true, std::memory_order_release);
      if (alone) {
        if (job->faulted.load(std::memory_order_relaxed)) {
          push_inflight(e, snap, h, true);  // retire() stops the queue with it
        } else {
          signal_completion(p.completion_signal, h.release_scope, job->d.profiling);
          spare_inflight_.push_back(e);
          publish_retired(launch_ + 1);
        }
      }
    } else {
      {
        std::lock_guard lock(mu_);
        jobs_.push_back(job);  // reserved for max_inflight: no allocation
      }
      worker_cv_.notify_all();
    }
    return true;
  }

  // Completes every launched packet whose work is done, in index order among them but not
  // waiting for earlier ones that are still running (hardware completes packets without the
  // barrier bit in any order). A faulted dispatch stops the queue: nothing completes after it
  // is found. Then publishes the completed prefix (completed(), wait_retired).
  void retire() {
    if (!inflight_.empty()) retire_done();
  }
  void retire_done() {
    bool any = false;
    for (std::size_t i = 0; !dead_ && i < inflight_.size();) {
      inflight& e = *inflight_[i];
      if (!e.done()) {
        ++i;
        continue;
      }
      if (e.is_dispatch && e.job.faulted.load(std::memory_order_acquire)) {
        std::string why;
        engine_fault f;
        std::uint64_t addr;
        {
          std::lock_guard lock(e.job.fault_mu);
          f = e.job.fault;
          addr = e.job.fault_address;
          why = e.job.fault_detail;
        }
        dead_ = true;  // the queue is dead: nothing completes after the faulting dispatch
        quiet_.store(true, std::memory_order_release);
        fail(f, e.index, e.packet, addr, why);
        break;
      }
      signal_completion(e.signal, e.release_scope, e.is_dispatch && e.job.d.profiling);
      spare_inflight_.push_back(inflight_[i]);
      inflight_.erase(inflight_.begin() + static_cast<std::ptrdiff_t>(i));
      any = true;
    }
    if (!any) return;
    publish_retired(inflight_.empty() ? launch_ : inflight_.front()->index);
  }

  // A packet's completion: the profiling end stamp, the completion signal decremented with the
  // packet's release scope, then its event (mailbox, then the notifier). The signal's event fields
  // are read before the decrement: once a waiter sees the value, it may free the signal, and the
  // processor must not read it after that.
  void signal_completion(std::uint64_t signal, std::uint8_t release_scope, bool profiling) {
    if (signal == 0) return;
    auto* sig = host<abi::amd_signal>(signal);
    if (profiling) std::atomic_ref<std::uint64_t>(sig->end_ts).store(events_.gpu_clock(), std::memory_order_relaxed);
    const std::uint64_t mailbox = std::atomic_ref<std::uint64_t>(sig->event_mailbox_ptr).load(std::memory_order_relaxed);
    const std::uint32_t id = mailbox != 0 ? std::atomic_ref<std::uint32_t>(sig->event_id).load(std::memory_order_relaxed) : 0;
    const auto order = release_scope == 0 ? std::memory_order_relaxed : std::memory_order_release;
    std::atomic_ref<std::int64_t>(sig->value).fetch_sub(1, order);
    if (mailbox != 0) {
      if (mailbox % 8 == 0 && tlb_.is_mapped(mailbox, 8))
        std::atomic_ref<std::uint64_t>(*host<std::uint64_t>(mailbox)).store(id, std::memory_order_release);
      events_.signal_event(id);
    }
  }

  // Every packet below `index` has completed: completed() and wait_retired see it.
  void publish_retired(std::uint64_t index) {
    retired_.store(index, std::memory_order_seq_cst);
    if (inflight_.empty() && has_error()) quiet_.store(true, std::memory_order_release);
    if (retire_waiters_.load(std::memory_order_seq_cst) != 0) {
      { std::lock_guard lock(mu_); }  // pairs with wait_retired's predicate check
      retire_cv_.notify_all();
    }
  }

  // ---------------------------------------------------------------- preemption
  // Serves a pending preemption, if one is due (inline: when none is, the test and no call).
  bool preemption_point() { return !preemptor_.due(true) || serve_preemption(); }
  // The workers stop claiming workgroups and finish the ones they run; the next workgroups of
  // the queued dispatches are saved, the queue stays off, and the saved ones then run here
  // (scratch slot 0: the saved waves' scratch offsets are slot 0's) from the state read back.
  // false: the queue was stopped meanwhile.
  bool serve_preemption() {
    std::vector<dispatch_job*> jobs;
    std::vector<detail::resident_dispatch> resident;
    {
      std::unique_lock lock(mu_);
      paused_ = true;
      idle_cv_.wait(lock, [&] { return running_ == 0 || stop_; });
      if (stop_) return false;
      for (dispatch_job* j : jobs_) {
        if (j->next_wg >= j->d.total_wg || j->faulted.load(std::memory_order_acquire)) continue;
        jobs.push_back(j);
        resident.push_back({j->index, &j->d.plan, j->next_wg, j->d.total_wg, j->d.waves_per_wg, false});
      }
    }
    const auto out = preemptor_.preempt(resident);
    bool ok_ = out.what == detail::cwsr_preemptor::outcome_kind::resumed;
    if (out.what == detail::cwsr_preemptor::outcome_kind::fault) {
      // The queue stops at the first dispatch that was (or would have been) saved.
      const inflight* at = inflight_.empty() ? nullptr : inflight_.front();
      for (const inflight* e : inflight_)
        if (!jobs.empty() && e->is_dispatch && &e->job == jobs.front()) at = e;
      fail(out.fault, at ? at->index : launch_, at ? at->packet : abi::aql_slot{}, out.address, out.why);
      dead_ = true;  // a hang: nothing runs or retires any more (the workers stay paused)
      quiet_.store(true, std::memory_order_release);
      retire_cv_.notify_all();
      return true;
    }
    if (ok_) {
      // The restored workgroups: a prefix of each job's remaining range, in claim order.
      std::vector<wave_state> waves;
      for (dispatch_job* j : jobs) {
        std::uint64_t wg = j->next_wg, ran = 0;  // next_wg moves only under mu_, and only here while paused
        for (;; ++wg) {
          const auto t = preemptor_.take(j->index, wg, waves);
          if (t == detail::cwsr_preemptor::take_result::not_restored) break;
          if (t == detail::cwsr_preemptor::take_result::corrupt) {
            record_fault(*j, engine_fault::cwsr_restore_failed, b_.cwsr.address,
                         "restored wave record of workgroup " + std::to_string(wg) + " is corrupt");
          } else if (!j->faulted.load(std::memory_order_acquire)) {
            report(*j, inline_executor_.run(j->d.plan, wg, waves));
            preemptor_.note_workgroup();
          }
          ++ran;
        }
        std::lock_guard lock(mu_);
        j->next_wg = wg;
        if (j->done_wg.fetch_add(ran, std::memory_order_acq_rel) + ran == j->d.total_wg)
          j->complete.store(true, std::memory_order_release);
        if (j->next_wg >= j->d.total_wg) std::erase(jobs_, j);
      }
    }
    {
      std::lock_guard lock(mu_);
      paused_ = false;
    }
    worker_cv_.notify_all();
    return out.what != detail::cwsr_preemptor::outcome_kind::stopped;
  }

  // ---------------------------------------------------------------- workers
  // Records a workgroup's fault in its job (the first one wins); nothing for a clean run.
  static void report(dispatch_job& job, std::optional<workgroup_fault> f) {
    if (f) record_fault(job, engine_fault_of(f->what), f->address, std::move(f->detail));
  }
  static void record_fault(dispatch_job& job, engine_fault fault, std::uint64_t address, std::string detail) {
    std::lock_guard lock(job.fault_mu);
    if (job.fault == engine_fault::none) {
      job.fault = fault;
      job.fault_address = address;
      job.fault_detail = std::move(detail);
    }
    job.faulted.store(true, std::memory_order_release);
  }

  void worker_loop(unsigned slot) {
    workgroup_executor ex(vm_, slot);
    for (;;) {
      dispatch_job* job = nullptr;
      std::uint64_t wg = 0;
      {
        std::unique_lock lock(mu_);
        worker_cv_.wait(lock, [&] { return workers_stop_ || stop_ || (!paused_ && !jobs_.empty()); });
        if (stop_ || (workers_stop_ && jobs_.empty())) return;
        if (paused_ || jobs_.empty()) continue;
        job = jobs_.front();
        wg = job->next_wg++;
        if (job->next_wg >= job->d.total_wg) jobs_.erase(jobs_.begin());
        ++running_;
      }
      if (!job->faulted.load(std::memory_order_acquire)) report(*job, ex.run(job->d.plan, wg));
      preemptor_.note_workgroup();
      // After this fetch_add the job is not touched again (unless it was the last workgroup, which
      // publishes `complete`): once another worker finishes the last workgroup the processor may
      // retire the entry and plan the next packet into it, so the total is read before.
      const std::uint64_t total = job->d.total_wg;
      const bool last = job->done_wg.fetch_add(1, std::memory_order_acq_rel) + 1 == total;
      if (last) job->complete.store(true, std::memory_order_release);
      {
        std::lock_guard lock(mu_);
        --running_;
      }
      idle_cv_.notify_all();
      if (last || preemptor_.due(true)) notify();
    }
  }

  // ---------------------------------------------------------------- state
  aql_queue_binding b_;
  const vm_access& vm_;
  event_notifier& events_;
  const host_kernel_registry& registry_;
  aql_processor_options opt_;
  detail::cwsr_preemptor preemptor_;
  workgroup_executor inline_executor_{vm_, 0};  // processor thread only
  // Processor thread only: the checks of its own structures (descriptor, code, kernargs, signals,
  // mailboxes) through a translation cache dropped at every VM change (emu/vm_tlb.hpp), and the
  // last kernel object's checks (detail::kernel_object_cache: same bytes, same VM and registry
  // generations). A kernel's data accesses go to vm_ itself.
  vm_tlb tlb_{vm_};
  detail::kernel_object_cache kernels_;
  // b_.amd_queue_va's host address, asked of the VM once per TLB generation (0: ask again).
  abi::amd_queue* amdq_ = nullptr;
  std::uint64_t amdq_generation_ = 0;
  abi::aql_slot* ring_ = nullptr;
  std::uint64_t slots_ = 0;
  std::uint64_t* rptr_ = nullptr;
  std::uint64_t launch_ = 0;                          // processor thread only
  bool dead_ = false;                                 // processor thread only
  std::uint64_t checked_ = 0;                         // launch_ + 1 once sequence-checked
  // Processor thread only: every entry ever made (owned), the launched-not-retired ones in
  // launch order, and the retired ones ready for reuse.
  std::vector<std::unique_ptr<inflight>> entries_;
  std::vector<inflight*> inflight_;
  std::vector<inflight*> spare_inflight_;
  std::atomic<std::uint64_t> retired_{0};
  mutable std::atomic<unsigned> retire_waiters_{0};  // threads in wait_retired
  std::atomic<bool> quiet_{false};  // in error and nothing left that can retire
  engine_error_slot errors_;

  // Guarded by queue_wakeup::mu_: workers_stop_, jobs_ (and dispatch_job::next_wg), paused_, running_.
  mutable std::condition_variable retire_cv_;
  std::condition_variable worker_cv_;
  std::condition_variable idle_cv_;  // running_ reached 0
  bool workers_stop_ = false;
  bool paused_ = false;   // a preemption is being served: workers claim nothing
  unsigned running_ = 0;  // workgroups the workers are running
  std::vector<dispatch_job*> jobs_;  // multi-workgroup dispatches with workgroups left to claim

  std::thread thread_;
  std::vector<std::thread> workers_;
};

}  // namespace aqueduct::emu
