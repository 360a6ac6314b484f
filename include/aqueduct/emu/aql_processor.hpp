// aqueduct/emu/aql_processor.hpp — the emulated AQL packet processor of one user-mode queue.
//
// Layer: emu. One `aql_processor` per AQL queue, on its own thread, does what the GPU's CP does
// (DESIGN.md §4, spec/packets.md §5.5): it reads the slot at its read index as soon as the
// header (dword 0, acquire load) is valid — before the doorbell if it likes — honours the
// barrier bit (a packet with it is not launched before every earlier packet has completed),
// launches kernel dispatches onto a small worker pool (one host call per workgroup,
// emu/host_kernel.hpp), and runs barrier-AND, barrier-OR and AMD barrier-value packets (a barrier
// packet holds the queue until it is satisfied).
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
// A malformed packet stops the queue in an error state (`error()`, with the packet decoded);
// nothing is thrown into the process. A faulting dispatch stops the queue: nothing completes
// after it. Adversarial mode spins on the header and re-reads the body after a pause: a body
// written after its header is reported (and ThreadSanitizer sees the racing plain stores).
//
// It depends only on three small interfaces: `vm_access` (is a range mapped, where is it),
// `event_notifier`, and `aql_queue_binding` (where the ring and the read/write indexes are).
// Thread safety: ring_doorbell/notify/error/read_index/completed/wait_retired may be called from
// any thread. The vm_access, event_notifier and registry must outlive the processor.
#pragma once

#include <aqueduct/abi/amd_queue.hpp>
#include <aqueduct/abi/amd_signal.hpp>
#include <aqueduct/abi/aql.hpp>
#include <aqueduct/abi/kernel_descriptor.hpp>
#include <aqueduct/arch/family.hpp>
#include <aqueduct/config.hpp>
#include <aqueduct/core/result.hpp>
#include <aqueduct/emu/engine_error.hpp>
#include <aqueduct/emu/engine_ports.hpp>
#include <aqueduct/emu/host_kernel.hpp>
#include <aqueduct/emu/queue_wakeup.hpp>
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
#include <vector>

namespace aqueduct::emu {

// Where a queue's memory is (from KFD create_queue: ring base/size, read/write pointers).
struct aql_queue_binding {
  std::uint64_t ring_va = 0;
  std::uint64_t ring_bytes = 0;       // power of two, multiple of 64
  std::uint64_t read_index_va = 0;    // u64 the processor writes (amd_queue.read_dispatch_id)
  std::uint64_t write_index_va = 0;   // u64 the producer writes; read for diagnostics only (0: unknown)
  std::uint64_t amd_queue_va = 0;     // 0 if unknown: queue ptr SGPRs, scratch SRD, profiling flag
  arch::family family = arch::family::gfx11;
  std::uint32_t gpu_id = 0;
  std::uint32_t queue_id = 0;
};

struct aql_processor_options {
  bool adversarial = false;        // spin on headers; re-read bodies to catch header-first writes
  unsigned workers = 2;            // worker threads for multi-workgroup dispatches (0 = inline)
  std::uint64_t inline_max_workgroups = 1;  // dispatches this small run on the processor thread
  std::size_t max_inflight = 16;   // packets launched but not retired
  std::uint32_t max_lds_bytes = 64 * 1024;
  std::chrono::microseconds idle_poll{2000};         // re-check the ring without a doorbell
  // After the ring runs dry, poll the next header this long before sleeping (a CP polls too):
  // packets that follow closely are taken without a sleep, and their doorbells wake nobody.
  std::chrono::microseconds idle_spin{20};
  std::chrono::microseconds adversarial_recheck{300};  // pause before re-reading a body
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
    if (b.read_index_va % 8 != 0 || !vm.is_mapped(b.read_index_va, 8))
      return failure(errc::invalid_argument, "AQL read index is not mapped or not 8-byte aligned");
    if (b.write_index_va != 0 && (b.write_index_va % 8 != 0 || !vm.is_mapped(b.write_index_va, 8)))
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

