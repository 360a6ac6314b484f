// aqueduct/emu/isa/gfx11_interpreter.hpp — runs the waves of one workgroup on gfx11 machine code.
//
// Layer: emu (included by emu/workgroup_executor.hpp only). A workgroup's waves start from the
// state the CP gives them (emu/wave_state.hpp: SGPRs and v0 from the descriptor and dispatch),
// and run together: round-robin, each until it ends or reaches s_barrier, so a barrier works
// any number of times. LDS is the workgroup's; every scalar and vector memory access goes
// through the emulated GPU VM and a bad address faults with the address and the PC. Traps,
// illegal and unsupported instructions, and an exhausted instruction budget end the
// workgroup with an `isa_fault` naming the instruction and PC.
// Not modelled: timing, hazards (s_delay_alu, s_waitcnt are no-ops: every access completes at
// once, a memory model stronger than the hardware's), denormal/round modes (host defaults:
// IEEE, denormals kept), the ~1 ULP error of v_rcp/v_sqrt (the host's exact result is used).
// Thread safety: one interpreter per thread; the decoded-instruction cache is its own.
#pragma once

#include <aqueduct/emu/host_kernel.hpp>
#include <aqueduct/emu/isa/gfx11_decode.hpp>
#include <aqueduct/emu/wave_state.hpp>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace aqueduct::emu::isa {

// Ends a workgroup: a trap, an illegal or unsupported instruction, or the budget.
struct isa_fault {
  std::uint64_t pc;
  std::string what;
};

struct wave {
  std::uint32_t s[128] = {};  // SGPRs 0..105, VCC 106/107, TTMP 108..123, NULL, M0, EXEC 126/127
  std::uint32_t* v = nullptr;  // VGPRs: v[reg * 64 + lane]
  std::uint64_t pc = 0;
  bool scc = false, done = false, at_barrier = false;
  unsigned lanes = 32;
  [[nodiscard]] std::uint64_t exec() const noexcept {
    return lanes == 64 ? (std::uint64_t(s[127]) << 32 | s[126]) : s[126];
  }
  [[nodiscard]] std::uint64_t vcc() const noexcept {
    return lanes == 64 ? (std::uint64_t(s[107]) << 32 | s[106]) : s[106];
  }
  void set_mask(unsigned reg, std::uint64_t m) noexcept {
    s[reg] = static_cast<std::uint32_t>(m);
    if (lanes == 64) s[reg + 1] = static_cast<std::uint32_t>(m >> 32);
  }
  [[nodiscard]] std::uint64_t mask(unsigned reg) const noexcept {
    return lanes == 64 ? (std::uint64_t(s[reg + 1]) << 32 | s[reg]) : s[reg];
  }
};

class gfx11_interpreter {
 public:
  explicit gfx11_interpreter(const vm_access& vm) noexcept : vm_(&vm) {}

  // Runs one workgroup to completion. `budget` counts wave-instructions left for the dispatch
  // (shared by its workgroups); isa_fault when it runs out. Throws memory_fault / isa_fault.
  void run(std::uint64_t entry, std::span<const wave_state> init, std::span<std::byte> lds, unsigned vgprs,
           std::atomic<std::int64_t>& budget) {
    lds_ = lds;
    const std::size_t n = init.size();
    waves_.resize(n);
    vregs_.resize(n * std::size_t(vgprs) * 64);
    for (std::size_t i = 0; i < n; ++i) {
      wave& w = waves_[i];
      w = wave{};
      w.v = vregs_.data() + i * std::size_t(vgprs) * 64;
      w.lanes = init[i].wave_size;
      std::memcpy(w.s, init[i].sgpr.data(), sizeof(std::uint32_t) * max_wave_sgprs);
      for (unsigned t = 0; t < 16; ++t) w.s[108 + t] = init[i].ttmp[t];
      w.set_mask(op_exec_lo, init[i].exec);
      w.pc = entry;
      for (unsigned l = 0; l < 64; ++l) {
        w.v[0 * 64 + l] = init[i].v0[l];
        if (vgprs > 2) w.v[1 * 64 + l] = init[i].v1[l], w.v[2 * 64 + l] = init[i].v2[l];
      }
    }
    vgprs_ = vgprs;
    current_pc_ = 0;
    for (;;) {
      bool any_running = false, all_waiting = true;
      for (wave& w : waves_) {
        if (w.done) continue;
        any_running = true;
        if (w.at_barrier) continue;
        all_waiting = false;
        const std::int64_t ran = run_wave(w, 4096);
        if (budget.fetch_sub(ran, std::memory_order_relaxed) - ran < 0)
          throw isa_fault{w.pc, "instruction budget exhausted (a spinning or very long kernel)"};
      }
      if (!any_running) return;
      if (all_waiting)  // every live wave is at the barrier: release them
        for (wave& w : waves_) w.at_barrier = false;
    }
  }

