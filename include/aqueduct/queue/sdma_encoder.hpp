// aqueduct/queue/sdma_encoder.hpp — SDMA packet encoders per engine version, and a copy splitter.
//
// Layer: queue. `sdma::encoder<abi::sdma::engine::v6_0>` writes packets into a caller-provided
// dword span and returns the number of dwords written; each function has a `*_dwords` twin that
// sizes a reservation first. Nothing here touches a ring: reserving, publishing and ringing the
// doorbell is the SDMA stream's job. A copy of any size is split into COPY_LINEAR packets within
// the engine's limit by `copy_chunks` (a range-v3 view). Layouts: abi/sdma.hpp
// (spec/packets.md §3). Thread safety: pure functions on caller-owned memory.
#pragma once

#include <aqueduct/abi/sdma.hpp>
#include <aqueduct/core/assert.hpp>
#include <aqueduct/core/bits.hpp>
#include <aqueduct/core/units.hpp>

#include <range/v3/range/operations.hpp>
#include <range/v3/view/concat.hpp>
#include <range/v3/view/iota.hpp>
#include <range/v3/view/transform.hpp>

#include <cstddef>
#include <cstdint>
#include <span>

namespace aqueduct::ring::sdma {

namespace pkt = aqueduct::abi::sdma;  // packet layouts

// One COPY_LINEAR's worth of a larger copy.
struct copy_chunk {
  gpu_va dst;
  gpu_va src;
  std::uint64_t bytes = 0;
  constexpr bool operator==(const copy_chunk&) const = default;
};

// The chunks of a `bytes`-long copy, each at most `max_bytes` (> 0) long, in address order.
// Every chunk but the last is exactly `max_bytes`; a zero-byte copy has no chunks. (Not
// constexpr: range-v3's views are not literal types.)
[[nodiscard]] inline auto copy_chunks(gpu_va dst, gpu_va src, std::uint64_t bytes, std::uint64_t max_bytes) {
  AQUEDUCT_ASSERT(max_bytes > 0, "chunk size must be positive");
  const std::uint64_t n = (bytes + max_bytes - 1) / max_bytes;
  return ranges::views::iota(std::uint64_t{0}, n) |
         ranges::views::transform([=](std::uint64_t i) {
           const std::uint64_t off = i * max_bytes;
           const std::uint64_t len = bytes - off < max_bytes ? bytes - off : max_bytes;
           return copy_chunk{dst + byte_count(off), src + byte_count(off), len};
         });
}

// Like copy_chunks, but when both addresses are dword aligned and a copy longer than 4 bytes
// has a ragged length, the 1–3 trailing bytes get a packet of their own, so every other packet
// runs in the engine's faster dword mode (Mesa ac_emit_sdma_copy_linear: "SDMA FW automatically
// enables a faster dword copy mode when source, destination and size are all dword-aligned").
[[nodiscard]] inline auto copy_plan(gpu_va dst, gpu_va src, std::uint64_t bytes, std::uint64_t max_bytes) {
  const bool split = dst.aligned(4) && src.aligned(4) && bytes > 4 && (bytes & 3u) != 0;
  const std::uint64_t body = split ? (bytes & ~std::uint64_t{3}) : bytes;
  return ranges::views::concat(copy_chunks(dst, src, body, max_bytes),
                               copy_chunks(dst + byte_count(body), src + byte_count(body), bytes - body, max_bytes));
}

template <pkt::engine Engine>
struct encoder {
  static constexpr pkt::engine engine = Engine;
  static constexpr std::uint64_t max_copy_bytes = pkt::max_copy_bytes(Engine);
  static constexpr std::uint64_t max_fill_bytes = pkt::max_fill_bytes(Engine);
  static constexpr std::uint32_t copy_linear_dwords = pkt::copy_linear::dwords(Engine);
  static constexpr std::uint32_t constant_fill_dwords = pkt::constant_fill::dwords;
  static constexpr std::uint32_t fence_dwords = pkt::fence::dwords;
  static constexpr std::uint32_t trap_dwords = pkt::trap::dwords;
  static constexpr std::uint32_t poll_regmem_dwords = pkt::poll_regmem::dwords;
  static constexpr std::uint32_t timestamp_dwords = pkt::timestamp::dwords;
  static constexpr std::uint32_t atomic_dwords = pkt::atomic::dwords;
  static constexpr std::uint32_t gcr_req_dwords = pkt::gcr_req::dwords;
  static constexpr std::uint32_t indirect_dwords = pkt::indirect::dwords;
  static constexpr std::uint32_t cond_exe_dwords = pkt::cond_exe::dwords;

