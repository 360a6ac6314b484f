// aqueduct/emu/detail/device_state.hpp — the state and ioctl handlers behind emu::device.
//
// Layer: emu (detail, not API). Each handler follows the kernel function named in its comment
// (drivers/gpu/drm/amd/amdkfd/kfd_chardev.c unless said otherwise) and spec/kfd.md; where the
// emulator is stricter or simpler than the kernel the comment says so.
// Thread safety: `m` guards everything but `events` (own lock) and `registry` (own lock). Handlers
// run under `m`; actions that must run without it (starting and stopping a queue's engine, the
// observer hooks) are queued in `deferred` and run by ioctl() after unlock, before it returns.
// Queue lifecycle: CREATE_QUEUE commits the queue, then (unlocked) starts its engine
// (emu/queue_engine.hpp) and publishes it. DESTROY_QUEUE unlists the queue, then (unlocked) stops
// and joins its engine, and only then (locked again) frees its id, doorbell, SDMA slot and buffer
// references — so a queue created concurrently can never be given a dying queue's id or engine.
#pragma once

#include <aqueduct/abi/kfd_ioctl.hpp>
#include <aqueduct/core/clock.hpp>
#include <aqueduct/core/mapping.hpp>
#include <aqueduct/core/result.hpp>
#include <aqueduct/core/units.hpp>
#include <aqueduct/emu/detail/evictions.hpp>
#include <aqueduct/emu/events.hpp>
#include <aqueduct/emu/fault_plan.hpp>
#include <aqueduct/emu/gpu_vm.hpp>
#include <aqueduct/emu/host_kernel.hpp>
#include <aqueduct/emu/machine_config.hpp>
#include <aqueduct/emu/queue_engine.hpp>
#include <aqueduct/emu/queues.hpp>
#include <aqueduct/emu/sysfs_writer.hpp>

#include <algorithm>
#include <bitset>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <shared_mutex>
#include <vector>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

namespace aqueduct::emu::detail {

namespace k = abi::kfd;

// The ioctl table below is keyed by the kernel's names (abi/kfd_ioctl.hpp), by their nr: the kernel
// dispatches on the nr alone and takes its own cmd (kfd_ioctl, spec/kfd.md §2.1).
constexpr unsigned nr(unsigned long request) noexcept { return k::ioc_nr(request); }

// x86-64 TASK_SIZE_MAX: what access_ok() accepts (spec/kfd.md §2.3: only out-of-range fails).
inline constexpr std::uint64_t user_va_limit = (1ull << 47) - 4096;
constexpr bool access_ok(std::uint64_t addr, std::uint64_t size) noexcept {
  return addr <= user_va_limit && size <= user_va_limit - addr;
}
// Linux get_order() for 4 KiB pages.
constexpr unsigned page_order(std::uint64_t bytes) noexcept {
  unsigned o = 0;
  while ((page_size << o) < bytes) ++o;
  return o;
}
// device_file prot/flags (Linux UAPI values, kfd/device_file.hpp) to this host's.
inline int host_prot(int prot) noexcept {
  return ((prot & 0x1) ? PROT_READ : 0) | ((prot & 0x2) ? PROT_WRITE : 0) | ((prot & 0x4) ? PROT_EXEC : 0);
}
inline constexpr int uapi_map_fixed = 0x10, uapi_map_anonymous = 0x20, uapi_map_private = 0x02, uapi_map_noreserve = 0x4000;

struct emu_queue {
  queue_info info;
  std::vector<std::uint64_t> refs;  // BO handles whose queue_refcount this queue holds
  int sdma_index = -1;
  process_device* pdd = nullptr;
  std::shared_ptr<queue_engine> engine;  // set before CREATE_QUEUE returns
};

struct device_state {
  machine_config cfg;
  std::vector<gpu_node> gpus;
  sysfs_tree sysfs;
  int kfd_fd = -1;
  std::map<int, std::size_t> render_fds;  // fd → index into gpus
  std::vector<process_device> pdds;       // same order as gpus
  gpu_vm vm;
  event_table events;
  std::shared_ptr<host_backing> event_backing;  // the page behind the slots (kernel's or the user BO's)
  std::uint64_t event_backing_offset = 0;
  std::uint64_t event_page_handle = 0;          // user BO holding the page (FREE → -EPERM)
  bool event_page_is_user = false;
  std::map<std::uint32_t, emu_queue> queues;  // live queues (a dying one is unlisted, its id still held)
  std::bitset<k::max_queues_per_process> queue_slots;
  std::uint32_t total_queues = 0;
  std::uint64_t next_drm_offset = 1ull << 32;  // fake DRM GEM offsets for render-node mmap
  std::shared_ptr<const queue_hooks> hooks = std::make_shared<const queue_hooks>();
  bool runtime_enabled = false;
  std::int32_t xnack = 0;
  mutable std::shared_mutex m;
  std::vector<std::function<void()>> deferred;  // run after `m` is released
  // ---- the engines behind the queues ----
  host_kernel_registry registry;  // the host functions this device's emulated code names
  engine_options engine_opt;      // for engines started from now on (guarded by `m`)
  event_table_notifier irq{events};  // the interrupts engines raise
  gpu_evictions evicted;             // GPUs a memory fault evicted (detail/evictions.hpp)
  std::shared_ptr<fault_injector> faults;  // the machine's fault plan (emu/fault_plan.hpp)

  device_state() = default;
  device_state(const device_state&) = delete;
  device_state& operator=(const device_state&) = delete;
  ~device_state() {
    if (faults) faults->set_reset_action({});
    irq.memory_faults_off();
    for (auto& [id, q] : queues)
      if (q.engine) q.engine->stop(engine_opt.stop_timeout);
    for (auto& [id, q] : queues)
      if (hooks && hooks->destroyed) hooks->destroyed(q.info);
    queues.clear();  // the engines go before the registry and notifier they use
    for (auto& [h, b] : vm.objects()) vm.unplace(b);
    for (auto& [fd, i] : render_fds) ::close(fd);
    if (kfd_fd >= 0) ::close(kfd_fd);
  }

