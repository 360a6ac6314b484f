// emu/isa on gfx942 and gfx90a: the gfx9-specific operations on edge values, each instruction
// assembled by llvm-mc-19 (the only outside tool here) and run by the interpreter on one wave64;
// expected values come from host C++ (IEEE float/double/_Float16 arithmetic, integer arithmetic
// written out), bit-exact (a NaN result only has to be a NaN: IEEE leaves its sign and payload):
//   SDWA      source selects (bytes, words, sext), float neg/abs, dst_sel with UNUSED_PAD /
//             UNUSED_SEXT / UNUSED_PRESERVE, compares writing an SGPR pair;
//   VOP3      clamp (to [0, 1], NaN → 0: the kernel's DX10_CLAMP) and omod (×2, ×4, ÷2);
//   carries   v_add_co_u32 / v_sub_co_u32 / v_subrev_co_u32 (VCC and an SGPR pair), and
//             v_addc_co_u32 / v_subb_co_u32 / v_subbrev_co_u32 with a carry-in mask;
//   f64       add, mul, fma, floor, trunc, ldexp, conversions (saturating);
//   f16       add, mul, fma, conversions (round to nearest even, denormals), and the high half
//             of the destination zeroed (LLVM zeroesHigh16BitsOfDest: gfx9 behaviour);
//   gfx9      v_cmpx writes EXEC and VCC; v_lshl_add_u64, v_mov_b64 (gfx942).
//   pk f32    v_pk_add/mul/fma_f32 and v_pk_mov_b32 on register pairs (gfx942, gfx90a): op_sel,
//             op_sel_hi, neg_lo/neg_hi, clamp, an inline constant.
//   DPP       every dpp_ctrl family, row/bank masks, bound_ctrl, inactive source lanes, neg/abs;
//   permutes  ds_bpermute_b32 / ds_permute_b32 with lanes off and colliding senders.
// Each case runs 64 lanes: lane l reads four input dwords at in + 16 l and writes two output
// dwords at out + 8 l.
#include <aqueduct/emu/isa.hpp>

#include "emu_ports.hpp"

#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <limits>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

#ifndef AQUEDUCT_TEST_LLVM_MC
#define AQUEDUCT_TEST_LLVM_MC "llvm-mc-19"
#endif
#ifndef AQUEDUCT_TEST_LLVM_OBJCOPY
#define AQUEDUCT_TEST_LLVM_OBJCOPY "llvm-objcopy-19"
#endif

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

namespace isa = aqueduct::emu::isa;
namespace emu = aqueduct::emu;

