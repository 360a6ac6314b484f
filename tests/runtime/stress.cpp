// runtime: stress (issue 13) — create/destroy storms of every queue kind from several threads;
// producers, waiters and destroyers together; signal reuse under load. Every piece of work is
// checked against values computed on the host; every wait is bounded and a watchdog ends the
// process on a hang. The default suite runs the short form; the `long` label runs
// runtime.stress_long (AQUEDUCT_STRESS_SCALE=100).
#include "host_kernels.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

namespace aq = aqueduct;
namespace rt = aqueduct::runtime;
namespace emu = aqueduct::emu;
using namespace rt_test;
using namespace std::chrono_literals;

namespace {

constexpr auto host = rt::memory_kind::host;

int scale() {
  const char* s = std::getenv("AQUEDUCT_STRESS_SCALE");
  const int v = s ? std::atoi(s) : 1;
  return v > 0 ? v : 1;
}

template <class F>
void bounded(std::chrono::seconds limit, const char* what, F&& f) {
  std::packaged_task<void()> task(std::forward<F>(f));
  auto fut = task.get_future();
  std::thread t(std::move(task));
  if (fut.wait_for(limit) != std::future_status::ready) {
    std::fprintf(stderr, "FAILED (hang): %s did not end within %lld s\n", what, static_cast<long long>(limit.count()));
    std::fflush(stderr);
    std::_Exit(3);
  }
  t.join();
  fut.get();
}

// Threads of this process. The first call starts and joins one thread, so that a runtime's own
// helper (ThreadSanitizer's background thread starts at the first pthread_create) is counted in
// the baseline rather than as a leaked engine thread.
std::size_t thread_count() {
  static const bool warmed = [] {
    std::thread([] {}).join();
    return true;
  }();
  (void)warmed;
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/task")) ++n;
  return n;
}

// The first failure of any thread, and a stop flag for the others.
struct first_failure {
  std::mutex mu;
  std::string text;
  std::atomic<bool> stop{false};
  void operator()(std::string why) {
    std::lock_guard lock(mu);
    if (text.empty()) text = std::move(why);
    stop = true;
  }
};

}  // namespace

TEST_CASE("stress: threads creating and destroying AQL, PM4 and SDMA queues, each running checked work") {
  const auto base_threads = thread_count();
  {
    auto sys = rt::system::open({.machine = "mi300x"});
    const auto& gpu = sys.default_agent();
    auto* dev = emu::device_of(gpu);
    auto exe = aq::emu::load(gpu, test_kernels());
    const auto vadd = get<vadd_kernel>(exe, "vadd");
    constexpr int threads = 3;
    const int rounds = 12 * scale();
    constexpr std::uint32_t n = 256;
    struct data {
      rt::buffer<float> a, b, c;
      rt::buffer<std::uint32_t> x, y;
    };
    std::vector<data> mem;
    for (int t = 0; t < threads; ++t) {
      mem.push_back({gpu.alloc<float>(n, host), gpu.alloc<float>(n, host), gpu.alloc<float>(n, host),
                     gpu.alloc<std::uint32_t>(n, host), gpu.alloc<std::uint32_t>(n, host)});
      for (std::uint32_t i = 0; i < n; ++i) mem.back().a[i] = float(i), mem.back().b[i] = float(t);
    }
    first_failure fail;
    std::atomic<int> done{0};
    bounded(300s, "the create/destroy storm", [&] {
      std::vector<std::thread> ts;
      for (int t = 0; t < threads; ++t)
        ts.emplace_back([&, t] {
          data& d = mem[static_cast<std::size_t>(t)];
          for (int r = 0; r < rounds && !fail.stop; ++r) {
            const int kind = (r + t) % 3;
            for (std::uint32_t i = 0; i < n; ++i) d.c[i] = -1.0f, d.x[i] = 0x1000u * std::uint32_t(t) + std::uint32_t(r) + i, d.y[i] = 0;
            if (kind == 0) {
              auto q = gpu.try_make_queue(rt::aql, {.slots = 16, .drain_timeout = 200ms});
              if (!q) return fail("make AQL: " + std::string(q.detail()));
              auto k = q->try_dispatch(vadd, rt::grid{n}, rt::block{64}, d.a, d.b, d.c, n);
              if (!k) return fail("AQL dispatch: " + std::string(k.detail()));
              if (auto w = q->try_wait(*k, 20s); !w) return fail("AQL wait: " + std::string(w.detail()));
            } else if (kind == 1) {
              auto q = gpu.try_make_queue(rt::pm4, {.drain_timeout = 200ms});
              if (!q) return fail("make PM4: " + std::string(q.detail()));
              auto k = q->try_dispatch(vadd, rt::grid{n}, rt::block{64}, d.a, d.b, d.c, n);
              if (!k) return fail("PM4 dispatch: " + std::string(k.detail()));
              if (auto w = q->try_wait(*k, 20s); !w) return fail("PM4 wait: " + std::string(w.detail()));
            } else {
              auto q = gpu.try_make_queue(rt::sdma, {.drain_timeout = 200ms});
              if (!q) return fail("make SDMA: " + std::string(q.detail()));
              auto k = q->try_copy(d.y.va(), d.x.va(), d.x.size_bytes());
              if (!k) return fail("SDMA copy: " + std::string(k.detail()));
              if (auto w = q->try_wait(*k, 20s); !w) return fail("SDMA wait: " + std::string(w.detail()));
              for (std::uint32_t i = 0; i < n; ++i)
                if (d.y[i] != d.x[i]) return fail("SDMA copy wrong at " + std::to_string(i));
              continue;
            }
            for (std::uint32_t i = 0; i < n; ++i)
              if (d.c[i] != float(i) + float(t)) return fail("kernel result wrong at " + std::to_string(i));
          }
          ++done;
        });
      for (auto& th : ts) th.join();
    });
    INFO(fail.text);
    CHECK(fail.text.empty());
    CHECK(done == threads);
    CHECK(dev->queues().empty());
  }
  CHECK(thread_count() <= base_threads);  // every engine thread joined
}

