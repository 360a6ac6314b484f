// runtime/copy.hpp and runtime/sdma_queue.hpp on emulated machines: SDMA copies through the real
// KFD path (CREATE_QUEUE of an SDMA queue, doorbell, emulated engine), the fallback to a shader
// copy when SDMA queues run out, peer copies on the source GPU's engine, and faults.
// Expected values: copy results from std::memcpy over the same host inputs; engine versions from
// spec/packets.md §3.2/§3.3 (gfx9 incl. MI300 → SDMA 4.x, gfx10.3 → 5.2, gfx11 → 6); SDMA queue
// exhaustion from the machine's own numbers (engines × the queues-per-engine knob, spec/kfd.md
// §2.6: no free SDMA queue id → ENOMEM); fault addresses from the buffers the test allocated.
#include <aqueduct/runtime.hpp>
#include <aqueduct/runtime/copy.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

namespace rt = aqueduct::runtime;
namespace emu = aqueduct::emu;
using aqueduct::errc;
using aqueduct::gpu_va;
using aqueduct::abi::sdma::engine;

namespace {

void pattern(unsigned char* p, std::size_t n, unsigned seed) {
  std::uint32_t x = 2463534242u ^ (seed * 2654435761u);
  for (std::size_t i = 0; i < n; ++i) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    p[i] = static_cast<unsigned char>(x);
  }
}

std::string hex(std::uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
  return b;
}

// host → device → host through `e` at odd offsets; compares against memcpy of the input.
void round_trip(const rt::agent& gpu, rt::copy_engine& e, std::size_t n, std::size_t off) {
  auto in = gpu.alloc<unsigned char>(n + 16, rt::memory_kind::host);
  auto dev = gpu.alloc<unsigned char>(n + 16, rt::memory_kind::device);
  auto out = gpu.alloc<unsigned char>(n + 16, rt::memory_kind::host);
  pattern(in.data(), n + 16, static_cast<unsigned>(n + off));
  std::memset(out.data(), 0x5A, n + 16);
  std::vector<unsigned char> expect(n + 16, 0x5A);
  std::memcpy(expect.data() + 3, in.data() + off, n);
  REQUIRE(e.try_copy(dev.va() + aqueduct::byte_count(1), in.va() + aqueduct::byte_count(off), n));
  REQUIRE(e.try_copy(out.va() + aqueduct::byte_count(3), dev.va() + aqueduct::byte_count(1), n));
  CHECK(std::memcmp(out.data(), expect.data(), n + 16) == 0);
}

}  // namespace

TEST_CASE("SDMA copies on every preset use the agent's engine version and round-trip byte for byte") {
  struct row {
    const char* machine;
    engine expected;
  };
  for (const row& r : {row{"mi300x", engine::v4_0}, row{"mi250x", engine::v4_0}, row{"rx6900xt", engine::v5_2},
                       row{"rx7900xtx", engine::v6_0}}) {
    CAPTURE(r.machine);
    auto sys = rt::system::open({.device = rt::device_choice::emulated, .machine = r.machine});
    const auto& gpu = sys.default_agent();
    auto e = rt::copy_engine::create(gpu);
    REQUIRE(e.method() == rt::copy_method::sdma);
    CHECK(e.sdma()->engine() == r.expected);
    CHECK(e.sdma()->emulated());
    for (std::size_t n : {std::size_t{1}, std::size_t{3}, std::size_t{4096}, std::size_t{4097}, std::size_t{65539}})
      round_trip(gpu, e, n, n % 4);
    // past one packet's maximum on the 22-bit engines (0x3FFF00, spec §3.3)
    if (r.expected == engine::v4_0) round_trip(gpu, e, 0x3FFF00 + 5, 1);
    // a fill
    auto f = gpu.alloc<std::uint32_t>(1024, rt::memory_kind::host);
    REQUIRE(e.try_fill(f.va() + aqueduct::byte_count(4), 0xC0FFEE11u, 4 * 1000));
    CHECK(f[0] == 0);
    CHECK(f[1] == 0xC0FFEE11u);
    CHECK(f[1000] == 0xC0FFEE11u);
    CHECK(f[1001] == 0);
  }
}

