// aqueduct/emu/presets.hpp — topology presets of real GPUs for the emulated KFD device.
//
// Layer: emu. Each preset is the set of KFD sysfs node properties (spec/kfd.md §6.2) of one real
// GPU node, with its source. Values the source does not give are marked "assumed" in a comment;
// the CWSR sizes are never stored here: the machine computes them with the kernel's formula
// (arch::kernel_cwsr_sizes), exactly as KFD does when it adds the node.
//   mi300x    — AMD Instinct MI300X, gfx942, 8 XCCs (spec/kfd.md §6.5 B, a real KFD capture).
//   rx7900xtx — Radeon RX 7900 XTX, gfx1100 (spec/kfd.md §6.5 H, tinygrad mock copied from a card).
//   mi250x    — one GCD of an Instinct MI250X, gfx90a (spec/kfd.md §1.5; array_count 8 and
//               simd_arrays_per_engine 1 are assumed there, UNVERIFIED; the rest assumed below).
//   rx6900xt  — Radeon RX 6900 XT, gfx1030 / Navi 21 (80 CUs, 4 SEs x 2 SHs, device id 0x73BF:
//               public rocminfo-style figures; no KFD capture found, so the whole row is UNVERIFIED).
//   rx9070xt  — Radeon RX 9070 XT, gfx1201 / Navi 48. Published: 64 CUs (4096 stream processors),
//               2970 MHz boost, 16 GB GDDR6 on a 256-bit bus (AMD's launch specifications as reported
//               by Linux Format, June 2025, "Inside the DNA of AMD", and multiplayer.it); PCI device
//               id 0x7550 (pci.ids "Navi 48 [Radeon RX 9070/9070 XT]", lspci [1002:7550]); wave32,
//               gfx_target_version 120001 (arch/processors.hpp). No KFD capture found: the SE/SH
//               layout (4 SEs x 2 SHs x 8 CUs), waves per SIMD, queue counts and firmware numbers
//               follow the RX 7900 XTX row and are UNVERIFIED.
// Thread safety: immutable data.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace aqueduct::emu {

// One GPU node's properties as the kernel prints them. Counts of mem_banks / caches / io_links /
// p2p_links and drm_render_minor are not here: the machine derives them from what it writes.
struct gpu_properties {
  std::string_view preset;        // preset key ("mi300x")
  std::string_view name;          // nodes/N/name (amdgpu ASIC name; UNVERIFIED per ASIC)
  std::uint32_t cpu_cores_count = 0;
  std::uint32_t simd_count = 0;   // SIMDs of the node, summed over XCCs
  std::uint32_t cpu_core_id_base = 0;
  std::uint64_t simd_id_base = 0;
  std::uint32_t max_waves_per_simd = 0;
  std::uint32_t lds_size_in_kb = 0;
  std::uint32_t gds_size_in_kb = 0;
  std::uint32_t num_gws = 0;
  std::uint32_t wave_front_size = 0;
  std::uint32_t array_count = 0;  // as printed: (SE x SH per SE) x num_xcc
  std::uint32_t simd_arrays_per_engine = 0;
  std::uint32_t cu_per_simd_array = 0;
  std::uint32_t simd_per_cu = 0;
  std::uint32_t max_slots_scratch_cu = 0;
  std::uint32_t gfx_target_version = 0;
  std::uint32_t vendor_id = 0;
  std::uint32_t device_id = 0;
  std::uint32_t location_id = 0;
  std::uint32_t domain = 0;
  std::uint64_t hive_id = 0;
  std::uint32_t num_sdma_engines = 0;
  std::uint32_t num_sdma_xgmi_engines = 0;
  std::uint32_t num_sdma_queues_per_engine = 0;
  std::uint32_t num_cp_queues = 0;
  std::uint32_t max_engine_clk_fcompute = 0;
  std::uint32_t fw_version = 0;
  std::uint32_t capability = 0;
  std::uint32_t capability2 = 0;
  std::uint32_t debug_prop = 0;
  std::uint32_t sdma_fw_version = 0;
  std::uint64_t unique_id = 0;
  std::uint32_t num_xcc = 1;
  std::uint32_t max_engine_clk_ccompute = 0;
  // mem_banks/0
  std::uint64_t vram_size = 0;    // size_in_bytes
  std::uint32_t vram_width = 0;
  std::uint32_t vram_clk_max = 0;
  bool xgmi_io_link = false;      // GPUs of one hive are linked by XGMI (io_link type 11)
};

// The CPU node written as node 0 (spec/kfd.md §6.5 G: the MI300X capture's CPU node).
struct cpu_properties {
  std::uint32_t cpu_cores_count = 24;
  std::uint32_t max_engine_clk_ccompute = 4000;
  std::uint64_t memory_size = 64ull << 30;  // assumed: mem_banks/0 of the CPU node
};

