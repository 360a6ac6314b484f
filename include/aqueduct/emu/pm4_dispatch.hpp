// aqueduct/emu/pm4_dispatch.hpp — DISPATCH_DIRECT on the emulated MEC: from the SH registers to waves.
//
// Layer: emu. A dispatch of `pm4_processor` (emu/pm4_processor.hpp) runs FROM THE REGISTERS, as on
// hardware: COMPUTE_PGM_LO/HI → the code (an emulated code blob → host kernel), COMPUTE_PGM_RSRC1
// (the PRIV policy, spec/kfd.md §4), COMPUTE_PGM_RSRC2 (user SGPR count, system SGPR enables,
// LDS), COMPUTE_USER_DATA_* → the user SGPRs, COMPUTE_NUM_THREAD_* → workgroup size,
// DISPATCH_INITIATOR → wave size and grid units. The workgroups then run one by one, each after a
// preemption point (emu/pm4_preemption.hpp), from fresh waves or from the restored CWSR image.
// Part of `pm4_processor`: these are the definitions of members it declares. Include
// <aqueduct/emu/pm4_processor.hpp> (which includes this header at its end); this header includes
// it too, so it also compiles on its own.
// Thread safety: runs on the processor thread only.
#pragma once

#include <aqueduct/abi/aql.hpp>
#include <aqueduct/abi/kernel_descriptor.hpp>
#include <aqueduct/abi/pm4.hpp>
#include <aqueduct/arch/family.hpp>
#include <aqueduct/core/bits.hpp>
#include <aqueduct/emu/cwsr.hpp>
#include <aqueduct/emu/host_kernel.hpp>
#include <aqueduct/emu/pm4_processor.hpp>
#include <aqueduct/emu/wave_state.hpp>
#include <aqueduct/emu/workgroup_executor.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace aqueduct::emu {

