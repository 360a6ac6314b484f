// aqueduct/emu/aql_error.hpp — why an emulated AQL queue stopped, and AQL packets decoded.
//
// Layer: emu. `aql_fault` names what the packet processor (emu/aql_processor.hpp) rejected or
// what a kernel did; `aql_error` carries the offending packet as read, its index, the
// producer's write index and a message a person can act on; `describe_packet` decodes any
// 64-byte AQL slot (spec/packets.md §5.1–5.2) for such messages and for hang reports.
// Thread safety: pure functions and plain values.
#pragma once

#include <aqueduct/abi/aql.hpp>
#include <aqueduct/core/result.hpp>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

namespace aqueduct::emu {

enum class aql_fault : std::uint8_t {
  none,
  reserved_packet_type,        // header type > 5, or an unknown vendor AmdFormat
  reserved_header_bits,        // header bits 15:13 or fence scope 3
  unsupported_packet,          // agent dispatch (a GPU queue does not take them)
  bad_dimensions,              // setup.dimensions 0 or reserved bits, zero grid, unused dims != 1
  bad_workgroup_size,          // zero or more than 1024 work-items
  kernel_object_not_mapped,    // kernel_object 0, misaligned or not mapped
  bad_kernel_descriptor,       // entry misaligned/unmapped, no emulated code, inconsistent SGPR counts
  unknown_host_kernel,         // code names a kernel the registry does not know
  kernarg_not_mapped,
  signal_not_mapped,           // completion or dependency signal not mapped / misaligned
  lds_too_large,
  memory_violation,            // a host kernel touched unmapped memory
  host_kernel_exception,       // a host kernel threw
  shader_exception,            // machine code: s_trap, illegal/unsupported instruction, budget
  body_modified_after_header,  // adversarial mode: the body changed after the header was valid
  sequence_check_failed,       // the options' sequence check rejected the packet
};

[[nodiscard]] constexpr const char* aql_fault_name(aql_fault f) noexcept {
  switch (f) {
    case aql_fault::none: return "none";
    case aql_fault::reserved_packet_type: return "reserved packet type";
    case aql_fault::reserved_header_bits: return "reserved header bits";
    case aql_fault::unsupported_packet: return "unsupported packet";
    case aql_fault::bad_dimensions: return "bad dimensions";
    case aql_fault::bad_workgroup_size: return "bad workgroup size";
    case aql_fault::kernel_object_not_mapped: return "kernel object not mapped";
    case aql_fault::bad_kernel_descriptor: return "bad kernel descriptor";
    case aql_fault::unknown_host_kernel: return "unknown host kernel";
    case aql_fault::kernarg_not_mapped: return "kernarg segment not mapped";
    case aql_fault::signal_not_mapped: return "signal not mapped";
    case aql_fault::lds_too_large: return "LDS request too large";
    case aql_fault::memory_violation: return "memory violation";
    case aql_fault::host_kernel_exception: return "host kernel exception";
    case aql_fault::shader_exception: return "shader exception";
    case aql_fault::body_modified_after_header: return "packet body modified after its header was published";
    case aql_fault::sequence_check_failed: return "sequence check failed";
  }
  return "?";
}

// The packet decoded for a person: type, header flags and every field of its layout.
[[nodiscard]] inline std::string describe_packet(const abi::aql_slot& s) {
  char buf[512];
  std::uint16_t h;
  std::memcpy(&h, s.bytes, 2);
  const auto d = abi::decode_header(h);
  static constexpr const char* scope[] = {"none", "agent", "system", "reserved(3)"};
  static constexpr const char* types[] = {"vendor_specific", "invalid", "kernel_dispatch",
                                          "barrier_and", "agent_dispatch", "barrier_or"};
  int n = std::snprintf(buf, sizeof buf, "%s%s acquire=%s release=%s%s",
                        d.type <= 5 ? types[d.type] : "reserved_type", d.barrier ? " barrier" : "",
                        scope[d.acquire_scope], scope[d.release_scope], d.reserved ? " reserved_bits_set" : "");
  std::string out(buf, static_cast<std::size_t>(n));
  if (d.type == static_cast<std::uint8_t>(abi::packet_type::kernel_dispatch)) {
    abi::kernel_dispatch_packet p;
    std::memcpy(&p, s.bytes, sizeof p);
    n = std::snprintf(buf, sizeof buf,
                      " dims=%u setup=0x%04x workgroup=%ux%ux%u grid=%ux%ux%u private=%u group=%u "
                      "kernel_object=0x%llx kernarg=0x%llx completion_signal=0x%llx",
                      abi::dispatch_setup::dimensions::get(p.setup), p.setup, p.workgroup_size_x, p.workgroup_size_y,
                      p.workgroup_size_z, p.grid_size_x, p.grid_size_y, p.grid_size_z, p.private_segment_size,
                      p.group_segment_size, static_cast<unsigned long long>(p.kernel_object),
                      static_cast<unsigned long long>(p.kernarg_address),
                      static_cast<unsigned long long>(p.completion_signal));
  } else if (d.type == static_cast<std::uint8_t>(abi::packet_type::barrier_and) ||
             d.type == static_cast<std::uint8_t>(abi::packet_type::barrier_or)) {
    abi::barrier_and_packet p;
    std::memcpy(&p, s.bytes, sizeof p);
    n = std::snprintf(buf, sizeof buf, " dep=[0x%llx 0x%llx 0x%llx 0x%llx 0x%llx] completion_signal=0x%llx",
                      static_cast<unsigned long long>(p.dep_signal[0]), static_cast<unsigned long long>(p.dep_signal[1]),
                      static_cast<unsigned long long>(p.dep_signal[2]), static_cast<unsigned long long>(p.dep_signal[3]),
                      static_cast<unsigned long long>(p.dep_signal[4]),
                      static_cast<unsigned long long>(p.completion_signal));
  } else if (d.type == static_cast<std::uint8_t>(abi::packet_type::vendor_specific)) {
    abi::amd_barrier_value_packet p;
    std::memcpy(&p, s.bytes, sizeof p);
    n = std::snprintf(buf, sizeof buf,
                      " amd_format=%u signal=0x%llx value=%lld mask=0x%llx cond=%u completion_signal=0x%llx",
                      p.header.amd_format, static_cast<unsigned long long>(p.signal), static_cast<long long>(p.value),
                      static_cast<unsigned long long>(p.mask), p.cond, static_cast<unsigned long long>(p.completion_signal));
  } else {
    n = 0;
  }
  out.append(buf, static_cast<std::size_t>(n));
  out += " raw=";
  for (std::size_t i = 0; i < abi::aql_packet_size; i += 4) {
    std::uint32_t dw;
    std::memcpy(&dw, s.bytes + i, 4);
    std::snprintf(buf, sizeof buf, "%s%08x", i ? " " : "", dw);
    out += buf;
  }
  return out;
}

// Why and where the queue stopped.
struct aql_error {
  aql_fault fault = aql_fault::none;
  std::uint64_t packet_index = 0;  // the offending packet (read index at the stop)
  std::uint64_t write_index = 0;   // producer's write index when known
  std::uint64_t address = 0;       // faulting / unmapped address when relevant
  abi::aql_slot packet{};          // the packet as the processor read it
  std::string detail;              // fault, cause and the decoded packet

  // queue_error for malformed packets, device_fault for memory violations.
  [[nodiscard]] failure to_failure() const {
    return failure(fault == aql_fault::memory_violation ? errc::device_fault : errc::queue_error, detail);
  }
};

}  // namespace aqueduct::emu
