// aqueduct/graph/exec_graph.hpp — `exec_graph`: a task_graph instantiated into prebuilt packets,
// replayed with one copy per queue, and updated in place.
//
// Layer: graph. instantiate (task_graph::instantiate / exec_graph::try_instantiate) plans the
// graph (graph/detail/plan.hpp) and prebuilds, for each of `replay_slots` slots, every queue
// segment's packets (graph/detail/lower.hpp) and every kernel's kernargs, in memory the graph owns:
// kernargs in host memory of each node's agent; completion signals in one host buffer mapped to
// every GPU the graph uses, mailboxed to the graph's KFD event where the host waits for them.
// A replay (ring-copy mode) takes the next slot — waiting, if it is still in use, for the replay
// that last used it — writes the kernargs of the nodes updated since that slot last ran, resets
// the slot's signals to 1 and copies each segment's prebuilt packets into its queue: AQL packets
// through one reservation (one doorbell), PM4 and SDMA commands through one submission per
// queue. No allocation, no system call, no lock (tests/graph/replay.cpp counts them).
// Indirect mode (instantiate_options::mode): a PM4 segment's packets stay in graph-owned memory
// per slot and a replay submits one INDIRECT_BUFFER packet for them (detail/exec_state.hpp).
// Replays of one graph run one after another on the device (each waits for the previous one's
// end on every queue), but up to replay_slots - 1 of them may be in flight: the host does not
// wait between them.
// Updates (set_args, set_grid, set_copy, set_fill, set_enabled, bind, update) change the node's
// parameters here and are written into a slot's memory only when that slot is next used: a
// replay in flight is never touched. An update to another topology re-lowers only the queue
// segments it changes (graph/detail/topology.hpp). A launch after a runtime buffer a node uses was freed fails
// naming the node and the buffer (buffer generations, graph/detail/liveness.hpp). Errors: a queue
// the device stopped fails the wait with the node that was running named (label, source_location, queue, the decoded packet) and the nodes
// that depend on it listed as not run.
// Thread safety: one thread launches, updates and waits.
#pragma once

#include <aqueduct/abi/amd_queue.hpp>
#include <aqueduct/abi/amd_signal.hpp>
#include <aqueduct/core/result.hpp>
#include <aqueduct/graph/detail/eager_trace.hpp>
#include <aqueduct/graph/detail/exec_state.hpp>
#include <aqueduct/graph/detail/indirect.hpp>
#include <aqueduct/graph/detail/lower.hpp>
#include <aqueduct/graph/detail/lower_sdma.hpp>
#include <aqueduct/graph/detail/plan.hpp>
#include <aqueduct/graph/detail/shader_op.hpp>
#include <aqueduct/graph/detail/topology.hpp>
#include <aqueduct/graph/task_graph.hpp>
#include <aqueduct/kfd/events.hpp>
#include <aqueduct/kfd/memory.hpp>
#include <aqueduct/runtime/agent.hpp>
#include <aqueduct/runtime/detail/progress_wait.hpp>
#include <aqueduct/runtime/detail/state.hpp>
#include <aqueduct/runtime/kernel_args.hpp>
#include <aqueduct/runtime/pm4_queue.hpp>
#include <aqueduct/runtime/queue.hpp>
#include <aqueduct/runtime/sdma_queue.hpp>
#include <aqueduct/sync/atomics.hpp>
#include <aqueduct/sync/signal.hpp>
#include <aqueduct/sync/wait.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace aqueduct::graph {

namespace detail {
// f(q) with the runtime queue `b` is bound to, typed (runtime::queue&, pm4_queue& or
// sdma_queue&); nothing for a host binding. For what every queue kind answers alike.
template <class F>
void with_queue(const queue_binding& b, F&& f) {
  switch (b.type) {
    case queue_type::aql: f(*static_cast<runtime::queue*>(b.queue)); break;
    case queue_type::pm4: f(*static_cast<runtime::pm4_queue*>(b.queue)); break;
    case queue_type::sdma: f(*static_cast<runtime::sdma_queue*>(b.queue)); break;
    case queue_type::none: break;
  }
}
}  // namespace detail

class exec_graph {
 public:
  exec_graph() = default;
  exec_graph(exec_graph&&) noexcept = default;
  exec_graph& operator=(exec_graph&& o) noexcept {
    if (this != &o) {
      drain();
      s_ = std::move(o.s_);
    }
    return *this;
  }
  ~exec_graph() { drain(); }

  [[nodiscard]] static result<exec_graph> try_instantiate(const task_graph& g, const instantiate_options& o = {});
  [[nodiscard]] static exec_graph instantiate(const task_graph& g, const instantiate_options& o = {}) {
    return try_instantiate(g, o).value();
  }

  // ---- replay ------------------------------------------------------------------------------------
  // Submits one replay (see the header comment). A graph with host nodes needs a reactor to run
  // them: co_await replay() (graph/replay.hpp) instead.
  [[nodiscard]] result<replay_ticket> try_launch(sync::nanoseconds slot_timeout = sync::infinite) {
    return launch_impl(false, slot_timeout);
  }
  replay_ticket launch() { return try_launch().value(); }
  // Until replay `t` has finished on every queue; a fault names the node (see the header comment).
  [[nodiscard]] result<void> try_wait(replay_ticket t, sync::nanoseconds timeout = sync::infinite);
  void wait(replay_ticket t) { try_wait(t).value(); }
  // Also until the queues have run every replay's submission to its end (the packets after the
  // done signals): the graph's memory can then be freed (the destructor waits this way).
  [[nodiscard]] result<void> try_wait_all(sync::nanoseconds timeout = sync::infinite) {
    if (!s_ || s_->launched == 0) return ok();
    const std::uint64_t last = s_->launched - 1;
    AQUEDUCT_TRY_VOID(try_wait(replay_ticket{last}, timeout));
    return try_retire(static_cast<std::uint32_t>(last % s_->slots()), timeout);  // queues run in order: the last is enough
  }
  // Whether replay `t` has finished (nothing waited).
  [[nodiscard]] bool done(replay_ticket t) const noexcept;

