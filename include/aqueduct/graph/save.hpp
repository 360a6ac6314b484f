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
#include <aqueduct/graph/detail/exec_state.hpp>
#include <aqueduct/graph/detail/pool.hpp>
#include <aqueduct/graph/exec_graph.hpp>
#include <aqueduct/graph/ops.hpp>
#include <aqueduct/graph/task_graph.hpp>
#include <aqueduct/runtime/kernel.hpp>
#include <aqueduct/runtime/memory.hpp>

#include <cerrno>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace aqueduct::graph {

inline constexpr char saved_graph_magic[8] = {'A', 'Q', 'D', 'G', 'R', 'A', 'P', 'H'};
inline constexpr std::uint32_t saved_graph_version = 1;

// What a saved graph refers to outside itself, as the file lists it: what a load must be given.
struct saved_graph_info {
  struct gpu {
    std::string processor;    // the agent's gfx name at save ("gfx1100")
    std::uint32_t gpu_id = 0;  // at save (informative)
  };
  struct queue {
    queue_type type = queue_type::none;
    std::uint32_t gpu = 0;  // index in gpus
  };
  struct kernel {
    std::string name, processor;  // processor: the code object's ("gfx1100"), or "emulated"
    std::uint64_t digest = 0;      // code::loaded_kernel::code_digest
    std::uint32_t kernarg_size = 0;
  };
  struct buffer {
    std::string name;
    std::uint64_t bytes = 0;
    std::uint32_t gpu = 0;  // index in gpus
  };
  std::uint32_t version = 0;
  std::vector<gpu> gpus;
  std::vector<queue> queues;
  std::vector<kernel> kernels;
  std::vector<buffer> buffers;
  std::vector<std::string> host_labels;
  std::uint64_t nodes = 0;  // in all scopes (child graphs and bodies counted)
  // A few lines a person reads: what to give a load_context, in order.
  [[nodiscard]] std::string describe() const;
};

// What a load is given (see the header comment). Queues in the file's order.
class load_context {
 public:
  template <class Q>
    requires std::same_as<Q, runtime::queue> || std::same_as<Q, runtime::pm4_queue> || std::same_as<Q, runtime::sdma_queue>
  load_context& queue(Q& q) {
    queues_.push_back(detail::binding_of(q));
    return *this;
  }
  load_context& code(const runtime::executable& e) {
    code_.push_back(&e);
    return *this;
  }
  template <class T>
  load_context& buffer(std::string name, const runtime::buffer<T>& b) {
    return buffer_range(std::move(name), b.va(), b.size_bytes(), b ? b.bo().gpu_id() : 0);
  }
  load_context& buffer_range(std::string name, gpu_va va, std::uint64_t bytes, std::uint32_t gpu_id) {
    buffers_.push_back(named{std::move(name), va, bytes, gpu_id});
    return *this;
  }
  load_context& host(std::string label, std::function<void()> fn) {
    host_.emplace_back(std::move(label), std::move(fn));
    return *this;
  }

  struct named {
    std::string name;
    gpu_va va{};
    std::uint64_t bytes = 0;
    std::uint32_t gpu_id = 0;
  };
  [[nodiscard]] const std::vector<queue_binding>& queues() const noexcept { return queues_; }
  [[nodiscard]] const std::vector<const runtime::executable*>& executables() const noexcept { return code_; }
  [[nodiscard]] const std::vector<named>& buffers() const noexcept { return buffers_; }
  [[nodiscard]] const std::vector<std::pair<std::string, std::function<void()>>>& hosts() const noexcept { return host_; }

 private:
  std::vector<queue_binding> queues_;
  std::vector<const runtime::executable*> code_;
  std::vector<named> buffers_;
  std::vector<std::pair<std::string, std::function<void()>>> host_;
};

using executables = std::vector<const runtime::executable*>;

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

// ---- implementation -------------------------------------------------------------------------
namespace detail {

enum class saved_address : std::uint8_t { literal = 0, buffer = 1, allocation = 2 };
inline constexpr std::uint32_t saved_max_depth = 64;  // child graphs and bodies, nested

class saved_writer {
 public:
  void u8(std::uint8_t v) { out_.push_back(static_cast<std::byte>(v)); }
  void u32(std::uint32_t v) { le(v, 4); }
  void u64(std::uint64_t v) { le(v, 8); }
  void str(std::string_view s) {
    u32(static_cast<std::uint32_t>(s.size()));
    raw(std::as_bytes(std::span<const char>(s.data(), s.size())));
  }
  void raw(std::span<const std::byte> b) { out_.insert(out_.end(), b.begin(), b.end()); }
  [[nodiscard]] std::vector<std::byte>& bytes() noexcept { return out_; }

