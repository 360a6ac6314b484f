// runtime: clang-19-built machine code runs on the emulated RX 7900 XTX (gfx1100), RX 9070 XT
// (gfx1201), MI300X (gfx942) and MI250X (gfx90a) through the ISA interpreter (emu/isa/),
// dispatched exactly as a user dispatches it: load the code object, get the kernel, dispatch
// with explicit arguments (the runtime fills the hidden ones the metadata lists). Every result is
// compared with a host computation, and every build's outputs with every other's, bit for bit
// (-O2 vs -O3, wave32 vs wave64, one generation vs another, AQL vs PM4). The corpus is built at
// -O2 and -O3, wave32 and wave64 for gfx1100/gfx1201, wave64 for gfx942/gfx90a
// (tests/runtime/CMakeLists.txt); faults name the address, the trap, the unsupported
// instruction and the PC. The corpus covers: vector add, saxpy, grid-stride loop, LDS tree
// reduction with barriers, global atomics, integer hash/bit ops, divergent loop, f32 math with
// division/sqrt/fma, 64-bit pointer arithmetic, a tiled LDS matmul on a 2-D grid, fp64, half
// precision (scalar, packed and uniform), a private array in scratch, float2/float4 (packed f32 on CDNA),
// calls that are not inlined (a stack frame in scratch) and cross-lane shuffles (ds_bpermute_b32).
#include <aqueduct/emu/isa.hpp>  // installs the ISA interpreter (machine code on the emulator)
#include <aqueduct/runtime.hpp>

#include <doctest/doctest.h>

#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

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

// The targets, their emulated machines and the corpus builds (tests/runtime/CMakeLists.txt):
// gfx1100 and gfx1201 at -O2/-O3, wave32/wave64; gfx942 and gfx90a (wave64 only) at -O2/-O3.
struct target_case {
  const char* machine;
  const char* processor;
  std::vector<const char*> variants;
};
const target_case gfx1100{"rx7900xtx", "gfx1100", {"O2-w32", "O2-w64", "O3-w32", "O3-w64"}};
const target_case gfx1201{"rx9070xt", "gfx1201", {"O2-w32", "O2-w64", "O3-w32", "O3-w64"}};
const target_case gfx942{"mi300x", "gfx942", {"O2", "O3"}};
const target_case gfx90a{"mi250x", "gfx90a", {"O2", "O3"}};

std::string corpus_path(const char* processor, const char* variant) {
  const char* dir = std::getenv("AQUEDUCT_ISA_CORPUS_DIR");
  REQUIRE(dir != nullptr);
  return std::string(dir) + "/isa-corpus-" + processor + "-" + variant + ".co";
}

// FNV-1a of a kernel's output bytes: what the differential compares across builds and targets.
template <class T>
std::uint64_t digest(const T* p, std::size_t n) {
  std::uint64_t h = 1469598103934665603ull;
  const auto* b = reinterpret_cast<const unsigned char*>(p);
  for (std::size_t i = 0; i < n * sizeof(T); ++i) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}
using digests = std::map<std::string, std::uint64_t>;

std::uint32_t hash_ref(std::uint32_t x) {
  for (int r = 0; r < 4; ++r) {
    x ^= x >> 16; x *= 0x7feb352dU; x ^= x >> 15; x *= 0x846ca68bU; x ^= x >> 16; x = (x << 5) | (x >> 27);
  }
  return x + static_cast<std::uint32_t>(std::popcount(x)) + static_cast<std::uint32_t>(std::countl_zero(x | 1));
}

