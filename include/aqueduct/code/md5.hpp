// aqueduct/code/md5.hpp — MD5 (RFC 1321), only for the CCOB integrity hash.
//
// Layer: code. A CCOB header stores the first 8 bytes of the MD5 digest of the uncompressed
// bundle, read as a little-endian u64 (spec/code-objects.md §1.4, §5.3). MD5 is used here as a
// checksum that clang chose, not for security. Written from RFC 1321's description.
// Thread safety: pure functions.
#pragma once

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>

namespace aqueduct::code {

namespace detail {
inline constexpr std::uint32_t md5_shift[64] = {7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22,
                                                5, 9,  14, 20, 5, 9,  14, 20, 5, 9,  14, 20, 5, 9,  14, 20,
                                                4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23,
                                                6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21};
// T[i] = floor(2^32 * |sin(i + 1)|) (RFC 1321 §3.4), computed once.
inline const std::array<std::uint32_t, 64>& md5_table() {
  static const std::array<std::uint32_t, 64> t = [] {
    std::array<std::uint32_t, 64> r{};
    for (int i = 0; i < 64; ++i) r[static_cast<std::size_t>(i)] = static_cast<std::uint32_t>(std::floor(4294967296.0 * std::fabs(std::sin(i + 1.0))));
    return r;
  }();
  return t;
}
inline std::uint32_t rotl32(std::uint32_t x, std::uint32_t c) noexcept { return (x << c) | (x >> (32 - c)); }

inline void md5_block(std::uint32_t st[4], const std::byte* p) noexcept {
  const auto& k = md5_table();
  std::uint32_t m[16];
  for (int i = 0; i < 16; ++i)
    m[i] = std::uint32_t(p[4 * i]) | std::uint32_t(p[4 * i + 1]) << 8 | std::uint32_t(p[4 * i + 2]) << 16 |
           std::uint32_t(p[4 * i + 3]) << 24;
  std::uint32_t a = st[0], b = st[1], c = st[2], d = st[3];
  for (std::uint32_t i = 0; i < 64; ++i) {
    std::uint32_t f, g;
    if (i < 16) { f = (b & c) | (~b & d); g = i; }
    else if (i < 32) { f = (d & b) | (~d & c); g = (5 * i + 1) % 16; }
    else if (i < 48) { f = b ^ c ^ d; g = (3 * i + 5) % 16; }
    else { f = c ^ (b | ~d); g = (7 * i) % 16; }
    std::uint32_t tmp = d;
    d = c;
    c = b;
    b = b + rotl32(a + f + k[i] + m[g], md5_shift[i]);
    a = tmp;
  }
  st[0] += a; st[1] += b; st[2] += c; st[3] += d;
}
}  // namespace detail

// The 16-byte MD5 digest of `data`.
inline std::array<std::byte, 16> md5(std::span<const std::byte> data) noexcept {
  std::uint32_t st[4] = {0x67452301u, 0xefcdab89u, 0x98badcfeu, 0x10325476u};
  std::size_t full = data.size() / 64 * 64;
  for (std::size_t i = 0; i < full; i += 64) detail::md5_block(st, data.data() + i);
  std::byte tail[128] = {};
  std::size_t rest = data.size() - full;
  for (std::size_t i = 0; i < rest; ++i) tail[i] = data[full + i];
  tail[rest] = std::byte{0x80};
  std::size_t tail_len = rest + 1 + 8 <= 64 ? 64 : 128;
  std::uint64_t bits = static_cast<std::uint64_t>(data.size()) * 8;
  for (int i = 0; i < 8; ++i) tail[tail_len - 8 + static_cast<std::size_t>(i)] = static_cast<std::byte>(bits >> (8 * i));
  for (std::size_t i = 0; i < tail_len; i += 64) detail::md5_block(st, tail + i);
  std::array<std::byte, 16> out{};
  for (int w = 0; w < 4; ++w)
    for (int i = 0; i < 4; ++i) out[static_cast<std::size_t>(4 * w + i)] = static_cast<std::byte>(st[w] >> (8 * i));
  return out;
}

// The CCOB hash: the first 8 digest bytes as a little-endian u64.
inline std::uint64_t ccob_hash(std::span<const std::byte> data) noexcept {
  auto d = md5(data);
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<std::uint64_t>(d[static_cast<std::size_t>(i)]) << (8 * i);
  return v;
}

}  // namespace aqueduct::code
