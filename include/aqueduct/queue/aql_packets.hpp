// aqueduct/queue/aql_packets.hpp — building AQL packets (kernel dispatch, barrier-AND/OR, AMD
// barrier-value, no-op) with their fence scopes, and decoding any slot for diagnostics.
//
// Layer: queue. Builders return the abi/ structs with the header already in place; the queue
// writes bytes 4..63 first and publishes dword 0 (header|setup) last with one release store
// (aql_queue.hpp). Fence scopes are chosen per use (docs/queues.md):
// - `fences::system()`: the packet acquires data the host wrote / releases results the host
//   reads (ROCr's default for dispatches).
// - `fences::agent()`: producer and consumer are on the same GPU (kernel → kernel); cheaper.
// - `fences::none()`: no cache maintenance (e.g. a no-op, or a barrier that only orders).
// Thread safety: pure functions.
#pragma once

#include <aqueduct/abi/aql.hpp>
#include <aqueduct/abi/kernel_descriptor.hpp>
#include <aqueduct/core/assert.hpp>
#include <aqueduct/core/units.hpp>

#include <array>
#include <bit>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <string>
#include <type_traits>

namespace aqueduct::ring {

// A 64-byte AQL packet type (anything the ring can carry).
template <class T>
concept aql_packet = std::is_trivially_copyable_v<T> && sizeof(T) == abi::aql_packet_size;

struct fences {
  abi::fence_scope acquire = abi::fence_scope::system;
  abi::fence_scope release = abi::fence_scope::system;
  static constexpr fences system() noexcept { return {abi::fence_scope::system, abi::fence_scope::system}; }
  static constexpr fences agent() noexcept { return {abi::fence_scope::agent, abi::fence_scope::agent}; }
  static constexpr fences none() noexcept { return {abi::fence_scope::none, abi::fence_scope::none}; }
};

struct grid_size {
  std::uint32_t x = 1, y = 1, z = 1;
};
struct workgroup_size {
  std::uint16_t x = 1, y = 1, z = 1;
};

// LDS and scratch bytes a dispatch needs: the descriptor's fixed sizes plus dynamic LDS
// (spec/code-objects.md §3.1: group_segment_fixed_size, private_segment_fixed_size).
struct segment_sizes {
  std::uint32_t group_segment_size = 0;
  std::uint32_t private_segment_size = 0;
};
[[nodiscard]] constexpr segment_sizes segments_of(const abi::kernel_descriptor& kd,
                                                  std::uint32_t dynamic_group_bytes = 0) noexcept {
  return {kd.group_segment_fixed_size + dynamic_group_bytes, kd.private_segment_fixed_size};
}

struct kernel_dispatch {
  gpu_va kernel_object;    // VA of the 64-byte kernel descriptor
  gpu_va kernarg_address;  // VA of the kernarg segment
  grid_size grid;          // in work-items
  workgroup_size workgroup;
  segment_sizes segments;
  std::uint64_t completion_signal = 0;
  unsigned dimensions = 0;  // 0: the highest dimension whose grid or workgroup size is > 1
  bool barrier = false;
  fences scopes = fences::system();
};

// spec/packets.md §5.2 kernel dispatch.
[[nodiscard]] AQUEDUCT_ALWAYS_INLINE constexpr abi::kernel_dispatch_packet make_packet(const kernel_dispatch& d) noexcept {
  unsigned dims = d.dimensions;
  if (dims == 0) dims = (d.grid.z > 1 || d.workgroup.z > 1) ? 3 : (d.grid.y > 1 || d.workgroup.y > 1) ? 2 : 1;
  AQUEDUCT_ASSERT(dims >= 1 && dims <= 3, "dispatch dimensions must be 1..3");
  AQUEDUCT_ASSERT(d.grid.x && d.grid.y && d.grid.z && d.workgroup.x && d.workgroup.y && d.workgroup.z,
                  "grid and workgroup sizes must be >= 1");
  // Built as eight 64-bit words (hsa.h field order, little-endian) and bit_cast: the packet then
  // lives in registers and is stored with full-width stores. Field by field into a zeroed stack
  // struct, GCC wrote it with 2- and 4-byte stores and copied it with 16-byte loads, which cannot
  // be forwarded from narrower stores: ~15 ns per packet for `batch[i] = make_packet(d)` (issue 11).
  static_assert(std::endian::native == std::endian::little, "AQL packets are little-endian");
  using u64 = std::uint64_t;
  const u64 header = abi::make_header(abi::packet_type::kernel_dispatch, d.barrier, d.scopes.acquire, d.scopes.release);
  const std::array<u64, 8> w = {
      header | u64{abi::make_dispatch_setup(dims)} << 16 | u64{d.workgroup.x} << 32 | u64{d.workgroup.y} << 48,
      u64{d.workgroup.z} | u64{d.grid.x} << 32,  // reserved0 (bits 16..31) = 0
      u64{d.grid.y} | u64{d.grid.z} << 32,
      u64{d.segments.private_segment_size} | u64{d.segments.group_segment_size} << 32,
      d.kernel_object.value,
      d.kernarg_address.value,
      0,  // reserved2
      d.completion_signal};
  return std::bit_cast<abi::kernel_dispatch_packet>(w);
}

// Barrier-AND: completes when every dependency signal is 0; barrier-OR: when any is.
// Unused dependency entries are 0 (ignored by the processor).
struct barrier_and {
  std::array<std::uint64_t, 5> deps{};
  std::uint64_t completion_signal = 0;
  bool barrier = false;
  fences scopes = fences::system();
};
struct barrier_or {
  std::array<std::uint64_t, 5> deps{};
  std::uint64_t completion_signal = 0;
  bool barrier = false;
  fences scopes = fences::system();
};

// The up-to-five handles as the deps array (asserts on more than five).
[[nodiscard]] constexpr std::array<std::uint64_t, 5> dependencies(std::initializer_list<std::uint64_t> handles) noexcept {
  AQUEDUCT_ASSERT(handles.size() <= 5, "an AQL barrier packet holds at most 5 dependency signals");
  std::array<std::uint64_t, 5> a{};
  std::size_t i = 0;
  for (auto h : handles) a[i++] = h;
  return a;
}

namespace detail {
template <class Packet, class Desc>
constexpr Packet make_barrier(const Desc& b, abi::packet_type t) noexcept {
  Packet p{};
  p.header = abi::make_header(t, b.barrier, b.scopes.acquire, b.scopes.release);
  for (std::size_t i = 0; i < 5; ++i) p.dep_signal[i] = b.deps[i];
  p.completion_signal = b.completion_signal;
  return p;
}
}  // namespace detail

// spec/packets.md §5.2 barrier AND / OR.
[[nodiscard]] constexpr abi::barrier_and_packet make_packet(const barrier_and& b) noexcept {
  return detail::make_barrier<abi::barrier_and_packet>(b, abi::packet_type::barrier_and);
}
[[nodiscard]] constexpr abi::barrier_or_packet make_packet(const barrier_or& b) noexcept {
  return detail::make_barrier<abi::barrier_or_packet>(b, abi::packet_type::barrier_or);
}

// AMD barrier-value: stall until (signal.value & mask) <cond> value (spec/packets.md §5.2).
struct barrier_value {
  std::uint64_t signal = 0;
  abi::signal_condition cond = abi::signal_condition::eq;
  std::int64_t value = 0;
  std::int64_t mask = -1;
  std::uint64_t completion_signal = 0;
  bool barrier = false;
  fences scopes = fences::system();
};
[[nodiscard]] constexpr abi::amd_barrier_value_packet make_packet(const barrier_value& b) noexcept {
  abi::amd_barrier_value_packet p{};
  p.header.header = abi::make_header(abi::packet_type::vendor_specific, b.barrier, b.scopes.acquire, b.scopes.release);
  p.header.amd_format = static_cast<std::uint8_t>(abi::amd_packet_format::barrier_value);
  p.signal = b.signal;
  p.value = b.value;
  p.mask = b.mask;
  p.cond = static_cast<std::uint32_t>(b.cond);
  p.completion_signal = b.completion_signal;
  return p;
}

// The filler for abandoned reservations: a barrier-AND with no dependencies, no barrier bit, no
// fences and no completion signal completes at once and does nothing.
[[nodiscard]] constexpr abi::barrier_and_packet nop_packet() noexcept {
  return make_packet(barrier_and{.scopes = fences::none()});
}

// dword 0 of a packet (header | setup/AmdFormat << 16): what the queue publishes last.
template <aql_packet P>
[[nodiscard]] AQUEDUCT_ALWAYS_INLINE std::uint32_t header_dword(const P& p) noexcept {
  std::uint32_t h;
  std::memcpy(&h, &p, sizeof h);
  return h;
}

// ---- decoding (diagnostics) -------------------------------------------------------------------

[[nodiscard]] inline const char* packet_type_name(std::uint8_t t) noexcept {
  switch (t) {
    case 0: return "VENDOR_SPECIFIC";
    case 1: return "INVALID";
    case 2: return "KERNEL_DISPATCH";
    case 3: return "BARRIER_AND";
    case 4: return "AGENT_DISPATCH";
    case 5: return "BARRIER_OR";
  }
  return "RESERVED";
}
[[nodiscard]] inline const char* fence_scope_name(std::uint8_t s) noexcept {
  switch (s) {
    case 0: return "none";
    case 1: return "agent";
    case 2: return "system";
  }
  return "reserved";
}

// "KERNEL_DISPATCH barrier=1 acquire=system release=agent dims=1 grid=1024x1x1 ..." — the whole
// packet in one line, from its 64 bytes.
inline void describe_packet(const abi::aql_slot& slot, std::string& out) {
  std::uint16_t header;
  std::memcpy(&header, slot.bytes, sizeof header);
  const auto h = abi::decode_header(header);
  char buf[320];
  int n = std::snprintf(buf, sizeof buf, "%s (header 0x%04x) barrier=%d acquire=%s release=%s", packet_type_name(h.type),
                        header, h.barrier ? 1 : 0, fence_scope_name(h.acquire_scope), fence_scope_name(h.release_scope));
  out.append(buf, static_cast<std::size_t>(n));
  auto ull = [](std::uint64_t v) { return static_cast<unsigned long long>(v); };
  switch (static_cast<abi::packet_type>(h.type)) {
    case abi::packet_type::kernel_dispatch: {
      abi::kernel_dispatch_packet p;
      std::memcpy(&p, slot.bytes, sizeof p);
      n = std::snprintf(buf, sizeof buf,
                        " dims=%u grid=%ux%ux%u workgroup=%ux%ux%u private=%u group=%u kernel_object=0x%llx "
                        "kernarg=0x%llx completion_signal=0x%llx",
                        abi::dispatch_setup::dimensions::get(p.setup), p.grid_size_x, p.grid_size_y, p.grid_size_z,
                        p.workgroup_size_x, p.workgroup_size_y, p.workgroup_size_z, p.private_segment_size,
                        p.group_segment_size, ull(p.kernel_object), ull(p.kernarg_address), ull(p.completion_signal));
      break;
    }
    case abi::packet_type::barrier_and:
    case abi::packet_type::barrier_or: {
      abi::barrier_and_packet p;
      std::memcpy(&p, slot.bytes, sizeof p);
      n = std::snprintf(buf, sizeof buf, " deps=[0x%llx 0x%llx 0x%llx 0x%llx 0x%llx] completion_signal=0x%llx",
                        ull(p.dep_signal[0]), ull(p.dep_signal[1]), ull(p.dep_signal[2]), ull(p.dep_signal[3]),
                        ull(p.dep_signal[4]), ull(p.completion_signal));
      break;
    }
    case abi::packet_type::vendor_specific: {
      abi::amd_barrier_value_packet p;
      std::memcpy(&p, slot.bytes, sizeof p);
      if (p.header.amd_format == static_cast<std::uint8_t>(abi::amd_packet_format::barrier_value)) {
        n = std::snprintf(buf, sizeof buf,
                          " AMD_BARRIER_VALUE signal=0x%llx cond=%u value=%lld mask=0x%llx completion_signal=0x%llx",
                          ull(p.signal), p.cond, static_cast<long long>(p.value), ull(static_cast<std::uint64_t>(p.mask)),
                          ull(p.completion_signal));
      } else {
        n = std::snprintf(buf, sizeof buf, " AmdFormat=%u", p.header.amd_format);
      }
      break;
    }
    default: n = 0; break;
  }
  if (n > 0) out.append(buf, static_cast<std::size_t>(n));
}

}  // namespace aqueduct::ring
