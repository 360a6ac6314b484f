// abi/aql.hpp, abi/amd_signal.hpp, abi/amd_queue.hpp, abi/kernel_descriptor.hpp checked against
// Debian's ROCm 5.2.3 C headers (libhsa-runtime-dev): every size, field offset, enum value and
// bit position must equal ROCr's. The expected values are the C headers themselves.
#include <aqueduct/abi/amd_queue.hpp>
#include <aqueduct/abi/amd_signal.hpp>
#include <aqueduct/abi/aql.hpp>
#include <aqueduct/abi/kernel_descriptor.hpp>

#include <hsa/amd_hsa_kernel_code.h>
#include <hsa/amd_hsa_queue.h>
#include <hsa/amd_hsa_signal.h>
#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>

#include <doctest/doctest.h>

#include <cstring>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

namespace abi = aqueduct::abi;

#define SAME_FIELD(ours, theirs, ofield, tfield)                        \
  static_assert(offsetof(ours, ofield) == offsetof(theirs, tfield));   \
  static_assert(sizeof(ours::ofield) == sizeof(((theirs*)nullptr)->tfield))
#define SAME(ours, theirs, field) SAME_FIELD(ours, theirs, field, field)

// ---- packet types, scopes, header bits (hsa.h) -------------------------------------------------
static_assert(static_cast<int>(abi::packet_type::vendor_specific) == HSA_PACKET_TYPE_VENDOR_SPECIFIC);
static_assert(static_cast<int>(abi::packet_type::invalid) == HSA_PACKET_TYPE_INVALID);
static_assert(static_cast<int>(abi::packet_type::kernel_dispatch) == HSA_PACKET_TYPE_KERNEL_DISPATCH);
static_assert(static_cast<int>(abi::packet_type::barrier_and) == HSA_PACKET_TYPE_BARRIER_AND);
static_assert(static_cast<int>(abi::packet_type::agent_dispatch) == HSA_PACKET_TYPE_AGENT_DISPATCH);
static_assert(static_cast<int>(abi::packet_type::barrier_or) == HSA_PACKET_TYPE_BARRIER_OR);
static_assert(static_cast<int>(abi::fence_scope::none) == HSA_FENCE_SCOPE_NONE);
static_assert(static_cast<int>(abi::fence_scope::agent) == HSA_FENCE_SCOPE_AGENT);
static_assert(static_cast<int>(abi::fence_scope::system) == HSA_FENCE_SCOPE_SYSTEM);
static_assert(abi::aql_header::type::lo == HSA_PACKET_HEADER_TYPE);
static_assert(abi::aql_header::type::width == HSA_PACKET_HEADER_WIDTH_TYPE);
static_assert(abi::aql_header::barrier::lo == HSA_PACKET_HEADER_BARRIER);
static_assert(abi::aql_header::barrier::width == HSA_PACKET_HEADER_WIDTH_BARRIER);
static_assert(abi::aql_header::scacquire_fence_scope::lo == HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE);
static_assert(abi::aql_header::scacquire_fence_scope::width == HSA_PACKET_HEADER_WIDTH_SCACQUIRE_FENCE_SCOPE);
static_assert(abi::aql_header::screlease_fence_scope::lo == HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE);
static_assert(abi::aql_header::screlease_fence_scope::width == HSA_PACKET_HEADER_WIDTH_SCRELEASE_FENCE_SCOPE);
static_assert(abi::dispatch_setup::dimensions::lo == HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS);
static_assert(abi::dispatch_setup::dimensions::width == HSA_KERNEL_DISPATCH_PACKET_SETUP_WIDTH_DIMENSIONS);
static_assert(static_cast<int>(abi::signal_condition::eq) == HSA_SIGNAL_CONDITION_EQ);
static_assert(static_cast<int>(abi::signal_condition::ne) == HSA_SIGNAL_CONDITION_NE);
static_assert(static_cast<int>(abi::signal_condition::lt) == HSA_SIGNAL_CONDITION_LT);
static_assert(static_cast<int>(abi::signal_condition::gte) == HSA_SIGNAL_CONDITION_GTE);
static_assert(static_cast<int>(abi::amd_packet_format::barrier_value) == HSA_AMD_PACKET_TYPE_BARRIER_VALUE);

