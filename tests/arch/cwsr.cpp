// Tests for arch/cwsr.hpp. Expected values come from outside the code under test:
// spec/kfd.md §1.5 (MI300X cwsr_size/ctl_stack_size as exported by a real KFD, CAPT dumps; RX
// 7900 XTX and MI250X rows computed in the spec) and hand computations from the kernel formula
// written out in the comments below.
#include <aqueduct/arch/cwsr.hpp>

#include <doctest/doctest.h>

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
