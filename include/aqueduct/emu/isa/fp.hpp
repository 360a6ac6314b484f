// aqueduct/emu/isa/fp.hpp — floating-point helpers with the GPU's semantics where they differ
// from the host's: min/max (sNaN quieting in IEEE mode, -0 < +0), class masks, conversions
// that saturate, division scaling and fix-up; f16 (as bits) conversions, min/max and fma for the
// 16-bit VALU and gfx12's SALU f16 operations.
//
// Layer: emu. Written from the RDNA3/RDNA4 ISA guides' pseudocode (V_MIN_F32, V_MED3_F32,
// V_CMP_CLASS_F32, V_DIV_SCALE_F32, V_DIV_FIXUP_F32, V_CVT_U32_F32 …), which gfx9 shares for
// these operations. Everything else uses the host's IEEE arithmetic (round to nearest even,
// denormals kept), which is the hardware's for the modes clang's HIP kernels run in.
// Thread safety: pure functions.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace aqueduct::emu::isa::fp {

template <class F> struct bits_of;
template <> struct bits_of<float> { using type = std::uint32_t; static constexpr int mant = 23, bias = 127, emax = 255; };
template <> struct bits_of<double> { using type = std::uint64_t; static constexpr int mant = 52, bias = 1023, emax = 2047; };

template <class F>
[[nodiscard]] inline bool is_snan(F x) noexcept {
  using U = typename bits_of<F>::type;
  return std::isnan(x) && ((std::bit_cast<U>(x) >> (bits_of<F>::mant - 1)) & 1) == 0;
}
template <class F>
[[nodiscard]] inline F quiet(F x) noexcept {
  using U = typename bits_of<F>::type;
  return std::bit_cast<F>(std::bit_cast<U>(x) | (U(1) << (bits_of<F>::mant - 1)));
}
// Biased exponent field.
template <class F>
[[nodiscard]] inline int exponent(F x) noexcept {
  using U = typename bits_of<F>::type;
  return static_cast<int>((std::bit_cast<U>(x) >> bits_of<F>::mant) & bits_of<F>::emax);
}
template <class F>
[[nodiscard]] inline bool lt_neg_zero(F a, F b) noexcept {  // -0 < +0
  return a < b || (a == 0 && b == 0 && std::signbit(a) && !std::signbit(b));
}
template <class F>
[[nodiscard]] inline bool gt_neg_zero(F a, F b) noexcept {  // +0 > -0
  return a > b || (a == 0 && b == 0 && !std::signbit(a) && std::signbit(b));
}
// V_MIN_F32 / V_MAX_F32 (and f64): IEEE mode quiets a signalling NaN and returns it; a quiet NaN
// yields the other operand.
template <class F>
[[nodiscard]] inline F vmin(F a, F b, bool ieee) noexcept {
  if (ieee) {
    if (is_snan(a)) return quiet(a);
    if (is_snan(b)) return quiet(b);
  }
  if (std::isnan(b)) return a;
  if (std::isnan(a)) return b;
  return lt_neg_zero(a, b) ? a : b;
}
template <class F>
[[nodiscard]] inline F vmax(F a, F b, bool ieee) noexcept {
  if (ieee) {
    if (is_snan(a)) return quiet(a);
    if (is_snan(b)) return quiet(b);
  }
  if (std::isnan(b)) return a;
  if (std::isnan(a)) return b;
  return gt_neg_zero(a, b) ? a : b;
}
// gfx12 V_MIN_NUM_F32 / V_MAX_NUM_F32 (RDNA4 guide): a NaN operand yields the other one (both
// NaN: the first, quieted); no IEEE-mode switch.
template <class F>
[[nodiscard]] inline F vmin_num(F a, F b) noexcept {
  if (std::isnan(a) && std::isnan(b)) return quiet(a);
  if (std::isnan(a)) return b;
  if (std::isnan(b)) return a;
  return lt_neg_zero(a, b) ? a : b;
}
template <class F>
[[nodiscard]] inline F vmax_num(F a, F b) noexcept {
  if (std::isnan(a) && std::isnan(b)) return quiet(a);
  if (std::isnan(a)) return b;
  if (std::isnan(b)) return a;
  return gt_neg_zero(a, b) ? a : b;
}
// gfx12 S_MINIMUM_F32 / S_MAXIMUM_F32 (IEEE 754-2019 minimum/maximum, RDNA4 guide): a NaN
// operand gives a NaN (a signalling one quieted; S0's first), and -0 < +0.
template <class F>
[[nodiscard]] inline F minimum(F a, F b) noexcept {
  if (std::isnan(a)) return quiet(a);
  if (std::isnan(b)) return quiet(b);
  return lt_neg_zero(a, b) ? a : b;
}
template <class F>
[[nodiscard]] inline F maximum(F a, F b) noexcept {
  if (std::isnan(a)) return quiet(a);
  if (std::isnan(b)) return quiet(b);
  return gt_neg_zero(a, b) ? a : b;
}
template <class F>
[[nodiscard]] inline F vmed3(F a, F b, F c, bool ieee) noexcept {
  if (std::isnan(a) || std::isnan(b) || std::isnan(c)) return vmin(vmin(a, b, ieee), c, ieee);
  const F mx = vmax(vmax(a, b, ieee), c, ieee);
  if (mx == a) return vmax(b, c, ieee);
  if (mx == b) return vmax(a, c, ieee);
  return vmax(a, b, ieee);
}

