// aqueduct/graph/memory.hpp — graph memory: `co_await alloc<T>(gpu, n)` and `co_await free(b)`,
// the memory nodes of a graph (CUDA's graph memory alloc and free nodes, in their meaning).
//
// Layer: graph. alloc returns a `graph_buffer<T>`: n elements of T on `gpu` (device memory unless
// asked otherwise), passed to a dispatch like a runtime buffer (it converts to the kernel's
// pointer parameter) or to a copy by its va().
//   - eagerly: the memory is allocated now (runtime::agent::try_alloc) and freed by co_await
//     free(b), or when the graph_buffer is destroyed;
//   - inside capture(): a mem_alloc node is recorded and the buffer's addresses are placeholders
//     (graph/detail/pool.hpp: non-canonical addresses no device maps); co_await free(b) records
//     a mem_free node. The allocation lives from its alloc node to its free node (none: to the
//     end of the graph). Instantiation gives it an address in the exec graph's pool, shared with
//     allocations whose lifetimes it does not overlap, and rewrites the placeholders in every node
//     that uses it; every replay reuses those addresses (no allocation per replay). A use of the
//     memory outside its lifetime is refused at instantiation with the node named. A placeholder
//     used outside its graph (an eager dispatch, another graph) is not memory: the device faults
//     on it (eager), or instantiation refuses it (another graph).
// Addresses of graph memory are found in pointer parameters of typed dispatches and in copy,
// fill, timestamp and condition addresses; an address hidden inside a by-value argument (a
// struct) is not rewritten.
// Thread safety: operations are made and awaited on the reactor's thread.
#pragma once

#include <aqueduct/core/result.hpp>
#include <aqueduct/core/units.hpp>
#include <aqueduct/graph/context.hpp>
#include <aqueduct/graph/detail/pool.hpp>
#include <aqueduct/graph/task.hpp>
#include <aqueduct/graph/task_graph.hpp>
#include <aqueduct/runtime/agent.hpp>
#include <aqueduct/runtime/kernel_args.hpp>
#include <aqueduct/runtime/memory.hpp>

#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <source_location>
#include <string>
#include <type_traits>
#include <utility>

namespace aqueduct::graph {

namespace detail {
template <class T>
class alloc_op;
class free_op;
}  // namespace detail

// Memory a graph allocated (see the header comment): real memory when the task runs eagerly, a
// placeholder range inside capture().
template <class T>
class graph_buffer {
  static_assert(std::is_trivially_copyable_v<T>, "GPU buffers hold trivially copyable elements");

 public:
  using value_type = T;
  graph_buffer() = default;
  graph_buffer(graph_buffer&&) noexcept = default;
  graph_buffer& operator=(graph_buffer&&) noexcept = default;

  [[nodiscard]] gpu_va va() const noexcept { return va_; }
  [[nodiscard]] std::uint64_t address() const noexcept { return va_.value; }
  [[nodiscard]] std::size_t size() const noexcept { return count_; }
  [[nodiscard]] std::size_t size_bytes() const noexcept { return count_ * sizeof(T); }
  // Captured: a placeholder (no memory yet); the mem_alloc node that made it.
  [[nodiscard]] bool captured() const noexcept { return node_ ? true : false; }
  [[nodiscard]] node_id node() const noexcept { return node_; }
  [[nodiscard]] runtime::buffer_ref<T> ref() const noexcept { return {va_, static_cast<T*>(mem_.data()), count_}; }
  [[nodiscard]] explicit operator bool() const noexcept { return count_ != 0; }
  // As a kernel's pointer argument (a T* or a pointer T* converts to).
  template <class U>
    requires std::is_convertible_v<T*, U*>
  operator runtime::device_ptr<U>() const noexcept {  // NOLINT: implicit, like runtime::buffer's
    return runtime::device_ptr<U>::at(va_);
  }

