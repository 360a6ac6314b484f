// tests/code/elf.cpp — code/elf.hpp against llvm-readelf-19 on clang-19-built code objects, and
// against malformed variants of them (which must give errors, never crashes).
#include "oracle.hpp"

#include <aqueduct/code/elf.hpp>
#include <aqueduct/code/target_id.hpp>

#include <cstring>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

namespace code = aqueduct::code;
using aqueduct::errc;

namespace {
code::feature_setting from_words(const std::vector<std::string>& w, const std::string& f) {
  for (const auto& x : w) {
    if (x == f) return code::feature_setting::any;
    if (x == f + "+") return code::feature_setting::on;
    if (x == f + "-") return code::feature_setting::off;
  }
  return code::feature_setting::unsupported;
}
template <class T>
void poke(std::vector<std::byte>& b, std::size_t off, T v) {
  std::memcpy(b.data() + off, &v, sizeof v);
}
}  // namespace

TEST_CASE("every fixture code object matches llvm-readelf-19") {
  auto files = fx::list_dir("elf", ".hsaco");
  auto rel = fx::list_dir("elf", ".o");
  files.insert(files.end(), rel.begin(), rel.end());
  REQUIRE(files.size() >= 30);
  for (const auto& f : files) {
    CAPTURE(f);
    auto bytes = fx::bytes(f);
    auto re = fx::parse_readelf(fx::text(f + ".readelf"));
    auto co = code::code_object::try_parse(bytes);
    REQUIRE_MESSAGE(co.has_value(), co.detail());
    CHECK(co->e_flags() == re.flags);
    CHECK(co->version() == static_cast<int>(re.abi_version) + 2);
    CHECK(co->relocatable() == (re.type == "REL"));
    CHECK(co->elf().segments().size() == re.phnum);
    REQUIRE(co->elf().sections().size() == re.shnum);
    // processor name and features as readelf prints them ("0xD2F, gfx906, xnack, sramecc+")
    REQUIRE(!re.flag_words.empty());
    CHECK(code::target_of(*co).processor == re.flag_words[0]);
    CHECK(co->xnack() == from_words(re.flag_words, "xnack"));
    CHECK(co->sramecc() == from_words(re.flag_words, "sramecc"));
    bool generic_v1 = std::find(re.flag_words.begin(), re.flag_words.end(), "generic_v1") != re.flag_words.end();
    CHECK((co->generic_version() == 1) == generic_v1);
    for (const auto& s : re.sections) {
      CAPTURE(s.name);
      const auto& mine = co->elf().sections().at(s.index);
      CHECK(mine.name == s.name);
      CHECK(mine.addr == s.addr);
      CHECK(mine.offset == s.off);
      CHECK(mine.size == s.size);
    }
    // every .kd symbol readelf lists is a kernel, with the same address
    std::set<std::string> kd_names;
    for (const auto& s : re.symbols)
      if (s.name.ends_with(".kd")) {
        kd_names.insert(s.name);
        const auto* k = co->kernel(s.name);
        REQUIRE_MESSAGE(k != nullptr, s.name);
        CHECK(k->kd_address == s.value);
        CHECK(s.size == 64);
        CHECK(k->descriptor.size() == 64);
      }
    CHECK(co->kernels().size() == kd_names.size());
    CHECK(!kd_names.empty());
    // symbol counts per table
    std::size_t dyn = 0, sym = 0;
    for (const auto& s : re.symbols) (s.table == ".dynsym" ? dyn : sym)++;
    std::size_t my_dyn = 0, my_sym = 0;
    for (const auto& s : co->symbols()) (s.dynamic ? my_dyn : my_sym)++;
    CHECK(my_dyn == dyn);
    CHECK(my_sym == sym);
    // one AMDGPU metadata note of the size readelf reports
    REQUIRE(re.notes.size() == 1);
    REQUIRE(co->metadata_note().has_value());
    CHECK(co->metadata_note()->size() == re.notes[0].second);
  }
}

TEST_CASE("vadd-gfx1100: kernel descriptor bytes as measured in spec §1.5") {
  auto b = fx::bytes("elf/vadd-gfx1100.hsaco");
  auto co = code::code_object::parse(b);
  CHECK(co.version() == 5);
  CHECK(co.mach() == 0x41);
  const auto* k = co.kernel("vadd");
  REQUIRE(k);
  CHECK(k->kd_address == 0xa80);
  CHECK(k->dynamic);
  const unsigned char expect[64] = {0, 0, 0, 0, 0, 0, 0, 0, 0x20, 0x01, 0, 0, 0, 0, 0, 0, 0x80, 0x11, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x80, 0, 0xaf, 0x60, 0x9e, 0, 0, 0, 0x08, 0x04, 0, 0, 0, 0, 0, 0};
  CHECK(std::memcmp(k->descriptor.data(), expect, 64) == 0);
}

