// aqueduct/graph/reactor.hpp — the reactor: the run loop that turns completions into resumptions.
//
// Layer: graph. Every coroutine of a run is resumed on its reactor's thread: sync_wait runs the
// reactor on the caller's thread, a reactor_thread (graph/reactor_thread.hpp) on its own. Work
// reaches it two ways:
//   - schedule(h): a coroutine to resume, from any thread (a host callback finished elsewhere);
//   - watch(p): a pending completion (a queue's ticket, a signal's value) that the reactor polls;
//     when it holds, or the wait's stop is requested, the waiting coroutine is resumed.
// When nothing is ready it polls for `spin_for` (a completion is usually microseconds away on a
// GPU), then sleeps: on the KFD events of the pending waits (an `event_source`: every queue and
// signal of aqueduct raises its KFD event on completion, so the sleep ends when one may have
// completed), or, with nothing pending, on a condition variable until schedule() or a stop
// request wakes it. An idle program therefore uses no CPU (tests/graph/reactor.cpp measures the
// thread's CPU time). A sleep lasts at most `max_sleep`, which bounds the cost of a lost wake-up.
// Thread safety: schedule() and wake() from any thread; everything else from the reactor's
// thread (the one in run_until).
#pragma once

#include <aqueduct/config.hpp>
#include <aqueduct/graph/stop.hpp>
#include <aqueduct/sync/wait.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <coroutine>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

namespace aqueduct::graph {

namespace detail {

// Something whose events the reactor can sleep on: the KFD events of one device
// (graph/device_wait.hpp). wait_any blocks until one of `ids` (or the source's own wake event)
// fires or `timeout` passes; false if it cannot block at all (the reactor then backs off).
class event_source {
 public:
  virtual bool wait_any(std::span<const std::uint32_t> ids, sync::nanoseconds timeout) noexcept = 0;
  // From any thread: make a wait_any in progress (or the next one) return.
  virtual void wake() noexcept = 0;

 protected:
  ~event_source() = default;
};

// A completion the reactor polls (intrusive: it lives in the awaiting coroutine's frame).
struct pending {
  pending* prev = nullptr;
  pending* next = nullptr;
  bool (*poll)(pending&) noexcept = nullptr;  // the awaited completion is visible (or failed)
  void* owner = nullptr;                      // for poll (the awaiter)
  std::coroutine_handle<> waiter{};
  const stop_state* stop = nullptr;  // a cancellable wait: resumed when a stop is requested
  event_source* events = nullptr;    // how to sleep until poll() may change
  std::uint32_t event_id = 0;
  // Called once, when the reactor is about to sleep on event_id: makes the device raise that event
  // when poll() may change (a runtime queue's commands ask for no interrupt of their own: a waiter
  // about to block posts one, runtime::detail::arm_wake). Null: the event is raised anyway. False:
  // it could not (a full ring): the reactor sleeps in short slices instead.
  bool (*arm)(pending&) noexcept = nullptr;
  bool armed = false;
  bool arm_failed = false;
  // No event to sleep on, but whatever makes poll() true also calls reactor::wake() (a host-side
  // event): the reactor may sleep on its condition variable. Neither: it backs off instead.
  bool woken_by_wake = false;
  bool linked = false;
};

}  // namespace detail

struct reactor_options {
  sync::nanoseconds spin_for = std::chrono::microseconds(20);  // poll this long before sleeping
  sync::nanoseconds max_sleep = std::chrono::milliseconds(100);
};

class reactor final : public detail::wakeable {
 public:
  explicit reactor(reactor_options o = {}) : opt_(o) {}
  reactor(const reactor&) = delete;
  reactor& operator=(const reactor&) = delete;
  // Pending waits still linked are unlinked (their frames belong to tasks, not to the reactor).
  ~reactor() {
    while (head_) unwatch(*head_);
  }

  // From any thread: resume `h` on the reactor's thread.
  void schedule(std::coroutine_handle<> h) {
    {
      std::lock_guard lock(mu_);
      incoming_.push_back(h);
      has_incoming_.store(true, std::memory_order_seq_cst);
    }
    wake();
  }
  // Reactor thread: resume p.waiter once p.poll(p) holds (or p.stop is requested).
  void watch(detail::pending& p) noexcept {
    p.prev = nullptr;
    p.next = head_;
    if (head_) head_->prev = &p;
    head_ = &p;
    p.linked = true;
    p.armed = p.arm_failed = false;
    ++watched_;
  }
  void unwatch(detail::pending& p) noexcept {
    if (!p.linked) return;
    if (p.prev) p.prev->next = p.next;
    else head_ = p.next;
    if (p.next) p.next->prev = p.prev;
    p.prev = p.next = nullptr;
    p.linked = false;
    --watched_;
  }

  // Runs on the calling thread until done() holds.
  template <class Done>
  void run_until(Done&& done) {
    for (;;) {
      if (done()) return;
      if (run_once()) {
        backoff_ = sync::backoff{};
        continue;
      }
      if (done()) return;
      idle();
    }
  }
  // One round: resumes what was scheduled and what completed. False if nothing was.
  bool run_once() {
    bool any = false;
    if (has_incoming_.load(std::memory_order_acquire)) any |= run_incoming();
    if (head_) any |= poll_pending();
    return any;
  }

