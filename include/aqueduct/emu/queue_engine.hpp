// aqueduct/emu/queue_engine.hpp — the engine the emulated device runs behind one of its queues:
// an AQL processor, a PM4 processor (the MEC) or an SDMA engine, chosen by the queue type.
//
// Layer: emu. emu::device starts a `queue_engine` when CREATE_QUEUE accepts a queue (from what
// the ioctl accepted: `queue_info` and the GPU node, nothing else) and stops it inside
// DESTROY_QUEUE — like hardware that starts fetching when a queue is mapped. Userspace therefore
// prepares a queue's memory before CREATE_QUEUE exactly as on /dev/kfd (an AQL ring INVALID-filled
// and its amd_queue initialised, as ROCr does). A `queue_engine` is the device's `queue_port`
// (core/queue_port.hpp) for that queue: the doorbell store the emulator cannot observe, and why
// the engine stopped. A queue KFD would not map (QUEUE_IS_ACTIVE false: ring 0 or percentage 0,
// spec/kfd.md §2.6) has a port but no engine until UPDATE_QUEUE activates it. An engine that
// cannot start (memory not mapped under pre-6.12 leniency, an unknown processor) makes the port
// report that failure, as a queue the CP refused to map.
// Fault injection (emu/fault_plan.hpp): the engine's data accesses (kernels, SDMA copies) go
// through its VM's data_access_ok, which may fault or hang them; the interrupts it raises may be
// lost, or roll a device reset. kill() stops a queue for a device reset: its port reports the
// reason, its VM is revoked and any injected hang released, without joining anything (callable
// from an engine thread).
// Thread safety: the port members may be called from any thread; stop() once, by the device.
#pragma once

#include <aqueduct/abi/amd_queue.hpp>
#include <aqueduct/abi/kfd_ioctl.hpp>
#include <aqueduct/abi/sdma.hpp>
#include <aqueduct/arch/family.hpp>
#include <aqueduct/arch/processors.hpp>
#include <aqueduct/core/queue_port.hpp>
#include <aqueduct/core/result.hpp>
#include <aqueduct/emu/aql_processor.hpp>
#include <aqueduct/emu/events.hpp>
#include <aqueduct/emu/fault_plan.hpp>
#include <aqueduct/emu/gpu_vm.hpp>
#include <aqueduct/emu/host_kernel.hpp>
#include <aqueduct/emu/machine_config.hpp>
#include <aqueduct/emu/pm4_processor.hpp>
#include <aqueduct/emu/queues.hpp>
#include <aqueduct/emu/sdma_engine.hpp>

#include <atomic>
#include <functional>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace aqueduct::emu {

// The knobs of every engine the device starts (for queues created after they are set).
struct engine_options {
  aql_processor_options aql{};  // adversarial mode, workers, sequence_check ...
  pm4_processor_options pm4{};  // preemption stress, TEST-ONLY PRIV override ...
  sdma_engine_options sdma{};
  // How long DESTROY_QUEUE waits for an engine to stop. A workgroup that never ends (a host
  // kernel spinning on memory) is then killed as the CP kills a hung queue: its VM is revoked,
  // so its next checked access faults and unwinds it; the engine is abandoned (never freed) and
  // the queue destroyed anyway — destroying a queue is bounded (issue 13 bug 4).
  std::chrono::milliseconds stop_timeout{500};
};

namespace detail {
// Engines whose threads could not be joined in time (see engine_options::stop_timeout): kept
// reachable for the life of the process, never freed, since a thread may still run in them.
struct abandoned_engines {
  std::mutex mu;
  std::vector<std::shared_ptr<void>> items;
  static abandoned_engines& get() {
    static auto* a = new abandoned_engines();  // never destroyed: threads may outlive main
    return *a;
  }
};
}  // namespace detail

