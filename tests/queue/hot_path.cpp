// The dispatch hot path allocates nothing and touches the device only through the doorbell
// (DESIGN.md §6): a counting global operator new (this TU replaces it) and a counting doorbell
// prove it for single- and multi-producer queues, batches and pooled completion signals, for
// PM4 dispatch commands and SDMA copies (issue 11); on
// Linux the same path also runs under seccomp strict mode, where any system call is fatal.
// Each check has a control showing the counter (or the sandbox) does catch a violation.
#include <aqueduct/arch/target.hpp>
#include <aqueduct/queue/aql_dispatch_template.hpp>
#include <aqueduct/queue/aql_queue.hpp>
#include <aqueduct/queue/pm4_queue.hpp>
#include <aqueduct/queue/sdma_queue.hpp>
#include <aqueduct/sync/signal_pool.hpp>

#include "allocation_counter.hpp"

#include <doctest/doctest.h>

#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <span>
#include <vector>

#if AQUEDUCT_LINUX
#  include <linux/seccomp.h>
#  include <sys/prctl.h>
#  include <sys/syscall.h>
#  include <sys/wait.h>
#  include <unistd.h>
#endif

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

using aq_test::allocations;
using aq_test::counting;

namespace q = aqueduct::ring;
namespace abi = aqueduct::abi;
using aqueduct::gpu_va;

