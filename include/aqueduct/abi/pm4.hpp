// aqueduct/abi/pm4.hpp — PM4 type-3 packets as the compute micro-engine (MEC) reads them.
//
// Layer: abi (bit-exact wire formats only). The type-3 header, the opcode table, and the payload
// layouts of the packets a compute runtime emits (spec/packets.md §1). Each packet is a fixed-size
// struct of dwords (dw0 = header) with static_asserts on size and offsets; each dword's fields are
// `bitfield`s in the packet's namespace. Where a generation differs, the difference is a separate
// name (`acquire_mem::gfx9` vs `acquire_mem::gfx10`, `release_mem::gcr_gfx10` vs
// `release_mem::cache_gfx9`). Encoders live in queue/pm4_encoder.hpp.
// Thread safety: constants and plain structs.
#pragma once

#include <aqueduct/core/bits.hpp>

#include <cstddef>
#include <cstdint>

namespace aqueduct::abi::pm4 {

// ---- §1.1 header ---------------------------------------------------------------------------
using header_type = bitfield<30, 2>;               // 3 = type-3 packet
using header_count = bitfield<16, 14>;             // payload dwords - 1
using header_opcode = bitfield<8, 8>;              // IT_OPCODE, table §1.2
using header_reset_filter_cam = bitflag<2>;        // GFX11+, *_PAIRS_PACKED only [MESA]
using header_shader_type = bitflag<1>;             // 1 = compute; MEC accepts 0 (tinygrad, Linux)
using header_predicate = bitflag<0>;               // gfx predication; 0 on compute

inline constexpr std::uint32_t packet_type3 = 3;
inline constexpr std::uint32_t type2_filler = 0x80000000u;  // 1-dword filler (CP_PACKET2) §1.1
inline constexpr std::uint32_t nop_header_only_count = 0x3FFFu;  // NOP with COUNT 0x3FFF = 1 dword §1.1
inline constexpr std::uint32_t max_payload_dwords = header_count::max + 1;

enum class shader_type : std::uint32_t { graphics = 0, compute = 1 };

// §1.2 opcodes used by compute runtimes.
enum class opcode : std::uint8_t {
  nop = 0x10,
  set_base = 0x11,
  dispatch_direct = 0x15,
  dispatch_indirect = 0x16,
  indirect_buffer_end = 0x17,
  atomic_mem = 0x1E,
  cond_exec = 0x22,
  pred_exec = 0x23,
  indirect_buffer_priv = 0x32,
  write_data = 0x37,
  mem_semaphore = 0x39,
  wait_reg_mem = 0x3C,
  indirect_buffer = 0x3F,
  copy_data = 0x40,
  pfp_sync_me = 0x42,
  event_write = 0x46,
  event_write_eop = 0x47,
  event_write_eos = 0x48,
  release_mem = 0x49,
  dma_data = 0x50,
  acquire_mem = 0x58,
  rewind = 0x59,
  load_uconfig_reg = 0x5E,
  load_sh_reg = 0x5F,
  set_config_reg = 0x68,
  set_context_reg = 0x69,
  set_sh_reg = 0x76,
  set_sh_reg_offset = 0x77,
  set_uconfig_reg = 0x79,
  set_uconfig_reg_index = 0x7A,
  wait_reg_mem64 = 0x93,
  hdp_flush = 0x95,
  invalidate_tlbs = 0x98,
  aql_packet = 0x99,
  set_sh_reg_index = 0x9B,
  set_resources = 0xA0,
  map_process = 0xA1,
  map_queues = 0xA2,
  unmap_queues = 0xA3,
  query_status = 0xA4,
  run_list = 0xA5,
  map_process_vm = 0xA6,
  set_context_reg_pairs_packed = 0xB9,
  set_sh_reg_pairs_packed = 0xBB,
  set_sh_reg_pairs_packed_n = 0xBD,
};

// The type-3 header for a packet of `payload_dwords` (>= 1) dwords after dw0 (§1.1 formula).
[[nodiscard]] constexpr std::uint32_t type3_header(opcode op, std::uint32_t payload_dwords,
                                                   shader_type st = shader_type::graphics,
                                                   bool predicate = false) noexcept {
  return header_type::put(packet_type3) | header_count::put(payload_dwords - 1) |
         header_opcode::put(static_cast<std::uint8_t>(op)) |
         header_shader_type::put(static_cast<std::uint32_t>(st)) | header_predicate::put(predicate ? 1 : 0);
}
// Whole packet length in dwords (COUNT + 2) of a type-3 header; 1 for the header-only NOP.
[[nodiscard]] constexpr std::uint32_t type3_packet_dwords(std::uint32_t header) noexcept {
  if (header_opcode::get(header) == static_cast<std::uint8_t>(opcode::nop) &&
      header_count::get(header) == nop_header_only_count)
    return 1;
  return header_count::get(header) + 2;
}

// ---- register windows (dword addresses) §1.2 -------------------------------------------------
inline constexpr std::uint32_t sh_reg_base = 0x2C00;
inline constexpr std::uint32_t sh_reg_end = 0x3000;
inline constexpr std::uint32_t uconfig_reg_base = 0xC000;
inline constexpr std::uint32_t config_reg_base = 0x2000;
inline constexpr std::uint32_t context_reg_base = 0xA000;

// ---- VGT event types (EVENT_WRITE / RELEASE_MEM EVENT_TYPE) §1.3 [TG soc_11.py] ------------
enum class vgt_event : std::uint8_t {
  cache_flush_ts = 4,
  cache_flush = 6,
  cs_partial_flush = 7,
  cache_flush_and_inv_ts_event = 0x14,
  cache_flush_and_inv_event = 22,
  bottom_of_pipe_ts = 40,
  cs_done = 47,
  thread_trace_start = 51,
  thread_trace_stop = 52,
  thread_trace_marker = 53,
  thread_trace_finish = 55,
};

// ---- NOP (0x10) §1.3: N payload dwords skipped ---------------------------------------------
namespace nop {
inline constexpr std::uint32_t header_only = 0xC0000000u | (nop_header_only_count << 16) | (0x10u << 8);  // FFFF1000
}  // namespace nop

// ---- SET_SH_REG (0x76) / SET_UCONFIG_REG (0x79) §1.3 ----------------------------------------
namespace set_sh_reg {
using reg_offset = bitfield<0, 16>;  // dw1: abs dword address - 0x2C00 (SH) / - 0xC000 (UCONFIG)
using vmid_shift = bitfield<23, 5>;  // dw1, SH only
using index = bitfield<28, 4>;       // dw1: 0 default, 1 insert VMID
// Fixed part; COUNT = 1 + number of values, values follow dw1.
struct packet_head {
  std::uint32_t header;
  std::uint32_t reg;
};
static_assert(sizeof(packet_head) == 8 && alignof(packet_head) == 4);
static_assert(offsetof(packet_head, reg) == 4);
inline constexpr std::uint32_t max_values = max_payload_dwords - 1;
}  // namespace set_sh_reg

// ---- DISPATCH_DIRECT (0x15) §1.3: 5 dwords, COUNT 3 -----------------------------------------
namespace dispatch_direct {
struct packet {
  std::uint32_t header;
  std::uint32_t dim_x;  // work-group counts unless INITIATOR.USE_THREAD_DIMENSIONS
  std::uint32_t dim_y;
  std::uint32_t dim_z;
  std::uint32_t dispatch_initiator;  // COMPUTE_DISPATCH_INITIATOR value
};
static_assert(sizeof(packet) == 20 && alignof(packet) == 4);
static_assert(offsetof(packet, dim_x) == 4 && offsetof(packet, dim_y) == 8 && offsetof(packet, dim_z) == 12 &&
              offsetof(packet, dispatch_initiator) == 16);
inline constexpr std::uint32_t dwords = 5;
}  // namespace dispatch_direct

// ---- DISPATCH_INDIRECT (0x16), compute (MEC) form: 4 dwords, COUNT 2 -------------------------
// The grid is read when the MEC reaches the packet: three u32 workgroup counts (x, y, z) at a
// 4-byte-aligned address. AMD's PAL (GPUOpen-Drivers/pal src/core/hw/gfxip/gfx9/gfx9CmdUtil.cpp
// CmdUtil::BuildDispatchIndirectMec; PM4_MEC_DISPATCH_INDIRECT: addr_lo, addr_hi,
// dispatch_initiator, SIZEDW 4) — the graphics ring's form (SET_BASE + data_offset) differs. A
// zero count discards the dispatch (PAL's ComputeCmdBuffer leaves zero-size dispatches "to the HW
// to discard").
namespace dispatch_indirect {
struct packet {
  std::uint32_t header;
  std::uint32_t addr_lo;             // of {x, y, z} workgroup counts; 4-byte aligned
  std::uint32_t addr_hi;
  std::uint32_t dispatch_initiator;  // COMPUTE_DISPATCH_INITIATOR value
};
static_assert(sizeof(packet) == 16 && alignof(packet) == 4);
static_assert(offsetof(packet, addr_lo) == 4 && offsetof(packet, addr_hi) == 8 && offsetof(packet, dispatch_initiator) == 12);
inline constexpr std::uint32_t dwords = 4;
inline constexpr std::uint32_t args_bytes = 12;  // x, y, z
}  // namespace dispatch_indirect

// COMPUTE_DISPATCH_INITIATOR §1.5 [TG-REGS].
namespace dispatch_initiator {
using compute_shader_en = bitflag<0>;
using partial_tg_en = bitflag<1>;
using force_start_at_000 = bitflag<2>;
using ordered_append_enbl = bitflag<3>;
using ordered_append_mode = bitflag<4>;
using use_thread_dimensions = bitflag<5>;
using order_mode = bitflag<6>;
using scalar_l1_inv_vol = bitflag<10>;
using vector_l1_inv_vol = bitflag<11>;
using data_atc_gfx9 = bitflag<12>;      // gfx9 APU (ROCT); gfx12: PING_PONG_EN
using tunnel_enable = bitflag<13>;      // GFX10+
using restore = bitflag<14>;
using cs_w32_en = bitflag<15>;          // GFX10+: wave32
using amp_shader_en = bitflag<16>;      // GFX10+
using disable_disp_prempt_en = bitflag<17>;  // GFX10+
}  // namespace dispatch_initiator

// ---- GCR_CNTL §1.3 (ACQUIRE_MEM dw7 on gfx10+; same bits as SDMA GCR_REQ) --------------------
namespace gcr_cntl {
using gli_inv = bitfield<0, 2>;  // 1 = whole I$
using gl1_range = bitfield<2, 2>;
using glm_wb = bitflag<4>;
using glm_inv = bitflag<5>;
using glk_wb = bitflag<6>;
using glk_inv = bitflag<7>;
using glv_inv = bitflag<8>;
using gl1_inv = bitflag<9>;
using gl2_us = bitflag<10>;
using gl2_range = bitfield<11, 2>;
using gl2_discard = bitflag<13>;
using gl2_inv = bitflag<14>;
using gl2_wb = bitflag<15>;
using seq = bitfield<16, 2>;
using range_is_pa = bitflag<18>;
inline constexpr std::uint32_t valid_mask = 0x7FFFFu;  // [18:0]
}  // namespace gcr_cntl

// CP_COHER_CNTL §1.3 (ACQUIRE_MEM dw1 on gfx9).
namespace cp_coher_cntl {
using tc_nc_action_ena = bitflag<3>;
using tc_wc_action_ena = bitflag<4>;
using tc_inv_metadata_action_ena = bitflag<5>;
using tcl1_vol_action_ena = bitflag<15>;
using tc_wb_action_ena = bitflag<18>;
using tcl1_action_ena = bitflag<22>;
using tc_action_ena = bitflag<23>;
using cb_action_ena = bitflag<25>;
using db_action_ena = bitflag<26>;
using sh_kcache_action_ena = bitflag<27>;
using sh_kcache_vol_action_ena = bitflag<28>;
using sh_icache_action_ena = bitflag<29>;
using sh_kcache_wb_action_ena = bitflag<30>;
}  // namespace cp_coher_cntl

// ---- ACQUIRE_MEM (0x58) §1.3 ----------------------------------------------------------------
namespace acquire_mem {
// GFX9: 7 dwords, COUNT 5.
namespace gfx9 {
using coher_cntl = bitfield<0, 31>;  // dw1: CP_COHER_CNTL
using engine = bitflag<31>;          // dw1: 0 PFP, 1 ME
using coher_size_hi = bitfield<0, 24>;  // dw3: [7:0] in soc15d, [23:0] in the VG10 variant; Linux gfx9 mem_sync writes 0xFFFFFF
using coher_base_hi = bitfield<0, 25>;  // dw5
using poll_interval = bitfield<0, 16>;  // dw6
struct packet {
  std::uint32_t header;
  std::uint32_t coher_cntl_engine;
  std::uint32_t coher_size;
  std::uint32_t coher_size_hi;
  std::uint32_t coher_base_lo;
  std::uint32_t coher_base_hi;
  std::uint32_t poll_interval;
};
static_assert(sizeof(packet) == 28 && alignof(packet) == 4);
static_assert(offsetof(packet, coher_cntl_engine) == 4 && offsetof(packet, coher_size) == 8 &&
              offsetof(packet, coher_size_hi) == 12 && offsetof(packet, coher_base_lo) == 16 &&
              offsetof(packet, coher_base_hi) == 20 && offsetof(packet, poll_interval) == 24);
inline constexpr std::uint32_t dwords = 7;
}  // namespace gfx9
// GFX10/11/12: 8 dwords, COUNT 6; dw1 reserved (write 0), dw7 = GCR_CNTL.
namespace gfx10 {
// dw3: nvd.h masks [7:0] but Linux gfx10/11 mem_sync writes 0xFFFFFF and tinygrad 0xFFFFFFFF (§6.2);
// declared [23:0] so Linux's value is representable.
using coher_size_hi = bitfield<0, 24>;
using coher_base_hi = bitfield<0, 24>;  // dw5
using poll_interval = bitfield<0, 16>;  // dw6
using gcr_cntl = bitfield<0, 19>;       // dw7
struct packet {
  std::uint32_t header;
  std::uint32_t reserved;
  std::uint32_t coher_size;
  std::uint32_t coher_size_hi;
  std::uint32_t coher_base_lo;
  std::uint32_t coher_base_hi;
  std::uint32_t poll_interval;
  std::uint32_t gcr_cntl;
};
static_assert(sizeof(packet) == 32 && alignof(packet) == 4);
static_assert(offsetof(packet, reserved) == 4 && offsetof(packet, coher_size) == 8 &&
              offsetof(packet, coher_size_hi) == 12 && offsetof(packet, coher_base_lo) == 16 &&
              offsetof(packet, coher_base_hi) == 20 && offsetof(packet, poll_interval) == 24 &&
              offsetof(packet, gcr_cntl) == 28);
inline constexpr std::uint32_t dwords = 8;
}  // namespace gfx10
}  // namespace acquire_mem

// ---- RELEASE_MEM (0x49) §1.3: 8 dwords, COUNT 6, all GFX9+ --------------------------------
namespace release_mem {
using event_type = bitfield<0, 6>;   // dw1, vgt_event
using event_index = bitfield<8, 4>;  // dw1: 5 end_of_pipe, 6 shader_done
using cache_policy = bitfield<25, 2>;  // dw1
// dw1 bit 28: EXECUTE (nvd.h) / EOP_EXEC "for trailing fence" (Linux soc15d.h); the AI struct's
// bit 29 is not used here (§6.3). Linux gfx11/12 have a separate EXECUTE_GFX11 define; we never set it.
using execute = bitflag<28>;
namespace gcr_gfx10 {  // dw1 [23:12] on GFX10/11/12
using glm_wb = bitflag<12>;
using glm_inv = bitflag<13>;
using glv_inv = bitflag<14>;
using gl1_inv = bitflag<15>;
using gl2_us = bitflag<16>;
using gl2_range = bitfield<17, 2>;
using gl2_discard = bitflag<19>;
using gl2_inv = bitflag<20>;
using gl2_wb = bitflag<21>;
using seq = bitfield<22, 2>;
}  // namespace gcr_gfx10
namespace cache_gfx9 {  // dw1 action bits on GFX9 (soc15d)
using tcl1_vol_action_en = bitflag<12>;
using tc_vol_action_en = bitflag<13>;
using tc_wb_action_en = bitflag<15>;
using tcl1_action_en = bitflag<16>;
using tc_action_en = bitflag<17>;
using tc_nc_action_en = bitflag<19>;
using tc_wc_action_en = bitflag<20>;
using tc_md_action_en = bitflag<21>;
}  // namespace cache_gfx9
using dst_sel = bitfield<16, 2>;  // dw2: 0 memory, 1 TC_L2, 2 queue wptr reg, 3 wptr poll mask
using int_sel = bitfield<24, 3>;  // dw2, see enum
using data_sel = bitfield<29, 3>;  // dw2, see enum
enum class int_sel_value : std::uint32_t {
  none = 0, send_int = 1, send_int_on_confirm = 2, send_data_on_confirm = 3,
  unconditional_int_ctxid = 4, conditional_int_32 = 5, conditional_int_64 = 6,
};
enum class data_sel_value : std::uint32_t {
  none = 0, data32_low = 1, data64 = 2, gpu_clock64 = 3, cp_perfcounter = 4, gds = 5,
};
inline constexpr std::uint32_t event_index_end_of_pipe = 5;
inline constexpr std::uint32_t event_index_shader_done = 6;
struct packet {
  std::uint32_t header;
  std::uint32_t event_cntl;  // dw1
  std::uint32_t data_cntl;   // dw2
  std::uint32_t address_lo;  // dword (32-bit data) / qword (64-bit) aligned byte address
  std::uint32_t address_hi;
  std::uint32_t data_lo;
  std::uint32_t data_hi;
  std::uint32_t int_ctxid;   // delivered with the interrupt; KFD: the event id
};
static_assert(sizeof(packet) == 32 && alignof(packet) == 4);
static_assert(offsetof(packet, event_cntl) == 4 && offsetof(packet, data_cntl) == 8 &&
              offsetof(packet, address_lo) == 12 && offsetof(packet, address_hi) == 16 &&
              offsetof(packet, data_lo) == 20 && offsetof(packet, data_hi) == 24 &&
              offsetof(packet, int_ctxid) == 28);
inline constexpr std::uint32_t dwords = 8;
}  // namespace release_mem

// ---- WAIT_REG_MEM (0x3C) §1.3: 7 dwords, COUNT 5 --------------------------------------------
namespace wait_reg_mem {
using function = bitfield<0, 3>;   // dw1, compare_function
using mem_space = bitfield<4, 2>;  // dw1: 0 register, 1 memory
using operation = bitfield<6, 2>;  // dw1: 0 wait, 1 write-then-wait (registers), 3 wait preemptable (memory)
using engine_sel = bitfield<8, 1>;  // dw1: 0 ME/MEC
using cache_policy = bitfield<25, 2>;  // dw1
using poll_interval = bitfield<0, 16>;  // dw6
using optimize_ace_offload_mode = bitflag<31>;  // dw6 (ROCT sets 1)
inline constexpr std::uint32_t operation_wait = 0;
inline constexpr std::uint32_t operation_write_wait = 1;          // registers: write, then poll
inline constexpr std::uint32_t operation_wait_preemptible = 3;    // memory: the wait may be preempted
enum class compare_function : std::uint32_t {
  always = 0, less = 1, less_equal = 2, equal = 3, not_equal = 4, greater_equal = 5, greater = 6,
};
struct packet {
  std::uint32_t header;
  std::uint32_t control;     // dw1
  std::uint32_t poll_addr_lo;  // memory: dword-aligned byte address; register: dword address
  std::uint32_t poll_addr_hi;  // memory: high half; op=1: register polled after the write
  std::uint32_t reference;
  std::uint32_t mask;
  std::uint32_t poll_interval;  // dw6
};
static_assert(sizeof(packet) == 28 && alignof(packet) == 4);
static_assert(offsetof(packet, control) == 4 && offsetof(packet, poll_addr_lo) == 8 &&
              offsetof(packet, poll_addr_hi) == 12 && offsetof(packet, reference) == 16 &&
              offsetof(packet, mask) == 20 && offsetof(packet, poll_interval) == 24);
inline constexpr std::uint32_t dwords = 7;
}  // namespace wait_reg_mem

// ---- WRITE_DATA (0x37) §1.3: COUNT = 2 + ndw ------------------------------------------------
namespace write_data {
using dst_sel = bitfield<8, 4>;    // dw1: 0 mmio reg, 2 TC_L2, 3 GDS, 5 memory, 6 ADC state
using addr_incr = bitflag<16>;     // dw1: 0 increment, 1 fixed address
using wr_confirm = bitflag<20>;
using mode = bitflag<21>;
using cache_policy = bitfield<25, 2>;
using engine_sel = bitfield<30, 2>;
inline constexpr std::uint32_t dst_sel_register = 0;
inline constexpr std::uint32_t dst_sel_tc_l2 = 2;
inline constexpr std::uint32_t dst_sel_gds = 3;
inline constexpr std::uint32_t dst_sel_memory = 5;
// Fixed part; data dwords follow.
struct packet_head {
  std::uint32_t header;
  std::uint32_t control;
  std::uint32_t dst_addr_lo;  // memory [31:2]; register [17:0]
  std::uint32_t dst_addr_hi;
};
static_assert(sizeof(packet_head) == 16 && alignof(packet_head) == 4);
static_assert(offsetof(packet_head, control) == 4 && offsetof(packet_head, dst_addr_lo) == 8 &&
              offsetof(packet_head, dst_addr_hi) == 12);
inline constexpr std::uint32_t head_dwords = 4;
}  // namespace write_data

// ---- COPY_DATA (0x40), compute (MEC) form: 6 dwords, COUNT 4 --------------------------------
// One or two dwords from a source to a destination, in queue order. AMD's PAL
// (GPUOpen-Drivers/pal src/core/hw/gfxip/gfx9/chip/gfx9_plus_merged_f32_mec_pm4_packets.h,
// PM4_MEC_COPY_DATA and its enums; the same values in PAL's gfx10 and gfx11 MEC headers): dw1
// SRC_SEL [3:0] (2 = memory through TC L2, 5 = immediate), DST_SEL [11:8] (2 = memory through TC
// L2), SRC_CACHE_POLICY [14:13], COUNT_SEL [16] (0: 32 bits, 1: 64 bits), WR_CONFIRM [20],
// DST_CACHE_POLICY [26:25], PQ_EXE_STATUS [29]; dw2/dw3 source address (or immediate data),
// dw4/dw5 destination address; a 32-bit memory address is 4-byte aligned, a 64-bit one 8.
namespace copy_data {
using src_sel = bitfield<0, 4>;
using dst_sel = bitfield<8, 4>;
using src_cache_policy = bitfield<13, 2>;
using count_sel = bitflag<16>;
using wr_confirm = bitflag<20>;
using dst_cache_policy = bitfield<25, 2>;
using pq_exe_status = bitflag<29>;
inline constexpr std::uint32_t defined_control_bits = 0x26116F0Fu;
inline constexpr std::uint32_t sel_tc_l2 = 2;       // memory (src and dst)
inline constexpr std::uint32_t src_sel_immediate = 5;
struct packet {
  std::uint32_t header;
  std::uint32_t control;
  std::uint32_t src_lo;  // address [31:2] (64-bit: [31:3]) or immediate data
  std::uint32_t src_hi;  // address or the immediate's high dword
  std::uint32_t dst_lo;
  std::uint32_t dst_hi;
};
static_assert(sizeof(packet) == 24 && alignof(packet) == 4);
static_assert(offsetof(packet, control) == 4 && offsetof(packet, src_lo) == 8 && offsetof(packet, dst_lo) == 16);
inline constexpr std::uint32_t dwords = 6;
}  // namespace copy_data

// ---- INDIRECT_BUFFER (0x3F) §1.3: 4 dwords, COUNT 2 -----------------------------------------
namespace indirect_buffer {
using swap = bitfield<0, 2>;        // dw1 [1:0], must be 0
using ib_size = bitfield<0, 20>;    // dw3: size in dwords
using chain = bitflag<20>;
using offload_polling = bitflag<21>;  // compute (gfx ring: PRE_ENB)
using valid = bitflag<23>;          // must be 1 on compute
using vmid = bitfield<24, 4>;
using cache_policy = bitfield<28, 2>;
using pre_resume = bitflag<30>;     // gfx; Linux MES queues: "inherit vmid"
using priv = bitflag<31>;
struct packet {
  std::uint32_t header;
  std::uint32_t ib_base_lo;
  std::uint32_t ib_base_hi;
  std::uint32_t control;
};
static_assert(sizeof(packet) == 16 && alignof(packet) == 4);
static_assert(offsetof(packet, ib_base_lo) == 4 && offsetof(packet, ib_base_hi) == 8 && offsetof(packet, control) == 12);
inline constexpr std::uint32_t dwords = 4;
}  // namespace indirect_buffer

// ---- COND_EXEC (0x22): 5 dwords, COUNT 3 --------------------------------------------------------
// [PAL gfx9_plus_merged_f32_mec_pm4_packets.h PM4_MEC_COND_EXEC; LNX gfx_v11_0_ring_emit_init_cond_exec]
// The next EXEC_COUNT dwords run only if the 32-bit value at ADDR is not 0 (Linux: "discard
// following DWs if *cond_exec_gpu_addr==0"). docs/pm4.md "Device-evaluated control flow".
namespace cond_exec {
using addr_lo_reserved = bitfield<0, 2>;  // dw1 [1:0]: the address is dword aligned
using cache_policy = bitfield<25, 2>;     // dw3; the rest of dw3 is reserved
using exec_count = bitfield<0, 14>;       // dw4
struct packet {
  std::uint32_t header;
  std::uint32_t addr_lo;
  std::uint32_t addr_hi;
  std::uint32_t control;
  std::uint32_t exec_count;
};
static_assert(sizeof(packet) == 20 && alignof(packet) == 4);
static_assert(offsetof(packet, addr_lo) == 4 && offsetof(packet, addr_hi) == 8 && offsetof(packet, control) == 12 &&
              offsetof(packet, exec_count) == 16);
inline constexpr std::uint32_t dwords = 5;
}  // namespace cond_exec

// ---- COND_INDIRECT_BUFFER (0x3F, COUNT 12): 14 dwords --------------------------------------------
// [PAL PM4_MEC_COND_INDIRECT_BUFFER] The same opcode as INDIRECT_BUFFER, told apart by its length.
// ((*COMPARE_ADDR & MASK) FUNCTION REFERENCE), 64-bit: true runs IB1; false runs IB2 in
// IF_THEN_ELSE mode and nothing in IF_THEN mode. FUNCTION codes are WAIT_REG_MEM's.
namespace cond_indirect_buffer {
using mode = bitfield<0, 2>;       // dw1
using function = bitfield<8, 3>;   // dw1
using compare_addr_reserved = bitfield<0, 3>;  // dw2 [2:0]: the compare address is 8-byte aligned
using ib_base_reserved = bitfield<0, 2>;       // dw8 / dw11 [1:0]
using ib_size = bitfield<0, 20>;               // dw10 / dw13, dwords
using cache_policy = bitfield<28, 2>;          // dw10 / dw13
enum class mode_value : std::uint32_t { if_then = 1, if_then_else = 2 };
struct packet {
  std::uint32_t header;
  std::uint32_t control;  // MODE, FUNCTION
  std::uint32_t compare_addr_lo;
  std::uint32_t compare_addr_hi;
  std::uint32_t mask_lo;
  std::uint32_t mask_hi;
  std::uint32_t reference_lo;
  std::uint32_t reference_hi;
  std::uint32_t ib1_base_lo;
  std::uint32_t ib1_base_hi;
  std::uint32_t ib1_size;
  std::uint32_t ib2_base_lo;
  std::uint32_t ib2_base_hi;
  std::uint32_t ib2_size;
};
static_assert(sizeof(packet) == 56 && alignof(packet) == 4);
static_assert(offsetof(packet, compare_addr_lo) == 8 && offsetof(packet, mask_lo) == 16 && offsetof(packet, reference_lo) == 24 &&
              offsetof(packet, ib1_base_lo) == 32 && offsetof(packet, ib1_size) == 40 && offsetof(packet, ib2_base_lo) == 44 &&
              offsetof(packet, ib2_size) == 52);
inline constexpr std::uint32_t dwords = 14;
}  // namespace cond_indirect_buffer

// ---- WAIT_REG_MEM64 (0x93): 9 dwords, COUNT 7 --------------------------------------------------
// [PAL PM4_MEC_WAIT_REG_MEM64] WAIT_REG_MEM on a 64-bit value: dw1 as WAIT_REG_MEM's; the memory
// address is 8-byte aligned; reference and mask are 64-bit.
namespace wait_reg_mem64 {
using poll_addr_reserved = bitfield<0, 3>;  // dw2 [2:0]
struct packet {
  std::uint32_t header;
  std::uint32_t control;  // wait_reg_mem::function / mem_space / operation / cache_policy
  std::uint32_t poll_addr_lo;
  std::uint32_t poll_addr_hi;
  std::uint32_t reference_lo;
  std::uint32_t reference_hi;
  std::uint32_t mask_lo;
  std::uint32_t mask_hi;
  std::uint32_t poll_interval;  // wait_reg_mem::poll_interval, optimize_ace_offload_mode
};
static_assert(sizeof(packet) == 36 && alignof(packet) == 4);
static_assert(offsetof(packet, reference_lo) == 16 && offsetof(packet, mask_lo) == 24 && offsetof(packet, poll_interval) == 32);
inline constexpr std::uint32_t dwords = 9;
}  // namespace wait_reg_mem64

// ---- EVENT_WRITE (0x46) §1.3 ----------------------------------------------------------------
namespace event_write {
using event_type = bitfield<0, 6>;   // dw1, vgt_event
using event_index = bitfield<8, 4>;  // dw1: 0 other, 2 sample pipelinestat, 4 partial flush, 7 cache flush
inline constexpr std::uint32_t event_index_partial_flush = 4;
// CS_PARTIAL_FLUSH form: header + dw1 (COUNT 0). Sample events append ADDRESS_LO[31:3]/HI.
struct packet {
  std::uint32_t header;
  std::uint32_t event_cntl;
};
static_assert(sizeof(packet) == 8 && offsetof(packet, event_cntl) == 4);
inline constexpr std::uint32_t dwords = 2;
}  // namespace event_write

// ---- PRED_EXEC (0x23) §1.3 ------------------------------------------------------------------
namespace pred_exec {
using exec_count = bitfield<0, 14>;               // dwords that follow under the predicate
using virtual_xcc_id_select = bitfield<24, 8>;    // XCC bitmask
struct packet {
  std::uint32_t header;
  std::uint32_t control;
};
static_assert(sizeof(packet) == 8 && offsetof(packet, control) == 4);
inline constexpr std::uint32_t dwords = 2;
}  // namespace pred_exec

// Whole length in dwords of the fixed-size packets above (ACQUIRE_MEM per generation; opcode 0x3F
// is INDIRECT_BUFFER's 4 — COND_INDIRECT_BUFFER shares the opcode with 14), 0 for
// the variable-length ones (NOP, SET_SH_REG, WRITE_DATA) and for opcodes not described here.
// For decoders that reject a bad COUNT.
[[nodiscard]] constexpr std::uint32_t fixed_packet_dwords(opcode op, bool gfx9_form) noexcept {
  switch (op) {
    case opcode::dispatch_direct: return dispatch_direct::dwords;
    case opcode::dispatch_indirect: return dispatch_indirect::dwords;
    case opcode::copy_data: return copy_data::dwords;
    case opcode::acquire_mem: return gfx9_form ? acquire_mem::gfx9::dwords : acquire_mem::gfx10::dwords;
    case opcode::release_mem: return release_mem::dwords;
    case opcode::wait_reg_mem: return wait_reg_mem::dwords;
    case opcode::indirect_buffer: return indirect_buffer::dwords;  // or cond_indirect_buffer::dwords (same opcode)
    case opcode::cond_exec: return cond_exec::dwords;
    case opcode::wait_reg_mem64: return wait_reg_mem64::dwords;
    case opcode::pred_exec: return pred_exec::dwords;
    default: return 0;
  }
}

}  // namespace aqueduct::abi::pm4
