// aqueduct/emu/pm4_packets.hpp — how the emulated MEC decodes, validates and runs each PM4 packet.
//
// Layer: emu. The packet interpreter of `pm4_processor` (emu/pm4_processor.hpp): the type-3 header
// checks (reserved bits, PREDICATE, fixed COUNTs), then NOP, SET_SH_REG (into the SH register
// file), ACQUIRE_MEM, RELEASE_MEM (EOP write and interrupt), WAIT_REG_MEM (retry until the
// compare holds), WRITE_DATA, INDIRECT_BUFFER (nested up to max_ib_depth, with PRED_EXEC),
// EVENT_WRITE and PRED_EXEC (spec/packets.md §1.3). DISPATCH_DIRECT is in emu/pm4_dispatch.hpp.
// Any packet the rules reject stops the queue through pm4_processor::fail.
// Part of `pm4_processor`: these are the definitions of members it declares. Include
// <aqueduct/emu/pm4_processor.hpp> (which includes this header at its end); this header includes
// it too, so it also compiles on its own.
// Thread safety: runs on the processor thread only.
#pragma once

#include <aqueduct/abi/pm4.hpp>
#include <aqueduct/core/bits.hpp>
#include <aqueduct/emu/pm4_processor.hpp>
#include <aqueduct/queue/pm4_describe.hpp>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <span>
#include <string>
#include <vector>

