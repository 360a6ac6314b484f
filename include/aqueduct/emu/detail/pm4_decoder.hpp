// aqueduct/emu/detail/pm4_decoder.hpp — the emulated MEC's PM4 decoder: a packet's dwords in, its
// fields out, or why the MEC refuses it.
//
// Layer: emu (detail, not API). Pure functions: no memory is read but the packet's own dwords, no
// state is kept. `decode_header` checks what every type-3 header must satisfy on a compute queue
// (type 3, reserved bits [7:3], RESET_FILTER_CAM, PREDICATE, the fixed COUNT of fixed-size
// packets); each `decode_<packet>` then checks its payload (reserved bits and values, alignment
// of the addresses it names) and returns its fields, named as abi/pm4.hpp names them
// (spec/packets.md §1.3). What a packet DOES — memory it writes, registers it sets, how long it
// waits — is the MEC's (emu/pm4_processor.hpp); the decoder is what a stream written by
// ring::pm4::encoder is checked against (tests/emu/pm4_decoder.cpp round-trips every encoder).
// A refusal is a `reject` (detail/decoded.hpp): the engine fault, a reason a person can act on, and the address
// when one is at fault.
// Thread safety: pure functions.
#pragma once

#include <aqueduct/abi/pm4.hpp>
#include <aqueduct/arch/family.hpp>
#include <aqueduct/core/bits.hpp>
#include <aqueduct/emu/detail/decoded.hpp>
#include <aqueduct/emu/detail/sh_registers.hpp>
#include <aqueduct/emu/engine_error.hpp>

#include <array>
#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <utility>

