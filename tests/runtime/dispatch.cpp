// runtime: open the emulated machine of every preset, check the agent against the spec's
// topology facts (spec/kfd.md §6.3, §6.5), load host kernels, dispatch vector addition and verify
// every element against host arithmetic. Also: device selection (argument, AQUEDUCT_EMULATE,
// real-only), several GPUs in one machine, and the errors of the loading gate.
#include "host_kernels.hpp"

#include <doctest/doctest.h>

#include <cstdlib>
#include <string>
#include <unistd.h>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

namespace aq = aqueduct;
namespace rt = aqueduct::runtime;
using namespace rt_test;

namespace {

// c = a + b with a[i] = i, b[i] = 2i + 0.5: expected 3i + 0.5, exact in float for i < 2^21.
void check_vadd(const rt::agent& gpu, std::uint32_t n, std::uint16_t block) {
  auto exe = aq::emu::load(gpu, test_kernels());
  auto vadd = get<vadd_kernel>(exe, "vadd");  // typed: checked against the declared arguments
  auto a = gpu.alloc<float>(n, rt::memory_kind::host), b = gpu.alloc<float>(n, rt::memory_kind::host), c = gpu.alloc<float>(n, rt::memory_kind::host);
  for (std::uint32_t i = 0; i < n; ++i) {
    a[i] = static_cast<float>(i);
    b[i] = 2.0f * static_cast<float>(i) + 0.5f;
    c[i] = -1.0f;
  }
  auto q = gpu.make_queue(aq::aql);
  const auto idx = q.dispatch(vadd, rt::grid{n}, rt::block{block}, a, b, c, n);
  auto w = q.try_wait(idx, std::chrono::seconds(20));
  INFO(std::string(w.detail()));
  REQUIRE(w.has_value());
  std::uint32_t bad = 0;
  for (std::uint32_t i = 0; i < n; ++i)
    if (c[i] != 3.0f * static_cast<float>(i) + 0.5f) ++bad;
  CHECK(bad == 0);
  // The dispatch retired; a wait that had to block also published its wake barrier (one more
  // packet, docs/runtime.md), which may have retired too.
  CHECK(q.read_index() >= idx.value() + 1);
  CHECK(q.read_index() <= idx.value() + 2);
}

struct env_guard {
  explicit env_guard(const char* v) {
    if (const char* o = std::getenv(rt::emulate_env)) old = o, had = true;
    if (v) ::setenv(rt::emulate_env, v, 1);
    else ::unsetenv(rt::emulate_env);
  }
  ~env_guard() {
    if (had) ::setenv(rt::emulate_env, old.c_str(), 1);
    else ::unsetenv(rt::emulate_env);
  }
  std::string old;
  bool had = false;
};

}  // namespace

