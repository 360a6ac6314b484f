// tests/emu/isa_asm.hpp — assembles test programs with llvm-mc-19 (wave64) for the instruction
// semantics tests (tests/emu/isa_semantics.cpp, isa_buffer_dpp.cpp).
#pragma once

#include <doctest/doctest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

namespace aq_test {

// Assembles `text` (instructions separated by newlines, programs ending in s_endpgm) with
// `llvm_mc` for `mcpu`; returns the programs' dwords.
inline std::vector<std::vector<std::uint32_t>> assemble(const char* llvm_mc, const char* mcpu, const std::string& text) {
  using u32 = std::uint32_t;
  char path[] = "/tmp/aq-isa-sem-XXXXXX";
  const int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  close(fd);
  { std::ofstream(path) << text; }
  const std::string cmd = std::string(llvm_mc) + " -triple=amdgcn-amd-amdhsa -mcpu=" + mcpu +
                          " -mattr=+wavefrontsize64 -show-encoding " + path + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  std::vector<std::vector<u32>> progs(1);
  std::string out;
  char line[1024];
  std::vector<std::uint8_t> bytes;
  while (std::fgets(line, sizeof line, p)) {
    out += line;
    const char* e = std::strstr(line, "; encoding: [");
    if (!e) continue;
    for (const char* c = e + 13; *c && *c != ']';) {
      bytes.push_back(static_cast<std::uint8_t>(std::strtoul(c, const_cast<char**>(&c), 16)));
      if (*c == ',') ++c;
    }
    if (std::strstr(line, "s_endpgm")) {
      for (std::size_t i = 0; i + 3 < bytes.size(); i += 4)
        progs.back().push_back(u32(bytes[i]) | u32(bytes[i + 1]) << 8 | u32(bytes[i + 2]) << 16 | u32(bytes[i + 3]) << 24);
      bytes.clear();
      progs.emplace_back();
    }
  }
  pclose(p);
  std::remove(path);
  INFO(out);
  REQUIRE(out.find("error") == std::string::npos);
  progs.pop_back();
  return progs;
}

}  // namespace aq_test
