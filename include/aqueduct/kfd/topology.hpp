// aqueduct/kfd/topology.hpp — the KFD topology, parsed from a sysfs-format directory.
//
// Layer: kfd. Reads the tree the kernel publishes under /sys/class/kfd/kfd/topology (or any
// directory of the same shape: the emulator's, a test's, a captured dump): generation_id,
// system_properties, nodes/N/{gpu_id,name,properties}, mem_banks/M, caches/C, io_links/L,
// p2p_links/L (spec/kfd.md §6). Every `properties` line is kept in file order, so unknown keys of
// newer kernels survive; the keys of spec/kfd.md §6.2 also land in named fields. A malformed line
// is errc::topology_error with the file and line. For each GPU node the CWSR sizes are computed
// with the kernel's formula (arch::kernel_cwsr_sizes) and compared with the values the kernel
// exports (cwsr_size / ctl_stack_size, kernels with 71776e0965f9).
//
// Thread safety: values; parsing touches only the given directory.
#pragma once

#include <aqueduct/arch/cwsr.hpp>
#include <aqueduct/core/result.hpp>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace aqueduct::kfd {

// One `properties` file: "key value" lines in file order (spec/kfd.md §6.2: "key value\n").
struct property {
  std::string key;
  std::string text;                    // the value as written
  std::optional<std::uint64_t> value;  // when it is a decimal integer (negative: two's complement)
};

class property_list {
 public:
  [[nodiscard]] const std::vector<property>& entries() const noexcept { return entries_; }
  [[nodiscard]] const property* find(std::string_view key) const noexcept {
    for (const auto& p : entries_)
      if (p.key == key) return &p;
    return nullptr;
  }
  [[nodiscard]] bool contains(std::string_view key) const noexcept { return find(key) != nullptr; }
  // The numeric value of `key`, or `fallback` when absent or not numeric.
  [[nodiscard]] std::uint64_t get(std::string_view key, std::uint64_t fallback = 0) const noexcept {
    const property* p = find(key);
    return p && p->value ? *p->value : fallback;
  }
  void add(property p) { entries_.push_back(std::move(p)); }

 private:
  std::vector<property> entries_;
};

namespace detail {

inline std::optional<std::uint64_t> parse_integer(std::string_view s) noexcept {
  if (s.empty()) return std::nullopt;
  std::uint64_t v = 0;
  if (s.front() == '-') {
    std::int64_t sv = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), sv);
    if (ec != std::errc{} || p != s.data() + s.size()) return std::nullopt;
    return static_cast<std::uint64_t>(sv);
  }
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || p != s.data() + s.size()) return std::nullopt;
  return v;
}

inline bool valid_key(std::string_view k) noexcept {
  return !k.empty() && std::all_of(k.begin(), k.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
}

// A sysfs attribute is at most one page (the kernel's sysfs show() buffer, PAGE_SIZE); 64 KiB
// leaves room for bigger pages and hand-made trees, and bounds a properties file that is
// /dev/zero or a huge file.
inline constexpr std::size_t max_sysfs_file_bytes = 64 * 1024;

inline result<std::string> read_text(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    const int err = errno;
    return failure(errc::topology_error, "cannot read " + file.string() + ": " + std::strerror(err));
  }
  std::string out(max_sysfs_file_bytes + 1, '\0');
  in.read(out.data(), static_cast<std::streamsize>(out.size()));
  out.resize(static_cast<std::size_t>(in.gcount()));
  if (out.size() > max_sysfs_file_bytes)
    return failure(errc::topology_error, file.string() + " is longer than " + std::to_string(max_sysfs_file_bytes) +
                                             " bytes: not a sysfs topology file");
  return out;
}

}  // namespace detail

