// aqueduct/kfd/driver.hpp — `driver<DeviceFile>`: one KFD process context over a device file.
//
// Layer: kfd. Owns the device file (kfd::linux_device or emu::device), checks the ioctl
// interface version (GET_VERSION), reads the topology from the file's sysfs_root(), and acquires
// each GPU's VM with its DRM render node (ACQUIRE_VM, spec/kfd.md §5.1). Every ioctl goes through
// `try_ioctl`, which turns a failure into `errc::ioctl_failed` with the request's kernel name and
// the errno ("AMDKFD_IOC_CREATE_QUEUE failed: Invalid argument (EINVAL, -22)") and never retries
// (the linux_device retries EINTR/EAGAIN only, as libhsakmt does).
//
// `driver` owns; `driver_ref` is the cheap non-owning view every resource (buffers, queues,
// events) keeps. The state lives on the heap, so moving a driver keeps its refs valid; a driver
// must outlive every resource made from it.
// Thread safety: ioctls from any thread; acquire_vm is serialized by a mutex. The topology is
// immutable after open.
#pragma once

#include <aqueduct/abi/kfd_ioctl.hpp>
#include <aqueduct/core/result.hpp>
#include <aqueduct/kfd/device_file.hpp>
#include <aqueduct/kfd/topology.hpp>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace aqueduct::kfd {

// ---- interface version (GET_VERSION) ----------------------------------------------------------
struct kfd_version {
  std::uint32_t major = 0, minor = 0;
  friend constexpr auto operator<=>(const kfd_version&, const kfd_version&) = default;
};

// The oldest KFD ioctl interface aqueduct drives: 1.3. We need the GPU-VM ioctls
// (GET_PROCESS_APERTURES_NEW, ACQUIRE_VM, ALLOC/FREE/MAP/UNMAP_MEMORY_OF_GPU: nr 0x14..0x19) at
// their upstream numbers. The version cannot prove that below 1.3: upstream 1.1 covers kernels
// whose table ends at 0x12 (a 1.1 uapi header has AMDKFD_COMMAND_END 0x13) as well as later
// ones that have them, and 1.2 was also reported by the pre-upstream ROCK driver, whose
// ALLOC_MEMORY_OF_GPU was nr 0x11. Every 1.3 header (SMI events, Linux 5.x) has them all.
inline constexpr kfd_version minimum_kfd_version{1, 3};
// From 1.17 CREATE_QUEUE takes the 96-byte struct (sdma_engine_id); older kernels get 88 bytes.
inline constexpr kfd_version create_queue_96_bytes_version{1, 17};

// ---- errno names ---------------------------------------------------------------------------------
// Symbolic name of an errno, incl. the kernel-internal ones the KFD returns (ENOTSUPP 524).
constexpr const char* errno_name(int e) noexcept {
  switch (e) {
    case EPERM: return "EPERM";
    case ENOENT: return "ENOENT";
    case ESRCH: return "ESRCH";
    case EINTR: return "EINTR";
    case EIO: return "EIO";
    case ENXIO: return "ENXIO";
    case EBADF: return "EBADF";
    case EAGAIN: return "EAGAIN";
    case ENOMEM: return "ENOMEM";
    case EACCES: return "EACCES";
    case EFAULT: return "EFAULT";
    case EBUSY: return "EBUSY";
    case EEXIST: return "EEXIST";
    case ENODEV: return "ENODEV";
    case EINVAL: return "EINVAL";
    case ENOTTY: return "ENOTTY";
    case ENOSPC: return "ENOSPC";
    case ENOSYS: return "ENOSYS";
    case EADDRINUSE: return "EADDRINUSE";
    case ETIME: return "ETIME";
    case 512: return "ERESTARTSYS";    // kernel-internal (include/linux/errno.h)
    case abi::kfd::enotsupp: return "ENOTSUPP";  // 524, kernel-internal, not ENOTSUP (95)
    default: return "E?";
  }
}
// "Invalid argument (EINVAL, -22)"
inline std::string describe_errno(int e) {
  const std::string text = e == abi::kfd::enotsupp ? std::string("Operation is not supported") : std::strerror(e);
  return text + " (" + errno_name(e) + ", -" + std::to_string(e) + ")";
}
// The errc of a request that returned -e: CREATE_QUEUE's ENOMEM (no free queue slot or SDMA
// queue), ENOSPC (the per-process queue limit), EPERM (the per-device queue limit) and EBUSY (no
// free doorbell, allocate_doorbell) say the device is out of queues (pqm_create_queue /
// create_queue_cpsch, spec/kfd.md §2.6), so callers can fall back; ALLOC_MEMORY_OF_GPU's ENOMEM
// is out_of_memory; everything else is ioctl_failed. The errno itself is kept as data
// (failure::os_errno).
[[nodiscard]] inline errc ioctl_errc(unsigned long request, int e) noexcept {
  const unsigned nr = abi::kfd::ioc_nr(request);
  if (nr == abi::kfd::ioc_nr(abi::kfd::amdkfd_ioc_create_queue) && (e == ENOMEM || e == ENOSPC || e == EPERM || e == EBUSY))
    return errc::out_of_resources;
  if (nr == abi::kfd::ioc_nr(abi::kfd::amdkfd_ioc_alloc_memory_of_gpu) && e == ENOMEM) return errc::out_of_memory;
  return errc::ioctl_failed;
}
// The failure of a request that returned -e.
inline failure ioctl_failure(unsigned long request, int e, std::string_view context = {}) {
  std::string s = std::string(abi::kfd::ioctl_name(request)) + " failed: " + describe_errno(e);
  if (!context.empty()) {
    s += " [";
    s += context;
    s += "]";
  }
  return failure(ioctl_errc(request, e), std::move(s), e);
}

