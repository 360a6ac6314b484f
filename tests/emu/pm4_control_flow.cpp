// Device-evaluated control flow on the emulated MEC (docs/pm4.md "Device-evaluated control flow"):
// COND_EXEC, chained INDIRECT_BUFFERs, COND_INDIRECT_BUFFER (if-then, if-then-else, 64-bit compare),
// WAIT_REG_MEM64 and the preemptible WAIT_REG_MEM (OPERATION 3) against the non-preemptible one.
// Streams are written by ring::pm4::encoder<gfx11_target> (whose dwords tests/emu/pm4_decoder.cpp
// checks against the documented layouts); expected memory contents are the values the test writes
// with WRITE_DATA, never read back from the engine's own state.
#include "pm4_rig.hpp"
#include "waits.hpp"

#include <aqueduct/queue/pm4_encoder.hpp>

#include <doctest/doctest.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

using namespace pm4test;
using namespace std::chrono_literals;
using aq_test::load_acquire;
using aq_test::wait_word;

namespace {

using enc = aq::ring::pm4::encoder<arch::gfx11_target>;
namespace pkt = aq::abi::pm4;
using cf = pkt::wait_reg_mem::compare_function;

// A stream built packet by packet.
struct stream {
  std::vector<std::uint32_t> dw;
  template <class F>
  stream& add(std::size_t n, F&& f) {
    const std::size_t at = dw.size();
    dw.resize(at + n);
    REQUIRE(f(std::span<std::uint32_t>(dw.data() + at, n)) == n);
    return *this;
  }
  stream& write(const void* where, std::uint32_t v) {
    const std::uint32_t vals[1] = {v};
    return add(enc::write_data_dwords(1), [&](auto o) { return enc::write_data(o, aq::gpu_va(va(where)), vals); });
  }
};

// An IB in mapped memory holding `s`'s dwords.
gpu_ptr<std::uint32_t> make_ib(test_vm& vm, const stream& s) {
  auto ib = gpu_alloc<std::uint32_t>(vm, s.dw.size(), 256);
  std::memcpy(ib.get(), s.dw.data(), 4 * s.dw.size());
  return ib;
}

}  // namespace

TEST_CASE("COND_EXEC in the ring: the next EXEC_COUNT dwords run only if the condition word is not 0") {
  rig r;
  r.start();
  auto cond = gpu_alloc<std::uint32_t>(r.vm, 2, 64);
  auto out = gpu_alloc<std::uint32_t>(r.vm, 8, 64);
  cond[0] = 0;
  cond[1] = 5;
  stream s;
  s.add(enc::cond_exec_dwords, [&](auto o) { return enc::cond_exec(o, aq::gpu_va(va(&cond[0])), 2 * enc::write_data_dwords(1)); })
      .write(&out[0], 0xA)
      .write(&out[1], 0xB)
      .write(&out[2], 0xC)  // after the skipped span: runs
      .add(enc::cond_exec_dwords, [&](auto o) { return enc::cond_exec(o, aq::gpu_va(va(&cond[1])), enc::write_data_dwords(1)); })
      .write(&out[3], 0xD)
      .write(&out[4], 0xE);
  r.push(s.dw);
  REQUIRE(wait_word(&out[4], 0xEu));
  CHECK(out[0] == 0);  // discarded: *cond == 0
  CHECK(out[1] == 0);
  CHECK(out[2] == 0xC);
  CHECK(out[3] == 0xD);  // run: *cond != 0
  CHECK(r.rptr() == s.dw.size());
  CHECK_FALSE(r.proc->has_error());
}

TEST_CASE("COND_EXEC over dwords not yet published: the MEC discards them as they arrive") {
  rig r;
  r.start();
  auto cond = gpu_alloc<std::uint32_t>(r.vm, 1, 64);
  auto out = gpu_alloc<std::uint32_t>(r.vm, 4, 64);
  stream head, tail;
  head.add(enc::cond_exec_dwords, [&](auto o) { return enc::cond_exec(o, aq::gpu_va(va(&cond[0])), enc::write_data_dwords(1)); });
  tail.write(&out[0], 1).write(&out[1], 2);
  r.push(head.dw);
  std::this_thread::sleep_for(20ms);
  r.push(tail.dw);
  REQUIRE(wait_word(&out[1], 2u));
  CHECK(out[0] == 0);
}

