// aqueduct/emu/queues.hpp — queues of the emulated device as the packet processors see them, and
// the per-GPU process state the kernel keeps for them (doorbell slice and ids, SDMA slots).
//
// Layer: emu. `queue_info` is what a packet processor (AQL/PM4/SDMA, later issues) needs to run a
// queue: ring, read/write pointers, doorbell (the emulator's own view of the doorbell word, which
// userspace writes through its mapping of the same page), EOP and CWSR areas. `queue_hooks` are
// called by emu::device after CREATE_QUEUE / UPDATE_QUEUE succeed and when a queue is destroyed
// (before DESTROY_QUEUE returns: a processor must stop touching the queue's memory in it).
// Doorbell layout (SOC15, spec/kfd.md §3.3): 1024 ids per process and GPU; ids 0x100-0x1FF and
// their +512 mirror are reserved for SDMA (engine e's base = 0x100 + 16e — the emulator's choice,
// the real ASIC tables are UNVERIFIED); SDMA queue q of an engine takes base + (q & 1) * 512 +
// (q >> 1); CP queues take the first free other id.
// Thread safety: plain data; emu::device serialises access.
#pragma once

#include <aqueduct/abi/kfd_ioctl.hpp>
#include <aqueduct/emu/gpu_vm.hpp>
#include <aqueduct/emu/sysfs_writer.hpp>

#include <bitset>
#include <cstring>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace aqueduct::emu {

struct queue_info {
  std::uint32_t queue_id = 0;
  std::uint32_t gpu_id = 0;
  std::uint32_t gfx_target_version = 0;
  // abi::kfd::queue_type_compute (PM4), _compute_aql, _sdma or _sdma_xgmi (BY_ENG_ID resolved).
  std::uint32_t type = 0;
  std::uint64_t ring_base_address = 0;
  std::uint32_t ring_size = 0;  // bytes, after the kernel's 1024 clamp
  std::uint64_t read_pointer_address = 0;
  std::uint64_t write_pointer_address = 0;
  std::uint64_t eop_buffer_address = 0;
  std::uint64_t eop_buffer_size = 0;
  std::uint64_t ctx_save_restore_address = 0;
  std::uint32_t ctx_save_restore_size = 0;
  std::uint32_t ctl_stack_size = 0;
  std::uint32_t queue_percentage = 0;  // low byte of the request
  std::uint32_t pm4_target_xcc = 0;    // bits 15:8 of queue_percentage
  std::uint32_t queue_priority = 0;
  std::uint32_t sdma_engine = 0;       // absolute engine (XGMI engines follow the PCIe ones)
  std::uint32_t sdma_queue = 0;        // queue index on that engine
  std::uint32_t doorbell_id = 0;
  std::uint64_t doorbell_offset = 0;   // what CREATE_QUEUE returned
  std::uint32_t doorbell_bytes = 8;    // 8 on SOC15 (64-bit doorbell), 4 before
  void* doorbell = nullptr;            // emulator's view of this queue's doorbell word
  // QUEUE_IS_ACTIVE: ring size and address non-zero and percentage > 0 (spec/kfd.md §2.6).
  bool active = false;

  [[nodiscard]] bool is_sdma() const noexcept {
    return type == abi::kfd::queue_type_sdma || type == abi::kfd::queue_type_sdma_xgmi;
  }
  [[nodiscard]] bool is_aql() const noexcept { return type == abi::kfd::queue_type_compute_aql; }
};

struct queue_hooks {
  std::function<void(const queue_info&)> created;
  std::function<void(const queue_info&)> updated;
  std::function<void(const queue_info&)> destroyed;
};

