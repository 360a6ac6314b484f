// emu/aql_processor.hpp: hand-written AQL packets in a ring allocated here (no queue/ layer).
// Expected values come from the HSA/AMD packet semantics (spec/packets.md §5) and from plain
// loops over the inputs, never from the processor.
#include "emu_rig.hpp"
#include "waits.hpp"
#include <aqueduct/config.hpp>
#include <aqueduct/emu/aql_processor.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <span>
#include <stdexcept>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

namespace abi = aqueduct::abi;
namespace emu = aqueduct::emu;
namespace arch = aqueduct::arch;
using namespace std::chrono_literals;

using aq_test::test_events;
using aq_test::test_vm;

namespace {

using aq_test::aligned_deleter;
using aq_test::gpu_alloc;
using aq_test::va;
using queue_fixture = aq_test::aql_rig;  // ring + amd_queue + the emulated engine
using aq_test::dispatch_1d;
using aq_test::load;
using aq_test::store;

abi::amd_signal* make_signal(test_vm& vm, std::vector<aq_test::gpu_ptr<abi::amd_signal>>& keep, std::int64_t value,
                             std::uint64_t* mailbox = nullptr, std::uint32_t event_id = 0) {
  keep.push_back(aq_test::make_signal(vm, value, mailbox, event_id));
  return keep.back().get();
}

// ---- the "compiled" vadd kernel --------------------------------------------------------------
// Its code assumes the ABI of its descriptor: dispatch ptr in s[0:1], kernarg ptr in s[2:3],
// workgroup id X in s4 (USER_SGPR_COUNT 4), work-item id X in v0[9:0].
constexpr std::uint16_t vadd_props =
    abi::kernel_code_properties::enable_sgpr_dispatch_ptr::mask | abi::kernel_code_properties::enable_sgpr_kernarg_segment_ptr::mask;
constexpr unsigned vadd_dispatch_sgpr = 0, vadd_kernarg_sgpr = 2, vadd_wgid_sgpr = 4;
static_assert(abi::user_sgpr_offset(vadd_props, abi::user_sgpr::kernarg_segment_ptr) == vadd_kernarg_sgpr);

struct vadd_args {
  std::uint64_t a, b, c;
  std::uint32_t n;
};

void vadd_kernel(emu::workgroup_context& wg) {
  for (const emu::wave_state& w : wg.waves()) {
    const auto pkt = wg.load<abi::kernel_dispatch_packet>(w.sgpr64(vadd_dispatch_sgpr));
    const auto args = wg.load<vadd_args>(w.sgpr64(vadd_kernarg_sgpr));
    const std::uint32_t group = w.sgpr[vadd_wgid_sgpr];
    for (unsigned lane = 0; lane < w.wave_size; ++lane) {
      if (((w.exec >> lane) & 1) == 0) continue;
      const std::uint32_t i = group * pkt.workgroup_size_x + (w.v0[lane] & 0x3FF);
      if (i >= args.n) continue;
      const float x = wg.load<float>(args.a + 4ull * i), y = wg.load<float>(args.b + 4ull * i);
      wg.store<float>(args.c + 4ull * i, x + y);
    }
  }
}

abi::kernel_descriptor descriptor(std::uint16_t props, unsigned user_sgprs, std::uint32_t kernarg_size,
                                  unsigned workitem_id_mode = 0, bool wg_y = false, bool wg_z = false) {
  abi::kernel_descriptor kd{};
  namespace r2 = abi::compute_pgm_rsrc2;
  kd.kernel_code_properties = props;
  kd.kernarg_size = kernarg_size;
  kd.compute_pgm_rsrc2 = r2::user_sgpr_count::put(user_sgprs) | r2::enable_sgpr_workgroup_id_x::put(1) |
                         r2::enable_sgpr_workgroup_id_y::put(wg_y) | r2::enable_sgpr_workgroup_id_z::put(wg_z) |
                         r2::enable_vgpr_workitem_id::put(workitem_id_mode);
  return kd;
}

std::uint64_t make_kernel_object(test_vm& vm, std::vector<std::unique_ptr<std::byte[], aligned_deleter>>& keep,
                                 const abi::kernel_descriptor& kd, const char* name) {
  keep.push_back(gpu_alloc<std::byte>(vm, emu::emulated_kernel_object_size, 256));
  emu::write_emulated_kernel_object({keep.back().get(), emu::emulated_kernel_object_size}, kd, name);
  return va(keep.back().get());
}

// 1000 elements: not a multiple of 64, the last workgroup is partial.
struct vadd_setup : aq_test::vadd_arrays {
  static constexpr std::uint32_t n = 1000;
  aq_test::gpu_ptr<vadd_args> args;
  explicit vadd_setup(test_vm& vm) : vadd_arrays(vm, n) {
    args = gpu_alloc<vadd_args>(vm, 1, 64);
    args[0] = {va(a.get()), va(b.get()), va(c.get()), n};
  }
};

}  // namespace

TEST_CASE("kernel dispatch of a host kernel: every element, signal, mailbox, event, INVALID header") {
  queue_fixture f;
  f.registry.add("vadd", vadd_kernel);
  std::vector<std::unique_ptr<std::byte[], aligned_deleter>> kos;
  std::vector<std::unique_ptr<abi::amd_signal[], aligned_deleter>> sigs;
  vadd_setup v(f.vm);
  auto mailbox = gpu_alloc<std::uint64_t>(f.vm, 1, 64);
  abi::amd_signal* sig = make_signal(f.vm, sigs, 1, mailbox.get(), 42);
  const auto ko = make_kernel_object(f.vm, kos, descriptor(vadd_props, 4, sizeof(vadd_args)), "vadd");
  f.submit(dispatch_1d(ko, va(v.args.get()), v.n, 64, va(sig)));
  REQUIRE(f.proc->wait_retired(1, 5s));
  CHECK(load(sig) == 0);
  CHECK(v.mismatches() == 0);
  CHECK(v.c[0] == -7.0f);  // 0 + (0.25 * 0 - 7)
  CHECK(v.c[999] == 999.0f + 0.25f * 999.0f - 7.0f);
  CHECK(std::atomic_ref<std::uint64_t>(mailbox[0]).load() == 42);
  CHECK(f.events.ids() == std::vector<std::uint32_t>{42});
  CHECK(f.read_index() == 1);
  std::uint16_t h;
  std::memcpy(&h, f.ring[0].bytes, 2);
  CHECK(abi::header_type(h) == abi::packet_type::invalid);
  CHECK_FALSE(f.proc->has_error());
}