  // COPY_LINEAR of 1..max_copy_bytes bytes. Returns dwords written.
  static constexpr std::size_t copy_linear(std::span<std::uint32_t> out, gpu_va dst, gpu_va src, std::uint64_t bytes) noexcept {
    AQUEDUCT_ASSERT(bytes >= 1 && bytes <= max_copy_bytes, "COPY_LINEAR byte count outside the engine's limit");
    AQUEDUCT_ASSERT(out.size() >= copy_linear_dwords, "SDMA reservation too small");
    out[0] = pkt::header(pkt::op::copy, pkt::sub_op::copy_linear);
    out[1] = count_field(bytes - 1);
    out[2] = 0;  // no endian swap, default cache policy
    out[3] = src.lo();
    out[4] = src.hi();
    out[5] = dst.lo();
    out[6] = dst.hi();
    if constexpr (Engine == pkt::engine::v7_0) out[7] = 0;  // DCC control: no (de)compression
    return copy_linear_dwords;
  }

  // Dwords `copy` writes for this copy (any size; 0 for 0 bytes).
  [[nodiscard]] static std::size_t copy_dwords(gpu_va dst, gpu_va src, std::uint64_t bytes) noexcept {
    return static_cast<std::size_t>(ranges::distance(copy_plan(dst, src, bytes, max_copy_bytes))) * copy_linear_dwords;
  }
  // A copy of any size as consecutive COPY_LINEAR packets (copy_plan). Returns dwords written.
  static std::size_t copy(std::span<std::uint32_t> out, gpu_va dst, gpu_va src, std::uint64_t bytes) noexcept {
    AQUEDUCT_ASSERT(out.size() >= copy_dwords(dst, src, bytes), "SDMA reservation too small for the whole copy");
    std::size_t n = 0;
    for (const copy_chunk c : copy_plan(dst, src, bytes, max_copy_bytes))
      n += copy_linear(out.subspan(n), c.dst, c.src, c.bytes);
    return n;
  }

  // CONSTANT_FILL of 1..max_fill_bytes bytes with a repeated 32-bit value (dword fill, ROCT
  // FILLSIZE 2; Linux's amdgpu fill leaves FILLSIZE 0). `bytes` and `dst` must be dword multiples.
  static constexpr std::size_t constant_fill(std::span<std::uint32_t> out, gpu_va dst, std::uint32_t value,
                                             std::uint64_t bytes, std::uint32_t fillsize = pkt::constant_fill::fillsize_dword) noexcept {
    AQUEDUCT_ASSERT(bytes >= 1 && bytes <= max_fill_bytes, "CONSTANT_FILL byte count outside the engine's limit");
    AQUEDUCT_ASSERT(fillsize != pkt::constant_fill::fillsize_dword || (bytes % 4 == 0 && dst.aligned(4)),
                    "a dword fill needs a dword-aligned address and length");
    AQUEDUCT_ASSERT(out.size() >= constant_fill_dwords, "SDMA reservation too small");
    out[0] = pkt::header(pkt::op::const_fill) | pkt::constant_fill::fillsize::put(fillsize);
    out[1] = dst.lo();
    out[2] = dst.hi();
    out[3] = value;
    if constexpr (pkt::fill_count_bits(Engine) == 22)
      out[4] = pkt::constant_fill::count_v4::put(bytes - 1);
    else
      out[4] = pkt::constant_fill::count_v6::put(bytes - 1);
    return constant_fill_dwords;
  }
  [[nodiscard]] static constexpr std::size_t fill_dwords(std::uint64_t bytes) noexcept {
    return static_cast<std::size_t>((bytes + max_fill_bytes - 1) / max_fill_bytes) * constant_fill_dwords;
  }
  // A dword fill of any (dword-multiple) size, split into max_fill_bytes chunks. Returns dwords written.
  static std::size_t fill(std::span<std::uint32_t> out, gpu_va dst, std::uint32_t value, std::uint64_t bytes) noexcept {
    AQUEDUCT_ASSERT(out.size() >= fill_dwords(bytes), "SDMA reservation too small for the whole fill");
    std::size_t n = 0;
    for (const copy_chunk c : copy_chunks(dst, dst, bytes, max_fill_bytes))
      n += constant_fill(out.subspan(n), c.dst, value, c.bytes);
    return n;
  }

