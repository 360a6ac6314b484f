// emu/isa: gfx11/gfx12 buffer memory (MUBUF / VBUFFER, s_buffer_load) and DPP16/DPP8 against
// the ISA guides' rules written out here, for gfx1100 and gfx1201; gfx942/gfx90a MUBUF atomics
// and s_buffer_load; LDS atomics (32/64-bit, returning or not, compare-store, f32 add) on every
// target, against the DS_* pseudocode written out here.
//
// Programs are assembled at test time by llvm-mc-19 (wave64) and run as one wave on the
// interpreter. The expected values are computed in this file from the rules the RDNA3/RDNA4 ISA
// guides and Mesa's OOB_SELECT table state (see emu/isa/exec_buffer.hpp), never from the
// interpreter: the buffer address (unswizzled: base + soffset + index * stride + offset;
// swizzled: elements interleaved by index_stride lanes), out-of-range loads reading 0 per dword
// component, stores dropped, atomics all or nothing (returning 0), s_buffer_load's dwords past
// num_records reading 0; DPP's lane selection per control (rows of 16, quad_perm, shifts,
// rotates, mirrors, row_share, row_xmask, DPP8's 8-lane selects), row/bank masks leaving lanes
// unwritten, bound_ctrl (an invalid or inactive source reads 0, else the lane is not written),
// fi (inactive source lanes are read), neg/abs, the VOP3 and VOPC forms.
#include <aqueduct/emu/isa.hpp>

#include <doctest/doctest.h>

#include "emu_ports.hpp"
#include "isa_asm.hpp"

#include <atomic>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <set>
#include <string>
#include <vector>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

namespace isa = aqueduct::emu::isa;
namespace emu = aqueduct::emu;

namespace {

using u32 = std::uint32_t;
using u64 = std::uint64_t;

// One wave64 of `code` with the given SGPRs (s0..s39) and v0 = lane; returns the interpreter
// (its registers hold the results).
struct wave_run {
  std::unique_ptr<isa::interpreter> it;
  aq_test::test_vm vm;
  std::vector<u32> code_mem;

  u32 v1[64] = {}, v2[64] = {};  // initial v1, v2
  std::vector<std::byte> lds;     // the workgroup's LDS (none unless a case gives it)

