// tests/code/objdump.cpp — the aqueduct-objdump example on real fixtures. Expected lines: the
// bundle IDs clang-offload-bundler-19 --list prints, sizes of the original code objects, and the
// selections the spec's rules give (spec §6).
#include "oracle.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

namespace {
std::string run(const std::string& args) {
  const char* exe = std::getenv("AQUEDUCT_OBJDUMP");
  REQUIRE_MESSAGE(exe != nullptr, "AQUEDUCT_OBJDUMP not set");
  std::string cmd = std::string(exe) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p);
  std::string out;
  char buf[4096];
  while (std::size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  pclose(p);
  return out;
}
bool has(const std::string& out, const std::string& needle) { return out.find(needle) != std::string::npos; }
}  // namespace

TEST_CASE("objdump: CCOB format, one line per entry, selection") {
  auto out = run(fx::path("ccob/host-align4096.co") + " --agent gfx1031 --extended");
  CAPTURE(out);
  CHECK(has(out, "compressed offload bundle (CCOB)"));
  CHECK(has(out, "CCOB version 2, zstd, 2265 compressed -> 26056 bytes"));
  CHECK(has(out, "4 entries"));
  for (const auto& id : fx::bundler_list("ccob/host-align4096.co")) CHECK(has(out, id));
  auto size = std::to_string(std::filesystem::file_size(fx::path("elf/vadd-gfx1100.hsaco")));
  CHECK(has(out, size + "  gfx1100"));
  CHECK(has(out, "selected: hipv4-amdgcn-amd-amdhsa--gfx1030 (extended)"));
}

TEST_CASE("objdump: selection outcomes") {
  CHECK(has(run(fx::path("bundle/generic.co") + " --agent gfx1103"), "selected: hipv4-amdgcn-amd-amdhsa--gfx11-generic (generic)"));
  CHECK(has(run(fx::path("bundle/generic.co") + " --agent gfx1100"), "selected: hipv4-amdgcn-amd-amdhsa--gfx1100 (exact)"));
  auto none = run(fx::path("bundle/host-align4096.co") + " --agent gfx1031");
  CHECK(has(none, "selected: none (no entry fits gfx1031"));
  CHECK(has(none, "extended-families policy"));
}

TEST_CASE("objdump: a code object's processor, features, version and kernels") {
  auto out = run(fx::path("elf/vadd-gfx90a_srameccp_xnack-.hsaco"));
  CAPTURE(out);
  CHECK(has(out, "processor: gfx90a"));
  CHECK(has(out, "xnack: off, sramecc: on"));
  CHECK(has(out, "code object version: 5"));
  CHECK(has(out, "kernel vadd"));
  CHECK(has(out, "kernarg_size 288"));
  CHECK(has(out, "arg @96 size 2 hidden_grid_dims"));
  auto bad = run(fx::path("ccob/payload.md5"));
  CHECK(has(bad, "unsupported format"));
}

// Issue 13: bounded reads, unknown processors and terminal escapes.
namespace {
int run_rc(const std::string& args, std::string& out) {
  const char* exe = std::getenv("AQUEDUCT_OBJDUMP");
  REQUIRE(exe != nullptr);
  FILE* p = popen((std::string(exe) + " " + args + " 2>&1").c_str(), "r");
  REQUIRE(p);
  char buf[4096];
  while (std::size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  const int st = pclose(p);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
}  // namespace

TEST_CASE("bug 15: aqueduct-objdump /dev/zero is a clean error naming the path, not an endless read") {
  std::string out;
  const int rc = run_rc("/dev/zero", out);
  INFO(out);
  CHECK(rc == 1);  // before: std::bad_alloc, SIGABRT (134)
  CHECK(has(out, "/dev/zero"));
  CHECK(has(out, "device"));
}

TEST_CASE("message: aqueduct-objdump --agent garbage is refused as an unknown processor") {
  std::string out;
  const int rc = run_rc(fx::path("bundle/generic.co") + " --agent garbage", out);
  INFO(out);
  CHECK(rc == 2);
  CHECK(has(out, "--agent garbage"));
  CHECK(has(out, "unknown processor"));
  CHECK_FALSE(has(out, "selected:"));
  std::string ok;
  CHECK(run_rc(fx::path("bundle/generic.co") + " --agent gfx1100", ok) == 0);  // control
}

TEST_CASE("message: bundle IDs with terminal escape sequences are printed escaped") {
  // A clang offload bundle (spec/code-objects.md §5.1): magic, u64 count, then per entry u64
  // offset, u64 size, u64 id length, id; one empty entry whose ID clears the screen.
  const std::string id = "host-x86_64-unknown-linux-gnu\x1b[2J\x1b]0;owned\x07";
  std::string b = "__CLANG_OFFLOAD_BUNDLE__";
  auto u64 = [&](std::uint64_t v) {
    for (int i = 0; i < 8; ++i) b.push_back(static_cast<char>(v >> (8 * i)));
  };
  u64(1);
  const std::uint64_t data_at = 24 + 8 + 24 + id.size();
  u64(data_at);
  u64(0);
  u64(id.size());
  b += id;
  const std::string path = "/tmp/aqueduct-escape-" + std::to_string(::getpid()) + ".co";
  { std::ofstream(path, std::ios::binary) << b; }
  std::string out;
  const int rc = run_rc(path, out);
  ::unlink(path.c_str());
  INFO(out);
  CHECK(rc == 0);
  CHECK(has(out, "\\x1b[2J"));
  CHECK(out.find('\x1b') == std::string::npos);
  CHECK(out.find('\x07') == std::string::npos);
}

}  // namespace AQ_UNITY_ID
