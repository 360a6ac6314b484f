// aqueduct/graph/detail/graph_saver.hpp — writing a saved graph (graph/save.hpp; not API): the
// byte writer and the saver that walks a task_graph (or an exec_graph's current plan) and fills the
// tables the nodes refer to.
//
// Layer: graph. The format is docs/graph.md "Saving and loading".
// Thread safety: one saver per save.
#pragma once

#include <aqueduct/code/loader.hpp>
#include <aqueduct/core/result.hpp>
#include <aqueduct/graph/detail/exec_state.hpp>
#include <aqueduct/graph/detail/plan.hpp>
#include <aqueduct/graph/detail/pool.hpp>
#include <aqueduct/graph/saved_graph.hpp>
#include <aqueduct/graph/task_graph.hpp>
#include <aqueduct/runtime/kernel.hpp>

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

namespace aqueduct::graph::detail {

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
        std::vector<std::byte> args(n.args.begin(), n.args.end());
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
        const bool live = live_after_alloc_[k][flat] && !(flat < x.after_end.size() && x.after_end[flat]);
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

}  // namespace aqueduct::graph::detail
