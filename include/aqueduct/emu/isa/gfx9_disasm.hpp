// aqueduct/emu/isa/gfx9_disasm.hpp — a decoded gfx9 instruction in LLVM's assembly syntax.
//
// Layer: emu. Used to name instructions in queue errors and by the decoder oracle
// (tests/emu/isa/gfx9_decode.cpp), which requires this text to equal `llvm-mc-19
// -disassemble` for every implemented opcode over random operand fields. The operands come
// from the opcode's template (emu/isa/gfx9_opcodes.hpp); modifiers are printed here in LLVM's
// order (VOP3: |abs| -neg, clamp, mul/div; SDWA: clamp, mul/div, sels; memory: idxen offen
// offset, cache bits, lds).
// Thread safety: pure functions.
#pragma once

#include <aqueduct/emu/isa/gfx9_decode.hpp>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

namespace aqueduct::emu::isa::gfx9 {

namespace detail {

inline void appendf(std::string& s, const char* fmt, unsigned long long a, unsigned long long b = 0) {
  char buf[48];
  std::snprintf(buf, sizeof buf, fmt, a, b);
  s += buf;
}

// A register range of `n` registers from `first` with prefix p ("s", "v", "a", "ttmp").
inline void reg_range(std::string& s, const char* p, unsigned first, unsigned n) {
  s += p;
  if (n == 1) appendf(s, "%llu", first);
  else appendf(s, "[%llu:%llu]", first, first + n - 1);
}

// A scalar-or-constant operand (9-bit number below 256) of `n` registers.
// `wide`: a 64-bit operand (LLVM prints 1/(2*pi) with double precision there).
inline void scalar(std::string& s, unsigned x, unsigned n, std::uint32_t literal, bool wide) {
  if (x < 102) return reg_range(s, "s", x, n);
  auto pair = [&](const char* name) {
    s += name;
    if (n == 1) s += (x & 1) ? "_hi" : "_lo";
  };
  if (x < 108 && (x & 1) == 0) {
    return pair(x == op_flat_scratch ? "flat_scratch" : x == op_xnack_mask ? "xnack_mask" : "vcc");
  }
  if (x < 108) {
    s += x == 103 ? "flat_scratch_hi" : x == 105 ? "xnack_mask_hi" : "vcc_hi";
    return;
  }
  if (x < 124) return reg_range(s, "ttmp", x - op_ttmp0, n);
  if (x == op_m0) { s += "m0"; return; }
  if (x == op_exec) return pair("exec");
  if (x == 127) { s += "exec_hi"; return; }
  if (x >= 128 && x <= 192) return appendf(s, "%llu", x - 128);
  if (x >= 193 && x <= 208) return appendf(s, "-%llu", x - 192);
  switch (x) {
    case op_shared_base: s += "src_shared_base"; return;
    case op_shared_limit: s += "src_shared_limit"; return;
    case op_private_base: s += "src_private_base"; return;
    case op_private_limit: s += "src_private_limit"; return;
    case op_pops_wave: s += "src_pops_exiting_wave_id"; return;
    case 240: s += "0.5"; return;
    case 241: s += "-0.5"; return;
    case 242: s += "1.0"; return;
    case 243: s += "-1.0"; return;
    case 244: s += "2.0"; return;
    case 245: s += "-2.0"; return;
    case 246: s += "4.0"; return;
    case 247: s += "-4.0"; return;
    case 248: s += wide ? "0.15915494309189532" : "0.15915494"; return;
    case op_vccz: s += "src_vccz"; return;
    case op_execz: s += "src_execz"; return;
    case op_scc: s += "src_scc"; return;
    case op_lds_direct: s += "src_lds_direct"; return;
    case op_literal: return appendf(s, "0x%llx", literal);
    default: appendf(s, "%llu", x); return;
  }
}

// `kind` (emu/isa/gfx9_opcodes.hpp): 0/n/s a 32/64-bit source, h a 16-bit float one, i/t a
// 16-bit integer one (LLVM prints its inline float constants as their f16 bits); a 16-bit
// source's literal is its low half.
inline void operand(std::string& s, unsigned x, unsigned n, std::uint32_t literal, bool wide, bool agpr = false,
                    char kind = 0) {
  if (x >= op_vgpr0) return reg_range(s, agpr ? "a" : "v", x - op_vgpr0, n);
  const bool half = kind == 'h' || kind == 'i' || kind == 't';
  if (half && x == op_literal) return appendf(s, "0x%llx", literal & 0xFFFFu);
  if ((kind == 'i' || kind == 't') && x >= 240 && x <= 248) {
    constexpr unsigned f16[] = {0x3800, 0xB800, 0x3C00, 0xBC00, 0x4000, 0xC000, 0x4400, 0xC400, 0x3118};
    return appendf(s, "0x%llx", f16[x - 240]);
  }
  scalar(s, x, n, literal, wide);
}

// The operand template of `d`'s form: the VOP3 (e64) form of a VOP1/VOP2/VOPC opcode writes its
// compare result / carry-out to an SGPR pair (%D2 / %S2) and takes its carry-in as src2 where
// the 32-bit form names VCC.
inline std::string operand_template(const insn& d) {
  std::string t = d.entry ? d.entry->operands : "";
  if (d.f == form::sdwa && d.e == enc::vopc && d.sdst != no_reg && t.starts_with("vcc, ")) t.replace(0, 3, "%D2");
  if (d.f != form::e64 || (d.e != enc::vop1 && d.e != enc::vop2 && d.e != enc::vopc)) return t;
  if (d.e == enc::vopc) {
    if (t.starts_with("vcc, ")) t.replace(0, 5, "%D2, ");
    return t;
  }
  if (t.starts_with("%D1, vcc, ")) t.replace(5, 3, "%S2");
  if (t.ends_with(", vcc")) t.replace(t.size() - 3, 3, "%22");
  return t;
}
inline bool float_mods(char kind) { return kind == 0 || kind == 'h'; }

inline bool has(const char* name, const char* part) { return std::strstr(name, part) != nullptr; }

inline const char* sdwa_sel(unsigned v) {
  constexpr const char* n[] = {"BYTE_0", "BYTE_1", "BYTE_2", "BYTE_3", "WORD_0", "WORD_1", "DWORD", "7"};
  return n[v & 7];
}

}  // namespace detail

// LLVM's mnemonic of `d` (with _e64 / _sdwa for those forms), or "" if the opcode is invalid.
[[nodiscard]] inline std::string mnemonic(const insn& d) {
  if (!d.entry) return {};
  std::string m = d.entry->name;
  if (d.f != form::e32 && m.size() > 4 && m.ends_with("_e32"))
    m.replace(m.size() - 3, 3, d.f == form::e64 ? "e64" : d.f == form::sdwa ? "sdwa" : "dpp");
  return m;
}

// The whole instruction as llvm-mc-19 prints it for `tg`.
[[nodiscard]] inline std::string disassemble(const insn& d, target tg) {
  using namespace detail;
  if (!d.entry) {
    std::string s = "<invalid ";
    s += enc_name(d.e);
    appendf(s, " opcode %llu>", d.op);
    return s;
  }
  std::string s = mnemonic(d);
  const char* name = d.entry->name;
  const bool vop = d.e == enc::vop1 || d.e == enc::vop2 || d.e == enc::vopc || d.e == enc::vop3 || d.e == enc::vop3p;
  const bool e64 = vop && d.f == form::e64 && d.e != enc::vop3p;
  const bool sdwa = d.f == form::sdwa;
  // ---- operands from the template
  std::string tpl = operand_template(d);
  // A FLAT/GLOBAL/SCRATCH atomic with glc (gfx942: sc0) returns the old value: LLVM names the
  // destination first, as wide as the data (cmpswap: half the data, which is {new, compare}).
  if (d.glc && has(name, "atomic") && (d.e == enc::flat || d.e == enc::global || d.e == enc::scratch)) {
    const auto at = tpl.find("%B");
    if (at != std::string::npos) {
      const char wc = tpl[at + 2];
      unsigned w = wc >= 'a' ? unsigned(wc - 'a' + 10) : unsigned(wc - '0');
      if (has(name, "cmpswap")) w /= 2;
      tpl = std::string("%D") + static_cast<char>(w < 10 ? '0' + w : 'a' + w - 10) + ", " + tpl;
    }
  }
  const char* t = tpl.c_str();
  if (*t) s += ' ';
  // VOP1/VOP2 e32 templates spell VCC; the e64 form has the carry-in as src2 / carry-out as %S.
  for (; *t; ++t) {
    if (*t != '%') { s += *t; continue; }
    bool agpr = false;
    if (t[1] == 'a') agpr = true, ++t;
    const char field = t[1];
    const char wc = t[2];
    t += 2;
    const unsigned n = wc >= 'a' ? unsigned(wc - 'a' + 10) : unsigned(wc - '0');
    char kind = 0;
    if (t[1] >= 'a' && t[1] <= 'z') kind = *++t;
    auto src = [&](unsigned i) {
      const unsigned x = d.src[i];
      const bool fmods = float_mods(kind), mix = has(name, "_mix");
      bool neg = false, abs = false, sext = false;
      if (e64 || d.e == enc::vop3) {
        neg = fmods && ((d.neg >> i) & 1);
        abs = fmods && ((d.abs >> i) & 1);
        sext = (kind == 's' || kind == 't') && ((d.neg >> i) & 1);
      } else if (sdwa) {
        neg = fmods && ((d.neg >> i) & 1);
        abs = fmods && ((d.abs >> i) & 1);
        sext = !fmods && ((d.sext >> i) & 1);
      } else if (d.e == enc::vop3p && mix) {  // v_fma_mix*: neg_lo is -x, neg_hi is |x|
        neg = (d.neg >> i) & 1;
        abs = (d.neg_hi >> i) & 1;
      }
      // LLVM: a negated constant without |abs| is neg(c), anything else -x.
      const bool neg_call = neg && !abs && x >= 128 && x < op_vgpr0 && (x <= 208 || (x >= 240 && x <= 248) || x == op_literal);
      if (neg) s += neg_call ? "neg(" : "-";
      if (abs) s += '|';
      if (sext) s += "sext(";
      operand(s, x, n, d.literal, n == 2 && d.e != enc::vop3p, agpr, kind);
      if (sext) s += ')';
      if (abs) s += '|';
      if (neg_call) s += ')';
    };
    switch (field) {
      case 'D':
        if (d.e == enc::sop1 || d.e == enc::sop2 || d.e == enc::sopk || d.e == enc::smem) scalar(s, d.dst, n, 0, false);
        else if (d.e == enc::vopc && d.f == form::sdwa) scalar(s, d.sdst == no_reg ? op_vcc : d.sdst, 2, 0, false);
        else if (d.e == enc::ds || d.e == enc::flat || d.e == enc::global || d.e == enc::scratch)
          reg_range(s, d.acc || agpr ? "a" : "v", d.dst, n);
        else if (d.e == enc::vopc) scalar(s, d.dst, n, 0, false);
        else if (has(name, "readlane") || has(name, "readfirstlane"))
          scalar(s, d.dst, n, 0, false);
        else reg_range(s, agpr ? "a" : "v", d.dst, n);
        break;
      case 'S': scalar(s, d.sdst, n, 0, false); break;
      case '0': case '1': case '2': src(unsigned(field - '0')); break;
      case 'A':
        if (d.e == enc::ds) reg_range(s, "v", d.addr, n);
        else if (d.e == enc::flat) reg_range(s, "v", d.addr, 2);
        else if (d.e == enc::global) reg_range(s, "v", d.addr, d.saddr == 0x7F ? 2 : 1);
        else if (d.e == enc::scratch) { if (d.sve) reg_range(s, "v", d.addr, 1); else s += "off"; }
        else if (d.e == enc::mubuf) {
          if (!d.offen && !d.idxen) s += "off";
          else reg_range(s, "v", d.addr, d.offen && d.idxen ? 2 : 1);
        }
        break;
      case 'B':
        if (d.e == enc::smem) scalar(s, d.src[0], n, 0, false);
        else reg_range(s, d.acc || agpr ? "a" : "v", d.data0, n);
        break;
      case 'C': reg_range(s, d.acc || agpr ? "a" : "v", d.data1, n); break;
      case 'X':
        if (d.saddr == 0x7F) s += "off";
        else scalar(s, d.saddr, d.e == enc::global ? 2 : 1, 0, false);
        break;
      case 'R': scalar(s, d.srsrc, 4, 0, false); break;
      case 'O': scalar(s, d.soffset, 1, d.literal, false); break;
      case 'K': appendf(s, "0x%llx", static_cast<std::uint16_t>(d.imm)); break;
      case 'J': {  // LLVM: branches, s_endpgm, fork, call in unsigned decimal; others decimal up to 64, else hex
        const auto u = static_cast<std::uint16_t>(d.imm);
        if (has(name, "branch") || has(name, "endpgm") || has(name, "fork") || has(name, "call")) s += std::to_string(u);
        else if (u <= 64) s += std::to_string(u);
        else appendf(s, "0x%llx", u);
        break;
      }
      case 'L': appendf(s, "0x%llx", d.literal); break;
      case 'W': {  // gfx9 s_waitcnt: vmcnt [3:0] | [15:14] << 4, expcnt [6:4], lgkmcnt [11:8]; LLVM omits a
                   // counter at its maximum unless all are
        const auto u = static_cast<std::uint16_t>(d.imm);
        const unsigned vm = (u & 0xF) | ((u >> 14) << 4), exp = (u >> 4) & 7, lgkm = (u >> 8) & 0xF;
        const bool all = vm == 63 && exp == 7 && lgkm == 15;
        std::string w;
        if (all || vm != 63) w += "vmcnt(" + std::to_string(vm) + ")";
        if (all || exp != 7) w += std::string(w.empty() ? "" : " ") + "expcnt(" + std::to_string(exp) + ")";
        if (all || lgkm != 15) w += std::string(w.empty() ? "" : " ") + "lgkmcnt(" + std::to_string(lgkm) + ")";
        s += w;
        break;
      }
      default: s += '?';
    }
  }
  // ---- modifiers
  auto omod = [&] {
    if (d.omod == 1) s += " mul:2";
    else if (d.omod == 2) s += " mul:4";
    else if (d.omod == 3) s += " div:2";
  };
  switch (d.e) {
    case enc::smem:
      if (tpl.find("%B") == std::string::npos) break;  // no address (s_dcache_wb, s_memtime)
      if (d.soe || !d.imm_en) {
        s += ", ";
        scalar(s, d.soe ? d.saddr : static_cast<unsigned>(d.imm & 0xFF), 1, 0, false);
        if (d.soe && d.imm_en) {
          if (d.imm < 0) appendf(s, " offset:-0x%llx", static_cast<unsigned>(-d.imm));
          else appendf(s, " offset:0x%llx", static_cast<unsigned>(d.imm));
        }
      } else if (d.imm < 0) {
        appendf(s, ", -0x%llx", static_cast<unsigned>(-d.imm));
      } else {
        appendf(s, ", 0x%llx", static_cast<unsigned>(d.imm));
      }
      if (d.glc && !has(name, "discard") && !has(name, "probe")) s += " glc";
      break;
    case enc::vop1: case enc::vop2: case enc::vopc: case enc::vop3:
      if (e64 || d.e == enc::vop3) {
        if (d.clamp) s += " clamp";
        omod();
      } else if (sdwa && *d.entry->operands) {
        if (d.clamp) s += " clamp";
        omod();
        if (d.e != enc::vopc && !has(name, "fp8") && !has(name, "bf8")) {  // gfx942 fp8 converts: no dst_sel
          s += " dst_sel:"; s += sdwa_sel(d.dst_sel);
          s += d.dst_unused == 0 ? " dst_unused:UNUSED_PAD" : d.dst_unused == 1 ? " dst_unused:UNUSED_SEXT" : " dst_unused:UNUSED_PRESERVE";
        }
        s += " src0_sel:"; s += sdwa_sel(d.src_sel[0]);
        if (d.e != enc::vop1) { s += " src1_sel:"; s += sdwa_sel(d.src_sel[1]); }
      }
      break;
    case enc::vop3p: {
      unsigned nsrc = 0;
      for (const char* p = tpl.c_str(); *p; ++p)
        if (p[0] == '%' && (p[1] == '0' || p[1] == '1' || p[1] == '2' || (p[1] == 'a' && p[2] >= '0' && p[2] <= '2'))) ++nsrc;
      const bool mix = has(name, "_mix");
      auto list = [&](const char* label, unsigned bits, unsigned dflt) {
        const unsigned m = (1u << nsrc) - 1;
        if ((bits & m) == (dflt & m)) return;
        s += ' '; s += label; s += ":[";
        for (unsigned i = 0; i < nsrc; ++i) { if (i) s += ','; s += ((bits >> i) & 1) ? '1' : '0'; }
        s += ']';
      };
      list("op_sel", d.op_sel, 0);
      list("op_sel_hi", d.op_sel_hi, mix ? 0u : 7u);
      if (!mix) {
        list("neg_lo", d.neg, 0);
        list("neg_hi", d.neg_hi, 0);
      }
      if (d.clamp) s += " clamp";
      break;
    }
    case enc::ds: {
      const bool two = has(name, "read2") || has(name, "write2") || has(name, "wrxchg2");
      if (two) {
        if (d.imm) appendf(s, " offset0:%llu", static_cast<unsigned>(d.imm));
        if (d.off1) appendf(s, " offset1:%llu", d.off1);
      } else if (const unsigned off = static_cast<unsigned>(d.imm) | (unsigned(d.off1) << 8); off != 0) {
        appendf(s, " offset:%llu", off);
      }
      // gfx90a/gfx942 have no GDS: LLVM prints nothing for the bit (executing it is unsupported).
      break;
    }
    case enc::flat: case enc::global: case enc::scratch:
      if (d.imm != 0) s += " offset:" + std::to_string(d.imm);
      if (tg == target::gfx942) {
        if (d.glc) s += " sc0";
        if (d.slc) s += " nt";
        if (d.sc1) s += " sc1";
      } else {
        if (d.glc) s += " glc";
        if (d.slc) s += " slc";
        if (d.sc1) s += " scc";
      }
      if (d.lds) s += " lds";
      break;
    case enc::mubuf:
      if (tpl.empty()) {  // cache write-back / invalidate: gfx942 prints its scope bits only
        if (tg == target::gfx942) {
          if (d.glc) s += " sc0";
          if (d.sc1) s += " sc1";
        }
        break;
      }
      if (d.idxen) s += " idxen";
      if (d.offen) s += " offen";
      if (d.imm != 0) appendf(s, " offset:%llu", static_cast<unsigned>(d.imm));
      if (tg == target::gfx942) {
        if (d.glc) s += " sc0";
        if (d.slc) s += " nt";
        if (d.sc1) s += " sc1";
      } else {
        if (d.glc) s += " glc";
        if (d.slc) s += " slc";
        if (d.sc1) s += " scc";
      }
      if (d.lds) s += " lds";
      break;
    default: break;
  }
  return s;
}

}  // namespace aqueduct::emu::isa::gfx9
