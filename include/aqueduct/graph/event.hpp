// aqueduct/graph/event.hpp — `async_event`: a host-side flag a task can co_await, set from any
// thread (a host thread handing work to a graph program, tests).
//
// Layer: graph. co_await of an event that is set continues at once; otherwise the task waits on
// its reactor, which sleeps (no CPU) until set() wakes it. The wait is cancellable: a stop of the
// run ends it with errc::cancelled naming the co_await. Inside capture() an event cannot be
// recorded (the device cannot wait for a host flag): awaiting one there fails with
// errc::not_supported naming the co_await — use a signal (graph/eager.hpp) instead.
// Thread safety: set/reset/is_set from any thread; awaited from tasks of one reactor at a time.
#pragma once

#include <aqueduct/core/result.hpp>
#include <aqueduct/graph/context.hpp>
#include <aqueduct/graph/reactor.hpp>

#include <atomic>
#include <coroutine>
#include <source_location>
#include <string>
#include <thread>

namespace aqueduct::graph {

class async_event {
 public:
  explicit async_event(bool set = false) noexcept : set_(set) {}
  async_event(const async_event&) = delete;
  async_event& operator=(const async_event&) = delete;

  // Wakes the reactor of a task waiting on it.
  void set() noexcept {
    // `setting_` is raised before the flag and lowered after the wake: a waiter that saw the flag
    // (its last poll) does not let its task, and so the reactor, end until this set() stopped
    // touching the reactor (ThreadSanitizer saw ~reactor destroy its condition variable while a
    // set() on another thread was still signalling it).
    setting_.fetch_add(1, std::memory_order_seq_cst);
    // seq_cst with the reactor's clearing of its wake flag: a set() that races with the reactor
    // going to sleep is seen either by its last poll or by its wake flag.
    set_.store(true, std::memory_order_seq_cst);
    if (reactor* r = waiting_.load(std::memory_order_acquire)) r->wake();
    setting_.fetch_sub(1, std::memory_order_release);
  }
  void reset() noexcept { set_.store(false, std::memory_order_release); }
  [[nodiscard]] bool is_set() const noexcept { return set_.load(std::memory_order_seq_cst); }

  class awaiter {
   public:
    awaiter(async_event& e, detail::context& c, std::source_location loc) noexcept : e_(e), ctx_(c), loc_(loc) {}
    awaiter(const awaiter&) = delete;
    awaiter& operator=(const awaiter&) = delete;
    ~awaiter() {
      while (e_.setting_.load(std::memory_order_acquire) != 0) std::this_thread::yield();  // a set() still waking the reactor
      ctx_.r->unwatch(p_);
    }

    [[nodiscard]] bool await_ready() const {
      if (ctx_.capturing())
        throw_failure(failure(errc::not_supported, "co_await of an async_event at " + detail::where(loc_) +
                                                       " cannot be captured: the device cannot wait for a host flag "
                                                       "(await a signal instead)"));
      return e_.is_set();
    }
    void await_suspend(std::coroutine_handle<> h) noexcept {
      p_.poll = [](detail::pending& p) noexcept { return static_cast<awaiter*>(p.owner)->e_.is_set(); };
      p_.owner = this;
      p_.waiter = h;
      p_.stop = ctx_.stop;
      p_.woken_by_wake = true;
      e_.waiting_.store(ctx_.r, std::memory_order_release);
      ctx_.r->watch(p_);
    }
    void await_resume() const {
      if (!e_.is_set() && ctx_.stop_requested())
        throw_failure(failure(errc::cancelled, "co_await of an async_event at " + detail::where(loc_) +
                                                   " ended: the run was asked to stop"));
    }

   private:
    async_event& e_;
    detail::context& ctx_;
    std::source_location loc_;
    detail::pending p_{};
  };
  [[nodiscard]] awaiter lower(detail::context& c, std::source_location loc) noexcept { return awaiter(*this, c, loc); }

 private:
  std::atomic<bool> set_;
  std::atomic<reactor*> waiting_{nullptr};
  std::atomic<int> setting_{0};  // set() calls between raising the flag and finishing the wake
};

}  // namespace aqueduct::graph
