// aqueduct/emu/engine_error.hpp — why an emulated engine (AQL, PM4 or SDMA) stopped its queue: one
// error type for every engine.
//
// Layer: emu. `engine_fault` names what an engine refused or what went wrong while it ran a
// packet; `engine_error` is what it records when its queue stops — which engine, the fault, where
// it stopped and where the producer was (each in its engine's own unit), the faulting address, the
// packet as read and a message a person can act on (the packet decoded). `to_failure()` maps it to
// the `errc` the host sees, in one place: a hang is errc::device_hang, a memory fault
// errc::device_fault, anything else errc::queue_error. `engine_error_slot` keeps the first error of
// an engine for the threads that ask (a later one never replaces it).
// Thread safety: engine_error is a plain value; engine_error_slot is internally synchronized.
#pragma once

#include <aqueduct/core/result.hpp>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace aqueduct::emu {

enum class engine_kind : std::uint8_t { aql, pm4, sdma };

[[nodiscard]] constexpr const char* engine_kind_name(engine_kind k) noexcept {
  switch (k) {
    case engine_kind::aql: return "AQL";
    case engine_kind::pm4: return "PM4";
    case engine_kind::sdma: return "SDMA";
  }
  return "?";
}

enum class engine_fault : std::uint8_t {
  none,
  // ---- the packet as written (errc::queue_error)
  reserved_packet_type,        // AQL: header type > 5, or a vendor packet with an unknown AmdFormat
  not_type3,                   // PM4: a type 0/1/2 packet other than the 1-dword type-2 filler
  unknown_opcode,              // PM4 / SDMA: an opcode (or SDMA sub-op) this engine does not run
  unsupported_packet,          // a real packet this queue does not take (AQL agent dispatch, SDMA register poll)
  reserved_bits,               // a reserved header or payload bit, or a field with a reserved value
  bad_count,                   // PM4 COUNT that does not fit the packet; SDMA byte count out of range
  bad_register,                // PM4 SET_SH_REG outside the SH window
  misaligned_address,          // SDMA FENCE/POLL dword, TIMESTAMP/ATOMIC qword; AQL kernel object, signal
  bad_dimensions,              // AQL setup.dimensions 0 or reserved bits, zero grid, unused dims != 1
  bad_workgroup_size,          // AQL zero or more than 1024 work-items
  bad_dispatch,                // PM4 register state that cannot be dispatched (no program, 0 threads ...)
  bad_kernel_descriptor,       // entry misaligned, no emulated code, inconsistent SGPR counts
  unknown_host_kernel,         // code names a kernel the registry does not know
  lds_too_large,
  no_eop_buffer,               // PM4 RELEASE_MEM on a queue created without an EOP buffer
  body_modified_after_header,  // AQL adversarial mode: the body changed after the header was valid
  sequence_check_failed,       // AQL: the options' sequence check rejected the packet
  // ---- memory (errc::device_fault): GPU page faults. The CP's own reads and writes go through
  // the GPU's VM as a kernel's do (the CP is a UTCL2 client: "CPF", "CPC", "CPG" in Linux's
  // gmc_v9_0.c gfxhub_client_ids), so an AQL packet naming unmapped memory faults the GPU too.
  not_mapped,                  // an address a PM4 packet names, or an AQL kernel's code entry, is not mapped
  memory_violation,            // a kernel or an SDMA access touched unmapped memory
  kernel_object_not_mapped,    // AQL kernel_object 0 or not mapped (the CP reads the descriptor)
  kernarg_not_mapped,          // AQL kernarg segment (or its preloaded part) 0 or not mapped
  signal_not_mapped,           // AQL completion, barrier-value or dependency signal not mapped
  // ---- the code that ran (errc::queue_error)
  host_kernel_exception,       // a host kernel threw
  shader_exception,            // machine code: s_trap, illegal/unsupported instruction, budget
  // ---- hangs: the queue simply stops making progress (errc::device_hang)
  priv_on_unaffected_part,     // PM4 COMPUTE_PGM_RSRC1.PRIV on a part where it hangs (spec/kfd.md §4)
  cwsr_hang_without_priv,      // DEGFX11_12113: a preempted PM4 dispatch without PRIV
  cwsr_save_failed,            // the save does not fit the CWSR area or the area is not mapped
  cwsr_restore_failed,
};

