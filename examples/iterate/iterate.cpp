// iterate: a loop whose exit the GPU decides — no host involvement per iteration.
//
// Solves A x = b for the tridiagonal A = tridiag(-1, 4, -1) (n unknowns) by Jacobi iteration on an
// emulated GPU. One iteration is two sweeps (x0 -> x1 -> x0) and a check kernel that writes the
// loop's condition word: 1 while the largest change of the second sweep is above --tol, else 0.
// The loop is a graph while_loop on a PM4 queue (graph/control.hpp): the command processor reads
// the word before each iteration, so a whole solve is one launch and one wait, however many
// iterations it takes. The same task runs eagerly once, then is captured and replayed (indirect
// mode) --replays
// times with a new right-hand side each time. Each solve is verified on the host: the iteration
// count and every x[i] equal a host Jacobi with the same float operations and stopping rule, and
// the residual max |b - A x| is small. The kernels are host functions; with --gfx they are
// clang-built machine code (iterate.hip, built by clang-19 for the agent's processor:
// iterate-<gfx>.co next to the build), run by the emulator's ISA interpreter or a real GPU.
// Usage: iterate [--replays N] [--n N] [--tol T] [--gfx]
#include <aqueduct/emu/isa.hpp>  // machine code on the emulated device (--gfx)
#include <aqueduct/graph.hpp>
#include <aqueduct/runtime.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

namespace aq = aqueduct;
namespace g = aqueduct::graph;
namespace rt = aqueduct::runtime;

namespace {
// One Jacobi sweep of row i: (b[i] + x[i-1] + x[i+1]) / 4, the same expression on host and device.
float sweep_row(const float* x, const float* b, std::uint32_t i, std::uint32_t n) {
  const float left = i > 0 ? x[i - 1] : 0.0f;
  const float right = i + 1 < n ? x[i + 1] : 0.0f;
  return (b[i] + left + right) * 0.25f;
}
struct sweep_args {
  std::uint64_t out, in, b;
  std::uint32_t n;
};
void sweep(aq::emu::workgroup_context& ctx) {
  const aq::emu::host_workgroup wg(ctx);
  const auto k = wg.args<sweep_args>();
  const float* in = ctx.ptr<const float>(k.in, k.n);
  const float* b = ctx.ptr<const float>(k.b, k.n);
  wg.for_each_item([&](std::uint64_t i) {
    if (i < k.n) ctx.store<float>(k.out + 4 * i, sweep_row(in, b, static_cast<std::uint32_t>(i), k.n));
  });
}
// check(word, iterations, now, before, n, tol): word = max |now - before| > tol; iterations += 1.
struct check_args {
  std::uint64_t word, iterations, now, before;
  std::uint32_t n;
  float tol;
};
void check(aq::emu::workgroup_context& ctx) {
  const auto k = aq::emu::host_workgroup(ctx).args<check_args>();
  float change = 0.0f;
  for (std::uint32_t i = 0; i < k.n; ++i)
    change = std::max(change, std::fabs(ctx.load<float>(k.now + 4ull * i) - ctx.load<float>(k.before + 4ull * i)));
  ctx.store<std::uint64_t>(k.word, change > k.tol ? 1 : 0);
  ctx.store<std::uint32_t>(k.iterations, ctx.load<std::uint32_t>(k.iterations) + 1);
}
struct start_args {
  std::uint64_t word, iterations;
};
void start(aq::emu::workgroup_context& ctx) {  // word = 1, iterations = 0
  const auto k = aq::emu::host_workgroup(ctx).args<start_args>();
  ctx.store<std::uint64_t>(k.word, 1);
  ctx.store<std::uint32_t>(k.iterations, 0);
}

using sweep_kernel = rt::kernel<float*, const float*, const float*, std::uint32_t>;
using check_kernel = rt::kernel<std::uint64_t*, std::uint32_t*, const float*, const float*, std::uint32_t, float>;
using start_kernel = rt::kernel<std::uint64_t*, std::uint32_t*>;

struct solver {
  rt::pm4_queue& q;
  sweep_kernel& sweep_k;
  check_kernel& check_k;
  start_kernel& start_k;
  rt::buffer<float>& x0;
  rt::buffer<float>& x1;
  rt::buffer<float>& b;
  rt::buffer<std::uint64_t>& word;
  rt::buffer<std::uint32_t>& iterations;
  std::uint32_t n;
  float tol;
  std::uint32_t max_iterations;

