// Tests for arch/cwsr.hpp. Expected values come from outside the code under test:
// spec/kfd.md §1.5 (MI300X cwsr_size/ctl_stack_size as exported by a real KFD, CAPT dumps; RX
// 7900 XTX and MI250X rows computed in the spec) and hand computations from the kernel formula
// written out in the comments below.
#include <aqueduct/arch/cwsr.hpp>

#include <doctest/doctest.h>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

namespace arch = aqueduct::arch;

namespace {
// sysfs spelling: simd_count, simd_per_cu, num_xcc, array_count (×num_xcc), sape, lds_size_in_kb
constexpr arch::cwsr_inputs mi300x{90402, 1216, 4, 8, 32, 1, 64};
constexpr arch::cwsr_inputs rx7900xtx{110000, 192, 2, 1, 12, 2, 64};
constexpr arch::cwsr_inputs mi250x_gcd{90010, 440, 4, 1, 8, 1, 64};
}  // namespace

TEST_CASE("MI300X matches the values a real KFD exports (spec/kfd.md §1.5, §6.5 B)") {
  constexpr auto s = arch::kernel_cwsr_sizes(mi300x);
  static_assert(s.cwsr_size == 23203840 && s.ctl_stack_size == 12288);  // compile-time too
  CHECK(s.cwsr_size == 23203840u);
  CHECK(s.ctl_stack_size == 12288u);
  CHECK(s.wg_data_size == 23191552u);
  CHECK(s.debug_memory_size == 48640u);
  CHECK(s.eop_buffer_size == 4096u);
  CHECK(arch::cwsr_total_allocation(s.cwsr_size, s.debug_memory_size, 8) == 186019840u);
}

TEST_CASE("RX 7900 XTX and MI250X GCD rows of spec/kfd.md §1.5") {
  const auto x = arch::kernel_cwsr_sizes(rx7900xtx);
  CHECK(x.ctl_stack_size == 40960u);
  CHECK(x.wg_data_size == 46006272u);
  CHECK(x.cwsr_size == 46047232u);
  CHECK(x.debug_memory_size == 98304u);
  CHECK(arch::cwsr_total_allocation(x.cwsr_size, x.debug_memory_size, 1) == 46145536u);

  const auto m = arch::kernel_cwsr_sizes(mi250x_gcd);
  CHECK(m.ctl_stack_size == 36864u);
  CHECK(m.wg_data_size == 67133440u);
  CHECK(m.cwsr_size == 67170304u);
  CHECK(m.debug_memory_size == 131072u);
  CHECK(arch::cwsr_total_allocation(m.cwsr_size, m.debug_memory_size, 1) == 67301376u);
}

// Hand computations with the kernel formula (spec/kfd.md §1.3); each line shows the arithmetic.
TEST_CASE("GFX10 control stack is capped at 0x7000 (RX 6900 XT-like gfx1030, 80 CUs)") {
  // cu 160/2/1 = 80, waves 80*32 = 2560, ctl = align(40 + 2560*12 + 8 = 30768) = 32768 → 0x7000
  // wg = 80 * (0x40000+0x4000+0x10000+0x1000 = 348160) = 27852800 (page multiple)
  const auto s = arch::kernel_cwsr_sizes({100300, 160, 2, 1, 8, 2, 64});
  CHECK(s.ctl_stack_size == 0x7000u);
  CHECK(s.wg_data_size == 27852800u);
  CHECK(s.cwsr_size == 27852800u + 0x7000u);
  CHECK(s.debug_memory_size == 81920u);  // 2560 * 32
  // The same machine as gfx11 (no cap): 32768.
  CHECK(arch::kernel_cwsr_sizes({110002, 160, 2, 1, 8, 2, 64}).ctl_stack_size == 32768u);
}

TEST_CASE("VGPR bytes per CU: gfx1101 0x60000, gfx1102 0x40000, gfx1151 0x60000") {
  // gfx1101, 60 CUs: per CU 0x60000+0x4000+0x10000+0x1000 = 479232; wg = 60*479232 = 28753920
  // waves 1920, ctl = align(40 + 23040 + 8 = 23088) = 24576
  const auto a = arch::kernel_cwsr_sizes({110001, 120, 2, 1, 6, 2, 64});
  CHECK(a.wg_data_size == 28753920u);
  CHECK(a.ctl_stack_size == 24576u);
  CHECK(a.cwsr_size == 28778496u);
  // gfx1102, 32 CUs: per CU 348160; wg = 11141120; ctl = align(40 + 12288 + 8 = 12336) = 16384
  const auto b = arch::kernel_cwsr_sizes({110002, 64, 2, 1, 4, 2, 64});
  CHECK(b.wg_data_size == 11141120u);
  CHECK(b.ctl_stack_size == 16384u);
  CHECK(b.cwsr_size == 11157504u);
  // gfx1151 (Dec-2025 fix), 40 CUs: 40 * 479232 = 19169280
  CHECK(arch::kernel_cwsr_sizes({110501, 80, 2, 1, 4, 2, 64}).wg_data_size == 19169280u);
  // gfx1103 keeps 0x40000: 12 CUs → 12 * 348160 = 4177920
  CHECK(arch::kernel_cwsr_sizes({110003, 24, 2, 1, 2, 2, 64}).wg_data_size == 4177920u);
}

