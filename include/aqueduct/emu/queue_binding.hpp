// aqueduct/emu/queue_binding.hpp — where a queue's memory is, as CREATE_QUEUE accepted it, for the
// engine that runs it.
//
// Layer: emu. Every engine reads a ring and a read/write pointer pair: `queue_binding` (the
// pointers' units are the engine's: AQL packets, PM4 dwords, SDMA bytes). A compute queue (AQL or
// PM4) also runs on a part of a family and can be preempted through its CWSR area:
// `compute_queue_binding`. Each engine's binding derives from these (aql_queue_binding,
// pm4_queue_binding, sdma_queue_binding); emu/queue_engine.hpp fills them from a queue_info in
// one place.
// Thread safety: plain values.
#pragma once

#include <aqueduct/arch/cwsr.hpp>
#include <aqueduct/arch/family.hpp>

#include <cstdint>

namespace aqueduct::emu {

// Where a compute queue's save area is (CREATE_QUEUE ctx_save_restore_address/_size,
// ctl_stack_size); XCC 0's, as the emulator runs one XCC.
struct cwsr_area {
  std::uint64_t address = 0;
  std::uint32_t ctx_save_restore_size = 0;
  std::uint32_t ctl_stack_size = 0;
};

struct queue_binding {
  std::uint64_t ring_va = 0;
  std::uint64_t ring_bytes = 0;
  std::uint64_t read_pointer_va = 0;   // u64 the engine writes
  std::uint64_t write_pointer_va = 0;  // u64 the producer writes
  std::uint32_t gpu_id = 0;
  std::uint32_t queue_id = 0;
};

struct compute_queue_binding : queue_binding {
  arch::family family = arch::family::gfx11;
  std::uint32_t gfx_target_version = 110000;
  std::uint32_t simd_arrays_per_engine = 2;
  cwsr_area cwsr;            // none (address 0): the queue cannot be preempted (a save fails as a hang)
  arch::cwsr_inputs node{};  // the node's CWSR inputs (wave capacity, state sizes)
};

}  // namespace aqueduct::emu
