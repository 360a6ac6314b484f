// bench/dispatch/peers.hpp — the same-run peers of aqueduct's AQL publish path, each over its own
// ring memory and retired by the same bench::consumer.
//
// 1. hsa_protocol: the producer sequence the HSA Runtime Programmer's Reference Manual documents
//    (v1.2, the kernel dispatch example of the queues chapter; hsa.h comments on hsa_queue_t,
//    hsa_queue_add_write_index_*, doorbell_signal): hsa_queue_add_write_index_relaxed (an atomic
//    fetch-add of the write index) → wait while
//    `id - load_read_index_scacquire >= size` → fill the packet fields in the ring slot → one
//    32-bit release store of header|setup<<16 → hsa_signal_store_screlease(doorbell, id).
//    Written here from that description over Debian's hsa.h / amd_hsa_queue.h types
//    (hsa_kernel_dispatch_packet_t, amd_queue_t::write_dispatch_id/read_dispatch_id); the
//    runtime library itself cannot run without a GPU, so its calls are written as the
//    equivalent atomics (what ROCr's queue functions do for a hardware queue).
// 2. mutex_ring: a conventional lock-protected ring (std::mutex around reserve, write, header
//    release store, write index, doorbell). Correct; what a simple runtime might do.
// 3. naive_memcpy_INCORRECT: the whole 64-byte packet, header included, copied with one memcpy
//    (header not published last, not atomic) — the pattern DESIGN.md requirement 1 forbids,
//    kept ONLY as a cost reference: a packet processor may see the header before the body.
// 4. hsa_sp_protocol: the single-producer form of 1 (no read-modify-write), fields in place.
// 5. hsa_sp_copy<Body>: the single-producer sequence of 4 publishing packets that were built once
//    into an array of hsa_kernel_dispatch_packet_t (what a hand-written replay does, and the fair
//    peer of aqueduct's prebuilt style): each slot's bytes 4..63 copied from the array — field by
//    field (body_copy::fields) or with one 60-byte memcpy (body_copy::memcpy60) — then the
//    array's header|setup dword release-stored. With `build_first`, the packets are first written
//    into a local array from the description, every call (the fair peer of submit_batch(span):
//    the user's own pass over an array, then the copy).
// Thread safety: hsa_protocol and mutex_ring any number of producers; hsa_sp_protocol and
// naive_memcpy one.
#pragma once

#include "consumer.hpp"

#include <hsa/amd_hsa_queue.h>
#include <hsa/hsa.h>

#include <cstdint>
#include <cstring>
#include <mutex>

namespace bench {

// What every variant publishes: a 1-D kernel dispatch of 256 work-items (fake addresses; the
// consumer never dereferences them).
struct dispatch_desc {
  std::uint64_t kernel_object = 0x7f0000010000;
  std::uint64_t kernarg_address = 0x7f0000020000;
  std::uint32_t grid_x = 256;
  std::uint16_t workgroup_x = 64;
  std::uint64_t completion_signal = 0;
};

inline constexpr std::uint16_t hsa_dispatch_header =
    (HSA_PACKET_TYPE_KERNEL_DISPATCH << HSA_PACKET_HEADER_TYPE) |
    (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE) |
    (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE);
inline constexpr std::uint16_t hsa_dispatch_setup = 1 << HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS;

// Ring memory in the ROCr layout: amd_queue_t (its hsa_queue_t + dispatch ids), slots, doorbell.
struct hsa_ring {
  explicit hsa_ring(std::uint32_t slots) : storage(slots) {
    std::memset(&queue, 0, sizeof queue);
    queue.hsa_queue.type = HSA_QUEUE_TYPE_MULTI;
    queue.hsa_queue.base_address = storage.bytes;
    queue.hsa_queue.size = slots;
  }
  amd_queue_t queue;
  slot_storage storage;
  alignas(64) std::uint64_t doorbell = 0;  // the doorbell signal's hardware_doorbell_ptr word
};

class hsa_protocol {
 public:
  explicit hsa_protocol(hsa_ring& r) noexcept : r_(r) {}

