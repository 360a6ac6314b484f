// aqueduct/runtime/detail/buffer_cache.hpp — one GPU's kept buffers: memory an executable graph
// gave back when it was destroyed, handed out again to the next instantiation on that GPU instead
// of going back to the KFD (not API).
//
// Layer: runtime (not API). Why: an exec_graph (graph/exec_graph.hpp) writes every byte of its
// kernarg memory (one block per kernel node and replay slot) right after allocating it. Fresh
// memory costs an ALLOC_MEMORY_OF_GPU, a MAP_MEMORY_TO_GPU and an mmap, then one page fault per
// 4 KiB on the first write. For bench_graph's 1,000-node chain (4 slots, ~1.3 MB of kernargs)
// that was about a third of instantiate's time in this VM (perf, session 29: 29 % in the page
// fault handler). Kept buffers are taken back only whole, by a later graph, on the same GPU,
// for the same use, when no larger than twice what it asked for; they come back zeroed up to
// what was asked (fresh memory is zero, and a kernel's hidden arguments the runtime does not
// fill must read 0). At most `kept_bytes` per GPU; a buffer mapped to other GPUs too, or one
// past the limit, is freed as before. The kept memory goes when the system does.
// Under AddressSanitizer (AQUEDUCT_ASAN) nothing is kept, so a graph's packet that outlives its
// memory still faults on the emulated device.
// Thread safety: take/give from any thread (one mutex per GPU).
#pragma once

#include <aqueduct/config.hpp>
#include <aqueduct/kfd/memory.hpp>

#include <cstdint>
#include <cstring>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

namespace aqueduct::runtime::detail {

template <class F>
class buffer_cache {
 public:
  using buffer = kfd::buffer<F>;
  static constexpr std::uint64_t kept_bytes = std::uint64_t{64} << 20;  // per GPU
  static constexpr std::size_t kept_count = 32;

  buffer_cache() = default;
  buffer_cache(const buffer_cache&) = delete;
  buffer_cache& operator=(const buffer_cache&) = delete;

  // A kept buffer of `use` and at least `bytes` (at most twice that, in whole pages), its first
  // `bytes` zeroed; none: allocate one.
  [[nodiscard]] std::optional<buffer> take(std::uint64_t bytes, kfd::memory_use use) {
    std::optional<buffer> out;
    const std::uint64_t pages = (bytes + page_size - 1) / page_size * page_size;  // what an allocation would be
    {
      std::lock_guard lock(mu_);
      std::size_t best = kept_.size();
      for (std::size_t i = 0; i < kept_.size(); ++i) {
        const std::uint64_t s = kept_[i].size().value;
        if (kept_[i].use() != use || s < pages || s / 2 > pages) continue;
        if (best == kept_.size() || s < kept_[best].size().value) best = i;
      }
      if (best == kept_.size()) return out;
      held_ -= kept_[best].size().value;
      out.emplace(std::move(kept_[best]));
      if (best + 1 != kept_.size()) kept_[best] = std::move(kept_.back());
      kept_.pop_back();
    }
    std::memset(out->host(), 0, bytes);
    return out;
  }

  // `b` kept for a later take, if it is mapped on its own GPU only and fits; else freed here.
  void give(buffer&& b) noexcept {
#if !AQUEDUCT_ASAN
    if (!b || !b.host() || b.mapped_gpus().size() != 1 || b.mapped_gpus().front() != b.gpu_id()) return b.reset();
    {
      std::lock_guard lock(mu_);
      if (keep_locked(b)) return;
    }
    b.reset();  // refused: freed after the lock, as trim() does (the free is ioctls)
#else
    b.reset();
#endif
  }

  // Frees every kept buffer; the bytes freed.
  std::uint64_t trim() noexcept {
    std::vector<buffer> gone;
    std::uint64_t bytes = 0;
    {
      std::lock_guard lock(mu_);
      gone.swap(kept_);
      bytes = std::exchange(held_, 0);
    }
    return bytes;  // `gone` frees them, outside the lock
  }

  [[nodiscard]] std::uint64_t held_bytes() const {
    std::lock_guard lock(mu_);
    return held_;
  }

 private:
  // Under mu_: keeps `b` (moved from) if the limits allow; false (b untouched) if not.
  bool keep_locked(buffer& b) noexcept {
    if (kept_.size() >= kept_count || held_ + b.size().value > kept_bytes) return false;
    if (kept_.capacity() < kept_count) {
      try {
        kept_.reserve(kept_count);
      } catch (...) {
        return false;
      }
    }
    held_ += b.size().value;
    kept_.push_back(std::move(b));
    return true;
  }

  mutable std::mutex mu_;
  std::vector<buffer> kept_;
  std::uint64_t held_ = 0;
};

}  // namespace aqueduct::runtime::detail
