// tests/support/emu_rig.hpp — the emulator rig of the engine-level tests, once: GPU memory
// allocated here and mapped in a test_vm (GPU VA == host address, as on the emulated device),
// emulated kernel objects, signals, and an AQL queue (ring + amd_queue) with the real emulated
// AQL engine behind it (`aql_rig`). tests/support/pm4_rig.hpp builds the PM4 rig on the same
// pieces; tests/support/emu_session.hpp is the raw-ioctl rig of a whole emu::device.
#pragma once

#include "emu_ports.hpp"

#include <aqueduct/abi/amd_queue.hpp>
#include <aqueduct/abi/amd_signal.hpp>
#include <aqueduct/abi/aql.hpp>
#include <aqueduct/abi/kernel_descriptor.hpp>
#include <aqueduct/arch/cwsr.hpp>
#include <aqueduct/emu/aql_processor.hpp>
#include <aqueduct/emu/host_kernel.hpp>

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <thread>
#include <vector>

namespace aq_test {

namespace abi = aqueduct::abi;
namespace arch = aqueduct::arch;
namespace emu = aqueduct::emu;

// ---- GPU memory --------------------------------------------------------------------------------
struct aligned_deleter {
  void operator()(void* p) const noexcept { std::free(p); }
};
template <class T>
using gpu_ptr = std::unique_ptr<T[], aligned_deleter>;

// `count` zeroed T, `align`-aligned, mapped in `vm` unless `map` is false.
template <class T = std::byte>
gpu_ptr<T> gpu_alloc(test_vm& vm, std::size_t count, std::size_t align = 256, bool map = true) {
  const std::size_t bytes = (sizeof(T) * count + align - 1) / align * align;
  void* p = std::aligned_alloc(align, bytes);
  REQUIRE(p != nullptr);
  std::memset(p, 0, bytes);
  if (map) vm.map(p, bytes);
  return gpu_ptr<T>(static_cast<T*>(p));
}
inline std::uint64_t va(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }
constexpr std::uint32_t lo(std::uint64_t v) { return static_cast<std::uint32_t>(v); }
constexpr std::uint32_t hi(std::uint64_t v) { return static_cast<std::uint32_t>(v >> 32); }

// ---- kernels and signals ---------------------------------------------------------------------------
// An emulated kernel object (descriptor + code blob naming the host kernel) in mapped memory.
struct kernel_object {
  gpu_ptr<std::byte> mem;
  abi::kernel_descriptor kd;  // with the emulated entry offset, as the device holds it
  std::uint64_t va_ = 0;
  kernel_object(test_vm& vm, const abi::kernel_descriptor& d, const char* name) {
    mem = gpu_alloc<std::byte>(vm, emu::emulated_kernel_object_size, 256);
    emu::write_emulated_kernel_object({mem.get(), emu::emulated_kernel_object_size}, d, name);
    std::memcpy(&kd, mem.get(), sizeof kd);
    va_ = va(mem.get());
  }
};

// An amd_signal in mapped memory, optionally with an event mailbox.
inline gpu_ptr<abi::amd_signal> make_signal(test_vm& vm, std::int64_t value, std::uint64_t* mailbox = nullptr,
                                            std::uint32_t event_id = 0) {
  auto s = gpu_alloc<abi::amd_signal>(vm, 1, 64);
  s[0].kind = static_cast<std::int64_t>(abi::amd_signal_kind::user);
  s[0].value = value;
  s[0].event_mailbox_ptr = mailbox ? va(mailbox) : 0;
  s[0].event_id = event_id;
  return s;
}
inline std::int64_t load(const abi::amd_signal* s) {
  return std::atomic_ref<std::int64_t>(const_cast<abi::amd_signal*>(s)->value).load(std::memory_order_acquire);
}
inline void store(abi::amd_signal* s, std::int64_t v) { std::atomic_ref<std::int64_t>(s->value).store(v, std::memory_order_release); }

// The vector addition both engines' tests run: a[i] = i, b[i] = 0.25 i - 7, c[i] = -1 in mapped
// memory; the expected c[i] is `want(i)`, a plain loop over the inputs.
struct vadd_arrays {
  std::uint32_t n;
  gpu_ptr<float> a, b, c;
  vadd_arrays(test_vm& vm, std::uint32_t count) : n(count) {
    a = gpu_alloc<float>(vm, n);
    b = gpu_alloc<float>(vm, n);
    c = gpu_alloc<float>(vm, n);
    for (std::uint32_t i = 0; i < n; ++i) {
      a[i] = static_cast<float>(i);
      b[i] = 0.25f * static_cast<float>(i) - 7.0f;
      c[i] = -1.0f;
    }
  }
  [[nodiscard]] static float want(std::uint32_t i) { return static_cast<float>(i) + (0.25f * static_cast<float>(i) - 7.0f); }
  [[nodiscard]] int mismatches() const {
    int bad = 0;
    for (std::uint32_t i = 0; i < n; ++i) bad += c[i] != want(i);
    return bad;
  }
};

// ---- an AQL queue with the emulated AQL engine behind it ------------------------------------------
struct aql_rig {
  test_vm vm;
  test_events events;
  emu::host_kernel_registry registry;
  std::uint32_t slots;
  gpu_ptr<abi::aql_slot> ring;
  gpu_ptr<abi::amd_queue> q;
  gpu_ptr<std::byte> cwsr;  // the CWSR area, when a node is given
  std::unique_ptr<emu::aql_processor> proc;
  std::uint64_t write_index = 0;

