// aqueduct/emu/isa/interpreter.hpp — runs the waves of one workgroup of machine code, for every
// generation.
//
// Layer: emu (included by emu/isa.hpp; the engines reach it only through emu/isa/runner.hpp).
// The interpreter is generation-neutral: a `target` supplies the decoder (instruction words →
// `insn` with a generation-neutral `op`, emu/isa/insn.hpp) and the few facts where the
// generations' semantics differ; everything else — the wave model (emu/isa/wave.hpp), operand
// reads in the canonical numbering, the ALU semantics (emu/isa/exec_scalar.hpp,
// exec_vector.hpp), memory through the emulated GPU VM (emu/isa/exec_memory.hpp) — is shared.
// A workgroup's waves start from the state the CP gives them (emu/wave_state.hpp) and run
// together: round-robin, each until it ends or reaches a barrier, so barriers work any number
// of times. Every memory access is checked against the VM: a bad address faults with the
// address and the PC. Traps, illegal and unsupported instructions (named), and an exhausted
// instruction budget end the workgroup with an isa_fault.
// Not modelled: timing, hazards (s_delay_alu, s_waitcnt are no-ops: every access completes at
// once, a memory model stronger than the hardware's), round modes other than nearest-even,
// denormal flushing (host IEEE behaviour: denormals kept), the ~1 ULP error of
// v_rcp/v_rsq/v_sqrt (the host's correctly rounded result is used). See docs/isa.md.
// Thread safety: one interpreter per thread; the decoded-instruction cache is its own.
#pragma once

#include <aqueduct/arch/family.hpp>
#include <aqueduct/emu/host_kernel.hpp>
#include <aqueduct/emu/isa/insn.hpp>
#include <aqueduct/emu/isa/runner.hpp>
#include <aqueduct/emu/isa/wave.hpp>
#include <aqueduct/emu/wave_state.hpp>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace aqueduct::emu::isa {

namespace detail {
// Calls f(lane) for every set bit of `ex`, lowest first.
template <class F>
inline void each_lane(std::uint64_t ex, F&& f) {
  for (; ex; ex &= ex - 1) f(static_cast<unsigned>(std::countr_zero(ex)));
}
inline float f32(std::uint32_t x) noexcept { return std::bit_cast<float>(x); }
inline std::uint32_t u32(float x) noexcept { return std::bit_cast<std::uint32_t>(x); }
inline double f64(std::uint64_t x) noexcept { return std::bit_cast<double>(x); }
inline std::uint64_t u64(double x) noexcept { return std::bit_cast<std::uint64_t>(x); }
inline std::uint32_t brev32(std::uint32_t x) noexcept {
  x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
  x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
  x = ((x >> 4) & 0x0F0F0F0Fu) | ((x & 0x0F0F0F0Fu) << 4);
  x = ((x >> 8) & 0x00FF00FFu) | ((x & 0x00FF00FFu) << 8);
  return (x >> 16) | (x << 16);
}
// Count of leading bits equal to the sign bit, minus... : -1 when all bits equal (ISA "cls").
inline std::uint32_t cls32(std::uint32_t x) noexcept {
  const std::uint32_t y = (x >> 31) ? ~x : x;
  return y == 0 ? 0xFFFFFFFFu : static_cast<std::uint32_t>(std::countl_zero(y));
}
// Data size in bytes of a vector memory operation (loads, stores, atomics), 0 if not one.
constexpr unsigned vmem_bytes(op o) noexcept {
  switch (o) {
    case op::global_load_u8: case op::global_load_i8: case op::global_store_b8: return 1;
    case op::global_load_u16: case op::global_load_i16: case op::global_store_b16: return 2;
    case op::global_load_b32: case op::global_store_b32: return 4;
    case op::global_load_b64: case op::global_store_b64: return 8;
    case op::global_load_b96: case op::global_store_b96: return 12;
    case op::global_load_b128: case op::global_store_b128: return 16;
    default: return 0;
  }
}
constexpr bool vmem_is_store(op o) noexcept { return o >= op::global_store_b8 && o <= op::global_store_b128; }
}  // namespace detail

