// runtime: a real gfx1030 code object (clang-19, built at build time) loads through code/ into
// the emulated RX 6900 XT's code memory like any code object, and is refused at the dispatch
// gate with a clear error: the emulator runs host kernels and the machine code of the processors
// its ISA interpreter runs (gfx11, gfx12, gfx90a, gfx942; tests/runtime/isa_kernels.cpp), not
// gfx10.3. If the gate is bypassed (a kernel made by hand from the loaded descriptor), the
// emulated processor stops the queue with a decoded error instead of running anything.
#include <aqueduct/emu/isa.hpp>  // the ISA interpreters (griddim runs as machine code)
#include <aqueduct/runtime.hpp>

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

namespace aq = aqueduct;
namespace rt = aqueduct::runtime;

TEST_CASE("gfx code object on the emulator: loaded, refused at the gate, and the processor refuses it too") {
  const char* path = std::getenv("AQUEDUCT_RT_GFX_CO");
  REQUIRE(path != nullptr);
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in.good());
  std::vector<std::byte> bytes;
  for (char ch; in.get(ch);) bytes.push_back(static_cast<std::byte>(ch));
  REQUIRE(bytes.size() > 64);

  auto sys = rt::system::open({.machine = "rx6900xt"});
  const auto& gpu = sys.default_agent();
  auto exe = gpu.try_load(std::span<const std::byte>(bytes));
  INFO(std::string(exe.detail()));
  REQUIRE(exe.has_value());
  REQUIRE(exe->kernels().size() == 1);
  CHECK(exe->kernels()[0].processor.find("gfx1030") != std::string::npos);
  // The typed lookup checks the declared parameters against clang's metadata first: the
  // kernel's own signature passes that check (and then meets the gate), a swapped or resized
  // one is refused naming the argument.
  auto wrong = exe->try_get_kernel<const float*, std::uint32_t, const float*, float*>("vadd");
  REQUIRE_FALSE(wrong.has_value());
  CHECK(wrong.error() == aq::errc::invalid_argument);
  INFO(std::string(wrong.detail()));
  CHECK(std::string(wrong.detail()).find("argument 1") != std::string::npos);
  CHECK(std::string(wrong.detail()).find("is global_buffer, declared as by_value") != std::string::npos);
  auto wrong_size = exe->try_get_kernel<const float*, const float*, float*, std::uint64_t>("vadd");
  REQUIRE_FALSE(wrong_size.has_value());
  CHECK(std::string(wrong_size.detail()).find("argument 3") != std::string::npos);
  CHECK(std::string(wrong_size.detail()).find("has 4 bytes, declared 8") != std::string::npos);
  auto too_few = exe->try_get_kernel<const float*, const float*, float*>("vadd");
  REQUIRE_FALSE(too_few.has_value());
  CHECK(std::string(too_few.detail()).find("it takes 4 arguments, 3 declared") != std::string::npos);
  auto k = exe->try_get_kernel<const float*, const float*, float*, std::uint32_t>("vadd");
  REQUIRE_FALSE(k.has_value());
  CHECK(k.error() == aq::errc::not_supported);
  CHECK(std::string(k.detail()).find("gfx1030") != std::string::npos);
  CHECK(std::string(k.detail()).find("emulated device") != std::string::npos);

  // Bypass the gate: the processor finds no emulated code at the descriptor's entry.
  const auto& lk = exe->kernels()[0];
  rt::untyped_kernel raw{lk.name, lk.kernel_object, static_cast<std::uint32_t>(lk.kernarg_segment_size),
                 lk.group_segment_fixed_size, lk.private_segment_fixed_size, lk.code_kind};
  auto a = gpu.alloc<float>(256, rt::memory_kind::host);
  auto q = gpu.make_queue(aq::aql, {.slots = 16, .kernarg_bytes = 512});
  auto idx = q.try_dispatch(raw, rt::grid{256}, rt::block{256}, a, a, a, 256u);
  REQUIRE(idx.has_value());
  auto w = q.try_wait(*idx, std::chrono::seconds(10));
  REQUIRE_FALSE(w.has_value());
  CHECK(w.error() == aq::errc::queue_error);
  CHECK(std::string(w.detail()).find("no emulated code") != std::string::npos);
  CHECK(std::string(w.detail()).find("KERNEL_DISPATCH") != std::string::npos);  // the packet, decoded
}