  // `node`: give the queue a CWSR area of exactly the size the kernel computes for it
  // (arch::kernel_cwsr_sizes, spec/kfd.md §1.3), so that it can be preempted.
  explicit aql_rig(arch::family fam = arch::family::gfx11, emu::aql_processor_options opt = {},
                   std::optional<arch::cwsr_inputs> node = std::nullopt, std::uint32_t ring_slots = 64)
      : slots(ring_slots) {
    ring = gpu_alloc<abi::aql_slot>(vm, slots, 4096);
    q = gpu_alloc<abi::amd_queue>(vm, 1, 64);
    for (std::size_t i = 0; i < slots; ++i) {
      const std::uint32_t invalid = static_cast<std::uint32_t>(abi::packet_type::invalid);
      std::memcpy(ring[i].bytes, &invalid, 4);
    }
    q[0].hsa.base_address = va(ring.get());
    q[0].hsa.size = slots;
    emu::aql_queue_binding b;
    b.ring_va = va(ring.get());
    b.ring_bytes = std::uint64_t{slots} * 64;
    b.read_pointer_va = va(&q[0].read_dispatch_id);
    b.write_pointer_va = va(&q[0].write_dispatch_id);
    b.amd_queue_va = va(q.get());
    b.family = fam;
    b.queue_id = 7;
    if (node) {
      const arch::cwsr_sizes k = arch::kernel_cwsr_sizes(*node);
      cwsr = gpu_alloc<std::byte>(vm, k.cwsr_size, 4096);
      b.cwsr = {va(cwsr.get()), k.cwsr_size, k.ctl_stack_size};
      b.node = *node;
      b.gfx_target_version = node->gfx_target_version;
    }
    auto r = emu::aql_processor::try_create(b, vm, events, registry, std::move(opt));
    REQUIRE(r.has_value());
    proc = std::move(*r);
  }
  ~aql_rig() { proc.reset(); }

  std::uint64_t read_index() const { return std::atomic_ref<std::uint64_t>(q[0].read_dispatch_id).load(std::memory_order_acquire); }

  // Producer protocol: wait for space, body first, header|setup last with ONE release store,
  // write index, doorbell.
  template <class Packet>
  std::uint64_t submit(const Packet& p, bool ring_doorbell = true) {
    static_assert(sizeof(Packet) == 64);
    while (write_index - read_index() >= slots) std::this_thread::sleep_for(std::chrono::microseconds(50));
    const std::uint64_t idx = write_index++;
    abi::aql_slot& s = ring[idx % slots];
    std::memcpy(s.bytes + 4, reinterpret_cast<const std::byte*>(&p) + 4, 60);
    std::uint32_t dw0;
    std::memcpy(&dw0, &p, 4);
    std::atomic_ref<std::uint32_t>(*reinterpret_cast<std::uint32_t*>(s.bytes)).store(dw0, std::memory_order_release);
    std::atomic_ref<std::uint64_t>(q[0].write_dispatch_id).store(write_index, std::memory_order_release);
    if (ring_doorbell) proc->ring_doorbell(idx);
    return idx;
  }
  // Several packets made visible as one: bodies, then the write index past the last, then the
  // headers from the last to the first — the processor sees none before all are in the ring and
  // the write index counts them all (a fault it finds in one of them reports that write index).
  template <class Packet>
  void submit_together(std::span<const Packet> ps) {
    static_assert(sizeof(Packet) == 64);
    REQUIRE(write_index + ps.size() - read_index() <= slots);
    const std::uint64_t first = write_index;
    for (std::size_t i = 0; i < ps.size(); ++i)
      std::memcpy(ring[(first + i) % slots].bytes + 4, reinterpret_cast<const std::byte*>(&ps[i]) + 4, 60);
    write_index += ps.size();
    std::atomic_ref<std::uint64_t>(q[0].write_dispatch_id).store(write_index, std::memory_order_release);
    for (std::size_t i = ps.size(); i-- > 0;) {
      std::uint32_t dw0;
      std::memcpy(&dw0, &ps[i], 4);
      std::atomic_ref<std::uint32_t>(*reinterpret_cast<std::uint32_t*>(ring[(first + i) % slots].bytes))
          .store(dw0, std::memory_order_release);
    }
    proc->ring_doorbell(write_index - 1);
  }
};

// A 1-D kernel dispatch packet (spec/packets.md §5.2), system-scope fences.
inline abi::kernel_dispatch_packet dispatch_1d(std::uint64_t kernel_object, std::uint64_t kernarg, std::uint32_t grid,
                                               std::uint16_t workgroup, std::uint64_t signal, bool barrier = false) {
  abi::kernel_dispatch_packet p{};
  p.header = abi::make_header(abi::packet_type::kernel_dispatch, barrier, abi::fence_scope::system, abi::fence_scope::system);
  p.setup = abi::make_dispatch_setup(1);
  p.workgroup_size_x = workgroup;
  p.workgroup_size_y = p.workgroup_size_z = 1;
  p.grid_size_x = grid;
  p.grid_size_y = p.grid_size_z = 1;
  p.kernel_object = kernel_object;
  p.kernarg_address = kernarg;
  p.completion_signal = signal;
  return p;
}

}  // namespace aq_test
