// aqueduct/sync/signal_pool.hpp — `signal_pool`: completion signals that are recycled only after
// the work that last used them has completed (DESIGN.md §1 requirement 2).
//
// Layer: sync. The pool hands out `pooled_signal`s (move-only owners) over caller-supplied
// amd_signal storage in GPU-visible memory. Releasing a pooled_signal does not make it free: it
// becomes *retiring*, and moves to the free list only once its value has been observed (acquire)
// at 0, i.e. the packet processor has decremented it for every packet that used it. A signal
// released before its work was even submitted must be stored to 0 by its owner first
// (`pooled_signal::release_unused`). Event mailbox and event id set in the storage are kept
// across recycling, so waits on a recycled signal still block on its KFD event.
// Costs: everything is allocated in the constructor; acquire/release allocate nothing, take no
// lock and make no system call. Thread safety: acquire/reclaim/the counters from one thread at a
// time (one pool per producer thread, or under the caller's lock); a pooled_signal may be
// released (destroyed) on ANY thread concurrently — released signals go onto a lock-free stack
// that the acquiring thread takes over whole, so there is no ABA.
#pragma once

#include <aqueduct/abi/amd_signal.hpp>
#include <aqueduct/core/result.hpp>
#include <aqueduct/sync/signal.hpp>
#include <aqueduct/sync/wait.hpp>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <span>
#include <string>
#include <utility>

namespace aqueduct::sync {

class signal_pool;

// Owns one signal of a pool until destroyed or released; then the pool retires it.
class pooled_signal {
 public:
  pooled_signal() noexcept = default;
  pooled_signal(pooled_signal&& o) noexcept : pool_(std::exchange(o.pool_, nullptr)), sig_(o.sig_) {}
  pooled_signal& operator=(pooled_signal&& o) noexcept {
    if (this != &o) {
      reset();
      pool_ = std::exchange(o.pool_, nullptr);
      sig_ = o.sig_;
    }
    return *this;
  }
  ~pooled_signal() { reset(); }

  [[nodiscard]] signal_ref ref() const noexcept;
  [[nodiscard]] std::uint64_t handle() const noexcept { return ref().handle(); }
  explicit operator bool() const noexcept { return pool_ != nullptr; }

  // Give the signal back; it is recycled once its value reaches 0.
  void reset() noexcept;
  // Give back a signal whose work was never submitted: stores 0 first, so it is free at once.
  void release_unused() noexcept {
    if (pool_) ref().store(0, std::memory_order_relaxed);
    reset();
  }

 private:
  friend class signal_pool;
  pooled_signal(signal_pool* p, abi::amd_signal* s) noexcept : pool_(p), sig_(s) {}
  signal_pool* pool_ = nullptr;
  // The signal itself, not its index in the pool: ref() is one load, not the pool's storage and an
  // index (a `co_await until(...)` of a ready signal, every wait and barrier: issue 12); reset()
  // derives the index.
  abi::amd_signal* sig_ = nullptr;
};

class signal_pool {
 public:
  // `storage` must outlive the pool. If `initialize`, every signal is set to kind user, value 0,
  // no event; otherwise the caller initialized them (e.g. with event mailboxes) and each value
  // must be 0 (free).
  explicit signal_pool(std::span<abi::amd_signal> storage, bool initialize = true)
      : storage_(storage),
        free_(std::make_unique<std::uint32_t[]>(storage.size())),
        pending_(std::make_unique<std::uint32_t[]>(storage.size())),
        next_(std::make_unique<std::uint32_t[]>(storage.size())) {
    AQUEDUCT_ASSERT(storage.size() < (1ull << 32) - 1, "signal_pool: too many signals");
    for (std::size_t i = 0; i < storage.size(); ++i) {
      if (initialize) signal_ref::initialize(storage[i], 0);
      AQUEDUCT_ASSERT(signal_ref(&storage[i]).load(std::memory_order_relaxed) == 0, "signal_pool: signal not free");
      free_[free_count_++] = static_cast<std::uint32_t>(storage.size() - 1 - i);  // hand out index 0 first
    }
  }
  signal_pool(const signal_pool&) = delete;
  signal_pool& operator=(const signal_pool&) = delete;
  ~signal_pool() {
    AQUEDUCT_ASSERT(outstanding_.load(std::memory_order_acquire) == 0, "signal_pool destroyed while signals are handed out");
  }

