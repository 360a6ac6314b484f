// tests/runtime/counting_file.hpp — a kfd::device_file around an emu::device (by pointer: the
// device stays with the test) that counts every call, and the resources taken minus released
// by the calls that succeeded: BOs, GPU mappings, queues, events, render nodes.
#pragma once

#include <aqueduct/abi/kfd_ioctl.hpp>
#include <aqueduct/emu/device.hpp>
#include <aqueduct/kfd/device_file.hpp>

#include <atomic>
#include <cstdint>
#include <filesystem>

namespace rt_test {

struct file_counts {
  std::atomic<std::int64_t> calls{0};  // every ioctl, mmap, munmap, render-node call
  std::atomic<std::int64_t> bos{0}, gpu_maps{0}, queues{0}, events{0}, render_nodes{0};
};

class counting_file {
 public:
  counting_file(aqueduct::emu::device& d, file_counts& c) noexcept : d_(&d), c_(&c) {}
  int ioctl(unsigned long request, void* arg) noexcept {
    ++c_->calls;
    const int r = d_->ioctl(request, arg);
    if (r != 0) return r;
    switch (aqueduct::abi::kfd::ioc_nr(request)) {
      case 0x16: ++c_->bos; break;       // ALLOC_MEMORY_OF_GPU
      case 0x17: --c_->bos; break;       // FREE_MEMORY_OF_GPU
      case 0x18: ++c_->gpu_maps; break;  // MAP_MEMORY_TO_GPU
      case 0x19: --c_->gpu_maps; break;  // UNMAP_MEMORY_FROM_GPU
      case 0x02: ++c_->queues; break;    // CREATE_QUEUE
      case 0x03: --c_->queues; break;    // DESTROY_QUEUE
      case 0x08: ++c_->events; break;    // CREATE_EVENT
      case 0x09: --c_->events; break;    // DESTROY_EVENT
      default: break;
    }
    return 0;
  }
  aqueduct::mapping mmap(void* a, std::size_t l, int p, int f, int fd, std::uint64_t o) noexcept {
    ++c_->calls;
    return d_->mmap(a, l, p, f, fd, o);
  }
  int munmap(void* a, std::size_t l) noexcept {
    ++c_->calls;
    return d_->munmap(a, l);
  }
  int open_render_node(std::uint32_t m) noexcept {
    ++c_->calls;
    const int fd = d_->open_render_node(m);
    if (fd >= 0) ++c_->render_nodes;
    return fd;
  }
  int close_render_node(int fd) noexcept {
    ++c_->calls;
    const int r = d_->close_render_node(fd);
    if (r == 0) --c_->render_nodes;
    return r;
  }
  [[nodiscard]] int kfd_fd() const noexcept { return d_->kfd_fd(); }
  [[nodiscard]] const std::filesystem::path& sysfs_root() const noexcept { return d_->sysfs_root(); }

 private:
  aqueduct::emu::device* d_;
  file_counts* c_;
};
static_assert(aqueduct::kfd::device_file<counting_file>);

}  // namespace rt_test
