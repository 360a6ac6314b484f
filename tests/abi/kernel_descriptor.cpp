// abi/kernel_descriptor.hpp checked against real code objects built at test time with clang-19:
// the 64 descriptor bytes of `lds_rev.kd` (read from the linked ELF) are decoded with our
// bit fields and compared with the `.amdhsa_*` directives clang-19 prints for the same kernel
// (-S), which are LLVM's own statement of every descriptor field. Also checks the packed
// work-item id layout against clang-19's gfx1100/gfx90a code (v_bfe_u32 v?, v0, 10, 10).
#include <aqueduct/abi/kernel_descriptor.hpp>

#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

namespace abi = aqueduct::abi;

namespace {

const char* kernel_source = R"(
__kernel void lds_rev(__global float *out, __global const float *in, uint n) {
  __local float buf[256];
  uint l = __builtin_amdgcn_workitem_id_x();
  uint y = __builtin_amdgcn_workitem_id_y();
  uint g = __builtin_amdgcn_workgroup_id_x() + __builtin_amdgcn_workgroup_id_z();
  buf[l] = in[g * 256 + l + y];
  __builtin_amdgcn_s_barrier();
  out[g * 256 + l] = buf[255 - l] + (float)n;
}
)";

std::string tmpdir() {
  static std::string dir = [] {
    char tmpl[] = "/tmp/aq-kd-XXXXXX";
    const char* d = mkdtemp(tmpl);
    REQUIRE(d != nullptr);
    std::ofstream(std::string(d) + "/k.cl") << kernel_source;
    return std::string(d);
  }();
  static const struct cleanup {
    ~cleanup() { std::system(("rm -rf " + dir).c_str()); }
  } at_exit;
  return dir;
}

int run(const std::string& cmd) { return std::system(cmd.c_str()); }

std::vector<unsigned char> slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

template <class T>
T rd(const std::vector<unsigned char>& b, std::size_t off) {
  T v{};
  REQUIRE(off + sizeof(T) <= b.size());
  std::memcpy(&v, b.data() + off, sizeof v);
  return v;
}

// The 64 bytes at symbol `name` in an ELF64 little-endian file (section headers + .symtab).
std::vector<unsigned char> symbol_bytes(const std::vector<unsigned char>& elf, const std::string& name) {
  REQUIRE(elf.size() > 64);
  REQUIRE(std::memcmp(elf.data(), "\x7f" "ELF", 4) == 0);
  const auto shoff = rd<std::uint64_t>(elf, 0x28);
  const auto shentsize = rd<std::uint16_t>(elf, 0x3A);
  const auto shnum = rd<std::uint16_t>(elf, 0x3C);
  auto sh = [&](unsigned i, unsigned field_off, auto t) {
    return rd<decltype(t)>(elf, shoff + std::size_t(i) * shentsize + field_off);
  };
  for (unsigned i = 0; i < shnum; ++i) {
    if (sh(i, 4, std::uint32_t{}) != 2) continue;  // SHT_SYMTAB
    const auto off = sh(i, 0x18, std::uint64_t{}), size = sh(i, 0x20, std::uint64_t{});
    const auto strtab = sh(i, 0x28, std::uint32_t{});  // sh_link
    const auto stroff = sh(strtab, 0x18, std::uint64_t{});
    for (std::uint64_t s = off; s + 24 <= off + size; s += 24) {
      const char* nm = reinterpret_cast<const char*>(elf.data() + stroff + rd<std::uint32_t>(elf, s));
      if (name != nm) continue;
      const auto shndx = rd<std::uint16_t>(elf, s + 6);
      const auto value = rd<std::uint64_t>(elf, s + 8);
      const auto file_off = sh(shndx, 0x18, std::uint64_t{}) + (value - sh(shndx, 0x10, std::uint64_t{}));
      REQUIRE(file_off + 64 <= elf.size());
      return {elf.begin() + static_cast<long>(file_off), elf.begin() + static_cast<long>(file_off) + 64};
    }
  }
  FAIL("symbol not found: " << name);
  return {};
}

