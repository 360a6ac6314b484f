// runtime/device_clock.hpp: GPU clock counter ticks to host steady_clock ns. The translation
// against samples whose answers are computed by hand; on the emulated device, SDMA TIMESTAMP and
// PM4 RELEASE_MEM stamps (GPU clock counter ticks) translated through the agent's calibration land
// between host clock readings taken before their submission and after their wait, an interval
// between two stamps matches the host's, and the raw stamps read as ns do not (the counter has
// an epoch of its own, as a real GPU's does).
#include <aqueduct/runtime.hpp>

#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <thread>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

namespace aq = aqueduct;
namespace rt = aqueduct::runtime;
namespace emu = aqueduct::emu;
using namespace std::chrono_literals;

namespace {

std::uint64_t host_ns() {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
}

// A calibration sample is exact to half the ioctl's window and one tick: allow 50 µs (a loaded
// machine), still 10^10 times less than the emulated counter's epoch.
constexpr std::uint64_t slack_ns = 50'000;

}  // namespace

TEST_CASE("ticks_to_host_ns: the rate of two samples, the nominal rate while they are close, before and past the latest") {
  const rt::clock_sample t0{1'000, 5'000'000}, t1{201'000, 7'000'000};  // 200,000 ticks in 2 ms: 10 ns a tick
  CHECK(rt::ticks_to_host_ns(t0, t1, 201'000) == 7'000'000);
  CHECK(rt::ticks_to_host_ns(t0, t1, 101'000) == 6'000'000);
  CHECK(rt::ticks_to_host_ns(t0, t1, 1'000) == 5'000'000);
  CHECK(rt::ticks_to_host_ns(t0, t1, 211'000) == 7'100'000);  // extrapolated past the latest
  const rt::clock_sample s1{201'000, 8'000'000};  // 200,000 ticks in 3 ms: 15 ns a tick
  CHECK(rt::ticks_to_host_ns(t0, s1, 101'000) == 6'500'000);
  CHECK(rt::ticks_to_host_ns(t0, s1, 203'000) == 8'030'000);
  // 1,000 ticks apart (fewer than min_calibration_ticks): their own ratio (30 ns a tick) is not
  // trusted; the nominal 100 MHz (10 ns a tick) from the latest sample.
  const rt::clock_sample n0{200'000, 6'970'000}, n1{201'000, 7'000'000};
  REQUIRE(rt::min_calibration_ticks > 1'000);
  CHECK(rt::ticks_to_host_ns(n0, n1, 201'500) == 7'005'000);
  CHECK(rt::ticks_to_host_ns(n1, n1, 200'500) == 6'995'000);
}

TEST_CASE("emulated device: SDMA and PM4 timestamps, translated, fall between the host readings around them") {
  auto sys = rt::system::try_open_emulated(emu::machine_config::parse("mi300x")).value();
  const auto& gpu = sys.default_agent();
  REQUIRE(gpu.try_mark_clock());
  auto mem = gpu.alloc<std::uint64_t>(8, rt::memory_kind::host);
  for (int i = 0; i < 8; ++i) mem[i] = 0;
  auto sdma = gpu.make_queue(aq::sdma);
  auto pm4 = gpu.make_queue(aq::pm4);

  // Two readings of the counter 20 ms apart advance by 20 ms of 100 MHz ticks (1 %).
  const auto a = gpu.try_sample_clock();
  std::this_thread::sleep_for(20ms);
  const auto b = gpu.try_sample_clock();
  REQUIRE(a);
  REQUIRE(b);
  const double ticks_per_ns = double(b->gpu - a->gpu) / double(b->host_ns - a->host_ns);
  CHECK(ticks_per_ns == doctest::Approx(0.1).epsilon(0.01));

  const std::uint64_t before_sdma = host_ns();
  auto ts = sdma.try_timestamp(mem.va());
  REQUIRE(ts);
  REQUIRE(sdma.try_wait(*ts, std::chrono::seconds(10)));
  const std::uint64_t after_sdma = host_ns();
  std::this_thread::sleep_for(20ms);
  const std::uint64_t before_pm4 = host_ns();
  rt::command_buffer cmds;
  pm4.encode_timestamp(cmds, mem.va() + aq::byte_count(8));
  REQUIRE(pm4.try_submit(cmds));
  REQUIRE(pm4.try_finish(std::chrono::seconds(10)));
  const std::uint64_t after_pm4 = host_ns();

  const std::uint64_t raw_sdma = mem[0], raw_pm4 = mem[1];
  REQUIRE(raw_sdma != 0);
  REQUIRE(raw_pm4 > raw_sdma);
  // The later stamp first (a new sample serves both, as try_device_to_host_ns asks).
  const auto pm4_ns = gpu.try_device_to_host_ns(raw_pm4);
  const auto sdma_ns = gpu.try_device_to_host_ns(raw_sdma);
  REQUIRE(pm4_ns);
  REQUIRE(sdma_ns);
  INFO("SDMA stamp " << *sdma_ns << " in [" << before_sdma << ", " << after_sdma << "]; PM4 stamp " << *pm4_ns << " in ["
                     << before_pm4 << ", " << after_pm4 << "]");
  CHECK(*sdma_ns + slack_ns >= before_sdma);
  CHECK(*sdma_ns <= after_sdma + slack_ns);
  CHECK(*pm4_ns + slack_ns >= before_pm4);
  CHECK(*pm4_ns <= after_pm4 + slack_ns);
  // The interval between them is the host's (20 ms and more), not a tenth of it.
  CHECK(*pm4_ns - *sdma_ns + slack_ns >= before_pm4 - after_sdma);
  CHECK(*pm4_ns - *sdma_ns <= after_pm4 - before_sdma + slack_ns);
  // Untranslated, neither reading of the raw stamps is anywhere near the host's clock.
  for (const std::uint64_t ns_if_raw : {raw_sdma, raw_sdma * 10}) {
    CHECK((ns_if_raw + 1'000'000'000 < before_sdma || ns_if_raw > after_sdma + 1'000'000'000));
  }
}

TEST_CASE("a GPU id the device does not know: the sample fails, naming the ioctl") {
  auto sys = rt::system::try_open_emulated(emu::machine_config::parse("mi300x")).value();
  const auto& gpu = sys.default_agent();
  auto d = sys.default_agent().state().sys->driver.ref();
  auto r = rt::detail::try_sample_clock(d, gpu.gpu_id() + 12345);
  REQUIRE_FALSE(r);
  CHECK(std::string(r.get_failure().describe()).find("GPU clock counter") != std::string::npos);
}

}  // namespace AQ_UNITY_ID
