// Tests for sync/signal_pool.hpp: requirement 2 (DESIGN.md §1) — a signal is recycled only after
// the work that last used it has completed (value observed at 0).
#include <aqueduct/sync/signal_pool.hpp>

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

namespace s = aqueduct::sync;
namespace abi = aqueduct::abi;
using namespace std::chrono_literals;

TEST_CASE("a released signal whose work is still running is not handed out again") {
  std::vector<abi::amd_signal> mem(2);
  s::signal_pool pool(mem);
  CHECK(pool.capacity() == 2);
  auto a = pool.acquire(1);
  auto b = pool.acquire(1);
  const auto ha = a.handle();
  CHECK(ha != b.handle());
  CHECK(a.ref().load(std::memory_order_acquire) == 1);
  a.reset();  // released while "in flight" (value 1)
  b.reset();
  CHECK(pool.retiring_count() == 2);
  auto r = pool.try_acquire(1);
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error() == aqueduct::errc::out_of_resources);
  CHECK(std::string(r.detail()).find("released but not completed") != std::string::npos);

  // The device completes a's work: only a comes back.
  s::signal_ref::from_handle(ha).subtract(1, std::memory_order_release);
  auto c = pool.acquire(7);
  CHECK(c.handle() == ha);
  CHECK(c.ref().load(std::memory_order_acquire) == 7);
  CHECK(pool.try_acquire(1).error() == aqueduct::errc::out_of_resources);
  c.release_unused();  // never submitted: value stored to 0, so the next reclaim frees it
  CHECK(pool.retiring_count() == 2);
  CHECK(pool.reclaim() == 1);  // c, not b
  CHECK(pool.free_count() == 1);
  auto d = pool.acquire(1);
  CHECK(d.handle() == ha);
  d.release_unused();
  // b still retiring; complete it and drain so the pool is destroyed with nothing outstanding.
  mem[1].value = 0;
  CHECK(pool.reclaim() == 2);  // b and d
  CHECK(pool.free_count() == 2);
}

TEST_CASE("acquire with a timeout waits for a completion") {
  std::vector<abi::amd_signal> mem(1);
  s::signal_pool pool(mem);
  auto a = pool.acquire(1);
  const auto h = a.handle();
  a.reset();
  std::thread gpu([&] {
    std::this_thread::sleep_for(20ms);
    s::signal_ref::from_handle(h).subtract(1, std::memory_order_release);
  });
  auto b = pool.try_acquire(1, 2s);
  gpu.join();
  REQUIRE(b.has_value());
  CHECK(b->handle() == h);
  b->release_unused();
}

TEST_CASE("stress: no signal is ever handed out while a consumer still owns its work") {
  // A fake processor completes work in order with jitter: it clears in_flight, then decrements
  // the signal. A pool that recycled before the decrement would hand out a signal whose
  // in_flight flag is still set.
  constexpr int n_signals = 4, n_ops = 3000;
  std::vector<abi::amd_signal> mem(n_signals);
  std::vector<std::atomic<int>> in_flight(n_signals);
  s::signal_pool pool(mem);
  std::mutex m;
  std::deque<std::uint64_t> work;
  std::atomic<bool> done{false};
  std::thread gpu([&] {
    unsigned k = 0;
    for (;;) {
      std::uint64_t h = 0;
      {
        std::lock_guard l(m);
        if (work.empty()) {
          if (done.load()) return;
        } else {
          h = work.front();
          work.pop_front();
        }
      }
      if (!h) {
        std::this_thread::yield();
        continue;
      }
      if (++k % 16 == 0) std::this_thread::sleep_for(50us);
      auto sig = s::signal_ref::from_handle(h);
      in_flight[sig.get() - mem.data()].store(0, std::memory_order_relaxed);
      sig.subtract(1, std::memory_order_release);
    }
  });
  int early = 0;
  for (int i = 0; i < n_ops; ++i) {
    auto p = pool.acquire(1, 5s);
    const auto idx = p.ref().get() - mem.data();
    if (in_flight[idx].load(std::memory_order_relaxed) != 0) ++early;
    in_flight[idx].store(1, std::memory_order_relaxed);
    {
      std::lock_guard l(m);
      work.push_back(p.handle());
    }
    // p released here, before its work completes (fire-and-forget).
  }
  done.store(true);
  gpu.join();
  CHECK(early == 0);
  pool.reclaim();
  CHECK(pool.free_count() == n_signals);
}

TEST_CASE("signals released on other threads, concurrently with acquire, are recycled after completion") {
  // The consumer thread completes the work and then drops the pooled_signal itself, so releases
  // race with the producer's acquires (the released stack); still no early recycling.
  constexpr int n_signals = 8, n_ops = 4000;
  std::vector<abi::amd_signal> mem(n_signals);
  std::vector<std::atomic<int>> in_flight(n_signals);
  s::signal_pool pool(mem);
  std::mutex m;
  std::deque<s::pooled_signal> work;
  std::atomic<bool> done{false};
  std::thread gpu([&] {
    unsigned k = 0;
    for (;;) {
      s::pooled_signal p;
      {
        std::lock_guard l(m);
        if (work.empty()) {
          if (done.load()) return;
        } else {
          p = std::move(work.front());
          work.pop_front();
        }
      }
      if (!p) {
        std::this_thread::yield();
        continue;
      }
      if (++k % 32 == 0) std::this_thread::sleep_for(20us);
      auto sig = p.ref();
      auto& flag = in_flight[sig.get() - mem.data()];
      if (k % 2) {
        flag.store(0, std::memory_order_relaxed);  // complete, then release
        sig.subtract(1, std::memory_order_release);
        p.reset();
      } else {
        p.reset();  // release first, complete a little later: must still not be reused early
        std::this_thread::yield();
        flag.store(0, std::memory_order_relaxed);
        sig.subtract(1, std::memory_order_release);
      }
    }
  });
  int early = 0;
  for (int i = 0; i < n_ops; ++i) {
    auto p = pool.acquire(1, 5s);
    const auto idx = p.ref().get() - mem.data();
    if (in_flight[idx].load(std::memory_order_relaxed) != 0) ++early;
    in_flight[idx].store(1, std::memory_order_relaxed);
    std::lock_guard l(m);
    work.push_back(std::move(p));
  }
  done.store(true);
  gpu.join();
  CHECK(early == 0);
  CHECK(pool.outstanding() == 0);
  pool.reclaim();
  CHECK(pool.free_count() == n_signals);
  CHECK(pool.retiring_count() == 0);
}

}  // namespace AQ_UNITY_ID
