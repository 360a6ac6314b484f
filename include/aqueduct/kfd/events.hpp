// aqueduct/kfd/events.hpp — KFD signal events: the event page, creating, waiting, destroying.
//
// Layer: kfd. On a dGPU userspace supplies the event page (spec/kfd.md §5.3): 4096 slots of 8
// bytes = 32 KiB of GTT, uncached, allocated with ALLOC_MEMORY_OF_GPU, whose BO handle is passed
// in event_page_offset on the FIRST CREATE_EVENT only (a second page is -EINVAL). A signal
// event's slot in that page is its mailbox: the CP's RELEASE_MEM writes a value there and raises
// an interrupt with event_trigger_data, which wakes WAIT_EVENTS. Unsignaled slots hold all ones.
//
// Thread safety: `event::try_wait` may be called from several threads at once (the kernel
// serializes); creation and destruction are owned by one thread. The event_page must outlive its
// events.
#pragma once

#include <aqueduct/abi/kfd_ioctl.hpp>
#include <aqueduct/core/result.hpp>
#include <aqueduct/kfd/driver.hpp>
#include <aqueduct/kfd/memory.hpp>

#include <cstdint>
#include <cstring>
#include <string>
#include <utility>

namespace aqueduct::kfd {

template <device_file F>
class event;

// The 32 KiB signal event page. Do not move it once events exist (they point to it).
template <device_file F>
class event_page {
 public:
  [[nodiscard]] static result<event_page> try_create(driver_ref<F> d, const node& gpu) {
    event_page p;
    AQUEDUCT_TRY(p.bo_, buffer<F>::try_allocate(d, gpu, byte_count(abi::kfd::event_page_size), memory_use::event_page));
    std::memset(p.bo_.host(), 0xFF, abi::kfd::event_page_size);  // unsignaled = all ones (spec §5.3)
    return p;
  }
  [[nodiscard]] const buffer<F>& bo() const noexcept { return bo_; }
  // On a multi-GPU machine every GPU that signals events must see the page.
  [[nodiscard]] result<void> try_map_to(const node& gpu) { return bo_.try_map_to(gpu); }
  // Whether the kernel has been given the page (on the first CREATE_EVENT).
  [[nodiscard]] bool registered() const noexcept { return registered_; }
  [[nodiscard]] std::uint64_t* slot(std::uint32_t index) const noexcept {
    AQUEDUCT_ASSERT(index < abi::kfd::signal_event_limit, "event slot index");
    return static_cast<std::uint64_t*>(bo_.host()) + index;
  }
  [[nodiscard]] gpu_va slot_va(std::uint32_t index) const noexcept { return bo_.va() + byte_count(8ull * index); }

  event_page() = default;
  event_page(event_page&&) noexcept = default;
  event_page& operator=(event_page&&) noexcept = default;
  // Once registered, the kernel refuses to free the page (FREE_MEMORY_OF_GPU -> -EPERM) and frees
  // it when the KFD file is closed: only the CPU mapping is dropped here.
  ~event_page() {
    if (registered_) bo_.detach_to_kernel();
  }

 private:
  template <device_file>
  friend class event;
  buffer<F> bo_;
  bool registered_ = false;
};

// A signal event (KFD_IOC_EVENT_SIGNAL), or a memory event (try_create_memory); move-only,
// DESTROY_EVENT on destruction.
template <device_file F>
class event {
 public:
  event() = default;
  event(event&& o) noexcept
      : d_(o.d_), page_(std::exchange(o.page_, nullptr)), id_(o.id_), slot_(o.slot_), trigger_(o.trigger_),
        live_(std::exchange(o.live_, false)) {}
  event& operator=(event&& o) noexcept {
    if (this != &o) {
      reset();
      d_ = o.d_;
      page_ = std::exchange(o.page_, nullptr);
      id_ = o.id_;
      slot_ = o.slot_;
      trigger_ = o.trigger_;
      live_ = std::exchange(o.live_, false);
    }
    return *this;
  }
  event(const event&) = delete;
  event& operator=(const event&) = delete;
  ~event() { reset(); }

