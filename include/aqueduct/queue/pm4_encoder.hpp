// aqueduct/queue/pm4_encoder.hpp — family-typed PM4 packet encoders for compute queues.
//
// Layer: queue. `pm4::encoder<arch::gfx11_priv_target>` (or any arch::target, or a bare family
// tag such as `arch::gfx11_tag`, taken as `target<tag>`) writes type-3 packets into a caller-
// provided dword span and returns the number of dwords written; `*_dwords` members size a
// reservation first. Generation differences (ACQUIRE_MEM length and cache-control word,
// RELEASE_MEM cache bits, RSRC3 register, wave32 initiator bit, TMPRING units) are resolved at
// compile time from the target; nothing here branches on the architecture at run time.
//
// `dispatch` emits the whole register setup of a kernel launch from its kernel descriptor and
// then DISPATCH_DIRECT. Its COMPUTE_PGM_RSRC1 comes only from `Target::pm4_compute_pgm_rsrc1`:
// the GFX11 PRIV bit (spec/kfd.md §4, DESIGN.md requirement 7) is set on every dispatch of an
// affected target and cleared on every other, whatever the descriptor says; this encoder has
// no other way to write RSRC1. Layouts: abi/pm4.hpp (spec/packets.md §1–§2).
// Thread safety: pure functions on caller-owned memory.
#pragma once

#include <aqueduct/abi/kernel_descriptor.hpp>
#include <aqueduct/abi/pm4.hpp>
#include <aqueduct/arch/target.hpp>
#include <aqueduct/core/assert.hpp>
#include <aqueduct/core/bits.hpp>
#include <aqueduct/core/units.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <type_traits>

namespace aqueduct::ring::pm4 {

namespace pkt = aqueduct::abi::pm4;  // packet layouts

namespace detail {
template <class T>
struct as_target {
  using type = arch::target<T>;  // a bare family tag
};
template <class F, class Q>
struct as_target<arch::target<F, Q>> {
  using type = arch::target<F, Q>;
};
}  // namespace detail

// Everything a PM4 kernel launch needs besides the descriptor's own words. Addresses left 0 are
// written as 0; a user SGPR the descriptor enables but whose source is 0 is a contract violation.
struct dispatch_params {
  // Member by member, not as an aggregate: GCC (-mtune=generic) zeroes an aggregate's 88 bytes of
  // zero-initialised members with one `rep stosq`, ~2 ns per dispatch that builds its params
  // (issue 11); this constructor gets plain stores, which fold away once the dispatch is inlined.
  // Not `= default`, and the is_constant_evaluated() test keeps GCC from pre-evaluating it into
  // the same block clear outside constant evaluation; it stays usable at compile time.
  constexpr dispatch_params() noexcept {  // NOLINT(modernize-use-equals-default)
    if (std::is_constant_evaluated()) return;
  }
  const abi::kernel_descriptor* kd = nullptr;  // host copy of the descriptor
  gpu_va kd_va;                                // its GPU address (program = kd_va + entry offset)
  std::array<std::uint32_t, 3> grid{1, 1, 1};   // work-group counts (DISPATCH_DIRECT dims)
  std::array<std::uint32_t, 3> block{1, 1, 1};  // work-group size (COMPUTE_NUM_THREAD_*)
  // User SGPR sources, in kernel_code_properties order.
  std::array<std::uint32_t, 4> private_segment_buffer{};  // scratch V#
  gpu_va dispatch_ptr;                                    // an hsa_kernel_dispatch_packet_t
  gpu_va queue_ptr;                                       // an amd_queue_t
  gpu_va kernarg;
  std::uint64_t dispatch_id = 0;
  std::array<std::uint32_t, 2> flat_scratch_init{};
  // LDS beyond the descriptor's static group segment.
  std::uint32_t dynamic_lds_bytes = 0;
  // Scratch: COMPUTE_DISPATCH_SCRATCH_BASE and COMPUTE_TMPRING_SIZE.
  gpu_va scratch_base;
  std::uint32_t scratch_waves = 0;          // TMPRING WAVES
  std::uint32_t scratch_bytes_per_wave = 0; // rounded up to the family's WAVESIZE unit
  std::uint32_t waves_per_sh = 0;           // COMPUTE_RESOURCE_LIMITS.WAVES_PER_SH, 0 = unlimited
  // Set: DISPATCH_INDIRECT instead of DISPATCH_DIRECT — the MEC reads the {x, y, z} workgroup
  // counts there when it runs the packet (`grid` is then unused); one dword shorter.
  gpu_va indirect_counts;
  // With indirect_counts: where the kernel's hidden_block_count_x/y/z sit in its kernargs (byte
  // offsets, -1: not listed). The queue copies each count there (COPY_DATA) before the dispatch.
  std::array<std::int32_t, 3> indirect_block_count_at{-1, -1, -1};
};

// RELEASE_MEM fields (spec/packets.md §1.3); `cache_action` holds the family's dw1 [23:12] bits
// already in place (pkt::release_mem::gcr_gfx10::… or ::cache_gfx9::…).
struct release_mem_params {
  pkt::vgt_event event = pkt::vgt_event::cache_flush_and_inv_ts_event;
  std::uint32_t event_index = pkt::release_mem::event_index_end_of_pipe;
  std::uint32_t cache_action = 0;
  std::uint32_t cache_policy = 0;
  pkt::release_mem::data_sel_value data_sel = pkt::release_mem::data_sel_value::none;
  pkt::release_mem::int_sel_value int_sel = pkt::release_mem::int_sel_value::none;
  std::uint32_t dst_sel = 0;  // memory
  gpu_va address;
  std::uint64_t data = 0;
  std::uint32_t int_ctxid = 0;
};

template <class T>
struct encoder {
  using target = typename detail::as_target<T>::type;
  using family_type = typename target::family_type;
  using regs = typename family_type::regs;
  static constexpr bool is_gfx9 = target::fam == arch::family::gfx9 || target::fam == arch::family::gfx90a ||
                                  target::fam == arch::family::gfx94x;

