// runtime: clang-19-built gfx1100 machine code runs on the emulated RX 7900 XTX through the ISA
// interpreter (emu/isa/), dispatched exactly as a user dispatches it: load the code object, get
// the kernel, dispatch with explicit arguments (the runtime fills the hidden ones the metadata
// lists). Every result is compared with a host computation. Each kernel runs for the corpus
// built at -O2 and -O3, wave32 and wave64 (tests/runtime/CMakeLists.txt); faults name the
// address, the trap and the PC.
#include <aqueduct/runtime.hpp>

#include <doctest/doctest.h>

#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

namespace aq = aqueduct;
namespace rt = aqueduct::runtime;

namespace {

std::vector<std::byte> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in.good(), path);
  std::vector<std::byte> bytes;
  for (char ch; in.get(ch);) bytes.push_back(static_cast<std::byte>(ch));
  return bytes;
}

const char* const variants[] = {"O2-w32", "O2-w64", "O3-w32", "O3-w64"};

std::string corpus_path(const char* variant) {
  const char* dir = std::getenv("AQUEDUCT_ISA_CORPUS_DIR");
  REQUIRE(dir != nullptr);
  return std::string(dir) + "/isa-corpus-gfx1100-" + variant + ".co";
}

std::uint32_t hash_ref(std::uint32_t x) {
  for (int r = 0; r < 4; ++r) {
    x ^= x >> 16; x *= 0x7feb352dU; x ^= x >> 15; x *= 0x846ca68bU; x ^= x >> 16; x = (x << 5) | (x >> 27);
  }
  return x + static_cast<std::uint32_t>(std::popcount(x)) + static_cast<std::uint32_t>(std::countl_zero(x | 1));
}

}  // namespace

