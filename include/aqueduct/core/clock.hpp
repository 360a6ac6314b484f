// aqueduct/core/clock.hpp — the host clock every timestamp of aqueduct is read from.
//
// Layer: core. Host spans of a trace (graph/trace.hpp), the host side of a device-clock
// calibration (runtime/device_clock.hpp) and the emulated device's CPU and GPU counters
// (emu/engine_ports.hpp, GET_CLOCK_COUNTERS) all read std::chrono::steady_clock
// (CLOCK_MONOTONIC on Linux), so their nanoseconds compare directly. Thread safety: free function.
#pragma once

#include <chrono>
#include <cstdint>

namespace aqueduct {

// Nanoseconds of std::chrono::steady_clock since its epoch.
[[nodiscard]] inline std::uint64_t steady_now_ns() noexcept {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
}

}  // namespace aqueduct
