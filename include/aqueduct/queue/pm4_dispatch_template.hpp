// aqueduct/queue/pm4_dispatch_template.hpp — a PM4 dispatch command built once per kernel and
// launch shape, then copied into the ring with wide stores and patched per dispatch.
//
// Layer: queue. A dispatch command (ACQUIRE_MEM + the SH register setup + DISPATCH_DIRECT +
// EVENT_WRITE + the completion RELEASE_MEM, queue/pm4_queue.hpp) is, for one kernel, block size,
// scratch setting and completion form, the same dwords every time except five things: the
// work-group counts (DISPATCH_DIRECT dw1-3), the kernarg and dispatch-packet addresses (their
// COMPUTE_USER_DATA SGPRs, if the kernel enables them) and the completion address and value
// (RELEASE_MEM dw3-6). `dispatch_template` holds those dwords, encoded once by the encoder
// (queue/pm4_encoder.hpp: the same packets, the same PRIV policy), and the positions of the five;
// `write` copies the command with one memcpy and stores the patches — what tinygrad's prebuilt
// command queues and graph replay do, instead of deriving every register from the descriptor per
// dispatch (issue 11: 492 against 232 instructions per command). `dispatch_template_cache` keeps
// the last one built and rebuilds it only when anything but the five changes, so
// `pm4_queue::try_dispatch(params, completion)` gets the template's cost for repeated dispatches
// of one kernel without its callers building anything.
// Thread safety: values; a cache belongs to one producer (its queue's).
#pragma once

#include <aqueduct/abi/kernel_descriptor.hpp>
#include <aqueduct/abi/pm4.hpp>
#include <aqueduct/core/assert.hpp>
#include <aqueduct/core/bits.hpp>
#include <aqueduct/core/units.hpp>
#include <aqueduct/queue/pm4_encoder.hpp>

#include <array>
#include <cstdint>
#include <cstring>
#include <span>

namespace aqueduct::ring {

// How a command reports completion: RELEASE_MEM at end of pipe, after the caches are written
// back, writes `value` (32-bit as tinygrad, or 64-bit) to `address`; with `event_id` set, a
// second RELEASE_MEM writes the id to the KFD event slot `event_mailbox` and raises the
// interrupt (spec/packets.md §2.2 `signal`, spec/kfd.md §5.3).
struct pm4_completion {
  gpu_va address;
  std::uint64_t value = 0;
  bool b64 = false;
  gpu_va event_mailbox;        // 0: no interrupt
  std::uint32_t event_id = 0;
};

namespace pm4 {

// What a dispatch of a template changes.
struct dispatch_patch {
  std::array<std::uint32_t, 3> grid{1, 1, 1};  // work-group counts
  gpu_va kernarg;                              // written only if the kernel takes the kernarg SGPRs
  gpu_va dispatch_ptr;                         // written only if the kernel takes the dispatch-pointer SGPRs
  gpu_va completion_address;                   // written only if the template has a completion value
  std::uint64_t completion_value = 0;
};

template <class T>
class dispatch_template {
 public:
  using encoder = pm4::encoder<T>;
  // ACQUIRE_MEM + the largest register setup (16 user SGPRs) + EVENT_WRITE + two RELEASE_MEMs,
  // or one RELEASE_MEM and the closing ACQUIRE_MEM.
  static constexpr std::uint32_t max_dwords = 2 * encoder::acquire_mem_dwords + 2 * encoder::release_mem_dwords +
                                              encoder::event_write_dwords + 60;

