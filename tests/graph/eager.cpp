// graph: the eager operations — on(q).dispatch on AQL and PM4 queues, on(sdma).copy/fill/wait,
// on(pm4).signal/wait/timestamp,
// co_await of a runtime ticket and signal, host(fn) — run now and resume when the device has
// finished; a device fault names the operation and its co_await; a stopped run submits nothing;
// an idle wait sleeps on the queue's KFD event; the eager dispatch path allocates nothing.
// Expected values are computed on the host from the same inputs (u32 arithmetic).
#include "kernels.hpp"

#include "allocation_counter.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <ctime>
#include <initializer_list>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

namespace aq = aqueduct;
namespace g = aqueduct::graph;
namespace rt = aqueduct::runtime;
using namespace graph_test;
using namespace std::chrono_literals;

namespace {
double thread_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}
}  // namespace

TEST_CASE("eager: AQL dispatch -> SDMA copy -> PM4 dispatch, each awaited, on one emulated GPU") {
  rig r;
  constexpr std::uint32_t n = 1000;
  auto x = r.host_buffer(n), y = r.host_buffer(n, 7), z = r.host_buffer(n, 7), w = r.host_buffer(n, 7);
  for (std::uint32_t i = 0; i < n; ++i) x[i] = i;
  auto prog = [&]() -> g::task<std::uint32_t> {
    co_await g::on(r.aql).dispatch(r.axpb_k, rt::grid{n}, rt::block{64}, y, x, 3u, 5u, n);
    co_await g::on(r.sdma).copy(z, y);
    co_await g::on(r.pm4).dispatch(r.add_k, rt::grid{n}, rt::block{64}, w, z, 11u, n);
    co_await g::on(r.sdma).fill(x.va(), 0xABCDu, 16);
    co_return w[n - 1];
  };
  CHECK(g::sync_wait(prog()) == 3 * (n - 1) + 5 + 11);
  std::uint32_t wrong = 0;
  for (std::uint32_t i = 0; i < n; ++i) wrong += w[i] != 3 * i + 5 + 11;
  CHECK(wrong == 0);
  CHECK(x[0] == 0xABCDu);
  CHECK(x[3] == 0xABCDu);
  CHECK(x[4] == 4);
}

TEST_CASE("eager: co_await of a runtime ticket, of a signal, and host(fn)") {
  rig r;
  auto out = r.host_buffer(4);
  auto sig = r.gpu.make_signal(1);
  std::jthread clear([&] {
    std::this_thread::sleep_for(20ms);
    sig.store(0);
  });
  auto prog = [&]() -> g::task<int> {
    co_await r.aql.dispatch(r.store_k, rt::grid{1}, rt::block{1}, out, 2u, 42u);  // the runtime's: submitted at once
    co_await sig;  // until 0
    const int v = co_await g::host([&] { return static_cast<int>(out[2]) + 1; });
    co_return v;
  };
  CHECK(g::sync_wait(prog()) == 43);
}

TEST_CASE("eager: until() returns the value it saw, for each condition, and may be awaited again") {
  rig r;
  auto sig = r.gpu.make_signal(5);
  auto prog = [&]() -> g::task<std::int64_t> {
    std::int64_t sum = co_await g::until(sig, aq::abi::signal_condition::eq, 5);
    sum += co_await g::until(sig, aq::abi::signal_condition::ne, 4);
    sum += co_await g::until(sig, aq::abi::signal_condition::lt, 6);
    sum += co_await g::until(sig, aq::abi::signal_condition::gte, 5);
    auto again = g::until(sig, aq::abi::signal_condition::gte, 5);  // an lvalue, awaited twice
    sum += co_await again;
    sig.store(7);
    sum += co_await again;
    co_return sum;
  };
  CHECK(g::sync_wait(prog()) == 5 + 5 + 5 + 5 + 5 + 7);
}

