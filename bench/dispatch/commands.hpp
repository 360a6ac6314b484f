// bench/dispatch/commands.hpp — PM4 dispatch and SDMA copy enqueue: aqueduct's typed queues
// (ring::pm4_queue, ring::sdma_queue) against the same dwords written by hand, producer only,
// over ordinary memory (no engine: retire_all() moves the read pointer, untimed).
//
// pm4_dispatch: one compute dispatch command = ACQUIRE_MEM (invalidate) + the SH register setup
//   (program address, RSRC1/2/3, TMPRING_SIZE, scratch base, RESTART_X/Y/Z, user SGPRs, resource
//   limits, START/NUM_THREAD) + DISPATCH_DIRECT + EVENT_WRITE(CS_PARTIAL_FLUSH) + a RELEASE_MEM
//   that writes a 32-bit completion value — what tinygrad's AMDComputeQueue emits for a dispatch
//   and its signal (spec/packets.md §2.1–2.2) — then the write pointer and the doorbell.
//   aqueduct: ring::pm4_queue<gfx11_target>::try_dispatch(params, completion).
//   peer: the same 65 dwords written one by one as Linux's amdgpu_ring_write does
//   (`ring[wptr++ & mask] = v`), with PACKET3 headers and register offsets as literals,
//   computed per dispatch from the kernel's descriptor fields, then the write pointer and the
//   doorbell (release stores).
// sdma_copy: one 4 KiB COPY_LINEAR (SDMA 6, gfx11) then write pointer and doorbell.
//   aqueduct: ring::sdma_queue<v6_0>::try_copy. peer: the 7 dwords by hand.
// Both peers are checked at start-up to write exactly aqueduct's dwords (same_stream()), so the
// two sides do the same work.
#pragma once

#include "consumer.hpp"

#include <aqueduct/arch/target.hpp>
#include <aqueduct/queue/pm4_queue.hpp>
#include <aqueduct/queue/sdma_queue.hpp>

#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

