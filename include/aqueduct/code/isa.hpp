// aqueduct/code/isa.hpp — choosing the code object that fits an agent.
//
// Layer: code (not arch/: the rule works on bundle entries and e_flags, which are code-layer
// facts; arch/ cannot include code/). Rules, spec/code-objects.md §6:
//   exact     same processor, and the target-ID feature rule (§6.1): each of xnack/sramecc is
//             "any" in the code object or equals the agent's mode;
//   generic   the code object is the agent's generic family (ROCr registry, §6.2) with
//             generic version >= the processor's minimum (§6.4), feature rule as above;
//   extended  opt-in: Debian/Solus families (§6.5: gfx900-like, gfx1010, gfx103x), and, as a
//             separate directional opt-in of our own (§6.6, not Debian behaviour), gfx110x code on
//             a gfx110x agent only where the code carries every hardware-bug workaround the agent
//             needs and was built for the same VGPR file: gfx1100 → gfx1101, gfx1102 → gfx1103.
// Among fitting entries: exact > generic > extended, then one point for each feature the entry
// pins to the agent's value (§6.1 "prefer the more specialised"), then file order.
// Candidates' e_flags are authoritative (§6.7): an entry's ID must agree with its ELF.
// Thread safety: pure functions.
#pragma once

#include <aqueduct/arch/processors.hpp>
#include <aqueduct/code/bundle.hpp>
#include <aqueduct/code/elf.hpp>
#include <aqueduct/code/target_id.hpp>
#include <aqueduct/core/result.hpp>

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace aqueduct::code {

struct selection_policy {
  bool allow_generic = true;
  bool allow_extended_families = false;  // Debian/Solus gfx900 / gfx1010 / gfx103x families
  bool allow_gfx11_directional = false;  // aqueduct's own gfx1100→gfx1101, gfx1102→gfx1103
};

enum class match_kind : std::uint8_t { exact, generic, extended };
inline constexpr std::string_view to_string(match_kind k) noexcept {
  return k == match_kind::exact ? "exact" : k == match_kind::generic ? "generic" : "extended";
}

struct isa_match {
  match_kind kind = match_kind::exact;
  int score = 0;
  std::string why;  // e.g. "gfx1031 runs gfx1030 code (Debian/Solus gfx103x family)"
};

namespace detail {
inline bool in(std::string_view x, std::initializer_list<std::string_view> set) {
  for (auto s : set)
    if (s == x) return true;
  return false;
}
// Debian/Solus extended families (spec §6.5, Comgr/ROCr patch reading): may `agent` run `code`?
inline bool debian_family(std::string_view code, std::string_view agent, std::string& why) {
  if (in(code, {"gfx900", "gfx902", "gfx909", "gfx90c"}) && in(agent, {"gfx900", "gfx902", "gfx906", "gfx909", "gfx90c"})) {
    why = std::string(agent) + " runs " + std::string(code) + " code (Debian/Solus gfx900 family)";
    return true;
  }
  if (code == "gfx1010" && in(agent, {"gfx1010", "gfx1011", "gfx1012", "gfx1013"})) {
    why = std::string(agent) + " runs gfx1010 code (Debian/Solus gfx1010 family)";
    return true;
  }
  auto g103 = [](std::string_view p) { return in(p, {"gfx1030", "gfx1031", "gfx1032", "gfx1033", "gfx1034", "gfx1035", "gfx1036"}); };
  if (g103(code) && g103(agent)) {
    why = std::string(agent) + " runs " + std::string(code) + " code (Debian/Solus gfx103x family)";
    return true;
  }
  return false;
}
// LLVM features that differ inside gfx110x (spec §6.6, AMDGPU.td): FeatureUserSGPRInit16Bug
// on gfx1100/gfx1102, FeatureGFX11FullVGPRs on gfx1100/gfx1101.
inline bool user_sgpr_init16_bug(std::string_view p) { return p == "gfx1100" || p == "gfx1102"; }
inline bool gfx11_full_vgprs(std::string_view p) { return p == "gfx1100" || p == "gfx1101"; }
// aqueduct's directional gfx110x rule (spec §6.6): same VGPR file, and the code carries the
// SGPR-init workaround whenever the agent needs it.
inline bool gfx11_directional(std::string_view code, std::string_view agent, std::string& why) {
  if (!in(code, {"gfx1100", "gfx1101", "gfx1102", "gfx1103"}) || !in(agent, {"gfx1100", "gfx1101", "gfx1102", "gfx1103"}))
    return false;
  if (gfx11_full_vgprs(code) != gfx11_full_vgprs(agent) || (user_sgpr_init16_bug(agent) && !user_sgpr_init16_bug(code))) return false;
  why = std::string(agent) + " runs " + std::string(code) +
        " code (aqueduct gfx11 directional rule: same VGPR file, code carries every needed workaround)";
  return true;
}
inline bool feature_ok(feature_setting code, feature_setting agent) {
  return code == feature_setting::unsupported || code == feature_setting::any || code == agent;
}
}  // namespace detail

// Can an agent with target `agent` run a code object with e_flags `flags`? On failure, the
// failure's detail says why.
inline result<isa_match> try_match(std::uint32_t flags, const target_id& agent, const selection_policy& pol = {}) {
  const auto mach = static_cast<std::uint8_t>(flags & abi::ef_amdgpu_mach);
  const auto xn = static_cast<feature_setting>((flags >> 8) & 3);
  const auto sr = static_cast<feature_setting>((flags >> 10) & 3);
  const unsigned gver = flags >> 24;
  const auto* cp = arch::find_processor_by_mach(mach);
  if (!cp) return failure(errc::no_compatible_isa, "code object processor EF_AMDGPU_MACH " + hex(mach) + " is unknown");
  const auto* ap = arch::find_processor(agent.processor);
  auto no = [](std::string d) { return failure(errc::no_compatible_isa, std::move(d)); };
  isa_match m;
  std::string why;
  if (cp->name == agent.processor) {
    m.kind = match_kind::exact;
    m.score = 300;
    m.why = "same processor " + agent.processor;
  } else if (cp->is_generic) {
    if (!pol.allow_generic) return no(std::string(cp->name) + " is a generic target and generic targets are disabled");
    if (!ap || ap->generic != cp->name)
      return no(std::string(cp->name) + " code does not cover " + agent.processor + (ap && !ap->generic.empty() ? " (its generic is " + std::string(ap->generic) + ")" : " (no generic family)"));
    if (gver < generic_min_version(agent.processor))
      return no(std::string(cp->name) + " generic version " + std::to_string(gver) + " < minimum " +
                std::to_string(generic_min_version(agent.processor)) + " for " + agent.processor);
    m.kind = match_kind::generic;
    m.score = 200;
    m.why = agent.processor + " belongs to " + std::string(cp->name) + " (generic version " + std::to_string(gver) + ")";
  } else if (pol.allow_extended_families && detail::debian_family(cp->name, agent.processor, why)) {
    m.kind = match_kind::extended;
    m.score = 100;
    m.why = why;
  } else if (pol.allow_gfx11_directional && detail::gfx11_directional(cp->name, agent.processor, why)) {
    m.kind = match_kind::extended;
    m.score = 90;
    m.why = why;
  } else {
    std::string hint;
    if (!pol.allow_extended_families && detail::debian_family(cp->name, agent.processor, why)) hint = " (allowed with the extended-families policy)";
    else if (!pol.allow_gfx11_directional && detail::gfx11_directional(cp->name, agent.processor, why)) hint = " (allowed with the gfx11 directional policy)";
    return no("processor " + std::string(cp->name) + " != " + agent.processor + hint);
  }
  if (!detail::feature_ok(xn, agent.xnack))
    return no(std::string(cp->name) + " code needs xnack " + std::string(to_string(xn)) + ", agent " + agent.to_string() + " has xnack " +
              std::string(agent.xnack == feature_setting::any ? "unstated" : to_string(agent.xnack)));
  if (!detail::feature_ok(sr, agent.sramecc))
    return no(std::string(cp->name) + " code needs sramecc " + std::string(to_string(sr)) + ", agent " + agent.to_string() + " has sramecc " +
              std::string(agent.sramecc == feature_setting::any ? "unstated" : to_string(agent.sramecc)));
  m.score += (xn == feature_setting::on || xn == feature_setting::off) + (sr == feature_setting::on || sr == feature_setting::off);
  return m;
}

struct selection {
  std::size_t index = 0;  // into the entries given
  std::string bundle_id;
  isa_match match;
};

// Picks the best entry of a bundle for `agent`. Candidates are amdgcn-amd-amdhsa entries of the
// offload kinds in `kinds`; empty means the HIP kinds hip, hipv4, hcc (what Comgr's lookup accepts,
// spec §6.3). Pass {offload_kind::openmp} for OpenMP bundles.
inline result<selection> try_select(std::span<const bundle_entry> entries, const target_id& agent, const selection_policy& pol = {},
                                    std::span<const offload_kind> kinds = {}) {
  std::string reasons;
  std::optional<selection> best;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const auto& e = entries[i];
    auto note = [&](std::string r) { reasons += "\n  " + std::string(e.id) + ": " + r; };
    auto id = bundle_entry_id::try_parse(e.id);
    if (!id) { note(std::string(id.detail())); continue; }
    if (!id->is_amdgcn() || id->kind == offload_kind::host || id->kind == offload_kind::other) { note("not an amdgcn-amd-amdhsa offload entry"); continue; }
    bool kind_ok = kinds.empty() && (id->kind == offload_kind::hip || id->kind == offload_kind::hipv4 || id->kind == offload_kind::hcc);
    for (auto k : kinds) kind_ok = kind_ok || k == id->kind;
    if (!kind_ok) { note("offload kind " + id->kind_text + " not requested"); continue; }
    auto co = code_object::try_parse(e.data);
    if (!co) { note("not a loadable code object: " + co.get_failure().describe()); continue; }
    auto from_elf = target_of(*co);
    if (from_elf.processor != id->target->processor) {
      note("ID names " + id->target->processor + " but e_flags say " + from_elf.processor);
      continue;
    }
    auto m = try_match(co->e_flags(), agent, pol);
    if (!m) { note(std::string(m.detail())); continue; }
    if (!best || m->score > best->match.score) best = selection{i, std::string(e.id), std::move(*m)};
  }
  if (!best)
    return failure(errc::no_compatible_isa, "no entry fits " + agent.to_string() + (entries.empty() ? " (bundle is empty)" : ":") + reasons);
  return std::move(*best);
}
inline selection select(std::span<const bundle_entry> entries, const target_id& agent, const selection_policy& pol = {}) {
  return try_select(entries, agent, pol).value();
}

}  // namespace aqueduct::code
