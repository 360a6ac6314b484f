// Tests for sync/atomics.hpp: every operation's return value and effect follow the C++ atomic
// semantics ([atomics.ref.ops]); the Boost-backed address-free word wait/notify wakes a waiter.
#include <aqueduct/sync/atomics.hpp>

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

namespace s = aqueduct::sync;

TEST_CASE("atomic_ref policy: operations return the previous value and update memory") {
  alignas(8) std::uint64_t w = 5;
  CHECK(s::atomic_load(w, std::memory_order_acquire) == 5);
  s::atomic_store(w, 9, std::memory_order_release);
  CHECK(w == 9);
  CHECK(s::atomic_exchange(w, 11, std::memory_order_acq_rel) == 9);
  CHECK(s::atomic_fetch_add(w, 4, std::memory_order_relaxed) == 11);
  CHECK(w == 15);
  CHECK(s::atomic_fetch_sub(w, 5, std::memory_order_relaxed) == 15);
  CHECK(w == 10);
  CHECK(s::atomic_fetch_or(w, 0x100, std::memory_order_relaxed) == 10);
  CHECK(w == 0x10A);

  std::uint64_t expected = 1;
  CHECK_FALSE(s::atomic_compare_exchange(w, expected, 2, std::memory_order_acq_rel, std::memory_order_acquire));
  CHECK(expected == 0x10A);  // failure reports the current value
  CHECK(s::atomic_compare_exchange(w, expected, 2, std::memory_order_acq_rel, std::memory_order_acquire));
  CHECK(w == 2);

  // fetch_max only raises.
  CHECK(s::atomic_fetch_max(w, 1, std::memory_order_release) == 2);
  CHECK(w == 2);
  CHECK(s::atomic_fetch_max(w, 7, std::memory_order_release) == 2);
  CHECK(w == 7);

  alignas(4) std::uint32_t h = 0xFFFFFFFFu;
  CHECK(s::atomic_fetch_add(h, 1u, std::memory_order_relaxed) == 0xFFFFFFFFu);
  CHECK(h == 0);  // unsigned wrap-around, as for std::atomic
  std::int64_t sv = -3;
  CHECK(s::atomic_fetch_sub(sv, 2, std::memory_order_relaxed) == -3);
  CHECK(sv == -5);
}

TEST_CASE("gpu_atomic admits only lock-free 4- and 8-byte types") {
  static_assert(s::gpu_atomic<std::uint32_t>);
  static_assert(s::gpu_atomic<std::int64_t>);
  static_assert(!s::gpu_atomic<std::uint16_t>);  // sub-dword: not a GPU-visible atomic here
  struct big { std::uint64_t a, b; };
  static_assert(!s::gpu_atomic<big>);
  CHECK(true);
}

TEST_CASE("concurrent fetch_max ends at the global maximum") {
  alignas(8) std::uint64_t m = 0;
  auto work = [&](std::uint64_t base) {
    for (std::uint64_t i = 0; i < 20000; ++i) s::atomic_fetch_max(m, base + i * 2, std::memory_order_acq_rel);
  };
  std::thread a(work, 0), b(work, 1);
  a.join();
  b.join();
  CHECK(m == 1 + 19999 * 2);
}

TEST_CASE("address-free word: wait_word_change blocks until notified with a new value") {
  alignas(4) std::uint32_t word = 0;
  std::atomic<bool> woke{false};
  std::uint32_t seen = 0;
  std::thread waiter([&] {
    seen = s::wait_word_change(word, 0, std::memory_order_acquire);
    woke.store(true);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  CHECK_FALSE(woke.load());  // still blocked: the value has not changed
  s::store_and_notify_word(word, 42);
  waiter.join();
  CHECK(woke.load());
  CHECK(seen == 42);
  CHECK(s::add_and_notify_word(word, 1) == 42);
  CHECK(word == 43);
}

}  // namespace AQ_UNITY_ID