// The GPU VM of one GPU as its engines see it: every query takes the device lock `m` shared.
class locked_vm_view final : public vm_access {
 public:
  locked_vm_view(std::shared_mutex& m, const gpu_vm& vm, std::uint32_t gpu_id) noexcept : m_(&m), vm_(&vm), gpu_id_(gpu_id) {}
  [[nodiscard]] bool is_mapped(std::uint64_t va, std::uint64_t len) const noexcept override {
    try {
      std::shared_lock lock(*m_);
      return vm_->is_mapped(gpu_id_, va, len);
    } catch (...) {
      return false;  // a failure inside the device counts as "not mapped", never a crash in an engine
    }
  }
  // The VM's generation needs no lock (an atomic the VM moves on before every change).
  [[nodiscard]] std::uint64_t generation() const noexcept override { return vm_->generation(); }
  [[nodiscard]] bool mapped_extent(std::uint64_t va, std::uint64_t& lo, std::uint64_t& hi) const noexcept override {
    try {
      std::shared_lock lock(*m_);
      return vm_->extent(gpu_id_, va, lo, hi);
    } catch (...) {
      return false;
    }
  }

 private:
  std::shared_mutex* m_;
  const gpu_vm* vm_;
  std::uint32_t gpu_id_;
};

// The interrupts engines raise: wake the KFD event waiters of the device's event table.
class event_table_notifier final : public event_notifier {
 public:
  explicit event_table_notifier(event_table& t) noexcept : t_(&t) {}
  void signal_event(std::uint32_t id) noexcept override {
    try {
      t_->signal_interrupt(id);
    } catch (...) {
    }
  }
  void memory_fault(std::uint32_t gpu_id, std::uint64_t address) noexcept override {
    if (!on_memory_fault_.load(std::memory_order_acquire)) return;
    try {
      memory_fault_action_(gpu_id, address);
    } catch (...) {
    }
  }
  // What a GPU memory fault does (machine_config::memory_fault_events: evict the GPU's queues and
  // set the memory events; emu/device.hpp). Set before any engine runs; off() before teardown.
  void set_memory_fault_action(std::function<void(std::uint32_t, std::uint64_t)> f) {
    memory_fault_action_ = std::move(f);
    on_memory_fault_.store(static_cast<bool>(memory_fault_action_), std::memory_order_release);
  }
  void memory_faults_off() noexcept { on_memory_fault_.store(false, std::memory_order_release); }

 private:
  event_table* t_;
  std::function<void(std::uint32_t, std::uint64_t)> memory_fault_action_;
  std::atomic<bool> on_memory_fault_{false};
};

// The SDMA packet format of a GPU (gfx_target_version), or nullopt for an unknown processor.
[[nodiscard]] constexpr std::optional<abi::sdma::engine> sdma_engine_of(std::uint32_t gfx_target_version) noexcept {
  const arch::processor_info* p = arch::find_processor_by_version(gfx_target_version);
  if (!p || p->sdma_version == 0) return std::nullopt;
  return abi::sdma::engine_from_ip(p->sdma_version / 10, p->sdma_version % 10);
}

// What every engine's binding holds: the ring and the pointers CREATE_QUEUE accepted.
[[nodiscard]] inline queue_binding binding_of(const queue_info& q) noexcept {
  queue_binding b;
  b.ring_va = q.ring_base_address;
  b.ring_bytes = q.ring_size;
  b.read_pointer_va = q.read_pointer_address;
  b.write_pointer_va = q.write_pointer_address;
  b.gpu_id = q.gpu_id;
  b.queue_id = q.queue_id;
  return b;
}
// A compute queue's (AQL or PM4): also the node's part, family and the CWSR area.
[[nodiscard]] inline result<compute_queue_binding> compute_binding_of(const queue_info& q, const gpu_node& node) {
  const auto fam = arch::family_of(node.props.gfx_target_version);
  if (!fam) return failure(errc::not_supported, "gfx_target_version " + std::to_string(node.props.gfx_target_version));
  compute_queue_binding b;
  static_cast<queue_binding&>(b) = binding_of(q);
  b.family = *fam;
  b.gfx_target_version = node.props.gfx_target_version;
  b.simd_arrays_per_engine = node.props.simd_arrays_per_engine;
  b.cwsr = {q.ctx_save_restore_address, q.ctx_save_restore_size, q.ctl_stack_size};
  b.node = cwsr_inputs_of(node.props);
  return b;
}