  dispatch_template() = default;
  // The command `pm4_queue::try_dispatch(p, c)` writes, with p.grid, p.kernarg, p.dispatch_ptr,
  // c.address and c.value as its first patch.
  dispatch_template(const dispatch_params& p, const pm4_completion& c) noexcept {
    AQUEDUCT_ASSERT(p.kd != nullptr, "dispatch needs a kernel descriptor");
    AQUEDUCT_ASSERT(encoder::dispatch_dwords(*p.kd) + 2 * encoder::acquire_mem_dwords + 2 * encoder::release_mem_dwords +
                            encoder::event_write_dwords <=
                        max_dwords,
                    "dispatch template too small");
    const std::span<std::uint32_t> out(dw_.data(), max_dwords);
    std::size_t n = encoder::acquire_mem(out, encoder::pre_dispatch_cntl, 0xAu);
    const std::size_t setup = n;
    n += encoder::dispatch(out.subspan(n), p);
    grid_at_ = static_cast<std::uint16_t>(n - encoder::dispatch_direct_dwords + 1);
    user_sgpr_offsets(setup, n, *p.kd);
    n += encoder::event_write(out.subspan(n));
    if (c.address) {
      completion_at_ = static_cast<std::uint16_t>(n);
      b64_ = c.b64;
      if (c.b64)
        n += encoder::release_mem(out.subspan(n), {.cache_action = encoder::signal_cache_action,
                                                   .data_sel = abi::pm4::release_mem::data_sel_value::data64,
                                                   .address = c.address,
                                                   .data = c.value});
      else
        n += encoder::signal(out.subspan(n), c.address, static_cast<std::uint32_t>(c.value));
    }
    if (c.event_mailbox) n += encoder::signal_event(out.subspan(n), c.event_mailbox, c.event_id);
    if (!c.address) n += encoder::acquire_mem(out.subspan(n), encoder::full_barrier_cntl, 0xAu);
    n_ = static_cast<std::uint32_t>(n);
  }

  [[nodiscard]] std::uint32_t size() const noexcept { return n_; }
  [[nodiscard]] std::span<const std::uint32_t> dwords() const noexcept { return {dw_.data(), n_}; }
  [[nodiscard]] bool has_completion_value() const noexcept { return completion_at_ != 0; }

  // The command with `x` applied into `out` (size() dwords, contiguous): copied 64 bytes a turn,
  // the last 16 bytes overlapping (never past the command's end: the next dwords may be unread),
  // then the patched dwords. Inline rather than a memcpy call: the call cost ~55 instructions
  // and made the patch values live across it on the stack (issue 11).
  AQUEDUCT_ALWAYS_INLINE void write(std::uint32_t* out, const dispatch_patch& x) const noexcept {
    AQUEDUCT_ASSERT(n_ >= 4, "a dispatch command is longer than 16 bytes");
    auto* d = reinterpret_cast<unsigned char*>(out);
    const auto* s = reinterpret_cast<const unsigned char*>(dw_.data());
    const std::size_t bytes = std::size_t{n_} * 4;
    std::size_t k = 0;
    for (; k + 64 <= bytes; k += 64) std::memcpy(d + k, s + k, 64);
    for (; k + 16 <= bytes; k += 16) std::memcpy(d + k, s + k, 16);
    if (k < bytes) std::memcpy(d + bytes - 16, s + bytes - 16, 16);
    patch([out](std::uint32_t i) -> std::uint32_t& { return out[i]; }, x);
  }
  // The same into a ring of `ring_dwords` (a power of two) from position `at`, wrapping: out of
  // line, the rare case kept off the inlined fast path; `x` by value, so that path need not keep
  // its whole patch in memory for it.
  AQUEDUCT_NOINLINE void write_wrapped(std::uint32_t* ring, std::uint32_t ring_dwords, std::uint64_t at,
                                       dispatch_patch x) const noexcept {
    const std::uint64_t mask = ring_dwords - 1;
    for (std::uint32_t i = 0; i < n_; ++i) ring[(at + i) & mask] = dw_[i];
    patch([&](std::uint32_t i) -> std::uint32_t& { return ring[(at + i) & mask]; }, x);
  }

 private:
  template <class At>
  AQUEDUCT_ALWAYS_INLINE void patch(At&& at, const dispatch_patch& x) const noexcept {
    at(grid_at_) = x.grid[0];
    at(grid_at_ + 1u) = x.grid[1];
    at(grid_at_ + 2u) = x.grid[2];
    if (kernarg_at_) {
      at(kernarg_at_) = x.kernarg.lo();
      at(kernarg_at_ + 1u) = x.kernarg.hi();
    }
    if (dispatch_ptr_at_) {
      AQUEDUCT_ASSERT(bool(x.dispatch_ptr), "kernel needs a dispatch packet address");
      at(dispatch_ptr_at_) = x.dispatch_ptr.lo();
      at(dispatch_ptr_at_ + 1u) = x.dispatch_ptr.hi();
    }
    if (completion_at_) {
      AQUEDUCT_ASSERT(x.completion_address.aligned(b64_ ? 8 : 4), "RELEASE_MEM address misaligned for its data size");
      at(completion_at_ + 3u) = x.completion_address.lo();
      at(completion_at_ + 4u) = x.completion_address.hi();
      at(completion_at_ + 5u) = lo32(x.completion_value);
      if (b64_) at(completion_at_ + 6u) = hi32(x.completion_value);
    }
  }