// Parses "key value" lines. `numeric_only`: every value must be a decimal integer (node,
// mem_bank, io_link properties); caches have non-numeric values (sibling_map 1,0,...).
inline result<property_list> try_parse_properties(std::string_view text, const std::string& file_for_errors,
                                                  bool numeric_only = true) {
  property_list out;
  std::size_t line_no = 0;
  while (!text.empty()) {
    const auto nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    ++line_no;
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.remove_suffix(1);
    if (line.empty()) continue;
    const auto sp = line.find_first_of(" \t");
    std::string_view key = line.substr(0, sp);
    std::string_view val = sp == std::string_view::npos ? std::string_view{} : line.substr(sp + 1);
    while (!val.empty() && (val.front() == ' ' || val.front() == '\t')) val.remove_prefix(1);
    auto bad = [&](const char* why) {
      return failure(errc::topology_error, file_for_errors + ":" + std::to_string(line_no) + ": " + why + " in '" +
                                               std::string(line) + "' (expected 'key value')");
    };
    if (!detail::valid_key(key)) return bad("malformed key");
    if (val.empty()) return bad("missing value");
    auto num = detail::parse_integer(val);
    if (numeric_only && !num) return bad("value is not a decimal integer");
    // The kernel prints every node, mem_bank and io_link property unsigned (%u / %llu in
    // kfd_topology.c), so a '-' means the file is not what KFD wrote.
    if (numeric_only && val.front() == '-') return bad("negative value (KFD prints these properties unsigned)");
    out.add(property{std::string(key), std::string(val), num});
  }
  return out;
}

inline result<property_list> try_read_properties(const std::filesystem::path& file, bool numeric_only = true) {
  AQUEDUCT_TRY(std::string text, detail::read_text(file));
  return try_parse_properties(text, file.string(), numeric_only);
}

// The keys of a node's `properties` (spec/kfd.md §6.2, kernel print order). Absent keys read 0,
// except num_xcc which reads 1 on GPU nodes of kernels that predate it.
struct node_properties {
  std::uint64_t cpu_cores_count = 0, simd_count = 0, mem_banks_count = 0, caches_count = 0, io_links_count = 0,
                p2p_links_count = 0, cpu_core_id_base = 0, simd_id_base = 0, max_waves_per_simd = 0,
                lds_size_in_kb = 0, gds_size_in_kb = 0, num_gws = 0, wave_front_size = 0, array_count = 0,
                simd_arrays_per_engine = 0, cu_per_simd_array = 0, simd_per_cu = 0, max_slots_scratch_cu = 0,
                gfx_target_version = 0, vendor_id = 0, device_id = 0, location_id = 0, domain = 0,
                drm_render_minor = 0, hive_id = 0, num_sdma_engines = 0, num_sdma_xgmi_engines = 0,
                num_sdma_queues_per_engine = 0, num_cp_queues = 0, max_engine_clk_fcompute = 0,
                local_mem_size = 0, fw_version = 0, capability = 0, capability2 = 0, debug_prop = 0,
                sdma_fw_version = 0, unique_id = 0, num_xcc = 0, max_engine_clk_ccompute = 0;
  // Exported only by kernels with upstream 71776e0965f9 (spec/kfd.md §1.6).
  std::optional<std::uint64_t> cwsr_size, ctl_stack_size;
  property_list all;  // every line, known or not, in file order
};