// The processor binding of a PM4 queue that CREATE_QUEUE accepted on `node`.
[[nodiscard]] inline result<pm4_queue_binding> pm4_binding_of(const queue_info& q, const gpu_node& node) {
  if (q.type != abi::kfd::queue_type_compute)
    return failure(errc::invalid_argument, "queue " + std::to_string(q.queue_id) + " is not a PM4 compute queue");
  AQUEDUCT_TRY(auto c, compute_binding_of(q, node));
  pm4_queue_binding b;
  static_cast<compute_queue_binding&>(b) = c;
  b.eop_buffer_va = q.eop_buffer_address;
  b.eop_buffer_bytes = q.eop_buffer_size;
  return b;
}

// The processor binding of an AQL queue: CREATE_QUEUE's read/write pointers are the amd_queue's
// read_dispatch_id / write_dispatch_id (as ROCr creates them), which locates the amd_queue; any
// other layout runs without one (no queue pointer SGPRs, no scratch SRD).
[[nodiscard]] inline result<aql_queue_binding> aql_binding_of(const queue_info& q, const gpu_node& node) {
  AQUEDUCT_TRY(auto c, compute_binding_of(q, node));
  aql_queue_binding b;
  static_cast<compute_queue_binding&>(b) = c;
  constexpr std::uint64_t rd = offsetof(abi::amd_queue, read_dispatch_id), wr = offsetof(abi::amd_queue, write_dispatch_id);
  if (q.read_pointer_address >= rd && q.write_pointer_address == q.read_pointer_address - rd + wr &&
      (q.read_pointer_address - rd) % abi::amd_queue_align == 0)
    b.amd_queue_va = q.read_pointer_address - rd;
  return b;
}

[[nodiscard]] inline sdma_queue_binding sdma_binding_of(const queue_info& q, abi::sdma::engine e) noexcept {
  sdma_queue_binding b;
  static_cast<queue_binding&>(b) = binding_of(q);
  b.doorbell = static_cast<const std::uint64_t*>(q.doorbell);
  b.engine = e;
  return b;
}

class queue_engine final : public queue_port {
 public:
  // An engine with nothing running yet; `vm` is the queue's GPU VM (owned here: it outlives the
  // engine threads).
  [[nodiscard]] static std::shared_ptr<queue_engine> create(std::unique_ptr<vm_access> vm,
                                                            std::shared_ptr<fault_injector> faults = {}) {
    std::shared_ptr<queue_engine> e(new queue_engine());
    e->faults_ = std::move(faults);
    e->set_vm(std::move(vm));
    return e;
  }
  // Starts the engine of `q` (none for an inactive queue). Never fails: a start failure is what
  // the port reports. `events` and `registry` must outlive the engine. Nothing starts after stop().
  void launch(const queue_info& q, const gpu_node& node, event_notifier& events, const host_kernel_registry& registry,
              const engine_options& opt) {
    std::lock_guard lock(mu_);
    if (stopped_) return;
    launch_locked(q, node, events, registry, opt);
  }

  queue_engine(const queue_engine&) = delete;
  queue_engine& operator=(const queue_engine&) = delete;
  ~queue_engine() { stop(); }

