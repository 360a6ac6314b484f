// graph: the reactor — an idle run sleeps (its thread uses almost no CPU time while a task waits
// for a host event for 300 ms; a control that spins uses a lot), resumptions handed over from
// another thread run on the reactor's thread, and a cancelled wait ends promptly.
#include <aqueduct/graph.hpp>

#include <doctest/doctest.h>

#include <chrono>
#include <coroutine>
#include <ctime>
#include <stop_token>
#include <thread>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

namespace aq = aqueduct;
namespace g = aqueduct::graph;
using namespace std::chrono_literals;

namespace {
double thread_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

// Waits for `e`, set by another thread after `after`; returns the waiting thread's CPU time.
double cpu_ms_waiting(g::reactor_options o, std::chrono::milliseconds after) {
  g::async_event e;
  auto waiter = [&]() -> g::task<void> { co_await e; };
  std::jthread setter([&] {
    std::this_thread::sleep_for(after);
    e.set();
  });
  const double before = thread_cpu_ms();
  g::sync_wait(waiter(), {.stop = {}, .reactor = o});
  return thread_cpu_ms() - before;
}

// Hands the awaiting coroutine to another thread, which schedules it back on the reactor.
struct hop {
  g::reactor* r = nullptr;
  std::jthread* t = nullptr;
  bool await_ready() const noexcept { return false; }
  void await_suspend(std::coroutine_handle<> h) {
    *t = std::jthread([r = r, h] {
      std::this_thread::sleep_for(20ms);
      r->schedule(h);
    });
  }
  void await_resume() const noexcept {}
};
}  // namespace

TEST_CASE("an idle run sleeps: a 300 ms wait for a host event costs the waiting thread almost no CPU") {
  const double idle = cpu_ms_waiting({}, 300ms);
  CHECK_MESSAGE(idle < 30.0, "the waiting thread used ", idle, " ms of CPU in 300 ms");
  // Control: a reactor told to spin for 300 ms does burn its thread (the measurement can fail).
  // On a loaded machine a spinning thread gets only its share of a core (load 16 on 2 cores:
  // ~40 ms of 300), so the control compares with the idle run instead of with the wall clock.
  const double spinning = cpu_ms_waiting({.spin_for = 300ms, .max_sleep = 100ms}, 300ms);
  CHECK_MESSAGE(spinning > 5.0, "a spinning reactor used only ", spinning, " ms of CPU in 300 ms");
  CHECK_MESSAGE(spinning > 10.0 * idle, "spinning ", spinning, " ms vs idle ", idle, " ms");
}

TEST_CASE("a coroutine scheduled from another thread resumes on the reactor's thread") {
  g::reactor r;
  std::jthread helper;
  std::thread::id resumed_on;
  auto t = [&]() -> g::task<int> {
    co_await hop{&r, &helper};
    resumed_on = std::this_thread::get_id();
    co_return 5;
  };
  CHECK(g::sync_wait(r, t()) == 5);
  CHECK(resumed_on == std::this_thread::get_id());
}

TEST_CASE("a cancelled wait ends promptly, with the co_await's location") {
  std::stop_source stop;
  g::async_event never;
  auto t = [&]() -> g::task<void> { co_await never; };
  std::jthread stopper([&] {
    std::this_thread::sleep_for(30ms);
    stop.request_stop();
  });
  const auto start = std::chrono::steady_clock::now();
  try {
    g::sync_wait(t(), {.stop = stop.get_token(), .reactor = {}});
    FAIL("not cancelled");
  } catch (const aq::error& e) {
    CHECK(static_cast<aq::errc>(e.code().value()) == aq::errc::cancelled);
    CHECK_MESSAGE(std::string(e.what()).find("reactor.cpp:") != std::string::npos, e.what());
  }
  CHECK(std::chrono::steady_clock::now() - start < 2s);
}

}  // namespace AQ_UNITY_ID
