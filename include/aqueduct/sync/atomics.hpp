// aqueduct/sync/atomics.hpp — the atomics policy: how aqueduct touches memory that a GPU (or the
// emulated packet processor, or another process) reads and writes concurrently.
//
// Layer: sync. The policy, in one place:
// 1. GPU-visible words (AQL headers, amd_queue read/write indexes, amd_signal values, doorbells)
//    are plain fields of the abi/ structs and are accessed ONLY through `std::atomic_ref`, via
//    the functions below, each with an explicit std::memory_order (there are no defaults, so the
//    order of every access is visible at its call site). Requirement 9 (DESIGN.md §1): doorbell
//    and write-index stores are atomic and ordered.
// 2. Only types whose std::atomic_ref is always lock-free are allowed (`gpu_atomic`). A
//    lock-based atomic_ref would take a lock in a process-local table that the GPU never sees,
//    and lock-free atomics are the ones the standard asks to be address-free
//    ([atomics.lockfree]), i.e. correct when the same page is mapped at another address by the
//    GPU or another process.
// 3. Boost.Atomic is used where the standard has no vocabulary: `ipc_ref<T>` =
//    boost::atomics::ipc_atomic_ref makes "address-free" a type (it refuses types that are not
//    lock-free) and provides wait/notify that work across processes (a shared, not private,
//    futex on Linux). aqueduct uses it for 32-bit host wake-up words (`wait_word_change`,
//    `notify_word`): e.g. a processor thread sleeping until a word in shared memory changes.
//    std::atomic_ref::wait (C++20) is private to one process and neither it nor Boost 1.74 has
//    a timed wait, so timed blocking lives in sync/host_events.hpp and kfd/ events instead.
// Thread safety: these are atomic operations; the caller chooses the order.
#pragma once

#include <aqueduct/core/assert.hpp>

#include <boost/atomic/ipc_atomic_ref.hpp>

#include <atomic>
#include <concepts>
#include <cstdint>
#include <type_traits>

namespace aqueduct::sync {

using std::memory_order;

// A type aqueduct may access atomically in GPU-visible memory.
template <class T>
concept gpu_atomic = std::is_trivially_copyable_v<T> && (sizeof(T) == 4 || sizeof(T) == 8) &&
                     std::atomic_ref<T>::is_always_lock_free;

static_assert(gpu_atomic<std::uint32_t> && gpu_atomic<std::uint64_t> && gpu_atomic<std::int64_t>,
              "aqueduct needs lock-free 32- and 64-bit atomics (x86-64, AArch64)");

namespace detail {
template <gpu_atomic T>
AQUEDUCT_ALWAYS_INLINE std::atomic_ref<T> ref(T& obj) noexcept {
  AQUEDUCT_ASSERT(reinterpret_cast<std::uintptr_t>(&obj) % std::atomic_ref<T>::required_alignment == 0,
                  "misaligned atomic in GPU-visible memory");
  return std::atomic_ref<T>(obj);
}
}  // namespace detail

// Loads take a const object: reading a GPU-written index through a const view is common.
template <gpu_atomic T>
AQUEDUCT_ALWAYS_INLINE T atomic_load(const T& obj, memory_order order) noexcept {
  return detail::ref(const_cast<T&>(obj)).load(order);  // atomic_ref<const T> is C++26
}

template <gpu_atomic T>
AQUEDUCT_ALWAYS_INLINE void atomic_store(T& obj, std::type_identity_t<T> v, memory_order order) noexcept {
  detail::ref(obj).store(v, order);
}

template <gpu_atomic T>
AQUEDUCT_ALWAYS_INLINE T atomic_exchange(T& obj, std::type_identity_t<T> v, memory_order order) noexcept {
  return detail::ref(obj).exchange(v, order);
}

template <gpu_atomic T>
  requires std::integral<T>
AQUEDUCT_ALWAYS_INLINE T atomic_fetch_add(T& obj, std::type_identity_t<T> v, memory_order order) noexcept {
  return detail::ref(obj).fetch_add(v, order);
}

template <gpu_atomic T>
  requires std::integral<T>
AQUEDUCT_ALWAYS_INLINE T atomic_fetch_sub(T& obj, std::type_identity_t<T> v, memory_order order) noexcept {
  return detail::ref(obj).fetch_sub(v, order);
}

template <gpu_atomic T>
  requires std::integral<T>
AQUEDUCT_ALWAYS_INLINE T atomic_fetch_or(T& obj, std::type_identity_t<T> v, memory_order order) noexcept {
  return detail::ref(obj).fetch_or(v, order);
}

// Strong CAS; on failure `expected` receives the current value (load with `failure`).
template <gpu_atomic T>
AQUEDUCT_ALWAYS_INLINE bool atomic_compare_exchange(T& obj, T& expected, std::type_identity_t<T> desired,
                                                    memory_order success, memory_order failure) noexcept {
  return detail::ref(obj).compare_exchange_strong(expected, desired, success, failure);
}

// Raise `obj` to at least `v` (monotonic maximum). Returns the value before.
template <gpu_atomic T>
  requires std::integral<T>
AQUEDUCT_ALWAYS_INLINE T atomic_fetch_max(T& obj, std::type_identity_t<T> v, memory_order order) noexcept {
  auto r = detail::ref(obj);
  T cur = r.load(std::memory_order_relaxed);
  while (cur < v && !r.compare_exchange_weak(cur, v, order, std::memory_order_relaxed)) {
  }
  return cur;
}

// ---- address-free (inter-process) words: Boost.Atomic ----------------------------------------

// An address-free atomic view: valid when the word lives in memory shared between processes.
template <class T>
  requires boost::atomics::ipc_atomic_ref<T>::is_always_lock_free
using ipc_ref = boost::atomics::ipc_atomic_ref<T>;

namespace detail {
// Boost.Atomic has its own memory_order enum (different values); map the standard one onto it.
constexpr boost::memory_order to_boost(memory_order o) noexcept {
  switch (o) {
    case std::memory_order_relaxed: return boost::memory_order_relaxed;
    case std::memory_order_consume: return boost::memory_order_consume;
    case std::memory_order_acquire: return boost::memory_order_acquire;
    case std::memory_order_release: return boost::memory_order_release;
    case std::memory_order_acq_rel: return boost::memory_order_acq_rel;
    case std::memory_order_seq_cst: return boost::memory_order_seq_cst;
  }
  return boost::memory_order_seq_cst;
}
}  // namespace detail

// Block (without spinning; a shared futex on Linux) until the 32-bit word no longer holds `old`.
// Returns the new value. May return spuriously only with a changed value. Untimed by design:
// Boost 1.74 has no timed wait.
inline std::uint32_t wait_word_change(std::uint32_t& word, std::uint32_t old, memory_order order) noexcept {
  return ipc_ref<std::uint32_t>(word).wait(old, detail::to_boost(order));
}

// Store `v` (release) and wake every waiter of wait_word_change on `word`.
inline void store_and_notify_word(std::uint32_t& word, std::uint32_t v) noexcept {
  ipc_ref<std::uint32_t> r(word);
  r.store(v, boost::memory_order_release);
  r.notify_all();
}

// fetch_add (release) and wake every waiter; returns the value before.
inline std::uint32_t add_and_notify_word(std::uint32_t& word, std::uint32_t v) noexcept {
  ipc_ref<std::uint32_t> r(word);
  const std::uint32_t before = r.fetch_add(v, boost::memory_order_release);
  r.notify_all();
  return before;
}

}  // namespace aqueduct::sync
