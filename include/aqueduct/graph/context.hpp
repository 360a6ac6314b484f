// aqueduct/graph/context.hpp — what a running task knows about its run: the reactor that resumes
// it, its stop state, and — only inside capture() — the capture strand that records its
// operations instead of running them (not API).
//
// Layer: graph. A context is owned by the run, never by a thread or the process: sync_wait and
// capture() make the root one, each when_all branch gets its own (a child stop state, a forked
// capture strand), and an awaited child task shares its parent's. A task reaches it through its
// promise (graph/task.hpp): every co_await inside a task passes through the promise's
// await_transform, which hands the context to the operation together with the co_await's
// source_location. So the same source runs eagerly or is recorded depending only on the context
// it was started in. A traced eager run (sync_wait_options::trace) also carries the trace its
// operations add their spans to.
// Thread safety: used by the reactor's thread only.
#pragma once

#include <aqueduct/core/result.hpp>
#include <aqueduct/graph/reactor.hpp>
#include <aqueduct/graph/stop.hpp>

#include <cstddef>
#include <cstdint>
#include <source_location>
#include <span>
#include <string>
#include <string_view>

namespace aqueduct::graph {
struct node;  // graph/task_graph.hpp
class trace;  // graph/trace.hpp
}

namespace aqueduct::graph::detail {

// A strand of a capture (graph/capture.hpp): records the operations of one task and of the
// tasks it awaits, in program order. when_all forks one per branch and joins them.
class capture_strand {
 public:
  virtual capture_strand* fork(std::size_t branch) = 0;
  virtual void join(std::span<capture_strand* const> branches) noexcept = 0;
  // Appends a node after the strand's frontier (its program-order predecessors); it becomes the
  // frontier. Returns its index in the graph.
  virtual std::uint32_t record(node&& n) = 0;
  // The same, built in place: appends a default node after the frontier (its deps set, now the
  // frontier) for the caller to fill before anything else is recorded — no node is moved.
  struct appended {
    node& n;
    std::uint32_t id;
  };
  virtual appended append() = 0;
  // Undoes the last append (filling it threw): the node removed, the frontier what it was.
  virtual void abandon() noexcept = 0;

 protected:
  ~capture_strand() = default;
};

struct context {
  reactor* r = nullptr;
  const stop_state* stop = nullptr;
  capture_strand* capture = nullptr;  // non-null: record, do not run
  trace* tr = nullptr;                 // non-null (eager runs only): operations add their spans (graph/detail/eager_trace.hpp)

  [[nodiscard]] bool stop_requested() const noexcept { return stop && stop->stop_requested(); }
  [[nodiscard]] bool capturing() const noexcept { return capture != nullptr; }
};

// "file.cpp:42" of a co_await.
inline std::string where(const std::source_location& loc) {
  std::string_view f = loc.file_name();
  if (auto slash = f.find_last_of('/'); slash != std::string_view::npos) f.remove_prefix(slash + 1);
  return std::string(f) + ":" + std::to_string(loc.line());
}

// A failure of `what` awaited at `loc`: the operation and place first, then the cause.
[[nodiscard]] inline failure located(const failure& f, std::string_view what, const std::source_location& loc) {
  return failure(f.code(), std::string(what) + " at " + where(loc) + ": " + std::string(f.detail()), f.os_errno());
}

// The failure of an operation awaited after its run was asked to stop.
[[noreturn]] inline void throw_cancelled(std::string_view what, const std::source_location& loc) {
  throw_failure(failure(errc::cancelled, std::string(what) + " at " + where(loc) + " not started: the run was asked to stop"));
}

}  // namespace aqueduct::graph::detail
