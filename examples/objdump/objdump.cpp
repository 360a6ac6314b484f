// aqueduct-objdump FILE [--agent TARGET] [--extended] [--gfx11-directional]
//
// For a bundle or CCOB: its format and version, then one line per entry (bundle ID, size,
// processor). For a code object (or each code object entry with -v): processor, features,
// code-object version, kernels with descriptor fields and arguments. --agent TARGET adds
// "selected: BUNDLE_ID (exact|generic|extended)" or "selected: none (REASON)".
#include <aqueduct/abi/kernel_descriptor.hpp>
#include <aqueduct/arch/processors.hpp>
#include <aqueduct/code/fat_binary.hpp>
#include <aqueduct/code/metadata.hpp>

#include <cstdio>
#include <cstring>
#include <optional>
#include <string_view>
#include <string>

namespace code = aqueduct::code;

// Bytes from the file (bundle IDs, names, details that quote them) as text that cannot drive the
// terminal: control characters, DEL and non-ASCII bytes become \xNN.
static std::string printable(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if (c >= 0x20 && c < 0x7f && c != '\\') out.push_back(static_cast<char>(c));
    else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  return out;
}

static void print_code_object(const code::code_object& co, const char* indent) {
  auto t = code::target_of(co);
  std::printf("%sprocessor: %s\n", indent, t.processor.c_str());
  std::printf("%sxnack: %s, sramecc: %s\n", indent, std::string(code::to_string(co.xnack())).c_str(),
              std::string(code::to_string(co.sramecc())).c_str());
  std::printf("%scode object version: %d%s\n", indent, co.version(), co.relocatable() ? " (ET_REL, not loadable)" : "");
  if (co.generic_version()) std::printf("%sgeneric version: %u\n", indent, co.generic_version());
  auto md = co.metadata_note() ? code::try_parse_metadata(*co.metadata_note()) : aqueduct::result<code::code_object_metadata>(code::code_object_metadata{});
  if (!md) std::printf("%smetadata: error: %s\n", indent, printable(md.get_failure().describe()).c_str());
  else if (!md->target.empty()) std::printf("%smetadata target: %s (amdhsa.version %u.%u)\n", indent, printable(md->target).c_str(), md->version_major, md->version_minor);
  for (const auto& k : co.kernels()) {
    aqueduct::abi::kernel_descriptor kd;  // spec §3.1 layout (abi/kernel_descriptor.hpp)
    std::memcpy(&kd, k.descriptor.data(), sizeof kd);
    std::printf("%skernel %s (%s at 0x%llx)\n", indent, printable(k.name).c_str(), printable(k.kd_symbol).c_str(),
                static_cast<unsigned long long>(k.kd_address));
    std::printf("%s  group_segment_fixed_size %u, private_segment_fixed_size %u, kernarg_size %u\n", indent, kd.group_segment_fixed_size,
                kd.private_segment_fixed_size, kd.kernarg_size);
    std::printf("%s  kernel_code_entry_byte_offset %lld, compute_pgm_rsrc1 0x%08x, rsrc2 0x%08x, rsrc3 0x%08x\n", indent,
                static_cast<long long>(kd.kernel_code_entry_byte_offset), kd.compute_pgm_rsrc1, kd.compute_pgm_rsrc2, kd.compute_pgm_rsrc3);
    std::printf("%s  kernel_code_properties 0x%04x, kernarg_preload 0x%04x\n", indent, kd.kernel_code_properties, kd.kernarg_preload);
    if (!md) continue;
    for (const auto& km : md->kernels) {
      if (km.name != k.name && km.symbol != k.kd_symbol) continue;
      std::printf("%s  kernarg segment %llu bytes (align %llu), wavefront %u, sgpr %u, vgpr %u\n", indent,
                  static_cast<unsigned long long>(km.kernarg_segment_size), static_cast<unsigned long long>(km.kernarg_segment_align),
                  km.wavefront_size, km.sgpr_count, km.vgpr_count);
      for (const auto& a : km.args)
        std::printf("%s    arg @%llu size %llu %s%s%s\n", indent, static_cast<unsigned long long>(a.offset),
                    static_cast<unsigned long long>(a.size), a.value_kind.c_str(), a.name.empty() ? "" : " ", a.name.c_str());
    }
  }
}

