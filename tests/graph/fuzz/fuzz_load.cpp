// libFuzzer target: graph/save.hpp's reader. Any input either loads into a task_graph or is
// refused with a failure; never a crash, an out-of-bounds read (ASan) or undefined behaviour
// (UBSan). The load is given what the seed graph needs (three queues, the test kernels, four
// named buffers, a host function), so mutations of the seed get past the tables into the nodes.
// LLVMFuzzerInitialize writes that seed (a saved AQL -> SDMA -> PM4 pipeline with graph memory
// and a WHILE) into the first corpus directory, so no binary seed is committed.
#include "../kernels.hpp"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

namespace g = aqueduct::graph;
namespace rt = aqueduct::runtime;

namespace {
struct world {
  graph_test::rig r;
  rt::buffer<std::uint32_t> x = r.host_buffer(64), y = r.host_buffer(64), z = r.host_buffer(64), w = r.host_buffer(64);
  rt::buffer<std::uint64_t> word = r.gpu.alloc<std::uint64_t>(1, rt::memory_kind::host);
  g::load_context ctx;
  world() {
    ctx.queue(r.aql).queue(r.sdma).queue(r.pm4).code(r.exe);
    ctx.buffer("x", x).buffer("y", y).buffer("z", z).buffer("w", w).buffer("word", word);
    ctx.host("tick", [] {});
  }
  g::task<void> prog() {
    auto tmp = co_await g::alloc<std::uint32_t>(r.gpu, 64).label("tmp");
    co_await g::on(r.aql).dispatch(r.axpb_k, rt::grid{64}, rt::block{64}, tmp, x, 3u, 4u, 64u).label("scale");
    co_await g::on(r.sdma).copy(y.va(), tmp.va(), 256);
    co_await g::free(tmp);
    co_await g::on(r.pm4).dispatch(r.add_k, rt::grid{64}, rt::block{64}, w, y, 1u, 64u);
    co_await g::on(r.pm4).dispatch(r.put64_k, rt::grid{1}, rt::block{1}, word, std::uint64_t{3});
    co_await g::while_loop(g::on(r.pm4), word, [this]() -> g::task<void> {
      co_await g::on(r.pm4).dispatch(r.countdown_k, rt::grid{1}, rt::block{1}, word, z);
    }, {.max_iterations = 4});
    co_await g::host([] {}).label("tick");
  }
  std::vector<std::byte> seed() {
    g::task_graph tg = g::capture(prog());
    tg.name("x", x);
    tg.name("y", y);
    tg.name("z", z);
    tg.name("w", w);
    tg.name("word", word);
    return g::try_save(tg, {&r.exe}).value();
  }
};
world& the_world() {
  static world* w = new world();  // never destroyed: libFuzzer exits without unwinding
  return *w;
}
}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  for (int i = 1; i < *argc; ++i) {
    const std::string a = (*argv)[i];
    if (a.empty() || a[0] == '-') continue;
    const auto s = the_world().seed();
    std::ofstream(a + "/seed-pipeline.aqgraph", std::ios::binary).write(reinterpret_cast<const char*>(s.data()), static_cast<std::streamsize>(s.size()));
    break;
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  if (auto g = g::try_load_graph(bytes, the_world().ctx)) (void)g->to_dot();
  (void)g::try_inspect_saved(bytes);
  return 0;
}
