// aqueduct/emu/queue_wakeup.hpp — the doorbell and wake-up of an emulated queue's processor thread.
//
// Layer: emu. The AQL (emu/aql_processor.hpp) and PM4 (emu/pm4_processor.hpp) processors each run
// one thread that sleeps until there may be work: `queue_wakeup` is that mechanism, their common
// base. A doorbell write records its value and wakes the thread; `notify` wakes it without one.
// The thread reads `wake_seq()` BEFORE it looks for work and then sleeps in
// `wait_for_wakeup(seen, timeout)` until the count moves on, a stop is requested or the timeout
// passes — so a wake-up that comes while it looks is never lost. `mu_` guards the stop flag; a
// processor guards its own shared state with the same mutex and may wait on `cv_` with its own
// predicates (notify() always wakes those; a doorbell wakes only wait_for_wakeup's sleepers).
// Thread safety: ring_doorbell, notify and doorbell_value may be called from any thread.
#pragma once

#include <aqueduct/config.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace aqueduct::emu {

class queue_wakeup {
 public:
  queue_wakeup(const queue_wakeup&) = delete;
  queue_wakeup& operator=(const queue_wakeup&) = delete;

  // The doorbell write (its value is the producer's write index/pointer). Wakes the thread if it
  // sleeps in wait_for_wakeup; a thread that is awake (looking for work, running a packet) is
  // not disturbed: the count moves on and it sees it before it sleeps. No lock, no system call
  // then: one store, one read-modify-write, one load (the emulator's doorbell cost when its
  // processor needs no waking; docs/benchmarks.md). Dekker-style: we bump the count, then read
  // the sleeper count (both seq_cst); a sleeper registers, then reads the count under the lock —
  // one of the two sees the other.
  void ring_doorbell(std::uint64_t value) noexcept {
    doorbell_.store(value, std::memory_order_release);
    wake_seq_.fetch_add(1, std::memory_order_seq_cst);
    if (sleepers_.load(std::memory_order_seq_cst) == 0) return;
    { std::lock_guard lock(mu_); }  // the sleeper is in cv_.wait (or has not checked yet)
    cv_.notify_all();
  }
  // Wakes the thread without a doorbell (e.g. a signal it may be waiting on changed).
  void notify() noexcept {
    {
      std::lock_guard lock(mu_);
      ++wake_seq_;
      notify_seq_.fetch_add(1, std::memory_order_relaxed);
    }
    cv_.notify_all();
  }
  // Asks the thread to stop at its next check, without waiting (the processor's stop() then joins
  // it). A queue being destroyed asks at once, so that its engine stops touching the queue's memory
  // even when the thread that joins it is slow to be scheduled (queue_engine::stop_engines_locked).
  void begin_stop() noexcept { (void)request_stop(); }
  [[nodiscard]] std::uint64_t doorbell_value() const noexcept { return doorbell_.load(std::memory_order_acquire); }
  // How many times the thread went to sleep in wait_for_wakeup (tests: whether an idle spin kept
  // it awake).
  [[nodiscard]] std::uint64_t sleeps() const noexcept { return sleeps_.load(std::memory_order_relaxed); }

 protected:
  queue_wakeup() = default;
  ~queue_wakeup() = default;

  // The wake-up count: read it before looking for work, then wait_for_wakeup(seen, ...).
  [[nodiscard]] std::uint64_t wake_seq() const { return wake_seq_.load(std::memory_order_seq_cst); }
  // Sleeps until a wake-up after `seen`, a stop request, or `timeout`.
  void wait_for_wakeup(std::uint64_t seen, std::chrono::microseconds timeout) {
    sleepers_.fetch_add(1, std::memory_order_seq_cst);
    sleeps_.fetch_add(1, std::memory_order_relaxed);
    {
      std::unique_lock lock(mu_);
      cv_.wait_for(lock, timeout, [&] { return stop_ || wake_seq_.load(std::memory_order_seq_cst) != seen; });
    }
    sleepers_.fetch_sub(1, std::memory_order_relaxed);
  }
  // The count of notify() calls and stop requests alone (doorbells do not move it): read it
  // before looking at what a packet waits for, then wait_for_notify(seen, ...).
  [[nodiscard]] std::uint64_t notify_seq() const { return notify_seq_.load(std::memory_order_acquire); }
  // Sleeps as wait_for_wakeup does, but a doorbell does not end the sleep: notify(), a stop or
  // the timeout do. For a thread held by a packet that no doorbell can satisfy (an AQL barrier
  // on signals, a PM4 WAIT_REG_MEM), which re-reads what it waits for as it backs off: the
  // packets a doorbell announces queue behind that one anyway, and a doorbell that woke the
  // thread cost the producer a lock and a futex wake per packet and the thread a context
  // switch (bench_graph eager_dispatch_emulated: docs/benchmarks.md, session 30).
  void wait_for_notify(std::uint64_t seen, std::chrono::microseconds timeout) {
    sleeps_.fetch_add(1, std::memory_order_relaxed);
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, timeout, [&] { return stop_ || notify_seq_.load(std::memory_order_relaxed) != seen; });
  }
  // After a ring runs dry, as a CP does: polls `ready()` (which should also watch wake_seq())
  // for up to `spin` before the caller sleeps in wait_for_wakeup. true: something to look at.
  template <class Ready>
  static bool poll_for(std::chrono::microseconds spin, Ready&& ready) noexcept {
    if (spin.count() <= 0) return false;
    const auto until = std::chrono::steady_clock::now() + spin;
    for (unsigned i = 1;; ++i) {
      if (ready()) return true;
      if ((i & 63) == 0 && std::chrono::steady_clock::now() >= until) return false;
      AQUEDUCT_CPU_RELAX();
    }
  }
  // Polled once per packet: a load, no lock (stop_ itself is written under mu_, for the waits).
  [[nodiscard]] bool stopping() const noexcept { return stop_requested_.load(std::memory_order_acquire); }
  // Sets the stop flag and wakes the thread; false if a stop was already requested.
  bool request_stop() noexcept {
    {
      std::lock_guard lock(mu_);
      if (stop_) return false;
      stop_ = true;
      stop_requested_.store(true, std::memory_order_release);
      ++wake_seq_;
      notify_seq_.fetch_add(1, std::memory_order_relaxed);
    }
    cv_.notify_all();
    return true;
  }

  mutable std::mutex mu_;       // stop_, and the state each processor guards with it
  std::condition_variable cv_;  // the processor thread sleeps here
  // Moves on at every wake-up (changed under mu_ by notify() and the processors, without it by
  // ring_doorbell); atomic so that the doorbell needs no lock.
  std::atomic<std::uint64_t> wake_seq_{0};
  std::atomic<unsigned> sleepers_{0};  // threads inside wait_for_wakeup
  std::atomic<std::uint64_t> notify_seq_{0};  // notify() and stops (changed under mu_)
  bool stop_ = false;
  std::atomic<bool> stop_requested_{false};  // = stop_, readable without mu_ (stopping())

 private:
  std::atomic<std::uint64_t> doorbell_{0};
  std::atomic<std::uint64_t> sleeps_{0};
};

}  // namespace aqueduct::emu