TEST_CASE("packets through a wrapping ring (200 dispatches, 64 slots)") {
  queue_fixture f;
  std::vector<std::unique_ptr<std::byte[], aligned_deleter>> kos;
  std::vector<std::unique_ptr<abi::amd_signal[], aligned_deleter>> sigs;
  auto counter = gpu_alloc<std::uint64_t>(f.vm, 1, 64);
  f.registry.add("count", [](emu::workgroup_context& wg) {
    const std::uint64_t ka = wg.wave(0).sgpr64(0);  // kernarg ptr alone: s[0:1]
    const auto target = wg.load<std::uint64_t>(ka);
    std::atomic_ref<std::uint64_t>(*wg.ptr<std::uint64_t>(target, 1, true)).fetch_add(1);
  });
  auto kernarg = gpu_alloc<std::uint64_t>(f.vm, 1, 64);
  kernarg[0] = va(counter.get());
  const auto ko = make_kernel_object(
      f.vm, kos, descriptor(abi::kernel_code_properties::enable_sgpr_kernarg_segment_ptr::mask, 2, 8), "count");
  abi::amd_signal* sig = make_signal(f.vm, sigs, 200);
  for (int i = 0; i < 200; ++i) f.submit(dispatch_1d(ko, va(kernarg.get()), 1, 1, va(sig)));
  REQUIRE(f.proc->wait_retired(200, 10s));
  CHECK(counter[0] == 200);
  CHECK(load(sig) == 0);
  CHECK(f.read_index() == 200);
}

TEST_CASE("3-D dispatch: workgroup ids from SGPRs, work-item ids packed (gfx11) or in v0/v1/v2 (gfx10.3)") {
  for (auto fam : {arch::family::gfx11, arch::family::gfx10_3}) {
    CAPTURE(arch::family_name(fam));
    queue_fixture f(fam);
    std::vector<std::unique_ptr<std::byte[], aligned_deleter>> kos;
    std::vector<std::unique_ptr<abi::amd_signal[], aligned_deleter>> sigs;
    constexpr std::uint32_t gx = 5, gy = 3, gz = 2;  // grid; workgroup 2x2x2 → partial groups
    auto out = gpu_alloc<std::uint32_t>(f.vm, gx * gy * gz);
    auto kernarg = gpu_alloc<std::uint64_t>(f.vm, 1, 64);
    kernarg[0] = va(out.get());
    const bool packed = fam == arch::family::gfx11;
    // Compiled for: kernarg s[0:1]; wg id x,y,z in s2,s3,s4; ids per the family's VGPR layout.
    f.registry.add("ids", [packed](emu::workgroup_context& wg) {
      for (const auto& w : wg.waves()) {
        const std::uint64_t outp = wg.load<std::uint64_t>(w.sgpr64(0));
        for (unsigned lane = 0; lane < w.wave_size; ++lane) {
          if (((w.exec >> lane) & 1) == 0) continue;
          const std::uint32_t lx = packed ? (w.v0[lane] & 0x3FF) : w.v0[lane];
          const std::uint32_t ly = packed ? (w.v0[lane] >> 10 & 0x3FF) : w.v1[lane];
          const std::uint32_t lz = packed ? (w.v0[lane] >> 20 & 0x3FF) : w.v2[lane];
          const std::uint32_t x = w.sgpr[2] * 2 + lx, y = w.sgpr[3] * 2 + ly, z = w.sgpr[4] * 2 + lz;
          wg.store<std::uint32_t>(outp + 4ull * ((z * gy + y) * gx + x), 0x10000u | (x << 8) | (y << 4) | z);
        }
      }
    });
    auto kd = descriptor(abi::kernel_code_properties::enable_sgpr_kernarg_segment_ptr::mask, 2, 8, 2, true, true);
    const auto ko = make_kernel_object(f.vm, kos, kd, "ids");
    abi::kernel_dispatch_packet p = dispatch_1d(ko, va(kernarg.get()), gx, 2, 0);
    p.setup = abi::make_dispatch_setup(3);
    p.workgroup_size_y = p.workgroup_size_z = 2;
    p.grid_size_y = gy;
    p.grid_size_z = gz;
    f.submit(p);
    REQUIRE(f.proc->wait_retired(1, 5s));
    for (std::uint32_t z = 0; z < gz; ++z)
      for (std::uint32_t y = 0; y < gy; ++y)
        for (std::uint32_t x = 0; x < gx; ++x) CHECK(out[(z * gy + y) * gx + x] == (0x10000u | (x << 8) | (y << 4) | z));
  }
}

TEST_CASE("barrier bit: a dispatch waits for the earlier one only when the bit is set") {
  for (bool barrier : {true, false}) {
    CAPTURE(barrier);
    queue_fixture f;
    std::vector<std::unique_ptr<std::byte[], aligned_deleter>> kos;
    auto data = gpu_alloc<std::uint32_t>(f.vm, 8);
    auto seen = gpu_alloc<std::uint32_t>(f.vm, 8);
    auto kernarg = gpu_alloc<std::uint64_t>(f.vm, 2, 64);
    kernarg[0] = va(data.get());
    kernarg[1] = va(seen.get());
    // slow: 4 workgroups, each sleeps then writes data[g] = 1. copy: seen[i] = data[i].
    f.registry.add("slow", [](emu::workgroup_context& wg) {
      std::this_thread::sleep_for(150ms);
      const auto d = wg.load<std::uint64_t>(wg.wave(0).sgpr64(0));
      std::atomic_ref<std::uint32_t>(*wg.ptr<std::uint32_t>(d + 4ull * wg.wave(0).sgpr[2], 1, true)).store(1);
    });
    f.registry.add("copy", [](emu::workgroup_context& wg) {
      const std::uint64_t ka = wg.wave(0).sgpr64(0);
      const auto d = wg.load<std::uint64_t>(ka), s = wg.load<std::uint64_t>(ka + 8);
      for (int i = 0; i < 4; ++i)
        wg.store<std::uint32_t>(s + 4ull * i, std::atomic_ref<std::uint32_t>(*wg.ptr<std::uint32_t>(d + 4ull * i)).load());
    });
    const auto kd = descriptor(abi::kernel_code_properties::enable_sgpr_kernarg_segment_ptr::mask, 2, 16);
    const auto slow = make_kernel_object(f.vm, kos, kd, "slow"), copy = make_kernel_object(f.vm, kos, kd, "copy");
    f.submit(dispatch_1d(slow, va(kernarg.get()), 4, 1, 0));
    f.submit(dispatch_1d(copy, va(kernarg.get()), 1, 1, 0, barrier));
    REQUIRE(f.proc->wait_retired(2, 5s));
    const int copied = static_cast<int>(seen[0] + seen[1] + seen[2] + seen[3]);
    if (barrier)
      CHECK(copied == 4);
    else
      CHECK(copied < 4);  // ran while the slow workgroups slept
  }
}