TEST_CASE("SDMA queue: poll dependency on a host-written word, timestamps, waits block on the KFD event") {
  auto sys = rt::system::open({.device = rt::device_choice::emulated, .machine = "rx7900xtx"});
  const auto& gpu = sys.default_agent();
  auto q = gpu.make_queue(rt::sdma);
  auto mem = gpu.alloc<std::uint64_t>(512, rt::memory_kind::host);
  auto* word = reinterpret_cast<std::uint32_t*>(mem.data());
  auto gate = q.try_wait_memory(mem.va(), 3);
  REQUIRE(gate);
  auto ts = q.try_timestamp(mem.va() + aqueduct::byte_count(64));
  REQUIRE(ts);
  CHECK(q.try_wait(*ts, std::chrono::milliseconds(30)).get_failure() == errc::timeout);
  CHECK(mem[8] == 0);  // nothing after the poll ran
  std::atomic_ref<std::uint32_t>(*word).store(3, std::memory_order_release);
  REQUIRE(q.try_wait(*ts, std::chrono::seconds(10)));
  CHECK(mem[8] != 0);
  CHECK(q.completed() == ts->value());
}

TEST_CASE("when SDMA queues run out, copies fall back to the shader copy with correct results") {
  auto cfg = emu::machine_config::parse("rx7900xtx");
  cfg.sdma_queues_per_engine = 1;  // the emulator's knob: 2 engines × 1 queue
  auto sys = rt::system::try_open_emulated(cfg).value();
  const auto& gpu = sys.default_agent();
  const std::uint32_t slots = static_cast<std::uint32_t>(gpu.node().properties.num_sdma_engines) * 1;
  REQUIRE(slots == 2);
  std::vector<rt::copy_engine> sdma_engines;
  for (std::uint32_t i = 0; i < slots; ++i) {
    sdma_engines.push_back(rt::copy_engine::create(gpu));
    CHECK(sdma_engines.back().method() == rt::copy_method::sdma);
  }
  // A raw SDMA queue now fails with out_of_resources (CREATE_QUEUE: ENOMEM).
  auto none = gpu.try_make_queue(rt::sdma);
  REQUIRE_FALSE(none);
  CHECK(none.get_failure() == errc::out_of_resources);
  CHECK(std::string(none.detail()).find("ENOMEM") != std::string::npos);

  rt::copy_options o;
  o.shader_chunk_bytes = 4096;  // many workgroups: chunk boundaries inside the copy
  auto fb = rt::copy_engine::create(gpu, o);
  REQUIRE(fb.method() == rt::copy_method::shader);
  CHECK(fb.fallback_reason().find("ENOMEM") != std::string::npos);
  for (std::size_t n : {std::size_t{1}, std::size_t{4095}, std::size_t{4097}, std::size_t{3 * 4096 + 7}, std::size_t{1 << 20}})
    round_trip(gpu, fb, n, 3);
  // The fill kernel beside the copy kernel: a dword fill on the shader path too, across three
  // 4 KiB workgroup chunks; partial dwords refused as on SDMA.
  auto words = gpu.alloc<std::uint32_t>(3002, rt::memory_kind::host);
  std::fill_n(words.data(), 3002, 7u);
  REQUIRE(fb.try_fill(words.va() + aqueduct::byte_count(4), 0xC0FFEE11u, 4 * 3000));
  std::uint32_t filled = 0;
  for (std::uint32_t i = 1; i <= 3000; ++i) filled += words[i] == 0xC0FFEE11u;
  CHECK(filled == 3000);
  CHECK(words[0] == 7);
  CHECK(words[3001] == 7);
  CHECK(fb.try_fill(words.va() + aqueduct::byte_count(2), 1u, 8).get_failure() == errc::invalid_argument);
  // The kernels are the agent's, loaded once: a second shader engine uses the same ones.
  auto fb2 = rt::copy_engine::create(gpu, o);
  CHECK(rt::try_shader_kernels(gpu).value() == rt::try_shader_kernels(gpu).value());
  round_trip(gpu, fb2, 5000, 4);
  // A fault on the shader path: an unmapped source.
  auto out = gpu.alloc<unsigned char>(64, rt::memory_kind::host);
  std::vector<unsigned char> stray(64);
  auto f = fb.try_copy(out.va(), gpu_va(reinterpret_cast<std::uintptr_t>(stray.data())), 64);
  REQUIRE_FALSE(f);
  CHECK(f.get_failure() == errc::device_fault);

  // Releasing an SDMA queue makes one available again.
  sdma_engines.pop_back();
  auto again = rt::copy_engine::create(gpu);
  CHECK(again.method() == rt::copy_method::sdma);
}