  // `n` packets (a batch rings the doorbell once, with the last packet id). `full` counts the
  // times the ring had no room and the producer had to wait for the consumer.
  AQUEDUCT_ALWAYS_INLINE void publish(const dispatch_desc& d, std::uint32_t n, std::uint64_t& full) noexcept {
    amd_queue_t& q = r_.queue;
    const std::uint32_t size = q.hsa_queue.size;
    // hsa_queue_add_write_index_relaxed(queue, n), as in the PRM's example (one locked xadd on
    // x86 whatever the order).
    const std::uint64_t first = __atomic_fetch_add(&q.write_dispatch_id, n, __ATOMIC_RELAXED);
    // while (id - hsa_queue_load_read_index_scacquire(queue) >= size) wait
    if (first + n - __atomic_load_n(&q.read_dispatch_id, __ATOMIC_ACQUIRE) > size) {
      ++full;
      wait_until([&] { return !(first + n - __atomic_load_n(&q.read_dispatch_id, __ATOMIC_ACQUIRE) > size); });
    }
    auto* base = static_cast<hsa_kernel_dispatch_packet_t*>(q.hsa_queue.base_address);
    for (std::uint32_t i = 0; i < n; ++i) {
      hsa_kernel_dispatch_packet_t* p = base + ((first + i) & (size - 1));
      // Fill every field but the header/setup dword (the PRM's initialize_packet + field sets).
      p->workgroup_size_x = d.workgroup_x;
      p->workgroup_size_y = 1;
      p->workgroup_size_z = 1;
      p->reserved0 = 0;
      p->grid_size_x = d.grid_x;
      p->grid_size_y = 1;
      p->grid_size_z = 1;
      p->private_segment_size = 0;
      p->group_segment_size = 0;
      p->kernel_object = d.kernel_object;
      p->kernarg_address = reinterpret_cast<void*>(d.kernarg_address);
      p->reserved2 = 0;
      p->completion_signal.handle = d.completion_signal;
      // packet_store_release: header | setup << 16 in one 32-bit release store.
      __atomic_store_n(reinterpret_cast<std::uint32_t*>(p), hsa_dispatch_header | (std::uint32_t{hsa_dispatch_setup} << 16),
                       __ATOMIC_RELEASE);
    }
    // hsa_signal_store_screlease(queue->doorbell_signal, last id)
    __atomic_store_n(&r_.doorbell, first + n - 1, __ATOMIC_RELEASE);
  }

 private:
  hsa_ring& r_;
};

// The in-place single-producer sequence (HSA_QUEUE_TYPE_SINGLE, hsa.h): the one producer reads
// the write index it alone advances (hsa_queue_load_write_index_relaxed), checks room against
// hsa_queue_load_read_index_scacquire, stores every field but dword 0 straight into the slot,
// release-stores header|setup<<16 as one 32-bit word (per packet, in index order), then
// hsa_queue_store_write_index_screlease(first + n) and hsa_signal_store_screlease(doorbell,
// last id). No read-modify-write at all: the fastest correct form of the protocol.
class hsa_sp_protocol {
 public:
  explicit hsa_sp_protocol(hsa_ring& r) noexcept : r_(r) {}

  AQUEDUCT_ALWAYS_INLINE void publish(const dispatch_desc& d, std::uint32_t n, std::uint64_t& full) noexcept {
    amd_queue_t& q = r_.queue;
    const std::uint32_t size = q.hsa_queue.size;
    const std::uint64_t first = __atomic_load_n(&q.write_dispatch_id, __ATOMIC_RELAXED);
    if (first + n - __atomic_load_n(&q.read_dispatch_id, __ATOMIC_ACQUIRE) > size) {
      ++full;
      wait_until([&] { return !(first + n - __atomic_load_n(&q.read_dispatch_id, __ATOMIC_ACQUIRE) > size); });
    }
    auto* base = static_cast<hsa_kernel_dispatch_packet_t*>(q.hsa_queue.base_address);
    for (std::uint32_t i = 0; i < n; ++i) {
      hsa_kernel_dispatch_packet_t* p = base + ((first + i) & (size - 1));
      p->workgroup_size_x = d.workgroup_x;
      p->workgroup_size_y = 1;
      p->workgroup_size_z = 1;
      p->reserved0 = 0;
      p->grid_size_x = d.grid_x;
      p->grid_size_y = 1;
      p->grid_size_z = 1;
      p->private_segment_size = 0;
      p->group_segment_size = 0;
      p->kernel_object = d.kernel_object;
      p->kernarg_address = reinterpret_cast<void*>(d.kernarg_address);
      p->reserved2 = 0;
      p->completion_signal.handle = d.completion_signal;
      __atomic_store_n(reinterpret_cast<std::uint32_t*>(p), hsa_dispatch_header | (std::uint32_t{hsa_dispatch_setup} << 16),
                       __ATOMIC_RELEASE);
    }
    __atomic_store_n(&q.write_dispatch_id, first + n, __ATOMIC_RELEASE);
    __atomic_store_n(&r_.doorbell, first + n - 1, __ATOMIC_RELEASE);
  }

