// aqueduct/runtime/detail/state.hpp — the state behind `system` and its agents (not API).
//
// Layer: runtime. One `system_state` per opened system, shared (keep_alive) by the system and by
// every agent, queue, buffer, executable and signal made from it, which point into it. It owns, in this
// destruction order (reverse of declaration): the agents' doorbell pages, signal memory and
// events; the process-wide KFD event page; the driver (and with it the device file, real or
// emulated). Nothing here names an engine: an emulated device runs its own (emu::device).
// `kfd_waiter` is the sync::event_waiter over KFD events (AMDKFD_IOC_WAIT_EVENTS).
// Thread safety: immutable after open except where a member says it is guarded by `mu`.
#pragma once

#include <aqueduct/abi/amd_signal.hpp>
#include <aqueduct/abi/kfd_ioctl.hpp>
#include <aqueduct/arch/family.hpp>
#include <aqueduct/core/queue_port.hpp>
#include <aqueduct/core/result.hpp>
#include <aqueduct/kfd/driver.hpp>
#include <aqueduct/kfd/events.hpp>
#include <aqueduct/kfd/memory.hpp>
#include <aqueduct/kfd/queue_resources.hpp>
#include <aqueduct/runtime/any_device.hpp>
#include <aqueduct/runtime/detail/buffer_cache.hpp>
#include <aqueduct/runtime/detail/device_faults.hpp>
#include <aqueduct/runtime/device_clock.hpp>
#include <aqueduct/sync/signal.hpp>
#include <aqueduct/sync/signal_pool.hpp>
#include <aqueduct/sync/wait.hpp>

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace aqueduct::emu {
class device;  // runtime/emulator.hpp, the one runtime header that includes emu/, completes it
}  // namespace aqueduct::emu

namespace aqueduct::runtime::detail {

using file_type = any_device_file;
using driver_ref = kfd::driver_ref<file_type>;

// Blocks on a KFD signal event by id (sync::event_waiter). WAIT_EVENTS takes milliseconds: the
// timeout is rounded up so a short wait still sleeps instead of polling. With `faults` (the
// system's; detail/device_faults.hpp) it also wakes for the system's memory event, until a fault
// has been recorded, and records what that event reports.
struct kfd_waiter {
  driver_ref d;
  device_faults* faults = nullptr;
  sync::event_status wait(std::uint32_t event_id, sync::nanoseconds timeout) noexcept {
    abi::kfd::event_data ev[2]{};
    ev[0].event_id = event_id;
    abi::kfd::wait_events_args w{};
    w.events_ptr = reinterpret_cast<std::uint64_t>(ev);
    w.num_events = 1;
    // The memory event is auto-reset: a fault wakes the waits blocked at that moment (each gets
    // its data), or else the next one; it never keeps waking a wait.
    if (faults && faults->event_id()) {
      ev[1].event_id = faults->event_id();
      w.num_events = 2;
    }
    w.wait_for_all = 0;  // any of them
    if (timeout == sync::infinite) {
      w.timeout = abi::kfd::wait_timeout_infinite;
    } else {
      const auto ms = (timeout.count() + 999'999) / 1'000'000;
      w.timeout = static_cast<std::uint32_t>(ms > 0x7FFFFFFF ? 0x7FFFFFFF : ms);
    }
    if (d.file().ioctl(abi::kfd::amdkfd_ioc_wait_events, &w) != 0) return sync::event_status::failed;
    if (w.num_events == 2 && w.wait_result == abi::kfd::wait_result_complete) faults->record(ev[1].memory_exception_data);
    if (w.wait_result == abi::kfd::wait_result_complete) return sync::event_status::signaled;
    if (w.wait_result == abi::kfd::wait_result_timeout) return sync::event_status::timed_out;
    return sync::event_status::failed;
  }
  // For waits that do not block (wait_policy::spin, or once blocking failed): a WAIT_EVENTS on the
  // memory event alone that does not block, when one is due (at most one per millisecond for the
  // system); records what it reports. A system call: never on a wait's fast path.
  void poll_faults() noexcept {
    if (faults && faults->poll_due()) look_at_faults();
  }
  // The same look, now (a queue's fault(): asked by a person, not by a loop; a graph's replay wait uses known_fault()).
  void look_at_faults() noexcept {
    if (!faults || faults->event_id() == 0) return;
    abi::kfd::event_data ev{};
    ev.event_id = faults->event_id();
    abi::kfd::wait_events_args w{};
    w.events_ptr = reinterpret_cast<std::uint64_t>(&ev);
    w.num_events = 1;
    w.timeout = 0;
    if (d.file().ioctl(abi::kfd::amdkfd_ioc_wait_events, &w) != 0 || w.wait_result != abi::kfd::wait_result_complete)
      return;
    faults->record(ev.memory_exception_data);
  }
};
static_assert(sync::event_waiter<kfd_waiter>);

struct system_state;

struct agent_state {
  system_state* sys = nullptr;
  const kfd::node* node = nullptr;
  arch::family fam = arch::family::gfx9;
  std::string target_name;  // "gfx94x", "gfx11+pm4-priv" ... (arch::target::name)