// Every corpus kernel of one build, through an AQL (or PM4) queue, against host references;
// returns the digests of the outputs.
digests run_corpus(const rt::agent& gpu, const std::string& path, bool pm4 = false) {
  digests out_digest;
  {
    const auto bytes = read_file(path);
    auto exe = gpu.try_load(std::span<const std::byte>(bytes));
    INFO(std::string(exe.detail()));
    REQUIRE(exe.has_value());
    rt::pm4_queue_options po;
    po.kernarg_bytes = 512;  // clang's kernarg segment with the hidden arguments is up to 288 bytes
    std::optional<rt::queue> aql;
    std::optional<rt::pm4_queue> pq;
    if (pm4) pq.emplace(gpu.make_queue(rt::pm4, po));
    else aql.emplace(gpu.make_queue(aq::aql, {.slots = 16, .kernarg_bytes = 512}));
    // Submits and waits (both queue kinds submit the same way; one result type serves both).
    auto dispatch_wait = [&](const rt::untyped_kernel& k, auto g, auto b, const auto&... args) -> aq::result<void> {
      if (aql) {
        auto t = aql->try_dispatch(k, g, b, args...);
        return t ? aql->try_wait(*t, std::chrono::seconds(60)) : aq::result<void>(t.get_failure());
      }
      auto t = pq->try_dispatch(k, g, b, args...);
      return t ? pq->try_wait(*t, std::chrono::seconds(60)) : aq::result<void>(t.get_failure());
    };
    auto run = [&](const char* name, auto g, auto b, const auto&... args) {
      INFO("kernel " << std::string(name));
      auto k = exe->try_get_untyped_kernel(name);
      INFO(std::string(k.detail()));
      REQUIRE(k.has_value());
      auto w = dispatch_wait(*k, g, b, args...);
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
      out_digest["vadd"] = digest(c.data(), n);
      run("saxpy", rt::grid{n}, rt::block{64}, 1.5f, a, c, n);
      bad = 0;
      for (std::uint32_t i = 0; i < n; ++i) bad += c[i] != std::fma(1.5f, a[i], a[i] + b[i]);
      CHECK(bad == 0);
      out_digest["saxpy"] = digest(c.data(), n);
    }
    {
      auto a = gpu.alloc<std::int32_t>(n, rt::memory_kind::host), b = gpu.alloc<std::int32_t>(n, rt::memory_kind::host);
      for (std::uint32_t i = 0; i < n; ++i) a[i] = static_cast<std::int32_t>(i * 2654435761u), b[i] = 0;
      run("gridstride", rt::grid{256}, rt::block{64}, a, b, n, 256u);
      int bad = 0;
      // The reference wraps as the GPU's 32-bit integer unit does (a signed int would overflow:
      // UBSan, "signed integer overflow: -1640531535 * 3").
      for (std::uint32_t i = 0; i < n; ++i)
        bad += b[i] != static_cast<std::int32_t>(static_cast<std::uint32_t>(a[i]) * 3u + static_cast<std::uint32_t>(a[i] >> 2));
      CHECK(bad == 0);
      out_digest["gridstride"] = digest(b.data(), n);
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
      out_digest["reduce"] = digest(out.data(), 4);
      run("atomics", rt::grid{n}, rt::block{256}, in, sum, n);
      std::uint32_t ref = 0;
      for (std::uint32_t i = 0; i < n; ++i) ref += in[i];
      CHECK(sum[0] == ref);
      out_digest["atomics"] = sum[0];
    }
    {
      // LDS through a generic pointer (the shared aperture): s[t] = in[i]; partner t ^ 1 makes
      // s[t] = s[t] * 3 + t through flat_load/flat_store. The partial last workgroup has 40
      // work-items, an even count, so every partner of an element below n runs.
      auto in = gpu.alloc<std::uint32_t>(n, rt::memory_kind::host), out = gpu.alloc<std::uint32_t>(n, rt::memory_kind::host);
      for (std::uint32_t i = 0; i < n; ++i) in[i] = i * 2246822519u + 5, out[i] = 0;
      run("flatlds", rt::grid{n}, rt::block{64}, in, out, n);
      int bad = 0;
      for (std::uint32_t i = 0; i < n; ++i) bad += out[i] != in[i] * 3u + (i & 63u);
      CHECK(bad == 0);
      out_digest["flatlds"] = digest(out.data(), n);
    }
    {
      auto in = gpu.alloc<std::uint32_t>(n, rt::memory_kind::host), out = gpu.alloc<std::uint32_t>(n, rt::memory_kind::host);
      for (std::uint32_t i = 0; i < n; ++i) in[i] = i * 0x9E3779B9u + 1;
      run("hash", rt::grid{n}, rt::block{64}, in, out, n);
      int bad = 0;
      for (std::uint32_t i = 0; i < n; ++i) bad += out[i] != hash_ref(in[i]);
      CHECK(bad == 0);
      out_digest["hash"] = digest(out.data(), n);
      for (std::uint32_t i = 0; i < n; ++i) in[i] = i + 1;
      run("divergent", rt::grid{n}, rt::block{64}, in, out, n);
      bad = 0;
      for (std::uint32_t i = 0; i < n; ++i) {
        std::uint32_t x = in[i], steps = 0;
        while (x != 1 && steps < 1000) { x = (x & 1) ? 3 * x + 1 : x / 2; ++steps; }
        bad += out[i] != steps;
      }
      CHECK(bad == 0);
      out_digest["divergent"] = digest(out.data(), n);
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
      out_digest["fmath"] = digest(out.data(), n);
    }
    {
      auto a = gpu.alloc<long long>(n, rt::memory_kind::host), out = gpu.alloc<long long>(n, rt::memory_kind::host);
      for (std::uint32_t i = 0; i < n; ++i) a[i] = (static_cast<long long>(i) << 33) - 12345;
      run("ptr64", rt::grid{n}, rt::block{64}, a, out, n, -3ll);
      int bad = 0;
      for (std::uint32_t i = 0; i < n; ++i) bad += out[i] != a[n - 1 - i] * -3ll + static_cast<long long>(i);
      CHECK(bad == 0);
      out_digest["ptr64"] = digest(out.data(), n);
    }
    {
      const std::uint32_t m = 50;  // not a multiple of the 16x16 tile: partial tiles on both edges
      auto A = gpu.alloc<float>(m * m, rt::memory_kind::host), B = gpu.alloc<float>(m * m, rt::memory_kind::host),
           C = gpu.alloc<float>(m * m, rt::memory_kind::host);
      for (std::uint32_t i = 0; i < m * m; ++i) A[i] = float(i % 17) * 0.5f - 3.0f, B[i] = float(i % 13) * 0.25f + 1.0f, C[i] = -1.0f;
      run("matmul", rt::grid{64, 64}, rt::block{16, 16}, A, B, C, m);  // 16 workgroups of 256, 2 barriers per tile
      int bad = 0;
      for (std::uint32_t r = 0; r < m; ++r)
        for (std::uint32_t c = 0; c < m; ++c) {
          float acc = 0.0f;  // the kernel's order: tile by tile, fma by fma (padding adds fma(0, 0, acc) = acc)
          for (std::uint32_t k = 0; k < m; ++k) acc = std::fma(A[r * m + k], B[k * m + c], acc);
          bad += std::bit_cast<std::uint32_t>(C[r * m + c]) != std::bit_cast<std::uint32_t>(acc);
        }
      CHECK(bad == 0);
      out_digest["matmul"] = digest(C.data(), m * m);
    }
    {
      auto a = gpu.alloc<double>(n, rt::memory_kind::host), out = gpu.alloc<double>(n, rt::memory_kind::host);
      for (std::uint32_t i = 0; i < n; ++i) a[i] = (double(i) - 400.0) * 1.37 + 1e-3 * i;
      run("dmath", rt::grid{n}, rt::block{64}, a, out, n);
      int bad = 0;
      for (std::uint32_t i = 0; i < n; ++i) {
        const double x = a[i];
        // Correctly rounded sqrt and division, as clang's f64 lowering on AMDGPU computes them;
        // x * x + 1.0 is contracted into one fma (HIP's default -ffp-contract=fast-honor-pragmas).
        const double ref = std::sqrt(std::fma(x, x, 1.0)) / (x + 3.0) + std::fma(x, 0.5, -1.0) + double(static_cast<long long>(x * 7.0));
        bad += std::bit_cast<std::uint64_t>(out[i]) != std::bit_cast<std::uint64_t>(ref);
      }
      CHECK(bad == 0);
      out_digest["dmath"] = digest(out.data(), n);
    }
    {
      auto a = gpu.alloc<_Float16>(n, rt::memory_kind::host), b = gpu.alloc<_Float16>(n, rt::memory_kind::host),
           out = gpu.alloc<_Float16>(n, rt::memory_kind::host);
      auto fout = gpu.alloc<float>(n, rt::memory_kind::host);
      for (std::uint32_t i = 0; i < n; ++i) a[i] = _Float16((float(i) - 500.0f) * 0.0625f), b[i] = _Float16(float(i % 37) * 0.375f - 4.0f);
      run("half", rt::grid{n}, rt::block{64}, a, b, out, fout, n);
      int bad = 0, fbad = 0;
      for (std::uint32_t i = 0; i < n; ++i) {
        const _Float16 x = a[i], y = b[i];
        // Fused in half precision: round(x*y + 1.5) once, then round(r - y/4) (y/4 is exact).
        _Float16 r = _Float16(std::fma(double(x), double(y), 1.5));
        r = r > x ? r : x;
        r = _Float16(double(r) - double(y) / 4.0);
        bad += std::bit_cast<std::uint16_t>(out[i]) != std::bit_cast<std::uint16_t>(r);
        fbad += std::bit_cast<std::uint32_t>(fout[i]) != std::bit_cast<std::uint32_t>(std::fma(float(y), float(r), float(x)));
      }
      CHECK(bad == 0);
      CHECK(fbad == 0);
      out_digest["half"] = digest(out.data(), n) ^ digest(fout.data(), n);
      auto a2 = gpu.alloc<std::uint32_t>(n, rt::memory_kind::host), b2 = gpu.alloc<std::uint32_t>(n, rt::memory_kind::host),
           o2 = gpu.alloc<std::uint32_t>(n, rt::memory_kind::host);
      auto pack = [](_Float16 lo, _Float16 hi) {
        return std::uint32_t(std::bit_cast<std::uint16_t>(lo)) | (std::uint32_t(std::bit_cast<std::uint16_t>(hi)) << 16);
      };
      for (std::uint32_t i = 0; i < n; ++i)
        a2[i] = pack(_Float16(float(i) * 0.01f - 3.0f), _Float16(7.0f - float(i % 91) * 0.125f)),
        b2[i] = pack(_Float16(float(i % 29) * 0.5f), _Float16(float(i % 5) - 2.5f));
      run("half2k", rt::grid{n}, rt::block{64}, a2, b2, o2, n);
      bad = 0;
      for (std::uint32_t i = 0; i < n; ++i) {
        std::uint32_t ref = 0;
        for (int h = 0; h < 2; ++h) {
          const _Float16 x = std::bit_cast<_Float16>(std::uint16_t(a2[i] >> (16 * h))), y = std::bit_cast<_Float16>(std::uint16_t(b2[i] >> (16 * h)));
          const _Float16 r = _Float16(std::fma(double(x), double(y), double(x)));  // x*y + x fused
          ref |= std::uint32_t(std::bit_cast<std::uint16_t>(_Float16(double(r) - double(y)))) << (16 * h);
        }
        bad += o2[i] != ref;
      }
      CHECK(bad == 0);
      out_digest["half2k"] = digest(o2.data(), n);
    }
    {
      auto in = gpu.alloc<std::uint32_t>(n, rt::memory_kind::host), out = gpu.alloc<std::uint32_t>(n, rt::memory_kind::host);
      for (std::uint32_t i = 0; i < n; ++i) in[i] = i * 2654435761u + 17, out[i] = 0;
      run("privarr", rt::grid{n}, rt::block{64}, in, out, n);  // 272 bytes of scratch per work-item
      int bad = 0;
      for (std::uint32_t i = 0; i < n; ++i) {
        std::uint32_t buf[64], s = 0;
        for (std::uint32_t k = 0; k < 64; ++k) buf[k] = in[i] * k + (k ^ i);
        for (std::uint32_t k = 0; k < 64; ++k) s += buf[(k * 7 + i) & 63];
        bad += out[i] != s;
      }
      CHECK(bad == 0);
      out_digest["privarr"] = digest(out.data(), n);
      for (std::uint32_t i = 0; i < n; ++i) in[i] = i + 1, out[i] = 0;
      run("spill", rt::grid{n}, rt::block{64}, in, out, n);  // gfx90a: buffer_* through the scratch V#
      bad = 0;
      for (std::uint32_t i = 0; i < n; ++i) {
        std::uint32_t priv[64], acc = 0;
        for (std::uint32_t k = 0; k < 64; ++k) priv[k] = in[i] * k + (k ^ i);
        for (std::uint32_t k = 0; k < 64; ++k) acc += priv[(k * 7 + (in[i] >> (k & 15))) & 63];
        bad += out[i] != acc;
      }
      CHECK(bad == 0);
      out_digest["spill"] = digest(out.data(), n);
    }
    {
      // Uniform integer division and float math (gfx12: on the scalar unit, SALU float).
      auto in = gpu.alloc<std::uint32_t>(n, rt::memory_kind::host), out = gpu.alloc<std::uint32_t>(n, rt::memory_kind::host);
      auto fout = gpu.alloc<float>(n, rt::memory_kind::host);
      for (std::uint32_t i = 0; i < n; ++i) in[i] = i * 2654435761u, out[i] = 0, fout[i] = 0;
      const std::uint32_t dv = 7;
      const float s = 2.75f, t = -1.25f;
      run("uniform", rt::grid{n}, rt::block{64}, in, out, fout, n, dv, s, t);
      const float u = std::fma(s, t, 1.5f);
      const float v = std::fmin(s, t) - std::fmax(u, 2.0f);
      const float q = std::floor(s) + std::ceil(t) + std::trunc(u) + std::nearbyint(v);
      int bad = 0;
      for (std::uint32_t i = 0; i < n; ++i) {
        const std::uint32_t want = in[i] / dv + in[i] % (dv + 3) + static_cast<std::uint32_t>(static_cast<int>(s * t));
        const float fwant = std::fma(static_cast<float>(in[i]), s > t ? u : v, q) + static_cast<float>(static_cast<int>(t)) +
                            static_cast<float>(static_cast<unsigned>(s));
        bad += out[i] != want || std::bit_cast<std::uint32_t>(fout[i]) != std::bit_cast<std::uint32_t>(fwant);
      }
      CHECK(bad == 0);
      out_digest["uniform"] = digest(out.data(), n) ^ digest(fout.data(), n);
    }
    {
      // ds_bpermute_b32 as HIP's __shfl_xor uses it: a butterfly sum over each 32-lane group and a
      // rotate within it (workgroups of 64: lane groups are aligned runs of 32 ids; ids >= n are
      // not launched, so their lanes are off and read as 0).
      auto in = gpu.alloc<std::uint32_t>(n, rt::memory_kind::host), out = gpu.alloc<std::uint32_t>(n, rt::memory_kind::host);
      for (std::uint32_t i = 0; i < n; ++i) in[i] = i * 2654435761u ^ 0x5bd1e995u, out[i] = 0;
      run("shfl", rt::grid{n}, rt::block{64}, in, out, n);
      auto at = [&](std::uint32_t j) { return j < n ? in[j] : 0u; };
      int bad = 0;
      for (std::uint32_t i = 0; i < n; ++i) {
        const std::uint32_t base = i & ~31u;
        std::uint32_t sum = 0;
        for (std::uint32_t j = base; j < base + 32; ++j) sum += at(j);
        bad += out[i] != sum * 3u + at(base | ((i + 1) & 31u));
      }
      CHECK(bad == 0);
      out_digest["shfl"] = digest(out.data(), n);
    }
    {
      // Uniform _Float16 arguments (gfx12: SALU f16), contraction off: each operation rounded to
      // f16 once (sums and products are exact in double).
      auto in = gpu.alloc<_Float16>(n, rt::memory_kind::host), out = gpu.alloc<_Float16>(n, rt::memory_kind::host);
      auto fout = gpu.alloc<float>(n, rt::memory_kind::host);
      for (std::uint32_t i = 0; i < n; ++i) in[i] = _Float16((float(i) - 500.0f) * 0.0625f);
      const _Float16 s = _Float16(2.75f), t = _Float16(-1.25f);
      const float fa = 0.3f;
      run("uniform16", rt::grid{n}, rt::block{64}, in, out, fout, s, t, fa, n);
      auto h = [](double x) { return _Float16(x); };
      const _Float16 u = h(std::fma(double(s), double(t), 1.0));
      const _Float16 v = h(double(std::fmin(double(s), double(t))) - double(std::fmax(double(u), 2.0)));
      const _Float16 q = h(double(h(double(h(std::floor(double(s)) + std::ceil(double(t)))) + std::trunc(double(u)))) + std::nearbyint(double(v)));
      const _Float16 w = s > t ? u : v;
      int bad = 0;
      for (std::uint32_t i = 0; i < n; ++i) {
        const _Float16 want = h(double(h(double(in[i]) * double(w))) + double(q));
        const float fwant = (float(in[i]) + float(q) * fa) + float(_Float16(fa));
        bad += std::bit_cast<std::uint16_t>(out[i]) != std::bit_cast<std::uint16_t>(want);
        bad += std::bit_cast<std::uint32_t>(fout[i]) != std::bit_cast<std::uint32_t>(fwant);
      }
      CHECK(bad == 0);
      out_digest["uniform16"] = digest(out.data(), n) ^ digest(fout.data(), n);
    }
    {
      // float2/float4 (packed f32 on gfx90a/gfx942), contraction off: rounded as written.
      auto a = gpu.alloc<float>(2 * n, rt::memory_kind::host), b = gpu.alloc<float>(2 * n, rt::memory_kind::host);
      auto c = gpu.alloc<float>(2 * n, rt::memory_kind::host), d = gpu.alloc<float>(4 * n, rt::memory_kind::host);
      for (std::uint32_t i = 0; i < 2 * n; ++i) a[i] = (float(i) - 777.0f) * 0.113f, b[i] = float(i % 41) * 0.37f - 6.0f;
      const float s = -1.625f;
      run("vec2", rt::grid{n}, rt::block{64}, a, b, c, d, s, n);
      int bad = 0;
      for (std::uint32_t i = 0; i < n; ++i) {
        const float x0 = a[2 * i], x1 = a[2 * i + 1], y0 = b[2 * i], y1 = b[2 * i + 1];
        const float r0 = std::fma(x0, y0, s) * x0 + 0.5f - y0, r1 = std::fma(x1, y1, s) * x1 + -2.0f - y1;
        bad += std::bit_cast<std::uint32_t>(c[2 * i]) != std::bit_cast<std::uint32_t>(r0);
        bad += std::bit_cast<std::uint32_t>(c[2 * i + 1]) != std::bit_cast<std::uint32_t>(r1);
        const float w[4] = {x0, y1, r0, s}, m[4] = {x1, r1, y0, x0}, k[4] = {1.0f, 2.0f, 3.0f, 4.0f};
        for (int j = 0; j < 4; ++j) bad += std::bit_cast<std::uint32_t>(d[4 * i + j]) != std::bit_cast<std::uint32_t>(std::fma(w[j], m[j], k[j]) * s);
      }
      CHECK(bad == 0);
      out_digest["vec2"] = digest(c.data(), 2 * n) ^ digest(d.data(), 4 * n);
    }
    {
      // Buffer loads/stores through a V# (MUBUF on gfx9/gfx11, VBUFFER on gfx12): `in` has 4n + 4
      // dwords, the load V# covers 3n + 2 of them (a dword past it reads 0, each of a b128 on its
      // own), the store V# all of `out` but its last two dwords (left as they were).
      auto in = gpu.alloc<std::uint32_t>(4 * n + 4, rt::memory_kind::host), out = gpu.alloc<std::uint32_t>(n, rt::memory_kind::host);
      for (std::uint32_t i = 0; i < 4 * n + 4; ++i) in[i] = i * 2654435761u + 17;
      for (std::uint32_t i = 0; i < n; ++i) out[i] = 0xC0FFEEu;
      const std::uint32_t limit = (3 * n + 2) * 4;  // bytes
      run("bufrsrc", rt::grid{n}, rt::block{64}, in, out, n, limit);
      auto ld = [&](std::uint32_t o) { return o + 4 <= limit ? in[o / 4] : 0u; };
      int bad = 0;
      for (std::uint32_t i = 0; i < n; ++i) {
        const std::uint32_t o = i * 4, b = i * 4 + 1 < limit ? (in[i] >> 8) & 0xFFu : 0u;
        const std::uint32_t want = ld(o) * 3u + ld(o + 4) + ld(o + 8) * 5u + ld(o + 12) * 7u + ld(o + 16) * 11u + b;
        bad += out[i] != (i < n - 2 ? want : 0xC0FFEEu);
      }
      CHECK(bad == 0);
      out_digest["bufrsrc"] = digest(out.data(), n);
    }
    {
      // DPP row scan (every target): rows are 16 consecutive ids (workgroups of 64); ids >= n are
      // not launched, and an inactive source lane reads 0 (bound_ctrl).
      auto in = gpu.alloc<std::uint32_t>(n, rt::memory_kind::host), out = gpu.alloc<std::uint32_t>(n, rt::memory_kind::host);
      for (std::uint32_t i = 0; i < n; ++i) in[i] = i * 2246822519u + 3, out[i] = 0;
      run("dppscan", rt::grid{n}, rt::block{64}, in, out, n);
      auto scan = [&](std::uint32_t i) {  // inclusive sum from the row's first id to i; 0 past n
        if (i >= n) return 0u;
        std::uint32_t s = 0;
        for (std::uint32_t j = i & ~15u; j <= i; ++j) s += in[j];
        return s;
      };
      int bad = 0;
      for (std::uint32_t i = 0; i < n; ++i) bad += out[i] != scan(i) * 7u + scan((i & ~15u) | (15u - (i & 15u)));
      CHECK(bad == 0);
      out_digest["dppscan"] = digest(out.data(), n);
      // gfx10+ DPP (gfx11/gfx12 builds only): row_xmask butterfly, row_share:5, DPP8 reversal in
      // groups of 8. n is a multiple of 8: every active lane's row has lanes 0..7 or 0..15 active.
      static_assert(n % 8 == 0);
      if (exe->try_get_untyped_kernel("dppreduce").has_value()) {
        for (std::uint32_t i = 0; i < n; ++i) out[i] = 0;
        run("dppreduce", rt::grid{n}, rt::block{64}, in, out, n);
        bad = 0;
        for (std::uint32_t i = 0; i < n; ++i) {
          std::uint32_t row = 0;
          for (std::uint32_t j = i & ~15u; j < (i & ~15u) + 16 && j < n; ++j) row += in[j];
          bad += out[i] != row * 3u + in[(i & ~15u) + 5] * 5u + in[(i & ~7u) | (7u - (i & 7u))];
        }
        CHECK(bad == 0);
      }
    }
    {
      // LDS atomics (ds_*_rtn_*, 64-bit, f32 add, compare-store in a CAS loop, exchange, inc):
      // per workgroup of 64 (the last has 40 ids < n), checks that hold whatever order the lanes
      // and waves reach the atomics in.
      const std::uint32_t groups = (n + 63) / 64;
      auto in = gpu.alloc<std::uint32_t>(n, rt::memory_kind::host), out = gpu.alloc<std::uint32_t>(n + 8 * groups, rt::memory_kind::host);
      auto out64 = gpu.alloc<std::uint64_t>(n + 4 * groups, rt::memory_kind::host);
      auto outf = gpu.alloc<float>(n + 2 * groups, rt::memory_kind::host);
      for (std::uint32_t i = 0; i < n; ++i) {
        in[i] = i * 2654435761u + 12345u;
        REQUIRE(in[i] != 0x80000000u);  // the "one lane saw INT_MIN" check below needs it
      }
      run("ldsatomic", rt::grid{n}, rt::block{64}, in, out, out64, outf, n);
      int bad = 0;
      for (std::uint32_t g = 0; g < groups; ++g) {
        const std::uint32_t lo = g * 64, k = std::min(n, lo + 64) - lo;
        std::multiset<std::uint32_t> tk, dn, inc, ex{0x5A5A5A5Au}, tk64, got_ex{out[n + 8 * g + 3]};
        std::uint32_t and_v = ~0u, or_v = 0, xor_v = 0, maxu = 0;
        std::int32_t mins = 0x7FFFFFFF, maxs = std::numeric_limits<std::int32_t>::min();
        std::uint64_t sum = 0, minq = ~0ull, maxq = 0, orq = 0;
        float fsum = 0.0f, fmax = -1e30f, fcount = 0.0f;
        for (std::uint32_t i = lo; i < lo + k; ++i) {
          const std::uint32_t x = in[i], t = i - lo;
          tk.insert(i - lo), dn.insert(i - lo), inc.insert(i - lo), tk64.insert(128 - (i - lo)), ex.insert(x);
          and_v &= x | 0x00FF00FFu, or_v |= x & 0x0F0F0F0Fu, xor_v ^= x, maxu = std::max(maxu, x);
          mins = std::min(mins, std::int32_t(x)), maxs = std::max(maxs, std::int32_t(x));
          sum += std::uint64_t(x) << 20, orq |= 1ull << (x & 63);
          minq = std::min(minq, std::uint64_t(x) << 31 | t), maxq = std::max(maxq, std::uint64_t(x) << 31 | t);
          fsum += float(x & 0xFFu), fmax = std::max(fmax, float(int(x % 2001u)) - 1000.0f);
          got_ex.insert(std::uint32_t(out64[i] >> 32));
          fcount += outf[i];
        }
        std::multiset<std::uint32_t> gtk, gdn, ginc, gtk64;
        for (std::uint32_t i = lo; i < lo + k; ++i)
          gtk.insert(out[i] & 0xFFu), gdn.insert((out[i] >> 8) & 0xFFu), ginc.insert(out[i] >> 16), gtk64.insert(std::uint32_t(out64[i]));
        bad += gtk != tk, bad += gdn != dn, bad += ginc != inc, bad += gtk64 != tk64, bad += got_ex != ex;
        const std::uint32_t* fin = &out[n + 8 * g];
        bad += fin[0] != and_v, bad += fin[1] != or_v, bad += fin[2] != xor_v, bad += fin[4] != maxu;
        bad += fin[5] != std::uint32_t(mins), bad += fin[6] != std::uint32_t(maxs), bad += fin[7] != 7u + k;
        const std::uint64_t* fin64 = &out64[n + 4 * g];
        bad += fin64[0] != sum, bad += fin64[1] != minq, bad += fin64[2] != maxq, bad += fin64[3] != orq;
        bad += outf[n + 2 * g] != fsum, bad += outf[n + 2 * g + 1] != fmax, bad += fcount != 1.0f;  // one lane saw INT_MIN
        if (bad != 0) {
          MESSAGE("workgroup " << g << ": " << bad << " mismatches so far");
          break;
        }
      }
      CHECK(bad == 0);
      for (std::uint32_t g = 0; g < groups; ++g) out[n + 8 * g + 3] = 0;  // the last exchange depends on the order
      out_digest["ldsatomic"] = digest(out.data() + n, 8 * groups) ^ digest(out64.data() + n, 4 * groups) ^ digest(outf.data() + n, 2 * groups);
    }
    {
      // Recursion: .uses_dynamic_stack, one frame in private_segment_fixed_size; the dispatch
      // asks for the 1024-byte stack CLR gives such kernels (runtime::dispatch_private_segment_size).
      auto in = gpu.alloc<std::uint32_t>(n, rt::memory_kind::host), out = gpu.alloc<std::uint32_t>(n, rt::memory_kind::host);
      for (std::uint32_t i = 0; i < n; ++i) in[i] = i * 2654435761u + 5, out[i] = 0;
      run("recurse", rt::grid{n}, rt::block{64}, in, out, n);
      auto rec = [](auto&& self, std::uint32_t x, std::uint32_t d) -> std::uint32_t {
        const std::uint32_t a[4] = {x, x * 3u, x ^ d, d};
        if (d == 0) return a[0] + a[3];
        return self(self, a[1] + 1u, d - 1) * 5u + a[(x + d) & 3];
      };
      int bad = 0;
      for (std::uint32_t i = 0; i < n; ++i) bad += out[i] != rec(rec, in[i], in[i] % 12u);
      CHECK(bad == 0);
      out_digest["recurse"] = digest(out.data(), n);
    }
    {
      // Calls that are not inlined (s_getpc/s_swappc/s_setpc, a stack frame in scratch).
      auto in = gpu.alloc<std::uint32_t>(n, rt::memory_kind::host), out = gpu.alloc<std::uint32_t>(n, rt::memory_kind::host);
      for (std::uint32_t i = 0; i < n; ++i) in[i] = i * 2246822519u + 11, out[i] = 0;
      run("calls", rt::grid{n}, rt::block{64}, in, out, n);
      auto callee = [](std::uint32_t x, std::uint32_t y) {
        std::uint32_t a[8], s = 0;
        for (std::uint32_t k = 0; k < 8; ++k) a[k] = x * k + y;
        for (std::uint32_t k = 0; k < 8; ++k) s += a[(k * 3 + x) & 7];
        return s;
      };
      int bad = 0;
      for (std::uint32_t i = 0; i < n; ++i) {
        const std::uint32_t x = in[i] * 5u, b[4] = {x, i, x ^ i, x + i};
        bad += out[i] != callee(in[i], i) + callee(b[x & 3], b[i & 3]) * 3 + b[(x >> 2) & 3];
      }
      CHECK(bad == 0);
      out_digest["calls"] = digest(out.data(), n);
    }
  }
  return out_digest;
}

