// aqueduct/emu/events.hpp — KFD events of the emulated device: the signal page, event ids,
// SET/RESET, WAIT_EVENTS with event ages, and interrupt delivery (spec/kfd.md §5.3; kfd_events.c).
//
// Layer: emu. Semantics kept from the kernel:
//   - signal events (SIGNAL, DEBUG) take ids = slot indexes from 0 up to signal_mapped_size/8 - 1
//     (256 slots until the page is mmapped or supplied by userspace, then its size / 8); the slot is
//     set to all-ones at creation; full table → -ENOSPC; other types get ids from
//     (INT_MAX >> 1) + 1 upward;
//   - SET/RESET only on SIGNAL events (-EINVAL otherwise or for an unknown id);
//   - set_event: signaled = !auto_reset || nobody waiting; the event age is incremented (starts at 1,
//     never wraps back to 0/1); every waiter is activated;
//   - a wait consumes an auto-reset event when it starts; a non-zero last_event_age that differs
//     from the current age completes at once; the age is copied back for such waiters;
//   - a GPU VM fault (vm_fault) sets every MEMORY event with the fault's page and gpu_id, which a
//     WAIT_EVENTS that it completes copies back (copy_signaled_event_data);
//   - an interrupt for event id N (signal_interrupt) counts only when slot N is not all-ones; it then
//     resets the slot and sets the event; otherwise every slot that is not all-ones is scanned.
// Thread safety: every member is safe to call from any thread (one mutex + condition variable).
#pragma once

#include <aqueduct/abi/kfd_ioctl.hpp>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <span>
#include <vector>

namespace aqueduct::emu {

class event_table {
 public:
  // Interrupts raised so far (signal_interrupt calls: every AQL completion signal with a mailbox,
  // PM4 RELEASE_MEM with an interrupt, SDMA TRAP), for tests and benchmarks.
  [[nodiscard]] std::uint64_t interrupts() const noexcept { return interrupts_.load(std::memory_order_relaxed); }
  // The signal page: `slots` points to `bytes` bytes (a user BO's memory or the emulator's page).
  // Fails with -EINVAL when a page is already set (kfd_ioctl_create_event).
  int set_page(std::uint64_t* slots, std::uint64_t bytes, bool user_supplied) {
    std::lock_guard lock(m_);
    if (slots_) return -EINVAL;
    slots_ = slots;
    const std::uint64_t n = std::min<std::uint64_t>(bytes, abi::kfd::event_page_size);
    for (std::uint64_t i = 0; i < n / 8; ++i) slot_ref(i).store(abi::kfd::unsignaled_event_slot, std::memory_order_relaxed);
    signal_mapped_size_ = user_supplied ? n : 256 * 8;
    return 0;
  }
  [[nodiscard]] bool has_page() const {
    std::lock_guard lock(m_);
    return slots_ != nullptr;
  }
  // mmap of the events page sets how many slots userspace can see (kfd_event_mmap).
  void note_mmapped(std::uint64_t bytes) {
    std::lock_guard lock(m_);
    signal_mapped_size_ = std::min<std::uint64_t>(bytes, abi::kfd::event_page_size);
  }
  [[nodiscard]] std::uint64_t* slots() const {
    std::lock_guard lock(m_);
    return slots_;
  }

  // CREATE_EVENT after the page question is settled. Fills the out fields of `a`.
  int create(abi::kfd::create_event_args& a) {
    std::lock_guard lock(m_);
    event ev;
    ev.type = a.event_type;
    ev.auto_reset = a.auto_reset != 0;
    if (gpu_signalable(ev.type)) {
      if (!slots_) return -ENOMEM;  // caller allocates the page first
      if (signal_count_ == signal_mapped_size_ / 8) return -ENOSPC;
      std::uint32_t id = 0;
      while (events_.count(id)) ++id;
      if (id >= signal_mapped_size_ / 8) return -ENOSPC;
      ev.id = id;
      slot_ref(id).store(abi::kfd::unsignaled_event_slot, std::memory_order_release);
      ++signal_count_;
      a.event_page_offset = abi::kfd::mmap_type_events;
      a.event_slot_index = id;
    } else {
      std::uint32_t id = next_other_id_;
      while (events_.count(id)) ++id;
      if (id > abi::kfd::last_nonsignal_event_id) return -ENOMEM;
      next_other_id_ = id + 1;
      ev.id = id;
    }
    a.event_id = ev.id;
    a.event_trigger_data = ev.id;
    events_.emplace(ev.id, std::move(ev));
    return 0;
  }

