// tests/support/emu_session.hpp — raw-ioctl helpers for the emulator tests (no kfd/ layer): reserve
// VA through device::mmap, ALLOC at it, MAP to the GPU, like libhsakmt does (spec/kfd.md §5.2).
#pragma once

#include <aqueduct/abi/kfd_ioctl.hpp>
#include <aqueduct/emu/device.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

namespace emu_test {

namespace k = aqueduct::abi::kfd;
namespace emu = aqueduct::emu;

// Linux UAPI mmap values (kfd/device_file.hpp); spelled out so the tests do not include kfd/.
inline constexpr int prot_none = 0, prot_rw = 3, map_shared = 1, map_private = 2, map_fixed = 0x10,
                     map_anonymous = 0x20, map_noreserve = 0x4000;

// `key value` lines of a sysfs properties file.
inline std::map<std::string, std::uint64_t> read_properties(const std::filesystem::path& file) {
  std::map<std::string, std::uint64_t> m;
  std::ifstream f(file);
  std::string key;
  std::uint64_t v;
  while (f >> key >> v) m[key] = v;
  return m;
}

struct bo {
  std::uint64_t va = 0, size = 0, handle = 0, mmap_offset = 0;
};

struct session {
  emu::device dev;
  explicit session(emu::machine_config cfg) : dev(emu::device::create(std::move(cfg))) {}

  const emu::gpu_node& gpu(std::size_t i = 0) const { return dev.gpus()[i]; }

  int acquire(std::size_t i = 0) {
    const int fd = dev.open_render_node(gpu(i).drm_render_minor);
    REQUIRE(fd >= 0);
    k::acquire_vm_args a{};
    a.drm_fd = static_cast<std::uint32_t>(fd);
    a.gpu_id = gpu(i).gpu_id;
    return dev.ioctl(k::amdkfd_ioc_acquire_vm, &a);
  }
  std::uint64_t reserve(std::uint64_t size) {
    auto r = dev.mmap(nullptr, size, prot_none, map_private | map_anonymous | map_noreserve, -1, 0);
    REQUIRE(r);
    return reinterpret_cast<std::uint64_t>(r.addr);
  }
  // ALLOC at a fresh reservation; returns the errno (0) and fills `out`.
  int alloc(std::uint32_t gpu_id, std::uint64_t size, std::uint32_t flags, bo& out) {
    out.va = reserve(size == 0 ? 4096 : size);
    out.size = size;
    k::alloc_memory_of_gpu_args a{};
    a.va_addr = out.va;
    a.size = size;
    a.gpu_id = gpu_id;
    a.flags = flags;
    const int r = dev.ioctl(k::amdkfd_ioc_alloc_memory_of_gpu, &a);
    out.handle = a.handle;
    out.mmap_offset = a.mmap_offset;
    return r;
  }
  int map(const bo& b, std::uint32_t gpu_id) {
    std::uint32_t ids[1] = {gpu_id};
    k::map_memory_to_gpu_args m{};
    m.handle = b.handle;
    m.device_ids_array_ptr = reinterpret_cast<std::uint64_t>(ids);
    m.n_devices = 1;
    return dev.ioctl(k::amdkfd_ioc_map_memory_to_gpu, &m);
  }
  int unmap(const bo& b, std::uint32_t gpu_id) {
    std::uint32_t ids[1] = {gpu_id};
    k::unmap_memory_from_gpu_args m{};
    m.handle = b.handle;
    m.device_ids_array_ptr = reinterpret_cast<std::uint64_t>(ids);
    m.n_devices = 1;
    return dev.ioctl(k::amdkfd_ioc_unmap_memory_from_gpu, &m);
  }
  int free(const bo& b) {
    k::free_memory_of_gpu_args f{b.handle};
    return dev.ioctl(k::amdkfd_ioc_free_memory_of_gpu, &f);
  }
  // GTT BO of exactly `size` bytes, mapped to the GPU.
  bo gtt(std::uint32_t gpu_id, std::uint64_t size) {
    bo b;
    REQUIRE(alloc(gpu_id, size, k::alloc_mem_flags_gtt | k::alloc_mem_flags_writable | k::alloc_mem_flags_executable |
                                    k::alloc_mem_flags_no_substitute | k::alloc_mem_flags_coherent,
                  b) == 0);
    REQUIRE(map(b, gpu_id) == 0);
    return b;
  }
  // The doorbell slice: DOORBELL BO of the slice size, mmapped on the kfd fd at its VA, mapped.
  bo doorbells(std::uint32_t gpu_id, std::uint64_t slice) {
    bo b;
    REQUIRE(alloc(gpu_id, slice, k::alloc_mem_flags_doorbell | k::alloc_mem_flags_writable, b) == 0);
    auto m = dev.mmap(reinterpret_cast<void*>(b.va), slice, prot_rw, map_shared | map_fixed, dev.kfd_fd(),
                      k::make_mmap_offset(k::mmap_type_doorbell, gpu_id));
    REQUIRE(m);
    CHECK(reinterpret_cast<std::uint64_t>(m.addr) == b.va);
    REQUIRE(map(b, gpu_id) == 0);
    CHECK(dev.is_mapped(gpu_id, b.va, slice));  // the kfd-fd mapping at va is the GPU's view too
    return b;
  }
};

// Every buffer a compute queue needs, of exactly the sizes the kernel expects for the node.
struct queue_buffers {
  bo ring, ptrs, eop, ctx;
  std::uint32_t ring_size = 0;
};

// `ctx_total` = ALIGN((cwsr_size + debug_memory_size) * num_xcc, 4096), given by the test from spec.
inline queue_buffers make_compute_buffers(session& s, std::uint32_t gpu_id, std::uint32_t ring_size,
                                          std::uint64_t ctx_total) {
  queue_buffers q;
  q.ring_size = ring_size;
  q.ring = s.gtt(gpu_id, ring_size < 4096 ? 4096 : ring_size);
  q.ptrs = s.gtt(gpu_id, 4096);
  q.eop = s.gtt(gpu_id, 4096);
  q.ctx = s.gtt(gpu_id, ctx_total);
  return q;
}

inline k::create_queue_args compute_args(const queue_buffers& b, std::uint32_t gpu_id, std::uint32_t type,
                                         std::uint32_t cwsr_size, std::uint32_t ctl_stack_size) {
  k::create_queue_args a{};
  a.ring_base_address = b.ring.va;
  a.ring_size = b.ring_size;
  a.read_pointer_address = b.ptrs.va + 0x80;   // like ROCr: both pointers in one page
  a.write_pointer_address = b.ptrs.va + 0x38;
  a.gpu_id = gpu_id;
  a.queue_type = type;
  a.queue_percentage = 100;
  a.queue_priority = 7;
  a.eop_buffer_address = b.eop.va;
  a.eop_buffer_size = 4096;  // spec/kfd.md §1.3 item 8
  a.ctx_save_restore_address = b.ctx.va;
  a.ctx_save_restore_size = cwsr_size;
  a.ctl_stack_size = ctl_stack_size;
  return a;
}

}  // namespace emu_test
