// aqueduct/emu/pm4_processor.hpp — the emulated MEC (compute micro-engine) of one PM4 queue.
//
// Layer: emu. One `pm4_processor` per KFD compute (non-AQL) queue, on its own thread, reads the
// ring from its read pointer up to the write pointer (dwords; packets may straddle the ring's
// end), interprets the type-3 packets aqueduct's encoder emits (spec/packets.md §1.3: NOP,
// SET_SH_REG, DISPATCH_DIRECT, ACQUIRE_MEM, RELEASE_MEM, WAIT_REG_MEM, WRITE_DATA,
// INDIRECT_BUFFER, EVENT_WRITE, PRED_EXEC) and release-stores the read pointer after each.
// It keeps the SH register file, and a dispatch runs FROM THE REGISTERS, as on hardware:
// COMPUTE_PGM_LO/HI → the code (an emulated code blob → host kernel), COMPUTE_PGM_RSRC2 (user
// SGPR count, system SGPR enables, LDS), COMPUTE_USER_DATA_* → the user SGPRs, COMPUTE_NUM_THREAD_*
// → workgroup size, DISPATCH_INITIATOR.CS_W32_EN → wave size; the waves' initial state is built
// by emu/wave_state.hpp with the user SGPRs replaced by USER_DATA, so a wrong user-data layout
// gives the host kernel a wrong kernarg pointer and a wrong answer.
// Strictness: an unknown opcode, a COUNT that does not match the packet, a reserved bit, a
// register outside the SH window, an unmapped address (every access is checked against the VM)
// stop the queue with an error (`error()`: fault, read/write pointers, the packet decoded).
// Preemption (emu/cwsr.hpp): between workgroups the queue can be preempted — on demand
// (`request_preemption` / `resume`) or by a stress knob (every N workgroups, or on a timer) —
// the resident waves go through the CWSR area and are restored from it. The GFX11 PRIV bug is
// modelled (spec/kfd.md §4): on a DEGFX11_12113 part a dispatch whose COMPUTE_PGM_RSRC1 lacks
// PRIV hangs at its first preemption (the queue stops making progress); PRIV set on any other
// part hangs the queue at the dispatch. A save that does not fit the area hangs too.
// `wait_value` is the host side: wait for a completion word; on timeout errc::device_hang (the
// processor stopped: its fault, the packet decoded) or errc::timeout, with the queue described.
// Thread safety: ring_doorbell/notify/request_preemption/resume and the queries may be called
// from any thread. vm_access, event_notifier and registry must outlive the processor.
#pragma once

#include <aqueduct/abi/aql.hpp>
#include <aqueduct/abi/kernel_descriptor.hpp>
#include <aqueduct/abi/pm4.hpp>
#include <aqueduct/arch/family.hpp>
#include <aqueduct/core/bits.hpp>
#include <aqueduct/core/result.hpp>
#include <aqueduct/emu/aql_processor.hpp>  // event_notifier
#include <aqueduct/emu/cwsr.hpp>
#include <aqueduct/emu/host_kernel.hpp>
#include <aqueduct/emu/wave_state.hpp>
#include <aqueduct/queue/pm4_describe.hpp>
#include <aqueduct/sync/wait.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace aqueduct::emu {

// Where a PM4 queue's memory is (CREATE_QUEUE) and what part it runs on.
struct pm4_queue_binding {
  std::uint64_t ring_va = 0;
  std::uint64_t ring_bytes = 0;          // power of two >= 1024
  std::uint64_t read_pointer_va = 0;     // u64 dwords, written by the processor
  std::uint64_t write_pointer_va = 0;    // u64 dwords, written by the producer
  std::uint64_t eop_buffer_va = 0;       // RELEASE_MEM needs one (tinygrad: "or it will NULL pointer")
  std::uint64_t eop_buffer_bytes = 0;
  cwsr_area cwsr;                        // XCC 0's save area
  arch::cwsr_inputs node{};              // the node's CWSR inputs (wave capacity, state sizes)
  arch::family family = arch::family::gfx11;
  std::uint32_t gfx_target_version = 110000;
  std::uint32_t simd_arrays_per_engine = 2;
  std::uint32_t gpu_id = 0;
  std::uint32_t queue_id = 0;
};

enum class pm4_fault : std::uint8_t {
  none,
  not_type3,              // type 0/1/2 packet other than the 1-dword type-2 filler
  unknown_opcode,         // an opcode this MEC does not run
  bad_count,              // COUNT does not fit the packet (or the ring)
  reserved_bits,          // a reserved header or payload bit is set, or a field has a reserved value
  bad_register,           // SET_SH_REG outside the SH window
  not_mapped,             // a packet's address is not mapped in the GPU VM
  bad_dispatch,           // register state that cannot be dispatched (no program, 0 threads ...)
  unknown_host_kernel,
  memory_violation,       // a host kernel touched unmapped memory
  host_kernel_exception,
  no_eop_buffer,          // RELEASE_MEM on a queue created without an EOP buffer
  priv_on_unaffected_part,  // COMPUTE_PGM_RSRC1.PRIV on a part where it hangs (spec/kfd.md §4)
  cwsr_hang_without_priv,   // DEGFX11_12113: preempted PM4 dispatch without PRIV
  cwsr_save_failed,         // the save does not fit or is not mapped
  cwsr_restore_failed,
};

[[nodiscard]] constexpr const char* pm4_fault_name(pm4_fault f) noexcept {
  switch (f) {
    case pm4_fault::none: return "none";
    case pm4_fault::not_type3: return "not a type-3 packet";
    case pm4_fault::unknown_opcode: return "unknown opcode";
    case pm4_fault::bad_count: return "bad count";
    case pm4_fault::reserved_bits: return "reserved bits set";
    case pm4_fault::bad_register: return "register outside the SH window";
    case pm4_fault::not_mapped: return "address not mapped";
    case pm4_fault::bad_dispatch: return "bad dispatch state";
    case pm4_fault::unknown_host_kernel: return "unknown host kernel";
    case pm4_fault::memory_violation: return "memory violation";
    case pm4_fault::host_kernel_exception: return "host kernel exception";
    case pm4_fault::no_eop_buffer: return "RELEASE_MEM without an EOP buffer";
    case pm4_fault::priv_on_unaffected_part: return "COMPUTE_PGM_RSRC1.PRIV set on a part where it hangs";
    case pm4_fault::cwsr_hang_without_priv: return "hang on preemption: GFX11 PM4 dispatch without COMPUTE_PGM_RSRC1.PRIV";
    case pm4_fault::cwsr_save_failed: return "CWSR save failed";
    case pm4_fault::cwsr_restore_failed: return "CWSR restore failed";
  }
  return "?";
}
// Faults after which the queue simply stops making progress (what a host sees as a hang).
[[nodiscard]] constexpr bool is_hang(pm4_fault f) noexcept {
  return f == pm4_fault::priv_on_unaffected_part || f == pm4_fault::cwsr_hang_without_priv ||
         f == pm4_fault::cwsr_save_failed || f == pm4_fault::cwsr_restore_failed;
}

