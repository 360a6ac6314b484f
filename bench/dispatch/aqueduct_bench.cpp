// bench/dispatch/aqueduct_bench.cpp — `aqueduct-bench`: the program a person runs to see what
// dispatching through aqueduct costs on their machine, against the hand-written protocol and
// common queues measured in the same run (issue 11, docs/benchmarks.md).
//
// What it measures, interleaved (every repetition runs every case once, in a shuffled order, so
// a burst of load from another process hits aqueduct and its peers alike), medians:
//   publish/...   host cost per packet of publishing AQL kernel-dispatch packets, producer only
//                 (the ring is retired, untimed, when it is about to fill): aqueduct in every
//                 publish style (cases.hpp) vs the in-place HSA sequences (peers.hpp), batches
//                 1, 8, 64, 512; the multi-producer queue also with 2 producer threads.
//   queue/...     64-byte items through boost::lockfree::spsc_queue, moodycamel
//                 ReaderWriterQueue and ConcurrentQueue (2 producers), producer + consumer thread.
//   pingpong      a cache line bounced between two threads: the core-to-core floor.
//   e2e/...       through the runtime (emulated device unless /dev/kfd works): one empty dispatch
//                 + spin wait (round trip), pipelined empty dispatches (throughput), and the CPU a
//                 host thread uses while blocked in a wait.
// Then a table of medians, same-run ratios and the verdict against each target of issue 11.
// Options: --quick (a few iterations: the ctest smoke run), --reps N, --json FILE, --plot FILE.png
// (gnuplot), --instructions (re-runs the publish cases under callgrind and reports retired
// instructions per packet), --filter SUBSTRING.
#include "cases.hpp"
#include "commands.hpp"
#include "user_tu.hpp"

#include <aqueduct/runtime.hpp>

#include <hsa/amd_hsa_signal.h>

#include <boost/lockfree/spsc_queue.hpp>
#include <concurrentqueue/concurrentqueue.h>
#include <readerwriterqueue/readerwriterqueue.h>
#include <valgrind/callgrind.h>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <tuple>
#include <cmath>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

// The commit measured (bench_commit.cpp, written at build time by commit.cmake).
extern const char* const aqueduct_bench_commit;
#ifndef AQUEDUCT_BENCH_BUILD_TYPE
#  define AQUEDUCT_BENCH_BUILD_TYPE "unknown"
#endif