int main(int argc, char** argv) {
  std::string file, agent;
  code::selection_policy pol;
  bool verbose = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--agent") && i + 1 < argc) agent = argv[++i];
    else if (!std::strcmp(argv[i], "--extended")) pol.allow_extended_families = true;
    else if (!std::strcmp(argv[i], "--gfx11-directional")) pol.allow_gfx11_directional = true;
    else if (!std::strcmp(argv[i], "-v")) verbose = true;
    else if (argv[i][0] != '-' && file.empty()) file = argv[i];
    else {
      std::fprintf(stderr, "usage: aqueduct-objdump FILE [--agent TARGET] [--extended] [--gfx11-directional] [-v]\n");
      return 2;
    }
  }
  if (file.empty()) {
    std::fprintf(stderr, "usage: aqueduct-objdump FILE [--agent TARGET] [--extended] [--gfx11-directional] [-v]\n");
    return 2;
  }
  std::optional<code::target_id> target;
  if (!agent.empty()) {
    auto t = code::target_id::try_parse(agent);
    if (!t) {
      std::fprintf(stderr, "aqueduct-objdump: --agent %s: %s\n", printable(agent).c_str(), t.get_failure().describe().c_str());
      return 2;
    }
    if (!aqueduct::arch::find_processor(t->processor)) {
      std::fprintf(stderr,
                   "aqueduct-objdump: --agent %s: unknown processor '%s'; give an LLVM processor name such as gfx942 or "
                   "gfx1100 (or a generic target such as gfx11-generic), optionally with :sramecc+/- and :xnack+/-\n",
                   printable(agent).c_str(), printable(t->processor).c_str());
      return 2;
    }
    target = *t;
  }
  auto bytes = code::try_read_file(file);
  if (!bytes) {
    std::fprintf(stderr, "aqueduct-objdump: %s\n", printable(bytes.get_failure().describe()).c_str());
    return 1;
  }
  auto fb = code::fat_binary::try_open(*bytes);
  if (!fb) {
    std::fprintf(stderr, "aqueduct-objdump: %s: %s\n", printable(file).c_str(), printable(fb.get_failure().describe()).c_str());
    return 1;
  }
  std::printf("%s: %s%s\n", printable(file).c_str(), std::string(code::to_string(fb->format())).c_str(),
              fb->from_host_object() ? " (from .hip_fatbin of a host object)" : "");
  if (fb->ccob())
    std::printf("CCOB version %u, %s, %llu compressed -> %llu bytes, hash 0x%016llx\n", fb->ccob()->version,
                std::string(code::ccob_method_name(fb->ccob()->method)).c_str(), static_cast<unsigned long long>(fb->ccob()->total_size),
                static_cast<unsigned long long>(fb->ccob()->uncompressed_size), static_cast<unsigned long long>(fb->ccob()->hash));
  if (fb->format() == code::binary_format::code_object) {
    print_code_object(code::code_object::parse(fb->entries()[0].data), "");
  } else {
    std::printf("%zu entries\n", fb->entries().size());
    for (const auto& e : fb->entries()) {
      std::string proc = "-";
      auto co = code::code_object::try_parse(e.data);
      if (co) proc = code::target_of(*co).to_string();
      else if (e.size != 0) proc = "(not a code object)";
      const std::string id = printable(e.id);
      std::printf("  %-50s %8llu  %s\n", id.c_str(), static_cast<unsigned long long>(e.size), proc.c_str());
      if (verbose && co) print_code_object(*co, "      ");
    }
  }
  if (target) {
    auto sel = fb->try_select(*target, pol);
    if (sel) std::printf("selected: %s (%s) - %s\n", printable(sel->bundle_id).c_str(), std::string(code::to_string(sel->match.kind)).c_str(), printable(sel->match.why).c_str());
    else std::printf("selected: none (%s)\n", printable(sel.detail()).c_str());
  }
  return 0;
}
