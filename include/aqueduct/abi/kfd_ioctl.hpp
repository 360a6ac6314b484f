// aqueduct/abi/kfd_ioctl.hpp — the KFD (/dev/kfd) ioctl ABI: argument structs, request numbers,
// allocation flags, queue/event types, mmap offset encoding, the user context-save area header.
//
// Layer: abi (bit-exact wire formats only). Field names are the kernel's (include/uapi/linux/
// kfd_ioctl.h, KFD 1.18 as in Linux 6.17; spec/kfd.md §2.1–§2.2, §3.2, §5). Each field says
// whether userspace fills it ("to KFD") or the kernel does ("from KFD"). Every struct has
// static_asserts on size, alignment and every offset. The request numbers are built with our
// own constexpr equivalents of Linux's _IOR/_IOW/_IOWR (asm-generic/ioctl.h encoding).
// Differences from the 1.11 header in /usr/include/linux: create_queue_args grew 88 → 96 bytes
// in 1.17 (sdma_engine_id + pad); set_memory_policy_args.pad became misc_process_flag in 1.18;
// kfd_event_data's union gained signal_event_data (1.14, size unchanged).
// Thread safety: constants and plain structs.
#pragma once

#include <cstddef>
#include <cstdint>

namespace aqueduct::abi::kfd {

// ---- interface version (spec/kfd.md §2.1) ------------------------------------------------------
inline constexpr std::uint32_t ioctl_major_version = 1;
inline constexpr std::uint32_t ioctl_minor_version = 18;  // what this header describes

// ---- request-number encoding (asm-generic/ioctl.h: nr 0..7, type 8..15, size 16..29, dir 30..31)
inline constexpr unsigned long ioc_none = 0, ioc_write = 1, ioc_read = 2;
constexpr unsigned long ioc(unsigned long dir, unsigned long type, unsigned long nr, unsigned long size) noexcept {
  return (dir << 30) | (size << 16) | (type << 8) | nr;
}
inline constexpr unsigned long ioctl_base = 'K';  // AMDKFD_IOCTL_BASE
constexpr unsigned long io(unsigned long nr) noexcept { return ioc(ioc_none, ioctl_base, nr, 0); }
template <class T> constexpr unsigned long ior(unsigned long nr) noexcept { return ioc(ioc_read, ioctl_base, nr, sizeof(T)); }
template <class T> constexpr unsigned long iow(unsigned long nr) noexcept { return ioc(ioc_write, ioctl_base, nr, sizeof(T)); }
template <class T> constexpr unsigned long iowr(unsigned long nr) noexcept { return ioc(ioc_read | ioc_write, ioctl_base, nr, sizeof(T)); }
constexpr unsigned ioc_nr(unsigned long request) noexcept { return static_cast<unsigned>(request & 0xFF); }
constexpr unsigned ioc_type(unsigned long request) noexcept { return static_cast<unsigned>((request >> 8) & 0xFF); }
constexpr unsigned ioc_size(unsigned long request) noexcept { return static_cast<unsigned>((request >> 16) & 0x3FFF); }
constexpr unsigned ioc_dir(unsigned long request) noexcept { return static_cast<unsigned>((request >> 30) & 0x3); }

// kfd_ioctl's dispatch range (spec/kfd.md §2.1): nr outside [command_start, command_end) → -ENOTTY.
inline constexpr unsigned command_start = 0x01;
inline constexpr unsigned command_end = 0x27;  // 1.13..1.18 (0x28 once CREATE_PROCESS lands)

// Kernel-internal errno returned for an unknown queue type (not ENOTSUP = 95). spec/kfd.md §2.3.
inline constexpr int enotsupp = 524;

// ---- queues (spec/kfd.md §2.2, §2.3) ----------------------------------------------------------
inline constexpr std::uint32_t queue_type_compute = 0;         // PM4 compute
inline constexpr std::uint32_t queue_type_sdma = 1;
inline constexpr std::uint32_t queue_type_compute_aql = 2;
inline constexpr std::uint32_t queue_type_sdma_xgmi = 3;
inline constexpr std::uint32_t queue_type_sdma_by_eng_id = 4;  // 1.17
inline constexpr std::uint32_t max_queue_percentage = 100;
inline constexpr std::uint32_t max_queue_priority = 15;
inline constexpr std::uint32_t min_queue_ring_size = 1024;     // KFD_MIN_QUEUE_RING_SIZE (clamp)
inline constexpr std::uint32_t max_queues_per_process = 1024;  // KFD_MAX_NUM_OF_QUEUES_PER_PROCESS

struct get_version_args {
  std::uint32_t major_version;  // from KFD
  std::uint32_t minor_version;  // from KFD
};

// 1.17+ layout (96 bytes). A 1.11 caller passes 88 bytes; the kernel zero-fills the rest.
struct create_queue_args {
  std::uint64_t ring_base_address;         // to KFD
  std::uint64_t write_pointer_address;     // to KFD (the uapi comment says "from", it is an input)
  std::uint64_t read_pointer_address;      // to KFD (idem)
  std::uint64_t doorbell_offset;           // from KFD: mmap offset of the doorbell (spec §3.2)
  std::uint32_t ring_size;                 // to KFD, bytes; from KFD: raised to 1024 if smaller
  std::uint32_t gpu_id;                    // to KFD
  std::uint32_t queue_type;                // to KFD: queue_type_*
  std::uint32_t queue_percentage;          // to KFD: low byte percent, bits 15:8 pm4_target_xcc
  std::uint32_t queue_priority;            // to KFD: 0..15
  std::uint32_t queue_id;                  // from KFD
  std::uint64_t eop_buffer_address;        // to KFD
  std::uint64_t eop_buffer_size;           // to KFD
  std::uint64_t ctx_save_restore_address;  // to KFD
  std::uint32_t ctx_save_restore_size;     // to KFD: per-XCC save area size
  std::uint32_t ctl_stack_size;            // to KFD: must equal the node's ctl_stack_size
  std::uint32_t sdma_engine_id;            // to KFD (1.17): engine for queue_type_sdma_by_eng_id
  std::uint32_t pad;
};
inline constexpr std::size_t create_queue_args_size_1_11 = 88;  // before sdma_engine_id

struct destroy_queue_args {
  std::uint32_t queue_id;  // to KFD
  std::uint32_t pad;
};

struct update_queue_args {
  std::uint64_t ring_base_address;  // to KFD
  std::uint32_t queue_id;           // to KFD
  std::uint32_t ring_size;          // to KFD
  std::uint32_t queue_percentage;   // to KFD
  std::uint32_t queue_priority;     // to KFD
};

struct set_cu_mask_args {
  std::uint32_t queue_id;     // to KFD
  std::uint32_t num_cu_mask;  // to KFD: number of bits
  std::uint64_t cu_mask_ptr;  // to KFD
};

struct get_queue_wave_state_args {
  std::uint64_t ctl_stack_address;    // to KFD
  std::uint32_t ctl_stack_used_size;  // from KFD
  std::uint32_t save_area_used_size;  // from KFD
  std::uint32_t queue_id;             // to KFD
  std::uint32_t pad;
};

struct get_available_memory_args {
  std::uint64_t available;  // from KFD
  std::uint32_t gpu_id;     // to KFD
  std::uint32_t pad;
};

inline constexpr std::uint32_t cache_policy_coherent = 0;
inline constexpr std::uint32_t cache_policy_noncoherent = 1;
inline constexpr std::uint32_t proc_flag_mfma_high_precision = 1u << 0;  // 1.18 misc_process_flag

struct set_memory_policy_args {
  std::uint64_t alternate_aperture_base;  // to KFD
  std::uint64_t alternate_aperture_size;  // to KFD
  std::uint32_t gpu_id;                   // to KFD
  std::uint32_t default_policy;           // to KFD
  std::uint32_t alternate_policy;         // to KFD
  std::uint32_t misc_process_flag;        // to KFD (1.18; "pad" before)
};

struct get_clock_counters_args {
  std::uint64_t gpu_clock_counter;     // from KFD
  std::uint64_t cpu_clock_counter;     // from KFD
  std::uint64_t system_clock_counter;  // from KFD
  std::uint64_t system_clock_freq;     // from KFD
  std::uint32_t gpu_id;                // to KFD
  std::uint32_t pad;
};

struct process_device_apertures {
  std::uint64_t lds_base;       // from KFD
  std::uint64_t lds_limit;      // from KFD
  std::uint64_t scratch_base;   // from KFD
  std::uint64_t scratch_limit;  // from KFD
  std::uint64_t gpuvm_base;     // from KFD
  std::uint64_t gpuvm_limit;    // from KFD
  std::uint32_t gpu_id;         // from KFD
  std::uint32_t pad;
};

inline constexpr std::uint32_t num_of_supported_gpus = 7;  // deprecated GET_PROCESS_APERTURES only
struct get_process_apertures_args {
  process_device_apertures process_apertures[num_of_supported_gpus];  // from KFD
  std::uint32_t num_of_nodes;                                         // from KFD
  std::uint32_t pad;
};

struct get_process_apertures_new_args {
  std::uint64_t kfd_process_device_apertures_ptr;  // to KFD: user array of process_device_apertures
  std::uint32_t num_of_nodes;                      // to KFD: array length; from KFD: entries filled
  std::uint32_t pad;
};

// ---- events (spec/kfd.md §5.3) ---------------------------------------------------------------
inline constexpr std::uint32_t event_signal = 0;
inline constexpr std::uint32_t event_nodechange = 1;
inline constexpr std::uint32_t event_devicestatechange = 2;
inline constexpr std::uint32_t event_hw_exception = 3;
inline constexpr std::uint32_t event_system_event = 4;
inline constexpr std::uint32_t event_debug_event = 5;
inline constexpr std::uint32_t event_profile_event = 6;
inline constexpr std::uint32_t event_queue_event = 7;
inline constexpr std::uint32_t event_memory = 8;
inline constexpr std::uint32_t wait_result_complete = 0;
inline constexpr std::uint32_t wait_result_timeout = 1;
inline constexpr std::uint32_t wait_result_fail = 2;
inline constexpr std::uint32_t wait_timeout_infinite = 0xFFFFFFFFu;
inline constexpr std::uint32_t signal_event_limit = 4096;  // slots in the event page
inline constexpr std::uint64_t event_page_size = signal_event_limit * 8;  // 32 KiB
inline constexpr std::uint64_t unsignaled_event_slot = ~std::uint64_t{0};
// Non-signal event ids: [(INT_MAX >> 1) + 1, INT_MAX] (kfd_events.h).
inline constexpr std::uint32_t first_nonsignal_event_id = (0x7FFFFFFFu >> 1) + 1;
inline constexpr std::uint32_t last_nonsignal_event_id = 0x7FFFFFFFu;

struct create_event_args {
  std::uint64_t event_page_offset;   // to KFD: event page BO handle (dGPU, first call); from KFD
  std::uint32_t event_trigger_data;  // from KFD: signal events only (= event id)
  std::uint32_t event_type;          // to KFD: event_*
  std::uint32_t auto_reset;          // to KFD
  std::uint32_t node_id;             // to KFD: only for some event types
  std::uint32_t event_id;            // from KFD
  std::uint32_t event_slot_index;    // from KFD
};

struct destroy_event_args {
  std::uint32_t event_id;  // to KFD
  std::uint32_t pad;
};
struct set_event_args {
  std::uint32_t event_id;  // to KFD
  std::uint32_t pad;
};
struct reset_event_args {
  std::uint32_t event_id;  // to KFD
  std::uint32_t pad;
};

struct memory_exception_failure {
  std::uint32_t NotPresent;  // from KFD (kernel spelling kept)
  std::uint32_t ReadOnly;    // from KFD
  std::uint32_t NoExecute;   // from KFD
  std::uint32_t imprecise;   // from KFD
};
struct hsa_memory_exception_data {
  memory_exception_failure failure;  // from KFD
  std::uint64_t va;                  // from KFD
  std::uint32_t gpu_id;              // from KFD
  std::uint32_t ErrorType;           // from KFD
};
struct hsa_hw_exception_data {
  std::uint32_t reset_type;   // from KFD
  std::uint32_t reset_cause;  // from KFD
  std::uint32_t memory_lost;  // from KFD
  std::uint32_t gpu_id;       // from KFD
};
struct hsa_signal_event_data {
  std::uint64_t last_event_age;  // to/from KFD (1.14): 0 = don't care; kernel ages start at 1
};
struct event_data {
  union {
    hsa_memory_exception_data memory_exception_data;  // from KFD
    hsa_hw_exception_data hw_exception_data;          // from KFD
    hsa_signal_event_data signal_event_data;          // to/from KFD
  };
  std::uint64_t kfd_event_data_ext;  // to KFD: extension pointer (unused)
  std::uint32_t event_id;            // to KFD
  std::uint32_t pad;
};

struct wait_events_args {
  std::uint64_t events_ptr;    // to KFD: array of event_data
  std::uint32_t num_events;    // to KFD
  std::uint32_t wait_for_all;  // to KFD
  std::uint32_t timeout;       // to KFD: ms; 0 = poll; wait_timeout_infinite
  std::uint32_t wait_result;   // from KFD: wait_result_*
};

// ---- misc per-device ioctls -------------------------------------------------------------------
struct set_scratch_backing_va_args {
  std::uint64_t va_addr;  // to KFD
  std::uint32_t gpu_id;   // to KFD
  std::uint32_t pad;
};

struct get_tile_config_args {
  std::uint64_t tile_config_ptr;         // to KFD
  std::uint64_t macro_tile_config_ptr;   // to KFD
  std::uint32_t num_tile_configs;        // to KFD: capacity; from KFD: filled
  std::uint32_t num_macro_tile_configs;  // to KFD: capacity; from KFD: filled
  std::uint32_t gpu_id;                  // to KFD
  std::uint32_t gb_addr_config;          // from KFD
  std::uint32_t num_banks;               // from KFD
  std::uint32_t num_ranks;               // from KFD
};

struct set_trap_handler_args {
  std::uint64_t tba_addr;  // to KFD
  std::uint64_t tma_addr;  // to KFD
  std::uint32_t gpu_id;    // to KFD
  std::uint32_t pad;
};

struct acquire_vm_args {
  std::uint32_t drm_fd;  // to KFD: render node fd (/dev/dri/renderD<drm_render_minor>)
  std::uint32_t gpu_id;  // to KFD
};

// ---- memory (spec/kfd.md §5.2) ---------------------------------------------------------------
inline constexpr std::uint32_t alloc_mem_flags_vram = 1u << 0;
inline constexpr std::uint32_t alloc_mem_flags_gtt = 1u << 1;
inline constexpr std::uint32_t alloc_mem_flags_userptr = 1u << 2;
inline constexpr std::uint32_t alloc_mem_flags_doorbell = 1u << 3;
inline constexpr std::uint32_t alloc_mem_flags_mmio_remap = 1u << 4;
inline constexpr std::uint32_t alloc_mem_flags_writable = 1u << 31;
inline constexpr std::uint32_t alloc_mem_flags_executable = 1u << 30;
inline constexpr std::uint32_t alloc_mem_flags_public = 1u << 29;
inline constexpr std::uint32_t alloc_mem_flags_no_substitute = 1u << 28;
inline constexpr std::uint32_t alloc_mem_flags_aql_queue_mem = 1u << 27;
inline constexpr std::uint32_t alloc_mem_flags_coherent = 1u << 26;
inline constexpr std::uint32_t alloc_mem_flags_uncached = 1u << 25;
inline constexpr std::uint32_t alloc_mem_flags_ext_coherent = 1u << 24;  // 1.13 era
inline constexpr std::uint32_t alloc_mem_flags_contiguous = 1u << 23;    // 1.16
inline constexpr std::uint32_t alloc_mem_domain_mask = alloc_mem_flags_vram | alloc_mem_flags_gtt |
                                                       alloc_mem_flags_userptr | alloc_mem_flags_doorbell |
                                                       alloc_mem_flags_mmio_remap;

struct alloc_memory_of_gpu_args {
  std::uint64_t va_addr;      // to KFD: GPU VA of the BO
  std::uint64_t size;         // to KFD
  std::uint64_t handle;       // from KFD: (gpu_id << 32) | id
  std::uint64_t mmap_offset;  // to KFD: CPU address (USERPTR); from KFD: mmap offset
  std::uint32_t gpu_id;       // to KFD
  std::uint32_t flags;        // to KFD: alloc_mem_flags_*
};

struct free_memory_of_gpu_args {
  std::uint64_t handle;  // to KFD
};

struct map_memory_to_gpu_args {
  std::uint64_t handle;                // to KFD
  std::uint64_t device_ids_array_ptr;  // to KFD: std::uint32_t gpu_ids[n_devices]
  std::uint32_t n_devices;             // to KFD
  std::uint32_t n_success;             // to/from KFD: devices done (resume point)
};

struct unmap_memory_from_gpu_args {
  std::uint64_t handle;                // to KFD
  std::uint64_t device_ids_array_ptr;  // to KFD
  std::uint32_t n_devices;             // to KFD
  std::uint32_t n_success;             // to/from KFD
};

struct alloc_queue_gws_args {
  std::uint32_t queue_id;   // to KFD
  std::uint32_t num_gws;    // to KFD
  std::uint32_t first_gws;  // from KFD
  std::uint32_t pad;
};

struct smi_events_args {
  std::uint32_t gpuid;    // to KFD
  std::uint32_t anon_fd;  // from KFD
};

struct set_xnack_mode_args {
  std::int32_t xnack_enabled;  // to KFD: -1 query, 0 off, 1 on; from KFD: current
};

struct export_dmabuf_args {
  std::uint64_t handle;     // to KFD
  std::uint32_t flags;      // to KFD
  std::uint32_t dmabuf_fd;  // from KFD
};

inline constexpr std::uint32_t runtime_enable_mode_enable_mask = 1;
inline constexpr std::uint32_t runtime_enable_mode_ttmp_save_mask = 2;
struct runtime_enable_args {
  std::uint64_t r_debug;            // to KFD
  std::uint32_t mode_mask;          // to KFD
  std::uint32_t capabilities_mask;  // from KFD
};

// ---- request numbers ---------------------------------------------------------------------------
inline constexpr unsigned long amdkfd_ioc_get_version = ior<get_version_args>(0x01);
inline constexpr unsigned long amdkfd_ioc_create_queue = iowr<create_queue_args>(0x02);
inline constexpr unsigned long amdkfd_ioc_create_queue_1_11 =  // an 88-byte (pre-1.17) caller
    ioc(ioc_read | ioc_write, ioctl_base, 0x02, create_queue_args_size_1_11);
inline constexpr unsigned long amdkfd_ioc_destroy_queue = iowr<destroy_queue_args>(0x03);
inline constexpr unsigned long amdkfd_ioc_set_memory_policy = iow<set_memory_policy_args>(0x04);
inline constexpr unsigned long amdkfd_ioc_get_clock_counters = iowr<get_clock_counters_args>(0x05);
inline constexpr unsigned long amdkfd_ioc_get_process_apertures = ior<get_process_apertures_args>(0x06);
inline constexpr unsigned long amdkfd_ioc_update_queue = iow<update_queue_args>(0x07);
inline constexpr unsigned long amdkfd_ioc_create_event = iowr<create_event_args>(0x08);
inline constexpr unsigned long amdkfd_ioc_destroy_event = iow<destroy_event_args>(0x09);
inline constexpr unsigned long amdkfd_ioc_set_event = iow<set_event_args>(0x0A);
inline constexpr unsigned long amdkfd_ioc_reset_event = iow<reset_event_args>(0x0B);
inline constexpr unsigned long amdkfd_ioc_wait_events = iowr<wait_events_args>(0x0C);
inline constexpr unsigned long amdkfd_ioc_set_scratch_backing_va = iowr<set_scratch_backing_va_args>(0x11);
inline constexpr unsigned long amdkfd_ioc_get_tile_config = iowr<get_tile_config_args>(0x12);
inline constexpr unsigned long amdkfd_ioc_set_trap_handler = iow<set_trap_handler_args>(0x13);
inline constexpr unsigned long amdkfd_ioc_get_process_apertures_new = iowr<get_process_apertures_new_args>(0x14);
inline constexpr unsigned long amdkfd_ioc_acquire_vm = iow<acquire_vm_args>(0x15);
inline constexpr unsigned long amdkfd_ioc_alloc_memory_of_gpu = iowr<alloc_memory_of_gpu_args>(0x16);
inline constexpr unsigned long amdkfd_ioc_free_memory_of_gpu = iow<free_memory_of_gpu_args>(0x17);
inline constexpr unsigned long amdkfd_ioc_map_memory_to_gpu = iowr<map_memory_to_gpu_args>(0x18);
inline constexpr unsigned long amdkfd_ioc_unmap_memory_from_gpu = iowr<unmap_memory_from_gpu_args>(0x19);
inline constexpr unsigned long amdkfd_ioc_set_cu_mask = iow<set_cu_mask_args>(0x1A);
inline constexpr unsigned long amdkfd_ioc_get_queue_wave_state = iowr<get_queue_wave_state_args>(0x1B);
inline constexpr unsigned long amdkfd_ioc_alloc_queue_gws = iowr<alloc_queue_gws_args>(0x1E);
inline constexpr unsigned long amdkfd_ioc_smi_events = iowr<smi_events_args>(0x1F);
inline constexpr unsigned long amdkfd_ioc_set_xnack_mode = iowr<set_xnack_mode_args>(0x21);
inline constexpr unsigned long amdkfd_ioc_available_memory = iowr<get_available_memory_args>(0x23);
inline constexpr unsigned long amdkfd_ioc_export_dmabuf = iowr<export_dmabuf_args>(0x24);
inline constexpr unsigned long amdkfd_ioc_runtime_enable = iowr<runtime_enable_args>(0x25);
// The deprecated debugger ioctls keep their numbers (kfd_ioctl.h *_DEPRECATED); the kernel answers
// -EPERM. Their argument structs are not described here: no caller needs them.
inline constexpr unsigned nr_dbg_register_deprecated = 0x0D;
inline constexpr unsigned nr_dbg_unregister_deprecated = 0x0E;
inline constexpr unsigned nr_dbg_address_watch_deprecated = 0x0F;
inline constexpr unsigned nr_dbg_wave_control_deprecated = 0x10;

// The kernel name of a request (by its nr, as the kernel dispatches: spec/kfd.md §2.1), e.g.
// "AMDKFD_IOC_CREATE_QUEUE"; "AMDKFD_IOC_?" for an nr outside the table or a type other than 'K'.
constexpr const char* ioctl_name(unsigned long request) noexcept {
  constexpr const char* names[] = {
      "AMDKFD_IOC_?",  // 0x00
      "AMDKFD_IOC_GET_VERSION", "AMDKFD_IOC_CREATE_QUEUE", "AMDKFD_IOC_DESTROY_QUEUE",
      "AMDKFD_IOC_SET_MEMORY_POLICY", "AMDKFD_IOC_GET_CLOCK_COUNTERS", "AMDKFD_IOC_GET_PROCESS_APERTURES",
      "AMDKFD_IOC_UPDATE_QUEUE", "AMDKFD_IOC_CREATE_EVENT", "AMDKFD_IOC_DESTROY_EVENT", "AMDKFD_IOC_SET_EVENT",
      "AMDKFD_IOC_RESET_EVENT", "AMDKFD_IOC_WAIT_EVENTS", "AMDKFD_IOC_DBG_REGISTER_DEPRECATED",
      "AMDKFD_IOC_DBG_UNREGISTER_DEPRECATED", "AMDKFD_IOC_DBG_ADDRESS_WATCH_DEPRECATED",
      "AMDKFD_IOC_DBG_WAVE_CONTROL_DEPRECATED", "AMDKFD_IOC_SET_SCRATCH_BACKING_VA", "AMDKFD_IOC_GET_TILE_CONFIG",
      "AMDKFD_IOC_SET_TRAP_HANDLER", "AMDKFD_IOC_GET_PROCESS_APERTURES_NEW", "AMDKFD_IOC_ACQUIRE_VM",
      "AMDKFD_IOC_ALLOC_MEMORY_OF_GPU", "AMDKFD_IOC_FREE_MEMORY_OF_GPU", "AMDKFD_IOC_MAP_MEMORY_TO_GPU",
      "AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU", "AMDKFD_IOC_SET_CU_MASK", "AMDKFD_IOC_GET_QUEUE_WAVE_STATE",
      "AMDKFD_IOC_GET_DMABUF_INFO", "AMDKFD_IOC_IMPORT_DMABUF", "AMDKFD_IOC_ALLOC_QUEUE_GWS",
      "AMDKFD_IOC_SMI_EVENTS", "AMDKFD_IOC_SVM", "AMDKFD_IOC_SET_XNACK_MODE", "AMDKFD_IOC_CRIU_OP",
      "AMDKFD_IOC_AVAILABLE_MEMORY", "AMDKFD_IOC_EXPORT_DMABUF", "AMDKFD_IOC_RUNTIME_ENABLE",
      "AMDKFD_IOC_DBG_TRAP", "AMDKFD_IOC_CREATE_PROCESS"};
  static_assert(sizeof(names) / sizeof(names[0]) == 0x28);
  const unsigned nr = ioc_nr(request);
  if (ioc_type(request) != ioctl_base || nr >= sizeof(names) / sizeof(names[0])) return names[0];
  return names[nr];
}

// ---- mmap offsets on the kfd fd (spec/kfd.md §3.2) ---------------------------------------------
inline constexpr unsigned mmap_type_shift = 62;
inline constexpr unsigned mmap_gpu_id_shift = 46;
inline constexpr std::uint64_t mmap_type_mask = 3ull << mmap_type_shift;
inline constexpr std::uint64_t mmap_gpu_id_mask = 0xFFFFull << mmap_gpu_id_shift;
inline constexpr std::uint64_t mmap_offset_mask = (1ull << mmap_gpu_id_shift) - 1;
inline constexpr std::uint64_t mmap_type_doorbell = 3ull << mmap_type_shift;
inline constexpr std::uint64_t mmap_type_events = 2ull << mmap_type_shift;
inline constexpr std::uint64_t mmap_type_reserved_mem = 1ull << mmap_type_shift;  // CWSR TBA/TMA
inline constexpr std::uint64_t mmap_type_mmio = 0ull << mmap_type_shift;

constexpr std::uint64_t make_mmap_offset(std::uint64_t type, std::uint32_t gpu_id, std::uint64_t offset = 0) noexcept {
  return type | (std::uint64_t{gpu_id & 0xFFFFu} << mmap_gpu_id_shift) | (offset & mmap_offset_mask);
}
constexpr std::uint64_t mmap_type_of(std::uint64_t offset) noexcept { return offset & mmap_type_mask; }
constexpr std::uint32_t mmap_gpu_id_of(std::uint64_t offset) noexcept {
  return static_cast<std::uint32_t>((offset & mmap_gpu_id_mask) >> mmap_gpu_id_shift);
}
constexpr std::uint64_t mmap_offset_of(std::uint64_t offset) noexcept { return offset & mmap_offset_mask; }

// Doorbells (spec/kfd.md §3.1): 8 bytes on SOC15 (gfx_target_version >= 90000), else 4; the
// process slice per GPU is roundup(doorbell_bytes * 1024, 4096): 8 KiB (2 pages) or 4 KiB.
constexpr std::uint32_t doorbell_bytes_for(std::uint32_t gfx_target_version) noexcept {
  return gfx_target_version >= 90000 ? 8u : 4u;
}
constexpr std::uint64_t doorbell_slice_size(std::uint32_t doorbell_bytes) noexcept {
  return (std::uint64_t{doorbell_bytes} * max_queues_per_process + 4095) & ~std::uint64_t{4095};
}

// ---- user context-save area header (spec/kfd.md §1.4; uapi kfd_context_save_area_header) -------
// At the start of each per-XCC save area; userspace fills it before CREATE_QUEUE.
struct user_context_save_area_header {
  std::uint32_t control_stack_offset;  // to HW: ctl stack start (= ctl_stack_size - used)
  std::uint32_t control_stack_size;    // to HW
  std::uint32_t wave_state_offset;     // to HW: = ctl_stack_size
  std::uint32_t wave_state_size;       // to HW
  std::uint32_t debug_offset;          // to HW: from this header to the shared debug area
  std::uint32_t debug_size;            // to HW: debug_memory_size * num_xcc
  std::uint64_t err_payload_addr;      // to HW: address of an 8-byte error-reason word
  std::uint32_t err_event_id;          // to HW: event signalled on a queue error
  std::uint32_t reserved1;
};

// ---- layout checks -------------------------------------------------------------------------------
#define AQUEDUCT_KFD_CHECK(T, size, align) \
  static_assert(sizeof(T) == (size) && alignof(T) == (align), #T " size/alignment")
#define AQUEDUCT_KFD_OFF(T, f, off) static_assert(offsetof(T, f) == (off), #T "::" #f " offset")

AQUEDUCT_KFD_CHECK(get_version_args, 8, 4);
AQUEDUCT_KFD_OFF(get_version_args, major_version, 0);
AQUEDUCT_KFD_OFF(get_version_args, minor_version, 4);

AQUEDUCT_KFD_CHECK(create_queue_args, 96, 8);
AQUEDUCT_KFD_OFF(create_queue_args, ring_base_address, 0);
AQUEDUCT_KFD_OFF(create_queue_args, write_pointer_address, 8);
AQUEDUCT_KFD_OFF(create_queue_args, read_pointer_address, 16);
AQUEDUCT_KFD_OFF(create_queue_args, doorbell_offset, 24);
AQUEDUCT_KFD_OFF(create_queue_args, ring_size, 32);
AQUEDUCT_KFD_OFF(create_queue_args, gpu_id, 36);
AQUEDUCT_KFD_OFF(create_queue_args, queue_type, 40);
AQUEDUCT_KFD_OFF(create_queue_args, queue_percentage, 44);
AQUEDUCT_KFD_OFF(create_queue_args, queue_priority, 48);
AQUEDUCT_KFD_OFF(create_queue_args, queue_id, 52);
AQUEDUCT_KFD_OFF(create_queue_args, eop_buffer_address, 56);
AQUEDUCT_KFD_OFF(create_queue_args, eop_buffer_size, 64);
AQUEDUCT_KFD_OFF(create_queue_args, ctx_save_restore_address, 72);
AQUEDUCT_KFD_OFF(create_queue_args, ctx_save_restore_size, 80);
AQUEDUCT_KFD_OFF(create_queue_args, ctl_stack_size, 84);
AQUEDUCT_KFD_OFF(create_queue_args, sdma_engine_id, 88);
AQUEDUCT_KFD_OFF(create_queue_args, pad, 92);

AQUEDUCT_KFD_CHECK(destroy_queue_args, 8, 4);
AQUEDUCT_KFD_OFF(destroy_queue_args, queue_id, 0);
AQUEDUCT_KFD_OFF(destroy_queue_args, pad, 4);

AQUEDUCT_KFD_CHECK(update_queue_args, 24, 8);
AQUEDUCT_KFD_OFF(update_queue_args, ring_base_address, 0);
AQUEDUCT_KFD_OFF(update_queue_args, queue_id, 8);
AQUEDUCT_KFD_OFF(update_queue_args, ring_size, 12);
AQUEDUCT_KFD_OFF(update_queue_args, queue_percentage, 16);
AQUEDUCT_KFD_OFF(update_queue_args, queue_priority, 20);

AQUEDUCT_KFD_CHECK(set_cu_mask_args, 16, 8);
AQUEDUCT_KFD_OFF(set_cu_mask_args, queue_id, 0);
AQUEDUCT_KFD_OFF(set_cu_mask_args, num_cu_mask, 4);
AQUEDUCT_KFD_OFF(set_cu_mask_args, cu_mask_ptr, 8);

AQUEDUCT_KFD_CHECK(get_queue_wave_state_args, 24, 8);
AQUEDUCT_KFD_OFF(get_queue_wave_state_args, ctl_stack_address, 0);
AQUEDUCT_KFD_OFF(get_queue_wave_state_args, ctl_stack_used_size, 8);
AQUEDUCT_KFD_OFF(get_queue_wave_state_args, save_area_used_size, 12);
AQUEDUCT_KFD_OFF(get_queue_wave_state_args, queue_id, 16);
AQUEDUCT_KFD_OFF(get_queue_wave_state_args, pad, 20);

AQUEDUCT_KFD_CHECK(get_available_memory_args, 16, 8);
AQUEDUCT_KFD_OFF(get_available_memory_args, available, 0);
AQUEDUCT_KFD_OFF(get_available_memory_args, gpu_id, 8);
AQUEDUCT_KFD_OFF(get_available_memory_args, pad, 12);

AQUEDUCT_KFD_CHECK(set_memory_policy_args, 32, 8);
AQUEDUCT_KFD_OFF(set_memory_policy_args, alternate_aperture_base, 0);
AQUEDUCT_KFD_OFF(set_memory_policy_args, alternate_aperture_size, 8);
AQUEDUCT_KFD_OFF(set_memory_policy_args, gpu_id, 16);
AQUEDUCT_KFD_OFF(set_memory_policy_args, default_policy, 20);
AQUEDUCT_KFD_OFF(set_memory_policy_args, alternate_policy, 24);
AQUEDUCT_KFD_OFF(set_memory_policy_args, misc_process_flag, 28);

AQUEDUCT_KFD_CHECK(get_clock_counters_args, 40, 8);
AQUEDUCT_KFD_OFF(get_clock_counters_args, gpu_clock_counter, 0);
AQUEDUCT_KFD_OFF(get_clock_counters_args, cpu_clock_counter, 8);
AQUEDUCT_KFD_OFF(get_clock_counters_args, system_clock_counter, 16);
AQUEDUCT_KFD_OFF(get_clock_counters_args, system_clock_freq, 24);
AQUEDUCT_KFD_OFF(get_clock_counters_args, gpu_id, 32);
AQUEDUCT_KFD_OFF(get_clock_counters_args, pad, 36);

AQUEDUCT_KFD_CHECK(process_device_apertures, 56, 8);
AQUEDUCT_KFD_OFF(process_device_apertures, lds_base, 0);
AQUEDUCT_KFD_OFF(process_device_apertures, lds_limit, 8);
AQUEDUCT_KFD_OFF(process_device_apertures, scratch_base, 16);
AQUEDUCT_KFD_OFF(process_device_apertures, scratch_limit, 24);
AQUEDUCT_KFD_OFF(process_device_apertures, gpuvm_base, 32);
AQUEDUCT_KFD_OFF(process_device_apertures, gpuvm_limit, 40);
AQUEDUCT_KFD_OFF(process_device_apertures, gpu_id, 48);
AQUEDUCT_KFD_OFF(process_device_apertures, pad, 52);

AQUEDUCT_KFD_CHECK(get_process_apertures_args, 400, 8);
AQUEDUCT_KFD_OFF(get_process_apertures_args, process_apertures, 0);
AQUEDUCT_KFD_OFF(get_process_apertures_args, num_of_nodes, 392);
AQUEDUCT_KFD_OFF(get_process_apertures_args, pad, 396);

AQUEDUCT_KFD_CHECK(get_process_apertures_new_args, 16, 8);
AQUEDUCT_KFD_OFF(get_process_apertures_new_args, kfd_process_device_apertures_ptr, 0);
AQUEDUCT_KFD_OFF(get_process_apertures_new_args, num_of_nodes, 8);
AQUEDUCT_KFD_OFF(get_process_apertures_new_args, pad, 12);

AQUEDUCT_KFD_CHECK(create_event_args, 32, 8);
AQUEDUCT_KFD_OFF(create_event_args, event_page_offset, 0);
AQUEDUCT_KFD_OFF(create_event_args, event_trigger_data, 8);
AQUEDUCT_KFD_OFF(create_event_args, event_type, 12);
AQUEDUCT_KFD_OFF(create_event_args, auto_reset, 16);
AQUEDUCT_KFD_OFF(create_event_args, node_id, 20);
AQUEDUCT_KFD_OFF(create_event_args, event_id, 24);
AQUEDUCT_KFD_OFF(create_event_args, event_slot_index, 28);

AQUEDUCT_KFD_CHECK(destroy_event_args, 8, 4);
AQUEDUCT_KFD_OFF(destroy_event_args, event_id, 0);
AQUEDUCT_KFD_CHECK(set_event_args, 8, 4);
AQUEDUCT_KFD_OFF(set_event_args, event_id, 0);
AQUEDUCT_KFD_CHECK(reset_event_args, 8, 4);
AQUEDUCT_KFD_OFF(reset_event_args, event_id, 0);

AQUEDUCT_KFD_CHECK(memory_exception_failure, 16, 4);
AQUEDUCT_KFD_OFF(memory_exception_failure, NotPresent, 0);
AQUEDUCT_KFD_OFF(memory_exception_failure, ReadOnly, 4);
AQUEDUCT_KFD_OFF(memory_exception_failure, NoExecute, 8);
AQUEDUCT_KFD_OFF(memory_exception_failure, imprecise, 12);
AQUEDUCT_KFD_CHECK(hsa_memory_exception_data, 32, 8);
AQUEDUCT_KFD_OFF(hsa_memory_exception_data, failure, 0);
AQUEDUCT_KFD_OFF(hsa_memory_exception_data, va, 16);
AQUEDUCT_KFD_OFF(hsa_memory_exception_data, gpu_id, 24);
AQUEDUCT_KFD_OFF(hsa_memory_exception_data, ErrorType, 28);
AQUEDUCT_KFD_CHECK(hsa_hw_exception_data, 16, 4);
AQUEDUCT_KFD_OFF(hsa_hw_exception_data, reset_type, 0);
AQUEDUCT_KFD_OFF(hsa_hw_exception_data, reset_cause, 4);
AQUEDUCT_KFD_OFF(hsa_hw_exception_data, memory_lost, 8);
AQUEDUCT_KFD_OFF(hsa_hw_exception_data, gpu_id, 12);
AQUEDUCT_KFD_CHECK(hsa_signal_event_data, 8, 8);
AQUEDUCT_KFD_OFF(hsa_signal_event_data, last_event_age, 0);
AQUEDUCT_KFD_CHECK(event_data, 48, 8);
AQUEDUCT_KFD_OFF(event_data, memory_exception_data, 0);
AQUEDUCT_KFD_OFF(event_data, hw_exception_data, 0);
AQUEDUCT_KFD_OFF(event_data, signal_event_data, 0);
AQUEDUCT_KFD_OFF(event_data, kfd_event_data_ext, 32);
AQUEDUCT_KFD_OFF(event_data, event_id, 40);
AQUEDUCT_KFD_OFF(event_data, pad, 44);

AQUEDUCT_KFD_CHECK(wait_events_args, 24, 8);
AQUEDUCT_KFD_OFF(wait_events_args, events_ptr, 0);
AQUEDUCT_KFD_OFF(wait_events_args, num_events, 8);
AQUEDUCT_KFD_OFF(wait_events_args, wait_for_all, 12);
AQUEDUCT_KFD_OFF(wait_events_args, timeout, 16);
AQUEDUCT_KFD_OFF(wait_events_args, wait_result, 20);

AQUEDUCT_KFD_CHECK(set_scratch_backing_va_args, 16, 8);
AQUEDUCT_KFD_OFF(set_scratch_backing_va_args, va_addr, 0);
AQUEDUCT_KFD_OFF(set_scratch_backing_va_args, gpu_id, 8);

AQUEDUCT_KFD_CHECK(get_tile_config_args, 40, 8);
AQUEDUCT_KFD_OFF(get_tile_config_args, tile_config_ptr, 0);
AQUEDUCT_KFD_OFF(get_tile_config_args, macro_tile_config_ptr, 8);
AQUEDUCT_KFD_OFF(get_tile_config_args, num_tile_configs, 16);
AQUEDUCT_KFD_OFF(get_tile_config_args, num_macro_tile_configs, 20);
AQUEDUCT_KFD_OFF(get_tile_config_args, gpu_id, 24);
AQUEDUCT_KFD_OFF(get_tile_config_args, gb_addr_config, 28);
AQUEDUCT_KFD_OFF(get_tile_config_args, num_banks, 32);
AQUEDUCT_KFD_OFF(get_tile_config_args, num_ranks, 36);

AQUEDUCT_KFD_CHECK(set_trap_handler_args, 24, 8);
AQUEDUCT_KFD_OFF(set_trap_handler_args, tba_addr, 0);
AQUEDUCT_KFD_OFF(set_trap_handler_args, tma_addr, 8);
AQUEDUCT_KFD_OFF(set_trap_handler_args, gpu_id, 16);

AQUEDUCT_KFD_CHECK(acquire_vm_args, 8, 4);
AQUEDUCT_KFD_OFF(acquire_vm_args, drm_fd, 0);
AQUEDUCT_KFD_OFF(acquire_vm_args, gpu_id, 4);

AQUEDUCT_KFD_CHECK(alloc_memory_of_gpu_args, 40, 8);
AQUEDUCT_KFD_OFF(alloc_memory_of_gpu_args, va_addr, 0);
AQUEDUCT_KFD_OFF(alloc_memory_of_gpu_args, size, 8);
AQUEDUCT_KFD_OFF(alloc_memory_of_gpu_args, handle, 16);
AQUEDUCT_KFD_OFF(alloc_memory_of_gpu_args, mmap_offset, 24);
AQUEDUCT_KFD_OFF(alloc_memory_of_gpu_args, gpu_id, 32);
AQUEDUCT_KFD_OFF(alloc_memory_of_gpu_args, flags, 36);

AQUEDUCT_KFD_CHECK(free_memory_of_gpu_args, 8, 8);
AQUEDUCT_KFD_OFF(free_memory_of_gpu_args, handle, 0);

AQUEDUCT_KFD_CHECK(map_memory_to_gpu_args, 24, 8);
AQUEDUCT_KFD_OFF(map_memory_to_gpu_args, handle, 0);
AQUEDUCT_KFD_OFF(map_memory_to_gpu_args, device_ids_array_ptr, 8);
AQUEDUCT_KFD_OFF(map_memory_to_gpu_args, n_devices, 16);
AQUEDUCT_KFD_OFF(map_memory_to_gpu_args, n_success, 20);
AQUEDUCT_KFD_CHECK(unmap_memory_from_gpu_args, 24, 8);
AQUEDUCT_KFD_OFF(unmap_memory_from_gpu_args, handle, 0);
AQUEDUCT_KFD_OFF(unmap_memory_from_gpu_args, device_ids_array_ptr, 8);
AQUEDUCT_KFD_OFF(unmap_memory_from_gpu_args, n_devices, 16);
AQUEDUCT_KFD_OFF(unmap_memory_from_gpu_args, n_success, 20);

AQUEDUCT_KFD_CHECK(alloc_queue_gws_args, 16, 4);
AQUEDUCT_KFD_OFF(alloc_queue_gws_args, queue_id, 0);
AQUEDUCT_KFD_OFF(alloc_queue_gws_args, num_gws, 4);
AQUEDUCT_KFD_OFF(alloc_queue_gws_args, first_gws, 8);
AQUEDUCT_KFD_CHECK(smi_events_args, 8, 4);
AQUEDUCT_KFD_OFF(smi_events_args, gpuid, 0);
AQUEDUCT_KFD_OFF(smi_events_args, anon_fd, 4);
AQUEDUCT_KFD_CHECK(set_xnack_mode_args, 4, 4);
AQUEDUCT_KFD_OFF(set_xnack_mode_args, xnack_enabled, 0);
AQUEDUCT_KFD_CHECK(export_dmabuf_args, 16, 8);
AQUEDUCT_KFD_OFF(export_dmabuf_args, handle, 0);
AQUEDUCT_KFD_OFF(export_dmabuf_args, flags, 8);
AQUEDUCT_KFD_OFF(export_dmabuf_args, dmabuf_fd, 12);
AQUEDUCT_KFD_CHECK(runtime_enable_args, 16, 8);
AQUEDUCT_KFD_OFF(runtime_enable_args, r_debug, 0);
AQUEDUCT_KFD_OFF(runtime_enable_args, mode_mask, 8);
AQUEDUCT_KFD_OFF(runtime_enable_args, capabilities_mask, 12);

AQUEDUCT_KFD_CHECK(user_context_save_area_header, 40, 8);
AQUEDUCT_KFD_OFF(user_context_save_area_header, control_stack_offset, 0);
AQUEDUCT_KFD_OFF(user_context_save_area_header, control_stack_size, 4);
AQUEDUCT_KFD_OFF(user_context_save_area_header, wave_state_offset, 8);
AQUEDUCT_KFD_OFF(user_context_save_area_header, wave_state_size, 12);
AQUEDUCT_KFD_OFF(user_context_save_area_header, debug_offset, 16);
AQUEDUCT_KFD_OFF(user_context_save_area_header, debug_size, 20);
AQUEDUCT_KFD_OFF(user_context_save_area_header, err_payload_addr, 24);
AQUEDUCT_KFD_OFF(user_context_save_area_header, err_event_id, 32);
AQUEDUCT_KFD_OFF(user_context_save_area_header, reserved1, 36);

#undef AQUEDUCT_KFD_CHECK
#undef AQUEDUCT_KFD_OFF

// Request numbers fixed by the encoding (worked by hand from asm-generic/ioctl.h).
static_assert(amdkfd_ioc_get_version == 0x80084B01ul);
static_assert(amdkfd_ioc_create_queue == 0xC0604B02ul);       // 96 bytes
static_assert(amdkfd_ioc_create_queue_1_11 == 0xC0584B02ul);  // 88 bytes
static_assert(ioc_nr(amdkfd_ioc_alloc_memory_of_gpu) == 0x16 && ioc_size(amdkfd_ioc_alloc_memory_of_gpu) == 40);

}  // namespace aqueduct::abi::kfd
