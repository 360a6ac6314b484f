// runtime on an emulated machine of two GPUs: queues of the SECOND GPU complete through the
// process's one KFD event page. The page is allocated on whichever GPU asks for an event first;
// every GPU whose engines write an event mailbox must have it mapped (as libhsakmt maps it to
// every GPU). Here AQL and PM4 queues (and a pooled signal) on GPU 1 are waited on with
// wait_kind::block and a max_block far beyond the test's timeout, so the wait can only return
// early if the engine wrote the mailbox and raised the event: without the mapping the AQL
// processor skips the mailbox write (the wait sleeps out its whole slice) and the PM4 RELEASE_MEM
// faults on the unmapped mailbox (errc::device_fault). Results are checked element by element
// against host arithmetic (c[i] = a[i] + b[i] with a[i] = i, b[i] = 2i + 0.5 → 3i + 0.5, exact
// in float for these sizes).
#include "host_kernels.hpp"

#include <aqueduct/runtime/pm4_queue.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <vector>
#include <string>
#include <thread>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

namespace aq = aqueduct;
namespace rt = aqueduct::runtime;
using namespace rt_test;
using namespace std::chrono_literals;

namespace {

// Block at once, in one slice longer than any timeout below: only the KFD event ends it early.
constexpr aq::sync::wait_policy blocking{aq::sync::wait_kind::block, aq::sync::nanoseconds::zero(), 600s};
constexpr auto wait_timeout = 6s;
constexpr auto woken_within = 3s;  // a woken wait takes milliseconds; an unwoken one the full 6 s

struct vadd_run {
  std::uint32_t n;
  rt::buffer<float> a, b, c;
  vadd_run(const rt::agent& gpu, std::uint32_t count, rt::memory_kind out = rt::memory_kind::host)
      : n(count), a(gpu.alloc<float>(n, rt::memory_kind::host)), b(gpu.alloc<float>(n, rt::memory_kind::host)), c(gpu.alloc<float>(n, out)) {
    for (std::uint32_t i = 0; i < n; ++i) {
      a[i] = static_cast<float>(i);
      b[i] = 2.0f * static_cast<float>(i) + 0.5f;
      c[i] = -1.0f;
    }
  }
  [[nodiscard]] std::uint32_t wrong() const {
    std::uint32_t bad = 0;
    for (std::uint32_t i = 0; i < n; ++i) bad += c[i] != 3.0f * static_cast<float>(i) + 0.5f;
    return bad;
  }
};

template <class F>
auto timed(F&& f) {
  const auto t0 = std::chrono::steady_clock::now();
  auto r = f();
  return std::pair{std::move(r), std::chrono::steady_clock::now() - t0};
}

}  // namespace