// A generation: its decoder and the facts where shared semantics differ.
struct target {
  arch::family family;
  const char* name;  // "gfx11"
  insn (*decode)(const std::uint32_t* words, unsigned avail) noexcept;
  // Flat apertures (kfd_flat_memory.c, gfx9+ layout; emu/detail/device_state.hpp reports the same).
  std::uint64_t shared_base = 1ull << 48, private_base = 2ull << 48;
  // A 16-bit VALU result zeroes the other half of its register (gfx9/CDNA) instead of keeping
  // it (RDNA); RDNA's 32-bit encodings also address high halves as VGPR 128+n ("true16").
  bool zero_hi16 = false;
  // gfx9: v_cmpx writes its SGPR destination (VCC in the 32-bit form) as well as EXEC; gfx10+
  // write EXEC only (LLVM VOPCInstructions.td: the gfx10+ v_cmpx have no sdst).
  bool cmpx_writes_sdst = false;
  // gfx11: ds_permute_b32 / ds_bpermute_b32 address lanes modulo 32 within each half of a wave64
  // (RDNA3 guide: "MOD 32 regardless of wave size"; Mesa's ACO emulates cross-half bpermute for
  // gfx10/gfx11 wave64); gfx9 and gfx12 address the whole wave.
  bool permute_lanes32 = false;
  // The buffer resource (V#) layout and range checking: gfx10+ (gfx11, gfx12: SWIZZLE_ENABLE in
  // word 1 [31:30], OOB_SELECT in word 3 [29:28]) rather than gfx9's (emu/isa/exec_buffer.hpp).
  bool vsharp_gfx10 = false;
  // DPP controls of gfx10+ (row_share, row_xmask, fetch-inactive) instead of gfx9's (wave
  // shifts, row_bcast) (emu/isa/exec_dpp.hpp).
  bool dpp_gfx10 = false;
};

class interpreter final : public runner {
 public:
  interpreter(const vm_access& vm, const target& t) noexcept : vm_(&vm), t_(&t) {}

  void run(const run_params& p, std::span<const wave_state> init, std::span<std::byte> lds,
           std::atomic<std::int64_t>& budget) override {
    lds_ = lds;
    params_ = p;
    vgprs_ = p.vgprs;
    const std::size_t n = init.size();
    waves_.resize(n);
    vregs_.assign(n * std::size_t(vgprs_ + sdwa_spare_vgprs) * 64, 0u);
    for (std::size_t i = 0; i < n; ++i) {
      wave& w = waves_[i];
      w = wave{};
      w.v = vregs_.data() + i * std::size_t(vgprs_ + sdwa_spare_vgprs) * 64;
      w.lanes = init[i].wave_size;
      w.index = static_cast<unsigned>(i);
      std::memcpy(w.s, init[i].sgpr.data(), sizeof(std::uint32_t) * max_wave_sgprs);
      for (unsigned t = 0; t < 16; ++t) w.s[op_ttmp0 + t] = init[i].ttmp[t];
      w.set_mask(op_exec_lo, init[i].exec);
      w.pc = p.entry;
      // Architected flat scratch: this wave's private memory (its slot in the queue's scratch).
      if (p.scratch_base != 0 && p.private_bytes != 0)
        w.scratch = p.scratch_base + std::uint64_t(init[i].scratch_wave_offset);
      for (unsigned l = 0; l < 64 && vgprs_ > 0; ++l) {
        w.v[0 * 64 + l] = init[i].v0[l];
        if (vgprs_ > 2) w.v[1 * 64 + l] = init[i].v1[l], w.v[2 * 64 + l] = init[i].v2[l];
      }
    }
    current_pc_ = 0;
    // Round-robin; a wave waiting at a barrier resumes once every live wave has signalled it
    // (waves that ended count as signalled, as the hardware drops them from the barrier).
    for (;;) {
      bool any_running = false, progressed = false;
      for (wave& w : waves_) {
        if (w.done) continue;
        any_running = true;
        if (w.at_barrier) {
          if (!barrier_complete(w)) continue;
          w.at_barrier = false;
        }
        progressed = true;
        const std::int64_t ran = run_wave(w, 4096);
        if (budget.fetch_sub(ran, std::memory_order_relaxed) - ran < 0) {
          char b[200];
          std::snprintf(b, sizeof b,
                        "instruction budget exhausted at pc 0x%llx (a spinning or very long kernel; the emulator's "
                        "aql/pm4 processor option instruction_budget sets it)",
                        static_cast<unsigned long long>(w.pc));
          throw isa_fault{w.pc, b};
        }
      }
      if (!any_running) return;
      if (!progressed) {  // every live wave waits for a barrier no other wave will signal
        char b[160];
        std::snprintf(b, sizeof b, "barrier deadlock: every live wave of the workgroup waits at a barrier (wave 0 at pc 0x%llx)",
                      static_cast<unsigned long long>(waves_[0].pc));
        throw isa_fault{waves_[0].pc, b};
      }
    }
  }
  void reset() noexcept override {
    pages_.clear();
    last_key_ = ~0ull;
    last_page_ = nullptr;
  }
  [[nodiscard]] std::uint64_t faulting_pc() const noexcept override { return current_pc_; }
  [[nodiscard]] std::uint64_t instructions() const noexcept override { return executed_; }

