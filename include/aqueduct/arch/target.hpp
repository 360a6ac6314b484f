// aqueduct/arch/target.hpp — compile-time targets (family + workaround policy) and the one
// run-time branch that enters code templated on them.
//
// Layer: arch. An agent's gfx_target_version is known only at run time, but every per-packet
// decision must be constexpr (DESIGN.md §3). `visit_family(gfxv, simd_arrays_per_engine, f)`
// branches once — when a queue is created — and calls `f(target<Family, Quirks>{})`; from then
// on encoders read register offsets, field layouts, SDMA version and workarounds as constants.
//
// The GFX11 PRIV workaround (spec/kfd.md §4, DESIGN.md requirement 7): PM4 dispatches on
// gfx1100/1101/1102 (and kfdtest's 11.0.5), and on gfx1103 with simd_arrays_per_engine > 1, must
// set COMPUTE_PGM_RSRC1.PRIV, or the wave hangs on CWSR (hardware bug DEGFX11_12113); on every
// other part PRIV=1 hangs the system. So:
//   * `target<…>::pm4_compute_pgm_rsrc1(kd_rsrc1)` is the only RSRC1 builder: it ORs PRIV in for
//     an affected target and clears it for every other target, with no run-time test;
//   * `set_pm4_priv()` exists only on an affected target — an unaffected target type has no
//     member through which PRIV could be set (tests/arch/target.cpp proves it with a
//     requires-expression), and `target<gfx9_tag, gfx11_pm4_priv>` does not compile.
// AQL dispatch needs no workaround: the CP takes RSRC1 from the kernel descriptor (PRIV 0).
// Thread safety: stateless types; visit_family is a pure function of its arguments.
#pragma once

#include <aqueduct/arch/family.hpp>
#include <aqueduct/core/result.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace aqueduct::arch {

// ---------------------------------------------------------------- workaround policies
struct no_quirks {
  static constexpr std::string_view name = "";
  static constexpr bool pm4_priv = false;          // set COMPUTE_PGM_RSRC1.PRIV in PM4 dispatches
  static constexpr std::uint32_t sdma_version = 0;  // 0 = the family's SDMA version
};
// DEGFX11_12113 parts (needs_pm4_priv() true).
struct gfx11_pm4_priv : no_quirks {
  static constexpr std::string_view name = "pm4-priv";
  static constexpr bool pm4_priv = true;
};
// gfx1010–gfx1013: gfx10.3 register/RSRC traits, but SDMA 5.0 (22-bit COPY_LINEAR count).
struct gfx10_1_quirks : no_quirks {
  static constexpr std::string_view name = "gfx10.1";
  static constexpr std::uint32_t sdma_version = 50;
};

template <family_tag Family, class Quirks = no_quirks>
struct target {
  static_assert(!Quirks::pm4_priv || Family::value == family::gfx11,
                "the COMPUTE_PGM_RSRC1.PRIV workaround exists only on GFX11 (spec/kfd.md §4)");
  using family_type = Family;  // register offsets, field layouts: target::family_type::regs …
  using quirks_type = Quirks;
  using regs = typename Family::regs;
  static constexpr family fam = Family::value;
  static constexpr bool pm4_priv = Quirks::pm4_priv;
  static constexpr std::uint32_t sdma_version = Quirks::sdma_version != 0 ? Quirks::sdma_version : Family::sdma_version;
  static constexpr std::uint32_t doorbell_bytes = Family::doorbell_bytes;
  static constexpr std::uint32_t acquire_mem_dwords = Family::acquire_mem_dwords;
  static constexpr std::uint32_t default_wave_size = Family::default_wave_size;

  // COMPUTE_PGM_RSRC1 for a PM4 dispatch, from the kernel descriptor's compute_pgm_rsrc1.
  // PRIV is forced to this target's policy regardless of the input.
  [[nodiscard]] static constexpr std::uint32_t pm4_compute_pgm_rsrc1(std::uint32_t kd_rsrc1) noexcept {
    const std::uint32_t cleared = kd_rsrc1 & ~compute_pgm_rsrc1_priv::mask;
    if constexpr (pm4_priv) return cleared | compute_pgm_rsrc1_priv::mask;
    else return cleared;
  }
  // Sets PRIV on an RSRC1 value; only an affected target has this member.
  [[nodiscard]] static constexpr std::uint32_t set_pm4_priv(std::uint32_t rsrc1) noexcept
    requires(Quirks::pm4_priv)
  {
    return rsrc1 | compute_pgm_rsrc1_priv::mask;
  }