 private:
  void le(std::uint64_t v, int n) {
    for (int i = 0; i < n; ++i) out_.push_back(static_cast<std::byte>(v >> (8 * i)));
  }
  std::vector<std::byte> out_;
};

// Saving: the tables the nodes refer to, filled as the nodes are written.
class graph_saver {
 public:
  graph_saver(const executables& code, const exec_state* exec) : code_(code), exec_(exec) {
    if (exec_)  // pool address -> allocation: which allocations are live at each flat node
      for (const graph_allocation& a : exec_->mem.allocs) live_after_alloc_.push_back(descendants(exec_->p, a.alloc));
  }

  [[nodiscard]] result<std::vector<std::byte>> save(const task_graph& root) {
    collect(root, 0, 0);
    if (failed_) return *failed_;
    saved_writer body;
    put_graph(body, root, 0, 0);
    if (failed_) return *failed_;
    saved_writer out;
    out.raw(std::as_bytes(std::span<const char>(saved_graph_magic, 8)));
    out.u32(saved_graph_version);
    out.u32(0);  // flags: none defined
    out.u32(static_cast<std::uint32_t>(gpus_.size()));
    for (const auto* a : gpus_) {
      out.str(a->node->gfx_name());
      out.u32(a->node->gpu_id);
    }
    out.u32(static_cast<std::uint32_t>(queues_.size()));
    for (const queue_binding& q : queues_) {
      out.u8(static_cast<std::uint8_t>(q.type));
      out.u32(gpu_index(q.agent));
    }
    out.u32(static_cast<std::uint32_t>(kernels_.size()));
    for (const code::loaded_kernel* k : kernels_) {
      out.str(k->name);
      out.str(k->processor);
      out.u64(k->code_digest);
      out.u32(static_cast<std::uint32_t>(k->kernarg_segment_size));
    }
    out.u32(static_cast<std::uint32_t>(bindings_.size()));
    for (const task_graph::binding& b : bindings_) {
      out.str(b.name);
      out.u64(b.bytes);
      out.u32(gpu_of_id(b.gpu_id));
    }
    out.u32(static_cast<std::uint32_t>(hosts_.size()));
    for (const std::string& h : hosts_) out.str(h);
    out.u32(static_cast<std::uint32_t>(allocs_.size()));
    out.u64(total_nodes_);
    out.raw(body.bytes());
    return std::move(out.bytes());
  }

 private:
  // Pass 1: bindings (every scope's), allocations (placeholders, in writing order), GPUs.
  void collect(const task_graph& g, std::uint32_t scope, std::uint32_t depth) {
    if (depth > saved_max_depth) return fail(errc::not_supported, "graphs nested deeper than " + std::to_string(saved_max_depth));
    for (const task_graph::binding& b : g.bindings()) {
      bool seen = false;
      for (const task_graph::binding& x : bindings_) seen |= x.name == b.name;
      if (!seen) bindings_.push_back(b);
    }
    for (std::uint32_t i = 0; i < g.size(); ++i) {
      const node& n = g.nodes()[i];
      total_nodes_ += 1;
      if (n.queue.agent) (void)gpu_index(n.queue.agent);
      if (n.kind == node_kind::mem_alloc) {
        allocs_.push_back(n.dst.value);
        alloc_bytes_.push_back(n.bytes);
        if (!n.pool_agent) return fail(errc::invalid_argument, n.describe() + ": no GPU");
      }
      if (n.kind == node_kind::child && n.child) collect(*n.child, inner(scope, i, 0), depth + 1);
      if (n.kind == node_kind::conditional)
        for (std::uint32_t b = 0; b < n.bodies.size(); ++b)
          if (n.bodies[b]) collect(*n.bodies[b], inner(scope, i, b), depth + 1);
    }
  }

  void put_graph(saved_writer& w, const task_graph& g, std::uint32_t scope, std::uint32_t depth) {
    w.u32(static_cast<std::uint32_t>(g.size()));
    for (std::uint32_t i = 0; i < g.size() && !failed_; ++i) put_node(w, g, scope, i, depth);
  }

