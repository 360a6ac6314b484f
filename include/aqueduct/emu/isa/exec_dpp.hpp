// aqueduct/emu/isa/exec_dpp.hpp — data-parallel primitives: src0 read from another lane (DPP on
// gfx9/CDNA, DPP16 and DPP8 on gfx11/gfx12).
//
// Layer: emu. Definitions of interpreter members (emu/isa/interpreter.hpp).
// DPP16 (gfx9 "DPP"; a DPP dword after a VOP1/VOP2/VOPC word, or after a VOP3 on gfx11/gfx12;
// LLVM's dpp_ctrl encodings and the GCN/CDNA/RDNA3/RDNA4 ISA guides' DPP rules): each lane's
// src0 comes from another lane, within 16-lane rows — quad_perm (0x00-0xFF), row_shl/shr/ror
// (0x101-0x12F), row_mirror (0x140), row_half_mirror (0x141); gfx9 only: wave_shl/rol/shr/ror:1
// (0x130/0x134/0x138/0x13C), row_bcast:15/31 (0x142/0x143); gfx10+ only (target::dpp_gfx10):
// row_share:n (0x150+n, every lane reads lane n of its row), row_xmask:n (0x160+n, lane r reads
// lane r ^ n). A lane whose row (row_mask) or bank (lanes 4k..4k+3 of a row, bank_mask) is
// masked off is not written. A source lane out of range, or inactive (unless fi — gfx10+
// "fetch inactive", LLVM's fi:1 — reads it anyway), reads 0 when bound_ctrl is set, otherwise the
// lane is not written. The 32-bit forms take src0/src1 neg/abs from the DPP dword (bits 20-23),
// the VOP3 form its own modifiers.
// DPP8 (gfx11/gfx12; src0 = 0xE9, or 0xEA with fi): lane l reads lane (l & ~7) | sel[l & 7]
// (3-bit selects in dword bits [31:8]); an inactive source lane reads 0 unless fi.
// The operation then runs as its VOP3 form on the permuted src0 in a spare VGPR column, on the
// lanes that are written. Compares (gfx11/gfx12; gfx9's are refused) run only when every active
// lane is written (their result for an unwritten lane is not documented: refused as unsupported
// otherwise); 64-bit operations and
// the 32-bit forms of 16-bit operations (gfx11's VGPR-half selects) are refused as unsupported.
// Thread safety: see interpreter.hpp.
#pragma once

#include <aqueduct/emu/isa/interpreter.hpp>

