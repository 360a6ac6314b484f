// aqueduct/code/target_id.hpp — AMDGPU target IDs, bundle entry IDs and the processor facts
// that ISA selection needs.
//
// Layer: code. Grammar (ClangOffloadBundler.rst / AMDGPUUsage, spec/code-objects.md §5.2):
//   target ID        <processor> ( ":" ("xnack"|"sramecc") ("+"|"-") )*
//   bundle entry ID  <kind> "-" <triple> [ "-" <target ID> ], triple of 3 or 4 components
// with the spellings seen in the wild (`hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-`, legacy
// `hip-amdgcn-amd-amdhsa-gfx906`, `…-amdhsa-unknown-gfx…`, host `host-x86_64-unknown-linux-gnu-`).
// The processor table lists what selection needs per processor (EF_AMDGPU_MACH, feature support,
// generic family, two gfx11 hardware-bug features); it is a stop-gap until arch/processors.hpp
// carries these columns. Thread safety: constants and values.
#pragma once

#include <aqueduct/abi/elf.hpp>
#include <aqueduct/code/elf.hpp>
#include <aqueduct/core/result.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace aqueduct::code {

struct processor_info {
  std::string_view name;
  std::uint8_t mach;
  bool xnack;             // supports the xnack feature (spec §1.6 item 9)
  bool sramecc;           // supports the sramecc feature
  std::string_view generic;  // generic family it belongs to (ROCr isa.cpp registry, spec §6.2), or ""
  bool is_generic = false;
  bool user_sgpr_init16_bug = false;  // LLVM FeatureUserSGPRInit16Bug (spec §6.6)
  bool gfx11_full_vgprs = false;      // LLVM FeatureGFX11FullVGPRs (spec §6.6)
};

namespace detail {
using M = abi::ef_amdgpu_mach_value;
constexpr std::uint8_t m(M v) { return static_cast<std::uint8_t>(v); }
// spec §2.3 (values), §1.6.9 (features), §6.2/§6.4 (generic families), §6.6 (gfx11 bugs).
inline constexpr processor_info processor_table[] = {
    {"gfx900", m(M::gfx900), true, false, "gfx9-generic"},
    {"gfx902", m(M::gfx902), true, false, "gfx9-generic"},
    {"gfx904", m(M::gfx904), true, false, "gfx9-generic"},
    {"gfx906", m(M::gfx906), true, true, "gfx9-generic"},
    {"gfx908", m(M::gfx908), true, true, ""},
    {"gfx909", m(M::gfx909), true, false, "gfx9-generic"},
    {"gfx90a", m(M::gfx90a), true, true, ""},
    {"gfx90c", m(M::gfx90c), true, false, "gfx9-generic"},
    {"gfx940", m(M::gfx940), true, true, ""},
    {"gfx941", m(M::gfx941), true, true, ""},
    {"gfx942", m(M::gfx942), true, true, "gfx9-4-generic"},
    {"gfx950", m(M::gfx950), true, true, "gfx9-4-generic"},
    {"gfx1010", m(M::gfx1010), true, false, "gfx10-1-generic"},
    {"gfx1011", m(M::gfx1011), true, false, "gfx10-1-generic"},
    {"gfx1012", m(M::gfx1012), true, false, "gfx10-1-generic"},
    {"gfx1013", m(M::gfx1013), true, false, "gfx10-1-generic"},
    {"gfx1030", m(M::gfx1030), false, false, "gfx10-3-generic"},
    {"gfx1031", m(M::gfx1031), false, false, "gfx10-3-generic"},
    {"gfx1032", m(M::gfx1032), false, false, "gfx10-3-generic"},
    {"gfx1033", m(M::gfx1033), false, false, "gfx10-3-generic"},
    {"gfx1034", m(M::gfx1034), false, false, "gfx10-3-generic"},
    {"gfx1035", m(M::gfx1035), false, false, "gfx10-3-generic"},
    {"gfx1036", m(M::gfx1036), false, false, "gfx10-3-generic"},
    {"gfx1100", m(M::gfx1100), false, false, "gfx11-generic", false, true, true},
    {"gfx1101", m(M::gfx1101), false, false, "gfx11-generic", false, false, true},
    {"gfx1102", m(M::gfx1102), false, false, "gfx11-generic", false, true, false},
    {"gfx1103", m(M::gfx1103), false, false, "gfx11-generic", false, false, false},
    {"gfx1150", m(M::gfx1150), false, false, "gfx11-generic"},
    {"gfx1151", m(M::gfx1151), false, false, "gfx11-generic", false, false, true},
    {"gfx1152", m(M::gfx1152), false, false, "gfx11-generic"},
    {"gfx1153", m(M::gfx1153), false, false, "gfx11-generic"},
    {"gfx1200", m(M::gfx1200), false, false, "gfx12-generic"},
    {"gfx1201", m(M::gfx1201), false, false, "gfx12-generic"},
    {"gfx1250", m(M::gfx1250), false, false, "gfx12-5-generic"},
    {"gfx1251", m(M::gfx1251), false, false, "gfx12-5-generic"},
    {"gfx9-generic", m(M::gfx9_generic), true, false, "", true},
    {"gfx9-4-generic", m(M::gfx9_4_generic), true, true, "", true},
    {"gfx10-1-generic", m(M::gfx10_1_generic), true, false, "", true},
    {"gfx10-3-generic", m(M::gfx10_3_generic), false, false, "", true},
    {"gfx11-generic", m(M::gfx11_generic), false, false, "", true},
    {"gfx12-generic", m(M::gfx12_generic), false, false, "", true},
    {"gfx12-5-generic", m(M::gfx12_5_generic), false, false, "", true},
};
}  // namespace detail

