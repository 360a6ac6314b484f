// graph: when_all — results of every form, branches really interleave on one reactor thread, a
// failing branch cancels its siblings and its own exception (not theirs) reaches the awaiting
// task, a stop of the run reaches every branch, lifetimes of what the branches hold.
#include <aqueduct/graph.hpp>

#include <doctest/doctest.h>

#include <chrono>
#include <optional>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

namespace aq = aqueduct;
namespace g = aqueduct::graph;
using namespace std::chrono_literals;

namespace {
g::task<int> value(int v) { co_return v; }
g::task<std::string> text(std::string s) { co_return s + "!"; }
int side_effects = 0;
g::task<void> effect() {
  ++side_effects;
  co_return;
}

struct boom : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Cancels a run that deadlocks instead of hanging the test (ctest would only time out).
struct watchdog {
  std::stop_source stop;
  std::jthread t;
  explicit watchdog(std::chrono::milliseconds after)
      : t([this, after](std::stop_token self) {
          const auto until = std::chrono::steady_clock::now() + after;
          while (!self.stop_requested() && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(1ms);
          if (!self.stop_requested()) stop.request_stop();
        }) {}
  g::sync_wait_options options() const { return {.stop = stop.get_token(), .reactor = {}}; }
};

aq::errc code_of(const aq::error& e) { return static_cast<aq::errc>(e.code().value()); }

// A branch that waits for an event nobody sets, so that only a stop ends it; the error it ended
// with is kept in `ended`, then rethrown.
g::task<int> wait_until_stopped(g::async_event& never, std::optional<aq::error>& ended) {
  try {
    co_await never;
  } catch (const aq::error& e) {
    ended.emplace(e);
    throw;
  }
  co_return 1;
}
// A branch that fails after a suspension point.
g::task<int> fail_with(const char* what) {
  co_await std::suspend_never{};
  throw boom(what);
  co_return 0;
}
}  // namespace

TEST_CASE("when_all returns every branch's value (nothing for a task<void>), a vector, or void") {
  side_effects = 0;
  auto t = []() -> g::task<int> {
    auto [a, b, c] = co_await g::when_all(value(1), text("hi"), effect());
    CHECK(a == 1);
    CHECK(b == "hi!");
    CHECK(c == g::nothing{});
    co_await g::when_all(effect(), effect());
    std::vector<g::task<int>> v;
    for (int i = 0; i < 10; ++i) v.push_back(value(i));
    const std::vector<int> r = co_await g::when_all(std::move(v));
    int sum = 0;
    for (int x : r) sum += x;
    co_await g::when_all(std::vector<g::task<int>>{});  // empty: ready at once
    co_return sum;
  };
  CHECK(g::sync_wait(t()) == 45);
  CHECK(side_effects == 3);
}

TEST_CASE("when_all branches interleave on one reactor thread (each waits for the other)") {
  watchdog w(10s);
  g::async_event a_ready, b_ready;
  std::vector<int> order;
  auto a = [&]() -> g::task<void> {
    order.push_back(1);
    a_ready.set();
    co_await b_ready;  // only the other branch sets it
    order.push_back(3);
  };
  auto b = [&]() -> g::task<void> {
    co_await a_ready;
    order.push_back(2);
    b_ready.set();
    co_return;
  };
  auto both = [&]() -> g::task<void> { co_await g::when_all(a(), b()); };
  g::sync_wait(both(), w.options());
  CHECK(order == std::vector<int>{1, 2, 3});
}

TEST_CASE("a failing branch stops its siblings; its exception, not theirs, is rethrown") {
  watchdog w(10s);
  g::async_event never;
  bool sibling_saw_stop = false;
  std::optional<aq::error> sibling_ended;
  auto checks_token = [&]() -> g::task<void> {
    co_await g::when_all(fail_with("root cause"), wait_until_stopped(never, sibling_ended));
    co_return;
  };
  auto observer = [&]() -> g::task<void> {
    try {
      co_await checks_token();
    } catch (const boom&) {
      sibling_saw_stop = sibling_ended.has_value();
      throw;
    }
  };
  CHECK_THROWS_AS(g::sync_wait(observer(), w.options()), boom);
  CHECK(sibling_saw_stop);
  const std::string sibling_error = sibling_ended ? sibling_ended->what() : "";
  CHECK_MESSAGE(sibling_error.find("run was asked to stop") != std::string::npos, sibling_error);
  CHECK_MESSAGE(sibling_error.find("when_all.cpp:") != std::string::npos, sibling_error);  // the co_await's location
  CHECK_FALSE(w.stop.stop_requested());  // ended by the failure, not by the watchdog
}

TEST_CASE("a stop of the run reaches every branch; the stop token says so") {
  std::stop_source stop;
  g::async_event never;
  int saw = 0;
  auto branch = [&]() -> g::task<void> {
    bool cancelled = false;
    try {
      co_await never;
    } catch (const aq::error& e) {
      cancelled = code_of(e) == aq::errc::cancelled;
    }
    const g::stop_token tok = co_await g::get_stop_token();
    saw += cancelled && tok.stop_requested() ? 1 : 0;
  };
  auto root = [&]() -> g::task<void> { co_await g::when_all(branch(), branch(), branch()); };
  std::jthread stopper([&] {
    std::this_thread::sleep_for(50ms);
    stop.request_stop();
  });
  g::sync_wait(root(), {.stop = stop.get_token(), .reactor = {}});
  CHECK(saw == 3);
}

TEST_CASE("a stop inside a nested when_all stays below it: the task that caught its failure and the other branches go on") {
  // Once any state of a run's stop tree is asked to stop, stop_requested() walks up the chain
  // (graph/stop.hpp): here the inner when_all's state stops, its parent and its siblings must not.
  watchdog w(10s);
  g::async_event never;
  g::async_event caught;
  std::optional<aq::error> inner_sibling_ended;
  bool catcher_stopped = true;
  bool other_branch_stopped = true;
  auto catcher = [&]() -> g::task<int> {
    try {
      co_await g::when_all(fail_with("inner"), wait_until_stopped(never, inner_sibling_ended));
    } catch (const boom&) {
    }
    catcher_stopped = (co_await g::get_stop_token()).stop_requested();
    caught.set();
    co_await g::when_all(value(1), value(2));  // a new when_all below a task that is not stopped runs
    co_return 7;
  };
  auto other = [&]() -> g::task<int> {
    co_await caught;  // suspends until the catcher has seen the inner failure: not cancelled
    other_branch_stopped = (co_await g::get_stop_token()).stop_requested();
    co_return 5;
  };
  auto root = [&]() -> g::task<int> {
    auto [a, b] = co_await g::when_all(catcher(), other());
    co_return a + b;
  };
  CHECK(g::sync_wait(root(), w.options()) == 12);
  CHECK((inner_sibling_ended && code_of(*inner_sibling_ended) == aq::errc::cancelled));
  CHECK_FALSE(catcher_stopped);
  CHECK_FALSE(other_branch_stopped);
  CHECK_FALSE(w.stop.stop_requested());
}

TEST_CASE("nested when_all and a branch that finishes synchronously before the others start") {
  auto inner = []() -> g::task<int> {
    auto [x, y] = co_await g::when_all(value(2), value(3));
    co_return x * y;
  };
  auto outer = [&]() -> g::task<int> {
    auto [a, b, c] = co_await g::when_all(inner(), value(10), inner());
    co_return a + b + c;
  };
  CHECK(g::sync_wait(outer()) == 22);
}

}  // namespace AQ_UNITY_ID
