// graph: task<T> — lazy start, values and exceptions through co_await, symmetric transfer (a
// 1,000,000-deep chain and 1,000,000 sequential awaits on a constant stack), lifetimes in every
// state (a counted probe, cppcoro style), and the recycling frame allocator (no heap allocation
// per task call in steady state, counted by the counting operator new).
#include <aqueduct/graph.hpp>

#include "allocation_counter.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

namespace aq = aqueduct;
namespace g = aqueduct::graph;

// Symmetric transfer (an await_suspend returning the next coroutine_handle) is a tail call — so a
// chain of synchronously completing tasks keeps a constant stack — with clang at every level, and
// with GCC before 15 only when optimising and not under AddressSanitizer: GCC 12 at -O0, and at
// -O1 -fsanitize=address, grows the stack per resumption (measured: a 1,000,000-deep chain
// overflows; libcoro issues #273 and #277 report it for GCC 11 and 13). ThreadSanitizer's
// function-exit hooks keep the call from being a tail call too (GCC 12 -O2 -fsanitize=thread: a
// deep chain exceeded TSan's 65,536-frame stack depot, "CHECK failed: sanitizer_stackdepot.cpp:83"). Only this test needs to
// know (the library behaves the same either way), so the detection lives here, not in config.hpp.
#if defined(__clang__)
#  define AQ_TEST_TAIL_CALLS 1
#elif defined(__GNUC__) && (__GNUC__ >= 15 || (defined(__OPTIMIZE__) && !AQUEDUCT_ASAN && !AQUEDUCT_TSAN))
#  define AQ_TEST_TAIL_CALLS 1
#else
#  define AQ_TEST_TAIL_CALLS 0
#endif

namespace {

// Counts live instances, constructions, copies and moves (cppcoro's `counted`).
struct counted {
  static inline int alive = 0, constructed = 0, copies = 0, moves = 0, destroyed = 0;
  static void reset() { alive = constructed = copies = moves = destroyed = 0; }
  int id = 0;
  explicit counted(int i = 0) : id(i) { ++alive, ++constructed; }
  counted(const counted& o) : id(o.id) { ++alive, ++copies; }
  counted(counted&& o) noexcept : id(o.id) { ++alive, ++moves; }
  ~counted() { --alive, ++destroyed; }
};

int body_runs = 0;
g::task<int> answer() {
  ++body_runs;
  co_return 42;
}
g::task<int> add(int a, int b) { co_return a + b; }
g::task<int> twice() {
  const int x = co_await answer();
  const int y = co_await add(x, 1);
  co_return x + y;
}

struct boom : std::runtime_error {
  using std::runtime_error::runtime_error;
};
g::task<int> throws(std::string what) {
  throw boom(what);
  co_return 0;
}
g::task<std::string> catches() {
  try {
    (void)co_await throws("inner failure");
  } catch (const boom& e) {
    co_return std::string("caught: ") + e.what();
  }
  co_return "not thrown";
}

int global_value = 7;
g::task<int&> ref() { co_return global_value; }

// The stack pointer's neighbourhood (a coroutine's own locals live in its heap frame, so the
// address has to come from an ordinary function it calls).
[[gnu::noinline]] std::uintptr_t stack_here() {
  volatile int marker = 0;
  return reinterpret_cast<std::uintptr_t>(&marker);
}

// A chain `depth` deep: each level awaits the next; the leaf records its stack address.
std::uintptr_t leaf_stack = 0;
g::task<std::uint64_t> chain(std::uint64_t depth) {
  if (depth == 0) {
    leaf_stack = stack_here();
    co_return 0;
  }
  co_return 1 + co_await chain(depth - 1);
}
std::uintptr_t loop_stack_first = 0, loop_stack_last = 0;
g::task<int> probe_stack() {
  const std::uintptr_t here = stack_here();
  if (!loop_stack_first) loop_stack_first = here;
  loop_stack_last = here;
  co_return 1;
}
g::task<std::uint64_t> sequential(std::uint64_t n) {
  std::uint64_t sum = 0;
  for (std::uint64_t i = 0; i < n; ++i) sum += co_await probe_stack();
  co_return sum;
}

[[maybe_unused]] std::uintptr_t distance(std::uintptr_t a, std::uintptr_t b) { return a > b ? a - b : b - a; }

#if AQ_TEST_TAIL_CALLS
constexpr std::uint64_t deep = 1'000'000;
#else
constexpr std::uint64_t deep = 5'000;  // the compiler does not make symmetric transfer a tail call
#endif

// A task that suspends on an event nobody sets (destroyed while suspended).
g::task<void> waits_forever(counted c, g::async_event& e) {
  counted local(2);
  co_await e;
  (void)c;
}
g::task<void> uses(counted c) {
  counted local(3);
  (void)c;
  co_return;
}
g::task<void> fails(counted c) {
  counted local(4);
  (void)c;
  throw boom("failed");
  co_return;
}

}  // namespace