// What the kernel keeps per process and GPU (struct kfd_process_device, the parts we model).
struct process_device {
  const gpu_node* node = nullptr;
  int drm_fd = -1;                          // ACQUIRE_VM's render node; -1 = not acquired
  std::shared_ptr<host_backing> doorbells;  // the process doorbell slice (lazy)
  std::shared_ptr<host_backing> mmio;       // the MMIO remap page (HDP flush registers), lazy
  std::bitset<abi::kfd::max_queues_per_process> doorbell_used;
  std::vector<bool> sdma_used;              // PCIe engines' slots, then XGMI engines' slots
  std::uint32_t queue_count = 0;
  std::uint32_t next_idr = 0;
  std::uint64_t vram_used = 0;

  [[nodiscard]] bool acquired() const noexcept { return drm_fd >= 0; }
  [[nodiscard]] bool soc15() const noexcept { return node->props.gfx_target_version >= 90000; }
  [[nodiscard]] std::uint32_t engines() const noexcept {
    return node->props.num_sdma_engines + node->props.num_sdma_xgmi_engines;
  }
  [[nodiscard]] static std::uint32_t sdma_doorbell_base(std::uint32_t engine) noexcept { return 0x100 + 16 * engine; }
  [[nodiscard]] static bool reserved_doorbell(std::uint32_t id) noexcept {
    const std::uint32_t low = id & 511;
    return low >= 0x100 && low < 0x200;
  }
  // Lazily allocates the doorbell slice; false when out of memory.
  bool ensure_doorbells() {
    if (doorbells) return true;
    doorbells = host_backing::create(node->doorbell_slice);
    if (!doorbells) return false;
    std::memset(doorbells->data(), 0, node->doorbell_slice);
    return true;
  }
  // First free CP doorbell id (SOC15), or -1.
  [[nodiscard]] int find_cp_doorbell() const noexcept {
    for (std::uint32_t id = 0; id < abi::kfd::max_queues_per_process; ++id)
      if (!reserved_doorbell(id) && !doorbell_used[id]) return static_cast<int>(id);
    return -1;
  }
  // Finds a free SDMA slot. kind: sdma (PCIe engines), sdma_xgmi, or by engine (`engine` absolute).
  // Returns the flat slot index into sdma_used (engine-major per pool), or -1.
  struct sdma_slot {
    std::uint32_t engine;  // absolute
    std::uint32_t queue;   // on that engine
    std::uint32_t index;   // into sdma_used
  };
  [[nodiscard]] bool find_sdma(std::uint32_t type, std::uint32_t engine, sdma_slot& out) const {
    const std::uint32_t n_pcie = node->props.num_sdma_engines, n_xgmi = node->props.num_sdma_xgmi_engines;
    const std::uint32_t qpe = node->sdma_queues_per_engine;
    auto scan = [&](std::uint32_t pool_base_engine, std::uint32_t n_engines, std::uint32_t first_engine,
                    std::uint32_t stride) -> bool {
      // sdma_id → engine = id % n, queue = id / n (spec/kfd.md §2.6)
      for (std::uint32_t id = first_engine; id < n_engines * qpe; id += stride) {
        const std::uint32_t e = id % n_engines, q = id / n_engines;
        const std::uint32_t idx = (pool_base_engine + e) * qpe + q;
        if (!sdma_used[idx]) {
          out = {pool_base_engine + e, q, idx};
          return true;
        }
      }
      return false;
    };
    if (type == abi::kfd::queue_type_sdma) return n_pcie && scan(0, n_pcie, 0, 1);
    if (type == abi::kfd::queue_type_sdma_xgmi) return n_xgmi && scan(n_pcie, n_xgmi, 0, 1);
    // BY_ENG_ID: ids starting at the engine with stride = number of engines of its pool
    if (engine < n_pcie) return scan(0, n_pcie, engine, n_pcie);
    return scan(n_pcie, n_xgmi, engine - n_pcie, n_xgmi);
  }
  [[nodiscard]] static std::uint32_t sdma_doorbell(const sdma_slot& s) noexcept {
    return sdma_doorbell_base(s.engine) + (s.queue & 1) * 512 + (s.queue >> 1);
  }
};

}  // namespace aqueduct::emu
