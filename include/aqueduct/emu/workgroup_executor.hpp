// aqueduct/emu/workgroup_executor.hpp — runs one workgroup of a dispatch, for every packet engine.
//
// Layer: emu. The AQL processor (emu/aql_processor.hpp) and the PM4 MEC (emu/pm4_processor.hpp,
// emu/detail/pm4_dispatch.hpp)
// decode their dispatches differently — a packet and a kernel descriptor, or SH registers — but
// from then on a dispatch is the same thing: a `dispatch_plan` (descriptor, grid, the CP's
// inputs, LDS bytes, the code to run). A `workgroup_executor` builds a workgroup's initial waves
// (emu/wave_state.hpp) and runs them, turning what goes wrong into a `workgroup_fault` that the
// engine reports as its queue error.
//
// Scratch: waves that run at the same time must not share private memory. Each executor owns
// a "slot" (one per thread that runs workgroups: the processor thread is slot 0, worker i is
// slot i+1); its waves get private segment wave offsets from wave slot
// slot * max_waves_per_workgroup on, so two workgroups in flight on two threads never overlap
// (before this, every workgroup's wave 0 got offset 0 — issue 14).
// Thread safety: a plan is read-only while it runs; one executor per thread.
#pragma once

#include <aqueduct/abi/aql.hpp>
#include <aqueduct/abi/kernel_descriptor.hpp>
#include <aqueduct/arch/family.hpp>
#include <aqueduct/emu/engine_error.hpp>
#include <aqueduct/emu/host_kernel.hpp>
#include <aqueduct/emu/isa/runner.hpp>
#include <aqueduct/emu/wave_state.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace aqueduct::emu {

// Waves a workgroup can have at most (1024 work-items, AMDGPUUsage).
[[nodiscard]] constexpr unsigned max_waves_per_workgroup(unsigned wave_size) noexcept {
  return (1024 + wave_size - 1) / wave_size;
}

// One dispatch, as every engine sees it once decoded.
struct dispatch_plan {
  abi::kernel_descriptor kd{};        // the descriptor (PM4: synthesized from the registers)
  abi::kernel_dispatch_packet pkt{};  // grid and workgroup sizes, private_segment_size, kernarg
  dispatch_inputs inputs{};           // what the CP adds (dispatch/queue ptr, scratch, preload)
  arch::family family = arch::family::gfx11;
  std::uint32_t lds_bytes = 0;
  std::shared_ptr<const host_kernel_fn> fn;  // the host kernel to call once per workgroup, or null:
  std::uint64_t code_entry = 0;               // machine code at this GPU address (emu/isa/)
  std::uint64_t serial = next_serial();       // tells executors their decoded-code cache is stale
  // Wave-instructions the whole dispatch may execute (a spinning kernel ends with a fault): the
  // processor's `instruction_budget` option (aql_processor_options, pm4_processor_options).
  std::shared_ptr<std::atomic<std::int64_t>> budget = std::make_shared<std::atomic<std::int64_t>>(default_budget);
  // 2^30: 70-130 s of one core's time at the interpreter's measured 8-15 M wave-instructions per
  // second (docs/isa.md "Speed") — a spinning kernel ends in about the time amdgpu gives a compute
  // job before it resets the GPU (amdgpu.lockup_timeout: 60 s for compute).
  static constexpr std::int64_t default_budget = std::int64_t(1) << 30;
  // PM4: COMPUTE_USER_DATA_0..n-1 replace the user SGPRs the descriptor would give.
  std::array<std::uint32_t, 16> user_data{};
  unsigned user_data_count = 0;

