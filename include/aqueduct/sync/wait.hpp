// aqueduct/sync/wait.hpp — how a host thread waits for the device: wait policies, the
// `event_waiter` concept that blocking goes through, timeouts, and the `diagnostics` hook that
// turns a timeout into something a person can debug.
//
// Layer: sync. Three policies (DESIGN.md §6: "waits spin briefly, then block on an event; a
// waiting thread must not burn a core for seconds"):
// - spin: poll with a CPU pause; lowest latency, burns a core. Use for microsecond waits.
// - spin_then_block (default): poll for `spin_for`, then block on the KFD event named by the
//   signal's mailbox, re-checking the condition after every wake-up.
// - block: block at once.
// Blocking goes through an `event_waiter`: `kfd/`'s KFD events (AMDKFD_IOC_WAIT_EVENTS) and the
// emulator's events both model it, as does sync::host_events (in-process, for tests). Where
// nothing can be blocked on (no event), the wait backs off with short sleeps instead.
// Thread safety: values and pure functions; a `diagnostics` view must outlive the wait.
#pragma once

#include <aqueduct/config.hpp>

#include <chrono>
#include <concepts>
#include <cstdint>
#include <string>
#include <thread>

namespace aqueduct::sync {

using clock = std::chrono::steady_clock;
using nanoseconds = std::chrono::nanoseconds;

// "Wait forever" (bounded by the clock's range, ~292 years).
inline constexpr nanoseconds infinite = nanoseconds::max();

// Outcome of one event_waiter::wait call.
enum class event_status : std::uint8_t {
  signaled,   // the event fired (the awaited condition may still be false: re-check)
  timed_out,  // `timeout` elapsed without the event
  failed,     // the wait itself failed (e.g. the ioctl); callers fall back to polling
};

// Something a thread can block on until a device event fires, using no CPU meanwhile.
// Contract: events are auto-reset, as KFD signal events are: a signal that arrives while nobody
// waits is kept until the next wait consumes it, so check-then-block loses no wake-up; a wait may
// return `signaled` spuriously (callers re-check their condition).
template <class W>
concept event_waiter = requires(W& w, std::uint32_t event_id, nanoseconds timeout) {
  { w.wait(event_id, timeout) } -> std::same_as<event_status>;
};

// A waiter with no events: every wait is "failed", so waits fall back to sleeping back-off.
struct no_events {
  event_status wait(std::uint32_t, nanoseconds) noexcept { return event_status::failed; }
};
static_assert(event_waiter<no_events>);

enum class wait_kind : std::uint8_t { spin, spin_then_block, block };

struct wait_policy {
  wait_kind kind = wait_kind::spin_then_block;
  nanoseconds spin_for = std::chrono::microseconds(50);  // spin_then_block: spin this long first
  // Longest single block: bounds the cost of a wake-up consumed by another waiter of the same
  // auto-reset event. Waking every 100 ms costs nothing measurable.
  nanoseconds max_block = std::chrono::milliseconds(100);

  static constexpr wait_policy spin() noexcept { return {wait_kind::spin, nanoseconds::zero(), nanoseconds::zero()}; }
  static constexpr wait_policy spin_then_block(nanoseconds spin = std::chrono::microseconds(50)) noexcept {
    return {wait_kind::spin_then_block, spin, std::chrono::milliseconds(100)};
  }
  static constexpr wait_policy block() noexcept {
    return {wait_kind::block, nanoseconds::zero(), std::chrono::milliseconds(100)};
  }
};

// A non-owning hook that appends a human-readable state description (a queue's read/write
// indexes and its stalled packet, decoded) to a timeout's detail. Called only on the error path.
// Default-constructed: describes nothing. The object it views must outlive the wait.
class diagnostics {
 public:
  constexpr diagnostics() noexcept = default;
  template <class T>
    requires requires(const T& t, std::string& s) { t.describe(s); }
  constexpr diagnostics(const T& source) noexcept  // NOLINT: implicit view, like string_view
      : ctx_(&source), fn_([](const void* c, std::string& out) { static_cast<const T*>(c)->describe(out); }) {}

  void describe(std::string& out) const {
    if (fn_) fn_(ctx_, out);
  }
  explicit operator bool() const noexcept { return fn_ != nullptr; }

 private:
  const void* ctx_ = nullptr;
  void (*fn_)(const void*, std::string&) = nullptr;
};

// A deadline computed from a timeout without overflow.
[[nodiscard]] inline clock::time_point deadline_after(nanoseconds timeout) noexcept {
  const auto now = clock::now();
  if (timeout >= clock::time_point::max() - now) return clock::time_point::max();
  return now + timeout;
}

// Back-off for waits with nothing to block on: 64 CPU pauses, then 64 yields (cheap hand-over
// to a consumer sharing the core), then sleeps from 1 µs doubling to 1 ms.
class backoff {
 public:
  void pause() noexcept {
    if (spins_ < 128) {
      if (spins_++ < 64) AQUEDUCT_CPU_RELAX();
      else std::this_thread::yield();
      return;
    }
    std::this_thread::sleep_for(sleep_);
    if (sleep_ < std::chrono::milliseconds(1)) sleep_ *= 2;
  }

 private:
  unsigned spins_ = 0;
  nanoseconds sleep_ = std::chrono::microseconds(1);
};

}  // namespace aqueduct::sync
