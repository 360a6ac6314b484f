// tests/support/allocation_counter.hpp — a counting global operator new for the hot-path tests
// (one copy; tests/queue/hot_path.cpp and tests/runtime/hot_path.cpp used to carry their own).
//
// Include it in exactly ONE translation unit of a test executable: it REPLACES the global
// operator new / delete (replacement functions cannot be inline). Allocations are counted only
// on a thread inside a `counting_allocations` scope, so other threads (an emulated processor)
// do not disturb the count — or, inside a `counting_all_threads` scope, on every thread (the
// emulated processor's own hot path, tests/emu/aql_hot_path.cpp). The nothrow and the aligned
// forms are replaced too (the emulator allocates with them), so every delete pairs with malloc.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <new>

namespace aq_test {
inline thread_local bool counting = false;
inline std::atomic<bool> counting_everywhere{false};
inline std::atomic<std::size_t> allocations{0};
[[nodiscard]] inline bool counts_now() noexcept {
  return counting || counting_everywhere.load(std::memory_order_relaxed);
}
// >= 0: that many more counted allocations succeed, the next one fails (operator new throws
// std::bad_alloc, the nothrow forms return null) and the countdown disarms (-1).
inline std::atomic<long> fail_after{-1};
// Counts one allocation; true: it is the one to fail.
[[nodiscard]] inline bool count_and_fail() noexcept {
  if (!counts_now()) return false;
  allocations.fetch_add(1, std::memory_order_relaxed);
  long left = fail_after.load(std::memory_order_relaxed);
  while (left >= 0)
    if (fail_after.compare_exchange_weak(left, left - 1, std::memory_order_relaxed)) return left == 0;
  return false;
}
// Counts this thread's allocations while alive.
struct counting_allocations {
  counting_allocations() noexcept { counting = true; }
  ~counting_allocations() { counting = false; }
  counting_allocations(const counting_allocations&) = delete;
  counting_allocations& operator=(const counting_allocations&) = delete;
};
// Counts every thread's allocations while alive.
struct counting_all_threads {
  counting_all_threads() noexcept { counting_everywhere.store(true, std::memory_order_seq_cst); }
  ~counting_all_threads() { counting_everywhere.store(false, std::memory_order_seq_cst); }
  counting_all_threads(const counting_all_threads&) = delete;
  counting_all_threads& operator=(const counting_all_threads&) = delete;
};
}  // namespace aq_test

// GCC pairs these with the allocation it sees inline and warns (-Wmismatched-new-delete); the
// replacement operators are consistent by construction.
#if defined(__GNUC__) && !defined(__clang__)
#  pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
void* operator new(std::size_t n) {
  if (aq_test::count_and_fail()) throw std::bad_alloc();
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  if (aq_test::count_and_fail()) return nullptr;
  return std::malloc(n ? n : 1);
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
// Over-aligned types (alignas(64) descriptors and packets) come here.
void* operator new(std::size_t n, std::align_val_t al, const std::nothrow_t&) noexcept {
  if (aq_test::count_and_fail()) return nullptr;
  const auto a = static_cast<std::size_t>(al);
  return std::aligned_alloc(a, n == 0 ? a : (n + a - 1) / a * a);  // a multiple of the alignment
}
void* operator new(std::size_t n, std::align_val_t al) {
  if (void* p = operator new(n, al, std::nothrow)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
