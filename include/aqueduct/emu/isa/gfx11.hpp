// aqueduct/emu/isa/gfx11.hpp — the gfx11 (RDNA3) decoder: instruction words → `insn` (and the
// RDNA decoder gfx12 shares, emu/isa/gfx12.hpp).
//
// Layer: emu. Field positions as LLVM's AMDGPU backend and the RDNA3 ISA guide define them; the
// opcodes come from emu/isa/gfx11_opcodes.hpp (generated from llvm-mc-19 by
// scripts/isa-opcodes.py). tests/emu/isa/oracle.py checks, for every opcode of every decoded
// encoding, that this decoder's mnemonic and operands equal `llvm-mc-19 --disassemble
// -mcpu=gfx1100`'s. Encodings not decoded (MTBUF, MIMG, EXP, VINTERP, LDSDIR; the DPP forms of
// VOP3P) come out as `enc::invalid` or op::none and fault as unsupported. DPP16/DPP8 forms of
// VOP1/VOP2/VOPC/VOP3 come out as enc::dpp / enc::dpp8 with `dpp_of` the base encoding.
// Memory encodings (DS, FLAT/GLOBAL/SCRATCH, MUBUF/VBUFFER) keep VGPR numbers without the 256
// offset in src[0] (address), data0/data1 and dst. MUBUF (gfx11) and VBUFFER (gfx12) fill the
// fields gfx9's MUBUF uses: src[0] vaddr, data0 vdata, src[1] the V#'s first SGPR, src[2]
// soffset, imm the instruction offset, mubuf_offen/mubuf_idxen.
// Thread safety: pure functions.
#pragma once

#include <aqueduct/emu/isa/gfx11_opcodes.hpp>
#include <aqueduct/emu/isa/insn.hpp>

#include <cstdint>
#include <string_view>

