// aqueduct/graph/exec_trace.hpp — `try_trace_replay(exec, ticket, trace)`: one finished replay of
// an exec_graph instantiated with instantiate_options::trace, as spans of a `trace` (Chrome
// trace JSON, graph/trace.hpp).
//
// Layer: graph. The host span is the launch (try_launch's start and end, steady_clock); each
// node's device span comes from the device: an AQL kernel's completion signal start_ts/end_ts
// (the packet processor writes them on a queue with profiling enabled, which instantiate turns on),
// PM4 RELEASE_MEM timestamps and SDMA TIMESTAMP packets around the node. All of them count the
// GPU's clock counter; each is translated to the host's steady_clock through its agent's
// calibration (runtime/device_clock.hpp: the first sample taken at instantiation, a later one
// whenever a stamp is past the latest), so device spans line up with the host's on a real GPU as
// on the emulated one (whose counter has an epoch of its own: docs/emulator.md "Clocks").
// Thread safety: as the exec_graph's const members (the launching thread).
#pragma once

#include <aqueduct/abi/amd_signal.hpp>
#include <aqueduct/core/result.hpp>
#include <aqueduct/graph/exec_graph.hpp>
#include <aqueduct/graph/trace.hpp>
#include <aqueduct/runtime/agent.hpp>
#include <aqueduct/sync/atomics.hpp>

#include <cstdint>
#include <string>

namespace aqueduct::graph {

// Adds replay `t` (finished, and its slot not reused since) to `out`: the host launch span and
// every node's device span, joined by flow arrows.
[[nodiscard]] inline result<void> try_trace_replay(const exec_graph& exec, replay_ticket t, trace& out) {
  if (!exec || !exec.state().opt.trace) return failure(errc::invalid_argument, "instantiate with instantiate_options::trace to trace replays");
  const detail::exec_state& s = exec.state();
  if (!t || t.sequence >= s.launched) return failure(errc::invalid_argument, "not a replay of this exec_graph");
  const auto slot = static_cast<std::uint32_t>(t.sequence % s.slots());
  if (s.slot_replay[slot] != t.sequence + 1) return failure(errc::not_found, "replay " + std::to_string(t.sequence) + "'s slot was reused since");
  if (!exec.done(t)) return failure(errc::busy, "replay " + std::to_string(t.sequence) + " has not finished");
  const std::uint64_t flow = out.host("launch of replay " + std::to_string(t.sequence), s.launch_start[slot], s.launch_end[slot]);
  out.name_process(0, "host");
  const auto* stamps = static_cast<const std::uint64_t*>(s.stamps.host());
  for (std::uint32_t n = 0; n < s.p.nodes.size(); ++n) {
    const node& x = s.p.nodes[n];
    if (x.queue.type == queue_type::none) continue;
    std::uint64_t b = 0, e = 0;
    if (x.queue.type == queue_type::aql) {
      if (s.p.placed[n].signal == detail::no_index) continue;
      const abi::amd_signal& sig = *s.signal(slot, s.p.placed[n].signal);
      b = sync::atomic_load(const_cast<std::uint64_t&>(sig.start_ts), std::memory_order_acquire);
      e = sync::atomic_load(const_cast<std::uint64_t&>(sig.end_ts), std::memory_order_acquire);
    } else {
      const std::uint64_t* p = stamps + (std::uint64_t{slot} * s.p.nodes.size() + n) * 2;
      b = sync::atomic_load(const_cast<std::uint64_t&>(p[0]), std::memory_order_acquire);
      e = sync::atomic_load(const_cast<std::uint64_t&>(p[1]), std::memory_order_acquire);
    }
    if (!b || !e) continue;
    // GPU clock counter ticks to host ns, the end first (ROCr's order: a new sample taken for the
    // end serves the start too).
    const runtime::agent gpu(*x.queue.agent);
    AQUEDUCT_TRY(e, gpu.try_device_to_host_ns(e));
    AQUEDUCT_TRY(b, gpu.try_device_to_host_ns(b));
    trace::span sp;
    sp.name = x.kind == node_kind::kernel ? x.kernel.name : detail::kind_name(x);
    if (!x.label.empty()) sp.name += " \"" + x.label + "\"";
    sp.category = to_string(x.kind);
    sp.pid = x.queue.gpu_id;
    sp.tid = x.queue.queue_id + 1;
    sp.start_ns = b;
    sp.end_ns = e;
    sp.flow = flow;
    sp.args = "\"node\":" + std::to_string(n) + ",\"replay\":" + std::to_string(t.sequence) +
              (!x.location().empty() ? ",\"at\":\"" + x.location() + "\"" : std::string());
    out.device(std::move(sp));
    out.name_process(x.queue.gpu_id, "GPU gpu_id " + std::to_string(x.queue.gpu_id));
    out.name_thread(x.queue.gpu_id, x.queue.queue_id + 1, detail::queue_name(x.queue));
  }
  return ok();
}

}  // namespace aqueduct::graph
