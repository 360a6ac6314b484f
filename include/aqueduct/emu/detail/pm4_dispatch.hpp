// aqueduct/emu/detail/pm4_dispatch.hpp — what a DISPATCH_DIRECT launches: the SH registers turned
// into the dispatch plan every engine runs (emu/workgroup_executor.hpp).
//
// Layer: emu (detail, not API). A PM4 dispatch runs FROM THE REGISTERS, as on hardware:
// COMPUTE_PGM_LO/HI → the code (an emulated code blob → host kernel, or machine code for the ISA
// interpreter), COMPUTE_PGM_RSRC1 (the PRIV policy, spec/kfd.md §4), COMPUTE_PGM_RSRC2 (user SGPR
// count, system SGPR enables, LDS), COMPUTE_USER_DATA_* → the user SGPRs, COMPUTE_NUM_THREAD_* →
// workgroup size, DISPATCH_INITIATOR → wave size and grid units. Every register is read by its
// name in arch/ (detail/sh_registers.hpp). The only memory read is the code blob at the program
// address. A register state that cannot run, or PRIV set on a part where it hangs, is a
// `reject` (the MEC stops the queue with it).
// Thread safety: pure function of its arguments (the VM and registry are read-only here).
#pragma once

#include <aqueduct/abi/kernel_descriptor.hpp>
#include <aqueduct/abi/pm4.hpp>
#include <aqueduct/arch/family.hpp>
#include <aqueduct/core/bits.hpp>
#include <aqueduct/emu/detail/pm4_decoder.hpp>
#include <aqueduct/emu/detail/sh_registers.hpp>
#include <aqueduct/emu/engine_error.hpp>
#include <aqueduct/emu/engine_ports.hpp>
#include <aqueduct/emu/host_kernel.hpp>
#include <aqueduct/emu/wave_state.hpp>
#include <aqueduct/emu/workgroup_executor.hpp>

#include <array>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

