// tests/support/pm4_rig.hpp — the PM4 rig of the engine-level tests (tests/emu/pm4_processor.cpp,
// cwsr.cpp): a PM4 queue's memory allocated here (tests/support/emu_rig.hpp: GPU VA == host
// address, as on the emulated device), one emu::pm4_processor on it, and a ring::pm4_queue<Target>
// producer whose doorbell wakes the processor; the vadd kernel both engines run.
// Node figures are the spec's (spec/kfd.md §1.5 table, spec/packets.md §2).
#pragma once

#include "emu_rig.hpp"
#include <aqueduct/emu/cwsr.hpp>
#include <aqueduct/emu/pm4_processor.hpp>
#include <aqueduct/queue/pm4_queue.hpp>

#include <doctest/doctest.h>

#include <atomic>
#include <optional>
#include <span>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

namespace pm4test {

using aq_test::test_events;
using aq_test::test_vm;

namespace aq = aqueduct;
namespace abi = aqueduct::abi;
namespace emu = aqueduct::emu;
namespace arch = aqueduct::arch;
namespace qpm4 = aqueduct::ring::pm4;

using aq_test::aligned_deleter;
using aq_test::gpu_alloc;
using aq_test::gpu_ptr;
using aq_test::kernel_object;
using aq_test::va;

// Node CWSR inputs (spec/kfd.md §1.5 table; gfx1151 from the processor table's version).
inline constexpr arch::cwsr_inputs rx7900xtx_node{110000, 192, 2, 1, 12, 2, 64};
inline constexpr arch::cwsr_inputs mi300x_node{90402, 1216, 4, 8, 32, 1, 64};
inline constexpr arch::cwsr_inputs gfx1151_node{110501, 80, 2, 1, 2, 1, 64};
// spec/kfd.md §1.5: RX 7900 XTX ctl_stack 40960, cwsr_size 46047232.
inline constexpr std::uint32_t rx7900xtx_ctl_stack = 40960, rx7900xtx_cwsr = 46047232;

// Calls the processor on every doorbell store (the emulator's "MMIO write noticed").
struct rig_doorbell {
  std::uint64_t* word = nullptr;
  emu::pm4_processor** proc = nullptr;
  void ring(std::uint64_t v) noexcept {
    std::atomic_ref<std::uint64_t>(*word).store(v, std::memory_order_release);
    if (*proc) (*proc)->ring_doorbell(v);
  }
};

struct rig_options {
  arch::cwsr_inputs node = rx7900xtx_node;
  arch::family family = arch::family::gfx11;
  std::uint32_t simd_arrays_per_engine = 2;
  std::uint32_t ring_dwords = 16384;
  std::uint32_t ctl_stack_size = rx7900xtx_ctl_stack;
  std::uint32_t ctx_save_restore_size = rx7900xtx_cwsr;
  std::uint64_t cwsr_mapped_bytes = 0;  // 0: ctx_save_restore_size
  bool eop = true;
  emu::pm4_processor_options processor{};
};

// Ring, pointers, EOP and CWSR memory, and the processor.
struct rig {
  test_vm vm;
  test_events events;
  emu::host_kernel_registry registry;
  rig_options opt;
  gpu_ptr<std::uint32_t> ring;
  gpu_ptr<std::uint64_t> ptrs;  // [0] rptr, [8] wptr, [16] doorbell word
  gpu_ptr<std::byte> eop, cwsr;
  emu::pm4_processor* proc_raw = nullptr;
  std::unique_ptr<emu::pm4_processor> proc;

  explicit rig(rig_options o = {}) : opt(std::move(o)) {
    ring = gpu_alloc<std::uint32_t>(vm, opt.ring_dwords, 4096);
    ptrs = gpu_alloc<std::uint64_t>(vm, 512, 4096);
    if (opt.eop) eop = gpu_alloc<std::byte>(vm, 4096, 4096);
    if (opt.ctx_save_restore_size != 0) {
      const std::uint64_t mapped = opt.cwsr_mapped_bytes ? opt.cwsr_mapped_bytes : opt.ctx_save_restore_size;
      cwsr = gpu_alloc<std::byte>(vm, std::max<std::uint64_t>(mapped, opt.ctx_save_restore_size), 4096, false);
      vm.map(cwsr.get(), mapped);
    }
  }
  ~rig() { proc.reset(); }