// The HSA specification lets the read index advance once a packet is launched
// (ROCm/ROCR-Runtime#105: "The read pointer may advance any time after the dispatch packet has
// been initiated"); completion is only the completion signal. The processor advances it at
// launch, so a runtime that takes the read index for completion is caught.
TEST_CASE("launch vs completion: read index and INVALID header at launch, signal at completion, out of order; the barrier bit holds a launch") {
  queue_fixture f;
  std::vector<std::unique_ptr<std::byte[], aligned_deleter>> kos;
  std::vector<std::unique_ptr<abi::amd_signal[], aligned_deleter>> sigs;
  auto gate = gpu_alloc<std::uint32_t>(f.vm, 1, 64);  // 0: the held kernel waits
  auto out = gpu_alloc<std::uint32_t>(f.vm, 4);
  auto kernarg = gpu_alloc<std::uint64_t>(f.vm, 2, 64);
  kernarg[0] = va(gate.get());
  kernarg[1] = va(out.get());
  // held: every workgroup waits for the gate, then out[group] = 1. mark: out[3] = 7.
  f.registry.add("held", [](emu::workgroup_context& wg) {
    const std::uint64_t ka = wg.wave(0).sgpr64(0);
    const auto g = wg.load<std::uint64_t>(ka), o = wg.load<std::uint64_t>(ka + 8);
    while (std::atomic_ref<std::uint32_t>(*wg.ptr<std::uint32_t>(g)).load(std::memory_order_acquire) == 0) std::this_thread::yield();
    wg.store<std::uint32_t>(o + 4ull * wg.wave(0).sgpr[2], 1);
  });
  f.registry.add("mark", [](emu::workgroup_context& wg) {
    const auto o = wg.load<std::uint64_t>(wg.wave(0).sgpr64(0) + 8);
    wg.store<std::uint32_t>(o + 12, 7);
  });
  const auto kd = descriptor(abi::kernel_code_properties::enable_sgpr_kernarg_segment_ptr::mask, 2, 16);
  const auto held = make_kernel_object(f.vm, kos, kd, "held"), mark = make_kernel_object(f.vm, kos, kd, "mark");
  abi::amd_signal* sig_held = make_signal(f.vm, sigs, 1);
  abi::amd_signal* sig_mark = make_signal(f.vm, sigs, 1);
  abi::amd_signal* sig_after = make_signal(f.vm, sigs, 1);
  f.submit(dispatch_1d(held, va(kernarg.get()), 2, 1, va(sig_held)));  // 2 workgroups: the worker pool runs them
  f.submit(dispatch_1d(mark, va(kernarg.get()), 1, 1, va(sig_mark)));  // no barrier bit
  const auto until = [](auto pred) {
    const auto end = std::chrono::steady_clock::now() + 5s;
    while (!pred() && std::chrono::steady_clock::now() < end) std::this_thread::sleep_for(1ms);
    return pred();
  };
  // Both launched: the read index passed them and their slots are INVALID while `held` runs.
  REQUIRE(until([&] { return f.read_index() == 2; }));
  for (int i = 0; i < 2; ++i) {
    std::uint16_t h;
    std::memcpy(&h, f.ring[i].bytes, 2);
    CHECK(abi::header_type(h) == abi::packet_type::invalid);
  }
  // The later packet completes first.
  REQUIRE(until([&] { return load(sig_mark) == 0; }));
  CHECK(out[3] == 7u);
  CHECK(load(sig_held) == 1);
  CHECK(out[0] == 0u);
  CHECK(f.proc->completed() == 0);  // every packet below 0: packet 0 is still running
  CHECK_FALSE(f.proc->wait_retired(1, 100ms));
  // A packet with the barrier bit is not launched while an earlier one runs.
  f.submit(dispatch_1d(mark, va(kernarg.get()), 1, 1, va(sig_after), true));
  std::this_thread::sleep_for(100ms);
  CHECK(f.read_index() == 2);
  CHECK(load(sig_after) == 1);
  std::atomic_ref<std::uint32_t>(gate[0]).store(1, std::memory_order_release);
  REQUIRE(f.proc->wait_retired(3, 5s));
  CHECK(load(sig_held) == 0);
  CHECK(load(sig_after) == 0);
  CHECK(out[0] == 1u);
  CHECK(out[1] == 1u);
  CHECK(f.read_index() == 3);
  CHECK(f.proc->completed() == 3);
  CHECK_FALSE(f.proc->has_error());
}

TEST_CASE("barrier-AND and barrier-OR stall the queue until their dependencies reach 0") {
  queue_fixture f;
  std::vector<std::unique_ptr<abi::amd_signal[], aligned_deleter>> sigs;
  abi::amd_signal* d1 = make_signal(f.vm, sigs, 1);
  abi::amd_signal* d2 = make_signal(f.vm, sigs, 1);
  abi::amd_signal* done = make_signal(f.vm, sigs, 2);
  abi::barrier_and_packet band{};
  band.header = abi::make_header(abi::packet_type::barrier_and, false, abi::fence_scope::system, abi::fence_scope::system);
  band.dep_signal[0] = va(d1);
  band.dep_signal[3] = va(d2);
  band.completion_signal = va(done);
  abi::barrier_or_packet bor{};
  bor.header = abi::make_header(abi::packet_type::barrier_or, false, abi::fence_scope::system, abi::fence_scope::system);
  bor.dep_signal[1] = va(d1);
  bor.dep_signal[2] = va(d2);
  bor.completion_signal = va(done);

  f.submit(bor);
  f.submit(band);
  std::this_thread::sleep_for(30ms);
  CHECK(f.read_index() == 0);  // OR: neither dependency is 0 yet
  store(d2, 0);
  f.proc->notify();
  REQUIRE(f.proc->wait_retired(1, 5s));
  CHECK(load(done) == 1);
  std::this_thread::sleep_for(30ms);
  CHECK(f.read_index() == 1);  // AND: d1 still 1
  store(d1, 0);                // no notify: the processor polls dependencies itself
  REQUIRE(f.proc->wait_retired(2, 5s));
  CHECK(load(done) == 0);
}

// queue_wakeup::wait_for_notify: a queue held by a barrier-AND is not woken by the doorbells of
// the packets behind it (they cannot launch before the barrier is satisfied): it polls the
// signals on its own backoff (20 us doubling to 1 ms). Each doorbell woke it before (a lock and a
// futex wake for the producer, a context switch for the processor): 300 doorbells made ~300
// sleeps; now the sleeps are the backoff's, at most ~6 to reach 1 ms and one a ms after that.
TEST_CASE("a barrier-AND that holds the queue is not woken by the doorbells of the packets behind it") {
  queue_fixture f(arch::family::gfx11, {}, std::nullopt, 512);  // room for every packet behind it
  f.registry.add("nothing", [](emu::workgroup_context&) {});
  std::vector<std::unique_ptr<std::byte[], aligned_deleter>> kos;
  const auto ko = make_kernel_object(f.vm, kos, descriptor(0, 0, 0), "nothing");
  std::vector<std::unique_ptr<abi::amd_signal[], aligned_deleter>> sigs;
  abi::amd_signal* gate = make_signal(f.vm, sigs, 1);
  abi::barrier_and_packet band{};
  band.header = abi::make_header(abi::packet_type::barrier_and, false, abi::fence_scope::system, abi::fence_scope::system);
  band.dep_signal[0] = va(gate);
  const std::uint64_t parked = f.proc->sleeps();
  f.submit(band);
  REQUIRE(aq_test::eventually([&] { return f.proc->sleeps() > parked; }));  // held, asleep
  const std::uint64_t before = f.proc->sleeps();
  const auto t0 = std::chrono::steady_clock::now();
  constexpr std::uint64_t rounds = 300;
  for (std::uint64_t i = 0; i < rounds; ++i) {
    f.submit(dispatch_1d(ko, 0, 1, 1, 0));
    std::this_thread::sleep_for(10us);
  }
  const auto elapsed_us = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0).count();
  const std::uint64_t slept = f.proc->sleeps() - before;
  CAPTURE(elapsed_us);
  CHECK(slept <= 8 + static_cast<std::uint64_t>(elapsed_us) / 1000);
  CHECK(f.read_index() == 0);  // still held
  store(gate, 0);              // no notify: the processor polls the signal itself
  REQUIRE(f.proc->wait_retired(rounds + 1, 5s));
  CHECK_FALSE(f.proc->has_error());
}

