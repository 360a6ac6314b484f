// aqueduct/graph/task_graph.hpp — `task_graph`: what capture() records — nodes (kernel, copy,
// fill, signal wait/record, timestamp, host callback, child graph, memory alloc/free) and the edges
// between them.
//
// Layer: graph. A node keeps everything its lowering needs, by value: the kernel's dispatch
// information and its kernarg bytes as laid out at capture, the grid and block, copy addresses
// and sizes, the signal and value, the host function, the child graph. Edges are the program
// order of one strand (each node depends on the strand's previous frontier); when_all branches
// add no edges between each other and join into the awaiting strand. Where it came from is kept
// for errors, DOT and traces: the node's label, its co_await's source_location, its queue.
// A conditional node (graph/control.hpp) holds its bodies as task_graphs, evaluated by the GPU.
// A task_graph is a value; instantiating it (graph/exec_graph.hpp) lowers it into packets.
// Thread safety: a value (const use from several threads is fine).
#pragma once

#include <aqueduct/abi/amd_signal.hpp>
#include <aqueduct/core/units.hpp>
#include <aqueduct/graph/detail/block_cache.hpp>
#include <aqueduct/runtime/kernel.hpp>
#include <aqueduct/runtime/memory.hpp>
#include <aqueduct/runtime/queue_kind.hpp>
#include <aqueduct/sync/signal.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <source_location>
#include <string>
#include <string_view>
#include <vector>

namespace aqueduct::runtime {
class queue;
class pm4_queue;
class sdma_queue;
namespace detail {
struct agent_state;
}
}  // namespace aqueduct::runtime

namespace aqueduct::graph {

class task_graph;

enum class node_kind : std::uint8_t {
  kernel,         // a dispatch (AQL KERNEL_DISPATCH or PM4 DISPATCH_DIRECT)
  copy,           // bytes from src to dst (SDMA COPY_LINEAR; AQL, PM4: the copy kernel, graph/detail/shader_op.hpp)
  fill,           // a dword pattern (SDMA CONSTANT_FILL; AQL, PM4: the fill kernel)
  signal_wait,    // later nodes wait until a signal satisfies a condition (device-side)
  signal_record,  // set a signal's value once the work before it finished
  timestamp,      // the GPU clock into memory
  host,           // a host function (run by the reactor between its dependencies and dependents)
  child,          // another task_graph, inlined at instantiation
  conditional,    // IF / IF-ELSE / SWITCH / bounded WHILE on a device word (graph/control.hpp)
  mem_alloc,      // graph memory: an allocation from the graph's pool, live until its mem_free (graph/memory.hpp)
  mem_free,       // the end of a graph allocation's lifetime (its addresses may be reused after it)
};

// What a conditional node does with its condition word (a 64-bit value in device memory, read by
// the command processor when the node runs): docs/graph.md "Device-evaluated control flow".
enum class condition_kind : std::uint8_t {
  if_then,       // bodies[0] when the word is not 0
  if_then_else,  // bodies[0] when it is not 0, else bodies[1]
  switch_on,     // bodies[k] when the word equals k (none when it is >= bodies.size())
  while_loop,    // bodies[0] as long as the word is not 0, at most max_iterations times
};
[[nodiscard]] constexpr const char* to_string(condition_kind k) noexcept {
  switch (k) {
    case condition_kind::if_then: return "IF";
    case condition_kind::if_then_else: return "IF-ELSE";
    case condition_kind::switch_on: return "SWITCH";
    case condition_kind::while_loop: return "WHILE";
  }
  return "?";
}
[[nodiscard]] constexpr const char* to_string(node_kind k) noexcept {
  switch (k) {
    case node_kind::kernel: return "kernel";
    case node_kind::copy: return "copy";
    case node_kind::fill: return "fill";
    case node_kind::signal_wait: return "signal wait";
    case node_kind::signal_record: return "signal record";
    case node_kind::timestamp: return "timestamp";
    case node_kind::host: return "host";
    case node_kind::child: return "child graph";
    case node_kind::conditional: return "conditional";
    case node_kind::mem_alloc: return "memory alloc";
    case node_kind::mem_free: return "memory free";
  }
  return "?";
}

enum class queue_type : std::uint8_t { none, aql, pm4, sdma };
[[nodiscard]] constexpr const char* to_string(queue_type k) noexcept {
  switch (k) {
    case queue_type::none: return "host";
    case queue_type::aql: return "AQL";
    case queue_type::pm4: return "PM4";
    case queue_type::sdma: return "SDMA";
  }
  return "?";
}

// The runtime queue a node runs on (none for host, signal-wait and child nodes).
struct queue_binding {
  queue_type type = queue_type::none;
  void* queue = nullptr;  // runtime::queue* / pm4_queue* / sdma_queue*
  runtime::detail::agent_state* agent = nullptr;
  std::uint32_t queue_id = 0;
  std::uint32_t gpu_id = 0;
  friend bool operator==(const queue_binding& a, const queue_binding& b) noexcept { return a.queue == b.queue; }
};

// A node's handle in its graph (and in the exec_graph instantiated from it).
struct node_id {
  std::uint32_t value = ~std::uint32_t{0};
  // Which captured graph `value` counts in, within an exec_graph: 0 for the graph instantiated
  // (what capture returns); exec_graph::try_inner gives ids of nodes inside child graphs and
  // conditional bodies.
  std::uint32_t scope = 0;
  [[nodiscard]] explicit operator bool() const noexcept { return value != ~std::uint32_t{0}; }
  friend bool operator==(node_id, node_id) noexcept = default;
};

// A node's lists (its dependencies, argument bytes and pointer offsets): vectors whose blocks are
// recycled per thread (graph/detail/block_cache.hpp), three per kernel node.
template <class T>
using node_list = std::vector<T, detail::recycling_allocator<T>>;

struct node {
  node_kind kind = node_kind::kernel;
  queue_binding queue{};
  std::string label;
  std::source_location where{};
  std::string at;  // a loaded node (graph/save.hpp): where it was captured, "file.cpp:42" (`where` is empty)
  node_list<std::uint32_t> deps;  // indices of the nodes this one waits for
  bool enabled = true;