  g::task<void> iteration() {
    const rt::grid grid{n};
    co_await g::on(q).dispatch(sweep_k, grid, rt::block{64}, x1, x0, b, n).label("sweep x0->x1");
    co_await g::on(q).dispatch(sweep_k, grid, rt::block{64}, x0, x1, b, n).label("sweep x1->x0");
    co_await g::on(q).dispatch(check_k, rt::grid{1}, rt::block{1}, word, iterations, x0, x1, n, tol).label("converged?");
  }
  g::task<void> solve() {
    co_await g::on(q).dispatch(start_k, rt::grid{1}, rt::block{1}, word, iterations).label("start");
    co_await g::while_loop(g::on(q), word, [this] { return iteration(); }, {.max_iterations = max_iterations}).label("jacobi");
  }
};

// The host's Jacobi with the same operations and stopping rule: iteration count and solution.
std::uint32_t host_jacobi(const std::vector<float>& b, std::vector<float>& x, float tol, std::uint32_t max_iterations) {
  const auto n = static_cast<std::uint32_t>(b.size());
  x.assign(n, 0.0f);
  std::vector<float> y(n);
  for (std::uint32_t it = 1; it <= max_iterations; ++it) {
    for (std::uint32_t i = 0; i < n; ++i) y[i] = sweep_row(x.data(), b.data(), i, n);
    for (std::uint32_t i = 0; i < n; ++i) x[i] = sweep_row(y.data(), b.data(), i, n);
    float change = 0.0f;
    for (std::uint32_t i = 0; i < n; ++i) change = std::max(change, std::fabs(x[i] - y[i]));
    if (!(change > tol)) return it;
  }
  return max_iterations + 1;
}

bool verify(const char* what, const solver& s, const std::vector<float>& b) {
  std::vector<float> want;
  const std::uint32_t iters = host_jacobi(b, want, s.tol, s.max_iterations);
  if (s.iterations[0] != iters) {
    std::uint32_t differ = 0;
    for (std::uint32_t i = 0; i < s.n; ++i) differ += std::memcmp(&s.x0[i], &want[i], 4) != 0;
    std::fprintf(stderr, "%s: %u iterations on the device, %u on the host (%u of %u x differ from the host's)\n", what,
                 s.iterations[0], iters, differ, s.n);
    return false;
  }
  double residual = 0;
  for (std::uint32_t i = 0; i < s.n; ++i) {
    if (std::memcmp(&s.x0[i], &want[i], 4) != 0) {
      std::fprintf(stderr, "%s: x[%u] = %.9g on the device, %.9g on the host\n", what, i, s.x0[i], want[i]);
      return false;
    }
    const double ax = 4.0 * s.x0[i] - (i ? s.x0[i - 1] : 0.0f) - (i + 1 < s.n ? s.x0[i + 1] : 0.0f);
    residual = std::max(residual, std::fabs(b[i] - ax));
  }
  if (!(residual < 100 * s.tol)) {
    std::fprintf(stderr, "%s: residual %.3g after %u iterations\n", what, residual, iters);
    return false;
  }
  return true;
}
}  // namespace

