// runtime/pm4_queue.hpp end to end on the emulated device: the target policy chosen per agent
// (spec/kfd.md §4: gfx1100 needs PRIV, gfx942 / gfx1030 must not set it), vector addition
// verified against host arithmetic, identical to the AQL queue's result, preemption through the
// CWSR area the runtime allocated, and the hang diagnosis when PRIV is wrong (test-only hook).
#include "host_kernels.hpp"

#include <aqueduct/runtime/pm4_queue.hpp>

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

namespace aq = aqueduct;
namespace rt = aqueduct::runtime;
using namespace rt_test;
using namespace std::chrono_literals;

namespace {

struct vadd_run {
  std::uint32_t n;
  rt::buffer<float> a, b, c;
  vadd_run(const rt::agent& gpu, std::uint32_t count) : n(count), a(gpu.alloc<float>(n, rt::memory_kind::host)), b(gpu.alloc<float>(n, rt::memory_kind::host)), c(gpu.alloc<float>(n, rt::memory_kind::host)) {
    for (std::uint32_t i = 0; i < n; ++i) {
      a[i] = static_cast<float>(i);
      b[i] = 2.0f * static_cast<float>(i) + 0.5f;
      c[i] = -1.0f;
    }
  }
  // c = a + b with a[i] = i, b[i] = 2i + 0.5: expected 3i + 0.5 (exact in float here).
  std::uint32_t wrong() const {
    std::uint32_t bad = 0;
    for (std::uint32_t i = 0; i < n; ++i) bad += c[i] != 3.0f * static_cast<float>(i) + 0.5f;
    return bad;
  }
};

}  // namespace