  // FENCE: write a 32-bit value (uncached MTYPE on engines that have the field, as Linux and
  // tinygrad do; SDMA 4 has no cache fields).
  static constexpr std::size_t fence(std::span<std::uint32_t> out, gpu_va addr, std::uint32_t value) noexcept {
    AQUEDUCT_ASSERT(addr.aligned(4), "FENCE address must be dword aligned");
    AQUEDUCT_ASSERT(out.size() >= fence_dwords, "SDMA reservation too small");
    out[0] = pkt::header(pkt::op::fence) |
             (Engine == pkt::engine::v4_0 ? 0u : pkt::fence::mtype::put(pkt::fence::mtype_uc));
    out[1] = addr.lo();
    out[2] = addr.hi();
    out[3] = value;
    return fence_dwords;
  }

  // TRAP: raise an interrupt carrying `int_context` (KFD: the event id).
  static constexpr std::size_t trap(std::span<std::uint32_t> out, std::uint32_t int_context) noexcept {
    AQUEDUCT_ASSERT(out.size() >= trap_dwords, "SDMA reservation too small");
    out[0] = pkt::header(pkt::op::trap);
    out[1] = pkt::trap::int_context::put(int_context);
    return trap_dwords;
  }

  // POLL_REGMEM on memory: stall until `(*addr & mask) func reference`.
  static constexpr std::size_t poll_regmem(std::span<std::uint32_t> out, gpu_va addr, std::uint32_t reference,
                                           std::uint32_t mask = 0xFFFFFFFFu,
                                           pkt::poll_regmem::function func = pkt::poll_regmem::function::greater_equal,
                                           std::uint32_t interval = 4,
                                           std::uint32_t retry_count = pkt::poll_regmem::retry_forever) noexcept {
    AQUEDUCT_ASSERT(addr.aligned(4), "POLL_REGMEM address must be dword aligned");
    AQUEDUCT_ASSERT(out.size() >= poll_regmem_dwords, "SDMA reservation too small");
    out[0] = pkt::header(pkt::op::poll_regmem) | pkt::poll_regmem::func::put(static_cast<std::uint32_t>(func)) |
             pkt::poll_regmem::mem_poll::put(1);
    out[1] = addr.lo();
    out[2] = addr.hi();
    out[3] = reference;
    out[4] = mask;
    out[5] = pkt::poll_regmem::interval::put(interval) | pkt::poll_regmem::retry_count::put(retry_count);
    return poll_regmem_dwords;
  }

  // HDP flush: write REQ, poll DONE until (DONE & ref_and_mask) == ref_and_mask (Linux sdma_v6/v7).
  // Register arguments are dword addresses.
  static constexpr std::size_t hdp_flush(std::span<std::uint32_t> out, std::uint32_t flush_done_reg,
                                         std::uint32_t flush_req_reg, std::uint32_t ref_and_mask) noexcept {
    AQUEDUCT_ASSERT(out.size() >= poll_regmem_dwords, "SDMA reservation too small");
    out[0] = pkt::header(pkt::op::poll_regmem) | pkt::poll_regmem::hdp_flush::put(1) |
             pkt::poll_regmem::func::put(static_cast<std::uint32_t>(pkt::poll_regmem::function::equal));
    out[1] = flush_done_reg << 2;
    out[2] = flush_req_reg << 2;
    out[3] = ref_and_mask;
    out[4] = ref_and_mask;
    out[5] = pkt::poll_regmem::retry_count::put(pkt::poll_regmem::retry_forever) | pkt::poll_regmem::interval::put(10);
    return poll_regmem_dwords;
  }