  // kernel
  runtime::untyped_kernel kernel{};
  runtime::grid grid{};
  runtime::block block{};
  node_list<std::byte> args;            // kernel.kernarg_size bytes: explicit arguments (hidden: at lowering)
  node_list<std::uint32_t> pointers;    // offsets of pointer arguments in args (for bindings)
  gpu_va counts{};                      // indirect kernel (PM4): the {x, y, z} workgroup counts the GPU reads; grid unused
  // copy (dst <- src), fill (dst <- value32), timestamp (dst); a copy or fill on AQL or PM4 also
  // `kernel`: the agent's copy or fill kernel (its grid, block and arguments follow from these)
  gpu_va dst{}, src{};
  std::uint64_t bytes = 0;
  std::uint32_t value32 = 0;
  // signal wait / record
  sync::signal_ref signal{};
  runtime::detail::agent_state* signal_agent = nullptr;
  abi::signal_condition cond = abi::signal_condition::eq;
  std::int64_t value = 0;
  // host
  std::function<void()> fn;
  // child
  std::shared_ptr<const task_graph> child;
  // conditional: the word at `dst` (8-byte aligned), its bodies (all on this node's queue)
  condition_kind condition = condition_kind::if_then;
  std::vector<std::shared_ptr<const task_graph>> bodies;
  std::uint32_t max_iterations = 0;  // WHILE
  // mem_alloc / mem_free: the allocation's placeholder range [dst, dst + bytes) (graph/memory.hpp),
  // the GPU whose pool holds it, and the kind of memory
  runtime::detail::agent_state* pool_agent = nullptr;
  runtime::memory_kind pool_kind = runtime::memory_kind::device;

  // "kernel 'vadd' (label) at file.cpp:42 on AQL queue 3"
  [[nodiscard]] std::string describe() const;
  // "file.cpp:42": where it was captured (empty: not known)
  [[nodiscard]] std::string location() const;
};

// A graph's nodes (their large arrays recycled per thread: graph/detail/block_cache.hpp).
using node_vector = std::vector<node, detail::recycling_allocator<node>>;

class task_graph {
 public:
  task_graph() = default;

  [[nodiscard]] std::size_t size() const noexcept { return nodes_.size(); }
  [[nodiscard]] bool empty() const noexcept { return nodes_.empty(); }
  [[nodiscard]] const node& operator[](node_id id) const noexcept { return nodes_[id.value]; }
  [[nodiscard]] node& operator[](node_id id) noexcept { return nodes_[id.value]; }
  [[nodiscard]] const node_vector& nodes() const noexcept { return nodes_; }
  // The first node with this label (none: an empty id).
  [[nodiscard]] node_id find(std::string_view label) const noexcept {
    for (std::size_t i = 0; i < nodes_.size(); ++i)
      if (nodes_[i].label == label) return node_id{static_cast<std::uint32_t>(i)};
    return {};
  }
  node_id add(node&& n) {
    nodes_.push_back(std::move(n));
    return node_id{static_cast<std::uint32_t>(nodes_.size() - 1)};
  }
  node_id add(const node& n) { return add(node(n)); }
  // A default node appended in place (capture fills it: graph/capture.hpp), and its removal.
  node& emplace() { return nodes_.emplace_back(); }
  [[nodiscard]] node& back() noexcept { return nodes_.back(); }
  void pop_back() noexcept { nodes_.pop_back(); }

  // A named buffer: every pointer argument and copy address inside [va, va + bytes) refers to it,
  // and exec_graph::bind(name, other) moves those references to `other` (checked: size, agent).
  struct binding {
    std::string name;
    gpu_va va{};
    std::uint64_t bytes = 0;
    std::uint32_t gpu_id = 0;
  };
  template <class T>
  void name(std::string n, const runtime::buffer<T>& b) {
    bindings_.push_back(binding{std::move(n), b.va(), b.size_bytes(), b.bo().gpu_id()});
  }
  // The same for a range (graph/save.hpp names the buffers of a loaded graph so).
  void name_range(std::string n, gpu_va va, std::uint64_t bytes, std::uint32_t gpu_id) {
    bindings_.push_back(binding{std::move(n), va, bytes, gpu_id});
  }
  [[nodiscard]] const std::vector<binding>& bindings() const noexcept { return bindings_; }

