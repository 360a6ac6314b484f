// Tests for kfd/topology.hpp: a tree written here by hand from spec/kfd.md §6.5 B (a real
// MI300X node), the CWSR sizes against the values the real KFD exported (§1.5), and malformed
// trees → errc::topology_error with file and line.
#include <aqueduct/kfd/topology.hpp>

#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

namespace fs = std::filesystem;
namespace kfd = aqueduct::kfd;
using aqueduct::errc;

namespace {

// spec/kfd.md §6.5 B, verbatim values (drm_render_minor: capture sanitized it to 0; we use 128).
const char* mi300x_properties(bool with_cwsr) {
  static std::string with, without;
  const std::string head =
      "cpu_cores_count 0\nsimd_count 1216\nmem_banks_count 1\ncaches_count 0\nio_links_count 8\n"
      "p2p_links_count 1\ncpu_core_id_base 0\nsimd_id_base 2147487784\nmax_waves_per_simd 8\n"
      "lds_size_in_kb 64\ngds_size_in_kb 0\nnum_gws 64\nwave_front_size 64\narray_count 32\n"
      "simd_arrays_per_engine 1\ncu_per_simd_array 10\nsimd_per_cu 4\nmax_slots_scratch_cu 32\n"
      "gfx_target_version 90402\nvendor_id 4098\ndevice_id 29857\nlocation_id 9728\ndomain 0\n"
      "drm_render_minor 128\nhive_id 7773567030725891371\nnum_sdma_engines 2\nnum_sdma_xgmi_engines 14\n"
      "num_sdma_queues_per_engine 8\nnum_cp_queues 24\n";
  const std::string cwsr = "cwsr_size 23203840\nctl_stack_size 12288\n";
  const std::string tail =
      "max_engine_clk_fcompute 2100\nlocal_mem_size 0\nfw_version 192\ncapability 2893521536\ncapability2 1\n"
      "debug_prop 1511\nsdma_fw_version 25\nunique_id 5593906200782126851\nnum_xcc 8\n"
      "some_future_key 42\nmax_engine_clk_ccompute 2400\n";
  with = head + cwsr + tail;
  without = head + tail;
  return with_cwsr ? with.c_str() : without.c_str();
}

struct temp_tree {
  fs::path root;
  temp_tree() {
    char tmpl[] = "/tmp/aqueduct-kfd-topo-XXXXXX";
    root = ::mkdtemp(tmpl);
  }
  ~temp_tree() {
    std::error_code ec;
    fs::remove_all(root, ec);
  }
  void write(const fs::path& rel, const std::string& text) const {
    fs::create_directories((root / rel).parent_path());
    std::ofstream(root / rel) << text;
  }
  void mi300x(bool with_cwsr) const {
    write("generation_id", "3\n");
    write("system_properties", "platform_oem 0\nplatform_id 0\nplatform_rev 0\n");
    write("nodes/0/gpu_id", "0\n");
    write("nodes/0/name", "\n");
    write("nodes/0/properties", "cpu_cores_count 24\nsimd_count 0\nio_links_count 3\nmax_engine_clk_ccompute 4000\n");
    write("nodes/0/mem_banks/0/properties", "heap_type 0\nsize_in_bytes 1000000\nflags 0\nwidth 0\nmem_clk_max 0\n");
    write("nodes/1/gpu_id", "48059\n");
    write("nodes/1/name", "ip discovery\n");
    write("nodes/1/properties", mi300x_properties(with_cwsr));
    write("nodes/1/mem_banks/0/properties",
          "heap_type 1\nsize_in_bytes 206141652992\nflags 0\nwidth 8192\nmem_clk_max 1300\n");
    write("nodes/1/io_links/1/properties",
          "type 11\nnode_from 3\nnode_to 2\nweight 15\nmax_bandwidth 64000\nrecommended_sdma_engine_id_mask 16384\n"
          "flags 1\n");
    write("nodes/1/caches/0/properties", "processor_id_low 2147487784\nlevel 1\nsize 16\nsibling_map 1,0,0,0\n");
  }
};

}  // namespace

