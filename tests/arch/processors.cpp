// Tests for arch/processors.hpp. Expected values: the EF_AMDGPU_MACH table of
// spec/code-objects.md §2.3 (copied below), Debian's /usr/include/hsa/amd_hsa_elf.h (ROCm 5.2,
// older processors only), the gfx_target_version examples of spec/kfd.md §6.3 and the generic
// membership of code-objects.md §6.4. (llvm_processors.cpp checks the same table against LLVM 19.)
#include <aqueduct/arch/processors.hpp>

#include <doctest/doctest.h>
#include <hsa/amd_hsa_elf.h>

#include <set>
#include <string>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

namespace arch = aqueduct::arch;

TEST_CASE("EF_AMDGPU_MACH values of spec/code-objects.md §2.3") {
  struct row { const char* name; std::uint32_t mach; };
  const row spec[] = {
      {"gfx900", 0x2c},  {"gfx902", 0x2d},  {"gfx904", 0x2e},  {"gfx906", 0x2f},  {"gfx908", 0x30},
      {"gfx909", 0x31},  {"gfx90c", 0x32},  {"gfx90a", 0x3f},  {"gfx940", 0x40},  {"gfx941", 0x4b},
      {"gfx942", 0x4c},  {"gfx950", 0x4f},  {"gfx1010", 0x33}, {"gfx1011", 0x34}, {"gfx1012", 0x35},
      {"gfx1013", 0x42}, {"gfx1030", 0x36}, {"gfx1031", 0x37}, {"gfx1032", 0x38}, {"gfx1033", 0x39},
      {"gfx1034", 0x3e}, {"gfx1035", 0x3d}, {"gfx1036", 0x45}, {"gfx1100", 0x41}, {"gfx1101", 0x46},
      {"gfx1102", 0x47}, {"gfx1103", 0x44}, {"gfx1150", 0x43}, {"gfx1151", 0x4a}, {"gfx1152", 0x55},
      {"gfx1153", 0x58}, {"gfx1200", 0x48}, {"gfx1201", 0x4e}, {"gfx9-generic", 0x51},
      {"gfx9-4-generic", 0x5f}, {"gfx10-1-generic", 0x52}, {"gfx10-3-generic", 0x53},
      {"gfx11-generic", 0x54}, {"gfx12-generic", 0x59},
  };
  std::set<std::string> seen;
  for (const auto& r : spec) {
    CAPTURE(r.name);
    const auto* p = arch::find_processor(r.name);
    REQUIRE(p != nullptr);
    CHECK(p->ef_mach == r.mach);
    CHECK(arch::find_processor_by_mach(r.mach) == p);
    seen.insert(r.name);
  }
  CHECK(seen.size() == arch::processors().size());  // no row the spec does not list
  CHECK(arch::find_processor_by_mach(0x2a) == nullptr);  // gfx803: outside the table
  CHECK(arch::find_processor_by_mach(0x56) == nullptr);  // reserved in LLVM 19
}

TEST_CASE("EF_AMDGPU_MACH agrees with Debian's amd_hsa_elf.h") {
  struct row { const char* name; unsigned mach; };
  const row hsa[] = {
      {"gfx900", ELF::EF_AMDGPU_MACH_AMDGCN_GFX900},   {"gfx902", ELF::EF_AMDGPU_MACH_AMDGCN_GFX902},
      {"gfx904", ELF::EF_AMDGPU_MACH_AMDGCN_GFX904},   {"gfx906", ELF::EF_AMDGPU_MACH_AMDGCN_GFX906},
      {"gfx908", ELF::EF_AMDGPU_MACH_AMDGCN_GFX908},   {"gfx909", ELF::EF_AMDGPU_MACH_AMDGCN_GFX909},
      {"gfx90c", ELF::EF_AMDGPU_MACH_AMDGCN_GFX90C},   {"gfx90a", ELF::EF_AMDGPU_MACH_AMDGCN_GFX90A},
      {"gfx1010", ELF::EF_AMDGPU_MACH_AMDGCN_GFX1010}, {"gfx1011", ELF::EF_AMDGPU_MACH_AMDGCN_GFX1011},
      {"gfx1012", ELF::EF_AMDGPU_MACH_AMDGCN_GFX1012}, {"gfx1013", ELF::EF_AMDGPU_MACH_AMDGCN_GFX1013},
      {"gfx1030", ELF::EF_AMDGPU_MACH_AMDGCN_GFX1030}, {"gfx1031", ELF::EF_AMDGPU_MACH_AMDGCN_GFX1031},
      {"gfx1032", ELF::EF_AMDGPU_MACH_AMDGCN_GFX1032}, {"gfx1033", ELF::EF_AMDGPU_MACH_AMDGCN_GFX1033},
      {"gfx1034", ELF::EF_AMDGPU_MACH_AMDGCN_GFX1034}, {"gfx1035", ELF::EF_AMDGPU_MACH_AMDGCN_GFX1035},
  };
  for (const auto& r : hsa) {
    CAPTURE(r.name);
    const auto* p = arch::find_processor(r.name);
    REQUIRE(p != nullptr);
    CHECK(p->ef_mach == r.mach);
  }
}

