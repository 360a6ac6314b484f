// aqueduct/graph/detail/ticket_awaiter.hpp — what a task suspends on after an eager queue
// operation: the ticket the runtime returned, watched by the reactor until the queue's progress
// reaches it (or the queue faults); a captured operation's awaiter is ready at once and yields the
// recorded node's id.
//
// Layer: graph (not API). graph/ops.hpp lowers every queue operation to one of these.
// Thread safety: made and awaited on the reactor's thread.
#pragma once

#include <aqueduct/abi/amd_signal.hpp>
#include <aqueduct/core/result.hpp>
#include <aqueduct/graph/context.hpp>
#include <aqueduct/graph/detail/eager_trace.hpp>
#include <aqueduct/graph/device_events.hpp>
#include <aqueduct/graph/task_graph.hpp>
#include <aqueduct/runtime/pm4_queue.hpp>
#include <aqueduct/runtime/queue.hpp>
#include <aqueduct/runtime/queue_kind.hpp>
#include <aqueduct/runtime/sdma_queue.hpp>
#include <aqueduct/sync/atomics.hpp>

#include <coroutine>
#include <cstdint>
#include <memory>
#include <new>
#include <source_location>
#include <string>
#include <utility>

namespace aqueduct::graph::detail {

// Where the completion of a ticket of kind K shows, from the queue state the ticket names.
template <runtime::queue_kind K>
struct ticket_probe;
template <>
struct ticket_probe<runtime::aql_t> {
  using state = runtime::detail::queue_state;
  // The packet's slot signal (runtime/detail/aql_slots.hpp): the read index is no completion.
  static bool done(const state& s, std::uint64_t v) noexcept { return s.slots.complete(v); }
  static bool arm(state& s) noexcept { return runtime::detail::arm_wake(s); }
};
// PM4 and SDMA queues: the progress value their last RELEASE_MEM / FENCE wrote.
template <class State>
struct progress_probe {
  using state = State;
  static bool done(const state& s, std::uint64_t v) noexcept {
    return sync::atomic_load(*s.progress, std::memory_order_acquire) >= v;
  }
  static bool arm(state& s) noexcept { return runtime::detail::arm_wake(s); }
};
template <>
struct ticket_probe<runtime::pm4_t> : progress_probe<runtime::detail::pm4_queue_state> {};
template <>
struct ticket_probe<runtime::sdma_t> : progress_probe<runtime::detail::sdma_queue_state> {};

// Waits for a submitted ticket on the reactor (eager), or nothing (captured: ready at once).
template <runtime::queue_kind K>
class ticket_awaiter {
  using probe = ticket_probe<K>;
  using state = typename probe::state;

 public:
  // Ready at once (the operation was recorded as node `id`, not submitted).
  ticket_awaiter(context& c, node_id id) noexcept : ctx_(&c), id_(id) {}
  // `describe(op)` names the operation in errors: the operation is a temporary of the co_await's
  // full expression, so it outlives the awaiter.
  using describer = std::string (*)(const void*);
  ticket_awaiter(const runtime::ticket<K>& t, context& c, std::source_location loc, describer d, const void* op) noexcept
      : ctx_(&c), s_(static_cast<const state*>(t.owner())), value_(t.value()), loc_(loc), describe_(d), op_(op) {}
  ticket_awaiter(ticket_awaiter&& o) noexcept
      : ctx_(o.ctx_), s_(o.s_), value_(o.value_), loc_(o.loc_), describe_(o.describe_), op_(o.op_), id_(o.id_),
        traced_(std::exchange(o.traced_, nullptr)) {
    AQUEDUCT_ASSERT(!o.watched_, "a waiting awaiter moved");
  }
  ticket_awaiter& operator=(ticket_awaiter&&) = delete;
  // Inline, one test: an awaiter that never suspended and is not traced (the eager case whose
  // work is done, and every captured one) releases nothing; the rest is out of line.
  AQUEDUCT_ALWAYS_INLINE ~ticket_awaiter() {
    if (AQUEDUCT_UNLIKELY(watched_ || traced_ != nullptr)) release();
  }

  [[nodiscard]] bool await_ready() const noexcept { return !s_ || probe::done(*s_, value_); }
  void await_suspend(std::coroutine_handle<> h) noexcept {
    ::new (static_cast<void*>(&p_)) pending{};
    watched_ = true;
    p_.poll = [](pending& p) noexcept {
      const auto& self = *static_cast<const ticket_awaiter*>(p.owner);
      // Stopped: by the device itself, or a GPU memory fault the KFD reported (every queue of the
      // GPU stopped; one atomic load while none: runtime/detail/device_faults.hpp).
      return probe::done(*self.s_, self.value_) || (self.s_->port && self.s_->port->faulted()) ||
             self.s_->agent->sys->faults.any_on(self.s_->agent->node->gpu_id);
    };
    // The queue's commands raise no interrupt: post one when the reactor is about to sleep.
    p_.arm = [](pending& p) noexcept {
      return probe::arm(const_cast<state&>(*static_cast<const ticket_awaiter*>(p.owner)->s_));
    };
    p_.owner = this;
    p_.waiter = h;
    p_.events = events_of(*ctx_->r, *s_->agent);
    p_.event_id = s_->event.id();
    ctx_->r->watch(p_);
  }
  // The recorded node (capture), or an empty id (eager).
  node_id await_resume() const {
    if (!s_ || probe::done(*s_, value_)) {
      if (AQUEDUCT_UNLIKELY(traced_ != nullptr)) finish_trace(false);
      return id_;
    }
    if (traced_) finish_trace(true);
    failure f(errc::device_fault, "the queue stopped");
    if (auto d = s_->stopped()) f = *d;
    throw_failure(located(f, describe_(op_) + " on " + K::name + " queue " + std::to_string(s_->res.queue_id()), loc_));
  }
  // A traced eager run: the operation's execution span is added when it completes (or fails).
  void trace_into(std::unique_ptr<traced_op> t) noexcept {
    if (traced_) drop_trace(traced_);
    traced_ = t.release();
  }

 private:
  context* ctx_;
  const state* s_ = nullptr;
  std::uint64_t value_ = 0;
  std::source_location loc_{};
  describer describe_ = nullptr;
  const void* op_ = nullptr;
  node_id id_{};
  bool watched_ = false;  // p_ built (await_suspend): a lowered operation that never suspends,
                          // the common eager case when the work is already done and every
                          // captured one, does not pay for the reactor's record (bench_graph
                          // eager_dispatch)
  union {
    pending p_;
  };
  // Owned (a traced eager run only); a plain pointer so that the destructor stays inline, with
  // the trace's destruction out of line.
  traced_op* traced_ = nullptr;
  AQUEDUCT_NOINLINE static void drop_trace(traced_op* t) noexcept { delete t; }
  AQUEDUCT_NOINLINE void release() noexcept {
    if (watched_) ctx_->r->unwatch(p_);
    if (traced_ != nullptr) drop_trace(traced_);
  }

  void finish_trace(bool failed) const {
    std::uint64_t b = 0, e = 0;
    bool device = false;
    if constexpr (std::same_as<K, runtime::aql_t>)  // a dispatch's stamps (a barrier's stay 0: host clock)
      device = !failed && signal_stamps(*reinterpret_cast<const abi::amd_signal*>(s_->slots.handle(value_)),
                                        runtime::detail::aql_slot_signals::complete_value(value_), b, e);
    else  // PM4 / SDMA: the timestamps around it
      device = !failed && traced_->stamped(b, e);
    traced_finish(*traced_, b, e, device, failed);
  }
};

}  // namespace aqueduct::graph::detail