namespace aqueduct::emu::isa {

namespace detail {
// Looks a VOP3 opcode up: a native VOP3 entry, or the VOP3 form of a VOPC (0–255), VOP2
// (256–383) or VOP1 (384–511) opcode. A native entry with aux 0xFF marks a VOP3 form LLVM
// rejects although the 32-bit form exists.
template <class Table>
constexpr const opcode_entry* find_vop3(const Table& t, unsigned code) noexcept {
  if (const opcode_entry* e = t.find(enc::vop3, code)) return e->aux == 0xFF ? nullptr : e;
  if (code < 256) return t.find(enc::vopc, code);
  if (code < 384) return t.find(enc::vop2, code - 256);
  if (code < 512) return t.find(enc::vop1, code - 384);
  return nullptr;
}
// VOP3b (a scalar carry-out / VCC destination in bits [14:8]) rather than VOP3a.
constexpr bool is_vop3b(op o) noexcept {
  switch (o) {
    case op::v_add_co_u32: case op::v_sub_co_u32: case op::v_subrev_co_u32: case op::v_add_co_ci_u32:
    case op::v_sub_co_ci_u32: case op::v_subrev_co_ci_u32: case op::v_div_scale_f32: case op::v_div_scale_f64:
    case op::v_mad_u64_u32: case op::v_mad_i64_i32:
      return true;
    default: return false;
  }
}
// Takes the literal dword when a source is 255 (or the operation always has one).
inline void take_literal(insn& d, const std::uint32_t* w, unsigned avail, unsigned at, bool always = false) noexcept {
  bool need = always;
  for (std::uint16_t s : d.src) need |= s == op_literal;
  if (!need) return;
  d.literal = avail > at ? w[at] : 0;
  d.words = static_cast<std::uint8_t>(at + 1);
}
}  // namespace detail

// The RDNA3/RDNA4 decoder: gfx11 and gfx12 share every encoding but SMEM and the vector memory
// ones (gfx12: VFLAT/VGLOBAL/VSCRATCH, three dwords). `T` is the generation's opcode table.
template <class Table>
[[nodiscard]] insn decode_rdna(const std::uint32_t* w, unsigned avail, const Table& T, bool gfx12) noexcept {
  insn d;
  const std::uint32_t x = w[0];
  const std::uint32_t y = avail > 1 ? w[1] : 0;
  auto set = [&](enc e, unsigned code, const opcode_entry* entry) {
    d.e = e;
    d.code = static_cast<std::uint16_t>(code);
    apply_entry(d, entry);
    if (entry == nullptr) d.e = enc::invalid, d.name = enc_name(e);
  };
  if ((x >> 23) == 0x17D) {  // SOP1
    set(enc::sop1, (x >> 8) & 0xFF, T.find(enc::sop1, (x >> 8) & 0xFF));
    d.dst = (x >> 16) & 0x7F, d.src[0] = x & 0xFF;
    detail::take_literal(d, w, avail, 1);
  } else if ((x >> 23) == 0x17E) {  // SOPC
    set(enc::sopc, (x >> 16) & 0x7F, T.find(enc::sopc, (x >> 16) & 0x7F));
    d.src[1] = (x >> 8) & 0xFF, d.src[0] = x & 0xFF;
    detail::take_literal(d, w, avail, 1);
  } else if ((x >> 23) == 0x17F) {  // SOPP
    set(enc::sopp, (x >> 16) & 0x7F, T.find(enc::sopp, (x >> 16) & 0x7F));
    d.imm = static_cast<std::int16_t>(x & 0xFFFF);
  } else if ((x >> 28) == 0xB) {  // SOPK
    set(enc::sopk, (x >> 23) & 0x1F, T.find(enc::sopk, (x >> 23) & 0x1F));
    d.dst = (x >> 16) & 0x7F, d.imm = static_cast<std::int16_t>(x & 0xFFFF);
  } else if ((x >> 30) == 2) {  // SOP2
    set(enc::sop2, (x >> 23) & 0x7F, T.find(enc::sop2, (x >> 23) & 0x7F));
    d.dst = (x >> 16) & 0x7F, d.src[1] = (x >> 8) & 0xFF, d.src[0] = x & 0xFF;
    detail::take_literal(d, w, avail, 1, d.o == op::s_fmaak_f32 || d.o == op::s_fmamk_f32);
  } else if ((x >> 26) == 0x3D && gfx12) {  // SMEM (gfx12): op [18:13], 24-bit signed offset
    set(enc::smem, (x >> 13) & 0x3F, T.find(enc::smem, (x >> 13) & 0x3F));
    d.dst = (x >> 6) & 0x7F;
    d.src[0] = static_cast<std::uint16_t>((x & 0x3F) << 1);
    d.imm = static_cast<std::int32_t>(y << 8) >> 8;
    d.soff = (y >> 25) & 0x7F;
    d.words = 2;
  } else if ((x >> 26) == 0x3B && gfx12) {  // VFLAT / VGLOBAL / VSCRATCH (gfx12, 96 bits)
    const std::uint32_t z = avail > 2 ? w[2] : 0;
    const unsigned seg = (x >> 24) & 3, code = (x >> 14) & 0xFF;
    const enc e = seg == 0 ? enc::flat : seg == 1 ? enc::scratch : enc::global;
    set(e, code, seg == 3 ? nullptr : T.find(e, code));
    d.soff = x & 0x7F;
    d.dst = y & 0xFF, d.sve = (y >> 17) & 1, d.data0 = (y >> 23) & 0xFF;
    d.glc = ((y >> 20) & 1) != 0 && std::string_view(d.name).find("atomic") != std::string_view::npos;  // TH_ATOMIC_RETURN
    d.th = (y >> 20) & 7, d.scope = (y >> 18) & 3;
    d.src[0] = z & 0xFF;
    d.imm = static_cast<std::int32_t>(z) >> 8;  // 24-bit signed
    d.words = 3;
  } else if ((x >> 26) == 0x3D) {  // SMEM
    set(enc::smem, (x >> 18) & 0xFF, T.find(enc::smem, (x >> 18) & 0xFF));
    d.glc = (x >> 14) & 1, d.dlc = (x >> 13) & 1;
    d.dst = (x >> 6) & 0x7F;
    d.src[0] = static_cast<std::uint16_t>((x & 0x3F) << 1);
    d.imm = static_cast<std::int32_t>(y << 11) >> 11;  // 21-bit signed
    d.soff = (y >> 25) & 0x7F;
    d.words = 2;
  } else if ((x >> 26) == 0x35) {  // VOP3
    const unsigned code = (x >> 16) & 0x3FF;
    set(enc::vop3, code, detail::find_vop3(T, code));
    d.dst = x & 0xFF;
    d.clamp = (x >> 15) & 1;
    if (detail::is_vop3b(d.o)) d.sdst = (x >> 8) & 0x7F;
    else d.abs = (x >> 8) & 7, d.opsel = (x >> 11) & 0xF;
    d.src[0] = y & 0x1FF, d.src[1] = (y >> 9) & 0x1FF, d.src[2] = (y >> 18) & 0x1FF;
    d.omod = (y >> 27) & 3, d.neg = (y >> 29) & 7;
    d.words = 2;
    detail::take_literal(d, w, avail, 2);
  } else if ((x >> 24) == 0xCC) {  // VOP3P
    set(enc::vop3p, (x >> 16) & 0x7F, T.find(enc::vop3p, (x >> 16) & 0x7F));
    d.dst = x & 0xFF;
    d.neg_hi = (x >> 8) & 7, d.opsel = (x >> 11) & 7, d.clamp = (x >> 15) & 1;
    d.src[0] = y & 0x1FF, d.src[1] = (y >> 9) & 0x1FF, d.src[2] = (y >> 18) & 0x1FF;
    d.opsel_hi = static_cast<std::uint8_t>(((y >> 27) & 3) | (((x >> 14) & 1) << 2));
    d.neg = (y >> 29) & 7;
    d.words = 2;
    detail::take_literal(d, w, avail, 2);
  } else if ((x >> 26) == 0x32) {  // VOPD
    const unsigned opx = (x >> 22) & 0xF, opy = (x >> 17) & 0x1F;
    const opcode_entry* ex = T.find(enc::vopd, opx);
    const opcode_entry* ey = T.find(enc::vopd_y, opy);
    set(enc::vopd, opx, ex && ey ? ex : nullptr);
    d.codey = static_cast<std::uint16_t>(opy);
    if (ey) d.oy = ey->o, d.namey = ey->name;
    d.src[0] = x & 0x1FF, d.src[1] = static_cast<std::uint16_t>(op_vgpr0 + ((x >> 9) & 0xFF));
    d.srcy[0] = y & 0x1FF, d.srcy[1] = static_cast<std::uint16_t>(op_vgpr0 + ((y >> 9) & 0xFF));
    d.dst = (y >> 24) & 0xFF;
    d.dsty = static_cast<std::uint16_t>((((y >> 17) & 0x7F) << 1) | ((d.dst & 1) ^ 1));
    d.words = 2;
    const bool lit = d.src[0] == op_literal || d.srcy[0] == op_literal || (ex && (ex->o == op::v_fmaak_f32 || ex->o == op::v_fmamk_f32)) ||
                     (ey && (ey->o == op::v_fmaak_f32 || ey->o == op::v_fmamk_f32));
    if (lit) d.literal = avail > 2 ? w[2] : 0, d.words = 3;
  } else if ((x >> 26) == 0x37 && !gfx12) {  // FLAT / GLOBAL / SCRATCH
    const unsigned seg = (x >> 16) & 3, code = (x >> 18) & 0x7F;
    const enc e = seg == 0 ? enc::flat : seg == 1 ? enc::scratch : enc::global;
    set(e, code, seg == 3 ? nullptr : T.find(e, code));
    d.glc = (x >> 14) & 1, d.slc = (x >> 15) & 1, d.dlc = (x >> 13) & 1;
    d.imm = seg == 0 ? static_cast<std::int32_t>(x & 0xFFF) : static_cast<std::int32_t>(x << 19) >> 19;
    d.src[0] = y & 0xFF, d.data0 = (y >> 8) & 0xFF, d.soff = (y >> 16) & 0x7F, d.sve = (y >> 23) & 1;
    d.dst = (y >> 24) & 0xFF;
    d.words = 2;
  } else if ((x >> 26) == 0x38 && !gfx12) {  // MUBUF (gfx11)
    set(enc::mubuf, (x >> 18) & 0xFF, T.find(enc::mubuf, (x >> 18) & 0xFF));
    d.imm = static_cast<std::int32_t>(x & 0xFFF);
    d.slc = (x >> 12) & 1, d.dlc = (x >> 13) & 1, d.glc = (x >> 14) & 1;
    d.src[0] = y & 0xFF, d.data0 = (y >> 8) & 0xFF;
    d.src[1] = static_cast<std::uint16_t>(((y >> 16) & 0x1F) << 2);
    d.mubuf_offen = (y >> 22) & 1, d.mubuf_idxen = (y >> 23) & 1;
    d.src[2] = (y >> 24) & 0xFF;
    if ((y >> 21) & 1) d.o = op::none;  // tfe (a status dword after the data): not modelled
    d.words = 2;
  } else if ((x >> 26) == 0x31 && gfx12) {  // VBUFFER (gfx12, 96 bits)
    const std::uint32_t z = avail > 2 ? w[2] : 0;
    set(enc::vbuffer, (x >> 14) & 0xFF, T.find(enc::vbuffer, (x >> 14) & 0xFF));
    d.src[2] = x & 0x7F;
    d.data0 = y & 0xFF, d.src[1] = (y >> 9) & 0x7F;
    d.scope = (y >> 18) & 3, d.th = (y >> 20) & 7;
    d.glc = ((y >> 20) & 1) != 0 && std::string_view(d.name).find("atomic") != std::string_view::npos;  // TH_ATOMIC_RETURN
    d.mubuf_offen = (y >> 30) & 1, d.mubuf_idxen = (y >> 31) & 1;
    d.src[0] = z & 0xFF;
    d.imm = static_cast<std::int32_t>(z >> 8);  // 24-bit unsigned
    if ((x >> 22) & 1) d.o = op::none;  // tfe: not modelled
    d.words = 3;
  } else if ((x >> 26) == 0x36) {  // DS
    set(enc::ds, (x >> 18) & 0xFF, T.find(enc::ds, (x >> 18) & 0xFF));
    d.imm = x & 0xFF, d.off1 = (x >> 8) & 0xFF;
    d.src[0] = y & 0xFF, d.data0 = (y >> 8) & 0xFF, d.data1 = (y >> 16) & 0xFF, d.dst = (y >> 24) & 0xFF;
    d.words = 2;
  } else if ((x >> 25) == 0x3F) {  // VOP1
    set(enc::vop1, (x >> 9) & 0xFF, T.find(enc::vop1, (x >> 9) & 0xFF));
    d.dst = (x >> 17) & 0xFF, d.src[0] = x & 0x1FF;
    detail::take_literal(d, w, avail, 1);
  } else if ((x >> 25) == 0x3E) {  // VOPC
    set(enc::vopc, (x >> 17) & 0xFF, T.find(enc::vopc, (x >> 17) & 0xFF));
    d.src[1] = static_cast<std::uint16_t>(op_vgpr0 + ((x >> 9) & 0xFF)), d.src[0] = x & 0x1FF;
    detail::take_literal(d, w, avail, 1);
  } else if ((x >> 31) == 0) {  // VOP2
    set(enc::vop2, (x >> 25) & 0x3F, T.find(enc::vop2, (x >> 25) & 0x3F));
    d.dst = (x >> 17) & 0xFF;
    d.src[1] = static_cast<std::uint16_t>(op_vgpr0 + ((x >> 9) & 0xFF)), d.src[0] = x & 0x1FF;
    detail::take_literal(d, w, avail, 1, d.o == op::v_fmamk_f32 || d.o == op::v_fmaak_f32 || d.o == op::v_fmamk_f16 || d.o == op::v_fmaak_f16);
  }
  // s_buffer_load_*: the V# is an aligned SGPR quad; the low bit of SBASE is ignored (LLVM's
  // disassembler reads sbase 1 as s[0:3]).
  if (d.e == enc::smem && d.o >= op::s_buffer_load_b32 && d.o <= op::s_buffer_load_u16) d.src[0] &= ~3u;
  const bool valu = d.e == enc::vop1 || d.e == enc::vop2 || d.e == enc::vopc || d.e == enc::vop3 || d.e == enc::vop3p;
  if (valu && (d.src[0] == 0xFA || d.src[0] == 0xE9 || d.src[0] == 0xEA)) {
    // DPP16 (src0 0xFA) / DPP8 (0xE9, 0xEA: fetch inactive): a DPP dword after the VOP1/VOP2/VOPC
    // word or the VOP3's two; its [7:0] is the VGPR src0. VOP3P and a literal elsewhere: refused.
    const unsigned at = d.e == enc::vop3 || d.e == enc::vop3p ? 2 : 1;
    const std::uint32_t dw = avail > at ? w[at] : 0;
    if (d.e == enc::vop3p || d.words != at) {
      d.o = op::none;
      return d;
    }
    d.dpp_of = d.e;
    d.e = d.src[0] == 0xFA ? enc::dpp : enc::dpp8;
    d.dpp_fi = d.src[0] == 0xEA;
    d.literal = dw;
    d.words = static_cast<std::uint8_t>(at + 1);
    d.src[0] = static_cast<std::uint16_t>(op_vgpr0 + (dw & 0xFF));
    if (d.e == enc::dpp && d.dpp_of != enc::vop3) {  // src0/src1 neg and abs in the DPP dword
      d.neg = static_cast<std::uint8_t>(((dw >> 20) & 1) | (((dw >> 22) & 1) << 1));
      d.abs = static_cast<std::uint8_t>(((dw >> 21) & 1) | (((dw >> 23) & 1) << 1));
    }
    // Not modelled (emu/isa/exec_dpp.hpp): 64-bit operations, and the 32-bit forms of 16-bit
    // ones (their VGPR-half selects and sext).
    if (d.o != op::none) {
      const op_info& in = info(d.o);
      for (kind k : {in.dst, in.src[0], in.src[1]})
        if (dwords_of(k) == 2 || (d.dpp_of != enc::vop3 && (k == kind::f16 || k == kind::b16))) d.o = op::none;
    }
  }
  return d;
}

[[nodiscard]] inline insn decode_gfx11(const std::uint32_t* w, unsigned avail) noexcept {
  return decode_rdna(w, avail, gfx11_opcodes, false);
}

}  // namespace aqueduct::emu::isa