  // ---- updates (take effect at the next replay of each slot; never touch one in flight) --------
  // New kernel arguments for a kernel node, laid out like a dispatch of its kernel (runtime
  // untyped rules: count, sizes and offsets checked against the kernel's metadata).
  template <class... A>
  [[nodiscard]] result<void> try_set_args(node_id n, const A&... args);
  [[nodiscard]] result<void> try_set_grid(node_id n, runtime::grid g, runtime::block b);
  [[nodiscard]] result<void> try_set_copy(node_id n, gpu_va dst, gpu_va src, std::uint64_t bytes);
  [[nodiscard]] result<void> try_set_fill(node_id n, gpu_va dst, std::uint32_t value, std::uint64_t bytes);
  [[nodiscard]] result<void> try_set_enabled(node_id n, bool enabled);
  // A node inside a child graph or a conditional's body, for the updates above: `outer` is the
  // child-graph or conditional node (an id of this graph, or one try_inner gave), `branch` its
  // body (0 for a child graph, if_then and while_loop; 0 then / 1 else; the switch_on case), and
  // `inner` the id that body's own capture returned.
  [[nodiscard]] result<node_id> try_inner(node_id outer, std::uint32_t branch, node_id inner) const;
  // Moves every reference to the buffer named `name` (task_graph::name) to `b`: it must be at
  // least as large and live on the same GPU.
  template <class T>
  [[nodiscard]] result<void> try_bind(std::string_view name, const runtime::buffer<T>& b) {
    if (!b) return failure(errc::invalid_argument, "bind('" + std::string(name) + "'): the buffer is empty (freed or moved-from)");
    return try_bind_range(name, b.va(), b.size_bytes(), b.bo().gpu_id());
  }
  [[nodiscard]] result<void> try_bind_range(std::string_view name, gpu_va va, std::uint64_t bytes, std::uint32_t gpu_id);
  // Every node's parameters from `g`. The same topology (same nodes, kinds, queues, edges): the
  // parameters only. Another topology on the same queues: only the queue segments it changes are
  // re-lowered, each slot when next used (graph/exec_update.hpp); what cannot be done that way
  // (other queues, graph memory, conditionals, trace mode) is instantiated anew. last_update()
  // says which. Node ids are then g's.
  [[nodiscard]] result<void> try_update(const task_graph& g);
  // What the last try_update did: whether it saw another topology, which segments it re-lowers,
  // what it kept, or why it had to instantiate the whole graph anew (docs/graph.md "Updates").
  [[nodiscard]] const update_report& last_update() const noexcept { return s_->last_update; }

  // ---- inspection ----------------------------------------------------------------------------------
  [[nodiscard]] const task_graph& graph() const noexcept { return s_->graph; }
  [[nodiscard]] std::size_t size() const noexcept { return s_ ? s_->p.nodes.size() : 0; }
  [[nodiscard]] std::size_t segments() const noexcept { return s_ ? s_->segs.size() : 0; }
  // Packets (AQL) or dwords (PM4, SDMA) one replay writes into each queue.
  [[nodiscard]] std::vector<std::size_t> replay_sizes() const;
  [[nodiscard]] bool has_host_nodes() const noexcept { return s_ && !s_->p.host_nodes.empty(); }
  // Graph memory (graph/memory.hpp): where allocation `alloc` (its memory alloc node: the
  // graph_buffer's node()) lives in the pool, and the bytes all pools hold.
  [[nodiscard]] result<gpu_va> try_memory_address(node_id alloc) const;
  [[nodiscard]] std::uint64_t memory_pool_bytes() const noexcept {
    std::uint64_t b = 0;
    if (s_)
      for (const auto& p : s_->mem.pools) b += p.bytes;
    return b;
  }
  [[nodiscard]] std::string to_dot() const { return s_ ? s_->graph.to_dot() : std::string(); }
  [[nodiscard]] explicit operator bool() const noexcept { return s_ != nullptr; }
  [[nodiscard]] detail::exec_state& state() noexcept { return *s_; }
  [[nodiscard]] const detail::exec_state& state() const noexcept { return *s_; }
  // (graph/replay.hpp) A launch whose host nodes the caller's reactor runs; the fault of a replay.
  [[nodiscard]] result<replay_ticket> try_launch_for_reactor() { return launch_impl(true, sync::infinite); }
  // A WHILE of finished replay `t` that hit its max_iterations (graph/control.hpp).
  [[nodiscard]] std::optional<failure> loop_overflow(replay_ticket t) const { return detail::loop_overflow(*s_, t); }
  [[nodiscard]] std::optional<failure> replay_fault(replay_ticket t) const {
    const auto slot = static_cast<std::uint32_t>(t.sequence % s_->slots());
    return s_->slot_replay[slot] == t.sequence + 1 ? fault(slot) : std::nullopt;
  }

