// aqueduct/emu/detail/sh_registers.hpp — the SH register file of an emulated MEC, read by name.
//
// Layer: emu (detail, not API). SET_SH_REG writes consecutive registers of the SH window
// (absolute dword addresses 0x2C00..0x2FFF, spec/packets.md §1.2); a dispatch then reads the
// compute registers BY NAME, from arch/ (`arch::compute_regs`: COMPUTE_PGM_LO, _RSRC1/2,
// NUM_THREAD_X/Y/Z, USER_DATA_0..15 …), never by a hex literal: `regs.get<R::compute_pgm_rsrc2>()`
// checks at compile time that the name is in the window.
// Thread safety: a plain value; the MEC's thread owns it (copies are snapshots for tests).
#pragma once

#include <aqueduct/arch/family.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

namespace aqueduct::emu::detail {

class sh_register_file {
 public:
  using names = arch::compute_regs;
  static constexpr std::uint32_t base = arch::sh_reg_base;
  static constexpr std::uint32_t size = arch::sh_reg_end - arch::sh_reg_base;  // 0x400 dwords

  // Whether `count` registers from window offset `offset` (SET_SH_REG dw1) stay in the window.
  [[nodiscard]] static constexpr bool fits(std::uint32_t offset, std::size_t count) noexcept {
    return offset <= size && count <= size - offset;
  }
  // SET_SH_REG: `values` into the registers from window offset `offset`. Precondition: fits().
  void write(std::uint32_t offset, std::span<const std::uint32_t> values) noexcept {
    for (std::size_t i = 0; i < values.size(); ++i) r_[offset + i] = values[i];
  }

  // A register by its name in arch/: get<names::compute_pgm_rsrc1>().
  template <std::uint32_t Abs>
  [[nodiscard]] std::uint32_t get() const noexcept {
    static_assert(Abs >= base && Abs < base + size, "not a register of the SH window");
    return r_[Abs - base];
  }
  // COMPUTE_USER_DATA_i, i < 16.
  [[nodiscard]] std::uint32_t user_data(unsigned i) const noexcept {
    return i < names::user_data_count ? r_[names::compute_user_data(i) - base] : 0;
  }
  // Any register by absolute dword address, 0 outside the window (diagnostics, tests).
  [[nodiscard]] std::uint32_t at(std::uint32_t abs) const noexcept {
    return abs >= base && abs - base < size ? r_[abs - base] : 0;
  }

 private:
  std::array<std::uint32_t, size> r_{};
};

}  // namespace aqueduct::emu::detail
