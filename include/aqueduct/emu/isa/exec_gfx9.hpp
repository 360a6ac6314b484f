// aqueduct/emu/isa/exec_gfx9.hpp — what only gfx9/CDNA has: SDWA operand selection and packed
// f32 (DPP, shared with gfx11/gfx12, is in emu/isa/exec_dpp.hpp).
//
// Layer: emu. Definitions of interpreter members (emu/isa/interpreter.hpp).
// SDWA (Vega / CDNA ISA guides, "SDWA"): each source is a byte, word or dword of its operand
// (src*_sel), zero- or sign-extended (sext) to 32 bits, with abs/neg on float operands; the
// operation then runs as its VOP3 form would, and the result's low byte/word goes to the
// dst_sel field of the destination, the other bits zero (UNUSED_PAD), sign-extended above the
// field and zero below it (UNUSED_SEXT), or kept (UNUSED_PRESERVE). The operation runs on
// three spare VGPR columns the interpreter keeps past the descriptor's VGPRs, so every
// operation of exec_vector.hpp has its SDWA form for free.
// MUBUF (gfx9's scratch V# included) runs in emu/isa/exec_buffer.hpp, shared with gfx11/gfx12.
// Packed f32 (gfx90a/gfx942 VOP3P on register pairs): result dword 0 takes source i's dword
// op_sel[i], dword 1 its dword op_sel_hi[i]; neg_lo/neg_hi negate the inputs of dword 0/1;
// clamp clamps both to [0, 1]. v_pk_mov_b32: dword 0 = src0's dword op_sel[0], dword 1 =
// src1's dword op_sel[1] (LLVM's SIInstrInfo::copyPhysReg copies a pair with op_sel:[0,1]).
// A constant operand is its 32-bit value in dword 0; clang selects dword 0 for both results
// (op_sel_hi 0) — what the hardware reads as a constant's dword 1 is not documented, so
// selecting it is refused as unsupported.
// Thread safety: see interpreter.hpp.
#pragma once

#include <aqueduct/emu/isa/interpreter.hpp>