 private:
  [[nodiscard]] result<replay_ticket> launch_impl(bool host_nodes_ok, sync::nanoseconds slot_timeout);
  [[nodiscard]] result<void> prepare_slot(std::uint32_t slot);
  [[nodiscard]] result<void> submit_slot(std::uint32_t slot);
  void lower(std::uint32_t seg, std::uint32_t slot);
  void lower_into(std::uint32_t seg, std::uint32_t slot, detail::segment_commands& out) const;
  void set_mailboxes(std::uint32_t slot) noexcept;
  [[nodiscard]] result<bool> try_update_topology(const task_graph& g);
  [[nodiscard]] static result<void> check_kernel_node(const node& x);
  [[nodiscard]] result<std::uint32_t> try_kernarg_room(runtime::detail::agent_state* agent, std::uint64_t bytes, std::uint64_t block_bytes);
  void write_kernargs(std::uint32_t node, std::uint32_t slot) noexcept;
  [[nodiscard]] detail::slot_view view(std::uint32_t slot) const noexcept;
  [[nodiscard]] bool slot_done(std::uint32_t slot) const noexcept;
  [[nodiscard]] result<void> try_retire(std::uint32_t slot, sync::nanoseconds timeout) const;
  [[nodiscard]] std::optional<failure> fault(std::uint32_t slot) const;
  // The flat index of `n`, which must be a `k` node (node_kind::child: any kind; a child graph
  // itself has no flat index).
  [[nodiscard]] result<std::uint32_t> try_flat(node_id n, node_kind k) const;
  void logged(std::uint32_t flat, detail::update_kind k);
  void drain() noexcept;

  std::unique_ptr<detail::exec_state> s_;
};

// ---- instantiate ---------------------------------------------------------------------------------

// What instantiation refuses in a kernel node (and a topology update in a new one).
inline result<void> exec_graph::check_kernel_node(const node& x) {
  if (x.queue.type == queue_type::pm4 && x.kernel.private_segment_size)
    return failure(errc::not_supported, x.describe() + ": the kernel uses scratch, which PM4 dispatches do not set up yet");
  if (x.args.size() > x.kernel.kernarg_size && x.kernel.kernarg_size)
    return failure(errc::invalid_argument, x.describe() + ": more argument bytes than the kernel's kernarg segment");
  return ok();
}

inline detail::slot_view exec_graph::view(std::uint32_t slot) const noexcept {
  detail::slot_view v;
  v.slot = slot;
  v.prev_slot = (slot + s_->slots() - 1) % s_->slots();
  v.ctx = s_.get();
  v.signal_va = [](const void* c, std::uint32_t s, std::uint32_t i) {
    return static_cast<const detail::exec_state*>(c)->signal_va(s, i);
  };
  v.kernarg_va = [](const void* c, std::uint32_t s, std::uint32_t n) {
    const auto& st = *static_cast<const detail::exec_state*>(c);
    const auto& a = st.agents[st.node_agent[n]];
    return a.kernargs.va() + byte_count(a.slot_bytes * s + st.kernarg_offset[n]);
  };
  v.node_signals = s_->p.node_signals;
  v.segments = static_cast<std::uint32_t>(s_->segs.size());
  v.event_mailbox = s_->event.mailbox_va();
  v.event_id = s_->event.id();
  if (s_->opt.trace)
    v.trace_va = [](const void* c, std::uint32_t s, std::uint32_t n, std::uint32_t which) {
      const auto& st = *static_cast<const detail::exec_state*>(c);
      return st.stamps.va() + byte_count(8 * ((std::uint64_t{s} * st.p.nodes.size() + n) * 2 + which));
    };
  return v;
}

// Segment `seg`'s packets for `slot`, without conditionals' body memory (lower() handles those),
// into `out`: also how a topology update checks a re-lowered segment before it commits to it.
inline void exec_graph::lower_into(std::uint32_t seg, std::uint32_t slot, detail::segment_commands& out) const {
  const detail::exec_segment& sg = s_->segs[seg];
  detail::slot_view v = view(slot);
  if (sg.indirect()) v.cursor = sg.cursor.va() + byte_count(8ull * slot);
  switch (sg.q.type) {
    case queue_type::aql: detail::aql_lowering(s_->p, v, out).lower(seg); break;
    case queue_type::pm4: detail::pm4_lowering(s_->p, v, out, s_->host_waited).lower(seg, *static_cast<runtime::pm4_queue*>(sg.q.queue)); break;
    case queue_type::sdma:
      detail::sdma_lowering(s_->p, v, out, s_->host_waited).lower(seg, *static_cast<runtime::sdma_queue*>(sg.q.queue));
      break;
    case queue_type::none: break;
  }
}

inline void exec_graph::lower(std::uint32_t seg, std::uint32_t slot) {
  detail::exec_segment& sg = s_->segs[seg];
  ++sg.lowerings;
  if (sg.body.empty()) {
    lower_into(seg, slot, sg.slots[slot]);
  } else {  // conditionals: their bodies (PM4) and flag words in the slot's body memory
    detail::slot_view v = view(slot);
    if (sg.indirect()) v.cursor = sg.cursor.va() + byte_count(8ull * slot);
    if (sg.q.type == queue_type::pm4) {
      detail::lower_pm4_segment(s_->p, v, sg, slot, s_->host_waited, seg, *static_cast<runtime::pm4_queue*>(sg.q.queue));
    } else {
      v.loop_flags = detail::flag_memory(sg, slot);
      detail::sdma_lowering(s_->p, v, sg.slots[slot], s_->host_waited).lower(seg, *static_cast<runtime::sdma_queue*>(sg.q.queue));
    }
  }
  if (sg.indirect()) detail::stage_indirect(sg, slot);
}

