// Tests for arch/target.hpp: the GFX11 PRIV policy table of spec/kfd.md §4 (kfdtest NeedCwsrWA,
// ROCT c18981f3) and the single run-time branch of visit_family. Expected values are the spec's
// list of affected engines, written out here, not derived from the code under test.
#include <aqueduct/arch/target.hpp>

#include <doctest/doctest.h>

#include <string>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

namespace arch = aqueduct::arch;

namespace {
// spec/kfd.md §4: RSRC1.PRIV bit 20.
constexpr std::uint32_t priv_bit = 1u << 20;

struct name_of {
  template <class T>
  std::string operator()(T) const { return T::name(); }
};
struct priv_of {
  template <class T>
  bool operator()(T) const { return T::pm4_priv; }
};
}  // namespace

TEST_CASE("needs_pm4_priv follows kfdtest NeedCwsrWA exactly") {
  struct row { std::uint32_t gfxv, arrays; bool priv; };
  const row rows[] = {
      {110000, 2, true},  {110000, 1, true},  // gfx1100 (engine 11.0.0) always
      {110001, 2, true},  {110001, 1, true},  // gfx1101
      {110002, 2, true},  {110002, 1, true},  // gfx1102
      {110003, 1, false}, {110003, 2, true},  // gfx1103: only with NumArrays > 1
      {110003, 4, true},
      {110005, 1, true},                      // kfdtest's 11.0.5 (no LLVM processor)
      {110004, 2, false},                     // 11.0.4 is not listed
      {110500, 2, false}, {110501, 2, false}, {110502, 2, false}, {110503, 2, false},  // gfx115x
      {120000, 2, false}, {120001, 2, false},  // gfx12
      {100300, 2, false}, {90402, 1, false},  {90010, 1, false}, {90000, 1, false},
  };
  for (const auto& r : rows) {
    CAPTURE(r.gfxv);
    CAPTURE(r.arrays);
    CHECK(arch::needs_pm4_priv(r.gfxv, r.arrays) == r.priv);
    auto v = arch::visit_family(r.gfxv, r.arrays, priv_of{});
    REQUIRE(v.has_value());
    CHECK(*v == r.priv);
  }
}

TEST_CASE("affected target always sets PRIV; unaffected targets never do") {
  // gfx1100 vadd kernel descriptor rsrc1 (spec/code-objects.md §3.5): PRIV clear.
  constexpr std::uint32_t kd = 0x60af0080;
  static_assert(arch::gfx11_priv_target::pm4_compute_pgm_rsrc1(kd) == (kd | priv_bit));
  CHECK(arch::gfx11_priv_target::pm4_compute_pgm_rsrc1(kd) == 0x60bf0080u);
  CHECK(arch::gfx11_priv_target::set_pm4_priv(0) == priv_bit);
  // Unaffected targets clear PRIV even if the input carries it.
  CHECK(arch::gfx11_target::pm4_compute_pgm_rsrc1(kd | priv_bit) == kd);
  CHECK(arch::gfx12_target::pm4_compute_pgm_rsrc1(0x600f0040u | priv_bit) == 0x600f0040u);
  CHECK(arch::gfx94x_target::pm4_compute_pgm_rsrc1(0x00af0040u | priv_bit) == 0x00af0040u);
  CHECK(arch::gfx9_target::pm4_compute_pgm_rsrc1(0x00af0041u) == 0x00af0041u);
}

// The compile-time proof: only an affected target has a member that can set PRIV.
template <class T>
concept can_set_priv = requires(std::uint32_t r) { T::set_pm4_priv(r); };
static_assert(can_set_priv<arch::gfx11_priv_target>);  // positive control
static_assert(!can_set_priv<arch::gfx11_target>);
static_assert(!can_set_priv<arch::gfx12_target>);
static_assert(!can_set_priv<arch::gfx10_3_target>);
static_assert(!can_set_priv<arch::gfx10_1_target>);
static_assert(!can_set_priv<arch::gfx94x_target>);
static_assert(!can_set_priv<arch::gfx90a_target>);
static_assert(!can_set_priv<arch::gfx9_target>);
static_assert(arch::gfx11_priv_target::pm4_priv && !arch::gfx11_target::pm4_priv);

TEST_CASE("visit_family picks the family once and reports unknown versions") {
  auto n = [](std::uint32_t v, std::uint32_t a = 1) { return arch::visit_family(v, a, name_of{}).value(); };
  CHECK(n(90000) == "gfx9");
  CHECK(n(90006) == "gfx9");
  CHECK(n(90008) == "gfx9");
  CHECK(n(90012) == "gfx9");
  CHECK(n(90010) == "gfx90a");
  CHECK(n(90402) == "gfx94x");
  CHECK(n(90500) == "gfx94x");
  CHECK(n(100100) == "gfx10.3+gfx10.1");
  CHECK(n(100300) == "gfx10.3");
  CHECK(n(100306) == "gfx10.3");
  CHECK(n(110000, 2) == "gfx11+pm4-priv");
  CHECK(n(110003, 1) == "gfx11");
  CHECK(n(110003, 2) == "gfx11+pm4-priv");
  CHECK(n(110501) == "gfx11");
  CHECK(n(120001) == "gfx12");

  for (std::uint32_t bad : {0u, 70000u, 80003u, 80002u, 120500u, 130000u}) {
    CAPTURE(bad);
    auto r = arch::visit_family(bad, 1, name_of{});
    REQUIRE_FALSE(r.has_value());
    CHECK(r.get_failure() == aqueduct::errc::not_supported);
    CHECK(r.detail().find(std::to_string(bad)) != std::string::npos);
  }
}

TEST_CASE("visit_family: void visitors, result-returning visitors, target traits") {
  int calls = 0;
  auto v = arch::visit_family(110000, 2, [&](auto) { ++calls; });
  CHECK(v.has_value());
  CHECK(calls == 1);

  auto r = arch::visit_family(100100, 2, [](auto t) -> aqueduct::result<std::uint32_t> {
    return decltype(t)::sdma_version;
  });
  static_assert(std::is_same_v<decltype(r), aqueduct::result<std::uint32_t>>);
  REQUIRE(r.has_value());
  CHECK(*r == 50u);  // gfx10.1: SDMA 5.0 (packets.md §3.3 lists navi1x separately)
  CHECK(arch::visit_family(100300, 2, [](auto t) { return decltype(t)::sdma_version; }).value() == 52u);
  CHECK(arch::visit_family(90402, 1, [](auto t) { return decltype(t)::acquire_mem_dwords; }).value() == 7u);
  CHECK(arch::visit_family(110000, 2, [](auto t) { return decltype(t)::acquire_mem_dwords; }).value() == 8u);
  CHECK(arch::visit_family(110000, 2, [](auto t) { return decltype(t)::doorbell_bytes; }).value() == 8u);
}

}  // namespace AQ_UNITY_ID