  void put_node(saved_writer& w, const task_graph& g, std::uint32_t scope, std::uint32_t i, std::uint32_t depth) {
    const node& captured = g.nodes()[i];
    // An exec graph's current parameters live in its flat plan (updates, bindings, pool addresses).
    std::uint32_t flat = no_index;
    if (exec_ && scope < exec_->p.scopes.size() && i < exec_->p.scopes[scope].to_flat.size()) flat = exec_->p.scopes[scope].to_flat[i];
    const node& n = flat != no_index ? exec_->p.nodes[flat] : captured;
    const std::string who = captured.describe();
    w.u8(static_cast<std::uint8_t>(captured.kind));
    w.u32(captured.queue.queue ? queue_index(captured.queue) + 1 : 0);
    w.str(captured.label);
    w.str(captured.location());
    w.u32(static_cast<std::uint32_t>(captured.deps.size()));
    for (std::uint32_t d : captured.deps) w.u32(d);
    w.u8(n.enabled ? 1 : 0);
    switch (captured.kind) {
      case node_kind::kernel: {
        const code::loaded_kernel* k = find_kernel(n.kernel);
        if (!k)
          return fail(errc::not_found, who + ": its kernel '" + n.kernel.name +
                                           "' is in none of the executables given to save (pass the executable it was loaded from)");
        w.u32(kernel_index(k));
        for (std::uint32_t v : {n.grid.x, n.grid.y, n.grid.z}) w.u32(v);
        for (std::uint32_t v : {n.block.x, n.block.y, n.block.z}) w.u32(v);
        std::vector<std::byte> args = n.args;
        for (std::uint32_t off : n.pointers)
          if (off + 8u <= args.size()) std::memset(args.data() + off, 0, 8);  // saved as addresses below
        w.u32(static_cast<std::uint32_t>(args.size()));
        w.raw(args);
        w.u32(static_cast<std::uint32_t>(n.pointers.size()));
        for (std::uint32_t off : n.pointers) {
          if (off + 8u > n.args.size()) return fail(errc::invalid_argument, who + ": a pointer argument past the arguments' end");
          std::uint64_t p;
          std::memcpy(&p, n.args.data() + off, 8);
          w.u32(off);
          put_address(w, p, flat, who, "its pointer argument at byte " + std::to_string(off));
        }
        w.u8(n.counts ? 1 : 0);
        if (n.counts) put_address(w, n.counts.value, flat, who, "its workgroup counts");
        return;
      }
      case node_kind::copy:
      case node_kind::fill:
      case node_kind::timestamp:
        put_address(w, n.dst.value, flat, who, "its destination");
        put_address(w, captured.kind == node_kind::copy ? n.src.value : 0, flat, who, "its source");
        w.u64(n.bytes);
        w.u32(n.value32);
        return;
      case node_kind::signal_wait:
      case node_kind::signal_record:
        return fail(errc::not_supported, who + ": a node that waits for or sets a signal cannot be saved (a signal is a value of this process)");
      case node_kind::host:
        if (captured.label.empty())
          return fail(errc::not_supported, who + ": a host node without a label cannot be saved (a load gives host functions by label)");
        note_host(captured.label);
        return;
      case node_kind::child:
        if (!captured.child) return fail(errc::invalid_argument, who + ": no graph");
        if (depth + 1 > saved_max_depth) return fail(errc::not_supported, who + ": nested too deep");
        put_graph(w, *captured.child, inner(scope, i, 0), depth + 1);
        return;
      case node_kind::conditional:
        w.u8(static_cast<std::uint8_t>(captured.condition));
        put_address(w, n.dst.value, flat, who, "its condition word");
        w.u32(captured.max_iterations);
        w.u32(static_cast<std::uint32_t>(captured.bodies.size()));
        for (std::uint32_t b = 0; b < captured.bodies.size() && !failed_; ++b) {
          if (!captured.bodies[b]) return fail(errc::invalid_argument, who + ": body " + std::to_string(b) + " is empty");
          put_graph(w, *captured.bodies[b], inner(scope, i, b), depth + 1);
        }
        return;
      case node_kind::mem_alloc:
        w.u64(captured.bytes);
        w.u32(gpu_index(captured.pool_agent));
        w.u8(static_cast<std::uint8_t>(captured.pool_kind));
        return;
      case node_kind::mem_free: put_address(w, captured.dst.value, no_index, who, "the allocation it frees"); return;
    }
  }

  // An address as a reference to what holds it (see the header comment).
  void put_address(saved_writer& w, std::uint64_t a, std::uint32_t flat, const std::string& who, const std::string& what) {
    if (a == 0) {
      w.u8(static_cast<std::uint8_t>(saved_address::literal));
      w.u64(0);
      return;
    }
    if (exec_ && flat != no_index && !is_placeholder(a))  // graph memory at its pool address: the allocation live here
      for (std::size_t k = 0; k < exec_->mem.allocs.size(); ++k) {
        const graph_allocation& x = exec_->mem.allocs[k];
        const std::uint64_t base = exec_->mem.address(x);
        const bool live = live_after_alloc_[k][flat] && !(x.free != no_index && flat < x.after_free.size() && x.after_free[flat]);
        if (live && a >= base && a - base < x.bytes) {
          a = x.placeholder + (a - base);
          break;
        }
      }
    for (std::uint32_t k = 0; k < allocs_.size(); ++k)
      if (a >= allocs_[k] && a - allocs_[k] <= alloc_bytes_[k]) {
        w.u8(static_cast<std::uint8_t>(saved_address::allocation));
        w.u32(k);
        w.u64(a - allocs_[k]);
        return;
      }
    for (std::uint32_t k = 0; k < bindings_.size(); ++k)
      if (a >= bindings_[k].va.value && a - bindings_[k].va.value <= bindings_[k].bytes) {
        w.u8(static_cast<std::uint8_t>(saved_address::buffer));
        w.u32(k);
        w.u64(a - bindings_[k].va.value);
        return;
      }
    char hex[24];
    std::snprintf(hex, sizeof hex, "0x%llx", static_cast<unsigned long long>(a));
    fail(errc::invalid_argument, who + ": " + what + " (" + hex +
                                     ") is in no named buffer (task_graph::name) and no graph memory; a saved graph can refer only to "
                                     "memory a load can give it again");
  }

