// aqueduct/graph/detail/lower.hpp — the second half of instantiation (not API): the packets of
// one queue segment for one replay slot, prebuilt so that a replay only copies them.
//
// Layer: graph. Per segment and slot (docs/graph.md "Lowering"):
//   start  — if the graph spans several queues, wait for every segment's end of the previous
//            replay (so replays of one graph never overlap, as launches of one CUDA graph on one
//            stream); with one queue its own order does it (AQL: the barrier bit);
//   nodes  — before each node, a wait for each completion signal it needs from another queue,
//            engine, GPU or the host (AQL barrier-AND / AMD barrier-value, PM4 WAIT_REG_MEM, SDMA
//            POLL_REGMEM); the node's packets; its completion signal if it has one (AQL: the
//            packet's completion signal, decremented 1 -> 0; PM4: RELEASE_MEM of 0; SDMA: FENCE
//            of 0);
//   end    — the segment's done signal (AQL barrier-AND with the barrier bit, PM4 RELEASE_MEM,
//            SDMA FENCE), with the graph's KFD event in its mailbox so host waits sleep.
// The host resets a slot's signals to 1 before each replay that uses it.
// Thread safety: called with the exec_graph's state, by one thread.
#pragma once

#include <aqueduct/abi/aql.hpp>
#include <aqueduct/abi/pm4.hpp>
#include <aqueduct/abi/sdma.hpp>
#include <aqueduct/core/result.hpp>
#include <aqueduct/graph/detail/plan.hpp>
#include <aqueduct/graph/detail/shader_op.hpp>
#include <aqueduct/queue/aql_packets.hpp>
#include <aqueduct/runtime/commands.hpp>
#include <aqueduct/runtime/pm4_queue.hpp>
#include <aqueduct/runtime/queue.hpp>
#include <aqueduct/runtime/sdma_queue.hpp>

#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

