// runtime: errors say what to change (issue 13, "messages that do not help"). Each case checks
// that the text names the thing: the queue limit, the priority range, the SDMA engine ids, the
// kfd_path, the bundle. Expected facts: KFD_MAX_QUEUE_PRIORITY = 15 (kfd_priv.h), CREATE_QUEUE's
// ENOSPC at the per-process queue limit (kfd_process_queue_manager.c), strerror(ENOENT) in glibc.
#include "host_kernels.hpp"

#include <doctest/doctest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

namespace aq = aqueduct;
namespace rt = aqueduct::runtime;
namespace emu = aqueduct::emu;
using namespace rt_test;

namespace {
template <class R>
std::string detail_of(const R& r) {
  return r.has_value() ? std::string("(no error)") : std::string(r.detail());
}
bool contains(const std::string& s, std::string_view what) { return s.find(what) != std::string::npos; }
}  // namespace

TEST_CASE("message: the per-process queue limit is out_of_resources and says to destroy a queue") {
  auto cfg = emu::machine_config::parse("mi300x");
  cfg.max_queues_per_process = 2;  // the kernel's 127/255, made small
  auto sys = rt::system::try_open_emulated(std::move(cfg));
  REQUIRE(sys.has_value());
  const auto& gpu = sys->default_agent();
  std::vector<rt::queue> qs;
  for (int i = 0; i < 2; ++i) qs.push_back(gpu.make_queue(rt::aql, {.slots = 16}));
  auto third = gpu.try_make_queue(rt::aql, {.slots = 16});
  REQUIRE_FALSE(third.has_value());
  const std::string d = detail_of(third);
  INFO(d);
  CHECK(third.error() == aq::errc::out_of_resources);  // was ioctl_failed "No space left on device"
  CHECK(contains(d, "queue limit"));
  CHECK(contains(d, "destroy a queue"));
  CHECK(contains(d, "ENOSPC"));  // the errno stays
  qs.pop_back();
  CHECK(gpu.try_make_queue(rt::aql, {.slots = 16}).has_value());  // control: one freed, one more fits
}

TEST_CASE("message: a queue priority out of 0..15 names the field and the range") {
  auto sys = rt::system::open({.machine = "mi300x"});
  const auto& gpu = sys.default_agent();
  auto q = gpu.try_make_queue(rt::aql, {.slots = 16, .priority = 16});
  REQUIRE_FALSE(q.has_value());
  const std::string d = detail_of(q);
  INFO(d);
  CHECK(q.error() == aq::errc::invalid_argument);  // was a bare EINVAL from CREATE_QUEUE
  CHECK(contains(d, "priority 16"));
  CHECK(contains(d, "0..15"));
  auto s = gpu.try_make_queue(rt::sdma, {.priority = 99});
  CHECK(contains(detail_of(s), "priority 99"));
  CHECK(gpu.try_make_queue(rt::aql, {.slots = 16, .priority = 15}).has_value());  // control
}

TEST_CASE("message: an SDMA engine_id the GPU does not have names its engines") {
  auto sys = rt::system::open({.machine = "mi300x"});
  const auto& gpu = sys.default_agent();
  auto q = gpu.try_make_queue(rt::sdma, {.engine_id = 99});
  REQUIRE_FALSE(q.has_value());
  const std::string d = detail_of(q);
  INFO(d);
  CHECK(q.error() == aq::errc::invalid_argument);
  CHECK(contains(d, "engine_id 99"));
  CHECK(contains(d, "ids 0.."));
  CHECK(gpu.try_make_queue(rt::sdma, {.engine_id = 0}).has_value());  // control
}

TEST_CASE("message: a kfd_path that does not open is named, with the errno text, in errors and how_chosen") {
  const char* old = std::getenv(rt::emulate_env);
  const std::string saved = old ? old : "";
  ::unsetenv(rt::emulate_env);
  const std::filesystem::path bad = "/nonexistent/aqueduct-kfd";
  rt::open_options o;
  o.kfd_path = bad;
  o.device = rt::device_choice::real;
  auto real = rt::system::try_open(o);
  REQUIRE_FALSE(real.has_value());
  CHECK(contains(detail_of(real), bad.string()));
  CHECK(contains(detail_of(real), "No such file or directory"));
  o.device = rt::device_choice::automatic;
  auto fallback = rt::system::try_open(o);  // automatic: falls back to the emulator
  REQUIRE(fallback.has_value());
  INFO(fallback->how_chosen());
  CHECK(contains(fallback->how_chosen(), bad.string()));
  CHECK_FALSE(contains(fallback->how_chosen(), "/dev/kfd"));  // it was always "/dev/kfd"
  if (old) ::setenv(rt::emulate_env, saved.c_str(), 1);
}

TEST_CASE("message: bundle bytes given to try_load(span) say how to pick an entry") {
  auto sys = rt::system::open({.machine = "mi300x"});
  const auto& gpu = sys.default_agent();
  std::vector<std::byte> bundle(4096, std::byte{0});
  const std::string magic = "__CLANG_OFFLOAD_BUNDLE__";  // clang-offload-bundler's magic (spec §5.1)
  std::memcpy(bundle.data(), magic.data(), magic.size());
  auto e = gpu.try_load(std::span<const std::byte>(bundle));
  REQUIRE_FALSE(e.has_value());
  const std::string d = detail_of(e);
  INFO(d);
  CHECK(contains(d, "offload bundle"));
  CHECK(contains(d, "try_select"));
  CHECK(contains(d, "gfx942"));
  std::memcpy(bundle.data(), "CCOB", 4);
  CHECK(contains(detail_of(gpu.try_load(std::span<const std::byte>(bundle))), "compressed offload bundle"));
}

TEST_CASE("message: overlapping copies are refused (not memmove), on both copy paths") {
  auto sys = rt::system::open({.machine = "mi300x"});
  const auto& gpu = sys.default_agent();
  auto buf = gpu.alloc<std::uint32_t>(1024, rt::memory_kind::host);
  for (bool sdma : {true, false}) {
    CAPTURE(sdma);
    auto e = rt::copy_engine::create(gpu, {.use_sdma = sdma});
    auto r = e.try_copy(aq::gpu_va(buf.va().value + 4), buf.va(), 1024);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error() == aq::errc::invalid_argument);
    CHECK(contains(detail_of(r), "overlap"));
    CHECK(e.try_copy(aq::gpu_va(buf.va().value + 2048), buf.va(), 2048).has_value());  // control: adjacent
  }
}

TEST_CASE("message: a kernel dispatched after its executable was destroyed is reported as freed") {
  auto sys = rt::system::open({.machine = "mi300x"});
  const auto& gpu = sys.default_agent();
  rt::kernel<> k;
  rt::untyped_kernel u;
  {
    auto exe = aq::emu::load(gpu, test_kernels());
    k = exe.get_kernel<>("nothing");
    u = exe.get_untyped_kernel("nothing");
  }
  auto q = gpu.make_queue(rt::aql, {.slots = 16});
  auto p = gpu.make_queue(rt::pm4);
  const std::string typed = detail_of(q.try_dispatch(k, rt::grid{1}, rt::block{1}));
  const std::string untyped = detail_of(q.try_dispatch(u, rt::grid{1}, rt::block{1}));
  const std::string pm4 = detail_of(p.try_dispatch(k, rt::grid{1}, rt::block{1}));
  for (const std::string& d : {typed, untyped, pm4}) {
    INFO(d);
    CHECK(contains(d, "freed"));
    CHECK(contains(d, "nothing"));
  }
  CHECK(q.write_index() == 0);  // refused before anything was published
}

}  // namespace AQ_UNITY_ID
