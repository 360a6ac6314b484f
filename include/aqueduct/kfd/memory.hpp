// aqueduct/kfd/memory.hpp — GPU memory through the KFD: buffers, flags per use, sub-allocation.
//
// Layer: kfd. `buffer<F>` owns one buffer object made with the libhsakmt protocol
// (spec/kfd.md §5.2): reserve a VA range with an anonymous PROT_NONE mapping (2 MiB aligned for
// allocations of 2 MiB or more, DESIGN.md requirement 4), ALLOC_MEMORY_OF_GPU at that va_addr,
// mmap the render node (the kfd fd for DOORBELL) at the returned mmap_offset when the host needs
// access, MAP_MEMORY_TO_GPU. Destruction undoes it in reverse: UNMAP_MEMORY_FROM_GPU, munmap,
// FREE_MEMORY_OF_GPU. `buffer_ref` is the non-owning view. `vram_pool<F>` sub-allocates small
// device allocations from 2 MiB blocks with `range_allocator` (first fit, coalescing frees).
//
// Thread safety: a buffer is a value owned by one thread; vram_pool is not synchronized.
#pragma once

#include <aqueduct/abi/kfd_ioctl.hpp>
#include <aqueduct/core/assert.hpp>
#include <aqueduct/core/result.hpp>
#include <aqueduct/core/units.hpp>
#include <aqueduct/kfd/driver.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace aqueduct::kfd {

// What memory is for; decides domain and flags (memory_flags below).
enum class memory_use {
  device,              // VRAM, GPU only (kernels' data)
  device_host_visible, // VRAM | PUBLIC, CPU-mapped (needs a large BAR)
  host,                // GTT, coherent, CPU-mapped (staging, kernargs)
  code,                // VRAM | PUBLIC | EXECUTABLE, CPU-mapped so the loader can write it
  queue,               // GTT, uncached + coherent: rings, rptr/wptr pages, signals (CPU and CP share)
  eop,                 // VRAM, GPU only: the CP's end-of-pipe buffer
  cwsr,                // GTT, coherent, CPU-mapped: the context save area (header written by host)
  event_page,          // GTT, uncached + coherent: the 32 KiB signal event page (spec §5.3)
  doorbell,            // DOORBELL: the process doorbell slice, mmapped on the kfd fd (spec §3.2)
};

constexpr const char* to_string(memory_use u) noexcept {
  switch (u) {
    case memory_use::device: return "device";
    case memory_use::device_host_visible: return "device_host_visible";
    case memory_use::host: return "host";
    case memory_use::code: return "code";
    case memory_use::queue: return "queue";
    case memory_use::eop: return "eop";
    case memory_use::cwsr: return "cwsr";
    case memory_use::event_page: return "event_page";
    case memory_use::doorbell: return "doorbell";
  }
  return "?";
}

// ALLOC_MEMORY_OF_GPU flags per use. Like libhsakmt, every allocation is WRITABLE, EXECUTABLE and
// NO_SUBSTITUTE (spec/kfd.md §5.2); COHERENT for memory the host and the GPU share; UNCACHED where
// the CP polls what the host writes (queues, signals, events). AQL_QUEUE_MEM is only for the
// gfx7/8 double-mapped ring, which aqueduct does not drive.
constexpr std::uint32_t memory_flags(memory_use u) noexcept {
  namespace k = abi::kfd;
  constexpr std::uint32_t base = k::alloc_mem_flags_writable | k::alloc_mem_flags_executable |
                                 k::alloc_mem_flags_no_substitute;
  switch (u) {
    case memory_use::device: return k::alloc_mem_flags_vram | base;
    case memory_use::device_host_visible: return k::alloc_mem_flags_vram | k::alloc_mem_flags_public | base;
    case memory_use::host: return k::alloc_mem_flags_gtt | k::alloc_mem_flags_coherent | base;
    case memory_use::code: return k::alloc_mem_flags_vram | k::alloc_mem_flags_public | base;
    case memory_use::queue:
      return k::alloc_mem_flags_gtt | k::alloc_mem_flags_coherent | k::alloc_mem_flags_uncached | base;
    case memory_use::eop: return k::alloc_mem_flags_vram | base;
    case memory_use::cwsr: return k::alloc_mem_flags_gtt | k::alloc_mem_flags_coherent | base;
    case memory_use::event_page:
      return k::alloc_mem_flags_gtt | k::alloc_mem_flags_coherent | k::alloc_mem_flags_uncached | base;
    case memory_use::doorbell: return k::alloc_mem_flags_doorbell | k::alloc_mem_flags_writable |
                                      k::alloc_mem_flags_no_substitute;
  }
  return 0;
}
// Whether the host gets a CPU mapping of memory of this use.
constexpr bool host_mapped(memory_use u) noexcept {
  return u != memory_use::device && u != memory_use::eop;
}