TEST_CASE("MI300X node of spec §6.5 B: every key, the exported CWSR sizes match the kernel formula") {
  temp_tree t;
  t.mi300x(true);
  auto topo = kfd::try_read_topology(t.root);
  REQUIRE_MESSAGE(topo.has_value(), topo.detail());
  CHECK(topo->generation_id == 3);
  CHECK(topo->system_properties.get("platform_oem", 99) == 0);
  REQUIRE(topo->nodes.size() == 2);
  CHECK_FALSE(topo->nodes[0].is_gpu());
  CHECK(topo->nodes[0].properties.cpu_cores_count == 24);
  auto gpus = topo->gpu_nodes();
  REQUIRE(gpus.size() == 1);
  const kfd::node& g = *gpus[0];
  CHECK(g.gpu_id == 48059);
  CHECK(g.name == "ip discovery");
  const auto& p = g.properties;
  CHECK(p.simd_count == 1216);
  CHECK(p.simd_id_base == 2147487784u);
  CHECK(p.hive_id == 7773567030725891371ull);
  CHECK(p.unique_id == 5593906200782126851ull);
  CHECK(p.capability == 2893521536u);
  CHECK(p.capability2 == 1);
  CHECK(p.num_sdma_xgmi_engines == 14);
  CHECK(p.num_cp_queues == 24);
  CHECK(p.num_xcc == 8);
  CHECK(p.max_engine_clk_ccompute == 2400);
  CHECK(p.device_id == 0x74A1);
  CHECK(p.drm_render_minor == 128);
  REQUIRE(p.cwsr_size.has_value());
  CHECK(*p.cwsr_size == 23203840);
  CHECK(*p.ctl_stack_size == 12288);
  // unknown keys survive, in order
  REQUIRE(p.all.find("some_future_key") != nullptr);
  CHECK(p.all.get("some_future_key") == 42);
  CHECK(p.all.entries().back().key == "max_engine_clk_ccompute");
  CHECK(g.gfx_name() == "gfx942");
  CHECK(g.compute_units() == 304);
  CHECK(g.num_xcc() == 8);
  CHECK(g.local_memory_bytes() == 206141652992ull);
  REQUIRE(g.mem_banks.size() == 1);
  REQUIRE(g.io_links.size() == 1);
  CHECK(g.io_links[0].id == 1);
  CHECK(g.io_links[0].type() == 11);
  CHECK(g.io_links[0].node_to() == 2);
  REQUIRE(g.caches.size() == 1);
  CHECK(g.caches[0].properties.find("sibling_map")->text == "1,0,0,0");
  // spec §1.5 MI300X row (✓ = the real KFD's exported values)
  const auto c = g.cwsr();
  CHECK(c.exported);
  CHECK(c.matches_export);
  CHECK(c.cwsr_size == 23203840);
  CHECK(c.ctl_stack_size == 12288);
  CHECK(c.computed.wg_data_size == 23191552);
  CHECK(c.debug_memory_size == 48640);
  CHECK(c.eop_buffer_size == 4096);
  CHECK(c.ctx_save_restore_total() == 186019840);
  CHECK(topo->find_gpu(48059) == &g);
  CHECK(topo->find_gpu(1) == nullptr);
}

TEST_CASE("a pre-6.12 tree without cwsr_size: sizes come from the formula") {
  temp_tree t;
  t.mi300x(false);
  auto topo = kfd::read_topology(t.root);
  const auto& g = *topo.gpu_nodes().at(0);
  CHECK_FALSE(g.properties.cwsr_size.has_value());
  const auto c = g.cwsr();
  CHECK_FALSE(c.exported);
  CHECK(c.cwsr_size == 23203840);
  CHECK(c.ctl_stack_size == 12288);
}

TEST_CASE("an exported size that disagrees with the formula is used, and flagged") {
  temp_tree t;
  t.mi300x(true);
  std::string props = mi300x_properties(true);
  props.replace(props.find("cwsr_size 23203840"), 18, "cwsr_size 23207936");
  t.write("nodes/1/properties", props);
  auto g = *kfd::read_topology(t.root).gpu_nodes().at(0);
  const auto c = g.cwsr();
  CHECK(c.exported);
  CHECK_FALSE(c.matches_export);
  CHECK(c.cwsr_size == 23207936);
  CHECK(c.computed.cwsr_size == 23203840);
}

