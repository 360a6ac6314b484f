// aqueduct/code/target_id.hpp — AMDGPU target IDs, bundle entry IDs and the processor facts
// that ISA selection needs.
//
// Layer: code. Grammar (ClangOffloadBundler.rst / AMDGPUUsage, spec/code-objects.md §5.2):
//   target ID        <processor> ( ":" ("xnack"|"sramecc") ("+"|"-") )*
//   bundle entry ID  <kind> "-" <triple> [ "-" <target ID> ], triple of 3 or 4 components
// with the spellings seen in the wild (`hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-`, legacy
// `hip-amdgcn-amd-amdhsa-gfx906`, `…-amdhsa-unknown-gfx…`, host `host-x86_64-unknown-linux-gnu-`).
// Processor facts (EF_AMDGPU_MACH → name) come from arch/processors.hpp.
// Thread safety: constants and values.
#pragma once

#include <aqueduct/abi/elf.hpp>
#include <aqueduct/arch/processors.hpp>
#include <aqueduct/code/elf.hpp>
#include <aqueduct/core/result.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace aqueduct::code {

// Processor facts come from arch/processors.hpp (name, EF_AMDGPU_MACH, xnack/sramecc support,
// generic family). Lowest generic version a processor accepts: all 1 so far (AMDGPUBaseInfo
// GenericVersion, spec §6.4).
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
  const auto* p = arch::find_processor_by_mach(co.mach());
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
