// emu/aql_processor.hpp, its hot path (issue 11): in steady state the emulated AQL processor makes
// no heap allocation per packet — single-workgroup dispatches run inline, multi-workgroup ones
// on the workers, barrier packets, completion signals with and without an event mailbox — and
// its recycled dispatches start clean (every wave built from the packet in hand), and what it
// caches (translations, emu/vm_tlb.hpp; the last host-kernel lookup) follows every change of the
// VM and the registry. Allocations
// are counted on every thread (tests/support/allocation_counter.hpp) while this thread only
// writes packets and waits; the control shows the counter counts the processor's threads.
// Expected values are host arithmetic over what the test submitted.
#include "allocation_counter.hpp"
#include "emu_rig.hpp"
#include "waits.hpp"

#include <aqueduct/emu/aql_processor.hpp>

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

namespace abi = aqueduct::abi;
namespace emu = aqueduct::emu;
using namespace std::chrono_literals;
using aq_test::gpu_alloc;
using aq_test::va;

namespace {

namespace kcp = abi::kernel_code_properties;
namespace r2 = abi::compute_pgm_rsrc2;

// kernarg ptr in s[0:1] (USER_SGPR_COUNT 2), workgroup id X in s2.
abi::kernel_descriptor kernarg_only() {
  abi::kernel_descriptor kd{};
  kd.kernel_code_properties = kcp::enable_sgpr_kernarg_segment_ptr::mask;
  kd.kernarg_size = 8;
  kd.compute_pgm_rsrc2 = r2::user_sgpr_count::put(2) | r2::enable_sgpr_workgroup_id_x::put(1);
  return kd;
}
// dispatch ptr in s[0:1], kernarg ptr in s[2:3] (USER_SGPR_COUNT 4), workgroup id X in s4.
abi::kernel_descriptor dispatch_and_kernarg() {
  abi::kernel_descriptor kd{};
  kd.kernel_code_properties = kcp::enable_sgpr_dispatch_ptr::mask | kcp::enable_sgpr_kernarg_segment_ptr::mask;
  kd.kernarg_size = 8;
  kd.compute_pgm_rsrc2 = r2::user_sgpr_count::put(4) | r2::enable_sgpr_workgroup_id_x::put(1);
  return kd;
}

// Each kernel adds (workgroup id + 1) * its weight to the counter its kernarg names (atomically:
// workgroups run on several threads), reading the kernarg pointer and the workgroup id from the
// SGPRs its descriptor lays out: a wave built for the other descriptor (a recycled dispatch not
// rebuilt) reads the wrong SGPRs and adds garbage or faults.
void add(emu::workgroup_context& wg, std::uint64_t kernarg_va, std::uint64_t amount) {
  const std::uint64_t counter = wg.load<std::uint64_t>(kernarg_va);
  std::atomic_ref<std::uint64_t>(*wg.ptr<std::uint64_t>(counter, 1, true)).fetch_add(amount);
}
void add_a(emu::workgroup_context& wg) {
  const emu::wave_state& w = wg.wave(0);
  add(wg, w.sgpr64(0), (w.sgpr[2] + 1) * 1);
}
void add_b(emu::workgroup_context& wg) {
  const emu::wave_state& w = wg.wave(0);
  const auto pkt = wg.load<abi::kernel_dispatch_packet>(w.sgpr64(0));  // the dispatch pointer: this packet
  add(wg, w.sgpr64(2), (w.sgpr[4] + 1) * (pkt.workgroup_size_x == 64 || pkt.grid_size_x == 1 ? 1000 : 0));
}

// Two workgroups that wait for each other (bounded): a dispatch of it has run only once both
// workers were running at the same time — each has made its executor (a worker thread the
// scheduler starts late would otherwise make it inside the counted window).
void rendezvous(emu::workgroup_context& wg) {
  const std::uint64_t counter = wg.load<std::uint64_t>(wg.wave(0).sgpr64(0));
  std::atomic_ref<std::uint64_t> n(*wg.ptr<std::uint64_t>(counter, 1, true));
  n.fetch_add(1);
  const auto until = std::chrono::steady_clock::now() + 10s;
  while (n.load() < 2 && std::chrono::steady_clock::now() < until) std::this_thread::yield();
}

struct hot_rig {
  aq_test::aql_rig f;
  aq_test::kernel_object a{f.vm, kernarg_only(), "add_a"};
  aq_test::kernel_object b{f.vm, dispatch_and_kernarg(), "add_b"};
  aq_test::gpu_ptr<std::uint64_t> counter = gpu_alloc<std::uint64_t>(f.vm, 1, 64);
  aq_test::gpu_ptr<std::uint64_t> kernarg = gpu_alloc<std::uint64_t>(f.vm, 1, 64);
  aq_test::gpu_ptr<std::uint64_t> mailbox = gpu_alloc<std::uint64_t>(f.vm, 1, 64);
  std::vector<aq_test::gpu_ptr<abi::amd_signal>> signals;  // one per ring slot
  std::uint64_t expected = 0;  // host arithmetic: what the submitted dispatches add
  std::uint64_t events = 0;    // completions whose signal has a mailbox

