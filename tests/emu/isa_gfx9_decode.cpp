// emu/isa/gfx9_decode + gfx9_disasm against the outside oracle, LLVM 19 (Debian llvm-19: the
// probes are assembled as data by llvm-mc-19 and disassembled by llvm-objdump-19):
//  1. every (encoding, opcode) LLVM accepts for gfx90a / gfx942 is in the decoder's table with
//     LLVM's mnemonic, and every opcode LLVM rejects decodes as invalid (so the table is the
//     complete list of valid opcodes: each is either implemented or reported unsupported);
//  2. for every row, instructions with random operand fields and modifiers print exactly as
//     llvm-mc-19 disassembles them (registers, widths, constants, literals, offsets, cache bits,
//     SDWA selects, VOP3 modifiers);
//  3. docs/isa-coverage.md's gfx90a/gfx942 sections (implemented and unsupported opcodes per
//     encoding) are what the decoder's table and operation map say.
// Probes are batched: a few LLVM runs per encoding and target.
#include <aqueduct/emu/isa/gfx9.hpp>
#include <aqueduct/emu/isa/gfx9_disasm.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

#ifndef AQUEDUCT_TEST_LLVM_MC
#define AQUEDUCT_TEST_LLVM_MC "llvm-mc-19"
#endif
#ifndef AQUEDUCT_TEST_COVERAGE_DOC
#define AQUEDUCT_TEST_COVERAGE_DOC "docs/isa-coverage.md"
#endif
#ifndef AQUEDUCT_TEST_LLVM_OBJDUMP
#define AQUEDUCT_TEST_LLVM_OBJDUMP "llvm-objdump-19"
#endif

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

namespace g9 = aqueduct::emu::isa::gfx9;
using words = std::vector<std::uint32_t>;

