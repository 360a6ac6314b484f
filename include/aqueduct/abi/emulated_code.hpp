// aqueduct/abi/emulated_code.hpp — the emulated-code wire format: what sits at a kernel's code
// entry on the emulated device, naming the host function the emulator runs for it.
//
// Layer: abi. aqueduct's own format (no hardware defines it), shared by the loader (code/, which
// writes it) and the emulator's engines (emu/, which read it). A dispatch on the emulated device
// follows the real path: the packet's kernel_object is the GPU address of a real 64-byte kernel
// descriptor; its kernel_code_entry_byte_offset (256-byte aligned) leads to the "code", which is
// a 64-byte `emulated_code_blob` naming a host function in the device's host-kernel registry.
// Thread safety: constants and pure functions.
#pragma once

#include <aqueduct/abi/kernel_descriptor.hpp>
#include <aqueduct/core/assert.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>

namespace aqueduct::abi {

// The "code" at a kernel's entry point on the emulator (64 bytes, 256-byte aligned).
struct emulated_code_blob {
  char magic[8];  // "AQEMUHK" NUL
  std::uint32_t version;
  std::uint32_t name_size;  // bytes of name used, < 48
  char name[48];
};
static_assert(sizeof(emulated_code_blob) == 64);
static_assert(offsetof(emulated_code_blob, version) == 8 && offsetof(emulated_code_blob, name_size) == 12 &&
              offsetof(emulated_code_blob, name) == 16);
inline constexpr char emulated_code_magic[8] = {'A', 'Q', 'E', 'M', 'U', 'H', 'K', '\0'};
inline constexpr std::uint32_t emulated_code_version = 1;
inline constexpr std::size_t max_host_kernel_name = 47;

// Bytes an emulated kernel object takes: descriptor at 0, code blob at the next 256 boundary.
inline constexpr std::size_t emulated_code_offset = kernel_code_entry_align;
inline constexpr std::size_t emulated_kernel_object_size = emulated_code_offset + sizeof(emulated_code_blob);

// Writes an emulated kernel object into `dst` (host view of GPU memory, 64-byte aligned, at
// least emulated_kernel_object_size bytes): `descriptor` with kernel_code_entry_byte_offset set
// to emulated_code_offset, and the code blob naming `name`. The kernel_object for a dispatch is
// the GPU address of dst[0].
// `descriptor` is taken by reference: a 64-byte-aligned type passed by value makes GCC warn
// about the ABI change of GCC 4.6 (-Wpsabi).
inline void write_emulated_kernel_object(std::span<std::byte> dst, const kernel_descriptor& descriptor,
                                         std::string_view name) {
  AQUEDUCT_ASSERT(dst.size() >= emulated_kernel_object_size, "buffer too small for an emulated kernel object");
  AQUEDUCT_ASSERT(!name.empty() && name.size() <= max_host_kernel_name, "host kernel name length");
  kernel_descriptor kd = descriptor;
  kd.kernel_code_entry_byte_offset = static_cast<std::int64_t>(emulated_code_offset);
  std::memset(dst.data(), 0, emulated_kernel_object_size);
  std::memcpy(dst.data(), &kd, sizeof kd);
  emulated_code_blob blob{};
  std::memcpy(blob.magic, emulated_code_magic, sizeof blob.magic);
  blob.version = emulated_code_version;
  blob.name_size = static_cast<std::uint32_t>(name.size());
  std::memcpy(blob.name, name.data(), name.size());
  std::memcpy(dst.data() + emulated_code_offset, &blob, sizeof blob);
}

// The name in a code blob, or empty if the blob is not a valid emulated code blob.
[[nodiscard]] inline std::string_view emulated_code_name(const emulated_code_blob& b) noexcept {
  if (std::memcmp(b.magic, emulated_code_magic, sizeof b.magic) != 0) return {};
  if (b.version != emulated_code_version || b.name_size == 0 || b.name_size > max_host_kernel_name) return {};
  return {b.name, b.name_size};
}

}  // namespace aqueduct::abi
