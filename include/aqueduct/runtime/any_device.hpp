// aqueduct/runtime/any_device.hpp — `any_device_file`: the one place where the real KFD
// (kfd::linux_device) and the emulated one (emu::device) are type-erased.
//
// Layer: runtime. `system` decides at run time which device file it drives; everything below it
// (kfd::driver, buffers, queue resources, events) is a template over kfd::device_file and is
// instantiated once, on this type. The erasure costs one indirect call per ioctl/mmap/munmap —
// none of which are on the dispatch path (reserve → write → publish → doorbell touches memory
// only). Any model of kfd::device_file can be wrapped (tests wrap a counting device around the
// emulator to prove the dispatch path makes no device call).
// Thread safety: as the wrapped model (both real models allow calls from any thread).
#pragma once

#include <aqueduct/core/assert.hpp>
#include <aqueduct/kfd/device_file.hpp>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <utility>

namespace aqueduct::runtime {

class any_device_file {
 public:
  any_device_file() = default;
  template <kfd::device_file F>
    requires(!std::is_same_v<std::remove_cvref_t<F>, any_device_file>)
  explicit any_device_file(F file) : p_(std::make_unique<model<F>>(std::move(file))) {}

  any_device_file(any_device_file&&) noexcept = default;
  any_device_file& operator=(any_device_file&&) noexcept = default;

  // kfd::device_file
  int ioctl(unsigned long request, void* arg) noexcept { return p_->ioctl(request, arg); }
  kfd::mapping mmap(void* addr, std::size_t length, int prot, int flags, int fd, std::uint64_t offset) noexcept {
    return p_->mmap(addr, length, prot, flags, fd, offset);
  }
  int munmap(void* addr, std::size_t length) noexcept { return p_->munmap(addr, length); }
  int open_render_node(std::uint32_t minor) noexcept { return p_->open_render_node(minor); }
  int close_render_node(int fd) noexcept { return p_->close_render_node(fd); }
  [[nodiscard]] int kfd_fd() const noexcept { return p_->kfd_fd(); }
  [[nodiscard]] const std::filesystem::path& sysfs_root() const noexcept { return p_->sysfs_root(); }
  // The optional hook (kfd/device_file.hpp): nullptr when the wrapped model has none.
  [[nodiscard]] ::aqueduct::queue_port* queue_port(std::uint32_t queue_id) noexcept { return p_->queue_port(queue_id); }

  [[nodiscard]] explicit operator bool() const noexcept { return p_ != nullptr; }
  // The wrapped model, when it is exactly F (nullptr otherwise).
  template <class F>
  [[nodiscard]] F* target() noexcept {
    auto* m = dynamic_cast<model<F>*>(p_.get());
    return m ? &m->file : nullptr;
  }

 private:
  struct concept_ {
    virtual ~concept_() = default;
    virtual int ioctl(unsigned long, void*) noexcept = 0;
    virtual kfd::mapping mmap(void*, std::size_t, int, int, int, std::uint64_t) noexcept = 0;
    virtual int munmap(void*, std::size_t) noexcept = 0;
    virtual int open_render_node(std::uint32_t) noexcept = 0;
    virtual int close_render_node(int) noexcept = 0;
    [[nodiscard]] virtual int kfd_fd() const noexcept = 0;
    [[nodiscard]] virtual const std::filesystem::path& sysfs_root() const noexcept = 0;
    [[nodiscard]] virtual ::aqueduct::queue_port* queue_port(std::uint32_t) noexcept = 0;
  };
  template <class F>
  struct model final : concept_ {
    explicit model(F f) : file(std::move(f)) {}
    int ioctl(unsigned long r, void* a) noexcept override { return file.ioctl(r, a); }
    kfd::mapping mmap(void* a, std::size_t l, int p, int f, int fd, std::uint64_t o) noexcept override {
      return file.mmap(a, l, p, f, fd, o);
    }
    int munmap(void* a, std::size_t l) noexcept override { return file.munmap(a, l); }
    int open_render_node(std::uint32_t m) noexcept override { return file.open_render_node(m); }
    int close_render_node(int fd) noexcept override { return file.close_render_node(fd); }
    [[nodiscard]] int kfd_fd() const noexcept override { return file.kfd_fd(); }
    [[nodiscard]] const std::filesystem::path& sysfs_root() const noexcept override { return file.sysfs_root(); }
    [[nodiscard]] ::aqueduct::queue_port* queue_port(std::uint32_t q) noexcept override {
      return kfd::queue_port_of(file, q);
    }
    F file;
  };
  std::unique_ptr<concept_> p_;
};

static_assert(kfd::device_file<any_device_file>);
static_assert(kfd::has_queue_port<any_device_file>);

}  // namespace aqueduct::runtime