TEST_CASE("AQL and PM4 queues on the second GPU wake blocking waits through the KFD event") {
  for (const std::string machine : {"2*rx7900xtx", "mi300x,rx7900xtx"}) {
    CAPTURE(machine);
    auto sys = rt::system::open({.device = rt::device_choice::emulated, .machine = machine});
    REQUIRE(sys.agents().size() == 2);
    const rt::agent& g0 = sys.agents()[0];
    const rt::agent& g1 = sys.agents()[1];
    REQUIRE(g0.gpu_id() != g1.gpu_id());
    // GPU 0 asks for an event first, so the event page is allocated (and mapped) there.
    auto q0 = g0.make_queue(aq::aql, {.slots = 64, .wait = blocking});
    auto exe = aq::emu::load(g1, test_kernels());
    auto vadd = exe.get_untyped_kernel("vadd");

    {
      INFO("AQL queue on GPU 1");
      auto q = g1.make_queue(aq::aql, {.slots = 64, .wait = blocking});
      vadd_run v(g1, 70'001, rt::memory_kind::device_host_visible);
      const auto idx = q.dispatch(vadd, rt::grid{v.n}, rt::block{256}, v.a, v.b, v.c, v.n);
      auto [w, took] = timed([&] { return q.try_wait(idx, wait_timeout); });
      REQUIRE_MESSAGE(w.has_value(), std::string(w.detail()));
      CHECK_MESSAGE(took < woken_within, "the blocking wait was not woken by the KFD event");
      CHECK(v.wrong() == 0);
      // A second dispatch on the same queue: the event (auto-reset) wakes again.
      vadd_run v2(g1, 1000);
      const auto idx2 = q.dispatch(vadd, rt::grid{v2.n}, rt::block{64}, v2.a, v2.b, v2.c, v2.n);
      auto [w2, took2] = timed([&] { return q.try_wait(idx2, wait_timeout); });
      REQUIRE_MESSAGE(w2.has_value(), std::string(w2.detail()));
      CHECK(took2 < woken_within);
      CHECK(v2.wrong() == 0);
    }
    {
      INFO("PM4 queue on GPU 1");
      auto pk = exe.try_get_untyped_kernel("vadd");
      REQUIRE(pk.has_value());
      auto q = g1.make_queue(aq::pm4, {.wait = blocking});
      vadd_run v(g1, 50'003);
      const auto seq = q.dispatch(*pk, rt::grid{v.n}, rt::block{128}, v.a, v.b, v.c, v.n);
      auto [w, took] = timed([&] { return q.try_wait(seq, wait_timeout); });
      REQUIRE_MESSAGE(w.has_value(), std::string(w.detail()));
      CHECK_MESSAGE(took < woken_within, "the blocking wait was not woken by the KFD event");
      CHECK(q.completed() == seq.value());
      CHECK(v.wrong() == 0);
      // The command's last packet (RELEASE_MEM into the event mailbox) ran too: the MEC is alive.
      const auto stop = q.fault();
      CHECK_MESSAGE(!stop.has_value(), (stop ? std::string(stop->detail()) : std::string()));
      vadd_run v2(g1, 777);
      const auto seq2 = q.dispatch(*pk, rt::grid{v2.n}, rt::block{64}, v2.a, v2.b, v2.c, v2.n);
      auto [w2, took2] = timed([&] { return q.try_wait(seq2, wait_timeout); });
      REQUIRE_MESSAGE(w2.has_value(), std::string(w2.detail()));
      CHECK(took2 < woken_within);
      CHECK(v2.wrong() == 0);
    }
    {
      INFO("a pooled signal of GPU 1 as a dispatch's completion signal");
      auto q = g1.make_queue(aq::aql, {.slots = 16, .wait = blocking});
      auto sig = g1.make_signal(1);
      vadd_run v(g1, 4096);
      rt::dispatch_options o;
      o.completion_signal = sig.ref();
      REQUIRE(q.try_dispatch_with(o, vadd, rt::grid{v.n}, rt::block{64}, v.a, v.b, v.c, v.n).has_value());
      auto [w, took] = timed([&] { return sig.try_wait_eq(0, wait_timeout, blocking); });
      REQUIRE_MESSAGE(w.has_value(), std::string(w.detail()));
      CHECK(*w == 0);
      CHECK_MESSAGE(took < woken_within, "the blocking signal wait was not woken by the KFD event");
      CHECK(v.wrong() == 0);
    }
  }
}

TEST_CASE("both GPUs dispatch at once (AQL and PM4 on each), blocking waits, every element checked") {
  for (const std::string machine : {"2*rx7900xtx", "mi300x,rx7900xtx"}) {
    CAPTURE(machine);
    auto sys = rt::system::open({.device = rt::device_choice::emulated, .machine = machine});
    REQUIRE(sys.agents().size() == 2);
    constexpr std::uint32_t rounds = 4;
    // Everything that allocates or frees is made here and freed after the join: the threads
    // below only dispatch, wait and verify. (kfd::buffer releases a buffer's VA before its
    // FREE_MEMORY_OF_GPU, so an allocation racing a free of the same system can be handed the
    // VA of a BO not yet freed and get EINVAL — a kfd/ ordering issue outside this test.)
    struct lane {
      rt::executable exe;
      rt::untyped_kernel vadd;
      rt::untyped_kernel pk;
      rt::queue aql;
      rt::pm4_queue pm4;
      std::vector<std::uint32_t> sizes;
      std::deque<vadd_run> runs;  // per round: the AQL run, then the PM4 run
      std::string error;
      std::uint32_t wrong = 0, checked = 0;
      std::chrono::steady_clock::duration slowest{};
    };
    std::deque<lane> lanes;
    for (std::size_t g = 0; g < 2; ++g) {
      const rt::agent& gpu = sys.agents()[g];
      auto exe = aq::emu::load(gpu, test_kernels());
      auto vadd = exe.get_untyped_kernel("vadd");
      auto pk = exe.try_get_untyped_kernel("vadd");
      REQUIRE(pk.has_value());
      auto& l = lanes.emplace_back(lane{std::move(exe), std::move(vadd), std::move(*pk),
                                        gpu.make_queue(aq::aql, {.slots = 32, .wait = blocking}),
                                        gpu.make_queue(aq::pm4, {.wait = blocking}), {}, {}, {}, 0, 0, {}});
      for (std::uint32_t round = 0; round < rounds; ++round) {
        const std::uint32_t n = 8192 + 1000 * round + static_cast<std::uint32_t>(g);
        l.sizes.push_back(n);
        l.runs.emplace_back(gpu, n);
        l.runs.emplace_back(gpu, n);
      }
    }
    auto work = [&](lane& l) {
      for (std::uint32_t round = 0; round < rounds; ++round) {
        const std::uint32_t n = l.sizes[round];
        vadd_run& va = l.runs[2 * round];
        vadd_run& vp = l.runs[2 * round + 1];
        auto ia = l.aql.try_dispatch(l.vadd, rt::grid{n}, rt::block{64}, va.a, va.b, va.c, n);
        auto ip = l.pm4.try_dispatch(l.pk, rt::grid{n}, rt::block{128}, vp.a, vp.b, vp.c, n);
        if (!ia || !ip) return void(l.error = std::string(ia ? ip.detail() : ia.detail()));
        auto [wa, ta] = timed([&] { return l.aql.try_wait(*ia, wait_timeout); });
        auto [wp, tp] = timed([&] { return l.pm4.try_wait(*ip, wait_timeout); });
        if (!wa) return void(l.error = "AQL: " + std::string(wa.detail()));
        if (!wp) return void(l.error = "PM4: " + std::string(wp.detail()));
        l.slowest = std::max({l.slowest, ta, tp});
        l.wrong += va.wrong() + vp.wrong();
        l.checked += 2 * n;
      }
    };
    std::thread t1(work, std::ref(lanes[1]));
    work(lanes[0]);
    t1.join();
    for (std::size_t g = 0; g < 2; ++g) {
      CAPTURE(g);
      CHECK_MESSAGE(lanes[g].error.empty(), lanes[g].error);
      CHECK(lanes[g].checked == 2 * (4 * 8192 + 6000 + 4 * static_cast<std::uint32_t>(g)));
      CHECK(lanes[g].wrong == 0);
      CHECK_MESSAGE(lanes[g].slowest < woken_within, "a blocking wait was not woken by the KFD event");
    }
  }
}

}  // namespace AQ_UNITY_ID
