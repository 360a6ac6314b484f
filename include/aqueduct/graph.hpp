// aqueduct/graph.hpp — the coroutine layer: tasks, when_all, sync_wait, the reactor, host events,
// device operations (on(q).dispatch/copy/...), device-evaluated control flow (if_then, switch_on,
// while_loop), graph memory (alloc, free), capture -> instantiate -> replay. See docs/graph.md.
//
// Layer: graph (the top layer: it includes runtime/ and below; nothing below includes it, so a
// program that includes only <aqueduct/runtime.hpp> does not compile any of it). The main names
// are also in namespace aqueduct (aqueduct::task, aqueduct::sync_wait, aqueduct::when_all,
// aqueduct::on, aqueduct::until, aqueduct::host ...). The core alone (graph/task.hpp,
// when_all.hpp, sync_wait.hpp) includes nothing of runtime/.
#pragma once

#include <aqueduct/graph/capture.hpp>
#include <aqueduct/graph/control.hpp>
#include <aqueduct/graph/event.hpp>
#include <aqueduct/graph/exec_graph.hpp>
#include <aqueduct/graph/exec_trace.hpp>
#include <aqueduct/graph/frame_allocator.hpp>
#include <aqueduct/graph/memory.hpp>
#include <aqueduct/graph/ops.hpp>
#include <aqueduct/graph/reactor.hpp>
#include <aqueduct/graph/replay.hpp>
#include <aqueduct/graph/save.hpp>
#include <aqueduct/graph/stop.hpp>
#include <aqueduct/graph/sync_wait.hpp>
#include <aqueduct/graph/task.hpp>
#include <aqueduct/graph/task_graph.hpp>
#include <aqueduct/graph/trace.hpp>
#include <aqueduct/graph/when_all.hpp>

namespace aqueduct {
using graph::async_event;
using graph::capture;
using graph::exec_graph;
using graph::get_stop_token;
using graph::host;
using graph::if_then;
using graph::if_then_else;
using graph::instantiate;
using graph::on;
using graph::reactor;
using graph::switch_on;
using graph::sync_wait;
using graph::task;
using graph::task_graph;
using graph::until;
using graph::when_all;
using graph::while_loop;
}  // namespace aqueduct
