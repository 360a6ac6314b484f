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
#include <cstdio>
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
  userptr,             // USERPTR: existing host memory registered for GPU access (buffer::try_register)
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
    case memory_use::userptr: return "userptr";
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
    case memory_use::userptr: return k::alloc_mem_flags_userptr | k::alloc_mem_flags_coherent | base;
  }
  return 0;
}
// Whether aqueduct makes a CPU mapping of memory of this use (userptr memory is the caller's).
constexpr bool host_mapped(memory_use u) noexcept {
  return u != memory_use::device && u != memory_use::eop && u != memory_use::userptr;
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

// The largest request try_allocate considers (2^47 bytes: x86-64's user half and the GPUVM
// apertures KFD reports are both at most 2^47 bytes; AMD64 APM vol. 2 §5.3.1 canonical addresses).
inline constexpr std::uint64_t max_allocation_bytes = std::uint64_t{1} << 47;

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
    // No address space holds 2^63 bytes; refusing here also keeps the rounding and the
    // over-reservation below from wrapping (a wrapped span used to trim unrelated mappings).
    if (size.value > max_allocation_bytes)
      return failure(errc::out_of_memory, "cannot allocate " + std::to_string(size.value) +
                                              " bytes: larger than any GPU or process address space (max " +
                                              std::to_string(max_allocation_bytes) + ")");
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
    if (const auto* ap = d.apertures(gpu.gpu_id); ap && (start < ap->gpuvm_base || start + b.size_ - 1 > ap->gpuvm_limit))
      return failure(errc::out_of_memory, "reserved VA [0x" + hex(start) + ", 0x" + hex(start + b.size_) +
                                              ") lies outside gpu_id " + std::to_string(gpu.gpu_id) +
                                              "'s GPUVM aperture [0x" + hex(ap->gpuvm_base) + ", 0x" +
                                              hex(ap->gpuvm_limit) + "]");
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
    AQUEDUCT_TRY_VOID(b.try_map_to(gpu));
    return b;
  }

  // Registers existing, page-aligned host memory for GPU access (USERPTR; spec §5.2: the CPU
  // address goes in mmap_offset). The GPU address equals the host address (as the emulator
  // requires and SVM apertures allow). The memory stays the caller's; release only unmaps/frees
  // the BO.
  [[nodiscard]] static result<buffer> try_register(driver_ref<F> d, const node& gpu, void* host, byte_count size) {
    namespace k = abi::kfd;
    const auto addr = reinterpret_cast<std::uint64_t>(host);
    AQUEDUCT_ASSERT(addr % page_size == 0 && size.value > 0, "userptr memory must be page aligned and non-empty");
    buffer b;
    b.d_ = d;
    b.gpu_id_ = gpu.gpu_id;
    b.use_ = memory_use::userptr;
    b.size_ = align_up(size.value, page_size);
    b.va_ = addr;
    k::alloc_memory_of_gpu_args a{};
    a.va_addr = addr;
    a.size = b.size_;
    a.mmap_offset = addr;
    a.gpu_id = gpu.gpu_id;
    a.flags = memory_flags(memory_use::userptr);
    AQUEDUCT_TRY_VOID(d.try_ioctl(k::amdkfd_ioc_alloc_memory_of_gpu, &a, b.context()));
    b.handle_ = a.handle;
    b.allocated_ = true;
    b.host_ = host;
    AQUEDUCT_TRY_VOID(b.try_map_to(gpu));
    return b;
  }

  // Maps the BO into one more GPU's VM (a peer GPU, or the GPU of a multi-GPU event page). The
  // peer's VM must have been acquired. Unmapped from every GPU on release.
  [[nodiscard]] result<void> try_map_to(const node& gpu) {
    namespace k = abi::kfd;
    for (auto id : mapped_gpus_)
      if (id == gpu.gpu_id) return ok();
    std::uint32_t ids[1] = {gpu.gpu_id};
    k::map_memory_to_gpu_args map{};
    map.handle = handle_;
    map.device_ids_array_ptr = reinterpret_cast<std::uint64_t>(ids);
    map.n_devices = 1;
    AQUEDUCT_TRY_VOID(d_.try_ioctl(k::amdkfd_ioc_map_memory_to_gpu, &map, context() + " -> gpu_id " +
                                                                             std::to_string(gpu.gpu_id)));
    if (map.n_success != 1)
      return failure(errc::ioctl_failed, "AMDKFD_IOC_MAP_MEMORY_TO_GPU mapped " + std::to_string(map.n_success) +
                                             " of 1 devices [" + context() + "]");
    mapped_gpus_.push_back(gpu.gpu_id);
    return ok();
  }
  [[nodiscard]] const std::vector<std::uint32_t>& mapped_gpus() const noexcept { return mapped_gpus_; }

  [[nodiscard]] buffer_ref ref() const noexcept { return {gpu_va(va_), host_, byte_count(size_), gpu_id_, handle_}; }
  [[nodiscard]] gpu_va va() const noexcept { return gpu_va(va_); }
  [[nodiscard]] void* host() const noexcept { return host_; }
  [[nodiscard]] byte_count size() const noexcept { return byte_count(size_); }
  [[nodiscard]] std::uint64_t handle() const noexcept { return handle_; }
  [[nodiscard]] std::uint32_t gpu_id() const noexcept { return gpu_id_; }
  // The offset of the CPU mapping (render node or kfd fd); 0 when not host-mapped.
  [[nodiscard]] std::uint64_t mmap_offset() const noexcept { return mmap_offset_; }
  [[nodiscard]] memory_use use() const noexcept { return use_; }
  [[nodiscard]] explicit operator bool() const noexcept { return reserved_ || allocated_; }

  // Gives the BO to the kernel for good: drops the CPU mapping and forgets the handle without
  // UNMAP/FREE. For the signal event page, which the kernel refuses to free (-EPERM, spec §5.2)
  // and releases itself when the KFD file is closed.
  void detach_to_kernel() noexcept {
    if (reserved_) (void)d_.file().munmap(reinterpret_cast<void*>(va_), size_);
    reserved_ = allocated_ = false;
    mapped_gpus_.clear();
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
    if (!mapped_gpus_.empty()) {  // peers first, the owning GPU last (reverse of mapping)
      for (auto it = mapped_gpus_.rbegin(); it != mapped_gpus_.rend(); ++it) {
        std::uint32_t ids[1] = {*it};
        k::unmap_memory_from_gpu_args u{};
        u.handle = handle_;
        u.device_ids_array_ptr = reinterpret_cast<std::uint64_t>(ids);
        u.n_devices = 1;
        keep(d_.try_ioctl(k::amdkfd_ioc_unmap_memory_from_gpu, &u));
      }
      mapped_gpus_.clear();
    }
    if (reserved_ && allocated_) {
      // Replace the CPU mapping by a PROT_NONE reservation, so the VA range stays ours until the
      // BO is freed: releasing it first let a concurrent allocation be handed a range the kernel
      // still had this BO registered at (ALLOC_MEMORY_OF_GPU then fails with EINVAL).
      auto m = d_.file().mmap(reinterpret_cast<void*>(va_), size_, prot_none,
                              map_private | map_anonymous | map_noreserve | map_fixed, -1, 0);
      if (!m) keep(mmap_failure("mmap (PROT_NONE re-reservation)", m.error));
      host_ = nullptr;
    }
    if (use_ == memory_use::userptr) host_ = nullptr;  // the caller's memory: never munmapped
    if (allocated_) {
      k::free_memory_of_gpu_args f{handle_};
      keep(d_.try_ioctl(k::amdkfd_ioc_free_memory_of_gpu, &f));
      allocated_ = false;
    }
    if (reserved_) {  // only now give the VA range back
      if (int r = d_.file().munmap(reinterpret_cast<void*>(va_), size_); r != 0)
        keep(mmap_failure("munmap", -r));
      reserved_ = false;
      host_ = nullptr;
    }
    return first;
  }

 private:
  static std::string hex(std::uint64_t v) {
    char b[24];
    std::snprintf(b, sizeof b, "%llx", static_cast<unsigned long long>(v));
    return b;
  }
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
    std::swap(mapped_gpus_, o.mapped_gpus_);
  }

  driver_ref<F> d_{};
  std::uint64_t va_ = 0, size_ = 0;
  void* host_ = nullptr;
  std::uint64_t handle_ = 0, mmap_offset_ = 0;
  std::uint32_t gpu_id_ = 0;
  memory_use use_ = memory_use::device;
  bool reserved_ = false, allocated_ = false;
  std::vector<std::uint32_t> mapped_gpus_;
};

}  // namespace aqueduct::kfd
