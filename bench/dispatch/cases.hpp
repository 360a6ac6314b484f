// bench/dispatch/cases.hpp — every way of publishing AQL kernel-dispatch packets that the
// benchmarks compare, as small fixtures with one `publish(desc, n)` each, shared by
// bench_dispatch (Google Benchmark) and aqueduct-bench (the program a person runs).
//
// aqueduct, in the styles a user writes (issue 11):
//   sp_value     auto r = q.try_reserve(n).value(); r.write(i, make_packet(k))...; r.publish();
//   sp_if        if (auto r = q.try_reserve(n)) { r->write(i, make_packet(k))...; r->publish(); }
//   sp_submit    q.submit(make_packet(k)), one packet per call (run at batch 1 only)
//   sp_submit_batch  the packets built into an array (batch[i] = make_packet(k)), then
//                q.submit_batch(span)
//   sp_submit_fill  q.submit_batch(n, [&](i) { return make_packet(k); }): each packet built in place
//   sp_prebuilt  packets built once (what graph replay does), q.try_submit / q.try_submit_batch
//   mp_if, mp_value  the same as sp_if / sp_value on the multi-producer queue
// peers (peers.hpp), written for the benchmark from hsa.h:
//   hsa_sp       the in-place single-producer sequence: load the write index, check room against
//                the read index, store the fields straight into the slot, one 32-bit release
//                store of header|setup, release-store the write index, the doorbell
//   hsa_mp       the multi-producer sequence: fetch_add of the write index, wait for room, fill
//                in place, release header, doorbell
//   mutex_ring, naive_memcpy_INCORRECT (a cost reference only)
// Each fixture owns its ring memory; `room(n)` says whether n more packets fit without the
// consumer, `retire_all()` retires every published packet on the calling thread (the isolated
// runs call it, untimed, when the ring is about to fill), `read_index_word()` feeds a consumer
// thread. A publish on a full ring waits the one way every variant waits (bench::wait_until).
#pragma once

#include "consumer.hpp"
#include "peers.hpp"

#include <aqueduct/abi/amd_queue.hpp>
#include <aqueduct/queue/aql_packets.hpp>
#include <aqueduct/queue/aql_queue.hpp>

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <span>

namespace bench {

inline constexpr std::uint32_t ring_slots = 4096;  // a power of two >= the largest batch (512) x 2
inline constexpr std::uint32_t largest_batch = 512;

enum class style { value, if_ok, submit, submit_batch, submit_fill, prebuilt };

inline aqueduct::ring::kernel_dispatch descriptor_of(const dispatch_desc& d) noexcept {
  return {.kernel_object = aqueduct::gpu_va(d.kernel_object),
          .kernarg_address = aqueduct::gpu_va(d.kernarg_address),
          .grid = {d.grid_x, 1, 1},
          .workgroup = {d.workgroup_x, 1, 1},
          .segments = {},
          .completion_signal = d.completion_signal};
}

template <aqueduct::ring::producer P, style S>
struct aqueduct_case {
  using packet = aqueduct::abi::kernel_dispatch_packet;
  aqueduct_case() : storage(ring_slots) {
    queue.emplace(aqueduct::ring::aql_queue_memory{&desc, reinterpret_cast<aqueduct::abi::aql_slot*>(storage.bytes), ring_slots},
                  aqueduct::ring::doorbell_ref(&doorbell));
    prebuilt.fill(aqueduct::ring::make_packet(descriptor_of(dispatch_desc{})));
  }
  aqueduct::abi::amd_queue desc{};
  slot_storage storage;
  alignas(64) std::uint64_t doorbell = 0;
  std::optional<aqueduct::ring::aql_queue<P>> queue;
  std::array<packet, largest_batch> prebuilt{};

  std::uint64_t published_end() { return queue->write_index(); }
  std::uint64_t* read_index_word() { return &desc.read_dispatch_id; }
  unsigned char* ring_bytes() { return storage.bytes; }
  bool room(std::uint32_t n) { return queue->write_index() + n - queue->read_index() <= ring_slots; }
  void retire_all() { retire_inline(storage.bytes, ring_slots, &desc.read_dispatch_id, published_end()); }

  void publish(const dispatch_desc& d, std::uint32_t n, std::uint64_t& full) {
    if (!room(n)) [[unlikely]] {  // wait exactly as the peers do, so only the protocols differ
      ++full;
      wait_until([&] { return room(n); });
    }
    publish_with_room(d, n);
  }

  // The measured part: written the way a user writes it.
  AQUEDUCT_ALWAYS_INLINE void publish_with_room(const dispatch_desc& d, std::uint32_t n) {
    namespace q = aqueduct::ring;
    const q::kernel_dispatch k = descriptor_of(d);
    if constexpr (S == style::value) {
      auto r = queue->try_reserve(n).value();
      for (std::uint32_t i = 0; i < n; ++i) r.write(i, q::make_packet(k));
      r.publish();
    } else if constexpr (S == style::if_ok) {
      if (auto r = queue->try_reserve(n)) {
        for (std::uint32_t i = 0; i < n; ++i) r->write(i, q::make_packet(k));
        r->publish();
      }
    } else if constexpr (S == style::submit) {  // one packet per call, each rings the doorbell
      for (std::uint32_t i = 0; i < n; ++i) queue->submit(q::make_packet(k));
    } else if constexpr (S == style::submit_batch) {
      std::array<packet, largest_batch> batch;
      for (std::uint32_t i = 0; i < n; ++i) batch[i] = q::make_packet(k);
      queue->submit_batch(std::span<const packet>(batch.data(), n));
    } else if constexpr (S == style::submit_fill) {
      queue->submit_batch(n, [&](std::uint32_t) { return q::make_packet(k); });
    } else {
      if (n == 1) (void)queue->try_submit(prebuilt[0]);
      else (void)queue->try_submit_batch(std::span<const packet>(prebuilt.data(), n));
    }
  }
};

template <class Peer>
struct peer_case {
  peer_case() : ring(ring_slots), peer(ring) {}
  hsa_ring ring;
  Peer peer;

  std::uint64_t published_end() { return __atomic_load_n(&ring.queue.write_dispatch_id, __ATOMIC_ACQUIRE); }
  std::uint64_t* read_index_word() { return const_cast<std::uint64_t*>(&ring.queue.read_dispatch_id); }
  unsigned char* ring_bytes() { return ring.storage.bytes; }
  bool room(std::uint32_t n) {
    return published_end() + n - __atomic_load_n(&ring.queue.read_dispatch_id, __ATOMIC_ACQUIRE) <= ring_slots;
  }
  void retire_all() { retire_inline(ring.storage.bytes, ring_slots, read_index_word(), published_end()); }
  void publish(const dispatch_desc& d, std::uint32_t n, std::uint64_t& full) { peer.publish(d, n, full); }
  AQUEDUCT_ALWAYS_INLINE void publish_with_room(const dispatch_desc& d, std::uint32_t n) {
    std::uint64_t full = 0;
    peer.publish(d, n, full);
  }
};

}  // namespace bench
