// aqueduct/emu/isa/exec_vector16.hpp — 16-bit and packed vector ALU semantics (f16/i16/u16
// operations, VOP3P packed math, fma_mix), for every generation.
//
// Layer: emu. Definitions of interpreter members (emu/isa/interpreter.hpp). A 16-bit operand is a
// half of a 32-bit register: the high half when VOP3 op_sel sets its bit, or — in the 32-bit
// encodings of gfx11/gfx12 — when bit 7 of its VGPR number is set (v128+n means the high half of
// vn, LLVM's "true16" v<n>.h). A 16-bit result is written into its half; the other half is kept
// on RDNA and zeroed on gfx9 (`target::zero_hi16`). Packed (VOP3P) operations compute both
// halves, each source half chosen by op_sel (low result) and op_sel_hi (high result), negated by
// neg_lo / neg_hi. Arithmetic is done in double (exact for f16 sums and products) or, for fused
// multiply-add, in the host's long double (64-bit significand: exact for f16), then rounded once
// to f16 — the IEEE result the hardware gives with denormals kept.
#pragma once

#include <aqueduct/emu/isa/fp.hpp>
#include <aqueduct/emu/isa/interpreter.hpp>

namespace aqueduct::emu::isa {

// The f16 helpers (h2d, d2h, hmin, hfma, …) are in emu/isa/fp.hpp.
// Reads a 16-bit source (see the header comment): VGPR half, or a scalar/constant's low half
// (the high half of an SGPR when VOP3 op_sel asks for it).
inline interpreter::src32 interpreter::vsrc16(wave& w, const insn& d, unsigned i, std::uint32_t& store, kind k) const {
  unsigned s = d.src[i];
  bool hi = d.e == enc::vop3 && ((d.opsel >> i) & 1);
  src32 r{nullptr, 0, 0xFFFFu, 0};
  if (s >= op_vgpr0) {
    unsigned reg = s - op_vgpr0;
    if (d.e != enc::vop3 && !t_->zero_hi16 && reg >= 128) reg -= 128, hi = true;
    r.p = vcol(w, reg);
    r.m = ~0u;
  } else {
    store = s == op_literal ? d.literal : static_cast<std::uint32_t>(inline_or_sget(w, d, s, 2));
    r.p = &store;
  }
  r.shift = hi ? 16u : 0u;
  if (k == kind::f16) {
    if ((d.abs >> i) & 1) r.andm = 0x7FFFu;
    if ((d.neg >> i) & 1) r.xorm = 0x8000u;
  }
  return r;
}

inline void interpreter::exec_valu16(wave& w, const insn& d, std::uint64_t ex) {
  using namespace detail;
  const op_info& in = info(d.o);
  const bool ieee = (params_.rsrc1 >> 23) & 1;
  std::uint32_t st[3];
  auto s16 = [&](unsigned i) { return vsrc16(w, d, i, st[i], in.src[i]); };
  // The 16-bit destination half.
  unsigned dreg = d.dst;
  bool dhi = d.e == enc::vop3 && ((d.opsel >> 3) & 1);
  if (d.e != enc::vop3 && !t_->zero_hi16 && dreg >= 128) dreg -= 128, dhi = true;
  std::uint32_t* D = vcol(w, dreg);
  auto put = [&](unsigned l, std::uint16_t v) {
    if (t_->zero_hi16) D[l] = dhi ? std::uint32_t(v) << 16 : v;
    else D[l] = dhi ? (D[l] & 0xFFFFu) | (std::uint32_t(v) << 16) : (D[l] & 0xFFFF0000u) | v;
  };
  const bool clamp = d.e == enc::vop3 && d.clamp;
  auto fo = [&](std::uint16_t h) -> std::uint16_t {  // VOP3 clamp of an f16 result (NaN → 0)
    if (!clamp) return h;
    if (h_nan(h)) return 0;
    const float f = h2f(h);
    return f < 0 ? std::uint16_t(0) : f > 1 ? std::uint16_t(0x3C00) : h;
  };
  auto H1 = [&](auto f) { const src32 A = s16(0); each_lane(ex, [&](unsigned l) { put(l, fo(f(std::uint16_t(A(l))))); }); };
  auto H2 = [&](auto f) {
    const src32 A = s16(0), B = s16(1);
    each_lane(ex, [&](unsigned l) { put(l, fo(f(std::uint16_t(A(l)), std::uint16_t(B(l))))); });
  };
  auto H3 = [&](auto f) {
    const src32 A = s16(0), B = s16(1), C = s16(2);
    each_lane(ex, [&](unsigned l) { put(l, fo(f(std::uint16_t(A(l)), std::uint16_t(B(l)), std::uint16_t(C(l))))); });
  };
  using u16 = std::uint16_t;
  using i16 = std::int16_t;
  const u16 K = static_cast<u16>(d.literal);
  switch (d.o) {
    case op::v_add_f16: H2([](u16 a, u16 b) { return d2h(h2d(a) + h2d(b)); }); return;
    case op::v_sub_f16: H2([](u16 a, u16 b) { return d2h(h2d(a) - h2d(b)); }); return;
    case op::v_subrev_f16: H2([](u16 a, u16 b) { return d2h(h2d(b) - h2d(a)); }); return;
    case op::v_mul_f16: H2([](u16 a, u16 b) { return d2h(h2d(a) * h2d(b)); }); return;
    case op::v_max_f16: H2([&](u16 a, u16 b) { return hmax(a, b, ieee); }); return;
    case op::v_min_f16: H2([&](u16 a, u16 b) { return hmin(a, b, ieee); }); return;
    case op::v_min_num_f16: H2([](u16 a, u16 b) { return hmin_num(a, b); }); return;
    case op::v_max_num_f16: H2([](u16 a, u16 b) { return hmax_num(a, b); }); return;
    case op::v_ldexp_f16: H2([](u16 a, u16 b) { return d2h(std::ldexp(h2d(a), std::clamp<int>(i16(b), -64, 64))); }); return;
    case op::v_fmac_f16: {
      const src32 A = s16(0), B = s16(1);
      each_lane(ex, [&](unsigned l) { put(l, fo(hfma(u16(A(l)), u16(B(l)), u16(dhi ? D[l] >> 16 : D[l])))); });
      return;
    }
    case op::v_fmamk_f16: H2([&](u16 a, u16 b) { return hfma(a, K, b); }); return;
    case op::v_fmaak_f16: H2([&](u16 a, u16 b) { return hfma(a, b, K); }); return;
    case op::v_fma_f16: H3([](u16 a, u16 b, u16 c) { return hfma(a, b, c); }); return;
    case op::v_min3_f16: H3([&](u16 a, u16 b, u16 c) { return hmin(hmin(a, b, ieee), c, ieee); }); return;
    case op::v_max3_f16: H3([&](u16 a, u16 b, u16 c) { return hmax(hmax(a, b, ieee), c, ieee); }); return;
    case op::v_med3_f16: H3([&](u16 a, u16 b, u16 c) { return hmed3(a, b, c, ieee); }); return;
    case op::v_div_fixup_f16:
      H3([](u16 q, u16 den, u16 num) { return d2h(fp::div_fixup(h2f(q), h2f(den), h2f(num))); });
      return;
    case op::v_cvt_f16_f32: {
      std::uint32_t s0;
      const src32 A = vsrc(w, d, 0, s0, kind::f32);
      each_lane(ex, [&](unsigned l) { put(l, fo(d2h(f32(A(l))))); });
      return;
    }
    case op::v_cvt_f16_i16: H1([](u16 a) { return d2h(double(i16(a))); }); return;
    case op::v_cvt_f16_u16: H1([](u16 a) { return d2h(double(a)); }); return;
    case op::v_cvt_i16_f16: H1([](u16 a) { return h_to_int<i16>(a); }); return;
    case op::v_cvt_u16_f16: H1([](u16 a) { return h_to_int<u16>(a); }); return;
    case op::v_rcp_f16: H1([](u16 a) { return d2h(1.0 / h2d(a)); }); return;
    case op::v_sqrt_f16: H1([](u16 a) { return d2h(std::sqrt(h2d(a))); }); return;
    case op::v_rsq_f16: H1([](u16 a) { return d2h(1.0 / std::sqrt(h2d(a))); }); return;
    case op::v_log_f16: H1([](u16 a) { return d2h(std::log2(h2d(a))); }); return;
    case op::v_exp_f16: H1([](u16 a) { return d2h(std::exp2(h2d(a))); }); return;
    case op::v_floor_f16: H1([](u16 a) { return d2h(std::floor(h2d(a))); }); return;
    case op::v_ceil_f16: H1([](u16 a) { return d2h(std::ceil(h2d(a))); }); return;
    case op::v_trunc_f16: H1([](u16 a) { return d2h(std::trunc(h2d(a))); }); return;
    case op::v_rndne_f16: H1([](u16 a) { return d2h(std::nearbyint(h2d(a))); }); return;
    case op::v_fract_f16:
      H1([](u16 a) { const double x = h2d(a); return std::isinf(x) ? u16(0x7E00) : hmin(d2h(x - std::floor(x)), 0x3BFF, true); });
      return;
    case op::v_frexp_mant_f16: H1([](u16 a) { return d2h(fp::frexp_mant(h2d(a))); }); return;
    case op::v_frexp_exp_i16_f16: H1([](u16 a) { return u16(fp::frexp_exp(h2d(a))); }); return;
    case op::v_mov_b16: H1([](u16 a) { return a; }); return;
    case op::v_not_b16: H1([](u16 a) { return u16(~a); }); return;
    case op::v_add_nc_u16: H2([](u16 a, u16 b) { return u16(a + b); }); return;
    case op::v_sub_nc_u16: H2([](u16 a, u16 b) { return u16(a - b); }); return;
    case op::v_mul_lo_u16: H2([](u16 a, u16 b) { return u16(a * b); }); return;
    case op::v_lshlrev_b16: H2([](u16 a, u16 b) { return u16(b << (a & 15)); }); return;
    case op::v_lshrrev_b16: H2([](u16 a, u16 b) { return u16(b >> (a & 15)); }); return;
    case op::v_ashrrev_i16: H2([](u16 a, u16 b) { return u16(i16(b) >> (a & 15)); }); return;
    case op::v_max_u16: H2([](u16 a, u16 b) { return std::max(a, b); }); return;
    case op::v_min_u16: H2([](u16 a, u16 b) { return std::min(a, b); }); return;
    case op::v_max_i16: H2([](u16 a, u16 b) { return u16(std::max(i16(a), i16(b))); }); return;
    case op::v_min_i16: H2([](u16 a, u16 b) { return u16(std::min(i16(a), i16(b))); }); return;
    case op::v_and_b16: H2([](u16 a, u16 b) { return u16(a & b); }); return;
    case op::v_or_b16: H2([](u16 a, u16 b) { return u16(a | b); }); return;
    case op::v_xor_b16: H2([](u16 a, u16 b) { return u16(a ^ b); }); return;
    default: break;
  }
  // 32-bit results from 16-bit sources (or two f32 into a packed pair).
  std::uint32_t* D32 = vcol(w, d.dst);
  switch (d.o) {
    case op::v_cvt_f32_f16: {
      const src32 A = s16(0);
      each_lane(ex, [&](unsigned l) { D32[l] = u32(h2f(u16(A(l)))); });
      return;
    }
    case op::v_pack_b32_f16: {
      const src32 A = s16(0), B = s16(1);
      each_lane(ex, [&](unsigned l) { D32[l] = (A(l) & 0xFFFFu) | (B(l) << 16); });
      return;
    }
    case op::v_cvt_pk_rtz_f16_f32: {  // round toward zero (detail::f2h_rtz)
      std::uint32_t s0, s1;
      const src32 A = vsrc(w, d, 0, s0, kind::f32), B = vsrc(w, d, 1, s1, kind::f32);
      each_lane(ex, [&](unsigned l) { D32[l] = std::uint32_t(f2h_rtz(f32(A(l)))) | (std::uint32_t(f2h_rtz(f32(B(l)))) << 16); });
      return;
    }
    default: unsupported(w, d);
  }
}

// VOP3P: packed halves and fma_mix.
inline void interpreter::exec_vop3p(wave& w, const insn& d) {
  using namespace detail;
  if (d.o >= op::v_pk_fma_f32 && d.o <= op::v_pk_mov_b32) return exec_pk_f32(w, d);  // CDNA (exec_gfx9.hpp)
  using u16 = std::uint16_t;
  using i16 = std::int16_t;
  const std::uint64_t ex = w.exec();
  const bool ieee = (params_.rsrc1 >> 23) & 1;
  const op_info& in = info(d.o);
  std::uint32_t st[3];
  src32 S[3];
  for (unsigned i = 0; i < 3; ++i) {
    if (in.src[i] == kind::none) continue;
    const unsigned s = d.src[i];
    if (s >= op_vgpr0) S[i] = src32{vcol(w, s - op_vgpr0), ~0u, ~0u, 0};
    else st[i] = s == op_literal ? d.literal : static_cast<std::uint32_t>(inline_or_sget(w, d, s, 2)), S[i] = src32{&st[i], 0, ~0u, 0};
  }
  std::uint32_t* D = vcol(w, d.dst);
  // Source i's half for the low (hi=false) or high result.
  auto half = [&](unsigned i, unsigned l, bool hi) -> u16 {
    const bool sel = hi ? ((d.opsel_hi >> i) & 1) : ((d.opsel >> i) & 1);
    u16 v = u16(S[i](l) >> (sel ? 16 : 0));
    if (((hi ? d.neg_hi : d.neg) >> i) & 1) v ^= 0x8000;  // neg on f16 halves (integer ops: LLVM never sets it)
    return v;
  };
  auto pk = [&](auto f) {
    each_lane(ex, [&](unsigned l) {
      const u16 lo = f(half(0, l, false), half(1, l, false), in.src[2] != kind::none ? half(2, l, false) : u16(0));
      const u16 hi = f(half(0, l, true), half(1, l, true), in.src[2] != kind::none ? half(2, l, true) : u16(0));
      D[l] = std::uint32_t(lo) | (std::uint32_t(hi) << 16);
    });
  };
  switch (d.o) {
    case op::v_pk_fma_f16: pk([](u16 a, u16 b, u16 c) { return hfma(a, b, c); }); return;
    case op::v_pk_add_f16: pk([](u16 a, u16 b, u16) { return d2h(h2d(a) + h2d(b)); }); return;
    case op::v_pk_mul_f16: pk([](u16 a, u16 b, u16) { return d2h(h2d(a) * h2d(b)); }); return;
    case op::v_pk_min_f16: pk([&](u16 a, u16 b, u16) { return hmin(a, b, ieee); }); return;
    case op::v_pk_max_f16: pk([&](u16 a, u16 b, u16) { return hmax(a, b, ieee); }); return;
    case op::v_pk_min_num_f16: pk([](u16 a, u16 b, u16) { return hmin_num(a, b); }); return;
    case op::v_pk_max_num_f16: pk([](u16 a, u16 b, u16) { return hmax_num(a, b); }); return;
    case op::v_pk_add_u16: case op::v_pk_add_i16: pk([](u16 a, u16 b, u16) { return u16(a + b); }); return;
    case op::v_pk_sub_u16: case op::v_pk_sub_i16: pk([](u16 a, u16 b, u16) { return u16(a - b); }); return;
    case op::v_pk_mul_lo_u16: pk([](u16 a, u16 b, u16) { return u16(a * b); }); return;
    case op::v_pk_lshlrev_b16: pk([](u16 a, u16 b, u16) { return u16(b << (a & 15)); }); return;
    case op::v_pk_lshrrev_b16: pk([](u16 a, u16 b, u16) { return u16(b >> (a & 15)); }); return;
    case op::v_pk_ashrrev_i16: pk([](u16 a, u16 b, u16) { return u16(i16(b) >> (a & 15)); }); return;
    case op::v_pk_max_u16: pk([](u16 a, u16 b, u16) { return std::max(a, b); }); return;
    case op::v_pk_min_u16: pk([](u16 a, u16 b, u16) { return std::min(a, b); }); return;
    case op::v_pk_max_i16: pk([](u16 a, u16 b, u16) { return u16(std::max(i16(a), i16(b))); }); return;
    case op::v_pk_min_i16: pk([](u16 a, u16 b, u16) { return u16(std::min(i16(a), i16(b))); }); return;
    case op::v_dot2_f32_f16:
      each_lane(ex, [&](unsigned l) {
        float t = f32(S[2](l));
        t += h2f(half(0, l, false)) * h2f(half(1, l, false));
        t += h2f(half(0, l, true)) * h2f(half(1, l, true));
        D[l] = u32(t);
      });
      return;
    case op::v_fma_mix_f32: case op::v_fma_mixlo_f16: case op::v_fma_mixhi_f16: {
      // Source i: f32 when op_sel_hi[i] is 0, else the f16 half op_sel[i] picks; neg_lo negates,
      // neg_hi takes the absolute value (V_FMA_MIX_F32 pseudocode, LLVM's abs on mix operands).
      auto in_f = [&](unsigned i, unsigned l) -> double {
        const std::uint32_t raw = S[i](l);
        double x = ((d.opsel_hi >> i) & 1) ? h2d(u16(raw >> (((d.opsel >> i) & 1) ? 16 : 0))) : double(f32(raw));
        if ((d.neg_hi >> i) & 1) x = std::fabs(x);
        if ((d.neg >> i) & 1) x = -x;
        return x;
      };
      each_lane(ex, [&](unsigned l) {
        if (d.o == op::v_fma_mix_f32) {  // every source is exact in f32: one rounding by fmaf
          float f = std::fma(static_cast<float>(in_f(0, l)), static_cast<float>(in_f(1, l)), static_cast<float>(in_f(2, l)));
          if (d.clamp) f = std::isnan(f) ? 0.0f : std::fmin(std::fmax(f, 0.0f), 1.0f);
          D[l] = u32(f);
        } else {  // rounded to 64 bits, then to f16 (exact unless the addend is far below the product)
          const u16 h = ld2h(std::fmal(in_f(0, l), in_f(1, l), in_f(2, l)));
          D[l] = d.o == op::v_fma_mixlo_f16 ? (D[l] & 0xFFFF0000u) | h : (D[l] & 0xFFFFu) | (std::uint32_t(h) << 16);
        }
      });
      return;
    }
    default: unsupported(w, d);
  }
}

}  // namespace aqueduct::emu::isa