// A non-owning view of GPU memory: what packets and queue descriptors need.
struct buffer_ref {
  gpu_va va{};
  void* host = nullptr;  // CPU address; null when not host-mapped
  byte_count size{};
  std::uint32_t gpu_id = 0;
  std::uint64_t handle = 0;  // KFD BO handle (of the whole block for sub-allocations)
  [[nodiscard]] explicit operator bool() const noexcept { return size.value != 0; }
  template <class T>
  [[nodiscard]] T* as() const noexcept { return static_cast<T*>(host); }
};

// One BO: reserved VA, allocated, optionally CPU-mapped, mapped to the GPU.
template <device_file F>
class buffer {
 public:
  buffer() = default;
  buffer(buffer&& o) noexcept { swap(o); }
  buffer& operator=(buffer&& o) noexcept {
    if (this != &o) {
      reset();
      swap(o);
    }
    return *this;
  }
  buffer(const buffer&) = delete;
  buffer& operator=(const buffer&) = delete;
  ~buffer() { reset(); }

  // Allocates `size` bytes (rounded up to pages) of `use` memory on `gpu` (whose VM must have been
  // acquired). Each failing step is reported with its ioctl / mmap and errno.
  [[nodiscard]] static result<buffer> try_allocate(driver_ref<F> d, const node& gpu, byte_count size, memory_use use) {
    AQUEDUCT_ASSERT(size.value > 0, "buffer size must be > 0");
    namespace k = abi::kfd;
    buffer b;
    b.d_ = d;
    b.gpu_id_ = gpu.gpu_id;
    b.use_ = use;
    b.size_ = align_up(size.value, page_size);
    const std::uint64_t align = b.size_ >= huge_page_size ? huge_page_size : page_size;
    // 1. reserve VA (over-reserve by the alignment, trim both ends)
    const std::uint64_t span = b.size_ + (align > page_size ? align : 0);
    auto res = d.file().mmap(nullptr, span, prot_none, map_private | map_anonymous | map_noreserve, -1, 0);
    if (!res) return mmap_failure("reserving " + std::to_string(span) + " bytes of VA", res.error);
    const auto base = reinterpret_cast<std::uint64_t>(res.addr);
    const std::uint64_t start = align_up(base, align);
    if (start > base) (void)d.file().munmap(res.addr, start - base);
    if (base + span > start + b.size_)
      (void)d.file().munmap(reinterpret_cast<void*>(start + b.size_), base + span - (start + b.size_));
    b.va_ = start;
    b.reserved_ = true;
    // 2. allocate the BO at that VA
    k::alloc_memory_of_gpu_args a{};
    a.va_addr = start;
    a.size = b.size_;
    a.gpu_id = gpu.gpu_id;
    a.flags = memory_flags(use);
    AQUEDUCT_TRY_VOID(d.try_ioctl(k::amdkfd_ioc_alloc_memory_of_gpu, &a, b.context()));
    b.handle_ = a.handle;
    b.allocated_ = true;
    // 3. CPU mapping (render node for VRAM/GTT, kfd fd for the doorbell slice)
    if (host_mapped(use)) {
      const int fd = use == memory_use::doorbell ? d.file().kfd_fd() : d.render_fd(gpu.gpu_id);
      if (fd < 0 && use != memory_use::doorbell)
        return failure(errc::invalid_argument, "gpu_id " + std::to_string(gpu.gpu_id) +
                                                   ": ACQUIRE_VM first (driver_ref::try_acquire_vm)");
      // The doorbell slice is mapped at KFD_MMAP_TYPE_DOORBELL | gpu_id << 46, the offset every
      // CREATE_QUEUE of this GPU returns (masked), as libhsakmt's map_doorbell_dgpu does (spec §3.2).
      b.mmap_offset_ = use == memory_use::doorbell ? k::make_mmap_offset(k::mmap_type_doorbell, gpu.gpu_id)
                                                   : a.mmap_offset;
      auto m = d.file().mmap(reinterpret_cast<void*>(start), b.size_, prot_read | prot_write, map_shared | map_fixed,
                             fd, b.mmap_offset_);
      if (!m) return mmap_failure("CPU mapping of " + b.context(), m.error);
      b.host_ = m.addr;
    }
    // 4. GPU mapping
    std::uint32_t ids[1] = {gpu.gpu_id};
    k::map_memory_to_gpu_args map{};
    map.handle = b.handle_;
    map.device_ids_array_ptr = reinterpret_cast<std::uint64_t>(ids);
    map.n_devices = 1;
    AQUEDUCT_TRY_VOID(d.try_ioctl(k::amdkfd_ioc_map_memory_to_gpu, &map, b.context()));
    if (map.n_success != 1)
      return failure(errc::ioctl_failed, "AMDKFD_IOC_MAP_MEMORY_TO_GPU mapped " + std::to_string(map.n_success) +
                                             " of 1 devices [" + b.context() + "]");
    b.gpu_mapped_ = true;
    return b;
  }

