// aqueduct/graph/detail/eager_trace.hpp — the spans a traced eager run adds
// (sync_wait_options::trace): each queue operation's submit as a host span, and its execution
// as a span on its queue joined to the submit by a flow arrow; each host function as a host span.
//
// Layer: graph (not API). Where an execution span's times come from (docs/graph.md, "Traces"):
//   - an AQL dispatch: its completion signal's start_ts/end_ts, written by the packet processor.
//     The first traced operation on an AQL queue turns profiling on for the queue
//     (amd_queue_t.queue_properties, as a traced instantiate does); it stays on.
//   - a PM4 or SDMA operation: two timestamps the queue writes around it (PM4 RELEASE_MEM of the
//     GPU clock counter, SDMA TIMESTAMP), in
//     a 16-byte buffer of host memory allocated for the operation — as a traced replay brackets
//     its PM4 and SDMA nodes (graph/exec_trace.hpp). The start stamp is taken when the work
//     before it on the queue is done.
//   - an AQL barrier (or an operation whose stamp buffer or stamp could not be had) carries no
//     timestamps: its span is what the host saw, from the end of the submit to the moment the
//     reactor saw the completion — an upper bound of the device time, marked "clock":"host".
// Device stamps count the GPU's clock counter; they become steady_clock nanoseconds (sync::clock,
// the host spans' clock) through the agent's calibration (runtime/device_clock.hpp), which the
// first traced operation on a GPU starts.
// Thread safety: the run's reactor thread.
#pragma once

#include <aqueduct/abi/amd_queue.hpp>
#include <aqueduct/abi/amd_signal.hpp>
#include <aqueduct/core/clock.hpp>
#include <aqueduct/graph/trace.hpp>
#include <aqueduct/runtime/agent.hpp>
#include <aqueduct/runtime/memory.hpp>
#include <aqueduct/sync/atomics.hpp>
#include <aqueduct/sync/wait.hpp>

#include <atomic>
#include <cstdint>
#include <string>

namespace aqueduct::graph::detail {

// AQL kernels report start_ts/end_ts in their completion signal only on a queue with profiling
// enabled (amd_queue_t.queue_properties, as hsa_amd_profiling_set_profiler_enabled sets it).
inline void enable_profiling(abi::amd_queue& d) noexcept {
  const auto p = sync::atomic_load(d.queue_properties, std::memory_order_acquire);
  if (abi::amd_queue_properties::enable_profiling::get(p)) return;
  sync::atomic_store(d.queue_properties, abi::amd_queue_properties::enable_profiling::set(p, 1), std::memory_order_release);
}

// One traced operation between its submit and its completion.
struct traced_op {
  trace* out = nullptr;
  std::uint64_t flow = 0;          // the submit's host span
  std::uint64_t submitted_ns = 0;  // end of the submit
  std::string name;                // "dispatch of kernel 'k' at file.cpp:42"
  const char* category = "";
  std::uint32_t pid = 0, tid = 0;  // gpu_id, queue id + 1 (as replays: graph/exec_trace.hpp)
  // PM4 / SDMA: the two stamps the queue writes around the operation (GPU clock counter ticks).
  runtime::buffer<std::uint64_t> stamps;
  runtime::detail::agent_state* agent = nullptr;  // whose clock the stamps count
  // [begin, end] in ticks from `stamps`, if both were written.
  [[nodiscard]] bool stamped(std::uint64_t& begin, std::uint64_t& end) const noexcept {
    if (!stamps) return false;
    begin = sync::atomic_load(const_cast<std::uint64_t&>(stamps.data()[0]), std::memory_order_acquire);
    end = sync::atomic_load(const_cast<std::uint64_t&>(stamps.data()[1]), std::memory_order_acquire);
    return begin != 0 && end != 0;
  }
};

// The submit [t0, t1] of `name` on queue `queue_id` of GPU `gpu_id` (named `queue_name`).
[[nodiscard]] inline traced_op traced_submit(trace& out, std::string name, const char* category, std::uint64_t t0,
                                             std::uint64_t t1, std::uint32_t gpu_id, std::uint32_t queue_id,
                                             std::string queue_name) {
  traced_op op;
  op.out = &out;
  op.flow = out.host("submit: " + name, t0, t1);
  op.submitted_ns = t1;
  op.name = std::move(name);
  op.category = category;
  op.pid = gpu_id;
  op.tid = queue_id + 1;
  out.name_process(0, "host");
  out.name_process(gpu_id, "GPU gpu_id " + std::to_string(gpu_id));
  out.name_thread(gpu_id, op.tid, std::move(queue_name));
  return op;
}

// Its execution: [begin, end] from the device's stamps (`device_clock`: GPU clock counter ticks,
// translated through op.agent's calibration, the end first), else from the host's view
// (submitted → now). `failed`: the queue stopped on it.
inline void traced_finish(traced_op& op, std::uint64_t begin, std::uint64_t end, bool device_clock, bool failed) {
  trace::span s;
  s.name = op.name;
  s.category = op.category;
  s.pid = op.pid;
  s.tid = op.tid;
  bool on_device = false;  // both stamps translated through the agent's calibration
  if (device_clock && begin != 0 && end >= begin && op.agent != nullptr) {
    const runtime::agent gpu(*op.agent);
    if (auto e = gpu.try_device_to_host_ns(end))
      if (auto b = gpu.try_device_to_host_ns(begin)) {
        s.start_ns = *b;
        s.end_ns = *e;
        on_device = true;
      }
  }
  if (!on_device) {
    s.start_ns = op.submitted_ns;
    s.end_ns = steady_now_ns();
  }
  s.flow = op.flow;
  s.args = std::string("\"clock\":\"") + (on_device ? "device" : "host") + "\"" + (failed ? ",\"failed\":true" : "");
  op.out->device(std::move(s));
}

// An AQL packet's stamps from its completion signal, if they are still its own: the signal's
// value is the packet's completion value before and after the read (a reused slot changes it).
inline bool signal_stamps(const abi::amd_signal& sig, std::int64_t complete_value, std::uint64_t& begin, std::uint64_t& end) {
  auto& s = const_cast<abi::amd_signal&>(sig);
  if (sync::atomic_load(s.value, std::memory_order_acquire) != complete_value) return false;
  begin = sync::atomic_load(s.start_ts, std::memory_order_relaxed);
  end = sync::atomic_load(s.end_ts, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_acquire);
  return sync::atomic_load(s.value, std::memory_order_relaxed) == complete_value && begin != 0 && end != 0;
}

}  // namespace aqueduct::graph::detail