  // UPDATE_QUEUE: stop the running engine and start one on the queue's new ring and pointers (it
  // resumes from the read pointer in memory). The port stays valid; a stopped engine is kept
  // (not freed) until the queue is destroyed, so a doorbell racing the update cannot reach freed
  // memory.
  void restart(const queue_info& q, const gpu_node& node, event_notifier& events, const host_kernel_registry& registry,
               const engine_options& opt) {
    std::lock_guard lock(mu_);
    if (stopped_) return;
    wake_.store(nullptr, std::memory_order_release);
    // An injected hang holds an engine thread inside data_access_ok until it is released: release
    // it first, or the stop below would wait out stop_timeout, abandon the engine and revoke the
    // queue's VM (issue 13: the restarted engine then faulted every access, and the hung work was
    // never reported). The released access faults and the old engine ends; the work it held is
    // lost — the emulator cannot carry a hung wave into the new engine — so the queue stays
    // stopped and reports the hang (errc::device_hang), as a hung queue the CP could not preempt.
    const std::uint64_t ended_before = vm_->hangs_ended();
    notifier_->set_unwinding(true);
    vm_->release_hangs();
    if (current_) stop_engines_locked(std::move(current_), opt.stop_timeout);
    if (killed_.load(std::memory_order_acquire)) return;  // a reset queue stays stopped
    vm_->hold_hangs();
    notifier_->set_unwinding(false);
    if (const std::uint64_t hung = vm_->hangs_ended() - ended_before; hung != 0) {
      start_error_ = failure(errc::device_hang,
                             "queue " + std::to_string(q.queue_id) + " hung (" + std::to_string(hung) +
                                 " access(es) held by an injected hang, emu::fault_plan) when UPDATE_QUEUE stopped its engine: "
                                 "the hung work was abandoned and the queue stays stopped; destroy it and make a new one");
      faulted_.store(true, std::memory_order_release);
      return;
    }
    launch_locked(q, node, events, registry, opt);
  }

  // A device reset: the queue stops for good with `why` (see the header comment).
  void kill(failure why) noexcept {
    {
      std::lock_guard lock(kill_mu_);
      if (!kill_reason_) kill_reason_ = std::move(why);
    }
    killed_.store(true, std::memory_order_release);
    faulted_.store(true, std::memory_order_release);
    notifier_->set_unwinding(true);
    vm_->revoke();
    vm_->release_hangs();
  }

  // True when an engine of this queue could not be stopped in time and was abandoned.
  [[nodiscard]] bool abandoned() const noexcept { return abandoned_.load(std::memory_order_acquire); }
  // The faults the plan injected into this queue (emu/fault_plan.hpp), so that a soak can match
  // every injected fault to the error reported for it: data accesses faulted (`memory`) or hung
  // (`hang`), completion interrupts lost (`irq`), and whether a device reset stopped it.
  struct injected_faults {
    std::uint64_t memory = 0, hang = 0, irq = 0;
    bool reset = false;
  };
  [[nodiscard]] injected_faults injected() const noexcept {
    injected_faults f;
    f.memory = vm_->memory_injected();
    f.hang = vm_->hang_injected();
    f.irq = notifier_->irq_lost();
    f.reset = killed_.load(std::memory_order_acquire);
    return f;
  }
  // Data accesses of this queue's engine an injected hang (fault_plan `hang`) holds right now:
  // the observable "the hang has fired" (tests wait for it instead of sleeping).
  [[nodiscard]] std::uint64_t hangs_held() const noexcept { return vm_->hangs_held(); }

  // ---- queue_port -------------------------------------------------------------------------------
  void ring_doorbell(std::uint64_t value) noexcept override {
    if (queue_wakeup* w = wake_.load(std::memory_order_acquire)) w->ring_doorbell(value);
  }
  [[nodiscard]] bool faulted() const noexcept override { return faulted_.load(std::memory_order_acquire) || engine_faulted(); }
  [[nodiscard]] std::optional<failure> fault() const override {
    if (killed_.load(std::memory_order_acquire)) {
      std::lock_guard lock(kill_mu_);
      return kill_reason_;
    }
    std::lock_guard lock(mu_);
    if (start_error_) return start_error_;
    if (!current_) return std::nullopt;
    if (current_->aql && current_->aql->has_error())
      if (auto e = current_->aql->error()) return e->to_failure();
    if (current_->pm4 && current_->pm4->has_error())
      if (auto e = current_->pm4->error()) return e->to_failure();
    if (current_->sdma && current_->sdma->has_error())
      if (auto e = current_->sdma->error()) return e->to_failure();
    return std::nullopt;
  }

