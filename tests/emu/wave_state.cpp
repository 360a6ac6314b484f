// emu/wave_state.hpp: the initial registers must be where clang-19's code looks for them.
// Small kernels are built at test time for several targets; for each, the kernel descriptor is
// read from the linked ELF, the wave state is built from it, and the registers the kernel's own
// disassembly (llvm-objdump-19) reads — kernarg pointer pair, dispatch pointer pair, workgroup
// id SGPR or TTMP — must hold the values the dispatch gave. Plus fixed cases from the spec's
// measured descriptors (spec/code-objects.md §3.5).
#include <aqueduct/emu/wave_state.hpp>
#include <aqueduct/emu/workgroup_executor.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

namespace abi = aqueduct::abi;
namespace emu = aqueduct::emu;
namespace arch = aqueduct::arch;

namespace {

const char* source = R"(
__kernel void wgx(__global uint *out) { *out = __builtin_amdgcn_workgroup_id_x(); }
__kernel void wgy(__global uint *out) { *out = __builtin_amdgcn_workgroup_id_y(); }
__kernel void wgz(__global uint *out) { *out = __builtin_amdgcn_workgroup_id_z(); }
__kernel void dptr(__global uint *out) { *out = ((__constant uint *)__builtin_amdgcn_dispatch_ptr())[3]; }
)";

struct tmp_dir {
  std::string path;
  tmp_dir() {
    char t[] = "/tmp/aq-ws-XXXXXX";
    REQUIRE(mkdtemp(t) != nullptr);
    path = t;
    std::ofstream(path + "/w.cl") << source;
  }
  ~tmp_dir() { std::system(("rm -rf " + path).c_str()); }
};

std::string read_text(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

template <class T>
T rd(const std::string& b, std::size_t off) {
  T v{};
  REQUIRE(off + sizeof(T) <= b.size());
  std::memcpy(&v, b.data() + off, sizeof v);
  return v;
}

// 64 bytes at symbol `name` (ELF64 LE, via .symtab).
abi::kernel_descriptor kd_of(const std::string& elf, const std::string& name) {
  const auto shoff = rd<std::uint64_t>(elf, 0x28);
  const auto shentsize = rd<std::uint16_t>(elf, 0x3A), shnum = rd<std::uint16_t>(elf, 0x3C);
  auto sh64 = [&](unsigned i, unsigned o) { return rd<std::uint64_t>(elf, shoff + std::size_t(i) * shentsize + o); };
  auto sh32 = [&](unsigned i, unsigned o) { return rd<std::uint32_t>(elf, shoff + std::size_t(i) * shentsize + o); };
  for (unsigned i = 0; i < shnum; ++i) {
    if (sh32(i, 4) != 2) continue;  // SHT_SYMTAB
    const auto off = sh64(i, 0x18), size = sh64(i, 0x20);
    const auto stroff = sh64(sh32(i, 0x28), 0x18);
    for (std::uint64_t s = off; s + 24 <= off + size; s += 24) {
      if (name != elf.c_str() + stroff + rd<std::uint32_t>(elf, s)) continue;
      const auto shndx = rd<std::uint16_t>(elf, s + 6);
      const auto value = rd<std::uint64_t>(elf, s + 8);
      abi::kernel_descriptor kd;
      const auto fo = sh64(shndx, 0x18) + (value - sh64(shndx, 0x10));
      REQUIRE(fo + 64 <= elf.size());
      std::memcpy(&kd, elf.data() + fo, 64);
      return kd;
    }
  }
  FAIL("no symbol " << name);
  return {};
}

// The disassembly of one kernel function.
std::string body_of(const std::string& dis, const std::string& kernel) {
  const auto b = dis.find("<" + kernel + ">:");
  REQUIRE(b != std::string::npos);
  const auto e = dis.find("s_endpgm", b);
  return dis.substr(b, e - b);
}

std::uint32_t reg_value(const emu::wave_state& w, const std::string& kind, unsigned n) {
  return kind == "ttmp" ? w.ttmp.at(n) : w.sgpr.at(n);
}

}  // namespace