  // Where the kernarg and dispatch-pointer SGPR values sit: in the SET_SH_REG packet of
  // COMPUTE_USER_DATA_0, in kernel_code_properties order (encoder::put_user_sgprs).
  void user_sgpr_offsets(std::size_t from, std::size_t to, const abi::kernel_descriptor& kd) noexcept {
    namespace kcp = abi::kernel_code_properties;
    constexpr std::uint32_t user_data_offset = encoder::regs::compute_user_data_0 - abi::pm4::sh_reg_base;
    for (std::size_t at = from; at < to; at += abi::pm4::type3_packet_dwords(dw_[at])) {
      if (abi::pm4::header_opcode::get(dw_[at]) != static_cast<std::uint8_t>(abi::pm4::opcode::set_sh_reg) ||
          abi::pm4::set_sh_reg::reg_offset::get(dw_[at + 1]) != user_data_offset)
        continue;
      const std::uint16_t props = kd.kernel_code_properties;
      std::uint32_t i = static_cast<std::uint32_t>(at) + 2;
      if (kcp::enable_sgpr_private_segment_buffer::get(props)) i += 4;
      if (kcp::enable_sgpr_dispatch_ptr::get(props)) {
        dispatch_ptr_at_ = static_cast<std::uint16_t>(i);
        i += 2;
      }
      if (kcp::enable_sgpr_queue_ptr::get(props)) i += 2;
      if (kcp::enable_sgpr_kernarg_segment_ptr::get(props)) kernarg_at_ = static_cast<std::uint16_t>(i);
      return;
    }
  }

  alignas(64) std::array<std::uint32_t, max_dwords> dw_{};
  std::uint32_t n_ = 0;
  std::uint16_t grid_at_ = 0;
  std::uint16_t kernarg_at_ = 0;       // 0: the kernel takes no kernarg pointer
  std::uint16_t dispatch_ptr_at_ = 0;  // 0: no dispatch pointer
  std::uint16_t completion_at_ = 0;    // 0: no completion value (the RELEASE_MEM header is never at 0)
  bool b64_ = false;
};

// The last template built, rebuilt only when anything but the patched fields changes.
template <class T>
class dispatch_template_cache {
  static_assert(sizeof(dispatch_params) == 152 && sizeof(pm4_completion) == 40,
                "a field was added to dispatch_params or pm4_completion: compare it in same() and copy it in get()");

 public:
  // The template for (p, c); `x` receives p's and c's patch.
  AQUEDUCT_ALWAYS_INLINE const dispatch_template<T>& get(const dispatch_params& p, const pm4_completion& c,
                                                         dispatch_patch& x) noexcept {
    if (!same(p, c)) [[unlikely]] {
      // Copied field by field, here on the cold path: passing `p` or `c` themselves (by reference
      // or by value) to the out-of-line rebuild made GCC build the caller's structs in memory on
      // the hot path too (a rep stos and a dozen stores per dispatch, issue 11), where read field
      // by field they live in registers or fold into the comparisons.
      dispatch_params q;
      q.kd = p.kd, q.kd_va = p.kd_va, q.grid = {p.grid[0], p.grid[1], p.grid[2]};
      q.block = {p.block[0], p.block[1], p.block[2]};
      q.private_segment_buffer = {p.private_segment_buffer[0], p.private_segment_buffer[1], p.private_segment_buffer[2],
                                  p.private_segment_buffer[3]};
      q.dispatch_ptr = p.dispatch_ptr, q.queue_ptr = p.queue_ptr, q.kernarg = p.kernarg, q.dispatch_id = p.dispatch_id;
      q.flat_scratch_init = {p.flat_scratch_init[0], p.flat_scratch_init[1]};
      q.dynamic_lds_bytes = p.dynamic_lds_bytes, q.scratch_base = p.scratch_base, q.scratch_waves = p.scratch_waves;
      q.scratch_bytes_per_wave = p.scratch_bytes_per_wave, q.waves_per_sh = p.waves_per_sh;
      // DISPATCH_INDIRECT never comes here (pm4_queue::try_dispatch asserts it); copied all the same.
      q.indirect_counts = p.indirect_counts;
      q.indirect_block_count_at = {p.indirect_block_count_at[0], p.indirect_block_count_at[1], p.indirect_block_count_at[2]};
      pm4_completion d;
      d.address = c.address, d.value = c.value, d.b64 = c.b64, d.event_mailbox = c.event_mailbox, d.event_id = c.event_id;
      rebuild(q, d);
    }
    x.grid = {p.grid[0], p.grid[1], p.grid[2]};
    x.kernarg = p.kernarg;
    x.dispatch_ptr = p.dispatch_ptr;
    x.completion_address = c.address;
    x.completion_value = c.value;
    return t_;
  }

