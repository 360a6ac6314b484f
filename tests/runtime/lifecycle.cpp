// runtime: queue lifecycles under concurrency and faults (issue 13 bugs 1, 3, 4). Each case was
// seen to fail on the code before the one-seam redesign:
//   bug 1  threads creating and destroying AQL and SDMA queues on one agent: a new queue could be
//          given the dying queue's engine (the id was freed before the engine stopped) — packets
//          that never run, use-after-free, spurious make_queue failures;
//   bug 3  a queue whose engine faulted, ring full: try_dispatch (default timeout) never returned;
//   bug 4  a kernel that never ends: destroying its queue blocked forever, past drain_timeout.
// A case that would hang is run under a watchdog that ends the process with a message instead.
// Expected values: vadd results computed on the host; the errc the engine's fault maps to
// (device_fault for a memory fault, emu/engine_error.hpp).
#include "host_kernels.hpp"

#include <aqueduct/sync/atomics.hpp>

#include <doctest/doctest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

namespace aq = aqueduct;
namespace rt = aqueduct::runtime;
using namespace rt_test;
using namespace std::chrono_literals;

namespace {

// Runs f on a thread; if it has not returned within `limit`, the process ends (exit code 3) with
// `what` — a hang is reported as a failure instead of blocking the suite until ctest's timeout.
template <class F>
auto bounded(std::chrono::seconds limit, const char* what, F&& f) {
  std::packaged_task<decltype(f())()> task(std::forward<F>(f));
  auto fut = task.get_future();
  std::thread t(std::move(task));
  if (fut.wait_for(limit) != std::future_status::ready) {
    std::fprintf(stderr, "FAILED (hang): %s did not return within %lld s\n", what, static_cast<long long>(limit.count()));
    std::fflush(stderr);
    std::_Exit(3);
  }
  t.join();
  return fut.get();
}

// spin_forever(flag): every work-item waits until *flag != 0 (a kernel that never ends unless the
// host sets the flag). Checked loads: an engine that kills the wave makes the next load fault.
struct spin_args {
  std::uint64_t flag;
};
inline void spin_forever(emu::workgroup_context& ctx) {
  const emu::host_workgroup wg(ctx);
  const auto a = wg.args<spin_args>();
  while (ctx.load<std::uint32_t>(a.flag) == 0) std::this_thread::sleep_for(1ms);
}

// spin_forever loaded on `gpu`, and its flag (0: the kernel keeps spinning).
struct spinner {
  explicit spinner(const rt::agent& gpu)
      : exe(aq::emu::load(gpu, emu::host_code_object{{{"spin_forever", spin_forever, sizeof(spin_args), 0}}})),
        kernel(exe.get_untyped_kernel("spin_forever")),
        flag(gpu.alloc<std::uint32_t>(1, rt::memory_kind::host)) {
    flag[0] = 0;
  }
  // Ends the spinning kernel: an atomic store, as the kernel may be reading the flag right now
  // (its ctx.load is a relaxed atomic; a plain store here was a data race, ThreadSanitizer).
  void release() { aq::sync::atomic_store(flag[0], 1u, std::memory_order_relaxed); }
  rt::executable exe;
  rt::untyped_kernel kernel;
  rt::buffer<std::uint32_t> flag;
};

}  // namespace

TEST_CASE("threads creating and destroying AQL and SDMA queues on one agent: every queue runs its work (bug 1)") {
  auto sys = rt::system::open({.machine = "mi300x"});
  const auto& gpu = sys.default_agent();
  auto exe = aq::emu::load(gpu, test_kernels());
  const auto vadd = exe.get_untyped_kernel("vadd");
  constexpr int threads = 3, rounds = 60;
  constexpr std::uint32_t n = 256;
  struct data {
    rt::buffer<float> a, b, c;
    rt::buffer<std::uint32_t> fill;
  };
  std::vector<data> mem;
  for (int t = 0; t < threads; ++t) {  // allocated outside the threads
    mem.push_back({gpu.alloc<float>(n, rt::memory_kind::host), gpu.alloc<float>(n, rt::memory_kind::host), gpu.alloc<float>(n, rt::memory_kind::host), gpu.alloc<std::uint32_t>(n, rt::memory_kind::host)});
    for (std::uint32_t i = 0; i < n; ++i) mem.back().a[i] = float(i), mem.back().b[i] = float(t);
  }
  std::atomic<bool> stop{false};
  std::atomic<int> done{0};
  std::mutex mu;
  std::string first_failure;
  auto fail = [&](std::string why) {
    std::lock_guard lock(mu);
    if (first_failure.empty()) first_failure = std::move(why);
    stop = true;
  };
  bounded(120s, "the create/destroy storm", [&] {
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; ++t)
      ts.emplace_back([&, t] {
        data& d = mem[static_cast<std::size_t>(t)];
        for (int r = 0; r < rounds && !stop; ++r) {
          {
            auto q = gpu.try_make_queue(rt::aql, {.slots = 16, .drain_timeout = 200ms});
            if (!q) return fail("make_queue: " + std::string(q.detail()));
            for (std::uint32_t i = 0; i < n; ++i) d.c[i] = -1.0f;
            auto idx = q->try_dispatch(vadd, rt::grid{n}, rt::block{64}, d.a, d.b, d.c, n);
            if (!idx) return fail("dispatch: " + std::string(idx.detail()));
            if (auto w = q->try_wait(*idx, 5s); !w) return fail("AQL wait: " + std::string(w.detail()));
            for (std::uint32_t i = 0; i < n; ++i)
              if (d.c[i] != float(i) + float(t)) return fail("AQL result wrong at " + std::to_string(i));
          }
          {
            auto s = gpu.try_make_queue(rt::sdma, {.drain_timeout = 200ms});
            if (!s) return fail("make_sdma_queue: " + std::string(s.detail()));
            const std::uint32_t value = 0x1000u * std::uint32_t(t) + std::uint32_t(r);
            auto seq = s->try_fill(d.fill.va(), value, n * 4);
            if (!seq) return fail("SDMA fill: " + std::string(seq.detail()));
            if (auto w = s->try_wait(*seq, 5s); !w) return fail("SDMA wait: " + std::string(w.detail()));
            for (std::uint32_t i = 0; i < n; ++i)
              if (d.fill[i] != value) return fail("SDMA fill wrong at " + std::to_string(i));
          }
          ++done;
        }
      });
    for (auto& th : ts) th.join();
    return 0;
  });
  CHECK_MESSAGE(first_failure.empty(), first_failure);
  CHECK(done.load() == threads * rounds);
  CHECK(sys.emulator()->queues().empty());  // every queue destroyed (control: the storm made some)
}