  // ---- packet sizes --------------------------------------------------------------------------
  static constexpr std::uint32_t acquire_mem_dwords = is_gfx9 ? pkt::acquire_mem::gfx9::dwords : pkt::acquire_mem::gfx10::dwords;
  static_assert(acquire_mem_dwords == target::acquire_mem_dwords, "arch and abi disagree on ACQUIRE_MEM length");
  static constexpr std::uint32_t release_mem_dwords = pkt::release_mem::dwords;
  static constexpr std::uint32_t wait_reg_mem_dwords = pkt::wait_reg_mem::dwords;
  static constexpr std::uint32_t indirect_buffer_dwords = pkt::indirect_buffer::dwords;
  static constexpr std::uint32_t dispatch_direct_dwords = pkt::dispatch_direct::dwords;
  static constexpr std::uint32_t event_write_dwords = pkt::event_write::dwords;
  static constexpr std::uint32_t cond_exec_dwords = pkt::cond_exec::dwords;
  static constexpr std::uint32_t cond_indirect_buffer_dwords = pkt::cond_indirect_buffer::dwords;
  static constexpr std::uint32_t wait_reg_mem64_dwords = pkt::wait_reg_mem64::dwords;
  [[nodiscard]] static constexpr std::size_t set_sh_reg_dwords(std::size_t n) noexcept { return 2 + n; }
  [[nodiscard]] static constexpr std::size_t write_data_dwords(std::size_t n) noexcept { return pkt::write_data::head_dwords + n; }

  // ---- cache-control presets (ACQUIRE_MEM dw1 on gfx9 = CP_COHER_CNTL, dw7 on gfx10+ = GCR_CNTL)
  // Everything incl. I$ and L2 write-back + invalidate: tinygrad memory_barrier (§2.2).
  static constexpr std::uint32_t full_barrier_cntl = is_gfx9 ? 0x28C40000u : 0xC3F1u;
  // Before a kernel launch: scalar/vector/L1 caches (tinygrad exec 0x03F0; gfx9: ROCT/HSA 0x28C00000).
  static constexpr std::uint32_t pre_dispatch_cntl = is_gfx9 ? 0x28C00000u : 0x03F0u;

  // SET_SH_REG: consecutive registers from `abs_reg` (an absolute dword address in the SH window).
  static constexpr std::size_t set_sh_reg(std::span<std::uint32_t> out, std::uint32_t abs_reg,
                                          std::span<const std::uint32_t> values) noexcept {
    AQUEDUCT_ASSERT(!values.empty() && values.size() <= pkt::set_sh_reg::max_values, "SET_SH_REG value count");
    AQUEDUCT_ASSERT(abs_reg >= pkt::sh_reg_base && abs_reg + values.size() <= pkt::sh_reg_end,
                    "SET_SH_REG register outside the SH window");
    AQUEDUCT_ASSERT(out.size() >= set_sh_reg_dwords(values.size()), "PM4 reservation too small");
    out[0] = pkt::type3_header(pkt::opcode::set_sh_reg, static_cast<std::uint32_t>(1 + values.size()));
    out[1] = pkt::set_sh_reg::reg_offset::put(abs_reg - pkt::sh_reg_base);
    for (std::size_t i = 0; i < values.size(); ++i) out[2 + i] = values[i];
    return set_sh_reg_dwords(values.size());
  }
  static constexpr std::size_t set_sh_reg(std::span<std::uint32_t> out, std::uint32_t abs_reg,
                                          std::initializer_list<std::uint32_t> values) noexcept {
    return set_sh_reg(out, abs_reg, std::span<const std::uint32_t>(values.begin(), values.size()));
  }

