// runtime: completion is the completion signal, not the read index. The HSA specification lets a
// packet processor advance read_dispatch_id as soon as it has launched a packet
// (ROCm/ROCR-Runtime#105: "The read pointer may advance any time after the dispatch packet has
// been initiated"), and packets without the barrier bit complete in any order; the emulated
// processor does both (emu/aql_processor.hpp). So a wait must not return while its kernel runs,
// a later packet may complete first, and a kernarg slot must not be rewritten while the kernel
// that reads it runs. The kernels below are held on a host flag: they run until the test lets go.
#include "host_kernels.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <tuple>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

namespace aq = aqueduct;
namespace rt = aqueduct::runtime;
using namespace rt_test;
using namespace std::chrono_literals;

namespace {

// held(gate, out, index, value): waits until *gate != 0, then reads its kernargs AGAIN (a kernel
// may read them at any time while it runs) and stores out[index] = value.
struct held_args {
  std::uint64_t gate, out;
  std::uint32_t index, value;
};
void held(aq::emu::workgroup_context& ctx) {
  const aq::emu::host_workgroup wg(ctx);
  const auto first = wg.args<held_args>();
  while (std::atomic_ref<std::uint32_t>(*ctx.ptr<std::uint32_t>(first.gate)).load(std::memory_order_acquire) == 0)
    std::this_thread::yield();
  const auto now = wg.args<held_args>();
  ctx.store<std::uint32_t>(now.out + 4ull * now.index, now.value);
}

aq::emu::host_code_object kernels() {
  aq::emu::host_code_object c = test_kernels();
  c.kernels.push_back(aq::emu::host_kernel::with_args<std::uint32_t*, std::uint32_t*, std::uint32_t, std::uint32_t>("held", held));
  return c;
}

template <class Pred>
bool within(std::chrono::milliseconds limit, Pred pred) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (!pred() && std::chrono::steady_clock::now() < end) std::this_thread::sleep_for(1ms);
  return pred();
}

void open_gate(rt::buffer<std::uint32_t>& gate) { std::atomic_ref<std::uint32_t>(gate[0]).store(1, std::memory_order_release); }

// An emulated MI300X with the held kernel loaded, a closed gate, `out` zeroed, a 16-slot queue.
struct rig {
  explicit rig(std::size_t out_n = 4) : out(gpu.alloc<std::uint32_t>(out_n, rt::memory_kind::host)) {
    gate[0] = 0;
    for (std::size_t i = 0; i < out_n; ++i) out[i] = 0;
  }
  rt::system sys = rt::system::open({.machine = "mi300x"});
  const rt::agent& gpu = sys.default_agent();
  rt::executable exe = aq::emu::load(gpu, kernels());
  rt::untyped_kernel k = exe.get_untyped_kernel("held");
  rt::buffer<std::uint32_t> gate = gpu.alloc<std::uint32_t>(1, rt::memory_kind::host);
  rt::buffer<std::uint32_t> out;
  rt::queue q = gpu.make_queue(aq::aql, {.slots = 16});
  auto parts() { return std::tie(gpu, exe, k, gate, out, q); }
};

}  // namespace

TEST_CASE("a wait returns when the kernel has completed, not when the read index passed it") {
  rig rg;
  auto [gpu, exe, k, gate, out, q] = rg.parts();
  // Two workgroups: the processor's workers run them, the processor goes on.
  const auto t = q.dispatch(k, rt::grid{2}, rt::block{1}, gate, out, 0u, 7u);
  // Control: the device launched it — the read index is past it — yet it runs.
  REQUIRE(within(5s, [&] { return q.read_index() > t.value(); }));
  auto early = q.try_wait(t, 200ms);
  REQUIRE_FALSE(early.has_value());
  CHECK(early.error() == aq::errc::timeout);
  CHECK_FALSE(q.completed(t));
  auto early_finish = q.try_finish(100ms);
  REQUIRE_FALSE(early_finish.has_value());
  CHECK(early_finish.error() == aq::errc::timeout);
  CHECK(out[0] == 0u);
  open_gate(gate);
  REQUIRE(q.try_wait(t, 10s).has_value());
  CHECK(q.completed(t));
  CHECK(out[0] == 7u);  // what the kernel stored is visible when the wait returns
  REQUIRE(q.try_finish(10s).has_value());
}

