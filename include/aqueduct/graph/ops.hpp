// aqueduct/graph/ops.hpp — the device operations a task awaits: `on(q).dispatch(...)`,
// `on(q).copy/fill(...)` (SDMA, or the shader copy on AQL and PM4),
// `on(sdma).signal/wait/timestamp(...)`, `on(q).barrier(...)`, `until(signal, ...)`, `host(fn)`,
// and co_await of a runtime ticket or signal.
//
// Layer: graph. `on(q)` makes a `queue_ref` of a runtime queue (AQL, PM4 or SDMA); its members
// return lazy operations: nothing is submitted when they are called. The task's await_transform
// lowers one with the task's context (graph/context.hpp):
//   - eagerly: a stop requested → errc::cancelled naming the co_await; else the runtime submits it
//     now (the typed dispatch of runtime/queue.hpp, the SDMA packets of runtime/sdma_queue.hpp)
//     and the task suspends on its ticket until the reactor sees the queue's progress reach it;
//   - inside capture(): recorded into the graph (graph/capture.hpp), nothing submitted.
// The runtime's own `q.dispatch(...)` still submits at once and returns a ticket; co_await of a
// ticket waits for it eagerly, and inside capture() it is an error naming the co_await (that work
// was already submitted: it cannot be recorded) — never a silent fallback.
// A wait never spins past the reactor's spin_for: it sleeps on the queue's KFD event. A queue the
// device stopped (a fault) ends the wait with the device's failure, prefixed with the operation
// and the co_await's file:line. Waits for device work are not cancellable (the device keeps
// using the memory); waits for a signal's value are (host side).
// Thread safety: operations are made and awaited on the reactor's thread.
#pragma once

#include <aqueduct/abi/amd_signal.hpp>
#include <aqueduct/core/result.hpp>
#include <aqueduct/graph/context.hpp>
#include <aqueduct/graph/detail/eager_trace.hpp>
#include <aqueduct/graph/detail/shader_op.hpp>
#include <aqueduct/graph/detail/ticket_awaiter.hpp>
#include <aqueduct/graph/device_events.hpp>
#include <aqueduct/graph/task.hpp>
#include <aqueduct/graph/task_graph.hpp>
#include <aqueduct/runtime/kernel.hpp>
#include <aqueduct/runtime/memory.hpp>
#include <aqueduct/runtime/pm4_queue.hpp>
#include <aqueduct/runtime/queue.hpp>
#include <aqueduct/runtime/queue_kind.hpp>
#include <aqueduct/runtime/sdma_queue.hpp>
#include <aqueduct/runtime/shader_copy.hpp>
#include <aqueduct/runtime/signal.hpp>
#include <aqueduct/sync/atomics.hpp>
#include <aqueduct/sync/signal.hpp>

#include <algorithm>
#include <array>
#include <concepts>
#include <functional>
#include <coroutine>
#include <cstdint>
#include <memory>
#include <new>
#include <optional>
#include <source_location>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

namespace aqueduct::graph {

namespace detail {

// The queue binding a recorded node keeps.
template <class Q>
[[nodiscard]] queue_binding binding_of(Q& q) noexcept {
  queue_binding b;
  if constexpr (std::is_same_v<Q, runtime::queue>) b.type = queue_type::aql;
  else if constexpr (std::is_same_v<Q, runtime::pm4_queue>) b.type = queue_type::pm4;
  else b.type = queue_type::sdma;
  b.queue = &q;
  b.agent = &q.agent_state();
  b.queue_id = q.queue_id();
  b.gpu_id = b.agent->node->gpu_id;
  return b;
}
inline node_id record(capture_strand& s, node&& n) { return node_id{s.record(std::move(n))}; }
// Records a node filled in place by fill(node&) (nothing moved); if fill throws, nothing recorded.
template <class Fill>
node_id record_in_place(capture_strand& s, Fill&& fill) {
  const capture_strand::appended a = s.append();
  try {
    fill(a.n);
  } catch (...) {
    s.abandon();
    throw;
  }
  return node_id{a.id};
}

// What every queue operation does when lowered (see the header comment). Derived provides
// submit() -> result<ticket<K>>, name() (a static string) and describe() (for errors).
template <class Derived, runtime::queue_kind K>
class queue_op {
 public:
  // Inlined into the co_await (issue 12: eager co_await q.dispatch within 10 ns of the runtime's
  // own typed enqueue): the submit, one test for the rare cases (a stop, a capture, a trace), the
  // awaiter built in place; everything else is out of line.
  [[nodiscard]] AQUEDUCT_ALWAYS_INLINE ticket_awaiter<K> lower(context& c, std::source_location loc) && {
    Derived& self = static_cast<Derived&>(*this);
    // The operation's inputs are read before the stop flags' atomic loads: GCC reloads from memory
    // whatever it reads after one (the operation's address is in the awaiter), and read here they
    // stay in registers, or constants when the co_await names them.
    const auto submit = self.submitter();
    if (AQUEDUCT_UNLIKELY(c.stop_requested() || c.capturing() || c.tr != nullptr)) return lower_rare(c, loc);
    auto t = submit();
    if (AQUEDUCT_UNLIKELY(!t)) submit_failed(t.get_failure(), loc);
    return ticket_awaiter<K>(*t, c, loc, &describe_op, this);
  }
  // What lower() submits, as a callable (an operation may bind its inputs by value).
  AQUEDUCT_ALWAYS_INLINE auto submitter() {
    return [this] { return static_cast<Derived&>(*this).submit(); };
  }
  // A label for the node this operation records (DOT, traces, errors, exec_graph lookups).
  Derived&& label(std::string l) && {
    label_ = std::move(l);
    return static_cast<Derived&&>(*this);
  }

