// queue/aql_queue.hpp driving the real emulated packet processor (emu/aql_processor.hpp):
// multi-producer submission checked packet by packet with the processor's sequence_check hook
// (also in adversarial mode, which re-reads bodies to catch a header published before its body),
// completion signals with event mailboxes waking a blocked sync::signal_ref wait through
// sync::host_events, and a stalled queue described in a wait's timeout.
#include "emu_ports.hpp"
#include <aqueduct/emu/aql_processor.hpp>
#include <aqueduct/queue/aql_queue.hpp>
#include <aqueduct/sync/host_events.hpp>
#include <aqueduct/sync/signal.hpp>

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

namespace q = aqueduct::ring;
namespace abi = aqueduct::abi;
namespace emu = aqueduct::emu;
namespace asy = aqueduct::sync;
using namespace std::chrono_literals;

using aq_test::test_events;
using aq_test::test_vm;

namespace {

// The emulator's interrupt → an event a host thread can block on.
class events_adapter final : public emu::event_notifier {
 public:
  explicit events_adapter(asy::host_events& e) : e_(e) {}
  void signal_event(std::uint32_t id) noexcept override { e_.signal(id); }

 private:
  asy::host_events& e_;
};

// The doorbell of an emulated queue: a write the processor watches.
struct emu_doorbell {
  std::unique_ptr<emu::aql_processor>* proc;
  void ring(std::uint64_t last_index) noexcept {
    if (*proc) (*proc)->ring_doorbell(last_index);
  }
};

struct fixture {
  explicit fixture(std::uint32_t slots) : size(slots) {
    ring = static_cast<abi::aql_slot*>(std::aligned_alloc(64, 64 * slots));
    std::memset(ring, 0, 64 * slots);
    desc = static_cast<abi::amd_queue*>(std::aligned_alloc(64, sizeof(abi::amd_queue)));
    std::memset(desc, 0, sizeof(abi::amd_queue));
    signals = static_cast<abi::amd_signal*>(std::aligned_alloc(64, sizeof(abi::amd_signal) * 8));
    std::memset(signals, 0, sizeof(abi::amd_signal) * 8);
    vm.map(ring, 64 * slots);
    vm.map(desc, sizeof(abi::amd_queue));
    vm.map(signals, sizeof(abi::amd_signal) * 8);
    vm.map(mailbox, sizeof mailbox);
  }
  ~fixture() {
    if (proc) proc->stop();
    proc.reset();
    std::free(ring);
    std::free(desc);
    std::free(signals);
  }
  q::aql_queue_memory mem() { return {desc, ring, size}; }
  void attach(emu::aql_processor_options opt = {}) {
    emu::aql_queue_binding b;
    b.ring_va = reinterpret_cast<std::uintptr_t>(ring);
    b.ring_bytes = 64ull * size;
    b.read_pointer_va = reinterpret_cast<std::uintptr_t>(&desc->read_dispatch_id);
    b.write_pointer_va = reinterpret_cast<std::uintptr_t>(&desc->write_dispatch_id);
    b.amd_queue_va = reinterpret_cast<std::uintptr_t>(desc);
    proc = emu::aql_processor::create(b, vm, notifier, registry, std::move(opt));
  }
  std::uint64_t handle(int i) const { return reinterpret_cast<std::uintptr_t>(&signals[i]); }

