// aqueduct/emu/wave_state.hpp — the register state a wave starts with, built as the CP does.
//
// Layer: emu. From a kernel descriptor, an AQL kernel dispatch packet and the workgroup being
// launched, `build_workgroup_waves` produces each wave's initial SGPRs and work-item-id VGPRs
// exactly in the AMDGPU ABI order (AMDGPUUsage "Initial Kernel Execution State";
// spec/code-objects.md §3.2–3.4, spec/packets.md §1.6):
//   user SGPRs  s0..    : the kernel_code_properties-enabled ones in bit order (private segment
//                         buffer 4, dispatch ptr 2, queue ptr 2, kernarg ptr 2, dispatch id 2,
//                         flat scratch init 2, private segment size 1), then kernarg preload
//                         dwords (gfx90a/gfx94x), padded up to rsrc2.USER_SGPR_COUNT;
//   system SGPRs next   : workgroup id X, Y, Z, workgroup info, private segment wave offset,
//                         each only if its rsrc2 enable bit is set — except that on gfx12
//                         ("architected SGPRs", LLVM FeatureArchitectedSGPRs) the workgroup ids
//                         are not in SGPRs but in TTMP9 (X) and TTMP7 ([15:0] Y, [31:16] Z),
//                         as clang-19's gfx1200 code reads them (tests/emu/wave_state.cpp);
//   VGPRs               : work-item ids X/Y/Z per rsrc2.ENABLE_VGPR_WORKITEM_ID, packed into v0
//                         ([9:0],[19:10],[29:20]) on gfx90a/gfx94x/gfx11/gfx12, else in v0/v1/v2.
// A host kernel (emu/host_kernel.hpp) reads everything — the kernarg pointer included — from
// this state, so a wrong descriptor gives a wrong answer, as it would on hardware.
// Thread safety: pure functions and plain values.
#pragma once

#include <aqueduct/abi/aql.hpp>
#include <aqueduct/abi/kernel_descriptor.hpp>
#include <aqueduct/arch/family.hpp>
#include <aqueduct/core/bits.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

namespace aqueduct::emu {

// Work-item ids packed into v0 (LLVM FeaturePackedTID): gfx90a, gfx94x, gfx11, gfx12.
[[nodiscard]] constexpr bool packs_workitem_ids(arch::family f) noexcept {
  return f == arch::family::gfx90a || f == arch::family::gfx94x || f == arch::family::gfx11 ||
         f == arch::family::gfx12;
}
// Workgroup ids in TTMP9/TTMP7 instead of system SGPRs (LLVM FeatureArchitectedSGPRs): gfx12.
[[nodiscard]] constexpr bool uses_architected_sgprs(arch::family f) noexcept { return f == arch::family::gfx12; }
// Wave32 exists on gfx10+ only; gfx9-class parts are wave64.
[[nodiscard]] constexpr bool supports_wave32(arch::family f) noexcept {
  return f == arch::family::gfx10_3 || f == arch::family::gfx11 || f == arch::family::gfx12;
}

inline constexpr unsigned max_wave_sgprs = 106;  // addressable SGPRs (gfx9–gfx12)
inline constexpr unsigned max_wave_lanes = 64;

// One wave's initial state.
struct wave_state {
  std::array<std::uint32_t, max_wave_sgprs> sgpr{};
  std::array<std::uint32_t, 16> ttmp{};  // trap temporaries; gfx12 workgroup ids in ttmp7/ttmp9
  unsigned user_sgpr_count = 0;    // = rsrc2.USER_SGPR_COUNT
  unsigned system_sgpr_first = 0;  // first system SGPR (workgroup id X if enabled)
  unsigned sgpr_initialized = 0;   // user + system SGPRs written
  unsigned wave_size = 64;
  unsigned wave_index = 0;  // within the workgroup
  unsigned active_lanes = 0;
  std::uint64_t exec = 0;
  // Byte offset of this wave's private memory in the queue's scratch (also in the private
  // segment wave offset SGPR when enabled; architected flat scratch uses it directly).
  std::uint32_t scratch_wave_offset = 0;
  // Initial VGPRs, one entry per lane: v0 always; v1/v2 only hold ids on unpacked targets.
  std::array<std::uint32_t, max_wave_lanes> v0{}, v1{}, v2{};

