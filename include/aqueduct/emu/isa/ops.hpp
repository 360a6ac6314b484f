// aqueduct/emu/isa/ops.hpp — the generation-neutral operations the interpreter executes.
//
// Layer: emu. Each generation's decoder (emu/isa/gfx11.hpp, gfx12.hpp; gfx9 the same way) maps
// its (encoding, opcode) pairs onto these operations, so the semantics are written once for
// every generation. Names are the gfx11 mnemonics (LLVM's spelling); a generation that spells
// an operation differently (gfx9 `s_andn2_b32`, gfx12 `v_max_num_f32`) maps its opcode onto the
// same `op` in its table. Compares are one op per operand type, the condition in `insn::aux`.
// The operand kinds say how wide each operand is and how an inline constant reads for it
// (an f64 source sees 1.0 as 0x3FF0000000000000, an f16 source as 0x3C00): the interpreter
// and the disassembler of tests/emu/isa read them.
// Adding an operation: append it here (with its kinds), give it semantics in
// emu/isa/exec_*.hpp, rerun scripts/isa-opcodes.py for each target, and the oracle test
// (tests/emu/isa/decode.cpp) checks the opcode against llvm-mc-19.
// Thread safety: constants only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>

namespace aqueduct::emu::isa {

// Operand kinds: width and how inline constants read.
enum class kind : std::uint8_t {
  none,
  b32, f32, b64, f64, b16, f16,
  pk16,            // two 16-bit halves (VOP3P)
  mask,            // a lane mask: VCC or SGPRs (one SGPR in wave32, a pair in wave64)
  s32,             // a scalar destination of a vector instruction (v_readlane_b32)
  b96, b128, b256, b512,
};
[[nodiscard]] constexpr unsigned dwords_of(kind k) noexcept {
  switch (k) {
    case kind::none: return 0;
    case kind::b64: case kind::f64: return 2;
    case kind::b96: return 3;
    case kind::b128: return 4;
    case kind::b256: return 8;
    case kind::b512: return 16;
    default: return 1;
  }
}
[[nodiscard]] constexpr bool is_float(kind k) noexcept {
  return k == kind::f32 || k == kind::f64 || k == kind::f16;
}

// X(name, dst, src0, src1, src2). SOPP/SOPK/memory operations list their data operands.
// clang-format off
#define AQUEDUCT_ISA_OPS(X) \
  /* SOP1 */ \
  X(s_mov_b32, b32, b32, none, none) X(s_mov_b64, b64, b64, none, none) \
  X(s_cmov_b32, b32, b32, none, none) X(s_cmov_b64, b64, b64, none, none) \
  X(s_not_b32, b32, b32, none, none) X(s_not_b64, b64, b64, none, none) \
  X(s_brev_b32, b32, b32, none, none) X(s_brev_b64, b64, b64, none, none) \
  X(s_ctz_i32_b32, b32, b32, none, none) X(s_ctz_i32_b64, b32, b64, none, none) \
  X(s_clz_i32_u32, b32, b32, none, none) X(s_clz_i32_u64, b32, b64, none, none) \
  X(s_cls_i32, b32, b32, none, none) \
  X(s_bcnt0_i32_b32, b32, b32, none, none) X(s_bcnt0_i32_b64, b32, b64, none, none) \
  X(s_bcnt1_i32_b32, b32, b32, none, none) X(s_bcnt1_i32_b64, b32, b64, none, none) \
  X(s_sext_i32_i8, b32, b32, none, none) X(s_sext_i32_i16, b32, b32, none, none) \
  X(s_abs_i32, b32, b32, none, none) \
  X(s_bitset0_b32, b32, b32, none, none) X(s_bitset1_b32, b32, b32, none, none) \
  X(s_and_saveexec_b32, b32, b32, none, none) X(s_and_saveexec_b64, b64, b64, none, none) \
  X(s_or_saveexec_b32, b32, b32, none, none) X(s_or_saveexec_b64, b64, b64, none, none) \
  X(s_xor_saveexec_b32, b32, b32, none, none) X(s_xor_saveexec_b64, b64, b64, none, none) \
  X(s_and_not1_saveexec_b32, b32, b32, none, none) X(s_and_not1_saveexec_b64, b64, b64, none, none) \
  X(s_or_not1_saveexec_b32, b32, b32, none, none) X(s_or_not1_saveexec_b64, b64, b64, none, none) \
  X(s_and_not0_saveexec_b32, b32, b32, none, none) X(s_and_not0_saveexec_b64, b64, b64, none, none) \
  X(s_getpc_b64, b64, none, none, none) X(s_setpc_b64, none, b64, none, none) \
  X(s_swappc_b64, b64, b64, none, none) \
  X(s_barrier_signal, none, b32, none, none) X(s_barrier_signal_isfirst, none, b32, none, none) \
  /* SOP2 */ \
  X(s_add_u32, b32, b32, b32, none) X(s_sub_u32, b32, b32, b32, none) \
  X(s_add_i32, b32, b32, b32, none) X(s_sub_i32, b32, b32, b32, none) \
  X(s_addc_u32, b32, b32, b32, none) X(s_subb_u32, b32, b32, b32, none) \
  X(s_absdiff_i32, b32, b32, b32, none) \
  X(s_lshl_b32, b32, b32, b32, none) X(s_lshl_b64, b64, b64, b32, none) \
  X(s_lshr_b32, b32, b32, b32, none) X(s_lshr_b64, b64, b64, b32, none) \
  X(s_ashr_i32, b32, b32, b32, none) X(s_ashr_i64, b64, b64, b32, none) \
  X(s_lshl1_add_u32, b32, b32, b32, none) X(s_lshl2_add_u32, b32, b32, b32, none) \
  X(s_lshl3_add_u32, b32, b32, b32, none) X(s_lshl4_add_u32, b32, b32, b32, none) \
  X(s_min_i32, b32, b32, b32, none) X(s_min_u32, b32, b32, b32, none) \
  X(s_max_i32, b32, b32, b32, none) X(s_max_u32, b32, b32, b32, none) \
  X(s_and_b32, b32, b32, b32, none) X(s_and_b64, b64, b64, b64, none) \
  X(s_or_b32, b32, b32, b32, none) X(s_or_b64, b64, b64, b64, none) \
  X(s_xor_b32, b32, b32, b32, none) X(s_xor_b64, b64, b64, b64, none) \
  X(s_nand_b32, b32, b32, b32, none) X(s_nand_b64, b64, b64, b64, none) \
  X(s_nor_b32, b32, b32, b32, none) X(s_nor_b64, b64, b64, b64, none) \
  X(s_xnor_b32, b32, b32, b32, none) X(s_xnor_b64, b64, b64, b64, none) \
  X(s_and_not1_b32, b32, b32, b32, none) X(s_and_not1_b64, b64, b64, b64, none) \
  X(s_or_not1_b32, b32, b32, b32, none) X(s_or_not1_b64, b64, b64, b64, none) \
  X(s_bfe_u32, b32, b32, b32, none) X(s_bfe_i32, b32, b32, b32, none) \
  X(s_bfe_u64, b64, b64, b32, none) X(s_bfe_i64, b64, b64, b32, none) \
  X(s_bfm_b32, b32, b32, b32, none) X(s_bfm_b64, b64, b32, b32, none) \
  X(s_mul_i32, b32, b32, b32, none) X(s_mul_hi_u32, b32, b32, b32, none) \
  X(s_mul_hi_i32, b32, b32, b32, none) \
  X(s_cselect_b32, b32, b32, b32, none) X(s_cselect_b64, b64, b64, b64, none) \
  X(s_add_nc_u64, b64, b64, b64, none) X(s_sub_nc_u64, b64, b64, b64, none) X(s_mul_u64, b64, b64, b64, none) \
  X(s_pack_ll_b32_b16, b32, b32, b32, none) X(s_pack_lh_b32_b16, b32, b32, b32, none) \
  X(s_pack_hh_b32_b16, b32, b32, b32, none) X(s_pack_hl_b32_b16, b32, b32, b32, none) \
  /* SALU float (gfx12): SOP2, SOP1; s_fmac_f32 reads its destination, s_fmaak/s_fmamk a literal */ \
  X(s_add_f32, f32, f32, f32, none) X(s_sub_f32, f32, f32, f32, none) X(s_mul_f32, f32, f32, f32, none) \
  X(s_min_num_f32, f32, f32, f32, none) X(s_max_num_f32, f32, f32, f32, none) \
  X(s_fmac_f32, f32, f32, f32, none) X(s_fmaak_f32, f32, f32, f32, none) X(s_fmamk_f32, f32, f32, f32, none) \
  X(s_ceil_f32, f32, f32, none, none) X(s_floor_f32, f32, f32, none, none) \
  X(s_trunc_f32, f32, f32, none, none) X(s_rndne_f32, f32, f32, none, none) \
  X(s_cvt_f32_i32, f32, b32, none, none) X(s_cvt_f32_u32, f32, b32, none, none) \
  X(s_cvt_i32_f32, b32, f32, none, none) X(s_cvt_u32_f32, b32, f32, none, none) \
  X(s_minimum_f32, f32, f32, f32, none) X(s_maximum_f32, f32, f32, f32, none) \
  X(s_cvt_pk_rtz_f16_f32, b32, f32, f32, none) \
  /* SALU f16 (gfx12): sources and result in bits [15:0], the result's [31:16] zeroed */ \
  X(s_add_f16, f16, f16, f16, none) X(s_sub_f16, f16, f16, f16, none) X(s_mul_f16, f16, f16, f16, none) \
  X(s_fmac_f16, f16, f16, f16, none) X(s_min_num_f16, f16, f16, f16, none) X(s_max_num_f16, f16, f16, f16, none) \
  X(s_minimum_f16, f16, f16, f16, none) X(s_maximum_f16, f16, f16, f16, none) \
  X(s_ceil_f16, f16, f16, none, none) X(s_floor_f16, f16, f16, none, none) \
  X(s_trunc_f16, f16, f16, none, none) X(s_rndne_f16, f16, f16, none, none) \
  X(s_cvt_f16_f32, f16, f32, none, none) X(s_cvt_f32_f16, f32, f16, none, none) X(s_cvt_hi_f32_f16, f32, b32, none, none) \
  /* SOPC: s_cmp_<cond>_<type>, condition in aux (0 eq, 1 lg, 2 gt, 3 ge, 4 lt, 5 le) */ \
  X(s_cmp_i32, none, b32, b32, none) X(s_cmp_u32, none, b32, b32, none) X(s_cmp_u64, none, b64, b64, none) \
  X(s_bitcmp0_b32, none, b32, b32, none) X(s_bitcmp1_b32, none, b32, b32, none) \
  X(s_bitcmp0_b64, none, b64, b32, none) X(s_bitcmp1_b64, none, b64, b32, none) \
  X(s_cmp_f32, none, f32, f32, none) X(s_cmp_f16, none, f16, f16, none) /* gfx12 s_cmp_<cond>_f32/f16: the VOPC float condition in aux */ \
  /* SOPK (simm16 in insn::imm; cmpk condition in aux) */ \
  X(s_movk_i32, b32, none, none, none) X(s_cmovk_i32, b32, none, none, none) \
  X(s_cmpk_i32, none, b32, none, none) X(s_cmpk_u32, none, b32, none, none) \
  X(s_addk_i32, b32, none, none, none) X(s_mulk_i32, b32, none, none, none) \
  X(s_waitcnt_vscnt, none, b32, none, none) X(s_waitcnt_vmcnt, none, b32, none, none) \
  X(s_waitcnt_expcnt, none, b32, none, none) X(s_waitcnt_lgkmcnt, none, b32, none, none) \
  /* SOPP */ \
  X(s_nop, none, none, none, none) X(s_clause, none, none, none, none) \
  X(s_delay_alu, none, none, none, none) X(s_waitcnt_depctr, none, none, none, none) \
  X(s_waitcnt, none, none, none, none) X(s_wait_idle, none, none, none, none) \
  X(s_set_inst_prefetch_distance, none, none, none, none) X(s_sleep, none, none, none, none) \
  X(s_setprio, none, none, none, none) X(s_sendmsg, none, none, none, none) \
  X(s_icache_inv, none, none, none, none) \
  X(s_endpgm, none, none, none, none) X(s_barrier, none, none, none, none) \
  X(s_branch, none, none, none, none) \
  X(s_cbranch_scc0, none, none, none, none) X(s_cbranch_scc1, none, none, none, none) \
  X(s_cbranch_vccz, none, none, none, none) X(s_cbranch_vccnz, none, none, none, none) \
  X(s_cbranch_execz, none, none, none, none) X(s_cbranch_execnz, none, none, none, none) \
  X(s_trap, none, none, none, none) X(s_code_end, none, none, none, none) \
  X(s_barrier_wait, none, none, none, none) \
  X(s_wait_loadcnt, none, none, none, none) X(s_wait_storecnt, none, none, none, none) \
  X(s_wait_samplecnt, none, none, none, none) X(s_wait_bvhcnt, none, none, none, none) \
  X(s_wait_expcnt, none, none, none, none) X(s_wait_dscnt, none, none, none, none) \
  X(s_wait_kmcnt, none, none, none, none) X(s_wait_loadcnt_dscnt, none, none, none, none) \
  X(s_wait_storecnt_dscnt, none, none, none, none) X(s_wait_alu, none, none, none, none) \
  /* SMEM: dst, base (src0), soffset in insn::soff */ \
  X(s_load_b32, b32, b64, none, none) X(s_load_b64, b64, b64, none, none) \
  X(s_load_b128, b128, b64, none, none) X(s_load_b256, b256, b64, none, none) \
  X(s_load_b512, b512, b64, none, none) X(s_load_b96, b96, b64, none, none) \
  X(s_load_i8, b32, b64, none, none) X(s_load_u8, b32, b64, none, none) \
  X(s_load_i16, b32, b64, none, none) X(s_load_u16, b32, b64, none, none) \
  X(s_dcache_inv, none, none, none, none) X(s_gl1_inv, none, none, none, none) \
  /* VOP1 */ \
  X(v_nop, none, none, none, none) X(v_mov_b32, b32, b32, none, none) \
  X(v_readfirstlane_b32, s32, b32, none, none) \
  X(v_cvt_f32_i32, f32, b32, none, none) X(v_cvt_f32_u32, f32, b32, none, none) \
  X(v_cvt_u32_f32, b32, f32, none, none) X(v_cvt_i32_f32, b32, f32, none, none) \
  X(v_cvt_f64_f32, f64, f32, none, none) X(v_cvt_f32_f64, f32, f64, none, none) \
  X(v_cvt_i32_f64, b32, f64, none, none) X(v_cvt_f64_i32, f64, b32, none, none) \
  X(v_cvt_u32_f64, b32, f64, none, none) X(v_cvt_f64_u32, f64, b32, none, none) \
  X(v_cvt_f32_ubyte0, f32, b32, none, none) X(v_cvt_f32_ubyte1, f32, b32, none, none) \
  X(v_cvt_f32_ubyte2, f32, b32, none, none) X(v_cvt_f32_ubyte3, f32, b32, none, none) \
  X(v_cvt_floor_i32_f32, b32, f32, none, none) X(v_cvt_nearest_i32_f32, b32, f32, none, none) \
  X(v_fract_f32, f32, f32, none, none) X(v_trunc_f32, f32, f32, none, none) \
  X(v_ceil_f32, f32, f32, none, none) X(v_rndne_f32, f32, f32, none, none) \
  X(v_floor_f32, f32, f32, none, none) \
  X(v_fract_f64, f64, f64, none, none) X(v_trunc_f64, f64, f64, none, none) \
  X(v_ceil_f64, f64, f64, none, none) X(v_rndne_f64, f64, f64, none, none) \
  X(v_floor_f64, f64, f64, none, none) \
  X(v_exp_f32, f32, f32, none, none) X(v_log_f32, f32, f32, none, none) \
  X(v_rcp_f32, f32, f32, none, none) X(v_rcp_iflag_f32, f32, f32, none, none) \
  X(v_rsq_f32, f32, f32, none, none) X(v_sqrt_f32, f32, f32, none, none) \
  X(v_rcp_f64, f64, f64, none, none) X(v_rsq_f64, f64, f64, none, none) \
  X(v_sqrt_f64, f64, f64, none, none) \
  X(v_sin_f32, f32, f32, none, none) X(v_cos_f32, f32, f32, none, none) \
  X(v_not_b32, b32, b32, none, none) X(v_bfrev_b32, b32, b32, none, none) \
  X(v_clz_i32_u32, b32, b32, none, none) X(v_ctz_i32_b32, b32, b32, none, none) \
  X(v_cls_i32, b32, b32, none, none) \
  X(v_frexp_exp_i32_f32, b32, f32, none, none) X(v_frexp_mant_f32, f32, f32, none, none) \
  X(v_frexp_exp_i32_f64, b32, f64, none, none) X(v_frexp_mant_f64, f64, f64, none, none) \
  /* VOP2 */ \
  /* v_cndmask_b32's sources are typed f32 only so that VOP3/DPP/SDWA abs and neg apply (as sign-bit */ \
  /* operations): LLVM gives V_CNDMASK_B32_e64 source modifiers and folds fabs/fneg of a select's */ \
  /* operands into them, e.g. clang-19's `v_cndmask_b32_e64 v0, v0, |v1|, s[0:1]` for fmaxf(m, fabsf(d)). */ \
  X(v_cndmask_b32, b32, f32, f32, mask) \
  X(v_add_f32, f32, f32, f32, none) X(v_sub_f32, f32, f32, f32, none) \
  X(v_subrev_f32, f32, f32, f32, none) X(v_mul_f32, f32, f32, f32, none) \
  X(v_mul_i32_i24, b32, b32, b32, none) X(v_mul_hi_i32_i24, b32, b32, b32, none) \
  X(v_mul_u32_u24, b32, b32, b32, none) X(v_mul_hi_u32_u24, b32, b32, b32, none) \
  X(v_min_f32, f32, f32, f32, none) X(v_max_f32, f32, f32, f32, none) \
  X(v_min_num_f32, f32, f32, f32, none) X(v_max_num_f32, f32, f32, f32, none) \
  X(v_min_i32, b32, b32, b32, none) X(v_max_i32, b32, b32, b32, none) \
  X(v_min_u32, b32, b32, b32, none) X(v_max_u32, b32, b32, b32, none) \
  X(v_lshlrev_b32, b32, b32, b32, none) X(v_lshrrev_b32, b32, b32, b32, none) \
  X(v_ashrrev_i32, b32, b32, b32, none) \
  X(v_and_b32, b32, b32, b32, none) X(v_or_b32, b32, b32, b32, none) \
  X(v_xor_b32, b32, b32, b32, none) X(v_xnor_b32, b32, b32, b32, none) \
  X(v_add_co_ci_u32, b32, b32, b32, mask) X(v_sub_co_ci_u32, b32, b32, b32, mask) \
  X(v_subrev_co_ci_u32, b32, b32, b32, mask) \
  X(v_add_nc_u32, b32, b32, b32, none) X(v_sub_nc_u32, b32, b32, b32, none) \
  X(v_subrev_nc_u32, b32, b32, b32, none) \
  X(v_fmac_f32, f32, f32, f32, none) X(v_fmamk_f32, f32, f32, f32, none) \
  X(v_fmaak_f32, f32, f32, f32, none) X(v_ldexp_f32, f32, f32, b32, none) \
  /* VOPC: v_cmp[x]_<cond>_<type>, condition in aux (LLVM's 4-bit order F LT EQ LE GT LG GE O U \
     NGE NLG NGT NLE NEQ NLT T for floats; F LT EQ LE GT NE GE T for integers), v_cmpx if \
     insn::cmpx; class: src1 is the class mask */ \
  X(v_cmp_f32, mask, f32, f32, none) X(v_cmp_f64, mask, f64, f64, none) \
  X(v_cmp_i32, mask, b32, b32, none) X(v_cmp_u32, mask, b32, b32, none) \
  X(v_cmp_i64, mask, b64, b64, none) X(v_cmp_u64, mask, b64, b64, none) \
  X(v_cmp_class_f32, mask, f32, b32, none) X(v_cmp_class_f64, mask, f64, b32, none) \
  /* VOP3 */ \
  X(v_fma_f32, f32, f32, f32, f32) X(v_fma_f64, f64, f64, f64, f64) \
  X(v_add_f64, f64, f64, f64, none) X(v_mul_f64, f64, f64, f64, none) \
  X(v_min_f64, f64, f64, f64, none) X(v_max_f64, f64, f64, f64, none) \
  X(v_min_num_f64, f64, f64, f64, none) X(v_max_num_f64, f64, f64, f64, none) \
  X(v_ldexp_f64, f64, f64, b32, none) \
  X(v_mad_u32_u24, b32, b32, b32, b32) X(v_mad_i32_i24, b32, b32, b32, b32) \
  X(v_bfe_u32, b32, b32, b32, b32) X(v_bfe_i32, b32, b32, b32, b32) \
  X(v_bfi_b32, b32, b32, b32, b32) X(v_bfm_b32, b32, b32, b32, none) \
  X(v_alignbit_b32, b32, b32, b32, b32) X(v_alignbyte_b32, b32, b32, b32, b32) \
  X(v_min3_f32, f32, f32, f32, f32) X(v_max3_f32, f32, f32, f32, f32) X(v_med3_f32, f32, f32, f32, f32) \
  X(v_min3_i32, b32, b32, b32, b32) X(v_max3_i32, b32, b32, b32, b32) X(v_med3_i32, b32, b32, b32, b32) \
  X(v_min3_u32, b32, b32, b32, b32) X(v_max3_u32, b32, b32, b32, b32) X(v_med3_u32, b32, b32, b32, b32) \
  X(v_div_fixup_f32, f32, f32, f32, f32) X(v_div_fixup_f64, f64, f64, f64, f64) \
  X(v_div_fmas_f32, f32, f32, f32, f32) X(v_div_fmas_f64, f64, f64, f64, f64) \
  X(v_div_scale_f32, f32, f32, f32, f32) X(v_div_scale_f64, f64, f64, f64, f64) \
  X(v_xad_u32, b32, b32, b32, b32) X(v_lshl_add_u32, b32, b32, b32, b32) \
  X(v_add_lshl_u32, b32, b32, b32, b32) X(v_add3_u32, b32, b32, b32, b32) \
  X(v_lshl_or_b32, b32, b32, b32, b32) X(v_and_or_b32, b32, b32, b32, b32) \
  X(v_or3_b32, b32, b32, b32, b32) X(v_xor3_b32, b32, b32, b32, b32) X(v_perm_b32, b32, b32, b32, b32) \
  X(v_mad_u64_u32, b64, b32, b32, b64) X(v_mad_i64_i32, b64, b32, b32, b64) \
  X(v_add_co_u32, b32, b32, b32, none) X(v_sub_co_u32, b32, b32, b32, none) \
  X(v_subrev_co_u32, b32, b32, b32, none) \
  X(v_add_nc_i32, b32, b32, b32, none) X(v_sub_nc_i32, b32, b32, b32, none) \
  X(v_bcnt_u32_b32, b32, b32, b32, none) \
  X(v_mbcnt_lo_u32_b32, b32, b32, b32, none) X(v_mbcnt_hi_u32_b32, b32, b32, b32, none) \
  X(v_mul_lo_u32, b32, b32, b32, none) X(v_mul_hi_u32, b32, b32, b32, none) \
  X(v_mul_hi_i32, b32, b32, b32, none) \
  X(v_lshlrev_b64, b64, b32, b64, none) X(v_lshrrev_b64, b64, b32, b64, none) \
  X(v_ashrrev_i64, b64, b32, b64, none) \
  X(v_readlane_b32, s32, b32, b32, none) X(v_writelane_b32, b32, b32, b32, none) \
  X(v_trig_preop_f64, f64, f64, b32, none) \
  /* 16-bit VALU (VOP1/VOP2/VOPC/VOP3): halves chosen by the e32 VGPR bit 7 or VOP3 op_sel */ \
  X(v_add_f16, f16, f16, f16, none) X(v_sub_f16, f16, f16, f16, none) \
  X(v_subrev_f16, f16, f16, f16, none) X(v_mul_f16, f16, f16, f16, none) \
  X(v_fmac_f16, f16, f16, f16, none) X(v_fmamk_f16, f16, f16, f16, none) \
  X(v_fmaak_f16, f16, f16, f16, none) X(v_max_f16, f16, f16, f16, none) \
  X(v_min_f16, f16, f16, f16, none) X(v_ldexp_f16, f16, f16, b16, none) \
  X(v_min_num_f16, f16, f16, f16, none) X(v_max_num_f16, f16, f16, f16, none) \
  X(v_fma_f16, f16, f16, f16, f16) X(v_div_fixup_f16, f16, f16, f16, f16) \
  X(v_min3_f16, f16, f16, f16, f16) X(v_max3_f16, f16, f16, f16, f16) X(v_med3_f16, f16, f16, f16, f16) \
  X(v_cvt_f16_f32, f16, f32, none, none) X(v_cvt_f32_f16, f32, f16, none, none) \
  X(v_cvt_f16_i16, f16, b16, none, none) X(v_cvt_f16_u16, f16, b16, none, none) \
  X(v_cvt_i16_f16, b16, f16, none, none) X(v_cvt_u16_f16, b16, f16, none, none) \
  X(v_rcp_f16, f16, f16, none, none) X(v_sqrt_f16, f16, f16, none, none) \
  X(v_rsq_f16, f16, f16, none, none) X(v_log_f16, f16, f16, none, none) \
  X(v_exp_f16, f16, f16, none, none) X(v_floor_f16, f16, f16, none, none) \
  X(v_ceil_f16, f16, f16, none, none) X(v_trunc_f16, f16, f16, none, none) \
  X(v_rndne_f16, f16, f16, none, none) X(v_fract_f16, f16, f16, none, none) \
  X(v_frexp_mant_f16, f16, f16, none, none) X(v_frexp_exp_i16_f16, b16, f16, none, none) \
  X(v_mov_b16, b16, b16, none, none) X(v_not_b16, b16, b16, none, none) \
  X(v_add_nc_u16, b16, b16, b16, none) X(v_sub_nc_u16, b16, b16, b16, none) \
  X(v_mul_lo_u16, b16, b16, b16, none) X(v_lshlrev_b16, b16, b16, b16, none) \
  X(v_lshrrev_b16, b16, b16, b16, none) X(v_ashrrev_i16, b16, b16, b16, none) \
  X(v_max_u16, b16, b16, b16, none) X(v_max_i16, b16, b16, b16, none) \
  X(v_min_u16, b16, b16, b16, none) X(v_min_i16, b16, b16, b16, none) \
  X(v_and_b16, b16, b16, b16, none) X(v_or_b16, b16, b16, b16, none) X(v_xor_b16, b16, b16, b16, none) \
  X(v_cmp_f16, mask, f16, f16, none) X(v_cmp_i16, mask, b16, b16, none) X(v_cmp_u16, mask, b16, b16, none) \
  X(v_cmp_class_f16, mask, f16, b16, none) \
  X(v_cvt_pk_rtz_f16_f32, b32, f32, f32, none) X(v_pack_b32_f16, b32, f16, f16, none) \
  /* VOP3P: packed halves (op_sel / op_sel_hi / neg_lo / neg_hi); mix: f32 or an f16 half per source */ \
  X(v_pk_fma_f16, pk16, pk16, pk16, pk16) X(v_pk_add_f16, pk16, pk16, pk16, none) \
  X(v_pk_mul_f16, pk16, pk16, pk16, none) X(v_pk_min_f16, pk16, pk16, pk16, none) \
  X(v_pk_max_f16, pk16, pk16, pk16, none) \
  X(v_pk_min_num_f16, pk16, pk16, pk16, none) X(v_pk_max_num_f16, pk16, pk16, pk16, none) \
  X(v_pk_add_u16, pk16, pk16, pk16, none) X(v_pk_sub_u16, pk16, pk16, pk16, none) \
  X(v_pk_add_i16, pk16, pk16, pk16, none) X(v_pk_sub_i16, pk16, pk16, pk16, none) \
  X(v_pk_mul_lo_u16, pk16, pk16, pk16, none) X(v_pk_lshlrev_b16, pk16, pk16, pk16, none) \
  X(v_pk_lshrrev_b16, pk16, pk16, pk16, none) X(v_pk_ashrrev_i16, pk16, pk16, pk16, none) \
  X(v_pk_max_u16, pk16, pk16, pk16, none) X(v_pk_min_u16, pk16, pk16, pk16, none) \
  X(v_pk_max_i16, pk16, pk16, pk16, none) X(v_pk_min_i16, pk16, pk16, pk16, none) \
  X(v_fma_mix_f32, f32, b32, b32, b32) X(v_fma_mixlo_f16, b32, b32, b32, b32) X(v_fma_mixhi_f16, b32, b32, b32, b32) \
  X(v_dot2_f32_f16, f32, pk16, pk16, f32) \
  /* gfx90a/gfx942 (CDNA) */ \
  X(v_fmac_f64, f64, f64, f64, none) X(v_mov_b64, b64, b64, none, none) X(v_lshl_add_u64, b64, b64, b32, b64) \
  X(v_pk_fma_f32, b64, b64, b64, b64) X(v_pk_mul_f32, b64, b64, b64, none) X(v_pk_add_f32, b64, b64, b64, none) \
  X(v_pk_mov_b32, b64, b64, b64, none) \
  /* DS: dst, addr (src0), data0 (src1), data1 (src2) */ \
  X(ds_add_u32, none, b32, b32, none) X(ds_sub_u32, none, b32, b32, none) \
  X(ds_min_i32, none, b32, b32, none) X(ds_max_i32, none, b32, b32, none) \
  X(ds_min_u32, none, b32, b32, none) X(ds_max_u32, none, b32, b32, none) \
  X(ds_and_b32, none, b32, b32, none) X(ds_or_b32, none, b32, b32, none) \
  X(ds_xor_b32, none, b32, b32, none) \
  X(ds_add_rtn_u32, b32, b32, b32, none) \
  X(ds_permute_b32, b32, b32, b32, none) X(ds_bpermute_b32, b32, b32, b32, none) /* lane permutes, no LDS */ \
  X(ds_store_b8, none, b32, b32, none) X(ds_store_b16, none, b32, b32, none) \
  X(ds_store_b32, none, b32, b32, none) X(ds_store_b64, none, b32, b64, none) \
  X(ds_store_b96, none, b32, b96, none) X(ds_store_b128, none, b32, b128, none) \
  X(ds_store_2addr_b32, none, b32, b32, b32) X(ds_store_2addr_b64, none, b32, b64, b64) \
  X(ds_store_2addr_stride64_b32, none, b32, b32, b32) X(ds_store_2addr_stride64_b64, none, b32, b64, b64) \
  X(ds_load_u8, b32, b32, none, none) X(ds_load_i8, b32, b32, none, none) \
  X(ds_load_u16, b32, b32, none, none) X(ds_load_i16, b32, b32, none, none) \
  X(ds_load_b32, b32, b32, none, none) X(ds_load_b64, b64, b32, none, none) \
  X(ds_load_b96, b96, b32, none, none) X(ds_load_b128, b128, b32, none, none) \
  X(ds_load_2addr_b32, b64, b32, none, none) X(ds_load_2addr_b64, b128, b32, none, none) \
  X(ds_load_2addr_stride64_b32, b64, b32, none, none) X(ds_load_2addr_stride64_b64, b128, b32, none, none) \
  /* FLAT / GLOBAL / SCRATCH (segment in insn::seg): dst, vaddr (src0), data (src1) */ \
  X(global_load_u8, b32, b64, none, none) X(global_load_i8, b32, b64, none, none) \
  X(global_load_u16, b32, b64, none, none) X(global_load_i16, b32, b64, none, none) \
  X(global_load_b32, b32, b64, none, none) X(global_load_b64, b64, b64, none, none) \
  X(global_load_b96, b96, b64, none, none) X(global_load_b128, b128, b64, none, none) \
  X(global_store_b8, none, b64, b32, none) X(global_store_b16, none, b64, b32, none) \
  X(global_store_b32, none, b64, b32, none) X(global_store_b64, none, b64, b64, none) \
  X(global_store_b96, none, b64, b96, none) X(global_store_b128, none, b64, b128, none) \
  X(global_atomic_swap_b32, b32, b64, b32, none) X(global_atomic_cmpswap_b32, b32, b64, b64, none) \
  X(global_atomic_add_u32, b32, b64, b32, none) X(global_atomic_sub_u32, b32, b64, b32, none) \
  X(global_atomic_min_i32, b32, b64, b32, none) X(global_atomic_min_u32, b32, b64, b32, none) \
  X(global_atomic_max_i32, b32, b64, b32, none) X(global_atomic_max_u32, b32, b64, b32, none) \
  X(global_atomic_and_b32, b32, b64, b32, none) X(global_atomic_or_b32, b32, b64, b32, none) \
  X(global_atomic_xor_b32, b32, b64, b32, none) \
  X(global_atomic_inc_u32, b32, b64, b32, none) X(global_atomic_dec_u32, b32, b64, b32, none) \
  X(global_atomic_swap_b64, b64, b64, b64, none) X(global_atomic_cmpswap_b64, b64, b64, b128, none) \
  X(global_atomic_add_u64, b64, b64, b64, none) X(global_atomic_sub_u64, b64, b64, b64, none) \
  X(global_atomic_min_i64, b64, b64, b64, none) X(global_atomic_min_u64, b64, b64, b64, none) \
  X(global_atomic_max_i64, b64, b64, b64, none) X(global_atomic_max_u64, b64, b64, b64, none) \
  X(global_atomic_and_b64, b64, b64, b64, none) X(global_atomic_or_b64, b64, b64, b64, none) \
  X(global_atomic_xor_b64, b64, b64, b64, none) \
  X(global_atomic_add_f32, b32, b64, f32, none) \
  /* SMEM through a buffer resource (V#): dst, the V# (4 SGPRs) */ \
  X(s_buffer_load_b32, b32, b128, none, none) X(s_buffer_load_b64, b64, b128, none, none) \
  X(s_buffer_load_b96, b96, b128, none, none) X(s_buffer_load_b128, b128, b128, none, none) \
  X(s_buffer_load_b256, b256, b128, none, none) X(s_buffer_load_b512, b512, b128, none, none) \
  X(s_buffer_load_i8, b32, b128, none, none) X(s_buffer_load_u8, b32, b128, none, none) \
  X(s_buffer_load_i16, b32, b128, none, none) X(s_buffer_load_u16, b32, b128, none, none) \
  /* gfx11 MUBUF cache invalidations (no caches are modelled) */ \
  X(buffer_gl0_inv, none, none, none, none) X(buffer_gl1_inv, none, none, none, none) \
  /* DS atomics beyond the first nine (gfx11 names; gfx9's ds_wrxchg* / ds_cmpst* map here, */ \
  /* cmpst with its two data operands swapped): dst (returning forms), addr, data0, data1 */ \
  X(ds_rsub_u32, none, b32, b32, none) X(ds_inc_u32, none, b32, b32, none) X(ds_dec_u32, none, b32, b32, none) \
  X(ds_cmpstore_b32, none, b32, b32, b32) X(ds_add_f32, none, b32, b32, none) \
  X(ds_sub_rtn_u32, b32, b32, b32, none) X(ds_rsub_rtn_u32, b32, b32, b32, none) \
  X(ds_inc_rtn_u32, b32, b32, b32, none) X(ds_dec_rtn_u32, b32, b32, b32, none) \
  X(ds_min_rtn_i32, b32, b32, b32, none) X(ds_max_rtn_i32, b32, b32, b32, none) \
  X(ds_min_rtn_u32, b32, b32, b32, none) X(ds_max_rtn_u32, b32, b32, b32, none) \
  X(ds_and_rtn_b32, b32, b32, b32, none) X(ds_or_rtn_b32, b32, b32, b32, none) X(ds_xor_rtn_b32, b32, b32, b32, none) \
  X(ds_storexchg_rtn_b32, b32, b32, b32, none) X(ds_cmpstore_rtn_b32, b32, b32, b32, b32) \
  X(ds_add_rtn_f32, b32, b32, b32, none) \
  X(ds_add_u64, none, b32, b64, none) X(ds_sub_u64, none, b32, b64, none) X(ds_rsub_u64, none, b32, b64, none) \
  X(ds_inc_u64, none, b32, b64, none) X(ds_dec_u64, none, b32, b64, none) \
  X(ds_min_i64, none, b32, b64, none) X(ds_max_i64, none, b32, b64, none) \
  X(ds_min_u64, none, b32, b64, none) X(ds_max_u64, none, b32, b64, none) \
  X(ds_and_b64, none, b32, b64, none) X(ds_or_b64, none, b32, b64, none) X(ds_xor_b64, none, b32, b64, none) \
  X(ds_cmpstore_b64, none, b32, b64, b64) \
  X(ds_add_rtn_u64, b64, b32, b64, none) X(ds_sub_rtn_u64, b64, b32, b64, none) X(ds_rsub_rtn_u64, b64, b32, b64, none) \
  X(ds_inc_rtn_u64, b64, b32, b64, none) X(ds_dec_rtn_u64, b64, b32, b64, none) \
  X(ds_min_rtn_i64, b64, b32, b64, none) X(ds_max_rtn_i64, b64, b32, b64, none) \
  X(ds_min_rtn_u64, b64, b32, b64, none) X(ds_max_rtn_u64, b64, b32, b64, none) \
  X(ds_and_rtn_b64, b64, b32, b64, none) X(ds_or_rtn_b64, b64, b32, b64, none) X(ds_xor_rtn_b64, b64, b32, b64, none) \
  X(ds_storexchg_rtn_b64, b64, b32, b64, none) X(ds_cmpstore_rtn_b64, b64, b32, b64, b64)
// clang-format on

enum class op : std::uint16_t {
  none,  // not implemented (the instruction faults as unsupported, naming itself)
#define AQUEDUCT_ISA_ENUM(n, d, a, b, c) n,
  AQUEDUCT_ISA_OPS(AQUEDUCT_ISA_ENUM)
#undef AQUEDUCT_ISA_ENUM
      count_
};

struct op_info {
  const char* name;
  kind dst, src[3];
};

namespace detail {
inline constexpr op_info op_infos[] = {
    {"<unsupported>", kind::none, {kind::none, kind::none, kind::none}},
#define AQUEDUCT_ISA_INFO(n, d, a, b, c) {#n, kind::d, {kind::a, kind::b, kind::c}},
    AQUEDUCT_ISA_OPS(AQUEDUCT_ISA_INFO)
#undef AQUEDUCT_ISA_INFO
};
static_assert(std::size(op_infos) == static_cast<std::size_t>(op::count_));
}  // namespace detail

[[nodiscard]] constexpr const op_info& info(op o) noexcept { return detail::op_infos[static_cast<std::size_t>(o)]; }
// A VOPC compare (its result is a lane mask): also executed from its VOP3 form.
[[nodiscard]] constexpr bool is_compare(op o) noexcept { return o != op::none && info(o).dst == kind::mask; }

}  // namespace aqueduct::emu::isa