  [[nodiscard]] buffer_ref ref() const noexcept { return {gpu_va(va_), host_, byte_count(size_), gpu_id_, handle_}; }
  [[nodiscard]] gpu_va va() const noexcept { return gpu_va(va_); }
  [[nodiscard]] void* host() const noexcept { return host_; }
  [[nodiscard]] byte_count size() const noexcept { return byte_count(size_); }
  [[nodiscard]] std::uint64_t handle() const noexcept { return handle_; }
  [[nodiscard]] std::uint32_t gpu_id() const noexcept { return gpu_id_; }
  // The offset of the CPU mapping (render node or kfd fd); 0 when not host-mapped.
  [[nodiscard]] std::uint64_t mmap_offset() const noexcept { return mmap_offset_; }
  [[nodiscard]] memory_use use() const noexcept { return use_; }
  [[nodiscard]] explicit operator bool() const noexcept { return reserved_; }

  // Gives the BO to the kernel for good: drops the CPU mapping and forgets the handle without
  // UNMAP/FREE. For the signal event page, which the kernel refuses to free (-EPERM, spec §5.2)
  // and releases itself when the KFD file is closed.
  void detach_to_kernel() noexcept {
    if (reserved_) (void)d_.file().munmap(reinterpret_cast<void*>(va_), size_);
    reserved_ = allocated_ = gpu_mapped_ = false;
    host_ = nullptr;
  }

  // Releases everything in reverse order. Errors are ignored: a destructor cannot report them
  // (try_release reports them).
  void reset() noexcept { (void)try_release(); }
  [[nodiscard]] result<void> try_release() noexcept {
    namespace k = abi::kfd;
    result<void> first = ok();
    auto keep = [&](result<void> r) {
      if (!r && first) first = std::move(r);
    };
    if (gpu_mapped_) {
      std::uint32_t ids[1] = {gpu_id_};
      k::unmap_memory_from_gpu_args u{};
      u.handle = handle_;
      u.device_ids_array_ptr = reinterpret_cast<std::uint64_t>(ids);
      u.n_devices = 1;
      keep(d_.try_ioctl(k::amdkfd_ioc_unmap_memory_from_gpu, &u));
      gpu_mapped_ = false;
    }
    if (reserved_) {  // drops the CPU mapping and the VA reservation together
      if (int r = d_.file().munmap(reinterpret_cast<void*>(va_), size_); r != 0)
        keep(mmap_failure("munmap", -r));
      reserved_ = false;
      host_ = nullptr;
    }
    if (allocated_) {
      k::free_memory_of_gpu_args f{handle_};
      keep(d_.try_ioctl(k::amdkfd_ioc_free_memory_of_gpu, &f));
      allocated_ = false;
    }
    return first;
  }

