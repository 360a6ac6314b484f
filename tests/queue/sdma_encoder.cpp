// Tests for queue/sdma_encoder.hpp. Expected dwords are the sequences quoted in
// spec/packets.md §3.4 (tinygrad AMDCopyQueue on gfx11/12 and gfx9) and §3.5 (Linux sdma_v6_0),
// Linux sdma_v7_0.c's 8-dword COPY_LINEAR, and the per-engine limits of §3.3 (Mesa).
#include <aqueduct/arch/target.hpp>
#include <aqueduct/queue/sdma_encoder.hpp>

#include <doctest/doctest.h>

#include <array>
#include <cstdint>
#include <vector>

#include <range/v3/range/conversion.hpp>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

namespace pkt = aqueduct::abi::sdma;
namespace qs = aqueduct::ring::sdma;
using aqueduct::gpu_va;

namespace {
template <std::size_t N>
using dws = std::array<std::uint32_t, N>;

template <class Enc, std::size_t N, class F>
std::vector<std::uint32_t> emit(F&& f) {
  std::vector<std::uint32_t> out(N, 0xBADC0DEDu);
  const std::size_t n = f(std::span<std::uint32_t>(out));
  out.resize(n);
  return out;
}
std::vector<std::uint32_t> vec(std::initializer_list<std::uint32_t> l) { return l; }

constexpr gpu_va src{0x00007F12'34560000ull};
constexpr gpu_va dst{0x00007F98'76540000ull};
}  // namespace

TEST_CASE("COPY_LINEAR golden dwords per engine (§3.4; Linux sdma_v7_0)") {
  // tinygrad gfx11/12: 00000001, n-1, 0, src lo, src hi, dst lo, dst hi.
  const auto expect7 = vec({0x00000001u, 0xFFFu, 0, 0x34560000u, 0x7F12u, 0x76540000u, 0x7F98u});
  CHECK(emit<qs::encoder_v6, 16>([](auto o) { return qs::encoder_v6::copy_linear(o, dst, src, 0x1000); }) == expect7);
  CHECK(emit<qs::encoder_v4, 16>([](auto o) { return qs::encoder_v4::copy_linear(o, dst, src, 0x1000); }) == expect7);
  CHECK(emit<qs::encoder_v5, 16>([](auto o) { return qs::encoder_v5::copy_linear(o, dst, src, 0x1000); }) == expect7);
  // SDMA 7: Linux appends a DCC-control dword (0 when not compressing).
  auto expect8 = expect7;
  expect8.push_back(0);
  CHECK(emit<qs::encoder_v7, 16>([](auto o) { return qs::encoder_v7::copy_linear(o, dst, src, 0x1000); }) == expect8);
  // 30-bit count on 5.2+: the largest allowed chunk, Mesa 0x3FFFFF00 → count 0x3FFFFEFF.
  CHECK(emit<qs::encoder_v6, 16>([](auto o) { return qs::encoder_v6::copy_linear(o, dst, src, 0x3FFFFF00u); })[1] ==
        0x3FFFFEFFu);
  CHECK(emit<qs::encoder_v4, 16>([](auto o) { return qs::encoder_v4::copy_linear(o, dst, src, 0x3FFF00u); })[1] ==
        0x3FFEFFu);
}

TEST_CASE("signal / wait / timestamp / write as tinygrad emits them (§3.4)") {
  const gpu_va sig{0x00007F00'00001000ull};
  // signal(sig, v): 00030005 (FENCE, MTYPE UC), addr lo, hi, v; gfx9: 00000005.
  CHECK(emit<qs::encoder_v6, 8>([&](auto o) { return qs::encoder_v6::fence(o, sig, 7); }) ==
        vec({0x00030005u, 0x00001000u, 0x7F00u, 7u}));
  CHECK(emit<qs::encoder_v4, 8>([&](auto o) { return qs::encoder_v4::fence(o, sig, 7); }) ==
        vec({0x00000005u, 0x00001000u, 0x7F00u, 7u}));
  // KFD timeline: TRAP with the event id: 00000006, event_id.
  CHECK(emit<qs::encoder_v6, 4>([](auto o) { return qs::encoder_v6::trap(o, 0x1234); }) == vec({0x00000006u, 0x1234u}));
  // wait(sig, v): D0000008, addr lo, hi, v, FFFFFFFF, 0FFF0004.
  CHECK(emit<qs::encoder_v6, 8>([&](auto o) { return qs::encoder_v6::poll_regmem(o, sig, 42); }) ==
        vec({0xD0000008u, 0x00001000u, 0x7F00u, 42u, 0xFFFFFFFFu, 0x0FFF0004u}));
  // timestamp(sig): 0000020D, (sig+8) lo, hi.
  CHECK(emit<qs::encoder_v6, 4>([&](auto o) { return qs::encoder_v6::timestamp(o, sig + aqueduct::byte_count(8)); }) ==
        vec({0x0000020Du, 0x00001008u, 0x7F00u}));
  // write(buf, v, b64=True): 00000002, lo, hi, 1 (= ndw-1), v lo, v hi.
  const std::array<std::uint32_t, 2> v64{0xAABBCCDDu, 0x11223344u};
  CHECK(emit<qs::encoder_v6, 8>([&](auto o) { return qs::encoder_v6::write(o, sig, v64); }) ==
        vec({0x00000002u, 0x00001000u, 0x7F00u, 1u, 0xAABBCCDDu, 0x11223344u}));
  const std::array<std::uint32_t, 1> v32{5};
  CHECK(emit<qs::encoder_v6, 8>([&](auto o) { return qs::encoder_v6::write(o, sig, v32); }) ==
        vec({0x00000002u, 0x00001000u, 0x7F00u, 0u, 5u}));
}

TEST_CASE("Linux sdma_v6/v7 reference sequences (§3.5)") {
  // HDP flush: 34000008, DONE<<2, REQ<<2, ref, mask, RETRY 0xFFF | INTERVAL 10.
  CHECK(emit<qs::encoder_v6, 8>([](auto o) { return qs::encoder_v6::hdp_flush(o, 0xE27, 0xE26, 1u << 10); }) ==
        vec({0x34000008u, 0xE27u << 2, 0xE26u << 2, 1u << 10, 1u << 10, 0x0FFF000Au}));
  // Fill: CONST_FILL header only op (FILLSIZE 0), dst lo/hi, data, byte_count - 1.
  CHECK(emit<qs::encoder_v6, 8>([](auto o) {
          return qs::encoder_v6::constant_fill(o, dst, 0xCAFEu, 0x100, pkt::constant_fill::fillsize_byte);
        }) == vec({0x0000000Bu, 0x76540000u, 0x7F98u, 0xCAFEu, 0xFFu}));
  // ROCT dword fill: FILLSIZE 2 → header 0x8000000B.
  CHECK(emit<qs::encoder_v6, 8>([](auto o) { return qs::encoder_v6::constant_fill(o, dst, 1u, 0x100); })[0] == 0x8000000Bu);
  // mem_sync: GCR_REQ with GL2_INV|GL2_WB|GLM_INV|GL1_INV|GLV_INV|GLK_INV|GLI_INV(1), base/limit 0.
  const std::uint32_t gcr = (1u << 14) | (1u << 15) | (1u << 5) | (1u << 9) | (1u << 8) | (1u << 7) | 1u;
  CHECK(emit<qs::encoder_v6, 8>([&](auto o) { return qs::encoder_v6::gcr_req(o, gcr); }) ==
        vec({0x00000011u, 0u, gcr << 16, 0u, 0u}));
  // IB: NOPs so the 6-dword INDIRECT ends 8-aligned (Linux (2 - wptr) & 7).
  CHECK(qs::encoder_v6::indirect_pad_before(0) == 2u);
  CHECK(qs::encoder_v6::indirect_pad_before(2) == 0u);
  CHECK(qs::encoder_v6::indirect_pad_before(3) == 7u);
  // tinygrad bind: 00000004, ib lo, ib hi, ndw, 0, 0.
  CHECK(emit<qs::encoder_v6, 8>([](auto o) { return qs::encoder_v6::indirect(o, gpu_va{0x1'00000040ull}, 64); }) ==
        vec({0x00000004u, 0x40u, 0x1u, 64u, 0u, 0u}));
  // Burst NOP: count [29:16] = extra payload dwords.
  CHECK(emit<qs::encoder_v6, 8>([](auto o) { return qs::encoder_v6::nop(o, 3); }) == vec({0x00020000u, 0u, 0u}));
  CHECK(emit<qs::encoder_v6, 8>([](auto o) { return qs::encoder_v6::nop(o, 1); }) == vec({0x00000000u}));
}

TEST_CASE("ATOMIC add64 (§3.2; ROCr SDMA_ATOMIC_ADD64 = 47)") {
  const gpu_va a{0x2000};
  CHECK(emit<qs::encoder_v6, 8>([&](auto o) { return qs::encoder_v6::atomic(o, a, pkt::atomic::op_add64, 0x1'00000002ull); }) ==
        vec({0x5E00000Au, 0x2000u, 0u, 2u, 1u, 0u, 0u, 0u}));
}

TEST_CASE("copy splitter: sizes around the engine limits (§3.3)") {
  using v4 = qs::encoder_v4;
  using v6 = qs::encoder_v6;
  static_assert(v4::max_copy_bytes == 0x3FFF00u && v6::max_copy_bytes == 0x3FFFFF00u);
  const auto chunks = [](std::uint64_t bytes, std::uint64_t max) {
    return qs::copy_chunks(dst, src, bytes, max) | ranges::to<std::vector>();
  };
  CHECK(chunks(0, 0x3FFF00).empty());
  CHECK(chunks(1, 0x3FFF00) == std::vector<qs::copy_chunk>{{dst, src, 1}});
  CHECK(chunks(0x3FFF00, 0x3FFF00) == std::vector<qs::copy_chunk>{{dst, src, 0x3FFF00}});
  CHECK(chunks(0x3FFF01, 0x3FFF00) ==
        std::vector<qs::copy_chunk>{{dst, src, 0x3FFF00},
                                    {gpu_va{dst.value + 0x3FFF00}, gpu_va{src.value + 0x3FFF00}, 1}});
  // Odd addresses and an odd length: 3 chunks, last = remainder, addresses advance by the max.
  const gpu_va odst{0x1003}, osrc{0x2001};
  const auto odd = chunks(2 * 0x3FFF00 + 5, 0x3FFF00);
  REQUIRE(odd.size() == 3);
  CHECK_FALSE(odd[0] == qs::copy_chunk{odst, osrc, 0x3FFF00});  // different base (sanity of operator==)
  const auto odd2 = qs::copy_chunks(odst, osrc, 2 * 0x3FFF00 + 5, 0x3FFF00) | ranges::to<std::vector>();
  CHECK(odd2[0] == qs::copy_chunk{odst, osrc, 0x3FFF00});
  CHECK(odd2[1] == qs::copy_chunk{gpu_va{0x1003 + 0x3FFF00}, gpu_va{0x2001 + 0x3FFF00}, 0x3FFF00});
  CHECK(odd2[2] == qs::copy_chunk{gpu_va{0x1003 + 2 * 0x3FFF00}, gpu_va{0x2001 + 2 * 0x3FFF00}, 5});

  // The whole copy as packets: counts are bytes-1 per chunk.
  CHECK(v4::copy_dwords(odst, osrc, 0) == 0u);
  CHECK(v4::copy_dwords(odst, osrc, 1) == 7u);
  CHECK(v4::copy_dwords(odst, osrc, 0x3FFF00) == 7u);
  CHECK(v4::copy_dwords(odst, osrc, 0x3FFF01) == 14u);
  CHECK(qs::encoder_v7::copy_dwords(dst, src, 0x3FFFFF04ull) == 16u);
  std::vector<std::uint32_t> out(v4::copy_dwords(odst, osrc, 0x3FFF01), 0);
  REQUIRE(v4::copy(out, odst, osrc, 0x3FFF01) == 14u);
  CHECK(out[0] == 0x1u);
  CHECK(out[1] == 0x3FFEFFu);
  CHECK(out[3] == 0x2001u);
  CHECK(out[5] == 0x1003u);
  CHECK(out[7] == 0x1u);
  CHECK(out[8] == 0u);  // 1 byte → count 0
  CHECK(out[10] == 0x2001u + 0x3FFF00u);
  CHECK(out[12] == 0x1003u + 0x3FFF00u);
  // A v6 copy of exactly 1 GiB: two chunks, the first exactly 0x3FFFFF00.
  std::vector<std::uint32_t> big(v6::copy_dwords(dst, src, 0x40000000ull), 0);
  REQUIRE(v6::copy(big, dst, src, 0x40000000ull) == 14u);
  CHECK(big[1] == 0x3FFFFEFFu);
  CHECK(big[8] == 0xFFu);  // 0x40000000 - 0x3FFFFF00 = 0x100 bytes
  CHECK(big[12] == 0x76540000u + 0x3FFFFF00u);
}

TEST_CASE("copy plan: dword-aligned copies keep a ragged tail in its own packet (Mesa dword copy mode)") {
  using v6 = qs::encoder_v6;
  const auto plan = [](gpu_va d, gpu_va s, std::uint64_t n) {
    return qs::copy_plan(d, s, n, v6::max_copy_bytes) | ranges::to<std::vector>();
  };
  // Aligned addresses, 0x1003 bytes → 0x1000 + 3.
  CHECK(plan(dst, src, 0x1003) == std::vector<qs::copy_chunk>{{dst, src, 0x1000},
                                                             {gpu_va{dst.value + 0x1000}, gpu_va{src.value + 0x1000}, 3}});
  // Up to 4 bytes, aligned length, or an unaligned address: a single packet.
  CHECK(plan(dst, src, 3).size() == 1u);
  CHECK(plan(dst, src, 4).size() == 1u);
  CHECK(plan(dst, src, 0x1000).size() == 1u);
  CHECK(plan(gpu_va{dst.value + 1}, src, 0x1003).size() == 1u);
  CHECK(plan(dst, gpu_va{src.value + 2}, 0x1003).size() == 1u);
  // Over the limit with a ragged tail: max, then the aligned rest, then the tail.
  const auto p = plan(dst, src, 0x3FFFFF00ull + 0x105);
  REQUIRE(p.size() == 3u);
  CHECK(p[0].bytes == 0x3FFFFF00u);
  CHECK(p[1].bytes == 0x104u);
  CHECK(p[2].bytes == 1u);
  CHECK(p[2].dst.value == dst.value + 0x3FFFFF00ull + 0x104);
  std::vector<std::uint32_t> out(v6::copy_dwords(dst, src, 0x1003));
  REQUIRE(v6::copy(out, dst, src, 0x1003) == 14u);
  CHECK(out[1] == 0xFFFu);
  CHECK(out[8] == 2u);
  CHECK(out[12] == 0x76541000u);
}

TEST_CASE("fill splitter: Mesa's per-engine fill limits") {
  using v4 = qs::encoder_v4;
  static_assert(v4::max_fill_bytes == 0x3FFFFCu && qs::encoder_v6::max_fill_bytes == 0x3FFFFFFCu);
  CHECK(v4::fill_dwords(0x3FFFFC) == 5u);
  CHECK(v4::fill_dwords(0x400000) == 10u);
  std::vector<std::uint32_t> out(v4::fill_dwords(0x400000), 0);
  REQUIRE(v4::fill(out, gpu_va{0x10000}, 0xFFFFFFFFu, 0x400000) == 10u);
  CHECK(out[0] == 0x8000000Bu);
  CHECK(out[4] == 0x3FFFFBu);
  CHECK(out[6] == 0x10000u + 0x3FFFFCu);
  CHECK(out[9] == 3u);  // 4 bytes left
  // v6 writes a 30-bit count.
  CHECK(emit<qs::encoder_v6, 8>([](auto o) { return qs::encoder_v6::constant_fill(o, dst, 0u, 0x3FFFFFFCu); })[4] ==
        0x3FFFFFFBu);
}

TEST_CASE("engine per target (§3.3: SDMA 4.x on gfx9, 5.0 on gfx10.1, 5.2 on gfx10.3, 6 on gfx11, 7 on gfx12)") {
  namespace arch = aqueduct::arch;
  static_assert(qs::encoder_for<arch::gfx9_target>::engine == pkt::engine::v4_0);
  static_assert(qs::encoder_for<arch::gfx94x_target>::engine == pkt::engine::v4_0);
  static_assert(qs::encoder_for<arch::gfx10_1_target>::engine == pkt::engine::v5_0);
  static_assert(qs::encoder_for<arch::gfx10_3_target>::engine == pkt::engine::v5_2);
  static_assert(qs::encoder_for<arch::gfx11_priv_target>::engine == pkt::engine::v6_0);
  static_assert(qs::encoder_for<arch::gfx12_target>::engine == pkt::engine::v7_0);
  CHECK(qs::encoder_for<arch::gfx10_1_target>::max_copy_bytes == 0x3FFF00u);
  CHECK(qs::encoder_for<arch::gfx10_3_target>::max_copy_bytes == 0x3FFFFF00u);
}

}  // namespace AQ_UNITY_ID