  // The grid's workgroup count; false when it does not fit 64 bits (2^31 x 2^31 x 4 is 2^64).
  // Keeps the per-dimension counts and the first row's geometry for geometry() (the processors
  // call this once per dispatch).
  [[nodiscard]] bool try_total_workgroups(std::uint64_t& total) noexcept {
    wg_count_ = workgroup_counts(pkt);
    counted_ = sizes_of(pkt);
    row_ = geometry_at(pkt, wg_count_, 0);
    last_x_ = pkt.grid_size_x - (wg_count_[0] - 1) * pkt.workgroup_size_x;
    return total_workgroups(row_, total);
  }
  // The geometry of workgroup `wg`: while the packet's sizes are still the ones
  // try_total_workgroups counted, a first-row workgroup (every one of a 1-D grid) is the first
  // row's geometry with its x id (and the last one's partial x size): no division, no minimum;
  // any other is computed.
  [[nodiscard]] workgroup_geometry geometry(std::uint64_t wg) const noexcept {
    if (still_counted()) {
      if (wg < wg_count_[0]) {
        workgroup_geometry g = row_;
        g.id[0] = static_cast<std::uint32_t>(wg);
        if (wg + 1 == wg_count_[0]) g.size[0] = last_x_;
        return g;
      }
      return geometry_at(pkt, wg_count_, wg);
    }
    return geometry_of(pkt, wg);
  }
  [[nodiscard]] unsigned wave_size() const noexcept { return wave_size_of(kd, family); }
  // VGPRs a wave has: rsrc1.GRANULATED_WORKITEM_VGPR_COUNT in units of 8 (the largest granule,
  // so never fewer than the code was allocated).
  [[nodiscard]] unsigned vgprs() const noexcept { return std::min(256u, ((kd.compute_pgm_rsrc1 & 0x3Fu) + 1) * 8); }
  [[nodiscard]] static std::uint64_t next_serial() noexcept {
    static std::atomic<std::uint64_t> n{1};
    return n.fetch_add(1, std::memory_order_relaxed);
  }

 private:
  // The packet's bytes 4-23: workgroup sizes, reserved0, grid sizes (hsa.h's layout), as words.
  struct size_words {
    std::uint64_t a = 0, b = 0;
    std::uint32_t c = 0;
  };
  [[nodiscard]] static size_words sizes_of(const abi::kernel_dispatch_packet& p) noexcept {
    static_assert(offsetof(abi::kernel_dispatch_packet, workgroup_size_x) == 4 &&
                  offsetof(abi::kernel_dispatch_packet, grid_size_z) == 20);
    size_words w;
    const auto* bytes = reinterpret_cast<const unsigned char*>(&p);
    std::memcpy(&w.a, bytes + 4, 8);
    std::memcpy(&w.b, bytes + 12, 8);
    std::memcpy(&w.c, bytes + 20, 4);
    return w;
  }
  // counted_ == sizes_of(pkt): three words compared, no branch per field.
  [[nodiscard]] bool still_counted() const noexcept {
    const size_words w = sizes_of(pkt);
    return ((w.a ^ counted_.a) | (w.b ^ counted_.b) | (w.c ^ counted_.c)) == 0;
  }
  std::array<std::uint32_t, 3> wg_count_{};
  size_words counted_{};  // all 0: nothing counted (a packet's sizes never are)
  workgroup_geometry row_{};                 // workgroup 0's geometry (the first row's sizes)
  std::uint32_t last_x_ = 0;                 // x size of the row's last workgroup
};

// Families whose machine code this program can run: those whose interpreter <aqueduct/emu/isa.hpp>
// installed (emu/isa/runner.hpp).
[[nodiscard]] inline bool isa_supported(arch::family f) noexcept { return isa::runner_for(f) != nullptr; }

// What ended a workgroup early.
struct workgroup_fault {
  enum class kind : std::uint8_t { memory_violation, kernel_exception, shader_exception };
  kind what = kind::kernel_exception;
  std::uint64_t address = 0;
  std::string detail;
};

