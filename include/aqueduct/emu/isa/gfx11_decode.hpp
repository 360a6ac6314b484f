// aqueduct/emu/isa/gfx11_decode.hpp — gfx11 (RDNA3) instruction words → a decoded instruction.
//
// Layer: emu (included only by emu/isa/). Encodings and field positions as LLVM's AMDGPU
// backend and the RDNA3 ISA guide define them; every implemented opcode is checked against
// `llvm-mc-19 --disassemble -mcpu=gfx1100` by tests/emu/isa/decode.cpp. Opcodes that decode to
// an encoding but are not implemented keep `op = unsupported` and their raw number, so the
// interpreter can name them in the queue error.
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>

namespace aqueduct::emu::isa {

enum class enc : std::uint8_t { sop1, sop2, sopk, sopc, sopp, smem, vop1, vop2, vopc, vop3, vop3p, vopd, ds, flat, invalid };

[[nodiscard]] constexpr const char* enc_name(enc e) noexcept {
  constexpr const char* n[] = {"SOP1", "SOP2", "SOPK", "SOPC", "SOPP", "SMEM", "VOP1", "VOP2",
                               "VOPC", "VOP3", "VOP3P", "VOPD", "DS", "FLAT", "invalid"};
  return n[static_cast<unsigned>(e)];
}

// Operand numbers (9-bit source fields): 0–105 SGPRs, 106/107 VCC, 108–123 TTMP, 124 NULL,
// 125 M0, 126/127 EXEC, 128–208 inline integers, 240–248 inline floats, 253 SCC, 255 literal,
// 256–511 VGPRs.
inline constexpr unsigned op_vcc_lo = 106, op_null = 124, op_m0 = 125, op_exec_lo = 126, op_scc = 253,
                          op_literal = 255, op_vgpr0 = 256;

// A decoded instruction. Which fields mean what depends on `e`.
struct insn {
  enc e = enc::invalid;
  std::uint16_t op = 0;      // opcode within the encoding (VOP3: the 10-bit VOP3 opcode)
  std::uint8_t words = 1;    // size in dwords, literal included
  std::uint16_t dst = 0;     // sdst / vdst (VGPR number for vector dsts, without the 256)
  std::uint16_t sdst = 0;    // VOP3b carry-out / VOPC e64 destination
  std::uint16_t src[3] = {};  // operand numbers (vector srcs in 256+ form)
  std::uint32_t literal = 0;
  std::int32_t imm = 0;      // SOPK/SOPP simm16, SMEM/FLAT/DS offset
  std::uint8_t abs = 0, neg = 0, omod = 0;  // VOP3 modifiers
  bool clamp = false, glc = false;
  std::uint8_t seg = 0;     // FLAT: 0 flat, 1 scratch, 2 global
  std::uint16_t soff = 0;   // SMEM soffset, FLAT saddr
  std::uint16_t data0 = 0, data1 = 0;  // DS / FLAT data VGPRs
  std::uint8_t off1 = 0;    // DS offset1
  // VOPD second half
  std::uint16_t opy = 0, dsty = 0, srcy[2] = {};
};

[[nodiscard]] constexpr bool is_literal_src(std::uint16_t s) noexcept { return s == op_literal; }

// Decodes the instruction whose first dwords are w[0..avail). avail >= 1.
[[nodiscard]] inline insn decode_gfx11(const std::uint32_t* w, unsigned avail) noexcept {
  insn d;
  const std::uint32_t x = w[0];
  auto second = [&]() -> std::uint32_t { return avail > 1 ? w[1] : 0; };
  auto lit = [&](unsigned at) {
    for (std::uint16_t s : d.src)
      if (s == op_literal) {
        d.literal = avail > at ? w[at] : 0;
        d.words = static_cast<std::uint8_t>(at + 1);
        return;
      }
    if (d.e == enc::vopd && (d.srcy[0] == op_literal || (d.op == 1 || d.op == 2) || (d.opy == 1 || d.opy == 2))) {
      d.literal = avail > at ? w[at] : 0;
      d.words = static_cast<std::uint8_t>(at + 1);
    }
  };
  if ((x >> 23) == 0x17D) {
    d.e = enc::sop1; d.dst = (x >> 16) & 0x7F; d.op = (x >> 8) & 0xFF; d.src[0] = x & 0xFF; lit(1);
  } else if ((x >> 23) == 0x17E) {
    d.e = enc::sopc; d.op = (x >> 16) & 0x7F; d.src[1] = (x >> 8) & 0xFF; d.src[0] = x & 0xFF; lit(1);
  } else if ((x >> 23) == 0x17F) {
    d.e = enc::sopp; d.op = (x >> 16) & 0x7F; d.imm = static_cast<std::int16_t>(x & 0xFFFF);
  } else if ((x >> 28) == 0xB) {
    d.e = enc::sopk; d.op = (x >> 23) & 0x1F; d.dst = (x >> 16) & 0x7F; d.imm = static_cast<std::int16_t>(x & 0xFFFF);
  } else if ((x >> 30) == 2) {
    d.e = enc::sop2; d.op = (x >> 23) & 0x7F; d.dst = (x >> 16) & 0x7F; d.src[1] = (x >> 8) & 0xFF; d.src[0] = x & 0xFF;
    lit(1);
  } else if ((x >> 26) == 0x3D) {
    d.e = enc::smem; d.op = (x >> 18) & 0xFF; d.glc = (x >> 14) & 1; d.dst = (x >> 6) & 0x7F;
    d.src[0] = static_cast<std::uint16_t>((x & 0x3F) << 1);
    const std::uint32_t y = second();
    d.imm = static_cast<std::int32_t>(y << 11) >> 11;  // 21-bit signed
    d.soff = (y >> 25) & 0x7F;
    d.words = 2;
  } else if ((x >> 26) == 0x35) {
    d.e = enc::vop3; d.op = (x >> 16) & 0x3FF; d.dst = x & 0xFF; d.clamp = (x >> 15) & 1;
    d.abs = (x >> 8) & 7; d.sdst = (x >> 8) & 0x7F;
    const std::uint32_t y = second();
    d.src[0] = y & 0x1FF; d.src[1] = (y >> 9) & 0x1FF; d.src[2] = (y >> 18) & 0x1FF;
    d.omod = (y >> 27) & 3; d.neg = (y >> 29) & 7;
    d.words = 2; lit(2);
  } else if ((x >> 24) == 0xCC) {
    d.e = enc::vop3p; d.op = (x >> 16) & 0x7F; d.dst = x & 0xFF; d.words = 2;
  } else if ((x >> 26) == 0x32) {
    d.e = enc::vopd; d.op = (x >> 22) & 0xF; d.opy = (x >> 17) & 0x1F;
    d.src[0] = x & 0x1FF; d.src[1] = static_cast<std::uint16_t>(op_vgpr0 + ((x >> 9) & 0xFF));
    const std::uint32_t y = second();
    d.srcy[0] = y & 0x1FF; d.srcy[1] = static_cast<std::uint16_t>(op_vgpr0 + ((y >> 9) & 0xFF));
    d.dst = (y >> 24) & 0xFF;
    d.dsty = static_cast<std::uint16_t>((((y >> 17) & 0x7F) << 1) | ((d.dst & 1) ^ 1));
    d.words = 2; lit(2);
  } else if ((x >> 26) == 0x37) {
    d.e = enc::flat; d.op = (x >> 18) & 0x7F; d.seg = (x >> 16) & 3; d.glc = (x >> 14) & 1;
    d.imm = static_cast<std::int32_t>(x << 19) >> 19;  // 13-bit signed
    const std::uint32_t y = second();
    d.src[0] = y & 0xFF; d.data0 = (y >> 8) & 0xFF; d.soff = (y >> 16) & 0x7F; d.dst = (y >> 24) & 0xFF;
    d.words = 2;
  } else if ((x >> 26) == 0x36) {
    d.e = enc::ds; d.op = (x >> 18) & 0xFF; d.imm = x & 0xFF; d.off1 = (x >> 8) & 0xFF;
    const std::uint32_t y = second();
    d.src[0] = y & 0xFF; d.data0 = (y >> 8) & 0xFF; d.data1 = (y >> 16) & 0xFF; d.dst = (y >> 24) & 0xFF;
    d.words = 2;
  } else if ((x >> 25) == 0x3F) {
    d.e = enc::vop1; d.dst = (x >> 17) & 0xFF; d.op = (x >> 9) & 0xFF; d.src[0] = x & 0x1FF; lit(1);
  } else if ((x >> 25) == 0x3E) {
    d.e = enc::vopc; d.op = (x >> 17) & 0xFF; d.src[1] = static_cast<std::uint16_t>(op_vgpr0 + ((x >> 9) & 0xFF));
    d.src[0] = x & 0x1FF; lit(1);
  } else if ((x >> 31) == 0) {
    d.e = enc::vop2; d.op = (x >> 25) & 0x3F; d.dst = (x >> 17) & 0xFF;
    d.src[1] = static_cast<std::uint16_t>(op_vgpr0 + ((x >> 9) & 0xFF)); d.src[0] = x & 0x1FF;
    if (d.op == 0x2C || d.op == 0x2D) d.words = 2, d.literal = avail > 1 ? w[1] : 0;  // fmamk/fmaak
    else lit(1);
  }
  return d;
}

}  // namespace aqueduct::emu::isa