// The corpus on one target: every build equals the host references, and all builds give the
// same bits (the differential: -O2 vs -O3, wave32 vs wave64 where the target has both).
digests corpus_on(const target_case& t) {
  auto sys = rt::system::open({.machine = t.machine});
  const auto& gpu = sys.default_agent();
  digests first;
  for (const char* v : t.variants) {
    INFO("build " << std::string(v));
    const digests d = run_corpus(gpu, corpus_path(t.processor, v));
    if (first.empty()) first = d;
    for (const auto& [name, h] : d) {
      CAPTURE(name);
      CHECK(h == first[name]);
    }
  }
  return first;
}

const digests& gfx1100_digests() {
  static const digests d = corpus_on(gfx1100);
  return d;
}

// Dispatches `kernel` of `exe` (64 work-items, one workgroup) with `args` on a new AQL queue of
// `gpu`; it must fault, and the queue error must contain each of `want` and the faulting
// instruction's " at pc 0x".
template <class... Args>
void check_fault(const rt::agent& gpu, const rt::executable& exe, const char* kernel,
                 std::initializer_list<std::string_view> want, const Args&... args) {
  INFO("kernel " << std::string(kernel));
  auto q = gpu.make_queue(aq::aql, {.slots = 16, .kernarg_bytes = 512});
  auto idx = q.try_dispatch(exe.get_untyped_kernel(kernel), rt::grid{64}, rt::block{64}, args...);
  REQUIRE(idx.has_value());
  auto w = q.try_wait(*idx, std::chrono::seconds(10));
  REQUIRE_FALSE(w.has_value());
  const std::string d(w.detail());
  INFO(d);
  for (const std::string_view s : want) {
    CAPTURE(s);
    CHECK(d.find(s) != std::string::npos);
  }
  CHECK(d.find(" at pc 0x") != std::string::npos);
}

}  // namespace

