// aqueduct/sync.hpp — the sync layer: the atomics policy, signals over amd_signal, wait policies, the signal pool.
//
// Layer: sync. Umbrella header: includes every public header of the layer (each also compiles
// on its own, so including only what you use keeps compile times down). Thread safety: see
// each header.
#pragma once

#include <aqueduct/sync/atomics.hpp>
#include <aqueduct/sync/host_events.hpp>
#include <aqueduct/sync/signal.hpp>
#include <aqueduct/sync/signal_pool.hpp>
#include <aqueduct/sync/wait.hpp>