namespace aqueduct::emu::isa {

namespace detail {
// SDWA selects: 0–3 BYTE_0..3, 4–5 WORD_0..1, 6 DWORD.
inline std::uint32_t sdwa_select(std::uint32_t v, unsigned sel, bool sext) noexcept {
  if (sel >= 6) return v;
  const unsigned bits = sel < 4 ? 8 : 16, shift = sel < 4 ? 8 * sel : 16 * (sel - 4);
  const std::uint32_t x = (v >> shift) & ((1u << bits) - 1u);
  return sext ? static_cast<std::uint32_t>(static_cast<std::int32_t>(x << (32 - bits)) >> (32 - bits)) : x;
}
inline std::uint32_t sdwa_place(std::uint32_t r, std::uint32_t old, unsigned sel, unsigned unused) noexcept {
  if (sel >= 6) return r;
  const unsigned bits = sel < 4 ? 8 : 16, shift = sel < 4 ? 8 * sel : 16 * (sel - 4);
  const std::uint32_t field = ((1u << bits) - 1u) << shift;
  const std::uint32_t placed = (r << shift) & field;
  if (unused == 2) return (old & ~field) | placed;  // UNUSED_PRESERVE
  if (unused == 1 && ((r >> (bits - 1)) & 1)) {     // UNUSED_SEXT: ones above the field
    const unsigned top = shift + bits;
    return placed | (top >= 32 ? 0u : ~0u << top);
  }
  return placed;  // UNUSED_PAD
}
}  // namespace detail

inline void interpreter::exec_sdwa(wave& w, const insn& d) {
  using namespace detail;
  const std::uint64_t ex = w.exec();
  const op_info& in = info(d.o);
  for (kind k : {in.dst, in.src[0], in.src[1]})
    if (dwords_of(k) == 2) unsupported(w, d, "SDWA form of a 64-bit operation");
  const unsigned tmp = vgprs_;  // the spare columns (interpreter::run allocates them)
  insn x = d;
  x.e = enc::vop3;
  x.abs = x.neg = 0;
  x.omod = d.omod;
  const unsigned nsrc = (in.src[1] == kind::none || in.src[1] == kind::mask) ? 1u : 2u;
  for (unsigned i = 0; i < nsrc; ++i) {
    insn raw = d;
    raw.abs = raw.neg = 0;
    std::uint32_t st;
    const src32 S = vsrc(w, raw, i, st);
    const std::uint32_t sign = in.src[i] == kind::f16 ? 0x8000u : 0x80000000u;
    const bool fl = is_float(in.src[i]);
    const std::uint32_t andm = fl && ((d.abs >> i) & 1) ? ~sign : ~0u, xorm = fl && ((d.neg >> i) & 1) ? sign : 0u;
    const bool sext = !fl && ((d.sdwa_sext >> i) & 1);
    std::uint32_t* T = w.v + std::size_t(tmp + i) * 64;
    each_lane(ex, [&](unsigned l) { T[l] = (sdwa_select(S(l), d.sdwa_src_sel[i], sext) & andm) ^ xorm; });
    x.src[i] = static_cast<std::uint16_t>(op_vgpr0 + tmp + i);
  }
  if (in.src[2] == kind::mask) x.src[2] = op_vcc_lo;  // v_cndmask / carry-in: VCC
  x.sdst = op_vcc_lo;                                   // carry-out: VCC
  struct spare {  // the spare columns are addressable only while the operation runs
    unsigned& n;
    explicit spare(unsigned& v) : n(v) { n += sdwa_spare_vgprs; }
    ~spare() { n -= sdwa_spare_vgprs; }
  };
  if (is_compare(d.o)) {
    x.dst = d.dst;  // VCC or the SDWA sdst
    spare s(vgprs_);
    exec_vopc(w, x);
    return;
  }
  std::uint32_t* D = vcol(w, d.dst);  // checked against the descriptor's VGPRs
  std::uint32_t* R = w.v + std::size_t(tmp + 2) * 64;
  std::memcpy(R, D, 64 * sizeof(std::uint32_t));  // v_fmac/v_mac read their destination
  x.dst = static_cast<std::uint16_t>(tmp + 2);
  {
    spare s(vgprs_);
    exec_valu(w, x);
  }
  each_lane(ex, [&](unsigned l) { D[l] = sdwa_place(R[l], D[l], d.sdwa_dst_sel, d.sdwa_dst_unused); });
}

inline void interpreter::exec_pk_f32(wave& w, const insn& d) {
  using namespace detail;
  const std::uint64_t ex = w.exec();
  const bool mov = d.o == op::v_pk_mov_b32;
  const unsigned nsrc = d.o == op::v_pk_fma_f32 ? 3 : 2;
  const std::uint32_t* lo[3];
  const std::uint32_t* hi[3];
  std::uint32_t m[3], st[3][2];
  for (unsigned i = 0; i < nsrc; ++i) {
    const unsigned s = d.src[i];
    const unsigned sel_lo = (d.opsel >> i) & 1, sel_hi = (d.opsel_hi >> i) & 1;
    if (s >= op_vgpr0) {
      lo[i] = vcol(w, s - op_vgpr0, 2), hi[i] = lo[i] + 64, m[i] = ~0u;
      continue;
    }
    const bool constant = s == op_literal || (s >= 128 && s <= 208) || (s >= 240 && s <= 248);
    if (constant && (mov ? sel_lo : sel_lo || sel_hi))  // v_pk_mov_b32: op_sel[i] picks src i's dword
      unsupported(w, d, "packed f32: dword 1 of a constant operand (undocumented) selected by");
    const std::uint64_t v = constant ? sget(w, d, s) : sget64(w, d, s);
    st[i][0] = static_cast<std::uint32_t>(v), st[i][1] = static_cast<std::uint32_t>(v >> 32);
    lo[i] = &st[i][0], hi[i] = &st[i][1], m[i] = 0;
  }
  std::uint32_t* D = vcol(w, d.dst, 2);
  auto in = [&](unsigned i, unsigned l, bool upper) -> float {
    const bool sel = upper ? ((d.opsel_hi >> i) & 1) : ((d.opsel >> i) & 1);
    std::uint32_t x = (sel ? hi[i] : lo[i])[l & m[i]];
    if (((upper ? d.neg_hi : d.neg) >> i) & 1) x ^= 0x80000000u;
    return f32(x);
  };
  auto out = [&](float f) {
    if (d.clamp) f = std::isnan(f) ? 0.0f : std::fmin(std::fmax(f, 0.0f), 1.0f);
    return u32(f);
  };
  if (mov) {
    each_lane(ex, [&](unsigned l) {
      const std::uint32_t a = ((d.opsel & 1) ? hi[0] : lo[0])[l & m[0]], b = ((d.opsel & 2) ? hi[1] : lo[1])[l & m[1]];
      D[l] = a, D[l + 64] = b;
    });
    return;
  }
  each_lane(ex, [&](unsigned l) {
    for (unsigned h = 0; h < 2; ++h) {
      const float a = in(0, l, h), b = in(1, l, h);
      float r;
      switch (d.o) {
        case op::v_pk_fma_f32: r = std::fma(a, b, in(2, l, h)); break;
        case op::v_pk_mul_f32: r = a * b; break;
        default: r = a + b; break;  // v_pk_add_f32
      }
      D[l + 64 * h] = out(r);
    }
  });
}

}  // namespace aqueduct::emu::isa
