// queue/aql_queue.hpp batches (issue 11): `submit_batch(n, fill)`, which builds each packet in its
// slot, and `try_submit_batch(span)` of prebuilt packets. Every
// slot is compared byte for byte with a packet filled in through Debian's hsa.h types and macros
// (never with aqueduct's own encoders); the publication order (entry 0's header last, one
// doorbell of the last index) is the HSA rule the queue documents (spec/packets.md §5).
#include <aqueduct/queue/aql_packets.hpp>
#include <aqueduct/queue/aql_queue.hpp>

#include <hsa/hsa.h>

#include <doctest/doctest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>
#include <vector>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

namespace q = aqueduct::ring;
namespace abi = aqueduct::abi;
using aqueduct::gpu_va;

namespace {

struct counting_doorbell {
  std::uint64_t* word;
  int* rings;
  void ring(std::uint64_t v) noexcept {
    *word = v;
    ++*rings;
  }
};

struct rig {
  explicit rig(std::uint32_t n) : size(n), ring(static_cast<abi::aql_slot*>(std::aligned_alloc(64, 64 * n))) {
    std::memset(ring, 0xA5, 64 * n);
  }
  ~rig() { std::free(ring); }
  q::aql_queue_memory mem() { return {&desc, ring, size}; }
  abi::amd_queue desc{};
  std::uint32_t size;
  abi::aql_slot* ring;
  std::uint64_t doorbell = ~0ull;
  int rings = 0;
};

// Packet i of a batch, as an hsa.h user fills it: a 1-D dispatch of 256 x (i + 1) work-items in
// groups of 64, system-scope fences, kernarg and completion signal per packet.
hsa_kernel_dispatch_packet_t hsa_dispatch(std::uint32_t i) {
  hsa_kernel_dispatch_packet_t h{};
  h.header = static_cast<std::uint16_t>((HSA_PACKET_TYPE_KERNEL_DISPATCH << HSA_PACKET_HEADER_TYPE) |
                                        (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE) |
                                        (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE));
  h.setup = 1 << HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS;
  h.workgroup_size_x = 64;
  h.workgroup_size_y = 1;
  h.workgroup_size_z = 1;
  h.grid_size_x = 256 * (i + 1);
  h.grid_size_y = 1;
  h.grid_size_z = 1;
  h.kernel_object = 0x7F0000001000;
  h.kernarg_address = reinterpret_cast<void*>(0x7F0000002000 + 0x100 * std::uint64_t{i});
  h.completion_signal.handle = 0x7F0000003000 + 64 * std::uint64_t{i};
  return h;
}
q::kernel_dispatch described(std::uint32_t i) {
  return {.kernel_object = gpu_va(0x7F0000001000),
          .kernarg_address = gpu_va(0x7F0000002000 + 0x100 * std::uint64_t{i}),
          .grid = {256 * (i + 1), 1, 1},
          .workgroup = {64, 1, 1},
          .segments = {},
          .completion_signal = 0x7F0000003000 + 64 * std::uint64_t{i}};
}
std::uint32_t header_word(const abi::aql_slot& s) {
  std::uint32_t w;
  std::memcpy(&w, s.bytes, 4);
  return w;
}

}  // namespace

TEST_CASE("submit_batch(n, fill): each packet built in its slot, in order, entry 0's header last, one doorbell") {
  rig m(16);
  q::aql_queue_sp<counting_doorbell> queue(m.mem(), counting_doorbell{&m.doorbell, &m.rings});
  CHECK(queue.submit(q::make_packet(described(0))) == 0);
  std::vector<std::uint32_t> order;
  const auto first = queue.try_submit_batch(8, [&](std::uint32_t i) {
    // While any entry is being made, entry 0's slot (index 1) is still INVALID: the processor
    // cannot reach the batch before it is complete.
    CHECK(header_word(m.ring[1]) == HSA_PACKET_TYPE_INVALID);
    order.push_back(i);
    return q::make_packet(described(i));
  });
  REQUIRE(first.has_value());
  CHECK(*first == 1);
  CHECK(order == std::vector<std::uint32_t>{0, 1, 2, 3, 4, 5, 6, 7});
  for (std::uint32_t i = 0; i < 8; ++i) {
    const auto h = hsa_dispatch(i);
    CHECK_MESSAGE(std::memcmp(&m.ring[1 + i], &h, 64) == 0, "slot ", 1 + i);
  }
  CHECK(m.desc.write_dispatch_id == 9);
  CHECK(m.doorbell == 8);  // the last index of the batch
  CHECK(m.rings == 2);
  // The non-try form, wrapping the ring's end (indexes 9..16 -> slots 9..15, 0), once the
  // processor (played by the test) launched the first batch.
  m.desc.read_dispatch_id = 9;
  CHECK(queue.submit_batch(8, [](std::uint32_t i) { return q::make_packet(described(i)); }) == 9);
  const auto h7 = hsa_dispatch(7);
  CHECK(std::memcmp(&m.ring[0], &h7, 64) == 0);
  CHECK(m.doorbell == 16);
}