namespace detail {
template <device_file F>
struct driver_state {
  explicit driver_state(F&& f) : file(std::move(f)) {}
  F file;
  kfd_version version{};
  topology topo;
  std::mutex mutex;
  std::map<std::uint32_t, int> render_fds;  // gpu_id -> render node fd (VM acquired)
  std::map<std::uint32_t, abi::kfd::process_device_apertures> apertures;  // gpu_id -> apertures
};
}  // namespace detail

template <device_file F>
class driver_ref {
 public:
  driver_ref() = default;
  explicit driver_ref(detail::driver_state<F>* s) noexcept : s_(s) {}

  [[nodiscard]] F& file() const noexcept { return s_->file; }
  [[nodiscard]] const topology& topo() const noexcept { return s_->topo; }
  [[nodiscard]] kfd_version version() const noexcept { return s_->version; }
  [[nodiscard]] bool valid() const noexcept { return s_ != nullptr; }
  friend bool operator==(const driver_ref& a, const driver_ref& b) noexcept { return a.s_ == b.s_; }

  // One ioctl; a failure carries the request's name, the errno and `context`.
  [[nodiscard]] result<void> try_ioctl(unsigned long request, void* arg, std::string_view context = {}) const {
    const int r = s_->file.ioctl(request, arg);
    if (r != 0) return ioctl_failure(request, -r, context);
    return ok();
  }

  // The GPU node with this gpu_id, or errc::not_found.
  [[nodiscard]] result<const node*> try_gpu(std::uint32_t gpu_id) const {
    if (const node* n = s_->topo.find_gpu(gpu_id)) return n;
    return failure(errc::not_found, "no GPU node with gpu_id " + std::to_string(gpu_id) + " in " +
                                        s_->topo.root.string());
  }

  // ACQUIRE_VM for the GPU: opens /dev/dri/renderD<drm_render_minor> and hands it to the KFD.
  // Idempotent (the render node stays open until the driver is destroyed).
  [[nodiscard]] result<void> try_acquire_vm(const node& gpu) const {
    std::lock_guard lock(s_->mutex);
    if (s_->render_fds.count(gpu.gpu_id)) return ok();
    const auto minor = static_cast<std::uint32_t>(gpu.properties.drm_render_minor);
    const int fd = s_->file.open_render_node(minor);
    if (fd < 0)
      return failure(errc::kfd_unavailable, "cannot open /dev/dri/renderD" + std::to_string(minor) + " for gpu_id " +
                                                std::to_string(gpu.gpu_id) + ": " + describe_errno(-fd));
    abi::kfd::acquire_vm_args args{static_cast<std::uint32_t>(fd), gpu.gpu_id};
    const int r = s_->file.ioctl(abi::kfd::amdkfd_ioc_acquire_vm, &args);
    if (r != 0) {
      (void)s_->file.close_render_node(fd);
      return ioctl_failure(abi::kfd::amdkfd_ioc_acquire_vm, -r, "gpu_id " + std::to_string(gpu.gpu_id));
    }
    s_->render_fds.emplace(gpu.gpu_id, fd);
    return ok();
  }
  // The process apertures of a GPU (GET_PROCESS_APERTURES_NEW at open), or nullptr. GPU VAs of
  // buffers must lie in [gpuvm_base, gpuvm_limit].
  [[nodiscard]] const abi::kfd::process_device_apertures* apertures(std::uint32_t gpu_id) const noexcept {
    auto it = s_->apertures.find(gpu_id);
    return it == s_->apertures.end() ? nullptr : &it->second;
  }

  // ACQUIRE_VM for every GPU node of the topology.
  [[nodiscard]] result<void> try_acquire_all() const {
    for (const node* n : s_->topo.gpu_nodes()) AQUEDUCT_TRY_VOID(try_acquire_vm(*n));
    return ok();
  }
  // The render node fd of a GPU whose VM was acquired (BO CPU mappings use it), or -1.
  [[nodiscard]] int render_fd(std::uint32_t gpu_id) const {
    std::lock_guard lock(s_->mutex);
    auto it = s_->render_fds.find(gpu_id);
    return it == s_->render_fds.end() ? -1 : it->second;
  }

