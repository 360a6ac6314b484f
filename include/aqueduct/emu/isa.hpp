// aqueduct/emu/isa.hpp — runs real AMDGPU machine code on the emulated device: include this in
// one source file of a program that dispatches clang-built kernels on the emulator.
//
// Layer: emu. Including it installs the ISA interpreter (emu/isa/interpreter.hpp) for every
// generation it decodes — gfx11 (RDNA3: gfx1100–gfx1103, gfx1150/1151), gfx12 (RDNA4:
// gfx1200/gfx1201), gfx90a and gfx942 (CDNA2/3) — into the hook the workgroup executor calls
// (emu/isa/runner.hpp). Without it, the engines refuse machine
// code with a queue error naming this header, and no translation unit pays for compiling the
// interpreter: it is a few thousand lines of inline code that most runtime users never run.
// The installation happens during static initialisation of any translation unit that includes
// this header (`install_interpreters()` is idempotent and may also be called by hand first).
// Thread safety: see emu/isa/runner.hpp.
#pragma once

#include <aqueduct/arch/family.hpp>
#include <aqueduct/emu/isa/gfx11.hpp>
#include <aqueduct/emu/isa/gfx12.hpp>
#include <aqueduct/emu/isa/gfx9.hpp>
#include <aqueduct/emu/isa/interpreter.hpp>
#include <aqueduct/emu/isa/runner.hpp>

#include <memory>

namespace aqueduct::emu::isa {

inline constexpr target gfx11_target{arch::family::gfx11, "gfx11", &decode_gfx11, 1ull << 48, 2ull << 48, false, false, true, true, true};
inline constexpr target gfx12_target{arch::family::gfx12, "gfx12", &decode_gfx12, 1ull << 48, 2ull << 48, false, false, false, true, true};
// CDNA: gfx90a (MI200) and gfx942 (MI300): 16-bit results zero the high half, v_cmpx also
// writes its SGPR destination.
inline constexpr target gfx90a_target{arch::family::gfx90a, "gfx90a", &decode_gfx90a, 1ull << 48, 2ull << 48, true, true};
inline constexpr target gfx942_target{arch::family::gfx94x, "gfx942", &decode_gfx942, 1ull << 48, 2ull << 48, true, true};

template <const target& T>
std::unique_ptr<runner> make_interpreter(const vm_access& vm) {
  return std::make_unique<interpreter>(vm, T);
}

// Installs every generation's interpreter; returns true.
inline bool install_interpreters() noexcept {
  install_runner(arch::family::gfx11, &make_interpreter<gfx11_target>);
  install_runner(arch::family::gfx12, &make_interpreter<gfx12_target>);
  install_runner(arch::family::gfx90a, &make_interpreter<gfx90a_target>);
  install_runner(arch::family::gfx94x, &make_interpreter<gfx942_target>);
  return true;
}

namespace detail {
inline const bool interpreters_installed = install_interpreters();
}  // namespace detail

}  // namespace aqueduct::emu::isa
