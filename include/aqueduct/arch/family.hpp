// aqueduct/arch/family.hpp — GPU families and their compile-time traits.
//
// Layer: arch. A family tag (`gfx9_tag` … `gfx12_tag`) carries, as constexpr members, what a
// packet encoder or the emulator's command processor needs per generation: the absolute dword
// addresses of the compute SH registers, the COMPUTE_PGM_RSRC1/2/3, TMPRING_SIZE,
// DISPATCH_INITIATOR, RESOURCE_LIMITS and NUM_THREAD field layouts as core/bits.hpp bitfields,
// the PM4 ACQUIRE_MEM length, the doorbell width and the SDMA engine version.
// Sources: spec/packets.md §1.1–§1.5 (registers, fields), §3 (SDMA), spec/kfd.md §3.1 (doorbells),
// §6.3 (gfx_target_version).
//
// gfx10.1 (gfx1010–gfx1013, Navi1x) has no tag of its own: its compute SH register map and RSRC
// layouts are those of GC 10.x, identical to gfx10.3, so it uses `gfx10_3_tag`; the differences
// that matter to aqueduct (SDMA 5.0 with 22-bit copy counts) are carried by the target's quirks
// (arch/target.hpp). `family_of()` therefore maps 10.1.x to family::gfx10_3.
//
// PRIV (COMPUTE_PGM_RSRC1 bit 20) is deliberately NOT part of the encoder-facing rsrc1 layouts:
// a PM4 encoder obtains RSRC1 only through `target<…>::pm4_compute_pgm_rsrc1` (arch/target.hpp),
// which sets it on the GFX11 parts that need it and can never set it elsewhere. Decoders (the
// emulator) read it with `compute_pgm_rsrc1_priv`.
// Thread safety: constants and pure functions only.
#pragma once

#include <aqueduct/abi/pm4.hpp>
#include <aqueduct/core/bits.hpp>

#include <concepts>
#include <cstdint>
#include <optional>
#include <string_view>

