// runtime soak (issue 13; ctest label `long`): N seconds of random work — AQL and PM4 dispatches,
// SDMA copies, queue and buffer churn — from several threads under random faults (emu/fault_plan:
// memory faults, hangs, lost interrupts, CREATE_QUEUE and ALLOC errnos, device resets, PM4
// preemption). Every piece of work ends in exactly one of: done (its result checked against the
// host's), failed with an error the runtime reported, or lost (neither: a wait that returned
// success with wrong data, or a hang caught by the watchdog). The summary line gives work run,
// faults injected, faults reported and lost; the test fails unless lost == 0 and nothing leaked.
//   AQUEDUCT_SOAK_SECONDS (default 600), AQUEDUCT_SOAK_FAULTS (a fault plan, default below).
#include "host_kernels.hpp"

#include <doctest/doctest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace aq = aqueduct;
namespace rt = aqueduct::runtime;
namespace emu = aqueduct::emu;
using namespace rt_test;
using namespace std::chrono_literals;

namespace {

constexpr auto host = rt::memory_kind::host;
constexpr const char* default_faults =
    "seed=13,memory=2e-5,hang=2e-6,irq=0.02,create_queue=0.02:ENOMEM|ENOSPC|EBUSY|EINVAL,"
    "alloc=0.01:ENOMEM|EINVAL,reset=2e-4,preempt=2ms";

std::size_t thread_count() {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/task")) ++n;
  return n;
}

struct tally {
  std::mutex mu;
  std::uint64_t submitted = 0, done = 0, failed = 0, corrupted = 0;
  std::map<std::string, std::uint64_t> reported;  // errc name -> count
  std::map<std::string, std::uint64_t> work;      // kind -> done
  std::string first_corruption;
  void ok(const char* kind) {
    std::lock_guard l(mu);
    ++submitted, ++done, ++work[kind];
  }
  void error(const aq::failure& f) {
    std::lock_guard l(mu);
    ++submitted, ++failed, ++reported[f.code().message()];
  }
  void setup_error(const aq::failure& f) {  // a queue or buffer that could not be made: no work lost
    std::lock_guard l(mu);
    ++reported[f.code().message()];
  }
  void corrupt(const std::string& what) {
    std::lock_guard l(mu);
    ++submitted, ++corrupted;
    if (first_corruption.empty()) first_corruption = what;
  }
};

// One worker's objects: a few queues of each kind and its buffers, remade when a fault kills them.
struct worker {
  const rt::agent* gpu;
  const vadd_kernel* vadd;
  tally* t;
  std::mt19937 rng;
  std::optional<rt::queue> aql;
  std::optional<rt::pm4_queue> pm4;
  std::optional<rt::sdma_queue> sdma;
  std::optional<rt::buffer<float>> a, b, c;
  std::optional<rt::buffer<std::uint32_t>> x, y;
  static constexpr std::uint32_t n = 2048;
  std::atomic<std::uint64_t>* heartbeat;

  bool buffers() {
    if (a && b && c && x && y) return true;
    auto mk = [&](auto& opt, auto tag) {
      using T = decltype(tag);
      if (opt) return true;
      auto r = gpu->try_alloc<T>(n, host);
      if (!r) {
        t->setup_error(r.get_failure());
        return false;
      }
      opt.emplace(std::move(*r));
      return true;
    };
    return mk(a, float{}) && mk(b, float{}) && mk(c, float{}) && mk(x, std::uint32_t{}) && mk(y, std::uint32_t{});
  }
  template <class Q, class Kind, class O>
  bool ensure(std::optional<Q>& q, Kind kind, const O& o) {
    if (q) return true;
    auto r = gpu->try_make_queue(kind, o);
    if (!r) {
      t->setup_error(r.get_failure());
      return false;
    }
    q.emplace(std::move(*r));
    return true;
  }
  // The outcome of one wait: checked result, or the reported error (and the queue is remade).
  template <class Q, class Ticket, class Check>
  void finish(std::optional<Q>& q, const aq::result<Ticket>& tk, const char* kind, Check&& check) {
    heartbeat->fetch_add(1, std::memory_order_relaxed);
    if (!tk) {
      t->error(tk.get_failure());
      q.reset();
      return;
    }
    auto w = q->try_wait(*tk, 3s);  // an injected hang shows as a timeout
    if (!w) {
      t->error(w.get_failure());
      q.reset();  // bounded destroy (drain_timeout), which also ends an injected hang
      return;
    }
    if (std::string why = check(); !why.empty()) t->corrupt(std::string(kind) + ": " + why);
    else t->ok(kind);
  }