// Slot `slot`'s event mailboxes: the done signals and the node signals a host node waits for name
// the graph's KFD event (host waits sleep on it), the other node signals none.
inline void exec_graph::set_mailboxes(std::uint32_t slot) noexcept {
  detail::exec_state& s = *s_;
  const std::uint32_t done_lo = s.p.node_signals, done_hi = done_lo + static_cast<std::uint32_t>(s.p.segments.size());
  const auto put = [&](std::uint32_t i, bool on) {
    abi::amd_signal& sig = *s.signal(slot, i);
    sig.event_mailbox_ptr = on ? s.event.mailbox_va().value : 0;
    sig.event_id = on ? s.event.id() : 0;
  };
  for (std::uint32_t i = 0; i < s.signals_per_slot; ++i) put(i, i >= done_lo && i < done_hi);
  for (std::uint32_t n = 0; n < s.p.nodes.size(); ++n)
    if (s.host_waited[n] && s.p.placed[n].signal != detail::no_index) put(s.p.placed[n].signal, true);
}

inline void exec_graph::write_kernargs(std::uint32_t n, std::uint32_t slot) noexcept {
  if (n == detail::no_index) return;  // a node a topology update removed
  const node& x = s_->p.nodes[n];
  if (!detail::dispatches(x)) return;
  const detail::agent_memory& a = s_->agents[s_->node_agent[n]];
  auto* base = static_cast<std::byte*>(a.kernargs.host()) + a.slot_bytes * slot + s_->kernarg_offset[n];
  if (detail::is_shader_op(x))  // its arguments follow from the copy's (detail/shader_op.hpp)
    detail::put_shader_args(base, x);
  else
    std::memcpy(base, x.args.data(), x.args.size());
  const runtime::grid grid = detail::launch_grid(x);
  const runtime::block block = detail::launch_block(x);
  // hidden_queue_ptr: the AQL queue's amd_queue; a PM4 queue has none (null, as a PM4 dispatch).
  const std::uint64_t amdq = x.queue.type == queue_type::aql ? static_cast<runtime::queue*>(x.queue.queue)->amd_queue_address().value : 0;
  if (x.counts)  // indirect: the GPU copies the counts into the hidden block counts
    x.kernel.hidden.put_indirect(base, x.kernel.kernarg_size, block);
  else
    x.kernel.hidden.put(base, x.kernel.kernarg_size, grid, block, runtime::hidden_values{amdq, 0});
  if (x.queue.type == queue_type::pm4) {  // the dispatch packet a PM4 dispatch points the kernel at
    abi::kernel_dispatch_packet pkt{};
    pkt.setup = 3;
    pkt.workgroup_size_x = block.x;
    pkt.workgroup_size_y = block.y;
    pkt.workgroup_size_z = block.z;
    if (!x.counts) {  // indirect: 0, the grid is not known here (runtime/pm4_queue.hpp dispatch_indirect)
      pkt.grid_size_x = grid.x;
      pkt.grid_size_y = grid.y;
      pkt.grid_size_z = grid.z;
    }
    pkt.group_segment_size = x.kernel.group_segment_size;
    pkt.kernel_object = x.kernel.object.value;
    pkt.kernarg_address = a.kernargs.va().value + a.slot_bytes * slot + s_->kernarg_offset[n];
    std::memcpy(base + detail::pm4_lowering::kernarg_bytes(x), &pkt, sizeof pkt);
  }
}