namespace detail {
struct key_field {
  std::string_view key;
  std::uint64_t node_properties::* field;
};
#define AQUEDUCT_KFD_KEY(k) key_field{#k, &node_properties::k}
inline constexpr key_field node_keys[] = {
    AQUEDUCT_KFD_KEY(cpu_cores_count), AQUEDUCT_KFD_KEY(simd_count), AQUEDUCT_KFD_KEY(mem_banks_count),
    AQUEDUCT_KFD_KEY(caches_count), AQUEDUCT_KFD_KEY(io_links_count), AQUEDUCT_KFD_KEY(p2p_links_count),
    AQUEDUCT_KFD_KEY(cpu_core_id_base), AQUEDUCT_KFD_KEY(simd_id_base), AQUEDUCT_KFD_KEY(max_waves_per_simd),
    AQUEDUCT_KFD_KEY(lds_size_in_kb), AQUEDUCT_KFD_KEY(gds_size_in_kb), AQUEDUCT_KFD_KEY(num_gws),
    AQUEDUCT_KFD_KEY(wave_front_size), AQUEDUCT_KFD_KEY(array_count), AQUEDUCT_KFD_KEY(simd_arrays_per_engine),
    AQUEDUCT_KFD_KEY(cu_per_simd_array), AQUEDUCT_KFD_KEY(simd_per_cu), AQUEDUCT_KFD_KEY(max_slots_scratch_cu),
    AQUEDUCT_KFD_KEY(gfx_target_version), AQUEDUCT_KFD_KEY(vendor_id), AQUEDUCT_KFD_KEY(device_id),
    AQUEDUCT_KFD_KEY(location_id), AQUEDUCT_KFD_KEY(domain), AQUEDUCT_KFD_KEY(drm_render_minor),
    AQUEDUCT_KFD_KEY(hive_id), AQUEDUCT_KFD_KEY(num_sdma_engines), AQUEDUCT_KFD_KEY(num_sdma_xgmi_engines),
    AQUEDUCT_KFD_KEY(num_sdma_queues_per_engine), AQUEDUCT_KFD_KEY(num_cp_queues),
    AQUEDUCT_KFD_KEY(max_engine_clk_fcompute), AQUEDUCT_KFD_KEY(local_mem_size), AQUEDUCT_KFD_KEY(fw_version),
    AQUEDUCT_KFD_KEY(capability), AQUEDUCT_KFD_KEY(capability2), AQUEDUCT_KFD_KEY(debug_prop),
    AQUEDUCT_KFD_KEY(sdma_fw_version), AQUEDUCT_KFD_KEY(unique_id), AQUEDUCT_KFD_KEY(num_xcc),
    AQUEDUCT_KFD_KEY(max_engine_clk_ccompute),
};
#undef AQUEDUCT_KFD_KEY
}  // namespace detail

inline node_properties to_node_properties(property_list list) {
  node_properties np;
  for (const auto& k : detail::node_keys) np.*(k.field) = list.get(k.key);
  if (list.contains("cwsr_size")) np.cwsr_size = list.get("cwsr_size");
  if (list.contains("ctl_stack_size")) np.ctl_stack_size = list.get("ctl_stack_size");
  np.all = std::move(list);
  return np;
}

// The CWSR-related sizes of a GPU node, as a queue needs them (spec/kfd.md §1.3, §2.5).
struct node_cwsr {
  arch::cwsr_sizes computed{};        // kernel formula from the node's properties
  std::uint32_t cwsr_size = 0;        // what to pass: the exported value when present, else computed
  std::uint32_t ctl_stack_size = 0;   // idem (the kernel checks exact equality)
  std::uint32_t debug_memory_size = 0;  // never exported: computed
  std::uint32_t eop_buffer_size = 0;    // never exported: computed
  std::uint32_t num_xcc = 1;
  bool exported = false;        // the kernel printed cwsr_size and ctl_stack_size
  bool matches_export = true;   // computed == exported (false: the kernel uses another formula)
  // ALIGN((cwsr_size + debug_memory_size) * num_xcc, PAGE): the CWSR buffer's exact size.
  [[nodiscard]] std::uint64_t ctx_save_restore_total() const noexcept {
    return arch::cwsr_total_allocation(cwsr_size, debug_memory_size, num_xcc);
  }
};

struct mem_bank {
  std::uint32_t id = 0;
  property_list properties;  // heap_type, size_in_bytes, flags, width, mem_clk_max
  [[nodiscard]] std::uint64_t heap_type() const noexcept { return properties.get("heap_type"); }
  [[nodiscard]] std::uint64_t size_in_bytes() const noexcept { return properties.get("size_in_bytes"); }
};

struct io_link {
  std::uint32_t id = 0;
  property_list properties;  // type, node_from, node_to, weight, ... (spec/kfd.md §6.2)
  [[nodiscard]] std::uint64_t type() const noexcept { return properties.get("type"); }  // 2 PCIe, 11 XGMI
  [[nodiscard]] std::uint64_t node_from() const noexcept { return properties.get("node_from"); }
  [[nodiscard]] std::uint64_t node_to() const noexcept { return properties.get("node_to"); }
};

struct cache {
  std::uint32_t id = 0;
  property_list properties;  // values may be non-numeric (sibling_map)
};

struct node {
  std::uint32_t id = 0;      // the directory number N
  std::uint32_t gpu_id = 0;  // 0 on CPU nodes (spec/kfd.md §6.1)
  std::string name;          // amdgpu ASIC name; empty on CPU nodes
  node_properties properties;
  std::vector<mem_bank> mem_banks;
  std::vector<cache> caches;
  std::vector<io_link> io_links;
  std::vector<io_link> p2p_links;