TEST_CASE("AMD barrier-value packet: (value & mask) cond compare, null signal satisfied") {
  queue_fixture f;
  std::vector<std::unique_ptr<abi::amd_signal[], aligned_deleter>> sigs;
  abi::amd_signal* s = make_signal(f.vm, sigs, 0x13);
  abi::amd_signal* done = make_signal(f.vm, sigs, 2);
  abi::amd_barrier_value_packet p{};
  p.header.header = abi::make_header(abi::packet_type::vendor_specific, false, abi::fence_scope::system, abi::fence_scope::system);
  p.header.amd_format = static_cast<std::uint8_t>(abi::amd_packet_format::barrier_value);
  p.signal = va(s);
  p.value = 0x20;
  p.mask = 0xF0;
  p.cond = static_cast<std::uint32_t>(abi::signal_condition::eq);
  p.completion_signal = va(done);
  f.submit(p);
  std::this_thread::sleep_for(30ms);
  CHECK(f.read_index() == 0);  // 0x13 & 0xF0 = 0x10 != 0x20
  store(s, 0x2F);              // 0x2F & 0xF0 = 0x20
  REQUIRE(f.proc->wait_retired(1, 5s));
  CHECK(load(done) == 1);
  p.signal = 0;  // null signal: satisfied at once
  f.submit(p);
  REQUIRE(f.proc->wait_retired(2, 5s));
  CHECK(load(done) == 0);
}

// What a packet names that the GPU's VM does not map is a GPU page fault (errc::device_fault): the
// CP reads the kernel descriptor and the dependency signals and writes the completion signal
// through the VM, as a kernel reads its kernargs ("CPF"/"CPC"/"CPG" are UTCL2 clients in Linux's
// gmc_v9_0.c gfxhub_client_ids). The rest is the packet as written: a queue error.
TEST_CASE("malformed packets stop the queue with the packet decoded; the process goes on") {
  struct bad_case {
    const char* what;
    emu::engine_fault expect;
    aqueduct::errc code;
    void (*mutate)(abi::kernel_dispatch_packet&);
  };
  constexpr auto queue = aqueduct::errc::queue_error;
  constexpr auto page_fault = aqueduct::errc::device_fault;
  const bad_case cases[] = {
      {"reserved type 7", emu::engine_fault::reserved_packet_type, queue, [](abi::kernel_dispatch_packet& p) { p.header = 7; }},
      {"dimensions 0", emu::engine_fault::bad_dimensions, queue, [](abi::kernel_dispatch_packet& p) { p.setup = 0; }},
      {"grid 0", emu::engine_fault::bad_dimensions, queue, [](abi::kernel_dispatch_packet& p) { p.grid_size_x = 0; }},
      {"unused dim not 1", emu::engine_fault::bad_dimensions, queue, [](abi::kernel_dispatch_packet& p) { p.grid_size_y = 4; }},
      {"workgroup 0", emu::engine_fault::bad_workgroup_size, queue, [](abi::kernel_dispatch_packet& p) { p.workgroup_size_x = 0; }},
      {"workgroup 2048", emu::engine_fault::bad_workgroup_size, queue,
       [](abi::kernel_dispatch_packet& p) { p.workgroup_size_x = 2048; }},
      {"kernel object unmapped", emu::engine_fault::kernel_object_not_mapped, page_fault,
       [](abi::kernel_dispatch_packet& p) { p.kernel_object = 0x7000'0000'0000ull; }},
      {"kernel object 0", emu::engine_fault::kernel_object_not_mapped, page_fault,
       [](abi::kernel_dispatch_packet& p) { p.kernel_object = 0; }},
      {"kernel object misaligned", emu::engine_fault::misaligned_address, queue,
       [](abi::kernel_dispatch_packet& p) { p.kernel_object += 8; }},
      {"kernarg unmapped", emu::engine_fault::kernarg_not_mapped, page_fault,
       [](abi::kernel_dispatch_packet& p) { p.kernarg_address = 0x7000'0000'1000ull; }},
      {"signal unmapped", emu::engine_fault::signal_not_mapped, page_fault,
       [](abi::kernel_dispatch_packet& p) { p.completion_signal = 0x7000'0000'2000ull; }},
      {"signal misaligned", emu::engine_fault::misaligned_address, queue,
       [](abi::kernel_dispatch_packet& p) { p.completion_signal = 0x7000'0000'2008ull; }},
      {"fence scope 3", emu::engine_fault::reserved_bits, queue,
       [](abi::kernel_dispatch_packet& p) { p.header = static_cast<std::uint16_t>(p.header | (3u << 11)); }},
      {"agent dispatch", emu::engine_fault::unsupported_packet, queue,
       [](abi::kernel_dispatch_packet& p) { p.header = static_cast<std::uint16_t>((p.header & ~0xFFu) | 4u); }},
      {"LDS 1 MiB", emu::engine_fault::lds_too_large, queue, [](abi::kernel_dispatch_packet& p) { p.group_segment_size = 1u << 20; }},
  };
  for (const auto& c : cases) {
    const std::string what = c.what;
    CAPTURE(what);
    queue_fixture f;
    f.registry.add("vadd", vadd_kernel);
    std::vector<std::unique_ptr<std::byte[], aligned_deleter>> kos;
    vadd_setup v(f.vm);
    const auto ko = make_kernel_object(f.vm, kos, descriptor(vadd_props, 4, sizeof(vadd_args)), "vadd");
    auto p = dispatch_1d(ko, va(v.args.get()), v.n, 64, 0);
    c.mutate(p);
    // A good one first, the bad one, one that never runs — visible together, so the write
    // position the error reports is 3 however fast the processor finds the fault.
    const std::array<abi::kernel_dispatch_packet, 3> three{dispatch_1d(ko, va(v.args.get()), v.n, 64, 0), p,
                                                           dispatch_1d(ko, va(v.args.get()), v.n, 64, 0)};
    f.submit_together(std::span<const abi::kernel_dispatch_packet>(three));
    CHECK_FALSE(f.proc->wait_retired(3, 2s));
    REQUIRE(f.proc->has_error());
    const auto e = f.proc->error();
    REQUIRE(e.has_value());
    CHECK(e->fault == c.expect);
    CHECK(e->position == 1);
    CHECK(e->write_position == 3);
    REQUIRE(e->packet.size() == 16);
    CHECK(std::memcmp(e->packet.data(), &p, 64) == 0);
    CHECK(e->detail.find("packet 1") != std::string::npos);
    CHECK(e->detail.find("raw=") != std::string::npos);
    CHECK(e->to_failure() == c.code);
    if (c.code == page_fault)  // at the address the packet named
      CHECK(e->address == (c.expect == emu::engine_fault::kernel_object_not_mapped ? p.kernel_object
                           : c.expect == emu::engine_fault::kernarg_not_mapped    ? p.kernarg_address
                                                                                   : p.completion_signal));
    CHECK(f.read_index() == 1);  // the good packet retired, the bad one was not consumed
  }
}