inline result<exec_graph> exec_graph::try_instantiate(const task_graph& g, const instantiate_options& o) {
  if (o.replay_slots < 2) return failure(errc::invalid_argument, "instantiate_options::replay_slots must be at least 2");
  exec_graph e;
  e.s_ = std::make_unique<detail::exec_state>();
  detail::exec_state& s = *e.s_;
  s.graph = g;
  s.opt = o;
  try {
    s.p = detail::make_plan(g, o.trace);
    s.mem = detail::plan_memory(s.p);
  } catch (const error& x) {
    return x.get_failure();
  }
  const auto n = static_cast<std::uint32_t>(s.p.nodes.size());
  // Agents: every queue's, in order of first use.
  const auto agent_index = [&](runtime::detail::agent_state* a) -> std::uint32_t {
    for (std::uint32_t i = 0; i < s.agents.size(); ++i)
      if (s.agents[i].agent == a) return i;
    s.agents.push_back(detail::agent_memory{a, {}, 0});
    return static_cast<std::uint32_t>(s.agents.size() - 1);
  };
  for (const queue_binding& q : s.p.segments) (void)agent_index(q.agent);
  if (s.agents.empty()) {
    // A graph of host nodes only still needs a system for its event: refuse it plainly.
    return failure(errc::invalid_argument, "instantiate: the graph has no node on a queue (nothing for a device to run)");
  }
  s.keep = runtime::detail::keep_system(*s.agents.front().agent);
  s.driver = s.agents.front().agent->sys->ref();
  s.faults = &s.agents.front().agent->sys->faults;
  // Kernargs: per agent, one region per slot; each kernel node (and shader copy) at a fixed offset in it.
  s.node_agent.assign(n, 0);
  s.kernarg_offset.assign(n, 0);
  for (std::uint32_t i = 0; i < n; ++i) {
    node& x = s.p.nodes[i];
    if (detail::is_shader_op(x)) AQUEDUCT_TRY_VOID(detail::try_prepare_shader_op(x));  // its agent's kernel (none: refused, named)
    if (!detail::dispatches(x)) continue;
    AQUEDUCT_TRY_VOID(check_kernel_node(x));
    const std::uint32_t a = agent_index(x.queue.agent);
    s.node_agent[i] = a;
    s.kernarg_offset[i] = s.agents[a].slot_bytes;
    s.agents[a].slot_bytes += detail::pm4_lowering::kernarg_bytes(x) + (x.queue.type == queue_type::pm4 ? 64 : 0);
  }
  for (detail::agent_memory& a : s.agents) {
    a.used = a.slot_bytes;
    a.slot_bytes = std::max<std::uint64_t>((a.slot_bytes + 255) / 256 * 256, 256);
    AQUEDUCT_TRY(a.kernargs, runtime::detail::try_reusable_buffer(*a.agent, a.slot_bytes * o.replay_slots, kfd::memory_use::host));
  }
  // Graph memory: the pools, and their addresses in place of the placeholders capture handed out.
  if (!s.mem.allocs.empty()) {
    std::vector<runtime::detail::agent_state*> gpus;
    for (const detail::agent_memory& a : s.agents) gpus.push_back(a.agent);
    AQUEDUCT_TRY_VOID(detail::allocate_pools(s.p, s.mem, gpus));
    for (std::uint32_t f = 0; f < s.p.nodes.size(); ++f) {
      node& x = s.p.nodes[f];
      if (!detail::translate(s.mem, x, f)) return failure(errc::invalid_argument, x.describe() + ": uses a graph allocation of another graph");
      s.args_before.reserve(x.args.size());
    }
  }
  s.buffers.collect_all(s.p);  // buffer generations: the runtime buffers each node uses
  // Signals: node signals, then one done signal per segment, then spares for a topology update's
  // new cross-queue edges (exec_update.hpp), per slot; visible to every GPU.
  s.signals_live = s.p.node_signals + static_cast<std::uint32_t>(s.p.segments.size());
  s.signals_per_slot = s.signals_live + std::max<std::uint32_t>(8, s.p.node_signals / 4);
  runtime::detail::agent_state& first = *s.agents.front().agent;
  AQUEDUCT_TRY(s.signals, runtime::detail::try_reusable_buffer(
                              first, std::uint64_t{s.signals_per_slot} * o.replay_slots * sizeof(abi::amd_signal), kfd::memory_use::queue));
  for (std::size_t i = 1; i < s.agents.size(); ++i) AQUEDUCT_TRY_VOID(s.signals.try_map_to(*s.agents[i].agent->node));
  if (o.trace) {
    AQUEDUCT_TRY(s.stamps, runtime::detail::try_reusable_buffer(first, std::max<std::uint64_t>(16 * n * o.replay_slots, 64),
                                                                kfd::memory_use::host));
    for (std::size_t i = 1; i < s.agents.size(); ++i) AQUEDUCT_TRY_VOID(s.stamps.try_map_to(*s.agents[i].agent->node));
    s.launch_start.assign(o.replay_slots, 0);
    s.launch_end.assign(o.replay_slots, 0);
    // AQL kernels report start_ts/end_ts in their completion signal only on a queue with
    // profiling enabled. It stays on for the queue's lifetime.
    for (const queue_binding& q : s.p.segments) {
      if (q.type == queue_type::aql) detail::enable_profiling(*static_cast<runtime::queue*>(q.queue)->aql().descriptor());
      // The first clock sample of each GPU, if none was taken yet: try_trace_replay translates the
      // stamps between it and a later one (runtime/device_clock.hpp). Without the ioctl,
      // try_trace_replay says so.
      (void)runtime::agent(*q.agent).try_mark_clock();
    }
  }
  AQUEDUCT_TRY(s.event, first.sys->try_make_event(*first.node));
  for (std::size_t i = 1; i < s.agents.size(); ++i) {  // the event page must reach every GPU that writes a mailbox
    AQUEDUCT_TRY(auto ev, s.agents[i].agent->sys->try_make_event(*s.agents[i].agent->node));
    (void)ev;
  }
  // Which node signals a host node waits for (those carry the mailbox and raise the event).
  s.host_waited = detail::host_waited(s.p);
  for (std::uint32_t slot = 0; slot < o.replay_slots; ++slot) {
    for (std::uint32_t i = 0; i < s.signals_per_slot; ++i) sync::signal_ref::initialize(*s.signal(slot, i), 0, 0, 0);
    e.set_mailboxes(slot);
  }
  s.signals_dirty.assign(o.replay_slots, false);
  s.flat_of_tag.resize(n);
  for (std::uint32_t i = 0; i < n; ++i) s.flat_of_tag[i] = i;
  // Segments: prebuilt packets and kernargs for every slot.
  s.segs.resize(s.p.segments.size());
  for (std::size_t i = 0; i < s.segs.size(); ++i) {
    s.segs[i].q = s.p.segments[i];
    s.segs[i].slots.resize(o.replay_slots);
    s.segs[i].submitted_at.assign(o.replay_slots, 0);
    s.segs[i].pm4_end.assign(o.replay_slots, {});
    s.segs[i].sdma_end.assign(o.replay_slots, {});
    if (o.mode == replay_mode::indirect && (s.segs[i].q.type == queue_type::pm4 || s.segs[i].q.type == queue_type::sdma)) {
      const runtime::detail::agent_state& a = *s.segs[i].q.agent;
      AQUEDUCT_TRY(s.segs[i].cursor, kfd::buffer<detail::file_type>::try_allocate(a.sys->ref(), *a.node,
                                                                                 byte_count(std::max<std::uint64_t>(8ull * o.replay_slots, 64)),
                                                                                 kfd::memory_use::host));
      std::memset(s.segs[i].cursor.host(), 0, 8ull * o.replay_slots);
      s.segs[i].ib.resize(o.replay_slots);
      s.segs[i].ib_submit.resize(o.replay_slots);
      s.segs[i].ib_refs.resize(o.replay_slots);
    }
    if (s.segs[i].q.type != queue_type::aql && has_conditional(s.p, static_cast<std::uint32_t>(i))) {
      s.segs[i].body.resize(o.replay_slots);
      s.segs[i].loop_flag_bytes = (8ull * s.p.loop_flags[i] + 63) / 64 * 64;
    }
  }
  // The CP runs indirect buffers two levels deep (ring -> IB -> IB; the emulated MEC refuses a
  // third): each conditional level is one, and indirect mode already puts the segment in one.
  if (const std::uint32_t room = o.mode == replay_mode::indirect ? 1 : 2; s.p.max_nesting > room)
    return failure(errc::not_supported,
                   "conditionals nested " + std::to_string(s.p.max_nesting) + " deep: the command processor runs indirect buffers two levels deep, " +
                       (o.mode == replay_mode::indirect ? "and indirect replay mode uses one for the segment: use replay_mode::ring_copy or "
                                                          "do not nest conditionals"
                                                        : "so conditionals nest at most 2 deep"));
  s.slot_replay.assign(o.replay_slots, 0);
  s.slot_log.assign(o.replay_slots, 0);
  s.log.reserve(2 * std::size_t{n} + 64);  // updates between replays: no allocation in steady state
  s.last_logged.assign(n, ~std::uint64_t{0});
  try {
    for (std::uint32_t slot = 0; slot < o.replay_slots; ++slot) {
      for (std::uint32_t i = 0; i < n; ++i) e.write_kernargs(i, slot);
      for (std::uint32_t seg = 0; seg < s.segs.size(); ++seg) e.lower(seg, slot);
    }
  } catch (const error& x) {
    return x.get_failure();
  }
  return e;
}

