// emu/isa: instruction semantics against host C++ on edge values, for gfx1100 and gfx1201.
//
// Each case is assembly text, assembled at test time by llvm-mc-19 (wave64), run on the
// interpreter (emu/isa/interpreter.hpp) for every pair of edge values — 0, -0, denormals, the
// largest and smallest normals, ±inf, quiet and signalling NaN for floats; 0, 1, 31, 32, 33, 63,
// INT_MIN, INT_MAX, UINT_MAX for integers — and compared with the host's computation:
//   - bit-exact where IEEE 754 defines the result (add, sub, mul, fma, sqrt, division's
//     reciprocal, conversions, rounding), NaN results compared as "is a NaN" (IEEE leaves the
//     payload open);
//   - the GPU's own rules where IEEE leaves a choice or the ISA differs from C: min/max with
//     -0 < +0 and NaN handling (RDNA3/RDNA4 ISA guides), saturating float→int conversions
//     (NaN → 0), shift counts masked to 5 bits (≥ 32), 24-bit multiplies, carries in VCC/SCC;
//   - gfx12's SALU float: f32 (arithmetic, min/max_num, IEEE minimum/maximum, rounding,
//     conversions, compares, s_cvt_pk_rtz_f16_f32 against a searched round-toward-zero) and f16
//     (the same over f16 edge pairs, sources' upper bits ignored, the result's upper bits zero);
//   - approximate operations: v_rcp_f32, v_rsq_f32, v_sqrt_f32 (and f64) are ≤ 1 ULP on hardware;
//     the interpreter returns the correctly rounded value and this test holds it to that (0 ULP);
//     v_exp_f32/v_log_f32 within 1 ULP, v_sin_f32/v_cos_f32 within 2^-23 absolute of long double
//     references (their own case, run_transcendentals).
// Inputs come from memory (global_load_b128 per lane: a, b, c, d), so every case also runs a
// load through the VM; results are read from the waves' registers after s_endpgm.
#include <aqueduct/emu/isa.hpp>

#include <doctest/doctest.h>

#include "emu_ports.hpp"
#include "isa_asm.hpp"

#include <atomic>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

namespace isa = aqueduct::emu::isa;
namespace emu = aqueduct::emu;

namespace {

using u32 = std::uint32_t;
using u64 = std::uint64_t;
using i32 = std::int32_t;

std::vector<std::vector<u32>> assemble(const char* mcpu, const std::string& text) {
  return aq_test::assemble(AQUEDUCT_TEST_LLVM_MC, mcpu, text);
}

struct lane_in {
  u32 a, b, c, d;
};
struct lane_out {
  u32 v[4];  // v8..v11
  bool vcc;
};

// Runs `code` as one wave64 with per-lane inputs (loaded by the program) and scalar inputs s2..s5.
struct machine {
  const isa::target& t;
  std::vector<lane_out> out;
  u32 s8 = 0, s9 = 0;
  u32 s6 = 0;  // an extra scalar input (s6), 0 unless a case sets it
  bool scc = false;

