// tests/abi/kfd_ioctl.cpp — abi/kfd_ioctl.hpp against the system's uapi header.
//
// Expected values come from /usr/include/linux/kfd_ioctl.h (KFD 1.11, Debian linux-libc-dev):
// for every struct both define, the same size and field offsets, and the same AMDKFD_IOC_*
// request numbers. Documented differences (spec/kfd.md §2.1): create_queue_args is 96 bytes in
// 1.17+ (sdma_engine_id, pad) versus 88 in 1.11, so AMDKFD_IOC_CREATE_QUEUE differs in its size
// field only; set_memory_policy_args.pad is misc_process_flag in 1.18 (same offset).
#include <aqueduct/abi/kfd_ioctl.hpp>

#include <doctest/doctest.h>

#include <cstddef>
#include <cstring>
#include <string_view>

#include <linux/kfd_ioctl.h>  // via tests/abi/kfd_uapi_shim for <drm/drm.h>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

namespace k = aqueduct::abi::kfd;

#define SAME_SIZE(ours, theirs) static_assert(sizeof(k::ours) == sizeof(struct theirs), #ours " size")
#define SAME_OFF(ours, theirs, f) static_assert(offsetof(k::ours, f) == offsetof(struct theirs, f), #ours "::" #f)
#define SAME_OFF2(ours, of, theirs, tf) static_assert(offsetof(k::ours, of) == offsetof(struct theirs, tf), #ours "::" #of)

SAME_SIZE(get_version_args, kfd_ioctl_get_version_args);
SAME_OFF(get_version_args, kfd_ioctl_get_version_args, minor_version);

// create_queue: every 1.11 field at the same offset; 1.11 ends where sdma_engine_id starts.
static_assert(sizeof(struct kfd_ioctl_create_queue_args) == 88);
static_assert(k::create_queue_args_size_1_11 == sizeof(struct kfd_ioctl_create_queue_args));
static_assert(offsetof(k::create_queue_args, sdma_engine_id) == sizeof(struct kfd_ioctl_create_queue_args));
SAME_OFF(create_queue_args, kfd_ioctl_create_queue_args, ring_base_address);
SAME_OFF(create_queue_args, kfd_ioctl_create_queue_args, write_pointer_address);
SAME_OFF(create_queue_args, kfd_ioctl_create_queue_args, read_pointer_address);
SAME_OFF(create_queue_args, kfd_ioctl_create_queue_args, doorbell_offset);
SAME_OFF(create_queue_args, kfd_ioctl_create_queue_args, ring_size);
SAME_OFF(create_queue_args, kfd_ioctl_create_queue_args, gpu_id);
SAME_OFF(create_queue_args, kfd_ioctl_create_queue_args, queue_type);
SAME_OFF(create_queue_args, kfd_ioctl_create_queue_args, queue_percentage);
SAME_OFF(create_queue_args, kfd_ioctl_create_queue_args, queue_priority);
SAME_OFF(create_queue_args, kfd_ioctl_create_queue_args, queue_id);
SAME_OFF(create_queue_args, kfd_ioctl_create_queue_args, eop_buffer_address);
SAME_OFF(create_queue_args, kfd_ioctl_create_queue_args, eop_buffer_size);
SAME_OFF(create_queue_args, kfd_ioctl_create_queue_args, ctx_save_restore_address);
SAME_OFF(create_queue_args, kfd_ioctl_create_queue_args, ctx_save_restore_size);
SAME_OFF(create_queue_args, kfd_ioctl_create_queue_args, ctl_stack_size);

