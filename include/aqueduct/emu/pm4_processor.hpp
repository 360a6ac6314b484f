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
// Where it lives: this header holds the queue binding, the options, the processor's thread, ring
// loop, fault recording and public API; the member definitions for the packets are in
// emu/pm4_packets.hpp, DISPATCH_DIRECT in emu/pm4_dispatch.hpp, preemption in
// emu/pm4_preemption.hpp, the fault kinds and pm4_error in emu/pm4_fault.hpp (all included here).
// Thread safety: ring_doorbell/notify/request_preemption/resume and the queries may be called
// from any thread. vm_access, event_notifier and registry must outlive the processor.
#pragma once

#include <aqueduct/abi/aql.hpp>
#include <aqueduct/abi/kernel_descriptor.hpp>
#include <aqueduct/abi/pm4.hpp>
#include <aqueduct/arch/family.hpp>
#include <aqueduct/core/bits.hpp>
#include <aqueduct/core/result.hpp>
#include <aqueduct/emu/cwsr.hpp>
#include <aqueduct/emu/host_kernel.hpp>
#include <aqueduct/emu/engine_error.hpp>
#include <aqueduct/emu/engine_ports.hpp>
#include <aqueduct/emu/queue_wakeup.hpp>
#include <aqueduct/emu/wave_state.hpp>
#include <aqueduct/emu/workgroup_executor.hpp>
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
#include <span>
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

// The doorbell (queue_wakeup::ring_doorbell) carries the write pointer in dwords.
class pm4_processor : public queue_wakeup {
 public:
  pm4_processor(const pm4_processor&) = delete;
  pm4_processor& operator=(const pm4_processor&) = delete;
  ~pm4_processor() { stop(); }

  // Starts the processor thread. invalid_argument if the ring or pointers are not mapped, the
  // ring is not a power of two >= 1 KiB, or the family is not known.
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
  [[nodiscard]] bool has_error() const noexcept { return errors_.has_error(); }
  // Why the queue stopped (engine_kind::pm4; position = the read pointer in dwords).
  [[nodiscard]] std::optional<engine_error> error() const { return errors_.error(); }
  [[nodiscard]] std::uint64_t read_pointer() const noexcept { return rptr_pub_.load(std::memory_order_acquire); }
  [[nodiscard]] std::uint64_t write_pointer() const noexcept {
    return std::atomic_ref<std::uint64_t>(*wptr_).load(std::memory_order_acquire);
  }
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
    if (!request_stop()) return;
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
        wait_for_wakeup(seen, std::chrono::hours(1));
        continue;
      }
      if (preemption_point(false) == step::stopped) return;
      const std::uint64_t w = write_pointer();
      if (rptr_local_ >= w) {
        wait_for_wakeup(seen, opt_.idle_poll);
        continue;
      }
      const std::uint32_t hdr = ring_at(rptr_local_);
      const std::uint64_t len = packet_dwords(hdr);
      if (len > ring_dwords_) {
        std::vector<std::uint32_t> one{hdr};
        fail(engine_fault::bad_count, one, 0, false, "packet longer than the ring");
        continue;
      }
      if (w - rptr_local_ < len) {  // the rest of the packet is not published yet
        wait_for_wakeup(seen, opt_.idle_poll);
        continue;
      }
      cur_.resize(len);
      for (std::uint64_t i = 0; i < len; ++i) cur_[i] = ring_at(rptr_local_ + i);
      const step s = execute(cur_, 0, false);
      if (s == step::stopped) return;
      if (s == step::retry) {  // WAIT_REG_MEM not satisfied: re-poll, backing off up to 64x
        wait_for_wakeup(seen, opt_.wait_poll * (1u << std::min(retries_++, 6u)));
        continue;
      }
      retries_ = 0;
      if (s == step::fault) continue;
      rptr_local_ += len;
      std::atomic_ref<std::uint64_t>(*rptr_).store(rptr_local_, std::memory_order_release);
      publish_rptr();
    }
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
    errors_.record(std::move(e));
    dead_ = true;
    {
      std::lock_guard lock(mu_);
      std::memcpy(sh_snapshot_.data(), sh_.data(), sizeof sh_);
    }
    state_cv_.notify_all();
  }

  // ------------------------------------------------------------------ packets (emu/pm4_packets.hpp)
  step execute(std::span<const std::uint32_t> p, unsigned depth, bool in_ib);
  template <class Bad>
  step set_sh_reg(std::span<const std::uint32_t> p, Bad& bad);
  template <class Bad>
  step acquire_mem(std::span<const std::uint32_t> p, Bad& bad);
  template <class Bad>
  step release_mem(std::span<const std::uint32_t> p, Bad& bad);
  template <class Bad>
  step wait_reg_mem(std::span<const std::uint32_t> p, Bad& bad);
  template <class Bad>
  step write_data(std::span<const std::uint32_t> p, Bad& bad);
  template <class Bad>
  step indirect_buffer(std::span<const std::uint32_t> p, unsigned depth, Bad& bad);

  // ------------------------------------------------------------------ dispatch (emu/pm4_dispatch.hpp)
  struct dispatch_state {
    // kd synthesized (rsrc2 and the wave32 bit), pkt synthesized (grid and workgroup sizes),
    // user SGPRs from COMPUTE_USER_DATA_*.
    dispatch_plan plan;
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

  step dispatch_direct(std::span<const std::uint32_t> p, bool in_ib);
  [[nodiscard]] std::vector<wave_state> fresh_waves(const dispatch_state& st, std::uint64_t wg) const;
  step run_dispatch(dispatch_state& st, std::span<const std::uint32_t> p, bool in_ib);

  // ------------------------------------------------------------------ preemption (emu/pm4_preemption.hpp)
  // Serves a pending preemption (on demand, every N workgroups, timer). `in_dispatch`: called
  // before workgroup current_wg_ of *current_. Returns done, fault (hang recorded) or stopped.
  step preemption_point(bool in_dispatch);

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
  std::atomic<std::uint64_t> dispatches_{0};

  // Guarded by queue_wakeup::mu_: the preemption flags, stats_, sh_snapshot_.
  mutable std::condition_variable state_cv_;
  bool preempt_requested_ = false;
  bool resume_requested_ = false;
  bool preempted_ = false;
  pm4_preemption_stats stats_{};
  std::array<std::uint32_t, 0x400> sh_snapshot_{};

  engine_error_slot errors_;

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

// The members defined in their own headers (each includes this one, so any of them may come first).
#include <aqueduct/emu/pm4_packets.hpp>
#include <aqueduct/emu/pm4_dispatch.hpp>
#include <aqueduct/emu/pm4_preemption.hpp>