namespace {

namespace aq = aqueduct;
namespace q = aqueduct::ring;
using clk = std::chrono::steady_clock;

struct options {
  bool quick = false;
  int reps = 7;
  double case_ms = 40;  // time per case per repetition
  std::string json, plot, filter;
  bool instructions = false;
  bool instructions_child = false;
};
options opt;

double now_ns() { return std::chrono::duration<double, std::nano>(clk::now().time_since_epoch()).count(); }

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// ---- cases ---------------------------------------------------------------------------------------

// One measurable case: run() does one repetition and returns samples (ns per unit); the median of
// the samples is the repetition's value; the case's value is the median over repetitions.
struct bench_case {
  std::string name;   // e.g. publish/sp_value/batch:8
  std::string unit;   // "ns/packet", "ns/item", "ns/round trip", ...
  std::function<std::vector<double>()> run;
  std::function<double()> instructions;  // Ir per packet, under callgrind only (may be empty)
  std::vector<double> values;            // one per repetition
  std::vector<double> samples;           // all samples of all repetitions (for the plot)
  double med() const { return median(values); }
};

// Producer-only publish: blocks of publishes filling at most half the ring, each block timed
// (steady clock), then the ring retired untimed. The median block is the repetition's value: a
// block hit by preemption is an outlier, not the median. N is a compile-time batch, as in code
// that publishes a fixed number of packets.
template <std::uint32_t N, class F>
std::vector<double> run_publish(F& f, double budget_ms) {
  const bench::dispatch_desc d{};
  constexpr std::uint32_t per_block = bench::ring_slots / N / 2;
  std::vector<double> out;
  const double end = now_ns() + budget_ms * 1e6;
  do {
    f.retire_all();
    const double t0 = now_ns();
    for (std::uint32_t i = 0; i < per_block; ++i) f.publish_with_room(d, N);
    const double t1 = now_ns();
    out.push_back((t1 - t0) / (per_block * N));
  } while (now_ns() < end);
  f.retire_all();
  return out;
}

// Retired instructions per packet of one block, counted by callgrind (only under valgrind).
template <std::uint32_t N, class F>
double count_publish(F& f) {
  const bench::dispatch_desc d{};
  constexpr std::uint32_t per_block = bench::ring_slots / N / 2;
  f.retire_all();
  for (std::uint32_t i = 0; i < per_block; ++i) f.publish_with_room(d, N);  // warm, not counted
  f.retire_all();
  CALLGRIND_TOGGLE_COLLECT;
  for (std::uint32_t i = 0; i < per_block; ++i) f.publish_with_room(d, N);
  CALLGRIND_TOGGLE_COLLECT;
  f.retire_all();
  return per_block * N;
}

// Two producer threads on one multi-producer ring: each publishes a quarter ring per block, both
// start together (std::barrier); the sample is the sum of both threads' time over all packets
// (producer time per packet, as for one thread). The main thread retires between blocks.
template <std::uint32_t N, class F>
std::vector<double> run_publish_2t(F& f, double budget_ms) {
  const bench::dispatch_desc d{};
  constexpr std::uint32_t per_block = bench::ring_slots / N / 4 ? bench::ring_slots / N / 4 : 1;
  std::vector<double> out;
  std::barrier sync(2);
  std::atomic<bool> stop{false};
  double worker_ns = 0;
  std::thread worker([&] {
    for (;;) {
      sync.arrive_and_wait();
      if (stop.load(std::memory_order_acquire)) return;
      const double t0 = now_ns();
      for (std::uint32_t i = 0; i < per_block; ++i) f.publish_with_room(d, N);
      worker_ns = now_ns() - t0;
      sync.arrive_and_wait();
    }
  });
  const double end = now_ns() + budget_ms * 1e6;
  do {
    f.retire_all();
    sync.arrive_and_wait();
    const double t0 = now_ns();
    for (std::uint32_t i = 0; i < per_block; ++i) f.publish_with_room(d, N);
    const double mine = now_ns() - t0;
    sync.arrive_and_wait();
    out.push_back((mine + worker_ns) / (2.0 * per_block * N));
  } while (now_ns() < end);
  stop.store(true, std::memory_order_release);
  sync.arrive_and_wait();
  worker.join();
  f.retire_all();
  return out;
}

std::vector<bench_case> cases;

// Producer-only PM4 / SDMA commands (commands.hpp): blocks of `per_block` commands, each block
// timed, the ring retired untimed in between (it never fills within a block).
template <class F>
std::vector<double> run_commands(F& f, std::uint32_t per_block, double budget_ms) {
  std::vector<double> out;
  const double end = now_ns() + budget_ms * 1e6;
  do {
    f.retire_all();
    const double t0 = now_ns();
    f.publish_with_room(per_block);
    out.push_back((now_ns() - t0) / per_block);
  } while (now_ns() < end);
  f.retire_all();
  return out;
}
template <class F>
double count_commands(F& f, std::uint32_t per_block) {
  f.retire_all();
  f.publish_with_room(per_block);
  f.retire_all();
  CALLGRIND_TOGGLE_COLLECT;
  f.publish_with_room(per_block);
  CALLGRIND_TOGGLE_COLLECT;
  f.retire_all();
  return per_block;
}
template <class F>
void add_commands(const std::string& name, std::uint32_t per_block) {
  auto f = std::make_shared<F>();
  cases.push_back({name, "ns/command", [f, per_block] { return run_commands(*f, per_block, opt.case_ms); },
                   [f, per_block] { return count_commands(*f, per_block); }, {}, {}});
}
void register_commands() {
  add_commands<bench::aqueduct_pm4_case>("pm4/dispatch/aqueduct", 512);
  add_commands<bench::aqueduct_pm4_prebuilt_case>("pm4/dispatch/aqueduct_prebuilt", 512);
  add_commands<bench::peer_pm4_case>("pm4/dispatch/peer_by_hand", 512);
  add_commands<bench::aqueduct_sdma_case>("sdma/copy/aqueduct", 1024);
  add_commands<bench::peer_sdma_case>("sdma/copy/peer_by_hand", 1024);
}

template <class F, std::uint32_t N>
void add_publish(const std::string& impl, bool two_threads = false) {
  auto f = std::make_shared<F>();
  const std::string name = "publish/" + impl + "/batch:" + std::to_string(N) + (two_threads ? "/threads:2" : "");
  bench_case c{name, "ns/packet", {}, {}, {}, {}};
  if (two_threads) c.run = [f] { return run_publish_2t<N>(*f, opt.case_ms); };
  else {
    c.run = [f] { return run_publish<N>(*f, opt.case_ms); };
    c.instructions = [f] { return count_publish<N>(*f); };
  }
  cases.push_back(std::move(c));
}

template <class F>
void add_publish_batches(const std::string& impl, bool two_threads = false) {
  add_publish<F, 1>(impl, two_threads);
  add_publish<F, 8>(impl, two_threads);
  add_publish<F, 64>(impl, two_threads);
#ifndef AQUEDUCT_BENCH_NO_512  // (the queue before issue 11 held at most 64 packets per reservation)
  add_publish<F, 512>(impl, two_threads);
#endif
}

void register_publish() {
  using P = q::producer;
  using S = bench::style;
  add_publish_batches<bench::aqueduct_case<P::single, S::value>>("sp_value");
  add_publish_batches<bench::aqueduct_case<P::single, S::if_ok>>("sp_if");
  add_publish<bench::aqueduct_case<P::single, S::submit>, 1>("sp_submit");
  add_publish_batches<bench::aqueduct_case<P::single, S::submit_batch>>("sp_submit_batch");
  add_publish_batches<bench::aqueduct_case<P::single, S::submit_fill>>("sp_submit_fill");
  add_publish_batches<bench::aqueduct_case<P::single, S::prebuilt>>("sp_prebuilt");
  add_publish_batches<bench::aqueduct_case<P::multi, S::if_ok>>("mp_if");
  add_publish_batches<bench::aqueduct_case<P::multi, S::value>>("mp_value");
  add_publish_batches<bench::aqueduct_case<P::multi, S::if_ok>>("mp_if", true);
  add_publish_batches<bench::peer_case<bench::hsa_sp_protocol>>("peer_hsa_sp");
  add_publish_batches<bench::peer_case<bench::hsa_sp_copy<bench::body_copy::fields>>>("peer_hsa_sp_copy_fields");
  add_publish_batches<bench::peer_case<bench::hsa_sp_copy<bench::body_copy::memcpy60>>>("peer_hsa_sp_copy_memcpy");
  add_publish_batches<bench::peer_case<bench::hsa_sp_copy<bench::body_copy::fields, true>>>("peer_hsa_sp_array_fields");
  add_publish_batches<bench::peer_case<bench::hsa_sp_copy<bench::body_copy::memcpy60, true>>>("peer_hsa_sp_array_memcpy");
  add_publish_batches<bench::peer_case<bench::hsa_protocol>>("peer_hsa_mp");
  add_publish_batches<bench::peer_case<bench::hsa_protocol>>("peer_hsa_mp", true);
  add_publish_batches<bench::peer_case<bench::mutex_ring>>("peer_mutex_ring");
}

// ---- the styles as a user's own translation unit writes them (user_tu.cpp) -------------------------

template <std::uint32_t N, class Call>
std::vector<double> run_user_tu(Call call, std::function<void()> retire, double budget_ms) {
  constexpr std::uint32_t per_block = bench::ring_slots / N / 2;
  std::vector<double> out;
  const double end = now_ns() + budget_ms * 1e6;
  do {
    retire();
    const double t0 = now_ns();
    for (std::uint32_t i = 0; i < per_block; ++i) call();
    out.push_back((now_ns() - t0) / (per_block * N));
  } while (now_ns() < end);
  retire();
  return out;
}

template <std::uint32_t N, class Call>
double count_user_tu(Call call, const std::function<void()>& retire) {
  constexpr std::uint32_t per_block = bench::ring_slots / N / 2;
  retire();
  for (std::uint32_t i = 0; i < per_block; ++i) call();  // warm, not counted
  retire();
  CALLGRIND_TOGGLE_COLLECT;
  for (std::uint32_t i = 0; i < per_block; ++i) call();
  CALLGRIND_TOGGLE_COLLECT;
  retire();
  return per_block * N;
}

template <std::uint32_t N>
void add_user_tu_batch() {
  namespace u = bench::user_tu;
  static const u::kernel_info k{bench::dispatch_desc{}.kernel_object, bench::dispatch_desc{}.kernarg_address,
                                bench::dispatch_desc{}.grid_x, bench::dispatch_desc{}.workgroup_x};
  const std::string b = "/batch:" + std::to_string(N);
  auto add_sp = [&](const std::string& name, void (*fn)(u::sp_queue&, const u::kernel_info&, std::uint32_t)) {
    auto f = std::make_shared<bench::aqueduct_case<q::producer::single, bench::style::if_ok>>();
    cases.push_back({"user_tu/" + name + b, "ns/packet", [f, fn] {
                       return run_user_tu<N>([&] { fn(*f->queue, k, N); }, [&] { f->retire_all(); }, opt.case_ms);
                     }, [f, fn] { return count_user_tu<N>([&] { fn(*f->queue, k, N); }, [&] { f->retire_all(); }); }, {}, {}});
  };
  add_sp("sp_value", u::sp_value);
  add_sp("sp_if", u::sp_if);
  if (N == 1) add_sp("sp_submit", u::sp_submit);  // one doorbell per packet: compared at batch 1 only
  auto m = std::make_shared<bench::aqueduct_case<q::producer::multi, bench::style::if_ok>>();
  cases.push_back({"user_tu/mp_value" + b, "ns/packet", [m] {
                     return run_user_tu<N>([&] { u::mp_value(*m->queue, k, N); }, [&] { m->retire_all(); }, opt.case_ms);
                   }, [m] { return count_user_tu<N>([&] { u::mp_value(*m->queue, k, N); }, [&] { m->retire_all(); }); }, {}, {}});
  auto hs = std::make_shared<bench::peer_case<bench::hsa_sp_protocol>>();
  cases.push_back({"user_tu/peer_hsa_sp" + b, "ns/packet", [hs] {
                     return run_user_tu<N>([&] { u::hsa_sp(&hs->ring.queue, &hs->ring.doorbell, k, N); },
                                           [&] { hs->retire_all(); }, opt.case_ms);
                   }, [hs] {
                     return count_user_tu<N>([&] { u::hsa_sp(&hs->ring.queue, &hs->ring.doorbell, k, N); }, [&] { hs->retire_all(); });
                   }, {}, {}});
  auto hm = std::make_shared<bench::peer_case<bench::hsa_protocol>>();
  cases.push_back({"user_tu/peer_hsa_mp" + b, "ns/packet", [hm] {
                     return run_user_tu<N>([&] { u::hsa_mp(&hm->ring.queue, &hm->ring.doorbell, k, N); },
                                           [&] { hm->retire_all(); }, opt.case_ms);
                   }, [hm] {
                     return count_user_tu<N>([&] { u::hsa_mp(&hm->ring.queue, &hm->ring.doorbell, k, N); }, [&] { hm->retire_all(); });
                   }, {}, {}});
}
void register_user_tu() {
  add_user_tu_batch<1>();
  add_user_tu_batch<8>();
  add_user_tu_batch<64>();
}

// ---- queues of 64-byte items and the ping-pong floor ----------------------------------------------

struct item {
  std::uint64_t w[8];
};
static_assert(sizeof(item) == 64);

template <class Spin>
void spin_until(Spin done) {
  for (unsigned i = 0; !done(); ++i) {
    if (i < 256) bench::cpu_relax();
    else std::this_thread::yield();
  }
}

std::size_t queue_items() { return opt.quick ? 2000 : 200000; }

// One producer thread, one consumer thread; ns per item (wall time of the whole transfer).
template <class Push, class Pop>
std::vector<double> run_transfer(Push push, Pop pop, unsigned producers = 1) {
  const std::size_t n = queue_items();
  std::atomic<int> ready{0};
  std::vector<std::thread> ps;
  const double t0 = now_ns();
  for (unsigned p = 0; p < producers; ++p)
    ps.emplace_back([&, p] {
      item it{};
      for (std::size_t i = p; i < n; i += producers) {
        it.w[0] = i;
        spin_until([&] { return push(p, it); });
      }
    });
  std::uint64_t sum = 0;
  item it{};
  for (std::size_t i = 0; i < n; ++i) {
    spin_until([&] { return pop(it); });
    sum += it.w[0];
  }
  const double t1 = now_ns();
  for (auto& t : ps) t.join();
  if (sum != n * (n - 1) / 2) std::fprintf(stderr, "aqueduct-bench: queue peer lost items\n");
  return {(t1 - t0) / static_cast<double>(n)};
}

void register_queues() {
  cases.push_back({"queue/boost_spsc", "ns/item", [] {
                     auto qq = std::make_unique<boost::lockfree::spsc_queue<item, boost::lockfree::capacity<1024>>>();
                     return run_transfer([&](unsigned, const item& it) { return qq->push(it); },
                                         [&](item& it) { return qq->pop(it); });
                   }, {}, {}, {}});
  cases.push_back({"queue/moodycamel_rwq", "ns/item", [] {
                     moodycamel::ReaderWriterQueue<item> qq(1024);
                     return run_transfer([&](unsigned, const item& it) { return qq.try_enqueue(it); },
                                         [&](item& it) { return qq.try_dequeue(it); });
                   }, {}, {}, {}});
  cases.push_back({"queue/moodycamel_cq/producers:2", "ns/item", [] {
                     moodycamel::ConcurrentQueue<item> qq(4096, 2, 0);
                     moodycamel::ProducerToken t0(qq), t1(qq);
                     moodycamel::ProducerToken* tok[2] = {&t0, &t1};
                     return run_transfer([&](unsigned p, const item& it) { return qq.enqueue(*tok[p], it); },
                                         [&](item& it) { return qq.try_dequeue(it); }, 2);
                   }, {}, {}, {}});
  // A cache line bounced between two threads: one round trip = two core-to-core transfers.
  cases.push_back({"pingpong", "ns/round trip", [] {
                     alignas(64) std::atomic<std::uint64_t> line{0};
                     const std::uint64_t trips = opt.quick ? 200 : 20000;
                     std::thread other([&] {
                       for (std::uint64_t i = 0; i < trips; ++i) {
                         spin_until([&] { return line.load(std::memory_order_acquire) == 2 * i + 1; });
                         line.store(2 * i + 2, std::memory_order_release);
                       }
                     });
                     const double t0 = now_ns();
                     for (std::uint64_t i = 0; i < trips; ++i) {
                       line.store(2 * i + 1, std::memory_order_release);
                       spin_until([&] { return line.load(std::memory_order_acquire) == 2 * i + 2; });
                     }
                     const double t1 = now_ns();
                     other.join();
                     return std::vector<double>{(t1 - t0) / static_cast<double>(trips)};
                   }, {}, {}, {}});
}

// ---- end to end through the runtime ------------------------------------------------------------------

void empty_kernel(aq::emu::workgroup_context&) {}
void sleepy_kernel(aq::emu::workgroup_context&) { std::this_thread::sleep_for(std::chrono::milliseconds(30)); }
// Holds the emulated processor thread (it runs 1-workgroup dispatches inline) until opened, so
// the dispatches timed behind it cost only the host's side: the processor is busy, not asleep,
// and needs no waking. It blocks in a futex (std::atomic::wait), not a yield loop: it takes no
// CPU from the dispatching thread, and under callgrind it retires no instructions while the
// dispatches are counted.
std::atomic<bool> gate_open{false}, gate_running{false};
void gate_kernel(aq::emu::workgroup_context&) {
  gate_running.store(true, std::memory_order_release);
  gate_open.wait(false, std::memory_order_acquire);
}
void open_gate() {
  gate_open.store(true, std::memory_order_release);
  gate_open.notify_all();
}
void args_kernel(aq::emu::workgroup_context&) {}
using args_kernel_type = aq::kernel<const float*, const float*, float*, std::uint32_t>;

struct runtime_setup {
  std::optional<aq::system> sys;
  std::optional<aq::executable> exe;
  std::optional<aq::untyped_kernel> empty, sleepy, gate;
  std::optional<args_kernel_type> args;
  std::optional<aq::runtime::queue> spin_q, block_q, args_q;
  std::string where, error;
};
std::unique_ptr<runtime_setup> rt;

void open_runtime() {
  rt = std::make_unique<runtime_setup>();
  auto sys = aq::system::try_open();
  if (!sys) {
    rt->error = std::string(sys.detail());
    return;
  }
  rt->sys.emplace(std::move(*sys));
  rt->where = rt->sys->emulated() ? "emulator (" + rt->sys->how_chosen() + ")" : "/dev/kfd (" + rt->sys->how_chosen() + ")";
  if (!rt->sys->emulated()) {
    // Host kernels exist only on the emulated device; a real GPU would need a code object.
    rt->error = "the end-to-end cases need host kernels (emulated device only)";
    return;
  }
  const aq::agent& gpu = rt->sys->default_agent();
  aq::emu::host_code_object hco;
  hco.kernels.push_back({"empty", empty_kernel, 0, 0});
  hco.kernels.push_back({"sleepy", sleepy_kernel, 0, 0});
  hco.kernels.push_back({"gate", gate_kernel, 0, 0});
  hco.kernels.push_back(aq::emu::host_kernel::with_args<const float*, const float*, float*, std::uint32_t>("args", args_kernel));
  auto exe = aq::emu::try_load(gpu, hco);
  if (!exe) {
    rt->error = std::string(exe.detail());
    return;
  }
  rt->exe.emplace(std::move(*exe));
  rt->empty.emplace(rt->exe->try_get_untyped_kernel("empty").value());
  rt->sleepy.emplace(rt->exe->try_get_untyped_kernel("sleepy").value());
  rt->gate.emplace(rt->exe->try_get_untyped_kernel("gate").value());
  rt->args.emplace(rt->exe->get_kernel<const float*, const float*, float*, std::uint32_t>("args"));
  rt->args_q.emplace(gpu.make_queue(aq::aql, {.slots = 1024, .wait = aq::sync::wait_policy::spin()}));
  rt->spin_q.emplace(gpu.make_queue(aq::aql, {.slots = 1024, .wait = aq::sync::wait_policy::spin()}));
  rt->block_q.emplace(gpu.make_queue(aq::aql, {.slots = 1024, .wait = aq::sync::wait_policy::block()}));
}

double thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

// The hand-written peer of q.dispatch(k, grid, block, a, b, c, n): the HSA multi-producer
// sequence (the runtime's queue is multi-producer), written from hsa.h, ON THE SAME QUEUE — its
// amd_queue_t, ring and doorbell word (so both sides write slots the emulated processor touched
// last, and the processor runs what the peer publishes) — with the four arguments stored at their
// ABI offsets 0, 8, 16, 24 into a kernarg area of one 256-byte slot per ring slot (its own
// buffer, like the runtime's), and the packet filled in place. Like the runtime, it knows when
// each dispatch completed: slot i has a completion signal (amd_signal_t, amd_hsa_signal.h) set to
// 1 before the packet is published and decremented by the packet processor at completion, and
// the slot — with its kernargs — is reused only once that signal is 0 again (the read index
// says only that the packet was launched: ROCR-Runtime#105). Without that a kernarg slot could be
// rewritten under a running kernel, which is what the runtime's tests/runtime/completion.cpp
// catches; a peer that skips it measures a protocol no correct program can use.
struct peer_dispatch_args {
  std::optional<aq::buffer<std::byte>> kernargs;
  std::optional<aq::buffer<std::byte>> signal_memory;
  amd_signal_t* signals = nullptr;
  void init(const aq::agent& gpu, std::uint32_t slots) {
    kernargs.emplace(gpu.alloc<std::byte>(std::size_t{slots} * 256, aq::memory_kind::host));
    signal_memory.emplace(gpu.alloc<std::byte>(std::size_t{slots} * sizeof(amd_signal_t), aq::memory_kind::host));
    signals = reinterpret_cast<amd_signal_t*>(signal_memory->data());
    for (std::uint32_t i = 0; i < slots; ++i) {
      signals[i] = amd_signal_t{};
      signals[i].kind = AMD_SIGNAL_KIND_USER;
      signals[i].value = 0;
    }
  }
  AQUEDUCT_ALWAYS_INLINE void dispatch(aq::runtime::queue& rq, std::uint64_t kernel_object, std::uint32_t grid,
                                       std::uint16_t block, std::uint64_t a, std::uint64_t b, std::uint64_t c,
                                       std::uint32_t n) {
    auto& q = *reinterpret_cast<amd_queue_t*>(rq.aql().descriptor());
    const std::uint32_t slots = q.hsa_queue.size;
    const std::uint64_t id = __atomic_fetch_add(&q.write_dispatch_id, 1, __ATOMIC_RELAXED);
    if (id + 1 - __atomic_load_n(&q.read_dispatch_id, __ATOMIC_ACQUIRE) > slots) [[unlikely]]
      bench::wait_until([&] { return id + 1 - __atomic_load_n(&q.read_dispatch_id, __ATOMIC_ACQUIRE) <= slots; });
    amd_signal_t* sig = signals + (id & (slots - 1));
    auto* value = const_cast<std::int64_t*>(&sig->value);
    if (__atomic_load_n(value, __ATOMIC_ACQUIRE) != 0) [[unlikely]]  // the slot's previous dispatch runs
      bench::wait_until([&] { return __atomic_load_n(value, __ATOMIC_ACQUIRE) == 0; });
    __atomic_store_n(value, 1, __ATOMIC_RELAXED);  // ordered before the packet by the header's release
    std::byte* ka = kernargs->data() + (id & (slots - 1)) * 256;
    std::memcpy(ka + 0, &a, 8);
    std::memcpy(ka + 8, &b, 8);
    std::memcpy(ka + 16, &c, 8);
    std::memcpy(ka + 24, &n, 4);
    auto* p = static_cast<hsa_kernel_dispatch_packet_t*>(q.hsa_queue.base_address) + (id & (slots - 1));
    p->workgroup_size_x = block;
    p->workgroup_size_y = 1;
    p->workgroup_size_z = 1;
    p->reserved0 = 0;
    p->grid_size_x = grid;
    p->grid_size_y = 1;
    p->grid_size_z = 1;
    p->private_segment_size = 0;
    p->group_segment_size = 0;
    p->kernel_object = kernel_object;
    p->kernarg_address = reinterpret_cast<void*>(kernargs->va().value + (id & (slots - 1)) * 256);
    p->reserved2 = 0;
    p->completion_signal.handle = reinterpret_cast<std::uintptr_t>(sig);
    __atomic_store_n(reinterpret_cast<std::uint32_t*>(p),
                     bench::hsa_dispatch_header | (std::uint32_t{bench::hsa_dispatch_setup} << 16), __ATOMIC_RELEASE);
    __atomic_store_n(rq.aql().get_doorbell().word, id, __ATOMIC_RELEASE);
  }
};

// Dispatches timed behind a gate kernel that holds the emulated processor (see gate_kernel).
constexpr std::uint32_t gated_block = 256;
void close_gate() {
  gate_open.store(false);
  gate_running.store(false);
  (void)rt->args_q->dispatch(*rt->gate, aq::grid{1}, aq::block{1});
  while (!gate_running.load(std::memory_order_acquire)) std::this_thread::yield();
}
template <class Body>
std::vector<double> run_gated(Body body) {
  std::vector<double> out;
  if (!rt->error.empty()) return out;
  const double end = now_ns() + opt.case_ms * 1e6;
  do {
    close_gate();
    const double t0 = now_ns();
    body();
    out.push_back((now_ns() - t0) / gated_block);
    open_gate();
    rt->args_q->finish(std::chrono::seconds(10));
  } while (now_ns() < end);
  return out;
}
// Retired instructions per dispatch of one gated block (under callgrind): a block run once
// uncounted (first-use paths), then one counted; the processor sleeps in the gate meanwhile.
template <class Body>
double count_gated(Body body) {
  if (!rt->error.empty()) return 0;
  for (int counted = 0; counted < 2; ++counted) {
    close_gate();
    if (counted) CALLGRIND_TOGGLE_COLLECT;
    body();
    if (counted) CALLGRIND_TOGGLE_COLLECT;
    rt->args_q->aql().get_doorbell().ring(rt->args_q->write_index() - 1);
    open_gate();
    rt->args_q->finish(std::chrono::seconds(60));
  }
  return gated_block;
}

// The timed bodies (one gated block each).
void body_aqueduct_real_path() {
  const auto a = aq::device_ptr<const float>::at(aq::gpu_va(0x7f0000100000));
  const auto b = aq::device_ptr<const float>::at(aq::gpu_va(0x7f0000200000));
  const auto c = aq::device_ptr<float>::at(aq::gpu_va(0x7f0000300000));
  auto& db = rt->args_q->aql().get_doorbell();
  auto* port = std::exchange(db.port, nullptr);
  for (std::uint32_t i = 0; i < gated_block; ++i)
    (void)rt->args_q->dispatch(*rt->args, aq::grid{256}, aq::block{64}, a, b, c, 256u);
  db.port = port;
}
// The same dispatches through a launch prepared once (queue::prepare(k, block)).
void body_prepared_real_path() {
  const auto a = aq::device_ptr<const float>::at(aq::gpu_va(0x7f0000100000));
  const auto b = aq::device_ptr<const float>::at(aq::gpu_va(0x7f0000200000));
  const auto c = aq::device_ptr<float>::at(aq::gpu_va(0x7f0000300000));
  static const auto launch = rt->args_q->prepare(*rt->args, aq::block{64});
  auto& db = rt->args_q->aql().get_doorbell();
  auto* port = std::exchange(db.port, nullptr);
  for (std::uint32_t i = 0; i < gated_block; ++i) (void)rt->args_q->dispatch(launch, aq::grid{256}, a, b, c, 256u);
  db.port = port;
}
std::shared_ptr<peer_dispatch_args> args_peer;
void body_peer() {
  if (!args_peer->kernargs) args_peer->init(rt->sys->default_agent(), rt->args_q->size());
  const std::uint64_t object = rt->args->info().object.value;
  for (std::uint32_t i = 0; i < gated_block; ++i)
    args_peer->dispatch(*rt->args_q, object, 256, 64, 0x7f0000100000, 0x7f0000200000, 0x7f0000300000, 256);
}

void register_dispatch_args() {
  // The real-device path: the queue's doorbell without the emulator's hook (on /dev/kfd a
  // queue has no port), so exactly the code that runs on a GPU; the hook is restored and rung
  // once after the timed block (the processor is busy in the gate kernel: nothing is missed).
  // Counted under callgrind too (--instructions): the hook is not rung inside the counted block.
  cases.push_back({"dispatch_args/aqueduct", "ns/dispatch", [] {
                     return run_gated([&] {
                       body_aqueduct_real_path();
                       rt->args_q->aql().get_doorbell().ring(rt->args_q->write_index() - 1);
                     });
                   },
                   [] { return count_gated(body_aqueduct_real_path); }, {}, {}});
  cases.push_back({"dispatch_args/aqueduct_prepared", "ns/dispatch", [] {
                     return run_gated([&] {
                       body_prepared_real_path();
                       rt->args_q->aql().get_doorbell().ring(rt->args_q->write_index() - 1);
                     });
                   },
                   [] { return count_gated(body_prepared_real_path); }, {}, {}});
  // The same on the emulator, hook included: what the in-process device adds per dispatch.
  cases.push_back({"dispatch_args/aqueduct_emulated", "ns/dispatch", [] {
                     const auto a = aq::device_ptr<const float>::at(aq::gpu_va(0x7f0000100000));
                     const auto b = aq::device_ptr<const float>::at(aq::gpu_va(0x7f0000200000));
                     const auto c = aq::device_ptr<float>::at(aq::gpu_va(0x7f0000300000));
                     return run_gated([&] {
                       for (std::uint32_t i = 0; i < gated_block; ++i)
                         (void)rt->args_q->dispatch(*rt->args, aq::grid{256}, aq::block{64}, a, b, c, 256u);
                     });
                   }, {}, {}, {}});
  // The emulator's doorbell hook alone (queue_port::ring_doorbell: the in-process device cannot
  // see the store), rung while the processor is busy: what the emulator adds to each dispatch
  // above; on /dev/kfd the queue has no port and this costs nothing.
  cases.push_back({"dispatch_args/emulator_doorbell_hook", "ns/dispatch", [] {
                     return run_gated([&] {
                       auto& db = rt->args_q->aql().get_doorbell();
                       const std::uint64_t last = rt->args_q->write_index() - 1;
                       for (std::uint32_t i = 0; i < gated_block; ++i) db.ring(last);
                     });
                   }, {}, {}, {}});
  args_peer = std::make_shared<peer_dispatch_args>();
  cases.push_back({"dispatch_args/peer_by_hand", "ns/dispatch", [] {
                     if (!rt->error.empty()) return std::vector<double>{};
                     return run_gated(body_peer);
                   },
                   [] { return count_gated(body_peer); }, {}, {}});
}

void register_e2e() {
  cases.push_back({"e2e/round_trip", "ns/dispatch", [] {
                     std::vector<double> out;
                     if (!rt->error.empty()) return out;
                     const int n = opt.quick ? 5 : 200;
                     for (int i = 0; i < n; ++i) {
                       const double t0 = now_ns();
                       auto id = rt->spin_q->dispatch(*rt->empty, aq::grid{1}, aq::block{1});
                       rt->spin_q->wait(id, std::chrono::seconds(10));
                       out.push_back(now_ns() - t0);
                     }
                     return out;
                   }, {}, {}, {}});
  cases.push_back({"e2e/pipelined/dispatches:64", "ns/dispatch", [] {
                     std::vector<double> out;
                     if (!rt->error.empty()) return out;
                     const int n = opt.quick ? 2 : 20;
                     for (int i = 0; i < n; ++i) {
                       const double t0 = now_ns();
                       for (int j = 0; j < 64; ++j) (void)rt->spin_q->dispatch(*rt->empty, aq::grid{1}, aq::block{1});
                       rt->spin_q->finish(std::chrono::seconds(10));
                       out.push_back((now_ns() - t0) / 64);
                     }
                     return out;
                   }, {}, {}, {}});
  // Streaming: empty dispatches back to back into a 1024-slot queue (a full ring waits for room),
  // one wait at the end; ns per dispatch = 1 / throughput, to compare with a queue's item rate.
  cases.push_back({"e2e/throughput", "ns/dispatch", [] {
                     std::vector<double> out;
                     if (!rt->error.empty()) return out;
                     const int n = opt.quick ? 256 : 8192;
                     const double t0 = now_ns();
                     for (int j = 0; j < n; ++j) (void)rt->spin_q->dispatch(*rt->empty, aq::grid{1}, aq::block{1});
                     rt->spin_q->finish(std::chrono::seconds(10));
                     out.push_back((now_ns() - t0) / n);
                     return out;
                   }, {}, {}, {}});
  // Interrupts the emulated device raised for 64 pipelined dispatches and ONE wait on a blocking
  // queue (emu::device::interrupts()); issue 11: at most one per wait.
  cases.push_back({"e2e/interrupts_per_wait", "interrupts", [] {
                     std::vector<double> out;
                     if (!rt->error.empty()) return out;
                     auto* dev = aq::emu::device_of(rt->sys->default_agent());
                     if (!dev) return out;
                     for (int r = 0; r < (opt.quick ? 1 : 3); ++r) {
                       const std::uint64_t before = dev->interrupts();
                       for (int j = 0; j < 64; ++j) (void)rt->block_q->dispatch(*rt->empty, aq::grid{1}, aq::block{1});
                       rt->block_q->finish(std::chrono::seconds(10));
                       out.push_back(static_cast<double>(dev->interrupts() - before));
                     }
                     return out;
                   }, {}, {}, {}});
  // CPU time of the thread blocked in a wait, as a fraction of the wait's wall time (a kernel that
  // sleeps 30 ms). Reported in percent.
  cases.push_back({"e2e/blocked_wait_cpu", "% of a core", [] {
                     std::vector<double> out;
                     if (!rt->error.empty()) return out;
                     auto id = rt->block_q->dispatch(*rt->sleepy, aq::grid{1}, aq::block{1});
                     const double c0 = thread_cpu_ns(), t0 = now_ns();
                     rt->block_q->wait(id, std::chrono::seconds(10));
                     out.push_back(100.0 * (thread_cpu_ns() - c0) / (now_ns() - t0));
                     return out;
                   }, {}, {}, {}});
}

// ---- report ---------------------------------------------------------------------------------------

std::string json_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    if (static_cast<unsigned char>(c) < 0x20) continue;
    o += c;
  }
  return o;
}