TEST_CASE("wave state registers are where clang-19 code reads them") {
  struct target {
    const char* name;
    arch::family fam;
  };
  const target targets[] = {{"gfx900", arch::family::gfx9},      {"gfx90a", arch::family::gfx90a},
                            {"gfx942", arch::family::gfx94x},    {"gfx1030", arch::family::gfx10_3},
                            {"gfx1100", arch::family::gfx11},    {"gfx1101", arch::family::gfx11},
                            {"gfx1200", arch::family::gfx12}};
  tmp_dir dir;
  const std::regex load_re(R"(s_load_\w+\s+s\[?\d+(?::\d+\])?,\s*s\[(\d+):\d+\],\s*(0x[0-9a-f]+|null))");
  const std::regex mov_re(R"(mov_b32(?:_e32)?\s+v\d+,\s*(s|ttmp)(\d+))");
  int checked = 0;
  for (const auto& t : targets) {
    CAPTURE(std::string(t.name));
    const std::string base = dir.path + "/w-" + t.name;
    REQUIRE(std::system(("clang-19 -x cl -cl-std=CL2.0 --target=amdgcn-amd-amdhsa -nogpulib -O2 -mcpu=" +
                         std::string(t.name) + " -c " + dir.path + "/w.cl -o " + base + ".o && ld.lld-19 -shared " +
                         base + ".o -o " + base + ".hsaco && llvm-objdump-19 -d " + base + ".hsaco > " + base + ".dis")
                            .c_str()) == 0);
    const std::string elf = read_text(base + ".hsaco"), dis = read_text(base + ".dis");

    abi::kernel_dispatch_packet p{};
    p.setup = 3;
    p.workgroup_size_x = p.workgroup_size_y = p.workgroup_size_z = 1;
    p.grid_size_x = 10;
    p.grid_size_y = 10;
    p.grid_size_z = 10;
    p.kernarg_address = 0x0000'7f12'3456'7800ull;
    emu::dispatch_inputs in;
    in.packet_va = 0x0000'7e00'0000'0140ull;
    in.queue_va = 0x0000'7e00'1000'0000ull;
    in.dispatch_id = 77;
    in.scratch_srd = {0x11111111u, 0x22222222u, 0x33333333u, 0x44444444u};
    const std::uint64_t linear = 3 + 10 * (5 + 10 * 7);  // workgroup (3, 5, 7)
    const auto g = emu::geometry_of(p, linear);
    REQUIRE(g.id == std::array<std::uint32_t, 3>{3, 5, 7});

    for (const char* k : {"wgx", "wgy", "wgz", "dptr"}) {
      CAPTURE(std::string(k));
      const auto kd = kd_of(elf, std::string(k) + ".kd");
      const auto waves = emu::build_workgroup_waves(kd, p, in, t.fam, g);
      REQUIRE(waves.size() == 1);
      const auto& w = waves[0];
      const std::string body = body_of(dis, k);
      // Every scalar load's base pair: kernarg ptr (offset 0/null) or dispatch ptr (offset 0xc).
      bool saw_kernarg = false;
      for (std::sregex_iterator it(body.begin(), body.end(), load_re), end; it != end; ++it) {
        const unsigned base_sgpr = static_cast<unsigned>(std::stoul((*it)[1]));
        const std::string off = (*it)[2];
        if (off == "0xc") {
          CHECK(w.sgpr64(base_sgpr) == in.packet_va);  // dispatch ptr
        } else {
          CHECK(w.sgpr64(base_sgpr) == p.kernarg_address);
          saw_kernarg = true;
        }
        ++checked;
      }
      CHECK(saw_kernarg);
      if (std::string(k) == "dptr") continue;
      const std::uint32_t expect = std::string(k) == "wgx" ? 3 : std::string(k) == "wgy" ? 5 : 7;
      if (body.find("ttmp7, 16") != std::string::npos) {  // gfx12: Z = TTMP7[31:16]
        CHECK((w.ttmp[7] >> 16) == expect);
        ++checked;
        continue;
      }
      std::smatch m;
      REQUIRE(std::regex_search(body, m, mov_re));
      CHECK(reg_value(w, m[1], static_cast<unsigned>(std::stoul(m[2]))) == expect);
      ++checked;
    }
  }
  CHECK(checked >= 7 * 7);
}

