// tests/support/device_models.hpp — the device models one runtime suite runs over (STYLE rule 12: a
// behaviour common to both device models is written once and run on each model present; as
// Boost.Atomic runs one API suite over each backend): every emulator preset, and the Linux device
// (/dev/kfd). Use with doctest's TEST_CASE_TEMPLATE(name, M, AQ_TEST_DEVICE_MODELS).
//
// A model that cannot run here is a VISIBLE skip, never a pass: `open_model<M>()` prints
// "SKIP: <why>" and returns nothing, the test returns, and ctest (SKIP_REGULAR_EXPRESSION
// "SKIP: ", tests/runtime/CMakeLists.txt) reports the run of that model as Skipped. The Linux
// model runs where /dev/kfd exists; a /dev/kfd that exists but cannot be opened is a failure (the
// runtime's own rule, runtime/system.hpp), not a skip.
#pragma once

#include <aqueduct/runtime.hpp>

#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace aq_test {

namespace rt = aqueduct::runtime;

template <const char* Machine>
struct emulated_model {
  static constexpr bool emulated = true;
  static std::string name() { return std::string("emulated ") + Machine; }
  static aqueduct::result<rt::system> open() {
    return rt::system::try_open({.device = rt::device_choice::emulated, .machine = Machine});
  }
  static std::optional<std::string> unavailable() { return std::nullopt; }
};
inline constexpr char mi300x[] = "mi300x", rx7900xtx[] = "rx7900xtx", mi250x[] = "mi250x", rx6900xt[] = "rx6900xt";
using emulated_mi300x = emulated_model<mi300x>;        // gfx942, SDMA 4.4, 8 XCCs
using emulated_rx7900xtx = emulated_model<rx7900xtx>;  // gfx1100, SDMA 6, PM4 PRIV target
using emulated_mi250x = emulated_model<mi250x>;        // gfx90a, SDMA 4.4
using emulated_rx6900xt = emulated_model<rx6900xt>;    // gfx1030, SDMA 5.2

struct linux_kfd_model {
  static constexpr bool emulated = false;
  static std::string name() { return "Linux /dev/kfd"; }
  static aqueduct::result<rt::system> open() {
    rt::open_options o;
    o.device = rt::device_choice::real;
    return rt::system::try_open(o);
  }
  static std::optional<std::string> unavailable() {
    std::error_code ec;
    if (!std::filesystem::exists("/dev/kfd", ec))
      return "/dev/kfd does not exist on this machine (no amdgpu KFD driver): the Linux device model cannot run here";
    return std::nullopt;
  }
};

// The system of model M, or nothing after printing why the model cannot run here (a skip).
template <class M>
std::optional<rt::system> open_model() {
  if (auto why = M::unavailable()) {
    std::printf("SKIP: %s: %s\n", M::name().c_str(), why->c_str());
    return std::nullopt;
  }
  auto sys = M::open();
  REQUIRE_MESSAGE(sys.has_value(), M::name() << ": " << sys.detail());
  return std::move(*sys);
}

}  // namespace aq_test

TYPE_TO_STRING(aq_test::emulated_mi300x);
TYPE_TO_STRING(aq_test::emulated_rx7900xtx);
TYPE_TO_STRING(aq_test::emulated_mi250x);
TYPE_TO_STRING(aq_test::emulated_rx6900xt);
TYPE_TO_STRING(aq_test::linux_kfd_model);

#define AQ_TEST_EMULATED_MODELS \
  aq_test::emulated_mi300x, aq_test::emulated_rx7900xtx, aq_test::emulated_mi250x, aq_test::emulated_rx6900xt
#define AQ_TEST_DEVICE_MODELS AQ_TEST_EMULATED_MODELS, aq_test::linux_kfd_model