TEST_CASE("eager: after a stop, until() fails with errc::cancelled even on a ready signal; a pending one ends") {
  rig r;
  // Waits for `sig` to be 0 under `token`; the run must fail with errc::cancelled and `expected`.
  const auto check_cancelled = [](const rt::signal& sig, std::stop_token token, std::string_view expected) {
    try {
      g::sync_wait([&]() -> g::task<void> { co_await g::until(sig, aq::abi::signal_condition::eq, 0); }(),
                   {.stop = token, .reactor = {}});
      FAIL("not cancelled");
    } catch (const aq::error& e) {
      CHECK(static_cast<aq::errc>(e.code().value()) == aq::errc::cancelled);
      CHECK_MESSAGE(contains(e.what(), expected), e.what());
    }
  };
  auto ready = r.gpu.make_signal(0);
  std::stop_source stop;
  stop.request_stop();
  check_cancelled(ready, stop.get_token(), "wait for a signal at eager.cpp:");
  auto never = r.gpu.make_signal(1);
  std::stop_source later;
  std::jthread stopper([&] {
    std::this_thread::sleep_for(30ms);
    later.request_stop();
  });
  check_cancelled(never, later.get_token(), "ended: the run was asked to stop");
}

TEST_CASE("eager and captured: PM4 signal, signal wait and timestamp") {
  rig r;
  auto out = r.host_buffer(4);
  auto stamps = r.gpu.alloc<std::uint64_t>(2, rt::memory_kind::host);
  auto done = r.gpu.make_signal(1), gate = r.gpu.make_signal(1);
  auto prog = [&]() -> g::task<void> {
    co_await g::on(r.pm4).timestamp(stamps.va());
    co_await g::on(r.pm4).wait(gate.ref(), 0);  // the PM4 queue waits for the host to open the gate
    co_await g::on(r.pm4).dispatch(r.store_k, rt::grid{1}, rt::block{1}, out, 1u, 77u);
    co_await g::on(r.pm4).timestamp(stamps.va() + aq::byte_count(8));
    co_await g::on(r.pm4).signal(done.ref(), 5);
  };
  const auto check = [&](std::chrono::steady_clock::duration took) {
    CHECK(out[1] == 77);
    CHECK(done.load() == 5);
    CHECK(stamps[0] != 0);
    CHECK(stamps[1] >= stamps[0]);
    CHECK(took >= 30ms);  // the wait held the queue until the gate opened
  };
  {  // eagerly
    std::jthread open([&] {
      std::this_thread::sleep_for(40ms);
      gate.store(0);
    });
    const auto t0 = std::chrono::steady_clock::now();
    g::sync_wait(prog());
    check(std::chrono::steady_clock::now() - t0);
  }
  // Captured and replayed: the same nodes (timestamp, wait, kernel, timestamp, signal record).
  const g::task_graph tg = g::capture(prog());
  CHECK(tg.size() == 5);
  auto e = g::instantiate(tg);
  out[1] = 0;
  stamps[0] = stamps[1] = 0;
  done.store(1);
  gate.store(1);
  std::jthread open([&] {
    std::this_thread::sleep_for(40ms);
    gate.store(0);
  });
  const auto t0 = std::chrono::steady_clock::now();
  e.wait(e.launch());
  check(std::chrono::steady_clock::now() - t0);
}

TEST_CASE("a disabled PM4 signal record or timestamp leaves its packets out of the replay (docs/graph.md, Updates)") {
  rig r;
  auto stamp = r.gpu.alloc<std::uint64_t>(1, rt::memory_kind::host);
  auto sig = r.gpu.make_signal(1);
  g::node_id rec{}, ts{};
  auto prog = [&]() -> g::task<void> {
    ts = co_await g::on(r.pm4).timestamp(stamp.va());
    rec = co_await g::on(r.pm4).signal(sig.ref(), 5);
  };
  auto e = g::instantiate(g::capture(prog()));
  REQUIRE(e.try_set_enabled(rec, false));
  REQUIRE(e.try_set_enabled(ts, false));
  stamp[0] = 0;
  e.wait(e.launch());
  CHECK(sig.load() == 1);
  CHECK(stamp[0] == 0);
  REQUIRE(e.try_set_enabled(rec, true));
  REQUIRE(e.try_set_enabled(ts, true));
  e.wait(e.launch());
  CHECK(sig.load() == 5);
  CHECK(stamp[0] != 0);
}