[[nodiscard]] constexpr const processor_info* find_processor(std::string_view name) noexcept {
  for (const auto& p : detail::processor_table)
    if (p.name == name) return &p;
  return nullptr;
}
[[nodiscard]] constexpr const processor_info* find_processor(std::uint8_t mach) noexcept {
  for (const auto& p : detail::processor_table)
    if (p.mach == mach) return &p;
  return nullptr;
}
// Lowest generic version a processor accepts (all 1 so far: AMDGPUBaseInfo GenericVersion, spec §6.4).
[[nodiscard]] constexpr unsigned generic_min_version(std::string_view /*processor*/) noexcept { return 1; }

// ---- target ID -----------------------------------------------------------------------------
// Features: `any` = not stated. For an agent, a stated on/off is its current mode.
struct target_id {
  std::string processor;
  feature_setting xnack = feature_setting::any;
  feature_setting sramecc = feature_setting::any;

  // Canonical spelling: features in alphabetical order (sramecc before xnack), spec §1.6 item 10.
  [[nodiscard]] std::string to_string() const {
    std::string s = processor;
    if (sramecc == feature_setting::on || sramecc == feature_setting::off) s += sramecc == feature_setting::on ? ":sramecc+" : ":sramecc-";
    if (xnack == feature_setting::on || xnack == feature_setting::off) s += xnack == feature_setting::on ? ":xnack+" : ":xnack-";
    return s;
  }
  friend bool operator==(const target_id&, const target_id&) = default;

  // Accepts a bare target ID or one prefixed with an amdgcn triple
  // (`amdgcn-amd-amdhsa--gfx1101`, `amdgcn-amd-amdhsa-unknown-gfx1101`, `amdgcn-amd-amdhsa-gfx906`).
  static result<target_id> try_parse(std::string_view s) {
    for (std::string_view prefix : {"amdgcn-amd-amdhsa--", "amdgcn-amd-amdhsa-unknown-", "amdgcn-amd-amdhsa-"})
      if (s.starts_with(prefix)) {
        s.remove_prefix(prefix.size());
        break;
      }
    target_id t;
    auto colon = s.find(':');
    t.processor = std::string(s.substr(0, colon));
    if (t.processor.empty()) return failure(errc::invalid_argument, "target ID has no processor");
    for (char c : t.processor)
      if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'))
        return failure(errc::invalid_argument, "target ID processor '" + t.processor + "' has a character outside [a-z0-9-]");
    while (colon != std::string_view::npos) {
      s.remove_prefix(colon + 1);
      colon = s.find(':');
      std::string_view f = s.substr(0, colon);
      if (f.size() < 2 || (f.back() != '+' && f.back() != '-'))
        return failure(errc::invalid_argument, "target ID feature '" + std::string(f) + "' must end in + or -");
      const auto v = f.back() == '+' ? feature_setting::on : feature_setting::off;
      f.remove_suffix(1);
      feature_setting* slot = f == "xnack" ? &t.xnack : f == "sramecc" ? &t.sramecc : nullptr;
      if (!slot) return failure(errc::invalid_argument, "target ID feature '" + std::string(f) + "' is not xnack or sramecc");
      if (*slot != feature_setting::any) return failure(errc::invalid_argument, "target ID states " + std::string(f) + " twice");
      *slot = v;
    }
    return t;
  }
  static target_id parse(std::string_view s) { return try_parse(s).value(); }
};

