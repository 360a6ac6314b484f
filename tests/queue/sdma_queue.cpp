// queue/sdma_queue.hpp without an engine: the test plays the engine by moving the read pointer.
// Expected values from spec/packets.md §3 and spec/kfd.md §3.3: the doorbell and the write
// pointer carry BYTES; a FENCE is 4 dwords with header 0x00030005 on SDMA 6 (tinygrad's signal,
// §3.4) and 0x00000005 on SDMA 4; COPY_LINEAR is 7 dwords (8 on SDMA 7) with count = bytes − 1;
// Mesa's per-packet maxima 0x3FFF00 (22-bit engines) and 0x3FFFFF00 (§3.3); a zero dword is a
// 1-dword NOP (§3.1: NOP count [29:16] = 0). The ring wrap rule (no packet straddles the end,
// the rest is zero-filled) is tinygrad's (§3.4).
#include <aqueduct/queue/sdma_queue.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

namespace q = aqueduct::ring;
using aqueduct::byte_count;
using aqueduct::errc;
using aqueduct::gpu_va;
using aqueduct::abi::sdma::engine;

namespace {

struct counting_doorbell {
  std::uint64_t* word;
  int* rings;
  void ring(std::uint64_t v) noexcept {
    *word = v;
    ++*rings;
  }
};

template <engine E>
struct fixture {
  explicit fixture(std::uint64_t ring_bytes = 4096) : ring(ring_bytes / 4, 0xEEEEEEEEu) {
    queue = std::make_unique<q::sdma_queue<E, counting_doorbell>>(
        q::sdma_queue_memory{ring.data(), ring_bytes, &rptr, &wptr}, counting_doorbell{&doorbell, &rings});
  }
  std::vector<std::uint32_t> ring;
  std::uint64_t rptr = 77, wptr = 99, doorbell = 0;  // garbage until the queue initializes them
  int rings = 0;
  std::unique_ptr<q::sdma_queue<E, counting_doorbell>> queue;
};

}  // namespace

TEST_CASE("initialization zeroes the ring (NOPs) and both pointers") {
  fixture<engine::v6_0> f;
  CHECK(f.rptr == 0);
  CHECK(f.wptr == 0);
  for (std::uint32_t d : f.ring) REQUIRE(d == 0);
}

TEST_CASE("commit publishes the write pointer and the doorbell in bytes") {
  fixture<engine::v6_0> f;
  REQUIRE(f.queue->try_fence(gpu_va(0x1000), 42));
  CHECK(f.wptr == 16);
  CHECK(f.doorbell == 16);
  CHECK(f.rings == 1);
  CHECK(f.ring[0] == 0x00030005u);
  CHECK(f.ring[1] == 0x1000u);
  CHECK(f.ring[2] == 0u);
  CHECK(f.ring[3] == 42u);
  // SDMA 4 has no MTYPE field: tinygrad's gfx9 signal header.
  fixture<engine::v4_0> g;
  REQUIRE(g.queue->try_fence(gpu_va(0x2000), 1));
  CHECK(g.ring[0] == 0x00000005u);
}

TEST_CASE("unpublished work stays invisible; an abandoned reservation is rolled back") {
  fixture<engine::v6_0> f;
  {
    auto r = f.queue->reserve(4);
    r.dwords()[0] = 0xBAD;
    CHECK(f.wptr == 0);
    CHECK(r.offset() == 0);
  }  // abandoned
  CHECK(f.queue->claimed_offset() == 0);
  REQUIRE(f.queue->try_trap(5, aqueduct::sync::infinite, false));  // committed, not published
  CHECK(f.wptr == 0);
  CHECK(f.rings == 0);
  f.queue->flush();
  CHECK(f.wptr == 8);
  CHECK(f.doorbell == 8);
  CHECK(f.ring[0] == 0x00000006u);  // TRAP header (op 6)
  CHECK(f.ring[1] == 5u);
  f.queue->flush();  // nothing new: no second doorbell
  CHECK(f.rings == 1);
}