TEST_CASE("plain-C kernel with LOCAL HIDDEN symbols is found through .symtab (spec §1.6 item 8)") {
  auto b = fx::bytes("elf/cfill-hidden-gfx1100.hsaco");
  auto co = code::code_object::parse(b);
  const auto* k = co.kernel("cfill");
  REQUIRE(k);
  CHECK_FALSE(k->dynamic);
}

TEST_CASE("ET_REL object: kernels found, descriptor located by section offset") {
  auto b = fx::bytes("elf/vadd-gfx1100.o");
  auto co = code::code_object::parse(b);
  CHECK(co.relocatable());
  const auto* k = co.kernel("vadd");
  REQUIRE(k);
  // same descriptor fields as the linked object except the entry offset (relocated at link time)
  auto linked = fx::bytes("elf/vadd-gfx1100.hsaco");
  const auto linked_co = code::code_object::parse(linked);  // kept: lk points into it (ASan: use after free)
  const auto* lk = linked_co.kernel("vadd");
  CHECK(std::memcmp(k->descriptor.data(), lk->descriptor.data(), 16) == 0);
  CHECK(std::memcmp(k->descriptor.data() + 44, lk->descriptor.data() + 44, 20) == 0);
}

TEST_CASE("code object versions 4/5/6 and generic targets") {
  CHECK(code::code_object::parse(fx::bytes("elf/vadd-gfx1100-cov4.hsaco")).version() == 4);
  CHECK(code::code_object::parse(fx::bytes("elf/vadd-gfx1100-cov6.hsaco")).version() == 6);
  auto g = fx::bytes("elf/vadd-gfx11-generic.hsaco");
  auto co = code::code_object::parse(g);
  CHECK(co.e_flags() == 0x01000054u);  // spec §2.2 measured
  CHECK(code::target_of(co).processor == "gfx11-generic");
  auto g9 = fx::bytes("elf/vadd-gfx9-generic_xnackp.hsaco");
  CHECK(code::code_object::parse(g9).e_flags() == 0x01000351u);
  CHECK(code::target_of(code::code_object::parse(g9)).to_string() == "gfx9-generic:xnack+");
}

TEST_CASE("malformed ELF headers give precise errors") {
  const auto good = fx::bytes("elf/vadd-gfx1100.hsaco");
  auto expect = [&](auto mutate, errc e, const char* needle) {
    auto b = good;
    mutate(b);
    auto r = code::code_object::try_parse(b);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.get_failure() == e);
    CHECK_MESSAGE(r.detail().find(needle) != std::string_view::npos, r.detail());
  };
  expect([](auto& b) { b[0] = std::byte{0}; }, errc::malformed_code_object, "magic");
  expect([](auto& b) { b[4] = std::byte{1}; }, errc::malformed_code_object, "EI_CLASS");
  expect([](auto& b) { b[5] = std::byte{2}; }, errc::malformed_code_object, "EI_DATA");
  expect([](auto& b) { b[7] = std::byte{0}; }, errc::unsupported_format, "EI_OSABI 0");
  expect([](auto& b) { b[7] = std::byte{65}; }, errc::unsupported_format, "PAL");
  expect([](auto& b) { b[8] = std::byte{1}; }, errc::unsupported_format, "code object v3");
  expect([](auto& b) { b[8] = std::byte{9}; }, errc::unsupported_format, "ABIVERSION 9");
  expect([](auto& b) { poke<std::uint16_t>(b, 18, 62); }, errc::malformed_code_object, "e_machine 62");
  expect([](auto& b) { poke<std::uint16_t>(b, 16, 2); }, errc::malformed_code_object, "e_type 2");
  expect([](auto& b) { poke<std::uint32_t>(b, 48, 0x01000041); }, errc::malformed_code_object, "generic version");
  expect([](auto& b) { poke<std::uint32_t>(b, 48, 0x00010041); }, errc::malformed_code_object, "bits outside");
  expect([](auto& b) { poke<std::uint64_t>(b, 40, 0xfffffffffffff000ull); }, errc::malformed_code_object, "section header table");
  expect([](auto& b) { poke<std::uint64_t>(b, 32, 5000); }, errc::malformed_code_object, "program header table");
  expect([](auto& b) { poke<std::uint16_t>(b, 54, 40); }, errc::malformed_code_object, "e_phentsize");
  expect([](auto& b) { poke<std::uint16_t>(b, 58, 40); }, errc::malformed_code_object, "e_shentsize");
  expect([](auto& b) { poke<std::uint16_t>(b, 62, 99); }, errc::malformed_code_object, "e_shstrndx");
  expect([](auto& b) { poke<std::uint16_t>(b, 60, 0); }, errc::unsupported_format, "extended section numbering");
  // section 6 (.rodata) offset beyond the file: shoff 4360, entry 6 at +6*64, sh_offset at +24
  expect([](auto& b) { poke<std::uint64_t>(b, 4360 + 6 * 64 + 24, 0x100000); }, errc::malformed_code_object, "section 6");
  // .dynsym entsize
  expect([](auto& b) { poke<std::uint64_t>(b, 4360 + 2 * 64 + 56, 16); }, errc::malformed_code_object, "sh_entsize 16");
  // .dynsym link to a non-string table
  expect([](auto& b) { poke<std::uint32_t>(b, 4360 + 2 * 64 + 40, 6); }, errc::malformed_code_object, "not a string table");
  // vadd.kd (dynsym entry 2 at 0x958 + 48): size 63, then value outside .rodata
  expect([](auto& b) { poke<std::uint64_t>(b, 0x958 + 48 + 16, 63); }, errc::malformed_code_object, "st_size 63");
  expect([](auto& b) { poke<std::uint64_t>(b, 0x958 + 48 + 8, 0xaf0); }, errc::malformed_code_object, "outside its section");
  // note: descsz larger than the note section (.note at 0x200: descsz at +4)
  expect([](auto& b) { poke<std::uint32_t>(b, 0x200 + 4, 0x100000); }, errc::malformed_code_object, "exceed the note area");
}

