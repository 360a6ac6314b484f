// libFuzzer target: random dword streams on an emulated SDMA queue of every engine version.
// Input: byte 0 picks the engine (v4_0 .. v7_0), the rest are the ring's dwords. The stream must
// end in completion, a queue error with a detail, or a bounded wait - never a crash.
#include "fuzz_engines.hpp"

#include <aqueduct/emu/sdma_engine.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>

namespace abi = aqueduct::abi;
namespace emu = aqueduct::emu;
using namespace fuzz_emu;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  static constexpr abi::sdma::engine engines[] = {abi::sdma::engine::v4_0, abi::sdma::engine::v5_0,
                                                  abi::sdma::engine::v5_2, abi::sdma::engine::v6_0,
                                                  abi::sdma::engine::v7_0};
  const auto eng = engines[data[0] % 5];
  ++data;
  --size;
  constexpr std::size_t ring_bytes = 64 * 1024;
  const std::size_t dwords = std::min<std::size_t>(size / 4, ring_bytes / 4 - 1);

  fuzz_vm vm;
  fuzz_events events;
  auto* ring = static_cast<std::uint32_t*>(aligned(ring_bytes));
  auto* ptrs = static_cast<std::uint64_t*>(aligned(4096));
  vm.map(ring, ring_bytes);
  vm.map(ptrs, 4096);
  vm.map(scratch(), scratch_bytes);
  std::memcpy(ring, data, dwords * 4);

  emu::sdma_queue_binding b;
  b.ring_va = reinterpret_cast<std::uintptr_t>(ring);
  b.ring_bytes = ring_bytes;
  b.read_pointer_va = reinterpret_cast<std::uintptr_t>(&ptrs[0]);
  b.write_pointer_va = reinterpret_cast<std::uintptr_t>(&ptrs[8]);
  b.engine = eng;
  b.gpu_id = 0x1234;
  b.queue_id = 1;
  {
    auto e = emu::sdma_engine::try_create(b, vm, events);
    if (!e) std::abort();  // the binding is valid: creation must succeed
    auto& engine = **e;
    std::atomic_ref<std::uint64_t>(ptrs[8]).store(dwords * 4, std::memory_order_release);
    engine.ring_doorbell(dwords * 4);
    (void)engine.wait_idle(dwords * 4, std::chrono::milliseconds(20));
    if (engine.has_error()) {
      auto err = engine.error();
      if (!err || err->detail.empty()) std::abort();  // an error always says what and where
    }
    engine.stop();
  }
  std::free(ring);
  std::free(ptrs);
  return 0;
}