  void run(const isa::target& t, const std::vector<u32>& code, const u32 (&sgprs)[40], u64 exec = ~0ull) {
    code_mem.assign(code.size() + 64, 0u);
    u32* at = code_mem.data() + (64 - (reinterpret_cast<std::uintptr_t>(code_mem.data()) / 4) % 64);
    std::memcpy(at, code.data(), code.size() * 4);
    vm.map(code_mem.data(), code_mem.size() * 4);
    it = std::make_unique<isa::interpreter>(vm, t);
    emu::wave_state ws{};
    ws.wave_size = 64;
    ws.exec = exec;
    ws.active_lanes = 64;
    for (int i = 0; i < 40; ++i) ws.sgpr[i] = sgprs[i];
    for (unsigned l = 0; l < 64; ++l) ws.v0[l] = l, ws.v1[l] = v1[l], ws.v2[l] = v2[l];
    isa::run_params rp;
    rp.entry = reinterpret_cast<std::uintptr_t>(at);
    rp.vgprs = 48;
    rp.rsrc1 = 1u << 23;
    std::atomic<std::int64_t> budget{1 << 20};
    it->run(rp, std::span<const emu::wave_state>(&ws, 1), std::span<std::byte>(lds), budget);
  }
  [[nodiscard]] u32 v(unsigned reg, unsigned lane) const { return it->vgpr(0, reg, lane); }
  [[nodiscard]] u32 s(unsigned reg) const { return it->sgpr(0, reg); }
};

// A gfx10+ V#: base, stride, swizzle enable (0 off, n: 2 << n byte elements), num_records,
// index stride code (8 << n), OOB_SELECT.
void put_vsharp(u32* s, const void* base, u32 stride, u32 swz, u32 num_records, u32 istride, u32 oob) {
  const u64 b = reinterpret_cast<std::uintptr_t>(base);
  s[0] = static_cast<u32>(b);
  s[1] = static_cast<u32>(b >> 32) | stride << 16 | swz << 30;
  s[2] = num_records;
  s[3] = oob << 28 | istride << 21 | 4u << 12;  // FORMAT 4 (32_UINT, ignored by untyped access)
}

const char* const buffer_program =
    "v_lshlrev_b32 v1, 2, v0\n"
    "v_lshlrev_b32 v2, 4, v0\n"
    "buffer_load_b32 v8, v1, s[4:7], s3 offen offset:4\n"
    "buffer_load_b128 v[9:12], v2, s[4:7], s3 offen\n"
    "buffer_load_b32 v13, v0, s[16:19], s3 idxen offset:4\n"
    "buffer_load_b32 v14, v0, s[16:19], s3 idxen offset:6\n"
    "buffer_load_b32 v15, v0, s[20:23], s3 idxen offset:4\n"
    "buffer_load_u16 v16, v1, s[4:7], s2 offen offset:2\n"
    "buffer_load_i8 v17, v1, s[4:7], s3 offen offset:3\n"
    "buffer_store_b32 v0, v1, s[12:15], s3 offen\n"
    "v_and_b32 v3, 7, v0\n"
    "v_lshlrev_b32 v3, 2, v3\n"
    "v_mov_b32 v18, 1\n"
    "buffer_atomic_add_u32 v18, v3, s[24:27], s3 offen GLC\n"
    "v_lshlrev_b32 v4, 3, v0\n"
    "v_mov_b32 v19, 0x77\n"
    "v_mov_b32 v20, 0x88\n"
    "buffer_store_b64 v[19:20], v4, s[28:31], s3 offen offset:4\n"
    "s_buffer_load_b64 s[32:33], s[4:7], 0x60\n"
    "s_buffer_load_b32 s34, s[4:7], s2 offset:0x10\n"
    "SUB\n"
    "s_endpgm\n";

void run_buffers(const char* mcpu, const isa::target& t) {
  INFO("target " << mcpu);
  std::string text = buffer_program;
  const bool gfx12 = std::string(mcpu).starts_with("gfx12");
  // gfx11 spells the atomic's return "glc", gfx12 "th:TH_ATOMIC_RETURN".
  text.replace(text.find("GLC"), 3, gfx12 ? "th:TH_ATOMIC_RETURN" : "glc");
  // Sub-dword scalar loads are gfx12's.
  text.replace(text.find("SUB"), 3, gfx12 ? "s_buffer_load_u16 s35, s[4:7], 0x62" : "s_nop 0");
  const auto progs = aq_test::assemble(AQUEDUCT_TEST_LLVM_MC, mcpu, text);
  REQUIRE(progs.size() == 1);

  // A: 64 dwords 0x1000 + i (raw, 100 bytes: the last dword partly in); B: store target (40 bytes);
  // C: structured, stride 8, 10 records; D: swizzled (4-byte elements, index stride 8, stride 16,
  // 6 records); E: 8 atomic counters (24 bytes: 6 in range); F: 64-bit stores, 36 bytes.
  std::vector<u32> A(64), B(64, 0xEEEEEEEEu), C(64), D(128), E(8), F(64, 0xDDDDDDDDu);
  for (u32 i = 0; i < 64; ++i) A[i] = 0x80001000u + i * 0x01010101u, C[i] = 0x2000 + i;
  for (u32 i = 0; i < 128; ++i) D[i] = 0x3000 + i;
  for (u32 i = 0; i < 8; ++i) E[i] = 100 + i;
  u32 s[40] = {};
  s[2] = 8;  // soffset of the u16 load and of s_buffer_load_b32
  put_vsharp(s + 4, A.data(), 0, 0, 100, 0, 3);
  put_vsharp(s + 12, B.data(), 0, 0, 40, 0, 3);
  put_vsharp(s + 16, C.data(), 8, 0, 10, 0, 0);
  put_vsharp(s + 20, D.data(), 16, 1, 6, 0, 3);
  put_vsharp(s + 24, E.data(), 0, 0, 24, 0, 3);
  put_vsharp(s + 28, F.data(), 0, 0, 36, 0, 3);
  wave_run r;
  for (auto* p : {&A, &B, &C, &D, &E, &F}) r.vm.map(p->data(), p->size() * 4);
  r.run(t, progs[0], s);

  auto byte_of = [&](const std::vector<u32>& m, u32 o) { return (m[o / 4] >> (8 * (o % 4))) & 0xFFu; };
  int bad = 0;
  auto check = [&](const char* what, unsigned l, u32 got, u32 want) {
    if (got != want && bad++ < 12) MESSAGE(what << " lane " << l << ": got 0x" << std::hex << got << ", want 0x" << want);
  };
  for (unsigned l = 0; l < 64; ++l) {
    // raw: offset 4l + 4, in range while offset + 4 <= 100
    check("b32 raw", l, r.v(8, l), 4 * l + 8 <= 100 ? A[l + 1] : 0u);
    for (unsigned c = 0; c < 4; ++c)  // b128: each dword component checked on its own
      check("b128 component", l, r.v(9 + c, l), 16 * l + 4 * c + 4 <= 100 ? A[4 * l + c] : 0u);
    // structured (OOB_SELECT 0): index < 10 and offset + 4 <= stride
    check("structured", l, r.v(13, l), l < 10 ? C[2 * l + 1] : 0u);
    check("structured, offset + payload > stride", l, r.v(14, l), 0u);
    // swizzled: index l, offset 4, 4-byte elements, index stride 8, stride 16
    const u32 sw = (l / 8) * 16 * 8 + (4 / 4) * 4 * 8 + (l % 8) * 4;
    check("swizzled", l, r.v(15, l), l < 6 ? D[sw / 4] : 0u);
    // u16 at soffset 8 + 4l + 2 (lanes 23, 24 left out: whether soffset counts in the range
    // check is not settled by the guides)
    if (l < 23 || l > 24) check("u16 + soffset", l, r.v(16, l), 4 * l + 4 <= 100 ? byte_of(A, 8 + 4 * l + 2) | byte_of(A, 8 + 4 * l + 3) << 8 : 0u);
    const u32 b3 = 4 * l + 4 <= 100 ? byte_of(A, 4 * l + 3) : 0u;
    check("i8 sign-extended", l, r.v(17, l), static_cast<u32>(static_cast<std::int32_t>(static_cast<std::int8_t>(b3))));
    const unsigned k = l % 8;  // atomics: all or nothing, out of range returns 0
    if (k >= 6) check("atomic out of range returns 0", l, r.v(18, l), 0u);
    else if (r.v(18, l) < 100 + k || r.v(18, l) >= 108 + k) check("atomic return", l, r.v(18, l), 100 + k);
  }
  for (unsigned i = 0; i < 64; ++i) check("store", i, B[i], i < 10 ? i : 0xEEEEEEEEu);
  for (unsigned k = 0; k < 8; ++k) check("atomic counter", k, E[k], k < 6 ? 108 + k : 100 + k);
  for (unsigned k = 0; k < 6; ++k) {  // the 8 returns of one counter are distinct
    std::set<u32> seen;
    for (unsigned l = k; l < 64; l += 8) seen.insert(r.v(18, l));
    check("distinct atomic returns", k, static_cast<u32>(seen.size()), 8u);
  }
  // 64-bit stores at 8l + 4: dword 0 in range while 8l + 8 <= 36, dword 1 while 8l + 12 <= 36
  for (unsigned i = 0; i < 64; ++i) {
    const unsigned l = (i - 1) / 2;  // dword i is written by lane (i - 1) / 2, component (i - 1) % 2
    const bool in = i >= 1 && i <= 128 && 8 * l + 4 * ((i - 1) % 2) + 8 <= 36;
    check("b64 store components", i, F[i], in ? ((i - 1) % 2 ? 0x88u : 0x77u) : 0xDDDDDDDDu);
  }
  check("s_buffer_load dword 0", 0, r.s(32), A[24]);
  check("s_buffer_load dword 1 past num_records", 1, r.s(33), 0u);
  check("s_buffer_load soffset + offset", 0, r.s(34), A[6]);
  if (gfx12) check("s_buffer_load_u16 within num_records", 0, r.s(35), (A[24] >> 16) & 0xFFFFu);
  CHECK(bad == 0);
}

// ---- DPP16 / DPP8 on one wave64 (rows of 16 lanes), EXEC = s[2:3] with lanes off.
// Each case writes its own VGPR (v8 + k), set to 0x5555 first: lanes the DPP form does not
// write keep it. The expected value of each lane is computed from the ISA guides' DPP rules:
// `src` gives the lane src0 is read from (-1: out of range).
struct dpp_case {
  const char* text;  // the instruction, "vD" for the destination
  std::function<int(unsigned)> src;
  unsigned row_mask = 0xF, bank_mask = 0xF;
  bool bound_ctrl = false, fi = false, dpp8 = false;
  std::function<u32(u32 s0, unsigned l)> op;  // the operation on the permuted src0 and lane l's other inputs
};

void run_dpp(const char* mcpu, const isa::target& t) {
  INFO("target " << mcpu);
  wave_run r;
  for (unsigned l = 0; l < 64; ++l) r.v1[l] = l * 0x01000193u + 7u, r.v2[l] = (l * 2654435761u) >> 7;
  const u64 exec = 0xF7FF'FFEF'BFFF'FDFEull;  // lanes 0, 9, 30, 36, 59 off
  auto f = [](u32 x) { return static_cast<float>(x); };
  auto add = [&](u32 s0, unsigned l) { return s0 + r.v2[l]; };
  auto within = [](unsigned l, int s) { return static_cast<int>(l & ~15u) + s; };  // a lane of l's row
  auto in_row = [](unsigned l, int d) { const int x = static_cast<int>(l & 15) + d; return x >= 0 && x <= 15 ? static_cast<int>(l) + d : -1; };
  std::vector<dpp_case> cases = {
      {"v_add_nc_u32_dpp vD, v1, v2 quad_perm:[3,1,0,2] row_mask:0xf bank_mask:0xf",
       [](unsigned l) { const int p[4] = {3, 1, 0, 2}; return static_cast<int>(l & ~3u) + p[l & 3]; }, 0xF, 0xF, false, false, false, add},
      {"v_add_nc_u32_dpp vD, v1, v2 row_shl:3 row_mask:0xf bank_mask:0xf bound_ctrl:1",
       [&](unsigned l) { return in_row(l, 3); }, 0xF, 0xF, true, false, false, add},
      {"v_add_nc_u32_dpp vD, v1, v2 row_shr:5 row_mask:0xf bank_mask:0xf",
       [&](unsigned l) { return in_row(l, -5); }, 0xF, 0xF, false, false, false, add},
      {"v_add_nc_u32_dpp vD, v1, v2 row_ror:7 row_mask:0xf bank_mask:0xf",
       [&](unsigned l) { return within(l, static_cast<int>((l + 16 - 7) & 15)); }, 0xF, 0xF, false, false, false, add},
      {"v_add_nc_u32_dpp vD, v1, v2 row_mirror row_mask:0xf bank_mask:0xf bound_ctrl:1",
       [&](unsigned l) { return within(l, 15 - static_cast<int>(l & 15)); }, 0xF, 0xF, true, false, false, add},
      {"v_add_nc_u32_dpp vD, v1, v2 row_half_mirror row_mask:0xf bank_mask:0xf",
       [](unsigned l) { return static_cast<int>(l & ~7u) + 7 - static_cast<int>(l & 7); }, 0xF, 0xF, false, false, false, add},
      {"v_add_nc_u32_dpp vD, v1, v2 row_share:9 row_mask:0xf bank_mask:0xf bound_ctrl:1 fi:1",
       [&](unsigned l) { return within(l, 9); }, 0xF, 0xF, true, true, false, add},
      {"v_add_nc_u32_dpp vD, v1, v2 row_xmask:6 row_mask:0x5 bank_mask:0xa",
       [&](unsigned l) { return within(l, static_cast<int>((l & 15) ^ 6)); }, 0x5, 0xA, false, false, false, add},
      {"v_add_nc_u32_dpp vD, v1, v2 row_shr:1 row_mask:0xf bank_mask:0xf fi:1",
       [&](unsigned l) { return in_row(l, -1); }, 0xF, 0xF, false, true, false, add},
      {"v_add_nc_u32_dpp vD, v1, v2 dpp8:[7,6,5,4,3,2,1,0]",
       [](unsigned l) { return static_cast<int>(l & ~7u) + 7 - static_cast<int>(l & 7); }, 0xF, 0xF, false, false, true, add},
      {"v_add_nc_u32_dpp vD, v1, v2 dpp8:[1,1,3,3,5,5,0,2] fi:1",
       [](unsigned l) { const int p[8] = {1, 1, 3, 3, 5, 5, 0, 2}; return static_cast<int>(l & ~7u) + p[l & 7]; }, 0xF, 0xF, false, true, true, add},
      {"v_sub_f32_dpp vD, -v3, |v4| quad_perm:[1,0,3,2] row_mask:0xf bank_mask:0xf bound_ctrl:1",
       [](unsigned l) { return static_cast<int>(l ^ 1); }, 0xF, 0xF, true, false, false,
       [&](u32 s0, unsigned l) { return std::bit_cast<u32>(-std::bit_cast<float>(s0) - std::fabs(f(r.v2[l]))); }},
      {"v_max_u32_e64_dpp vD, v1, v2 row_shr:2 row_mask:0xf bank_mask:0xf bound_ctrl:1",
       [&](unsigned l) { return in_row(l, -2); }, 0xF, 0xF, true, false, false, [&](u32 s0, unsigned l) { return std::max(s0, r.v2[l]); }},
      {"v_add3_u32_e64_dpp vD, v1, v2, v0 row_xmask:1 row_mask:0xf bank_mask:0xf",
       [&](unsigned l) { return within(l, static_cast<int>((l & 15) ^ 1)); }, 0xF, 0xF, false, false, false,
       [&](u32 s0, unsigned l) { return s0 + r.v2[l] + l; }},
  };
  std::string text = "v_cvt_f32_u32 v3, v1\nv_cvt_f32_u32 v4, v2\n";
  for (std::size_t k = 0; k < cases.size(); ++k) {
    std::string ins = cases[k].text;
    ins.replace(ins.find("vD"), 2, "v" + std::to_string(8 + k));
    text += "v_mov_b32 v" + std::to_string(8 + k) + ", 0x5555\ns_mov_b64 exec, s[2:3]\n" + ins + "\ns_mov_b64 exec, -1\n";
  }
  // Compares (every active lane written): VCC and an SGPR pair, all lanes on.
  text += "v_cmp_gt_u32 vcc, v1, v2 quad_perm:[2,3,0,1] row_mask:0xf bank_mask:0xf\n"
          "v_cmp_gt_u32_e64_dpp s[10:11], v1, v2 row_mirror row_mask:0xf bank_mask:0xf bound_ctrl:1\n"
          "s_endpgm\n";
  const auto progs = aq_test::assemble(AQUEDUCT_TEST_LLVM_MC, mcpu, text);
  REQUIRE(progs.size() == 1);
  u32 s[40] = {};
  s[2] = static_cast<u32>(exec), s[3] = static_cast<u32>(exec >> 32);
  r.run(t, progs[0], s);
  int bad = 0;
  for (std::size_t k = 0; k < cases.size(); ++k) {
    const dpp_case& c = cases[k];
    for (unsigned l = 0; l < 64; ++l) {
      u32 want = 0x5555;
      const bool written = ((exec >> l) & 1) && (c.dpp8 || (((c.row_mask >> (l / 16)) & 1) && ((c.bank_mask >> ((l / 4) & 3)) & 1)));
      if (written) {
        const int sl = c.src(l);
        const bool valid = sl >= 0 && sl < 64 && (c.fi || ((exec >> sl) & 1));
        // src0 is v1, or v3 = float(v1) for the float case
        const u32 s0 = valid ? (std::string(c.text).find("-v3") != std::string::npos ? std::bit_cast<u32>(f(r.v1[sl])) : r.v1[sl]) : 0u;
        if (valid || c.bound_ctrl || c.dpp8) want = c.op(s0, l);
      }
      const u32 got = r.v(8 + static_cast<unsigned>(k), l);
      if (got != want && bad++ < 16) MESSAGE(c.text << " lane " << l << ": got 0x" << std::hex << got << ", want 0x" << want);
    }
  }
  u64 vcc = 0, s10 = 0;
  for (unsigned l = 0; l < 64; ++l) {
    vcc |= u64(r.v1[(l & ~3u) | ((l & 3) ^ 2)] > r.v2[l]) << l;
    s10 |= u64(r.v1[(l & ~15u) | (15 - (l & 15))] > r.v2[l]) << l;
  }
  CHECK((u64(r.s(107)) << 32 | r.s(106)) == vcc);
  CHECK((u64(r.s(11)) << 32 | r.s(10)) == s10);
  CHECK(bad == 0);
}

}  // namespace

