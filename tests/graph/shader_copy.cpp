// graph: copies and fills on compute queues (the shader copy, graph/detail/shader_op.hpp). A copy
// or fill awaited on an AQL or PM4 queue dispatches the agent's copy or fill kernel
// (runtime/shader_copy.hpp), eagerly, captured and replayed in ring-copy and indirect mode, with
// try_set_copy / try_set_fill / try_set_enabled / try_bind, edges to and from SDMA and PM4 nodes,
// graph memory, conditional bodies, traces, DOT and save/load; faults name the node; overlapping
// ranges (on SDMA queues too), partial dwords and a device without a copy kernel are refused, named.
// On a real GPU the kernels are the shipped machine code (runtime/detail/shader_copy_code.hpp):
// the emulated GPUs adopted as plain device files run it on the ISA interpreter.
// Expected values: host memcpy / dword stores over the same inputs (a host model of every replay).
#include "counting_device.hpp"
#include "kernels.hpp"

#include <aqueduct/emu/isa.hpp>  // installs the ISA interpreter: the shipped machine code runs on it
#include <aqueduct/graph/save.hpp>

#include <doctest/doctest.h>

#include <chrono>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

namespace aq = aqueduct;
namespace g = aqueduct::graph;
namespace rt = aqueduct::runtime;
using namespace graph_test;
using namespace std::chrono_literals;

namespace {

// Bytes that cross several of the copy kernel's 1 MiB workgroup chunks, and a ragged tail.
constexpr std::uint64_t big = 3 * (std::uint64_t{1} << 20) + 4 * 1001 + 3;

rt::buffer<std::uint8_t> bytes_buffer(const rig& r, std::uint64_t n, std::uint32_t seed) {
  auto b = r.gpu.alloc<std::uint8_t>(n, rt::memory_kind::host);
  std::mt19937 rng(seed);
  for (std::uint64_t i = 0; i < n; ++i) b[i] = static_cast<std::uint8_t>(rng());
  return b;
}

// The aq::error a callable throws, as text ("" when it throws nothing), and its errc.
template <class F>
std::string thrown(F&& f, aq::errc* code = nullptr) {
  try {
    f();
  } catch (const aq::error& e) {
    if (code) *code = static_cast<aq::errc>(e.code().value());
    return e.what();
  }
  return {};
}

const g::instantiate_options ring_copy{};
const g::instantiate_options indirect{.replay_slots = 4, .wait = {}, .trace = false, .mode = g::replay_mode::indirect};

}  // namespace

TEST_CASE("eager: a copy and a fill on an AQL and on a PM4 queue equal the host's memcpy and stores") {
  rig r;
  auto src = bytes_buffer(r, big, 1);
  for (int which = 0; which < 2; ++which) {
    CAPTURE(which);
    auto dst = bytes_buffer(r, big + 8, 2);
    auto words = r.host_buffer(1002, 7);
    std::vector<std::uint8_t> expect(dst.data(), dst.data() + big + 8);
    std::memcpy(expect.data() + 5, src.data(), big - 5);
    auto prog = [&](auto q) -> g::task<void> {
      co_await q.copy(dst.va() + aq::byte_count(5), src.va(), big - 5);
      co_await q.fill(words.va() + aq::byte_count(4), 0xC0FFEE11u, 4 * 1000);
    };
    if (which == 0) g::sync_wait(prog(g::on(r.aql)));
    else g::sync_wait(prog(g::on(r.pm4)));
    CHECK(std::memcmp(dst.data(), expect.data(), big + 8) == 0);
    CHECK(words[0] == 7);
    std::uint32_t filled = 0;
    for (std::uint32_t i = 1; i <= 1000; ++i) filled += words[i] == 0xC0FFEE11u;
    CHECK(filled == 1000);
    CHECK(words[1001] == 7);
  }
}