// Issue 13 bug 10: a code object for another processor was accepted (only "emulated vs real" was
// checked); on hardware the wrong ISA would be dispatched. Both directions, with clang-19's
// gfx942 and gfx1100 builds of one kernel: refused at load, naming both processors.
TEST_CASE("bug 10: a gfx1030 code object on a gfx1100 agent, and a gfx1100 one on a gfx942 agent, are refused at load") {
  struct c {
    const char* env;
    const char* code;
    const char* machine;
    const char* agent;
  };
  for (const c& x : {c{"AQUEDUCT_RT_GFX_CO", "gfx1030", "rx7900xtx", "gfx1100"},
                     c{"AQUEDUCT_RT_GFX1100_CO", "gfx1100", "mi300x", "gfx942"}}) {
    const std::string code_processor = x.code;
    CAPTURE(code_processor);
    const char* path = std::getenv(x.env);
    REQUIRE(path != nullptr);
    std::ifstream in(path, std::ios::binary);
    REQUIRE(in.good());
    std::vector<std::byte> bytes;
    for (char ch; in.get(ch);) bytes.push_back(static_cast<std::byte>(ch));
    auto sys = rt::system::open({.machine = x.machine});
    const auto& gpu = sys.default_agent();
    REQUIRE(gpu.gfx_name() == x.agent);
    auto exe = gpu.try_load(std::span<const std::byte>(bytes));
    REQUIRE_FALSE(exe.has_value());
    CHECK(exe.error() == aq::errc::no_compatible_isa);
    const std::string d(exe.detail());
    INFO(d);
    CHECK(d.find(x.code) != std::string::npos);
    CHECK(d.find(x.agent) != std::string::npos);
  }
}

namespace {
// A code object tests/runtime/CMakeLists.txt built with clang-19: <dir>/<name>-<arch>.co.
std::vector<std::byte> fixture(const char* dir, const char* name, const char* arch) {
  const std::string path = std::string(dir) + "/" + name + "-" + arch + ".co";
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in.good(), path);
  std::vector<std::byte> bytes;
  for (char ch; in.get(ch);) bytes.push_back(static_cast<std::byte>(ch));
  return bytes;
}
// The emulated machines the fixtures are built for: gfx11 wave32 and gfx9 wave64.
struct isa_machine {
  const char* machine;
  const char* arch;
};
constexpr isa_machine isa_machines[] = {{"rx7900xtx", "gfx1100"}, {"mi300x", "gfx942"}};
}  // namespace

// PM4 DISPATCH_INDIRECT of clang-built machine code: the queue has the GPU copy the counts into
// the kernel's code object v5 hidden_block_count_x/y/z (COPY_DATA) before the dispatch, so
// gridDim is right although the host never knew the grid. griddim.hip writes
// count_x | count_y << 8 | count_z << 16 at each workgroup's linear index (from those hidden
// arguments); the counts are written after the submission, while the queue is held.
TEST_CASE("dispatch_indirect of a clang-built kernel: the hidden block counts are the counts the GPU read") {
  const char* dir = std::getenv("AQUEDUCT_RT_GRIDDIM_DIR");
  REQUIRE(dir != nullptr);
  for (const auto& x : isa_machines) {
    INFO("machine " << std::string(x.machine));
    const auto bytes = fixture(dir, "griddim", x.arch);
    auto sys = rt::system::open({.machine = x.machine});
    const auto& gpu = sys.default_agent();
    auto exe = gpu.load(std::span<const std::byte>(bytes));
    auto k = exe.get_kernel<std::uint32_t*>("griddim");
    auto q = gpu.make_queue(rt::pm4, {.kernarg_bytes = 512});  // 8 bytes + clang's 256 of hidden arguments
    auto gate = gpu.alloc<std::uint32_t>(1, rt::memory_kind::host);
    auto counts = gpu.alloc<std::uint32_t>(3, rt::memory_kind::host);
    auto out = gpu.alloc<std::uint32_t>(64, rt::memory_kind::host);
    gate[0] = 0;
    counts[0] = counts[1] = counts[2] = 1;
    for (int i = 0; i < 64; ++i) out[i] = 0;
    rt::command_buffer hold;
    q.encode_wait(hold, gate.va(), 1);
    REQUIRE(q.try_submit(hold).has_value());
    auto t = q.try_dispatch_indirect(k, counts.va(), rt::block{64}, out);
    REQUIRE_MESSAGE(t.has_value(), std::string(t.detail()));
    counts[0] = 3;
    counts[1] = 2;
    counts[2] = 2;
    std::atomic_ref<std::uint32_t>(gate[0]).store(1, std::memory_order_release);
    auto w = q.try_wait(*t, std::chrono::seconds(20));
    REQUIRE_MESSAGE(w.has_value(), std::string(w.detail()));
    const std::uint32_t expect = 3u | 2u << 8 | 2u << 16;
    int right = 0, written = 0;
    for (int i = 0; i < 64; ++i) {
      written += out[i] != 0;
      right += i < 12 && out[i] == expect;
    }
    CHECK(written == 12);
    CHECK(right == 12);
  }
}

