// aqueduct/abi/amd_signal.hpp — the 64-byte `amd_signal_t` a signal handle points to.
//
// Layer: abi. An AQL signal handle (completion_signal, dep_signal[], barrier-value signal) is
// the GPU virtual address of this structure. The packet processor decrements `value`, then, if
// `event_mailbox_ptr` is non-zero, writes `event_id` to that address and raises the interrupt
// that wakes KFD event waiters (spec/packets.md §5.3, §5.5).
// Thread safety: plain data. `value` is accessed concurrently by host and device: always through
// std::atomic_ref<std::int64_t> (the sync/ layer), never as a plain load or store.
#pragma once

#include <cstddef>
#include <cstdint>

namespace aqueduct::abi {

// spec/packets.md §5.3 (amd_hsa_signal.h amd_signal_kind_t).
enum class amd_signal_kind : std::int64_t {
  invalid = 0,
  user = 1,
  doorbell = -1,
  legacy_doorbell = -2,
};

// spec/packets.md §5.3 (amd_hsa_signal.h amd_signal_t, ROCm 5.2.3).
struct alignas(64) amd_signal {
  std::int64_t kind;  // amd_signal_kind
  // For kind == user: the signal value. For doorbell kinds the same 8 bytes are the hardware
  // doorbell pointer (amd_hsa_signal.h unions value / hardware_doorbell_ptr).
  std::int64_t value;
  std::uint64_t event_mailbox_ptr;  // VA the processor writes event_id to; 0 = no event
  std::uint32_t event_id;
  std::uint32_t reserved1;
  std::uint64_t start_ts;   // dispatch start timestamp (profiling)
  std::uint64_t end_ts;     // dispatch end timestamp (profiling)
  std::uint64_t queue_ptr;  // VA of the amd_queue (union with reserved2 in the C header)
  std::uint32_t reserved3[2];
};

static_assert(sizeof(amd_signal) == 64 && alignof(amd_signal) == 64);
static_assert(offsetof(amd_signal, kind) == 0);
static_assert(offsetof(amd_signal, value) == 8);
static_assert(offsetof(amd_signal, event_mailbox_ptr) == 16);
static_assert(offsetof(amd_signal, event_id) == 24);
static_assert(offsetof(amd_signal, reserved1) == 28);
static_assert(offsetof(amd_signal, start_ts) == 32);
static_assert(offsetof(amd_signal, end_ts) == 40);
static_assert(offsetof(amd_signal, queue_ptr) == 48);
static_assert(offsetof(amd_signal, reserved3) == 56);

inline constexpr std::size_t amd_signal_align = 64;  // amd_hsa_signal.h AMD_SIGNAL_ALIGN_BYTES

}  // namespace aqueduct::abi
