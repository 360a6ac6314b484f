// libFuzzer target: the msgpack reader and the metadata extraction on raw note descriptors.
#include <aqueduct/code/metadata.hpp>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  aqueduct::code::byte_span b(reinterpret_cast<const std::byte*>(data), size);
  (void)aqueduct::code::try_parse_metadata(b);
  return 0;
}
