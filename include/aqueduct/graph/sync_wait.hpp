// aqueduct/graph/sync_wait.hpp — `sync_wait(task)`: run a task to its end on the calling thread
// and return its value (or rethrow its exception).
//
// Layer: graph. The calling thread becomes the run's reactor thread: sync_wait starts the task
// with a root context (a reactor — its own, or one the caller lends so that its buffers are
// reused — and a root stop state), then runs the reactor until the task has finished. An
// std::stop_token in the options cancels the run (graph/stop.hpp says what a stop does).
// sync_wait is one of the two places that throw in graph/ (the other: a task's co_await of a
// failed child): the task's exception is rethrown here as it was thrown.
// Thread safety: any thread; a lent reactor must not be running elsewhere meanwhile.
#pragma once

#include <aqueduct/graph/context.hpp>
#include <aqueduct/graph/reactor.hpp>
#include <aqueduct/graph/stop.hpp>
#include <aqueduct/graph/task.hpp>

#include <optional>
#include <stop_token>
#include <utility>

namespace aqueduct::graph {

struct sync_wait_options {
  std::stop_token stop{};  // a stop requested here cancels the run
  reactor_options reactor{};
  // Non-null: every queue operation and host function the run awaits adds its spans to it
  // (Chrome trace JSON, graph/trace.hpp; what the spans measure: docs/graph.md, "Traces").
  graph::trace* trace = nullptr;
};

// Runs `t` on the calling thread with the reactor `r` (traced into `tr` if non-null).
template <class T>
T sync_wait(reactor& r, task<T> t, const std::stop_token& stop = {}, trace* tr = nullptr) {
  AQUEDUCT_ASSERT(t, "sync_wait of an empty (moved-from) task");
  AQUEDUCT_ASSERT(!t.done(), "sync_wait of a task that already ran");
  detail::stop_state root(nullptr, &r);
  struct forward_stop {
    detail::stop_state* s;
    void operator()() const noexcept { s->request_stop(); }
  };
  std::optional<std::stop_callback<forward_stop>> on_stop;
  if (stop.stop_possible()) on_stop.emplace(stop, forward_stop{&root});
  detail::context ctx{&r, &root, nullptr, tr};
  auto h = t.handle();
  h.promise().set_context(&ctx);
  h.resume();
  r.run_until([&] { return h.done(); });
  return h.promise().result();
}

template <class T>
T sync_wait(task<T> t, const sync_wait_options& o = {}) {
  reactor r(o.reactor);
  return sync_wait(r, std::move(t), o.stop, o.trace);
}

}  // namespace aqueduct::graph