namespace bench {

inline constexpr std::uint32_t pm4_ring_dwords = 1u << 16;
inline constexpr std::uint64_t sdma_ring_bytes = 1u << 16;

// The dispatch every PM4 variant emits: a gfx11 kernel with the dispatch pointer and kernarg
// pointer in user SGPRs (4 SGPRs), 256 work-items in workgroups of 64, completion value 1.
struct pm4_inputs {
  aqueduct::abi::kernel_descriptor kd{};
  std::uint64_t kd_va = 0x7f0000010000;
  std::uint64_t dispatch_ptr = 0x7f0000030000;
  std::uint64_t kernarg = 0x7f0000020000;
  std::uint64_t signal = 0x7f0000040000;
  std::uint32_t groups = 4, block = 64;
  pm4_inputs() {
    namespace kcp = aqueduct::abi::kernel_code_properties;
    kd.kernel_code_properties =
        static_cast<std::uint16_t>(kcp::enable_sgpr_dispatch_ptr::set(0, 1) | kcp::enable_sgpr_kernarg_segment_ptr::set(0, 1));
    kd.kernel_code_entry_byte_offset = 256;
    kd.compute_pgm_rsrc1 = 0x60af0000;
    kd.compute_pgm_rsrc2 = 0x9c;
  }
};

struct pm4_ring_memory {
  pm4_ring_memory() : ring(static_cast<std::uint32_t*>(::operator new(pm4_ring_dwords * 4, std::align_val_t{64}))) {
    std::memset(ring, 0, pm4_ring_dwords * 4);
  }
  ~pm4_ring_memory() { ::operator delete(ring, std::align_val_t{64}); }
  pm4_ring_memory(const pm4_ring_memory&) = delete;
  pm4_ring_memory& operator=(const pm4_ring_memory&) = delete;
  std::uint32_t* ring;
  alignas(64) std::uint64_t wptr = 0;
  alignas(64) std::uint64_t rptr = 0;
  alignas(64) std::uint64_t doorbell = 0;
  void retire_all() { __atomic_store_n(&rptr, __atomic_load_n(&wptr, __ATOMIC_ACQUIRE), __ATOMIC_RELEASE); }
  [[nodiscard]] bool room(std::uint64_t dwords) const {
    return __atomic_load_n(&wptr, __ATOMIC_RELAXED) + dwords - __atomic_load_n(&rptr, __ATOMIC_ACQUIRE) <= pm4_ring_dwords;
  }
};

struct aqueduct_pm4_case {
  using queue_type = aqueduct::ring::pm4_queue<aqueduct::arch::gfx11_target>;
  aqueduct_pm4_case()
      : q(aqueduct::ring::pm4_queue_memory{m.ring, pm4_ring_dwords, &m.wptr, &m.rptr}, aqueduct::ring::doorbell_ref(&m.doorbell)) {}
  pm4_ring_memory m;
  pm4_inputs in;
  queue_type q;
  void retire_all() { m.retire_all(); }
  // The measured part, as a user of the queue layer writes a dispatch with a completion value.
  AQUEDUCT_ALWAYS_INLINE void publish_with_room(std::uint32_t n) {
    namespace pm4 = aqueduct::ring::pm4;
    for (std::uint32_t i = 0; i < n; ++i) {
      pm4::dispatch_params p;
      p.kd = &in.kd;
      p.kd_va = aqueduct::gpu_va(in.kd_va);
      p.grid = {in.groups, 1, 1};
      p.block = {in.block, 1, 1};
      p.dispatch_ptr = aqueduct::gpu_va(in.dispatch_ptr);
      p.kernarg = aqueduct::gpu_va(in.kernarg);
      aqueduct::ring::pm4_completion c;
      c.address = aqueduct::gpu_va(in.signal);
      c.value = 1;
      (void)q.try_dispatch(p, c);
    }
  }
};

// The same dispatch from a template built once (pm4::dispatch_template, as tinygrad prebuilds its
// command queues): only grid, kernarg, dispatch pointer and completion go in per dispatch.
struct aqueduct_pm4_prebuilt_case {
  using queue_type = aqueduct::ring::pm4_queue<aqueduct::arch::gfx11_target>;
  aqueduct_pm4_prebuilt_case()
      : q(aqueduct::ring::pm4_queue_memory{m.ring, pm4_ring_dwords, &m.wptr, &m.rptr}, aqueduct::ring::doorbell_ref(&m.doorbell)) {
    aqueduct::ring::pm4::dispatch_params p;
    p.kd = &in.kd;
    p.kd_va = aqueduct::gpu_va(in.kd_va);
    p.grid = {in.groups, 1, 1};
    p.block = {in.block, 1, 1};
    p.dispatch_ptr = aqueduct::gpu_va(in.dispatch_ptr);
    p.kernarg = aqueduct::gpu_va(in.kernarg);
    aqueduct::ring::pm4_completion c;
    c.address = aqueduct::gpu_va(in.signal);
    c.value = 1;
    t = aqueduct::ring::pm4::dispatch_template<aqueduct::arch::gfx11_target>(p, c);
  }
  pm4_ring_memory m;
  pm4_inputs in;
  queue_type q;
  aqueduct::ring::pm4::dispatch_template<aqueduct::arch::gfx11_target> t;
  void retire_all() { m.retire_all(); }
  AQUEDUCT_ALWAYS_INLINE void publish_with_room(std::uint32_t n) {
    for (std::uint32_t i = 0; i < n; ++i)
      (void)q.try_dispatch(t, {.grid = {in.groups, 1, 1},
                               .kernarg = aqueduct::gpu_va(in.kernarg),
                               .dispatch_ptr = aqueduct::gpu_va(in.dispatch_ptr),
                               .completion_address = aqueduct::gpu_va(in.signal),
                               .completion_value = 1});
  }
};

// PACKET3 header (type 3, count = body dwords - 1, opcode), as amdgpu/tinygrad's PACKET3().
constexpr std::uint32_t packet3(std::uint32_t op, std::uint32_t body_dwords) noexcept {
  return (3u << 30) | ((body_dwords - 1) << 16) | (op << 8);
}

struct peer_pm4_case {
  pm4_ring_memory m;
  pm4_inputs in;
  std::uint64_t w = 0;  // the producer's write pointer (dwords)
  void retire_all() { m.retire_all(); }
  AQUEDUCT_ALWAYS_INLINE void publish_with_room(std::uint32_t n) {
    for (std::uint32_t i = 0; i < n; ++i) emit(in.groups, in.block, in.kernarg, in.signal, 1);
  }