  // ---- the engine (tests, diagnostics; null when the queue has another kind or none runs) -------
  [[nodiscard]] aql_processor* aql() const noexcept { return aql_.load(std::memory_order_acquire); }
  [[nodiscard]] pm4_processor* pm4() const noexcept { return pm4_.load(std::memory_order_acquire); }
  [[nodiscard]] sdma_engine* sdma() const noexcept { return sdma_.load(std::memory_order_acquire); }
  [[nodiscard]] bool running() const noexcept { return wake_.load(std::memory_order_acquire) != nullptr; }

  // ---- preemption: a compute queue (AQL or PM4) through its CWSR area, an SDMA queue through its
  // ring registers (emu/sdma_engine.hpp) -----------------------------------------------------------
  // On demand: the queue goes off the hardware at its next preemption point until resume().
  // false (and nothing happens) when no engine runs.
  // A memory fault evicted the queue's GPU (emu/detail/evictions.hpp): preempted at its next
  // preemption point and never resumed, and an engine not launched yet never is. The latter closes
  // a race: a CREATE_QUEUE that passed its eviction check before the GPU was marked evicted
  // launches its engine after the ioctl's lock, possibly after the eviction went through the
  // queues (when request_preemption() alone found nothing to preempt).
  void evict() noexcept {
    std::lock_guard lock(mu_);
    evicted_ = true;
    (void)request_preemption();
  }
  bool request_preemption() noexcept {
    if (auto* a = aql()) a->request_preemption();
    else if (auto* p = pm4()) p->request_preemption();
    else if (auto* s = sdma()) s->request_preemption();
    else return false;
    return true;
  }
  void resume() noexcept {
    if (auto* a = aql()) a->resume();
    if (auto* p = pm4()) p->resume();
    if (auto* s = sdma()) s->resume();
  }
  // True once the queue is saved and off the hardware.
  [[nodiscard]] bool wait_preempted(std::chrono::milliseconds timeout) const {
    if (auto* a = aql()) return a->wait_preempted(timeout);
    if (auto* p = pm4()) return p->wait_preempted(timeout);
    if (auto* s = sdma()) return s->wait_preempted(timeout);
    return false;
  }
  [[nodiscard]] std::optional<emu::preemption_stats> preemption_stats() const {
    if (auto* a = aql()) return a->preemption_stats();
    if (auto* p = pm4()) return p->preemption_stats();
    return std::nullopt;
  }

  // Stops and joins the engine's threads (in-flight work finishes; nothing more is fetched),
  // waiting at most `timeout` (then the engine is abandoned: see engine_options::stop_timeout).
  void stop(std::chrono::milliseconds timeout = engine_options{}.stop_timeout) noexcept {
    notifier_->set_unwinding(true);
    vm_->release_hangs();  // an injected hang ends (its access faults) so the threads can be joined
    std::lock_guard lock(mu_);
    stopped_ = true;
    wake_.store(nullptr, std::memory_order_release);
    if (current_) stop_engines_locked(std::move(current_), timeout);
  }

 private:
  struct engines {
    std::unique_ptr<aql_processor> aql;
    std::unique_ptr<pm4_processor> pm4;
    std::unique_ptr<sdma_engine> sdma;
    void begin_stop() noexcept {
      if (aql) aql->begin_stop();
      if (pm4) pm4->begin_stop();
      if (sdma) sdma->begin_stop();
    }
    void stop() noexcept {
      if (aql) aql->stop();
      if (pm4) pm4->stop();
      if (sdma) sdma->stop();
    }
  };

  queue_engine() = default;