// ---- replay ----------------------------------------------------------------------------------------

inline bool exec_graph::slot_done(std::uint32_t slot) const noexcept {
  for (std::uint32_t seg = 0; seg < s_->segs.size(); ++seg)
    if (sync::atomic_load(s_->signal(slot, s_->p.node_signals + seg)->value, std::memory_order_acquire) != 0) return false;
  return true;
}

// Until the PM4 and SDMA queues have run the slot's last submissions to their end (see
// exec_segment::pm4_end); called once its done signals are set, so at most a few packets remain.
inline result<void> exec_graph::try_retire(std::uint32_t slot, sync::nanoseconds timeout) const {
  for (const detail::exec_segment& sg : s_->segs) {
    if (sg.q.type == queue_type::pm4 && sg.pm4_end[slot])
      AQUEDUCT_TRY_VOID(static_cast<const runtime::pm4_queue*>(sg.q.queue)->try_wait(sg.pm4_end[slot], timeout));
    else if (sg.q.type == queue_type::sdma && sg.sdma_end[slot])
      AQUEDUCT_TRY_VOID(static_cast<const runtime::sdma_queue*>(sg.q.queue)->try_wait(sg.sdma_end[slot], timeout));
  }
  return ok();
}

inline bool exec_graph::done(replay_ticket t) const noexcept {
  if (!s_ || t.sequence >= s_->launched) return false;
  const auto slot = static_cast<std::uint32_t>(t.sequence % s_->slots());
  if (s_->slot_replay[slot] != t.sequence + 1) return true;  // the slot was reused: t finished before
  return slot_done(slot);
}

// Writes what changed since the slot last ran; resets its signals.
inline result<void> exec_graph::prepare_slot(std::uint32_t slot) {
  detail::exec_state& s = *s_;
  s.launch_items = s.log.size() - s.slot_log[slot] + s.segs.size() + s.signals_live;
  for (std::size_t i = s.slot_log[slot]; i < s.log.size(); ++i) write_kernargs(s.log[i], slot);
  s.slot_log[slot] = s.log.size();
  // Drop what every slot has applied (in place: the log keeps its capacity).
  const std::size_t applied = *std::min_element(s.slot_log.begin(), s.slot_log.end());
  if (applied) {
    s.log.erase(s.log.begin(), s.log.begin() + static_cast<std::ptrdiff_t>(applied));
    for (std::size_t& p : s.slot_log) p -= applied;
    s.log_base += applied;
  }
  for (std::uint32_t seg = 0; seg < s.segs.size(); ++seg)
    if (s.segs[seg].slots[slot].stale) {
      try {
        lower(seg, slot);
      } catch (const error& x) {
        return x.get_failure();
      }
    }
  if (AQUEDUCT_UNLIKELY(s.signals_dirty[slot])) {  // a topology update gave signals to other nodes
    set_mailboxes(slot);
    s.signals_dirty[slot] = false;
  }
  for (std::uint32_t i = 0; i < s.signals_live; ++i) sync::atomic_store(s.signal(slot, i)->value, 1, std::memory_order_relaxed);
  for (detail::exec_segment& sg : s.segs)
    if (!sg.body.empty()) {
      s.launch_items += sg.loop_flag_bytes / 8;
      for (std::uint64_t w = 0; w < sg.loop_flag_bytes / 8; ++w)
        sync::atomic_store(static_cast<std::uint64_t*>(sg.body[slot].host())[w], std::uint64_t{0}, std::memory_order_relaxed);
    }
  for (detail::exec_segment& sg : s.segs)
    if (sg.indirect()) sync::atomic_store(static_cast<std::uint64_t*>(sg.cursor.host())[slot], std::uint64_t{0}, std::memory_order_relaxed);
  return ok();
}