  hot_rig() {
    f.registry.add("add_a", add_a);
    f.registry.add("add_b", add_b);
    f.registry.add("rendezvous", rendezvous);
    kernarg[0] = va(counter.get());
    for (std::uint32_t i = 0; i < f.slots; ++i)  // every other signal raises an event
      signals.push_back(aq_test::make_signal(f.vm, 0, i % 2 ? mailbox.get() : nullptr, 100 + i));
  }

  // One round: 4 packets — one workgroup of A (inline), four of B (the workers), a satisfied
  // barrier-AND, one workgroup of B with the barrier bit — each with its slot's signal.
  void round() {
    submit_dispatch(a.va_, 1, 1, false);
    submit_dispatch(b.va_, 256, 64, false);
    abi::barrier_and_packet bar{};
    bar.header = abi::make_header(abi::packet_type::barrier_and, false, abi::fence_scope::system, abi::fence_scope::system);
    bar.completion_signal = arm(f.write_index);
    f.submit(bar);
    submit_dispatch(b.va_, 1, 1, true);
  }
  void submit_dispatch(std::uint64_t ko, std::uint32_t grid, std::uint16_t block, bool barrier) {
    const std::uint64_t sig = arm(f.write_index);
    f.submit(aq_test::dispatch_1d(ko, va(kernarg.get()), grid, block, sig, barrier));
    const std::uint64_t weight = ko == a.va_ ? 1 : 1000;
    for (std::uint64_t wg = 0; wg < (grid + block - 1) / block; ++wg) expected += (wg + 1) * weight;
  }
  // The signal of the slot packet `index` goes to, set to 1 (its previous packet has completed:
  // the rig only reuses a slot after waiting for it).
  std::uint64_t arm(std::uint64_t index) {
    abi::amd_signal* s = signals[index % f.slots].get();
    if (s->event_mailbox_ptr != 0) ++events;
    aq_test::store(s, 1);
    return va(s);
  }
  // Both workers are running (see rendezvous): true once 2 workgroups met.
  bool workers_started() {
    aq_test::kernel_object k{f.vm, kernarg_only(), "rendezvous"};
    auto met = gpu_alloc<std::uint64_t>(f.vm, 1, 64);
    auto arg = gpu_alloc<std::uint64_t>(f.vm, 1, 64);
    arg[0] = va(met.get());
    f.submit(aq_test::dispatch_1d(k.va_, va(arg.get()), 2, 1, 0));
    return f.proc->wait_retired(f.write_index, 20s) && std::atomic_ref<std::uint64_t>(met[0]).load() == 2;
  }
  // Rounds until `packets` more have been submitted, waiting for completion every 8 rounds so
  // that a slot's signal is re-armed only after its packet completed.
  bool run(std::uint64_t packets) {
    const std::uint64_t end = f.write_index + packets;
    while (f.write_index < end) {
      for (int r = 0; r < 8 && f.write_index < end; ++r) round();
      if (!f.proc->wait_retired(f.write_index, 10s)) return false;
    }
    return true;
  }
};

}  // namespace