SAME_SIZE(destroy_queue_args, kfd_ioctl_destroy_queue_args);
SAME_SIZE(update_queue_args, kfd_ioctl_update_queue_args);
SAME_OFF(update_queue_args, kfd_ioctl_update_queue_args, queue_id);
SAME_OFF(update_queue_args, kfd_ioctl_update_queue_args, ring_size);
SAME_OFF(update_queue_args, kfd_ioctl_update_queue_args, queue_percentage);
SAME_OFF(update_queue_args, kfd_ioctl_update_queue_args, queue_priority);
SAME_SIZE(set_cu_mask_args, kfd_ioctl_set_cu_mask_args);
SAME_OFF(set_cu_mask_args, kfd_ioctl_set_cu_mask_args, cu_mask_ptr);
SAME_SIZE(get_queue_wave_state_args, kfd_ioctl_get_queue_wave_state_args);
SAME_OFF(get_queue_wave_state_args, kfd_ioctl_get_queue_wave_state_args, ctl_stack_used_size);
SAME_OFF(get_queue_wave_state_args, kfd_ioctl_get_queue_wave_state_args, save_area_used_size);
SAME_OFF(get_queue_wave_state_args, kfd_ioctl_get_queue_wave_state_args, queue_id);
SAME_SIZE(get_available_memory_args, kfd_ioctl_get_available_memory_args);
SAME_OFF(get_available_memory_args, kfd_ioctl_get_available_memory_args, gpu_id);
SAME_SIZE(set_memory_policy_args, kfd_ioctl_set_memory_policy_args);
SAME_OFF(set_memory_policy_args, kfd_ioctl_set_memory_policy_args, gpu_id);
SAME_OFF(set_memory_policy_args, kfd_ioctl_set_memory_policy_args, default_policy);
SAME_OFF(set_memory_policy_args, kfd_ioctl_set_memory_policy_args, alternate_policy);
SAME_OFF2(set_memory_policy_args, misc_process_flag, kfd_ioctl_set_memory_policy_args, pad);
SAME_SIZE(get_clock_counters_args, kfd_ioctl_get_clock_counters_args);
SAME_OFF(get_clock_counters_args, kfd_ioctl_get_clock_counters_args, system_clock_freq);
SAME_OFF(get_clock_counters_args, kfd_ioctl_get_clock_counters_args, gpu_id);
SAME_SIZE(process_device_apertures, kfd_process_device_apertures);
SAME_OFF(process_device_apertures, kfd_process_device_apertures, scratch_base);
SAME_OFF(process_device_apertures, kfd_process_device_apertures, gpuvm_base);
SAME_OFF(process_device_apertures, kfd_process_device_apertures, gpuvm_limit);
SAME_OFF(process_device_apertures, kfd_process_device_apertures, gpu_id);
SAME_SIZE(get_process_apertures_args, kfd_ioctl_get_process_apertures_args);
SAME_OFF(get_process_apertures_args, kfd_ioctl_get_process_apertures_args, num_of_nodes);
SAME_SIZE(get_process_apertures_new_args, kfd_ioctl_get_process_apertures_new_args);
SAME_OFF(get_process_apertures_new_args, kfd_ioctl_get_process_apertures_new_args, num_of_nodes);
SAME_SIZE(create_event_args, kfd_ioctl_create_event_args);
SAME_OFF(create_event_args, kfd_ioctl_create_event_args, event_trigger_data);
SAME_OFF(create_event_args, kfd_ioctl_create_event_args, event_type);
SAME_OFF(create_event_args, kfd_ioctl_create_event_args, auto_reset);
SAME_OFF(create_event_args, kfd_ioctl_create_event_args, node_id);
SAME_OFF(create_event_args, kfd_ioctl_create_event_args, event_id);
SAME_OFF(create_event_args, kfd_ioctl_create_event_args, event_slot_index);
SAME_SIZE(destroy_event_args, kfd_ioctl_destroy_event_args);
SAME_SIZE(set_event_args, kfd_ioctl_set_event_args);
SAME_SIZE(reset_event_args, kfd_ioctl_reset_event_args);
SAME_SIZE(memory_exception_failure, kfd_memory_exception_failure);
SAME_SIZE(hsa_memory_exception_data, kfd_hsa_memory_exception_data);
SAME_OFF(hsa_memory_exception_data, kfd_hsa_memory_exception_data, va);
SAME_OFF(hsa_memory_exception_data, kfd_hsa_memory_exception_data, gpu_id);
SAME_OFF(hsa_memory_exception_data, kfd_hsa_memory_exception_data, ErrorType);
SAME_SIZE(hsa_hw_exception_data, kfd_hsa_hw_exception_data);
SAME_SIZE(event_data, kfd_event_data);
SAME_OFF(event_data, kfd_event_data, kfd_event_data_ext);
SAME_OFF(event_data, kfd_event_data, event_id);
SAME_SIZE(wait_events_args, kfd_ioctl_wait_events_args);
SAME_OFF(wait_events_args, kfd_ioctl_wait_events_args, num_events);
SAME_OFF(wait_events_args, kfd_ioctl_wait_events_args, wait_for_all);
SAME_OFF(wait_events_args, kfd_ioctl_wait_events_args, timeout);
SAME_OFF(wait_events_args, kfd_ioctl_wait_events_args, wait_result);
SAME_SIZE(set_scratch_backing_va_args, kfd_ioctl_set_scratch_backing_va_args);
SAME_SIZE(get_tile_config_args, kfd_ioctl_get_tile_config_args);
SAME_OFF(get_tile_config_args, kfd_ioctl_get_tile_config_args, gpu_id);
SAME_OFF(get_tile_config_args, kfd_ioctl_get_tile_config_args, num_ranks);
SAME_SIZE(set_trap_handler_args, kfd_ioctl_set_trap_handler_args);
SAME_OFF(set_trap_handler_args, kfd_ioctl_set_trap_handler_args, gpu_id);
SAME_SIZE(acquire_vm_args, kfd_ioctl_acquire_vm_args);
SAME_OFF(acquire_vm_args, kfd_ioctl_acquire_vm_args, gpu_id);
SAME_SIZE(alloc_memory_of_gpu_args, kfd_ioctl_alloc_memory_of_gpu_args);
SAME_OFF(alloc_memory_of_gpu_args, kfd_ioctl_alloc_memory_of_gpu_args, size);
SAME_OFF(alloc_memory_of_gpu_args, kfd_ioctl_alloc_memory_of_gpu_args, handle);
SAME_OFF(alloc_memory_of_gpu_args, kfd_ioctl_alloc_memory_of_gpu_args, mmap_offset);
SAME_OFF(alloc_memory_of_gpu_args, kfd_ioctl_alloc_memory_of_gpu_args, gpu_id);
SAME_OFF(alloc_memory_of_gpu_args, kfd_ioctl_alloc_memory_of_gpu_args, flags);
SAME_SIZE(free_memory_of_gpu_args, kfd_ioctl_free_memory_of_gpu_args);
SAME_SIZE(map_memory_to_gpu_args, kfd_ioctl_map_memory_to_gpu_args);
SAME_OFF(map_memory_to_gpu_args, kfd_ioctl_map_memory_to_gpu_args, device_ids_array_ptr);
SAME_OFF(map_memory_to_gpu_args, kfd_ioctl_map_memory_to_gpu_args, n_devices);
SAME_OFF(map_memory_to_gpu_args, kfd_ioctl_map_memory_to_gpu_args, n_success);
SAME_SIZE(unmap_memory_from_gpu_args, kfd_ioctl_unmap_memory_from_gpu_args);
SAME_OFF(unmap_memory_from_gpu_args, kfd_ioctl_unmap_memory_from_gpu_args, n_success);
SAME_SIZE(alloc_queue_gws_args, kfd_ioctl_alloc_queue_gws_args);
SAME_SIZE(smi_events_args, kfd_ioctl_smi_events_args);
SAME_SIZE(set_xnack_mode_args, kfd_ioctl_set_xnack_mode_args);