// hidden_heap_v1 as CLR fills it for HIP (ROCm/clr rocclr/device/rocm/rocdevice.cpp
// Device::HiddenHeapAlloc: one heap per device, HeapBufferSize 128 KiB, zeroed by
// __ockl_dm_init_v1 before first use; rocvirtual.cpp writes its address at each dispatch of a kernel
// that lists the argument). heap.hip's `heap` reads the pointer at implicit byte 96 and ORs all
// 32,768 dwords behind it (a fault if any is unmapped); `heap_put` writes the last one.
TEST_CASE("hidden_heap_v1: one zeroed 128 KiB device heap per agent, the same through AQL, PM4 and every executable") {
  const char* dir = std::getenv("AQUEDUCT_RT_GRIDDIM_DIR");
  REQUIRE(dir != nullptr);
  for (const auto& x : isa_machines) {
    INFO("machine " << std::string(x.machine));
    const auto bytes = fixture(dir, "heap", x.arch);
    auto sys = rt::system::open({.machine = x.machine});
    const auto& gpu = sys.default_agent();
    auto exe = gpu.load(std::span<const std::byte>(bytes));
    auto heap = exe.get_kernel<std::uint64_t*, std::uint32_t*>("heap");
    auto where = gpu.alloc<std::uint64_t>(1, rt::memory_kind::host);
    auto bits = gpu.alloc<std::uint32_t>(1, rt::memory_kind::host);
    auto q = gpu.make_queue(aq::aql, {.slots = 16, .kernarg_bytes = 512});
    auto run_aql = [&] {
      where[0] = 0, bits[0] = 0;
      auto w = q.try_wait(q.dispatch(heap, rt::grid{256}, rt::block{256}, where, bits), std::chrono::seconds(60));
      REQUIRE_MESSAGE(w.has_value(), std::string(w.detail()));
    };
    run_aql();
    const std::uint64_t h = where[0];
    CHECK(h != 0);
    CHECK(h % 4096 == 0);
    CHECK(bits[0] == 0u);  // 128 KiB, every dword mapped and zero
    // The same heap through a PM4 queue.
    auto pq = gpu.make_queue(rt::pm4, {.kernarg_bytes = 512});
    where[0] = 0, bits[0] = 0;
    auto pw = pq.try_wait(pq.dispatch(heap, rt::grid{256}, rt::block{256}, where, bits), std::chrono::seconds(60));
    REQUIRE_MESSAGE(pw.has_value(), std::string(pw.detail()));
    CHECK(where[0] == h);
    CHECK(bits[0] == 0u);
    // Another executable on the same agent shares it, and what a kernel leaves in it stays.
    auto exe2 = gpu.load(std::span<const std::byte>(bytes));
    auto put = exe2.get_kernel<std::uint32_t>("heap_put");
    REQUIRE(q.try_wait(q.dispatch(put, rt::grid{64}, rt::block{64}, 0x5A5A0001u), std::chrono::seconds(60)).has_value());
    run_aql();
    CHECK(where[0] == h);
    CHECK(bits[0] == 0x5A5A0001u);
  }
}

}  // namespace AQ_UNITY_ID
