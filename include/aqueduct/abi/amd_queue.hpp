// aqueduct/abi/amd_queue.hpp — `hsa_queue_t` (40 B) embedded in `amd_queue_t` (256 B).
//
// Layer: abi. The queue descriptor a KFD AQL queue's read/write pointers point into:
// create_queue's write_pointer_address = &write_dispatch_id, read_pointer_address =
// &read_dispatch_id (spec/packets.md §5.4–5.5, ROCm 5.2.3 layout; ROCm >= 6 renames some
// scratch fields and is not described here).
// Thread safety: plain data. write_dispatch_id (producer) and read_dispatch_id (packet
// processor) are shared between threads/agents: access them only through std::atomic_ref.
#pragma once

#include <aqueduct/core/bits.hpp>

#include <cstddef>
#include <cstdint>

namespace aqueduct::abi {

// spec/packets.md §5.4 (hsa.h hsa_queue_type_t, hsa_queue_feature_t).
enum class hsa_queue_type : std::uint32_t { multi = 0, single = 1, cooperative = 2 };
namespace hsa_queue_feature {
inline constexpr std::uint32_t kernel_dispatch = 1;
inline constexpr std::uint32_t agent_dispatch = 2;
}  // namespace hsa_queue_feature

// spec/packets.md §5.4 (hsa.h hsa_queue_t, HSA_LARGE_MODEL).
struct hsa_queue {
  std::uint32_t type;  // hsa_queue_type
  std::uint32_t features;
  std::uint64_t base_address;     // ring VA
  std::uint64_t doorbell_signal;  // signal handle
  std::uint32_t size;             // in packets, a power of two
  std::uint32_t reserved1;
  std::uint64_t id;
};

// amd_queue_t.queue_properties bits (spec/packets.md §5.4; amd_hsa_queue.h).
namespace amd_queue_properties {
using enable_trap_handler = bitflag<0>;
using is_ptr64 = bitflag<1>;
using enable_trap_handler_debug_sgprs = bitflag<2>;
using enable_profiling = bitflag<3>;
using use_scratch_once = bitflag<4>;
}  // namespace amd_queue_properties

// spec/packets.md §5.4 (amd_hsa_queue.h amd_queue_t, ROCm 5.2.3).
struct alignas(64) amd_queue {
  hsa_queue hsa;
  std::uint32_t reserved1[4];
  std::uint64_t write_dispatch_id;  // producer: next free packet index (monotonic)
  std::uint32_t group_segment_aperture_base_hi;
  std::uint32_t private_segment_aperture_base_hi;
  std::uint32_t max_cu_id;
  std::uint32_t max_wave_id;
  std::uint64_t max_legacy_doorbell_dispatch_id_plus_1;
  std::uint32_t legacy_doorbell_lock;
  std::uint32_t reserved2[9];
  std::uint64_t read_dispatch_id;  // packet processor: index of the next packet to consume
  std::uint32_t read_dispatch_id_field_base_byte_offset;
  std::uint32_t compute_tmpring_size;
  std::uint32_t scratch_resource_descriptor[4];
  std::uint64_t scratch_backing_memory_location;
  std::uint64_t scratch_backing_memory_byte_size;
  std::uint32_t scratch_wave64_lane_byte_size;
  std::uint32_t queue_properties;  // amd_queue_properties
  std::uint32_t reserved3[2];
  std::uint64_t queue_inactive_signal;
  std::uint32_t reserved4[14];
};

static_assert(sizeof(hsa_queue) == 40 && alignof(hsa_queue) == 8);
static_assert(offsetof(hsa_queue, type) == 0);
static_assert(offsetof(hsa_queue, features) == 4);
static_assert(offsetof(hsa_queue, base_address) == 8);
static_assert(offsetof(hsa_queue, doorbell_signal) == 16);
static_assert(offsetof(hsa_queue, size) == 24);
static_assert(offsetof(hsa_queue, reserved1) == 28);
static_assert(offsetof(hsa_queue, id) == 32);

static_assert(sizeof(amd_queue) == 256 && alignof(amd_queue) == 64);
static_assert(offsetof(amd_queue, hsa) == 0);
static_assert(offsetof(amd_queue, reserved1) == 40);
static_assert(offsetof(amd_queue, write_dispatch_id) == 56);
static_assert(offsetof(amd_queue, group_segment_aperture_base_hi) == 64);
static_assert(offsetof(amd_queue, private_segment_aperture_base_hi) == 68);
static_assert(offsetof(amd_queue, max_cu_id) == 72);
static_assert(offsetof(amd_queue, max_wave_id) == 76);
static_assert(offsetof(amd_queue, max_legacy_doorbell_dispatch_id_plus_1) == 80);
static_assert(offsetof(amd_queue, legacy_doorbell_lock) == 88);
static_assert(offsetof(amd_queue, reserved2) == 92);
static_assert(offsetof(amd_queue, read_dispatch_id) == 128);
static_assert(offsetof(amd_queue, read_dispatch_id_field_base_byte_offset) == 136);
static_assert(offsetof(amd_queue, compute_tmpring_size) == 140);
static_assert(offsetof(amd_queue, scratch_resource_descriptor) == 144);
static_assert(offsetof(amd_queue, scratch_backing_memory_location) == 160);
static_assert(offsetof(amd_queue, scratch_backing_memory_byte_size) == 168);
static_assert(offsetof(amd_queue, scratch_wave64_lane_byte_size) == 176);
static_assert(offsetof(amd_queue, queue_properties) == 180);
static_assert(offsetof(amd_queue, reserved3) == 184);
static_assert(offsetof(amd_queue, queue_inactive_signal) == 192);
static_assert(offsetof(amd_queue, reserved4) == 200);

inline constexpr std::size_t amd_queue_align = 64;  // amd_hsa_queue.h AMD_QUEUE_ALIGN_BYTES

}  // namespace aqueduct::abi