TEST_CASE("gfx1100 corpus kernels on the interpreter equal the host reference (-O2/-O3, wave32/wave64)") {
  CHECK(!gfx1100_digests().empty());
}

TEST_CASE("gfx1201, gfx942 and gfx90a corpus kernels (emulated RX 9070 XT, MI300X, MI250X) equal the host reference and gfx1100's results") {
  const digests& rdna = gfx1100_digests();
  for (const target_case* t : {&gfx1201, &gfx942, &gfx90a}) {
    INFO("target " << std::string(t->processor));
    const digests cdna = corpus_on(*t);
    CHECK(cdna.size() == rdna.size());
    for (const auto& [name, h] : cdna) {
      CAPTURE(name);
      CHECK(h == rdna.at(name));  // the differential across generations
    }
  }
}

TEST_CASE("machine code faults on every target: the exact bad address, __builtin_trap with its PC, an illegal and an unsupported instruction by name") {
  for (const auto& [t, v] : {std::pair{&gfx1100, "O2-w32"}, std::pair{&gfx1201, "O2-w32"}, std::pair{&gfx942, "O2"}, std::pair{&gfx90a, "O2"}}) {
    INFO("target " << std::string(t->processor));
    auto sys = rt::system::open({.machine = t->machine});
    const auto& gpu = sys.default_agent();
    const auto bytes = read_file(corpus_path(t->processor, v));
    auto exe = gpu.load(std::span<const std::byte>(bytes));
    {
      auto out = gpu.alloc<std::uint32_t>(64, rt::memory_kind::host);
      check_fault(gpu, exe, "trap", {"shader exception", "s_trap"}, out);
    }
    {
      // A graphics instruction (v_cubeid_f32, inline asm) the interpreter does not implement.
      auto out = gpu.alloc<float>(64, rt::memory_kind::host);
      check_fault(gpu, exe, "unsupported", {"shader exception", "unsupported instruction: v_cubeid_f32 (VOP3 opcode"}, out);
    }
    {
      // A word llvm-mc-19 does not decode for any of the four targets (corpus.hip `illegal`).
      auto out = gpu.alloc<std::uint32_t>(64, rt::memory_kind::host);
      check_fault(gpu, exe, "illegal", {"shader exception", "illegal instruction"}, out);
    }
    if (t == &gfx942 || t == &gfx90a) {
      // A matrix-core instruction (MFMA) the interpreter does not model: the queue error names it.
      // LLVM 19's names for the same opcode: gfx942 v_mfma_f32_4x4x1_16b_f32, gfx90a v_mfma_f32_4x4x1f32.
      auto io = gpu.alloc<float>(256, rt::memory_kind::host);
      check_fault(gpu, exe, "mfma",
                  {"shader exception", t == &gfx942 ? "unsupported instruction: v_mfma_f32_4x4x1_16b_f32"
                                                    : "unsupported instruction: v_mfma_f32_4x4x1f32 "},
                  io);
    }
    {
      // Last: a GPU memory fault stops every queue of the GPU for good (the shader exceptions above
      // stop only their own queue).
      auto a = gpu.alloc<float>(64, rt::memory_kind::host), c = gpu.alloc<float>(64, rt::memory_kind::host);
      // b points 1 TiB past a, far from any mapping: element 0's load faults there.
      const std::uint64_t bad_b = reinterpret_cast<std::uintptr_t>(a.data()) + (1ull << 40);
      char want[40];
      std::snprintf(want, sizeof want, "0x%llx", static_cast<unsigned long long>(bad_b));
      check_fault(gpu, exe, "vadd", {want, "memory violation"}, a, bad_b, c, 64u);
    }
  }
}