TEST_CASE("malformed trees are errc::topology_error naming file and line") {
  SUBCASE("value not a number") {
    temp_tree t;
    t.mi300x(true);
    t.write("nodes/1/properties", "simd_count 1216\nsimd_per_cu four\n");
    auto r = kfd::try_read_topology(t.root);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error() == errc::topology_error);
    CHECK(std::string(r.detail()).find("nodes/1/properties:2:") != std::string::npos);
  }
  SUBCASE("line without a value") {
    temp_tree t;
    t.mi300x(true);
    t.write("nodes/1/mem_banks/0/properties", "heap_type 1\n\nsize_in_bytes\n");
    auto r = kfd::try_read_topology(t.root);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error() == errc::topology_error);
    CHECK(std::string(r.detail()).find("mem_banks/0/properties:3:") != std::string::npos);
  }
  SUBCASE("garbage key") {
    auto r = kfd::try_parse_properties("simd_count 4\nsimd-count 4\n", "x");
    REQUIRE_FALSE(r.has_value());
    CHECK(std::string(r.detail()).find("x:2:") == 0);
  }
  SUBCASE("missing generation_id / nodes / gpu_id") {
    temp_tree t;
    CHECK(kfd::try_read_topology(t.root).error() == errc::topology_error);
    t.write("generation_id", "1\n");
    CHECK(kfd::try_read_topology(t.root).error() == errc::topology_error);
    t.write("nodes/0/properties", "cpu_cores_count 4\n");
    auto r = kfd::try_read_topology(t.root);
    REQUIRE_FALSE(r.has_value());
    CHECK(std::string(r.detail()).find("gpu_id") != std::string::npos);
  }
  SUBCASE("GPU node without gfx_target_version") {
    temp_tree t;
    t.mi300x(true);
    t.write("nodes/1/properties", "simd_count 1216\n");
    CHECK(kfd::try_read_topology(t.root).error() == errc::topology_error);
  }
  SUBCASE("generation_id not a number") {
    temp_tree t;
    t.mi300x(true);
    t.write("generation_id", "x\n");
    CHECK(kfd::try_read_topology(t.root).error() == errc::topology_error);
  }
}

TEST_CASE("the checked-in tree of tests/kfd/data parses") {
  auto topo = kfd::try_read_topology(fs::path(AQUEDUCT_KFD_TEST_DATA) / "mi300x-pre612");
  REQUIRE_MESSAGE(topo.has_value(), topo.detail());
  REQUIRE(topo->gpu_nodes().size() == 1);
  CHECK(topo->gpu_nodes()[0]->cwsr().cwsr_size == 23203840);
}

// Issue 13: nonsense sysfs values were accepted (simd_count -5 became 2^64 - 5), a properties
// file that is /dev/zero (or huge) was read until std::bad_alloc, and a missing file gave no errno.
TEST_CASE("nonsense sysfs: negative values, endless files and missing files are errors naming the file") {
  SUBCASE("simd_count -5") {
    temp_tree t;
    t.mi300x(true);
    t.write("nodes/1/properties", "simd_count -5\nsimd_per_cu 4\ngfx_target_version 90402\n");
    auto r = kfd::try_read_topology(t.root);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error() == errc::topology_error);
    const std::string d(r.detail());
    INFO(d);
    CHECK(d.find("nodes/1/properties:1:") != std::string::npos);
    CHECK(d.find("simd_count -5") != std::string::npos);
    CHECK(d.find("negative") != std::string::npos);
  }
  SUBCASE("a properties file that is /dev/zero") {
    temp_tree t;
    t.mi300x(true);
    fs::remove(t.root / "nodes/1/properties");
    fs::create_symlink("/dev/zero", t.root / "nodes/1/properties");
    auto r = kfd::try_read_topology(t.root);  // before: read until std::bad_alloc
    REQUIRE_FALSE(r.has_value());
    CHECK(std::string(r.detail()).find("nodes/1/properties is longer than 65536 bytes") != std::string::npos);
  }
  SUBCASE("a missing properties file names the errno") {
    temp_tree t;
    t.mi300x(true);
    fs::remove(t.root / "nodes/1/properties");
    auto r = kfd::try_read_topology(t.root);
    REQUIRE_FALSE(r.has_value());
    CHECK(std::string(r.detail()).find("No such file or directory") != std::string::npos);
  }
}

}  // namespace AQ_UNITY_ID