TEST_CASE("peer copies run on the source GPU's engine once the destination is mapped to it") {
  auto sys = rt::system::open({.device = rt::device_choice::emulated, .machine = "2*rx7900xtx"});
  REQUIRE(sys.agents().size() == 2);
  const auto& g0 = sys.agents()[0];
  const auto& g1 = sys.agents()[1];
  constexpr std::size_t n = 300000;
  auto in = g0.alloc<unsigned char>(n, rt::memory_kind::host);
  auto a = g0.alloc<unsigned char>(n, rt::memory_kind::device);
  auto b = g1.alloc<unsigned char>(n, rt::memory_kind::device);
  auto out = g1.alloc<unsigned char>(n, rt::memory_kind::host);
  pattern(in.data(), n, 77);
  std::vector<unsigned char> expect(in.data(), in.data() + n);
  auto e0 = rt::copy_engine::create(g0);
  auto e1 = rt::copy_engine::create(g1);
  REQUIRE(e0.method() == rt::copy_method::sdma);
  CHECK(e0.sdma()->gpu_id() == g0.gpu_id());
  REQUIRE(e0.try_copy(a, in));

  SUBCASE("without the peer mapping GPU 0's engine faults at the destination's first byte") {
    auto r = e0.try_copy(b, a);
    REQUIRE_FALSE(r);
    CHECK(r.get_failure() == errc::device_fault);
    CHECK(std::string(r.detail()).find(hex(b.address())) != std::string::npos);
    CHECK(sys.emulator()->engine(e0.sdma()->queue_id())->sdma()->error()->address == b.address());
  }
  SUBCASE("mapped to both GPUs: the copy runs on GPU 0's SDMA engine") {
    auto m = rt::peer_mapping::try_map(b, g0);
    REQUIRE(m);
    CHECK(m->peers() == std::vector<std::uint32_t>{g0.gpu_id()});
    CHECK(sys.emulator()->is_mapped(g0.gpu_id(), b.address(), n));
    CHECK(sys.emulator()->is_mapped(g1.gpu_id(), b.address(), n));
    const auto moved_before = sys.emulator()->engine(e0.sdma()->queue_id())->sdma()->bytes_moved();
    REQUIRE(e0.try_copy(b, a));
    CHECK(sys.emulator()->engine(e0.sdma()->queue_id())->sdma()->bytes_moved() == moved_before + n);  // GPU 0's engine did it
    REQUIRE(e1.try_copy(out, b));
    CHECK(std::memcmp(out.data(), expect.data(), n) == 0);
    // GPU 1's engine also reached the process event page (its completion mailbox) without a fault.
    CHECK_FALSE(e1.sdma()->fault());
    REQUIRE(e1.try_copy(out, b));
    m->reset();
    CHECK_FALSE(sys.emulator()->is_mapped(g0.gpu_id(), b.address(), n));
  }
  SUBCASE("try_copy_to_peer maps for the copy") {
    REQUIRE(rt::try_copy_to_peer(e0, b, a));
    CHECK_FALSE(sys.emulator()->is_mapped(g0.gpu_id(), b.address(), 1));
    REQUIRE(e1.try_copy(out, b));
    CHECK(std::memcmp(out.data(), expect.data(), n) == 0);
  }
  SUBCASE("GPU 1 reading GPU 0's buffer without a mapping faults too") {
    auto r = e1.try_copy(out, a);
    REQUIRE_FALSE(r);
    CHECK(r.get_failure() == errc::device_fault);
    CHECK(std::string(r.detail()).find(hex(a.address())) != std::string::npos);
  }
}

