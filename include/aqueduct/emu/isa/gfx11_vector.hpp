// aqueduct/emu/isa/gfx11_vector.hpp — gfx11 vector ALU (VOP1/VOP2/VOPC/VOP3, VOPD), vector
// memory (GLOBAL) and LDS (DS).
//
// Layer: emu. Definitions of gfx11_interpreter members (emu/isa/gfx11_interpreter.hpp). VOP1,
// VOP2 and VOPC opcodes are mapped into the VOP3 opcode space (VOPC 0–255, VOP2 256+op, VOP1
// 384+op), so one table serves every form. Inactive lanes are never written; a VOPC or
// carry-out mask has 0 for inactive lanes (RDNA3 ISA guide §6).
#pragma once

#include <aqueduct/emu/isa/gfx11_interpreter.hpp>

namespace aqueduct::emu::isa {

namespace detail {
// f32 compare by the 4-bit code shared by VOPC F..T (LLVM VOPCInstructions.td order).
inline bool fcmp(unsigned code, float a, float b) noexcept {
  const bool un = std::isnan(a) || std::isnan(b);
  switch (code) {
    case 0: return false;
    case 1: return a < b;
    case 2: return a == b;
    case 3: return a <= b;
    case 4: return a > b;
    case 5: return !un && a != b;
    case 6: return a >= b;
    case 7: return !un;
    case 8: return un;
    case 9: return !(a >= b);
    case 10: return un || a == b;
    case 11: return !(a > b);
    case 12: return !(a <= b);
    case 13: return !(a == b);
    case 14: return !(a < b);
    default: return true;
  }
}
template <class T>
bool icmp(unsigned code, T a, T b) noexcept {
  switch (code & 7) {
    case 0: return false;
    case 1: return a < b;
    case 2: return a == b;
    case 3: return a <= b;
    case 4: return a > b;
    case 5: return a != b;
    case 6: return a >= b;
    default: return true;
  }
}
// v_cmp_class_f32 mask bits: 0 sNaN, 1 qNaN, 2 -inf, 3 -normal, 4 -denormal, 5 -0, 6 +0,
// 7 +denormal, 8 +normal, 9 +inf.
inline bool fclass(float x, std::uint32_t mask) noexcept {
  const std::uint32_t b = std::bit_cast<std::uint32_t>(x);
  unsigned k;
  if (std::isnan(x)) k = (b & 0x00400000u) ? 1 : 0;
  else {
    const bool neg = b >> 31;
    switch (std::fpclassify(x)) {
      case FP_INFINITE: k = neg ? 2 : 9; break;
      case FP_ZERO: k = neg ? 5 : 6; break;
      case FP_SUBNORMAL: k = neg ? 4 : 7; break;
      default: k = neg ? 3 : 8; break;
    }
  }
  return (mask >> k) & 1;
}
}  // namespace detail

inline void gfx11_interpreter::exec_valu(wave& w, const insn& d) {
  unsigned op = d.op;
  if (d.e == enc::vop2) op += 256;
  else if (d.e == enc::vop1) op += 384;
  const bool e64 = d.e == enc::vop3;
  if (e64 && (d.omod != 0 || d.clamp)) unsupported(w, d, "VOP3 output modifier (omod/clamp) not modelled");
  const std::uint64_t ex = w.exec();
  const unsigned L = w.lanes;
  // Compares.
  if (op < 256) {
    const unsigned c = op & 0x7F;
    const bool x = (op & 0x80) != 0;
    std::uint64_t r = 0;
    for (unsigned l = 0; l < L; ++l) {
      if (!((ex >> l) & 1)) continue;
      bool t;
      if (c >= 0x10 && c <= 0x1F) t = detail::fcmp(c - 0x10, fsrc(w, d, 0, l), fsrc(w, d, 1, l));
      else if (c >= 0x40 && c <= 0x47) t = detail::icmp<std::int32_t>(c, std::int32_t(vget(w, d, d.src[0], l)), std::int32_t(vget(w, d, d.src[1], l)));
      else if (c >= 0x48 && c <= 0x4F) t = detail::icmp<std::uint32_t>(c, vget(w, d, d.src[0], l), vget(w, d, d.src[1], l));
      else if (c >= 0x50 && c <= 0x57) t = detail::icmp<std::int64_t>(c, std::int64_t(vget64(w, d, d.src[0], l)), std::int64_t(vget64(w, d, d.src[1], l)));
      else if (c >= 0x58 && c <= 0x5F) t = detail::icmp<std::uint64_t>(c, vget64(w, d, d.src[0], l), vget64(w, d, d.src[1], l));
      else if (c == 0x7E) t = detail::fclass(fsrc(w, d, 0, l), vget(w, d, d.src[1], l));
      else unsupported(w, d);
      r |= std::uint64_t(t) << l;
    }
    if (x) w.set_mask(op_exec_lo, r);
    else w.set_mask(e64 ? d.dst : op_vcc_lo, r);
    return;
  }
  // Masks read before any lane writes (the destination may be the same SGPRs).
  const std::uint64_t vcc_in = w.vcc();
  const std::uint64_t src2_mask = e64 ? sget64(w, d, d.src[2]) & (L == 64 ? ~0ull : 0xFFFFFFFFull) : 0;
  std::uint64_t carry = 0;
  const bool carry_op = op == 288 || op == 289 || op == 768 || op == 769 || op == 766 || op == 767 || op == 764;
  auto dst = [&](unsigned l) -> std::uint32_t& { return vr(w, d.dst, l); };
  // Cross-lane reads (result in an SGPR).
  if (op == 386) {  // v_readfirstlane_b32
    unsigned l = ex ? static_cast<unsigned>(std::countr_zero(ex)) : 0;
    sset(w, d.dst, vget(w, d, d.src[0], l));
    return;
  }
  if (op == 864) {  // v_readlane_b32
    sset(w, d.dst, vget(w, d, d.src[0], sget(w, d, d.src[1]) & (L - 1)));
    return;
  }
  for (unsigned l = 0; l < L; ++l) {
    if (!((ex >> l) & 1)) continue;
    const std::uint32_t a = vget(w, d, d.src[0], l);
    auto b = [&] { return vget(w, d, d.src[1], l); };
    auto c = [&] { return vget(w, d, d.src[2], l); };
    auto fa = [&] { return fsrc(w, d, 0, l); };
    auto fb = [&] { return fsrc(w, d, 1, l); };
    auto fc = [&] { return fsrc(w, d, 2, l); };
    switch (op) {
      // ---- VOP2 (256+)
      case 257: dst(l) = (((e64 ? src2_mask : vcc_in) >> l) & 1) ? b() : a; break;  // v_cndmask_b32
      case 259: dst(l) = u(fa() + fb()); break;                                  // v_add_f32
      case 260: dst(l) = u(fa() - fb()); break;                                  // v_sub_f32
      case 261: dst(l) = u(fb() - fa()); break;                                  // v_subrev_f32
      case 264: dst(l) = u(fa() * fb()); break;                                  // v_mul_f32
      case 271: dst(l) = u(std::fmin(fa(), fb())); break;                        // v_min_f32
      case 272: dst(l) = u(std::fmax(fa(), fb())); break;                        // v_max_f32
      case 273: dst(l) = static_cast<std::uint32_t>(std::min(std::int32_t(a), std::int32_t(b()))); break;  // v_min_i32
      case 274: dst(l) = static_cast<std::uint32_t>(std::max(std::int32_t(a), std::int32_t(b()))); break;  // v_max_i32
      case 275: dst(l) = std::min(a, b()); break;                                // v_min_u32
      case 276: dst(l) = std::max(a, b()); break;                                // v_max_u32
      case 280: dst(l) = b() << (a & 31); break;                                 // v_lshlrev_b32
      case 281: dst(l) = b() >> (a & 31); break;                                 // v_lshrrev_b32
      case 282: dst(l) = static_cast<std::uint32_t>(std::int32_t(b()) >> (a & 31)); break;  // v_ashrrev_i32
      case 283: dst(l) = a & b(); break;                                         // v_and_b32
      case 284: dst(l) = a | b(); break;                                         // v_or_b32
      case 285: dst(l) = a ^ b(); break;                                         // v_xor_b32
      case 286: dst(l) = ~(a ^ b()); break;                                      // v_xnor_b32
      case 288: {                                                                // v_add_co_ci_u32
        const std::uint64_t r = std::uint64_t(a) + b() + (((e64 ? src2_mask : vcc_in) >> l) & 1);
        dst(l) = static_cast<std::uint32_t>(r);
        carry |= (r >> 32) << l;
        break;
      }
      case 289: {                                                                // v_sub_co_ci_u32
        const std::uint64_t r = std::uint64_t(a) - b() - (((e64 ? src2_mask : vcc_in) >> l) & 1);
        dst(l) = static_cast<std::uint32_t>(r);
        carry |= ((r >> 32) & 1) << l;
        break;
      }
      case 293: dst(l) = a + b(); break;                                         // v_add_nc_u32
      case 294: dst(l) = a - b(); break;                                         // v_sub_nc_u32
      case 295: dst(l) = b() - a; break;                                         // v_subrev_nc_u32
      case 299: dst(l) = u(std::fma(fa(), fb(), f(dst(l)))); break;              // v_fmac_f32
      case 300: dst(l) = u(std::fma(fa(), f(d.literal), fb())); break;           // v_fmamk_f32
      case 301: dst(l) = u(std::fma(fa(), fb(), f(d.literal))); break;           // v_fmaak_f32
      // ---- VOP1 (384+)
      case 385: dst(l) = a; break;                                               // v_mov_b32
      case 389: dst(l) = u(static_cast<float>(std::int32_t(a))); break;         // v_cvt_f32_i32
      case 390: dst(l) = u(static_cast<float>(a)); break;                        // v_cvt_f32_u32
      case 391: {                                                                // v_cvt_u32_f32 (saturating, NaN → 0)
        const float x = fa();
        dst(l) = std::isnan(x) || x <= 0.0f ? 0u : x >= 4294967296.0f ? 0xFFFFFFFFu : static_cast<std::uint32_t>(x);
        break;
      }
      case 392: {                                                                // v_cvt_i32_f32
        const float x = fa();
        dst(l) = std::isnan(x) ? 0u : x <= -2147483648.0f ? 0x80000000u : x >= 2147483648.0f ? 0x7FFFFFFFu
                                                                            : static_cast<std::uint32_t>(static_cast<std::int32_t>(x));
        break;
      }
      case 417: dst(l) = u(std::trunc(fa())); break;                             // v_trunc_f32
      case 418: dst(l) = u(std::ceil(fa())); break;                              // v_ceil_f32
      case 419: dst(l) = u(std::nearbyint(fa())); break;                         // v_rndne_f32
      case 420: dst(l) = u(std::floor(fa())); break;                             // v_floor_f32
      case 426: case 427: dst(l) = u(1.0f / fa()); break;                        // v_rcp_f32, v_rcp_iflag_f32
      case 430: dst(l) = u(1.0f / std::sqrt(fa())); break;                       // v_rsq_f32
      case 435: dst(l) = u(std::sqrt(fa())); break;                              // v_sqrt_f32
      case 439: dst(l) = ~a; break;                                              // v_not_b32
      case 440: { std::uint32_t r = 0; for (int i = 0; i < 32; ++i) r |= ((a >> i) & 1u) << (31 - i); dst(l) = r; break; }  // v_bfrev_b32
      case 441: dst(l) = a == 0 ? 0xFFFFFFFFu : static_cast<std::uint32_t>(std::countl_zero(a)); break;  // v_clz_i32_u32
      case 442: dst(l) = a == 0 ? 0xFFFFFFFFu : static_cast<std::uint32_t>(std::countr_zero(a)); break;  // v_ctz_i32_b32
      // ---- VOP3 native (512+)
      case 531: dst(l) = u(std::fma(fa(), fb(), fc())); break;                   // v_fma_f32
      case 534: dst(l) = static_cast<std::uint32_t>(((std::uint64_t(a) << 32) | b()) >> (c() & 31)); break;  // v_alignbit_b32
      case 551: {                                                                // v_div_fixup_f32 (q, den, num)
        const float q = fa(), den = fb(), num = fc();
        const bool special = std::isnan(den) || std::isnan(num) || den == 0.0f || std::isinf(den) || std::isinf(num) || num == 0.0f;
        dst(l) = special ? u(num / den) : u(q);
        break;
      }
      case 567: dst(l) = u(std::fma(fa(), fb(), fc())); break;                   // v_div_fmas_f32 (div_scale never scales)
      case 581: dst(l) = (a ^ b()) + c(); break;                                 // v_xad_u32
      case 582: dst(l) = (a << (b() & 31)) + c(); break;                         // v_lshl_add_u32
      case 597: dst(l) = a + b() + c(); break;                                   // v_add3_u32
      case 764: dst(l) = u(fa()); break;  // v_div_scale_f32: operands in range are not rescaled (VCC 0)
      case 766: {                                                                // v_mad_u64_u32
        const std::uint64_t add = vget64(w, d, d.src[2], l);
        const std::uint64_t r = std::uint64_t(a) * b() + add;
        dst(l) = static_cast<std::uint32_t>(r);
        vr(w, d.dst + 1, l) = static_cast<std::uint32_t>(r >> 32);
        carry |= std::uint64_t(r < add) << l;
        break;
      }
      case 768: {                                                                // v_add_co_u32
        const std::uint64_t r = std::uint64_t(a) + b();
        dst(l) = static_cast<std::uint32_t>(r);
        carry |= (r >> 32) << l;
        break;
      }
      case 769: {                                                                // v_sub_co_u32
        const std::uint32_t bb = b();
        dst(l) = a - bb;
        carry |= std::uint64_t(bb > a) << l;
        break;
      }
      case 798: dst(l) = static_cast<std::uint32_t>(std::popcount(a)) + b(); break;  // v_bcnt_u32_b32
      case 799: dst(l) = static_cast<std::uint32_t>(std::popcount(a & ((l >= 32 ? 0xFFFFFFFFu : (1u << l) - 1u)))) + b(); break;  // v_mbcnt_lo_u32_b32
      case 800: dst(l) = static_cast<std::uint32_t>(std::popcount(a & (l <= 32 ? 0u : (l >= 64 ? 0xFFFFFFFFu : (1u << (l - 32)) - 1u)))) + b(); break;  // v_mbcnt_hi_u32_b32
      case 812: dst(l) = a * b(); break;                                         // v_mul_lo_u32
      case 813: dst(l) = static_cast<std::uint32_t>((std::uint64_t(a) * b()) >> 32); break;  // v_mul_hi_u32
      case 828: {                                                                // v_lshlrev_b64
        const std::uint64_t r = vget64(w, d, d.src[1], l) << (a & 63);
        dst(l) = static_cast<std::uint32_t>(r);
        vr(w, d.dst + 1, l) = static_cast<std::uint32_t>(r >> 32);
        break;
      }
      default: unsupported(w, d);
    }
  }
  if (carry_op) w.set_mask(e64 ? d.sdst : op_vcc_lo, carry);
}

// VOPD: two VALU ops issued together; both read their sources before either writes.
inline void gfx11_interpreter::exec_vopd(wave& w, const insn& d) {
  const std::uint64_t ex = w.exec();
  auto one = [&](unsigned op, bool is_y, std::uint32_t a, std::uint32_t b, std::uint32_t old) -> std::uint32_t {
    const float fa = f(a), fb = f(b);
    switch (op) {
      case 0: return u(std::fma(fa, fb, f(old)));        // v_dual_fmac_f32
      case 1: return u(std::fma(fa, fb, f(d.literal)));  // v_dual_fmaak_f32
      case 2: return u(std::fma(fa, f(d.literal), fb));  // v_dual_fmamk_f32
      case 3: return u(fa * fb);                          // v_dual_mul_f32
      case 4: return u(fa + fb);                          // v_dual_add_f32
      case 5: return u(fa - fb);                          // v_dual_sub_f32
      case 6: return u(fb - fa);                          // v_dual_subrev_f32
      case 8: return a;                                   // v_dual_mov_b32
      case 10: return u(std::fmax(fa, fb));               // v_dual_max_f32
      case 11: return u(std::fmin(fa, fb));               // v_dual_min_f32
      case 16: if (is_y) return a + b; break;             // v_dual_add_nc_u32
      case 17: if (is_y) return b << (a & 31); break;     // v_dual_lshlrev_b32
      case 18: if (is_y) return a & b; break;             // v_dual_and_b32
      default: break;
    }
    unsupported(w, d, is_y ? "unsupported VOPD Y opcode" : "unsupported VOPD X opcode");
  };
  const std::uint64_t vcc = w.vcc();
  for (unsigned l = 0; l < w.lanes; ++l) {
    if (!((ex >> l) & 1)) continue;
    const std::uint32_t ax = vget(w, d, d.src[0], l), bx = vget(w, d, d.src[1], l);
    const std::uint32_t ay = vget(w, d, d.srcy[0], l), by = vget(w, d, d.srcy[1], l);
    const std::uint32_t ox = vr(w, d.dst, l), oy = vr(w, d.dsty, l);
    const bool sel = (vcc >> l) & 1;
    const std::uint32_t rx = d.op == 9 ? (sel ? bx : ax) : one(d.op, false, ax, bx, ox);
    const std::uint32_t ry = d.opy == 9 ? (sel ? by : ay) : one(d.opy, true, ay, by, oy);
    vr(w, d.dst, l) = rx;
    vr(w, d.dsty, l) = ry;
  }
}

inline void gfx11_interpreter::exec_flat(wave& w, const insn& d) {
  if (d.seg != 2) unsupported(w, d, d.seg == 1 ? "scratch_* instructions not supported yet" : "flat_* instructions not supported yet");
  const std::uint64_t ex = w.exec();
  const bool saddr = d.soff != op_null && d.soff != 0x7F;
  const std::uint64_t sbase = saddr ? (std::uint64_t(w.s[d.soff + 1]) << 32 | w.s[d.soff]) : 0;
  auto addr = [&](unsigned l) {
    const std::uint64_t base = saddr ? sbase + w.v[d.src[0] * 64 + l]
                                     : (std::uint64_t(w.v[(d.src[0] + 1) * 64 + l]) << 32 | w.v[d.src[0] * 64 + l]);
    return base + static_cast<std::uint64_t>(static_cast<std::int64_t>(d.imm));
  };
  unsigned load = 0, store = 0;
  bool sext = false;
  switch (d.op) {
    case 16: load = 1; break;               // global_load_u8
    case 17: load = 1; sext = true; break;  // global_load_i8
    case 18: load = 2; break;               // global_load_u16
    case 19: load = 2; sext = true; break;  // global_load_i16
    case 20: load = 4; break;               // global_load_b32
    case 21: load = 8; break;               // global_load_b64
    case 22: load = 12; break;              // global_load_b96
    case 23: load = 16; break;              // global_load_b128
    case 24: store = 1; break;              // global_store_b8
    case 25: store = 2; break;              // global_store_b16
    case 26: store = 4; break;              // global_store_b32
    case 27: store = 8; break;              // global_store_b64
    case 28: store = 12; break;             // global_store_b96
    case 29: store = 16; break;             // global_store_b128
    default: break;
  }
  for (unsigned l = 0; l < w.lanes; ++l) {
    if (!((ex >> l) & 1)) continue;
    const std::uint64_t va = addr(l);
    if (load) {
      std::uint32_t buf[4] = {};
      std::memcpy(buf, mem<const std::byte>(w, va, load, false), load);
      if (load == 1) buf[0] = sext ? static_cast<std::uint32_t>(std::int32_t(std::int8_t(buf[0]))) : (buf[0] & 0xFF);
      if (load == 2) buf[0] = sext ? static_cast<std::uint32_t>(std::int32_t(std::int16_t(buf[0]))) : (buf[0] & 0xFFFF);
      for (unsigned i = 0; i < (load + 3) / 4; ++i) vr(w, d.dst + i, l) = buf[i];
    } else if (store) {
      std::uint32_t buf[4];
      for (unsigned i = 0; i < (store + 3) / 4; ++i) buf[i] = w.v[(d.data0 + i) * 64 + l];
      std::memcpy(mem<std::byte>(w, va, store, true), buf, store);
    } else {  // atomics (RMW at once: every access is sequentially consistent here)
      auto* p = mem<std::uint32_t>(w, va, 4, true);
      std::atomic_ref<std::uint32_t> ref(*p);
      const std::uint32_t v = w.v[d.data0 * 64 + l];
      std::uint32_t old;
      switch (d.op) {
        case 51: old = ref.exchange(v); break;   // global_atomic_swap_b32
        case 52: {                               // global_atomic_cmpswap_b32: data = {new, cmp}
          old = w.v[(d.data0 + 1) * 64 + l];
          ref.compare_exchange_strong(old, v);
          break;
        }
        case 53: old = ref.fetch_add(v); break;  // global_atomic_add_u32
        case 54: old = ref.fetch_sub(v); break;  // global_atomic_sub_u32
        case 59: old = ref.fetch_and(v); break;  // global_atomic_and_b32
        case 60: old = ref.fetch_or(v); break;   // global_atomic_or_b32
        case 61: old = ref.fetch_xor(v); break;  // global_atomic_xor_b32
        default: unsupported(w, d);
      }
      if (d.glc) vr(w, d.dst, l) = old;
    }
  }
}

inline void gfx11_interpreter::exec_ds(wave& w, const insn& d) {
  const std::uint64_t ex = w.exec();
  const std::uint32_t off = static_cast<std::uint32_t>(d.imm) | (std::uint32_t(d.off1) << 8);
  for (unsigned l = 0; l < w.lanes; ++l) {
    if (!((ex >> l) & 1)) continue;
    const std::uint32_t a = w.v[d.src[0] * 64 + l];
    const std::uint32_t v0 = w.v[d.data0 * 64 + l];
    switch (d.op) {
      case 13: std::memcpy(lds_at(w, a + off, 4, true), &v0, 4); break;  // ds_store_b32
      case 54: std::memcpy(&vr(w, d.dst, l), lds_at(w, a + off, 4, false), 4); break;  // ds_load_b32
      case 14: {  // ds_store_2addr_b32: offsets in dwords
        const std::uint32_t v1 = w.v[d.data1 * 64 + l];
        std::memcpy(lds_at(w, a + 4u * static_cast<std::uint32_t>(d.imm), 4, true), &v0, 4);
        std::memcpy(lds_at(w, a + 4u * d.off1, 4, true), &v1, 4);
        break;
      }
      case 55:  // ds_load_2addr_b32
        std::memcpy(&vr(w, d.dst, l), lds_at(w, a + 4u * static_cast<std::uint32_t>(d.imm), 4, false), 4);
        std::memcpy(&vr(w, d.dst + 1, l), lds_at(w, a + 4u * d.off1, 4, false), 4);
        break;
      case 0: {  // ds_add_u32
        std::uint32_t x;
        std::memcpy(&x, lds_at(w, a + off, 4, false), 4);
        x += v0;
        std::memcpy(lds_at(w, a + off, 4, true), &x, 4);
        break;
      }
      default: unsupported(w, d);
    }
  }
}

}  // namespace aqueduct::emu::isa