  [[nodiscard]] std::uint32_t inner(std::uint32_t scope, std::uint32_t node_index, std::uint32_t branch) const noexcept {
    if (!exec_ || scope >= exec_->p.scopes.size()) return no_index;
    for (const inner_scope& x : exec_->p.scopes[scope].inner)
      if (x.node == node_index && x.branch == branch) return x.scope;
    return no_index;
  }
  [[nodiscard]] const code::loaded_kernel* find_kernel(const runtime::untyped_kernel& k) const noexcept {
    for (const runtime::executable* e : code_)
      if (e)
        for (const code::loaded_kernel& x : e->kernels())
          if (x.kernel_object == k.object) return &x;
    return nullptr;
  }
  std::uint32_t kernel_index(const code::loaded_kernel* k) {
    for (std::uint32_t i = 0; i < kernels_.size(); ++i)
      if (kernels_[i] == k) return i;
    kernels_.push_back(k);
    return static_cast<std::uint32_t>(kernels_.size() - 1);
  }
  std::uint32_t queue_index(const queue_binding& q) {
    for (std::uint32_t i = 0; i < queues_.size(); ++i)
      if (queues_[i] == q) return i;
    queues_.push_back(q);
    return static_cast<std::uint32_t>(queues_.size() - 1);
  }
  std::uint32_t gpu_index(const runtime::detail::agent_state* a) {
    for (std::uint32_t i = 0; i < gpus_.size(); ++i)
      if (gpus_[i] == a) return i;
    gpus_.push_back(a);
    return static_cast<std::uint32_t>(gpus_.size() - 1);
  }
  // A binding's GPU (by gpu_id): one of the graph's GPUs (a buffer on a GPU none of the graph's
  // queues or pools is on is recorded as ~0: any GPU may give it at load).
  [[nodiscard]] std::uint32_t gpu_of_id(std::uint32_t id) const noexcept {
    for (std::uint32_t i = 0; i < gpus_.size(); ++i)
      if (gpus_[i]->node->gpu_id == id) return i;
    return no_index;
  }
  void note_host(const std::string& label) {
    for (const std::string& h : hosts_)
      if (h == label) return;
    hosts_.push_back(label);
  }
  void fail(errc c, std::string why) {
    if (!failed_) failed_ = failure(c, "save: " + std::move(why));
  }

  const executables& code_;
  const exec_state* exec_;
  std::vector<std::vector<bool>> live_after_alloc_;
  std::vector<const runtime::detail::agent_state*> gpus_;
  std::vector<queue_binding> queues_;
  std::vector<const code::loaded_kernel*> kernels_;
  std::vector<task_graph::binding> bindings_;
  std::vector<std::string> hosts_;
  std::vector<std::uint64_t> allocs_, alloc_bytes_;  // placeholders of the mem_alloc nodes, in writing order
  std::uint64_t total_nodes_ = 0;
  std::optional<failure> failed_;
};

// Loading: a bounds-checked cursor. The first error sticks (later reads return 0), so the parser
// checks `bad()` where a wrong value would drive a loop or an index.
class saved_reader {
 public:
  explicit saved_reader(std::span<const std::byte> b) noexcept : r_(b) {}
  std::uint8_t u8() { return get<std::uint8_t>(); }
  std::uint32_t u32() { return get<std::uint32_t>(); }
  std::uint64_t u64() { return get<std::uint64_t>(); }
  std::string str() {
    const std::uint32_t n = u32();
    if (bad() || !r_.has(at_, n)) {
      fail("a string of " + std::to_string(n) + " bytes runs past the end");
      return {};
    }
    std::string s(reinterpret_cast<const char*>(r_.bytes().data() + at_), n);
    at_ += n;
    return s;
  }
  std::vector<std::byte> raw(std::uint32_t n) {
    if (bad() || !r_.has(at_, n)) {
      fail(std::to_string(n) + " bytes run past the end");
      return {};
    }
    std::vector<std::byte> v(r_.bytes().begin() + static_cast<std::ptrdiff_t>(at_), r_.bytes().begin() + static_cast<std::ptrdiff_t>(at_ + n));
    at_ += n;
    return v;
  }
  // A count of items of at least `min_bytes` each: refused when they cannot fit in what is left.
  std::uint32_t count(std::uint64_t min_bytes, std::string_view what) {
    const std::uint32_t n = u32();
    if (!bad() && std::uint64_t{n} * min_bytes > r_.size() - at_)
      fail(std::to_string(n) + " " + std::string(what) + " cannot fit in the " + std::to_string(r_.size() - at_) + " bytes left");
    return bad() ? 0 : n;
  }
  void fail(std::string why) {
    if (!err_) err_ = failure(errc::unsupported_format, "saved graph: at byte " + std::to_string(at_) + ": " + std::move(why));
  }
  void fail(errc c, std::string why) {
    if (!err_) err_ = failure(c, "load: " + std::move(why));
  }
  [[nodiscard]] bool bad() const noexcept { return err_.has_value(); }
  [[nodiscard]] const failure& error() const noexcept { return *err_; }
  [[nodiscard]] std::uint64_t at() const noexcept { return at_; }
  [[nodiscard]] std::uint64_t left() const noexcept { return r_.size() - at_; }

