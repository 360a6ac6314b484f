// aqueduct/emu/detail/cwsr_preemptor.hpp — the one CWSR preemptor of the emulated device: takes a
// queue off the hardware through its CWSR area and brings it back, for AQL and PM4 queues alike.
//
// Layer: emu (detail, not API). An engine (emu/aql_processor.hpp, emu/pm4_processor.hpp) asks
// `due()` at its preemption points (between workgroups, between packets); when a preemption is
// due — on demand (request / resume) or by a stress knob (every N workgroups, on a timer) — it
// hands `preempt()` the dispatches it has in flight with the workgroups not yet run. The
// preemptor saves the resident ones (as many as the node holds: emu/cwsr.hpp's machine model) to
// the CWSR area, keeps the queue off the hardware (until resume(), or for the stress knob's
// time), reads the save back FROM THAT MEMORY and indexes it by (dispatch, workgroup), so the
// engine runs those workgroups from `restored()` — change a saved SGPR and the restored wave
// computes with it. A resident workgroup of a dispatch that hangs on preemption (the GFX11
// DEGFX11_12113 PM4 bug), a save that does not fit or a corrupt restore is an outcome the engine
// stops its queue with (a hang).
// Thread safety: request/resume/wait_preempted/stats/halt from any thread; due/note_workgroup/
// preempt/restored on the engine thread that serves preemption points (note_workgroup from any
// thread that runs workgroups).
#pragma once

#include <aqueduct/arch/cwsr.hpp>
#include <aqueduct/arch/family.hpp>
#include <aqueduct/core/result.hpp>
#include <aqueduct/emu/cwsr.hpp>
#include <aqueduct/emu/engine_error.hpp>
#include <aqueduct/emu/engine_ports.hpp>
#include <aqueduct/emu/wave_state.hpp>
#include <aqueduct/emu/workgroup_executor.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace aqueduct::emu {

// Stress knobs of an engine's preemption (both off by default): preempt every N workgroups run
// and/or on a timer; a stress preemption keeps the queue off the hardware for `off_for`.
struct preemption_options {
  std::uint64_t every_workgroups = 0;
  std::chrono::microseconds interval{0};
  std::chrono::microseconds off_for{0};
};

struct preemption_stats {
  std::uint64_t preemptions = 0;      // saves completed (each followed by a restore)
  std::uint64_t waves_saved = 0;      // summed over saves
  std::uint64_t max_ctl_bytes = 0;    // largest control stack used (header included)
  std::uint64_t max_state_bytes = 0;  // largest accounted workgroup state
};

namespace detail {

// One in-flight dispatch as a save sees it: its workgroups [first, end) have not run yet.
struct resident_dispatch {
  std::uint64_t key = 0;  // the engine's name for it (AQL packet index, PM4 dispatch count)
  const dispatch_plan* plan = nullptr;
  std::uint64_t first = 0, end = 0;
  unsigned waves_per_wg = 1;
  bool hangs_on_preemption = false;
};

class cwsr_preemptor {
 public:
  enum class outcome_kind : std::uint8_t { resumed, stopped, fault };
  struct outcome {
    outcome_kind what = outcome_kind::resumed;
    engine_fault fault = engine_fault::none;
    std::string why;
    std::uint64_t address = 0;
  };
  // How a workgroup's waves come back from a restore.
  enum class take_result : std::uint8_t { not_restored, restored, corrupt };

  cwsr_preemptor(const vm_access& vm, const cwsr_area& area, const arch::cwsr_inputs& node, arch::family family,
                 preemption_options opt)
      : vm_(&vm), area_(area), machine_(cwsr_machine_of(node)), packed_(packs_workitem_ids(family)), opt_(opt) {
    capacity_ = check_cwsr_capacity(area_, machine_);
    arm_timer();
  }
  cwsr_preemptor(const cwsr_preemptor&) = delete;
  cwsr_preemptor& operator=(const cwsr_preemptor&) = delete;

