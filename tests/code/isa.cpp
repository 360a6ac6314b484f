// tests/code/isa.cpp — target IDs, bundle entry IDs and ISA selection.
// Oracle: Debian's Comgr 5.2.3 amd_comgr_lookup_code_object on the same uncompressed bundles,
// one agent ISA name per call (spec §6.3a). It implements the strict rule only (exact processor +
// feature rule), knows no generic targets, no extended families and no CCOB. Where our policy
// deliberately differs, the case says so:
//   D1 generic targets: Comgr 5.2.3 predates them; we pick a generic entry for a family member.
//   D2 specificity: Comgr takes the first compatible entry; we prefer the entry that pins the
//      agent's features over one that says "any" (spec §6.1 last sentence, CLR/Comgr patches §6.5).
//   D3 extended families / gfx11 directional: opt-in policies Comgr 5.2.3 does not have.
//   D4 CCOB: Comgr 5.2.3 returns "invalid argument"; we decompress and select as for the bundle.
// Expected values for D1/D3 come from the tables of spec §6.2, §6.4, §6.5, §6.6.
#include "oracle.hpp"

#include <aqueduct/code/fat_binary.hpp>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

namespace code = aqueduct::code;
using aqueduct::errc;
using code::feature_setting;

TEST_CASE("target ID parsing") {
  auto t = code::target_id::parse("gfx90a:xnack-");
  CHECK(t.processor == "gfx90a");
  CHECK(t.xnack == feature_setting::off);
  CHECK(t.sramecc == feature_setting::any);
  auto u = code::target_id::parse("amdgcn-amd-amdhsa--gfx90a:xnack+:sramecc+");
  CHECK(u.to_string() == "gfx90a:sramecc+:xnack+");  // canonical order, spec §1.6 item 10
  CHECK(code::target_id::parse("amdgcn-amd-amdhsa--gfx1101").processor == "gfx1101");
  CHECK(code::target_id::parse("amdgcn-amd-amdhsa-unknown-gfx1101").processor == "gfx1101");
  CHECK(code::target_id::parse("amdgcn-amd-amdhsa-gfx906").processor == "gfx906");
  CHECK(code::target_id::parse("gfx11-generic").processor == "gfx11-generic");
  CHECK(code::target_id::parse("gfx10-3-generic").to_string() == "gfx10-3-generic");
  for (const char* bad : {"", ":xnack+", "gfx90a:xnack", "gfx90a:xnack+:xnack-", "gfx90a:foo+", "GFX90A", "gfx90a:", "gfx 90a"}) {
    CAPTURE(bad);
    auto r = code::target_id::try_parse(bad);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.get_failure() == errc::invalid_argument);
  }
}

TEST_CASE("bundle entry ID parsing (spellings of spec §5.2)") {
  auto a = code::bundle_entry_id::try_parse("hipv4-amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-");
  REQUIRE(a.has_value());
  CHECK(a->kind == code::offload_kind::hipv4);
  CHECK(a->triple == "amdgcn-amd-amdhsa");
  CHECK(a->target->to_string() == "gfx90a:sramecc+:xnack-");
  auto b = code::bundle_entry_id::try_parse("hip-amdgcn-amd-amdhsa-gfx906");
  CHECK(b->kind == code::offload_kind::hip);
  CHECK(b->target->processor == "gfx906");
  auto c = code::bundle_entry_id::try_parse("openmp-amdgcn-amd-amdhsa--gfx1100");
  CHECK(c->kind == code::offload_kind::openmp);
  CHECK(code::bundle_entry_id::try_parse("hipv4-amdgcn-amd-amdhsa-unknown-gfx1030")->target->processor == "gfx1030");
  CHECK(code::bundle_entry_id::try_parse("hipv4-amdgcn-amd-amdhsa--gfx10-3-generic")->target->processor == "gfx10-3-generic");
  auto h = code::bundle_entry_id::try_parse("host-x86_64-unknown-linux-gnu-");
  CHECK(h->kind == code::offload_kind::host);
  CHECK(h->triple == "x86_64-unknown-linux-gnu");
  CHECK_FALSE(h->is_amdgcn());
  CHECK(code::bundle_entry_id::try_parse("host-x86_64-unknown-linux--")->triple == "x86_64-unknown-linux");
  CHECK_FALSE(code::bundle_entry_id::try_parse("hip-spirv64-amd-amdhsa--amdgcnspirv")->is_amdgcn());
  CHECK_FALSE(code::bundle_entry_id::try_parse("hipv4").has_value());
  CHECK_FALSE(code::bundle_entry_id::try_parse("hipv4-amdgcn-amd-amdhsa--gfx90a:bogus+").has_value());
}

