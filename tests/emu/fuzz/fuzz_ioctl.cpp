// libFuzzer target: random ioctl argument structs on the emulated KFD device (emu::device).
// Input: records [nr][size][size bytes of argument]; each becomes one ioctl with the command's
// real direction bits and the record's size (the kernel's ioctl plumbing: size zero-extended, the
// user's size copied back). Every call must return 0 or a negative errno — never crash, touch
// memory it was not given (ASan) or hang. The three user pointers the KFD ABI carries
// (WAIT_EVENTS events_ptr, GET_PROCESS_APERTURES_NEW's array, MAP/UNMAP device_ids_array_ptr) are
// pointed at a scratch buffer with their counts clamped to it — a real kernel copies them with
// copy_from_user, which an in-process device cannot do for arbitrary pointers. WAIT_EVENTS waits
// at most 5 ms. Each input gets a fresh device (mi300x + rx7900xtx) with the VM acquired.
#include <aqueduct/abi/kfd_ioctl.hpp>
#include <aqueduct/emu/device.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace k = aqueduct::abi::kfd;
namespace emu = aqueduct::emu;

namespace {
// The command of each ioctl number (0: unknown; sent as IOWR of the record's size).
unsigned long command_of(unsigned nr) {
  static constexpr unsigned long table[] = {
      0, k::amdkfd_ioc_get_version, k::amdkfd_ioc_create_queue, k::amdkfd_ioc_destroy_queue,
      k::amdkfd_ioc_set_memory_policy, k::amdkfd_ioc_get_clock_counters, k::amdkfd_ioc_get_process_apertures,
      k::amdkfd_ioc_update_queue, k::amdkfd_ioc_create_event, k::amdkfd_ioc_destroy_event, k::amdkfd_ioc_set_event,
      k::amdkfd_ioc_reset_event, k::amdkfd_ioc_wait_events, 0, 0, 0, 0, k::amdkfd_ioc_set_scratch_backing_va,
      k::amdkfd_ioc_get_tile_config, k::amdkfd_ioc_set_trap_handler, k::amdkfd_ioc_get_process_apertures_new,
      k::amdkfd_ioc_acquire_vm, k::amdkfd_ioc_alloc_memory_of_gpu, k::amdkfd_ioc_free_memory_of_gpu,
      k::amdkfd_ioc_map_memory_to_gpu, k::amdkfd_ioc_unmap_memory_from_gpu, k::amdkfd_ioc_set_cu_mask,
      k::amdkfd_ioc_get_queue_wave_state, 0, 0, k::amdkfd_ioc_alloc_queue_gws, k::amdkfd_ioc_smi_events, 0,
      k::amdkfd_ioc_set_xnack_mode, 0, k::amdkfd_ioc_available_memory, k::amdkfd_ioc_export_dmabuf,
      k::amdkfd_ioc_runtime_enable};
  return nr < std::size(table) ? table[nr] : 0;
}
constexpr unsigned long with_size(unsigned long cmd, unsigned nr, std::size_t size) noexcept {
  constexpr unsigned long size_mask = 0x3FFFul << 16;
  if (cmd == 0) cmd = (3ul << 30) | (std::uint64_t{'K'} << 8) | nr;  // IOWR
  return (cmd & ~size_mask) | ((static_cast<unsigned long>(size) & 0x3FFF) << 16);
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto dev = emu::device::try_create("mi300x,rx7900xtx");
  if (!dev) std::abort();
  // What a runtime does first: acquire each GPU's VM with its render node.
  for (const auto& g : dev->gpus()) {
    k::acquire_vm_args a{};
    a.gpu_id = g.gpu_id;
    a.drm_fd = static_cast<std::uint32_t>(dev->open_render_node(g.drm_render_minor));
    (void)dev->ioctl(k::amdkfd_ioc_acquire_vm, &a);
  }
  alignas(64) static unsigned char scratch[64 * 1024];
  std::vector<unsigned char> arg;
  for (int calls = 0; size >= 2 && calls < 16; ++calls) {
    const unsigned nr = data[0] % 0x28;
    const std::size_t n = std::min<std::size_t>(data[1], size - 2);
    arg.assign(std::max<std::size_t>(n, 128), 0);
    std::memcpy(arg.data(), data + 2, n);
    data += 2 + n;
    size -= 2 + n;
    auto put = [&](std::size_t off, auto v) {
      if (off + sizeof v <= n) std::memcpy(arg.data() + off, &v, sizeof v);
    };
    auto get32 = [&](std::size_t off) {
      std::uint32_t v = 0;
      if (off + 4 <= n) std::memcpy(&v, arg.data() + off, 4);
      return v;
    };
    const auto scratch_va = reinterpret_cast<std::uint64_t>(scratch);
    switch (nr) {
      case 0x0C:  // wait_events: events_ptr @0, num_events @8, wait_for_all @12, timeout @16
        put(0, scratch_va);
        put(8, std::min<std::uint32_t>(get32(8), sizeof scratch / sizeof(k::event_data)));
        put(16, std::min<std::uint32_t>(get32(16), 5));
        break;
      case 0x14:  // get_process_apertures_new: array @0, num_of_nodes @8
        put(0, scratch_va);
        put(8, std::min<std::uint32_t>(get32(8), sizeof scratch / sizeof(k::process_device_apertures)));
        break;
      case 0x18:
      case 0x19:  // map/unmap: handle @0, device_ids_array_ptr @8, n_devices @16
        put(8, scratch_va);
        put(16, std::min<std::uint32_t>(get32(16), sizeof scratch / 4));
        break;
      default:
        break;
    }
    const int r = dev->ioctl(with_size(command_of(nr), nr, n), arg.data());
    if (r > 0) std::abort();  // an ioctl returns 0 or -errno
  }
  return 0;
}