// Why and where the queue stopped.
struct pm4_error {
  pm4_fault fault = pm4_fault::none;
  std::uint64_t read_pointer = 0;   // dwords: the packet's position (the IB packet when inside an IB)
  std::uint64_t write_pointer = 0;
  std::uint64_t address = 0;        // faulting address when relevant
  bool in_indirect_buffer = false;
  std::vector<std::uint32_t> packet;  // the packet's dwords as read
  std::string detail;               // fault, cause and the packet decoded

  // device_hang for hangs, device_fault for memory faults, queue_error for malformed packets.
  [[nodiscard]] failure to_failure() const {
    const errc e = is_hang(fault) ? errc::device_hang
                   : (fault == pm4_fault::memory_violation || fault == pm4_fault::not_mapped) ? errc::device_fault
                                                                                              : errc::queue_error;
    return failure(e, detail);
  }
};

struct pm4_processor_options {
  // Stress knobs: preempt the queue every N workgroups executed (0 = off) and/or on a timer
  // (0 = off); a stress preemption keeps the queue off the hardware for `preempted_for`.
  std::uint64_t preempt_every_workgroups = 0;
  std::chrono::microseconds preempt_interval{0};
  std::chrono::microseconds preempted_for{0};
  std::uint32_t max_lds_bytes = 64 * 1024;
  unsigned max_ib_depth = 2;                          // IB inside IB allowed, not deeper
  std::chrono::microseconds idle_poll{2000};          // re-read the write pointer without a doorbell
  std::chrono::microseconds wait_poll{20};            // WAIT_REG_MEM re-poll
  std::uint64_t gpu_clock_hz = 100'000'000;           // GPU clock counter (tinygrad assumes 100 MHz, spec §2.2)
  // TEST ONLY: the MEC sees COMPUTE_PGM_RSRC1.PRIV as this value in every dispatch, whatever the
  // stream wrote — how a test gets the bit wrong through a typed encoder that cannot.
  std::optional<bool> test_force_rsrc1_priv{};
};

struct pm4_preemption_stats {
  std::uint64_t preemptions = 0;    // saves completed (each followed by a restore)
  std::uint64_t waves_saved = 0;    // summed over saves
  std::uint64_t max_ctl_bytes = 0;  // largest control stack used (header included)
  std::uint64_t max_state_bytes = 0;  // largest accounted workgroup state
};

class pm4_processor {
 public:
  pm4_processor(const pm4_processor&) = delete;
  pm4_processor& operator=(const pm4_processor&) = delete;
  ~pm4_processor() { stop(); }

  // Starts the processor thread. invalid_argument if the ring or pointers are not mapped, the
  // ring is not a power of two >= 1 KiB, or the family is not known.
  [[nodiscard]] static result<std::unique_ptr<pm4_processor>> try_create(
      const pm4_queue_binding& b, const vm_access& vm, event_notifier& events,
      const host_kernel_registry& registry = host_kernel_registry::global(), pm4_processor_options opt = {}) {
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
                                                             const host_kernel_registry& registry = host_kernel_registry::global(),
                                                             pm4_processor_options opt = {}) {
    return try_create(b, vm, events, registry, std::move(opt)).value();
  }

  // The doorbell write (value = write pointer in dwords). Wakes the processor.
  void ring_doorbell(std::uint64_t value) noexcept {
    doorbell_.store(value, std::memory_order_release);
    notify();
  }
  void notify() noexcept {
    {
      std::lock_guard lock(mu_);
      ++wake_seq_;
    }
    cv_.notify_all();
  }

  // ---- preemption on demand ---------------------------------------------------------------------
  // Asks for a preemption at the next preemption point (between workgroups or packets). The
  // queue stays off the hardware (state saved in the CWSR area) until resume().
  void request_preemption() noexcept {
    {
      std::lock_guard lock(mu_);
      preempt_requested_ = true;
      resume_requested_ = false;
      ++wake_seq_;
    }
    cv_.notify_all();
  }
  // Restores the saved state and continues.
  void resume() noexcept {
    {
      std::lock_guard lock(mu_);
      preempt_requested_ = false;
      resume_requested_ = true;
      ++wake_seq_;
    }
    cv_.notify_all();
  }
  // True once the queue is saved and off the hardware (or hung/stopped: then false).
  bool wait_preempted(std::chrono::milliseconds timeout) const {
    std::unique_lock lock(mu_);
    return state_cv_.wait_for(lock, timeout, [&] { return preempted_ || has_error(); }) && preempted_;
  }
  [[nodiscard]] pm4_preemption_stats preemption_stats() const {
    std::lock_guard lock(mu_);
    return stats_;
  }
  // Whether the area can hold a save of the whole machine (checked at creation).
  [[nodiscard]] const result<void>& cwsr_capacity() const noexcept { return capacity_; }
  [[nodiscard]] const cwsr_machine& machine() const noexcept { return machine_; }

  // ---- state ----------------------------------------------------------------------------------
  [[nodiscard]] bool has_error() const noexcept { return has_error_.load(std::memory_order_acquire); }
  [[nodiscard]] std::optional<pm4_error> error() const {
    std::lock_guard lock(err_mu_);
    return error_;
  }
  [[nodiscard]] std::uint64_t read_pointer() const noexcept { return rptr_pub_.load(std::memory_order_acquire); }
  [[nodiscard]] std::uint64_t write_pointer() const noexcept {
    return std::atomic_ref<std::uint64_t>(*wptr_).load(std::memory_order_acquire);
  }
  [[nodiscard]] std::uint64_t doorbell_value() const noexcept { return doorbell_.load(std::memory_order_acquire); }
  [[nodiscard]] std::uint64_t dispatches() const noexcept { return dispatches_.load(std::memory_order_acquire); }
  [[nodiscard]] const pm4_queue_binding& binding() const noexcept { return b_; }
  // SH register (absolute dword address 0x2C00..0x2FFF) as the last dispatch (or fault) saw it; for tests.
  [[nodiscard]] std::uint32_t sh_register(std::uint32_t abs) const {
    std::lock_guard lock(mu_);
    return abs >= abi::pm4::sh_reg_base && abs < abi::pm4::sh_reg_end ? sh_snapshot_[abs - abi::pm4::sh_reg_base] : 0;
  }

  // Blocks until the read pointer reaches `wptr` (true), the timeout passes, or the queue
  // stopped (false).
  bool wait_consumed(std::uint64_t wptr, std::chrono::milliseconds timeout) const {
    std::unique_lock lock(mu_);
    return state_cv_.wait_for(lock, timeout, [&] { return read_pointer() >= wptr || has_error(); }) &&
           read_pointer() >= wptr;
  }

