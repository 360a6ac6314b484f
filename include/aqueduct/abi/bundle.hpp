// aqueduct/abi/bundle.hpp — clang offload bundle and compressed bundle (CCOB) headers.
//
// Layer: abi (bit-exact wire formats only). Uncompressed bundles: ClangOffloadBundler.rst
// (clang 19) and spec/code-objects.md §5.1; CCOB v1/v2/v3: spec §5.3 (v1 llvm PR 67162, v2 PR
// 88827, v3 PR 122307), all little-endian. The CCOB structs are packed wire images (their u64
// fields are not naturally aligned in v1/v2); readers in code/ copy fields out with memcpy.
// Thread safety: constants and trivially copyable types.
#pragma once

#include <cstddef>
#include <cstdint>

namespace aqueduct::abi {

// ---- uncompressed bundle (spec §5.1) ---------------------------------------------------------
// magic (24 bytes, no NUL) | u64 entry count | entries | code objects at their offsets
inline constexpr char offload_bundle_magic[] = "__CLANG_OFFLOAD_BUNDLE__";
inline constexpr std::size_t offload_bundle_magic_size = 24;
static_assert(sizeof(offload_bundle_magic) == offload_bundle_magic_size + 1);

struct offload_bundle_header {
  char magic[24];
  std::uint64_t num_entries;
};
static_assert(sizeof(offload_bundle_header) == 32 && offsetof(offload_bundle_header, num_entries) == 24);

// Fixed part of one entry; `id_size` bytes of bundle entry ID (no NUL) follow.
struct offload_bundle_entry_header {
  std::uint64_t offset;  // from the start of the bundle
  std::uint64_t size;
  std::uint64_t id_size;
};
static_assert(sizeof(offload_bundle_entry_header) == 24);
static_assert(offsetof(offload_bundle_entry_header, size) == 8 && offsetof(offload_bundle_entry_header, id_size) == 16);

// ---- compressed bundle "CCOB" (spec §5.3) -------------------------------------------------
inline constexpr char ccob_magic[] = "CCOB";
inline constexpr std::size_t ccob_magic_size = 4;
// llvm::compression::Format
inline constexpr std::uint16_t ccob_method_zlib = 0;
inline constexpr std::uint16_t ccob_method_zstd = 1;

#pragma pack(push, 1)
struct ccob_header_v1 {  // clang 18
  char magic[4];
  std::uint16_t version;  // 1
  std::uint16_t method;
  std::uint32_t uncompressed_size;
  std::uint64_t hash;  // first 8 bytes of MD5(uncompressed bundle), read little-endian
};
struct ccob_header_v2 {  // clang 19
  char magic[4];
  std::uint16_t version;  // 2
  std::uint16_t method;
  std::uint32_t total_size;  // whole file incl. this header
  std::uint32_t uncompressed_size;
  std::uint64_t hash;
};
struct ccob_header_v3 {  // clang 20 opt-in, clang 22 default
  char magic[4];
  std::uint16_t version;  // 3
  std::uint16_t method;
  std::uint64_t total_size;
  std::uint64_t uncompressed_size;
  std::uint64_t hash;
};
#pragma pack(pop)

static_assert(sizeof(ccob_header_v1) == 20);
static_assert(offsetof(ccob_header_v1, version) == 4 && offsetof(ccob_header_v1, method) == 6);
static_assert(offsetof(ccob_header_v1, uncompressed_size) == 8 && offsetof(ccob_header_v1, hash) == 12);
static_assert(sizeof(ccob_header_v2) == 24);
static_assert(offsetof(ccob_header_v2, total_size) == 8 && offsetof(ccob_header_v2, uncompressed_size) == 12);
static_assert(offsetof(ccob_header_v2, hash) == 16);
static_assert(sizeof(ccob_header_v3) == 32);
static_assert(offsetof(ccob_header_v3, total_size) == 8 && offsetof(ccob_header_v3, uncompressed_size) == 16);
static_assert(offsetof(ccob_header_v3, hash) == 24);

// ---- HIP fat binary wrapper in a host object (spec §1.6 item 14) ------------------------------
inline constexpr char hip_fatbin_section[] = ".hip_fatbin";
inline constexpr char hip_fatbin_segment_section[] = ".hipFatBinSegment";
inline constexpr std::uint32_t hip_fatbin_wrapper_magic = 0x48495046;  // bytes "FPIH"
struct hip_fatbin_wrapper {
  std::uint32_t magic;
  std::uint32_t version;  // 1
  std::uint64_t binary;   // relocated to .hip_fatbin
  std::uint64_t reserved;
};
static_assert(sizeof(hip_fatbin_wrapper) == 24 && offsetof(hip_fatbin_wrapper, binary) == 8);

}  // namespace aqueduct::abi