TEST_CASE("spec-measured descriptors: vadd on gfx900 and gfx1100 (spec/code-objects.md §3.5)") {
  abi::kernel_dispatch_packet p{};
  p.setup = 1;
  p.workgroup_size_x = 256;
  p.workgroup_size_y = p.workgroup_size_z = 1;
  p.grid_size_x = 1000;
  p.grid_size_y = p.grid_size_z = 1;
  p.kernarg_address = 0x5000;
  emu::dispatch_inputs in;
  in.scratch_srd = {1, 2, 3, 4};

  // gfx900: properties 0x0009 (private segment buffer + kernarg), rsrc2 0x8c (USER_SGPR 6,
  // workgroup id X): SRD s[0:3], kernarg s[4:5], workgroup id X in s6; wave64.
  abi::kernel_descriptor kd{};
  kd.kernel_code_properties = 0x0009;
  kd.compute_pgm_rsrc2 = 0x8c;
  auto g = emu::geometry_of(p, 3);  // last workgroup: 1000 - 768 = 232 work-items
  CHECK(g.size[0] == 232);
  auto waves = emu::build_workgroup_waves(kd, p, in, arch::family::gfx9, g);
  REQUIRE(waves.size() == 4);  // ceil(232 / 64)
  CHECK(waves[0].sgpr[0] == 1);
  CHECK(waves[0].sgpr[3] == 4);
  CHECK(waves[0].sgpr64(4) == 0x5000);
  CHECK(waves[0].sgpr[6] == 3);
  CHECK(waves[3].active_lanes == 232 - 192);
  CHECK(waves[3].exec == (std::uint64_t(1) << 40) - 1);
  CHECK(waves[1].v0[5] == 64 + 5);  // work-item id X, unpacked

  // gfx1100 wave32: properties 0x0408, rsrc2 0x9e (USER_SGPR 15: padded), workgroup id X in s15.
  kd.kernel_code_properties = 0x0408;
  kd.compute_pgm_rsrc2 = 0x9e;
  waves = emu::build_workgroup_waves(kd, p, in, arch::family::gfx11, g);
  REQUIRE(waves.size() == 8);  // ceil(232 / 32)
  CHECK(waves[0].wave_size == 32);
  CHECK(waves[0].sgpr64(0) == 0x5000);
  CHECK(waves[0].system_sgpr_first == 15);
  CHECK(waves[0].sgpr[15] == 3);
  CHECK(waves[7].active_lanes == 232 - 224);

  // Same descriptor on a wave64-only family: the wave32 bit is ignored by the size rule.
  CHECK(emu::wave_size_of(kd, arch::family::gfx9) == 64);
}

TEST_CASE("packed vs separate work-item ids, workgroup info, kernarg preload") {
  abi::kernel_dispatch_packet p{};
  p.setup = 3;
  p.workgroup_size_x = 4;
  p.workgroup_size_y = 4;
  p.workgroup_size_z = 4;
  p.grid_size_x = p.grid_size_y = p.grid_size_z = 4;
  p.kernarg_address = 0x9000;
  abi::kernel_descriptor kd{};
  namespace r2 = abi::compute_pgm_rsrc2;
  kd.kernel_code_properties = abi::kernel_code_properties::enable_sgpr_kernarg_segment_ptr::mask;
  // kernarg preload: 3 dwords from offset 1 (gfx90a-style), after the kernarg ptr: s2..s4.
  kd.kernarg_preload = static_cast<std::uint16_t>(abi::kernarg_preload::length::put(3) | abi::kernarg_preload::offset::put(1));
  kd.compute_pgm_rsrc2 = r2::user_sgpr_count::put(5) | r2::enable_sgpr_workgroup_id_x::put(1) |
                         r2::enable_sgpr_workgroup_info::put(1) | r2::enable_vgpr_workitem_id::put(2);
  const std::uint32_t kernarg[5] = {10, 11, 12, 13, 14};
  emu::dispatch_inputs in;
  in.kernarg_host = kernarg;
  in.kernarg_dwords = 5;
  const auto g = emu::geometry_of(p, 0);
  const auto packed = emu::build_workgroup_waves(kd, p, in, arch::family::gfx90a, g);
  REQUIRE(packed.size() == 1);
  CHECK(packed[0].sgpr[2] == 11);
  CHECK(packed[0].sgpr[3] == 12);
  CHECK(packed[0].sgpr[4] == 13);
  CHECK(packed[0].sgpr[5] == 0);            // workgroup id X
  CHECK(packed[0].sgpr[6] == 0x80000001u);  // first wave, 1 wave in the workgroup
  // lane 4*4*2 + 4*3 + 1 = 45 → (x, y, z) = (1, 3, 2): v0 = 1 | 3 << 10 | 2 << 20.
  CHECK(packed[0].v0[45] == (1u | (3u << 10) | (2u << 20)));
  const auto split = emu::build_workgroup_waves(kd, p, in, arch::family::gfx10_3, g);
  CHECK(split[0].wave_size == 64);
  CHECK(split[0].v0[45] == 1);
  CHECK(split[0].v1[45] == 3);
  CHECK(split[0].v2[45] == 2);
}