TEST_CASE("captured shader copies and fills replay with changed copy arguments, bit for bit, in both modes on AQL and PM4") {
  rig r;
  constexpr std::uint64_t n = big;
  auto src = bytes_buffer(r, n, 3);
  auto dst = bytes_buffer(r, n, 4);
  auto words = r.host_buffer(4096);
  for (const bool pm4 : {false, true})
    for (const auto* opt : {&ring_copy, &indirect}) {
      CAPTURE(pm4);
      CAPTURE(opt->mode == g::replay_mode::indirect);
      g::node_id c{}, f{};
      auto prog = [&](auto q) -> g::task<void> {
        c = co_await q.copy(dst.va(), src.va(), n).label("copy");
        f = co_await q.fill(words.va(), 1u, 4 * 4096).label("fill");
      };
      g::task_graph tg = pm4 ? g::capture(prog(g::on(r.pm4))) : g::capture(prog(g::on(r.aql)));
      REQUIRE(tg.size() == 2);
      CHECK(tg[c].kind == g::node_kind::copy);
      CHECK(tg[c].queue.type == (pm4 ? g::queue_type::pm4 : g::queue_type::aql));
      CHECK(contains(tg[c].describe(), "shader copy \"copy\" at shader_copy.cpp:"));
      CHECK(contains(tg.to_dot(), "shader fill"));
      auto exec = g::instantiate(tg, *opt);
      std::mt19937_64 rng(pm4 * 2 + (opt == &indirect));
      std::vector<std::uint8_t> model(n);
      std::vector<std::uint32_t> wmodel(4096);
      int wrong = 0;
      for (int i = 0; i < 120; ++i) {
        // A fresh pattern each time: a replay that copied nothing (or the old range) shows.
        for (std::uint64_t k = 0; k < n; k += 4096) dst[k] = static_cast<std::uint8_t>(i + k);
        std::fill_n(words.data(), 4096, static_cast<std::uint32_t>(i));
        std::memcpy(model.data(), dst.data(), n);
        std::fill(wmodel.begin(), wmodel.end(), static_cast<std::uint32_t>(i));
        const std::uint64_t len = rng() % (n + 1), soff = rng() % (n - len + 1), doff = rng() % (n - len + 1);
        REQUIRE(exec.try_set_copy(c, dst.va() + aq::byte_count(doff), src.va() + aq::byte_count(soff), len));
        const std::uint64_t wlen = rng() % 4097, woff = rng() % (4097 - wlen);
        const auto value = static_cast<std::uint32_t>(rng());
        REQUIRE(exec.try_set_fill(f, words.va() + aq::byte_count(4 * woff), value, 4 * wlen));
        const bool copy_on = i % 7 != 3;  // now and then the copy is disabled: nothing copied
        REQUIRE(exec.try_set_enabled(c, copy_on));
        if (copy_on) std::memcpy(model.data() + doff, src.data() + soff, len);
        std::fill_n(wmodel.begin() + static_cast<std::ptrdiff_t>(woff), wlen, value);
        auto res = exec.try_wait(exec.launch(), 30s);
        REQUIRE_MESSAGE(res, res.get_failure().describe());
        wrong += std::memcmp(dst.data(), model.data(), n) != 0;
        wrong += std::memcmp(words.data(), wmodel.data(), 4 * 4096) != 0;
      }
      CHECK(wrong == 0);
    }
}

TEST_CASE("ordering across queues: an AQL shader copy then an SDMA copy of its output, and SDMA copies then PM4 and AQL shader copies") {
  rig r;
  auto src = r.host_buffer(16), mid = r.host_buffer(16), out = r.host_buffer(16);
  g::node_id slow{};
  // The producer at the head of each chain stores after 50 ms: a consumer on another queue that
  // did not wait for the node before it would copy the stale value.
  auto aql_then_sdma = [&]() -> g::task<void> {
    slow = co_await g::on(r.aql).dispatch(r.slow_store_k, rt::grid{1}, rt::block{1}, src, 0u, 1u);
    co_await g::on(r.aql).copy(mid.va(), src.va(), 64);
    co_await g::on(r.sdma).copy(out.va(), mid.va(), 64);
  };
  auto sdma_then_pm4 = [&]() -> g::task<void> {
    slow = co_await g::on(r.aql).dispatch(r.slow_store_k, rt::grid{1}, rt::block{1}, src, 0u, 1u);
    co_await g::on(r.sdma).copy(mid.va(), src.va(), 64);
    co_await g::on(r.pm4).copy(out.va(), mid.va(), 64);
  };
  auto sdma_then_aql = [&]() -> g::task<void> {
    slow = co_await g::on(r.pm4).dispatch(r.slow_store_k, rt::grid{1}, rt::block{1}, src, 0u, 1u);
    co_await g::on(r.sdma).copy(mid.va(), src.va(), 64);
    co_await g::on(r.aql).copy(out.va(), mid.va(), 64);
  };
  for (int chain = 0; chain < 3; ++chain) {
    CAPTURE(chain);
    const auto prog = [&] { return chain == 0 ? aql_then_sdma() : chain == 1 ? sdma_then_pm4() : sdma_then_aql(); };
    for (const auto* opt : {&ring_copy, &indirect}) {
      CAPTURE(opt->mode == g::replay_mode::indirect);
      auto exec = g::instantiate(g::capture(prog()), *opt);
      for (std::uint32_t v = 10; v < 13; ++v) {
        src[0] = mid[0] = out[0] = 0;
        REQUIRE(exec.try_set_args(slow, src, 0u, v));
        exec.wait(exec.launch());
        CHECK(out[0] == v);
      }
    }
    src[0] = mid[0] = out[0] = 0;
    g::sync_wait(prog());  // eagerly the awaits order it
    CHECK(out[0] == 1);
  }
}