class workgroup_executor {
 public:
  // `slot` distinguishes executors that run at the same time (see the header comment).
  // Room for the largest workgroup's waves (1024 wave32 work-items) up front: building waves
  // never allocates, whichever workgroups this executor happens to run first.
  workgroup_executor(const vm_access& vm, unsigned slot) : vm_(&vm), slot_(slot) {
    waves_.reserve(max_waves_per_workgroup(32));
  }

  [[nodiscard]] unsigned slot() const noexcept { return slot_; }

  // The initial waves of workgroup `wg`, with this executor's scratch wave slots.
  [[nodiscard]] std::vector<wave_state> initial_waves(const dispatch_plan& plan, std::uint64_t wg) const {
    std::vector<wave_state> waves;
    initial_waves_into(waves, plan, plan.geometry(wg));
    return waves;
  }

  // Runs workgroup `wg` from fresh waves (built into a vector this executor keeps: no heap
  // allocation per workgroup once it has held the largest workgroup). A host kernel's waves are
  // built when it first reads them (workgroup_context::waves): one that never does, an empty
  // kernel, costs no build; machine code always has them.
  [[nodiscard]] std::optional<workgroup_fault> run(const dispatch_plan& plan, std::uint64_t wg) {
    const workgroup_geometry g = plan.geometry(wg);
    if (plan.fn) {
      pending_ = {&plan, &g};
      return run(plan, g, {}, wave_source{&build_pending, this});
    }
    try {
      build_waves(plan, g);
    } catch (const std::exception& ex) {
      return workgroup_fault{workgroup_fault::kind::kernel_exception, 0, ex.what()};
    }
    return run(plan, g, waves_);
  }

  // Runs workgroup `wg` from the given waves (fresh, or restored from a CWSR image).
  [[nodiscard]] std::optional<workgroup_fault> run(const dispatch_plan& plan, std::uint64_t wg,
                                                   std::span<const wave_state> waves) {
    return run(plan, plan.geometry(wg), waves);
  }

 private:
  // waves_ is written only here: when the last build had this footprint, the same fields are
  // rewritten in place (build_workgroup_waves_into's `overwrite`).
  void build_waves(const dispatch_plan& plan, const workgroup_geometry& g) {
    const wave_footprint f = footprint_of(plan.kd, plan.family, g, plan.user_data_count);
    const bool overwrite = waves_footprint_ && *waves_footprint_ == f;
    waves_footprint_.reset();  // a build that throws leaves nothing to overwrite
    initial_waves_into(waves_, plan, g, overwrite);
    waves_footprint_ = f;
  }
  // The workgroup a host kernel is running, for its first waves() (wave_source).
  struct pending_build {
    const dispatch_plan* plan = nullptr;
    const workgroup_geometry* g = nullptr;
  };
  static std::span<const wave_state> build_pending(void* self) {
    auto* ex = static_cast<workgroup_executor*>(self);
    ex->build_waves(*ex->pending_.plan, *ex->pending_.g);
    return ex->waves_;
  }