TEST_CASE("make_queue(gpu, pm4) picks the PRIV policy per agent and runs vadd") {
  struct m {
    const char* machine;
    bool priv;
    const char* target;
  };
  for (const m& x : {m{"rx7900xtx", true, "gfx11+pm4-priv"}, m{"mi300x", false, "gfx94x"}, m{"rx6900xt", false, "gfx10.3"}}) {
    CAPTURE(x.machine);
    auto sys = rt::system::open({.machine = x.machine});
    const auto& gpu = sys.default_agent();
    auto exe = aq::emu::load(gpu, test_kernels());
    auto vadd = exe.try_get_untyped_kernel("vadd");
    REQUIRE(vadd.has_value());
    auto q = gpu.try_make_queue(rt::pm4);
    REQUIRE_MESSAGE(q.has_value(), std::string(q.detail()));
    CHECK(q->emulated());
    CHECK(q->sets_pm4_priv() == x.priv);
    CHECK(q->target_name().find(x.target) == 0);
    vadd_run v(gpu, 100'003);  // partial last workgroup: the kernel bounds-checks against n
    const auto seq = q->dispatch(*vadd, rt::grid{v.n}, rt::block{256}, v.a, v.b, v.c, v.n);
    auto w = q->try_wait(seq, 20s);
    REQUIRE_MESSAGE(w.has_value(), std::string(w.detail()));
    CHECK(v.wrong() == 0);
    CHECK(q->completed() == seq.value());
    CHECK((sys.emulator()->engine(q->queue_id())->pm4()->sh_register(0x2E12) >> 20 & 1) == (x.priv ? 1u : 0u));
    CHECK(sys.emulator()->engine(q->queue_id())->pm4()->cwsr_capacity().has_value());  // the CWSR area kfd/ sized is big enough
  }
}

TEST_CASE("PM4 and AQL queues of one agent give the same vadd result; many PM4 commands reuse slots") {
  auto sys = rt::system::open({.machine = "rx7900xtx"});
  const auto& gpu = sys.default_agent();
  auto exe = aq::emu::load(gpu, test_kernels());
  auto vadd = exe.try_get_kernel<const float*, const float*, float*, std::uint32_t>("vadd");
  REQUIRE(vadd.has_value());
  vadd_run p(gpu, 50'000), a(gpu, 50'000);
  rt::pm4_queue_options po;
  po.slots = 4;  // forces slot reuse (each waits for the command that used it)
  auto q = gpu.make_queue(rt::pm4, po);
  rt::pm4_ticket seq;
  for (int i = 0; i < 20; ++i) seq = q.dispatch(*vadd, rt::grid{p.n}, rt::block{128}, p.a, p.b, p.c, p.n);
  REQUIRE(q.try_wait(seq, 20s).has_value());
  CHECK(seq.value() == 20);
  auto aq_ = gpu.make_queue(aq::aql);
  const auto idx = aq_.dispatch(*vadd, rt::grid{a.n}, rt::block{128}, a.a, a.b, a.c, a.n);
  REQUIRE(aq_.try_wait(idx, 20s).has_value());
  CHECK(p.wrong() == 0);
  CHECK(a.wrong() == 0);
  CHECK(std::memcmp(&p.c[0], &a.c[0], p.n * sizeof(float)) == 0);
}

TEST_CASE("preemption stress through the runtime's CWSR area: results stay correct") {
  auto sys = rt::system::open({.machine = "rx7900xtx"});
  const auto& gpu = sys.default_agent();
  auto exe = aq::emu::load(gpu, test_kernels());
  auto vadd = exe.try_get_untyped_kernel("vadd");
  REQUIRE(vadd.has_value());
  auto engines = sys.emulator()->get_engine_options();
  engines.pm4.preemption.every_workgroups = 3;
  sys.emulator()->set_engine_options(engines);  // for the queues created from now on
  auto q = gpu.make_queue(rt::pm4);
  vadd_run v(gpu, 64 * 300);
  const auto seq = q.dispatch(*vadd, rt::grid{v.n}, rt::block{64}, v.a, v.b, v.c, v.n);
  auto w = q.try_wait(seq, 30s);
  REQUIRE_MESSAGE(w.has_value(), std::string(w.detail()));
  CHECK(v.wrong() == 0);
  CHECK(sys.emulator()->engine(q.queue_id())->pm4()->preemption_stats().preemptions >= 99);  // before workgroups 3, 6, ..., 297
}

TEST_CASE("PRIV wrong on gfx1100 (test-only hook): the runtime's wait reports device_hang with the queue decoded") {
  auto sys = rt::system::open({.machine = "rx7900xtx"});
  const auto& gpu = sys.default_agent();
  auto exe = aq::emu::load(gpu, test_kernels());
  auto vadd = exe.try_get_untyped_kernel("vadd");
  REQUIRE(vadd.has_value());
  auto engines = sys.emulator()->get_engine_options();
  engines.pm4.preemption.every_workgroups = 4;
  engines.pm4.test_force_rsrc1_priv = false;
  sys.emulator()->set_engine_options(engines);
  rt::pm4_queue_options o;
  o.drain_timeout = 10ms;
  o.ring_bytes = 1024;  // a few commands fill it
  auto q = gpu.make_queue(rt::pm4, o);
  vadd_run v(gpu, 64 * 64);
  const auto seq = q.dispatch(*vadd, rt::grid{v.n}, rt::block{64}, v.a, v.b, v.c, v.n);
  auto w = q.try_wait(seq, 5s);
  REQUIRE_FALSE(w.has_value());
  CHECK(w.get_failure() == aq::errc::device_hang);
  const std::string text(w.detail());
  CHECK_MESSAGE(text.find("COMPUTE_PGM_RSRC1.PRIV") != std::string::npos, text);
  CHECK_MESSAGE(text.find("packet at rptr: DISPATCH_DIRECT") != std::string::npos, text);
  CHECK_MESSAGE(text.find("rptr") != std::string::npos, text);
  CHECK(q.completed() == 0);
  // Further commands fill the ring the hung MEC no longer drains: reported, not waited on forever.
  aq::result<rt::pm4_ticket> more = rt::pm4_ticket{};
  for (int i = 0; i < 64 && more; ++i) more = q.try_dispatch(*vadd, rt::grid{v.n}, rt::block{64}, v.a, v.b, v.c, v.n);
  REQUIRE_FALSE(more.has_value());
  CHECK(more.get_failure() == aq::errc::device_hang);
}

// Issue 10 item 6: a command buffer larger than half the ring, submitted while the CP is held at a
// WAIT_REG_MEM gate, waits in the ring's own wait (sync::wait_until) until the CP made room, and
// is submitted exactly once. Before, the runtime retried the whole buffer in 10 ms rounds after
// its first half-ring part had already been committed, so that part ran twice (checked on the
// unfixed runtime: the write pointer advanced by 128 dwords more than the buffer and its tail).
// Expected: the dwords a submission adds = the buffer + the completion tail the runtime appends,
// the tail measured on the gate submission (which waited for nothing).
TEST_CASE("a command buffer larger than half a held PM4 ring is submitted once") {
  auto sys = rt::system::open({.machine = "mi300x"});
  const auto& gpu = sys.default_agent();
  auto q = gpu.make_queue(rt::pm4, {.ring_bytes = 1024});  // 256 dwords
  const auto* wptr = reinterpret_cast<const std::uint64_t*>(static_cast<const std::byte*>(q.resources().pointers().host) + 64);
  auto written = [&] { return std::atomic_ref<const std::uint64_t>(*wptr).load(std::memory_order_acquire); };
  auto gate = gpu.alloc<std::uint32_t>(1, rt::memory_kind::host);
  auto stamps = gpu.alloc<std::uint64_t>(40, rt::memory_kind::host);
  gate[0] = 0;
  for (int i = 0; i < 40; ++i) stamps[i] = 0;
  rt::command_buffer hold;
  q.encode_wait(hold, gate.va(), 1);
  const std::uint64_t w0 = written();
  REQUIRE(q.try_submit(hold).has_value());
  const std::uint64_t tail = written() - w0 - hold.size();
  rt::command_buffer big;
  for (int i = 0; i < 40; ++i) q.encode_timestamp(big, stamps.va() + aq::byte_count(8 * i));
  REQUIRE(big.size() > 128);  // more than half the ring: submitted in parts
  REQUIRE(big.size() + tail + hold.size() + tail > 256);  // control: it cannot fit while the gate holds
  std::thread opener([&] {
    std::this_thread::sleep_for(100ms);
    std::atomic_ref<std::uint32_t>(gate[0]).store(1, std::memory_order_release);
  });
  const std::uint64_t w1 = written();
  auto r = q.try_submit(big, 10s);
  const std::uint64_t w2 = written();
  opener.join();
  REQUIRE_MESSAGE(r.has_value(), std::string(r.detail()));
  CHECK(w2 - w1 == big.size() + tail);
  REQUIRE(q.try_finish(10s).has_value());
  int stamped = 0;
  for (int i = 0; i < 40; ++i) stamped += stamps[i] != 0;
  CHECK(stamped == 40);
}

// DISPATCH_INDIRECT (abi/pm4.hpp, from PAL's MEC packet): the workgroup counts are read by the
// MEC when it reaches the packet, not when the host submits it; a zero count runs nothing.
TEST_CASE("dispatch_indirect: the counts are read when the MEC reaches the dispatch; zero runs nothing; bad addresses") {
  for (const char* machine : {"rx7900xtx", "mi300x"}) {
    CAPTURE(machine);
    auto sys = rt::system::open({.machine = machine});
    const auto& gpu = sys.default_agent();
    auto exe = aq::emu::load(gpu, test_kernels());
    auto vadd = get<vadd_kernel>(exe, "vadd");
    auto q = gpu.make_queue(rt::pm4);
    auto gate = gpu.alloc<std::uint32_t>(1, rt::memory_kind::host);
    auto counts = gpu.alloc<std::uint32_t>(4, rt::memory_kind::host);
    gate[0] = 0;
    counts[0] = counts[1] = counts[2] = 1;
    vadd_run v(gpu, 4096);
    rt::command_buffer hold;
    q.encode_wait(hold, gate.va(), 1);
    REQUIRE(q.try_submit(hold).has_value());
    auto t = q.try_dispatch_indirect(vadd, counts.va(), rt::block{256}, v.a, v.b, v.c, v.n);
    REQUIRE_MESSAGE(t.has_value(), std::string(t.detail()));
    counts[0] = 7;  // after the submission, before the MEC runs it (the queue is held)
    std::atomic_ref<std::uint32_t>(gate[0]).store(1, std::memory_order_release);
    auto w = q.try_wait(*t, 20s);
    REQUIRE_MESSAGE(w.has_value(), std::string(w.detail()));
    std::uint32_t done = 0, wrong = 0;
    for (std::uint32_t i = 0; i < v.n; ++i) {
      const bool in = i < 7 * 256;  // 7 workgroups of 256
      done += v.c[i] != -1.0f;
      wrong += in ? v.c[i] != 3.0f * static_cast<float>(i) + 0.5f : v.c[i] != -1.0f;
    }
    CHECK(done == 7 * 256);
    CHECK(wrong == 0);

    // A zero count: the dispatch is discarded, the command still completes.
    for (std::uint32_t i = 0; i < v.n; ++i) v.c[i] = -1.0f;
    counts[0] = 0;
    counts[1] = 5;
    auto z = q.dispatch_indirect(vadd, counts.va(), rt::block{256}, v.a, v.b, v.c, v.n);
    REQUIRE(q.try_wait(z, 20s).has_value());
    std::uint32_t touched = 0;
    for (std::uint32_t i = 0; i < v.n; ++i) touched += v.c[i] != -1.0f;
    CHECK(touched == 0);

    // Misaligned counts: refused before anything is submitted.
    const auto before = q.submitted();
    auto m = q.try_dispatch_indirect(vadd, counts.va() + aq::byte_count(2), rt::block{256}, v.a, v.b, v.c, v.n);
    REQUIRE_FALSE(m.has_value());
    CHECK(m.error() == aq::errc::invalid_argument);
    CHECK(std::string(m.detail()).find("4-byte aligned") != std::string::npos);
    CHECK(q.submitted() == before);

    // Counts at an address the GPU VM does not map: the queue stops with a device fault naming it.
    auto u = q.try_dispatch_indirect(vadd, aq::gpu_va{0x40}, rt::block{256}, v.a, v.b, v.c, v.n);
    REQUIRE(u.has_value());
    auto uw = q.try_wait(*u, 20s);
    REQUIRE_FALSE(uw.has_value());
    CHECK(uw.error() == aq::errc::device_fault);
    INFO(std::string(uw.detail()));
    CHECK(std::string(uw.detail()).find("DISPATCH_INDIRECT workgroup counts") != std::string::npos);
    CHECK(std::string(uw.detail()).find("0x40") != std::string::npos);
  }
}

}  // namespace AQ_UNITY_ID
