// runtime: one suite over every device model (tests/support/device_models.hpp) — the emulator's
// presets (gfx942, gfx1100, gfx90a, gfx1030: each its own SDMA version, PM4 target and queue
// sizes) and the Linux device, which runs only where /dev/kfd exists and is otherwise reported as
// Skipped by ctest (runtime.device_models_linux). What runs here is what both models do the same
// way through the same code: the system and its agents, memory, SDMA copies and fills, AQL
// barrier packets gated by a signal, PM4 queues of the agent's target, tickets and timeouts.
// Kernel dispatch needs code for the model's ISA: host kernels, emulated models only, below.
// Expected values: copy/fill results from the host inputs (memcpy, the fill word); the PRIV
// policy from spec/kfd.md §4 (arch::needs_pm4_priv); SDMA versions from spec/packets.md §3.2.
#include "device_models.hpp"
#include "host_kernels.hpp"

#include <aqueduct/runtime.hpp>
#include <aqueduct/runtime/pm4_queue.hpp>
#include <aqueduct/runtime/sdma_queue.hpp>

#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

namespace aq = aqueduct;
namespace rt = aqueduct::runtime;
using namespace std::chrono_literals;

TEST_CASE_TEMPLATE("the system lists its GPUs, each of a known family with its ISA name", M, AQ_TEST_DEVICE_MODELS) {
  auto sys = aq_test::open_model<M>();
  if (!sys) return;
  REQUIRE_FALSE(sys->agents().empty());
  for (const rt::agent& gpu : sys->agents()) {
    CAPTURE(gpu.gfx_name());
    CHECK(aq::arch::family_of(gpu.gfx_target_version()).has_value());
    CHECK(gpu.gfx_name().rfind("gfx", 0) == 0);
    CHECK(gpu.compute_units() > 0);
    CHECK(gpu.emulated() == M::emulated);
  }
}

TEST_CASE_TEMPLATE("SDMA: a fill and a copy through device memory come back byte for byte", M, AQ_TEST_DEVICE_MODELS) {
  auto sys = aq_test::open_model<M>();
  if (!sys) return;
  const rt::agent& gpu = sys->default_agent();
  constexpr std::size_t n = 1 << 16;
  auto host_in = gpu.alloc<std::uint32_t>(n, rt::memory_kind::host);
  auto dev = gpu.alloc<std::uint32_t>(n, rt::memory_kind::device);
  auto host_out = gpu.alloc<std::uint32_t>(n, rt::memory_kind::host);
  for (std::size_t i = 0; i < n; ++i) host_in.data()[i] = static_cast<std::uint32_t>(i * 2654435761u);
  std::memset(host_out.data(), 0, n * 4);
  auto q = gpu.make_queue(aq::sdma);
  const auto filled = q.try_fill(host_out.va(), 0xA5A5F00Du, n * 4);
  REQUIRE(filled.has_value());
  q.wait(*filled, 10s);
  for (std::size_t i = 0; i < n; i += 997) CHECK(host_out.data()[i] == 0xA5A5F00Du);
  REQUIRE(q.try_copy(dev.va(), host_in.va(), n * 4).has_value());
  const auto back = q.try_copy(host_out.va(), dev.va(), n * 4);
  REQUIRE(back.has_value());
  REQUIRE(q.try_wait(*back, 10s).has_value());
  CHECK(std::memcmp(host_out.data(), host_in.data(), n * 4) == 0);
  CHECK(q.completed() == back->value());  // the last packet submitted is the last one done
}

TEST_CASE_TEMPLATE("AQL: a barrier-AND held by a signal completes only once the host releases it", M, AQ_TEST_DEVICE_MODELS) {
  auto sys = aq_test::open_model<M>();
  if (!sys) return;
  const rt::agent& gpu = sys->default_agent();
  auto q = gpu.make_queue(aq::aql, {.slots = 64});
  auto gate = gpu.make_signal(1);
  const aq::sync::signal_ref deps[] = {gate.ref()};
  const auto held = q.try_barrier_and(deps);
  REQUIRE(held.has_value());
  auto early = q.try_wait(*held, 50ms);
  REQUIRE_FALSE(early.has_value());
  CHECK(early.get_failure() == aq::errc::timeout);
  CHECK(std::string(early.detail()).find("BARRIER_AND") != std::string::npos);  // the stalled packet, decoded
  gate.store(0);
  REQUIRE(q.try_wait(*held, 10s).has_value());
  // Retired through the barrier (a blocking wait may add its own wake barrier after it).
  CHECK(q.read_index() >= held->value() + 1);
  // A ticket of another queue of the same kind is refused at the wait, naming both queues.
  auto other = gpu.make_queue(aq::aql, {.slots = 16});
  const auto refused = other.try_wait(*held, 1s);
  REQUIRE_FALSE(refused.has_value());
  CHECK(refused.get_failure() == aq::errc::invalid_argument);
}

