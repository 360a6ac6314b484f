// aqueduct/abi.hpp — the abi layer: bit-exact wire formats (AQL, amd_signal/amd_queue, kernel descriptor, PM4, SDMA, KFD ioctls, AMDGPU ELF, offload bundles).
//
// Layer: abi. Umbrella header: includes every public header of the layer (each also compiles
// on its own, so including only what you use keeps compile times down). Thread safety: see
// each header.
#pragma once

#include <aqueduct/abi/amd_queue.hpp>
#include <aqueduct/abi/amd_signal.hpp>
#include <aqueduct/abi/aql.hpp>
#include <aqueduct/abi/bundle.hpp>
#include <aqueduct/abi/elf.hpp>
#include <aqueduct/abi/kernel_descriptor.hpp>
#include <aqueduct/abi/kfd_ioctl.hpp>
#include <aqueduct/abi/pm4.hpp>
#include <aqueduct/abi/sdma.hpp>
