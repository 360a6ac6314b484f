// aqueduct/emu/isa/exec_vector.hpp — vector ALU semantics (VOP1/VOP2/VOP3 and VOPC, VOPD), for
// every generation.
//
// Layer: emu. Definitions of interpreter members (emu/isa/interpreter.hpp). One switch per
// instruction on the generation-neutral op, then a tight loop over the active lanes; sources
// are resolved once per instruction (a VGPR column or one value for all lanes, abs/neg applied
// as bit operations). Inactive lanes are never written; a compare or carry-out mask has 0 for
// inactive lanes (RDNA3 ISA guide §6). Float results go through VOP3 omod/clamp when set.
#pragma once

#include <aqueduct/emu/isa/fp.hpp>
#include <aqueduct/emu/isa/interpreter.hpp>

namespace aqueduct::emu::isa {

namespace detail {
using fp::fcmp;  // VOPC float conditions (emu/isa/fp.hpp)
// Integers: F LT EQ LE GT NE GE T.
template <class T>
inline bool icmp(unsigned c, T a, T b) noexcept {
  switch (c & 7) {
    case 0: return false;
    case 1: return a < b;
    case 2: return a == b;
    case 3: return a <= b;
    case 4: return a > b;
    case 5: return a != b;
    case 6: return a >= b;
    default: return true;
  }
}
inline std::uint32_t bfe(std::uint32_t x, std::uint32_t off, std::uint32_t width, bool sign) noexcept {
  off &= 31, width &= 31;
  if (width == 0) return 0;
  std::uint32_t r = (x >> off) & ((1u << width) - 1u);
  if (sign && ((r >> (width - 1)) & 1)) r |= ~0u << width;
  return r;
}
inline std::uint8_t perm_byte(std::uint64_t data, std::uint32_t sel) noexcept {
  sel &= 0xFF;
  if (sel >= 13) return 0xFF;
  if (sel == 12) return 0;
  if (sel >= 8) return ((data >> ((sel - 8) * 16 + 15)) & 1) ? 0xFF : 0;  // sign of byte 1/3/5/7
  return static_cast<std::uint8_t>(data >> (sel * 8));
}
}  // namespace detail

// VOPC (and its VOP3 form): a lane mask to VCC / an SGPR, or to EXEC for v_cmpx.
inline void interpreter::exec_vopc(wave& w, const insn& d) {
  using namespace detail;
  const std::uint64_t ex = w.exec();
  std::uint64_t r = 0;
  std::uint32_t st[2][2];
  const op_info& in = info(d.o);
  const unsigned c = d.aux;
  auto bit = [&](unsigned l, bool t) { r |= std::uint64_t(t) << l; };
  if (in.src[0] == kind::f16 || in.src[0] == kind::b16) {
    const src32 A = vsrc16(w, d, 0, st[0][0], in.src[0]), B = vsrc16(w, d, 1, st[1][0], in.src[1]);
    auto h = [](std::uint32_t x) { return static_cast<float>(std::bit_cast<_Float16>(static_cast<std::uint16_t>(x))); };
    switch (d.o) {
      case op::v_cmp_f16: each_lane(ex, [&](unsigned l) { bit(l, fcmp(c, h(A(l)), h(B(l)))); }); break;
      case op::v_cmp_i16: each_lane(ex, [&](unsigned l) { bit(l, icmp(c, std::int16_t(A(l)), std::int16_t(B(l)))); }); break;
      case op::v_cmp_u16: each_lane(ex, [&](unsigned l) { bit(l, icmp(c, std::uint16_t(A(l)), std::uint16_t(B(l)))); }); break;
      case op::v_cmp_class_f16: {
        auto cls = [](std::uint16_t x, std::uint32_t mask) {  // f16 → f32 keeps the class (and sNaN's quiet bit clear)
          const bool nan = (x & 0x7C00) == 0x7C00 && (x & 0x3FF);
          if (nan) return ((mask >> ((x & 0x200) ? 1 : 0)) & 1) != 0;
          return fp::has_class(static_cast<float>(std::bit_cast<_Float16>(x)), mask);
        };
        each_lane(ex, [&](unsigned l) { bit(l, cls(static_cast<std::uint16_t>(A(l)), B(l))); });
        break;
      }
      default: unsupported(w, d);
    }
  } else if (dwords_of(in.src[0]) == 2) {
    const src64 A = vsrc64(w, d, 0, st[0], in.src[0]);
    if (d.o == op::v_cmp_class_f64) {
      const src32 B = vsrc(w, d, 1, st[1][0]);
      each_lane(ex, [&](unsigned l) { bit(l, fp::has_class(f64(A(l)), B(l))); });
    } else {
      const src64 B = vsrc64(w, d, 1, st[1], in.src[1]);
      switch (d.o) {
        case op::v_cmp_f64: each_lane(ex, [&](unsigned l) { bit(l, fcmp(c, f64(A(l)), f64(B(l)))); }); break;
        case op::v_cmp_i64: each_lane(ex, [&](unsigned l) { bit(l, icmp(c, std::int64_t(A(l)), std::int64_t(B(l)))); }); break;
        case op::v_cmp_u64: each_lane(ex, [&](unsigned l) { bit(l, icmp(c, A(l), B(l))); }); break;
        default: unsupported(w, d);
      }
    }
  } else {
    const src32 A = vsrc(w, d, 0, st[0][0], in.src[0]), B = vsrc(w, d, 1, st[1][0], in.src[1]);
    switch (d.o) {
      case op::v_cmp_f32: each_lane(ex, [&](unsigned l) { bit(l, fcmp(c, f32(A(l)), f32(B(l)))); }); break;
      case op::v_cmp_i32: each_lane(ex, [&](unsigned l) { bit(l, icmp(c, std::int32_t(A(l)), std::int32_t(B(l)))); }); break;
      case op::v_cmp_u32: each_lane(ex, [&](unsigned l) { bit(l, icmp(c, A(l), B(l))); }); break;
      case op::v_cmp_class_f32: each_lane(ex, [&](unsigned l) { bit(l, fp::has_class(f32(A(l)), B(l))); }); break;
      default: unsupported(w, d);
    }
  }
  if (!d.cmpx || t_->cmpx_writes_sdst) w.set_mask(d.e == enc::vop3 ? d.dst : op_vcc_lo, r);
  if (d.cmpx) w.set_mask(op_exec_lo, r);
}

inline void interpreter::exec_valu(wave& w, const insn& d) {
  using namespace detail;
  if (d.e == enc::vop3 && is_compare(d.o)) return exec_vopc(w, d);
  const std::uint64_t ex = w.exec();
  const op_info& in = info(d.o);
  const bool e64 = d.e == enc::vop3;
  const bool ieee = (params_.rsrc1 >> 23) & 1;  // rsrc1.ENABLE_IEEE_MODE (gfx6–11)
  // Cross-lane and scalar-destination operations first.
  switch (d.o) {
    case op::v_nop: return;
    case op::v_readfirstlane_b32: {
      const unsigned l = ex ? static_cast<unsigned>(std::countr_zero(ex)) : 0;
      std::uint32_t st;
      sset(w, d.dst, vsrc(w, d, 0, st)(l));
      return;
    }
    case op::v_readlane_b32: {
      std::uint32_t st;
      sset(w, d.dst, vsrc(w, d, 0, st)(sget(w, d, d.src[1]) & (w.lanes - 1)));
      return;
    }
    case op::v_writelane_b32:  // ignores EXEC
      vcol(w, d.dst)[sget(w, d, d.src[1]) & (w.lanes - 1)] = sget(w, d, d.src[0]);
      return;
    default: break;
  }
  const auto is16 = [](kind k) { return k == kind::f16 || k == kind::b16; };
  if (is16(in.dst) || is16(in.src[0]) || d.o == op::v_cvt_pk_rtz_f16_f32) return exec_valu16(w, d, ex);
  if (dwords_of(in.dst) == 2 || dwords_of(in.src[0]) == 2 || d.o == op::v_cmp_class_f64) {
    if (exec_valu_f64(w, d, ex)) return;
    unsupported(w, d);
  }
  // VOP3 clamp on an unsigned add/subtract saturates (AMD Vega and RDNA3 ISA guides, VOP3 CLAMP:
  // integer results clamp to the representable range): clang-19 emits it for usub.sat, e.g. a
  // grid-stride loop's trip count on gfx942 (`v_sub_u32_e64 v1, s2, v0 clamp`).
  const bool sat = e64 && d.clamp && (d.o == op::v_add_nc_u32 || d.o == op::v_sub_nc_u32 || d.o == op::v_subrev_nc_u32);
  if (e64 && d.clamp && !is_float(in.dst) && !sat) unsupported(w, d, "VOP3 clamp on an integer operation not modelled");
  std::uint32_t st[3];
  const src32 A = in.src[0] != kind::none ? vsrc(w, d, 0, st[0], in.src[0]) : src32{st, 0, 0, 0};
  const src32 B = in.src[1] != kind::none && in.src[1] != kind::mask ? vsrc(w, d, 1, st[1], in.src[1]) : src32{st, 0, 0, 0};
  const src32 C = in.src[2] != kind::none && in.src[2] != kind::mask ? vsrc(w, d, 2, st[2], in.src[2]) : src32{st, 0, 0, 0};
  // Carry-in / select mask: VCC for the 32-bit encodings, src2's SGPRs for VOP3.
  std::uint64_t cin = 0;
  if (in.src[2] == kind::mask)
    cin = e64 ? (d.src[2] < 128 ? w.mask(d.src[2]) : (sget(w, d, d.src[2]) ? ~0ull : 0ull)) : w.vcc();
  std::uint32_t* D = vcol(w, d.dst);
  const bool mods = e64 && (d.omod != 0 || d.clamp);
  const float omul = d.omod == 1 ? 2.0f : d.omod == 2 ? 4.0f : d.omod == 3 ? 0.5f : 1.0f;
  auto fo = [&](float x) -> std::uint32_t {
    if (mods) {
      x *= omul;
      if (d.clamp) x = std::isnan(x) ? 0.0f : std::fmin(std::fmax(x, 0.0f), 1.0f);  // DX10 clamp: NaN → 0
    }
    return u32(x);
  };
  auto U1 = [&](auto f) { each_lane(ex, [&](unsigned l) { D[l] = f(A(l)); }); };
  auto U2 = [&](auto f) { each_lane(ex, [&](unsigned l) { D[l] = f(A(l), B(l)); }); };
  auto U3 = [&](auto f) { each_lane(ex, [&](unsigned l) { D[l] = f(A(l), B(l), C(l)); }); };
  auto F1 = [&](auto f) { each_lane(ex, [&](unsigned l) { D[l] = fo(f(f32(A(l)))); }); };
  auto F2 = [&](auto f) { each_lane(ex, [&](unsigned l) { D[l] = fo(f(f32(A(l)), f32(B(l)))); }); };
  auto F3 = [&](auto f) { each_lane(ex, [&](unsigned l) { D[l] = fo(f(f32(A(l)), f32(B(l)), f32(C(l)))); }); };
  std::uint64_t carry = 0;
  bool writes_carry = false;
  auto carry_op = [&](auto f) {  // f(lane) -> (result, carry bit)
    writes_carry = true;
    each_lane(ex, [&](unsigned l) {
      const std::uint64_t r = f(l);
      D[l] = static_cast<std::uint32_t>(r);
      carry |= ((r >> 32) & 1) << l;
    });
  };
  using i32 = std::int32_t;
  using u64 = std::uint64_t;
  switch (d.o) {
    // ---- moves, conversions, rounding
    case op::v_mov_b32: U1([](std::uint32_t a) { return a; }); break;
    case op::v_cvt_f32_i32: each_lane(ex, [&](unsigned l) { D[l] = fo(static_cast<float>(i32(A(l)))); }); break;
    case op::v_cvt_f32_u32: each_lane(ex, [&](unsigned l) { D[l] = fo(static_cast<float>(A(l))); }); break;
    case op::v_cvt_u32_f32: U1([](std::uint32_t a) { return fp::to_int<std::uint32_t>(f32(a)); }); break;
    case op::v_cvt_i32_f32: U1([](std::uint32_t a) { return static_cast<std::uint32_t>(fp::to_int<i32>(f32(a))); }); break;
    case op::v_cvt_floor_i32_f32: U1([](std::uint32_t a) { return static_cast<std::uint32_t>(fp::to_int<i32>(std::floor(f32(a)))); }); break;
    case op::v_cvt_nearest_i32_f32: U1([](std::uint32_t a) { return static_cast<std::uint32_t>(fp::to_int<i32>(std::floor(f32(a) + 0.5f))); }); break;
    case op::v_cvt_f32_ubyte0: case op::v_cvt_f32_ubyte1: case op::v_cvt_f32_ubyte2: case op::v_cvt_f32_ubyte3: {
      const unsigned sh = 8 * (static_cast<unsigned>(d.o) - static_cast<unsigned>(op::v_cvt_f32_ubyte0));
      each_lane(ex, [&](unsigned l) { D[l] = fo(static_cast<float>((A(l) >> sh) & 0xFF)); });
      break;
    }
    case op::v_fract_f32: F1([](float x) { return std::isinf(x) ? std::numeric_limits<float>::quiet_NaN() : std::fmin(x - std::floor(x), 0x1.fffffep-1f); }); break;
    case op::v_trunc_f32: F1([](float x) { return std::trunc(x); }); break;
    case op::v_ceil_f32: F1([](float x) { return std::ceil(x); }); break;
    case op::v_rndne_f32: F1([](float x) { return std::nearbyint(x); }); break;
    case op::v_floor_f32: F1([](float x) { return std::floor(x); }); break;
    case op::v_exp_f32: F1([](float x) { return std::exp2(x); }); break;
    case op::v_log_f32: F1([](float x) { return std::log2(x); }); break;
    case op::v_rcp_f32: case op::v_rcp_iflag_f32: F1([](float x) { return 1.0f / x; }); break;
    case op::v_rsq_f32: F1([](float x) { return 1.0f / std::sqrt(x); }); break;
    case op::v_sqrt_f32: F1([](float x) { return std::sqrt(x); }); break;
    case op::v_sin_f32: F1([](float x) { return static_cast<float>(std::sin(double(x) * 6.283185307179586)); }); break;
    case op::v_cos_f32: F1([](float x) { return static_cast<float>(std::cos(double(x) * 6.283185307179586)); }); break;
    case op::v_frexp_mant_f32: F1([](float x) { return fp::frexp_mant(x); }); break;
    case op::v_frexp_exp_i32_f32: U1([](std::uint32_t a) { return static_cast<std::uint32_t>(fp::frexp_exp(f32(a))); }); break;
    case op::v_not_b32: U1([](std::uint32_t a) { return ~a; }); break;
    case op::v_bfrev_b32: U1([](std::uint32_t a) { return brev32(a); }); break;
    case op::v_clz_i32_u32: U1([](std::uint32_t a) { return a == 0 ? ~0u : static_cast<std::uint32_t>(std::countl_zero(a)); }); break;
    case op::v_ctz_i32_b32: U1([](std::uint32_t a) { return a == 0 ? ~0u : static_cast<std::uint32_t>(std::countr_zero(a)); }); break;
    case op::v_cls_i32: U1([](std::uint32_t a) { return cls32(a); }); break;
    // ---- two-operand float
    case op::v_add_f32: F2([](float a, float b) { return a + b; }); break;
    case op::v_sub_f32: F2([](float a, float b) { return a - b; }); break;
    case op::v_subrev_f32: F2([](float a, float b) { return b - a; }); break;
    case op::v_mul_f32: F2([](float a, float b) { return a * b; }); break;
    case op::v_min_f32: F2([&](float a, float b) { return fp::vmin(a, b, ieee); }); break;
    case op::v_max_f32: F2([&](float a, float b) { return fp::vmax(a, b, ieee); }); break;
    case op::v_min_num_f32: F2([](float a, float b) { return fp::vmin_num(a, b); }); break;
    case op::v_max_num_f32: F2([](float a, float b) { return fp::vmax_num(a, b); }); break;
    case op::v_ldexp_f32: each_lane(ex, [&](unsigned l) { D[l] = fo(std::ldexp(f32(A(l)), std::clamp(i32(B(l)), -512, 512))); }); break;
    case op::v_fmac_f32: each_lane(ex, [&](unsigned l) { D[l] = fo(std::fma(f32(A(l)), f32(B(l)), f32(D[l]))); }); break;
    case op::v_fmamk_f32: F2([&](float a, float b) { return std::fma(a, f32(d.literal), b); }); break;
    case op::v_fmaak_f32: F2([&](float a, float b) { return std::fma(a, b, f32(d.literal)); }); break;
    // ---- two-operand integer
    case op::v_cndmask_b32: each_lane(ex, [&](unsigned l) { D[l] = ((cin >> l) & 1) ? B(l) : A(l); }); break;
    case op::v_mul_i32_i24: U2([](std::uint32_t a, std::uint32_t b) { return static_cast<std::uint32_t>(i32(a << 8) >> 8) * static_cast<std::uint32_t>(i32(b << 8) >> 8); }); break;
    case op::v_mul_hi_i32_i24: U2([](std::uint32_t a, std::uint32_t b) { return static_cast<std::uint32_t>((std::int64_t(i32(a << 8) >> 8) * (i32(b << 8) >> 8)) >> 32); }); break;
    case op::v_mul_u32_u24: U2([](std::uint32_t a, std::uint32_t b) { return (a & 0xFFFFFF) * (b & 0xFFFFFF); }); break;
    case op::v_mul_hi_u32_u24: U2([](std::uint32_t a, std::uint32_t b) { return static_cast<std::uint32_t>((u64(a & 0xFFFFFF) * (b & 0xFFFFFF)) >> 32); }); break;
    case op::v_min_i32: U2([](std::uint32_t a, std::uint32_t b) { return i32(a) < i32(b) ? a : b; }); break;
    case op::v_max_i32: U2([](std::uint32_t a, std::uint32_t b) { return i32(a) > i32(b) ? a : b; }); break;
    case op::v_min_u32: U2([](std::uint32_t a, std::uint32_t b) { return std::min(a, b); }); break;
    case op::v_max_u32: U2([](std::uint32_t a, std::uint32_t b) { return std::max(a, b); }); break;
    case op::v_lshlrev_b32: U2([](std::uint32_t a, std::uint32_t b) { return b << (a & 31); }); break;
    case op::v_lshrrev_b32: U2([](std::uint32_t a, std::uint32_t b) { return b >> (a & 31); }); break;
    case op::v_ashrrev_i32: U2([](std::uint32_t a, std::uint32_t b) { return static_cast<std::uint32_t>(i32(b) >> (a & 31)); }); break;
    case op::v_and_b32: U2([](std::uint32_t a, std::uint32_t b) { return a & b; }); break;
    case op::v_or_b32: U2([](std::uint32_t a, std::uint32_t b) { return a | b; }); break;
    case op::v_xor_b32: U2([](std::uint32_t a, std::uint32_t b) { return a ^ b; }); break;
    case op::v_xnor_b32: U2([](std::uint32_t a, std::uint32_t b) { return ~(a ^ b); }); break;
    case op::v_add_nc_u32:
      if (sat) U2([](std::uint32_t a, std::uint32_t b) { return a > ~b ? ~0u : a + b; });
      else U2([](std::uint32_t a, std::uint32_t b) { return a + b; });
      break;
    case op::v_sub_nc_u32:
      if (sat) U2([](std::uint32_t a, std::uint32_t b) { return a < b ? 0u : a - b; });
      else U2([](std::uint32_t a, std::uint32_t b) { return a - b; });
      break;
    case op::v_subrev_nc_u32:
      if (sat) U2([](std::uint32_t a, std::uint32_t b) { return b < a ? 0u : b - a; });
      else U2([](std::uint32_t a, std::uint32_t b) { return b - a; });
      break;
    case op::v_add_nc_i32: U2([](std::uint32_t a, std::uint32_t b) { return a + b; }); break;
    case op::v_sub_nc_i32: U2([](std::uint32_t a, std::uint32_t b) { return a - b; }); break;
    case op::v_add_co_u32: carry_op([&](unsigned l) { return u64(A(l)) + B(l); }); break;
    case op::v_sub_co_u32: carry_op([&](unsigned l) { return u64(A(l)) - B(l); }); break;
    case op::v_subrev_co_u32: carry_op([&](unsigned l) { return u64(B(l)) - A(l); }); break;
    case op::v_add_co_ci_u32: carry_op([&](unsigned l) { return u64(A(l)) + B(l) + ((cin >> l) & 1); }); break;
    case op::v_sub_co_ci_u32: carry_op([&](unsigned l) { return u64(A(l)) - B(l) - ((cin >> l) & 1); }); break;
    case op::v_subrev_co_ci_u32: carry_op([&](unsigned l) { return u64(B(l)) - A(l) - ((cin >> l) & 1); }); break;
    case op::v_bcnt_u32_b32: U2([](std::uint32_t a, std::uint32_t b) { return static_cast<std::uint32_t>(std::popcount(a)) + b; }); break;
    case op::v_mbcnt_lo_u32_b32:
      each_lane(ex, [&](unsigned l) { D[l] = static_cast<std::uint32_t>(std::popcount(A(l) & (l >= 32 ? ~0u : (1u << l) - 1u))) + B(l); });
      break;
    case op::v_mbcnt_hi_u32_b32:
      each_lane(ex, [&](unsigned l) { D[l] = static_cast<std::uint32_t>(std::popcount(A(l) & (l < 32 ? 0u : (1u << (l - 32)) - 1u))) + B(l); });
      break;
    case op::v_mul_lo_u32: U2([](std::uint32_t a, std::uint32_t b) { return a * b; }); break;
    case op::v_mul_hi_u32: U2([](std::uint32_t a, std::uint32_t b) { return static_cast<std::uint32_t>((u64(a) * b) >> 32); }); break;
    case op::v_mul_hi_i32: U2([](std::uint32_t a, std::uint32_t b) { return static_cast<std::uint32_t>(static_cast<u64>(std::int64_t(i32(a)) * i32(b)) >> 32); }); break;
    case op::v_bfm_b32: U2([](std::uint32_t a, std::uint32_t b) { return ((1u << (a & 31)) - 1u) << (b & 31); }); break;
    // ---- three-operand
    case op::v_fma_f32: F3([](float a, float b, float c) { return std::fma(a, b, c); }); break;
    case op::v_min3_f32: F3([&](float a, float b, float c) { return fp::vmin(fp::vmin(a, b, ieee), c, ieee); }); break;
    case op::v_max3_f32: F3([&](float a, float b, float c) { return fp::vmax(fp::vmax(a, b, ieee), c, ieee); }); break;
    case op::v_med3_f32: F3([&](float a, float b, float c) { return fp::vmed3(a, b, c, ieee); }); break;
    case op::v_div_fixup_f32: F3([](float q, float den, float num) { return fp::div_fixup(q, den, num); }); break;
    case op::v_div_fmas_f32: {
      const std::uint64_t vcc = w.vcc();
      each_lane(ex, [&](unsigned l) {
        const float r = std::fma(f32(A(l)), f32(B(l)), f32(C(l)));
        D[l] = fo(((vcc >> l) & 1) ? std::ldexp(r, 32) : r);
      });
      break;
    }
    case op::v_div_scale_f32:
      writes_carry = true;
      each_lane(ex, [&](unsigned l) {
        bool v;
        D[l] = fo(fp::div_scale(f32(A(l)), f32(B(l)), f32(C(l)), v));
        carry |= std::uint64_t(v) << l;
      });
      break;
    case op::v_mad_u32_u24: U3([](std::uint32_t a, std::uint32_t b, std::uint32_t c) { return (a & 0xFFFFFF) * (b & 0xFFFFFF) + c; }); break;
    case op::v_mad_i32_i24: U3([](std::uint32_t a, std::uint32_t b, std::uint32_t c) { return static_cast<std::uint32_t>(i32(a << 8) >> 8) * static_cast<std::uint32_t>(i32(b << 8) >> 8) + c; }); break;
    case op::v_bfe_u32: U3([](std::uint32_t a, std::uint32_t b, std::uint32_t c) { return bfe(a, b, c, false); }); break;
    case op::v_bfe_i32: U3([](std::uint32_t a, std::uint32_t b, std::uint32_t c) { return bfe(a, b, c, true); }); break;
    case op::v_bfi_b32: U3([](std::uint32_t a, std::uint32_t b, std::uint32_t c) { return (a & b) | (~a & c); }); break;
    case op::v_alignbit_b32: U3([](std::uint32_t a, std::uint32_t b, std::uint32_t c) { return static_cast<std::uint32_t>(((u64(a) << 32) | b) >> (c & 31)); }); break;
    case op::v_alignbyte_b32: U3([](std::uint32_t a, std::uint32_t b, std::uint32_t c) { return static_cast<std::uint32_t>(((u64(a) << 32) | b) >> ((c & 3) * 8)); }); break;
    case op::v_min3_i32: U3([](std::uint32_t a, std::uint32_t b, std::uint32_t c) { return static_cast<std::uint32_t>(std::min({i32(a), i32(b), i32(c)})); }); break;
    case op::v_max3_i32: U3([](std::uint32_t a, std::uint32_t b, std::uint32_t c) { return static_cast<std::uint32_t>(std::max({i32(a), i32(b), i32(c)})); }); break;
    case op::v_med3_i32: U3([](std::uint32_t a, std::uint32_t b, std::uint32_t c) { return static_cast<std::uint32_t>(std::max(std::min(i32(a), i32(b)), std::min(std::max(i32(a), i32(b)), i32(c)))); }); break;
    case op::v_min3_u32: U3([](std::uint32_t a, std::uint32_t b, std::uint32_t c) { return std::min({a, b, c}); }); break;
    case op::v_max3_u32: U3([](std::uint32_t a, std::uint32_t b, std::uint32_t c) { return std::max({a, b, c}); }); break;
    case op::v_med3_u32: U3([](std::uint32_t a, std::uint32_t b, std::uint32_t c) { return std::max(std::min(a, b), std::min(std::max(a, b), c)); }); break;
    case op::v_xad_u32: U3([](std::uint32_t a, std::uint32_t b, std::uint32_t c) { return (a ^ b) + c; }); break;
    case op::v_lshl_add_u32: U3([](std::uint32_t a, std::uint32_t b, std::uint32_t c) { return (a << (b & 31)) + c; }); break;
    case op::v_add_lshl_u32: U3([](std::uint32_t a, std::uint32_t b, std::uint32_t c) { return (a + b) << (c & 31); }); break;
    case op::v_add3_u32: U3([](std::uint32_t a, std::uint32_t b, std::uint32_t c) { return a + b + c; }); break;
    case op::v_lshl_or_b32: U3([](std::uint32_t a, std::uint32_t b, std::uint32_t c) { return (a << (b & 31)) | c; }); break;
    case op::v_and_or_b32: U3([](std::uint32_t a, std::uint32_t b, std::uint32_t c) { return (a & b) | c; }); break;
    case op::v_or3_b32: U3([](std::uint32_t a, std::uint32_t b, std::uint32_t c) { return a | b | c; }); break;
    case op::v_xor3_b32: U3([](std::uint32_t a, std::uint32_t b, std::uint32_t c) { return a ^ b ^ c; }); break;
    case op::v_perm_b32:
      U3([](std::uint32_t a, std::uint32_t b, std::uint32_t c) {
        const u64 data = (u64(a) << 32) | b;
        std::uint32_t r = 0;
        for (unsigned i = 0; i < 4; ++i) r |= std::uint32_t(perm_byte(data, c >> (8 * i))) << (8 * i);
        return r;
      });
      break;
    default: unsupported(w, d);
  }
  if (writes_carry) w.set_mask(e64 ? d.sdst : op_vcc_lo, carry);
}

// Operations with a 64-bit destination or first source (f64 arithmetic, 64-bit shifts, mad64).
inline bool interpreter::exec_valu_f64(wave& w, const insn& d, std::uint64_t ex) {
  using namespace detail;
  const op_info& in = info(d.o);
  const bool e64 = d.e == enc::vop3;
  const bool ieee = (params_.rsrc1 >> 23) & 1;
  std::uint32_t st[3][2];
  auto s64 = [&](unsigned i) { return vsrc64(w, d, i, st[i], in.src[i]); };
  auto s32v = [&](unsigned i) { return vsrc(w, d, i, st[i][0], in.src[i]); };
  const bool mods = e64 && (d.omod != 0 || d.clamp);
  const double omul = d.omod == 1 ? 2.0 : d.omod == 2 ? 4.0 : d.omod == 3 ? 0.5 : 1.0;
  auto fo = [&](double x) -> std::uint64_t {
    if (mods) {
      x *= omul;
      if (d.clamp) x = std::isnan(x) ? 0.0 : std::fmin(std::fmax(x, 0.0), 1.0);
    }
    return u64(x);
  };
  if (e64 && d.clamp && !is_float(in.dst)) unsupported(w, d, "VOP3 clamp on an integer operation not modelled");
  // 32-bit results from 64-bit sources.
  if (dwords_of(in.dst) == 1) {
    std::uint32_t* D = vcol(w, d.dst);
    const src64 A = s64(0);
    switch (d.o) {
      case op::v_cvt_i32_f64: each_lane(ex, [&](unsigned l) { D[l] = static_cast<std::uint32_t>(fp::to_int<std::int32_t>(f64(A(l)))); }); return true;
      case op::v_cvt_u32_f64: each_lane(ex, [&](unsigned l) { D[l] = fp::to_int<std::uint32_t>(f64(A(l))); }); return true;
      case op::v_cvt_f32_f64: each_lane(ex, [&](unsigned l) { D[l] = u32(static_cast<float>(f64(A(l)))); }); return true;
      case op::v_frexp_exp_i32_f64: each_lane(ex, [&](unsigned l) { D[l] = static_cast<std::uint32_t>(fp::frexp_exp(f64(A(l)))); }); return true;
      default: return false;
    }
  }
  std::uint32_t* D = vcol(w, d.dst, 2);
  auto put = [&](unsigned l, std::uint64_t v) {
    D[l] = static_cast<std::uint32_t>(v);
    D[64 + l] = static_cast<std::uint32_t>(v >> 32);
  };
  std::uint64_t carry = 0;
  bool writes_carry = false;
  switch (d.o) {
    case op::v_cvt_f64_f32: { const src32 A = s32v(0); each_lane(ex, [&](unsigned l) { put(l, fo(double(f32(A(l))))); }); break; }
    case op::v_cvt_f64_i32: { const src32 A = s32v(0); each_lane(ex, [&](unsigned l) { put(l, fo(double(std::int32_t(A(l))))); }); break; }
    case op::v_cvt_f64_u32: { const src32 A = s32v(0); each_lane(ex, [&](unsigned l) { put(l, fo(double(A(l)))); }); break; }
    case op::v_lshlrev_b64: { const src32 A = s32v(0); const src64 B = s64(1); each_lane(ex, [&](unsigned l) { put(l, B(l) << (A(l) & 63)); }); break; }
    case op::v_lshrrev_b64: { const src32 A = s32v(0); const src64 B = s64(1); each_lane(ex, [&](unsigned l) { put(l, B(l) >> (A(l) & 63)); }); break; }
    case op::v_ashrrev_i64: { const src32 A = s32v(0); const src64 B = s64(1); each_lane(ex, [&](unsigned l) { put(l, static_cast<std::uint64_t>(std::int64_t(B(l)) >> (A(l) & 63))); }); break; }
    case op::v_mad_u64_u32: case op::v_mad_i64_i32: {
      const src32 A = s32v(0), B = s32v(1);
      const src64 C = s64(2);
      const bool sgn = d.o == op::v_mad_i64_i32;
      writes_carry = true;
      each_lane(ex, [&](unsigned l) {
        const std::uint64_t c = C(l);
        std::uint64_t r;
        bool ov;
        if (sgn) {  // the product fits in 64 bits; the carry-out is the signed overflow of the add
          const std::int64_t p = std::int64_t(std::int32_t(A(l))) * std::int32_t(B(l));
          std::int64_t sum;
          ov = __builtin_add_overflow(p, static_cast<std::int64_t>(c), &sum);
          r = static_cast<std::uint64_t>(sum);
        } else {
          r = std::uint64_t(A(l)) * B(l) + c;
          ov = r < c;
        }
        put(l, r);
        carry |= std::uint64_t(ov) << l;
      });
      break;
    }
    case op::v_ldexp_f64: { const src64 A = s64(0); const src32 B = s32v(1); each_lane(ex, [&](unsigned l) { put(l, fo(std::ldexp(f64(A(l)), std::clamp(std::int32_t(B(l)), -4096, 4096)))); }); break; }
    case op::v_trig_preop_f64: unsupported(w, d); break;
    case op::v_mov_b64: { const src64 A = s64(0); each_lane(ex, [&](unsigned l) { put(l, A(l)); }); break; }
    case op::v_lshl_add_u64: {  // CDNA3 ISA: D = (S0 << S1[2:0]) + S2
      const src64 A = s64(0), C = s64(2);
      const src32 B = s32v(1);
      each_lane(ex, [&](unsigned l) { put(l, (A(l) << (B(l) & 7)) + C(l)); });
      break;
    }
    default: {
      const src64 A = s64(0);
      auto F1 = [&](auto f) { each_lane(ex, [&](unsigned l) { put(l, fo(f(f64(A(l))))); }); };
      switch (d.o) {
        case op::v_fract_f64: F1([](double x) { return std::isinf(x) ? std::numeric_limits<double>::quiet_NaN() : std::fmin(x - std::floor(x), 0x1.fffffffffffffp-1); }); return true;
        case op::v_trunc_f64: F1([](double x) { return std::trunc(x); }); return true;
        case op::v_ceil_f64: F1([](double x) { return std::ceil(x); }); return true;
        case op::v_rndne_f64: F1([](double x) { return std::nearbyint(x); }); return true;
        case op::v_floor_f64: F1([](double x) { return std::floor(x); }); return true;
        case op::v_rcp_f64: F1([](double x) { return 1.0 / x; }); return true;
        case op::v_rsq_f64: F1([](double x) { return 1.0 / std::sqrt(x); }); return true;
        case op::v_sqrt_f64: F1([](double x) { return std::sqrt(x); }); return true;
        case op::v_frexp_mant_f64: F1([](double x) { return fp::frexp_mant(x); }); return true;
        default: break;
      }
      const src64 B = s64(1);
      auto F2 = [&](auto f) { each_lane(ex, [&](unsigned l) { put(l, fo(f(f64(A(l)), f64(B(l))))); }); };
      switch (d.o) {
        case op::v_add_f64: F2([](double a, double b) { return a + b; }); return true;
        case op::v_mul_f64: F2([](double a, double b) { return a * b; }); return true;
        case op::v_min_f64: F2([&](double a, double b) { return fp::vmin(a, b, ieee); }); return true;
        case op::v_max_f64: F2([&](double a, double b) { return fp::vmax(a, b, ieee); }); return true;
        case op::v_min_num_f64: F2([](double a, double b) { return fp::vmin_num(a, b); }); return true;
        case op::v_max_num_f64: F2([](double a, double b) { return fp::vmax_num(a, b); }); return true;
        case op::v_fmac_f64:
          each_lane(ex, [&](unsigned l) { put(l, fo(std::fma(f64(A(l)), f64(B(l)), f64(std::uint64_t(D[64 + l]) << 32 | D[l])))); });
          return true;
        default: break;
      }
      const src64 C = s64(2);
      auto F3 = [&](auto f) { each_lane(ex, [&](unsigned l) { put(l, fo(f(f64(A(l)), f64(B(l)), f64(C(l))))); }); };
      switch (d.o) {
        case op::v_fma_f64: F3([](double a, double b, double c) { return std::fma(a, b, c); }); return true;
        case op::v_div_fixup_f64: F3([](double q, double den, double num) { return fp::div_fixup(q, den, num); }); return true;
        case op::v_div_fmas_f64: {
          const std::uint64_t vcc = w.vcc();
          each_lane(ex, [&](unsigned l) {
            const double r = std::fma(f64(A(l)), f64(B(l)), f64(C(l)));
            put(l, fo(((vcc >> l) & 1) ? std::ldexp(r, 64) : r));
          });
          return true;
        }
        case op::v_div_scale_f64:
          each_lane(ex, [&](unsigned l) {
            bool v;
            put(l, fo(fp::div_scale(f64(A(l)), f64(B(l)), f64(C(l)), v)));
            carry |= std::uint64_t(v) << l;
          });
          w.set_mask(e64 ? d.sdst : op_vcc_lo, carry);
          return true;
        default: return false;
      }
    }
  }
  if (writes_carry) w.set_mask(e64 ? d.sdst : op_vcc_lo, carry);
  return true;
}

// VOPD: two VALU operations issued together; both read their sources before either writes.
inline void interpreter::exec_vopd(wave& w, const insn& d) {
  insn x{}, y{};
  x.e = y.e = enc::vop2;
  x.o = d.o, y.o = d.oy;
  x.code = d.code, y.code = d.codey;
  x.name = d.name, y.name = d.namey;
  x.dst = d.dst, y.dst = d.dsty;
  x.src[0] = d.src[0], x.src[1] = d.src[1];
  y.src[0] = d.srcy[0], y.src[1] = d.srcy[1];
  x.literal = y.literal = d.literal;
  // Y may read X's destination: run X, keep its result aside, run Y on the old values.
  std::uint32_t* xd = vcol(w, d.dst);
  std::uint32_t old[64], xr[64];
  std::memcpy(old, xd, sizeof old);
  exec_valu(w, x);
  std::memcpy(xr, xd, sizeof xr);
  std::memcpy(xd, old, sizeof old);
  exec_valu(w, y);
  std::memcpy(xd, xr, sizeof xr);
}

}  // namespace aqueduct::emu::isa
