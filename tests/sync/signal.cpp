// Tests for sync/signal.hpp: value operations follow HSA signal semantics (return the previous
// value), waits honour the four conditions of spec/packets.md §5.1 (EQ/NE/LT/GTE), a blocked
// waiter uses no CPU (measured with CLOCK_PROCESS_CPUTIME_ID), and a timeout reports the signal
// state plus the caller's diagnostics.
#include <aqueduct/sync/host_events.hpp>
#include <aqueduct/sync/signal.hpp>

#include <doctest/doctest.h>

#include <chrono>
#include <ctime>
#include <string>
#include <thread>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

namespace s = aqueduct::sync;
namespace abi = aqueduct::abi;
using namespace std::chrono_literals;

namespace {

double process_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

// What the packet processor does on completion (spec/packets.md §5.5): decrement the value, then
// write event_id to the mailbox and raise the interrupt (here: host_events::signal).
void complete(s::signal_ref sig, s::host_events& ev) {
  sig.subtract(1, std::memory_order_release);
  auto* mailbox = reinterpret_cast<std::uint64_t*>(static_cast<std::uintptr_t>(sig.get()->event_mailbox_ptr));
  if (mailbox) {
    s::atomic_store(*mailbox, std::uint64_t{sig.event_id()}, std::memory_order_release);
    ev.signal(sig.event_id());
  }
}

struct fake_queue_state {
  void describe(std::string& out) const { out += "queue 3: read 7 write 9, stalled packet: KERNEL_DISPATCH"; }
};

}  // namespace

TEST_CASE("signal_ref value operations return the previous value") {
  abi::amd_signal mem{};
  s::signal_ref::initialize(mem, 10);
  s::signal_ref sig(&mem);
  CHECK(mem.kind == 1);  // AMD_SIGNAL_KIND_USER (spec/packets.md §5.3)
  CHECK(sig.handle() == reinterpret_cast<std::uintptr_t>(&mem));
  CHECK(s::signal_ref::from_handle(sig.handle()) == sig);
  CHECK(sig.load(std::memory_order_acquire) == 10);
  CHECK(sig.add(5, std::memory_order_acq_rel) == 10);
  CHECK(sig.subtract(3, std::memory_order_acq_rel) == 15);
  CHECK(sig.load(std::memory_order_relaxed) == 12);
  CHECK(sig.exchange(-1, std::memory_order_acq_rel) == 12);
  std::int64_t expected = 0;
  CHECK_FALSE(sig.compare_exchange(expected, 4, std::memory_order_acq_rel, std::memory_order_acquire));
  CHECK(expected == -1);
  CHECK(sig.compare_exchange(expected, 4, std::memory_order_acq_rel, std::memory_order_acquire));
  sig.store(2, std::memory_order_release);
  CHECK(mem.value == 2);
  CHECK_FALSE(sig.has_event());
}

TEST_CASE("already-satisfied waits return at once for each condition") {
  abi::amd_signal mem{};
  s::signal_ref::initialize(mem, 5);
  s::signal_ref sig(&mem);
  CHECK(sig.wait_eq(5, 0ns) == 5);
  CHECK(sig.wait_ne(4, 0ns) == 5);
  CHECK(sig.wait_lt(6, 0ns) == 5);
  CHECK(sig.wait_gte(5, 0ns) == 5);
  // And the opposite conditions time out immediately with errc::timeout.
  CHECK(sig.try_wait_eq(4, 0ns).error() == aqueduct::errc::timeout);
  CHECK(sig.try_wait_ne(5, 0ns).error() == aqueduct::errc::timeout);
  CHECK(sig.try_wait_lt(5, 0ns).error() == aqueduct::errc::timeout);
  CHECK(sig.try_wait_gte(6, 0ns).error() == aqueduct::errc::timeout);
  CHECK_THROWS_AS(sig.wait_eq(4, 0ns), aqueduct::error);
}