[[nodiscard]] constexpr const char* engine_fault_name(engine_fault f) noexcept {
  switch (f) {
    case engine_fault::none: return "none";
    case engine_fault::reserved_packet_type: return "reserved packet type";
    case engine_fault::not_type3: return "not a type-3 packet";
    case engine_fault::unknown_opcode: return "unknown opcode";
    case engine_fault::unsupported_packet: return "unsupported packet";
    case engine_fault::reserved_bits: return "reserved bits set";
    case engine_fault::bad_count: return "bad count";
    case engine_fault::bad_register: return "register outside the SH window";
    case engine_fault::misaligned_address: return "misaligned address";
    case engine_fault::bad_dimensions: return "bad dimensions";
    case engine_fault::bad_workgroup_size: return "bad workgroup size";
    case engine_fault::bad_dispatch: return "bad dispatch state";
    case engine_fault::kernel_object_not_mapped: return "kernel object not mapped";
    case engine_fault::bad_kernel_descriptor: return "bad kernel descriptor";
    case engine_fault::unknown_host_kernel: return "unknown host kernel";
    case engine_fault::kernarg_not_mapped: return "kernarg segment not mapped";
    case engine_fault::signal_not_mapped: return "signal not mapped";
    case engine_fault::lds_too_large: return "LDS request too large";
    case engine_fault::no_eop_buffer: return "RELEASE_MEM without an EOP buffer";
    case engine_fault::body_modified_after_header: return "packet body modified after its header was published";
    case engine_fault::sequence_check_failed: return "sequence check failed";
    case engine_fault::not_mapped: return "address not mapped";
    case engine_fault::memory_violation: return "memory violation";
    case engine_fault::host_kernel_exception: return "host kernel exception";
    case engine_fault::shader_exception: return "shader exception";
    case engine_fault::priv_on_unaffected_part: return "COMPUTE_PGM_RSRC1.PRIV set on a part where it hangs";
    case engine_fault::cwsr_hang_without_priv: return "hang on preemption: GFX11 PM4 dispatch without COMPUTE_PGM_RSRC1.PRIV";
    case engine_fault::cwsr_save_failed: return "CWSR save failed";
    case engine_fault::cwsr_restore_failed: return "CWSR restore failed";
  }
  return "?";
}

// Faults after which the queue simply stops making progress (what a host sees as a hang).
[[nodiscard]] constexpr bool is_hang(engine_fault f) noexcept {
  return f == engine_fault::priv_on_unaffected_part || f == engine_fault::cwsr_hang_without_priv ||
         f == engine_fault::cwsr_save_failed || f == engine_fault::cwsr_restore_failed;
}
// Faults that are GPU page faults: an access to memory the queue's GPU has not mapped.
[[nodiscard]] constexpr bool is_memory_fault(engine_fault f) noexcept {
  return f == engine_fault::not_mapped || f == engine_fault::memory_violation ||
         f == engine_fault::kernel_object_not_mapped || f == engine_fault::kernarg_not_mapped ||
         f == engine_fault::signal_not_mapped;
}
// The code a host sees for a queue stopped by `f`.
[[nodiscard]] constexpr errc errc_of(engine_fault f) noexcept {
  return is_hang(f) ? errc::device_hang : is_memory_fault(f) ? errc::device_fault : errc::queue_error;
}

// Why and where a queue stopped.
struct engine_error {
  engine_kind engine = engine_kind::aql;
  engine_fault fault = engine_fault::none;
  // Where the engine stopped: the offending packet's AQL packet index, PM4 read pointer (dwords;
  // the IB packet's ring position when inside an IB) or SDMA read pointer (bytes).
  std::uint64_t position = 0;
  std::uint64_t write_position = 0;  // the producer's write index / pointer then, same unit (0: unknown)
  std::uint64_t address = 0;         // the faulting address when relevant
  bool in_indirect_buffer = false;   // PM4 / SDMA: the packet came from an indirect buffer
  std::vector<std::uint32_t> packet;  // the packet's dwords as read (AQL: the slot's 16 dwords)
  std::string detail;                 // engine, queue, fault, cause and the packet decoded

  [[nodiscard]] failure to_failure() const { return failure(errc_of(fault), detail); }
};

// The first error an engine recorded. record() keeps the first and returns whether it was it.
class engine_error_slot {
 public:
  bool record(engine_error e) {
    std::lock_guard lock(mu_);
    if (e_) return false;
    e_ = std::move(e);
    set_.store(true, std::memory_order_release);
    return true;
  }
  [[nodiscard]] bool has_error() const noexcept { return set_.load(std::memory_order_acquire); }
  [[nodiscard]] std::optional<engine_error> error() const {
    std::lock_guard lock(mu_);
    return e_;
  }

 private:
  mutable std::mutex mu_;
  std::optional<engine_error> e_;
  std::atomic<bool> set_{false};
};

}  // namespace aqueduct::emu
