// bench/dispatch/main.cpp — bench_dispatch's main: Google Benchmark with this project's defaults
// (5 repetitions, medians, repetitions interleaved so that same-run ratios share the machine's
// noise), the machine and the published peer figures as context, and a closing table of
// medians and aqueduct/peer ratios (DESIGN.md §6: medians and same-run ratios, never absolute
// gates). Any --benchmark_* flag given on the command line overrides the defaults.
#include "bench_dispatch.hpp"

#include <benchmark/benchmark.h>

#include <sys/utsname.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <ostream>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#ifndef AQUEDUCT_BENCH_BUILD_TYPE
#  define AQUEDUCT_BENCH_BUILD_TYPE "unknown"
#endif

// The commit measured (bench_commit.cpp, written at build time by commit.cmake).
extern const char* const aqueduct_bench_commit;

namespace {

std::string read_first_line(const char* path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

void add_machine_context() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line, model = "unknown";
  int logical = 0;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("processor", 0) == 0) ++logical;
    if (model == "unknown" && line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) model = line.substr(colon + 2);
    }
  }
  benchmark::AddCustomContext("machine.cpu_model", model);
  benchmark::AddCustomContext("machine.logical_cpus", std::to_string(logical) + " in /proc/cpuinfo, " +
                                                          std::to_string(std::thread::hardware_concurrency()) +
                                                          " usable (hardware_concurrency)");
  utsname u{};
  if (uname(&u) == 0)
    benchmark::AddCustomContext("machine.kernel", std::string(u.sysname) + " " + u.release + " " + u.machine);
  benchmark::AddCustomContext("machine.loadavg_at_start", read_first_line("/proc/loadavg"));
  benchmark::AddCustomContext("aqueduct.commit", aqueduct_bench_commit);
#if defined(NDEBUG)
  benchmark::AddCustomContext("aqueduct.build", AQUEDUCT_BENCH_BUILD_TYPE ", NDEBUG (asserts off)");
#else
  benchmark::AddCustomContext("aqueduct.build", AQUEDUCT_BENCH_BUILD_TYPE ", asserts ON: numbers are not representative");
#endif
}

// spec/peers.md §2.1 and §2.2 — context only, never compared by code: other hardware, other runs.
void add_published_context() {
  const char* p = "published, other hardware: ";
  auto add = [&](const char* key, const char* value) { benchmark::AddCustomContext(key, std::string(p) + value); };
  add("peer.hip_enqueue_mi250x",
      "HIP hipLaunchKernelGGL null kernel, MI250X (Crusher): 1.34-3.74 us async enqueue per launch; 6.66 us with "
      "hipStreamSynchronize (petsc/petsc src/sys/objects/device/tests/ex1hip.hip.cpp)");
  add("peer.cuda_launch_v100", "CUDA <<<>>> null kernel, V100 (Summit): 9.48 us async / 12.83 us sync (petsc ex1cu.cu)");
  add("peer.cuLaunchKernel_gb200", "cuLaunchKernel raw host cost, GB200: 3.0 us (0 args) (meta-pytorch/tritonbench#1017)");
  add("peer.hsa_aql_apu",
      "HSA AQL do-nothing kernel, APU iGPU @720 MHz: ~7 us sync dispatch->signal, ~3.5 us batched, ~1 us persistent "
      "kernel (community.amd.com 'HSA: Kernel dispatch latencies'); Godavari APU 6-12 / 3-6 us "
      "(HSAFoundation/HSA-Drivers-Linux-AMD#18)");
  add("peer.graph_vs_pm4_w7900",
      "HIP graph 3.865 us per dispatch in a 941-node graph vs Vulkan/RADV PM4 0.82-0.88 us, W7900 "
      "(ROCm/rocm-systems#10834)");
  add("peer.mmio_doorbell_floor",
      "uncached MMIO 8-byte write 50-300 ns between TLPs (community.intel.com); a doorbell here is a plain "
      "cached store, so the publish numbers below exclude it");
}

struct ratio_reporter : benchmark::ConsoleReporter {
  using benchmark::ConsoleReporter::ConsoleReporter;

