// aqueduct/queue.hpp — the queue layer: ring reservation, AQL queues, PM4 and SDMA command streams and their encoders, doorbells.
//
// Layer: queue (namespace aqueduct::ring: the ring protocols; aqueduct::queue is the runtime's
// AQL queue). Umbrella header: includes every public header of the layer (each also compiles
// on its own, so including only what you use keeps compile times down). Thread safety: see
// each header.
#pragma once

#include <aqueduct/queue/aql_dispatch_template.hpp>
#include <aqueduct/queue/aql_packets.hpp>
#include <aqueduct/queue/aql_queue.hpp>
#include <aqueduct/queue/doorbell.hpp>
#include <aqueduct/queue/pm4_describe.hpp>
#include <aqueduct/queue/pm4_dispatch_template.hpp>
#include <aqueduct/queue/pm4_encoder.hpp>
#include <aqueduct/queue/pm4_queue.hpp>
#include <aqueduct/queue/ring.hpp>
#include <aqueduct/queue/sdma_encoder.hpp>
#include <aqueduct/queue/sdma_queue.hpp>
