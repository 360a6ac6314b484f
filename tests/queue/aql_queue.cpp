// Tests for queue/aql_queue.hpp (+ ring.hpp, doorbell.hpp) against the real emulated AQL engine
// (tests/support/aql_consumer.hpp). Expected values: DESIGN.md §1 requirements 1–3 and 9, the HSA doorbell
// convention (the doorbell holds the index of the last published packet), spec/packets.md §5.
#include "mp_stress.hpp"

#include <aqueduct/queue/aql_queue.hpp>
#include <aqueduct/sync/signal.hpp>

#include <doctest/doctest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

namespace q = aqueduct::ring;
namespace abi = aqueduct::abi;
namespace asy = aqueduct::sync;
using aqueduct::gpu_va;
using aqueduct::errc;
using aq_test::aql_consumer;
using aqueduct_test::queue_memory;
using aqueduct_test::dispatch;
using namespace std::chrono_literals;

namespace {

std::uint32_t header_word(const abi::aql_slot& s) {
  std::uint32_t w;
  std::memcpy(&w, s.bytes, 4);
  return w;
}

}  // namespace

TEST_CASE("initialization invalidates every header and fills the hsa_queue fields") {
  queue_memory m(8);
  q::aql_queue_sp<> queue(m.mem(), q::doorbell_ref(&m.doorbell));
  for (std::uint32_t i = 0; i < 8; ++i) CHECK(header_word(m.ring[i]) == 1);  // HSA_PACKET_TYPE_INVALID
  CHECK(m.desc.hsa.type == 1);  // HSA_QUEUE_TYPE_SINGLE
  CHECK(m.desc.hsa.size == 8);
  CHECK(m.desc.hsa.base_address == reinterpret_cast<std::uintptr_t>(m.ring));
  q::aql_queue_mp<> mq(m.mem(), q::doorbell_ref(&m.doorbell));
  CHECK(m.desc.hsa.type == 0);  // HSA_QUEUE_TYPE_MULTIPLE
}

TEST_CASE("single packet: body, header, write index and doorbell") {
  queue_memory m(8);
  q::aql_queue_sp<> queue(m.mem(), q::doorbell_ref(&m.doorbell));
  const auto p = dispatch(0, 77, 0x1000);
  CHECK(queue.submit(p) == 0);
  CHECK(std::memcmp(&m.ring[0], &p, 64) == 0);  // whole packet, header included
  CHECK(m.desc.write_dispatch_id == 1);
  CHECK(m.doorbell == 0);  // index of the last published packet
  CHECK(queue.submit(p) == 1);
  CHECK(m.desc.write_dispatch_id == 2);
  CHECK(m.doorbell == 1);
}

TEST_CASE("single producer: submit and submit_batch while an earlier reservation is open; the write index never goes back") {
  // submit/submit_batch store the write index as their claim's end without reading it back
  // (ring_reserver::commit_newest); the open reservation's later publish keeps the larger value.
  queue_memory m(8);
  q::aql_queue_sp<> queue(m.mem(), q::doorbell_ref(&m.doorbell));
  auto open = queue.reserve(2);  // slots 0, 1
  CHECK(queue.submit(dispatch(0, 2)) == 2);
  CHECK(m.desc.write_dispatch_id == 3);
  CHECK(m.doorbell == 2);
  const std::array<abi::kernel_dispatch_packet, 2> two{dispatch(0, 3), dispatch(0, 4)};
  CHECK(queue.submit_batch(std::span<const abi::kernel_dispatch_packet>(two)) == 3);
  CHECK(m.desc.write_dispatch_id == 5);
  CHECK(m.doorbell == 4);
  CHECK(header_word(m.ring[0]) == 1);  // still INVALID: the processor waits at slot 0
  open.write(0, dispatch(0, 0));
  open.write(1, dispatch(0, 1));
  open.publish();
  CHECK(m.desc.write_dispatch_id == 5);  // not 2
  CHECK(m.doorbell == 4);                // single producer: the last index of the published end
  aql_consumer proc(m.desc, m.ring, 8);
  proc.start();
  CHECK(proc.wait_consumed(5));
  proc.stop();
  CHECK(proc.errors() == 0);
  CHECK(proc.dispatches(0) == 5);  // packets 0..4 of producer 0, consumed in index order
}