TEST_CASE("gfx1100 corpus kernels on the interpreter equal the host reference (-O2/-O3, wave32/wave64)") {
  auto sys = rt::system::open({.machine = "rx7900xtx"});
  const auto& gpu = sys.default_agent();
  for (const char* v : variants) {
    CAPTURE(v);
    const auto bytes = read_file(corpus_path(v));
    auto exe = gpu.try_load(std::span<const std::byte>(bytes));
    INFO(std::string(exe.detail()));
    REQUIRE(exe.has_value());
    auto q = gpu.make_queue(aq::aql, {.slots = 16, .kernarg_bytes = 512});
    auto run = [&](const char* name, auto g, auto b, const auto&... args) {
      CAPTURE(name);
      auto k = exe->try_get_untyped_kernel(name);
      INFO(std::string(k.detail()));
      REQUIRE(k.has_value());
      auto idx = q.try_dispatch(*k, g, b, args...);
      REQUIRE(idx.has_value());
      auto w = q.try_wait(*idx, std::chrono::seconds(60));
      INFO(std::string(w.detail()));
      REQUIRE(w.has_value());
    };
    const std::uint32_t n = 1000;  // not a multiple of the workgroup: a partial last workgroup
    {
      auto a = gpu.alloc<float>(n, rt::memory_kind::host), b = gpu.alloc<float>(n, rt::memory_kind::host), c = gpu.alloc<float>(n, rt::memory_kind::host);
      for (std::uint32_t i = 0; i < n; ++i) a[i] = float(i) * 0.25f, b[i] = 3.0f - float(i), c[i] = -7.0f;
      run("vadd", rt::grid{n}, rt::block{128}, a, b, c, n);
      int bad = 0;
      for (std::uint32_t i = 0; i < n; ++i) bad += c[i] != a[i] + b[i];
      CHECK(bad == 0);
      run("saxpy", rt::grid{n}, rt::block{64}, 1.5f, a, c, n);
      bad = 0;
      for (std::uint32_t i = 0; i < n; ++i) bad += c[i] != std::fma(1.5f, a[i], a[i] + b[i]);
      CHECK(bad == 0);
    }
    {
      auto a = gpu.alloc<std::int32_t>(n, rt::memory_kind::host), b = gpu.alloc<std::int32_t>(n, rt::memory_kind::host);
      for (std::uint32_t i = 0; i < n; ++i) a[i] = static_cast<std::int32_t>(i * 2654435761u), b[i] = 0;
      run("gridstride", rt::grid{256}, rt::block{64}, a, b, n, 256u);
      int bad = 0;
      for (std::uint32_t i = 0; i < n; ++i) bad += b[i] != a[i] * 3 + (a[i] >> 2);
      CHECK(bad == 0);
    }
    {
      auto in = gpu.alloc<std::uint32_t>(n, rt::memory_kind::host), out = gpu.alloc<std::uint32_t>(8, rt::memory_kind::host), sum = gpu.alloc<std::uint32_t>(1, rt::memory_kind::host);
      for (std::uint32_t i = 0; i < n; ++i) in[i] = i * 7 + 1;
      for (std::uint32_t i = 0; i < 8; ++i) out[i] = 0xDEAD;
      sum[0] = 0;
      run("reduce", rt::grid{1024}, rt::block{256}, in, out, n);  // 4 workgroups, 8 barriers each
      for (std::uint32_t g = 0; g < 4; ++g) {
        std::uint32_t ref = 0;
        for (std::uint32_t i = g * 256; i < g * 256 + 256 && i < n; ++i) ref += in[i];
        CHECK(out[g] == ref);
      }
      run("atomics", rt::grid{n}, rt::block{256}, in, sum, n);
      std::uint32_t ref = 0;
      for (std::uint32_t i = 0; i < n; ++i) ref += in[i];
      CHECK(sum[0] == ref);
    }
    {
      auto in = gpu.alloc<std::uint32_t>(n, rt::memory_kind::host), out = gpu.alloc<std::uint32_t>(n, rt::memory_kind::host);
      for (std::uint32_t i = 0; i < n; ++i) in[i] = i * 0x9E3779B9u + 1;
      run("hash", rt::grid{n}, rt::block{64}, in, out, n);
      int bad = 0;
      for (std::uint32_t i = 0; i < n; ++i) bad += out[i] != hash_ref(in[i]);
      CHECK(bad == 0);
      for (std::uint32_t i = 0; i < n; ++i) in[i] = i + 1;
      run("divergent", rt::grid{n}, rt::block{64}, in, out, n);
      bad = 0;
      for (std::uint32_t i = 0; i < n; ++i) {
        std::uint32_t x = in[i], steps = 0;
        while (x != 1 && steps < 1000) { x = (x & 1) ? 3 * x + 1 : x / 2; ++steps; }
        bad += out[i] != steps;
      }
      CHECK(bad == 0);
    }
    {
      auto a = gpu.alloc<float>(n, rt::memory_kind::host), out = gpu.alloc<float>(n, rt::memory_kind::host);
      for (std::uint32_t i = 0; i < n; ++i) a[i] = (float(i) - 500.0f) * 0.37f;
      run("fmath", rt::grid{n}, rt::block{64}, a, out, n);
      int bad = 0;
      for (std::uint32_t i = 0; i < n; ++i) {
        const float x = a[i];
        // The host's correctly rounded sqrt and division; the interpreter's v_sqrt/v_rcp are
        // exact too (not the hardware's 1 ULP), so the results are bit-equal.
        const float ref = std::sqrt(x * x + 1.0f) / (x + 3.0f) + std::fma(x, 0.5f, -1.0f);
        bad += std::bit_cast<std::uint32_t>(out[i]) != std::bit_cast<std::uint32_t>(ref);
      }
      CHECK(bad == 0);
    }
    {
      auto a = gpu.alloc<long long>(n, rt::memory_kind::host), out = gpu.alloc<long long>(n, rt::memory_kind::host);
      for (std::uint32_t i = 0; i < n; ++i) a[i] = (static_cast<long long>(i) << 33) - 12345;
      run("ptr64", rt::grid{n}, rt::block{64}, a, out, n, -3ll);
      int bad = 0;
      for (std::uint32_t i = 0; i < n; ++i) bad += out[i] != a[n - 1 - i] * -3ll + static_cast<long long>(i);
      CHECK(bad == 0);
    }
  }
}