  // `lazy`: the waves are built on first use by it (a host kernel), else `waves` are the waves.
  [[nodiscard]] std::optional<workgroup_fault> run(const dispatch_plan& plan, const workgroup_geometry& g,
                                                   std::span<const wave_state> waves, wave_source lazy = {}) {
    try {
      if (plan.lds_bytes != 0 || !lds_.empty())
        lds_.assign(plan.lds_bytes, std::byte{0xA5});  // LDS starts undefined: never zero by luck
      const std::span<std::byte> lds(lds_.data(), plan.lds_bytes);
      workgroup_context ctx = lazy.build ? workgroup_context(*vm_, lazy, lds, g) : workgroup_context(*vm_, waves, lds, g);
      if (plan.fn) {
        (*plan.fn)(ctx);
      } else if (plan.code_entry != 0) {
        const isa::runner_factory make = isa::runner_for(plan.family);
        if (make == nullptr) return workgroup_fault{workgroup_fault::kind::kernel_exception, 0, isa::no_runner_reason(plan.family)};
        if (!isa_ || isa_family_ != plan.family) {
          isa_ = make(*vm_);
          isa_family_ = plan.family;
        } else if (isa_serial_ != plan.serial) {
          isa_->reset();  // another dispatch: the code at an address may differ
        }
        isa_serial_ = plan.serial;
        isa::run_params rp;
        rp.entry = plan.code_entry;
        rp.vgprs = plan.vgprs();
        rp.private_bytes = plan.pkt.private_segment_size;
        rp.scratch_base = plan.inputs.scratch_base;
        rp.scratch_bytes = plan.inputs.scratch_bytes;
        rp.rsrc1 = plan.kd.compute_pgm_rsrc1;
        isa_->run(rp, waves, std::span<std::byte>(lds_.data(), plan.lds_bytes), *plan.budget);
      } else {
        return workgroup_fault{workgroup_fault::kind::kernel_exception, 0, "no code to run"};
      }
    } catch (const memory_fault& m) {
      char why[160];
      std::snprintf(why, sizeof why, "%s of %llu bytes in workgroup (%u,%u,%u)%s", m.write ? "write" : "read",
                    static_cast<unsigned long long>(m.length), g.id[0], g.id[1], g.id[2], isa_pc());
      return workgroup_fault{workgroup_fault::kind::memory_violation, m.address, why};
    } catch (const isa::isa_fault& f) {
      char where[64];
      std::snprintf(where, sizeof where, " in workgroup (%u,%u,%u)", g.id[0], g.id[1], g.id[2]);
      return workgroup_fault{workgroup_fault::kind::shader_exception, f.pc, f.what + where};
    } catch (const std::exception& ex) {
      return workgroup_fault{workgroup_fault::kind::kernel_exception, 0, ex.what()};
    } catch (...) {
      return workgroup_fault{workgroup_fault::kind::kernel_exception, 0, "unknown exception"};
    }
    return std::nullopt;
  }

  // " at pc 0x..." of the instruction that faulted, when machine code was running.
  const char* isa_pc() {
    pcbuf_[0] = 0;
    if (isa_ && isa_->faulting_pc() != 0)
      std::snprintf(pcbuf_, sizeof pcbuf_, " at pc 0x%llx", static_cast<unsigned long long>(isa_->faulting_pc()));
    return pcbuf_;
  }

  void initial_waves_into(std::vector<wave_state>& waves, const dispatch_plan& plan, const workgroup_geometry& g,
                          bool overwrite = false) const {
    const unsigned first_slot = slot_ * max_waves_per_workgroup(plan.wave_size());
    build_workgroup_waves_into(waves, plan.kd, plan.pkt, plan.inputs, plan.family, g, first_slot, overwrite);
    for (auto& w : waves)
      for (unsigned i = 0; i < plan.user_data_count; ++i) w.sgpr[i] = plan.user_data[i];
  }

  const vm_access* vm_;
  unsigned slot_;
  std::vector<wave_state> waves_;  // the workgroup being run (reused)
  std::optional<wave_footprint> waves_footprint_;  // what built waves_ last (none: rebuild from zero)
  pending_build pending_;
  std::vector<std::byte> lds_;
  std::unique_ptr<isa::runner> isa_;
  arch::family isa_family_ = arch::family::gfx11;
  std::uint64_t isa_serial_ = 0;
  char pcbuf_[40] = {};
};

// The engine fault a workgroup fault stops its queue with (every engine reports them alike).
[[nodiscard]] constexpr engine_fault engine_fault_of(workgroup_fault::kind k) noexcept {
  switch (k) {
    case workgroup_fault::kind::memory_violation: return engine_fault::memory_violation;
    case workgroup_fault::kind::shader_exception: return engine_fault::shader_exception;
    case workgroup_fault::kind::kernel_exception: break;
  }
  return engine_fault::host_kernel_exception;
}

}  // namespace aqueduct::emu