TEST_CASE("a faulted queue with a full ring: try_dispatch returns the fault instead of blocking (bug 3)") {
  auto sys = rt::system::open({.machine = "mi300x"});
  const auto& gpu = sys.default_agent();
  auto exe = aq::emu::load(gpu, test_kernels());
  const auto vadd = exe.get_untyped_kernel("vadd");
  auto q = gpu.make_queue(rt::aql, {.slots = 16, .drain_timeout = 100ms});
  auto c = gpu.alloc<float>(64, rt::memory_kind::host);
  const std::uint64_t unmapped = 0x10;  // no BO there: the first load faults
  REQUIRE(q.try_dispatch(vadd, rt::grid{64}, rt::block{64}, unmapped, unmapped, c, 64u).has_value());
  // Fill the ring: the faulted packet is never retired, so 15 more fit.
  int accepted = 1;
  while (accepted < 16) {
    auto r = q.try_dispatch_with({.timeout = 0ns}, vadd, rt::grid{64}, rt::block{64}, c, c, c, 64u);
    if (!r) break;
    ++accepted;
  }
  CHECK(accepted == 16);  // control: the ring is full now
  auto r = bounded(20s, "try_dispatch into the full ring of a faulted queue",
                   [&] { return q.try_dispatch(vadd, rt::grid{64}, rt::block{64}, c, c, c, 64u); });
  REQUIRE_FALSE(r.has_value());
  CHECK(r.get_failure() == aq::errc::device_fault);
  const std::string text(r.detail());
  CHECK_MESSAGE(text.find("0x10") != std::string::npos, text);  // the faulting address
  // The barrier path reports it too.
  auto b = bounded(20s, "try_barrier_and into the full ring of a faulted queue", [&] { return q.try_barrier_and({}); });
  REQUIRE_FALSE(b.has_value());
  CHECK(b.get_failure() == aq::errc::device_fault);
}

// Bug 3 on an SDMA queue (issue 10 item 6: the ring layers' waits for room go through the one
// wait loop and ask the runtime's stop_check). The engine is held at a POLL_REGMEM gate with a
// copy from an unmapped address behind it and the ring full; a submission then waits for room,
// the gate opens, the engine faults on the copy and never consumes the rest. Before, the ring's
// wait backed off until its timeout — forever by default (checked on the unfixed runtime: the
// watchdog ended the test); now it returns the engine's fault.
TEST_CASE("a faulted SDMA queue with a full ring: a submission waiting for room returns the fault (bug 3)") {
  auto sys = rt::system::open({.machine = "mi300x"});
  const auto& gpu = sys.default_agent();
  auto q = gpu.make_queue(rt::sdma, {.ring_bytes = 1024, .drain_timeout = 100ms});
  auto gate = gpu.alloc<std::uint32_t>(1, rt::memory_kind::host);
  auto src = gpu.alloc<std::uint32_t>(64, rt::memory_kind::host);
  auto dst = gpu.alloc<std::uint32_t>(64, rt::memory_kind::host);
  gate[0] = 0;
  REQUIRE(q.try_wait_memory(gate.va(), 1).has_value());
  const aq::gpu_va unmapped(0x10);  // no BO there: the engine faults on the read
  REQUIRE(q.try_copy(dst.va(), unmapped, 256).has_value());
  int accepted = 0;
  while (q.try_copy(dst.va(), src.va(), 256, 0ns).has_value()) ++accepted;
  CHECK(accepted > 0);
  CHECK(q.try_copy(dst.va(), src.va(), 256, 0ns).get_failure() == aq::errc::queue_full);  // control: full now
  CHECK_FALSE(q.fault().has_value());                                                   // and not faulted yet
  std::thread opener([&] {
    std::this_thread::sleep_for(100ms);
    std::atomic_ref<std::uint32_t>(gate[0]).store(1, std::memory_order_release);
  });
  auto r = bounded(20s, "an SDMA copy into the full ring of a queue that faults meanwhile",
                   [&] { return q.try_copy(dst.va(), src.va(), 256); });
  opener.join();
  REQUIRE_FALSE(r.has_value());
  CHECK(r.get_failure() == aq::errc::device_fault);
  const std::string text(r.detail());
  CHECK_MESSAGE(text.find("0x10") != std::string::npos, text);  // the faulting address
}

