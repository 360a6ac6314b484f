// aqueduct/emu/isa/gfx9_decode.hpp — gfx9 / CDNA (gfx90a, gfx942) instruction words → a decoded
// instruction.
//
// Layer: emu (included only by emu/isa/). Encodings and field positions: LLVM's AMDGPU backend
// (the *_vi / *_gfx90a / *_gfx940 encoding classes of SOPInstructions.td, SMInstructions.td,
// VOP*Instructions.td, DSInstructions.td, FLATInstructions.td, BUFInstructions.td) and the AMD
// "Vega" / CDNA2 / CDNA3 ISA guides; every field below was checked by disassembling words that
// set it with llvm-mc-19 (tests/emu/isa_gfx9_decode.cpp does that for every opcode on every
// run, with random operands). Differences from gfx11 that matter here: SMEM is a different encoding (21-bit signed
// offset, SGPR offset via `soe`/`imm`), VOP3 has op_sel in [14:11] and the VOP1/VOP2/VOPC
// promotions at 0x140/0x100/0x000, VOP3P is the VOP3 space from 0x380, VOP1/VOP2/VOPC may carry
// an SDWA (src0 = 0xF9) or DPP (0xFA) second dword, FLAT's segment is [15:14] with
// glc/slc/sc1 cache bits, and M0 is operand 124 (gfx11: 125).
// An opcode LLVM does not accept decodes with `entry == nullptr` (illegal).
// Thread safety: pure functions.
#pragma once

#include <aqueduct/emu/isa/gfx9_opcodes.hpp>

#include <cstdint>
#include <span>
#include <string_view>

namespace aqueduct::emu::isa::gfx9 {

enum class target : std::uint8_t { gfx90a = 1, gfx942 = 2 };

enum class enc : std::uint8_t { sop1, sop2, sopk, sopc, sopp, smem, vop1, vop2, vopc, vop3, vop3p, ds, flat, global,
                                scratch, mubuf, invalid };
// How a VOP1/VOP2/VOPC opcode is encoded (VOP3 and VOP3P natives are e64).
enum class form : std::uint8_t { e32, e64, sdwa, dpp };

[[nodiscard]] constexpr const char* enc_name(enc e) noexcept {
  constexpr const char* n[] = {"SOP1", "SOP2", "SOPK", "SOPC", "SOPP", "SMEM", "VOP1", "VOP2", "VOPC",
                               "VOP3", "VOP3P", "DS", "FLAT", "GLOBAL", "SCRATCH", "MUBUF", "invalid"};
  return n[static_cast<unsigned>(e)];
}

// Operand numbers of the 9-bit source fields (gfx9): 0–101 SGPRs, 102/103 FLAT_SCRATCH,
// 104/105 XNACK_MASK, 106/107 VCC, 108–123 TTMP, 124 M0, 126/127 EXEC, 128–208 inline
// integers, 235–238 aperture bases/limits, 240–248 inline floats, 249 SDWA, 250 DPP,
// 251 VCCZ, 252 EXECZ, 253 SCC, 254 LDS_DIRECT, 255 literal, 256–511 VGPRs.
inline constexpr unsigned op_flat_scratch = 102, op_xnack_mask = 104, op_vcc = 106, op_ttmp0 = 108, op_m0 = 124,
                          op_exec = 126, op_shared_base = 235, op_shared_limit = 236, op_private_base = 237,
                          op_private_limit = 238, op_pops_wave = 239, op_sdwa = 249, op_dpp = 250, op_vccz = 251,
                          op_execz = 252, op_scc = 253, op_lds_direct = 254, op_literal = 255, op_vgpr0 = 256;
inline constexpr std::uint16_t no_reg = 0xFFFF;

// A decoded instruction. Which fields mean what depends on `e` (and `f` for VOP1/VOP2/VOPC).
struct insn {
  enc e = enc::invalid;
  form f = form::e32;
  std::uint16_t op = 0;       // opcode within `e` (a promoted VOP3 keeps its VOP1/VOP2/VOPC op)
  std::uint8_t words = 1;     // size in dwords, literal included
  const op_entry* entry = nullptr;  // LLVM's name and operand template; null: not a valid opcode
  std::uint16_t dst = 0;      // vdst (VGPR number, no 256) / sdst / sdata / VOPC-e64 sdst
  std::uint16_t sdst = no_reg;  // VOP3b carry-out, VOPC-SDWA sdst (no_reg: VCC)
  std::uint16_t src[3] = {0, 0, 0};  // 9-bit operand numbers (VGPRs 256+)
  std::uint32_t literal = 0;
  std::int32_t imm = 0;       // SOPK/SOPP simm16, SMEM/DS/FLAT/MUBUF offset (DS: offset0)
  // VOP3 / VOP3P / SDWA modifiers (bit i: source i)
  std::uint8_t abs = 0, neg = 0, neg_hi = 0, op_sel = 0, op_sel_hi = 0, omod = 0;
  bool clamp = false;
  std::uint8_t dst_sel = 6, dst_unused = 0, src_sel[2] = {6, 6}, sext = 0;  // SDWA (6 = DWORD)
  std::uint32_t dpp = 0;      // DPP second dword (not executed)
  // memory
  std::uint8_t off1 = 0;      // DS offset1
  bool glc = false, slc = false, sc1 = false, lds = false, sve = false, offen = false, idxen = false, gds = false,
       acc = false, soe = false, imm_en = true;
  std::uint16_t addr = 0, data0 = 0, data1 = 0;  // VGPR numbers
  std::uint16_t saddr = 0x7F;  // FLAT/GLOBAL/SCRATCH saddr (0x7F: off), SMEM soffset
  std::uint16_t srsrc = 0, soffset = 0;  // MUBUF: first SGPR of the V#, soffset operand