// Issue 10 item 6: a barrier-AND takes runtime::signals, and an empty one (moved-from) is
// refused instead of becoming a null handle in the packet, which the packet processor reads as
// "no dependency" (hsa.h, hsa_barrier_and_packet_t: "Signals with a handle value of 0 are ...
// interpreted by the packet processor as satisfied dependencies"), so the barrier would complete
// at once and nothing would be held. The control: the live signal the empty one was
// moved into does hold the queue until the host releases it.
TEST_CASE_TEMPLATE("AQL: a barrier-AND on a moved-from signal is invalid_argument, not \"no dependency\"", M, AQ_TEST_DEVICE_MODELS) {
  auto sys = aq_test::open_model<M>();
  if (!sys) return;
  const rt::agent& gpu = sys->default_agent();
  auto q = gpu.make_queue(aq::aql, {.slots = 64});
  auto gate = gpu.make_signal(1);
  auto live = std::move(gate);  // `gate` is empty now
  const auto refused = q.try_barrier_and({gate});
  REQUIRE_FALSE(refused.has_value());
  CHECK(refused.get_failure() == aq::errc::invalid_argument);
  const std::string why(refused.detail());
  CHECK_MESSAGE(why.find("dependency 0") != std::string::npos, why);
  CHECK_MESSAGE(why.find("moved-from") != std::string::npos, why);
  // The empty one among live ones is named by its position; nothing was published.
  auto other = gpu.make_signal(0);
  const auto second = q.try_barrier_and({other, gate});
  REQUIRE_FALSE(second.has_value());
  CHECK(std::string(second.detail()).find("dependency 1") != std::string::npos);
  CHECK(q.write_index() == 0);
  // Control: the live signal holds the queue until the host releases it.
  const auto held = q.try_barrier_and({live, other});
  REQUIRE(held.has_value());
  CHECK(q.try_wait(*held, 50ms).get_failure() == aq::errc::timeout);
  live.store(0);
  CHECK(q.try_wait(*held, 10s).has_value());
}

// The raw spelling (sync::signal_ref, e.g. an amd_signal of the caller's own memory): a null
// reference is refused too. Before the fix it was published as "no dependency": the barrier
// completed although nothing had been released (checked on the unfixed runtime).
TEST_CASE_TEMPLATE("AQL: a barrier-AND on a null signal reference is invalid_argument", M, AQ_TEST_DEVICE_MODELS) {
  auto sys = aq_test::open_model<M>();
  if (!sys) return;
  const rt::agent& gpu = sys->default_agent();
  auto q = gpu.make_queue(aq::aql, {.slots = 64});
  auto gate = gpu.make_signal(1);
  const aq::sync::signal_ref deps[] = {gate.ref(), aq::sync::signal_ref{}};
  const auto refused = q.try_barrier_and(std::span<const aq::sync::signal_ref>(deps));
  if (refused.has_value()) {  // the unfixed runtime: the null handle was "no dependency"
    (void)q.try_wait(*refused, 50ms);
    gate.store(0);
    q.finish(10s);
  }
  REQUIRE_FALSE(refused.has_value());
  CHECK(refused.get_failure() == aq::errc::invalid_argument);
  CHECK(std::string(refused.detail()).find("dependency 1") != std::string::npos);
  CHECK(q.write_index() == 0);
}

TEST_CASE_TEMPLATE("PM4: a queue of the agent's target; PRIV only on the GFX11 parts that need it", M, AQ_TEST_DEVICE_MODELS) {
  auto sys = aq_test::open_model<M>();
  if (!sys) return;
  const rt::agent& gpu = sys->default_agent();
  auto q = gpu.make_queue(aq::pm4);
  CHECK(q.sets_pm4_priv() == aq::arch::needs_pm4_priv(gpu.gfx_target_version(),
                                                      static_cast<std::uint32_t>(gpu.node().properties.simd_arrays_per_engine)));
  CHECK(q.target_name() == gpu.target_name());
  REQUIRE(q.try_finish(5s).has_value());  // nothing submitted: done at once
  CHECK(q.submitted() == 0);
  CHECK(q.emulated() == M::emulated);
}

TEST_CASE_TEMPLATE("host kernels: the same dispatch through AQL and PM4 gives the host reference", M, AQ_TEST_EMULATED_MODELS) {
  auto sys = aq_test::open_model<M>();
  if (!sys) return;
  const rt::agent& gpu = sys->default_agent();
  auto exe = aq::emu::load(gpu, rt_test::test_kernels());
  auto vadd = rt_test::get<rt_test::vadd_kernel>(exe, "vadd");
  constexpr std::uint32_t n = 3000;
  auto a = gpu.alloc<float>(n, rt::memory_kind::host), b = gpu.alloc<float>(n, rt::memory_kind::host);
  auto c1 = gpu.alloc<float>(n, rt::memory_kind::host), c2 = gpu.alloc<float>(n, rt::memory_kind::host);
  for (std::uint32_t i = 0; i < n; ++i) {
    a.data()[i] = static_cast<float>(i);
    b.data()[i] = 0.5f * static_cast<float>(i) - 3.0f;
  }
  auto aql = gpu.make_queue(aq::aql);
  aql.wait(aql.dispatch(vadd, rt::grid{n}, rt::block{64}, a, b, c1, n), 20s);
  auto pm4 = gpu.make_queue(aq::pm4);
  pm4.wait(pm4.dispatch(vadd, rt::grid{n}, rt::block{64}, a, b, c2, n), 20s);
  for (std::uint32_t i = 0; i < n; ++i) {
    const float want = static_cast<float>(i) + (0.5f * static_cast<float>(i) - 3.0f);
    if (c1.data()[i] != want || c2.data()[i] != want) {
      CHECK(c1.data()[i] == want);
      CHECK(c2.data()[i] == want);
      break;
    }
  }
}

}  // namespace AQ_UNITY_ID