// A GPU memory fault on one queue: on Linux the KFD sets every memory event of the process with
// the faulting page and the GPU (kfd_events.c: kfd_signal_vm_fault_event — va is page_addr <<
// PAGE_SHIFT, gpu_id the user GPU id) and evicts every queue of the process on that GPU for good,
// so nothing submitted to any of them completes after it. Before session 26 the runtime created no
// memory event: a wait on another queue of that GPU waited for ever on a GPU (on the emulator, it
// timed out, as the control below shows). The emulator models both with
// machine_config::memory_fault_events (emu/detail/evictions.hpp): it sets the memory events and
// evicts the GPU's other queues (here held at a memory wait nobody satisfies yet).
namespace {
struct faulted_gpu {
  rt::system sys;
  std::uint64_t bad = 0x8010;  // below mmap_min_addr (64 KiB): never a mapping; its page is 0x8000
  explicit faulted_gpu(bool memory_fault_events) {
    auto cfg = aq::emu::machine_config::try_parse("2*mi300x").value();
    cfg.memory_fault_events = memory_fault_events;
    sys = rt::system::try_open_emulated(std::move(cfg)).value();
  }
  // A bad load on an AQL queue of agent 0 that spins in its waits (no WAIT_EVENTS): its own
  // failure, which names the address.
  aq::result<void> fault(rt::queue& a, const aq::emu::host_code_object& code) {
    const auto& gpu = sys.agents()[0];
    auto exe = aq::emu::load(gpu, code);
    auto c = gpu.alloc<float>(64, rt::memory_kind::host);
    if (auto t = a.try_dispatch(exe.get_untyped_kernel("vadd"), rt::grid{64}, rt::block{64}, bad, bad, c, 64u); !t)
      return t.get_failure();
    return a.try_finish(10s);
  }
};
// An SDMA queue of `gpu` held at a memory wait on a gate of its own until open(): an innocent
// queue of that GPU with work outstanding.
struct held_sdma {
  rt::buffer<std::uint32_t> gate;
  rt::sdma_queue q;
  explicit held_sdma(const rt::agent& gpu)
      : gate(gpu.alloc<std::uint32_t>(1, rt::memory_kind::host)), q(gpu.make_queue(rt::sdma, {.drain_timeout = 100ms})) {
    gate[0] = 0;
    REQUIRE(q.try_wait_memory(gate.va(), 1).has_value());
  }
  void open() { std::atomic_ref<std::uint32_t>(gate[0]).store(1, std::memory_order_release); }
};
bool mentions(const aq::result<void>& r, const std::string& what) {
  return !r && std::string(r.detail()).find(what) != std::string::npos;
}
}  // namespace