  result<void> init(machine_config c) {
    cfg = std::move(c);
    gpus = build_nodes(cfg);
    AQUEDUCT_TRY(sysfs, sysfs_tree::try_create(cfg, gpus));
    kfd_fd = ::open("/dev/null", O_RDWR | O_CLOEXEC);  // a real fd number that plays /dev/kfd
    if (kfd_fd < 0) return failure(errc::io_error, "emu::device: cannot open /dev/null for the kfd fd");
    faults = std::make_shared<fault_injector>(cfg.faults);  // its reset action: emu::device::try_create
    pdds.resize(gpus.size());
    for (std::size_t i = 0; i < gpus.size(); ++i) {
      pdds[i].node = &gpus[i];
      pdds[i].sdma_used.assign(std::size_t{pdds[i].engines()} * gpus[i].sdma_queues_per_engine, false);
    }
    return ok();
  }

  [[nodiscard]] const gpu_node* find_gpu(std::uint32_t gpu_id) const noexcept {
    for (const auto& g : gpus)
      if (g.gpu_id == gpu_id) return &g;
    return nullptr;
  }
  [[nodiscard]] process_device* find_pdd(std::uint32_t gpu_id) noexcept {
    for (auto& p : pdds)
      if (p.node->gpu_id == gpu_id) return &p;
    return nullptr;
  }

  // ======================================================================== ioctl plumbing
  int ioctl(unsigned long request, void* arg) noexcept {
    try {
      int r;
      std::vector<std::function<void()>> after;
      if (k::ioc_nr(request) == nr(k::amdkfd_ioc_wait_events)) {  // WAIT_EVENTS blocks: never under `m`
        r = dispatch(request, arg);
      } else {
        std::unique_lock lock(m);
        r = dispatch(request, arg);
        after.swap(deferred);
      }
      for (auto& f : after) f();
      return r;
    } catch (const std::bad_alloc&) {
      return -ENOMEM;
    } catch (...) {
      return -EFAULT;
    }
  }

  // kfd_ioctl: the nr picks the handler and the kernel's own cmd replaces the user's; the buffer is
  // max(user size, kernel size), zero-filled; IN copies the user's size in, OUT copies it back.
  template <class T, class F>
  int run(unsigned long kcmd, unsigned long request, void* arg, F&& handler) {
    const std::size_t usize = k::ioc_size(request);
    const std::size_t asize = std::max({usize, std::size_t{k::ioc_size(kcmd)}, sizeof(T)});
    alignas(8) unsigned char small[512];  // every kfd_ioctl.h argument fits: no allocation, as on /dev/kfd
    std::vector<unsigned char> large(asize <= sizeof small ? 0 : asize);  // (the test, not large.empty(): memset's bound)
    unsigned char* const buf = asize <= sizeof small ? static_cast<unsigned char*>(std::memset(small, 0, asize)) : large.data();
    const unsigned dir = k::ioc_dir(kcmd);
    if ((dir & k::ioc_write) && usize && !arg) return -EFAULT;
    if ((dir & k::ioc_write) && usize) std::memcpy(buf, arg, usize);
    T t;
    std::memcpy(&t, buf, sizeof(T));
    int r = handler(t);
    std::memcpy(buf, &t, sizeof(T));
    if ((dir & k::ioc_read) && usize) {
      if (!arg) return -EFAULT;
      std::memcpy(arg, buf, usize);
    }
    return r;
  }

  [[nodiscard]] unsigned command_end() const noexcept {
    // KFD 1.12 added EXPORT_DMABUF, 1.13 RUNTIME_ENABLE and what follows (kfd_ioctl.h's history).
    return cfg.ioctl_minor >= 13   ? k::command_end
           : cfg.ioctl_minor == 12 ? nr(k::amdkfd_ioc_runtime_enable)
                                   : nr(k::amdkfd_ioc_export_dmabuf);
  }