  // Graphviz DOT: one box per node (kind, label, queue, source line), one arrow per edge,
  // clustered by queue.
  [[nodiscard]] std::string to_dot() const;

 private:
  node_vector nodes_;
  std::vector<binding> bindings_;
};

// ---- descriptions ------------------------------------------------------------------------------
namespace detail {
inline std::string short_file(const std::source_location& loc) {
  std::string_view f = loc.file_name();
  if (auto s = f.find_last_of('/'); s != std::string_view::npos) f.remove_prefix(s + 1);
  return std::string(f) + ":" + std::to_string(loc.line());
}
// A copy or fill recorded on a compute queue (AQL, PM4): a dispatch of its agent's copy or fill
// kernel, the shader copy (graph/detail/shader_op.hpp).
[[nodiscard]] constexpr bool is_shader_op(const node& x) noexcept {
  return (x.kind == node_kind::copy || x.kind == node_kind::fill) && (x.queue.type == queue_type::aql || x.queue.type == queue_type::pm4);
}
// A node lowered as a kernel dispatch (its own kernel, or the copy or fill kernel).
[[nodiscard]] constexpr bool dispatches(const node& x) noexcept { return x.kind == node_kind::kernel || is_shader_op(x); }
// "copy", or "shader copy" on a compute queue.
[[nodiscard]] inline std::string kind_name(const node& x) { return std::string(is_shader_op(x) ? "shader " : "") + to_string(x.kind); }
inline std::string queue_name(const queue_binding& q) {
  if (q.type == queue_type::none) return "host";
  return std::string(to_string(q.type)) + " queue " + std::to_string(q.queue_id) + " (gpu_id " + std::to_string(q.gpu_id) + ")";
}
}  // namespace detail

inline std::string node::describe() const {
  std::string s = detail::kind_name(*this);
  if (kind == node_kind::kernel) s += (counts ? " (indirect) '" : " '") + kernel.name + "'";
  if (kind == node_kind::conditional) s += std::string(" ") + to_string(condition);
  if (!label.empty()) s += " \"" + label + "\"";
  if (const std::string l = location(); !l.empty()) s += " at " + l;
  if (queue.type != queue_type::none) s += " on " + detail::queue_name(queue);
  return s;
}

inline std::string node::location() const { return where.line() ? detail::short_file(where) : at; }

inline std::string task_graph::to_dot() const {
  const auto esc = [](std::string v) {
    std::string o;
    for (char c : v) {
      if (c == '"' || c == '\\') o += '\\';
      o += c;
    }
    return o;
  };
  std::string out = "digraph aqueduct {\n  rankdir=TB;\n  node [shape=box, fontname=\"monospace\"];\n";
  // Clusters: one per queue (host nodes outside).
  std::vector<const void*> queues;
  for (const node& n : nodes_)
    if (n.queue.queue) {
      bool seen = false;
      for (const void* q : queues) seen |= q == n.queue.queue;
      if (!seen) queues.push_back(n.queue.queue);
    }
  for (std::size_t c = 0; c < queues.size(); ++c) {
    out += "  subgraph cluster_" + std::to_string(c) + " {\n";
    bool labelled = false;
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
      const node& n = nodes_[i];
      if (n.queue.queue != queues[c]) continue;
      if (!labelled) out += "    label=\"" + esc(detail::queue_name(n.queue)) + "\";\n";
      labelled = true;
      out += "    n" + std::to_string(i) + ";\n";
    }
    out += "  }\n";
  }
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    const node& n = nodes_[i];
    std::string text = detail::kind_name(n);
    if (n.kind == node_kind::kernel) text += (n.counts ? " (indirect) " : " ") + n.kernel.name;
    if (n.kind == node_kind::conditional)
      text += std::string(" ") + to_string(n.condition) + " (" + std::to_string(n.bodies.size()) + " bod" +
              (n.bodies.size() == 1 ? "y" : "ies") + ")";
    if (!n.label.empty()) text += "\\n" + esc(n.label);
    if (const std::string l = n.location(); !l.empty()) text += "\\n" + esc(l);
    if (!n.enabled) text += "\\n(disabled)";
    out += "  n" + std::to_string(i) + " [label=\"" + text + "\"" + (n.queue.type == queue_type::none ? ", shape=ellipse" : "") +
           (n.enabled ? "" : ", style=dashed") + "];\n";
  }
  for (std::size_t i = 0; i < nodes_.size(); ++i)
    for (std::uint32_t d : nodes_[i].deps) out += "  n" + std::to_string(d) + " -> n" + std::to_string(i) + ";\n";
  out += "}\n";
  return out;
}

}  // namespace aqueduct::graph