namespace aqueduct::graph::detail {

// Where one slot's memory is, as the lowering needs it.
struct slot_view {
  std::uint32_t slot = 0;
  std::uint32_t prev_slot = 0;
  // GPU address of signal `i` of slot `s` (node signals first, then one done signal per segment).
  gpu_va (*signal_va)(const void* ctx, std::uint32_t s, std::uint32_t i) = nullptr;
  const void* ctx = nullptr;
  std::uint32_t node_signals = 0;
  std::uint32_t segments = 0;
  // A kernel node's kernarg address in this slot (and, after kernarg_bytes, its 64-byte dispatch
  // packet for PM4).
  gpu_va (*kernarg_va)(const void* ctx, std::uint32_t s, std::uint32_t node) = nullptr;
  gpu_va event_mailbox{};
  std::uint32_t event_id = 0;
  // Trace mode: where node `n`'s start (0) and end (1) timestamps go in this slot; null: no trace.
  gpu_va (*trace_va)(const void* ctx, std::uint32_t s, std::uint32_t node, std::uint32_t which) = nullptr;
  [[nodiscard]] bool tracing() const noexcept { return trace_va != nullptr; }
  // Indirect mode (PM4, SDMA): a 64-bit word the segment sets to the node's tag + 1 before its
  // packets (PM4 RELEASE_MEM, once the work before it completed; SDMA two FENCEs), so a fault
  // inside the indirect buffer still names its node; empty: none.
  gpu_va cursor{};
  // PM4 conditionals (graph/control.hpp): where segment_commands::body will be in GPU memory, and
  // this slot's WHILE overflow words of the segment (8 bytes each).
  gpu_va body_base{};
  gpu_va loop_flags{};
  [[nodiscard]] gpu_va stamp(std::uint32_t node, std::uint32_t which) const { return trace_va(ctx, slot, node, which); }
  [[nodiscard]] gpu_va signal(std::uint32_t i) const { return signal_va(ctx, slot, i); }
  [[nodiscard]] gpu_va prev_done(std::uint32_t seg) const { return signal_va(ctx, prev_slot, node_signals + seg); }
  [[nodiscard]] gpu_va done(std::uint32_t seg) const { return signal_va(ctx, slot, node_signals + seg); }
  [[nodiscard]] gpu_va kernargs(std::uint32_t node) const { return kernarg_va(ctx, slot, node); }
};

// The packets of one segment in one slot.
struct segment_commands {
  std::vector<abi::aql_slot> aql;           // AQL queues
  std::vector<std::uint32_t> aql_node;      // per AQL packet: its node (no_index: a wait or the end)
  runtime::command_buffer cmds;             // PM4 and SDMA queues
  std::vector<std::uint32_t> cmd_node;      // per packet of cmds: its node (no_index: glue)
  runtime::command_buffer body;             // PM4: the conditionals' bodies (indirect buffers at slot_view::body_base)
  bool stale = true;                        // re-lower before the next replay in this slot
};

inline constexpr std::size_t value_offset = offsetof(abi::amd_signal, value);

// PM4 INDIRECT_BUFFER (compute: VALID set; abi/pm4.hpp, spec packets.md): the CP runs `dwords`
// dwords at `ib` (dword aligned, mapped to the queue's GPU), then returns to the ring. The packet
// is the same on every PM4 target, so the graph encodes it itself (indirect replay mode).
inline constexpr std::uint32_t max_indirect_dwords = (1u << 20) - 1;  // IB_SIZE is 20 bits
inline void encode_indirect_buffer(runtime::command_buffer& out, gpu_va ib, std::uint32_t dwords) {
  namespace i = abi::pm4::indirect_buffer;
  AQUEDUCT_ASSERT(ib.aligned(4) && dwords >= 1 && dwords <= max_indirect_dwords, "INDIRECT_BUFFER base or size");
  const auto p = out.append(sizeof(i::packet) / 4);
  p[0] = abi::pm4::type3_header(abi::pm4::opcode::indirect_buffer, sizeof(i::packet) / 4 - 1);
  p[1] = ib.lo();
  p[2] = ib.hi();
  p[3] = i::ib_size::put(dwords) | i::valid::put(1);
}

// PM4 COND_INDIRECT_BUFFER (abi/pm4.hpp; spec packets.md, docs/pm4.md "Device-evaluated control
// flow"): if `(*compare & ~0) f reference` (64-bit, `compare` 8-byte aligned) the CP runs `then`,
// else `otherwise` when it has dwords (IF_THEN_ELSE; IF_THEN without). Target-independent.
struct ib_ref {
  gpu_va address{};
  std::uint32_t dwords = 0;
};
inline void encode_cond_indirect_buffer(runtime::command_buffer& out, gpu_va compare, std::uint64_t reference,
                                        abi::pm4::wait_reg_mem::compare_function f, ib_ref then, ib_ref otherwise = {}) {
  namespace c = abi::pm4::cond_indirect_buffer;
  AQUEDUCT_ASSERT(compare.aligned(8) && then.dwords >= 1 && then.dwords <= max_indirect_dwords && otherwise.dwords <= max_indirect_dwords,
                  "COND_INDIRECT_BUFFER compare address or IB size");
  const auto p = out.append(c::dwords);
  const bool two = otherwise.dwords != 0;
  p[0] = abi::pm4::type3_header(abi::pm4::opcode::indirect_buffer, c::dwords - 1);
  p[1] = c::mode::put(static_cast<std::uint32_t>(two ? c::mode_value::if_then_else : c::mode_value::if_then)) |
         c::function::put(static_cast<std::uint32_t>(f));
  p[2] = compare.lo();
  p[3] = compare.hi();
  p[4] = p[5] = ~0u;  // mask: the whole word
  p[6] = lo32(reference);
  p[7] = hi32(reference);
  p[8] = then.address.lo();
  p[9] = then.address.hi();
  p[10] = c::ib_size::put(then.dwords);
  p[11] = otherwise.address.lo();
  p[12] = otherwise.address.hi();
  p[13] = c::ib_size::put(otherwise.dwords);
}

[[nodiscard]] inline abi::aql_slot to_slot(const auto& packet) noexcept {
  static_assert(sizeof(packet) == sizeof(abi::aql_slot));
  abi::aql_slot s;
  std::memcpy(&s, &packet, sizeof s);
  return s;
}

[[nodiscard]] inline abi::pm4::wait_reg_mem::compare_function pm4_function(abi::signal_condition c) noexcept {
  using f = abi::pm4::wait_reg_mem::compare_function;
  switch (c) {
    case abi::signal_condition::eq: return f::equal;
    case abi::signal_condition::ne: return f::not_equal;
    case abi::signal_condition::lt: return f::less;
    case abi::signal_condition::gte: return f::greater_equal;
  }
  return f::equal;
}
[[nodiscard]] inline abi::sdma::poll_regmem::function sdma_function(abi::signal_condition c) noexcept {
  using f = abi::sdma::poll_regmem::function;
  switch (c) {
    case abi::signal_condition::eq: return f::equal;
    case abi::signal_condition::ne: return f::not_equal;
    case abi::signal_condition::lt: return f::less;
    case abi::signal_condition::gte: return f::greater_equal;
  }
  return f::equal;
}

// AQL -------------------------------------------------------------------------------------------
class aql_lowering {
 public:
  aql_lowering(const plan& p, const slot_view& v, segment_commands& out) noexcept : p_(p), v_(v), out_(out) {}

