// tests/code/loader.cpp — loading clang-19 code objects into (host-backed) GPU memory.
// Expected values: llvm-readelf-19's program headers, relocation records and symbol values for
// the same files; the emulated kernel object layout of emu/host_kernel.hpp.
#include "oracle.hpp"

#include <aqueduct/code/fat_binary.hpp>
#include <aqueduct/code/loader.hpp>

#include <cstdlib>
#include <cstring>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

namespace code = aqueduct::code;
using aqueduct::errc;

namespace {
// GPU VA == host address, as on the emulator (identity mapping).
struct host_allocator {
  int live = 0;
  bool fail = false;
  aqueduct::result<code::device_memory> try_allocate_code(std::uint64_t n, std::uint64_t align) {
    if (fail) return aqueduct::failure(errc::out_of_memory, "test allocator refuses");
    void* p = std::aligned_alloc(align, aqueduct::align_up(n, align));
    if (!p) return errc::out_of_memory;
    std::memset(p, 0xcd, n);  // the loader must zero what it does not copy
    ++live;
    return code::device_memory{aqueduct::gpu_va(reinterpret_cast<std::uintptr_t>(p)), static_cast<std::byte*>(p), n};
  }
  void free_code(code::device_memory m) noexcept {
    --live;
    std::free(m.host);
  }
};
static_assert(code::code_memory_allocator<host_allocator>);
std::uint64_t u64_at(const std::byte* p) { std::uint64_t v; std::memcpy(&v, p, 8); return v; }
}  // namespace

TEST_CASE("segments placed as llvm-readelf-19's LOAD headers say, bss zeroed, kernels resolved") {
  for (const char* f : {"elf/vadd-gfx1100.hsaco", "elf/vadd-gfx90a.hsaco", "elf/reloc-gfx1100.hsaco", "elf/features-gfx1100.hsaco",
                        "elf/vadd-gfx942-preload.hsaco", "elf/cfill-hidden-gfx1100.hsaco", "elf/vadd-gfx11-generic.hsaco"}) {
    const std::string name = f;
    CAPTURE(name);
    host_allocator alloc;
    {
      auto bytes = fx::bytes(f);
      auto re = fx::parse_readelf(fx::text(std::string(f) + ".readelf"));
      auto co = code::code_object::parse(bytes);
      auto exe = code::try_load(co, alloc);
      REQUIRE_MESSAGE(exe.has_value(), exe.detail());
      CHECK(alloc.live == 1);
      const auto base = exe->memory().host;
      REQUIRE(!re.loads.empty());
      auto relocated = [&](std::uint64_t va) {
        for (const auto& r : re.relocs)
          if (va >= r.offset && va < r.offset + 8) return true;
        return false;
      };
      for (const auto& l : re.loads) {
        std::uint64_t differ = 0;
        for (std::uint64_t i = 0; i < l.filesz; ++i) differ += base[l.vaddr + i] != bytes[l.off + i] && !relocated(l.vaddr + i);
        CHECK(differ == 0);
        for (std::uint64_t i = l.filesz; i < l.memsz; ++i) REQUIRE(base[l.vaddr + i] == std::byte{0});
      }
      std::size_t nkd = 0;
      for (const auto& s : re.symbols)
        if (s.name.ends_with(".kd") && s.table == ".symtab") {
          ++nkd;
          const auto& k = exe->kernel(s.name);
          CHECK(k.kernel_object.value == exe->memory().va.value + s.value);
          CHECK(std::memcmp(&k.descriptor, base + s.value, 64) == 0);
          CHECK(k.code_kind == code::kernel_code_kind::gfx_isa);
          CHECK(k.kernarg_segment_size >= k.descriptor.kernarg_size);
          CHECK(!k.runs_on_emulator());
        }
      CHECK(exe->kernels().size() == nkd);
    }
    CHECK(alloc.live == 0);  // freed by the destructor
  }
}

