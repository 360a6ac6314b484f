// aqueduct/emu/device.hpp — the emulated KFD device: /dev/kfd's ioctl ABI, its mmap protocol and
// the render nodes, in process. A second model of kfd::device_file (kfd/device_file.hpp; this
// header does not include it — a test checks `static_assert(kfd::device_file<emu::device>)`).
//
// Layer: emu. `device::try_create(machine_config)` builds the machine (emu/machine_config.hpp),
// writes its sysfs tree to a private temporary directory (sysfs_root()) and opens a placeholder
// fd that plays /dev/kfd. ioctls follow kernel semantics: the request's nr picks the handler; the
// argument is copied in (the user's size, zero-extended to the kernel's struct), the handler runs,
// and for IOR/IOWR commands the user's size is copied back even when the handler fails
// (kfd_ioctl, spec/kfd.md §2.1). CREATE_QUEUE validates in the order of spec/kfd.md §8 with the
// kernel's errnos; machine_config::kernel selects pre-6.12 leniency (no buffer / CWSR checks).
// Memory: see emu/gpu_vm.hpp (GPU VA == host VA). Events: emu/events.hpp.
// Engines: the device owns them. CREATE_QUEUE starts the queue's AQL/PM4/SDMA engine
// (emu/queue_engine.hpp) on the memory the ioctl accepted, DESTROY_QUEUE stops and joins it before
// it returns and before the queue id is freed, UPDATE_QUEUE restarts it. The one thing the device
// cannot observe, a doorbell store, reaches it through `queue_port(queue_id)` (core/queue_port.hpp,
// the device_file hook; kfd::linux_device has none). `engine(queue_id)` gives tests the engine
// itself; `registry()` holds the host functions this device's emulated code names;
// `set_engine_options` sets the engines' knobs for queues created afterwards ($AQUEDUCT_EMU_ADVERSARIAL
// set and not "0" turns on the AQL processors' adversarial mode at creation).
// Faults: machine_config::faults, or $AQUEDUCT_EMU_FAULTS (emu/fault_plan.hpp) when set; faults()
// counts what was injected; reset() is a GPU reset on demand (every queue stops, device_reset).
// Observers: set_queue_hooks (create / update / destroy with queue_info) — for tests; engines do
// not depend on them.
// Not implemented (return -EOPNOTSUPP): SVM, CRIU, dmabuf import/export, SMI events, GWS, CU mask,
// wave state, tile config, debugger (DBG_TRAP), deprecated GET_PROCESS_APERTURES.
// Thread safety: every member may be called from any thread. ioctls take one lock (WAIT_EVENTS
// waits without it); hooks run without the lock, so they may call back into the device.
#pragma once

#include <aqueduct/abi/kfd_ioctl.hpp>
#include <aqueduct/core/mapping.hpp>
#include <aqueduct/core/result.hpp>
#include <aqueduct/emu/detail/device_state.hpp>
#include <aqueduct/emu/events.hpp>
#include <aqueduct/emu/fault_plan.hpp>
#include <aqueduct/emu/gpu_vm.hpp>
#include <aqueduct/emu/machine_config.hpp>
#include <aqueduct/emu/queue_engine.hpp>
#include <aqueduct/emu/queues.hpp>
#include <aqueduct/emu/sysfs_writer.hpp>

#include <bitset>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <shared_mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