TEST_CASE("a full ring is detected before writing; the producer waits and then proceeds") {
  queue_memory m(4);
  q::aql_queue_sp<> queue(m.mem(), q::doorbell_ref(&m.doorbell));
  for (std::uint64_t i = 0; i < 4; ++i) CHECK(queue.try_submit(dispatch(0, i)).has_value());
  std::vector<unsigned char> before(reinterpret_cast<unsigned char*>(m.ring), reinterpret_cast<unsigned char*>(m.ring) + 256);

  auto r = queue.try_submit(dispatch(0, 4));
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error() == errc::queue_full);
  const std::string d(r.detail());
  CHECK(d.find("read_dispatch_id 0, write_dispatch_id 4") != std::string::npos);
  CHECK(d.find("packet 0 (slot 0): KERNEL_DISPATCH") != std::string::npos);
  CHECK(d.find("grid=64x1x1 workgroup=64x1x1") != std::string::npos);
  MESSAGE(d);
  // Nothing was written: the ring is byte-identical.
  CHECK(std::memcmp(before.data(), m.ring, 256) == 0);
  CHECK(queue.try_submit(dispatch(0, 4), 20ms).error() == errc::queue_full);

  // Start the processor late: the blocked producer proceeds as slots free up.
  aql_consumer proc(m.desc, m.ring, 4);
  std::thread late([&] {
    std::this_thread::sleep_for(50ms);
    proc.start();
  });
  const auto t0 = std::chrono::steady_clock::now();
  for (std::uint64_t i = 4; i < 100; ++i) queue.submit(dispatch(0, i), 5s);
  CHECK(std::chrono::steady_clock::now() - t0 >= 40ms);  // it did block
  late.join();
  CHECK(proc.wait_consumed(100));
  proc.stop();
  CHECK(proc.errors() == 0);
  CHECK(proc.dispatches(0) == 100);  // 0..99 in order: nothing overwritten before consumption
  CHECK(m.desc.read_dispatch_id == 100);
}

// Issue 13 (ThreadSanitizer, runtime.stress): a multi-producer ring's head may be claimed and its
// body half-written while the header is still INVALID. The full-ring description must say so and
// not read (or decode) that body: before the fix it copied the slot and printed it as an
// "INVALID" packet with the producer's half-written fields — a data race with write_body.
// Control: once the head is published, the same failure decodes its header (a multi-producer
// ring's body may be rewritten by another producer as soon as the head is launched: not read).
TEST_CASE("a full ring whose head is claimed but unpublished: described as not yet published, body not read") {
  queue_memory m(4);
  q::aql_queue_mp<> queue(m.mem(), q::doorbell_ref(&m.doorbell));
  auto head = queue.try_reserve(1);
  REQUIRE(head.has_value());
  head->write(0, dispatch(7, 0));  // body stored, header held back until publish()
  for (std::uint64_t i = 1; i < 4; ++i) REQUIRE(queue.try_submit(dispatch(0, i)).has_value());
  auto r = queue.try_submit(dispatch(0, 4));
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error() == errc::queue_full);
  std::string d(r.detail());
  MESSAGE(d);
  CHECK(d.find("packet 0 (slot 0): not yet published") != std::string::npos);
  CHECK(d.find("grid=") == std::string::npos);  // the body was not decoded
  head->publish();
  r = queue.try_submit(dispatch(0, 4));
  REQUIRE_FALSE(r.has_value());
  d = std::string(r.detail());
  CHECK(d.find("packet 0 (slot 0): KERNEL_DISPATCH") != std::string::npos);  // control
  CHECK(d.find("not yet published") == std::string::npos);
  CHECK(d.find("dims=1 (body not read: another producer may be reusing the slot)") != std::string::npos);
}

