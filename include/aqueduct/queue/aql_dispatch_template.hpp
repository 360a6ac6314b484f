// aqueduct/queue/aql_dispatch_template.hpp — the parts of an AQL kernel-dispatch packet fixed by
// the kernel, the workgroup shape and the dispatch options, packed once into the packet's 64-bit
// words; a dispatch adds the grid, its kernarg address and its completion signal, and is written
// straight into its slot (aql_queue::try_submit_in_place).
//
// Layer: queue. The AQL counterpart of pm4::dispatch_template (issue 11). Used by every runtime
// AQL dispatch (runtime::queue builds one inline from the kernel, so its constant parts fold) and
// held by a prepared launch (runtime::queue::try_prepare), built once per kernel and block shape.
// Packet layout: hsa.h hsa_kernel_dispatch_packet_t (spec/packets.md §5.2), little-endian words:
//   0: header | setup << 16 | workgroup_size_x << 32 | workgroup_size_y << 48
//   1: workgroup_size_z | reserved0 (0) << 16 | grid_size_x << 32
//   2: grid_size_y | grid_size_z << 32
//   3: private_segment_size | group_segment_size << 32
//   4: kernel_object, 5: kernarg_address, 6: reserved2 (0), 7: completion_signal
// setup's dimensions field is the highest dimension whose grid or workgroup size is > 1, the
// rule queue/aql_packets.hpp make_packet applies (the block's part is fixed here, the grid's
// is taken per dispatch).
// Thread safety: a value; read-only once built.
#pragma once

#include <aqueduct/abi/aql.hpp>
#include <aqueduct/config.hpp>
#include <aqueduct/queue/aql_packets.hpp>

#include <array>
#include <bit>
#include <cstdint>

namespace aqueduct::ring {

struct aql_dispatch_template {
  std::uint64_t word0 = 0;     // header | workgroup x, y (setup added per dispatch)
  std::uint64_t wg_z = 0;      // word 1 without the grid
  std::uint64_t segments = 0;  // word 3
  std::uint64_t object = 0;    // word 4
  std::uint32_t block_dims = 1;

  // `group_bytes`: static LDS + the dispatch's dynamic LDS.
  [[nodiscard]] static AQUEDUCT_ALWAYS_INLINE constexpr aql_dispatch_template of(std::uint64_t kernel_object, std::uint32_t group_bytes,
                                                                      std::uint32_t private_bytes, std::uint16_t bx,
                                                                      std::uint16_t by, std::uint16_t bz, bool barrier,
                                                                      fences scopes) noexcept {
    using u64 = std::uint64_t;
    aql_dispatch_template l;
    l.word0 = u64{abi::make_header(abi::packet_type::kernel_dispatch, barrier, scopes.acquire, scopes.release)} |
              u64{bx} << 32 | u64{by} << 48;
    l.wg_z = bz;
    l.segments = u64{private_bytes} | u64{group_bytes} << 32;
    l.object = kernel_object;
    l.block_dims = bz > 1 ? 3 : by > 1 ? 2 : 1;
    return l;
  }

  // The dispatch over grid (gx, gy, gz) written into `slot`: bytes 4..63 with plain stores (one
  // u32, seven u64: typed stores, which ThreadSanitizer sees, unlike an inlined memcpy);
  // returns the header|setup dword for the caller to release-store last.
  [[nodiscard]] AQUEDUCT_ALWAYS_INLINE std::uint32_t write(abi::aql_slot& slot, std::uint32_t gx, std::uint32_t gy,
                                                           std::uint32_t gz, std::uint64_t kernarg,
                                                           std::uint64_t signal) const noexcept {
    using u64 = std::uint64_t;
    const std::uint32_t grid_dims = gz > 1 ? 3 : gy > 1 ? 2 : 1;
    const std::uint32_t dims = grid_dims > block_dims ? grid_dims : block_dims;
    auto* w = reinterpret_cast<u64*>(slot.bytes);
    reinterpret_cast<std::uint32_t*>(slot.bytes)[1] = static_cast<std::uint32_t>(word0 >> 32);
    w[1] = wg_z | u64{gx} << 32;
    w[2] = u64{gy} | u64{gz} << 32;
    w[3] = segments;
    w[4] = object;
    w[5] = kernarg;
    w[6] = 0;
    w[7] = signal;
    return static_cast<std::uint32_t>(word0) | std::uint32_t{abi::make_dispatch_setup(dims)} << 16;
  }

  // The packet of one dispatch over grid (gx, gy, gz).
  [[nodiscard]] AQUEDUCT_ALWAYS_INLINE abi::kernel_dispatch_packet packet(std::uint32_t gx, std::uint32_t gy, std::uint32_t gz,
                                                                          std::uint64_t kernarg, std::uint64_t signal) const noexcept {
    using u64 = std::uint64_t;
    const std::uint32_t grid_dims = gz > 1 ? 3 : gy > 1 ? 2 : 1;
    const std::uint32_t dims = grid_dims > block_dims ? grid_dims : block_dims;
    const std::array<u64, 8> w = {word0 | u64{abi::make_dispatch_setup(dims)} << 16,
                                  wg_z | u64{gx} << 32,
                                  u64{gy} | u64{gz} << 32,
                                  segments,
                                  object,
                                  kernarg,
                                  0,
                                  signal};
    return std::bit_cast<abi::kernel_dispatch_packet>(w);
  }
};

}  // namespace aqueduct::ring
