// aqueduct/graph/detail/graph_loader.hpp — reading a saved graph (graph/save.hpp; not API): a
// bounds-checked cursor, the tables, the nodes, and the checks of what a load was given.
//
// Layer: graph. Every length and count is checked against the bytes left before anything is
// allocated, every index against its table, every edge against the node order; the first
// inconsistency is errc::unsupported_format with its byte offset. The format is docs/graph.md
// "Saving and loading".
// Thread safety: one loader per load.
#pragma once

#include <aqueduct/code/bytes.hpp>
#include <aqueduct/code/loader.hpp>
#include <aqueduct/core/result.hpp>
#include <aqueduct/graph/detail/plan.hpp>
#include <aqueduct/graph/detail/pool.hpp>
#include <aqueduct/graph/saved_graph.hpp>
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

namespace aqueduct::graph::detail {

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
      case node_kind::fill: fits = t != queue_type::none; break;  // AQL, PM4: the shader copy
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
        {
          const std::vector<std::byte> raw = r_.raw(na);
          x.args.assign(raw.begin(), raw.end());
        }
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

}  // namespace aqueduct::graph::detail