TEST_CASE("stress: producers, waiters and destroyers together on one agent") {
  auto sys = rt::system::open({.machine = "mi300x"});
  const auto& gpu = sys.default_agent();
  auto exe = aq::emu::load(gpu, test_kernels());
  const auto store = get<store_kernel>(exe, "store");
  // Two long-lived queues: producers dispatch into them (the multi-producer ring), waiters wait on
  // what they dispatched; a destroyer churns queues, buffers, signals and executables meanwhile.
  auto q0 = gpu.make_queue(rt::aql, {.slots = 64});
  auto q1 = gpu.make_queue(rt::aql, {.slots = 64});
  const std::uint32_t per_producer = 400u * static_cast<std::uint32_t>(scale());
  constexpr int producers = 3;
  auto out = gpu.alloc<std::uint32_t>(per_producer * producers, host);
  for (std::uint32_t i = 0; i < per_producer * producers; ++i) out[i] = 0;
  first_failure fail;
  std::atomic<bool> producing{true};
  struct ticket_box {
    std::mutex mu;
    std::vector<std::pair<int, rt::aql_ticket>> items;
  } box;
  std::atomic<std::uint64_t> waited{0}, churned{0};
  bounded(300s, "producers, waiters and destroyers", [&] {
    std::vector<std::thread> ts;
    for (int p = 0; p < producers; ++p)
      ts.emplace_back([&, p] {
        rt::queue& q = p % 2 ? q1 : q0;
        for (std::uint32_t i = 0; i < per_producer && !fail.stop; ++i) {
          const std::uint32_t index = std::uint32_t(p) * per_producer + i;
          auto t = q.try_dispatch(store, rt::grid{1}, rt::block{1}, out, index, index * 7u + 1u);
          if (!t) return fail("dispatch: " + std::string(t.detail()));
          std::lock_guard lock(box.mu);
          box.items.emplace_back(p % 2, *t);
        }
        // The destroyer is started last: on a fast run every dispatch can be in before it makes
        // its first round (CI, stop 23: churned == 0). Producing ends only once it has churned, so
        // the churn overlaps the producers' and waiters' work on every run.
        while (churned == 0 && !fail.stop) std::this_thread::yield();
      });
    for (int w = 0; w < 2; ++w)
      ts.emplace_back([&] {
        for (;;) {
          std::pair<int, rt::aql_ticket> it{};
          bool got = false;
          {
            std::lock_guard lock(box.mu);
            if (!box.items.empty()) {
              it = box.items.back();
              box.items.pop_back();
              got = true;
            }
          }
          if (!got) {
            if (!producing || fail.stop) return;
            std::this_thread::yield();
            continue;
          }
          rt::queue& q = it.first ? q1 : q0;
          if (auto r = q.try_wait(it.second, 20s); !r) return fail("wait: " + std::string(r.detail()));
          ++waited;
        }
      });
    ts.emplace_back([&] {  // the destroyer
      while (producing && !fail.stop) {
        auto q = gpu.try_make_queue(rt::aql, {.slots = 16, .drain_timeout = 100ms});
        auto s = gpu.try_make_queue(rt::sdma, {.drain_timeout = 100ms});
        auto b = gpu.try_alloc<float>(1024, host);
        auto sig = gpu.try_make_signal(1);
        auto e = aq::emu::try_load(gpu, test_kernels());
        if (!q || !s || !b || !sig || !e) return fail("destroyer could not make its objects");
        ++churned;
      }  // everything destroyed here, while the others work
    });
    for (int p = 0; p < producers; ++p) ts[static_cast<std::size_t>(p)].join();
    producing = false;
    for (std::size_t i = producers; i < ts.size(); ++i) ts[i].join();
  });
  INFO(fail.text);
  REQUIRE(fail.text.empty());
  CHECK(waited == std::uint64_t(per_producer) * producers);
  CHECK(churned > 0);
  std::uint32_t wrong = 0;
  for (std::uint32_t i = 0; i < per_producer * producers; ++i) wrong += out[i] != i * 7u + 1u;
  CHECK(wrong == 0);
}

