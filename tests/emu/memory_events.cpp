// tests/emu/memory_events.cpp — ACQUIRE_VM, ALLOC/FREE/MAP/UNMAP, the mmap protocol and events of
// the emulated device, through raw ioctls. Expected errnos and layouts: spec/kfd.md §3.2, §5.
#include "emu_session.hpp"

#include <atomic>
#include <cstring>
#include <thread>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

using namespace emu_test;

TEST_CASE("ACQUIRE_VM: render node of the GPU, idempotent, -EBUSY for another file") {
  session s(emu::machine_config::parse("mi300x,rx7900xtx"));
  REQUIRE(s.dev.gpus().size() == 2);
  const int fd0 = s.dev.open_render_node(s.gpu(0).drm_render_minor);
  const int fd0b = s.dev.open_render_node(s.gpu(0).drm_render_minor);
  const int fd1 = s.dev.open_render_node(s.gpu(1).drm_render_minor);
  REQUIRE(fd0 >= 0);
  REQUIRE(fd0b >= 0);
  REQUIRE(fd1 >= 0);
  CHECK(s.dev.open_render_node(99) == -ENOENT);
  k::acquire_vm_args a{static_cast<std::uint32_t>(fd0), s.gpu(0).gpu_id};
  CHECK(s.dev.ioctl(k::amdkfd_ioc_acquire_vm, &a) == 0);
  CHECK(s.dev.ioctl(k::amdkfd_ioc_acquire_vm, &a) == 0);
  a.drm_fd = static_cast<std::uint32_t>(fd0b);
  CHECK(s.dev.ioctl(k::amdkfd_ioc_acquire_vm, &a) == -EBUSY);
  a.gpu_id = 0;
  CHECK(s.dev.ioctl(k::amdkfd_ioc_acquire_vm, &a) == -EINVAL);  // unknown gpu_id
  a = {12345u, s.gpu(1).gpu_id};
  CHECK(s.dev.ioctl(k::amdkfd_ioc_acquire_vm, &a) == -EINVAL);  // fget fails
  // memory on GPU 1 before its VM is acquired: kfd_bind_process_to_device fails
  bo b;
  CHECK(s.alloc(s.gpu(1).gpu_id, 4096, k::alloc_mem_flags_gtt, b) == -ENODEV);
  CHECK(s.dev.close_render_node(fd1) == 0);
  CHECK(s.dev.close_render_node(fd1) == -EBADF);
}