 private:
  template <class T>
  T get() {
    if (bad()) return 0;
    auto v = r_.get<T>(at_);
    if (!v) {
      fail("the file ends early (truncated)");
      return 0;
    }
    at_ += sizeof(T);
    return *v;
  }
  code::byte_reader r_;
  std::uint64_t at_ = 0;
  std::optional<failure> err_;
};

// The header and tables (everything before the root graph).
inline void read_saved_tables(saved_reader& r, saved_graph_info& info, std::uint32_t& allocs) {
  const auto magic = r.raw(8);
  if (r.bad() || std::memcmp(magic.data(), saved_graph_magic, 8) != 0) {
    if (!r.bad()) r.fail("not a saved aqueduct graph (no \"AQDGRAPH\" magic)");
    return;
  }
  info.version = r.u32();
  if (!r.bad() && info.version != saved_graph_version)
    return r.fail("format version " + std::to_string(info.version) + "; this aqueduct reads version " + std::to_string(saved_graph_version));
  if (const std::uint32_t flags = r.u32(); flags != 0) return r.fail("unknown flags " + std::to_string(flags));
  info.gpus.resize(r.count(8, "GPUs"));
  for (auto& g : info.gpus) {
    g.processor = r.str();
    g.gpu_id = r.u32();
  }
  info.queues.resize(r.count(5, "queues"));
  for (auto& q : info.queues) {
    const std::uint8_t t = r.u8();
    q.gpu = r.u32();
    if (r.bad()) return;
    if (t < 1 || t > 3) return r.fail("queue type " + std::to_string(t));
    if (q.gpu >= info.gpus.size()) return r.fail("a queue on GPU " + std::to_string(q.gpu) + " of " + std::to_string(info.gpus.size()));
    q.type = static_cast<queue_type>(t);
  }
  info.kernels.resize(r.count(20, "kernels"));
  for (auto& k : info.kernels) {
    k.name = r.str();
    k.processor = r.str();
    k.digest = r.u64();
    k.kernarg_size = r.u32();
  }
  info.buffers.resize(r.count(16, "buffers"));
  for (auto& b : info.buffers) {
    b.name = r.str();
    b.bytes = r.u64();
    b.gpu = r.u32();
    if (!r.bad() && b.gpu != no_index && b.gpu >= info.gpus.size()) return r.fail("buffer '" + b.name + "' on an unknown GPU");
  }
  info.host_labels.resize(r.count(4, "host labels"));
  for (auto& h : info.host_labels) h = r.str();
  allocs = r.count(1, "allocations");
  info.nodes = r.u64();
}

// What the tables resolve to in this process.
struct load_tables {
  std::vector<runtime::detail::agent_state*> gpus;  // null: no queue on it given
  std::vector<runtime::untyped_kernel> kernels;
  std::vector<load_context::named> buffers;
  std::vector<const std::function<void()>*> hosts;
  std::vector<std::uint64_t> allocs, alloc_bytes;  // fresh placeholders, in file order
  std::uint32_t alloc_count = 0;
};

class graph_loader {
 public:
  graph_loader(saved_reader& r, const saved_graph_info& info, load_tables& t, const load_context& ctx)
      : r_(r), info_(info), t_(t), ctx_(ctx) {}

  void read_graph(task_graph& g, std::uint32_t depth) {
    if (depth > saved_max_depth) return r_.fail("graphs nested deeper than " + std::to_string(saved_max_depth));
    const std::uint32_t n = r_.count(16, "nodes");
    for (std::uint32_t i = 0; i < n && !r_.bad(); ++i) {
      if (++nodes_read_ > info_.nodes) return r_.fail("more nodes than the header says (" + std::to_string(info_.nodes) + ")");
      node x = read_node(i, depth);
      if (!r_.bad()) check_queue(x, i);
      if (!r_.bad()) (void)g.add(std::move(x));
    }
  }
  [[nodiscard]] std::uint64_t nodes_read() const noexcept { return nodes_read_; }

