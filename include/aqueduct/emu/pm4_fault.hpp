// aqueduct/emu/pm4_fault.hpp — why an emulated PM4 queue stopped: the fault kinds and the error report.
//
// Layer: emu. `pm4_fault` names what the emulated MEC (emu/pm4_processor.hpp) refused or what
// went wrong while it ran a packet; `pm4_error` is what the processor records when its queue stops
// (fault, read/write pointers, the packet as read and a decoded description) and how it maps to
// an `errc` for the host (hang, memory fault, malformed packet).
// Thread safety: plain values; no shared state.
#pragma once

#include <aqueduct/core/result.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace aqueduct::emu {

enum class pm4_fault : std::uint8_t {
  none,
  not_type3,              // type 0/1/2 packet other than the 1-dword type-2 filler
  unknown_opcode,         // an opcode this MEC does not run
  bad_count,              // COUNT does not fit the packet (or the ring)
  reserved_bits,          // a reserved header or payload bit is set, or a field has a reserved value
  bad_register,           // SET_SH_REG outside the SH window
  not_mapped,             // a packet's address is not mapped in the GPU VM
  bad_dispatch,           // register state that cannot be dispatched (no program, 0 threads ...)
  unknown_host_kernel,
  memory_violation,       // a host kernel touched unmapped memory
  host_kernel_exception,
  shader_exception,       // machine code: s_trap, illegal/unsupported instruction, budget
  no_eop_buffer,          // RELEASE_MEM on a queue created without an EOP buffer
  priv_on_unaffected_part,  // COMPUTE_PGM_RSRC1.PRIV on a part where it hangs (spec/kfd.md §4)
  cwsr_hang_without_priv,   // DEGFX11_12113: preempted PM4 dispatch without PRIV
  cwsr_save_failed,         // the save does not fit or is not mapped
  cwsr_restore_failed,
};

[[nodiscard]] constexpr const char* pm4_fault_name(pm4_fault f) noexcept {
  switch (f) {
    case pm4_fault::none: return "none";
    case pm4_fault::not_type3: return "not a type-3 packet";
    case pm4_fault::unknown_opcode: return "unknown opcode";
    case pm4_fault::bad_count: return "bad count";
    case pm4_fault::reserved_bits: return "reserved bits set";
    case pm4_fault::bad_register: return "register outside the SH window";
    case pm4_fault::not_mapped: return "address not mapped";
    case pm4_fault::bad_dispatch: return "bad dispatch state";
    case pm4_fault::unknown_host_kernel: return "unknown host kernel";
    case pm4_fault::memory_violation: return "memory violation";
    case pm4_fault::host_kernel_exception: return "host kernel exception";
    case pm4_fault::shader_exception: return "shader exception";
    case pm4_fault::no_eop_buffer: return "RELEASE_MEM without an EOP buffer";
    case pm4_fault::priv_on_unaffected_part: return "COMPUTE_PGM_RSRC1.PRIV set on a part where it hangs";
    case pm4_fault::cwsr_hang_without_priv: return "hang on preemption: GFX11 PM4 dispatch without COMPUTE_PGM_RSRC1.PRIV";
    case pm4_fault::cwsr_save_failed: return "CWSR save failed";
    case pm4_fault::cwsr_restore_failed: return "CWSR restore failed";
  }
  return "?";
}
// Faults after which the queue simply stops making progress (what a host sees as a hang).
[[nodiscard]] constexpr bool is_hang(pm4_fault f) noexcept {
  return f == pm4_fault::priv_on_unaffected_part || f == pm4_fault::cwsr_hang_without_priv ||
         f == pm4_fault::cwsr_save_failed || f == pm4_fault::cwsr_restore_failed;
}

// Why and where the queue stopped.
struct pm4_error {
  pm4_fault fault = pm4_fault::none;
  std::uint64_t read_pointer = 0;   // dwords: the packet's position (the IB packet when inside an IB)
  std::uint64_t write_pointer = 0;
  std::uint64_t address = 0;        // faulting address when relevant
  bool in_indirect_buffer = false;
  std::vector<std::uint32_t> packet;  // the packet's dwords as read
  std::string detail;               // fault, cause and the packet decoded

  // device_hang for hangs, device_fault for memory faults, queue_error for malformed packets.
  [[nodiscard]] failure to_failure() const {
    const errc e = is_hang(fault) ? errc::device_hang
                   : (fault == pm4_fault::memory_violation || fault == pm4_fault::not_mapped) ? errc::device_fault
                                                                                              : errc::queue_error;
    return failure(e, detail);
  }
};

}  // namespace aqueduct::emu
