// graph/save.hpp: a graph saved to bytes or a file and loaded back in another system (fresh
// queues, executables, buffers at other addresses) replays what the original computes, with the
// updates an exec graph had; every reason a save or load is refused says what and where; a
// truncated or corrupted file is refused without reading past its end. Expected values: host
// arithmetic on the inputs (u32), the node kinds, labels and edges the capture recorded, and the
// byte layout written out in docs/graph.md for the offsets of the corruption cases.
#include "kernels.hpp"

#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

namespace aq = aqueduct;
namespace g = aqueduct::graph;
namespace rt = aqueduct::runtime;
using namespace graph_test;

namespace {

// The pipeline (kernels.hpp) captured with every buffer named, and what a load of it is given.
g::task_graph capture_named(pipeline& p, std::uint32_t a, std::uint32_t b, std::uint32_t c) {
  g::task_graph tg = g::capture(p.run(a, b, c));
  tg.name("x", p.x);
  tg.name("y", p.y);
  tg.name("z", p.z);
  tg.name("w", p.w);
  return tg;
}
g::load_context context_of(const pipeline& p) {
  g::load_context ctx;
  ctx.queue(p.r.aql).queue(p.r.sdma).queue(p.r.pm4).code(p.r.exe);
  ctx.buffer("x", p.x).buffer("y", p.y).buffer("z", p.z).buffer("w", p.w);
  return ctx;
}

std::vector<std::byte> saved_pipeline() {
  rig r;
  pipeline p(r, 300, 1);
  return g::try_save(capture_named(p, 3, 4, 5), {&r.exe}).value();
}

}  // namespace

TEST_CASE("a saved graph loads in another system, keeps its nodes, and replays what the original computes") {
  rig r1;
  pipeline p1(r1, 300, 1);
  const g::task_graph tg = capture_named(p1, 3, 4, 5);
  auto bytes = g::try_save(tg, {&r1.exe});
  REQUIRE(bytes);

  // What the file asks for: queues in the order the graph first uses them.
  auto info = g::try_inspect_saved(*bytes);
  REQUIRE(info);
  CHECK(info->version == 1);
  REQUIRE(info->queues.size() == 3);
  CHECK(info->queues[0].type == g::queue_type::aql);
  CHECK(info->queues[1].type == g::queue_type::sdma);
  CHECK(info->queues[2].type == g::queue_type::pm4);
  REQUIRE(info->gpus.size() == 1);
  CHECK(info->gpus[0].processor == "gfx1100");  // rx7900xtx (spec: Navi 31)
  REQUIRE(info->kernels.size() == 2);
  CHECK(info->kernels[0].name == "axpb");
  CHECK(info->kernels[0].processor == "emulated");
  CHECK(info->kernels[0].kernarg_size == 28);  // two pointers and three u32 (host_kernel::with_args layout)
  CHECK(info->buffers.size() == 4);
  CHECK(info->nodes == 3);
  CHECK(contains(info->describe(), "queue 1: SDMA"));

  // Another system: other queues, another executable, buffers elsewhere.
  rig r2;
  pipeline p2(r2, 300, 2);
  CHECK(p2.x.va() != p1.x.va());
  auto loaded = g::try_load_graph(*bytes, context_of(p2));
  REQUIRE_MESSAGE(loaded, (loaded ? "" : loaded.get_failure().describe()));
  REQUIRE(loaded->size() == 3);
  for (std::uint32_t i = 0; i < 3; ++i) {
    CHECK(loaded->nodes()[i].kind == tg.nodes()[i].kind);
    CHECK(loaded->nodes()[i].label == tg.nodes()[i].label);
    CHECK(loaded->nodes()[i].deps == tg.nodes()[i].deps);
    CHECK(loaded->nodes()[i].location() == tg.nodes()[i].location());
  }
  CHECK(contains(loaded->nodes()[0].describe(), "kernels.hpp:"));  // the pipeline's co_await
  CHECK(contains(loaded->to_dot(), "scale"));

  auto exec = g::exec_graph::try_instantiate(*loaded);
  REQUIRE(exec);
  exec->wait(exec->launch());
  CHECK(p2.wrong(3, 4, 5) == 0);
  CHECK(p1.w[0] == 0);  // the original's buffers were not touched

  // The loaded graph names its buffers: a bind moves them, as for a captured graph.
  auto w2 = r2.host_buffer(300);
  REQUIRE(exec->try_bind("w", w2));
  exec->wait(exec->launch());
  std::uint32_t bad = 0;
  for (std::uint32_t i = 0; i < 300; ++i) bad += w2[i] != 3 * p2.x[i] + 4 + 5;
  CHECK(bad == 0);
}

