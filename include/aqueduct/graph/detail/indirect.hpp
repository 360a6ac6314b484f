// aqueduct/graph/detail/indirect.hpp — indirect replay mode's staging (not API): a PM4 or SDMA
// segment's prebuilt packets copied into graph-owned memory the engine reads, cut into indirect
// buffers of whole packets, and what a replay submits to run them.
//
// Layer: graph. Limits (both engines' IB_SIZE is 20 bits, spec/packets.md):
//   PM4  — an INDIRECT_BUFFER runs 1 to 2^20 - 1 dwords at a dword-aligned address;
//   SDMA — an INDIRECT runs a 32-byte-aligned buffer whose size is a multiple of 8 dwords (Linux
//          and tinygrad pad every SDMA IB with NOPs to a multiple of 8, spec/packets.md §3.4): each
//          buffer here starts on an 8-dword boundary and is padded with 1-dword NOPs (zero).
// A segment longer than one buffer takes several, each ending at a packet boundary.
// Thread safety: called with the exec_graph's state, by one thread, for a slot not in flight.
#pragma once

#include <aqueduct/core/result.hpp>
#include <aqueduct/graph/detail/exec_state.hpp>
#include <aqueduct/graph/detail/lower.hpp>
#include <aqueduct/kfd/memory.hpp>
#include <aqueduct/runtime/commands.hpp>
#include <aqueduct/runtime/sdma_queue.hpp>
#include <aqueduct/sync/atomics.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

namespace aqueduct::graph::detail {

// Where each indirect buffer of `cmds` goes, in dwords from the staging memory's start: whole
// packets, at most `max_dwords` per buffer once rounded up to `granule` dwords, each buffer starting
// at a multiple of `granule`. A packet longer than max_dwords cannot be placed (never the case:
// the encoders split long operations into packets of at most a few dozen dwords).
struct ib_chunk {
  std::uint64_t offset = 0;      // in the staging memory, dwords
  std::size_t first = 0;         // first dword of cmds
  std::uint32_t dwords = 0;      // dwords of cmds in it
  std::uint32_t padded = 0;      // dwords the engine runs (dwords rounded up to the granule)
};
[[nodiscard]] inline std::vector<ib_chunk> ib_chunks(const runtime::command_buffer& cmds, std::uint32_t max_dwords, std::uint32_t granule) {
  const auto round = [granule](std::uint64_t d) { return (d + granule - 1) / granule * granule; };
  std::vector<ib_chunk> out;
  std::size_t begin = 0;
  std::uint64_t at = 0;
  for (std::size_t i = 0; i < cmds.packets(); ++i) {
    const std::size_t end = cmds.packet_end(i);
    AQUEDUCT_ASSERT(round(end - cmds.packet_begin(i)) <= max_dwords, "a packet longer than an indirect buffer");
    const bool last = i + 1 == cmds.packets();
    if (last || round(cmds.packet_end(i + 1) - begin) > max_dwords) {
      const auto n = static_cast<std::uint32_t>(end - begin);
      out.push_back({at, begin, n, static_cast<std::uint32_t>(round(n))});
      at += round(n);
      begin = end;
    }
  }
  return out;
}

// The slot's packets (segment_commands::cmds) into ib[slot] (grown if an update made them longer:
// never while the slot is in flight), and what a replay submits: PM4 the INDIRECT_BUFFER packets
// (ib_submit), SDMA the buffers for sdma_queue::try_submit_indirect (ib_refs).
inline void stage_indirect(exec_segment& sg, std::uint32_t slot) {
  const runtime::command_buffer& cmds = sg.slots[slot].cmds;
  const bool sdma = sg.q.type == queue_type::sdma;
  const std::vector<ib_chunk> chunks = sdma ? ib_chunks(cmds, runtime::sdma_queue::max_indirect_dwords, 8) : ib_chunks(cmds, max_indirect_dwords, 1);
  const std::uint64_t bytes = chunks.empty() ? 0 : 4 * (chunks.back().offset + chunks.back().padded);
  kfd::buffer<file_type>& ib = sg.ib[slot];
  if (!ib || ib.size().value < bytes) {
    const runtime::detail::agent_state& a = *sg.q.agent;
    auto b = kfd::buffer<file_type>::try_allocate(a.sys->ref(), *a.node, byte_count(std::max<std::uint64_t>(bytes * 2, 4096)),
                                                  kfd::memory_use::host);
    if (!b) throw_failure(std::move(b).get_failure());
    ib = std::move(*b);
  }
  auto* base = static_cast<std::uint32_t*>(ib.host());
  runtime::command_buffer& sub = sg.ib_submit[slot];
  std::vector<runtime::indirect_buffer_ref>& refs = sg.ib_refs[slot];
  sub.clear();
  refs.clear();
  for (const ib_chunk& c : chunks) {
    std::memcpy(base + c.offset, cmds.dwords().data() + c.first, 4ull * c.dwords);
    std::memset(base + c.offset + c.dwords, 0, 4ull * (c.padded - c.dwords));  // SDMA: 1-dword NOPs
    const gpu_va va = ib.va() + byte_count(4 * c.offset);
    if (sdma)
      refs.push_back({va, c.padded});
    else
      encode_indirect_buffer(sub, va, c.dwords);
  }
}

// The node a segment stopped inside its indirect buffers was running: the one it last started
// (the cursor word its packets set to the node's tag + 1 before each node, planned_node::tag),
// as a flat index through `flat_of_tag`, or no_index.
[[nodiscard]] inline std::uint32_t cursor_node(const exec_segment& sg, std::uint32_t slot, const std::vector<std::uint32_t>& flat_of_tag) {
  const std::uint64_t at = sync::atomic_load(static_cast<std::uint64_t*>(sg.cursor.host())[slot], std::memory_order_acquire);
  return at != 0 && at <= flat_of_tag.size() ? flat_of_tag[at - 1] : no_index;
}

}  // namespace aqueduct::graph::detail
