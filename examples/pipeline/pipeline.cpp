// pipeline: one coroutine program run eagerly, then captured and replayed — on two emulated GPUs.
//
//   in (host) --SDMA0--> a --AQL0--> b = p*a + q   --.
//                          `-AQL1--> c = r*a + s   --+--PM4--> d = b + c --SDMA0 (peer)--> d' (GPU 1)
//   d' --AQL (GPU 1)--> e = d' + t --SDMA1--> out (host)
//
// The same task runs eagerly once (each co_await submits and waits), then is captured into a
// graph: 7 nodes on 6 queues of 2 GPUs, with edges across queues, engines and GPUs carried on the
// device. It is replayed --replays times (10,000 by default) with new arguments each time (p, q, r,
// s, t), every result verified against the host's arithmetic. Writes pipeline.dot (Graphviz) and
// pipeline.trace.json (Chrome trace / Perfetto: the eager run's submits and operations, then the
// last replay's host launch and device nodes). The kernels are host functions; with --gfx they are
// clang-built machine code (pipeline.hip, built by clang-19: pipeline-<gfx>.co next to the build)
// run by the emulator's ISA interpreter, so every replay re-writes real kernargs and hidden
// arguments.
// Usage: pipeline [--replays N] [--n N] [--dir PATH] [--gfx]
#include <aqueduct/emu/isa.hpp>  // machine code on the emulated device (--gfx)
#include <aqueduct/graph.hpp>
#include <aqueduct/runtime.hpp>
#include <aqueduct/runtime/copy.hpp>

#include <chrono>
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
struct axpb_args {
  std::uint64_t y, x;
  std::uint32_t a, b, n;
};
void axpb(aq::emu::workgroup_context& ctx) {
  const aq::emu::host_workgroup wg(ctx);
  const auto k = wg.args<axpb_args>();
  wg.for_each_item([&](std::uint64_t i) {
    if (i < k.n) ctx.store<std::uint32_t>(k.y + 4 * i, k.a * ctx.load<std::uint32_t>(k.x + 4 * i) + k.b);
  });
}
struct sum_args {
  std::uint64_t out, x, y;
  std::uint32_t n;
};
void sum(aq::emu::workgroup_context& ctx) {
  const aq::emu::host_workgroup wg(ctx);
  const auto k = wg.args<sum_args>();
  wg.for_each_item([&](std::uint64_t i) {
    if (i < k.n) ctx.store<std::uint32_t>(k.out + 4 * i, ctx.load<std::uint32_t>(k.x + 4 * i) + ctx.load<std::uint32_t>(k.y + 4 * i));
  });
}
struct add_args {
  std::uint64_t out, in;
  std::uint32_t c, n;
};
void add(aq::emu::workgroup_context& ctx) {
  const aq::emu::host_workgroup wg(ctx);
  const auto k = wg.args<add_args>();
  wg.for_each_item([&](std::uint64_t i) {
    if (i < k.n) ctx.store<std::uint32_t>(k.out + 4 * i, ctx.load<std::uint32_t>(k.in + 4 * i) + k.c);
  });
}
using axpb_k = rt::kernel<std::uint32_t*, const std::uint32_t*, std::uint32_t, std::uint32_t, std::uint32_t>;
using sum_k = rt::kernel<std::uint32_t*, const std::uint32_t*, const std::uint32_t*, std::uint32_t>;
using add_k = rt::kernel<std::uint32_t*, const std::uint32_t*, std::uint32_t, std::uint32_t>;

aq::emu::host_code_object code() {
  aq::emu::host_code_object c;
  c.kernels.push_back(aq::emu::host_kernel::with_args<std::uint32_t*, const std::uint32_t*, std::uint32_t, std::uint32_t, std::uint32_t>("axpb", axpb));
  c.kernels.push_back(aq::emu::host_kernel::with_args<std::uint32_t*, const std::uint32_t*, const std::uint32_t*, std::uint32_t>("sum", sum));
  c.kernels.push_back(aq::emu::host_kernel::with_args<std::uint32_t*, const std::uint32_t*, std::uint32_t, std::uint32_t>("add", add));
  return c;
}