TEST_CASE("packets complete out of order: a later short kernel's wait returns while an earlier one runs") {
  rig rg;
  auto [gpu, exe, k, gate, out, q] = rg.parts();
  auto store = exe.get_untyped_kernel("store");
  const auto long_one = q.dispatch(k, rt::grid{2}, rt::block{1}, gate, out, 0u, 7u);
  const auto short_one = q.dispatch(store, rt::grid{1}, rt::block{1}, out, 1u, 9u);  // no barrier bit
  // A queue that judged packets by one in-order counter would wait for the held kernel here.
  REQUIRE(q.try_wait(short_one, 5s).has_value());
  CHECK(out[1] == 9u);
  CHECK_FALSE(q.try_wait(long_one, 100ms).has_value());
  CHECK(out[0] == 0u);
  open_gate(gate);
  REQUIRE(q.try_wait(long_one, 10s).has_value());
  CHECK(out[0] == 7u);
}

TEST_CASE("a kernarg slot is not reused while the kernel that reads it runs") {
  rig rg(32);
  auto [gpu, exe, k, gate, out, q] = rg.parts();
  auto open = gpu.alloc<std::uint32_t>(1, rt::memory_kind::host);  // an open gate for the others
  open[0] = 1;
  const auto first = q.dispatch(k, rt::grid{2}, rt::block{1}, gate, out, 0u, 111u);  // slot 0, held
  for (std::uint32_t i = 1; i < 16; ++i) q.dispatch(k, rt::grid{1}, rt::block{1}, open, out, i, 100 + i);
  // Packet 16 goes to slot 0 again: its kernargs would replace the held kernel's.
  std::atomic<bool> done{false};
  rt::aql_ticket reused;
  std::thread producer([&] {
    rt::dispatch_options o;
    o.timeout = 30s;
    auto r = q.try_dispatch_with(o, k, rt::grid{1}, rt::block{1}, open, out, 16u, 116u);
    if (r) reused = *r;
    done.store(r.has_value(), std::memory_order_release);
  });
  REQUIRE(within(5s, [&] { return q.read_index() >= 16; }));  // the others ran; packet 0 runs on
  std::this_thread::sleep_for(200ms);
  CHECK_FALSE(done.load(std::memory_order_acquire));  // it waits for packet 0 to complete
  CHECK(out[0] == 0u);
  open_gate(gate);
  producer.join();
  REQUIRE(done.load());
  CHECK(reused.value() == 16);
  REQUIRE(q.try_wait(first, 10s).has_value());
  REQUIRE(q.try_finish(10s).has_value());
  CHECK(out[0] == 111u);  // the held kernel read its own kernargs after the gate
  for (std::uint32_t i = 1; i <= 16; ++i) CHECK(out[i] == 100 + i);
}

TEST_CASE("a caller's completion signal is decremented only after the dispatch completed") {
  rig rg;
  auto [gpu, exe, k, gate, out, q] = rg.parts();
  auto sig = gpu.make_signal(1);
  rt::dispatch_options o;
  o.completion_signal = sig.ref();
  const auto t = q.try_dispatch_with(o, k, rt::grid{2}, rt::block{1}, gate, out, 2u, 5u);
  REQUIRE(t.has_value());
  REQUIRE(within(5s, [&] { return q.read_index() > t->value(); }));
  std::this_thread::sleep_for(100ms);
  CHECK(sig.load() == 1);
  CHECK_FALSE(q.completed(*t));
  open_gate(gate);
  REQUIRE(sig.try_wait_eq(0, 10s).has_value());
  CHECK(out[2] == 5u);
  REQUIRE(q.try_wait(*t, 10s).has_value());
  REQUIRE(q.try_finish(10s).has_value());  // the signalling barrier has no slot signal: a marker proves it
}

TEST_CASE("raw packets through aql(): a wait and finish see their completion through a marker") {
  rig rg;
  auto [gpu, exe, k, gate, out, q] = rg.parts();
  // A held dispatch, then a raw barrier-AND with no completion signal (the queue cannot see it).
  const auto t = q.dispatch(k, rt::grid{2}, rt::block{1}, gate, out, 3u, 4u);
  auto r = q.aql().try_reserve(1);
  REQUIRE(r.has_value());
  const auto raw = q.ticket_for(r->index(0));
  aqueduct::ring::barrier_and b;
  b.barrier = true;
  r->write(0, aqueduct::ring::make_packet(b));
  r->publish();
  CHECK_FALSE(q.try_wait(raw, 100ms).has_value());
  CHECK_FALSE(q.try_finish(100ms).has_value());
  open_gate(gate);
  REQUIRE(q.try_wait(raw, 10s).has_value());
  REQUIRE(q.try_finish(10s).has_value());
  CHECK(q.completed(t));
  CHECK(out[3] == 4u);
}

}  // namespace AQ_UNITY_ID
