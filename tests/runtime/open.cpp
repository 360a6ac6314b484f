// runtime: system::open() uses the emulator only when asked (AQUEDUCT_EMULATE, open_emulated,
// open_options::machine) or when there is no /dev/kfd at all; a /dev/kfd that exists but cannot
// be opened is an error that says why and how to ask for the emulator (issue 10 item 8). The KFD
// path is injected: a directory exists but open(O_RDWR) refuses it (EISDIR) even for root, which
// stands for a device node the user may not open; a path that does not exist stands for a machine
// without the amdkfd driver. Expected texts: the errno names from strerror, the advice from the
// issue (group, AQUEDUCT_EMULATE, open_emulated).
#include <aqueduct/runtime.hpp>

#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include <unistd.h>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

namespace aq = aqueduct;
namespace rt = aqueduct::runtime;

namespace {
struct no_emulate_env {
  no_emulate_env() {
    if (const char* o = std::getenv(rt::emulate_env)) old = o, had = true;
    ::unsetenv(rt::emulate_env);
  }
  ~no_emulate_env() {
    if (had) ::setenv(rt::emulate_env, old.c_str(), 1);
  }
  std::string old;
  bool had = false;
};
}  // namespace

TEST_CASE("a KFD node that exists but cannot be opened is an error, not a silent emulator") {
  no_emulate_env env;
  const auto dir = std::filesystem::temp_directory_path() / ("aqueduct-open-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  rt::open_options o;
  o.kfd_path = dir;  // exists; open(O_RDWR) fails with EISDIR
  auto sys = rt::system::try_open(o);
  std::filesystem::remove(dir);
  REQUIRE_FALSE(sys.has_value());
  CHECK(sys.get_failure() == aq::errc::kfd_unavailable);
  CHECK(sys.get_failure().os_errno() == EISDIR);
  const std::string text(sys.detail());
  CHECK_MESSAGE(text.find(dir.string()) != std::string::npos, text);  // names the path
  CHECK_MESSAGE(text.find("Is a directory") != std::string::npos, text);  // says why
  CHECK_MESSAGE(text.find("'render'") != std::string::npos, text);  // the group advice
  CHECK_MESSAGE(text.find("AQUEDUCT_EMULATE=") != std::string::npos, text);  // how to ask for emulation
  CHECK_MESSAGE(text.find("open_emulated") != std::string::npos, text);
  // Asking for the emulator still works with the same options.
  o.device = rt::device_choice::emulated;
  auto emulated = rt::system::try_open(o);
  REQUIRE(emulated.has_value());
  CHECK(emulated->emulated());
}

TEST_CASE("no KFD node at all: the emulator, and how_chosen() says so") {
  no_emulate_env env;
  rt::open_options o;
  o.kfd_path = "/nonexistent/aqueduct-no-kfd";
  auto sys = rt::system::try_open(o);
  REQUIRE_MESSAGE(sys.has_value(), std::string(sys.detail()));
  CHECK(sys->emulated());
  CHECK(sys->default_agent().gfx_name() == "gfx942");  // default_machine = mi300x
  CHECK(sys->how_chosen().find("no /nonexistent/aqueduct-no-kfd") != std::string::npos);
  // ... unless only the real device was asked for.
  o.device = rt::device_choice::real;
  auto real = rt::system::try_open(o);
  REQUIRE_FALSE(real.has_value());
  CHECK(real.get_failure().os_errno() == ENOENT);
}

TEST_CASE("open_emulated: the emulator on request") {
  auto sys = rt::system::open_emulated("rx7900xtx");
  CHECK(sys.emulated());
  CHECK(sys.default_agent().gfx_name() == "gfx1100");
}

}  // namespace AQ_UNITY_ID
