// aqueduct/queue/pm4_describe.hpp — a PM4 type-3 packet decoded for a person.
//
// Layer: queue. Used on error paths only: a queue's timeout diagnostics ("stalled packet at the
// read pointer") and the emulated PM4 processor's queue errors. Decodes the header (type, COUNT,
// opcode, shader type, predicate) and the fields of the packets a compute queue uses, per
// spec/packets.md §1.1–§1.3, then the raw dwords.
// Thread safety: pure functions.
#pragma once

#include <aqueduct/abi/pm4.hpp>
#include <aqueduct/core/bits.hpp>

#include <cstdint>
#include <cstdio>
#include <span>
#include <string>

namespace aqueduct::ring::pm4 {

// Name of an IT_OPCODE (spec/packets.md §1.2), or nullptr if the table does not have it.
[[nodiscard]] constexpr const char* opcode_name(std::uint32_t op) noexcept {
  using o = abi::pm4::opcode;
  switch (static_cast<o>(op)) {
    case o::nop: return "NOP";
    case o::set_base: return "SET_BASE";
    case o::dispatch_direct: return "DISPATCH_DIRECT";
    case o::dispatch_indirect: return "DISPATCH_INDIRECT";
    case o::indirect_buffer_end: return "INDIRECT_BUFFER_END";
    case o::atomic_mem: return "ATOMIC_MEM";
    case o::cond_exec: return "COND_EXEC";
    case o::pred_exec: return "PRED_EXEC";
    case o::indirect_buffer_priv: return "INDIRECT_BUFFER_PRIV";
    case o::write_data: return "WRITE_DATA";
    case o::mem_semaphore: return "MEM_SEMAPHORE";
    case o::wait_reg_mem: return "WAIT_REG_MEM";
    case o::indirect_buffer: return "INDIRECT_BUFFER";
    case o::copy_data: return "COPY_DATA";
    case o::pfp_sync_me: return "PFP_SYNC_ME";
    case o::event_write: return "EVENT_WRITE";
    case o::event_write_eop: return "EVENT_WRITE_EOP";
    case o::event_write_eos: return "EVENT_WRITE_EOS";
    case o::release_mem: return "RELEASE_MEM";
    case o::dma_data: return "DMA_DATA";
    case o::acquire_mem: return "ACQUIRE_MEM";
    case o::rewind: return "REWIND";
    case o::load_uconfig_reg: return "LOAD_UCONFIG_REG";
    case o::load_sh_reg: return "LOAD_SH_REG";
    case o::set_config_reg: return "SET_CONFIG_REG";
    case o::set_context_reg: return "SET_CONTEXT_REG";
    case o::set_sh_reg: return "SET_SH_REG";
    case o::set_sh_reg_offset: return "SET_SH_REG_OFFSET";
    case o::set_uconfig_reg: return "SET_UCONFIG_REG";
    case o::set_uconfig_reg_index: return "SET_UCONFIG_REG_INDEX";
    case o::wait_reg_mem64: return "WAIT_REG_MEM64";
    case o::hdp_flush: return "HDP_FLUSH";
    case o::invalidate_tlbs: return "INVALIDATE_TLBS";
    case o::aql_packet: return "AQL_PACKET";
    case o::set_sh_reg_index: return "SET_SH_REG_INDEX";
    case o::set_resources: return "SET_RESOURCES";
    case o::map_process: return "MAP_PROCESS";
    case o::map_queues: return "MAP_QUEUES";
    case o::unmap_queues: return "UNMAP_QUEUES";
    case o::query_status: return "QUERY_STATUS";
    case o::run_list: return "RUN_LIST";
    case o::map_process_vm: return "MAP_PROCESS_VM";
    case o::set_context_reg_pairs_packed: return "SET_CONTEXT_REG_PAIRS_PACKED";
    case o::set_sh_reg_pairs_packed: return "SET_SH_REG_PAIRS_PACKED";
    case o::set_sh_reg_pairs_packed_n: return "SET_SH_REG_PAIRS_PACKED_N";
  }
  return nullptr;
}

// Appends "<OPCODE> count=N [fields] raw=xxxxxxxx ..." for the packet whose dwords start at
// `p[0]` (the header). `p` may be shorter than the packet (e.g. only what was written so far);
// only the dwords present are decoded. At most 24 raw dwords are printed.
inline void describe_packet(std::span<const std::uint32_t> p, std::string& out) {
  namespace a = abi::pm4;
  char buf[256];
  if (p.empty()) {
    out += "(no dwords)";
    return;
  }
  const std::uint32_t h = p[0];
  const auto at = [&](std::size_t i) -> std::uint32_t { return i < p.size() ? p[i] : 0u; };
  if (h == a::type2_filler) {
    out += "type-2 filler";
  } else if (a::header_type::get(h) != a::packet_type3) {
    std::snprintf(buf, sizeof buf, "type-%u packet (not type 3)", a::header_type::get(h));
    out += buf;
  } else {
    const std::uint32_t op = a::header_opcode::get(h);
    const char* name = opcode_name(op);
    std::snprintf(buf, sizeof buf, "%s (opcode 0x%02X) count=%u dwords=%u%s%s%s", name ? name : "unknown opcode", op,
                  a::header_count::get(h), a::type3_packet_dwords(h), a::header_shader_type::get(h) ? " compute" : "",
                  a::header_predicate::get(h) ? " predicate" : "", (h & 0xF8u) != 0 ? " reserved-bits[7:3]-set" : "");
    out += buf;
    int n = 0;
    switch (static_cast<a::opcode>(op)) {
      case a::opcode::set_sh_reg:
        n = std::snprintf(buf, sizeof buf, " reg=0x%04X (first of %u)", a::set_sh_reg::reg_offset::get(at(1)) + a::sh_reg_base,
                          a::header_count::get(h));
        break;
      case a::opcode::dispatch_direct:
        n = std::snprintf(buf, sizeof buf, " dim=%u,%u,%u initiator=0x%X", at(1), at(2), at(3), at(4));
        break;
      case a::opcode::copy_data:
        n = std::snprintf(buf, sizeof buf, " src_sel=%u dst_sel=%u count_sel=%u src=0x%llx dst=0x%llx", a::copy_data::src_sel::get(at(1)),
                          a::copy_data::dst_sel::get(at(1)), a::copy_data::count_sel::get(at(1)),
                          static_cast<unsigned long long>(make64(at(2), at(3))), static_cast<unsigned long long>(make64(at(4), at(5))));
        break;
      case a::opcode::dispatch_indirect:
        n = std::snprintf(buf, sizeof buf, " counts=0x%llx initiator=0x%X", static_cast<unsigned long long>(make64(at(1), at(2))), at(3));
        break;
      case a::opcode::release_mem:
        n = std::snprintf(buf, sizeof buf, " event=0x%X index=%u data_sel=%u int_sel=%u addr=0x%llx data=0x%llx ctxid=%u",
                          a::release_mem::event_type::get(at(1)), a::release_mem::event_index::get(at(1)),
                          a::release_mem::data_sel::get(at(2)), a::release_mem::int_sel::get(at(2)),
                          static_cast<unsigned long long>(make64(at(3), at(4))),
                          static_cast<unsigned long long>(make64(at(5), at(6))), at(7));
        break;
      case a::opcode::wait_reg_mem:
        n = std::snprintf(buf, sizeof buf, " function=%u mem_space=%u operation=%u addr=0x%llx ref=0x%X mask=0x%X poll=%u",
                          a::wait_reg_mem::function::get(at(1)), a::wait_reg_mem::mem_space::get(at(1)),
                          a::wait_reg_mem::operation::get(at(1)), static_cast<unsigned long long>(make64(at(2), at(3))),
                          at(4), at(5), a::wait_reg_mem::poll_interval::get(at(6)));
        break;
      case a::opcode::indirect_buffer:
        if (a::type3_packet_dwords(h) == a::cond_indirect_buffer::dwords)  // COND_INDIRECT_BUFFER shares the opcode
          n = std::snprintf(buf, sizeof buf, " COND mode=%u function=%u compare=0x%llx ref=0x%llx mask=0x%llx ib1=0x%llx/%u ib2=0x%llx/%u",
                            a::cond_indirect_buffer::mode::get(at(1)), a::cond_indirect_buffer::function::get(at(1)),
                            static_cast<unsigned long long>(make64(at(2), at(3))), static_cast<unsigned long long>(make64(at(6), at(7))),
                            static_cast<unsigned long long>(make64(at(4), at(5))), static_cast<unsigned long long>(make64(at(8), at(9))),
                            a::cond_indirect_buffer::ib_size::get(at(10)), static_cast<unsigned long long>(make64(at(11), at(12))),
                            a::cond_indirect_buffer::ib_size::get(at(13)));
        else
          n = std::snprintf(buf, sizeof buf, " ib=0x%llx size=%u valid=%u chain=%u", static_cast<unsigned long long>(make64(at(1), at(2))),
                            a::indirect_buffer::ib_size::get(at(3)), a::indirect_buffer::valid::get(at(3)),
                            a::indirect_buffer::chain::get(at(3)));
        break;
      case a::opcode::cond_exec:
        n = std::snprintf(buf, sizeof buf, " addr=0x%llx exec_count=%u", static_cast<unsigned long long>(make64(at(1), at(2))),
                          a::cond_exec::exec_count::get(at(4)));
        break;
      case a::opcode::wait_reg_mem64:
        n = std::snprintf(buf, sizeof buf, " function=%u operation=%u addr=0x%llx ref=0x%llx mask=0x%llx",
                          a::wait_reg_mem::function::get(at(1)), a::wait_reg_mem::operation::get(at(1)),
                          static_cast<unsigned long long>(make64(at(2), at(3))), static_cast<unsigned long long>(make64(at(4), at(5))),
                          static_cast<unsigned long long>(make64(at(6), at(7))));
        break;
      case a::opcode::write_data:
        n = std::snprintf(buf, sizeof buf, " dst_sel=%u addr=0x%llx", a::write_data::dst_sel::get(at(1)),
                          static_cast<unsigned long long>(make64(at(2), at(3))));
        break;
      case a::opcode::event_write:
        n = std::snprintf(buf, sizeof buf, " event=%u index=%u", a::event_write::event_type::get(at(1)),
                          a::event_write::event_index::get(at(1)));
        break;
      default: break;
    }
    if (n > 0) out.append(buf, static_cast<std::size_t>(n));
  }
  out += " raw=";
  const std::size_t shown = p.size() < 24 ? p.size() : 24;
  for (std::size_t i = 0; i < shown; ++i) {
    std::snprintf(buf, sizeof buf, "%s%08x", i ? " " : "", p[i]);
    out += buf;
  }
  if (shown < p.size()) out += " ...";
}

}  // namespace aqueduct::ring::pm4