  int dispatch(unsigned long request, void* arg) {
    const unsigned n = k::ioc_nr(request);
    if (n < k::command_start || n >= command_end()) return -ENOTTY;
    switch (n) {
      case nr(k::amdkfd_ioc_get_version): return run<k::get_version_args>(k::amdkfd_ioc_get_version, request, arg, [&](auto& a) {
          a.major_version = k::ioctl_major_version;
          a.minor_version = cfg.ioctl_minor;
          return 0;
        });
      case nr(k::amdkfd_ioc_create_queue): {
        const unsigned long kcmd = cfg.ioctl_minor >= 17 ? k::amdkfd_ioc_create_queue : k::amdkfd_ioc_create_queue_1_11;
        return run<k::create_queue_args>(kcmd, request, arg, [&](auto& a) { return create_queue(a); });
      }
      case nr(k::amdkfd_ioc_destroy_queue): return run<k::destroy_queue_args>(k::amdkfd_ioc_destroy_queue, request, arg,
                                                   [&](auto& a) { return destroy_queue(a.queue_id); });
      case nr(k::amdkfd_ioc_set_memory_policy): return run<k::set_memory_policy_args>(k::amdkfd_ioc_set_memory_policy, request, arg, [&](auto& a) {
          if (a.default_policy > k::cache_policy_noncoherent || a.alternate_policy > k::cache_policy_noncoherent)
            return -EINVAL;
          auto* p = find_pdd(a.gpu_id);
          if (!p) return -EINVAL;
          return p->acquired() ? 0 : -ESRCH;
        });
      case nr(k::amdkfd_ioc_get_clock_counters): return run<k::get_clock_counters_args>(k::amdkfd_ioc_get_clock_counters, request, arg, [&](auto& a) {
          const auto ns = steady_now_ns();
          a.gpu_clock_counter = find_pdd(a.gpu_id) ? emulated_gpu_clock(ns) : 0;  // the engines' counter; 0 if unknown
          a.cpu_clock_counter = ns;
          a.system_clock_counter = ns;
          a.system_clock_freq = 1000000000;
          return 0;
        });
      case nr(k::amdkfd_ioc_update_queue): return run<k::update_queue_args>(k::amdkfd_ioc_update_queue, request, arg,
                                                  [&](auto& a) { return update_queue(a); });
      case nr(k::amdkfd_ioc_create_event): return run<k::create_event_args>(k::amdkfd_ioc_create_event, request, arg,
                                                  [&](auto& a) { return create_event(a); });
      case nr(k::amdkfd_ioc_destroy_event): return run<k::destroy_event_args>(k::amdkfd_ioc_destroy_event, request, arg,
                                                   [&](auto& a) { return events.destroy(a.event_id); });
      case nr(k::amdkfd_ioc_set_event): return run<k::set_event_args>(k::amdkfd_ioc_set_event, request, arg,
                                               [&](auto& a) { return events.set(a.event_id); });
      case nr(k::amdkfd_ioc_reset_event): return run<k::reset_event_args>(k::amdkfd_ioc_reset_event, request, arg,
                                                 [&](auto& a) { return events.reset(a.event_id); });
      case nr(k::amdkfd_ioc_wait_events): return run<k::wait_events_args>(k::amdkfd_ioc_wait_events, request, arg, [&](auto& a) {
          if (a.num_events && !a.events_ptr) return -EFAULT;
          return events.wait(a, reinterpret_cast<k::event_data*>(a.events_ptr));
        });
      case k::nr_dbg_register_deprecated:
      case k::nr_dbg_unregister_deprecated:
      case k::nr_dbg_address_watch_deprecated:
      case k::nr_dbg_wave_control_deprecated: return -EPERM;  // kfd_ioctl_dbg_*_deprecated
      case nr(k::amdkfd_ioc_set_scratch_backing_va): return run<k::set_scratch_backing_va_args>(k::amdkfd_ioc_set_scratch_backing_va, request, arg,
                                                            [&](auto& a) { return bound(a.gpu_id, -ENODEV); });
      case nr(k::amdkfd_ioc_set_trap_handler): return run<k::set_trap_handler_args>(k::amdkfd_ioc_set_trap_handler, request, arg,
                                                      [&](auto& a) { return bound(a.gpu_id, -ESRCH); });
      case nr(k::amdkfd_ioc_get_process_apertures_new): return run<k::get_process_apertures_new_args>(k::amdkfd_ioc_get_process_apertures_new, request, arg,
                                                               [&](auto& a) { return apertures(a); });
      case nr(k::amdkfd_ioc_acquire_vm): return run<k::acquire_vm_args>(k::amdkfd_ioc_acquire_vm, request, arg,
                                                [&](auto& a) { return acquire_vm(a); });
      case nr(k::amdkfd_ioc_alloc_memory_of_gpu): return run<k::alloc_memory_of_gpu_args>(k::amdkfd_ioc_alloc_memory_of_gpu, request, arg,
                                                         [&](auto& a) { return alloc_memory(a); });
      case nr(k::amdkfd_ioc_free_memory_of_gpu): return run<k::free_memory_of_gpu_args>(k::amdkfd_ioc_free_memory_of_gpu, request, arg,
                                                        [&](auto& a) { return free_memory(a.handle); });
      case nr(k::amdkfd_ioc_map_memory_to_gpu): return run<k::map_memory_to_gpu_args>(k::amdkfd_ioc_map_memory_to_gpu, request, arg,
                                                       [&](auto& a) { return map_memory(a, true); });
      case nr(k::amdkfd_ioc_unmap_memory_from_gpu): return run<k::unmap_memory_from_gpu_args>(k::amdkfd_ioc_unmap_memory_from_gpu, request, arg,
                                                           [&](auto& a) {
                                                             k::map_memory_to_gpu_args m2{};
                                                             std::memcpy(&m2, &a, sizeof(a));
                                                             int r = map_memory(m2, false);
                                                             std::memcpy(&a, &m2, sizeof(a));
                                                             return r;
                                                           });
      case nr(k::amdkfd_ioc_set_xnack_mode): return run<k::set_xnack_mode_args>(k::amdkfd_ioc_set_xnack_mode, request, arg, [&](auto& a) {
          if (a.xnack_enabled >= 0) xnack = a.xnack_enabled != 0;
          a.xnack_enabled = xnack;
          return 0;
        });
      case nr(k::amdkfd_ioc_available_memory): return run<k::get_available_memory_args>(k::amdkfd_ioc_available_memory, request, arg, [&](auto& a) {
          auto* p = find_pdd(a.gpu_id);
          if (!p) return -EINVAL;
          a.available = p->node->props.vram_size - p->vram_used;
          return 0;
        });
      case nr(k::amdkfd_ioc_runtime_enable): return run<k::runtime_enable_args>(k::amdkfd_ioc_runtime_enable, request, arg, [&](auto& a) {
          if (a.mode_mask & k::runtime_enable_mode_enable_mask) {
            if (runtime_enabled) return -EEXIST;
            runtime_enabled = true;
          } else {
            runtime_enabled = false;
          }
          a.capabilities_mask = 0;
          return 0;
        });
      default: return -EOPNOTSUPP;  // a KFD ioctl the emulator does not implement (see device.hpp)
    }
  }