  // The state the waves of the last run() ended with (tests read results from it).
  [[nodiscard]] std::uint32_t vgpr(std::size_t wave_index, unsigned reg, unsigned lane) const noexcept {
    return waves_[wave_index].v[std::size_t(reg) * 64 + lane];
  }
  [[nodiscard]] std::uint32_t sgpr(std::size_t wave_index, unsigned reg) const noexcept { return waves_[wave_index].s[reg]; }
  [[nodiscard]] bool scc(std::size_t wave_index) const noexcept { return waves_[wave_index].scc; }

  // The decoded instruction at `pc` (cached; tests use it to check the decoder).
  const insn& fetch(std::uint64_t pc) {
    const std::uint64_t key = pc >> page_shift;
    page* pg = last_page_;
    if (key != last_key_) {
      auto& slot = pages_[key];
      if (!slot) slot = std::make_unique<page>();
      pg = last_page_ = slot.get();
      last_key_ = key;
    }
    insn& d = pg->at[(pc >> 2) & (page_insns - 1)];
    if (d.e != enc::invalid || d.words == 0) return d;
    std::uint32_t w[3] = {};
    unsigned avail = 0;
    for (; avail < 3; ++avail) {
      if (!vm_->is_mapped(pc + 4ull * avail, 4)) break;
      std::memcpy(&w[avail], vm_->host_address(pc + 4ull * avail), 4);
    }
    if (avail == 0) throw memory_fault{pc, 4, false};
    d = t_->decode(w, avail);
    if (d.e == enc::invalid) d.words = 0;  // decoded, illegal: do not decode again
    return d;
  }

 private:
  static constexpr unsigned page_shift = 12, page_insns = 1u << (page_shift - 2);
  struct page {
    insn at[page_insns];
  };

  [[noreturn]] void unsupported(const wave& w, const insn& d, const char* why = "unsupported instruction") const {
    char b[200];
    std::snprintf(b, sizeof b, "%s: %s (%s opcode %u) at pc 0x%llx", why, d.name, enc_name(d.e), d.code,
                  static_cast<unsigned long long>(w.pc));
    throw isa_fault{w.pc, b};
  }

