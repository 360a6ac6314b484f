// aqueduct/emu/sysfs_writer.hpp — the emulated machine's nodes and its sysfs-format topology tree.
//
// Layer: emu. `build_nodes` turns a machine_config into numbered nodes (node 0 = CPU, then one
// per GPU) with their gpu_id, render minor and the CWSR sizes the kernel computes for them
// (arch::kernel_cwsr_sizes, spec/kfd.md §1.3). `sysfs_tree` writes the tree the kernel publishes
// under /sys/class/kfd/kfd/topology — generation_id, system_properties, nodes/N/{gpu_id, name,
// properties, mem_banks/0/properties, caches/, io_links/L/properties, p2p_links/} — with the node
// `properties` keys in the kernel's print order (node_show, spec/kfd.md §6.2), into a private
// temporary directory that is removed when the tree is destroyed. A process that dies without
// destroying it (abort, SIGKILL, Ctrl-C) leaves its tree behind; the name carries the owner's pid
// (aqueduct-emu-topology-<pid>-XXXXXX), and every new tree first removes the trees of owners that
// no longer exist, so leftovers never accumulate and no signal handler is needed.
// gpu_id: a CRC16 of the node's identity like the kernel's (spec/kfd.md §6.4 says any unique
// non-zero 16-bit value will do; ours is not the kernel's exact input list).
// Thread safety: a sysfs_tree is immutable after creation.
#pragma once

#include <aqueduct/abi/kfd_ioctl.hpp>
#include <aqueduct/arch/cwsr.hpp>
#include <aqueduct/core/result.hpp>
#include <aqueduct/emu/machine_config.hpp>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include <signal.h>
#include <unistd.h>

namespace aqueduct::emu {

struct gpu_node {
  gpu_properties props;
  std::uint32_t node_id = 0;      // sysfs node number (1..n)
  std::uint32_t gpu_id = 0;       // nodes/N/gpu_id
  std::uint32_t drm_render_minor = 0;
  arch::cwsr_sizes cwsr{};        // what the kernel computed for the node
  std::uint32_t doorbell_bytes = 8;
  std::uint64_t doorbell_slice = 8192;  // process doorbell slice (spec/kfd.md §3.1)
  std::uint32_t sdma_queues_per_engine = 0;
  std::uint32_t queue_limit = 127;
};

namespace detail {
// CRC-16/CCITT-FALSE over bytes.
constexpr std::uint16_t crc16(const unsigned char* p, std::size_t n, std::uint16_t crc = 0xFFFF) noexcept {
  for (std::size_t i = 0; i < n; ++i) {
    crc = static_cast<std::uint16_t>(crc ^ (std::uint16_t{p[i]} << 8));
    for (int b = 0; b < 8; ++b)
      crc = static_cast<std::uint16_t>((crc & 0x8000) ? (crc << 1) ^ 0x1021 : crc << 1);
  }
  return crc;
}
}  // namespace detail

[[nodiscard]] inline std::vector<gpu_node> build_nodes(const machine_config& cfg) {
  std::vector<gpu_node> nodes;
  for (std::size_t i = 0; i < cfg.gpus.size(); ++i) {
    gpu_node n;
    n.props = cfg.gpus[i];
    n.node_id = static_cast<std::uint32_t>(i + 1);
    n.drm_render_minor = cfg.render_minor_base + static_cast<std::uint32_t>(i);
    n.cwsr = node_cwsr_sizes(n.props);
    n.doorbell_bytes = abi::kfd::doorbell_bytes_for(n.props.gfx_target_version);
    n.doorbell_slice = abi::kfd::doorbell_slice_size(n.doorbell_bytes);
    n.sdma_queues_per_engine = cfg.sdma_queues(n.props);
    n.queue_limit = cfg.queue_limit(n.props);
    // Identity words like the kernel's: location (made unique per node), device, memory size, XCCs.
    const std::uint32_t words[6] = {n.props.location_id + n.node_id * 256, n.props.device_id,
                                    static_cast<std::uint32_t>(n.props.vram_size),
                                    static_cast<std::uint32_t>(n.props.vram_size >> 32), n.props.num_xcc << 16,
                                    n.node_id};
    unsigned char bytes[sizeof(words)];
    for (std::size_t w = 0; w < 6; ++w)
      for (std::size_t b = 0; b < 4; ++b) bytes[w * 4 + b] = static_cast<unsigned char>(words[w] >> (8 * b));
    std::uint32_t id = detail::crc16(bytes, sizeof(bytes));
    for (;;) {  // 0 avoided, collisions resolved by incrementing (spec/kfd.md §6.4)
      bool taken = id == 0;
      for (const auto& o : nodes) taken = taken || o.gpu_id == id;
      if (!taken) break;
      id = (id + 1) & 0xFFFF;
    }
    n.gpu_id = id;
    nodes.push_back(n);
  }
  return nodes;
}

// Owns a temporary directory holding the topology tree; removes it on destruction.
class sysfs_tree {
 public:
  sysfs_tree() = default;
  sysfs_tree(const sysfs_tree&) = delete;
  sysfs_tree& operator=(const sysfs_tree&) = delete;
  sysfs_tree(sysfs_tree&& o) noexcept : root_(std::exchange(o.root_, {})) {}
  sysfs_tree& operator=(sysfs_tree&& o) noexcept {
    if (this != &o) {
      remove();
      root_ = std::exchange(o.root_, {});
    }
    return *this;
  }
  ~sysfs_tree() { remove(); }

