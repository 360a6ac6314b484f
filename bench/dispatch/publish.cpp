// bench/dispatch/publish.cpp — host-side cost of publishing AQL kernel-dispatch packets:
// aqueduct's ring::aql_queue_sp / aql_queue_mp against the same-run peers of peers.hpp, every
// variant over its own 1024-slot ring retired by the same bench::consumer thread.
//
// One iteration publishes one batch (1, 8 or 64 packets, doorbell once): reserve → write bodies
// → release-store headers → write index → doorbell. Counters: per_packet (producer CPU time per
// packet — the host cost; with threads:2, CPU of both producers over all their packets),
// wall_per_packet (one producer's wall time per packet, waits and preemption included),
// full_waits (batches that found the ring full and waited for the consumer; when near 0 the
// producer, not the consumer, was measured).
// publish_isolated/...: the same without a consumer thread — every ~1024 packets the producer
// thread retires the whole ring itself with the timer paused. No cross-core traffic and little
// dependence on scheduling: the steadiest measure of the protocols' own instruction cost.
#include "bench_dispatch.hpp"
#include "cases.hpp"
#include "consumer.hpp"
#include "peers.hpp"

#include <aqueduct/abi/amd_queue.hpp>
#include <aqueduct/queue/aql_packets.hpp>
#include <aqueduct/queue/aql_queue.hpp>

#include <benchmark/benchmark.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <span>

namespace {

namespace aq = aqueduct;
namespace q = aqueduct::ring;

constexpr std::uint32_t ring_slots = 1024;

// ---- aqueduct ------------------------------------------------------------------------------------

// Prebuilt: the packets are built once (as graph replay does) and published with
// try_submit / try_submit_batch; otherwise each is built with make_packet and written into a
// reservation, like a fresh dispatch.
template <q::producer P, bool Prebuilt = false>
struct aqueduct_fixture {
  aqueduct_fixture() : storage(ring_slots) {
    queue.emplace(q::aql_queue_memory{&desc, reinterpret_cast<aq::abi::aql_slot*>(storage.bytes), ring_slots},
                  q::doorbell_ref(&doorbell));
    consumer = std::make_unique<bench::consumer>(storage.bytes, ring_slots, &desc.read_dispatch_id);
  }
  aq::abi::amd_queue desc{};
  bench::slot_storage storage;
  alignas(64) std::uint64_t doorbell = 0;
  std::optional<q::aql_queue<P>> queue;
  std::unique_ptr<bench::consumer> consumer;

  std::array<aq::abi::kernel_dispatch_packet, 64> prebuilt{};

  std::uint64_t published_end() { return queue->write_index(); }
  void retire_all() { bench::retire_inline(storage.bytes, ring_slots, &desc.read_dispatch_id, published_end()); }
  std::uint64_t in_flight() { return queue->write_index() - queue->read_index(); }
  static q::kernel_dispatch descriptor_of(const bench::dispatch_desc& d) {
    return {.kernel_object = aq::gpu_va(d.kernel_object),
            .kernarg_address = aq::gpu_va(d.kernarg_address),
            .grid = {d.grid_x, 1, 1},
            .workgroup = {d.workgroup_x, 1, 1},
            .segments = {},
            .completion_signal = d.completion_signal};
  }

  void publish(const bench::dispatch_desc& d, std::uint32_t n, std::uint64_t& full) {
    if constexpr (Prebuilt) {
      if (prebuilt[0].kernel_object == 0) [[unlikely]] prebuilt.fill(q::make_packet(descriptor_of(d)));
      const bool room = n == 1 ? queue->try_submit(prebuilt[0]).has_value()
                               : queue->try_submit_batch(std::span<const aq::abi::kernel_dispatch_packet>(prebuilt.data(), n)).has_value();
      if (room) [[likely]] return;
      ++full;
      bench::wait_until([&] { return queue->write_index() + n - queue->read_index() <= ring_slots; });
      if (n == 1) queue->submit(prebuilt[0], std::chrono::seconds(10));
      else (void)queue->try_submit_batch(std::span<const aq::abi::kernel_dispatch_packet>(prebuilt.data(), n), std::chrono::seconds(10)).value();
      return;
    }
    const q::kernel_dispatch k = descriptor_of(d);
    auto fill = [&](auto& r) {
      for (std::uint32_t i = 0; i < n; ++i) r.write(i, q::make_packet(k));
      r.publish();
    };
    if (auto r = queue->try_reserve(n)) [[likely]] {  // zero timeout: never waits, never reads the clock
      fill(*r);
      return;
    }
    ++full;  // the ring is full: wait exactly as the peers do (bench::wait_until), then reserve
    for (;;) {
      bench::wait_until([&] { return queue->write_index() + n - queue->read_index() <= ring_slots; });
      if (auto r = queue->try_reserve(n)) {
        fill(*r);
        return;
      }
    }
  }
};

// ---- peers ---------------------------------------------------------------------------------------

template <class Peer>
struct peer_fixture {
  peer_fixture() : ring(ring_slots), peer(ring) {
    consumer = std::make_unique<bench::consumer>(ring.storage.bytes, ring_slots,
                                                 const_cast<std::uint64_t*>(&ring.queue.read_dispatch_id));
  }
  bench::hsa_ring ring;
  Peer peer;
  std::unique_ptr<bench::consumer> consumer;

