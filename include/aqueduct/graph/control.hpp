// aqueduct/graph/control.hpp — device-evaluated control flow: `if_then`, `if_then_else`,
// `switch_on` and a bounded `while_loop` on a 64-bit word in device memory, decided by the GPU's
// command processor when the work before it has run — no host round trip.
//
// Layer: graph. Each body is a callable returning task<void>; it is captured (graph/capture.hpp)
// into a task_graph whose nodes must all run on the conditional's queue. The conditional is a
// node (task_graph.hpp, node_kind::conditional) lowered per queue type:
//   PM4  (graph/detail/lower.hpp) COND_INDIRECT_BUFFER packets whose indirect buffers hold the
//        bodies (kernels, timestamps, signal records, nested conditionals):
//   if_then       word != 0 -> body;            if_then_else  word != 0 -> then, else otherwise;
//   switch_on     word == k -> case k (no case when the word is >= the number of cases);
//   while_loop    body as long as word != 0, at most max_iterations times: max_iterations
//                 COND_INDIRECT_BUFFERs, each re-reading the word the body wrote, then one that
//                 records an overflow when the word is still not 0 — the replay's wait then fails
//                 naming the loop (never a silent cut-off).
//   SDMA (graph/detail/lower_sdma.hpp) the same meanings with COND_EXE, bodies (copies, fills,
//        timestamps, signal records, nested conditionals) in place.
// Inside capture() it records the node and `co_await` gives its node_id (the nodes of body b,
// by the ids that body's capture returned, are updated through exec_graph::try_inner(id, b,
// inner)); run eagerly, the same code instantiates a one-node graph
// and replays it once, so the word is read by the (emulated) engine in both cases. AQL has no
// conditional packet (docs/graph.md).
// Shown on the emulated MEC and SDMA engines only: on hardware, the word must be visible to the
// engine when it is read (the runtime's PM4 dispatches end with CS_PARTIAL_FLUSH and write back at
// end of pipe; SDMA runs its packets in order).
// Thread safety: operations are made and awaited on the reactor's thread.
#pragma once

#include <aqueduct/core/result.hpp>
#include <aqueduct/core/units.hpp>
#include <aqueduct/graph/capture.hpp>
#include <aqueduct/graph/context.hpp>
#include <aqueduct/graph/detail/plan.hpp>
#include <aqueduct/graph/ops.hpp>
#include <aqueduct/graph/replay.hpp>
#include <aqueduct/graph/task.hpp>
#include <aqueduct/graph/task_graph.hpp>
#include <aqueduct/runtime/memory.hpp>
#include <aqueduct/runtime/pm4_queue.hpp>
#include <aqueduct/runtime/sdma_queue.hpp>

#include <concepts>
#include <cstdint>
#include <functional>
#include <memory>
#include <source_location>
#include <string>
#include <utility>
#include <vector>

namespace aqueduct::graph {

// The word a conditional reads: a GPU address (8-byte aligned) or a one-element u64 buffer.
struct condition_word {
  gpu_va va{};
  condition_word(gpu_va v) noexcept : va(v) {}  // NOLINT: implicit by design
  condition_word(const runtime::buffer<std::uint64_t>& b) noexcept : va(b.va()) {}  // NOLINT
};

struct loop_options {
  std::uint32_t max_iterations = 1024;  // 1 .. 65536: one COND_INDIRECT_BUFFER packet each, every replay
};

using body_fn = std::function<task<void>()>;

namespace detail {

class control_op {
 public:
  control_op(queue_binding q, condition_kind k, gpu_va word, std::vector<body_fn> bodies, std::uint32_t max_iterations)
      : q_(q), kind_(k), word_(word), bodies_(std::move(bodies)), max_(max_iterations) {}

  control_op&& label(std::string l) && {
    label_ = std::move(l);
    return std::move(*this);
  }

  [[nodiscard]] child_op::awaiter lower(context& c, std::source_location loc) && {
    if (c.stop_requested()) throw_cancelled(std::string(to_string(kind_)) + " conditional", loc);
    node n;
    n.kind = node_kind::conditional;
    n.queue = q_;
    n.label = std::move(label_);
    n.where = loc;
    n.condition = kind_;
    n.dst = word_;
    n.max_iterations = max_;
    for (std::size_t b = 0; b < bodies_.size(); ++b) {
      if (!bodies_[b]) throw_failure(failure(errc::invalid_argument, n.describe() + ": body " + std::to_string(b) + " is empty"));
      n.bodies.push_back(std::make_shared<const task_graph>(capture(bodies_[b]())));
    }
    try {
      check_conditional(n);
    } catch (const error& e) {
      throw_failure(located(e.get_failure(), std::string(to_string(kind_)) + " conditional", loc));
    }
    if (c.capturing()) return child_op::awaiter{task<void>{}, &c, node_id{c.capture->record(std::move(n))}};
    task_graph g;  // eagerly: a one-node graph, instantiated and replayed once (the CP decides)
    (void)g.add(std::move(n));
    return child_op::awaiter{run_once(std::move(g)), &c};
  }

 private:
  queue_binding q_;
  condition_kind kind_;
  gpu_va word_;
  std::vector<body_fn> bodies_;
  std::uint32_t max_;
  std::string label_;
};

}  // namespace detail

// The queues a conditional runs on: PM4 (COND_INDIRECT_BUFFER) and SDMA (COND_EXE).
template <class K>
concept conditional_queue = std::same_as<K, runtime::pm4_t> || std::same_as<K, runtime::sdma_t>;

// co_await if_then(on(q), word, body): body runs when the word is not 0.
template <conditional_queue K>
[[nodiscard]] detail::control_op if_then(queue_ref<K> q, condition_word w, body_fn body) {
  return detail::control_op(detail::binding_of(q.queue()), condition_kind::if_then, w.va, {std::move(body)}, 0);
}
// co_await if_then_else(on(q), word, then_body, else_body).
template <conditional_queue K>
[[nodiscard]] detail::control_op if_then_else(queue_ref<K> q, condition_word w, body_fn then_body, body_fn else_body) {
  return detail::control_op(detail::binding_of(q.queue()), condition_kind::if_then_else, w.va, {std::move(then_body), std::move(else_body)}, 0);
}
// co_await switch_on(on(q), word, {case0, case1, ...}): case k runs when the word equals k.
template <conditional_queue K>
[[nodiscard]] detail::control_op switch_on(queue_ref<K> q, condition_word w, std::vector<body_fn> cases) {
  return detail::control_op(detail::binding_of(q.queue()), condition_kind::switch_on, w.va, std::move(cases), 0);
}
// co_await while_loop(on(q), word, body, {.max_iterations = N}): body runs while the word is not
// 0 (checked before each iteration, as `while`); the body must clear the word to end the loop.
template <conditional_queue K>
[[nodiscard]] detail::control_op while_loop(queue_ref<K> q, condition_word w, body_fn body, loop_options o = {}) {
  return detail::control_op(detail::binding_of(q.queue()), condition_kind::while_loop, w.va, {std::move(body)}, o.max_iterations);
}

}  // namespace aqueduct::graph