  std::uint32_t size;
  abi::aql_slot* ring;
  abi::amd_queue* desc;
  abi::amd_signal* signals;
  alignas(8) std::uint64_t mailbox[4] = {};
  test_vm vm;
  asy::host_events events{16};
  events_adapter notifier{events};
  emu::host_kernel_registry registry;  // no kernels: these tests dispatch only barriers
  std::unique_ptr<emu::aql_processor> proc;
};

// A no-op barrier carrying (producer, sequence) in reserved2 for the processor's sequence check.
abi::barrier_and_packet numbered(std::uint64_t producer, std::uint64_t seq) {
  auto p = q::make_packet(q::barrier_and{.scopes = q::fences::agent()});
  p.reserved2 = producer << 32 | seq;
  return p;
}

void run_mp(std::uint64_t per_producer, bool adversarial) {
  constexpr int producers = 4;
  fixture f(16);
  q::aql_queue_mp<emu_doorbell> queue(f.mem(), emu_doorbell{&f.proc});
  std::vector<std::uint64_t> next(producers, 0);  // processor thread only
  emu::aql_processor_options opt;
  opt.adversarial = adversarial;
  opt.adversarial_recheck = 20us;
  opt.sequence_check = [&next](std::uint64_t, const abi::aql_slot& s) {
    abi::barrier_and_packet p;
    std::memcpy(&p, s.bytes, sizeof p);
    const auto producer = p.reserved2 >> 32, seq = p.reserved2 & 0xFFFFFFFFu;
    if (producer >= producers || seq != next[producer]) return false;
    ++next[producer];
    return true;
  };
  f.attach(std::move(opt));
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int p = 0; p < producers; ++p) {
    threads.emplace_back([&, p] {
      for (std::uint64_t i = 0; i < per_producer;) {
        const std::uint32_t n = (i % 5 == 0 && per_producer - i >= 2) ? 2 : 1;
        auto r = queue.try_reserve(n, 10s);
        if (!r) {
          failures.fetch_add(1);
          return;
        }
        for (std::uint32_t k = 0; k < n; ++k) r->write(k, numbered(p, i + k));
        r->publish();
        i += n;
      }
    });
  }
  for (auto& t : threads) t.join();
  const std::uint64_t total = per_producer * producers;
  CHECK(failures.load() == 0);
  CHECK(f.proc->wait_retired(total, 20s));
  if (f.proc->has_error()) FAIL(f.proc->error()->detail);
  CHECK(f.desc->read_dispatch_id == total);
  CHECK(f.proc->doorbell_value() < total);  // some producer's last index (each rings its own)
  f.proc->stop();
  for (int p = 0; p < producers; ++p) CHECK(next[p] == per_producer);
}

}  // namespace

TEST_CASE("emulated processor: 4 producers through a 16-slot multi-producer queue, every packet in order") {
  run_mp(25000, false);
}

TEST_CASE("emulated processor, adversarial mode: no body is ever written after its header") {
  run_mp(500, true);
}

TEST_CASE("emulated processor: a completion signal's event wakes a blocked waiter") {
  fixture f(8);
  q::aql_queue_sp<emu_doorbell> queue(f.mem(), emu_doorbell{&f.proc});
  f.attach();
  asy::signal_ref dep(&f.signals[0]), done(&f.signals[1]);
  asy::signal_ref::initialize(f.signals[0], 1);
  asy::signal_ref::initialize(f.signals[1], 1, reinterpret_cast<std::uintptr_t>(&f.mailbox[0]), 5);
  queue.submit(q::make_packet(q::barrier_and{.deps = q::dependencies({dep.handle()}), .completion_signal = done.handle()}));

  // Still blocked on `dep`: the wait times out and describes the stalled barrier.
  auto r = done.try_wait_eq(0, 30ms, f.events, asy::wait_policy::block(), queue.diagnostics());
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error() == aqueduct::errc::timeout);
  CHECK(std::string(r.detail()).find("packet 0 (slot 0): BARRIER_AND") != std::string::npos);

  std::thread host([&] {
    std::this_thread::sleep_for(50ms);
    dep.store(0, std::memory_order_release);
    f.proc->notify();
  });
  const auto v = done.wait_eq(0, 5s, f.events, asy::wait_policy::block());
  host.join();
  CHECK(v == 0);
  CHECK(f.mailbox[0] == 5);  // the processor wrote event_id to the mailbox
  CHECK(f.events.signal_count(5) >= 1);
  CHECK(f.proc->wait_retired(1, 1s));
}

}  // namespace AQ_UNITY_ID