  AQUEDUCT_ALWAYS_INLINE void emit(std::uint32_t groups, std::uint32_t block, std::uint64_t kernarg, std::uint64_t signal,
                                   std::uint32_t value) {
    constexpr std::uint32_t dwords = 65;
    if (!m.room(dwords)) [[unlikely]]
      wait_until([&] { return m.room(dwords); });
    std::uint32_t* r = m.ring;
    constexpr std::uint64_t mask = pm4_ring_dwords - 1;
    std::uint64_t p = w;
    auto put = [&](std::uint32_t v) { r[p++ & mask] = v; };
    const aqueduct::abi::kernel_descriptor& kd = in.kd;
    // ACQUIRE_MEM (gfx10+): coher_cntl, size, size_hi, base, base_hi, poll interval, GCR_CNTL
    // (invalidate the instruction, scalar, vector and L2 caches before the dispatch).
    put(packet3(0x58, 7)); put(0); put(0xffffffffu); put(0x00ffffffu); put(0); put(0); put(0xa); put(0x3f0);
    const std::uint64_t entry = (in.kd_va + static_cast<std::uint64_t>(kd.kernel_code_entry_byte_offset)) >> 8;
    // SET_SH_REG: offsets from the SH register base (0x2c00 dwords).
    put(packet3(0x76, 3)); put(0x20c); put(static_cast<std::uint32_t>(entry)); put(static_cast<std::uint32_t>(entry >> 32));
    const std::uint32_t lds = (kd.group_segment_fixed_size + 511) / 512;  // gfx11 LDS granule: 512 bytes
    put(packet3(0x76, 3)); put(0x212); put(kd.compute_pgm_rsrc1); put((kd.compute_pgm_rsrc2 & ~(0x1ffu << 15)) | (lds << 15));
    put(packet3(0x76, 2)); put(0x228); put(kd.compute_pgm_rsrc3);
    put(packet3(0x76, 2)); put(0x218); put(0);  // COMPUTE_TMPRING_SIZE: no scratch
    put(packet3(0x76, 3)); put(0x210); put(0); put(0);
    put(packet3(0x76, 4)); put(0x21b); put(0); put(0); put(0);
    put(packet3(0x76, 5)); put(0x240);  // COMPUTE_USER_DATA_0..3: dispatch pointer, kernarg pointer
    put(static_cast<std::uint32_t>(in.dispatch_ptr)); put(static_cast<std::uint32_t>(in.dispatch_ptr >> 32));
    put(static_cast<std::uint32_t>(kernarg)); put(static_cast<std::uint32_t>(kernarg >> 32));
    put(packet3(0x76, 2)); put(0x215); put(0);
    put(packet3(0x76, 9)); put(0x204); put(0); put(0); put(0); put(block); put(1); put(1); put(0); put(0);
    put(packet3(0x15, 4)); put(groups); put(1); put(1); put(5);  // DISPATCH_DIRECT, initiator
    put(packet3(0x46, 1)); put(0x407);                           // EVENT_WRITE CS_PARTIAL_FLUSH
    // RELEASE_MEM end of pipe with cache write-back, 32-bit data to `signal`.
    put(packet3(0x49, 7)); put(0x0070f514); put(0x20000000);
    put(static_cast<std::uint32_t>(signal)); put(static_cast<std::uint32_t>(signal >> 32)); put(value); put(0); put(0);
    w = p;
    __atomic_store_n(&m.wptr, w, __ATOMIC_RELEASE);
    __atomic_store_n(&m.doorbell, w, __ATOMIC_RELEASE);
  }
};

struct sdma_ring_memory {
  sdma_ring_memory() : ring(static_cast<std::uint32_t*>(::operator new(sdma_ring_bytes, std::align_val_t{64}))) {
    std::memset(ring, 0, sdma_ring_bytes);
  }
  ~sdma_ring_memory() { ::operator delete(ring, std::align_val_t{64}); }
  sdma_ring_memory(const sdma_ring_memory&) = delete;
  sdma_ring_memory& operator=(const sdma_ring_memory&) = delete;
  std::uint32_t* ring;
  alignas(64) std::uint64_t wptr = 0;
  alignas(64) std::uint64_t rptr = 0;
  alignas(64) std::uint64_t doorbell = 0;
  void retire_all() { __atomic_store_n(&rptr, __atomic_load_n(&wptr, __ATOMIC_ACQUIRE), __ATOMIC_RELEASE); }
};

inline constexpr std::uint64_t sdma_copy_bytes = 4096;
inline constexpr std::uint64_t sdma_dst = 0x7f0000100000, sdma_src = 0x7f0000200000;

struct aqueduct_sdma_case {
  aqueduct_sdma_case()
      : q(aqueduct::ring::sdma_queue_memory{m.ring, sdma_ring_bytes, &m.rptr, &m.wptr}, aqueduct::ring::doorbell_ref(&m.doorbell)) {}
  sdma_ring_memory m;
  aqueduct::ring::sdma_queue<aqueduct::abi::sdma::engine::v6_0> q;
  void retire_all() { m.retire_all(); }
  AQUEDUCT_ALWAYS_INLINE void publish_with_room(std::uint32_t n) {
    for (std::uint32_t i = 0; i < n; ++i)
      (void)q.try_copy(aqueduct::gpu_va(sdma_dst), aqueduct::gpu_va(sdma_src), sdma_copy_bytes);
  }
};

struct peer_sdma_case {
  sdma_ring_memory m;
  std::uint64_t w = 0;  // bytes
  void retire_all() { m.retire_all(); }
  AQUEDUCT_ALWAYS_INLINE void publish_with_room(std::uint32_t n) {
    for (std::uint32_t i = 0; i < n; ++i) emit(sdma_dst, sdma_src, sdma_copy_bytes);
  }
  AQUEDUCT_ALWAYS_INLINE void emit(std::uint64_t dst, std::uint64_t src, std::uint64_t bytes) {
    constexpr std::uint64_t pkt = 7 * 4;
    if (w + pkt - __atomic_load_n(&m.rptr, __ATOMIC_ACQUIRE) > sdma_ring_bytes) [[unlikely]]
      wait_until([&] { return w + pkt - __atomic_load_n(&m.rptr, __ATOMIC_ACQUIRE) <= sdma_ring_bytes; });
    constexpr std::uint64_t mask = sdma_ring_bytes / 4 - 1;
    std::uint64_t p = w / 4;
    auto put = [&](std::uint32_t v) { m.ring[p++ & mask] = v; };
    put(0x00000001);  // SDMA_OP_COPY | SDMA_SUBOP_COPY_LINEAR << 8
    put(static_cast<std::uint32_t>(bytes - 1));
    put(0);
    put(static_cast<std::uint32_t>(src)); put(static_cast<std::uint32_t>(src >> 32));
    put(static_cast<std::uint32_t>(dst)); put(static_cast<std::uint32_t>(dst >> 32));
    w += pkt;
    __atomic_store_n(&m.wptr, w, __ATOMIC_RELEASE);
    __atomic_store_n(&m.doorbell, w, __ATOMIC_RELEASE);
  }
};

// The peer writes the very dwords aqueduct writes (first command of each; "" if so, else where
// they differ).
inline std::string same_stream() {
  std::string why;
  {
    auto a = std::make_unique<aqueduct_pm4_case>();
    auto b = std::make_unique<peer_pm4_case>();
    a->publish_with_room(1);
    b->publish_with_room(1);
    if (a->m.wptr != b->m.wptr) why += "PM4: aqueduct wrote " + std::to_string(a->m.wptr) + " dwords, the peer " + std::to_string(b->m.wptr) + "; ";
    else
      for (std::uint64_t i = 0; i < a->m.wptr; ++i)
        if (a->m.ring[i] != b->m.ring[i]) {
          why += "PM4: dword " + std::to_string(i) + " differs; ";
          break;
        }
  }
  {
    auto a = std::make_unique<aqueduct_pm4_prebuilt_case>();
    auto b = std::make_unique<peer_pm4_case>();
    a->publish_with_room(2);
    b->publish_with_room(2);
    if (a->m.wptr != b->m.wptr || std::memcmp(a->m.ring, b->m.ring, a->m.wptr * 4) != 0) why += "PM4 prebuilt: the streams differ; ";
  }
  {
    auto a = std::make_unique<aqueduct_sdma_case>();
    auto b = std::make_unique<peer_sdma_case>();
    a->publish_with_room(1);
    b->publish_with_room(1);
    if (a->m.wptr != b->m.wptr || std::memcmp(a->m.ring, b->m.ring, a->m.wptr) != 0) why += "SDMA: the streams differ; ";
  }
  return why;
}

}  // namespace bench