  [[nodiscard]] std::uint64_t sgpr64(unsigned i) const noexcept { return make64(sgpr[i], sgpr[i + 1]); }
};

// What the CP knows besides the packet and descriptor.
struct dispatch_inputs {
  std::uint64_t packet_va = 0;    // dispatch ptr SGPRs
  std::uint64_t queue_va = 0;     // queue ptr SGPRs (amd_queue)
  std::uint64_t dispatch_id = 0;  // the packet's index in the queue
  std::array<std::uint32_t, 4> scratch_srd{};  // private segment buffer (amd_queue.scratch_resource_descriptor)
  std::uint64_t scratch_base = 0;              // flat scratch init (emulated: base of this queue's scratch)
  std::uint64_t scratch_bytes = 0;             // size of this queue's scratch (0: unknown, not checked)
  const std::uint32_t* kernarg_host = nullptr;  // kernarg dwords, for kernarg preload only
  std::uint32_t kernarg_dwords = 0;
};

// Workgroup geometry (HSA: the last workgroup of a dimension may be partial).
struct workgroup_geometry {
  std::array<std::uint32_t, 3> id{};    // workgroup id
  std::array<std::uint32_t, 3> size{};  // actual work-items in this workgroup per dimension
  std::array<std::uint32_t, 3> count{};  // workgroups in the grid per dimension
};

// In 64 bits: a + b - 1 overflows 32 bits for a grid near 2^32 (0xFFFFFFFF / 1024 is 4,194,304
// workgroups, not 0). Precondition: b > 0 (the processors check sizes before asking).
[[nodiscard]] constexpr std::uint32_t ceil_div(std::uint32_t a, std::uint32_t b) noexcept {
  return static_cast<std::uint32_t>((std::uint64_t(a) + b - 1) / b);
}

// Workgroups in the grid per dimension (a dimension that fits one workgroup needs no division).
[[nodiscard]] inline std::array<std::uint32_t, 3> workgroup_counts(const abi::kernel_dispatch_packet& p) noexcept {
  const std::array<std::uint32_t, 3> grid{p.grid_size_x, p.grid_size_y, p.grid_size_z};
  const std::array<std::uint32_t, 3> wg{p.workgroup_size_x, p.workgroup_size_y, p.workgroup_size_z};
  std::array<std::uint32_t, 3> count{};
  for (int d = 0; d < 3; ++d) count[d] = grid[d] <= wg[d] ? 1u : ceil_div(grid[d], wg[d]);
  return count;
}

// The geometry of workgroup `linear` (x fastest) of a grid of `count` workgroups
// (workgroup_counts(p)). A workgroup of the first row needs no division (a 1-D grid never does):
// the processors ask for one per workgroup they launch.
[[nodiscard]] inline workgroup_geometry geometry_at(const abi::kernel_dispatch_packet& p,
                                                    const std::array<std::uint32_t, 3>& count,
                                                    std::uint64_t linear) noexcept {
  workgroup_geometry g;
  g.count = count;
  if (linear < count[0]) {
    g.id[0] = static_cast<std::uint32_t>(linear);
  } else {
    g.id[0] = static_cast<std::uint32_t>(linear % count[0]);
    const std::uint64_t rest = linear / count[0];
    g.id[1] = static_cast<std::uint32_t>(rest % count[1]);
    g.id[2] = static_cast<std::uint32_t>(rest / count[1]);
  }
  const std::array<std::uint32_t, 3> grid{p.grid_size_x, p.grid_size_y, p.grid_size_z};
  const std::array<std::uint32_t, 3> wg{p.workgroup_size_x, p.workgroup_size_y, p.workgroup_size_z};
  for (int d = 0; d < 3; ++d) {
    const std::uint64_t start = std::uint64_t(g.id[d]) * wg[d];
    g.size[d] = static_cast<std::uint32_t>(std::min<std::uint64_t>(wg[d], grid[d] - start));
  }
  return g;
}

// Workgroup counts and the geometry of workgroup `linear` (x fastest).
[[nodiscard]] inline workgroup_geometry geometry_of(const abi::kernel_dispatch_packet& p, std::uint64_t linear) noexcept {
  return geometry_at(p, workgroup_counts(p), linear);
}

// The grid's workgroup count, false when it does not fit 64 bits (2^31 x 2^31 x 4 is 2^64).
[[nodiscard]] inline bool total_workgroups(const workgroup_geometry& g, std::uint64_t& total) noexcept {
  const std::uint64_t xy = std::uint64_t(g.count[0]) * g.count[1];  // < 2^64: each count < 2^32
  if (g.count[2] != 0 && xy > ~std::uint64_t{0} / g.count[2]) return false;
  total = xy * g.count[2];
  return true;
}

[[nodiscard]] inline unsigned wave_size_of(const abi::kernel_descriptor& kd, arch::family f) noexcept {
  return supports_wave32(f) && abi::kernel_code_properties::enable_wavefront_size32::get(kd.kernel_code_properties)
             ? 32u
             : 64u;
}

// What decides which fields of a workgroup's initial waves are written (not their values): the
// descriptor's enable bits and preload range, the family, the workgroup's size, and the number
// of SGPRs a PM4 dispatch's user data overwrites. Two builds with equal footprints write the
// same fields, so the second may overwrite the first in place (build_workgroup_waves_into).
struct wave_footprint {
  std::uint16_t props = 0;
  std::uint16_t preload = 0;
  std::uint32_t rsrc2 = 0;
  arch::family family = arch::family::gfx11;
  std::array<std::uint32_t, 3> size{};
  unsigned user_data_count = 0;
  // Field by field (the defaulted one calls memcmp for the array: once per workgroup).
  bool operator==(const wave_footprint& o) const noexcept {
    return props == o.props && preload == o.preload && rsrc2 == o.rsrc2 && family == o.family &&
           size[0] == o.size[0] && size[1] == o.size[1] && size[2] == o.size[2] && user_data_count == o.user_data_count;
  }
};
[[nodiscard]] inline wave_footprint footprint_of(const abi::kernel_descriptor& kd, arch::family fam,
                                                 const workgroup_geometry& g, unsigned user_data_count = 0) noexcept {
  return {kd.kernel_code_properties, kd.kernarg_preload, kd.compute_pgm_rsrc2, fam, g.size, user_data_count};
}

// The waves of one workgroup with their initial SGPRs and VGPRs.
// `first_wave_slot`: the scratch wave slot of wave 0 (emu/workgroup_executor.hpp); wave w gets
// private segment wave offset (first_wave_slot + w) * wave size * private_segment_size.
// Preconditions (checked by the packet processor): the descriptor's enabled user SGPRs fit in
// rsrc2.USER_SGPR_COUNT and the total stays below max_wave_sgprs.
// `_into` fills `waves` (every wave rebuilt from zero; its capacity reused, so an engine that
// keeps one vector per thread builds workgroups without a heap allocation). `overwrite`: `waves`
// holds exactly what a build with the same wave_footprint left (nothing else wrote to it), so
// every field this build writes was written then and every other one is still zero: the waves
// are rewritten in place, without zeroing their 1.3 KB each first.
inline void build_workgroup_waves_into(std::vector<wave_state>& waves, const abi::kernel_descriptor& kd,
                                       const abi::kernel_dispatch_packet& p, const dispatch_inputs& in,
                                       arch::family fam, const workgroup_geometry& g, unsigned first_wave_slot = 0,
                                       bool overwrite = false) {
  namespace kcp = abi::kernel_code_properties;
  namespace r2 = abi::compute_pgm_rsrc2;
  const std::uint16_t props = kd.kernel_code_properties;
  const std::uint32_t rsrc2 = kd.compute_pgm_rsrc2;
  const unsigned wsize = wave_size_of(kd, fam);
  const std::uint32_t items = g.size[0] * g.size[1] * g.size[2];
  const unsigned nwaves = static_cast<unsigned>(ceil_div(items, wsize));

  // Every wave starts from zero (one memset: wave_state is plain data whose members all default
  // to 0 but wave_size, set below), unless `overwrite` says the same fields are about to be
  // written again; wave 0 is built in place and its SGPRs and scalars (everything before v0)
  // are the prototype of the others.
  static_assert(std::is_trivially_copyable_v<wave_state> && std::is_standard_layout_v<wave_state>);
  if (!overwrite || waves.size() != nwaves) {
    waves.resize(nwaves);
    if (nwaves == 0) return;  // an empty workgroup (the processors reject one before this)
    std::memset(static_cast<void*>(waves.data()), 0, nwaves * sizeof(wave_state));
  }
  wave_state& proto = waves[0];
  proto.wave_size = wsize;
  unsigned s = 0;
  auto put64 = [&](std::uint64_t v) {
    proto.sgpr[s++] = lo32(v);
    proto.sgpr[s++] = hi32(v);
  };
  if (kcp::enable_sgpr_private_segment_buffer::get(props))
    for (std::uint32_t w : in.scratch_srd) proto.sgpr[s++] = w;
  if (kcp::enable_sgpr_dispatch_ptr::get(props)) put64(in.packet_va);
  if (kcp::enable_sgpr_queue_ptr::get(props)) put64(in.queue_va);
  if (kcp::enable_sgpr_kernarg_segment_ptr::get(props)) put64(p.kernarg_address);
  if (kcp::enable_sgpr_dispatch_id::get(props)) put64(in.dispatch_id);
  if (kcp::enable_sgpr_flat_scratch_init::get(props)) put64(in.scratch_base);
  if (kcp::enable_sgpr_private_segment_size::get(props)) proto.sgpr[s++] = p.private_segment_size;
  // Kernarg preload (gfx90a/gfx94x): kernarg dwords [offset, offset+length) follow.
  const unsigned pre_len = abi::kernarg_preload::length::get(kd.kernarg_preload);
  const unsigned pre_off = abi::kernarg_preload::offset::get(kd.kernarg_preload);
  for (unsigned i = 0; i < pre_len && s < max_wave_sgprs; ++i)
    proto.sgpr[s++] = (in.kernarg_host != nullptr && pre_off + i < in.kernarg_dwords) ? in.kernarg_host[pre_off + i] : 0u;
  proto.user_sgpr_count = r2::user_sgpr_count::get(rsrc2);
  // System SGPRs start at USER_SGPR_COUNT, not after the enabled ones: on gfx1100/gfx1102 LLVM
  // pads USER_SGPR_COUNT (spec/code-objects.md §1.6 item 2), and the compiled code knows it.
  s = proto.user_sgpr_count > s ? proto.user_sgpr_count : s;
  proto.system_sgpr_first = s;
  if (uses_architected_sgprs(fam)) {
    // X always; Y and Z halves only when enabled (LLVM reads all of TTMP7 as Y when Z is off).
    proto.ttmp[9] = g.id[0];
    proto.ttmp[7] = (r2::enable_sgpr_workgroup_id_y::get(rsrc2) ? (g.id[1] & 0xFFFFu) : 0u) |
                    (r2::enable_sgpr_workgroup_id_z::get(rsrc2) ? (g.id[2] << 16) : 0u);
  } else {
    if (r2::enable_sgpr_workgroup_id_x::get(rsrc2)) proto.sgpr[s++] = g.id[0];
    if (r2::enable_sgpr_workgroup_id_y::get(rsrc2)) proto.sgpr[s++] = g.id[1];
    if (r2::enable_sgpr_workgroup_id_z::get(rsrc2)) proto.sgpr[s++] = g.id[2];
  }
  const unsigned info_sgpr = s;
  if (r2::enable_sgpr_workgroup_info::get(rsrc2)) ++s;
  const unsigned wave_offset_sgpr = s;
  if (r2::enable_private_segment::get(rsrc2)) ++s;
  proto.sgpr_initialized = s;

  if (overwrite) {
    // Every field the footprint decides (wave index, active lanes, exec, the workgroup info
    // SGPR, the work-item ids) already holds what this build would write: only the per-dispatch
    // and per-workgroup SGPRs (user SGPRs, workgroup ids) go to the other waves, and every
    // wave's scratch offset is rewritten (the wave slot and private segment size may differ).
    for (unsigned w = 0; w < nwaves; ++w) {
      wave_state& ws = waves[w];
      if (w != 0) {
        std::memcpy(ws.sgpr.data(), proto.sgpr.data(), info_sgpr * sizeof(std::uint32_t));
        ws.ttmp = proto.ttmp;
      }
      ws.scratch_wave_offset = (first_wave_slot + w) * wsize * p.private_segment_size;
      if (r2::enable_private_segment::get(rsrc2)) ws.sgpr[wave_offset_sgpr] = ws.scratch_wave_offset;
    }
    return;
  }
  const unsigned id_mode = r2::enable_vgpr_workitem_id::get(rsrc2);
  const bool packed = packs_workitem_ids(fam);
  for (unsigned w = 1; w < nwaves; ++w) std::memcpy(static_cast<void*>(&waves[w]), &proto, offsetof(wave_state, v0));
  for (unsigned w = 0; w < nwaves; ++w) {
    wave_state& ws = waves[w];
    ws.wave_index = w;
    ws.active_lanes = 0;  // counted below (an overwritten wave holds the last build's count)
    ws.exec = 0;
    // Workgroup info: first-wave flag [31], workgroup size in waves [5:0] (AMDGPUUsage).
    if (r2::enable_sgpr_workgroup_info::get(rsrc2))
      ws.sgpr[info_sgpr] = (w == 0 ? 0x80000000u : 0u) | (nwaves & 0x3Fu);
    // Byte offset of this wave's scratch: by wave slot, so waves in flight together never share.
    ws.scratch_wave_offset = (first_wave_slot + w) * wsize * p.private_segment_size;
    if (r2::enable_private_segment::get(rsrc2)) ws.sgpr[wave_offset_sgpr] = ws.scratch_wave_offset;
    // The work-item id of the wave's first lane, then counted up lane by lane (x fastest): one
    // division per wave, not one per lane and dimension.
    const std::uint32_t first = w * wsize;
    std::uint32_t ix = 0, iy = 0, iz = 0;
    if (first != 0) {
      ix = first % g.size[0];
      iy = first / g.size[0] % g.size[1];
      iz = first / g.size[0] / g.size[1];
    }
    for (unsigned lane = 0; lane < wsize; ++lane) {
      const std::uint32_t flat = first + lane;
      if (flat >= items) break;
      ++ws.active_lanes;
      ws.exec |= std::uint64_t(1) << lane;
      const std::uint32_t x = ix;
      const std::uint32_t y = id_mode >= 1 ? iy : 0;
      const std::uint32_t z = id_mode >= 2 ? iz : 0;
      if (++ix == g.size[0]) {
        ix = 0;
        if (++iy == g.size[1]) {
          iy = 0;
          ++iz;
        }
      }
      if (packed) {
        ws.v0[lane] = abi::packed_workitem_id::x::put(x) | abi::packed_workitem_id::y::put(y) |
                      abi::packed_workitem_id::z::put(z);
      } else {
        ws.v0[lane] = x;
        ws.v1[lane] = y;
        ws.v2[lane] = z;
      }
    }
  }
}
[[nodiscard]] inline std::vector<wave_state> build_workgroup_waves(const abi::kernel_descriptor& kd,
                                                                   const abi::kernel_dispatch_packet& p,
                                                                   const dispatch_inputs& in, arch::family fam,
                                                                   const workgroup_geometry& g,
                                                                   unsigned first_wave_slot = 0) {
  std::vector<wave_state> waves;
  build_workgroup_waves_into(waves, kd, p, in, fam, g, first_wave_slot);
  return waves;
}

}  // namespace aqueduct::emu