namespace aqueduct::emu {

// Set (and not "0"): every AQL processor of a device created afterwards runs in adversarial mode
// (polls headers eagerly and re-reads each body, so ThreadSanitizer sees a body written after its
// header).
inline constexpr const char* adversarial_env = "AQUEDUCT_EMU_ADVERSARIAL";

class device {
 public:
  // Builds the machine and its sysfs tree. Fails with errc::io_error when the temporary
  // directory or the placeholder fd cannot be created, errc::invalid_argument for no GPUs.
  [[nodiscard]] static result<device> try_create(machine_config cfg) {
    if (cfg.gpus.empty()) return failure(errc::invalid_argument, "emu::device: the machine has no GPU");
    if (const char* f = std::getenv(faults_env); f && *f && std::string_view(f) != "0") {
      AQUEDUCT_TRY(cfg.faults, fault_plan::try_parse(f));
    }
    auto st = std::make_unique<detail::device_state>();
    const fault_plan plan = cfg.faults;
    AQUEDUCT_TRY_VOID(st->init(std::move(cfg)));
    st->faults->set_reset_action([s = st.get()](const std::string& why) {  // a GPU reset: every queue stops
      std::vector<std::shared_ptr<queue_engine>> es;
      for (std::shared_lock lock(s->m); auto& [id, q] : s->queues) es.push_back(q.engine);
      for (auto& e : es)
        if (e) e->kill(failure(errc::device_reset, "GPU reset (" + why + "): every queue of this process was stopped; "
                                                   "destroy this queue and make a new one"));
    });  // (the device_state destructor clears it first)
    if (st->cfg.memory_fault_events)  // a GPU memory fault: evict the GPU's queues, set the memory events
      st->irq.set_memory_fault_action([s = st.get()](std::uint32_t gpu, std::uint64_t va) {
        if (!s->evicted.evict(gpu)) return;  // already evicted: nothing of it runs any more
        std::vector<std::shared_ptr<queue_engine>> es;
        for (std::shared_lock lock(s->m); auto& [id, q] : s->queues)
          if (q.info.gpu_id == gpu && q.engine) es.push_back(q.engine);
        for (auto& e : es)
          if (!e->faulted()) e->evict();  // off the GPU at its next preemption point, for good; never launched if not yet
        s->events.vm_fault(gpu, va);
      });  // (off first in the device_state destructor)
    if (plan.preempt.count() != 0) {  // AQL and PM4 queues: CWSR save + restore on a timer
      st->engine_opt.aql.preemption.interval = plan.preempt;
      st->engine_opt.pm4.preemption.interval = plan.preempt;
      // SDMA queues: their ring registers saved and restored on the same timer, off for a quarter
      // of the period (the engine serves its other queues meanwhile).
      st->engine_opt.sdma.preempt_interval = plan.preempt;
      st->engine_opt.sdma.preempt_off_for = plan.preempt / 4;
    }
    if (const char* adv = std::getenv(adversarial_env); adv && *adv && std::string_view(adv) != "0")
      st->engine_opt.aql.adversarial = true;
    device d;
    d.st_ = std::move(st);
    return d;
  }
  [[nodiscard]] static device create(machine_config cfg) { return try_create(std::move(cfg)).value(); }
  // "mi300x,rx7900xtx", "2*rx7900xtx" ... (machine_config::try_parse) with default knobs.
  [[nodiscard]] static result<device> try_create(std::string_view machine) {
    AQUEDUCT_TRY(auto cfg, machine_config::try_parse(machine));
    return try_create(std::move(cfg));
  }

  device(device&&) noexcept = default;
  device& operator=(device&&) noexcept = default;
  ~device() = default;

  // ---- kfd::device_file -------------------------------------------------------------------
  int ioctl(unsigned long request, void* arg) noexcept { return st_->ioctl(request, arg); }
  mapping mmap(void* addr, std::size_t length, int prot, int flags, int fd, std::uint64_t offset) noexcept {
    return st_->mmap(addr, length, prot, flags, fd, offset);
  }
  int munmap(void* addr, std::size_t length) noexcept { return st_->munmap(addr, length); }
  int open_render_node(std::uint32_t minor) noexcept { return st_->open_render_node(minor); }
  int close_render_node(int fd) noexcept { return st_->close_render_node(fd); }
  [[nodiscard]] int kfd_fd() const noexcept { return st_->kfd_fd; }
  [[nodiscard]] const std::filesystem::path& sysfs_root() const noexcept { return st_->sysfs.root(); }

  // ---- the machine ---------------------------------------------------------------------------
  [[nodiscard]] const machine_config& config() const noexcept { return st_->cfg; }
  [[nodiscard]] std::span<const gpu_node> gpus() const noexcept { return st_->gpus; }
  [[nodiscard]] const gpu_node* find_gpu(std::uint32_t gpu_id) const noexcept { return st_->find_gpu(gpu_id); }