// The ring's wait for room is the one wait loop (sync::wait_until): it asks the ring memory's
// stop_check, and a consumer that stopped ends the wait with its failure (the ring described)
// instead of the wait running to its timeout. Control: without a stop_check the same wait runs
// its whole timeout and reports queue_full.
TEST_CASE("a wait for room reports a stopped consumer at once, with the ring described") {
  struct consumer_state {
    std::atomic<bool> dead{false};
    std::optional<aqueduct::failure> stopped() const {
      if (!dead.load(std::memory_order_acquire)) return std::nullopt;
      return aqueduct::failure(errc::device_fault, "test consumer: memory fault at 0x10", 14);
    }
  } consumer;
  queue_memory m(4);
  auto mem = m.mem();
  mem.stopped = asy::stop_check(consumer);
  q::aql_queue_sp<> queue(mem, q::doorbell_ref(&m.doorbell));
  for (std::uint64_t i = 0; i < 4; ++i) REQUIRE(queue.try_submit(dispatch(0, i)).has_value());
  auto t0 = std::chrono::steady_clock::now();
  CHECK(queue.try_submit(dispatch(0, 4), 30ms).error() == errc::queue_full);  // control: running, just full
  CHECK(std::chrono::steady_clock::now() - t0 >= 30ms);
  std::thread killer([&] {
    std::this_thread::sleep_for(50ms);
    consumer.dead.store(true, std::memory_order_release);
  });
  t0 = std::chrono::steady_clock::now();
  auto r = queue.try_submit(dispatch(0, 4), 60s);
  const auto took = std::chrono::steady_clock::now() - t0;
  killer.join();
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error() == errc::device_fault);
  CHECK(r.get_failure().os_errno() == 14);
  const std::string d(r.detail());
  CHECK_MESSAGE(d.find("memory fault at 0x10") != std::string::npos, d);
  CHECK_MESSAGE(d.find("read_dispatch_id 0, write_dispatch_id 4") != std::string::npos, d);
  CHECK(took < 10s);  // the stop ended it, not the 60 s timeout
  CHECK(m.desc.write_dispatch_id == 4);  // nothing claimed
}

TEST_CASE("a batch writes every body, publishes headers in order and rings the doorbell once") {
  struct counting_doorbell {
    std::uint64_t* word;
    int* rings;
    void ring(std::uint64_t v) noexcept {
      ++*rings;
      asy::atomic_store(*word, v, std::memory_order_release);
    }
  };
  queue_memory m(16);
  int rings = 0;
  q::aql_queue_sp<counting_doorbell> queue(m.mem(), counting_doorbell{&m.doorbell, &rings});
  CHECK(queue.submit(dispatch(0, 0)) == 0);
  std::vector<abi::kernel_dispatch_packet> batch;
  for (std::uint64_t i = 1; i <= 8; ++i) batch.push_back(dispatch(0, i));
  CHECK(queue.try_submit_batch(std::span<const abi::kernel_dispatch_packet>(batch)).value() == 1);
  CHECK(rings == 2);
  CHECK(m.doorbell == 8);  // the LAST index of the batch, not the first
  CHECK(m.desc.write_dispatch_id == 9);
  for (std::uint32_t i = 1; i <= 8; ++i) CHECK(std::memcmp(&m.ring[i], &batch[i - 1], 64) == 0);

  aql_consumer proc(m.desc, m.ring, 16);
  proc.start();
  CHECK(proc.wait_consumed(9));
  proc.stop();
  CHECK(proc.dispatches(0) == 9);
  CHECK(proc.errors() == 0);
}

