// aqueduct/runtime/detail/state.hpp — the state behind `system` and its agents (not API).
//
// Layer: runtime. One `system_state` per opened system, on the heap so that agents, queues,
// buffers and signals can point into it while the `system` value moves. It owns, in this
// destruction order (reverse of declaration): the agents' doorbell pages, signal memory and
// events; the process-wide KFD event page; the emulator link (joins processors, clears hooks);
// the host-kernel registry; the driver (and with it the device file, real or emulated).
// `kfd_waiter` is the sync::event_waiter over KFD events (AMDKFD_IOC_WAIT_EVENTS).
// Thread safety: immutable after open except where a member says it is guarded by `mu`.
#pragma once

#include <aqueduct/abi/amd_signal.hpp>
#include <aqueduct/abi/kfd_ioctl.hpp>
#include <aqueduct/arch/family.hpp>
#include <aqueduct/core/result.hpp>
#include <aqueduct/emu/host_kernel.hpp>
#include <aqueduct/kfd/driver.hpp>
#include <aqueduct/kfd/events.hpp>
#include <aqueduct/kfd/memory.hpp>
#include <aqueduct/kfd/queue_resources.hpp>
#include <aqueduct/runtime/any_device.hpp>
#include <aqueduct/runtime/emulation.hpp>
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

namespace aqueduct::runtime::detail {

using file_type = any_device_file;
using driver_ref = kfd::driver_ref<file_type>;

// Blocks on a KFD signal event by id (sync::event_waiter). WAIT_EVENTS takes milliseconds: the
// timeout is rounded up so a short wait still sleeps instead of polling.
struct kfd_waiter {
  driver_ref d;
  sync::event_status wait(std::uint32_t event_id, sync::nanoseconds timeout) noexcept {
    abi::kfd::event_data ev{};
    ev.event_id = event_id;
    abi::kfd::wait_events_args w{};
    w.events_ptr = reinterpret_cast<std::uint64_t>(&ev);
    w.num_events = 1;
    w.wait_for_all = 1;
    if (timeout == sync::infinite) {
      w.timeout = abi::kfd::wait_timeout_infinite;
    } else {
      const auto ms = (timeout.count() + 999'999) / 1'000'000;
      w.timeout = static_cast<std::uint32_t>(ms > 0x7FFFFFFF ? 0x7FFFFFFF : ms);
    }
    if (d.file().ioctl(abi::kfd::amdkfd_ioc_wait_events, &w) != 0) return sync::event_status::failed;
    if (w.wait_result == abi::kfd::wait_result_complete) return sync::event_status::signaled;
    if (w.wait_result == abi::kfd::wait_result_timeout) return sync::event_status::timed_out;
    return sync::event_status::failed;
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
};

struct system_state {
  explicit system_state(kfd::driver<file_type> d) : driver(std::move(d)) {}
  kfd::driver<file_type> driver;
  emu::device* emulator = nullptr;  // null on /dev/kfd
  std::string why;                  // how the device was chosen (for describe())
  emu::host_kernel_registry registry;
  std::unique_ptr<emulator_link> link;
  std::mutex event_mu;  // guards event_page creation and CREATE_EVENT
  std::optional<kfd::event_page<file_type>> event_page;
  std::deque<agent_state> agents;

  [[nodiscard]] driver_ref ref() const noexcept { return driver.ref(); }

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