TEST_CASE("relocations applied as llvm-readelf-19 -r lists them (RELATIVE64 and ABS64)") {
  for (const char* f : {"elf/reloc-gfx1100.hsaco", "elf/reloc-abs64-gfx90a.hsaco"}) {
    CAPTURE(f);
    auto bytes = fx::bytes(f);
    auto re = fx::parse_readelf(fx::text(std::string(f) + ".readelf"));
    REQUIRE(!re.relocs.empty());
    host_allocator alloc;
    auto exe = code::try_load(code::code_object::parse(bytes), alloc).value();
    const std::uint64_t B = exe.memory().va.value;
    for (const auto& r : re.relocs) {
      CAPTURE(r.type);
      const std::uint64_t got = u64_at(exe.memory().host + r.offset);
      if (r.type == "R_AMDGPU_RELATIVE64") CHECK(got == B + static_cast<std::uint64_t>(r.addend));
      else if (r.type == "R_AMDGPU_ABS64") CHECK(got == B + r.sym_value + static_cast<std::uint64_t>(r.addend));
      else FAIL("unexpected relocation type in fixture");
    }
    // the kernel's pointer table now points at the loaded globals: *table[0] == counter == 5
    const auto* counter_sym = &re.symbols.front();
    for (const auto& s : re.symbols) if (s.name == "counter") counter_sym = &s;
    REQUIRE(counter_sym->name == "counter");
    int v = 0;
    std::memcpy(&v, exe.memory().host + counter_sym->value, 4);
    CHECK(v == 5);
  }
}

TEST_CASE("a bundle entry selected for an agent loads the same way") {
  auto b = fx::bytes("ccob/host-align4096.co");
  auto fb = code::fat_binary::open(b);
  auto sel = fb.select(code::target_id::parse("gfx1031"), code::selection_policy{true, true, false});
  host_allocator alloc;
  auto exe = code::try_load(code::code_object::parse(fb.entries()[sel.index].data), alloc).value();
  CHECK(exe.kernel("vadd").processor == "gfx1030");
  CHECK(exe.kernel("vadd").kernarg_segment_size == 288);
}

TEST_CASE("code_digest: FNV-1a 64 of the code object; equal for the same file, different for other code") {
  // The published FNV-1a 64 test vectors (http://www.isthe.com/chongo/tech/comp/fnv/).
  CHECK(code::fnv1a64(std::string_view("")) == 0xcbf29ce484222325ull);
  CHECK(code::fnv1a64(std::string_view("a")) == 0xaf63dc4c8601ec8cull);
  CHECK(code::fnv1a64(std::string_view("foobar")) == 0x85944171f73967e8ull);
  host_allocator alloc;
  auto load = [&](const char* f) {
    auto b = fx::bytes(f);
    auto exe = code::try_load(code::code_object::parse(b), alloc).value();
    return std::pair{exe.kernel("vadd").code_digest, code::fnv1a64(code::byte_span(b))};
  };
  const auto [a1, file_a] = load("elf/vadd-gfx1100.hsaco");
  const auto [a2, file_a2] = load("elf/vadd-gfx1100.hsaco");
  const auto [b1, file_b] = load("elf/vadd-gfx90a.hsaco");
  CHECK(a1 == file_a);  // the digest of the file's bytes as read
  CHECK(a1 == a2);
  CHECK(b1 == file_b);
  CHECK(a1 != b1);
}