  void step() {
    if (!buffers()) return;
    const float base = float(rng() % 1000);
    for (std::uint32_t i = 0; i < n; ++i) (*a)[i] = float(i), (*b)[i] = base, (*c)[i] = -1.0f;
    auto vadd_right = [&]() -> std::string {
      for (std::uint32_t i = 0; i < n; ++i)
        if ((*c)[i] != float(i) + base) return "c[" + std::to_string(i) + "] wrong";
      return {};
    };
    switch (rng() % 8) {
      case 0: case 1: case 2:
        if (ensure(aql, rt::aql, rt::queue_options{.slots = 16, .drain_timeout = 100ms}))
          finish(aql, aql->try_dispatch(*vadd, rt::grid{n}, rt::block{64}, *a, *b, *c, n), "AQL", vadd_right);
        break;
      case 3: case 4:
        if (ensure(pm4, rt::pm4, rt::pm4_queue_options{.drain_timeout = 100ms}))
          finish(pm4, pm4->try_dispatch(*vadd, rt::grid{n}, rt::block{64}, *a, *b, *c, n), "PM4", vadd_right);
        break;
      case 5: case 6: {
        if (!ensure(sdma, rt::sdma, rt::sdma_queue_options{.drain_timeout = 100ms})) break;
        const std::uint32_t salt = rng();
        for (std::uint32_t i = 0; i < n; ++i) (*x)[i] = salt ^ i, (*y)[i] = 0;
        finish(sdma, sdma->try_copy(y->va(), x->va(), x->size_bytes()), "SDMA", [&]() -> std::string {
          for (std::uint32_t i = 0; i < n; ++i)
            if ((*y)[i] != (salt ^ i)) return "y[" + std::to_string(i) + "] wrong";
          return {};
        });
        break;
      }
      default:  // churn: drop a queue or a buffer
        switch (rng() % 4) {
          case 0: aql.reset(); break;
          case 1: pm4.reset(); break;
          case 2: sdma.reset(); break;
          default: a.reset(), x.reset(); break;
        }
    }
  }
};

}  // namespace

TEST_CASE("soak: random work under random faults; every piece of work done or reported, none lost") {
  const char* secs_env = std::getenv("AQUEDUCT_SOAK_SECONDS");
  const auto seconds = std::chrono::seconds(secs_env ? std::atoi(secs_env) : 600);
  const char* plan_env = std::getenv("AQUEDUCT_SOAK_FAULTS");
  const std::string plan_text = plan_env && *plan_env ? plan_env : default_faults;
  const auto base_threads = thread_count();
  tally t;
  emu::fault_counts injected;
  std::atomic<std::uint64_t> heartbeat{0};
  std::atomic<bool> running{true};
  std::thread watchdog([&] {  // a wait that never returns is lost work: end the run loudly
    std::uint64_t last = ~std::uint64_t{0};
    auto since = std::chrono::steady_clock::now();
    while (running) {
      std::this_thread::sleep_for(1s);
      const auto now_beat = heartbeat.load();
      if (now_beat != last) last = now_beat, since = std::chrono::steady_clock::now();
      if (std::chrono::steady_clock::now() - since > 120s) {
        std::fprintf(stderr, "soak: FAILED (hang): no work finished for 120 s\n");
        std::fflush(stderr);
        std::_Exit(3);
      }
    }
  });
  {
    auto cfg = emu::machine_config::parse("mi300x");
    cfg.faults = emu::fault_plan::try_parse(plan_text).value();
    auto sys = rt::system::try_open_emulated(std::move(cfg)).value();
    const auto& gpu = sys.default_agent();
    auto* dev = emu::device_of(gpu);
    auto exe = aq::emu::load(gpu, test_kernels());
    const auto vadd = get<vadd_kernel>(exe, "vadd");
    const auto end = std::chrono::steady_clock::now() + seconds;
    std::vector<std::thread> ts;
    for (unsigned w = 0; w < 3; ++w)
      ts.emplace_back([&, w] {
        worker k{&gpu, &vadd, &t, std::mt19937(1000 + w), {}, {}, {}, {}, {}, {}, {}, {}, &heartbeat};
        while (std::chrono::steady_clock::now() < end) k.step();
      });
    for (auto& th : ts) th.join();
    injected = dev->faults().counts();
    CHECK(dev->queues().empty());  // every queue the workers made was destroyed
  }
  running = false;
  watchdog.join();
  std::string reported;
  std::uint64_t reported_total = 0;
  for (const auto& [k, v] : t.reported) reported += (reported.empty() ? "" : ", ") + k + " " + std::to_string(v), reported_total += v;
  std::string work;
  for (const auto& [k, v] : t.work) work += (work.empty() ? "" : ", ") + k + " " + std::to_string(v);
  const std::uint64_t lost = t.submitted - t.done - t.failed;
  std::printf("soak: %lld s, plan \"%s\"\n  work run %llu: done %llu (%s), failed and reported %llu, corrupted %llu, lost %llu\n"
              "  faults injected %llu (injected/events: %s)\n  errors reported %llu (%s)\n",
              static_cast<long long>(seconds.count()), plan_text.c_str(), static_cast<unsigned long long>(t.submitted),
              static_cast<unsigned long long>(t.done), work.c_str(), static_cast<unsigned long long>(t.failed),
              static_cast<unsigned long long>(t.corrupted), static_cast<unsigned long long>(lost + t.corrupted),
              static_cast<unsigned long long>(injected.total()), injected.describe().c_str(),
              static_cast<unsigned long long>(reported_total), reported.c_str());
  std::fflush(stdout);
  INFO(t.first_corruption);
  CHECK(t.corrupted == 0);
  CHECK(lost == 0);
  CHECK(t.done > 0);
  CHECK(injected.total() > 0);
  CHECK(thread_count() <= base_threads);  // no engine thread left behind
}
