// aqueduct/kfd/linux_device.hpp — the real `device_file` model: /dev/kfd and the DRM render nodes.
//
// Layer: kfd. A thin, honest wrapper over the system calls: open(2) of /dev/kfd with
// O_RDWR|O_CLOEXEC, ioctl(2) retried on EINTR/EAGAIN exactly as libhsakmt's kmtIoctl does (the
// kernel restarts nothing for us, and a signal during WAIT_EVENTS must not look like a failure),
// mmap(2)/munmap(2), and open(2) of /dev/dri/renderD<minor> for ACQUIRE_VM (spec/kfd.md §5.1).
// Everything else (versions, errors with names, memory, queues) lives in kfd/driver.hpp and is
// shared with the emulator. On a system that is not Linux the type exists but `try_open` fails.
//
// Thread safety: like the kernel interface: ioctl/mmap/munmap from any thread. Moving or
// destroying a linux_device while another thread uses it is a data race.
#pragma once

#include <aqueduct/config.hpp>
#include <aqueduct/core/result.hpp>
#include <aqueduct/kfd/device_file.hpp>
#include <aqueduct/kfd/topology.hpp>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#if AQUEDUCT_LINUX
#  include <fcntl.h>
#  include <sys/ioctl.h>
#  include <sys/mman.h>
#  include <unistd.h>
#endif
#if AQUEDUCT_LINUX && AQUEDUCT_HAS_LIBDRM
#  include <xf86drm.h>
#endif

namespace aqueduct::kfd {

// Where the kernel publishes the KFD topology (spec/kfd.md §6.1).
inline const std::filesystem::path& default_sysfs_root() noexcept {
  static const std::filesystem::path root{"/sys/class/kfd/kfd/topology"};
  return root;
}
inline constexpr const char* default_kfd_path = "/dev/kfd";

// "/dev/dri/renderD<minor>": the render node ACQUIRE_VM takes (minor = drm_render_minor, 128+).
inline std::string render_node_path(std::uint32_t minor) { return "/dev/dri/renderD" + std::to_string(minor); }

#if AQUEDUCT_LINUX
static_assert(prot_read == PROT_READ && prot_write == PROT_WRITE && prot_exec == PROT_EXEC && prot_none == PROT_NONE);
static_assert(map_shared == MAP_SHARED && map_private == MAP_PRIVATE && map_fixed == MAP_FIXED &&
              map_anonymous == MAP_ANONYMOUS && map_noreserve == MAP_NORESERVE);
#endif

class linux_device {
 public:
  // Opens `kfd_path` (default /dev/kfd). Fails with errc::kfd_unavailable and a detail saying
  // what to do when there is no GPU, no permission, or no Linux.
  [[nodiscard]] static result<linux_device> try_open(std::filesystem::path sysfs_root = default_sysfs_root(),
                                                     std::filesystem::path kfd_path = default_kfd_path) {
#if AQUEDUCT_LINUX
    int fd = -1;
    do {
      fd = ::open(kfd_path.c_str(), O_RDWR | O_CLOEXEC);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0) {
      const int e = errno;
      std::string hint = e == EACCES || e == EPERM
                             ? "; add the user to the 'render' (or 'video') group, or run with --emulate PRESET "
                               "to use the emulated device"
                             : "; no AMD GPU driver (amdgpu/amdkfd) here? run with --emulate PRESET (e.g. "
                               "--emulate mi300x) to use the emulated device";
      return failure(errc::kfd_unavailable, "cannot open " + kfd_path.string() + ": " + std::strerror(e) + hint, e);
    }
    return linux_device(fd, std::move(sysfs_root));
#else
    (void)sysfs_root;
    return failure(errc::kfd_unavailable,
                   "cannot open " + kfd_path.string() + ": the KFD driver exists only on Linux; use --emulate PRESET",
                   ENOENT);
#endif
  }
  [[nodiscard]] static linux_device open(std::filesystem::path sysfs_root = default_sysfs_root(),
                                         std::filesystem::path kfd_path = default_kfd_path) {
    return try_open(std::move(sysfs_root), std::move(kfd_path)).value();
  }

  linux_device(linux_device&& o) noexcept : fd_(std::exchange(o.fd_, -1)), sysfs_root_(std::move(o.sysfs_root_)) {}
  linux_device& operator=(linux_device&& o) noexcept {
    if (this != &o) {
      close_fd();
      fd_ = std::exchange(o.fd_, -1);
      sysfs_root_ = std::move(o.sysfs_root_);
    }
    return *this;
  }
  linux_device(const linux_device&) = delete;
  linux_device& operator=(const linux_device&) = delete;
  ~linux_device() { close_fd(); }

  // ---- device_file -------------------------------------------------------------------------
  // 0 or -errno. EINTR and EAGAIN are retried, as libhsakmt's kmtIoctl does; nothing else is.
  int ioctl(unsigned long request, void* arg) noexcept {
#if AQUEDUCT_LINUX
    int r;
    do {
      r = ::ioctl(fd_, request, arg);
    } while (r == -1 && (errno == EINTR || errno == EAGAIN));
    return r == -1 ? -errno : 0;
#else
    (void)request, (void)arg;
    return -38;  // ENOSYS
#endif
  }