std::map<std::string, long long> directives(const std::string& asm_path) {
  std::map<std::string, long long> m;
  std::ifstream f(asm_path);
  std::string line;
  while (std::getline(f, line)) {
    std::istringstream ss(line);
    std::string key;
    long long v = 0;
    if (ss >> key && key.rfind(".amdhsa_", 0) == 0 && key != ".amdhsa_kernel" && (ss >> v)) m[key] = v;
  }
  return m;
}

struct built {
  abi::kernel_descriptor kd;
  std::map<std::string, long long> d;
};

built build(const std::string& target) {
  const std::string dir = tmpdir();
  const std::string base = dir + "/k-" + target;
  const std::string cc = "clang-19 -x cl -cl-std=CL2.0 --target=amdgcn-amd-amdhsa -nogpulib -O2 -mcpu=" + target +
                         " " + dir + "/k.cl";
  REQUIRE(run(cc + " -S -o " + base + ".s") == 0);
  REQUIRE(run(cc + " -c -o " + base + ".o") == 0);
  REQUIRE(run("ld.lld-19 -shared " + base + ".o -o " + base + ".hsaco") == 0);
  built b{};
  const auto bytes = symbol_bytes(slurp(base + ".hsaco"), "lds_rev.kd");
  std::memcpy(&b.kd, bytes.data(), 64);
  b.d = directives(base + ".s");
  REQUIRE(b.d.size() > 20);
  return b;
}

// Compare one directive with the decoded field; absent directives are not checked, but the
// test requires the directives every target prints (checked below).
#define EXPECT_DIRECTIVE(name, decoded)                        \
  do {                                                         \
    auto it_ = b.d.find(name);                                 \
    if (it_ != b.d.end()) {                                    \
      INFO("directive " << name);                              \
      CHECK(static_cast<long long>(decoded) == it_->second);   \
      ++checked;                                               \
    }                                                          \
  } while (0)

