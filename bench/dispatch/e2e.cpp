// bench/dispatch/e2e.cpp — end-to-end dispatch latency through the real emulated path: the
// runtime facade (system::try_open_emulated → agent → AQL queue::try_dispatch / try_wait, and
// the PM4 queue of runtime/pm4_queue.hpp), an empty host kernel, 1 work-item.
//
// dispatch_wait: one dispatch, then wait until the host sees its completion (the queue's wait:
//   spin 50 µs, then block on the KFD event; or block at once for the _block variant).
// pipelined_64: 64 dispatches back to back, then one wait for all; per_dispatch is the time per
//   dispatch (host submit + emulated processor retire, overlapped).
// The emulator is not a GPU: this measures aqueduct's host path plus the emulated packet
// processor's thread hand-off, not a command processor (docs/benchmarks.md).
#include "bench_dispatch.hpp"

#include <aqueduct/runtime.hpp>
#include <aqueduct/runtime/pm4_queue.hpp>

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace {

namespace aq = aqueduct;
namespace rt = aqueduct::runtime;

void empty_kernel(aq::emu::workgroup_context&) {}

constexpr auto wait_timeout = std::chrono::seconds(10);

// Opened on first use, shared by every e2e benchmark, destroyed by bench::shutdown_e2e().
struct emulated {
  std::optional<aq::system> sys;
  std::optional<aq::executable> exe;
  std::optional<aq::untyped_kernel> kernel;
  std::optional<aq::untyped_kernel> pm4_kernel;
  std::optional<rt::queue> aql_default, aql_block;
  std::optional<rt::pm4_queue> pm4;
  std::string error;  // why a part is unavailable
  std::string pm4_error;
};
std::unique_ptr<emulated> g_emu;

emulated& get() {
  if (g_emu) return *g_emu;
  g_emu = std::make_unique<emulated>();
  emulated& e = *g_emu;
  auto sys = aq::system::try_open_emulated(bench::e2e_machine);
  if (!sys) {
    e.error = "opening the emulated " + std::string(bench::e2e_machine) + ": " + std::string(sys.detail());
    return e;
  }
  e.sys.emplace(std::move(*sys));
  const aq::agent& gpu = e.sys->default_agent();
  aq::emu::host_code_object hco;
  hco.kernels.push_back({"empty", empty_kernel, 0, 0});
  auto exe = aq::emu::try_load(gpu, hco);
  if (!exe) {
    e.error = "loading the empty host kernel: " + std::string(exe.detail());
    return e;
  }
  e.exe.emplace(std::move(*exe));
  auto k = e.exe->try_get_untyped_kernel("empty");
  if (!k) {
    e.error = std::string(k.detail());
    return e;
  }
  e.kernel.emplace(std::move(*k));
  auto qd = gpu.try_make_queue(aq::aql, {.slots = 1024});
  auto qb = gpu.try_make_queue(aq::aql, {.slots = 1024, .wait = aq::sync::wait_policy::block()});
  if (!qd || !qb) {
    e.error = "creating AQL queues: " + std::string(!qd ? qd.detail() : qb.detail());
    return e;
  }
  e.aql_default.emplace(std::move(*qd));
  e.aql_block.emplace(std::move(*qb));
  auto pk = e.exe->try_get_untyped_kernel("empty");
  if (!pk) {
    e.pm4_error = "PM4 kernel: " + std::string(pk.detail());
    return e;
  }
  auto pq = gpu.try_make_queue(aq::pm4);
  if (!pq) {
    e.pm4_error = "PM4 queue: " + std::string(pq.detail());
    return e;
  }
  e.pm4_kernel.emplace(std::move(*pk));
  e.pm4.emplace(std::move(*pq));
  return e;
}

template <class Q, class K>
void dispatch_wait(benchmark::State& state, Q& q, const K& k) {
  for (auto _ : state) {
    auto i = q.try_dispatch(k, aq::grid{1}, aq::block{1});
    if (!i) return state.SkipWithError(std::string(i.detail()).c_str());
    if (auto w = q.try_wait(*i, wait_timeout); !w) return state.SkipWithError(std::string(w.detail()).c_str());
  }
  state.counters["per_dispatch"] = benchmark::Counter(static_cast<double>(state.iterations()),
                                                      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

template <class Q, class K>
void pipelined(benchmark::State& state, Q& q, const K& k) {
  const auto n = state.range(0);
  for (auto _ : state) {
    for (std::int64_t j = 0; j < n; ++j) {
      auto i = q.try_dispatch(k, aq::grid{1}, aq::block{1});
      if (!i) return state.SkipWithError(std::string(i.detail()).c_str());
    }
    if (auto w = q.try_finish(wait_timeout); !w) return state.SkipWithError(std::string(w.detail()).c_str());
  }
  state.counters["per_dispatch"] = benchmark::Counter(static_cast<double>(state.iterations() * n),
                                                      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void bm_aql_dispatch_wait(benchmark::State& state) {
  emulated& e = get();
  if (!e.error.empty()) return state.SkipWithError(e.error.c_str());
  dispatch_wait(state, *e.aql_default, *e.kernel);
}
void bm_aql_dispatch_wait_block(benchmark::State& state) {
  emulated& e = get();
  if (!e.error.empty()) return state.SkipWithError(e.error.c_str());
  dispatch_wait(state, *e.aql_block, *e.kernel);
}
void bm_aql_pipelined(benchmark::State& state) {
  emulated& e = get();
  if (!e.error.empty()) return state.SkipWithError(e.error.c_str());
  pipelined(state, *e.aql_default, *e.kernel);
}
void bm_pm4_dispatch_wait(benchmark::State& state) {
  emulated& e = get();
  if (!e.error.empty()) return state.SkipWithError(e.error.c_str());
  if (!e.pm4) return state.SkipWithError(e.pm4_error.c_str());
  dispatch_wait(state, *e.pm4, *e.pm4_kernel);
}
void bm_pm4_pipelined(benchmark::State& state) {
  emulated& e = get();
  if (!e.error.empty()) return state.SkipWithError(e.error.c_str());
  if (!e.pm4) return state.SkipWithError(e.pm4_error.c_str());
  pipelined(state, *e.pm4, *e.pm4_kernel);
}

}  // namespace

namespace bench {

void register_e2e_benchmarks() {
  benchmark::RegisterBenchmark("e2e/aql/dispatch_wait", bm_aql_dispatch_wait)->UseRealTime();
  benchmark::RegisterBenchmark("e2e/aql/dispatch_wait_block", bm_aql_dispatch_wait_block)->UseRealTime();
  benchmark::RegisterBenchmark("e2e/aql/pipelined", bm_aql_pipelined)->ArgName("dispatches")->Arg(64)->UseRealTime();
  benchmark::RegisterBenchmark("e2e/pm4/dispatch_wait", bm_pm4_dispatch_wait)->UseRealTime();
  benchmark::RegisterBenchmark("e2e/pm4/pipelined", bm_pm4_pipelined)->ArgName("dispatches")->Arg(64)->UseRealTime();
}

void shutdown_e2e() {
  if (!g_emu) return;
  g_emu->pm4.reset();  // queues before the executable and the system
  g_emu->aql_default.reset();
  g_emu->aql_block.reset();
  g_emu->pm4_kernel.reset();
  g_emu->kernel.reset();
  g_emu->exe.reset();
  g_emu->sys.reset();
  g_emu.reset();
}

}  // namespace bench