TEST_CASE("gfx1100, gfx1201, gfx942 and gfx90a corpus through a PM4 queue (scratch from the queue's registers) equals the AQL results") {
  for (const target_case* t : {&gfx1100, &gfx1201, &gfx942, &gfx90a}) {
    INFO("target " << std::string(t->processor));
    auto sys = rt::system::open({.machine = t->machine});
    const digests d = run_corpus(sys.default_agent(), corpus_path(t->processor, t->variants[0]), true);
    const digests& rdna = gfx1100_digests();
    for (const auto& [name, h] : d) {
      CAPTURE(name);
      CHECK(h == rdna.at(name));
    }
  }
}

TEST_CASE("machine code through a PM4 queue: the typed API, hidden arguments from the runtime (every target)") {
  for (const target_case* t : {&gfx1100, &gfx1201, &gfx942, &gfx90a})
  for (const char* v : t->variants) {
    INFO("target " << std::string(t->processor));
    INFO("build " << std::string(v));
    auto sys = rt::system::open({.machine = t->machine});
    const auto& gpu = sys.default_agent();
    const auto bytes = read_file(corpus_path(t->processor, v));
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
    auto tk = q.try_dispatch(*k, rt::grid{n}, rt::block{256}, a, b, c, n);
    INFO(std::string(tk.detail()));
    REQUIRE(tk.has_value());
    auto w = q.try_wait(*tk, std::chrono::seconds(60));
    INFO(std::string(w.detail()));
    REQUIRE(w.has_value());
    int bad = 0;
    for (std::uint32_t i = 0; i < n; ++i) bad += c[i] != a[i] + b[i];
    CHECK(bad == 0);
    // Scratch through PM4: COMPUTE_DISPATCH_SCRATCH_BASE + TMPRING from the runtime (was
    // not_supported before), the private array read back through flat private addresses.
    auto kp = exe.try_get_kernel<const std::uint32_t*, std::uint32_t*, std::uint32_t>("privarr");
    REQUIRE(kp.has_value());
    auto in = gpu.alloc<std::uint32_t>(n, rt::memory_kind::host), out = gpu.alloc<std::uint32_t>(n, rt::memory_kind::host);
    for (std::uint32_t i = 0; i < n; ++i) in[i] = i * 40503u + 3, out[i] = 0;
    auto tp = q.try_dispatch(*kp, rt::grid{n}, rt::block{64}, in, out, n);
    INFO(std::string(tp.detail()));
    REQUIRE(tp.has_value());
    auto wp = q.try_wait(*tp, std::chrono::seconds(60));
    INFO(std::string(wp.detail()));
    REQUIRE(wp.has_value());
    bad = 0;
    for (std::uint32_t i = 0; i < n; ++i) {
      std::uint32_t buf[64], sum = 0;
      for (std::uint32_t k2 = 0; k2 < 64; ++k2) buf[k2] = in[i] * k2 + (k2 ^ i);
      for (std::uint32_t k2 = 0; k2 < 64; ++k2) sum += buf[(k2 * 7 + i) & 63];
      bad += out[i] != sum;
    }
    CHECK(bad == 0);
  }
}

