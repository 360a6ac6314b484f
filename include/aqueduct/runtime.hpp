// aqueduct/runtime.hpp — the runtime facade: system (real KFD or the emulator), agents, typed
// buffers, kernels and executables, AQL and PM4 queues, SDMA queues and copies, signals. See
// docs/runtime.md, docs/pm4.md and docs/copies.md.
//
// Layer: runtime. The facade's main types are also named directly in namespace aqueduct
// (aqueduct::system, aqueduct::agent, aqueduct::buffer, aqueduct::queue ...). The queue layer's
// ring protocols live in aqueduct::ring (queue/), so `aq::queue` is the runtime's AQL queue.
// Host kernels for the emulated device are aqueduct::emu::host_code_object / host_workgroup / load
// (runtime/emulator.hpp).
#pragma once

#include <aqueduct/runtime/agent.hpp>
#include <aqueduct/runtime/any_device.hpp>
#include <aqueduct/runtime/copy.hpp>
#include <aqueduct/runtime/device_clock.hpp>
#include <aqueduct/runtime/emulator.hpp>
#include <aqueduct/runtime/kernel.hpp>
#include <aqueduct/runtime/kernel_args.hpp>
#include <aqueduct/runtime/memory.hpp>
#include <aqueduct/runtime/pm4_queue.hpp>
#include <aqueduct/runtime/queue.hpp>
#include <aqueduct/runtime/queue_kind.hpp>
#include <aqueduct/runtime/sdma_queue.hpp>
#include <aqueduct/runtime/signal.hpp>
#include <aqueduct/runtime/system.hpp>

namespace aqueduct {
using runtime::agent;
using runtime::aql;
using runtime::aql_ticket;
using runtime::block;
using runtime::buffer;
using runtime::buffer_ref;
using runtime::device_ptr;
using runtime::dispatch_options;
using runtime::executable;
using runtime::grid;
using runtime::kernel;
using runtime::memory_kind;
using runtime::open_options;
using runtime::queue;
using runtime::queue_options;
using runtime::sdma;
using runtime::sdma_queue;
using runtime::sdma_queue_options;
using runtime::sdma_ticket;
using runtime::signal;
using runtime::system;
using runtime::ticket;
using runtime::untyped_kernel;
}  // namespace aqueduct
