// aqueduct/runtime/device_clock.hpp — a GPU's clock counter mapped onto the host's steady_clock:
// what turns device timestamps into the nanoseconds of the host spans they are drawn next to.
//
// Layer: runtime. Every timestamp a GPU writes — an AQL completion signal's start_ts/end_ts, a
// PM4 RELEASE_MEM "GPU clock counter" value, an SDMA TIMESTAMP — counts the GPU's clock counter
// (spec/packets.md §2.2: 100 MHz on the parts tinygrad supports), whose epoch is the GPU's, not
// the host's. AMDKFD_IOC_GET_CLOCK_COUNTERS samples that counter together with the host's
// CLOCK_MONOTONIC_RAW and CLOCK_BOOTTIME in ns (linux drivers/gpu/drm/amd/amdkfd/kfd_chardev.c,
// kfd_ioctl_get_clock_counters). A `clock_sample` pairs its GPU value with std::chrono::steady_clock
// (CLOCK_MONOTONIC, the clock of every host span: graph/trace.hpp) read just before and just after
// the ioctl — the midpoint — so no conversion between host clocks is needed.
// The translation is ROCr's (ROCR-Runtime amd_gpu_agent.cpp, GpuAgent::TranslateTime): linear
// through the first sample, taken when the agent's clock is first marked (mark_clock: a trace
// marks it when it starts), and the latest one, taken again whenever a stamp is past it. Until the
// two are at least `min_calibration_ticks` apart, the nominal rate (1e9 / nominal_gpu_clock_hz
// ns a tick) from the latest sample. The emulated device's counter is a 100 MHz counter with its
// own epoch (emu/engine_ports.hpp), so an untranslated stamp is visibly wrong there too.
// Thread safety: ticks_to_host_ns is pure; clock_state is guarded by its mutex.
#pragma once

#include <aqueduct/abi/kfd_ioctl.hpp>
#include <aqueduct/core/clock.hpp>
#include <aqueduct/core/result.hpp>
#include <aqueduct/kfd/driver.hpp>

#include <cmath>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

namespace aqueduct::runtime {

// One reading of a GPU's clock counter and of the host's steady_clock (ns since its epoch).
struct clock_sample {
  std::uint64_t gpu = 0;
  std::uint64_t host_ns = 0;
};

inline constexpr std::uint64_t nominal_gpu_clock_hz = 100'000'000;
// Two samples closer than this (1 ms at 100 MHz) give a rate no better than the nominal one.
inline constexpr std::uint64_t min_calibration_ticks = 100'000;

// The host steady_clock ns of GPU clock counter value `ticks`, from samples t0 (earlier) and t1.
[[nodiscard]] inline std::uint64_t ticks_to_host_ns(const clock_sample& t0, const clock_sample& t1, std::uint64_t ticks) noexcept {
  double ns_per_tick = 1e9 / static_cast<double>(nominal_gpu_clock_hz);
  if (t1.gpu > t0.gpu && t1.gpu - t0.gpu >= min_calibration_ticks && t1.host_ns > t0.host_ns)
    ns_per_tick = static_cast<double>(t1.host_ns - t0.host_ns) / static_cast<double>(t1.gpu - t0.gpu);
  const auto from_t1 = static_cast<double>(static_cast<std::int64_t>(ticks - t1.gpu)) * ns_per_tick;
  return t1.host_ns + static_cast<std::uint64_t>(std::llround(from_t1));  // wraps back for a stamp before t1
}

namespace detail {

// An agent's calibration (runtime/detail/state.hpp holds one per agent).
struct clock_state {
  std::mutex mu;
  std::optional<clock_sample> first, latest;
};

// GET_CLOCK_COUNTERS of GPU `gpu_id`, its counter paired with the midpoint of the host's
// steady_clock read just before and after: the narrowest of up to `tries` readings (a thread
// preempted inside the ioctl widens its window, and the midpoint's error is half of it), stopping
// at one narrower than `good_window_ns`.
inline constexpr int clock_sample_tries = 5;
inline constexpr std::uint64_t clock_sample_good_window_ns = 2'000;
template <class DriverRef>
[[nodiscard]] result<clock_sample> try_sample_clock(const DriverRef& d, std::uint32_t gpu_id) {
  clock_sample best{};
  std::uint64_t best_window = ~std::uint64_t{0};
  for (int i = 0; i < clock_sample_tries && best_window > clock_sample_good_window_ns; ++i) {
    abi::kfd::get_clock_counters_args a{};
    a.gpu_id = gpu_id;
    const std::uint64_t before = steady_now_ns();
    AQUEDUCT_TRY_VOID(d.try_ioctl(abi::kfd::amdkfd_ioc_get_clock_counters, &a, "clock calibration"));
    const std::uint64_t after = steady_now_ns();
    if (a.gpu_clock_counter == 0)
      return failure(errc::not_supported, "GET_CLOCK_COUNTERS gave no GPU clock counter for gpu_id " + std::to_string(gpu_id));
    if (after - before < best_window) {
      best_window = after - before;
      best = {a.gpu_clock_counter, before + (after - before) / 2};
    }
  }
  return best;
}

// The first sample, if none was taken yet.
template <class DriverRef>
[[nodiscard]] result<void> try_mark_clock(clock_state& c, const DriverRef& d, std::uint32_t gpu_id) {
  std::lock_guard lock(c.mu);
  if (c.first) return ok();
  AQUEDUCT_TRY(const clock_sample s, try_sample_clock(d, gpu_id));
  c.first = c.latest = s;
  return ok();
}

// Host ns of a stamp; samples again when the stamp is past the latest sample (or none was taken).
template <class DriverRef>
[[nodiscard]] result<std::uint64_t> try_device_to_host_ns(clock_state& c, const DriverRef& d, std::uint32_t gpu_id,
                                                          std::uint64_t ticks) {
  std::lock_guard lock(c.mu);
  if (!c.latest || ticks > c.latest->gpu) {
    AQUEDUCT_TRY(const clock_sample s, try_sample_clock(d, gpu_id));
    if (!c.first) c.first = s;
    c.latest = s;
  }
  return ticks_to_host_ns(*c.first, *c.latest, ticks);
}

}  // namespace detail
}  // namespace aqueduct::runtime