  // "gfx11+pm4-priv", "gfx10.3+gfx10.1", "gfx942-class" spelled as family[+quirks].
  [[nodiscard]] static std::string name() {
    std::string s(family_name(fam));
    if (!Quirks::name.empty()) {
      s += '+';
      s += Quirks::name;
    }
    return s;
  }
};

template <class T>
inline constexpr bool is_target_v = false;
template <class F, class Q>
inline constexpr bool is_target_v<target<F, Q>> = true;
template <class T>
concept target_type = is_target_v<std::remove_cvref_t<T>>;

using gfx9_target = target<gfx9_tag>;
using gfx90a_target = target<gfx90a_tag>;
using gfx94x_target = target<gfx94x_tag>;
using gfx10_1_target = target<gfx10_3_tag, gfx10_1_quirks>;
using gfx10_3_target = target<gfx10_3_tag>;
using gfx11_target = target<gfx11_tag>;
using gfx11_priv_target = target<gfx11_tag, gfx11_pm4_priv>;
using gfx12_target = target<gfx12_tag>;

namespace detail {
template <class R>
struct visit_result {
  using type = result<R>;
};
template <class U>
struct visit_result<result<U>> {  // f already returns a result: do not nest
  using type = result<U>;
};
}  // namespace detail

// Calls `f(target<…>{})` for the target of `gfx_target_version` and (for gfx1103)
// `simd_arrays_per_engine`, and returns its value as a result. Every instantiation of `f` must
// return the same type R; the result type is result<R> (or R itself if R is a result<U>).
// Unknown or unsupported versions (gfx8 and older, gfx12.5+) give errc::not_supported.
template <class F>
auto visit_family(std::uint32_t gfx_target_version, std::uint32_t simd_arrays_per_engine, F&& f)
    -> typename detail::visit_result<std::invoke_result_t<F&, gfx9_target>>::type {
  using R = std::invoke_result_t<F&, gfx9_target>;
  using out = typename detail::visit_result<R>::type;
  static_assert(std::is_same_v<R, std::invoke_result_t<F&, gfx90a_target>> &&
                    std::is_same_v<R, std::invoke_result_t<F&, gfx94x_target>> &&
                    std::is_same_v<R, std::invoke_result_t<F&, gfx10_1_target>> &&
                    std::is_same_v<R, std::invoke_result_t<F&, gfx10_3_target>> &&
                    std::is_same_v<R, std::invoke_result_t<F&, gfx11_target>> &&
                    std::is_same_v<R, std::invoke_result_t<F&, gfx11_priv_target>> &&
                    std::is_same_v<R, std::invoke_result_t<F&, gfx12_target>>,
                "visit_family: the visitor must return the same type for every target");
  const auto call = [&](auto t) -> out {
    if constexpr (std::is_void_v<R>) {
      f(t);
      return out{};
    } else {
      return out(f(t));
    }
  };
  const auto fam = family_of(gfx_target_version);
  if (!fam) {
    return failure(errc::not_supported,
                   "gfx_target_version " + std::to_string(gfx_target_version) +
                       " is not supported (aqueduct supports gfx9, gfx90a, gfx94x, gfx950, gfx10.1, gfx10.3, gfx11, gfx12)");
  }
  switch (*fam) {
    case family::gfx9: return call(gfx9_target{});
    case family::gfx90a: return call(gfx90a_target{});
    case family::gfx94x: return call(gfx94x_target{});
    case family::gfx10_3:
      if (is_gfx10_1(gfx_target_version)) return call(gfx10_1_target{});
      return call(gfx10_3_target{});
    case family::gfx11:
      if (needs_pm4_priv(gfx_target_version, simd_arrays_per_engine)) return call(gfx11_priv_target{});
      return call(gfx11_target{});
    case family::gfx12: return call(gfx12_target{});
  }
  return failure(errc::not_supported, "unknown family");
}

// Same dispatch, named after what it yields.
template <class F>
auto visit_target(std::uint32_t gfx_target_version, std::uint32_t simd_arrays_per_engine, F&& f) {
  return visit_family(gfx_target_version, simd_arrays_per_engine, std::forward<F>(f));
}

}  // namespace aqueduct::arch