 private:
  hsa_ring& r_;
};

enum class body_copy { fields, memcpy60 };

template <body_copy Body, bool build_first = false>
class hsa_sp_copy {
 public:
  static constexpr std::uint32_t capacity = 512;
  explicit hsa_sp_copy(hsa_ring& r) noexcept : r_(r) {
    for (auto& p : prebuilt_) build(p, dispatch_desc{});
  }

  AQUEDUCT_ALWAYS_INLINE void publish(const dispatch_desc& d, std::uint32_t n, std::uint64_t& full) noexcept {
    if constexpr (build_first) {
      hsa_kernel_dispatch_packet_t batch[capacity];
      for (std::uint32_t i = 0; i < n; ++i) build(batch[i], d);
      copy(batch, n, full);
    } else {
      copy(prebuilt_, n, full);
    }
  }

 private:
  static AQUEDUCT_ALWAYS_INLINE void build(hsa_kernel_dispatch_packet_t& p, const dispatch_desc& d) noexcept {
    p.header = hsa_dispatch_header;
    p.setup = hsa_dispatch_setup;
    p.workgroup_size_x = d.workgroup_x;
    p.workgroup_size_y = 1;
    p.workgroup_size_z = 1;
    p.reserved0 = 0;
    p.grid_size_x = d.grid_x;
    p.grid_size_y = 1;
    p.grid_size_z = 1;
    p.private_segment_size = 0;
    p.group_segment_size = 0;
    p.kernel_object = d.kernel_object;
    p.kernarg_address = reinterpret_cast<void*>(d.kernarg_address);
    p.reserved2 = 0;
    p.completion_signal.handle = d.completion_signal;
  }
  AQUEDUCT_ALWAYS_INLINE void copy(const hsa_kernel_dispatch_packet_t* src, std::uint32_t n, std::uint64_t& full) noexcept {
    amd_queue_t& q = r_.queue;
    const std::uint32_t size = q.hsa_queue.size;
    const std::uint64_t first = __atomic_load_n(&q.write_dispatch_id, __ATOMIC_RELAXED);
    if (first + n - __atomic_load_n(&q.read_dispatch_id, __ATOMIC_ACQUIRE) > size) {
      ++full;
      wait_until([&] { return !(first + n - __atomic_load_n(&q.read_dispatch_id, __ATOMIC_ACQUIRE) > size); });
    }
    auto* base = static_cast<hsa_kernel_dispatch_packet_t*>(q.hsa_queue.base_address);
    for (std::uint32_t i = 0; i < n; ++i) {
      hsa_kernel_dispatch_packet_t* p = base + ((first + i) & (size - 1));
      const hsa_kernel_dispatch_packet_t& s = src[i];
      if constexpr (Body == body_copy::fields) {
        p->workgroup_size_x = s.workgroup_size_x;
        p->workgroup_size_y = s.workgroup_size_y;
        p->workgroup_size_z = s.workgroup_size_z;
        p->reserved0 = s.reserved0;
        p->grid_size_x = s.grid_size_x;
        p->grid_size_y = s.grid_size_y;
        p->grid_size_z = s.grid_size_z;
        p->private_segment_size = s.private_segment_size;
        p->group_segment_size = s.group_segment_size;
        p->kernel_object = s.kernel_object;
        p->kernarg_address = s.kernarg_address;
        p->reserved2 = s.reserved2;
        p->completion_signal = s.completion_signal;
      } else {
        std::memcpy(reinterpret_cast<unsigned char*>(p) + 4, reinterpret_cast<const unsigned char*>(&s) + 4, 60);
      }
      std::uint32_t header_setup;
      std::memcpy(&header_setup, &s, 4);
      __atomic_store_n(reinterpret_cast<std::uint32_t*>(p), header_setup, __ATOMIC_RELEASE);
    }
    __atomic_store_n(&q.write_dispatch_id, first + n, __ATOMIC_RELEASE);
    __atomic_store_n(&r_.doorbell, first + n - 1, __ATOMIC_RELEASE);
  }

