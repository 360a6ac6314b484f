// tests/graph/counted_rig.hpp — an emulated GPU whose device-file calls are counted, with the
// graph tests' kernels loaded (kept out of kernels.hpp, which the saved-graph fuzzer also
// includes without tests/support on its include path).
#pragma once

#include "counting_device.hpp"
#include "kernels.hpp"

#include <memory>

namespace graph_test {

// An emulated RX 7900 XTX whose device-file calls are counted (tests/support/counting_device.hpp),
// with kernels() loaded: for the tests that count ioctls, mmaps and live BOs.
struct counted_rig {
  emu::device dev;
  std::shared_ptr<device_counts> counts = std::make_shared<device_counts>();
  rt::system sys;
  rt::agent gpu;
  rt::executable exe;
  counted_rig() : counted_rig(emu::machine_config::parse("rx7900xtx")) {}
  explicit counted_rig(emu::machine_config cfg)
      : dev(emu::device::create(std::move(cfg))),
        sys(rt::system::try_adopt(counting_device<emu::device>(dev, counts), &dev).value()),
        gpu(sys.default_agent()),
        exe(emu::load(gpu, kernels())) {}
};

}  // namespace graph_test
