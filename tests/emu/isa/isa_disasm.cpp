// tests/emu/isa/isa_disasm.cpp — the interpreter's decoder, printed in LLVM's syntax, for the
// oracle (tests/emu/isa/oracle.py compares this with llvm-mc-19 --disassemble).
//
// Usage: isa_disasm <mcpu> < words. Each input line holds one instruction's dwords in hex; each
// output line is "ok <mnemonic> <operands>" (implemented: operands printed from the decoded
// fields and the operation's operand kinds), "unsupported <mnemonic> *" (valid for LLVM, not
// implemented: only the name is compared), or "illegal".
// The printer covers the operand forms the oracle's words use (registers, inline constants,
// literals, offsets); "*" in place of operands means "compare the mnemonic only" (s_waitcnt,
// s_delay_alu, s_sendmsg: their operands are symbolic fields the interpreter ignores).
#include <aqueduct/emu/isa/gfx11.hpp>
#include <aqueduct/emu/isa/gfx12.hpp>
#include <aqueduct/emu/isa/insn.hpp>

#include <cstdint>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace isa = aqueduct::emu::isa;
using isa::enc;
using isa::kind;
using isa::op;

namespace {

bool wave64 = false;
bool gfx12 = false;

std::string range(const char* p, unsigned first, unsigned n) {
  char b[32];
  if (n == 1) std::snprintf(b, sizeof b, "%s%u", p, first);
  else std::snprintf(b, sizeof b, "%s[%u:%u]", p, first, first + n - 1);
  return b;
}

// Operand `s` (canonical numbering) `n` dwords wide.
std::string operand(unsigned s, unsigned n, const isa::insn& d) {
  if (s >= isa::op_vgpr0) return range("v", s - isa::op_vgpr0, n);
  if (s < 106) return range("s", s, n);
  if (s == 106) return n == 2 ? "vcc" : "vcc_lo";
  if (s == 107) return "vcc_hi";
  if (s >= 108 && s <= 123) return range("ttmp", s - 108, n);
  if (s == 124) return "null";
  if (s == 125) return "m0";
  if (s == 126) return n == 2 ? "exec" : "exec_lo";
  if (s == 127) return "exec_hi";
  if (s >= 128 && s <= 192) return std::to_string(s - 128);
  if (s >= 193 && s <= 208) return "-" + std::to_string(s - 192);
  static const char* const f[] = {"0.5", "-0.5", "1.0", "-1.0", "2.0", "-2.0", "4.0", "-4.0", "0.15915494"};
  if (s >= 240 && s <= 248) return f[s - 240];
  switch (s) {
    case 235: return "src_shared_base";
    case 236: return "src_shared_limit";
    case 237: return "src_private_base";
    case 238: return "src_private_limit";
    case 251: return "src_vccz";
    case 252: return "src_execz";
    case 253: return "src_scc";
    case 255: {
      char b[16];
      std::snprintf(b, sizeof b, "0x%x", d.literal);
      return b;
    }
    default: return "?" + std::to_string(s);
  }
}
unsigned width(kind k) { return k == kind::mask ? (wave64 ? 2u : 1u) : std::max(1u, isa::dwords_of(k)); }
std::string vgpr(unsigned r, unsigned n) { return range("v", r, n); }
std::string hex(std::uint32_t x) {
  char b[16];
  std::snprintf(b, sizeof b, "0x%x", x);
  return b;
}
std::string join(const std::vector<std::string>& v) {
  std::string r;
  for (const auto& s : v) r += (r.empty() ? "" : ", ") + s;
  return r;
}

// Source i of a VALU instruction with its VOP3 modifiers.
std::string vsrc(const isa::insn& d, unsigned i, kind k) {
  std::string s = operand(d.src[i], width(k), d);
  if ((d.abs >> i) & 1) s = "|" + s + "|";
  if ((d.neg >> i) & 1) s = "-" + s;
  return s;
}

std::string bits_list(unsigned v, unsigned n) {
  std::string r = "[";
  for (unsigned i = 0; i < n; ++i) r += (i ? "," : "") + std::to_string((v >> i) & 1);
  return r + "]";
}

std::string vop3p_operands(const isa::insn& d) {
  const isa::op_info& in = isa::info(d.o);
  std::vector<std::string> v{vgpr(d.dst, 1)};
  unsigned n = 0;
  for (unsigned i = 0; i < 3; ++i)
    if (in.src[i] != kind::none) v.push_back(operand(d.src[i], 1, d)), ++n;
  std::string r = join(v);
  const bool mix = d.o == op::v_fma_mix_f32 || d.o == op::v_fma_mixlo_f16 || d.o == op::v_fma_mixhi_f16;
  const unsigned all = (1u << n) - 1;
  if (d.opsel & all) r += " op_sel:" + bits_list(d.opsel, n);
  if (mix ? (d.opsel_hi & all) != 0 : (d.opsel_hi & all) != all) r += " op_sel_hi:" + bits_list(d.opsel_hi, n);
  if (d.neg & all) r += " neg_lo:" + bits_list(d.neg, n);
  if (d.neg_hi & all) r += " neg_hi:" + bits_list(d.neg_hi, n);
  if (d.clamp) r += " clamp";
  return r;
}

// 16-bit ops LLVM 19 prints in true16 syntax (v<n>.l / v<n>.h) in their 32-bit encoding.
bool true16_syntax(op o) { return o == op::v_mov_b16; }
std::string half_reg(unsigned field) { return "v" + std::to_string(field & 127) + ((field & 128) ? ".h" : ".l"); }

std::string valu_operands(const isa::insn& d) {
  const isa::op_info& in = isa::info(d.o);
  const bool e64 = d.e == enc::vop3;
  std::vector<std::string> v;
  const std::string vcc = wave64 ? "vcc" : "vcc_lo";
  if (isa::is_compare(d.o)) {
    if (!d.cmpx) v.push_back(e64 ? operand(d.dst, width(kind::mask), d) : vcc);
    v.push_back(vsrc(d, 0, in.src[0]));
    v.push_back(vsrc(d, 1, in.src[1]));
    return join(v);
  }
  switch (d.o) {
    case op::v_nop: return "";
    case op::v_readfirstlane_b32: return operand(d.dst, 1, d) + ", " + vsrc(d, 0, kind::b32);
    case op::v_readlane_b32: return operand(d.dst, 1, d) + ", " + vsrc(d, 0, kind::b32) + ", " + vsrc(d, 1, kind::b32);
    case op::v_fmamk_f32: return vgpr(d.dst, 1) + ", " + vsrc(d, 0, kind::f32) + ", " + hex(d.literal) + ", " + vsrc(d, 1, kind::f32);
    case op::v_fmaak_f32: return vgpr(d.dst, 1) + ", " + vsrc(d, 0, kind::f32) + ", " + vsrc(d, 1, kind::f32) + ", " + hex(d.literal);
    case op::v_fmamk_f16: return vgpr(d.dst, 1) + ", " + vsrc(d, 0, kind::f16) + ", " + hex(d.literal) + ", " + vsrc(d, 1, kind::f16);
    case op::v_fmaak_f16: return vgpr(d.dst, 1) + ", " + vsrc(d, 0, kind::f16) + ", " + vsrc(d, 1, kind::f16) + ", " + hex(d.literal);
    default: break;
  }
  if (!e64 && true16_syntax(d.o))
    return half_reg(d.dst) + ", " + (d.src[0] >= isa::op_vgpr0 ? half_reg(d.src[0] - isa::op_vgpr0) : operand(d.src[0], 1, d));
  v.push_back(vgpr(d.dst, width(in.dst)));
  const bool carry_out = d.o == op::v_add_co_u32 || d.o == op::v_sub_co_u32 || d.o == op::v_subrev_co_u32 ||
                         d.o == op::v_add_co_ci_u32 || d.o == op::v_sub_co_ci_u32 || d.o == op::v_subrev_co_ci_u32 ||
                         d.o == op::v_div_scale_f32 || d.o == op::v_div_scale_f64 || d.o == op::v_mad_u64_u32 ||
                         d.o == op::v_mad_i64_i32;
  if (carry_out) v.push_back(e64 ? operand(d.sdst, width(kind::mask), d) : vcc);
  for (unsigned i = 0; i < 3; ++i) {
    const kind k = in.src[i];
    if (k == kind::none) break;
    if (k == kind::mask) v.push_back(e64 ? operand(d.src[2], width(kind::mask), d) : vcc);
    else v.push_back(vsrc(d, i, k));
  }
  std::string r = join(v);
  if (d.clamp) r += " clamp";
  if (d.omod) r += d.omod == 1 ? " mul:2" : d.omod == 2 ? " mul:4" : " div:2";
  return r;
}

std::string vopd_half(const isa::insn& d, op o, const char* name, unsigned dst, const std::uint16_t* src) {
  std::string r = std::string(name) + " " + vgpr(dst, 1) + ", " + operand(src[0], 1, d);
  if (o == op::v_mov_b32) return r;
  if (o == op::v_fmamk_f32) return r + ", " + hex(d.literal) + ", " + operand(src[1], 1, d);
  r += ", " + operand(src[1], 1, d);
  if (o == op::v_fmaak_f32) r += ", " + hex(d.literal);
  return r;
}

std::string offset_suffix(const char* what, std::int64_t off) {
  return off == 0 ? "" : std::string(" ") + what + ":" + std::to_string(off);
}

std::string memory_operands(const isa::insn& d) {
  const isa::op_info& in = isa::info(d.o);
  std::vector<std::string> v;
  if (d.e == enc::ds) {
    const bool two = std::string(d.name).find("2addr") != std::string::npos;
    if (in.dst != kind::none) v.push_back(vgpr(d.dst, width(in.dst)));
    v.push_back(vgpr(d.src[0], 1));
    if (in.src[1] != kind::none) v.push_back(vgpr(d.data0, width(in.src[1])));
    if (in.src[2] != kind::none) v.push_back(vgpr(d.data1, width(in.src[2])));
    std::string r = join(v);
    if (two) return r + offset_suffix("offset0", static_cast<std::uint8_t>(d.imm)) + offset_suffix("offset1", d.off1);
    return r + offset_suffix("offset", static_cast<std::uint32_t>(d.imm) | (std::uint32_t(d.off1) << 8));
  }
  const bool atomic = std::string(d.name).find("atomic") != std::string::npos;
  if (d.e == enc::mubuf || d.e == enc::vbuffer) {  // vdata, vaddr, the V#, soffset
    v.push_back(vgpr(d.data0, width(atomic || in.dst == kind::none ? in.src[1] : in.dst)));
    const unsigned na = unsigned(d.mubuf_offen) + unsigned(d.mubuf_idxen);
    v.push_back(na == 0 ? "off" : vgpr(d.src[0], na));
    v.push_back(operand(d.src[1], 4, d));
    v.push_back(operand(d.src[2], 1, d));
    std::string r = join(v);
    if (d.mubuf_idxen) r += " idxen";
    if (d.mubuf_offen) r += " offen";
    r += offset_suffix("offset", d.imm);
    if (gfx12) {
      if (d.th) r += atomic && d.th == 1 ? " th:TH_ATOMIC_RETURN" : " th:" + std::to_string(d.th);
      if (d.scope) r += " scope:" + std::to_string(d.scope);
      return r;
    }
    if (d.glc) r += " glc";
    if (d.slc) r += " slc";
    if (d.dlc) r += " dlc";
    return r;
  }
  const bool returns = in.dst != kind::none && (!atomic || d.glc);
  if (returns) v.push_back(vgpr(d.dst, width(in.dst)));
  const bool saddr = d.soff != isa::op_null;
  if (d.e == enc::scratch) v.push_back(d.sve ? vgpr(d.src[0], 1) : "off");
  else if (d.e == enc::global) v.push_back(vgpr(d.src[0], saddr ? 1 : 2));
  else v.push_back(vgpr(d.src[0], 2));
  if (in.src[1] != kind::none) v.push_back(vgpr(d.data0, width(in.src[1])));
  if (d.e == enc::global) v.push_back(saddr ? operand(d.soff, 2, d) : "off");
  if (d.e == enc::scratch) v.push_back(saddr ? operand(d.soff, 1, d) : "off");
  std::string r = join(v) + offset_suffix("offset", d.imm);
  if (gfx12) {
    if (d.th) r += atomic && (d.th & 1) && d.th == 1 ? " th:TH_ATOMIC_RETURN" : " th:" + std::to_string(d.th);
    if (d.scope) r += " scope:" + std::to_string(d.scope);
    return r;
  }
  if (d.glc) r += " glc";
  if (d.slc) r += " slc";
  if (d.dlc) r += " dlc";
  return r;
}

std::string scalar_operands(const isa::insn& d) {
  const isa::op_info& in = isa::info(d.o);
  std::vector<std::string> v;
  switch (d.e) {
    case enc::sop1:
    case enc::sop2:
    case enc::sopc:
      if (d.o == op::s_fmaak_f32)
        return operand(d.dst, 1, d) + ", " + operand(d.src[0], 1, d) + ", " + operand(d.src[1], 1, d) + ", " + hex(d.literal);
      if (d.o == op::s_fmamk_f32)
        return operand(d.dst, 1, d) + ", " + operand(d.src[0], 1, d) + ", " + hex(d.literal) + ", " + operand(d.src[1], 1, d);
      if (in.dst != kind::none) v.push_back(operand(d.dst, width(in.dst), d));
      for (unsigned i = 0; i < 2; ++i)
        if (in.src[i] != kind::none) v.push_back(operand(d.src[i], width(in.src[i]), d));
      return join(v);
    case enc::sopk:
      return operand(d.dst, 1, d) + ", " + hex(static_cast<std::uint16_t>(d.imm));
    case enc::sopp:
      switch (d.o) {
        case op::s_nop: case op::s_sleep: case op::s_setprio: case op::s_trap: case op::s_branch:
        case op::s_cbranch_scc0: case op::s_cbranch_scc1: case op::s_cbranch_vccz: case op::s_cbranch_vccnz:
        case op::s_cbranch_execz: case op::s_cbranch_execnz:
          return std::to_string(static_cast<std::int16_t>(d.imm));
        case op::s_endpgm: return d.imm ? std::to_string(d.imm) : "";
        case op::s_clause: case op::s_set_inst_prefetch_distance: return hex(static_cast<std::uint16_t>(d.imm));
        case op::s_barrier: case op::s_icache_inv: case op::s_code_end: case op::s_wait_idle: return "";
        default: return "*";
      }
    case enc::smem:
      if (in.dst == kind::none) return "";
      return operand(d.dst, width(in.dst), d) + ", " + operand(d.src[0], width(in.src[0]), d) + ", " + hex(static_cast<std::uint32_t>(d.imm)) +
             (d.soff != isa::op_null ? "" : "");
    default: return "*";
  }
}

// The DPP16 / DPP8 modifiers after a DPP form's operands, as LLVM prints them.
std::string dpp_suffix(const isa::insn& d) {
  const std::uint32_t x = d.literal;
  char b[96];
  if (d.e == enc::dpp8) {
    std::string r = " dpp8:[";
    for (unsigned i = 0; i < 8; ++i) r += (i ? "," : "") + std::to_string((x >> (8 + 3 * i)) & 7);
    return r + "]" + (d.dpp_fi ? " fi:1" : "");
  }
  const unsigned c = (x >> 8) & 0x1FF, n = c & 15;
  std::string r;
  if (c <= 0xFF) std::snprintf(b, sizeof b, " quad_perm:[%u,%u,%u,%u]", c & 3, (c >> 2) & 3, (c >> 4) & 3, (c >> 6) & 3), r = b;
  else if (c >= 0x101 && c <= 0x10F) r = " row_shl:" + std::to_string(n);
  else if (c >= 0x111 && c <= 0x11F) r = " row_shr:" + std::to_string(n);
  else if (c >= 0x121 && c <= 0x12F) r = " row_ror:" + std::to_string(n);
  else if (c == 0x140) r = " row_mirror";
  else if (c == 0x141) r = " row_half_mirror";
  else if (c >= 0x150 && c <= 0x15F) r = " row_share:" + std::to_string(n);
  else if (c >= 0x160 && c <= 0x16F) r = " row_xmask:" + std::to_string(n);
  else r = " dpp_ctrl:?";
  std::snprintf(b, sizeof b, " row_mask:0x%x bank_mask:0x%x", (x >> 28) & 0xF, (x >> 24) & 0xF);
  r += b;
  if ((x >> 19) & 1) r += " bound_ctrl:1";
  if ((x >> 18) & 1) r += " fi:1";
  return r;
}

std::string print(const isa::insn& d) {
  if (d.e == enc::invalid) return "illegal";
  if (d.e == enc::vopd) {
    if (d.o == op::none || d.oy == op::none) return std::string("unsupported ") + d.name + " * :: " + d.namey + " *";
    return "ok " + vopd_half(d, d.o, d.name, d.dst, d.src) + " :: " + vopd_half(d, d.oy, d.namey, d.dsty, d.srcy);
  }
  if (d.o == op::none) return std::string("unsupported ") + d.name + " *";
  std::string ops;
  switch (d.e) {
    case enc::vop1: case enc::vop2: case enc::vopc: case enc::vop3: ops = valu_operands(d); break;
    case enc::vop3p: ops = vop3p_operands(d); break;
    case enc::dpp: case enc::dpp8: {  // the base form's operands, then the DPP modifiers
      isa::insn base = d;
      base.e = d.dpp_of;
      ops = valu_operands(base) + dpp_suffix(d);
      break;
    }
    case enc::ds: case enc::flat: case enc::global: case enc::scratch: case enc::mubuf: case enc::vbuffer:
      ops = d.o == op::buffer_gl0_inv || d.o == op::buffer_gl1_inv ? "" : memory_operands(d);
      break;
    default: ops = scalar_operands(d); break;
  }
  return std::string("ok ") + d.name + (ops.empty() ? "" : " " + ops);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: isa_disasm <mcpu> [wave64] < words\n");
    return 2;
  }
  const std::string mcpu = argv[1];
  wave64 = argc > 2 && std::string(argv[2]) == "wave64";
  isa::insn (*decode)(const std::uint32_t*, unsigned) noexcept = nullptr;
  if (mcpu.rfind("gfx11", 0) == 0) decode = &isa::decode_gfx11;
  if (mcpu.rfind("gfx12", 0) == 0) decode = &isa::decode_gfx12, gfx12 = true;
  if (decode == nullptr) {
    std::fprintf(stderr, "isa_disasm: no decoder for %s\n", mcpu.c_str());
    return 2;
  }
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream in(line);
    std::vector<std::uint32_t> w;
    std::string tok;
    while (in >> tok) w.push_back(static_cast<std::uint32_t>(std::stoul(tok, nullptr, 16)));
    w.resize(std::max<std::size_t>(w.size(), 3), 0u);  // room for a literal the words may lack
    std::cout << print(decode(w.data(), static_cast<unsigned>(w.size()))) << '\n';
  }
  return 0;
}