TEST_CASE("an exec graph is saved as it is now: with its argument updates and bindings") {
  rig r1;
  pipeline p1(r1, 200, 1);
  auto exec = g::instantiate(capture_named(p1, 3, 4, 5));
  REQUIRE(exec.try_set_args(p1.k1, p1.y, p1.x, 7u, 8u, p1.n));
  REQUIRE(exec.try_set_grid(p1.k2, rt::grid{128}, rt::block{64}));  // only the first 128 elements get + c
  auto z2 = r1.host_buffer(200);
  REQUIRE(exec.try_bind("z", z2));
  auto bytes = g::try_save(exec, {&r1.exe});
  REQUIRE(bytes);

  rig r2;
  pipeline p2(r2, 200, 3);
  g::load_context ctx = context_of(p2);
  auto loaded = g::try_load_graph(*bytes, ctx);
  REQUIRE(loaded);
  CHECK(loaded->nodes()[2].grid.x == 128);
  auto e2 = g::instantiate(*loaded);
  e2.wait(e2.launch());
  std::uint32_t bad = 0;
  for (std::uint32_t i = 0; i < 200; ++i) bad += p2.w[i] != (i < 128 ? 7 * p2.x[i] + 8 + 5 : 0u);
  CHECK(bad == 0);
}

TEST_CASE("graph memory, a conditional, a WHILE, a child graph and a labelled host node survive a save and load") {
  rig r1;
  auto prog_for = [](rig& r, rt::buffer<std::uint32_t>& out, rt::buffer<std::uint64_t>& word, rt::buffer<std::uint32_t>& count,
                     int& ticks, const g::task_graph& child) -> g::task<void> {
    auto tmp = co_await g::alloc<std::uint32_t>(r.gpu, 64).label("tmp");
    co_await g::on(r.pm4).dispatch(r.store_k, rt::grid{1}, rt::block{1}, tmp, 3u, 41u);
    co_await g::on(r.pm4).dispatch(r.add_k, rt::grid{64}, rt::block{64}, out, tmp, 1u, 64u);  // out[3] = 42
    co_await g::free(tmp);
    co_await g::on(r.pm4).dispatch(r.put64_k, rt::grid{1}, rt::block{1}, word, std::uint64_t{5}).label("decide");
    co_await g::while_loop(g::on(r.pm4), word, [&r, &word, &count]() -> g::task<void> {
      co_await g::on(r.pm4).dispatch(r.countdown_k, rt::grid{1}, rt::block{1}, word, count);
    }, {.max_iterations = 8}).label("loop");
    co_await g::host([&ticks] { ++ticks; }).label("tick");
    co_await g::child(child);
  };
  auto out1 = r1.host_buffer(64);
  auto count1 = r1.host_buffer(1);
  auto word1 = r1.gpu.alloc<std::uint64_t>(1, rt::memory_kind::host);
  int ticks1 = 0;
  auto inner1 = [&]() -> g::task<void> { co_await g::on(r1.aql).dispatch(r1.store_k, rt::grid{1}, rt::block{1}, out1, 9u, 99u); };
  const g::task_graph child1 = g::capture(inner1());
  g::task_graph tg = g::capture(prog_for(r1, out1, word1, count1, ticks1, child1));
  tg.name("out", out1);
  tg.name("count", count1);
  tg.name("word", word1);
  auto bytes = g::try_save(tg, {&r1.exe});
  REQUIRE_MESSAGE(bytes, (bytes ? "" : bytes.get_failure().describe()));

  rig r2;
  auto out2 = r2.host_buffer(64);
  auto count2 = r2.host_buffer(1);
  auto word2 = r2.gpu.alloc<std::uint64_t>(1, rt::memory_kind::host);
  int ticks2 = 0;
  auto info = g::try_inspect_saved(*bytes);
  REQUIRE(info);
  REQUIRE(info->queues.size() == 2);  // PM4 (first used), then AQL (in the child)
  CHECK(info->host_labels == std::vector<std::string>{"tick"});
  g::load_context ctx;
  ctx.queue(r2.pm4).queue(r2.aql).code(r2.exe).buffer("out", out2).buffer("count", count2).buffer("word", word2);
  ctx.host("tick", [&ticks2] { ++ticks2; });
  const auto load_and_run = [&](const std::vector<std::byte>& b) {
    std::fill_n(out2.data(), 64, 0u);
    count2[0] = 0;
    word2[0] = 77;
    ticks2 = 0;
    auto loaded = g::try_load_graph(b, ctx);
    REQUIRE_MESSAGE(loaded, (loaded ? "" : loaded.get_failure().describe()));
    CHECK(loaded->size() == tg.size());
    auto exec = g::exec_graph::try_instantiate(*loaded);
    REQUIRE_MESSAGE(exec, (exec ? "" : exec.get_failure().describe()));
    CHECK(exec->memory_pool_bytes() == 256);  // 64 u32, rounded to the pool's 256-byte alignment
    auto run = [&]() -> g::task<void> {
      for (int i = 0; i < 2; ++i) co_await g::replay(*exec);
    };
    g::sync_wait(run());
    CHECK(out2[3] == 42);
    CHECK(out2[9] == 99);
    CHECK(count2[0] == 10);  // 5 iterations per replay, twice
    CHECK(word2[0] == 0);
    CHECK(ticks2 == 2);
  };
  SUBCASE("saved from the captured graph (placeholders)") { load_and_run(*bytes); }
  SUBCASE("saved from an exec graph (pool addresses traced back to their allocation)") {
    auto exec1 = g::instantiate(tg);
    auto from_exec = g::try_save(exec1, {&r1.exe});
    REQUIRE_MESSAGE(from_exec, (from_exec ? "" : from_exec.get_failure().describe()));
    load_and_run(*from_exec);
  }
  CHECK(ticks1 == 0);
  CHECK(out1[3] == 0);
}

