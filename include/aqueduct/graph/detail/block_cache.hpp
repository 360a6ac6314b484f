// aqueduct/graph/detail/block_cache.hpp — the allocator of a graph's node arrays and of each
// node's lists: large and small blocks kept per thread when freed and handed out again, so that
// capturing, copying and instantiating graphs over and over neither faults fresh pages in nor
// goes through the heap's slow paths each time (not API).
//
// Layer: graph (not API). Why: a node is 704 bytes, so a 1,000-node graph's array is ~720 KB
// and the vector that grows to it passes through 90, 180 and 360 KB blocks. glibc serves blocks
// that large from fresh pages (mmap, or the top of the heap, which free() trims back to the
// kernel), so each capture of bench_graph's 1,000-node chain took ~450 page faults: 650 ns per
// node instead of 153 (measured in session 14, docs/benchmarks.md). Blocks from 64 KiB up are
// therefore rounded up to a power of two and kept, when freed, on a per-thread list of their size
// (at most `kept_bytes` per thread: a larger block, or one past that, goes back to the heap).
// Blocks from 2 KiB up to 64 KiB go to the heap, whose bins reuse them without faults.
// Small blocks (up to 2 KiB: a node's dependency list, pointer offsets and argument bytes, three
// per kernel node) are kept too, on per-thread lists of 16 << c bytes, at most `small_kept_bytes`
// per thread. Capture allocates three per node and destroying the graph frees them all at once,
// a pattern glibc serves from its slow bins (its per-thread cache holds 7 blocks per size):
// malloc and free were 55 % of capturing bench_graph's 1,000-node chain (perf, session 29).
// A block freed on another thread joins that thread's lists (large blocks come from
// ::operator new with 64-byte alignment, small ones with the default). A thread's lists are
// returned to the heap when it ends. Under AddressSanitizer (AQUEDUCT_ASAN) nothing is kept, so
// a use after free is still reported.
// Thread safety: allocate/deallocate from any thread (the lists are thread-local).
#pragma once

#include <aqueduct/config.hpp>

#include <bit>
#include <cstddef>
#include <new>

namespace aqueduct::graph::detail {

struct block_cache {
  static constexpr std::size_t min_bytes = std::size_t{64} << 10;   // smaller: the heap
  static constexpr std::size_t classes = 10;                        // 64 KiB .. 32 MiB
  static constexpr std::size_t kept_bytes = std::size_t{32} << 20;  // per thread
  static constexpr std::align_val_t align{64};

  struct free_block {
    free_block* next;
  };
  free_block* heads[classes] = {};
  std::size_t held = 0;  // bytes on the lists

  // Small blocks: classes of 16 << c bytes.
  static constexpr std::size_t small_classes = 8;  // 16 B .. 2 KiB
  static constexpr std::size_t small_max = std::size_t{16} << (small_classes - 1);
  static constexpr std::size_t small_kept_bytes = std::size_t{8} << 20;  // per thread
  free_block* small_heads[small_classes] = {};
  std::size_t small_held = 0;  // bytes on the small lists

  block_cache() = default;
  block_cache(const block_cache&) = delete;
  block_cache& operator=(const block_cache&) = delete;
  ~block_cache() {
    for (std::size_t c = 0; c < classes; ++c)
      while (free_block* b = heads[c]) {
        heads[c] = b->next;
        ::operator delete(static_cast<void*>(b), class_bytes(c), align);
      }
    release_small();
  }