namespace {
const char* const agents[] = {
    "gfx1030", "gfx1031", "gfx1100", "gfx1101", "gfx1102", "gfx1103", "gfx1200", "gfx1201", "gfx1010:xnack-", "gfx1010:xnack+",
    "gfx1011:xnack-", "gfx900:xnack-", "gfx900:xnack+", "gfx902:xnack-", "gfx906:sramecc+:xnack-", "gfx906:sramecc-:xnack-",
    "gfx908:sramecc+:xnack-", "gfx90a:sramecc+:xnack-", "gfx90a:sramecc+:xnack+", "gfx90a:sramecc-:xnack+", "gfx90a:sramecc-:xnack-",
    "gfx942:sramecc-:xnack-", "gfx942:sramecc+:xnack-", "gfx11-generic", "gfx9-generic:xnack+"};

// The entry Comgr picks, as an index into our entry list (by offset and size).
std::optional<std::size_t> comgr_pick(const std::vector<std::byte>& bundle, const code::fat_binary& fb, const std::string& agent) {
  auto hit = fx::comgr_lookup(bundle, "amdgcn-amd-amdhsa--" + agent);
  if (!hit) return std::nullopt;
  for (std::size_t i = 0; i < fb.entries().size(); ++i)
    if (fb.entries()[i].offset == hit->first && fb.entries()[i].size == hit->second) return i;
  FAIL("comgr picked an offset that is no entry");
  return std::nullopt;
}
}  // namespace

TEST_CASE("strict selection agrees with Comgr 5.2.3 on every bundle and agent") {
  const code::selection_policy strict{false, false, false};
  int compared = 0, matches = 0;
  for (const char* f : {"bundle/many.co", "bundle/host-align4096.co", "bundle/nohost-align1.co", "bundle/generic.co",
                        "bundle/hip-gfx1030-gfx1100.hipfb", "bundle/openmp-gfx1100.co"}) {
    auto b = fx::bytes(f);
    auto fb = code::fat_binary::open(b);
    for (const char* a : agents) {
      CAPTURE(f);
      CAPTURE(a);
      auto ours = fb.try_select(code::target_id::parse(a), strict);
      auto theirs = comgr_pick(b, fb, a);
      ++compared;
      if (theirs) {
        ++matches;
        REQUIRE_MESSAGE(ours.has_value(), ours.detail());
        CHECK(ours->index == *theirs);
        CHECK(ours->match.kind == code::match_kind::exact);
      } else {
        REQUIRE_FALSE(ours.has_value());
        CHECK(ours.get_failure() == errc::no_compatible_isa);
      }
    }
  }
  CHECK(compared == 6 * 25);
  CHECK(matches >= 25);  // the comparison is not vacuous
}

TEST_CASE("D2: a pinned entry is preferred over an earlier 'any' entry (Comgr takes the first)") {
  auto b = fx::bytes("bundle/handmade-any-then-pinned.co");
  auto fb = code::fat_binary::open(b);
  REQUIRE(fb.entries().size() == 2);
  auto theirs = comgr_pick(b, fb, "gfx90a:sramecc+:xnack-");
  REQUIRE(theirs);
  CHECK(*theirs == 0);  // Comgr: first compatible
  auto ours = fb.try_select(code::target_id::parse("gfx90a:sramecc+:xnack-"));
  REQUIRE(ours.has_value());
  CHECK(ours->index == 1);  // ours: the entry pinning both features
  CHECK(ours->match.kind == code::match_kind::exact);
  // an agent the pinned entry does not fit still gets the 'any' entry; both agree there
  auto ours2 = fb.try_select(code::target_id::parse("gfx90a:sramecc-:xnack+"));
  REQUIRE(ours2.has_value());
  CHECK(ours2->index == 0);
  CHECK(comgr_pick(b, fb, "gfx90a:sramecc-:xnack+") == std::optional<std::size_t>(0));
}