  // ---- engines ------------------------------------------------------------------------------------
  // The device_file hook: the port of queue `queue_id` (doorbell, fault), valid until its
  // DESTROY_QUEUE; nullptr for no such queue.
  [[nodiscard]] aqueduct::queue_port* queue_port(std::uint32_t queue_id) noexcept { return engine(queue_id); }
  // The engine behind queue `queue_id` (queue_engine::aql/pm4/sdma), valid until its DESTROY_QUEUE.
  [[nodiscard]] queue_engine* engine(std::uint32_t queue_id) const noexcept {
    std::shared_lock lock(st_->m);
    auto it = st_->queues.find(queue_id);
    return it == st_->queues.end() ? nullptr : it->second.engine.get();
  }
  [[nodiscard]] host_kernel_registry& registry() noexcept { return st_->registry; }
  // The fault plan in force and what it injected (emu/fault_plan.hpp).
  [[nodiscard]] fault_injector& faults() const noexcept { return *st_->faults; }
  // A GPU reset now: every queue of the process stops with errc::device_reset (counted as injected).
  void reset(const std::string& why = "requested") {
    st_->faults->count_reset();
    st_->faults->reset(why);
  }
  // Buffer objects alive (ALLOC_MEMORY_OF_GPU not yet freed): for leak checks.
  [[nodiscard]] std::size_t buffer_count() const {
    std::shared_lock lock(st_->m);
    return st_->vm.objects().size();
  }
  [[nodiscard]] engine_options get_engine_options() const {
    std::shared_lock lock(st_->m);
    return st_->engine_opt;
  }
  void set_engine_options(engine_options o) {
    std::unique_lock lock(st_->m);
    st_->engine_opt = std::move(o);
  }

  // ---- seams for packet processors ------------------------------------------------------------
  // Every byte of [addr, addr+len) is in a BO mapped to `gpu_id` whose memory is present.
  [[nodiscard]] bool is_mapped(std::uint32_t gpu_id, std::uint64_t addr, std::uint64_t len) const {
    std::shared_lock lock(st_->m);
    return st_->vm.is_mapped(gpu_id, addr, len);
  }
  // An interrupt carrying `event_id` (the GPU wrote the event's slot first): wakes WAIT_EVENTS.
  void signal_event(std::uint32_t event_id) { st_->events.signal_interrupt(event_id); }
  // Interrupts raised on this device so far (signal_event calls).
  [[nodiscard]] std::uint64_t interrupts() const noexcept { return st_->events.interrupts(); }
  // Observer hooks (tests). Replaces the hooks; existing queues are not replayed (see queues()). The device calls
  // `destroyed` for every queue still alive when it is destroyed, so whoever installs hooks must
  // reset them (set_queue_hooks({})) before the objects they capture go away.
  void set_queue_hooks(queue_hooks hooks) {
    std::unique_lock lock(st_->m);
    st_->hooks = std::make_shared<const queue_hooks>(std::move(hooks));
  }
  [[nodiscard]] std::vector<queue_info> queues() const {
    std::shared_lock lock(st_->m);
    std::vector<queue_info> v;
    for (const auto& [id, q] : st_->queues) v.push_back(q.info);
    return v;
  }
  // The emulator's view of the process doorbell slice of `gpu_id` (allocated on first use), or
  // nullptr for an unknown GPU. Engines may poll it.
  [[nodiscard]] void* doorbell_page(std::uint32_t gpu_id) {
    std::unique_lock lock(st_->m);
    auto* pdd = st_->find_pdd(gpu_id);
    if (!pdd || !pdd->ensure_doorbells()) return nullptr;
    return pdd->doorbells->data();
  }
  // The event page slots (nullptr until the first signal event or a user-supplied page).
  [[nodiscard]] std::uint64_t* event_slots() const { return st_->events.slots(); }

 private:
  device() = default;
  std::unique_ptr<detail::device_state> st_;
};

}  // namespace aqueduct::emu
