// aqueduct/runtime/detail/buffer_life.hpp — which runtime buffers are alive (not API): every
// `buffer<T>` the runtime allocated registers a liveness record here, with a generation number,
// and retires it when its memory is freed; a count of frees tells a reader whether anything was
// freed since it last looked.
//
// Layer: runtime. One table per process (addresses are the process's own: reserved VA ranges),
// never destroyed (buffers destroyed during static destruction still retire safely). A reader
// (graph/detail/liveness.hpp: an exec graph checking the buffers its nodes use before a replay)
// keeps shared records of the buffers it found; a record stays dead once its buffer is freed,
// even when a new buffer later gets the same address (it has a new record and generation).
// `frees()` grows with every retire, so a reader that saw the same count before needs to check
// nothing: one atomic load per replay in the steady state.
// Thread safety: thread-safe (a mutex around the table; records' `live` is atomic).
#pragma once

#include <atomic>
#include <cstdint>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>

namespace aqueduct::runtime::detail {

struct buffer_life {
  std::uint64_t va = 0, bytes = 0;
  std::uint64_t generation = 0;  // 1, 2, ... in allocation order, never reused
  std::atomic<bool> live{true};
};

class buffer_table {
 public:
  [[nodiscard]] static buffer_table& instance() noexcept {
    static buffer_table* t = new buffer_table;  // never destroyed: see the header comment
    return *t;
  }
  // A record for a buffer just allocated at [va, va + bytes); null if memory ran out (the buffer
  // is then not tracked).
  [[nodiscard]] std::shared_ptr<buffer_life> add(std::uint64_t va, std::uint64_t bytes) noexcept {
    try {
      auto l = std::make_shared<buffer_life>();
      l->va = va;
      l->bytes = bytes;
      std::lock_guard lock(mu_);
      l->generation = next_generation_++;
      live_[va] = l;
      return l;
    } catch (...) {
      return nullptr;
    }
  }
  // The buffer's memory is about to be freed.
  void retire(const std::shared_ptr<buffer_life>& l) noexcept {
    if (!l) return;
    l->live.store(false, std::memory_order_release);
    {
      std::lock_guard lock(mu_);
      if (auto it = live_.find(l->va); it != live_.end() && it->second == l) live_.erase(it);
    }
    frees_.fetch_add(1, std::memory_order_acq_rel);
  }
  // The live buffer holding address `a`, or null.
  [[nodiscard]] std::shared_ptr<buffer_life> find(std::uint64_t a) const {
    std::lock_guard lock(mu_);
    auto it = live_.upper_bound(a);
    if (it == live_.begin()) return nullptr;
    --it;
    return a < it->second->va + it->second->bytes ? it->second : nullptr;
  }
  // How many buffers were freed so far.
  [[nodiscard]] std::uint64_t frees() const noexcept { return frees_.load(std::memory_order_acquire); }

 private:
  buffer_table() = default;
  mutable std::mutex mu_;
  std::map<std::uint64_t, std::shared_ptr<buffer_life>> live_;  // by start address
  std::uint64_t next_generation_ = 1;
  std::atomic<std::uint64_t> frees_{0};
};

}  // namespace aqueduct::runtime::detail