std::string first_line(const char* path) {
  std::ifstream in(path);
  std::string l;
  std::getline(in, l);
  return l;
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string l;
  while (std::getline(in, l))
    if (l.rfind("model name", 0) == 0) return l.substr(l.find(':') + 2);
  return "unknown";
}

const bench_case* find(const std::string& name) {
  for (const auto& c : cases)
    if (c.name == name) return c.values.empty() ? nullptr : &c;
  return nullptr;
}

struct verdict {
  std::string target, measured;
  double ratio = 0, bound = 0;
  bool higher_is_better = false;  // ratio must be >= bound
  bool measured_ok = false;
  [[nodiscard]] bool met() const { return measured_ok && (higher_is_better ? ratio >= bound : ratio <= bound); }
};
std::vector<verdict> verdicts;

void ratio_verdict(const std::string& target, const std::string& a, const std::string& b, double bound,
                   bool higher_is_better = false) {
  const bench_case* x = find(a);
  const bench_case* y = find(b);
  verdict v{target, "", 0, bound, higher_is_better, false};
  if (x && y && y->med() > 0) {
    v.ratio = higher_is_better ? y->med() / x->med() : x->med() / y->med();
    char buf[160];
    std::snprintf(buf, sizeof buf, "%.2f / %.2f %s", higher_is_better ? 1e9 / x->med() / 1e6 : x->med(),
                  higher_is_better ? 1e9 / y->med() / 1e6 : y->med(), higher_is_better ? "M/s" : x->unit.c_str());
    v.measured = buf;
    v.measured_ok = true;
  } else {
    v.measured = "not measured";
  }
  verdicts.push_back(v);
}