  // Stops and joins every thread. In-flight workgroups finish; unlaunched packets stay.
  void stop() noexcept {
    if (!request_stop()) return;
    worker_cv_.notify_all();
    if (thread_.joinable()) thread_.join();
    for (auto& t : workers_)
      if (t.joinable()) t.join();
  }

 private:
  struct dispatch_job;
  struct inflight {
    std::uint64_t index = 0;
    abi::aql_slot packet{};
    std::uint64_t signal = 0;  // completion signal VA
    std::uint8_t release_scope = 0;
    std::atomic<bool> complete{false};
    std::shared_ptr<dispatch_job> job;  // null for barrier packets
  };
  struct dispatch_job {
    dispatch_plan plan;
    std::vector<std::uint32_t> kernarg_copy;  // for kernarg preload
    std::uint64_t total_wg = 0;
    std::uint64_t next_wg = 0;                 // guarded by mu_
    std::atomic<std::uint64_t> done_wg{0};
    std::atomic<bool> complete{false};  // every workgroup ran (or was skipped after a fault)
    std::atomic<bool> faulted{false};
    std::mutex fault_mu;
    engine_fault fault = engine_fault::none;
    std::uint64_t fault_address = 0;
    std::string fault_detail;
  };

  aql_processor(const aql_queue_binding& b, const vm_access& vm, event_notifier& ev, const host_kernel_registry& reg,
                aql_processor_options opt)
      : b_(b), vm_(vm), events_(ev), registry_(reg), opt_(std::move(opt)) {
    ring_ = static_cast<abi::aql_slot*>(vm_.host_address(b_.ring_va));
    slots_ = b_.ring_bytes / abi::aql_packet_size;
    rptr_ = static_cast<std::uint64_t*>(vm_.host_address(b_.read_index_va));
    launch_ = std::atomic_ref<std::uint64_t>(*rptr_).load(std::memory_order_acquire);
    retired_.store(launch_, std::memory_order_release);
  }

