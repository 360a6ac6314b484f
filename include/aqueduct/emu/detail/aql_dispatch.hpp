// aqueduct/emu/detail/aql_dispatch.hpp — what an AQL kernel-dispatch packet launches: the packet and
// its kernel descriptor checked as the CP checks them, turned into the dispatch plan every engine
// runs (emu/workgroup_executor.hpp).
//
// Layer: emu (detail, not API). The CP reads the 64-byte kernel descriptor at kernel_object, finds
// the code at its kernel_code_entry_byte_offset (an emulated code blob naming a host kernel, or
// machine code for the ISA interpreter), and fills what the waves get from the CP: dispatch and
// queue pointers, the scratch SRD and base from the amd_queue, the kernarg preload copy
// (spec/packets.md §5.5, AMDGPUUsage initial state). Dimensions, workgroup sizes, descriptor
// consistency, LDS and every address the dispatch will use are checked first; a refusal is a
// `reject` (detail/decoded.hpp) the AQL engine stops its queue with.
// Thread safety: pure function of its arguments (the VM, the amd_queue and the registry are read).
#pragma once

#include <aqueduct/abi/amd_queue.hpp>
#include <aqueduct/abi/amd_signal.hpp>
#include <aqueduct/abi/aql.hpp>
#include <aqueduct/abi/kernel_descriptor.hpp>
#include <aqueduct/arch/family.hpp>
#include <aqueduct/config.hpp>
#include <aqueduct/emu/detail/decoded.hpp>
#include <aqueduct/emu/engine_error.hpp>
#include <aqueduct/emu/engine_ports.hpp>
#include <aqueduct/emu/host_kernel.hpp>
#include <aqueduct/emu/wave_state.hpp>
#include <aqueduct/emu/workgroup_executor.hpp>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#if AQUEDUCT_X86_64  // SSE2 is part of x86-64
#  include <emmintrin.h>
#endif