TEST_CASE("eager: a faulting dispatch fails its co_await with the operation and the place named") {
  rig r;
  auto prog = [&]() -> g::task<void> {
    // An address no GPU has mapped.
    co_await g::on(r.aql).dispatch(r.store_k, rt::grid{1}, rt::block{1}, rt::device_ptr<std::uint32_t>::at(aq::gpu_va(0x10)), 0u, 1u);
  };
  try {
    g::sync_wait(prog());
    FAIL("no fault reported");
  } catch (const aq::error& e) {
    const std::string what = e.what();
    CHECK_MESSAGE(contains(what, "dispatch of kernel 'store'"), what);
    CHECK_MESSAGE(contains(what, "eager.cpp:"), what);
    CHECK_MESSAGE(contains(what, "AQL queue"), what);
  }
}

namespace {
// Runs `prog` (a task that waits for something no queue of r's GPU will do) while another thread,
// once the task sleeps, makes an AQL store to an address no GPU has mapped; the task must fail
// with the GPU's fault within 5 s, its message holding each of `want`.
template <class Prog>
void fails_with_gpu_fault(rig& r, Prog&& prog, std::initializer_list<std::string_view> want) {
  std::jthread faulter([&] {
    std::this_thread::sleep_for(100ms);
    (void)r.aql.try_dispatch(r.store_k, rt::grid{1}, rt::block{1}, rt::device_ptr<std::uint32_t>::at(aq::gpu_va(0x10)), 0u, 1u);
  });
  const auto t0 = std::chrono::steady_clock::now();
  try {
    g::sync_wait(prog());
    FAIL("the wait ended without the fault");
  } catch (const aq::error& e) {
    const std::string what = e.what();
    CHECK_MESSAGE(static_cast<aq::errc>(e.code().value()) == aq::errc::device_fault, what);
    CHECK_MESSAGE(contains(what, "GPU memory fault on gpu_id " + std::to_string(r.gpu.gpu_id()) + " at page 0x0 "), what);
    for (const std::string_view w : want) CHECK_MESSAGE(contains(what, std::string(w)), what);
  }
  CHECK(std::chrono::steady_clock::now() - t0 < 5s);
}
}  // namespace

// On a GPU a memory fault stops every queue of the process on that GPU for good (docs/runtime.md,
// "A GPU memory fault stops every queue of that GPU"): a task awaiting an operation on another
// queue of that GPU must fail with the fault, not sleep for ever. The reactor sleeps on the
// system's KFD memory event too (graph/device_events.hpp); before, it slept on the SDMA queue's
// event only and this test hung until killed (checked in session 26; a device wait ignores a stop
// request, so only ctest's timeout bounds it). The emulator evicts and sets the event with
// machine_config::memory_fault_events.
TEST_CASE("eager: a GPU memory fault on another queue ends a co_await on that GPU with the fault (KFD memory event)") {
  auto cfg = aq::emu::machine_config::try_parse("rx7900xtx").value();
  cfg.memory_fault_events = true;
  rig r(rt::system::try_open_emulated(std::move(cfg)).value());
  auto gate = r.gpu.make_signal(0);  // nobody opens it
  // The operation named, and where it was awaited.
  fails_with_gpu_fault(r, [&]() -> g::task<void> { co_await g::on(r.sdma).wait(gate.ref(), 1); }, {"SDMA", "eager.cpp:"});
}