 protected:
  // Empty unless label() was called: an unlabelled operation (the eager common case) stores and
  // tests one flag, not a string's three words and its destructor's branch.
  std::optional<std::string> label_;
  [[nodiscard]] std::string take_label() { return label_ ? std::move(*label_) : std::string(); }

 private:
  static std::string describe_op(const void* op) { return static_cast<const Derived*>(op)->describe(); }
  // lower() in a stopped run (the co_await fails: a stop is never withdrawn), inside capture()
  // (recorded, not submitted), or traced — in that order.
  AQUEDUCT_NOINLINE ticket_awaiter<K> lower_rare(context& c, std::source_location loc) {
    Derived& self = static_cast<Derived&>(*this);
    if (c.stop_requested()) throw_cancelled(self.describe(), loc);
    if (c.capturing()) return ticket_awaiter<K>(c, self.record(*c.capture, loc));
    AQUEDUCT_ASSERT(c.tr != nullptr, "lower_rare: nothing rare about this co_await");
    return lower_traced(c, loc);
  }
  [[noreturn]] AQUEDUCT_NOINLINE void submit_failed(const failure& f, const std::source_location& loc) const {
    throw_failure(located(f, static_cast<const Derived&>(*this).describe(), loc));
  }
  // Eager, traced: the submit timed as a host span; the awaiter adds the execution span. A PM4
  // or SDMA operation is bracketed by two timestamps on its queue (eager_trace.hpp), and the
  // awaiter waits for the second.
  ticket_awaiter<K> lower_traced(context& c, std::source_location loc) {
    Derived& self = static_cast<Derived&>(*this);
    auto& q = self.queue();
    // The GPU's first clock sample (once per agent): its stamps are translated between it and a
    // later one (runtime/device_clock.hpp). A device without the ioctl leaves spans on host time.
    (void)runtime::agent(q.agent_state()).try_mark_clock();
    if constexpr (std::same_as<K, runtime::aql_t>) enable_profiling(*q.aql().descriptor());
    runtime::buffer<std::uint64_t> stamps;
    if constexpr (!std::same_as<K, runtime::aql_t>)
      if (auto m = runtime::agent(q.agent_state()).template try_alloc<std::uint64_t>(2, runtime::memory_kind::host)) {
        stamps = std::move(*m);
        stamps.data()[0] = stamps.data()[1] = 0;
      }
    const std::uint64_t t0 = steady_now_ns();
    if constexpr (!std::same_as<K, runtime::aql_t>)
      if (stamps && !stamp(q, stamps.va())) stamps = {};
    auto t = self.submit();
    if (AQUEDUCT_UNLIKELY(!t)) throw_failure(located(t.get_failure(), self.describe(), loc));
    runtime::ticket<K> last = *t;
    if constexpr (!std::same_as<K, runtime::aql_t>)
      if (stamps) {
        if (auto e = stamp(q, stamps.va() + byte_count(8))) last = *e;
        else stamps = {};
      }
    const std::uint64_t t1 = steady_now_ns();
    ticket_awaiter<K> a(last, c, loc, &describe_op, this);
    const queue_binding b = binding_of(q);
    auto op = std::make_unique<traced_op>(
        traced_submit(*c.tr, self.describe() + " at " + where(loc), self.category(), t0, t1, b.gpu_id, b.queue_id, queue_name(b)));
    op->stamps = std::move(stamps);
    op->agent = &q.agent_state();  // its stamps count this GPU's clock (marked above)
    a.trace_into(std::move(op));
    return a;
  }
  // One timestamp command on a PM4 or SDMA queue (tracing): its ticket, or a failure.
  template <class Q>
  static auto stamp(Q& q, gpu_va at) {
    if constexpr (std::same_as<Q, runtime::pm4_queue>) {
      thread_local runtime::command_buffer cmds;
      cmds.clear();
      q.encode_timestamp(cmds, at);
      return q.try_submit(cmds);
    } else {
      return q.try_timestamp(at);
    }
  }
};

template <runtime::queue_kind K, class... P>
class dispatch_op : public queue_op<dispatch_op<K, P...>, K> {
 public:
  static constexpr const char* name = "dispatch";
  using args_type = std::tuple<typename runtime::detail::kernel_param<P>::arg_type...>;
  dispatch_op(typename K::queue_type& q, const runtime::kernel<P...>& k, runtime::grid g, runtime::block b, args_type a,
              gpu_va counts = {})
      : q_(&q), k_(&k), g_(g), b_(b), args_(std::move(a)), counts_(counts) {}