namespace {

// The device hook: the only way the hot path may reach the device.
struct counting_doorbell {
  std::uint64_t* word;
  std::uint64_t* rings;
  void ring(std::uint64_t v) noexcept {
    ++*rings;
    aqueduct::sync::atomic_store(*word, v, std::memory_order_release);
  }
};

struct memory {
  explicit memory(std::uint32_t n) : size(n), ring(static_cast<abi::aql_slot*>(std::aligned_alloc(64, 64 * n))) {}
  ~memory() { std::free(ring); }
  q::aql_queue_memory mem() { return {&desc, ring, size}; }
  abi::amd_queue desc{};
  std::uint32_t size;
  abi::aql_slot* ring;
  alignas(8) std::uint64_t doorbell = 0;
  std::uint64_t rings = 0;
};

struct count_scope {
  count_scope() {
    allocations.store(0);
    counting = true;
  }
  ~count_scope() { counting = false; }
};

template <q::producer P>
void exercise(memory& m, aqueduct::sync::signal_pool& pool) {
  q::aql_queue<P, counting_doorbell> queue(m.mem(), counting_doorbell{&m.doorbell, &m.rings});
  {
    count_scope scope;
    for (std::uint64_t i = 0; i < 500; ++i) {
      auto sig = pool.acquire(1);
      const auto p = q::make_packet(q::kernel_dispatch{.kernel_object = gpu_va(0x1000),
                                                       .kernarg_address = gpu_va(0x2000 + i),
                                                       .grid = {1024, 1, 1},
                                                       .workgroup = {256, 1, 1},
                                                       .segments = {},
                                                       .completion_signal = sig.handle()});
      queue.submit(p);
      sig.ref().store(0, std::memory_order_release);  // "the GPU completed it"
    }  // sig released to the pool each iteration: recycled at the next acquire
    for (int b = 0; b < 10; ++b) {
      auto r = queue.reserve(8);
      for (std::uint32_t k = 0; k < 8; ++k) r.write(k, q::make_packet(q::barrier_and{.scopes = q::fences::agent()}));
      r.publish();
    }
    // Every other publish style a user writes (issue 11), 20 publications each.
    const q::kernel_dispatch k{.kernel_object = gpu_va(0x1000), .kernarg_address = gpu_va(0x2000), .grid = {64, 1, 1},
                               .workgroup = {64, 1, 1}, .segments = {}};
    const auto prebuilt = q::make_packet(k);
    const auto launch = q::aql_dispatch_template::of(0x1000, 0, 0, 64, 1, 1, false, q::fences::system());
    std::array<abi::kernel_dispatch_packet, 4> batch;
    bool in_place_ok = true;
    for (int i = 0; i < 20; ++i) {
      {
        auto r = queue.try_reserve(2).value();  // moved out of the result
        r.write(0, q::make_packet(k));
        r.write(1, k);  // described in place
        r.publish();
      }
      if (auto r = queue.try_reserve(1)) {
        r->write(0, q::make_packet(k));
        r->publish();
      }
      (void)queue.try_submit(prebuilt).value();
      for (auto& p : batch) p = q::make_packet(k);
      queue.submit_batch(std::span<const abi::kernel_dispatch_packet>(batch));
      (void)queue.try_submit_batch(std::span<const abi::kernel_dispatch_packet>(batch)).value();
      queue.submit_batch(4, [&](std::uint32_t) { return q::make_packet(k); });  // built in place
      // Written straight into the slot from precomputed words (the runtime's dispatch path).
      std::uint64_t at = 0;
      in_place_ok &= queue.try_submit_in_place([&](std::uint64_t, abi::aql_slot& slot) { return launch.write(slot, 64, 1, 1, 0x2000, 0); }, at);
    }
    auto r = queue.try_reserve(3);  // abandoned: rolled back, still no allocation
    r->write(0, prebuilt);
    r->write(1, prebuilt);
    CHECK(allocations.load() == 0);
    CHECK(in_place_ok);
  }
  CHECK(m.rings == 500 + 10 + 20 * 7);  // one doorbell per submission and per batch, nothing else
  CHECK(m.doorbell == 500 + 80 + 20 * (2 + 1 + 1 + 4 + 4 + 4 + 1) - 1);
}

// PM4 and SDMA rings over ordinary memory, with counting doorbells (no engine: the read pointer
// is moved by the test between rounds, as a CP that keeps up would).
struct command_rings {
  static constexpr std::uint32_t pm4_dwords = 1u << 14;
  static constexpr std::uint64_t sdma_bytes = 1u << 14;
  command_rings()
      : pm4_ring(static_cast<std::uint32_t*>(std::aligned_alloc(64, pm4_dwords * 4))),
        sdma_ring(static_cast<std::uint32_t*>(std::aligned_alloc(64, sdma_bytes))) {
    namespace kcp = abi::kernel_code_properties;
    kd.kernel_code_properties = static_cast<std::uint16_t>(kcp::enable_sgpr_kernarg_segment_ptr::set(0, 1));
    kd.kernel_code_entry_byte_offset = 256;
  }
  ~command_rings() {
    std::free(pm4_ring);
    std::free(sdma_ring);
  }
  std::uint32_t* pm4_ring;
  std::uint32_t* sdma_ring;
  std::uint64_t pm4_w = 0, pm4_r = 0, pm4_db = 0, pm4_rings = 0;
  std::uint64_t sdma_w = 0, sdma_r = 0, sdma_db = 0, sdma_rings = 0;
  abi::kernel_descriptor kd{};
};

// 40 rounds of 10 PM4 dispatches (with a completion value) and 10 SDMA copies; false on a failure.
template <class Pm4, class Sdma>
bool command_rounds(command_rings& c, Pm4& pm4, Sdma& sdma) {
  // A dispatch template built once (no allocation either: it is a value), one dispatch per round.
  q::pm4::dispatch_params tp;
  tp.kd = &c.kd;
  tp.kd_va = gpu_va(0x100000);
  tp.grid = {4, 1, 1};
  tp.block = {64, 1, 1};
  q::pm4_completion tc;
  tc.address = gpu_va(0x300008);
  const q::pm4::dispatch_template<aqueduct::arch::gfx11_target> t(tp, tc);
  for (int round = 0; round < 40; ++round) {
    if (!pm4.try_dispatch(t, {.grid = {8, 1, 1}, .kernarg = gpu_va(0x280000), .dispatch_ptr = {}, .completion_address = gpu_va(0x300008),
                              .completion_value = static_cast<std::uint64_t>(round)},
                          aqueduct::sync::nanoseconds::zero()))
      return false;
    for (int i = 0; i < 10; ++i) {
      q::pm4::dispatch_params p;
      p.kd = &c.kd;
      p.kd_va = gpu_va(0x100000);
      p.grid = {4, 1, 1};
      p.block = {64, 1, 1};
      p.kernarg = gpu_va(0x200000 + 64 * i);
      q::pm4_completion done;
      done.address = gpu_va(0x300000);
      done.value = static_cast<std::uint64_t>(round * 10 + i);
      if (!pm4.try_dispatch(p, done, aqueduct::sync::nanoseconds::zero())) return false;
      if (!sdma.try_copy(gpu_va(0x400000), gpu_va(0x500000 + 4096 * i), 4096, aqueduct::sync::nanoseconds::zero())) return false;
    }
    aqueduct::sync::atomic_store(c.pm4_r, aqueduct::sync::atomic_load(c.pm4_w, std::memory_order_acquire), std::memory_order_release);
    aqueduct::sync::atomic_store(c.sdma_r, aqueduct::sync::atomic_load(c.sdma_w, std::memory_order_acquire), std::memory_order_release);
  }
  return true;
}

}  // namespace