  void lower(std::uint32_t seg) {
    out_.aql.clear();
    out_.aql_node.clear();
    const auto& order = p_.order[seg];
    // One packet per node, a barrier before the first and after the last; a node's waits add one
    // more (grown then, rarely).
    out_.aql.reserve(order.size() + 2);
    out_.aql_node.reserve(order.size() + 2);
    bool first_barrier = false;
    if (v_.segments > 1) {
      std::vector<std::uint64_t> prev;
      for (std::uint32_t s = 0; s < v_.segments; ++s) prev.push_back(v_.prev_done(s).value);
      barrier_and(prev, true, no_index);
    } else {
      first_barrier = true;  // its own order: the first packet waits for the previous replay's
    }
    for (std::uint32_t n : order) {
      const planned_node& pn = p_.placed[n];
      const node& x = p_.nodes[n];
      std::vector<std::uint64_t> deps;
      for (std::uint32_t w : pn.waits) deps.push_back(v_.signal(p_.placed[w].signal).value);
      const bool waited = !deps.empty() || !pn.external.empty();
      if (!deps.empty()) barrier_and(deps, false, n);
      for (const external_wait& e : pn.external) {
        aqueduct::ring::barrier_value b;
        b.signal = e.signal.handle();
        b.cond = e.cond;
        b.value = e.value;
        out_.aql.push_back(to_slot(aqueduct::ring::make_packet(b)));
        out_.aql_node.push_back(n);
      }
      const std::uint64_t completion = pn.signal != no_index ? v_.signal(pn.signal).value : 0;
      const bool barrier = pn.same_queue_dep || waited || first_barrier;
      first_barrier = false;
      if (x.kind == node_kind::kernel && x.counts)
        throw_failure(failure(errc::not_supported, x.describe() + ": an indirect kernel runs on a PM4 queue (DISPATCH_INDIRECT)"));
      if (dispatches(x) && x.enabled) {
        const runtime::grid g = launch_grid(x);
        const runtime::block b = launch_block(x);
        aqueduct::ring::kernel_dispatch d;
        d.kernel_object = x.kernel.object;
        d.kernarg_address = v_.kernargs(n);
        d.grid = {g.x, g.y, g.z};
        d.workgroup = {b.x, b.y, b.z};
        d.segments = {x.kernel.group_segment_size, x.kernel.private_segment_size};
        d.completion_signal = completion;
        d.barrier = barrier;
        out_.aql.push_back(to_slot(aqueduct::ring::make_packet(d)));
      } else if (dispatches(x)) {  // disabled: a no-op that keeps its place and signal
        aqueduct::ring::barrier_and b;
        b.barrier = barrier;
        b.completion_signal = completion;
        out_.aql.push_back(to_slot(aqueduct::ring::make_packet(b)));
      } else {
        throw_failure(failure(errc::not_supported, x.describe() + ": an AQL queue runs kernels, copies and fills (shader copies) "
                                                                  "only (record signals and timestamps on an SDMA or PM4 queue)"));
      }
      out_.aql_node.push_back(n);
    }
    aqueduct::ring::barrier_and end;
    end.barrier = true;
    end.completion_signal = v_.done(seg).value;
    out_.aql.push_back(to_slot(aqueduct::ring::make_packet(end)));
    out_.aql_node.push_back(no_index);
    out_.stale = false;
  }