  [[nodiscard]] detail::driver_state<F>* state() const noexcept { return s_; }

 protected:
  detail::driver_state<F>* s_ = nullptr;
};

template <device_file F>
class driver : public driver_ref<F> {
 public:
  // Takes the device file, checks the KFD version and reads its topology.
  // errc::kfd_version_unsupported when too old; errc::topology_error from the parser.
  [[nodiscard]] static result<driver> try_open(F file) {
    auto state = std::make_unique<detail::driver_state<F>>(std::move(file));
    abi::kfd::get_version_args v{};
    if (int r = state->file.ioctl(abi::kfd::amdkfd_ioc_get_version, &v); r != 0)
      return ioctl_failure(abi::kfd::amdkfd_ioc_get_version, -r);
    state->version = {v.major_version, v.minor_version};
    if (v.major_version != minimum_kfd_version.major || state->version < minimum_kfd_version)
      return failure(errc::kfd_version_unsupported,
                     "KFD ioctl interface " + std::to_string(v.major_version) + "." + std::to_string(v.minor_version) +
                         " is too old or unknown: aqueduct needs 1.x with x >= " +
                         std::to_string(minimum_kfd_version.minor) +
                         " (the GPU-VM ioctls ACQUIRE_VM, ALLOC/MAP_MEMORY_OF_GPU at their upstream numbers);"
                         " update the kernel (amdgpu/amdkfd)");
    AQUEDUCT_TRY(state->topo, try_read_topology(state->file.sysfs_root()));
    AQUEDUCT_TRY_VOID(read_apertures(*state));
    return driver(std::move(state));
  }
  [[nodiscard]] static driver open(F file) { return try_open(std::move(file)).value(); }

  driver(driver&& o) noexcept : driver_ref<F>(o.own_.get()), own_(std::move(o.own_)) { o.s_ = nullptr; }
  driver& operator=(driver&& o) noexcept {
    if (this != &o) {
      release();
      own_ = std::move(o.own_);
      this->s_ = own_.get();
      o.s_ = nullptr;
    }
    return *this;
  }
  driver(const driver&) = delete;
  driver& operator=(const driver&) = delete;
  ~driver() { release(); }

  [[nodiscard]] driver_ref<F> ref() const noexcept { return driver_ref<F>(own_.get()); }

  // CREATE_QUEUE request number for this kernel's struct size (see create_queue_96_bytes_version).
  [[nodiscard]] unsigned long create_queue_request() const noexcept {
    return this->version() >= create_queue_96_bytes_version ? abi::kfd::amdkfd_ioc_create_queue
                                                            : abi::kfd::amdkfd_ioc_create_queue_1_11;
  }

 private:
  // GET_PROCESS_APERTURES_NEW: first with num_of_nodes 0 (the kernel returns the count), then
  // with an array of that many entries (kfd_chardev.c).
  static result<void> read_apertures(detail::driver_state<F>& st) {
    namespace k = abi::kfd;
    k::get_process_apertures_new_args a{};
    if (int r = st.file.ioctl(k::amdkfd_ioc_get_process_apertures_new, &a); r != 0)
      return ioctl_failure(k::amdkfd_ioc_get_process_apertures_new, -r, "count");
    std::vector<k::process_device_apertures> ap(a.num_of_nodes);
    if (ap.empty()) return ok();
    a.kfd_process_device_apertures_ptr = reinterpret_cast<std::uint64_t>(ap.data());
    if (int r = st.file.ioctl(k::amdkfd_ioc_get_process_apertures_new, &a); r != 0)
      return ioctl_failure(k::amdkfd_ioc_get_process_apertures_new, -r);
    for (std::uint32_t i = 0; i < a.num_of_nodes && i < ap.size(); ++i) st.apertures[ap[i].gpu_id] = ap[i];
    return ok();
  }
  explicit driver(std::unique_ptr<detail::driver_state<F>> s) noexcept : driver_ref<F>(s.get()), own_(std::move(s)) {}
  void release() noexcept {
    if (!own_) return;
    for (auto& [gpu, fd] : own_->render_fds) (void)own_->file.close_render_node(fd);
    own_->render_fds.clear();
    own_.reset();
    this->s_ = nullptr;
  }
  std::unique_ptr<detail::driver_state<F>> own_;
};

// CREATE_QUEUE request for a driver_ref (same rule as driver::create_queue_request).
template <device_file F>
[[nodiscard]] unsigned long create_queue_request(driver_ref<F> d) noexcept {
  return d.version() >= create_queue_96_bytes_version ? abi::kfd::amdkfd_ioc_create_queue
                                                      : abi::kfd::amdkfd_ioc_create_queue_1_11;
}

}  // namespace aqueduct::kfd
