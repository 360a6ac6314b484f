// aqueduct/abi/kernel_descriptor.hpp — the 64-byte AMDHSA kernel descriptor (code object v3+).
//
// Layer: abi. The `<kernel>.kd` object an AQL dispatch's kernel_object points to: its layout,
// the kernel_code_properties bits (which user SGPRs the CP loads, in which order), and the
// compute_pgm_rsrc1/2/3 fields per generation (spec/code-objects.md §3.1–3.5, spec/packets.md
// §1.6). The old amd_kernel_code_t of amd_hsa_kernel_code.h is a different, 256-byte structure;
// only its RSRC and property bit positions carry over.
// Thread safety: pure data and pure functions.
#pragma once

#include <aqueduct/core/bits.hpp>

#include <cstddef>
#include <cstdint>

namespace aqueduct::abi {

// spec/code-objects.md §3.1.
struct alignas(64) kernel_descriptor {
  std::uint32_t group_segment_fixed_size;    // static LDS bytes
  std::uint32_t private_segment_fixed_size;  // scratch bytes per work-item
  std::uint32_t kernarg_size;                // 0 = unspecified
  std::uint8_t reserved0[4];
  std::int64_t kernel_code_entry_byte_offset;  // from the descriptor's own address
  std::uint8_t reserved1[20];
  std::uint32_t compute_pgm_rsrc3;  // gfx90a/gfx94x, gfx10+; reserved before
  std::uint32_t compute_pgm_rsrc1;
  std::uint32_t compute_pgm_rsrc2;
  std::uint16_t kernel_code_properties;
  std::uint16_t kernarg_preload;  // gfx90a/gfx94x
  std::uint8_t reserved2[4];
};

static_assert(sizeof(kernel_descriptor) == 64 && alignof(kernel_descriptor) == 64);
static_assert(offsetof(kernel_descriptor, group_segment_fixed_size) == 0);
static_assert(offsetof(kernel_descriptor, private_segment_fixed_size) == 4);
static_assert(offsetof(kernel_descriptor, kernarg_size) == 8);
static_assert(offsetof(kernel_descriptor, reserved0) == 12);
static_assert(offsetof(kernel_descriptor, kernel_code_entry_byte_offset) == 16);
static_assert(offsetof(kernel_descriptor, reserved1) == 24);
static_assert(offsetof(kernel_descriptor, compute_pgm_rsrc3) == 44);
static_assert(offsetof(kernel_descriptor, compute_pgm_rsrc1) == 48);
static_assert(offsetof(kernel_descriptor, compute_pgm_rsrc2) == 52);
static_assert(offsetof(kernel_descriptor, kernel_code_properties) == 56);
static_assert(offsetof(kernel_descriptor, kernarg_preload) == 58);
static_assert(offsetof(kernel_descriptor, reserved2) == 60);

// The code entry must be 256-byte aligned (spec/code-objects.md §3.1).
inline constexpr std::uint64_t kernel_code_entry_align = 256;

// kernel_code_properties (u16), spec/code-objects.md §3.2. User SGPRs are loaded into s0.. in
// exactly this bit order; the SGPR count each takes is given by `user_sgpr_width`.
namespace kernel_code_properties {
using enable_sgpr_private_segment_buffer = bitflag<0, std::uint16_t>;  // 4 SGPRs
using enable_sgpr_dispatch_ptr = bitflag<1, std::uint16_t>;            // 2
using enable_sgpr_queue_ptr = bitflag<2, std::uint16_t>;               // 2
using enable_sgpr_kernarg_segment_ptr = bitflag<3, std::uint16_t>;     // 2
using enable_sgpr_dispatch_id = bitflag<4, std::uint16_t>;             // 2
using enable_sgpr_flat_scratch_init = bitflag<5, std::uint16_t>;       // 2
using enable_sgpr_private_segment_size = bitflag<6, std::uint16_t>;    // 1
using enable_wavefront_size32 = bitflag<10, std::uint16_t>;            // gfx10+; 0 = wave64
using uses_dynamic_stack = bitflag<11, std::uint16_t>;                 // v5+
inline constexpr std::uint16_t defined_mask = 0x0C7F;                  // 9:7 and 15:12 reserved
}  // namespace kernel_code_properties

// The user SGPRs in load order (bit i of kernel_code_properties enables user_sgpr i).
enum class user_sgpr : std::uint8_t {
  private_segment_buffer = 0,
  dispatch_ptr = 1,
  queue_ptr = 2,
  kernarg_segment_ptr = 3,
  dispatch_id = 4,
  flat_scratch_init = 5,
  private_segment_size = 6,
};
inline constexpr unsigned user_sgpr_kinds = 7;
inline constexpr unsigned user_sgpr_width[user_sgpr_kinds] = {4, 2, 2, 2, 2, 2, 1};  // §3.2

// SGPRs the enabled user SGPRs take (excludes kernarg preload and gfx1100 padding).
[[nodiscard]] constexpr unsigned enabled_user_sgpr_count(std::uint16_t properties) noexcept {
  unsigned n = 0;
  for (unsigned i = 0; i < user_sgpr_kinds; ++i)
    if ((properties >> i) & 1u) n += user_sgpr_width[i];
  return n;
}

// First SGPR of user SGPR `which` when it is enabled in `properties` (its position is the sum of
// the widths of the enabled user SGPRs before it); -1 when it is not enabled.
[[nodiscard]] constexpr int user_sgpr_offset(std::uint16_t properties, user_sgpr which) noexcept {
  const unsigned k = static_cast<unsigned>(which);
  if (((properties >> k) & 1u) == 0) return -1;
  return static_cast<int>(enabled_user_sgpr_count(static_cast<std::uint16_t>(properties & ((1u << k) - 1u))));
}

// kernarg_preload (u16), spec/code-objects.md §3.1: length and offset in dwords.
namespace kernarg_preload {
using length = bitfield<0, 7, std::uint16_t>;
using offset = bitfield<7, 9, std::uint16_t>;
}  // namespace kernarg_preload

// compute_pgm_rsrc1, spec/code-objects.md §3.3. Where a bit's name changes with the
// generation, both names are given.
namespace compute_pgm_rsrc1 {
using granulated_workitem_vgpr_count = bitfield<0, 6>;
using granulated_wavefront_sgpr_count = bitfield<6, 4>;  // gfx10+: "reserved", LLVM 19 writes it
using priority = bitfield<10, 2>;
using float_round_mode_32 = bitfield<12, 2>;
using float_round_mode_16_64 = bitfield<14, 2>;
using float_denorm_mode_32 = bitfield<16, 2>;
using float_denorm_mode_16_64 = bitfield<18, 2>;
using priv = bitflag<20>;
using enable_dx10_clamp = bitflag<21>;  // gfx6–11
using wg_rr_en = bitflag<21>;           // gfx12
using debug_mode = bitflag<22>;
using enable_ieee_mode = bitflag<23>;  // gfx6–11
using disable_perf = bitflag<23>;      // gfx12
using bulky = bitflag<24>;
using cdbg_user = bitflag<25>;
using fp16_ovfl = bitflag<26>;  // gfx9+
using wgp_mode = bitflag<29>;   // gfx10+
using mem_ordered = bitflag<30>;   // gfx10+
using fwd_progress = bitflag<31>;  // gfx10+
}  // namespace compute_pgm_rsrc1

// compute_pgm_rsrc2, spec/code-objects.md §3.4.
namespace compute_pgm_rsrc2 {
using enable_private_segment = bitflag<0>;
using user_sgpr_count = bitfield<1, 5>;
using enable_trap_handler = bitflag<6>;
using enable_sgpr_workgroup_id_x = bitflag<7>;
using enable_sgpr_workgroup_id_y = bitflag<8>;
using enable_sgpr_workgroup_id_z = bitflag<9>;
using enable_sgpr_workgroup_info = bitflag<10>;
using enable_vgpr_workitem_id = bitfield<11, 2>;  // 0 X, 1 X+Y, 2 X+Y+Z
using enable_exception_address_watch = bitflag<13>;
using enable_exception_memory = bitflag<14>;
using granulated_lds_size = bitfield<15, 9>;  // must be 0
using enable_exception_ieee_754_fp_invalid_operation = bitflag<24>;
using enable_exception_fp_denormal_source = bitflag<25>;
using enable_exception_ieee_754_fp_division_by_zero = bitflag<26>;
using enable_exception_ieee_754_fp_overflow = bitflag<27>;
using enable_exception_ieee_754_fp_underflow = bitflag<28>;
using enable_exception_ieee_754_fp_inexact = bitflag<29>;
using enable_exception_int_division_by_zero = bitflag<30>;
}  // namespace compute_pgm_rsrc2

// compute_pgm_rsrc3, spec/code-objects.md §3.5: a different word per generation.
namespace compute_pgm_rsrc3_gfx90a {  // gfx90a and gfx94x
using accum_offset = bitfield<0, 6>;  // first AGPR = 4 * (accum_offset + 1)
using tg_split = bitflag<16>;
inline constexpr std::uint32_t defined_mask = accum_offset::mask | tg_split::mask;
}  // namespace compute_pgm_rsrc3_gfx90a
namespace compute_pgm_rsrc3_gfx10 {
using shared_vgpr_count = bitfield<0, 4>;
inline constexpr std::uint32_t defined_mask = shared_vgpr_count::mask;
}  // namespace compute_pgm_rsrc3_gfx10
namespace compute_pgm_rsrc3_gfx11 {
using shared_vgpr_count = bitfield<0, 4>;
using inst_pref_size = bitfield<4, 6>;  // × 128 bytes
using trap_on_start = bitflag<10>;
using trap_on_end = bitflag<11>;
using image_op = bitflag<31>;
inline constexpr std::uint32_t defined_mask =
    shared_vgpr_count::mask | inst_pref_size::mask | trap_on_start::mask | trap_on_end::mask | image_op::mask;
}  // namespace compute_pgm_rsrc3_gfx11
namespace compute_pgm_rsrc3_gfx12 {
using inst_pref_size = bitfield<4, 8>;
using glg_en = bitflag<13>;
using image_op = bitflag<31>;
inline constexpr std::uint32_t defined_mask = inst_pref_size::mask | glg_en::mask | image_op::mask;
}  // namespace compute_pgm_rsrc3_gfx12

// Work-item ids in VGPRs: on targets with LLVM's FeaturePackedTID (gfx90a, gfx94x, gfx11,
// gfx12) the CP packs X/Y/Z into v0 as [9:0] / [19:10] / [29:20]; elsewhere v0/v1/v2 hold X/Y/Z.
// (AMDGPUUsage "VGPR register set up order"; checked against clang-19 code in tests/abi.)
namespace packed_workitem_id {
using x = bitfield<0, 10>;
using y = bitfield<10, 10>;
using z = bitfield<20, 10>;
}  // namespace packed_workitem_id

}  // namespace aqueduct::abi