TEST_CASE("unknown host kernel and bad code entry are queue errors; an unmapped code entry is a page fault") {
  queue_fixture f;
  std::vector<std::unique_ptr<std::byte[], aligned_deleter>> kos;
  vadd_setup v(f.vm);
  const auto ko = make_kernel_object(f.vm, kos, descriptor(vadd_props, 4, sizeof(vadd_args)), "nobody");
  f.submit(dispatch_1d(ko, va(v.args.get()), v.n, 64, 0));
  CHECK_FALSE(f.proc->wait_retired(1, 1s));
  REQUIRE(f.proc->error().has_value());
  CHECK(f.proc->error()->fault == emu::engine_fault::unknown_host_kernel);
  CHECK(f.proc->error()->detail.find("nobody") != std::string::npos);

  queue_fixture g;
  g.registry.add("vadd", vadd_kernel);
  vadd_setup w(g.vm);
  const auto ko2 = make_kernel_object(g.vm, kos, descriptor(vadd_props, 4, sizeof(vadd_args)), "vadd");
  auto* kd = reinterpret_cast<abi::kernel_descriptor*>(ko2);
  kd->kernel_code_entry_byte_offset = 128;  // not 256-aligned
  g.submit(dispatch_1d(ko2, va(w.args.get()), w.n, 64, 0));
  CHECK_FALSE(g.proc->wait_retired(1, 1s));
  REQUIRE(g.proc->error().has_value());
  CHECK(g.proc->error()->fault == emu::engine_fault::bad_kernel_descriptor);
  CHECK(g.proc->error()->to_failure() == aqueduct::errc::queue_error);

  // 256-aligned but 4 GiB past the descriptor, where nothing is mapped: the instruction fetch faults.
  queue_fixture h;
  h.registry.add("vadd", vadd_kernel);
  vadd_setup x(h.vm);
  const auto ko3 = make_kernel_object(h.vm, kos, descriptor(vadd_props, 4, sizeof(vadd_args)), "vadd");
  reinterpret_cast<abi::kernel_descriptor*>(ko3)->kernel_code_entry_byte_offset = std::int64_t{1} << 32;
  h.submit(dispatch_1d(ko3, va(x.args.get()), x.n, 64, 0));
  CHECK_FALSE(h.proc->wait_retired(1, 1s));
  REQUIRE(h.proc->error().has_value());
  CHECK(h.proc->error()->fault == emu::engine_fault::not_mapped);
  CHECK(h.proc->error()->to_failure() == aqueduct::errc::device_fault);
  CHECK(h.proc->error()->address == ko3 + (std::uint64_t{1} << 32));
}

TEST_CASE("inconsistent kernel descriptors are queue errors") {
  namespace kcp = abi::kernel_code_properties;
  namespace r2 = abi::compute_pgm_rsrc2;
  struct bad_kd {
    const char* what;
    arch::family fam;
    void (*mutate)(abi::kernel_descriptor&);
  };
  const bad_kd cases[] = {
      {"wave32 on gfx9", arch::family::gfx9,
       [](abi::kernel_descriptor& kd) { kd.kernel_code_properties |= kcp::enable_wavefront_size32::mask; }},
      {"USER_SGPR_COUNT below the enabled SGPRs", arch::family::gfx11,
       [](abi::kernel_descriptor& kd) { kd.compute_pgm_rsrc2 = r2::user_sgpr_count::set(kd.compute_pgm_rsrc2, 3); }},
      {"reserved property bit 7", arch::family::gfx11,
       [](abi::kernel_descriptor& kd) { kd.kernel_code_properties |= 0x80; }},
      {"GRANULATED_LDS_SIZE set", arch::family::gfx11,
       [](abi::kernel_descriptor& kd) { kd.compute_pgm_rsrc2 = r2::granulated_lds_size::set(kd.compute_pgm_rsrc2, 1); }},
  };
  for (const auto& c : cases) {
    const std::string what = c.what;
    CAPTURE(what);
    queue_fixture f(c.fam);
    f.registry.add("vadd", vadd_kernel);
    std::vector<std::unique_ptr<std::byte[], aligned_deleter>> kos;
    vadd_setup v(f.vm);
    auto kd = descriptor(vadd_props, 4, sizeof(vadd_args));
    c.mutate(kd);
    const auto ko = make_kernel_object(f.vm, kos, kd, "vadd");
    f.submit(dispatch_1d(ko, va(v.args.get()), v.n, 64, 0));
    CHECK_FALSE(f.proc->wait_retired(1, 1s));
    REQUIRE(f.proc->error().has_value());
    CHECK(f.proc->error()->fault == emu::engine_fault::bad_kernel_descriptor);
    CHECK(v.mismatches() == static_cast<int>(v.n));  // nothing ran
  }
}

TEST_CASE("a throwing host kernel stops the queue; later packets do not run") {
  queue_fixture f;
  std::vector<std::unique_ptr<std::byte[], aligned_deleter>> kos;
  std::vector<std::unique_ptr<abi::amd_signal[], aligned_deleter>> sigs;
  f.registry.add("boom", [](emu::workgroup_context&) { throw std::runtime_error("kernel exploded"); });
  f.registry.add("vadd", vadd_kernel);
  vadd_setup v(f.vm);
  abi::amd_signal* sig = make_signal(f.vm, sigs, 1);
  const auto boom = make_kernel_object(f.vm, kos, descriptor(vadd_props, 4, 0), "boom");
  const auto ok = make_kernel_object(f.vm, kos, descriptor(vadd_props, 4, sizeof(vadd_args)), "vadd");
  f.submit(dispatch_1d(boom, 0, 256, 64, va(sig)));
  f.submit(dispatch_1d(ok, va(v.args.get()), v.n, 64, 0, /*barrier=*/true));
  CHECK_FALSE(f.proc->wait_retired(1, 2s));
  REQUIRE(f.proc->error().has_value());
  CHECK(f.proc->error()->fault == emu::engine_fault::host_kernel_exception);
  CHECK(f.proc->error()->position == 0);
  CHECK(f.proc->error()->detail.find("kernel exploded") != std::string::npos);
  CHECK(load(sig) == 1);  // a faulted dispatch never signals completion
  CHECK(v.mismatches() == static_cast<int>(v.n));
}

TEST_CASE("workgroups spread over the worker pool") {
  emu::aql_processor_options opt;
  opt.workers = 3;
  queue_fixture f(arch::family::gfx11, opt);
  std::vector<std::unique_ptr<std::byte[], aligned_deleter>> kos;
  std::mutex mu;
  std::vector<std::thread::id> seen;
  f.registry.add("who", [&](emu::workgroup_context&) {
    std::this_thread::sleep_for(5ms);
    std::lock_guard l(mu);
    seen.push_back(std::this_thread::get_id());
  });
  const auto ko = make_kernel_object(f.vm, kos, descriptor(vadd_props, 4, 0), "who");
  f.submit(dispatch_1d(ko, 0, 24, 1, 0));  // 24 workgroups of one work-item
  REQUIRE(f.proc->wait_retired(1, 5s));
  std::lock_guard l(mu);
  CHECK(seen.size() == 24);
  std::sort(seen.begin(), seen.end());
  const auto distinct = std::unique(seen.begin(), seen.end()) - seen.begin();
  CHECK(distinct >= 2);
  CHECK(std::find(seen.begin(), seen.begin() + distinct, std::this_thread::get_id()) == seen.begin() + distinct);
}

