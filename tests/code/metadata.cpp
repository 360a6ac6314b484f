// tests/code/metadata.cpp — code/metadata.hpp and code/msgpack.hpp.
// Oracle: Debian's Comgr 5.2.3 metadata queries (amd_comgr_get_data_metadata) on the same
// clang-19-built code objects; the spec's measured vadd-gfx1100 listing (§1.5); byte encodings
// from the MessagePack specification for the reader's unit cases.
#include "oracle.hpp"

#include <aqueduct/code/elf.hpp>
#include <aqueduct/code/metadata.hpp>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

namespace code = aqueduct::code;
namespace mp = aqueduct::code::msgpack;
using aqueduct::errc;

namespace {
mp::value parse(std::initializer_list<unsigned> b) {
  static std::vector<std::vector<std::byte>> keep;  // parsed strings are views into the input
  auto& v = keep.emplace_back();
  for (auto x : b) v.push_back(static_cast<std::byte>(x));
  auto r = mp::try_parse(v);
  REQUIRE_MESSAGE(r.has_value(), r.detail());
  return *r;
}
aqueduct::result<mp::value> try_parse(std::vector<unsigned> b) {
  std::vector<std::byte> v;
  for (auto x : b) v.push_back(static_cast<std::byte>(x));
  return mp::try_parse(v);
}
}  // namespace

TEST_CASE("msgpack encodings from the MessagePack specification") {
  CHECK(parse({0x7f}).u == 127);
  CHECK(parse({0xff}).i == -1);
  CHECK(parse({0xe0}).i == -32);
  CHECK(parse({0xcc, 0xff}).u == 255);
  CHECK(parse({0xcd, 0x01, 0x00}).u == 256);
  CHECK(parse({0xce, 0x00, 0x01, 0x00, 0x00}).u == 65536);
  CHECK(parse({0xcf, 0, 0, 0, 1, 0, 0, 0, 0}).u == (1ull << 32));
  CHECK(parse({0xd0, 0x80}).i == -128);
  CHECK(parse({0xd1, 0xff, 0x00}).i == -256);
  CHECK(parse({0xcb, 0x3f, 0xf0, 0, 0, 0, 0, 0, 0}).f == 1.0);
  CHECK(parse({0xca, 0x40, 0x00, 0x00, 0x00}).f == 2.0);
  CHECK(parse({0xc3}).b);
  CHECK(parse({0xa3, 'a', 'b', 'c'}).s == "abc");
  CHECK(parse({0xd9, 2, 'h', 'i'}).s == "hi");
  auto arr = parse({0xdc, 0x00, 0x02, 0x01, 0x02});
  CHECK(arr.items.size() == 2);
  auto map = parse({0x81, 0xa1, 'k', 0x05});
  REQUIRE(map.get("k"));
  CHECK(map.get("k")->u == 5);
}

TEST_CASE("msgpack rejects malformed input with errors") {
  CHECK(try_parse({}).get_failure() == errc::malformed_code_object);
  CHECK(try_parse({0xc1}).detail().find("reserved") != std::string_view::npos);
  CHECK(try_parse({0xa5, 'a'}).detail().find("past the end") != std::string_view::npos);
  CHECK(try_parse({0xdd, 0xff, 0xff, 0xff, 0xff}).detail().find("exceeds the remaining") != std::string_view::npos);
  CHECK(try_parse({0xdf, 0x7f, 0xff, 0xff, 0xff, 0x01}).detail().find("exceeds the remaining") != std::string_view::npos);
  CHECK(try_parse({0xcd, 0x01}).detail().find("truncated") != std::string_view::npos);
  CHECK(try_parse({0x01, 0x02}).detail().find("trailing") != std::string_view::npos);
  std::vector<unsigned> deep(200, 0x91);
  deep.push_back(0x01);
  CHECK(try_parse(deep).detail().find("nesting") != std::string_view::npos);
}

