// runtime: a real gfx1030 code object (clang-19, built at build time) loads through code/ into
// the emulated RX 6900 XT's code memory like any code object, and is refused at the dispatch
// gate with a clear error: the emulator runs host kernels and the machine code of the processors
// its ISA interpreter runs (gfx11, gfx12, gfx90a, gfx942; tests/runtime/isa_kernels.cpp), not
// gfx10.3. If the gate is bypassed (a kernel made by hand from the loaded descriptor), the
// emulated processor stops the queue with a decoded error instead of running anything.
#include <aqueduct/runtime.hpp>

#include <doctest/doctest.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

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