TEST_CASE("PM4 dispatch and SDMA copy: no allocation, one doorbell per command") {
  command_rings c;
  q::pm4_queue<aqueduct::arch::gfx11_target, counting_doorbell> pm4({c.pm4_ring, command_rings::pm4_dwords, &c.pm4_w, &c.pm4_r},
                                                                    counting_doorbell{&c.pm4_db, &c.pm4_rings});
  q::sdma_queue<abi::sdma::engine::v6_0, counting_doorbell> sdma({c.sdma_ring, command_rings::sdma_bytes, &c.sdma_r, &c.sdma_w},
                                                                 counting_doorbell{&c.sdma_db, &c.sdma_rings});
  {
    count_scope scope;
    CHECK(command_rounds(c, pm4, sdma));
    CHECK(allocations.load() == 0);
  }
  CHECK(c.pm4_rings == 440);
  CHECK(c.sdma_rings == 400);
  CHECK(c.pm4_db == c.pm4_w);  // the doorbell holds the write pointer (dwords)
  CHECK(c.sdma_db == c.sdma_w);
}

TEST_CASE("control: the counting operator new counts") {
  count_scope scope;
  auto p = std::make_unique<int>(3);
  std::vector<int> v(10);
  CHECK(allocations.load() == 2);
}

TEST_CASE("control: a failing reservation allocates its diagnostic (the error path may)") {
  memory m(4);
  q::aql_queue_sp<counting_doorbell> queue(m.mem(), counting_doorbell{&m.doorbell, &m.rings});
  for (int i = 0; i < 4; ++i) queue.submit(q::nop_packet());
  count_scope scope;
  CHECK(queue.try_reserve(1).error() == aqueduct::errc::queue_full);
  CHECK(allocations.load() > 0);
}

TEST_CASE("single-producer hot path: no allocation, one doorbell per submission") {
  memory m(1024);
  std::vector<abi::amd_signal> sigs(4);
  aqueduct::sync::signal_pool pool(sigs);
  exercise<q::producer::single>(m, pool);
  CHECK(m.desc.write_dispatch_id == 580 + 340);
}

TEST_CASE("multi-producer hot path: no allocation, one doorbell per submission") {
  memory m(1024);
  std::vector<abi::amd_signal> sigs(4);
  aqueduct::sync::signal_pool pool(sigs);
  exercise<q::producer::multi>(m, pool);
  CHECK(m.desc.write_dispatch_id == 580 + 340);
}

#if AQUEDUCT_LINUX && !AQUEDUCT_TSAN && !AQUEDUCT_ASAN
// The strongest check of "no system call": run the hot path in a forked child under seccomp
// strict mode, where any system call other than read/write/_exit/sigreturn kills the process.
// (Not under sanitizers: their runtimes make system calls of their own.)
namespace {
template <class F>
int run_under_seccomp_strict(F body) {
  const pid_t pid = fork();
  if (pid == 0) {
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_STRICT) != 0) syscall(SYS_exit, 3);
    const int rc = body();
    syscall(SYS_exit, rc);  // plain exit(): exit_group is not allowed in strict mode
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFSIGNALED(status)) return 1000 + WTERMSIG(status);
  return WEXITSTATUS(status);
}
}  // namespace