TEST_CASE("save refuses what a load could not give again, naming the node") {
  rig r;
  auto named = r.host_buffer(4), unnamed = r.host_buffer(4);
  SUBCASE("an address in no named buffer") {
    auto prog = [&]() -> g::task<void> {
      co_await g::on(r.aql).dispatch(r.store_k, rt::grid{1}, rt::block{1}, unnamed, 0u, 1u).label("lost");
    };
    g::task_graph tg = g::capture(prog());
    tg.name("named", named);
    auto s = g::try_save(tg, {&r.exe});
    REQUIRE_FALSE(s);
    CHECK(s.get_failure().code() == aq::errc::invalid_argument);
    CHECK(contains(s.get_failure().detail(), "\"lost\""));
    CHECK(contains(s.get_failure().detail(), "pointer argument at byte 0"));
    CHECK(contains(s.get_failure().detail(), "no named buffer"));
  }
  SUBCASE("a copy address in no named buffer") {
    auto prog = [&]() -> g::task<void> { co_await g::on(r.sdma).copy(named.va(), unnamed.va(), 16); };
    g::task_graph tg = g::capture(prog());
    tg.name("named", named);
    auto s = g::try_save(tg, {&r.exe});
    REQUIRE_FALSE(s);
    CHECK(contains(s.get_failure().detail(), "its source"));
  }
  SUBCASE("a host node without a label") {
    auto prog = [&]() -> g::task<void> { co_await g::host([] {}); };
    auto s = g::try_save(g::capture(prog()), {&r.exe});
    REQUIRE_FALSE(s);
    CHECK(s.get_failure().code() == aq::errc::not_supported);
    CHECK(contains(s.get_failure().detail(), "host node without a label"));
  }
  SUBCASE("a signal node") {
    auto sig = r.gpu.make_signal(1);
    auto prog = [&]() -> g::task<void> { co_await g::until(sig, aq::abi::signal_condition::lt, 1); };
    auto s = g::try_save(g::capture(prog()), {&r.exe});
    REQUIRE_FALSE(s);
    CHECK(s.get_failure().code() == aq::errc::not_supported);
    CHECK(contains(s.get_failure().detail(), "signal"));
  }
  SUBCASE("a kernel in none of the executables given") {
    auto prog = [&]() -> g::task<void> { co_await g::on(r.aql).dispatch(r.store_k, rt::grid{1}, rt::block{1}, named, 0u, 1u); };
    g::task_graph tg = g::capture(prog());
    tg.name("named", named);
    auto s = g::try_save(tg, {});
    REQUIRE_FALSE(s);
    CHECK(s.get_failure().code() == aq::errc::not_found);
    CHECK(contains(s.get_failure().detail(), "'store'"));
    CHECK(g::try_save(tg, {&r.exe}));
  }
}

