// aqueduct/graph/detail/exec_state.hpp — what an exec_graph holds (not API), with the options
// and ticket types of its public interface (instantiate_options, replay_ticket), and the two
// helpers that work on it alone: a PM4 segment's lowering with its conditionals' body buffer,
// and the WHILE overflow check.
//
// Layer: graph. graph/exec_graph.hpp documents the memory layout: per replay slot, each queue
// segment's prebuilt packets, each kernel's kernargs, and the completion signals.
// Thread safety: owned by one exec_graph; one thread launches, updates and waits.
#pragma once

#include <aqueduct/abi/amd_signal.hpp>
#include <aqueduct/core/result.hpp>
#include <aqueduct/graph/detail/liveness.hpp>
#include <aqueduct/graph/detail/lower.hpp>
#include <aqueduct/graph/detail/plan.hpp>
#include <aqueduct/graph/detail/pool.hpp>
#include <aqueduct/graph/task_graph.hpp>
#include <aqueduct/kfd/events.hpp>
#include <aqueduct/kfd/memory.hpp>
#include <aqueduct/runtime/detail/state.hpp>
#include <aqueduct/runtime/pm4_queue.hpp>
#include <aqueduct/runtime/sdma_queue.hpp>
#include <aqueduct/sync/atomics.hpp>
#include <aqueduct/sync/wait.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace aqueduct::graph {

// How a replay reaches the queues (docs/graph.md "Replay modes").
//   ring_copy — every segment's prebuilt packets are copied into its ring at each replay;
//   indirect  — a PM4 or SDMA segment's packets stay in graph-owned memory (one buffer per slot)
//               and a replay writes one indirect packet per queue (PM4 INDIRECT_BUFFER, 4 dwords;
//               SDMA INDIRECT, 6 dwords after up to 7 NOPs; one more per 2^20 - 8 dwords of
//               segment) plus the queue's completion, whatever the node count. AQL segments (AQL
//               has no indirect packet) are ring-copied in both modes (graph/detail/indirect.hpp).
enum class replay_mode : std::uint8_t { ring_copy, indirect };

struct instantiate_options {
  std::uint32_t replay_slots = 4;  // prebuilt copies: at most replay_slots - 1 replays in flight
  sync::wait_policy wait{};        // how try_wait waits
  bool trace = false;              // device timestamps per node, for try_trace_replay (graph/exec_trace.hpp)
  replay_mode mode = replay_mode::ring_copy;
};

// What the last exec_graph::try_update did (exec_graph::last_update): docs/graph.md "Updates".
struct update_report {
  bool topology_changed = false;  // the new graph's nodes, queues or edges differ
  bool reinstantiated = false;    // the whole graph was instantiated anew (reason: why it had to be)
  std::string reason;
  std::vector<bool> relowered;    // per segment: its packets are lowered anew (each slot when next used)
  std::uint32_t kept = 0;         // nodes of the previous graph kept (their kernargs, signals and tags)
  std::uint32_t added = 0;        // nodes that are new
  std::uint32_t removed = 0;      // nodes of the previous graph that are gone
  // Per node id of the previous top-level graph: its id in the new one (empty where it was removed,
  // or where the graph was re-instantiated).
  std::vector<node_id> moved;
};

// One replay of an exec_graph (its sequence number).
struct replay_ticket {
  std::uint64_t sequence = ~std::uint64_t{0};
  [[nodiscard]] explicit operator bool() const noexcept { return sequence != ~std::uint64_t{0}; }
};