TEST_CASE("D1: generic targets (spec §6.2/§6.4); Comgr 5.2.3 finds none of these") {
  auto b = fx::bytes("bundle/generic.co");
  auto fb = code::fat_binary::open(b);
  auto pick = [&](const char* agent) { return fb.try_select(code::target_id::parse(agent)); };
  struct { const char* agent; const char* id; code::match_kind kind; } cases[] = {
      {"gfx1100", "hipv4-amdgcn-amd-amdhsa--gfx1100", code::match_kind::exact},  // exact beats generic
      {"gfx1101", "hipv4-amdgcn-amd-amdhsa--gfx11-generic", code::match_kind::generic},
      {"gfx1103", "hipv4-amdgcn-amd-amdhsa--gfx11-generic", code::match_kind::generic},
      {"gfx1151", "hipv4-amdgcn-amd-amdhsa--gfx11-generic", code::match_kind::generic},
      {"gfx1031", "hipv4-amdgcn-amd-amdhsa--gfx10-3-generic", code::match_kind::generic},
      {"gfx1036", "hipv4-amdgcn-amd-amdhsa--gfx10-3-generic", code::match_kind::generic},
      {"gfx906:sramecc+:xnack+", "hipv4-amdgcn-amd-amdhsa--gfx9-generic:xnack+", code::match_kind::generic},
      {"gfx900:xnack+", "hipv4-amdgcn-amd-amdhsa--gfx9-generic:xnack+", code::match_kind::generic},
  };
  for (const auto& c : cases) {
    CAPTURE(c.agent);
    auto r = pick(c.agent);
    REQUIRE_MESSAGE(r.has_value(), r.detail());
    CHECK(r->bundle_id == c.id);
    CHECK(r->match.kind == c.kind);
    if (c.kind == code::match_kind::generic) CHECK_FALSE(comgr_pick(b, fb, c.agent).has_value());
  }
  // no fit: feature mismatch, no generic entry for the family, no family at all
  for (const char* a : {"gfx900:xnack-", "gfx1200", "gfx908:sramecc+:xnack+", "gfx90a:sramecc+:xnack+", "gfx1010:xnack+"}) {
    CAPTURE(a);
    auto r = pick(a);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.get_failure() == errc::no_compatible_isa);
  }
  // generic disabled
  auto off = fb.try_select(code::target_id::parse("gfx1103"), code::selection_policy{false, false, false});
  REQUIRE_FALSE(off.has_value());
  CHECK(off.detail().find("generic targets are disabled") != std::string_view::npos);
  // the reason names the feature mismatch
  auto why = pick("gfx900:xnack-");
  CHECK_MESSAGE(why.detail().find("needs xnack on") != std::string_view::npos, why.detail());
}

TEST_CASE("D3: Debian/Solus extended families (spec §6.5), opt-in") {
  auto b = fx::bytes("bundle/many.co");
  auto fb = code::fat_binary::open(b);
  const code::selection_policy ext{true, true, false};
  struct { const char* agent; const char* id; } fits[] = {
      {"gfx1031", "hipv4-amdgcn-amd-amdhsa--gfx1030"},
      {"gfx1036", "hipv4-amdgcn-amd-amdhsa--gfx1030"},
      {"gfx902:xnack-", "hipv4-amdgcn-amd-amdhsa--gfx900"},
      {"gfx906:sramecc-:xnack-", "hipv4-amdgcn-amd-amdhsa--gfx900"},  // gfx906 runs gfx900-family code
      {"gfx1011:xnack-", "hipv4-amdgcn-amd-amdhsa--gfx1010"},
      {"gfx1012:xnack+", "hipv4-amdgcn-amd-amdhsa--gfx1010"},
  };
  for (const auto& c : fits) {
    CAPTURE(c.agent);
    auto r = fb.try_select(code::target_id::parse(c.agent), ext);
    REQUIRE_MESSAGE(r.has_value(), r.detail());
    CHECK(r->bundle_id == c.id);
    CHECK(r->match.kind == code::match_kind::extended);
    CHECK(r->match.why.find("Debian/Solus") != std::string::npos);
    CHECK_FALSE(comgr_pick(b, fb, c.agent).has_value());  // Comgr 5.2.3: strict only
    auto strict = fb.try_select(code::target_id::parse(c.agent));
    REQUIRE_FALSE(strict.has_value());
    CHECK(strict.detail().find("extended-families policy") != std::string_view::npos);
  }
  // exact still wins; no gfx11 family in Debian's patches; gfx908 is in no family
  CHECK(fb.select(code::target_id::parse("gfx1030"), ext).match.kind == code::match_kind::exact);
  for (const char* a : {"gfx1101", "gfx1103", "gfx908:sramecc+:xnack-", "gfx1201"}) {
    CAPTURE(a);
    CHECK_FALSE(fb.try_select(code::target_id::parse(a), ext).has_value());
  }
}

