// aqueduct/core/units.hpp — strong types for GPU virtual addresses and byte / dword counts.
//
// Layer: core. A `gpu_va` is not a host pointer and a dword count is not a byte count; mixing
// them is the classic ring-pointer bug (AQL write index in packets, PM4 in dwords, SDMA in bytes:
// spec/kfd.md §2.7). These wrappers make such mixes compile errors. All are trivially copyable,
// 8 bytes, constexpr. Thread safety: values.
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>

namespace aqueduct {

// A count in some unit; arithmetic only with the same unit.
template <class Tag>
struct count {
  std::uint64_t value = 0;

  constexpr count() = default;
  constexpr explicit count(std::uint64_t v) noexcept : value(v) {}
  constexpr auto operator<=>(const count&) const = default;
  constexpr count& operator+=(count o) noexcept { value += o.value; return *this; }
  constexpr count& operator-=(count o) noexcept { value -= o.value; return *this; }
  friend constexpr count operator+(count a, count b) noexcept { return count(a.value + b.value); }
  friend constexpr count operator-(count a, count b) noexcept { return count(a.value - b.value); }
  friend constexpr count operator*(count a, std::uint64_t k) noexcept { return count(a.value * k); }
  friend constexpr count operator*(std::uint64_t k, count a) noexcept { return count(a.value * k); }
  friend constexpr std::uint64_t operator/(count a, count b) noexcept { return a.value / b.value; }
};

struct byte_tag {};
struct dword_tag {};
using byte_count = count<byte_tag>;
using dword_count = count<dword_tag>;

constexpr byte_count to_bytes(dword_count d) noexcept { return byte_count(d.value * 4); }
// Precondition: b is a multiple of 4 (callers check; ring sizes are powers of two >= 1024).
constexpr dword_count to_dwords(byte_count b) noexcept { return dword_count(b.value / 4); }

namespace literals {
constexpr byte_count operator""_B(unsigned long long v) noexcept { return byte_count(v); }
constexpr byte_count operator""_KiB(unsigned long long v) noexcept { return byte_count(v << 10); }
constexpr byte_count operator""_MiB(unsigned long long v) noexcept { return byte_count(v << 20); }
constexpr byte_count operator""_GiB(unsigned long long v) noexcept { return byte_count(v << 30); }
constexpr dword_count operator""_dw(unsigned long long v) noexcept { return dword_count(v); }
}  // namespace literals

// A GPU virtual address. On KFD the process shares one address space with the GPU (SVM
// apertures), so a gpu_va often equals a host address, but the type keeps the distinction.
struct gpu_va {
  std::uint64_t value = 0;

  constexpr gpu_va() = default;
  constexpr explicit gpu_va(std::uint64_t v) noexcept : value(v) {}
  constexpr auto operator<=>(const gpu_va&) const = default;
  constexpr explicit operator bool() const noexcept { return value != 0; }
  friend constexpr gpu_va operator+(gpu_va a, byte_count b) noexcept { return gpu_va(a.value + b.value); }
  friend constexpr gpu_va operator-(gpu_va a, byte_count b) noexcept { return gpu_va(a.value - b.value); }
  friend constexpr byte_count operator-(gpu_va a, gpu_va b) noexcept { return byte_count(a.value - b.value); }
  constexpr gpu_va& operator+=(byte_count b) noexcept { value += b.value; return *this; }
  [[nodiscard]] constexpr std::uint32_t lo() const noexcept { return static_cast<std::uint32_t>(value); }
  [[nodiscard]] constexpr std::uint32_t hi() const noexcept { return static_cast<std::uint32_t>(value >> 32); }
  [[nodiscard]] constexpr bool aligned(std::uint64_t a) const noexcept { return (value & (a - 1)) == 0; }
};

// Alignment helpers; `a` must be a power of two.
constexpr std::uint64_t align_up(std::uint64_t v, std::uint64_t a) noexcept { return (v + a - 1) & ~(a - 1); }
constexpr std::uint64_t align_down(std::uint64_t v, std::uint64_t a) noexcept { return v & ~(a - 1); }
constexpr bool is_pow2(std::uint64_t v) noexcept { return v != 0 && (v & (v - 1)) == 0; }
constexpr byte_count align_up(byte_count v, std::uint64_t a) noexcept { return byte_count(align_up(v.value, a)); }

inline constexpr std::uint64_t page_size = 4096;        // KFD PAGE_SIZE on x86-64 (spec/kfd.md §1.3)
inline constexpr std::uint64_t huge_page_size = 2u << 20;  // 2 MiB (DESIGN.md requirement 4)

}  // namespace aqueduct