void compute_verdicts(const std::map<std::string, double>& instr) {
  for (const char* b : {"1", "8", "64", "512"}) {
    for (const char* s : {"sp_value", "sp_if", "sp_submit", "sp_submit_batch", "sp_submit_fill", "sp_prebuilt"})
      if (std::strcmp(s, "sp_submit") != 0 || std::strcmp(b, "1") == 0)
        ratio_verdict(std::string("SP publish ") + s + " batch " + b + " <= 1.0x HSA SP in place",
                    std::string("publish/") + s + "/batch:" + b, std::string("publish/peer_hsa_sp/batch:") + b, 1.0);
    for (const char* s : {"mp_if", "mp_value"})
      ratio_verdict(std::string("MP publish ") + s + " batch " + b + " (1 thread) <= 1.1x HSA MP",
                    std::string("publish/") + s + "/batch:" + b, std::string("publish/peer_hsa_mp/batch:") + b, 1.1);
    ratio_verdict(std::string("MP publish mp_if batch ") + b + " (2 threads) <= 1.1x HSA MP",
                  std::string("publish/mp_if/batch:") + b + "/threads:2",
                  std::string("publish/peer_hsa_mp/batch:") + b + "/threads:2", 1.1);
  }
  // The copying styles against the same protocol copying the same packets (session 17): a packet
  // read from memory costs its loads, which the in-place peer, storing values it holds in
  // registers, never pays. sp_prebuilt against the HSA SP sequence copying the same prebuilt
  // array; sp_submit_batch (an array written, then submitted) against the HSA SP sequence that
  // writes an array, then copies it. Of the peer's two body copies (field by field, one 60-byte
  // memcpy) the faster one in this run is the peer.
  for (const char* b : {"1", "8", "64", "512"})
    for (const auto& [ours, peer, what] : {std::tuple{"sp_prebuilt", "copy", "copying the same prebuilt array"},
                                           std::tuple{"sp_submit_batch", "array", "writing an array, then copying it"}}) {
      const std::string batch = std::string("/batch:") + b;
      const std::string fields = std::string("publish/peer_hsa_sp_") + peer + "_fields" + batch;
      const std::string copied = std::string("publish/peer_hsa_sp_") + peer + "_memcpy" + batch;
      const bench_case* f = find(fields);
      const bench_case* m = find(copied);
      const std::string& best = f && m && m->med() < f->med() ? copied : fields;
      ratio_verdict(std::string("SP publish ") + ours + " batch " + b + " <= 1.0x HSA SP " + what, std::string("publish/") + ours + batch,
                    best, 1.0);
      auto a = instr.find(std::string("publish/") + ours + batch);
      auto pf = instr.find(fields), pm = instr.find(copied);
      if (a == instr.end() || pf == instr.end() || pm == instr.end()) continue;
      const double peer_ir = std::min(pf->second, pm->second);
      char buf[80];
      std::snprintf(buf, sizeof buf, "%.1f / %.1f Ir/packet", a->second, peer_ir);
      verdicts.push_back({std::string("SP instructions ") + ours + batch + " <= 1.1x HSA SP " + what, buf, a->second / peer_ir, 1.1,
                          false, peer_ir > 0});
    }
  for (const char* b : {"1", "8", "64"}) {
    for (const char* st : {"sp_value", "sp_if", "sp_submit"})
      if (std::strcmp(st, "sp_submit") != 0 || std::strcmp(b, "1") == 0)
      ratio_verdict(std::string("user TU: ") + st + " batch " + b + " <= 1.0x HSA SP in place (same TU)",
                    std::string("user_tu/") + st + "/batch:" + b, std::string("user_tu/peer_hsa_sp/batch:") + b, 1.0);
    ratio_verdict(std::string("user TU: mp_value batch ") + b + " <= 1.1x HSA MP (same TU)",
                  std::string("user_tu/mp_value/batch:") + b, std::string("user_tu/peer_hsa_mp/batch:") + b, 1.1);
  }
  for (const auto& [name, ir] : instr) {  // user TU: same-TU peers
    if (name.rfind("user_tu/", 0) != 0 || name.find("/peer_") != std::string::npos) continue;
    const std::string batch = name.substr(name.rfind('/') + 1);
    const bool mp = name.find("/mp_") != std::string::npos;
    auto peer = instr.find(std::string("user_tu/peer_hsa_") + (mp ? "mp/" : "sp/") + batch);
    verdict v{"user TU instructions " + name.substr(8) + (mp ? " <= 1.1x HSA MP" : " <= 1.1x HSA SP"), "", 0, 1.1, false, false};
    if (peer != instr.end() && peer->second > 0) {
      v.ratio = ir / peer->second;
      char buf[80];
      std::snprintf(buf, sizeof buf, "%.1f / %.1f Ir/packet", ir, peer->second);
      v.measured = buf;
      v.measured_ok = true;
    }
    verdicts.push_back(v);
  }
  for (const auto& [name, ir] : instr) {  // MP publish: HSA MP peer
    if (name.rfind("publish/mp_", 0) != 0 || name.find("threads") != std::string::npos) continue;
    const std::string batch = name.substr(name.rfind('/') + 1);
    auto peer = instr.find("publish/peer_hsa_mp/" + batch);
    verdict v{"MP instructions " + name.substr(8) + " <= 1.1x HSA MP", "", 0, 1.1, false, false};
    if (peer != instr.end() && peer->second > 0) {
      v.ratio = ir / peer->second;
      char buf[80];
      std::snprintf(buf, sizeof buf, "%.1f / %.1f Ir/packet", ir, peer->second);
      v.measured = buf;
      v.measured_ok = true;
    }
    verdicts.push_back(v);
  }
  for (const auto& [name, ir] : instr) {
    if (name.rfind("publish/sp_", 0) != 0) continue;
    const std::string batch = name.substr(name.rfind('/') + 1);
    auto peer = instr.find("publish/peer_hsa_sp/" + batch);
    verdict v{"SP instructions " + name.substr(8) + " <= 1.1x HSA SP", "", 0, 1.1, false, false};
    if (peer != instr.end() && peer->second > 0) {
      v.ratio = ir / peer->second;
      char buf[80];
      std::snprintf(buf, sizeof buf, "%.1f / %.1f Ir/packet", ir, peer->second);
      v.measured = buf;
      v.measured_ok = true;
    }
    verdicts.push_back(v);
  }
  // PM4 and SDMA: the bound is 1.0x the hand-written stream, for instructions as for time.
  for (const char* ours : {"pm4/dispatch/aqueduct", "pm4/dispatch/aqueduct_prebuilt", "sdma/copy/aqueduct"}) {
    const std::string name = ours;
    auto a = instr.find(name);
    auto b = instr.find(name.substr(0, name.rfind('/')) + "/peer_by_hand");
    if (a == instr.end() || b == instr.end() || b->second <= 0) continue;
    char buf[80];
    std::snprintf(buf, sizeof buf, "%.1f / %.1f Ir/command", a->second, b->second);
    const char* what = name == "pm4/dispatch/aqueduct"            ? "PM4 dispatch instructions"
                       : name == "pm4/dispatch/aqueduct_prebuilt" ? "PM4 dispatch, prebuilt template, instructions"
                                                                  : "SDMA copy enqueue instructions";
    verdicts.push_back({std::string(what) + " <= 1.0x hand-written", buf, a->second / b->second, 1.0, false, true});
  }
  for (const char* ours : {"aqueduct", "aqueduct_prepared"})
    if (auto a = instr.find(std::string("dispatch_args/") + ours), b = instr.find("dispatch_args/peer_by_hand");
        a != instr.end() && b != instr.end() && b->second > 0) {
      char buf[80];
      std::snprintf(buf, sizeof buf, "%.1f / %.1f Ir/dispatch", a->second, b->second);
      verdicts.push_back({std::string("runtime ") + (std::strcmp(ours, "aqueduct") == 0 ? "q.dispatch(k, grid, block, args)" : "q.dispatch(prepared, grid, args)") +
                              " instructions <= 1.2x hand-written kernargs + packet",
                          buf, a->second / b->second, 1.2, false, true});
    }
  ratio_verdict("round trip (empty dispatch, spin) <= 3x ping-pong", "e2e/round_trip", "pingpong", 3.0);
  ratio_verdict("emulated AQL throughput >= 0.25x boost spsc 64-byte items", "e2e/throughput", "queue/boost_spsc", 0.25, true);
  if (const bench_case* c = find("e2e/blocked_wait_cpu")) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.3f %% of a core", c->med());
    verdicts.push_back({"blocked wait uses < 1% of a core", buf, c->med() / 100.0, 0.01, false, true});
  } else {
    verdicts.push_back({"blocked wait uses < 1% of a core", "not measured", 0, 0.01, false, false});
  }
  ratio_verdict("runtime q.dispatch(k, grid, block, 4 args) <= 1.2x hand-written kernargs + packet",
                "dispatch_args/aqueduct", "dispatch_args/peer_by_hand", 1.2);
  ratio_verdict("runtime q.dispatch(prepared, grid, 4 args) <= 1.2x hand-written kernargs + packet",
                "dispatch_args/aqueduct_prepared", "dispatch_args/peer_by_hand", 1.2);
  ratio_verdict("PM4 dispatch <= 1.0x hand-written dword stream", "pm4/dispatch/aqueduct", "pm4/dispatch/peer_by_hand", 1.0);
  ratio_verdict("PM4 dispatch, prebuilt template <= 1.0x hand-written dword stream", "pm4/dispatch/aqueduct_prebuilt",
                "pm4/dispatch/peer_by_hand", 1.0);
  ratio_verdict("SDMA copy enqueue <= 1.0x hand-written", "sdma/copy/aqueduct", "sdma/copy/peer_by_hand", 1.0);
  if (const bench_case* c = find("e2e/interrupts_per_wait")) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.0f interrupt(s) / wait", c->med());
    verdicts.push_back({"64 pipelined dispatches + one wait raise <= 1 interrupt", buf, c->med(), 1.0, false, true});
  } else {
    verdicts.push_back({"64 pipelined dispatches + one wait raise <= 1 interrupt", "not measured", 0, 1.0, false, false});
  }
}

