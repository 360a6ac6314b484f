// aqueduct/core/bits.hpp — bit-field helpers for packing register and packet fields.
//
// Layer: core. `bitfield<Lo, Width>` names a field of a 32- or 64-bit word at compile time;
// `put` checks (in constant evaluation and under assertions) that the value fits, so an
// over-wide RSRC or packet field is caught instead of silently spilling into its neighbour.
// Thread safety: pure functions.
#pragma once

#include <aqueduct/core/assert.hpp>

#include <bit>
#include <concepts>
#include <cstdint>

namespace aqueduct {
namespace detail {
inline void bitfield_value_does_not_fit() noexcept {}
}  // namespace detail

template <unsigned Lo, unsigned Width, std::unsigned_integral Word = std::uint32_t>
struct bitfield {
  static_assert(Width >= 1 && Lo + Width <= sizeof(Word) * 8, "field outside the word");
  using word_type = Word;
  static constexpr unsigned lo = Lo;
  static constexpr unsigned width = Width;
  static constexpr Word max = Width == sizeof(Word) * 8 ? ~Word(0) : static_cast<Word>((Word(1) << Width) - 1);
  static constexpr Word mask = static_cast<Word>(max << Lo);

  // Value of the field within `w`.
  [[nodiscard]] static constexpr Word get(Word w) noexcept { return static_cast<Word>((w >> Lo) & max); }
  // `v` shifted into place. Precondition: v fits in Width bits.
  [[nodiscard]] static constexpr Word put(std::uint64_t v) noexcept {
    if (std::is_constant_evaluated()) {
      if (v > max) detail::bitfield_value_does_not_fit();  // not constexpr: a compile error here
    } else {
      AQUEDUCT_ASSERT(v <= max, "bitfield value does not fit its field");
    }
    return static_cast<Word>(static_cast<Word>(v) << Lo);
  }
  // `w` with the field replaced by `v`.
  [[nodiscard]] static constexpr Word set(Word w, std::uint64_t v) noexcept { return static_cast<Word>((w & ~mask) | put(v)); }
  [[nodiscard]] static constexpr bool fits(std::uint64_t v) noexcept { return v <= max; }
};

template <unsigned Bit, std::unsigned_integral Word = std::uint32_t>
using bitflag = bitfield<Bit, 1, Word>;

// Bits of `w` outside every mask given: used to reject reserved bits.
template <std::unsigned_integral Word>
[[nodiscard]] constexpr Word reserved_bits(Word w, Word allowed_mask) noexcept { return static_cast<Word>(w & ~allowed_mask); }

[[nodiscard]] constexpr std::uint32_t lo32(std::uint64_t v) noexcept { return static_cast<std::uint32_t>(v); }
[[nodiscard]] constexpr std::uint32_t hi32(std::uint64_t v) noexcept { return static_cast<std::uint32_t>(v >> 32); }
[[nodiscard]] constexpr std::uint64_t make64(std::uint32_t lo, std::uint32_t hi) noexcept {
  return (static_cast<std::uint64_t>(hi) << 32) | lo;
}
// floor(log2(v)) for v > 0.
[[nodiscard]] constexpr unsigned log2_floor(std::uint64_t v) noexcept { return 63u - static_cast<unsigned>(std::countl_zero(v)); }

}  // namespace aqueduct