inline pm4_processor::step pm4_processor::dispatch_direct(std::span<const std::uint32_t> p, bool in_ib) {
  namespace a = abi::pm4;
  namespace di = abi::pm4::dispatch_initiator;
  namespace r2 = abi::compute_pgm_rsrc2;
  const auto bad = [&](engine_fault f, const std::string& why, std::uint64_t addr = 0) {
    fail(f, p, addr, in_ib, why);
    return step::fault;
  };
  const auto reg = [&](std::uint32_t abs) { return sh_[abs - a::sh_reg_base]; };
  const std::uint32_t init = p[4];
  const std::uint32_t defined = gfx9_form_ ? 0x5C7Fu : (b_.family == arch::family::gfx12 ? 0xE007FC7Fu : 0x3FC7Fu);
  if ((init & ~defined) != 0) return bad(engine_fault::reserved_bits, "DISPATCH_INITIATOR reserved bits 0x" + hex(init & ~defined));
  if (!di::compute_shader_en::get(init)) return bad(engine_fault::bad_dispatch, "DISPATCH_INITIATOR.COMPUTE_SHADER_EN is 0");
  if (p[1] == 0 || p[2] == 0 || p[3] == 0) return bad(engine_fault::bad_dispatch, "a dispatch dimension is 0");
  // Program: COMPUTE_PGM_LO/HI = address >> 8 (HI data [7:0]).
  const std::uint32_t pgm_hi = reg(0x2E0D);
  if ((pgm_hi & ~0xFFu) != 0) return bad(engine_fault::reserved_bits, "COMPUTE_PGM_HI bits [31:8]");
  const std::uint64_t pgm = make64(reg(0x2E0C), pgm_hi) << 8;
  if (pgm == 0 || !vm_.is_mapped(pgm, sizeof(emulated_code_blob)))
    return bad(engine_fault::not_mapped, "COMPUTE_PGM_LO/HI: no program mapped there", pgm);
  emulated_code_blob blob;
  std::memcpy(&blob, host<const void>(pgm), sizeof blob);
  const std::string_view name = emulated_code_name(blob);
  auto st = std::make_unique<dispatch_state>();
  if (!name.empty()) {
    st->plan.fn = registry_.find(name);
    if (!st->plan.fn) return bad(engine_fault::unknown_host_kernel, "host kernel '" + std::string(name) + "'", pgm);
  } else if (isa_supported(b_.family)) {
    st->plan.code_entry = pgm;  // machine code: the interpreter runs it (emu/isa/)
  } else {
    return bad(engine_fault::bad_dispatch, "no emulated code at COMPUTE_PGM_LO/HI", pgm);
  }
  // RSRC1.PRIV policy (spec/kfd.md §4).
  std::uint32_t rsrc1 = reg(0x2E12);
  const std::uint32_t rsrc2 = reg(0x2E13);
  if (opt_.test_force_rsrc1_priv)
    rsrc1 = *opt_.test_force_rsrc1_priv ? (rsrc1 | arch::compute_pgm_rsrc1_priv::mask) : (rsrc1 & ~arch::compute_pgm_rsrc1_priv::mask);
  const bool priv = arch::compute_pgm_rsrc1_priv::get(rsrc1) != 0;
  const bool affected = arch::needs_pm4_priv(b_.gfx_target_version, b_.simd_arrays_per_engine);
  if (priv && !affected)
    return bad(engine_fault::priv_on_unaffected_part,
               "gfx_target_version " + std::to_string(b_.gfx_target_version) +
                   " is not a DEGFX11_12113 part; PRIV=1 hangs it (spec/kfd.md §4) — the queue stops here");
  st->hangs_on_preemption = affected && !priv;
  // Registers → wave state.
  const unsigned user = r2::user_sgpr_count::get(rsrc2);
  if (user > 16) return bad(engine_fault::bad_dispatch, "RSRC2.USER_SGPR > 16 (only COMPUTE_USER_DATA_0..15 exist)");
  st->plan.family = b_.family;
  st->plan.user_data_count = user;
  for (unsigned i = 0; i < user; ++i) st->plan.user_data[i] = reg(0x2E40 + i);
  const bool wave32 = !gfx9_form_ && abi::pm4::dispatch_initiator::cs_w32_en::get(init) != 0;
  st->plan.kd.compute_pgm_rsrc1 = rsrc1;  // VGPR count for the interpreter
  st->plan.kd.compute_pgm_rsrc2 = rsrc2 & ~(0x1FFu << 15);  // LDS comes from LDS_SIZE below, not a KD field
  st->plan.kd.kernel_code_properties = wave32 ? abi::kernel_code_properties::enable_wavefront_size32::put(1) : 0;
  const std::uint32_t granule = 512;  // LDS_SIZE granule on GFX7–GFX12.0 (spec §1.5)
  st->plan.lds_bytes = ((rsrc2 >> 15) & 0x1FFu) * granule;
  if (st->plan.lds_bytes > opt_.max_lds_bytes) return bad(engine_fault::bad_dispatch, "RSRC2.LDS_SIZE above the CU's LDS");
  std::array<std::uint32_t, 3> block{};
  for (int d = 0; d < 3; ++d) block[d] = reg(0x2E07 + d) & (b_.family == arch::family::gfx12 ? 0x1FFFu : 0xFFFFu);
  if (block[0] == 0 || block[1] == 0 || block[2] == 0) return bad(engine_fault::bad_dispatch, "COMPUTE_NUM_THREAD_X/Y/Z is 0");
  if (std::uint64_t(block[0]) * block[1] * block[2] > 1024) return bad(engine_fault::bad_dispatch, "more than 1024 threads per workgroup");
  if (reg(0x2E04) | reg(0x2E05) | reg(0x2E06)) return bad(engine_fault::bad_dispatch, "COMPUTE_START_X/Y/Z other than 0 not supported");
  const bool threads = di::use_thread_dimensions::get(init) != 0;
  std::uint64_t grid[3];
  for (int d = 0; d < 3; ++d) grid[d] = threads ? p[1 + d] : std::uint64_t(p[1 + d]) * block[d];
  if (grid[0] > 0xFFFFFFFFu || grid[1] > 0xFFFFFFFFu || grid[2] > 0xFFFFFFFFu)
    return bad(engine_fault::bad_dispatch, "grid larger than 2^32 work-items in a dimension");
  st->plan.pkt.workgroup_size_x = static_cast<std::uint16_t>(block[0]);
  st->plan.pkt.workgroup_size_y = static_cast<std::uint16_t>(block[1]);
  st->plan.pkt.workgroup_size_z = static_cast<std::uint16_t>(block[2]);
  st->plan.pkt.grid_size_x = static_cast<std::uint32_t>(grid[0]);
  st->plan.pkt.grid_size_y = static_cast<std::uint32_t>(grid[1]);
  st->plan.pkt.grid_size_z = static_cast<std::uint32_t>(grid[2]);
  const auto g0 = geometry_of(st->plan.pkt, 0);
  st->total_wg = std::uint64_t(g0.count[0]) * g0.count[1] * g0.count[2];
  const unsigned wsize = wave32 ? 32u : 64u;
  st->waves_per_wg = static_cast<unsigned>((block[0] * block[1] * block[2] + wsize - 1) / wsize);
  {
    // The SGPR budget: user + system SGPRs must fit (AMDGPUUsage initial state).
    const unsigned sys = r2::enable_sgpr_workgroup_id_x::get(rsrc2) + r2::enable_sgpr_workgroup_id_y::get(rsrc2) +
                         r2::enable_sgpr_workgroup_id_z::get(rsrc2) + r2::enable_sgpr_workgroup_info::get(rsrc2) +
                         r2::enable_private_segment::get(rsrc2);
    if (user + sys > max_wave_sgprs) return bad(engine_fault::bad_dispatch, "too many initial SGPRs");
  }
  dispatches_.fetch_add(1, std::memory_order_acq_rel);
  snapshot_registers();  // what sh_register() reports: the state of the last dispatch
  return run_dispatch(*st, p, in_ib);
}