void print_table(std::FILE* out, const std::string& where) {
  std::fprintf(out, "\naqueduct-bench — %s, commit %s, %s build\n", cpu_model().c_str(), aqueduct_bench_commit,
               AQUEDUCT_BENCH_BUILD_TYPE);
  std::fprintf(out, "device: %s; load average at the end: %s\n", where.c_str(), first_line("/proc/loadavg").c_str());
  std::fprintf(out, "publish cases run on ordinary memory (no device); medians of %d interleaved repetitions\n\n", opt.reps);
  std::fprintf(out, "%-44s %12s  %-14s %6s\n", "case", "median", "unit", "cv");
  for (const auto& c : cases) {
    if (c.values.empty()) {
      std::fprintf(out, "%-44s %12s\n", c.name.c_str(), "skipped");
      continue;
    }
    double mean = 0, var = 0;
    for (double v : c.values) mean += v;
    mean /= c.values.size();
    for (double v : c.values) var += (v - mean) * (v - mean);
    const double cv = c.values.size() > 1 && mean > 0 ? std::sqrt(var / (c.values.size() - 1)) / mean : 0;
    std::fprintf(out, "%-44s %12.2f  %-14s %5.0f%%\n", c.name.c_str(), c.med(), c.unit.c_str(), cv * 100);
  }
}