inline result<void> exec_graph::submit_slot(std::uint32_t slot) {
  detail::exec_state& s = *s_;
  for (std::uint32_t seg = 0; seg < s.segs.size(); ++seg) {
    detail::exec_segment& sg = s.segs[seg];
    detail::segment_commands& c = sg.slots[slot];
    switch (sg.q.type) {
      case queue_type::aql: {
        auto& q = static_cast<runtime::queue*>(sg.q.queue)->aql();
        const auto total = static_cast<std::uint32_t>(c.aql.size());
        s.launch_items += total;
        for (std::uint32_t at = 0; at < total;) {  // more packets than the ring holds: several reservations
          const std::uint32_t n = std::min(total - at, q.size());
          auto r = q.try_reserve(n, sync::infinite);
          if (!r) return std::move(r).get_failure();
          if (at == 0) sg.submitted_at[slot] = r->index(0);
          for (std::uint32_t i = 0; i < n; ++i) r->write(i, c.aql[at + i]);
          r->publish();
          at += n;
        }
        break;
      }
      case queue_type::pm4: {
        const runtime::command_buffer& cmds = sg.indirect() ? sg.ib_submit[slot] : c.cmds;
        s.launch_items += cmds.size();
        auto t = static_cast<runtime::pm4_queue*>(sg.q.queue)->try_submit(cmds, sync::infinite, &sg.submitted_at[slot]);
        if (!t) return std::move(t).get_failure();
        sg.pm4_end[slot] = *t;
        break;
      }
      case queue_type::sdma: {
        auto& q = *static_cast<runtime::sdma_queue*>(sg.q.queue);
        s.launch_items += sg.indirect() ? sg.ib_refs[slot].size() * abi::sdma::indirect::dwords : c.cmds.size();
        auto t = sg.indirect() ? q.try_submit_indirect(sg.ib_refs[slot], sync::infinite, &sg.submitted_at[slot])
                               : q.try_submit(c.cmds, sync::infinite, &sg.submitted_at[slot]);
        if (!t) return std::move(t).get_failure();
        sg.sdma_end[slot] = *t;
        break;
      }
      case queue_type::none: break;
    }
  }
  return ok();
}

inline result<replay_ticket> exec_graph::launch_impl(bool host_nodes_ok, sync::nanoseconds slot_timeout) {
  if (!s_) return failure(errc::invalid_argument, "this exec_graph is empty (default-constructed or moved-from)");
  detail::exec_state& s = *s_;
  if (s.failed) return *s.failed;
  if (!host_nodes_ok && !s.p.host_nodes.empty())
    return failure(errc::invalid_argument, "this graph has host nodes: replay it with co_await aq::graph::replay(exec) so a reactor runs them");
  AQUEDUCT_TRY_VOID(s.buffers.check(s.p));  // a freed buffer: refused, named (one atomic load when nothing was freed)
  const std::uint64_t seq = s.launched;
  const auto slot = static_cast<std::uint32_t>(seq % s.slots());
  // The slot's signals are about to be reset: the replay that waits for them (the one after its
  // last user) must have finished.
  if (seq + 1 >= s.slots()) AQUEDUCT_TRY_VOID(try_wait(replay_ticket{seq + 1 - s.slots()}, slot_timeout));
  // ...and its queues must have run its last user's submissions to their end (exec_segment::pm4_end):
  // one load per PM4 or SDMA queue when they have, as they nearly always have by now.
  if (seq >= s.slots()) AQUEDUCT_TRY_VOID(try_retire(slot, slot_timeout));
  const std::uint64_t t0 = s.opt.trace ? steady_now_ns() : 0;
  AQUEDUCT_TRY_VOID(prepare_slot(slot));
  s.slot_replay[slot] = seq + 1;
  s.launched = seq + 1;
  if (auto r = submit_slot(slot); !r) {
    s.failed = r.get_failure();
    return std::move(r).get_failure();
  }
  if (s.opt.trace) {
    s.launch_start[slot] = t0;
    s.launch_end[slot] = steady_now_ns();
  }
  return replay_ticket{seq};
}

