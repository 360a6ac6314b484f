// copy — moves a buffer host → GPU 0 → GPU 1 → host through each source GPU's SDMA engine,
// prints the bandwidth of every hop and verifies the bytes that come back.
//
// Hops: (1) host memory (GTT, mapped to GPU 0) → GPU 0 VRAM on GPU 0's SDMA engine; (2) GPU 0
// VRAM → GPU 1 VRAM on GPU 0's engine — the source GPU's, DESIGN.md requirement 8 — after the
// destination is mapped to GPU 0 too (MAP_MEMORY_TO_GPU with both device ids); (3) GPU 1 VRAM →
// host memory mapped to GPU 1, on GPU 1's engine. Each hop runs --repeat times; the best time is
// reported. Without a real GPU (every machine we build on) it runs on the emulated device:
// AQUEDUCT_EMULATE picks the machine (default here "2*rx7900xtx"); the emulated engines copy with
// memcpy per packet, so the numbers measure the emulator and the host's memory, not a GPU.
//
// Usage: copy [--mib N] [--repeat R]
#include <aqueduct/runtime.hpp>
#include <aqueduct/runtime/copy.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace aq = aqueduct;
namespace rt = aqueduct::runtime;
using clk = std::chrono::steady_clock;

namespace {

int fail(const char* what, std::string_view detail) {
  std::fprintf(stderr, "copy: %s: %.*s\n", what, static_cast<int>(detail.size()), detail.data());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t mib = 256;
  int repeat = 3;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--mib" && i + 1 < argc) mib = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--repeat" && i + 1 < argc) repeat = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr, "usage: copy [--mib N] [--repeat R]\n");
      return 2;
    }
  }
  if (mib == 0 || repeat < 1) return fail("arguments", "--mib and --repeat must be positive");
  const std::uint64_t bytes = mib << 20;

  rt::open_options o;
  if (!std::getenv(rt::emulate_env)) o.machine = "2*rx7900xtx";
  auto sys = rt::system::try_open(o);
  if (!sys) return fail("open", sys.detail());
  std::printf("%s\n", sys->describe().c_str());
  if (sys->agents().size() < 2) return fail("machine", "this example needs two GPUs (e.g. AQUEDUCT_EMULATE=2*rx7900xtx)");
  const rt::agent& g0 = sys->agents()[0];
  const rt::agent& g1 = sys->agents()[1];

  auto in = g0.try_alloc<unsigned char>(bytes, rt::memory_kind::host);       // host, mapped to GPU 0
  auto d0 = g0.try_alloc<unsigned char>(bytes, rt::memory_kind::device);      // GPU 0 VRAM
  auto d1 = g1.try_alloc<unsigned char>(bytes, rt::memory_kind::device);      // GPU 1 VRAM
  auto out = g1.try_alloc<unsigned char>(bytes, rt::memory_kind::host);      // host, mapped to GPU 1
  if (!in || !d0 || !d1 || !out) return fail("alloc", !in ? in.detail() : !d0 ? d0.detail() : !d1 ? d1.detail() : out.detail());
  std::uint32_t x = 0x9E3779B9u;
  for (std::uint64_t i = 0; i < bytes; ++i) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    (*in)[i] = static_cast<unsigned char>(x);
  }
  std::memset(out->data(), 0, bytes);

  auto e0 = rt::copy_engine::try_create(g0);
  auto e1 = rt::copy_engine::try_create(g1);
  if (!e0) return fail("copy engine on GPU 0", e0.detail());
  if (!e1) return fail("copy engine on GPU 1", e1.detail());
  // The destination of the peer hop, mapped to the source GPU too.
  auto peer = rt::peer_mapping::try_map(*d1, g0);
  if (!peer) return fail("peer mapping", peer.detail());

  struct hop {
    const char* name;
    rt::copy_engine* engine;
    const rt::buffer<unsigned char>* dst;
    const rt::buffer<unsigned char>* src;
  };
  const hop hops[] = {{"host  -> GPU 0", &*e0, &*d0, &*in}, {"GPU 0 -> GPU 1", &*e0, &*d1, &*d0}, {"GPU 1 -> host ", &*e1, &*out, &*d1}};
  std::printf("%llu MiB per hop, best of %d%s\n", static_cast<unsigned long long>(mib), repeat,
              sys->emulated() ? " (emulated engines: host memcpy speed, not a GPU's)" : "");
  for (const hop& h : hops) {
    double best = 1e300;
    for (int r = 0; r < repeat; ++r) {
      const auto t0 = clk::now();
      if (auto c = h.engine->try_copy(*h.dst, *h.src); !c) return fail(h.name, c.detail());
      best = std::min(best, std::chrono::duration<double>(clk::now() - t0).count());
    }
    std::printf("  %s  on gpu_id %u's %s engine (%s): %8.2f GiB/s  (%.3f ms)\n", h.name, h.engine->gpu().gpu_id(),
                rt::to_string(h.engine->method()),
                h.engine->sdma() ? rt::to_string(h.engine->sdma()->engine()) : "shader",
                static_cast<double>(bytes) / best / (1u << 30), best * 1e3);
  }
  if (std::memcmp(out->data(), in->data(), bytes) != 0) {
    std::uint64_t i = 0;
    while ((*out)[i] == (*in)[i]) ++i;
    return fail("verify", "first difference at byte " + std::to_string(i));
  }
  std::printf("verified: %llu bytes came back unchanged\n", static_cast<unsigned long long>(bytes));
  return 0;
}