TEST_CASE("single producer: an abandoned reservation is rolled back, or turned into no-ops") {
  queue_memory m(8);
  q::aql_queue_sp<> queue(m.mem(), q::doorbell_ref(&m.doorbell));
  {
    auto r = queue.reserve(3);
    CHECK(r.index() == 0);
    r.write(0, dispatch(0, 0));
  }  // dropped: rolled back
  CHECK(m.desc.write_dispatch_id == 0);
  CHECK(header_word(m.ring[0]) == 1);
  {
    auto a = queue.reserve(1);
    auto b = queue.reserve(1);
    CHECK(a.index() == 0);
    CHECK(b.index() == 1);
    b.write(0, dispatch(0, 0));
    b.publish();
    // a is dropped with b published after it: it cannot be rolled back, so it becomes a NOP.
  }
  CHECK(m.desc.write_dispatch_id == 2);
  CHECK(m.doorbell == 1);
  CHECK(header_word(m.ring[0]) == 3);  // HSA_PACKET_TYPE_BARRIER_AND, no barrier bit, no fences
  aql_consumer proc(m.desc, m.ring, 8);
  proc.start();
  CHECK(proc.wait_consumed(2));
  proc.stop();
  CHECK(proc.nops() == 1);
  CHECK(proc.dispatches(0) == 1);
  CHECK(proc.errors() == 0);
}

TEST_CASE("multi producer: out-of-order publication is consumed in order; each producer rings its own last index") {
  queue_memory m(8);
  q::aql_queue_mp<> queue(m.mem(), q::doorbell_ref(&m.doorbell));
  aql_consumer proc(m.desc, m.ring, 8);
  proc.start();
  auto a = queue.reserve(1);
  auto b = queue.reserve(1);
  CHECK(m.desc.write_dispatch_id == 2);  // the claim advanced the shared write index
  b.write(0, dispatch(0, 1));
  b.publish();
  CHECK(m.doorbell == 1);
  std::this_thread::sleep_for(20ms);
  CHECK(proc.consumed() == 0);  // waits at a's INVALID header
  a.write(0, dispatch(0, 0));
  a.publish();
  CHECK(m.doorbell == 0);  // a's own index (the processor goes by the headers: nothing is lost)
  CHECK(proc.wait_consumed(2));
  CHECK(proc.dispatches(0) == 2);
  CHECK(proc.errors() == 0);

  // Abandon: the latest claim rolls back by CAS; an earlier one becomes a NOP.
  {
    auto c = queue.reserve(2);
    CHECK(c.index() == 2);
  }
  CHECK(m.desc.write_dispatch_id == 2);
  {
    auto c = queue.reserve(1);
    auto d = queue.reserve(1);
    d.write(0, dispatch(0, 2));
    d.publish();
  }
  CHECK(proc.wait_consumed(4));
  proc.stop();
  CHECK(proc.nops() == 1);
  CHECK(proc.dispatches(0) == 3);
  CHECK(proc.errors() == 0);
}

TEST_CASE("multi producer: 4 producers through a 16-slot ring, nothing lost, duplicated or overwritten") {
  // 200,000 packets through the emulated engine (each a no-op dispatch); 20,000 under
  // ThreadSanitizer, which is ~10-20x slower.
#if AQUEDUCT_TSAN
  aqueduct_test::run_producers(5000);
#else
  aqueduct_test::run_producers(50000);
#endif
}