  // ---- any thread ---------------------------------------------------------------------------------
  // A preemption at the engine's next preemption point; the queue stays off until resume().
  // (The engine wakes its thread after calling this.)
  void request() noexcept {
    std::lock_guard lock(mu_);
    demand_ = true;
    demanded_.store(true, std::memory_order_release);
    resume_ = false;
  }
  void resume() noexcept {
    {
      std::lock_guard lock(mu_);
      demand_ = false;
      demanded_.store(false, std::memory_order_release);
      resume_ = true;
    }
    cv_.notify_all();
  }
  // True once the queue is saved and off the hardware; false on timeout or once halted.
  bool wait_preempted(std::chrono::milliseconds timeout) const {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return preempted_ || halted_; }) && preempted_;
  }
  // The engine stopped (a fault or stop()): nothing waits for a resume any more.
  void halt() noexcept {
    {
      std::lock_guard lock(mu_);
      halted_ = true;
    }
    cv_.notify_all();
  }
  [[nodiscard]] preemption_stats stats() const {
    std::lock_guard lock(mu_);
    return stats_;
  }
  // Whether the area can hold a save of the whole machine (checked at creation).
  [[nodiscard]] const result<void>& capacity() const noexcept { return capacity_; }
  [[nodiscard]] const cwsr_machine& machine() const noexcept { return machine_; }

  // ---- engine threads -----------------------------------------------------------------------------
  // Counted only for the every-N-workgroups knob (no atomic add per workgroup without it).
  void note_workgroup() noexcept {
    if (opt_.every_workgroups != 0) since_.fetch_add(1, std::memory_order_relaxed);
  }
  // A preemption is due: on demand, or a stress knob (every N workgroups counts only between
  // workgroups of a dispatch).
  [[nodiscard]] bool due(bool between_workgroups) {
    if (demanded_.load(std::memory_order_acquire)) return true;  // polled per packet: no lock
    if (opt_.every_workgroups != 0 && between_workgroups &&
        since_.load(std::memory_order_relaxed) >= opt_.every_workgroups)
      return true;
    return opt_.interval.count() != 0 &&
           std::chrono::steady_clock::now().time_since_epoch().count() >= next_timer_.load(std::memory_order_relaxed);
  }

  // Save the resident workgroups of `resident` (in running order), stay off, restore.
  outcome preempt(std::span<const resident_dispatch> resident) {
    bool demand;
    {
      std::lock_guard lock(mu_);
      demand = demand_;
    }
    since_.store(0, std::memory_order_relaxed);
    // ---- save: the next workgroups of each dispatch, until the machine is full
    std::vector<std::byte> records;
    std::vector<std::uint32_t> offsets;
    records.reserve(std::min<std::size_t>(image_.records.size() + (std::size_t{1} << 16), std::size_t{64} << 20));
    offsets.reserve(machine_.wave_capacity);
    std::uint32_t workgroups = 0;
    std::vector<std::pair<std::size_t, std::uint64_t>> saved_range;  // per resident dispatch: how many
    std::uint64_t waves_left = machine_.wave_capacity;
    for (std::size_t d = 0; d < resident.size(); ++d) {
      const resident_dispatch& rd = resident[d];
      std::uint64_t wg = rd.first;
      for (; wg < rd.end; ++wg) {
        if (waves_left < rd.waves_per_wg && workgroups != 0) break;  // full (the first always fits)
        if (rd.hangs_on_preemption)
          return {outcome_kind::fault, engine_fault::cwsr_hang_without_priv,
                  "preempted before workgroup " + std::to_string(wg) + " of " + std::to_string(rd.end), 0};
        if (!append_saved(rd, wg, records, offsets))
          return {outcome_kind::fault, engine_fault::cwsr_restore_failed,
                  "restored wave record of workgroup " + std::to_string(wg) + " is corrupt", area_.address};
        ++workgroups;
        waves_left -= std::min<std::uint64_t>(waves_left, rd.waves_per_wg);
      }
      saved_range.emplace_back(d, wg);
      if (wg < rd.end) break;
    }
    auto saved = cwsr_save(*vm_, area_, machine_, records, offsets, workgroups);
    if (!saved) return {outcome_kind::fault, engine_fault::cwsr_save_failed, std::string(saved.get_failure().detail()), area_.address};
    {
      std::lock_guard lock(mu_);
      preempted_ = true;
      ++stats_.preemptions;
      stats_.waves_saved += saved->waves;
      stats_.max_ctl_bytes = std::max(stats_.max_ctl_bytes, saved->ctl_bytes);
      stats_.max_state_bytes = std::max(stats_.max_state_bytes, saved->state_bytes);
    }
    cv_.notify_all();
    // ---- off the hardware until resumed
    {
      std::unique_lock lock(mu_);
      if (demand) {
        cv_.wait(lock, [&] { return halted_ || resume_; });
        resume_ = false;
      } else if (opt_.off_for.count() != 0) {
        cv_.wait_for(lock, opt_.off_for, [&] { return halted_; });
      }
      if (halted_) {
        preempted_ = false;
        return {outcome_kind::stopped, engine_fault::none, "", 0};
      }
    }
    // ---- restore, from the area's memory
    auto img = cwsr_restore(*vm_, area_, machine_);
    if (!img) return {outcome_kind::fault, engine_fault::cwsr_restore_failed, std::string(img.get_failure().detail()), area_.address};
    std::string why;
    if (!index(*img, resident, saved_range, why)) return {outcome_kind::fault, engine_fault::cwsr_restore_failed, why, area_.address};
    {
      std::lock_guard lock(mu_);
      preempted_ = false;
    }
    cv_.notify_all();
    // The timer counts the queue's time on the hardware: a save and restore slower than the
    // interval must not preempt it again before it ran at all.
    arm_timer();
    return {};
  }

  // The waves of workgroup `wg` of dispatch `key` as the last restore brought them back.
  take_result take(std::uint64_t key, std::uint64_t wg, std::vector<wave_state>& waves) const {
    auto it = index_.find({key, wg});
    if (it == index_.end()) return take_result::not_restored;
    const auto [w0, w1] = it->second;
    waves.resize(w1 - w0);
    for (std::uint32_t i = w0; i < w1; ++i) {
      const std::uint32_t off = image_.offsets[i];
      std::uint64_t d = 0, owner = 0;
      std::size_t used = 0;
      if (!read_wave_record(image_.records.data() + off, image_.records.size() - off, waves[i - w0], d, owner, used) ||
          d != key || owner != wg)
        return take_result::corrupt;
    }
    return take_result::restored;
  }

 private:
  // Appends workgroup `wg`'s records: as restored (still resident since the last restore), or
  // its fresh initial waves. False if a restored record is unreadable.
  bool append_saved(const resident_dispatch& rd, std::uint64_t wg, std::vector<std::byte>& records,
                    std::vector<std::uint32_t>& offsets) const {
    if (auto it = index_.find({rd.key, wg}); it != index_.end()) {  // copied as they are, not decoded
      for (std::uint32_t i = it->second.first; i < it->second.second; ++i) {
        const std::uint32_t off = image_.offsets[i];
        const std::size_t used = wave_record_size(image_.records.data() + off, image_.records.size() - off);
        if (used == 0) return false;
        offsets.push_back(static_cast<std::uint32_t>(records.size()));
        const std::size_t at = records.size();
        records.resize(at + used);
        std::memcpy(records.data() + at, image_.records.data() + off, used);
      }
      return true;
    }
    for (const wave_state& w : workgroup_executor(*vm_, 0).initial_waves(*rd.plan, wg)) {
      offsets.push_back(static_cast<std::uint32_t>(records.size()));
      append_wave_record(records, w, rd.key, wg, packed_);
    }
    return true;
  }

  // Indexes a restored image by (dispatch, workgroup): every record must belong to a workgroup
  // that was saved, in the order saved.
  bool index(cwsr_image& img, std::span<const resident_dispatch> resident,
             const std::vector<std::pair<std::size_t, std::uint64_t>>& saved_range, std::string& why) {
    std::map<std::pair<std::uint64_t, std::uint64_t>, std::pair<std::uint32_t, std::uint32_t>> idx;
    std::size_t d = 0;  // position in saved_range: records come in save order
    std::pair<std::uint64_t, std::uint64_t> prev{~0ull, ~0ull};
    for (std::uint32_t i = 0; i < img.offsets.size(); ++i) {
      const std::uint32_t off = img.offsets[i];
      cwsr_wave_record_head h;
      if (off + sizeof h > img.records.size()) {
        why = "control stack points past the saved records";
        return false;
      }
      std::memcpy(&h, img.records.data() + off, sizeof h);
      while (d < saved_range.size() && resident[saved_range[d].first].key != h.dispatch) ++d;
      const bool known = h.magic == cwsr_wave_magic && d < saved_range.size() &&
                         h.workgroup >= resident[saved_range[d].first].first && h.workgroup < saved_range[d].second;
      if (!known || (h.dispatch == prev.first && h.workgroup < prev.second)) {
        why = "wave record " + std::to_string(i) + " in the workgroup-state area is corrupt";
        return false;
      }
      auto [it, fresh] = idx.try_emplace({h.dispatch, h.workgroup}, i, i + 1);
      if (!fresh) {
        if (it->second.second != i) {
          why = "wave records of workgroup " + std::to_string(h.workgroup) + " are not contiguous";
          return false;
        }
        it->second.second = i + 1;
      }
      prev = {h.dispatch, h.workgroup};
    }
    image_ = std::move(img);
    index_ = std::move(idx);
    return true;
  }

  const vm_access* vm_;
  cwsr_area area_;
  cwsr_machine machine_;
  bool packed_;
  preemption_options opt_;
  result<void> capacity_ = ok();
  std::atomic<std::uint64_t> since_{0};
  // When the timer preemption is next due (steady_clock ticks): written by the engine thread,
  // read by every worker thread in due() — atomic (TSan found the plain time_point racing).
  std::atomic<std::chrono::steady_clock::rep> next_timer_{0};
  void arm_timer() noexcept {
    next_timer_.store((std::chrono::steady_clock::now() + opt_.interval).time_since_epoch().count(), std::memory_order_relaxed);
  }
  // The last restore (engine thread only).
  cwsr_image image_;
  std::map<std::pair<std::uint64_t, std::uint64_t>, std::pair<std::uint32_t, std::uint32_t>> index_;

  mutable std::mutex mu_;  // the flags and stats
  mutable std::condition_variable cv_;
  bool demand_ = false, resume_ = false, preempted_ = false, halted_ = false;
  std::atomic<bool> demanded_{false};  // = demand_, readable without mu_ (due())
  preemption_stats stats_{};
};

}  // namespace detail
}  // namespace aqueduct::emu