  // The dispatch's shape and targets by value (the arguments stay in the operation: the kernarg
  // copy takes their address), and the typed enqueue expanded in place (queue_op::lower).
  struct bound_submit {
    typename K::queue_type* q;
    const runtime::kernel<P...>* k;
    runtime::grid g;
    runtime::block b;
    gpu_va counts;
    const args_type* args;
    AQUEDUCT_ALWAYS_INLINE result<runtime::ticket<K>> operator()() const { return call(std::index_sequence_for<P...>{}); }
    template <std::size_t... I>
    AQUEDUCT_ALWAYS_INLINE result<runtime::ticket<K>> call(std::index_sequence<I...>) const {
      if constexpr (std::same_as<K, runtime::pm4_t>)
        if (counts) return q->try_dispatch_indirect(*k, counts, b, std::get<I>(*args)...);
      return q->try_dispatch(*k, g, b, std::get<I>(*args)...);
    }
  };
  AQUEDUCT_ALWAYS_INLINE bound_submit submitter() const { return {q_, k_, g_, b_, counts_, &args_}; }
  AQUEDUCT_ALWAYS_INLINE result<runtime::ticket<K>> submit() { return submitter()(); }
  [[nodiscard]] std::string describe() const {
    return std::string(counts_ ? "indirect dispatch of kernel '" : "dispatch of kernel '") + k_->name() + "'";
  }
  [[nodiscard]] static const char* category() noexcept { return to_string(node_kind::kernel); }  // as a replay's spans
  node_id record(capture_strand& s, const std::source_location& loc) {
    using L = runtime::detail::kernel_layout<P...>;
    constexpr std::size_t pointer_count =
        static_cast<std::size_t>(std::ranges::count(L::classes, runtime::detail::param_class::pointer));
    return record_in_place(s, [&](node& n) {
      n.kind = node_kind::kernel;
      n.queue = binding_of(*q_);
      n.label = this->take_label();
      n.where = loc;
      n.kernel = k_->info();
      n.grid = g_;
      n.block = b_;
      n.counts = counts_;
      n.args.assign(std::max<std::size_t>(n.kernel.kernarg_size, L::bytes), std::byte{0});
      std::apply([&](const auto&... a) { runtime::detail::put_typed_kernargs<P...>(n.args.data(), std::index_sequence_for<P...>{}, a...); },
                 args_);
      if constexpr (pointer_count != 0) {
        n.pointers.reserve(pointer_count);
        for (std::size_t i = 0; i < L::count; ++i)
          if (L::classes[i] == runtime::detail::param_class::pointer) n.pointers.push_back(static_cast<std::uint32_t>(L::offsets[i]));
      }
    });
  }

  [[nodiscard]] typename K::queue_type& queue() const noexcept { return *q_; }
  [[nodiscard]] const runtime::kernel<P...>& kernel() const noexcept { return *k_; }
  [[nodiscard]] runtime::grid grid() const noexcept { return g_; }
  [[nodiscard]] runtime::block block() const noexcept { return b_; }
  [[nodiscard]] const args_type& args() const noexcept { return args_; }

 private:
  typename K::queue_type* q_;
  const runtime::kernel<P...>* k_;
  runtime::grid g_;
  runtime::block b_;
  args_type args_;
  gpu_va counts_;  // set: an indirect dispatch (PM4)
};

// A PM4 or SDMA operation given as a submit function (SDMA copy, fill, signal, wait, timestamp;
// PM4 signal, wait, timestamp), recorded as the node `proto` when captured.
template <runtime::queue_kind K, class Submit>
class submit_op : public queue_op<submit_op<K, Submit>, K> {
 public:
  static constexpr const char* name = std::same_as<K, runtime::sdma_t> ? "SDMA operation" : "PM4 operation";
  submit_op(typename K::queue_type& q, const char* what, Submit s, node proto)
      : q_(&q), what_(what), submit_(std::move(s)), proto_(std::move(proto)) {}
  result<runtime::ticket<K>> submit() { return submit_(*q_); }
  [[nodiscard]] typename K::queue_type& queue() const noexcept { return *q_; }
  [[nodiscard]] std::string describe() const { return std::string(std::same_as<K, runtime::sdma_t> ? "SDMA " : "PM4 ") + what_; }
  [[nodiscard]] const char* category() const noexcept { return to_string(proto_.kind); }
  node_id record(capture_strand& s, const std::source_location& loc) {
    if (proto_.kind == node_kind::copy)  // refused at capture, as eagerly (copy())
      if (auto r = runtime::try_check_disjoint(proto_.dst, proto_.src, proto_.bytes); !r)
        throw_failure(located(r.get_failure(), describe(), loc));
    node n = std::move(proto_);
    if (n.kind != node_kind::signal_wait) n.queue = binding_of(*q_);  // a wait is placed on its consumers
    n.label = this->take_label();
    n.where = loc;
    return detail::record(s, std::move(n));
  }

