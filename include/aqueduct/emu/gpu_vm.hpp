// aqueduct/emu/gpu_vm.hpp — the emulated process GPU VM: buffer objects, where they live, and
// which GPUs map them.
//
// Layer: emu. Placement rule (kept simple on purpose): a BO's memory is host memory (a memfd,
// so every CPU mapping of it aliases the same pages) that the emulator maps at the BO's va_addr
// when it is allocated. GPU VA == host VA: an engine that has checked `is_mapped(gpu_id, addr,
// len)` may dereference `addr` directly. The va range must be either address space the caller
// reserved through device::mmap(fd -1, MAP_ANONYMOUS) or free address space. USERPTR BOs use
// the caller's memory, so their va_addr must equal the CPU address (an emulator limitation).
// A BO that queues reference (kernel 6.12+ queue buffers) cannot be unmapped or freed (-EBUSY).
// Generation: every member that changes the VM or hands out a mutable BO moves `generation()` on
// first, so an engine's translation cache (emu/vm_tlb.hpp) knows its extents may be stale.
// Thread safety: none; emu::device serialises access (shared lock for lookups); generation() may
// be read from any thread without the lock.
#pragma once

#include <aqueduct/abi/kfd_ioctl.hpp>
#include <aqueduct/config.hpp>
#include <aqueduct/core/units.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

namespace aqueduct::emu {

// Anonymous shared memory of a fixed size (memfd on Linux, an unlinked temp file elsewhere).
class host_backing {
 public:
  host_backing(const host_backing&) = delete;
  host_backing& operator=(const host_backing&) = delete;
  ~host_backing() {
    if (mapping_) ::munmap(mapping_, size_);
    if (fd_ >= 0) ::close(fd_);
  }
  // nullptr when the host is out of memory or file descriptors.
  [[nodiscard]] static std::shared_ptr<host_backing> create(std::uint64_t size) noexcept {
#if AQUEDUCT_LINUX
    int fd = ::memfd_create("aqueduct-emu-bo", MFD_CLOEXEC);
#else
    char name[] = "/tmp/aqueduct-emu-bo-XXXXXX";
    int fd = ::mkstemp(name);
    if (fd >= 0) ::unlink(name);
#endif
    if (fd < 0) return nullptr;
    if (::ftruncate(fd, static_cast<off_t>(size)) != 0) {
      ::close(fd);
      return nullptr;
    }
    // The emulator's own view, used for pages it reads itself (doorbells, events).
    void* m = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) {
      ::close(fd);
      return nullptr;
    }
    std::shared_ptr<host_backing> b(new (std::nothrow) host_backing(fd, size, m));
    if (!b) {
      ::munmap(m, size);
      ::close(fd);
    }
    return b;
  }
  [[nodiscard]] int fd() const noexcept { return fd_; }
  [[nodiscard]] std::uint64_t size() const noexcept { return size_; }
  [[nodiscard]] void* data() const noexcept { return mapping_; }
  // Maps [offset, offset+len) of the backing at `addr` (MAP_FIXED if `fixed`). nullptr + errno.
  [[nodiscard]] void* map_at(void* addr, std::uint64_t len, std::uint64_t offset, int prot, bool fixed,
                             bool noreplace = false) const noexcept {
    int flags = MAP_SHARED;
    // NOREPLACE without MAP_FIXED: kernels before 4.17 treat it as a hint, checked below.
    if (fixed && !noreplace) flags |= MAP_FIXED;
#if AQUEDUCT_LINUX
    if (noreplace) flags |= MAP_FIXED_NOREPLACE;
#endif
    void* m = ::mmap(addr, len, prot, flags, fd_, static_cast<off_t>(offset));
    if (m == MAP_FAILED) return nullptr;
    if (noreplace && m != addr) {  // kernels without NOREPLACE treat it as a hint
      ::munmap(m, len);
      errno = EEXIST;
      return nullptr;
    }
    return m;
  }

 private:
  host_backing(int fd, std::uint64_t size, void* m) noexcept : fd_(fd), size_(size), mapping_(m) {}
  int fd_ = -1;
  std::uint64_t size_ = 0;
  void* mapping_ = nullptr;
};