TEST_CASE("every emulated preset: agent properties from the spec, vadd verified element by element") {
  struct preset {
    const char* machine;
    const char* gfx;
    std::uint32_t gfxv;
    aq::arch::family fam;
    std::uint32_t cus;  // simd_count / simd_per_cu of the spec's node (spec/kfd.md §6.5)
  };
  const preset presets[] = {
      {"mi300x", "gfx942", 90402, aq::arch::family::gfx94x, 304},
      {"rx7900xtx", "gfx1100", 110000, aq::arch::family::gfx11, 96},
      {"mi250x", "gfx90a", 90010, aq::arch::family::gfx90a, 0},
      {"rx6900xt", "gfx1030", 100300, aq::arch::family::gfx10_3, 80},
  };
  for (const auto& p : presets) {
    CAPTURE(p.machine);
    auto sys = rt::system::try_open_emulated(p.machine);
    INFO(std::string(sys.detail()));
    REQUIRE(sys.has_value());
    CHECK(sys->emulated());
    REQUIRE(sys->agents().size() == 1);
    const auto& gpu = sys->default_agent();
    CHECK(gpu.gfx_name() == p.gfx);
    CHECK(gpu.gfx_target_version() == p.gfxv);
    CHECK(gpu.family() == p.fam);
    if (p.cus) CHECK(gpu.compute_units() == p.cus);
    check_vadd(gpu, 100'003, 256);  // a partial last workgroup
  }
}

TEST_CASE("a machine of two GPUs: one queue per agent, both verified") {
  auto sys = rt::system::open({.machine = "mi300x,rx7900xtx"});
  REQUIRE(sys.agents().size() == 2);
  CHECK(sys.agents()[0].gfx_name() == "gfx942");
  CHECK(sys.agents()[1].gfx_name() == "gfx1100");
  CHECK(sys.agents()[0].gpu_id() != sys.agents()[1].gpu_id());
  for (const auto& gpu : sys.agents()) check_vadd(gpu, 4096, 64);
}

TEST_CASE("device selection: argument, AQUEDUCT_EMULATE, default, real only") {
  {
    env_guard g("rx7900xtx");
    auto sys = rt::system::open();
    CHECK(sys.emulated());
    CHECK(sys.default_agent().gfx_name() == "gfx1100");
    CHECK(sys.how_chosen().find("AQUEDUCT_EMULATE=rx7900xtx") != std::string::npos);
  }
  {
    env_guard g("mi250x");  // an explicit machine wins over the environment
    auto sys = rt::system::open({.machine = "rx6900xt"});
    CHECK(sys.default_agent().gfx_name() == "gfx1030");
  }
  {
    env_guard g("no-such-gpu");
    auto sys = rt::system::try_open();
    REQUIRE_FALSE(sys.has_value());
    CHECK(sys.error() == aq::errc::invalid_argument);
    CHECK(std::string(sys.detail()).find("unknown preset") != std::string::npos);
  }
  const bool have_kfd = ::access("/dev/kfd", R_OK | W_OK) == 0;
  {
    env_guard g(nullptr);
    auto sys = rt::system::try_open();
    REQUIRE(sys.has_value());
    if (!have_kfd) {
      CHECK(sys->emulated());
      CHECK(sys->default_agent().gfx_name() == "gfx942");  // default_machine = mi300x
      CHECK(sys->how_chosen().find("no /dev/kfd") != std::string::npos);
    }
  }
  {
    env_guard g("off");
    auto sys = rt::system::try_open();
    if (have_kfd) {
      CHECK((sys.has_value() || sys.error() != aq::errc::kfd_unavailable));
    } else {
      REQUIRE_FALSE(sys.has_value());
      CHECK(sys.error() == aq::errc::kfd_unavailable);
    }
  }
}

TEST_CASE("kernel arguments: mismatched layout and oversize kernargs are refused before the ring") {
  auto sys = rt::system::open({.machine = "mi300x"});
  const auto& gpu = sys.default_agent();
  auto exe = aq::emu::load(gpu, test_kernels());
  auto store = exe.get_untyped_kernel("store");
  auto out = gpu.alloc<std::uint32_t>(4, rt::memory_kind::host);
  auto q = gpu.make_queue(aq::aql, {.slots = 16});
  // store takes (u64, u32, u32) = 16 bytes; 3 x u64 lay out as 24.
  auto r = q.try_dispatch(store, rt::grid{1}, rt::block{1}, out, out, out);
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error() == aq::errc::invalid_argument);
  CHECK(q.write_index() == 0);
  auto missing = exe.try_get_untyped_kernel("nope");
  REQUIRE_FALSE(missing.has_value());
  CHECK(missing.error() == aq::errc::not_found);
}

TEST_CASE("host code objects are refused where they cannot run; names are checked") {
  auto sys = rt::system::open({.machine = "mi300x"});
  aq::emu::host_code_object bad;
  bad.kernels.push_back({std::string(48, 'x'), nothing, 0, 0});
  auto r = aq::emu::try_load(sys.default_agent(), bad);
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error() == aq::errc::invalid_argument);
}

}  // namespace AQ_UNITY_ID