TEST_CASE("a fault in a shader copy names the node, eagerly and in a replay, and what depends on it") {
  rig r;
  auto a = r.host_buffer(16);
  for (const bool pm4 : {false, true})
    for (const auto* opt : {&ring_copy, &indirect}) {
      CAPTURE(pm4);
      CAPTURE(opt->mode == g::replay_mode::indirect);
      rig q;  // a faulted queue stays failed: a fresh one each time
      auto qa = q.host_buffer(16), qb = q.host_buffer(16);
      auto prog = [&](auto on_q) -> g::task<void> {
        co_await on_q.copy(qa.va(), aq::gpu_va(0x10), 64).label("bad copy");
        co_await g::on(q.sdma).copy(qb.va(), qa.va(), 64).label("after");
      };
      auto exec = pm4 ? g::instantiate(g::capture(prog(g::on(q.pm4))), *opt) : g::instantiate(g::capture(prog(g::on(q.aql))), *opt);
      auto res = exec.try_wait(exec.launch(), 10s);
      REQUIRE_FALSE(res);
      const std::string d(res.detail());
      CHECK(res.get_failure() == aq::errc::device_fault);
      CHECK_MESSAGE(contains(d, "shader copy \"bad copy\" at shader_copy.cpp:"), d);
      CHECK_MESSAGE(contains(d, pm4 ? "PM4 queue" : "AQL queue"), d);
      CHECK_MESSAGE(contains(d, "not run (they depend on it): copy \"after\""), d);
    }
  // Eagerly: the co_await fails with the operation, its queue and its line.
  auto eager = [&]() -> g::task<void> { co_await g::on(r.aql).copy(a.va(), aq::gpu_va(0x10), 64); };
  aq::errc code{};
  const std::string what = thrown([&] { g::sync_wait(eager()); }, &code);
  CHECK(code == aq::errc::device_fault);
  CHECK_MESSAGE(contains(what, "shader copy of 64 bytes on AQL queue"), what);
  CHECK_MESSAGE(contains(what, "shader_copy.cpp:"), what);
}

TEST_CASE("refused: overlapping copy ranges and partial dwords (capture, eagerly, try_set_copy/fill), leaving the node as it was") {
  rig r;
  auto v = r.host_buffer(64);
  for (std::uint32_t i = 0; i < 64; ++i) v[i] = i;
  aq::errc code{};
  auto overlap = [&]() -> g::task<void> { co_await g::on(r.aql).copy(v.va() + aq::byte_count(4), v.va(), 64); };
  std::string what = thrown([&] { (void)g::capture(overlap()); }, &code);
  CHECK(code == aq::errc::invalid_argument);
  CHECK_MESSAGE(contains(what, "overlap"), what);
  CHECK_MESSAGE(contains(what, "shader_copy.cpp:"), what);
  const auto submitted = r.aql.write_index();
  what = thrown([&] { g::sync_wait(overlap()); }, &code);
  CHECK(code == aq::errc::invalid_argument);
  CHECK_MESSAGE(contains(what, "overlap"), what);
  CHECK(r.aql.write_index() == submitted);  // nothing submitted
  CHECK(v[1] == 1);
  auto partial = [&]() -> g::task<void> { co_await g::on(r.pm4).fill(v.va() + aq::byte_count(2), 5u, 8); };
  what = thrown([&] { (void)g::capture(partial()); }, &code);
  CHECK(code == aq::errc::invalid_argument);
  CHECK_MESSAGE(contains(what, "dword"), what);

  // Updates: refused, and the node keeps its last good parameters.
  g::node_id c{}, f{};
  auto good = [&]() -> g::task<void> {
    c = co_await g::on(r.pm4).copy(v.va() + aq::byte_count(128), v.va(), 64);
    f = co_await g::on(r.aql).fill(v.va() + aq::byte_count(192), 9u, 16);
  };
  auto exec = g::instantiate(g::capture(good()));
  auto bad = exec.try_set_copy(c, v.va() + aq::byte_count(8), v.va(), 64);
  CHECK(bad.get_failure() == aq::errc::invalid_argument);
  CHECK_MESSAGE(contains(bad.get_failure().describe(), "overlap"), bad.get_failure().describe());
  CHECK(exec.try_set_fill(f, v.va() + aq::byte_count(192), 9u, 15).get_failure() == aq::errc::invalid_argument);
  exec.wait(exec.launch());
  std::uint32_t wrong = 0;
  for (std::uint32_t i = 0; i < 16; ++i) wrong += v[32 + i] != i;
  for (std::uint32_t i = 0; i < 4; ++i) wrong += v[48 + i] != 9;
  CHECK(v[2] == 2);  // the refused copy did not run
  CHECK(wrong == 0);
}