TEST_CASE("gfx1100 machine code faults: the exact bad address, and __builtin_trap with its PC") {
  auto sys = rt::system::open({.machine = "rx7900xtx"});
  const auto& gpu = sys.default_agent();
  const auto bytes = read_file(corpus_path("O2-w32"));
  auto exe = gpu.load(std::span<const std::byte>(bytes));
  {
    auto q = gpu.make_queue(aq::aql, {.slots = 16, .kernarg_bytes = 512});
    auto a = gpu.alloc<float>(64, rt::memory_kind::host), c = gpu.alloc<float>(64, rt::memory_kind::host);
    // b points 1 MiB past a's end, far from any mapping: element 0's load faults there.
    const std::uint64_t bad_b = reinterpret_cast<std::uintptr_t>(a.data()) + (1ull << 40);
    auto idx = q.try_dispatch(exe.get_untyped_kernel("vadd"), rt::grid{64}, rt::block{64}, a, bad_b, c, 64u);
    REQUIRE(idx.has_value());
    auto w = q.try_wait(*idx, std::chrono::seconds(10));
    REQUIRE_FALSE(w.has_value());
    const std::string d(w.detail());
    INFO(d);
    char want[40];
    std::snprintf(want, sizeof want, "0x%llx", static_cast<unsigned long long>(bad_b));
    CHECK(d.find(want) != std::string::npos);
    CHECK(d.find("memory violation") != std::string::npos);
    CHECK(d.find(" at pc 0x") != std::string::npos);
  }
  {
    auto q = gpu.make_queue(aq::aql, {.slots = 16, .kernarg_bytes = 512});
    auto out = gpu.alloc<std::uint32_t>(64, rt::memory_kind::host);
    auto idx = q.try_dispatch(exe.get_untyped_kernel("trap"), rt::grid{64}, rt::block{64}, out);
    REQUIRE(idx.has_value());
    auto w = q.try_wait(*idx, std::chrono::seconds(10));
    REQUIRE_FALSE(w.has_value());
    const std::string d(w.detail());
    INFO(d);
    CHECK(d.find("shader exception") != std::string::npos);
    CHECK(d.find("s_trap") != std::string::npos);
    CHECK(d.find("at pc 0x") != std::string::npos);
  }
}

TEST_CASE("gfx1100 machine code through a PM4 queue: the typed API, hidden arguments from the runtime") {
  auto sys = rt::system::open({.machine = "rx7900xtx"});
  const auto& gpu = sys.default_agent();
  for (const char* v : variants) {
    CAPTURE(v);
    const auto bytes = read_file(corpus_path(v));
    auto exe = gpu.load(std::span<const std::byte>(bytes));
    auto k = exe.try_get_kernel<const float*, const float*, float*, std::uint32_t>("vadd");
    INFO(std::string(k.detail()));
    REQUIRE(k.has_value());
    const std::uint32_t n = 777;
    auto a = gpu.alloc<float>(n, rt::memory_kind::host), b = gpu.alloc<float>(n, rt::memory_kind::host), c = gpu.alloc<float>(n, rt::memory_kind::host);
    for (std::uint32_t i = 0; i < n; ++i) a[i] = float(i), b[i] = 0.5f * float(i), c[i] = -1.0f;
    rt::pm4_queue_options po;
    po.kernarg_bytes = 512;  // clang's kernarg segment with the hidden arguments is 280 bytes
    auto q = gpu.make_queue(rt::pm4, po);
    auto t = q.try_dispatch(*k, rt::grid{n}, rt::block{256}, a, b, c, n);
    INFO(std::string(t.detail()));
    REQUIRE(t.has_value());
    auto w = q.try_wait(*t, std::chrono::seconds(60));
    INFO(std::string(w.detail()));
    REQUIRE(w.has_value());
    int bad = 0;
    for (std::uint32_t i = 0; i < n; ++i) bad += c[i] != a[i] + b[i];
    CHECK(bad == 0);
  }
}
