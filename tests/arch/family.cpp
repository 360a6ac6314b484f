// Tests for arch/family.hpp. Expected values: the compute SH register table of spec/packets.md
// §1.4 (absolute dword addresses, Mesa byte names = abs*4), the PM4 header examples of §1.1
// (ACQUIRE_MEM C0055800 on gfx9, C0065800 on gfx10+), and the compute_pgm_rsrc values clang-19
// wrote into the measured vadd kernel descriptors (spec/code-objects.md §3.5).
#include <aqueduct/abi/pm4.hpp>
#include <aqueduct/arch/family.hpp>

#include <doctest/doctest.h>

#include <type_traits>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

namespace arch = aqueduct::arch;

template <class Tag>
void check_common_registers() {
  using R = typename Tag::regs;
  CHECK(R::compute_dispatch_initiator == 0x2E00u);
  CHECK(R::compute_dim_x == 0x2E01u);
  CHECK(R::compute_start_x == 0x2E04u);
  CHECK(R::compute_num_thread_x == 0x2E07u);
  CHECK(R::compute_num_thread_z == 0x2E09u);
  CHECK(R::compute_pgm_lo == 0x2E0Cu);
  CHECK(R::compute_pgm_hi == 0x2E0Du);
  CHECK(R::compute_dispatch_scratch_base_lo == 0x2E10u);
  CHECK(R::compute_pgm_rsrc1 == 0x2E12u);  // Mesa R_00B848
  CHECK(R::compute_pgm_rsrc2 == 0x2E13u);
  CHECK(R::compute_resource_limits == 0x2E15u);
  CHECK(R::compute_tmpring_size == 0x2E18u);
  CHECK(R::compute_restart_x == 0x2E1Bu);
  CHECK(R::compute_restart_z == 0x2E1Du);
  CHECK(R::compute_user_data_0 == 0x2E40u);
  CHECK(R::compute_user_data(15) == 0x2E4Fu);
  CHECK(R::user_data_count == 16u);
  CHECK(arch::sh_offset(R::compute_pgm_rsrc1) == 0x212u);  // SET_SH_REG offset
  CHECK(arch::sh_offset(R::compute_user_data_0) == 0x240u);
}

TEST_CASE("compute SH registers of spec/packets.md §1.4") {
  check_common_registers<arch::gfx9_tag>();
  check_common_registers<arch::gfx90a_tag>();
  check_common_registers<arch::gfx94x_tag>();
  check_common_registers<arch::gfx10_3_tag>();
  check_common_registers<arch::gfx11_tag>();
  check_common_registers<arch::gfx12_tag>();
  // COMPUTE_PGM_RSRC3: absent before gfx90a, 0x2E2D on gfx90a/gfx94x, 0x2E28 (R_00B8A0) on gfx10+.
  CHECK(arch::gfx9_tag::regs::compute_pgm_rsrc3 == arch::no_register);
  CHECK_FALSE(arch::gfx9_tag::has_compute_pgm_rsrc3);
  CHECK(arch::gfx90a_tag::regs::compute_pgm_rsrc3 == 0x2E2Du);
  CHECK(arch::gfx94x_tag::regs::compute_pgm_rsrc3 == 0x2E2Du);
  CHECK(arch::gfx10_3_tag::regs::compute_pgm_rsrc3 == 0x2E28u);
  CHECK(arch::gfx11_tag::regs::compute_pgm_rsrc3 == 0x2E28u);
  CHECK(arch::gfx12_tag::regs::compute_pgm_rsrc3 == 0x2E28u);
  CHECK(arch::gfx94x_tag::regs::compute_shader_chksum == 0x2E2Cu);
  CHECK(arch::gfx11_tag::regs::compute_shader_chksum == 0x2E2Au);
  CHECK(arch::gfx11_tag::regs::compute_dispatch_tunnel == 0x2E7Du);
}

TEST_CASE("ACQUIRE_MEM length, doorbell width, SDMA major, wave size") {
  // header COUNT = dwords - 2: C0055800 → 5 → 7 dwords; C0065800 → 6 → 8 dwords
  CHECK(arch::gfx9_tag::acquire_mem_dwords == ((0xC0055800u >> 16 & 0x3FFF) + 2));
  CHECK(arch::gfx94x_tag::acquire_mem_dwords == 7u);
  CHECK(arch::gfx10_3_tag::acquire_mem_dwords == ((0xC0065800u >> 16 & 0x3FFF) + 2));
  CHECK(arch::gfx11_tag::acquire_mem_dwords == 8u);
  CHECK(arch::gfx12_tag::acquire_mem_dwords == 8u);
  for (auto d : {arch::gfx9_tag::doorbell_bytes, arch::gfx94x_tag::doorbell_bytes, arch::gfx11_tag::doorbell_bytes,
                 arch::gfx12_tag::doorbell_bytes})
    CHECK(d == 8u);
  CHECK(arch::gfx9_tag::sdma_version / 10 == 4);
  CHECK(arch::gfx94x_tag::sdma_version / 10 == 4);
  CHECK(arch::gfx10_3_tag::sdma_version == 52u);
  CHECK(arch::gfx11_tag::sdma_version / 10 == 6);
  CHECK(arch::gfx12_tag::sdma_version / 10 == 7);
  CHECK(arch::gfx94x_tag::default_wave_size == 64u);
  CHECK(arch::gfx11_tag::default_wave_size == 32u);
}