// V_CMP_CLASS mask bits: 0 sNaN, 1 qNaN, 2 -inf, 3 -normal, 4 -denormal, 5 -0, 6 +0,
// 7 +denormal, 8 +normal, 9 +inf.
template <class F>
[[nodiscard]] inline bool has_class(F x, std::uint32_t mask) noexcept {
  unsigned k;
  if (std::isnan(x)) k = is_snan(x) ? 0 : 1;
  else {
    const bool neg = std::signbit(x);
    switch (std::fpclassify(x)) {
      case FP_INFINITE: k = neg ? 2 : 9; break;
      case FP_ZERO: k = neg ? 5 : 6; break;
      case FP_SUBNORMAL: k = neg ? 4 : 7; break;
      default: k = neg ? 3 : 8; break;
    }
  }
  return (mask >> k) & 1;
}

// Float → integer, saturating, NaN → 0 (f32_to_u32, f32_to_i32, f64_to_…).
template <class I, class F>
[[nodiscard]] inline I to_int(F x) noexcept {
  if (std::isnan(x)) return 0;
  constexpr F lo = static_cast<F>(std::numeric_limits<I>::min());
  constexpr F hi = static_cast<F>(std::numeric_limits<I>::max());
  if (x <= lo) return std::numeric_limits<I>::min();
  if (x >= hi) return std::numeric_limits<I>::max();
  return static_cast<I>(x);  // truncates toward zero
}

// V_DIV_SCALE_F32/F64: (result, vcc) for S0 (the value scaled), S1 (denominator), S2 (numerator).
template <class F>
[[nodiscard]] inline F div_scale(F s0, F s1, F s2, bool& vcc) noexcept {
  constexpr int scale = std::is_same_v<F, float> ? 64 : 128;
  constexpr int tiny = std::is_same_v<F, float> ? 23 : 53;
  constexpr int near_max = std::is_same_v<F, float> ? 96 : 768;
  vcc = false;
  if (s2 == 0 || s1 == 0) return std::numeric_limits<F>::quiet_NaN();
  if (exponent(s2) - exponent(s1) >= near_max) {
    vcc = true;
    return s0 == s1 ? std::ldexp(s0, scale) : s0;
  }
  if (std::fpclassify(s1) == FP_SUBNORMAL) return std::ldexp(s0, scale);
  if (std::fpclassify(F(1) / s1) == FP_SUBNORMAL && std::fpclassify(s2 / s1) == FP_SUBNORMAL) {
    vcc = true;
    return s0 == s1 ? std::ldexp(s0, scale) : s0;
  }
  if (std::fpclassify(F(1) / s1) == FP_SUBNORMAL) return std::ldexp(s0, -scale);
  if (std::fpclassify(s2 / s1) == FP_SUBNORMAL) {
    vcc = true;
    return s0 == s2 ? std::ldexp(s0, scale) : s0;
  }
  if (exponent(s2) <= tiny) return std::ldexp(s0, scale);
  return s0;
}