  // DISPATCH_DIRECT with work-group counts (INITIATOR.USE_THREAD_DIMENSIONS clear).
  static constexpr std::size_t dispatch_direct(std::span<std::uint32_t> out, std::uint32_t gx, std::uint32_t gy,
                                               std::uint32_t gz, std::uint32_t initiator) noexcept {
    AQUEDUCT_ASSERT(out.size() >= dispatch_direct_dwords, "PM4 reservation too small");
    out[0] = pkt::type3_header(pkt::opcode::dispatch_direct, dispatch_direct_dwords - 1);
    out[1] = gx;
    out[2] = gy;
    out[3] = gz;
    out[4] = initiator;
    return dispatch_direct_dwords;
  }
  // COPY_DATA memory -> memory of one dword (4-byte aligned addresses), the write confirmed before
  // the MEC goes on (abi/pm4.hpp).
  static constexpr std::uint32_t copy_data_dwords = pkt::copy_data::dwords;
  static constexpr std::size_t copy_dword(std::span<std::uint32_t> out, gpu_va src, gpu_va dst) noexcept {
    namespace cd = pkt::copy_data;
    AQUEDUCT_ASSERT(out.size() >= copy_data_dwords, "PM4 reservation too small");
    AQUEDUCT_ASSERT(src.value % 4 == 0 && dst.value % 4 == 0, "COPY_DATA addresses must be 4-byte aligned");
    out[0] = pkt::type3_header(pkt::opcode::copy_data, copy_data_dwords - 1);
    out[1] = cd::src_sel::put(cd::sel_tc_l2) | cd::dst_sel::put(cd::sel_tc_l2) | cd::wr_confirm::put(1);
    out[2] = lo32(src.value);
    out[3] = hi32(src.value);
    out[4] = lo32(dst.value);
    out[5] = hi32(dst.value);
    return copy_data_dwords;
  }
  // DISPATCH_INDIRECT, compute form (abi/pm4.hpp): the counts at `counts` (4-byte aligned).
  static constexpr std::uint32_t dispatch_indirect_dwords = pkt::dispatch_indirect::dwords;
  static constexpr std::size_t dispatch_indirect(std::span<std::uint32_t> out, gpu_va counts, std::uint32_t initiator) noexcept {
    AQUEDUCT_ASSERT(out.size() >= dispatch_indirect_dwords, "PM4 reservation too small");
    AQUEDUCT_ASSERT(counts.value % 4 == 0, "DISPATCH_INDIRECT counts must be 4-byte aligned");
    out[0] = pkt::type3_header(pkt::opcode::dispatch_indirect, dispatch_indirect_dwords - 1);
    out[1] = lo32(counts.value);
    out[2] = hi32(counts.value);
    out[3] = initiator;
    return dispatch_indirect_dwords;
  }
  // COMPUTE_DISPATCH_INITIATOR for a work-group-count dispatch (tinygrad: 0x8005 wave32, 0x5).
  [[nodiscard]] static constexpr std::uint32_t dispatch_initiator(bool wave32) noexcept {
    namespace di = pkt::dispatch_initiator;
    std::uint32_t v = di::compute_shader_en::put(1) | di::force_start_at_000::put(1);
    if constexpr (!is_gfx9) v |= di::cs_w32_en::put(wave32 ? 1 : 0);
    else AQUEDUCT_ASSERT(!wave32, "gfx9 has no wave32");
    return v;
  }

  // ACQUIRE_MEM over all memory with `cntl` (see the presets), as Linux's gfx_v9/v11 mem_sync
  // writes it: size 0xFFFFFFFF, size_hi 0xFFFFFF, base 0.
  static constexpr std::size_t acquire_mem(std::span<std::uint32_t> out, std::uint32_t cntl,
                                           std::uint32_t poll_interval = 0xA) noexcept {
    AQUEDUCT_ASSERT(out.size() >= acquire_mem_dwords, "PM4 reservation too small");
    out[0] = pkt::type3_header(pkt::opcode::acquire_mem, acquire_mem_dwords - 1);
    if constexpr (is_gfx9) {
      namespace a = pkt::acquire_mem::gfx9;
      out[1] = a::coher_cntl::put(cntl);  // ENGINE 0 = PFP, as on a compute queue
      out[2] = 0xFFFFFFFFu;
      out[3] = a::coher_size_hi::put(0xFFFFFF);
      out[4] = 0;
      out[5] = 0;
      out[6] = a::poll_interval::put(poll_interval);
    } else {
      namespace a = pkt::acquire_mem::gfx10;
      out[1] = 0;
      out[2] = 0xFFFFFFFFu;
      out[3] = a::coher_size_hi::put(0xFFFFFF);
      out[4] = 0;
      out[5] = 0;
      out[6] = a::poll_interval::put(poll_interval);
      out[7] = a::gcr_cntl::put(cntl);
    }
    return acquire_mem_dwords;
  }