// ---- packets -------------------------------------------------------------------------------------
static_assert(sizeof(abi::kernel_dispatch_packet) == sizeof(hsa_kernel_dispatch_packet_t));
static_assert(alignof(abi::kernel_dispatch_packet) == alignof(hsa_kernel_dispatch_packet_t));
SAME(abi::kernel_dispatch_packet, hsa_kernel_dispatch_packet_t, header);
SAME(abi::kernel_dispatch_packet, hsa_kernel_dispatch_packet_t, setup);
SAME(abi::kernel_dispatch_packet, hsa_kernel_dispatch_packet_t, workgroup_size_x);
SAME(abi::kernel_dispatch_packet, hsa_kernel_dispatch_packet_t, workgroup_size_y);
SAME(abi::kernel_dispatch_packet, hsa_kernel_dispatch_packet_t, workgroup_size_z);
SAME(abi::kernel_dispatch_packet, hsa_kernel_dispatch_packet_t, reserved0);
SAME(abi::kernel_dispatch_packet, hsa_kernel_dispatch_packet_t, grid_size_x);
SAME(abi::kernel_dispatch_packet, hsa_kernel_dispatch_packet_t, grid_size_y);
SAME(abi::kernel_dispatch_packet, hsa_kernel_dispatch_packet_t, grid_size_z);
SAME(abi::kernel_dispatch_packet, hsa_kernel_dispatch_packet_t, private_segment_size);
SAME(abi::kernel_dispatch_packet, hsa_kernel_dispatch_packet_t, group_segment_size);
SAME(abi::kernel_dispatch_packet, hsa_kernel_dispatch_packet_t, kernel_object);
SAME(abi::kernel_dispatch_packet, hsa_kernel_dispatch_packet_t, kernarg_address);
SAME(abi::kernel_dispatch_packet, hsa_kernel_dispatch_packet_t, reserved2);
SAME(abi::kernel_dispatch_packet, hsa_kernel_dispatch_packet_t, completion_signal);

static_assert(sizeof(abi::agent_dispatch_packet) == sizeof(hsa_agent_dispatch_packet_t));
SAME(abi::agent_dispatch_packet, hsa_agent_dispatch_packet_t, header);
SAME(abi::agent_dispatch_packet, hsa_agent_dispatch_packet_t, type);
SAME(abi::agent_dispatch_packet, hsa_agent_dispatch_packet_t, reserved0);
SAME(abi::agent_dispatch_packet, hsa_agent_dispatch_packet_t, return_address);
SAME(abi::agent_dispatch_packet, hsa_agent_dispatch_packet_t, arg);
SAME(abi::agent_dispatch_packet, hsa_agent_dispatch_packet_t, reserved2);
SAME(abi::agent_dispatch_packet, hsa_agent_dispatch_packet_t, completion_signal);

static_assert(sizeof(abi::barrier_and_packet) == sizeof(hsa_barrier_and_packet_t));
SAME(abi::barrier_and_packet, hsa_barrier_and_packet_t, header);
SAME(abi::barrier_and_packet, hsa_barrier_and_packet_t, reserved0);
SAME(abi::barrier_and_packet, hsa_barrier_and_packet_t, reserved1);
SAME(abi::barrier_and_packet, hsa_barrier_and_packet_t, dep_signal);
SAME(abi::barrier_and_packet, hsa_barrier_and_packet_t, reserved2);
SAME(abi::barrier_and_packet, hsa_barrier_and_packet_t, completion_signal);
static_assert(sizeof(abi::barrier_or_packet) == sizeof(hsa_barrier_or_packet_t));
SAME(abi::barrier_or_packet, hsa_barrier_or_packet_t, header);
SAME(abi::barrier_or_packet, hsa_barrier_or_packet_t, reserved0);
SAME(abi::barrier_or_packet, hsa_barrier_or_packet_t, reserved1);
SAME(abi::barrier_or_packet, hsa_barrier_or_packet_t, dep_signal);
SAME(abi::barrier_or_packet, hsa_barrier_or_packet_t, reserved2);
SAME(abi::barrier_or_packet, hsa_barrier_or_packet_t, completion_signal);

