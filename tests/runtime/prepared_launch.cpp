// runtime: a launch prepared once per kernel and block shape (queue::prepare, issue 11). Its
// dispatches write the kernel-dispatch packet hsa.h describes — the same bytes as
// dispatch(k, grid, block, args...) but for the slot's kernarg address and signal — with the
// setup's dimension count taken from the block AND the grid; the kernel runs with the kernargs
// given; what can change between calls (the queue it is given to, the grid, whether the
// executable is alive) is checked on every call and refused with a clear error, nothing
// submitted; what is fixed (block, kernarg size against the queue's slots) is refused at prepare.
// The packets are read back from the ring while a gate kernel holds the emulated processor, so
// no header has been consumed yet.
#include "host_kernels.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

namespace aq = aqueduct;
namespace rt = aqueduct::runtime;
using namespace rt_test;
using namespace std::chrono_literals;

namespace {

std::atomic<bool> gate_open{false}, gate_running{false};
void gate(aq::emu::workgroup_context&) {
  gate_running.store(true, std::memory_order_release);
  gate_open.wait(false, std::memory_order_acquire);
}
void hold(rt::queue& q, const rt::kernel<>& g) {
  gate_open.store(false);
  gate_running.store(false);
  (void)q.dispatch(g, rt::grid{1}, rt::block{1});
  while (!gate_running.load(std::memory_order_acquire)) std::this_thread::yield();
}
void release() {
  gate_open.store(true, std::memory_order_release);
  gate_open.notify_all();
}

// vadd's parameters, no effect: any workgroup shape (vadd itself walks lanes along X only).
void shaped(aq::emu::workgroup_context&) {}

aq::emu::host_code_object kernels() {
  auto c = test_kernels();
  c.kernels.push_back(aq::emu::host_kernel::with_args<>("gate", gate));
  c.kernels.push_back(aq::emu::host_kernel::with_args<const float*, const float*, float*, std::uint32_t>("shaped", shaped));
  return c;
}

bool contains(std::string_view text, std::string_view what) { return text.find(what) != std::string_view::npos; }

// Ring slot `index` as the processor will read it (the processor is held: nothing consumed).
aq::abi::kernel_dispatch_packet slot_of(rt::queue& q, std::uint64_t index) {
  const auto* ring = reinterpret_cast<const aq::abi::kernel_dispatch_packet*>(q.aql().descriptor()->hsa.base_address);
  aq::abi::kernel_dispatch_packet p;
  std::memcpy(&p, ring + (index & (q.size() - 1)), sizeof p);
  return p;
}

// hsa.h: HSA_PACKET_TYPE_KERNEL_DISPATCH = 2 at HSA_PACKET_HEADER_TYPE (bit 0), barrier bit 8,
// HSA_FENCE_SCOPE_SYSTEM = 2 at HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE (bit 9) and
// HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE (bit 11); setup: dimensions in bits 0..1
// (HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS).
constexpr std::uint16_t system_dispatch_header = 2 | 2 << 9 | 2 << 11;

struct shape {
  rt::grid g;
  rt::block b;
  std::uint16_t dims;  // the highest dimension whose grid or block size is > 1
};

}  // namespace