  // ------------------------------------------------------------------ operands
  // Inline constant `s` for an operand `bytes` wide (integers sign-extend; floats per width).
  static std::uint64_t inline_const(unsigned s, unsigned bytes) noexcept {
    if (s >= 128 && s <= 192) return s - 128;
    if (s >= 193 && s <= 208) {
      const std::uint64_t v = static_cast<std::uint64_t>(static_cast<std::int64_t>(192 - static_cast<int>(s)));
      return bytes == 8 ? v : bytes == 2 ? (v & 0xFFFF) : (v & 0xFFFFFFFFu);
    }
    if (s < 240 || s > 248) return 0;
    static constexpr std::uint32_t f32[] = {0x3F000000u, 0xBF000000u, 0x3F800000u, 0xBF800000u, 0x40000000u,
                                            0xC0000000u, 0x40800000u, 0xC0800000u, 0x3E22F983u};
    static constexpr std::uint64_t f64[] = {0x3FE0000000000000ull, 0xBFE0000000000000ull, 0x3FF0000000000000ull,
                                            0xBFF0000000000000ull, 0x4000000000000000ull, 0xC000000000000000ull,
                                            0x4010000000000000ull, 0xC010000000000000ull, 0x3FC45F306DC9C882ull};
    static constexpr std::uint16_t f16[] = {0x3800, 0xB800, 0x3C00, 0xBC00, 0x4000, 0xC000, 0x4400, 0xC400, 0x3118};
    return bytes == 8 ? f64[s - 240] : bytes == 2 ? f16[s - 240] : f32[s - 240];
  }
  // A scalar (non-VGPR) operand, 32 bits.
  std::uint32_t sget(const wave& w, const insn& d, unsigned s) const noexcept {
    if (s < 128) return s == op_null ? 0u : w.s[s];
    if (s == op_literal) return d.literal;
    if (s == op_scc) return w.scc ? 1u : 0u;
    if (s == op_vccz) return w.vcc() == 0;
    if (s == op_execz) return w.exec() == 0;
    if (s == op_shared_base) return static_cast<std::uint32_t>(t_->shared_base >> 32);
    if (s == op_private_base) return static_cast<std::uint32_t>(t_->private_base >> 32);
    if (s == op_shared_limit || s == op_private_limit)
      return static_cast<std::uint32_t>((s == op_shared_limit ? t_->shared_base : t_->private_base) >> 32);
    return static_cast<std::uint32_t>(inline_const(s, 4));
  }
  // A scalar operand, 64 bits: a register pair, or a constant extended as the kind says
  // (a literal is the high half of an f64, zero-extended for integers).
  std::uint64_t sget64(const wave& w, const insn& d, unsigned s, bool fp = false) const noexcept {
    if (s < 128) return s == op_null ? 0ull : (std::uint64_t(w.s[s + 1]) << 32 | w.s[s]);
    if (s == op_literal) return fp ? std::uint64_t(d.literal) << 32 : d.literal;
    if (s == op_shared_base) return t_->shared_base;
    if (s == op_private_base) return t_->private_base;
    if ((s >= 128 && s <= 208) || (s >= 240 && s <= 248)) return inline_const(s, 8);
    return sget(w, d, s);
  }
  void sset(wave& w, unsigned r, std::uint32_t v) const noexcept {
    if (r != op_null && r < 128) w.s[r] = v;
  }
  void sset64(wave& w, unsigned r, std::uint64_t v) const noexcept {
    if (r == op_null || r >= 127) return;
    w.s[r] = static_cast<std::uint32_t>(v);
    w.s[r + 1] = static_cast<std::uint32_t>(v >> 32);
  }
  // VGPRs [reg, reg+count) of the wave, bounds-checked against the descriptor's VGPR count.
  std::uint32_t* vcol(wave& w, unsigned reg, unsigned count = 1) const {
    if (reg + count > vgprs_)
      throw isa_fault{w.pc, "VGPR v" + std::to_string(reg + count - 1) + " beyond the descriptor's " +
                                std::to_string(vgprs_) + " VGPRs at pc 0x" + hex(w.pc)};
    return w.v + std::size_t(reg) * 64;
  }
  static std::string hex(std::uint64_t x) {
    char b[20];
    std::snprintf(b, sizeof b, "%llx", static_cast<unsigned long long>(x));
    return b;
  }

  // A 32-bit source as seen by each lane: a VGPR column, or one value for every lane; abs/neg
  // (floats) applied as the bit operations they are.
  struct src32 {
    const std::uint32_t* p;
    std::uint32_t m, andm, xorm;
    unsigned shift = 0;  // 16-bit sources: the high half
    [[nodiscard]] std::uint32_t operator()(unsigned l) const noexcept { return ((p[l & m] >> shift) & andm) ^ xorm; }
  };
  src32 vsrc(wave& w, const insn& d, unsigned i, std::uint32_t& store, kind k = kind::b32) const {
    const unsigned s = d.src[i];
    src32 r{nullptr, 0, ~0u, 0};
    if (s >= op_vgpr0) r.p = vcol(w, s - op_vgpr0), r.m = ~0u;
    else store = k == kind::f16 || k == kind::b16 ? static_cast<std::uint32_t>(s == op_literal ? d.literal : inline_or_sget(w, d, s, 2))
                                                 : sget(w, d, s), r.p = &store;
    if (is_float(k)) {
      const std::uint32_t sign = k == kind::f16 ? 0x8000u : 0x80000000u;
      if ((d.abs >> i) & 1) r.andm = ~sign;
      if ((d.neg >> i) & 1) r.xorm = sign;
    }
    return r;
  }
  std::uint64_t inline_or_sget(const wave& w, const insn& d, unsigned s, unsigned bytes) const noexcept {
    if ((s >= 128 && s <= 208) || (s >= 240 && s <= 248)) return inline_const(s, bytes);
    return sget(w, d, s);
  }
  // A 64-bit source: a VGPR pair, or one value for every lane.
  struct src64 {
    const std::uint32_t *lo, *hi;
    std::uint32_t m;
    std::uint64_t andm, xorm;
    [[nodiscard]] std::uint64_t operator()(unsigned l) const noexcept {
      return ((std::uint64_t(hi[l & m]) << 32 | lo[l & m]) & andm) ^ xorm;
    }
  };
  src64 vsrc64(wave& w, const insn& d, unsigned i, std::uint32_t (&store)[2], kind k = kind::b64) const {
    const unsigned s = d.src[i];
    src64 r{nullptr, nullptr, 0, ~0ull, 0};
    if (s >= op_vgpr0) {
      r.lo = vcol(w, s - op_vgpr0, 2);
      r.hi = r.lo + 64;
      r.m = ~0u;
    } else {
      const std::uint64_t v = sget64(w, d, s, k == kind::f64);
      store[0] = static_cast<std::uint32_t>(v), store[1] = static_cast<std::uint32_t>(v >> 32);
      r.lo = &store[0], r.hi = &store[1];
    }
    if (k == kind::f64) {
      if ((d.abs >> i) & 1) r.andm = ~(1ull << 63);
      if ((d.neg >> i) & 1) r.xorm = 1ull << 63;
    }
    return r;
  }

