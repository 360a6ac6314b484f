// A tiny in-test AQL packet processor (stand-in until emu/aql_processor.hpp is used here).
// It follows spec/packets.md §5.5 / DESIGN.md §4: consume strictly in index order once the header
// at the read index is valid (without waiting for a doorbell), honour barrier-AND/OR and AMD
// barrier-value dependencies, decrement completion signals, then set the header INVALID and
// advance read_dispatch_id with release stores.
// Checks: every KERNEL_DISPATCH carries (kernel_object = producer id + 1, kernarg_address = the
// producer's sequence number); per producer the numbers must arrive 0, 1, 2, ... — a lost,
// duplicated, reordered or overwritten packet breaks the chain.
#pragma once

#include <aqueduct/abi/amd_queue.hpp>
#include <aqueduct/abi/amd_signal.hpp>
#include <aqueduct/abi/aql.hpp>
#include <aqueduct/sync/atomics.hpp>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <thread>

namespace aqueduct_test {

namespace abi = aqueduct::abi;
namespace sync = aqueduct::sync;

class fake_processor {
 public:
  static constexpr int max_producers = 8;

  fake_processor(abi::amd_queue& q, abi::aql_slot* ring, std::uint32_t size) : q_(q), ring_(ring), size_(size) {}
  ~fake_processor() { stop(); }

  void start() { thread_ = std::thread([this] { run(); }); }
  void stop() {
    stop_.store(true);
    if (thread_.joinable()) thread_.join();
  }
  // Wait until `n` packets have been consumed in total (or ~10 s).
  bool wait_consumed(std::uint64_t n) const {
    for (int i = 0; i < 100000 && consumed_.load() < n; ++i) std::this_thread::sleep_for(std::chrono::microseconds(100));
    return consumed_.load() >= n;
  }

  std::uint64_t consumed() const { return consumed_.load(); }
  std::uint64_t errors() const { return errors_.load(); }
  std::uint64_t dispatches(int producer) const { return next_seq_[producer].load(); }
  std::uint64_t nops() const { return nops_.load(); }
  // Index of the most recent packet of each type (for ordering checks), -1 if none.
  std::int64_t last_index_of(abi::packet_type t) const { return last_of_[static_cast<int>(t)].load(); }

 private:
  static std::uint32_t& word0(abi::aql_slot& s) { return *reinterpret_cast<std::uint32_t*>(s.bytes); }
  static std::int64_t value_of(std::uint64_t handle) {
    auto* s = reinterpret_cast<abi::amd_signal*>(static_cast<std::uintptr_t>(handle));
    return sync::atomic_load(s->value, std::memory_order_acquire);
  }
  static void complete(std::uint64_t handle) {
    if (!handle) return;
    auto* s = reinterpret_cast<abi::amd_signal*>(static_cast<std::uintptr_t>(handle));
    sync::atomic_fetch_sub(s->value, std::int64_t{1}, std::memory_order_release);
  }
  // Block (politely) until `ready()` or stop.
  template <class F>
  bool await(F ready) {
    while (!ready()) {
      if (stop_.load(std::memory_order_relaxed)) return false;
      std::this_thread::yield();
    }
    return true;
  }

  void run() {
    std::uint64_t r = sync::atomic_load(q_.read_dispatch_id, std::memory_order_acquire);
    for (;;) {
      abi::aql_slot& s = ring_[r & (size_ - 1)];
      std::uint32_t h = 0;
      if (!await([&] {
            h = sync::atomic_load(word0(s), std::memory_order_acquire);
            return abi::header_type(static_cast<std::uint16_t>(h)) != abi::packet_type::invalid;
          }))
        return;
      // Body, ordered after the header's acquire load. Read word by word: GCC's inline memcpy is
      // not TSan-instrumented, and the point of this read is that TSan sees it.
      abi::aql_slot pkt;
      for (std::size_t off = 0; off < 64; off += 8) {
        std::uint64_t w;
        std::memcpy(&w, s.bytes + off, 8);
        std::memcpy(pkt.bytes + off, &w, 8);
      }
      const auto type = abi::header_type(static_cast<std::uint16_t>(h));
      std::uint64_t completion = 0;
      switch (type) {
        case abi::packet_type::kernel_dispatch: {
          abi::kernel_dispatch_packet d;
          std::memcpy(&d, &pkt, sizeof d);
          const auto producer = d.kernel_object - 1;
          if (producer >= max_producers || d.kernarg_address != next_seq_[producer].load()) {
            errors_.fetch_add(1);
          } else {
            next_seq_[producer].fetch_add(1);
          }
          completion = d.completion_signal;
          break;
        }
        case abi::packet_type::barrier_and:
        case abi::packet_type::barrier_or: {
          abi::barrier_and_packet b;
          std::memcpy(&b, &pkt, sizeof b);
          const bool is_and = type == abi::packet_type::barrier_and;
          bool any_dep = false;
          for (auto d : b.dep_signal) any_dep |= d != 0;
          if (!any_dep) nops_.fetch_add(1);
          if (!await([&] {
                if (!any_dep) return true;
                bool all = true, any = false;
                for (auto d : b.dep_signal) {
                  if (!d) continue;
                  const bool done = value_of(d) == 0;
                  all &= done;
                  any |= done;
                }
                return is_and ? all : any;
              }))
            return;
          completion = b.completion_signal;
          break;
        }
        case abi::packet_type::vendor_specific: {
          abi::amd_barrier_value_packet v;
          std::memcpy(&v, &pkt, sizeof v);
          if (v.header.amd_format != 2) errors_.fetch_add(1);
          if (!await([&] {
                return v.signal == 0 || abi::condition_holds(static_cast<abi::signal_condition>(v.cond),
                                                             value_of(v.signal) & v.mask, v.value);
              }))
            return;
          completion = v.completion_signal;
          break;
        }
        default: errors_.fetch_add(1); break;
      }
      complete(completion);
      last_of_[static_cast<int>(type) & 7].store(static_cast<std::int64_t>(r));
      sync::atomic_store(word0(s), std::uint32_t{1}, std::memory_order_release);  // INVALID
      ++r;
      sync::atomic_store(q_.read_dispatch_id, r, std::memory_order_release);
      consumed_.fetch_add(1);
    }
  }

  abi::amd_queue& q_;
  abi::aql_slot* ring_;
  std::uint32_t size_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> consumed_{0}, errors_{0}, nops_{0};
  std::atomic<std::uint64_t> next_seq_[max_producers]{};
  std::atomic<std::int64_t> last_of_[8]{-1, -1, -1, -1, -1, -1, -1, -1};
};

}  // namespace aqueduct_test