 private:
  typename K::queue_type* q_;
  const char* what_;
  Submit submit_;
  node proto_;
};

// A copy or fill on a compute queue (AQL or PM4): a dispatch of its agent's copy or fill kernel
// (graph/detail/shader_op.hpp), recorded as a copy or fill node on that queue.
template <runtime::queue_kind K>
class shader_op : public queue_op<shader_op<K>, K> {
 public:
  static constexpr const char* name = "shader copy";
  shader_op(typename K::queue_type& q, node proto) : q_(&q), proto_(std::move(proto)) { proto_.queue = binding_of(q); }
  result<runtime::ticket<K>> submit() {
    AQUEDUCT_TRY(const runtime::shader_kernels* k, runtime::try_shader_kernels(runtime::agent(q_->agent_state())));
    AQUEDUCT_TRY_VOID(check_shader_op(proto_));
    const node& x = proto_;
    if (x.kind == node_kind::copy)
      return q_->try_dispatch(k->copy, launch_grid(x), launch_block(x), runtime::device_ptr<void>::at(x.dst),
                              runtime::device_ptr<const void>::at(x.src), x.bytes, runtime::shader_copy_chunk_bytes);
    return q_->try_dispatch(k->fill, launch_grid(x), launch_block(x), runtime::device_ptr<void>::at(x.dst), x.bytes,
                            runtime::shader_copy_chunk_bytes, x.value32);
  }
  [[nodiscard]] typename K::queue_type& queue() const noexcept { return *q_; }
  [[nodiscard]] std::string describe() const { return kind_name(proto_) + " of " + std::to_string(proto_.bytes) + " bytes"; }
  [[nodiscard]] const char* category() const noexcept { return to_string(proto_.kind); }
  // Refused at capture where it could never run (no copy kernel) or never runs right (overlap).
  node_id record(capture_strand& s, const std::source_location& loc) {
    node n = std::move(proto_);
    auto r = check_shader_op(n);
    if (r) r = try_resolve_shader_kernel(n);
    if (!r) throw_failure(located(r.get_failure(), kind_name(n) + " of " + std::to_string(n.bytes) + " bytes", loc));
    n.label = this->take_label();
    n.where = loc;
    return detail::record(s, std::move(n));
  }

 private:
  typename K::queue_type* q_;
  node proto_;
};

// The nodes that signal, signal-wait and timestamp operations record, on every queue kind.
[[nodiscard]] inline node signal_record_node(sync::signal_ref s, std::int64_t value) {
  node n;
  n.kind = node_kind::signal_record;
  n.signal = s;
  n.value = value;
  return n;
}
// A wait is placed on its consumers: the nodes after it wait for the signal on the device.
[[nodiscard]] inline node signal_wait_node(sync::signal_ref s, runtime::detail::agent_state* a, abi::signal_condition cond,
                                           std::int64_t value) {
  node n;
  n.kind = node_kind::signal_wait;
  n.signal = s;
  n.signal_agent = a;
  n.cond = cond;
  n.value = value;
  return n;
}
[[nodiscard]] inline node timestamp_node(gpu_va addr) {
  node n;
  n.kind = node_kind::timestamp;
  n.dst = addr;
  return n;
}

// A PM4 operation's packets (encoded by the queue, as replay encodes them) submitted with the
// queue's completion, through one reused per-thread buffer: nothing is allocated in steady state.
template <class Encode>
[[nodiscard]] auto pm4_submit(Encode e) {
  return [e = std::move(e)](runtime::pm4_queue& q) {
    thread_local runtime::command_buffer cmds;
    cmds.clear();
    e(q, cmds);
    return q.try_submit(cmds);
  };
}

// An AQL barrier-AND on up to five signals (later packets of the queue wait for them).
class aql_barrier_op : public queue_op<aql_barrier_op, runtime::aql_t> {
 public:
  static constexpr const char* name = "barrier";
  aql_barrier_op(runtime::queue& q, std::span<const sync::signal_ref> deps) : q_(&q), n_(deps.size()) {
    AQUEDUCT_ASSERT(deps.size() <= 5, "an AQL barrier-AND waits for at most 5 signals");
    for (std::size_t i = 0; i < n_; ++i) deps_[i] = deps[i];
  }
  result<runtime::aql_ticket> submit() { return q_->try_barrier_and(std::span<const sync::signal_ref>(deps_.data(), n_)); }
  [[nodiscard]] runtime::queue& queue() const noexcept { return *q_; }
  [[nodiscard]] static const char* category() noexcept { return "barrier"; }
  [[nodiscard]] std::string describe() const { return "AQL barrier-AND on " + std::to_string(n_) + " signal(s)"; }
  // Recorded as one signal-wait node per signal: the next nodes wait for each to reach 0.
  node_id record(capture_strand& s, const std::source_location& loc) {
    node_id last{};
    for (std::size_t i = 0; i < n_; ++i) {
      node n = signal_wait_node(deps_[i], &q_->agent_state(), abi::signal_condition::eq, 0);
      n.label = this->label_.value_or(std::string());
      n.where = loc;
      last = detail::record(s, std::move(n));
    }
    return last;
  }