TEST_CASE("steady state: no heap allocation per packet on the processor's threads (with a control)") {
  hot_rig h;
  h.f.events.reserve(4096);  // the test's own event log must not allocate in the counted window
  REQUIRE(h.workers_started());
  REQUIRE(h.run(256));  // warm-up: every recycled entry, executor and worker has been used
  REQUIRE_FALSE(h.f.proc->has_error());

  aq_test::allocations = 0;
  bool done = false;
  {
    aq_test::counting_all_threads scope;
    done = h.run(512);
  }
  const std::size_t allocs = aq_test::allocations.load();
  REQUIRE(done);
  REQUIRE_FALSE(h.f.proc->has_error());
  INFO("allocations in 512 packets: " << allocs);
  CHECK(allocs == 0);
  // Everything ran, with the right registers: the sum of every dispatch's workgroups' additions.
  CHECK(std::atomic_ref<std::uint64_t>(h.counter[0]).load() == h.expected);
  CHECK(h.f.events.ids().size() == h.events);
  for (const auto& s : h.signals) CHECK(aq_test::load(s.get()) == 0);

  // Control: the counter sees an allocation on another thread (a host kernel's).
  static std::atomic<int*> sink{nullptr};  // the allocation escapes: the compiler keeps it
  h.f.registry.add("allocates", [](emu::workgroup_context&) {
    sink.store(new int(7));
    delete sink.exchange(nullptr);
  });
  aq_test::kernel_object k{h.f.vm, kernarg_only(), "allocates"};
  aq_test::allocations = 0;
  {
    aq_test::counting_all_threads scope;
    h.f.submit(aq_test::dispatch_1d(k.va_, va(h.kernarg.get()), 1, 1, 0));
    done = h.f.proc->wait_retired(h.f.write_index, 10s);
  }
  REQUIRE(done);
  CHECK(aq_test::allocations.load() >= 1);
}

TEST_CASE("recycled dispatches start clean: alternating descriptors, grids and fences give exact sums") {
  hot_rig h;
  // 4 packets a round, 100 rounds: every inflight entry is reused many times, each time for a
  // descriptor with a different user-SGPR layout than its previous dispatch may have had.
  REQUIRE(h.run(400));
  REQUIRE_FALSE(h.f.proc->has_error());
  CHECK(std::atomic_ref<std::uint64_t>(h.counter[0]).load() == h.expected);
  CHECK(h.expected == 100 * (1 + (1 + 2 + 3 + 4) * 1000 + 1000));
}