TEST_CASE("differential: one source compiled wave32 and wave64 at -O2 and -O3 gives identical bytes (gfx1100, gfx1201)") {
  for (const target_case* tc : {&gfx1100, &gfx1201}) {
    INFO("target " << std::string(tc->processor));
    auto sys = rt::system::open({.machine = tc->machine});
    const auto& gpu = sys.default_agent();
    const std::uint32_t n = 1000;
    auto fin = gpu.alloc<float>(n, rt::memory_kind::host);
    auto uin = gpu.alloc<std::uint32_t>(n, rt::memory_kind::host);
    auto din = gpu.alloc<double>(n, rt::memory_kind::host);
    for (std::uint32_t i = 0; i < n; ++i)
      fin[i] = (float(i) - 500.0f) * 0.37f, uin[i] = i * 0x9E3779B9u + 1, din[i] = (double(i) - 400.0) * 1.37;
    std::vector<std::vector<std::uint32_t>> first;  // the outputs of the first variant
    for (const char* v : tc->variants) {
      INFO("build " << std::string(v));
      const auto bytes = read_file(corpus_path(tc->processor, v));
      auto exe = gpu.load(std::span<const std::byte>(bytes));
      auto q = gpu.make_queue(aq::aql, {.slots = 16, .kernarg_bytes = 512});
      auto fo = gpu.alloc<float>(n, rt::memory_kind::host);
      auto uo = gpu.alloc<std::uint32_t>(n, rt::memory_kind::host), po = gpu.alloc<std::uint32_t>(n, rt::memory_kind::host);
      auto dout = gpu.alloc<double>(n, rt::memory_kind::host);
      q.wait(q.dispatch(exe.get_untyped_kernel("fmath"), rt::grid{n}, rt::block{64}, fin, fo, n), std::chrono::seconds(60));
      q.wait(q.dispatch(exe.get_untyped_kernel("hash"), rt::grid{n}, rt::block{64}, uin, uo, n), std::chrono::seconds(60));
      q.wait(q.dispatch(exe.get_untyped_kernel("dmath"), rt::grid{n}, rt::block{64}, din, dout, n), std::chrono::seconds(60));
      q.wait(q.dispatch(exe.get_untyped_kernel("privarr"), rt::grid{n}, rt::block{128}, uin, po, n), std::chrono::seconds(60));
      std::vector<std::uint32_t> all;
      for (std::uint32_t i = 0; i < n; ++i) {
        all.push_back(std::bit_cast<std::uint32_t>(fo[i]));
        all.push_back(uo[i]);
        all.push_back(po[i]);
        const auto d = std::bit_cast<std::uint64_t>(dout[i]);
        all.push_back(static_cast<std::uint32_t>(d));
        all.push_back(static_cast<std::uint32_t>(d >> 32));
      }
      if (first.empty()) first.push_back(std::move(all));
      else CHECK(all == first.front());
    }
  }
}