TEST_CASE("SDMA copies refuse overlapping ranges too: at capture, eagerly and by try_set_copy, nothing submitted") {
  // The SDMA engine's COPY_LINEAR is no more memmove than the copy kernel (docs/copies.md):
  // before, a graph's SDMA copy with overlapping ranges was submitted as it was.
  rig r;
  auto v = r.host_buffer(64);
  for (std::uint32_t i = 0; i < 64; ++i) v[i] = i;
  aq::errc code{};
  auto overlap = [&]() -> g::task<void> { co_await g::on(r.sdma).copy(v.va() + aq::byte_count(4), v.va(), 64); };
  std::string what = thrown([&] { (void)g::capture(overlap()); }, &code);
  CHECK(code == aq::errc::invalid_argument);
  CHECK_MESSAGE(contains(what, "overlap"), what);
  CHECK_MESSAGE(contains(what, "SDMA copy"), what);
  CHECK_MESSAGE(contains(what, "shader_copy.cpp:"), what);
  const auto consumed = r.sdma.read_offset();
  what = thrown([&] { g::sync_wait(overlap()); }, &code);
  CHECK(code == aq::errc::invalid_argument);
  CHECK_MESSAGE(contains(what, "overlap"), what);
  CHECK(r.sdma.read_offset() == consumed);  // the engine ran nothing
  CHECK(v[1] == 1);

  g::node_id c{};
  auto good = [&]() -> g::task<void> { c = co_await g::on(r.sdma).copy(v.va() + aq::byte_count(128), v.va(), 64); };
  auto exec = g::instantiate(g::capture(good()));
  auto bad = exec.try_set_copy(c, v.va() + aq::byte_count(8), v.va(), 64);
  CHECK(bad.get_failure() == aq::errc::invalid_argument);
  CHECK_MESSAGE(contains(bad.get_failure().describe(), "overlap"), bad.get_failure().describe());
  exec.wait(exec.launch());  // the node kept its last good ranges
  std::uint32_t wrong = 0;
  for (std::uint32_t i = 0; i < 16; ++i) wrong += v[32 + i] != i;
  CHECK(v[2] == 2);  // the refused copy did not run
  CHECK(wrong == 0);
}

TEST_CASE("a device without a copy kernel refuses shader copies at capture, eagerly and at instantiation, naming SDMA") {
  // The emulator's device file adopted as a plain device file: the runtime sees no emulator (as on
  // /dev/kfd), so it needs the shipped machine code, which has nothing for gfx950 (its generic
  // target, gfx9-4-generic, needs LLVM 20; the bundle is built by clang-19); SDMA copies still work
  // (the control).
  auto cfg = aq::emu::machine_config::parse("mi300x");
  cfg.gpus[0].gfx_target_version = 90500;  // gfx950
  auto dev = aq::emu::device::create(cfg);
  auto sys = rt::system::try_adopt(counting_device<aq::emu::device>(dev));
  REQUIRE(sys);
  const auto& gpu = sys->default_agent();
  REQUIRE_FALSE(gpu.emulated());
  auto aql = gpu.make_queue(aq::aql);
  auto pm4 = gpu.make_queue(aq::pm4);
  auto sdma = gpu.make_queue(aq::sdma);
  auto a = gpu.alloc<std::uint32_t>(16, rt::memory_kind::host), b = gpu.alloc<std::uint32_t>(16, rt::memory_kind::host);
  a[0] = 77;
  b[0] = 0;
  auto on_aql = [&]() -> g::task<void> { co_await g::on(aql).copy(b.va(), a.va(), 64); };
  auto on_pm4 = [&]() -> g::task<void> { co_await g::on(pm4).fill(b.va(), 3u, 64); };
  for (const auto& what : {thrown([&] { (void)g::capture(on_aql()); }), thrown([&] { g::sync_wait(on_aql()); }),
                           thrown([&] { (void)g::capture(on_pm4()); }), thrown([&] { g::sync_wait(on_pm4()); })}) {
    CHECK_MESSAGE(contains(what, "no copy kernel for gfx950"), what);
    CHECK_MESSAGE(contains(what, "gfx9-4-generic"), what);
    CHECK_MESSAGE(contains(what, "SDMA queue instead"), what);
    CHECK_MESSAGE(contains(what, "shader_copy.cpp:"), what);
  }
  CHECK(b[0] == 0);
  auto control = [&]() -> g::task<void> { co_await g::on(sdma).copy(b.va(), a.va(), 64); };
  g::sync_wait(control());
  CHECK(b[0] == 77);

  // A graph saved where a copy kernel exists (the same gfx950 machine, opened as the emulator: host
  // kernels) loads here, and its instantiation is refused.
  auto esys = rt::system::try_open_emulated(cfg);
  REQUIRE(esys);
  REQUIRE(esys->default_agent().emulated());
  auto eaql = esys->default_agent().make_queue(aq::aql);
  auto ra = esys->default_agent().alloc<std::uint32_t>(16, rt::memory_kind::host);
  auto rb = esys->default_agent().alloc<std::uint32_t>(16, rt::memory_kind::host);
  auto prog = [&]() -> g::task<void> { co_await g::on(eaql).copy(rb.va(), ra.va(), 64).label("moved"); };
  g::task_graph tg = g::capture(prog());
  tg.name("a", ra);
  tg.name("b", rb);
  auto bytes = g::try_save(tg, {});
  REQUIRE(bytes);
  g::load_context ctx;
  ctx.queue(aql).buffer("a", a).buffer("b", b);
  auto loaded = g::try_load_graph(*bytes, ctx);
  REQUIRE_MESSAGE(loaded, loaded.get_failure().describe());
  auto exec = g::exec_graph::try_instantiate(*loaded);
  REQUIRE_FALSE(exec);
  CHECK(exec.get_failure() == aq::errc::not_supported);
  CHECK_MESSAGE(contains(exec.get_failure().describe(), "shader copy \"moved\""), exec.get_failure().describe());
  CHECK_MESSAGE(contains(exec.get_failure().describe(), "SDMA queue instead"), exec.get_failure().describe());
}