 private:
  // A kind on a queue the capture could have put it on (instantiation then lowers it).
  void check_queue(const node& x, std::uint32_t index) {
    const queue_type t = x.queue.type;
    bool fits = false;
    switch (x.kind) {
      case node_kind::kernel: fits = t == queue_type::pm4 || (t == queue_type::aql && !x.counts); break;
      case node_kind::copy:
      case node_kind::fill: fits = t == queue_type::sdma; break;
      case node_kind::timestamp: fits = t != queue_type::none; break;
      case node_kind::conditional: fits = t == queue_type::pm4 || t == queue_type::sdma; break;
      case node_kind::host:
      case node_kind::child:
      case node_kind::mem_alloc:
      case node_kind::mem_free: fits = t == queue_type::none; break;
      case node_kind::signal_wait:
      case node_kind::signal_record: break;
    }
    if (!fits) r_.fail("node " + std::to_string(index) + ": a " + to_string(x.kind) + (x.counts ? " (indirect)" : "") + " node on " +
                       (t == queue_type::none ? std::string("no queue") : std::string("an ") + to_string(t) + " queue"));
  }

  node read_node(std::uint32_t index, std::uint32_t depth) {
    node x;
    const std::uint8_t kind = r_.u8();
    const std::uint32_t q = r_.u32();
    x.label = r_.str();
    x.at = r_.str();
    const std::uint32_t nd = r_.count(4, "edges");
    for (std::uint32_t d = 0; d < nd && !r_.bad(); ++d) {
      const std::uint32_t dep = r_.u32();
      if (!r_.bad() && dep >= index) {
        r_.fail("node " + std::to_string(index) + " waits for node " + std::to_string(dep) + ", which does not come before it");
        return x;
      }
      x.deps.push_back(dep);
    }
    x.enabled = r_.u8() != 0;
    if (r_.bad()) return x;
    if (kind > static_cast<std::uint8_t>(node_kind::mem_free)) {
      r_.fail("node kind " + std::to_string(kind));
      return x;
    }
    x.kind = static_cast<node_kind>(kind);
    if (q > ctx_.queues().size()) {
      r_.fail("node " + std::to_string(index) + " on queue " + std::to_string(q - 1) + " of " + std::to_string(info_.queues.size()));
      return x;
    }
    if (q) x.queue = ctx_.queues()[q - 1];
    switch (x.kind) {
      case node_kind::kernel: {
        const std::uint32_t k = r_.u32();
        if (!r_.bad() && k >= t_.kernels.size()) {
          r_.fail("kernel " + std::to_string(k) + " of " + std::to_string(t_.kernels.size()));
          return x;
        }
        x.grid.x = r_.u32(), x.grid.y = r_.u32(), x.grid.z = r_.u32();
        std::uint32_t b[3] = {r_.u32(), r_.u32(), r_.u32()};
        if (!r_.bad() && (b[0] > 0xFFFF || b[1] > 0xFFFF || b[2] > 0xFFFF)) {
          r_.fail("a block dimension above 65535");
          return x;
        }
        x.block = runtime::block{static_cast<std::uint16_t>(b[0]), static_cast<std::uint16_t>(b[1]), static_cast<std::uint16_t>(b[2])};
        const std::uint32_t na = r_.u32();
        x.args = r_.raw(na);
        if (r_.bad()) return x;
        x.kernel = t_.kernels[k];
        if (x.args.size() != x.kernel.kernarg_size) {
          r_.fail("kernel '" + x.kernel.name + "' with " + std::to_string(x.args.size()) + " argument bytes; it takes " +
                  std::to_string(x.kernel.kernarg_size));
          return x;
        }
        const std::uint32_t np = r_.count(13, "pointer arguments");
        for (std::uint32_t p = 0; p < np && !r_.bad(); ++p) {
          const std::uint32_t off = r_.u32();
          const std::uint64_t a = address();
          if (r_.bad()) return x;
          if (std::uint64_t{off} + 8 > x.args.size()) {
            r_.fail("a pointer argument at byte " + std::to_string(off) + " past the arguments' end");
            return x;
          }
          std::memcpy(x.args.data() + off, &a, 8);
          x.pointers.push_back(off);
        }
        if (r_.u8() != 0) x.counts = gpu_va(address());
        return x;
      }
      case node_kind::copy:
      case node_kind::fill:
      case node_kind::timestamp:
        x.dst = gpu_va(address());
        x.src = gpu_va(address());
        x.bytes = r_.u64();
        x.value32 = r_.u32();
        return x;
      case node_kind::signal_wait:
      case node_kind::signal_record: r_.fail("a signal node (saving refuses them)"); return x;
      case node_kind::host:
        for (std::size_t h = 0; h < info_.host_labels.size(); ++h)
          if (info_.host_labels[h] == x.label) x.fn = *t_.hosts[h];
        if (!x.fn) r_.fail("a host node \"" + x.label + "\" the file's host labels do not list");
        return x;
      case node_kind::child: {
        auto c = std::make_shared<task_graph>();
        read_graph(*c, depth + 1);
        x.child = std::move(c);
        return x;
      }
      case node_kind::conditional: {
        const std::uint8_t c = r_.u8();
        if (!r_.bad() && c > static_cast<std::uint8_t>(condition_kind::while_loop)) {
          r_.fail("condition kind " + std::to_string(c));
          return x;
        }
        x.condition = static_cast<condition_kind>(c);
        x.dst = gpu_va(address());
        x.max_iterations = r_.u32();
        const std::uint32_t nb = r_.count(4, "bodies");
        for (std::uint32_t b = 0; b < nb && !r_.bad(); ++b) {
          auto body = std::make_shared<task_graph>();
          read_graph(*body, depth + 1);
          x.bodies.push_back(std::move(body));
        }
        return x;
      }
      case node_kind::mem_alloc: {
        x.bytes = r_.u64();
        const std::uint32_t gpu = r_.u32();
        const std::uint8_t kind2 = r_.u8();
        if (r_.bad()) return x;
        if (x.bytes == 0 || x.bytes > (std::uint64_t{1} << 60)) {
          r_.fail("an allocation of " + std::to_string(x.bytes) + " bytes");
          return x;
        }
        if (gpu >= t_.gpus.size() || !t_.gpus[gpu]) {
          r_.fail(errc::invalid_argument, "graph memory on saved GPU " + std::to_string(gpu) + ", which none of the queues given is on");
          return x;
        }
        if (kind2 > static_cast<std::uint8_t>(runtime::memory_kind::device_host_visible)) {
          r_.fail("memory kind " + std::to_string(kind2));
          return x;
        }
        if (t_.allocs.size() >= t_.alloc_count) {
          r_.fail("more allocations than the header says (" + std::to_string(t_.alloc_count) + ")");
          return x;
        }
        x.pool_agent = t_.gpus[gpu];
        x.pool_kind = static_cast<runtime::memory_kind>(kind2);
        x.dst = gpu_va(next_placeholder(x.bytes));
        t_.allocs.push_back(x.dst.value);
        t_.alloc_bytes.push_back(x.bytes);
        return x;
      }
      case node_kind::mem_free: x.dst = gpu_va(address()); return x;
    }
    return x;
  }