// The node a stopped queue was running, named, and what it leaves unrun. A queue the device
// itself names as stopped is looked for first (pass 0): after a GPU memory fault the KFD reports
// every queue of the GPU stopped, and the one that faulted is the one to name. It is a replay
// wait's stop check: what the process knows already (known_fault: no system call; the wait looks
// at the memory event itself).
inline std::optional<failure> exec_graph::fault(std::uint32_t slot) const {
  const detail::exec_state& s = *s_;
  for (int pass = 0; pass < 2; ++pass) {
    for (std::uint32_t seg = 0; seg < s.segs.size(); ++seg) {
      const detail::exec_segment& sg = s.segs[seg];
      std::string queue_text;
      std::uint32_t node = detail::no_index;
      const detail::segment_commands& c = sg.slots[slot];
      bool stopped_here = false;
      detail::with_queue(sg.q, [&](auto& q) {
        const auto f = pass == 0 ? q.own_fault() : q.known_fault();
        if (!f) return;
        stopped_here = true;
        q.describe(queue_text);
        if constexpr (std::is_same_v<std::remove_cvref_t<decltype(q)>, runtime::queue>) {
          // The read index counts LAUNCHED packets (runtime/detail/aql_slots.hpp). The emulated
          // processor names the packet it stopped at; else the last launched one (a packet with
          // the barrier bit, as the graph's same-queue edges, is not launched before the one
          // before it completed).
          std::uint64_t stopped = q.read_index() - 1;
          const std::string_view fd = f->detail();
          if (const auto k = fd.find("stopped at packet "); k != std::string_view::npos)
            stopped = std::strtoull(fd.data() + k + 18, nullptr, 10);
          const std::uint64_t at = stopped - sg.submitted_at[slot];
          if (at < c.aql_node.size()) node = c.aql_node[at];
        } else if (sg.indirect()) {
          node = detail::cursor_node(sg, slot, s.flat_of_tag);
        } else {
          // The engine's position in dwords (SDMA counts bytes; NOP padding at the ring's end, if
          // any, makes its answer approximate).
          std::uint64_t position;
          if constexpr (std::is_same_v<std::remove_cvref_t<decltype(q)>, runtime::pm4_queue>)
            position = q.read_pointer() - sg.submitted_at[slot];
          else
            position = (q.read_offset() - sg.submitted_at[slot]) / 4;
          const std::size_t pk = c.cmds.packet_at(position);
          if (pk < c.cmd_node.size()) node = c.cmd_node[pk];
        }
      });
      if (!stopped_here) continue;
      std::string d = "graph replay failed in ";
      d += node != detail::no_index ? s.p.nodes[node].describe() : "the glue packets of " + detail::queue_name(sg.q);
      d += ": " + queue_text;
      if (node != detail::no_index) {
        std::string after;
        for (std::uint32_t i = node + 1; i < s.p.nodes.size(); ++i) {
          bool depends = false;
          for (std::uint32_t d2 : s.p.nodes[i].deps) depends |= d2 == node;
          if (depends) after += (after.empty() ? "" : ", ") + s.p.nodes[i].describe();
        }
        if (!after.empty()) d += "; not run (they depend on it): " + after;
      }
      return failure(errc::device_fault, std::move(d));
    }
  }
  return std::nullopt;
}

inline result<void> exec_graph::try_wait(replay_ticket t, sync::nanoseconds timeout) {
  if (!s_) return failure(errc::invalid_argument, "this exec_graph is empty (default-constructed or moved-from)");
  if (!t || t.sequence >= s_->launched) return failure(errc::invalid_argument, "try_wait: not a replay of this exec_graph");
  const auto slot = static_cast<std::uint32_t>(t.sequence % s_->slots());
  if (s_->slot_replay[slot] != t.sequence + 1) return ok();
  auto r = runtime::detail::wait_for_progress(
      runtime::detail::kfd_waiter{s_->driver, s_->faults}, s_->event.id(), s_->opt.wait, timeout, [&] { return slot_done(slot); },
      [&] { return fault(slot); },
      [&](sync::nanoseconds waited) {
        std::string d = "graph replay " + std::to_string(t.sequence) + " not finished after " +
                        std::to_string(std::chrono::duration<double, std::milli>(waited).count()) + " ms:";
        for (std::uint32_t seg = 0; seg < s_->segs.size(); ++seg)
          d += " " + detail::queue_name(s_->segs[seg].q) +
               (sync::atomic_load(s_->signal(slot, s_->p.node_signals + seg)->value, std::memory_order_acquire) ? " running;" : " done;");
        return failure(errc::timeout, std::move(d));
      },
      [] { return true; });  // the slot's done signals carry the graph's event mailbox: always raised
  if (!r && r.get_failure() == errc::device_fault) s_->failed = r.get_failure();
  if (r)
    if (auto f = loop_overflow(t)) return *f;
  return r;
}


// Frees the graph's memory only once no queue can read or write it any more: after waiting for
// every replay (bounded), or — a replay failed, or did not finish in time — by handing the memory
// to every queue the graph uses, which keeps it until it has finished what it was given or is
// destroyed (hold_until_done). After a fault the other queues may wait forever on a signal in it
// that the failed node will never set (tests/graph/replay.cpp, session 25).
inline void exec_graph::drain() noexcept {
  if (!s_) return;
  if (!s_->failed && try_wait_all(std::chrono::seconds(5))) return;
  const std::shared_ptr<const detail::exec_state> held(std::move(s_));
  for (const detail::exec_segment& sg : held->segs) {
    detail::with_queue(sg.q, [&](auto& q) { q.hold_until_done(held); });
  }
}

inline std::vector<std::size_t> exec_graph::replay_sizes() const {
  std::vector<std::size_t> v;
  for (const auto& sg : s_->segs)
    v.push_back(sg.q.type == queue_type::aql ? sg.slots[0].aql.size() : !sg.indirect()                ? sg.slots[0].cmds.size()
                  : sg.q.type == queue_type::pm4 ? sg.ib_submit[0].size()
                                                 : sg.ib_refs[0].size() * abi::sdma::indirect::dwords);
  return v;
}

// task_graph::instantiate
inline exec_graph instantiate(const task_graph& g, const instantiate_options& o = {}) { return exec_graph::instantiate(g, o); }
inline result<exec_graph> try_instantiate(const task_graph& g, const instantiate_options& o = {}) {
  return exec_graph::try_instantiate(g, o);
}

}  // namespace aqueduct::graph

#include <aqueduct/graph/exec_update.hpp>  // the update members (split for length)
