// hello_dispatch — aqueduct's main demo: vector addition of a few million floats on the default
// agent, verified element by element, with the dispatch latency and throughput measured.
//
// With no GPU (every machine we build on) it runs on the emulated device: AQUEDUCT_EMULATE picks
// the machine (default mi300x), and the kernel is a host function reached through an emulated
// code object. With --gfx it runs clang-built machine code instead: hello_vadd.hip, built by
// clang-19 for the agent's processor (hello_vadd-<gfx>.co next to the build), executed by the
// emulator's ISA interpreter — AQUEDUCT_EMULATE=rx7900xtx (gfx1100), rx9070xt (gfx1201), mi300x
// (gfx942) or mi250x (gfx90a).
// --code FILE loads any gfx code object with a kernel `vadd(const float* a, const float* b,
// float* c, uint n)` that indexes with the workgroup id and a block of 256 — on a real GPU, or on
// the emulator when its processor is one the interpreter runs.
//
// Usage: hello_dispatch [--n ELEMENTS] [--latency DISPATCHES] [--throughput DISPATCHES] [--gfx | --code FILE]
#include <aqueduct/emu/isa.hpp>  // machine code on the emulated device (--gfx, --code)
#include <aqueduct/runtime.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
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

// The emulated kernel: reads its kernargs and ids from the initial registers (host_kernel_abi),
// touches memory only through the VM-checked context, one range check per wave and array.
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
void empty_host(aq::emu::workgroup_context&) {}