TEST_CASE("a prepared launch writes the packet hsa.h describes: dispatch(k, grid, block)'s bytes, the dimensions from block and grid") {
  auto sys = rt::system::open({.machine = "rx7900xtx"});
  const auto& gpu = sys.default_agent();
  auto exe = aq::emu::load(gpu, kernels());
  auto g = exe.get_kernel<>("gate");
  auto vadd = exe.get_kernel<const float*, const float*, float*, std::uint32_t>("vadd");
  auto kernel = exe.get_kernel<const float*, const float*, float*, std::uint32_t>("shaped");
  auto q = gpu.make_queue(aq::aql, {.slots = 64});
  constexpr std::uint32_t n = 300;
  auto a = gpu.alloc<float>(n, rt::memory_kind::host), b = gpu.alloc<float>(n, rt::memory_kind::host),
       c = gpu.alloc<float>(n, rt::memory_kind::host);
  for (std::uint32_t i = 0; i < n; ++i) a[i] = float(i), b[i] = 0.25f, c[i] = -1;

  const shape shapes[] = {
      {rt::grid{300}, rt::block{64}, 1},        {rt::grid{16, 8}, rt::block{8, 4}, 2},
      {rt::grid{4, 2, 4}, rt::block{4, 2, 2}, 3}, {rt::grid{64, 1, 3}, rt::block{64}, 3},   // z from the grid only
      {rt::grid{64, 5}, rt::block{64}, 2},       {rt::grid{64}, rt::block{1, 1, 2}, 3},   // z from the block only
  };
  hold(q, g);
  for (const shape& s : shapes) {
    CAPTURE(s.dims);
    CAPTURE(s.g.y);
    const auto launch = q.prepare(kernel, s.b);
    CHECK(launch.shape().x == s.b.x);
    const auto t1 = q.dispatch(launch, s.g, a, b, c, n);
    const auto t2 = q.dispatch(kernel, s.g, s.b, a, b, c, n);
    const auto p = slot_of(q, t1.value());
    const auto r = slot_of(q, t2.value());
    CHECK(p.header == system_dispatch_header);
    CHECK(p.setup == s.dims);
    CHECK(p.workgroup_size_x == s.b.x);
    CHECK(p.workgroup_size_y == s.b.y);
    CHECK(p.workgroup_size_z == s.b.z);
    CHECK(p.reserved0 == 0);
    CHECK(p.grid_size_x == s.g.x);
    CHECK(p.grid_size_y == s.g.y);
    CHECK(p.grid_size_z == s.g.z);
    CHECK(p.private_segment_size == 0);  // a host kernel declares no scratch and no LDS
    CHECK(p.group_segment_size == 0);
    CHECK(p.kernel_object == kernel.object().value);
    CHECK(p.kernarg_address != 0);
    CHECK(p.reserved2 == 0);
    CHECK(p.completion_signal == q.slot_signal_handle(t1.value()));
    // The plain dispatch: the same bytes but for its own slot's kernarg area and signal.
    CHECK(r.completion_signal == q.slot_signal_handle(t2.value()));
    CHECK(r.kernarg_address != p.kernarg_address);
    auto same = r;
    same.kernarg_address = p.kernarg_address;
    same.completion_signal = p.completion_signal;
    CHECK(std::memcmp(&same, &p, sizeof p) == 0);
  }
  // And vadd through a prepared launch: the kernel ran with these kernargs.
  (void)q.dispatch(q.prepare(vadd, rt::block{64}), rt::grid{n}, a, b, c, n);
  release();
  REQUIRE(q.try_finish(20s));
  std::uint32_t wrong = 0;
  for (std::uint32_t i = 0; i < n; ++i) wrong += c[i] != float(i) + 0.25f;
  CHECK(wrong == 0);
}

TEST_CASE("a prepared launch runs the kernel with the arguments of each call, many times over a wrapping ring") {
  auto sys = rt::system::open({.machine = "rx7900xtx"});
  const auto& gpu = sys.default_agent();
  auto exe = aq::emu::load(gpu, kernels());
  auto store = exe.get_kernel<std::uint32_t*, std::uint32_t, std::uint32_t>("store");
  auto q = gpu.make_queue(aq::aql, {.slots = 16});
  constexpr std::uint32_t n = 1000;
  auto out = gpu.alloc<std::uint32_t>(n, rt::memory_kind::host);
  for (std::uint32_t i = 0; i < n; ++i) out[i] = 0;
  const auto launch = q.prepare(store, rt::block{1});
  for (std::uint32_t i = 0; i < n; ++i) REQUIRE(q.try_dispatch(launch, rt::grid{1}, out, i, 3 * i + 7));
  REQUIRE(q.try_finish(20s));
  std::uint32_t wrong = 0;
  for (std::uint32_t i = 0; i < n; ++i) wrong += out[i] != 3 * i + 7;
  CHECK(wrong == 0);
}