TEST_CASE("load refuses queues, code, buffers and host functions that do not match, saying which") {
  const std::vector<std::byte> bytes = saved_pipeline();
  rig r;
  pipeline p(r, 300, 1);
  SUBCASE("too few queues: the message lists what the graph needs") {
    g::load_context few;
    few.queue(r.aql).queue(r.sdma).code(r.exe);
    auto l = g::try_load_graph(bytes, few);
    REQUIRE_FALSE(l);
    CHECK(contains(l.get_failure().detail(), "runs on 3 queues, 2 were given"));
    CHECK(contains(l.get_failure().detail(), "queue 2: PM4 on a gfx1100 GPU"));
  }
  SUBCASE("a queue of another type") {
    g::load_context ctx;
    ctx.queue(r.aql).queue(r.pm4).queue(r.pm4).code(r.exe);
    auto l = g::try_load_graph(bytes, ctx);
    REQUIRE_FALSE(l);
    CHECK(contains(l.get_failure().detail(), "queue 1 was an SDMA queue"));
  }
  SUBCASE("a GPU of another processor") {
    rig mi("mi300x");
    g::load_context ctx;
    ctx.queue(mi.aql).queue(mi.sdma).queue(mi.pm4).code(mi.exe);
    auto l = g::try_load_graph(bytes, ctx);
    REQUIRE_FALSE(l);
    CHECK(l.get_failure().code() == aq::errc::no_compatible_isa);
    CHECK(contains(l.get_failure().detail(), "gfx1100"));
    CHECK(contains(l.get_failure().detail(), "gfx942"));
  }
  SUBCASE("another code object under the kernel's name") {
    emu::host_code_object other;
    other.kernels.push_back(emu::host_kernel::with_args<std::uint32_t*, std::uint32_t>("axpb", nothing));
    other.kernels.push_back(emu::host_kernel::with_args<std::uint32_t*, const std::uint32_t*, std::uint32_t, std::uint32_t>("add", add));
    rt::executable wrong = aq::emu::load(r.gpu, other);
    g::load_context ctx;
    ctx.queue(r.aql).queue(r.sdma).queue(r.pm4).code(wrong);
    ctx.buffer("x", p.x).buffer("y", p.y).buffer("z", p.z).buffer("w", p.w);
    auto l = g::try_load_graph(bytes, ctx);
    REQUIRE_FALSE(l);
    CHECK(l.get_failure().code() == aq::errc::hash_mismatch);
    CHECK(contains(l.get_failure().detail(), "kernel 'axpb'"));
    CHECK(contains(l.get_failure().detail(), "digest"));
  }
  SUBCASE("no executable holding the kernel") {
    g::load_context ctx;
    ctx.queue(r.aql).queue(r.sdma).queue(r.pm4);
    auto l = g::try_load_graph(bytes, ctx);
    REQUIRE_FALSE(l);
    CHECK(l.get_failure().code() == aq::errc::not_found);
    CHECK(contains(l.get_failure().detail(), "'axpb' is in none of the executables"));
  }
  SUBCASE("a missing or too small buffer") {
    g::load_context ctx;
    ctx.queue(r.aql).queue(r.sdma).queue(r.pm4).code(r.exe).buffer("x", p.x).buffer("y", p.y).buffer("z", p.z);
    auto l = g::try_load_graph(bytes, ctx);
    REQUIRE_FALSE(l);
    CHECK(contains(l.get_failure().detail(), "no buffer named 'w'"));
    auto small = r.host_buffer(299);
    ctx.buffer("w", small);
    l = g::try_load_graph(bytes, ctx);
    REQUIRE_FALSE(l);
    CHECK(contains(l.get_failure().detail(), "'w' holds 1196 bytes, the graph uses 1200"));
  }
  SUBCASE("a host function not given") {
    rig r1;
    auto v = r1.host_buffer(1);
    auto prog = [&]() -> g::task<void> {
      co_await g::on(r1.aql).dispatch(r1.store_k, rt::grid{1}, rt::block{1}, v, 0u, 1u);
      co_await g::host([] {}).label("report");
    };
    g::task_graph tg = g::capture(prog());
    tg.name("v", v);
    auto b = g::try_save(tg, {&r1.exe}).value();
    g::load_context ctx;
    ctx.queue(r.aql).code(r.exe).buffer("v", p.x);
    auto l = g::try_load_graph(b, ctx);
    REQUIRE_FALSE(l);
    CHECK(contains(l.get_failure().detail(), "no host function was given for the host node \"report\""));
    ctx.host("report", [] {});
    CHECK(g::try_load_graph(b, ctx));
  }
}