  // A signal whose value is `initial_value` (release store). When no signal is free, retiring
  // ones are polled until one completes or `timeout` passes (then errc::out_of_resources).
  result<pooled_signal> try_acquire(std::int64_t initial_value, nanoseconds timeout = nanoseconds::zero()) {
    if (free_count_ == 0 && reclaim() == 0) {
      if (timeout > nanoseconds::zero()) {
        // The one wait loop, nothing to block on (a retiring signal raises no event of its own
        // here): back off until one retired or the deadline.
        no_events none;
        (void)wait_until(
            none, 0, false, wait_policy::block(), timeout, [&] { return reclaim() != 0; }, never_stopped{},
            [](nanoseconds) { return failure(errc::out_of_resources); });
      }
      if (free_count_ == 0) return exhausted();
    }
    const std::uint32_t i = free_[--free_count_];
    outstanding_.fetch_add(1, std::memory_order_relaxed);
    signal_ref(&storage_[i]).store(initial_value, std::memory_order_release);
    return pooled_signal(this, &storage_[i]);
  }
  pooled_signal acquire(std::int64_t initial_value, nanoseconds timeout = nanoseconds::zero()) {
    return try_acquire(initial_value, timeout).value();
  }

  // Take over everything released so far, then move every retiring signal whose value is 0 to
  // the free list; returns how many moved.
  std::size_t reclaim() noexcept {
    // acquire: synchronizes with every release-push of the stack (an unbroken chain of RMWs).
    for (std::uint32_t h = released_.exchange(0, std::memory_order_acquire); h != 0; h = next_[h - 1])
      pending_[pending_count_++] = h - 1;
    std::size_t moved = 0;
    for (std::size_t k = 0; k < pending_count_;) {
      const std::uint32_t i = pending_[k];
      // acquire: the processor's last write to memory the signal guarded happens-before reuse.
      if (signal_ref(&storage_[i]).load(std::memory_order_acquire) == 0) {
        free_[free_count_++] = i;
        pending_[k] = pending_[--pending_count_];
        ++moved;
      } else {
        ++k;
      }
    }
    return moved;
  }

  [[nodiscard]] std::size_t capacity() const noexcept { return storage_.size(); }
  [[nodiscard]] std::size_t free_count() const noexcept { return free_count_; }
  // Released but not yet recycled (their work may still run).
  [[nodiscard]] std::size_t retiring_count() const noexcept {
    std::size_t n = pending_count_;
    for (std::uint32_t h = released_.load(std::memory_order_acquire); h != 0; h = next_[h - 1]) ++n;
    return n;
  }
  // Handed out and not yet released.
  [[nodiscard]] std::size_t outstanding() const noexcept { return outstanding_.load(std::memory_order_acquire); }

 private:
  friend class pooled_signal;
  // Any thread: push onto the released stack (Treiber push; the only pop is reclaim's exchange).
  void retire(std::uint32_t i) noexcept {
    std::uint32_t h = released_.load(std::memory_order_relaxed);
    do {
      next_[i] = h;
    } while (!released_.compare_exchange_weak(h, i + 1, std::memory_order_release, std::memory_order_relaxed));
    const auto before = outstanding_.fetch_sub(1, std::memory_order_release);
    AQUEDUCT_ASSERT(before > 0, "signal_pool: retire without acquire");
    (void)before;
  }
  failure exhausted() const {
    const std::size_t retiring = retiring_count();
    std::string d = "all " + std::to_string(storage_.size()) + " signals are in use (" + std::to_string(outstanding()) +
                    " held, " + std::to_string(retiring) + " released but not completed)";
    if (pending_count_ > 0) {
      d += "; e.g. ";
      signal_ref(&storage_[pending_[0]]).describe(d);
    }
    return failure(errc::out_of_resources, std::move(d));
  }

  std::span<abi::amd_signal> storage_;
  std::unique_ptr<std::uint32_t[]> free_;     // acquiring thread only
  std::unique_ptr<std::uint32_t[]> pending_;  // acquiring thread only: released, not completed
  std::unique_ptr<std::uint32_t[]> next_;     // links of the released stack
  std::size_t free_count_ = 0;
  std::size_t pending_count_ = 0;
  std::atomic<std::uint32_t> released_{0};  // top of the released stack: index + 1, 0 = empty
  std::atomic<std::size_t> outstanding_{0};
};

inline signal_ref pooled_signal::ref() const noexcept {
  AQUEDUCT_ASSERT(pool_ != nullptr, "empty pooled_signal");
  return signal_ref(sig_);
}

inline void pooled_signal::reset() noexcept {
  if (pool_) {
    signal_pool* p = std::exchange(pool_, nullptr);
    p->retire(static_cast<std::uint32_t>(sig_ - p->storage_.data()));
  }
}

}  // namespace aqueduct::sync