struct buffer_object {
  std::uint64_t handle = 0;       // (gpu_id << 32) | id, as the kernel returns it
  std::uint32_t gpu_id = 0;       // device it was allocated on
  std::uint64_t va = 0;           // GPU VA == host VA
  std::uint64_t size = 0;         // as requested
  std::uint64_t mapped_size = 0;  // page-aligned extent in the GPU VM
  std::uint32_t flags = 0;
  std::uint64_t mmap_offset = 0;  // returned to userspace
  std::shared_ptr<host_backing> backing;  // null for USERPTR
  std::uint64_t backing_offset = 0;
  bool placed = false;            // our mapping of the backing is still at va
  bool from_reservation = false;  // va was a device::mmap reservation before placement
  std::vector<std::uint32_t> mapped_gpus;
  std::uint32_t queue_refcount = 0;

  [[nodiscard]] bool mapped_to(std::uint32_t gpu) const noexcept {
    return std::find(mapped_gpus.begin(), mapped_gpus.end(), gpu) != mapped_gpus.end();
  }
  [[nodiscard]] std::uint64_t end() const noexcept { return va + mapped_size; }
  [[nodiscard]] bool accessible() const noexcept {
    return placed || (flags & abi::kfd::alloc_mem_flags_userptr);
  }
};

class gpu_vm {
 public:
  gpu_vm() = default;
  gpu_vm(const gpu_vm&) = delete;
  gpu_vm& operator=(const gpu_vm&) = delete;

  // Moves on (never 0) before any change of the mappings (see the header comment).
  [[nodiscard]] std::uint64_t generation() const noexcept { return generation_.load(std::memory_order_acquire); }

  // Every BO by handle (iteration only: add and remove go through add() / remove()).
  std::map<std::uint64_t, buffer_object>& objects() noexcept {
    changing();
    return bos_;
  }
  // Precondition: the BO's VA range overlaps no other BO (overlaps_any is false).
  void add(buffer_object b) {
    changing();
    by_va_[b.va] = b.handle;
    const auto h = b.handle;
    bos_.emplace(h, std::move(b));
  }
  void remove(std::uint64_t handle) {
    changing();
    auto it = bos_.find(handle);
    if (it == bos_.end()) return;
    by_va_.erase(it->second.va);
    bos_.erase(it);
  }

  [[nodiscard]] buffer_object* find(std::uint64_t handle) noexcept {
    changing();  // the caller may change the BO (map to a GPU, place)
    auto it = bos_.find(handle);
    return it == bos_.end() ? nullptr : &it->second;
  }
  [[nodiscard]] buffer_object* find_by_mmap_offset(std::uint64_t off) noexcept {
    changing();
    for (auto& [h, b] : bos_)
      if (b.mmap_offset == off && b.backing &&
          !(b.flags & (abi::kfd::alloc_mem_flags_doorbell | abi::kfd::alloc_mem_flags_mmio_remap)))
        return &b;
    return nullptr;
  }
  // The BO whose VA range contains `addr` (BOs never overlap), or nullptr. O(log n).
  [[nodiscard]] const buffer_object* containing(std::uint64_t addr) const noexcept {
    auto it = by_va_.upper_bound(addr);
    if (it == by_va_.begin()) return nullptr;
    --it;
    const auto b = bos_.find(it->second);
    return b != bos_.end() && addr < b->second.end() ? &b->second : nullptr;
  }
  // The BO whose GPU mapping on `gpu` contains the page of `addr` (amdgpu_vm_bo_lookup_mapping).
  [[nodiscard]] buffer_object* lookup_mapping(std::uint32_t gpu, std::uint64_t addr) noexcept {
    changing();
    auto* b = const_cast<buffer_object*>(containing(align_down(addr, page_size)));
    return b && b->mapped_to(gpu) ? b : nullptr;
  }
  [[nodiscard]] bool overlaps_any(std::uint64_t va, std::uint64_t len) const noexcept {
    if (containing(va)) return true;
    auto it = by_va_.lower_bound(va);  // a BO starting inside [va, va+len)
    return it != by_va_.end() && it->first < va + len;
  }
  // Every byte of [addr, addr+len) lies in BOs mapped on `gpu` whose memory is present.
  [[nodiscard]] bool is_mapped(std::uint32_t gpu, std::uint64_t addr, std::uint64_t len) const noexcept {
    if (len == 0) len = 1;
    std::uint64_t cur = addr;
    const std::uint64_t end = addr + len;
    if (end < addr) return false;
    while (cur < end) {
      const buffer_object* hit = containing(cur);
      if (!hit || !hit->mapped_to(gpu) || !hit->accessible()) return false;
      cur = hit->end();
    }
    return true;
  }
  // The BO mapped on `gpu` with its memory present that contains `addr`: its extent [lo, hi).
  [[nodiscard]] bool extent(std::uint32_t gpu, std::uint64_t addr, std::uint64_t& lo, std::uint64_t& hi) const noexcept {
    const buffer_object* hit = containing(addr);
    if (!hit || !hit->mapped_to(gpu) || !hit->accessible()) return false;
    lo = hit->va;
    hi = hit->end();
    return true;
  }