  std::uint64_t address() {
    const std::uint8_t tag = r_.u8();
    if (tag == static_cast<std::uint8_t>(saved_address::literal)) return r_.u64();
    const std::uint32_t k = r_.u32();
    const std::uint64_t off = r_.u64();
    if (r_.bad()) return 0;
    if (tag == static_cast<std::uint8_t>(saved_address::buffer)) {
      if (k >= t_.buffers.size() || off > info_.buffers[k].bytes) {
        r_.fail("an address " + std::to_string(off) + " bytes into buffer " + std::to_string(k) + " of " + std::to_string(t_.buffers.size()));
        return 0;
      }
      return t_.buffers[k].va.value + off;
    }
    if (tag == static_cast<std::uint8_t>(saved_address::allocation)) {
      if (k >= t_.allocs.size() || off > t_.alloc_bytes[k]) {
        r_.fail("an address in allocation " + std::to_string(k) + " (" + std::to_string(t_.allocs.size()) + " allocated before it)");
        return 0;
      }
      return t_.allocs[k] + off;
    }
    r_.fail("address tag " + std::to_string(tag));
    return 0;
  }

  saved_reader& r_;
  const saved_graph_info& info_;
  load_tables& t_;
  const load_context& ctx_;
  std::uint64_t nodes_read_ = 0;
};

// Resolves the tables against what the load was given; the reasons a load is refused.
inline result<void> resolve_saved(const saved_graph_info& info, const load_context& ctx, load_tables& t) {
  if (ctx.queues().size() != info.queues.size())
    return failure(errc::invalid_argument, "load: the graph runs on " + std::to_string(info.queues.size()) + " queues, " +
                                               std::to_string(ctx.queues().size()) + " were given\n" + info.describe());
  t.gpus.assign(info.gpus.size(), nullptr);
  for (std::size_t i = 0; i < info.queues.size(); ++i) {
    const queue_binding& q = ctx.queues()[i];
    const saved_graph_info::queue& s = info.queues[i];
    if (q.type != s.type)
      return failure(errc::invalid_argument, "load: queue " + std::to_string(i) + " was an " + to_string(s.type) + " queue; an " +
                                                 to_string(q.type) + " queue was given");
    const std::string isa = q.agent->node->gfx_name();
    if (isa != info.gpus[s.gpu].processor)
      return failure(errc::no_compatible_isa, "load: queue " + std::to_string(i) + " ran on a " + info.gpus[s.gpu].processor +
                                                  " GPU; the queue given is on a " + isa + " (gpu_id " + std::to_string(q.agent->node->gpu_id) +
                                                  "): the graph's kernels and packets were made for " + info.gpus[s.gpu].processor);
    if (t.gpus[s.gpu] && t.gpus[s.gpu] != q.agent)
      return failure(errc::invalid_argument, "load: queue " + std::to_string(i) + " is on another GPU than the queues saved with it on GPU " +
                                                 std::to_string(s.gpu) + " (gpu_id " + std::to_string(t.gpus[s.gpu]->node->gpu_id) + ")");
    t.gpus[s.gpu] = q.agent;
  }
  for (const saved_graph_info::kernel& k : info.kernels) {
    const runtime::executable* found = nullptr;
    std::string why;
    bool isa = false;  // the mismatch found is the processor
    for (const runtime::executable* e : ctx.executables())
      if (e)
        for (const code::loaded_kernel& x : e->kernels()) {
          if (x.name != k.name) continue;
          if (x.processor != k.processor)
            isa = true, why = "the executable given holds " + x.processor + " code for it, the graph was saved with " + k.processor + " code";
          else if (x.code_digest != k.digest) {
            char a[20], b[20];
            std::snprintf(a, sizeof a, "%016llx", static_cast<unsigned long long>(k.digest));
            std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(x.code_digest));
            isa = false, why = std::string("the executable given holds other code under that name (code object digest ") + b + ", saved " + a + ")";
          } else if (!found)
            found = e;
        }
    if (!found) {
      if (why.empty()) return failure(errc::not_found, "load: kernel '" + k.name + "' is in none of the executables given");
      return failure(isa ? errc::no_compatible_isa : errc::hash_mismatch, "load: kernel '" + k.name + "': " + why);
    }
    AQUEDUCT_TRY(auto uk, found->try_get_untyped_kernel(k.name));
    if (uk.kernarg_size != k.kernarg_size)
      return failure(errc::hash_mismatch, "load: kernel '" + k.name + "' takes " + std::to_string(uk.kernarg_size) + " argument bytes, saved " +
                                              std::to_string(k.kernarg_size));
    t.kernels.push_back(std::move(uk));
  }
  for (const saved_graph_info::buffer& b : info.buffers) {
    const load_context::named* given = nullptr;
    for (const load_context::named& x : ctx.buffers())
      if (x.name == b.name) given = &x;
    if (!given) return failure(errc::not_found, "load: no buffer named '" + b.name + "' was given (the graph uses " + std::to_string(b.bytes) + " bytes of it)");
    if (given->bytes < b.bytes)
      return failure(errc::invalid_argument, "load: buffer '" + b.name + "' holds " + std::to_string(given->bytes) + " bytes, the graph uses " +
                                                 std::to_string(b.bytes));
    if (b.gpu != no_index && t.gpus[b.gpu] && t.gpus[b.gpu]->node->gpu_id != given->gpu_id)
      return failure(errc::invalid_argument, "load: buffer '" + b.name + "' is on gpu_id " + std::to_string(given->gpu_id) +
                                                 "; the graph's queues on its GPU are on gpu_id " + std::to_string(t.gpus[b.gpu]->node->gpu_id));
    t.buffers.push_back(*given);
  }
  for (const std::string& h : info.host_labels) {
    const std::function<void()>* fn = nullptr;
    for (const auto& [label, f] : ctx.hosts())
      if (label == h && f) fn = &f;
    if (!fn) return failure(errc::not_found, "load: no host function was given for the host node \"" + h + "\"");
    t.hosts.push_back(fn);
  }
  return ok();
}

}  // namespace detail

inline std::string saved_graph_info::describe() const {
  std::string s = "a saved graph (format " + std::to_string(version) + ") of " + std::to_string(nodes) + " nodes; it needs:\n";
  for (std::size_t i = 0; i < queues.size(); ++i)
    s += "  queue " + std::to_string(i) + ": " + to_string(queues[i].type) + " on a " + gpus[queues[i].gpu].processor + " GPU (saved GPU " +
         std::to_string(queues[i].gpu) + ")\n";
  for (const kernel& k : kernels) s += "  kernel '" + k.name + "' (" + k.processor + ")\n";
  for (const buffer& b : buffers) s += "  buffer '" + b.name + "' of at least " + std::to_string(b.bytes) + " bytes\n";
  for (const std::string& h : host_labels) s += "  host function \"" + h + "\"\n";
  return s;
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
