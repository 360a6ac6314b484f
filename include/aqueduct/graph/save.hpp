// aqueduct/graph/save.hpp — a graph saved to bytes or a file and loaded back, in this process or
// another, without capturing it again.
//
// Layer: graph. try_save(task_graph or exec_graph, code) writes every node (kind, queue, label,
// where it was captured, edges, enabled) with its parameters: a kernel's argument bytes, grid and
// block, a copy's or fill's sizes, a conditional's kind and bodies, child graphs, memory nodes.
// An exec_graph is saved as it is now: with the updates made to it (arguments, grids, copies,
// bindings), graph memory written back as its allocations. What a graph refers to outside itself
// is saved by name and supplied again at load (a `load_context`):
//   - queues, in the order the file lists them (saved_graph_info::queues): each must be of the
//     saved type (AQL, PM4, SDMA), on a GPU of the saved processor (gfx1100 ...);
//   - kernels, by name, found in the executables given; each must be the same code as saved: the
//     same processor and the same code-object digest (code::loaded_kernel::code_digest, FNV-1a of
//     the code object), else the load is refused naming the kernel and both values;
//   - memory: every address the graph uses (pointer arguments, copy/fill/timestamp/condition
//     addresses, indirect-dispatch counts) must lie in a named buffer (task_graph::name) or in
//     graph memory (graph/memory.hpp). At load each named buffer is given anew (at least as large,
//     on the GPU that runs the saved GPU's queues) and every address inside it is moved there;
//     graph memory gets fresh placeholders and a pool at instantiation. An address in neither is
//     refused at save with the node and the argument named: the saved graph could not be given it
//     again. An address hidden inside a by-value argument (a struct) is saved as it is.
//   - host nodes, by label (a host node without a label cannot be saved).
// Nodes that wait for or set a user's signal (signal_wait, signal_record) cannot be saved (a signal
// is a value of this process); they are refused at save.
// A loaded graph is a task_graph: instantiate it (exec_graph::try_instantiate) and replay. Node
// ids are those of the saved graph (node_id values and child/body scopes are kept); a loaded
// node's source location is the saved "file:line" (node::location; source_location is empty).
// The format (little-endian, versioned, docs/graph.md "Saving and loading") is read through
// bounds-checked reads: a truncated or corrupted file is refused with the offset that is wrong,
// never read past its end.
// Thread safety: pure functions over values (saving an exec_graph reads it: not while another
// thread updates it).
#pragma once

#include <aqueduct/code/bytes.hpp>
#include <aqueduct/core/result.hpp>
#include <aqueduct/graph/detail/graph_loader.hpp>
#include <aqueduct/graph/detail/graph_saver.hpp>
#include <aqueduct/graph/exec_graph.hpp>
#include <aqueduct/graph/saved_graph.hpp>
#include <aqueduct/graph/task_graph.hpp>

#include <cerrno>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <span>
#include <string>
#include <vector>

namespace aqueduct::graph {

// ---- the API --------------------------------------------------------------------------------
// `code`: the executables the graph's kernels come from (a kernel in none of them is refused).
[[nodiscard]] result<std::vector<std::byte>> try_save(const task_graph& g, const executables& code);
[[nodiscard]] result<std::vector<std::byte>> try_save(const exec_graph& g, const executables& code);
[[nodiscard]] result<saved_graph_info> try_inspect_saved(std::span<const std::byte> bytes);
[[nodiscard]] result<task_graph> try_load_graph(std::span<const std::byte> bytes, const load_context& ctx);

// Files: written whole to "<path>.tmp" then renamed over `path` (a failed save leaves no half file).
template <class G>
  requires std::same_as<G, task_graph> || std::same_as<G, exec_graph>
[[nodiscard]] result<void> try_save_file(const std::string& path, const G& g, const executables& code);
[[nodiscard]] inline result<task_graph> try_load_graph_file(const std::string& path, const load_context& ctx) {
  AQUEDUCT_TRY(auto bytes, code::try_read_file(path));
  auto g = try_load_graph(bytes, ctx);
  if (!g) return failure(g.get_failure().code(), path + ": " + std::string(g.get_failure().detail()));
  return g;
}

inline result<std::vector<std::byte>> try_save(const task_graph& g, const executables& code) {
  return detail::graph_saver(code, nullptr).save(g);
}
inline result<std::vector<std::byte>> try_save(const exec_graph& g, const executables& code) {
  if (!g) return failure(errc::invalid_argument, "save: this exec_graph is empty (default-constructed or moved-from)");
  return detail::graph_saver(code, &g.state()).save(g.graph());
}

inline result<saved_graph_info> try_inspect_saved(std::span<const std::byte> bytes) {
  detail::saved_reader r(bytes);
  saved_graph_info info;
  std::uint32_t allocs = 0;
  detail::read_saved_tables(r, info, allocs);
  if (r.bad()) return r.error();
  return info;
}

inline result<task_graph> try_load_graph(std::span<const std::byte> bytes, const load_context& ctx) {
  detail::saved_reader r(bytes);
  saved_graph_info info;
  detail::load_tables t;
  detail::read_saved_tables(r, info, t.alloc_count);
  if (r.bad()) return r.error();
  AQUEDUCT_TRY_VOID(detail::resolve_saved(info, ctx, t));
  task_graph g;
  for (std::size_t k = 0; k < info.buffers.size(); ++k)
    g.name_range(info.buffers[k].name, t.buffers[k].va, info.buffers[k].bytes, t.buffers[k].gpu_id);
  detail::graph_loader loader(r, info, t, ctx);
  loader.read_graph(g, 0);
  if (r.bad()) return r.error();
  if (loader.nodes_read() != info.nodes)
    return failure(errc::unsupported_format, "saved graph: " + std::to_string(loader.nodes_read()) + " nodes, the header says " + std::to_string(info.nodes));
  if (r.left() != 0) return failure(errc::unsupported_format, "saved graph: " + std::to_string(r.left()) + " bytes after the graph's end");
  return g;
}

template <class G>
  requires std::same_as<G, task_graph> || std::same_as<G, exec_graph>
inline result<void> try_save_file(const std::string& path, const G& g, const executables& code) {
  AQUEDUCT_TRY(auto bytes, try_save(g, code));
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) return failure(errc::io_error, "save: cannot create " + tmp + ": " + std::strerror(errno));
  const bool written = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  const bool closed = std::fclose(f) == 0;
  if (!written || !closed) {
    std::remove(tmp.c_str());
    return failure(errc::io_error, "save: writing " + tmp + " failed");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::remove(tmp.c_str());
    return failure(errc::io_error, "save: cannot rename " + tmp + " to " + path + ": " + why);
  }
  return ok();
}


}  // namespace aqueduct::graph
