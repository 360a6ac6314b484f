// Shared by the AQL queue tests: queue memory as kfd/ would supply it, a sequence-numbered
// dispatch packet, and the multi-producer stress run — all consumed by the real emulated AQL
// engine (tests/support/aql_consumer.hpp).
#pragma once

#include "aql_consumer.hpp"

#include <aqueduct/queue/aql_queue.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace aqueduct_test {

namespace abi = aqueduct::abi;
namespace q = aqueduct::ring;
using aqueduct::gpu_va;
using namespace std::chrono_literals;

// Queue memory as kfd/ would supply it: a 64-aligned amd_queue and ring, and a doorbell word.
struct queue_memory {
  explicit queue_memory(std::uint32_t n) : size(n) {
    ring = static_cast<abi::aql_slot*>(std::aligned_alloc(64, sizeof(abi::aql_slot) * n));
    std::memset(ring, 0, sizeof(abi::aql_slot) * n);  // zeroed = VENDOR_SPECIFIC headers: queue must invalidate
  }
  ~queue_memory() { std::free(ring); }
  q::aql_queue_memory mem() { return {&desc, ring, size}; }
  abi::amd_queue desc{};
  abi::aql_slot* ring;
  std::uint32_t size;
  alignas(8) std::uint64_t doorbell = ~0ull;
};

// A dispatch of producer `producer`'s packet number `seq` (tests/support/aql_consumer.hpp).
inline abi::kernel_dispatch_packet dispatch(std::uint64_t producer, std::uint64_t seq, std::uint64_t completion = 0) {
  return aq_test::numbered_dispatch(producer, seq, completion);
}

inline void run_producers(std::uint64_t per_producer) {
  constexpr int producers = 4;
  queue_memory m(16);
  q::aql_queue_mp<> queue(m.mem(), q::doorbell_ref(&m.doorbell));
  aq_test::aql_consumer proc(m.desc, m.ring, 16);
  proc.start();
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int p = 0; p < producers; ++p) {
    threads.emplace_back([&, p] {
      std::uint64_t attempts = 0;
      for (std::uint64_t i = 0; i < per_producer;) {
        // Mix single packets and small batches.
        const std::uint32_t n = static_cast<std::uint32_t>(std::min<std::uint64_t>((i % 7 == 0) ? 3 : 1, per_producer - i));
        auto r = queue.try_reserve(n, 10s);
        if (!r) {
          failures.fetch_add(1);
          return;
        }
        for (std::uint32_t k = 0; k < n; ++k) r->write(k, dispatch(p, i + k));
        if (++attempts % 97 == 0) continue;  // abandoned after writing: rolled back or NOP-filled
        r->publish();
        i += n;
      }
    });
  }
  for (auto& t : threads) t.join();
  const std::uint64_t dispatched = per_producer * producers;
  // Every claimed index is eventually published: dispatches plus the NOPs of abandoned claims
  // that could not be rolled back. Wait until the processor reaches the write index.
  const std::uint64_t claimed = m.desc.write_dispatch_id;
  CHECK(proc.wait_consumed(claimed));
  proc.stop();
  CHECK(failures.load() == 0);
  CHECK(proc.errors() == 0);
  for (int p = 0; p < producers; ++p) CHECK(proc.dispatches(p) == per_producer);
  CHECK(proc.consumed() == dispatched + proc.nops());
  CHECK(claimed == dispatched + proc.nops());
  CHECK(m.desc.read_dispatch_id == claimed);
  // Each producer rings its own last index (HSA / ROCr gfx9+ convention), so the final value is
  // some producer's last index — not necessarily the highest — and everything was consumed.
  CHECK(m.doorbell < claimed);
  MESSAGE("abandoned claims turned into NOPs: " << proc.nops());
}

}  // namespace aqueduct_test
