// aqueduct/sync/signal.hpp — `signal_ref`: a non-owning view of an abi::amd_signal in GPU-visible
// memory, with atomic operations and waits.
//
// Layer: sync. A signal handle in an AQL packet is the GPU VA of an amd_signal (spec/packets.md
// §5.3); under KFD the process and the GPU share one address space, so the handle is the host
// address. The packet processor decrements `value` when a packet completes and then, if
// `event_mailbox_ptr` is set, writes `event_id` there and interrupts, which fires the KFD event
// (spec/packets.md §5.5). Waits therefore re-check the value after every event wake-up.
// Every value access names its memory order (sync/atomics.hpp). Waits: sync/wait.hpp policies;
// a timeout yields errc::timeout with the signal's state and the caller's `diagnostics`.
// Thread safety: all value operations are atomic; `initialize` is not (signal not yet shared).
#pragma once

#include <aqueduct/abi/amd_signal.hpp>
#include <aqueduct/abi/aql.hpp>
#include <aqueduct/core/result.hpp>
#include <aqueduct/sync/atomics.hpp>
#include <aqueduct/sync/wait.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>

namespace aqueduct::sync {

class signal_ref {
 public:
  constexpr signal_ref() noexcept = default;
  constexpr explicit signal_ref(abi::amd_signal* s) noexcept : s_(s) {}
  // The handle an AQL packet carries (0 = none).
  [[nodiscard]] static signal_ref from_handle(std::uint64_t handle) noexcept {
    return signal_ref(reinterpret_cast<abi::amd_signal*>(static_cast<std::uintptr_t>(handle)));
  }

  // Set every field before the signal is shared with a device or another thread.
  static void initialize(abi::amd_signal& s, std::int64_t value, std::uint64_t event_mailbox_ptr = 0,
                         std::uint32_t event_id = 0) noexcept {
    s = abi::amd_signal{};
    s.kind = static_cast<std::int64_t>(abi::amd_signal_kind::user);
    s.event_mailbox_ptr = event_mailbox_ptr;
    s.event_id = event_id;
    atomic_store(s.value, value, std::memory_order_release);
  }

  [[nodiscard]] abi::amd_signal* get() const noexcept { return s_; }
  [[nodiscard]] std::uint64_t handle() const noexcept { return reinterpret_cast<std::uintptr_t>(s_); }
  explicit operator bool() const noexcept { return s_ != nullptr; }
  friend bool operator==(signal_ref a, signal_ref b) noexcept { return a.s_ == b.s_; }

  [[nodiscard]] bool has_event() const noexcept { return s_->event_mailbox_ptr != 0; }
  [[nodiscard]] std::uint32_t event_id() const noexcept { return s_->event_id; }

  // ---- value operations (each returns the value before, like HSA's *_scacq_screl forms) ------
  [[nodiscard]] std::int64_t load(memory_order o) const noexcept { return atomic_load(s_->value, o); }
  void store(std::int64_t v, memory_order o) const noexcept { atomic_store(s_->value, v, o); }
  std::int64_t add(std::int64_t v, memory_order o) const noexcept { return atomic_fetch_add(s_->value, v, o); }
  std::int64_t subtract(std::int64_t v, memory_order o) const noexcept { return atomic_fetch_sub(s_->value, v, o); }
  std::int64_t exchange(std::int64_t v, memory_order o) const noexcept { return atomic_exchange(s_->value, v, o); }
  // On failure `expected` receives the current value.
  bool compare_exchange(std::int64_t& expected, std::int64_t desired, memory_order success,
                        memory_order failure) const noexcept {
    return atomic_compare_exchange(s_->value, expected, desired, success, failure);
  }