TEST_CASE("gfx code without an interpreter is refused on the emulated device; host kernels are refused on a real GPU") {
  auto b = fx::bytes("elf/vadd-gfx906.hsaco");
  host_allocator alloc;
  auto exe = code::try_load(code::code_object::parse(b), alloc).value();
  auto r = code::check_runnable(exe.kernel("vadd"), true);
  REQUIRE_FALSE(r.has_value());
  CHECK(r.get_failure() == errc::not_supported);
  CHECK(r.detail().find("gfx906 machine code") != std::string_view::npos);
  CHECK(code::check_runnable(exe.kernel("vadd"), false).has_value());
  // gfx11, gfx90a and gfx942 machine code runs on the emulator's ISA interpreter (docs/isa.md).
  for (const char* f : {"elf/vadd-gfx1100.hsaco", "elf/vadd-gfx90a.hsaco", "elf/vadd-gfx942.hsaco"}) {
    CAPTURE(f);
    auto ok = code::try_load(code::code_object::parse(fx::bytes(f)), alloc).value();
    CHECK(code::check_runnable(ok.kernel("vadd"), true).has_value());
    CHECK(code::check_runnable(ok.kernel("vadd"), false).has_value());
  }

  code::emulated_code_object eco;
  code::emulated_kernel k;
  k.name = "saxpy";
  k.host_kernel = "test.saxpy";
  k.descriptor.kernarg_size = 24;
  k.descriptor.kernel_code_properties = 0x0008;  // kernarg segment pointer (spec §3.2 bit 3)
  k.args = {{"x", "float*", "global_buffer", "global", 0, 8}, {"y", "float*", "global_buffer", "global", 8, 8}, {"a", "float", "by_value", "", 16, 4}};
  eco.kernels = {k, k};
  eco.kernels[1].name = "other";
  eco.kernels[1].host_kernel = "test.other";
  auto emu_exe = code::try_load(eco, alloc);
  REQUIRE(emu_exe.has_value());
  const auto& ek = emu_exe->kernel("saxpy");
  CHECK(ek.runs_on_emulator());
  CHECK(code::check_runnable(ek, true).has_value());
  CHECK(code::check_runnable(ek, false).get_failure() == errc::not_supported);
  CHECK(ek.kernarg_segment_size == 24);
  CHECK(ek.args.size() == 3);
  // the kernel object is an abi/emulated_code.hpp object: entry 256 bytes on, a blob naming the host kernel
  CHECK(ek.descriptor.kernel_code_entry_byte_offset == 256);
  CHECK(ek.kernel_object.aligned(64));
  aqueduct::abi::emulated_code_blob blob;
  std::memcpy(&blob, reinterpret_cast<const std::byte*>(ek.kernel_object.value) + 256, sizeof blob);
  CHECK(aqueduct::abi::emulated_code_name(blob) == "test.saxpy");
  std::memcpy(&blob, reinterpret_cast<const std::byte*>(emu_exe->kernel("other").kernel_object.value) + 256, sizeof blob);
  CHECK(aqueduct::abi::emulated_code_name(blob) == "test.other");
  // a real descriptor would lead the emulator to a non-blob entry
  std::memcpy(&blob, reinterpret_cast<const std::byte*>(exe.kernel("vadd").kernel_object.value) + exe.kernel("vadd").descriptor.kernel_code_entry_byte_offset, sizeof blob);
  CHECK(aqueduct::abi::emulated_code_name(blob).empty());
  code::emulated_code_object bad;
  bad.kernels = {k};
  bad.kernels[0].host_kernel = std::string(60, 'x');
  CHECK(code::try_load(bad, alloc).get_failure() == errc::invalid_argument);
}

TEST_CASE("load errors: ET_REL, allocator failure, lying descriptors and relocations") {
  host_allocator alloc;
  auto rel = fx::bytes("elf/vadd-gfx1100.o");
  CHECK(code::try_load(code::code_object::parse(rel), alloc).get_failure() == errc::unsupported_format);
  auto good = fx::bytes("elf/vadd-gfx1100.hsaco");
  alloc.fail = true;
  CHECK(code::try_load(code::code_object::parse(good), alloc).get_failure() == errc::out_of_memory);
  alloc.fail = false;
  auto b = good;
  std::int64_t bad_entry = 0x1180 + 4;  // vadd.kd at 0xa80: entry offset no longer 256-aligned
  std::memcpy(b.data() + 0xa80 + 16, &bad_entry, 8);
  auto r = code::try_load(code::code_object::parse(b), alloc);
  REQUIRE_FALSE(r.has_value());
  CHECK(r.detail().find("256-byte aligned") != std::string_view::npos);
  bad_entry = -0x10000;
  std::memcpy(b.data() + 0xa80 + 16, &bad_entry, 8);
  CHECK(code::try_load(code::code_object::parse(b), alloc).detail().find("executable segment") != std::string_view::npos);
  CHECK(alloc.live == 0);  // nothing leaked on the error paths
  // relocation pointing outside the image (first .rela.dyn entry of reloc-gfx1100 at 0x4e0)
  auto rb = fx::bytes("elf/reloc-gfx1100.hsaco");
  auto co = code::code_object::parse(rb);
  const auto* rela = co.elf().section(".rela.dyn");
  REQUIRE(rela);
  std::uint64_t far = 0x7fff0000;
  std::memcpy(rb.data() + rela->offset, &far, 8);
  auto rr = code::try_load(code::code_object::parse(rb), alloc);
  REQUIRE_FALSE(rr.has_value());
  CHECK(rr.detail().find("outside the loaded image") != std::string_view::npos);
  std::uint64_t unknown_type = 12;  // not an AMDGPU relocation
  std::memcpy(rb.data() + rela->offset + 8, &unknown_type, 8);
  CHECK(code::try_load(code::code_object::parse(rb), alloc).get_failure() == errc::unsupported_format);
  CHECK(alloc.live == 0);
}

}  // namespace AQ_UNITY_ID
