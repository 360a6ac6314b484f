// pm4_dispatch — vector addition through a PM4 compute queue (KFD queue_type 0) on an emulated
// RX 7900 XTX (gfx1100), with the emulated MEC preempting the queue on a timer: every
// preemption saves the resident waves into the CWSR area the runtime allocated and restores
// them from it. gfx1100 is a DEGFX11_12113 part, so the queue is typed
// ring::pm4_queue<arch::gfx11_priv_target> and every dispatch sets COMPUTE_PGM_RSRC1.PRIV;
// without it the first preemption would hang the queue (docs/pm4.md).
// Verified element by element; prints timings and the preemption count.
// --gfx runs clang-built machine code instead of the host kernel: hello_vadd.hip, built by
// clang-19 for the machine's processor (examples/hello_dispatch/CMakeLists.txt), on the
// emulator's ISA interpreter — its waves are then what the CWSR area saves and restores
// (workgroup ids in SGPRs, or in TTMP7/TTMP9 on gfx12; the scratch slice).
//
// Usage: pm4_dispatch [--n ELEMENTS] [--preempt-us MICROSECONDS (0 = off)] [--runs DISPATCHES]
//                     [--machine PRESET] [--gfx]
#include <aqueduct/emu/isa.hpp>  // machine code on the emulated device (--gfx)
#include <aqueduct/runtime.hpp>
#include <aqueduct/runtime/pm4_queue.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace aq = aqueduct;
namespace rt = aqueduct::runtime;
using clk = std::chrono::steady_clock;