TEST_CASE("PM4 preemption between workgroups (CWSR save/restore) keeps each workgroup's ids and scratch (gfx1100, gfx1201)") {
  for (const target_case* tc : {&gfx1100, &gfx1201}) {
    INFO("target " << std::string(tc->processor));
    auto sys = rt::system::open({.machine = tc->machine});
    const auto& gpu = sys.default_agent();
    auto engines = sys.emulator()->get_engine_options();
    engines.pm4.preemption.every_workgroups = 3;
    sys.emulator()->set_engine_options(engines);  // for the queues created from now on
    const auto bytes = read_file(corpus_path(tc->processor, "O3-w32"));
    auto exe = gpu.load(std::span<const std::byte>(bytes));
    rt::pm4_queue_options po;
    po.kernarg_bytes = 512;
    auto q = gpu.make_queue(rt::pm4, po);
    const std::uint32_t n = 64 * 40;  // 40 workgroups: restored ones at 3, 6, ...
    auto a = gpu.alloc<float>(n, rt::memory_kind::host), b = gpu.alloc<float>(n, rt::memory_kind::host), c = gpu.alloc<float>(n, rt::memory_kind::host);
    for (std::uint32_t i = 0; i < n; ++i) a[i] = float(i), b[i] = 2.0f * float(i), c[i] = -1.0f;
    auto k = exe.get_kernel<const float*, const float*, float*, std::uint32_t>("vadd");
    auto t = q.try_dispatch(k, rt::grid{n}, rt::block{64}, a, b, c, n);
    REQUIRE(t.has_value());
    auto w = q.try_wait(*t, std::chrono::seconds(60));
    INFO(std::string(w.detail()));
    REQUIRE(w.has_value());
    int bad = 0;
    for (std::uint32_t i = 0; i < n; ++i) bad += c[i] != a[i] + b[i];
    CHECK(bad == 0);
    const auto* pm4 = sys.emulator()->engine(q.queue_id())->pm4();
    CHECK(pm4->preemption_stats().preemptions >= 13);  // before workgroups 3, 6, ..., 39
    auto kp = exe.get_kernel<const std::uint32_t*, std::uint32_t*, std::uint32_t>("privarr");
    auto in = gpu.alloc<std::uint32_t>(n, rt::memory_kind::host), out = gpu.alloc<std::uint32_t>(n, rt::memory_kind::host);
    for (std::uint32_t i = 0; i < n; ++i) in[i] = i * 77u + 5, out[i] = 0;
    auto tp = q.try_dispatch(kp, rt::grid{n}, rt::block{64}, in, out, n);
    REQUIRE(tp.has_value());
    auto wp = q.try_wait(*tp, std::chrono::seconds(60));
    INFO(std::string(wp.detail()));
    REQUIRE(wp.has_value());
    bad = 0;
    for (std::uint32_t i = 0; i < n; ++i) {
      std::uint32_t buf[64], sum = 0;
      for (std::uint32_t j = 0; j < 64; ++j) buf[j] = in[i] * j + (j ^ i);
      for (std::uint32_t j = 0; j < 64; ++j) sum += buf[(j * 7 + i) & 63];
      bad += out[i] != sum;
    }
    CHECK(bad == 0);
    CHECK(pm4->preemption_stats().preemptions >= 26);
  }
}

namespace {
// The 64 dwords of the hidden arguments a kernel of code object v5 reads at
// __builtin_amdgcn_implicitarg_ptr(), as CLR fills them for grid `g` in blocks of `b`. Offsets
// from AMDGPUUsage's "Code Object V5 Metadata" table (llvm-readelf-19 --notes of the corpus lists
// the same ones after the explicit arguments): block counts (u32) at 0/4/8, group sizes (u16) at
// 12/14/16, remainders (u16) at 18/20/22, global offsets (u64) at 40/48/56, grid dims (u16) at
// 64, hostcall buffer 80, multigrid sync 88, default queue 104, completion action 112 (null: none
// of them exists here), heap 96 (the agent's device heap: tests/runtime/gfx_on_emulator.cpp checks
// the memory behind it), dynamic LDS size (u32) at 120, queue pointer (u64) at 200.
std::vector<std::uint32_t> expected_implicit(rt::grid g, rt::block b, std::uint64_t queue_ptr, std::uint64_t heap) {
  std::vector<std::uint32_t> e(64, 0);
  e[0] = g.x / b.x, e[1] = g.y / b.y, e[2] = g.z / b.z;
  e[3] = b.x | std::uint32_t(b.y) << 16;
  e[4] = b.z | (g.x % b.x) << 16;
  e[5] = (g.y % b.y) | (g.z % b.z) << 16;
  e[16] = g.z > 1 ? 3 : g.y > 1 ? 2 : 1;
  e[24] = static_cast<std::uint32_t>(heap), e[25] = static_cast<std::uint32_t>(heap >> 32);
  e[50] = static_cast<std::uint32_t>(queue_ptr), e[51] = static_cast<std::uint32_t>(queue_ptr >> 32);
  return e;
}
}  // namespace