TEST_CASE("cached checks follow the VM and the registry (unmapped kernel object or signal, kernel removed or replaced)") {
  hot_rig h;
  REQUIRE(h.run(32));  // every structure below has been checked (and cached) many times
  REQUIRE_FALSE(h.f.proc->has_error());
  SUBCASE("the kernel object is unmapped: kernel_object_not_mapped at the next dispatch of it") {
    h.f.vm.unmap(h.b.mem.get());
    h.submit_dispatch(h.b.va_, 1, 1, false);
    REQUIRE(aq_test::wait_error(*h.f.proc));
    CHECK(h.f.proc->error()->fault == emu::engine_fault::kernel_object_not_mapped);
    CHECK(h.f.proc->error()->address == h.b.va_);
  }
  SUBCASE("the next packet's completion signal is unmapped: signal_not_mapped") {
    abi::amd_signal* s = h.signals[h.f.write_index % h.f.slots].get();
    h.f.vm.unmap(s);
    h.submit_dispatch(h.a.va_, 1, 1, false);
    REQUIRE(aq_test::wait_error(*h.f.proc));
    CHECK(h.f.proc->error()->fault == emu::engine_fault::signal_not_mapped);
    CHECK(h.f.proc->error()->address == va(s));
  }
  SUBCASE("the kernel is removed from the registry: unknown_host_kernel") {
    h.f.registry.remove("add_b");
    h.submit_dispatch(h.b.va_, 1, 1, false);
    REQUIRE(aq_test::wait_error(*h.f.proc));
    CHECK(h.f.proc->error()->fault == emu::engine_fault::unknown_host_kernel);
  }
  // The last packet of a round dispatched b, so b's checks are what the processor memoized
  // (emu/detail/aql_dispatch.hpp kernel_object_cache); these rewrite b's bytes without any VM
  // or registry change.
  SUBCASE("the descriptor is rewritten in place: its new bytes are checked (reserved property bits)") {
    abi::kernel_descriptor kd = h.b.kd;
    kd.kernel_code_properties |= static_cast<std::uint16_t>(~abi::kernel_code_properties::defined_mask);
    std::memcpy(h.b.mem.get(), &kd, sizeof kd);
    h.submit_dispatch(h.b.va_, 1, 1, false);
    REQUIRE(aq_test::wait_error(*h.f.proc));
    CHECK(h.f.proc->error()->fault == emu::engine_fault::bad_kernel_descriptor);
  }
  SUBCASE("the code blob is rewritten in place to name another kernel: that kernel runs") {
    h.f.registry.add("add_c", [](emu::workgroup_context& wg) { add(wg, wg.wave(0).sgpr64(2), 7); });
    REQUIRE(h.run(4));  // the registry moved: b is checked and memoized again
    const std::uint64_t before = h.expected;
    auto* blob = reinterpret_cast<abi::emulated_code_blob*>(h.b.mem.get() + abi::emulated_code_offset);
    std::memcpy(blob->name, "add_c", 5);
    blob->name_size = 5;
    h.f.submit(aq_test::dispatch_1d(h.b.va_, va(h.kernarg.get()), 1, 1, 0));
    REQUIRE(h.f.proc->wait_retired(h.f.write_index, 10s));
    CHECK_FALSE(h.f.proc->has_error());
    CHECK(std::atomic_ref<std::uint64_t>(h.counter[0]).load() == before + 7);
  }
  SUBCASE("the kernel is replaced under its name: the new function runs") {
    const std::uint64_t before = h.expected;
    h.f.registry.add("add_a", [](emu::workgroup_context& wg) { add(wg, wg.wave(0).sgpr64(0), 5); });
    h.f.submit(aq_test::dispatch_1d(h.a.va_, va(h.kernarg.get()), 1, 1, 0));
    REQUIRE(h.f.proc->wait_retired(h.f.write_index, 10s));
    CHECK(std::atomic_ref<std::uint64_t>(h.counter[0]).load() == before + 5);
    CHECK_FALSE(h.f.proc->has_error());
  }
}

TEST_CASE("workers finishing a dispatch while the processor recycles its entry: exact sums (a TSan case)") {
  // More workers than this machine's cores and two entries in flight: a worker that added the
  // next-to-last workgroup's count can be descheduled while the last one completes the dispatch
  // and the processor plans a later packet into the same entry. The worker must not read the
  // entry after its count (the race TSan found in runtime.multi_gpu, CI of stop 22).
  emu::aql_processor_options opt;
  opt.workers = 4;
  opt.max_inflight = 2;
  aq_test::aql_rig f(aqueduct::arch::family::gfx11, opt);
  f.registry.add("add_a", add_a);
  aq_test::kernel_object a{f.vm, kernarg_only(), "add_a"};
  auto counter = gpu_alloc<std::uint64_t>(f.vm, 1, 64);
  auto kernarg = gpu_alloc<std::uint64_t>(f.vm, 1, 64);
  kernarg[0] = va(counter.get());
  constexpr std::uint32_t dispatches = 3000, groups = 6;
  for (std::uint32_t i = 0; i < dispatches; ++i) f.submit(aq_test::dispatch_1d(a.va_, va(kernarg.get()), groups, 1, 0));
  REQUIRE(f.proc->wait_retired(f.write_index, 60s));
  REQUIRE_FALSE(f.proc->has_error());
  // Each dispatch adds 1 + 2 + ... + groups (host arithmetic).
  CHECK(std::atomic_ref<std::uint64_t>(counter[0]).load() == std::uint64_t{dispatches} * groups * (groups + 1) / 2);
}

// The processor reuses a plan's shape-dependent part when its recycled entry last planned a
// packet of the same sizes and kernel object (emu/detail/aql_dispatch.hpp plan_aql_dispatch).
// With one entry (max_inflight 1) every packet below takes that path after the first, so what
// must still be per packet is checked here: each packet's kernarg and dispatch pointers (the
// kernel finds its counter through the packet the dispatch pointer names, alternating between
// two), its kernarg and signal mapping, and the descriptor's bytes rewritten in place.
namespace {
void add_via_packet(emu::workgroup_context& wg) {
  const auto pkt = wg.load<abi::kernel_dispatch_packet>(wg.wave(0).sgpr64(0));  // dispatch ptr: this packet
  add(wg, pkt.kernarg_address, 1000);
}
}  // namespace

