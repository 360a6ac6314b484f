// aqueduct/emu/isa/gfx12.hpp — the gfx12 (RDNA4) decoder: instruction words → `insn`.
//
// Layer: emu. gfx12 shares gfx11's SOP*, VOP*, VOPD and DS encodings (emu/isa/gfx11.hpp
// `decode_rdna`) and changes SMEM (op [18:13], a 24-bit signed offset) and vector memory (96-bit
// VFLAT/VGLOBAL/VSCRATCH: saddr and op in dword 0, vdst/data/cache policy in dword 1, vaddr and
// a 24-bit signed offset in dword 2). Opcodes from emu/isa/gfx12_opcodes.hpp (generated from
// llvm-mc-19 -mcpu=gfx1201 by tests/emu/isa/oracle.py, which also checks this decoder).
// Thread safety: pure functions.
#pragma once

#include <aqueduct/emu/isa/gfx11.hpp>
#include <aqueduct/emu/isa/gfx12_opcodes.hpp>
#include <aqueduct/emu/isa/insn.hpp>

#include <cstdint>

namespace aqueduct::emu::isa {

[[nodiscard]] inline insn decode_gfx12(const std::uint32_t* w, unsigned avail) noexcept {
  return decode_rdna(w, avail, gfx12_opcodes, true);
}

}  // namespace aqueduct::emu::isa
