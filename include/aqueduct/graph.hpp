// aqueduct/graph.hpp — the coroutine layer: tasks, when_all, sync_wait, the reactor, host events.
// See docs/graph.md.
//
// Layer: graph (the top layer: it includes runtime/ and below; nothing below includes it, so a
// program that includes only <aqueduct/runtime.hpp> does not compile any of it). The main names
// are also in namespace aqueduct (aqueduct::task, aqueduct::sync_wait, aqueduct::when_all).
#pragma once

#include <aqueduct/graph/event.hpp>
#include <aqueduct/graph/frame_allocator.hpp>
#include <aqueduct/graph/reactor.hpp>
#include <aqueduct/graph/stop.hpp>
#include <aqueduct/graph/sync_wait.hpp>
#include <aqueduct/graph/task.hpp>
#include <aqueduct/graph/when_all.hpp>

namespace aqueduct {
using graph::async_event;
using graph::get_stop_token;
using graph::reactor;
using graph::sync_wait;
using graph::task;
using graph::when_all;
}  // namespace aqueduct