TEST_CASE("a prepared launch: what changes per call is checked per call, what is fixed at prepare; errors say what to change") {
  auto sys = rt::system::open({.machine = "rx7900xtx"});
  const auto& gpu = sys.default_agent();
  std::optional<rt::executable> exe(aq::emu::load(gpu, kernels()));
  auto store = exe->get_kernel<std::uint32_t*, std::uint32_t, std::uint32_t>("store");
  auto q = gpu.make_queue(aq::aql, {.slots = 16});
  auto other = gpu.make_queue(aq::aql, {.slots = 16});
  auto out = gpu.alloc<std::uint32_t>(4, rt::memory_kind::host);
  const auto launch = q.prepare(store, rt::block{1});
  REQUIRE(static_cast<bool>(launch));
  CHECK(launch.kernel_name() == "store");

  SUBCASE("on another queue") {
    const std::uint64_t before = other.write_index();
    auto r = other.try_dispatch(launch, rt::grid{1}, out, 0u, 1u);
    REQUIRE_FALSE(r);
    CHECK(r.get_failure() == aq::errc::invalid_argument);
    CHECK(contains(r.detail(), "prepared on another queue"));
    CHECK(other.write_index() == before);
  }
  SUBCASE("a zero grid dimension") {
    const std::uint64_t before = q.write_index();
    auto r = q.try_dispatch(launch, rt::grid{4, 0, 1}, out, 0u, 1u);
    REQUIRE_FALSE(r);
    CHECK(r.get_failure() == aq::errc::invalid_argument);
    CHECK(contains(r.detail(), "grid 4x0x1"));
    CHECK(contains(r.detail(), "at least 1"));
    CHECK(q.write_index() == before);
  }
  SUBCASE("an empty launch") {
    rt::prepared_launch<std::uint32_t*, std::uint32_t, std::uint32_t> none;
    CHECK_FALSE(static_cast<bool>(none));
    auto r = q.try_dispatch(none, rt::grid{1}, out, 0u, 1u);
    REQUIRE_FALSE(r);
    CHECK(contains(r.detail(), "empty"));
  }
  SUBCASE("the executable destroyed after prepare") {
    REQUIRE(q.try_finish(20s));
    exe.reset();
    const std::uint64_t before = q.write_index();
    auto r = q.try_dispatch(launch, rt::grid{1}, out, 0u, 1u);
    REQUIRE_FALSE(r);
    CHECK(contains(r.detail(), "executable was destroyed"));
    CHECK(q.write_index() == before);
  }
  SUBCASE("a launch outlives its queue") {
    auto gone = gpu.make_queue(aq::aql, {.slots = 16});
    auto l2 = gone.prepare(store, rt::block{1});
    gone.destroy();
    auto fresh = gpu.make_queue(aq::aql, {.slots = 16});
    auto r = fresh.try_dispatch(l2, rt::grid{1}, out, 0u, 1u);
    REQUIRE_FALSE(r);
    CHECK(contains(r.detail(), "prepared on another queue"));
  }
  SUBCASE("prepare: a zero block dimension") {
    auto r = q.try_prepare(store, rt::block{64, 0, 1});
    REQUIRE_FALSE(r);
    CHECK(r.get_failure() == aq::errc::invalid_argument);
    CHECK(contains(r.detail(), "block 64x0x1"));
  }
  SUBCASE("prepare: an empty kernel") {
    rt::kernel<std::uint32_t*, std::uint32_t, std::uint32_t> none;
    auto r = q.try_prepare(none, rt::block{1});
    REQUIRE_FALSE(r);
    CHECK(contains(r.detail(), "empty"));
  }
  SUBCASE("prepare on an empty queue") {
    rt::queue empty;
    auto r = empty.try_prepare(store, rt::block{1});
    REQUIRE_FALSE(r);
    CHECK(contains(r.detail(), "this queue is empty"));
  }
  REQUIRE(q.try_finish(20s));
}

}  // namespace AQ_UNITY_ID