void print_verdicts(std::FILE* out) {
  std::fprintf(out, "\n%-72s %-26s %7s %s\n", "target (issue 11)", "measured (ours / peer)", "ratio", "verdict");
  int met = 0, missed = 0;
  for (const auto& v : verdicts) {
    if (!v.measured_ok && !opt.filter.empty()) continue;  // a filtered run lists what it measured
    const char* word = !v.measured_ok ? "-" : v.met() ? "met" : "MISSED";
    if (v.measured_ok) (v.met() ? met : missed)++;
    if (v.measured_ok)
      std::fprintf(out, "%-72s %-26s %7.2f %s\n", v.target.c_str(), v.measured.c_str(), v.ratio, word);
    else
      std::fprintf(out, "%-72s %-26s %7s %s\n", v.target.c_str(), v.measured.c_str(), "", word);
  }
  std::fprintf(out, "\n%d targets met, %d missed (ratios are same-run medians; on a loaded machine rerun before quoting)\n",
               met, missed);
}

void write_json(const std::string& path, const std::string& where, const std::map<std::string, double>& instr) {
  std::ofstream o(path);
  utsname u{};
  uname(&u);
  o << "{\n  \"machine\": {\"cpu\": \"" << json_escape(cpu_model()) << "\", \"logical_cpus\": "
    << std::thread::hardware_concurrency() << ", \"kernel\": \"" << u.sysname << " " << u.release << " " << u.machine
    << "\", \"loadavg\": \"" << json_escape(first_line("/proc/loadavg")) << "\"},\n";
  o << "  \"commit\": \"" << aqueduct_bench_commit << "\", \"build\": \"" << AQUEDUCT_BENCH_BUILD_TYPE << "\",\n";
  o << "  \"device\": \"" << json_escape(where) << "\", \"repetitions\": " << opt.reps << ",\n  \"cases\": [\n";
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const auto& c = cases[i];
    o << "    {\"name\": \"" << c.name << "\", \"unit\": \"" << c.unit << "\", \"median\": " << c.med() << ", \"repetitions\": [";
    for (std::size_t j = 0; j < c.values.size(); ++j) o << (j ? ", " : "") << c.values[j];
    o << "]";
    if (auto it = instr.find(c.name); it != instr.end()) o << ", \"instructions_per_packet\": " << it->second;
    o << "}" << (i + 1 < cases.size() ? "," : "") << "\n";
  }
  o << "  ],\n  \"targets\": [\n";
  for (std::size_t i = 0; i < verdicts.size(); ++i) {
    const auto& v = verdicts[i];
    o << "    {\"target\": \"" << json_escape(v.target) << "\", \"measured\": \"" << json_escape(v.measured) << "\"";
    if (v.measured_ok) o << ", \"ratio\": " << v.ratio << ", \"bound\": " << v.bound << ", \"met\": " << (v.met() ? "true" : "false");
    o << "}" << (i + 1 < verdicts.size() ? "," : "") << "\n";
  }
  o << "  ]\n}\n";
}