  void start() {
    // Scratch slot 0 is the processor thread's (inline dispatches), worker i has slot i + 1.
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
      retire();
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
      if (h.barrier && !inflight_.empty()) {  // wait for every earlier packet to complete
        wait_for_wakeup(seen, opt_.idle_poll);
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
          if (r == 0) {      // not yet: the queue stalls here
            wait_for_wakeup(seen, backoff);
            backoff = std::min(backoff * 2, std::chrono::microseconds(1000));
            break;
          }
          auto e = push_inflight(snap, h);
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
    if (opt_.idle_spin.count() <= 0) return false;
    const auto until = std::chrono::steady_clock::now() + opt_.idle_spin;
    auto& header = *reinterpret_cast<std::uint32_t*>(slot.bytes);
    for (unsigned i = 1;; ++i) {
      const auto dw0 = std::atomic_ref<std::uint32_t>(header).load(std::memory_order_relaxed);
      if (abi::decode_header(static_cast<std::uint16_t>(dw0)).type != static_cast<std::uint8_t>(abi::packet_type::invalid) ||
          wake_seq() != seen)
        return true;
      if ((i & 63) == 0 && std::chrono::steady_clock::now() >= until) return false;
      AQUEDUCT_CPU_RELAX();
    }
  }

  static abi::aql_slot read_slot(abi::aql_slot& s) noexcept {
    abi::aql_slot out;
    auto* q = reinterpret_cast<std::uint64_t*>(s.bytes);
    for (int i = 0; i < 8; ++i) {
      const std::uint64_t v = std::atomic_ref<std::uint64_t>(q[i]).load(std::memory_order_relaxed);
      std::memcpy(out.bytes + 8 * i, &v, 8);
    }
    return out;
  }

  inflight* push_inflight(const abi::aql_slot& snap, const abi::decoded_header& h) {
    std::unique_ptr<inflight> e;
    if (!spare_inflight_.empty()) {  // recycled: no allocation per packet in steady state
      e = std::move(spare_inflight_.back());
      spare_inflight_.pop_back();
      e->complete.store(false, std::memory_order_relaxed);
      e->job.reset();
    } else {
      e = std::make_unique<inflight>();
    }
    e->index = launch_;
    e->packet = snap;
    std::memcpy(&e->signal, snap.bytes + 56, 8);  // completion_signal is at 56 in every packet
    e->release_scope = h.release_scope;
    inflight_.push_back(std::move(e));
    return inflight_.back().get();
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
    if (b_.write_index_va != 0)
      e.write_position = std::atomic_ref<std::uint64_t>(*host<std::uint64_t>(b_.write_index_va)).load(std::memory_order_acquire);
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
    errors_.record(std::move(e));
    if (inflight_.empty()) quiet_.store(true, std::memory_order_release);
    {
      std::lock_guard lock(mu_);
      ++wake_seq_;
    }
    retire_cv_.notify_all();
  }

  bool signal_ok(std::uint64_t va) const noexcept {
    return va % abi::amd_signal_align == 0 && vm_.is_mapped(va, sizeof(abi::amd_signal));
  }
  std::int64_t signal_value(std::uint64_t va) const noexcept {
    return std::atomic_ref<std::int64_t>(host<abi::amd_signal>(va)->value).load(std::memory_order_acquire);
  }

  // 1 satisfied, 0 not yet, -1 faulted.
  int barrier_satisfied(const abi::aql_slot& snap, const abi::decoded_header& h) {
    const std::uint64_t completion = [&] { std::uint64_t v; std::memcpy(&v, snap.bytes + 56, 8); return v; }();
    if (completion != 0 && !signal_ok(completion)) {
      fail(engine_fault::signal_not_mapped, launch_, snap, completion, "completion signal");
      return -1;
    }
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
      if (!signal_ok(p.signal)) {
        fail(engine_fault::signal_not_mapped, launch_, snap, p.signal, "barrier-value signal");
        return -1;
      }
      return abi::condition_holds(static_cast<abi::signal_condition>(p.cond), signal_value(p.signal) & p.mask, p.value)
                 ? 1 : 0;
    }
    abi::barrier_and_packet p;
    std::memcpy(&p, snap.bytes, sizeof p);
    const bool is_and = h.type == static_cast<std::uint8_t>(abi::packet_type::barrier_and);
    bool any_dep = false, any_zero = false, all_zero = true;
    for (std::uint64_t s : p.dep_signal) {
      if (s == 0) continue;
      if (!signal_ok(s)) {
        fail(engine_fault::signal_not_mapped, launch_, snap, s, "dependency signal");
        return -1;
      }
      any_dep = true;
      const bool z = signal_value(s) == 0;
      any_zero = any_zero || z;
      all_zero = all_zero && z;
    }
    if (is_and) return all_zero ? 1 : 0;
    return (!any_dep || any_zero) ? 1 : 0;  // barrier-OR with no dependency completes at once
  }

