// aqueduct/graph/when_all.hpp — `co_await when_all(a(), b(), ...)`: run tasks concurrently and
// resume when every one has finished.
//
// Layer: graph. Each branch runs with its own context: a stop state whose parent is the awaiting
// task's (so a stop of the run reaches every branch) and, inside capture(), its own capture
// strand forked from the awaiting task's (so branches record no edges between each other and the
// awaiting task depends on all of them afterwards). The branches are started one after another
// on the reactor's thread; each runs until it first suspends. The last to finish resumes the
// awaiting task (no extra frame, no allocation: the join counter lives in the awaiter, in the
// awaiting task's frame). If a branch fails, its siblings' stop is requested (their later
// operations fail with errc::cancelled, device work already submitted completes), every branch
// is still awaited, and the first failure in time is rethrown.
// Results: void if every task is task<void>; else a std::tuple with one element per task
// (`nothing` for a task<void>). when_all(std::vector<task<T>>) gives a std::vector<T> (or void).
// Thread safety: as task.
#pragma once

#include <aqueduct/graph/context.hpp>
#include <aqueduct/graph/task.hpp>

#include <array>
#include <coroutine>
#include <cstddef>
#include <exception>
#include <new>
#include <source_location>
#include <span>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace aqueduct::graph {

// The result of a task<void> branch in when_all's tuple.
struct nothing {
  friend constexpr bool operator==(nothing, nothing) noexcept = default;
};

namespace detail {

template <class T>
using branch_value = std::conditional_t<std::is_void_v<T>, nothing, T>;

// The part both forms share: the branches' stop state, their contexts, the join. Lives in the
// awaiting task's frame (the awaiter is never moved once co_await has it).
class when_all_base {
 protected:
  explicit when_all_base(context& parent) noexcept : parent_(&parent), stop_(parent.stop, parent.r) {}
  when_all_base(const when_all_base&) = delete;
  when_all_base& operator=(const when_all_base&) = delete;

  [[nodiscard]] context branch_context(std::size_t i) {
    context c{parent_->r, &stop_, nullptr, parent_->tr};
    if (parent_->capture) c.capture = parent_->capture->fork(i);
    return c;
  }
  void arm(std::coroutine_handle<> awaiting, std::size_t n) noexcept {
    join_.parent = awaiting;
    join_.stop = &stop_;
    join_.remaining.store(n + 1, std::memory_order_relaxed);
  }
  template <class P>
  void start(std::coroutine_handle<P> h, context& c) noexcept {
    h.promise().set_context(&c);
    h.promise().set_join(&join_);
    h.resume();
  }
  // The +1 that arm() kept: if every branch already finished, do not suspend.
  [[nodiscard]] bool release() noexcept { return join_.remaining.fetch_sub(1, std::memory_order_acq_rel) != 1; }
  void finish(std::span<capture_strand* const> strands) const {
    if (parent_->capture) parent_->capture->join(strands);
    if (join_.first) std::rethrow_exception(join_.first);
  }

  context* parent_;
  stop_state stop_;
  join_counter join_;
};

template <class... T>
class when_all_awaiter : when_all_base {
  static constexpr std::size_t n = sizeof...(T);

 public:
  when_all_awaiter(std::tuple<task<T>...>&& ts, context& c) : when_all_base(c), tasks_(std::move(ts)) {}

  [[nodiscard]] bool await_ready() const noexcept { return n == 0; }
  bool await_suspend(std::coroutine_handle<> awaiting) {
    for (std::size_t i = 0; i < n; ++i) ctx_[i] = branch_context(i);
    arm(awaiting, n);
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (start(std::get<I>(tasks_).handle(), ctx_[I]), ...);
    }(std::index_sequence_for<T...>{});
    return release();
  }
  decltype(auto) await_resume() {
    std::array<capture_strand*, n> strands{};
    for (std::size_t i = 0; i < n; ++i) strands[i] = ctx_[i].capture;
    finish(strands);
    if constexpr ((std::is_void_v<T> && ...)) {
      return;
    } else {
      return [&]<std::size_t... I>(std::index_sequence<I...>) {
        return std::tuple<branch_value<T>...>(result_of<T>(std::get<I>(tasks_))...);
      }(std::index_sequence_for<T...>{});
    }
  }

 private:
  template <class U>
  static branch_value<U> result_of(task<U>& t) {
    if constexpr (std::is_void_v<U>) {
      t.handle().promise().result();
      return nothing{};
    } else {
      return t.handle().promise().result();
    }
  }

  std::tuple<task<T>...> tasks_;
  std::array<context, n> ctx_{};
};

template <class T>
class when_all_vector_awaiter : when_all_base {
 public:
  when_all_vector_awaiter(std::vector<task<T>>&& ts, context& c) : when_all_base(c), tasks_(std::move(ts)) {}

  [[nodiscard]] bool await_ready() const noexcept { return tasks_.empty(); }
  bool await_suspend(std::coroutine_handle<> awaiting) {
    const std::size_t n = tasks_.size();
    ctx_.resize(n);
    strands_.resize(n);
    for (std::size_t i = 0; i < n; ++i) ctx_[i] = branch_context(i);
    arm(awaiting, n);
    for (std::size_t i = 0; i < n; ++i) start(tasks_[i].handle(), ctx_[i]);
    return release();
  }
  auto await_resume() {
    for (std::size_t i = 0; i < ctx_.size(); ++i) strands_[i] = ctx_[i].capture;
    finish(strands_);
    if constexpr (std::is_void_v<T>) {
      for (auto& t : tasks_) t.handle().promise().result();
    } else {
      std::vector<T> out;
      out.reserve(tasks_.size());
      for (auto& t : tasks_) out.push_back(t.handle().promise().result());
      return out;
    }
  }

 private:
  std::vector<task<T>> tasks_;
  std::vector<context> ctx_;
  std::vector<capture_strand*> strands_;
};

template <class... T>
class when_all_op {
 public:
  explicit when_all_op(task<T>&&... ts) : tasks_(std::move(ts)...) {}
  [[nodiscard]] when_all_awaiter<T...> lower(context& c, std::source_location) && {
    return when_all_awaiter<T...>(std::move(tasks_), c);
  }

 private:
  std::tuple<task<T>...> tasks_;
};

template <class T>
class when_all_vector_op {
 public:
  explicit when_all_vector_op(std::vector<task<T>>&& ts) : tasks_(std::move(ts)) {}
  [[nodiscard]] when_all_vector_awaiter<T> lower(context& c, std::source_location) && {
    return when_all_vector_awaiter<T>(std::move(tasks_), c);
  }

 private:
  std::vector<task<T>> tasks_;
};

}  // namespace detail

template <class... T>
[[nodiscard]] detail::when_all_op<T...> when_all(task<T>... ts) {
  return detail::when_all_op<T...>(std::move(ts)...);
}
template <class T>
[[nodiscard]] detail::when_all_vector_op<T> when_all(std::vector<task<T>> ts) {
  return detail::when_all_vector_op<T>(std::move(ts));
}

}  // namespace aqueduct::graph
