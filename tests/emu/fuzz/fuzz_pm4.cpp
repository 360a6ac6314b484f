// libFuzzer target: random dword streams on an emulated PM4 (MEC) queue of gfx11 and gfx94x.
// Input: byte 0 picks the node, the rest are the ring's dwords. The stream must end in completion,
// a queue error with a detail, or a bounded wait (WAIT_REG_MEM that never passes) - never a crash.
// A dispatch may name one registered host kernel, "fuzz_touch", which stores into its kernarg.
#include "fuzz_engines.hpp"

#include <aqueduct/emu/pm4_processor.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>

namespace arch = aqueduct::arch;
namespace emu = aqueduct::emu;
using namespace fuzz_emu;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  // Node CWSR inputs of spec/kfd.md §1.5 (RX 7900 XTX, MI300X), as tests/emu/pm4_rig.hpp.
  struct node {
    arch::cwsr_inputs in;
    arch::family fam;
    std::uint32_t simd_arrays;
  };
  static constexpr node nodes[] = {{{110000, 192, 2, 1, 12, 2, 64}, arch::family::gfx11, 2},
                                   {{90402, 1216, 4, 8, 32, 1, 64}, arch::family::gfx94x, 1}};
  const node& n = nodes[data[0] % 2];
  ++data;
  --size;
  constexpr std::size_t ring_dwords = 4096;
  const std::size_t dwords = std::min<std::size_t>(size / 4, ring_dwords - 1);

  static fuzz_events events;
  static emu::host_kernel_registry registry;
  static const bool once = [] {
    registry.add("fuzz_touch", [](emu::workgroup_context& ctx) {
      ctx.store<std::uint32_t>(ctx.wave(0).sgpr64(0), 1);  // a checked store: a bad address is a fault
    });
    return true;
  }();
  (void)once;
  auto* ring = static_cast<std::uint32_t*>(aligned(ring_dwords * 4));
  auto* ptrs = static_cast<std::uint64_t*>(aligned(4096));
  auto* eop = aligned(4096);
  fuzz_vm local;  // this input's ring, pointers and EOP, plus the shared scratch
  local.map(ring, ring_dwords * 4);
  local.map(ptrs, 4096);
  local.map(eop, 4096);
  local.map(scratch(), scratch_bytes);
  std::memcpy(ring, data, dwords * 4);

  emu::pm4_queue_binding b;
  b.ring_va = reinterpret_cast<std::uintptr_t>(ring);
  b.ring_bytes = ring_dwords * 4;
  b.read_pointer_va = reinterpret_cast<std::uintptr_t>(&ptrs[0]);
  b.write_pointer_va = reinterpret_cast<std::uintptr_t>(&ptrs[8]);
  b.eop_buffer_va = reinterpret_cast<std::uintptr_t>(eop);
  b.eop_buffer_bytes = 4096;
  b.cwsr = {0, 0, 0};
  b.node = n.in;
  b.family = n.fam;
  b.gfx_target_version = n.in.gfx_target_version;
  b.simd_arrays_per_engine = n.simd_arrays;
  b.gpu_id = 0x1234;
  b.queue_id = 1;
  {
    emu::pm4_processor_options o;
    o.idle_poll = std::chrono::microseconds(200);
    auto p = emu::pm4_processor::try_create(b, local, events, registry, o);
    if (p) {
      auto& proc = **p;
      std::atomic_ref<std::uint64_t>(ptrs[8]).store(dwords, std::memory_order_release);
      proc.ring_doorbell(dwords);
      (void)proc.wait_consumed(dwords, std::chrono::milliseconds(20));
      if (proc.has_error()) {
        auto err = proc.error();
        if (!err || err->detail.empty()) std::abort();  // an error always says what and where
      }
      proc.stop();
    }
  }
  std::free(ring);
  std::free(ptrs);
  std::free(eop);
  return 0;
}