TEST_CASE("an idle processor uses little CPU") {
  queue_fixture f;
  const std::clock_t c0 = std::clock();
  std::this_thread::sleep_for(500ms);
  const double cpu_s = static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
  CHECK(cpu_s < 0.05);  // process CPU time over 0.5 s of idling (3 threads)
}

TEST_CASE("wrong user-SGPR enable bits give a wrong answer: the kernel reads its args only via SGPRs") {
  namespace kcp = abi::kernel_code_properties;
  struct variant {
    const char* what;
    std::uint16_t props;
    unsigned user_sgprs;
  };
  const variant variants[] = {
      {"correct", vadd_props, 4},
      {"private segment buffer also enabled", static_cast<std::uint16_t>(vadd_props | kcp::enable_sgpr_private_segment_buffer::mask), 8},
      {"dispatch ptr missing", kcp::enable_sgpr_kernarg_segment_ptr::mask, 2},
      {"kernarg ptr missing", kcp::enable_sgpr_dispatch_ptr::mask, 2},
  };
  for (const auto& var : variants) {
    const std::string what = var.what;
    CAPTURE(what);
    queue_fixture f;
    f.q[0].scratch_resource_descriptor[0] = 0xDEAD0000u;  // what s[0:3] hold with the SRD enabled
    f.q[0].scratch_resource_descriptor[1] = 0x00000BADu;
    f.registry.add("vadd", vadd_kernel);
    std::vector<std::unique_ptr<std::byte[], aligned_deleter>> kos;
    vadd_setup v(f.vm);
    const auto ko = make_kernel_object(f.vm, kos, descriptor(var.props, var.user_sgprs, sizeof(vadd_args)), "vadd");
    f.submit(dispatch_1d(ko, va(v.args.get()), v.n, 64, 0));
    const bool retired = f.proc->wait_retired(1, 3s);
    if (std::string(var.what) == "correct") {
      CHECK(retired);
      CHECK(v.mismatches() == 0);
    } else {
      CHECK(v.mismatches() > 0);
      if (!retired) {
        REQUIRE(f.proc->error().has_value());
        CHECK(f.proc->error()->fault == emu::engine_fault::memory_violation);
        CHECK(f.proc->error()->to_failure() == aqueduct::errc::device_fault);
      }
    }
  }
}

TEST_CASE("adversarial mode: a body written after its header is detected") {
  emu::aql_processor_options opt;
  opt.adversarial = true;
  opt.adversarial_recheck = 300ms;
  queue_fixture f(arch::family::gfx11, opt);
  f.registry.add("vadd", vadd_kernel);
  std::vector<std::unique_ptr<std::byte[], aligned_deleter>> kos;
  vadd_setup v(f.vm);
  const auto ko = make_kernel_object(f.vm, kos, descriptor(vadd_props, 4, sizeof(vadd_args)), "vadd");

  // Control: the right order runs fine in adversarial mode.
  f.submit(dispatch_1d(ko, va(v.args.get()), v.n, 64, 0));
  REQUIRE(f.proc->wait_retired(1, 5s));
  CHECK(v.mismatches() == 0);

  // Wrong order: header|setup first, body 100 ms later (relaxed atomic stores, so that a
  // ThreadSanitizer build reports only the processor's own detection, not this test's race).
  const auto p = dispatch_1d(ko, va(v.args.get()), v.n, 64, 0);
  abi::aql_slot& s = f.ring[1];
  std::uint32_t dw0;
  std::memcpy(&dw0, &p, 4);
  std::atomic_ref<std::uint32_t>(*reinterpret_cast<std::uint32_t*>(s.bytes)).store(dw0, std::memory_order_release);
  std::this_thread::sleep_for(100ms);
  const auto* src = reinterpret_cast<const std::uint32_t*>(&p);
  for (int i = 1; i < 16; ++i)
    std::atomic_ref<std::uint32_t>(reinterpret_cast<std::uint32_t*>(s.bytes)[i]).store(src[i], std::memory_order_relaxed);
  f.proc->ring_doorbell(1);
  CHECK_FALSE(f.proc->wait_retired(2, 2s));
  REQUIRE(f.proc->error().has_value());
  CHECK(f.proc->error()->fault == emu::engine_fault::body_modified_after_header);
  CHECK(f.proc->error()->position == 1);
}

TEST_CASE("sequence-check hook stops the queue at the first out-of-order packet") {
  emu::aql_processor_options opt;
  opt.sequence_check = [](std::uint64_t index, const abi::aql_slot& s) {
    abi::kernel_dispatch_packet p;
    std::memcpy(&p, s.bytes, sizeof p);
    return p.reserved2 == index;  // the producer numbers its packets in reserved2
  };
  queue_fixture f(arch::family::gfx11, opt);
  f.registry.add("vadd", vadd_kernel);
  std::vector<std::unique_ptr<std::byte[], aligned_deleter>> kos;
  vadd_setup v(f.vm);
  const auto ko = make_kernel_object(f.vm, kos, descriptor(vadd_props, 4, sizeof(vadd_args)), "vadd");
  for (std::uint64_t i : {0, 1, 2, 4}) {
    auto p = dispatch_1d(ko, va(v.args.get()), 64, 64, 0);
    p.reserved2 = i;
    f.submit(p);
  }
  CHECK(f.proc->wait_retired(3, 5s));
  CHECK_FALSE(f.proc->wait_retired(4, 300ms));
  REQUIRE(f.proc->error().has_value());
  CHECK(f.proc->error()->fault == emu::engine_fault::sequence_check_failed);
  CHECK(f.proc->error()->position == 3);
}

TEST_CASE("profiling queue: start_ts and end_ts written to the completion signal") {
  queue_fixture f;
  f.q[0].queue_properties = abi::amd_queue_properties::enable_profiling::mask;
  f.registry.add("vadd", vadd_kernel);
  std::vector<std::unique_ptr<std::byte[], aligned_deleter>> kos;
  std::vector<std::unique_ptr<abi::amd_signal[], aligned_deleter>> sigs;
  vadd_setup v(f.vm);
  abi::amd_signal* sig = make_signal(f.vm, sigs, 1);
  const auto ko = make_kernel_object(f.vm, kos, descriptor(vadd_props, 4, sizeof(vadd_args)), "vadd");
  f.submit(dispatch_1d(ko, va(v.args.get()), v.n, 64, va(sig)));
  REQUIRE(f.proc->wait_retired(1, 5s));
  CHECK(sig->start_ts != 0);
  CHECK(sig->end_ts >= sig->start_ts);
}