void check_target(const std::string& target) {
  CAPTURE(target);
  const built b = build(target);
  const auto& kd = b.kd;
  namespace r1 = abi::compute_pgm_rsrc1;
  namespace r2 = abi::compute_pgm_rsrc2;
  namespace kcp = abi::kernel_code_properties;
  int checked = 0;
  EXPECT_DIRECTIVE(".amdhsa_group_segment_fixed_size", kd.group_segment_fixed_size);
  EXPECT_DIRECTIVE(".amdhsa_private_segment_fixed_size", kd.private_segment_fixed_size);
  EXPECT_DIRECTIVE(".amdhsa_kernarg_size", kd.kernarg_size);
  EXPECT_DIRECTIVE(".amdhsa_user_sgpr_count", r2::user_sgpr_count::get(kd.compute_pgm_rsrc2));
  const auto p = kd.kernel_code_properties;
  EXPECT_DIRECTIVE(".amdhsa_user_sgpr_private_segment_buffer", kcp::enable_sgpr_private_segment_buffer::get(p));
  EXPECT_DIRECTIVE(".amdhsa_user_sgpr_dispatch_ptr", kcp::enable_sgpr_dispatch_ptr::get(p));
  EXPECT_DIRECTIVE(".amdhsa_user_sgpr_queue_ptr", kcp::enable_sgpr_queue_ptr::get(p));
  EXPECT_DIRECTIVE(".amdhsa_user_sgpr_kernarg_segment_ptr", kcp::enable_sgpr_kernarg_segment_ptr::get(p));
  EXPECT_DIRECTIVE(".amdhsa_user_sgpr_dispatch_id", kcp::enable_sgpr_dispatch_id::get(p));
  EXPECT_DIRECTIVE(".amdhsa_user_sgpr_flat_scratch_init", kcp::enable_sgpr_flat_scratch_init::get(p));
  EXPECT_DIRECTIVE(".amdhsa_user_sgpr_private_segment_size", kcp::enable_sgpr_private_segment_size::get(p));
  EXPECT_DIRECTIVE(".amdhsa_wavefront_size32", kcp::enable_wavefront_size32::get(p));
  EXPECT_DIRECTIVE(".amdhsa_uses_dynamic_stack", kcp::uses_dynamic_stack::get(p));
  EXPECT_DIRECTIVE(".amdhsa_user_sgpr_kernarg_preload_length", abi::kernarg_preload::length::get(kd.kernarg_preload));
  EXPECT_DIRECTIVE(".amdhsa_user_sgpr_kernarg_preload_offset", abi::kernarg_preload::offset::get(kd.kernarg_preload));
  const auto w2 = kd.compute_pgm_rsrc2;
  EXPECT_DIRECTIVE(".amdhsa_system_sgpr_private_segment_wavefront_offset", r2::enable_private_segment::get(w2));
  EXPECT_DIRECTIVE(".amdhsa_enable_private_segment", r2::enable_private_segment::get(w2));
  EXPECT_DIRECTIVE(".amdhsa_system_sgpr_workgroup_id_x", r2::enable_sgpr_workgroup_id_x::get(w2));
  EXPECT_DIRECTIVE(".amdhsa_system_sgpr_workgroup_id_y", r2::enable_sgpr_workgroup_id_y::get(w2));
  EXPECT_DIRECTIVE(".amdhsa_system_sgpr_workgroup_id_z", r2::enable_sgpr_workgroup_id_z::get(w2));
  EXPECT_DIRECTIVE(".amdhsa_system_sgpr_workgroup_info", r2::enable_sgpr_workgroup_info::get(w2));
  EXPECT_DIRECTIVE(".amdhsa_system_vgpr_workitem_id", r2::enable_vgpr_workitem_id::get(w2));
  EXPECT_DIRECTIVE(".amdhsa_exception_fp_ieee_invalid_op", r2::enable_exception_ieee_754_fp_invalid_operation::get(w2));
  EXPECT_DIRECTIVE(".amdhsa_exception_fp_denorm_src", r2::enable_exception_fp_denormal_source::get(w2));
  EXPECT_DIRECTIVE(".amdhsa_exception_fp_ieee_div_zero", r2::enable_exception_ieee_754_fp_division_by_zero::get(w2));
  EXPECT_DIRECTIVE(".amdhsa_exception_fp_ieee_overflow", r2::enable_exception_ieee_754_fp_overflow::get(w2));
  EXPECT_DIRECTIVE(".amdhsa_exception_fp_ieee_underflow", r2::enable_exception_ieee_754_fp_underflow::get(w2));
  EXPECT_DIRECTIVE(".amdhsa_exception_fp_ieee_inexact", r2::enable_exception_ieee_754_fp_inexact::get(w2));
  EXPECT_DIRECTIVE(".amdhsa_exception_int_div_zero", r2::enable_exception_int_division_by_zero::get(w2));
  const auto w1 = kd.compute_pgm_rsrc1;
  EXPECT_DIRECTIVE(".amdhsa_float_round_mode_32", r1::float_round_mode_32::get(w1));
  EXPECT_DIRECTIVE(".amdhsa_float_round_mode_16_64", r1::float_round_mode_16_64::get(w1));
  EXPECT_DIRECTIVE(".amdhsa_float_denorm_mode_32", r1::float_denorm_mode_32::get(w1));
  EXPECT_DIRECTIVE(".amdhsa_float_denorm_mode_16_64", r1::float_denorm_mode_16_64::get(w1));
  EXPECT_DIRECTIVE(".amdhsa_dx10_clamp", r1::enable_dx10_clamp::get(w1));
  EXPECT_DIRECTIVE(".amdhsa_ieee_mode", r1::enable_ieee_mode::get(w1));
  EXPECT_DIRECTIVE(".amdhsa_fp16_overflow", r1::fp16_ovfl::get(w1));
  EXPECT_DIRECTIVE(".amdhsa_workgroup_processor_mode", r1::wgp_mode::get(w1));
  EXPECT_DIRECTIVE(".amdhsa_memory_ordered", r1::mem_ordered::get(w1));
  EXPECT_DIRECTIVE(".amdhsa_forward_progress", r1::fwd_progress::get(w1));
  EXPECT_DIRECTIVE(".amdhsa_round_robin_scheduling", r1::wg_rr_en::get(w1));
  const auto w3 = kd.compute_pgm_rsrc3;
  if (target == "gfx90a" || target == "gfx942") {
    // .amdhsa_accum_offset is the AGPR start in registers: 4 * (field + 1) (§3.5).
    EXPECT_DIRECTIVE(".amdhsa_accum_offset", 4 * (abi::compute_pgm_rsrc3_gfx90a::accum_offset::get(w3) + 1));
    EXPECT_DIRECTIVE(".amdhsa_tg_split", abi::compute_pgm_rsrc3_gfx90a::tg_split::get(w3));
    CHECK((w3 & ~abi::compute_pgm_rsrc3_gfx90a::defined_mask) == 0);
  } else if (target.rfind("gfx10", 0) == 0) {
    EXPECT_DIRECTIVE(".amdhsa_shared_vgpr_count", abi::compute_pgm_rsrc3_gfx10::shared_vgpr_count::get(w3));
  } else if (target.rfind("gfx11", 0) == 0) {
    EXPECT_DIRECTIVE(".amdhsa_shared_vgpr_count", abi::compute_pgm_rsrc3_gfx11::shared_vgpr_count::get(w3));
    EXPECT_DIRECTIVE(".amdhsa_inst_pref_size", abi::compute_pgm_rsrc3_gfx11::inst_pref_size::get(w3));
  } else if (target.rfind("gfx12", 0) == 0) {
    EXPECT_DIRECTIVE(".amdhsa_inst_pref_size", abi::compute_pgm_rsrc3_gfx12::inst_pref_size::get(w3));
  }
  CHECK(checked >= 30);

  // Facts independent of LLVM's directives (spec/code-objects.md §3, the kernel source):
  CHECK(kd.group_segment_fixed_size == 1024);  // __local float buf[256]
  CHECK(kd.kernarg_size == 20);                // two pointers + uint (no hidden args used)
  CHECK(kcp::enable_sgpr_kernarg_segment_ptr::get(p) == 1);
  CHECK(r2::enable_sgpr_workgroup_id_x::get(w2) == 1);
  CHECK(r2::enable_sgpr_workgroup_id_y::get(w2) == 0);
  CHECK(r2::enable_sgpr_workgroup_id_z::get(w2) == 1);
  CHECK(r2::enable_vgpr_workitem_id::get(w2) == 1);  // X and Y used
  CHECK(kd.kernel_code_entry_byte_offset != 0);
  CHECK((p & ~abi::kernel_code_properties::defined_mask) == 0);
  // The enabled user SGPRs never exceed rsrc2.USER_SGPR_COUNT (§3.2).
  CHECK(abi::enabled_user_sgpr_count(p) <= r2::user_sgpr_count::get(w2));
  for (auto r : kd.reserved1) CHECK(r == 0);
}

}  // namespace

