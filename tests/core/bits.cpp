// Tests for core/bits.hpp and core/units.hpp.
#include <aqueduct/core/bits.hpp>
#include <aqueduct/core/units.hpp>

#include <doctest/doctest.h>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

namespace aq = aqueduct;

// PM4 type-3 header fields from spec/packets.md §1.1: count [29:16], opcode [15:8], type [31:30].
using pm4_count = aq::bitfield<16, 14>;
using pm4_opcode = aq::bitfield<8, 8>;
using pm4_type = aq::bitfield<30, 2>;

static_assert(pm4_count::mask == 0x3FFF0000u);
static_assert(pm4_type::put(3) == 0xC0000000u);
// SET_SH_REG with one value: count 1 → 0xC0017600 (spec/packets.md §1.1: "SET_SH_REG with n values C00n7600").
static_assert((pm4_type::put(3) | pm4_count::put(1) | pm4_opcode::put(0x76)) == 0xC0017600u);

template <class F>
concept fits_at_compile_time = requires { typename std::integral_constant<std::uint32_t, F::put(0x100)>; };
static_assert(!fits_at_compile_time<pm4_opcode>, "an over-wide value must not be a constant expression");

TEST_CASE("bitfield get/set round trip") {
  std::uint32_t w = 0xFFFFFFFFu;
  w = pm4_opcode::set(w, 0x15);
  CHECK(pm4_opcode::get(w) == 0x15u);
  CHECK((w & ~pm4_opcode::mask) == (0xFFFFFFFFu & ~pm4_opcode::mask));
  CHECK(aq::bitfield<0, 64, std::uint64_t>::max == ~0ull);
  CHECK(aq::reserved_bits<std::uint32_t>(0xF0u, 0x30u) == 0xC0u);
  CHECK(aq::log2_floor(4096) == 12u);
  CHECK(aq::make64(0x89ABCDEFu, 0x01234567u) == 0x0123456789ABCDEFull);
}

TEST_CASE("units keep dwords, bytes and addresses apart") {
  using namespace aq::literals;
  CHECK(aq::to_bytes(256_dw) == 1_KiB);
  CHECK(aq::to_dwords(4_KiB) == 1024_dw);
  aq::gpu_va va(0x7f0000001000ull);
  CHECK((va + 4_KiB).value == 0x7f0000002000ull);
  CHECK(((va + 64_B) - va) == 64_B);
  CHECK(va.lo() == 0x00001000u);
  CHECK(va.hi() == 0x7f00u);
  CHECK(aq::align_up(1, aq::page_size) == 4096u);
  CHECK(aq::align_up(4097, aq::huge_page_size) == (2u << 20));
  CHECK(aq::is_pow2(1024));
  CHECK_FALSE(aq::is_pow2(1536));
  static_assert(!std::is_convertible_v<aq::byte_count, aq::dword_count>);
  static_assert(!std::is_convertible_v<std::uint64_t, aq::gpu_va>);
}

}  // namespace AQ_UNITY_ID