  // TIMESTAMP GET_GLOBAL: write the 64-bit global GPU timestamp to an 8-byte aligned address.
  static constexpr std::size_t timestamp(std::span<std::uint32_t> out, gpu_va addr) noexcept {
    AQUEDUCT_ASSERT(addr.aligned(pkt::timestamp::addr_alignment), "TIMESTAMP address must be 8-byte aligned");
    AQUEDUCT_ASSERT(out.size() >= timestamp_dwords, "SDMA reservation too small");
    out[0] = pkt::header(pkt::op::timestamp, pkt::sub_op::timestamp_get_global);
    out[1] = addr.lo();
    out[2] = addr.hi();
    return timestamp_dwords;
  }

  // ATOMIC on a qword (e.g. pkt::atomic::op_add64) without looping.
  static constexpr std::size_t atomic(std::span<std::uint32_t> out, gpu_va addr, std::uint32_t atomic_op,
                                      std::uint64_t src, std::uint64_t cmp = 0) noexcept {
    AQUEDUCT_ASSERT(addr.aligned(8), "SDMA ATOMIC address must be qword aligned");
    AQUEDUCT_ASSERT(out.size() >= atomic_dwords, "SDMA reservation too small");
    out[0] = pkt::header(pkt::op::atomic) | pkt::atomic::atomic_op::put(atomic_op);
    out[1] = addr.lo();
    out[2] = addr.hi();
    out[3] = lo32(src);
    out[4] = hi32(src);
    out[5] = lo32(cmp);
    out[6] = hi32(cmp);
    out[7] = 0;
    return atomic_dwords;
  }

  // WRITE_UNTILED: store 1..2^20 dwords inline.
  [[nodiscard]] static constexpr std::size_t write_dwords(std::size_t n) noexcept { return pkt::write_untiled::head_dwords + n; }
  static constexpr std::size_t write(std::span<std::uint32_t> out, gpu_va addr, std::span<const std::uint32_t> values) noexcept {
    AQUEDUCT_ASSERT(!values.empty() && pkt::write_untiled::count::fits(values.size() - 1), "WRITE count out of range");
    AQUEDUCT_ASSERT(addr.aligned(4), "WRITE address must be dword aligned");
    AQUEDUCT_ASSERT(out.size() >= write_dwords(values.size()), "SDMA reservation too small");
    out[0] = pkt::header(pkt::op::write, pkt::sub_op::write_linear);
    out[1] = addr.lo();
    out[2] = addr.hi();
    out[3] = pkt::write_untiled::count::put(values.size() - 1);
    for (std::size_t i = 0; i < values.size(); ++i) out[4 + i] = values[i];
    return write_dwords(values.size());
  }

  // NOP padding of `n` >= 1 dwords: one burst NOP (count = n − 1) followed by zero payload.
  static constexpr std::size_t nop(std::span<std::uint32_t> out, std::size_t n) noexcept {
    AQUEDUCT_ASSERT(n >= 1 && pkt::nop::count::fits(n - 1), "NOP length out of range");
    AQUEDUCT_ASSERT(out.size() >= n, "SDMA reservation too small");
    out[0] = pkt::header(pkt::op::nop) | pkt::nop::count::put(n - 1);
    for (std::size_t i = 1; i < n; ++i) out[i] = 0;
    return n;
  }