TEST_CASE("request numbers equal the 1.11 uapi AMDKFD_IOC_* macros") {
  CHECK(k::amdkfd_ioc_get_version == AMDKFD_IOC_GET_VERSION);
  CHECK(k::amdkfd_ioc_create_queue_1_11 == AMDKFD_IOC_CREATE_QUEUE);
  CHECK(k::amdkfd_ioc_destroy_queue == AMDKFD_IOC_DESTROY_QUEUE);
  CHECK(k::amdkfd_ioc_set_memory_policy == AMDKFD_IOC_SET_MEMORY_POLICY);
  CHECK(k::amdkfd_ioc_get_clock_counters == AMDKFD_IOC_GET_CLOCK_COUNTERS);
  CHECK(k::amdkfd_ioc_get_process_apertures == AMDKFD_IOC_GET_PROCESS_APERTURES);
  CHECK(k::amdkfd_ioc_update_queue == AMDKFD_IOC_UPDATE_QUEUE);
  CHECK(k::amdkfd_ioc_create_event == AMDKFD_IOC_CREATE_EVENT);
  CHECK(k::amdkfd_ioc_destroy_event == AMDKFD_IOC_DESTROY_EVENT);
  CHECK(k::amdkfd_ioc_set_event == AMDKFD_IOC_SET_EVENT);
  CHECK(k::amdkfd_ioc_reset_event == AMDKFD_IOC_RESET_EVENT);
  CHECK(k::amdkfd_ioc_wait_events == AMDKFD_IOC_WAIT_EVENTS);
  CHECK(k::amdkfd_ioc_set_scratch_backing_va == AMDKFD_IOC_SET_SCRATCH_BACKING_VA);
  CHECK(k::amdkfd_ioc_get_tile_config == AMDKFD_IOC_GET_TILE_CONFIG);
  CHECK(k::amdkfd_ioc_set_trap_handler == AMDKFD_IOC_SET_TRAP_HANDLER);
  CHECK(k::amdkfd_ioc_get_process_apertures_new == AMDKFD_IOC_GET_PROCESS_APERTURES_NEW);
  CHECK(k::amdkfd_ioc_acquire_vm == AMDKFD_IOC_ACQUIRE_VM);
  CHECK(k::amdkfd_ioc_alloc_memory_of_gpu == AMDKFD_IOC_ALLOC_MEMORY_OF_GPU);
  CHECK(k::amdkfd_ioc_free_memory_of_gpu == AMDKFD_IOC_FREE_MEMORY_OF_GPU);
  CHECK(k::amdkfd_ioc_map_memory_to_gpu == AMDKFD_IOC_MAP_MEMORY_TO_GPU);
  CHECK(k::amdkfd_ioc_unmap_memory_from_gpu == AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU);
  CHECK(k::amdkfd_ioc_set_cu_mask == AMDKFD_IOC_SET_CU_MASK);
  CHECK(k::amdkfd_ioc_get_queue_wave_state == AMDKFD_IOC_GET_QUEUE_WAVE_STATE);
  CHECK(k::amdkfd_ioc_alloc_queue_gws == AMDKFD_IOC_ALLOC_QUEUE_GWS);
  CHECK(k::amdkfd_ioc_smi_events == AMDKFD_IOC_SMI_EVENTS);
  CHECK(k::amdkfd_ioc_set_xnack_mode == AMDKFD_IOC_SET_XNACK_MODE);
  CHECK(k::amdkfd_ioc_available_memory == AMDKFD_IOC_AVAILABLE_MEMORY);
  // The documented difference: same direction/type/nr, size 96 instead of 88.
  CHECK(k::amdkfd_ioc_create_queue != AMDKFD_IOC_CREATE_QUEUE);
  CHECK((k::amdkfd_ioc_create_queue & ~(0x3FFFul << 16)) == (AMDKFD_IOC_CREATE_QUEUE & ~(0x3FFFul << 16)));
  CHECK(k::ioc_size(k::amdkfd_ioc_create_queue) == 96);
  CHECK(k::command_start == AMDKFD_COMMAND_START);
  CHECK(AMDKFD_COMMAND_END == 0x24);  // 1.11; ours covers up to DBG_TRAP (0x26)
}