static_assert(sizeof(abi::amd_vendor_packet_header) == sizeof(hsa_amd_vendor_packet_header_t));
SAME(abi::amd_vendor_packet_header, hsa_amd_vendor_packet_header_t, header);
SAME_FIELD(abi::amd_vendor_packet_header, hsa_amd_vendor_packet_header_t, amd_format, AmdFormat);
SAME(abi::amd_vendor_packet_header, hsa_amd_vendor_packet_header_t, reserved);
static_assert(sizeof(abi::amd_barrier_value_packet) == sizeof(hsa_amd_barrier_value_packet_t));
SAME(abi::amd_barrier_value_packet, hsa_amd_barrier_value_packet_t, header);
SAME(abi::amd_barrier_value_packet, hsa_amd_barrier_value_packet_t, reserved0);
SAME(abi::amd_barrier_value_packet, hsa_amd_barrier_value_packet_t, signal);
SAME(abi::amd_barrier_value_packet, hsa_amd_barrier_value_packet_t, value);
SAME(abi::amd_barrier_value_packet, hsa_amd_barrier_value_packet_t, mask);
SAME(abi::amd_barrier_value_packet, hsa_amd_barrier_value_packet_t, cond);
SAME(abi::amd_barrier_value_packet, hsa_amd_barrier_value_packet_t, reserved1);
SAME(abi::amd_barrier_value_packet, hsa_amd_barrier_value_packet_t, reserved2);
SAME(abi::amd_barrier_value_packet, hsa_amd_barrier_value_packet_t, reserved3);
SAME(abi::amd_barrier_value_packet, hsa_amd_barrier_value_packet_t, completion_signal);

// ---- amd_signal_t ----------------------------------------------------------------------------------
static_assert(sizeof(abi::amd_signal) == sizeof(amd_signal_t));
static_assert(alignof(abi::amd_signal) == alignof(amd_signal_t));
static_assert(abi::amd_signal_align == AMD_SIGNAL_ALIGN_BYTES);
SAME(abi::amd_signal, amd_signal_t, kind);
SAME(abi::amd_signal, amd_signal_t, value);
SAME_FIELD(abi::amd_signal, amd_signal_t, value, hardware_doorbell_ptr);
SAME(abi::amd_signal, amd_signal_t, event_mailbox_ptr);
SAME(abi::amd_signal, amd_signal_t, event_id);
SAME(abi::amd_signal, amd_signal_t, reserved1);
SAME(abi::amd_signal, amd_signal_t, start_ts);
SAME(abi::amd_signal, amd_signal_t, end_ts);
SAME(abi::amd_signal, amd_signal_t, queue_ptr);
SAME(abi::amd_signal, amd_signal_t, reserved3);
static_assert(static_cast<std::int64_t>(abi::amd_signal_kind::invalid) == AMD_SIGNAL_KIND_INVALID);
static_assert(static_cast<std::int64_t>(abi::amd_signal_kind::user) == AMD_SIGNAL_KIND_USER);
static_assert(static_cast<std::int64_t>(abi::amd_signal_kind::doorbell) == AMD_SIGNAL_KIND_DOORBELL);
static_assert(static_cast<std::int64_t>(abi::amd_signal_kind::legacy_doorbell) == AMD_SIGNAL_KIND_LEGACY_DOORBELL);

