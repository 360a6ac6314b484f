// emu::device's SDMA engines (emu/queue_engine.hpp): every SDMA queue created through the raw kfd/
// path on the emulated device gets an engine at CREATE_QUEUE, loses it in DESTROY_QUEUE, and runs
// what ring::sdma_queue publishes. Expected values: engine versions per spec/packets.md §3.2
// (gfx9 incl. MI300 → SDMA 4, gfx10.3 → 5.2, gfx11 → 6); copy results from std::memcpy; the
// SDMA doorbell id of a queue (spec/kfd.md §3.3: the same slot is reused after a destroy).
#include "waits.hpp"
#include <aqueduct/emu/device.hpp>
#include <aqueduct/kfd/driver.hpp>
#include <aqueduct/kfd/memory.hpp>
#include <aqueduct/kfd/queue_resources.hpp>
#include <aqueduct/queue/sdma_queue.hpp>

#include <doctest/doctest.h>

#include <chrono>
#include <cstring>
#include <thread>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

namespace aq = aqueduct;
namespace emu = aqueduct::emu;
namespace kfd = aqueduct::kfd;
using aq::abi::sdma::engine;
using namespace std::chrono_literals;

namespace {

struct rig {
  explicit rig(const char* machine) : drv(kfd::driver<emu::device>::try_open(emu::device::create(emu::machine_config::parse(machine))).value()) {
    gpu = drv.topo().gpu_nodes()[0];
    REQUIRE(drv.ref().try_acquire_vm(*gpu));
    db.emplace(kfd::doorbell_pages<emu::device>::try_map(drv.ref(), *gpu).value());
  }
  // The SDMA engine the device runs for `queue_id` (nullptr: none).
  emu::sdma_engine* find(std::uint32_t queue_id) const {
    auto* e = drv.ref().file().engine(queue_id);
    return e ? e->sdma() : nullptr;
  }
  std::size_t size() const { return drv.ref().file().queues().size(); }
  kfd::queue_resources<emu::device> make_queue(std::uint32_t percentage = 100) {
    kfd::queue_options o;
    o.kind = kfd::queue_kind::sdma;
    o.ring_size = aq::byte_count(4096);
    o.rptr_offset = 0;
    o.wptr_offset = 64;
    o.percentage = percentage;
    return kfd::queue_resources<emu::device>::try_create(drv.ref(), *gpu, *db, o).value();
  }
  kfd::driver<emu::device> drv;
  const kfd::node* gpu = nullptr;
  std::optional<kfd::doorbell_pages<emu::device>> db;
};

using aq_test::wait_word;

template <engine E>
void copy_through(rig& r, kfd::queue_resources<emu::device>& res, std::size_t n, std::uint32_t seq, int extra_fences = 0) {
  auto* page = static_cast<std::byte*>(res.pointers().host);
  aq::ring::sdma_queue<E> q({res.ring().as<std::uint32_t>(), res.ring_size(), reinterpret_cast<std::uint64_t*>(page),
                              reinterpret_cast<std::uint64_t*>(page + 64)},
                             aq::ring::doorbell_ref(static_cast<std::uint64_t*>(res.doorbell())));
  auto src = kfd::buffer<emu::device>::try_allocate(r.drv.ref(), *r.gpu, aq::byte_count(n), kfd::memory_use::host).value();
  auto dst = kfd::buffer<emu::device>::try_allocate(r.drv.ref(), *r.gpu, aq::byte_count(n + 4096), kfd::memory_use::host).value();
  auto* s = static_cast<unsigned char*>(src.host());
  for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<unsigned char>(i * 131 + seq);
  REQUIRE(q.try_copy(dst.va() + aq::byte_count(1), src.va(), n));
  for (int i = 0; i < extra_fences; ++i) REQUIRE(q.try_fence(dst.va() + aq::byte_count(n + 2048), static_cast<std::uint32_t>(i)));
  REQUIRE(q.try_fence(dst.va() + aq::byte_count(n + 1024), seq));
  // no notify: the engine finds the work by polling the write pointer
  REQUIRE(wait_word(reinterpret_cast<const std::uint32_t*>(static_cast<unsigned char*>(dst.host()) + n + 1024), seq));
  CHECK(std::memcmp(static_cast<unsigned char*>(dst.host()) + 1, s, n) == 0);
}

}  // namespace

