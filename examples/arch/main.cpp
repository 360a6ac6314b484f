// aqueduct-arch — prints what aqueduct knows about AMD GPU architectures: the processor table
// (gfx_target_version, EF_AMDGPU_MACH, traits family, generic target, wave size, SDMA engine,
// doorbell width, GFX11 PM4 PRIV policy) and the CWSR sizes KFD computes for a few real GPUs,
// spelled as in /sys/class/kfd/kfd/topology/nodes/N/properties.
//
// usage: aqueduct-arch                 the table and the CWSR examples
//        aqueduct-arch <gfxNNNN|gfx_target_version>   one processor, with its compile-time target
#include <aqueduct/arch.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace arch = aqueduct::arch;

namespace {

std::string_view priv_policy(const arch::processor_info& p) {
  if (p.is_generic) return "-";
  if (p.fam != arch::family::gfx11) return "never";
  const bool one = arch::needs_pm4_priv(p.gfx_target_version, 1);
  const bool two = arch::needs_pm4_priv(p.gfx_target_version, 2);
  if (one && two) return "always";
  if (two) return "if arrays>1";
  return "never";
}

void print_table() {
  std::printf("%-16s %8s %5s %-8s %-16s %4s %5s %8s %s\n", "processor", "gfx_ver", "mach", "family", "generic",
              "wave", "sdma", "doorbell", "pm4 PRIV");
  for (const auto& p : arch::processors()) {
    char ver[16] = "-";
    if (!p.is_generic) std::snprintf(ver, sizeof ver, "%u", p.gfx_target_version);
    char sdma[16] = "-";  // "%u.%u" of a u32 needs up to 12 bytes
    if (p.sdma_version) std::snprintf(sdma, sizeof sdma, "%u.%u", p.sdma_version / 10, p.sdma_version % 10);
    const std::string generic = p.generic.empty() ? std::string("-") : std::string(p.generic);
    std::string last(priv_policy(p));
    if (!p.in_llvm19) last.resize(13, ' '), last += "(not in LLVM 19)";
    std::printf("%-16.*s %8s %#5x %-8.*s %-16s %4u %5s %6u B %s\n", static_cast<int>(p.name.size()), p.name.data(), ver,
                p.ef_mach, static_cast<int>(arch::family_name(p.fam).size()), arch::family_name(p.fam).data(),
                generic.c_str(), p.wave_size, sdma, p.doorbell_bytes, last.c_str());
  }
}

struct gpu {
  const char* name;
  arch::cwsr_inputs in;
};

void print_cwsr(const gpu& g) {
  const auto s = arch::kernel_cwsr_sizes(g.in);
  const auto target = arch::visit_family(g.in.gfx_target_version, g.in.simd_arrays_per_engine,
                                         [](auto t) { return decltype(t)::name(); });
  std::printf("\n%s (gfx_target_version %u, simd_count %u, num_xcc %u, array_count %u, target %s)\n", g.name,
              g.in.gfx_target_version, g.in.simd_count, g.in.num_xcc, g.in.array_count,
              target ? target->c_str() : "unsupported");
  std::printf("  cwsr_size %u\n  ctl_stack_size %u\n", s.cwsr_size, s.ctl_stack_size);
  std::printf("  # not exported by sysfs, computed by userspace:\n");
  std::printf("  debug_memory_size %u\n  eop_buffer_size %u\n", s.debug_memory_size, s.eop_buffer_size);
  std::printf("  # bytes to map at ctx_save_restore_address: %llu\n",
              static_cast<unsigned long long>(arch::cwsr_total_allocation(s.cwsr_size, s.debug_memory_size, g.in.num_xcc)));
}

int show_one(std::string_view what) {
  const arch::processor_info* p = arch::find_processor(what);
  if (!p) p = arch::find_processor_by_version(static_cast<std::uint32_t>(std::strtoul(std::string(what).c_str(), nullptr, 10)));
  if (!p) {
    std::fprintf(stderr, "aqueduct-arch: unknown processor '%.*s'\n", static_cast<int>(what.size()), what.data());
    return 1;
  }
  std::printf("%.*s: gfx_target_version %u, EF_AMDGPU_MACH %#x, family %.*s, wave%u, xnack %s, sramecc %s\n",
              static_cast<int>(p->name.size()), p->name.data(), p->gfx_target_version, p->ef_mach,
              static_cast<int>(arch::family_name(p->fam).size()), arch::family_name(p->fam).data(), p->wave_size,
              p->xnack ? "yes" : "no", p->sramecc ? "yes" : "no");
  if (p->is_generic) return 0;
  // simd_arrays_per_engine matters only on gfx1103 (spec/kfd.md §4).
  const std::uint32_t max_arrays = p->gfx_target_version == 110003 ? 2 : 1;
  for (std::uint32_t arrays = 1; arrays <= max_arrays; ++arrays) {
    auto r = arch::visit_family(p->gfx_target_version, arrays, [arrays](auto t) {
      using T = decltype(t);
      std::printf("  simd_arrays_per_engine %u: target %s, RSRC3 at %#x, ACQUIRE_MEM %u dwords, SDMA %u.%u, PM4 RSRC1 of "
                  "KD 0x60af0080 -> %#010x\n",
                  arrays, T::name().c_str(), T::regs::compute_pgm_rsrc3, T::acquire_mem_dwords, T::sdma_version / 10,
                  T::sdma_version % 10, T::pm4_compute_pgm_rsrc1(0x60af0080u));
    });
    if (!r) std::printf("  %s\n", r.get_failure().describe().c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1) return show_one(argv[1]);
  std::printf("aqueduct — AMD GPU architecture table (arch/processors.hpp)\n\n");
  print_table();
  std::printf("\nCWSR sizes as KFD computes them (arch/cwsr.hpp, Linux kfd_queue.c; sysfs spelling):\n");
  // Topology values: spec/kfd.md §1.5 and §6.5 (MI300X from a real KFD capture).
  const gpu gpus[] = {
      {"AMD Instinct MI300X", {90402, 1216, 4, 8, 32, 1, 64}},
      {"AMD Radeon RX 7900 XTX", {110000, 192, 2, 1, 12, 2, 64}},
      {"AMD Instinct MI250X (one GCD)", {90010, 440, 4, 1, 8, 1, 64}},
  };
  for (const auto& g : gpus) print_cwsr(g);
  return 0;
}
