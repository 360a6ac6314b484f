// aqueduct/emu/isa/gfx11_scalar.hpp — gfx11 scalar ALU, program control and scalar memory.
//
// Layer: emu. Definitions of gfx11_interpreter members (emu/isa/gfx11_interpreter.hpp, which
// includes this header at its end). Opcode numbers: LLVM's gfx11 tables, checked against
// llvm-mc-19 by tests/emu/isa/decode.cpp. SCC rules: RDNA3 ISA guide §4 (carry for unsigned
// add/sub, signed overflow for _i32, result != 0 for logic and shifts).
#pragma once

#include <aqueduct/emu/isa/gfx11_interpreter.hpp>

namespace aqueduct::emu::isa {

inline std::int64_t gfx11_interpreter::run_wave(wave& w, std::int64_t max_steps) {
  std::int64_t n = 0;
  while (!w.done && !w.at_barrier && n < max_steps) {
    current_pc_ = w.pc;
    const insn& d = fetch(w.pc);
    ++n;
    bool jumped = false;
    switch (d.e) {
      case enc::sop1: exec_sop1(w, d); break;
      case enc::sop2: exec_sop2(w, d); break;
      case enc::sopc: exec_sopc(w, d); break;
      case enc::sopk: exec_sopk(w, d); break;
      case enc::sopp: jumped = exec_sopp(w, d); break;
      case enc::smem: exec_smem(w, d); break;
      case enc::vop1:
      case enc::vop2:
      case enc::vopc:
      case enc::vop3: exec_valu(w, d); break;
      case enc::vopd: exec_vopd(w, d); break;
      case enc::flat: exec_flat(w, d); break;
      case enc::ds: exec_ds(w, d); break;
      default: unsupported(w, d, "illegal or unsupported encoding");
    }
    if (!jumped) w.pc += 4ull * d.words;
  }
  current_pc_ = 0;
  executed_ += static_cast<std::uint64_t>(n);
  return n;
}

inline void gfx11_interpreter::exec_sop1(wave& w, const insn& d) {
  const std::uint32_t a = sget(w, d, d.src[0]);
  const std::uint64_t ex = w.exec();
  auto saveexec = [&](std::uint64_t newexec, bool wide) {
    const std::uint64_t old = ex;
    if (wide) sset64(w, d.dst, old); else sset(w, d.dst, static_cast<std::uint32_t>(old));
    w.set_mask(op_exec_lo, newexec);
    w.scc = newexec != 0;
  };
  switch (d.op) {
    case 0: sset(w, d.dst, a); break;                            // s_mov_b32
    case 1: sset64(w, d.dst, sget64(w, d, d.src[0])); break;     // s_mov_b64
    case 8: sset(w, d.dst, a == 0 ? 0xFFFFFFFFu : static_cast<std::uint32_t>(std::countr_zero(a))); break;  // s_ctz_i32_b32
    case 9: {                                                    // s_ctz_i32_b64
      const std::uint64_t b = sget64(w, d, d.src[0]);
      sset(w, d.dst, b == 0 ? 0xFFFFFFFFu : static_cast<std::uint32_t>(std::countr_zero(b)));
      break;
    }
    case 30: sset(w, d.dst, ~a); w.scc = ~a != 0; break;        // s_not_b32
    case 32: saveexec(a & ex, false); break;                     // s_and_saveexec_b32
    case 33: saveexec(sget64(w, d, d.src[0]) & ex, true); break;  // s_and_saveexec_b64
    case 34: saveexec(a | ex, false); break;                     // s_or_saveexec_b32
    case 35: saveexec(sget64(w, d, d.src[0]) | ex, true); break;  // s_or_saveexec_b64
    case 36: saveexec(a ^ ex, false); break;                     // s_xor_saveexec_b32
    case 37: saveexec(sget64(w, d, d.src[0]) ^ ex, true); break;  // s_xor_saveexec_b64
    case 48: saveexec(a & ~ex & 0xFFFFFFFFull, false); break;    // s_and_not1_saveexec_b32
    case 49: saveexec(sget64(w, d, d.src[0]) & ~ex, true); break;  // s_and_not1_saveexec_b64
    default: unsupported(w, d);
  }
}

inline void gfx11_interpreter::exec_sop2(wave& w, const insn& d) {
  const std::uint32_t a = sget(w, d, d.src[0]), b = sget(w, d, d.src[1]);
  auto a64 = [&] { return sget64(w, d, d.src[0]); };
  auto b64 = [&] { return sget64(w, d, d.src[1]); };
  auto logic32 = [&](std::uint32_t r) { sset(w, d.dst, r); w.scc = r != 0; };
  auto logic64 = [&](std::uint64_t r) { sset64(w, d.dst, r); w.scc = r != 0; };
  switch (d.op) {
    case 0: { const std::uint64_t r = std::uint64_t(a) + b; sset(w, d.dst, std::uint32_t(r)); w.scc = r >> 32; break; }  // s_add_u32
    case 1: sset(w, d.dst, a - b); w.scc = b > a; break;  // s_sub_u32
    case 2: case 3: {  // s_add_i32, s_sub_i32
      const std::int64_t r = d.op == 2 ? std::int64_t(std::int32_t(a)) + std::int32_t(b) : std::int64_t(std::int32_t(a)) - std::int32_t(b);
      sset(w, d.dst, static_cast<std::uint32_t>(r));
      w.scc = r != static_cast<std::int32_t>(r);
      break;
    }
    case 4: { const std::uint64_t r = std::uint64_t(a) + b + w.scc; sset(w, d.dst, std::uint32_t(r)); w.scc = r >> 32; break; }  // s_addc_u32
    case 5: { const std::uint64_t r = std::uint64_t(a) - b - w.scc; sset(w, d.dst, std::uint32_t(r)); w.scc = (r >> 32) != 0; break; }  // s_subb_u32
    case 8: logic32(a << (b & 31)); break;                                  // s_lshl_b32
    case 9: logic64(a64() << (b & 63)); break;                              // s_lshl_b64
    case 10: logic32(a >> (b & 31)); break;                                 // s_lshr_b32
    case 11: logic64(a64() >> (b & 63)); break;                             // s_lshr_b64
    case 12: logic32(static_cast<std::uint32_t>(std::int32_t(a) >> (b & 31))); break;  // s_ashr_i32
    case 13: logic64(static_cast<std::uint64_t>(std::int64_t(a64()) >> (b & 63))); break;  // s_ashr_i64
    case 18: sset(w, d.dst, std::min(a, b)); w.scc = a <= b; break;       // s_min_u32 (scc: src0 chosen)
    case 20: sset(w, d.dst, std::max(a, b)); w.scc = a >= b; break;       // s_max_u32
    case 22: logic32(a & b); break;                                         // s_and_b32
    case 23: logic64(a64() & b64()); break;                                 // s_and_b64
    case 24: logic32(a | b); break;                                         // s_or_b32
    case 25: logic64(a64() | b64()); break;                                 // s_or_b64
    case 26: logic32(a ^ b); break;                                         // s_xor_b32
    case 27: logic64(a64() ^ b64()); break;                                 // s_xor_b64
    case 34: logic32(a & ~b); break;                                        // s_and_not1_b32
    case 35: logic64(a64() & ~b64()); break;                                // s_and_not1_b64
    case 36: logic32(a | ~b); break;                                        // s_or_not1_b32
    case 37: logic64(a64() | ~b64()); break;                                // s_or_not1_b64
    case 44: sset(w, d.dst, a * b); break;                                  // s_mul_i32
    case 45: sset(w, d.dst, static_cast<std::uint32_t>((std::uint64_t(a) * b) >> 32)); break;  // s_mul_hi_u32
    case 46: sset(w, d.dst, static_cast<std::uint32_t>((std::int64_t(std::int32_t(a)) * std::int32_t(b)) >> 32)); break;  // s_mul_hi_i32
    case 48: sset(w, d.dst, w.scc ? a : b); break;                          // s_cselect_b32
    case 49: sset64(w, d.dst, w.scc ? a64() : b64()); break;                // s_cselect_b64
    default: unsupported(w, d);
  }
}

inline void gfx11_interpreter::exec_sopc(wave& w, const insn& d) {
  const std::uint32_t a = sget(w, d, d.src[0]), b = sget(w, d, d.src[1]);
  const std::int32_t ia = static_cast<std::int32_t>(a), ib = static_cast<std::int32_t>(b);
  switch (d.op) {
    case 0: w.scc = ia == ib; break;  // s_cmp_eq_i32
    case 1: w.scc = ia != ib; break;  // s_cmp_lg_i32
    case 2: w.scc = ia > ib; break;   // s_cmp_gt_i32
    case 3: w.scc = ia >= ib; break;  // s_cmp_ge_i32
    case 4: w.scc = ia < ib; break;   // s_cmp_lt_i32
    case 5: w.scc = ia <= ib; break;  // s_cmp_le_i32
    case 6: w.scc = a == b; break;    // s_cmp_eq_u32
    case 7: w.scc = a != b; break;    // s_cmp_lg_u32
    case 8: w.scc = a > b; break;     // s_cmp_gt_u32
    case 9: w.scc = a >= b; break;    // s_cmp_ge_u32
    case 10: w.scc = a < b; break;    // s_cmp_lt_u32
    case 11: w.scc = a <= b; break;   // s_cmp_le_u32
    case 16: w.scc = sget64(w, d, d.src[0]) == sget64(w, d, d.src[1]); break;  // s_cmp_eq_u64
    case 17: w.scc = sget64(w, d, d.src[0]) != sget64(w, d, d.src[1]); break;  // s_cmp_lg_u64
    default: unsupported(w, d);
  }
}

inline void gfx11_interpreter::exec_sopk(wave& w, const insn& d) {
  const std::uint32_t k = static_cast<std::uint16_t>(d.imm);
  const std::uint32_t a = w.s[d.dst];
  switch (d.op) {
    case 0: sset(w, d.dst, static_cast<std::uint32_t>(d.imm)); break;  // s_movk_i32 (sign-extended)
    case 3: w.scc = std::int32_t(a) == d.imm; break;  // s_cmpk_eq_i32
    case 4: w.scc = std::int32_t(a) != d.imm; break;  // s_cmpk_lg_i32
    case 5: w.scc = std::int32_t(a) > d.imm; break;   // s_cmpk_gt_i32
    case 6: w.scc = std::int32_t(a) >= d.imm; break;  // s_cmpk_ge_i32
    case 7: w.scc = std::int32_t(a) < d.imm; break;   // s_cmpk_lt_i32
    case 8: w.scc = std::int32_t(a) <= d.imm; break;  // s_cmpk_le_i32
    case 9: w.scc = a == k; break;    // s_cmpk_eq_u32
    case 10: w.scc = a != k; break;   // s_cmpk_lg_u32
    case 11: w.scc = a > k; break;    // s_cmpk_gt_u32
    case 12: w.scc = a >= k; break;   // s_cmpk_ge_u32
    case 13: w.scc = a < k; break;    // s_cmpk_lt_u32
    case 14: w.scc = a <= k; break;   // s_cmpk_le_u32
    case 15: { const std::int64_t r = std::int64_t(std::int32_t(a)) + d.imm;  // s_addk_i32
      sset(w, d.dst, static_cast<std::uint32_t>(r)); w.scc = r != static_cast<std::int32_t>(r); break; }
    case 16: sset(w, d.dst, a * static_cast<std::uint32_t>(d.imm)); break;  // s_mulk_i32
    default: unsupported(w, d);
  }
}

inline bool gfx11_interpreter::exec_sopp(wave& w, const insn& d) {
  const auto jump = [&](bool taken) {
    if (taken) w.pc = w.pc + 4 + static_cast<std::int64_t>(d.imm) * 4;
    return taken;
  };
  switch (d.op) {
    case 0: case 5: case 7: case 8: case 9: case 10: case 4: return false;  // nop, clause, delay_alu, depctr, waitcnt, wait_idle, prefetch
    case 54: return false;                     // s_sendmsg (DEALLOC_VGPRS and friends: nothing to do)
    case 48: w.done = true; return true;       // s_endpgm
    case 61: w.at_barrier = true; return false;  // s_barrier
    case 32: return jump(true);                // s_branch
    case 33: return jump(!w.scc);              // s_cbranch_scc0
    case 34: return jump(w.scc);               // s_cbranch_scc1
    case 35: return jump(w.vcc() == 0);        // s_cbranch_vccz
    case 36: return jump(w.vcc() != 0);        // s_cbranch_vccnz
    case 37: return jump(w.exec() == 0);       // s_cbranch_execz
    case 38: return jump(w.exec() != 0);       // s_cbranch_execnz
    case 16: {                                 // s_trap
      char b[96];
      std::snprintf(b, sizeof b, "s_trap %d at pc 0x%llx", d.imm & 0xFF, static_cast<unsigned long long>(w.pc));
      throw isa_fault{w.pc, b};
    }
    case 31: unsupported(w, d, "s_code_end executed (ran past the end of the kernel)");
    default: unsupported(w, d);
  }
}

inline void gfx11_interpreter::exec_smem(wave& w, const insn& d) {
  unsigned dwords = 0;
  switch (d.op) {
    case 0: dwords = 1; break;   // s_load_b32
    case 1: dwords = 2; break;   // s_load_b64
    case 2: dwords = 4; break;   // s_load_b128
    case 3: dwords = 8; break;   // s_load_b256
    case 4: dwords = 16; break;  // s_load_b512
    default: unsupported(w, d);
  }
  const std::uint64_t base = (std::uint64_t(w.s[d.src[0] + 1]) << 32 | w.s[d.src[0]]) & 0xFFFFFFFFFFFFull;
  const std::uint64_t va = base + static_cast<std::uint64_t>(static_cast<std::int64_t>(d.imm)) +
                           (d.soff == op_null ? 0u : w.s[d.soff]);
  const std::uint64_t aligned = va & ~3ull;  // scalar loads ignore the low two address bits
  const auto* p = mem<const std::uint32_t>(w, aligned, dwords * 4ull, false);
  for (unsigned i = 0; i < dwords; ++i) sset(w, d.dst + i, p[i]);
}

}  // namespace aqueduct::emu::isa