 private:
  template <class>
  friend class detail::alloc_op;
  friend class detail::free_op;
  runtime::buffer<std::byte> mem_;  // eager: the memory
  gpu_va va_{};
  std::size_t count_ = 0;
  node_id node_{};
};

namespace detail {

template <class T>
class alloc_op {
 public:
  alloc_op(const runtime::agent& gpu, std::size_t count, runtime::memory_kind kind) noexcept : gpu_(&gpu), count_(count), kind_(kind) {}
  alloc_op&& label(std::string l) && {
    label_ = std::move(l);
    return std::move(*this);
  }
  struct awaiter {
    graph_buffer<T> b;
    [[nodiscard]] bool await_ready() const noexcept { return true; }
    void await_suspend(std::coroutine_handle<>) const noexcept {}
    graph_buffer<T> await_resume() noexcept { return std::move(b); }
  };
  [[nodiscard]] awaiter lower(context& c, std::source_location loc) && {
    if (c.stop_requested()) throw_cancelled("memory allocation", loc);
    if (count_ == 0 || count_ > std::numeric_limits<std::uint64_t>::max() / sizeof(T) / 2)
      throw_failure(failure(errc::invalid_argument, "alloc at " + where(loc) + ": the element count must be in [1, 2^63 / sizeof(T))"));
    const std::uint64_t bytes = std::uint64_t{count_} * sizeof(T);
    awaiter a;
    a.b.count_ = count_;
    if (c.capturing()) {
      node n;
      n.kind = node_kind::mem_alloc;
      n.label = std::move(label_);
      n.where = loc;
      n.bytes = bytes;
      n.dst = gpu_va(next_placeholder(bytes));
      n.pool_agent = &gpu_->state();
      n.pool_kind = kind_;
      a.b.va_ = n.dst;
      a.b.node_ = node_id{c.capture->record(std::move(n))};
      return a;
    }
    auto m = gpu_->try_alloc<std::byte>(bytes, kind_);
    if (!m) throw_failure(located(m.get_failure(), "alloc of " + std::to_string(bytes) + " bytes", loc));
    a.b.va_ = m->va();
    a.b.mem_ = std::move(*m);
    return a;
  }

 private:
  const runtime::agent* gpu_;
  std::size_t count_;
  runtime::memory_kind kind_;
  std::string label_;
};

class free_op {
 public:
  template <class T>
  explicit free_op(graph_buffer<T>& b) noexcept
      : mem_(&b.mem_), va_(&b.va_), count_(&b.count_), node_(&b.node_) {}
  struct awaiter {
    [[nodiscard]] bool await_ready() const noexcept { return true; }
    void await_suspend(std::coroutine_handle<>) const noexcept {}
    void await_resume() const noexcept {}
  };
  [[nodiscard]] awaiter lower(context& c, std::source_location loc) && {
    if (c.stop_requested()) throw_cancelled("memory free", loc);
    if (*count_ == 0) throw_failure(failure(errc::invalid_argument, "free at " + where(loc) + ": the buffer is empty (already freed?)"));
    if (c.capturing()) {
      if (!*node_)
        throw_failure(failure(errc::invalid_argument, "free at " + where(loc) +
                                                          ": this buffer was allocated eagerly, not by this capture (a capture frees only "
                                                          "what it allocated)"));
      node n;
      n.kind = node_kind::mem_free;
      n.where = loc;
      n.dst = *va_;
      (void)c.capture->record(std::move(n));
    } else {
      if (*node_)
        throw_failure(failure(errc::invalid_argument, "free at " + where(loc) +
                                                          ": this buffer is a graph allocation of a capture (a placeholder, not memory)"));
      mem_->reset();  // the eager run waited for the work before this co_await: nothing uses it now
    }
    *count_ = 0;
    *va_ = gpu_va{};
    *node_ = node_id{};
    return {};
  }

 private:
  runtime::buffer<std::byte>* mem_;
  gpu_va* va_;
  std::size_t* count_;
  node_id* node_;
};

}  // namespace detail

// co_await alloc<T>(gpu, n [, kind]): n elements of T on gpu (see the header comment).
template <class T>
[[nodiscard]] detail::alloc_op<T> alloc(const runtime::agent& gpu, std::size_t count,
                                        runtime::memory_kind kind = runtime::memory_kind::device) noexcept {
  return detail::alloc_op<T>(gpu, count, kind);
}
// co_await free(b): the end of b's lifetime (eagerly: freed now).
template <class T>
[[nodiscard]] detail::free_op free(graph_buffer<T>& b) noexcept {
  return detail::free_op(b);
}

}  // namespace aqueduct::graph