TEST_CASE("an SDMA fault on an unmapped address is reported, and the queue stays failed") {
  auto sys = rt::system::open({.device = rt::device_choice::emulated, .machine = "mi300x"});
  const auto& gpu = sys.default_agent();
  auto e = rt::copy_engine::create(gpu);
  auto buf = gpu.alloc<unsigned char>(8192, rt::memory_kind::host);
  std::vector<unsigned char> stray(4096);
  const std::uint64_t bad = reinterpret_cast<std::uintptr_t>(stray.data()) + 17;
  auto r = e.try_copy(buf.va(), gpu_va(bad), 100);
  REQUIRE_FALSE(r);
  CHECK(r.get_failure() == errc::device_fault);
  CHECK(std::string(r.detail()).find(hex(bad)) != std::string::npos);
  // Later work on the failed queue fails at once.
  auto r3 = e.try_copy(buf.va(), buf.va() + aqueduct::byte_count(100), 10);
  REQUIRE_FALSE(r3);
  CHECK(r3.get_failure() == errc::device_fault);
  // A new copy engine of the same GPU fails too: after a memory fault the kernel evicts every queue
  // of the process on that GPU for good (docs/emulator.md), so its copy is refused with the fault.
  auto e_after = rt::copy_engine::create(gpu);
  auto r4 = e_after.try_copy(buf.va(), buf.va() + aqueduct::byte_count(100), 10);
  REQUIRE_FALSE(r4);
  CHECK(r4.get_failure() == errc::device_fault);
  CHECK(std::string(r4.detail()).find("GPU memory fault on gpu_id " + std::to_string(gpu.gpu_id())) != std::string::npos);
}

TEST_CASE("an SDMA copy that runs off the end of a mapped buffer reports the first byte past it") {
  // The first byte that no BO mapped to this GPU covers (found here with the device's own VM
  // query, page by page). A system of its own: a fault ends every queue of its GPU.
  auto sys = rt::system::open({.device = rt::device_choice::emulated, .machine = "mi300x"});
  const auto& gpu = sys.default_agent();
  auto buf = gpu.alloc<unsigned char>(8192, rt::memory_kind::host);
  auto e2 = rt::copy_engine::create(gpu);
  auto big = gpu.alloc<unsigned char>(1 << 20, rt::memory_kind::host);
  const std::uint64_t dst = buf.address() + 4096;
  std::uint64_t expect = buf.address() + 8192;
  while (sys.emulator()->is_mapped(gpu.gpu_id(), expect, 1)) expect += 4096;
  REQUIRE(expect < dst + (1 << 20));
  auto r2 = e2.try_copy(gpu_va(dst), big.va(), 1 << 20);
  REQUIRE_FALSE(r2);
  CHECK(r2.get_failure() == errc::device_fault);
  CHECK(sys.emulator()->engine(e2.sdma()->queue_id())->sdma()->error()->address == expect);
}

