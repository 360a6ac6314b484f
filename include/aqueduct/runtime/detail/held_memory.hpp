// aqueduct/runtime/detail/held_memory.hpp — memory a queue keeps alive for an owner that went
// away while the queue's commands may still read or write it (not API).
//
// Layer: runtime (detail). Every runtime queue's state has one (queue_waits::hold_until_done is
// its API). An entry stays until the queue's progress reaches the value `end` it was handed over
// with (what the queue had submitted then), or until the queue is destroyed: the queue releases
// everything right after DESTROY_QUEUE, once the device reads nothing of it any more. The first
// user: an exec graph destroyed after a failed replay, whose other queues wait forever on a
// signal in its memory that the failed node will never set (graph/exec_graph.hpp, drain).
// Entries the progress passed are released by the queue where it already waits (try_finish) and
// at the next hold — never on a submit path, which stays as issue 11 measured it.
// Thread safety: thread-safe (a mutex; `any_` lets release_reached skip it with one load).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <new>
#include <utility>
#include <vector>

namespace aqueduct::runtime::detail {

class held_memory {
 public:
  held_memory() = default;
  held_memory(const held_memory&) = delete;
  held_memory& operator=(const held_memory&) = delete;
  ~held_memory() { release_all(); }

  // Keeps `p` until release_reached(progress >= end) or release_all(). On an allocation failure
  // `p` is leaked instead (never freed while the device may still use it).
  void hold(std::uint64_t end, std::shared_ptr<const void> p) noexcept {
    std::lock_guard lock(mu_);
    try {
      v_.emplace_back(end, std::move(p));
    } catch (...) {
      (void)new (std::nothrow) std::shared_ptr<const void>(std::move(p));
    }
    any_.store(true, std::memory_order_release);
  }
  // Releases what the queue's progress has passed (each owner is destroyed here, on this thread).
  void release_reached(std::uint64_t progress) noexcept {
    if (!any_.load(std::memory_order_acquire)) return;
    std::lock_guard lock(mu_);
    std::erase_if(v_, [&](const entry& e) { return progress >= e.first; });
    any_.store(!v_.empty(), std::memory_order_release);
  }
  void release_all() noexcept {
    std::lock_guard lock(mu_);
    v_.clear();
    any_.store(false, std::memory_order_release);
  }
  [[nodiscard]] std::size_t size() const noexcept {
    std::lock_guard lock(mu_);
    return v_.size();
  }

 private:
  using entry = std::pair<std::uint64_t, std::shared_ptr<const void>>;
  mutable std::mutex mu_;
  std::vector<entry> v_;
  std::atomic<bool> any_{false};
};

}  // namespace aqueduct::runtime::detail