TEST_CASE("a header published without a doorbell is still consumed") {
  queue_fixture f;
  f.registry.add("vadd", vadd_kernel);
  std::vector<std::unique_ptr<std::byte[], aligned_deleter>> kos;
  vadd_setup v(f.vm);
  const auto ko = make_kernel_object(f.vm, kos, descriptor(vadd_props, 4, sizeof(vadd_args)), "vadd");
  f.submit(dispatch_1d(ko, va(v.args.get()), v.n, 64, 0), /*ring_doorbell=*/false);
  REQUIRE(f.proc->wait_retired(1, 5s));
  CHECK(v.mismatches() == 0);
}

// queue_wakeup: a doorbell rung while the processor is deciding to sleep is never lost. With no
// idle spin and a 10 s idle poll, the processor sleeps after every packet and only a doorbell
// wakes it in time: a lost one shows as a wait that fails after 5 s. The producer spins on the
// completion (a blocking wait would give the processor all the time it needs to fall asleep)
// and then waits 0 to ~2 us before the next packet, so that the doorbells sweep the
// processor's way from its last look at the ring to its sleep.
TEST_CASE("no doorbell is lost while the processor goes to sleep (no idle spin, 10 s idle poll)") {
  emu::aql_processor_options opt;
  opt.idle_spin = std::chrono::microseconds(0);
  opt.idle_poll = std::chrono::microseconds(10'000'000);
  queue_fixture f(arch::family::gfx11, opt);
  f.registry.add("nothing", [](emu::workgroup_context&) {});
  std::vector<std::unique_ptr<std::byte[], aligned_deleter>> kos;
  const auto ko = make_kernel_object(f.vm, kos, descriptor(0, 0, 0), "nothing");
  const std::uint64_t before = f.proc->sleeps();
  constexpr std::uint64_t rounds = 100000;
  for (std::uint64_t i = 0; i < rounds; ++i) {
    aq_test::spin_iterations(i % 97 * 8);
    f.submit(dispatch_1d(ko, 0, 1, 1, 0));
    REQUIRE(aq_test::spin_until([&] { return f.proc->completed() == i + 1; }));
  }
  CHECK(f.proc->sleeps() - before >= rounds / 4);  // it did go to sleep between packets
  CHECK_FALSE(f.proc->has_error());
}

TEST_CASE("try_create rejects a ring that is not mapped or not a power of two") {
  test_vm vm;
  test_events ev;
  auto ring = gpu_alloc<abi::aql_slot>(vm, 48, 4096);
  auto q = gpu_alloc<abi::amd_queue>(vm, 1, 64);
  emu::aql_queue_binding b;
  b.ring_va = va(ring.get());
  b.ring_bytes = 48 * 64;  // not a power of two
  b.read_pointer_va = va(&q[0].read_dispatch_id);
  auto r = emu::aql_processor::try_create(b, vm, ev, emu::host_kernel_registry{});
  CHECK_FALSE(r.has_value());
  b.ring_bytes = 32 * 64;
  b.ring_va = 0x7000'0000'0000ull;
  auto r2 = emu::aql_processor::try_create(b, vm, ev, emu::host_kernel_registry{});
  CHECK_FALSE(r2.has_value());
  CHECK(r2.error() == aqueduct::errc::invalid_argument);
}

#if AQUEDUCT_TSAN
// Only in ThreadSanitizer builds: a producer that writes the body with PLAIN stores after the
// header must be reported by TSAN as a data race against the adversarial processor's reads.
// The racy producer runs in a child process (this executable, re-run with AQ_TSAN_CHILD=1) so
// that the report does not fail this test run; the parent checks the child's report.
TEST_CASE("ThreadSanitizer reports a body written after its header (adversarial mode)") {
  if (std::getenv("AQ_TSAN_CHILD") != nullptr) {
    emu::aql_processor_options opt;
    opt.adversarial = true;
    opt.adversarial_recheck = 50ms;
    queue_fixture f(arch::family::gfx11, opt);
    f.registry.add("vadd", vadd_kernel);
    std::vector<std::unique_ptr<std::byte[], aligned_deleter>> kos;
    vadd_setup v(f.vm);
    const auto ko = make_kernel_object(f.vm, kos, descriptor(vadd_props, 4, sizeof(vadd_args)), "vadd");
    const auto p = dispatch_1d(ko, va(v.args.get()), v.n, 64, 0);
    abi::aql_slot& s = f.ring[0];
    std::uint32_t dw0;
    std::memcpy(&dw0, &p, 4);
    std::atomic_ref<std::uint32_t>(*reinterpret_cast<std::uint32_t*>(s.bytes)).store(dw0, std::memory_order_release);
    std::this_thread::sleep_for(10ms);
    // Plain stores: the bug. (Dword by dword: GCC lowers a fixed-size memcpy to moves TSAN
    // does not see.)
    const auto* src = reinterpret_cast<const std::uint32_t*>(&p);
    auto* dst = reinterpret_cast<volatile std::uint32_t*>(s.bytes);
    for (int i = 1; i < 16; ++i) dst[i] = src[i];
    f.proc->ring_doorbell(0);
    (void)f.proc->wait_retired(1, 1s);
    if (auto e = f.proc->error()) MESSAGE("child: " << e->detail);
    return;
  }
  const std::string cmd = "AQ_TSAN_CHILD=1 TSAN_OPTIONS=exitcode=66 /proc/" + std::to_string(::getpid()) +
                          "/exe --no-intro=true --test-case='ThreadSanitizer reports*' 2>&1";
  FILE* pipe = ::popen(cmd.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string out;
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, pipe)) out.append(buf, n);
  const int status = ::pclose(pipe);
  CHECK(out.find("ThreadSanitizer: data race") != std::string::npos);
  CHECK(out.find("aql_processor") != std::string::npos);
  CHECK(WEXITSTATUS(status) == 66);
}
#endif

// Regression (issue 14): every wave that runs at the same time must own its own scratch. The
// private segment wave offset (the last system SGPR) used to be wave_index * wave bytes, so the
// first waves of two workgroups running on two workers shared the same scratch bytes.
TEST_CASE("concurrent workgroups get disjoint scratch wave offsets") {
  emu::aql_processor_options opt;
  opt.workers = 2;
  queue_fixture f(arch::family::gfx11, opt);
  std::vector<std::unique_ptr<std::byte[], aligned_deleter>> kos;
  std::mutex mu;
  std::multiset<std::uint32_t> live;  // wave offsets of the waves running now
  int collisions = 0, max_live_workgroups = 0, live_workgroups = 0;
  f.registry.add("scratchy", [&](emu::workgroup_context& wg) {
    std::vector<std::uint32_t> mine;
    for (const emu::wave_state& w : wg.waves()) mine.push_back(w.sgpr[w.sgpr_initialized - 1]);
    {
      std::lock_guard l(mu);
      for (std::uint32_t off : mine) collisions += static_cast<int>(live.count(off));
      live.insert(mine.begin(), mine.end());
      max_live_workgroups = std::max(max_live_workgroups, ++live_workgroups);
    }
    std::this_thread::sleep_for(3ms);
    std::lock_guard l(mu);
    for (std::uint32_t off : mine) live.erase(live.find(off));
    --live_workgroups;
  });
  abi::kernel_descriptor kd = descriptor(vadd_props, 4, 0);
  kd.compute_pgm_rsrc2 |= abi::compute_pgm_rsrc2::enable_private_segment::put(1);
  const auto ko = make_kernel_object(f.vm, kos, kd, "scratchy");
  auto p = dispatch_1d(ko, 0, 16 * 128, 128, 0);  // 16 workgroups of 2 wave64 each
  p.private_segment_size = 64;
  f.submit(p);
  REQUIRE(f.proc->wait_retired(1, 5s));
  CHECK_FALSE(f.proc->has_error());
  std::lock_guard l(mu);
  CHECK(max_live_workgroups >= 2);  // the workers did overlap, so the check below means something
  CHECK(collisions == 0);
}