TEST_CASE("a GPU memory fault ends the waits on every queue of that GPU, and only that GPU (KFD memory event)") {
  faulted_gpu m(true);
  const auto& gpu = m.sys.agents()[0];
  const auto& other = m.sys.agents()[1];
  REQUIRE(gpu.gpu_id() != other.gpu_id());
  auto gate = gpu.alloc<std::uint32_t>(1, rt::memory_kind::host);
  gate[0] = 0;
  // Innocent queues of the faulting GPU, held at a memory wait nobody satisfies: one whose waits
  // block (WAIT_EVENTS), one whose waits only spin (they look at the memory event at most once per
  // millisecond), and one on the other GPU.
  auto blocking = gpu.make_queue(rt::sdma, {.drain_timeout = 100ms});
  auto spinning = gpu.make_queue(rt::sdma, {.wait = aq::sync::wait_policy::spin(), .drain_timeout = 100ms});
  auto elsewhere = other.make_queue(rt::sdma, {.drain_timeout = 100ms});
  auto other_gate = other.alloc<std::uint32_t>(1, rt::memory_kind::host);  // mapped for that GPU
  other_gate[0] = 0;
  for (auto* q : {&blocking, &spinning}) REQUIRE(q->try_wait_memory(gate.va(), 1).has_value());
  REQUIRE(elsewhere.try_wait_memory(other_gate.va(), 1).has_value());
  CHECK(blocking.try_finish(20ms).get_failure() == aq::errc::timeout);  // control: held, no fault yet
  CHECK_FALSE(blocking.fault().has_value());

  auto a = gpu.make_queue(rt::aql, {.wait = aq::sync::wait_policy::spin(), .drain_timeout = 100ms});
  auto own = bounded(20s, "the faulting queue's wait", [&] { return m.fault(a, test_kernels()); });
  REQUIRE(own.get_failure() == aq::errc::device_fault);
  CHECK_MESSAGE(mentions(own, "0x8010"), own.detail());  // its own report names the address
  CHECK(a.own_fault().has_value());

  const std::string page = "page 0x8000", id = "gpu_id " + std::to_string(gpu.gpu_id());
  auto s = bounded(20s, "a spinning wait on another queue of the GPU", [&] { return spinning.try_finish(10s); });
  CHECK(s.get_failure() == aq::errc::device_fault);
  CHECK_MESSAGE((mentions(s, page) && mentions(s, id)), s.detail());
  auto b = bounded(20s, "a blocking wait on another queue of the GPU", [&] { return blocking.try_finish(10s); });
  CHECK(b.get_failure() == aq::errc::device_fault);
  CHECK_MESSAGE((mentions(b, page) && mentions(b, id)), b.detail());
  CHECK(blocking.fault().has_value());
  CHECK_FALSE(blocking.own_fault().has_value());  // the device did not stop it itself: the KFD did
  // Evicted for good: opening its gate now runs nothing more on that GPU, and a queue made there
  // afterwards starts evicted (its work never runs; its wait reports the fault).
  std::atomic_ref<std::uint32_t>(gate[0]).store(1, std::memory_order_release);
  std::this_thread::sleep_for(50ms);
  CHECK(blocking.completed() == 0);
  CHECK(spinning.completed() == 0);
  auto late = gpu.make_queue(rt::aql, {.drain_timeout = 100ms});
  REQUIRE(late.try_barrier_and({}).has_value());
  auto l = bounded(20s, "a wait on a queue made on the GPU after the fault", [&] { return late.try_finish(10s); });
  CHECK(l.get_failure() == aq::errc::device_fault);
  CHECK_MESSAGE(mentions(l, page), l.detail());
  CHECK(late.completed() == 0);
  // An SDMA submission there is refused at once with the fault (the runtime knows the GPU stopped).
  auto late_copy = gpu.make_queue(rt::sdma, {.drain_timeout = 100ms});
  auto src = gpu.alloc<std::uint32_t>(16, rt::memory_kind::host), dst = gpu.alloc<std::uint32_t>(16, rt::memory_kind::host);
  auto c = late_copy.try_copy(dst.va(), src.va(), 64);
  CHECK(c.get_failure() == aq::errc::device_fault);
  CHECK_MESSAGE((!c && std::string(c.detail()).find(page) != std::string::npos), (c ? std::string() : std::string(c.detail())));
  // The other GPU is not affected: its queue is still only waiting, and runs once the gate opens.
  CHECK(elsewhere.try_finish(20ms).get_failure() == aq::errc::timeout);
  CHECK_FALSE(elsewhere.fault().has_value());
  std::atomic_ref<std::uint32_t>(other_gate[0]).store(1, std::memory_order_release);
  CHECK(bounded(20s, "the other GPU's queue", [&] { return elsewhere.try_finish(10s); }).has_value());
}

TEST_CASE("a GPU memory fault ends a wait on a signal of that GPU; a signal of another GPU is untouched") {
  faulted_gpu m(true);
  const auto& gpu = m.sys.agents()[0];
  const auto& other = m.sys.agents()[1];
  auto sig = gpu.make_signal(1), ready = gpu.make_signal(0), elsewhere = other.make_signal(1);
  // Control: before the fault the wait only times out.
  CHECK(sig.try_wait_eq(0, 20ms).get_failure() == aq::errc::timeout);
  // A wait that blocks (the default policy), begun before the fault: no queue of the GPU will ever
  // set the signal, so only the memory event can end it.
  aq::result<std::int64_t> blocked = aq::failure(aq::errc::invalid_argument, "not run");
  std::thread waiter([&] { blocked = sig.try_wait_eq(0, 20s); });
  std::this_thread::sleep_for(50ms);
  auto a = gpu.make_queue(rt::aql, {.wait = aq::sync::wait_policy::spin(), .drain_timeout = 100ms});
  REQUIRE(bounded(20s, "the faulting queue's wait", [&] { return m.fault(a, test_kernels()); }).get_failure() ==
          aq::errc::device_fault);
  const auto t0 = std::chrono::steady_clock::now();
  waiter.join();
  CHECK(std::chrono::steady_clock::now() - t0 < 10s);  // ended by the fault, not by its 20 s timeout
  const std::string page = "page 0x8000", id = "gpu_id " + std::to_string(gpu.gpu_id());
  REQUIRE_FALSE(blocked.has_value());
  CHECK(blocked.get_failure() == aq::errc::device_fault);
  CHECK_MESSAGE((std::string(blocked.detail()).find(page) != std::string::npos &&
                 std::string(blocked.detail()).find("wait for a signal of " + id) != std::string::npos),
                blocked.detail());
  // A spinning wait begun after it ends with it too; a condition that already holds is still met.
  auto spun = sig.try_wait_eq(0, 10s, aq::sync::wait_policy::spin());
  CHECK(spun.get_failure() == aq::errc::device_fault);
  CHECK(ready.try_wait_eq(0, 10ms).has_value());
  // The other GPU's signal: still only waiting, and met once set.
  CHECK(elsewhere.try_wait_eq(0, 20ms).get_failure() == aq::errc::timeout);
  elsewhere.store(0);
  CHECK(elsewhere.try_wait_eq(0, 10s).has_value());
}

