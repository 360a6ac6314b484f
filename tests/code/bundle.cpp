// tests/code/bundle.cpp — offload bundles, CCOB v1/v2/v3 (zstd, zlib), .hip_fatbin, MD5.
// Expected values: clang-offload-bundler-19 --list, the original code objects the bundler was
// given, the zstd CLI and md5sum (make-fixtures.sh), RFC 1321's test suite, zlib's compress2.
#include "oracle.hpp"

#include <aqueduct/code/fat_binary.hpp>

#include <zlib.h>

#include <cstring>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

namespace code = aqueduct::code;
using aqueduct::errc;

namespace {
template <class T>
void poke(std::vector<std::byte>& b, std::size_t off, T v) { std::memcpy(b.data() + off, &v, sizeof v); }
template <class T>
T peek(const std::vector<std::byte>& b, std::size_t off) { T v; std::memcpy(&v, b.data() + off, sizeof v); return v; }
std::string md5_hex(std::string_view s) {
  auto d = code::md5(code::as_bytes(s));
  std::string out;
  char buf[3];
  for (auto x : d) { std::snprintf(buf, 3, "%02x", static_cast<unsigned>(x)); out += buf; }
  return out;
}
bool same(code::byte_span a, const std::vector<std::byte>& b) { return a.size() == b.size() && std::memcmp(a.data(), b.data(), b.size()) == 0; }
std::multiset<std::string> ids_of(const code::fat_binary& fb) {
  std::multiset<std::string> s;
  for (const auto& e : fb.entries()) s.insert(std::string(e.id));
  return s;
}
std::uint64_t md5sum_hash() {  // first 8 digest bytes as written by md5sum, read little-endian
  auto hex = fx::text("ccob/payload.md5").substr(0, 16);
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | std::stoul(hex.substr(static_cast<std::size_t>(2 * i), 2), nullptr, 16);
  return v;
}
}  // namespace

TEST_CASE("MD5 matches the RFC 1321 test suite") {
  CHECK(md5_hex("") == "d41d8cd98f00b204e9800998ecf8427e");
  CHECK(md5_hex("a") == "0cc175b9c0f1b6a831c399e269772661");
  CHECK(md5_hex("abc") == "900150983cd24fb0d6963f7d28e17f72");
  CHECK(md5_hex("message digest") == "f96b697d7cb7938d525a2f31aaf161d0");
  CHECK(md5_hex("abcdefghijklmnopqrstuvwxyz") == "c3fcd3d76192e4007dfb496cca67e13b");
  CHECK(md5_hex("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789") == "d174ab98d277d9f5a5611c2c9f419d9f");
  CHECK(md5_hex("12345678901234567890123456789012345678901234567890123456789012345678901234567890") == "57edf4a22be3c955ac49da2e2107b67a");
}

TEST_CASE("bundles and CCOBs list the IDs clang-offload-bundler-19 --list prints") {
  for (const char* f : {"bundle/nohost-align1.co", "bundle/host-align4096.co", "bundle/generic.co", "bundle/many.co", "bundle/openmp-gfx1100.co",
                        "bundle/hip-gfx1030-gfx1100.hipfb", "bundle/handmade-any-then-pinned.co", "ccob/host-align4096.co", "ccob/nohost-l19.co",
                        "ccob/hip-gfx1030-gfx1100.hipfb", "ccob/v1-zstd.co"}) {
    CAPTURE(f);
    auto b = fx::bytes(f);
    auto fb = code::fat_binary::try_open(b);
    REQUIRE_MESSAGE(fb.has_value(), fb.detail());
    CHECK(ids_of(*fb) == fx::bundler_list(f));
  }
}

TEST_CASE("try_list_bundle_ids: a CCOB's IDs without unbundling, in file order") {
  auto c = fx::bytes("ccob/host-align4096.co");
  auto ids = code::try_list_bundle_ids(c);
  REQUIRE(ids.has_value());
  // file order = the bundler's --targets order (make-fixtures.sh)
  CHECK(*ids == std::vector<std::string>{"host-x86_64-unknown-linux-gnu-", "hipv4-amdgcn-amd-amdhsa--gfx1030",
                                         "hipv4-amdgcn-amd-amdhsa--gfx1100", "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-"});
  CHECK(std::multiset<std::string>(ids->begin(), ids->end()) == fx::bundler_list("ccob/host-align4096.co"));
  auto e = fx::bytes("elf/vadd-gfx90a_srameccp_xnack-.hsaco");
  CHECK(code::try_list_bundle_ids(e).value() == std::vector<std::string>{"gfx90a:sramecc+:xnack-"});
}