  // RELEASE_MEM with every field explicit.
  static constexpr std::size_t release_mem(std::span<std::uint32_t> out, const release_mem_params& p) noexcept {
    namespace r = pkt::release_mem;
    AQUEDUCT_ASSERT(out.size() >= release_mem_dwords, "PM4 reservation too small");
    AQUEDUCT_ASSERT((p.cache_action & ~0x00FFF000u) == 0, "RELEASE_MEM cache action outside dw1 [23:12]");
    AQUEDUCT_ASSERT(p.data_sel != r::data_sel_value::data64 && p.data_sel != r::data_sel_value::gpu_clock64
                        ? p.address.aligned(4)
                        : p.address.aligned(8),
                    "RELEASE_MEM address misaligned for its data size");
    out[0] = pkt::type3_header(pkt::opcode::release_mem, release_mem_dwords - 1);
    out[1] = r::event_type::put(static_cast<std::uint32_t>(p.event)) | r::event_index::put(p.event_index) |
             p.cache_action | r::cache_policy::put(p.cache_policy);
    out[2] = r::dst_sel::put(p.dst_sel) | r::int_sel::put(static_cast<std::uint32_t>(p.int_sel)) |
             r::data_sel::put(static_cast<std::uint32_t>(p.data_sel));
    out[3] = p.address.lo();
    out[4] = p.address.hi();
    out[5] = lo32(p.data);
    out[6] = hi32(p.data);
    out[7] = p.int_ctxid;
    return release_mem_dwords;
  }
  // Caches written back / invalidated at end of pipe before a signal write (tinygrad signal,
  // §2.2: gfx10+ GLM WB/INV, GLV/GL1/GL2 INV, GL2_WB, SEQ = 0x0070F000; gfx9 TC_WB|TC_NC).
  static constexpr std::uint32_t signal_cache_action = [] {
    if constexpr (is_gfx9) {
      namespace c = pkt::release_mem::cache_gfx9;
      return c::tc_wb_action_en::put(1) | c::tc_nc_action_en::put(1);
    } else {
      namespace g = pkt::release_mem::gcr_gfx10;
      return g::glm_wb::put(1) | g::glm_inv::put(1) | g::glv_inv::put(1) | g::gl1_inv::put(1) | g::gl2_inv::put(1) |
             g::gl2_wb::put(1) | g::seq::put(1);
    }
  }();
  // End-of-pipe 32-bit value write after flushing caches, no interrupt (tinygrad signal).
  static constexpr std::size_t signal(std::span<std::uint32_t> out, gpu_va addr, std::uint32_t value) noexcept {
    return release_mem(out, {.cache_action = signal_cache_action,
                             .data_sel = pkt::release_mem::data_sel_value::data32_low,
                             .address = addr,
                             .data = value});
  }
  // End-of-pipe write of `event_id` to the KFD event mailbox slot plus an interrupt carrying it
  // (INT_SEL 2; gfx9 sends INT_CTXID 0 as tinygrad does, §2.2).
  static constexpr std::size_t signal_event(std::span<std::uint32_t> out, gpu_va mailbox_slot, std::uint32_t event_id) noexcept {
    return release_mem(out, {.data_sel = pkt::release_mem::data_sel_value::data32_low,
                             .int_sel = pkt::release_mem::int_sel_value::send_int_on_confirm,
                             .address = mailbox_slot,
                             .data = event_id,
                             .int_ctxid = is_gfx9 ? 0u : event_id});
  }
  // 64-bit GPU clock counter to an 8-byte aligned address at end of pipe.
  static constexpr std::size_t timestamp(std::span<std::uint32_t> out, gpu_va addr) noexcept {
    return release_mem(out, {.data_sel = pkt::release_mem::data_sel_value::gpu_clock64, .address = addr});
  }
  // A 32- or 64-bit value at end of pipe, no cache action, no interrupt (tinygrad write).
  static constexpr std::size_t write_value(std::span<std::uint32_t> out, gpu_va addr, std::uint64_t value, bool b64) noexcept {
    return release_mem(out, {.data_sel = b64 ? pkt::release_mem::data_sel_value::data64
                                             : pkt::release_mem::data_sel_value::data32_low,
                             .address = addr,
                             .data = value});
  }

