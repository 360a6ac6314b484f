// aqueduct/code/msgpack.hpp — a small, bounds-checked MessagePack reader for code-object metadata.
//
// Layer: code. Why not Debian's libmsgpack-cxx (4.1.3): it reports malformed input by throwing,
// would become an interface dependency of this header-only library for every consumer, and its
// unpacker allocates from a zone before knowing whether counts are truthful. The metadata note
// needs maps, arrays, strings, integers, booleans, floats and nil only; this reader parses them
// into a small tree, rejects counts that cannot fit in the remaining bytes before allocating,
// limits nesting depth, and reports errors as result<> (spec/code-objects.md §4; format:
// the MessagePack specification, github.com/msgpack/msgpack/blob/master/spec.md).
// Thread safety: pure functions; values.
#pragma once

#include <aqueduct/code/bytes.hpp>
#include <aqueduct/core/result.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace aqueduct::code::msgpack {

enum class type : std::uint8_t { nil, boolean, uint, sint, floating, str, bin, array, map, ext };

struct value {
  type kind = type::nil;
  bool b = false;
  std::uint64_t u = 0;
  std::int64_t i = 0;
  double f = 0;
  std::string_view s;  // str / bin / ext payload (views into the input)
  std::vector<value> items;  // array elements, or map keys
  std::vector<value> values; // map values (values[i] belongs to items[i]); vector<incomplete> is fine since C++17

  [[nodiscard]] bool is_int() const noexcept { return kind == type::uint || (kind == type::sint && i >= 0); }
  [[nodiscard]] std::uint64_t as_uint() const noexcept { return kind == type::uint ? u : static_cast<std::uint64_t>(i); }
  // Map lookup by string key; nullptr if absent or not a map.
  [[nodiscard]] const value* get(std::string_view key) const noexcept {
    if (kind != type::map) return nullptr;
    for (std::size_t k = 0; k < items.size() && k < values.size(); ++k)
      if (items[k].kind == type::str && items[k].s == key) return &values[k];
    return nullptr;
  }
};

// The most values one document may hold. Each value costs sizeof(value) (~100 bytes) of tree: a
// note of n bytes could otherwise hold n one-byte values and cost 100 n bytes (a 256 MiB note,
// 25 GB). Code-object metadata holds a few hundred values per kernel; 2^20 values is thousands of
// kernels and at most ~100 MiB of tree.
inline constexpr std::uint64_t max_values = std::uint64_t{1} << 20;
// Containers reserve at most this many slots up front; more grow as elements actually parse,
// so a count that the bytes cannot back costs nothing before it is refused.
inline constexpr std::uint64_t max_reserve = 256;