TEST_CASE("shader copies save and load, bind, use graph memory, sit in PM4 conditional bodies and are traced") {
  rig r1;
  constexpr std::uint32_t n = 1000;
  auto x1 = r1.host_buffer(n), y1 = r1.host_buffer(n), z1 = r1.host_buffer(n);
  for (std::uint32_t i = 0; i < n; ++i) x1[i] = i * 2654435761u;
  auto word = r1.gpu.alloc<std::uint64_t>(1, rt::memory_kind::host);
  // x -> (AQL, via graph memory) t -> (PM4) y; (PM4, inside an IF on a word a kernel sets) z = fill.
  auto prog = [&]() -> g::task<void> {
    auto t = co_await g::alloc<std::uint32_t>(r1.gpu, n).label("t");
    co_await g::on(r1.aql).copy(t.va(), x1.va(), 4 * n).label("in");
    co_await g::on(r1.pm4).copy(y1.va(), t.va(), 4 * n).label("out");
    co_await g::free(t);
    co_await g::on(r1.pm4).dispatch(r1.put64_k, rt::grid{1}, rt::block{1}, word, std::uint64_t{1});
    co_await g::if_then(g::on(r1.pm4), word, [&]() -> g::task<void> { co_await g::on(r1.pm4).fill(z1.va(), 0xABCDu, 4 * n).label("in body"); });
  };
  g::task_graph tg = g::capture(prog());
  tg.name("x", x1);
  tg.name("y", y1);
  tg.name("z", z1);
  tg.name("word", word);
  std::uint32_t bad = 0;
  for (const auto* opt : {&ring_copy, &indirect}) {
    auto exec = g::instantiate(tg, *opt);
    std::fill_n(y1.data(), n, 0u);
    std::fill_n(z1.data(), n, 0u);
    exec.wait(exec.launch());
    for (std::uint32_t i = 0; i < n; ++i) bad += y1[i] != x1[i] || z1[i] != 0xABCDu;
  }
  CHECK(bad == 0);

  // Saved, and loaded in another system with other buffers: the same results there.
  auto bytes = g::try_save(tg, {&r1.exe});
  REQUIRE_MESSAGE(bytes, bytes.get_failure().describe());
  rig r2;
  auto x2 = r2.host_buffer(n), y2 = r2.host_buffer(n), z2 = r2.host_buffer(n), y3 = r2.host_buffer(n);
  for (std::uint32_t i = 0; i < n; ++i) x2[i] = i ^ 0x5A5A5A5Au;
  auto word2 = r2.gpu.alloc<std::uint64_t>(1, rt::memory_kind::host);
  g::load_context ctx;
  ctx.queue(r2.aql).queue(r2.pm4).code(r2.exe).buffer("x", x2).buffer("y", y2).buffer("z", z2).buffer("word", word2);
  auto loaded = g::try_load_graph(*bytes, ctx);
  REQUIRE_MESSAGE(loaded, loaded.get_failure().describe());
  CHECK(loaded->nodes()[1].kind == g::node_kind::copy);
  CHECK(loaded->nodes()[1].queue.type == g::queue_type::aql);
  auto exec = g::instantiate(*loaded, {.replay_slots = 4, .wait = {}, .trace = true});
  auto t = exec.launch();
  exec.wait(t);
  for (std::uint32_t i = 0; i < n; ++i) bad += y2[i] != x2[i] || z2[i] != 0xABCDu;
  CHECK(bad == 0);
  // Traced: the shader copies have device spans on their queues.
  g::trace tr;
  REQUIRE(g::try_trace_replay(exec, t, tr));
  int copies = 0;
  for (const auto& s : tr.spans()) copies += contains(s.name, "shader copy") && s.end_ns >= s.start_ns && s.start_ns != 0;
  CHECK(copies == 2);
  // A bind moves the PM4 shader copy's destination.
  REQUIRE(exec.try_bind("y", y3));
  exec.wait(exec.launch());
  for (std::uint32_t i = 0; i < n; ++i) bad += y3[i] != x2[i];
  CHECK(bad == 0);
}