  int destroy(std::uint32_t id) {
    std::lock_guard lock(m_);
    auto it = events_.find(id);
    if (it == events_.end()) return -EINVAL;
    for (waiter* w : it->second.waiters) w->destroyed = true;
    if (gpu_signalable(it->second.type)) --signal_count_;
    events_.erase(it);
    cv_.notify_all();
    return 0;
  }

  int set(std::uint32_t id) {
    std::lock_guard lock(m_);
    auto it = events_.find(id);
    if (it == events_.end() || it->second.type != abi::kfd::event_signal) return -EINVAL;
    set_event(it->second);
    return 0;
  }
  int reset(std::uint32_t id) {
    std::lock_guard lock(m_);
    auto it = events_.find(id);
    if (it == events_.end() || it->second.type != abi::kfd::event_signal) return -EINVAL;
    it->second.signaled = false;
    return 0;
  }

  // The GPU raised an interrupt carrying event id `id` (after writing its slot).
  void signal_interrupt(std::uint32_t id) {
    interrupts_.fetch_add(1, std::memory_order_relaxed);
    std::lock_guard lock(m_);
    if (!slots_) return;
    if (id < abi::kfd::signal_event_limit && slot_ref(id).load(std::memory_order_acquire) != abi::kfd::unsignaled_event_slot) {
      if (auto it = events_.find(id); it != events_.end() && gpu_signalable(it->second.type)) {
        slot_ref(id).store(abi::kfd::unsignaled_event_slot, std::memory_order_relaxed);
        set_event(it->second);
        return;
      }
    }
    // Unknown or stale id: scan every slot that has been written.
    for (auto& [eid, ev] : events_) {
      if (!gpu_signalable(ev.type) || eid >= abi::kfd::signal_event_limit) continue;
      if (slot_ref(eid).load(std::memory_order_acquire) != abi::kfd::unsignaled_event_slot) {
        slot_ref(eid).store(abi::kfd::unsignaled_event_slot, std::memory_order_relaxed);
        set_event(ev);
      }
    }
  }

  // A GPU VM fault of the process on `gpu_id` at `address` (kfd_signal_vm_fault_event): every
  // MEMORY event of the process gets the fault's data and is set. The kernel reports the faulting
  // page (page_addr << PAGE_SHIFT) and the user gpu_id; its failure bits come from the VM's
  // protection-fault status, which the emulator does not model: it reports NotPresent (the only
  // fault it raises is an access outside every mapping), precise. Returns how many events were set
  // (0: the process has none; the kernel then only logs it).
  std::size_t vm_fault(std::uint32_t gpu_id, std::uint64_t address) {
    std::lock_guard lock(m_);
    abi::kfd::hsa_memory_exception_data d{};
    d.gpu_id = gpu_id;
    d.va = address & ~std::uint64_t{0xFFF};
    d.failure.NotPresent = 1;
    std::size_t n = 0;
    for (auto& [id, ev] : events_) {
      if (ev.type != abi::kfd::event_memory) continue;
      ev.memory = d;
      set_event(ev);
      ++n;
    }
    return n;
  }