 private:
  runtime::queue* q_;
  std::array<sync::signal_ref, 5> deps_{};
  std::size_t n_;
};

// co_await until(...): waits on the host until a signal's value satisfies a condition
// (cancellable). The operation is its own awaiter: lower() gives it the run's context and returns
// it (the temporary of the co_await expression lives until the co_await ends, across a
// suspension), so a signal that already satisfies the condition — the common case — costs the
// stop check, the load and the comparison: no copy of the operation, no call, and the reactor's
// `pending` record is built only if the task suspends (bench_graph ready_signal).
class until_op {
 public:
  // Not lowered yet (what until() returns): the temporary of `co_await until(...)`, in the frame.
  until_op(sync::signal_ref s, runtime::detail::agent_state* a, abi::signal_condition cond, std::int64_t v) noexcept
      : s_(s), a_(a), cond_(cond), v_(v) {}
  // Made lowered (awaitable_traits<runtime::signal>).
  until_op(sync::signal_ref s, runtime::detail::agent_state* a, abi::signal_condition cond, std::int64_t v, context& c,
           std::source_location loc)
      : until_op(s, a, cond, v) {
    (void)lower(c, loc);
  }
  // Before it is awaited (never once suspended: the reactor links the pending record by address).
  until_op(until_op&& o) noexcept : s_(o.s_), a_(o.a_), cond_(o.cond_), v_(o.v_), state_(o.state_), seen_(0) {
    if (state_ == waiting || state_ == recorded) {
      ctx_ = o.ctx_;
      loc_ = o.loc_;
    }
    if (state_ == done) seen_ = o.seen_;
  }
  until_op& operator=(until_op&&) = delete;
  ~until_op() {
    if (state_ == watched) ctx_->r->unwatch(p_);
  }

  // By the promise's await_transform: this run's context; inside capture() it records the node.
  // The awaiter is this very object (an until_op awaited again is lowered again), through a
  // pointer: GCC 12 copies an awaiter that is an lvalue into the frame.
  struct awaiter {
    until_op* op;
    [[nodiscard]] bool await_ready() const noexcept { return op->await_ready(); }
    void await_suspend(std::coroutine_handle<> h) noexcept { op->await_suspend(h); }
    std::int64_t await_resume() { return op->await_resume(); }
  };
  // Eager, the whole ready path is here: the fields are read while they are still in registers
  // (right after until() stored them), then the signal's load and the condition, then the stop
  // check (a stopped run fails even if the signal is ready), and only then the state is stored.
  // GCC reloads from the frame whatever is read after an atomic load and keeps every store to it,
  // so nothing after the loads reads a field, and the context and place are stored only for a
  // suspension (bench_graph ready_signal: 50 -> 39 instructions a loop iteration, callgrind).
  [[nodiscard]] awaiter lower(context& c, std::source_location loc) {
    if (AQUEDUCT_UNLIKELY(c.capturing())) {
      record(c, loc);
      return awaiter{this};
    }
    const abi::signal_condition cond = cond_;
    const std::int64_t v = v_;
    const std::int64_t seen = s_.load(std::memory_order_acquire);
    const bool ready = abi::condition_holds(cond, seen, v);
    if (AQUEDUCT_UNLIKELY(c.stop_requested())) throw_cancelled("wait for a signal", loc);
    if (AQUEDUCT_LIKELY(ready)) {
      seen_ = seen;
      state_ = done;
    } else {
      ctx_ = &c;
      loc_ = loc;
      state_ = waiting;
    }
    return awaiter{this};
  }

  // Ready (or recorded) when lower() decided so.
  [[nodiscard]] bool await_ready() const noexcept { return state_ != waiting; }
  void await_suspend(std::coroutine_handle<> h) noexcept {
    ::new (static_cast<void*>(&p_)) pending{};
    state_ = watched;
    p_.poll = [](pending& p) noexcept {
      const auto* op = static_cast<const until_op*>(p.owner);
      return op->holds() || op->gpu_faulted();
    };
    p_.owner = this;
    p_.waiter = h;
    p_.stop = ctx_->stop;
    if (a_ && s_.has_event()) {
      p_.events = events_of(*ctx_->r, *a_);
      p_.event_id = s_.event_id();
    }
    ctx_->r->watch(p_);
  }
  // The value seen (recorded: the value it will wait for).
  std::int64_t await_resume() {
    if (AQUEDUCT_LIKELY(state_ == done)) return seen_;  // ready at lower(): the value it saw
    return resumed();
  }