TEST_CASE("repeated dispatches of one shape through one recycled entry: each packet's own pointers, checks and descriptor") {
  emu::aql_processor_options opt;
  opt.max_inflight = 1;
  aq_test::aql_rig f(aqueduct::arch::family::gfx11, opt);
  f.registry.add("via_packet", add_via_packet);
  f.registry.add("add_a", add_a);
  aq_test::kernel_object k{f.vm, dispatch_and_kernarg(), "via_packet"};
  auto counters = gpu_alloc<std::uint64_t>(f.vm, 2, 64);
  auto kernarg1 = gpu_alloc<std::uint64_t>(f.vm, 1, 64), kernarg2 = gpu_alloc<std::uint64_t>(f.vm, 1, 64);
  kernarg1[0] = va(&counters[0]);
  kernarg2[0] = va(&counters[1]);
  for (int i = 0; i < 21; ++i)
    f.submit(aq_test::dispatch_1d(k.va_, va(i % 2 ? kernarg2.get() : kernarg1.get()), 1, 1, 0));
  REQUIRE(f.proc->wait_retired(f.write_index, 10s));
  REQUIRE_FALSE(f.proc->has_error());
  CHECK(std::atomic_ref<std::uint64_t>(counters[0]).load() == 11 * 1000);
  CHECK(std::atomic_ref<std::uint64_t>(counters[1]).load() == 10 * 1000);

  SUBCASE("the next packet's kernarg is unmapped: kernarg_not_mapped, at its address") {
    f.vm.unmap(kernarg2.get());
    f.submit(aq_test::dispatch_1d(k.va_, va(kernarg2.get()), 1, 1, 0));
    REQUIRE(aq_test::wait_error(*f.proc));
    CHECK(f.proc->error()->fault == emu::engine_fault::kernarg_not_mapped);
    CHECK(f.proc->error()->address == va(kernarg2.get()));
  }
  SUBCASE("the next packet's completion signal is unmapped: signal_not_mapped") {
    auto sig = aq_test::make_signal(f.vm, 1);
    f.vm.unmap(sig.get());
    f.submit(aq_test::dispatch_1d(k.va_, va(kernarg1.get()), 1, 1, va(sig.get())));
    REQUIRE(aq_test::wait_error(*f.proc));
    CHECK(f.proc->error()->fault == emu::engine_fault::signal_not_mapped);
  }
  SUBCASE("the descriptor is rewritten in place with reserved bits: bad_kernel_descriptor") {
    abi::kernel_descriptor kd = k.kd;
    kd.kernel_code_properties |= 0x80;
    std::memcpy(k.mem.get(), &kd, sizeof kd);
    f.submit(aq_test::dispatch_1d(k.va_, va(kernarg1.get()), 1, 1, 0));
    REQUIRE(aq_test::wait_error(*f.proc));
    CHECK(f.proc->error()->fault == emu::engine_fault::bad_kernel_descriptor);
  }
  SUBCASE("the descriptor and blob are rewritten in place to another layout and kernel: its SGPRs are the new ones") {
    // kernarg pointer in s[0:1] now (no dispatch pointer): add_a adds (workgroup id + 1) * 1.
    abi::kernel_descriptor kd = kernarg_only();
    kd.kernel_code_entry_byte_offset = k.kd.kernel_code_entry_byte_offset;
    std::memcpy(k.mem.get(), &kd, sizeof kd);
    auto* blob = reinterpret_cast<abi::emulated_code_blob*>(k.mem.get() + abi::emulated_code_offset);
    std::memcpy(blob->name, "add_a", 5);
    blob->name_size = 5;
    f.submit(aq_test::dispatch_1d(k.va_, va(kernarg2.get()), 1, 1, 0));
    REQUIRE(f.proc->wait_retired(f.write_index, 10s));
    REQUIRE_FALSE(f.proc->has_error());
    CHECK(std::atomic_ref<std::uint64_t>(counters[1]).load() == 10 * 1000 + 1);
  }
}

}  // namespace AQ_UNITY_ID