TEST_CASE("D3: gfx11 directional rule (spec §6.6), opt-in and one-way") {
  auto flags = [](const char* f) { auto b = fx::bytes(f); return code::code_object::parse(b).e_flags(); };
  const code::selection_policy g11{true, false, true};
  auto ok = [&](const char* file, const char* agent) { return code::try_match(flags(file), code::target_id::parse(agent), g11).has_value(); };
  CHECK(ok("elf/vadd-gfx1100.hsaco", "gfx1101"));   // carries the SGPR-init workaround, same VGPR file
  CHECK(ok("elf/vadd-gfx1102.hsaco", "gfx1103"));
  CHECK_FALSE(ok("elf/vadd-gfx1101.hsaco", "gfx1100"));  // would lack the workaround gfx1100 needs
  CHECK_FALSE(ok("elf/vadd-gfx1103.hsaco", "gfx1102"));
  CHECK_FALSE(ok("elf/vadd-gfx1100.hsaco", "gfx1102"));  // different VGPR file
  CHECK_FALSE(ok("elf/vadd-gfx1101.hsaco", "gfx1103"));
  CHECK_FALSE(ok("elf/vadd-gfx1151.hsaco", "gfx1150"));  // gfx115x not covered
  auto m = code::try_match(flags("elf/vadd-gfx1100.hsaco"), code::target_id::parse("gfx1101"), g11);
  CHECK(m->kind == code::match_kind::extended);
  CHECK_FALSE(code::try_match(flags("elf/vadd-gfx1100.hsaco"), code::target_id::parse("gfx1101")).has_value());
  auto b = fx::bytes("bundle/many.co");
  auto fb = code::fat_binary::open(b);
  CHECK(fb.select(code::target_id::parse("gfx1101"), g11).bundle_id == "hipv4-amdgcn-amd-amdhsa--gfx1100");
  CHECK(fb.select(code::target_id::parse("gfx1103"), g11).bundle_id == "hipv4-amdgcn-amd-amdhsa--gfx1102");
}

TEST_CASE("D4: CCOB selection equals selection on the uncompressed bundle") {
  auto c = fx::bytes("ccob/host-align4096.co");
  auto plain = fx::bytes("bundle/host-align4096.co");
  auto fc = code::fat_binary::open(c);
  auto fp = code::fat_binary::open(plain);
  for (const char* a : agents) {
    CAPTURE(a);
    for (auto pol : {code::selection_policy{}, code::selection_policy{true, true, true}}) {
      auto x = fc.try_select(code::target_id::parse(a), pol);
      auto y = fp.try_select(code::target_id::parse(a), pol);
      REQUIRE(x.has_value() == y.has_value());
      if (x) CHECK(x->bundle_id == y->bundle_id);
    }
  }
  // Comgr 5.2.3 cannot read CCOBs at all (status 2, invalid argument)
  fx::comgr_data d(AMD_COMGR_DATA_KIND_FATBIN, c);
  std::string isa = "amdgcn-amd-amdhsa--gfx1100";
  amd_comgr_code_object_info_t info{isa.c_str(), 0, 0};
  CHECK(amd_comgr_lookup_code_object(d.d, &info, 1) == AMD_COMGR_STATUS_ERROR_INVALID_ARGUMENT);
}

TEST_CASE("offload kinds: HIP lookups ignore openmp entries unless asked; IDs must agree with e_flags") {
  auto b = fx::bytes("bundle/openmp-gfx1100.co");
  auto fb = code::fat_binary::open(b);
  auto hip = fb.try_select(code::target_id::parse("gfx1100"));
  REQUIRE_FALSE(hip.has_value());
  CHECK(hip.detail().find("not requested") != std::string_view::npos);
  const code::offload_kind omp[] = {code::offload_kind::openmp};
  auto r = fb.try_select(code::target_id::parse("gfx1100"), {}, omp);
  REQUIRE(r.has_value());
  CHECK(r->bundle_id == "openmp-amdgcn-amd-amdhsa--gfx1100");
  // an entry whose ID lies about its processor is refused
  auto lie = fx::bytes("bundle/nohost-align1.co");
  auto pos = std::string_view(reinterpret_cast<const char*>(lie.data()), lie.size()).find("--gfx1030");
  REQUIRE(pos != std::string_view::npos);
  lie[pos + 8] = std::byte{'1'};  // "gfx1031" now names the gfx1030 ELF
  auto fl = code::fat_binary::open(lie);
  auto rl = fl.try_select(code::target_id::parse("gfx1031"));
  REQUIRE_FALSE(rl.has_value());
  CHECK(rl.detail().find("e_flags say gfx1030") != std::string_view::npos);
}

TEST_CASE("a plain code object is checked against the agent") {
  auto b = fx::bytes("elf/vadd-gfx90a_xnack-.hsaco");
  auto fb = code::fat_binary::open(b);
  CHECK(fb.select(code::target_id::parse("gfx90a:sramecc+:xnack-")).match.kind == code::match_kind::exact);
  auto r = fb.try_select(code::target_id::parse("gfx90a:sramecc+:xnack+"));
  REQUIRE_FALSE(r.has_value());
  CHECK(r.detail().find("xnack") != std::string_view::npos);
}

}  // namespace AQ_UNITY_ID