 private:
  static failure mmap_failure(const std::string& what, int e) {
    return failure(errc::mmap_failed, what + " failed: " + describe_errno(e));
  }
  std::string context() const {
    return std::string(to_string(use_)) + " buffer of " + std::to_string(size_) + " bytes on gpu_id " +
           std::to_string(gpu_id_);
  }
  void swap(buffer& o) noexcept {
    std::swap(d_, o.d_);
    std::swap(va_, o.va_);
    std::swap(size_, o.size_);
    std::swap(host_, o.host_);
    std::swap(handle_, o.handle_);
    std::swap(mmap_offset_, o.mmap_offset_);
    std::swap(gpu_id_, o.gpu_id_);
    std::swap(use_, o.use_);
    std::swap(reserved_, o.reserved_);
    std::swap(allocated_, o.allocated_);
    std::swap(gpu_mapped_, o.gpu_mapped_);
  }

  driver_ref<F> d_{};
  std::uint64_t va_ = 0, size_ = 0;
  void* host_ = nullptr;
  std::uint64_t handle_ = 0, mmap_offset_ = 0;
  std::uint32_t gpu_id_ = 0;
  memory_use use_ = memory_use::device;
  bool reserved_ = false, allocated_ = false, gpu_mapped_ = false;
};

// First-fit range allocator over [0, capacity) with coalescing frees. Offsets are aligned to
// `align` (a power of two). Used to carve small allocations out of one 2 MiB block.
class range_allocator {
 public:
  explicit range_allocator(std::uint64_t capacity = 0) : capacity_(capacity) {
    if (capacity) free_.emplace(0, capacity);
  }
  [[nodiscard]] std::optional<std::uint64_t> allocate(std::uint64_t size, std::uint64_t align) {
    AQUEDUCT_ASSERT(size > 0 && is_pow2(align), "size > 0, power-of-two alignment");
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      const std::uint64_t off = align_up(it->first, align);
      const std::uint64_t end = it->first + it->second;
      if (off + size > end) continue;
      const std::uint64_t lo = it->first;
      free_.erase(it);
      if (off > lo) free_.emplace(lo, off - lo);
      if (end > off + size) free_.emplace(off + size, end - (off + size));
      used_ += size;
      return off;
    }
    return std::nullopt;
  }
  void free(std::uint64_t off, std::uint64_t size) {
    AQUEDUCT_ASSERT(off + size <= capacity_, "free outside the range");
    auto next = free_.lower_bound(off);
    AQUEDUCT_ASSERT(next == free_.end() || off + size <= next->first, "double free / overlap");
    std::uint64_t lo = off, len = size;
    if (next != free_.begin()) {
      auto prev = std::prev(next);
      AQUEDUCT_ASSERT(prev->first + prev->second <= off, "double free / overlap");
      if (prev->first + prev->second == off) {
        lo = prev->first;
        len += prev->second;
        free_.erase(prev);
      }
    }
    if (next != free_.end() && next->first == off + size) {
      len += next->second;
      free_.erase(next);
    }
    free_.emplace(lo, len);
    used_ -= size;
  }
  [[nodiscard]] std::uint64_t capacity() const noexcept { return capacity_; }
  [[nodiscard]] std::uint64_t used() const noexcept { return used_; }
  [[nodiscard]] bool empty() const noexcept { return used_ == 0; }
  [[nodiscard]] std::size_t fragments() const noexcept { return free_.size(); }

 private:
  std::uint64_t capacity_ = 0, used_ = 0;
  std::map<std::uint64_t, std::uint64_t> free_;  // offset -> length
};

template <device_file F>
class vram_pool;

// A piece of a pooled block; returns its range to the pool on destruction. Move-only.
template <device_file F>
class pooled_buffer {
 public:
  pooled_buffer() = default;
  pooled_buffer(pooled_buffer&& o) noexcept
      : pool_(std::exchange(o.pool_, nullptr)), block_(o.block_), offset_(o.offset_), ref_(std::exchange(o.ref_, {})) {}
  pooled_buffer& operator=(pooled_buffer&& o) noexcept {
    if (this != &o) {
      reset();
      pool_ = std::exchange(o.pool_, nullptr);
      block_ = o.block_;
      offset_ = o.offset_;
      ref_ = std::exchange(o.ref_, {});
    }
    return *this;
  }
  pooled_buffer(const pooled_buffer&) = delete;
  pooled_buffer& operator=(const pooled_buffer&) = delete;
  ~pooled_buffer() { reset(); }

