// The processor table against Debian's LLVM 19 (the expected values come from the tools, not from
// the table): the set of gfx9…gfx12 processors and generic targets that `llc-19 -mcpu=help` lists,
// and for each of them the EF_AMDGPU_MACH (and generic version) that llvm-mc-19 writes into the
// e_flags of an empty code-object-v6 object.
#include <aqueduct/arch/processors.hpp>

#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include <unistd.h>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

namespace arch = aqueduct::arch;

namespace {
std::string run(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  ::pclose(p);
  return out;
}
bool in_scope(const std::string& name) {  // gfx9 … gfx12 and their generics
  return name.rfind("gfx9", 0) == 0 || name.rfind("gfx10", 0) == 0 || name.rfind("gfx11", 0) == 0 ||
         name.rfind("gfx12", 0) == 0;
}
}  // namespace

TEST_CASE("table lists exactly the gfx9..gfx12 processors llc-19 knows") {
  const std::string help = run(std::string(AQUEDUCT_TEST_LLC) + " -march=amdgcn -mcpu=help");
  const auto begin = help.find("Available CPUs");
  const auto end = help.find("Available features");
  REQUIRE(begin != std::string::npos);
  REQUIRE(end != std::string::npos);
  std::istringstream lines(help.substr(begin, end - begin));
  std::set<std::string> llvm, ours;
  for (std::string line; std::getline(lines, line);) {
    std::istringstream ls(line);
    std::string name, dash;
    if (ls >> name >> dash && dash == "-" && in_scope(name)) llvm.insert(name);
  }
  REQUIRE(llvm.size() > 30);  // the parse found the list
  for (const auto& p : arch::processors())
    if (p.in_llvm19) ours.insert(std::string(p.name));
  CHECK(llvm == ours);
  for (const auto& p : arch::processors())
    if (!p.in_llvm19) CHECK_MESSAGE(llvm.count(std::string(p.name)) == 0, p.name, " is marked unknown to LLVM 19");
}

TEST_CASE("EF_AMDGPU_MACH of every LLVM 19 processor equals what llvm-mc-19 writes") {
  const auto dir = std::filesystem::temp_directory_path() / ("aqueduct-arch-mc-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  for (const auto& p : arch::processors()) {
    if (!p.in_llvm19) continue;
    CAPTURE(p.name);
    const auto obj = dir / (std::string(p.name) + ".o");
    const std::string out = run(std::string(AQUEDUCT_TEST_LLVM_MC) + " -triple=amdgcn-amd-amdhsa -mcpu=" + std::string(p.name) +
                                " -filetype=obj --amdhsa-code-object-version=6 -o " + obj.string() + " /dev/null");
    std::ifstream f(obj, std::ios::binary);
    REQUIRE_MESSAGE(f.good(), out);
    unsigned char hdr[64]{};
    f.read(reinterpret_cast<char*>(hdr), sizeof hdr);
    REQUIRE(f.gcount() == 64);
    const std::uint32_t e_flags = hdr[0x30] | hdr[0x31] << 8 | hdr[0x32] << 16 | static_cast<std::uint32_t>(hdr[0x33]) << 24;
    CHECK((e_flags & 0xff) == p.ef_mach);
    CHECK((e_flags >> 24) == (p.is_generic ? 1u : 0u));  // EF_AMDGPU_GENERIC_VERSION
    // xnack/sramecc "any" bits are set exactly when the processor supports the feature (v4+).
    CHECK(((e_flags & 0x300) == 0x100) == p.xnack);
    CHECK(((e_flags & 0xc00) == 0x400) == p.sramecc);
  }
  std::filesystem::remove_all(dir);
}

}  // namespace AQ_UNITY_ID
