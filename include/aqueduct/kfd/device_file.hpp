// aqueduct/kfd/device_file.hpp — the `device_file` concept: what the driver layer needs from a
// KFD device, so that the real one (/dev/kfd) and the emulated one (emu/) are interchangeable.
//
// Layer: kfd. Everything in kfd/ and above is written against this concept. Two models exist:
// `kfd::linux_device` (real system calls) and `emu::device` (an in-process KFD). emu/ does not
// include this header (kfd/ and emu/ never include each other): it models the concept
// structurally, and tests `static_assert(kfd::device_file<emu::device>)`.
//
// Contract, shared by both models (it is the Linux system-call contract, minus errno):
// - `ioctl(request, arg)`: request is an AMDKFD_IOC_* number (abi/kfd_ioctl.hpp), arg points to
//   its struct. Returns 0, or -errno with the kernel's error code (-EINVAL, -ENOTSUPP = -524 ...).
//   The struct is updated in place exactly as the kernel's copy-out would.
// - `mmap(addr, length, prot, flags, fd, offset)`: fd is `kfd_fd()` (doorbell, events, MMIO pages;
//   offset encodes type and gpu_id, spec/kfd.md §3.2), a render node from `open_render_node`
//   (BO CPU mappings at the mmap_offset ALLOC_MEMORY_OF_GPU returned), or -1 with MAP_ANONYMOUS
//   (address-space reservation). Returns the address or an errno.
// - `munmap(addr, length)`: 0 or -errno.
// - `open_render_node(minor)`: the DRM render node /dev/dri/renderD<minor> that ACQUIRE_VM
//   takes; returns an fd >= 0 or -errno. `close_render_node(fd)` closes it.
// - `sysfs_root()`: the directory holding the KFD topology tree (nodes/N/properties ...).
// - optional `queue_port(queue_id)` (`has_queue_port`): an in-process device's port for a queue it
//   created (core/queue_port.hpp): the doorbell store it cannot observe, and why the queue's engine
//   stopped. The one seam between the layers above and an emulated device's engines. The Linux
//   device has none (a doorbell store to the mapped page is all the hardware needs).
//
// Thread safety: ioctl/mmap/munmap may be called from any thread, as with the kernel.
#pragma once

#include <aqueduct/core/mapping.hpp>
#include <aqueduct/core/queue_port.hpp>
#include <aqueduct/core/result.hpp>

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <filesystem>

namespace aqueduct::kfd {

// mmap `prot` / `flags` values passed through device_file::mmap: the Linux UAPI values
// (asm-generic/mman-common.h, x86-64 and arm64 alike). Both models interpret exactly these, so
// code above the device file never includes <sys/mman.h> (linux_device static_asserts equality).
// Added by kfd (driver layer) after the first commit; emu::device must accept these values.
inline constexpr int prot_none = 0x0;
inline constexpr int prot_read = 0x1;
inline constexpr int prot_write = 0x2;
inline constexpr int prot_exec = 0x4;
inline constexpr int map_shared = 0x01;
inline constexpr int map_private = 0x02;
inline constexpr int map_fixed = 0x10;
inline constexpr int map_anonymous = 0x20;
inline constexpr int map_noreserve = 0x4000;

// Outcome of device_file::mmap: an address, or the errno that refused it. Defined in core/ so
// that emu::device (which may not include kfd/) can return the very same type.
using mapping = ::aqueduct::mapping;

template <class F>
concept device_file = requires(F& f, const F& cf, unsigned long request, void* arg, void* addr, std::size_t length,
                               int prot, int flags, int fd, std::uint64_t offset, std::uint32_t minor) {
  { f.ioctl(request, arg) } noexcept -> std::same_as<int>;
  { f.mmap(addr, length, prot, flags, fd, offset) } noexcept -> std::same_as<mapping>;
  { f.munmap(addr, length) } noexcept -> std::same_as<int>;
  { f.open_render_node(minor) } noexcept -> std::same_as<int>;
  { f.close_render_node(fd) } noexcept -> std::same_as<int>;
  { cf.kfd_fd() } noexcept -> std::same_as<int>;
  { cf.sysfs_root() } noexcept -> std::same_as<const std::filesystem::path&>;
};

// A device file with the optional queue_port hook.
template <class F>
concept has_queue_port = requires(F& f, std::uint32_t queue_id) {
  { f.queue_port(queue_id) } noexcept -> std::same_as<::aqueduct::queue_port*>;
};
// The port of `queue_id` on `f`, or nullptr (no hook, or no port for that queue).
template <class F>
[[nodiscard]] ::aqueduct::queue_port* queue_port_of(F& f, std::uint32_t queue_id) noexcept {
  if constexpr (has_queue_port<F>) {
    return f.queue_port(queue_id);
  } else {
    (void)f;
    (void)queue_id;
    return nullptr;
  }
}

}  // namespace aqueduct::kfd
