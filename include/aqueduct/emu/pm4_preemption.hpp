// aqueduct/emu/pm4_preemption.hpp — preemption of an emulated PM4 queue through its CWSR area.
//
// Layer: emu. The preemption point of `pm4_processor` (emu/pm4_processor.hpp), served between
// packets and between workgroups: on demand (request_preemption / resume) or by a stress knob
// (every N workgroups, on a timer). The resident waves are saved to the CWSR area (emu/cwsr.hpp),
// the queue stays off the hardware, then the image is restored and indexed by workgroup. The
// GFX11 DEGFX11_12113 hang (a PM4 dispatch without COMPUTE_PGM_RSRC1.PRIV, spec/kfd.md §4) and a
// save or restore that fails stop the queue.
// Part of `pm4_processor`: these are the definitions of members it declares. Include
// <aqueduct/emu/pm4_processor.hpp> (which includes this header at its end); this header includes
// it too, so it also compiles on its own.
// Thread safety: runs on the processor thread only; it takes the processor's mutex for the flags.
#pragma once

#include <aqueduct/emu/cwsr.hpp>
#include <aqueduct/emu/pm4_processor.hpp>
#include <aqueduct/emu/wave_state.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace aqueduct::emu {

inline pm4_processor::step pm4_processor::preemption_point(bool in_dispatch) {
  bool demand, resume_pending;
  {
    std::lock_guard lock(mu_);
    if (stop_) return step::stopped;
    demand = preempt_requested_;
    resume_pending = resume_requested_;
  }
  (void)resume_pending;
  bool stress = false;
  if (opt_.preempt_every_workgroups != 0 && in_dispatch && wg_since_preempt_ >= opt_.preempt_every_workgroups) stress = true;
  if (opt_.preempt_interval.count() != 0 && std::chrono::steady_clock::now() >= next_timer_preempt_) stress = true;
  if (!demand && !stress) return step::done;
  wg_since_preempt_ = 0;
  next_timer_preempt_ = std::chrono::steady_clock::now() + opt_.preempt_interval;
  // ---- save
  dispatch_state* st = in_dispatch ? current_ : nullptr;
  std::vector<std::byte> records;
  std::vector<std::uint32_t> offsets;
  std::uint32_t workgroups = 0;
  const bool packed = packs_workitem_ids(b_.family);
  if (st != nullptr) {
    const std::uint64_t cap_wg = std::max<std::uint64_t>(1, machine_.wave_capacity / std::max(1u, st->waves_per_wg));
    const std::uint64_t last = std::min<std::uint64_t>(st->total_wg, current_wg_ + cap_wg);
    std::uint64_t wg = current_wg_;
    if (st->restored(wg)) {  // still resident since the last restore: its records, copied as they are
      const std::uint64_t k0 = wg - st->restored_first;
      const std::uint64_t k1 = std::min<std::uint64_t>(st->restored_count, last - st->restored_first);
      const std::size_t b0 = st->record_begin(k0), b1 = st->record_begin(k1);
      records.assign(st->image.records.begin() + static_cast<std::ptrdiff_t>(b0),
                     st->image.records.begin() + static_cast<std::ptrdiff_t>(b1));
      for (std::uint32_t i = st->wg_first_wave[k0]; i < st->wg_first_wave[k1]; ++i)
        offsets.push_back(static_cast<std::uint32_t>(st->image.offsets[i] - b0));
      workgroups += static_cast<std::uint32_t>(k1 - k0);
      wg = st->restored_first + k1;
    }
    for (; wg < last; ++wg) {
      for (const wave_state& w : fresh_waves(*st, wg)) {
        offsets.push_back(static_cast<std::uint32_t>(records.size()));
        append_wave_record(records, w, wg, packed);
      }
      ++workgroups;
    }
    if (st->hangs_on_preemption && !offsets.empty()) {
      // DEGFX11_12113: the waves of a PM4 dispatch without PRIV never reach the trap handler's
      // save; the queue does not come off the hardware and makes no more progress.
      fail(engine_fault::cwsr_hang_without_priv, cur_packet_view(), 0, false,
           "gfx_target_version " + std::to_string(b_.gfx_target_version) + " needs COMPUTE_PGM_RSRC1.PRIV=1 on PM4 dispatches "
           "(DEGFX11_12113, spec/kfd.md §4); preempted before workgroup " + std::to_string(current_wg_) + " of " +
           std::to_string(st->total_wg));
      return step::fault;
    }
  }
  auto saved = cwsr_save(vm_, b_.cwsr, machine_, records, offsets, workgroups);
  if (!saved) {
    fail(engine_fault::cwsr_save_failed, cur_packet_view(), b_.cwsr.address, false, std::string(saved.get_failure().detail()));
    return step::fault;
  }
  {
    std::lock_guard lock(mu_);
    preempted_ = true;
    ++stats_.preemptions;
    stats_.waves_saved += saved->waves;
    stats_.max_ctl_bytes = std::max(stats_.max_ctl_bytes, saved->ctl_bytes);
    stats_.max_state_bytes = std::max(stats_.max_state_bytes, saved->state_bytes);
  }
  state_cv_.notify_all();
  // ---- off the hardware until resumed
  {
    std::unique_lock lock(mu_);
    if (demand) {
      cv_.wait(lock, [&] { return stop_ || resume_requested_; });
      resume_requested_ = false;
    } else if (opt_.preempted_for.count() != 0) {
      cv_.wait_for(lock, opt_.preempted_for, [&] { return stop_; });
    }
    if (stop_) return step::stopped;
  }
  // ---- restore
  auto img = cwsr_restore(vm_, b_.cwsr, machine_);
  if (!img) {
    fail(engine_fault::cwsr_restore_failed, cur_packet_view(), b_.cwsr.address, false, std::string(img.get_failure().detail()));
    return step::fault;
  }
  if (st != nullptr) {
    // Index the image by workgroup (records are in workgroup order, as saved); the waves
    // themselves are decoded when their workgroup runs.
    st->restored_first = current_wg_;
    st->restored_count = img->workgroups;
    st->wg_first_wave.assign(img->workgroups + 1, static_cast<std::uint32_t>(img->offsets.size()));
    std::uint64_t prev = ~std::uint64_t{0};
    for (std::uint32_t i = 0; i < img->offsets.size(); ++i) {
      const std::uint32_t off = img->offsets[i];
      cwsr_wave_record_head h;
      if (off + sizeof h > img->records.size()) {
        fail(engine_fault::cwsr_restore_failed, cur_packet_view(), b_.cwsr.address, false, "control stack points past the saved records");
        return step::fault;
      }
      std::memcpy(&h, img->records.data() + off, sizeof h);
      if (h.magic != cwsr_wave_magic || h.workgroup < current_wg_ || h.workgroup - current_wg_ >= img->workgroups ||
          (prev != ~std::uint64_t{0} && h.workgroup < prev)) {
        fail(engine_fault::cwsr_restore_failed, cur_packet_view(), b_.cwsr.address, false,
             "wave record " + std::to_string(i) + " in the workgroup-state area is corrupt");
        return step::fault;
      }
      if (h.workgroup != prev) {
        for (std::uint64_t k = (prev == ~std::uint64_t{0} ? 0 : prev - current_wg_ + 1); k <= h.workgroup - current_wg_; ++k)
          st->wg_first_wave[k] = i;
        prev = h.workgroup;
      }
    }
    st->image = std::move(*img);
  }
  {
    std::lock_guard lock(mu_);
    preempted_ = false;
  }
  state_cv_.notify_all();
  return step::done;
}

}  // namespace aqueduct::emu