  // ---- host address-space bookkeeping -------------------------------------------------------
  void note_reservation(std::uint64_t addr, std::uint64_t len) { reservations_.push_back({addr, addr + len}); }
  [[nodiscard]] bool inside_reservation(std::uint64_t addr, std::uint64_t len) const noexcept {
    for (const auto& r : reservations_)
      if (addr >= r.lo && addr + len <= r.hi) return true;
    return false;
  }
  // [addr, addr+len) stopped being a reservation (BO placed there, or munmap).
  void forget_range(std::uint64_t addr, std::uint64_t len) {
    std::vector<range> next;
    const std::uint64_t lo = addr, hi = addr + len;
    for (const auto& r : reservations_) {
      if (hi <= r.lo || lo >= r.hi) {
        next.push_back(r);
        continue;
      }
      if (r.lo < lo) next.push_back({r.lo, lo});
      if (hi < r.hi) next.push_back({hi, r.hi});
    }
    reservations_ = std::move(next);
  }
  // munmap of [addr, addr+len): BOs placed there lose their memory at va.
  void note_unmap(std::uint64_t addr, std::uint64_t len) {
    changing();
    forget_range(addr, len);
    for (auto& [h, b] : bos_)
      if (b.placed && addr < b.end() && b.va < addr + len) b.placed = false;
  }

  // Maps the BO's backing at its va (reserved or free address space). 0 or -errno.
  [[nodiscard]] int place(buffer_object& b) {
    changing();
    if (!b.backing) return 0;
    void* at = reinterpret_cast<void*>(b.va);
    const bool reserved = inside_reservation(b.va, b.mapped_size);
    void* m = b.backing->map_at(at, b.mapped_size, b.backing_offset, PROT_READ | PROT_WRITE, true, !reserved);
    if (!m) return -ENOMEM;
    if (reserved) forget_range(b.va, b.mapped_size);
    b.placed = true;
    b.from_reservation = reserved;
    return 0;
  }
  // Undoes place(): the range becomes a PROT_NONE reservation again if it was one, else is freed.
  void unplace(buffer_object& b) {
    changing();
    if (!b.placed) return;
    void* at = reinterpret_cast<void*>(b.va);
    if (b.from_reservation) {
      ::mmap(at, b.mapped_size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
      note_reservation(b.va, b.mapped_size);
    } else {
      ::munmap(at, b.mapped_size);
    }
    b.placed = false;
  }

 private:
  struct range {
    std::uint64_t lo, hi;
  };
  void changing() noexcept { generation_.fetch_add(1, std::memory_order_acq_rel); }

  std::map<std::uint64_t, buffer_object> bos_;
  std::map<std::uint64_t, std::uint64_t> by_va_;  // va → handle
  std::vector<range> reservations_;
  std::atomic<std::uint64_t> generation_{1};
};

}  // namespace aqueduct::emu