TEST_CASE("metadata of every fixture code object equals Comgr's reading") {
  auto files = fx::list_dir("elf", ".hsaco");
  REQUIRE(files.size() >= 30);
  for (const auto& f : files) {
    CAPTURE(f);
    auto bytes = fx::bytes(f);
    auto co = code::code_object::parse(bytes);
    REQUIRE(co.metadata_note());
    auto md = code::try_parse_metadata(*co.metadata_note());
    REQUIRE_MESSAGE(md.has_value(), md.detail());
    fx::comgr_data d(AMD_COMGR_DATA_KIND_EXECUTABLE, bytes);
    auto root = fx::comgr_metadata(d);
    CHECK(md->target == root.get("amdhsa.target")->str());
    auto ver = root.get("amdhsa.version");
    CHECK(md->version_major == ver->at(0).num());
    CHECK(md->version_minor == ver->at(1).num());
    auto ks = root.get("amdhsa.kernels");
    REQUIRE(ks);
    REQUIRE(md->kernels.size() == ks->list_size());
    for (std::size_t i = 0; i < md->kernels.size(); ++i) {
      const auto& k = md->kernels[i];
      auto ck = ks->at(i);
      CAPTURE(k.name);
      CHECK(k.name == ck.get(".name")->str());
      CHECK(k.symbol == ck.get(".symbol")->str());
      CHECK(k.kernarg_segment_size == ck.get(".kernarg_segment_size")->num());
      CHECK(k.kernarg_segment_align == ck.get(".kernarg_segment_align")->num());
      CHECK(k.group_segment_fixed_size == ck.get(".group_segment_fixed_size")->num());
      CHECK(k.private_segment_fixed_size == ck.get(".private_segment_fixed_size")->num());
      CHECK(k.wavefront_size == ck.get(".wavefront_size")->num());
      CHECK(k.sgpr_count == ck.get(".sgpr_count")->num());
      CHECK(k.vgpr_count == ck.get(".vgpr_count")->num());
      CHECK(k.max_flat_workgroup_size == ck.get(".max_flat_workgroup_size")->num());
      auto args = ck.get(".args");
      REQUIRE(k.args.size() == (args ? args->list_size() : 0));
      for (std::size_t j = 0; j < k.args.size(); ++j) {
        auto ca = args->at(j);
        CHECK(k.args[j].offset == ca.get(".offset")->num());
        CHECK(k.args[j].size == ca.get(".size")->num());
        CHECK(k.args[j].value_kind == ca.get(".value_kind")->str());
      }
      // the descriptor's kernarg_size agrees with the metadata (spec §3.1)
      const auto* ks_sym = co.kernel(k.symbol);
      REQUIRE(ks_sym);
      code::byte_reader kd(ks_sym->descriptor);
      CHECK(*kd.get<std::uint32_t>(8) == k.kernarg_segment_size);
      CHECK(*kd.get<std::uint32_t>(0) == k.group_segment_fixed_size);
      CHECK(*kd.get<std::uint32_t>(4) == k.private_segment_fixed_size);
    }
  }
}

TEST_CASE("vadd-gfx1100: v5 hidden arguments as listed in spec §1.5") {
  auto b = fx::bytes("elf/vadd-gfx1100.hsaco");
  auto md = code::try_parse_metadata(*code::code_object::parse(b).metadata_note()).value();
  CHECK(md.target == "amdgcn-amd-amdhsa--gfx1100");
  CHECK(md.version_major == 1);
  CHECK(md.version_minor == 2);
  const auto* k = md.kernel("vadd");
  REQUIRE(k);
  CHECK(k->kernarg_segment_size == 288);
  CHECK(k->args.size() == 17);
  CHECK(k->args[3].value_kind == "by_value");
  CHECK(k->args[3].offset == 24);
  CHECK(k->hidden_arg("hidden_block_count_x")->offset == 32);
  CHECK(k->hidden_arg("hidden_group_size_x")->offset == 44);
  CHECK(k->hidden_arg("hidden_group_size_x")->size == 2);
  CHECK(k->hidden_arg("hidden_remainder_z")->offset == 54);
  CHECK(k->hidden_arg("hidden_global_offset_x")->offset == 72);
  CHECK(k->hidden_arg("hidden_grid_dims")->offset == 96);
  CHECK(k->hidden_arg("hidden_grid_dims")->hidden());
  CHECK_FALSE(k->args[0].hidden());
  CHECK(k->args[0].type_name == "float*");
  CHECK(k->args[0].address_space == "global");
  CHECK(k->sgpr_count == 18);
  CHECK(k->vgpr_count == 6);
  const auto* fill = md.kernel("fill.kd");
  REQUIRE(fill);
  CHECK(fill->kernarg_segment_size == 12);
  CHECK(fill->args.size() == 2);
  // v4: no hidden arguments for this kernel (spec §1.6 item 6)
  auto b4 = fx::bytes("elf/vadd-gfx1100-cov4.hsaco");
  auto md4 = code::try_parse_metadata(*code::code_object::parse(b4).metadata_note()).value();
  CHECK(md4.version_minor == 1);
  for (const auto& a : md4.kernel("vadd")->args) CHECK_FALSE(a.hidden());
}

