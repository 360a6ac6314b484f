// aqueduct/code/bundle.hpp — clang offload bundles and the header of compressed bundles (CCOB).
//
// Layer: code. `offload_bundle` parses an uncompressed `__CLANG_OFFLOAD_BUNDLE__` (spec
// §5.1): an entry table of (offset, size, ID) whose every range is checked against the buffer;
// the end of a bundle is max(offset + size) since the format stores no total size.
// `try_parse_ccob_header` reads CCOB v1/v2/v3 (spec §5.3) and its size rules, and
// `check_ccob_hash` verifies the truncated MD5 once the payload is decompressed. Decompression
// itself (libzstd / zlib, link-time dependencies) lives in code/decompress.hpp; this header
// needs no library. Views: the bytes must outlive the parsed objects.
// Thread safety: immutable after parsing.
#pragma once

#include <aqueduct/abi/bundle.hpp>
#include <aqueduct/code/bytes.hpp>
#include <aqueduct/code/md5.hpp>
#include <aqueduct/core/result.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace aqueduct::code {

struct bundle_entry {
  std::string_view id;  // bundle entry ID, e.g. "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-"
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
  byte_span data;  // the entry's bytes (a code object, or empty for a HIP host entry)
};

class offload_bundle {
 public:
  [[nodiscard]] static bool is_bundle(byte_span b) noexcept {
    return byte_reader(b).starts_with({abi::offload_bundle_magic, abi::offload_bundle_magic_size});
  }

  static result<offload_bundle> try_parse(byte_span bytes) {
    auto bad = [](std::string d) { return failure(errc::malformed_bundle, std::move(d)); };
    byte_reader r(bytes);
    if (!is_bundle(bytes)) return bad("missing magic __CLANG_OFFLOAD_BUNDLE__");
    auto n = r.get<std::uint64_t>(24);
    if (!n) return bad("truncated: no entry count after the magic (" + std::to_string(bytes.size()) + " bytes)");
    // Each entry header takes at least 24 bytes; a larger count is a lie, refused before allocating.
    if (*n > (bytes.size() - 32) / 24)
      return bad("entry count " + std::to_string(*n) + " cannot fit in " + std::to_string(bytes.size()) + " bytes");
    offload_bundle b;
    b.bytes_ = bytes;
    std::uint64_t off = 32, end = off;
    for (std::uint64_t i = 0; i < *n; ++i) {
      auto e = r.record<abi::offload_bundle_entry_header>(off);
      if (!e) return bad("entry " + std::to_string(i) + ": header at " + hex(off) + " truncated");
      off += 24;
      auto id = r.sub(off, e->id_size);
      if (!id)
        return bad("entry " + std::to_string(i) + ": ID length " + std::to_string(e->id_size) + " at " + hex(off) +
                   " exceeds the bundle size " + std::to_string(bytes.size()));
      off += e->id_size;
      std::string_view ids(reinterpret_cast<const char*>(id->data()), id->size());
      auto data = r.sub(e->offset, e->size);
      if (!data)
        return bad("entry " + std::to_string(i) + " (" + std::string(ids) + "): code object at " + hex(e->offset) + " size " +
                   hex(e->size) + " exceeds the bundle size " + hex(bytes.size()));
      b.entries_.push_back({ids, e->offset, e->size, *data});
      end = std::max(end, e->offset + e->size);
    }
    b.header_size_ = off;
    b.end_ = std::max(end, off);
    return b;
  }
  static offload_bundle parse(byte_span bytes) { return try_parse(bytes).value(); }

  [[nodiscard]] const std::vector<bundle_entry>& entries() const noexcept { return entries_; }
  [[nodiscard]] byte_span bytes() const noexcept { return bytes_; }
  [[nodiscard]] std::uint64_t header_size() const noexcept { return header_size_; }
  // One past the last byte used: the bundle's size when it is embedded in a larger buffer.
  [[nodiscard]] std::uint64_t end() const noexcept { return end_; }

 private:
  byte_span bytes_{};
  std::vector<bundle_entry> entries_;
  std::uint64_t header_size_ = 0, end_ = 0;
};