  // kfd_bind_process_to_device after a gpu_id lookup: unknown → -EINVAL, no ACQUIRE_VM → `unbound`.
  int bound(std::uint32_t gpu_id, int unbound) {
    auto* p = find_pdd(gpu_id);
    if (!p) return -EINVAL;
    return p->acquired() ? 0 : unbound;
  }

  // ======================================================================== process / VM
  // kfd_ioctl_get_process_apertures_new. The apertures are the gfx9+ layout (LDS at 1 << 48,
  // scratch at 2 << 48 — kfd_flat_memory.c, UNVERIFIED); GPUVM covers the 47-bit user space.
  int apertures(k::get_process_apertures_new_args& a) {
    if (a.num_of_nodes == 0) {
      a.num_of_nodes = static_cast<std::uint32_t>(pdds.size());
      return 0;
    }
    if (!a.kfd_process_device_apertures_ptr) return -EFAULT;
    auto* out = reinterpret_cast<k::process_device_apertures*>(a.kfd_process_device_apertures_ptr);
    const std::uint32_t n = std::min<std::uint32_t>(a.num_of_nodes, static_cast<std::uint32_t>(pdds.size()));
    for (std::uint32_t i = 0; i < n; ++i) {
      k::process_device_apertures ap{};
      ap.lds_base = 1ull << 48;
      ap.lds_limit = (ap.lds_base & 0xFFFFFFFF00000000ull) | 0xFFFFFFFFull;
      ap.scratch_base = 2ull << 48;
      ap.scratch_limit = (ap.scratch_base & 0xFFFFFFFF00000000ull) | 0xFFFFFFFFull;
      ap.gpuvm_base = 1ull << 24;
      ap.gpuvm_limit = user_va_limit - 1;
      ap.gpu_id = pdds[i].node->gpu_id;
      out[i] = ap;
    }
    a.num_of_nodes = n;
    return 0;
  }

  // kfd_ioctl_acquire_vm. The emulator accepts only its own render-node fds, each for its GPU.
  int acquire_vm(const k::acquire_vm_args& a) {
    auto* p = find_pdd(a.gpu_id);
    if (!p) return -EINVAL;
    const int fd = static_cast<int>(a.drm_fd);
    auto it = render_fds.find(fd);
    if (it == render_fds.end() || &gpus[it->second] != p->node) return -EINVAL;  // fget fails / not this GPU's
    if (p->acquired()) return p->drm_fd == fd ? 0 : -EBUSY;
    p->drm_fd = fd;
    return 0;
  }

  // kfd_ioctl_alloc_memory_of_gpu + amdgpu_amdkfd_gpuvm_alloc_memory_of_gpu.
  int alloc_memory(k::alloc_memory_of_gpu_args& a) {
    if (a.size == 0) return -EINVAL;
    auto* p = find_pdd(a.gpu_id);
    if (!p) return -EINVAL;
    if (!p->acquired()) return -ENODEV;  // kfd_bind_process_to_device: no drm_priv → ERR_PTR(-ENODEV)
    const std::uint32_t domain = a.flags & k::alloc_mem_domain_mask;
    buffer_object b;
    b.mapped_size = align_up(a.size, page_size);
    if (domain & k::alloc_mem_flags_doorbell) {
      if (a.size != p->node->doorbell_slice) return -EINVAL;
      if (!p->ensure_doorbells()) return -ENOMEM;
      b.backing = p->doorbells;
    } else if (domain & k::alloc_mem_flags_mmio_remap) {
      if (a.size != page_size) return -EINVAL;
      if (!p->mmio) p->mmio = host_backing::create(page_size);
      if (!p->mmio) return -ENOMEM;
      b.backing = p->mmio;
    } else if (!(domain & (k::alloc_mem_flags_vram | k::alloc_mem_flags_gtt | k::alloc_mem_flags_userptr))) {
      return -EINVAL;
    }
    if (domain & k::alloc_mem_flags_userptr) {
      if (a.mmap_offset == 0) return -EINVAL;
      if (a.mmap_offset != a.va_addr) return -EINVAL;  // emulator: GPU VA must equal the CPU address
    }
    // Emulator placement rules (the kernel would fail later, at MAP, for a bad or taken VA).
    if (a.va_addr == 0 || a.va_addr % page_size || !access_ok(a.va_addr, b.mapped_size)) return -EINVAL;
    if (vm.overlaps_any(a.va_addr, b.mapped_size)) return -EINVAL;
    if ((domain & k::alloc_mem_flags_vram) && p->vram_used + b.mapped_size > p->node->props.vram_size) return -ENOMEM;
    if (faults->fire(fault_kind::alloc)) return -faults->next_errno(fault_kind::alloc);
    if ((domain & (k::alloc_mem_flags_vram | k::alloc_mem_flags_gtt)) && !b.backing) {
      b.backing = host_backing::create(b.mapped_size);
      if (!b.backing) return -ENOMEM;
    }
    // handle = gpu_id << 32 | lowest free idr of this device
    std::uint32_t idr = 0;
    while (vm.find((std::uint64_t{a.gpu_id} << 32) | idr)) ++idr;
    b.handle = (std::uint64_t{a.gpu_id} << 32) | idr;
    b.gpu_id = a.gpu_id;
    b.va = a.va_addr;
    b.size = a.size;
    b.flags = a.flags;
    if (int r = vm.place(b); r != 0) return r;
    // DOORBELL: the kernel returns the doorbells' bus address (kfd_get_process_doorbells), not a
    // kfd mmap offset; userspace maps the slice at KFD_MMAP_TYPE_DOORBELL | gpu_id << 46 itself.
    // Ours is a fake, page-aligned bus address that is no valid kfd mmap offset (type bits 0).
    if (domain & k::alloc_mem_flags_doorbell) b.mmap_offset = 0xF000000000ull + std::uint64_t{p->node->node_id} * 0x100000;
    else if (domain & k::alloc_mem_flags_mmio_remap) b.mmap_offset = k::make_mmap_offset(k::mmap_type_mmio, a.gpu_id);
    else if (domain & k::alloc_mem_flags_userptr) b.mmap_offset = a.mmap_offset;
    else {
      b.mmap_offset = next_drm_offset;
      next_drm_offset += b.mapped_size + page_size;
    }
    if (domain & k::alloc_mem_flags_vram) p->vram_used += b.mapped_size;
    a.handle = b.handle;
    a.mmap_offset = b.mmap_offset;
    vm.add(std::move(b));
    return 0;
  }