namespace {

// The machine code of `body` (gfx942 assembly) framed by the load/store of the lane's data.
std::vector<std::uint32_t> assemble(const std::string& body, const char* mcpu) {
  const std::string src = std::string(
                              "v_lshlrev_b32 v1, 4, v0\n"
                              "global_load_dwordx4 v[2:5], v1, s[0:1]\n"
                              "s_waitcnt vmcnt(0)\n"
                              "v_mov_b32 v6, 0\n"
                              "v_mov_b32 v7, 0\n") +
                          body +
                          "\nv_lshlrev_b32 v1, 3, v0\n"
                          "global_store_dwordx2 v1, v[6:7], s[2:3]\n"
                          "s_endpgm\n";
  char dir[] = "/tmp/aq-gfx9-sem-XXXXXX";
  REQUIRE(mkdtemp(dir) != nullptr);
  const std::string d(dir);
  std::ofstream(d + "/k.s") << ".text\n" << src;
  const std::string cmd = std::string(AQUEDUCT_TEST_LLVM_MC) + " -arch=amdgcn -mcpu=" + mcpu + " -filetype=obj " + d +
                          "/k.s -o " + d + "/k.o 2> " + d + "/err.txt && " + AQUEDUCT_TEST_LLVM_OBJCOPY +
                          " -O binary --only-section=.text " + d + "/k.o " + d + "/k.bin 2>> " + d + "/err.txt";
  const int rc = std::system(cmd.c_str());
  std::ifstream e(d + "/err.txt");
  std::stringstream es;
  es << e.rdbuf();
  INFO(src);
  REQUIRE_MESSAGE(rc == 0, es.str());
  std::ifstream f(d + "/k.bin", std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::system(("rm -rf " + d).c_str());
  std::vector<std::uint32_t> w((bytes.size() + 3) / 4 + 4, 0xBF810000u);  // s_endpgm padding
  std::memcpy(w.data(), bytes.data(), bytes.size());
  return w;
}

struct lane_in {
  std::uint32_t a = 0, b = 0, c = 0, d = 0;
};
struct lane_out {
  std::uint32_t x = 0, y = 0;
};

// Runs `body` on one wave64 with the given per-lane inputs; returns each lane's two outputs.
const char* g_mcpu = "gfx942";  // the target the current case runs on

std::vector<lane_out> run(const std::string& body, const std::vector<lane_in>& in, const char* mcpu = g_mcpu) {
  REQUIRE(in.size() == 64);
  std::vector<std::uint32_t> code = assemble(body, mcpu);
  std::vector<lane_in> input = in;
  std::vector<lane_out> out(64);
  aq_test::test_vm vm;
  vm.map(code.data(), code.size() * 4);
  vm.map(input.data(), input.size() * sizeof(lane_in));
  vm.map(out.data(), out.size() * sizeof(lane_out));
  const isa::target& t = std::string(mcpu) == "gfx90a" ? isa::gfx90a_target : isa::gfx942_target;
  isa::interpreter it(vm, t);
  emu::wave_state ws;
  ws.wave_size = 64;
  ws.exec = ~0ull;
  const auto in_va = reinterpret_cast<std::uint64_t>(input.data()), out_va = reinterpret_cast<std::uint64_t>(out.data());
  ws.sgpr[0] = static_cast<std::uint32_t>(in_va), ws.sgpr[1] = static_cast<std::uint32_t>(in_va >> 32);
  ws.sgpr[2] = static_cast<std::uint32_t>(out_va), ws.sgpr[3] = static_cast<std::uint32_t>(out_va >> 32);
  for (unsigned l = 0; l < 64; ++l) ws.v0[l] = l;
  isa::run_params p;
  p.entry = reinterpret_cast<std::uint64_t>(code.data());
  p.vgprs = 32;
  p.rsrc1 = (1u << 21) | (1u << 23);  // DX10_CLAMP, IEEE_MODE: clang's defaults for compute kernels
  std::atomic<std::int64_t> budget{1 << 20};
  try {
    it.run(p, std::span<const emu::wave_state>(&ws, 1), {}, budget);
  } catch (const isa::isa_fault& e) {
    FAIL("isa fault: " << e.what);
  } catch (const emu::memory_fault& e) {
    FAIL("memory fault at 0x" << std::hex << e.address);
  }
  return out;
}

std::uint32_t u(float f) { return std::bit_cast<std::uint32_t>(f); }
float f(std::uint32_t x) { return std::bit_cast<float>(x); }
std::uint16_t h(_Float16 x) { return std::bit_cast<std::uint16_t>(x); }
_Float16 hf(std::uint32_t x) { return std::bit_cast<_Float16>(static_cast<std::uint16_t>(x)); }

// 64 lanes of inputs from a list of interesting values (repeated and paired differently).
std::vector<lane_in> lanes_from(const std::vector<std::uint32_t>& vals) {
  std::vector<lane_in> v(64);
  const std::size_t n = vals.size();
  for (unsigned l = 0; l < 64; ++l)
    v[l] = {vals[l % n], vals[(l / n + l * 7 + 1) % n], vals[(l * 3 + 2) % n], vals[(l * 5 + 3) % n]};
  return v;
}

const std::vector<std::uint32_t> ints = {0u, 1u, 2u, 0x7Fu, 0x80u, 0xFFu, 0x100u, 0x7FFFu, 0x8000u, 0xFFFFu, 0x10000u,
                                         0x7FFFFFFFu, 0x80000000u, 0xFFFFFFFFu, 0xFFFFFFFEu, 0x12345678u, 0xDEADBEEFu,
                                         0x80808080u, 0x01FF01FFu, 33u, 31u, 32u};
const std::vector<std::uint32_t> floats = {
    u(0.0f), u(-0.0f), u(1.0f), u(-1.0f), u(0.5f), u(2.0f), u(3.0f), u(-7.25f), u(1e30f), u(-1e30f), u(1e-30f),
    0x00000001u /* smallest denormal */, 0x807FFFFFu /* largest -denormal */, 0x7F800000u /* inf */, 0xFF800000u,
    0x7FC00000u /* qNaN */, 0x3F7FFFFFu, 0x3F800001u, u(0.999f), u(1.001f)};

// How the outputs compare: bit for bit, except that any NaN equals any NaN for float results
// (IEEE leaves a NaN result's sign and payload open).
enum class out_kind { bits, f32, f64, f16 };
bool same(lane_out got, lane_out want, out_kind k) {
  auto nan32 = [](std::uint32_t x) { return (x & 0x7F800000u) == 0x7F800000u && (x & 0x7FFFFFu) != 0; };
  auto nan16 = [](std::uint32_t x) { return (x & 0x7C00u) == 0x7C00u && (x & 0x3FFu) != 0 && (x >> 16) == 0; };
  switch (k) {
    case out_kind::f32: if (nan32(got.x) && nan32(want.x)) return got.y == want.y; break;
    case out_kind::f16: if (nan16(got.x) && nan16(want.x)) return got.y == want.y; break;
    case out_kind::f64: if (nan32(got.y) && nan32(want.y)) return true; break;  // the high dword holds the exponent
    default: break;
  }
  return got.x == want.x && got.y == want.y;
}

template <class Ref>
void check(const std::string& body, const std::vector<lane_in>& in, Ref ref, out_kind kind = out_kind::bits) {
  CAPTURE(body);
  const std::string target = g_mcpu;
  CAPTURE(target);
  const std::vector<lane_out> out = run(body, in);
  int bad = 0;
  for (unsigned l = 0; l < 64; ++l) {
    const lane_out want = ref(in[l]);
    if (!same(out[l], want, kind)) {
      if (++bad <= 8)
        FAIL_CHECK("lane " << l << " in {" << std::hex << in[l].a << ", " << in[l].b << ", " << in[l].c << ", " << in[l].d
                           << "}: got {" << out[l].x << ", " << out[l].y << "}, want {" << want.x << ", " << want.y << "}");
    }
  }
  CHECK(bad == 0);
}

template <class Ref>
void check_f32(const std::string& body, const std::vector<lane_in>& in, Ref ref) { check(body, in, ref, out_kind::f32); }
template <class Ref>
void check_f64(const std::string& body, const std::vector<lane_in>& in, Ref ref) { check(body, in, ref, out_kind::f64); }
template <class Ref>
void check_f16(const std::string& body, const std::vector<lane_in>& in, Ref ref) { check(body, in, ref, out_kind::f16); }

// Host references for SDWA.
std::uint32_t sel(std::uint32_t v, unsigned s, bool sx) {
  switch (s) {
    case 0: case 1: case 2: case 3: {
      const std::uint32_t b = (v >> (8 * s)) & 0xFF;
      return sx ? static_cast<std::uint32_t>(static_cast<std::int32_t>(static_cast<std::int8_t>(b))) : b;
    }
    case 4: case 5: {
      const std::uint32_t w = (v >> (16 * (s - 4))) & 0xFFFF;
      return sx ? static_cast<std::uint32_t>(static_cast<std::int32_t>(static_cast<std::int16_t>(w))) : w;
    }
    default: return v;
  }
}

}  // namespace

TEST_CASE("gfx942/gfx90a SDWA: source selects, sign extension, float modifiers") {
  for (const char* t : {"gfx942", "gfx90a"}) {
    g_mcpu = t;
    const auto in = lanes_from(ints);
    const char* sels[] = {"BYTE_0", "BYTE_1", "BYTE_2", "BYTE_3", "WORD_0", "WORD_1", "DWORD"};
    for (unsigned s = 0; s < 7; ++s) {
      check(std::string("v_mov_b32_sdwa v6, v2 dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:") + sels[s], in,
            [&](lane_in i) { return lane_out{sel(i.a, s, false), 0}; });
      check(std::string("v_mov_b32_sdwa v6, sext(v2) dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:") + sels[s], in,
            [&](lane_in i) { return lane_out{sel(i.a, s, true), 0}; });
      check(std::string("v_add_u32_sdwa v6, v2, sext(v3) dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:") + sels[s] +
                " src1_sel:" + sels[6 - s],
            in, [&](lane_in i) { return lane_out{sel(i.a, s, false) + sel(i.b, 6 - s, true), 0}; });
    }
    // The corpus' hash kernel: v_xor_b32_sdwa with src0_sel:WORD_1 (x ^ (x >> 16)).
    check("v_xor_b32_sdwa v6, v2, v3 dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:WORD_1 src1_sel:DWORD", in,
          [](lane_in i) { return lane_out{(i.a >> 16) ^ i.b, 0}; });
    // Float modifiers after the select: -a * |b|.
    const auto fin = lanes_from(floats);
    check_f32("v_mul_f32_sdwa v6, -v2, |v3| dst_sel:DWORD dst_unused:UNUSED_PAD src0_sel:DWORD src1_sel:DWORD", fin,
          [](lane_in i) { return lane_out{u(-f(i.a) * std::fabs(f(i.b))), 0}; });  }
  g_mcpu = "gfx942";
}

TEST_CASE("gfx942/gfx90a SDWA: dst_sel with UNUSED_PAD, UNUSED_SEXT and UNUSED_PRESERVE") {
  for (const char* t : {"gfx942", "gfx90a"}) {
    g_mcpu = t;
    const auto in = lanes_from(ints);
    const char* sels[] = {"BYTE_0", "BYTE_1", "BYTE_2", "BYTE_3", "WORD_0", "WORD_1"};
    for (unsigned s = 0; s < 6; ++s) {
      const unsigned bits = s < 4 ? 8 : 16, shift = s < 4 ? 8 * s : 16 * (s - 4);
      const std::uint32_t field = ((1u << bits) - 1u) << shift;
      for (unsigned unused = 0; unused < 3; ++unused) {
        const char* un[] = {"UNUSED_PAD", "UNUSED_SEXT", "UNUSED_PRESERVE"};
        check(std::string("v_mov_b32 v6, v4\nv_add_u32_sdwa v6, v2, v3 dst_sel:") + sels[s] + " dst_unused:" + un[unused] +
                  " src0_sel:DWORD src1_sel:DWORD",
              in, [&](lane_in i) {
                const std::uint32_t r = i.a + i.b, placed = (r << shift) & field;
                std::uint32_t x = placed;
                if (unused == 2) x = (i.c & ~field) | placed;
                if (unused == 1 && ((r >> (bits - 1)) & 1) && shift + bits < 32) x |= ~0u << (shift + bits);
                return lane_out{x, 0};
              });
      }
    }  }
  g_mcpu = "gfx942";
}

TEST_CASE("gfx942/gfx90a SDWA compare writes an SGPR pair; v_cmpx writes EXEC and VCC (gfx9)") {
  for (const char* t : {"gfx942", "gfx90a"}) {
    g_mcpu = t;
    const auto in = lanes_from(ints);
    check("v_cmp_gt_i32_sdwa s[4:5], sext(v2), v3 src0_sel:BYTE_0 src1_sel:DWORD\nv_cndmask_b32_e64 v6, 0, 1, s[4:5]", in,
          [](lane_in i) { return lane_out{std::int32_t(sel(i.a, 0, true)) > std::int32_t(i.b) ? 1u : 0u, 0}; });
    // v_cmpx: lanes failing the compare stop; VCC holds the same mask (read back once EXEC is restored).
    check("s_mov_b64 s[6:7], exec\nv_cmpx_lt_u32_e32 vcc, v2, v3\nv_mov_b32 v6, 7\ns_mov_b64 exec, s[6:7]\n"
          "v_cndmask_b32_e64 v7, 0, 1, vcc",
          in, [](lane_in i) { return lane_out{i.a < i.b ? 7u : 0u, i.a < i.b ? 1u : 0u}; });  }
  g_mcpu = "gfx942";
}

TEST_CASE("gfx942/gfx90a VOP3 clamp and output modifiers") {
  for (const char* t : {"gfx942", "gfx90a"}) {
    g_mcpu = t;
    const auto in = lanes_from(floats);
    auto clamp = [](float x) { return std::isnan(x) ? 0.0f : std::fmin(std::fmax(x, 0.0f), 1.0f); };
    check_f32("v_add_f32_e64 v6, v2, v3 clamp", in, [&](lane_in i) { return lane_out{u(clamp(f(i.a) + f(i.b))), 0}; });
    check_f32("v_mul_f32_e64 v6, v2, v3 mul:2", in, [&](lane_in i) { return lane_out{u((f(i.a) * f(i.b)) * 2.0f), 0}; });
    check_f32("v_mul_f32_e64 v6, v2, v3 mul:4", in, [&](lane_in i) { return lane_out{u((f(i.a) * f(i.b)) * 4.0f), 0}; });
    check_f32("v_fma_f32 v6, v2, v3, v4 clamp mul:2", in,
          [&](lane_in i) { return lane_out{u(clamp(std::fma(f(i.a), f(i.b), f(i.c)) * 2.0f)), 0}; });
    check_f32("v_add_f32_e64 v6, -|v2|, v3 div:2", in, [&](lane_in i) { return lane_out{u((-std::fabs(f(i.a)) + f(i.b)) * 0.5f), 0}; });  }
  g_mcpu = "gfx942";
}

// LLVM gives V_CNDMASK_B32_e64 float source modifiers and folds fabs/fneg of a select's operands
// into them: clang-19 compiles fmaxf(m, fabsf(d)) to `v_cndmask_b32_e64 v0, v0, |v1|, s[0:1]`
// (examples/iterate/iterate.hip's check kernel). abs clears and neg flips the sign bit.
TEST_CASE("gfx942/gfx90a v_cndmask_b32_e64 applies abs and neg to its sources") {
  for (const char* t : {"gfx942", "gfx90a"}) {
    g_mcpu = t;
    const auto in = lanes_from(ints);
    check("v_cmp_gt_u32_e64 s[4:5], v2, v3\nv_cndmask_b32_e64 v6, -v4, |v2|, s[4:5]", in,
          [](lane_in i) { return lane_out{i.a > i.b ? (i.a & 0x7FFFFFFFu) : (i.c ^ 0x80000000u), 0}; });
    check("v_cmp_gt_u32_e64 s[4:5], v2, v3\nv_cndmask_b32_e64 v6, |v4|, -|v3|, s[4:5]", in,
          [](lane_in i) { return lane_out{i.a > i.b ? (i.b | 0x80000000u) : (i.c & 0x7FFFFFFFu), 0}; });
  }
  g_mcpu = "gfx942";
}

// VOP3 clamp on v_add_u32/v_sub_u32/v_subrev_u32 saturates to [0, 2^32 - 1] (Vega ISA guide,
// VOP3 CLAMP on integer results); clang-19 emits it for usub.sat (a grid-stride loop's trip count).
TEST_CASE("gfx942/gfx90a v_add_u32/v_sub_u32/v_subrev_u32 with clamp saturate") {
  for (const char* t : {"gfx942", "gfx90a"}) {
    g_mcpu = t;
    const auto in = lanes_from(ints);
    check("v_add_u32_e64 v6, v2, v3 clamp", in, [](lane_in i) {
      const std::uint64_t r = std::uint64_t(i.a) + i.b;
      return lane_out{r > 0xFFFFFFFFu ? 0xFFFFFFFFu : std::uint32_t(r), 0};
    });
    check("v_sub_u32_e64 v6, v2, v3 clamp", in, [](lane_in i) { return lane_out{i.a < i.b ? 0u : i.a - i.b, 0}; });
    check("v_subrev_u32_e64 v6, v2, v3 clamp", in, [](lane_in i) { return lane_out{i.b < i.a ? 0u : i.b - i.a, 0}; });
  }
  g_mcpu = "gfx942";
}

TEST_CASE("gfx942/gfx90a carries: v_add_co/v_sub_co/v_subrev_co and the carry-in forms") {
  for (const char* t : {"gfx942", "gfx90a"}) {
    g_mcpu = t;
    const auto in = lanes_from(ints);
    using u64 = std::uint64_t;
    check("v_add_co_u32_e32 v6, vcc, v2, v3\nv_cndmask_b32_e64 v7, 0, 1, vcc", in,
          [](lane_in i) { const u64 r = u64(i.a) + i.b; return lane_out{std::uint32_t(r), std::uint32_t(r >> 32)}; });
    check("v_sub_co_u32_e64 v6, s[8:9], v2, v3\nv_cndmask_b32_e64 v7, 0, 1, s[8:9]", in,
          [](lane_in i) { return lane_out{i.a - i.b, i.b > i.a ? 1u : 0u}; });
    check("v_subrev_co_u32_e32 v6, vcc, v2, v3\nv_cndmask_b32_e64 v7, 0, 1, vcc", in,
          [](lane_in i) { return lane_out{i.b - i.a, i.a > i.b ? 1u : 0u}; });
    // Carry-in from v4's low bit.
    const std::string cin = "v_and_b32 v8, 1, v4\nv_cmp_ne_u32_e64 s[6:7], 0, v8\n";
    check(cin + "v_addc_co_u32_e64 v6, s[8:9], v2, v3, s[6:7]\nv_cndmask_b32_e64 v7, 0, 1, s[8:9]", in, [](lane_in i) {
      const u64 r = u64(i.a) + i.b + (i.c & 1);
      return lane_out{std::uint32_t(r), std::uint32_t(r >> 32)};
    });
    check(cin + "s_mov_b64 vcc, s[6:7]\nv_subb_co_u32_e32 v6, vcc, v2, v3, vcc\nv_cndmask_b32_e64 v7, 0, 1, vcc", in,
          [](lane_in i) {
            const u64 r = u64(i.a) - i.b - (i.c & 1);
            return lane_out{std::uint32_t(r), (r >> 32) ? 1u : 0u};
          });
    check(cin + "v_subbrev_co_u32_e64 v6, s[8:9], v2, v3, s[6:7]\nv_cndmask_b32_e64 v7, 0, 1, s[8:9]", in, [](lane_in i) {
      const u64 r = u64(i.b) - i.a - (i.c & 1);
      return lane_out{std::uint32_t(r), (r >> 32) ? 1u : 0u};
    });
    check("v_mad_u64_u32 v[6:7], s[8:9], v2, v3, v[4:5]", in, [](lane_in i) {
      const u64 r = u64(i.a) * i.b + (u64(i.d) << 32 | i.c);
      return lane_out{std::uint32_t(r), std::uint32_t(r >> 32)};
    });  }
  g_mcpu = "gfx942";
}

TEST_CASE("gfx942/gfx90a f64 on edge values") {
  for (const char* t : {"gfx942", "gfx90a"}) {
    g_mcpu = t;
    const std::vector<double> dv = {0.0, -0.0, 1.0, -1.5, 0.1, 1e300, -1e300, 4.9e-324, 2.2e-308, 3.0e9, -3.0e9,
                                    std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(),
                                    std::numeric_limits<double>::quiet_NaN(), 2147483647.5, -2147483648.75, 0.49999999999999994};
    std::vector<lane_in> in(64);
    for (unsigned l = 0; l < 64; ++l) {
      const std::uint64_t a = std::bit_cast<std::uint64_t>(dv[l % dv.size()]), b = std::bit_cast<std::uint64_t>(dv[(l * 7 + 3) % dv.size()]);
      in[l] = {std::uint32_t(a), std::uint32_t(a >> 32), std::uint32_t(b), std::uint32_t(b >> 32)};
    }
    auto A = [](lane_in i) { return std::bit_cast<double>(std::uint64_t(i.b) << 32 | i.a); };
    auto B = [](lane_in i) { return std::bit_cast<double>(std::uint64_t(i.d) << 32 | i.c); };
    auto D = [](double x) { const auto v = std::bit_cast<std::uint64_t>(x); return lane_out{std::uint32_t(v), std::uint32_t(v >> 32)}; };
    check_f64("v_add_f64 v[6:7], v[2:3], v[4:5]", in, [&](lane_in i) { return D(A(i) + B(i)); });
    check_f64("v_mul_f64 v[6:7], v[2:3], -v[4:5]", in, [&](lane_in i) { return D(A(i) * -B(i)); });
    check_f64("v_fma_f64 v[6:7], v[2:3], v[4:5], v[2:3]", in, [&](lane_in i) { return D(std::fma(A(i), B(i), A(i))); });
    check_f64("v_floor_f64 v[6:7], v[2:3]", in, [&](lane_in i) { return D(std::floor(A(i))); });
    check_f64("v_trunc_f64 v[6:7], v[2:3]", in, [&](lane_in i) { return D(std::trunc(A(i))); });
    check_f64("v_ldexp_f64 v[6:7], v[2:3], 3", in, [&](lane_in i) { return D(std::ldexp(A(i), 3)); });
    // Saturating conversions: NaN → 0, out-of-range → INT_MIN/INT_MAX.
    check("v_cvt_i32_f64 v6, v[2:3]", in, [&](lane_in i) {
      const double x = A(i);
      const std::int32_t r = std::isnan(x) ? 0 : x >= 2147483647.0 ? 2147483647 : x <= -2147483648.0 ? -2147483647 - 1 : std::int32_t(x);
      return lane_out{std::uint32_t(r), 0};
    });
    check_f64("v_cvt_f64_u32 v[6:7], v2", in, [&](lane_in i) { return D(double(i.a)); });  }
  g_mcpu = "gfx942";
}

TEST_CASE("gfx942/gfx90a f16: arithmetic, conversions, and the high half zeroed") {
  for (const char* t : {"gfx942", "gfx90a"}) {
    g_mcpu = t;
    const std::vector<std::uint32_t> hv = {0x0000, 0x8000, 0x3C00, 0xBC00, 0x3800, 0x7BFF /* max */, 0xFBFF, 0x0001 /* denormal */,
                                           0x83FF, 0x7C00 /* inf */, 0xFC00, 0x7E00 /* NaN */, 0x4248, 0x5640, 0x1234, 0x3555};
    std::vector<lane_in> in(64);
    for (unsigned l = 0; l < 64; ++l)
      in[l] = {0xDEAD0000u | hv[l % hv.size()], 0xBEEF0000u | hv[(l * 5 + 1) % hv.size()], hv[(l * 3 + 2) % hv.size()], u(floats[l % floats.size()])};
    auto H = [](_Float16 x) { return lane_out{h(x), 0}; };
    check_f16("v_mov_b32 v6, -1\nv_add_f16_e32 v6, v2, v3", in, [&](lane_in i) { return H(hf(i.a) + hf(i.b)); });
    check_f16("v_mov_b32 v6, -1\nv_mul_f16_e32 v6, v2, v3", in, [&](lane_in i) { return H(hf(i.a) * hf(i.b)); });
    check_f16("v_mov_b32 v6, -1\nv_fma_f16 v6, v2, v3, v4", in, [&](lane_in i) {
      // fma in f16: the exact product-sum rounded once (double holds it exactly for these inputs).
      return H(static_cast<_Float16>(std::fma(double(hf(i.a)), double(hf(i.b)), double(hf(i.c)))));
    });
    check_f16("v_cvt_f16_f32_e32 v6, v5", in, [&](lane_in i) { return H(static_cast<_Float16>(f(i.d))); });
    check_f32("v_cvt_f32_f16_e32 v6, v2", in, [&](lane_in i) { return lane_out{u(static_cast<float>(hf(i.a))), 0}; });  }
  g_mcpu = "gfx942";
}

TEST_CASE("gfx942 64-bit: v_lshl_add_u64 and v_mov_b64") {
  const auto in = lanes_from(ints);
  check("v_lshl_add_u64 v[6:7], v[2:3], 3, v[4:5]", in, [](lane_in i) {
    const std::uint64_t r = ((std::uint64_t(i.b) << 32 | i.a) << 3) + (std::uint64_t(i.d) << 32 | i.c);
    return lane_out{std::uint32_t(r), std::uint32_t(r >> 32)};
  });
  check("v_mov_b64 v[6:7], v[4:5]", in, [](lane_in i) { return lane_out{i.c, i.d}; });
}

TEST_CASE("gfx942/gfx90a packed f32 (VOP3P on register pairs): op_sel, op_sel_hi, neg_lo/neg_hi, clamp, v_pk_mov_b32") {
  // v[2:3] = (a, b), v[4:5] = (c, d); the result pair is v[6:7]. Dword 0 of the result takes
  // source i's dword op_sel[i], dword 1 its dword op_sel_hi[i] (LLVM's default op_sel_hi is 1).
  for (const char* t : {"gfx942", "gfx90a"}) {
    g_mcpu = t;
    const auto in = lanes_from(floats);
    auto F2 = [](float x, float y) { return lane_out{u(x), u(y)}; };
    check_f32("v_pk_add_f32 v[6:7], v[2:3], v[4:5]", in, [&](lane_in i) { return F2(f(i.a) + f(i.c), f(i.b) + f(i.d)); });
    check_f32("v_pk_mul_f32 v[6:7], v[2:3], v[4:5] op_sel:[1,0] op_sel_hi:[0,1]", in,
              [&](lane_in i) { return F2(f(i.b) * f(i.c), f(i.a) * f(i.d)); });
    check_f32("v_pk_fma_f32 v[6:7], v[2:3], v[4:5], v[2:3] neg_lo:[1,0,0] neg_hi:[0,0,1]", in,
              [&](lane_in i) { return F2(std::fma(-f(i.a), f(i.c), f(i.a)), std::fma(f(i.b), f(i.d), -f(i.b))); });
    check_f32("v_pk_add_f32 v[6:7], v[2:3], v[4:5] clamp", in, [&](lane_in i) {
      auto cl = [](float x) { return std::isnan(x) ? 0.0f : std::fmin(std::fmax(x, 0.0f), 1.0f); };
      return F2(cl(f(i.a) + f(i.c)), cl(f(i.b) + f(i.d)));
    });
    check_f32("v_pk_mul_f32 v[6:7], v[2:3], 2.0 op_sel_hi:[1,0]", in, [&](lane_in i) { return F2(f(i.a) * 2.0f, f(i.b) * 2.0f); });
    check("v_pk_mov_b32 v[6:7], v[2:3], v[4:5] op_sel:[1,0]", in, [](lane_in i) { return lane_out{i.b, i.c}; });
    check("v_pk_mov_b32 v[6:7], v[2:3], v[4:5] op_sel:[0,1]", in, [](lane_in i) { return lane_out{i.a, i.d}; });
  }
  g_mcpu = "gfx942";
}

TEST_CASE("gfx942/gfx90a ds_bpermute_b32 and ds_permute_b32 across the wave64, lanes off, no LDS") {
  // v2 = address (junk above bit 7, unaligned low bits), v3 = data; EXEC 0xF0F0FFFF7FFFFFFE
  // during the permute; the CDNA3 guide's pseudocode written out: bpermute reads lane
  // (addr + offset) / 4 % 64 (0 if that lane is off), permute writes there (highest sender wins).
  std::vector<lane_in> in(64);
  for (std::uint32_t l = 0; l < 64; ++l) {
    const std::uint32_t lane = (l * 37 + 11) % 64;  // distinct lanes for l < 32, pairs colliding above
    in[l] = {(l < 32 ? lane : lane & 0x3Eu) * 4 + (l % 3) + (l << 9), 0x1000u + l * 3, 0, 0};
  }
  const std::uint64_t exec = 0xF0F0FFFF7FFFFFFEull;
  const char* pre = "v_mov_b32 v6, 0x5555\ns_mov_b32 exec_lo, 0x7ffffffe\ns_mov_b32 exec_hi, 0xf0f0ffff\n";
  auto lane_of = [&](std::uint32_t l, std::uint32_t off) { return ((in[l].a + off) / 4) % 64; };
  for (const char* t : {"gfx942", "gfx90a"}) {
    g_mcpu = t;
    CAPTURE(std::string(t));
    const std::vector<lane_out> bp = run(std::string(pre) + "ds_bpermute_b32 v6, v2, v3 offset:12\ns_mov_b64 exec, -1", in);
    const std::vector<lane_out> fp = run(std::string(pre) + "ds_permute_b32 v6, v2, v3 offset:4\ns_mov_b64 exec, -1", in);
    std::uint32_t sent[64] = {};
    for (std::uint32_t l = 0; l < 64; ++l)
      if ((exec >> l) & 1) sent[lane_of(l, 4)] = in[l].b;  // in lane order: the highest sender wins
    int bad = 0;
    for (std::uint32_t l = 0; l < 64; ++l) {
      const bool on = (exec >> l) & 1;
      const std::uint32_t src = lane_of(l, 12);
      const std::uint32_t want_b = !on ? 0x5555u : (exec >> src) & 1 ? in[src].b : 0u, want_p = on ? sent[l] : 0x5555u;
      if ((bp[l].x != want_b || fp[l].x != want_p) && bad++ < 4)
        FAIL_CHECK("lane " << l << ": bpermute 0x" << std::hex << bp[l].x << " (want 0x" << want_b << "), permute 0x" << fp[l].x
                           << " (want 0x" << want_p << ")");
    }
    CHECK(bad == 0);
  }
  g_mcpu = "gfx942";
}

TEST_CASE("gfx942/gfx90a DPP: every dpp_ctrl family, row/bank masks, bound_ctrl, inactive source lanes, src modifiers") {
  // v2 = a, v3 = b per lane; EXEC has lanes off during the DPP instruction; v6 starts as 0x5555
  // (lanes not written keep it). Expected values: the DPP lane rules written out here (source
  // lane per control; row = lane / 16, bank = (lane / 4) % 4; an out-of-range or inactive
  // source reads 0 with bound_ctrl, else the lane is not written).
  std::vector<lane_in> in(64);
  for (std::uint32_t l = 0; l < 64; ++l) in[l] = {u(float(l) * 1.25f - 20.5f), u(float(l % 5) + 0.75f), 0, 0};
  const std::uint64_t exec = 0xFFFFFFEF7FFFFFFEull;  // lanes 0, 31 and 36 off
  const std::string pre = "v_mov_b32 v6, 0x5555\ns_mov_b32 exec_lo, 0x7ffffffe\ns_mov_b32 exec_hi, 0xffffffef\n";
  struct dcase {
    const char* text;  // the DPP modifiers
    std::function<int(int)> src;
    unsigned row_mask, bank_mask;
    bool bound;
  };
  const std::vector<dcase> cases = {
      {"quad_perm:[3,0,2,1]", [](int l) { const int q[4] = {3, 0, 2, 1}; return (l & ~3) | q[l & 3]; }, 15, 15, false},
      {"row_shl:3", [](int l) { return (l & 15) + 3 <= 15 ? l + 3 : -1; }, 15, 15, false},
      {"row_shl:3 bound_ctrl:0", [](int l) { return (l & 15) + 3 <= 15 ? l + 3 : -1; }, 15, 15, true},
      {"row_shr:5 bound_ctrl:0", [](int l) { return (l & 15) >= 5 ? l - 5 : -1; }, 15, 15, true},
      {"row_ror:7", [](int l) { return (l & ~15) | ((l - 7) & 15); }, 15, 15, false},
      {"wave_shl:1 bound_ctrl:0", [](int l) { return l < 63 ? l + 1 : -1; }, 15, 15, true},
      {"wave_rol:1", [](int l) { return (l + 1) & 63; }, 15, 15, false},
      {"wave_shr:1", [](int l) { return l > 0 ? l - 1 : -1; }, 15, 15, false},
      {"wave_ror:1 bound_ctrl:0", [](int l) { return (l - 1) & 63; }, 15, 15, true},
      {"row_mirror", [](int l) { return (l & ~15) | (15 - (l & 15)); }, 15, 15, false},
      {"row_half_mirror", [](int l) { return (l & ~7) | (7 - (l & 7)); }, 15, 15, false},
      {"row_bcast:15 row_mask:0xa", [](int l) { return l >= 16 ? (l & ~15) - 1 : -1; }, 0xA, 15, false},
      {"row_bcast:31 row_mask:0xc bound_ctrl:0", [](int l) { return l >= 32 ? 31 : -1; }, 0xC, 15, true},
      {"quad_perm:[1,1,1,1] row_mask:0x5 bank_mask:0x6", [](int l) { return (l & ~3) | 1; }, 0x5, 0x6, false},
  };
  for (const char* t : {"gfx942", "gfx90a"}) {
    g_mcpu = t;
    CAPTURE(std::string(t));
    for (const dcase& c : cases) {
      // v_add_u32: integer sum of the moved a and this lane's b; v_mov_b32 and a float op with
      // neg/abs on the moved source check the modifiers.
      const std::string ops[3] = {std::string("v_add_u32_dpp v6, v2, v3 ") + c.text, std::string("v_mov_b32_dpp v6, v2 ") + c.text,
                                  std::string("v_sub_f32_dpp v6, -|v2|, v3 ") + c.text};
      for (int k = 0; k < 3; ++k) {
        CAPTURE(ops[k]);
        const std::vector<lane_out> out = run(pre + ops[k] + "\ns_mov_b64 exec, -1", in);
        int bad = 0;
        for (int l = 0; l < 64; ++l) {
          const bool on = (exec >> l) & 1, row_on = (c.row_mask >> (l >> 4)) & 1, bank_on = (c.bank_mask >> ((l >> 2) & 3)) & 1;
          std::uint32_t want = 0x5555u;
          if (on && row_on && bank_on) {
            const int s = c.src(l);
            const bool valid = s >= 0 && s < 64 && ((exec >> s) & 1);
            if (valid || c.bound) {
              const std::uint32_t a = valid ? in[s].a : 0u;
              if (k == 0) want = a + in[l].b;
              else if (k == 1) want = a;
              else want = u(-std::fabs(f(a)) - f(in[l].b));
            }
          }
          if (out[l].x != want && bad++ < 4)
            FAIL_CHECK("lane " << l << ": got 0x" << std::hex << out[l].x << ", want 0x" << want);
        }
        CHECK(bad == 0);
      }
    }
  }
  g_mcpu = "gfx942";
}

}  // namespace AQ_UNITY_ID