  // WAIT_REG_MEM on memory: stall until `(*addr & mask) func reference` (signal waits use >=).
  // `preemptible` (OPERATION 3, WAIT_MEM_PREEMPTABLE): the queue may be preempted while it waits.
  static constexpr std::size_t wait_reg_mem(std::span<std::uint32_t> out, gpu_va addr, std::uint32_t reference,
                                            std::uint32_t mask = 0xFFFFFFFFu,
                                            pkt::wait_reg_mem::compare_function func =
                                                pkt::wait_reg_mem::compare_function::greater_equal,
                                            std::uint32_t poll_interval = 4, bool preemptible = false) noexcept {
    namespace w = pkt::wait_reg_mem;
    AQUEDUCT_ASSERT(addr.aligned(4), "WAIT_REG_MEM address must be dword aligned");
    AQUEDUCT_ASSERT(out.size() >= wait_reg_mem_dwords, "PM4 reservation too small");
    out[0] = pkt::type3_header(pkt::opcode::wait_reg_mem, wait_reg_mem_dwords - 1);
    out[1] = w::function::put(static_cast<std::uint32_t>(func)) | w::mem_space::put(1) |
             w::operation::put(preemptible ? w::operation_wait_preemptible : w::operation_wait);
    out[2] = addr.lo();
    out[3] = addr.hi();
    out[4] = reference;
    out[5] = mask;
    out[6] = w::poll_interval::put(poll_interval);
    return wait_reg_mem_dwords;
  }
  // WAIT_REG_MEM64: stall until `(*addr & mask) func reference` on a 64-bit value (8-byte aligned).
  static constexpr std::size_t wait_reg_mem64(std::span<std::uint32_t> out, gpu_va addr, std::uint64_t reference,
                                              std::uint64_t mask = ~std::uint64_t{0},
                                              pkt::wait_reg_mem::compare_function func =
                                                  pkt::wait_reg_mem::compare_function::greater_equal,
                                              std::uint32_t poll_interval = 4) noexcept {
    namespace w = pkt::wait_reg_mem;
    AQUEDUCT_ASSERT(addr.aligned(8), "WAIT_REG_MEM64 address must be 8-byte aligned");
    AQUEDUCT_ASSERT(out.size() >= wait_reg_mem64_dwords, "PM4 reservation too small");
    out[0] = pkt::type3_header(pkt::opcode::wait_reg_mem64, wait_reg_mem64_dwords - 1);
    out[1] = w::function::put(static_cast<std::uint32_t>(func)) | w::mem_space::put(1);
    out[2] = addr.lo();
    out[3] = addr.hi();
    out[4] = lo32(reference);
    out[5] = hi32(reference);
    out[6] = lo32(mask);
    out[7] = hi32(mask);
    out[8] = w::poll_interval::put(poll_interval);
    return wait_reg_mem64_dwords;
  }
  // WAIT_REG_MEM write-then-wait on registers (the HDP flush idiom): write `write_reg`, then poll
  // `poll_reg` (dword addresses).
  static constexpr std::size_t write_wait_reg(std::span<std::uint32_t> out, std::uint32_t write_reg, std::uint32_t poll_reg,
                                              std::uint32_t reference, std::uint32_t mask,
                                              pkt::wait_reg_mem::compare_function func, std::uint32_t poll_interval) noexcept {
    namespace w = pkt::wait_reg_mem;
    AQUEDUCT_ASSERT(out.size() >= wait_reg_mem_dwords, "PM4 reservation too small");
    out[0] = pkt::type3_header(pkt::opcode::wait_reg_mem, wait_reg_mem_dwords - 1);
    out[1] = w::function::put(static_cast<std::uint32_t>(func)) | w::mem_space::put(0) | w::operation::put(1);
    out[2] = write_reg;
    out[3] = poll_reg;
    out[4] = reference;
    out[5] = mask;
    out[6] = w::poll_interval::put(poll_interval);
    return wait_reg_mem_dwords;
  }

  // WRITE_DATA to memory with write confirmation, incrementing address.
  static constexpr std::size_t write_data(std::span<std::uint32_t> out, gpu_va addr, std::span<const std::uint32_t> values) noexcept {
    namespace wd = pkt::write_data;
    AQUEDUCT_ASSERT(!values.empty() && values.size() + 3 <= pkt::max_payload_dwords, "WRITE_DATA value count");
    AQUEDUCT_ASSERT(addr.aligned(4), "WRITE_DATA address must be dword aligned");
    AQUEDUCT_ASSERT(out.size() >= write_data_dwords(values.size()), "PM4 reservation too small");
    out[0] = pkt::type3_header(pkt::opcode::write_data, static_cast<std::uint32_t>(3 + values.size()));
    out[1] = wd::dst_sel::put(wd::dst_sel_memory) | wd::wr_confirm::put(1);
    out[2] = addr.lo();
    out[3] = addr.hi();
    for (std::size_t i = 0; i < values.size(); ++i) out[4 + i] = values[i];
    return write_data_dwords(values.size());
  }