  // kfd_ioctl_free_memory_of_gpu.
  int free_memory(std::uint64_t handle) {
    if (event_page_is_user && handle == event_page_handle) return -EPERM;
    auto* p = find_pdd(static_cast<std::uint32_t>(handle >> 32));
    if (!p) return -EINVAL;
    auto* b = vm.find(handle);
    if (!b) return -EINVAL;
    if (b->queue_refcount) return -EBUSY;     // 6.12+: a queue uses it
    if (!b->mapped_gpus.empty()) return -EBUSY;  // still mapped (amdgpu_amdkfd_gpuvm_free_memory_of_gpu)
    if (b->flags & k::alloc_mem_flags_vram) p->vram_used -= b->mapped_size;
    vm.unplace(*b);
    vm.remove(handle);
    return 0;
  }

  // kfd_ioctl_map_memory_to_gpu / kfd_ioctl_unmap_memory_from_gpu (same argument layout). MAP
  // binds the process to the owner and each peer (-ENODEV before ACQUIRE_VM); UNMAP binds nothing.
  // An unknown handle is -ENOMEM for both (kfd_process_device_translate_handle fails).
  int map_memory(k::map_memory_to_gpu_args& a, bool map) {
    if (a.n_devices == 0 || a.n_success > a.n_devices) return -EINVAL;
    if (!a.device_ids_array_ptr) return -EFAULT;
    const auto* ids = reinterpret_cast<const std::uint32_t*>(a.device_ids_array_ptr);
    auto* p = find_pdd(static_cast<std::uint32_t>(a.handle >> 32));
    if (!p) return -EINVAL;
    if (map && !p->acquired()) return -ENODEV;
    auto* b = vm.find(a.handle);
    if (!b) return -ENOMEM;
    if (!map && b->queue_refcount) return -EBUSY;  // 6.12+: a queue uses it (bo_va queue_refcount)
    for (std::uint32_t i = a.n_success; i < a.n_devices; ++i) {
      auto* peer = find_pdd(ids[i]);
      if (!peer) return -EINVAL;
      if (map && !peer->acquired()) return -ENODEV;
      if (map) {
        if (!b->mapped_to(ids[i])) b->mapped_gpus.push_back(ids[i]);
      } else {
        if (!b->mapped_to(ids[i])) return -EINVAL;  // "BO wasn't actually mapped"
        std::erase(b->mapped_gpus, ids[i]);
      }
      a.n_success = i + 1;
    }
    return 0;
  }

  // ======================================================================== queues
  // kfd_queue_buffer_get: the mapping containing addr's page must start there and, when
  // expected >= one page, end exactly at addr + expected - 1 (spec/kfd.md §2.5).
  int buffer_get(std::uint32_t gpu, std::uint64_t addr, std::uint64_t expected, std::vector<std::uint64_t>& refs) {
    buffer_object* b = vm.lookup_mapping(gpu, addr);
    if (!b) return -EINVAL;
    const std::uint64_t first = addr / page_size, npages = expected / page_size;
    if (first != b->va / page_size) return -EINVAL;
    if (npages != 0 && first + npages - 1 != b->end() / page_size - 1) return -EINVAL;
    refs.push_back(b->handle);
    return 0;
  }