  [[nodiscard]] bool is_gpu() const noexcept { return gpu_id != 0; }
  [[nodiscard]] std::uint32_t gfx_target_version() const noexcept {
    return static_cast<std::uint32_t>(properties.gfx_target_version);
  }
  // "gfx" + major + minor + stepping in hex (spec/kfd.md §6.3): 90402 → gfx942, 90010 → gfx90a.
  [[nodiscard]] std::string gfx_name() const {
    const auto v = gfx_target_version();
    static constexpr char hex[] = "0123456789abcdef";
    std::string s = "gfx" + std::to_string(v / 10000);
    s += hex[(v / 100) % 100 % 16];
    s += hex[v % 100 % 16];
    return s;
  }
  [[nodiscard]] std::uint32_t num_xcc() const noexcept {
    return properties.num_xcc ? static_cast<std::uint32_t>(properties.num_xcc) : 1u;
  }
  [[nodiscard]] std::uint32_t compute_units() const noexcept {
    return properties.simd_per_cu ? static_cast<std::uint32_t>(properties.simd_count / properties.simd_per_cu) : 0u;
  }
  [[nodiscard]] std::uint64_t local_memory_bytes() const noexcept {
    std::uint64_t s = 0;
    for (const auto& b : mem_banks)
      if (b.heap_type() == 1 || b.heap_type() == 2) s += b.size_in_bytes();  // HSA_HEAPTYPE_FRAME_BUFFER_*
    return s;
  }
  [[nodiscard]] arch::cwsr_inputs cwsr_inputs() const noexcept {
    auto u = [](std::uint64_t v) { return static_cast<std::uint32_t>(v); };
    return {u(properties.gfx_target_version), u(properties.simd_count),      u(properties.simd_per_cu), num_xcc(),
            u(properties.array_count),        u(properties.simd_arrays_per_engine), u(properties.lds_size_in_kb)};
  }
  // The CWSR sizes for queues on this node; meaningful on GPU nodes only.
  [[nodiscard]] node_cwsr cwsr() const noexcept {
    node_cwsr c;
    c.computed = arch::kernel_cwsr_sizes(cwsr_inputs());
    c.num_xcc = num_xcc();
    c.debug_memory_size = c.computed.debug_memory_size;
    c.eop_buffer_size = c.computed.eop_buffer_size;
    c.cwsr_size = c.computed.cwsr_size;
    c.ctl_stack_size = c.computed.ctl_stack_size;
    if (properties.cwsr_size && properties.ctl_stack_size) {
      c.exported = true;
      c.matches_export = *properties.cwsr_size == c.computed.cwsr_size &&
                         *properties.ctl_stack_size == c.computed.ctl_stack_size;
      c.cwsr_size = static_cast<std::uint32_t>(*properties.cwsr_size);
      c.ctl_stack_size = static_cast<std::uint32_t>(*properties.ctl_stack_size);
    }
    return c;
  }
};

struct topology {
  std::filesystem::path root;
  std::uint64_t generation_id = 0;
  property_list system_properties;
  std::vector<node> nodes;  // sorted by id

  [[nodiscard]] std::vector<const node*> gpu_nodes() const {
    std::vector<const node*> out;
    for (const auto& n : nodes)
      if (n.is_gpu()) out.push_back(&n);
    return out;
  }
  [[nodiscard]] const node* find_gpu(std::uint32_t gpu_id) const noexcept {
    for (const auto& n : nodes)
      if (n.is_gpu() && n.gpu_id == gpu_id) return &n;
    return nullptr;
  }
};