TEST_CASE("ALLOC/MAP/UNMAP/FREE: errnos, handles, is_mapped, render-node CPU mapping") {
  session s(emu::machine_config::parse("rx7900xtx"));
  REQUIRE(s.acquire() == 0);
  const std::uint32_t gpu = s.gpu().gpu_id;
  bo b;
  CHECK(s.alloc(gpu, 0, k::alloc_mem_flags_gtt, b) == -EINVAL);                            // size 0
  CHECK(s.alloc(gpu, 4096, k::alloc_mem_flags_writable, b) == -EINVAL);                    // no domain
  CHECK(s.alloc(gpu ^ 0x4000, 4096, k::alloc_mem_flags_gtt, b) == -EINVAL);                // unknown gpu
  CHECK(s.alloc(gpu, 4096, k::alloc_mem_flags_doorbell, b) == -EINVAL);                    // not the slice
  CHECK(s.alloc(gpu, 8192, k::alloc_mem_flags_mmio_remap, b) == -EINVAL);                  // not one page
  CHECK(s.alloc(gpu, 4096, k::alloc_mem_flags_userptr, b) == -EINVAL);                     // no CPU address

  REQUIRE(s.alloc(gpu, 3 * 4096, k::alloc_mem_flags_vram | k::alloc_mem_flags_public, b) == 0);
  CHECK((b.handle >> 32) == gpu);  // handle = gpu_id << 32 | idr (spec/kfd.md §5.2)
  CHECK_FALSE(s.dev.is_mapped(gpu, b.va, 4096));
  REQUIRE(s.map(b, gpu) == 0);
  CHECK(s.map(b, gpu) == 0);  // already mapped: no-op
  CHECK(s.dev.is_mapped(gpu, b.va, 3 * 4096));
  CHECK_FALSE(s.dev.is_mapped(gpu, b.va, 3 * 4096 + 1));
  CHECK_FALSE(s.dev.is_mapped(gpu ^ 1, b.va, 8));

  // MAP argument checks
  std::uint32_t ids[2] = {gpu, gpu ^ 0x4000};
  k::map_memory_to_gpu_args m{};
  m.handle = b.handle;
  m.device_ids_array_ptr = reinterpret_cast<std::uint64_t>(ids);
  m.n_devices = 0;
  CHECK(s.dev.ioctl(k::amdkfd_ioc_map_memory_to_gpu, &m) == -EINVAL);
  m.n_devices = 1;
  m.n_success = 2;
  CHECK(s.dev.ioctl(k::amdkfd_ioc_map_memory_to_gpu, &m) == -EINVAL);
  m.n_devices = 2;
  m.n_success = 0;
  CHECK(s.dev.ioctl(k::amdkfd_ioc_map_memory_to_gpu, &m) == -EINVAL);  // second id unknown
  CHECK(m.n_success == 1);                                             // copied out: retry resumes
  m.handle = b.handle + 77;
  m.n_devices = 1;
  m.n_success = 0;
  CHECK(s.dev.ioctl(k::amdkfd_ioc_map_memory_to_gpu, &m) == -ENOMEM);  // unknown handle
  CHECK(s.dev.ioctl(k::amdkfd_ioc_unmap_memory_from_gpu, &m) == -ENOMEM);  // same in UNMAP

  // the CPU mapping through the render node aliases the GPU's (host) memory at va
  const int fd = s.dev.open_render_node(s.gpu().drm_render_minor);
  auto cpu = s.dev.mmap(nullptr, 3 * 4096, prot_rw, map_shared, fd, b.mmap_offset);
  REQUIRE(cpu);
  std::memcpy(cpu.addr, "hello", 6);
  CHECK(std::memcmp(reinterpret_cast<void*>(b.va), "hello", 6) == 0);
  CHECK(s.dev.munmap(cpu.addr, 3 * 4096) == 0);
  CHECK(s.dev.mmap(nullptr, 4 * 4096, prot_rw, map_shared, fd, b.mmap_offset).error == EINVAL);  // too long
  CHECK(s.dev.mmap(nullptr, 4096, prot_rw, map_shared, fd, b.mmap_offset + 4096).error == EINVAL);
  CHECK(s.dev.mmap(nullptr, 4096, prot_rw, map_shared, 12345, b.mmap_offset).error == EBADF);

  CHECK(s.free(b) == -EBUSY);  // still mapped
  CHECK(s.unmap(b, gpu) == 0);
  CHECK(s.unmap(b, gpu) == -EINVAL);  // not mapped
  CHECK_FALSE(s.dev.is_mapped(gpu, b.va, 1));
  CHECK(s.free(b) == 0);
  CHECK(s.free(b) == -EINVAL);

  // USERPTR: the caller's memory; GPU VA equals the CPU address
  alignas(4096) static unsigned char user[8192];
  k::alloc_memory_of_gpu_args u{};
  u.va_addr = reinterpret_cast<std::uint64_t>(user);
  u.size = sizeof(user);
  u.mmap_offset = u.va_addr;
  u.gpu_id = gpu;
  u.flags = k::alloc_mem_flags_userptr | k::alloc_mem_flags_writable;
  REQUIRE(s.dev.ioctl(k::amdkfd_ioc_alloc_memory_of_gpu, &u) == 0);
  bo ub{u.va_addr, u.size, u.handle, u.mmap_offset};
  REQUIRE(s.map(ub, gpu) == 0);
  CHECK(s.dev.is_mapped(gpu, u.va_addr, sizeof(user)));
  CHECK(s.unmap(ub, gpu) == 0);
  CHECK(s.free(ub) == 0);

  k::get_available_memory_args avail{};
  avail.gpu_id = gpu;
  REQUIRE(s.dev.ioctl(k::amdkfd_ioc_available_memory, &avail) == 0);
  CHECK(avail.available == s.gpu().props.vram_size);
}