TEST_CASE("a truncated or corrupted file is refused, never read past its end") {
  const std::vector<std::byte> bytes = saved_pipeline();
  rig r;
  pipeline p(r, 300, 1);
  const g::load_context ctx = context_of(p);
  REQUIRE(g::try_load_graph(bytes, ctx));
  // Every prefix (each is a truncation somewhere in the header, the tables or a node).
  std::size_t refused = 0;
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    auto l = g::try_load_graph(std::span<const std::byte>(bytes.data(), n), ctx);
    refused += !l && l.get_failure().code() == aq::errc::unsupported_format;
  }
  CHECK(refused == bytes.size());
  // Bytes after the end.
  auto longer = bytes;
  longer.push_back(std::byte{0});
  auto l = g::try_load_graph(longer, ctx);
  REQUIRE_FALSE(l);
  CHECK(contains(l.get_failure().detail(), "1 bytes after the graph's end"));
  // The magic and the version (docs/graph.md: 8 bytes "AQDGRAPH", then u32 version at byte 8).
  auto bad = bytes;
  bad[0] = std::byte{'X'};
  l = g::try_load_graph(bad, ctx);
  REQUIRE_FALSE(l);
  CHECK(contains(l.get_failure().detail(), "not a saved aqueduct graph"));
  bad = bytes;
  bad[8] = std::byte{2};
  l = g::try_load_graph(bad, ctx);
  REQUIRE_FALSE(l);
  CHECK(contains(l.get_failure().detail(), "format version 2"));
  // Random corruption: whatever it hits, the load returns (a result or a refusal) without
  // reading out of bounds (AddressSanitizer checks the reads in the sanitizer pass).
  std::mt19937 rng(12345);
  int loads = 0;
  for (int i = 0; i < 3000; ++i) {
    auto c = bytes;
    const int flips = 1 + static_cast<int>(rng() % 3);
    for (int f = 0; f < flips; ++f) c[rng() % c.size()] = static_cast<std::byte>(rng());
    loads += g::try_load_graph(c, ctx).has_value();
  }
  CHECK(loads < 3000);  // most corruptions are caught (a label or argument byte may change harmlessly)
}

TEST_CASE("save and load through a file: written whole, or not at all") {
  rig r1;
  pipeline p1(r1, 64, 1);
  const auto dir = std::filesystem::temp_directory_path() / ("aqueduct-save-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "pipeline.aqgraph").string();
  REQUIRE(g::try_save_file(path, capture_named(p1, 2, 1, 0), {&r1.exe}));
  CHECK(std::filesystem::exists(path));
  CHECK_FALSE(std::filesystem::exists(path + ".tmp"));
  rig r2;
  pipeline p2(r2, 64, 5);
  auto loaded = g::try_load_graph_file(path, context_of(p2));
  REQUIRE(loaded);
  auto exec = g::instantiate(*loaded);
  exec.wait(exec.launch());
  CHECK(p2.wrong(2, 1, 0) == 0);
  // A save that cannot write leaves nothing behind.
  const std::string nowhere = (dir / "no-such-dir" / "x.aqgraph").string();
  auto s = g::try_save_file(nowhere, capture_named(p1, 2, 1, 0), {&r1.exe});
  REQUIRE_FALSE(s);
  CHECK(s.get_failure().code() == aq::errc::io_error);
  CHECK_FALSE(std::filesystem::exists(nowhere + ".tmp"));
  auto missing = g::try_load_graph_file((dir / "absent.aqgraph").string(), context_of(p2));
  REQUIRE_FALSE(missing);
  CHECK(missing.get_failure().code() == aq::errc::io_error);
  std::filesystem::remove_all(dir);
}

}  // namespace AQ_UNITY_ID
