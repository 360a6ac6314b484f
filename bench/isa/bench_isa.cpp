// bench_isa — the ISA interpreter's speed on an arithmetic loop (bench/isa/alu_loop.s, assembled
// for gfx1100 by llvm-mc-19 at build time): wave-instructions per second of one thread, for a
// workgroup of 8 waves, wave32 and wave64. The rate is the interpreter's own count of executed
// wave-instructions over the thread's CPU time (items_per_second), so machine load shows only as
// noise. Issue 14 asks for >= 5 M wave-instructions/s per core.
#include <aqueduct/emu/isa.hpp>

#include <benchmark/benchmark.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace isa = aqueduct::emu::isa;
namespace emu = aqueduct::emu;

namespace {

class flat_vm final : public emu::vm_access {  // one mapped range, no lock
 public:
  flat_vm(const void* p, std::size_t n) : base_(reinterpret_cast<std::uintptr_t>(p)), n_(n) {}
  [[nodiscard]] bool is_mapped(std::uint64_t va, std::uint64_t len) const noexcept override {
    return va >= base_ && va + len <= base_ + n_ && va + len >= va;
  }

 private:
  std::uintptr_t base_;
  std::size_t n_;
};

void alu_loop(benchmark::State& state) {
  const unsigned wave = static_cast<unsigned>(state.range(0));
  std::ifstream in(std::string(AQUEDUCT_BENCH_ISA_DIR) + "/alu_loop_w" + std::to_string(wave) + ".bin", std::ios::binary);
  const std::vector<char> code((std::istreambuf_iterator<char>(in)), {});
  if (code.empty()) {
    state.SkipWithError("alu_loop binary missing");
    return;
  }
  std::vector<std::uint32_t> mem(code.size() / 4 + 128);
  std::uint32_t* at = mem.data() + (64 - (reinterpret_cast<std::uintptr_t>(mem.data()) / 4) % 64);
  std::memcpy(at, code.data(), code.size());
  flat_vm vm(mem.data(), mem.size() * 4);
  isa::interpreter it(vm, isa::gfx11_target);
  std::vector<emu::wave_state> waves(8);
  for (auto& w : waves) w.wave_size = wave, w.exec = wave == 64 ? ~0ull : 0xFFFFFFFFull, w.active_lanes = wave;
  isa::run_params rp;
  rp.entry = reinterpret_cast<std::uintptr_t>(at);
  rp.vgprs = 16;
  std::atomic<std::int64_t> budget{std::int64_t(1) << 50};
  for (auto _ : state) it.run(rp, waves, {}, budget);
  state.SetItemsProcessed(static_cast<std::int64_t>(it.instructions()));
  state.counters["lanes"] = wave;
}
BENCHMARK(alu_loop)->Arg(32)->Arg(64)->Unit(benchmark::kMillisecond)->MeasureProcessCPUTime();

}  // namespace

BENCHMARK_MAIN();
