// tests/code/fuzz_regressions.cpp — replays every input kept under tests/code/fuzz/regressions/
// (inputs that once crashed or hung a fuzzer, plus hand-made nasty ones) through every parser.
// Each must give a value or a failure with a detail, never a crash (the fuzz builds add ASan/UBSan).
#include <aqueduct/code/fat_binary.hpp>
#include <aqueduct/code/loader.hpp>
#include <aqueduct/code/metadata.hpp>

#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

namespace code = aqueduct::code;

namespace {
struct host_allocator {
  aqueduct::result<code::device_memory> try_allocate_code(std::uint64_t n, std::uint64_t align) {
    if (n > (64u << 20)) return aqueduct::errc::out_of_memory;
    void* p = std::aligned_alloc(align, aqueduct::align_up(n, align));
    if (!p) return aqueduct::errc::out_of_memory;
    return code::device_memory{aqueduct::gpu_va(reinterpret_cast<std::uintptr_t>(p)), static_cast<std::byte*>(p), n};
  }
  void free_code(code::device_memory m) noexcept { std::free(m.host); }
};
template <class R>
void check_result(const R& r) {
  if (!r.has_value()) CHECK(!r.get_failure().describe().empty());
}
}  // namespace

TEST_CASE("fuzz regression inputs give results, never crashes") {
  const char* dir = std::getenv("AQUEDUCT_FUZZ_REGRESSIONS");
  REQUIRE(dir != nullptr);
  std::size_t n = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file() || e.path().filename().string().starts_with(".")) continue;
    CAPTURE(e.path().string());
    auto bytes = code::read_file(e.path().string());
    code::byte_span b(bytes);
    auto co = code::code_object::try_parse(b);
    check_result(co);
    if (co) {
      host_allocator a;
      check_result(code::try_load(*co, a));
      if (auto note = co->metadata_note()) check_result(code::try_parse_metadata(*note));
    }
    auto fb = code::fat_binary::try_open(b, code::decompress_limits{16u << 20, true});
    check_result(fb);
    if (fb) check_result(fb->try_select(code::target_id::parse("gfx1031"), code::selection_policy{true, true, true}));
    check_result(code::try_parse_metadata(b));
    std::string_view s(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    check_result(code::target_id::try_parse(s));
    check_result(code::bundle_entry_id::try_parse(s));
    ++n;
  }
  CHECK(n >= 1);
}

}  // namespace AQ_UNITY_ID