  // INDIRECT_BUFFER: run `size_dw` dwords at `ib` (dword aligned), VALID set as compute requires.
  // `chain`: from inside an IB, continue in this one instead of returning (the IB's last packet).
  static constexpr std::size_t indirect_buffer(std::span<std::uint32_t> out, gpu_va ib, std::uint32_t size_dw,
                                               std::uint32_t vmid = 0, bool chain = false) noexcept {
    namespace i = pkt::indirect_buffer;
    AQUEDUCT_ASSERT(ib.aligned(4), "IB base must be dword aligned");
    AQUEDUCT_ASSERT(size_dw >= 1 && i::ib_size::fits(size_dw), "IB size out of range");
    AQUEDUCT_ASSERT(out.size() >= indirect_buffer_dwords, "PM4 reservation too small");
    out[0] = pkt::type3_header(pkt::opcode::indirect_buffer, indirect_buffer_dwords - 1);
    out[1] = ib.lo();
    out[2] = ib.hi();
    out[3] = i::ib_size::put(size_dw) | i::valid::put(1) | i::vmid::put(vmid) | i::chain::put(chain ? 1 : 0);
    return indirect_buffer_dwords;
  }

  // COND_INDIRECT_BUFFER: if `(*compare & mask) func reference` (64-bit, `compare` 8-byte aligned)
  // run `then_ib`, else `else_ib` when given (IF_THEN_ELSE; IF_THEN otherwise).
  struct ib_ref {
    gpu_va address;
    std::uint32_t size_dw = 0;
  };
  static constexpr std::size_t cond_indirect_buffer(std::span<std::uint32_t> out, gpu_va compare, std::uint64_t reference,
                                                    std::uint64_t mask, pkt::wait_reg_mem::compare_function func,
                                                    ib_ref then_ib, ib_ref else_ib = {}) noexcept {
    namespace c = pkt::cond_indirect_buffer;
    const bool has_else = else_ib.size_dw != 0;
    AQUEDUCT_ASSERT(compare.aligned(8), "COND_INDIRECT_BUFFER compare address must be 8-byte aligned");
    AQUEDUCT_ASSERT(then_ib.address.aligned(4) && else_ib.address.aligned(4), "IB base must be dword aligned");
    AQUEDUCT_ASSERT(then_ib.size_dw >= 1 && c::ib_size::fits(then_ib.size_dw) && c::ib_size::fits(else_ib.size_dw),
                    "IB size out of range");
    AQUEDUCT_ASSERT(out.size() >= cond_indirect_buffer_dwords, "PM4 reservation too small");
    out[0] = pkt::type3_header(pkt::opcode::indirect_buffer, cond_indirect_buffer_dwords - 1);
    out[1] = c::mode::put(static_cast<std::uint32_t>(has_else ? c::mode_value::if_then_else : c::mode_value::if_then)) |
             c::function::put(static_cast<std::uint32_t>(func));
    out[2] = compare.lo();
    out[3] = compare.hi();
    out[4] = lo32(mask);
    out[5] = hi32(mask);
    out[6] = lo32(reference);
    out[7] = hi32(reference);
    out[8] = then_ib.address.lo();
    out[9] = then_ib.address.hi();
    out[10] = c::ib_size::put(then_ib.size_dw);
    out[11] = else_ib.address.lo();
    out[12] = else_ib.address.hi();
    out[13] = c::ib_size::put(else_ib.size_dw);
    return cond_indirect_buffer_dwords;
  }

  // COND_EXEC: the next `exec_count` dwords run only if the 32-bit value at `addr` (dword
  // aligned) is not 0.
  static constexpr std::size_t cond_exec(std::span<std::uint32_t> out, gpu_va addr, std::uint32_t exec_count) noexcept {
    AQUEDUCT_ASSERT(addr.aligned(4), "COND_EXEC address must be dword aligned");
    AQUEDUCT_ASSERT(pkt::cond_exec::exec_count::fits(exec_count), "COND_EXEC count out of range");
    AQUEDUCT_ASSERT(out.size() >= cond_exec_dwords, "PM4 reservation too small");
    out[0] = pkt::type3_header(pkt::opcode::cond_exec, cond_exec_dwords - 1);
    out[1] = addr.lo();
    out[2] = addr.hi();
    out[3] = 0;
    out[4] = pkt::cond_exec::exec_count::put(exec_count);
    return cond_exec_dwords;
  }

  // NOP filling exactly `n` >= 1 dwords (n == 1: the header-only form).
  static constexpr std::size_t nop(std::span<std::uint32_t> out, std::size_t n) noexcept {
    AQUEDUCT_ASSERT(n >= 1 && n <= pkt::max_payload_dwords + 1 && n != pkt::nop_header_only_count + 2,
                    "NOP length out of range");
    AQUEDUCT_ASSERT(out.size() >= n, "PM4 reservation too small");
    if (n == 1) {
      out[0] = pkt::nop::header_only;
      return 1;
    }
    out[0] = pkt::type3_header(pkt::opcode::nop, static_cast<std::uint32_t>(n - 1));
    for (std::size_t i = 1; i < n; ++i) out[i] = 0;
    return n;
  }

