// Tests for abi/sdma.hpp. Expected dwords are quoted from spec/packets.md §3.4 (what tinygrad
// emits), §3.5 (Linux sdma_v6_0 sequences) and §3.3 (per-engine limits), and from Linux
// sdma_v7_0.c (8-dword COPY_LINEAR, copy_num_dw = 8).
#include <aqueduct/abi/sdma.hpp>

#include <doctest/doctest.h>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

namespace sdma = aqueduct::abi::sdma;
using sdma::engine;
using sdma::op;

TEST_CASE("SDMA headers tinygrad and Linux emit (§3.4, §3.5)") {
  CHECK(sdma::header(op::copy, sdma::sub_op::copy_linear) == 0x00000001u);
  CHECK((sdma::header(op::fence) | sdma::fence::mtype::put(sdma::fence::mtype_uc)) == 0x00030005u);
  CHECK(sdma::header(op::fence) == 0x00000005u);  // gfx9 form
  CHECK(sdma::header(op::trap) == 0x00000006u);
  namespace p = sdma::poll_regmem;
  CHECK((sdma::header(op::poll_regmem) | p::func::put(static_cast<std::uint32_t>(p::function::greater_equal)) |
         p::mem_poll::put(1)) == 0xD0000008u);
  CHECK((p::retry_count::put(p::retry_forever) | p::interval::put(4)) == 0x0FFF0004u);
  // Linux HDP flush: OP 8 | HDP_FLUSH | FUNC(3) = 0x34000008.
  CHECK((sdma::header(op::poll_regmem) | p::hdp_flush::put(1) | p::func::put(3)) == 0x34000008u);
  CHECK(sdma::header(op::timestamp, sdma::sub_op::timestamp_get_global) == 0x0000020Du);
  CHECK(sdma::header(op::write, sdma::sub_op::write_linear) == 0x00000002u);
  CHECK(sdma::header(op::indirect) == 0x00000004u);
  CHECK(sdma::header(op::const_fill) == 0x0000000Bu);
}

TEST_CASE("opcodes (§3.1)") {
  CHECK(static_cast<int>(op::nop) == 0);
  CHECK(static_cast<int>(op::poll_regmem) == 8);
  CHECK(static_cast<int>(op::atomic) == 10);
  CHECK(static_cast<int>(op::const_fill) == 11);
  CHECK(static_cast<int>(op::timestamp) == 13);
  CHECK(static_cast<int>(op::gcr_req) == 17);
  CHECK(static_cast<int>(op::dummy_trap) == 32);
  CHECK(static_cast<int>(op::dummy_trap_v4) == 16);
}

TEST_CASE("packet sizes (§3.2)") {
  CHECK(sizeof(sdma::copy_linear::packet) == 7 * 4);
  CHECK(sdma::copy_linear::dwords(engine::v4_0) == 7u);
  CHECK(sdma::copy_linear::dwords(engine::v6_0) == 7u);
  CHECK(sdma::copy_linear::dwords(engine::v7_0) == 8u);  // Linux sdma_v7_0 copy_num_dw = 8
  CHECK(sizeof(sdma::fence::packet) == 4 * 4);
  CHECK(sizeof(sdma::trap::packet) == 2 * 4);
  CHECK(sizeof(sdma::poll_regmem::packet) == 6 * 4);
  CHECK(sizeof(sdma::timestamp::packet) == 3 * 4);
  CHECK(sizeof(sdma::atomic::packet) == 8 * 4);
  CHECK(sizeof(sdma::constant_fill::packet) == 5 * 4);
  CHECK(sizeof(sdma::indirect::packet) == 6 * 4);
  CHECK(sizeof(sdma::gcr_req::packet) == 5 * 4);
}

TEST_CASE("count fields and per-engine limits (§3.2, §3.3)") {
  CHECK(sdma::copy_linear::count_v4::mask == 0x003FFFFFu);
  CHECK(sdma::copy_linear::count_v5_2::mask == 0x3FFFFFFFu);
  CHECK(sdma::constant_fill::count_v4::mask == 0x003FFFFFu);
  CHECK(sdma::constant_fill::count_v6::mask == 0x3FFFFFFFu);
  // Mesa ac_emit_sdma_constant_fill: BITFIELD64_MASK(30 on SDMA >= 6.0, else 22) & ~3.
  CHECK(sdma::max_fill_bytes(engine::v4_0) == 0x3FFFFCu);
  CHECK(sdma::max_fill_bytes(engine::v5_2) == 0x3FFFFCu);
  CHECK(sdma::max_fill_bytes(engine::v6_0) == 0x3FFFFFFCu);
  CHECK(sdma::max_fill_bytes(engine::v7_0) == 0x3FFFFFFCu);
  CHECK(sdma::count_bits(engine::v4_0) == 22u);
  CHECK(sdma::count_bits(engine::v5_0) == 22u);
  CHECK(sdma::count_bits(engine::v5_2) == 30u);
  CHECK(sdma::count_bits(engine::v6_0) == 30u);
  CHECK(sdma::count_bits(engine::v7_0) == 30u);
  // Mesa SDMA_V2_0_COPY_MAX_BYTES 0x3FFF00 / SDMA_V5_2_COPY_MAX_BYTES 0x3FFFFF00.
  CHECK(sdma::max_copy_bytes(engine::v4_0) == 0x3FFF00u);
  CHECK(sdma::max_copy_bytes(engine::v5_0) == 0x3FFF00u);
  CHECK(sdma::max_copy_bytes(engine::v5_2) == 0x3FFFFF00u);
  CHECK(sdma::max_copy_bytes(engine::v6_0) == 0x3FFFFF00u);
  CHECK(sdma::max_copy_bytes(engine::v7_0) == 0x3FFFFF00u);
  CHECK(sdma::engine_from_ip(4, 4) == engine::v4_0);
  CHECK(sdma::engine_from_ip(5, 0) == engine::v5_0);
  CHECK(sdma::engine_from_ip(5, 2) == engine::v5_2);
  CHECK(sdma::engine_from_ip(6, 0) == engine::v6_0);
  CHECK(sdma::engine_from_ip(7, 0) == engine::v7_0);
}

TEST_CASE("field positions (§3.2)") {
  CHECK(sdma::copy_linear::backwards_v5::mask == (1u << 25));
  CHECK(sdma::copy_linear::cpv_v6::mask == (1u << 19));
  CHECK(sdma::constant_fill::fillsize::put(sdma::constant_fill::fillsize_dword) == 0x80000000u);
  CHECK(sdma::constant_fill::compress_v7::mask == (1u << 16));
  CHECK(sdma::trap::int_context::mask == 0x0FFFFFFFu);
  CHECK(sdma::atomic::atomic_op::put(sdma::atomic::op_add64) == (47u << 25));
  CHECK(sdma::indirect::vmid::put(0xF) == 0x000F0000u);
  CHECK(sdma::nop::count::put(3) == 0x00030000u);
  // GCR_REQ: Linux mem_sync gcr_cntl = GL2_INV|GL2_WB|GLM_INV|GL1_INV|GLV_INV|GLK_INV|GLI_INV(1) = 0xC3A1,
  // split as [15:0] in dw2 [31:16] and [18:16] in dw3 [2:0].
  CHECK(sdma::gcr_req::gcr_control_15_0::put(0xC3A1u) == 0xC3A10000u);
  CHECK(sdma::gcr_req::base_va_31_7::mask == 0xFFFFFF80u);
}

}  // namespace AQ_UNITY_ID