  // From any thread: end a sleep now (schedule and stop requests call it).
  void wake() noexcept override {
    woken_.store(true, std::memory_order_seq_cst);
    if (detail::event_source* s = sleeping_on_.load(std::memory_order_seq_cst)) {
      s->wake();
      return;
    }
    std::lock_guard lock(mu_);
    cv_.notify_one();
  }

  // Something kept with the reactor for its lifetime, made on first use per key (the KFD event
  // source of a system: graph/device_events.hpp). make() may return null (remembered as such).
  class attachment {
   public:
    virtual ~attachment() = default;
  };
  template <class T, class Make>
  T* attached(const void* key, Make&& make) {
    for (auto& a : attachments_)
      if (a.key == key) return static_cast<T*>(a.ptr.get());
    std::unique_ptr<T> p = make();
    T* raw = p.get();
    attachments_.push_back(attached_entry{key, std::move(p)});
    return raw;
  }

  [[nodiscard]] std::size_t watched() const noexcept { return watched_; }
  [[nodiscard]] std::uint64_t sleeps() const noexcept { return sleeps_; }
  [[nodiscard]] const reactor_options& options() const noexcept { return opt_; }

 private:
  bool run_incoming() {
    {
      std::lock_guard lock(mu_);
      running_.swap(incoming_);
      has_incoming_.store(false, std::memory_order_relaxed);
    }
    for (std::size_t i = 0; i < running_.size(); ++i) running_[i].resume();
    const bool any = !running_.empty();
    running_.clear();
    return any;
  }

  // Resumes every pending wait that completed, collected first (in batches) so that a resumed
  // coroutine may watch or unwatch others while the list is walked.
  bool poll_pending() {
    constexpr std::size_t batch = 32;
    detail::pending* ready[batch];
    std::size_t n = 0;
    for (detail::pending* p = head_; p && n < batch;) {
      detail::pending* next = p->next;
      if (p->poll(*p) || (p->stop && p->stop->stop_requested())) {
        unwatch(*p);
        ready[n++] = p;
      }
      p = next;
    }
    for (std::size_t i = 0; i < n; ++i) ready[i]->waiter.resume();
    return n != 0;
  }

  // Nothing ready: spin, then sleep on the pending waits' events (or the condition variable).
  void idle() {
    const auto spin_until = sync::clock::now() + opt_.spin_for;
    for (unsigned i = 0;; ++i) {
      if (has_incoming_.load(std::memory_order_acquire)) return;
      if (head_ && poll_any()) return;
      if ((i & 15) == 15 && sync::clock::now() >= spin_until) break;
      AQUEDUCT_CPU_RELAX();
    }
    woken_.store(false, std::memory_order_seq_cst);
    detail::event_source* src = nullptr;
    bool unblockable = false;
    ids_.clear();
    for (detail::pending* p = head_; p; p = p->next) {
      if (!p->events) {
        unblockable |= !p->woken_by_wake;
        continue;
      }
      if (!src) src = p->events;
      if (p->events == src) ids_.push_back(p->event_id);
      else unblockable = true;  // another device's events: sleep in short slices
      if (p->arm && !p->armed) {
        p->armed = true;
        p->arm_failed = !p->arm(*p);
      }
      unblockable |= p->arm_failed;
    }
    ++sleeps_;
    if (src) {
      sleeping_on_.store(src, std::memory_order_seq_cst);
      if (!has_incoming_.load(std::memory_order_seq_cst) && !woken_.load(std::memory_order_seq_cst) && !poll_any()) {
        const sync::nanoseconds slice = unblockable ? sync::nanoseconds(std::chrono::milliseconds(1)) : opt_.max_sleep;
        if (!src->wait_any(ids_, slice)) backoff_.pause();
      }
      sleeping_on_.store(nullptr, std::memory_order_seq_cst);
      return;
    }
    if (unblockable) {  // waits with nothing to sleep on (a host-side flag): back off
      backoff_.pause();
      return;
    }
    if (head_ && poll_any()) return;  // made true after the spin, before woken_ was cleared
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, opt_.max_sleep, [&] {
      return has_incoming_.load(std::memory_order_relaxed) || woken_.load(std::memory_order_relaxed);
    });
  }
  [[nodiscard]] bool poll_any() const noexcept {
    for (detail::pending* p = head_; p; p = p->next)
      if (p->poll(*p) || (p->stop && p->stop->stop_requested())) return true;
    return false;
  }

  struct attached_entry {
    const void* key;
    std::unique_ptr<attachment> ptr;
  };
  reactor_options opt_;
  std::vector<attached_entry> attachments_;  // destroyed last (declared first)
  detail::pending* head_ = nullptr;
  std::size_t watched_ = 0;
  std::uint64_t sleeps_ = 0;
  std::vector<std::uint32_t> ids_;
  sync::backoff backoff_;
  std::vector<std::coroutine_handle<>> running_;  // reactor thread only

  std::mutex mu_;  // guards incoming_ and the condition variable
  std::condition_variable cv_;
  std::vector<std::coroutine_handle<>> incoming_;
  std::atomic<bool> has_incoming_{false};
  std::atomic<bool> woken_{false};
  std::atomic<detail::event_source*> sleeping_on_{nullptr};
};

}  // namespace aqueduct::graph