// V_DIV_FIXUP_F32/F64: S0 the quotient estimate, S1 the denominator, S2 the numerator.
template <class F>
[[nodiscard]] inline F div_fixup(F q, F den, F num) noexcept {
  using L = std::numeric_limits<F>;
  const bool sign_out = std::signbit(den) != std::signbit(num);
  if (std::isnan(num)) return quiet(num);
  if (std::isnan(den)) return quiet(den);
  if (den == 0 && num == 0) return -L::quiet_NaN();
  if (std::isinf(den) && std::isinf(num)) return -L::quiet_NaN();
  if (den == 0 || std::isinf(num)) return sign_out ? -L::infinity() : L::infinity();
  if (std::isinf(den) || num == 0) return sign_out ? F(-0.0) : F(0.0);
  constexpr int under = std::is_same_v<F, float> ? -150 : -1075;
  if (exponent(num) - exponent(den) < under) return sign_out ? -L::denorm_min() : L::denorm_min();
  if (exponent(den) == bits_of<F>::emax) return sign_out ? -L::max() : L::max();
  return sign_out ? -std::fabs(q) : std::fabs(q);
}

// V_FREXP_MANT / V_FREXP_EXP: mantissa in [0.5, 1) and exponent; inf/NaN keep their value,
// exponent 0.
template <class F>
[[nodiscard]] inline F frexp_mant(F x) noexcept {
  if (std::isinf(x) || std::isnan(x)) return x;
  int e;
  return std::frexp(x, &e);
}
template <class F>
[[nodiscard]] inline std::int32_t frexp_exp(F x) noexcept {
  if (std::isinf(x) || std::isnan(x)) return 0;
  int e;
  (void)std::frexp(x, &e);
  return e;
}