namespace detail {

using file_type = runtime::detail::file_type;

// Kernargs of one agent's kernel nodes: one region of slot_bytes per slot. A topology update adds
// a second block for the same agent when the new nodes do not fit in the room left after `used`.
struct agent_memory {
  runtime::detail::agent_state* agent = nullptr;
  kfd::buffer<file_type> kernargs;  // slots * slot_bytes
  std::uint64_t slot_bytes = 0;
  std::uint64_t used = 0;           // bytes of each slot region given to nodes
};

struct exec_segment {
  queue_binding q;
  std::vector<segment_commands> slots;
  std::vector<std::uint64_t> submitted_at;  // per slot: where its last replay started (AQL packet index, PM4 dword, SDMA byte)
  // Per slot: the queue's ticket for its last replay's submission (PM4 or SDMA; AQL has none). A
  // replay is seen finished by its done signal, which the queue writes before the end of that
  // submission (SDMA: a 64-bit value is two FENCEs, low dword first, then the graph event's FENCE
  // and TRAP; PM4 and SDMA: then the queue's own completion). So the slot's memory (signals,
  // indirect buffers, flag words) is freed or written again only once the queue has passed this
  // ticket (exec_graph::try_retire): else those last packets write freed memory — a memory
  // violation that stops the queue — or run from a rewritten indirect buffer.
  std::vector<runtime::pm4_ticket> pm4_end;
  std::vector<runtime::sdma_ticket> sdma_end;
  // Indirect mode (PM4, SDMA): per slot, the segment's packets in memory the engine reads, and what
  // a replay submits: PM4 the INDIRECT_BUFFER packets, SDMA the buffers (graph/detail/indirect.hpp).
  std::vector<kfd::buffer<file_type>> ib;
  std::vector<runtime::command_buffer> ib_submit;
  std::vector<std::vector<runtime::indirect_buffer_ref>> ib_refs;
  kfd::buffer<file_type> cursor;  // per slot: the node + 1 the segment last started (0: none yet)
  // Conditionals: per slot, the flag words (loop_flag_bytes: WHILE overflow words; SDMA also each
  // conditional's "word != 0"), then (PM4) the bodies' IBs.
  std::vector<kfd::buffer<file_type>> body;
  std::uint64_t loop_flag_bytes = 0;
  std::uint64_t lowerings = 0;  // (segment, slot) lowerings so far: what an update re-lowered shows here
  [[nodiscard]] bool indirect() const noexcept { return !ib.empty(); }
};

enum class update_kind : std::uint8_t { args, relower };

struct exec_state {
  runtime::detail::keep_alive keep;  // declared first: released last
  task_graph graph;
  plan p;
  instantiate_options opt;
  std::vector<std::uint32_t> node_agent;      // per flat node: index in agents (kernel nodes)
  std::vector<std::uint64_t> kernarg_offset;  // per flat node, within its agent's slot region
  std::vector<bool> host_waited;              // per flat node: a host node waits for its signal
  std::vector<agent_memory> agents;
  std::vector<exec_segment> segs;
  memory_plan mem;                            // graph memory: its allocations and pools (detail/pool.hpp)
  std::vector<std::byte> args_before;         // graph memory: a kernel's arguments while an update is checked
  buffer_uses buffers;                        // the runtime buffers each node uses, checked before a replay (detail/liveness.hpp)
  kfd::buffer<file_type> signals;             // slots * signals_per_slot amd_signals
  // Per slot: p.node_signals node signals, one done signal per segment, then spare node signals a
  // topology update may give to new cross-queue edges; [0, signals_live) are reset per replay.
  std::uint32_t signals_per_slot = 0;
  std::uint32_t signals_live = 0;
  std::vector<bool> signals_dirty;            // per slot: node signals' mailboxes to set again (an update moved them)
  std::vector<std::uint32_t> flat_of_tag;     // planned_node::tag -> flat node (no_index: removed by an update)
  update_report last_update;
  kfd::event<file_type> event;                // mailbox of the signals the host waits for
  runtime::detail::driver_ref driver{};
  runtime::detail::device_faults* faults = nullptr;  // the system's (a wait records what its memory event says)
  std::uint64_t launched = 0;                 // replays launched
  std::vector<std::uint64_t> slot_replay;     // per slot: the replay that last used it + 1 (0: none)
  std::vector<std::uint32_t> log;             // flat nodes updated, in order
  std::vector<std::size_t> slot_log;          // per slot: how much of the log it has applied
  std::uint64_t log_base = 0;                 // absolute position of log[0] (entries dropped so far)
  std::vector<std::uint64_t> last_logged;     // per flat node: its last absolute log position, or ~0
  kfd::buffer<file_type> stamps;              // trace mode: slots * nodes * 2 timestamps (ns)
  std::vector<std::uint64_t> launch_start, launch_end;  // trace mode: per slot, the host launch span
  // What the last launch went through: kernarg blocks written, segments, signals and flag words
  // reset, packets (AQL) or dwords (PM4, SDMA) submitted. Independent of the node count in
  // indirect mode when no update is pending (tests/graph/indirect.cpp); sums of loop bounds, not a
  // count kept per item.
  std::uint64_t launch_items = 0;
  std::optional<failure> failed;

  exec_state() = default;
  exec_state(const exec_state&) = delete;
  exec_state& operator=(const exec_state&) = delete;
  // Runs once no queue can still read this graph's memory (exec_graph::drain waited, or the
  // queues held this state until they were done): the kernarg, signal and stamp memory goes back
  // to its GPU for the next instantiation there (runtime/detail/buffer_cache.hpp). A graph whose
  // replay failed frees it (its queues may have stopped with it in any state).
  ~exec_state() {
    if (failed) return;
    for (agent_memory& a : agents)
      if (a.agent) a.agent->kept.give(std::move(a.kernargs));
    if (!agents.empty() && agents.front().agent) {
      agents.front().agent->kept.give(std::move(signals));
      agents.front().agent->kept.give(std::move(stamps));
    }
  }