double us(clk::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

int fail(const char* what, std::string_view detail) {
  std::fprintf(stderr, "hello_dispatch: %s: %.*s\n", what, static_cast<int>(detail.size()), detail.data());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::uint32_t n = 4u << 20;
  int latency_runs = 1000, throughput_runs = 20000;
  std::string code_file;
  bool gfx = false;
  for (int i = 1; i < argc; ++i) {
    auto next = [&] { return i + 1 < argc ? argv[++i] : (std::fprintf(stderr, "missing value for %s\n", argv[i]), std::exit(2), argv[0]); };
    if (!std::strcmp(argv[i], "--n")) n = static_cast<std::uint32_t>(std::strtoul(next(), nullptr, 0));
    else if (!std::strcmp(argv[i], "--latency")) latency_runs = std::atoi(next());
    else if (!std::strcmp(argv[i], "--throughput")) throughput_runs = std::atoi(next());
    else if (!std::strcmp(argv[i], "--code")) code_file = next();
    else if (!std::strcmp(argv[i], "--gfx")) gfx = true;
    else {
      std::fprintf(stderr, "usage: %s [--n ELEMENTS] [--latency N] [--throughput N] [--gfx | --code FILE]\n", argv[0]);
      return 2;
    }
  }
  if (n == 0 || latency_runs < 1 || throughput_runs < 1) return fail("arguments", "counts must be positive");

  auto sys = aq::system::try_open();
  if (!sys) return fail("opening the system", sys.detail());
  std::printf("%s\n", sys->describe().c_str());
  const aq::agent& gpu = sys->default_agent();

  // ---- code ---------------------------------------------------------------------------------
  aq::result<aq::executable> exe = aq::failure(aq::errc::not_found, "no code");
  std::vector<std::byte> bytes;
  if (gfx && code_file.empty()) code_file = std::string(AQUEDUCT_HELLO_GFX_DIR) + "/hello_vadd-" + gpu.gfx_name() + ".co";
  if (!code_file.empty()) {
    std::printf("code: %s (machine code for %s)\n", code_file.c_str(), gpu.gfx_name().c_str());
    std::ifstream in(code_file, std::ios::binary);
    if (!in) return fail(gfx ? "no machine code for this agent (--gfx has code objects for the processors in HELLO_GFX_TARGETS, examples/hello_dispatch/CMakeLists.txt)" : "reading --code", code_file);
    for (char ch; in.get(ch);) bytes.push_back(static_cast<std::byte>(ch));
    exe = gpu.try_load(std::span<const std::byte>(bytes));
  } else if (gpu.emulated()) {
    aq::emu::host_code_object hco;
    hco.kernels.push_back(aq::emu::host_kernel::with_args<const float*, const float*, float*, std::uint32_t>("vadd", vadd_host));
    hco.kernels.push_back({"empty", empty_host, 0, 0});
    exe = aq::emu::try_load(gpu, hco);
  } else {
    return fail("code", "this is a real GPU: pass --code FILE with a gfx code object holding vadd");
  }
  if (!exe) return fail("loading code", exe.detail());
  // Typed: the parameter list is checked against the kernel's metadata (clang's .args, or the
  // host kernel's declared arguments) once, here; a dispatch with other types does not compile.
  auto vadd = exe->try_get_kernel<const float*, const float*, float*, std::uint32_t>("vadd");
  if (!vadd) return fail("kernel vadd", vadd.detail());
  auto empty = exe->try_get_untyped_kernel("empty");
  if (!empty) empty = exe->try_get_untyped_kernel("vadd");  // a real code object may have only vadd
  if (!empty) return fail("kernel for the latency loop", empty.detail());
  const aq::untyped_kernel& tiny = *empty;

  // ---- memory -------------------------------------------------------------------------------
  auto a = gpu.try_alloc<float>(n, aq::memory_kind::host), b = gpu.try_alloc<float>(n, aq::memory_kind::host), c = gpu.try_alloc<float>(n, aq::memory_kind::host);
  if (!a || !b || !c) return fail("allocating", !a ? a.detail() : !b ? b.detail() : c.detail());
  for (std::uint32_t i = 0; i < n; ++i) {
    (*a)[i] = static_cast<float>(i % 65536);
    (*b)[i] = 0.25f * static_cast<float>(i % 4096);
    (*c)[i] = -1.0f;
  }
  // Kernarg slots large enough for the kernel's (clang's add hidden arguments: 288 bytes for vadd).
  const std::uint32_t kernarg_bytes = std::max<std::uint32_t>(256, (vadd->info().kernarg_size + 63) / 64 * 64);
  auto q = gpu.try_make_queue(aq::aql, {.slots = 1024, .kernarg_bytes = kernarg_bytes});
  if (!q) return fail("creating the queue", q.detail());
  std::printf("queue %u: AQL, %u slots, typed for %s%s\n", q->queue_id(), q->size(), q->target_name().c_str(),
              q->emulated() ? ", emulated packet processor attached" : "");

  // ---- vector addition ----------------------------------------------------------------------
  const auto t0 = clk::now();
  auto idx = q->try_dispatch(*vadd, aq::grid{n}, aq::block{256}, *a, *b, *c, n);
  if (!idx) return fail("dispatch", idx.detail());
  if (auto w = q->try_wait(*idx, std::chrono::seconds(120)); !w) return fail("waiting for vadd", w.detail());
  const auto t1 = clk::now();
  std::uint64_t wrong = 0;
  for (std::uint32_t i = 0; i < n; ++i) {
    const float want = static_cast<float>(i % 65536) + 0.25f * static_cast<float>(i % 4096);
    if ((*c)[i] != want && wrong++ < 5)
      std::fprintf(stderr, "  c[%u] = %g, expected %g\n", i, static_cast<double>((*c)[i]), static_cast<double>(want));
  }
  const double secs = std::chrono::duration<double>(t1 - t0).count();
  std::printf("vadd: %u elements in %.2f ms (%.2f GB/s moved, %.1f M elements/s); %s\n", n, secs * 1e3,
              3.0 * 4.0 * n / secs / 1e9, n / secs / 1e6, wrong ? "VERIFICATION FAILED" : "verified element by element");
  if (wrong) return fail("verification", std::to_string(wrong) + " wrong elements");

  // ---- dispatch latency: one dispatch, wait for its completion, repeat ---------------------
  std::vector<double> lat;
  lat.reserve(static_cast<std::size_t>(latency_runs));
  for (int i = 0; i < latency_runs; ++i) {
    const auto s = clk::now();
    auto k = q->try_dispatch(tiny, aq::grid{1}, aq::block{1}, *a, *b, *c, 1u);
    if (!k) return fail("latency dispatch", k.detail());
    if (auto w = q->try_wait(*k, std::chrono::seconds(10)); !w) return fail("latency wait", w.detail());
    lat.push_back(us(clk::now() - s));
  }
  std::sort(lat.begin(), lat.end());
  std::printf("dispatch latency (submit -> completion seen by the host, %d runs): median %.1f us, p90 %.1f us, min %.1f us\n",
              latency_runs, lat[lat.size() / 2], lat[lat.size() * 9 / 10], lat.front());

  // ---- throughput: back-to-back dispatches, one wait at the end -----------------------------
  const auto s = clk::now();
  double submit_total = 0;
  for (int i = 0; i < throughput_runs; ++i) {
    const auto ds = clk::now();
    auto k = q->try_dispatch(tiny, aq::grid{1}, aq::block{1}, *a, *b, *c, 1u);
    submit_total += us(clk::now() - ds);
    if (!k) return fail("throughput dispatch", k.detail());
  }
  if (auto w = q->try_finish(std::chrono::seconds(60)); !w) return fail("throughput wait", w.detail());
  const double tsecs = std::chrono::duration<double>(clk::now() - s).count();
  std::printf("throughput: %d dispatches in %.2f ms = %.0f dispatches/s (host submit cost %.2f us per dispatch, incl. waits for ring space)\n",
              throughput_runs, tsecs * 1e3, throughput_runs / tsecs, submit_total / throughput_runs);
  return 0;
}
