// bench/dispatch/peers_gbench.cpp — the rest of issue 11's same-run peers as Google Benchmark
// cases in bench_dispatch (aqueduct-bench runs the same cases with its own driver):
//   queue/boost_spsc, queue/moodycamel_rwq: 64-byte items through boost::lockfree::spsc_queue
//     and moodycamel::ReaderWriterQueue, one producer thread, one consumer (this) thread;
//   queue/moodycamel_cq/producers:2: moodycamel::ConcurrentQueue, two producers (the
//     multi-producer peer);
//   pingpong: a cache line bounced between two threads (the core-to-core floor of a round trip);
//   commands/pm4_dispatch_*, commands/sdma_copy_*: PM4 dispatch and SDMA copy enqueue,
//     aqueduct's typed queues vs the same dwords by hand (commands.hpp).
// Counter per_item / per_dispatch: wall time per item (queues: the transfer's, both threads
// running), per round trip, or producer time per command.
#include "bench_dispatch.hpp"
#include "commands.hpp"

#include <benchmark/benchmark.h>
#include <boost/lockfree/spsc_queue.hpp>
#include <concurrentqueue/concurrentqueue.h>
#include <readerwriterqueue/readerwriterqueue.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

namespace {

struct item {
  std::uint64_t w[8];
};
static_assert(sizeof(item) == 64);

template <class Done>
void spin_until(Done done) {
  for (unsigned i = 0; !done(); ++i) {
    if (i < 256) bench::cpu_relax();
    else std::this_thread::yield();
  }
}

constexpr std::size_t items_per_iteration = 4096;

// Items through a queue: producer thread(s) push `items_per_iteration` items per iteration, this
// thread pops them; wall time per item.
template <class Push, class Pop>
void transfer(benchmark::State& state, Push push, Pop pop, unsigned producers) {
  for (auto _ : state) {
    std::vector<std::thread> ps;
    for (unsigned p = 0; p < producers; ++p)
      ps.emplace_back([&, p] {
        item it{};
        for (std::size_t i = p; i < items_per_iteration; i += producers) {
          it.w[0] = i;
          spin_until([&] { return push(p, it); });
        }
      });
    std::uint64_t sum = 0;
    item it{};
    for (std::size_t i = 0; i < items_per_iteration; ++i) {
      spin_until([&] { return pop(it); });
      sum += it.w[0];
    }
    for (auto& t : ps) t.join();
    if (sum != items_per_iteration * (items_per_iteration - 1) / 2) state.SkipWithError("lost items");
  }
  state.counters["per_item"] = benchmark::Counter(static_cast<double>(state.iterations()) * items_per_iteration,
                                                  benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void bm_boost_spsc(benchmark::State& state) {
  auto q = std::make_unique<boost::lockfree::spsc_queue<item, boost::lockfree::capacity<1024>>>();
  transfer(state, [&](unsigned, const item& it) { return q->push(it); }, [&](item& it) { return q->pop(it); }, 1);
}
void bm_moodycamel_rwq(benchmark::State& state) {
  moodycamel::ReaderWriterQueue<item> q(1024);
  transfer(state, [&](unsigned, const item& it) { return q.try_enqueue(it); }, [&](item& it) { return q.try_dequeue(it); }, 1);
}
void bm_moodycamel_cq(benchmark::State& state) {
  moodycamel::ConcurrentQueue<item> q(4096, 2, 0);
  moodycamel::ProducerToken t0(q), t1(q);
  moodycamel::ProducerToken* tok[2] = {&t0, &t1};
  transfer(state, [&](unsigned p, const item& it) { return q.enqueue(*tok[p], it); }, [&](item& it) { return q.try_dequeue(it); }, 2);
}

void bm_pingpong(benchmark::State& state) {
  alignas(64) std::atomic<std::uint64_t> line{0};
  std::atomic<bool> stop{false};
  std::thread other([&] {
    std::uint64_t seen = 0;
    while (!stop.load(std::memory_order_relaxed)) {
      const std::uint64_t v = line.load(std::memory_order_acquire);
      if (v != seen && v % 2 == 1) {
        line.store(v + 1, std::memory_order_release);
        seen = v + 1;
      } else {
        bench::cpu_relax();
      }
    }
  });
  std::uint64_t v = 0;
  for (auto _ : state) {
    line.store(v + 1, std::memory_order_release);
    spin_until([&] { return line.load(std::memory_order_acquire) == v + 2; });
    v += 2;
  }
  stop.store(true);
  other.join();
  state.counters["per_round_trip"] = benchmark::Counter(static_cast<double>(state.iterations()),
                                                        benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

template <class F>
void bm_commands(benchmark::State& state) {
  auto f = std::make_unique<F>();
  constexpr std::uint32_t per_iteration = 256;
  for (auto _ : state) {
    f->publish_with_room(per_iteration);
    state.PauseTiming();
    f->retire_all();
    state.ResumeTiming();
  }
  state.counters["per_dispatch"] = benchmark::Counter(static_cast<double>(state.iterations()) * per_iteration,
                                                      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

}  // namespace

namespace bench {

void register_peer_benchmarks() {
  benchmark::RegisterBenchmark("queue/boost_spsc", bm_boost_spsc)->UseRealTime();
  benchmark::RegisterBenchmark("queue/moodycamel_rwq", bm_moodycamel_rwq)->UseRealTime();
  benchmark::RegisterBenchmark("queue/moodycamel_cq/producers:2", bm_moodycamel_cq)->UseRealTime();
  benchmark::RegisterBenchmark("pingpong", bm_pingpong)->UseRealTime();
  benchmark::RegisterBenchmark("commands/pm4_dispatch_aqueduct", bm_commands<aqueduct_pm4_case>);
  benchmark::RegisterBenchmark("commands/pm4_dispatch_peer_by_hand", bm_commands<peer_pm4_case>);
  benchmark::RegisterBenchmark("commands/sdma_copy_aqueduct", bm_commands<aqueduct_sdma_case>);
  benchmark::RegisterBenchmark("commands/sdma_copy_peer_by_hand", bm_commands<peer_sdma_case>);
}

}  // namespace bench