namespace aqueduct::arch {

enum class family : std::uint8_t { gfx9, gfx90a, gfx94x, gfx10_3, gfx11, gfx12 };

inline constexpr family all_families[] = {family::gfx9,    family::gfx90a, family::gfx94x,
                                          family::gfx10_3, family::gfx11,  family::gfx12};

[[nodiscard]] constexpr std::string_view family_name(family f) noexcept {
  switch (f) {
    case family::gfx9: return "gfx9";
    case family::gfx90a: return "gfx90a";
    case family::gfx94x: return "gfx94x";
    case family::gfx10_3: return "gfx10.3";
    case family::gfx11: return "gfx11";
    case family::gfx12: return "gfx12";
  }
  return "unknown";
}

// gfx_target_version = major*10000 + minor*100 + stepping (spec/kfd.md §6.3).
[[nodiscard]] constexpr std::uint32_t gfx_major(std::uint32_t gfxv) noexcept { return gfxv / 10000; }
[[nodiscard]] constexpr std::uint32_t gfx_minor(std::uint32_t gfxv) noexcept { return gfxv / 100 % 100; }
[[nodiscard]] constexpr std::uint32_t gfx_stepping(std::uint32_t gfxv) noexcept { return gfxv % 100; }

// Family of a gfx_target_version, decided by major.minor (and the gfx90a stepping) rather than
// by an exact table match, so HSA_OVERRIDE_GFX_VERSION-style values of a known generation still
// classify. nullopt for gfx6–gfx8, gfx12.5 and anything newer.
[[nodiscard]] constexpr std::optional<family> family_of(std::uint32_t gfxv) noexcept {
  const std::uint32_t major = gfx_major(gfxv), minor = gfx_minor(gfxv), step = gfx_stepping(gfxv);
  if (major == 9 && minor == 0) return step == 10 ? family::gfx90a : family::gfx9;  // gfx90a = 9.0.10
  if (major == 9 && (minor == 4 || minor == 5)) return family::gfx94x;             // gfx940–942, gfx950
  if (major == 10 && (minor == 1 || minor == 3)) return family::gfx10_3;           // 10.1 → gfx10.3 traits
  if (major == 11 && (minor == 0 || minor == 5)) return family::gfx11;             // gfx110x, gfx115x
  if (major == 12 && minor == 0) return family::gfx12;                             // gfx1200, gfx1201
  return std::nullopt;
}
[[nodiscard]] constexpr bool is_gfx10_1(std::uint32_t gfxv) noexcept { return gfx_major(gfxv) == 10 && gfx_minor(gfxv) == 1; }

// spec/kfd.md §4 (kfdtest NeedCwsrWA, ROCT c18981f3): hardware bug DEGFX11_12113. PM4 dispatches
// must set COMPUTE_PGM_RSRC1.PRIV on engine 11.0.0, 11.0.1, 11.0.2, 11.0.5, and on 11.0.3 only
// when simd_arrays_per_engine (libhsakmt NumArrays) > 1; setting it on any other part hangs.
// "Engine" is libhsakmt's EngineId, i.e. the gfx_target_version split into major.minor.stepping
// (gfx1100 = 11.0.0 … gfx1103 = 11.0.3), NOT the GC IP version. 11.0.5 (110005) names no
// processor LLVM knows (it is not gfx1150, which is 11.5.0); it is kept because kfdtest lists it.
// AQL dispatch needs no workaround: the CP builds RSRC1 from the kernel descriptor itself.
[[nodiscard]] constexpr bool needs_pm4_priv(std::uint32_t gfx_target_version, std::uint32_t simd_arrays_per_engine) noexcept {
  switch (gfx_target_version) {
    case 110000:
    case 110001:
    case 110002:
    case 110005: return true;
    case 110003: return simd_arrays_per_engine > 1;
    default: return false;
  }
}

// COMPUTE_PGM_RSRC1.PRIV, for decoders only (spec/packets.md §1.5). Encoders: arch/target.hpp.
using compute_pgm_rsrc1_priv = bitflag<20>;

// Register-window constants shared by every family (spec/packets.md §1.2).
inline constexpr std::uint32_t sh_reg_base = 0x2C00;   // SET_SH_REG offset = abs − 0x2C00
inline constexpr std::uint32_t sh_reg_end = 0x3000;    // one past the SH window
inline constexpr std::uint32_t no_register = 0;        // "this family has no such register"
[[nodiscard]] constexpr std::uint32_t sh_offset(std::uint32_t abs_dword_addr) noexcept { return abs_dword_addr - sh_reg_base; }

namespace detail {

// Compute SH registers, absolute dword addresses (spec/packets.md §1.4); identical gfx9–gfx12.
struct compute_regs_common {
  static constexpr std::uint32_t compute_dispatch_initiator = 0x2E00;
  static constexpr std::uint32_t compute_dim_x = 0x2E01, compute_dim_y = 0x2E02, compute_dim_z = 0x2E03;
  static constexpr std::uint32_t compute_start_x = 0x2E04, compute_start_y = 0x2E05, compute_start_z = 0x2E06;
  static constexpr std::uint32_t compute_num_thread_x = 0x2E07, compute_num_thread_y = 0x2E08, compute_num_thread_z = 0x2E09;
  static constexpr std::uint32_t compute_pipelinestat_enable = 0x2E0A, compute_perfcount_enable = 0x2E0B;
  static constexpr std::uint32_t compute_pgm_lo = 0x2E0C, compute_pgm_hi = 0x2E0D;  // address >> 8
  static constexpr std::uint32_t compute_dispatch_pkt_addr_lo = 0x2E0E, compute_dispatch_pkt_addr_hi = 0x2E0F;
  static constexpr std::uint32_t compute_dispatch_scratch_base_lo = 0x2E10, compute_dispatch_scratch_base_hi = 0x2E11;
  static constexpr std::uint32_t compute_pgm_rsrc1 = 0x2E12, compute_pgm_rsrc2 = 0x2E13;
  static constexpr std::uint32_t compute_vmid = 0x2E14;
  static constexpr std::uint32_t compute_resource_limits = 0x2E15;
  static constexpr std::uint32_t compute_static_thread_mgmt_se0 = 0x2E16, compute_static_thread_mgmt_se1 = 0x2E17;
  static constexpr std::uint32_t compute_tmpring_size = 0x2E18;
  static constexpr std::uint32_t compute_static_thread_mgmt_se2 = 0x2E19, compute_static_thread_mgmt_se3 = 0x2E1A;
  static constexpr std::uint32_t compute_restart_x = 0x2E1B, compute_restart_y = 0x2E1C, compute_restart_z = 0x2E1D;
  static constexpr std::uint32_t compute_thread_trace_enable = 0x2E1E;
  static constexpr std::uint32_t compute_dispatch_id = 0x2E20, compute_threadgroup_id = 0x2E21;
  static constexpr std::uint32_t compute_user_data_0 = 0x2E40;
  static constexpr std::uint32_t user_data_count = 16;  // COMPUTE_USER_DATA_0..15
  static constexpr std::uint32_t compute_dispatch_end = 0x2E7E;
  [[nodiscard]] static constexpr std::uint32_t compute_user_data(std::uint32_t i) noexcept { return compute_user_data_0 + i; }
};
struct compute_regs_gfx9 : compute_regs_common {  // gfx900–gfx90c: no RSRC3, no checksum reg listed
  static constexpr std::uint32_t compute_pgm_rsrc3 = no_register;
  static constexpr std::uint32_t compute_shader_chksum = no_register;
  static constexpr std::uint32_t compute_user_accum_0 = no_register;
  static constexpr std::uint32_t compute_dispatch_tunnel = no_register;
};
struct compute_regs_gfx90a : compute_regs_gfx9 {  // RSRC3 at 0x2E2D on gfx90a/gfx94x (ROCT ALDEBARAN)
  static constexpr std::uint32_t compute_pgm_rsrc3 = 0x2E2D;
};
struct compute_regs_gfx94x : compute_regs_gfx90a {  // gc 9.4.3
  static constexpr std::uint32_t compute_shader_chksum = 0x2E2C;
};
struct compute_regs_gfx10_plus : compute_regs_common {  // gfx10.3, gfx11, gfx12
  static constexpr std::uint32_t compute_pgm_rsrc3 = 0x2E28;
  static constexpr std::uint32_t compute_shader_chksum = 0x2E2A;
  static constexpr std::uint32_t compute_user_accum_0 = 0x2E24;  // ..3 = 0x2E27
  static constexpr std::uint32_t compute_dispatch_tunnel = 0x2E7D;
};

// COMPUTE_PGM_RSRC1 (spec/packets.md §1.5, code-objects.md §3.3). PRIV omitted on purpose.
struct rsrc1_gfx9 {
  using vgprs = bitfield<0, 6>;
  using sgprs = bitfield<6, 4>;
  using priority = bitfield<10, 2>;
  using float_mode = bitfield<12, 8>;  // round [15:12], denorm [19:16]
  using dx10_clamp = bitflag<21>;
  using debug_mode = bitflag<22>;
  using ieee_mode = bitflag<23>;
  using bulky = bitflag<24>;
  using cdbg_user = bitflag<25>;
  using fp16_ovfl = bitflag<26>;
};
struct rsrc1_gfx10 : rsrc1_gfx9 {
  using wgp_mode = bitflag<29>;
  using mem_ordered = bitflag<30>;
  using fwd_progress = bitflag<31>;
};
struct rsrc1_gfx12 : rsrc1_gfx10 {
  using wg_rr_en = bitflag<21>;      // replaces DX10_CLAMP
  using disable_perf = bitflag<23>;  // replaces IEEE_MODE
};

// COMPUTE_PGM_RSRC2.
struct rsrc2_common {
  using scratch_en = bitflag<0>;
  using user_sgpr = bitfield<1, 5>;
  using tgid_x_en = bitflag<7>;
  using tgid_y_en = bitflag<8>;
  using tgid_z_en = bitflag<9>;
  using tg_size_en = bitflag<10>;
  using tidig_comp_cnt = bitfield<11, 2>;
  using excp_en_msb = bitfield<13, 2>;
  using lds_size = bitfield<15, 9>;
  using excp_en = bitfield<24, 7>;
};
struct rsrc2_gfx9 : rsrc2_common { using trap_present = bitflag<6>; };
struct rsrc2_gfx94x : rsrc2_gfx9 { using skip_usgpr0 = bitflag<31>; };
struct rsrc2_gfx12 : rsrc2_common {
  using dynamic_vgpr = bitflag<6>;
  using wgp_takeover = bitflag<31>;
};

// COMPUTE_PGM_RSRC3 (code-objects.md §3.5).
struct rsrc3_none {};  // gfx9 before gfx90a: the register does not exist
struct rsrc3_gfx90a {
  using accum_offset = bitfield<0, 6>;
  using tg_split = bitflag<16>;
};
struct rsrc3_gfx10 { using shared_vgpr_cnt = bitfield<0, 4>; };
struct rsrc3_gfx11 : rsrc3_gfx10 {
  using inst_pref_size = bitfield<4, 6>;
  using trap_on_start = bitflag<10>;
  using trap_on_end = bitflag<11>;
  using image_op = bitflag<31>;
};
struct rsrc3_gfx12 {
  using inst_pref_size = bitfield<4, 8>;
  using glg_en = bitflag<13>;
  using image_op = bitflag<31>;
};

// COMPUTE_DISPATCH_INITIATOR: its bits are defined once, in abi/pm4.hpp (the DISPATCH_DIRECT
// payload); each generation here names the ones it has.
namespace initiator = abi::pm4::dispatch_initiator;
struct dispatch_initiator_gfx9 {
  using compute_shader_en = initiator::compute_shader_en;
  using partial_tg_en = initiator::partial_tg_en;
  using force_start_at_000 = initiator::force_start_at_000;
  using ordered_append_enbl = initiator::ordered_append_enbl;
  using ordered_append_mode = initiator::ordered_append_mode;
  using use_thread_dimensions = initiator::use_thread_dimensions;
  using order_mode = initiator::order_mode;
  using scalar_l1_inv_vol = initiator::scalar_l1_inv_vol;
  using vector_l1_inv_vol = initiator::vector_l1_inv_vol;
  using data_atc = initiator::data_atc_gfx9;  // gfx9 APUs (ROCT)
  using restore = initiator::restore;
};
struct dispatch_initiator_gfx10 : dispatch_initiator_gfx9 {
  using tunnel_enable = initiator::tunnel_enable;
  using cs_w32_en = initiator::cs_w32_en;
  using amp_shader_en = initiator::amp_shader_en;
  using disable_disp_prempt_en = initiator::disable_disp_prempt_en;
};
struct dispatch_initiator_gfx12 : dispatch_initiator_gfx10 {
  using ping_pong_en = bitflag<12>;
  using interleave_2d_en = bitflag<18>;
  using ttrace_queue_id = bitfield<29, 3>;
};

// COMPUTE_RESOURCE_LIMITS.
struct resource_limits_common {
  using waves_per_sh = bitfield<0, 10>;
  using tg_per_cu = bitfield<12, 4>;
  using lock_threshold = bitfield<16, 6>;
  using simd_dest_cntl = bitflag<22>;
  using force_simd_dist = bitflag<23>;
  using cu_group_count = bitfield<24, 3>;
};
struct resource_limits_gfx94x : resource_limits_common { using simd_disable = bitfield<27, 4>; };

// COMPUTE_NUM_THREAD_X/Y/Z.
struct num_thread_common {
  using num_thread_full = bitfield<0, 16>;
  using num_thread_partial = bitfield<16, 16>;
};
struct num_thread_gfx12 {
  using num_thread_full = bitfield<0, 13>;
  using interleave_bits = bitfield<13, 3>;
};

// COMPUTE_TMPRING_SIZE: WAVES [11:0]; WAVESIZE width and unit per generation.
template <unsigned WaveSizeWidth, std::uint32_t WaveSizeUnitBytes>
struct tmpring_size_layout {
  using waves = bitfield<0, 12>;
  using wavesize = bitfield<12, WaveSizeWidth>;
  static constexpr std::uint32_t wavesize_unit_bytes = WaveSizeUnitBytes;
};

}  // namespace detail

// The compute SH registers every family has at the same absolute dword address (gfx9–gfx12), by
// name: what a decoder of PM4 streams (the emulated MEC) reads without knowing the family's tag.
// Family-specific registers (RSRC3, the checksum register) are only in the tags' `regs`.
using compute_regs = detail::compute_regs_common;

// ---------------------------------------------------------------- family tags
// Common members of every tag; see the concept `family_tag` below for the full list.
struct gfx9_tag {
  static constexpr family value = family::gfx9;
  using regs = detail::compute_regs_gfx9;
  using rsrc1 = detail::rsrc1_gfx9;
  using rsrc2 = detail::rsrc2_gfx9;
  using rsrc3 = detail::rsrc3_none;
  using dispatch_initiator = detail::dispatch_initiator_gfx9;
  using resource_limits = detail::resource_limits_common;
  using num_thread = detail::num_thread_common;
  using tmpring_size = detail::tmpring_size_layout<13, 1024>;  // [24:12], 1 KiB units
  static constexpr bool has_compute_pgm_rsrc3 = false;
  static constexpr std::uint32_t acquire_mem_dwords = 7;  // GFX9 form, COUNT=5 (packets.md §1.3)
  static constexpr std::uint32_t doorbell_bytes = 8;      // SOC15 (kfd.md §3.1)
  static constexpr std::uint32_t sdma_version = 40;       // SDMA 4.x, major*10+minor (packets.md §3)
  static constexpr std::uint32_t default_wave_size = 64;
  static constexpr bool wave32_capable = false;
};
struct gfx90a_tag : gfx9_tag {
  static constexpr family value = family::gfx90a;
  using regs = detail::compute_regs_gfx90a;
  using rsrc3 = detail::rsrc3_gfx90a;
  static constexpr bool has_compute_pgm_rsrc3 = true;
  static constexpr std::uint32_t sdma_version = 44;  // SDMA 4.4 (Aldebaran)
};
struct gfx94x_tag : gfx90a_tag {
  static constexpr family value = family::gfx94x;
  using regs = detail::compute_regs_gfx94x;
  using rsrc2 = detail::rsrc2_gfx94x;
  using resource_limits = detail::resource_limits_gfx94x;
  static constexpr std::uint32_t sdma_version = 44;  // SDMA 4.4.x (MI300: 4.4.2)
};
struct gfx10_3_tag {
  static constexpr family value = family::gfx10_3;
  using regs = detail::compute_regs_gfx10_plus;
  using rsrc1 = detail::rsrc1_gfx10;
  using rsrc2 = detail::rsrc2_gfx9;
  using rsrc3 = detail::rsrc3_gfx10;
  using dispatch_initiator = detail::dispatch_initiator_gfx10;
  using resource_limits = detail::resource_limits_common;
  using num_thread = detail::num_thread_common;
  using tmpring_size = detail::tmpring_size_layout<13, 1024>;  // unit UNVERIFIED (ROCr uses 1 KiB)
  static constexpr bool has_compute_pgm_rsrc3 = true;
  static constexpr std::uint32_t acquire_mem_dwords = 8;  // GFX10+ form, COUNT=6
  static constexpr std::uint32_t doorbell_bytes = 8;
  static constexpr std::uint32_t sdma_version = 52;  // SDMA 5.2 (gfx10.1 overrides to 5.0 via quirks)
  static constexpr std::uint32_t default_wave_size = 32;
  static constexpr bool wave32_capable = true;
};
struct gfx11_tag : gfx10_3_tag {
  static constexpr family value = family::gfx11;
  using rsrc3 = detail::rsrc3_gfx11;
  using tmpring_size = detail::tmpring_size_layout<15, 256>;  // [26:12], 256-byte units
  static constexpr std::uint32_t sdma_version = 60;            // SDMA 6.x (gfx115x: 6.1)
};
struct gfx12_tag : gfx11_tag {
  static constexpr family value = family::gfx12;
  using rsrc1 = detail::rsrc1_gfx12;
  using rsrc2 = detail::rsrc2_gfx12;
  using rsrc3 = detail::rsrc3_gfx12;
  using dispatch_initiator = detail::dispatch_initiator_gfx12;
  using num_thread = detail::num_thread_gfx12;
  using tmpring_size = detail::tmpring_size_layout<18, 256>;  // [29:12]
  static constexpr std::uint32_t sdma_version = 70;            // SDMA 7.0
};

template <class T>
concept family_tag = requires {
  { T::value } -> std::convertible_to<family>;
  typename T::regs;
  typename T::rsrc1;
  typename T::rsrc2;
  typename T::rsrc3;
  typename T::tmpring_size;
  { T::acquire_mem_dwords } -> std::convertible_to<std::uint32_t>;
  { T::doorbell_bytes } -> std::convertible_to<std::uint32_t>;
  { T::sdma_version } -> std::convertible_to<std::uint32_t>;
  { T::default_wave_size } -> std::convertible_to<std::uint32_t>;
};
static_assert(family_tag<gfx9_tag> && family_tag<gfx90a_tag> && family_tag<gfx94x_tag> &&
              family_tag<gfx10_3_tag> && family_tag<gfx11_tag> && family_tag<gfx12_tag>);

}  // namespace aqueduct::arch