TEST_CASE("eager, traced: a shader copy has a submit span and an execution span on its queue") {
  rig r;
  auto a = r.host_buffer(256, 5), b = r.host_buffer(256);
  auto prog = [&]() -> g::task<void> {
    co_await g::on(r.aql).copy(b.va(), a.va(), 1024);
    co_await g::on(r.pm4).fill(a.va(), 6u, 1024);
  };
  g::trace tr;
  g::sync_wait(prog(), {.trace = &tr});
  CHECK(b[255] == 5);
  CHECK(a[255] == 6);
  std::vector<g::trace::span> submits, runs;
  for (const auto& s : tr.spans()) (s.category == "host" ? submits : runs).push_back(s);
  REQUIRE(submits.size() == 2);
  REQUIRE(runs.size() == 2);
  CHECK(contains(submits[0].name, "submit: shader copy of 1024 bytes at shader_copy.cpp:"));
  CHECK(contains(submits[1].name, "submit: shader fill of 1024 bytes at shader_copy.cpp:"));
  CHECK(runs[0].category == "copy");
  CHECK(runs[1].category == "fill");
  CHECK(runs[0].args == "\"clock\":\"device\"");  // the AQL dispatch's completion signal stamps
  CHECK(runs[1].args == "\"clock\":\"device\"");  // PM4 timestamps around the dispatch
  CHECK(runs[0].end_ns >= runs[0].start_ns);
  CHECK(runs[1].start_ns + 10 >= runs[0].end_ns);  // one after the other (PM4 ticks are 10 ns)
}

TEST_CASE("buffer generations: a launch after a shader copy's source was freed is refused, naming the node; a live one makes it launchable") {
  rig r;
  auto a = r.host_buffer(64, 3), b = r.host_buffer(64);
  g::node_id c{};
  auto prog = [&]() -> g::task<void> { c = co_await g::on(r.pm4).copy(b.va(), a.va(), 256).label("move"); };
  auto exec = g::instantiate(g::capture(prog()));
  exec.wait(exec.launch());
  CHECK(b[63] == 3);
  a.reset();
  std::fill_n(b.data(), 64, 0u);
  auto t = exec.try_launch();
  REQUIRE_FALSE(t);
  CHECK_MESSAGE(contains(t.get_failure().describe(), "shader copy \"move\""), t.get_failure().describe());
  CHECK_MESSAGE(contains(t.get_failure().describe(), "freed"), t.get_failure().describe());
  auto a2 = r.host_buffer(64, 4);
  REQUIRE(exec.try_set_copy(c, b.va(), a2.va(), 256));
  exec.wait(exec.launch());
  CHECK(b[63] == 4);
}

TEST_CASE("a topology update that adds a shader copy re-lowers its segment only, and the new copy runs") {
  rig r;
  auto a = r.host_buffer(16, 9), b = r.host_buffer(16), c = r.host_buffer(16), d = r.host_buffer(16);
  auto prog = [&](bool more) -> g::task<void> {
    co_await g::on(r.sdma).copy(d.va(), a.va(), 64).label("other queue");
    co_await g::on(r.aql).copy(b.va(), a.va(), 64).label("first");
    if (more) co_await g::on(r.aql).copy(c.va(), b.va(), 64).label("second");
  };
  auto exec = g::instantiate(g::capture(prog(false)));
  exec.wait(exec.launch());
  CHECK(b[15] == 9);
  CHECK(c[15] == 0);
  REQUIRE(exec.try_update(g::capture(prog(true))));
  const auto& u = exec.last_update();
  CHECK(u.topology_changed);
  CHECK_FALSE(u.reinstantiated);
  CHECK(u.added == 1);
  CHECK(u.relowered == std::vector<bool>{false, true});  // the SDMA segment kept, the AQL one re-lowered
  a[15] = 10;
  exec.wait(exec.launch());
  CHECK(b[15] == 10);
  CHECK(c[15] == 10);
  CHECK(d[15] == 10);
}