namespace aqueduct::emu::detail {

// The part and knobs a dispatch is planned for.
struct pm4_dispatch_target {
  arch::family family = arch::family::gfx11;
  std::uint32_t gfx_target_version = 110000;
  std::uint32_t simd_arrays_per_engine = 2;
  std::uint32_t max_lds_bytes = 64 * 1024;
  std::optional<bool> force_rsrc1_priv;  // TEST ONLY: RSRC1.PRIV as the MEC sees it
};

// A dispatch as the MEC runs it.
struct pm4_dispatch {
  dispatch_plan plan;             // kd synthesized (RSRC1/2, wave32), pkt synthesized (grid, block)
  std::uint64_t total_wg = 0;
  unsigned waves_per_wg = 1;
  bool hangs_on_preemption = false;  // DEGFX11_12113 without PRIV
};

[[nodiscard]] inline decoded<pm4_dispatch> plan_pm4_dispatch(const dispatch_direct_fields& d, const sh_register_file& regs,
                                                                const pm4_dispatch_target& t, const vm_access& vm,
                                                                const host_kernel_registry& registry) {
  using R = sh_register_file::names;
  namespace r2 = abi::compute_pgm_rsrc2;
  pm4_dispatch out;
  dispatch_plan& plan = out.plan;
  // Program: COMPUTE_PGM_LO/HI = address >> 8 (HI data [7:0]).
  const std::uint32_t pgm_hi = regs.get<R::compute_pgm_hi>();
  if ((pgm_hi & ~0xFFu) != 0) return refuse(engine_fault::reserved_bits, "COMPUTE_PGM_HI bits [31:8]");
  const std::uint64_t pgm = make64(regs.get<R::compute_pgm_lo>(), pgm_hi) << 8;
  if (pgm == 0 || !vm.is_mapped(pgm, sizeof(emulated_code_blob)))
    return refuse(engine_fault::not_mapped, "COMPUTE_PGM_LO/HI: no program mapped there", pgm);
  emulated_code_blob blob;
  std::memcpy(&blob, vm.host_address(pgm), sizeof blob);
  const std::string_view name = emulated_code_name(blob);
  if (!name.empty()) {
    plan.fn = registry.find(name);
    if (!plan.fn) return refuse(engine_fault::unknown_host_kernel, "host kernel '" + std::string(name) + "'", pgm);
  } else if (isa_supported(t.family)) {
    plan.code_entry = pgm;  // machine code: the interpreter runs it (emu/isa/)
  } else {
    return refuse(engine_fault::bad_dispatch, "no emulated code at COMPUTE_PGM_LO/HI, and " + isa::no_runner_reason(t.family), pgm);
  }
  // RSRC1.PRIV policy (spec/kfd.md §4).
  std::uint32_t rsrc1 = regs.get<R::compute_pgm_rsrc1>();
  const std::uint32_t rsrc2 = regs.get<R::compute_pgm_rsrc2>();
  if (t.force_rsrc1_priv)
    rsrc1 = *t.force_rsrc1_priv ? (rsrc1 | arch::compute_pgm_rsrc1_priv::mask) : (rsrc1 & ~arch::compute_pgm_rsrc1_priv::mask);
  const bool priv = arch::compute_pgm_rsrc1_priv::get(rsrc1) != 0;
  const bool affected = arch::needs_pm4_priv(t.gfx_target_version, t.simd_arrays_per_engine);
  if (priv && !affected)
    return refuse(engine_fault::priv_on_unaffected_part,
                      "gfx_target_version " + std::to_string(t.gfx_target_version) +
                          " is not a DEGFX11_12113 part; PRIV=1 hangs it (spec/kfd.md §4) — the queue stops here");
  out.hangs_on_preemption = affected && !priv;
  // Registers → wave state.
  const unsigned user = r2::user_sgpr_count::get(rsrc2);
  if (user > R::user_data_count)
    return refuse(engine_fault::bad_dispatch, "RSRC2.USER_SGPR > 16 (only COMPUTE_USER_DATA_0..15 exist)");
  plan.family = t.family;
  plan.user_data_count = user;
  for (unsigned i = 0; i < user; ++i) plan.user_data[i] = regs.user_data(i);
  const bool wave32 = !pm4_gfx9_form(t.family) && abi::pm4::dispatch_initiator::cs_w32_en::get(d.initiator) != 0;
  plan.kd.compute_pgm_rsrc1 = rsrc1;  // VGPR count for the interpreter
  plan.kd.compute_pgm_rsrc2 = r2::granulated_lds_size::set(rsrc2, 0);  // LDS comes from LDS_SIZE below, not a KD field
  plan.kd.kernel_code_properties = wave32 ? abi::kernel_code_properties::enable_wavefront_size32::put(1) : 0;
  // Architected flat scratch (ported from isa9's pm4_dispatch.hpp; UNTESTED on this base):
  // COMPUTE_DISPATCH_SCRATCH_BASE_LO/HI (address >> 8, 0x2E10/0x2E11) and COMPUTE_TMPRING_SIZE
  // (0x2E18: WAVES, WAVESIZE in the family's unit; spec/packets.md §1.5). Each wave's slice is
  // WAVESIZE bytes; its lanes share it.
  if (const std::uint64_t scratch = make64(regs.at(0x2E10), regs.at(0x2E11)) << 8; scratch != 0) {
    const std::uint32_t tmpring = regs.at(0x2E18);
    std::uint64_t waves = 0, wave_bytes = 0;
    auto layout = [&](auto tag) {
      using tr = typename decltype(tag)::tmpring_size;
      waves = tr::waves::get(tmpring);
      wave_bytes = std::uint64_t(tr::wavesize::get(tmpring)) * tr::wavesize_unit_bytes;
    };
    switch (t.family) {
      case arch::family::gfx11: layout(arch::gfx11_tag{}); break;
      case arch::family::gfx12: layout(arch::gfx12_tag{}); break;
      case arch::family::gfx10_3: layout(arch::gfx10_3_tag{}); break;
      default: layout(arch::gfx9_tag{}); break;
    }
    plan.inputs.scratch_base = scratch;
    plan.inputs.scratch_bytes = waves * wave_bytes;
    plan.pkt.private_segment_size = static_cast<std::uint32_t>(wave_bytes / (wave32 ? 32u : 64u));
  }
  constexpr std::uint32_t lds_granule = 512;  // LDS_SIZE granule on GFX7–GFX12.0 (spec §1.5)
  plan.lds_bytes = r2::granulated_lds_size::get(rsrc2) * lds_granule;
  if (plan.lds_bytes > t.max_lds_bytes) return refuse(engine_fault::bad_dispatch, "RSRC2.LDS_SIZE above the CU's LDS");
  // COMPUTE_NUM_THREAD_*.NUM_THREAD_FULL: [12:0] on gfx12, [15:0] before (arch/family.hpp num_thread_*).
  const auto threads_of = [&](std::uint32_t v) -> std::uint32_t {
    return t.family == arch::family::gfx12 ? arch::gfx12_tag::num_thread::num_thread_full::get(v)
                                           : arch::gfx11_tag::num_thread::num_thread_full::get(v);
  };
  const std::array<std::uint32_t, 3> block{threads_of(regs.get<R::compute_num_thread_x>()),
                                           threads_of(regs.get<R::compute_num_thread_y>()),
                                           threads_of(regs.get<R::compute_num_thread_z>())};
  if (block[0] == 0 || block[1] == 0 || block[2] == 0) return refuse(engine_fault::bad_dispatch, "COMPUTE_NUM_THREAD_X/Y/Z is 0");
  if (std::uint64_t(block[0]) * block[1] * block[2] > 1024)
    return refuse(engine_fault::bad_dispatch, "more than 1024 threads per workgroup");
  if (regs.get<R::compute_start_x>() | regs.get<R::compute_start_y>() | regs.get<R::compute_start_z>())
    return refuse(engine_fault::bad_dispatch, "COMPUTE_START_X/Y/Z other than 0 not supported");
  const bool threads = abi::pm4::dispatch_initiator::use_thread_dimensions::get(d.initiator) != 0;
  std::uint64_t grid[3];
  for (int k = 0; k < 3; ++k) grid[k] = threads ? d.dim[k] : std::uint64_t(d.dim[k]) * block[k];
  // Workgroup counts whose full workgroups pass 2^32 - 1 work-items (0x400000 x 1024 is 2^32) are
  // valid; the emulator keeps its geometry in a 32-bit AQL-format grid, so it runs the same
  // workgroup count with the last work-item of the dimension dropped (the 2^32nd, id 0xFFFFFFFF).
  for (int k = 0; k < 3; ++k)
    if (!threads && grid[k] > 0xFFFFFFFFu && (grid[k] - block[k]) < 0xFFFFFFFFu) grid[k] = 0xFFFFFFFFu;
  if (grid[0] > 0xFFFFFFFFu || grid[1] > 0xFFFFFFFFu || grid[2] > 0xFFFFFFFFu)
    return refuse(engine_fault::bad_dispatch, "grid larger than 2^32 work-items in a dimension");
  plan.pkt.workgroup_size_x = static_cast<std::uint16_t>(block[0]);
  plan.pkt.workgroup_size_y = static_cast<std::uint16_t>(block[1]);
  plan.pkt.workgroup_size_z = static_cast<std::uint16_t>(block[2]);
  plan.pkt.grid_size_x = static_cast<std::uint32_t>(grid[0]);
  plan.pkt.grid_size_y = static_cast<std::uint32_t>(grid[1]);
  plan.pkt.grid_size_z = static_cast<std::uint32_t>(grid[2]);
  if (!plan.try_total_workgroups(out.total_wg)) return refuse(engine_fault::bad_dispatch, "the grid holds 2^64 or more workgroups");
  const unsigned wsize = wave32 ? 32u : 64u;
  out.waves_per_wg = static_cast<unsigned>((block[0] * block[1] * block[2] + wsize - 1) / wsize);
  // The SGPR budget: user + system SGPRs must fit (AMDGPUUsage initial state).
  const unsigned sys = r2::enable_sgpr_workgroup_id_x::get(rsrc2) + r2::enable_sgpr_workgroup_id_y::get(rsrc2) +
                       r2::enable_sgpr_workgroup_id_z::get(rsrc2) + r2::enable_sgpr_workgroup_info::get(rsrc2) +
                       r2::enable_private_segment::get(rsrc2);
  if (user + sys > max_wave_sgprs) return refuse(engine_fault::bad_dispatch, "too many initial SGPRs");
  return out;
}

}  // namespace aqueduct::emu::detail
