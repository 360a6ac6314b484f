// bench/isa/bench_isa_targets.cpp — how fast the ISA interpreter runs arithmetic loops: wave-instructions
// per CPU-second of the thread that interprets (the interpreter runs a workgroup on one thread),
// for gfx942 and gfx90a (wave64) and gfx1100 (wave32), with the machine's load average printed
// beside the figures (this machine is shared: the CPU time, not the wall time, is the measure).
// Loops: an f32 FMA/mul/add/min/max chain and an integer hash (shift, xor, mul, add, alignbit),
// each with its scalar loop counter (s_sub/s_cmp/s_cbranch), four waves of all-active lanes.
// The instruction count is the interpreter's own (emu/isa/runner.hpp `instructions()`).
// (bench_isa.cpp is the Google Benchmark one: gfx1100 only, wave32 and wave64.)
// Usage: bench_isa_targets [--iterations N]
#include <aqueduct/emu/isa.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iterator>
#include <string>
#include <unistd.h>
#include <vector>

namespace isa = aqueduct::emu::isa;
namespace emu = aqueduct::emu;

namespace {

// A VM in which the GPU VA is the host address: the code is the only memory the loops touch.
class host_vm final : public emu::vm_access {
 public:
  host_vm(const void* p, std::size_t n) : base_(reinterpret_cast<std::uintptr_t>(p)), size_(n) {}
  [[nodiscard]] bool is_mapped(std::uint64_t va, std::uint64_t len) const noexcept override {
    return va >= base_ && va + len >= va && va + len <= base_ + size_;
  }

 private:
  std::uintptr_t base_;
  std::size_t size_;
};

std::vector<std::uint32_t> assemble(const std::string& src, const char* mcpu) {
  char dir[] = "/tmp/aq-bench-isa-XXXXXX";
  if (!mkdtemp(dir)) std::exit(1);
  const std::string d(dir);
  std::ofstream(d + "/k.s") << ".text\n" << src << "s_endpgm\n";
  const std::string cmd = std::string(AQUEDUCT_BENCH_LLVM_MC) + " -arch=amdgcn -mcpu=" + mcpu + " -filetype=obj " + d +
                          "/k.s -o " + d + "/k.o && " + AQUEDUCT_BENCH_LLVM_OBJCOPY + " -O binary --only-section=.text " +
                          d + "/k.o " + d + "/k.bin";
  if (std::system(cmd.c_str()) != 0) {
    std::fprintf(stderr, "bench_isa_targets: assembling for %s failed: %s\n", mcpu, cmd.c_str());
    std::exit(1);
  }
  std::ifstream f(d + "/k.bin", std::ios::binary);
  const std::vector<char> b((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::system(("rm -rf " + d).c_str());
  std::vector<std::uint32_t> w(b.size() / 4 + 2, 0u);
  std::memcpy(w.data(), b.data(), b.size());
  return w;
}

double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) + double(t.tv_nsec) * 1e-9;
}

std::string load_average() {
  std::ifstream f("/proc/loadavg");
  std::string a, b, c;
  f >> a >> b >> c;
  return a + " " + b + " " + c;
}

}  // namespace

int main(int argc, char** argv) {
  unsigned iterations = 20000;
  for (int i = 1; i < argc; ++i)
    if (!std::strcmp(argv[i], "--iterations") && i + 1 < argc) iterations = static_cast<unsigned>(std::strtoul(argv[++i], nullptr, 0));
  const std::string n = std::to_string(iterations);
  struct loop {
    const char* name;
    std::string src;
  } loops[] = {
      {"f32-fma", "s_mov_b32 s4, " + n + "\nv_mov_b32 v2, 1.0\nv_mov_b32 v3, 0.5\nv_mov_b32 v4, 2.0\nL:\n"
                  "v_fma_f32 v2, v2, v3, v4\nv_mul_f32 v5, v2, v3\nv_add_f32 v6, v5, v4\nv_fmac_f32 v7, v5, v6\n"
                  "v_max_f32 v8, v7, v2\nv_min_f32 v9, v8, v3\ns_sub_u32 s4, s4, 1\ns_cmp_lg_u32 s4, 0\ns_cbranch_scc1 L\n"},
      {"int-hash", "s_mov_b32 s4, " + n + "\ns_mov_b32 s5, 0x7feb352d\nv_mov_b32 v2, v0\nL:\n"
                   "v_lshrrev_b32 v3, 16, v2\nv_xor_b32 v2, v2, v3\nv_mul_lo_u32 v2, v2, s5\nv_add_nc_u32 v4, v2, v0\n"
                   "v_xad_u32 v2, v2, v4, v3\nv_alignbit_b32 v2, v2, v2, 27\ns_sub_u32 s4, s4, 1\ns_cmp_lg_u32 s4, 0\n"
                   "s_cbranch_scc1 L\n"},
  };
  struct tgt {
    const char* mcpu;
    const isa::target& t;
    unsigned lanes;
  } targets[] = {{"gfx942", isa::gfx942_target, 64}, {"gfx90a", isa::gfx90a_target, 64}, {"gfx1100", isa::gfx11_target, 32}};
  std::printf("bench_isa_targets: %u loop iterations, 4 waves, load average %s\n", iterations, load_average().c_str());
  for (const tgt& t : targets) {
    for (const loop& l : loops) {
      std::string src = l.src;
      if (t.lanes == 64) {  // gfx9 spells the carry-less add v_add_u32
        const auto at = src.find("v_add_nc_u32");
        if (at != std::string::npos) src.replace(at, 12, "v_add_u32");
      }
      const std::vector<std::uint32_t> code = assemble(src, t.mcpu);
      host_vm vm(code.data(), code.size() * 4);
      isa::interpreter it(vm, t.t);
      std::vector<emu::wave_state> waves(4);
      for (emu::wave_state& ws : waves) {
        ws.wave_size = t.lanes;
        ws.exec = t.lanes == 64 ? ~0ull : 0xFFFFFFFFull;
        for (unsigned lane = 0; lane < 64; ++lane) ws.v0[lane] = lane;
      }
      isa::run_params p;
      p.entry = reinterpret_cast<std::uint64_t>(code.data());
      p.vgprs = 16;
      p.rsrc1 = 1u << 23;  // IEEE mode
      std::atomic<std::int64_t> budget{std::int64_t(1) << 40};
      const double c0 = thread_cpu_seconds();
      try {
        it.run(p, waves, {}, budget);
      } catch (const isa::isa_fault& f) {
        std::fprintf(stderr, "bench_isa_targets: %s %s: %s\n", t.mcpu, l.name, f.what.c_str());
        return 1;
      }
      const double cpu = thread_cpu_seconds() - c0;
      std::printf("%-8s %-9s wave%-2u %10llu wave-instructions in %.3f s CPU: %6.2f M wave-instructions/s per core\n", t.mcpu,
                  l.name, t.lanes, static_cast<unsigned long long>(it.instructions()), cpu,
                  double(it.instructions()) / cpu / 1e6);
    }
  }
  return 0;
}