  int create_queue(k::create_queue_args& a) {
    // ---- set_queue_properties_from_user (spec/kfd.md §2.3)
    if ((a.queue_percentage & 0xFF) > k::max_queue_percentage) return -EINVAL;
    if (a.queue_priority > k::max_queue_priority) return -EINVAL;
    if (a.ring_base_address && !access_ok(a.ring_base_address, sizeof(std::uint64_t))) return -EFAULT;
    if (a.ring_size && !is_pow2(a.ring_size)) return -EINVAL;
    if (a.ring_size < k::min_queue_ring_size) a.ring_size = k::min_queue_ring_size;  // written back
    if (!access_ok(a.read_pointer_address, sizeof(std::uint32_t))) return -EFAULT;
    if (!access_ok(a.write_pointer_address, sizeof(std::uint32_t))) return -EFAULT;
    if (a.eop_buffer_address && !access_ok(a.eop_buffer_address, sizeof(std::uint32_t))) return -EFAULT;
    if (a.ctx_save_restore_address && !access_ok(a.ctx_save_restore_address, sizeof(std::uint32_t))) return -EFAULT;
    std::uint32_t type = a.queue_type;
    const bool by_eng = type == k::queue_type_sdma_by_eng_id && cfg.ioctl_minor >= 17;
    if (type > k::queue_type_sdma_xgmi && !by_eng) return -k::enotsupp;
    const bool compute = type == k::queue_type_compute || type == k::queue_type_compute_aql;
    // ---- kfd_ioctl_create_queue (spec/kfd.md §2.4)
    process_device* p = find_pdd(a.gpu_id);
    if (!p) return -EINVAL;
    if (!p->acquired()) return -ESRCH;
    const gpu_node& n = *p->node;
    if (by_eng && a.sdma_engine_id >= p->engines()) return -EINVAL;
    if (!p->ensure_doorbells()) return -ENOMEM;
    // ---- MES (GFX11+, MES API >= 2 assumed): the wptr BO is mapped into GART, so it must be in
    // the VM, at most one page, and allocated on this device. Before 6.12 kfd_ioctl_create_queue
    // checked it here; 6.12+ checks the device in init_user_queue, after the queue-count checks.
    const bool mes = n.props.gfx_target_version >= 110000;
    if (mes && !cfg.kernel.validates_queue_buffers()) {
      const buffer_object* w = vm.lookup_mapping(a.gpu_id, a.write_pointer_address);
      if (!w || w->mapped_size > page_size || w->gpu_id != a.gpu_id) return -EINVAL;
    }
    // ---- kfd_queue_acquire_buffers (6.12+, spec/kfd.md §2.5)
    std::vector<std::uint64_t> refs;
    if (cfg.kernel.validates_queue_buffers()) {
      if (int r = buffer_get(a.gpu_id, a.write_pointer_address, page_size, refs)) return r;
      if (int r = buffer_get(a.gpu_id, a.read_pointer_address, page_size, refs)) return r;
      if (int r = buffer_get(a.gpu_id, a.ring_base_address, a.ring_size, refs)) return r;
      if (compute) {
        if (a.eop_buffer_address) {
          if (a.eop_buffer_size != n.cwsr.eop_buffer_size) return -EINVAL;
          if (int r = buffer_get(a.gpu_id, a.eop_buffer_address, a.eop_buffer_size, refs)) return r;
        }
        if (a.ctl_stack_size != n.cwsr.ctl_stack_size) return -EINVAL;
        if (a.ctx_save_restore_size < n.cwsr.cwsr_size) return -EINVAL;
        const std::uint64_t total =
            align_up((std::uint64_t{a.ctx_save_restore_size} + n.cwsr.debug_memory_size) * n.props.num_xcc, page_size);
        // No SVM in the emulator, so the kernel's SVM fallback always fails (-EINVAL).
        if (int r = buffer_get(a.gpu_id, a.ctx_save_restore_address, total, refs)) return r;
      }
    }
    // ---- pqm_create_queue / create_queue_cpsch (spec/kfd.md §2.6)
    if (p->queue_count >= n.queue_limit) return -ENOSPC;
    int slot = -1;
    for (std::size_t i = 0; i < queue_slots.size(); ++i)
      if (!queue_slots[i]) {
        slot = static_cast<int>(i);
        break;
      }
    if (slot < 0) return -ENOMEM;
    if (mes && cfg.kernel.validates_queue_buffers() && vm.find(refs.front())->gpu_id != a.gpu_id)
      return -EINVAL;  // init_user_queue: "Queue memory allocated to wrong device"
    if (total_queues >= cfg.max_queues_per_device) return -EPERM;
    process_device::sdma_slot sdma{};
    const bool is_sdma = !compute;
    if (is_sdma) {
      const std::uint32_t kind = by_eng ? k::queue_type_sdma_by_eng_id : type;
      if (!p->find_sdma(kind, a.sdma_engine_id, sdma)) return -ENOMEM;
      if (by_eng) type = sdma.engine < n.props.num_sdma_engines ? k::queue_type_sdma : k::queue_type_sdma_xgmi;
    }
    std::uint32_t doorbell_id = static_cast<std::uint32_t>(slot);
    if (cfg.faults.doorbells != 0 && p->doorbell_used.count() >= cfg.faults.doorbells) return -EBUSY;
    if (p->soc15()) {
      if (is_sdma) {
        doorbell_id = process_device::sdma_doorbell(sdma);
      } else {
        const int id = p->find_cp_doorbell();
        if (id < 0) return -EBUSY;
        doorbell_id = static_cast<std::uint32_t>(id);
      }
    }
    if (cfg.queue_create_fault)
      if (int r = cfg.queue_create_fault(a); r != 0) return r;
    if (faults->fire(fault_kind::create_queue)) return -faults->next_errno(fault_kind::create_queue);
    // ---- commit
    emu_queue q;
    q.pdd = p;
    q.refs = std::move(refs);
    for (auto h : q.refs) ++vm.find(h)->queue_refcount;
    if (is_sdma) {
      p->sdma_used[sdma.index] = true;
      q.sdma_index = static_cast<int>(sdma.index);
    }
    if (p->soc15()) p->doorbell_used[doorbell_id] = true;
    queue_slots[static_cast<std::size_t>(slot)] = true;
    ++p->queue_count;
    ++total_queues;
    queue_info& i = q.info;
    i.queue_id = static_cast<std::uint32_t>(slot);
    i.gpu_id = a.gpu_id;
    i.gfx_target_version = n.props.gfx_target_version;
    i.type = type;
    i.ring_base_address = a.ring_base_address;
    i.ring_size = a.ring_size;
    i.read_pointer_address = a.read_pointer_address;
    i.write_pointer_address = a.write_pointer_address;
    i.eop_buffer_address = a.eop_buffer_address;
    i.eop_buffer_size = a.eop_buffer_size;
    i.ctx_save_restore_address = a.ctx_save_restore_address;
    i.ctx_save_restore_size = a.ctx_save_restore_size;
    i.ctl_stack_size = a.ctl_stack_size;
    i.queue_percentage = a.queue_percentage & 0xFF;
    i.pm4_target_xcc = (a.queue_percentage >> 8) & 0xFF;
    i.queue_priority = a.queue_priority;
    i.sdma_engine = sdma.engine;
    i.sdma_queue = sdma.queue;
    i.doorbell_id = doorbell_id;
    i.doorbell_bytes = n.doorbell_bytes;
    // SOC15: in-slice offset = doorbell id × 8; before SOC15 userspace adds queue_id × 4 (spec §3.2)
    i.doorbell_offset = k::make_mmap_offset(k::mmap_type_doorbell, a.gpu_id, p->soc15() ? doorbell_id * 8ull : 0);
    i.doorbell = static_cast<unsigned char*>(p->doorbells->data()) + std::uint64_t{doorbell_id} * n.doorbell_bytes;
    i.active = i.ring_size > 0 && i.ring_base_address != 0 && i.queue_percentage > 0;
    a.queue_id = i.queue_id;
    a.doorbell_offset = i.doorbell_offset;
    const queue_info info = i;
    // The engine starts from what the ioctl accepted: userspace prepared the memory before.
    q.engine = start_engine(info);
    queues.emplace(i.queue_id, std::move(q));
    if (auto h = hooks; h->created) deferred.push_back([h, info] { h->created(info); });
    return 0;
  }

