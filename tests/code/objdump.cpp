// tests/code/objdump.cpp — the aqueduct-objdump example on real fixtures. Expected lines: the
// bundle IDs clang-offload-bundler-19 --list prints, sizes of the original code objects, and the
// selections the spec's rules give (spec §6).
#include "oracle.hpp"

#include <cstdio>
#include <filesystem>

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