TEST_CASE("constants equal the 1.11 uapi values") {
  CHECK(k::queue_type_compute == KFD_IOC_QUEUE_TYPE_COMPUTE);
  CHECK(k::queue_type_sdma == KFD_IOC_QUEUE_TYPE_SDMA);
  CHECK(k::queue_type_compute_aql == KFD_IOC_QUEUE_TYPE_COMPUTE_AQL);
  CHECK(k::queue_type_sdma_xgmi == KFD_IOC_QUEUE_TYPE_SDMA_XGMI);
  CHECK(k::queue_type_sdma_by_eng_id == 4);  // 1.17, spec/kfd.md §2.3
  CHECK(k::max_queue_percentage == KFD_MAX_QUEUE_PERCENTAGE);
  CHECK(k::max_queue_priority == KFD_MAX_QUEUE_PRIORITY);
  CHECK(k::min_queue_ring_size == KFD_MIN_QUEUE_RING_SIZE);
  CHECK(k::alloc_mem_flags_vram == KFD_IOC_ALLOC_MEM_FLAGS_VRAM);
  CHECK(k::alloc_mem_flags_gtt == KFD_IOC_ALLOC_MEM_FLAGS_GTT);
  CHECK(k::alloc_mem_flags_userptr == KFD_IOC_ALLOC_MEM_FLAGS_USERPTR);
  CHECK(k::alloc_mem_flags_doorbell == KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL);
  CHECK(k::alloc_mem_flags_mmio_remap == KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP);
  CHECK(k::alloc_mem_flags_writable == static_cast<std::uint32_t>(KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE));
  CHECK(k::alloc_mem_flags_executable == KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE);
  CHECK(k::alloc_mem_flags_public == KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC);
  CHECK(k::alloc_mem_flags_no_substitute == KFD_IOC_ALLOC_MEM_FLAGS_NO_SUBSTITUTE);
  CHECK(k::alloc_mem_flags_aql_queue_mem == KFD_IOC_ALLOC_MEM_FLAGS_AQL_QUEUE_MEM);
  CHECK(k::alloc_mem_flags_coherent == KFD_IOC_ALLOC_MEM_FLAGS_COHERENT);
  CHECK(k::alloc_mem_flags_uncached == KFD_IOC_ALLOC_MEM_FLAGS_UNCACHED);
  CHECK(k::event_signal == KFD_IOC_EVENT_SIGNAL);
  CHECK(k::event_hw_exception == KFD_IOC_EVENT_HW_EXCEPTION);
  CHECK(k::event_memory == KFD_IOC_EVENT_MEMORY);
  CHECK(k::wait_result_complete == KFD_IOC_WAIT_RESULT_COMPLETE);
  CHECK(k::wait_result_timeout == KFD_IOC_WAIT_RESULT_TIMEOUT);
  CHECK(k::wait_result_fail == KFD_IOC_WAIT_RESULT_FAIL);
  CHECK(k::signal_event_limit == KFD_SIGNAL_EVENT_LIMIT);
  CHECK(k::cache_policy_noncoherent == KFD_IOC_CACHE_POLICY_NONCOHERENT);
  CHECK(k::num_of_supported_gpus == NUM_OF_SUPPORTED_GPUS);
}

