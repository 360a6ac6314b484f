// bench/dispatch/emu_processor_cost.cpp — N empty dispatches (grid 1, block 1, a host kernel that
// does nothing) pipelined through a runtime AQL queue on the emulated device, then one wait:
// the program scripts/emu-dispatch-cost.sh runs under callgrind (N = 1000 and 2000) to get the
// instructions the emulated AQL processor's thread retires per empty dispatch, a measure the
// machine's load does not change (docs/benchmarks.md, session 12). Outside valgrind it prints
// the wall time per dispatch (meaningful only on a quiet machine).
#include <aqueduct/runtime.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace aq = aqueduct;

namespace {
void empty_kernel(aq::emu::workgroup_context&) {}
}  // namespace

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 1000;
  if (n <= 0) {
    std::fprintf(stderr, "usage: emu_processor_cost [N]   (N > 0 empty dispatches, default 1000)\n");
    return 2;
  }
  aq::runtime::open_options how;
  how.device = aq::runtime::device_choice::emulated;
  aq::system sys = aq::system::open(how);
  const aq::agent& gpu = sys.default_agent();
  aq::emu::host_code_object hco;
  hco.kernels.push_back({"empty", empty_kernel, 0, 0});
  const aq::executable exe = aq::emu::try_load(gpu, hco).value();
  const aq::untyped_kernel k = exe.try_get_untyped_kernel("empty").value();
  aq::runtime::queue q = gpu.make_queue(aq::aql, {.slots = 1024, .wait = aq::sync::wait_policy::block()});
  for (int i = 0; i < 64; ++i) (void)q.dispatch(k, aq::grid{1}, aq::block{1});  // warm up
  q.finish(std::chrono::seconds(10));
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) (void)q.dispatch(k, aq::grid{1}, aq::block{1});
  q.finish(std::chrono::seconds(10));
  const auto t1 = std::chrono::steady_clock::now();
  std::printf("%d empty dispatches: %.1f ns each (wall; load-dependent)\n", n,
              std::chrono::duration<double, std::nano>(t1 - t0).count() / n);
}
