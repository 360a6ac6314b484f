// Tests for abi/pm4.hpp. Every expected dword is quoted from spec/packets.md (§1.1 header
// examples, §2 tinygrad's emitted dwords, §2.5 Linux/ROCT reference values), never computed by
// an encoder.
#include <aqueduct/abi/pm4.hpp>

#include <doctest/doctest.h>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

namespace pm4 = aqueduct::abi::pm4;
using pm4::opcode;

// §1.1 worked examples (shader_type = 0).
static_assert(pm4::type3_header(opcode::nop, 1) == 0xC0001000u);
static_assert(pm4::type3_header(opcode::dispatch_direct, 4) == 0xC0031500u);
static_assert(pm4::type3_header(opcode::event_write, 1) == 0xC0004600u);
static_assert(pm4::type3_header(opcode::acquire_mem, 7) == 0xC0065800u);  // gfx10+
static_assert(pm4::type3_header(opcode::acquire_mem, 6) == 0xC0055800u);  // gfx9
static_assert(pm4::type3_header(opcode::release_mem, 7) == 0xC0064900u);
static_assert(pm4::type3_header(opcode::wait_reg_mem, 6) == 0xC0053C00u);
static_assert(pm4::type3_header(opcode::indirect_buffer, 3) == 0xC0023F00u);
// "SET_SH_REG with n values C00n7600": payload = reg dword + n values.
static_assert(pm4::type3_header(opcode::set_sh_reg, 1 + 1) == 0xC0017600u);
static_assert(pm4::type3_header(opcode::set_sh_reg, 1 + 2) == 0xC0027600u);
static_assert(pm4::type3_header(opcode::set_sh_reg, 1 + 3) == 0xC0037600u);
static_assert(pm4::type3_header(opcode::set_sh_reg, 1 + 8) == 0xC0087600u);

// Packet lengths against the spec's dword counts.
static_assert(sizeof(pm4::acquire_mem::gfx9::packet) / 4 == pm4::acquire_mem::gfx9::dwords);
static_assert(sizeof(pm4::acquire_mem::gfx10::packet) / 4 == pm4::acquire_mem::gfx10::dwords);
static_assert(pm4::acquire_mem::gfx9::dwords == 7 && pm4::acquire_mem::gfx10::dwords == 8);
static_assert(pm4::release_mem::dwords == 8 && pm4::wait_reg_mem::dwords == 7);
static_assert(pm4::indirect_buffer::dwords == 4 && pm4::dispatch_direct::dwords == 5);

TEST_CASE("type-3 header fields and lengths (§1.1)") {
  CHECK(pm4::header_type::get(0xC0065800u) == 3u);
  CHECK(pm4::header_count::get(0xC0065800u) == 6u);
  CHECK(pm4::header_opcode::get(0xC0065800u) == 0x58u);
  CHECK(pm4::type3_packet_dwords(0xC0065800u) == 8u);   // gfx10+ ACQUIRE_MEM: 8 dwords
  CHECK(pm4::type3_packet_dwords(0xC0055800u) == 7u);   // gfx9: 7 dwords
  CHECK(pm4::type3_packet_dwords(0xC0064900u) == 8u);
  CHECK(pm4::type3_packet_dwords(0xC0053C00u) == 7u);
  CHECK(pm4::type3_packet_dwords(0xC0023F00u) == 4u);
  CHECK(pm4::type3_packet_dwords(0xC0004600u) == 2u);
  // "0x3FFF on NOP = header-only 1-dword NOP"; Linux's ring nop is PACKET3(NOP, 0x3FFF).
  CHECK(pm4::nop::header_only == 0xFFFF1000u);
  CHECK(pm4::type3_packet_dwords(pm4::nop::header_only) == 1u);
  CHECK(pm4::type2_filler == 0x80000000u);
  // PACKET3_COMPUTE = PACKET3 | 1<<1.
  CHECK(pm4::type3_header(opcode::set_sh_reg, 2, pm4::shader_type::compute) == 0xC0017602u);
}

TEST_CASE("opcode table (§1.2)") {
  CHECK(static_cast<int>(opcode::nop) == 0x10);
  CHECK(static_cast<int>(opcode::dispatch_direct) == 0x15);
  CHECK(static_cast<int>(opcode::write_data) == 0x37);
  CHECK(static_cast<int>(opcode::wait_reg_mem) == 0x3C);
  CHECK(static_cast<int>(opcode::indirect_buffer) == 0x3F);
  CHECK(static_cast<int>(opcode::event_write) == 0x46);
  CHECK(static_cast<int>(opcode::release_mem) == 0x49);
  CHECK(static_cast<int>(opcode::acquire_mem) == 0x58);
  CHECK(static_cast<int>(opcode::set_sh_reg) == 0x76);
  CHECK(static_cast<int>(opcode::set_uconfig_reg) == 0x79);
  CHECK(static_cast<int>(opcode::pred_exec) == 0x23);
  CHECK(static_cast<int>(opcode::set_sh_reg_pairs_packed) == 0xBB);
}

