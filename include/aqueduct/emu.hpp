// aqueduct/emu.hpp — the emulated device: an in-process KFD (ioctl ABI, topology presets, GPU VM) and its AQL, PM4 and SDMA engines.
//
// Layer: emu. Umbrella header: includes every public header of the layer (each also compiles
// on its own, so including only what you use keeps compile times down). Thread safety: see
// each header.
#pragma once

#include <aqueduct/emu/aql_processor.hpp>
#include <aqueduct/emu/cwsr.hpp>
#include <aqueduct/emu/device.hpp>
#include <aqueduct/emu/engine_error.hpp>
#include <aqueduct/emu/engine_ports.hpp>
#include <aqueduct/emu/events.hpp>
#include <aqueduct/emu/gpu_vm.hpp>
#include <aqueduct/emu/host_kernel.hpp>
#include <aqueduct/emu/machine_config.hpp>
#include <aqueduct/emu/pm4_processor.hpp>
#include <aqueduct/emu/presets.hpp>
#include <aqueduct/emu/queue_engine.hpp>
#include <aqueduct/emu/queue_wakeup.hpp>
#include <aqueduct/emu/queues.hpp>
#include <aqueduct/emu/sdma_engine.hpp>
#include <aqueduct/emu/sysfs_writer.hpp>
#include <aqueduct/emu/wave_state.hpp>
