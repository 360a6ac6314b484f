// aqueduct/graph/task.hpp — `task<T>`: the lazy coroutine every graph program is written in.
//
// Layer: graph. A task does nothing until it is awaited (by another task, when_all or
// sync_wait); it is [[nodiscard]], so a call whose task is dropped warns. Its result — a value or
// the exception that escaped its body — stays in its frame until the awaiting coroutine takes it:
// `co_await child()` returns the value or rethrows the exception there. Completion hands control
// to the awaiting coroutine by symmetric transfer (final_suspend returns its handle), so a chain
// of tasks that finish synchronously never grows the stack (where the compiler makes it a tail
// call: clang always, GCC when optimising — docs/graph.md). Frames come from the recycling
// frame_allocator: a task call in steady state allocates nothing from the heap.
// Every co_await in a task goes through the promise's await_transform, which gives the awaited
// operation the task's context (graph/context.hpp: reactor, stop state, capture strand) and the
// co_await's std::source_location:
//   - a task: started with the awaiting task's context;
//   - a graph operation (a type with `lower(detail::context&, std::source_location)`, e.g. a
//     dispatch of graph/eager.hpp): lowered to what this run does with it — submitted now, or
//     recorded into the graph being captured;
//   - a type with an `awaitable_traits` specialisation (runtime tickets, signals): the same;
//   - `aqueduct::result<T>`: refused at compile time (the try_ call already ran synchronously);
//   - anything else is awaited unchanged.
// Destroying a task destroys its frame in whatever state it is (never started, suspended,
// completed, failed): locals and parameters are destroyed, a pending wait unlinks itself from
// the reactor (which must still be alive), an unclaimed exception is dropped.
// Thread safety: a task is moved between threads freely but run by one reactor at a time.
#pragma once

#include <aqueduct/core/assert.hpp>
#include <aqueduct/core/result.hpp>
#include <aqueduct/graph/context.hpp>
#include <aqueduct/graph/frame_allocator.hpp>

#include <atomic>
#include <concepts>
#include <coroutine>
#include <cstddef>
#include <exception>
#include <optional>
#include <source_location>
#include <type_traits>
#include <utility>

namespace aqueduct::graph {

template <class T = void>
class task;

namespace detail {

// Specialised (e.g. in graph/eager.hpp) for a type graph/ cannot add a member to.
template <class A>
struct awaitable_traits {};

template <class A>
concept graph_operation = requires(A&& a, context& c, std::source_location l) { static_cast<A&&>(a).lower(c, l); };
template <class A>
concept traits_operation = requires(A&& a, context& c, std::source_location l) {
  awaitable_traits<std::remove_cvref_t<A>>::lower(static_cast<A&&>(a), c, l);
};

template <class A>
inline constexpr bool is_task_v = false;
template <class U>
inline constexpr bool is_task_v<task<U>> = true;
template <class A>
inline constexpr bool is_result_v = false;
template <class U>
inline constexpr bool is_result_v<aqueduct::result<U>> = true;

// when_all's join point: the last branch to finish resumes the awaiting coroutine.
struct join_counter {
  std::atomic<std::size_t> remaining{0};
  std::coroutine_handle<> parent{};
  stop_state* stop = nullptr;  // a failing branch stops its siblings
  std::exception_ptr first{};  // the first failure in time (the others may be what it caused)
};

template <class T>
class task_awaiter;

class promise_base {
 public:
  static void* operator new(std::size_t n) { return frame_allocator::allocate(n); }
  static void operator delete(void* p, std::size_t n) noexcept { frame_allocator::deallocate(p, n); }

  std::suspend_always initial_suspend() const noexcept { return {}; }

  struct final_awaiter {
    [[nodiscard]] bool await_ready() const noexcept { return false; }
    template <class P>
    std::coroutine_handle<> await_suspend(std::coroutine_handle<P> h) const noexcept {
      promise_base& p = h.promise();
      if (join_counter* j = p.join_) {
        if (p.error_) {
          if (!j->first) j->first = p.error_;
          if (j->stop) j->stop->request_stop();
        }
        if (j->remaining.fetch_sub(1, std::memory_order_acq_rel) == 1) return j->parent;
        return std::noop_coroutine();
      }
      return p.continuation_ ? p.continuation_ : std::noop_coroutine();
    }
    void await_resume() const noexcept {}
  };
  final_awaiter final_suspend() const noexcept { return {}; }
  void unhandled_exception() noexcept { error_ = std::current_exception(); }

  template <class A>
  decltype(auto) await_transform(A&& a, std::source_location loc = std::source_location::current()) {
    using D = std::remove_cvref_t<A>;
    static_assert(!is_result_v<D>,
                  "co_await of an aqueduct::result: the try_ call it came from already ran (and waited) synchronously; "
                  "co_await the graph operation itself (e.g. q.dispatch(...) of graph/eager.hpp) instead");
    if constexpr (is_task_v<D>) {
      return task_awaiter<typename D::value_type>(a.handle_, ctx_);
    } else if constexpr (graph_operation<A>) {
      AQUEDUCT_ASSERT(ctx_, "a graph operation awaited in a task that no run started (use sync_wait, when_all or capture)");
      return static_cast<A&&>(a).lower(*ctx_, loc);
    } else if constexpr (traits_operation<A>) {
      AQUEDUCT_ASSERT(ctx_, "a graph operation awaited in a task that no run started (use sync_wait, when_all or capture)");
      return awaitable_traits<D>::lower(static_cast<A&&>(a), *ctx_, loc);
    } else {
      return static_cast<A&&>(a);
    }
  }