  // A queue's engine: its port exists from the commit; the engine itself is launched after unlock
  // (deferred, before the ioctl returns), because checking its memory takes `m` (locked_vm_view) and its
  // threads start at once.
  std::shared_ptr<queue_engine> start_engine(const queue_info& info) {
    auto e = queue_engine::create(std::make_unique<locked_vm_view>(m, vm, info.gpu_id), faults);
    const gpu_node* node = find_gpu(info.gpu_id);
    if (!evicted.evicted(info.gpu_id))  // created evicted: it never runs
      deferred.push_back([this, e, info, node, opt = engine_opt] { e->launch(info, *node, irq, registry, opt); });
    return e;
  }

  int destroy_queue(std::uint32_t id) {
    auto it = queues.find(id);
    if (it == queues.end()) return -EINVAL;
    auto dying = std::make_shared<emu_queue>(std::move(it->second));
    queues.erase(it);  // unlisted now; its id, doorbell and SDMA slot stay taken until the engine stopped
    const queue_info info = dying->info;
    // Inside DESTROY_QUEUE, unlocked: the engine stops touching the queue, then its resources go.
    deferred.push_back([this, dying, timeout = engine_opt.stop_timeout] {
      if (dying->engine) dying->engine->stop(timeout);
      dying->engine.reset();
      std::unique_lock lock(m);
      release_queue(*dying);
    });
    if (auto h = hooks; h->destroyed) deferred.push_back([h, info] { h->destroyed(info); });
    return 0;
  }
  void release_queue(emu_queue& q) {
    for (auto h : q.refs)
      if (auto* b = vm.find(h)) --b->queue_refcount;
    if (q.sdma_index >= 0) q.pdd->sdma_used[static_cast<std::size_t>(q.sdma_index)] = false;
    if (q.pdd->soc15()) q.pdd->doorbell_used[q.info.doorbell_id] = false;
    queue_slots[q.info.queue_id] = false;
    --q.pdd->queue_count;
    --total_queues;
  }

  // kfd_ioctl_update_queue + pqm_update_queue_properties (IOW: the clamp is not copied back).
  int update_queue(k::update_queue_args& a) {
    if ((a.queue_percentage & 0xFF) > k::max_queue_percentage) return -EINVAL;
    if (a.queue_priority > k::max_queue_priority) return -EINVAL;
    if (a.ring_base_address && !access_ok(a.ring_base_address, sizeof(std::uint64_t))) return -EFAULT;
    if (a.ring_size && !is_pow2(a.ring_size)) return -EINVAL;
    if (a.ring_size < k::min_queue_ring_size) a.ring_size = k::min_queue_ring_size;
    auto it = queues.find(a.queue_id);
    if (it == queues.end()) return -EFAULT;  // "No queue %d exists for update operation"
    emu_queue& q = it->second;
    if (cfg.kernel.validates_queue_buffers() && a.ring_base_address && a.ring_size) {
      std::vector<std::uint64_t> ring;
      if (int r = buffer_get(q.info.gpu_id, a.ring_base_address, a.ring_size, ring)) return r;
      // drop the old ring reference (the third one taken at creation: wptr, rptr, ring)
      if (q.refs.size() >= 3) {
        if (auto* old = vm.find(q.refs[2])) --old->queue_refcount;
        q.refs[2] = ring.front();
      } else {
        q.refs.push_back(ring.front());
      }
      ++vm.find(ring.front())->queue_refcount;
    }
    q.info.ring_base_address = a.ring_base_address;
    q.info.ring_size = a.ring_size;
    q.info.queue_percentage = a.queue_percentage & 0xFF;
    q.info.queue_priority = a.queue_priority;
    q.info.active = q.info.ring_size > 0 && q.info.ring_base_address != 0 && q.info.queue_percentage > 0;
    const queue_info info = q.info;
    if (q.engine && !evicted.evicted(info.gpu_id)) {
      const gpu_node* node = find_gpu(info.gpu_id);
      deferred.push_back([this, e = q.engine, info, node, opt = engine_opt] { e->restart(info, *node, irq, registry, opt); });
    }
    if (auto h = hooks; h->updated) deferred.push_back([h, info] { h->updated(info); });
    return 0;
  }

  // ======================================================================== events
  // kfd_ioctl_create_event: a non-zero event_page_offset is the handle of a userspace BO that
  // becomes the signal page (dGPU path); otherwise the kernel allocates the page on the first
  // signal event and userspace mmaps it at KFD_MMAP_TYPE_EVENTS (spec/kfd.md §5.3).
  int create_event(k::create_event_args& a) {
    if (a.event_page_offset) {
      if (events.has_page()) return -EINVAL;
      auto* p = find_pdd(static_cast<std::uint32_t>(a.event_page_offset >> 32));
      if (!p) return -EINVAL;
      if (!p->acquired()) return -ENODEV;
      auto* b = vm.find(a.event_page_offset);
      if (!b || !b->backing) return -EINVAL;
      event_backing = b->backing;
      event_backing_offset = b->backing_offset;
      event_page_handle = b->handle;
      event_page_is_user = true;
      if (int r = events.set_page(reinterpret_cast<std::uint64_t*>(static_cast<unsigned char*>(b->backing->data()) +
                                                                    b->backing_offset),
                                  b->size, true))
        return r;
    }
    const bool signal = a.event_type == k::event_signal || a.event_type == k::event_debug_event;
    if (signal && !events.has_page()) {
      event_backing = host_backing::create(k::event_page_size);
      if (!event_backing) return -ENOMEM;
      event_backing_offset = 0;
      if (int r = events.set_page(static_cast<std::uint64_t*>(event_backing->data()), k::event_page_size, false))
        return r;
    }
    return events.create(a);
  }