// Issue 13 bug 7: the workgroup count was rounded up in 32 bits, so grid 0xFFFFFFFF with workgroup
// 1024 gave 0 workgroups (and a division by zero for the workgroup id). HSA: ceil(grid / wg)
// workgroups, the last one partial: 0xFFFFFFFF = 4,194,303 x 1024 + 1023.
TEST_CASE("geometry_of: grid near 2^32 rounds up in 64 bits; 2^64 workgroups are reported") {
  abi::kernel_dispatch_packet p{};
  p.grid_size_x = 0xFFFFFFFFu;
  p.grid_size_y = p.grid_size_z = 1;
  p.workgroup_size_x = 1024;
  p.workgroup_size_y = p.workgroup_size_z = 1;
  const auto first = emu::geometry_of(p, 0);
  CHECK(first.count[0] == 4'194'304u);
  CHECK(first.size[0] == 1024u);
  const auto last = emu::geometry_of(p, 4'194'303);
  CHECK(last.id[0] == 4'194'303u);
  CHECK(last.size[0] == 1023u);
  std::uint64_t total = 0;
  CHECK(emu::total_workgroups(first, total));
  CHECK(total == 4'194'304u);
  p.grid_size_x = p.grid_size_y = 1u << 31;  // 2^31 x 2^31 x 4 single-item workgroups = 2^64
  p.grid_size_z = 4;
  p.workgroup_size_x = 1;
  CHECK_FALSE(emu::total_workgroups(emu::geometry_of(p, 0), total));
  p.grid_size_z = 3;  // 3 x 2^62 fits
  CHECK(emu::total_workgroups(emu::geometry_of(p, 0), total));
  CHECK(total == 3ull << 62);
}

// dispatch_plan::geometry (what the engines call per workgroup) keeps the first row's geometry
// from try_total_workgroups; every workgroup of 1-, 2- and 3-D grids with partial last
// workgroups must get what the HSA definition gives (written out here: x fastest, the last
// workgroup of a dimension holds the remainder), and a packet changed after counting is computed
// afresh.
TEST_CASE("dispatch_plan::geometry: every workgroup as HSA defines it, first row from the kept counts") {
  struct shape {
    std::uint32_t grid[3], wg[3];
  };
  for (const shape s : {shape{{1, 1, 1}, {1, 1, 1}}, shape{{1000, 1, 1}, {256, 1, 1}}, shape{{7, 1, 1}, {64, 1, 1}},
                        shape{{10, 9, 1}, {4, 4, 1}}, shape{{5, 6, 7}, {2, 4, 3}}, shape{{64, 3, 2}, {64, 1, 1}}}) {
    emu::dispatch_plan plan;
    plan.pkt.grid_size_x = s.grid[0], plan.pkt.grid_size_y = s.grid[1], plan.pkt.grid_size_z = s.grid[2];
    plan.pkt.workgroup_size_x = s.wg[0], plan.pkt.workgroup_size_y = s.wg[1], plan.pkt.workgroup_size_z = s.wg[2];
    std::uint64_t total = 0;
    REQUIRE(plan.try_total_workgroups(total));
    std::uint32_t count[3];
    for (int d = 0; d < 3; ++d) count[d] = (s.grid[d] + s.wg[d] - 1) / s.wg[d];
    CHECK(total == std::uint64_t(count[0]) * count[1] * count[2]);
    for (std::uint64_t l = 0; l < total; ++l) {
      CAPTURE(s.grid[0]);
      CAPTURE(s.grid[1]);
      CAPTURE(s.grid[2]);
      CAPTURE(l);
      const std::uint32_t id[3] = {std::uint32_t(l % count[0]), std::uint32_t(l / count[0] % count[1]),
                                   std::uint32_t(l / count[0] / count[1])};
      const auto g = plan.geometry(l);
      for (int d = 0; d < 3; ++d) {
        CHECK(g.id[d] == id[d]);
        CHECK(g.count[d] == count[d]);
        CHECK(g.size[d] == std::min(s.wg[d], s.grid[d] - id[d] * s.wg[d]));
      }
    }
  }
  emu::dispatch_plan plan;  // counted for 1000 / 256, then the grid changes to 100 / 64
  plan.pkt.grid_size_x = 1000, plan.pkt.workgroup_size_x = 256;
  plan.pkt.grid_size_y = plan.pkt.grid_size_z = plan.pkt.workgroup_size_y = plan.pkt.workgroup_size_z = 1;
  std::uint64_t total = 0;
  REQUIRE(plan.try_total_workgroups(total));
  plan.pkt.grid_size_x = 100, plan.pkt.workgroup_size_x = 64;
  const auto g = plan.geometry(1);
  CHECK(g.count[0] == 2u);
  CHECK(g.size[0] == 36u);
}