TEST_CASE("a packet that would straddle the ring end starts at 0 after zero (NOP) padding") {
  fixture<engine::v6_0> f(1024);
  // 63 FENCEs = 1008 bytes; the next COPY_LINEAR (28 bytes) does not fit in the last 16.
  for (int i = 0; i < 63; ++i) REQUIRE(f.queue->try_fence(gpu_va(0x1000), static_cast<std::uint32_t>(i)));
  CHECK(f.wptr == 1008);
  f.rptr = 1008;  // the engine consumed everything
  REQUIRE(f.queue->try_copy(gpu_va(0x20000), gpu_va(0x10000), 100));
  CHECK(f.wptr == 1024 + 28);
  CHECK(f.doorbell == 1024 + 28);
  for (int i = 252; i < 256; ++i) CHECK(f.ring[i] == 0u);  // padding: 1-dword NOPs
  CHECK(f.ring[0] == 0x00000001u);
  CHECK(f.ring[1] == 99u);
  CHECK(f.ring[3] == 0x10000u);
  CHECK(f.ring[5] == 0x20000u);
}

TEST_CASE("a full ring is detected before writing: pending work is published, then queue_full") {
  fixture<engine::v6_0> f(1024);
  for (int i = 0; i < 64; ++i) REQUIRE(f.queue->try_fence(gpu_va(0x1000), 1, aqueduct::sync::infinite, false));
  CHECK(f.wptr == 0);
  auto r = f.queue->try_reserve(4);
  REQUIRE_FALSE(r);
  CHECK(r.get_failure() == errc::queue_full);
  CHECK(std::string(r.detail()).find("SDMA queue") != std::string::npos);
  CHECK(f.wptr == 1024);  // published so the engine can make room
  CHECK(f.ring[0] == 0x00030005u);  // nothing was overwritten
  f.rptr = 16;  // one packet consumed
  REQUIRE(f.queue->try_fence(gpu_va(0x3000), 9));
  CHECK(f.ring[0] == 0x00030005u);
  CHECK(f.ring[1] == 0x3000u);
  CHECK(f.wptr == 1040);
}

TEST_CASE("copies split at the engine's per-packet maximum, with one doorbell") {
  SUBCASE("SDMA 4: 0x3FFF00 per packet, 7 dwords") {
    fixture<engine::v4_0> f;
    const std::uint64_t n = 2 * 0x3FFF00ull + 5;
    REQUIRE(f.queue->try_copy(gpu_va(0x100000001ull), gpu_va(0x200000003ull), n));
    CHECK(f.rings == 1);
    CHECK(f.wptr == 3 * 28);
    CHECK(f.ring[1] == 0x3FFEFFu);
    CHECK(f.ring[8] == 0x3FFEFFu);
    CHECK(f.ring[15] == 4u);
    CHECK(f.ring[3] == 0x00000003u);   // src lo
    CHECK(f.ring[4] == 0x2u);          // src hi
    CHECK(f.ring[10] == 0x3FFF03u);    // second src lo: + 0x3FFF00
    CHECK(f.ring[19] == 0x7FFE01u);    // third dst lo: 1 + 2 × 0x3FFF00
  }
  SUBCASE("SDMA 7: 0x3FFFFF00 per packet, 8 dwords (trailing DCC dword 0)") {
    fixture<engine::v7_0> f;
    REQUIRE(f.queue->try_copy(gpu_va(0x1001), gpu_va(0x2001), 0x3FFFFF00ull + 1));
    CHECK(f.wptr == 2 * 32);
    CHECK(f.ring[1] == 0x3FFFFEFFu);
    CHECK(f.ring[7] == 0u);
    CHECK(f.ring[8] == 0x00000001u);
    CHECK(f.ring[9] == 0u);  // 1 byte
  }
  SUBCASE("SDMA 6, dword-aligned ragged copy: the 1-3 tail bytes get their own packet (Mesa)") {
    fixture<engine::v6_0> f;
    REQUIRE(f.queue->try_copy(gpu_va(0x1000), gpu_va(0x2000), 103));
    CHECK(f.wptr == 2 * 28);
    CHECK(f.ring[1] == 99u);  // 100 bytes
    CHECK(f.ring[8] == 2u);   // 3 bytes
    CHECK(f.ring[10] == 0x2064u);
  }
}

TEST_CASE("tinygrad's wait and timestamp dwords (spec §3.4)") {
  fixture<engine::v6_0> f;
  REQUIRE(f.queue->try_wait(gpu_va(0x12345678), 7));
  REQUIRE(f.queue->try_timestamp(gpu_va(0x1000)));
  const std::vector<std::uint32_t> expect{0xD0000008u, 0x12345678u, 0u, 7u, 0xFFFFFFFFu, 0x0FFF0004u,
                                          0x0000020Du, 0x1000u, 0u};
  CHECK(std::vector<std::uint32_t>(f.ring.begin(), f.ring.begin() + 9) == expect);
}

