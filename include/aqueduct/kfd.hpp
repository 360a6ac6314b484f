// aqueduct/kfd.hpp — the kfd layer: the driver over a device_file (real /dev/kfd or the emulator): topology, memory, queue resources, events.
//
// Layer: kfd. Umbrella header: includes every public header of the layer (each also compiles
// on its own, so including only what you use keeps compile times down). Thread safety: see
// each header.
#pragma once

#include <aqueduct/kfd/device_file.hpp>
#include <aqueduct/kfd/driver.hpp>
#include <aqueduct/kfd/events.hpp>
#include <aqueduct/kfd/linux_device.hpp>
#include <aqueduct/kfd/memory.hpp>
#include <aqueduct/kfd/queue_resources.hpp>
#include <aqueduct/kfd/suballocator.hpp>
#include <aqueduct/kfd/topology.hpp>