// The shipped machine code (runtime/detail/shader_copy_code.hpp) on four GPUs the runtime takes
// for real ones: the emulated device adopted as a plain device file, the kernels run by the ISA
// interpreter. The entry chosen is the processor's own or its generic target's (AMDGPUUsage
// "Generic processors", spec/code-objects.md §6.4: gfx1100 and gfx1201 run gfx11-generic and
// gfx12-generic code; LLVM 19 has no generic target for gfx90a or gfx942). Eager copies and fills
// on AQL and PM4 queues, then a captured graph replayed with changed copy arguments, against host
// memcpy and stores; an unaligned copy takes the byte path, an aligned one the 16-byte path.
TEST_CASE("a real GPU runs the shipped copy and fill machine code: eager and replayed, on gfx1100, gfx1201, gfx90a, gfx942") {
  struct gpu_case {
    const char* preset;
    const char* processor;  // the code object's, expected
  };
  for (const gpu_case c : {gpu_case{"rx7900xtx", "gfx11-generic"}, gpu_case{"rx9070xt", "gfx12-generic"},
                           gpu_case{"mi250x", "gfx90a"}, gpu_case{"mi300x", "gfx942"}}) {
    CAPTURE(std::string(c.preset));
    auto dev = aq::emu::device::create(aq::emu::machine_config::parse(c.preset));
    auto sys = rt::system::try_adopt(counting_device<aq::emu::device>(dev));
    REQUIRE(sys);
    const auto& gpu = sys->default_agent();
    REQUIRE_FALSE(gpu.emulated());
    auto k = rt::try_shader_kernels(gpu);
    REQUIRE_MESSAGE(k, k.get_failure().describe());
    REQUIRE_FALSE((*k)->exe.kernels().empty());
    CHECK((*k)->exe.kernels()[0].processor == c.processor);
    auto aql = gpu.make_queue(aq::aql);
    auto pm4 = gpu.make_queue(aq::pm4);
    constexpr std::uint64_t n = (std::uint64_t{1} << 20) + 4 * 1001 + 3;  // two 1 MiB chunks, a ragged tail
    auto src = gpu.alloc<std::uint8_t>(n, rt::memory_kind::host), dst = gpu.alloc<std::uint8_t>(n + 32, rt::memory_kind::host);
    auto words = gpu.alloc<std::uint32_t>(1002, rt::memory_kind::host);
    std::mt19937 rng(3);
    for (std::uint64_t i = 0; i < n; ++i) src[i] = static_cast<std::uint8_t>(rng());
    auto reset = [&] {
      for (std::uint64_t i = 0; i < n + 32; ++i) dst[i] = 0xEE;
      for (std::uint32_t i = 0; i < 1002; ++i) words[i] = 7;
    };
    // Host model: dst[off, off + len) = src[0, len), everything else untouched; words[1..1000] = v.
    auto check = [&](std::uint64_t off, std::uint64_t len, std::uint32_t v) {
      std::uint64_t wrong = 0;
      for (std::uint64_t i = 0; i < n + 32; ++i) wrong += dst[i] != (i >= off && i < off + len ? src[i - off] : 0xEE);
      std::uint32_t filled = 0;
      for (std::uint32_t i = 1; i <= 1000; ++i) filled += words[i] == v;
      CHECK(wrong == 0);
      CHECK(filled == 1000);
      CHECK(words[0] == 7);
      CHECK(words[1001] == 7);
    };
    for (const std::uint64_t off : {std::uint64_t{5}, std::uint64_t{16}}) {  // byte path, 16-byte path
      CAPTURE(off);
      reset();
      auto eager = [&]() -> g::task<void> {
        co_await g::on(aql).copy(dst.va() + aq::byte_count(off), src.va(), n - 16);
        co_await g::on(pm4).fill(words.va() + aq::byte_count(4), 0xC0FFEE11u, 4 * 1000);
      };
      g::sync_wait(eager());
      check(off, n - 16, 0xC0FFEE11u);
    }
    g::node_id copy{};
    auto prog = [&]() -> g::task<void> {
      copy = co_await g::on(pm4).copy(dst.va(), src.va(), 4096);
      co_await g::on(aql).fill(words.va() + aq::byte_count(4), 0x5A5A0001u, 4 * 1000);
    };
    auto exec = g::instantiate(g::capture(prog()));
    reset();
    exec.wait(exec.launch());
    check(0, 4096, 0x5A5A0001u);
    REQUIRE(exec.try_set_copy(copy, dst.va() + aq::byte_count(3), src.va(), n - 3));
    reset();
    exec.wait(exec.launch());
    check(3, n - 3, 0x5A5A0001u);
    // The runtime's copy engine on its shader path (no SDMA): the same machine code, 4 KiB chunks.
    auto engine = rt::copy_engine::try_create(gpu, {.use_sdma = false, .shader_chunk_bytes = 4096});
    REQUIRE_MESSAGE(engine, engine.get_failure().describe());
    CHECK(engine->method() == rt::copy_method::shader);
    reset();
    REQUIRE(engine->try_copy(dst.va() + aq::byte_count(7), src.va(), n - 20));
    REQUIRE(engine->try_fill(words.va() + aq::byte_count(4), 0x0BADF00Du, 4 * 1000));
    check(7, n - 20, 0x0BADF00Du);
  }
}