TEST_CASE("a task is lazy: its body runs only when awaited") {
  body_runs = 0;
  auto t = answer();
  CHECK(body_runs == 0);
  CHECK(t);
  CHECK_FALSE(t.done());
  CHECK(g::sync_wait(std::move(t)) == 42);
  CHECK(body_runs == 1);
}

TEST_CASE("values flow through co_await; an exception is rethrown where the task is awaited") {
  CHECK(g::sync_wait(twice()) == 42 + 43);
  CHECK(g::sync_wait(catches()) == "caught: inner failure");
  CHECK_THROWS_AS(g::sync_wait(throws("to sync_wait")), boom);
  try {
    (void)g::sync_wait(throws("message kept"));
  } catch (const boom& e) {
    CHECK(std::string(e.what()) == "message kept");
  }
  int& r = g::sync_wait(ref());
  CHECK(&r == &global_value);
}

TEST_CASE("symmetric transfer: a deep chain and a long loop of synchronous awaits keep a constant stack") {
  leaf_stack = 0;
  CHECK(g::sync_wait(chain(10)) == 10);
  const std::uintptr_t shallow = leaf_stack;
  CHECK(g::sync_wait(chain(deep)) == deep);
  const std::uintptr_t deep_leaf = leaf_stack;
  loop_stack_first = loop_stack_last = 0;
  CHECK(g::sync_wait(sequential(deep)) == deep);
#if AQ_TEST_TAIL_CALLS
  // Without the tail call each level would add a frame of a few hundred bytes: a million of them
  // would be hundreds of MiB (and crash first). With it the leaf runs where the shallow one did.
  CHECK_MESSAGE(distance(shallow, deep_leaf) < 4096, "leaf stack moved by ", distance(shallow, deep_leaf), " bytes");
  CHECK_MESSAGE(distance(loop_stack_first, loop_stack_last) < 4096, "loop stack moved by ",
                distance(loop_stack_first, loop_stack_last), " bytes");
#else
  MESSAGE("this compiler/build does not make symmetric transfer a tail call (see AQ_TEST_TAIL_CALLS): "
          "depth limited to ", deep, ", stack constancy not checked");
  (void)shallow, (void)deep_leaf;
#endif
}

TEST_CASE("lifetimes: parameters and locals are destroyed exactly once in every state") {
  SUBCASE("never started") {
    counted::reset();
    {
      auto t = uses(counted(1));
      CHECK(counted::alive == 1);  // the parameter, in the frame
    }
    CHECK(counted::alive == 0);
    CHECK(counted::destroyed == counted::constructed + counted::copies + counted::moves);
  }
  SUBCASE("completed") {
    counted::reset();
    {
      auto t = uses(counted(1));
      g::sync_wait(std::move(t));
      CHECK(counted::alive == 0);  // the frame ended with the run (sync_wait's parameter)
    }
    CHECK(counted::alive == 0);
    CHECK(counted::copies == 0);
  }
  SUBCASE("failed") {
    counted::reset();
    CHECK_THROWS_AS(g::sync_wait(fails(counted(1))), boom);
    CHECK(counted::alive == 0);
  }
  SUBCASE("suspended") {
    counted::reset();
    g::reactor r;
    g::detail::stop_state stop(nullptr, &r);
    g::detail::context ctx{&r, &stop, nullptr};
    g::async_event never;
    {
      auto t = waits_forever(counted(1), never);
      t.handle().promise().set_context(&ctx);
      t.handle().resume();  // runs to co_await e and suspends there
      CHECK_FALSE(t.done());
      CHECK(counted::alive == 2);  // parameter and local
      CHECK(r.watched() == 1);     // its wait is linked in the reactor
    }
    CHECK(counted::alive == 0);
    CHECK(r.watched() == 0);  // the destroyed awaiter unlinked itself
  }
}

namespace {
g::task<int> leaf_call(int i) { co_return i + 1; }
g::task<std::size_t> many_calls(int n, std::size_t& allocations) {
  int sum = 0;
  for (int i = 0; i < 100; ++i) sum += co_await leaf_call(i);  // warm the free lists
  aq_test::allocations = 0;
  {
    aq_test::counting_allocations scope;
    for (int i = 0; i < n; ++i) sum += co_await leaf_call(i);
  }
  allocations = aq_test::allocations.load();
  co_return static_cast<std::size_t>(sum);
}
}  // namespace

TEST_CASE("the recycling frame allocator: no heap allocation per task call in steady state") {
  std::size_t allocations = 99;
  // Without tail calls (AQ_TEST_TAIL_CALLS 0: GCC under ASan) each synchronous co_await nests a
  // resumption on the stack: 10,000 of them overflowed ASan's frames (SIGSEGV in free).
  (void)g::sync_wait(many_calls(AQ_TEST_TAIL_CALLS ? 10'000 : 1'000, allocations));
#if AQUEDUCT_ASAN
  MESSAGE("AddressSanitizer build: frames are not recycled (use-after-free stays detectable); not counted");
#else
  CHECK(allocations == 0);
  CHECK(g::frame_allocator::cached() > 0);
#endif
  // Control: the counter does count (a plain allocation inside a counting scope).
  aq_test::allocations = 0;
  {
    aq_test::counting_allocations scope;
    static int* volatile sink = nullptr;
    sink = new int(1);
    delete sink;
  }
  CHECK(aq_test::allocations.load() == 1);
}