  // "PM4 processor gpu 1 queue 3: rptr 40, wptr 120 (dwords); stopped: <fault>: <detail>"
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
    {
      std::lock_guard lock(mu_);
      if (stop_) return;
      stop_ = true;
      ++wake_seq_;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

 private:
  enum class step { done, retry, fault, stopped };

  pm4_processor(const pm4_queue_binding& b, const vm_access& vm, event_notifier& ev, const host_kernel_registry& reg,
                pm4_processor_options opt)
      : b_(b), vm_(vm), events_(ev), registry_(reg), opt_(std::move(opt)) {
    ring_ = host<std::uint32_t>(b.ring_va);
    ring_dwords_ = b.ring_bytes / 4;
    rptr_ = host<std::uint64_t>(b.read_pointer_va);
    wptr_ = host<std::uint64_t>(b.write_pointer_va);
    rptr_local_ = std::atomic_ref<std::uint64_t>(*rptr_).load(std::memory_order_acquire);
    rptr_pub_.store(rptr_local_, std::memory_order_release);
    machine_ = cwsr_machine_of(b.node);
    capacity_ = check_cwsr_capacity(b.cwsr, machine_);
    gfx9_form_ = b.family == arch::family::gfx9 || b.family == arch::family::gfx90a || b.family == arch::family::gfx94x;
    next_timer_preempt_ = std::chrono::steady_clock::now() + opt_.preempt_interval;
  }

  template <class T>
  [[nodiscard]] T* host(std::uint64_t va) const noexcept {
    return static_cast<T*>(vm_.host_address(va));
  }
  [[nodiscard]] std::uint32_t ring_at(std::uint64_t i) const noexcept {
    return std::atomic_ref<std::uint32_t>(ring_[i & (ring_dwords_ - 1)]).load(std::memory_order_relaxed);
  }

  // ------------------------------------------------------------------ main loop
  void run() {
    for (;;) {
      std::uint64_t seen;
      {
        std::lock_guard lock(mu_);
        if (stop_) return;
        seen = wake_seq_;
      }
      if (dead_) {
        idle_wait(seen, std::chrono::hours(1));
        continue;
      }
      if (preemption_point(false) == step::stopped) return;
      const std::uint64_t w = write_pointer();
      if (rptr_local_ >= w) {
        idle_wait(seen, opt_.idle_poll);
        continue;
      }
      const std::uint32_t hdr = ring_at(rptr_local_);
      const std::uint64_t len = packet_dwords(hdr);
      if (len > ring_dwords_) {
        std::vector<std::uint32_t> one{hdr};
        fail(pm4_fault::bad_count, one, 0, false, "packet longer than the ring");
        continue;
      }
      if (w - rptr_local_ < len) {  // the rest of the packet is not published yet
        idle_wait(seen, opt_.idle_poll);
        continue;
      }
      cur_.resize(len);
      for (std::uint64_t i = 0; i < len; ++i) cur_[i] = ring_at(rptr_local_ + i);
      const step s = execute(cur_, 0, false);
      if (s == step::stopped) return;
      if (s == step::retry) {  // WAIT_REG_MEM not satisfied: re-poll, backing off up to 64x
        idle_wait(seen, opt_.wait_poll * (1u << std::min(retries_++, 6u)));
        continue;
      }
      retries_ = 0;
      if (s == step::fault) continue;
      rptr_local_ += len;
      std::atomic_ref<std::uint64_t>(*rptr_).store(rptr_local_, std::memory_order_release);
      publish_rptr();
    }
  }

  void idle_wait(std::uint64_t seen, std::chrono::microseconds d) {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, d, [&] { return stop_ || wake_seq_ != seen; });
  }
  void publish_rptr() {
    {
      std::lock_guard lock(mu_);
      rptr_pub_.store(rptr_local_, std::memory_order_release);
    }
    state_cv_.notify_all();
  }
  void snapshot_registers() {
    std::lock_guard lock(mu_);
    std::memcpy(sh_snapshot_.data(), sh_.data(), sizeof sh_);
  }
  [[nodiscard]] static std::uint64_t packet_dwords(std::uint32_t hdr) noexcept {
    if (hdr == abi::pm4::type2_filler) return 1;
    if (abi::pm4::header_type::get(hdr) != abi::pm4::packet_type3) return 1;
    return abi::pm4::type3_packet_dwords(hdr);
  }

  // ------------------------------------------------------------------ errors
  void fail(pm4_fault f, std::span<const std::uint32_t> pkt, std::uint64_t addr, bool in_ib, const std::string& why) {
    pm4_error e;
    e.fault = f;
    e.read_pointer = rptr_local_;
    e.write_pointer = write_pointer();
    e.address = addr;
    e.in_indirect_buffer = in_ib;
    e.packet.assign(pkt.begin(), pkt.end());
    char buf[200];
    std::snprintf(buf, sizeof buf, "PM4 queue %u (gpu_id %u, gfx_target_version %u): %s at rptr %llu (wptr %llu)%s", b_.queue_id,
                  b_.gpu_id, b_.gfx_target_version, pm4_fault_name(f), static_cast<unsigned long long>(e.read_pointer),
                  static_cast<unsigned long long>(e.write_pointer), in_ib ? " inside an indirect buffer" : "");
    e.detail = buf;
    if (!why.empty()) e.detail += ": " + why;
    if (addr != 0) {
      std::snprintf(buf, sizeof buf, " (address 0x%llx)", static_cast<unsigned long long>(addr));
      e.detail += buf;
    }
    e.detail += "; packet: ";
    queue::pm4::describe_packet(pkt, e.detail);
    {
      std::lock_guard lock(err_mu_);
      if (!error_) error_ = std::move(e);
    }
    dead_ = true;
    has_error_.store(true, std::memory_order_release);
    {
      std::lock_guard lock(mu_);
      std::memcpy(sh_snapshot_.data(), sh_.data(), sizeof sh_);
    }
    state_cv_.notify_all();
  }

