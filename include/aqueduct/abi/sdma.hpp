// aqueduct/abi/sdma.hpp — SDMA (system DMA engine) packets per engine version.
//
// Layer: abi (bit-exact wire formats only). Header dw0 = OP [7:0] | SUB_OP [15:8] | per-packet
// flags (spec/packets.md §3.1). Layouts follow §3.2: v4 = vega10 (gfx9, incl. MI200/MI300 4.4.x),
// v5 = navi10 (gfx10.1; 5.2 for gfx10.3 widens the byte counts), v6 = gfx11, v7 = gfx12 (Linux's
// sdma_v7_0.c reuses the v6 packet header; its COPY_LINEAR carries an 8th, DCC-control dword and
// its CONSTANT_FILL header has a COMPRESS bit at 16). Fields that exist only from some version on
// are named `*_v5` / `*_v6` / `*_v7`. Every struct has static_asserts on size and offsets.
// Thread safety: constants and plain structs.
#pragma once

#include <aqueduct/core/bits.hpp>

#include <cstddef>
#include <cstdint>

namespace aqueduct::abi::sdma {

// Engine versions whose packet formats differ (§3.2, §3.3).
enum class engine : std::uint8_t { v4_0, v5_0, v5_2, v6_0, v7_0 };

[[nodiscard]] constexpr const char* engine_name(engine e) noexcept {
  switch (e) {
    case engine::v4_0: return "SDMA 4";
    case engine::v5_0: return "SDMA 5.0";
    case engine::v5_2: return "SDMA 5.2";
    case engine::v6_0: return "SDMA 6";
    case engine::v7_0: return "SDMA 7";
  }
  return "SDMA ?";
}

// SDMA IP version (major.minor from the IP discovery / KFD topology) → packet format.
// Precondition: major in 4..7.
[[nodiscard]] constexpr engine engine_from_ip(std::uint32_t major, std::uint32_t minor) noexcept {
  switch (major) {
    case 4: return engine::v4_0;
    case 5: return minor >= 2 ? engine::v5_2 : engine::v5_0;
    case 6: return engine::v6_0;
    default: return engine::v7_0;
  }
}

// Width of the COPY_LINEAR / CONSTANT_FILL byte-count field (§3.3): 22 bits up to SDMA 5.0, 30 after.
[[nodiscard]] constexpr unsigned count_bits(engine e) noexcept {
  return (e == engine::v4_0 || e == engine::v5_0) ? 22u : 30u;
}
// Recommended maximum bytes per COPY_LINEAR (§3.3, Mesa SDMA_V2_0/V5_2_COPY_MAX_BYTES): the count
// field's range minus the last 255 bytes, which the 22-bit engines cannot copy. Multiple of 256.
[[nodiscard]] constexpr std::uint64_t max_copy_bytes(engine e) noexcept {
  return count_bits(e) == 22 ? 0x3FFF00u : 0x3FFFFF00u;
}
// CONSTANT_FILL's byte-count field is 30 bits only from SDMA 6 on (§3.2; Mesa ac_cmdbuf_sdma.c
// uses 22 bits on 5.2 for fills although its copies use 30).
[[nodiscard]] constexpr unsigned fill_count_bits(engine e) noexcept { return e >= engine::v6_0 ? 30u : 22u; }
// Maximum bytes per (dword) CONSTANT_FILL: the count field's range rounded down to dwords (Mesa).
[[nodiscard]] constexpr std::uint64_t max_fill_bytes(engine e) noexcept {
  return (std::uint64_t{1} << fill_count_bits(e)) - 4;
}
[[nodiscard]] constexpr bool has_cache_policy_fields(engine e) noexcept { return e >= engine::v6_0; }
[[nodiscard]] constexpr bool has_gcr_req(engine e) noexcept { return e >= engine::v5_0; }

// ---- §3.1 header and opcodes ----------------------------------------------------------------
using header_op = bitfield<0, 8>;
using header_sub_op = bitfield<8, 8>;

enum class op : std::uint8_t {
  nop = 0,
  copy = 1,
  write = 2,
  indirect = 4,
  fence = 5,
  trap = 6,
  sem = 7,
  poll_regmem = 8,
  cond_exe = 9,
  atomic = 10,
  const_fill = 11,
  ptepde = 12,
  timestamp = 13,
  srbm_write = 14,
  pre_exe = 15,
  dummy_trap_v4 = 16,  // v4 only
  gpuvm_inv = 16,      // v5+
  gcr_req = 17,        // v5+
  dummy_trap = 32,     // v5+
};

namespace sub_op {
inline constexpr std::uint32_t copy_linear = 0;
inline constexpr std::uint32_t copy_tiled = 1;
inline constexpr std::uint32_t copy_soa = 3;
inline constexpr std::uint32_t copy_linear_sub_wind = 4;
inline constexpr std::uint32_t copy_tiled_sub_wind = 5;
inline constexpr std::uint32_t copy_t2t_sub_wind = 6;
inline constexpr std::uint32_t copy_dirty_page = 7;
inline constexpr std::uint32_t copy_linear_phy = 8;
inline constexpr std::uint32_t write_linear = 0;
inline constexpr std::uint32_t write_tiled = 1;
inline constexpr std::uint32_t sem_mem_incr = 1;
inline constexpr std::uint32_t poll_reg_write_mem = 1;
inline constexpr std::uint32_t poll_dbit_write_mem = 2;
inline constexpr std::uint32_t poll_mem_verify = 3;
inline constexpr std::uint32_t timestamp_set = 0;
inline constexpr std::uint32_t timestamp_get = 1;
inline constexpr std::uint32_t timestamp_get_global = 2;
inline constexpr std::uint32_t user_gcr = 1;  // ROCr SDMA_SUBOP_USER_GCR
}  // namespace sub_op

[[nodiscard]] constexpr std::uint32_t header(op o, std::uint32_t sub = 0) noexcept {
  return header_op::put(static_cast<std::uint8_t>(o)) | header_sub_op::put(sub);
}

// ---- NOP: count [29:16] extra payload dwords (burst NOP) -------------------------------------
namespace nop {
using count = bitfield<16, 14>;
}

// ---- COPY_LINEAR (op 1, sub 0) ----------------------------------------------------------------
namespace copy_linear {
using encrypt = bitflag<16>;
using tmz = bitflag<18>;
using cpv_v6 = bitflag<19>;
using backwards_v5 = bitflag<25>;
using broadcast = bitflag<27>;
using count_v4 = bitfield<0, 22>;  // dw1: bytes - 1 (v4, v5.0)
using count_v5_2 = bitfield<0, 30>;  // dw1: bytes - 1 (v5.2, v6, v7)
using dst_sw = bitfield<16, 2>;      // dw2
using dst_cache_policy_v6 = bitfield<18, 3>;
using src_sw = bitfield<24, 2>;
using src_cache_policy_v6 = bitfield<26, 3>;
struct packet {
  std::uint32_t header;
  std::uint32_t count;       // bytes - 1
  std::uint32_t parameter;   // swap / cache policy
  std::uint32_t src_addr_lo;
  std::uint32_t src_addr_hi;
  std::uint32_t dst_addr_lo;
  std::uint32_t dst_addr_hi;
};
static_assert(sizeof(packet) == 28 && alignof(packet) == 4);
static_assert(offsetof(packet, count) == 4 && offsetof(packet, parameter) == 8 && offsetof(packet, src_addr_lo) == 12 &&
              offsetof(packet, src_addr_hi) == 16 && offsetof(packet, dst_addr_lo) == 20 &&
              offsetof(packet, dst_addr_hi) == 24);
// v7 (Linux sdma_v7_0_emit_copy_buffer): an 8th dword of DCC control, 0 = no (de)compression.
struct packet_v7 {
  packet base;
  std::uint32_t dcc_control;
};
static_assert(sizeof(packet_v7) == 32 && offsetof(packet_v7, dcc_control) == 28);
[[nodiscard]] constexpr std::uint32_t dwords(engine e) noexcept { return e == engine::v7_0 ? 8u : 7u; }
}  // namespace copy_linear

// ---- WRITE_UNTILED (op 2, sub 0): 4 + n dwords -----------------------------------------------
namespace write_untiled {
using encrypt = bitflag<16>;
using tmz = bitflag<18>;
using cpv_v6 = bitflag<28>;
using count = bitfield<0, 20>;  // dw3: ndw - 1
using sw = bitfield<24, 2>;
using cache_policy_v6 = bitfield<26, 3>;
struct packet_head {
  std::uint32_t header;
  std::uint32_t dst_addr_lo;
  std::uint32_t dst_addr_hi;
  std::uint32_t dw3;  // count | sw | cache policy; data follows
};
static_assert(sizeof(packet_head) == 16 && offsetof(packet_head, dst_addr_lo) == 4 &&
              offsetof(packet_head, dst_addr_hi) == 8 && offsetof(packet_head, dw3) == 12);
inline constexpr std::uint32_t head_dwords = 4;
}  // namespace write_untiled

// ---- FENCE (op 5): 4 dwords, writes a 32-bit value --------------------------------------------
namespace fence {
using mtype = bitfield<16, 3>;   // v5+ header cache fields (absent on v4, which writes 0)
using gcc = bitflag<19>;
using sys = bitflag<20>;
using snp = bitflag<22>;
using gpa = bitflag<23>;
using l2_policy = bitfield<24, 2>;
using llc_policy_v6 = bitflag<26>;
using cpv_v6 = bitflag<28>;
inline constexpr std::uint32_t mtype_uc = 3;  // uncached (Linux and tinygrad signal fences)
struct packet {
  std::uint32_t header;
  std::uint32_t addr_lo;  // dword aligned
  std::uint32_t addr_hi;
  std::uint32_t data;
};
static_assert(sizeof(packet) == 16 && offsetof(packet, addr_lo) == 4 && offsetof(packet, addr_hi) == 8 &&
              offsetof(packet, data) == 12);
inline constexpr std::uint32_t dwords = 4;
}  // namespace fence

// ---- TRAP (op 6): 2 dwords ------------------------------------------------------------------
namespace trap {
using int_context = bitfield<0, 28>;
struct packet {
  std::uint32_t header;
  std::uint32_t int_context;
};
static_assert(sizeof(packet) == 8 && offsetof(packet, int_context) == 4);
inline constexpr std::uint32_t dwords = 2;
}  // namespace trap

// ---- POLL_REGMEM (op 8): 6 dwords -----------------------------------------------------------
namespace poll_regmem {
using cache_policy_v6 = bitfield<20, 3>;
using cpv_v6 = bitflag<24>;
using hdp_flush = bitflag<26>;
using func = bitfield<28, 3>;    // same codes as PM4 WAIT_REG_MEM FUNCTION
using mem_poll = bitflag<31>;    // 1 memory, 0 register
using interval = bitfield<0, 16>;      // dw5
using retry_count = bitfield<16, 12>;  // dw5: 0xFFF = retry forever
inline constexpr std::uint32_t retry_forever = 0xFFF;
enum class function : std::uint32_t {
  always = 0, less = 1, less_equal = 2, equal = 3, not_equal = 4, greater_equal = 5, greater = 6,
};
struct packet {
  std::uint32_t header;
  std::uint32_t addr_lo;  // memory: dword-aligned address; register: reg << 2; HDP: DONE << 2
  std::uint32_t addr_hi;  // HDP: REQ << 2
  std::uint32_t value;
  std::uint32_t mask;
  std::uint32_t dw5;      // interval | retry count
};
static_assert(sizeof(packet) == 24 && offsetof(packet, addr_lo) == 4 && offsetof(packet, addr_hi) == 8 &&
              offsetof(packet, value) == 12 && offsetof(packet, mask) == 16 && offsetof(packet, dw5) == 20);
inline constexpr std::uint32_t dwords = 6;
}  // namespace poll_regmem

// ---- TIMESTAMP GET / GET_GLOBAL (op 13, sub 1/2): 3 dwords ------------------------------------
namespace timestamp {
using l2_policy = bitfield<24, 2>;
using llc_policy_v6 = bitflag<26>;
using cpv_v6 = bitflag<28>;
struct packet {
  std::uint32_t header;
  std::uint32_t addr_lo;  // [31:3]: 8-byte aligned (ROCT warns: 32)
  std::uint32_t addr_hi;
};
static_assert(sizeof(packet) == 12 && offsetof(packet, addr_lo) == 4 && offsetof(packet, addr_hi) == 8);
inline constexpr std::uint32_t dwords = 3;
inline constexpr std::uint64_t addr_alignment = 8;
}  // namespace timestamp

// ---- ATOMIC (op 10): 8 dwords ---------------------------------------------------------------
namespace atomic {
using loop = bitflag<16>;
using tmz = bitflag<18>;
using cache_policy_v6 = bitfield<20, 3>;
using cpv_v6 = bitflag<24>;
using atomic_op = bitfield<25, 7>;
using loop_interval = bitfield<0, 13>;  // dw7
inline constexpr std::uint32_t op_add64 = 47;  // ROCr SDMA_ATOMIC_ADD64 (other codes UNVERIFIED here)
struct packet {
  std::uint32_t header;
  std::uint32_t addr_lo;
  std::uint32_t addr_hi;
  std::uint32_t src_data_lo;
  std::uint32_t src_data_hi;
  std::uint32_t cmp_data_lo;
  std::uint32_t cmp_data_hi;
  std::uint32_t loop_interval;
};
static_assert(sizeof(packet) == 32 && offsetof(packet, addr_lo) == 4 && offsetof(packet, addr_hi) == 8 &&
              offsetof(packet, src_data_lo) == 12 && offsetof(packet, src_data_hi) == 16 &&
              offsetof(packet, cmp_data_lo) == 20 && offsetof(packet, cmp_data_hi) == 24 &&
              offsetof(packet, loop_interval) == 28);
inline constexpr std::uint32_t dwords = 8;
}  // namespace atomic

// ---- CONSTANT_FILL (op 11): 5 dwords --------------------------------------------------------
namespace constant_fill {
using sw = bitfield<16, 2>;            // v4..v6
using compress_v7 = bitflag<16>;       // v7 (Linux sdma_v7_0.c)
using cache_policy_v6 = bitfield<24, 3>;
using cpv_v6 = bitflag<28>;
using fillsize = bitfield<30, 2>;      // 0 byte fill, 2 dword fill (ROCT)
using count_v4 = bitfield<0, 22>;      // dw4: bytes - 1 (v4, v5.x), in bytes even for dword fills
using count_v6 = bitfield<0, 30>;      // v6, v7
inline constexpr std::uint32_t fillsize_byte = 0;
inline constexpr std::uint32_t fillsize_dword = 2;
struct packet {
  std::uint32_t header;
  std::uint32_t dst_addr_lo;
  std::uint32_t dst_addr_hi;
  std::uint32_t data;
  std::uint32_t count;  // bytes - 1
};
static_assert(sizeof(packet) == 20 && offsetof(packet, dst_addr_lo) == 4 && offsetof(packet, dst_addr_hi) == 8 &&
              offsetof(packet, data) == 12 && offsetof(packet, count) == 16);
inline constexpr std::uint32_t dwords = 5;
}  // namespace constant_fill

// ---- INDIRECT (op 4): 6 dwords, must END on an 8-dword boundary ---------------------------------
namespace indirect {
using vmid = bitfield<16, 4>;
using priv_v5 = bitflag<31>;
using ib_size = bitfield<0, 20>;  // dw3, dwords
struct packet {
  std::uint32_t header;
  std::uint32_t ib_base_lo;  // 32-byte aligned
  std::uint32_t ib_base_hi;
  std::uint32_t ib_size;
  std::uint32_t csa_addr_lo;
  std::uint32_t csa_addr_hi;
};
static_assert(sizeof(packet) == 24 && offsetof(packet, ib_base_lo) == 4 && offsetof(packet, ib_base_hi) == 8 &&
              offsetof(packet, ib_size) == 12 && offsetof(packet, csa_addr_lo) == 16 &&
              offsetof(packet, csa_addr_hi) == 20);
inline constexpr std::uint32_t dwords = 6;
}  // namespace indirect

// ---- GCR_REQ (op 17, v5+): 5 dwords; GCR_CONTROL bits = PM4 gcr_cntl ------------------------
namespace gcr_req {
using base_va_31_7 = bitfield<7, 25>;       // dw1
using base_va_47_32 = bitfield<0, 16>;      // dw2
using gcr_control_15_0 = bitfield<16, 16>;  // dw2
using gcr_control_18_16 = bitfield<0, 3>;   // dw3
using limit_va_31_7 = bitfield<7, 25>;      // dw3
using limit_va_47_32 = bitfield<0, 16>;     // dw4
using vmid = bitfield<24, 4>;               // dw4
struct packet {
  std::uint32_t header;
  std::uint32_t dw1;
  std::uint32_t dw2;
  std::uint32_t dw3;
  std::uint32_t dw4;
};
static_assert(sizeof(packet) == 20 && offsetof(packet, dw4) == 16);
inline constexpr std::uint32_t dwords = 5;
}  // namespace gcr_req

// ---- COND_EXE (op 9): 5 dwords [LNX sdma_v6_0_0_pkt_open.h SDMA_PKT_COND_EXE; sdma_v6_0_ring_init_cond_exec]
// The next EXEC_COUNT dwords run only if the 32-bit value at ADDR equals REFERENCE (Linux writes
// REFERENCE 1 and a 0/1 flag at ADDR; the equality compare is how the emulator reads the field —
// docs/pm4-sdma.md).
namespace cond_exe {
using exec_count = bitfield<0, 14>;  // dw4
struct packet {
  std::uint32_t header;
  std::uint32_t addr_lo;  // dword aligned
  std::uint32_t addr_hi;
  std::uint32_t reference;
  std::uint32_t exec_count;
};
static_assert(sizeof(packet) == 20 && offsetof(packet, addr_lo) == 4 && offsetof(packet, reference) == 12 &&
              offsetof(packet, exec_count) == 16);
inline constexpr std::uint32_t dwords = 5;
}  // namespace cond_exe

}  // namespace aqueduct::abi::sdma