TEST_CASE("hidden arguments as clang-19's kernels read them: the v5 layout, the queue pointer, dynamic LDS (every target, AQL and PM4)") {
  for (const target_case* t : {&gfx1100, &gfx1201, &gfx942, &gfx90a})
  for (const char* v : t->variants) {
    INFO("target " << std::string(t->processor));
    INFO("build " << std::string(v));
    auto sys = rt::system::open({.machine = t->machine});
    const auto& gpu = sys.default_agent();
    const auto bytes = read_file(corpus_path(t->processor, v));
    auto exe = gpu.load(std::span<const std::byte>(bytes));
    const auto implicit = exe.get_untyped_kernel("implicit");
    // implicit lists hidden_heap_v1 (it reads the whole hidden area), so the load made the heap.
    CHECK(implicit.hidden.heap_va != 0);
    const auto vadd = exe.get_untyped_kernel("vadd");
    const rt::grid g{1000, 3, 1};
    const rt::block b{64, 2, 1};
    auto out = gpu.alloc<std::uint32_t>(66, rt::memory_kind::host);
    auto a = gpu.alloc<float>(64, rt::memory_kind::host), c = gpu.alloc<float>(64, rt::memory_kind::host);
    {
      // Every kernarg slot first holds vadd's arguments (its hidden area starts 24 bytes later than
      // implicit's), so a hidden byte the runtime does not write reads vadd's values, not 0.
      auto q = gpu.make_queue(aq::aql, {.slots = 16, .kernarg_bytes = 512});
      for (int i = 0; i < 16; ++i) q.wait(q.dispatch(vadd, rt::grid{64}, rt::block{64}, a, a, c, 64u), std::chrono::seconds(60));
      for (std::uint32_t i = 0; i < 66; ++i) out[i] = 0xDEADBEEFu;
      auto w = q.try_wait(q.dispatch(implicit, g, b, out), std::chrono::seconds(60));
      INFO(std::string(w.detail()));
      REQUIRE(w.has_value());
      const auto want = expected_implicit(g, b, q.amd_queue_address().value, implicit.hidden.heap_va);
      for (int i = 0; i < 64; ++i) {
        CAPTURE(i);
        CHECK(out[i] == want[i]);
      }
      // The queue pointer points at the queue's hsa_queue_t (hsa.h): size in packets, features
      // HSA_QUEUE_FEATURE_KERNEL_DISPATCH (1).
      CHECK(q.amd_queue_address().value != 0);
      CHECK(out[64] == 16u);
      CHECK(out[65] == 1u);

      // Dynamic LDS: 300 words (1,200 bytes) given by the dispatch, hidden_dynamic_lds_size 1200.
      const std::uint32_t words = 300, wgs = 4;
      auto dout = gpu.alloc<std::uint32_t>(64 * wgs, rt::memory_kind::host), sizes = gpu.alloc<std::uint32_t>(wgs, rt::memory_kind::host);
      for (std::uint32_t i = 0; i < wgs; ++i) sizes[i] = 0xDEADBEEFu;
      rt::dispatch_options o;
      o.dynamic_lds_bytes = 4 * words;
      auto t2 = q.try_dispatch_with(o, exe.get_untyped_kernel("dynlds"), rt::grid{64 * wgs}, rt::block{64}, dout, sizes, words);
      REQUIRE(t2.has_value());
      auto w2 = q.try_wait(*t2, std::chrono::seconds(60));
      INFO(std::string(w2.detail()));
      REQUIRE(w2.has_value());
      int bad = 0;
      for (std::uint32_t wg = 0; wg < wgs; ++wg) {
        CHECK(sizes[wg] == 4 * words);
        for (std::uint32_t l = 0; l < 64; ++l) {
          std::uint32_t s = 0;
          for (std::uint32_t k = l; k < words; k += 64) s += (3u * (words - 1 - k) + 1u) * (k + 1u);
          bad += dout[wg * 64 + l] != s;
        }
      }
      CHECK(bad == 0);
    }
    {
      // A PM4 queue has no amd_queue: the queue pointer is null (the kernel then reads no queue).
      rt::pm4_queue_options po;
      po.kernarg_bytes = 512;
      po.slots = 16;
      auto q = gpu.make_queue(rt::pm4, po);
      for (int i = 0; i < 16; ++i) q.wait(q.dispatch(vadd, rt::grid{64}, rt::block{64}, a, a, c, 64u), std::chrono::seconds(60));
      for (std::uint32_t i = 0; i < 66; ++i) out[i] = 0xDEADBEEFu;
      auto w = q.try_wait(q.dispatch(implicit, g, b, out), std::chrono::seconds(60));
      INFO(std::string(w.detail()));
      REQUIRE(w.has_value());
      const auto want = expected_implicit(g, b, 0, implicit.hidden.heap_va);
      for (int i = 0; i < 64; ++i) {
        CAPTURE(i);
        CHECK(out[i] == want[i]);
      }
      CHECK(out[64] == 0xFFFFFFFFu);
      CHECK(out[65] == 0xFFFFFFFFu);
    }
  }
}

TEST_CASE("a spinning kernel ends with 'instruction budget exhausted' and its PC, through AQL and PM4 (every target)") {
  for (const target_case* t : {&gfx1100, &gfx1201, &gfx942, &gfx90a}) {
    INFO("target " << std::string(t->processor));
    auto sys = rt::system::open({.machine = t->machine});
    const auto& gpu = sys.default_agent();
    auto engines = sys.emulator()->get_engine_options();
    engines.aql.instruction_budget = 2'000'000;  // wave-instructions per dispatch
    engines.pm4.instruction_budget = 2'000'000;
    sys.emulator()->set_engine_options(engines);  // for the queues created from now on
    const auto bytes = read_file(corpus_path(t->processor, t->variants[0]));
    auto exe = gpu.load(std::span<const std::byte>(bytes));
    const auto spin = exe.get_untyped_kernel("spin");
    auto flag = gpu.alloc<std::uint32_t>(1, rt::memory_kind::host), out = gpu.alloc<std::uint32_t>(256, rt::memory_kind::host);
    flag[0] = 0;
    auto check = [&](const aq::result<void>& w) {
      REQUIRE_FALSE(w.has_value());
      const std::string d(w.detail());
      INFO(d);
      CHECK(d.find("shader exception") != std::string::npos);
      CHECK(d.find("instruction budget exhausted") != std::string::npos);
      CHECK(d.find("instruction_budget") != std::string::npos);  // says what to change
      CHECK(d.find("at pc 0x") != std::string::npos);
    };
    const auto start = std::chrono::steady_clock::now();
    {
      auto q = gpu.make_queue(aq::aql, {.slots = 16, .kernarg_bytes = 512});
      auto tk = q.try_dispatch(spin, rt::grid{256}, rt::block{64}, flag, out);
      REQUIRE(tk.has_value());
      check(q.try_wait(*tk, std::chrono::seconds(60)));
    }
    {
      rt::pm4_queue_options po;
      po.kernarg_bytes = 512;
      auto q = gpu.make_queue(rt::pm4, po);
      auto tk = q.try_dispatch(spin, rt::grid{256}, rt::block{64}, flag, out);
      REQUIRE(tk.has_value());
      check(q.try_wait(*tk, std::chrono::seconds(60)));
    }
    // 2 M wave-instructions at >= 5 M per second: well under the waits' 60 s.
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(30));
  }
}

}  // namespace AQ_UNITY_ID