  // PRED_EXEC: the next `exec_count` dwords run only on the XCCs in `xcc_mask`. MEC firmware
  // honours it only inside an IB (outside it acts as EXEC_COUNT 0: spec §1.3, tinygrad c631c72f22).
  static constexpr std::uint32_t pred_exec_dwords = pkt::pred_exec::dwords;
  static constexpr std::size_t pred_exec(std::span<std::uint32_t> out, std::uint32_t xcc_mask, std::uint32_t exec_count) noexcept {
    AQUEDUCT_ASSERT(out.size() >= pred_exec_dwords, "PM4 reservation too small");
    out[0] = pkt::type3_header(pkt::opcode::pred_exec, 1);
    out[1] = pkt::pred_exec::exec_count::put(exec_count) | pkt::pred_exec::virtual_xcc_id_select::put(xcc_mask);
    return pred_exec_dwords;
  }

  // EVENT_WRITE without address (CS_PARTIAL_FLUSH, index 4).
  static constexpr std::size_t event_write(std::span<std::uint32_t> out,
                                           pkt::vgt_event ev = pkt::vgt_event::cs_partial_flush,
                                           std::uint32_t index = pkt::event_write::event_index_partial_flush) noexcept {
    AQUEDUCT_ASSERT(out.size() >= event_write_dwords, "PM4 reservation too small");
    out[0] = pkt::type3_header(pkt::opcode::event_write, 1);
    out[1] = pkt::event_write::event_type::put(static_cast<std::uint32_t>(ev)) | pkt::event_write::event_index::put(index);
    return event_write_dwords;
  }

  // ---- kernel launch ---------------------------------------------------------------------------
  // Encoding granule of COMPUTE_PGM_RSRC2.LDS_SIZE: 512 bytes on GFX7–GFX12.0 (LLVM AMDGPUUsage);
  // gfx950 uses 320 dwords = 1280 bytes, which a family tag cannot tell from gfx942, so a target
  // whose quirks declare `lds_granule_bytes` overrides the default (none does yet: see
  // docs/pm4-sdma.md).
  static constexpr std::uint32_t lds_granule_bytes = [] {
    if constexpr (requires { target::quirks_type::lds_granule_bytes; })
      return static_cast<std::uint32_t>(target::quirks_type::lds_granule_bytes);
    else
      return 512u;
  }();

  [[nodiscard]] static constexpr std::uint32_t user_sgpr_count(const abi::kernel_descriptor& kd) noexcept {
    return abi::enabled_user_sgpr_count(kd.kernel_code_properties);
  }
  // Dwords `dispatch` writes for this descriptor.
  [[nodiscard]] static constexpr std::size_t dispatch_dwords(const abi::kernel_descriptor& kd) noexcept {
    const std::uint32_t n = user_sgpr_count(kd);
    return set_sh_reg_dwords(2) /*PGM*/ + set_sh_reg_dwords(2) /*RSRC1/2*/ +
           (family_type::has_compute_pgm_rsrc3 ? set_sh_reg_dwords(1) : 0) + set_sh_reg_dwords(1) /*TMPRING*/ +
           set_sh_reg_dwords(2) /*SCRATCH_BASE*/ + set_sh_reg_dwords(3) /*RESTART*/ + (n ? set_sh_reg_dwords(n) : 0) +
           set_sh_reg_dwords(1) /*RESOURCE_LIMITS*/ + set_sh_reg_dwords(8) /*START..PERFCOUNT*/ + dispatch_direct_dwords;
  }
  // The user SGPR values in kernel_code_properties order (COMPUTE_USER_DATA_0..n-1).
  static constexpr std::uint32_t user_sgprs(std::span<std::uint32_t, 16> out, const dispatch_params& p) noexcept {
    return put_user_sgprs(out.data(), p);
  }
  // The same into `out` (room for every enabled one): dispatch() writes them straight into the
  // ring, with no staging array to zero and copy (issue 11).
  static constexpr std::uint32_t put_user_sgprs(std::uint32_t* out, const dispatch_params& p) noexcept {
    namespace kcp = abi::kernel_code_properties;
    const std::uint16_t props = p.kd->kernel_code_properties;
    std::uint32_t n = 0;
    if (kcp::enable_sgpr_private_segment_buffer::get(props)) {
      AQUEDUCT_ASSERT(p.private_segment_buffer[0] | p.private_segment_buffer[1], "kernel needs a scratch V#");
      for (std::uint32_t w : p.private_segment_buffer) out[n++] = w;
    }
    const auto put64 = [&](std::uint64_t v) {
      out[n++] = lo32(v);
      out[n++] = hi32(v);
    };
    if (kcp::enable_sgpr_dispatch_ptr::get(props)) {
      AQUEDUCT_ASSERT(bool(p.dispatch_ptr), "kernel needs a dispatch packet address");
      put64(p.dispatch_ptr.value);
    }
    if (kcp::enable_sgpr_queue_ptr::get(props)) {
      AQUEDUCT_ASSERT(bool(p.queue_ptr), "kernel needs a queue address");
      put64(p.queue_ptr.value);
    }
    if (kcp::enable_sgpr_kernarg_segment_ptr::get(props)) put64(p.kernarg.value);
    if (kcp::enable_sgpr_dispatch_id::get(props)) put64(p.dispatch_id);
    if (kcp::enable_sgpr_flat_scratch_init::get(props)) {
      out[n++] = p.flat_scratch_init[0];
      out[n++] = p.flat_scratch_init[1];
    }
    if (kcp::enable_sgpr_private_segment_size::get(props)) out[n++] = p.kd->private_segment_fixed_size;
    return n;
  }

