// aqueduct/code/decompress.hpp — inflating CCOB payloads with libzstd and zlib.
//
// Layer: code. The only header that calls into libzstd and zlib: it compiles on its own, but a
// program that uses it links `-lzstd -lz`. A CCOB header states the uncompressed size; a size above
// `decompress_limits::max_uncompressed` (a zip bomb, or a lying header) is refused before any
// allocation. The zstd frame's own content size, when present, must agree with the header. After
// decompression the size and (unless disabled) the truncated MD5 are checked (spec §5.3).
// Thread safety: pure functions.
#pragma once

#include <aqueduct/code/bundle.hpp>
#include <aqueduct/core/result.hpp>

#include <zlib.h>
#include <zstd.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace aqueduct::code {

struct decompress_limits {
  // Largest payload accepted (default 1 GiB; real fat binaries are kilobytes to a few hundred MiB).
  std::uint64_t max_uncompressed = std::uint64_t(1) << 30;
  // Verify the truncated MD5 of the payload (clang itself checks it only in verbose mode).
  bool verify_hash = true;
};

// Decompresses a parsed CCOB header's payload into a new buffer.
inline result<std::vector<std::byte>> try_decompress_ccob(const ccob_header& h, const decompress_limits& lim = {}) {
  if (h.uncompressed_size > lim.max_uncompressed)
    return failure(errc::decompression_failed, "CCOB claims " + std::to_string(h.uncompressed_size) +
                                                   " uncompressed bytes, above the limit of " + std::to_string(lim.max_uncompressed) +
                                                   " (decompress_limits::max_uncompressed); refused before allocating");
  if (h.uncompressed_size > std::numeric_limits<std::size_t>::max() / 2)
    return failure(errc::decompression_failed, "CCOB uncompressed size does not fit in memory");
  std::vector<std::byte> out;
  if (h.method == abi::ccob_method_zstd) {
    const unsigned long long fcs = ZSTD_getFrameContentSize(h.compressed.data(), h.compressed.size());
    if (fcs == ZSTD_CONTENTSIZE_ERROR)
      return failure(errc::decompression_failed, "CCOB zstd payload does not start with a valid zstd frame");
    if (fcs != ZSTD_CONTENTSIZE_UNKNOWN && fcs != h.uncompressed_size)
      return failure(errc::decompression_failed, "CCOB header says " + std::to_string(h.uncompressed_size) +
                                                     " uncompressed bytes, the zstd frame says " + std::to_string(fcs));
    out.resize(static_cast<std::size_t>(h.uncompressed_size));
    const std::size_t n = ZSTD_decompress(out.data(), out.size(), h.compressed.data(), h.compressed.size());
    if (ZSTD_isError(n)) return failure(errc::decompression_failed, std::string("zstd: ") + ZSTD_getErrorName(n));
    out.resize(n);
  } else if (h.method == abi::ccob_method_zlib) {
    if (h.compressed.size() > std::numeric_limits<uLong>::max() || h.uncompressed_size > std::numeric_limits<uLongf>::max())
      return failure(errc::decompression_failed, "CCOB zlib payload too large for zlib's interface");
    out.resize(static_cast<std::size_t>(h.uncompressed_size));
    uLongf len = static_cast<uLongf>(out.size());
    // uncompress() needs a non-null destination even for an empty result.
    std::byte dummy{};
    const int rc = ::uncompress(reinterpret_cast<Bytef*>(out.empty() ? &dummy : out.data()), &len,
                                reinterpret_cast<const Bytef*>(h.compressed.data()), static_cast<uLong>(h.compressed.size()));
    if (rc == Z_BUF_ERROR)
      return failure(errc::decompression_failed, "zlib: payload inflates to more than the " + std::to_string(h.uncompressed_size) +
                                                     " bytes the header states, or is truncated");
    if (rc != Z_OK) return failure(errc::decompression_failed, "zlib: error " + std::to_string(rc) + (rc == Z_DATA_ERROR ? " (corrupt data)" : ""));
    out.resize(len);
  } else {
    return failure(errc::unsupported_format, "CCOB compression method " + std::to_string(h.method));
  }
  if (out.size() != h.uncompressed_size)
    return failure(errc::decompression_failed, "CCOB payload inflated to " + std::to_string(out.size()) + " bytes, header says " +
                                                   std::to_string(h.uncompressed_size));
  if (lim.verify_hash) AQUEDUCT_TRY_VOID(check_ccob_payload(h, out));
  return out;
}

inline result<std::vector<std::byte>> try_decompress_ccob(byte_span bytes, const decompress_limits& lim = {}) {
  AQUEDUCT_TRY(auto h, try_parse_ccob_header(bytes));
  return try_decompress_ccob(h, lim);
}

}  // namespace aqueduct::code