// ---- hsa_queue_t / amd_queue_t ------------------------------------------------------------------------
static_assert(sizeof(abi::hsa_queue) == sizeof(hsa_queue_t));
SAME(abi::hsa_queue, hsa_queue_t, type);
SAME(abi::hsa_queue, hsa_queue_t, features);
SAME(abi::hsa_queue, hsa_queue_t, base_address);
SAME(abi::hsa_queue, hsa_queue_t, doorbell_signal);
SAME(abi::hsa_queue, hsa_queue_t, size);
SAME(abi::hsa_queue, hsa_queue_t, reserved1);
SAME(abi::hsa_queue, hsa_queue_t, id);
static_assert(static_cast<int>(abi::hsa_queue_type::multi) == HSA_QUEUE_TYPE_MULTI);
static_assert(static_cast<int>(abi::hsa_queue_type::single) == HSA_QUEUE_TYPE_SINGLE);
static_assert(static_cast<int>(abi::hsa_queue_type::cooperative) == HSA_QUEUE_TYPE_COOPERATIVE);
static_assert(abi::hsa_queue_feature::kernel_dispatch == HSA_QUEUE_FEATURE_KERNEL_DISPATCH);
static_assert(abi::hsa_queue_feature::agent_dispatch == HSA_QUEUE_FEATURE_AGENT_DISPATCH);

static_assert(sizeof(abi::amd_queue) == sizeof(amd_queue_t));
static_assert(alignof(abi::amd_queue) == alignof(amd_queue_t));
static_assert(abi::amd_queue_align == AMD_QUEUE_ALIGN_BYTES);
SAME_FIELD(abi::amd_queue, amd_queue_t, hsa, hsa_queue);
SAME(abi::amd_queue, amd_queue_t, reserved1);
SAME(abi::amd_queue, amd_queue_t, write_dispatch_id);
SAME(abi::amd_queue, amd_queue_t, group_segment_aperture_base_hi);
SAME(abi::amd_queue, amd_queue_t, private_segment_aperture_base_hi);
SAME(abi::amd_queue, amd_queue_t, max_cu_id);
SAME(abi::amd_queue, amd_queue_t, max_wave_id);
SAME(abi::amd_queue, amd_queue_t, max_legacy_doorbell_dispatch_id_plus_1);
SAME(abi::amd_queue, amd_queue_t, legacy_doorbell_lock);
SAME(abi::amd_queue, amd_queue_t, reserved2);
SAME(abi::amd_queue, amd_queue_t, read_dispatch_id);
SAME(abi::amd_queue, amd_queue_t, read_dispatch_id_field_base_byte_offset);
SAME(abi::amd_queue, amd_queue_t, compute_tmpring_size);
SAME(abi::amd_queue, amd_queue_t, scratch_resource_descriptor);
SAME(abi::amd_queue, amd_queue_t, scratch_backing_memory_location);
SAME(abi::amd_queue, amd_queue_t, scratch_backing_memory_byte_size);
SAME(abi::amd_queue, amd_queue_t, scratch_wave64_lane_byte_size);
SAME(abi::amd_queue, amd_queue_t, queue_properties);
SAME(abi::amd_queue, amd_queue_t, reserved3);
SAME(abi::amd_queue, amd_queue_t, queue_inactive_signal);
SAME(abi::amd_queue, amd_queue_t, reserved4);