TEST_CASE("features.cl: LDS, scratch, reqd_work_group_size and alignment gaps (spec §3.5)") {
  auto b = fx::bytes("elf/features-gfx1100.hsaco");
  auto md = code::try_parse_metadata(*code::code_object::parse(b).metadata_note()).value();
  CHECK(md.kernel("lds_reverse")->group_segment_fixed_size == 1024);
  CHECK(md.kernel("scratch_pick")->private_segment_fixed_size == 516);
  const auto* f = md.kernel("fixed_wg");
  CHECK(f->reqd_workgroup_size == std::array<std::uint32_t, 3>{64, 1, 1});
  CHECK(f->args[1].offset == 8);
  CHECK(f->args[2].offset == 16);
  CHECK(f->args[3].offset == 18);
  CHECK(f->args[4].offset == 24);
}

TEST_CASE("malformed metadata: missing keys, wrong types, arguments outside the segment") {
  // {"amdhsa.version":[1,2], "amdhsa.kernels":[{".name":"k", ...}]} built from MessagePack bytes
  auto str = [](std::vector<unsigned>& v, std::string_view s) { v.push_back(0xa0 | static_cast<unsigned>(s.size())); for (char c : s) v.push_back(static_cast<unsigned char>(c)); };
  auto build = [&](bool drop_kernarg, unsigned wave, unsigned arg_off) {
    std::vector<unsigned> v{0x82};
    str(v, "amdhsa.version"); v.insert(v.end(), {0x92, 1, 2});
    str(v, "amdhsa.kernels"); v.push_back(0x91);
    v.push_back(drop_kernarg ? 0x8a : 0x8b);
    str(v, ".name"); str(v, "k");
    str(v, ".symbol"); str(v, "k.kd");
    if (!drop_kernarg) { str(v, ".kernarg_segment_size"); v.push_back(16); }
    str(v, ".kernarg_segment_align"); v.push_back(8);
    str(v, ".group_segment_fixed_size"); v.push_back(0);
    str(v, ".private_segment_fixed_size"); v.push_back(0);
    str(v, ".wavefront_size"); v.push_back(wave);
    str(v, ".sgpr_count"); v.push_back(4);
    str(v, ".vgpr_count"); v.push_back(4);
    str(v, ".max_flat_workgroup_size"); v.insert(v.end(), {0xcd, 0x01, 0x00});
    str(v, ".args"); v.push_back(0x91); v.push_back(0x83);
    str(v, ".offset"); v.push_back(arg_off);
    str(v, ".size"); v.push_back(8);
    str(v, ".value_kind"); str(v, "by_value");
    std::vector<std::byte> out;
    for (auto x : v) out.push_back(static_cast<std::byte>(x));
    return out;
  };
  auto good = code::try_parse_metadata(build(false, 64, 8));
  REQUIRE_MESSAGE(good.has_value(), good.detail());
  CHECK(good->kernels[0].max_flat_workgroup_size == 256);
  auto r1 = code::try_parse_metadata(build(true, 64, 8));
  CHECK(r1.detail().find("kernel k: missing .kernarg_segment_size") != std::string_view::npos);
  auto r2 = code::try_parse_metadata(build(false, 48, 8));
  CHECK(r2.detail().find("not 32 or 64") != std::string_view::npos);
  auto r3 = code::try_parse_metadata(build(false, 64, 12));
  CHECK(r3.detail().find("outside the kernarg segment") != std::string_view::npos);
  CHECK(r3.get_failure() == errc::malformed_code_object);
  // truncations of a real note never crash
  auto b = fx::bytes("elf/vadd-gfx1100.hsaco");
  auto note = *code::code_object::parse(b).metadata_note();
  for (std::size_t n = 0; n < note.size(); n += 3) CHECK_FALSE(code::try_parse_metadata(note.first(n)).has_value());
}

}  // namespace AQ_UNITY_ID