TEST_CASE("gfx11 and gfx12 DPP16 and DPP8: every control family, masks, bound_ctrl, fi, modifiers, VOP3 and VOPC forms") {
  run_dpp("gfx1100", isa::gfx11_target);
  run_dpp("gfx1201", isa::gfx12_target);
}

TEST_CASE("gfx11 MUBUF and gfx12 VBUFFER loads, stores, atomics and s_buffer_load through a V#") {
  run_buffers("gfx1100", isa::gfx11_target);
  run_buffers("gfx1201", isa::gfx12_target);
}

// ---- LDS atomics (every target): each lane owns 8 bytes of LDS, so the expected values do not
// depend on lane order. Per program: lane memory m (64-bit, at 2048 + 8 l), data0 a and data1
// b (loaded from LDS at 8 l and 512 + 8 l); EXEC with lanes off during the atomic; v10/v11 start
// as 0x5555. Expected: the ISA guides' DS_* pseudocode written out here (32-bit forms act on the
// low dword; returning forms give the old value; inactive lanes change nothing).
namespace {

struct lds_case {
  const char* rdna;   // gfx11/gfx12 mnemonic
  const char* gfx9;   // gfx90a/gfx942 mnemonic (gfx9 swaps ds_cmpst's data operands: written below)
  bool wide, rtn, cmp, fp;
  std::function<u64(u64 m, u64 a, u64 b)> f;
};

std::vector<lds_case> lds_cases() {
  using i32 = std::int32_t;
  using i64 = std::int64_t;
  auto fadd = [](u64 m, u64 a, u64) { return u64(std::bit_cast<u32>(std::bit_cast<float>(u32(m)) + std::bit_cast<float>(u32(a)))); };
  std::vector<lds_case> c = {
      {"ds_add_rtn_u32", nullptr, false, true, false, false, [](u64 m, u64 a, u64) { return u64(u32(m) + u32(a)); }},
      {"ds_sub_u32", nullptr, false, false, false, false, [](u64 m, u64 a, u64) { return u64(u32(m) - u32(a)); }},
      {"ds_sub_rtn_u32", nullptr, false, true, false, false, [](u64 m, u64 a, u64) { return u64(u32(m) - u32(a)); }},
      {"ds_rsub_u32", nullptr, false, false, false, false, [](u64 m, u64 a, u64) { return u64(u32(a) - u32(m)); }},
      {"ds_rsub_rtn_u32", nullptr, false, true, false, false, [](u64 m, u64 a, u64) { return u64(u32(a) - u32(m)); }},
      {"ds_inc_u32", nullptr, false, false, false, false, [](u64 m, u64 a, u64) { return u64(u32(m) >= u32(a) ? 0u : u32(m) + 1); }},
      {"ds_inc_rtn_u32", nullptr, false, true, false, false, [](u64 m, u64 a, u64) { return u64(u32(m) >= u32(a) ? 0u : u32(m) + 1); }},
      {"ds_dec_u32", nullptr, false, false, false, false, [](u64 m, u64 a, u64) { return u64(u32(m) == 0 || u32(m) > u32(a) ? u32(a) : u32(m) - 1); }},
      {"ds_dec_rtn_u32", nullptr, false, true, false, false, [](u64 m, u64 a, u64) { return u64(u32(m) == 0 || u32(m) > u32(a) ? u32(a) : u32(m) - 1); }},
      {"ds_min_rtn_i32", nullptr, false, true, false, false, [](u64 m, u64 a, u64) { return u64(u32(std::min(i32(m), i32(a)))); }},
      {"ds_max_rtn_i32", nullptr, false, true, false, false, [](u64 m, u64 a, u64) { return u64(u32(std::max(i32(m), i32(a)))); }},
      {"ds_min_rtn_u32", nullptr, false, true, false, false, [](u64 m, u64 a, u64) { return u64(std::min(u32(m), u32(a))); }},
      {"ds_max_rtn_u32", nullptr, false, true, false, false, [](u64 m, u64 a, u64) { return u64(std::max(u32(m), u32(a))); }},
      {"ds_and_rtn_b32", nullptr, false, true, false, false, [](u64 m, u64 a, u64) { return u64(u32(m) & u32(a)); }},
      {"ds_or_rtn_b32", nullptr, false, true, false, false, [](u64 m, u64 a, u64) { return u64(u32(m) | u32(a)); }},
      {"ds_xor_rtn_b32", nullptr, false, true, false, false, [](u64 m, u64 a, u64) { return u64(u32(m) ^ u32(a)); }},
      {"ds_storexchg_rtn_b32", "ds_wrxchg_rtn_b32", false, true, false, false, [](u64, u64 a, u64) { return u64(u32(a)); }},
      {"ds_cmpstore_b32", "ds_cmpst_b32", false, false, true, false, [](u64 m, u64 a, u64 b) { return u64(u32(m) == u32(b) ? u32(a) : u32(m)); }},
      {"ds_cmpstore_rtn_b32", "ds_cmpst_rtn_b32", false, true, true, false, [](u64 m, u64 a, u64 b) { return u64(u32(m) == u32(b) ? u32(a) : u32(m)); }},
      {"ds_add_f32", nullptr, false, false, false, true, fadd},
      {"ds_add_rtn_f32", nullptr, false, true, false, true, fadd},
      {"ds_add_u64", nullptr, true, false, false, false, [](u64 m, u64 a, u64) { return m + a; }},
      {"ds_add_rtn_u64", nullptr, true, true, false, false, [](u64 m, u64 a, u64) { return m + a; }},
      {"ds_sub_rtn_u64", nullptr, true, true, false, false, [](u64 m, u64 a, u64) { return m - a; }},
      {"ds_rsub_rtn_u64", nullptr, true, true, false, false, [](u64 m, u64 a, u64) { return a - m; }},
      {"ds_inc_rtn_u64", nullptr, true, true, false, false, [](u64 m, u64 a, u64) { return m >= a ? 0 : m + 1; }},
      {"ds_dec_rtn_u64", nullptr, true, true, false, false, [](u64 m, u64 a, u64) { return m == 0 || m > a ? a : m - 1; }},
      {"ds_min_i64", nullptr, true, false, false, false, [](u64 m, u64 a, u64) { return u64(std::min(i64(m), i64(a))); }},
      {"ds_max_rtn_i64", nullptr, true, true, false, false, [](u64 m, u64 a, u64) { return u64(std::max(i64(m), i64(a))); }},
      {"ds_min_rtn_u64", nullptr, true, true, false, false, [](u64 m, u64 a, u64) { return std::min(m, a); }},
      {"ds_max_u64", nullptr, true, false, false, false, [](u64 m, u64 a, u64) { return std::max(m, a); }},
      {"ds_and_rtn_b64", nullptr, true, true, false, false, [](u64 m, u64 a, u64) { return m & a; }},
      {"ds_or_b64", nullptr, true, false, false, false, [](u64 m, u64 a, u64) { return m | a; }},
      {"ds_xor_rtn_b64", nullptr, true, true, false, false, [](u64 m, u64 a, u64) { return m ^ a; }},
      {"ds_storexchg_rtn_b64", "ds_wrxchg_rtn_b64", true, true, false, false, [](u64, u64 a, u64) { return a; }},
      {"ds_cmpstore_b64", "ds_cmpst_b64", true, false, true, false, [](u64 m, u64 a, u64 b) { return m == b ? a : m; }},
      {"ds_cmpstore_rtn_b64", "ds_cmpst_rtn_b64", true, true, true, false, [](u64 m, u64 a, u64 b) { return m == b ? a : m; }},
  };
  return c;
}

std::string hex(u64 x) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(x));
  return b;
}