TEST_CASE("bundle entries are the exact code objects given to the bundler") {
  auto b = fx::bytes("bundle/host-align4096.co");
  auto bundle = code::offload_bundle::parse(b);
  REQUIRE(bundle.entries().size() == 4);
  CHECK(bundle.entries()[0].id == "host-x86_64-unknown-linux-gnu-");
  CHECK(bundle.entries()[0].size == 0);
  CHECK(bundle.entries()[1].offset == 0x1000);  // spec §5.1 measured layout
  CHECK(bundle.entries()[2].offset == 0x3000);
  CHECK(bundle.entries()[3].offset == 0x5000);
  CHECK(same(bundle.entries()[1].data, fx::bytes("elf/vadd-gfx1030.hsaco")));
  CHECK(same(bundle.entries()[2].data, fx::bytes("elf/vadd-gfx1100.hsaco")));
  CHECK(same(bundle.entries()[3].data, fx::bytes("elf/vadd-gfx90a_xnack-.hsaco")));
  CHECK(bundle.end() == b.size());  // no tail padding
  auto a1 = fx::bytes("bundle/nohost-align1.co");
  auto n1 = code::offload_bundle::parse(a1);
  CHECK(n1.entries()[0].offset == 0xce);  // odd offset: spec §1.6 item 13
  CHECK(same(n1.entries()[0].data, fx::bytes("elf/vadd-gfx1030.hsaco")));
}

TEST_CASE("CCOB v2 from clang: header fields, payload == uncompressed bundle, hash == md5sum") {
  auto c = fx::bytes("ccob/host-align4096.co");
  auto h = code::try_parse_ccob_header(c);
  REQUIRE(h.has_value());
  CHECK(h->version == 2);
  CHECK(h->method == 1);
  CHECK(h->total_size == c.size());
  auto plain = fx::bytes("bundle/host-align4096.co");
  CHECK(h->uncompressed_size == plain.size());
  CHECK(h->hash == md5sum_hash());
  auto payload = code::try_decompress_ccob(*h);
  REQUIRE(payload.has_value());
  CHECK(*payload == plain);
}

// clang-offload-bundler-19 lists our v1 file (see the --list test) but not v3, which clang 20
// introduced (llvm PR 122307): its .list says "Unknown frame descriptor" (it reads the v3 header as
// v2). The v3 layout is checked against the upstream header struct (spec §5.3) through this
// round trip of a zstd CLI frame.
TEST_CASE("CCOB v1 and v3 (zstd CLI frame, md5sum hash) decompress to the same bundle") {
  auto plain = fx::bytes("bundle/host-align4096.co");
  for (const char* f : {"ccob/v1-zstd.co", "ccob/v3-zstd.co"}) {
    CAPTURE(f);
    auto c = fx::bytes(f);
    auto h = code::try_parse_ccob_header(c);
    REQUIRE(h.has_value());
    CHECK(h->version == (f[6] == '1' ? 1u : 3u));
    CHECK(h->header_size == (h->version == 1 ? 20u : 32u));
    auto p = code::try_decompress_ccob(*h);
    REQUIRE_MESSAGE(p.has_value(), p.detail());
    CHECK(*p == plain);
  }
}

namespace {
// A CCOB of version v with method zlib around zlib's own compress2 output (hash from md5sum).
std::vector<std::byte> zlib_ccob(unsigned v, const std::vector<std::byte>& plain) {
  uLongf cap = compressBound(static_cast<uLong>(plain.size()));
  std::vector<std::byte> z(cap);
  REQUIRE(compress2(reinterpret_cast<Bytef*>(z.data()), &cap, reinterpret_cast<const Bytef*>(plain.data()), static_cast<uLong>(plain.size()), 9) == Z_OK);
  z.resize(cap);
  std::vector<std::byte> out(v == 1 ? 20 : v == 2 ? 24 : 32);
  std::memcpy(out.data(), "CCOB", 4);
  poke<std::uint16_t>(out, 4, static_cast<std::uint16_t>(v));
  poke<std::uint16_t>(out, 6, 0);
  const std::uint64_t total = out.size() + z.size();
  if (v == 1) { poke<std::uint32_t>(out, 8, static_cast<std::uint32_t>(plain.size())); poke<std::uint64_t>(out, 12, md5sum_hash()); }
  if (v == 2) { poke<std::uint32_t>(out, 8, static_cast<std::uint32_t>(total)); poke<std::uint32_t>(out, 12, static_cast<std::uint32_t>(plain.size())); poke<std::uint64_t>(out, 16, md5sum_hash()); }
  if (v == 3) { poke<std::uint64_t>(out, 8, total); poke<std::uint64_t>(out, 16, plain.size()); poke<std::uint64_t>(out, 24, md5sum_hash()); }
  out.insert(out.end(), z.begin(), z.end());
  return out;
}
}  // namespace