// graph/detail/block_cache.hpp: node arrays of 64 KiB and more are kept per thread when freed
// and handed out again (what keeps repeated captures from faulting fresh pages in); smaller ones
// go to the heap; what a thread keeps is bounded.
TEST_CASE("the node arrays' recycling allocator: large blocks come back, what is kept is bounded" *
          doctest::skip(AQUEDUCT_ASAN != 0)) {  // ASan: nothing is kept (use-after-free stays detectable)
  using cache = g::detail::block_cache;
  g::detail::recycling_allocator<std::uint64_t> a;
  const std::size_t big = 100'000 / sizeof(std::uint64_t);  // 100,000 bytes: the 128 KiB class
  std::uint64_t* p = a.allocate(big);
  p[big - 1] = 7;
  const std::size_t held = g::detail::blocks.held;
  a.deallocate(p, big);
  CHECK(g::detail::blocks.held == held + (std::size_t{128} << 10));
  std::uint64_t* q = a.allocate(big - 1);  // the same class: the same block
  CHECK(q == p);
  CHECK(g::detail::blocks.held == held);
  CHECK(reinterpret_cast<std::uintptr_t>(q) % 64 == 0);
  a.deallocate(q, big - 1);
  // Blocks between the small classes and 64 KiB are not kept.
  std::uint64_t* s = a.allocate(1024);  // 8 KiB
  a.deallocate(s, 1024);
  CHECK(g::detail::blocks.held == held + (std::size_t{128} << 10));
  // Free far more than kept_bytes, in blocks of every class: the lists stay within the bound.
  std::vector<std::pair<std::uint64_t*, std::size_t>> many;
  for (int round = 0; round < 2; ++round)
    for (std::size_t c = 0; c < cache::classes; ++c) {
      const std::size_t n = cache::class_bytes(c) / sizeof(std::uint64_t);
      many.emplace_back(a.allocate(n), n);
    }
  for (auto [ptr, n] : many) a.deallocate(ptr, n);
  CHECK(g::detail::blocks.held <= cache::kept_bytes);
  CHECK(g::detail::blocks.held >= cache::kept_bytes / 2);  // it did keep what fit
  // Past the largest class: the heap (not kept).
  const std::size_t held_now = g::detail::blocks.held;
  const std::size_t huge = (cache::class_bytes(cache::classes - 1) + 1) / sizeof(std::uint64_t) + 1;
  std::uint64_t* h = a.allocate(huge);
  a.deallocate(h, huge);
  CHECK(g::detail::blocks.held == held_now);
}

// The same allocator's small blocks (a node's dependency list, argument bytes and pointer offsets,
// up to 2 KiB): kept per thread in classes of 16 << c bytes, each block its class's whole size, at
// most small_kept_bytes per thread.
TEST_CASE("the node lists' small blocks come back by class; what is kept is bounded" *
          doctest::skip(AQUEDUCT_ASAN != 0)) {  // ASan: nothing is kept (use-after-free stays detectable)
  using cache = g::detail::block_cache;
  auto& bc = g::detail::blocks;
  bc.release_small();
  CHECK(bc.small_held == 0);
  g::detail::recycling_allocator<std::uint32_t> a;
  std::uint32_t* p = a.allocate(5);  // 20 bytes: the 32-byte class
  p[4] = 9;
  a.deallocate(p, 5);
  CHECK(bc.small_held == 32);
  std::uint32_t* q = a.allocate(8);  // 32 bytes: the same class, the same block
  CHECK(q == p);
  CHECK(bc.small_held == 0);
  std::uint32_t* r = a.allocate(3);  // 12 bytes: the 16-byte class, another block
  CHECK(r != q);
  a.deallocate(q, 8);
  a.deallocate(r, 3);
  CHECK(bc.small_held == 48);
  // Past 2 KiB: not a small block.
  std::uint32_t* big = a.allocate(cache::small_max / 4 + 1);
  a.deallocate(big, cache::small_max / 4 + 1);
  CHECK(bc.small_held == 48);
  // Far more freed than is kept: the lists stay within the bound, having kept what fit.
  std::vector<std::uint32_t*> many;
  const std::size_t n = 2 * cache::small_kept_bytes / cache::small_max;
  for (std::size_t i = 0; i < n; ++i) many.push_back(a.allocate(cache::small_max / 4));
  for (std::uint32_t* m : many) a.deallocate(m, cache::small_max / 4);
  CHECK(bc.small_held <= cache::small_kept_bytes);
  CHECK(bc.small_held > cache::small_kept_bytes - cache::small_max);
  bc.release_small();
  CHECK(bc.small_held == 0);
}

}  // namespace AQ_UNITY_ID