  void ReportRuns(const std::vector<Run>& runs) override {
    benchmark::ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) {
      if (r.error_occurred) continue;
      if (r.run_type == Run::RT_Aggregate && r.aggregate_name == "cv") {
        for (const char* c : {"per_packet", "per_dispatch", "per_item", "per_round_trip"})
          if (auto it = r.counters.find(c); it != r.counters.end()) cvs_[r.run_name.str()] = it->second.value;
        continue;
      }
      const bool median = r.run_type == Run::RT_Aggregate && r.aggregate_name == "median";
      const bool only = r.run_type == Run::RT_Iteration && r.repetitions <= 1;
      if (!median && !only) continue;
      for (const char* c : {"per_packet", "per_dispatch", "per_item", "per_round_trip"})
        if (auto it = r.counters.find(c); it != r.counters.end()) values_[r.run_name.str()] = it->second.value;
      if (auto it = r.counters.find("wall_per_packet"); it != r.counters.end()) walls_[r.run_name.str()] = it->second.value;
    }
  }

  void Finalize() override {
    std::ostream& os = GetOutputStream();
    char line[256];
    auto out_line = [&](const char* fmt, auto... a) {
      std::snprintf(line, sizeof line, fmt, a...);
      os << line;
    };
    out_line("\nsummary: medians on THIS machine (same run); publish: producer CPU time per packet; e2e: wall time per dispatch\n");
    out_line("  %-58s %12s %7s %16s\n", "benchmark", "CPU or e2e", "cv", "wall (publish)");
    for (const auto& [name, v] : values_) {
      char cv[16] = "-";
      if (auto c = cvs_.find(name); c != cvs_.end()) std::snprintf(cv, sizeof cv, "%.0f%%", c->second * 100);
      if (auto w = walls_.find(name); w != walls_.end())
        out_line("  %-58s %9.1f ns %7s %13.1f ns\n", name.c_str(), v * 1e9, cv, w->second * 1e9);
      else
        out_line("  %-58s %9.1f ns %7s\n", name.c_str(), v * 1e9, cv);
    }
    // <group>/<impl>/<rest>, group publish or publish_isolated: pair every aqueduct_* with every
    // peer_* of the same group and rest.
    std::map<std::string, std::map<std::string, double>> by_rest;
    for (const auto& [name, v] : values_) {
      if (name.rfind("publish", 0) != 0) continue;
      const auto a = name.find('/'), b = name.find('/', a + 1);
      if (a == std::string::npos || b == std::string::npos) continue;
      by_rest[name.substr(0, a) + " " + name.substr(b + 1)][name.substr(a + 1, b - a - 1)] = v;
    }
    out_line("\nratios: aqueduct / peer, median per-packet producer CPU time, same run (< 1: aqueduct cheaper)\n");
    for (const auto& [rest, impls] : by_rest)
      for (const auto& [ai, av] : impls) {
        if (ai.rfind("aqueduct", 0) != 0) continue;
        for (const auto& [pi, pv] : impls) {
          if (pi.rfind("peer", 0) != 0 || pv <= 0) continue;
          out_line("  %-36s %-20s / %-28s = %5.2f\n", rest.c_str(), ai.c_str(), pi.c_str(), av / pv);
        }
      }
    out_line("(peer_naive_memcpy_INCORRECT breaks the AQL publication order: a cost reference only)\n");
    os << std::flush;
    benchmark::ConsoleReporter::Finalize();
  }

  std::map<std::string, double> values_, walls_, cvs_;  // medians; cv = stddev/mean of the repetitions
};

}  // namespace

int main(int argc, char** argv) {
  // Defaults first: flags given by the user come later and win.
  std::vector<std::string> storage = {argv[0],
                                      "--benchmark_repetitions=5",
                                      "--benchmark_display_aggregates_only=true",
                                      "--benchmark_enable_random_interleaving=true",
                                      "--benchmark_min_time=0.2"};
  bool console = true;
  for (int i = 1; i < argc; ++i) {
    storage.emplace_back(argv[i]);
    if (std::strncmp(argv[i], "--benchmark_format=", 19) == 0 && std::strcmp(argv[i] + 19, "console") != 0) console = false;
  }
  std::vector<char*> args;
  for (auto& s : storage) args.push_back(s.data());
  int n = static_cast<int>(args.size());
  benchmark::Initialize(&n, args.data());
  if (benchmark::ReportUnrecognizedArguments(n, args.data())) return 1;

  add_machine_context();
  add_published_context();
  bench::register_publish_benchmarks();
  bench::register_e2e_benchmarks();
  bench::register_peer_benchmarks();
  if (console) {
    ratio_reporter reporter;
    benchmark::RunSpecifiedBenchmarks(&reporter);
  } else {
    benchmark::RunSpecifiedBenchmarks();
  }
  bench::shutdown_e2e();
  benchmark::Shutdown();
  return 0;
}
