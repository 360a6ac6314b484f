// tests/support/counting_device.hpp — a kfd::device_file wrapper that counts what is taken and
// released, for the kfd, emu and runtime tests (one copy; it replaced tests/kfd/counting_device.hpp
// and tests/runtime/counting_file.hpp).
//
// Wraps another device file by reference (so a non-movable emu::device can stay in the test) and
// counts, in a `device_counts` shared with the test (it outlives a wrapper moved into a system):
// every call (`total_calls`: ioctl, mmap, munmap, render-node calls), each ioctl by number
// (`calls[nr]`, successful or not), and the live BOs, GPU mappings, queues, events, mmapped bytes
// and open render nodes from the calls that SUCCEEDED. After every resource is destroyed, all
// live counts must be zero: that proves destruction releases everything. Counters are atomics:
// runtime queues and waits call the file from several threads.
// `fail_next(request_nr, errno)` makes the next call of that request fail (fault injection);
// `after_ioctl` may rewrite a successful ioctl's output (e.g. narrower apertures).
#pragma once

#include <aqueduct/abi/kfd_ioctl.hpp>
#include <aqueduct/kfd/device_file.hpp>

#include <array>
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>

struct device_counts {
  std::atomic<std::int64_t> total_calls{0};
  std::array<std::atomic<std::int64_t>, 256> calls{};  // ioctls by nr
  std::atomic<std::int64_t> bos{0}, gpu_maps{0}, queues{0}, events{0}, mapped_bytes{0}, render_nodes{0};
};

template <class F>
class counting_device {
 public:
  explicit counting_device(F& inner) : inner_(&inner), c_(std::make_shared<device_counts>()) {}
  counting_device(F& inner, std::shared_ptr<device_counts> counts) noexcept : inner_(&inner), c_(std::move(counts)) {}

  using counts = device_counts;
  [[nodiscard]] const device_counts& live() const noexcept { return *c_; }
  [[nodiscard]] std::shared_ptr<device_counts> shared_counts() const noexcept { return c_; }
  void fail_next(unsigned nr, int err) noexcept { fail_nr_ = nr, fail_errno_ = err; }
  std::function<void(unsigned nr, void* arg)> after_ioctl;

  int ioctl(unsigned long request, void* arg) noexcept {
    namespace k = aqueduct::abi::kfd;
    const unsigned nr = k::ioc_nr(request);
    ++c_->total_calls;
    ++c_->calls[nr & 0xFF];
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
    ++c_->total_calls;
    auto m = inner_->mmap(addr, length, prot, flags, fd, offset);
    if (m && !(flags & aqueduct::kfd::map_fixed)) c_->mapped_bytes += static_cast<std::int64_t>(length);
    return m;
  }
  int munmap(void* addr, std::size_t length) noexcept {
    ++c_->total_calls;
    const int r = inner_->munmap(addr, length);
    if (r == 0) c_->mapped_bytes -= static_cast<std::int64_t>(length);
    return r;
  }
  int open_render_node(std::uint32_t minor) noexcept {
    ++c_->total_calls;
    const int fd = inner_->open_render_node(minor);
    if (fd >= 0) ++c_->render_nodes;
    return fd;
  }
  int close_render_node(int fd) noexcept {
    ++c_->total_calls;
    const int r = inner_->close_render_node(fd);
    if (r == 0) --c_->render_nodes;
    return r;
  }
  [[nodiscard]] int kfd_fd() const noexcept { return inner_->kfd_fd(); }
  [[nodiscard]] const std::filesystem::path& sysfs_root() const noexcept { return inner_->sysfs_root(); }
  // The device's queue port (the doorbell hook), when the wrapped model has one: resolved once per
  // queue at creation, not counted as a call.
  aqueduct::queue_port* queue_port(std::uint32_t queue_id) noexcept { return aqueduct::kfd::queue_port_of(*inner_, queue_id); }

 private:
  F* inner_;
  std::shared_ptr<device_counts> c_;
  unsigned fail_nr_ = 0;
  int fail_errno_ = 0;
};