  // GCR_REQ (SDMA 5+): cache write-back/invalidate over [base, limit] (both 0 = everything, as Linux).
  static constexpr std::size_t gcr_req(std::span<std::uint32_t> out, std::uint32_t gcr_control, gpu_va base = {},
                                       gpu_va limit = {}) noexcept
    requires(pkt::has_gcr_req(Engine))
  {
    AQUEDUCT_ASSERT(out.size() >= gcr_req_dwords, "SDMA reservation too small");
    namespace g = pkt::gcr_req;
    out[0] = pkt::header(pkt::op::gcr_req);
    out[1] = g::base_va_31_7::put(base.lo() >> 7);
    out[2] = g::base_va_47_32::put(base.hi() & 0xFFFFu) | g::gcr_control_15_0::put(gcr_control & 0xFFFFu);
    out[3] = g::gcr_control_18_16::put((gcr_control >> 16) & 7u) | g::limit_va_31_7::put(limit.lo() >> 7);
    out[4] = g::limit_va_47_32::put(limit.hi() & 0xFFFFu);
    return gcr_req_dwords;
  }

  // INDIRECT: run an IB (32-byte aligned). The packet must END on an 8-dword boundary; `pad_before`
  // gives the NOP dwords to put first when the packet would start at ring dword `wptr_dw`.
  [[nodiscard]] static constexpr std::size_t indirect_pad_before(std::uint64_t wptr_dw) noexcept {
    return static_cast<std::size_t>((2u - (wptr_dw & 7u)) & 7u);  // Linux: (2 - wptr) & 7
  }
  static constexpr std::size_t indirect(std::span<std::uint32_t> out, gpu_va ib, std::uint32_t ib_dwords, std::uint32_t vmid = 0) noexcept {
    AQUEDUCT_ASSERT(ib.aligned(32), "SDMA IB base must be 32-byte aligned");
    AQUEDUCT_ASSERT(out.size() >= indirect_dwords, "SDMA reservation too small");
    out[0] = pkt::header(pkt::op::indirect) | pkt::indirect::vmid::put(vmid);
    out[1] = ib.lo();
    out[2] = ib.hi();
    out[3] = pkt::indirect::ib_size::put(ib_dwords);
    out[4] = 0;
    out[5] = 0;
    return indirect_dwords;
  }

  // COND_EXE: the next `exec_count` dwords run only if the 32-bit value at `addr` (dword aligned)
  // equals `reference`.
  static constexpr std::size_t cond_exe(std::span<std::uint32_t> out, gpu_va addr, std::uint32_t reference,
                                        std::uint32_t exec_count) noexcept {
    AQUEDUCT_ASSERT(addr.aligned(4), "SDMA COND_EXE address must be dword aligned");
    AQUEDUCT_ASSERT(pkt::cond_exe::exec_count::fits(exec_count), "SDMA COND_EXE count out of range");
    AQUEDUCT_ASSERT(out.size() >= cond_exe_dwords, "SDMA reservation too small");
    out[0] = pkt::header(pkt::op::cond_exe);
    out[1] = addr.lo();
    out[2] = addr.hi();
    out[3] = reference;
    out[4] = pkt::cond_exe::exec_count::put(exec_count);
    return cond_exe_dwords;
  }

 private:
  static constexpr std::uint32_t count_field(std::uint64_t v) noexcept {
    if constexpr (pkt::count_bits(Engine) == 22)
      return pkt::copy_linear::count_v4::put(v);
    else
      return pkt::copy_linear::count_v5_2::put(v);
  }
};

// The encoder of an arch::target (its `sdma_version` is major*10 + minor: 40, 44, 50, 52, 60, 70).
template <class Target>
using encoder_for = encoder<pkt::engine_from_ip(Target::sdma_version / 10, Target::sdma_version % 10)>;

using encoder_v4 = encoder<pkt::engine::v4_0>;
using encoder_v5 = encoder<pkt::engine::v5_0>;
using encoder_v5_2 = encoder<pkt::engine::v5_2>;
using encoder_v6 = encoder<pkt::engine::v6_0>;
using encoder_v7 = encoder<pkt::engine::v7_0>;

}  // namespace aqueduct::ring::sdma
