// emu/detail/pm4_decoder.hpp and sh_registers.hpp, round-tripped against queue/pm4_encoder.hpp for
// every target: what the typed encoder writes, the emulated MEC's decoder reads back field for
// field. Expected values are the encoder's inputs (and spec/packets.md's fixed words), never the
// decoder's own output. A decode that the MEC refuses fails the test with its reason.
#include <aqueduct/emu/detail/pm4_decoder.hpp>
#include <aqueduct/emu/detail/sh_registers.hpp>
#include <aqueduct/queue/pm4_encoder.hpp>

#include <doctest/doctest.h>

#include <array>
#include <cstdint>
#include <span>
#include <vector>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

namespace {

namespace aq = aqueduct;
namespace abi = aqueduct::abi;
namespace arch = aqueduct::arch;
namespace emu = aqueduct::emu;
namespace dt = aqueduct::emu::detail;
namespace pkt = aqueduct::abi::pm4;

template <class T>
using enc = aq::ring::pm4::encoder<T>;

#define ALL_TARGETS                                                                                          \
  arch::gfx9_target, arch::gfx90a_target, arch::gfx94x_target, arch::gfx10_1_target, arch::gfx10_3_target, \
      arch::gfx11_target, arch::gfx11_priv_target, arch::gfx12_target

// The packet at the front of `s`, checked by decode_header first; returns its opcode.
template <class T>
pkt::opcode header_of(std::span<const std::uint32_t> s) {
  const auto h = dt::decode_header(s, T::fam);
  REQUIRE_MESSAGE(h, h.why().why);
  CHECK_FALSE(h->filler);
  return h->op;
}
template <class D>
D accepted(const dt::decoded<D>& d) {
  REQUIRE_MESSAGE(d, d.why().why);
  return *d;
}

TEST_CASE_TEMPLATE("SET_SH_REG and DISPATCH_DIRECT decode to what was encoded", T, ALL_TARGETS) {
  std::array<std::uint32_t, 16> out{};
  const std::uint32_t vals[3] = {0x11, 0x22, 0x33};
  const std::size_t n = enc<T>::set_sh_reg(out, arch::compute_regs::compute_restart_x, vals);
  const auto s = std::span<const std::uint32_t>(out.data(), n);
  CHECK(dt::pm4_packet_dwords(out[0]) == n);
  CHECK(header_of<T>(s) == pkt::opcode::set_sh_reg);
  const auto& d = accepted(dt::decode_set_sh_reg(s));
  CHECK(d.offset == arch::compute_regs::compute_restart_x - 0x2C00);  // spec/packets.md §1.2
  REQUIRE(d.values.size() == 3);
  CHECK(d.values[0] == 0x11);
  CHECK(d.values[2] == 0x33);

  const std::size_t m = enc<T>::dispatch_direct(out, 7, 8, 9, enc<T>::dispatch_initiator(false));
  const auto s2 = std::span<const std::uint32_t>(out.data(), m);
  CHECK(header_of<T>(s2) == pkt::opcode::dispatch_direct);
  const auto& dd = accepted(dt::decode_dispatch_direct(s2, T::fam));
  CHECK(dd.dim == std::array<std::uint32_t, 3>{7, 8, 9});
  CHECK(dd.initiator == 0x5u);  // COMPUTE_SHADER_EN | FORCE_START_AT_000 (tinygrad, spec §2.1)
}

TEST_CASE_TEMPLATE("ACQUIRE_MEM: the family's form and cache-control word", T, ALL_TARGETS) {
  std::array<std::uint32_t, 8> out{};
  const std::size_t n = enc<T>::acquire_mem(out, enc<T>::full_barrier_cntl, 0xA);
  const auto s = std::span<const std::uint32_t>(out.data(), n);
  CHECK(n == T::acquire_mem_dwords);
  CHECK(header_of<T>(s) == pkt::opcode::acquire_mem);
  const auto& d = accepted(dt::decode_acquire_mem(s, T::fam));
  CHECK(d.cntl == enc<T>::full_barrier_cntl);
  CHECK(d.coher_size == 0xFFFFFFFFu);
  CHECK(d.coher_size_hi == 0xFFFFFFu);
  CHECK(d.coher_base == 0);
  CHECK(d.poll_interval == 0xA);
  // The other family's form is refused: its length is wrong for this family.
  std::array<std::uint32_t, 8> other{};
  const bool gfx9 = dt::pm4_gfx9_form(T::fam);
  const std::size_t k = gfx9 ? enc<arch::gfx11_target>::acquire_mem(other, 0x3F0) : enc<arch::gfx9_target>::acquire_mem(other, 0);
  const auto bad = dt::decode_header(std::span<const std::uint32_t>(other.data(), k), T::fam);
  REQUIRE_FALSE(bad);
  CHECK(bad.why().fault == emu::engine_fault::bad_count);
}

TEST_CASE_TEMPLATE("RELEASE_MEM: signal, event interrupt, timestamp and 64-bit writes", T, ALL_TARGETS) {
  namespace r = pkt::release_mem;
  std::array<std::uint32_t, 8> out{};
  auto decode = [&](std::size_t n) {
    const auto s = std::span<const std::uint32_t>(out.data(), n);
    CHECK(header_of<T>(s) == pkt::opcode::release_mem);
    return accepted(dt::decode_release_mem(s));
  };
  SUBCASE("signal: 32-bit value at end of pipe with the family's cache action") {
    const auto d = decode(enc<T>::signal(out, aq::gpu_va(0x7000'1000), 0xC0FFEE));
    CHECK(d.address == 0x7000'1000);
    CHECK(d.data_sel == r::data_sel_value::data32_low);
    CHECK(d.data_bytes() == 4);
    CHECK(aq::lo32(d.data) == 0xC0FFEEu);
    CHECK(d.cache_action == enc<T>::signal_cache_action);
    CHECK(d.event_index == r::event_index_end_of_pipe);
    CHECK(d.event_type == static_cast<std::uint32_t>(pkt::vgt_event::cache_flush_and_inv_ts_event));
    CHECK_FALSE(d.interrupts());
  }
  SUBCASE("signal_event: mailbox write plus interrupt; gfx9 sends INT_CTXID 0 (tinygrad, spec §2.2)") {
    const auto d = decode(enc<T>::signal_event(out, aq::gpu_va(0x8000), 42));
    CHECK(d.address == 0x8000);
    CHECK(aq::lo32(d.data) == 42);
    CHECK(d.int_sel == r::int_sel_value::send_int_on_confirm);
    CHECK(d.interrupts());
    CHECK(d.int_ctxid == (dt::pm4_gfx9_form(T::fam) ? 0u : 42u));
  }
  SUBCASE("timestamp: the GPU clock, 64-bit") {
    const auto d = decode(enc<T>::timestamp(out, aq::gpu_va(0x9008)));
    CHECK(d.data_sel == r::data_sel_value::gpu_clock64);
    CHECK(d.data_bytes() == 8);
    CHECK(d.address == 0x9008);
  }
  SUBCASE("write_value 64-bit") {
    const auto d = decode(enc<T>::write_value(out, aq::gpu_va(0xA000), 0x1122334455667788ull, true));
    CHECK(d.data_sel == r::data_sel_value::data64);
    CHECK(d.data == 0x1122334455667788ull);
  }
  SUBCASE("every field of release_mem_params") {
    aq::ring::pm4::release_mem_params p;
    p.event = pkt::vgt_event::bottom_of_pipe_ts;
    p.event_index = r::event_index_shader_done;
    p.cache_policy = 2;
    p.data_sel = r::data_sel_value::data64;
    p.int_sel = r::int_sel_value::send_int;
    p.dst_sel = 1;
    p.address = aq::gpu_va(0x1234'5678'9000ull);
    p.data = 0xFEDCBA9876543210ull;
    p.int_ctxid = 0xABCD;
    const auto d = decode(enc<T>::release_mem(out, p));
    CHECK(d.event_type == static_cast<std::uint32_t>(p.event));
    CHECK(d.event_index == p.event_index);
    CHECK(d.cache_policy == p.cache_policy);
    CHECK(d.data_sel == p.data_sel);
    CHECK(d.int_sel == p.int_sel);
    CHECK(d.dst_sel == p.dst_sel);
    CHECK(d.address == p.address.value);
    CHECK(d.data == p.data);
    CHECK(d.int_ctxid == p.int_ctxid);
  }
}

TEST_CASE_TEMPLATE("WAIT_REG_MEM: memory compare and the register write-then-wait form", T, ALL_TARGETS) {
  namespace w = pkt::wait_reg_mem;
  std::array<std::uint32_t, 8> out{};
  std::size_t n = enc<T>::wait_reg_mem(out, aq::gpu_va(0x4000'0004), 17, 0xFF, w::compare_function::equal, 9);
  auto s = std::span<const std::uint32_t>(out.data(), n);
  CHECK(header_of<T>(s) == pkt::opcode::wait_reg_mem);
  const auto d = accepted(dt::decode_wait_reg_mem(s));
  CHECK(d.memory);
  CHECK(d.address == 0x4000'0004);
  CHECK(d.reference == 17);
  CHECK(d.mask == 0xFF);
  CHECK(d.function == w::compare_function::equal);
  CHECK(d.poll_interval == 9);
  CHECK(d.operation == 0);
  CHECK(d.holds(0x1011));  // (0x1011 & 0xFF) == 17
  CHECK_FALSE(d.holds(16));
  n = enc<T>::write_wait_reg(out, 0x1234, 0x5678, 1, 1, w::compare_function::equal, 0x20);
  s = std::span<const std::uint32_t>(out.data(), n);
  const auto r = accepted(dt::decode_wait_reg_mem(s));
  CHECK_FALSE(r.memory);
  CHECK(r.operation == 1);
  CHECK(r.write_register == 0x1234);
  CHECK(r.poll_register == 0x5678);
}

TEST_CASE_TEMPLATE("WRITE_DATA, INDIRECT_BUFFER, EVENT_WRITE, PRED_EXEC and NOP", T, ALL_TARGETS) {
  std::array<std::uint32_t, 16> out{};
  const std::uint32_t vals[2] = {0xA, 0xB};
  std::size_t n = enc<T>::write_data(out, aq::gpu_va(0x5000), vals);
  auto s = std::span<const std::uint32_t>(out.data(), n);
  CHECK(header_of<T>(s) == pkt::opcode::write_data);
  const auto wd = accepted(dt::decode_write_data(s));
  CHECK(wd.address == 0x5000);
  CHECK(wd.dst_sel == pkt::write_data::dst_sel_memory);
  CHECK(wd.wr_confirm);
  CHECK_FALSE(wd.fixed_address);
  REQUIRE(wd.data.size() == 2);
  CHECK(wd.data[1] == 0xB);

  n = enc<T>::indirect_buffer(out, aq::gpu_va(0x6000'0100), 77, 3);
  s = std::span<const std::uint32_t>(out.data(), n);
  CHECK(header_of<T>(s) == pkt::opcode::indirect_buffer);
  const auto ib = accepted(dt::decode_indirect_buffer(s));
  CHECK(ib.address == 0x6000'0100);
  CHECK(ib.size_dw == 77);
  CHECK(ib.vmid == 3);
  CHECK_FALSE(ib.chain);

  n = enc<T>::event_write(out);
  s = std::span<const std::uint32_t>(out.data(), n);
  CHECK(header_of<T>(s) == pkt::opcode::event_write);
  const auto ew = accepted(dt::decode_event_write(s));
  CHECK(ew.event_type == static_cast<std::uint32_t>(pkt::vgt_event::cs_partial_flush));
  CHECK(ew.event_index == pkt::event_write::event_index_partial_flush);

  n = enc<T>::pred_exec(out, 0b10, 5);
  s = std::span<const std::uint32_t>(out.data(), n);
  CHECK(header_of<T>(s) == pkt::opcode::pred_exec);
  const auto pe = accepted(dt::decode_pred_exec(s));
  CHECK(pe.exec_count == 5);
  CHECK(pe.xcc_mask == 0b10);

  for (std::size_t len : {std::size_t{1}, std::size_t{2}, std::size_t{9}}) {
    CAPTURE(len);
    n = enc<T>::nop(out, len);
    CHECK(n == len);
    CHECK(dt::pm4_packet_dwords(out[0]) == len);
    CHECK(header_of<T>(std::span<const std::uint32_t>(out.data(), n)) == pkt::opcode::nop);
  }
}

TEST_CASE_TEMPLATE("a whole encoded launch, replayed into the SH register file, reads back by name", T, ALL_TARGETS) {
  using R = arch::compute_regs;
  abi::kernel_descriptor kd{};
  kd.kernel_code_entry_byte_offset = 256;
  kd.group_segment_fixed_size = 1000;
  kd.compute_pgm_rsrc1 = 0x000C0084;
  kd.compute_pgm_rsrc2 = abi::compute_pgm_rsrc2::user_sgpr_count::put(4) | abi::compute_pgm_rsrc2::enable_sgpr_workgroup_id_x::put(1);
  kd.kernel_code_properties = abi::kernel_code_properties::enable_sgpr_dispatch_ptr::mask |
                              abi::kernel_code_properties::enable_sgpr_kernarg_segment_ptr::mask;
  aq::ring::pm4::dispatch_params p;
  p.kd = &kd;
  p.kd_va = aq::gpu_va(0x7F00'0000'0000ull);
  p.grid = {10, 2, 1};
  p.block = {64, 2, 1};
  p.dispatch_ptr = aq::gpu_va(0x1111'2222'0040ull);
  p.kernarg = aq::gpu_va(0x3333'4444'0000ull);
  std::vector<std::uint32_t> out(enc<T>::dispatch_dwords(kd));
  const std::size_t n = enc<T>::dispatch(out, p);
  REQUIRE(n == out.size());
  dt::sh_register_file regs;
  std::span<const std::uint32_t> rest(out);
  dt::dispatch_direct_fields launch;
  int packets = 0;
  while (!rest.empty()) {
    const std::uint64_t len = dt::pm4_packet_dwords(rest[0]);
    REQUIRE(len <= rest.size());
    const auto pk = rest.first(len);
    const auto op = header_of<T>(pk);
    if (op == pkt::opcode::set_sh_reg) {
      const auto d = accepted(dt::decode_set_sh_reg(pk));
      regs.write(d.offset, d.values);
    } else {
      REQUIRE(op == pkt::opcode::dispatch_direct);
      launch = accepted(dt::decode_dispatch_direct(pk, T::fam));
    }
    rest = rest.subspan(len);
    ++packets;
  }
  CHECK(packets >= 9);
  const std::uint64_t entry = (p.kd_va.value + 256) >> 8;
  CHECK(regs.template get<R::compute_pgm_lo>() == aq::lo32(entry));
  CHECK(regs.template get<R::compute_pgm_hi>() == aq::hi32(entry));
  CHECK(regs.template get<R::compute_pgm_rsrc1>() == T::pm4_compute_pgm_rsrc1(kd.compute_pgm_rsrc1));
  CHECK(abi::compute_pgm_rsrc2::granulated_lds_size::get(regs.template get<R::compute_pgm_rsrc2>()) == 2);  // 1000 B in 512 B units
  CHECK(abi::compute_pgm_rsrc2::user_sgpr_count::get(regs.template get<R::compute_pgm_rsrc2>()) == 4);
  // User SGPRs in kernel_code_properties order: dispatch ptr, then kernarg ptr.
  CHECK(regs.user_data(0) == aq::lo32(p.dispatch_ptr.value));
  CHECK(regs.user_data(1) == aq::hi32(p.dispatch_ptr.value));
  CHECK(regs.user_data(2) == aq::lo32(p.kernarg.value));
  CHECK(regs.user_data(3) == aq::hi32(p.kernarg.value));
  CHECK(regs.template get<R::compute_num_thread_x>() == 64);
  CHECK(regs.template get<R::compute_num_thread_y>() == 2);
  CHECK(regs.template get<R::compute_num_thread_z>() == 1);
  CHECK(regs.template get<R::compute_start_x>() == 0);
  CHECK(regs.at(0x2E07) == 64);  // COMPUTE_NUM_THREAD_X's address in spec/packets.md §1.4
  CHECK(launch.dim == std::array<std::uint32_t, 3>{10, 2, 1});
}

TEST_CASE("the decoder refuses what the MEC refuses, saying why") {
  const arch::family f = arch::family::gfx11;
  struct bad_case {
    const char* name;
    std::vector<std::uint32_t> dws;
    emu::engine_fault fault;
  };
  const std::vector<bad_case> header_cases = {
      {"type-0 word", {0x00000000}, emu::engine_fault::not_type3},
      {"header bit 3", {0xC0001008, 0}, emu::engine_fault::reserved_bits},
      {"PREDICATE", {0xC0001001, 0}, emu::engine_fault::reserved_bits},
      {"DISPATCH_DIRECT of 4 dwords", {0xC0021500, 1, 1, 1}, emu::engine_fault::bad_count},
  };
  for (const auto& c : header_cases) {
    CAPTURE(c.name);
    const auto h = dt::decode_header(c.dws, f);
    REQUIRE_FALSE(h);
    CHECK(h.why().fault == c.fault);
  }
  CHECK(dt::decode_header(std::vector<std::uint32_t>{0x80000000u}, f)->filler);  // CP_PACKET2 filler
  const auto sh = dt::decode_set_sh_reg(std::vector<std::uint32_t>{0xC0027600, 0x3FF, 1, 2});
  REQUIRE_FALSE(sh);
  CHECK(sh.why().fault == emu::engine_fault::bad_register);
  CHECK(sh.why().why.find("SH window") != std::string::npos);
  const auto ib = dt::decode_indirect_buffer(std::vector<std::uint32_t>{0xC0023F00, 0x1000, 0, 4});
  REQUIRE_FALSE(ib);
  CHECK(ib.why().why.find("VALID") != std::string::npos);
  const auto rm = dt::decode_release_mem(std::vector<std::uint32_t>{0xC0064900, 0x514, (1u << 29), 0x1002, 0, 1, 0, 0});
  REQUIRE_FALSE(rm);  // 32-bit data to a 2-byte-aligned address
  CHECK(rm.why().address == 0x1002);
  const auto wr = dt::decode_wait_reg_mem(std::vector<std::uint32_t>{0xC0053C00, 0x17, 0x1000, 0, 0, ~0u, 4});
  REQUIRE_FALSE(wr);
  CHECK(wr.why().why.find("FUNCTION 7") != std::string::npos);
  // gfx12 defines DISPATCH_INITIATOR bit 31; gfx11 does not.
  const std::vector<std::uint32_t> dd = {0xC0031500, 1, 1, 1, 0x80000001u};
  CHECK_FALSE(dt::decode_dispatch_direct(dd, arch::family::gfx11));
  CHECK(dt::decode_dispatch_direct(dd, arch::family::gfx12));
}

}  // namespace

// ---- device-evaluated control flow (docs/pm4.md): the dwords are the documented layouts' ----------
TEST_CASE_TEMPLATE("COND_EXEC, COND_INDIRECT_BUFFER, chained IB and WAIT_REG_MEM64: dwords and round trip", T, ALL_TARGETS) {
  using W = pkt::wait_reg_mem::compare_function;
  std::array<std::uint32_t, 16> out{};
  // COND_EXEC: COUNT 3; addr lo/hi; dw3 0; dw4 EXEC_COUNT (PAL PM4_MEC_COND_EXEC, Linux init_cond_exec).
  std::size_t n = enc<T>::cond_exec(out, aq::gpu_va(0x1234'5678'9ABCull), 7);
  CHECK(std::vector<std::uint32_t>(out.begin(), out.begin() + n) ==
        std::vector<std::uint32_t>{0xC0032200u, 0x56789ABCu, 0x1234u, 0u, 7u});
  const auto ce = accepted(dt::decode_cond_exec(std::span<const std::uint32_t>(out.data(), n)));
  CHECK(header_of<T>(std::span<const std::uint32_t>(out.data(), n)) == pkt::opcode::cond_exec);
  CHECK(ce.address == 0x1234'5678'9ABCull);
  CHECK(ce.exec_count == 7);

  // COND_INDIRECT_BUFFER: opcode 0x3F with COUNT 12 (14 dwords): MODE, FUNCTION<<8, compare addr,
  // mask, reference (64-bit each, lo first), IB1 base/size, IB2 base/size (PAL PM4_MEC_COND_INDIRECT_BUFFER).
  n = enc<T>::cond_indirect_buffer(out, aq::gpu_va(0x7000'0008ull), 0x1'0000'0002ull, 0xFFFF'FFFF'0000'FFFFull, W::not_equal,
                                   {aq::gpu_va(0x8000ull), 12}, {aq::gpu_va(0x9000ull), 20});
  CHECK(std::vector<std::uint32_t>(out.begin(), out.begin() + n) ==
        std::vector<std::uint32_t>{0xC00C3F00u, 2u | (4u << 8), 0x7000'0008u, 0u, 0x0000'FFFFu, 0xFFFF'FFFFu, 2u, 1u,
                                   0x8000u, 0u, 12u, 0x9000u, 0u, 20u});
  const auto s14 = std::span<const std::uint32_t>(out.data(), n);
  CHECK(header_of<T>(s14) == pkt::opcode::indirect_buffer);
  const auto ci = accepted(dt::decode_cond_indirect_buffer(s14));
  CHECK(ci.if_then_else);
  CHECK(ci.function == W::not_equal);
  CHECK(ci.compare_address == 0x7000'0008ull);
  CHECK(ci.reference == 0x1'0000'0002ull);
  CHECK(ci.mask == 0xFFFF'FFFF'0000'FFFFull);
  CHECK(ci.ib1_address == 0x8000);
  CHECK(ci.ib1_size == 12);
  CHECK(ci.ib2_address == 0x9000);
  CHECK(ci.ib2_size == 20);
  // (*compare & mask) != reference: bits 16..31 are masked off before the compare.
  CHECK(ci.holds(0x2'0000'0002ull));
  CHECK_FALSE(ci.holds(0x1'0000'0002ull));
  CHECK_FALSE(ci.holds(0x1'1234'0002ull));
  CHECK(ci.holds(0x1'0000'0003ull));
  n = enc<T>::cond_indirect_buffer(out, aq::gpu_va(0x7000'0008ull), 5, ~0ull, W::equal, {aq::gpu_va(0x8000ull), 12});
  CHECK(out[1] == (1u | (3u << 8)));  // IF_THEN
  CHECK_FALSE(accepted(dt::decode_cond_indirect_buffer(std::span<const std::uint32_t>(out.data(), n))).if_then_else);

  // INDIRECT_BUFFER with CHAIN (dw3 bit 20).
  n = enc<T>::indirect_buffer(out, aq::gpu_va(0xA000ull), 9, 0, true);
  CHECK(out[3] == (9u | (1u << 20) | (1u << 23)));
  CHECK(accepted(dt::decode_indirect_buffer(std::span<const std::uint32_t>(out.data(), n))).chain);

  // WAIT_REG_MEM64: COUNT 7; dw1 FUNCTION | MEM_SPACE 1; addr; reference lo/hi; mask lo/hi; poll.
  n = enc<T>::wait_reg_mem64(out, aq::gpu_va(0x6000'0010ull), 0x1'0000'0000ull, ~0ull, W::greater_equal, 4);
  CHECK(std::vector<std::uint32_t>(out.begin(), out.begin() + n) ==
        std::vector<std::uint32_t>{0xC0079300u, 5u | (1u << 4), 0x6000'0010u, 0u, 0u, 1u, 0xFFFF'FFFFu, 0xFFFF'FFFFu, 4u});
  const auto s9 = std::span<const std::uint32_t>(out.data(), n);
  CHECK(header_of<T>(s9) == pkt::opcode::wait_reg_mem64);
  const auto w64 = accepted(dt::decode_wait_reg_mem64(s9));
  CHECK(w64.address == 0x6000'0010ull);
  CHECK(w64.reference == 0x1'0000'0000ull);
  CHECK(w64.holds(0x1'0000'0000ull));
  CHECK_FALSE(w64.holds(0xFFFF'FFFFull));
  CHECK_FALSE(w64.preemptible());

  // WAIT_REG_MEM, preemptible: OPERATION 3 in dw1 [7:6].
  n = enc<T>::wait_reg_mem(out, aq::gpu_va(0x6000'0000ull), 1, ~0u, W::equal, 4, true);
  CHECK(out[1] == (3u | (1u << 4) | (3u << 6)));
  CHECK(accepted(dt::decode_wait_reg_mem(std::span<const std::uint32_t>(out.data(), n))).preemptible());
}

TEST_CASE("the control-flow packets are refused when malformed") {
  using V = std::vector<std::uint32_t>;
  const auto ce = dt::decode_cond_exec(V{0xC0032200u, 0x1002u, 0, 0, 1});
  REQUIRE_FALSE(ce);  // a byte address that is not dword aligned
  CHECK(ce.why().fault == emu::engine_fault::reserved_bits);
  CHECK_FALSE(dt::decode_cond_exec(V{0xC0032200u, 0x1000u, 0, 1, 1}));  // dw3 bit 0 reserved
  CHECK_FALSE(dt::decode_cond_exec(V{0xC0032200u, 0x1000u, 0, 0, 1u << 14}));  // EXEC_COUNT is 14 bits
  V cib(14, 0);
  cib[0] = 0xC00C3F00u;
  cib[1] = 3;  // MODE 3 is reserved
  cib[10] = 4;
  CHECK_FALSE(dt::decode_cond_indirect_buffer(cib));
  cib[1] = 1;
  cib[2] = 0x1004;  // compare address not 8-byte aligned
  CHECK_FALSE(dt::decode_cond_indirect_buffer(cib));
  cib[2] = 0x1008;
  CHECK(dt::decode_cond_indirect_buffer(cib));
  const auto h = dt::decode_header(V{0xC0043F00u, 0, 0, 0, 0, 0}, arch::family::gfx11);
  REQUIRE_FALSE(h);  // opcode 0x3F of 6 dwords is neither form
  CHECK(h.why().fault == emu::engine_fault::bad_count);
  CHECK_FALSE(dt::decode_wait_reg_mem64(V{0xC0079300u, 5u | (1u << 4), 0x1004, 0, 0, 0, 0, 0, 4}));  // 8-byte alignment
  CHECK_FALSE(dt::decode_wait_reg_mem64(V{0xC0079300u, 5u, 0x1000, 0, 0, 0, 0, 0, 4}));  // register space
  // OPERATION 1 (write, then wait) is for registers, OPERATION 3 for memory.
  CHECK_FALSE(dt::decode_wait_reg_mem(V{0xC0053C00u, 3u | (1u << 4) | (1u << 6), 0x1000, 0, 0, ~0u, 4}));
  CHECK_FALSE(dt::decode_wait_reg_mem(V{0xC0053C00u, 3u | (3u << 6), 0x1000, 0, 0, ~0u, 4}));
}

}  // namespace AQ_UNITY_ID