inline std::vector<wave_state> pm4_processor::fresh_waves(const dispatch_state& st, std::uint64_t wg) const {
  return workgroup_executor(vm_, 0).initial_waves(st.plan, wg);
}

inline pm4_processor::step pm4_processor::run_dispatch(dispatch_state& st, std::span<const std::uint32_t> p, bool in_ib) {
  workgroup_executor executor(vm_, 0);  // one workgroup at a time, on this thread
  for (std::uint64_t wg = 0; wg < st.total_wg; ++wg) {
    current_ = &st;
    current_wg_ = wg;
    const step pre = preemption_point(true);
    current_ = nullptr;
    if (pre == step::stopped) return step::stopped;
    if (pre == step::fault) return step::fault;  // the save/restore failed or hung: the queue stays here
    std::vector<wave_state> waves;
    if (st.restored(wg)) {
      const std::uint64_t k = wg - st.restored_first;
      waves.resize(st.wg_first_wave[k + 1] - st.wg_first_wave[k]);
      for (std::size_t i = 0; i < waves.size(); ++i) {
        const std::uint32_t off = st.image.offsets[st.wg_first_wave[k] + i];
        std::uint64_t owner = 0;
        std::size_t used = 0;
        if (!read_wave_record(st.image.records.data() + off, st.image.records.size() - off, waves[i], owner, used) ||
            owner != wg) {
          fail(engine_fault::cwsr_restore_failed, p, b_.cwsr.address, in_ib,
               "restored wave record of workgroup " + std::to_string(wg) + " is corrupt");
          return step::fault;
        }
      }
    } else {
      waves = fresh_waves(st, wg);
    }
    if (auto f = executor.run(st.plan, wg, waves)) {
      fail(engine_fault_of(f->what), p, f->address, in_ib, f->detail);
      return step::fault;
    }
    ++wg_since_preempt_;
  }
  return step::done;
}


}  // namespace aqueduct::emu
