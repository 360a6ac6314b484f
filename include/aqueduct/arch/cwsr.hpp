// aqueduct/arch/cwsr.hpp — CWSR (compute wave save/restore) area sizing, exactly as the kernel.
//
// Layer: arch. `kernel_cwsr_sizes` restates `kfd_queue_ctx_save_restore_size()` of
// drivers/gpu/drm/amd/amdkfd/kfd_queue.c (spec/kfd.md §1.3, current upstream incl. the Dec-2025
// gfx1151 and gfx12.5 changes). Since Linux 6.12 KFD rejects CREATE_QUEUE unless
// ctl_stack_size equals the node's value, ctx_save_restore_size >= cwsr_size, and the CWSR buffer
// mapping is exactly `cwsr_total_allocation(...)` bytes; the emulator validates with these same
// functions and a runtime sizes its buffers with them (or with the sysfs values when present).
//
// Inputs are the node's sysfs values except that `array_count` is as PRINTED in sysfs, i.e.
// already multiplied by num_xcc; the kernel formula uses the per-XCC count (sysfs / num_xcc).
//
// Differences of older userspace (spec/kfd.md §1.7), kept for the emulator's "old userspace" tests
// through `libhsakmt_2024_cwsr_sizes`:
//   * libhsakmt (ROCT Aug 2024 / ROCR-Runtime Oct 2024) uses a fixed 64 KiB LDS term and has no
//     gfx950 in its 512 KiB-VGPR list, so on gfx950 its ctx size is below the kernel's cwsr_size
//     and a 6.12+ kernel returns -EINVAL. It also never knew the gfx1151 384 KiB VGPR fix.
//   * Its VGPR list is (gfxv & ~0xff) == 9.4.x, 9.0.10, 9.0.8, 11.0.0, 11.0.1, 12.0.0, 12.0.1.
//   * Its gfx9 wave cap divides sysfs array_count (NumShaderBanks, not per-XCC) by
//     simd_arrays_per_engine; harmless on real parts, where cu*40 is the smaller term.
//   * It passes EOP size 0 for AQL queues on gfx94x (the kernel then skips the EOP check).
//   * The newest rocm-systems libhsakmt reads cwsr_size/ctl_stack_size from sysfs when non-zero.
// gfx940/gfx941 (90400/90401) are only reported by kernels that used the older
// `(gfxv/100*100) == 90400` VGPR test, so they get 512 KiB here as on those kernels.
// Thread safety: pure constexpr functions.
#pragma once

#include <algorithm>
#include <cstdint>