  mapping mmap(void* addr, std::size_t length, int prot, int flags, int fd, std::uint64_t offset) noexcept {
#if AQUEDUCT_LINUX
    void* p = ::mmap(addr, length, prot, flags, fd, static_cast<off_t>(offset));
    if (p == MAP_FAILED) return {nullptr, errno};
    return {p, 0};
#else
    (void)addr, (void)length, (void)prot, (void)flags, (void)fd, (void)offset;
    return {nullptr, 38};
#endif
  }

  int munmap(void* addr, std::size_t length) noexcept {
#if AQUEDUCT_LINUX
    return ::munmap(addr, length) == 0 ? 0 : -errno;
#else
    (void)addr, (void)length;
    return -38;
#endif
  }

  int open_render_node(std::uint32_t minor) noexcept {
#if AQUEDUCT_LINUX
    char path[64];
    std::snprintf(path, sizeof path, "/dev/dri/renderD%u", static_cast<unsigned>(minor));
    int fd;
    do {
      fd = ::open(path, O_RDWR | O_CLOEXEC);
    } while (fd < 0 && errno == EINTR);
    return fd < 0 ? -errno : fd;
#else
    (void)minor;
    return -38;
#endif
  }

  int close_render_node(int fd) noexcept {
#if AQUEDUCT_LINUX
    return ::close(fd) == 0 ? 0 : -errno;
#else
    (void)fd;
    return -38;
#endif
  }

  [[nodiscard]] int kfd_fd() const noexcept { return fd_; }
  [[nodiscard]] const std::filesystem::path& sysfs_root() const noexcept { return sysfs_root_; }

 private:
  linux_device(int fd, std::filesystem::path root) noexcept : fd_(fd), sysfs_root_(std::move(root)) {}
  void close_fd() noexcept {
#if AQUEDUCT_LINUX
    if (fd_ >= 0) ::close(fd_);
#endif
    fd_ = -1;
  }

  int fd_ = -1;
  std::filesystem::path sysfs_root_;
};

static_assert(device_file<linux_device>);

// ---- render-node enumeration (libdrm, optional) -------------------------------------------------
// What libdrm reports about a render node; used to confirm that a topology node's
// drm_render_minor names the PCI device the topology says (vendor_id / device_id).
struct drm_node_info {
  std::uint32_t render_minor = 0;
  std::uint16_t vendor_id = 0;
  std::uint16_t device_id = 0;
  std::string path;  // "/dev/dri/renderD128"
};

// Every PCI render node libdrm knows. Empty without libdrm or without render nodes.
inline std::vector<drm_node_info> enumerate_render_nodes() {
  std::vector<drm_node_info> out;
#if AQUEDUCT_LINUX && AQUEDUCT_HAS_LIBDRM
  drmDevicePtr devs[64];
  const int n = drmGetDevices2(0, devs, 64);
  if (n <= 0) return out;
  for (int i = 0; i < n; ++i) {
    drmDevicePtr d = devs[i];
    if (!(d->available_nodes & (1 << DRM_NODE_RENDER)) || d->bustype != DRM_BUS_PCI) continue;
    drm_node_info info;
    info.path = d->nodes[DRM_NODE_RENDER];
    const auto pos = info.path.find("renderD");
    if (pos == std::string::npos) continue;
    info.render_minor = static_cast<std::uint32_t>(std::strtoul(info.path.c_str() + pos + 7, nullptr, 10));
    info.vendor_id = d->deviceinfo.pci->vendor_id;
    info.device_id = d->deviceinfo.pci->device_id;
    out.push_back(std::move(info));
  }
  drmFreeDevices(devs, n);
#endif
  return out;
}

// Whether this build can enumerate render nodes (AQUEDUCT_HAS_LIBDRM on Linux).
inline constexpr bool has_render_node_enumeration = AQUEDUCT_LINUX && AQUEDUCT_HAS_LIBDRM;

// A GPU node matched to its DRM render node by drm_render_minor (spec/kfd.md §5.1).
struct render_node_match {
  std::uint32_t node_id = 0, gpu_id = 0, minor = 0;
  std::string path;        // /dev/dri/renderD<minor>
  bool listed = false;     // libdrm lists a render node with that minor
  bool ids_match = false;  // ... whose PCI vendor/device equal the topology's vendor_id/device_id
};

// Matches every GPU node of `t` against `drm` (default: libdrm's list; empty without libdrm).
inline std::vector<render_node_match> match_render_nodes(const topology& t,
                                                         const std::vector<drm_node_info>& drm) {
  std::vector<render_node_match> out;
  for (const node* n : t.gpu_nodes()) {
    render_node_match m;
    m.node_id = n->id;
    m.gpu_id = n->gpu_id;
    m.minor = static_cast<std::uint32_t>(n->properties.drm_render_minor);
    m.path = render_node_path(m.minor);
    for (const auto& d : drm)
      if (d.render_minor == m.minor) {
        m.listed = true;
        m.ids_match = d.vendor_id == n->properties.vendor_id && d.device_id == n->properties.device_id;
      }
    out.push_back(std::move(m));
  }
  return out;
}
inline std::vector<render_node_match> match_render_nodes(const topology& t) {
  return match_render_nodes(t, enumerate_render_nodes());
}

}  // namespace aqueduct::kfd
