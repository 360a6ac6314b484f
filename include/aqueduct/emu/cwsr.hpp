// aqueduct/emu/cwsr.hpp — the emulated device's compute wave save/restore (CWSR) through the
// context-save area a runtime supplied at CREATE_QUEUE.
//
// Layer: emu. Model (spec/kfd.md §1.3–§1.4, DESIGN.md §4 "CWSR"):
//   * a queue is preempted between workgroups; at that moment the machine holds the next
//     `resident` workgroups of the running dispatch (as many as the node's wave capacity per XCC
//     allows — the kernel's wave_num: 32 per CU on GFX10+, min(40 per CU, 512 per SE) on GFX9);
//     their waves are saved;
//   * the area of XCC 0 (the emulator runs one XCC) is [address, address + ctx_save_restore_size):
//     the 40-byte header, the control stack growing DOWN from ctl_stack_size toward the header
//     (8 trailing bytes of workgroup context at the top, then one entry per wave: 12 bytes on
//     GFX10+, 8 on GFX9), and the workgroup state saved UP from ctl_stack_size;
//   * the workgroup state is accounted as the kernel sizes it — per CU: VGPR (0x60000 / 0x80000 /
//     0x40000 per gfx version) + SGPR 0x4000 + LDS 0x10000 + HWREG 0x1000, for ceil(waves /
//     waves-per-CU) CUs — and must fit between ctl_stack_size and ctx_save_restore_size; what the
//     emulator actually writes there is a compact record per wave (its SGPRs and work-item-id
//     VGPRs), which is what restore reads back, so a corrupted area gives wrong results;
//   * every bound is checked BEFORE writing: an area too small for the save (a pre-6.12 kernel
//     accepted any size) or not mapped makes the save fail — the caller reports a hang, as the
//     real part would corrupt memory and stop.
// After a save the header's control_stack_offset / control_stack_size / wave_state_offset /
// wave_state_size describe the used parts (the emulator's convention; what the firmware writes
// there is UNVERIFIED); debug_* and err_* stay as userspace wrote them.
// Thread safety: pure functions over caller-owned memory.
#pragma once

#include <aqueduct/abi/kfd_ioctl.hpp>
#include <aqueduct/arch/cwsr.hpp>
#include <aqueduct/core/result.hpp>
#include <aqueduct/emu/engine_ports.hpp>
#include <aqueduct/emu/queue_binding.hpp>
#include <aqueduct/emu/wave_state.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

namespace aqueduct::emu {

inline constexpr std::uint32_t cwsr_header_bytes = 40;       // spec/kfd.md §1.4
inline constexpr std::uint32_t cwsr_wg_context_bytes = 8;    // trailing workgroup context (§1.3 item 5)
inline constexpr std::uint32_t cwsr_gfx10_ctl_limit = 0x7000;  // GFX10 hardware limit (§1.3 item 5)

// What a full save of the node costs (per XCC), from the kernel's formula inputs (§1.3).
struct cwsr_machine {
  std::uint32_t gfx_target_version = 0;
  std::uint32_t cu_count = 0;          // per XCC
  std::uint32_t wave_capacity = 0;     // waves saved when the machine is full (per XCC)
  std::uint32_t waves_per_cu = 0;
  std::uint32_t ctl_bytes_per_wave = 0;  // 12 on GFX10+, 8 on GFX9
  std::uint64_t state_bytes_per_cu = 0;  // VGPR + SGPR + LDS + HWREG

