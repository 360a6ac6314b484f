// aqueduct/emu/isa/gfx9.hpp — the gfx9/CDNA targets (gfx90a, gfx942) of the interpreter:
// instruction words → the generation-neutral `insn`.
//
// Layer: emu. The gfx9 decoder (emu/isa/gfx9_decode.hpp: fields and LLVM's name for every valid
// opcode) feeds this mapping onto the shared operations of emu/isa/ops.hpp. gfx9 spells many
// operations differently from gfx11 (s_andn2_b32 = s_and_not1_b32, v_add_u32 = v_add_nc_u32,
// v_addc_co_u32 = v_add_co_ci_u32, global_load_dword = global_load_b32, ds_write_b32 =
// ds_store_b32, …); the aliases below are those renames, every other name is looked up as it is.
// A valid opcode whose name maps onto no operation is unsupported (it faults naming itself);
// tests/emu/isa_gfx9_decode.cpp checks every name against LLVM, and the coverage report in
// docs/isa.md lists the unsupported ones.
// Operand numbers become the canonical ones of emu/isa/insn.hpp: gfx9's M0 (124) is 125 there.
// The VOP3 forms of VOP1/VOP2/VOPC opcodes are enc::vop3, SDWA forms enc::sdwa (with their
// selects), DPP forms enc::dpp (not executed).
// Thread safety: pure functions; the name → operation map is built once (static local).
#pragma once

#include <aqueduct/emu/isa/gfx9_decode.hpp>
#include <aqueduct/emu/isa/insn.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

