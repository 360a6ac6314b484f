// aqueduct/abi/aql.hpp — bit-exact AQL (HSA architected queuing language) packets.
//
// Layer: abi. Wire formats only: the 16-bit packet header and its fields, the packet types, the
// four HSA packets (kernel dispatch, agent dispatch, barrier-AND, barrier-OR) and AMD's
// vendor-specific barrier-value packet, each exactly 64 bytes (spec/packets.md §5.1–5.2, which
// restates Debian's hsa.h / hsa_ext_amd.h of ROCm 5.2.3). Signal handles are plain u64 GPU
// virtual addresses of an `amd_signal` (abi/amd_signal.hpp); 0 means "no signal".
// Thread safety: pure data and pure functions. Publishing a packet is the queue layer's job:
// the body is written first, then the header (or header|setup as one u32) with a release store.
#pragma once

#include <aqueduct/core/bits.hpp>

#include <cstddef>
#include <cstdint>

namespace aqueduct::abi {

// Every AQL packet occupies one 64-byte ring slot (spec/packets.md §5.2).
inline constexpr std::size_t aql_packet_size = 64;

// Header bits [7:0] (spec/packets.md §5.1; hsa.h hsa_packet_type_t).
enum class packet_type : std::uint8_t {
  vendor_specific = 0,
  invalid = 1,  // "processed, not yet reassigned": what the packet processor writes back
  kernel_dispatch = 2,
  barrier_and = 3,
  agent_dispatch = 4,
  barrier_or = 5,
};

// Acquire/release fence scope (spec/packets.md §5.1; hsa.h hsa_fence_scope_t). 3 is reserved.
enum class fence_scope : std::uint8_t { none = 0, agent = 1, system = 2 };

// Condition of a barrier-value packet (spec/packets.md §5.1; hsa.h hsa_signal_condition_t).
enum class signal_condition : std::uint32_t { eq = 0, ne = 1, lt = 2, gte = 3 };

// AmdFormat byte of a vendor-specific packet (spec/packets.md §5.2; hsa_ext_amd.h). 1 = PM4_IB
// is ROCr-internal and not in the 5.2.3 public header.
enum class amd_packet_format : std::uint8_t { pm4_ib = 1, barrier_value = 2 };

// Fields of the u16 header (spec/packets.md §5.1; hsa.h hsa_packet_header_t / _width_t).
namespace aql_header {
using type = bitfield<0, 8, std::uint16_t>;
using barrier = bitflag<8, std::uint16_t>;
using scacquire_fence_scope = bitfield<9, 2, std::uint16_t>;
using screlease_fence_scope = bitfield<11, 2, std::uint16_t>;
// Bits 15:13 are reserved and must be 0.
inline constexpr std::uint16_t defined_mask =
    type::mask | barrier::mask | scacquire_fence_scope::mask | screlease_fence_scope::mask;
}  // namespace aql_header

// Kernel dispatch `setup` field: dimensions [1:0] (1..3); other bits reserved (hsa.h).
namespace dispatch_setup {
using dimensions = bitfield<0, 2, std::uint16_t>;
}  // namespace dispatch_setup

// The header a producer publishes last.
[[nodiscard]] constexpr std::uint16_t make_header(packet_type t, bool barrier, fence_scope acquire,
                                                  fence_scope release) noexcept {
  return static_cast<std::uint16_t>(aql_header::type::put(static_cast<std::uint8_t>(t)) |
                                    aql_header::barrier::put(barrier ? 1u : 0u) |
                                    aql_header::scacquire_fence_scope::put(static_cast<std::uint8_t>(acquire)) |
                                    aql_header::screlease_fence_scope::put(static_cast<std::uint8_t>(release)));
}

// header | setup << 16: the first dword of a packet, published with ONE 32-bit release store so
// the consumer never sees a valid header with a stale setup (or reserved0/AmdFormat) half.
[[nodiscard]] constexpr std::uint32_t make_header_setup(std::uint16_t header, std::uint16_t setup) noexcept {
  return static_cast<std::uint32_t>(header) | (static_cast<std::uint32_t>(setup) << 16);
}

[[nodiscard]] constexpr std::uint16_t make_dispatch_setup(unsigned dimensions) noexcept {
  return dispatch_setup::dimensions::put(dimensions);
}

// A header taken apart (for decoding and diagnostics).
struct decoded_header {
  std::uint8_t type;  // raw: may be a reserved value (> 5)
  bool barrier;
  std::uint8_t acquire_scope;  // raw: 3 is reserved
  std::uint8_t release_scope;
  std::uint8_t reserved;  // bits 15:13
};

[[nodiscard]] constexpr decoded_header decode_header(std::uint16_t h) noexcept {
  return {static_cast<std::uint8_t>(aql_header::type::get(h)), aql_header::barrier::get(h) != 0,
          static_cast<std::uint8_t>(aql_header::scacquire_fence_scope::get(h)),
          static_cast<std::uint8_t>(aql_header::screlease_fence_scope::get(h)),
          static_cast<std::uint8_t>(h >> 13)};
}

[[nodiscard]] constexpr packet_type header_type(std::uint16_t h) noexcept {
  return static_cast<packet_type>(aql_header::type::get(h));
}

// spec/packets.md §5.2 (hsa.h hsa_kernel_dispatch_packet_t, HSA_LARGE_MODEL).
struct kernel_dispatch_packet {
  std::uint16_t header;
  std::uint16_t setup;
  std::uint16_t workgroup_size_x;
  std::uint16_t workgroup_size_y;
  std::uint16_t workgroup_size_z;
  std::uint16_t reserved0;
  std::uint32_t grid_size_x;
  std::uint32_t grid_size_y;
  std::uint32_t grid_size_z;
  std::uint32_t private_segment_size;
  std::uint32_t group_segment_size;
  std::uint64_t kernel_object;    // GPU VA of a 64-byte kernel descriptor
  std::uint64_t kernarg_address;  // GPU VA of the kernarg segment
  std::uint64_t reserved2;
  std::uint64_t completion_signal;  // amd_signal VA or 0
};

// spec/packets.md §5.2 (hsa.h hsa_agent_dispatch_packet_t).
struct agent_dispatch_packet {
  std::uint16_t header;
  std::uint16_t type;
  std::uint32_t reserved0;
  std::uint64_t return_address;
  std::uint64_t arg[4];
  std::uint64_t reserved2;
  std::uint64_t completion_signal;
};

// spec/packets.md §5.2 (hsa.h hsa_barrier_and_packet_t / hsa_barrier_or_packet_t: same layout).
struct barrier_and_packet {
  std::uint16_t header;
  std::uint16_t reserved0;
  std::uint32_t reserved1;
  std::uint64_t dep_signal[5];  // 0 entries are ignored
  std::uint64_t reserved2;
  std::uint64_t completion_signal;
};

struct barrier_or_packet {
  std::uint16_t header;
  std::uint16_t reserved0;
  std::uint32_t reserved1;
  std::uint64_t dep_signal[5];
  std::uint64_t reserved2;
  std::uint64_t completion_signal;
};

// spec/packets.md §5.2 (hsa_ext_amd.h hsa_amd_vendor_packet_header_t).
struct amd_vendor_packet_header {
  std::uint16_t header;  // type = vendor_specific
  std::uint8_t amd_format;  // amd_packet_format
  std::uint8_t reserved;
};

// spec/packets.md §5.2 (hsa_ext_amd.h hsa_amd_barrier_value_packet_t): stall until
// (signal.value & mask) <cond> value; a 0 signal handle is satisfied at once.
struct amd_barrier_value_packet {
  amd_vendor_packet_header header;
  std::uint32_t reserved0;
  std::uint64_t signal;
  std::int64_t value;
  std::int64_t mask;
  std::uint32_t cond;  // signal_condition
  std::uint32_t reserved1;
  std::uint64_t reserved2;
  std::uint64_t reserved3;
  std::uint64_t completion_signal;
};

// The vendor header's first dword as one u32 (header | AmdFormat << 16 | reserved << 24).
[[nodiscard]] constexpr std::uint32_t make_vendor_header(std::uint16_t header, amd_packet_format f) noexcept {
  return make_header_setup(header, static_cast<std::uint16_t>(static_cast<std::uint8_t>(f)));
}

// An untyped ring slot; the processor reads dword 0 first and then the typed view.
struct alignas(64) aql_slot {
  std::uint8_t bytes[aql_packet_size];
};

// Is the condition true? (hsa.h hsa_signal_condition_t semantics; values are signed.)
[[nodiscard]] constexpr bool condition_holds(signal_condition c, std::int64_t lhs, std::int64_t rhs) noexcept {
  switch (c) {
    case signal_condition::eq: return lhs == rhs;
    case signal_condition::ne: return lhs != rhs;
    case signal_condition::lt: return lhs < rhs;
    case signal_condition::gte: return lhs >= rhs;
  }
  return false;
}

#define AQUEDUCT_ABI_CHECK_PACKET(T) \
  static_assert(sizeof(T) == aql_packet_size && alignof(T) == 8, #T " must be 64 bytes, 8-aligned")
AQUEDUCT_ABI_CHECK_PACKET(kernel_dispatch_packet);
AQUEDUCT_ABI_CHECK_PACKET(agent_dispatch_packet);
AQUEDUCT_ABI_CHECK_PACKET(barrier_and_packet);
AQUEDUCT_ABI_CHECK_PACKET(barrier_or_packet);
AQUEDUCT_ABI_CHECK_PACKET(amd_barrier_value_packet);
#undef AQUEDUCT_ABI_CHECK_PACKET
static_assert(sizeof(aql_slot) == 64 && alignof(aql_slot) == 64);
static_assert(sizeof(amd_vendor_packet_header) == 4);

// Offsets: spec/packets.md §5.2 table ("offsets measured").
static_assert(offsetof(kernel_dispatch_packet, setup) == 2);
static_assert(offsetof(kernel_dispatch_packet, workgroup_size_x) == 4);
static_assert(offsetof(kernel_dispatch_packet, workgroup_size_y) == 6);
static_assert(offsetof(kernel_dispatch_packet, workgroup_size_z) == 8);
static_assert(offsetof(kernel_dispatch_packet, reserved0) == 10);
static_assert(offsetof(kernel_dispatch_packet, grid_size_x) == 12);
static_assert(offsetof(kernel_dispatch_packet, grid_size_y) == 16);
static_assert(offsetof(kernel_dispatch_packet, grid_size_z) == 20);
static_assert(offsetof(kernel_dispatch_packet, private_segment_size) == 24);
static_assert(offsetof(kernel_dispatch_packet, group_segment_size) == 28);
static_assert(offsetof(kernel_dispatch_packet, kernel_object) == 32);
static_assert(offsetof(kernel_dispatch_packet, kernarg_address) == 40);
static_assert(offsetof(kernel_dispatch_packet, reserved2) == 48);
static_assert(offsetof(kernel_dispatch_packet, completion_signal) == 56);
static_assert(offsetof(agent_dispatch_packet, type) == 2);
static_assert(offsetof(agent_dispatch_packet, reserved0) == 4);
static_assert(offsetof(agent_dispatch_packet, return_address) == 8);
static_assert(offsetof(agent_dispatch_packet, arg) == 16);
static_assert(offsetof(agent_dispatch_packet, reserved2) == 48);
static_assert(offsetof(agent_dispatch_packet, completion_signal) == 56);
static_assert(offsetof(barrier_and_packet, reserved0) == 2);
static_assert(offsetof(barrier_and_packet, reserved1) == 4);
static_assert(offsetof(barrier_and_packet, dep_signal) == 8);
static_assert(offsetof(barrier_and_packet, reserved2) == 48);
static_assert(offsetof(barrier_and_packet, completion_signal) == 56);
static_assert(offsetof(barrier_or_packet, dep_signal) == 8);
static_assert(offsetof(barrier_or_packet, reserved2) == 48);
static_assert(offsetof(barrier_or_packet, completion_signal) == 56);
static_assert(offsetof(amd_vendor_packet_header, amd_format) == 2);
static_assert(offsetof(amd_vendor_packet_header, reserved) == 3);
static_assert(offsetof(amd_barrier_value_packet, reserved0) == 4);
static_assert(offsetof(amd_barrier_value_packet, signal) == 8);
static_assert(offsetof(amd_barrier_value_packet, value) == 16);
static_assert(offsetof(amd_barrier_value_packet, mask) == 24);
static_assert(offsetof(amd_barrier_value_packet, cond) == 32);
static_assert(offsetof(amd_barrier_value_packet, reserved1) == 36);
static_assert(offsetof(amd_barrier_value_packet, reserved2) == 40);
static_assert(offsetof(amd_barrier_value_packet, reserved3) == 48);
static_assert(offsetof(amd_barrier_value_packet, completion_signal) == 56);

// Header bit positions: spec/packets.md §5.1.
static_assert(aql_header::barrier::mask == 0x100 && aql_header::scacquire_fence_scope::lo == 9 &&
              aql_header::screlease_fence_scope::lo == 11 && aql_header::defined_mask == 0x1FFF);

}  // namespace aqueduct::abi