TEST_CASE("doorbell and MMIO mmap on the kfd fd (spec/kfd.md §3)") {
  session s(emu::machine_config::parse("mi300x"));
  REQUIRE(s.acquire() == 0);
  const std::uint32_t gpu = s.gpu().gpu_id;
  const auto off = k::make_mmap_offset(k::mmap_type_doorbell, gpu);
  // ALLOC(DOORBELL) returns the doorbells' bus address, not a kfd mmap offset (kfd_chardev.c)
  bo dbo;
  REQUIRE(s.alloc(gpu, 8192, k::alloc_mem_flags_doorbell, dbo) == 0);
  CHECK(k::mmap_type_of(dbo.mmap_offset) != k::mmap_type_doorbell);
  CHECK(s.dev.mmap(nullptr, 4096, prot_rw, map_shared, s.dev.kfd_fd(), off).error == EINVAL);  // one page only
  CHECK(s.dev.mmap(nullptr, 8192, prot_rw, map_shared, s.dev.kfd_fd(),
                   k::make_mmap_offset(k::mmap_type_doorbell, 0)).error == ENODEV);
  auto d = s.dev.mmap(nullptr, 8192, prot_rw, map_shared, s.dev.kfd_fd(), off);
  REQUIRE(d);
  // the engines' view of the same slice sees the write
  static_cast<volatile std::uint64_t*>(d.addr)[5] = 42;
  CHECK(static_cast<std::uint64_t*>(s.dev.doorbell_page(gpu))[5] == 42);
  CHECK(s.dev.munmap(d.addr, 8192) == 0);
  CHECK(s.dev.mmap(nullptr, 8192, prot_rw, map_shared, s.dev.kfd_fd(),
                   k::make_mmap_offset(k::mmap_type_mmio, gpu)).error == EINVAL);
  auto mmio = s.dev.mmap(nullptr, 4096, prot_rw, map_shared, s.dev.kfd_fd(), k::make_mmap_offset(k::mmap_type_mmio, gpu));
  CHECK(mmio);
  CHECK(s.dev.mmap(nullptr, 32768, prot_rw, map_shared, s.dev.kfd_fd(), k::mmap_type_events).error == EINVAL);  // no page yet
}

