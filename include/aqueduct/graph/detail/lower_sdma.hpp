// aqueduct/graph/detail/lower_sdma.hpp — an SDMA segment's packets for one replay slot (not API),
// conditionals included (graph/control.hpp on a copy queue).
//
// Layer: graph. The segment's shape is graph/detail/lower.hpp's (start, nodes, end). A
// conditional runs in place, with COND_EXE ("the next N dwords run only if the 32-bit word at
// ADDR equals REFERENCE", abi/sdma.hpp): SDMA IBs do not nest, so bodies cannot be indirect
// buffers, and COND_EXE only compares for equality, so "word != 0" (64-bit) is computed into the
// conditional's flag word F in the slot's flag memory first:
//   F = 1; if (word.lo == 0) { if (word.hi == 0) F = 0; }            (FENCE, COND_EXE, COND_EXE, FENCE)
//   if_then       F; if (F == 1) body
//   if_then_else  F; if (F == 1) then; if (F == 0) else               (the word read once, as PM4's)
//   switch_on     per case k: if (word.hi == 0) { if (word.lo == k) case k }  (re-read per case, as PM4's)
//   while_loop    max_iterations times: F; if (F == 1) body — then F; if (F == 1) overflow word = 1
// A whole top-level conditional is one packet of the command buffer, so a ring-copy submission
// reserves it whole and no ring-end padding falls inside a skipped span. Limits, each refused at
// instantiation with the node named: a skipped span is at most 2^14 - 1 dwords (EXEC_COUNT), a
// conditional at most half the ring (ring copy) or one indirect buffer (indirect mode).
// Thread safety: called with the exec_graph's state, by one thread.
#pragma once

#include <aqueduct/abi/sdma.hpp>
#include <aqueduct/core/result.hpp>
#include <aqueduct/graph/detail/lower.hpp>
#include <aqueduct/graph/detail/plan.hpp>
#include <aqueduct/runtime/commands.hpp>
#include <aqueduct/runtime/sdma_queue.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace aqueduct::graph::detail {

class sdma_lowering {
 public:
  sdma_lowering(const plan& p, const slot_view& v, segment_commands& out, const std::vector<bool>& host_waited) noexcept
      : p_(p), v_(v), out_(out), host_waited_(host_waited) {}

  void lower(std::uint32_t seg, const runtime::sdma_queue& q) {
    out_.cmds.clear();
    out_.cmd_node.clear();
    const auto mark = [&](std::uint32_t n) {
      while (out_.cmd_node.size() < out_.cmds.packets()) out_.cmd_node.push_back(n);
    };
    using f = abi::sdma::poll_regmem::function;
    if (v_.segments > 1)
      for (std::uint32_t s = 0; s < v_.segments; ++s) q.encode_wait(out_.cmds, v_.prev_done(s) + byte_count(value_offset), 0, ~0u, f::equal);
    mark(no_index);
    for (std::uint32_t n : p_.order[seg]) {
      const planned_node& pn = p_.placed[n];
      const node& x = p_.nodes[n];
      for (std::uint32_t w : pn.waits) q.encode_wait(out_.cmds, v_.signal(p_.placed[w].signal) + byte_count(value_offset), 0, ~0u, f::equal);
      for (const external_wait& e : pn.external)
        q.encode_wait(out_.cmds, gpu_va(e.signal.handle() + value_offset), static_cast<std::uint32_t>(e.value), ~0u, sdma_function(e.cond));
      if (v_.cursor) q.encode_fence64(out_.cmds, v_.cursor, pn.tag + 1);
      if (v_.tracing()) q.encode_timestamp(out_.cmds, v_.stamp(n, 0));
      if (x.enabled) {
        if (x.kind == node_kind::conditional) {
          runtime::command_buffer c;
          encode_conditional(c, n, q);
          whole(c, n, q);
        } else {
          encode_node(out_.cmds, x, q);
        }
      }
      if (v_.tracing()) q.encode_timestamp(out_.cmds, v_.stamp(n, 1));
      if (pn.signal != no_index) {
        q.encode_fence64(out_.cmds, v_.signal(pn.signal) + byte_count(value_offset), 0);
        if (host_waited_[n]) q.encode_signal_event(out_.cmds, v_.event_mailbox, v_.event_id);
      }
      mark(n);
    }
    q.encode_fence64(out_.cmds, v_.done(seg) + byte_count(value_offset), 0);
    q.encode_signal_event(out_.cmds, v_.event_mailbox, v_.event_id);
    mark(no_index);
    out_.stale = false;
  }

 private:
  // A copy, fill, timestamp or signal record (at the top level or in a body).
  static void encode_node(runtime::command_buffer& b, const node& x, const runtime::sdma_queue& q) {
    switch (x.kind) {
      case node_kind::copy:
        if (x.bytes) q.encode_copy(b, x.dst, x.src, x.bytes);
        break;
      case node_kind::fill:
        if (x.bytes) q.encode_fill(b, x.dst, x.value32, x.bytes);
        break;
      case node_kind::timestamp: q.encode_timestamp(b, x.dst); break;
      case node_kind::signal_record: {
        const abi::amd_signal& s = *x.signal.get();
        q.encode_fence64(b, gpu_va(x.signal.handle() + value_offset), static_cast<std::uint64_t>(x.value));
        if (s.event_mailbox_ptr) q.encode_signal_event(b, gpu_va(s.event_mailbox_ptr), s.event_id);
        break;
      }
      default:
        throw_failure(failure(errc::not_supported, x.describe() + ": an SDMA queue runs copies, fills, signal records, timestamps and "
                                                                  "conditionals (dispatch kernels on an AQL or PM4 queue)"));
    }
  }