int main(int argc, char** argv) {
  std::uint32_t replays = 100, n = 1024;
  float tol = 1e-5f;
  bool gfx = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--gfx") gfx = true;
    else if (a == "--replays" && i + 1 < argc) replays = static_cast<std::uint32_t>(std::strtoul(argv[++i], nullptr, 10));
    else if (a == "--n" && i + 1 < argc) n = static_cast<std::uint32_t>(std::strtoul(argv[++i], nullptr, 10));
    else if (a == "--tol" && i + 1 < argc) tol = std::strtof(argv[++i], nullptr);
    else {
      std::fprintf(stderr, "usage: iterate [--replays N] [--n N] [--tol T] [--gfx]\n");
      return 2;
    }
  }
  if (n == 0 || !(tol > 0)) {
    std::fprintf(stderr, "iterate: --n must be positive and --tol above 0\n");
    return 2;
  }
  auto sys = rt::system::open();
  auto gpu = sys.default_agent();
  std::printf("iterate: Jacobi on %u unknowns, tol %g, on %s (%s)\n", n, static_cast<double>(tol), gpu.gfx_name().c_str(),
              sys.how_chosen().c_str());
  std::vector<std::byte> bytes;
  if (gfx) {
    const std::string path = std::string(AQUEDUCT_ITERATE_GFX_DIR) + "/iterate-" + gpu.gfx_name() + ".co";
    std::ifstream f(path, std::ios::binary);
    if (!f) {
      std::fprintf(stderr, "iterate: no machine code for %s: %s (ITERATE_GFX_TARGETS, examples/iterate/CMakeLists.txt)\n",
                   gpu.gfx_name().c_str(), path.c_str());
      return 1;
    }
    for (char ch; f.get(ch);) bytes.push_back(static_cast<std::byte>(ch));
    std::printf("  code: %s (machine code)\n", path.c_str());
  } else if (!gpu.emulated()) {
    std::fprintf(stderr, "iterate: the host kernels run only on the emulator: pass --gfx for clang-built machine code\n");
    return 1;
  }
  const auto load = [&] {
    if (gfx) return gpu.load(std::span<const std::byte>(bytes));
    aq::emu::host_code_object code;
    code.kernels.push_back(aq::emu::host_kernel::with_args<float*, const float*, const float*, std::uint32_t>("sweep", sweep));
    code.kernels.push_back(
        aq::emu::host_kernel::with_args<std::uint64_t*, std::uint32_t*, const float*, const float*, std::uint32_t, float>("check", check));
    code.kernels.push_back(aq::emu::host_kernel::with_args<std::uint64_t*, std::uint32_t*>("start", start));
    return aq::emu::load(gpu, code);
  };
  auto exe = load();
  auto sweep_k = exe.get_kernel<float*, const float*, const float*, std::uint32_t>("sweep");
  auto check_k = exe.get_kernel<std::uint64_t*, std::uint32_t*, const float*, const float*, std::uint32_t, float>("check");
  auto start_k = exe.get_kernel<std::uint64_t*, std::uint32_t*>("start");
  rt::pm4_queue_options po;
  po.kernarg_bytes = 512;  // clang's kernels: explicit arguments + 256 bytes of hidden ones
  auto q = gpu.make_queue(aq::pm4, po);
  auto x0 = gpu.alloc<float>(n, rt::memory_kind::host), x1 = gpu.alloc<float>(n, rt::memory_kind::host);
  auto b = gpu.alloc<float>(n, rt::memory_kind::host);
  auto word = gpu.alloc<std::uint64_t>(1, rt::memory_kind::host);
  auto iterations = gpu.alloc<std::uint32_t>(1, rt::memory_kind::host);
  solver s{q, sweep_k, check_k, start_k, x0, x1, b, word, iterations, n, tol, 4096};

  std::mt19937 rng(12345);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> rhs(n);
  const auto new_problem = [&] {
    for (std::uint32_t i = 0; i < n; ++i) b[i] = rhs[i] = dist(rng);
    std::memset(x0.data(), 0, 4ull * n);
  };

  new_problem();
  g::sync_wait(s.solve());  // eagerly: the while_loop is still decided by the device
  if (!verify("eager", s, rhs)) return 1;
  std::printf("  eager solve: %u iterations, verified\n", s.iterations[0]);

  const g::task_graph graph = g::capture(s.solve());
  // Indirect mode: the segment (with its max_iterations COND_INDIRECT_BUFFERs) stays in graph-owned
  // memory and a launch writes one INDIRECT_BUFFER packet, so the host's cost does not grow with
  // the loop's bound (ring-copy mode would copy every packet into the ring at each launch).
  auto exec = g::instantiate(graph, {.replay_slots = 4, .wait = {}, .trace = false, .mode = g::replay_mode::indirect});
  std::uint64_t total_iterations = 0;
  std::chrono::nanoseconds host_time{0};
  const auto t0 = std::chrono::steady_clock::now();
  for (std::uint32_t r = 0; r < replays; ++r) {
    new_problem();
    const auto h0 = std::chrono::steady_clock::now();
    const auto t = exec.launch();  // one launch per solve: no host step per iteration
    host_time += std::chrono::steady_clock::now() - h0;
    exec.wait(t);
    if (!verify("replay", s, rhs)) return 1;
    total_iterations += s.iterations[0];
    if (replays >= 10 && (r + 1) % (replays / 10) == 0)
      std::printf("  %u/%u solves replayed, verified\n", r + 1, replays);
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("iterate: %u solves replayed (%llu device-decided iterations, %.1f per solve), every one verified; "
              "host launch %.2f us per solve, %.3f s wall\n",
              replays, static_cast<unsigned long long>(total_iterations), replays ? double(total_iterations) / replays : 0.0,
              replays ? std::chrono::duration<double, std::micro>(host_time).count() / replays : 0.0, wall);
  return 0;
}