TEST_CASE("GCR_CNTL values from tinygrad, Linux and ROCT (§1.3)") {
  namespace g = pm4::gcr_cntl;
  // tinygrad full barrier 0xC3F1.
  CHECK((g::gli_inv::put(1) | g::glm_wb::put(1) | g::glm_inv::put(1) | g::glk_wb::put(1) | g::glk_inv::put(1) |
         g::glv_inv::put(1) | g::gl1_inv::put(1) | g::gl2_inv::put(1) | g::gl2_wb::put(1)) == 0xC3F1u);
  // tinygrad pre-dispatch 0x03F0 (GLM/GLK WB+INV, GLV_INV, GL1_INV).
  CHECK((g::glm_wb::put(1) | g::glm_inv::put(1) | g::glk_wb::put(1) | g::glk_inv::put(1) | g::glv_inv::put(1) |
         g::gl1_inv::put(1)) == 0x03F0u);
  // Linux gfx11 mem_sync 0xC3B1.
  CHECK((g::gl2_inv::put(1) | g::gl2_wb::put(1) | g::glm_inv::put(1) | g::glm_wb::put(1) | g::gl1_inv::put(1) |
         g::glv_inv::put(1) | g::glk_inv::put(1) | g::gli_inv::put(1)) == 0xC3B1u);
  // ROCT NV kfdtest 0x4381.
  CHECK((g::gl2_inv::put(1) | g::gl1_inv::put(1) | g::glv_inv::put(1) | g::glk_inv::put(1) | g::gli_inv::put(1)) ==
        0x4381u);
}

TEST_CASE("CP_COHER_CNTL values on gfx9 (§1.3, §2.2)") {
  namespace c = pm4::cp_coher_cntl;
  const auto hsa = c::sh_icache_action_ena::put(1) | c::sh_kcache_action_ena::put(1) | c::tc_action_ena::put(1) |
                   c::tcl1_action_ena::put(1);
  CHECK(hsa == 0x28C00000u);                                    // ROCT / HSA runtime
  CHECK((hsa | c::tc_wb_action_ena::put(1)) == 0x28C40000u);   // tinygrad gfx9 memory_barrier
  CHECK(pm4::acquire_mem::gfx9::engine::mask == 0x80000000u);
}

TEST_CASE("RELEASE_MEM dw1/dw2 values (§2.2, §2.5)") {
  namespace r = pm4::release_mem;
  namespace g = r::gcr_gfx10;
  const auto eop = r::event_type::put(0x14) | r::event_index::put(r::event_index_end_of_pipe);
  CHECK(eop == 0x514u);
  // tinygrad gfx11 signal: 0x0070F514.
  CHECK((eop | g::glm_wb::put(1) | g::glm_inv::put(1) | g::glv_inv::put(1) | g::gl1_inv::put(1) | g::gl2_inv::put(1) |
         g::gl2_wb::put(1) | g::seq::put(1)) == 0x0070F514u);
  // Linux gfx11 fence: SEQ|GL2_WB|GLM_INV|GLM_WB|CACHE_POLICY(3)|EVENT 0x14|INDEX 5 = 0x06603514.
  CHECK((eop | g::seq::put(1) | g::gl2_wb::put(1) | g::glm_inv::put(1) | g::glm_wb::put(1) | r::cache_policy::put(3)) ==
        0x06603514u);
  // tinygrad gfx9 signal: TC_WB | TC_NC = 0x00088514.
  CHECK((eop | r::cache_gfx9::tc_wb_action_en::put(1) | r::cache_gfx9::tc_nc_action_en::put(1)) == 0x00088514u);
  // dw2: 32-bit data, no interrupt = 0x20000000; with interrupt after write confirm = 0x22000000.
  CHECK(r::data_sel::put(static_cast<std::uint32_t>(r::data_sel_value::data32_low)) == 0x20000000u);
  CHECK((r::data_sel::put(1) | r::int_sel::put(static_cast<std::uint32_t>(r::int_sel_value::send_int_on_confirm))) ==
        0x22000000u);
  CHECK(r::execute::mask == (1u << 28));  // Linux soc15d.h EOP_EXEC / nvd.h EXECUTE
}