// Without an SHT_NOTE section the notes come from PT_NOTE segments. vadd-gfx1100.hsaco as
// llvm-readelf-19 -S -l shows it: section 1 is .note (header at 4360 + 64), program header 7 is the
// PT_NOTE (at 64 + 7 * 56: p_offset at +8, p_filesz at +32), holding one "AMDGPU" note of type
// NT_AMDGPU_METADATA (32, LLVM AMDGPUUsage "Code Object V3 and Above Note Records").
TEST_CASE("notes from PT_NOTE when no section is SHT_NOTE; an empty PT_NOTE may point anywhere") {
  auto b = fx::bytes("elf/vadd-gfx1100.hsaco");
  poke<std::uint32_t>(b, 4360 + 64 + 4, 1);  // .note becomes SHT_PROGBITS
  auto co = code::code_object::try_parse(b);
  REQUIRE_MESSAGE(co.has_value(), co.detail());
  REQUIRE(co->notes().size() == 1);
  CHECK(co->notes()[0].owner == "AMDGPU");
  CHECK(co->notes()[0].type == 32);
  // An empty PT_NOTE whose offset is far past the end of the file (the ELF magic read as an
  // offset, from a libFuzzer crash kept in tests/code/fuzz/regressions/elf/) holds no notes.
  poke<std::uint64_t>(b, 64 + 7 * 56 + 8, 0x40010102464c457full);
  poke<std::uint64_t>(b, 64 + 7 * 56 + 32, 0);
  auto empty = code::code_object::try_parse(b);
  REQUIRE_MESSAGE(empty.has_value(), empty.detail());
  CHECK(empty->notes().empty());
}

TEST_CASE("every truncation of a code object is an error, never a crash") {
  const auto good = fx::bytes("elf/vadd-gfx90a.hsaco");
  for (std::size_t n = 0; n < good.size(); n += (n < 128 ? 1 : 7)) {
    auto r = code::code_object::try_parse(code::byte_span(good.data(), n));
    CHECK_FALSE(r.has_value());
  }
  CHECK(code::code_object::try_parse(good).has_value());
}

TEST_CASE("kernarg preload descriptor fields as measured in spec §1.6 item 5") {
  auto b = fx::bytes("elf/vadd-gfx942-preload.hsaco");
  auto co = code::code_object::parse(b);
  auto field16 = [&](const char* k, std::size_t off) { code::byte_reader r(co.kernel(k)->descriptor); return *r.get<std::uint16_t>(off); };
  auto rsrc2 = [&](const char* k) { code::byte_reader r(co.kernel(k)->descriptor); return *r.get<std::uint32_t>(52); };
  CHECK(field16("vadd", 58) == 0x0007);
  CHECK(field16("fill", 58) == 0x0003);
  CHECK(((rsrc2("vadd") >> 1) & 0x1f) == 9);  // USER_SGPR_COUNT
  CHECK(((rsrc2("fill") >> 1) & 0x1f) == 5);
}

}  // namespace AQ_UNITY_ID