  // The full register setup of a launch, then DISPATCH_DIRECT (order as tinygrad, spec §2.1), or
  // DISPATCH_INDIRECT with p.indirect_counts (dispatch_dwords(kd) - 1 dwords).
  // Cache invalidation before and a partial flush after are the caller's (acquire_mem, event_write).
  static constexpr std::size_t dispatch(std::span<std::uint32_t> out, const dispatch_params& p) noexcept {
    AQUEDUCT_ASSERT(p.kd != nullptr, "dispatch needs a kernel descriptor");
    const abi::kernel_descriptor& kd = *p.kd;
    AQUEDUCT_ASSERT(user_sgpr_count(kd) <= regs::user_data_count, "more than 16 user SGPRs");
    AQUEDUCT_ASSERT(out.size() >= dispatch_dwords(kd), "PM4 reservation too small");
    std::size_t n = 0;
    const auto sh = [&](std::uint32_t reg, std::initializer_list<std::uint32_t> v) {
      n += set_sh_reg(out.subspan(n), reg, v);
    };
    // Program address >> 8 (256-byte aligned entry).
    const std::uint64_t entry = p.kd_va.value + static_cast<std::uint64_t>(kd.kernel_code_entry_byte_offset);
    AQUEDUCT_ASSERT((entry & 0xFF) == 0, "kernel entry must be 256-byte aligned");
    sh(regs::compute_pgm_lo, {lo32(entry >> 8), hi32(entry >> 8)});
    // RSRC1 (PRIV per target policy only) and RSRC2 with the LDS allocation.
    const std::uint32_t lds = (kd.group_segment_fixed_size + p.dynamic_lds_bytes + lds_granule_bytes - 1) / lds_granule_bytes;
    using rsrc2 = typename family_type::rsrc2;
    sh(regs::compute_pgm_rsrc1,
       {target::pm4_compute_pgm_rsrc1(kd.compute_pgm_rsrc1), rsrc2::lds_size::set(kd.compute_pgm_rsrc2, lds)});
    if constexpr (family_type::has_compute_pgm_rsrc3) sh(regs::compute_pgm_rsrc3, {kd.compute_pgm_rsrc3});
    using tmpring = typename family_type::tmpring_size;
    const std::uint32_t wavesize =
        (p.scratch_bytes_per_wave + tmpring::wavesize_unit_bytes - 1) / tmpring::wavesize_unit_bytes;
    sh(regs::compute_tmpring_size, {tmpring::waves::put(p.scratch_waves) | tmpring::wavesize::put(wavesize)});
    AQUEDUCT_ASSERT((p.scratch_base.value & 0xFF) == 0, "scratch base must be 256-byte aligned");
    sh(regs::compute_dispatch_scratch_base_lo, {lo32(p.scratch_base.value >> 8), hi32(p.scratch_base.value >> 8)});
    sh(regs::compute_restart_x, {0, 0, 0});
    if (const std::uint32_t k = put_user_sgprs(out.data() + n + 2, p); k != 0) {  // values first, then their header
      out[n] = pkt::type3_header(pkt::opcode::set_sh_reg, 1 + k);
      out[n + 1] = pkt::set_sh_reg::reg_offset::put(regs::compute_user_data_0 - pkt::sh_reg_base);
      n += set_sh_reg_dwords(k);
    }
    using limits = typename family_type::resource_limits;
    sh(regs::compute_resource_limits, {limits::waves_per_sh::put(p.waves_per_sh)});
    using nt = typename family_type::num_thread;
    sh(regs::compute_start_x, {0, 0, 0, nt::num_thread_full::put(p.block[0]), nt::num_thread_full::put(p.block[1]),
                               nt::num_thread_full::put(p.block[2]), 0, 0});
    const bool wave32 = abi::kernel_code_properties::enable_wavefront_size32::get(kd.kernel_code_properties) != 0;
    if (p.indirect_counts) [[unlikely]]
      n += dispatch_indirect(out.subspan(n), p.indirect_counts, dispatch_initiator(wave32));
    else
      n += dispatch_direct(out.subspan(n), p.grid[0], p.grid[1], p.grid[2], dispatch_initiator(wave32));
    return n;
  }
};

}  // namespace aqueduct::ring::pm4