// build_workgroup_waves_into(..., overwrite = true) rewrites waves a build of the same footprint
// left, without zeroing them first: the result must be byte for byte what a build from zero
// gives, for packed and unpacked work-item ids, wave32 and wave64, a partial last wave, and
// inputs (ids, pointers, dispatch id, scratch slot) that all differ from the first build's.
TEST_CASE("build_workgroup_waves_into: an overwrite of the same footprint equals a build from zero") {
  namespace kcp = abi::kernel_code_properties;
  namespace r2 = abi::compute_pgm_rsrc2;
  struct target {
    aqueduct::arch::family fam;
    bool wave32;
  };
  for (const target t : {target{aqueduct::arch::family::gfx10_3, false}, target{aqueduct::arch::family::gfx11, true},
                         target{aqueduct::arch::family::gfx90a, false}, target{aqueduct::arch::family::gfx12, true}}) {
    CAPTURE(static_cast<int>(t.fam));
    abi::kernel_descriptor kd{};
    kd.kernel_code_properties = static_cast<std::uint16_t>(
        kcp::enable_sgpr_private_segment_buffer::mask | kcp::enable_sgpr_dispatch_ptr::mask |
        kcp::enable_sgpr_kernarg_segment_ptr::mask | kcp::enable_sgpr_dispatch_id::mask |
        (t.wave32 ? kcp::enable_wavefront_size32::mask : 0));
    kd.compute_pgm_rsrc2 = r2::enable_private_segment::put(1) | r2::user_sgpr_count::put(12) |
                           r2::enable_sgpr_workgroup_id_x::put(1) | r2::enable_sgpr_workgroup_id_y::put(1) |
                           r2::enable_sgpr_workgroup_id_z::put(1) | r2::enable_sgpr_workgroup_info::put(1) |
                           r2::enable_vgpr_workitem_id::put(2);
    abi::kernel_dispatch_packet p{};
    p.setup = 3;
    p.workgroup_size_x = 10, p.workgroup_size_y = 5, p.workgroup_size_z = 3;  // 150 items: a partial last wave
    p.grid_size_x = 40, p.grid_size_y = 10, p.grid_size_z = 6;
    p.private_segment_size = 48;
    auto inputs = [](std::uint64_t k) {
      emu::dispatch_inputs in;
      in.packet_va = 0x7e00'0000'0000ull + 64 * k;
      in.queue_va = 0x7e00'1000'0000ull;
      in.dispatch_id = 1000 + k;
      in.scratch_srd = {0x1111u + unsigned(k), 0x2222u, 0x3333u, 0x4444u};
      return in;
    };
    const auto ga = emu::geometry_of(p, 0), gb = emu::geometry_of(p, 1 + 4 * (1 + 2 * 1));  // (0,0,0), (1,1,1)
    REQUIRE(ga.size == gb.size);
    REQUIRE(emu::footprint_of(kd, t.fam, ga) == emu::footprint_of(kd, t.fam, gb));
    std::vector<emu::wave_state> over, fresh;
    p.kernarg_address = 0x1000;
    emu::build_workgroup_waves_into(over, kd, p, inputs(1), t.fam, ga, 0);
    p.kernarg_address = 0x2000;
    emu::build_workgroup_waves_into(over, kd, p, inputs(2), t.fam, gb, 7, true);
    emu::build_workgroup_waves_into(fresh, kd, p, inputs(2), t.fam, gb, 7);
    REQUIRE(over.size() == fresh.size());
    REQUIRE(fresh.size() == (t.wave32 ? 5u : 3u));
    CHECK(fresh.back().active_lanes == 22u);  // 150 - 128 either way
    for (std::size_t w = 0; w < fresh.size(); ++w) {
      CAPTURE(w);
      CHECK(std::memcmp(&over[w], &fresh[w], sizeof(emu::wave_state)) == 0);
    }
  }
}