namespace aqueduct::emu::detail {

namespace pm4a = abi::pm4;

// gfx9-class families (gfx9, gfx90a, gfx94x): 7-dword ACQUIRE_MEM, gfx9 DISPATCH_INITIATOR, wave64.
[[nodiscard]] constexpr bool pm4_gfx9_form(arch::family f) noexcept {
  return f == arch::family::gfx9 || f == arch::family::gfx90a || f == arch::family::gfx94x;
}

// The length in dwords of the packet whose first dword is `h`: COUNT + 2 for a type-3 header (1 for
// the header-only NOP), 1 for anything else (the type-2 filler, or a word decode_header refuses).
[[nodiscard]] constexpr std::uint64_t pm4_packet_dwords(std::uint32_t h) noexcept {
  if (h == pm4a::type2_filler || pm4a::header_type::get(h) != pm4a::packet_type3) return 1;
  return pm4a::type3_packet_dwords(h);
}

// ---- header ------------------------------------------------------------------------------------
struct pm4_header {
  bool filler = false;                   // the 1-dword type-2 filler: nothing to run
  pm4a::opcode op = pm4a::opcode::nop;
};
[[nodiscard]] inline decoded<pm4_header> decode_header(std::span<const std::uint32_t> p, arch::family f) {
  const std::uint32_t h = p[0];
  if (h == pm4a::type2_filler) return pm4_header{true, pm4a::opcode::nop};
  if (pm4a::header_type::get(h) != pm4a::packet_type3)
    return refuse(engine_fault::not_type3, "");
  if ((h & 0xF8u) != 0) return refuse(engine_fault::reserved_bits, "header bits [7:3] are reserved");
  if (pm4a::header_reset_filter_cam::get(h))
    return refuse(engine_fault::reserved_bits, "RESET_FILTER_CAM is only for *_PAIRS_PACKED");
  if (pm4a::header_predicate::get(h)) return refuse(engine_fault::reserved_bits, "PREDICATE on a compute queue");
  const auto op = static_cast<pm4a::opcode>(pm4a::header_opcode::get(h));
  if (op == pm4a::opcode::indirect_buffer) {  // INDIRECT_BUFFER or COND_INDIRECT_BUFFER, by length
    if (p.size() != pm4a::indirect_buffer::dwords && p.size() != pm4a::cond_indirect_buffer::dwords)
      return refuse(engine_fault::bad_count, "opcode 0x3F has 4 dwords (INDIRECT_BUFFER) or 14 (COND_INDIRECT_BUFFER)");
  } else if (const std::uint32_t fixed = pm4a::fixed_packet_dwords(op, pm4_gfx9_form(f)); fixed != 0 && p.size() != fixed) {
    return refuse(engine_fault::bad_count, "this packet has exactly " + std::to_string(fixed) + " dwords");
  }
  return pm4_header{false, op};
}

// ---- SET_SH_REG (0x76) -------------------------------------------------------------------------
struct set_sh_reg_fields {
  std::uint32_t offset = 0;                  // from 0x2C00, in dwords
  std::span<const std::uint32_t> values;     // into the packet
};
[[nodiscard]] inline decoded<set_sh_reg_fields> decode_set_sh_reg(std::span<const std::uint32_t> p) {
  if (p.size() < 3) return refuse(engine_fault::bad_count, "SET_SH_REG needs a register offset and at least one value");
  if ((p[1] & 0xFFFF0000u) != 0)
    return refuse(engine_fault::reserved_bits, "SET_SH_REG dw1 [31:16] (VMID_SHIFT/INDEX) not supported");
  set_sh_reg_fields d{pm4a::set_sh_reg::reg_offset::get(p[1]), p.subspan(2)};
  if (!sh_register_file::fits(d.offset, d.values.size()))
    return refuse(engine_fault::bad_register, "registers 0x" + hex_string(d.offset + pm4a::sh_reg_base) + "+" +
                                                      std::to_string(d.values.size()) + " leave the SH window");
  return d;
}

// ---- DISPATCH_DIRECT (0x15) --------------------------------------------------------------------
struct dispatch_direct_fields {
  std::array<std::uint32_t, 3> dim{};  // workgroup counts, or work-items with USE_THREAD_DIMENSIONS
  std::uint32_t initiator = 0;         // COMPUTE_DISPATCH_INITIATOR
};
// The DISPATCH_INITIATOR bits a family defines (arch/family.hpp dispatch_initiator_*).
[[nodiscard]] constexpr std::uint32_t dispatch_initiator_defined(arch::family f) noexcept {
  return pm4_gfx9_form(f) ? 0x5C7Fu : f == arch::family::gfx12 ? 0xE007FC7Fu : 0x3FC7Fu;
}
[[nodiscard]] inline decoded<dispatch_direct_fields> decode_dispatch_direct(std::span<const std::uint32_t> p,
                                                                              arch::family f) {
  dispatch_direct_fields d{{p[1], p[2], p[3]}, p[4]};
  const std::uint32_t defined = dispatch_initiator_defined(f);
  if ((d.initiator & ~defined) != 0)
    return refuse(engine_fault::reserved_bits, "DISPATCH_INITIATOR reserved bits 0x" + hex_string(d.initiator & ~defined));
  if (!pm4a::dispatch_initiator::compute_shader_en::get(d.initiator))
    return refuse(engine_fault::bad_dispatch, "DISPATCH_INITIATOR.COMPUTE_SHADER_EN is 0");
  if (d.dim[0] == 0 || d.dim[1] == 0 || d.dim[2] == 0) return refuse(engine_fault::bad_dispatch, "a dispatch dimension is 0");
  return d;
}

// ---- DISPATCH_INDIRECT (0x16), compute form (abi/pm4.hpp) ------------------------------------
struct dispatch_indirect_fields {
  std::uint64_t address = 0;   // of the {x, y, z} counts, read when the MEC runs the packet
  std::uint32_t initiator = 0;
};
[[nodiscard]] inline decoded<dispatch_indirect_fields> decode_dispatch_indirect(std::span<const std::uint32_t> p,
                                                                                  arch::family f) {
  dispatch_indirect_fields d{make64(p[1], p[2]), p[3]};
  const std::uint32_t defined = dispatch_initiator_defined(f);
  if ((d.initiator & ~defined) != 0)
    return refuse(engine_fault::reserved_bits, "DISPATCH_INITIATOR reserved bits 0x" + hex_string(d.initiator & ~defined));
  if (!pm4a::dispatch_initiator::compute_shader_en::get(d.initiator))
    return refuse(engine_fault::bad_dispatch, "DISPATCH_INITIATOR.COMPUTE_SHADER_EN is 0");
  if (d.address % 4 != 0)
    return refuse(engine_fault::misaligned_address, "DISPATCH_INDIRECT counts at 0x" + hex_string(d.address) + " (4-byte alignment)",
                  d.address);
  return d;
}

// ---- COPY_DATA (0x40), compute form (abi/pm4.hpp) --------------------------------------------
// Emulated: memory or immediate source, memory destination. Register, GDS, counter and clock
// sources and register destinations are refused as unsupported (nothing here writes them).
struct copy_data_fields {
  bool immediate = false;
  bool b64 = false;
  std::uint64_t src = 0;  // address, or the immediate value
  std::uint64_t dst = 0;
};
[[nodiscard]] inline decoded<copy_data_fields> decode_copy_data(std::span<const std::uint32_t> p) {
  namespace cd = pm4a::copy_data;
  const std::uint32_t c = p[1];
  if ((c & ~cd::defined_control_bits) != 0)
    return refuse(engine_fault::reserved_bits, "COPY_DATA control reserved bits 0x" + hex_string(c & ~cd::defined_control_bits));
  const std::uint32_t src = cd::src_sel::get(c), dst = cd::dst_sel::get(c);
  if (src != cd::sel_tc_l2 && src != cd::src_sel_immediate)
    return refuse(engine_fault::unsupported_packet, "COPY_DATA SRC_SEL " + std::to_string(src) +
                                                        " (only 2, memory, and 5, immediate, are emulated)");
  if (dst != cd::sel_tc_l2)
    return refuse(engine_fault::unsupported_packet, "COPY_DATA DST_SEL " + std::to_string(dst) + " (only 2, memory, is emulated)");
  copy_data_fields d{src == cd::src_sel_immediate, cd::count_sel::get(c) != 0, make64(p[2], p[3]), make64(p[4], p[5])};
  if (d.immediate && !d.b64) d.src = p[2];
  const std::uint64_t align = d.b64 ? 8 : 4;
  if (!d.immediate && d.src % align != 0)
    return refuse(engine_fault::misaligned_address, "COPY_DATA source 0x" + hex_string(d.src), d.src);
  if (d.dst % align != 0) return refuse(engine_fault::misaligned_address, "COPY_DATA destination 0x" + hex_string(d.dst), d.dst);
  return d;
}

// ---- ACQUIRE_MEM (0x58) ------------------------------------------------------------------------
struct acquire_mem_fields {
  std::uint32_t cntl = 0;  // gfx9: CP_COHER_CNTL (dw1 [30:0]); gfx10+: GCR_CNTL (dw7)
  std::uint32_t coher_size = 0, coher_size_hi = 0;
  std::uint64_t coher_base = 0;  // >> 8 as written (dw4, dw5)
  std::uint32_t poll_interval = 0;
};
[[nodiscard]] inline decoded<acquire_mem_fields> decode_acquire_mem(std::span<const std::uint32_t> p, arch::family f) {
  acquire_mem_fields d;
  d.coher_size = p[2];
  d.coher_size_hi = p[3];
  d.poll_interval = p[6];
  if (pm4_gfx9_form(f)) {
    // COHER_SIZE_HI (dw3) is not checked: its width is disputed and tinygrad writes 0xFFFFFFFF (§1.3).
    if ((p[5] & ~0x1FFFFFFu) != 0 || (p[6] & ~0xFFFFu) != 0)
      return refuse(engine_fault::reserved_bits, "ACQUIRE_MEM base_hi/poll reserved bits");
    d.cntl = pm4a::acquire_mem::gfx9::coher_cntl::get(p[1]);
  } else {
    if (p[1] != 0) return refuse(engine_fault::reserved_bits, "ACQUIRE_MEM dw1 is reserved on GFX10+ (was CP_COHER_CNTL)");
    if ((p[5] & ~0xFFFFFFu) != 0 || (p[6] & ~0xFFFFu) != 0 || (p[7] & ~pm4a::gcr_cntl::valid_mask) != 0)
      return refuse(engine_fault::reserved_bits, "ACQUIRE_MEM base_hi/poll/GCR_CNTL reserved bits");
    d.cntl = p[7];
  }
  d.coher_base = make64(p[4], p[5]);
  return d;
}

// ---- RELEASE_MEM (0x49) ------------------------------------------------------------------------
struct release_mem_fields {
  std::uint32_t event_type = 0, event_index = 0;
  std::uint32_t cache_action = 0;  // dw1 [23:12] in place (gcr_gfx10 / cache_gfx9 bits)
  std::uint32_t cache_policy = 0;
  bool execute = false;
  std::uint32_t dst_sel = 0;
  pm4a::release_mem::data_sel_value data_sel = pm4a::release_mem::data_sel_value::none;
  pm4a::release_mem::int_sel_value int_sel = pm4a::release_mem::int_sel_value::none;
  std::uint64_t address = 0;
  std::uint64_t data = 0;          // dw5 | dw6 << 32
  std::uint32_t int_ctxid = 0;
  // Bytes written at `address`: 4 (DATA_SEL 1), 8 (2: data, 3: GPU clock) or 0.
  [[nodiscard]] std::uint32_t data_bytes() const noexcept {
    using ds = pm4a::release_mem::data_sel_value;
    return data_sel == ds::data32_low ? 4 : (data_sel == ds::data64 || data_sel == ds::gpu_clock64) ? 8 : 0;
  }
  [[nodiscard]] bool interrupts() const noexcept {
    using is = pm4a::release_mem::int_sel_value;
    return int_sel == is::send_int || int_sel == is::send_int_on_confirm;
  }
};
[[nodiscard]] inline decoded<release_mem_fields> decode_release_mem(std::span<const std::uint32_t> p) {
  namespace r = pm4a::release_mem;
  if ((p[1] & ~(0x3Fu | 0xF00u | 0xFFF000u | (3u << 25) | (1u << 28))) != 0)
    return refuse(engine_fault::reserved_bits, "RELEASE_MEM dw1 reserved bits");
  release_mem_fields d;
  d.event_type = r::event_type::get(p[1]);
  d.event_index = r::event_index::get(p[1]);
  d.cache_action = p[1] & 0x00FFF000u;
  d.cache_policy = r::cache_policy::get(p[1]);
  d.execute = r::execute::get(p[1]) != 0;
  if (d.event_index != r::event_index_end_of_pipe && d.event_index != r::event_index_shader_done)
    return refuse(engine_fault::reserved_bits, "RELEASE_MEM EVENT_INDEX must be 5 (end of pipe) or 6 (shader done)");
  if ((p[2] & ~((3u << 16) | (7u << 24) | (7u << 29))) != 0)
    return refuse(engine_fault::reserved_bits, "RELEASE_MEM dw2 reserved bits");
  d.dst_sel = r::dst_sel::get(p[2]);
  if (d.dst_sel > 1) return refuse(engine_fault::reserved_bits, "RELEASE_MEM DST_SEL other than memory/TC_L2");
  const std::uint32_t ds = r::data_sel::get(p[2]), is = r::int_sel::get(p[2]);
  if (ds > 3) return refuse(engine_fault::reserved_bits, "RELEASE_MEM DATA_SEL " + std::to_string(ds) + " not supported");
  if (is > 3) return refuse(engine_fault::reserved_bits, "RELEASE_MEM INT_SEL " + std::to_string(is) + " not supported");
  d.data_sel = static_cast<r::data_sel_value>(ds);
  d.int_sel = static_cast<r::int_sel_value>(is);
  d.address = make64(p[3], p[4]);
  d.data = make64(p[5], p[6]);
  d.int_ctxid = p[7];
  if (d.data_bytes() != 0 && d.address % d.data_bytes() != 0)
    return refuse(engine_fault::reserved_bits, "RELEASE_MEM address misaligned for its data", d.address);
  return d;
}

// (value FUNCTION reference) with WAIT_REG_MEM's codes, 32- or 64-bit.
template <class T>
[[nodiscard]] constexpr bool compare(pm4a::wait_reg_mem::compare_function f, T v, T reference) noexcept {
  using cf = pm4a::wait_reg_mem::compare_function;
  switch (f) {
    case cf::always: return true;
    case cf::less: return v < reference;
    case cf::less_equal: return v <= reference;
    case cf::equal: return v == reference;
    case cf::not_equal: return v != reference;
    case cf::greater_equal: return v >= reference;
    case cf::greater: return v > reference;
  }
  return false;
}

// ---- WAIT_REG_MEM (0x3C) -----------------------------------------------------------------------
struct wait_reg_mem_fields {
  pm4a::wait_reg_mem::compare_function function = pm4a::wait_reg_mem::compare_function::always;
  bool memory = false;       // MEM_SPACE 1: poll memory at `address`; 0: poll register `poll_register`
  std::uint32_t operation = 0;  // 0 wait, 1 write-then-wait (registers), 3 wait, preemptible
  std::uint64_t address = 0;     // memory: dword-aligned byte address
  std::uint32_t poll_register = 0, write_register = 0;  // register form: dword addresses (dw2 / dw3)
  std::uint32_t reference = 0, mask = 0;
  std::uint32_t poll_interval = 0;
  // The MEC may preempt the queue while this wait is unsatisfied (OPERATION 3).
  [[nodiscard]] bool preemptible() const noexcept { return operation == pm4a::wait_reg_mem::operation_wait_preemptible; }
  [[nodiscard]] bool holds(std::uint32_t value) const noexcept { return compare(function, value & mask, reference); }
};

// ---- WAIT_REG_MEM64 (0x93) ---------------------------------------------------------------------
struct wait_reg_mem64_fields {
  pm4a::wait_reg_mem::compare_function function = pm4a::wait_reg_mem::compare_function::always;
  std::uint32_t operation = 0;
  std::uint64_t address = 0;  // 8-byte aligned
  std::uint64_t reference = 0, mask = 0;
  std::uint32_t poll_interval = 0;
  [[nodiscard]] bool preemptible() const noexcept { return operation == pm4a::wait_reg_mem::operation_wait_preemptible; }
  [[nodiscard]] bool holds(std::uint64_t value) const noexcept { return compare(function, value & mask, reference); }
};
[[nodiscard]] inline decoded<wait_reg_mem64_fields> decode_wait_reg_mem64(std::span<const std::uint32_t> p) {
  namespace w = pm4a::wait_reg_mem;
  const std::uint32_t fn = w::function::get(p[1]), space = w::mem_space::get(p[1]), op = w::operation::get(p[1]);
  if (fn > 6) return refuse(engine_fault::reserved_bits, "WAIT_REG_MEM64 FUNCTION 7 is reserved");
  if (space != 1) return refuse(engine_fault::reserved_bits, "WAIT_REG_MEM64 polls memory (MEM_SPACE 1) only");
  if (op != w::operation_wait && op != w::operation_wait_preemptible)
    return refuse(engine_fault::reserved_bits, "WAIT_REG_MEM64 OPERATION must be 0 (wait) or 3 (preemptible wait)");
  if ((p[1] & ~(0x7u | 0x30u | 0xC0u | 0x100u | (3u << 25))) != 0)
    return refuse(engine_fault::reserved_bits, "WAIT_REG_MEM64 dw1 reserved bits");
  wait_reg_mem64_fields d;
  d.function = static_cast<w::compare_function>(fn);
  d.operation = op;
  d.address = make64(p[2], p[3]);
  d.reference = make64(p[4], p[5]);
  d.mask = make64(p[6], p[7]);
  d.poll_interval = w::poll_interval::get(p[8]);
  if (d.address % 8 != 0)
    return refuse(engine_fault::reserved_bits, "WAIT_REG_MEM64 address must be 8-byte aligned", d.address);
  return d;
}
[[nodiscard]] inline decoded<wait_reg_mem_fields> decode_wait_reg_mem(std::span<const std::uint32_t> p) {
  namespace w = pm4a::wait_reg_mem;
  const std::uint32_t fn = w::function::get(p[1]), space = w::mem_space::get(p[1]), op = w::operation::get(p[1]);
  if (fn > 6) return refuse(engine_fault::reserved_bits, "WAIT_REG_MEM FUNCTION 7 is reserved");
  if (space > 1) return refuse(engine_fault::reserved_bits, "WAIT_REG_MEM MEM_SPACE must be 0 (register) or 1 (memory)");
  if (op == 2) return refuse(engine_fault::reserved_bits, "WAIT_REG_MEM OPERATION 2 is reserved");
  if ((p[1] & ~(0x7u | 0x30u | 0xC0u | 0x100u | (3u << 22) | (1u << 24) | (3u << 25))) != 0)
    return refuse(engine_fault::reserved_bits, "WAIT_REG_MEM dw1 reserved bits");
  if (op == w::operation_write_wait && space != 0)
    return refuse(engine_fault::reserved_bits, "WAIT_REG_MEM OPERATION 1 (write, then wait) is for registers (MEM_SPACE 0)");
  if (op == w::operation_wait_preemptible && space != 1)
    return refuse(engine_fault::reserved_bits, "WAIT_REG_MEM OPERATION 3 (preemptible wait) is for memory (MEM_SPACE 1)");
  wait_reg_mem_fields d;
  d.function = static_cast<w::compare_function>(fn);
  d.memory = space == 1;
  d.operation = op;
  d.reference = p[4];
  d.mask = p[5];
  d.poll_interval = w::poll_interval::get(p[6]);
  if (d.memory) {
    d.address = make64(p[2], p[3]);
    if (d.address % 4 != 0)
      return refuse(engine_fault::reserved_bits, "WAIT_REG_MEM memory address must be dword aligned", d.address);
  } else {
    d.poll_register = op == 1 ? p[3] : p[2];
    d.write_register = op == 1 ? p[2] : 0;
  }
  return d;
}

// ---- WRITE_DATA (0x37) -------------------------------------------------------------------------
struct write_data_fields {
  std::uint32_t dst_sel = 0;
  bool fixed_address = false;  // ADDR_INCR 1: every dword to the same address
  bool wr_confirm = false;
  std::uint64_t address = 0;
  std::span<const std::uint32_t> data;  // into the packet
};
[[nodiscard]] inline decoded<write_data_fields> decode_write_data(std::span<const std::uint32_t> p) {
  namespace wd = pm4a::write_data;
  if (p.size() < 5) return refuse(engine_fault::bad_count, "WRITE_DATA needs at least one data dword");
  write_data_fields d;
  d.dst_sel = wd::dst_sel::get(p[1]);
  if (d.dst_sel != wd::dst_sel_memory && d.dst_sel != wd::dst_sel_tc_l2)
    return refuse(engine_fault::reserved_bits,
                      "WRITE_DATA DST_SEL " + std::to_string(d.dst_sel) + " not supported (memory or TC_L2 only)");
  if ((p[1] & ~((0xFu << 8) | (1u << 16) | (1u << 20) | (1u << 21) | (3u << 25) | (3u << 30))) != 0)
    return refuse(engine_fault::reserved_bits, "WRITE_DATA dw1 reserved bits");
  d.fixed_address = wd::addr_incr::get(p[1]) != 0;
  d.wr_confirm = wd::wr_confirm::get(p[1]) != 0;
  d.address = make64(p[2], p[3]);
  d.data = p.subspan(4);
  if (d.address % 4 != 0) return refuse(engine_fault::reserved_bits, "WRITE_DATA address must be dword aligned", d.address);
  return d;
}

// ---- INDIRECT_BUFFER (0x3F) --------------------------------------------------------------------
struct indirect_buffer_fields {
  std::uint64_t address = 0;
  std::uint32_t size_dw = 0;
  bool chain = false;
  std::uint32_t vmid = 0;
  std::uint32_t cache_policy = 0;
};
[[nodiscard]] inline decoded<indirect_buffer_fields> decode_indirect_buffer(std::span<const std::uint32_t> p) {
  namespace ib = pm4a::indirect_buffer;
  if (!ib::valid::get(p[3])) return refuse(engine_fault::reserved_bits, "INDIRECT_BUFFER VALID must be 1 on compute");
  if (ib::swap::get(p[1]) != 0) return refuse(engine_fault::reserved_bits, "INDIRECT_BUFFER base bits [1:0] (swap) must be 0");
  indirect_buffer_fields d;
  d.address = make64(p[1], p[2]);
  d.size_dw = ib::ib_size::get(p[3]);
  d.chain = ib::chain::get(p[3]) != 0;
  d.vmid = ib::vmid::get(p[3]);
  d.cache_policy = ib::cache_policy::get(p[3]);
  if (d.size_dw == 0) return refuse(engine_fault::bad_count, "INDIRECT_BUFFER of 0 dwords");
  return d;
}

// ---- COND_INDIRECT_BUFFER (0x3F, 14 dwords) -------------------------------------------------------
struct cond_indirect_buffer_fields {
  bool if_then_else = false;  // MODE 2; MODE 1: if-then
  pm4a::wait_reg_mem::compare_function function = pm4a::wait_reg_mem::compare_function::always;
  std::uint64_t compare_address = 0;  // 8-byte aligned
  std::uint64_t mask = 0, reference = 0;
  std::uint64_t ib1_address = 0, ib2_address = 0;
  std::uint32_t ib1_size = 0, ib2_size = 0;
  [[nodiscard]] bool holds(std::uint64_t value) const noexcept { return compare(function, value & mask, reference); }
};
[[nodiscard]] inline decoded<cond_indirect_buffer_fields> decode_cond_indirect_buffer(std::span<const std::uint32_t> p) {
  namespace c = pm4a::cond_indirect_buffer;
  const std::uint32_t mode = c::mode::get(p[1]), fn = c::function::get(p[1]);
  if (mode != static_cast<std::uint32_t>(c::mode_value::if_then) && mode != static_cast<std::uint32_t>(c::mode_value::if_then_else))
    return refuse(engine_fault::reserved_bits, "COND_INDIRECT_BUFFER MODE must be 1 (if-then) or 2 (if-then-else)");
  if (fn > 6) return refuse(engine_fault::reserved_bits, "COND_INDIRECT_BUFFER FUNCTION 7 is reserved");
  if ((p[1] & ~(c::mode::mask | c::function::mask)) != 0) return refuse(engine_fault::reserved_bits, "COND_INDIRECT_BUFFER dw1 reserved bits");
  cond_indirect_buffer_fields d;
  d.if_then_else = mode == static_cast<std::uint32_t>(c::mode_value::if_then_else);
  d.function = static_cast<pm4a::wait_reg_mem::compare_function>(fn);
  d.compare_address = make64(p[2], p[3]);
  d.mask = make64(p[4], p[5]);
  d.reference = make64(p[6], p[7]);
  d.ib1_address = make64(p[8], p[9]);
  d.ib1_size = c::ib_size::get(p[10]);
  d.ib2_address = make64(p[11], p[12]);
  d.ib2_size = c::ib_size::get(p[13]);
  if (d.compare_address % 8 != 0)
    return refuse(engine_fault::reserved_bits, "COND_INDIRECT_BUFFER compare address must be 8-byte aligned", d.compare_address);
  if ((p[10] & ~(c::ib_size::mask | c::cache_policy::mask)) != 0 || (p[13] & ~(c::ib_size::mask | c::cache_policy::mask)) != 0)
    return refuse(engine_fault::reserved_bits, "COND_INDIRECT_BUFFER IB size dwords: reserved bits");
  if (d.ib1_address % 4 != 0 || (d.if_then_else && d.ib2_address % 4 != 0))
    return refuse(engine_fault::reserved_bits, "COND_INDIRECT_BUFFER IB base bits [1:0] must be 0");
  if (d.ib1_size == 0 || (d.if_then_else && d.ib2_size == 0))
    return refuse(engine_fault::bad_count, "COND_INDIRECT_BUFFER with an IB of 0 dwords");
  return d;
}

// ---- COND_EXEC (0x22) -----------------------------------------------------------------------------
struct cond_exec_fields {
  std::uint64_t address = 0;  // dword aligned
  std::uint32_t exec_count = 0;
  std::uint32_t cache_policy = 0;
};
[[nodiscard]] inline decoded<cond_exec_fields> decode_cond_exec(std::span<const std::uint32_t> p) {
  namespace c = pm4a::cond_exec;
  if (c::addr_lo_reserved::get(p[1]) != 0)
    return refuse(engine_fault::reserved_bits, "COND_EXEC address must be dword aligned", make64(p[1], p[2]));
  if ((p[3] & ~c::cache_policy::mask) != 0) return refuse(engine_fault::reserved_bits, "COND_EXEC dw3 outside CACHE_POLICY");
  if ((p[4] & ~c::exec_count::mask) != 0) return refuse(engine_fault::reserved_bits, "COND_EXEC dw4 outside EXEC_COUNT");
  return cond_exec_fields{make64(p[1], p[2]), c::exec_count::get(p[4]), c::cache_policy::get(p[3])};
}

// ---- EVENT_WRITE (0x46) ------------------------------------------------------------------------
struct event_write_fields {
  std::uint32_t event_type = 0, event_index = 0;
};
[[nodiscard]] inline decoded<event_write_fields> decode_event_write(std::span<const std::uint32_t> p) {
  if (p.size() != 2 && p.size() != 4)
    return refuse(engine_fault::bad_count, "EVENT_WRITE has 2 dwords (or 4 with an address)");
  if ((p[1] & ~0xF3Fu) != 0) return refuse(engine_fault::reserved_bits, "EVENT_WRITE dw1 outside EVENT_TYPE/EVENT_INDEX");
  return event_write_fields{pm4a::event_write::event_type::get(p[1]), pm4a::event_write::event_index::get(p[1])};
}

// ---- PRED_EXEC (0x23) --------------------------------------------------------------------------
struct pred_exec_fields {
  std::uint32_t exec_count = 0;  // dwords that follow under the predicate
  std::uint32_t xcc_mask = 0;    // VIRTUAL_XCC_ID_SELECT
};
[[nodiscard]] inline decoded<pred_exec_fields> decode_pred_exec(std::span<const std::uint32_t> p) {
  if ((p[1] & 0x00FFC000u) != 0) return refuse(engine_fault::reserved_bits, "PRED_EXEC dw1 [23:14]");
  return pred_exec_fields{pm4a::pred_exec::exec_count::get(p[1]), pm4a::pred_exec::virtual_xcc_id_select::get(p[1])};
}

}  // namespace aqueduct::emu::detail
