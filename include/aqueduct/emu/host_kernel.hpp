// aqueduct/emu/host_kernel.hpp — emulated kernels: host functions named by emulated code.
//
// Layer: emu. A dispatch on the emulated device follows the real path: the AQL packet's
// kernel_object is the GPU address of a real 64-byte kernel descriptor; its
// kernel_code_entry_byte_offset leads (256-byte aligned) to the "code", which on the emulator
// is a 64-byte `emulated_code_blob` naming a host function in a `host_kernel_registry`. The
// processor builds each wave's initial registers from the descriptor (emu/wave_state.hpp) and
// calls the function once per workgroup; the function finds its kernarg pointer, workgroup
// ids and work-item ids in those registers, at the SGPR indices its "compiled code" assumes.
// Memory is reached only through `workgroup_context::ptr/load/store`, which check the VM
// mappings and raise `memory_fault` (the processor turns it into a queue error).
// Thread safety: host_kernel_registry is internally synchronized (add/find from any thread);
// a workgroup_context is used by one worker thread at a time.
#pragma once

#include <aqueduct/abi/kernel_descriptor.hpp>
#include <aqueduct/core/assert.hpp>
#include <aqueduct/emu/wave_state.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <span>
#include <string>
#include <string_view>

namespace aqueduct::emu {

// What the emulated GPU VM answers: is [va, va+len) mapped for this queue's GPU, and where is
// it in this process. The emulator maps GPU VAs at the same host address (identity), which is
// the default; a device that does not can override `host_address`.
class vm_access {
 public:
  virtual ~vm_access() = default;
  [[nodiscard]] virtual bool is_mapped(std::uint64_t va, std::uint64_t len) const noexcept = 0;
  [[nodiscard]] virtual void* host_address(std::uint64_t va) const noexcept {
    return reinterpret_cast<void*>(static_cast<std::uintptr_t>(va));
  }
};

// Raised by checked accesses of a host kernel; ends the dispatch with a queue error.
struct memory_fault {
  std::uint64_t address;
  std::uint64_t length;
  bool write;
};

// The "code" at a kernel's entry point on the emulator (64 bytes, 256-byte aligned).
struct emulated_code_blob {
  char magic[8];  // "AQEMUHK" NUL
  std::uint32_t version;
  std::uint32_t name_size;  // bytes of name used, < 48
  char name[48];
};
static_assert(sizeof(emulated_code_blob) == 64);
inline constexpr char emulated_code_magic[8] = {'A', 'Q', 'E', 'M', 'U', 'H', 'K', '\0'};
inline constexpr std::uint32_t emulated_code_version = 1;
inline constexpr std::size_t max_host_kernel_name = 47;

// Everything a host kernel sees of its workgroup: the waves' initial registers, its LDS, and
// checked access to GPU memory.
class workgroup_context {
 public:
  workgroup_context(const vm_access& vm, std::span<const wave_state> waves, std::span<std::byte> lds,
                    const workgroup_geometry& g) noexcept
      : vm_(&vm), waves_(waves), lds_(lds), geometry_(g) {}

  [[nodiscard]] std::span<const wave_state> waves() const noexcept { return waves_; }
  [[nodiscard]] const wave_state& wave(std::size_t i) const noexcept { return waves_[i]; }
  [[nodiscard]] std::span<std::byte> lds() const noexcept { return lds_; }
  // Geometry as the CP computed it. A faithful kernel reads ids from SGPRs/VGPRs instead; this
  // is for checks and diagnostics.
  [[nodiscard]] const workgroup_geometry& geometry() const noexcept { return geometry_; }

  // Host pointer to `count` T at `va`, after checking the mapping (memory_fault if not mapped).
  template <class T>
  [[nodiscard]] T* ptr(std::uint64_t va, std::size_t count = 1, bool write = false) const {
    const std::uint64_t len = std::uint64_t(sizeof(T)) * count;
    if (va == 0 || !vm_->is_mapped(va, len)) throw memory_fault{va, len, write};
    return static_cast<T*>(vm_->host_address(va));
  }
  template <class T>
  [[nodiscard]] T load(std::uint64_t va) const {
    T v;
    std::memcpy(&v, ptr<const std::byte>(va, sizeof(T)), sizeof(T));
    return v;
  }
  template <class T>
  void store(std::uint64_t va, const T& v) const {
    std::memcpy(ptr<std::byte>(va, sizeof(T), true), &v, sizeof(T));
  }

 private:
  const vm_access* vm_;
  std::span<const wave_state> waves_;
  std::span<std::byte> lds_;
  workgroup_geometry geometry_;
};

using host_kernel_fn = std::function<void(workgroup_context&)>;

// Name → host function. One process-wide instance (`global()`) serves the emulated device by
// default; tests may use their own.
class host_kernel_registry {
 public:
  // Precondition: name is 1..max_host_kernel_name bytes. Replaces an existing entry.
  void add(std::string_view name, host_kernel_fn fn) {
    AQUEDUCT_ASSERT(!name.empty() && name.size() <= max_host_kernel_name, "host kernel name length");
    std::unique_lock lock(mu_);
    map_[std::string(name)] = std::make_shared<const host_kernel_fn>(std::move(fn));
  }
  void remove(std::string_view name) {
    std::unique_lock lock(mu_);
    map_.erase(std::string(name));
  }
  // The function, or null. The shared_ptr keeps it alive while a dispatch runs.
  [[nodiscard]] std::shared_ptr<const host_kernel_fn> find(std::string_view name) const {
    std::shared_lock lock(mu_);
    auto it = map_.find(std::string(name));
    return it == map_.end() ? nullptr : it->second;
  }
  [[nodiscard]] static host_kernel_registry& global() {
    static host_kernel_registry r;
    return r;
  }

 private:
  mutable std::shared_mutex mu_;
  std::map<std::string, std::shared_ptr<const host_kernel_fn>, std::less<>> map_;
};

// Bytes an emulated kernel object takes: descriptor at 0, code blob at the next 256 boundary.
inline constexpr std::size_t emulated_code_offset = abi::kernel_code_entry_align;
inline constexpr std::size_t emulated_kernel_object_size = emulated_code_offset + sizeof(emulated_code_blob);

// Writes an emulated kernel object into `dst` (host view of GPU memory, 64-byte aligned, at
// least emulated_kernel_object_size bytes): `kd` with kernel_code_entry_byte_offset set to
// emulated_code_offset, and the code blob naming `name`. The kernel_object for a dispatch is
// the GPU address of dst[0].
// `descriptor` is taken by reference: a 64-byte-aligned type passed by value makes GCC warn
// about the ABI change of GCC 4.6 (-Wpsabi).
inline void write_emulated_kernel_object(std::span<std::byte> dst, const abi::kernel_descriptor& descriptor,
                                         std::string_view name) {
  AQUEDUCT_ASSERT(dst.size() >= emulated_kernel_object_size, "buffer too small for an emulated kernel object");
  AQUEDUCT_ASSERT(!name.empty() && name.size() <= max_host_kernel_name, "host kernel name length");
  abi::kernel_descriptor kd = descriptor;
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

}  // namespace aqueduct::emu
