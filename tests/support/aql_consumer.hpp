// tests/support/aql_consumer.hpp — the real emulated AQL engine (emu/aql_processor.hpp) behind the
// memory of a ring::aql_queue, counting what it consumes: the consumer the producer-side tests of
// tests/queue run against (it replaced an in-test fake processor, a second AQL consumer that had
// drifted from the engine). Every kernel dispatch the tests write names one no-op host kernel and
// carries (producer, sequence) in reserved2 (`numbered_dispatch`); the engine's sequence check
// stops the queue at the first packet that is out of order, lost, duplicated or overwritten.
// A barrier-AND without dependencies (what an abandoned reservation becomes) counts as a NOP.
#pragma once

#include "emu_rig.hpp"

#include <aqueduct/abi/amd_queue.hpp>
#include <aqueduct/abi/aql.hpp>
#include <aqueduct/emu/aql_processor.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>

namespace aq_test {

// The no-op kernel every numbered dispatch names: one process-wide kernel object (descriptor + code
// blob naming "noop"), mapped into each consumer's VM.
inline const kernel_object& noop_kernel_object() {
  static test_vm unused;  // the object's own allocation map; consumers map it in theirs
  static const kernel_object ko(unused, abi::kernel_descriptor{}, "noop");
  return ko;
}

// A one-workgroup dispatch of the no-op kernel carrying (producer, sequence) in reserved2.
inline abi::kernel_dispatch_packet numbered_dispatch(std::uint64_t producer, std::uint64_t seq, std::uint64_t completion = 0) {
  abi::kernel_dispatch_packet p = dispatch_1d(noop_kernel_object().va_, 0, 64, 64, completion);
  p.reserved2 = producer << 32 | seq;
  return p;
}

class aql_consumer {
 public:
  static constexpr int max_producers = 8;

  aql_consumer(abi::amd_queue& desc, abi::aql_slot* ring, std::uint32_t slots) : desc_(desc), ring_(ring), slots_(slots) {
    vm_.map(ring, std::size_t{slots} * 64);
    vm_.map(&desc, sizeof desc);
    vm_.map(noop_kernel_object().mem.get(), emu::emulated_kernel_object_size);
    registry_.add("noop", [](emu::workgroup_context&) {});
  }
  ~aql_consumer() { stop(); }
  aql_consumer(const aql_consumer&) = delete;

  // Memory the packets name (their signals) must be mapped for the engine.
  void map(const void* p, std::size_t n) { vm_.map(p, n); }
  // The engine starts (like a CP mapping the queue), from read_dispatch_id.
  void start() {
    emu::aql_queue_binding b;
    b.ring_va = va(ring_);
    b.ring_bytes = std::uint64_t{slots_} * 64;
    b.read_pointer_va = va(&desc_.read_dispatch_id);
    b.write_pointer_va = va(&desc_.write_dispatch_id);
    b.amd_queue_va = va(&desc_);
    emu::aql_processor_options opt;
    opt.workers = 0;  // one-workgroup no-op dispatches: run them on the processor thread
    opt.sequence_check = [this](std::uint64_t index, const abi::aql_slot& s) { return check(index, s); };
    proc_ = emu::aql_processor::create(b, vm_, events_, registry_, std::move(opt));
  }
  void stop() {
    if (proc_) proc_->stop();
  }
  // Until `n` packets have retired (or `timeout`, or the engine stopped the queue).
  [[nodiscard]] bool wait_consumed(std::uint64_t n, std::chrono::milliseconds timeout = std::chrono::seconds(20)) const {
    return proc_ && proc_->wait_retired(n, timeout);
  }
  [[nodiscard]] std::uint64_t consumed() const { return std::atomic_ref<std::uint64_t>(desc_.read_dispatch_id).load(); }
  // 1 once the engine stopped the queue (a sequence error or a malformed packet); the why is logged.
  [[nodiscard]] std::uint64_t errors() const {
    if (!proc_ || !proc_->has_error()) return 0;
    MESSAGE(proc_->error()->detail);
    return 1;
  }
  [[nodiscard]] std::uint64_t dispatches(int producer) const { return next_seq_[producer].load(); }
  [[nodiscard]] std::uint64_t nops() const { return nops_.load(); }
  // Index of the most recent packet of each type (for ordering checks), -1 if none.
  [[nodiscard]] std::int64_t last_index_of(abi::packet_type t) const { return last_of_[static_cast<int>(t) & 7].load(); }

 private:
  // The engine's sequence check: once per packet, in ring order, before it runs.
  bool check(std::uint64_t index, const abi::aql_slot& s) {
    std::uint16_t h;
    std::memcpy(&h, s.bytes, 2);
    const auto type = abi::header_type(h);
    if (type == abi::packet_type::kernel_dispatch) {
      abi::kernel_dispatch_packet d;
      std::memcpy(&d, s.bytes, sizeof d);
      const std::uint64_t producer = d.reserved2 >> 32, seq = d.reserved2 & 0xFFFFFFFFu;
      if (producer >= max_producers || seq != next_seq_[producer].load()) return false;
      next_seq_[producer].fetch_add(1);
    } else if (type == abi::packet_type::barrier_and) {
      abi::barrier_and_packet b;
      std::memcpy(&b, s.bytes, sizeof b);
      bool any = false;
      for (auto dep : b.dep_signal) any |= dep != 0;
      if (!any) nops_.fetch_add(1);
    }
    last_of_[static_cast<int>(type) & 7].store(static_cast<std::int64_t>(index));
    return true;
  }

  abi::amd_queue& desc_;
  abi::aql_slot* ring_;
  std::uint32_t slots_;
  test_vm vm_;
  test_events events_;
  emu::host_kernel_registry registry_;
  std::unique_ptr<emu::aql_processor> proc_;
  std::array<std::atomic<std::uint64_t>, max_producers> next_seq_{};
  std::atomic<std::uint64_t> nops_{0};
  std::array<std::atomic<std::int64_t>, 8> last_of_{-1, -1, -1, -1, -1, -1, -1, -1};
};

}  // namespace aq_test
