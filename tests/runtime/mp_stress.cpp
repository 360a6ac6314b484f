// runtime: many producers, one small queue. 4 threads dispatch into one 16-slot queue; every
// packet's kernargs carry (producer, sequence number), and the emulated processor checks each
// packet as it consumes it (aql_processor_options::sequence_check): per producer the sequence
// must be 0, 1, 2, ... — a lost packet shows as a gap, a duplicated one as a repeat, a slot or
// kernarg overwritten before it was consumed as a wrong or repeated number. At the end every
// producer's count must be complete and the total equal to what was dispatched.
// The default suite runs the full 1,000,000 dispatches (about 10 s on the 2-core build machine);
// AQUEDUCT_MP_DISPATCHES overrides (the sanitizer runs use fewer).
#include "host_kernels.hpp"

#include <doctest/doctest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

namespace aq = aqueduct;
namespace rt = aqueduct::runtime;
using namespace rt_test;

namespace {
struct seq_args {
  std::uint32_t producer;
  std::uint32_t seq;
};
constexpr unsigned producers = 4;

std::uint64_t dispatch_count() {
  if (const char* e = std::getenv("AQUEDUCT_MP_DISPATCHES")) return std::strtoull(e, nullptr, 0);
  return 1'000'000;
}
}  // namespace

TEST_CASE("4 producers x one 16-slot queue: none lost, none duplicated, none overwritten") {
  const std::uint64_t total = dispatch_count() / producers * producers;
  // Processor-thread state (the check runs there; the host reads it after try_finish, whose
  // acquire of the read index orders it).
  std::array<std::uint32_t, producers> expected{};
  std::uint64_t checked = 0, bad = 0;
  std::string first_bad;
  aq::emu::engine_options emu_opt;
  std::uint64_t others = 0;  // barrier packets a blocking finish publishes (its wake-up) — not dispatches
  emu_opt.aql.sequence_check = [&](std::uint64_t index, const aq::abi::aql_slot& slot) {
    std::uint16_t header;
    std::memcpy(&header, slot.bytes, sizeof header);
    if (aq::abi::header_type(header) != aq::abi::packet_type::kernel_dispatch) {
      ++others;
      return true;
    }
    aq::abi::kernel_dispatch_packet p;
    std::memcpy(&p, slot.bytes, sizeof p);
    seq_args a;
    std::memcpy(&a, reinterpret_cast<const void*>(static_cast<std::uintptr_t>(p.kernarg_address)), sizeof a);
    ++checked;
    if (a.producer >= producers || a.seq != expected[a.producer]) {
      if (bad++ == 0) {
        char buf[160];
        std::snprintf(buf, sizeof buf, "packet %llu: producer %u seq %u, expected %u",
                      static_cast<unsigned long long>(index), a.producer, a.seq,
                      a.producer < producers ? expected[a.producer] : 0u);
        first_bad = buf;
      }
      return false;
    }
    ++expected[a.producer];
    return true;
  };
  auto dev = aq::emu::device::try_create("mi300x");
  REQUIRE(dev.has_value());
  emu_opt.aql.adversarial = dev->get_engine_options().aql.adversarial;  // $AQUEDUCT_EMU_ADVERSARIAL
  dev->set_engine_options(emu_opt);
  auto sys = rt::system::try_adopt(std::move(*dev));
  REQUIRE(sys.has_value());
  const auto& gpu = sys->default_agent();
  aq::emu::host_code_object hco;
  hco.kernels.push_back({"seq", nothing, sizeof(seq_args), 0});
  auto exe = aq::emu::load(gpu, hco);
  auto k = exe.get_untyped_kernel("seq");
  auto q = gpu.make_queue(aq::aql, {.slots = 16, .kernarg_bytes = 64});

  const auto t0 = std::chrono::steady_clock::now();
  std::atomic<std::uint64_t> failures{0};
  std::vector<std::thread> threads;
  for (std::uint32_t p = 0; p < producers; ++p)
    threads.emplace_back([&, p] {
      for (std::uint32_t s = 0; s < total / producers; ++s)
        if (!q.try_dispatch(k, rt::grid{1}, rt::block{1}, seq_args{p, s}).has_value()) failures.fetch_add(1);
    });
  for (auto& t : threads) t.join();
  auto fin = q.try_finish(std::chrono::seconds(120));
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("mp_stress: %llu dispatches from %u producers through a 16-slot queue in %.2f s (%.0f /s)\n",
              static_cast<unsigned long long>(total), producers, secs, total / secs);
  INFO(first_bad);
  INFO(std::string(fin.detail()));
  REQUIRE(fin.has_value());
  CHECK(failures.load() == 0);
  CHECK(bad == 0);
  CHECK(checked == total);
  for (std::uint32_t p = 0; p < producers; ++p) CHECK(expected[p] == total / producers);
  // A wake-up barrier published behind the dispatches may still be on its way through the
  // processor: the read index (released after its check ran) says when every packet was seen.
  const auto seen_by = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (q.read_index() != q.write_index() && std::chrono::steady_clock::now() < seen_by) std::this_thread::yield();
  REQUIRE(q.read_index() == q.write_index());
  CHECK(q.write_index() == total + others);  // nothing but the dispatches and the wake-ups
}

}  // namespace AQ_UNITY_ID
