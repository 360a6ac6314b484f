// Tests for sync/host_events.hpp: KFD-like auto-reset events (a signal before the wait is kept,
// one wait consumes it), timeouts, and waking a blocked waiter.
#include <aqueduct/sync/host_events.hpp>

#include <doctest/doctest.h>

#include <chrono>
#include <thread>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

namespace s = aqueduct::sync;
using namespace std::chrono_literals;

TEST_CASE("host_events: auto-reset semantics") {
  s::host_events ev(4);
  CHECK(ev.wait(1, 0ns) == s::event_status::timed_out);
  ev.signal(1);
  CHECK(ev.signal_count(1) == 1);
  CHECK(ev.wait(2, 0ns) == s::event_status::timed_out);  // other events unaffected
  CHECK(ev.wait(1, 0ns) == s::event_status::signaled);   // kept until waited
  CHECK(ev.wait(1, 10ms) == s::event_status::timed_out);  // consumed
  CHECK(ev.wait(9, 0ns) == s::event_status::failed);      // no such event
}

TEST_CASE("host_events: a blocked waiter wakes on signal") {
  s::host_events ev(2);
  std::thread t([&] {
    std::this_thread::sleep_for(30ms);
    ev.signal(0);
  });
  const auto t0 = std::chrono::steady_clock::now();
  CHECK(ev.wait(0, s::infinite) == s::event_status::signaled);
  CHECK(std::chrono::steady_clock::now() - t0 >= 25ms);
  t.join();
}

}  // namespace AQ_UNITY_ID