  // ------------------------------------------------------------------ packets
  step execute(std::span<const std::uint32_t> p, unsigned depth, bool in_ib) {
    namespace a = abi::pm4;
    const std::uint32_t h = p[0];
    const auto bad = [&](pm4_fault f, const std::string& why, std::uint64_t addr = 0) {
      fail(f, p, addr, in_ib, why);
      return step::fault;
    };
    if (h == a::type2_filler) return step::done;
    if (a::header_type::get(h) != a::packet_type3) return bad(pm4_fault::not_type3, "");
    if ((h & 0xF8u) != 0) return bad(pm4_fault::reserved_bits, "header bits [7:3] are reserved");
    if (a::header_reset_filter_cam::get(h)) return bad(pm4_fault::reserved_bits, "RESET_FILTER_CAM is only for *_PAIRS_PACKED");
    if (a::header_predicate::get(h)) return bad(pm4_fault::reserved_bits, "PREDICATE on a compute queue");
    const auto op = static_cast<a::opcode>(a::header_opcode::get(h));
    if (const std::uint32_t fixed = a::fixed_packet_dwords(op, gfx9_form_); fixed != 0 && p.size() != fixed)
      return bad(pm4_fault::bad_count, "this packet has exactly " + std::to_string(fixed) + " dwords");
    switch (op) {
      case a::opcode::nop: return step::done;
      case a::opcode::set_sh_reg: return set_sh_reg(p, bad);
      case a::opcode::dispatch_direct: return dispatch_direct(p, in_ib);
      case a::opcode::acquire_mem: return acquire_mem(p, bad);
      case a::opcode::release_mem: return release_mem(p, bad);
      case a::opcode::wait_reg_mem: return wait_reg_mem(p, bad);
      case a::opcode::write_data: return write_data(p, bad);
      case a::opcode::indirect_buffer: return indirect_buffer(p, depth, bad);
      case a::opcode::event_write: {
        if (p.size() != 2 && p.size() != 4) return bad(pm4_fault::bad_count, "EVENT_WRITE has 2 dwords (or 4 with an address)");
        if ((p[1] & ~0xF3Fu) != 0) return bad(pm4_fault::reserved_bits, "EVENT_WRITE dw1 outside EVENT_TYPE/EVENT_INDEX");
        return step::done;  // the emulated pipe is idle between packets: partial flushes complete at once
      }
      case a::opcode::pred_exec:
        if (!in_ib) return step::done;  // MEC firmware: outside an IB it acts as EXEC_COUNT 0 (§1.3)
        pred_skip_ = (a::pred_exec::virtual_xcc_id_select::get(p[1]) & 1u) ? 0 : a::pred_exec::exec_count::get(p[1]);
        if ((p[1] & 0x00FFC000u) != 0) return bad(pm4_fault::reserved_bits, "PRED_EXEC dw1 [23:14]");
        return step::done;
      default: break;
    }
    const char* name = queue::pm4::opcode_name(static_cast<std::uint32_t>(op));
    return bad(pm4_fault::unknown_opcode, name ? std::string(name) + " is not run by this emulated MEC" : "");
  }

  template <class Bad>
  step set_sh_reg(std::span<const std::uint32_t> p, Bad& bad) {
    namespace a = abi::pm4;
    if (p.size() < 3) return bad(pm4_fault::bad_count, "SET_SH_REG needs a register offset and at least one value");
    if ((p[1] & 0xFFFF0000u) != 0) return bad(pm4_fault::reserved_bits, "SET_SH_REG dw1 [31:16] (VMID_SHIFT/INDEX) not supported");
    const std::uint32_t off = a::set_sh_reg::reg_offset::get(p[1]);
    const std::size_t n = p.size() - 2;
    if (off + n > a::sh_reg_end - a::sh_reg_base)
      return bad(pm4_fault::bad_register, "registers 0x" + hex(off + a::sh_reg_base) + "+" + std::to_string(n) + " leave the SH window");
    for (std::size_t i = 0; i < n; ++i) sh_[off + i] = p[2 + i];
    return step::done;
  }

  template <class Bad>
  step acquire_mem(std::span<const std::uint32_t> p, Bad& bad) {
    if (gfx9_form_) {
      // COHER_SIZE_HI (dw3) is not checked: its width is disputed and tinygrad writes 0xFFFFFFFF (§1.3).
      if ((p[5] & ~0x1FFFFFFu) != 0 || (p[6] & ~0xFFFFu) != 0)
        return bad(pm4_fault::reserved_bits, "ACQUIRE_MEM base_hi/poll reserved bits");
    } else {
      if (p[1] != 0) return bad(pm4_fault::reserved_bits, "ACQUIRE_MEM dw1 is reserved on GFX10+ (was CP_COHER_CNTL)");
      if ((p[5] & ~0xFFFFFFu) != 0 || (p[6] & ~0xFFFFu) != 0 || (p[7] & ~0x7FFFFu) != 0)
        return bad(pm4_fault::reserved_bits, "ACQUIRE_MEM base_hi/poll/GCR_CNTL reserved bits");
    }
    // The emulated caches are coherent: nothing to write back or invalidate. Every workgroup of
    // earlier dispatches ran on this thread, so their stores are ordered before what follows.
    return step::done;
  }

  template <class Bad>
  step release_mem(std::span<const std::uint32_t> p, Bad& bad) {
    namespace r = abi::pm4::release_mem;
    if ((p[1] & ~(0x3Fu | 0xF00u | 0xFFF000u | (3u << 25) | (1u << 28))) != 0)
      return bad(pm4_fault::reserved_bits, "RELEASE_MEM dw1 reserved bits");
    const std::uint32_t idx = r::event_index::get(p[1]);
    if (idx != r::event_index_end_of_pipe && idx != r::event_index_shader_done)
      return bad(pm4_fault::reserved_bits, "RELEASE_MEM EVENT_INDEX must be 5 (end of pipe) or 6 (shader done)");
    if ((p[2] & ~((3u << 16) | (7u << 24) | (7u << 29))) != 0) return bad(pm4_fault::reserved_bits, "RELEASE_MEM dw2 reserved bits");
    if (r::dst_sel::get(p[2]) > 1) return bad(pm4_fault::reserved_bits, "RELEASE_MEM DST_SEL other than memory/TC_L2");
    const std::uint32_t ds = r::data_sel::get(p[2]), is = r::int_sel::get(p[2]);
    if (ds > 3) return bad(pm4_fault::reserved_bits, "RELEASE_MEM DATA_SEL " + std::to_string(ds) + " not supported");
    if (is > 3) return bad(pm4_fault::reserved_bits, "RELEASE_MEM INT_SEL " + std::to_string(is) + " not supported");
    if (b_.eop_buffer_bytes == 0 || !vm_.is_mapped(b_.eop_buffer_va, b_.eop_buffer_bytes))
      return bad(pm4_fault::no_eop_buffer, "the queue has no mapped EOP buffer");
    const std::uint64_t addr = make64(p[3], p[4]);
    const std::uint64_t size = ds == 1 ? 4 : (ds == 2 || ds == 3) ? 8 : 0;
    if (size != 0) {
      if (addr % size != 0) return bad(pm4_fault::reserved_bits, "RELEASE_MEM address misaligned for its data", addr);
      if (!vm_.is_mapped(addr, size)) return bad(pm4_fault::not_mapped, "RELEASE_MEM destination", addr);
      // End of pipe: every earlier workgroup ran on this thread; the release store publishes them.
      if (ds == 1) {
        std::atomic_ref<std::uint32_t>(*host<std::uint32_t>(addr)).store(p[5], std::memory_order_release);
      } else {
        const std::uint64_t v = ds == 2 ? make64(p[5], p[6]) : gpu_clock();
        std::atomic_ref<std::uint64_t>(*host<std::uint64_t>(addr)).store(v, std::memory_order_release);
      }
    }
    if (is == 1 || is == 2) {
      // KFD: INT_CTXID is the event id; gfx9-class queues send 0 (tinygrad) and the kernel then
      // finds the event from the slot written — the emulator uses the value written instead.
      const std::uint32_t id = (p[7] != 0 || !gfx9_form_ || ds != 1) ? p[7] : p[5];
      events_.signal_event(id);
    }
    return step::done;
  }

