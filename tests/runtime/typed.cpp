// runtime: typed kernels and per-queue tickets at run time (the compile-time half is
// tests/runtime/compile_fail/typed.cpp). A typed lookup checks the declared parameters against
// the kernel's metadata (here: a host kernel's declared arguments; tests/runtime/gfx_on_emulator.cpp
// does the same against clang-19's metadata) and refuses a mismatch before anything is
// dispatched; an untyped dispatch checks count, sizes and offsets at run time and submits
// nothing on a mismatch; a ticket is refused by every queue but the one that issued it.
#include "host_kernels.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <string>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

namespace aq = aqueduct;
namespace rt = aqueduct::runtime;
using namespace rt_test;
using namespace std::chrono_literals;

namespace {
bool contains(std::string_view text, std::string_view what) { return text.find(what) != std::string_view::npos; }

struct vadd_run {
  std::uint32_t n;
  rt::buffer<float> a, b, c;
  vadd_run(const rt::agent& gpu, std::uint32_t count) : n(count), a(gpu.alloc<float>(n, rt::memory_kind::host)), b(gpu.alloc<float>(n, rt::memory_kind::host)), c(gpu.alloc<float>(n, rt::memory_kind::host)) {
    for (std::uint32_t i = 0; i < n; ++i) a[i] = static_cast<float>(i), b[i] = 0.5f, c[i] = -1.0f;
  }
  std::uint32_t wrong() const {
    std::uint32_t bad = 0;
    for (std::uint32_t i = 0; i < n; ++i) bad += c[i] != static_cast<float>(i) + 0.5f;
    return bad;
  }
};
}  // namespace

TEST_CASE("a typed kernel dispatches on AQL and PM4 queues; its declared arguments are what the metadata holds") {
  auto sys = rt::system::open({.machine = "rx7900xtx"});
  const auto& gpu = sys.default_agent();
  auto exe = aq::emu::load(gpu, test_kernels());
  const auto& md = exe.loaded().kernel("vadd").args;  // what host_kernel::with_args declared
  REQUIRE(md.size() == 4);
  CHECK(md[0].value_kind == "global_buffer");
  CHECK(md[3].value_kind == "by_value");
  CHECK(md[3].offset == 24);  // three 8-byte pointers, then the u32 (AMDGPU explicit-argument layout)
  CHECK(md[3].size == 4);
  auto vadd = exe.get_kernel<const float*, const float*, float*, std::uint32_t>("vadd");
  vadd_run x(gpu, 10'001), y(gpu, 10'001);
  auto q = gpu.make_queue(aq::aql);
  auto p = gpu.make_queue(aq::pm4);
  const auto tq = q.dispatch(vadd, rt::grid{x.n}, rt::block{64}, x.a, x.b, x.c, x.n);
  const auto tp = p.dispatch(vadd, rt::grid{y.n}, rt::block{64}, y.a, y.b, y.c, y.n);
  REQUIRE(q.try_wait(tq, 20s));
  REQUIRE(p.try_wait(tp, 20s));
  CHECK(x.wrong() == 0);
  CHECK(y.wrong() == 0);
  CHECK(tq.queue_id() == q.queue_id());
  CHECK(tp.queue_id() == p.queue_id());
}

TEST_CASE("a typed lookup that disagrees with the declared arguments fails when the kernel is looked up") {
  auto sys = rt::system::open({.machine = "mi300x"});
  const auto& gpu = sys.default_agent();
  auto exe = aq::emu::load(gpu, test_kernels());
  SUBCASE("swapped: a value where the metadata has a pointer") {
    auto k = exe.try_get_kernel<const float*, const float*, std::uint32_t, float*>("vadd");
    REQUIRE_FALSE(k);
    CHECK(k.get_failure() == aq::errc::invalid_argument);
    CHECK_MESSAGE(contains(k.detail(), "argument 2 is global_buffer, declared as by_value"), std::string(k.detail()));
  }
  SUBCASE("a wider scalar") {
    auto k = exe.try_get_kernel<std::uint32_t*, std::uint64_t, std::uint32_t>("store");
    REQUIRE_FALSE(k);
    CHECK_MESSAGE(contains(k.detail(), "argument 1 has 4 bytes, declared 8"), std::string(k.detail()));
  }
  SUBCASE("one argument too many") {
    auto k = exe.try_get_kernel<std::uint32_t*, std::uint32_t, std::uint32_t, std::uint32_t>("store");
    REQUIRE_FALSE(k);
    CHECK_MESSAGE(contains(k.detail(), "it takes 3 arguments, 4 declared"), std::string(k.detail()));
  }
  SUBCASE("a kernel that takes none") {
    CHECK(exe.try_get_kernel<>("nothing"));
    CHECK_FALSE(exe.try_get_kernel<std::uint32_t>("nothing"));
  }
  SUBCASE("a host kernel that declares no argument list cannot be typed") {
    aq::emu::host_code_object hco;
    hco.kernels.push_back({"opaque", vadd, sizeof(vadd_args), 0});
    auto e2 = aq::emu::load(gpu, hco);
    auto k = e2.try_get_kernel<const float*, const float*, float*, std::uint32_t>("opaque");
    REQUIRE_FALSE(k);
    CHECK_MESSAGE(contains(k.detail(), "declares no argument list"), std::string(k.detail()));
    CHECK(e2.try_get_untyped_kernel("opaque"));  // the untyped path still works (size-checked)
  }
  SUBCASE("a declared argument outside the kernarg segment is refused at load") {
    aq::emu::host_code_object hco;
    auto hk = aq::emu::host_kernel::with_args<const float*, std::uint32_t>("short", vadd);
    hk.kernarg_size = 8;
    hco.kernels.push_back(hk);
    auto e2 = aq::emu::try_load(gpu, hco);
    REQUIRE_FALSE(e2);
    CHECK(contains(e2.detail(), "outside its 8 kernarg bytes"));
  }
}

