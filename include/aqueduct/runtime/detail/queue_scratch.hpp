// aqueduct/runtime/detail/queue_scratch.hpp — the scratch (private segment) memory of an AQL
// queue (not API).
//
// Layer: runtime. A kernel with private memory (`.private_segment_fixed_size`: spills, private
// arrays) needs the queue's scratch: per wave `lanes × bytes per lane`, for every wave the
// device can run at once. The queue grows it on the first dispatch that needs more than it has,
// sized as ROCr sizes it — waves = compute units × max_slots_scratch_cu (topology), 64 lanes per
// wave, bytes per lane rounded to the WAVESIZE unit — and publishes it in the amd_queue fields
// the CP reads (scratch_backing_memory_location / _byte_size, scratch_wave64_lane_byte_size,
// compute_tmpring_size = WAVES[11:0] | WAVESIZE << 12, WAVESIZE in 1 KiB units on gfx9 and 256 B
// on gfx11+: spec/packets.md §1.5). The stores are relaxed; the dispatch's header release-store
// publishes them with the packet. A superseded buffer is kept until the queue is destroyed,
// because dispatches already in flight may still use it.
// Thread safety: `try_grow` takes the queue's scratch mutex; `lane_bytes` is read lock-free on
// the dispatch path (one compare when the scratch suffices).
#pragma once

#include <aqueduct/abi/amd_queue.hpp>
#include <aqueduct/arch/family.hpp>
#include <aqueduct/core/result.hpp>
#include <aqueduct/kfd/memory.hpp>
#include <aqueduct/runtime/detail/state.hpp>
#include <aqueduct/sync/atomics.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace aqueduct::runtime::detail {

struct queue_scratch {
  std::atomic<std::uint32_t> lane_bytes{0};  // bytes per work-item the current scratch covers
  std::mutex mu;
  std::vector<kfd::buffer<file_type>> buffers;  // the current one last
  // The current scratch (valid once lane_bytes > 0; written under mu before lane_bytes' release).
  std::uint64_t va = 0, bytes = 0;
  std::uint32_t waves = 0;  // TMPRING WAVES
};

// The scratch buffer resource (V#) gfx9 kernels get as their private segment buffer (gfx90a
// spills through it with buffer_* instructions), as ROCr's AqlQueue::InitScratchSRD writes it:
// base, STRIDE 0, SWIZZLE_ENABLE (word1 bit 31), NUM_RECORDS = the size; word3 DST_SEL X/Y/Z/W
// = 4/5/6/7, NUM_FORMAT UINT (4) [14:12], DATA_FORMAT 32 (4) [18:15], ELEMENT_SIZE 1 (4 bytes)
// [20:19], INDEX_STRIDE 3 (64 lanes) [22:21], ADD_TID_ENABLE [23], TYPE buffer (0) [31:30].
[[nodiscard]] constexpr std::array<std::uint32_t, 4> gfx9_scratch_srd(std::uint64_t va, std::uint64_t bytes) noexcept {
  return {static_cast<std::uint32_t>(va), static_cast<std::uint32_t>((va >> 32) & 0xFFFFu) | (1u << 31),
          static_cast<std::uint32_t>(bytes > 0xFFFFFFFFu ? 0xFFFFFFFFu : bytes),
          4u | 5u << 3 | 6u << 6 | 7u << 9 | 4u << 12 | 4u << 15 | 1u << 19 | 3u << 21 | 1u << 23};
}
[[nodiscard]] constexpr bool is_gfx9(arch::family f) noexcept {
  return f == arch::family::gfx9 || f == arch::family::gfx90a || f == arch::family::gfx94x;
}

// WAVESIZE unit of COMPUTE_TMPRING_SIZE (spec/packets.md §1.5).
[[nodiscard]] constexpr std::uint32_t tmpring_wavesize_unit(arch::family f) noexcept {
  return f == arch::family::gfx11 || f == arch::family::gfx12 ? 256u : 1024u;
}

// Makes the queue's scratch cover `needed` bytes per work-item; an AQL queue (`q`) also gets it in
// its amd_queue, a PM4 queue sends COMPUTE_DISPATCH_SCRATCH_BASE / TMPRING with each dispatch.
[[nodiscard]] inline result<void> try_grow_scratch(queue_scratch& s, agent_state& a, std::uint32_t needed,
                                                   abi::amd_queue* q = nullptr) {
  const arch::family fam = a.fam;
  std::lock_guard lock(s.mu);
  if (s.lane_bytes.load(std::memory_order_acquire) >= needed) return ok();  // another thread grew it
  const auto& p = a.node->properties;
  const std::uint64_t cus = p.simd_per_cu ? p.simd_count / p.simd_per_cu : 0;
  const std::uint64_t slots = p.max_slots_scratch_cu ? p.max_slots_scratch_cu : 32;
  if (cus == 0) return failure(errc::invalid_argument, "the agent's topology reports no compute units: cannot size scratch");
  const std::uint32_t unit = tmpring_wavesize_unit(fam);
  const std::uint32_t lane_unit = unit / 64;
  const std::uint32_t lane = (needed + lane_unit - 1) / lane_unit * lane_unit;
  const std::uint64_t waves = cus * slots;
  const std::uint64_t bytes = waves * 64 * lane;
  AQUEDUCT_TRY(auto buf, kfd::buffer<file_type>::try_allocate(a.sys->ref(), *a.node, byte_count(bytes), kfd::memory_use::device));
  const std::uint32_t wavesize = 64 * lane / unit;
  s.waves = static_cast<std::uint32_t>(std::min<std::uint64_t>(waves, 0xFFF));
  s.va = buf.va().value;
  s.bytes = bytes;
  if (q != nullptr) {
    sync::atomic_store(q->scratch_backing_memory_location, buf.va().value, std::memory_order_relaxed);
    sync::atomic_store(q->scratch_backing_memory_byte_size, bytes, std::memory_order_relaxed);
    sync::atomic_store(q->scratch_wave64_lane_byte_size, lane, std::memory_order_relaxed);
    sync::atomic_store(q->compute_tmpring_size, s.waves | (wavesize << 12), std::memory_order_relaxed);
    if (is_gfx9(fam)) {  // the private segment buffer the CP hands gfx9 kernels (s[0:3])
      const auto srd = gfx9_scratch_srd(s.va, bytes);
      for (int i = 0; i < 4; ++i) sync::atomic_store(q->scratch_resource_descriptor[i], srd[i], std::memory_order_relaxed);
    }
  }
  s.buffers.push_back(std::move(buf));
  s.lane_bytes.store(lane, std::memory_order_release);
  return ok();
}

}  // namespace aqueduct::runtime::detail