// A host kernel's waves are built when it first reads them (workgroup_executor, workgroup_context::
// waves): whatever ran on the executor before — a workgroup of another footprint whose kernel
// never read its waves, one of the same footprint with other inputs — what a kernel reads must be
// byte for byte what a build from zero gives (build_workgroup_waves), and reading twice builds once.
TEST_CASE("workgroup_executor: host-kernel waves built on first read equal a build from zero") {
  namespace kcp = abi::kernel_code_properties;
  namespace r2 = abi::compute_pgm_rsrc2;
  struct no_memory final : emu::vm_access {
    [[nodiscard]] bool is_mapped(std::uint64_t, std::uint64_t) const noexcept override { return false; }
  } vm;
  std::vector<emu::wave_state> seen;
  const emu::wave_state* first_data = nullptr;
  bool same_twice = false;
  auto reader = std::make_shared<const emu::host_kernel_fn>([&](emu::workgroup_context& ctx) {
    const auto w = ctx.waves();
    seen.assign(w.begin(), w.end());
    first_data = w.data();
    same_twice = ctx.waves().data() == w.data() && &ctx.wave(0) == w.data();
  });
  auto ignorer = std::make_shared<const emu::host_kernel_fn>([](emu::workgroup_context&) {});
  auto plan_of = [&](std::uint16_t wg_x, std::uint64_t k, std::shared_ptr<const emu::host_kernel_fn> fn) {
    emu::dispatch_plan plan;
    plan.family = aqueduct::arch::family::gfx11;
    plan.kd.kernel_code_properties = static_cast<std::uint16_t>(
        kcp::enable_sgpr_dispatch_ptr::mask | kcp::enable_sgpr_kernarg_segment_ptr::mask |
        kcp::enable_sgpr_dispatch_id::mask | kcp::enable_wavefront_size32::mask);
    plan.kd.compute_pgm_rsrc2 = r2::user_sgpr_count::put(6) | r2::enable_sgpr_workgroup_id_x::put(1) |
                                r2::enable_sgpr_workgroup_info::put(1) | r2::enable_private_segment::put(1);
    plan.pkt.setup = 1;
    plan.pkt.workgroup_size_x = wg_x, plan.pkt.workgroup_size_y = 1, plan.pkt.workgroup_size_z = 1;
    plan.pkt.grid_size_x = 4u * wg_x, plan.pkt.grid_size_y = 1, plan.pkt.grid_size_z = 1;
    plan.pkt.private_segment_size = 16;
    plan.pkt.kernarg_address = 0x1000 * k;
    plan.inputs.packet_va = 0x7e00'0000'0000ull + 64 * k;
    plan.inputs.dispatch_id = 100 + k;
    plan.fn = std::move(fn);
    std::uint64_t total = 0;
    REQUIRE(plan.try_total_workgroups(total));
    return plan;
  };
  auto expect_fresh = [&](const emu::dispatch_plan& plan, std::uint64_t wg) {
    const auto fresh = emu::build_workgroup_waves(plan.kd, plan.pkt, plan.inputs, plan.family, plan.geometry(wg), 0);
    REQUIRE(seen.size() == fresh.size());
    for (std::size_t w = 0; w < fresh.size(); ++w) {
      CAPTURE(w);
      CHECK(std::memcmp(&seen[w], &fresh[w], sizeof(emu::wave_state)) == 0);
    }
    CHECK(same_twice);
  };
  emu::workgroup_executor ex(vm, 0);
  const auto a = plan_of(100, 1, reader);   // 4 wave32 waves, the last partial
  CHECK_FALSE(ex.run(a, 0).has_value());
  expect_fresh(a, 0);
  const auto b = plan_of(40, 2, ignorer);   // another footprint, never read
  CHECK_FALSE(ex.run(b, 3).has_value());
  const auto a2 = plan_of(100, 3, reader);  // a's footprint, other inputs and workgroup
  CHECK_FALSE(ex.run(a2, 2).has_value());
  expect_fresh(a2, 2);
  const auto b2 = plan_of(40, 4, reader);   // b's footprint, read for the first time
  CHECK_FALSE(ex.run(b2, 1).has_value());
  expect_fresh(b2, 1);
  CHECK(first_data != nullptr);
}

}  // namespace AQ_UNITY_ID