TEST_CASE("events: kernel page, SET/RESET/WAIT, ages, interrupts") {
  session s(emu::machine_config::parse("rx7900xtx"));
  k::create_event_args c{};
  c.event_type = k::event_signal;
  c.auto_reset = 1;
  REQUIRE(s.dev.ioctl(k::amdkfd_ioc_create_event, &c) == 0);
  CHECK(c.event_page_offset == (2ull << 62));  // KFD_MMAP_TYPE_EVENTS
  CHECK(c.event_slot_index == c.event_id);
  CHECK(c.event_trigger_data == c.event_id);
  CHECK(c.event_id == 0);
  CHECK(s.dev.mmap(nullptr, 4096, prot_rw, map_shared, s.dev.kfd_fd(), c.event_page_offset).error == EINVAL);
  auto page = s.dev.mmap(nullptr, 32768, prot_rw, map_shared, s.dev.kfd_fd(), c.event_page_offset);
  REQUIRE(page);
  auto* slots = static_cast<std::uint64_t*>(page.addr);
  CHECK(slots[c.event_id] == ~std::uint64_t{0});  // unsignaled slot value

  k::event_data ed{};
  ed.event_id = c.event_id;
  k::wait_events_args w{};
  w.events_ptr = reinterpret_cast<std::uint64_t>(&ed);
  w.num_events = 1;
  w.timeout = 0;
  CHECK(s.dev.ioctl(k::amdkfd_ioc_wait_events, &w) == 0);
  CHECK(w.wait_result == k::wait_result_timeout);

  k::set_event_args se{c.event_id, 0};
  REQUIRE(s.dev.ioctl(k::amdkfd_ioc_set_event, &se) == 0);
  w.timeout = 1000;
  ed.signal_event_data.last_event_age = 0;
  CHECK(s.dev.ioctl(k::amdkfd_ioc_wait_events, &w) == 0);
  CHECK(w.wait_result == k::wait_result_complete);
  w.timeout = 0;
  CHECK(s.dev.ioctl(k::amdkfd_ioc_wait_events, &w) == 0);
  CHECK(w.wait_result == k::wait_result_timeout);  // auto-reset consumed it

  // event age (1.14): a stale age completes at once and the current age is copied back
  ed.signal_event_data.last_event_age = 1;  // ages start at 1; one SET made it 2
  CHECK(s.dev.ioctl(k::amdkfd_ioc_wait_events, &w) == 0);
  CHECK(w.wait_result == k::wait_result_complete);
  CHECK(ed.signal_event_data.last_event_age == 2);

  // interrupt from another thread: GPU writes the slot, then raises the interrupt
  ed.signal_event_data.last_event_age = 0;
  std::thread gpu([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::atomic_ref<std::uint64_t>(slots[c.event_id]).store(c.event_id, std::memory_order_release);
    s.dev.signal_event(c.event_id);
  });
  w.timeout = k::wait_timeout_infinite;
  CHECK(s.dev.ioctl(k::amdkfd_ioc_wait_events, &w) == 0);
  CHECK(w.wait_result == k::wait_result_complete);
  gpu.join();
  CHECK(slots[c.event_id] == ~std::uint64_t{0});  // acknowledged by the kernel
  // an interrupt whose slot was not written is ignored
  s.dev.signal_event(c.event_id);
  w.timeout = 0;
  CHECK(s.dev.ioctl(k::amdkfd_ioc_wait_events, &w) == 0);
  CHECK(w.wait_result == k::wait_result_timeout);

  // non-signal events: ids from (INT_MAX >> 1) + 1; SET/RESET only for signal events
  k::create_event_args c2{};
  c2.event_type = k::event_hw_exception;
  REQUIRE(s.dev.ioctl(k::amdkfd_ioc_create_event, &c2) == 0);
  CHECK(c2.event_id == 0x40000000u);
  k::set_event_args se2{c2.event_id, 0};
  CHECK(s.dev.ioctl(k::amdkfd_ioc_set_event, &se2) == -EINVAL);
  k::reset_event_args re{12345, 0};
  CHECK(s.dev.ioctl(k::amdkfd_ioc_reset_event, &re) == -EINVAL);
  ed.event_id = 777;
  CHECK(s.dev.ioctl(k::amdkfd_ioc_wait_events, &w) == -EINVAL);  // unknown id
  k::destroy_event_args de{c.event_id, 0};
  CHECK(s.dev.ioctl(k::amdkfd_ioc_destroy_event, &de) == 0);
  CHECK(s.dev.ioctl(k::amdkfd_ioc_destroy_event, &de) == -EINVAL);
}

TEST_CASE("events: userspace-supplied page (dGPU path); FREE of it is -EPERM") {
  session s(emu::machine_config::parse("mi300x"));
  REQUIRE(s.acquire() == 0);
  const std::uint32_t gpu = s.gpu().gpu_id;
  const bo page = s.gtt(gpu, 32768);
  k::create_event_args c{};
  c.event_type = k::event_signal;
  c.event_page_offset = page.handle;
  REQUIRE(s.dev.ioctl(k::amdkfd_ioc_create_event, &c) == 0);
  auto* slots = reinterpret_cast<std::uint64_t*>(page.va);
  CHECK(slots[0] == ~std::uint64_t{0});
  CHECK(slots[4095] == ~std::uint64_t{0});
  k::create_event_args again{};
  again.event_type = k::event_signal;
  again.event_page_offset = page.handle;
  CHECK(s.dev.ioctl(k::amdkfd_ioc_create_event, &again) == -EINVAL);  // page already set
  CHECK(s.unmap(page, gpu) == 0);
  CHECK(s.free(page) == -EPERM);
}

TEST_CASE("GET_PROCESS_APERTURES_NEW and clock counters") {
  session s(emu::machine_config::parse("2*mi300x"));
  k::get_process_apertures_new_args a{};
  REQUIRE(s.dev.ioctl(k::amdkfd_ioc_get_process_apertures_new, &a) == 0);
  CHECK(a.num_of_nodes == 2);
  k::process_device_apertures ap[3]{};
  a.kfd_process_device_apertures_ptr = reinterpret_cast<std::uint64_t>(ap);
  a.num_of_nodes = 3;
  REQUIRE(s.dev.ioctl(k::amdkfd_ioc_get_process_apertures_new, &a) == 0);
  CHECK(a.num_of_nodes == 2);
  CHECK(ap[0].gpu_id == s.gpu(0).gpu_id);
  CHECK(ap[1].gpu_id == s.gpu(1).gpu_id);
  CHECK(ap[0].gpuvm_limit > ap[0].gpuvm_base);
  k::get_clock_counters_args cc{};
  cc.gpu_id = s.gpu(0).gpu_id;
  REQUIRE(s.dev.ioctl(k::amdkfd_ioc_get_clock_counters, &cc) == 0);
  CHECK(cc.system_clock_freq == 1000000000);
  CHECK(cc.gpu_clock_counter != 0);
}