TEST_CASE("stress: completion signals reused under load are never reused before their work completed") {
  auto sys = rt::system::open({.machine = "mi300x"});
  const auto& gpu = sys.default_agent();
  auto exe = aq::emu::load(gpu, test_kernels());
  const auto chain = get<rt::kernel<std::uint32_t*, std::uint32_t, std::uint32_t>>(exe, "chain");
  constexpr int threads = 3;
  const std::uint32_t steps = 150u * static_cast<std::uint32_t>(scale());
  first_failure fail;
  bounded(300s, "signal reuse under load", [&] {
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; ++t)
      ts.emplace_back([&, t] {
        auto q = gpu.make_queue(rt::aql, {.slots = 16});
        auto data = gpu.alloc<std::uint32_t>(steps + 1, host);
        for (std::uint32_t i = 0; i <= steps; ++i) data[i] = 0;
        data[0] = std::uint32_t(t) * 1000u;
        // Two signals, used alternately: each is re-armed only after waiting for it to reach 0.
        rt::signal sig[2] = {gpu.make_signal(0), gpu.make_signal(0)};
        for (std::uint32_t i = 1; i <= steps && !fail.stop; ++i) {
          rt::signal& s = sig[i % 2];
          if (auto r = s.try_wait_eq(0, 20s); !r) return fail("signal wait: " + std::string(r.detail()));
          s.store(1);
          rt::dispatch_options o;
          o.completion_signal = s.ref();
          o.barrier = true;  // step i reads step i - 1
          auto k = q.try_dispatch_with(o, chain, rt::grid{1}, rt::block{1}, data, i, 3u);
          if (!k) return fail("dispatch: " + std::string(k.detail()));
        }
        if (auto r = q.try_finish(20s); !r) return fail("finish: " + std::string(r.detail()));
        for (int k = 0; k < 2; ++k)
          if (auto r = sig[k].try_wait_eq(0, 20s); !r) return fail("final signal: " + std::string(r.detail()));
        for (std::uint32_t i = 0; i <= steps; ++i)
          if (data[i] != std::uint32_t(t) * 1000u + 3u * i) return fail("chain wrong at step " + std::to_string(i));
      });
    for (auto& th : ts) th.join();
  });
  INFO(fail.text);
  CHECK(fail.text.empty());
}

}  // namespace AQ_UNITY_ID