  template <class Bad>
  step wait_reg_mem(std::span<const std::uint32_t> p, Bad& bad) {
    namespace w = abi::pm4::wait_reg_mem;
    const std::uint32_t fn = w::function::get(p[1]), space = w::mem_space::get(p[1]), op = w::operation::get(p[1]);
    if (fn > 6) return bad(pm4_fault::reserved_bits, "WAIT_REG_MEM FUNCTION 7 is reserved");
    if (space > 1) return bad(pm4_fault::reserved_bits, "WAIT_REG_MEM MEM_SPACE must be 0 (register) or 1 (memory)");
    if (op == 2) return bad(pm4_fault::reserved_bits, "WAIT_REG_MEM OPERATION 2 is reserved");
    if ((p[1] & ~(0x7u | 0x30u | 0xC0u | 0x100u | (3u << 22) | (1u << 24) | (3u << 25))) != 0)
      return bad(pm4_fault::reserved_bits, "WAIT_REG_MEM dw1 reserved bits");
    if (space == 0) return step::done;  // register polls (HDP flush): the emulated HDP is always flushed
    const std::uint64_t addr = make64(p[2], p[3]);
    if (addr % 4 != 0) return bad(pm4_fault::reserved_bits, "WAIT_REG_MEM memory address must be dword aligned", addr);
    if (!vm_.is_mapped(addr, 4)) return bad(pm4_fault::not_mapped, "WAIT_REG_MEM poll address", addr);
    const std::uint32_t v = std::atomic_ref<std::uint32_t>(*host<std::uint32_t>(addr)).load(std::memory_order_acquire) & p[5];
    const std::uint32_t ref = p[4];
    bool ok_ = false;
    switch (fn) {
      case 0: ok_ = true; break;
      case 1: ok_ = v < ref; break;
      case 2: ok_ = v <= ref; break;
      case 3: ok_ = v == ref; break;
      case 4: ok_ = v != ref; break;
      case 5: ok_ = v >= ref; break;
      case 6: ok_ = v > ref; break;
    }
    return ok_ ? step::done : step::retry;
  }

  template <class Bad>
  step write_data(std::span<const std::uint32_t> p, Bad& bad) {
    namespace wd = abi::pm4::write_data;
    if (p.size() < 5) return bad(pm4_fault::bad_count, "WRITE_DATA needs at least one data dword");
    const std::uint32_t dst = wd::dst_sel::get(p[1]);
    if (dst != wd::dst_sel_memory && dst != wd::dst_sel_tc_l2)
      return bad(pm4_fault::reserved_bits, "WRITE_DATA DST_SEL " + std::to_string(dst) + " not supported (memory or TC_L2 only)");
    if ((p[1] & ~((0xFu << 8) | (1u << 16) | (1u << 20) | (1u << 21) | (3u << 25) | (3u << 30))) != 0)
      return bad(pm4_fault::reserved_bits, "WRITE_DATA dw1 reserved bits");
    const std::uint64_t addr = make64(p[2], p[3]);
    const std::size_t n = p.size() - 4;
    const bool fixed = wd::addr_incr::get(p[1]) != 0;
    if (addr % 4 != 0) return bad(pm4_fault::reserved_bits, "WRITE_DATA address must be dword aligned", addr);
    if (!vm_.is_mapped(addr, fixed ? 4 : 4 * n)) return bad(pm4_fault::not_mapped, "WRITE_DATA destination", addr);
    auto* d = host<std::uint32_t>(addr);
    for (std::size_t i = 0; i < n; ++i)
      std::atomic_ref<std::uint32_t>(d[fixed ? 0 : i]).store(p[4 + i], std::memory_order_release);
    return step::done;
  }

  template <class Bad>
  step indirect_buffer(std::span<const std::uint32_t> p, unsigned depth, Bad& bad) {
    namespace ib = abi::pm4::indirect_buffer;
    if (!ib::valid::get(p[3])) return bad(pm4_fault::reserved_bits, "INDIRECT_BUFFER VALID must be 1 on compute");
    if (ib::swap::get(p[1]) != 0) return bad(pm4_fault::reserved_bits, "INDIRECT_BUFFER base bits [1:0] (swap) must be 0");
    if (ib::chain::get(p[3])) return bad(pm4_fault::reserved_bits, "chained IBs are not supported");
    const std::uint32_t size = ib::ib_size::get(p[3]);
    const std::uint64_t addr = make64(p[1], p[2]);
    if (size == 0) return bad(pm4_fault::bad_count, "INDIRECT_BUFFER of 0 dwords");
    if (depth + 1 > opt_.max_ib_depth) return bad(pm4_fault::bad_count, "indirect buffers nested too deep");
    if (!vm_.is_mapped(addr, 4ull * size)) return bad(pm4_fault::not_mapped, "indirect buffer", addr);
    std::vector<std::uint32_t> buf(size);
    std::memcpy(buf.data(), host<const std::uint32_t>(addr), 4ull * size);
    pred_skip_ = 0;
    for (std::size_t at = 0; at < size;) {
      const std::uint64_t len = packet_dwords(buf[at]);
      if (at + len > size) {
        fail(pm4_fault::bad_count, std::span<const std::uint32_t>(buf).subspan(at), addr + 4 * at, true,
             "packet runs past the end of its indirect buffer");
        return step::fault;
      }
      if (pred_skip_ != 0) {  // PRED_EXEC excluded this XCC: skip the next EXEC_COUNT dwords
        const std::uint32_t skip = static_cast<std::uint32_t>(std::min<std::uint64_t>(pred_skip_, size - at));
        pred_skip_ = 0;
        at += skip;
        continue;
      }
      const auto pk = std::span<const std::uint32_t>(buf).subspan(at, len);
      step s;
      while ((s = execute(pk, depth + 1, true)) == step::retry) {
        if (preemption_point(false) == step::stopped) return step::stopped;
        std::unique_lock lock(mu_);
        if (stop_) return step::stopped;
        cv_.wait_for(lock, opt_.wait_poll);
      }
      if (s != step::done) return s;
      at += len;
    }
    return step::done;
  }