  // ------------------------------------------------------------------ memory
  template <class T>
  T* mem(std::uint64_t va, std::size_t len, bool write) const {
    if (va == 0 || !vm_->data_access_ok(va, len)) throw memory_fault{va, len, write};
    return static_cast<T*>(vm_->host_address(va));
  }
  std::byte* lds_at(const wave& w, std::uint64_t addr, std::size_t len, bool write) const {
    if (addr + len > lds_.size()) {
      char b[160];
      std::snprintf(b, sizeof b, "LDS %s of %zu bytes at 0x%llx beyond the workgroup's %zu bytes at pc 0x%llx",
                    write ? "write" : "read", len, static_cast<unsigned long long>(addr), lds_.size(),
                    static_cast<unsigned long long>(w.pc));
      throw isa_fault{w.pc, b};
    }
    return lds_.data() + addr;
  }

  std::int64_t run_wave(wave& w, std::int64_t max_steps);
  [[nodiscard]] bool barrier_complete(const wave& me) const noexcept {
    for (const wave& o : waves_)
      if (!o.done && o.barrier_signals < me.barrier_signals) return false;
    return true;
  }
  bool exec_salu(wave& w, const insn& d);  // true: pc already set
  bool exec_sopp(wave& w, const insn& d);  // true: pc already set
  void exec_smem(wave& w, const insn& d);
  void exec_valu(wave& w, const insn& d);
  bool exec_valu_f64(wave& w, const insn& d, std::uint64_t ex);
  void exec_vopc(wave& w, const insn& d);
  void exec_vopd(wave& w, const insn& d);
  void exec_valu16(wave& w, const insn& d, std::uint64_t ex);
  void exec_vop3p(wave& w, const insn& d);
  src32 vsrc16(wave& w, const insn& d, unsigned i, std::uint32_t& store, kind k) const;
  void exec_flat(wave& w, const insn& d);
  std::uint64_t atomic_at(const wave& w, const insn& d, std::uint64_t va, const std::uint32_t* data);
  void exec_ds(wave& w, const insn& d);
  void exec_sdwa(wave& w, const insn& d);   // gfx9 (emu/isa/exec_gfx9.hpp)
  void exec_dpp(wave& w, const insn& d);    // DPP16 and DPP8, every generation (emu/isa/exec_dpp.hpp)
  void exec_mubuf(wave& w, const insn& d);  // MUBUF / VBUFFER, every generation (emu/isa/exec_buffer.hpp)
  void exec_s_buffer_load(wave& w, const insn& d);
  void exec_pk_f32(wave& w, const insn& d);  // gfx90a/gfx942 packed f32
  // VGPR columns past the descriptor's count: SDWA runs its operation on them.
  static constexpr unsigned sdwa_spare_vgprs = 3;

  const vm_access* vm_;
  const target* t_;
  run_params params_{};
  std::span<std::byte> lds_;
  std::vector<wave> waves_;
  std::vector<std::uint32_t> vregs_;
  unsigned vgprs_ = 0;
  std::uint64_t executed_ = 0;
  std::uint64_t current_pc_ = 0;
  std::unordered_map<std::uint64_t, std::unique_ptr<page>> pages_;
  std::uint64_t last_key_ = ~0ull;
  page* last_page_ = nullptr;
};

}  // namespace aqueduct::emu::isa

#include <aqueduct/emu/isa/exec_memory.hpp>
#include <aqueduct/emu/isa/exec_scalar.hpp>
#include <aqueduct/emu/isa/exec_vector.hpp>
#include <aqueduct/emu/isa/exec_vector16.hpp>
#include <aqueduct/emu/isa/exec_gfx9.hpp>
#include <aqueduct/emu/isa/exec_buffer.hpp>
#include <aqueduct/emu/isa/exec_dpp.hpp>