namespace aqueduct::emu::detail {

// The queue a packet came from, as the CP knows it.
struct aql_dispatch_source {
  arch::family family = arch::family::gfx11;
  std::uint64_t packet_va = 0;     // the slot (the dispatch pointer SGPRs name it)
  std::uint64_t packet_index = 0;  // the dispatch id
  std::uint64_t amd_queue_va = 0;  // 0: none (no queue pointer, no scratch SRD, no profiling)
  std::uint32_t max_lds_bytes = 64 * 1024;
  // The amd_queue's host address when the caller knows it (null: asked of the VM).
  abi::amd_queue* amd_queue_host = nullptr;
};

// a[0..64) == b[0..64): four 16-byte compares where SSE2 is there (the memo's descriptor and
// code-blob checks, once per dispatch: libc's memcmp call cost ~25 instructions each).
[[nodiscard]] inline bool equal_64_bytes(const void* a, const void* b) noexcept {
#if AQUEDUCT_X86_64  // SSE2 is part of x86-64
  const auto* x = static_cast<const __m128i*>(a);
  const auto* y = static_cast<const __m128i*>(b);
  const __m128i e = _mm_and_si128(
      _mm_and_si128(_mm_cmpeq_epi8(_mm_loadu_si128(x), _mm_loadu_si128(y)),
                    _mm_cmpeq_epi8(_mm_loadu_si128(x + 1), _mm_loadu_si128(y + 1))),
      _mm_and_si128(_mm_cmpeq_epi8(_mm_loadu_si128(x + 2), _mm_loadu_si128(y + 2)),
                    _mm_cmpeq_epi8(_mm_loadu_si128(x + 3), _mm_loadu_si128(y + 3))));
  return _mm_movemask_epi8(e) == 0xFFFF;
#else
  return std::memcmp(a, b, 64) == 0;
#endif
}

// The packet's dispatch-invariant bytes: setup, workgroup and grid sizes, private and group
// segment sizes, kernel object (bytes 2-39; the header's two bytes masked off).
using aql_dispatch_shape = std::array<std::uint64_t, 5>;
[[nodiscard]] inline aql_dispatch_shape shape_of(const abi::kernel_dispatch_packet& p) noexcept {
  static_assert(offsetof(abi::kernel_dispatch_packet, kernarg_address) == 40);
  aql_dispatch_shape s;
  std::memcpy(s.data(), &p, sizeof s);
  s[0] &= ~std::uint64_t{0xFFFF};
  return s;
}

// a == b word by word (std::array's operator== calls memcmp).
[[nodiscard]] inline bool same_shape_words(const aql_dispatch_shape& a, const aql_dispatch_shape& b) noexcept {
  return ((a[0] ^ b[0]) | (a[1] ^ b[1]) | (a[2] ^ b[2]) | (a[3] ^ b[3]) | (a[4] ^ b[4])) == 0;
}

struct aql_dispatch {
  dispatch_plan plan;
  std::vector<std::uint32_t> kernarg_copy;  // kernarg preload (plan.inputs.kernarg_host points here)
  std::uint64_t total_wg = 0;
  unsigned waves_per_wg = 1;
  bool profiling = false;  // the amd_queue asks for start/end timestamps in the completion signal
  // What the plan's packet-invariant part was derived from (plan_aql_dispatch): the packet's
  // shape, the queue's LDS limit and family, and the kernel_object_cache epoch of the descriptor
  // it checked (0: nothing to reuse).
  aql_dispatch_shape shape{};
  std::uint32_t shape_max_lds = 0;
  std::uint64_t shape_epoch = 0;
};

// A completion or dependency signal the CP may touch: none, or why not. A signal the GPU's VM
// does not map is a GPU page fault (signal_not_mapped: the CP is a UTCL2 client, "CPC"/"CPF" in
// Linux's gmc_v9_0.c gfxhub_client_ids); one not on its 64-byte boundary (amd_hsa_signal.h
// AMD_SIGNAL_ALIGN_BYTES) is this emulator's own check of the packet, a queue error.
[[nodiscard]] inline engine_fault aql_signal_fault(const vm_access& vm, std::uint64_t va) noexcept {
  if (va % abi::amd_signal_align != 0) return engine_fault::misaligned_address;
  return vm.is_mapped(va, sizeof(abi::amd_signal)) ? engine_fault::none : engine_fault::signal_not_mapped;
}

// The processor's memo of the last kernel object it checked (one per processor thread). A CP
// checks the descriptor and the code entry of every dispatch; when the kernel object is the
// last one's, its descriptor and code blob hold the same bytes, and neither the VM nor the
// host-kernel registry moved since (their generations), every one of those checks has the same
// answer, so only the bytes are compared. Host kernels only (machine code is decoded afresh per
// dispatch: plan.serial); a VM reporting generation 0 is never memoized.
struct kernel_object_cache {
  host_kernel_cache kernels;  // the last registry lookup
  std::uint64_t kernel_object = 0;
  std::uint64_t vm_generation = 0;  // 0: nothing memoized
  std::uint64_t registry_generation = 0;
  const host_kernel_registry* registry = nullptr;
  arch::family family = arch::family::gfx11;
  abi::kernel_descriptor kd{};
  emulated_code_blob blob{};
  // Where kd and blob are read from: host addresses, stable while the VM's generation is
  // vm_generation (a mapping changes only with the generation).
  const void* kd_host = nullptr;
  const void* blob_host = nullptr;
  std::shared_ptr<const host_kernel_fn> fn;  // what the registry gave for the blob's name
  // Moves on whenever the memo above is rewritten: a plan derived under epoch e (aql_dispatch::
  // shape_epoch) was derived from this descriptor while it still is e.
  std::uint64_t epoch = 0;
};

// The memo (kernel_object_cache) holds p's kernel object under the VM and registry generations
// of now, and its descriptor and code blob still hold the bytes it checked.
[[nodiscard]] inline bool kernel_object_memo_holds(const abi::kernel_dispatch_packet& p, const aql_dispatch_source& q,
                                                   std::uint64_t vm_gen, std::uint64_t reg_gen,
                                                   const host_kernel_registry& registry,
                                                   const kernel_object_cache& cache) noexcept {
  static_assert(sizeof(abi::kernel_descriptor) == 64 && sizeof(emulated_code_blob) == 64);  // equal_64_bytes
  return vm_gen != 0 && cache.vm_generation == vm_gen && cache.kernel_object == p.kernel_object &&
         cache.registry == &registry && cache.registry_generation == reg_gen && cache.family == q.family &&
         equal_64_bytes(cache.kd_host, &cache.kd) && equal_64_bytes(cache.blob_host, &cache.blob);
}

// The kernel object's checks (descriptor, code entry, host kernel or machine code) into
// plan.kd, plan.fn, plan.code_entry; `cache` may answer them (kernel_object_cache). `epoch`:
// the cache epoch the answer belongs to (0: not memoized).
[[nodiscard]] inline reject plan_kernel_object(const abi::kernel_dispatch_packet& p, const aql_dispatch_source& q,
                                               const vm_access& vm, const host_kernel_registry& registry,
                                               dispatch_plan& plan, kernel_object_cache* cache, std::uint64_t& epoch) {
  epoch = 0;
  // Read before anything is checked. Through a translation cache (emu/vm_tlb.hpp) the VM's is
  // the generation of its last sync(), which every check of this packet answers for; read from
  // the VM itself, and for the registry, a change during the checks moves it on. Either way what
  // the checks found is never memoized under a generation it does not belong to.
  const std::uint64_t vm_gen = cache ? vm.generation() : 0;
  const std::uint64_t reg_gen = cache ? registry.generation() : 0;
  if (cache && kernel_object_memo_holds(p, q, vm_gen, reg_gen, registry, *cache)) {
    epoch = cache->epoch;
    plan.kd = cache->kd;
    if (plan.fn != cache->fn) plan.fn = cache->fn;  // a recycled plan often holds it already: no refcount traffic
    plan.code_entry = 0;
    return {};
  }
  if (p.kernel_object % 64 != 0)
    return refuse(engine_fault::misaligned_address, "kernel object not on a 64-byte boundary", p.kernel_object);
  if (p.kernel_object == 0 || !vm.is_mapped(p.kernel_object, sizeof(abi::kernel_descriptor)))
    return refuse(engine_fault::kernel_object_not_mapped, "", p.kernel_object);  // the CP's read of it faults
  std::memcpy(&plan.kd, vm.host_address(p.kernel_object), sizeof plan.kd);
  const auto& kd = plan.kd;
  const std::uint64_t entry = p.kernel_object + static_cast<std::uint64_t>(kd.kernel_code_entry_byte_offset);
  if (entry % abi::kernel_code_entry_align != 0)
    return refuse(engine_fault::bad_kernel_descriptor, "kernel code entry misaligned", entry);
  if (!vm.is_mapped(entry, sizeof(emulated_code_blob)))
    return refuse(engine_fault::not_mapped, "kernel code entry", entry);  // the instruction fetch faults
  emulated_code_blob blob;
  std::memcpy(&blob, vm.host_address(entry), sizeof blob);
  const std::string_view name = emulated_code_name(blob);
  if (!name.empty()) {
    if (cache) {
      const auto& fn = cache->kernels.find(registry, name);
      if (plan.fn != fn) plan.fn = fn;
    } else {
      plan.fn = registry.find(name);
    }
    if (!plan.fn) return refuse(engine_fault::unknown_host_kernel, "host kernel '" + std::string(name) + "'", entry);
    plan.code_entry = 0;
  } else if (isa_supported(q.family)) {
    plan.fn = nullptr;
    plan.code_entry = entry;  // machine code: the interpreter runs it (emu/isa/)
    plan.serial = dispatch_plan::next_serial();  // its executors' decoded-code caches are stale
  } else {
    return refuse(engine_fault::bad_kernel_descriptor,
                  "no emulated code at the kernel entry, and " + isa::no_runner_reason(q.family),
                  entry);
  }
  namespace kcp = abi::kernel_code_properties;
  namespace r2 = abi::compute_pgm_rsrc2;
  const std::uint16_t props = kd.kernel_code_properties;
  if ((props & ~kcp::defined_mask) != 0) return refuse(engine_fault::bad_kernel_descriptor, "reserved kernel_code_properties bits");
  if (kcp::enable_wavefront_size32::get(props) && !supports_wave32(q.family))
    return refuse(engine_fault::bad_kernel_descriptor, "wave32 requested on a wave64-only family");
  const unsigned user = r2::user_sgpr_count::get(kd.compute_pgm_rsrc2);
  const unsigned needed = abi::enabled_user_sgpr_count(props) + abi::kernarg_preload::length::get(kd.kernarg_preload);
  if (needed > user) return refuse(engine_fault::bad_kernel_descriptor, "enabled user SGPRs exceed rsrc2.USER_SGPR_COUNT");
  if (r2::granulated_lds_size::get(kd.compute_pgm_rsrc2) != 0)
    return refuse(engine_fault::bad_kernel_descriptor, "rsrc2.GRANULATED_LDS_SIZE must be 0 (the CP takes LDS from the packet)");
  if (vm_gen != 0 && plan.fn) {  // every check passed: memoize the host-kernel object
    cache->kernel_object = p.kernel_object;
    cache->vm_generation = vm_gen;
    cache->registry_generation = reg_gen;
    cache->registry = &registry;
    cache->family = q.family;
    cache->kd = kd;
    cache->blob = blob;
    cache->kd_host = vm.host_address(p.kernel_object);
    cache->blob_host = vm.host_address(entry);
    cache->fn = plan.fn;
    epoch = ++cache->epoch;
  }
  return {};
}

// What changes from one packet of a shape to the next: the kernarg and completion-signal
// addresses (checked), the packet itself, the CP's inputs (slot, dispatch id, the amd_queue's
// scratch and profiling state as they are now) and the kernarg preload copy.
[[nodiscard]] inline reject plan_packet_addresses(const abi::kernel_dispatch_packet& p, const aql_dispatch_source& q,
                                                  const vm_access& vm, aql_dispatch& out) {
  dispatch_plan& plan = out.plan;
  const auto& kd = plan.kd;
  namespace kcp = abi::kernel_code_properties;
  if (kcp::enable_sgpr_kernarg_segment_ptr::get(kd.kernel_code_properties) && kd.kernarg_size != 0 &&
      (p.kernarg_address == 0 || !vm.is_mapped(p.kernarg_address, kd.kernarg_size)))
    return refuse(engine_fault::kernarg_not_mapped, "", p.kernarg_address);
  if (p.completion_signal != 0)
    if (const engine_fault f = aql_signal_fault(vm, p.completion_signal); f != engine_fault::none)
      return refuse(f, "completion signal", p.completion_signal);
  plan.pkt.kernarg_address = p.kernarg_address;
  plan.pkt.completion_signal = p.completion_signal;
  plan.pkt.header = p.header;
  plan.pkt.reserved2 = p.reserved2;
  dispatch_inputs& inputs = plan.inputs;
  inputs = dispatch_inputs{};
  out.profiling = false;
  inputs.packet_va = q.packet_va;
  inputs.queue_va = q.amd_queue_va;
  inputs.dispatch_id = q.packet_index;
  if (q.amd_queue_va != 0) {
    auto* amdq = q.amd_queue_host ? q.amd_queue_host : static_cast<abi::amd_queue*>(vm.host_address(q.amd_queue_va));
    for (int i = 0; i < 4; ++i)
      inputs.scratch_srd[i] = std::atomic_ref<std::uint32_t>(amdq->scratch_resource_descriptor[i]).load(std::memory_order_relaxed);
    inputs.scratch_base = std::atomic_ref<std::uint64_t>(amdq->scratch_backing_memory_location).load(std::memory_order_relaxed);
    inputs.scratch_bytes = std::atomic_ref<std::uint64_t>(amdq->scratch_backing_memory_byte_size).load(std::memory_order_relaxed);
    out.profiling = abi::amd_queue_properties::enable_profiling::get(
                        std::atomic_ref<std::uint32_t>(amdq->queue_properties).load(std::memory_order_relaxed)) != 0;
  }
  if (const unsigned pre = abi::kernarg_preload::length::get(kd.kernarg_preload); pre != 0 && p.kernarg_address != 0) {
    const unsigned dwords = pre + abi::kernarg_preload::offset::get(kd.kernarg_preload);
    if (!vm.is_mapped(p.kernarg_address, dwords * 4ull))
      return refuse(engine_fault::kernarg_not_mapped, "kernarg preload", p.kernarg_address);
    out.kernarg_copy.resize(dwords);
    std::memcpy(out.kernarg_copy.data(), vm.host_address(p.kernarg_address), dwords * 4ull);
    inputs.kernarg_host = out.kernarg_copy.data();
    inputs.kernarg_dwords = dwords;
  }
  return {};
}

// `out` is filled in place (a dispatch plan is large) and may be one used before (the AQL
// processor recycles its dispatches): on success every field a dispatch reads is rewritten (the
// kernarg copy keeps its capacity, the budget counter its allocation; the caller sets the
// budget). Re-point out.plan.inputs.kernarg_host at out.kernarg_copy whenever `out` moves.
// `kernels`, when given, memoizes the kernel object's checks (one per processor thread), and
// `out` remembers the packet shape its plan came from: when `out` last planned a packet of the
// same shape, from a descriptor the memo still holds, on this queue's family and LDS limit
// (what a replayed or repeated dispatch is), the checks and values that depend only on those
// (sizes, dimensions, LDS, workgroup counts, waves per workgroup, the descriptor copy) are the
// ones it has; only the packet's own addresses and the queue's state are checked and read.
[[nodiscard]] inline reject plan_aql_dispatch(const abi::kernel_dispatch_packet& p, const aql_dispatch_source& q,
                                              const vm_access& vm, const host_kernel_registry& registry, aql_dispatch& out,
                                              kernel_object_cache* kernels = nullptr) {
  const aql_dispatch_shape shape = shape_of(p);
  const bool same_shape = kernels != nullptr && out.shape_epoch != 0 && out.shape_epoch == kernels->epoch &&
                          same_shape_words(out.shape, shape) && out.plan.family == q.family && out.shape_max_lds == q.max_lds_bytes;
  dispatch_plan& plan = out.plan;
  std::uint64_t epoch = 0;
  if (same_shape) {
    // The plan holds this kernel object already (its epoch is the memo's): no check to repeat.
    if (kernel_object_memo_holds(p, q, vm.generation(), registry.generation(), registry, *kernels))
      return plan_packet_addresses(p, q, vm, out);
    // Otherwise the descriptor, its code or a generation moved on: the whole plan is redone.
  }
  out.shape_epoch = 0;  // rewritten below: nothing to reuse until it succeeds
  const unsigned dims = abi::dispatch_setup::dimensions::get(p.setup);
  if (dims == 0 || (p.setup & ~abi::dispatch_setup::dimensions::mask) != 0)
    return refuse(engine_fault::bad_dimensions, "setup.dimensions must be 1..3 and setup's reserved bits 0");
  const std::uint32_t grid[3] = {p.grid_size_x, p.grid_size_y, p.grid_size_z};
  const std::uint32_t wg[3] = {p.workgroup_size_x, p.workgroup_size_y, p.workgroup_size_z};
  for (unsigned d = 0; d < 3; ++d) {
    if (wg[d] == 0) return refuse(engine_fault::bad_workgroup_size, "a workgroup size is 0");
    if (grid[d] == 0) return refuse(engine_fault::bad_dimensions, "a grid size is 0");
    if (d >= dims && (grid[d] != 1 || wg[d] != 1))
      return refuse(engine_fault::bad_dimensions, "grid and workgroup sizes beyond setup.dimensions must be 1");
  }
  if (std::uint64_t(wg[0]) * wg[1] * wg[2] > 1024)
    return refuse(engine_fault::bad_workgroup_size, "more than 1024 work-items per workgroup");
  plan.family = q.family;
  if (const reject r = plan_kernel_object(p, q, vm, registry, plan, kernels, epoch); r.fault != engine_fault::none) return r;
  const auto& kd = plan.kd;
  // The packet's group_segment_size is the whole group segment, static + dynamic (hsa.h:
  // hsa_kernel_dispatch_packet_t::group_segment_size); the descriptor's static part is in it
  // (issue 13 bug 6: it was counted twice).
  const std::uint64_t lds = p.group_segment_size;
  if (lds < kd.group_segment_fixed_size)
    return refuse(engine_fault::lds_too_large, "packet group_segment_size " + std::to_string(lds) +
                                                   " is below the kernel's static LDS (" +
                                                   std::to_string(kd.group_segment_fixed_size) +
                                                   " bytes, group_segment_fixed_size)");
  if (lds > q.max_lds_bytes)
    return refuse(engine_fault::lds_too_large,
                  std::to_string(lds) + " bytes; the CU has " + std::to_string(q.max_lds_bytes));
  plan.pkt = p;
  plan.lds_bytes = static_cast<std::uint32_t>(lds);
  if (!plan.try_total_workgroups(out.total_wg)) {
    const workgroup_geometry g = geometry_of(p, 0);
    return refuse(engine_fault::bad_dimensions, "the grid holds 2^64 or more workgroups (" + std::to_string(g.count[0]) +
                                                    " x " + std::to_string(g.count[1]) + " x " +
                                                    std::to_string(g.count[2]) + ")");
  }
  const unsigned wsize = plan.wave_size();
  out.waves_per_wg = static_cast<unsigned>((std::uint64_t(wg[0]) * wg[1] * wg[2] + wsize - 1) / wsize);
  if (const reject r = plan_packet_addresses(p, q, vm, out); r.fault != engine_fault::none) return r;
  out.shape = shape;
  out.shape_max_lds = q.max_lds_bytes;
  out.shape_epoch = epoch;
  return {};
}

}  // namespace aqueduct::emu::detail