  [[nodiscard]] buffer_ref ref() const noexcept { return ref_; }
  [[nodiscard]] gpu_va va() const noexcept { return ref_.va; }
  [[nodiscard]] byte_count size() const noexcept { return ref_.size; }
  [[nodiscard]] explicit operator bool() const noexcept { return pool_ != nullptr; }
  void reset() noexcept;

 private:
  friend class vram_pool<F>;
  vram_pool<F>* pool_ = nullptr;
  std::size_t block_ = 0;
  std::uint64_t offset_ = 0;
  buffer_ref ref_{};
};

// Sub-allocates allocations of at most `max_suballocation` bytes from blocks of `block_size`
// (2 MiB: one huge page) of one memory use on one GPU. Blocks stay allocated until the pool is
// destroyed. Every pooled_buffer must be destroyed before its pool (asserted).
template <device_file F>
class vram_pool {
 public:
  static constexpr std::uint64_t block_size = huge_page_size;
  static constexpr std::uint64_t max_suballocation = 256u << 10;  // bigger requests get their own BO
  static constexpr std::uint64_t min_alignment = 256;             // MQD / ring base granularity

  vram_pool(driver_ref<F> d, const node& gpu, memory_use use = memory_use::device) : d_(d), gpu_(&gpu), use_(use) {}
  vram_pool(const vram_pool&) = delete;
  vram_pool& operator=(const vram_pool&) = delete;
  ~vram_pool() {
    for ([[maybe_unused]] auto& b : blocks_) AQUEDUCT_ASSERT(b.ranges.empty(), "pooled_buffer outlived its vram_pool");
  }

  [[nodiscard]] result<pooled_buffer<F>> try_allocate(byte_count size, std::uint64_t align = min_alignment) {
    AQUEDUCT_ASSERT(size.value > 0 && size.value <= max_suballocation, "size in (0, max_suballocation]");
    const std::uint64_t sz = align_up(size.value, min_alignment);
    align = align < min_alignment ? min_alignment : align;
    for (std::size_t i = 0; i < blocks_.size(); ++i)
      if (auto off = blocks_[i].ranges.allocate(sz, align)) return make(i, *off, sz);
    AQUEDUCT_TRY(auto b, buffer<F>::try_allocate(d_, *gpu_, byte_count(block_size), use_));
    blocks_.push_back(block{std::move(b), range_allocator(block_size)});
    auto off = blocks_.back().ranges.allocate(sz, align);
    AQUEDUCT_ASSERT(off.has_value(), "a fresh block fits any sub-allocation");
    return make(blocks_.size() - 1, *off, sz);
  }

  [[nodiscard]] std::size_t block_count() const noexcept { return blocks_.size(); }
  [[nodiscard]] std::uint64_t bytes_in_use() const noexcept {
    std::uint64_t s = 0;
    for (auto& b : blocks_) s += b.ranges.used();
    return s;
  }

 private:
  friend class pooled_buffer<F>;
  struct block {
    buffer<F> bo;
    range_allocator ranges;
  };
  pooled_buffer<F> make(std::size_t i, std::uint64_t off, std::uint64_t sz) {
    pooled_buffer<F> p;
    p.pool_ = this;
    p.block_ = i;
    p.offset_ = off;
    const buffer_ref whole = blocks_[i].bo.ref();
    p.ref_ = {whole.va + byte_count(off), whole.host ? static_cast<char*>(whole.host) + off : nullptr, byte_count(sz),
              whole.gpu_id, whole.handle};
    return p;
  }
  void give_back(std::size_t i, std::uint64_t off, std::uint64_t sz) { blocks_[i].ranges.free(off, sz); }

  driver_ref<F> d_;
  const node* gpu_;
  memory_use use_;
  std::vector<block> blocks_;
};

template <device_file F>
void pooled_buffer<F>::reset() noexcept {
  if (pool_) pool_->give_back(block_, offset_, ref_.size.value);
  pool_ = nullptr;
  ref_ = {};
}

}  // namespace aqueduct::kfd