  hsa_ring& r_;
  hsa_kernel_dispatch_packet_t prebuilt_[capacity];
};

// A lock-protected ring over the same memory layout; correct, with the publication order right.
class mutex_ring {
 public:
  explicit mutex_ring(hsa_ring& r) noexcept : r_(r) {}

  void publish(const dispatch_desc& d, std::uint32_t n, std::uint64_t& full) {
    std::lock_guard lock(m_);
    amd_queue_t& q = r_.queue;
    const std::uint32_t size = q.hsa_queue.size;
    const std::uint64_t first = write_;
    if (first + n - __atomic_load_n(&q.read_dispatch_id, __ATOMIC_ACQUIRE) > size) {
      ++full;
      wait_until([&] { return !(first + n - __atomic_load_n(&q.read_dispatch_id, __ATOMIC_ACQUIRE) > size); });
    }
    auto* base = static_cast<hsa_kernel_dispatch_packet_t*>(q.hsa_queue.base_address);
    for (std::uint32_t i = 0; i < n; ++i) {
      hsa_kernel_dispatch_packet_t packet{};
      packet.workgroup_size_x = d.workgroup_x;
      packet.workgroup_size_y = packet.workgroup_size_z = 1;
      packet.grid_size_x = d.grid_x;
      packet.grid_size_y = packet.grid_size_z = 1;
      packet.kernel_object = d.kernel_object;
      packet.kernarg_address = reinterpret_cast<void*>(d.kernarg_address);
      packet.completion_signal.handle = d.completion_signal;
      hsa_kernel_dispatch_packet_t* p = base + ((first + i) & (size - 1));
      std::memcpy(reinterpret_cast<unsigned char*>(p) + 4, reinterpret_cast<const unsigned char*>(&packet) + 4, 60);
      __atomic_store_n(reinterpret_cast<std::uint32_t*>(p), hsa_dispatch_header | (std::uint32_t{hsa_dispatch_setup} << 16),
                       __ATOMIC_RELEASE);
    }
    write_ = first + n;
    __atomic_store_n(&q.write_dispatch_id, write_, __ATOMIC_RELEASE);
    __atomic_store_n(&r_.doorbell, write_ - 1, __ATOMIC_RELEASE);
  }

 private:
  hsa_ring& r_;
  std::mutex m_;
  std::uint64_t write_ = 0;
};

// INCORRECT on purpose (see the header comment): one memcpy of all 64 bytes, header included.
class naive_memcpy {
 public:
  explicit naive_memcpy(hsa_ring& r) noexcept : r_(r) {}

  AQUEDUCT_ALWAYS_INLINE void publish(const dispatch_desc& d, std::uint32_t n, std::uint64_t& full) noexcept {
    amd_queue_t& q = r_.queue;
    const std::uint32_t size = q.hsa_queue.size;
    const std::uint64_t first = write_;
    if (first + n - __atomic_load_n(&q.read_dispatch_id, __ATOMIC_ACQUIRE) > size) {
      ++full;
      wait_until([&] { return !(first + n - __atomic_load_n(&q.read_dispatch_id, __ATOMIC_ACQUIRE) > size); });
    }
    auto* base = static_cast<hsa_kernel_dispatch_packet_t*>(q.hsa_queue.base_address);
    for (std::uint32_t i = 0; i < n; ++i) {
      hsa_kernel_dispatch_packet_t packet{};
      packet.header = hsa_dispatch_header;
      packet.setup = hsa_dispatch_setup;
      packet.workgroup_size_x = d.workgroup_x;
      packet.workgroup_size_y = packet.workgroup_size_z = 1;
      packet.grid_size_x = d.grid_x;
      packet.grid_size_y = packet.grid_size_z = 1;
      packet.kernel_object = d.kernel_object;
      packet.kernarg_address = reinterpret_cast<void*>(d.kernarg_address);
      packet.completion_signal.handle = d.completion_signal;
      std::memcpy(base + ((first + i) & (size - 1)), &packet, sizeof packet);  // header with the body: WRONG
    }
    write_ = first + n;
    __atomic_store_n(&q.write_dispatch_id, write_, __ATOMIC_RELAXED);
    __atomic_store_n(&r_.doorbell, write_ - 1, __ATOMIC_RELAXED);
  }

 private:
  hsa_ring& r_;
  std::uint64_t write_ = 0;
};

}  // namespace bench
