// runtime: the "Using it" snippet of docs/runtime.md, verbatim apart from the checks, so the
// README's example keeps compiling and computing the right answer (c[i] == i + 1).
#include <aqueduct/runtime.hpp>

#include <doctest/doctest.h>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

namespace aq = aqueduct;

namespace {
struct vadd_args { std::uint64_t a, b, c; std::uint32_t n; };

// An emulated kernel: a host function that finds its kernargs and ids in the initial registers.
void vadd(aq::emu::workgroup_context& ctx) {
  const aq::emu::host_workgroup wg(ctx);
  const auto args = wg.args<vadd_args>();
  wg.for_each_item([&](std::uint64_t i) {
    if (i < args.n)
      ctx.store<float>(args.c + 4 * i, ctx.load<float>(args.a + 4 * i) + ctx.load<float>(args.b + 4 * i));
  });
}
}  // namespace

TEST_CASE("docs/runtime.md 'Using it' snippet") {
  auto sys = aq::system::open({.machine = "mi300x"});  // the snippet: aq::system::open()
  const aq::agent& gpu = sys.default_agent();
  using vadd_params = aq::kernel<const float*, const float*, float*, std::uint32_t>;
  auto exe  = aq::emu::load(gpu, aq::emu::host_code_object{{
      aq::emu::host_kernel::with_args<const float*, const float*, float*, std::uint32_t>("vadd", vadd)}});
  // Typed: the parameters are checked once against the kernel's metadata (a gfx code object's
  // .args, here the host kernel's declared ones); a dispatch with other types does not compile.
  vadd_params k = exe.get_kernel<const float*, const float*, float*, std::uint32_t>("vadd");
  const std::uint32_t n = 1 << 20;
  const auto host = aq::memory_kind::host;    // host-visible: the loop below fills them (default: device)
  auto a = gpu.alloc<float>(n, host), b = gpu.alloc<float>(n, host), c = gpu.alloc<float>(n, host);
  for (std::uint32_t i = 0; i < n; ++i) a[i] = float(i), b[i] = 1.0f;
  auto q = gpu.make_queue(aq::aql);            // or aq::pm4, aq::sdma: the architecture is fixed here
  q.wait(q.dispatch(k, aq::grid{n}, aq::block{256}, a, b, c, n));  // waits on this queue's ticket
  std::uint32_t wrong = 0;
  for (std::uint32_t i = 0; i < n; ++i) wrong += c[i] != float(i) + 1.0f;
  CHECK(wrong == 0);
}

}  // namespace AQ_UNITY_ID