namespace {

struct vadd_args {
  std::uint64_t a, b, c;
  std::uint32_t n;
};

// The emulated kernel (aq::emu::host_kernel_abi): kernargs, ids and the grid from its registers.
void vadd_host(aq::emu::workgroup_context& ctx) {
  const aq::emu::host_workgroup wg(ctx);
  const auto args = wg.args<vadd_args>();
  wg.for_each_wave([&](std::uint64_t first, std::uint32_t lanes) {
    if (first >= args.n) return;
    const auto n = static_cast<std::uint32_t>(std::min<std::uint64_t>(lanes, args.n - first));
    const float* a = ctx.ptr<const float>(args.a + first * 4, n);
    const float* b = ctx.ptr<const float>(args.b + first * 4, n);
    float* c = ctx.ptr<float>(args.c + first * 4, n, true);
    for (std::uint32_t i = 0; i < n; ++i) c[i] = a[i] + b[i];
  });
}

int fail(const char* what, std::string_view detail) {
  std::fprintf(stderr, "pm4_dispatch: %s: %.*s\n", what, static_cast<int>(detail.size()), detail.data());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::uint32_t n = 4u << 20;
  long preempt_us = 500;
  int runs = 100;
  std::string machine = "rx7900xtx";
  bool gfx = false;
  for (int i = 1; i < argc; ++i) {
    auto next = [&] { return i + 1 < argc ? argv[++i] : (std::fprintf(stderr, "missing value for %s\n", argv[i]), std::exit(2), argv[0]); };
    if (!std::strcmp(argv[i], "--n")) n = static_cast<std::uint32_t>(std::strtoul(next(), nullptr, 0));
    else if (!std::strcmp(argv[i], "--preempt-us")) preempt_us = std::atol(next());
    else if (!std::strcmp(argv[i], "--runs")) runs = std::atoi(next());
    else if (!std::strcmp(argv[i], "--machine")) machine = next();
    else if (!std::strcmp(argv[i], "--gfx")) gfx = true;
    else {
      std::fprintf(stderr, "usage: %s [--n ELEMENTS] [--preempt-us US] [--runs N] [--machine PRESET] [--gfx]\n", argv[0]);
      return 2;
    }
  }
  if (n == 0 || runs < 1 || preempt_us < 0) return fail("arguments", "counts must be positive");

  auto sys = aq::system::try_open_emulated(machine);
  if (!sys) return fail("opening the emulated machine", sys.detail());
  std::printf("%s\n", sys->describe().c_str());
  const aq::agent& gpu = sys->default_agent();

  aq::result<aq::executable> exe = aq::failure(aq::errc::not_found, "no code");
  if (gfx) {
    const std::string path = std::string(AQUEDUCT_PM4_GFX_DIR) + "/hello_vadd-" + gpu.gfx_name() + ".co";
    std::ifstream in(path, std::ios::binary);
    if (!in) return fail("no machine code for this agent (--gfx: the processors in HELLO_GFX_TARGETS, examples/hello_dispatch/CMakeLists.txt)", path);
    std::vector<std::byte> bytes;
    for (char ch; in.get(ch);) bytes.push_back(static_cast<std::byte>(ch));
    std::printf("code: %s (%s machine code on the ISA interpreter)\n", path.c_str(), gpu.gfx_name().c_str());
    exe = gpu.try_load(std::span<const std::byte>(bytes));
  } else {
    aq::emu::host_code_object hco;
    hco.kernels.push_back({"vadd", vadd_host, sizeof(vadd_args), 0});
    exe = aq::emu::try_load(gpu, hco);
  }
  if (!exe) return fail("loading code", exe.detail());
  auto vadd = exe->try_get_untyped_kernel("vadd");
  if (!vadd) return fail("kernel vadd", vadd.detail());

  auto a = gpu.try_alloc<float>(n, aq::memory_kind::host), b = gpu.try_alloc<float>(n, aq::memory_kind::host), c = gpu.try_alloc<float>(n, aq::memory_kind::host);
  if (!a || !b || !c) return fail("allocating", !a ? a.detail() : !b ? b.detail() : c.detail());
  for (std::uint32_t i = 0; i < n; ++i) {
    (*a)[i] = static_cast<float>(i % 65536);
    (*b)[i] = 0.25f * static_cast<float>(i % 4096);
    (*c)[i] = -1.0f;
  }

  // The emulated MEC's preemption timer: a knob of the emulated device (its engines start with
  // the queues CREATE_QUEUE accepts).
  auto engines = sys->emulator()->get_engine_options();
  engines.pm4.preemption.interval = std::chrono::microseconds(preempt_us);
  sys->emulator()->set_engine_options(engines);
  aq::pm4_queue_options po;
  po.kernarg_bytes = std::max<std::uint32_t>(po.kernarg_bytes, (vadd->kernarg_size + 63) / 64 * 64);  // clang adds hidden arguments
  auto q = gpu.try_make_queue(aq::pm4, po);
  if (!q) return fail("creating the PM4 queue", q.detail());
  const auto& cw = q->resources().cwsr_sizes();
  std::printf("queue %u: PM4 (KFD queue_type 0), typed for %s, COMPUTE_PGM_RSRC1.PRIV %s; CWSR area: ctl_stack %u, "
              "cwsr_size %u bytes; preemption every %ld us\n",
              q->queue_id(), q->target_name().c_str(), q->sets_pm4_priv() ? "set on every dispatch" : "never set",
              cw.ctl_stack_size, cw.cwsr_size, preempt_us);

  // ---- vector addition, verified ---------------------------------------------------------------
  const auto t0 = clk::now();
  auto seq = q->try_dispatch(*vadd, aq::grid{n}, aq::block{256}, *a, *b, *c, n);
  if (!seq) return fail("dispatch", seq.detail());
  if (auto w = q->try_wait(*seq, std::chrono::seconds(120)); !w) return fail("waiting for vadd", w.detail());
  const auto t1 = clk::now();
  std::uint64_t wrong = 0;
  for (std::uint32_t i = 0; i < n; ++i) {
    const float want = static_cast<float>(i % 65536) + 0.25f * static_cast<float>(i % 4096);
    if ((*c)[i] != want && wrong++ < 5)
      std::fprintf(stderr, "  c[%u] = %g, expected %g\n", i, static_cast<double>((*c)[i]), static_cast<double>(want));
  }
  const double secs = std::chrono::duration<double>(t1 - t0).count();
  const auto first = sys->emulator()->engine(q->queue_id())->pm4()->preemption_stats();
  std::printf("vadd: %u elements in %.2f ms (%.1f M elements/s), %llu preemption(s) during it; %s\n", n, secs * 1e3,
              n / secs / 1e6, static_cast<unsigned long long>(first.preemptions),
              wrong ? "VERIFICATION FAILED" : "verified element by element");
  if (wrong) return fail("verification", std::to_string(wrong) + " wrong elements");

  // ---- repeated dispatches under preemption -------------------------------------------------------
  std::vector<double> lat;
  for (int i = 0; i < runs; ++i) {
    const auto s = clk::now();
    auto k = q->try_dispatch(*vadd, aq::grid{n}, aq::block{256}, *a, *b, *c, n);
    if (!k) return fail("dispatch", k.detail());
    if (auto w = q->try_wait(*k, std::chrono::seconds(120)); !w) return fail("waiting", w.detail());
    lat.push_back(std::chrono::duration<double, std::milli>(clk::now() - s).count());
  }
  std::sort(lat.begin(), lat.end());
  const auto st = sys->emulator()->engine(q->queue_id())->pm4()->preemption_stats();
  std::printf("%d more dispatches: median %.2f ms, min %.2f ms, max %.2f ms\n", runs, lat[lat.size() / 2], lat.front(), lat.back());
  std::printf("preemptions: %llu in total, %llu waves saved and restored through the CWSR area (largest save: "
              "%llu bytes of control stack, %llu bytes of workgroup state accounted)\n",
              static_cast<unsigned long long>(st.preemptions), static_cast<unsigned long long>(st.waves_saved),
              static_cast<unsigned long long>(st.max_ctl_bytes), static_cast<unsigned long long>(st.max_state_bytes));
  if (preempt_us > 0 && st.preemptions == 0) return fail("preemption", "the timer never preempted the queue");
  return 0;
}
