// aqueduct/kfd/suballocator.hpp — small device allocations carved out of 2 MiB blocks.
//
// Layer: kfd. DESIGN.md requirement 4: large allocations are aligned for 2 MiB pages and small
// VRAM allocations are sub-allocated from larger blocks, so that a thousand 4 KiB kernarg or
// signal buffers do not cost a thousand BOs (and a thousand GPU page-table updates).
// `range_allocator` is the bookkeeping (first fit over an ordered free list, coalescing frees);
// `vram_pool<F>` owns 2 MiB `buffer<F>` blocks of one memory use on one GPU and hands out
// move-only `pooled_buffer<F>`s that give their range back on destruction.
//
// Thread safety: not synchronized; a pool and its buffers belong to one thread (or its owner
// locks). Every pooled_buffer must be destroyed before its pool (asserted).
#pragma once

#include <aqueduct/core/assert.hpp>
#include <aqueduct/core/result.hpp>
#include <aqueduct/core/units.hpp>
#include <aqueduct/kfd/memory.hpp>

#include <cstdint>
#include <iterator>
#include <map>
#include <optional>
#include <utility>
#include <vector>

namespace aqueduct::kfd {

// First-fit range allocator over [0, capacity) with coalescing frees. Offsets are aligned to
// `align` (a power of two). Used to carve small allocations out of one 2 MiB block.
class range_allocator {
 public:
  explicit range_allocator(std::uint64_t capacity = 0) : capacity_(capacity) {
    if (capacity) free_.emplace(0, capacity);
  }
  [[nodiscard]] std::optional<std::uint64_t> allocate(std::uint64_t size, std::uint64_t align) {
    AQUEDUCT_ASSERT(size > 0 && is_pow2(align), "size > 0, power-of-two alignment");
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      const std::uint64_t off = align_up(it->first, align);
      const std::uint64_t end = it->first + it->second;
      if (off + size > end) continue;
      const std::uint64_t lo = it->first;
      free_.erase(it);
      if (off > lo) free_.emplace(lo, off - lo);
      if (end > off + size) free_.emplace(off + size, end - (off + size));
      used_ += size;
      return off;
    }
    return std::nullopt;
  }
  void free(std::uint64_t off, std::uint64_t size) {
    AQUEDUCT_ASSERT(off + size <= capacity_, "free outside the range");
    auto next = free_.lower_bound(off);
    AQUEDUCT_ASSERT(next == free_.end() || off + size <= next->first, "double free / overlap");
    std::uint64_t lo = off, len = size;
    if (next != free_.begin()) {
      auto prev = std::prev(next);
      AQUEDUCT_ASSERT(prev->first + prev->second <= off, "double free / overlap");
      if (prev->first + prev->second == off) {
        lo = prev->first;
        len += prev->second;
        free_.erase(prev);
      }
    }
    if (next != free_.end() && next->first == off + size) {
      len += next->second;
      free_.erase(next);
    }
    free_.emplace(lo, len);
    used_ -= size;
  }
  [[nodiscard]] std::uint64_t capacity() const noexcept { return capacity_; }
  [[nodiscard]] std::uint64_t used() const noexcept { return used_; }
  [[nodiscard]] bool empty() const noexcept { return used_ == 0; }
  [[nodiscard]] std::size_t fragments() const noexcept { return free_.size(); }

 private:
  std::uint64_t capacity_ = 0, used_ = 0;
  std::map<std::uint64_t, std::uint64_t> free_;  // offset -> length
};

template <device_file F>
class vram_pool;

// A piece of a pooled block; returns its range to the pool on destruction. Move-only.
template <device_file F>
class pooled_buffer {
 public:
  pooled_buffer() = default;
  pooled_buffer(pooled_buffer&& o) noexcept
      : pool_(std::exchange(o.pool_, nullptr)), block_(o.block_), offset_(o.offset_), ref_(std::exchange(o.ref_, {})) {}
  pooled_buffer& operator=(pooled_buffer&& o) noexcept {
    if (this != &o) {
      reset();
      pool_ = std::exchange(o.pool_, nullptr);
      block_ = o.block_;
      offset_ = o.offset_;
      ref_ = std::exchange(o.ref_, {});
    }
    return *this;
  }
  pooled_buffer(const pooled_buffer&) = delete;
  pooled_buffer& operator=(const pooled_buffer&) = delete;
  ~pooled_buffer() { reset(); }