  emu::pm4_queue_binding binding() const {
    emu::pm4_queue_binding b;
    b.ring_va = va(ring.get());
    b.ring_bytes = opt.ring_dwords * 4ull;
    b.read_pointer_va = va(&ptrs[0]);
    b.write_pointer_va = va(&ptrs[8]);
    b.eop_buffer_va = opt.eop ? va(eop.get()) : 0;
    b.eop_buffer_bytes = opt.eop ? 4096 : 0;
    b.cwsr = {cwsr ? va(cwsr.get()) : 0, opt.ctx_save_restore_size, opt.ctl_stack_size};
    b.node = opt.node;
    b.family = opt.family;
    b.gfx_target_version = opt.node.gfx_target_version;
    b.simd_arrays_per_engine = opt.simd_arrays_per_engine;
    b.gpu_id = 0x1234;
    b.queue_id = 3;
    return b;
  }
  void start() {
    auto r = emu::pm4_processor::try_create(binding(), vm, events, registry, opt.processor);
    REQUIRE(r.has_value());
    proc = std::move(*r);
    proc_raw = proc.get();
  }
  template <class Target>
  std::unique_ptr<aq::ring::pm4_queue<Target, rig_doorbell>> make_queue() {
    return std::make_unique<aq::ring::pm4_queue<Target, rig_doorbell>>(
        aq::ring::pm4_queue_memory{ring.get(), opt.ring_dwords, &ptrs[8], &ptrs[0]}, rig_doorbell{&ptrs[16], &proc_raw});
  }
  // Raw producer for hand-written dwords: append at the write pointer, publish, ring.
  std::uint64_t push(std::initializer_list<std::uint32_t> dws) { return push(std::vector<std::uint32_t>(dws)); }
  std::uint64_t push(const std::vector<std::uint32_t>& dws) {
    std::uint64_t w = std::atomic_ref<std::uint64_t>(ptrs[8]).load(std::memory_order_relaxed);
    for (std::uint32_t d : dws) ring[w++ & (opt.ring_dwords - 1)] = d;
    std::atomic_ref<std::uint64_t>(ptrs[8]).store(w, std::memory_order_release);
    rig_doorbell{&ptrs[16], &proc_raw}.ring(w);
    return w;
  }
  std::uint64_t rptr() const { return std::atomic_ref<std::uint64_t>(ptrs[0]).load(std::memory_order_acquire); }
};

// ---- the "compiled" vadd kernel ------------------------------------------------------------------
// Descriptor: only the kernarg pointer is enabled, so its code finds kernarg in s[0:1]
// (spec/packets.md §1.6 order), the workgroup id X in s2 (USER_SGPR_COUNT = 2), work-item id X
// in v0 [9:0] (packed on gfx11, AMDGPUUsage). Works unchanged under AQL and PM4.
struct vadd_args {
  std::uint64_t a, b, c;
  std::uint32_t n, block;
};
inline void vadd_kernel(emu::workgroup_context& wg) {
  for (const emu::wave_state& w : wg.waves()) {
    const auto args = wg.load<vadd_args>(w.sgpr64(0));
    const std::uint32_t group = w.sgpr[2];
    for (unsigned lane = 0; lane < w.wave_size; ++lane) {
      if (((w.exec >> lane) & 1) == 0) continue;
      const std::uint32_t i = group * args.block + (w.v0[lane] & 0x3FF);
      if (i >= args.n) continue;
      wg.store<float>(args.c + 4ull * i, wg.load<float>(args.a + 4ull * i) + wg.load<float>(args.b + 4ull * i));
    }
  }
}
inline abi::kernel_descriptor vadd_descriptor(bool wave32 = true) {
  namespace kcp = abi::kernel_code_properties;
  namespace r2 = abi::compute_pgm_rsrc2;
  abi::kernel_descriptor kd{};
  kd.kernarg_size = sizeof(vadd_args);
  kd.kernel_code_properties = static_cast<std::uint16_t>(kcp::enable_sgpr_kernarg_segment_ptr::mask |
                                                         (wave32 ? kcp::enable_wavefront_size32::mask : 0));
  kd.compute_pgm_rsrc2 = r2::user_sgpr_count::put(2) | r2::enable_sgpr_workgroup_id_x::put(1);
  kd.compute_pgm_rsrc1 = 0x000C0084;  // kfdtest's VGPRS 4 / SGPRS 2 / FLOAT_MODE 0xC0 (spec/kfd.md §4), PRIV 0
  return kd;
}

// Arrays a, b, c (tests/support/emu_rig.hpp) and the kernarg block, in mapped memory.
struct vadd_data : aq_test::vadd_arrays {
  gpu_ptr<vadd_args> args;
  vadd_data(test_vm& vm, std::uint32_t count, std::uint32_t block) : vadd_arrays(vm, count) {
    args = gpu_alloc<vadd_args>(vm, 1, 64);
    args[0] = {va(a.get()), va(b.get()), va(c.get()), n, block};
  }
};

// Sets or clears COMPUTE_PGM_RSRC1.PRIV in every SET_SH_REG that writes 0x2E12 among the packets
// in `dws` (emitted but not yet committed) — the TEST-ONLY hook that forces the bit a typed
// encoder cannot write. Walks packets by their COUNT (spec/packets.md §1.1).
inline int force_rsrc1_priv(std::span<std::uint32_t> dws, bool priv) {
  int patched = 0;
  for (std::size_t at = 0; at < dws.size();) {
    const std::uint32_t h = dws[at];
    const std::uint32_t len = ((h >> 16) & 0x3FFF) + 2;
    if (((h >> 8) & 0xFF) == 0x76) {
      const std::uint32_t first = (dws[at + 1] & 0xFFFF) + 0x2C00;
      for (std::uint32_t i = 0; i + 2 < len; ++i)
        if (first + i == 0x2E12) {
          std::uint32_t& v = dws[at + 2 + i];
          v = priv ? (v | (1u << 20)) : (v & ~(1u << 20));
          ++patched;
        }
    }
    at += len;
  }
  return patched;
}

// Launch parameters of a 1-D vadd (no designated initializers: -Wmissing-field-initializers).
inline qpm4::dispatch_params vadd_params(const kernel_object& ko, const vadd_data& d, std::uint32_t block) {
  qpm4::dispatch_params p;
  p.kd = &ko.kd;
  p.kd_va = aq::gpu_va(ko.va_);
  p.grid = {(d.n + block - 1) / block, 1, 1};
  p.block = {block, 1, 1};
  p.kernarg = aq::gpu_va(va(d.args.get()));
  return p;
}
inline aq::ring::pm4_completion completion(const void* word, std::uint64_t value, bool b64 = false,
                                            const void* mailbox = nullptr, std::uint32_t event_id = 0) {
  aq::ring::pm4_completion c;
  c.address = aq::gpu_va(va(word));
  c.value = value;
  c.b64 = b64;
  if (mailbox) c.event_mailbox = aq::gpu_va(va(mailbox));
  c.event_id = event_id;
  return c;
}

// One vadd dispatch through a typed queue; `priv` forces RSRC1.PRIV (test-only) when set.
// Returns the write pointer after the command.
template <class Q>
std::uint64_t submit_vadd(Q& q, const kernel_object& ko, const vadd_data& d, std::uint32_t block, std::uint64_t signal_va,
                          std::uint32_t value, std::optional<bool> priv = std::nullopt) {
  using enc = typename Q::encoder;
  const qpm4::dispatch_params p = vadd_params(ko, d, block);
  auto r = q.reserve(Q::dispatch_command_dwords(ko.kd));
  r.acquire_mem(enc::pre_dispatch_cntl);
  const auto area = r.rest();
  const std::size_t n = r.dispatch(p);
  if (priv) REQUIRE(force_rsrc1_priv(area.first(n), *priv) == 1);
  r.partial_flush();
  if (signal_va) r.complete(completion(reinterpret_cast<const void*>(signal_va), value, true));
  return r.commit();
}

}  // namespace pm4test