  std::uint64_t published_end() { return __atomic_load_n(&ring.queue.write_dispatch_id, __ATOMIC_ACQUIRE); }
  void retire_all() {
    bench::retire_inline(ring.storage.bytes, ring_slots, const_cast<std::uint64_t*>(&ring.queue.read_dispatch_id),
                         published_end());
  }
  std::uint64_t in_flight() { return published_end() - __atomic_load_n(&ring.queue.read_dispatch_id, __ATOMIC_ACQUIRE); }
  void publish(const bench::dispatch_desc& d, std::uint32_t n, std::uint64_t& full) { peer.publish(d, n, full); }
};

// The issue-11 cases of cases.hpp (every publish style, the in-place HSA sequences) with the
// consumer and counters this file's benchmarks expect.
template <class C>
struct case_fixture : C {
  case_fixture() {
    consumer = std::make_unique<bench::consumer>(this->ring_bytes(), bench::ring_slots, this->read_index_word());
  }
  std::unique_ptr<bench::consumer> consumer;
  std::uint64_t in_flight() {
    return this->published_end() - __atomic_load_n(this->read_index_word(), __ATOMIC_ACQUIRE);
  }
};

// One fixture per variant and run: Setup (before the benchmark's threads start) builds it and
// starts its consumer thread; Teardown drains and joins. Isolated: no consumer thread.
template <class F>
F* fixture = nullptr;

template <class F, bool Consumer>
void setup(const benchmark::State&) {
  fixture<F> = new F();
  if constexpr (Consumer) fixture<F>->consumer->start();
}
template <class F, bool Consumer>
void teardown(const benchmark::State&) {
  if constexpr (Consumer) fixture<F>->consumer->stop(fixture<F>->published_end());
  delete fixture<F>;
  fixture<F> = nullptr;
}

template <class F, bool Consumer>
void bm_publish(benchmark::State& state) {
  F& f = *fixture<F>;
  const bench::dispatch_desc d{};
  const auto n = static_cast<std::uint32_t>(state.range(0));
  std::uint64_t full = 0;
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    f.publish(d, n, full);
    if constexpr (!Consumer) {
      if (f.in_flight() + n > ring_slots) [[unlikely]] {  // retire everything, not timed (<= either ring)
        state.PauseTiming();
        f.retire_all();
        state.ResumeTiming();
      }
    }
  }
  const std::chrono::duration<double> wall = std::chrono::steady_clock::now() - start;
  const auto packets = static_cast<double>(state.iterations()) * n;
  state.SetItemsProcessed(static_cast<std::int64_t>(packets));
  // CPU time of the producer thread(s) per packet: what publishing costs the host. Measured in
  // CPU time because on a shared, oversubscribed machine wall time mostly measures when the
  // scheduler ran the consumer.
  state.counters["per_packet"] = benchmark::Counter(packets, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  // Wall time per packet of one producer (includes waiting for the consumer and preemption;
  // not for the isolated runs, whose wall time includes the untimed retiring).
  if constexpr (Consumer)
    state.counters["wall_per_packet"] = benchmark::Counter(wall.count() / packets, benchmark::Counter::kAvgThreads);
  state.counters["full_waits"] = benchmark::Counter(static_cast<double>(full), benchmark::Counter::kAvgIterations);
}

template <class F>
void add(const char* name, std::initializer_list<int> threads, bool big_batch = false) {
  for (int t : threads) {
    auto* b = benchmark::RegisterBenchmark((std::string("publish/") + name).c_str(), bm_publish<F, true>);
    b->ArgName("batch")->Arg(1)->Arg(8)->Arg(64)->Setup(setup<F, true>)->Teardown(teardown<F, true>)->Threads(t);
  }
  auto* b = benchmark::RegisterBenchmark((std::string("publish_isolated/") + name).c_str(), bm_publish<F, false>);
  b->ArgName("batch")->Arg(1)->Arg(8)->Arg(64)->Setup(setup<F, false>)->Teardown(teardown<F, false>)->Threads(1);
  if (big_batch) b->Arg(512);
}

}  // namespace

namespace bench {

void register_publish_benchmarks() {
  add<aqueduct_fixture<q::producer::single>>("aqueduct_sp", {1});
  add<aqueduct_fixture<q::producer::multi>>("aqueduct_mp", {1, 2});
  add<aqueduct_fixture<q::producer::single, true>>("aqueduct_sp_prebuilt", {1});
  add<peer_fixture<hsa_protocol>>("peer_hsa_protocol", {1, 2});
  add<peer_fixture<mutex_ring>>("peer_mutex_ring", {1, 2});
  add<peer_fixture<naive_memcpy>>("peer_naive_memcpy_INCORRECT", {1});
  // Issue 11: every publish style against the in-place HSA sequences (cases.hpp).
  using S = bench::style;
  add<case_fixture<bench::aqueduct_case<q::producer::single, S::value>>>("aqueduct_sp_value", {1}, true);
  add<case_fixture<bench::aqueduct_case<q::producer::single, S::if_ok>>>("aqueduct_sp_if", {1}, true);
  add<case_fixture<bench::aqueduct_case<q::producer::single, S::submit_batch>>>("aqueduct_sp_submit_batch", {1}, true);
  add<case_fixture<bench::aqueduct_case<q::producer::multi, S::if_ok>>>("aqueduct_mp_if", {1}, true);
  add<case_fixture<bench::peer_case<hsa_sp_protocol>>>("peer_hsa_sp_in_place", {1}, true);
}

}  // namespace bench