  // ------------------------------------------------------------------ dispatch
  struct dispatch_state {
    std::shared_ptr<const host_kernel_fn> fn;
    abi::kernel_descriptor kd{};          // synthesized: rsrc2 and the wave32 bit
    abi::kernel_dispatch_packet pkt{};    // synthesized: grid and workgroup sizes
    std::array<std::uint32_t, 16> user{};
    unsigned user_count = 0;
    std::uint32_t lds_bytes = 0;
    std::uint64_t total_wg = 0;
    unsigned waves_per_wg = 1;
    bool hangs_on_preemption = false;  // DEGFX11_12113 without PRIV
    // Restored state, as read back from the CWSR area: the wave records of workgroups
    // [restored_first, restored_first + restored_count); wg_first_wave[k] indexes image.offsets
    // (one extra entry at the end), so a workgroup's records are one contiguous byte range.
    std::uint64_t restored_first = 0;
    std::uint64_t restored_count = 0;
    cwsr_image image;
    std::vector<std::uint32_t> wg_first_wave;
    [[nodiscard]] bool restored(std::uint64_t wg) const noexcept {
      return wg >= restored_first && wg - restored_first < restored_count;
    }
    [[nodiscard]] std::size_t record_begin(std::uint64_t k) const noexcept {
      const std::uint32_t w = wg_first_wave[k];
      return w < image.offsets.size() ? image.offsets[w] : image.records.size();
    }
  };

  step dispatch_direct(std::span<const std::uint32_t> p, bool in_ib) {
    namespace a = abi::pm4;
    namespace di = abi::pm4::dispatch_initiator;
    namespace r2 = abi::compute_pgm_rsrc2;
    const auto bad = [&](pm4_fault f, const std::string& why, std::uint64_t addr = 0) {
      fail(f, p, addr, in_ib, why);
      return step::fault;
    };
    const auto reg = [&](std::uint32_t abs) { return sh_[abs - a::sh_reg_base]; };
    const std::uint32_t init = p[4];
    const std::uint32_t defined = gfx9_form_ ? 0x5C7Fu : (b_.family == arch::family::gfx12 ? 0xE007FC7Fu : 0x3FC7Fu);
    if ((init & ~defined) != 0) return bad(pm4_fault::reserved_bits, "DISPATCH_INITIATOR reserved bits 0x" + hex(init & ~defined));
    if (!di::compute_shader_en::get(init)) return bad(pm4_fault::bad_dispatch, "DISPATCH_INITIATOR.COMPUTE_SHADER_EN is 0");
    if (p[1] == 0 || p[2] == 0 || p[3] == 0) return bad(pm4_fault::bad_dispatch, "a dispatch dimension is 0");
    // Program: COMPUTE_PGM_LO/HI = address >> 8 (HI data [7:0]).
    const std::uint32_t pgm_hi = reg(0x2E0D);
    if ((pgm_hi & ~0xFFu) != 0) return bad(pm4_fault::reserved_bits, "COMPUTE_PGM_HI bits [31:8]");
    const std::uint64_t pgm = make64(reg(0x2E0C), pgm_hi) << 8;
    if (pgm == 0 || !vm_.is_mapped(pgm, sizeof(emulated_code_blob)))
      return bad(pm4_fault::not_mapped, "COMPUTE_PGM_LO/HI: no program mapped there", pgm);
    emulated_code_blob blob;
    std::memcpy(&blob, host<const void>(pgm), sizeof blob);
    const std::string_view name = emulated_code_name(blob);
    if (name.empty()) return bad(pm4_fault::bad_dispatch, "no emulated code at COMPUTE_PGM_LO/HI", pgm);
    auto st = std::make_unique<dispatch_state>();
    st->fn = registry_.find(name);
    if (!st->fn) return bad(pm4_fault::unknown_host_kernel, "host kernel '" + std::string(name) + "'", pgm);
    // RSRC1.PRIV policy (spec/kfd.md §4).
    std::uint32_t rsrc1 = reg(0x2E12);
    const std::uint32_t rsrc2 = reg(0x2E13);
    if (opt_.test_force_rsrc1_priv)
      rsrc1 = *opt_.test_force_rsrc1_priv ? (rsrc1 | arch::compute_pgm_rsrc1_priv::mask) : (rsrc1 & ~arch::compute_pgm_rsrc1_priv::mask);
    const bool priv = arch::compute_pgm_rsrc1_priv::get(rsrc1) != 0;
    const bool affected = arch::needs_pm4_priv(b_.gfx_target_version, b_.simd_arrays_per_engine);
    if (priv && !affected)
      return bad(pm4_fault::priv_on_unaffected_part,
                 "gfx_target_version " + std::to_string(b_.gfx_target_version) +
                     " is not a DEGFX11_12113 part; PRIV=1 hangs it (spec/kfd.md §4) — the queue stops here");
    st->hangs_on_preemption = affected && !priv;
    // Registers → wave state.
    const unsigned user = r2::user_sgpr_count::get(rsrc2);
    if (user > 16) return bad(pm4_fault::bad_dispatch, "RSRC2.USER_SGPR > 16 (only COMPUTE_USER_DATA_0..15 exist)");
    st->user_count = user;
    for (unsigned i = 0; i < user; ++i) st->user[i] = reg(0x2E40 + i);
    const bool wave32 = !gfx9_form_ && abi::pm4::dispatch_initiator::cs_w32_en::get(init) != 0;
    st->kd.compute_pgm_rsrc2 = rsrc2 & ~(0x1FFu << 15);  // LDS comes from LDS_SIZE below, not a KD field
    st->kd.kernel_code_properties = wave32 ? abi::kernel_code_properties::enable_wavefront_size32::put(1) : 0;
    const std::uint32_t granule = 512;  // LDS_SIZE granule on GFX7–GFX12.0 (spec §1.5)
    st->lds_bytes = ((rsrc2 >> 15) & 0x1FFu) * granule;
    if (st->lds_bytes > opt_.max_lds_bytes) return bad(pm4_fault::bad_dispatch, "RSRC2.LDS_SIZE above the CU's LDS");
    std::array<std::uint32_t, 3> block{};
    for (int d = 0; d < 3; ++d) block[d] = reg(0x2E07 + d) & (b_.family == arch::family::gfx12 ? 0x1FFFu : 0xFFFFu);
    if (block[0] == 0 || block[1] == 0 || block[2] == 0) return bad(pm4_fault::bad_dispatch, "COMPUTE_NUM_THREAD_X/Y/Z is 0");
    if (std::uint64_t(block[0]) * block[1] * block[2] > 1024) return bad(pm4_fault::bad_dispatch, "more than 1024 threads per workgroup");
    if (reg(0x2E04) | reg(0x2E05) | reg(0x2E06)) return bad(pm4_fault::bad_dispatch, "COMPUTE_START_X/Y/Z other than 0 not supported");
    const bool threads = di::use_thread_dimensions::get(init) != 0;
    std::uint64_t grid[3];
    for (int d = 0; d < 3; ++d) grid[d] = threads ? p[1 + d] : std::uint64_t(p[1 + d]) * block[d];
    if (grid[0] > 0xFFFFFFFFu || grid[1] > 0xFFFFFFFFu || grid[2] > 0xFFFFFFFFu)
      return bad(pm4_fault::bad_dispatch, "grid larger than 2^32 work-items in a dimension");
    st->pkt.workgroup_size_x = static_cast<std::uint16_t>(block[0]);
    st->pkt.workgroup_size_y = static_cast<std::uint16_t>(block[1]);
    st->pkt.workgroup_size_z = static_cast<std::uint16_t>(block[2]);
    st->pkt.grid_size_x = static_cast<std::uint32_t>(grid[0]);
    st->pkt.grid_size_y = static_cast<std::uint32_t>(grid[1]);
    st->pkt.grid_size_z = static_cast<std::uint32_t>(grid[2]);
    const auto g0 = geometry_of(st->pkt, 0);
    st->total_wg = std::uint64_t(g0.count[0]) * g0.count[1] * g0.count[2];
    const unsigned wsize = wave32 ? 32u : 64u;
    st->waves_per_wg = static_cast<unsigned>((block[0] * block[1] * block[2] + wsize - 1) / wsize);
    {
      // The SGPR budget: user + system SGPRs must fit (AMDGPUUsage initial state).
      const unsigned sys = r2::enable_sgpr_workgroup_id_x::get(rsrc2) + r2::enable_sgpr_workgroup_id_y::get(rsrc2) +
                           r2::enable_sgpr_workgroup_id_z::get(rsrc2) + r2::enable_sgpr_workgroup_info::get(rsrc2) +
                           r2::enable_private_segment::get(rsrc2);
      if (user + sys > max_wave_sgprs) return bad(pm4_fault::bad_dispatch, "too many initial SGPRs");
    }
    dispatches_.fetch_add(1, std::memory_order_acq_rel);
    snapshot_registers();  // what sh_register() reports: the state of the last dispatch
    return run_dispatch(*st, p, in_ib);
  }