namespace aqueduct::arch {

struct cwsr_inputs {
  std::uint32_t gfx_target_version;
  std::uint32_t simd_count;
  std::uint32_t simd_per_cu;
  std::uint32_t num_xcc;
  std::uint32_t array_count;  // as printed in sysfs, i.e. already × num_xcc
  std::uint32_t simd_arrays_per_engine;
  std::uint32_t lds_size_in_kb;
};

struct cwsr_sizes {
  std::uint32_t ctl_stack_size;
  std::uint32_t wg_data_size;
  std::uint32_t cwsr_size;  // per XCC: ctl_stack_size + wg_data_size
  std::uint32_t debug_memory_size;
  std::uint32_t eop_buffer_size;
  friend constexpr bool operator==(const cwsr_sizes&, const cwsr_sizes&) = default;
};

namespace detail {
inline constexpr std::uint32_t cwsr_page = 4096;  // AMDGPU_GPU_PAGE_SIZE (= PAGE_SIZE on x86)
inline constexpr std::uint32_t user_context_save_area_header_bytes = 40;  // spec/kfd.md §1.4
[[nodiscard]] constexpr std::uint64_t align_to(std::uint64_t v, std::uint64_t a) noexcept { return (v + a - 1) / a * a; }
[[nodiscard]] constexpr bool is_gfx125x(std::uint32_t gfxv) noexcept { return gfxv == 120500 || gfxv == 120501; }

// kfd_get_vgpr_size_per_cu (spec/kfd.md §1.3 table).
[[nodiscard]] constexpr std::uint32_t kernel_vgpr_size_per_cu(std::uint32_t gfxv) noexcept {
  if (gfxv / 100 * 100 == 90400 || gfxv == 90010 || gfxv == 90008 || gfxv == 90500 || is_gfx125x(gfxv)) return 0x80000;
  if (gfxv == 110000 || gfxv == 110001 || gfxv == 110501 || gfxv == 120000 || gfxv == 120001) return 0x60000;
  return 0x40000;
}
}  // namespace detail

// The four node properties KFD computes per GPU (plus wg_data_size). All zero below 80001
// (gfx7), where the kernel skips the computation.
[[nodiscard]] constexpr cwsr_sizes kernel_cwsr_sizes(const cwsr_inputs& in) noexcept {
  using detail::align_to;
  const std::uint32_t gfxv = in.gfx_target_version;
  if (gfxv < 80001 || in.simd_per_cu == 0 || in.num_xcc == 0) return {};
  const std::uint32_t cu_num = in.simd_count / in.simd_per_cu / in.num_xcc;
  const std::uint32_t arrays_per_xcc = in.array_count / in.num_xcc;
  std::uint32_t wave_num = 0;
  if (gfxv < 100100) {
    const std::uint32_t cap = in.simd_arrays_per_engine ? arrays_per_xcc / in.simd_arrays_per_engine * 512 : 0;
    wave_num = std::min(cu_num * 40, cap);
  } else if (detail::is_gfx125x(gfxv)) {
    wave_num = cu_num * 64;
  } else {
    wave_num = cu_num * 32;
  }
  const bool g125 = detail::is_gfx125x(gfxv);
  const std::uint64_t sgpr = g125 ? 0x8000 : 0x4000;
  const std::uint64_t lds = (gfxv == 90500 || g125) ? (std::uint64_t{in.lds_size_in_kb} << 10) : 0x10000;
  const std::uint64_t hwreg = g125 ? 0x8000 : 0x1000;
  const std::uint64_t per_cu = detail::kernel_vgpr_size_per_cu(gfxv) + sgpr + lds + hwreg;

  cwsr_sizes s{};
  s.wg_data_size = static_cast<std::uint32_t>(align_to(cu_num * per_cu, detail::cwsr_page));
  const std::uint64_t per_wave = gfxv >= 100100 ? 12 : 8;
  std::uint64_t ctl = align_to(detail::user_context_save_area_header_bytes + wave_num * per_wave + 8, detail::cwsr_page);
  if (gfxv / 10000 == 10) ctl = std::min<std::uint64_t>(ctl, 0x7000);  // GFX10 hardware limit
  s.ctl_stack_size = static_cast<std::uint32_t>(ctl);
  s.debug_memory_size = static_cast<std::uint32_t>(align_to(std::uint64_t{wave_num} * 32, 64));
  s.cwsr_size = static_cast<std::uint32_t>(align_to(std::uint64_t{s.ctl_stack_size} + s.wg_data_size, detail::cwsr_page));
  s.eop_buffer_size = gfxv == 80002 ? 0x8000 : (gfxv >= 80000 ? 4096 : 0);  // Tonga needs 32 KiB
  return s;
}

// Bytes KFD expects mapped at ctx_save_restore_address (spec/kfd.md §1.3 item 9): num_xcc per-XCC
// areas of the user's ctx_save_restore_size plus the debugger area, page aligned.
[[nodiscard]] constexpr std::uint64_t cwsr_total_allocation(std::uint32_t ctx_save_restore_size,
                                                            std::uint32_t debug_memory_size,
                                                            std::uint32_t num_xcc) noexcept {
  return detail::align_to((std::uint64_t{ctx_save_restore_size} + debug_memory_size) * num_xcc, detail::cwsr_page);
}

// What libhsakmt's update_ctx_save_restore_size() of 2024 (ROCT 06a9b94, ROCR-Runtime c7785a6)
// computed — the "old userspace" of spec/kfd.md §1.7. `aql` selects its EOP-size behaviour.
// Its ctl_stack_size matches the kernel's; its cwsr_size differs on gfx950 and gfx1151.
[[nodiscard]] constexpr cwsr_sizes libhsakmt_2024_cwsr_sizes(const cwsr_inputs& in, bool aql = true) noexcept {
  using detail::align_to;
  const std::uint32_t gfxv = in.gfx_target_version;
  if (gfxv < 80001 || in.simd_per_cu == 0 || in.num_xcc == 0) return {};
  const std::uint32_t cu_num = in.simd_count / in.simd_per_cu / in.num_xcc;
  std::uint32_t wave_num = cu_num * 32;
  if (gfxv < 100100) {
    const std::uint32_t sape = in.simd_arrays_per_engine ? in.simd_arrays_per_engine : 1;
    const std::uint32_t shader_banks = in.array_count / sape;  // sysfs value, not per XCC
    wave_num = std::min(cu_num * 40, shader_banks / sape * 512);
  }
  const bool vgpr512 = gfxv / 100 == 904 || gfxv == 90010 || gfxv == 90008;  // (gfxv & ~0xff) == 0x090400
  const bool vgpr384 = gfxv == 110000 || gfxv == 110001 || gfxv == 120000 || gfxv == 120001;
  const std::uint64_t vgpr = vgpr512 ? 0x80000 : (vgpr384 ? 0x60000 : 0x40000);
  const std::uint64_t per_cu = vgpr + 0x4000 + 0x10000 + 0x1000;
  cwsr_sizes s{};
  s.wg_data_size = static_cast<std::uint32_t>(align_to(cu_num * per_cu, detail::cwsr_page));
  const std::uint64_t per_wave = gfxv >= 100100 ? 12 : 8;
  std::uint64_t ctl = align_to(detail::user_context_save_area_header_bytes + wave_num * per_wave + 8, detail::cwsr_page);
  if (gfxv / 10000 == 10) ctl = std::min<std::uint64_t>(ctl, 0x7000);
  s.ctl_stack_size = static_cast<std::uint32_t>(ctl);
  s.debug_memory_size = static_cast<std::uint32_t>(align_to(std::uint64_t{wave_num} * 32, 64));
  s.cwsr_size = s.ctl_stack_size + s.wg_data_size;
  if (gfxv == 80002) s.eop_buffer_size = 0x8000;
  else if (gfxv / 100 == 904 && aql) s.eop_buffer_size = 0;
  else s.eop_buffer_size = 4096;
  return s;
}

}  // namespace aqueduct::arch