  [[nodiscard]] buffer_ref ref() const noexcept { return ref_; }
  [[nodiscard]] gpu_va va() const noexcept { return ref_.va; }
  [[nodiscard]] byte_count size() const noexcept { return ref_.size; }
  [[nodiscard]] explicit operator bool() const noexcept { return pool_ != nullptr; }
  void reset() noexcept;

 private:
  friend class vram_pool<F>;
  vram_pool<F>* pool_ = nullptr;
  std::size_t block_ = 0;
  std::uint64_t offset_ = 0;
  buffer_ref ref_{};
};

// Sub-allocates allocations of at most `max_suballocation` bytes from blocks of `block_size`
// (2 MiB: one huge page) of one memory use on one GPU. Blocks stay allocated until the pool is
// destroyed. Every pooled_buffer must be destroyed before its pool (asserted).
template <device_file F>
class vram_pool {
 public:
  static constexpr std::uint64_t block_size = huge_page_size;
  static constexpr std::uint64_t max_suballocation = 256u << 10;  // bigger requests get their own BO
  static constexpr std::uint64_t min_alignment = 256;             // MQD / ring base granularity

  vram_pool(driver_ref<F> d, const node& gpu, memory_use use = memory_use::device) : d_(d), gpu_(&gpu), use_(use) {}
  vram_pool(const vram_pool&) = delete;
  vram_pool& operator=(const vram_pool&) = delete;
  ~vram_pool() {
    for ([[maybe_unused]] auto& b : blocks_) AQUEDUCT_ASSERT(b.ranges.empty(), "pooled_buffer outlived its vram_pool");
  }

  [[nodiscard]] result<pooled_buffer<F>> try_allocate(byte_count size, std::uint64_t align = min_alignment) {
    AQUEDUCT_ASSERT(size.value > 0 && size.value <= max_suballocation, "size in (0, max_suballocation]");
    const std::uint64_t sz = align_up(size.value, min_alignment);
    align = align < min_alignment ? min_alignment : align;
    for (std::size_t i = 0; i < blocks_.size(); ++i)
      if (auto off = blocks_[i].ranges.allocate(sz, align)) return make(i, *off, sz);
    AQUEDUCT_TRY(auto b, buffer<F>::try_allocate(d_, *gpu_, byte_count(block_size), use_));
    blocks_.push_back(block{std::move(b), range_allocator(block_size)});
    auto off = blocks_.back().ranges.allocate(sz, align);
    AQUEDUCT_ASSERT(off.has_value(), "a fresh block fits any sub-allocation");
    return make(blocks_.size() - 1, *off, sz);
  }

  [[nodiscard]] std::size_t block_count() const noexcept { return blocks_.size(); }
  [[nodiscard]] std::uint64_t bytes_in_use() const noexcept {
    std::uint64_t s = 0;
    for (auto& b : blocks_) s += b.ranges.used();
    return s;
  }

 private:
  friend class pooled_buffer<F>;
  struct block {
    buffer<F> bo;
    range_allocator ranges;
  };
  pooled_buffer<F> make(std::size_t i, std::uint64_t off, std::uint64_t sz) {
    pooled_buffer<F> p;
    p.pool_ = this;
    p.block_ = i;
    p.offset_ = off;
    const buffer_ref whole = blocks_[i].bo.ref();
    p.ref_ = {whole.va + byte_count(off), whole.host ? static_cast<char*>(whole.host) + off : nullptr, byte_count(sz),
              whole.gpu_id, whole.handle};
    return p;
  }
  void give_back(std::size_t i, std::uint64_t off, std::uint64_t sz) { blocks_[i].ranges.free(off, sz); }

  driver_ref<F> d_;
  const node* gpu_;
  memory_use use_;
  std::vector<block> blocks_;
};

template <device_file F>
void pooled_buffer<F>::reset() noexcept {
  if (pool_) pool_->give_back(block_, offset_, ref_.size.value);
  pool_ = nullptr;
  ref_ = {};
}

}  // namespace aqueduct::kfd