TEST_CASE("a BO of one GPU mapped into a peer's VM") {
  session s(emu::machine_config::parse("2*mi300x"));
  REQUIRE(s.acquire(0) == 0);
  const std::uint32_t g0 = s.gpu(0).gpu_id, g1 = s.gpu(1).gpu_id;
  const bo b = s.gtt(g0, 4096);
  CHECK_FALSE(s.dev.is_mapped(g1, b.va, 4096));
  CHECK(s.map(b, g1) == -ENODEV);  // the peer's VM is not acquired yet
  REQUIRE(s.acquire(1) == 0);
  REQUIRE(s.map(b, g1) == 0);
  CHECK(s.dev.is_mapped(g1, b.va, 4096));
  CHECK(s.unmap(b, g0) == 0);
  CHECK_FALSE(s.dev.is_mapped(g0, b.va, 4096));
  CHECK(s.dev.is_mapped(g1, b.va, 4096));
  // a second BO over the same VA is refused (the emulator checks at ALLOC what the kernel
  // would refuse at MAP)
  k::alloc_memory_of_gpu_args a{};
  a.va_addr = b.va;  // overlaps b
  a.size = 4096;
  a.gpu_id = g0;
  a.flags = k::alloc_mem_flags_gtt;
  CHECK(s.dev.ioctl(k::amdkfd_ioc_alloc_memory_of_gpu, &a) == -EINVAL);
}

TEST_CASE("events: 256 signal slots until the kernel page is mmapped, then 4096 (spec/kfd.md §5.3)") {
  session s(emu::machine_config::parse("rx7900xtx"));
  k::create_event_args c{};
  c.event_type = k::event_signal;
  for (int i = 0; i < 256; ++i) {
    c.event_page_offset = 0;
    REQUIRE(s.dev.ioctl(k::amdkfd_ioc_create_event, &c) == 0);
    CHECK(c.event_id == static_cast<std::uint32_t>(i));
  }
  c.event_page_offset = 0;
  CHECK(s.dev.ioctl(k::amdkfd_ioc_create_event, &c) == -ENOSPC);
  auto page = s.dev.mmap(nullptr, 32768, prot_rw, map_shared, s.dev.kfd_fd(), k::mmap_type_events);
  REQUIRE(page);
  c.event_page_offset = 0;
  CHECK(s.dev.ioctl(k::amdkfd_ioc_create_event, &c) == 0);
  CHECK(c.event_id == 256);
  k::create_event_args other{};
  other.event_type = k::event_memory;
  CHECK(s.dev.ioctl(k::amdkfd_ioc_create_event, &other) == 0);  // non-signal ids are separate
}

TEST_CASE("events: destroying an event under a waiter fails the wait with -EIO, wait_result FAIL") {
  session s(emu::machine_config::parse("rx7900xtx"));
  k::create_event_args c{};
  c.event_type = k::event_signal;
  REQUIRE(s.dev.ioctl(k::amdkfd_ioc_create_event, &c) == 0);
  k::event_data ed{};
  ed.event_id = c.event_id;
  k::wait_events_args w{};
  w.events_ptr = reinterpret_cast<std::uint64_t>(&ed);
  w.num_events = 1;
  w.timeout = 5000;
  int r = 1;
  std::thread waiter([&] { r = s.dev.ioctl(k::amdkfd_ioc_wait_events, &w); });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // let the waiter block first
  k::destroy_event_args d{c.event_id, 0};
  REQUIRE(s.dev.ioctl(k::amdkfd_ioc_destroy_event, &d) == 0);
  waiter.join();
  CHECK(r == -EIO);
  CHECK(w.wait_result == k::wait_result_fail);
}

}  // namespace AQ_UNITY_ID