// A prebuilt PM4 dispatch (what graph lowering encodes) of a kernel that needs the queue's scratch
// grows it as an eager dispatch does; when the scratch cannot grow, encode_dispatch throws the
// allocation's failure and appends nothing (it used to leave the scratch fields unset: a zero V#
// on the device). The allocation made to fail is found by counting the ALLOC_MEMORY_OF_GPU events
// of a run without the fault (emu/fault_plan.hpp: `alloc=#N` fails the N-th allocation).
TEST_CASE("a prebuilt PM4 dispatch whose scratch cannot grow throws out_of_memory and encodes nothing") {
  const auto alloc = std::size_t(aq::emu::fault_kind::alloc);
  struct outcome {
    std::uint64_t before = 0, after = 0;  // ALLOC_MEMORY_OF_GPU events around the first encode
    std::string error;
    aq::errc code{};
    std::size_t dwords = 0;
    std::size_t retried_dwords = 0;
  };
  auto run = [&](std::uint64_t nth) {
    auto cfg = aq::emu::machine_config::parse("mi250x");
    cfg.faults = aq::emu::fault_plan::try_parse("alloc=#" + std::to_string(nth)).value();
    auto dev = aq::emu::device::create(std::move(cfg));
    auto sys = rt::system::try_adopt(counting_device<aq::emu::device>(dev));
    REQUIRE(sys);
    const auto& gpu = sys->default_agent();
    auto k = rt::try_shader_kernels(gpu);
    REQUIRE_MESSAGE(k, k.get_failure().describe());
    auto pm4 = gpu.make_queue(aq::pm4);
    const auto& copy = (*k)->copy.info();
    REQUIRE(copy.descriptor.kernel_code_properties != 0);  // gfx90a: asks for the private segment buffer
    outcome o;
    rt::command_buffer out;
    o.before = dev.faults().counts().events[alloc];
    o.error = thrown([&] { pm4.encode_dispatch(out, copy, rt::grid{64}, rt::block{64}, aq::gpu_va(0x10000), aq::gpu_va(0x20000)); },
                     &o.code);
    o.after = dev.faults().counts().events[alloc];
    o.dwords = out.size();
    pm4.encode_dispatch(out, copy, rt::grid{64}, rt::block{64}, aq::gpu_va(0x10000), aq::gpu_va(0x20000));  // the fault fired once
    o.retried_dwords = out.size();
    return o;
  };
  const outcome clean = run(std::uint64_t{1} << 40);
  CHECK(clean.error.empty());
  CHECK(clean.after == clean.before + 1);  // the first encode grew the scratch: one allocation
  CHECK(clean.dwords > 0);
  CHECK(clean.retried_dwords == 2 * clean.dwords);  // grown once: the second encode allocates nothing
  const outcome failed = run(clean.before + 1);
  INFO(failed.error);
  CHECK(failed.code == aq::errc::out_of_memory);
  CHECK(failed.error.find("ALLOC_MEMORY_OF_GPU") != std::string::npos);
  CHECK(failed.dwords == 0);
  CHECK(failed.retried_dwords == clean.dwords);
}

TEST_CASE("the shipped bundle picks the processor's own object, else its generic target's; gfx950 has none") {
  // Expected entries: AMDGPUUsage "Generic processors" (spec/code-objects.md §6.4) — gfx906 is in
  // gfx9-generic, gfx1012 in gfx10-1-generic, gfx1035 in gfx10-3-generic, gfx1151 in gfx11-generic,
  // gfx1200 in gfx12-generic; gfx908, gfx90a and gfx942 are in no LLVM 19 generic target, so the
  // bundle carries their own objects; gfx950's generic (gfx9-4-generic) needs LLVM 20.
  auto bundle = aq::code::offload_bundle::try_parse(rt::shader_copy_bundle());
  REQUIRE_MESSAGE(bundle, bundle.get_failure().describe());
  const std::pair<const char*, const char*> expect[] = {
      {"gfx906", "gfx9-generic"},     {"gfx908", "gfx908"},           {"gfx90a", "gfx90a"},
      {"gfx942", "gfx942"},           {"gfx1012", "gfx10-1-generic"}, {"gfx1035", "gfx10-3-generic"},
      {"gfx1100", "gfx11-generic"},   {"gfx1151", "gfx11-generic"},   {"gfx1200", "gfx12-generic"},
      {"gfx1201", "gfx12-generic"}};
  for (const auto& [agent, entry] : expect) {
    CAPTURE(std::string(agent));
    auto pick = aq::code::try_select(bundle->entries(), aq::code::target_id{agent});
    REQUIRE_MESSAGE(pick, std::string(pick.detail()));
    CHECK(pick->bundle_id == std::string("hipv4-amdgcn-amd-amdhsa--") + entry);
    auto co = aq::code::code_object::try_parse(bundle->entries()[pick->index].data);
    REQUIRE(co);
    CHECK(aq::code::target_of(*co).processor == entry);
  }
  CHECK_FALSE(aq::code::try_select(bundle->entries(), aq::code::target_id{"gfx950"}));
}

}  // namespace AQ_UNITY_ID