TEST_CASE("submit_batch(n, fill) on a full ring: queue_full, fill never called, nothing written") {
  rig m(8);
  q::aql_queue_sp<counting_doorbell> queue(m.mem(), counting_doorbell{&m.doorbell, &m.rings});
  for (std::uint32_t i = 0; i < 6; ++i) queue.submit(q::make_packet(described(i)));
  std::vector<unsigned char> before(reinterpret_cast<unsigned char*>(m.ring), reinterpret_cast<unsigned char*>(m.ring) + 64 * 8);
  int calls = 0;
  const auto r = queue.try_submit_batch(3, [&](std::uint32_t i) {
    ++calls;
    return q::make_packet(described(i));
  });
  REQUIRE_FALSE(r.has_value());
  CHECK(r.get_failure() == aqueduct::errc::queue_full);
  CHECK(calls == 0);
  CHECK(std::memcmp(before.data(), m.ring, 64 * 8) == 0);
  CHECK(m.desc.write_dispatch_id == 6);
  CHECK(m.rings == 6);
  // Two fit.
  CHECK(queue.try_submit_batch(2, [&](std::uint32_t i) { return q::make_packet(described(i)); }).value() == 6);
  CHECK(m.doorbell == 7);
}

TEST_CASE("submit_batch(n, fill) on the multi-producer queue: same bytes, same order") {
  rig m(16);
  q::aql_queue_mp<counting_doorbell> queue(m.mem(), counting_doorbell{&m.doorbell, &m.rings});
  CHECK(queue.submit_batch(5, [](std::uint32_t i) { return q::make_packet(described(i)); }) == 0);
  for (std::uint32_t i = 0; i < 5; ++i) {
    const auto h = hsa_dispatch(i);
    CHECK(std::memcmp(&m.ring[i], &h, 64) == 0);
  }
  CHECK(m.doorbell == 4);
  CHECK(m.rings == 1);
}

TEST_CASE("a prebuilt batch, wrapping the ring: every byte of every slot is the hsa.h packet") {
  rig m(16);
  q::aql_queue_sp<counting_doorbell> queue(m.mem(), counting_doorbell{&m.doorbell, &m.rings});
  std::vector<abi::kernel_dispatch_packet> batch;
  for (std::uint32_t i = 0; i < 12; ++i) batch.push_back(q::make_packet(described(i)));
  queue.submit(q::make_packet(described(0)));
  queue.submit(q::make_packet(described(0)));
  // Indexes 2..13; then 12 more wrap: 14, 15, 0..9 (the consumer is played by the test).
  CHECK(queue.submit_batch(std::span<const abi::kernel_dispatch_packet>(batch)) == 2);
  m.desc.read_dispatch_id = 14;
  CHECK(queue.submit_batch(std::span<const abi::kernel_dispatch_packet>(batch)) == 14);
  for (std::uint32_t i = 0; i < 12; ++i) {
    const auto h = hsa_dispatch(i);
    CHECK_MESSAGE(std::memcmp(&m.ring[(14 + i) % 16], &h, 64) == 0, "packet ", i);
  }
  CHECK(m.doorbell == 25);
  CHECK(m.rings == 4);
}

}  // namespace AQ_UNITY_ID