// The same for a host-side co_await until() on a signal of that GPU: no queue of it will ever set
// the signal, so the wait ends with the fault (before session 27 it slept for ever).
TEST_CASE("eager: a GPU memory fault ends a co_await until() on a signal of that GPU with the fault") {
  rig r(rt::system::try_open_emulated(aq::emu::machine_config::try_parse("rx7900xtx").value()).value());
  auto sig = r.gpu.make_signal(1);  // nobody sets it to 0
  fails_with_gpu_fault(r, [&]() -> g::task<void> { co_await g::until(sig, aq::abi::signal_condition::eq, 0); },
                       {"wait for a signal at eager.cpp:"});
}

TEST_CASE("eager: after a stop, an operation fails with errc::cancelled and submits nothing") {
  rig r;
  auto out = r.host_buffer(1);
  std::stop_source stop;
  stop.request_stop();
  auto prog = [&]() -> g::task<void> {
    co_await g::on(r.pm4).dispatch(r.store_k, rt::grid{1}, rt::block{1}, out, 0u, 9u);
  };
  const auto before = r.pm4.submitted();
  try {
    g::sync_wait(prog(), {.stop = stop.get_token(), .reactor = {}});
    FAIL("not cancelled");
  } catch (const aq::error& e) {
    CHECK(static_cast<aq::errc>(e.code().value()) == aq::errc::cancelled);
    CHECK_MESSAGE(contains(e.what(), "dispatch of kernel 'store' at eager.cpp:"), e.what());
  }
  CHECK(r.pm4.submitted() == before);
  CHECK(out[0] == 0);
}

TEST_CASE("eager: waiting for the device sleeps on the queue's KFD event (almost no CPU), and wakes on it") {
  rig r;
  auto gate = r.gpu.make_signal(0);
  g::reactor reactor;
  // The SDMA queue polls the gate until the host opens it 300 ms later; the task waits for that.
  auto prog = [&]() -> g::task<void> { co_await g::on(r.sdma).wait(gate.ref(), 1); };
  // t0 before the opener starts: its 300 ms then lie wholly inside the measured wait (taken
  // after, a descheduled main thread measured 285 ms at load 12).
  const double cpu0 = thread_cpu_ms();
  const auto t0 = std::chrono::steady_clock::now();
  std::jthread opener([&] {
    std::this_thread::sleep_for(300ms);
    gate.store(1);
  });
  g::sync_wait(reactor, prog());
  const double cpu = thread_cpu_ms() - cpu0;
  const auto waited = std::chrono::steady_clock::now() - t0;
  CHECK_MESSAGE(cpu < 30.0, "the waiting thread used ", cpu, " ms of CPU");
  CHECK(waited >= 290ms);
  CHECK_MESSAGE(waited < 1s, "woke after ", std::chrono::duration<double, std::milli>(waited).count(), " ms");
  CHECK(reactor.sleeps() > 0);
}

// The runtime's queues ask for no interrupt per command (issue 11): a waiter about to block posts
// one (runtime::detail::arm_wake). The reactor must do the same, or it sleeps until max_sleep.
// With max_sleep = 5 s, a 50 ms kernel (AQL, PM4) or a 200 ms gate (SDMA) must end the wait in
// well under a second. (Without the reactor's arm, each wait took the whole 5 s: checked.)
TEST_CASE("eager: a reactor about to sleep asks each queue kind for the interrupt, and wakes on it") {
  rig r;
  auto out = r.host_buffer(1);
  auto gate = r.gpu.make_signal(0);
  const g::sync_wait_options opt{.stop = {}, .reactor = {.spin_for = std::chrono::microseconds(20), .max_sleep = std::chrono::seconds(5)}};
  auto timed = [&](auto prog) {
    const auto t0 = std::chrono::steady_clock::now();
    g::sync_wait(prog(), opt);
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  };
  const double aql = timed([&]() -> g::task<void> {
    co_await g::on(r.aql).dispatch(r.slow_store_k, rt::grid{1}, rt::block{1}, out, 0u, 7u);
  });
  CHECK(out[0] == 7);
  const double pm4 = timed([&]() -> g::task<void> {
    co_await g::on(r.pm4).dispatch(r.slow_store_k, rt::grid{1}, rt::block{1}, out, 0u, 8u);
  });
  CHECK(out[0] == 8);
  std::jthread opener([&] {
    std::this_thread::sleep_for(200ms);
    gate.store(1);
  });
  const double sdma = timed([&]() -> g::task<void> { co_await g::on(r.sdma).wait(gate.ref(), 1); });
  CHECK_MESSAGE(aql >= 45.0, "AQL: ", aql, " ms");
  CHECK_MESSAGE(aql < 1000.0, "AQL: woke after ", aql, " ms");
  CHECK_MESSAGE(pm4 >= 45.0, "PM4: ", pm4, " ms");
  CHECK_MESSAGE(pm4 < 1000.0, "PM4: woke after ", pm4, " ms");
  CHECK_MESSAGE(sdma >= 190.0, "SDMA: ", sdma, " ms");
  CHECK_MESSAGE(sdma < 1200.0, "SDMA: woke after ", sdma, " ms");
}