  // ======================================================================== mmap
  mapping mmap(void* addr, std::size_t length, int prot, int flags, int fd, std::uint64_t offset) noexcept {
    try {
      if (length == 0) return {nullptr, EINVAL};
      const std::uint64_t len = align_up(length, page_size);
      const bool fixed = flags & uapi_map_fixed;
      std::unique_lock lock(m);
      if (fd == -1 && (flags & uapi_map_anonymous)) {  // address-space reservation
        int hf = MAP_ANONYMOUS | ((flags & uapi_map_private) ? MAP_PRIVATE : MAP_SHARED);
        if (fixed) hf |= MAP_FIXED;
        if (flags & uapi_map_noreserve) hf |= MAP_NORESERVE;
        void* r = ::mmap(addr, len, host_prot(prot), hf, -1, 0);
        if (r == MAP_FAILED) return {nullptr, errno};
        vm.note_unmap(reinterpret_cast<std::uint64_t>(r), len);  // replaced whatever was there
        vm.note_reservation(reinterpret_cast<std::uint64_t>(r), len);
        return {r, 0};
      }
      std::shared_ptr<host_backing> backing;
      std::uint64_t boff = 0;
      buffer_object* bo = nullptr;
      if (fd == kfd_fd) {  // kfd_mmap (spec/kfd.md §3.2)
        const std::uint64_t type = k::mmap_type_of(offset);
        process_device* p = find_pdd(k::mmap_gpu_id_of(offset));
        if (type == k::mmap_type_doorbell) {
          if (!p) return {nullptr, ENODEV};
          if (len != p->node->doorbell_slice) return {nullptr, EINVAL};
          if (!p->ensure_doorbells()) return {nullptr, ENOMEM};
          backing = p->doorbells;
        } else if (type == k::mmap_type_events) {
          if (page_order(len) != page_order(k::event_page_size)) return {nullptr, EINVAL};
          if (!event_backing) return {nullptr, EINVAL};  // "Signal page could not be found"
          if (len > event_backing->size() - event_backing_offset) return {nullptr, EINVAL};
          backing = event_backing;
          boff = event_backing_offset;
          events.note_mmapped(len);
        } else if (type == k::mmap_type_mmio) {
          if (!p) return {nullptr, ENODEV};
          if (len != page_size) return {nullptr, EINVAL};
          if (!p->mmio) p->mmio = host_backing::create(page_size);
          if (!p->mmio) return {nullptr, ENOMEM};
          backing = p->mmio;
        } else {  // RESERVED_MEM (CWSR TBA/TMA): not emulated
          if (!p) return {nullptr, ENODEV};
          return {nullptr, EINVAL};
        }
      } else if (auto it = render_fds.find(fd); it != render_fds.end()) {  // DRM GEM mmap of a BO
        bo = vm.find_by_mmap_offset(offset);
        if (!bo || bo->gpu_id != gpus[it->second].gpu_id || len > bo->mapped_size) return {nullptr, EINVAL};
        backing = bo->backing;
        boff = bo->backing_offset;
      } else {
        return {nullptr, EBADF};
      }
      if (fixed) vm.note_unmap(reinterpret_cast<std::uint64_t>(addr), len);
      void* r = backing->map_at(addr, len, boff, host_prot(prot), fixed);
      if (!r) return {nullptr, errno};
      // A CPU mapping of a BO's own memory at its va (render node, or the doorbell slice on the kfd
      // fd at the doorbell BO's va) is also the GPU's view of it again.
      const auto at = reinterpret_cast<std::uint64_t>(r);
      for (auto& [h, b] : vm.objects())
        if (b.backing == backing && b.backing_offset == boff && b.va == at && b.mapped_size <= len) b.placed = true;
      return {r, 0};
    } catch (...) {
      return {nullptr, ENOMEM};
    }
  }

  int munmap(void* addr, std::size_t length) noexcept {
    const auto a = reinterpret_cast<std::uint64_t>(addr);
    if (length == 0 || a % page_size) return -EINVAL;
    std::unique_lock lock(m);
    if (::munmap(addr, length) != 0) return -errno;
    try {
      vm.note_unmap(a, align_up(length, page_size));
    } catch (...) {
      return -ENOMEM;
    }
    return 0;
  }

  int open_render_node(std::uint32_t minor) noexcept {
    std::unique_lock lock(m);
    for (std::size_t i = 0; i < gpus.size(); ++i)
      if (gpus[i].drm_render_minor == minor) {
        const int fd = ::open("/dev/null", O_RDWR | O_CLOEXEC);
        if (fd < 0) return -errno;
        try {
          render_fds.emplace(fd, i);
        } catch (...) {
          ::close(fd);
          return -ENOMEM;
        }
        return fd;
      }
    return -ENOENT;
  }
  int close_render_node(int fd) noexcept {
    std::unique_lock lock(m);
    auto it = render_fds.find(fd);
    if (it == render_fds.end()) return -EBADF;
    ::close(fd);
    render_fds.erase(it);
    return 0;
  }
};

}  // namespace aqueduct::emu::detail
