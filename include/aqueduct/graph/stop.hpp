// aqueduct/graph/stop.hpp — cancellation of graph tasks: stop states chained from the root of a
// run (sync_wait, a spawned task) down through each when_all, and the `stop_token` a task reads.
//
// Layer: graph. A stop state is a flag plus a link to its parent: a when_all's branches share a
// state whose parent is the awaiting task's, so a stop requested at the root, or a sibling's
// failure, reaches every branch below without callbacks or allocation (stop_requested() walks up
// the chain, which is as deep as when_alls are nested — only once some state of the tree was
// asked to stop: until then one flag, the root's, says no). Requesting a stop wakes the reactor that
// runs the tasks (its pending waits re-check). std::stop_token interoperates at the root
// (sync_wait_options::stop).
// What a stop does: every graph operation awaited afterwards fails with errc::cancelled before it
// submits anything; a wait for a host-side condition (a signal, a host callback's completion) ends
// early with errc::cancelled; device work already submitted is never abandoned — its wait
// completes normally, so no memory the device still uses is released early.
// Thread safety: request_stop from any thread; the rest from the thread running the tasks.
#pragma once

#include <atomic>

namespace aqueduct::graph {

namespace detail {

// Something that sleeps and can be woken from another thread (the reactor).
class wakeable {
 public:
  virtual void wake() noexcept = 0;

 protected:
  ~wakeable() = default;
};

class stop_state {
 public:
  stop_state() noexcept = default;
  explicit stop_state(const stop_state* parent, wakeable* waker = nullptr) noexcept
      : parent_(parent), waker_(waker), tree_(parent ? parent->tree_ : &any_) {}
  stop_state(const stop_state&) = delete;
  stop_state& operator=(const stop_state&) = delete;

  // One load while no stop was requested anywhere in the tree (every co_await of a graph
  // operation asks); the walk up the chain only after one was.
  [[nodiscard]] bool stop_requested() const noexcept {
    if (!tree_->load(std::memory_order_acquire)) return false;
    for (const stop_state* s = this; s; s = s->parent_)
      if (s->requested_.load(std::memory_order_acquire)) return true;
    return false;
  }
  // True the first time (a later call changes nothing).
  bool request_stop() noexcept {
    if (requested_.exchange(true, std::memory_order_acq_rel)) return false;
    // After this state's own flag: whoever sees the tree's flag (acquire) sees this one.
    tree_->store(true, std::memory_order_release);
    for (const stop_state* s = this; s; s = s->parent_)
      if (s->waker_) {
        s->waker_->wake();
        break;
      }
    return true;
  }
  void set_waker(wakeable* w) noexcept { waker_ = w; }
  [[nodiscard]] const stop_state* parent() const noexcept { return parent_; }

 private:
  std::atomic<bool> requested_{false};
  const stop_state* parent_ = nullptr;
  wakeable* waker_ = nullptr;
  // Set once any state of this tree (the root and every state below it) was asked to stop; the
  // root's own any_ (a child's tree_ is its root's: a child lives inside its parent's run).
  std::atomic<bool> any_{false};
  std::atomic<bool>* tree_ = &any_;
};

}  // namespace detail

// What a task reads to learn that its work should stop (co_await get_stop_token()).
class stop_token {
 public:
  stop_token() noexcept = default;
  explicit stop_token(const detail::stop_state* s) noexcept : s_(s) {}
  [[nodiscard]] bool stop_requested() const noexcept { return s_ && s_->stop_requested(); }
  [[nodiscard]] bool stop_possible() const noexcept { return s_ != nullptr; }

 private:
  const detail::stop_state* s_ = nullptr;
};

}  // namespace aqueduct::graph