// Two panels: the distribution of per-block samples of every publish case (box: quartiles,
// whiskers: 5th/95th percentile) and the ratio of every measured target against its bound.
bool write_plot(const std::string& png) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("aqueduct-bench-plot-" + std::to_string(getpid()));
  fs::create_directories(dir);
  // One line per case: x, 5th/25th/50th/75th/95th percentile of its samples, color, label.
  // Peers (names with "peer", and the queues and ping-pong) are drawn in grey, aqueduct in blue.
  auto write_dist = [&](const fs::path& file, auto&& keep) {
    std::ofstream d(file);
    int x = 0;
    for (const auto& c : cases) {
      if (!keep(c.name) || c.samples.empty()) continue;
      std::vector<double> s = c.samples;
      std::sort(s.begin(), s.end());
      auto pct = [&](double p) { return s[static_cast<std::size_t>(p * (s.size() - 1))]; };
      const bool peer = c.name.find("peer") != std::string::npos || c.name.rfind("queue/", 0) == 0 || c.name == "pingpong";
      d << x++ << " " << pct(0.05) << " " << pct(0.25) << " " << pct(0.5) << " " << pct(0.75) << " " << pct(0.95) << " "
        << (peer ? "8947848" : "2056127") << " \"" << c.name << " (" << c.unit << ")\"\n";
    }
    return x;
  };
  const int n_publish = write_dist(dir / "publish.dat", [](const std::string& n) {
    return n.rfind("publish/", 0) == 0 || n.rfind("user_tu/", 0) == 0;
  });
  const int n_other = write_dist(dir / "other.dat", [](const std::string& n) {
    return n.rfind("publish/", 0) != 0 && n.rfind("user_tu/", 0) != 0 && n != "e2e/blocked_wait_cpu" &&
           n != "e2e/interrupts_per_wait";
  });
  {
    std::ofstream r(dir / "ratio.dat");
    int x = 0;
    for (const auto& v : verdicts) {
      if (!v.measured_ok) continue;
      const double norm = v.bound > 0 ? (v.higher_is_better ? v.bound / v.ratio : v.ratio / v.bound) : 0;  // <= 1: met
      r << x++ << " " << norm << " " << (v.met() ? "2924588" : "14034728") << " \"" << v.target << "\"\n";
    }
  }
  std::ofstream g(dir / "plot.gp");
  g << "set terminal png size 2000,2100 font ',9'\nset output '" << png << "'\nset termoption noenhanced\n"
    << "set multiplot layout 3,1 title 'aqueduct-bench: " << cpu_model() << ", commit " << aqueduct_bench_commit
    << ", load " << first_line("/proc/loadavg") << "'\n"
    << "set xtics rotate by 60 right\nset boxwidth 0.6\nset grid ytics\nset logscale y\nset style fill empty\n"
    << "set ylabel 'ns per packet'\n"
    << "set title 'publish cost per packet: per-block samples (box 25-75%, whiskers 5-95%, thick line median; grey = peer)'\n";
  if (n_publish > 0)
    g << "plot '" << (dir / "publish.dat").string()
      << "' using 1:3:2:6:5:7:xticlabels(8) with candlesticks whiskerbars lc rgb variable lw 1 notitle, '' using "
         "1:4:4:4:4:7 with candlesticks lc rgb variable lw 3 notitle\n";
  else
    g << "set multiplot next\n";
  g << "set ylabel 'ns per unit (log)'\n"
    << "set title 'commands, runtime dispatch, queues, ping-pong, end to end: samples (same boxes)'\n";
  if (n_other > 0)
    g << "plot '" << (dir / "other.dat").string()
      << "' using 1:3:2:6:5:7:xticlabels(8) with candlesticks whiskerbars lc rgb variable lw 1 notitle, '' using "
         "1:4:4:4:4:7 with candlesticks lc rgb variable lw 3 notitle\n";
  else
    g << "set multiplot next\n";
  g << "set title 'each target of issue 11: measured ratio / bound (<= 1 is met; green met, red missed)'\n"
    << "set ylabel 'ratio / bound (log)'\nset style fill solid 0.7\nset yrange [0.05:*]\n"
    << "set bmargin 28\n"
    << "plot '" << (dir / "ratio.dat").string()
    << "' using 1:2:3:xticlabels(4) with boxes lc rgb variable notitle, 1 with lines lw 2 lc rgb 'black' notitle\n"
    << "unset multiplot\n";
  g.close();
  const std::string cmd = "gnuplot '" + (dir / "plot.gp").string() + "' 2>&1";
  const int rc = std::system(cmd.c_str());
  std::error_code ec;
  fs::remove_all(dir, ec);
  return rc == 0;
}