TEST_CASE("zlib CCOBs of every version") {
  auto plain = fx::bytes("bundle/host-align4096.co");
  for (unsigned v = 1; v <= 3; ++v) {
    CAPTURE(v);
    auto c = zlib_ccob(v, plain);
    auto fb = code::fat_binary::try_open(c);
    REQUIRE_MESSAGE(fb.has_value(), fb.detail());
    CHECK(fb->ccob()->method == 0);
    CHECK(ids_of(*fb) == fx::bundler_list("bundle/host-align4096.co"));
    CHECK(same(fb->entries()[2].data, fx::bytes("elf/vadd-gfx1100.hsaco")));
  }
}

TEST_CASE("a v2 CCOB embedded in a larger buffer uses its stored total size") {
  auto c = fx::bytes("ccob/host-align4096.co");
  auto padded = c;
  padded.resize(c.size() + 4096, std::byte{0xee});
  auto h = code::try_parse_ccob_header(padded);
  REQUIRE(h.has_value());
  CHECK(h->compressed.size() == c.size() - 24);
  CHECK(code::try_decompress_ccob(*h).has_value());
}

TEST_CASE("HIP host objects: .hip_fatbin found and read (plain and compressed)") {
  auto host = fx::bytes("host/kern-host.o");
  auto sec = code::try_find_hip_fatbin(host);
  REQUIRE(sec.has_value());
  CHECK(same(*sec, fx::bytes("host/kern-host.hip_fatbin")));  // llvm-objcopy --dump-section
  auto fb = code::fat_binary::open(host);
  CHECK(fb.from_host_object());
  CHECK(fb.format() == code::binary_format::offload_bundle);
  CHECK(ids_of(fb) == fx::bundler_list("bundle/hip-gfx1030-gfx1100.hipfb"));
  auto hostc = fx::bytes("host/kern-host-compressed.o");
  auto fbc = code::fat_binary::open(hostc);
  CHECK(fbc.format() == code::binary_format::ccob);
  CHECK(ids_of(fbc) == fx::bundler_list("ccob/hip-gfx1030-gfx1100.hipfb"));
  auto elf = fx::bytes("elf/vadd-gfx1100.hsaco");
  CHECK(code::try_find_hip_fatbin(elf).get_failure() == errc::not_found);
}

TEST_CASE("malformed uncompressed bundles") {
  const auto good = fx::bytes("bundle/host-align4096.co");
  auto expect = [&](auto mutate, const char* needle) {
    auto b = good;
    mutate(b);
    auto r = code::offload_bundle::try_parse(b);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.get_failure() == errc::malformed_bundle);
    CHECK_MESSAGE(r.detail().find(needle) != std::string_view::npos, r.detail());
  };
  expect([](auto& b) { b[3] = std::byte{'x'}; }, "magic");
  expect([](auto& b) { b.resize(28); }, "truncated");
  expect([](auto& b) { poke<std::uint64_t>(b, 24, 1ull << 60); }, "entry count");
  expect([](auto& b) { poke<std::uint64_t>(b, 24, 2000); }, "entry count");
  expect([](auto& b) { poke<std::uint64_t>(b, 32 + 16, 1ull << 62); }, "ID length");
  // second entry (after the 30-byte host ID): offset / size beyond the end
  expect([](auto& b) { poke<std::uint64_t>(b, 32 + 24 + 30, 0xfffffffffffffff0ull); }, "exceeds the bundle size");
  expect([](auto& b) { poke<std::uint64_t>(b, 32 + 24 + 30 + 8, 1ull << 40); }, "exceeds the bundle size");
  expect([](auto& b) { b.resize(0x5000 + 100); }, "exceeds the bundle size");
  for (std::size_t n = 0; n < 400; ++n) CHECK_FALSE(code::offload_bundle::try_parse(code::byte_span(good.data(), n)).has_value());
}