#define SAME_BITS(ours, theirs)                                                  \
  static_assert((ours::mask) == static_cast<std::uint32_t>(theirs) &&            \
                (ours::lo) == theirs##_SHIFT && (ours::width) == theirs##_WIDTH)
SAME_BITS(abi::amd_queue_properties::enable_trap_handler, AMD_QUEUE_PROPERTIES_ENABLE_TRAP_HANDLER);
SAME_BITS(abi::amd_queue_properties::is_ptr64, AMD_QUEUE_PROPERTIES_IS_PTR64);
SAME_BITS(abi::amd_queue_properties::enable_trap_handler_debug_sgprs,
          AMD_QUEUE_PROPERTIES_ENABLE_TRAP_HANDLER_DEBUG_SGPRS);
SAME_BITS(abi::amd_queue_properties::enable_profiling, AMD_QUEUE_PROPERTIES_ENABLE_PROFILING);
SAME_BITS(abi::amd_queue_properties::use_scratch_once, AMD_QUEUE_PROPERTIES_USE_SCRATCH_ONCE);

// ---- RSRC and property bits (amd_hsa_kernel_code.h describes the legacy amd_kernel_code_t,
// whose compute_pgm_rsrc1/2 words and property bits 0..6 are the same hardware fields) ----------
namespace r1 = abi::compute_pgm_rsrc1;
SAME_BITS(r1::granulated_workitem_vgpr_count, AMD_COMPUTE_PGM_RSRC_ONE_GRANULATED_WORKITEM_VGPR_COUNT);
SAME_BITS(r1::granulated_wavefront_sgpr_count, AMD_COMPUTE_PGM_RSRC_ONE_GRANULATED_WAVEFRONT_SGPR_COUNT);
SAME_BITS(r1::priority, AMD_COMPUTE_PGM_RSRC_ONE_PRIORITY);
SAME_BITS(r1::float_round_mode_32, AMD_COMPUTE_PGM_RSRC_ONE_FLOAT_ROUND_MODE_32);
SAME_BITS(r1::float_round_mode_16_64, AMD_COMPUTE_PGM_RSRC_ONE_FLOAT_ROUND_MODE_16_64);
SAME_BITS(r1::float_denorm_mode_32, AMD_COMPUTE_PGM_RSRC_ONE_FLOAT_DENORM_MODE_32);
SAME_BITS(r1::float_denorm_mode_16_64, AMD_COMPUTE_PGM_RSRC_ONE_FLOAT_DENORM_MODE_16_64);
SAME_BITS(r1::priv, AMD_COMPUTE_PGM_RSRC_ONE_PRIV);
SAME_BITS(r1::enable_dx10_clamp, AMD_COMPUTE_PGM_RSRC_ONE_ENABLE_DX10_CLAMP);
SAME_BITS(r1::debug_mode, AMD_COMPUTE_PGM_RSRC_ONE_DEBUG_MODE);
SAME_BITS(r1::enable_ieee_mode, AMD_COMPUTE_PGM_RSRC_ONE_ENABLE_IEEE_MODE);
SAME_BITS(r1::bulky, AMD_COMPUTE_PGM_RSRC_ONE_BULKY);
SAME_BITS(r1::cdbg_user, AMD_COMPUTE_PGM_RSRC_ONE_CDBG_USER);
// The 5.2.3 header marks 31:26 reserved; FP16_OVFL (26), WGP_MODE (29), MEM_ORDERED (30) and
// FWD_PROGRESS (31) are newer (spec/code-objects.md §3.3) and must lie inside that range.
static_assert((r1::fp16_ovfl::mask | r1::wgp_mode::mask | r1::mem_ordered::mask | r1::fwd_progress::mask) ==
              (static_cast<std::uint32_t>(AMD_COMPUTE_PGM_RSRC_ONE_RESERVED1) & 0xE4000000u));

namespace r2 = abi::compute_pgm_rsrc2;
SAME_BITS(r2::enable_private_segment, AMD_COMPUTE_PGM_RSRC_TWO_ENABLE_SGPR_PRIVATE_SEGMENT_WAVE_BYTE_OFFSET);
SAME_BITS(r2::user_sgpr_count, AMD_COMPUTE_PGM_RSRC_TWO_USER_SGPR_COUNT);
SAME_BITS(r2::enable_trap_handler, AMD_COMPUTE_PGM_RSRC_TWO_ENABLE_TRAP_HANDLER);
SAME_BITS(r2::enable_sgpr_workgroup_id_x, AMD_COMPUTE_PGM_RSRC_TWO_ENABLE_SGPR_WORKGROUP_ID_X);
SAME_BITS(r2::enable_sgpr_workgroup_id_y, AMD_COMPUTE_PGM_RSRC_TWO_ENABLE_SGPR_WORKGROUP_ID_Y);
SAME_BITS(r2::enable_sgpr_workgroup_id_z, AMD_COMPUTE_PGM_RSRC_TWO_ENABLE_SGPR_WORKGROUP_ID_Z);
SAME_BITS(r2::enable_sgpr_workgroup_info, AMD_COMPUTE_PGM_RSRC_TWO_ENABLE_SGPR_WORKGROUP_INFO);
SAME_BITS(r2::enable_vgpr_workitem_id, AMD_COMPUTE_PGM_RSRC_TWO_ENABLE_VGPR_WORKITEM_ID);
SAME_BITS(r2::enable_exception_address_watch, AMD_COMPUTE_PGM_RSRC_TWO_ENABLE_EXCEPTION_ADDRESS_WATCH);
SAME_BITS(r2::enable_exception_memory, AMD_COMPUTE_PGM_RSRC_TWO_ENABLE_EXCEPTION_MEMORY_VIOLATION);
SAME_BITS(r2::granulated_lds_size, AMD_COMPUTE_PGM_RSRC_TWO_GRANULATED_LDS_SIZE);
SAME_BITS(r2::enable_exception_ieee_754_fp_invalid_operation,
          AMD_COMPUTE_PGM_RSRC_TWO_ENABLE_EXCEPTION_IEEE_754_FP_INVALID_OPERATION);
SAME_BITS(r2::enable_exception_fp_denormal_source, AMD_COMPUTE_PGM_RSRC_TWO_ENABLE_EXCEPTION_FP_DENORMAL_SOURCE);
SAME_BITS(r2::enable_exception_ieee_754_fp_division_by_zero,
          AMD_COMPUTE_PGM_RSRC_TWO_ENABLE_EXCEPTION_IEEE_754_FP_DIVISION_BY_ZERO);
SAME_BITS(r2::enable_exception_ieee_754_fp_overflow, AMD_COMPUTE_PGM_RSRC_TWO_ENABLE_EXCEPTION_IEEE_754_FP_OVERFLOW);
SAME_BITS(r2::enable_exception_ieee_754_fp_underflow,
          AMD_COMPUTE_PGM_RSRC_TWO_ENABLE_EXCEPTION_IEEE_754_FP_UNDERFLOW);
SAME_BITS(r2::enable_exception_ieee_754_fp_inexact, AMD_COMPUTE_PGM_RSRC_TWO_ENABLE_EXCEPTION_IEEE_754_FP_INEXACT);
SAME_BITS(r2::enable_exception_int_division_by_zero,
          AMD_COMPUTE_PGM_RSRC_TWO_ENABLE_EXCEPTION_INT_DIVISION_BY_ZERO);
static_assert(AMD_SYSTEM_VGPR_WORKITEM_ID_X_Y_Z == 2);

namespace kcp = abi::kernel_code_properties;
SAME_BITS(kcp::enable_sgpr_private_segment_buffer, AMD_KERNEL_CODE_PROPERTIES_ENABLE_SGPR_PRIVATE_SEGMENT_BUFFER);
SAME_BITS(kcp::enable_sgpr_dispatch_ptr, AMD_KERNEL_CODE_PROPERTIES_ENABLE_SGPR_DISPATCH_PTR);
SAME_BITS(kcp::enable_sgpr_queue_ptr, AMD_KERNEL_CODE_PROPERTIES_ENABLE_SGPR_QUEUE_PTR);
SAME_BITS(kcp::enable_sgpr_kernarg_segment_ptr, AMD_KERNEL_CODE_PROPERTIES_ENABLE_SGPR_KERNARG_SEGMENT_PTR);
SAME_BITS(kcp::enable_sgpr_dispatch_id, AMD_KERNEL_CODE_PROPERTIES_ENABLE_SGPR_DISPATCH_ID);
SAME_BITS(kcp::enable_sgpr_flat_scratch_init, AMD_KERNEL_CODE_PROPERTIES_ENABLE_SGPR_FLAT_SCRATCH_INIT);
SAME_BITS(kcp::enable_sgpr_private_segment_size, AMD_KERNEL_CODE_PROPERTIES_ENABLE_SGPR_PRIVATE_SEGMENT_SIZE);
// The v3 descriptor kept the legacy amd_kernel_code_t's offsets of the two RSRC words and the
// property word (48/52/56; spec/packets.md §5.4 last line).
static_assert(offsetof(amd_kernel_code_t, compute_pgm_rsrc1) == offsetof(abi::kernel_descriptor, compute_pgm_rsrc1));
static_assert(offsetof(amd_kernel_code_t, compute_pgm_rsrc2) == offsetof(abi::kernel_descriptor, compute_pgm_rsrc2));
static_assert(offsetof(amd_kernel_code_t, kernel_code_properties) ==
              offsetof(abi::kernel_descriptor, kernel_code_properties));
static_assert(AMD_ISA_ALIGN_BYTES == abi::kernel_code_entry_align);

// ---- runtime checks: a header built here reads back through ROCr's own shift/width enums ------
TEST_CASE("make_header matches hsa.h shifts") {
  const std::uint16_t h = abi::make_header(abi::packet_type::kernel_dispatch, true, abi::fence_scope::agent,
                                           abi::fence_scope::system);
  const std::uint16_t expect = static_cast<std::uint16_t>(
      (HSA_PACKET_TYPE_KERNEL_DISPATCH << HSA_PACKET_HEADER_TYPE) | (1 << HSA_PACKET_HEADER_BARRIER) |
      (HSA_FENCE_SCOPE_AGENT << HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE) |
      (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE));
  CHECK(h == expect);
  // header|setup as written by ROCr's one 32-bit store: setup (dims) in the upper half.
  const std::uint32_t hs = abi::make_header_setup(h, abi::make_dispatch_setup(3));
  hsa_kernel_dispatch_packet_t p{};
  std::memcpy(&p, &hs, sizeof hs);
  CHECK(p.header == expect);
  CHECK(p.setup == (3u << HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS));
  const auto d = abi::decode_header(h);
  CHECK(d.type == HSA_PACKET_TYPE_KERNEL_DISPATCH);
  CHECK(d.barrier);
  CHECK(d.acquire_scope == HSA_FENCE_SCOPE_AGENT);
  CHECK(d.release_scope == HSA_FENCE_SCOPE_SYSTEM);
  CHECK(d.reserved == 0);
}

TEST_CASE("vendor barrier-value first dword") {
  const std::uint16_t h = abi::make_header(abi::packet_type::vendor_specific, false, abi::fence_scope::none,
                                           abi::fence_scope::system);
  const std::uint32_t dw0 = abi::make_vendor_header(h, abi::amd_packet_format::barrier_value);
  hsa_amd_barrier_value_packet_t p{};
  std::memcpy(&p, &dw0, sizeof dw0);
  CHECK(p.header.header == h);
  CHECK(p.header.AmdFormat == HSA_AMD_PACKET_TYPE_BARRIER_VALUE);
  CHECK(p.header.reserved == 0);
}

TEST_CASE("user SGPR widths (AMDGPUUsage / spec/packets.md §1.6)") {
  // vadd on gfx900: properties 0x0009 (private segment buffer + kernarg ptr) → 6 user SGPRs,
  // gfx942 0x0008 → 2 (spec/code-objects.md §3.5 measured USER_SGPR_COUNT).
  CHECK(abi::enabled_user_sgpr_count(0x0009) == 6);
  CHECK(abi::enabled_user_sgpr_count(0x0008) == 2);
  CHECK(abi::enabled_user_sgpr_count(0x0409) == 6);  // gfx1030 wave32
  CHECK(abi::enabled_user_sgpr_count(0x007F) == 15);
  // AMDGPUUsage order: private segment buffer s[0:3], dispatch ptr s[4:5], queue ptr s[6:7],
  // kernarg ptr s[8:9], dispatch id s[10:11], flat scratch init s[12:13], private size s14.
  CHECK(abi::user_sgpr_offset(0x007F, abi::user_sgpr::kernarg_segment_ptr) == 8);
  CHECK(abi::user_sgpr_offset(0x007F, abi::user_sgpr::private_segment_size) == 14);
  CHECK(abi::user_sgpr_offset(0x0009, abi::user_sgpr::kernarg_segment_ptr) == 4);  // gfx900 vadd: s[4:5]
  CHECK(abi::user_sgpr_offset(0x0008, abi::user_sgpr::kernarg_segment_ptr) == 0);  // gfx942 vadd: s[0:1]
  CHECK(abi::user_sgpr_offset(0x0008, abi::user_sgpr::dispatch_ptr) == -1);
}

}  // namespace AQ_UNITY_ID
