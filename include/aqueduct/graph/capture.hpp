// aqueduct/graph/capture.hpp — `capture(task)`: run a task so that its operations are recorded
// into a task_graph instead of being submitted.
//
// Layer: graph. capture() starts the task, on the calling thread, with a context whose capture
// strand records (graph/context.hpp): every operation the task awaits — on(q).dispatch/copy/...,
// until(signal), host(fn), launch(child graph), and those of the tasks it awaits — becomes a node
// that depends on the strand's frontier (the nodes recorded just before it in program order), and
// is ready at once, so the task runs straight through. when_all forks one strand per branch (no
// edges between branches) and joins them (the next node depends on every branch's last nodes).
// The host code between co_awaits runs once, now; arguments are taken by value now.
// What cannot be recorded is an error naming the co_await, never a silent fallback: a runtime
// ticket (that work was already submitted), an async_event (the device cannot wait for a host
// flag), a host function whose value the task uses, or the task suspending on an awaitable graph/
// does not know (capture() then fails with errc::not_supported).
// Thread safety: one capture per call; the graph it returns is a value.
#pragma once

#include <aqueduct/core/result.hpp>
#include <aqueduct/graph/context.hpp>
#include <aqueduct/graph/reactor.hpp>
#include <aqueduct/graph/stop.hpp>
#include <aqueduct/graph/task.hpp>
#include <aqueduct/graph/task_graph.hpp>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <source_location>
#include <span>
#include <utility>
#include <vector>

namespace aqueduct::graph {

namespace detail {

class recorder;

class strand final : public capture_strand {
 public:
  strand(recorder& r, node_list<std::uint32_t> frontier) : rec_(&r), frontier_(std::move(frontier)) {}
  capture_strand* fork(std::size_t branch) override;
  void join(std::span<capture_strand* const> branches) noexcept override {
    frontier_.clear();
    for (capture_strand* b : branches)
      for (std::uint32_t d : static_cast<strand*>(b)->frontier_)
        if (std::find(frontier_.begin(), frontier_.end(), d) == frontier_.end()) frontier_.push_back(d);
  }
  std::uint32_t record(node&& n) override;
  appended append() override;
  void abandon() noexcept override;
  [[nodiscard]] const node_list<std::uint32_t>& frontier() const noexcept { return frontier_; }

 private:
  recorder* rec_;
  node_list<std::uint32_t> frontier_;
};

class recorder {
 public:
  recorder() { strands_.emplace_back(*this, node_list<std::uint32_t>{}); }
  [[nodiscard]] strand& root() noexcept { return strands_.front(); }
  strand& make_strand(node_list<std::uint32_t> frontier) { return strands_.emplace_back(*this, std::move(frontier)); }
  task_graph& graph() noexcept { return g_; }

 private:
  task_graph g_;
  std::deque<strand> strands_;  // stable addresses (contexts point at them)
};

inline capture_strand* strand::fork(std::size_t) { return &rec_->make_strand(frontier_); }
inline std::uint32_t strand::record(node&& n) {
  const appended a = append();
  node_list<std::uint32_t> deps = std::move(a.n.deps);
  a.n = std::move(n);
  a.n.deps = std::move(deps);
  return a.id;
}
inline strand::appended strand::append() {
  task_graph& g = rec_->graph();
  const std::uint32_t id = static_cast<std::uint32_t>(g.size());
  node_list<std::uint32_t> next{id};  // what may throw first: nothing changed yet
  node& n = g.emplace();
  // The frontier's storage becomes the node's deps (no copy); the new frontier is the node.
  n.deps = std::move(frontier_);
  frontier_ = std::move(next);
  return {n, id};
}
inline void strand::abandon() noexcept {
  task_graph& g = rec_->graph();
  frontier_ = std::move(g.back().deps);
  g.pop_back();
}

// The strand of a capturing context (there is one implementation).
[[nodiscard]] inline strand& strand_of(capture_strand& s) noexcept { return static_cast<strand&>(s); }

}  // namespace detail

// Runs `t` with a recording context (see the header comment) and returns what it recorded.
template <class T>
[[nodiscard]] task_graph capture(task<T> t) {
  AQUEDUCT_ASSERT(t && !t.done(), "capture of an empty task or of one that already ran");
  reactor r;
  detail::stop_state stop(nullptr, &r);
  detail::recorder rec;
  detail::context ctx{&r, &stop, &rec.root()};
  auto h = t.handle();
  h.promise().set_context(&ctx);
  h.resume();
  while (!h.done())
    if (!r.run_once())
      throw_failure(failure(errc::not_supported,
                            "capture: the task suspended on something that is not a graph operation (nothing resumes "
                            "it while it is being recorded); await graph operations only inside capture()"));
  h.promise().result();  // rethrows what the task threw (e.g. an operation that cannot be recorded)
  return std::move(rec.graph());
}

}  // namespace aqueduct::graph