// ---- instructions under callgrind ---------------------------------------------------------------------

// The parent re-runs itself under callgrind with collection off; the child turns it on around one
// block of every publish case and dumps one profile per case, named after it. Returns Ir/packet.
std::map<std::string, double> measure_instructions(const char* self) {
  namespace fs = std::filesystem;
  std::map<std::string, double> out;
  if (std::system("valgrind --version >/dev/null 2>&1") != 0) {
    std::fprintf(stderr, "aqueduct-bench: valgrind not found; no instruction counts (apt install valgrind)\n");
    return out;
  }
  const fs::path dir = fs::temp_directory_path() / ("aqueduct-bench-cg-" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::string cmd = "valgrind --tool=callgrind --collect-atstart=no --callgrind-out-file='" + (dir / "cg.out").string() +
                    "' '" + std::string(self) + "' --instructions-child";
  if (!opt.filter.empty()) cmd += " --filter '" + opt.filter + "'";
  cmd += " >'" + (dir / "child.log").string() + "' 2>&1";
  std::fprintf(stderr, "counting instructions under callgrind (about a minute)...\n");
  if (std::system(cmd.c_str()) != 0) {
    std::fprintf(stderr, "aqueduct-bench: the callgrind run failed (log in %s)\n", (dir / "child.log").c_str());
    return out;
  }
  std::map<std::string, double> packets;
  {
    std::ifstream in(dir / "child.log");
    std::string l;
    while (std::getline(in, l))
      if (l.rfind("packets ", 0) == 0) {
        std::istringstream is(l.substr(8));
        std::string name;
        double n = 0;
        is >> name >> n;
        packets[name] = n;
      }
  }
  for (const auto& e : fs::directory_iterator(dir)) {
    std::ifstream in(e.path());
    std::string l, name;
    double ir = -1;
    while (std::getline(in, l)) {
      if (l.rfind("desc: Trigger: Client Request: ", 0) == 0) name = l.substr(31);
      else if (l.rfind("summary: ", 0) == 0 || l.rfind("totals: ", 0) == 0) ir = std::atof(l.c_str() + l.find(' ') + 1);
    }
    if (!name.empty() && ir >= 0 && packets.count(name)) out[name] = ir / packets[name];
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
  return out;
}

bool selected(const bench_case& c) { return opt.filter.empty() || c.name.find(opt.filter) != std::string::npos; }

int usage() {
  std::fprintf(stderr,
               "usage: aqueduct-bench [--quick] [--reps N] [--json FILE] [--plot FILE.png] [--instructions] [--filter S]\n"
               "  --quick         a few iterations only (smoke test; numbers meaningless)\n"
               "  --reps N        interleaved repetitions (default 7)\n"
               "  --json FILE     machine, commit, every case's repetitions and the verdicts as JSON\n"
               "  --plot FILE.png latency distributions and ratio bars (needs gnuplot)\n"
               "  --instructions  also count retired instructions per packet under callgrind (needs valgrind)\n"
               "  --filter S      only the cases whose name contains S\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : std::string(); };
    if (a == "--quick") opt.quick = true;
    else if (a == "--reps") opt.reps = std::max(1, std::atoi(next().c_str()));
    else if (a == "--json") opt.json = next();
    else if (a == "--plot") opt.plot = next();
    else if (a == "--filter") opt.filter = next();
    else if (a == "--instructions") opt.instructions = true;
    else if (a == "--instructions-child") opt.instructions_child = true;
    else return usage();
  }
  if (opt.quick) {
    opt.reps = std::min(opt.reps, 2);
    opt.case_ms = 0.2;
  }
  register_publish();
  register_commands();
  register_user_tu();
  if (const std::string why = bench::same_stream(); !why.empty())
    std::fprintf(stderr, "aqueduct-bench: a hand-written command peer does not write aqueduct's dwords: %s\n", why.c_str());

  if (opt.instructions_child) {  // under callgrind: one counted block per single-thread case
    open_runtime();
    register_dispatch_args();
    for (auto& c : cases) {
      if (!c.instructions || !selected(c)) continue;
      const double n = c.instructions();
      if (n <= 0) continue;
      CALLGRIND_DUMP_STATS_AT(c.name.c_str());
      std::printf("packets %s %.0f\n", c.name.c_str(), n);
    }
    open_gate();
    rt.reset();
    return 0;
  }

  register_queues();
  open_runtime();
  register_e2e();
  register_dispatch_args();
  const std::string where = rt->where.empty() ? "no device (" + rt->error + ")" : rt->where;
  std::fprintf(stderr, "aqueduct-bench: end-to-end cases run on the %s\n", where.c_str());
  if (!rt->error.empty()) std::fprintf(stderr, "aqueduct-bench: end-to-end cases skipped: %s\n", rt->error.c_str());

  std::vector<bench_case*> run;
  for (auto& c : cases)
    if (selected(c)) run.push_back(&c);
  std::mt19937 rng(12345);
  const auto start = clk::now();
  for (int rep = 0; rep < opt.reps; ++rep) {
    std::shuffle(run.begin(), run.end(), rng);
    for (std::size_t k = 0; k < run.size(); ++k) {
      std::fprintf(stderr, "\rrepetition %d/%d, case %3zu/%zu  %-44s", rep + 1, opt.reps, k + 1, run.size(),
                   run[k]->name.c_str());
      std::vector<double> s = run[k]->run();
      if (s.empty()) continue;
      run[k]->values.push_back(median(s));
      run[k]->samples.insert(run[k]->samples.end(), s.begin(), s.end());
    }
  }
  std::fprintf(stderr, "\rmeasured %zu cases x %d repetitions in %.1f s%60s\n", run.size(), opt.reps,
               std::chrono::duration<double>(clk::now() - start).count(), "");
  open_gate();
  rt->spin_q.reset();
  rt->block_q.reset();
  rt->args_q.reset();

  std::map<std::string, double> instr;
  if (opt.instructions) instr = measure_instructions(argv[0]);
  compute_verdicts(instr);
  print_table(stdout, where);
  if (!instr.empty()) {
    std::printf("\nretired instructions per packet (callgrind, one block each)\n");
    for (const auto& [name, ir] : instr) std::printf("%-44s %10.1f Ir/packet\n", name.c_str(), ir);
  }
  print_verdicts(stdout);
  if (!opt.json.empty()) {
    write_json(opt.json, where, instr);
    std::printf("wrote %s\n", opt.json.c_str());
  }
  if (!opt.plot.empty()) {
    if (write_plot(opt.plot)) std::printf("wrote %s\n", opt.plot.c_str());
    else std::fprintf(stderr, "aqueduct-bench: gnuplot failed; no plot (apt install gnuplot-nox)\n");
  }
  rt.reset();
  return 0;
}