namespace aqueduct::emu::isa {

namespace gfx9_detail {

// gfx9 name (without _e32) → the shared operation's name.
inline constexpr std::pair<std::string_view, std::string_view> aliases[] = {
    // SOP
    {"s_andn2_b32", "s_and_not1_b32"}, {"s_andn2_b64", "s_and_not1_b64"}, {"s_orn2_b32", "s_or_not1_b32"},
    {"s_orn2_b64", "s_or_not1_b64"}, {"s_andn2_saveexec_b64", "s_and_not1_saveexec_b64"},
    {"s_orn2_saveexec_b64", "s_or_not1_saveexec_b64"}, {"s_andn1_saveexec_b64", "s_and_not0_saveexec_b64"},
    {"s_ff1_i32_b32", "s_ctz_i32_b32"}, {"s_ff1_i32_b64", "s_ctz_i32_b64"}, {"s_flbit_i32_b32", "s_clz_i32_u32"},
    {"s_flbit_i32_b64", "s_clz_i32_u64"}, {"s_flbit_i32", "s_cls_i32"},
    {"s_load_dword", "s_load_b32"}, {"s_load_dwordx2", "s_load_b64"}, {"s_load_dwordx4", "s_load_b128"},
    {"s_load_dwordx8", "s_load_b256"}, {"s_load_dwordx16", "s_load_b512"},
    // no-ops here: cache write-back/invalidate (every access is coherent), priorities, sleep,
    // performance levels (s_setprio / s_sleep exist as operations of their own)
    {"s_dcache_wb", "s_dcache_inv"}, {"s_incperflevel", "s_nop"}, {"s_decperflevel", "s_nop"},
    // VOP
    {"v_add_u32", "v_add_nc_u32"}, {"v_sub_u32", "v_sub_nc_u32"}, {"v_subrev_u32", "v_subrev_nc_u32"},
    {"v_addc_co_u32", "v_add_co_ci_u32"}, {"v_subb_co_u32", "v_sub_co_ci_u32"},
    {"v_subbrev_co_u32", "v_subrev_co_ci_u32"}, {"v_add_i32", "v_add_nc_i32"}, {"v_sub_i32", "v_sub_nc_i32"},
    {"v_ffbh_u32", "v_clz_i32_u32"}, {"v_ffbl_b32", "v_ctz_i32_b32"}, {"v_ffbh_i32", "v_cls_i32"},
    {"v_cvt_flr_i32_f32", "v_cvt_floor_i32_f32"}, {"v_cvt_rpi_i32_f32", "v_cvt_nearest_i32_f32"},
    {"v_add_u16", "v_add_nc_u16"}, {"v_sub_u16", "v_sub_nc_u16"},
    // DS
    {"ds_write_b8", "ds_store_b8"}, {"ds_write_b16", "ds_store_b16"}, {"ds_write_b32", "ds_store_b32"},
    {"ds_write_b64", "ds_store_b64"}, {"ds_write_b96", "ds_store_b96"}, {"ds_write_b128", "ds_store_b128"},
    {"ds_write2_b32", "ds_store_2addr_b32"}, {"ds_write2_b64", "ds_store_2addr_b64"},
    {"ds_write2st64_b32", "ds_store_2addr_stride64_b32"}, {"ds_write2st64_b64", "ds_store_2addr_stride64_b64"},
    {"ds_read_u8", "ds_load_u8"}, {"ds_read_i8", "ds_load_i8"}, {"ds_read_u16", "ds_load_u16"},
    {"ds_read_i16", "ds_load_i16"}, {"ds_read_b32", "ds_load_b32"}, {"ds_read_b64", "ds_load_b64"},
    {"ds_read_b96", "ds_load_b96"}, {"ds_read_b128", "ds_load_b128"}, {"ds_read2_b32", "ds_load_2addr_b32"},
    {"ds_read2_b64", "ds_load_2addr_b64"}, {"ds_read2st64_b32", "ds_load_2addr_stride64_b32"},
    {"ds_read2st64_b64", "ds_load_2addr_stride64_b64"},
    {"ds_wrxchg_rtn_b32", "ds_storexchg_rtn_b32"}, {"ds_wrxchg_rtn_b64", "ds_storexchg_rtn_b64"},
    // gfx9's compare-store takes the compare value first (data0) and the new value second; the
    // decoder swaps them into gfx11's order (clang-19's atomicCAS: gfx942 `ds_cmpst_rtn_b32 v8,
    // v0, v5, v4` with v5 the expected value, gfx1100 `ds_cmpstore_rtn_b32 v10, v0, v5, v6`
    // with v6 the expected value).
    {"ds_cmpst_b32", "ds_cmpstore_b32"}, {"ds_cmpst_rtn_b32", "ds_cmpstore_rtn_b32"},
    {"ds_cmpst_b64", "ds_cmpstore_b64"}, {"ds_cmpst_rtn_b64", "ds_cmpstore_rtn_b64"},
    // SMEM through a V#
    {"s_buffer_load_dword", "s_buffer_load_b32"}, {"s_buffer_load_dwordx2", "s_buffer_load_b64"},
    {"s_buffer_load_dwordx4", "s_buffer_load_b128"}, {"s_buffer_load_dwordx8", "s_buffer_load_b256"},
    {"s_buffer_load_dwordx16", "s_buffer_load_b512"},
};

// FLAT/GLOBAL/SCRATCH/MUBUF data names (after the segment prefix) → the global_* operation.
inline constexpr std::pair<std::string_view, std::string_view> vmem[] = {
    {"load_ubyte", "global_load_u8"}, {"load_sbyte", "global_load_i8"}, {"load_ushort", "global_load_u16"},
    {"load_sshort", "global_load_i16"}, {"load_dword", "global_load_b32"}, {"load_dwordx2", "global_load_b64"},
    {"load_dwordx3", "global_load_b96"}, {"load_dwordx4", "global_load_b128"}, {"store_byte", "global_store_b8"},
    {"store_short", "global_store_b16"}, {"store_dword", "global_store_b32"}, {"store_dwordx2", "global_store_b64"},
    {"store_dwordx3", "global_store_b96"}, {"store_dwordx4", "global_store_b128"},
    {"atomic_swap", "global_atomic_swap_b32"}, {"atomic_cmpswap", "global_atomic_cmpswap_b32"},
    {"atomic_add", "global_atomic_add_u32"}, {"atomic_sub", "global_atomic_sub_u32"},
    {"atomic_smin", "global_atomic_min_i32"}, {"atomic_umin", "global_atomic_min_u32"},
    {"atomic_smax", "global_atomic_max_i32"}, {"atomic_umax", "global_atomic_max_u32"},
    {"atomic_and", "global_atomic_and_b32"}, {"atomic_or", "global_atomic_or_b32"},
    {"atomic_xor", "global_atomic_xor_b32"}, {"atomic_inc", "global_atomic_inc_u32"},
    {"atomic_dec", "global_atomic_dec_u32"}, {"atomic_add_f32", "global_atomic_add_f32"},
    {"atomic_swap_x2", "global_atomic_swap_b64"}, {"atomic_cmpswap_x2", "global_atomic_cmpswap_b64"},
    {"atomic_add_x2", "global_atomic_add_u64"}, {"atomic_sub_x2", "global_atomic_sub_u64"},
    {"atomic_smin_x2", "global_atomic_min_i64"}, {"atomic_umin_x2", "global_atomic_min_u64"},
    {"atomic_smax_x2", "global_atomic_max_i64"}, {"atomic_umax_x2", "global_atomic_max_u64"},
    {"atomic_and_x2", "global_atomic_and_b64"}, {"atomic_or_x2", "global_atomic_or_b64"},
    {"atomic_xor_x2", "global_atomic_xor_b64"},
};

constexpr std::string_view fconds[] = {"f", "lt", "eq", "le", "gt", "lg", "ge", "o", "u", "nge", "nlg", "ngt", "nle", "neq", "nlt", "tru"};
constexpr std::string_view iconds[] = {"f", "lt", "eq", "le", "gt", "ne", "ge", "t"};
constexpr std::string_view sconds[] = {"eq", "lg", "gt", "ge", "lt", "le"};

template <std::size_t N>
int index_of(const std::string_view (&list)[N], std::string_view s) {
  for (std::size_t i = 0; i < N; ++i)
    if (list[i] == s) return static_cast<int>(i);
  return -1;
}

// The operation `name` executes, with the compare condition and cmpx flag (aux as in
// opcode_entry: condition in [3:0], bit 4 cmpx).
struct mapped {
  op o = op::none;
  std::uint8_t aux = 0;
};

inline op op_named(std::string_view n) {
  static const std::unordered_map<std::string_view, op> by_name = [] {
    std::unordered_map<std::string_view, op> m;
    for (std::size_t i = 1; i < static_cast<std::size_t>(op::count_); ++i) m.emplace(info(static_cast<op>(i)).name, static_cast<op>(i));
    return m;
  }();
  auto it = by_name.find(n);
  return it == by_name.end() ? op::none : it->second;
}

inline mapped map_name(std::string_view n) {
  if (n.ends_with("_e32")) n.remove_suffix(4);
  if (n.starts_with("s_sendmsg")) return {};  // gfx9 messages (interrupts, GS) are not modelled
  // v_cmp[x]_<cond>_<type> / v_cmp[x]_class_<type>
  if (n.starts_with("v_cmp_") || n.starts_with("v_cmpx_")) {
    const bool x = n[5] == 'x';
    std::string_view rest = n.substr(x ? 7 : 6);
    const auto us = rest.rfind('_');
    const std::string_view cond = rest.substr(0, us), type = rest.substr(us + 1);
    const std::uint8_t cx = x ? 0x10 : 0;
    if (cond == "class") return {op_named("v_cmp_class_" + std::string(type)), cx};
    const bool fp = type[0] == 'f';
    const int c = fp ? index_of(fconds, cond) : index_of(iconds, cond);
    if (c < 0) return {};
    return {op_named("v_cmp_" + std::string(type)), static_cast<std::uint8_t>(c | cx)};
  }
  // s_cmp_<cond>_<type>, s_cmpk_<cond>_<type>
  for (std::string_view pre : {std::string_view("s_cmpk_"), std::string_view("s_cmp_")}) {
    if (!n.starts_with(pre)) continue;
    std::string_view rest = n.substr(pre.size());
    const auto us = rest.find('_');
    const int c = index_of(sconds, rest.substr(0, us));
    if (c < 0) break;
    return {op_named(std::string(pre) + std::string(rest.substr(us + 1))), static_cast<std::uint8_t>(c)};
  }
  for (const auto& [from, to] : aliases)
    if (n == from) return {op_named(to), 0};
  for (std::string_view pre : {std::string_view("global_"), std::string_view("flat_"), std::string_view("scratch_"),
                               std::string_view("buffer_")})
    if (n.starts_with(pre)) {
      const std::string_view rest = n.substr(pre.size());
      for (const auto& [from, to] : vmem)
        if (rest == from) return {op_named(to), 0};
      return {};
    }
  return {op_named(n), 0};
}

// Every row's mapping, keyed by row address (built once).
inline mapped map_row(const gfx9::op_entry* e) {
  static const std::unordered_map<const gfx9::op_entry*, mapped> rows = [] {
    std::unordered_map<const gfx9::op_entry*, mapped> m;
    auto add = [&](const auto& table) {
      for (const gfx9::op_entry& r : table) m.emplace(&r, map_name(r.name));
    };
    add(gfx9::sop2_ops), add(gfx9::sopk_ops), add(gfx9::sop1_ops), add(gfx9::sopc_ops), add(gfx9::sopp_ops);
    add(gfx9::smem_ops), add(gfx9::vop1_ops), add(gfx9::vop2_ops), add(gfx9::vopc_ops), add(gfx9::vop3_ops);
    add(gfx9::vop3p_ops), add(gfx9::ds_ops), add(gfx9::flat_ops), add(gfx9::global_ops), add(gfx9::scratch_ops);
    add(gfx9::mubuf_ops);
    return m;
  }();
  auto it = rows.find(e);
  return it == rows.end() ? mapped{} : it->second;
}

// gfx9 scalar operand number → canonical (M0 124 → 125).
constexpr std::uint16_t canon(std::uint16_t s) noexcept { return s == 124 ? op_m0 : s; }

}  // namespace gfx9_detail

// Decodes one gfx9 instruction for `tg` into the shared form.
[[nodiscard]] inline insn decode_gfx9(const std::uint32_t* w, unsigned avail, gfx9::target tg) noexcept {
  using namespace gfx9_detail;
  const gfx9::insn g = gfx9::decode(w, avail, tg);
  insn d;
  d.words = g.words;
  d.code = g.op;
  d.literal = g.literal;
  d.imm = g.imm;
  d.dst = g.dst;
  d.sdst = g.sdst == gfx9::no_reg ? static_cast<std::uint16_t>(op_vcc_lo) : canon(g.sdst);
  for (int i = 0; i < 3; ++i) d.src[i] = canon(g.src[i]);
  d.abs = g.abs, d.neg = g.neg, d.neg_hi = g.neg_hi, d.opsel = g.op_sel, d.opsel_hi = g.op_sel_hi, d.omod = g.omod;
  d.clamp = g.clamp, d.glc = g.glc, d.slc = g.slc;
  d.data0 = g.data0, d.data1 = g.data1, d.off1 = g.off1, d.sve = g.sve;
  d.sdwa_dst_sel = g.dst_sel, d.sdwa_dst_unused = g.dst_unused;
  d.sdwa_src_sel[0] = g.src_sel[0], d.sdwa_src_sel[1] = g.src_sel[1], d.sdwa_sext = g.sext;
  switch (g.e) {
    case gfx9::enc::sop1: d.e = enc::sop1; d.dst = canon(g.dst); break;
    case gfx9::enc::sop2: d.e = enc::sop2; d.dst = canon(g.dst); break;
    case gfx9::enc::sopk: d.e = enc::sopk; d.dst = canon(g.dst); break;
    case gfx9::enc::sopc: d.e = enc::sopc; break;
    case gfx9::enc::sopp: d.e = enc::sopp; break;
    case gfx9::enc::smem:
      // Offset: an immediate, an SGPR (the offset field names it when imm is 0), or both (soe).
      d.e = enc::smem;
      d.dst = canon(g.dst);
      d.soff = g.soe ? canon(g.saddr) : g.imm_en ? static_cast<std::uint16_t>(op_null) : canon(static_cast<std::uint16_t>(g.imm & 0x7F));
      d.imm = g.imm_en ? g.imm : 0;
      break;
    case gfx9::enc::vop1: case gfx9::enc::vop2: case gfx9::enc::vopc:
      d.e = g.f == gfx9::form::e64 ? enc::vop3 : g.f == gfx9::form::sdwa ? enc::sdwa : g.f == gfx9::form::dpp ? enc::dpp
          : g.e == gfx9::enc::vop1 ? enc::vop1 : g.e == gfx9::enc::vop2 ? enc::vop2 : enc::vopc;
      if (g.e == gfx9::enc::vopc && g.f == gfx9::form::e64) d.dst = canon(g.dst);  // the compare's SGPR destination
      else if (g.e == gfx9::enc::vopc && g.f == gfx9::form::sdwa) d.dst = d.sdst;  // VCC or the SDWA sdst
      break;
    case gfx9::enc::vop3: d.e = enc::vop3; break;
    case gfx9::enc::vop3p: d.e = enc::vop3p; break;
    case gfx9::enc::ds: d.e = enc::ds; d.src[0] = g.addr; break;
    case gfx9::enc::flat: case gfx9::enc::global: case gfx9::enc::scratch:
      d.e = g.e == gfx9::enc::flat ? enc::flat : g.e == gfx9::enc::global ? enc::global : enc::scratch;
      d.src[0] = g.addr;
      d.soff = g.saddr == 0x7F || g.e == gfx9::enc::flat ? static_cast<std::uint16_t>(op_null) : canon(g.saddr);
      break;
    case gfx9::enc::mubuf:
      d.e = enc::mubuf;
      d.src[0] = g.addr;
      d.src[1] = g.srsrc;
      d.src[2] = canon(g.soffset);
      d.mubuf_offen = g.offen, d.mubuf_idxen = g.idxen;
      break;
    default: d.e = enc::invalid; break;
  }
  if (g.entry != nullptr) {
    d.name = g.entry->name;
    const mapped m = map_row(g.entry);
    d.o = m.o;
    d.aux = m.aux & 0xF;
    d.cmpx = (m.aux & 0x10) != 0;
    if (d.o == op::v_readlane_b32 || d.o == op::v_readfirstlane_b32) d.dst = canon(g.dst);  // an SGPR destination
    if (d.o == op::ds_cmpstore_b32 || d.o == op::ds_cmpstore_rtn_b32 || d.o == op::ds_cmpstore_b64 || d.o == op::ds_cmpstore_rtn_b64)
      std::swap(d.data0, d.data1);  // gfx9 ds_cmpst*: compare value first
    // s_buffer_load_*: the V# is an aligned SGPR quad (the SBASE field's low bit is ignored, as
    // LLVM reads it; the same rule as gfx11, emu/isa/gfx11.hpp).
    if (d.e == enc::smem && d.o >= op::s_buffer_load_b32 && d.o <= op::s_buffer_load_u16) d.src[0] &= ~3u;
  } else {
    d.name = gfx9::enc_name(g.e);
    d.e = enc::invalid;
    d.o = op::none;
  }
  // DPP: the second dword holds the control, masks and src0/src1 neg/abs (bits 20-23).
  if (d.e == enc::dpp) {
    d.literal = g.dpp;
    d.neg = static_cast<std::uint8_t>(((g.dpp >> 20) & 1) | (((g.dpp >> 22) & 1) << 1));
    d.abs = static_cast<std::uint8_t>(((g.dpp >> 21) & 1) | (((g.dpp >> 23) & 1) << 1));
  }
  // Not modelled: AGPR data (acc), GDS, LDS-direct loads; they fault as unsupported.
  if (g.acc || g.gds || g.lds) d.o = op::none;
  return d;
}

[[nodiscard]] inline insn decode_gfx942(const std::uint32_t* w, unsigned avail) noexcept {
  return decode_gfx9(w, avail, gfx9::target::gfx942);
}
[[nodiscard]] inline insn decode_gfx90a(const std::uint32_t* w, unsigned avail) noexcept {
  return decode_gfx9(w, avail, gfx9::target::gfx90a);
}

}  // namespace aqueduct::emu::isa
