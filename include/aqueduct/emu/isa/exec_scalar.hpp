// aqueduct/emu/isa/exec_scalar.hpp — the dispatch loop, scalar ALU, program control and scalar
// memory, for every generation.
//
// Layer: emu. Definitions of interpreter members (emu/isa/interpreter.hpp includes this at its
// end). Semantics by generation-neutral op (emu/isa/ops.hpp). SCC rules: RDNA3 ISA guide §4
// (carry for unsigned add/sub, signed overflow for _i32, result != 0 for logic, shifts and bit
// fields, the chosen operand for min/max).
#pragma once

#include <aqueduct/emu/isa/fp.hpp>
#include <aqueduct/emu/isa/interpreter.hpp>

namespace aqueduct::emu::isa {

inline std::int64_t interpreter::run_wave(wave& w, std::int64_t max_steps) {
  std::int64_t n = 0;
  while (!w.done && !w.at_barrier && n < max_steps) {
    current_pc_ = w.pc;
    const insn& d = fetch(w.pc);
    ++n;
    if (d.o == op::none) unsupported(w, d, d.e == enc::invalid ? "illegal instruction" : "unsupported instruction");
    bool jumped = false;
    switch (d.e) {
      case enc::sop1:
      case enc::sop2:
      case enc::sopc:
      case enc::sopk: jumped = exec_salu(w, d); break;
      case enc::sopp: jumped = exec_sopp(w, d); break;
      case enc::smem: exec_smem(w, d); break;
      case enc::vopc: exec_vopc(w, d); break;
      case enc::vop1:
      case enc::vop2:
      case enc::vop3: exec_valu(w, d); break;
      case enc::vopd: exec_vopd(w, d); break;
      case enc::vop3p: exec_vop3p(w, d); break;
      case enc::flat:
      case enc::global:
      case enc::scratch: exec_flat(w, d); break;
      case enc::ds: exec_ds(w, d); break;
      case enc::sdwa: exec_sdwa(w, d); break;
      case enc::dpp:
      case enc::dpp8: exec_dpp(w, d); break;
      case enc::mubuf:
      case enc::vbuffer: exec_mubuf(w, d); break;
      default: unsupported(w, d, "illegal or unsupported encoding");
    }
    if (!jumped) w.pc += 4ull * d.words;
  }
  current_pc_ = 0;
  executed_ += static_cast<std::uint64_t>(n);
  return n;
}

namespace detail {
template <class T>
constexpr bool cmp6(unsigned c, T a, T b) noexcept {  // eq lg gt ge lt le
  switch (c) {
    case 0: return a == b;
    case 1: return a != b;
    case 2: return a > b;
    case 3: return a >= b;
    case 4: return a < b;
    default: return a <= b;
  }
}
}  // namespace detail

inline bool interpreter::exec_salu(wave& w, const insn& d) {
  using detail::f32;
  using detail::u32;
  const std::uint32_t a = d.e == enc::sopk ? 0u : sget(w, d, d.src[0]);
  const std::uint32_t b = (d.e == enc::sop2 || d.e == enc::sopc) ? sget(w, d, d.src[1]) : 0u;
  auto a64 = [&] { return sget64(w, d, d.src[0]); };
  auto b64 = [&] { return sget64(w, d, d.src[1]); };
  auto put = [&](std::uint32_t r) { sset(w, d.dst, r); };
  auto put64 = [&](std::uint64_t r) { sset64(w, d.dst, r); };
  auto logic32 = [&](std::uint32_t r) { put(r); w.scc = r != 0; };
  auto logic64 = [&](std::uint64_t r) { put64(r); w.scc = r != 0; };
  const std::uint64_t ex = w.exec(), lm = w.lane_mask();
  auto saveexec = [&](std::uint64_t newexec, bool wide) {
    if (wide) put64(ex); else put(static_cast<std::uint32_t>(ex));
    newexec &= lm;
    w.set_mask(op_exec_lo, newexec);
    w.scc = newexec != 0;
  };
  const std::int32_t ia = static_cast<std::int32_t>(a), ib = static_cast<std::int32_t>(b);
  const std::uint32_t k = static_cast<std::uint16_t>(d.imm);  // SOPK simm16 as unsigned
  const std::uint32_t kd = d.dst < 128 ? w.s[d.dst] : 0u;     // SOPK reads its destination
  // 16-bit float source i: bits [15:0], inline constants as f16 (gfx12 SALU f16)
  auto h = [&](unsigned i) { return static_cast<std::uint16_t>(inline_or_sget(w, d, d.src[i], 2)); };
  switch (d.o) {
    // ---- SOP1
    case op::s_mov_b32: put(a); break;
    case op::s_mov_b64: put64(a64()); break;
    case op::s_cmov_b32: if (w.scc) put(a); break;
    case op::s_cmov_b64: if (w.scc) put64(a64()); break;
    case op::s_not_b32: logic32(~a); break;
    case op::s_not_b64: logic64(~a64()); break;
    case op::s_brev_b32: put(detail::brev32(a)); break;
    case op::s_brev_b64: { const std::uint64_t x = a64(); put64(std::uint64_t(detail::brev32(std::uint32_t(x))) << 32 | detail::brev32(std::uint32_t(x >> 32))); break; }
    case op::s_ctz_i32_b32: put(a == 0 ? 0xFFFFFFFFu : static_cast<std::uint32_t>(std::countr_zero(a))); break;
    case op::s_ctz_i32_b64: { const std::uint64_t x = a64(); put(x == 0 ? 0xFFFFFFFFu : static_cast<std::uint32_t>(std::countr_zero(x))); break; }
    case op::s_clz_i32_u32: put(a == 0 ? 0xFFFFFFFFu : static_cast<std::uint32_t>(std::countl_zero(a))); break;
    case op::s_clz_i32_u64: { const std::uint64_t x = a64(); put(x == 0 ? 0xFFFFFFFFu : static_cast<std::uint32_t>(std::countl_zero(x))); break; }
    case op::s_cls_i32: put(detail::cls32(a)); break;
    case op::s_bcnt0_i32_b32: logic32(static_cast<std::uint32_t>(32 - std::popcount(a))); break;
    case op::s_bcnt0_i32_b64: logic32(static_cast<std::uint32_t>(64 - std::popcount(a64()))); break;
    case op::s_bcnt1_i32_b32: logic32(static_cast<std::uint32_t>(std::popcount(a))); break;
    case op::s_bcnt1_i32_b64: logic32(static_cast<std::uint32_t>(std::popcount(a64()))); break;
    case op::s_sext_i32_i8: put(static_cast<std::uint32_t>(std::int32_t(std::int8_t(a)))); break;
    case op::s_sext_i32_i16: put(static_cast<std::uint32_t>(std::int32_t(std::int16_t(a)))); break;
    case op::s_abs_i32: { const std::uint32_t r = ia < 0 ? 0u - a : a; logic32(r); break; }
    case op::s_bitset0_b32: put(kd & ~(1u << (a & 31))); break;
    case op::s_bitset1_b32: put(kd | (1u << (a & 31))); break;
    case op::s_and_saveexec_b32: saveexec(a & ex, false); break;
    case op::s_and_saveexec_b64: saveexec(a64() & ex, true); break;
    case op::s_or_saveexec_b32: saveexec(a | ex, false); break;
    case op::s_or_saveexec_b64: saveexec(a64() | ex, true); break;
    case op::s_xor_saveexec_b32: saveexec(a ^ ex, false); break;
    case op::s_xor_saveexec_b64: saveexec(a64() ^ ex, true); break;
    case op::s_and_not1_saveexec_b32: saveexec(a & ~ex, false); break;
    case op::s_and_not1_saveexec_b64: saveexec(a64() & ~ex, true); break;
    case op::s_or_not1_saveexec_b32: saveexec(a | ~ex, false); break;
    case op::s_or_not1_saveexec_b64: saveexec(a64() | ~ex, true); break;
    case op::s_and_not0_saveexec_b32: saveexec(~a & ex, false); break;
    case op::s_and_not0_saveexec_b64: saveexec(~a64() & ex, true); break;
    case op::s_getpc_b64: put64(w.pc + 4ull * d.words); break;
    case op::s_barrier_signal: case op::s_barrier_signal_isfirst: {  // gfx12 split barrier: signal
      if (static_cast<std::int32_t>(a) != -1) unsupported(w, d, "named barriers (other than -1, the workgroup's) not modelled");
      ++w.barrier_signals;
      if (d.o == op::s_barrier_signal_isfirst) {  // SCC: no other live wave has signalled this phase yet
        bool first = true;
        for (const wave& o : waves_)
          if (&o != &w && !o.done && o.barrier_signals >= w.barrier_signals) first = false;
        w.scc = first;
      }
      break;
    }
    case op::s_setpc_b64: w.pc = a64(); return true;
    case op::s_swappc_b64: { const std::uint64_t to = a64(); put64(w.pc + 4ull * d.words); w.pc = to; return true; }
    // ---- SOP2
    case op::s_add_u32: { const std::uint64_t r = std::uint64_t(a) + b; put(std::uint32_t(r)); w.scc = r >> 32; break; }
    case op::s_sub_u32: put(a - b); w.scc = b > a; break;
    case op::s_add_i32: case op::s_sub_i32: {
      const std::int64_t r = d.o == op::s_add_i32 ? std::int64_t(ia) + ib : std::int64_t(ia) - ib;
      put(static_cast<std::uint32_t>(r));
      w.scc = r != static_cast<std::int32_t>(r);
      break;
    }
    case op::s_addc_u32: { const std::uint64_t r = std::uint64_t(a) + b + w.scc; put(std::uint32_t(r)); w.scc = r >> 32; break; }
    case op::s_subb_u32: { const std::uint64_t r = std::uint64_t(a) - b - w.scc; put(std::uint32_t(r)); w.scc = (r >> 32) != 0; break; }
    case op::s_absdiff_i32: { const std::int64_t r = std::int64_t(ia) - ib; logic32(static_cast<std::uint32_t>(r < 0 ? -r : r)); break; }
    case op::s_lshl_b32: logic32(a << (b & 31)); break;
    case op::s_lshl_b64: logic64(a64() << (b & 63)); break;
    case op::s_lshr_b32: logic32(a >> (b & 31)); break;
    case op::s_lshr_b64: logic64(a64() >> (b & 63)); break;
    case op::s_ashr_i32: logic32(static_cast<std::uint32_t>(ia >> (b & 31))); break;
    case op::s_ashr_i64: logic64(static_cast<std::uint64_t>(std::int64_t(a64()) >> (b & 63))); break;
    case op::s_lshl1_add_u32: case op::s_lshl2_add_u32: case op::s_lshl3_add_u32: case op::s_lshl4_add_u32: {
      const unsigned sh = 1 + static_cast<unsigned>(d.o) - static_cast<unsigned>(op::s_lshl1_add_u32);
      const std::uint64_t r = (std::uint64_t(a) << sh) + b;
      put(static_cast<std::uint32_t>(r));
      w.scc = (r >> 32) != 0;
      break;
    }
    case op::s_min_i32: w.scc = ia < ib; put(w.scc ? a : b); break;  // SCC: src0 chosen (ISA pseudocode)
    case op::s_min_u32: w.scc = a < b; put(w.scc ? a : b); break;
    case op::s_max_i32: w.scc = ia > ib; put(w.scc ? a : b); break;
    case op::s_max_u32: w.scc = a > b; put(w.scc ? a : b); break;
    case op::s_and_b32: logic32(a & b); break;
    case op::s_and_b64: logic64(a64() & b64()); break;
    case op::s_or_b32: logic32(a | b); break;
    case op::s_or_b64: logic64(a64() | b64()); break;
    case op::s_xor_b32: logic32(a ^ b); break;
    case op::s_xor_b64: logic64(a64() ^ b64()); break;
    case op::s_nand_b32: logic32(~(a & b)); break;
    case op::s_nand_b64: logic64(~(a64() & b64())); break;
    case op::s_nor_b32: logic32(~(a | b)); break;
    case op::s_nor_b64: logic64(~(a64() | b64())); break;
    case op::s_xnor_b32: logic32(~(a ^ b)); break;
    case op::s_xnor_b64: logic64(~(a64() ^ b64())); break;
    case op::s_and_not1_b32: logic32(a & ~b); break;
    case op::s_and_not1_b64: logic64(a64() & ~b64()); break;
    case op::s_or_not1_b32: logic32(a | ~b); break;
    case op::s_or_not1_b64: logic64(a64() | ~b64()); break;
    case op::s_bfe_u32: case op::s_bfe_i32: {  // offset b[4:0], width b[22:16]
      const unsigned off = b & 31, wd = (b >> 16) & 0x7F;
      std::uint32_t r = wd == 0 ? 0u : (wd >= 32 ? a >> off : (a >> off) & ((1u << wd) - 1));
      if (d.o == op::s_bfe_i32 && wd > 0 && wd < 32 && ((r >> (wd - 1)) & 1)) r |= ~0u << wd;
      logic32(r);
      break;
    }
    case op::s_bfe_u64: case op::s_bfe_i64: {  // offset b[5:0], width b[22:16]
      const unsigned off = b & 63, wd = (b >> 16) & 0x7F;
      const std::uint64_t x = a64();
      std::uint64_t r = wd == 0 ? 0ull : (wd >= 64 ? x >> off : (x >> off) & ((1ull << wd) - 1));
      if (d.o == op::s_bfe_i64 && wd > 0 && wd < 64 && ((r >> (wd - 1)) & 1)) r |= ~0ull << wd;
      logic64(r);
      break;
    }
    case op::s_bfm_b32: put(((1u << (a & 31)) - 1) << (b & 31)); break;
    case op::s_bfm_b64: put64(((1ull << (a & 63)) - 1) << (b & 63)); break;
    case op::s_mul_i32: put(a * b); break;
    case op::s_mul_hi_u32: put(static_cast<std::uint32_t>((std::uint64_t(a) * b) >> 32)); break;
    case op::s_mul_hi_i32: put(static_cast<std::uint32_t>(static_cast<std::uint64_t>(std::int64_t(ia) * ib) >> 32)); break;
    case op::s_cselect_b32: put(w.scc ? a : b); break;
    case op::s_cselect_b64: put64(w.scc ? a64() : b64()); break;
    case op::s_add_nc_u64: put64(a64() + b64()); break;
    case op::s_sub_nc_u64: put64(a64() - b64()); break;
    case op::s_mul_u64: put64(a64() * b64()); break;
    case op::s_pack_ll_b32_b16: put((a & 0xFFFF) | (b << 16)); break;
    case op::s_pack_lh_b32_b16: put((a & 0xFFFF) | (b & 0xFFFF0000u)); break;
    case op::s_pack_hh_b32_b16: put((a >> 16) | (b & 0xFFFF0000u)); break;
    case op::s_pack_hl_b32_b16: put((a >> 16) | (b << 16)); break;
    // ---- SALU float (gfx12): the VALU's arithmetic (round to nearest even, denormals kept)
    case op::s_add_f32: put(u32(f32(a) + f32(b))); break;
    case op::s_sub_f32: put(u32(f32(a) - f32(b))); break;
    case op::s_mul_f32: put(u32(f32(a) * f32(b))); break;
    case op::s_min_num_f32: put(u32(fp::vmin_num(f32(a), f32(b)))); break;
    case op::s_max_num_f32: put(u32(fp::vmax_num(f32(a), f32(b)))); break;
    case op::s_fmac_f32: put(u32(std::fma(f32(a), f32(b), f32(kd)))); break;
    case op::s_fmaak_f32: put(u32(std::fma(f32(a), f32(b), f32(d.literal)))); break;
    case op::s_fmamk_f32: put(u32(std::fma(f32(a), f32(d.literal), f32(b)))); break;
    case op::s_ceil_f32: put(u32(std::ceil(f32(a)))); break;
    case op::s_floor_f32: put(u32(std::floor(f32(a)))); break;
    case op::s_trunc_f32: put(u32(std::trunc(f32(a)))); break;
    case op::s_rndne_f32: put(u32(std::nearbyint(f32(a)))); break;
    case op::s_cvt_f32_i32: put(u32(static_cast<float>(ia))); break;
    case op::s_cvt_f32_u32: put(u32(static_cast<float>(a))); break;
    case op::s_cvt_i32_f32: put(static_cast<std::uint32_t>(fp::to_int<std::int32_t>(f32(a)))); break;
    case op::s_cvt_u32_f32: put(fp::to_int<std::uint32_t>(f32(a))); break;
    case op::s_minimum_f32: put(u32(fp::minimum(f32(a), f32(b)))); break;
    case op::s_maximum_f32: put(u32(fp::maximum(f32(a), f32(b)))); break;
    case op::s_cvt_pk_rtz_f16_f32: put(std::uint32_t(detail::f2h_rtz(f32(a))) | std::uint32_t(detail::f2h_rtz(f32(b))) << 16); break;
    // ---- SALU f16 (gfx12): bits [15:0] of each source (an inline constant is the f16 one), the
    // result in bits [15:0] with [31:16] zeroed (RDNA4 ISA guide, "SALU floating point")
    case op::s_add_f16: put(detail::d2h(detail::h2d(h(0)) + detail::h2d(h(1)))); break;
    case op::s_sub_f16: put(detail::d2h(detail::h2d(h(0)) - detail::h2d(h(1)))); break;
    case op::s_mul_f16: put(detail::d2h(detail::h2d(h(0)) * detail::h2d(h(1)))); break;  // exact in double, one rounding
    case op::s_fmac_f16: put(detail::hfma(h(0), h(1), static_cast<std::uint16_t>(kd))); break;
    case op::s_min_num_f16: put(detail::hmin_num(h(0), h(1))); break;
    case op::s_max_num_f16: put(detail::hmax_num(h(0), h(1))); break;
    case op::s_minimum_f16: put(detail::hminimum(h(0), h(1))); break;
    case op::s_maximum_f16: put(detail::hmaximum(h(0), h(1))); break;
    case op::s_ceil_f16: put(detail::d2h(std::ceil(detail::h2d(h(0))))); break;
    case op::s_floor_f16: put(detail::d2h(std::floor(detail::h2d(h(0))))); break;
    case op::s_trunc_f16: put(detail::d2h(std::trunc(detail::h2d(h(0))))); break;
    case op::s_rndne_f16: put(detail::d2h(std::nearbyint(detail::h2d(h(0))))); break;
    case op::s_cvt_f16_f32: put(detail::d2h(f32(a))); break;  // float → f16: one rounding (RNE)
    case op::s_cvt_f32_f16: put(u32(detail::h2f(h(0)))); break;
    case op::s_cvt_hi_f32_f16: put(u32(detail::h2f(static_cast<std::uint16_t>(a >> 16)))); break;
    // ---- SOPC
    case op::s_cmp_f32: w.scc = fp::fcmp(d.aux, f32(a), f32(b)); break;
    case op::s_cmp_f16: w.scc = fp::fcmp(d.aux, detail::h2f(h(0)), detail::h2f(h(1))); break;
    case op::s_cmp_i32: w.scc = detail::cmp6(d.aux, ia, ib); break;
    case op::s_cmp_u32: w.scc = detail::cmp6(d.aux, a, b); break;
    case op::s_cmp_u64: w.scc = detail::cmp6(d.aux, a64(), b64()); break;
    case op::s_bitcmp0_b32: w.scc = ((a >> (b & 31)) & 1) == 0; break;
    case op::s_bitcmp1_b32: w.scc = ((a >> (b & 31)) & 1) == 1; break;
    case op::s_bitcmp0_b64: w.scc = ((a64() >> (b & 63)) & 1) == 0; break;
    case op::s_bitcmp1_b64: w.scc = ((a64() >> (b & 63)) & 1) == 1; break;
    // ---- SOPK
    case op::s_movk_i32: put(static_cast<std::uint32_t>(d.imm)); break;  // sign-extended
    case op::s_cmovk_i32: if (w.scc) put(static_cast<std::uint32_t>(d.imm)); break;
    case op::s_cmpk_i32: w.scc = detail::cmp6(d.aux, static_cast<std::int32_t>(kd), d.imm); break;
    case op::s_cmpk_u32: w.scc = detail::cmp6(d.aux, kd, k); break;
    case op::s_addk_i32: {
      const std::int64_t r = std::int64_t(static_cast<std::int32_t>(kd)) + d.imm;
      put(static_cast<std::uint32_t>(r));
      w.scc = r != static_cast<std::int32_t>(r);
      break;
    }
    case op::s_mulk_i32: put(kd * static_cast<std::uint32_t>(d.imm)); break;
    case op::s_waitcnt_vscnt: case op::s_waitcnt_vmcnt: case op::s_waitcnt_expcnt: case op::s_waitcnt_lgkmcnt: break;
    default: unsupported(w, d);
  }
  return false;
}

inline bool interpreter::exec_sopp(wave& w, const insn& d) {
  const auto jump = [&](bool taken) {
    if (taken) w.pc = w.pc + 4 + static_cast<std::int64_t>(static_cast<std::int16_t>(d.imm)) * 4;
    return taken;
  };
  switch (d.o) {
    case op::s_nop: case op::s_clause: case op::s_delay_alu: case op::s_waitcnt_depctr: case op::s_waitcnt:
    case op::s_wait_idle: case op::s_set_inst_prefetch_distance: case op::s_sleep: case op::s_setprio:
    case op::s_wait_loadcnt: case op::s_wait_storecnt: case op::s_wait_samplecnt: case op::s_wait_bvhcnt:
    case op::s_wait_expcnt: case op::s_wait_dscnt: case op::s_wait_kmcnt: case op::s_wait_loadcnt_dscnt:
    case op::s_wait_storecnt_dscnt: case op::s_wait_alu:
    case op::s_icache_inv:
      return false;
    case op::s_sendmsg: return false;  // DEALLOC_VGPRS and friends: nothing to do here
    case op::s_endpgm: w.done = true; return true;
    case op::s_barrier: ++w.barrier_signals; w.at_barrier = true; return false;  // signal + wait
    case op::s_barrier_wait: w.at_barrier = true; return false;  // gfx12 split barrier: wait

    case op::s_branch: return jump(true);
    case op::s_cbranch_scc0: return jump(!w.scc);
    case op::s_cbranch_scc1: return jump(w.scc);
    case op::s_cbranch_vccz: return jump(w.vcc() == 0);
    case op::s_cbranch_vccnz: return jump(w.vcc() != 0);
    case op::s_cbranch_execz: return jump(w.exec() == 0);
    case op::s_cbranch_execnz: return jump(w.exec() != 0);
    case op::s_trap: {
      char b[96];
      std::snprintf(b, sizeof b, "s_trap %d at pc 0x%llx", d.imm & 0xFF, static_cast<unsigned long long>(w.pc));
      throw isa_fault{w.pc, b};
    }
    case op::s_code_end: unsupported(w, d, "s_code_end executed (ran past the end of the kernel)");
    default: unsupported(w, d);
  }
}

inline void interpreter::exec_smem(wave& w, const insn& d) {
  unsigned dwords = 0, sub = 0;  // sub: a sub-dword load (gfx12), its byte width
  bool sext = false;
  switch (d.o) {
    case op::s_load_b32: dwords = 1; break;
    case op::s_load_b64: dwords = 2; break;
    case op::s_load_b96: dwords = 3; break;
    case op::s_load_b128: dwords = 4; break;
    case op::s_load_b256: dwords = 8; break;
    case op::s_load_b512: dwords = 16; break;
    case op::s_load_i8: sub = 1, sext = true; break;
    case op::s_load_u8: sub = 1; break;
    case op::s_load_i16: sub = 2, sext = true; break;
    case op::s_load_u16: sub = 2; break;
    case op::s_dcache_inv: case op::s_gl1_inv: return;  // caches are not modelled
    case op::s_buffer_load_b32: case op::s_buffer_load_b64: case op::s_buffer_load_b96: case op::s_buffer_load_b128:
    case op::s_buffer_load_b256: case op::s_buffer_load_b512: case op::s_buffer_load_i8: case op::s_buffer_load_u8:
    case op::s_buffer_load_i16: case op::s_buffer_load_u16:
      exec_s_buffer_load(w, d);  // emu/isa/exec_buffer.hpp
      return;
    default: unsupported(w, d);
  }
  const std::uint64_t base = (std::uint64_t(w.s[d.src[0] + 1]) << 32 | w.s[d.src[0]]) & 0xFFFFFFFFFFFFull;
  const std::uint64_t va = base + static_cast<std::uint64_t>(static_cast<std::int64_t>(d.imm)) +
                           (d.soff == op_null ? 0u : sget(w, d, d.soff));
  if (sub != 0) {
    std::uint32_t v = 0;
    std::memcpy(&v, mem<const std::byte>(va, sub, false), sub);
    if (sext) v = sub == 1 ? static_cast<std::uint32_t>(std::int32_t(std::int8_t(v))) : static_cast<std::uint32_t>(std::int32_t(std::int16_t(v)));
    sset(w, d.dst, v);
    return;
  }
  const std::uint64_t aligned = va & ~3ull;  // dword loads ignore the low two address bits
  const auto* p = mem<const std::uint32_t>(aligned, dwords * 4ull, false);
  for (unsigned i = 0; i < dwords; ++i) sset(w, d.dst + i, p[i]);
}

}  // namespace aqueduct::emu::isa