void run_lds_atomics(const char* mcpu, const isa::target& t) {
  const std::string gen = mcpu;
  const bool gfx9 = gen.starts_with("gfx9"), gfx12 = gen.starts_with("gfx12");
  const std::vector<lds_case> cases = lds_cases();
  std::string text;
  for (const lds_case& c : cases) {
    const std::string name = gfx9 && c.gfx9 ? c.gfx9 : c.rdna;
    const std::string a = c.wide ? "v[2:3]" : "v2", b = c.wide ? "v[4:5]" : "v4", dst = c.wide ? "v[10:11]" : "v10";
    std::string ops = c.rtn ? dst + ", v1, " : "v1, ";
    // gfx9's ds_cmpst takes the compare value first, gfx11's ds_cmpstore the new value first.
    ops += c.cmp ? (gfx9 ? b + ", " + a : a + ", " + b) : a;
    text += std::string("v_lshlrev_b32 v1, 3, v0\n") + (gfx9 ? "ds_read_b64 v[2:3], v1\nds_read_b64 v[4:5], v1 offset:512\n"
                                                              : "ds_load_b64 v[2:3], v1\nds_load_b64 v[4:5], v1 offset:512\n") +
            (gfx12 ? "s_wait_dscnt 0\n" : "s_waitcnt lgkmcnt(0)\n") + "v_mov_b32 v10, 0x5555\nv_mov_b32 v11, 0x5555\n" +
            "s_mov_b64 exec, s[2:3]\n" + name + " " + ops + " offset:2048\ns_mov_b64 exec, -1\ns_endpgm\n";
  }
  const auto progs = aq_test::assemble(AQUEDUCT_TEST_LLVM_MC, mcpu, text);
  REQUIRE(progs.size() == cases.size());
  const u32 e32[8] = {0u, 1u, 2u, 0x7FFFFFFFu, 0x80000000u, 0xFFFFFFFFu, 0xFFFFFFFEu, 0x12345678u};
  // f32: 0, -0, 1, the smallest denormal, a negative denormal, FLT_MAX, +inf, a quiet NaN
  const u32 f32[8] = {0u, 0x80000000u, 0x3F800000u, 1u, 0x807FFFFFu, 0x7F7FFFFFu, 0x7F800000u, 0x7FC00001u};
  const u64 exec = 0xF0F0FFFF7FFFFFFEull;
  u32 s[40] = {};
  s[2] = u32(exec), s[3] = u32(exec >> 32);
  int bad = 0;
  for (std::size_t k = 0; k < cases.size(); ++k) {
    const lds_case& c = cases[k];
    const std::string name = std::string(mcpu) + " " + (gfx9 && c.gfx9 ? c.gfx9 : c.rdna);
    const u32* e = c.fp ? f32 : e32;
    u64 m[64], a[64], b[64];
    for (unsigned l = 0; l < 64; ++l) {  // every (m, a) pair of the low dwords; high dwords mixed
      m[l] = u64(e[(l * 3 + 1) % 8]) << 32 | e[l % 8];
      a[l] = u64(e[(l * 5 + 2) % 8]) << 32 | e[(l / 8) % 8];
      if (l % 8 == (l / 8) % 8) a[l] = m[l];  // equal 64-bit operands too (the low dwords already are)
      b[l] = l % 2 ? m[l] : m[l] ^ (l % 4 == 0 ? 1ull : 1ull << 32);  // cmpstore: equal on odd lanes
    }
    wave_run r;
    r.lds.assign(4096, std::byte{0xA5});
    std::memcpy(r.lds.data(), a, sizeof a);
    std::memcpy(r.lds.data() + 512, b, sizeof b);
    std::memcpy(r.lds.data() + 2048, m, sizeof m);
    r.run(t, progs[k], s);
    const int bad_before = bad;
    for (unsigned l = 0; l < 64; ++l) {
      const bool on = (exec >> l) & 1;
      u64 got;
      std::memcpy(&got, r.lds.data() + 2048 + 8 * l, 8);
      u64 want = m[l];
      if (on) want = c.wide ? c.f(m[l], a[l], b[l]) : (m[l] & 0xFFFFFFFF00000000ull) | (c.f(m[l], a[l], b[l]) & 0xFFFFFFFFu);
      const bool nan_ok = c.fp && std::isnan(std::bit_cast<float>(u32(want))) && std::isnan(std::bit_cast<float>(u32(got))) &&
                          (got >> 32) == (want >> 32);
      if (got != want && !nan_ok && bad++ < 12)
        MESSAGE((name + " lane " + std::to_string(l) + " memory: got " + hex(got) + ", want " + hex(want) + " (m " + hex(m[l]) + ", a " +
                 hex(a[l]) + ", b " + hex(b[l]) + ")"));
      const u32 r0 = !on || !c.rtn ? 0x5555u : u32(m[l]);
      const u32 r1 = !on || !c.rtn || !c.wide ? 0x5555u : u32(m[l] >> 32);
      if ((r.v(10, l) != r0 || r.v(11, l) != r1) && bad++ < 12)
        MESSAGE((name + " lane " + std::to_string(l) + " returned: got " + hex(u64(r.v(11, l)) << 32 | r.v(10, l)) + ", want " +
                 hex(u64(r1) << 32 | r0)));
    }
    if (bad != bad_before) MESSAGE((name + ": " + std::to_string(bad - bad_before) + " mismatches"));
  }
  CHECK(bad == 0);
}