  [[nodiscard]] bool valid() const noexcept { return entry != nullptr; }
};

namespace detail {
template <std::size_t N>
const op_entry* find(const op_entry (&t)[N], unsigned op, target tg) noexcept {
  // Rows are sorted by opcode; an opcode whose name differs per target has one row per target.
  std::size_t lo = 0, hi = N;
  while (lo < hi) {
    const std::size_t mid = (lo + hi) / 2;
    if (t[mid].op < op) lo = mid + 1;
    else hi = mid;
  }
  for (std::size_t i = lo; i < N && t[i].op == op; ++i)
    if (t[i].targets & static_cast<std::uint8_t>(tg)) return &t[i];
  return nullptr;
}
// A VOP1/VOP2/VOPC row that has the form `f` on target `tg`.
template <std::size_t N>
const op_entry* find_form(const op_entry (&t)[N], unsigned op, target tg, form f) noexcept {
  const op_entry* e = find(t, op, tg);
  if (!e) return nullptr;
  const unsigned bit = static_cast<unsigned>(tg);
  if (f == form::e64 && !(e->targets & (bit << 2))) return nullptr;
  if (f == form::sdwa && !(e->targets & (bit << 4))) return nullptr;
  return e;
}
}  // namespace detail

// The encoding of `x` (the first dword), gfx9 layout.
[[nodiscard]] constexpr enc encoding_of(std::uint32_t x) noexcept {
  if ((x >> 31) == 0) {
    const unsigned top7 = x >> 25;
    return top7 == 0x3F ? enc::vop1 : top7 == 0x3E ? enc::vopc : enc::vop2;
  }
  if ((x >> 30) == 2) {
    const unsigned top9 = x >> 23;
    if (top9 == 0x17F) return enc::sopp;
    if (top9 == 0x17E) return enc::sopc;
    if (top9 == 0x17D) return enc::sop1;
    if ((x >> 28) == 0xB) return enc::sopk;
    return enc::sop2;
  }
  switch (x >> 26) {
    case 0x30: return enc::smem;
    case 0x34: return (x >> 23) == 0x1A7 ? enc::vop3p : enc::vop3;
    case 0x36: return enc::ds;
    case 0x37: return enc::flat;  // refined by the segment field
    case 0x38: return enc::mubuf;
    default: return enc::invalid;  // MTBUF, MIMG, EXP, VINTRP: not decoded
  }
}

// Decodes the instruction whose first dwords are w[0..avail) (avail >= 1) for target `tg`.
[[nodiscard]] inline insn decode(const std::uint32_t* w, unsigned avail, target tg) noexcept {
  insn d;
  const std::uint32_t x = w[0];
  const std::uint32_t y = avail > 1 ? w[1] : 0;
  auto take_literal = [&](unsigned at) {
    d.literal = avail > at ? w[at] : 0;
    d.words = static_cast<std::uint8_t>(at + 1);
  };
  auto lit_if = [&](unsigned at, unsigned nsrc) {
    for (unsigned i = 0; i < nsrc; ++i)
      if (d.src[i] == op_literal) return take_literal(at);
  };
  d.e = encoding_of(x);
  switch (d.e) {
    case enc::sop2:
      d.op = (x >> 23) & 0x7F; d.dst = (x >> 16) & 0x7F; d.src[1] = (x >> 8) & 0xFF; d.src[0] = x & 0xFF;
      lit_if(1, 2);
      d.entry = detail::find(sop2_ops, d.op, tg);
      break;
    case enc::sopk:
      d.op = (x >> 23) & 0x1F; d.dst = (x >> 16) & 0x7F; d.imm = static_cast<std::int16_t>(x & 0xFFFF);
      if (d.op == 20) take_literal(1);  // s_setreg_imm32_b32
      d.entry = detail::find(sopk_ops, d.op, tg);
      break;
    case enc::sop1:
      d.dst = (x >> 16) & 0x7F; d.op = (x >> 8) & 0xFF; d.src[0] = x & 0xFF;
      lit_if(1, 1);
      d.entry = detail::find(sop1_ops, d.op, tg);
      break;
    case enc::sopc:
      d.op = (x >> 16) & 0x7F; d.src[1] = (x >> 8) & 0xFF; d.src[0] = x & 0xFF;
      lit_if(1, 2);
      d.entry = detail::find(sopc_ops, d.op, tg);
      break;
    case enc::sopp:
      d.op = (x >> 16) & 0x7F; d.imm = static_cast<std::int16_t>(x & 0xFFFF);
      d.entry = detail::find(sopp_ops, d.op, tg);
      break;
    case enc::smem:
      d.op = (x >> 18) & 0xFF; d.imm_en = (x >> 17) & 1; d.glc = (x >> 16) & 1; d.soe = (x >> 14) & 1;
      d.dst = (x >> 6) & 0x7F; d.src[0] = static_cast<std::uint16_t>((x & 0x3F) << 1);
      d.imm = static_cast<std::int32_t>(y << 11) >> 11;  // 21-bit signed byte offset
      d.saddr = (y >> 25) & 0x7F;                        // soffset SGPR (soe)
      d.words = 2;
      d.entry = detail::find(smem_ops, d.op, tg);
      break;
    case enc::vop1:
    case enc::vop2:
    case enc::vopc: {
      if (d.e == enc::vop1) { d.dst = (x >> 17) & 0xFF; d.op = (x >> 9) & 0xFF; }
      else if (d.e == enc::vopc) { d.op = (x >> 17) & 0xFF; d.dst = op_vcc; }
      else { d.op = (x >> 25) & 0x3F; d.dst = (x >> 17) & 0xFF; }
      d.src[0] = x & 0x1FF;
      if (d.e != enc::vop1) d.src[1] = static_cast<std::uint16_t>(op_vgpr0 + ((x >> 9) & 0xFF));
      if (d.src[0] == op_sdwa) {
        d.f = form::sdwa; d.words = 2;
        d.src[0] = static_cast<std::uint16_t>(((y >> 23) & 1) ? (y & 0xFF) : op_vgpr0 + (y & 0xFF));
        if (d.e == enc::vopc) {
          if ((y >> 15) & 1) d.sdst = (y >> 8) & 0x7F;
        } else {
          d.dst_sel = (y >> 8) & 7; d.dst_unused = (y >> 11) & 3; d.clamp = (y >> 13) & 1; d.omod = (y >> 14) & 3;
        }
        d.src_sel[0] = (y >> 16) & 7; d.src_sel[1] = (y >> 24) & 7;
        d.sext = static_cast<std::uint8_t>(((y >> 19) & 1) | (((y >> 27) & 1) << 1));
        d.neg = static_cast<std::uint8_t>(((y >> 20) & 1) | (((y >> 28) & 1) << 1));
        d.abs = static_cast<std::uint8_t>(((y >> 21) & 1) | (((y >> 29) & 1) << 1));
        if (d.e != enc::vop1 && ((y >> 31) & 1)) d.src[1] = (x >> 9) & 0xFF;  // s1: src1 is an SGPR
      } else if (d.src[0] == op_dpp) {
        d.f = form::dpp; d.words = 2; d.dpp = y;
        d.src[0] = static_cast<std::uint16_t>(op_vgpr0 + (y & 0xFF));
      } else {
        lit_if(1, 1);
        if (d.e == enc::vop2 && (d.op == 23 || d.op == 24 || d.op == 36 || d.op == 37))  // v_fmamk/ak, v_madmk/ak
          take_literal(1);
      }
      d.entry = d.e == enc::vop1 ? detail::find_form(vop1_ops, d.op, tg, d.f)
              : d.e == enc::vop2 ? detail::find_form(vop2_ops, d.op, tg, d.f)
                                 : detail::find_form(vopc_ops, d.op, tg, d.f);
      break;
    }
    case enc::vop3:
    case enc::vop3p: {
      const unsigned op10 = (x >> 16) & 0x3FF;
      d.dst = x & 0xFF; d.words = 2;
      d.src[0] = y & 0x1FF; d.src[1] = (y >> 9) & 0x1FF; d.src[2] = (y >> 18) & 0x1FF;
      d.neg = (y >> 29) & 7;
      if (d.e == enc::vop3p) {
        d.op = op10 & 0x7F;
        d.neg_hi = (x >> 8) & 7; d.op_sel = (x >> 11) & 7; d.clamp = (x >> 15) & 1;
        d.op_sel_hi = static_cast<std::uint8_t>(((y >> 27) & 3) | (((x >> 14) & 1) << 2));
        d.entry = detail::find(vop3p_ops, d.op, tg);
        break;
      }
      d.f = form::e64;
      d.clamp = (x >> 15) & 1; d.abs = (x >> 8) & 7; d.op_sel = (x >> 11) & 0xF; d.omod = (y >> 27) & 3;
      if (op10 < 0x100) {
        d.e = enc::vopc; d.op = static_cast<std::uint16_t>(op10);
        d.entry = detail::find_form(vopc_ops, d.op, tg, form::e64);
      } else if (op10 < 0x140) {
        d.e = enc::vop2; d.op = static_cast<std::uint16_t>(op10 - 0x100);
        d.entry = detail::find_form(vop2_ops, d.op, tg, form::e64);
      } else if (op10 < 0x1C0) {
        d.e = enc::vop1; d.op = static_cast<std::uint16_t>(op10 - 0x140);
        d.entry = detail::find_form(vop1_ops, d.op, tg, form::e64);
      } else {
        d.op = static_cast<std::uint16_t>(op10);
        d.entry = detail::find(vop3_ops, d.op, tg);
      }
      if (d.entry != nullptr) {
        // VOP3b: an SGPR carry-out in [14:8] instead of abs/op_sel (the native template names
        // %S; a VOP2 opcode whose 32-bit form writes VCC as its second operand).
        const std::string_view t = d.entry->operands;
        if (t.find("%S") != std::string_view::npos || (d.e == enc::vop2 && t.starts_with("%D1, vcc, "))) {
          d.sdst = (x >> 8) & 0x7F; d.abs = 0; d.op_sel = 0;
        }
      }
      break;
    }
    case enc::ds:
      d.op = (x >> 17) & 0xFF; d.gds = (x >> 16) & 1; d.imm = x & 0xFF; d.off1 = (x >> 8) & 0xFF;
      d.acc = (x >> 25) & 1;
      d.addr = y & 0xFF; d.data0 = (y >> 8) & 0xFF; d.data1 = (y >> 16) & 0xFF; d.dst = (y >> 24) & 0xFF;
      d.words = 2;
      d.entry = detail::find(ds_ops, d.op, tg);
      break;
    case enc::flat: {
      const unsigned seg = (x >> 14) & 3;
      d.e = seg == 0 ? enc::flat : seg == 1 ? enc::scratch : seg == 2 ? enc::global : enc::invalid;
      d.op = (x >> 18) & 0x7F; d.glc = (x >> 16) & 1; d.slc = (x >> 17) & 1; d.sc1 = (x >> 25) & 1;
      d.lds = (x >> 13) & 1;
      // gfx942 scratch: bit 13 is SVE (the VGPR address is used); gfx90a scratch uses it when saddr is off.
      if (d.e == enc::scratch && tg == target::gfx942) { d.sve = d.lds; d.lds = false; }
      // FLAT has a 12-bit unsigned offset, GLOBAL/SCRATCH a 13-bit signed one.
      d.imm = d.e == enc::flat ? static_cast<std::int32_t>(x & 0xFFF) : static_cast<std::int32_t>(x << 19) >> 19;
      d.addr = y & 0xFF; d.data0 = (y >> 8) & 0xFF; d.saddr = (y >> 16) & 0x7F; d.acc = (y >> 23) & 1;
      d.dst = (y >> 24) & 0xFF;
      if (d.e == enc::scratch && tg == target::gfx90a) d.sve = d.saddr == 0x7F;
      d.words = 2;
      d.entry = d.e == enc::flat ? detail::find(flat_ops, d.op, tg)
              : d.e == enc::global ? detail::find(global_ops, d.op, tg)
              : d.e == enc::scratch ? detail::find(scratch_ops, d.op, tg)
                                    : nullptr;
      break;
    }
    case enc::mubuf:
      d.op = (x >> 18) & 0x7F; d.imm = x & 0xFFF; d.offen = (x >> 12) & 1; d.idxen = (x >> 13) & 1;
      d.glc = (x >> 14) & 1; d.sc1 = (x >> 15) & 1; d.lds = (x >> 16) & 1; d.slc = (x >> 17) & 1;
      d.addr = y & 0xFF; d.data0 = (y >> 8) & 0xFF; d.srsrc = static_cast<std::uint16_t>(((y >> 16) & 0x1F) << 2);
      d.acc = (y >> 23) & 1; d.soffset = (y >> 24) & 0xFF;
      d.words = 2;
      d.entry = detail::find(mubuf_ops, d.op, tg);
      break;
    default: break;
  }
  return d;
}

}  // namespace aqueduct::emu::isa::gfx9