namespace presets {

inline constexpr gpu_properties mi300x = [] {
  gpu_properties p{};
  p.preset = "mi300x";
  p.name = "ip discovery";  // IP-discovery ASIC (spec/kfd.md §6.1)
  p.simd_count = 1216;
  p.simd_id_base = 2147487784ull;
  p.max_waves_per_simd = 8;
  p.lds_size_in_kb = 64;
  p.num_gws = 64;
  p.wave_front_size = 64;
  p.array_count = 32;
  p.simd_arrays_per_engine = 1;
  p.cu_per_simd_array = 10;
  p.simd_per_cu = 4;
  p.max_slots_scratch_cu = 32;
  p.gfx_target_version = 90402;
  p.vendor_id = 4098;
  p.device_id = 29857;
  p.location_id = 9728;
  p.hive_id = 7773567030725891371ull;
  p.num_sdma_engines = 2;
  p.num_sdma_xgmi_engines = 14;
  p.num_sdma_queues_per_engine = 8;
  p.num_cp_queues = 24;
  p.max_engine_clk_fcompute = 2100;
  p.fw_version = 192;
  p.capability = 2893521536u;
  p.capability2 = 1;
  p.debug_prop = 1511;
  p.sdma_fw_version = 25;
  p.unique_id = 5593906200782126851ull;
  p.num_xcc = 8;
  p.max_engine_clk_ccompute = 2400;
  p.vram_size = 206141652992ull;
  p.vram_width = 8192;
  p.vram_clk_max = 1300;
  p.xgmi_io_link = true;
  return p;
}();

inline constexpr gpu_properties rx7900xtx = [] {
  gpu_properties p{};
  p.preset = "rx7900xtx";
  p.name = "ip discovery";
  p.simd_count = 192;
  p.simd_id_base = 2147488032ull;
  p.max_waves_per_simd = 16;
  p.lds_size_in_kb = 64;
  p.num_gws = 64;
  p.wave_front_size = 32;
  p.array_count = 12;
  p.simd_arrays_per_engine = 2;
  p.cu_per_simd_array = 8;
  p.simd_per_cu = 2;
  p.max_slots_scratch_cu = 32;
  p.gfx_target_version = 110000;
  p.vendor_id = 4098;
  p.device_id = 29772;
  p.location_id = 34304;
  p.num_sdma_engines = 2;
  p.num_sdma_xgmi_engines = 0;
  p.num_sdma_queues_per_engine = 6;
  p.num_cp_queues = 8;
  p.max_engine_clk_fcompute = 2482;
  p.fw_version = 2140;
  p.capability = 671588992u;
  p.capability2 = 0;  // assumed (not in the source)
  p.debug_prop = 1495;
  p.sdma_fw_version = 20;
  p.unique_id = 11673270660693242239ull;
  p.num_xcc = 1;
  p.max_engine_clk_ccompute = 2400;
  p.vram_size = 24ull << 30;  // assumed: 24 GiB card
  p.vram_width = 384;         // assumed
  p.vram_clk_max = 1250;      // assumed
  return p;
}();

inline constexpr gpu_properties mi250x = [] {
  gpu_properties p{};
  p.preset = "mi250x";
  p.name = "aldebaran";  // UNVERIFIED
  p.simd_count = 440;    // 110 CUs x 4 (spec/kfd.md §1.5)
  p.simd_id_base = 2147487744ull;  // 0x80001000 (spec/kfd.md §6.2), assumed for this part
  p.max_waves_per_simd = 8;        // assumed (gfx9 CDNA value)
  p.lds_size_in_kb = 64;
  p.num_gws = 64;                  // assumed
  p.wave_front_size = 64;
  p.array_count = 8;               // assumed (spec/kfd.md §1.5, UNVERIFIED)
  p.simd_arrays_per_engine = 1;    // assumed (idem)
  p.cu_per_simd_array = 14;        // assumed: ceil(110 / 8)
  p.simd_per_cu = 4;
  p.max_slots_scratch_cu = 32;     // assumed
  p.gfx_target_version = 90010;
  p.vendor_id = 4098;
  p.device_id = 29704;             // 0x7408, assumed
  p.location_id = 49920;           // assumed
  p.hive_id = 0x4d49323530ull;     // assumed: nonzero, GCDs share an XGMI hive
  p.num_sdma_engines = 2;          // assumed
  p.num_sdma_xgmi_engines = 3;     // assumed
  p.num_sdma_queues_per_engine = 8;
  p.num_cp_queues = 24;            // assumed
  p.max_engine_clk_fcompute = 1700;
  p.fw_version = 78;               // assumed
  p.capability = 746037888u;       // assumed
  p.debug_prop = 1495;             // assumed
  p.sdma_fw_version = 8;           // assumed
  p.unique_id = 0x2d9ad1f1a2c0f0ull;  // assumed
  p.num_xcc = 1;
  p.max_engine_clk_ccompute = 2400;
  p.vram_size = 64ull << 30;       // 64 GiB HBM2e per GCD
  p.vram_width = 4096;
  p.vram_clk_max = 1600;
  p.xgmi_io_link = true;
  return p;
}();

inline constexpr gpu_properties rx6900xt = [] {
  gpu_properties p{};
  p.preset = "rx6900xt";
  p.name = "sienna_cichlid";      // UNVERIFIED
  p.simd_count = 160;             // 80 CUs x 2 SIMDs
  p.simd_id_base = 2147487744ull;  // assumed
  p.max_waves_per_simd = 16;      // rocminfo "Max Waves Per CU 32" / 2
  p.lds_size_in_kb = 64;
  p.num_gws = 64;                 // assumed
  p.wave_front_size = 32;
  p.array_count = 8;              // 4 SEs x 2 SHs
  p.simd_arrays_per_engine = 2;
  p.cu_per_simd_array = 10;
  p.simd_per_cu = 2;
  p.max_slots_scratch_cu = 32;    // assumed
  p.gfx_target_version = 100300;
  p.vendor_id = 4098;
  p.device_id = 29631;            // 0x73BF
  p.location_id = 2816;           // assumed
  p.num_sdma_engines = 4;         // assumed (Navi 21 has 4 SDMA instances)
  p.num_sdma_xgmi_engines = 0;
  p.num_sdma_queues_per_engine = 8;  // assumed
  p.num_cp_queues = 8;            // assumed
  p.max_engine_clk_fcompute = 2660;  // assumed (boost clock)
  p.fw_version = 115;             // assumed
  p.capability = 671588992u;      // assumed (same family bits as gfx11 capture)
  p.debug_prop = 1495;            // assumed
  p.sdma_fw_version = 80;         // assumed
  p.unique_id = 0x1c2b3d4e5f60718ull;  // assumed
  p.num_xcc = 1;
  p.max_engine_clk_ccompute = 2400;
  p.vram_size = 16ull << 30;      // 16 GiB
  p.vram_width = 256;
  p.vram_clk_max = 1000;          // assumed
  return p;
}();

inline constexpr gpu_properties rx9070xt = [] {
  gpu_properties p{};
  p.preset = "rx9070xt";
  p.name = "ip discovery";
  p.simd_count = 128;            // 64 CUs x 2 SIMDs
  p.simd_id_base = 2147488032ull;  // assumed (as rx7900xtx)
  p.max_waves_per_simd = 16;     // UNVERIFIED
  p.lds_size_in_kb = 64;
  p.num_gws = 64;
  p.wave_front_size = 32;
  p.array_count = 8;             // UNVERIFIED: 4 SEs x 2 SHs
  p.simd_arrays_per_engine = 2;  // UNVERIFIED
  p.cu_per_simd_array = 8;       // 64 CUs / 8 SHs
  p.simd_per_cu = 2;
  p.max_slots_scratch_cu = 32;   // assumed (as rx7900xtx)
  p.gfx_target_version = 120001;
  p.vendor_id = 4098;
  p.device_id = 30032;           // 0x7550
  p.location_id = 768;           // assumed: bus 03:00.0
  p.num_sdma_engines = 2;        // UNVERIFIED
  p.num_sdma_xgmi_engines = 0;
  p.num_sdma_queues_per_engine = 6;  // UNVERIFIED
  p.num_cp_queues = 8;           // UNVERIFIED
  p.max_engine_clk_fcompute = 2970;
  p.fw_version = 2140;           // assumed
  p.capability = 671588992u;     // assumed (as rx7900xtx)
  p.capability2 = 0;
  p.debug_prop = 1495;           // assumed
  p.sdma_fw_version = 20;        // assumed
  p.unique_id = 11673270660693242240ull;  // assumed
  p.num_xcc = 1;
  p.max_engine_clk_ccompute = 2400;  // assumed
  p.vram_size = 16ull << 30;
  p.vram_width = 256;
  p.vram_clk_max = 2518;         // 20 Gbps GDDR6
  return p;
}();

inline constexpr gpu_properties all[] = {mi300x, rx7900xtx, mi250x, rx6900xt, rx9070xt};

}  // namespace presets

// The preset called `key`, or nullptr.
[[nodiscard]] constexpr const gpu_properties* find_preset(std::string_view key) noexcept {
  for (const auto& p : presets::all)
    if (p.preset == key) return &p;
  return nullptr;
}
[[nodiscard]] constexpr std::span<const gpu_properties> all_presets() noexcept { return presets::all; }

}  // namespace aqueduct::emu