TEST_CASE("each SDMA queue gets an engine of its GPU's version at CREATE_QUEUE and loses it at DESTROY_QUEUE") {
  struct row {
    const char* machine;
    engine expected;
  };
  for (const row& p : {row{"mi300x", engine::v4_0}, row{"rx6900xt", engine::v5_2}, row{"rx7900xtx", engine::v6_0}}) {
    CAPTURE(p.machine);
    rig r(p.machine);
    auto res = r.make_queue();
    emu::sdma_engine* e = r.find(res.queue_id());
    REQUIRE(e);
    CHECK(e->binding().engine == p.expected);
    CHECK(e->binding().ring_va == res.ring().va.value);
    CHECK(e->binding().read_pointer_va == res.pointers().va.value);
    CHECK(e->binding().write_pointer_va == res.pointers().va.value + 64);
    CHECK(r.size() == 1);
    res.reset();  // DESTROY_QUEUE stops the engine
    CHECK(r.size() == 0);
  }
}

TEST_CASE("the engine runs what the raw queue publishes, also after its doorbell slot is reused") {
  rig r("rx7900xtx");
  auto res = r.make_queue();
  void* const doorbell = res.doorbell();
  copy_through<engine::v6_0>(r, res, 10000, 1, 10);
  const std::uint64_t stale = std::atomic_ref<std::uint64_t>(*static_cast<std::uint64_t*>(doorbell)).load();
  // the doorbell keeps the last write pointer rung: COPY_LINEAR 28 + 11 FENCEs × 16 bytes (spec §3.2)
  CHECK(stale == 28 + 11 * 16);
  res.reset();
  auto res2 = r.make_queue();
  CHECK(res2.doorbell() == doorbell);  // same SDMA slot → same doorbell id (spec/kfd.md §3.3)
  // The new queue published nothing: its engine must not run the stale doorbell value's bytes.
  std::this_thread::sleep_for(50ms);
  REQUIRE(r.find(res2.queue_id()));
  CHECK(r.find(res2.queue_id())->read_offset() == 0);
  copy_through<engine::v6_0>(r, res2, 300, 2);  // publishes 44 bytes, fewer than the stale value
}

TEST_CASE("a queue KFD would not map (percentage 0) gets no engine") {
  rig r("rx7900xtx");
  auto res = r.make_queue(0);
  CHECK(r.find(res.queue_id()) == nullptr);
  REQUIRE(r.drv.ref().file().engine(res.queue_id()));  // the port exists
  CHECK_FALSE(r.drv.ref().file().engine(res.queue_id())->faulted());
}

TEST_CASE("sdma_engine_of follows the processor table's SDMA versions") {
  CHECK(emu::sdma_engine_of(90402) == engine::v4_0);   // gfx942: SDMA 4.4
  CHECK(emu::sdma_engine_of(90010) == engine::v4_0);   // gfx90a
  CHECK(emu::sdma_engine_of(100100) == engine::v5_0);  // gfx1010: SDMA 5.0 (22-bit counts)
  CHECK(emu::sdma_engine_of(100300) == engine::v5_2);  // gfx1030
  CHECK(emu::sdma_engine_of(110000) == engine::v6_0);  // gfx1100
  CHECK(emu::sdma_engine_of(120000) == engine::v7_0);  // gfx1200
  CHECK_FALSE(emu::sdma_engine_of(12345).has_value());
}

}  // namespace AQ_UNITY_ID