TEST_CASE("WAIT_REG_MEM control values (§2.2)") {
  namespace w = pm4::wait_reg_mem;
  // wait(sig, v): memory, >= → 0x15; poll_bit: memory, == → 0x13; HDP flush: reg, write-then-wait, >= → 0x45.
  CHECK((w::function::put(5) | w::mem_space::put(1)) == 0x15u);
  CHECK((w::function::put(static_cast<std::uint32_t>(w::compare_function::equal)) | w::mem_space::put(1)) == 0x13u);
  CHECK((w::function::put(static_cast<std::uint32_t>(w::compare_function::greater_equal)) | w::mem_space::put(0) |
         w::operation::put(1)) == 0x45u);
  CHECK(w::optimize_ace_offload_mode::mask == 0x80000000u);
}

TEST_CASE("INDIRECT_BUFFER, WRITE_DATA, EVENT_WRITE, DISPATCH_INITIATOR fields (§1.3, §1.5, §2.1)") {
  namespace ib = pm4::indirect_buffer;
  CHECK(ib::valid::mask == 0x00800000u);
  CHECK(ib::ib_size::mask == 0x000FFFFFu);
  CHECK(ib::vmid::put(0xF) == 0x0F000000u);
  CHECK(ib::pre_resume::mask == 0x40000000u);  // "Linux MES queues also set 0x40000000"
  namespace wd = pm4::write_data;
  CHECK(wd::dst_sel::put(wd::dst_sel_memory) == 0x500u);
  CHECK(wd::wr_confirm::mask == (1u << 20));
  CHECK(wd::engine_sel::mask == 0xC0000000u);
  // tinygrad: EVENT_WRITE 0x407 = CS_PARTIAL_FLUSH (7), EVENT_INDEX 4.
  namespace ew = pm4::event_write;
  CHECK((ew::event_type::put(static_cast<std::uint32_t>(pm4::vgt_event::cs_partial_flush)) |
         ew::event_index::put(ew::event_index_partial_flush)) == 0x407u);
  // INITIATOR: tinygrad gfx11 wave32 0x8005 / wave64 0x5; ROCT 0x21.
  namespace di = pm4::dispatch_initiator;
  CHECK((di::compute_shader_en::put(1) | di::force_start_at_000::put(1) | di::cs_w32_en::put(1)) == 0x8005u);
  CHECK((di::compute_shader_en::put(1) | di::force_start_at_000::put(1)) == 0x5u);
  CHECK((di::compute_shader_en::put(1) | di::use_thread_dimensions::put(1)) == 0x21u);
  // SET_SH_REG dw1: tinygrad PGM_LO at SH+0x20C.
  CHECK(pm4::set_sh_reg::reg_offset::put(0x2E0C - pm4::sh_reg_base) == 0x20Cu);
}

TEST_CASE("packet structs are dword arrays in wire order") {
  pm4::release_mem::packet p{};
  p.header = 0xC0064900u;
  p.int_ctxid = 42;
  const auto* dw = reinterpret_cast<const std::uint32_t*>(&p);
  CHECK(dw[0] == 0xC0064900u);
  CHECK(dw[7] == 42u);
}

TEST_CASE("fixed packet lengths for decoders (§1.1 headers: COUNT + 2)") {
  CHECK(pm4::fixed_packet_dwords(opcode::acquire_mem, false) == pm4::type3_packet_dwords(0xC0065800u));
  CHECK(pm4::fixed_packet_dwords(opcode::acquire_mem, true) == pm4::type3_packet_dwords(0xC0055800u));
  CHECK(pm4::fixed_packet_dwords(opcode::release_mem, false) == pm4::type3_packet_dwords(0xC0064900u));
  CHECK(pm4::fixed_packet_dwords(opcode::wait_reg_mem, true) == pm4::type3_packet_dwords(0xC0053C00u));
  CHECK(pm4::fixed_packet_dwords(opcode::indirect_buffer, false) == pm4::type3_packet_dwords(0xC0023F00u));
  CHECK(pm4::fixed_packet_dwords(opcode::dispatch_direct, false) == pm4::type3_packet_dwords(0xC0031500u));
  CHECK(pm4::fixed_packet_dwords(opcode::set_sh_reg, false) == 0u);
  CHECK(pm4::fixed_packet_dwords(opcode::nop, false) == 0u);
}

}  // namespace AQ_UNITY_ID
