// The consumer of an installed aqueduct: Conan's test_package (CMakeDeps + CMakeToolchain), and
// tests/package's find_package(aqueduct CONFIG) and pkg-config builds. It includes
// <aqueduct/aqueduct.hpp>, opens the emulated machine and runs a vector addition on it, checking
// every element (expected: host arithmetic).
#include <aqueduct/aqueduct.hpp>

#include <cstdint>
#include <cstdio>

namespace aq = aqueduct;

namespace {
struct vadd_args { std::uint64_t a, b, c; std::uint32_t n; };

void vadd(aq::emu::workgroup_context& ctx) {
  const aq::emu::host_workgroup wg(ctx);
  const auto args = wg.args<vadd_args>();
  wg.for_each_item([&](std::uint64_t i) {
    if (i < args.n)
      ctx.store<float>(args.c + 4 * i, ctx.load<float>(args.a + 4 * i) + ctx.load<float>(args.b + 4 * i));
  });
}
}  // namespace

int main() {
  auto sys = aq::system::open({.machine = "rx7900xtx"});
  const aq::agent& gpu = sys.default_agent();
  auto exe = aq::emu::load(gpu, aq::emu::host_code_object{{
      aq::emu::host_kernel::with_args<const float*, const float*, float*, std::uint32_t>("vadd", vadd)}});
  auto k = exe.get_kernel<const float*, const float*, float*, std::uint32_t>("vadd");
  const std::uint32_t n = 100000;
  const auto host = aq::memory_kind::host;    // host-visible: the loop below fills them (default: device)
  auto a = gpu.alloc<float>(n, host), b = gpu.alloc<float>(n, host), c = gpu.alloc<float>(n, host);
  for (std::uint32_t i = 0; i < n; ++i) a[i] = float(i), b[i] = 2.0f;
  auto q = gpu.make_queue(aq::aql);
  q.wait(q.dispatch(k, aq::grid{n}, aq::block{256}, a, b, c, n));
  for (std::uint32_t i = 0; i < n; ++i)
    if (c[i] != float(i) + 2.0f) {
      std::printf("mismatch at %u: %f\n", i, static_cast<double>(c[i]));
      return 1;
    }
  std::printf("vector addition of %u floats on the emulated %s: verified\n", n, "rx7900xtx");
  std::printf("aqueduct %d.%d.%d consumer ok\n", aq::version_major, aq::version_minor, aq::version_patch);
  return 0;
}