 private:
  // fresh: not awaited yet; waiting: not ready at lower() (it suspends); done: ready at lower(), or
  // resumed; recorded: captured; watched: suspended, linked into the reactor.
  enum : std::uint8_t { fresh, waiting, done, recorded, watched };
  // Inside capture(): a signal-wait node (the nodes after it wait for the signal on the device).
  [[gnu::noinline]] void record(context& c, std::source_location loc) {
    if (c.stop_requested()) throw_cancelled("wait for a signal", loc);
    node n = signal_wait_node(s_, a_, cond_, v_);
    n.where = loc;
    (void)detail::record(*c.capture, std::move(n));
    ctx_ = &c;
    loc_ = loc;
    state_ = recorded;
  }
  [[nodiscard]] bool holds() const noexcept { return abi::condition_holds(cond_, s_.load(std::memory_order_acquire), v_); }
  // A memory fault of the signal's GPU: every queue of it stopped, none will set the signal (one
  // atomic load while the process has had none: runtime/detail/device_faults.hpp).
  [[nodiscard]] bool gpu_faulted() const noexcept { return a_ && a_->sys->faults.any_on(a_->node->gpu_id); }
  // After a suspension (or a recorded wait): the value now, or cancelled.
  [[gnu::noinline]] std::int64_t resumed() {
    if (state_ == recorded) return v_;
    ctx_->r->unwatch(p_);
    state_ = waiting;
    const std::int64_t v = s_.load(std::memory_order_acquire);
    if (!abi::condition_holds(cond_, v, v_)) {
      if (ctx_->stop_requested())
        throw_failure(failure(errc::cancelled, "wait for a signal at " + where(loc_) + " ended: the run was asked to stop"));
      if (a_)
        if (std::optional<failure> f = a_->sys->device_stop(*a_->node)) throw_failure(located(*f, "wait for a signal", loc_));
    }
    return v;
  }
  sync::signal_ref s_;
  runtime::detail::agent_state* a_;
  abi::signal_condition cond_;
  std::int64_t v_;
  // Set by lower() only for a wait that may suspend, or by record() (state_ waiting, recorded,
  // watched): left unset otherwise, so that a ready co_await stores neither.
  context* ctx_;
  union {
    std::source_location loc_;
  };
  std::uint8_t state_ = fresh;
  std::int64_t seen_;  // the value lower() read (state_ == done)
  union {
    pending p_;  // built by await_suspend only (state_ == watched)
  };
};

// A host function run by the task (eagerly: now, on the reactor's thread; captured: a host node).
template <class F>
class host_op {
  using R = std::invoke_result_t<F&>;

 public:
  explicit host_op(F f) : f_(std::move(f)) {}
  // A label for the host node it records (DOT, traces, errors; a saved graph's load gives the
  // function again by this label, graph/save.hpp).
  host_op&& label(std::string l) && {
    label_ = std::move(l);
    return std::move(*this);
  }
  struct awaiter {
    F f;
    bool run = true;      // false: recorded, not run now
    trace* tr = nullptr;  // a traced eager run: the call is a host span
    std::source_location loc{};
    [[nodiscard]] bool await_ready() const noexcept { return true; }
    void await_suspend(std::coroutine_handle<>) const noexcept {}
    R await_resume() {
      struct timed {  // records the span however f() ends
        trace* tr;
        const std::source_location& loc;
        std::uint64_t t0 = tr ? steady_now_ns() : 0;
        ~timed() {
          if (tr) (void)tr->host("host function at " + where(loc), t0, steady_now_ns());
        }
      } span{tr, loc};
      if constexpr (std::is_void_v<R>) {
        if (run) f();
      } else {
        return f();
      }
    }
  };
  [[nodiscard]] awaiter lower(context& c, std::source_location loc) && {
    if (c.stop_requested()) throw_cancelled("host function", loc);
    if (c.capturing()) {
      if constexpr (std::is_void_v<R> && std::is_copy_constructible_v<F>) {
        node n;  // a host node: run by the reactor at each replay, between its neighbours
        n.kind = node_kind::host;
        n.fn = std::function<void()>(f_);
        n.label = std::move(label_);
        n.where = loc;
        (void)detail::record(*c.capture, std::move(n));
        return awaiter{std::move(f_), false};
      } else {
        throw_failure(failure(errc::not_supported, "host function at " + where(loc) +
                                                       " cannot be captured: the task uses its value (a captured host function "
                                                       "runs at replay time, long after the task ran) or it is not copyable"));
      }
    }
    return awaiter{std::move(f_), true, c.tr, loc};
  }

 private:
  F f_;
  std::string label_;
};

template <class Q>
struct kind_of;
template <>
struct kind_of<runtime::queue> {
  using type = runtime::aql_t;
};
template <>
struct kind_of<runtime::pm4_queue> {
  using type = runtime::pm4_t;
};
template <>
struct kind_of<runtime::sdma_queue> {
  using type = runtime::sdma_t;
};

}  // namespace detail

// A runtime queue seen from a task: its members return operations to co_await (see above).
template <runtime::queue_kind K>
class queue_ref {
 public:
  using kind = K;
  using queue_type = typename K::queue_type;
  explicit queue_ref(queue_type& q) noexcept : q_(&q) {}
  [[nodiscard]] queue_type& queue() const noexcept { return *q_; }

