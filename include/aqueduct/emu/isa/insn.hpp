// aqueduct/emu/isa/insn.hpp — a decoded instruction, the same for every generation.
//
// Layer: emu. A generation's decoder (emu/isa/gfx11.hpp, …) fills an `insn` from instruction
// words: the encoding, the raw opcode, the generation-neutral operation (emu/isa/ops.hpp), and
// the operand fields in one canonical numbering (below). Each generation lists the opcodes
// LLVM knows for it in an `opcode_entry` table (generated from llvm-mc-19 by
// scripts/isa-opcodes.py; checked by tests/emu/isa/decode.cpp): implemented ones carry their
// operation, the rest `op::none` — the unsupported table, which is also how an unsupported
// instruction names itself.
// Thread safety: plain values; tables are constants.
#pragma once

#include <aqueduct/emu/isa/ops.hpp>

#include <array>
#include <cstdint>
#include <span>

namespace aqueduct::emu::isa {

// Encodings of every supported generation (a generation uses a subset). `vopd_y` and
// `vop3_from_*` exist only as table keys: VOPD's second operation, and the VOP3 forms of VOP1,
// VOP2 and VOPC opcodes (LLVM lists them once, as the 32-bit encoding).
enum class enc : std::uint8_t {
  sop1, sop2, sopk, sopc, sopp, smem, vop1, vop2, vopc, vop3, vop3p, vopd, vopd_y, ds, flat, global, scratch,
  mubuf, sdwa, dpp, vbuffer, dpp8, invalid, count_
};

[[nodiscard]] constexpr const char* enc_name(enc e) noexcept {
  constexpr const char* n[] = {"SOP1", "SOP2", "SOPK", "SOPC", "SOPP", "SMEM", "VOP1", "VOP2", "VOPC", "VOP3",
                               "VOP3P", "VOPD", "VOPD.Y", "DS", "FLAT", "GLOBAL", "SCRATCH", "MUBUF", "SDWA",
                               "DPP", "VBUFFER", "DPP8", "invalid"};
  return n[static_cast<unsigned>(e)];
}

// Canonical operand numbers (the gfx10+ numbering; gfx9's decoder maps M0 from 124 to 125):
// 0–105 SGPRs, 106/107 VCC, 108–123 TTMP, 124 NULL, 125 M0, 126/127 EXEC, 128–208 inline
// integers 0..64 and -1..-16, 235–238 aperture bases/limits, 240–248 inline floats, 251 VCCZ,
// 252 EXECZ, 253 SCC, 255 literal, 256–511 VGPRs.
inline constexpr unsigned op_vcc_lo = 106, op_ttmp0 = 108, op_null = 124, op_m0 = 125, op_exec_lo = 126,
                          op_shared_base = 235, op_shared_limit = 236, op_private_base = 237,
                          op_private_limit = 238, op_vccz = 251, op_execz = 252, op_scc = 253,
                          op_literal = 255, op_vgpr0 = 256;

// A decoded instruction. Which fields mean what depends on `e` (see each decoder).
struct insn {
  op o = op::none;           // what to execute (none: unsupported → fault naming `name`)
  enc e = enc::invalid;
  std::uint8_t words = 1;    // size in dwords, literal included
  std::uint16_t code = 0;    // opcode within the encoding (VOP3: the 10-bit VOP3 opcode)
  std::uint8_t aux = 0;      // compare condition (SOPC/SOPK/VOPC)
  bool cmpx = false;         // VOPC: writes EXEC instead of a mask
  std::uint16_t dst = 0;     // sdst / vdst (VGPR number without the 256 for vector dsts)
  std::uint16_t sdst = 0;    // VOP3b carry-out / VOPC e64 destination
  std::uint16_t src[3] = {};  // operand numbers (vector srcs in 256+ form)
  std::uint32_t literal = 0;  // gfx9 DPP: the DPP dword (control, masks, modifiers)
  std::int32_t imm = 0;      // SOPK/SOPP simm16, SMEM/FLAT/DS offset
  std::uint8_t abs = 0, neg = 0, neg_hi = 0, opsel = 0, opsel_hi = 0, omod = 0;  // VOP3/VOP3P
  bool clamp = false, glc = false, slc = false, dlc = false;
  std::uint16_t soff = 0;    // SMEM soffset, FLAT/GLOBAL/SCRATCH saddr (op_null: none)
  std::uint16_t data0 = 0, data1 = 0;  // DS / FLAT data VGPRs
  std::uint8_t off1 = 0;     // DS offset1
  bool sve = false;          // SCRATCH: vaddr is used
  std::uint8_t th = 0, scope = 0;  // gfx12 cache policy (temporal hint, scope)
  // gfx9 SDWA: selects (0–3 BYTE_0..3, 4–5 WORD_0..1, 6 DWORD), dst_unused (0 pad, 1 sext,
  // 2 preserve), sext of src0/src1 (bits 0/1); MUBUF address modes.
  std::uint8_t sdwa_dst_sel = 6, sdwa_dst_unused = 0, sdwa_src_sel[2] = {6, 6}, sdwa_sext = 0;
  bool mubuf_offen = false, mubuf_idxen = false;
  // DPP (e == dpp: DPP16, the DPP dword in `literal`; e == dpp8): the encoding the DPP word
  // follows (vop1/vop2/vopc, or vop3 on gfx11/gfx12; gfx9: invalid = its VOP1/VOP2 form), and
  // DPP8's fetch-inactive.
  enc dpp_of = enc::invalid;
  bool dpp_fi = false;
  // VOPD second half
  op oy = op::none;
  std::uint16_t codey = 0, dsty = 0, srcy[2] = {};
  const char* name = "?";    // mnemonic (LLVM's spelling for this generation)
  const char* namey = "";
};

// One (encoding, opcode) that LLVM 19 disassembles for a target.
struct opcode_entry {
  enc e;
  std::uint16_t code;
  op o;             // op::none: valid for LLVM, not implemented here
  std::uint8_t aux;  // compare condition; bit 4: cmpx
  const char* name;
};

// A generation's opcodes, looked up by (encoding, opcode) in O(1) (dense per encoding).
template <std::size_t N>
class opcode_table {
 public:
  static constexpr unsigned max_code = 1024;  // VOP3 has 10-bit opcodes
  consteval explicit opcode_table(const std::array<opcode_entry, N>& entries) : entries_(entries) {
    for (auto& row : index_) row.fill(0xFFFF);
    for (std::size_t i = 0; i < N; ++i) {
      const auto& e = entries_[i];
      if (e.code >= max_code || index_[static_cast<unsigned>(e.e)][e.code] != 0xFFFF) throw "duplicate or out-of-range opcode";
      index_[static_cast<unsigned>(e.e)][e.code] = static_cast<std::uint16_t>(i);
    }
  }
  // The entry, or null when LLVM knows no such opcode (an illegal instruction).
  [[nodiscard]] constexpr const opcode_entry* find(enc e, unsigned code) const noexcept {
    if (code >= max_code) return nullptr;
    const std::uint16_t i = index_[static_cast<unsigned>(e)][code];
    return i == 0xFFFF ? nullptr : &entries_[i];
  }
  [[nodiscard]] constexpr std::span<const opcode_entry> entries() const noexcept { return entries_; }

 private:
  std::array<opcode_entry, N> entries_;
  std::array<std::array<std::uint16_t, max_code>, static_cast<unsigned>(enc::count_)> index_{};
};

// Fills o/aux/cmpx/name of `d` from a table entry (or leaves it unsupported).
inline void apply_entry(insn& d, const opcode_entry* e) noexcept {
  if (e == nullptr) return;
  d.o = e->o;
  d.aux = e->aux & 0xF;
  d.cmpx = (e->aux & 0x10) != 0;
  d.name = e->name;
}

}  // namespace aqueduct::emu::isa