  [[nodiscard]] std::uint64_t instructions() const noexcept { return executed_; }
  // PC of the instruction being executed when run() last threw (0 if none).
  [[nodiscard]] std::uint64_t faulting_pc() const noexcept { return current_pc_; }

 private:
  // ------------------------------------------------------------------ decoding cache
  const insn& fetch(std::uint64_t pc) {
    auto it = cache_.find(pc);
    if (it != cache_.end()) return it->second;
    std::uint32_t w[3] = {};
    unsigned avail = 0;
    for (; avail < 3; ++avail) {
      if (!vm_->is_mapped(pc + 4ull * avail, 4)) break;
      std::memcpy(&w[avail], vm_->host_address(pc + 4ull * avail), 4);
    }
    if (avail == 0) throw memory_fault{pc, 4, false};
    return cache_.emplace(pc, decode_gfx11(w, avail)).first->second;
  }

  [[noreturn]] static void unsupported(const wave& w, const insn& d, const char* why = "unsupported instruction") {
    char b[160];
    std::snprintf(b, sizeof b, "%s: %s opcode %u at pc 0x%llx", why, enc_name(d.e), d.op,
                  static_cast<unsigned long long>(w.pc));
    throw isa_fault{w.pc, b};
  }

  // ------------------------------------------------------------------ operands
  static std::uint32_t inline_const(unsigned s) noexcept {
    if (s >= 128 && s <= 192) return s - 128;
    if (s >= 193 && s <= 208) return static_cast<std::uint32_t>(192 - static_cast<int>(s));
    switch (s) {
      case 240: return 0x3F000000u;  // 0.5
      case 241: return 0xBF000000u;
      case 242: return 0x3F800000u;  // 1.0
      case 243: return 0xBF800000u;
      case 244: return 0x40000000u;  // 2.0
      case 245: return 0xC0000000u;
      case 246: return 0x40800000u;  // 4.0
      case 247: return 0xC0800000u;
      case 248: return 0x3E22F983u;  // 1/(2*pi)
      default: return 0;
    }
  }
  // Scalar operand (also a uniform vector source when not a VGPR).
  std::uint32_t sget(const wave& w, const insn& d, unsigned s) const {
    if (s < 128) return s == op_null ? 0u : w.s[s];
    if (s == op_literal) return d.literal;
    if (s == op_scc) return w.scc ? 1u : 0u;
    if (s == 251) return w.vcc() == 0;
    if (s == 252) return w.exec() == 0;
    return inline_const(s);
  }
  std::uint64_t sget64(const wave& w, const insn& d, unsigned s) const {
    if (s < 128) return s == op_null ? 0ull : (std::uint64_t(w.s[s + 1]) << 32 | w.s[s]);
    if (s >= 193 && s <= 208) return static_cast<std::uint64_t>(static_cast<std::int64_t>(192 - static_cast<int>(s)));
    return sget(w, d, s);  // zero-extended literal / non-negative inline constant
  }
  std::uint32_t vget(const wave& w, const insn& d, unsigned s, unsigned lane) const {
    return s >= op_vgpr0 ? w.v[(s - op_vgpr0) * 64 + lane] : sget(w, d, s);
  }
  std::uint64_t vget64(const wave& w, const insn& d, unsigned s, unsigned lane) const {
    if (s >= op_vgpr0) return std::uint64_t(w.v[(s - op_vgpr0 + 1) * 64 + lane]) << 32 | w.v[(s - op_vgpr0) * 64 + lane];
    return sget64(w, d, s);
  }
  void sset(wave& w, unsigned r, std::uint32_t v) const { if (r != op_null) w.s[r] = v; }
  void sset64(wave& w, unsigned r, std::uint64_t v) const {
    if (r == op_null) return;
    w.s[r] = static_cast<std::uint32_t>(v);
    w.s[r + 1] = static_cast<std::uint32_t>(v >> 32);
  }
  std::uint32_t& vr(wave& w, unsigned reg, unsigned lane) const {
    if (reg >= vgprs_) throw isa_fault{w.pc, "VGPR v" + std::to_string(reg) + " beyond the descriptor's VGPR count"};
    return w.v[reg * 64 + lane];
  }