  // WAIT_EVENTS. `data` is the user's array (already validated as addressable).
  int wait(abi::kfd::wait_events_args& a, abi::kfd::event_data* data) {
    std::unique_lock lock(m_);
    // Up to 8 events (every wait the runtime makes): the waiters on this stack, no allocation (a
    // wait on /dev/kfd allocates nothing in the process; the hot-path tests count the caller's).
    waiter few[8];
    const bool fits = a.num_events <= std::size(few);
    std::vector<waiter> many(fits ? 0 : a.num_events);
    const std::span<waiter> ws = fits ? std::span<waiter>(few, a.num_events) : std::span<waiter>(many);
    // init_event_waiter for each; an unknown id fails the whole call.
    for (std::uint32_t i = 0; i < a.num_events; ++i) {
      auto it = events_.find(data[i].event_id);
      if (it == events_.end()) {
        unregister(ws, i);
        return -EINVAL;
      }
      event& ev = it->second;
      ws[i].ev = &ev;
      ws[i].id = ev.id;
      ws[i].activated = ev.signaled;
      ev.signaled = ev.signaled && !ev.auto_reset;
      const std::uint64_t age = data[i].signal_event_data.last_event_age;
      if (ev.type == abi::kfd::event_signal && age != 0) {
        ws[i].age_enabled = true;
        if (ev.age != age) ws[i].activated = true;
      }
      if (!ws[i].activated) ev.waiters.push_back(&ws[i]);
    }
    const bool all = a.wait_for_all != 0;
    auto condition = [&]() -> std::uint32_t {
      std::uint32_t n = 0;
      for (auto& w : ws) {
        if (w.destroyed) return abi::kfd::wait_result_fail;
        if (w.activated) {
          if (!all) return abi::kfd::wait_result_complete;
          ++n;
        }
      }
      return n == ws.size() ? abi::kfd::wait_result_complete : abi::kfd::wait_result_timeout;
    };
    std::uint32_t res = condition();
    if (res == abi::kfd::wait_result_timeout && a.timeout != 0) {
      if (a.timeout == abi::kfd::wait_timeout_infinite) {
        cv_.wait(lock, [&] { return (res = condition()) != abi::kfd::wait_result_timeout; });
      } else {
        cv_.wait_for(lock, std::chrono::milliseconds(a.timeout),
                     [&] { return (res = condition()) != abi::kfd::wait_result_timeout; });
      }
    }
    // On completion (copy_signaled_event_data): an activated MEMORY event's fault data; a signal
    // event's age where the caller asked for ages.
    if (res == abi::kfd::wait_result_complete)
      for (std::uint32_t i = 0; i < a.num_events; ++i) {
        if (!ws[i].activated) continue;
        auto it = events_.find(ws[i].id);
        if (it == events_.end()) continue;
        if (it->second.type == abi::kfd::event_memory) data[i].memory_exception_data = it->second.memory;
        else if (ws[i].age_enabled) data[i].signal_event_data.last_event_age = it->second.age;
      }
    unregister(ws, a.num_events);
    a.wait_result = res;
    return res == abi::kfd::wait_result_fail ? -EIO : 0;
  }

  [[nodiscard]] std::uint64_t age_of(std::uint32_t id) const {
    std::lock_guard lock(m_);
    auto it = events_.find(id);
    return it == events_.end() ? 0 : it->second.age;
  }

 private:
  struct event;
  struct waiter {
    event* ev = nullptr;
    std::uint32_t id = 0;
    bool activated = false;
    bool age_enabled = false;
    bool destroyed = false;
  };
  struct event {
    std::uint32_t id = 0;
    std::uint32_t type = 0;
    bool auto_reset = false;
    bool signaled = false;
    std::uint64_t age = 1;
    abi::kfd::hsa_memory_exception_data memory{};  // MEMORY events: the last fault (vm_fault)
    std::vector<waiter*> waiters;
  };
  static bool gpu_signalable(std::uint32_t type) noexcept {
    return type == abi::kfd::event_signal || type == abi::kfd::event_debug_event;
  }
  std::atomic_ref<std::uint64_t> slot_ref(std::uint64_t i) const noexcept { return std::atomic_ref<std::uint64_t>(slots_[i]); }
  void set_event(event& ev) {
    ev.signaled = !ev.auto_reset || ev.waiters.empty();
    if (++ev.age == 0 || ev.age == 1) ev.age = 2;
    for (waiter* w : ev.waiters) w->activated = true;
    ev.waiters.clear();
    cv_.notify_all();
  }
  void unregister(std::span<waiter> ws, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
      if (!ws[i].ev || ws[i].destroyed) continue;
      if (auto it = events_.find(ws[i].id); it != events_.end()) std::erase(it->second.waiters, &ws[i]);
    }
  }

  std::atomic<std::uint64_t> interrupts_{0};

  mutable std::mutex m_;
  std::condition_variable cv_;
  std::uint64_t* slots_ = nullptr;
  std::uint64_t signal_mapped_size_ = 0;
  std::uint32_t signal_count_ = 0;
  std::uint32_t next_other_id_ = abi::kfd::first_nonsignal_event_id;
  std::map<std::uint32_t, event> events_;
};

}  // namespace aqueduct::emu