 private:
  void barrier_and(const std::vector<std::uint64_t>& sigs, bool barrier, std::uint32_t node) {
    for (std::size_t i = 0; i < sigs.size(); i += 5) {
      aqueduct::ring::barrier_and b;
      for (std::size_t j = 0; j < 5 && i + j < sigs.size(); ++j) b.deps[j] = sigs[i + j];
      b.barrier = barrier && i == 0;
      out_.aql.push_back(to_slot(aqueduct::ring::make_packet(b)));
      out_.aql_node.push_back(node);
    }
  }
  const plan& p_;
  const slot_view& v_;
  segment_commands& out_;
};

// PM4 -------------------------------------------------------------------------------------------
class pm4_lowering {
 public:
  pm4_lowering(const plan& p, const slot_view& v, segment_commands& out, const std::vector<bool>& host_waited) noexcept
      : p_(p), v_(v), out_(out), host_waited_(host_waited) {}

  void lower(std::uint32_t seg, const runtime::pm4_queue& q) {
    out_.cmds.clear();
    out_.cmd_node.clear();
    out_.body.clear();
    const auto mark = [&](std::uint32_t n) {
      while (out_.cmd_node.size() < out_.cmds.packets()) out_.cmd_node.push_back(n);
    };
    using f = abi::pm4::wait_reg_mem::compare_function;
    if (v_.segments > 1)
      for (std::uint32_t s = 0; s < v_.segments; ++s) q.encode_wait(out_.cmds, v_.prev_done(s) + byte_count(value_offset), 0, ~0u, f::equal);
    mark(no_index);
    for (std::uint32_t n : p_.order[seg]) {
      const planned_node& pn = p_.placed[n];
      const node& x = p_.nodes[n];
      for (std::uint32_t w : pn.waits) q.encode_wait(out_.cmds, v_.signal(p_.placed[w].signal) + byte_count(value_offset), 0, ~0u, f::equal);
      for (const external_wait& e : pn.external)
        q.encode_wait(out_.cmds, gpu_va(e.signal.handle() + value_offset), static_cast<std::uint32_t>(e.value), ~0u, pm4_function(e.cond));
      if (v_.cursor) q.encode_release(out_.cmds, v_.cursor, pn.tag + 1);
      if (v_.tracing()) q.encode_timestamp(out_.cmds, v_.stamp(n, 0));
      switch (x.kind) {
        case node_kind::kernel:
        case node_kind::copy:  // the shader copy
        case node_kind::fill:
          if (x.enabled) encode_kernel(out_.cmds, x, n, q);
          break;
        case node_kind::signal_record: {
          if (!x.enabled) break;
          const abi::amd_signal& s = *x.signal.get();
          q.encode_release(out_.cmds, gpu_va(x.signal.handle() + value_offset), static_cast<std::uint64_t>(x.value),
                           gpu_va(s.event_mailbox_ptr), s.event_id);
          break;
        }
        case node_kind::timestamp:
          if (x.enabled) q.encode_timestamp(out_.cmds, x.dst);
          break;
        case node_kind::conditional:
          if (x.enabled) encode_conditional(out_.cmds, n, q);
          break;
        default:
          throw_failure(failure(errc::not_supported, x.describe() + ": a PM4 queue runs kernels, shader copies and fills, signal "
                                                                    "records, timestamps and conditionals"));
      }
      if (v_.tracing()) q.encode_timestamp(out_.cmds, v_.stamp(n, 1));
      if (pn.signal != no_index)
        q.encode_release(out_.cmds, v_.signal(pn.signal) + byte_count(value_offset), 0,
                         host_waited_[n] ? v_.event_mailbox : gpu_va{}, host_waited_[n] ? v_.event_id : 0);
      mark(n);
    }
    q.encode_release(out_.cmds, v_.done(seg) + byte_count(value_offset), 0, v_.event_mailbox, v_.event_id);
    mark(no_index);
    out_.stale = false;
  }

  // A kernel node's dispatch: direct, or (counts set) indirect; a shader copy's or fill's, direct.
  void encode_kernel(runtime::command_buffer& out, const node& x, std::uint32_t n, const runtime::pm4_queue& q) const {
    const gpu_va args = v_.kernargs(n);
    const gpu_va packet = args + byte_count(kernarg_bytes(x));
    if (x.counts)
      q.encode_dispatch_indirect(out, x.kernel, x.counts, x.block, args, packet);
    else
      q.encode_dispatch(out, x.kernel, launch_grid(x), launch_block(x), args, packet);
  }
  // Bytes of a kernel node's kernarg block (its dispatch packet follows, 64-byte aligned).
  [[nodiscard]] static std::uint64_t kernarg_bytes(const node& x) noexcept {
    return (std::uint64_t{x.kernel.kernarg_size} + 63) / 64 * 64;
  }

