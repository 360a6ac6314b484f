// aqueduct-info — list the KFD agents of this machine (real or emulated), rocminfo-style.
//
//   aqueduct-info                       the real /dev/kfd and /sys/class/kfd/kfd/topology
//   aqueduct-info --sysfs DIR           any sysfs-format topology tree (no device needed)
//   aqueduct-info --emulate mi300x[,rx7900xtx...]   the emulated device (emu::device)
//
// For each GPU node it prints `key value` lines, with the kernel's sysfs spelling and units
// (bytes, decimal), including the CWSR sizes computed with the kernel's formula. With a device
// (real or emulated) it also acquires each GPU's VM and maps its doorbell pages, as a queue
// would. Exit codes: 0 success; 1 error (message on stderr); 2 no GPU found (no /dev/kfd and no
// flags; the message says how to use --emulate); 64 bad command line.
#include <aqueduct/kfd/driver.hpp>
#include <aqueduct/kfd/linux_device.hpp>
#include <aqueduct/kfd/queue_resources.hpp>
#include <aqueduct/kfd/topology.hpp>

#include <aqueduct/arch/processors.hpp>
#include <aqueduct/emu/device.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace aq = aqueduct;
namespace kfd = aqueduct::kfd;

namespace {

constexpr int exit_error = 1, exit_no_gpu = 2, exit_usage = 64;

void usage(std::FILE* to) {
  std::fputs(
      "usage: aqueduct-info [--sysfs DIR | --emulate PRESET[,PRESET...]]\n"
      "  --sysfs DIR        read a KFD topology tree in sysfs format from DIR (no device needed)\n"
      "  --emulate PRESETS  use the emulated device, e.g. --emulate mi300x or --emulate 2*rx7900xtx\n"
      "                     (presets: mi300x, rx7900xtx, mi250x, rx6900xt, ...)\n"
      "  without flags      $AQUEDUCT_EMULATE=PRESETS if set (as every aqueduct program), else /dev/kfd\n"
      "                     and /sys/class/kfd/kfd/topology\n",
      to);
}

// Exactly "key value", one space, as the kernel prints sysfs properties (grep-able).
void kv(const char* key, unsigned long long v) { std::printf("%s %llu\n", key, v); }
void kv(const char* key, const std::string& v) { std::printf("%s %s\n", key, v.c_str()); }

void print_apertures(const aq::abi::kfd::process_device_apertures& ap) {
  char buf[32];
  auto hex = [&](const char* key, unsigned long long v) {
    std::snprintf(buf, sizeof buf, "0x%llx", v);
    kv(key, std::string(buf));
  };
  hex("gpuvm_base", ap.gpuvm_base);
  hex("gpuvm_limit", ap.gpuvm_limit);
  hex("lds_base", ap.lds_base);
  hex("scratch_base", ap.scratch_base);
}

// Prints one node. `doorbell_pages_mapped`: pages actually mapped through a device (0: not
// mapped); `ap`: the process apertures from the device (nullptr without one).
void print_node(const kfd::node& n, std::uint64_t doorbell_pages_mapped,
                const aq::abi::kfd::process_device_apertures* ap = nullptr) {
  const auto& p = n.properties;
  if (!n.is_gpu()) {
    std::printf("agent %u (CPU)\n", n.id);
    kv("cpu_cores_count", p.cpu_cores_count);
    kv("max_engine_clk_ccompute", p.max_engine_clk_ccompute);
    std::uint64_t mem = 0;
    for (const auto& b : n.mem_banks) mem += b.size_in_bytes();
    kv("size_in_bytes", mem);
    std::printf("\n");
    return;
  }
  const auto* proc = aq::arch::find_processor_by_version(n.gfx_target_version());
  std::printf("agent %u (GPU)\n", n.id);
  kv("name", n.gfx_name());
  kv("sysfs_name", n.name);
  kv("gpu_id", n.gpu_id);
  kv("gfx_target_version", p.gfx_target_version);
  kv("known_processor", proc ? std::string(proc->name) : std::string("no (not in aqueduct's table)"));
  kv("vendor_id", p.vendor_id);
  kv("device_id", p.device_id);
  kv("location_id", p.location_id);
  kv("domain", p.domain);
  kv("drm_render_minor", p.drm_render_minor);
  kv("render_node", kfd::render_node_path(static_cast<std::uint32_t>(p.drm_render_minor)));
  kv("num_xcc", n.num_xcc());
  kv("simd_count", p.simd_count);
  kv("simd_per_cu", p.simd_per_cu);
  kv("compute_units", n.compute_units());
  kv("wave_front_size", p.wave_front_size);
  kv("max_waves_per_simd", p.max_waves_per_simd);
  kv("array_count", p.array_count);
  kv("simd_arrays_per_engine", p.simd_arrays_per_engine);
  kv("lds_size_in_kb", p.lds_size_in_kb);
  kv("max_engine_clk_fcompute", p.max_engine_clk_fcompute);
  kv("local_memory_size_in_bytes", n.local_memory_bytes());
  kv("num_sdma_engines", p.num_sdma_engines);
  kv("num_sdma_xgmi_engines", p.num_sdma_xgmi_engines);
  kv("num_sdma_queues_per_engine", p.num_sdma_queues_per_engine);
  kv("num_cp_queues", p.num_cp_queues);
  const std::uint32_t db_bytes = aq::abi::kfd::doorbell_bytes_for(n.gfx_target_version());
  const std::uint64_t slice = aq::abi::kfd::doorbell_slice_size(db_bytes);
  kv("doorbell_size", db_bytes);
  kv("doorbell_slice_size", slice);
  kv("doorbell_pages", slice / aq::page_size);
  if (doorbell_pages_mapped) kv("doorbell_pages_mapped", doorbell_pages_mapped);
  const kfd::node_cwsr c = n.cwsr();
  kv("cwsr_size", c.cwsr_size);
  kv("ctl_stack_size", c.ctl_stack_size);
  kv("debug_memory_size", c.debug_memory_size);
  kv("eop_buffer_size", c.eop_buffer_size);
  kv("ctx_save_restore_total", c.ctx_save_restore_total());
  kv("cwsr_source", c.exported ? std::string("sysfs (kernel exported)") : std::string("computed (kernel formula)"));
  kv("cwsr_size_computed", c.computed.cwsr_size);            // arch::kernel_cwsr_sizes, always
  kv("ctl_stack_size_computed", c.computed.ctl_stack_size);
  kv("wg_data_size_computed", c.computed.wg_data_size);
  if (c.exported && !c.matches_export)
    std::printf("warning: the kernel exports cwsr_size %u / ctl_stack_size %u but its formula gives %u / %u; "
                "the exported values are used\n",
                c.cwsr_size, c.ctl_stack_size, c.computed.cwsr_size, c.computed.ctl_stack_size);
  if (ap) print_apertures(*ap);
  std::printf("\n");
}

void print_header(const kfd::topology& t, const char* source) {
  std::printf("aqueduct-info: %s\n", source);
  std::printf("topology %s (generation_id %llu)\n\n", t.root.string().c_str(),
              static_cast<unsigned long long>(t.generation_id));
}

int print_topology_only(const std::filesystem::path& dir) {
  auto t = kfd::try_read_topology(dir);
  if (!t) {
    std::fprintf(stderr, "aqueduct-info: %s\n", t.get_failure().describe().c_str());
    return exit_error;
  }
  print_header(*t, "sysfs tree (no device)");
  for (const auto& n : t->nodes) print_node(n, 0);
  if (t->gpu_nodes().empty()) std::printf("no GPU nodes in %s\n", dir.string().c_str());
  return 0;
}

template <kfd::device_file F>
int print_device(F file, const char* source) {
  auto d = kfd::driver<F>::try_open(std::move(file));
  if (!d) {
    std::fprintf(stderr, "aqueduct-info: %s\n", d.get_failure().describe().c_str());
    return exit_error;
  }
  print_header(d->topo(), source);
  std::printf("kfd_ioctl_version %u.%u\n\n", d->version().major, d->version().minor);
  int rc = 0;
  for (const auto& n : d->topo().nodes) {
    std::uint64_t pages = 0;
    if (n.is_gpu()) {
      // What a queue needs first: the GPU's VM and its doorbell slice.
      if (auto vm = d->try_acquire_vm(n); !vm) {
        std::fprintf(stderr, "aqueduct-info: node %u: %s\n", n.id, vm.get_failure().describe().c_str());
        rc = exit_error;
      } else if (auto db = kfd::doorbell_pages<F>::try_map(d->ref(), n); !db) {
        std::fprintf(stderr, "aqueduct-info: node %u: %s\n", n.id, db.get_failure().describe().c_str());
        rc = exit_error;
      } else {
        pages = db->pages();
      }
    }
    print_node(n, pages, d->apertures(n.gpu_id));
  }
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  std::optional<std::string> sysfs, emulate;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if ((a == "--sysfs" || a == "--emulate") && i + 1 < argc) {
      (a == "--sysfs" ? sysfs : emulate) = argv[++i];
    } else if (a.rfind("--sysfs=", 0) == 0) {
      sysfs = a.substr(8);
    } else if (a.rfind("--emulate=", 0) == 0) {
      emulate = a.substr(10);
    } else if (a == "--sysfs" || a == "--emulate") {
      std::fprintf(stderr, "aqueduct-info: %s needs a value: %s\n", a.c_str(),
                   a == "--sysfs" ? "--sysfs DIR (a KFD topology tree)"
                                  : "--emulate PRESETS, e.g. --emulate mi300x (presets: mi300x, rx7900xtx, mi250x, rx6900xt)");
      return exit_usage;
    } else if (a == "-h" || a == "--help") {
      usage(stdout);
      return 0;
    } else {
      std::fprintf(stderr, "aqueduct-info: unknown argument '%s'\n", a.c_str());
      usage(stderr);
      return exit_usage;
    }
  }
  if (sysfs && emulate) {
    std::fprintf(stderr, "aqueduct-info: --sysfs and --emulate exclude each other\n");
    return exit_usage;
  }
  if (sysfs) return print_topology_only(*sysfs);
  // Like runtime::system::open: $AQUEDUCT_EMULATE (unless off/0/none/no) picks the emulated device
  // when no flag says otherwise.
  std::string emulate_from = "--emulate";
  if (!emulate) {
    if (const char* env = std::getenv("AQUEDUCT_EMULATE"); env && *env) {
      const std::string_view v(env);
      if (v != "off" && v != "0" && v != "none" && v != "no") {
        emulate = std::string(v);
        emulate_from = "AQUEDUCT_EMULATE=";
      }
    }
  }
  if (emulate) {
    auto cfg = aq::emu::machine_config::try_parse(*emulate);
    if (!cfg) {
      std::fprintf(stderr, "aqueduct-info: %s%s%s: %s\n", emulate_from.c_str(), emulate_from == "--emulate" ? " " : "",
                   emulate->c_str(), cfg.get_failure().describe().c_str());
      return exit_usage;
    }
    auto dev = aq::emu::device::try_create(std::move(*cfg));
    if (!dev) {
      std::fprintf(stderr, "aqueduct-info: %s\n", dev.get_failure().describe().c_str());
      return exit_error;
    }
    const std::string source = emulate_from == "--emulate" ? std::string("emulated device")
                                                            : "emulated device (AQUEDUCT_EMULATE=" + *emulate + ")";
    return print_device(std::move(*dev), source.c_str());
  }
  auto dev = kfd::linux_device::try_open();
  if (dev && kfd::has_render_node_enumeration) {
    if (auto t = kfd::try_read_topology(dev->sysfs_root()))
      for (const auto& m : kfd::match_render_nodes(*t))
        if (!m.listed || !m.ids_match)
          std::fprintf(stderr, "aqueduct-info: warning: node %u: %s %s\n", m.node_id, m.path.c_str(),
                       m.listed ? "is another PCI device than the topology says (libdrm)" : "is not listed by libdrm");
  }
  if (!dev) {
    std::printf("aqueduct-info: no AMD GPU found (%s).\n", dev.get_failure().describe().c_str());
    std::printf("  To see what aqueduct does on one, use the emulated device:  aqueduct-info --emulate mi300x\n");
    std::printf("  To read a captured topology tree:                          aqueduct-info --sysfs DIR\n");
    return exit_no_gpu;
  }
  return print_device(std::move(*dev), "/dev/kfd");
}
