// aqueduct/emu/isa/runner.hpp — the type-erased hook between the workgroup executor and the
// ISA interpreter.
//
// Layer: emu. The executor (emu/workgroup_executor.hpp) includes only this header: it asks the
// registry for a runner of the dispatch's family and calls `run`. The interpreter itself
// (emu/isa/interpreter.hpp, ~2,000 lines with its decoders) is compiled only where a program
// includes <aqueduct/emu/isa.hpp>, which registers one factory per generation it supports
// (gfx11, gfx12; gfx9/CDNA plug in the same way). A program that never includes it pays
// nothing for the interpreter, and its engines refuse machine code with a queue error that
// says which header to include.
// Thread safety: the registry is written during static initialisation (or by `install_runner`
// before queues run machine code) and read by engine threads with acquire loads.
#pragma once

#include <aqueduct/arch/family.hpp>
#include <aqueduct/emu/host_kernel.hpp>
#include <aqueduct/emu/wave_state.hpp>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

namespace aqueduct::emu::isa {

// Ends a workgroup: a trap, an illegal or unsupported instruction, a bad register, the budget.
struct isa_fault {
  std::uint64_t pc;
  std::string what;
};

// What a runner needs besides the waves: the dispatch-wide facts of the code it runs.
struct run_params {
  std::uint64_t entry = 0;        // GPU address of the first instruction
  unsigned vgprs = 0;             // VGPRs per wave (from rsrc1)
  std::uint32_t private_bytes = 0;  // per work-item private segment size (scratch)
  std::uint64_t scratch_base = 0;   // GPU address of the queue's scratch (0: none)
  std::uint64_t scratch_bytes = 0;  // its size (0: not checked)
  std::uint32_t rsrc1 = 0;          // float modes (denormals, IEEE, DX10 clamp)
};

// Runs the waves of one workgroup of machine code to completion. One per executor (thread);
// it may cache decoded instructions until `reset` tells it the code changed.
class runner {
 public:
  virtual ~runner() = default;
  // Throws memory_fault (address, length) or isa_fault (PC, what). `budget` counts
  // wave-instructions left for the whole dispatch; running out is an isa_fault.
  virtual void run(const run_params& p, std::span<const wave_state> waves, std::span<std::byte> lds,
                   std::atomic<std::int64_t>& budget) = 0;
  // Forget decoded instructions (a new dispatch: the code at an address may differ).
  virtual void reset() noexcept = 0;
  // PC of the instruction that was executing when run() last threw (0 if none).
  [[nodiscard]] virtual std::uint64_t faulting_pc() const noexcept = 0;
  // Wave-instructions executed so far by this runner.
  [[nodiscard]] virtual std::uint64_t instructions() const noexcept = 0;
};

using runner_factory = std::unique_ptr<runner> (*)(const vm_access&);

namespace detail {
inline std::array<std::atomic<runner_factory>, std::size(arch::all_families)>& runner_factories() noexcept {
  static std::array<std::atomic<runner_factory>, std::size(arch::all_families)> f{};
  return f;
}
}  // namespace detail

// Registers the interpreter for a family (emu/isa.hpp does it for every supported family).
inline bool install_runner(arch::family fam, runner_factory f) noexcept {
  detail::runner_factories()[static_cast<std::size_t>(fam)].store(f, std::memory_order_release);
  return true;
}

// The factory for a family, or null when no interpreter for it is in the program.
[[nodiscard]] inline runner_factory runner_for(arch::family fam) noexcept {
  return detail::runner_factories()[static_cast<std::size_t>(fam)].load(std::memory_order_acquire);
}

// Why machine code of `fam` cannot run here (for the engines' queue errors).
[[nodiscard]] inline std::string no_runner_reason(arch::family fam) {
  return "no ISA interpreter for " + std::string(arch::family_name(fam)) +
         " machine code in this program: #include <aqueduct/emu/isa.hpp> in one source file of the program "
         "(it installs the interpreters of every generation docs/isa.md lists)";
}

}  // namespace aqueduct::emu::isa