  // Kernel `k` over `g` work-items in workgroups of `b` (AQL and PM4 queues; typed like the
  // runtime's dispatch: a swapped or missing argument does not compile).
  template <class... P>
    requires(!std::same_as<K, runtime::sdma_t>)
  [[nodiscard]] detail::dispatch_op<K, P...> dispatch(const runtime::kernel<P...>& k, runtime::grid g, runtime::block b,
                                                      const typename runtime::detail::kernel_param<P>::arg_type&... args) const {
    return detail::dispatch_op<K, P...>(*q_, k, g, b, {args...});
  }

  // PM4: kernel `k` in workgroups of `b`, its workgroup counts {x, y, z} (u32) read by the GPU at
  // `counts` when the dispatch runs — a kernel before it decides how much work follows, eagerly
  // and at every replay (runtime::pm4_queue::dispatch_indirect; captured: an indirect kernel node).
  template <class... P>
    requires std::same_as<K, runtime::pm4_t>
  [[nodiscard]] detail::dispatch_op<K, P...> dispatch_indirect(const runtime::kernel<P...>& k, gpu_va counts, runtime::block b,
                                                               const typename runtime::detail::kernel_param<P>::arg_type&... args) const {
    return detail::dispatch_op<K, P...>(*q_, k, runtime::grid{b.x, b.y, b.z}, b, {args...}, counts);
  }

  // Barrier-AND (AQL): later work on this queue waits until every signal is 0.
  [[nodiscard]] detail::aql_barrier_op barrier(std::span<const sync::signal_ref> deps = {}) const
    requires std::same_as<K, runtime::aql_t>
  {
    return detail::aql_barrier_op(*q_, deps);
  }

  // ---- PM4 (besides dispatch) -----------------------------------------------------------------
  // After the work before it: set the signal's value and raise its event (RELEASE_MEM).
  [[nodiscard]] auto signal(sync::signal_ref s, std::int64_t value) const
    requires std::same_as<K, runtime::pm4_t>
  {
    return pm4(
        [s, value](runtime::pm4_queue& q, runtime::command_buffer& out) {
          const abi::amd_signal& a = *s.get();
          q.encode_release(out, gpu_va(s.handle() + offsetof(abi::amd_signal, value)), static_cast<std::uint64_t>(value),
                           gpu_va(a.event_mailbox_ptr), a.event_id);
        },
        "signal", detail::signal_record_node(s, value));
  }
  // Later work on this queue waits until the signal's value is `value` (WAIT_REG_MEM on its low
  // dword: meaningful for values below 2^32).
  [[nodiscard]] auto wait(sync::signal_ref s, std::uint32_t value) const
    requires std::same_as<K, runtime::pm4_t>
  {
    return pm4(
        [s, value](runtime::pm4_queue& q, runtime::command_buffer& out) {
          q.encode_wait(out, gpu_va(s.handle() + offsetof(abi::amd_signal, value)), value, 0xFFFFFFFFu,
                        abi::pm4::wait_reg_mem::compare_function::equal);
        },
        "wait for a signal", detail::signal_wait_node(s, &q_->agent_state(), abi::signal_condition::eq, value));
  }
  // The GPU timestamp (8-byte aligned address), once the work before it is done.
  [[nodiscard]] auto timestamp(gpu_va addr) const
    requires std::same_as<K, runtime::pm4_t>
  {
    return pm4([addr](runtime::pm4_queue& q, runtime::command_buffer& out) { q.encode_timestamp(out, addr); }, "timestamp",
               detail::timestamp_node(addr));
  }

  // ---- copies and fills (SDMA: COPY_LINEAR / CONSTANT_FILL; AQL, PM4: the shader copy) --------
  // On AQL and PM4 a copy or fill is a dispatch of the agent's copy or fill kernel
  // (runtime/shader_copy.hpp; emulated device only so far: errc::not_supported elsewhere, at
  // capture or eagerly). Overlapping copy ranges are refused on every queue, at capture, eagerly
  // and by try_set_copy, as copy_engine refuses them (neither path is memmove: docs/copies.md).
  [[nodiscard]] auto copy(gpu_va dst, gpu_va src, std::uint64_t bytes) const {
    node n;
    n.kind = node_kind::copy;
    n.dst = dst;
    n.src = src;
    n.bytes = bytes;
    if constexpr (std::same_as<K, runtime::sdma_t>)
      return sdma(
          [dst, src, bytes](runtime::sdma_queue& q) -> result<runtime::sdma_ticket> {
            AQUEDUCT_TRY_VOID(runtime::try_check_disjoint(dst, src, bytes));
            return q.try_copy(dst, src, bytes);
          },
          "copy", std::move(n));
    else
      return detail::shader_op<K>(*q_, std::move(n));
  }
  template <class T>
  [[nodiscard]] auto copy(const runtime::buffer<T>& dst, const runtime::buffer<T>& src) const {
    AQUEDUCT_ASSERT(dst.size() >= src.size(), "copy: the destination is smaller than the source");
    return copy(dst.va(), src.va(), src.size_bytes());
  }
  // `value` in every dword of [dst, dst + bytes) (both dword multiples).
  [[nodiscard]] auto fill(gpu_va dst, std::uint32_t value, std::uint64_t bytes) const {
    node n;
    n.kind = node_kind::fill;
    n.dst = dst;
    n.value32 = value;
    n.bytes = bytes;
    if constexpr (std::same_as<K, runtime::sdma_t>)
      return sdma([dst, value, bytes](runtime::sdma_queue& q) { return q.try_fill(dst, value, bytes); }, "fill", std::move(n));
    else
      return detail::shader_op<K>(*q_, std::move(n));
  }