  // The class of a block of `bytes` (>= min_bytes); >= classes: not kept.
  [[nodiscard]] static constexpr std::size_t class_of(std::size_t bytes) noexcept {
    return static_cast<std::size_t>(std::bit_width((bytes - 1) / min_bytes));
  }
  // A block off the list `head` (which holds `held` bytes; `bytes` each), or null. Under ASan
  // nothing is kept, so the lists stay empty.
  [[nodiscard]] static void* pop(free_block*& head, std::size_t& held, std::size_t bytes) noexcept {
    free_block* b = head;
    if (!b) return nullptr;
    head = b->next;
    held -= bytes;
    b->~free_block();
    return b;
  }
  // `p` (of `bytes`) onto the list `head` if what is held stays within `limit`; false: not kept.
  [[nodiscard]] static bool push(free_block*& head, std::size_t& held, std::size_t bytes, std::size_t limit, void* p) noexcept {
#if !AQUEDUCT_ASAN
    if (held + bytes <= limit) {
      head = ::new (p) free_block{head};
      held += bytes;
      return true;
    }
#else
    (void)head, (void)held, (void)bytes, (void)limit, (void)p;
#endif
    return false;
  }
  // The small lists back to the heap (a test that fails allocations in turn needs them to reach it).
  void release_small() noexcept {
    for (std::size_t c = 0; c < small_classes; ++c)
      while (free_block* b = small_heads[c]) {
        small_heads[c] = b->next;
        ::operator delete(static_cast<void*>(b), small_class_bytes(c));
      }
    small_held = 0;
  }
  [[nodiscard]] static constexpr std::size_t class_bytes(std::size_t c) noexcept { return min_bytes << c; }
  // The class of a small block of `bytes` (0..small_max).
  [[nodiscard]] static constexpr std::size_t small_class_of(std::size_t bytes) noexcept {
    return bytes <= 16 ? 0 : static_cast<std::size_t>(std::bit_width((bytes - 1) >> 4));
  }
  [[nodiscard]] static constexpr std::size_t small_class_bytes(std::size_t c) noexcept { return std::size_t{16} << c; }
};
static_assert(block_cache::small_class_of(1) == 0 && block_cache::small_class_of(16) == 0 && block_cache::small_class_of(17) == 1 &&
              block_cache::small_class_of(32) == 1 && block_cache::small_class_of(block_cache::small_max) == block_cache::small_classes - 1);
inline thread_local block_cache blocks;

// std::allocator's interface; blocks up to block_cache::small_max bytes and of at least
// block_cache::min_bytes recycled as above.
template <class T>
struct recycling_allocator {
  static_assert(alignof(T) <= 64, "recycling_allocator: blocks are 64-byte aligned");
  using value_type = T;
  recycling_allocator() = default;
  template <class U>
  recycling_allocator(const recycling_allocator<U>&) noexcept {}

  [[nodiscard]] T* allocate(std::size_t n) {
    if (n > std::size_t(-1) / sizeof(T)) throw std::bad_array_new_length();
    const std::size_t bytes = n * sizeof(T);
    if (bytes <= block_cache::small_max && alignof(T) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__) return allocate_small(bytes);
    if (bytes < block_cache::min_bytes) return static_cast<T*>(::operator new(bytes, block_cache::align));
    const std::size_t c = block_cache::class_of(bytes);
    if (c >= block_cache::classes) return static_cast<T*>(::operator new(bytes, block_cache::align));
    block_cache& bc = blocks;
    if (void* b = block_cache::pop(bc.heads[c], bc.held, block_cache::class_bytes(c))) return static_cast<T*>(b);
    return static_cast<T*>(::operator new(block_cache::class_bytes(c), block_cache::align));
  }

  void deallocate(T* p, std::size_t n) noexcept {
    const std::size_t bytes = n * sizeof(T);
    if (bytes <= block_cache::small_max && alignof(T) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__) return deallocate_small(p, bytes);
    if (bytes < block_cache::min_bytes) return ::operator delete(p, bytes, block_cache::align);
    const std::size_t c = block_cache::class_of(bytes);
    if (c >= block_cache::classes) return ::operator delete(p, bytes, block_cache::align);
    block_cache& bc = blocks;
    if (block_cache::push(bc.heads[c], bc.held, block_cache::class_bytes(c), block_cache::kept_bytes, p)) return;
    ::operator delete(p, block_cache::class_bytes(c), block_cache::align);
  }

  template <class U>
  friend bool operator==(const recycling_allocator&, const recycling_allocator<U>&) noexcept {
    return true;
  }

 private:
  // Small blocks: their class's whole size from the heap (so any block of the class can serve
  // any request in it), kept on the class's list when freed.
  [[nodiscard]] static T* allocate_small(std::size_t bytes) {
    const std::size_t c = block_cache::small_class_of(bytes);
    block_cache& bc = blocks;
    if (void* b = block_cache::pop(bc.small_heads[c], bc.small_held, block_cache::small_class_bytes(c))) return static_cast<T*>(b);
    return static_cast<T*>(::operator new(block_cache::small_class_bytes(c)));
  }
  static void deallocate_small(T* p, std::size_t bytes) noexcept {
    const std::size_t c = block_cache::small_class_of(bytes);
    block_cache& bc = blocks;
    if (block_cache::push(bc.small_heads[c], bc.small_held, block_cache::small_class_bytes(c), block_cache::small_kept_bytes, p)) return;
    ::operator delete(static_cast<void*>(p), block_cache::small_class_bytes(c));
  }
};

}  // namespace aqueduct::graph::detail
