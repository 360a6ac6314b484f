// multi_producer — several threads dispatch into ONE AQL queue at once, and every dispatch is
// verified: thread t's k-th dispatch writes (t << 24 | k) + 1 into its own cell, so a lost, doubled
// or misrouted dispatch leaves a wrong or empty cell.
//
// The queue is multi-producer (a compare-and-swap on write_dispatch_id claims slots, bounded by
// the read index; each producer publishes its own headers; the doorbell carries the highest
// published index — docs/queues.md). On the emulated device (default when there is no GPU;
// AQUEDUCT_EMULATE picks the machine) the kernel is a host function; with --gfx it is clang-built
// machine code (mark.hip, built by clang-19 for the agent's processor: mark-<gfx>.co next to the
// build), run by the emulator's ISA interpreter or by a real GPU.
//
// Usage: multi_producer [--threads N] [--per-thread N] [--slots N] [--gfx]
#include <aqueduct/emu/isa.hpp>  // machine code on the emulated device (--gfx)
#include <aqueduct/runtime.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace aq = aqueduct;
namespace rt = aqueduct::runtime;

namespace {
struct mark_args {
  std::uint64_t cells;
  std::uint32_t index;
  std::uint32_t value;
};
void mark(aq::emu::workgroup_context& ctx) {
  const aq::emu::host_workgroup wg(ctx);
  const auto a = wg.args<mark_args>();
  ctx.store<std::uint32_t>(a.cells + 4ull * a.index, a.value);
}
int fail(const char* what, std::string_view d) {
  std::fprintf(stderr, "multi_producer: %s: %.*s\n", what, static_cast<int>(d.size()), d.data());
  return 1;
}
}  // namespace

int main(int argc, char** argv) {
  unsigned threads = 4;
  std::uint32_t per_thread = 50000, slots = 64;
  bool gfx = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--gfx")) gfx = true;
    else if (i + 1 < argc && !std::strcmp(argv[i], "--threads")) threads = static_cast<unsigned>(std::atoi(argv[++i]));
    else if (i + 1 < argc && !std::strcmp(argv[i], "--per-thread")) per_thread = static_cast<std::uint32_t>(std::atoi(argv[++i]));
    else if (i + 1 < argc && !std::strcmp(argv[i], "--slots")) slots = static_cast<std::uint32_t>(std::atoi(argv[++i]));
    else return fail("arguments", "usage: multi_producer [--threads N] [--per-thread N] [--slots N] [--gfx]");
  }
  if (threads == 0 || threads > 255 || per_thread == 0 || per_thread >= (1u << 24))
    return fail("arguments", "threads in 1..255, per-thread in 1..2^24-1");

  auto sys = aq::system::try_open();
  if (!sys) return fail("opening the system", sys.detail());
  const aq::agent& gpu = sys->default_agent();
  std::printf("%s\n", sys->describe().c_str());
  if (!gfx && !gpu.emulated()) return fail("code", "the host kernel runs only on the emulator: pass --gfx for clang-built machine code");

  aq::result<aq::executable> exe = aq::failure(aq::errc::not_found, "no code");
  std::vector<std::byte> bytes;
  if (gfx) {
    const std::string path = std::string(AQUEDUCT_MARK_GFX_DIR) + "/mark-" + gpu.gfx_name() + ".co";
    std::printf("code: %s (machine code for %s)\n", path.c_str(), gpu.gfx_name().c_str());
    std::ifstream in(path, std::ios::binary);
    if (!in) return fail("no machine code for this agent (--gfx has code objects for the processors in MARK_GFX_TARGETS, examples/multi_producer/CMakeLists.txt)", path);
    for (char ch; in.get(ch);) bytes.push_back(static_cast<std::byte>(ch));
    exe = gpu.try_load(std::span<const std::byte>(bytes));
  } else {
    aq::emu::host_code_object hco;
    hco.kernels.push_back({"mark", mark, sizeof(mark_args), 0});
    exe = aq::emu::try_load(gpu, hco);
  }
  if (!exe) return fail("loading", exe.detail());
  auto k = exe->get_untyped_kernel("mark");
  const std::size_t cells_n = std::size_t{threads} * per_thread;
  auto cells = gpu.try_alloc<std::uint32_t>(cells_n, aq::memory_kind::host);
  if (!cells) return fail("allocating", cells.detail());
  for (std::size_t i = 0; i < cells_n; ++i) (*cells)[i] = 0;
  // Kernarg slots large enough for the kernel's (clang's add 256 bytes of hidden arguments).
  const std::uint32_t kernarg_bytes = std::max<std::uint32_t>(256, (k.kernarg_size + 63) / 64 * 64);
  auto q = gpu.try_make_queue(aq::aql, {.slots = slots, .kernarg_bytes = kernarg_bytes});
  if (!q) return fail("creating the queue", q.detail());

  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> producers;
  std::vector<int> errors(threads, 0);
  for (unsigned t = 0; t < threads; ++t)
    producers.emplace_back([&, t] {
      for (std::uint32_t j = 0; j < per_thread; ++j) {
        const std::uint32_t cell = t * per_thread + j;
        if (!q->try_dispatch(k, aq::grid{1}, aq::block{1}, *cells, cell, ((t << 24) | j) + 1).has_value()) ++errors[t];
      }
    });
  for (auto& p : producers) p.join();
  if (auto w = q->try_finish(std::chrono::seconds(120)); !w) return fail("waiting", w.detail());
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  std::size_t wrong = 0;
  for (unsigned t = 0; t < threads; ++t)
    for (std::uint32_t j = 0; j < per_thread; ++j)
      if ((*cells)[t * per_thread + j] != ((t << 24) | j) + 1) ++wrong;
  int submit_errors = 0;
  for (int e : errors) submit_errors += e;
  std::printf("%u threads x %u dispatches into one %u-slot queue: %.2f s (%.0f dispatches/s); "
              "read_dispatch_id %llu of %llu written; %zu wrong cells, %d submit errors\n",
              threads, per_thread, q->size(), secs, cells_n / secs,
              static_cast<unsigned long long>(q->read_index()),
              static_cast<unsigned long long>(q->write_index()), wrong, submit_errors);
  // Every packet written was consumed; besides the dispatches the ring may hold the barrier a
  // blocking wait publishes so the device wakes it (runtime/queue.hpp, arm_wake).
  if (wrong || submit_errors || q->read_index() != q->write_index() || q->write_index() < cells_n) return fail("verification", "FAILED");
  std::printf("verified: every dispatch ran exactly once\n");
  return 0;
}