// The target ID a code object's e_flags describe ("any" features are omitted, as ROCr and Comgr
// name ISAs; spec §6.2). Unknown EF_AMDGPU_MACH values give "unknown-0x..".
inline target_id target_of(const code_object& co) {
  target_id t;
  const auto* p = find_processor(co.mach());
  t.processor = p ? std::string(p->name) : "unknown-" + hex(co.mach());
  t.xnack = co.xnack() == feature_setting::unsupported ? feature_setting::any : co.xnack();
  t.sramecc = co.sramecc() == feature_setting::unsupported ? feature_setting::any : co.sramecc();
  return t;
}

// ---- bundle entry ID -----------------------------------------------------------------------
enum class offload_kind : std::uint8_t { host, hip, hipv4, hcc, openmp, other };

inline constexpr std::string_view to_string(offload_kind k) noexcept {
  switch (k) {
    case offload_kind::host: return "host";
    case offload_kind::hip: return "hip";
    case offload_kind::hipv4: return "hipv4";
    case offload_kind::hcc: return "hcc";
    case offload_kind::openmp: return "openmp";
    case offload_kind::other: return "other";
  }
  return "?";
}

struct bundle_entry_id {
  offload_kind kind = offload_kind::other;
  std::string kind_text;          // as written
  std::string triple;             // e.g. "amdgcn-amd-amdhsa", "x86_64-unknown-linux-gnu"
  std::optional<target_id> target;  // for amdgcn-amd-amdhsa entries
  [[nodiscard]] bool is_amdgcn() const noexcept { return target.has_value(); }

  static result<bundle_entry_id> try_parse(std::string_view s) {
    bundle_entry_id e;
    auto dash = s.find('-');
    if (dash == std::string_view::npos || dash == 0 || dash + 1 == s.size())
      return failure(errc::invalid_argument, "bundle entry ID '" + std::string(s) + "' is not <kind>-<triple>[-<target ID>]");
    e.kind_text = std::string(s.substr(0, dash));
    e.kind = e.kind_text == "host" ? offload_kind::host : e.kind_text == "hip" ? offload_kind::hip
           : e.kind_text == "hipv4" ? offload_kind::hipv4 : e.kind_text == "hcc" ? offload_kind::hcc
           : e.kind_text == "openmp" ? offload_kind::openmp : offload_kind::other;
    std::string_view rest = s.substr(dash + 1);
    if (rest.starts_with("amdgcn-amd-amdhsa")) {
      e.triple = "amdgcn-amd-amdhsa";
      std::string_view tid = rest.substr(e.triple.size());
      if (tid.starts_with("--")) tid.remove_prefix(2);
      else if (tid.starts_with("-unknown-")) tid.remove_prefix(9);
      else if (tid.starts_with("-")) tid.remove_prefix(1);  // legacy 3-component form
      else return failure(errc::invalid_argument, "bundle entry ID '" + std::string(s) + "' has no target ID after amdgcn-amd-amdhsa");
      auto t = target_id::try_parse(tid);
      if (!t) return failure(errc::invalid_argument, "bundle entry ID '" + std::string(s) + "': " + std::string(t.detail()));
      e.target = std::move(*t);
      return e;
    }
    // Non-AMDGPU (host, SPIR-V, ...): the triple is the rest without trailing '-' (empty target ID).
    while (rest.ends_with('-')) rest.remove_suffix(1);
    e.triple = std::string(rest);
    return e;
  }
};

}  // namespace aqueduct::code