TEST_CASE("eager: dispatches awaited in steady state allocate nothing") {
  // The reactor spins instead of sleeping here: a sleep is AMDKFD_IOC_WAIT_EVENTS, which the
  // emulated device serves on the calling thread with its own allocations (the real one is a
  // system call); what is counted is graph/ and the runtime's dispatch path.
  rig r;
  auto out = r.host_buffer(1);
  std::size_t allocations = 99;
  auto prog = [&]() -> g::task<void> {
    for (int i = 0; i < 50; ++i) co_await g::on(r.aql).dispatch(r.store_k, rt::grid{1}, rt::block{1}, out, 0u, 1u);
    aq_test::allocations = 0;
    {
      aq_test::counting_allocations scope;
      for (std::uint32_t i = 0; i < 500; ++i) co_await g::on(r.aql).dispatch(r.store_k, rt::grid{1}, rt::block{1}, out, 0u, i);
    }
    allocations = aq_test::allocations.load();
  };
  g::sync_wait(prog(), {.stop = {}, .reactor = {.spin_for = std::chrono::seconds(2), .max_sleep = std::chrono::milliseconds(100)}});
  CHECK(allocations == 0);
  CHECK(out[0] == 499);
}

TEST_CASE("eager, traced: each operation's submit is a host span and its execution a span on its queue, joined by a flow") {
  rig r;
  constexpr std::uint32_t n = 256;
  auto x = r.host_buffer(n), y = r.host_buffer(n), z = r.host_buffer(n), w = r.host_buffer(n), v = r.host_buffer(n);
  for (std::uint32_t i = 0; i < n; ++i) x[i] = i;
  auto branch = [&](rt::pm4_queue& q) -> g::task<void> {
    co_await g::on(q).dispatch(r.add_k, rt::grid{n}, rt::block{64}, v, x, 1u, n);
  };
  auto prog = [&]() -> g::task<std::uint32_t> {
    co_await g::on(r.aql).dispatch(r.axpb_k, rt::grid{n}, rt::block{64}, y, x, 3u, 5u, n);
    co_await g::on(r.sdma).copy(z, y);
    co_await g::on(r.pm4).dispatch(r.add_k, rt::grid{n}, rt::block{64}, w, z, 11u, n);
    co_await g::when_all(branch(r.pm4));  // a branch's context carries the trace too
    co_return co_await g::host([&] { return w[n - 1]; });
  };
  g::trace tr;
  CHECK(g::sync_wait(prog(), {.trace = &tr}) == 3 * (n - 1) + 5 + 11);
  CHECK(v[n - 1] == n);

  // Expected: 4 queue operations (AQL dispatch, SDMA copy, PM4 dispatch, the branch's PM4
  // dispatch), each a "submit: ..." host span and an execution span; 1 host function span.
  std::vector<g::trace::span> submits, runs, host_fns;
  for (const auto& s : tr.spans()) {
    if (s.category != "host") runs.push_back(s);
    else if (s.name.starts_with("submit: ")) submits.push_back(s);
    else host_fns.push_back(s);
  }
  REQUIRE(submits.size() == 4);
  REQUIRE(runs.size() == 4);
  REQUIRE(host_fns.size() == 1);
  CHECK(contains(host_fns[0].name, "host function at eager.cpp:"));
  CHECK(contains(runs[0].name, "dispatch of kernel 'axpb' at eager.cpp:"));
  CHECK(contains(runs[1].name, "SDMA copy"));
  CHECK(contains(runs[2].name, "dispatch of kernel 'add'"));
  CHECK(contains(runs[3].name, "dispatch of kernel 'add'"));
  // Every span from the device's own clock: the AQL kernel's from its completion signal, the SDMA
  // copy's and the PM4 dispatches' from timestamps written around them on their queue (the
  // emulated engines stamp with the host's steady clock; PM4 in 10 ns ticks of the 100 MHz GPU
  // clock counter, so its times are up to 10 ns early).
  CHECK(runs[0].args == "\"clock\":\"device\"");
  CHECK(runs[1].args == "\"clock\":\"device\"");
  CHECK(runs[2].args == "\"clock\":\"device\"");
  CHECK(runs[3].args == "\"clock\":\"device\"");
  CHECK(runs[0].category == "kernel");  // as a replay's spans: the node kind
  CHECK(runs[1].category == "copy");
  CHECK(runs[0].pid == r.gpu.gpu_id());
  CHECK(runs[0].tid == r.aql.queue_id() + 1);
  CHECK(runs[1].tid == r.sdma.queue_id() + 1);
  CHECK(runs[2].tid == r.pm4.queue_id() + 1);
  CHECK(runs[3].tid == r.pm4.queue_id() + 1);
  for (std::size_t i = 0; i < runs.size(); ++i) {
    INFO(runs[i].name);
    CHECK(runs[i].flow == submits[i].flow);               // joined to its own submit
    CHECK(runs[i].start_ns + 10 >= submits[i].start_ns);  // ran after it was submitted
    CHECK(runs[i].end_ns >= runs[i].start_ns);
    CHECK(runs[i].end_ns <= host_fns[0].start_ns);        // the host saw it done after it ended
    if (i) CHECK(runs[i].start_ns + 10 >= runs[i - 1].end_ns);  // each awaited before the next was submitted
  }
  CHECK(host_fns[0].start_ns >= runs[3].end_ns);
  const std::string json = tr.to_json();
  CHECK(contains(json, "\"ph\":\"s\""));
  CHECK(contains(json, "\"ph\":\"f\""));
  CHECK(contains(json, "AQL queue"));

  SUBCASE("a faulting operation's span says so") {
    g::trace bad;
    auto faulting = [&]() -> g::task<void> {
      co_await g::on(r.aql).dispatch(r.store_k, rt::grid{1}, rt::block{1}, rt::device_ptr<std::uint32_t>::at(aq::gpu_va(0x10)), 0u, 1u);
    };
    CHECK_THROWS_AS(g::sync_wait(faulting(), {.trace = &bad}), aq::error);
    REQUIRE(bad.spans().size() == 2);
    CHECK(contains(bad.spans()[1].name, "dispatch of kernel 'store'"));
    CHECK(bad.spans()[1].args == "\"clock\":\"host\",\"failed\":true");
  }
}

TEST_CASE("trace::try_write names the path and the OS error when it cannot write") {
  g::trace tr;
  const auto w = tr.try_write("/nonexistent-dir/t.json");
  REQUIRE_FALSE(w.has_value());
  CHECK(w.error() == aq::errc::io_error);
  CHECK(contains(std::string(w.detail()), "/nonexistent-dir/t.json"));
  CHECK(contains(std::string(w.detail()), "No such file or directory"));
}

}  // namespace AQ_UNITY_ID
