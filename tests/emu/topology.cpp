// tests/emu/topology.cpp — presets, machine_config parsing and the sysfs tree the emulated device
// writes. Expected values: spec/kfd.md §6.2 (key order of node_show), §6.5 B (MI300X capture),
// §6.5 H (RX 7900 XTX), §3.1 (doorbell slice).
#include "emu_session.hpp"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

using namespace emu_test;

namespace {
std::vector<std::string> keys_of(const std::filesystem::path& file) {
  std::vector<std::string> keys;
  std::ifstream f(file);
  std::string line;
  while (std::getline(f, line)) keys.push_back(line.substr(0, line.find(' ')));
  return keys;
}
std::string slurp(const std::filesystem::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}
}  // namespace

TEST_CASE("machine_config::parse") {
  auto m = emu::machine_config::try_parse("mi300x,2*rx7900xtx");
  REQUIRE(m);
  REQUIRE(m->gpus.size() == 3);
  CHECK(m->gpus[0].gfx_target_version == 90402);
  CHECK(m->gpus[2].gfx_target_version == 110000);
  CHECK_FALSE(emu::machine_config::try_parse("gfx9000"));
  CHECK_FALSE(emu::machine_config::try_parse(""));
  CHECK_FALSE(emu::machine_config::try_parse("0*mi300x"));
  CHECK(emu::find_preset("mi250x")->gfx_target_version == 90010);
  CHECK(emu::find_preset("rx6900xt")->gfx_target_version == 100300);
  CHECK(emu::find_preset("nope") == nullptr);
}

TEST_CASE("sysfs tree: kernel print order, real MI300X values, removed on destruction") {
  std::filesystem::path root;
  {
    session s(emu::machine_config::parse("mi300x,mi300x,rx7900xtx"));
    root = s.dev.sysfs_root();
    REQUIRE(std::filesystem::exists(root / "generation_id"));
    CHECK(std::filesystem::exists(root / "system_properties"));
    CHECK(slurp(root / "nodes/0/gpu_id") == "0\n");
    // node_show order (spec/kfd.md §6.2) with cwsr_size / ctl_stack_size (71776e0965f9)
    const std::vector<std::string> order = {
        "cpu_cores_count", "simd_count", "mem_banks_count", "caches_count", "io_links_count", "p2p_links_count",
        "cpu_core_id_base", "simd_id_base", "max_waves_per_simd", "lds_size_in_kb", "gds_size_in_kb", "num_gws",
        "wave_front_size", "array_count", "simd_arrays_per_engine", "cu_per_simd_array", "simd_per_cu",
        "max_slots_scratch_cu", "gfx_target_version", "vendor_id", "device_id", "location_id", "domain",
        "drm_render_minor", "hive_id", "num_sdma_engines", "num_sdma_xgmi_engines", "num_sdma_queues_per_engine",
        "num_cp_queues", "cwsr_size", "ctl_stack_size", "max_engine_clk_fcompute", "local_mem_size", "fw_version",
        "capability", "capability2", "debug_prop", "sdma_fw_version", "unique_id", "num_xcc",
        "max_engine_clk_ccompute"};
    CHECK(keys_of(root / "nodes/1/properties") == order);
    const auto p = read_properties(root / "nodes/1/properties");
    // MI300X capture (spec/kfd.md §6.5 B)
    CHECK(p.at("simd_count") == 1216);
    CHECK(p.at("array_count") == 32);
    CHECK(p.at("gfx_target_version") == 90402);
    CHECK(p.at("device_id") == 29857);
    CHECK(p.at("num_sdma_xgmi_engines") == 14);
    CHECK(p.at("num_cp_queues") == 24);
    CHECK(p.at("cwsr_size") == 23203840);
    CHECK(p.at("ctl_stack_size") == 12288);
    CHECK(p.at("capability") == 2893521536u);
    CHECK(p.at("num_xcc") == 8);
    CHECK(p.at("drm_render_minor") >= 128);
    CHECK(read_properties(root / "nodes/1/mem_banks/0/properties").at("size_in_bytes") == 206141652992ull);
    // the two MI300X share a hive: XGMI (type 11) links between them; PCIe (type 2) to the CPU
    CHECK(p.at("io_links_count") == 2);
    CHECK(read_properties(root / "nodes/1/io_links/0/properties").at("type") == 2);
    const auto x = read_properties(root / "nodes/1/io_links/1/properties");
    CHECK(x.at("type") == 11);
    CHECK(x.at("node_to") == 2);
    CHECK(read_properties(root / "nodes/3/properties").at("io_links_count") == 1);
    // RX 7900 XTX (spec/kfd.md §6.5 H)
    const auto r = read_properties(root / "nodes/3/properties");
    CHECK(r.at("gfx_target_version") == 110000);
    CHECK(r.at("num_sdma_queues_per_engine") == 6);
    CHECK(r.at("cwsr_size") == 46047232);
    CHECK(r.at("ctl_stack_size") == 40960);
    CHECK(read_properties(root / "nodes/0/properties").at("io_links_count") == 3);
    // distinct non-zero gpu_ids and render minors, matching the device's view
    std::set<std::uint64_t> ids, minors;
    for (int n = 1; n <= 3; ++n) {
      const auto id = std::stoull(slurp(root / "nodes" / std::to_string(n) / "gpu_id"));
      CHECK(id != 0);
      CHECK(id <= 0xFFFF);
      ids.insert(id);
      CHECK(id == s.gpu(static_cast<std::size_t>(n - 1)).gpu_id);
      minors.insert(read_properties(root / "nodes" / std::to_string(n) / "properties").at("drm_render_minor"));
    }
    CHECK(ids.size() == 3);
    CHECK(minors.size() == 3);
    CHECK(s.gpu().doorbell_slice == 8192);
  }
  CHECK_FALSE(std::filesystem::exists(root));
}