  // Validates and launches a kernel dispatch. false = faulted (no advance).
  bool launch_dispatch(const abi::aql_slot& snap, const abi::decoded_header& h) {
    abi::kernel_dispatch_packet p;
    std::memcpy(&p, snap.bytes, sizeof p);
    auto bad = [&](engine_fault f, std::uint64_t addr, const std::string& why) {
      fail(f, launch_, snap, addr, why);
      return false;
    };
    const unsigned dims = abi::dispatch_setup::dimensions::get(p.setup);
    if (dims == 0 || (p.setup & ~abi::dispatch_setup::dimensions::mask) != 0)
      return bad(engine_fault::bad_dimensions, 0, "setup.dimensions must be 1..3 and setup's reserved bits 0");
    const std::uint32_t grid[3] = {p.grid_size_x, p.grid_size_y, p.grid_size_z};
    const std::uint32_t wg[3] = {p.workgroup_size_x, p.workgroup_size_y, p.workgroup_size_z};
    for (unsigned d = 0; d < 3; ++d) {
      if (wg[d] == 0) return bad(engine_fault::bad_workgroup_size, 0, "a workgroup size is 0");
      if (grid[d] == 0) return bad(engine_fault::bad_dimensions, 0, "a grid size is 0");
      if (d >= dims && (grid[d] != 1 || wg[d] != 1))
        return bad(engine_fault::bad_dimensions, 0, "grid and workgroup sizes beyond setup.dimensions must be 1");
    }
    if (std::uint64_t(wg[0]) * wg[1] * wg[2] > 1024)
      return bad(engine_fault::bad_workgroup_size, 0, "more than 1024 work-items per workgroup");
    if (p.kernel_object == 0 || p.kernel_object % 64 != 0 || !vm_.is_mapped(p.kernel_object, sizeof(abi::kernel_descriptor)))
      return bad(engine_fault::kernel_object_not_mapped, p.kernel_object, "");
    auto job = std::make_shared<dispatch_job>();
    job->plan.family = b_.family;
    std::memcpy(&job->plan.kd, host<const void>(p.kernel_object), sizeof job->plan.kd);
    const auto& kd = job->plan.kd;
    const std::uint64_t entry = p.kernel_object + static_cast<std::uint64_t>(kd.kernel_code_entry_byte_offset);
    if (entry % abi::kernel_code_entry_align != 0 || !vm_.is_mapped(entry, sizeof(emulated_code_blob)))
      return bad(engine_fault::bad_kernel_descriptor, entry, "kernel code entry misaligned or not mapped");
    emulated_code_blob blob;
    std::memcpy(&blob, host<const void>(entry), sizeof blob);
    const std::string_view name = emulated_code_name(blob);
    if (!name.empty()) {
      job->plan.fn = registry_.find(name);
      if (!job->plan.fn) return bad(engine_fault::unknown_host_kernel, entry, "host kernel '" + std::string(name) + "'");
    } else if (isa_supported(b_.family)) {
      job->plan.code_entry = entry;  // machine code: the interpreter runs it (emu/isa/)
    } else {
      return bad(engine_fault::bad_kernel_descriptor, entry,
                 "no emulated code at the kernel entry, and no ISA interpreter for " + std::string(arch::family_name(b_.family)));
    }
    namespace kcp = abi::kernel_code_properties;
    namespace r2 = abi::compute_pgm_rsrc2;
    const std::uint16_t props = kd.kernel_code_properties;
    if ((props & ~kcp::defined_mask) != 0) return bad(engine_fault::bad_kernel_descriptor, 0, "reserved kernel_code_properties bits");
    if (kcp::enable_wavefront_size32::get(props) && !supports_wave32(b_.family))
      return bad(engine_fault::bad_kernel_descriptor, 0, "wave32 requested on a wave64-only family");
    const unsigned user = r2::user_sgpr_count::get(kd.compute_pgm_rsrc2);
    const unsigned needed = abi::enabled_user_sgpr_count(props) + abi::kernarg_preload::length::get(kd.kernarg_preload);
    if (needed > user) return bad(engine_fault::bad_kernel_descriptor, 0, "enabled user SGPRs exceed rsrc2.USER_SGPR_COUNT");
    if (r2::granulated_lds_size::get(kd.compute_pgm_rsrc2) != 0)
      return bad(engine_fault::bad_kernel_descriptor, 0, "rsrc2.GRANULATED_LDS_SIZE must be 0 (the CP takes LDS from the packet)");
    if (kcp::enable_sgpr_kernarg_segment_ptr::get(props) && kd.kernarg_size != 0 &&
        (p.kernarg_address == 0 || !vm_.is_mapped(p.kernarg_address, kd.kernarg_size)))
      return bad(engine_fault::kernarg_not_mapped, p.kernarg_address, "");
    const std::uint64_t lds = std::uint64_t(p.group_segment_size) + kd.group_segment_fixed_size;
    if (lds > opt_.max_lds_bytes) return bad(engine_fault::lds_too_large, 0, std::to_string(lds) + " bytes");
    if (p.completion_signal != 0 && !signal_ok(p.completion_signal))
      return bad(engine_fault::signal_not_mapped, p.completion_signal, "completion signal");

    job->plan.pkt = p;
    job->plan.lds_bytes = static_cast<std::uint32_t>(lds);
    dispatch_inputs& inputs = job->plan.inputs;
    inputs.packet_va = b_.ring_va + (launch_ & (slots_ - 1)) * abi::aql_packet_size;
    inputs.queue_va = b_.amd_queue_va;
    inputs.dispatch_id = launch_;
    bool profiling = false;
    if (b_.amd_queue_va != 0) {
      auto* q = host<abi::amd_queue>(b_.amd_queue_va);
      for (int i = 0; i < 4; ++i)
        inputs.scratch_srd[i] =
            std::atomic_ref<std::uint32_t>(q->scratch_resource_descriptor[i]).load(std::memory_order_relaxed);
      inputs.scratch_base =
          std::atomic_ref<std::uint64_t>(q->scratch_backing_memory_location).load(std::memory_order_relaxed);
      profiling = abi::amd_queue_properties::enable_profiling::get(
                      std::atomic_ref<std::uint32_t>(q->queue_properties).load(std::memory_order_relaxed)) != 0;
    }
    if (const unsigned pre = abi::kernarg_preload::length::get(kd.kernarg_preload); pre != 0 && p.kernarg_address != 0) {
      const unsigned dwords = pre + abi::kernarg_preload::offset::get(kd.kernarg_preload);
      if (!vm_.is_mapped(p.kernarg_address, dwords * 4ull))
        return bad(engine_fault::kernarg_not_mapped, p.kernarg_address, "kernarg preload");
      job->kernarg_copy.resize(dwords);
      std::memcpy(job->kernarg_copy.data(), host<const void>(p.kernarg_address), dwords * 4ull);
      inputs.kernarg_host = job->kernarg_copy.data();
      inputs.kernarg_dwords = dwords;
    }
    const auto g = geometry_of(p, 0);
    job->total_wg = std::uint64_t(g.count[0]) * g.count[1] * g.count[2];

    inflight* e = push_inflight(snap, h);
    e->job = job;
    if (profiling && p.completion_signal != 0)
      std::atomic_ref<std::uint64_t>(host<abi::amd_signal>(p.completion_signal)->start_ts)
          .store(events_.timestamp(), std::memory_order_relaxed);
    release_slot(snap);  // launched: the slot is the producer's again before any workgroup runs
    if (opt_.workers == 0 || job->total_wg <= opt_.inline_max_workgroups) {
      for (std::uint64_t i = 0; i < job->total_wg && !job->faulted.load(std::memory_order_relaxed); ++i)
        run_workgroup(inline_executor_, *job, i);
      job->complete.store(true, std::memory_order_release);
    } else {
      {
        std::lock_guard lock(mu_);
        jobs_.push_back(job);
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
    bool any = false;
    for (std::size_t i = 0; !dead_ && i < inflight_.size();) {
      inflight& e = *inflight_[i];
      if (!(e.job ? e.job->complete : e.complete).load(std::memory_order_acquire)) {
        ++i;
        continue;
      }
      if (e.job && e.job->faulted.load(std::memory_order_acquire)) {
        std::string why;
        engine_fault f;
        std::uint64_t addr;
        {
          std::lock_guard lock(e.job->fault_mu);
          f = e.job->fault;
          addr = e.job->fault_address;
          why = e.job->fault_detail;
        }
        dead_ = true;  // the queue is dead: nothing completes after the faulting dispatch
        quiet_.store(true, std::memory_order_release);
        fail(f, e.index, e.packet, addr, why);
        break;
      }
      if (e.signal != 0 && e.job && b_.amd_queue_va != 0 &&
          abi::amd_queue_properties::enable_profiling::get(
              std::atomic_ref<std::uint32_t>(host<abi::amd_queue>(b_.amd_queue_va)->queue_properties)
                  .load(std::memory_order_relaxed)))
        std::atomic_ref<std::uint64_t>(host<abi::amd_signal>(e.signal)->end_ts).store(events_.timestamp(), std::memory_order_relaxed);
      // Completion signal with the packet's release scope, then its event.
      if (e.signal != 0) {
        auto* sig = host<abi::amd_signal>(e.signal);
        const auto order = e.release_scope == 0 ? std::memory_order_relaxed : std::memory_order_release;
        std::atomic_ref<std::int64_t>(sig->value).fetch_sub(1, order);
        const std::uint64_t mailbox = std::atomic_ref<std::uint64_t>(sig->event_mailbox_ptr).load(std::memory_order_relaxed);
        if (mailbox != 0) {
          const std::uint32_t id = std::atomic_ref<std::uint32_t>(sig->event_id).load(std::memory_order_relaxed);
          if (mailbox % 8 == 0 && vm_.is_mapped(mailbox, 8))
            std::atomic_ref<std::uint64_t>(*host<std::uint64_t>(mailbox)).store(id, std::memory_order_release);
          events_.signal_event(id);
        }
      }
      inflight_[i]->job.reset();
      spare_inflight_.push_back(std::move(inflight_[i]));
      inflight_.erase(inflight_.begin() + static_cast<std::ptrdiff_t>(i));
      any = true;
    }
    if (!any) return;
    retired_.store(inflight_.empty() ? launch_ : inflight_.front()->index, std::memory_order_seq_cst);
    if (inflight_.empty() && has_error()) quiet_.store(true, std::memory_order_release);
    if (retire_waiters_.load(std::memory_order_seq_cst) != 0) {
      { std::lock_guard lock(mu_); }  // pairs with wait_retired's predicate check
      retire_cv_.notify_all();
    }
  }

  // ---------------------------------------------------------------- workers
  void run_workgroup(workgroup_executor& ex, dispatch_job& job, std::uint64_t linear) {
    auto f = ex.run(job.plan, linear);
    if (!f) return;
    std::lock_guard lock(job.fault_mu);
    if (job.fault == engine_fault::none) {
      job.fault = engine_fault_of(f->what);
      job.fault_address = f->address;
      job.fault_detail = std::move(f->detail);
    }
    job.faulted.store(true, std::memory_order_release);
  }

  void worker_loop(unsigned slot) {
    workgroup_executor ex(vm_, slot);
    for (;;) {
      std::shared_ptr<dispatch_job> job;
      std::uint64_t wg = 0;
      {
        std::unique_lock lock(mu_);
        worker_cv_.wait(lock, [&] { return workers_stop_ || stop_ || !jobs_.empty(); });
        if (jobs_.empty()) return;  // stopping and nothing to run
        if (stop_) return;
        job = jobs_.front();
        wg = job->next_wg++;
        if (job->next_wg >= job->total_wg) jobs_.pop_front();
      }
      if (!job->faulted.load(std::memory_order_acquire)) run_workgroup(ex, *job, wg);
      if (job->done_wg.fetch_add(1, std::memory_order_acq_rel) + 1 == job->total_wg) {
        job->complete.store(true, std::memory_order_release);
        notify();
      }
    }
  }

  // ---------------------------------------------------------------- state
  aql_queue_binding b_;
  const vm_access& vm_;
  event_notifier& events_;
  const host_kernel_registry& registry_;
  aql_processor_options opt_;
  workgroup_executor inline_executor_{vm_, 0};  // processor thread only
  abi::aql_slot* ring_ = nullptr;
  std::uint64_t slots_ = 0;
  std::uint64_t* rptr_ = nullptr;
  std::uint64_t launch_ = 0;                          // processor thread only
  bool dead_ = false;                                 // processor thread only
  std::uint64_t checked_ = 0;                         // launch_ + 1 once sequence-checked
  std::deque<std::unique_ptr<inflight>> inflight_;    // processor thread only
  std::vector<std::unique_ptr<inflight>> spare_inflight_;  // retired entries for reuse (processor thread)
  std::atomic<std::uint64_t> retired_{0};
  mutable std::atomic<unsigned> retire_waiters_{0};  // threads in wait_retired
  std::atomic<bool> quiet_{false};  // in error and nothing left that can retire

  // Guarded by queue_wakeup::mu_: workers_stop_, jobs_ (and dispatch_job::next_wg).
  mutable std::condition_variable retire_cv_;
  std::condition_variable worker_cv_;
  bool workers_stop_ = false;
  std::deque<std::shared_ptr<dispatch_job>> jobs_;

  engine_error_slot errors_;

  std::thread thread_;
  std::vector<std::thread> workers_;
};

}  // namespace aqueduct::emu
