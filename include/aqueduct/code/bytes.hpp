// aqueduct/code/bytes.hpp — bounds-checked little-endian access to untrusted byte spans.
//
// Layer: code. Every parser in code/ reads files that may be truncated or lie about their sizes
// and offsets; all of them go through `byte_reader`, whose accessors check `offset + size` against
// the span without overflow and copy with memcpy (no unaligned or aliasing loads). Also a small
// file loader. Thread safety: `byte_reader` is a value over caller-owned bytes.
#pragma once

#include <aqueduct/core/result.hpp>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace aqueduct::code {

using byte_span = std::span<const std::byte>;

// True when [offset, offset + size) lies inside a buffer of `total` bytes (no overflow).
[[nodiscard]] constexpr bool range_ok(std::uint64_t offset, std::uint64_t size, std::uint64_t total) noexcept {
  return offset <= total && size <= total - offset;
}

// A view of untrusted bytes whose reads never go out of bounds.
class byte_reader {
 public:
  constexpr byte_reader() = default;
  constexpr explicit byte_reader(byte_span bytes) noexcept : bytes_(bytes) {}

  [[nodiscard]] constexpr std::uint64_t size() const noexcept { return bytes_.size(); }
  [[nodiscard]] constexpr byte_span bytes() const noexcept { return bytes_; }
  [[nodiscard]] constexpr bool has(std::uint64_t offset, std::uint64_t n) const noexcept {
    return range_ok(offset, n, bytes_.size());
  }

  // Little-endian integer at `offset`, or nullopt when it does not fit.
  template <class T>
    requires std::is_integral_v<T>
  [[nodiscard]] std::optional<T> get(std::uint64_t offset) const noexcept {
    if (!has(offset, sizeof(T))) return std::nullopt;
    std::make_unsigned_t<T> v = 0;
    for (std::size_t i = 0; i < sizeof(T); ++i)
      v |= static_cast<std::make_unsigned_t<T>>(static_cast<std::make_unsigned_t<T>>(bytes_[offset + i]) << (8 * i));
    return static_cast<T>(v);
  }

  // A trivially copyable record at `offset` (host little-endian layout, as in abi/).
  template <class T>
    requires std::is_trivially_copyable_v<T>
  [[nodiscard]] std::optional<T> record(std::uint64_t offset) const noexcept {
    if (!has(offset, sizeof(T))) return std::nullopt;
    T v;
    std::memcpy(&v, bytes_.data() + offset, sizeof(T));
    return v;
  }

  // Sub-span, or nullopt.
  [[nodiscard]] std::optional<byte_span> sub(std::uint64_t offset, std::uint64_t n) const noexcept {
    if (!has(offset, n)) return std::nullopt;
    return bytes_.subspan(static_cast<std::size_t>(offset), static_cast<std::size_t>(n));
  }

  // NUL-terminated string starting at `offset`, or nullopt if no NUL before the end.
  [[nodiscard]] std::optional<std::string_view> c_string(std::uint64_t offset) const noexcept {
    if (offset >= bytes_.size()) return std::nullopt;
    const auto* p = reinterpret_cast<const char*>(bytes_.data()) + offset;
    const auto* end = static_cast<const char*>(std::memchr(p, 0, bytes_.size() - offset));
    if (!end) return std::nullopt;
    return std::string_view(p, static_cast<std::size_t>(end - p));
  }

  [[nodiscard]] bool starts_with(std::string_view magic) const noexcept {
    return bytes_.size() >= magic.size() && std::memcmp(bytes_.data(), magic.data(), magic.size()) == 0;
  }

 private:
  byte_span bytes_{};
};

inline byte_span as_bytes(std::string_view s) noexcept {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

// "0x…" hex for error details.
inline std::string hex(std::uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

// FNV-1a, 64-bit (offset basis 14695981039346656037, prime 1099511628211: the published FNV
// parameters, http://www.isthe.com/chongo/tech/comp/fnv/): a digest that tells two code objects
// apart (graph/save.hpp records it per kernel), not a cryptographic hash. `h` continues a digest.
[[nodiscard]] constexpr std::uint64_t fnv1a64(byte_span bytes, std::uint64_t h = 14695981039346656037ull) noexcept {
  for (std::byte b : bytes) h = (h ^ static_cast<std::uint8_t>(b)) * 1099511628211ull;
  return h;
}
[[nodiscard]] inline std::uint64_t fnv1a64(std::string_view text, std::uint64_t h = 14695981039346656037ull) noexcept {
  return fnv1a64(byte_span(reinterpret_cast<const std::byte*>(text.data()), text.size()), h);
}

// The most try_read_file reads unless told otherwise (the largest offload bundles seen are a few
// hundred MiB).
inline constexpr std::uint64_t default_max_file_bytes = std::uint64_t{1} << 30;

// Reads a whole file, at most `max_bytes` (io_error with the path and errno text on failure).
// Devices (/dev/zero) are refused before reading: their size is unknown and often endless; a
// pipe is read up to the limit.
inline result<std::vector<std::byte>> try_read_file(const std::string& path, std::uint64_t max_bytes = default_max_file_bytes) {
  std::error_code ec;
  const auto st = std::filesystem::status(path, ec);
  if (!ec && (st.type() == std::filesystem::file_type::character || st.type() == std::filesystem::file_type::block))
    return failure(errc::io_error, path + " is a device, not a file: give the path of a code object file");
  if (!ec && st.type() == std::filesystem::file_type::directory)
    return failure(errc::io_error, path + " is a directory, not a file");
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return failure(errc::io_error, "cannot open " + path + ": " + std::strerror(errno));
  std::vector<std::byte> out;
  std::byte buf[65536];
  bool too_big = false;
  for (;;) {
    std::size_t n = std::fread(buf, 1, sizeof buf, f);
    if (out.size() + n > max_bytes) {
      too_big = true;
      break;
    }
    out.insert(out.end(), buf, buf + n);
    if (n < sizeof buf) break;
  }
  const int err = std::ferror(f) ? errno : 0;
  std::fclose(f);
  if (too_big)
    return failure(errc::io_error, path + " is larger than " + std::to_string(max_bytes) +
                                       " bytes (the limit of try_read_file's max_bytes)");
  if (err != 0 || out.size() > max_bytes) return failure(errc::io_error, "read error on " + path + ": " + std::strerror(err));
  return out;
}
inline std::vector<std::byte> read_file(const std::string& path) { return try_read_file(path).value(); }

}  // namespace aqueduct::code