namespace detail {

inline result<std::uint64_t> read_number_file(const std::filesystem::path& file) {
  AQUEDUCT_TRY(std::string text, read_text(file));
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ' || text.back() == '\r')) text.pop_back();
  auto v = parse_integer(text);
  if (!v) return failure(errc::topology_error, file.string() + ":1: expected a decimal integer, found '" + text + "'");
  return *v;
}

// The numbered subdirectories of `dir` (0, 1, ...), sorted; non-numeric names are ignored.
inline result<std::vector<std::uint32_t>> numbered_dirs(const std::filesystem::path& dir, bool required) {
  std::vector<std::uint32_t> ids;
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    if (required) return failure(errc::topology_error, "missing directory " + dir.string());
    return ids;
  }
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const auto name = e.path().filename().string();
    if (auto v = parse_integer(name); v && e.is_directory() && name[0] != '-') ids.push_back(static_cast<std::uint32_t>(*v));
  }
  if (ec) return failure(errc::topology_error, "cannot list " + dir.string() + ": " + ec.message());
  std::sort(ids.begin(), ids.end());
  return ids;
}

template <class T>
result<std::vector<T>> read_sub(const std::filesystem::path& dir, bool numeric_only) {
  std::vector<T> out;
  AQUEDUCT_TRY(auto ids, numbered_dirs(dir, false));
  for (auto id : ids) {
    AQUEDUCT_TRY(auto props, try_read_properties(dir / std::to_string(id) / "properties", numeric_only));
    out.push_back(T{id, std::move(props)});
  }
  return out;
}

}  // namespace detail

namespace detail {
inline result<topology> read_topology_once(const std::filesystem::path& root) {
  topology t;
  t.root = root;
  AQUEDUCT_TRY(t.generation_id, detail::read_number_file(root / "generation_id"));
  std::error_code ec;
  if (std::filesystem::exists(root / "system_properties", ec)) {
    AQUEDUCT_TRY(t.system_properties, try_read_properties(root / "system_properties"));
  }
  AQUEDUCT_TRY(auto ids, detail::numbered_dirs(root / "nodes", true));
  for (auto id : ids) {
    const auto dir = root / "nodes" / std::to_string(id);
    node n;
    n.id = id;
    AQUEDUCT_TRY(auto gpu_id, detail::read_number_file(dir / "gpu_id"));
    n.gpu_id = static_cast<std::uint32_t>(gpu_id);
    if (std::filesystem::exists(dir / "name", ec)) {
      AQUEDUCT_TRY(n.name, detail::read_text(dir / "name"));
      while (!n.name.empty() && (n.name.back() == '\n' || n.name.back() == ' ')) n.name.pop_back();
    }
    AQUEDUCT_TRY(auto props, try_read_properties(dir / "properties"));
    n.properties = to_node_properties(std::move(props));
    if (n.is_gpu() && !n.properties.all.contains("gfx_target_version"))
      return failure(errc::topology_error, (dir / "properties").string() + ": GPU node (gpu_id " +
                                               std::to_string(n.gpu_id) + ") has no gfx_target_version");
    AQUEDUCT_TRY(n.mem_banks, detail::read_sub<mem_bank>(dir / "mem_banks", true));
    AQUEDUCT_TRY(n.caches, detail::read_sub<cache>(dir / "caches", false));
    AQUEDUCT_TRY(n.io_links, detail::read_sub<io_link>(dir / "io_links", true));
    AQUEDUCT_TRY(n.p2p_links, detail::read_sub<io_link>(dir / "p2p_links", true));
    t.nodes.push_back(std::move(n));
  }
  return t;
}
}  // namespace detail

// Reads a whole topology tree (spec/kfd.md §6.1). Missing optional parts (caches, links,
// system_properties) are empty; a missing generation_id, nodes/ or node properties file, or any
// malformed line, is errc::topology_error. Like libhsakmt, generation_id is read before
// and after: if the kernel changed the topology meanwhile (hot-plug, partition switch) the read
// is repeated, up to 3 times, then errc::topology_error.
inline result<topology> try_read_topology(const std::filesystem::path& root) {
  for (int attempt = 0; attempt < 3; ++attempt) {
    AQUEDUCT_TRY(topology t, detail::read_topology_once(root));
    AQUEDUCT_TRY(std::uint64_t after, detail::read_number_file(root / "generation_id"));
    if (after == t.generation_id) return t;
  }
  return failure(errc::topology_error, (root / "generation_id").string() + " kept changing while the topology was read");
}

inline topology read_topology(const std::filesystem::path& root) { return try_read_topology(root).value(); }

}  // namespace aqueduct::kfd
