// aqueduct/emu/isa/wave.hpp — one wave's architectural state, the same for every generation.
//
// Layer: emu. Scalar registers in the canonical numbering of emu/isa/insn.hpp (SGPRs, VCC,
// TTMP, M0, EXEC in one array), VGPRs as columns of 64 lanes (`v[reg * 64 + lane]`, a wave32
// uses lanes 0..31), SCC, the PC and the scheduling flags. Wave32 masks (EXEC, VCC, compare
// results) are one SGPR, wave64 masks a pair.
// Thread safety: a wave belongs to the interpreter running its workgroup.
#pragma once

#include <aqueduct/emu/isa/insn.hpp>

#include <cstdint>

namespace aqueduct::emu::isa {

struct wave {
  std::uint32_t s[128] = {};   // canonical operands 0..127 (NULL at 124 is never written)
  std::uint32_t* v = nullptr;  // VGPRs: v[reg * 64 + lane]
  std::uint64_t pc = 0;
  std::uint64_t scratch = 0;   // GPU address of this wave's private memory (0: none)
  unsigned lanes = 32;
  unsigned index = 0;          // within the workgroup
  unsigned barrier_signals = 0;  // workgroup barriers this wave has signalled (s_barrier, s_barrier_signal)
  bool scc = false, done = false;
  bool at_barrier = false;       // waiting until every live wave has signalled as often as this one

  [[nodiscard]] std::uint64_t lane_mask() const noexcept { return lanes == 64 ? ~0ull : 0xFFFFFFFFull; }
  [[nodiscard]] std::uint64_t mask(unsigned reg) const noexcept {
    return lanes == 64 ? (std::uint64_t(s[reg + 1]) << 32 | s[reg]) : s[reg];
  }
  void set_mask(unsigned reg, std::uint64_t m) noexcept {
    if (reg == op_null) return;
    s[reg] = static_cast<std::uint32_t>(m);
    if (lanes == 64) s[reg + 1] = static_cast<std::uint32_t>(m >> 32);
  }
  [[nodiscard]] std::uint64_t exec() const noexcept { return mask(op_exec_lo); }
  [[nodiscard]] std::uint64_t vcc() const noexcept { return mask(op_vcc_lo); }
};

}  // namespace aqueduct::emu::isa
