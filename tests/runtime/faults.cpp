// runtime: regression tests for the faults of issue 13 (reliability) that the public API reaches.
// Each case was seen to fail (wrong result, crash or hang) before its fix; the expected values come
// from outside the code: the x86-64 address space, the HSA AQL packet definition (group_segment_size
// is the whole group segment, hsa.h), the CU's 64 KiB of LDS (spec/kfd.md, the emulator presets
// model the same), the KFD uapi (kfd_ioctl_create_queue_args::ring_size is a __u32).
#include "host_kernels.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <sys/mman.h>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

namespace aq = aqueduct;
namespace rt = aqueduct::runtime;
namespace emu = aqueduct::emu;
using namespace rt_test;
using namespace std::chrono_literals;

namespace {

bool has(const aq::result<void>& r, std::string_view what) {
  return !r.has_value() && std::string(r.detail()).find(what) != std::string::npos;
}
template <class T>
bool has(const aq::result<T>& r, std::string_view what) {
  return !r.has_value() && std::string(r.detail()).find(what) != std::string::npos;
}

// lds(out): out[0] = the LDS bytes the CP gave the workgroup.
struct lds_args {
  std::uint64_t out;
};
inline void lds_probe(emu::workgroup_context& ctx) {
  const emu::host_workgroup wg(ctx);
  ctx.store<std::uint32_t>(wg.args<lds_args>().out, static_cast<std::uint32_t>(ctx.lds().size()));
}

// count(out): atomically counts the workgroups that ran, and the work-items they held.
struct count_args {
  std::uint64_t out;
};
inline void count_items(emu::workgroup_context& ctx) {
  const emu::host_workgroup wg(ctx);
  std::uint64_t items = 0;
  wg.for_each_wave([&](std::uint64_t, std::uint32_t lanes) { items += lanes; });
  auto* p = ctx.ptr<std::uint64_t>(wg.args<count_args>().out, 2, true);
  std::atomic_ref<std::uint64_t>(p[0]).fetch_add(1);
  std::atomic_ref<std::uint64_t>(p[1]).fetch_add(items);
}

emu::host_code_object fault_kernels(std::uint32_t static_lds = 0) {
  emu::host_code_object c = test_kernels();
  c.kernels.push_back(emu::host_kernel::with_args<std::uint32_t*>("lds_probe", lds_probe, static_lds));
  c.kernels.push_back(emu::host_kernel::with_args<std::uint64_t*>("count_items", count_items));
  return c;
}
using lds_kernel = rt::kernel<std::uint32_t*>;
using count_kernel = rt::kernel<std::uint64_t*>;
constexpr auto host = rt::memory_kind::host;

}  // namespace

// Bug 2: 2^64 - 1 MiB bytes used to wrap the VA reservation; the trimming munmap then removed
// unrelated mappings of the process (SIGSEGV). Now a clean error naming the real size.
TEST_CASE("bug 2: try_alloc near 2^64 bytes is an error and unmaps nothing of the process") {
  auto sys = rt::system::open({.machine = "mi300x"});
  const auto& gpu = sys.default_agent();
  // A mapping of ours that must survive (the wrapped reservation used to trim around it).
  void* mine = ::mmap(nullptr, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(mine != MAP_FAILED);
  std::memset(mine, 0x5A, 1 << 20);
  for (std::uint64_t bytes : {~std::uint64_t{0} - (1u << 20) + 1, ~std::uint64_t{0}, ~std::uint64_t{0} - 4095,
                              std::uint64_t{1} << 63}) {
    CAPTURE(bytes);
    auto r = gpu.try_alloc<std::byte>(bytes);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error() == aq::errc::out_of_memory);
    INFO(std::string(r.detail()));
    CHECK(std::string(r.detail()).find(std::to_string(bytes)) != std::string::npos);  // the size asked for, not a wrapped one
  }
  CHECK(static_cast<unsigned char*>(mine)[12345] == 0x5A);
  ::munmap(mine, 1 << 20);
  auto ok = gpu.try_alloc<float>(1024);  // the system still works
  CHECK(ok.has_value());
}

