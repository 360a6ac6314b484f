// aqueduct/arch/processors.hpp — the processor table: every AMDGPU processor from gfx900 to gfx1201
// plus the generic targets, with constexpr lookups by name, gfx_target_version and EF_AMDGPU_MACH.
//
// Layer: arch. Sources: EF_AMDGPU_MACH from spec/code-objects.md §2.3 (LLVM 19 ELF.h, measured);
// gfx_target_version from the naming rule of spec/kfd.md §6.3 (major*10000 + minor*100 +
// stepping, the stepping being the last name digit in hex); generic membership from
// code-objects.md §6.4; SDMA engine version (major*10 + minor) from packets.md §3 and the
// amdgpu IP-discovery tables; xnack/sramecc support from LLVM's AMDGPUUsage processor table.
// `in_llvm19` is false for the three rows Debian's LLVM 19 does not know (gfx950, gfx1153,
// gfx9-4-generic; `llc-19 -march=amdgcn -mcpu=help`): they are kept because KFD reports
// gfx950 (90500) and gfx1153 (110503) on shipping parts and the runtime must classify them.
// Thread safety: immutable constexpr data.
#pragma once

#include <aqueduct/arch/family.hpp>

#include <cstdint>
#include <span>
#include <string_view>

namespace aqueduct::arch {

struct processor_info {
  std::string_view name;            // LLVM processor name ("gfx942", "gfx11-generic")
  std::uint32_t gfx_target_version;  // KFD sysfs value; 0 for generic targets
  std::uint32_t ef_mach;             // EF_AMDGPU_MACH (e_flags & 0xff)
  family fam;                        // traits family (gfx10.1 uses gfx10_3, see family.hpp)
  std::string_view generic;          // generic target it belongs to; empty if none
  std::uint32_t wave_size;           // default wavefront size (LLVM)
  std::uint32_t sdma_version;        // SDMA IP major*10 + minor (44 = SDMA 4.4); 0 for generics
  std::uint32_t doorbell_bytes;      // 8 on every SOC15 part (spec/kfd.md §3.1)
  bool xnack;                        // target feature xnack supported
  bool sramecc;                      // target feature sramecc supported
  bool is_generic;                   // a generic target (code objects only, never an agent)
  bool in_llvm19;                    // known to Debian's LLVM 19
};

namespace detail {
struct proc_row {
  static constexpr processor_info make(std::string_view n, std::uint32_t v, std::uint32_t m, family f,
                                       std::string_view g, std::uint32_t sdma, bool xn, bool ecc,
                                       bool llvm19 = true) noexcept {
    const std::uint32_t wave = (f == family::gfx9 || f == family::gfx90a || f == family::gfx94x) ? 64 : 32;
    return {n, v, m, f, g, wave, sdma, 8, xn, ecc, false, llvm19};
  }
  static constexpr processor_info generic(std::string_view n, std::uint32_t m, family f, bool xn, bool ecc,
                                          bool llvm19 = true) noexcept {
    const std::uint32_t wave = (f == family::gfx9 || f == family::gfx94x) ? 64 : 32;
    return {n, 0, m, f, {}, wave, 0, 8, xn, ecc, true, llvm19};
  }
};
using F = family;
inline constexpr processor_info processor_table[] = {
    //             name       gfxv    mach  family      generic            sdma xnack sramecc
    proc_row::make("gfx900", 90000, 0x2c, F::gfx9, "gfx9-generic", 40, true, false),
    proc_row::make("gfx902", 90002, 0x2d, F::gfx9, "gfx9-generic", 41, true, false),
    proc_row::make("gfx904", 90004, 0x2e, F::gfx9, "gfx9-generic", 40, true, false),
    proc_row::make("gfx906", 90006, 0x2f, F::gfx9, "gfx9-generic", 42, true, true),
    proc_row::make("gfx908", 90008, 0x30, F::gfx9, "", 42, true, true),
    proc_row::make("gfx909", 90009, 0x31, F::gfx9, "gfx9-generic", 41, true, false),
    proc_row::make("gfx90a", 90010, 0x3f, F::gfx90a, "", 44, true, true),
    proc_row::make("gfx90c", 90012, 0x32, F::gfx9, "gfx9-generic", 41, true, false),
    proc_row::make("gfx940", 90400, 0x40, F::gfx94x, "gfx9-4-generic", 44, true, true),
    proc_row::make("gfx941", 90401, 0x4b, F::gfx94x, "gfx9-4-generic", 44, true, true),
    proc_row::make("gfx942", 90402, 0x4c, F::gfx94x, "gfx9-4-generic", 44, true, true),
    proc_row::make("gfx950", 90500, 0x4f, F::gfx94x, "gfx9-4-generic", 44, true, true, false),
    proc_row::make("gfx1010", 100100, 0x33, F::gfx10_3, "gfx10-1-generic", 50, true, false),
    proc_row::make("gfx1011", 100101, 0x34, F::gfx10_3, "gfx10-1-generic", 50, true, false),
    proc_row::make("gfx1012", 100102, 0x35, F::gfx10_3, "gfx10-1-generic", 50, true, false),
    proc_row::make("gfx1013", 100103, 0x42, F::gfx10_3, "gfx10-1-generic", 50, true, false),
    proc_row::make("gfx1030", 100300, 0x36, F::gfx10_3, "gfx10-3-generic", 52, false, false),
    proc_row::make("gfx1031", 100301, 0x37, F::gfx10_3, "gfx10-3-generic", 52, false, false),
    proc_row::make("gfx1032", 100302, 0x38, F::gfx10_3, "gfx10-3-generic", 52, false, false),
    proc_row::make("gfx1033", 100303, 0x39, F::gfx10_3, "gfx10-3-generic", 52, false, false),
    proc_row::make("gfx1034", 100304, 0x3e, F::gfx10_3, "gfx10-3-generic", 52, false, false),
    proc_row::make("gfx1035", 100305, 0x3d, F::gfx10_3, "gfx10-3-generic", 52, false, false),
    proc_row::make("gfx1036", 100306, 0x45, F::gfx10_3, "gfx10-3-generic", 52, false, false),
    proc_row::make("gfx1100", 110000, 0x41, F::gfx11, "gfx11-generic", 60, false, false),
    proc_row::make("gfx1101", 110001, 0x46, F::gfx11, "gfx11-generic", 60, false, false),
    proc_row::make("gfx1102", 110002, 0x47, F::gfx11, "gfx11-generic", 60, false, false),
    proc_row::make("gfx1103", 110003, 0x44, F::gfx11, "gfx11-generic", 60, false, false),
    proc_row::make("gfx1150", 110500, 0x43, F::gfx11, "gfx11-generic", 61, false, false),
    proc_row::make("gfx1151", 110501, 0x4a, F::gfx11, "gfx11-generic", 61, false, false),
    proc_row::make("gfx1152", 110502, 0x55, F::gfx11, "gfx11-generic", 61, false, false),
    proc_row::make("gfx1153", 110503, 0x58, F::gfx11, "gfx11-generic", 61, false, false, false),
    proc_row::make("gfx1200", 120000, 0x48, F::gfx12, "gfx12-generic", 70, false, false),
    proc_row::make("gfx1201", 120001, 0x4e, F::gfx12, "gfx12-generic", 70, false, false),
    //                name              mach  family      xnack sramecc
    proc_row::generic("gfx9-generic", 0x51, F::gfx9, true, false),
    proc_row::generic("gfx9-4-generic", 0x5f, F::gfx94x, true, true, false),
    proc_row::generic("gfx10-1-generic", 0x52, F::gfx10_3, true, false),
    proc_row::generic("gfx10-3-generic", 0x53, F::gfx10_3, false, false),
    proc_row::generic("gfx11-generic", 0x54, F::gfx11, false, false),
    proc_row::generic("gfx12-generic", 0x59, F::gfx12, false, false),
};
}  // namespace detail

// Every row, processors first (by gfx_target_version), then the generic targets.
[[nodiscard]] constexpr std::span<const processor_info> processors() noexcept { return detail::processor_table; }

[[nodiscard]] constexpr const processor_info* find_processor(std::string_view name) noexcept {
  for (const auto& p : detail::processor_table)
    if (p.name == name) return &p;
  return nullptr;
}
// Only real processors have a gfx_target_version; 0 finds nothing.
[[nodiscard]] constexpr const processor_info* find_processor_by_version(std::uint32_t gfx_target_version) noexcept {
  if (gfx_target_version == 0) return nullptr;
  for (const auto& p : detail::processor_table)
    if (p.gfx_target_version == gfx_target_version) return &p;
  return nullptr;
}
// `mach` is EF_AMDGPU_MACH, i.e. e_flags & 0xff. Unknown values give nullptr, never an error:
// a code-object reader reports them as "unknown processor" (code-objects.md §2.3).
[[nodiscard]] constexpr const processor_info* find_processor_by_mach(std::uint32_t mach) noexcept {
  for (const auto& p : detail::processor_table)
    if (p.ef_mach == mach) return &p;
  return nullptr;
}

// The processor name KFD's gfx_target_version spells ("gfx" + major + minor + stepping in hex),
// e.g. 90010 → "gfx90a", 110003 → "gfx1103"; written into `buf`, returns the used part.
[[nodiscard]] constexpr std::string_view processor_name_of(std::uint32_t gfxv, std::span<char, 16> buf) noexcept {
  std::size_t n = 0;
  const auto put_dec = [&](std::uint32_t v) {
    char tmp[10]{};
    std::size_t k = 0;
    do { tmp[k++] = static_cast<char>('0' + v % 10); v /= 10; } while (v != 0 && k < sizeof tmp);
    while (k > 0 && n < buf.size()) buf[n++] = tmp[--k];
  };
  buf[n++] = 'g'; buf[n++] = 'f'; buf[n++] = 'x';
  put_dec(gfx_major(gfxv));
  put_dec(gfx_minor(gfxv));
  const std::uint32_t step = gfx_stepping(gfxv);
  if (n < buf.size()) buf[n++] = "0123456789abcdef"[step & 0xf];
  return {buf.data(), n};
}

}  // namespace aqueduct::arch
