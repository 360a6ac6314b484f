// libFuzzer target: target-ID and bundle-entry-ID parsing.
#include <aqueduct/code/target_id.hpp>

#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view s(reinterpret_cast<const char*>(data), size);
  if (auto t = aqueduct::code::target_id::try_parse(s)) (void)t->to_string();
  (void)aqueduct::code::bundle_entry_id::try_parse(s);
  return 0;
}