  static float f(std::uint32_t x) noexcept { return std::bit_cast<float>(x); }
  static std::uint32_t u(float x) noexcept { return std::bit_cast<std::uint32_t>(x); }
  // VOP3 float source with abs/neg modifiers.
  float fsrc(const wave& w, const insn& d, unsigned i, unsigned lane) const {
    float x = f(vget(w, d, d.src[i], lane));
    if (d.e == enc::vop3) {
      if ((d.abs >> i) & 1) x = std::fabs(x);
      if ((d.neg >> i) & 1) x = -x;
    }
    return x;
  }

  // ------------------------------------------------------------------ memory
  template <class T>
  T* mem(const wave& w, std::uint64_t va, std::size_t len, bool write) const {
    if (va == 0 || !vm_->is_mapped(va, len)) throw memory_fault{va, len, write};
    (void)w;
    return static_cast<T*>(vm_->host_address(va));
  }
  std::byte* lds_at(const wave& w, std::uint32_t addr, std::size_t len, bool write) const {
    if (std::uint64_t(addr) + len > lds_.size()) {
      char b[128];
      std::snprintf(b, sizeof b, "LDS %s of %zu bytes at 0x%x beyond the workgroup's %zu bytes at pc 0x%llx",
                    write ? "write" : "read", len, addr, lds_.size(), static_cast<unsigned long long>(w.pc));
      throw isa_fault{w.pc, b};
    }
    return lds_.data() + addr;
  }

  std::int64_t run_wave(wave& w, std::int64_t max_steps);
  void exec_sop1(wave& w, const insn& d);
  void exec_sop2(wave& w, const insn& d);
  void exec_sopc(wave& w, const insn& d);
  void exec_sopk(wave& w, const insn& d);
  bool exec_sopp(wave& w, const insn& d);  // true: pc already set
  void exec_smem(wave& w, const insn& d);
  void exec_valu(wave& w, const insn& d);
  void exec_vopd(wave& w, const insn& d);
  void exec_flat(wave& w, const insn& d);
  void exec_ds(wave& w, const insn& d);

  const vm_access* vm_;
  std::span<std::byte> lds_;
  std::vector<wave> waves_;
  std::vector<std::uint32_t> vregs_;
  unsigned vgprs_ = 0;
  std::uint64_t executed_ = 0;
  std::uint64_t current_pc_ = 0;
  std::unordered_map<std::uint64_t, insn> cache_;
};

}  // namespace aqueduct::emu::isa

#include <aqueduct/emu/isa/gfx11_scalar.hpp>
#include <aqueduct/emu/isa/gfx11_vector.hpp>