TEST_CASE("pre-71776e0965f9 kernels do not export the CWSR sizes") {
  auto cfg = emu::machine_config::parse("rx7900xtx");
  cfg.export_cwsr_sizes = false;
  session s(std::move(cfg));
  const auto p = read_properties(s.dev.sysfs_root() / "nodes/1/properties");
  CHECK(p.count("cwsr_size") == 0);
  CHECK(p.count("ctl_stack_size") == 0);
  CHECK(p.at("num_xcc") == 1);
}

// Issue 13 bug 16: a program on the emulator that aborts (or is killed, or Ctrl-C'd) left its
// temporary topology tree behind, and dozens accumulated. The next device created anywhere must
// remove the trees of processes that no longer exist, and leave a live process's tree alone.
TEST_CASE("bug 16: the topology tree of an aborted process is gone once another device is created") {
  // A private temporary directory (TMPDIR, inherited by the child): a device created by another
  // test process meanwhile would sweep the orphan from the shared /tmp before the control below.
  std::string priv = (std::filesystem::temp_directory_path() / "aqueduct-bug16-XXXXXX").string();
  REQUIRE(::mkdtemp(priv.data()) != nullptr);
  const char* old_tmpdir = std::getenv("TMPDIR");
  const std::string saved = old_tmpdir ? old_tmpdir : "";
  ::setenv("TMPDIR", priv.c_str(), 1);
  struct restore {
    bool had;
    std::string saved, dir;
    ~restore() {
      if (had) ::setenv("TMPDIR", saved.c_str(), 1);
      else ::unsetenv("TMPDIR");
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  } restore_tmpdir{old_tmpdir != nullptr, saved, priv};
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  std::fflush(nullptr);
  const pid_t child = ::fork();
  if (child == 0) {
    auto dev = emu::device::try_create(emu::machine_config::parse("mi300x"));
    const std::string root = dev ? dev->sysfs_root().string() : std::string();
    (void)!::write(fds[1], root.data(), root.size());
    ::close(fds[1]);
    ::kill(::getpid(), SIGKILL);  // like kill -9 (or an abort): no destructor, no handler runs
    ::_exit(3);
  }
  ::close(fds[1]);
  char buf[4096];
  const ssize_t n = ::read(fds[0], buf, sizeof buf);
  ::close(fds[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  REQUIRE(WIFSIGNALED(status));
  REQUIRE(n > 0);
  const std::filesystem::path orphan(std::string(buf, static_cast<std::size_t>(n)));
  REQUIRE(std::filesystem::exists(orphan / "generation_id"));  // control: abort did leave it
  session live(emu::machine_config::parse("mi300x"));        // any new device sweeps
  CHECK_FALSE(std::filesystem::exists(orphan));
  CHECK(std::filesystem::exists(live.dev.sysfs_root() / "generation_id"));
  // A second device in this (live) process keeps the first one's tree.
  session second(emu::machine_config::parse("rx7900xtx"));
  CHECK(std::filesystem::exists(live.dev.sysfs_root() / "generation_id"));
}

}  // namespace AQ_UNITY_ID