TEST_CASE("GFX9 wave cap uses the per-XCC array count") {
  // Vega 64-like gfx900: 64 CUs, 4 arrays, sape 1: waves = min(64*40 = 2560, 4/1*512 = 2048)
  const auto v = arch::kernel_cwsr_sizes({90000, 256, 4, 1, 4, 1, 64});
  CHECK(v.debug_memory_size == 2048u * 32u);
  CHECK(v.ctl_stack_size == 20480u);  // align(40 + 2048*8 + 8 = 16432)
  // 8 XCCs of 60 CUs, sysfs array_count 32 (4 per XCC): cap 2048 < 2400. Without the division the
  // cap would be 16384 and the debug area 2400*32 = 76800.
  const auto m = arch::kernel_cwsr_sizes({90402, 1920, 4, 8, 32, 1, 64});
  CHECK(m.debug_memory_size == 65536u);
}

TEST_CASE("gfx950 LDS term comes from lds_size_in_kb; EOP sizes; gfx7 is skipped") {
  // MI355X-like: 256 CUs over 8 XCCs, LDS 160 KiB: per CU 0x80000+0x4000+160*1024+0x1000 = 708608
  // cu 32 → wg 22675456; waves min(1280, 2048) = 1280; ctl = align(40 + 10240 + 8) = 12288
  const auto s = arch::kernel_cwsr_sizes({90500, 1024, 4, 8, 32, 1, 160});
  CHECK(s.wg_data_size == 22675456u);
  CHECK(s.cwsr_size == 22687744u);
  // Tonga (80002) needs a 32 KiB EOP buffer; Fiji (80003) one page.
  CHECK(arch::kernel_cwsr_sizes({80002, 128, 4, 1, 4, 1, 64}).eop_buffer_size == 0x8000u);
  CHECK(arch::kernel_cwsr_sizes({80003, 256, 4, 1, 4, 1, 64}).eop_buffer_size == 4096u);
  CHECK(arch::kernel_cwsr_sizes({70002, 176, 4, 1, 4, 1, 64}) == arch::cwsr_sizes{});
}

TEST_CASE("libhsakmt 2024 sizes: equal to the kernel's where it knew the part, smaller on gfx950/gfx1151") {
  CHECK(arch::libhsakmt_2024_cwsr_sizes(mi300x, false) == arch::kernel_cwsr_sizes(mi300x));  // PM4: EOP 4096 too
  CHECK(arch::libhsakmt_2024_cwsr_sizes(rx7900xtx) == arch::kernel_cwsr_sizes(rx7900xtx));
  // gfx950: 0x40000 VGPR and 64 KiB LDS → 32 * 348160 = 11141120 < 22675456: KFD 6.12+ rejects it.
  const arch::cwsr_inputs mi355{90500, 1024, 4, 8, 32, 1, 160};
  CHECK(arch::libhsakmt_2024_cwsr_sizes(mi355).wg_data_size == 11141120u);
  CHECK(arch::libhsakmt_2024_cwsr_sizes(mi355).cwsr_size < arch::kernel_cwsr_sizes(mi355).cwsr_size);
  const arch::cwsr_inputs strix_halo{110501, 80, 2, 1, 4, 2, 64};
  CHECK(arch::libhsakmt_2024_cwsr_sizes(strix_halo).wg_data_size == 13926400u);  // 40 * 348160
  // EOP 0 for AQL queues on gfx94x, a page for PM4.
  CHECK(arch::libhsakmt_2024_cwsr_sizes(mi300x, true).eop_buffer_size == 0u);
  CHECK(arch::libhsakmt_2024_cwsr_sizes(mi300x, false).eop_buffer_size == 4096u);
}

TEST_CASE("gfx1250 constants (Dec-2025 patch, spec/kfd.md §1.3; release UNVERIFIED)") {
  // Made-up topology, formula check: cu 64/2 = 32, waves 32*64 = 2048,
  // per CU 0x80000 + 0x8000 + 320 KiB + 0x8000 = 917504 → wg 29360128; ctl = align(40 + 24576 + 8) = 28672
  const auto s = arch::kernel_cwsr_sizes({120500, 64, 2, 1, 4, 2, 320});
  CHECK(s.wg_data_size == 29360128u);
  CHECK(s.ctl_stack_size == 28672u);
  CHECK(s.debug_memory_size == 65536u);
}

}  // namespace AQ_UNITY_ID