  // A top-level conditional as one packet of the segment, if the submission can take it whole.
  void whole(const runtime::command_buffer& c, std::uint32_t n, const runtime::sdma_queue& q) {
    const std::uint64_t limit = v_.cursor ? runtime::sdma_queue::max_indirect_dwords - 8 : q.ring_bytes() / 8;
    if (c.size() > limit)
      throw_failure(failure(errc::invalid_argument,
                            p_.nodes[n].describe() + " is " + std::to_string(c.size()) + " dwords of SDMA packets; " +
                                (v_.cursor ? "an indirect buffer holds " + std::to_string(limit)
                                           : "a ring-copy replay takes at most half the ring (" + std::to_string(limit) +
                                                 " dwords): use replay_mode::indirect or a larger sdma_queue_options::ring_bytes") +
                                " (fewer iterations or a smaller body also help)"));
    const auto d = out_.cmds.append(c.size());
    std::copy(c.dwords().begin(), c.dwords().end(), d.begin());
  }

  // COND_EXE(addr == reference) over `span`, then `span` (nothing for an empty span).
  void guarded(runtime::command_buffer& b, gpu_va addr, std::uint32_t reference, const runtime::command_buffer& span, std::uint32_t n,
               const runtime::sdma_queue& q) const {
    if (span.empty()) return;
    if (span.size() > runtime::sdma_queue::max_cond_exe_dwords)
      throw_failure(failure(errc::invalid_argument, p_.nodes[n].describe() + ": a body of " + std::to_string(span.size()) +
                                                        " dwords of SDMA packets; COND_EXE skips at most " +
                                                        std::to_string(runtime::sdma_queue::max_cond_exe_dwords) + " (split the body)"));
    q.encode_cond_exe(b, addr, reference, static_cast<std::uint32_t>(span.size()));
    const auto d = b.append(span.size());
    std::copy(span.dwords().begin(), span.dwords().end(), d.begin());
  }

  // F = (the 64-bit word at `word` != 0).
  void encode_nonzero(runtime::command_buffer& b, gpu_va word, gpu_va flag, std::uint32_t n, const runtime::sdma_queue& q) const {
    q.encode_fence(b, flag, 1);
    runtime::command_buffer clear, high;
    q.encode_fence(clear, flag, 0);
    guarded(high, word + byte_count(4), 0, clear, n, q);
    guarded(b, word, 0, high, n, q);
  }

  void encode_conditional(runtime::command_buffer& b, std::uint32_t n, const runtime::sdma_queue& q) {
    const node& x = p_.nodes[n];
    const planned_node& pn = p_.placed[n];
    std::vector<runtime::command_buffer> bodies;
    for (const auto& br : pn.branches) bodies.push_back(lower_body(br, q));
    const gpu_va flag = pn.cond_flag != no_index ? v_.loop_flags + byte_count(8ull * pn.cond_flag) : gpu_va{};
    switch (x.condition) {
      case condition_kind::if_then:
        encode_nonzero(b, x.dst, flag, n, q);
        guarded(b, flag, 1, bodies[0], n, q);
        break;
      case condition_kind::if_then_else:
        encode_nonzero(b, x.dst, flag, n, q);
        guarded(b, flag, 1, bodies[0], n, q);
        guarded(b, flag, 0, bodies[1], n, q);
        break;
      case condition_kind::switch_on:
        for (std::uint32_t k = 0; k < bodies.size(); ++k) {
          runtime::command_buffer low;
          guarded(low, x.dst, k, bodies[k], n, q);
          guarded(b, x.dst + byte_count(4), 0, low, n, q);
        }
        break;
      case condition_kind::while_loop: {
        for (std::uint32_t i = 0; i < x.max_iterations; ++i) {
          encode_nonzero(b, x.dst, flag, n, q);
          guarded(b, flag, 1, bodies[0], n, q);
        }
        runtime::command_buffer over;
        q.encode_fence(over, v_.loop_flags + byte_count(8ull * pn.loop_flag), 1);
        encode_nonzero(b, x.dst, flag, n, q);
        guarded(b, flag, 1, over, n, q);
        break;
      }
    }
  }

  // One body's packets, in order (nested conditionals in place).
  runtime::command_buffer lower_body(const std::vector<std::uint32_t>& nodes, const runtime::sdma_queue& q) {
    runtime::command_buffer b;
    for (std::uint32_t m : nodes) {
      const node& y = p_.nodes[m];
      if (!y.enabled) continue;
      if (y.kind == node_kind::conditional)
        encode_conditional(b, m, q);
      else
        encode_node(b, y, q);
    }
    return b;
  }

  const plan& p_;
  const slot_view& v_;
  segment_commands& out_;
  const std::vector<bool>& host_waited_;
};

}  // namespace aqueduct::graph::detail
