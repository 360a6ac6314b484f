// tests/support/waits.hpp — the tests' wait helpers, once: poll a condition until it holds or a
// deadline passes (never a fixed sleep that a loaded machine can outlast).
// Used by the engine-level tests (tests/emu, tests/queue) that watch memory an engine writes.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <type_traits>

namespace aq_test {

using namespace std::chrono_literals;

// True as soon as pred() holds; false if it still does not after `timeout` (polled every 100 µs).
template <class Pred>
[[nodiscard]] bool eventually(Pred&& pred, std::chrono::milliseconds timeout = 5000ms) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (pred()) return true;
    if (std::chrono::steady_clock::now() >= end) return false;
    std::this_thread::sleep_for(100us);
  }
}

// eventually() without the sleep: for a test that races a thread that is about to sleep (a
// sleeping waiter would give that thread all the time it needs).
template <class Pred>
[[nodiscard]] bool spin_until(Pred&& pred, std::chrono::milliseconds timeout = 5000ms) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  for (unsigned i = 1;; ++i) {
    if (pred()) return true;
    if ((i & 255) == 0 && std::chrono::steady_clock::now() >= end) return false;
  }
}

// A busy delay of about n loop iterations (a fraction of a nanosecond to a few each): to vary
// where, in another thread's progress, the next step of a test lands.
inline void spin_iterations(unsigned n) noexcept {
  // The volatile counter's load and store are the delay; the increment is a statement of its own
  // (C++20 deprecates using the value of an assignment to a volatile, as a for's third clause does).
  for (volatile unsigned i = 0; i < n;) i = i + 1;
}

// An acquire load of a word the device writes.
template <class T>
[[nodiscard]] T load_acquire(const T* p) noexcept {
  return std::atomic_ref<T>(*const_cast<T*>(p)).load(std::memory_order_acquire);
}

// Until the device wrote `v` to `*p`.
template <class T>
[[nodiscard]] bool wait_word(const T* p, std::type_identity_t<T> v, std::chrono::milliseconds timeout = 5000ms) {
  return eventually([&] { return load_acquire(p) == v; }, timeout);
}

// Until the engine (anything with has_error()) stopped its queue.
template <class Engine>
[[nodiscard]] bool wait_error(const Engine& e, std::chrono::milliseconds timeout = 5000ms) {
  return eventually([&] { return e.has_error(); }, timeout);
}

}  // namespace aq_test