TEST_CASE("RSRC layouts decode the clang-19 kernel descriptors of spec/code-objects.md §3.5") {
  // gfx1100 vadd: rsrc1 0x60af0080, rsrc2 0x9e (USER_SGPR_COUNT 15)
  using R1 = arch::gfx11_tag::rsrc1;
  using R2 = arch::gfx11_tag::rsrc2;
  CHECK(R1::vgprs::get(0x60af0080u) == 0u);
  CHECK(R1::sgprs::get(0x60af0080u) == 2u);  // 0x80 = 2 << 6 (LLVM 19 writes it on gfx11)
  CHECK(R1::float_mode::get(0x60af0080u) == 0xF0u);  // denorm 3/3, round 0/0
  CHECK(R1::dx10_clamp::get(0x60af0080u) == 1u);
  CHECK(R1::ieee_mode::get(0x60af0080u) == 1u);
  CHECK(R1::wgp_mode::get(0x60af0080u) == 1u);
  CHECK(R1::mem_ordered::get(0x60af0080u) == 1u);
  CHECK(R1::fwd_progress::get(0x60af0080u) == 0u);
  CHECK(arch::compute_pgm_rsrc1_priv::get(0x60af0080u) == 0u);
  CHECK(R2::user_sgpr::get(0x9eu) == 15u);
  CHECK(R2::tgid_x_en::get(0x9eu) == 1u);
  // gfx1200: no DX10_CLAMP/IEEE bits (0x600f0040); the gfx12 names of bits 21/23 read 0.
  CHECK(arch::gfx12_tag::rsrc1::wg_rr_en::get(0x600f0040u) == 0u);
  CHECK(arch::gfx12_tag::rsrc1::disable_perf::get(0x600f0040u) == 0u);
  CHECK(arch::gfx12_tag::rsrc1::wgp_mode::get(0x600f0040u) == 1u);
  // gfx90a: rsrc3 0x1 → ACCUM_OFFSET 1; gfx942 rsrc2 0x84 → USER_SGPR 2
  CHECK(arch::gfx90a_tag::rsrc3::accum_offset::get(0x1u) == 1u);
  CHECK(arch::gfx94x_tag::rsrc2::user_sgpr::get(0x84u) == 2u);
  // gfx900: rsrc1 0x00af0041 → VGPRS 1, SGPRS 1
  CHECK(arch::gfx9_tag::rsrc1::vgprs::get(0x00af0041u) == 1u);
  CHECK(arch::gfx9_tag::rsrc1::sgprs::get(0x00af0041u) == 1u);
  // Encoders build values with put(): tinygrad's gfx11 wave32 DISPATCH_INITIATOR = 0x8005.
  using DI = arch::gfx11_tag::dispatch_initiator;
  CHECK((DI::compute_shader_en::put(1) | DI::force_start_at_000::put(1) | DI::cs_w32_en::put(1)) == 0x8005u);
  // TMPRING_SIZE.WAVESIZE width: 13 bits gfx9/10, 15 bits gfx11, 18 bits gfx12 (LLVM S_00B860_*).
  CHECK(arch::gfx9_tag::tmpring_size::wavesize::width == 13u);
  CHECK(arch::gfx11_tag::tmpring_size::wavesize::width == 15u);
  CHECK(arch::gfx12_tag::tmpring_size::wavesize::width == 18u);
  CHECK(arch::gfx11_tag::tmpring_size::wavesize_unit_bytes == 256u);
  CHECK(arch::gfx12_tag::num_thread::num_thread_full::width == 13u);
}

// The encoder-facing RSRC1 layouts have no PRIV field (see arch/target.hpp).
template <class L>
concept has_priv_field = requires { typename L::priv; };
static_assert(!has_priv_field<arch::gfx9_tag::rsrc1> && !has_priv_field<arch::gfx11_tag::rsrc1> &&
              !has_priv_field<arch::gfx12_tag::rsrc1>);

// DISPATCH_INITIATOR's bits are defined once (abi/pm4.hpp); the per-generation names are those types.
namespace abi_di = aqueduct::abi::pm4::dispatch_initiator;
static_assert(std::is_same_v<arch::gfx9_tag::dispatch_initiator::compute_shader_en, abi_di::compute_shader_en> &&
              std::is_same_v<arch::gfx9_tag::dispatch_initiator::data_atc, abi_di::data_atc_gfx9> &&
              std::is_same_v<arch::gfx11_tag::dispatch_initiator::cs_w32_en, abi_di::cs_w32_en> &&
              std::is_same_v<arch::gfx12_tag::dispatch_initiator::disable_disp_prempt_en, abi_di::disable_disp_prempt_en>);
// ... and keep the bit positions of COMPUTE_DISPATCH_INITIATOR (spec/packets.md §1.5 [TG-REGS]).
static_assert(arch::gfx11_tag::dispatch_initiator::cs_w32_en::mask == (1u << 15) &&
              arch::gfx9_tag::dispatch_initiator::data_atc::mask == (1u << 12) &&
              arch::gfx12_tag::dispatch_initiator::ping_pong_en::mask == (1u << 12));

TEST_CASE("family_of") {
  CHECK(arch::family_of(90000) == arch::family::gfx9);
  CHECK(arch::family_of(90010) == arch::family::gfx90a);
  CHECK(arch::family_of(90402) == arch::family::gfx94x);
  CHECK(arch::family_of(100102) == arch::family::gfx10_3);
  CHECK(arch::is_gfx10_1(100102));
  CHECK_FALSE(arch::is_gfx10_1(100300));
  CHECK(arch::family_of(110502) == arch::family::gfx11);
  CHECK(arch::family_of(120001) == arch::family::gfx12);
  CHECK_FALSE(arch::family_of(80003).has_value());
  CHECK_FALSE(arch::family_of(120500).has_value());  // gfx1250
  CHECK(arch::family_name(arch::family::gfx10_3) == "gfx10.3");
}

}  // namespace AQ_UNITY_ID