  // The queue's VM as its engines see it: a kill switch (once revoked nothing is mapped, so a hung
  // workgroup's next checked access faults, and the device is no longer touched), and the fault
  // plan on data accesses (a fault, or a hang held until the queue is stopped or killed).
  class engine_vm final : public vm_access {
   public:
    engine_vm(std::unique_ptr<vm_access> inner, fault_injector* faults) noexcept : inner_(std::move(inner)), faults_(faults) {}
    [[nodiscard]] bool is_mapped(std::uint64_t va, std::uint64_t len) const noexcept override {
      std::shared_lock lock(mu_);
      return !revoked_ && inner_->is_mapped(va, len);
    }
    // Revoked: 0, so that no engine caches a translation any more (emu/vm_tlb.hpp).
    [[nodiscard]] std::uint64_t generation() const noexcept override {
      return revoked_flag_.load(std::memory_order_acquire) ? 0 : inner_->generation();
    }
    [[nodiscard]] bool mapped_extent(std::uint64_t va, std::uint64_t& lo, std::uint64_t& hi) const noexcept override {
      std::shared_lock lock(mu_);
      return !revoked_ && inner_->mapped_extent(va, lo, hi);
    }
    [[nodiscard]] bool data_access_ok(std::uint64_t va, std::uint64_t len) const noexcept override {
      if (faults_) {
        if (faults_->fire(fault_kind::hang)) {
          hang_injected_.fetch_add(1, std::memory_order_relaxed);
          std::unique_lock lock(hang_mu_);
          ++hangs_held_;
          hang_cv_.wait(lock, [&] { return released_; });
          --hangs_held_;
          ++hangs_ended_;
          return false;  // released: the queue is stopping; the access faults and unwinds the wave
        }
        if (faults_->fire(fault_kind::memory)) {
          memory_injected_.fetch_add(1, std::memory_order_relaxed);
          return false;
        }
      }
      return is_mapped(va, len);
    }
    [[nodiscard]] void* host_address(std::uint64_t va) const noexcept override { return inner_->host_address(va); }
    void revoke() noexcept {
      std::unique_lock lock(mu_);
      revoked_flag_.store(true, std::memory_order_release);  // before revoked_: a cache drops first
      revoked_ = true;
    }
    void release_hangs() noexcept {
      {
        std::lock_guard lock(hang_mu_);
        released_ = true;
      }
      hang_cv_.notify_all();
    }
    void hold_hangs() noexcept {  // an engine restarts (UPDATE_QUEUE): new hangs hold again
      std::lock_guard lock(hang_mu_);
      released_ = false;
    }
    // Injected hangs that have ended (released) so far.
    [[nodiscard]] std::uint64_t hangs_ended() const noexcept {
      std::lock_guard lock(hang_mu_);
      return hangs_ended_;
    }
    [[nodiscard]] std::uint64_t memory_injected() const noexcept { return memory_injected_.load(std::memory_order_relaxed); }
    [[nodiscard]] std::uint64_t hang_injected() const noexcept { return hang_injected_.load(std::memory_order_relaxed); }
    // Accesses an injected hang holds now (an engine thread waiting inside data_access_ok).
    [[nodiscard]] std::uint64_t hangs_held() const noexcept {
      std::lock_guard lock(hang_mu_);
      return hangs_held_;
    }

   private:
    std::unique_ptr<vm_access> inner_;
    fault_injector* faults_;
    mutable std::shared_mutex mu_;
    bool revoked_ = false;
    std::atomic<bool> revoked_flag_{false};  // = revoked_, readable without mu_ (generation())
    mutable std::mutex hang_mu_;
    mutable std::condition_variable hang_cv_;
    bool released_ = false;
    mutable std::uint64_t hangs_ended_ = 0;
    mutable std::uint64_t hangs_held_ = 0;
    mutable std::atomic<std::uint64_t> memory_injected_{0}, hang_injected_{0};  // this queue's, by the plan
  };