// The CP reads the kernel descriptor and the dependency signals, and writes the completion signal,
// through the GPU's VM as a kernel's loads go ("CPF", "CPC", "CPG" are UTCL2 clients in Linux's
// gmc_v9_0.c gfxhub_client_ids): an AQL packet naming unmapped memory is a GPU page fault, and the
// KFD evicts every queue of the process on that GPU, as for a kernel's bad load above.
TEST_CASE("an AQL packet naming unmapped memory is a GPU page fault: every queue of its GPU is evicted") {
  faulted_gpu m(true);
  const auto& gpu = m.sys.agents()[0];
  auto exe = aq::emu::load(gpu, test_kernels());
  const auto vadd = exe.get_untyped_kernel("vadd");
  auto kernargs = gpu.alloc<std::uint64_t>(64, rt::memory_kind::host);
  held_sdma sibling(gpu);
  auto a = gpu.make_queue(rt::aql, {.wait = aq::sync::wait_policy::spin(), .drain_timeout = 100ms});
  aq::ring::kernel_dispatch d{.kernel_object = vadd.object, .kernarg_address = kernargs.va(), .grid = {64}, .workgroup = {64}, .segments = {}};
  auto submit_raw = [&](const auto& packet) {
    auto r = a.aql().try_reserve(1);
    REQUIRE(r.has_value());
    r->write(0, packet);
    r->publish();
  };
  std::string address;
  SUBCASE("its kernel object") {
    d.kernel_object = aq::gpu_va(0x8000);
    submit_raw(aq::ring::make_packet(d));
    address = "address=0x8000";
  }
  SUBCASE("its kernarg segment") {
    d.kernarg_address = aq::gpu_va(0x8010);
    submit_raw(aq::ring::make_packet(d));
    address = "address=0x8010";
  }
  SUBCASE("its completion signal") {
    d.completion_signal = 0x8040;
    submit_raw(aq::ring::make_packet(d));
    address = "address=0x8040";
  }
  SUBCASE("a barrier-AND's dependency signal") {
    submit_raw(aq::ring::make_packet(aq::ring::barrier_and{.deps = aq::ring::dependencies({0x8080})}));
    address = "address=0x8080";
  }
  CAPTURE(address);
  auto own = bounded(20s, "the faulting queue's wait", [&] { return a.try_finish(10s); });
  REQUIRE(own.get_failure() == aq::errc::device_fault);
  CHECK_MESSAGE(mentions(own, address), own.detail());
  CHECK(a.own_fault().has_value());
  const std::string page = "page 0x8000", id = "gpu_id " + std::to_string(gpu.gpu_id());
  auto b = bounded(20s, "a wait on another queue of the GPU", [&] { return sibling.q.try_finish(10s); });
  CHECK(b.get_failure() == aq::errc::device_fault);
  CHECK_MESSAGE((mentions(b, page) && mentions(b, id)), b.detail());
  CHECK_FALSE(sibling.q.own_fault().has_value());  // evicted by the KFD, not stopped by its engine
  sibling.open();
  std::this_thread::sleep_for(50ms);
  CHECK(sibling.q.completed() == 0);
}

