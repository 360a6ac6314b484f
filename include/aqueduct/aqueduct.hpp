// aqueduct/aqueduct.hpp — the one header most users include.
//
// Layer: top. The runtime facade (system, agents, buffers, kernels, AQL/PM4/SDMA queues, copies),
// code objects and bundles (code/), architecture traits (arch/) and the core types (result,
// errc, units). Lower layers (abi/, sync/, queue/, kfd/, emu/) have their own umbrella headers
// <aqueduct/abi.hpp> ... for users who drive queues directly. Thread safety: see each header.
#pragma once

#include <aqueduct/config.hpp>
#include <aqueduct/core.hpp>
#include <aqueduct/arch.hpp>
#include <aqueduct/code.hpp>
#include <aqueduct/runtime.hpp>