  // ---- waits ---------------------------------------------------------------------------------
  // Wait until `value <cond> operand` (acquire), returning the value that satisfied it, or
  // errc::timeout after `timeout`. With an event_waiter, spin_then_block/block sleep on the KFD
  // event the mailbox names; without one (or without a mailbox) they back off with short sleeps.
  template <event_waiter W>
  result<std::int64_t> try_wait(abi::signal_condition cond, std::int64_t operand, nanoseconds timeout, W& waiter,
                                wait_policy policy = {}, diagnostics diag = {}) const {
    never_stopped never;
    return try_wait_or_stop(cond, operand, timeout, waiter, never, policy, diag);
  }
  // The same, also ended by `stopped()` -> std::optional<failure> (asked as sync::wait_until asks:
  // every 64 spins and after each blocking slice), e.g. the GPU whose queues set the signal faulted.
  template <event_waiter W, class Stopped>
  result<std::int64_t> try_wait_or_stop(abi::signal_condition cond, std::int64_t operand, nanoseconds timeout, W& waiter,
                                        Stopped& stopped, wait_policy policy = {}, diagnostics diag = {}) const {
    std::int64_t v = load(std::memory_order_acquire);
    if (abi::condition_holds(cond, v, operand)) return v;
    // The one wait loop (sync/wait.hpp); the mailbox's event fires on every decrement, so there
    // is nothing to arm.
    auto r = wait_until(
        waiter, event_id(), has_event(), policy, timeout,
        [&] {
          v = load(std::memory_order_acquire);
          return abi::condition_holds(cond, v, operand);
        },
        stopped, [&](nanoseconds waited) { return timeout_failure(cond, operand, v, waited, policy, diag); });
    if (AQUEDUCT_UNLIKELY(!r)) return std::move(r).get_failure();
    return v;
  }
  result<std::int64_t> try_wait(abi::signal_condition cond, std::int64_t operand, nanoseconds timeout,
                                wait_policy policy = {}, diagnostics diag = {}) const {
    no_events none;
    return try_wait(cond, operand, timeout, none, policy, diag);
  }
  // Throwing twin.
  template <class... A>
  std::int64_t wait(abi::signal_condition cond, std::int64_t operand, nanoseconds timeout, A&&... a) const {
    return try_wait(cond, operand, timeout, std::forward<A>(a)...).value();
  }

#define AQUEDUCT_SIGNAL_WAIT(name, cond)                                                          \
  template <class... A>                                                                           \
  result<std::int64_t> try_wait_##name(std::int64_t operand, nanoseconds timeout, A&&... a) const { \
    return try_wait(abi::signal_condition::cond, operand, timeout, std::forward<A>(a)...);        \
  }                                                                                               \
  template <class... A>                                                                           \
  std::int64_t wait_##name(std::int64_t operand, nanoseconds timeout, A&&... a) const {           \
    return try_wait(abi::signal_condition::cond, operand, timeout, std::forward<A>(a)...).value(); \
  }
  AQUEDUCT_SIGNAL_WAIT(eq, eq)
  AQUEDUCT_SIGNAL_WAIT(ne, ne)
  AQUEDUCT_SIGNAL_WAIT(lt, lt)
  AQUEDUCT_SIGNAL_WAIT(gte, gte)
#undef AQUEDUCT_SIGNAL_WAIT

  // "signal 0x... (kind user, event 7): value 1" — for diagnostics.
  void describe(std::string& out) const {
    char buf[160];
    if (!s_) {
      out += "signal 0 (none)";
      return;
    }
    std::snprintf(buf, sizeof buf, "signal 0x%llx (kind %lld, event %s%u): value %lld",
                  static_cast<unsigned long long>(handle()), static_cast<long long>(s_->kind),
                  has_event() ? "" : "none/", s_->event_id, static_cast<long long>(load(std::memory_order_relaxed)));
    out += buf;
  }

 private:
  static const char* cond_name(abi::signal_condition c) noexcept {
    switch (c) {
      case abi::signal_condition::eq: return "==";
      case abi::signal_condition::ne: return "!=";
      case abi::signal_condition::lt: return "<";
      case abi::signal_condition::gte: return ">=";
    }
    return "?";
  }
  static const char* policy_name(wait_kind k) noexcept {
    switch (k) {
      case wait_kind::spin: return "spin";
      case wait_kind::spin_then_block: return "spin_then_block";
      case wait_kind::block: return "block";
    }
    return "?";
  }
  failure timeout_failure(abi::signal_condition cond, std::int64_t operand, std::int64_t v, nanoseconds waited,
                          wait_policy policy, diagnostics diag) const {
    std::string d;
    describe(d);
    char buf[160];
    std::snprintf(buf, sizeof buf, "; waited %.3f ms (policy %s) for value %s %lld, last seen %lld",
                  std::chrono::duration<double, std::milli>(waited).count(), policy_name(policy.kind),
                  cond_name(cond), static_cast<long long>(operand), static_cast<long long>(v));
    d += buf;
    if (diag) {
      d += "; ";
      diag.describe(d);
    }
    return failure(errc::timeout, std::move(d));
  }

  abi::amd_signal* s_ = nullptr;
};

}  // namespace aqueduct::sync