  [[nodiscard]] context* get_context() const noexcept { return ctx_; }
  void set_context(context* c) noexcept { ctx_ = c; }
  void set_continuation(std::coroutine_handle<> c) noexcept { continuation_ = c; }
  void set_join(join_counter* j) noexcept { join_ = j; }
  [[nodiscard]] bool failed() const noexcept { return static_cast<bool>(error_); }
  [[nodiscard]] const std::exception_ptr& exception() const noexcept { return error_; }

 protected:
  void rethrow_if_failed() const {
    if (error_) std::rethrow_exception(error_);
  }

 private:
  context* ctx_ = nullptr;
  std::coroutine_handle<> continuation_{};
  join_counter* join_ = nullptr;
  std::exception_ptr error_{};
};

template <class T>
class promise final : public promise_base {
 public:
  task<T> get_return_object() noexcept;
  template <class V>
    requires std::convertible_to<V&&, T>
  void return_value(V&& v) noexcept(std::is_nothrow_constructible_v<T, V&&>) {
    value_.emplace(std::forward<V>(v));
  }
  T result() {
    rethrow_if_failed();
    AQUEDUCT_ASSERT(value_.has_value(), "task result taken twice, or the task never ran");
    return std::move(*value_);
  }

 private:
  std::optional<T> value_;
};

template <class T>
class promise<T&> final : public promise_base {
 public:
  task<T&> get_return_object() noexcept;
  void return_value(T& v) noexcept { value_ = &v; }
  T& result() {
    rethrow_if_failed();
    return *value_;
  }

 private:
  T* value_ = nullptr;
};

template <>
class promise<void> final : public promise_base {
 public:
  task<void> get_return_object() noexcept;
  void return_void() noexcept {}
  void result() { rethrow_if_failed(); }
};

// Awaiting a task: attach the awaiting coroutine, hand the context down, start the task
// (symmetric transfer); its result or exception at await_resume.
template <class T>
class task_awaiter {
 public:
  using handle = std::coroutine_handle<promise<T>>;
  task_awaiter(handle h, context* c) noexcept : h_(h), ctx_(c) {
    AQUEDUCT_ASSERT(h_, "co_await of an empty (moved-from) task");
    AQUEDUCT_ASSERT(!h_.done(), "co_await of a task that already ran");
  }
  [[nodiscard]] bool await_ready() const noexcept { return false; }
  std::coroutine_handle<> await_suspend(std::coroutine_handle<> awaiting) noexcept {
    h_.promise().set_continuation(awaiting);
    h_.promise().set_context(ctx_);
    return h_;
  }
  decltype(auto) await_resume() { return h_.promise().result(); }

 private:
  handle h_;
  context* ctx_;
};

}  // namespace detail

template <class T>
class [[nodiscard]] task {
 public:
  using promise_type = detail::promise<T>;
  using value_type = T;
  using handle_type = std::coroutine_handle<promise_type>;

  task() noexcept = default;
  explicit task(handle_type h) noexcept : handle_(h) {}
  task(task&& o) noexcept : handle_(std::exchange(o.handle_, {})) {}
  task& operator=(task&& o) noexcept {
    if (this != &o) {
      reset();
      handle_ = std::exchange(o.handle_, {});
    }
    return *this;
  }
  task(const task&) = delete;
  task& operator=(const task&) = delete;
  ~task() { reset(); }

  [[nodiscard]] explicit operator bool() const noexcept { return static_cast<bool>(handle_); }
  // Ran to its end (returned or failed).
  [[nodiscard]] bool done() const noexcept { return handle_ && handle_.done(); }
  // The coroutine (for runs: sync_wait, when_all, capture).
  [[nodiscard]] handle_type handle() const noexcept { return handle_; }
  // Destroys the frame, in whatever state it is.
  void reset() noexcept {
    if (handle_) std::exchange(handle_, {}).destroy();
  }

 private:
  friend class detail::promise_base;
  handle_type handle_{};
};

namespace detail {
template <class T>
task<T> promise<T>::get_return_object() noexcept {
  return task<T>(std::coroutine_handle<promise<T>>::from_promise(*this));
}
template <class T>
task<T&> promise<T&>::get_return_object() noexcept {
  return task<T&>(std::coroutine_handle<promise<T&>>::from_promise(*this));
}
inline task<void> promise<void>::get_return_object() noexcept {
  return task<void>(std::coroutine_handle<promise<void>>::from_promise(*this));
}

// An awaiter that is ready at once with a value (context queries).
template <class V>
struct ready_awaiter {
  V value;
  [[nodiscard]] bool await_ready() const noexcept { return true; }
  void await_suspend(std::coroutine_handle<>) const noexcept {}
  V await_resume() noexcept(std::is_nothrow_move_constructible_v<V>) { return std::move(value); }
};
}  // namespace detail

// co_await get_stop_token(): the stop token of the awaiting task's run (when_all branch).
struct get_stop_token_op {
  [[nodiscard]] detail::ready_awaiter<stop_token> lower(detail::context& c, std::source_location) const noexcept {
    return {stop_token(c.stop)};
  }
};
[[nodiscard]] inline get_stop_token_op get_stop_token() noexcept { return {}; }

// co_await is_capturing(): whether the awaiting task is being captured (recorded, not run).
struct is_capturing_op {
  [[nodiscard]] detail::ready_awaiter<bool> lower(detail::context& c, std::source_location) const noexcept {
    return {c.capturing()};
  }
};
[[nodiscard]] inline is_capturing_op is_capturing() noexcept { return {}; }

}  // namespace aqueduct::graph