TEST_CASE("barrier dependencies order the queue") {
  queue_memory m(16);
  q::aql_queue_sp<> queue(m.mem(), q::doorbell_ref(&m.doorbell));
  std::vector<abi::amd_signal> sig(4);
  for (auto& s : sig) asy::signal_ref::initialize(s, 1);
  auto h = [&](int i) { return reinterpret_cast<std::uintptr_t>(&sig[i]); };
  aql_consumer proc(m.desc, m.ring, 16);
  proc.map(sig.data(), sizeof(abi::amd_signal) * sig.size());
  proc.start();

  // barrier-AND on sig0 and sig1, completing sig2; then a dispatch.
  queue.submit(q::make_packet(q::barrier_and{.deps = q::dependencies({h(0), h(1)}), .completion_signal = h(2)}));
  queue.submit(dispatch(0, 0));
  std::this_thread::sleep_for(20ms);
  CHECK(proc.consumed() == 0);
  asy::signal_ref(&sig[0]).store(0, std::memory_order_release);
  std::this_thread::sleep_for(20ms);
  CHECK(proc.consumed() == 0);  // AND: one of two is not enough
  asy::signal_ref(&sig[1]).store(0, std::memory_order_release);
  CHECK(proc.wait_consumed(2));
  CHECK(asy::signal_ref(&sig[2]).wait_eq(0, 1s) == 0);  // barrier's completion signal decremented
  CHECK(proc.last_index_of(abi::packet_type::barrier_and) == 0);
  CHECK(proc.last_index_of(abi::packet_type::kernel_dispatch) == 1);

  // barrier-OR: either dependency releases it.
  asy::signal_ref(&sig[0]).store(1, std::memory_order_release);
  queue.submit(q::make_packet(q::barrier_or{.deps = q::dependencies({h(0), h(3)})}));
  queue.submit(dispatch(0, 1));
  std::this_thread::sleep_for(20ms);
  CHECK(proc.consumed() == 2);
  asy::signal_ref(&sig[3]).store(0, std::memory_order_release);
  CHECK(proc.wait_consumed(4));

  // AMD barrier-value: wait until (value & 0xF0) >= 0x30.
  asy::signal_ref(&sig[0]).store(0x2F, std::memory_order_release);
  queue.submit(q::make_packet(q::barrier_value{.signal = h(0), .cond = abi::signal_condition::gte, .value = 0x30, .mask = 0xF0}));
  queue.submit(dispatch(0, 2));
  std::this_thread::sleep_for(20ms);
  CHECK(proc.consumed() == 4);
  asy::signal_ref(&sig[0]).store(0x31, std::memory_order_release);
  CHECK(proc.wait_consumed(6));
  proc.stop();
  CHECK(proc.dispatches(0) == 3);
  CHECK(proc.errors() == 0);
}

TEST_CASE("a signal wait that times out describes the stalled queue") {
  queue_memory m(8);
  q::aql_queue_sp<> queue(m.mem(), q::doorbell_ref(&m.doorbell));
  abi::amd_signal dep{}, done{};
  asy::signal_ref::initialize(dep, 1);
  asy::signal_ref::initialize(done, 1);
  queue.submit(q::make_packet(q::barrier_and{.deps = q::dependencies({reinterpret_cast<std::uintptr_t>(&dep)}),
                                             .completion_signal = reinterpret_cast<std::uintptr_t>(&done)}));
  auto r = asy::signal_ref(&done).try_wait_eq(0, 10ms, asy::wait_policy::spin_then_block(), queue.diagnostics());
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error() == errc::timeout);
  const std::string d(r.detail());
  CHECK(d.find("read_dispatch_id 0, write_dispatch_id 1") != std::string::npos);
  CHECK(d.find("packet 0 (slot 0): BARRIER_AND") != std::string::npos);
  MESSAGE(d);
}