// fault() of a queue nobody waits on: it looks at the memory event itself, so it knows the GPU's
// fault without any wait having seen it (the faulting queue's own wait ends on its own report and
// never looks at the event).
TEST_CASE("fault() of an idle queue of a faulted GPU reports the GPU's fault though no wait has seen it") {
  faulted_gpu m(true);
  const auto& gpu = m.sys.agents()[0];
  const auto& other = m.sys.agents()[1];
  auto idle = gpu.make_queue(rt::sdma, {.drain_timeout = 100ms});
  auto idle_pm4 = gpu.make_queue(rt::pm4, {.drain_timeout = 100ms});
  auto elsewhere = other.make_queue(rt::aql, {.drain_timeout = 100ms});
  CHECK_FALSE(idle.fault().has_value());  // control: nothing to report before the fault
  auto a = gpu.make_queue(rt::aql, {.wait = aq::sync::wait_policy::spin(), .drain_timeout = 100ms});
  REQUIRE(bounded(20s, "the faulting queue's wait", [&] { return m.fault(a, test_kernels()); }).get_failure() ==
          aq::errc::device_fault);
  // The emulator records the faulting queue's own report before it sets the memory event: poll.
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  std::optional<aq::failure> f;
  while (!(f = idle.fault()) && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(1ms);
  REQUIRE(f.has_value());
  CHECK(f->code() == aq::errc::device_fault);
  const std::string page = "page 0x8000", id = "gpu_id " + std::to_string(gpu.gpu_id());
  CHECK_MESSAGE((std::string(f->detail()).find(page) != std::string::npos &&
                 std::string(f->detail()).find(id) != std::string::npos),
                f->detail());
  CHECK_FALSE(idle.own_fault().has_value());
  CHECK(idle_pm4.fault().has_value());
  CHECK_FALSE(elsewhere.fault().has_value());  // another GPU: untouched
}

// The same packet misaligned is the packet as written: a queue error, and only its queue stops.
TEST_CASE("an AQL packet with a misaligned completion signal is a queue error: the GPU's other queues go on") {
  faulted_gpu m(true);
  const auto& gpu = m.sys.agents()[0];
  held_sdma sibling(gpu);
  auto a = gpu.make_queue(rt::aql, {.wait = aq::sync::wait_policy::spin(), .drain_timeout = 100ms});
  auto sig = gpu.alloc<std::uint64_t>(32, rt::memory_kind::host);  // mapped; +8 is off the 64-byte boundary
  auto r = a.aql().try_reserve(1);
  REQUIRE(r.has_value());
  r->write(0, aq::ring::make_packet(aq::ring::barrier_and{.completion_signal = sig.va().value + 8}));
  r->publish();
  auto own = bounded(20s, "the faulting queue's wait", [&] { return a.try_finish(10s); });
  CHECK(own.get_failure() == aq::errc::queue_error);
  sibling.open();
  CHECK(bounded(20s, "the other queue of the GPU", [&] { return sibling.q.try_finish(10s); }).has_value());
}

TEST_CASE("without the memory event's report, a wait on another queue of a faulted GPU only times out (control)") {
  faulted_gpu m(false);
  const auto& gpu = m.sys.agents()[0];
  held_sdma blocking(gpu);
  auto a = gpu.make_queue(rt::aql, {.drain_timeout = 100ms});
  REQUIRE(bounded(20s, "the faulting queue's wait", [&] { return m.fault(a, test_kernels()); }).get_failure() ==
          aq::errc::device_fault);
  CHECK(blocking.q.try_finish(300ms).get_failure() == aq::errc::timeout);
  CHECK_FALSE(blocking.q.fault().has_value());
}

TEST_CASE("a kernel that never ends: destroying its queue is bounded (bug 4)") {
  auto sys = rt::system::open({.machine = "mi300x"});
  const auto& gpu = sys.default_agent();
  spinner sp(gpu);
  auto& flag = sp.flag;
  auto q = gpu.make_queue(rt::aql, {.slots = 16, .drain_timeout = 100ms});
  const auto idx = q.dispatch(sp.kernel, rt::grid{1}, rt::block{1}, flag);
  auto w = q.try_wait(idx, 50ms);
  REQUIRE_FALSE(w.has_value());  // control: it really does not end
  CHECK(w.get_failure() == aq::errc::timeout);
  const auto t0 = std::chrono::steady_clock::now();
  bounded(30s, "destroying a queue whose kernel never ends", [&] {
    q.destroy();
    return 0;
  });
  const auto took = std::chrono::steady_clock::now() - t0;
  CHECK(took < 5s);  // drain_timeout (100 ms) + the device's bounded engine stop
  // The device still works: a new queue on the same agent runs a kernel.
  auto q2 = gpu.make_queue(rt::aql, {.slots = 16});
  sp.release();
  const auto idx2 = q2.dispatch(sp.kernel, rt::grid{1}, rt::block{1}, flag);
  auto w2 = q2.try_wait(idx2, 10s);
  CHECK_MESSAGE(w2.has_value(), std::string(w2.detail()));
}

// hold_until_done (runtime/detail/held_memory.hpp): an owner that goes away while a queue may
// still use its memory (an exec graph after a failed replay) hands the memory to the queue. It
// is freed at once on an idle queue, after the queue has finished (seen by finish), or when the
// queue is destroyed if its work never ends — on each queue kind. Seen through a weak_ptr.
TEST_CASE("hold_until_done keeps an owner's memory until the queue is done with it or destroyed (AQL, PM4, SDMA)") {
  auto sys = rt::system::open({.machine = "rx7900xtx"});
  const auto& gpu = sys.default_agent();
  spinner sp(gpu);
  auto aql = gpu.make_queue(rt::aql, {.slots = 16, .drain_timeout = 50ms});
  auto pm4 = gpu.make_queue(rt::pm4, {.drain_timeout = 50ms});
  auto sdma = gpu.make_queue(rt::sdma, {.drain_timeout = 50ms});
  const auto hold = [](auto& q) {
    auto owner = std::make_shared<int>(1);
    std::weak_ptr<int> w = owner;
    q.hold_until_done(std::move(owner));
    return w;
  };
  // The work that keeps each queue busy until the flag is set: the spinning kernel (AQL, PM4), a
  // wait for the flag (SDMA POLL_REGMEM).
  const auto keep_busy = [&] {
    (void)aql.dispatch(sp.kernel, rt::grid{1}, rt::block{1}, sp.flag);
    (void)pm4.dispatch(sp.kernel, rt::grid{1}, rt::block{1}, sp.flag);
    (void)sdma.try_wait_memory(sp.flag.va(), 1).value();
  };
  SUBCASE("an idle queue: freed at once") {
    CHECK(hold(aql).expired());
    CHECK(hold(pm4).expired());
    CHECK(hold(sdma).expired());
    CHECK(aql.held() + pm4.held() + sdma.held() == 0);
  }
  SUBCASE("a busy queue: kept until it has finished") {
    keep_busy();
    const auto wa = hold(aql), wp = hold(pm4), ws = hold(sdma);
    std::this_thread::sleep_for(20ms);
    CHECK_FALSE(wa.expired());
    CHECK_FALSE(wp.expired());
    CHECK_FALSE(ws.expired());
    CHECK(aql.held() == 1);
    CHECK(pm4.held() == 1);
    CHECK(sdma.held() == 1);
    sp.release();
    aql.finish(10s);
    pm4.finish(10s);
    sdma.finish(10s);
    CHECK(wa.expired());
    CHECK(wp.expired());
    CHECK(ws.expired());
    CHECK(aql.held() + pm4.held() + sdma.held() == 0);
  }
  SUBCASE("work that never ends: kept until the queue is destroyed") {
    keep_busy();
    const auto wa = hold(aql), wp = hold(pm4), ws = hold(sdma);
    std::this_thread::sleep_for(20ms);
    CHECK(aql.try_finish(10ms).get_failure() == aq::errc::timeout);  // a finish that times out keeps it
    CHECK_FALSE(wa.expired());
    // What has expired after each destruction (SDMA, then PM4, then AQL): {aql, pm4, sdma}.
    const auto seen = bounded(30s, "destroying queues whose work never ends", [&] {
      std::vector<std::array<bool, 3>> v;
      const auto look = [&] { v.push_back({wa.expired(), wp.expired(), ws.expired()}); };
      sdma.destroy();
      look();
      pm4.destroy();
      look();
      aql.destroy();
      look();
      return v;
    });
    sp.release();
    CHECK(seen[0] == std::array{false, false, true});
    CHECK(seen[1] == std::array{false, true, true});
    CHECK(seen[2] == std::array{true, true, true});
  }
}

// Bug 4's other half: "destroying its queue (or the system) blocks forever". Here nothing is
// destroyed by hand: the queue, the kernel's executable and buffer and the system go together at
// the end of a scope (the system last, as its last owner goes), with the kernel still spinning.
TEST_CASE("a kernel that never ends: tearing down the whole system is bounded (bug 4, system)") {
  const auto t0 = std::chrono::steady_clock::now();
  bounded(30s, "tearing down a system whose queue runs a kernel that never ends", [&] {
    auto sys = rt::system::open({.machine = "mi300x"});
    const auto& gpu = sys.default_agent();
    spinner sp(gpu);
    auto q = gpu.make_queue(rt::aql, {.slots = 16, .drain_timeout = 100ms});
    const auto idx = q.dispatch(sp.kernel, rt::grid{1}, rt::block{1}, sp.flag);
    auto w = q.try_wait(idx, 50ms);
    CHECK(w.get_failure() == aq::errc::timeout);  // control: it really does not end
    return 0;
  });
  CHECK(std::chrono::steady_clock::now() - t0 < 5s);  // drain_timeout + the bounded engine stop
  // A new system works afterwards.
  auto sys = rt::system::open({.machine = "mi300x"});
  spinner sp(sys.default_agent());
  sp.release();
  auto q = sys.default_agent().make_queue(rt::aql, {.slots = 16});
  CHECK(q.try_wait(q.dispatch(sp.kernel, rt::grid{1}, rt::block{1}, sp.flag), 10s).has_value());
}

TEST_CASE("the system destroyed while another thread waits on its queue: the wait completes (bug 5)") {
  auto sys = std::make_unique<rt::system>(rt::system::open({.machine = "mi300x"}));
  const rt::agent gpu = sys->default_agent();  // a copy: keeps working after the system value is gone
  spinner sp(gpu);
  auto& flag = sp.flag;
  auto q = gpu.make_queue(rt::aql, {.slots = 16});
  const auto idx = q.dispatch(sp.kernel, rt::grid{1}, rt::block{1}, flag);
  aq::result<void> waited = aq::failure(aq::errc::cancelled, "not waited");
  std::thread waiter([&] { waited = q.try_wait(idx, 20s); });
  std::this_thread::sleep_for(50ms);
  sys.reset();  // the system value goes while the waiter waits
  std::this_thread::sleep_for(50ms);
  sp.release();  // the buffer still works: the kernel sees it and ends
  bounded(30s, "joining the waiter", [&] {
    waiter.join();
    return 0;
  });
  CHECK_MESSAGE(waited.has_value(), std::string(waited.detail()));
}

TEST_CASE("buffers, queues, executables, signals and agents used and destroyed after their system (bug 5)") {
  std::optional<rt::agent> gpu;
  std::optional<rt::buffer<float>> a, c;
  std::optional<rt::executable> exe;
  std::optional<rt::queue> q;
  std::optional<rt::signal> sig;
  {
    auto sys = rt::system::open({.machine = "mi300x"});
    gpu = sys.default_agent();
    a = gpu->alloc<float>(64, rt::memory_kind::host);
    c = gpu->alloc<float>(64, rt::memory_kind::host);
    exe = aq::emu::load(*gpu, test_kernels());
    q = gpu->make_queue(rt::aql, {.slots = 16});
    sig = gpu->make_signal(1);
  }  // the system value is gone; everything made from it still works
  for (std::uint32_t i = 0; i < 64; ++i) (*a)[i] = float(i);
  const auto idx = q->dispatch(exe->get_untyped_kernel("vadd"), rt::grid{64}, rt::block{64}, *a, *a, *c, 64u);
  REQUIRE(q->try_wait(idx, 10s).has_value());
  CHECK((*c)[63] == 126.0f);
  sig->store(0);
  CHECK(sig->try_wait_eq(0, 1s).has_value());
  auto more = gpu->try_alloc<float>(16, rt::memory_kind::host);  // the agent too
  CHECK(more.has_value());
  // Destroyed in an order that ends with the agent: the last owner tears the system down.
  q.reset();
  exe.reset();
  a.reset();
  sig.reset();
  more = aq::failure(aq::errc::cancelled);
  c.reset();
  gpu.reset();
}

TEST_CASE("a default-constructed or moved-from system or queue reports misuse instead of crashing (bug 5)") {
  rt::queue empty;
  auto sys = rt::system::open({.machine = "mi300x"});
  auto exe = aq::emu::load(sys.default_agent(), test_kernels());
  const auto nothing_k = exe.get_untyped_kernel("nothing");
  auto r = empty.try_dispatch(nothing_k, rt::grid{1}, rt::block{1});
  REQUIRE_FALSE(r.has_value());
  CHECK(r.get_failure() == aq::errc::invalid_argument);
  CHECK(std::string(r.detail()).find("moved-from") != std::string::npos);
  CHECK(empty.try_finish(1s).get_failure() == aq::errc::invalid_argument);
  auto q = sys.default_agent().make_queue(rt::aql, {.slots = 16});
  rt::queue moved = std::move(q);
  CHECK(q.try_dispatch(nothing_k, rt::grid{1}, rt::block{1}).get_failure() == aq::errc::invalid_argument);  // NOLINT(bugprone-use-after-move)
  CHECK(moved.try_finish(5s).has_value());  // control: the moved-to queue works
  rt::system none;
  CHECK_FALSE(static_cast<bool>(none));
  CHECK(none.agents().empty());
  CHECK_FALSE(none.emulated());
  CHECK(none.describe().find("empty") != std::string::npos);
  rt::system moved_sys = std::move(sys);
  CHECK(sys.agents().empty());  // NOLINT(bugprone-use-after-move)
  CHECK(sys.how_chosen().find("empty") != std::string::npos);
  CHECK(moved_sys.agents().size() == 1);
}

// The note's open item: an SDMA ring full on a faulted engine blocked with an infinite timeout
// (the ring layer waited for room that never comes). A 1 KiB ring: a copy from an unmapped
// address stops the engine; copies with the default (infinite) timeout must then return the fault.
TEST_CASE("a faulted SDMA queue with a full ring: try_copy with an infinite timeout returns the fault (bug 3, SDMA)") {
  auto sys = rt::system::open({.machine = "mi300x"});
  const auto& gpu = sys.default_agent();
  auto dst = gpu.alloc<std::uint32_t>(64, rt::memory_kind::host);
  auto s = gpu.make_queue(rt::sdma, {.ring_bytes = 1024, .drain_timeout = 100ms});
  const aq::gpu_va unmapped(0x10000);
  REQUIRE(s.try_copy(dst.va(), unmapped, 256).has_value());
  auto last = bounded(20s, "SDMA copies into the full ring of a faulted queue", [&] {
    aq::result<rt::sdma_ticket> r = aq::failure(aq::errc::cancelled);
    for (int i = 0; i < 200; ++i) {  // far more than a 1 KiB ring holds
      r = s.try_copy(dst.va(), dst.va() + aq::byte_count(128), 128);
      if (!r) break;
    }
    return r;
  });
  REQUIRE_FALSE(last.has_value());
  INFO(std::string(last.detail()));
  CHECK(last.error() == aq::errc::device_fault);
  CHECK(std::string(last.detail()).find("0x10000") != std::string::npos);  // the faulting address
}

// The same for PM4: the ring and the kernarg slots of a faulted queue never drain.
TEST_CASE("a faulted PM4 queue: dispatches past its slots return the fault instead of blocking (bug 3, PM4)") {
  auto sys = rt::system::open({.machine = "rx7900xtx"});
  const auto& gpu = sys.default_agent();
  auto exe = aq::emu::load(gpu, test_kernels());
  const auto vadd = exe.get_untyped_kernel("vadd");
  auto p = gpu.make_queue(rt::pm4, {.slots = 16, .drain_timeout = 100ms});
  auto c = gpu.alloc<float>(64, rt::memory_kind::host);
  const std::uint64_t unmapped = 0x10;
  REQUIRE(p.try_dispatch(vadd, rt::grid{64}, rt::block{64}, unmapped, unmapped, c, 64u).has_value());
  auto last = bounded(20s, "PM4 dispatches into a faulted queue", [&] {
    aq::result<rt::pm4_ticket> r = aq::failure(aq::errc::cancelled);
    for (int i = 0; i < 100; ++i) {
      r = p.try_dispatch(vadd, rt::grid{64}, rt::block{64}, c, c, c, 64u);
      if (!r) break;
    }
    return r;
  });
  REQUIRE_FALSE(last.has_value());
  INFO(std::string(last.detail()));
  CHECK(last.error() == aq::errc::device_fault);
}

// The note's other open item: peer_mapping held no keep-alive, so one that outlived its buffer
// and its system unmapped through a freed driver.
TEST_CASE("a peer mapping that outlives its buffer and its system unmaps safely") {
  std::optional<rt::peer_mapping> m;
  {
    auto sys = rt::system::open({.device = rt::device_choice::emulated, .machine = "2*rx7900xtx"});
    const auto& g0 = sys.agents()[0];
    const auto& g1 = sys.agents()[1];
    auto b = g1.alloc<std::uint32_t>(1024, rt::memory_kind::host);
    auto r = rt::peer_mapping::try_map(b, g0);
    REQUIRE(r.has_value());
    m.emplace(std::move(*r));
    CHECK(m->peers().size() == 1);
  }  // the buffer and the system value are gone; the mapping keeps what it needs
  const auto r = m->try_unmap();  // through the system the mapping keeps alive (used to be freed)
  CHECK(m->peers().empty());
  (void)r;
  m.reset();  // the last owner: the system goes now
}

}  // namespace AQ_UNITY_ID