// gfx9 V# (GCN/CDNA layout): base, stride, swizzle bit 63; num_records; word 3's selects unused here.
void put_vsharp_gfx9(u32* s, const void* base, u32 stride, u32 num_records) {
  const u64 b = reinterpret_cast<std::uintptr_t>(base);
  s[0] = static_cast<u32>(b), s[1] = static_cast<u32>(b >> 32) | stride << 16, s[2] = num_records, s[3] = 0;
}

// gfx942/gfx90a MUBUF atomics and s_buffer_load through a raw V# (stride 0: an access at offset
// >= num_records is out of range; an out-of-range atomic does nothing and returns 0).
void run_gfx9_buffer_atomics(const char* mcpu, const isa::target& t) {
  const bool gfx942 = std::string(mcpu) == "gfx942";
  const std::string ret = gfx942 ? "sc0" : "glc";  // the "return the old value" bit
  const std::string text = "v_lshlrev_b32 v1, 2, v0\nv_mov_b32 v10, v0\n"
                           "buffer_atomic_add v10, v1, s[8:11], 0 offen " + ret + "\n"
                           "v_mov_b32 v12, 0x777\nv_and_b32 v13, 1, v0\n"
                           "buffer_atomic_cmpswap v[12:13], v1, s[12:15], 0 offen " + ret + "\n"
                           "v_lshlrev_b32 v3, 3, v0\nv_mov_b32 v14, v0\nv_mov_b32 v15, 1\n"
                           "buffer_atomic_add_x2 v[14:15], v3, s[16:19], 0 offen offset:8 " + ret + "\n"
                           "v_mov_b32 v16, 0xF0\nbuffer_atomic_or v16, v1, s[8:11], 0 offen\n"
                           "s_buffer_load_dwordx2 s[20:21], s[8:11], 0x9c\n"
                           "s_buffer_load_dword s22, s[8:11], s2\n"
                           "s_buffer_load_dwordx4 s[24:27], s[8:11], 0x10\n"
                           "s_endpgm\n";
  const auto progs = aq_test::assemble(AQUEDUCT_TEST_LLVM_MC, mcpu, text);
  REQUIRE(progs.size() == 1);
  std::vector<u32> A(64), B(64);
  std::vector<u64> C(80, 0);
  for (u32 i = 0; i < 64; ++i) A[i] = 1000 + i * 3, B[i] = i % 4;
  for (u32 i = 0; i < 80; ++i) C[i] = 0xFFFFFFF0ull + i;
  u32 s[40] = {};
  s[2] = 8;                              // soffset of s_buffer_load_dword
  put_vsharp_gfx9(s + 8, A.data(), 0, 160);  // 40 dwords in range
  put_vsharp_gfx9(s + 12, B.data(), 0, 256);
  put_vsharp_gfx9(s + 16, C.data(), 0, 8 * 33);  // bytes: lanes 0..31 in range (offset 8 l + 8 < 264)
  const std::vector<u32> A0 = A, B0 = B;
  const std::vector<u64> C0 = C;
  wave_run r;
  r.vm.map(A.data(), A.size() * 4), r.vm.map(B.data(), B.size() * 4), r.vm.map(C.data(), C.size() * 8);
  r.run(t, progs[0], s);
  int bad = 0;
  auto check = [&](const char* what, unsigned l, u64 got, u64 want) {
    if (got != want && bad++ < 12)
      MESSAGE((std::string(mcpu) + " " + what + " lane " + std::to_string(l) + ": got " + hex(got) + ", want " + hex(want)));
  };
  for (unsigned l = 0; l < 64; ++l) {
    const bool in = 4 * l < 160;
    check("add returns the old value", l, r.v(10, l), in ? A0[l] : 0u);
    check("add then or (no return)", l, A[l], in ? (A0[l] + l) | 0xF0u : A0[l]);
    check("or without glc leaves vdata", l, r.v(16, l), 0xF0u);
    check("cmpswap returns the old value", l, r.v(12, l), B0[l]);
    check("cmpswap stores when memory equals data[1]", l, B[l], B0[l] == (l & 1) ? 0x777u : B0[l]);
    const bool in64 = 8 * l + 8 < 8 * 33;
    check("add_x2 returns the old value", l, u64(r.v(15, l)) << 32 | r.v(14, l), in64 ? C0[l + 1] : 0u);
    check("add_x2 carries into the high dword", l, C[l + 1], in64 ? C0[l + 1] + (1ull << 32 | l) : C0[l + 1]);
  }
  check("s_buffer_load_dwordx2 dword 0", 0, r.s(20), A[39]);
  check("s_buffer_load_dwordx2 dword 1 past num_records", 1, r.s(21), 0u);
  check("s_buffer_load_dword soffset", 0, r.s(22), A[2]);
  for (unsigned i = 0; i < 4; ++i) check("s_buffer_load_dwordx4", i, r.s(24 + i), A[4 + i]);
  CHECK(bad == 0);
}

}  // namespace

TEST_CASE("LDS atomics (32- and 64-bit, returning or not, compare-store, f32 add) on edge values, every target") {
  run_lds_atomics("gfx1100", isa::gfx11_target);
  run_lds_atomics("gfx1201", isa::gfx12_target);
  run_lds_atomics("gfx942", isa::gfx942_target);
  run_lds_atomics("gfx90a", isa::gfx90a_target);
}

TEST_CASE("gfx942 and gfx90a MUBUF atomics and s_buffer_load through a V#") {
  run_gfx9_buffer_atomics("gfx942", isa::gfx942_target);
  run_gfx9_buffer_atomics("gfx90a", isa::gfx90a_target);
}

}  // namespace AQ_UNITY_ID