  // Control stack bytes (header included) and workgroup-state bytes a save of `waves` takes.
  [[nodiscard]] constexpr std::uint64_t ctl_bytes(std::uint64_t waves) const noexcept {
    return cwsr_header_bytes + waves * ctl_bytes_per_wave + cwsr_wg_context_bytes;
  }
  [[nodiscard]] constexpr std::uint64_t state_bytes(std::uint64_t waves) const noexcept {
    return waves_per_cu ? (waves + waves_per_cu - 1) / waves_per_cu * state_bytes_per_cu : 0;
  }
};

[[nodiscard]] constexpr cwsr_machine cwsr_machine_of(const arch::cwsr_inputs& in) noexcept {
  cwsr_machine m;
  const std::uint32_t v = in.gfx_target_version;
  m.gfx_target_version = v;
  if (in.simd_per_cu == 0 || in.num_xcc == 0) return m;
  m.cu_count = in.simd_count / in.simd_per_cu / in.num_xcc;
  if (v < 100100) {
    const std::uint32_t arrays = in.array_count / in.num_xcc;
    const std::uint32_t cap = in.simd_arrays_per_engine ? arrays / in.simd_arrays_per_engine * 512 : 0;
    m.wave_capacity = std::min(m.cu_count * 40, cap);
    m.waves_per_cu = 40;
    m.ctl_bytes_per_wave = 8;
  } else {
    const bool g125 = v == 120500 || v == 120501;
    m.waves_per_cu = g125 ? 64 : 32;
    m.wave_capacity = m.cu_count * m.waves_per_cu;
    m.ctl_bytes_per_wave = 12;
  }
  if (v / 10000 == 10)  // the GFX10 control stack is capped at 0x7000 bytes: fewer waves fit
    m.wave_capacity = std::min<std::uint32_t>(m.wave_capacity, (cwsr_gfx10_ctl_limit - cwsr_header_bytes - cwsr_wg_context_bytes) / 12);
  const bool g125 = v == 120500 || v == 120501;
  const std::uint64_t vgpr = (v / 100 * 100 == 90400 || v == 90010 || v == 90008 || v == 90500 || g125) ? 0x80000
                             : (v == 110000 || v == 110001 || v == 110501 || v == 120000 || v == 120001) ? 0x60000
                                                                                                          : 0x40000;
  const std::uint64_t lds = (v == 90500 || g125) ? (std::uint64_t{in.lds_size_in_kb} << 10) : 0x10000;
  m.state_bytes_per_cu = vgpr + (g125 ? 0x8000 : 0x4000) + lds + (g125 ? 0x8000 : 0x1000);
  return m;
}

// Proves the area can hold a save of a full machine (what the kernel's 6.12+ checks guarantee).
[[nodiscard]] inline result<void> check_cwsr_capacity(const cwsr_area& a, const cwsr_machine& m) {
  const std::uint64_t ctl = m.ctl_bytes(m.wave_capacity), st = m.state_bytes(m.wave_capacity);
  if (a.address == 0 || a.ctx_save_restore_size == 0)
    return failure(errc::invalid_argument, "the queue has no CWSR area");
  if (a.ctl_stack_size < ctl || a.ctl_stack_size > a.ctx_save_restore_size ||
      a.ctx_save_restore_size - a.ctl_stack_size < st)
    return failure(errc::invalid_argument,
                   "CWSR area too small for a full save of " + std::to_string(m.wave_capacity) + " waves: needs a control stack of " +
                       std::to_string(ctl) + " bytes and " + std::to_string(st) + " bytes of workgroup state; the queue has ctl_stack_size " +
                       std::to_string(a.ctl_stack_size) + ", ctx_save_restore_size " + std::to_string(a.ctx_save_restore_size));
  return ok();
}

// ---- wave records ------------------------------------------------------------------------------
struct cwsr_wave_record_head {
  std::uint32_t magic;  // cwsr_wave_magic
  std::uint16_t sgpr_count;
  std::uint16_t user_sgpr_count;
  std::uint16_t system_sgpr_first;
  std::uint8_t wave_size;
  std::uint8_t wave_index;
  std::uint32_t active_lanes;
  std::uint32_t vgpr_sets;  // 1 (packed ids: v0) or 3 (v0, v1, v2)
  std::uint64_t exec;
  std::uint64_t workgroup;  // linear workgroup index in the dispatch
  // State a wave starts with outside its SGPRs/VGPRs: its private memory slice (architected flat
  // scratch addresses it directly) and, on gfx12, the workgroup ids in TTMP9 (X) / TTMP7 (Y, Z).
  std::uint32_t scratch_wave_offset;
  std::uint32_t ttmp7;
  std::uint32_t ttmp9;
  std::uint32_t reserved;
  std::uint64_t dispatch;   // which dispatch (the engine's key: AQL packet index, PM4 dispatch count)
};
static_assert(sizeof(cwsr_wave_record_head) == 64);
inline constexpr std::uint32_t cwsr_wave_magic = 0x45564157u;  // "WAVE"

[[nodiscard]] inline std::size_t wave_record_bytes(const wave_state& w, bool packed) noexcept {
  return sizeof(cwsr_wave_record_head) + 4u * w.sgpr_initialized + 4u * w.active_lanes * (packed ? 1u : 3u);
}
inline void append_wave_record(std::vector<std::byte>& out, const wave_state& w, std::uint64_t dispatch, std::uint64_t workgroup,
                               bool packed) {
  cwsr_wave_record_head h{};
  h.magic = cwsr_wave_magic;
  h.sgpr_count = static_cast<std::uint16_t>(w.sgpr_initialized);
  h.user_sgpr_count = static_cast<std::uint16_t>(w.user_sgpr_count);
  h.system_sgpr_first = static_cast<std::uint16_t>(w.system_sgpr_first);
  h.wave_size = static_cast<std::uint8_t>(w.wave_size);
  h.wave_index = static_cast<std::uint8_t>(w.wave_index);
  h.active_lanes = w.active_lanes;
  h.vgpr_sets = packed ? 1 : 3;
  h.exec = w.exec;
  h.workgroup = workgroup;
  h.scratch_wave_offset = w.scratch_wave_offset;
  h.ttmp7 = w.ttmp[7];
  h.ttmp9 = w.ttmp[9];
  h.dispatch = dispatch;
  const std::size_t at = out.size();
  out.resize(at + wave_record_bytes(w, packed));
  std::byte* p = out.data() + at;
  std::memcpy(p, &h, sizeof h);
  p += sizeof h;
  std::memcpy(p, w.sgpr.data(), 4u * w.sgpr_initialized);
  p += 4u * w.sgpr_initialized;
  std::memcpy(p, w.v0.data(), 4u * w.active_lanes);
  p += 4u * w.active_lanes;
  if (!packed) {
    std::memcpy(p, w.v1.data(), 4u * w.active_lanes);
    p += 4u * w.active_lanes;
    std::memcpy(p, w.v2.data(), 4u * w.active_lanes);
  }
}
// The size of the record at `p` (at most `avail` bytes) from its head, 0 if the head is malformed.
[[nodiscard]] inline std::size_t wave_record_size(const std::byte* p, std::size_t avail) noexcept {
  cwsr_wave_record_head h;
  if (avail < sizeof h) return 0;
  std::memcpy(&h, p, sizeof h);
  if (h.magic != cwsr_wave_magic || h.sgpr_count > max_wave_sgprs || h.active_lanes > max_wave_lanes ||
      (h.vgpr_sets != 1 && h.vgpr_sets != 3))
    return 0;
  const std::size_t used = sizeof h + 4u * h.sgpr_count + 4u * h.active_lanes * h.vgpr_sets;
  return used <= avail ? used : 0;
}
// Parses one record at `p` (at most `avail` bytes); false if malformed. `used` gets its size.
[[nodiscard]] inline bool read_wave_record(const std::byte* p, std::size_t avail, wave_state& w, std::uint64_t& dispatch,
                                           std::uint64_t& workgroup, std::size_t& used) noexcept {
  cwsr_wave_record_head h;
  if (avail < sizeof h) return false;
  std::memcpy(&h, p, sizeof h);
  if (h.magic != cwsr_wave_magic || h.sgpr_count > max_wave_sgprs || h.active_lanes > max_wave_lanes ||
      (h.vgpr_sets != 1 && h.vgpr_sets != 3) || (h.wave_size != 32 && h.wave_size != 64))
    return false;
  used = sizeof h + 4u * h.sgpr_count + 4u * h.active_lanes * h.vgpr_sets;
  if (avail < used) return false;
  w = wave_state{};
  w.sgpr_initialized = h.sgpr_count;
  w.user_sgpr_count = h.user_sgpr_count;
  w.system_sgpr_first = h.system_sgpr_first;
  w.wave_size = h.wave_size;
  w.wave_index = h.wave_index;
  w.active_lanes = h.active_lanes;
  w.exec = h.exec;
  w.scratch_wave_offset = h.scratch_wave_offset;
  w.ttmp[7] = h.ttmp7;
  w.ttmp[9] = h.ttmp9;
  workgroup = h.workgroup;
  dispatch = h.dispatch;
  p += sizeof h;
  std::memcpy(w.sgpr.data(), p, 4u * h.sgpr_count);
  p += 4u * h.sgpr_count;
  std::memcpy(w.v0.data(), p, 4u * h.active_lanes);
  p += 4u * h.active_lanes;
  if (h.vgpr_sets == 3) {
    std::memcpy(w.v1.data(), p, 4u * h.active_lanes);
    p += 4u * h.active_lanes;
    std::memcpy(w.v2.data(), p, 4u * h.active_lanes);
  }
  return true;
}

// ---- save / restore ----------------------------------------------------------------------------
// What a save took, for statistics and tests.
struct cwsr_save_stats {
  std::uint32_t waves = 0;
  std::uint32_t workgroups = 0;
  std::uint64_t ctl_bytes = 0;      // control stack incl. header and workgroup context
  std::uint64_t state_bytes = 0;    // accounted workgroup state
  std::uint64_t record_bytes = 0;   // actually written records
};

// Writes a save of `records` (concatenated wave records of `waves` waves in `workgroups`
// workgroups) into the area. Every bound is checked first; on failure nothing is written and
// the failure says which bound (errc::device_hang: the hardware would have corrupted memory).
[[nodiscard]] inline result<cwsr_save_stats> cwsr_save(const vm_access& vm, const cwsr_area& a, const cwsr_machine& m,
                                                       std::span<const std::byte> records,
                                                       std::span<const std::uint32_t> record_offsets, std::uint32_t workgroups) {
  const std::uint32_t waves = static_cast<std::uint32_t>(record_offsets.size());
  cwsr_save_stats s{waves, workgroups, m.ctl_bytes(waves), m.state_bytes(waves), records.size()};
  const auto hang = [&](const std::string& why) {
    return failure(errc::device_hang, "CWSR save of " + std::to_string(waves) + " waves (" + std::to_string(workgroups) +
                                          " workgroups) " + why + " — on hardware this corrupts memory on the first preemption");
  };
  if (a.address == 0 || a.ctx_save_restore_size < cwsr_header_bytes)
    return hang("has no save area (ctx_save_restore_address 0 or size below the 40-byte header)");
  if (!vm.is_mapped(a.address, a.ctx_save_restore_size))
    return hang("would write an area that is not fully mapped: [0x" + [&] {
      char b[40];
      std::snprintf(b, sizeof b, "%llx", static_cast<unsigned long long>(a.address));
      return std::string(b);
    }() + ", +" + std::to_string(a.ctx_save_restore_size) + ")");
  if (a.ctl_stack_size < s.ctl_bytes || a.ctl_stack_size > a.ctx_save_restore_size)
    return hang("needs a control stack of " + std::to_string(s.ctl_bytes) + " bytes; ctl_stack_size is " +
                std::to_string(a.ctl_stack_size));
  const std::uint64_t room = a.ctx_save_restore_size - a.ctl_stack_size;
  if (room < s.state_bytes || room < s.record_bytes)
    return hang("needs " + std::to_string(std::max(s.state_bytes, s.record_bytes)) + " bytes of workgroup state; the area has " +
                std::to_string(room) + " after the control stack (ctx_save_restore_size " +
                std::to_string(a.ctx_save_restore_size) + ")");
  auto* base = static_cast<std::byte*>(vm.host_address(a.address));
  // Control stack, downward: workgroup context at the top, then one entry per wave.
  std::byte* top = base + a.ctl_stack_size;
  const std::uint32_t ctx[2] = {waves, workgroups};
  std::memcpy(top - cwsr_wg_context_bytes, ctx, sizeof ctx);
  std::byte* e = top - cwsr_wg_context_bytes;
  for (std::uint32_t i = 0; i < waves; ++i) {
    e -= m.ctl_bytes_per_wave;
    const std::uint32_t entry[3] = {record_offsets[i], i, 0x57u};
    std::memcpy(e, entry, m.ctl_bytes_per_wave);
  }
  if (!records.empty()) std::memcpy(top, records.data(), records.size());
  abi::kfd::user_context_save_area_header h;
  std::memcpy(&h, base, sizeof h);
  h.control_stack_offset = static_cast<std::uint32_t>(a.ctl_stack_size - (s.ctl_bytes - cwsr_header_bytes));
  h.control_stack_size = static_cast<std::uint32_t>(s.ctl_bytes - cwsr_header_bytes);
  h.wave_state_offset = a.ctl_stack_size;
  h.wave_state_size = static_cast<std::uint32_t>(records.size());
  std::memcpy(base, &h, sizeof h);
  return s;
}

// Reads a save back: the concatenated records (in control-stack order) and the waves/workgroups
// counts. errc::device_hang if the area no longer holds a consistent save.
struct cwsr_image {
  std::vector<std::byte> records;
  std::vector<std::uint32_t> offsets;  // per wave, into records
  std::uint32_t workgroups = 0;
};
[[nodiscard]] inline result<cwsr_image> cwsr_restore(const vm_access& vm, const cwsr_area& a, const cwsr_machine& m) {
  const auto bad = [](const std::string& why) { return failure(errc::device_hang, "CWSR restore: " + why); };
  if (a.address == 0 || !vm.is_mapped(a.address, a.ctx_save_restore_size)) return bad("save area not mapped");
  const auto* base = static_cast<const std::byte*>(vm.host_address(a.address));
  abi::kfd::user_context_save_area_header h;
  std::memcpy(&h, base, sizeof h);
  std::uint32_t ctx[2];
  std::memcpy(ctx, base + a.ctl_stack_size - cwsr_wg_context_bytes, sizeof ctx);
  const std::uint32_t waves = ctx[0];
  if (m.ctl_bytes(waves) > a.ctl_stack_size || h.wave_state_offset != a.ctl_stack_size ||
      h.wave_state_size > a.ctx_save_restore_size - a.ctl_stack_size ||
      h.control_stack_size != m.ctl_bytes(waves) - cwsr_header_bytes)
    return bad("header or workgroup context inconsistent with the control stack");
  cwsr_image img;
  img.workgroups = ctx[1];
  img.records.assign(base + a.ctl_stack_size, base + a.ctl_stack_size + h.wave_state_size);
  img.offsets.resize(waves);
  const std::byte* e = base + a.ctl_stack_size - cwsr_wg_context_bytes;
  for (std::uint32_t i = 0; i < waves; ++i) {
    e -= m.ctl_bytes_per_wave;
    std::uint32_t entry[3] = {};
    std::memcpy(entry, e, m.ctl_bytes_per_wave);
    if (entry[1] != i || entry[0] >= img.records.size()) return bad("control stack entry " + std::to_string(i) + " corrupt");
    img.offsets[i] = entry[0];
  }
  return img;
}

}  // namespace aqueduct::emu