  std::mutex mu;  // guards everything below
  std::optional<kfd::doorbell_pages<file_type>> doorbells;  // mapped with the first queue
  // User signals: one page of amd_signals, all mailboxed to one KFD event.
  std::optional<kfd::buffer<file_type>> signal_memory;
  std::optional<kfd::event<file_type>> signal_event;
  std::unique_ptr<sync::signal_pool> signals;
  // The device heap hidden_heap_v1 points at (agent::try_load: made for the first code object
  // whose kernels list it, then shared by every kernel of this agent, as CLR's per-device heap).
  std::optional<kfd::buffer<file_type>> device_heap;
  // The shader copy's kernels (runtime/shader_copy.hpp: a runtime::shader_kernels), loaded on first
  // use; its executable does not keep the system alive, so this is no cycle.
  std::shared_ptr<const void> shader_code;
  // The GPU clock counter's calibration against the host (runtime/device_clock.hpp; its own mutex).
  clock_state clock;
  // Buffers destroyed executable graphs gave back, for the next instantiation (its own mutex;
  // detail/buffer_cache.hpp).
  buffer_cache<file_type> kept;
};

// Shared by the system and everything made from it (agents, queues, buffers, executables,
// signals): the state lives until the last of them is destroyed, so nothing dangles when the
// `system` value goes first, and a thread waiting on a queue keeps what it waits on alive.
struct system_state : std::enable_shared_from_this<system_state> {
  explicit system_state(kfd::driver<file_type> d) : driver(std::move(d)) {}
  kfd::driver<file_type> driver;
  emu::device* emulator = nullptr;  // null on /dev/kfd (host kernels register in its registry)
  std::string why;                  // how the device was chosen (for describe())
  std::mutex event_mu;  // guards event_page creation and CREATE_EVENT
  std::optional<kfd::event_page<file_type>> event_page;
  std::deque<agent_state> agents;
  // GPU memory faults (detail/device_faults.hpp): the memory event, made at open, and what it told.
  std::optional<kfd::event<file_type>> memory_event;
  device_faults faults;

  [[nodiscard]] driver_ref ref() const noexcept { return driver.ref(); }
  [[nodiscard]] kfd_waiter waiter() noexcept { return kfd_waiter{ref(), &faults}; }

  // The memory event: made once, at open. Without it (the device refused) waits after a GPU
  // memory fault are not woken by it and end only at their timeout, as before.
  void make_memory_event() noexcept {
    auto e = kfd::event<file_type>::try_create_memory(ref());
    if (!e) return;
    faults.set_event_id(e->id());
    memory_event.emplace(std::move(*e));
  }
  // Why every queue of `gpu` stopped (a GPU memory fault the KFD reported), or none: one atomic
  // load while there is none (it is asked on submissions too). Waits learn of a fault from the
  // memory event (kfd_waiter).
  [[nodiscard]] std::optional<failure> device_stop(const kfd::node& gpu) const { return faults.of(gpu.gpu_id); }
  // The same, after a look at the memory event that does not block when none is known yet (one
  // WAIT_EVENTS): a fault no wait has seen, e.g. on a queue nobody waits on.
  [[nodiscard]] std::optional<failure> device_stop_now(const kfd::node& gpu) {
    if (auto f = faults.of(gpu.gpu_id)) return f;
    waiter().look_at_faults();
    return faults.of(gpu.gpu_id);
  }