  [[nodiscard]] std::vector<wave_state> fresh_waves(const dispatch_state& st, std::uint64_t wg) const {
    std::vector<wave_state> waves = build_workgroup_waves(st.kd, st.pkt, dispatch_inputs{}, b_.family, geometry_of(st.pkt, wg));
    for (auto& w : waves)
      for (unsigned i = 0; i < st.user_count; ++i) w.sgpr[i] = st.user[i];
    return waves;
  }

  step run_dispatch(dispatch_state& st, std::span<const std::uint32_t> p, bool in_ib) {
    std::vector<std::byte> lds;
    for (std::uint64_t wg = 0; wg < st.total_wg; ++wg) {
      current_ = &st;
      current_wg_ = wg;
      const step pre = preemption_point(true);
      current_ = nullptr;
      if (pre == step::stopped) return step::stopped;
      if (pre == step::fault) return step::fault;  // the save/restore failed or hung: the queue stays here
      std::vector<wave_state> waves;
      if (st.restored(wg)) {
        const std::uint64_t k = wg - st.restored_first;
        waves.resize(st.wg_first_wave[k + 1] - st.wg_first_wave[k]);
        for (std::size_t i = 0; i < waves.size(); ++i) {
          const std::uint32_t off = st.image.offsets[st.wg_first_wave[k] + i];
          std::uint64_t owner = 0;
          std::size_t used = 0;
          if (!read_wave_record(st.image.records.data() + off, st.image.records.size() - off, waves[i], owner, used) ||
              owner != wg) {
            fail(pm4_fault::cwsr_restore_failed, p, b_.cwsr.address, in_ib,
                 "restored wave record of workgroup " + std::to_string(wg) + " is corrupt");
            return step::fault;
          }
        }
      } else {
        waves = fresh_waves(st, wg);
      }
      lds.assign(st.lds_bytes, std::byte{0xA5});  // LDS starts undefined: never zero by luck
      const workgroup_geometry g = geometry_of(st.pkt, wg);
      try {
        workgroup_context ctx(vm_, waves, std::span<std::byte>(lds.data(), lds.size()), g);
        (*st.fn)(ctx);
      } catch (const memory_fault& m) {
        char why[128];
        std::snprintf(why, sizeof why, "%s of %llu bytes in workgroup (%u,%u,%u)", m.write ? "write" : "read",
                      static_cast<unsigned long long>(m.length), g.id[0], g.id[1], g.id[2]);
        fail(pm4_fault::memory_violation, p, m.address, in_ib, why);
        return step::fault;
      } catch (const std::exception& ex) {
        fail(pm4_fault::host_kernel_exception, p, 0, in_ib, ex.what());
        return step::fault;
      } catch (...) {
        fail(pm4_fault::host_kernel_exception, p, 0, in_ib, "unknown exception");
        return step::fault;
      }
      ++wg_since_preempt_;
    }
    return step::done;
  }