  [[nodiscard]] abi::amd_signal* signal(std::uint32_t slot, std::uint32_t i) const noexcept {
    return static_cast<abi::amd_signal*>(signals.host()) + std::uint64_t{slot} * signals_per_slot + i;
  }
  [[nodiscard]] gpu_va signal_va(std::uint32_t slot, std::uint32_t i) const noexcept {
    return signals.va() + byte_count((std::uint64_t{slot} * signals_per_slot + i) * sizeof(abi::amd_signal));
  }
  [[nodiscard]] std::uint32_t slots() const noexcept { return opt.replay_slots; }
};

// Where the sizing pass of lower_pm4_segment pretends the body buffer is (any non-null,
// page-aligned address: only the packets' sizes are kept from that pass).
inline constexpr std::uint64_t sizing_va = 0x1000;

// A PM4 segment's packets for one slot (graph/detail/lower.hpp). With conditionals, their bodies
// go to the slot's body buffer, whose address the packets hold: lowered once to learn the size,
// again if the buffer had to grow ((re)allocated only while the slot is idle).
inline void lower_pm4_segment(const plan& p, slot_view v, exec_segment& sg, std::uint32_t slot, const std::vector<bool>& host_waited,
                              std::uint32_t seg, const runtime::pm4_queue& q) {
  segment_commands& out = sg.slots[slot];
  if (sg.body.empty()) {
    pm4_lowering(p, v, out, host_waited).lower(seg, q);
    return;
  }
  kfd::buffer<file_type>& b = sg.body[slot];
  for (int pass = 0; pass < 2; ++pass) {
    // Before the buffer exists the sizing pass lowers against a stand-in address: the packets that
    // name a flag word or a body must be encoded all the same (a RELEASE_MEM to address 0 encodes
    // to nothing, which undercounted each WHILE's overflow body).
    const gpu_va base = b ? b.va() : gpu_va{sizing_va};
    v.loop_flags = base;
    v.body_base = base + byte_count(sg.loop_flag_bytes);
    pm4_lowering(p, v, out, host_waited).lower(seg, q);
    const std::uint64_t need = sg.loop_flag_bytes + 4ull * out.body.size();
    if (b && b.size().value >= need) break;
    const runtime::detail::agent_state& a = *sg.q.agent;
    auto fresh = kfd::buffer<file_type>::try_allocate(a.sys->ref(), *a.node, byte_count(std::max<std::uint64_t>(2 * need, 4096)),
                                                      kfd::memory_use::host);
    if (!fresh) throw_failure(std::move(fresh).get_failure());
    b = std::move(*fresh);
    std::memset(b.host(), 0, sg.loop_flag_bytes);
  }
  std::memcpy(static_cast<std::byte*>(b.host()) + sg.loop_flag_bytes, out.body.dwords().data(), 4 * out.body.size());
}

// An SDMA segment's flag words for one slot (loop_flag_bytes: its conditionals' "word != 0" words
// and WHILE overflow words; no bodies, which run in place), allocated zeroed while the slot is idle.
inline gpu_va flag_memory(exec_segment& sg, std::uint32_t slot) {
  kfd::buffer<file_type>& b = sg.body[slot];
  if (!b) {
    const runtime::detail::agent_state& a = *sg.q.agent;
    auto fresh = kfd::buffer<file_type>::try_allocate(a.sys->ref(), *a.node, byte_count(std::max<std::uint64_t>(sg.loop_flag_bytes, 4096)),
                                                      kfd::memory_use::host);
    if (!fresh) throw_failure(std::move(fresh).get_failure());
    b = std::move(*fresh);
    std::memset(b.host(), 0, sg.loop_flag_bytes);
  }
  return b.va();
}

// A WHILE of replay `t` whose condition still held after max_iterations (its overflow word set
// by the device), named; none if the slot was reused since (reported then).
[[nodiscard]] inline std::optional<failure> loop_overflow(const exec_state& s, replay_ticket t) {
  const auto slot = static_cast<std::uint32_t>(t.sequence % s.slots());
  if (s.slot_replay[slot] != t.sequence + 1) return std::nullopt;
  for (std::uint32_t i : s.p.loops) {
    const planned_node& pn = s.p.placed[i];
    const auto* w = static_cast<const std::uint64_t*>(s.segs[pn.segment].body[slot].host()) + pn.loop_flag;
    if (sync::atomic_load(*w, std::memory_order_acquire) != 0)
      return failure(errc::cancelled, "graph replay " + std::to_string(t.sequence) + ": " + s.p.nodes[i].describe() +
                                          " still had a non-zero condition after max_iterations (" +
                                          std::to_string(s.p.nodes[i].max_iterations) +
                                          "); the loop was cut off there (raise max_iterations, or check the body clears the word)");
  }
  return std::nullopt;
}

}  // namespace detail

}  // namespace aqueduct::graph