TEST_CASE("malformed CCOBs: versions, methods, sizes, hashes, zip bombs") {
  const auto good = fx::bytes("ccob/host-align4096.co");
  auto open = [](const std::vector<std::byte>& b, code::decompress_limits lim = {}) { return code::fat_binary::try_open(b, lim); };
  auto expect = [&](auto mutate, errc e, const char* needle, code::decompress_limits lim = {}) {
    auto b = good;
    mutate(b);
    auto r = open(b, lim);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.get_failure() == e);
    CHECK_MESSAGE(r.detail().find(needle) != std::string_view::npos, r.detail());
  };
  expect([](auto& b) { poke<std::uint16_t>(b, 4, 4); }, errc::unsupported_format, "CCOB version 4");
  expect([](auto& b) { poke<std::uint16_t>(b, 4, 0); }, errc::unsupported_format, "CCOB version 0");
  expect([](auto& b) { poke<std::uint16_t>(b, 6, 7); }, errc::unsupported_format, "method 7");
  expect([](auto& b) { b.resize(10); }, errc::malformed_bundle, "header needs 24");
  expect([](auto& b) { b.resize(6); }, errc::malformed_bundle, "truncated");
  expect([](auto& b) { b.resize(b.size() - 1); }, errc::malformed_bundle, "truncated");
  expect([](auto& b) { poke<std::uint32_t>(b, 8, 10); }, errc::malformed_bundle, "smaller than the v2 header");
  expect([](auto& b) { poke<std::uint32_t>(b, 8, 0xffffffffu); }, errc::malformed_bundle, "exceeds");
  expect([](auto& b) { poke<std::uint64_t>(b, 16, peek<std::uint64_t>(b, 16) ^ 1); }, errc::hash_mismatch, "hash");
  expect([](auto& b) { poke<std::uint32_t>(b, 12, peek<std::uint32_t>(b, 12) + 1); }, errc::decompression_failed, "zstd frame says");
  expect([](auto& b) { b[30] = std::byte{0xff}; b[31] = std::byte{0xff}; b[40] ^= std::byte{0x5a}; }, errc::decompression_failed, "");
  expect([](auto& b) { b[24] = std::byte{0}; }, errc::decompression_failed, "zstd");
  // zip bomb: a v3 header claiming 1 TiB is refused before allocating
  std::vector<std::byte> bomb(32 + 16, std::byte{0});
  std::memcpy(bomb.data(), "CCOB", 4);
  poke<std::uint16_t>(bomb, 4, 3);
  poke<std::uint16_t>(bomb, 6, 1);
  poke<std::uint64_t>(bomb, 8, bomb.size());
  poke<std::uint64_t>(bomb, 16, 1ull << 40);
  auto r = open(bomb);
  REQUIRE_FALSE(r.has_value());
  CHECK(r.get_failure() == errc::decompression_failed);
  CHECK(r.detail().find("above the limit") != std::string_view::npos);
  // configurable limit: the real file needs 26056 bytes
  expect([](auto&) {}, errc::decompression_failed, "limit of 1000", code::decompress_limits{1000, true});
  // hash verification can be switched off
  auto b = good;
  poke<std::uint64_t>(b, 16, 0);
  CHECK(open(b, code::decompress_limits{1u << 30, false}).has_value());
  // zlib payload that inflates to more than the header says
  auto plain = fx::bytes("bundle/host-align4096.co");
  auto z = zlib_ccob(2, plain);
  poke<std::uint32_t>(z, 12, static_cast<std::uint32_t>(plain.size() - 1));
  auto rz = open(z);
  REQUIRE_FALSE(rz.has_value());
  CHECK(rz.get_failure() == errc::decompression_failed);
  for (std::size_t n = 0; n < good.size(); n += 13) CHECK_FALSE(open(std::vector<std::byte>(good.begin(), good.begin() + static_cast<long>(n))).has_value());
}

TEST_CASE("formats that are none of ours") {
  std::vector<std::byte> junk(100, std::byte{0x42});
  auto r = code::fat_binary::try_open(junk);
  REQUIRE_FALSE(r.has_value());
  CHECK(r.get_failure() == errc::unsupported_format);
  CHECK(code::fat_binary::try_open({}).get_failure() == errc::unsupported_format);
}

}  // namespace AQ_UNITY_ID