namespace aqueduct::emu {

inline pm4_processor::step pm4_processor::execute(std::span<const std::uint32_t> p, unsigned depth, bool in_ib) {
  namespace a = abi::pm4;
  const std::uint32_t h = p[0];
  const auto bad = [&](engine_fault f, const std::string& why, std::uint64_t addr = 0) {
    fail(f, p, addr, in_ib, why);
    return step::fault;
  };
  if (h == a::type2_filler) return step::done;
  if (a::header_type::get(h) != a::packet_type3) return bad(engine_fault::not_type3, "");
  if ((h & 0xF8u) != 0) return bad(engine_fault::reserved_bits, "header bits [7:3] are reserved");
  if (a::header_reset_filter_cam::get(h)) return bad(engine_fault::reserved_bits, "RESET_FILTER_CAM is only for *_PAIRS_PACKED");
  if (a::header_predicate::get(h)) return bad(engine_fault::reserved_bits, "PREDICATE on a compute queue");
  const auto op = static_cast<a::opcode>(a::header_opcode::get(h));
  if (const std::uint32_t fixed = a::fixed_packet_dwords(op, gfx9_form_); fixed != 0 && p.size() != fixed)
    return bad(engine_fault::bad_count, "this packet has exactly " + std::to_string(fixed) + " dwords");
  switch (op) {
    case a::opcode::nop: return step::done;
    case a::opcode::set_sh_reg: return set_sh_reg(p, bad);
    case a::opcode::dispatch_direct: return dispatch_direct(p, in_ib);
    case a::opcode::acquire_mem: return acquire_mem(p, bad);
    case a::opcode::release_mem: return release_mem(p, bad);
    case a::opcode::wait_reg_mem: return wait_reg_mem(p, bad);
    case a::opcode::write_data: return write_data(p, bad);
    case a::opcode::indirect_buffer: return indirect_buffer(p, depth, bad);
    case a::opcode::event_write: {
      if (p.size() != 2 && p.size() != 4) return bad(engine_fault::bad_count, "EVENT_WRITE has 2 dwords (or 4 with an address)");
      if ((p[1] & ~0xF3Fu) != 0) return bad(engine_fault::reserved_bits, "EVENT_WRITE dw1 outside EVENT_TYPE/EVENT_INDEX");
      return step::done;  // the emulated pipe is idle between packets: partial flushes complete at once
    }
    case a::opcode::pred_exec:
      if (!in_ib) return step::done;  // MEC firmware: outside an IB it acts as EXEC_COUNT 0 (§1.3)
      pred_skip_ = (a::pred_exec::virtual_xcc_id_select::get(p[1]) & 1u) ? 0 : a::pred_exec::exec_count::get(p[1]);
      if ((p[1] & 0x00FFC000u) != 0) return bad(engine_fault::reserved_bits, "PRED_EXEC dw1 [23:14]");
      return step::done;
    default: break;
  }
  const char* name = ring::pm4::opcode_name(static_cast<std::uint32_t>(op));
  return bad(engine_fault::unknown_opcode, name ? std::string(name) + " is not run by this emulated MEC" : "");
}

template <class Bad>
pm4_processor::step pm4_processor::set_sh_reg(std::span<const std::uint32_t> p, Bad& bad) {
  namespace a = abi::pm4;
  if (p.size() < 3) return bad(engine_fault::bad_count, "SET_SH_REG needs a register offset and at least one value");
  if ((p[1] & 0xFFFF0000u) != 0) return bad(engine_fault::reserved_bits, "SET_SH_REG dw1 [31:16] (VMID_SHIFT/INDEX) not supported");
  const std::uint32_t off = a::set_sh_reg::reg_offset::get(p[1]);
  const std::size_t n = p.size() - 2;
  if (off + n > a::sh_reg_end - a::sh_reg_base)
    return bad(engine_fault::bad_register, "registers 0x" + hex(off + a::sh_reg_base) + "+" + std::to_string(n) + " leave the SH window");
  for (std::size_t i = 0; i < n; ++i) sh_[off + i] = p[2 + i];
  return step::done;
}

template <class Bad>
pm4_processor::step pm4_processor::acquire_mem(std::span<const std::uint32_t> p, Bad& bad) {
  if (gfx9_form_) {
    // COHER_SIZE_HI (dw3) is not checked: its width is disputed and tinygrad writes 0xFFFFFFFF (§1.3).
    if ((p[5] & ~0x1FFFFFFu) != 0 || (p[6] & ~0xFFFFu) != 0)
      return bad(engine_fault::reserved_bits, "ACQUIRE_MEM base_hi/poll reserved bits");
  } else {
    if (p[1] != 0) return bad(engine_fault::reserved_bits, "ACQUIRE_MEM dw1 is reserved on GFX10+ (was CP_COHER_CNTL)");
    if ((p[5] & ~0xFFFFFFu) != 0 || (p[6] & ~0xFFFFu) != 0 || (p[7] & ~0x7FFFFu) != 0)
      return bad(engine_fault::reserved_bits, "ACQUIRE_MEM base_hi/poll/GCR_CNTL reserved bits");
  }
  // The emulated caches are coherent: nothing to write back or invalidate. Every workgroup of
  // earlier dispatches ran on this thread, so their stores are ordered before what follows.
  return step::done;
}

template <class Bad>
pm4_processor::step pm4_processor::release_mem(std::span<const std::uint32_t> p, Bad& bad) {
  namespace r = abi::pm4::release_mem;
  if ((p[1] & ~(0x3Fu | 0xF00u | 0xFFF000u | (3u << 25) | (1u << 28))) != 0)
    return bad(engine_fault::reserved_bits, "RELEASE_MEM dw1 reserved bits");
  const std::uint32_t idx = r::event_index::get(p[1]);
  if (idx != r::event_index_end_of_pipe && idx != r::event_index_shader_done)
    return bad(engine_fault::reserved_bits, "RELEASE_MEM EVENT_INDEX must be 5 (end of pipe) or 6 (shader done)");
  if ((p[2] & ~((3u << 16) | (7u << 24) | (7u << 29))) != 0) return bad(engine_fault::reserved_bits, "RELEASE_MEM dw2 reserved bits");
  if (r::dst_sel::get(p[2]) > 1) return bad(engine_fault::reserved_bits, "RELEASE_MEM DST_SEL other than memory/TC_L2");
  const std::uint32_t ds = r::data_sel::get(p[2]), is = r::int_sel::get(p[2]);
  if (ds > 3) return bad(engine_fault::reserved_bits, "RELEASE_MEM DATA_SEL " + std::to_string(ds) + " not supported");
  if (is > 3) return bad(engine_fault::reserved_bits, "RELEASE_MEM INT_SEL " + std::to_string(is) + " not supported");
  if (b_.eop_buffer_bytes == 0 || !vm_.is_mapped(b_.eop_buffer_va, b_.eop_buffer_bytes))
    return bad(engine_fault::no_eop_buffer, "the queue has no mapped EOP buffer");
  const std::uint64_t addr = make64(p[3], p[4]);
  const std::uint64_t size = ds == 1 ? 4 : (ds == 2 || ds == 3) ? 8 : 0;
  if (size != 0) {
    if (addr % size != 0) return bad(engine_fault::reserved_bits, "RELEASE_MEM address misaligned for its data", addr);
    if (!vm_.is_mapped(addr, size)) return bad(engine_fault::not_mapped, "RELEASE_MEM destination", addr);
    // End of pipe: every earlier workgroup ran on this thread; the release store publishes them.
    if (ds == 1) {
      std::atomic_ref<std::uint32_t>(*host<std::uint32_t>(addr)).store(p[5], std::memory_order_release);
    } else {
      const std::uint64_t v = ds == 2 ? make64(p[5], p[6]) : gpu_clock();
      std::atomic_ref<std::uint64_t>(*host<std::uint64_t>(addr)).store(v, std::memory_order_release);
    }
  }
  if (is == 1 || is == 2) {
    // KFD: INT_CTXID is the event id; gfx9-class queues send 0 (tinygrad) and the kernel then
    // finds the event from the slot written — the emulator uses the value written instead.
    const std::uint32_t id = (p[7] != 0 || !gfx9_form_ || ds != 1) ? p[7] : p[5];
    events_.signal_event(id);
  }
  return step::done;
}

template <class Bad>
pm4_processor::step pm4_processor::wait_reg_mem(std::span<const std::uint32_t> p, Bad& bad) {
  namespace w = abi::pm4::wait_reg_mem;
  const std::uint32_t fn = w::function::get(p[1]), space = w::mem_space::get(p[1]), op = w::operation::get(p[1]);
  if (fn > 6) return bad(engine_fault::reserved_bits, "WAIT_REG_MEM FUNCTION 7 is reserved");
  if (space > 1) return bad(engine_fault::reserved_bits, "WAIT_REG_MEM MEM_SPACE must be 0 (register) or 1 (memory)");
  if (op == 2) return bad(engine_fault::reserved_bits, "WAIT_REG_MEM OPERATION 2 is reserved");
  if ((p[1] & ~(0x7u | 0x30u | 0xC0u | 0x100u | (3u << 22) | (1u << 24) | (3u << 25))) != 0)
    return bad(engine_fault::reserved_bits, "WAIT_REG_MEM dw1 reserved bits");
  if (space == 0) return step::done;  // register polls (HDP flush): the emulated HDP is always flushed
  const std::uint64_t addr = make64(p[2], p[3]);
  if (addr % 4 != 0) return bad(engine_fault::reserved_bits, "WAIT_REG_MEM memory address must be dword aligned", addr);
  if (!vm_.is_mapped(addr, 4)) return bad(engine_fault::not_mapped, "WAIT_REG_MEM poll address", addr);
  const std::uint32_t v = std::atomic_ref<std::uint32_t>(*host<std::uint32_t>(addr)).load(std::memory_order_acquire) & p[5];
  const std::uint32_t ref = p[4];
  bool ok_ = false;
  switch (fn) {
    case 0: ok_ = true; break;
    case 1: ok_ = v < ref; break;
    case 2: ok_ = v <= ref; break;
    case 3: ok_ = v == ref; break;
    case 4: ok_ = v != ref; break;
    case 5: ok_ = v >= ref; break;
    case 6: ok_ = v > ref; break;
  }
  return ok_ ? step::done : step::retry;
}

template <class Bad>
pm4_processor::step pm4_processor::write_data(std::span<const std::uint32_t> p, Bad& bad) {
  namespace wd = abi::pm4::write_data;
  if (p.size() < 5) return bad(engine_fault::bad_count, "WRITE_DATA needs at least one data dword");
  const std::uint32_t dst = wd::dst_sel::get(p[1]);
  if (dst != wd::dst_sel_memory && dst != wd::dst_sel_tc_l2)
    return bad(engine_fault::reserved_bits, "WRITE_DATA DST_SEL " + std::to_string(dst) + " not supported (memory or TC_L2 only)");
  if ((p[1] & ~((0xFu << 8) | (1u << 16) | (1u << 20) | (1u << 21) | (3u << 25) | (3u << 30))) != 0)
    return bad(engine_fault::reserved_bits, "WRITE_DATA dw1 reserved bits");
  const std::uint64_t addr = make64(p[2], p[3]);
  const std::size_t n = p.size() - 4;
  const bool fixed = wd::addr_incr::get(p[1]) != 0;
  if (addr % 4 != 0) return bad(engine_fault::reserved_bits, "WRITE_DATA address must be dword aligned", addr);
  if (!vm_.is_mapped(addr, fixed ? 4 : 4 * n)) return bad(engine_fault::not_mapped, "WRITE_DATA destination", addr);
  auto* d = host<std::uint32_t>(addr);
  for (std::size_t i = 0; i < n; ++i)
    std::atomic_ref<std::uint32_t>(d[fixed ? 0 : i]).store(p[4 + i], std::memory_order_release);
  return step::done;
}

template <class Bad>
pm4_processor::step pm4_processor::indirect_buffer(std::span<const std::uint32_t> p, unsigned depth, Bad& bad) {
  namespace ib = abi::pm4::indirect_buffer;
  if (!ib::valid::get(p[3])) return bad(engine_fault::reserved_bits, "INDIRECT_BUFFER VALID must be 1 on compute");
  if (ib::swap::get(p[1]) != 0) return bad(engine_fault::reserved_bits, "INDIRECT_BUFFER base bits [1:0] (swap) must be 0");
  if (ib::chain::get(p[3])) return bad(engine_fault::reserved_bits, "chained IBs are not supported");
  const std::uint32_t size = ib::ib_size::get(p[3]);
  const std::uint64_t addr = make64(p[1], p[2]);
  if (size == 0) return bad(engine_fault::bad_count, "INDIRECT_BUFFER of 0 dwords");
  if (depth + 1 > opt_.max_ib_depth) return bad(engine_fault::bad_count, "indirect buffers nested too deep");
  if (!vm_.is_mapped(addr, 4ull * size)) return bad(engine_fault::not_mapped, "indirect buffer", addr);
  std::vector<std::uint32_t> buf(size);
  std::memcpy(buf.data(), host<const std::uint32_t>(addr), 4ull * size);
  pred_skip_ = 0;
  for (std::size_t at = 0; at < size;) {
    const std::uint64_t len = packet_dwords(buf[at]);
    if (at + len > size) {
      fail(engine_fault::bad_count, std::span<const std::uint32_t>(buf).subspan(at), addr + 4 * at, true,
           "packet runs past the end of its indirect buffer");
      return step::fault;
    }
    if (pred_skip_ != 0) {  // PRED_EXEC excluded this XCC: skip the next EXEC_COUNT dwords
      const std::uint32_t skip = static_cast<std::uint32_t>(std::min<std::uint64_t>(pred_skip_, size - at));
      pred_skip_ = 0;
      at += skip;
      continue;
    }
    const auto pk = std::span<const std::uint32_t>(buf).subspan(at, len);
    step s;
    while ((s = execute(pk, depth + 1, true)) == step::retry) {
      if (preemption_point(false) == step::stopped) return step::stopped;
      std::unique_lock lock(mu_);
      if (stop_) return step::stopped;
      cv_.wait_for(lock, opt_.wait_poll);
    }
    if (s != step::done) return s;
    at += len;
  }
  return step::done;
}


}  // namespace aqueduct::emu