  // The directory that plays /sys/class/kfd/kfd/topology.
  [[nodiscard]] const std::filesystem::path& root() const noexcept { return root_; }

  [[nodiscard]] static result<sysfs_tree> try_create(const machine_config& cfg, const std::vector<gpu_node>& gpus) {
    std::error_code ec;
    auto base = std::filesystem::temp_directory_path(ec);
    if (ec) return failure(errc::io_error, "emu sysfs: no temporary directory: " + ec.message());
    remove_stale_trees(base);
    std::string templ = (base / (std::string(tree_prefix) + std::to_string(::getpid()) + "-XXXXXX")).string();
    if (!::mkdtemp(templ.data())) return failure(errc::io_error, "emu sysfs: mkdtemp failed in " + base.string());
    sysfs_tree t;
    t.root_ = templ;
    if (!t.write(cfg, gpus)) return failure(errc::io_error, "emu sysfs: cannot write the tree under " + templ);
    return t;
  }

  static constexpr std::string_view tree_prefix = "aqueduct-emu-topology-";

  // Removes the trees in `base` whose owner process is gone (kill(pid, 0) == ESRCH). A tree of a
  // live process, or one whose name does not parse, is left alone. Returns how many it removed.
  static std::size_t remove_stale_trees(const std::filesystem::path& base) noexcept {
    std::size_t removed = 0;
    std::error_code ec;
    for (std::filesystem::directory_iterator it(base, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string name = it->path().filename().string();
      if (!name.starts_with(tree_prefix)) continue;
      const std::string_view rest = std::string_view(name).substr(tree_prefix.size());
      const auto dash = rest.find('-');
      if (dash == 0 || dash == std::string_view::npos || dash > 9) continue;  // the old, pid-less name
      long pid = 0;
      for (char c : rest.substr(0, dash)) {
        if (c < '0' || c > '9') {
          pid = 0;
          break;
        }
        pid = pid * 10 + (c - '0');
      }
      if (pid <= 0 || pid == ::getpid()) continue;
      if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;  // alive, or not ours to judge
      std::error_code rec;
      if (std::filesystem::remove_all(it->path(), rec) > 0 && !rec) ++removed;
    }
    return removed;
  }

 private:
  struct props_writer {
    std::string text;
    void operator()(std::string_view key, std::uint64_t v) {
      text.append(key);
      text.push_back(' ');
      text.append(std::to_string(v));
      text.push_back('\n');
    }
  };
  static bool put(const std::filesystem::path& file, std::string_view text) {
    std::error_code ec;
    std::filesystem::create_directories(file.parent_path(), ec);
    std::ofstream f(file, std::ios::binary | std::ios::trunc);
    f << text;
    return static_cast<bool>(f);
  }
  static std::string link_props(std::uint32_t type, std::uint32_t from, std::uint32_t to, std::uint32_t weight,
                                std::uint32_t max_bw, std::uint32_t sdma_mask) {
    props_writer w;
    w("type", type);
    w("version_major", 0);
    w("version_minor", 0);
    w("node_from", from);
    w("node_to", to);
    w("weight", weight);
    w("min_latency", 0);
    w("max_latency", 0);
    w("min_bandwidth", type == 11 ? max_bw : 0);
    w("max_bandwidth", max_bw);
    w("recommended_transfer_size", 0);
    w("recommended_sdma_engine_id_mask", sdma_mask);
    w("flags", 1);
    return w.text;
  }

  bool write(const machine_config& cfg, const std::vector<gpu_node>& gpus) const {
    bool ok = put(root_ / "generation_id", "1\n");
    ok = ok && put(root_ / "system_properties", "platform_oem 0\nplatform_id 0\nplatform_rev 0\n");
    // ---- node 0: the CPU, with a PCIe link to every GPU.
    const auto cpu_dir = root_ / "nodes" / "0";
    {
      props_writer w;
      w("cpu_cores_count", cfg.cpu.cpu_cores_count);
      w("simd_count", 0);
      w("mem_banks_count", 1);
      w("caches_count", 0);
      w("io_links_count", gpus.size());
      w("p2p_links_count", 0);
      for (auto k : {"cpu_core_id_base", "simd_id_base", "max_waves_per_simd", "lds_size_in_kb", "gds_size_in_kb",
                     "num_gws", "wave_front_size", "array_count", "simd_arrays_per_engine", "cu_per_simd_array",
                     "simd_per_cu", "max_slots_scratch_cu", "gfx_target_version", "vendor_id", "device_id",
                     "location_id", "domain", "drm_render_minor", "hive_id", "num_sdma_engines",
                     "num_sdma_xgmi_engines", "num_sdma_queues_per_engine", "num_cp_queues"})
        w(k, 0);
      if (cfg.export_cwsr_sizes) {
        w("cwsr_size", 0);
        w("ctl_stack_size", 0);
      }
      w("max_engine_clk_ccompute", cfg.cpu.max_engine_clk_ccompute);
      ok = ok && put(cpu_dir / "gpu_id", "0\n") && put(cpu_dir / "name", "\n") && put(cpu_dir / "properties", w.text);
      props_writer b;
      b("heap_type", 0);
      b("size_in_bytes", cfg.cpu.memory_size);
      b("flags", 0);
      b("width", 64);
      b("mem_clk_max", 0);
      ok = ok && put(cpu_dir / "mem_banks" / "0" / "properties", b.text);
      for (std::size_t i = 0; i < gpus.size(); ++i)
        ok = ok && put(cpu_dir / "io_links" / std::to_string(i) / "properties",
                       link_props(2, 0, gpus[i].node_id, 20, 0, 0));
      std::error_code ec;
      std::filesystem::create_directories(cpu_dir / "caches", ec);
      std::filesystem::create_directories(cpu_dir / "p2p_links", ec);
    }
    // ---- GPU nodes.
    for (const auto& g : gpus) {
      const auto& p = g.props;
      const auto dir = root_ / "nodes" / std::to_string(g.node_id);
      // io_links: to the CPU (PCIe), then XGMI to each other GPU of the same hive.
      std::vector<std::string> links;
      links.push_back(link_props(2, g.node_id, 0, 20, 0, 0));
      for (const auto& o : gpus)
        if (o.node_id != g.node_id && p.xgmi_io_link && o.props.xgmi_io_link && p.hive_id && p.hive_id == o.props.hive_id)
          links.push_back(link_props(11, g.node_id, o.node_id, 15, 64000, 0));
      props_writer w;
      w("cpu_cores_count", p.cpu_cores_count);
      w("simd_count", p.simd_count);
      w("mem_banks_count", 1);
      w("caches_count", 0);
      w("io_links_count", links.size());
      w("p2p_links_count", 0);
      w("cpu_core_id_base", p.cpu_core_id_base);
      w("simd_id_base", p.simd_id_base);
      w("max_waves_per_simd", p.max_waves_per_simd);
      w("lds_size_in_kb", p.lds_size_in_kb);
      w("gds_size_in_kb", p.gds_size_in_kb);
      w("num_gws", p.num_gws);
      w("wave_front_size", p.wave_front_size);
      w("array_count", p.array_count);
      w("simd_arrays_per_engine", p.simd_arrays_per_engine);
      w("cu_per_simd_array", p.cu_per_simd_array);
      w("simd_per_cu", p.simd_per_cu);
      w("max_slots_scratch_cu", p.max_slots_scratch_cu);
      w("gfx_target_version", p.gfx_target_version);
      w("vendor_id", p.vendor_id);
      w("device_id", p.device_id);
      w("location_id", p.location_id);
      w("domain", p.domain);
      w("drm_render_minor", g.drm_render_minor);
      w("hive_id", p.hive_id);
      w("num_sdma_engines", p.num_sdma_engines);
      w("num_sdma_xgmi_engines", p.num_sdma_xgmi_engines);
      w("num_sdma_queues_per_engine", g.sdma_queues_per_engine);
      w("num_cp_queues", p.num_cp_queues);
      if (cfg.export_cwsr_sizes) {
        w("cwsr_size", g.cwsr.cwsr_size);
        w("ctl_stack_size", g.cwsr.ctl_stack_size);
      }
      w("max_engine_clk_fcompute", p.max_engine_clk_fcompute);
      w("local_mem_size", 0);  // always 0 on current kernels (spec/kfd.md §6.2)
      w("fw_version", p.fw_version);
      w("capability", p.capability);
      w("capability2", p.capability2);
      w("debug_prop", p.debug_prop);
      w("sdma_fw_version", p.sdma_fw_version);
      w("unique_id", p.unique_id);
      w("num_xcc", p.num_xcc);
      w("max_engine_clk_ccompute", p.max_engine_clk_ccompute);
      ok = ok && put(dir / "gpu_id", std::to_string(g.gpu_id) + "\n") &&
           put(dir / "name", std::string(p.name) + "\n") && put(dir / "properties", w.text);
      props_writer b;
      b("heap_type", 1);  // HSA_HEAPTYPE_FRAME_BUFFER_PUBLIC, as in the MI300X capture
      b("size_in_bytes", p.vram_size);
      b("flags", 0);
      b("width", p.vram_width);
      b("mem_clk_max", p.vram_clk_max);
      ok = ok && put(dir / "mem_banks" / "0" / "properties", b.text);
      for (std::size_t l = 0; l < links.size(); ++l)
        ok = ok && put(dir / "io_links" / std::to_string(l) / "properties", links[l]);
      std::error_code ec;
      std::filesystem::create_directories(dir / "caches", ec);
      std::filesystem::create_directories(dir / "p2p_links", ec);
    }
    return ok;
  }

  void remove() noexcept {
    if (root_.empty()) return;
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);  // best effort; destructors never throw
    root_.clear();
  }

  std::filesystem::path root_;
};

}  // namespace aqueduct::emu