// Bug 6: the AQL packet's group_segment_size is the whole group segment (static + dynamic; hsa.h,
// "group_segment_size ... includes static and dynamic"); the emulator added the descriptor's static
// size again. 40,000 static bytes fit in the CU's 64 KiB.
TEST_CASE("bug 6: 40,000 bytes of static LDS run; dynamic LDS that overflows 32 bits is refused") {
  auto sys = rt::system::open({.machine = "mi300x"});
  const auto& gpu = sys.default_agent();
  auto exe = aq::emu::load(gpu, fault_kernels(40'000));
  auto k = get<lds_kernel>(exe, "lds_probe");
  CHECK(k.info().group_segment_size == 40'000);
  auto out = gpu.alloc<std::uint32_t>(1, host);
  out[0] = 0;
  auto q = gpu.make_queue(rt::aql);
  auto i = q.try_dispatch(k, rt::grid{1}, rt::block{1}, out);
  REQUIRE(i.has_value());
  auto w = q.try_wait(*i, 20s);
  REQUIRE_MESSAGE(w.has_value(), std::string(w.detail()));
  CHECK(out[0] == 40'000u);

  // 40,000 + 0xFFFFFFF0 wraps to 39,984 in 32 bits: must be refused, not run with a wrong size.
  rt::dispatch_options o;
  o.dynamic_lds_bytes = 0xFFFFFFF0u;
  auto bad = q.try_dispatch_with(o, k, rt::grid{1}, rt::block{1}, out);
  REQUIRE_FALSE(bad.has_value());
  CHECK(bad.error() == aq::errc::invalid_argument);
  CHECK(has(bad, "dynamic_lds_bytes"));
  // Over the CU's 64 KiB without wrapping: refused too, before the queue is touched.
  o.dynamic_lds_bytes = 65536 - 40'000 + 4;
  auto over = q.try_dispatch_with(o, k, rt::grid{1}, rt::block{1}, out);
  CHECK(has(over, "65536"));
  o.dynamic_lds_bytes = 65536 - 40'000;  // exactly the limit: runs with all of it
  auto fits = q.try_dispatch_with(o, k, rt::grid{1}, rt::block{1}, out);
  REQUIRE(fits.has_value());
  REQUIRE(q.try_wait(*fits, 20s).has_value());
  CHECK(out[0] == 65536u);
}

// Bug 7: 2^31 x 2^31 x 4 workgroups is 2^64: the count wrapped to 0, nothing ran, and the wait
// reported success. Now the processor refuses the packet (a queue error naming the grid).
TEST_CASE("bug 7: a grid of 2^64 workgroups is a queue error, not a silent success") {
  auto sys = rt::system::open({.machine = "mi300x"});
  const auto& gpu = sys.default_agent();
  auto exe = aq::emu::load(gpu, fault_kernels());
  auto k = get<count_kernel>(exe, "count_items");
  auto out = gpu.alloc<std::uint64_t>(2, host);
  out[0] = out[1] = 0;
  auto q = gpu.make_queue(rt::aql);
  auto i = q.try_dispatch(k, rt::grid{1u << 31, 1u << 31, 4}, rt::block{1, 1, 1}, out);
  REQUIRE(i.has_value());
  auto w = q.try_wait(*i, 20s);
  REQUIRE_FALSE(w.has_value());
  INFO(std::string(w.detail()));
  CHECK(has(w, "workgroups"));
}

// Bug 7 (runtime PM4 path): the workgroup count was rounded up in 32 bits, so grid 0xFFFFFFFF with
// block 1024 became 0 workgroups and the MEC faulted "a dispatch dimension is 0". ceil(0xFFFFFFFF /
// 1024) = 4,194,304 workgroups. PM4 runs full workgroups (2^32 work-items on hardware); the
// emulator's 32-bit grid drops the one work-item with id 0xFFFFFFFF, so 2^32 - 1 here.
TEST_CASE("bug 7: PM4 grid 0xFFFFFFFF with block 1024 runs every work-item") {
  auto sys = rt::system::open({.machine = "mi300x"});
  const auto& gpu = sys.default_agent();
  auto exe = aq::emu::load(gpu, fault_kernels());
  auto k = get<count_kernel>(exe, "count_items");
  auto out = gpu.alloc<std::uint64_t>(2, host);
  out[0] = out[1] = 0;
  auto q = gpu.try_make_queue(rt::pm4);
  REQUIRE(q.has_value());
  auto s = q->try_dispatch(k, rt::grid{0xFFFFFFFFu}, rt::block{1024}, out);
  REQUIRE(s.has_value());
  auto w = q->try_wait(*s, 240s);
  REQUIRE_MESSAGE(w.has_value(), std::string(w.detail()));
  CHECK(out[0] == 4'194'304u);
  CHECK(out[1] == 0xFFFFFFFFu);
}

// Bug 8: 24 bytes of arguments for vadd's 28 (u64, u64, u64, u32; 32 with the struct's padding)
// were accepted and the kernel read a stale n. A kernel declaring its arguments (with_args, or
// .args metadata) is checked by count; one that declares only a kernarg size by the bytes given.
TEST_CASE("bug 8: too few kernel arguments are refused, naming both sizes") {
  auto sys = rt::system::open({.machine = "mi300x"});
  const auto& gpu = sys.default_agent();
  emu::host_code_object raw;  // vadd with a kernarg size and no argument list
  raw.kernels.push_back({"vadd_raw", vadd, sizeof(vadd_args), 0});
  auto exe = aq::emu::load(gpu, test_kernels());
  auto exe_raw = aq::emu::load(gpu, raw);
  auto a = gpu.alloc<float>(4, host), b = gpu.alloc<float>(4, host), c = gpu.alloc<float>(4, host);
  for (int i = 0; i < 4; ++i) a[i] = float(i), b[i] = 10.0f, c[i] = -1.0f;
  auto q = gpu.make_queue(rt::aql);
  for (const char* name : {"vadd", "vadd_raw"}) {
    CAPTURE(name);
    const auto& from = std::string(name) == "vadd" ? exe : exe_raw;
    auto vadd_k = from.get_untyped_kernel(name);
    // with_args: the explicit arguments' 28 bytes; the raw kernel declares its struct's 32.
    REQUIRE(vadd_k.kernarg_size == (std::string(name) == "vadd" ? 28u : sizeof(vadd_args)));
    auto few = q.try_dispatch(vadd_k, rt::grid{4}, rt::block{4}, a, b, c);
    REQUIRE_FALSE(few.has_value());
    CHECK(few.error() == aq::errc::invalid_argument);
    INFO(std::string(few.detail()));
    CHECK(has(few, "3 arguments given"));
    if (std::string(name) == "vadd_raw") {
      CHECK(has(few, "32"));
      CHECK(has(few, "24"));
    }
    CHECK(q.write_index() == 0);  // nothing published
  }
  auto right = q.try_dispatch(exe_raw.get_untyped_kernel("vadd_raw"), rt::grid{4}, rt::block{4}, a, b, c, 4u);  // control
  REQUIRE(right.has_value());
  CHECK(q.try_wait(*right, 20s).has_value());
  CHECK(c[3] == 13.0f);
}

// Bug 9: a second executable with a host kernel of the same name redirected the first one's
// kernel to the second's function.
namespace {
inline void store_plus_1000(emu::workgroup_context& ctx) {
  const emu::host_workgroup wg(ctx);
  const auto a = wg.args<store_args>();
  ctx.store<std::uint32_t>(a.out + 4ull * a.index, a.value + 1000);
}
}  // namespace
TEST_CASE("bug 9: two executables with a host kernel of the same name keep their own functions") {
  auto sys = rt::system::open({.machine = "mi300x"});
  const auto& gpu = sys.default_agent();
  auto first = aq::emu::load(gpu, test_kernels());
  emu::host_code_object other;
  other.kernels.push_back(emu::host_kernel::with_args<std::uint32_t*, std::uint32_t, std::uint32_t>("store", store_plus_1000));
  auto second = aq::emu::load(gpu, other);
  auto out = gpu.alloc<std::uint32_t>(2, host);
  out[0] = out[1] = 0;
  auto q = gpu.make_queue(rt::aql);
  q.dispatch(get<store_kernel>(first, "store"), rt::grid{1}, rt::block{1}, out, 0u, 7u);
  q.dispatch(get<store_kernel>(second, "store"), rt::grid{1}, rt::block{1}, out, 1u, 7u);
  REQUIRE(q.try_finish(20s).has_value());
  CHECK(out[0] == 7u);
  CHECK(out[1] == 1007u);
}

// Bug 11: try_ functions aborted (assert, SIGFPE) on caller input.
TEST_CASE("bug 11: try_dispatch with a zero grid or block is invalid_argument, not an abort") {
  auto sys = rt::system::open({.machine = "mi300x"});
  const auto& gpu = sys.default_agent();
  auto exe = aq::emu::load(gpu, test_kernels());
  auto k = exe.get_kernel<>("nothing");
  auto u = exe.get_untyped_kernel("nothing");
  auto q = gpu.make_queue(rt::aql);
  auto g0 = q.try_dispatch(k, rt::grid{0}, rt::block{1});
  CHECK(g0.error() == aq::errc::invalid_argument);
  auto b0 = q.try_dispatch(k, rt::grid{1}, rt::block{1, 0, 1});
  CHECK(b0.error() == aq::errc::invalid_argument);
  CHECK(has(b0, "block"));
  auto u0 = q.try_dispatch(u, rt::grid{1, 0, 1}, rt::block{1});
  CHECK(u0.error() == aq::errc::invalid_argument);
  CHECK(q.write_index() == 0);
}

TEST_CASE("bug 11: try_barrier_and with 6 dependencies is invalid_argument, not an out-of-bounds write") {
  auto sys = rt::system::open({.machine = "mi300x"});
  const auto& gpu = sys.default_agent();
  auto q = gpu.make_queue(rt::aql);
  auto s = gpu.make_signal(0);
  const aq::sync::signal_ref deps[6] = {s.ref(), s.ref(), s.ref(), s.ref(), s.ref(), s.ref()};
  auto r = q.try_barrier_and(deps);
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error() == aq::errc::invalid_argument);
  CHECK(has(r, "5"));
  CHECK(q.write_index() == 0);
  auto five = q.try_barrier_and(std::span(deps, 5));  // control: 5 is the packet's limit
  REQUIRE(five.has_value());
  CHECK(q.try_wait(*five, 20s).has_value());
}

TEST_CASE("bug 11: copy_options::shader_chunk_bytes 0 or 2^64 - 1 is invalid_argument, not SIGFPE") {
  auto sys = rt::system::open({.machine = "mi300x"});
  const auto& gpu = sys.default_agent();
  auto src = gpu.alloc<std::uint32_t>(1024, host), dst = gpu.alloc<std::uint32_t>(1024, host);
  for (std::uint32_t i = 0; i < 1024; ++i) src[i] = i, dst[i] = 0;
  rt::copy_options o;
  o.use_sdma = false;
  o.shader_chunk_bytes = 0;  // no workgroup can copy 0 bytes per chunk: refused
  auto e0 = rt::copy_engine::try_create(gpu, o);
  REQUIRE_FALSE(e0.has_value());
  CHECK(e0.error() == aq::errc::invalid_argument);
  CHECK(has(e0, "shader_chunk_bytes"));
  // 2^64 - 1 per workgroup: one workgroup copies everything (the round-up used to wrap to 0 groups).
  for (std::uint64_t chunk : {~std::uint64_t{0}, std::uint64_t{256}}) {
    CAPTURE(chunk);
    for (std::uint32_t i = 0; i < 1024; ++i) dst[i] = 0;
    o.shader_chunk_bytes = chunk;
    auto e = rt::copy_engine::try_create(gpu, o);
    REQUIRE(e.has_value());
    auto r = e->try_copy(dst, src);
    REQUIRE_MESSAGE(r.has_value(), std::string(r.detail()));
    std::uint32_t wrong = 0;
    for (std::uint32_t i = 0; i < 1024; ++i) wrong += dst[i] != i;
    CHECK(wrong == 0);
  }
}

// Bug 12: try_wait(2^64 - 1) computed index + 1 = 0 and returned success at once.
TEST_CASE("bug 12: try_wait on an index never reserved is an error, not an instant success") {
  auto sys = rt::system::open({.machine = "mi300x"});
  const auto& gpu = sys.default_agent();
  auto q = gpu.make_queue(rt::aql);
  auto r = q.try_wait(q.ticket_for(~std::uint64_t{0}), 50ms);
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error() == aq::errc::invalid_argument);
  CHECK(has(r, "write_index"));
  auto r5 = q.try_wait(q.ticket_for(5), 50ms);  // also never reserved (write index 0)
  CHECK(r5.error() == aq::errc::invalid_argument);
}

// Bug 13: ring_bytes >= 2^32 allocated and zeroed the whole size, then was truncated to 32 bits
// (CREATE_QUEUE's ring_size is a __u32; KFD also wants a power of two).
TEST_CASE("bug 13: an SDMA ring of 2^32 bytes or more is refused before allocating") {
  auto sys = rt::system::open({.machine = "mi300x"});
  const auto& gpu = sys.default_agent();
  for (std::uint64_t bytes : {std::uint64_t{1} << 32, std::uint64_t{1} << 40, std::uint64_t{1} << 63}) {
    CAPTURE(bytes);
    const auto t0 = std::chrono::steady_clock::now();
    auto q = gpu.try_make_queue(rt::sdma, {.ring_bytes = bytes});
    REQUIRE_FALSE(q.has_value());
    CHECK(q.error() == aq::errc::invalid_argument);
    CHECK(has(q, "ring_bytes"));
    CHECK(std::chrono::steady_clock::now() - t0 < 1s);
  }
  auto ok = gpu.try_make_queue(rt::sdma, {.ring_bytes = 4096});  // control
  CHECK(ok.has_value());
}

// Bug 9's fix registers each load's functions under names of their own; without unregistering
// them, every load grew the device's registry for good (a program loading and destroying
// executables leaked). The executable now unregisters them when it goes.
TEST_CASE("bug 9: loading and destroying executables does not grow the host-kernel registry") {
  auto sys = rt::system::open({.machine = "mi300x"});
  const auto& gpu = sys.default_agent();
  auto* dev = emu::device_of(gpu);
  const auto before = dev->registry().size();
  auto kept = aq::emu::load(gpu, test_kernels());
  CHECK(dev->registry().size() == before + test_kernels().kernels.size());
  for (int i = 0; i < 50; ++i) {
    auto e = aq::emu::load(gpu, test_kernels());
    auto q = gpu.make_queue(rt::aql, {.slots = 16});
    auto out = gpu.alloc<std::uint32_t>(1, host);
    out[0] = 0;
    q.dispatch(get<store_kernel>(e, "store"), rt::grid{1}, rt::block{1}, out, 0u, std::uint32_t(i) + 1u);
    REQUIRE(q.try_finish(20s).has_value());
    CHECK(out[0] == std::uint32_t(i) + 1u);
  }
  CHECK(dev->registry().size() == before + test_kernels().kernels.size());  // only `kept`'s
  auto out = gpu.alloc<std::uint32_t>(1, host);  // and `kept` still runs its own functions
  out[0] = 0;
  auto q = gpu.make_queue(rt::aql, {.slots = 16});
  q.dispatch(get<store_kernel>(kept, "store"), rt::grid{1}, rt::block{1}, out, 0u, 99u);
  REQUIRE(q.try_finish(20s).has_value());
  CHECK(out[0] == 99u);
}

}  // namespace AQ_UNITY_ID