TEST_CASE("gfx_target_version per spec/kfd.md §6.3") {
  struct row { const char* name; std::uint32_t v; };
  const row spec[] = {{"gfx1100", 110000}, {"gfx1101", 110001}, {"gfx1102", 110002}, {"gfx1103", 110003},
                      {"gfx90a", 90010},   {"gfx908", 90008},   {"gfx906", 90006},   {"gfx942", 90402},
                      {"gfx950", 90500},   {"gfx1030", 100300}, {"gfx1201", 120001},
                      // GC-IP map of §6.3: 11.5.x → 1105xx, 12.0.0 → 120000, 10.3.x → 1003xx
                      {"gfx1150", 110500}, {"gfx1151", 110501}, {"gfx1152", 110502}, {"gfx1200", 120000},
                      {"gfx1035", 100305}, {"gfx1036", 100306}, {"gfx1034", 100304}};
  for (const auto& r : spec) {
    CAPTURE(r.name);
    const auto* p = arch::find_processor(r.name);
    REQUIRE(p != nullptr);
    CHECK(p->gfx_target_version == r.v);
    CHECK(arch::find_processor_by_version(r.v) == p);
  }
  // Every real processor's name follows the §6.3 spelling rule; generics have no version.
  for (const auto& p : arch::processors()) {
    CAPTURE(p.name);
    if (p.is_generic) {
      CHECK(p.gfx_target_version == 0);
      continue;
    }
    char buf[16];
    CHECK(arch::processor_name_of(p.gfx_target_version, buf) == p.name);
    CHECK(arch::family_of(p.gfx_target_version) == p.fam);
  }
  CHECK(arch::find_processor_by_version(0) == nullptr);
  CHECK(arch::find_processor_by_version(80003) == nullptr);
}

TEST_CASE("generic targets per spec/code-objects.md §6.4, families, wave size, doorbells") {
  auto generic = [](const char* n) { return std::string(arch::find_processor(n)->generic); };
  for (const char* n : {"gfx900", "gfx902", "gfx904", "gfx906", "gfx909", "gfx90c"}) CHECK(generic(n) == "gfx9-generic");
  for (const char* n : {"gfx908", "gfx90a"}) CHECK(generic(n).empty());
  for (const char* n : {"gfx940", "gfx941", "gfx942", "gfx950"}) CHECK(generic(n) == "gfx9-4-generic");
  for (const char* n : {"gfx1010", "gfx1011", "gfx1012", "gfx1013"}) CHECK(generic(n) == "gfx10-1-generic");
  for (const char* n : {"gfx1030", "gfx1031", "gfx1032", "gfx1033", "gfx1034", "gfx1035", "gfx1036"})
    CHECK(generic(n) == "gfx10-3-generic");
  for (const char* n : {"gfx1100", "gfx1101", "gfx1102", "gfx1103", "gfx1150", "gfx1151", "gfx1152", "gfx1153"})
    CHECK(generic(n) == "gfx11-generic");
  for (const char* n : {"gfx1200", "gfx1201"}) CHECK(generic(n) == "gfx12-generic");

  // Every named generic exists as a row of its own, of the same family.
  for (const auto& p : arch::processors()) {
    CAPTURE(p.name);
    CHECK(p.doorbell_bytes == 8u);  // SOC15 (spec/kfd.md §3.1)
    if (p.generic.empty()) continue;
    const auto* g = arch::find_processor(p.generic);
    REQUIRE(g != nullptr);
    CHECK(g->is_generic);
    CHECK(g->fam == p.fam);
  }
  // KFD sysfs wave_front_size: 64 on MI300X, 32 on RX 7900 XTX (spec/kfd.md §6.5 B, H).
  CHECK(arch::find_processor("gfx942")->wave_size == 64u);
  CHECK(arch::find_processor("gfx1100")->wave_size == 32u);
  CHECK(arch::find_processor("gfx90a")->fam == arch::family::gfx90a);
  CHECK(arch::find_processor("gfx950")->fam == arch::family::gfx94x);
  CHECK(arch::find_processor("gfx1012")->fam == arch::family::gfx10_3);  // documented decision
  CHECK(arch::find_processor("gfx1100")->sdma_version / 10 == 6);         // SDMA 6 for gfx11 (packets.md §3.2)
  CHECK(arch::find_processor("gfx1201")->sdma_version / 10 == 7);
  CHECK(arch::find_processor("gfx942")->sdma_version / 10 == 4);
  CHECK(arch::find_processor("nope") == nullptr);
}

}  // namespace AQ_UNITY_ID
