// aqueduct/graph/device_events.hpp — how the reactor sleeps on a device: the KFD events of one
// system (not API).
//
// Layer: graph. Every completion aqueduct's queues and signals report also raises a KFD signal
// event (an AQL queue's progress signal, a PM4 queue's RELEASE_MEM interrupt, an SDMA queue's
// FENCE + TRAP, a pooled signal's mailbox). A `kfd_event_source` lets the reactor block on any
// of the events its pending waits name, in one AMDKFD_IOC_WAIT_EVENTS (wait_for_all = 0), plus
// one event of its own that wake() sets with AMDKFD_IOC_SET_EVENT, so a coroutine scheduled
// from another thread or a stop request ends the sleep at once. One source per reactor and
// system, made on first use and kept with the reactor (reactor attachments); it keeps the
// system alive. If the event cannot be made (no event slots left) the reactor backs off instead.
// Thread safety: wait_any from the reactor's thread; wake from any thread.
#pragma once

#include <aqueduct/abi/kfd_ioctl.hpp>
#include <aqueduct/graph/reactor.hpp>
#include <aqueduct/kfd/events.hpp>
#include <aqueduct/runtime/detail/state.hpp>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace aqueduct::graph::detail {

class kfd_event_source final : public event_source, public reactor::attachment {
 public:
  kfd_event_source(runtime::detail::keep_alive keep, runtime::detail::driver_ref d,
                   kfd::event<runtime::detail::file_type> wake, runtime::detail::device_faults* faults = nullptr) noexcept
      : keep_(std::move(keep)), d_(d), wake_(std::move(wake)), faults_(faults) {}

  // A source for the system of agent `a` (its own wake event on the system's event page).
  [[nodiscard]] static result<std::unique_ptr<kfd_event_source>> try_create(runtime::detail::agent_state& a) {
    AQUEDUCT_TRY(auto ev, a.sys->try_make_event(*a.node));
    return std::make_unique<kfd_event_source>(runtime::detail::keep_system(a), a.sys->ref(), std::move(ev), &a.sys->faults);
  }

  bool wait_any(std::span<const std::uint32_t> ids, sync::nanoseconds timeout) noexcept override {
    buf_.clear();
    const auto add = [&](std::uint32_t id) {
      for (const auto& e : buf_)
        if (e.event_id == id) return;
      abi::kfd::event_data e{};
      e.event_id = id;
      buf_.push_back(e);
    };
    add(wake_.id());
    // The system's memory event: a GPU memory fault wakes the reactor, and is recorded for the
    // waits it stops (runtime/detail/device_faults.hpp).
    const std::uint32_t memory = faults_ ? faults_->event_id() : 0;
    if (memory != 0) add(memory);
    for (std::uint32_t id : ids) add(id);
    abi::kfd::wait_events_args w{};
    w.events_ptr = reinterpret_cast<std::uint64_t>(buf_.data());
    w.num_events = static_cast<std::uint32_t>(buf_.size());
    w.wait_for_all = 0;
    // WAIT_EVENTS takes milliseconds: round up so that a short sleep still sleeps.
    const auto ms = (timeout.count() + 999'999) / 1'000'000;
    w.timeout = static_cast<std::uint32_t>(std::clamp<std::int64_t>(ms, 1, 0x7FFFFFFF));
    ++waits_;
    const bool ok = d_.file().ioctl(abi::kfd::amdkfd_ioc_wait_events, &w) == 0 && w.wait_result != abi::kfd::wait_result_fail;
    if (ok && memory != 0 && w.wait_result == abi::kfd::wait_result_complete)
      faults_->record(buf_[1].memory_exception_data);  // gpu_id 0 (not activated): ignored
    return ok;
  }
  void wake() noexcept override { (void)wake_.try_set(); }

  // AMDKFD_IOC_WAIT_EVENTS calls made (tests: an idle run sleeps in the kernel, not in a spin).
  [[nodiscard]] std::uint64_t waits() const noexcept { return waits_; }

 private:
  runtime::detail::keep_alive keep_;  // declared first: released last
  runtime::detail::driver_ref d_;
  kfd::event<runtime::detail::file_type> wake_;
  runtime::detail::device_faults* faults_ = nullptr;
  std::vector<abi::kfd::event_data> buf_;
  std::uint64_t waits_ = 0;
};

// The reactor's event source for the system of agent `a`, made on first use; null when none
// can be made (the reactor then backs off between polls).
[[nodiscard]] inline kfd_event_source* events_of(reactor& r, runtime::detail::agent_state& a) {
  return r.attached<kfd_event_source>(a.sys, [&]() -> std::unique_ptr<kfd_event_source> {
    auto s = kfd_event_source::try_create(a);
    return s ? std::move(*s) : nullptr;
  });
}

}  // namespace aqueduct::graph::detail