// ---- CCOB ------------------------------------------------------------------------------------
struct ccob_header {
  unsigned version = 0;         // 1, 2 or 3
  std::uint16_t method = 0;     // abi::ccob_method_zlib / _zstd
  std::uint64_t total_size = 0; // v2/v3: stored; v1: header + rest of the buffer
  std::uint64_t uncompressed_size = 0;
  std::uint64_t hash = 0;       // first 8 bytes of MD5(payload), little-endian
  std::uint64_t header_size = 0;
  byte_span compressed;         // the compressed payload
};

[[nodiscard]] inline bool is_ccob(byte_span b) noexcept { return byte_reader(b).starts_with({abi::ccob_magic, 4}); }

inline std::string_view ccob_method_name(std::uint16_t m) noexcept {
  return m == abi::ccob_method_zstd ? "zstd" : m == abi::ccob_method_zlib ? "zlib" : "unknown";
}

// Reads and checks a CCOB header. `bytes` may extend past the CCOB (v2/v3 give its size); a v1
// CCOB stores no size, so its payload is the rest of `bytes`.
inline result<ccob_header> try_parse_ccob_header(byte_span bytes) {
  auto bad = [](std::string d) { return failure(errc::malformed_bundle, "CCOB: " + std::move(d)); };
  byte_reader r(bytes);
  if (!is_ccob(bytes)) return bad("missing magic CCOB");
  auto version = r.get<std::uint16_t>(4);
  auto method = r.get<std::uint16_t>(6);
  if (!version || !method) return bad("header truncated at " + std::to_string(bytes.size()) + " bytes");
  ccob_header h;
  h.version = *version;
  h.method = *method;
  if (h.version < 1 || h.version > 3)
    return failure(errc::unsupported_format, "CCOB version " + std::to_string(h.version) + " (known: 1, 2, 3)");
  if (h.method != abi::ccob_method_zlib && h.method != abi::ccob_method_zstd)
    return failure(errc::unsupported_format, "CCOB compression method " + std::to_string(h.method) + " (known: 0 zlib, 1 zstd)");
  h.header_size = h.version == 1 ? sizeof(abi::ccob_header_v1) : h.version == 2 ? sizeof(abi::ccob_header_v2) : sizeof(abi::ccob_header_v3);
  if (!r.has(0, h.header_size))
    return bad("v" + std::to_string(h.version) + " header needs " + std::to_string(h.header_size) + " bytes, have " + std::to_string(bytes.size()));
  if (h.version == 1) {
    h.uncompressed_size = *r.get<std::uint32_t>(8);
    h.hash = *r.get<std::uint64_t>(12);
    h.total_size = bytes.size();
  } else if (h.version == 2) {
    h.total_size = *r.get<std::uint32_t>(8);
    h.uncompressed_size = *r.get<std::uint32_t>(12);
    h.hash = *r.get<std::uint64_t>(16);
  } else {
    h.total_size = *r.get<std::uint64_t>(8);
    h.uncompressed_size = *r.get<std::uint64_t>(16);
    h.hash = *r.get<std::uint64_t>(24);
  }
  if (h.total_size < h.header_size)
    return bad("total size " + std::to_string(h.total_size) + " is smaller than the v" + std::to_string(h.version) + " header (" +
               std::to_string(h.header_size) + ")");
  if (h.total_size > bytes.size())
    return bad("total size " + std::to_string(h.total_size) + " exceeds the " + std::to_string(bytes.size()) + " bytes available (truncated)");
  h.compressed = bytes.subspan(static_cast<std::size_t>(h.header_size), static_cast<std::size_t>(h.total_size - h.header_size));
  return h;
}

// Verifies a decompressed payload against the header (size, then truncated MD5).
inline result<void> check_ccob_payload(const ccob_header& h, byte_span payload) {
  if (payload.size() != h.uncompressed_size)
    return failure(errc::decompression_failed, "CCOB payload is " + std::to_string(payload.size()) + " bytes, header says " +
                                                   std::to_string(h.uncompressed_size));
  const std::uint64_t got = ccob_hash(payload);
  if (got != h.hash)
    return failure(errc::hash_mismatch, "CCOB hash: header " + hex(h.hash) + ", MD5[0..8) of the payload " + hex(got));
  return ok();
}

}  // namespace aqueduct::code