// try_copy's direct path (issue 11): the packet goes straight into the ring when it fits before
// the end and the ring has room; every other case must behave as the reservation path does.
TEST_CASE("a single-packet copy: COPY_LINEAR dwords, write pointer and doorbell; publish=false defers both") {
  fixture<engine::v6_0> f(1024);
  REQUIRE(f.queue->try_copy(gpu_va(0x7F0000200000), gpu_va(0x7F0000100000), 4096));
  // §3.3 COPY_LINEAR: header op 1 / sub-op 0, count = bytes - 1, parameter 0, src, dst.
  CHECK(std::vector<std::uint32_t>(f.ring.begin(), f.ring.begin() + 8) ==
        std::vector<std::uint32_t>{0x00000001u, 4095u, 0u, 0x00100000u, 0x7F00u, 0x00200000u, 0x7F00u, 0u});
  CHECK(f.wptr == 28);
  CHECK(f.doorbell == 28);
  CHECK(f.rings == 1);
  REQUIRE(f.queue->try_copy(gpu_va(0x3000), gpu_va(0x4000), 1, aqueduct::sync::infinite, false));
  CHECK(f.wptr == 28);  // not published yet
  CHECK(f.rings == 1);
  CHECK(f.ring[7] == 0x00000001u);
  CHECK(f.ring[8] == 0u);  // 1 byte: count 0
  REQUIRE(f.queue->try_copy(gpu_va(0x5000), gpu_va(0x6000), 8));
  CHECK(f.wptr == 84);  // both published by the third copy's doorbell
  CHECK(f.doorbell == 84);
  CHECK(f.rings == 2);
  // SDMA 7: 8 dwords, the DCC dword 0.
  fixture<engine::v7_0> g(1024);
  REQUIRE(g.queue->try_copy(gpu_va(0x2000), gpu_va(0x1000), 64));
  CHECK(std::vector<std::uint32_t>(g.ring.begin(), g.ring.begin() + 8) ==
        std::vector<std::uint32_t>{0x00000001u, 63u, 0u, 0x1000u, 0u, 0x2000u, 0u, 0u});
  CHECK(g.wptr == 32);
}

TEST_CASE("a copy that ends exactly at the ring's end needs no padding; a full ring fails before writing") {
  fixture<engine::v6_0> f(1024);
  for (int i = 0; i < 8; ++i) REQUIRE(f.queue->try_fence(gpu_va(0x1000), 1));                    // 128 bytes
  for (int i = 0; i < 31; ++i) REQUIRE(f.queue->try_copy(gpu_va(0x2000), gpu_va(0x3000), 256));  // 868 bytes
  CHECK(f.wptr == 996);  // 28 bytes left: the next copy fits exactly
  f.rptr = 996;
  REQUIRE(f.queue->try_copy(gpu_va(0x7000), gpu_va(0x6000), 512));
  CHECK(f.wptr == 1024);  // no padding
  CHECK(std::vector<std::uint32_t>(f.ring.begin() + 249, f.ring.end()) ==
        std::vector<std::uint32_t>{0x00000001u, 511u, 0u, 0x6000u, 0u, 0x7000u, 0u});
  // No consumer from here: 996 bytes free = 35 copies, then 16 bytes: the next one is refused.
  for (int i = 0; i < 35; ++i) REQUIRE(f.queue->try_copy(gpu_va(0x2000), gpu_va(0x3000), 4, aqueduct::sync::nanoseconds::zero()));
  CHECK(f.wptr == 2004);
  const auto before = f.ring;
  const int rings = f.rings;
  auto r = f.queue->try_copy(gpu_va(0x2000), gpu_va(0x3000), 4, aqueduct::sync::nanoseconds::zero());
  REQUIRE_FALSE(r);
  CHECK(r.get_failure() == errc::queue_full);
  CHECK_MESSAGE(std::string(r.detail()).find("rptr 996, wptr 2004") != std::string::npos, std::string(r.detail()));
  CHECK(f.ring == before);
  CHECK(f.rings == rings);
  CHECK(f.wptr == 2004);
  CHECK(f.queue->claimed_offset() == 2004);
  f.rptr = 1024;  // the engine consumed one copy: room again
  REQUIRE(f.queue->try_copy(gpu_va(0x2000), gpu_va(0x3000), 4, aqueduct::sync::nanoseconds::zero()));
  CHECK(f.wptr == 2032);
}

}  // namespace AQ_UNITY_ID