 private:
  // Every input but the patched ones, compared without branches or calls (a memcmp call of the
  // descriptor alone cost ~70 instructions: issue 11). The 32-bit inputs are compared two to a
  // 64-bit word (`key`), so that inputs the caller leaves at their defaults cost one `or` per pair
  // once this is inlined into the caller.
  [[nodiscard]] AQUEDUCT_ALWAYS_INLINE bool same(const dispatch_params& p, const pm4_completion& c) const noexcept {
    // The descriptor 16 bytes at a time (GCC/Clang vector extension: SSE2 on x86-64).
    using v2 = std::uint64_t __attribute__((vector_size(16)));
    v2 dv{0, 0};
#pragma GCC unroll 4
    for (std::size_t i = 0; i < sizeof kd_ / 16; ++i) {
      v2 a, b;
      std::memcpy(&a, reinterpret_cast<const unsigned char*>(p.kd) + 16 * i, 16);
      std::memcpy(&b, reinterpret_cast<const unsigned char*>(&kd_) + 16 * i, 16);
      dv |= a ^ b;
    }
    std::uint64_t diff = dv[0] | dv[1];
    diff |= (p.kd_va.value ^ kd_va_.value) | (c.event_mailbox.value ^ event_mailbox_.value) |
            (p.scratch_base.value ^ scratch_base_.value) | (p.queue_ptr.value ^ queue_ptr_.value) | (p.dispatch_id ^ dispatch_id_);
    const key k = key_of(p, c);
#pragma GCC unroll 8
    for (std::size_t i = 0; i < k.size(); ++i) diff |= k[i] ^ key_[i];
    return diff == 0;
  }
  // The 32-bit inputs and the completion form, two to a word; the cache's copy is all zeros until
  // the first build, whose flags word has `valid` set, so an empty cache never matches.
  using key = std::array<std::uint64_t, 8>;
  [[nodiscard]] AQUEDUCT_ALWAYS_INLINE static key key_of(const dispatch_params& p, const pm4_completion& c) noexcept {
    const auto pair = [](std::uint32_t lo, std::uint32_t hi) { return std::uint64_t{lo} | std::uint64_t{hi} << 32; };
    const std::uint32_t flags = 1u | (bool(c.address) ? 2u : 0u) | (c.b64 ? 4u : 0u);  // valid, completion, 64-bit
    return {pair(p.block[0], p.block[1]), pair(p.block[2], c.event_id), pair(p.dynamic_lds_bytes, p.scratch_waves),
            pair(p.scratch_bytes_per_wave, p.waves_per_sh), pair(p.private_segment_buffer[0], p.private_segment_buffer[1]),
            pair(p.private_segment_buffer[2], p.private_segment_buffer[3]), pair(p.flat_scratch_init[0], p.flat_scratch_init[1]),
            pair(flags, 0)};
  }
  AQUEDUCT_NOINLINE void rebuild(const dispatch_params& p, const pm4_completion& c) noexcept {
    t_ = dispatch_template<T>(p, c);
    std::memcpy(&kd_, p.kd, sizeof kd_);
    kd_va_ = p.kd_va;
    event_mailbox_ = c.event_mailbox;
    scratch_base_ = p.scratch_base;
    queue_ptr_ = p.queue_ptr;
    dispatch_id_ = p.dispatch_id;
    key_ = key_of(p, c);
  }

  dispatch_template<T> t_;
  abi::kernel_descriptor kd_{};
  gpu_va kd_va_;
  gpu_va event_mailbox_;
  gpu_va scratch_base_;
  gpu_va queue_ptr_;
  std::uint64_t dispatch_id_ = 0;
  key key_{};  // all zeros: not built yet
};

}  // namespace pm4
}  // namespace aqueduct::ring
