// aqueduct/runtime/memory.hpp — typed GPU memory: `buffer<T>` (owning) and `buffer_ref<T>`.
//
// Layer: runtime. A buffer is one kfd::buffer (reserve VA → ALLOC_MEMORY_OF_GPU → CPU mapping →
// MAP_MEMORY_TO_GPU, huge-page aligned from 2 MiB) of `count` elements of T on one agent, in one
// of three kinds:
//   - memory_kind::host         system memory (GTT), coherent, mapped for the host and the GPU:
//                               the host writes inputs and reads results in place;
//   - memory_kind::device       VRAM, GPU only (no host pointer on /dev/kfd) — agent::alloc's
//                               default, as hipMalloc's;
//   - memory_kind::device_host_visible  VRAM through the large BAR, host-mapped.
// In a kernel's argument list a buffer becomes its GPU address (runtime/queue.hpp).
// Every buffer carries a liveness record with a generation (runtime/detail/buffer_life.hpp),
// retired when its memory is freed: an exec graph checks the records of the buffers it uses
// before each replay, so a replay never reads a freed buffer (graph/detail/liveness.hpp).
// Thread safety: a buffer is a value; its memory may be shared with the device as usual. A
// buffer keeps its system's state alive (it may outlive the `system` value).
#pragma once

#include <aqueduct/core/assert.hpp>
#include <aqueduct/core/units.hpp>
#include <aqueduct/kfd/memory.hpp>
#include <aqueduct/runtime/any_device.hpp>
#include <aqueduct/runtime/detail/buffer_life.hpp>

#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>
#include <memory>
#include <utility>

namespace aqueduct::runtime {

enum class memory_kind : std::uint8_t { host, device, device_host_visible };

[[nodiscard]] constexpr kfd::memory_use to_memory_use(memory_kind k) noexcept {
  switch (k) {
    case memory_kind::host: return kfd::memory_use::host;
    case memory_kind::device: return kfd::memory_use::device;
    case memory_kind::device_host_visible: return kfd::memory_use::device_host_visible;
  }
  return kfd::memory_use::host;
}
[[nodiscard]] constexpr const char* to_string(memory_kind k) noexcept {
  switch (k) {
    case memory_kind::host: return "host";
    case memory_kind::device: return "device";
    case memory_kind::device_host_visible: return "device_host_visible";
  }
  return "?";
}

// A non-owning view: what a kernel argument or a copy needs.
template <class T>
struct buffer_ref {
  gpu_va va{};
  T* host = nullptr;  // null when the host has no mapping
  std::size_t count = 0;
  [[nodiscard]] std::uint64_t address() const noexcept { return va.value; }
  [[nodiscard]] std::size_t size() const noexcept { return count; }
};

template <class T>
class buffer {
  static_assert(std::is_trivially_copyable_v<T>, "GPU buffers hold trivially copyable elements");

 public:
  using value_type = T;
  buffer() = default;
  // `keep` keeps the system that allocated it alive (the BO is freed through its driver).
  buffer(kfd::buffer<any_device_file> bo, std::size_t count, memory_kind kind, std::shared_ptr<const void> keep = {}) noexcept
      : keep_(std::move(keep)), bo_(std::move(bo)), count_(count), kind_(kind),
        life_(bo_ ? detail::buffer_table::instance().add(bo_.va().value, bo_.size().value) : nullptr) {}
  buffer(buffer&&) noexcept = default;
  buffer& operator=(buffer&& o) noexcept {
    if (this != &o) {
      detail::buffer_table::instance().retire(life_);
      bo_ = std::move(o.bo_);  // frees ours first, while our system is still held
      count_ = std::exchange(o.count_, 0);
      kind_ = o.kind_;
      keep_ = std::move(o.keep_);
      life_ = std::move(o.life_);
    }
    return *this;
  }
  ~buffer() { detail::buffer_table::instance().retire(life_); }  // before the BO is freed

  [[nodiscard]] std::size_t size() const noexcept { return count_; }
  [[nodiscard]] std::size_t size_bytes() const noexcept { return count_ * sizeof(T); }
  [[nodiscard]] memory_kind kind() const noexcept { return kind_; }
  [[nodiscard]] gpu_va va() const noexcept { return bo_.va(); }
  [[nodiscard]] std::uint64_t address() const noexcept { return bo_.va().value; }
  // Host pointer, or null for device memory the host cannot see.
  [[nodiscard]] T* data() const noexcept { return static_cast<T*>(bo_.host()); }
  [[nodiscard]] bool host_visible() const noexcept { return bo_.host() != nullptr; }
  // The elements, for the host. Precondition: host_visible().
  [[nodiscard]] std::span<T> host_span() const noexcept {
    AQUEDUCT_ASSERT(host_visible(), "buffer has no host mapping (memory_kind::device)");
    return {data(), count_};
  }
  [[nodiscard]] T& operator[](std::size_t i) const noexcept {
    AQUEDUCT_ASSERT(host_visible() && i < count_, "buffer index out of range or not host-visible");
    return data()[i];
  }
  [[nodiscard]] buffer_ref<T> ref() const noexcept { return {va(), data(), count_}; }
  [[nodiscard]] const kfd::buffer<any_device_file>& bo() const noexcept { return bo_; }
  [[nodiscard]] explicit operator bool() const noexcept { return static_cast<bool>(bo_); }
  // The liveness record (generation, live) exec graphs check (null for an empty buffer).
  [[nodiscard]] const std::shared_ptr<detail::buffer_life>& life() const noexcept { return life_; }
  void reset() noexcept {
    detail::buffer_table::instance().retire(life_);
    life_.reset();
    bo_.reset();
    count_ = 0;
    keep_.reset();
  }

 private:
  std::shared_ptr<const void> keep_;  // declared first: released after the BO
  kfd::buffer<any_device_file> bo_;
  std::size_t count_ = 0;
  memory_kind kind_ = memory_kind::host;
  std::shared_ptr<detail::buffer_life> life_;
};

}  // namespace aqueduct::runtime