 private:
  // A conditional node `n` (graph/control.hpp): its bodies into out_.body (indirect buffers),
  // then the COND_INDIRECT_BUFFER packets that choose among them into `at`:
  //   IF       one packet, word != 0 -> body 0;      IF-ELSE  one packet, != 0 -> body 0, else body 1;
  //   SWITCH   one packet per case k, word == k -> body k;
  //   WHILE    max_iterations packets, each word != 0 -> body 0 (the body clears the word to stop),
  //            then one more, != 0 -> an IB that sets the loop's overflow word (reported by the wait).
  void encode_conditional(runtime::command_buffer& at, std::uint32_t n, const runtime::pm4_queue& q) {
    using f = abi::pm4::wait_reg_mem::compare_function;
    const node& x = p_.nodes[n];
    const planned_node& pn = p_.placed[n];
    std::vector<ib_ref> bodies;
    for (const auto& b : pn.branches) bodies.push_back(lower_body(b, q));
    switch (x.condition) {
      case condition_kind::if_then: encode_cond_indirect_buffer(at, x.dst, 0, f::not_equal, bodies[0]); break;
      case condition_kind::if_then_else: encode_cond_indirect_buffer(at, x.dst, 0, f::not_equal, bodies[0], bodies[1]); break;
      case condition_kind::switch_on:
        for (std::uint32_t k = 0; k < bodies.size(); ++k) encode_cond_indirect_buffer(at, x.dst, k, f::equal, bodies[k]);
        break;
      case condition_kind::while_loop: {
        for (std::uint32_t i = 0; i < x.max_iterations; ++i) encode_cond_indirect_buffer(at, x.dst, 0, f::not_equal, bodies[0]);
        runtime::command_buffer over;
        q.encode_release(over, v_.loop_flags + byte_count(8ull * pn.loop_flag), 1);
        encode_cond_indirect_buffer(at, x.dst, 0, f::not_equal, place_body(over));
        break;
      }
    }
  }
  // One body: its nodes' packets, in order (nested conditionals' bodies go to out_.body first).
  ib_ref lower_body(const std::vector<std::uint32_t>& nodes, const runtime::pm4_queue& q) {
    runtime::command_buffer b;
    for (std::uint32_t m : nodes) {
      const node& y = p_.nodes[m];
      if (!y.enabled) continue;
      switch (y.kind) {
        case node_kind::kernel:
        case node_kind::copy:  // the shader copy
        case node_kind::fill: encode_kernel(b, y, m, q); break;
        case node_kind::timestamp: q.encode_timestamp(b, y.dst); break;
        case node_kind::signal_record: {
          const abi::amd_signal& s = *y.signal.get();
          q.encode_release(b, gpu_va(y.signal.handle() + value_offset), static_cast<std::uint64_t>(y.value), gpu_va(s.event_mailbox_ptr),
                           s.event_id);
          break;
        }
        case node_kind::conditional: encode_conditional(b, m, q); break;
        default: break;  // refused by make_plan (place_in_body)
      }
    }
    if (b.empty()) {  // an empty body: one NOP (an IB has at least one dword)
      const auto nop = b.append(2);
      nop[0] = abi::pm4::type3_header(abi::pm4::opcode::nop, 1);
      nop[1] = 0;
    }
    return place_body(b);
  }
  ib_ref place_body(const runtime::command_buffer& b) {
    if (b.size() > max_indirect_dwords)
      throw_failure(failure(errc::not_supported, "a conditional body of " + std::to_string(b.size()) +
                                                     " dwords: an indirect buffer holds at most 2^20 - 1 (split the body)"));
    const std::size_t at = out_.body.size();
    const auto d = out_.body.append(b.size());
    if (!b.empty()) std::memcpy(d.data(), b.dwords().data(), 4 * b.size());
    return {v_.body_base + byte_count(4ull * at), static_cast<std::uint32_t>(b.size())};
  }

  const plan& p_;
  const slot_view& v_;
  segment_commands& out_;
  const std::vector<bool>& host_waited_;
};

}  // namespace aqueduct::graph::detail