namespace {

std::string slurp(const std::string& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Disassembles every probe (padded with s_nop so that neither an invalid word nor a long
// instruction runs into the next probe); the first instruction of each, or nullopt if LLVM
// rejected its first dword.
// LLVM 19's printer crashes on a few invalid operand combinations (v_swap_b32 with an SGPR
// source): a batch that crashes is split, and a single probe that crashes counts as rejected.
std::optional<std::vector<std::optional<std::string>>> llvm_mc_once(const char* mcpu, const std::vector<words>& probes);
std::vector<std::optional<std::string>> llvm_mc(const char* mcpu, const std::vector<words>& probes) {
  if (probes.empty()) return {};
  if (auto r = llvm_mc_once(mcpu, probes)) return *r;
  if (probes.size() == 1) return {std::nullopt};
  const std::size_t half = probes.size() / 2;
  auto a = llvm_mc(mcpu, std::vector<words>(probes.begin(), probes.begin() + static_cast<std::ptrdiff_t>(half)));
  const auto b = llvm_mc(mcpu, std::vector<words>(probes.begin() + static_cast<std::ptrdiff_t>(half), probes.end()));
  a.insert(a.end(), b.begin(), b.end());
  return a;
}
std::optional<std::vector<std::optional<std::string>>> llvm_mc_once(const char* mcpu, const std::vector<words>& probes) {
  // The probes become an object (llvm-mc-19 assembles .long directives), which llvm-objdump-19
  // disassembles with LLVM's printer, each instruction with its offset and its real bytes.
  constexpr std::uint32_t fill = 0xBF800000u;  // s_nop 0
  std::string in = ".text\n";
  std::vector<std::size_t> starts;
  std::size_t off = 0;
  for (const words& p : probes) {
    words all = p;
    all.insert(all.end(), 3, fill);
    starts.push_back(off);
    in += ".long ";
    char b[16];
    for (std::size_t i = 0; i < all.size(); ++i) {
      std::snprintf(b, sizeof b, "%s0x%08x", i ? "," : "", all[i]);
      in += b;
    }
    in += '\n';
    off += all.size() * 4;
  }
  char dir[] = "/tmp/aq-gfx9-mc-XXXXXX";
  REQUIRE(mkdtemp(dir) != nullptr);
  const std::string d(dir);
  std::ofstream(d + "/in.s") << in;
  const std::string cmd = std::string(AQUEDUCT_TEST_LLVM_MC) + " -arch=amdgcn -mcpu=" + mcpu + " -filetype=obj " + d +
                          "/in.s -o " + d + "/in.o 2> " + d + "/err.txt && " + AQUEDUCT_TEST_LLVM_OBJDUMP +
                          " -d --mcpu=" + mcpu + " " + d + "/in.o > " + d + "/out.txt 2>> " + d + "/err.txt";
  const int rc = std::system(cmd.c_str());
  const std::string out = slurp(d + "/out.txt"), err = slurp(d + "/err.txt");
  std::system(("rm -rf " + d).c_str());
  if (rc != 0 && err.find("Stack dump") != std::string::npos) return std::nullopt;  // LLVM crashed
  REQUIRE_MESSAGE(rc == 0, cmd << ": " << err.substr(0, 400));
  std::map<std::size_t, std::string> at;
  const std::regex ins(R"(^\t(.*?)\s*// ([0-9A-F]+): [0-9A-F ]+( <.*>)?$)");
  std::istringstream ls(out);
  for (std::string line; std::getline(ls, line);) {
    std::smatch m;
    if (std::regex_search(line, m, ins) && !std::string(m[1]).starts_with(".long")) at[std::stoul(m[2], nullptr, 16)] = m[1];
  }
  std::vector<std::optional<std::string>> res;
  for (std::size_t st : starts) {
    auto it = at.find(st);
    res.push_back(it == at.end() ? std::nullopt : std::optional<std::string>(it->second));
  }
  return res;
}

constexpr std::uint32_t V(unsigned n) { return 256 + n; }
constexpr unsigned S0 = 20, S1 = 22, S2 = 24;

// The probe variants of one (encoding, opcode), as tests/emu/isa/tools/gfx9_opcodes.py builds
// them: distinct operand registers, then fallbacks with fields LLVM wants zero.
struct encoding_probe {
  const char* name;
  unsigned count;
  std::vector<words> (*variants)(unsigned op);
};
std::vector<words> vop3_variants(std::uint32_t base) {
  const std::uint32_t s[][3] = {{V(4), V(6), V(8)}, {V(4), V(6), S2}, {V(4), S1, S2}, {V(4), V(6), 0}, {V(4), S1, 0},
                                {S0, S1, 0},         {V(4), 0, 0},     {S0, 0, 0},     {0, 0, 0}};
  std::vector<words> v;
  for (auto& x : s) v.push_back({base, x[0] | x[1] << 9 | x[2] << 18 | ((base >> 23) == 0x1A7 ? 3u << 27 : 0u)});
  return v;
}
words fl(unsigned op, unsigned seg, unsigned a, unsigned d, unsigned sa, unsigned vd, unsigned sve = 0) {
  return {0xDC000000u | op << 18 | seg << 14 | sve << 13, a | d << 8 | sa << 16 | vd << 24};
}
const encoding_probe probes[] = {
    {"SOP2", 0x60, [](unsigned op) { return std::vector<words>{{0x80000000u | op << 23 | 4 << 16 | 2 << 8 | 6}}; }},
    {"SOPK", 0x17, [](unsigned op) { return std::vector<words>{{0xB0000000u | op << 23 | 4 << 16 | 0x10}}; }},
    {"SOP1", 256, [](unsigned op) { return std::vector<words>{{0xBE800000u | 4 << 16 | op << 8 | 6}}; }},
    {"SOPC", 128, [](unsigned op) { return std::vector<words>{{0xBF000000u | op << 16 | 2 << 8 | 6}}; }},
    {"SOPP", 128, [](unsigned op) { return std::vector<words>{{0xBF800000u | op << 16 | 1}, {0xBF800000u | op << 16}}; }},
    {"SMEM", 256, [](unsigned op) {
       return std::vector<words>{{0xC0000000u | op << 18 | 1 << 17 | 8 << 6 | 2, 0x10}, {0xC0000000u | op << 18 | 1 << 17 | 2, 0x10},
                                 {0xC0000000u | op << 18 | 8 << 6, 0}, {0xC0000000u | op << 18, 0}};
     }},
    {"VOP1", 256, [](unsigned op) {
       return std::vector<words>{{0x7E000000u | 2 << 17 | op << 9 | V(4)}, {0x7E000000u | 2 << 17 | op << 9 | S0}, {0x7E000000u | op << 9}};
     }},
    {"VOP2", 62, [](unsigned op) { return std::vector<words>{{op << 25 | 2 << 17 | 6 << 9 | V(4)}}; }},
    {"VOPC", 256, [](unsigned op) { return std::vector<words>{{0x7C000000u | op << 17 | 6 << 9 | V(4)}}; }},
    {"VOP3", 0x380, [](unsigned op) { return vop3_variants(0xD0000000u | op << 16 | 2); }},
    {"VOP3P", 128, [](unsigned op) { return vop3_variants(0xD3800000u | op << 16 | 1 << 14 | 2); }},
    {"SDWA1", 256, [](unsigned op) {
       return std::vector<words>{{0x7E000000u | 2 << 17 | op << 9 | 0xF9, 4 | 6 << 8 | 6 << 16},
                                 {0x7E000000u | op << 9 | 0xF9, 4 | 6 << 8 | 6 << 16},
                                 {0x7E000000u | op << 9 | 0xF9, 6 << 8}};
     }},
    {"SDWA2", 62, [](unsigned op) { return std::vector<words>{{op << 25 | 2 << 17 | 6 << 9 | 0xF9, 4 | 6 << 8 | 6 << 16 | 6u << 24}}; }},
    {"SDWAC", 256, [](unsigned op) { return std::vector<words>{{0x7C000000u | op << 17 | 6 << 9 | 0xF9, 4 | 6 << 16 | 6u << 24}}; }},
    {"DS", 256, [](unsigned op) {
       const unsigned f[][4] = {{4, 6, 8, 2}, {4, 6, 0, 2}, {4, 6, 8, 0}, {4, 6, 0, 0}, {4, 0, 0, 2}, {4, 0, 0, 0}, {0, 0, 0, 2}, {0, 0, 0, 0}};
       std::vector<words> v;
       for (auto& x : f) v.push_back({0xD8000000u | op << 17, x[0] | x[1] << 8 | x[2] << 16 | x[3] << 24});
       return v;
     }},
    {"FLAT", 128, [](unsigned op) { return std::vector<words>{fl(op, 0, 4, 6, 0, 2), fl(op, 0, 4, 6, 0, 0), fl(op, 0, 4, 0, 0, 2), fl(op, 0, 4, 0, 0, 0)}; }},
    {"GLOBAL", 128, [](unsigned op) {
       return std::vector<words>{fl(op, 2, 4, 6, 0x7F, 2), fl(op, 2, 4, 6, 0x7F, 0), fl(op, 2, 4, 0, 0x7F, 2), fl(op, 2, 4, 0, 0x7F, 0)};
     }},
    {"SCRATCH", 128, [](unsigned op) {
       std::vector<words> v;
       for (unsigned sve : {1u, 0u})
         for (auto [d, vd] : {std::pair{6u, 2u}, {6u, 0u}, {0u, 2u}, {0u, 0u}}) v.push_back(fl(op, 1, 4, d, 0x7F, vd, sve));
       return v;
     }},
    {"MUBUF", 128, [](unsigned op) {
       return std::vector<words>{{0xE0000000u | op << 18 | 1 << 12, 4 | 6 << 8 | 0x80u << 24}, {0xE0000000u | op << 18 | 1 << 12, 4 | 0x80u << 24},
                                 {0xE0000000u | op << 18, 0}};
     }},
};

struct row {
  std::string enc;
  unsigned op;
  words base;          // the first probe LLVM accepted
  std::string mnemonic;  // LLVM's
};

// Step 1 for one target: LLVM's valid opcodes, with their accepted probe (computed once per
// target and shared by the test cases).
std::vector<row> enumerate_uncached(const char* mcpu, std::vector<std::string>& rejected_but_decoded, g9::target tg);
std::vector<row> enumerate(const char* mcpu, std::vector<std::string>& rejected_but_decoded, g9::target tg) {
  static std::map<std::string, std::pair<std::vector<row>, std::vector<std::string>>> cache;
  auto it = cache.find(mcpu);
  if (it == cache.end()) {
    std::vector<std::string> extra;
    auto rows = enumerate_uncached(mcpu, extra, tg);
    it = cache.emplace(mcpu, std::pair{std::move(rows), std::move(extra)}).first;
  }
  rejected_but_decoded = it->second.second;
  return it->second.first;
}
std::vector<row> enumerate_uncached(const char* mcpu, std::vector<std::string>& rejected_but_decoded, g9::target tg) {
  std::vector<row> rows;
  for (const encoding_probe& e : probes) {
    std::vector<std::vector<words>> variants;
    for (unsigned op = 0; op < e.count; ++op) variants.push_back(e.variants(op));
    std::vector<std::optional<std::string>> best(e.count);
    std::vector<int> which(e.count, -1);
    for (std::size_t j = 0;; ++j) {
      std::vector<unsigned> idx;
      std::vector<words> batch;
      for (unsigned op = 0; op < e.count; ++op)
        if (which[op] < 0 && j < variants[op].size()) idx.push_back(op), batch.push_back(variants[op][j]);
      if (idx.empty()) break;
      const auto res = llvm_mc(mcpu, batch);
      for (std::size_t i = 0; i < idx.size(); ++i)
        if (res[i] && res[i]->find("Invalid") == std::string::npos) {
          // Not a fallback that printed a zeroed field as an operand (s0 would be ambiguous).
          const std::string ops = res[i]->substr(res[i]->find(' ') == std::string::npos ? res[i]->size() : res[i]->find(' '));
          if (std::string(e.name) != "MUBUF" && std::regex_search(ops, std::regex(R"(\bs0\b)"))) continue;
          best[idx[i]] = res[i], which[idx[i]] = static_cast<int>(j);
        }
    }
    for (unsigned op = 0; op < e.count; ++op) {
      if (which[op] >= 0) {
        const std::string& t = *best[op];
        rows.push_back({e.name, op, variants[op][which[op]], t.substr(0, t.find(' '))});
      } else {
        // LLVM rejects every probe: the decoder must not know the opcode either.
        for (const words& w : variants[op]) {
          const g9::insn d = g9::decode(w.data(), static_cast<unsigned>(w.size()), tg);
          if (d.valid()) rejected_but_decoded.push_back(std::string(e.name) + " " + std::to_string(op) + " " + g9::mnemonic(d));
          break;
        }
      }
    }
  }
  return rows;
}

struct target_case {
  const char* mcpu;
  g9::target tg;
};

}  // namespace

TEST_CASE("gfx9 decoder: the opcode table is exactly the opcodes llvm-mc-19 accepts, with LLVM's mnemonics") {
  for (const target_case tc : {target_case{"gfx90a", g9::target::gfx90a}, target_case{"gfx942", g9::target::gfx942}}) {
    const std::string mcpu = tc.mcpu;
    CAPTURE(mcpu);
    std::vector<std::string> extra;
    const std::vector<row> rows = enumerate(tc.mcpu, extra, tc.tg);
    CHECK(rows.size() > 1500);
    for (const std::string& x : extra) FAIL_CHECK("decodes an opcode llvm-mc rejects: " << x);
    int bad = 0;
    for (const row& r : rows) {
      const g9::insn d = g9::decode(r.base.data(), static_cast<unsigned>(r.base.size()), tc.tg);
      if (g9::mnemonic(d) != r.mnemonic && ++bad <= 20)
        FAIL_CHECK(r.enc << " opcode " << r.op << ": LLVM " << r.mnemonic << ", decoder '" << g9::mnemonic(d) << "'");
    }
    CHECK(bad == 0);
  }
}

namespace {

// A random source operand of `n` registers for a 9-bit field: VGPR, SGPR, special register,
// inline constant or (where `literal_ok`) a literal.
std::uint32_t rand_src(std::mt19937& rng, unsigned n, bool literal_ok, bool vgpr_ok = true) {
  const unsigned align = n >= 4 ? 4 : n >= 2 ? 2 : 1;
  switch (rng() % (vgpr_ok ? 9 : 8)) {
    case 0: return (rng() % (100 / align)) * align;                        // SGPR
    case 1: return n == 1 ? 106 + rng() % 2 : 106;                           // vcc / vcc_lo / vcc_hi
    case 2: return n == 1 ? (rng() % 2 ? 124u : 126u + rng() % 2) : 126u;   // m0 / exec
    case 3: return 108 + (rng() % (16 / align)) * align;                    // ttmp
    case 4: return 128 + rng() % 81;                                         // inline integer
    case 5: return 240 + rng() % 9;                                          // inline float
    case 6: return literal_ok ? 255u : 128u + rng() % 65;
    case 7: return n == 1 ? (rng() % 2 ? 235u + rng() % 4 : 251u + rng() % 3) : 128u;  // apertures, vccz/execz/scc
    default: return 256 + (rng() % 120) * 2;                                 // VGPR (gfx90a wants even tuples)
  }
}
unsigned width_of(const char* tpl, char field) {
  for (const char* p = tpl; *p; ++p)
    if (p[0] == '%') {
      const char* q = p + 1;
      if (*q == 'a') ++q;
      if (*q == field) return q[1] >= 'a' ? unsigned(q[1] - 'a' + 10) : unsigned(q[1] - '0');
    }
  return 0;
}
bool template_is_operands_only(const char* t) {
  std::string s(t);
  s = std::regex_replace(s, std::regex(R"(%a?[A-Z0-9][0-9a-w][a-z]?)"), "");
  s = std::regex_replace(s, std::regex(R"(vcc)"), "");
  return s.find_first_not_of(", ") == std::string::npos;
}
void set(std::uint32_t& w, unsigned lo, unsigned width, std::uint32_t v) {
  const std::uint32_t m = (width == 32 ? 0xFFFFFFFFu : ((1u << width) - 1)) << lo;
  w = (w & ~m) | ((v << lo) & m);
}

// Random operand fields (those the row's template names) and modifiers on the row's probe.
words mutate(const row& r, const g9::insn& d, std::mt19937& rng, g9::target tg) {
  words w = r.base;
  const std::string tpl = g9::detail::operand_template(d);
  const char* t = tpl.c_str();
  auto W = [&](char f) { return width_of(t, f); };
  auto has = [&](char f) { return W(f) != 0; };
  auto vreg = [&](unsigned n) { return (rng() % (200 / (n + 1))) * (n > 1 ? 2 : 1) & 0xFF; };
  bool literal = false;
  auto src9 = [&](unsigned lo, char f, bool lit_ok) {
    std::uint32_t s = rand_src(rng, W(f), lit_ok && !literal);
    if (s == 255) literal = true;
    set(w[0], lo, 9, s);
  };
  const std::string& e = r.enc;
  const bool fp = std::regex_search(r.mnemonic, std::regex("_f(16|32|64)"));
  // Source i's kind letter (emu/isa/gfx9_opcodes.hpp): float modifiers, sext, or none.
  auto kind = [&](int i) -> char {
    const std::string pat = "%" + std::to_string(i);
    const auto at = tpl.find(pat);
    if (at == std::string::npos || at + 3 >= tpl.size()) return 0;
    const char k = tpl[at + 3];
    return (k >= 'a' && k <= 'z') ? k : 0;
  };
  auto fmod_src = [&](int i) { const char k = kind(i); return k == 0 || k == 'h'; };
  if (e == "SOP1" || e == "SOP2" || e == "SOPC" || e == "SOPK") {
    if (has('D')) set(w[0], 16, 7, (rng() % (100 / std::max(1u, W('D')))) * std::max(1u, W('D')));
    if (has('0')) { std::uint32_t s = rand_src(rng, W('0'), true, false); literal |= s == 255; set(w[0], 0, 8, s); }
    if (has('1')) { std::uint32_t s = rand_src(rng, W('1'), !literal, false); literal |= s == 255; set(w[0], 8, 8, s); }
    if (has('K') || has('J')) set(w[0], 0, 16, rng());
    if (literal) w.push_back(rng());
  } else if (e == "SOPP") {
    if (has('J') || has('W')) set(w[0], 0, 16, rng());
  } else if (e == "SMEM") {
    set(w[0], 6, 7, (rng() % 24) * 4);
    set(w[0], 0, 6, rng() % 48);
    set(w[0], 16, 1, rng() % 2);                 // glc
    const unsigned mode = rng() % 3;             // imm, SGPR offset, SGPR + imm
    set(w[0], 17, 1, mode != 1);
    set(w[0], 14, 1, mode != 0);
    w[1] = mode == 1 ? rng() % 100 : (rng() & 0x1FFFFF);
    if (mode != 0) set(w[1], 25, 7, rng() % 100);
  } else if (e == "VOP1" || e == "VOP2" || e == "VOPC") {
    if (has('D')) set(w[0], 17, 8, vreg(W('D')));
    if (has('0')) src9(0, '0', true);
    if (has('1')) set(w[0], 9, 8, vreg(W('1')));
    if (literal || has('L')) w.push_back(rng());
  } else if (e == "VOP3" || e == "VOP3P") {
    if (has('D')) set(w[0], 0, 8, vreg(W('D')));
    if (has('S')) set(w[0], 8, 7, (rng() % 50) * 2);
    for (int i = 0; i < 3; ++i)
      if (has(char('0' + i))) {
        std::uint32_t s = rand_src(rng, W(char('0' + i)), false);
        set(w[1], 9 * i, 9, s);
      }
    for (int i = 0; i < 3; ++i)  // neg (sext for an integer source of a float op)
      if (e == "VOP3P" || fmod_src(i) || kind(i) == 's' || kind(i) == 't') set(w[1], 29 + i, 1, rng() % 2);
    if (e == "VOP3P") {
      set(w[0], 8, 3, rng() % 8);  // neg_hi
      set(w[0], 11, 3, rng() % 8);  // op_sel
      set(w[0], 14, 1, rng() % 2);
      set(w[1], 27, 2, rng() % 4);  // op_sel_hi
    } else if (!has('S')) {
      for (int i = 0; i < 3; ++i)
        if (fmod_src(i) && fp) set(w[0], 8 + i, 1, rng() % 2);  // abs
    }
    if (fp) set(w[1], 27, 2, rng() % 4);  // omod
    set(w[0], 15, 1, rng() % 4 == 0);    // clamp
  } else if (e.starts_with("SDWA")) {
    const bool vopc = e == "SDWAC";
    if (has('D') && !vopc) set(w[0], 17, 8, vreg(1));
    if (has('1')) set(w[0], 9, 8, vreg(1));
    const bool s0 = rng() % 3 == 0;
    w[1] = s0 ? (rng() % 100) | 1u << 23 : rng() % 200;
    if (vopc) { if (rng() % 2) set(w[1], 8, 7, (rng() % 50) * 2), set(w[1], 15, 1, 1); }
    else {
      set(w[1], 8, 3, rng() % 7); set(w[1], 11, 2, rng() % 3);
      if (fp) set(w[1], 13, 3, rng() % 8);  // clamp, omod
    }
    set(w[1], 16, 3, rng() % 7);
    if (has('1')) set(w[1], 24, 3, rng() % 7);
    for (int i = 0; i < 2; ++i) {
      if (!has(char('0' + i))) continue;
      if (fmod_src(i) && fp) set(w[1], 20 + 8 * i, 2, rng() % 4);  // neg, abs
      else set(w[1], 19 + 8 * i, 1, rng() % 2);                     // sext
    }
  } else if (e == "DS") {
    if (has('A')) set(w[1], 0, 8, vreg(1));
    if (has('B')) set(w[1], 8, 8, vreg(W('B')));
    if (has('C')) set(w[1], 16, 8, vreg(W('C')));
    if (has('D')) set(w[1], 24, 8, vreg(W('D')));
    set(w[0], 0, 16, rng());
    set(w[0], 16, 1, rng() % 8 == 0);  // gds
  } else if (e == "FLAT" || e == "GLOBAL" || e == "SCRATCH") {
    if (has('A') && !(e == "SCRATCH" && !(w[0] >> 13 & 1) && tg == g9::target::gfx942)) set(w[1], 0, 8, vreg(2));
    if (has('B')) set(w[1], 8, 8, vreg(W('B')));
    if (has('D')) set(w[1], 24, 8, vreg(W('D')));
    set(w[0], 0, 13, e == "FLAT" ? rng() % 4096 : rng());
    set(w[0], 16, 2, rng() % 4);   // glc, slc
    set(w[0], 25, 1, rng() % 2);   // sc1 / scc
    if (e == "GLOBAL" && rng() % 2) set(w[1], 16, 7, (rng() % 50) * 2);
    if (e == "SCRATCH" && rng() % 2) set(w[1], 16, 7, rng() % 100), set(w[1], 0, 8, 0);
  } else if (e == "MUBUF") {
    if (has('B')) set(w[1], 8, 8, vreg(W('B')));
    set(w[1], 16, 5, rng() % 25);
    set(w[1], 24, 8, rand_src(rng, 1, false, false));
    set(w[0], 12, 2, rng() % 4);    // offen, idxen
    set(w[1], 0, 8, vreg(2));
    set(w[0], 0, 12, rng());
    set(w[0], 14, 1, rng() % 2);
    set(w[0], 17, 1, rng() % 2);
    set(w[0], 15, 1, rng() % 2);
  }
  return w;
}

}  // namespace

TEST_CASE("gfx9 decoder: operands and modifiers print as llvm-mc-19 disassembles them (random fields, every row)") {
  for (const target_case tc : {target_case{"gfx90a", g9::target::gfx90a}, target_case{"gfx942", g9::target::gfx942}}) {
    const std::string mcpu = tc.mcpu;
    CAPTURE(mcpu);
    std::vector<std::string> extra;
    const std::vector<row> rows = enumerate(tc.mcpu, extra, tc.tg);
    std::mt19937 rng(1234);
    std::vector<words> batch;
    std::vector<const row*> of;
    std::map<const row*, int> seen;
    std::vector<const row*> implemented;
    for (const row& r : rows) {
      const g9::insn d = g9::decode(r.base.data(), static_cast<unsigned>(r.base.size()), tc.tg);
      if (d.valid() && aqueduct::emu::isa::gfx9_detail::map_row(d.entry).o != aqueduct::emu::isa::op::none)
        implemented.push_back(&r);
      if (!d.valid() || !template_is_operands_only(g9::detail::operand_template(d).c_str())) continue;
      if (r.mnemonic == "ds_swizzle_b32") continue;  // LLVM prints its offset as a swizzle(...) pattern (not executed)
      batch.push_back(r.base), of.push_back(&r);  // the probe itself (LLVM accepts it), then random fields
      for (int k = 0; k < 8; ++k) batch.push_back(mutate(r, d, rng, tc.tg)), of.push_back(&r);
    }
    const auto res = llvm_mc(tc.mcpu, batch);
    int compared = 0, bad = 0;
    for (std::size_t i = 0; i < batch.size(); ++i) {
      if (!res[i] || res[i]->find("/*") != std::string::npos) continue;  // LLVM rejects this combination
      words padded = batch[i];  // what LLVM saw: the probe and the s_nop padding after it
      padded.insert(padded.end(), 3, 0xBF800000u);
      const g9::insn d = g9::decode(padded.data(), static_cast<unsigned>(padded.size()), tc.tg);
      const std::string ours = g9::disassemble(d, tc.tg);
      ++compared;
      ++seen[of[i]];
      if (ours != *res[i] && ++bad <= 400) {
        std::string hex;
        for (auto x : batch[i]) { char b[12]; std::snprintf(b, sizeof b, "%08x ", x); hex += b; }
        FAIL_CHECK(of[i]->enc << " " << hex << "\n  llvm: " << *res[i] << "\n  ours: " << ours);
      }
    }
    MESSAGE(mcpu << ": " << compared << " random instructions compared");
    CHECK(compared > 5000);
    CHECK(bad == 0);
    // Every implemented opcode (one the interpreter executes) was compared in full.
    for (const row* r : implemented)
      if (seen[r] == 0) FAIL_CHECK("implemented " << r->mnemonic << " (" << r->enc << " " << r->op << ") was never compared with LLVM");
    MESSAGE(mcpu << ": " << implemented.size() << " implemented opcodes, each compared with LLVM");
  }
}

// ---------------------------------------------------------------------------- coverage report
// docs/isa-coverage.md's gfx90a and gfx942 sections: per encoding, how many of LLVM's opcodes
// map onto an operation the interpreter executes, and the names of the others (they fault
// naming themselves). AQUEDUCT_WRITE_COVERAGE=1 rewrites the sections.
namespace {

template <std::size_t N>
void coverage_row(std::string& out, const char* enc, const g9::op_entry (&t)[N], g9::target tg, unsigned min_op = 0,
                  unsigned max_op = 0xFFFF) {
  unsigned impl = 0;
  std::vector<std::string> missing;
  for (const g9::op_entry& e : t) {
    if (!(e.targets & static_cast<std::uint8_t>(tg)) || e.op < min_op || e.op > max_op) continue;
    std::string name = e.name;
    if (name.ends_with("_e32")) name.resize(name.size() - 4);
    if (aqueduct::emu::isa::gfx9_detail::map_row(&e).o != aqueduct::emu::isa::op::none) ++impl;
    else missing.push_back(name);
  }
  out += "| " + std::string(enc) + " | " + std::to_string(impl) + " | " + std::to_string(missing.size()) + " | ";
  for (std::size_t i = 0; i < missing.size(); ++i) out += (i ? ", " : "") + missing[i];
  out += " |\n";
}

std::string coverage_section(const char* name, g9::target tg) {
  std::string s = "<!-- " + std::string(name) + " -->\n## " + name + "\n\n";
  s += "From emu/isa/gfx9_opcodes.hpp and the operation map of emu/isa/gfx9.hpp (tests/emu/isa_gfx9_decode.cpp). "
       "VOP3 counts the VOP3-only opcodes; the VOP3 and SDWA forms of VOP1/VOP2/VOPC opcodes follow their 32-bit "
       "entries, and so do the DPP forms of VOP1/VOP2 opcodes (DPP compares and 64-bit operations are refused); MTBUF, MIMG and EXP are not decoded (illegal).\n\n";
  s += "| encoding | implemented | not implemented | not implemented (names) |\n|---|---|---|---|\n";
  coverage_row(s, "SOP1", g9::sop1_ops, tg);
  coverage_row(s, "SOP2", g9::sop2_ops, tg);
  coverage_row(s, "SOPK", g9::sopk_ops, tg);
  coverage_row(s, "SOPC", g9::sopc_ops, tg);
  coverage_row(s, "SOPP", g9::sopp_ops, tg);
  coverage_row(s, "SMEM", g9::smem_ops, tg);
  coverage_row(s, "VOP1", g9::vop1_ops, tg);
  coverage_row(s, "VOP2", g9::vop2_ops, tg);
  coverage_row(s, "VOPC", g9::vopc_ops, tg);
  coverage_row(s, "VOP3", g9::vop3_ops, tg, 0, 0x37F);
  coverage_row(s, "VOP3P", g9::vop3p_ops, tg);
  coverage_row(s, "DS", g9::ds_ops, tg);
  coverage_row(s, "FLAT", g9::flat_ops, tg);
  coverage_row(s, "GLOBAL", g9::global_ops, tg);
  coverage_row(s, "SCRATCH", g9::scratch_ops, tg);
  coverage_row(s, "MUBUF", g9::mubuf_ops, tg);
  s += "<!-- /" + std::string(name) + " -->\n";
  return s;
}

}  // namespace

TEST_CASE("docs/isa-coverage.md lists the gfx90a and gfx942 opcodes that are implemented and those that are not") {
  const std::string path = AQUEDUCT_TEST_COVERAGE_DOC;
  std::string doc = slurp(path);
  REQUIRE_MESSAGE(!doc.empty(), path);
  const bool write = std::getenv("AQUEDUCT_WRITE_COVERAGE") != nullptr;
  for (const auto& [name, tg] : {std::pair{"gfx90a", g9::target::gfx90a}, std::pair{"gfx942", g9::target::gfx942}}) {
    CAPTURE(name);
    const std::string want = coverage_section(name, tg);
    const std::string open = "<!-- " + std::string(name) + " -->", close = "<!-- /" + std::string(name) + " -->\n";
    const auto a = doc.find(open), b = doc.find(close);
    if (write) {
      if (a != std::string::npos && b != std::string::npos) doc.replace(a, b + close.size() - a, want);
      else doc += "\n" + want;
      continue;
    }
    REQUIRE_MESSAGE(a != std::string::npos, "no " << open << " section in " << path << " (run with AQUEDUCT_WRITE_COVERAGE=1)");
    REQUIRE(b != std::string::npos);
    CHECK_MESSAGE(doc.substr(a, b + close.size() - a) == want,
                  path << " is stale for " << name << " (run this test with AQUEDUCT_WRITE_COVERAGE=1); expected:\n" << want);
  }
  if (write) std::ofstream(path) << doc;
}

}  // namespace AQ_UNITY_ID