TEST_CASE("an untyped dispatch is checked against the metadata on every dispatch and submits nothing on a mismatch") {
  auto sys = rt::system::open({.machine = "mi300x"});
  const auto& gpu = sys.default_agent();
  auto exe = aq::emu::load(gpu, test_kernels());
  auto store = exe.get_untyped_kernel("store");
  auto out = gpu.alloc<std::uint32_t>(16, rt::memory_kind::host);
  auto q = gpu.make_queue(aq::aql, {.slots = 16});
  auto p = gpu.make_queue(aq::pm4);
  SUBCASE("count") {
    auto r = q.try_dispatch(store, rt::grid{1}, rt::block{1}, out, 3u);
    REQUIRE_FALSE(r);
    CHECK(r.get_failure() == aq::errc::invalid_argument);
    CHECK_MESSAGE(contains(r.detail(), "the 2 arguments given"), std::string(r.detail()));
    auto rp = p.try_dispatch(store, rt::grid{1}, rt::block{1}, out, 3u);
    REQUIRE_FALSE(rp);
    CHECK(rp.get_failure() == aq::errc::invalid_argument);
  }
  SUBCASE("size") {
    auto r = q.try_dispatch(store, rt::grid{1}, rt::block{1}, out, std::uint64_t{3}, 7u);
    REQUIRE_FALSE(r);
    CHECK(r.get_failure() == aq::errc::invalid_argument);
  }
  CHECK(q.write_index() == 0);  // nothing was submitted
  CHECK(p.submitted() == 0);
  auto ok = q.try_dispatch(store, rt::grid{1}, rt::block{1}, out, 3u, 77u);
  REQUIRE(ok);
  REQUIRE(q.try_wait(*ok, 10s));
  CHECK(out[3] == 77u);
}

TEST_CASE("a ticket is waited on only by the queue that issued it") {
  auto sys = rt::system::open({.machine = "rx7900xtx"});
  const auto& gpu = sys.default_agent();
  auto exe = aq::emu::load(gpu, test_kernels());
  auto nothing = exe.get_kernel<>("nothing");
  SUBCASE("AQL") {
    auto qa = gpu.make_queue(aq::aql, {.slots = 16});
    auto qb = gpu.make_queue(aq::aql, {.slots = 16});
    const auto t = qa.dispatch(nothing, rt::grid{1}, rt::block{1});
    auto w = qb.try_wait(t, 1s);
    REQUIRE_FALSE(w);
    CHECK(w.get_failure() == aq::errc::invalid_argument);
    CHECK_MESSAGE(contains(w.detail(), "a ticket of AQL queue " + std::to_string(qa.queue_id()) + " (packet 0) waited on AQL queue " +
                                           std::to_string(qb.queue_id())),
                  std::string(w.detail()));
    CHECK(qa.try_wait(t, 10s));
    auto empty = qa.try_wait(rt::aql_ticket{}, 1s);
    REQUIRE_FALSE(empty);
    CHECK(contains(empty.detail(), "an empty AQL ticket"));
  }
  SUBCASE("PM4") {
    auto pa = gpu.make_queue(aq::pm4);
    auto pb = gpu.make_queue(aq::pm4);
    const auto t = pa.dispatch(nothing, rt::grid{1}, rt::block{1});
    auto w = pb.try_wait(t, 1s);
    REQUIRE_FALSE(w);
    CHECK(w.get_failure() == aq::errc::invalid_argument);
    CHECK(contains(w.detail(), "a ticket of PM4 queue " + std::to_string(pa.queue_id()) + " (sequence 1)"));
    CHECK(pa.try_wait(t, 10s));
  }
  SUBCASE("SDMA") {
    auto sa = gpu.make_queue(aq::sdma);
    auto sb = gpu.make_queue(aq::sdma);
    auto buf = gpu.alloc<std::uint32_t>(64, rt::memory_kind::host);
    const auto t = sa.try_fill(buf.va(), 5u, 64).value();
    auto w = sb.try_wait(t, 1s);
    REQUIRE_FALSE(w);
    CHECK(contains(w.detail(), "a ticket of SDMA queue " + std::to_string(sa.queue_id())));
    CHECK(sa.try_wait(t, 10s));
    CHECK(buf[15] == 5u);
  }
}

}  // namespace AQ_UNITY_ID