TEST_CASE("each wait policy sees a completion from another thread") {
  alignas(8) static std::uint64_t mailbox = 0;
  s::host_events events(8);
  for (auto policy : {s::wait_policy::spin(), s::wait_policy::spin_then_block(10us), s::wait_policy::block()}) {
    abi::amd_signal mem{};
    s::signal_ref::initialize(mem, 1, reinterpret_cast<std::uintptr_t>(&mailbox), 3);
    s::signal_ref sig(&mem);
    std::thread gpu([&] {
      std::this_thread::sleep_for(20ms);
      complete(sig, events);
    });
    auto r = sig.try_wait_eq(0, 5s, events, policy);
    gpu.join();
    REQUIRE(r.has_value());
    CHECK(*r == 0);
    CHECK(mailbox == 3);
  }
}

TEST_CASE("wait_lt / wait_gte track a counter moved by another thread") {
  abi::amd_signal mem{};
  s::signal_ref::initialize(mem, 100);
  s::signal_ref sig(&mem);
  std::thread gpu([&] {
    for (int i = 0; i < 100; ++i) sig.subtract(1, std::memory_order_release);
  });
  const auto v = sig.wait_lt(50, 5s, s::wait_policy::spin());
  CHECK(v < 50);
  gpu.join();
  CHECK(sig.wait_gte(0, 0ns) == 0);
}

TEST_CASE("a waiter blocked on the event uses no CPU; a spinning one does (control)") {
  alignas(8) static std::uint64_t mailbox = 0;
  s::host_events events(4);
  abi::amd_signal mem{};
  s::signal_ref::initialize(mem, 1, reinterpret_cast<std::uintptr_t>(&mailbox), 1);
  s::signal_ref sig(&mem);

  for (auto policy : {s::wait_policy::block(), s::wait_policy::spin_then_block(50us)}) {
    sig.store(1, std::memory_order_release);
    std::thread gpu([&] {
      std::this_thread::sleep_for(200ms);
      complete(sig, events);
    });
    const double cpu0 = process_cpu_ms();
    const auto t0 = std::chrono::steady_clock::now();
    const auto r = sig.try_wait_eq(0, 10s, events, policy);
    const double wall = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    const double cpu = process_cpu_ms() - cpu0;
    gpu.join();
    REQUIRE(r.has_value());
    CHECK(wall >= 190.0);
    CHECK(cpu < 20.0);  // a few wake-ups at most; a spinning waiter would use ~200 ms
    MESSAGE("blocked wait: wall " << wall << " ms, process CPU " << cpu << " ms");
  }

  // Control: the same measurement catches a busy wait. Lenient bound: on a shared, loaded
  // machine a spinner may get only a fraction of a core, but far more than a blocked waiter.
  sig.store(1, std::memory_order_release);
  const double cpu0 = process_cpu_ms();
  const auto r = sig.try_wait_eq(0, 200ms, events, s::wait_policy::spin());
  const double cpu = process_cpu_ms() - cpu0;
  CHECK(r.error() == aqueduct::errc::timeout);
  CHECK(cpu > 10.0);
  MESSAGE("spinning wait: process CPU " << cpu << " ms over 200 ms");
}

TEST_CASE("without an event, spin_then_block backs off with sleeps instead of spinning") {
  abi::amd_signal mem{};
  s::signal_ref::initialize(mem, 1);  // no mailbox
  s::signal_ref sig(&mem);
  const double cpu0 = process_cpu_ms();
  const auto r = sig.try_wait_eq(0, 200ms, s::wait_policy::spin_then_block(50us));
  const double cpu = process_cpu_ms() - cpu0;
  CHECK(r.error() == aqueduct::errc::timeout);
  CHECK(cpu < 60.0);
}

TEST_CASE("a timeout carries the signal state and the caller's diagnostics") {
  abi::amd_signal mem{};
  s::signal_ref::initialize(mem, 1, 0, 0);
  s::signal_ref sig(&mem);
  fake_queue_state q;
  auto r = sig.try_wait_eq(0, 30ms, s::wait_policy::spin_then_block(), s::diagnostics(q));
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error() == aqueduct::errc::timeout);
  const std::string d(r.detail());
  CHECK(d.find("value 1") != std::string::npos);
  CHECK(d.find("for value == 0") != std::string::npos);
  CHECK(d.find("queue 3: read 7 write 9, stalled packet: KERNEL_DISPATCH") != std::string::npos);
  MESSAGE(d);
}

}  // namespace AQ_UNITY_ID