TEST_CASE("ioctl_name names requests by nr like the kernel dispatch") {
  CHECK(std::string_view(k::ioctl_name(AMDKFD_IOC_CREATE_QUEUE)) == "AMDKFD_IOC_CREATE_QUEUE");
  CHECK(std::string_view(k::ioctl_name(k::amdkfd_ioc_create_queue)) == "AMDKFD_IOC_CREATE_QUEUE");
  CHECK(std::string_view(k::ioctl_name(AMDKFD_IOC_ACQUIRE_VM)) == "AMDKFD_IOC_ACQUIRE_VM");
  CHECK(std::string_view(k::ioctl_name(AMDKFD_IOC_AVAILABLE_MEMORY)) == "AMDKFD_IOC_AVAILABLE_MEMORY");
  CHECK(std::string_view(k::ioctl_name(AMDKFD_IOC_WAIT_EVENTS)) == "AMDKFD_IOC_WAIT_EVENTS");
  CHECK(std::string_view(k::ioctl_name(k::amdkfd_ioc_runtime_enable)) == "AMDKFD_IOC_RUNTIME_ENABLE");
  CHECK(std::string_view(k::ioctl_name(k::io(0x60))) == "AMDKFD_IOC_?");
  CHECK(std::string_view(k::ioctl_name(0x80086401ul)) == "AMDKFD_IOC_?");  // DRM type 'd'
}

TEST_CASE("mmap offset encoding (spec/kfd.md §3.2)") {
  // doorbell_offset for gpu_id 0x1234, doorbell id 3 on SOC15: (3<<62)|(gpu<<46)|3*8
  const std::uint64_t off = k::make_mmap_offset(k::mmap_type_doorbell, 0x1234, 24);
  CHECK(off == ((3ull << 62) | (0x1234ull << 46) | 24));
  CHECK(k::mmap_type_of(off) == k::mmap_type_doorbell);
  CHECK(k::mmap_gpu_id_of(off) == 0x1234);
  CHECK(k::mmap_offset_of(off) == 24);
  CHECK(k::mmap_type_events == (2ull << 62));
  CHECK(k::mmap_type_reserved_mem == (1ull << 62));
  CHECK(k::doorbell_slice_size(8) == 8192);  // SOC15: 2 pages
  CHECK(k::doorbell_slice_size(4) == 4096);  // gfx7/8
  CHECK(k::doorbell_bytes_for(90402) == 8);
  CHECK(k::doorbell_bytes_for(80003) == 4);
  CHECK(k::event_page_size == 32768);
}

}  // namespace AQ_UNITY_ID