TEST_CASE("kernel descriptor fields equal clang-19's .amdhsa directives") {
  for (const char* t : {"gfx900", "gfx90a", "gfx942", "gfx1030", "gfx1100", "gfx1200"}) check_target(t);
}

TEST_CASE("packed work-item ids on gfx90a/gfx11 (clang-19 code reads Y from v0[19:10])") {
  const std::string dir = tmpdir();
  for (const char* t : {"gfx90a", "gfx1100", "gfx1030", "gfx900"}) {
    CAPTURE(t);
    const std::string base = dir + "/p-" + t;
    REQUIRE(run(std::string("clang-19 -x cl -cl-std=CL2.0 --target=amdgcn-amd-amdhsa -nogpulib -O2 -mcpu=") + t +
                " -S -o " + base + ".s " + dir + "/k.cl") == 0);
    std::ifstream f(base + ".s");
    const std::string text{std::istreambuf_iterator<char>(f), {}};
    const bool packed = text.find(", v0, " + std::to_string(abi::packed_workitem_id::y::lo) + ", " +
                                  std::to_string(abi::packed_workitem_id::y::width)) != std::string::npos;
    const bool expect_packed = std::string(t) == "gfx90a" || std::string(t) == "gfx1100";
    CHECK(packed == expect_packed);
  }
}

}  // namespace AQ_UNITY_ID
