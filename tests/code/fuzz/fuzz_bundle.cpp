// libFuzzer target: format detection, offload bundles, CCOB headers and decompression (with a
// small size limit), .hip_fatbin in host objects, and selection over the entries.
#include <aqueduct/code/fat_binary.hpp>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace code = aqueduct::code;
  code::byte_span b(reinterpret_cast<const std::byte*>(data), size);
  auto fb = code::fat_binary::try_open(b, code::decompress_limits{16u << 20, true});
  if (!fb) return 0;
  static const auto agent = code::target_id::parse("gfx1031");
  (void)fb->try_select(agent, code::selection_policy{true, true, true});
  return 0;
}