  // ---- SDMA (besides copy and fill) -------------------------------------------------------------
  // After the work before it: set the signal's value (and raise its event).
  [[nodiscard]] auto signal(sync::signal_ref s, std::int64_t value) const
    requires std::same_as<K, runtime::sdma_t>
  {
    return sdma([s, value](runtime::sdma_queue& q) { return q.try_signal(s, value); }, "signal", detail::signal_record_node(s, value));
  }
  // Later work on this queue waits until the signal's value is `value` (POLL_REGMEM).
  [[nodiscard]] auto wait(sync::signal_ref s, std::uint32_t value) const
    requires std::same_as<K, runtime::sdma_t>
  {
    return sdma([s, value](runtime::sdma_queue& q) { return q.try_wait_signal(s, value); }, "wait for a signal",
                detail::signal_wait_node(s, &q_->agent_state(), abi::signal_condition::eq, value));
  }
  [[nodiscard]] auto timestamp(gpu_va addr) const
    requires std::same_as<K, runtime::sdma_t>
  {
    return sdma([addr](runtime::sdma_queue& q) { return q.try_timestamp(addr); }, "timestamp", detail::timestamp_node(addr));
  }

 private:
  template <class F>
  [[nodiscard]] auto pm4(F encode, const char* what, node proto) const {
    auto submit = detail::pm4_submit(std::move(encode));
    return detail::submit_op<runtime::pm4_t, decltype(submit)>(*q_, what, std::move(submit), std::move(proto));
  }
  template <class F>
  [[nodiscard]] detail::submit_op<runtime::sdma_t, F> sdma(F f, const char* what, node proto) const {
    return detail::submit_op<runtime::sdma_t, F>(*q_, what, std::move(f), std::move(proto));
  }
  queue_type* q_;
};

template <class Q>
  requires requires { typename detail::kind_of<Q>::type; }
[[nodiscard]] queue_ref<typename detail::kind_of<Q>::type> on(Q& q) noexcept {
  return queue_ref<typename detail::kind_of<Q>::type>(q);
}

// co_await until(sig, cond, v): until the signal's value satisfies `cond` against v (host side,
// sleeping on the signal's event; cancellable). Returns the value seen.
[[nodiscard]] inline detail::until_op until(const runtime::signal& s, abi::signal_condition cond, std::int64_t v) {
  return detail::until_op(s.ref(), s.agent_state(), cond, v);
}
// The same for a signal of agent `a` given by reference (e.g. a queue's completion signal).
[[nodiscard]] inline detail::until_op until(sync::signal_ref s, const runtime::agent& a, abi::signal_condition cond, std::int64_t v) {
  return detail::until_op(s, &a.state(), cond, v);
}

// co_await host(fn): run fn() (eagerly: now, on the reactor's thread); its result is the
// co_await's value and its exception is thrown there.
template <class F>
[[nodiscard]] detail::host_op<std::decay_t<F>> host(F&& f) {
  return detail::host_op<std::decay_t<F>>(std::forward<F>(f));
}

namespace detail {
// co_await of a runtime ticket: wait for it (eager); inside capture() an error (it already ran).
template <runtime::queue_kind K>
struct awaitable_traits<runtime::ticket<K>> {
  static ticket_awaiter<K> lower(const runtime::ticket<K>& t, context& c, std::source_location loc) {
    if (c.capturing())
      throw_failure(failure(errc::not_supported,
                            std::string("co_await of a ") + K::name + " ticket at " + where(loc) +
                                " inside capture(): the runtime's dispatch submitted that work when it was called, so it "
                                "cannot be recorded; write co_await aq::on(q).dispatch(...) (an operation) instead"));
    if (!t) throw_failure(failure(errc::invalid_argument, std::string("co_await of an empty ") + K::name + " ticket at " + where(loc)));
    return ticket_awaiter<K>(t, c, loc, [](const void*) { return std::string("work awaited by its ticket"); }, nullptr);
  }
};
// co_await of a runtime signal: until its value is 0 (a completion signal's end).
template <>
struct awaitable_traits<runtime::signal> {
  static until_op lower(const runtime::signal& s, context& c, std::source_location loc) {
    return until_op(s.ref(), s.agent_state(), abi::signal_condition::eq, 0, c, loc);
  }
};
}  // namespace detail

}  // namespace aqueduct::graph