TEST_CASE("control: seccomp strict mode kills a child that makes a system call") {
  CHECK(run_under_seccomp_strict([] {
          syscall(SYS_getpid);
          return 0;
        }) == 1000 + SIGKILL);
  CHECK(run_under_seccomp_strict([] { return 0; }) == 0);
}

TEST_CASE("hot path under seccomp strict mode: no system call at all") {
  memory sm(1024), mm(1024);
  std::vector<abi::amd_signal> sigs(4);
  aqueduct::sync::signal_pool pool(sigs);
  q::aql_queue_sp<counting_doorbell> sq(sm.mem(), counting_doorbell{&sm.doorbell, &sm.rings});
  q::aql_queue_mp<counting_doorbell> mq(mm.mem(), counting_doorbell{&mm.doorbell, &mm.rings});
  const int rc = run_under_seccomp_strict([&] {
    for (std::uint64_t i = 0; i < 300; ++i) {
      auto sig = pool.try_acquire(1);
      if (!sig) return 10;
      const auto p = q::make_packet(q::kernel_dispatch{.kernel_object = gpu_va(0x1000),
                                                       .kernarg_address = gpu_va(0x2000 + i),
                                                       .grid = {1024, 1, 1},
                                                       .workgroup = {256, 1, 1},
                                                       .segments = {},
                                                       .completion_signal = sig->handle()});
      if (!sq.try_submit(p) || !mq.try_submit(p)) return 11;
      sig->ref().store(0, std::memory_order_release);
    }
    auto r = mq.try_reserve(8);
    if (!r) return 12;
    for (std::uint32_t k = 0; k < 8; ++k) r->write(k, q::nop_packet());
    r->publish();
    // The other publish styles (issue 11), on both queues.
    const auto p = q::make_packet(q::kernel_dispatch{.kernel_object = gpu_va(0x1000), .kernarg_address = gpu_va(0x2000),
                                                     .grid = {64, 1, 1}, .workgroup = {64, 1, 1}, .segments = {}});
    std::array<abi::kernel_dispatch_packet, 4> batch;
    batch.fill(p);
    auto styles = [&](auto& queue) {
      auto v = queue.try_reserve(2).value();
      v.write(0, p);
      v.write(1, p);
      v.publish();
      queue.submit(p);
      queue.submit_batch(std::span<const abi::kernel_dispatch_packet>(batch));
      queue.submit_batch(3, [&](std::uint32_t) { return p; });
      const auto launch = q::aql_dispatch_template::of(0x1000, 0, 0, 64, 1, 1, false, q::fences::system());
      std::uint64_t at = 0;
      if (!queue.try_submit_in_place([&](std::uint64_t, abi::aql_slot& slot) { return launch.write(slot, 64, 1, 1, 0x2000, 0); }, at))
        return false;
      return queue.try_submit_batch(std::span<const abi::kernel_dispatch_packet>(batch)).has_value();
    };
    if (!styles(sq) || !styles(mq)) return 14;
    return (sm.rings == 300 + 6 && mm.rings == 301 + 6) ? 0 : 13;
  });
  CHECK(rc == 0);  // 1009 would mean SIGKILL: a system call was made
}

TEST_CASE("PM4 dispatch and SDMA copy under seccomp strict mode: no system call at all") {
  command_rings c;
  q::pm4_queue<aqueduct::arch::gfx11_target, counting_doorbell> pm4({c.pm4_ring, command_rings::pm4_dwords, &c.pm4_w, &c.pm4_r},
                                                                    counting_doorbell{&c.pm4_db, &c.pm4_rings});
  q::sdma_queue<abi::sdma::engine::v6_0, counting_doorbell> sdma({c.sdma_ring, command_rings::sdma_bytes, &c.sdma_r, &c.sdma_w},
                                                                 counting_doorbell{&c.sdma_db, &c.sdma_rings});
  const int rc = run_under_seccomp_strict([&] {
    if (!command_rounds(c, pm4, sdma)) return 10;
    return (c.pm4_rings == 440 && c.sdma_rings == 400) ? 0 : 11;
  });
  CHECK(rc == 0);
}
#endif

}  // namespace AQ_UNITY_ID