TEST_CASE("a chained INDIRECT_BUFFER continues in the new IB; the rest of the chaining IB never runs") {
  rig r;
  r.start();
  auto out = gpu_alloc<std::uint32_t>(r.vm, 8, 64);
  stream b;
  b.write(&out[2], 0x22);
  auto ib_b = make_ib(r.vm, b);
  stream a;
  a.write(&out[0], 0x11)
      .add(enc::indirect_buffer_dwords,
           [&](auto o) { return enc::indirect_buffer(o, aq::gpu_va(va(ib_b.get())), static_cast<std::uint32_t>(b.dw.size()), 0, true); })
      .write(&out[1], 0xBAD);  // after the chain: not run
  auto ib_a = make_ib(r.vm, a);
  stream ring;
  ring.add(enc::indirect_buffer_dwords,
           [&](auto o) { return enc::indirect_buffer(o, aq::gpu_va(va(ib_a.get())), static_cast<std::uint32_t>(a.dw.size())); })
      .write(&out[3], 0x33);  // back in the ring after the chain ended
  r.push(ring.dw);
  REQUIRE(wait_word(&out[3], 0x33u));
  CHECK(out[0] == 0x11);
  CHECK(out[1] == 0);
  CHECK(out[2] == 0x22);
  CHECK_FALSE(r.proc->has_error());

  SUBCASE("a chain in the ring itself is refused: there is no IB to leave") {
    stream bad;
    bad.add(enc::indirect_buffer_dwords,
            [&](auto o) { return enc::indirect_buffer(o, aq::gpu_va(va(ib_b.get())), static_cast<std::uint32_t>(b.dw.size()), 0, true); });
    r.push(bad.dw);
    REQUIRE(aq_test::wait_error(*r.proc));
    CHECK(r.proc->error()->fault == emu::engine_fault::reserved_bits);
    CHECK(r.proc->error()->detail.find("chained") != std::string::npos);
  }
}