  void run(const std::vector<u32>& code, const lane_in* in, const u32 (&s)[4] = {0, 0, 0, 0}) {
    aq_test::test_vm vm;
    std::vector<u32> mem(code.size() + 64 + 64 * 4 + 64);
    u32* code_at = mem.data() + (64 - (reinterpret_cast<std::uintptr_t>(mem.data()) / 4) % 64);  // 256-byte aligned
    std::memcpy(code_at, code.data(), code.size() * 4);
    u32* data = code_at + ((code.size() + 3) & ~std::size_t(3));
    std::memcpy(data, in, 64 * sizeof(lane_in));
    vm.map(mem.data(), mem.size() * 4);
    isa::interpreter it(vm, t);
    emu::wave_state ws{};
    ws.wave_size = 64;
    ws.exec = ~0ull;
    ws.active_lanes = 64;
    const u64 va = reinterpret_cast<std::uintptr_t>(data);
    ws.sgpr[0] = static_cast<u32>(va), ws.sgpr[1] = static_cast<u32>(va >> 32);
    for (int i = 0; i < 4; ++i) ws.sgpr[2 + i] = s[i];
    ws.sgpr[6] = s6;
    for (unsigned l = 0; l < 64; ++l) ws.v0[l] = l * 16;
    isa::run_params rp;
    rp.entry = reinterpret_cast<std::uintptr_t>(code_at);
    rp.vgprs = 16;
    rp.rsrc1 = 1u << 23;  // IEEE mode, as clang sets it for compute kernels
    std::atomic<std::int64_t> budget{1 << 20};
    it.run(rp, std::span<const emu::wave_state>(&ws, 1), {}, budget);
    out.assign(64, {});
    const u64 vcc = u64(it.sgpr(0, 107)) << 32 | it.sgpr(0, 106);
    for (unsigned l = 0; l < 64; ++l) {
      for (unsigned r = 0; r < 4; ++r) out[l].v[r] = it.vgpr(0, 8 + r, l);
      out[l].vcc = (vcc >> l) & 1;
    }
    s8 = it.sgpr(0, 8), s9 = it.sgpr(0, 9), scc = it.scc(0);
  }
};

// ---- edge values
const float fnan = std::bit_cast<float>(0x7FC00000u), fsnan = std::bit_cast<float>(0x7FA00000u);
const float fedges[16] = {0.0f, -0.0f, 1.0f, -1.0f, 1.5f, 0x1p-149f, -0x1p-149f, 0x1.fffffcp-127f,
                          0x1p-126f, std::numeric_limits<float>::max(), -std::numeric_limits<float>::max(),
                          INFINITY, -INFINITY, fnan, fsnan, 3.0e10f};
const double dedges[16] = {0.0, -0.0, 1.0, -1.0, 1.5, 0x1p-1074, -0x1p-1074, 0x1p-1022, 0x1.fffffffffffffp-1023,
                           std::numeric_limits<double>::max(), -std::numeric_limits<double>::max(), INFINITY,
                           -INFINITY, std::bit_cast<double>(0x7FF8000000000000ull), 3.0e300, -7.25};
const u32 iedges[16] = {0, 1, 2, 31, 32, 33, 63, 64, 0x7FFFFFFFu, 0x80000000u, 0xFFFFFFFFu, 0xFFFFFFFEu,
                        0x12345678u, 0x80000001u, 100, 0xFFFFu};
const std::uint16_t hedges[16] = {0x0000, 0x8000, 0x3C00, 0xBC00, 0x3E00, 0x0001, 0x8001, 0x03FF,
                                  0x0400, 0x7BFF, 0xFBFF, 0x7C00, 0xFC00, 0x7E00, 0x7D00, 0x5640};

u32 fb(float f) { return std::bit_cast<u32>(f); }
float bf(u32 x) { return std::bit_cast<float>(x); }

// The 256 ordered pairs of 16 edge values, as four runs of 64 lanes; c = the pair's "third".
template <class T, class Bits>
std::vector<std::vector<lane_in>> pairs(const T (&e)[16], Bits bits) {
  std::vector<std::vector<lane_in>> runs(4, std::vector<lane_in>(64));
  for (unsigned k = 0; k < 256; ++k) {
    const unsigned i = k / 16, j = k % 16;
    lane_in& in = runs[k / 64][k % 64];
    const u64 a = bits(e[i]), b = bits(e[j]), c = bits(e[(i + 3 * j + 5) % 16]);
    in = {static_cast<u32>(a), static_cast<u32>(b), static_cast<u32>(c), static_cast<u32>(a >> 32)};
    if constexpr (sizeof(T) == 8) in = {static_cast<u32>(a), static_cast<u32>(a >> 32), static_cast<u32>(b), static_cast<u32>(b >> 32)};
  }
  return runs;
}

bool same_f32(u32 got, float want) { return std::isnan(want) ? std::isnan(bf(got)) : got == fb(want); }
bool same_f64(u64 got, double want) {
  return std::isnan(want) ? std::isnan(std::bit_cast<double>(got)) : got == std::bit_cast<u64>(want);
}
bool same_f16(std::uint16_t got, _Float16 want) {
  const std::uint16_t w = std::bit_cast<std::uint16_t>(want);
  const bool wnan = (w & 0x7C00) == 0x7C00 && (w & 0x3FF);
  return wnan ? ((got & 0x7C00) == 0x7C00 && (got & 0x3FF)) : got == w;
}

// GPU min/max: NaN yields the other operand (IEEE mode quiets a signalling NaN and returns it:
// RDNA3 ISA guide V_MIN_F32), and -0 < +0.
bool is_snan(float x) { return std::isnan(x) && !(fb(x) & 0x00400000u); }
float gpu_min(float a, float b) {
  if (is_snan(a) || is_snan(b)) return fnan;
  if (std::isnan(b)) return a;
  if (std::isnan(a)) return b;
  if (a == 0 && b == 0) return std::signbit(a) ? a : b;
  return a < b ? a : b;
}
float gpu_max(float a, float b) {
  if (is_snan(a) || is_snan(b)) return fnan;
  if (std::isnan(b)) return a;
  if (std::isnan(a)) return b;
  if (a == 0 && b == 0) return std::signbit(a) ? b : a;
  return a > b ? a : b;
}
// Float → int as the ISA converts: truncate, saturate, NaN → 0.
i32 to_i32(double x) { return std::isnan(x) ? 0 : x <= -2147483648.0 ? INT32_MIN : x >= 2147483647.0 ? INT32_MAX : i32(x); }
u32 to_u32(double x) { return std::isnan(x) || x <= 0 ? 0u : x >= 4294967295.0 ? 0xFFFFFFFFu : u32(x); }

struct vcase {
  const char* asm_body;  // uses v4..v7 = a, b, c, d; results in v8..v11
  const char* edges;     // "f32", "f64", "i32", "f16"
  std::function<bool(const lane_in&, const lane_out&)> ok;
};

std::vector<vcase> vector_cases(bool gfx12) {
  using std::fma;
  std::vector<vcase> v = {
      {"v_add_f32 v8, v4, v5", "f32", [](auto& i, auto& o) { return same_f32(o.v[0], bf(i.a) + bf(i.b)); }},
      {"v_sub_f32 v8, v4, v5", "f32", [](auto& i, auto& o) { return same_f32(o.v[0], bf(i.a) - bf(i.b)); }},
      {"v_subrev_f32 v8, v4, v5", "f32", [](auto& i, auto& o) { return same_f32(o.v[0], bf(i.b) - bf(i.a)); }},
      {"v_mul_f32 v8, v4, v5", "f32", [](auto& i, auto& o) { return same_f32(o.v[0], bf(i.a) * bf(i.b)); }},
      {"v_fma_f32 v8, v4, v5, v6", "f32", [](auto& i, auto& o) { return same_f32(o.v[0], std::fma(bf(i.a), bf(i.b), bf(i.c))); }},
      {"v_fma_f32 v8, -v4, |v5|, -|v6|", "f32",
       [](auto& i, auto& o) { return same_f32(o.v[0], std::fma(-bf(i.a), std::fabs(bf(i.b)), -std::fabs(bf(i.c)))); }},
      {"v_add_f32 v8, v4, v5 clamp", "f32", [](auto& i, auto& o) {
         const float r = bf(i.a) + bf(i.b);
         return same_f32(o.v[0], std::isnan(r) ? 0.0f : std::fmin(std::fmax(r, 0.0f), 1.0f));
       }},
      {"v_mul_f32 v8, v4, v5 mul:2", "f32", [](auto& i, auto& o) { return same_f32(o.v[0], (bf(i.a) * bf(i.b)) * 2.0f); }},
      {"v_sqrt_f32 v8, v4", "f32", [](auto& i, auto& o) { return same_f32(o.v[0], std::sqrt(bf(i.a))); }},
      {"v_rcp_f32 v8, v4", "f32", [](auto& i, auto& o) { return same_f32(o.v[0], 1.0f / bf(i.a)); }},
      {"v_rsq_f32 v8, v4", "f32", [](auto& i, auto& o) { return same_f32(o.v[0], 1.0f / std::sqrt(bf(i.a))); }},
      {"v_floor_f32 v8, v4", "f32", [](auto& i, auto& o) { return same_f32(o.v[0], std::floor(bf(i.a))); }},
      {"v_ceil_f32 v8, v4", "f32", [](auto& i, auto& o) { return same_f32(o.v[0], std::ceil(bf(i.a))); }},
      {"v_trunc_f32 v8, v4", "f32", [](auto& i, auto& o) { return same_f32(o.v[0], std::trunc(bf(i.a))); }},
      {"v_rndne_f32 v8, v4", "f32", [](auto& i, auto& o) { return same_f32(o.v[0], std::nearbyint(bf(i.a))); }},
      {"v_cvt_i32_f32 v8, v4", "f32", [](auto& i, auto& o) { return o.v[0] == u32(to_i32(bf(i.a))); }},
      {"v_cvt_u32_f32 v8, v4", "f32", [](auto& i, auto& o) { return o.v[0] == to_u32(bf(i.a)); }},
      {"v_cvt_f64_f32 v[8:9], v4", "f32", [](auto& i, auto& o) {
         return same_f64(u64(o.v[1]) << 32 | o.v[0], double(bf(i.a)));
       }},
      {"v_cvt_f16_f32 v8, v4", "f32", [](auto& i, auto& o) { return same_f16(std::uint16_t(o.v[0]), _Float16(bf(i.a))); }},
      {"v_cmp_lt_f32 vcc, v4, v5", "f32", [](auto& i, auto& o) { return o.vcc == (bf(i.a) < bf(i.b)); }},
      {"v_cmp_neq_f32 vcc, v4, v5", "f32", [](auto& i, auto& o) { return o.vcc == !(bf(i.a) == bf(i.b)); }},
      {"v_cmp_class_f32 vcc, v4, 0x3c3", "f32", [](auto& i, auto& o) {  // mask: sNaN, qNaN, +0, +denormal, +normal, +inf
         const float x = bf(i.a);
         return o.vcc == (std::isnan(x) || !std::signbit(x));
       }},
      {"v_cmp_class_f32 vcc, v4, 1", "f32", [](auto& i, auto& o) { return o.vcc == is_snan(bf(i.a)); }},
      {"v_add_f64 v[8:9], v[4:5], v[6:7]", "f64", [](auto& i, auto& o) {
         return same_f64(u64(o.v[1]) << 32 | o.v[0], std::bit_cast<double>(u64(i.b) << 32 | i.a) + std::bit_cast<double>(u64(i.d) << 32 | i.c));
       }},
      {"v_mul_f64 v[8:9], v[4:5], v[6:7]", "f64", [](auto& i, auto& o) {
         return same_f64(u64(o.v[1]) << 32 | o.v[0], std::bit_cast<double>(u64(i.b) << 32 | i.a) * std::bit_cast<double>(u64(i.d) << 32 | i.c));
       }},
      {"v_fma_f64 v[8:9], v[4:5], v[6:7], v[4:5]", "f64", [](auto& i, auto& o) {
         const double a = std::bit_cast<double>(u64(i.b) << 32 | i.a), b = std::bit_cast<double>(u64(i.d) << 32 | i.c);
         return same_f64(u64(o.v[1]) << 32 | o.v[0], std::fma(a, b, a));
       }},
      {"v_sqrt_f64 v[8:9], v[4:5]", "f64", [](auto& i, auto& o) {
         return same_f64(u64(o.v[1]) << 32 | o.v[0], std::sqrt(std::bit_cast<double>(u64(i.b) << 32 | i.a)));
       }},
      {"v_cvt_i32_f64 v8, v[4:5]", "f64", [](auto& i, auto& o) { return o.v[0] == u32(to_i32(std::bit_cast<double>(u64(i.b) << 32 | i.a))); }},
      {"v_cvt_f32_f64 v8, v[4:5]", "f64", [](auto& i, auto& o) { return same_f32(o.v[0], float(std::bit_cast<double>(u64(i.b) << 32 | i.a))); }},
      {"v_add_f16 v8, v4, v5", "f16", [](auto& i, auto& o) {
         const auto h = [](u32 x) { return std::bit_cast<_Float16>(std::uint16_t(x)); };
         return same_f16(std::uint16_t(o.v[0]), _Float16(double(h(i.a)) + double(h(i.b))));
       }},
      {"v_mul_f16 v8, v4, v5", "f16", [](auto& i, auto& o) {
         const auto h = [](u32 x) { return std::bit_cast<_Float16>(std::uint16_t(x)); };
         return same_f16(std::uint16_t(o.v[0]), _Float16(double(h(i.a)) * double(h(i.b))));
       }},
      {"v_fma_f16 v8, v4, v5, v6", "f16", [](auto& i, auto& o) {
         const auto h = [](u32 x) { return static_cast<long double>(std::bit_cast<_Float16>(std::uint16_t(x))); };
         return same_f16(std::uint16_t(o.v[0]), _Float16(std::fmal(h(i.a), h(i.b), h(i.c))));
       }},
      {"v_cvt_f32_f16 v8, v4", "f16", [](auto& i, auto& o) {
         return same_f32(o.v[0], float(std::bit_cast<_Float16>(std::uint16_t(i.a))));
       }},
      {"v_pk_add_f16 v8, v4, v5", "f16", [](auto& i, auto& o) {  // high halves: b + c
         const auto h = [](u32 x) { return double(std::bit_cast<_Float16>(std::uint16_t(x))); };
         return same_f16(std::uint16_t(o.v[0]), _Float16(h(i.a) + h(i.b))) &&
                same_f16(std::uint16_t(o.v[0] >> 16), _Float16(h(i.a >> 16) + h(i.b >> 16)));
       }},
      // integers: carries, shifts >= 32, INT_MIN
      {"v_add_co_u32 v8, vcc, v4, v5", "i32", [](auto& i, auto& o) { return o.v[0] == i.a + i.b && o.vcc == (u64(i.a) + i.b > 0xFFFFFFFFu); }},
      {"v_sub_co_u32 v8, vcc, v4, v5", "i32", [](auto& i, auto& o) { return o.v[0] == i.a - i.b && o.vcc == (i.b > i.a); }},
      {"v_cmp_gt_u32 vcc, v4, v5\nv_add_co_ci_u32 v8, vcc, v4, v6, vcc", "i32",
       [](auto& i, auto& o) { const u64 r = u64(i.a) + i.c + (i.a > i.b); return o.v[0] == u32(r) && o.vcc == (r >> 32); }},
      {"v_lshlrev_b32 v8, v4, v5", "i32", [](auto& i, auto& o) { return o.v[0] == (i.b << (i.a & 31)); }},
      {"v_lshrrev_b32 v8, v4, v5", "i32", [](auto& i, auto& o) { return o.v[0] == (i.b >> (i.a & 31)); }},
      {"v_ashrrev_i32 v8, v4, v5", "i32", [](auto& i, auto& o) { return o.v[0] == u32(i32(i.b) >> (i.a & 31)); }},
      {"v_lshlrev_b64 v[8:9], v4, v[5:6]", "i32", [](auto& i, auto& o) {
         return (u64(o.v[1]) << 32 | o.v[0]) == ((u64(i.c) << 32 | i.b) << (i.a & 63));
       }},
      {"v_mul_lo_u32 v8, v4, v5", "i32", [](auto& i, auto& o) { return o.v[0] == i.a * i.b; }},
      {"v_mul_hi_u32 v8, v4, v5", "i32", [](auto& i, auto& o) { return o.v[0] == u32((u64(i.a) * i.b) >> 32); }},
      {"v_mul_hi_i32 v8, v4, v5", "i32", [](auto& i, auto& o) { return o.v[0] == u32(u64(std::int64_t(i32(i.a)) * i32(i.b)) >> 32); }},
      {"v_mul_u32_u24 v8, v4, v5", "i32", [](auto& i, auto& o) { return o.v[0] == (i.a & 0xFFFFFF) * (i.b & 0xFFFFFF); }},
      {"v_mad_u64_u32 v[8:9], vcc, v4, v5, v[6:7]", "i32", [](auto& i, auto& o) {
         const u64 c = u64(i.d) << 32 | i.c, r = u64(i.a) * i.b + c;
         return (u64(o.v[1]) << 32 | o.v[0]) == r && o.vcc == (r < c);
       }},
      {"v_min_i32 v8, v4, v5", "i32", [](auto& i, auto& o) { return o.v[0] == u32(std::min(i32(i.a), i32(i.b))); }},
      {"v_max_u32 v8, v4, v5", "i32", [](auto& i, auto& o) { return o.v[0] == std::max(i.a, i.b); }},
      {"v_bfe_u32 v8, v4, v5, v6", "i32", [](auto& i, auto& o) {
         const u32 w = i.c & 31;
         return o.v[0] == (w == 0 ? 0u : (i.a >> (i.b & 31)) & ((1u << w) - 1));
       }},
      {"v_bfe_i32 v8, v4, v5, v6", "i32", [](auto& i, auto& o) {
         const u32 w = i.c & 31;
         if (w == 0) return o.v[0] == 0;
         const u32 f = (i.a >> (i.b & 31)) & ((1u << w) - 1);
         return o.v[0] == ((f >> (w - 1)) & 1 ? f | (~0u << w) : f);
       }},
      {"v_cvt_f32_i32 v8, v4", "i32", [](auto& i, auto& o) { return o.v[0] == fb(float(i32(i.a))); }},
      {"v_cvt_f32_u32 v8, v4", "i32", [](auto& i, auto& o) { return o.v[0] == fb(float(i.a)); }},
      {"v_bfrev_b32 v8, v4", "i32", [](auto& i, auto& o) {
         u32 r = 0;
         for (int k = 0; k < 32; ++k) r |= ((i.a >> k) & 1u) << (31 - k);
         return o.v[0] == r;
       }},
      {"v_clz_i32_u32 v8, v4", "i32", [](auto& i, auto& o) { return o.v[0] == (i.a ? u32(std::countl_zero(i.a)) : ~0u); }},
      {"v_cmp_gt_i32 vcc, v4, v5\nv_cndmask_b32 v8, v6, v4, vcc", "i32",
       [](auto& i, auto& o) { return o.v[0] == (i32(i.a) > i32(i.b) ? i.a : i.c); }},
      // VOP3 clamp on an unsigned add/subtract saturates to [0, 2^32 - 1].
      {"v_add_nc_u32_e64 v8, v4, v5 clamp", "i32",
       [](auto& i, auto& o) { return o.v[0] == (u64(i.a) + i.b > 0xFFFFFFFFu ? 0xFFFFFFFFu : i.a + i.b); }},
      {"v_sub_nc_u32_e64 v8, v4, v5 clamp", "i32", [](auto& i, auto& o) { return o.v[0] == (i.a < i.b ? 0u : i.a - i.b); }},
      {"v_subrev_nc_u32_e64 v8, v4, v5 clamp", "i32", [](auto& i, auto& o) { return o.v[0] == (i.b < i.a ? 0u : i.b - i.a); }},
      // VOP3 abs/neg on v_cndmask_b32's sources (LLVM folds fabs/fneg of a select's operands into them).
      {"v_cmp_gt_i32 vcc, v4, v5\nv_cndmask_b32_e64 v8, -v6, |v4|, vcc", "i32",
       [](auto& i, auto& o) { return o.v[0] == (i32(i.a) > i32(i.b) ? (i.a & 0x7FFFFFFFu) : (i.c ^ 0x80000000u)); }},
  };
  // min/max: gfx11's v_min/max_f32 (IEEE mode), gfx12's v_min/max_num_f32 (a NaN yields the other).
  if (!gfx12) {
    v.push_back({"v_min_f32 v8, v4, v5", "f32", [](auto& i, auto& o) { return same_f32(o.v[0], gpu_min(bf(i.a), bf(i.b))); }});
    v.push_back({"v_max_f32 v8, v4, v5", "f32", [](auto& i, auto& o) { return same_f32(o.v[0], gpu_max(bf(i.a), bf(i.b))); }});
  } else {
    auto num = [](bool mx) {
      return [mx](auto& i, auto& o) {
        const float a = bf(i.a), b = bf(i.b);
        if (std::isnan(a) && std::isnan(b)) return std::isnan(bf(o.v[0]));
        if (std::isnan(a)) return o.v[0] == i.b;
        if (std::isnan(b)) return o.v[0] == i.a;
        if (a == 0 && b == 0) return o.v[0] == (mx ? (std::signbit(a) ? i.b : i.a) : (std::signbit(a) ? i.a : i.b));
        return o.v[0] == (mx ? (a > b ? i.a : i.b) : (a < b ? i.a : i.b));
      };
    };
    v.push_back({"v_min_num_f32 v8, v4, v5", "f32", num(false)});
    v.push_back({"v_max_num_f32 v8, v4, v5", "f32", num(true)});
  }
  return v;
}

// f32 → f16 rounded toward zero, found by search: the f16 of largest magnitude not above |x|
// (past the largest finite f16: that one; infinities and NaN stay what they are).
_Float16 rtz_ref(float x) {
  if (std::isnan(x) || std::isinf(x)) return static_cast<_Float16>(x);
  const float m = std::fabs(x);
  std::uint16_t lo = 0, hi = 0x7BFF;  // magnitudes 0 .. 65504, ordered like their encodings
  while (lo < hi) {
    const std::uint16_t mid = static_cast<std::uint16_t>((lo + hi + 1) / 2);
    if (static_cast<float>(std::bit_cast<_Float16>(mid)) <= m) lo = mid;
    else hi = static_cast<std::uint16_t>(mid - 1);
  }
  return std::bit_cast<_Float16>(static_cast<std::uint16_t>(lo | (std::signbit(x) ? 0x8000 : 0)));
}

// gfx12's SALU float operations (s2 = a, s3 = b, s4 = c over the 256 f32 edge pairs; result
// in s8, SCC), against host C++ with the VALU's conventions (the same RNE arithmetic, min/max_num
// NaN rule, saturating conversions; RDNA4 ISA guide, SALU floating-point instructions).
void run_salu_float(const char* mcpu, machine& m) {
  struct fcase {
    const char* body;
    std::function<bool(float, float, float, u32, bool)> ok;  // a, b, c, s8, scc
  };
  auto num = [](bool mx) {
    return [mx](float a, float b, float, u32 r, bool) {
      if (std::isnan(a) && std::isnan(b)) return std::isnan(bf(r));
      if (std::isnan(a)) return r == fb(b);
      if (std::isnan(b)) return r == fb(a);
      if (a == 0 && b == 0) return r == fb(mx ? (std::signbit(a) ? b : a) : (std::signbit(a) ? a : b));
      return r == fb(mx ? (a > b ? a : b) : (a < b ? a : b));
    };
  };
  // IEEE 754-2019 minimum/maximum: any NaN operand gives a NaN; -0 < +0.
  auto minmax = [](bool mx) {
    return [mx](float a, float b, float, u32 r, bool) {
      if (std::isnan(a) || std::isnan(b)) return std::isnan(bf(r));
      if (a == 0 && b == 0) return r == fb(mx ? (std::signbit(a) ? b : a) : (std::signbit(a) ? a : b));
      return r == fb(mx ? (a > b ? a : b) : (a < b ? a : b));
    };
  };
  const std::vector<fcase> fc = {
      {"s_add_f32 s8, s2, s3", [](float a, float b, float, u32 r, bool) { return same_f32(r, a + b); }},
      {"s_sub_f32 s8, s2, s3", [](float a, float b, float, u32 r, bool) { return same_f32(r, a - b); }},
      {"s_mul_f32 s8, s2, s3", [](float a, float b, float, u32 r, bool) { return same_f32(r, a * b); }},
      {"s_min_num_f32 s8, s2, s3", num(false)},
      {"s_max_num_f32 s8, s2, s3", num(true)},
      {"s_mov_b32 s8, s4\ns_fmac_f32 s8, s2, s3", [](float a, float b, float c, u32 r, bool) { return same_f32(r, std::fma(a, b, c)); }},
      {"s_fmaak_f32 s8, s2, s3, 0x3fc00000", [](float a, float b, float, u32 r, bool) { return same_f32(r, std::fma(a, b, 1.5f)); }},
      {"s_fmamk_f32 s8, s2, 0xc0400000, s3", [](float a, float b, float, u32 r, bool) { return same_f32(r, std::fma(a, -3.0f, b)); }},
      {"s_add_f32 s8, 1.0, s2", [](float a, float, float, u32 r, bool) { return same_f32(r, 1.0f + a); }},
      {"s_ceil_f32 s8, s2", [](float a, float, float, u32 r, bool) { return same_f32(r, std::ceil(a)); }},
      {"s_floor_f32 s8, s2", [](float a, float, float, u32 r, bool) { return same_f32(r, std::floor(a)); }},
      {"s_trunc_f32 s8, s2", [](float a, float, float, u32 r, bool) { return same_f32(r, std::trunc(a)); }},
      {"s_rndne_f32 s8, s2", [](float a, float, float, u32 r, bool) { return same_f32(r, std::nearbyint(a)); }},
      {"s_cvt_i32_f32 s8, s2", [](float a, float, float, u32 r, bool) { return r == u32(to_i32(a)); }},
      {"s_cvt_u32_f32 s8, s2", [](float a, float, float, u32 r, bool) { return r == to_u32(a); }},
      {"s_cvt_f32_i32 s8, s2", [](float a, float, float, u32 r, bool) { return r == fb(float(i32(fb(a)))); }},
      {"s_cvt_f32_u32 s8, s2", [](float a, float, float, u32 r, bool) { return r == fb(float(fb(a))); }},
      {"s_cmp_lt_f32 s2, s3", [](float a, float b, float, u32, bool c) { return c == (a < b); }},
      {"s_cmp_lg_f32 s2, s3", [](float a, float b, float, u32, bool c) { return c == (a < b || a > b); }},
      {"s_cmp_o_f32 s2, s3", [](float a, float b, float, u32, bool c) { return c == !(std::isnan(a) || std::isnan(b)); }},
      {"s_cmp_nge_f32 s2, s3", [](float a, float b, float, u32, bool c) { return c == !(a >= b); }},
      {"s_cmp_neq_f32 s2, s3", [](float a, float b, float, u32, bool c) { return c == !(a == b); }},
      {"s_minimum_f32 s8, s2, s3", minmax(false)},
      {"s_maximum_f32 s8, s2, s3", minmax(true)},
      {"s_cvt_pk_rtz_f16_f32 s8, s2, s3", [](float a, float b, float, u32 r, bool) {
         return same_f16(std::uint16_t(r), rtz_ref(a)) && same_f16(std::uint16_t(r >> 16), rtz_ref(b));
       }},
  };
  std::string text;
  for (auto& c : fc) text += std::string(c.body) + "\ns_endpgm\n";
  const auto progs = assemble(mcpu, text);
  REQUIRE(progs.size() == fc.size());
  std::vector<lane_in> zero(64, lane_in{0, 0, 0, 0});
  for (std::size_t k = 0; k < fc.size(); ++k) {
    const std::string body = fc[k].body;
    CAPTURE(body);
    int bad = 0;
    for (unsigned i = 0; i < 16; ++i)
      for (unsigned j = 0; j < 16; ++j) {
        const float a = fedges[i], b = fedges[j], c = fedges[(i + 3 * j + 5) % 16];
        const u32 s[4] = {fb(a), fb(b), fb(c), 0};
        m.run(progs[k], zero.data(), s);
        if (!fc[k].ok(a, b, c, m.s8, m.scc) && bad++ < 3)
          MESSAGE("a=0x" << std::hex << fb(a) << " b=0x" << fb(b) << " c=0x" << fb(c) << ": s8=0x" << m.s8 << " scc=" << m.scc);
      }
    CHECK(bad == 0);
  }
}

// gfx12's SALU f16 operations over the 256 f16 edge pairs: s2 = a, s3 = b, s4 = c in bits
// [15:0] with other bits above (the operations read [15:0] only), the result in s8's [15:0] and
// [31:16] zero (RDNA4 ISA guide, "SALU floating point": scalar f16 instructions operate on bits
// [15:0] and zero the destination's upper bits). Expected values: host _Float16 arithmetic,
// each operation rounded once (sums and products are exact in double, fma in long double).
void run_salu_f16(const char* mcpu, machine& m) {
  using h16 = _Float16;
  struct hcase {
    const char* body;
    std::function<bool(h16, h16, h16, u32, bool)> ok;  // a, b, c, s8, scc
  };
  auto r16 = [](u32 r, h16 want) { return (r >> 16) == 0 && same_f16(std::uint16_t(r), want); };
  auto hb = [](h16 x) { return std::bit_cast<std::uint16_t>(x); };
  auto num = [hb](bool mx) {  // minimumNumber / maximumNumber (s_min_num / s_max_num)
    return [mx, hb](h16 a, h16 b, h16, u32 r, bool) {
      if ((r >> 16) != 0) return false;
      const std::uint16_t g = std::uint16_t(r);
      const bool an = a != a, bn = b != b;
      if (an && bn) return (g & 0x7C00) == 0x7C00 && (g & 0x3FF) != 0;
      if (an) return g == hb(b);
      if (bn) return g == hb(a);
      if (a == 0 && b == 0) return g == hb(mx ? (std::signbit(float(a)) ? b : a) : (std::signbit(float(a)) ? a : b));
      return g == hb(mx ? (a > b ? a : b) : (a < b ? a : b));
    };
  };
  auto ieee = [hb](bool mx) {  // IEEE 754-2019 minimum / maximum
    return [mx, hb](h16 a, h16 b, h16, u32 r, bool) {
      if ((r >> 16) != 0) return false;
      const std::uint16_t g = std::uint16_t(r);
      if (a != a || b != b) return (g & 0x7C00) == 0x7C00 && (g & 0x3FF) != 0;
      if (a == 0 && b == 0) return g == hb(mx ? (std::signbit(float(a)) ? b : a) : (std::signbit(float(a)) ? a : b));
      return g == hb(mx ? (a > b ? a : b) : (a < b ? a : b));
    };
  };
  float s6f = 0;  // s_cvt_f16_f32's source, an f32 between f16 values: a * 3 + b
  const std::vector<hcase> hc = {
      {"s_add_f16 s8, s2, s3", [r16](h16 a, h16 b, h16, u32 r, bool) { return r16(r, h16(double(a) + double(b))); }},
      {"s_sub_f16 s8, s2, s3", [r16](h16 a, h16 b, h16, u32 r, bool) { return r16(r, h16(double(a) - double(b))); }},
      {"s_mul_f16 s8, s2, s3", [r16](h16 a, h16 b, h16, u32 r, bool) { return r16(r, h16(double(a) * double(b))); }},
      {"s_mov_b32 s8, s4\ns_fmac_f16 s8, s2, s3", [r16](h16 a, h16 b, h16 c, u32 r, bool) {
         return r16(r, h16(std::fmal(static_cast<long double>(a), static_cast<long double>(b), static_cast<long double>(c))));
       }},
      {"s_add_f16 s8, 2.0, s2", [r16](h16 a, h16, h16, u32 r, bool) { return r16(r, h16(2.0 + double(a))); }},
      {"s_mul_f16 s8, s2, 0x3555", [r16](h16 a, h16, h16, u32 r, bool) {
         return r16(r, h16(double(a) * double(std::bit_cast<h16>(std::uint16_t(0x3555)))));
       }},
      {"s_min_num_f16 s8, s2, s3", num(false)},
      {"s_max_num_f16 s8, s2, s3", num(true)},
      {"s_minimum_f16 s8, s2, s3", ieee(false)},
      {"s_maximum_f16 s8, s2, s3", ieee(true)},
      {"s_ceil_f16 s8, s2", [r16](h16 a, h16, h16, u32 r, bool) { return r16(r, h16(std::ceil(float(a)))); }},
      {"s_floor_f16 s8, s2", [r16](h16 a, h16, h16, u32 r, bool) { return r16(r, h16(std::floor(float(a)))); }},
      {"s_trunc_f16 s8, s2", [r16](h16 a, h16, h16, u32 r, bool) { return r16(r, h16(std::trunc(float(a)))); }},
      {"s_rndne_f16 s8, s2", [r16](h16 a, h16, h16, u32 r, bool) { return r16(r, h16(std::nearbyint(float(a)))); }},
      {"s_add_f16 s9, s2, 1.0\ns_rndne_f16 s8, s9", [r16](h16 a, h16, h16, u32 r, bool) {  // ties (1.5 + 1, -1.5 + 1): to even
         return r16(r, h16(std::nearbyint(float(h16(double(a) + 1.0)))));
       }},
      {"s_cvt_f32_f16 s8, s2", [](h16 a, h16, h16, u32 r, bool) { return same_f32(r, float(a)); }},
      {"s_cvt_hi_f32_f16 s8, s5", [](h16, h16 b, h16, u32 r, bool) { return same_f32(r, float(b)); }},  // s5 = b << 16
      {"s_cvt_f16_f32 s8, s6", [r16, &s6f](h16, h16, h16, u32 r, bool) { return r16(r, h16(s6f)); }},  // one rounding
      {"s_cmp_lt_f16 s2, s3", [](h16 a, h16 b, h16, u32, bool c) { return c == (a < b); }},
      {"s_cmp_lg_f16 s2, s3", [](h16 a, h16 b, h16, u32, bool c) { return c == (a < b || a > b); }},
      {"s_cmp_u_f16 s2, s3", [](h16 a, h16 b, h16, u32, bool c) { return c == (a != a || b != b); }},
      {"s_cmp_nle_f16 s2, s3", [](h16 a, h16 b, h16, u32, bool c) { return c == !(a <= b); }},
      {"s_cmp_eq_f16 s2, s3", [](h16 a, h16 b, h16, u32, bool c) { return c == (a == b); }},
  };
  std::string text;
  for (auto& c : hc) text += std::string(c.body) + "\ns_endpgm\n";
  const auto progs = assemble(mcpu, text);
  REQUIRE(progs.size() == hc.size());
  std::vector<lane_in> zero(64, lane_in{0, 0, 0, 0});
  for (std::size_t k = 0; k < hc.size(); ++k) {
    const std::string body = hc[k].body;
    CAPTURE(body);
    int bad = 0;
    for (unsigned i = 0; i < 16; ++i)
      for (unsigned j = 0; j < 16; ++j) {
        const std::uint16_t a = hedges[i], b = hedges[j], c = hedges[(i + 3 * j + 5) % 16];
        const h16 ha = std::bit_cast<h16>(a), hb2 = std::bit_cast<h16>(b);
        const u32 s[4] = {a | 0x12340000u, b | 0xFEDC0000u, c | 0x80000000u, u32(b) << 16 | 0x5A5Au};
        s6f = float(ha) * 3.0f + float(hb2);
        m.s6 = fb(s6f);
        m.run(progs[k], zero.data(), s);
        m.s6 = 0;
        if (!hc[k].ok(ha, hb2, std::bit_cast<h16>(c), m.s8, m.scc) && bad++ < 3)
          MESSAGE("a=0x" << std::hex << a << " b=0x" << b << " c=0x" << c << ": s8=0x" << m.s8 << " scc=" << m.scc);
      }
    CHECK(bad == 0);
  }
}

void run_target(const char* mcpu, const isa::target& t, bool gfx12) {
  auto cases = vector_cases(gfx12);
  std::string text;
  for (auto& c : cases)
    text += std::string("global_load_b128 v[4:7], v0, s[0:1]\n") + (gfx12 ? "s_wait_loadcnt 0\n" : "s_waitcnt vmcnt(0)\n") +
            c.asm_body + "\ns_endpgm\n";
  const auto progs = assemble(mcpu, text);
  REQUIRE(progs.size() == cases.size());
  const auto f32runs = pairs(fedges, [](float x) { return u64(fb(x)); });
  const auto f64runs = pairs(dedges, [](double x) { return std::bit_cast<u64>(x); });
  const auto i32runs = pairs(iedges, [](u32 x) { return u64(x); });
  const auto f16runs = pairs(hedges, [](std::uint16_t x) { return u64(x) | u64(hedges[(x * 7u) % 16]) << 16; });
  machine m{t, {}};
  for (std::size_t k = 0; k < cases.size(); ++k) {
    const vcase& c = cases[k];
    const std::string body = c.asm_body;
    CAPTURE(body);
    const std::string e = c.edges;
    const auto& runs = e == "f32" ? f32runs : e == "f64" ? f64runs : e == "f16" ? f16runs : i32runs;
    int bad = 0;
    for (const auto& in : runs) {
      m.run(progs[k], in.data());
      for (unsigned l = 0; l < 64; ++l)
        if (!c.ok(in[l], m.out[l])) {
          if (bad++ < 3)
            MESSAGE("lane in a=0x" << std::hex << in[l].a << " b=0x" << in[l].b << " c=0x" << in[l].c << " d=0x" << in[l].d
                                   << ": got v8=0x" << m.out[l].v[0] << " v9=0x" << m.out[l].v[1] << " vcc=" << m.out[l].vcc);
        }
    }
    CHECK(bad == 0);
  }
  // Scalar: SCC carries and overflow, shifts >= 32, s_cselect.
  struct scase {
    const char* body;  // s2 = a, s3 = b; result in s8 (s[8:9]), SCC
    std::function<bool(u32, u32, u32, u32, bool)> ok;  // a, b, s8, s9, scc
  };
  const std::vector<scase> sc = {
      {"s_add_u32 s8, s2, s3", [](u32 a, u32 b, u32 r, u32, bool c) { return r == a + b && c == (u64(a) + b > 0xFFFFFFFFu); }},
      {"s_sub_u32 s8, s2, s3", [](u32 a, u32 b, u32 r, u32, bool c) { return r == a - b && c == (b > a); }},
      {"s_add_i32 s8, s2, s3", [](u32 a, u32 b, u32 r, u32, bool c) {
         const std::int64_t w = std::int64_t(i32(a)) + i32(b);
         return r == a + b && c == (w != i32(w));
       }},
      {"s_add_u32 s8, s2, s3\ns_addc_u32 s9, s3, s2", [](u32 a, u32 b, u32, u32 r9, bool c) {
         const bool c0 = u64(a) + b > 0xFFFFFFFFu;
         const u64 w = u64(b) + a + c0;
         return r9 == u32(w) && c == (w >> 32);
       }},
      {"s_lshl_b32 s8, s2, s3", [](u32 a, u32 b, u32 r, u32, bool c) { return r == (a << (b & 31)) && c == (r != 0); }},
      {"s_ashr_i32 s8, s2, s3", [](u32 a, u32 b, u32 r, u32, bool c) { return r == u32(i32(a) >> (b & 31)) && c == (r != 0); }},
      {"s_lshl_b64 s[8:9], s[2:3], s3", [](u32 a, u32 b, u32 r, u32 r9, bool) {
         const u64 x = (u64(b) << 32 | a) << (b & 63);
         return r == u32(x) && r9 == u32(x >> 32);
       }},
      {"s_min_i32 s8, s2, s3", [](u32 a, u32 b, u32 r, u32, bool c) { return r == u32(std::min(i32(a), i32(b))) && c == (i32(a) < i32(b)); }},
      {"s_mul_hi_i32 s8, s2, s3", [](u32 a, u32 b, u32 r, u32, bool) { return r == u32(u64(std::int64_t(i32(a)) * i32(b)) >> 32); }},
      {"s_cmp_lt_i32 s2, s3\ns_cselect_b32 s8, s2, s3", [](u32 a, u32 b, u32 r, u32, bool c) {
         return c == (i32(a) < i32(b)) && r == (c ? a : b);
       }},
      {"s_bfe_u32 s8, s2, s3", [](u32 a, u32 b, u32 r, u32, bool) {
         const u32 off = b & 31, w = (b >> 16) & 0x7F;
         return r == (w == 0 ? 0u : w >= 32 ? a >> off : (a >> off) & ((1u << w) - 1));
       }},
  };
  std::string stext;
  for (auto& c : sc) stext += std::string(c.body) + "\ns_endpgm\n";
  const auto sprogs = assemble(mcpu, stext);
  REQUIRE(sprogs.size() == sc.size());
  std::vector<lane_in> zero(64, lane_in{0, 0, 0, 0});
  for (std::size_t k = 0; k < sc.size(); ++k) {
    const std::string body = sc[k].body;
    CAPTURE(body);
    int bad = 0;
    for (u32 a : iedges)
      for (u32 b : iedges) {
        const u32 s[4] = {a, b, 0, 0};
        m.run(sprogs[k], zero.data(), s);
        if (!sc[k].ok(a, b, m.s8, m.s9, m.scc) && bad++ < 3)
          MESSAGE("a=0x" << std::hex << a << " b=0x" << b << ": s8=0x" << m.s8 << " s9=0x" << m.s9 << " scc=" << m.scc);
      }
    CHECK(bad == 0);
  }
  if (gfx12) run_salu_float(mcpu, m), run_salu_f16(mcpu, m);
}

// ds_bpermute_b32 / ds_permute_b32 on one wave64 with lanes off (EXEC from s[2:3]), addresses
// with junk above bit 6 and unaligned low bits, and an offset: against the ISA guides' pseudocode
// written out here (RDNA3: lanes modulo 32 within each half of a wave64; RDNA4: modulo 64).
// No LDS is given to the wave: the permutes must not touch it. Inactive lanes keep v8.
void run_permutes(const char* mcpu, const isa::target& t, bool halves) {
  const std::string text =
      "global_load_b128 v[4:7], v0, s[0:1]\n" + std::string(halves ? "s_waitcnt vmcnt(0)\n" : "s_wait_loadcnt 0\n") +
      "v_mov_b32 v8, 0x5555\ns_mov_b64 exec, s[2:3]\nds_bpermute_b32 v8, v4, v5 offset:12\ns_mov_b64 exec, -1\ns_endpgm\n"
      "global_load_b128 v[4:7], v0, s[0:1]\n" + std::string(halves ? "s_waitcnt vmcnt(0)\n" : "s_wait_loadcnt 0\n") +
      "v_mov_b32 v8, 0x5555\ns_mov_b64 exec, s[2:3]\nds_permute_b32 v8, v4, v5 offset:4\ns_mov_b64 exec, -1\ns_endpgm\n";
  const auto progs = assemble(mcpu, text);
  REQUIRE(progs.size() == 2);
  std::vector<lane_in> in(64);
  for (u32 l = 0; l < 64; ++l) {
    const u32 lane = (l * 37 + 11) % 64;  // distinct lanes for l < 32, pairs colliding above
    in[l] = {(l < 32 ? lane : lane & 0x3Eu) * 4 + (l % 3) + (l << 9), 0x1000u + l * 3, 0, 0};
  }
  const u64 exec = 0xF0F0FFFF7FFFFFFEull;
  const u32 s[4] = {u32(exec), u32(exec >> 32), 0, 0};
  machine m{t, {}};
  auto lane_of = [&](u32 l, u32 off) {  // the other lane: bits of (addr + offset) / 4
    const u32 x = (in[l].a + off) / 4;
    return halves ? (l & 32u) | (x % 32u) : x % 64u;
  };
  m.run(progs[0], in.data(), s);
  int bad = 0;
  for (u32 l = 0; l < 64; ++l) {
    const u32 src = lane_of(l, 12);
    const u32 want = !((exec >> l) & 1) ? 0x5555u : (exec >> src) & 1 ? in[src].b : 0u;
    if (m.out[l].v[0] != want && bad++ < 4) MESSAGE("bpermute lane " << l << ": got 0x" << std::hex << m.out[l].v[0] << ", want 0x" << want);
  }
  CHECK(bad == 0);
  m.run(progs[1], in.data(), s);
  u32 sent[64] = {};
  for (u32 l = 0; l < 64; ++l)
    if ((exec >> l) & 1) sent[lane_of(l, 4)] = in[l].b;  // in lane order: the highest sender wins
  bad = 0;
  for (u32 l = 0; l < 64; ++l) {
    const u32 want = (exec >> l) & 1 ? sent[l] : 0x5555u;
    if (m.out[l].v[0] != want && bad++ < 4) MESSAGE("permute lane " << l << ": got 0x" << std::hex << m.out[l].v[0] << ", want 0x" << want);
  }
  CHECK(bad == 0);
}


// ---- transcendental approximations: v_exp_f32, v_log_f32, v_sin_f32, v_cos_f32 on one wave64.
// Expected values come from the host's long double libm (exp2l, log2l, sinl/cosl of 2π·x with a
// long double 2π), rounded once to float. Documented bounds (docs/isa.md, "What is not
// modelled"): exp2 and log2 within 1 ULP for normal inputs and results; sin/cos of 2π·x within
// 2^-23 absolute for |x| <= 256 (the inputs the ISA guides allow); the special values IEEE/C99
// define (exp2(±0) = 1, exp2(-inf) = +0, exp2(+inf) = +inf, log2(1) = +0, log2(±0) = -inf,
// log2(<0) = NaN, log2(+inf) = +inf, sin(±0) = ±0, cos(0) = 1, sin/cos(±inf) = NaN, NaN → NaN)
// bit-exact.
void run_transcendentals(const char* mcpu, const isa::target& t, bool gfx12) {
  const std::string text = std::string("global_load_b128 v[4:7], v0, s[0:1]\n") + (gfx12 ? "s_wait_loadcnt 0\n" : "s_waitcnt vmcnt(0)\n") +
                           "v_exp_f32 v8, v4\nv_log_f32 v9, v5\nv_sin_f32 v10, v6\nv_cos_f32 v11, v6\ns_endpgm\n";
  const auto progs = assemble(mcpu, text);
  REQUIRE(progs.size() == 1);
  machine m{t, {}};
  const long double two_pi = 6.283185307179586476925286766559005768L;
  auto ulps = [](float a, float b) -> std::int64_t {  // distance in representable floats (finite, same sign or zero)
    auto key = [](float x) { const std::int64_t u = fb(x) & 0x7FFFFFFF; return (fb(x) >> 31) ? -u : u; };
    const std::int64_t d = key(a) - key(b);
    return d < 0 ? -d : d;
  };
  // Inputs: specials first, then sweeps (exp2: [-126, 128); log2: normals over every binade;
  // sin/cos: [-256, 256]), 64 lanes per run.
  std::vector<float> ex = {0.0f, -0.0f, 1.0f, -1.0f, 10.0f, -126.0f, 127.5f, INFINITY, -INFINITY, fnan};
  std::vector<float> lg = {1.0f, 2.0f, 0.0f, -0.0f, -1.0f, INFINITY, -INFINITY, fnan, 0x1p-126f, std::numeric_limits<float>::max()};
  std::vector<float> sn = {0.0f, -0.0f, 0.25f, 0.5f, -0.75f, 1.0f, 256.0f, -256.0f, INFINITY, -INFINITY, fnan};
  const unsigned n = 64 * 40;
  for (unsigned k = 0; ex.size() < n; ++k) ex.push_back(-126.0f + 254.0f * float(k) / float(n) + float(k % 7) * 0x1p-13f);
  for (unsigned k = 0; lg.size() < n; ++k) lg.push_back(std::ldexp(1.0f + float((k * 2654435761u) >> 9) * 0x1p-23f, int(k % 254) - 126));
  for (unsigned k = 0; sn.size() < n; ++k) sn.push_back(-256.0f + 512.0f * float(k) / float(n) + float(k % 11) * 0x1p-17f);
  int bad = 0;
  std::int64_t worst_exp = 0, worst_log = 0;
  double worst_trig = 0;
  for (unsigned r = 0; r < n / 64; ++r) {
    std::vector<lane_in> in(64);
    for (unsigned l = 0; l < 64; ++l) in[l] = {fb(ex[r * 64 + l]), fb(lg[r * 64 + l]), fb(sn[r * 64 + l]), 0};
    m.run(progs[0], in.data());
    for (unsigned l = 0; l < 64; ++l) {
      const float x = ex[r * 64 + l], y = lg[r * 64 + l], z = sn[r * 64 + l];
      const float e = bf(m.out[l].v[0]), g = bf(m.out[l].v[1]), s = bf(m.out[l].v[2]), c = bf(m.out[l].v[3]);
      const float we = static_cast<float>(exp2l(x)), wg = static_cast<float>(log2l(y));
      const long double ws = sinl(two_pi * z), wc = cosl(two_pi * z);
      auto fail = [&](const char* what, float in_v, float got, double want) {
        if (bad++ < 12)
          MESSAGE((std::string(what) + "(" + std::to_string(in_v) + "): got " + std::to_string(got) + " (bits " + std::to_string(fb(got)) +
                   "), want " + std::to_string(want)));
      };
      // exp2: exact specials, else <= 1 ULP
      if (std::isnan(x) || std::isinf(x) || x == 0.0f || x == 1.0f || x == -1.0f || x == 10.0f) {
        if (!same_f32(fb(e), std::exp2(x))) fail("v_exp_f32", x, e, std::exp2(x));
      } else {
        worst_exp = std::max(worst_exp, ulps(e, we));
        if (ulps(e, we) > 1) fail("v_exp_f32", x, e, we);
      }
      if (std::isnan(y) || std::isinf(y) || y <= 0.0f || y == 1.0f || y == 2.0f) {
        if (!same_f32(fb(g), std::log2(y))) fail("v_log_f32", y, g, std::log2(y));
      } else {
        worst_log = std::max(worst_log, ulps(g, wg));
        if (ulps(g, wg) > 1) fail("v_log_f32", y, g, wg);
      }
      if (std::isnan(z) || std::isinf(z)) {
        if (!std::isnan(s) || !std::isnan(c)) fail("v_sin_f32/v_cos_f32", z, s, NAN);
      } else if (z == 0.0f) {
        if (fb(s) != fb(z) || c != 1.0f) fail("v_sin_f32/v_cos_f32 of ±0", z, s, z);
      } else {
        const double ds = std::fabs(double(s) - double(ws)), dc = std::fabs(double(c) - double(wc));
        worst_trig = std::max({worst_trig, ds, dc});
        if (ds > 0x1p-23 || dc > 0x1p-23) fail("v_sin_f32/v_cos_f32", z, ds > dc ? s : c, double(ds > dc ? ws : wc));
      }
    }
  }
  MESSAGE((std::string(mcpu) + ": worst exp2 " + std::to_string(worst_exp) + " ULP, log2 " + std::to_string(worst_log) +
           " ULP, sin/cos absolute " + std::to_string(worst_trig)));
  CHECK(bad == 0);
}

}  // namespace

TEST_CASE("ds_bpermute_b32 and ds_permute_b32: gfx1100 wave64 within each half, gfx1201 across the wave") {
  run_permutes("gfx1100", isa::gfx11_target, true);
  run_permutes("gfx1201", isa::gfx12_target, false);
}

TEST_CASE("v_exp_f32, v_log_f32 within 1 ULP and v_sin_f32, v_cos_f32 within 2^-23 of long double references; their special values exact") {
  run_transcendentals("gfx1100", isa::gfx11_target, false);
  run_transcendentals("gfx1201", isa::gfx12_target, true);
}

TEST_CASE("gfx1100 instruction semantics on edge values equal host C++") { run_target("gfx1100", isa::gfx11_target, false); }
TEST_CASE("gfx1201 instruction semantics on edge values equal host C++") { run_target("gfx1201", isa::gfx12_target, true); }

}  // namespace AQ_UNITY_ID
