// Tests for queue/pm4_encoder.hpp. Expected dword streams are written out by hand from
// spec/packets.md: §2.1 (tinygrad's gfx11 kernel dispatch: headers, register offsets, order,
// INITIATOR 0x8005 / gfx9 0x5), §2.2 (signal, wait, HDP flush), §2.5 (Linux gfx11 fence and
// mem_sync), §1.1 header examples, §1.4 register addresses, §1.5 field positions; and the PRIV
// policy of spec/kfd.md §4 (gfx1100/1101/1102 always, gfx1103 only with >1 shader array).
#include <aqueduct/queue/pm4_encoder.hpp>

#include <doctest/doctest.h>

#include <array>
#include <cstdint>
#include <vector>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

namespace arch = aqueduct::arch;
namespace pkt = aqueduct::abi::pm4;
namespace qp = aqueduct::ring::pm4;
using aqueduct::gpu_va;

namespace {
using dwv = std::vector<std::uint32_t>;

template <class F>
dwv emit(std::size_t cap, F&& f) {
  dwv out(cap, 0xBADC0DEDu);
  const std::size_t n = f(std::span<std::uint32_t>(out));
  out.resize(n);
  return out;
}

using g11p = qp::encoder<arch::gfx11_priv_target>;
using g11 = qp::encoder<arch::gfx11_target>;
using g12 = qp::encoder<arch::gfx12_target>;
using g9 = qp::encoder<arch::gfx9_target>;
using g90a = qp::encoder<arch::gfx90a_target>;

template <class E>
concept can_set_priv = requires { E::target::set_pm4_priv(0u); };

constexpr gpu_va sig{0x00007F00'00002010ull};

// A descriptor like clang emits for a wave32 kernel taking only a kernarg pointer.
aqueduct::abi::kernel_descriptor simple_kd() {
  aqueduct::abi::kernel_descriptor kd{};
  kd.group_segment_fixed_size = 1000;            // → 2 LDS granules of 512 B
  kd.kernel_code_entry_byte_offset = 0x100;      // kd at ...1F00 → entry ...2000
  kd.compute_pgm_rsrc1 = 0x60AF0042u;            // no PRIV
  kd.compute_pgm_rsrc2 = 0x00000084u;            // USER_SGPR 2, TGID_X_EN
  kd.compute_pgm_rsrc3 = 0x00000007u;
  kd.kernel_code_properties = 0x0408;            // KERNARG_SEGMENT_PTR | WAVEFRONT_SIZE32
  return kd;
}
qp::dispatch_params simple_params(const aqueduct::abi::kernel_descriptor& kd) {
  qp::dispatch_params p;
  p.kd = &kd;
  p.kd_va = gpu_va{0x7F00'00001F00ull};
  p.grid = {16, 2, 1};
  p.block = {64, 1, 1};
  p.kernarg = gpu_va{0x7F00'00300000ull};
  p.scratch_base = gpu_va{0x7F00'00100000ull};
  p.scratch_waves = 32;
  p.scratch_bytes_per_wave = 0x4000;
  return p;
}
}  // namespace

TEST_CASE("gfx11 dispatch register setup matches tinygrad's stream (§2.1), PRIV forced on an affected part") {
  const auto kd = simple_kd();
  const auto p = simple_params(kd);
  const dwv expect = {
      0xC0027600u, 0x20Cu, 0x20u, 0x7Fu,                  // PGM_LO/HI = 0x7F0000002000 >> 8
      0xC0027600u, 0x212u, 0x60AF0042u | (1u << 20), 0x00010084u,  // RSRC1 | PRIV ; RSRC2 | 2<<15
      0xC0017600u, 0x228u, 0x7u,                          // RSRC3
      0xC0017600u, 0x218u, 32u | (0x40u << 12),           // TMPRING: WAVES 32, WAVESIZE 0x4000/256
      0xC0027600u, 0x210u, 0x00001000u, 0x7Fu,            // SCRATCH_BASE = 0x7F0000100000 >> 8
      0xC0037600u, 0x21Bu, 0u, 0u, 0u,                    // RESTART_X/Y/Z
      0xC0027600u, 0x240u, 0x00300000u, 0x7F00u,          // USER_DATA_0/1 = kernarg
      0xC0017600u, 0x215u, 0u,                            // RESOURCE_LIMITS
      0xC0087600u, 0x204u, 0u, 0u, 0u, 64u, 1u, 1u, 0u, 0u,  // START, NUM_THREAD, PIPESTAT, PERFCOUNT
      0xC0031500u, 16u, 2u, 1u, 0x8005u,                  // DISPATCH_DIRECT, wave32 initiator
  };
  CHECK(g11p::dispatch_dwords(kd) == expect.size());
  CHECK(emit(128, [&](auto o) { return g11p::dispatch(o, p); }) == expect);

  // Unaffected gfx11 part: same stream with PRIV clear, even if the descriptor had it set.
  auto kd_priv = kd;
  kd_priv.compute_pgm_rsrc1 |= 1u << 20;
  auto p2 = simple_params(kd_priv);
  auto expect_np = expect;
  expect_np[6] = 0x60AF0042u;
  CHECK(emit(128, [&](auto o) { return g11::dispatch(o, p2); }) == expect_np);
  // gfx12: no PRIV either; same register map.
  CHECK(emit(128, [&](auto o) { return g12::dispatch(o, p2); }) == expect_np);
}

TEST_CASE("gfx9 and gfx90a dispatch: no RSRC3 on gfx9, RSRC3 at 0x22D on gfx90a, 1 KiB scratch units, initiator 0x5") {
  auto kd = simple_kd();
  kd.kernel_code_properties = 0x0008;  // wave64
  kd.compute_pgm_rsrc1 |= 1u << 20;    // must be cleared
  const auto p = simple_params(kd);
  const dwv expect9 = {
      0xC0027600u, 0x20Cu, 0x20u, 0x7Fu,
      0xC0027600u, 0x212u, 0x60AF0042u, 0x00010084u,
      0xC0017600u, 0x218u, 32u | (16u << 12),  // 0x4000 / 1024
      0xC0027600u, 0x210u, 0x00001000u, 0x7Fu,
      0xC0037600u, 0x21Bu, 0u, 0u, 0u,
      0xC0027600u, 0x240u, 0x00300000u, 0x7F00u,
      0xC0017600u, 0x215u, 0u,
      0xC0087600u, 0x204u, 0u, 0u, 0u, 64u, 1u, 1u, 0u, 0u,
      0xC0031500u, 16u, 2u, 1u, 0x5u,
  };
  CHECK(g9::dispatch_dwords(kd) == expect9.size());
  CHECK(emit(128, [&](auto o) { return g9::dispatch(o, p); }) == expect9);
  auto expect90a = expect9;
  const dwv rsrc3 = {0xC0017600u, 0x22Du, 0x7u};
  expect90a.insert(expect90a.begin() + 8, rsrc3.begin(), rsrc3.end());
  CHECK(emit(128, [&](auto o) { return g90a::dispatch(o, p); }) == expect90a);
}

// PAL's MEC packet definitions (spec/packets.md DISPATCH_INDIRECT, COPY_DATA): DISPATCH_INDIRECT
// = header (opcode 0x16, COUNT 2), counts address lo, hi, DISPATCH_INITIATOR; COPY_DATA = header
// (opcode 0x40, COUNT 4), control (SRC_SEL 2 [3:0], DST_SEL 2 [11:8], WR_CONFIRM [20]), source
// lo/hi, destination lo/hi.
TEST_CASE("DISPATCH_INDIRECT replaces DISPATCH_DIRECT after the same registers; COPY_DATA of one dword") {
  const auto kd = simple_kd();
  const auto direct = emit(128, [&](auto o) { return g11p::dispatch(o, simple_params(kd)); });
  auto p = simple_params(kd);
  p.indirect_counts = gpu_va{0x7F00'00500014ull};
  const auto indirect = emit(128, [&](auto o) { return g11p::dispatch(o, p); });
  REQUIRE(indirect.size() + 1 == direct.size());
  CHECK(dwv(indirect.begin(), indirect.end() - 4) == dwv(direct.begin(), direct.end() - 5));
  CHECK(dwv(indirect.end() - 4, indirect.end()) == dwv{0xC0021600u, 0x00500014u, 0x7F00u, 0x8005u});
  // gfx9: the wave64 initiator.
  auto kd9 = kd;
  kd9.kernel_code_properties = 0x0008;
  auto p9 = simple_params(kd9);
  p9.indirect_counts = p.indirect_counts;
  const auto ind9 = emit(128, [&](auto o) { return g9::dispatch(o, p9); });
  CHECK(dwv(ind9.end() - 4, ind9.end()) == dwv{0xC0021600u, 0x00500014u, 0x7F00u, 0x5u});
  CHECK(emit(16, [&](auto o) { return g11p::copy_dword(o, gpu_va{0x7F00'00500018ull}, gpu_va{0x7F00'00300010ull}); }) ==
        dwv{0xC0044000u, 0x00100202u, 0x00500018u, 0x7F00u, 0x00300010u, 0x7F00u});
}

TEST_CASE("user SGPRs in kernel_code_properties order (§1.6, §2.1)") {
  auto kd = simple_kd();
  // PRIVATE_SEGMENT_BUFFER (4) | DISPATCH_PTR (2) | QUEUE_PTR (2) | KERNARG (2) | DISPATCH_ID (2) | PRIVATE_SEGMENT_SIZE (1)
  kd.kernel_code_properties = 0x0400 | 0x1 | 0x2 | 0x4 | 0x8 | 0x10 | 0x40;
  kd.private_segment_fixed_size = 0x90;
  auto p = simple_params(kd);
  p.private_segment_buffer = {0x00100000u, 0x7F00u | (1u << 31), 0xFFFFFFFFu, 0x20C14000u};  // tinygrad's V#
  p.dispatch_ptr = gpu_va{0x7F00'00300100ull};
  p.queue_ptr = gpu_va{0x7F00'00400000ull};
  p.dispatch_id = 0x1'00000005ull;
  const auto out = emit(128, [&](auto o) { return g11p::dispatch(o, p); });
  // The USER_DATA packet follows PGM(4) RSRC(4) RSRC3(3) TMPRING(3) SCRATCH(4) RESTART(5) = 23 dwords.
  const dwv user(out.begin() + 23, out.begin() + 23 + 2 + 13);
  CHECK(user == dwv{0xC00D7600u, 0x240u, 0x00100000u, 0x80007F00u, 0xFFFFFFFFu, 0x20C14000u, 0x00300100u, 0x7F00u,
                    0x00400000u, 0x7F00u, 0x00300000u, 0x7F00u, 5u, 1u, 0x90u});
  CHECK(out.size() == g11p::dispatch_dwords(kd));
}

TEST_CASE("PRIV follows the processor through visit_family (spec/kfd.md §4)") {
  const auto kd = simple_kd();
  const auto p = simple_params(kd);
  const auto rsrc1_of = [&](std::uint32_t gfxv, std::uint32_t arrays) {
    return arch::visit_family(gfxv, arrays, [&](auto t) -> std::uint32_t {
             std::array<std::uint32_t, 128> out{};
             auto kd2 = kd;  // gfx9-class parts run wave64 only
             if (qp::encoder<decltype(t)>::is_gfx9) kd2.kernel_code_properties = 0x0008;
             auto p2 = p;
             p2.kd = &kd2;
             qp::encoder<decltype(t)>::dispatch(out, p2);
             return out[6];
           }).value();
  };
  const std::uint32_t priv = 1u << 20;
  CHECK((rsrc1_of(110000, 1) & priv) != 0);  // gfx1100
  CHECK((rsrc1_of(110001, 1) & priv) != 0);  // gfx1101
  CHECK((rsrc1_of(110002, 1) & priv) != 0);  // gfx1102
  CHECK((rsrc1_of(110003, 1) & priv) == 0);  // gfx1103, one shader array
  CHECK((rsrc1_of(110003, 2) & priv) != 0);  // gfx1103, two
  CHECK((rsrc1_of(110501, 1) & priv) == 0);  // gfx1151
  CHECK((rsrc1_of(120001, 1) & priv) == 0);  // gfx1201
  CHECK((rsrc1_of(90402, 1) & priv) == 0);   // gfx942
  // An unaffected target type offers nothing through which PRIV could be set.
  static_assert(!can_set_priv<g11> && !can_set_priv<g12> && !can_set_priv<g9>);
  static_assert(can_set_priv<g11p>);  // control: the check can succeed
  // A bare family tag is taken as the plain target.
  static_assert(std::is_same_v<qp::encoder<arch::gfx11_tag>::target, arch::gfx11_target>);
}

TEST_CASE("ACQUIRE_MEM: Linux gfx11 mem_sync (§2.5) and the gfx9 form (§1.3, §2.2; Linux gfx_v9_0_emit_mem_sync)") {
  CHECK(emit(16, [](auto o) { return g11::acquire_mem(o, 0xC3B1u); }) ==
        dwv{0xC0065800u, 0u, 0xFFFFFFFFu, 0xFFFFFFu, 0u, 0u, 0xAu, 0xC3B1u});
  CHECK(g11::full_barrier_cntl == 0xC3F1u);
  CHECK(g11::pre_dispatch_cntl == 0x03F0u);
  CHECK(emit(16, [](auto o) { return g9::acquire_mem(o, g9::full_barrier_cntl); }) ==
        dwv{0xC0055800u, 0x28C40000u, 0xFFFFFFFFu, 0xFFFFFFu, 0u, 0u, 0xAu});  // = Linux gfx_v9_0_emit_mem_sync
  CHECK(g9::acquire_mem_dwords == 7u);
  CHECK(g12::acquire_mem_dwords == 8u);
}

TEST_CASE("RELEASE_MEM: tinygrad signal / KFD event / write / timestamp (§2.2) and Linux fence (§2.5)") {
  CHECK(emit(16, [](auto o) { return g11::signal(o, sig, 7); }) ==
        dwv{0xC0064900u, 0x0070F514u, 0x20000000u, 0x00002010u, 0x7F00u, 7u, 0u, 0u});
  CHECK(emit(16, [](auto o) { return g9::signal(o, sig, 7); }) ==
        dwv{0xC0064900u, 0x00088514u, 0x20000000u, 0x00002010u, 0x7F00u, 7u, 0u, 0u});
  CHECK(emit(16, [](auto o) { return g11::signal_event(o, sig, 0x33); }) ==
        dwv{0xC0064900u, 0x514u, 0x22000000u, 0x00002010u, 0x7F00u, 0x33u, 0u, 0x33u});
  CHECK(emit(16, [](auto o) { return g9::signal_event(o, sig, 0x33); })[7] == 0u);  // gfx9: ctxid forced 0
  CHECK(emit(16, [](auto o) { return g11::write_value(o, gpu_va{0x1000}, 0x1'00000002ull, true); }) ==
        dwv{0xC0064900u, 0x514u, 0x40000000u, 0x1000u, 0u, 2u, 1u, 0u});
  CHECK(emit(16, [](auto o) { return g11::timestamp(o, gpu_va{0x1008}); }) ==
        dwv{0xC0064900u, 0x514u, 0x60000000u, 0x1008u, 0u, 0u, 0u, 0u});
  // Linux gfx11 fence: dw1 0x06603514, DATA_SEL 1, INT_SEL 0.
  namespace g = pkt::release_mem::gcr_gfx10;
  const qp::release_mem_params linux_fence{
      .cache_action = g::seq::put(1) | g::gl2_wb::put(1) | g::glm_inv::put(1) | g::glm_wb::put(1),
      .cache_policy = 3,
      .data_sel = pkt::release_mem::data_sel_value::data32_low,
      .address = sig,
      .data = 99,
      .int_ctxid = 0};
  CHECK(emit(16, [&](auto o) { return g11::release_mem(o, linux_fence); }) ==
        dwv{0xC0064900u, 0x06603514u, 0x20000000u, 0x00002010u, 0x7F00u, 99u, 0u, 0u});
}

TEST_CASE("WAIT_REG_MEM: signal wait and HDP flush (§2.2)") {
  CHECK(emit(16, [](auto o) { return g11::wait_reg_mem(o, sig, 5); }) ==
        dwv{0xC0053C00u, 0x15u, 0x00002010u, 0x7F00u, 5u, 0xFFFFFFFFu, 4u});
  CHECK(emit(16, [](auto o) {
          return g11::wait_reg_mem(o, sig, 5, 0xFFu, pkt::wait_reg_mem::compare_function::equal);
        }) == dwv{0xC0053C00u, 0x13u, 0x00002010u, 0x7F00u, 5u, 0xFFu, 4u});
  CHECK(emit(16, [](auto o) {
          return g11::write_wait_reg(o, 0xE26, 0xE27, 0xFFFFFFFFu, 0xFFFFFFFFu,
                                     pkt::wait_reg_mem::compare_function::greater_equal, 4);
        }) == dwv{0xC0053C00u, 0x45u, 0xE26u, 0xE27u, 0xFFFFFFFFu, 0xFFFFFFFFu, 4u});
}

TEST_CASE("INDIRECT_BUFFER, NOP, EVENT_WRITE, WRITE_DATA, SET_SH_REG (§1.1, §1.3, §2.1, §2.5)") {
  // tinygrad bind: INDIRECT_BUFFER (VALID | ndw); Linux: VALID | len | vmid << 24.
  CHECK(emit(8, [](auto o) { return g11::indirect_buffer(o, gpu_va{0x7F00'12345600ull}, 0x40); }) ==
        dwv{0xC0023F00u, 0x12345600u, 0x7F00u, 0x00800040u});
  CHECK(emit(8, [](auto o) { return g11::indirect_buffer(o, gpu_va{0x1000}, 0x40, 3); })[3] == 0x03800040u);
  CHECK(emit(8, [](auto o) { return g11::nop(o, 2); }) == dwv{0xC0001000u, 0u});
  CHECK(emit(8, [](auto o) { return g11::nop(o, 1); }) == dwv{0xFFFF1000u});
  CHECK(emit(8, [](auto o) { return g11::nop(o, 4); }) == dwv{0xC0021000u, 0u, 0u, 0u});
  CHECK(emit(8, [](auto o) { return g11::event_write(o); }) == dwv{0xC0004600u, 0x407u});
  const std::array<std::uint32_t, 2> v{0xDEADBEEFu, 1u};
  CHECK(emit(8, [&](auto o) { return g11::write_data(o, gpu_va{0x2000}, v); }) ==
        dwv{0xC0043700u, 0x00100500u, 0x2000u, 0u, 0xDEADBEEFu, 1u});
  CHECK(emit(8, [](auto o) { return g11::set_sh_reg(o, 0x2E15, {0u}); }) == dwv{0xC0017600u, 0x215u, 0u});
  CHECK(emit(8, [](auto o) { return g11::set_sh_reg(o, 0x2E1B, {0u, 0u, 0u}); }) == dwv{0xC0037600u, 0x21Bu, 0u, 0u, 0u});
  CHECK(g11::dispatch_initiator(true) == 0x8005u);
  CHECK(g11::dispatch_initiator(false) == 0x5u);
  CHECK(g9::dispatch_initiator(false) == 0x5u);
}

TEST_CASE("a whole tinygrad-style launch fits its reservation and the packet lengths chain") {
  const auto kd = simple_kd();
  const auto p = simple_params(kd);
  std::vector<std::uint32_t> ring(g11p::acquire_mem_dwords + g11p::dispatch_dwords(kd) + g11p::event_write_dwords +
                                  g11p::release_mem_dwords);
  std::span<std::uint32_t> s(ring);
  std::size_t n = g11p::acquire_mem(s, g11p::pre_dispatch_cntl);
  n += g11p::dispatch(s.subspan(n), p);
  n += g11p::event_write(s.subspan(n));
  n += g11p::signal(s.subspan(n), sig, 1);
  REQUIRE(n == ring.size());
  // Walk the stream by the headers' own lengths: it must land exactly on the end.
  std::size_t i = 0, packets = 0;
  while (i < ring.size()) {
    REQUIRE(pkt::header_type::get(ring[i]) == 3u);
    i += pkt::type3_packet_dwords(ring[i]);
    ++packets;
  }
  CHECK(i == ring.size());
  CHECK(packets == 1 + 10 + 1 + 1);  // ACQUIRE, 9 SET_SH_REG + DISPATCH, EVENT_WRITE, RELEASE
}

namespace {
struct lds_1280_quirks : arch::no_quirks {
  static constexpr std::uint32_t lds_granule_bytes = 1280;  // gfx950: 320 dwords (LLVM AMDGPUUsage)
};
}  // namespace

TEST_CASE("RSRC2.LDS_SIZE: static + dynamic LDS in 512-byte granules, overridable per target (LLVM AMDGPUUsage)") {
  auto kd = simple_kd();
  kd.kernel_code_properties = 0x0008;  // wave64
  auto p = simple_params(kd);
  p.dynamic_lds_bytes = 1000;  // 2000 bytes in all
  CHECK(emit(128, [&](auto o) { return qp::encoder<arch::gfx94x_target>::dispatch(o, p); })[7] == (0x84u | (4u << 15)));
  CHECK(emit(128, [&](auto o) { return g11::dispatch(o, p); })[7] == (0x84u | (4u << 15)));
  using g950 = qp::encoder<arch::target<arch::gfx94x_tag, lds_1280_quirks>>;
  static_assert(g950::lds_granule_bytes == 1280 && g11::lds_granule_bytes == 512);
  CHECK(emit(128, [&](auto o) { return g950::dispatch(o, p); })[7] == (0x84u | (2u << 15)));
}

TEST_CASE("PRED_EXEC: EXEC_COUNT [13:0], VIRTUAL_XCC_ID_SELECT [31:24] (§1.3)") {
  CHECK(emit(4, [](auto o) { return qp::encoder<arch::gfx94x_target>::pred_exec(o, 0x1, 8); }) ==
        dwv{0xC0002300u, 0x01000008u});
}

// The encoders are constexpr: whole packets, and a whole launch, can be built at compile time.
namespace {
constexpr auto ct_signal = [] {
  std::array<std::uint32_t, 8> a{};
  g11::signal(a, gpu_va{0x1000}, 5);
  return a;
}();
static_assert(ct_signal[0] == 0xC0064900u && ct_signal[1] == 0x0070F514u && ct_signal[5] == 5u);
constexpr auto ct_dispatch = [] {
  aqueduct::abi::kernel_descriptor kd{};
  kd.kernel_code_entry_byte_offset = 0x100;
  kd.kernel_code_properties = 0x0408;
  qp::dispatch_params p;
  p.kd = &kd;
  p.kd_va = gpu_va{0x1F00};
  p.kernarg = gpu_va{0x4000};
  std::array<std::uint32_t, 64> a{};
  g11p::dispatch(a, p);
  return a;
}();
static_assert(ct_dispatch[6] == (1u << 20), "PRIV set at compile time on an affected target");
}  // namespace

}  // namespace AQ_UNITY_ID