namespace detail {
class parser {
 public:
  explicit parser(byte_span b) : r_(b) {}
  result<value> parse(unsigned depth = 0) {
    auto bad = [&](std::string d) { return failure(errc::malformed_code_object, "metadata msgpack at byte " + std::to_string(pos_) + ": " + d); };
    if (depth > max_depth) return bad("nesting deeper than " + std::to_string(max_depth));
    auto tag = r_.get<std::uint8_t>(pos_);
    if (!tag) return bad("truncated (expected a value)");
    if (++values_ > max_values) return bad("more than " + std::to_string(max_values) + " values (msgpack::max_values)");
    ++pos_;
    const std::uint8_t t = *tag;
    value v;
    auto uint_n = [&](unsigned n) -> std::optional<std::uint64_t> {
      std::optional<std::uint64_t> out;
      if (n == 1) { if (auto x = r_.get<std::uint8_t>(pos_)) out = *x; }
      else if (n == 2) { if (auto x = r_.get<std::uint16_t>(pos_)) out = be(*x, 2); }
      else if (n == 4) { if (auto x = r_.get<std::uint32_t>(pos_)) out = be(*x, 4); }
      else if (auto x = r_.get<std::uint64_t>(pos_)) out = be(*x, 8);
      if (out) pos_ += n;
      return out;
    };
    auto bytes_of = [&](std::uint64_t n, type k) -> result<value> {
      auto s = r_.sub(pos_, n);
      if (!s) return bad("string/binary of " + std::to_string(n) + " bytes runs past the end");
      pos_ += n;
      value x;
      x.kind = k;
      x.s = std::string_view(reinterpret_cast<const char*>(s->data()), s->size());
      return x;
    };
    auto container = [&](std::uint64_t n, bool is_map) -> result<value> {
      // Every element takes at least one byte: a larger count is a lie, refused before allocating.
      if (n > (r_.size() - pos_) / (is_map ? 2 : 1)) return bad("count " + std::to_string(n) + " exceeds the remaining bytes");
      value x;
      x.kind = is_map ? type::map : type::array;
      x.items.reserve(static_cast<std::size_t>(std::min(n, max_reserve)));
      if (is_map) x.values.reserve(static_cast<std::size_t>(std::min(n, max_reserve)));
      // Every element is a value too: a count beyond what the budget has left is refused now.
      if (n * (is_map ? 2 : 1) > max_values - values_)
        return bad("count " + std::to_string(n) + " exceeds msgpack::max_values (" + std::to_string(max_values) + ")");
      for (std::uint64_t k = 0; k < n; ++k) {
        AQUEDUCT_TRY(auto a, parse(depth + 1));
        x.items.push_back(std::move(a));
        if (is_map) {
          AQUEDUCT_TRY(auto b, parse(depth + 1));
          x.values.push_back(std::move(b));
        }
      }
      return x;
    };
    if (t <= 0x7f) { v.kind = type::uint; v.u = t; return v; }
    if (t >= 0xe0) { v.kind = type::sint; v.i = static_cast<std::int8_t>(t); return v; }
    if ((t & 0xf0) == 0x80) return container(t & 0x0f, true);
    if ((t & 0xf0) == 0x90) return container(t & 0x0f, false);
    if ((t & 0xe0) == 0xa0) return bytes_of(t & 0x1f, type::str);
    switch (t) {
      case 0xc0: return v;
      case 0xc2: case 0xc3: v.kind = type::boolean; v.b = t == 0xc3; return v;
      case 0xc4: case 0xc5: case 0xc6: case 0xd9: case 0xda: case 0xdb: {
        unsigned n = (t == 0xc4 || t == 0xd9) ? 1 : (t == 0xc5 || t == 0xda) ? 2 : 4;
        auto len = uint_n(n);
        if (!len) return bad("truncated length");
        return bytes_of(*len, t <= 0xc6 ? type::bin : type::str);
      }
      case 0xc7: case 0xc8: case 0xc9: {
        auto len = uint_n(t == 0xc7 ? 1 : t == 0xc8 ? 2 : 4);
        if (!len || !r_.has(pos_, 1)) return bad("truncated ext");
        ++pos_;  // ext type byte
        return bytes_of(*len, type::ext);
      }
      case 0xd4: case 0xd5: case 0xd6: case 0xd7: case 0xd8: {
        if (!r_.has(pos_, 1)) return bad("truncated fixext");
        ++pos_;
        return bytes_of(std::uint64_t(1) << (t - 0xd4), type::ext);
      }
      case 0xca: case 0xcb: {
        auto raw = uint_n(t == 0xca ? 4 : 8);
        if (!raw) return bad("truncated float");
        v.kind = type::floating;
        if (t == 0xca) { float x; auto w = static_cast<std::uint32_t>(*raw); std::memcpy(&x, &w, 4); v.f = x; }
        else { std::memcpy(&v.f, &*raw, 8); }
        return v;
      }
      case 0xcc: case 0xcd: case 0xce: case 0xcf: {
        auto x = uint_n(1u << (t - 0xcc));
        if (!x) return bad("truncated integer");
        v.kind = type::uint; v.u = *x;
        return v;
      }
      case 0xd0: case 0xd1: case 0xd2: case 0xd3: {
        const unsigned n = 1u << (t - 0xd0);
        auto x = uint_n(n);
        if (!x) return bad("truncated integer");
        v.kind = type::sint;
        v.i = n == 1 ? static_cast<std::int8_t>(*x) : n == 2 ? static_cast<std::int16_t>(*x) : n == 4 ? static_cast<std::int32_t>(*x) : static_cast<std::int64_t>(*x);
        return v;
      }
      case 0xdc: case 0xdd: case 0xde: case 0xdf: {
        auto n = uint_n(t == 0xdc || t == 0xde ? 2 : 4);
        if (!n) return bad("truncated count");
        return container(*n, t >= 0xde);
      }
      default: return bad("reserved type byte " + hex(t));
    }
  }
  [[nodiscard]] std::uint64_t position() const noexcept { return pos_; }
  static constexpr unsigned max_depth = 32;

 private:
  // MessagePack is big-endian; byte_reader reads little-endian.
  static std::uint64_t be(std::uint64_t x, unsigned n) noexcept {
    std::uint64_t out = 0;
    for (unsigned k = 0; k < n; ++k) out = (out << 8) | ((x >> (8 * k)) & 0xff);
    return out;
  }
  byte_reader r_;
  std::uint64_t pos_ = 0;
  std::uint64_t values_ = 0;
};
}  // namespace detail

// Parses one value; trailing bytes are an error (a note holds exactly one map).
inline result<value> try_parse(byte_span b) {
  detail::parser p(b);
  AQUEDUCT_TRY(auto v, p.parse());
  if (p.position() != b.size())
    return failure(errc::malformed_code_object, "metadata msgpack: " + std::to_string(b.size() - p.position()) + " trailing bytes after the top-level value");
  return v;
}

}  // namespace aqueduct::code::msgpack