TEST_CASE("COND_INDIRECT_BUFFER: a 64-bit compare picks IB1 or IB2 (if-then-else), or nothing (if-then)") {
  rig r;
  r.start();
  auto word = gpu_alloc<std::uint64_t>(r.vm, 1, 64);
  auto out = gpu_alloc<std::uint32_t>(r.vm, 8, 64);
  stream then_s, else_s;
  then_s.write(&out[0], 1);
  else_s.write(&out[1], 2);
  auto ib1 = make_ib(r.vm, then_s), ib2 = make_ib(r.vm, else_s);
  const enc::ib_ref then_ib{aq::gpu_va(va(ib1.get())), static_cast<std::uint32_t>(then_s.dw.size())};
  const enc::ib_ref else_ib{aq::gpu_va(va(ib2.get())), static_cast<std::uint32_t>(else_s.dw.size())};
  const aq::gpu_va w(va(word.get()));
  auto run = [&](std::uint64_t value, auto&& packet) {
    out[0] = out[1] = 0;
    word[0] = value;
    stream s;
    s.add(enc::cond_indirect_buffer_dwords, packet).write(&out[7], static_cast<std::uint32_t>(value));
    out[7] = ~0u;
    r.push(s.dw);
    REQUIRE(wait_word(&out[7], static_cast<std::uint32_t>(value)));
  };
  // (value & 0xFFFF'FFFF'0000'0000) == 0x1'0000'0000: the high half decides, so a 32-bit compare would not.
  auto ite = [&](auto o) { return enc::cond_indirect_buffer(o, w, 0x1'0000'0000ull, 0xFFFF'FFFF'0000'0000ull, cf::equal, then_ib, else_ib); };
  run(0x1'0000'0007ull, ite);
  CHECK(out[0] == 1);
  CHECK(out[1] == 0);
  run(0x2'0000'0007ull, ite);
  CHECK(out[0] == 0);
  CHECK(out[1] == 2);
  auto it = [&](auto o) { return enc::cond_indirect_buffer(o, w, 10, ~0ull, cf::greater_equal, then_ib); };
  run(9, it);
  CHECK(out[0] == 0);
  CHECK(out[1] == 0);
  run(11, it);
  CHECK(out[0] == 1);
  CHECK_FALSE(r.proc->has_error());
}

TEST_CASE("WAIT_REG_MEM64 holds the queue until the 64-bit value compares true") {
  rig r;
  r.start();
  auto word = gpu_alloc<std::uint64_t>(r.vm, 1, 64);
  auto out = gpu_alloc<std::uint32_t>(r.vm, 2, 64);
  word[0] = 0xFFFF'FFFFull;  // its low half already >= the reference's: a 32-bit wait would pass
  stream s;
  s.add(enc::wait_reg_mem64_dwords, [&](auto o) { return enc::wait_reg_mem64(o, aq::gpu_va(va(word.get())), 0x1'0000'0000ull); })
      .write(&out[0], 7);
  r.push(s.dw);
  REQUIRE(aq_test::eventually([&] { return r.proc->unsatisfied_polls() > 1; }));  // polled twice, still held
  CHECK(load_acquire(&out[0]) == 0);
  std::atomic_ref<std::uint64_t>(word[0]).store(0x1'0000'0000ull, std::memory_order_release);
  r.proc->notify();
  REQUIRE(wait_word(&out[0], 7u));
}

// queue_wakeup::wait_for_notify: a MEC held by a WAIT_REG_MEM on its ring is not woken by the
// doorbells of the packets behind it (they cannot run before the wait is satisfied): it re-reads
// the memory on its own backoff (wait_poll 20 us doubling to 64x). Each doorbell woke it before
// (a lock and a futex wake for the producer, a context switch for the MEC): 300 doorbells made
// ~300 sleeps; now the sleeps are the backoff's, at most ~7 to reach 1.28 ms and one per 1.28 ms
// after that.
TEST_CASE("a WAIT_REG_MEM that holds the ring is not woken by the doorbells of the packets behind it") {
  rig r;
  r.start();
  auto gate = gpu_alloc<std::uint32_t>(r.vm, 1, 64);
  auto out = gpu_alloc<std::uint32_t>(r.vm, 1, 64);
  stream wait;
  wait.add(enc::wait_reg_mem_dwords, [&](auto o) { return enc::wait_reg_mem(o, aq::gpu_va(va(gate.get())), 1, ~0u, cf::equal); });
  r.push(wait.dw);
  REQUIRE(aq_test::eventually([&] { return r.proc->unsatisfied_polls() > 0; }));  // parked in the wait
  const std::uint64_t before = r.proc->sleeps();
  const auto t0 = std::chrono::steady_clock::now();
  constexpr std::uint32_t rounds = 300;
  std::uint64_t end = 0;
  for (std::uint32_t i = 1; i <= rounds; ++i) {
    stream s;
    s.write(&out[0], i);
    end = r.push(s.dw);
    std::this_thread::sleep_for(10us);
  }
  const auto elapsed_us = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0).count();
  const std::uint64_t slept = r.proc->sleeps() - before;
  CAPTURE(elapsed_us);
  CHECK(slept <= 8 + static_cast<std::uint64_t>(elapsed_us) / 1280);
  CHECK(load_acquire(&out[0]) == 0u);  // still held
  std::atomic_ref<std::uint32_t>(gate[0]).store(1, std::memory_order_release);  // no notify: it polls
  REQUIRE(r.proc->wait_consumed(end, 5000ms));
  CHECK(load_acquire(&out[0]) == rounds);
  CHECK_FALSE(r.proc->has_error());
}

TEST_CASE("a preemptible WAIT_REG_MEM (OPERATION 3) lets the queue be preempted; a plain one holds preemption off") {
  rig r;
  r.start();
  auto gate = gpu_alloc<std::uint32_t>(r.vm, 1, 64);
  auto out = gpu_alloc<std::uint32_t>(r.vm, 2, 64);
  SUBCASE("OPERATION 3: preempted while it waits, then resumed; the wait completes after") {
    stream s;
    s.add(enc::wait_reg_mem_dwords, [&](auto o) { return enc::wait_reg_mem(o, aq::gpu_va(va(gate.get())), 1, ~0u, cf::equal, 4, true); })
        .write(&out[0], 1);
    r.push(s.dw);
    REQUIRE(aq_test::eventually([&] { return r.proc->unsatisfied_polls() > 0; }));  // parked in the wait
    r.proc->request_preemption();
    CHECK(r.proc->wait_preempted(2000ms));
    r.proc->resume();
    std::atomic_ref<std::uint32_t>(gate[0]).store(1, std::memory_order_release);
    r.proc->notify();
    REQUIRE(wait_word(&out[0], 1u));
    CHECK(r.proc->preemption_stats().preemptions == 1);
  }
  SUBCASE("OPERATION 0: the preemption waits for the wait to be satisfied") {
    stream s;
    s.add(enc::wait_reg_mem_dwords, [&](auto o) { return enc::wait_reg_mem(o, aq::gpu_va(va(gate.get())), 1, ~0u, cf::equal); })
        .write(&out[0], 1);
    r.push(s.dw);
    // Once parked in the wait (a fixed sleep let a loaded machine request the preemption before
    // the MEC reached the packet, which it then rightly served at once).
    REQUIRE(aq_test::eventually([&] { return r.proc->unsatisfied_polls() > 0; }));
    r.proc->request_preemption();
    CHECK_FALSE(r.proc->wait_preempted(200ms));  // the MEC cannot take the queue off mid-wait
    std::atomic_ref<std::uint32_t>(gate[0]).store(1, std::memory_order_release);
    r.proc->notify();
    CHECK(r.proc->wait_preempted(2000ms));  // served at the first preemption point after the wait
    r.proc->resume();
    REQUIRE(wait_word(&out[0], 1u));
  }
  CHECK_FALSE(r.proc->has_error());
}

TEST_CASE("COND_EXEC and PRED_EXEC inside an IB skip within that IB only") {
  rig r;
  r.start();
  auto cond = gpu_alloc<std::uint32_t>(r.vm, 1, 64);
  auto out = gpu_alloc<std::uint32_t>(r.vm, 4, 64);
  stream ib;
  ib.add(enc::cond_exec_dwords, [&](auto o) { return enc::cond_exec(o, aq::gpu_va(va(cond.get())), enc::write_data_dwords(1)); })
      .write(&out[0], 1)
      .write(&out[1], 2);
  auto mem = make_ib(r.vm, ib);
  stream ring;
  ring.add(enc::indirect_buffer_dwords,
           [&](auto o) { return enc::indirect_buffer(o, aq::gpu_va(va(mem.get())), static_cast<std::uint32_t>(ib.dw.size())); })
      .write(&out[2], 3);
  r.push(ring.dw);
  REQUIRE(wait_word(&out[2], 3u));
  CHECK(out[0] == 0);
  CHECK(out[1] == 2);
}

}  // namespace AQ_UNITY_ID
