// aqueduct/graph/replay.hpp — `co_await replay(exec)`: a replay of an exec_graph awaited by a
// task (its host nodes run by the task's reactor), and `co_await child(graph)`: a task_graph run
// from a task — recorded as a child-graph node inside capture(), instantiated and replayed once
// otherwise.
//
// Layer: graph. The replay is launched when the co_await suspends; the reactor then polls the
// replay's done signals and the signals its host nodes wait for, sleeping on the graph's KFD event
// (every one of those signals names it). A host node runs on the reactor's thread as soon as all
// it waits for has completed; then its own signal is released to 0 and the device work waiting
// for it continues. An exception from a host node, or a fault in a node, fails the co_await with
// the node named; what depends on it does not run.
// Thread safety: as exec_graph (one thread: the reactor's).
#pragma once

#include <aqueduct/core/result.hpp>
#include <aqueduct/graph/context.hpp>
#include <aqueduct/graph/device_events.hpp>
#include <aqueduct/graph/exec_graph.hpp>
#include <aqueduct/graph/task.hpp>
#include <aqueduct/graph/task_graph.hpp>
#include <aqueduct/sync/atomics.hpp>

#include <coroutine>
#include <exception>
#include <memory>
#include <optional>
#include <source_location>
#include <string>
#include <vector>

namespace aqueduct::graph {

namespace detail {

class replay_awaiter {
 public:
  replay_awaiter(exec_graph& e, context& c, std::source_location loc, bool recorded = false)
      : e_(&e), ctx_(&c), loc_(loc), recorded_(recorded) {}
  replay_awaiter(replay_awaiter&& o) noexcept : e_(o.e_), ctx_(o.ctx_), loc_(o.loc_), recorded_(o.recorded_) {}
  replay_awaiter& operator=(replay_awaiter&&) = delete;
  ~replay_awaiter() { ctx_->r->unwatch(p_); }

  [[nodiscard]] bool await_ready() const noexcept { return recorded_; }
  bool await_suspend(std::coroutine_handle<> h) {
    exec_state& s = e_->state();
    auto t = e_->try_launch_for_reactor();
    if (!t) {
      error_ = t.get_failure();
      return false;
    }
    ticket_ = *t;
    ran_.assign(s.p.host_nodes.size(), false);
    p_.poll = [](pending& p) noexcept { return static_cast<replay_awaiter*>(p.owner)->step(); };
    p_.owner = this;
    p_.waiter = h;
    p_.events = events_of(*ctx_->r, *s.agents.front().agent);
    p_.event_id = s.event.id();
    if (step()) return false;
    ctx_->r->watch(p_);
    return true;
  }
  void await_resume() const {
    if (error_) throw_failure(located(*error_, "graph replay", loc_));
  }

 private:
  // Runs the host nodes that can run; true when the replay finished or failed.
  bool step() noexcept {
    if (error_) return true;
    exec_state& s = e_->state();
    const auto slot = static_cast<std::uint32_t>(ticket_.sequence % s.slots());
    for (std::size_t i = 0; i < s.p.host_nodes.size(); ++i) {
      if (ran_[i]) continue;
      const std::uint32_t h = s.p.host_nodes[i];
      const planned_node& pn = s.p.placed[h];
      bool ready = true;
      for (std::uint32_t w : pn.waits)
        ready &= sync::atomic_load(s.signal(slot, s.p.placed[w].signal)->value, std::memory_order_acquire) == 0;
      for (const external_wait& x : pn.external)
        ready &= abi::condition_holds(x.cond, x.signal.load(std::memory_order_acquire), x.value);
      if (!ready) continue;
      ran_[i] = true;
      try {
        if (s.p.nodes[h].enabled && s.p.nodes[h].fn) s.p.nodes[h].fn();
      } catch (const std::exception& x) {
        error_ = failure(errc::cancelled, s.p.nodes[h].describe() + " threw: " + x.what() + "; the nodes after it do not run");
        return true;
      } catch (...) {
        error_ = failure(errc::cancelled, s.p.nodes[h].describe() + " threw; the nodes after it do not run");
        return true;
      }
      sync::atomic_store(s.signal(slot, pn.signal)->value, 0, std::memory_order_release);
    }
    if (e_->done(ticket_)) {
      if (auto f = e_->loop_overflow(ticket_)) error_ = *f;
      return true;
    }
    if (auto f = e_->replay_fault(ticket_)) {
      error_ = *f;
      return true;
    }
    return false;
  }

  exec_graph* e_;
  context* ctx_;
  std::source_location loc_;
  bool recorded_ = false;
  replay_ticket ticket_{};
  std::vector<bool> ran_;
  std::optional<failure> error_;
  pending p_{};
};

class replay_op {
 public:
  explicit replay_op(exec_graph& e) noexcept : e_(&e) {}
  [[nodiscard]] replay_awaiter lower(context& c, std::source_location loc) const {
    if (c.stop_requested()) throw_cancelled("graph replay", loc);
    if (c.capturing()) {  // a replay inside a capture: the graph becomes a child-graph node
      node n;
      n.kind = node_kind::child;
      n.child = std::make_shared<const task_graph>(e_->graph());
      n.where = loc;
      (void)c.capture->record(std::move(n));
      return replay_awaiter(*e_, c, loc, true);
    }
    return replay_awaiter(*e_, c, loc);
  }

 private:
  exec_graph* e_;
};

}  // namespace detail

// co_await replay(exec): launch one replay and wait for it (host nodes run on the reactor).
[[nodiscard]] inline detail::replay_op replay(exec_graph& e) noexcept { return detail::replay_op(e); }

namespace detail {
inline task<void> run_once(task_graph g) {
  auto e = exec_graph::instantiate(g);
  co_await replay(e);
}
class child_op {
 public:
  explicit child_op(const task_graph& g) : g_(&g) {}
  struct awaiter {
    task<void> t;
    context* c;
    node_id id{};  // captured: the node recorded (exec_graph::try_inner reaches inside it); eager: none
    [[nodiscard]] bool await_ready() const noexcept { return !t; }
    std::coroutine_handle<> await_suspend(std::coroutine_handle<> h) noexcept {
      t.handle().promise().set_continuation(h);
      t.handle().promise().set_context(c);
      return t.handle();
    }
    node_id await_resume() {
      if (t) t.handle().promise().result();
      return id;
    }
  };
  [[nodiscard]] awaiter lower(context& c, std::source_location loc) const {
    if (c.stop_requested()) throw_cancelled("child graph", loc);
    if (c.capturing()) {
      node n;
      n.kind = node_kind::child;
      n.child = std::make_shared<const task_graph>(*g_);
      n.where = loc;
      return awaiter{task<void>{}, &c, node_id{c.capture->record(std::move(n))}};
    }
    return awaiter{run_once(*g_), &c};
  }

 private:
  const task_graph* g_;
};
}  // namespace detail

// co_await child(g): inside capture() a child-graph node (inlined at instantiation; its id, for
// exec_graph::try_inner); otherwise g instantiated and replayed once.
[[nodiscard]] inline detail::child_op child(const task_graph& g) noexcept { return detail::child_op(g); }

}  // namespace aqueduct::graph