  [[nodiscard]] static result<event> try_create_signal(driver_ref<F> d, event_page<F>& page, bool auto_reset = true) {
    abi::kfd::create_event_args a{};
    a.event_type = abi::kfd::event_signal;
    a.auto_reset = auto_reset ? 1 : 0;
    if (!page.registered_) a.event_page_offset = page.bo_.handle();
    AQUEDUCT_TRY_VOID(d.try_ioctl(abi::kfd::amdkfd_ioc_create_event, &a, "signal event"));
    page.registered_ = true;
    event e;
    e.d_ = d;
    e.page_ = &page;
    e.id_ = a.event_id;
    e.slot_ = a.event_slot_index;
    e.trigger_ = a.event_trigger_data;
    e.live_ = true;
    if (e.slot_ >= abi::kfd::signal_event_limit)
      return failure(errc::ioctl_failed, "AMDKFD_IOC_CREATE_EVENT returned slot " + std::to_string(e.slot_) +
                                             " outside the 4096-slot event page");
    return e;
  }

  // A memory event (KFD_IOC_EVENT_MEMORY, auto-reset): the kernel sets every one of the process's
  // on a GPU VM fault, with the faulting page and GPU in the event data a WAIT_EVENTS that it
  // completes copies back (kfd_events.c: kfd_signal_vm_fault_event, copy_signaled_event_data).
  // It has no slot in the event page: mailbox() must not be used.
  [[nodiscard]] static result<event> try_create_memory(driver_ref<F> d) {
    abi::kfd::create_event_args a{};
    a.event_type = abi::kfd::event_memory;
    a.auto_reset = 1;
    AQUEDUCT_TRY_VOID(d.try_ioctl(abi::kfd::amdkfd_ioc_create_event, &a, "memory event"));
    event e;
    e.d_ = d;
    e.id_ = a.event_id;
    e.live_ = true;
    return e;
  }

  [[nodiscard]] std::uint32_t id() const noexcept { return id_; }
  [[nodiscard]] std::uint32_t slot_index() const noexcept { return slot_; }
  [[nodiscard]] std::uint32_t trigger_data() const noexcept { return trigger_; }  // RELEASE_MEM int ctxid
  // The slot (mailbox) the GPU writes before raising the interrupt.
  [[nodiscard]] std::uint64_t* mailbox() const noexcept { return page_->slot(slot_); }
  [[nodiscard]] gpu_va mailbox_va() const noexcept { return page_->slot_va(slot_); }

  // WAIT_EVENTS on this event: true when signaled, false on timeout. timeout_ms 0 polls;
  // abi::kfd::wait_timeout_infinite waits forever.
  [[nodiscard]] result<bool> try_wait(std::uint32_t timeout_ms) const {
    abi::kfd::event_data ev{};
    ev.event_id = id_;
    abi::kfd::wait_events_args w{};
    w.events_ptr = reinterpret_cast<std::uint64_t>(&ev);
    w.num_events = 1;
    w.wait_for_all = 1;
    w.timeout = timeout_ms;
    AQUEDUCT_TRY_VOID(d_.try_ioctl(abi::kfd::amdkfd_ioc_wait_events, &w, "event " + std::to_string(id_)));
    if (w.wait_result == abi::kfd::wait_result_complete) return true;
    if (w.wait_result == abi::kfd::wait_result_timeout) return false;
    return failure(errc::ioctl_failed, "AMDKFD_IOC_WAIT_EVENTS reported wait_result " + std::to_string(w.wait_result) +
                                           " for event " + std::to_string(id_));
  }
  [[nodiscard]] result<void> try_set() const {
    abi::kfd::set_event_args a{id_, 0};
    return d_.try_ioctl(abi::kfd::amdkfd_ioc_set_event, &a, "event " + std::to_string(id_));
  }
  [[nodiscard]] result<void> try_reset() const {
    abi::kfd::reset_event_args a{id_, 0};
    return d_.try_ioctl(abi::kfd::amdkfd_ioc_reset_event, &a, "event " + std::to_string(id_));
  }

  [[nodiscard]] result<void> try_destroy() noexcept {
    if (!live_) return ok();
    live_ = false;
    abi::kfd::destroy_event_args a{id_, 0};
    return d_.try_ioctl(abi::kfd::amdkfd_ioc_destroy_event, &a, "event " + std::to_string(id_));
  }
  void reset() noexcept { (void)try_destroy(); }
  [[nodiscard]] explicit operator bool() const noexcept { return live_; }

 private:
  driver_ref<F> d_{};
  event_page<F>* page_ = nullptr;
  std::uint32_t id_ = 0, slot_ = 0, trigger_ = 0;
  bool live_ = false;
};

}  // namespace aqueduct::kfd
