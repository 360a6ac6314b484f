// libFuzzer target: code_object parsing, kernels, notes, metadata and loading into host memory.
#include <aqueduct/code/elf.hpp>
#include <aqueduct/code/loader.hpp>
#include <aqueduct/code/metadata.hpp>

#include <cstdlib>
#include <cstring>

namespace {
struct host_allocator {
  aqueduct::result<aqueduct::code::device_memory> try_allocate_code(std::uint64_t n, std::uint64_t align) {
    if (n > (64u << 20)) return aqueduct::errc::out_of_memory;
    void* p = std::aligned_alloc(align, aqueduct::align_up(n, align));
    if (!p) return aqueduct::errc::out_of_memory;
    return aqueduct::code::device_memory{aqueduct::gpu_va(reinterpret_cast<std::uintptr_t>(p)), static_cast<std::byte*>(p), n};
  }
  void free_code(aqueduct::code::device_memory m) noexcept { std::free(m.host); }
};
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace code = aqueduct::code;
  code::byte_span b(reinterpret_cast<const std::byte*>(data), size);
  auto co = code::code_object::try_parse(b);
  if (!co) return 0;
  for (const auto& k : co->kernels()) (void)k.descriptor.size();
  if (auto n = co->metadata_note()) (void)code::try_parse_metadata(*n);
  host_allocator a;
  (void)code::try_load(*co, a);
  return 0;
}