// ---- preemption through the CWSR area (the same preemptor as the PM4 engine's) ----------------------
namespace {
// A small gfx1100 node: 4 SIMDs of 2 per CU = 2 CUs, 32 wave slots each = 64 resident waves
// (spec/kfd.md §1.3: 32 waves per CU on GFX10+), so a save holds at most 64 one-wave workgroups.
constexpr arch::cwsr_inputs small_node{110000, 4, 2, 1, 1, 1, 64};
}  // namespace

TEST_CASE("AQL preemption on demand: the resident workgroups resume from the saved area (an edited save changes the result)") {
  emu::aql_processor_options opt;
  opt.workers = 1;
  queue_fixture f(arch::family::gfx11, opt, small_node);
  REQUIRE(f.proc->cwsr_capacity().has_value());
  std::vector<std::unique_ptr<std::byte[], aligned_deleter>> kos;
  std::vector<std::unique_ptr<abi::amd_signal[], aligned_deleter>> sigs;
  vadd_setup d(f.vm), other(f.vm);  // two kernarg blocks, each with its own arrays
  std::atomic<int> ran{0};
  f.registry.add("vadd", [&](emu::workgroup_context& wg) {
    vadd_kernel(wg);
    if (ran.fetch_add(1) == 3) {  // served once this workgroup ends: the worker claims no more meanwhile
      f.proc->request_preemption();
      std::this_thread::sleep_for(100ms);
    }
  });
  const auto ko = make_kernel_object(f.vm, kos, descriptor(vadd_props, 4, sizeof(vadd_args)), "vadd");
  auto* sig = make_signal(f.vm, sigs, 1);
  f.submit(dispatch_1d(ko, va(d.args.get()), vadd_setup::n, 64, va(sig)));  // 16 one-wave workgroups
  REQUIRE(f.proc->wait_preempted(5000ms));
  // The area holds the workgroups W..15 not yet run (one wave64 each): a control stack of
  // 12 bytes per wave + 8 below ctl_stack_size, the records from ctl_stack_size up.
  const arch::cwsr_sizes k = arch::kernel_cwsr_sizes(small_node);
  abi::kfd::user_context_save_area_header h;
  std::memcpy(&h, f.cwsr.get(), sizeof h);
  std::byte* rec = f.cwsr.get() + k.ctl_stack_size;
  emu::cwsr_wave_record_head head;
  std::memcpy(&head, rec, sizeof head);
  REQUIRE(head.magic == emu::cwsr_wave_magic);
  const std::uint64_t w = head.workgroup;
  CHECK(w >= 4);
  REQUIRE(w < 16);
  CHECK(ran.load() == static_cast<int>(w));
  CHECK(head.dispatch == 0);  // the packet index
  CHECK(h.control_stack_size == (16 - w) * 12 + 8);
  CHECK(h.wave_state_offset == k.ctl_stack_size);
  CHECK(load(sig) == 1);  // not complete while off the hardware
  // Point workgroup W's kernarg SGPRs s[2:3] at the other block.
  const std::uint64_t alt = va(other.args.get());
  std::uint32_t s23[2] = {static_cast<std::uint32_t>(alt), static_cast<std::uint32_t>(alt >> 32)};
  std::memcpy(rec + sizeof head + 4 * vadd_kernarg_sgpr, s23, sizeof s23);
  f.proc->resume();
  REQUIRE(f.proc->wait_retired(1, 5s));
  CHECK(load(sig) == 0);
  for (std::uint32_t i = 0; i < vadd_setup::n; ++i) {
    const bool in_w = i / 64 == w;
    const float want = vadd_setup::want(i);
    CHECK(d.c[i] == (in_w ? -1.0f : want));
    CHECK(other.c[i] == (in_w ? want : -1.0f));
  }
  CHECK(f.proc->preemption_stats().preemptions == 1);
  CHECK(f.proc->preemption_stats().waves_saved == 16 - w);
  CHECK_FALSE(f.proc->has_error());
}

TEST_CASE("AQL stress preemption every 3 workgroups across several dispatches in flight: every result right") {
  emu::aql_processor_options opt;
  opt.workers = 2;
  opt.preemption.every_workgroups = 3;
  queue_fixture f(arch::family::gfx11, opt, small_node);
  std::vector<std::unique_ptr<std::byte[], aligned_deleter>> kos;
  std::vector<std::unique_ptr<abi::amd_signal[], aligned_deleter>> sigs;
  f.registry.add("vadd", [](emu::workgroup_context& wg) {
    vadd_kernel(wg);
    std::this_thread::sleep_for(200us);  // slow enough that dispatches are still in flight at each preemption
  });
  const auto ko = make_kernel_object(f.vm, kos, descriptor(vadd_props, 4, sizeof(vadd_args)), "vadd");
  std::vector<std::unique_ptr<vadd_setup>> data;
  auto* sig = make_signal(f.vm, sigs, 4);
  for (int k = 0; k < 4; ++k) {
    data.push_back(std::make_unique<vadd_setup>(f.vm));
    f.submit(dispatch_1d(ko, va(data.back()->args.get()), vadd_setup::n, 16, va(sig)));  // 63 workgroups each
  }
  REQUIRE(f.proc->wait_retired(4, 20s));
  CHECK_FALSE(f.proc->has_error());
  CHECK(load(sig) == 0);
  for (const auto& d : data) CHECK(d->mismatches() == 0);
  const auto st = f.proc->preemption_stats();
  CHECK(st.preemptions >= 2);
  CHECK(st.waves_saved > 0);
  CHECK(st.max_ctl_bytes <= 64 * 12 + 8 + 40);  // never more than the node's 64 wave slots
}

TEST_CASE("AQL queue without a CWSR area: a preemption hangs it (device_hang), nothing is lost silently") {
  queue_fixture f;  // no area: ctx_save_restore_address 0
  CHECK_FALSE(f.proc->cwsr_capacity().has_value());
  f.proc->request_preemption();
  for (int i = 0; i < 500 && !f.proc->has_error(); ++i) std::this_thread::sleep_for(2ms);
  REQUIRE(f.proc->has_error());
  const auto e = f.proc->error();
  CHECK(e->fault == emu::engine_fault::cwsr_save_failed);
  CHECK(e->to_failure() == aqueduct::errc::device_hang);
  CHECK(e->detail.find("no save area") != std::string::npos);
}

}  // namespace AQ_UNITY_ID
