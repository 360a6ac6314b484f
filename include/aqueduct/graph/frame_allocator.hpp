// aqueduct/graph/frame_allocator.hpp — the recycling allocator behind every coroutine frame of
// graph/ (tasks, when_all branches): a task call in steady state costs no heap allocation.
//
// Layer: graph. Frames up to `max_pooled_bytes` are rounded up to a 64-byte size class and kept,
// when freed, on a per-thread free list of that class (at most `kept_per_class` frames each; more
// go back to the heap). A frame freed on another thread than the one that allocated it simply
// joins that thread's list: every block comes from ::operator new, so any list may hand it out.
// A thread's lists are returned to the heap when the thread ends.
// Under AddressSanitizer (AQUEDUCT_ASAN) nothing is recycled, so a use after free of a frame is
// still reported.
// Thread safety: allocate/deallocate from any thread (the lists are thread-local).
#pragma once

#include <aqueduct/config.hpp>

#include <cstddef>
#include <cstdint>
#include <new>

namespace aqueduct::graph {

struct frame_allocator {
  static constexpr std::size_t granule = 64;             // size-class step
  static constexpr std::size_t classes = 64;             // frames up to 4 KiB are recycled
  static constexpr std::size_t max_pooled_bytes = granule * classes;
  static constexpr std::uint32_t kept_per_class = 256;   // per thread

  [[nodiscard]] static void* allocate(std::size_t n);
  static void deallocate(void* p, std::size_t n) noexcept;
  // Frames of this thread's lists (for tests and diagnostics).
  [[nodiscard]] static std::size_t cached() noexcept;
};

namespace detail {
struct frame_cache {
  struct node {
    node* next;
  };
  node* heads[frame_allocator::classes] = {};
  std::uint32_t counts[frame_allocator::classes] = {};
  frame_cache() = default;
  frame_cache(const frame_cache&) = delete;
  frame_cache& operator=(const frame_cache&) = delete;
  ~frame_cache() {
    for (std::size_t c = 0; c < frame_allocator::classes; ++c)
      while (node* n = heads[c]) {
        heads[c] = n->next;
        ::operator delete(static_cast<void*>(n), (c + 1) * frame_allocator::granule);
      }
  }
};
inline thread_local frame_cache frames;
}  // namespace detail

inline void* frame_allocator::allocate(std::size_t n) {
#if AQUEDUCT_ASAN
  return ::operator new(n);
#else
  const std::size_t c = (n - 1) / granule;
  if (AQUEDUCT_UNLIKELY(c >= classes)) return ::operator new(n);
  detail::frame_cache& fc = detail::frames;
  if (detail::frame_cache::node* p = fc.heads[c]) [[likely]] {
    fc.heads[c] = p->next;
    --fc.counts[c];
    return p;
  }
  return ::operator new((c + 1) * granule);
#endif
}

inline void frame_allocator::deallocate(void* p, std::size_t n) noexcept {
#if AQUEDUCT_ASAN
  ::operator delete(p, n);
#else
  const std::size_t c = (n - 1) / granule;
  if (AQUEDUCT_UNLIKELY(c >= classes)) {
    ::operator delete(p, n);
    return;
  }
  detail::frame_cache& fc = detail::frames;
  if (AQUEDUCT_UNLIKELY(fc.counts[c] >= kept_per_class)) {
    ::operator delete(p, (c + 1) * granule);
    return;
  }
  fc.heads[c] = ::new (p) detail::frame_cache::node{fc.heads[c]};
  ++fc.counts[c];
#endif
}

inline std::size_t frame_allocator::cached() noexcept {
  std::size_t n = 0;
  for (std::uint32_t c : detail::frames.counts) n += c;
  return n;
}

}  // namespace aqueduct::graph