  // The interrupts of this queue's engine: the fault plan may lose one, or reset the device at one.
  class engine_notifier final : public event_notifier {
   public:
    void bind(event_notifier& inner, fault_injector* faults) noexcept {
      inner_ = &inner;
      faults_ = faults;
    }
    void signal_event(std::uint32_t id) noexcept override {
      if (faults_) {
        if (faults_->fire(fault_kind::reset)) {
          try {
            faults_->reset("injected by the fault plan at an interrupt");
          } catch (...) {
          }
        } else if (faults_->fire(fault_kind::irq)) {
          irq_lost_.fetch_add(1, std::memory_order_relaxed);
          return;  // lost: the completion is in memory, the event is not signalled
        }
      }
      inner_->signal_event(id);
    }
    // Not while the emulator itself makes this queue's work fault to end it (a released injected
    // hang, a revoked VM: stop, UPDATE_QUEUE, reset): that is no GPU page fault, and on Linux a
    // queue destroyed or updated stops nothing else of its GPU.
    void memory_fault(std::uint32_t gpu_id, std::uint64_t address) noexcept override {
      if (!unwinding_.load(std::memory_order_acquire)) inner_->memory_fault(gpu_id, address);
    }
    void set_unwinding(bool on) noexcept { unwinding_.store(on, std::memory_order_release); }

    [[nodiscard]] std::uint64_t irq_lost() const noexcept { return irq_lost_.load(std::memory_order_relaxed); }

   private:
    event_notifier* inner_ = nullptr;
    fault_injector* faults_ = nullptr;
    std::atomic<std::uint64_t> irq_lost_{0};
    std::atomic<bool> unwinding_{false};
  };

  // Stops `e` on a helper thread and waits up to `timeout`; if its threads do not end, revokes
  // the VM and abandons `e` (and, since the hung threads use it, the VM) for good.
  void stop_engines_locked(std::unique_ptr<engines> e, std::chrono::milliseconds timeout) noexcept {
    aql_.store(nullptr, std::memory_order_release);
    pm4_.store(nullptr, std::memory_order_release);
    sdma_.store(nullptr, std::memory_order_release);
    std::shared_ptr<engines> shared(std::move(e));
    // Asked here, not only by the helper below: an engine whose thread sees the request stops
    // touching the queue at its next check, even if the helper is not scheduled within `timeout`
    // (at load 10 on 2 cores it was not, once in ~30 destroys: the engine was abandoned while
    // running, then read its freed write pointer — tests/graph/replay.cpp's teardown crashed).
    shared->begin_stop();
    try {
      auto done = std::make_shared<std::promise<void>>();
      auto fut = done->get_future();
      std::thread helper([shared, done] {
        shared->stop();
        done->set_value();
      });
      if (fut.wait_for(timeout) == std::future_status::ready) {
        helper.join();
        retired_.push_back(std::move(shared));
        return;
      }
      // Not stopped in time: revoke the VM (a workgroup hung in a checked access faults and
      // unwinds), then give the threads a grace period before abandoning them. An engine that is
      // only slow to stop — its thread not scheduled on a loaded machine — must not be
      // abandoned: it still reads its ring and pointers through raw host addresses, which are
      // unmapped once the queue's buffers go (found under load 10: an abandoned SDMA engine read
      // its write pointer after ~device_state unplaced the BOs, SIGSEGV in runtime.device_models).
      vm_->revoke();
      if (fut.wait_for(4 * timeout) == std::future_status::ready) {
        helper.join();
        retired_.push_back(std::move(shared));
        return;
      }
      helper.detach();
    } catch (...) {  // no thread could be started: stop inline (unbounded, as before)
      shared->stop();
      retired_.push_back(std::move(shared));
      return;
    }
    vm_->revoke();
    abandoned_.store(true, std::memory_order_release);
    auto& graveyard = detail::abandoned_engines::get();
    std::lock_guard g(graveyard.mu);
    graveyard.items.push_back(shared);
    graveyard.items.push_back(vm_keep_);
    graveyard.items.push_back(notifier_);
    graveyard.items.push_back(faults_);
  }
  void launch_locked(const queue_info& q, const gpu_node& node, event_notifier& events,
                     const host_kernel_registry& registry, const engine_options& opt) {
    if (evicted_) return;  // evict(): never started
    start_error_.reset();
    faulted_.store(false, std::memory_order_release);
    aql_.store(nullptr, std::memory_order_release);
    pm4_.store(nullptr, std::memory_order_release);
    sdma_.store(nullptr, std::memory_order_release);
    if (!q.active) return;
    notifier_->bind(events, faults_.get());
    auto e = std::make_unique<engines>();
    queue_wakeup* w = nullptr;
    result<void> r = [&]() -> result<void> {
      if (q.is_aql()) {
        AQUEDUCT_TRY(auto b, aql_binding_of(q, node));
        AQUEDUCT_TRY(e->aql, aql_processor::try_create(b, *vm_, *notifier_, registry, opt.aql));
        w = e->aql.get();
      } else if (q.type == abi::kfd::queue_type_compute) {
        AQUEDUCT_TRY(auto b, pm4_binding_of(q, node));
        AQUEDUCT_TRY(e->pm4, pm4_processor::try_create(b, *vm_, *notifier_, registry, opt.pm4));
        w = e->pm4.get();
      } else if (q.is_sdma()) {
        const auto eng = sdma_engine_of(q.gfx_target_version);
        if (!eng)
          return failure(errc::not_supported, "no SDMA packet format known for gfx_target_version " +
                                                  std::to_string(q.gfx_target_version));
        AQUEDUCT_TRY(e->sdma, sdma_engine::try_create(sdma_binding_of(q, *eng), *vm_, *notifier_, opt.sdma));
        w = e->sdma.get();
      }
      return ok();
    }();
    if (!r) {
      start_error_ = failure(r.get_failure().code(), "the emulated device could not start queue " +
                                                         std::to_string(q.queue_id) + "'s engine: " + std::string(r.detail()));
      faulted_.store(true, std::memory_order_release);
      return;
    }
    aql_.store(e->aql.get(), std::memory_order_release);
    pm4_.store(e->pm4.get(), std::memory_order_release);
    sdma_.store(e->sdma.get(), std::memory_order_release);
    current_ = std::move(e);
    wake_.store(w, std::memory_order_release);
  }
  [[nodiscard]] bool engine_faulted() const noexcept {
    if (auto* p = aql_.load(std::memory_order_acquire); p && p->has_error()) return true;
    if (auto* p = pm4_.load(std::memory_order_acquire); p && p->has_error()) return true;
    if (auto* p = sdma_.load(std::memory_order_acquire); p && p->has_error()) return true;
    return false;
  }

