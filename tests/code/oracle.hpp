// tests/code/oracle.hpp — fixture access and the outside oracles the code/ tests compare against:
// llvm-readelf-19 dumps (*.readelf) and clang-offload-bundler-19 --list (*.list) written by
// make-fixtures.sh, and Debian's Comgr 5.2.3 (amd_comgr_lookup_code_object, metadata queries).
#pragma once

#include <aqueduct/code/bytes.hpp>

#include <amd_comgr.h>
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace fx {

inline std::string dir() {
  const char* d = std::getenv("AQUEDUCT_CODE_FIXTURES");
  REQUIRE_MESSAGE(d != nullptr, "AQUEDUCT_CODE_FIXTURES not set (run through ctest: fixture code.fixtures)");
  return d;
}
inline std::string path(const std::string& rel) { return dir() + "/" + rel; }
inline std::vector<std::byte> bytes(const std::string& rel) {
  auto r = aqueduct::code::try_read_file(path(rel));
  REQUIRE_MESSAGE(r.has_value(), "missing fixture " << rel);
  return std::move(*r);
}
inline std::string text(const std::string& rel) {
  std::ifstream f(path(rel));
  REQUIRE_MESSAGE(f.good(), "missing fixture " << rel);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}
inline std::vector<std::string> list_dir(const std::string& sub, const std::string& suffix) {
  std::vector<std::string> out;
  std::ifstream idx;
  // std::filesystem is fine in tests.
  for (const auto& e : std::filesystem::directory_iterator(path(sub)))
    if (e.path().string().ends_with(suffix)) out.push_back(sub + "/" + e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

// ---- llvm-readelf-19 text --------------------------------------------------------------------
struct readelf {
  std::uint32_t flags = 0;
  std::vector<std::string> flag_words;  // "gfx906", "xnack", "sramecc+", "generic_v1"
  unsigned abi_version = 0;
  std::string type;  // "DYN", "REL"
  unsigned phnum = 0, shnum = 0;
  struct section { unsigned index; std::string name, type; std::uint64_t addr, off, size; };
  std::vector<section> sections;
  struct symbol { std::string table, name, type, bind, vis; std::uint64_t value, size; };
  std::vector<symbol> symbols;
  std::vector<std::pair<std::string, std::uint64_t>> notes;  // owner, data size
  struct reloc { std::uint64_t offset; std::string type; std::uint64_t sym_value; std::string sym; std::int64_t addend; };
  std::vector<reloc> relocs;
  struct load { std::uint64_t off, vaddr, filesz, memsz; std::string flags; };
  std::vector<load> loads;
};

inline readelf parse_readelf(const std::string& t) {
  readelf r;
  std::smatch m;
  std::istringstream in(t);
  std::string line, table;
  bool in_notes = false;
  static const std::regex flags_re(R"(^\s+Flags:\s+0x([0-9A-Fa-f]+)(.*)$)");
  static const std::regex abi_re(R"(^\s+ABI Version:\s+(\d+))");
  static const std::regex type_re(R"(^\s+Type:\s+(\w+))");
  static const std::regex ph_re(R"(^\s+Number of program headers:\s+(\d+))");
  static const std::regex sh_re(R"(^\s+Number of section headers:\s+(\d+))");
  static const std::regex sec_re(R"(^\s+\[\s*(\d+)\] (\S+)\s+(\S+)\s+([0-9a-f]{16}) ([0-9a-f]+) ([0-9a-f]+) )");
  static const std::regex tab_re(R"(^Symbol table '(\S+)')");
  static const std::regex sym_re(R"(^\s+\d+: ([0-9a-f]{16})\s+(\d+)\s+(\w+)\s+(\w+)\s+(\w+)\s+\S+ ?(\S*)\s*$)");
  // "00..38c8  00..000d R_AMDGPU_RELATIVE64               38b0" or "... R_AMDGPU_ABS64  <value> table + 0"
  static const std::regex rel_re(R"(^([0-9a-f]{16})\s+[0-9a-f]{16}\s+(R_AMDGPU_\w+)\s+([0-9a-f]+)(?:\s+(\S+) ([+-]) ([0-9a-f]+))?\s*$)");
  static const std::regex load_re(R"(^\s+LOAD\s+0x([0-9a-f]+) 0x([0-9a-f]+) 0x[0-9a-f]+ 0x([0-9a-f]+) 0x([0-9a-f]+) (.{3}))");
  static const std::regex note_re(R"(^\s+(\S+)\s+0x([0-9a-f]+)\s+NT_)");
  while (std::getline(in, line)) {
    if (std::regex_search(line, m, flags_re)) {
      r.flags = static_cast<std::uint32_t>(std::stoul(m[1], nullptr, 16));
      std::string rest = m[2];
      std::regex word(R"(,\s*([^,\s]+))");
      for (auto it = std::sregex_iterator(rest.begin(), rest.end(), word); it != std::sregex_iterator(); ++it) r.flag_words.push_back((*it)[1]);
    } else if (std::regex_search(line, m, abi_re)) r.abi_version = std::stoul(m[1]);
    else if (std::regex_search(line, m, type_re)) r.type = m[1];
    else if (std::regex_search(line, m, ph_re)) r.phnum = std::stoul(m[1]);
    else if (std::regex_search(line, m, sh_re)) r.shnum = std::stoul(m[1]);
    else if (std::regex_search(line, m, sec_re))
      r.sections.push_back({static_cast<unsigned>(std::stoul(m[1])), m[2], m[3], std::stoull(m[4], nullptr, 16), std::stoull(m[5], nullptr, 16), std::stoull(m[6], nullptr, 16)});
    else if (std::regex_search(line, m, tab_re)) table = m[1];
    else if (!table.empty() && std::regex_search(line, m, sym_re))
      r.symbols.push_back({table, m[6], m[3], m[4], m[5], std::stoull(m[1], nullptr, 16), std::stoull(m[2])});
    else if (std::regex_search(line, m, rel_re)) {
      readelf::reloc x{std::stoull(m[1], nullptr, 16), m[2], std::stoull(m[3], nullptr, 16), m[4], 0};
      if (m[4].matched) x.addend = (m[5] == "-" ? -1 : 1) * static_cast<std::int64_t>(std::stoull(m[6], nullptr, 16));
      else { x.addend = static_cast<std::int64_t>(x.sym_value); x.sym_value = 0; }  // RELATIVE: the column is the addend
      r.relocs.push_back(x);
    } else if (std::regex_search(line, m, load_re))
      r.loads.push_back({std::stoull(m[1], nullptr, 16), std::stoull(m[2], nullptr, 16), std::stoull(m[3], nullptr, 16), std::stoull(m[4], nullptr, 16), m[5]});
    else if (line.starts_with("Displaying notes")) in_notes = true;
    else if (in_notes && std::regex_search(line, m, note_re)) r.notes.emplace_back(m[1], std::stoull(m[2], nullptr, 16));
    if (line.empty()) table.clear();
  }
  return r;
}

// clang-offload-bundler-19 --list output (IDs in hash-map order: compare as sets).
inline std::multiset<std::string> bundler_list(const std::string& rel) {
  std::multiset<std::string> ids;
  std::istringstream in(text(rel + ".list"));
  std::string l;
  while (std::getline(in, l))
    if (!l.empty()) ids.insert(l);
  return ids;
}

// ---- Comgr -----------------------------------------------------------------------------------
struct comgr_data {
  amd_comgr_data_t d{};
  comgr_data(amd_comgr_data_kind_t kind, const std::vector<std::byte>& b) {
    REQUIRE(amd_comgr_create_data(kind, &d) == AMD_COMGR_STATUS_SUCCESS);
    REQUIRE(amd_comgr_set_data(d, b.size(), reinterpret_cast<const char*>(b.data())) == AMD_COMGR_STATUS_SUCCESS);
  }
  ~comgr_data() { amd_comgr_release_data(d); }
  comgr_data(const comgr_data&) = delete;
  comgr_data& operator=(const comgr_data&) = delete;
};

// Comgr's pick for ONE agent ISA name (spec §6.3a: one name per call): the entry's offset and
// size in the bundle, or nullopt when nothing matches.
inline std::optional<std::pair<std::uint64_t, std::uint64_t>> comgr_lookup(const std::vector<std::byte>& bundle, const std::string& isa) {
  comgr_data d(AMD_COMGR_DATA_KIND_FATBIN, bundle);
  amd_comgr_code_object_info_t info{isa.c_str(), 0, 0};
  auto st = amd_comgr_lookup_code_object(d.d, &info, 1);
  REQUIRE_MESSAGE(st == AMD_COMGR_STATUS_SUCCESS, "comgr lookup status " << st);
  if (info.size == 0) return std::nullopt;
  return std::make_pair(info.offset, static_cast<std::uint64_t>(info.size));
}

struct comgr_meta {
  amd_comgr_metadata_node_t n{};
  bool owned = false;
  comgr_meta() = default;
  explicit comgr_meta(amd_comgr_metadata_node_t x) : n(x), owned(true) {}
  comgr_meta(comgr_meta&& o) noexcept : n(o.n), owned(o.owned) { o.owned = false; }
  ~comgr_meta() { if (owned) amd_comgr_destroy_metadata(n); }
  std::optional<comgr_meta> get(const char* key) const {
    amd_comgr_metadata_node_t v;
    if (amd_comgr_metadata_lookup(n, key, &v) != AMD_COMGR_STATUS_SUCCESS) return std::nullopt;
    return comgr_meta(v);
  }
  std::string str() const {
    size_t sz = 0;
    REQUIRE(amd_comgr_get_metadata_string(n, &sz, nullptr) == AMD_COMGR_STATUS_SUCCESS);
    std::string s(sz, '\0');
    REQUIRE(amd_comgr_get_metadata_string(n, &sz, s.data()) == AMD_COMGR_STATUS_SUCCESS);
    if (!s.empty() && s.back() == '\0') s.pop_back();
    return s;
  }
  std::uint64_t num() const { return std::stoull(str()); }
  size_t list_size() const {
    size_t sz = 0;
    REQUIRE(amd_comgr_get_metadata_list_size(n, &sz) == AMD_COMGR_STATUS_SUCCESS);
    return sz;
  }
  comgr_meta at(size_t i) const {
    amd_comgr_metadata_node_t v;
    REQUIRE(amd_comgr_index_list_metadata(n, i, &v) == AMD_COMGR_STATUS_SUCCESS);
    return comgr_meta(v);
  }
};

inline comgr_meta comgr_metadata(const comgr_data& d) {
  amd_comgr_metadata_node_t n;
  REQUIRE(amd_comgr_get_data_metadata(d.d, &n) == AMD_COMGR_STATUS_SUCCESS);
  return comgr_meta(n);
}

}  // namespace fx
