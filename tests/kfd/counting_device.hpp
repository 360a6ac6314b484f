// tests/kfd/counting_device.hpp — a device_file wrapper that counts what is taken and released.
//
// Test support for the kfd layer: wraps another device file by reference (so a non-movable
// emu::device can stay in the test) and counts live BOs, GPU mappings, queues, events, mmapped
// bytes and open render nodes, from the ioctls that SUCCEEDED. After every resource is
// destroyed, all live counts must be zero: that proves destruction releases everything.
// `fail_next(request_nr, errno)` makes the next call of that request fail (fault injection);
// `after_ioctl` may rewrite a successful ioctl's output (e.g. narrower apertures).
#pragma once

#include <aqueduct/abi/kfd_ioctl.hpp>
#include <aqueduct/kfd/device_file.hpp>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>

template <class F>
class counting_device {
 public:
  explicit counting_device(F& inner) noexcept : inner_(&inner) {}

  struct counts {
    std::int64_t bos = 0, gpu_maps = 0, queues = 0, events = 0, mapped_bytes = 0, render_nodes = 0;
    std::map<unsigned, std::int64_t> calls;  // by ioctl nr, successful or not
  };
  [[nodiscard]] const counts& live() const noexcept { return *c_; }
  [[nodiscard]] std::shared_ptr<counts> shared_counts() const noexcept { return c_; }
  void fail_next(unsigned nr, int err) noexcept { fail_nr_ = nr, fail_errno_ = err; }
  std::function<void(unsigned nr, void* arg)> after_ioctl;

  int ioctl(unsigned long request, void* arg) noexcept {
    namespace k = aqueduct::abi::kfd;
    const unsigned nr = k::ioc_nr(request);
    ++c_->calls[nr];
    if (fail_nr_ == nr) {
      fail_nr_ = 0;
      return -fail_errno_;
    }
    const int r = inner_->ioctl(request, arg);
    if (r != 0) return r;
    if (after_ioctl) after_ioctl(nr, arg);
    switch (nr) {
      case 0x16: ++c_->bos; break;        // ALLOC_MEMORY_OF_GPU
      case 0x17: --c_->bos; break;        // FREE_MEMORY_OF_GPU
      case 0x18: ++c_->gpu_maps; break;   // MAP_MEMORY_TO_GPU
      case 0x19: --c_->gpu_maps; break;   // UNMAP_MEMORY_FROM_GPU
      case 0x02: ++c_->queues; break;     // CREATE_QUEUE
      case 0x03: --c_->queues; break;     // DESTROY_QUEUE
      case 0x08: ++c_->events; break;     // CREATE_EVENT
      case 0x09: --c_->events; break;     // DESTROY_EVENT
      default: break;
    }
    return 0;
  }
  aqueduct::kfd::mapping mmap(void* addr, std::size_t length, int prot, int flags, int fd,
                              std::uint64_t offset) noexcept {
    auto m = inner_->mmap(addr, length, prot, flags, fd, offset);
    if (m && !(flags & aqueduct::kfd::map_fixed)) c_->mapped_bytes += static_cast<std::int64_t>(length);
    return m;
  }
  int munmap(void* addr, std::size_t length) noexcept {
    const int r = inner_->munmap(addr, length);
    if (r == 0) c_->mapped_bytes -= static_cast<std::int64_t>(length);
    return r;
  }
  int open_render_node(std::uint32_t minor) noexcept {
    const int fd = inner_->open_render_node(minor);
    if (fd >= 0) ++c_->render_nodes;
    return fd;
  }
  int close_render_node(int fd) noexcept {
    const int r = inner_->close_render_node(fd);
    if (r == 0) --c_->render_nodes;
    return r;
  }
  [[nodiscard]] int kfd_fd() const noexcept { return inner_->kfd_fd(); }
  [[nodiscard]] const std::filesystem::path& sysfs_root() const noexcept { return inner_->sysfs_root(); }

 private:
  F* inner_;
  std::shared_ptr<counts> c_ = std::make_shared<counts>();
  unsigned fail_nr_ = 0;
  int fail_errno_ = 0;
};