  // A signal event on the process event page, for engines of `gpu`. The one page is allocated
  // on the first call (on that call's GPU); every call maps it to its `gpu` too (once per GPU,
  // kfd::buffer::try_map_to), so every GPU whose queues or signals write an event mailbox has
  // it in its VM — AQL completion signals, PM4 RELEASE_MEM and SDMA FENCE alike — as libhsakmt
  // maps the event page to every GPU. Without it a second GPU's mailbox write faults or is lost.
  result<kfd::event<file_type>> try_make_event(const kfd::node& gpu) {
    std::lock_guard lock(event_mu);
    if (!event_page) {
      AQUEDUCT_TRY(auto p, kfd::event_page<file_type>::try_create(ref(), gpu));
      event_page.emplace(std::move(p));
    }
    AQUEDUCT_TRY_VOID(event_page->try_map_to(gpu));
    return kfd::event<file_type>::try_create_signal(ref(), *event_page, true);
  }
};

// The in-process device's own report of why it stopped the queue whose port is `port` (null on
// /dev/kfd: none).
[[nodiscard]] inline std::optional<failure> port_fault(const aqueduct::queue_port* port) {
  return port && port->faulted() ? port->fault() : std::nullopt;
}

// Why the device stopped a queue of agent `a` whose port (null on /dev/kfd) is `port`, or none:
// the in-process device's own report (it names the packet), else a GPU memory fault the KFD
// reported, which stopped every queue of this GPU (detail/device_faults.hpp). `now`: look at the
// memory event first when no fault is known (system_state::device_stop_now).
[[nodiscard]] inline std::optional<failure> queue_stop(const aqueduct::queue_port* port, const agent_state& a,
                                                       bool now = false) {
  if (auto f = port_fault(port)) return f;
  return now ? a.sys->device_stop_now(*a.node) : a.sys->device_stop(*a.node);
}

// What keeps the system state of `a` alive (held by every object made from it).
using keep_alive = std::shared_ptr<const void>;
[[nodiscard]] inline keep_alive keep_system(const agent_state& a) noexcept { return a.sys->weak_from_this().lock(); }

// `bytes` of `use` memory on `a`'s GPU: a kept buffer (zeroed up to `bytes`) or a fresh one.
inline result<kfd::buffer<file_type>> try_reusable_buffer(agent_state& a, std::uint64_t bytes, kfd::memory_use use) {
  if (auto b = a.kept.take(bytes, use)) return std::move(*b);
  return kfd::buffer<file_type>::try_allocate(a.sys->ref(), *a.node, byte_count(bytes), use);
}

// The agent's doorbell pages, mapped on first use.
inline result<const kfd::doorbell_pages<file_type>*> try_doorbells(agent_state& a) {
  std::lock_guard lock(a.mu);
  if (!a.doorbells) {
    AQUEDUCT_TRY(auto p, kfd::doorbell_pages<file_type>::try_map(a.sys->ref(), *a.node));
    a.doorbells.emplace(std::move(p));
  }
  return &*a.doorbells;
}

inline constexpr std::uint32_t signals_per_agent = 256;

// A signal from the agent's pool (created on first use), value `initial`.
inline result<sync::pooled_signal> try_acquire_signal(agent_state& a, std::int64_t initial) {
  std::lock_guard lock(a.mu);
  if (!a.signals) {
    constexpr std::uint64_t bytes = std::uint64_t{signals_per_agent} * sizeof(abi::amd_signal);
    AQUEDUCT_TRY(auto mem, kfd::buffer<file_type>::try_allocate(a.sys->ref(), *a.node, byte_count(bytes),
                                                                kfd::memory_use::queue));
    AQUEDUCT_TRY(auto ev, a.sys->try_make_event(*a.node));
    auto* s = mem.ref().as<abi::amd_signal>();
    for (std::uint32_t i = 0; i < signals_per_agent; ++i)
      sync::signal_ref::initialize(s[i], 0, ev.mailbox_va().value, ev.id());
    a.signals = std::make_unique<sync::signal_pool>(std::span<abi::amd_signal>(s, signals_per_agent), false);
    a.signal_memory.emplace(std::move(mem));
    a.signal_event.emplace(std::move(ev));
  }
  return a.signals->try_acquire(initial, std::chrono::milliseconds(100));
}

}  // namespace aqueduct::runtime::detail