TEST_CASE("an SDMA queue on a chosen engine (SDMA_BY_ENG_ID) lands on that engine and copies") {
  // mi300x: 2 PCIe SDMA engines + 14 XGMI engines; BY_ENG_ID scans ids from the requested engine
  // with a stride of the pool's engine count (spec/kfd.md §2.6).
  auto sys = rt::system::open({.device = rt::device_choice::emulated, .machine = "mi300x"});
  const auto& gpu = sys.default_agent();
  for (std::uint32_t want : {1u, 5u}) {
    CAPTURE(want);
    rt::copy_options o;
    o.sdma.engine_id = want;
    auto e = rt::copy_engine::create(gpu, o);
    REQUIRE(e.method() == rt::copy_method::sdma);
    std::optional<emu::queue_info> info;
    for (const auto& q : sys.emulator()->queues())
      if (q.queue_id == e.sdma()->queue_id()) info = q;
    REQUIRE(info);
    CHECK(info->sdma_engine == want);
    CHECK(info->type == (want < 2 ? aqueduct::abi::kfd::queue_type_sdma : aqueduct::abi::kfd::queue_type_sdma_xgmi));
    round_trip(gpu, e, 5000, 1);
  }
}

TEST_CASE("copier: any two buffers, on the source buffer's GPU, peer-mapping the destination") {
  auto sys = rt::system::open({.device = rt::device_choice::emulated, .machine = "2*rx7900xtx"});
  const auto& g0 = sys.agents()[0];
  const auto& g1 = sys.agents()[1];
  constexpr std::size_t n = 123457;
  auto in = g0.alloc<unsigned char>(n, rt::memory_kind::host);
  auto a = g0.alloc<unsigned char>(n, rt::memory_kind::device);
  auto b = g1.alloc<unsigned char>(n, rt::memory_kind::device);
  auto out = g0.alloc<unsigned char>(n, rt::memory_kind::host);  // host memory of GPU 0: GPU 1 writes it through a peer mapping
  pattern(in.data(), n, 5);
  rt::copier c(sys.agents());
  REQUIRE(c.try_copy(a, in));
  REQUIRE(c.try_copy(b, a));   // GPU 0's engine
  REQUIRE(c.try_copy(out, b));  // GPU 1's engine
  CHECK(std::memcmp(out.data(), in.data(), n) == 0);
  auto e0 = c.try_engine_for(g0.gpu_id());
  auto e1 = c.try_engine_for(g1.gpu_id());
  REQUIRE(e0);
  REQUIRE(e1);
  CHECK(sys.emulator()->engine((*e0)->sdma()->queue_id())->sdma()->bytes_moved() == 2 * n);  // in→a and a→b
  CHECK(sys.emulator()->engine((*e1)->sdma()->queue_id())->sdma()->bytes_moved() == n);      // b→out
  CHECK_FALSE(sys.emulator()->is_mapped(g1.gpu_id(), out.address(), 1));  // peer mapping ended
  CHECK(c.try_engine_for(12345).get_failure() == errc::not_found);
}

TEST_CASE("SDMA work waits on a runtime signal and sets one that a host wait (KFD event) sees") {
  auto sys = rt::system::open({.device = rt::device_choice::emulated, .machine = "rx7900xtx"});
  const auto& gpu = sys.default_agent();
  auto q = gpu.make_queue(rt::sdma);
  auto gate = gpu.make_signal(1);
  auto done = gpu.make_signal(1);
  auto src = gpu.alloc<unsigned char>(4096, rt::memory_kind::host);
  auto dst = gpu.alloc<unsigned char>(4096, rt::memory_kind::host);
  pattern(src.data(), 4096, 3);
  REQUIRE(q.try_wait_signal(gate.ref(), 0));  // value == 0
  REQUIRE(q.try_copy(dst.va(), src.va(), 4096));
  REQUIRE(q.try_signal(done.ref(), 0));
  CHECK(done.try_wait_eq(0, std::chrono::milliseconds(30)).get_failure() == errc::timeout);
  CHECK(dst[0] == 0);
  gate.store(0);
  REQUIRE(done.try_wait_eq(0, std::chrono::seconds(10)));
  CHECK(std::memcmp(dst.data(), src.data(), 4096) == 0);
  CHECK_FALSE(q.fault());
}

}  // namespace AQ_UNITY_ID