struct params {
  std::uint32_t p, q, r, s, t;
};
}  // namespace

int main(int argc, char** argv) {
  std::uint32_t replays = 10'000, n = 4096;
  std::string dir = ".";
  bool gfx = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--gfx")) gfx = true;
    else if (i + 1 < argc && !std::strcmp(argv[i], "--replays")) replays = static_cast<std::uint32_t>(std::atoi(argv[++i]));
    else if (i + 1 < argc && !std::strcmp(argv[i], "--n")) n = static_cast<std::uint32_t>(std::atoi(argv[++i]));
    else if (i + 1 < argc && !std::strcmp(argv[i], "--dir")) dir = argv[++i];
    else {
      std::fprintf(stderr, "usage: pipeline [--replays N] [--n N] [--dir PATH] [--gfx]\n");
      return 2;
    }
  }
  auto sys = rt::system::open({.device = rt::device_choice::emulated, .machine = "2*rx7900xtx"});
  const rt::agent g0 = sys.agents()[0], g1 = sys.agents()[1];
  // --gfx: the machine code for each agent's processor (a code object is loaded once per GPU).
  std::vector<std::byte> bytes;
  if (gfx) {
    const std::string path = std::string(AQUEDUCT_PIPELINE_GFX_DIR) + "/pipeline-" + g0.gfx_name() + ".co";
    std::ifstream f(path, std::ios::binary);
    if (!f) {
      std::fprintf(stderr, "pipeline: no machine code for %s: %s (PIPELINE_GFX_TARGETS, examples/pipeline/CMakeLists.txt)\n",
                   g0.gfx_name().c_str(), path.c_str());
      return 1;
    }
    for (char ch; f.get(ch);) bytes.push_back(static_cast<std::byte>(ch));
    std::printf("code: %s (machine code for %s, run by the ISA interpreter)\n", path.c_str(), g0.gfx_name().c_str());
  }
  auto load = [&](const rt::agent& a) { return gfx ? a.load(std::span<const std::byte>(bytes)) : aq::emu::load(a, code()); };
  auto exe0 = load(g0), exe1 = load(g1);
  const auto axpb0 = exe0.get_kernel<std::uint32_t*, const std::uint32_t*, std::uint32_t, std::uint32_t, std::uint32_t>("axpb");
  const auto sum0 = exe0.get_kernel<std::uint32_t*, const std::uint32_t*, const std::uint32_t*, std::uint32_t>("sum");
  const auto add1 = exe1.get_kernel<std::uint32_t*, const std::uint32_t*, std::uint32_t, std::uint32_t>("add");
  // Kernarg slots for clang's kernels too (explicit arguments + 256 bytes of hidden ones).
  auto aql0 = g0.make_queue(aq::aql, {.kernarg_bytes = 512}), aql0b = g0.make_queue(aq::aql, {.kernarg_bytes = 512});
  rt::pm4_queue_options po;
  po.kernarg_bytes = 512;
  auto pm40 = g0.make_queue(aq::pm4, po);
  auto sdma0 = g0.make_queue(aq::sdma), sdma1 = g1.make_queue(aq::sdma);
  auto aql1 = g1.make_queue(aq::aql, {.kernarg_bytes = 512});
  const auto host = rt::memory_kind::host, dev = rt::memory_kind::device;
  auto in = g0.alloc<std::uint32_t>(n, host), out = g1.alloc<std::uint32_t>(n, host);
  auto a = g0.alloc<std::uint32_t>(n, dev), b = g0.alloc<std::uint32_t>(n, dev), c = g0.alloc<std::uint32_t>(n, dev),
       d = g0.alloc<std::uint32_t>(n, dev);
  auto d1 = g1.alloc<std::uint32_t>(n, dev), e1 = g1.alloc<std::uint32_t>(n, dev);
  auto d1_on_0 = rt::peer_mapping::try_map(d1, g0).value();  // the peer copy runs on GPU 0's SDMA engine
  for (std::uint32_t i = 0; i < n; ++i) in[i] = i * 2654435761u;

  params cur{};
  g::node_id k_b{}, k_c{}, k_e{};
  auto program = [&](params x) -> g::task<void> {
    co_await g::on(sdma0).copy(a, in).label("copy in");
    auto left = [&]() -> g::task<void> {
      k_b = co_await g::on(aql0).dispatch(axpb0, rt::grid{n}, rt::block{256}, b, a, x.p, x.q, n).label("b = p*a + q");
    };
    auto right = [&]() -> g::task<void> {
      k_c = co_await g::on(aql0b).dispatch(axpb0, rt::grid{n}, rt::block{256}, c, a, x.r, x.s, n).label("c = r*a + s");
    };
    co_await g::when_all(left(), right());
    co_await g::on(pm40).dispatch(sum0, rt::grid{n}, rt::block{256}, d, b, c, n).label("d = b + c");
    co_await g::on(sdma0).copy(d1, d).label("peer copy to GPU 1");
    k_e = co_await g::on(aql1).dispatch(add1, rt::grid{n}, rt::block{256}, e1, d1, x.t, n).label("e = d + t");
    co_await g::on(sdma1).copy(out, e1).label("copy out");
  };
  auto wrong = [&](const params& x) {
    std::uint32_t bad = 0;
    for (std::uint32_t i = 0; i < n; ++i) bad += out[i] != (x.p * in[i] + x.q) + (x.r * in[i] + x.s) + x.t;
    return bad;
  };

  // 1. Eagerly.
  cur = {3, 1, 5, 2, 7};
  g::trace tr;
  auto t0 = std::chrono::steady_clock::now();
  g::sync_wait(program(cur), {.trace = &tr});
  const double eager_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (const auto bad = wrong(cur)) {
    std::printf("eager run: %u wrong elements\n", bad);
    return 1;
  }
  std::printf("eager run: %u elements verified in %.2f ms\n", n, eager_ms);

  // 2. Captured, instantiated, replayed with new arguments every time.
  g::task_graph tg = g::capture(program(cur));
  std::ofstream(dir + "/pipeline.dot") << tg.to_dot();
  auto exec = g::instantiate(tg, {.replay_slots = 4, .wait = {}, .trace = true});
  std::printf("captured %zu nodes on %zu queues of 2 GPUs; replaying %u times\n", exec.size(), exec.segments(), replays);
  std::mt19937 rng(2024);
  std::uint32_t failures = 0;
  g::replay_ticket last{};
  t0 = std::chrono::steady_clock::now();
  for (std::uint32_t i = 0; i < replays; ++i) {
    cur = {static_cast<std::uint32_t>(rng()), static_cast<std::uint32_t>(rng()), static_cast<std::uint32_t>(rng()),
           static_cast<std::uint32_t>(rng()), static_cast<std::uint32_t>(rng())};
    exec.try_set_args(k_b, b, a, cur.p, cur.q, n).value();
    exec.try_set_args(k_c, c, a, cur.r, cur.s, n).value();
    exec.try_set_args(k_e, e1, d1, cur.t, n).value();
    last = exec.launch();
    exec.wait(last);
    if (const auto bad = wrong(cur)) {
      if (++failures < 5) std::printf("replay %u: %u wrong elements\n", i, bad);
    }
  }
  const double replay_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  g::try_trace_replay(exec, last, tr).value();
  tr.try_write(dir + "/pipeline.trace.json").value();
  std::printf("%u replays: %u failed verification; %.3f ms per replay (launch, wait, verify %u elements)\n", replays, failures,
              replay_ms / replays, n);
  std::printf("wrote %s/pipeline.dot and %s/pipeline.trace.json (%zu spans)\n", dir.c_str(), dir.c_str(), tr.spans().size());
  return failures ? 1 : 0;
}