  // ------------------------------------------------------------------ preemption
  // Serves a pending preemption (on demand, every N workgroups, timer). `in_dispatch`: called
  // before workgroup current_wg_ of *current_. Returns done, fault (hang recorded) or stopped.
  step preemption_point(bool in_dispatch) {
    bool demand, resume_pending;
    {
      std::lock_guard lock(mu_);
      if (stop_) return step::stopped;
      demand = preempt_requested_;
      resume_pending = resume_requested_;
    }
    (void)resume_pending;
    bool stress = false;
    if (opt_.preempt_every_workgroups != 0 && in_dispatch && wg_since_preempt_ >= opt_.preempt_every_workgroups) stress = true;
    if (opt_.preempt_interval.count() != 0 && std::chrono::steady_clock::now() >= next_timer_preempt_) stress = true;
    if (!demand && !stress) return step::done;
    wg_since_preempt_ = 0;
    next_timer_preempt_ = std::chrono::steady_clock::now() + opt_.preempt_interval;
    // ---- save
    dispatch_state* st = in_dispatch ? current_ : nullptr;
    std::vector<std::byte> records;
    std::vector<std::uint32_t> offsets;
    std::uint32_t workgroups = 0;
    const bool packed = packs_workitem_ids(b_.family);
    if (st != nullptr) {
      const std::uint64_t cap_wg = std::max<std::uint64_t>(1, machine_.wave_capacity / std::max(1u, st->waves_per_wg));
      const std::uint64_t last = std::min<std::uint64_t>(st->total_wg, current_wg_ + cap_wg);
      std::uint64_t wg = current_wg_;
      if (st->restored(wg)) {  // still resident since the last restore: its records, copied as they are
        const std::uint64_t k0 = wg - st->restored_first;
        const std::uint64_t k1 = std::min<std::uint64_t>(st->restored_count, last - st->restored_first);
        const std::size_t b0 = st->record_begin(k0), b1 = st->record_begin(k1);
        records.assign(st->image.records.begin() + static_cast<std::ptrdiff_t>(b0),
                       st->image.records.begin() + static_cast<std::ptrdiff_t>(b1));
        for (std::uint32_t i = st->wg_first_wave[k0]; i < st->wg_first_wave[k1]; ++i)
          offsets.push_back(static_cast<std::uint32_t>(st->image.offsets[i] - b0));
        workgroups += static_cast<std::uint32_t>(k1 - k0);
        wg = st->restored_first + k1;
      }
      for (; wg < last; ++wg) {
        for (const wave_state& w : fresh_waves(*st, wg)) {
          offsets.push_back(static_cast<std::uint32_t>(records.size()));
          append_wave_record(records, w, wg, packed);
        }
        ++workgroups;
      }
      if (st->hangs_on_preemption && !offsets.empty()) {
        // DEGFX11_12113: the waves of a PM4 dispatch without PRIV never reach the trap handler's
        // save; the queue does not come off the hardware and makes no more progress.
        fail(pm4_fault::cwsr_hang_without_priv, cur_packet_view(), 0, false,
             "gfx_target_version " + std::to_string(b_.gfx_target_version) + " needs COMPUTE_PGM_RSRC1.PRIV=1 on PM4 dispatches "
             "(DEGFX11_12113, spec/kfd.md §4); preempted before workgroup " + std::to_string(current_wg_) + " of " +
             std::to_string(st->total_wg));
        return step::fault;
      }
    }
    auto saved = cwsr_save(vm_, b_.cwsr, machine_, records, offsets, workgroups);
    if (!saved) {
      fail(pm4_fault::cwsr_save_failed, cur_packet_view(), b_.cwsr.address, false, std::string(saved.get_failure().detail()));
      return step::fault;
    }
    {
      std::lock_guard lock(mu_);
      preempted_ = true;
      ++stats_.preemptions;
      stats_.waves_saved += saved->waves;
      stats_.max_ctl_bytes = std::max(stats_.max_ctl_bytes, saved->ctl_bytes);
      stats_.max_state_bytes = std::max(stats_.max_state_bytes, saved->state_bytes);
    }
    state_cv_.notify_all();
    // ---- off the hardware until resumed
    {
      std::unique_lock lock(mu_);
      if (demand) {
        cv_.wait(lock, [&] { return stop_ || resume_requested_; });
        resume_requested_ = false;
      } else if (opt_.preempted_for.count() != 0) {
        cv_.wait_for(lock, opt_.preempted_for, [&] { return stop_; });
      }
      if (stop_) return step::stopped;
    }
    // ---- restore
    auto img = cwsr_restore(vm_, b_.cwsr, machine_);
    if (!img) {
      fail(pm4_fault::cwsr_restore_failed, cur_packet_view(), b_.cwsr.address, false, std::string(img.get_failure().detail()));
      return step::fault;
    }
    if (st != nullptr) {
      // Index the image by workgroup (records are in workgroup order, as saved); the waves
      // themselves are decoded when their workgroup runs.
      st->restored_first = current_wg_;
      st->restored_count = img->workgroups;
      st->wg_first_wave.assign(img->workgroups + 1, static_cast<std::uint32_t>(img->offsets.size()));
      std::uint64_t prev = ~std::uint64_t{0};
      for (std::uint32_t i = 0; i < img->offsets.size(); ++i) {
        const std::uint32_t off = img->offsets[i];
        cwsr_wave_record_head h;
        if (off + sizeof h > img->records.size()) {
          fail(pm4_fault::cwsr_restore_failed, cur_packet_view(), b_.cwsr.address, false, "control stack points past the saved records");
          return step::fault;
        }
        std::memcpy(&h, img->records.data() + off, sizeof h);
        if (h.magic != cwsr_wave_magic || h.workgroup < current_wg_ || h.workgroup - current_wg_ >= img->workgroups ||
            (prev != ~std::uint64_t{0} && h.workgroup < prev)) {
          fail(pm4_fault::cwsr_restore_failed, cur_packet_view(), b_.cwsr.address, false,
               "wave record " + std::to_string(i) + " in the workgroup-state area is corrupt");
          return step::fault;
        }
        if (h.workgroup != prev) {
          for (std::uint64_t k = (prev == ~std::uint64_t{0} ? 0 : prev - current_wg_ + 1); k <= h.workgroup - current_wg_; ++k)
            st->wg_first_wave[k] = i;
          prev = h.workgroup;
        }
      }
      st->image = std::move(*img);
    }
    {
      std::lock_guard lock(mu_);
      preempted_ = false;
    }
    state_cv_.notify_all();
    return step::done;
  }
  [[nodiscard]] std::span<const std::uint32_t> cur_packet_view() const noexcept { return cur_; }

  [[nodiscard]] std::uint64_t gpu_clock() const noexcept {
    const std::uint64_t ns = events_.timestamp();
    return opt_.gpu_clock_hz == 1'000'000'000 ? ns : ns / (1'000'000'000 / opt_.gpu_clock_hz);
  }
  [[nodiscard]] static std::string hex(std::uint64_t v) {
    char b[24];
    std::snprintf(b, sizeof b, "%llX", static_cast<unsigned long long>(v));
    return b;
  }

  // ------------------------------------------------------------------ state
  pm4_queue_binding b_;
  const vm_access& vm_;
  event_notifier& events_;
  const host_kernel_registry& registry_;
  pm4_processor_options opt_;
  std::uint32_t* ring_ = nullptr;
  std::uint64_t ring_dwords_ = 0;
  std::uint64_t* rptr_ = nullptr;
  std::uint64_t* wptr_ = nullptr;
  cwsr_machine machine_{};
  result<void> capacity_ = ok();
  bool gfx9_form_ = false;

  // processor thread only
  std::uint64_t rptr_local_ = 0;
  std::array<std::uint32_t, 0x400> sh_{};
  std::vector<std::uint32_t> cur_;
  bool dead_ = false;
  std::uint32_t pred_skip_ = 0;
  unsigned retries_ = 0;
  dispatch_state* current_ = nullptr;
  std::uint64_t current_wg_ = 0;
  std::uint64_t wg_since_preempt_ = 0;
  std::chrono::steady_clock::time_point next_timer_preempt_{};

  std::atomic<std::uint64_t> rptr_pub_{0};
  std::atomic<std::uint64_t> doorbell_{0};
  std::atomic<std::uint64_t> dispatches_{0};
  std::atomic<bool> has_error_{false};

  mutable std::mutex mu_;  // wake_seq_, stop_, preemption flags, stats_, sh_snapshot_
  std::condition_variable cv_;
  mutable std::condition_variable state_cv_;
  std::uint64_t wake_seq_ = 0;
  bool stop_ = false;
  bool preempt_requested_ = false;
  bool resume_requested_ = false;
  bool preempted_ = false;
  pm4_preemption_stats stats_{};
  std::array<std::uint32_t, 0x400> sh_snapshot_{};

  mutable std::mutex err_mu_;
  std::optional<pm4_error> error_;

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