  void set_vm(std::unique_ptr<vm_access> vm) {
    vm_keep_ = std::make_shared<engine_vm>(std::move(vm), faults_.get());
    vm_ = vm_keep_.get();
  }

  std::shared_ptr<fault_injector> faults_;  // declared first: outlives the VM and notifier that use it
  std::shared_ptr<engine_vm> vm_keep_;      // destroyed after every engine thread is joined
  engine_vm* vm_ = nullptr;
  std::shared_ptr<engine_notifier> notifier_ = std::make_shared<engine_notifier>();  // kept with abandoned engines
  mutable std::mutex mu_;  // current_, retired_, start_error_
  std::unique_ptr<engines> current_;
  std::vector<std::shared_ptr<engines>> retired_;  // stopped (UPDATE_QUEUE, stop), freed with the queue
  std::optional<failure> start_error_;
  bool stopped_ = false;
  bool evicted_ = false;  // under mu_ (evict())
  std::atomic<queue_wakeup*> wake_{nullptr};
  std::atomic<aql_processor*> aql_{nullptr};
  std::atomic<pm4_processor*> pm4_{nullptr};
  std::atomic<sdma_engine*> sdma_{nullptr};
  std::atomic<bool> faulted_{false};
  std::atomic<bool> abandoned_{false};
  std::atomic<bool> killed_{false};
  mutable std::mutex kill_mu_;  // kill_reason_
  std::optional<failure> kill_reason_;
};

}  // namespace aqueduct::emu