// Float compare conditions (VOPC; gfx12 SOPC s_cmp_*_f32, opcode - 64), in opcode order:
// F LT EQ LE GT LG GE O U NGE NLG NGT NLE NEQ NLT T.
template <class F>
[[nodiscard]] inline bool fcmp(unsigned c, F a, F b) noexcept {
  const bool un = std::isnan(a) || std::isnan(b);
  switch (c) {
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

}  // namespace aqueduct::emu::isa::fp

namespace aqueduct::emu::isa {
// f16 as bits (std::uint16_t): conversions through the host's _Float16 and the GPU's min/max rules.
namespace detail {
inline double h2d(std::uint16_t x) noexcept { return static_cast<double>(std::bit_cast<_Float16>(x)); }
inline float h2f(std::uint16_t x) noexcept { return static_cast<float>(std::bit_cast<_Float16>(x)); }
inline std::uint16_t d2h(double x) noexcept { return std::bit_cast<std::uint16_t>(static_cast<_Float16>(x)); }
inline std::uint16_t ld2h(long double x) noexcept { return std::bit_cast<std::uint16_t>(static_cast<_Float16>(x)); }
inline bool h_nan(std::uint16_t x) noexcept { return (x & 0x7C00) == 0x7C00 && (x & 0x3FF) != 0; }
inline bool h_snan(std::uint16_t x) noexcept { return h_nan(x) && (x & 0x200) == 0; }
inline std::uint16_t h_quiet(std::uint16_t x) noexcept { return x | 0x200; }
// V_MIN_F16 / V_MAX_F16 with the rules of V_MIN_F32 (emu/isa/fp.hpp).
inline std::uint16_t hmin(std::uint16_t a, std::uint16_t b, bool ieee) noexcept {
  if (ieee && h_snan(a)) return h_quiet(a);
  if (ieee && h_snan(b)) return h_quiet(b);
  if (h_nan(b)) return a;
  if (h_nan(a)) return b;
  return fp::lt_neg_zero(h2f(a), h2f(b)) ? a : b;
}
inline std::uint16_t hmax(std::uint16_t a, std::uint16_t b, bool ieee) noexcept {
  if (ieee && h_snan(a)) return h_quiet(a);
  if (ieee && h_snan(b)) return h_quiet(b);
  if (h_nan(b)) return a;
  if (h_nan(a)) return b;
  return fp::gt_neg_zero(h2f(a), h2f(b)) ? a : b;
}
inline std::uint16_t hmin_num(std::uint16_t a, std::uint16_t b) noexcept {
  if (h_nan(a) && h_nan(b)) return h_quiet(a);
  if (h_nan(a)) return b;
  if (h_nan(b)) return a;
  return fp::lt_neg_zero(h2f(a), h2f(b)) ? a : b;
}
inline std::uint16_t hmax_num(std::uint16_t a, std::uint16_t b) noexcept {
  if (h_nan(a) && h_nan(b)) return h_quiet(a);
  if (h_nan(a)) return b;
  if (h_nan(b)) return a;
  return fp::gt_neg_zero(h2f(a), h2f(b)) ? a : b;
}
inline std::uint16_t hfma(std::uint16_t a, std::uint16_t b, std::uint16_t c) noexcept {
  return ld2h(std::fmal(static_cast<long double>(h2d(a)), static_cast<long double>(h2d(b)), static_cast<long double>(h2d(c))));
}
inline std::uint16_t hmed3(std::uint16_t a, std::uint16_t b, std::uint16_t c, bool ieee) noexcept {
  if (h_nan(a) || h_nan(b) || h_nan(c)) return hmin(hmin(a, b, ieee), c, ieee);
  const std::uint16_t mx = hmax(hmax(a, b, ieee), c, ieee);
  if (h2f(mx) == h2f(a)) return hmax(b, c, ieee);
  if (h2f(mx) == h2f(b)) return hmax(a, c, ieee);
  return hmax(a, b, ieee);
}
inline std::uint16_t hminimum(std::uint16_t a, std::uint16_t b) noexcept {  // fp::minimum for f16
  if (h_nan(a)) return h_quiet(a);
  if (h_nan(b)) return h_quiet(b);
  return fp::lt_neg_zero(h2f(a), h2f(b)) ? a : b;
}
inline std::uint16_t hmaximum(std::uint16_t a, std::uint16_t b) noexcept {
  if (h_nan(a)) return h_quiet(a);
  if (h_nan(b)) return h_quiet(b);
  return fp::gt_neg_zero(h2f(a), h2f(b)) ? a : b;
}
// f32 → f16 rounded toward zero (v_cvt_pk_rtz_f16_f32, s_cvt_pk_rtz_f16_f32): the nearest f16,
// stepped back toward zero when it rounded away (encodings are magnitude-ordered); a finite
// value past the largest f16 gives the largest f16, not infinity.
inline std::uint16_t f2h_rtz(float x) noexcept {
  const std::uint16_t n = d2h(x);
  if (std::isnan(x) || std::isinf(x)) return n;
  return std::fabs(h2f(n)) > std::fabs(x) ? static_cast<std::uint16_t>(n - 1) : n;
}
template <class I>
inline std::uint16_t h_to_int(std::uint16_t x) noexcept {
  return static_cast<std::uint16_t>(fp::to_int<I>(h2f(x)));
}
}  // namespace detail
}  // namespace aqueduct::emu::isa