namespace aqueduct::emu::isa {

inline void interpreter::exec_dpp(wave& w, const insn& d) {
  using namespace detail;
  const std::uint32_t x = d.literal;
  const bool gfx10 = t_->dpp_gfx10, dpp8 = d.e == enc::dpp8;
  const unsigned ctrl = (x >> 8) & 0x1FF, row_mask = (x >> 28) & 0xF, bank_mask = (x >> 24) & 0xF;
  const bool bound_zero = !dpp8 && ((x >> 19) & 1), fi = dpp8 ? d.dpp_fi : gfx10 && ((x >> 18) & 1);
  auto source = [&](unsigned l) -> int {  // the lane src0 is read from, -1: out of range, -2: undefined control
    const int i = static_cast<int>(l), r = i & 15, n = static_cast<int>(ctrl & 15);
    if (dpp8) return (i & ~7) | static_cast<int>((x >> (8 + 3 * (l & 7))) & 7);
    if (ctrl <= 0xFF) return (i & ~3) | static_cast<int>((ctrl >> (2 * (l & 3))) & 3);  // quad_perm
    if (ctrl >= 0x101 && ctrl <= 0x10F) return r + n <= 15 ? i + n : -1;              // row_shl
    if (ctrl >= 0x111 && ctrl <= 0x11F) return r >= n ? i - n : -1;                   // row_shr
    if (ctrl >= 0x121 && ctrl <= 0x12F) return (i & ~15) | ((r - n) & 15);            // row_ror
    if (ctrl == 0x140) return (i & ~15) | (15 - r);                                   // row_mirror
    if (ctrl == 0x141) return (i & ~7) | (7 - (i & 7));                               // row_half_mirror
    if (gfx10) {
      if (ctrl >= 0x150 && ctrl <= 0x15F) return (i & ~15) | n;                       // row_share
      if (ctrl >= 0x160 && ctrl <= 0x16F) return (i & ~15) | (r ^ n);                 // row_xmask
      return -2;
    }
    switch (ctrl) {
      case 0x130: return i < 63 ? i + 1 : -1;  // wave_shl:1
      case 0x134: return (i + 1) & 63;         // wave_rol:1
      case 0x138: return i > 0 ? i - 1 : -1;   // wave_shr:1
      case 0x13C: return (i - 1) & 63;         // wave_ror:1
      case 0x142: return i >= 16 ? (i & ~15) - 1 : -1;  // row_bcast:15
      case 0x143: return i >= 32 ? 31 : -1;             // row_bcast:31
      default: return -2;
    }
  };
  const op_info& in = info(d.o);
  const bool vop3 = d.dpp_of == enc::vop3;
  if (is_compare(d.o) && !gfx10) unsupported(w, d, "DPP form of a compare (gfx9: not modelled)");
  for (kind k : {in.dst, in.src[0], in.src[1]})
    if (dwords_of(k) == 2) unsupported(w, d, "DPP form of a 64-bit operation");
  if (!vop3 && gfx10)
    for (kind k : {in.dst, in.src[0], in.src[1]})
      if (k == kind::f16 || k == kind::b16) unsupported(w, d, "32-bit DPP form of a 16-bit operation");
  const std::uint64_t ex = w.exec();
  const std::uint32_t* S = vcol(w, d.src[0] - op_vgpr0);
  const unsigned tmp = vgprs_;
  std::uint32_t* T = w.v + std::size_t(tmp) * 64;
  std::uint64_t run = 0;  // the lanes that compute and write
  for (unsigned l = 0; l < w.lanes; ++l) {
    if (!((ex >> l) & 1)) continue;
    if (!dpp8 && (!((row_mask >> (l >> 4)) & 1) || !((bank_mask >> ((l >> 2) & 3)) & 1))) continue;
    const int s = source(l);
    if (s == -2) unsupported(w, d, gfx10 ? "DPP control not defined for gfx10+ in" : "DPP control not defined for gfx9 in");
    if (s < 0 || s >= static_cast<int>(w.lanes) || (!fi && !((ex >> s) & 1))) {
      if (!dpp8 && !bound_zero) continue;
      T[l] = 0;
    } else {
      T[l] = S[s];
    }
    run |= 1ull << l;
  }
  insn y = d;
  y.e = enc::vop3;
  y.literal = 0;
  y.src[0] = static_cast<std::uint16_t>(op_vgpr0 + tmp);
  if (!vop3) {
    if (in.src[2] == kind::mask) y.src[2] = op_vcc_lo;  // v_cndmask / carry-in: VCC
    y.sdst = op_vcc_lo;                                   // carry-out: VCC
  }
  struct spare {
    unsigned& n;
    explicit spare(unsigned& v) : n(v) { n += sdwa_spare_vgprs; }
    ~spare() { n -= sdwa_spare_vgprs; }
  };
  if (is_compare(d.o)) {
    if (run != ex) unsupported(w, d, "DPP compare with lanes left unwritten (masks, bound_ctrl off)");
    if (!vop3) y.dst = op_vcc_lo;
    spare sp(vgprs_);
    exec_vopc(w, y);  // EXEC untouched: v_cmpx writes it
    return;
  }
  w.set_mask(op_exec_lo, run);
  try {
    spare sp(vgprs_);
    exec_valu(w, y);
  } catch (...) {
    w.set_mask(op_exec_lo, ex);
    throw;
  }
  w.set_mask(op_exec_lo, ex);
}

}  // namespace aqueduct::emu::isa