// Issue 11: a reservation holds back only entry 0's header; entries 1..n-1 are released as they
// are written. The processor consumes in index order and stops at an INVALID header (HSA), so
// nothing of the reservation may be consumed before publish().
TEST_CASE("entries 1..n-1 are released at write(), but nothing is consumed before entry 0 is published") {
  for (bool multi : {false, true}) {
    CAPTURE(multi);
    queue_memory m(16);
    aql_consumer proc(m.desc, m.ring, 16);
    auto run = [&](auto& queue) {
      proc.start();
      auto r = queue.reserve(4);
      for (std::uint32_t i = 0; i < 4; ++i) r.write(i, dispatch(0, i));
      CHECK(header_word(m.ring[0]) == 1);  // the gate: still INVALID
      for (std::uint32_t i = 1; i < 4; ++i) CHECK((header_word(m.ring[i]) & 0xff) == 2);  // KERNEL_DISPATCH
      std::this_thread::sleep_for(20ms);
      CHECK(proc.consumed() == 0);
      r.publish();
      CHECK(proc.wait_consumed(4));
      CHECK(m.doorbell == 3);
      proc.stop();
      CHECK(proc.dispatches(0) == 4);
      CHECK(proc.errors() == 0);
    };
    if (multi) {
      q::aql_queue_mp<> queue(m.mem(), q::doorbell_ref(&m.doorbell));
      run(queue);
    } else {
      q::aql_queue_sp<> queue(m.mem(), q::doorbell_ref(&m.doorbell));
      run(queue);
    }
  }
}

TEST_CASE("a written, abandoned reservation leaves no valid header behind (rollback) or only no-ops") {
  queue_memory m(8);
  q::aql_queue_sp<> queue(m.mem(), q::doorbell_ref(&m.doorbell));
  {
    auto r = queue.reserve(3);
    for (std::uint32_t i = 0; i < 3; ++i) r.write(i, dispatch(0, i));
  }  // rolled back: entries 1 and 2 had valid headers, they must be INVALID again
  CHECK(m.desc.write_dispatch_id == 0);
  for (std::uint32_t i = 0; i < 3; ++i) CHECK(header_word(m.ring[i]) == 1);
  {
    auto a = queue.reserve(3);
    for (std::uint32_t i = 0; i < 3; ++i) a.write(i, dispatch(0, i));
    auto b = queue.reserve(1);
    b.write(0, dispatch(0, 0));
    b.publish();
  }  // a cannot roll back: its three slots become no-ops, its written dispatches never run
  CHECK(m.desc.write_dispatch_id == 4);
  CHECK(m.doorbell == 3);
  for (std::uint32_t i = 0; i < 3; ++i) CHECK(header_word(m.ring[i]) == 3);  // BARRIER_AND, no fences
  aql_consumer proc(m.desc, m.ring, 8);
  proc.start();
  CHECK(proc.wait_consumed(4));
  proc.stop();
  CHECK(proc.nops() == 3);
  CHECK(proc.dispatches(0) == 1);
  CHECK(proc.errors() == 0);
}

TEST_CASE("multi producer: each producer rings the last index of its own claim, in whatever order they publish") {
  // The HSA multi-producer sequence and ROCr on gfx9+ (a release store of the caller's own last
  // index, no ordering among producers; ROCr amd_aql_queue.cpp, doorbell type 2). The packets
  // are still all consumed: the processor goes by the headers.
  queue_memory m(16);
  q::aql_queue_mp<> queue(m.mem(), q::doorbell_ref(&m.doorbell));
  aql_consumer proc(m.desc, m.ring, 16);
  proc.start();
  auto a = queue.reserve(2);  // 0..1
  auto b = queue.reserve(3);  // 2..4
  auto c = queue.reserve(1);  // 5
  c.write(0, dispatch(0, 5));  // sequence numbers in index order: the processor checks them
  c.publish();
  CHECK(m.doorbell == 5);
  b.write(0, dispatch(0, 2));
  b.write(1, dispatch(0, 3));
  b.write(2, dispatch(0, 4));
  b.publish();
  CHECK(m.doorbell == 4);
  a.write(0, dispatch(0, 0));
  a.write(1, dispatch(0, 1));
  a.publish();
  CHECK(m.doorbell == 1);
  CHECK(proc.wait_consumed(6));
  proc.stop();
  CHECK(proc.dispatches(0) == 6);
  CHECK(proc.errors() == 0);
}

}  // namespace AQ_UNITY_ID
