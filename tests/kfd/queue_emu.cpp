// The whole kfd/ queue-creation path on the emulated device, for every preset and every queue
// type (AQL, PM4, SDMA): version check, ACQUIRE_VM, doorbell pages, every buffer, CREATE_QUEUE,
// the doorbell located in the slice, DESTROY_QUEUE, and — through counting_device — proof that
// destruction releases every BO, GPU mapping, mmap, queue, event and render node. Wrong inputs
// must reach the (emulated) kernel's checks and come back as errc::ioctl_failed with the errno
// of spec/kfd.md §2.10 (EINVAL for a CWSR area one page short, a ctx size below cwsr_size, a
// wrong ctl_stack_size, a ring that is not a power of two).
#include "counting_device.hpp"

#include <aqueduct/emu/device.hpp>
#include <aqueduct/kfd/driver.hpp>
#include <aqueduct/kfd/events.hpp>
#include <aqueduct/kfd/memory.hpp>
#include <aqueduct/kfd/suballocator.hpp>
#include <aqueduct/kfd/queue_resources.hpp>

#include <doctest/doctest.h>

#include <cstring>
#include <string>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

namespace aq = aqueduct;
namespace kfd = aqueduct::kfd;
namespace k = aqueduct::abi::kfd;
using aq::errc;

static_assert(kfd::device_file<aq::emu::device>);
static_assert(kfd::device_file<counting_device<aq::emu::device>>);

using cdev = counting_device<aq::emu::device>;

namespace {

aq::emu::machine_config machine(std::string_view spec) { return aq::emu::machine_config::try_parse(spec).value(); }

// spec/kfd.md §1.5 rows (the MI300X row is the one the real KFD exported).
struct expected_sizes {
  std::string_view preset;
  std::uint32_t cwsr_size, ctl_stack_size, debug_memory_size;
  std::uint64_t total;
};
constexpr expected_sizes spec_rows[] = {
    {"mi300x", 23203840, 12288, 48640, 186019840},
    {"rx7900xtx", 46047232, 40960, 98304, 46145536},
};

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

}  // namespace

TEST_CASE("every preset, every queue type: create, locate the doorbell, destroy, nothing left behind") {
  for (const auto& preset : aq::emu::all_presets()) {
    for (auto kind : {kfd::queue_kind::aql, kfd::queue_kind::pm4, kfd::queue_kind::sdma}) {
      CAPTURE(preset.preset);
      CAPTURE(kfd::to_string(kind));
      auto dev = aq::emu::device::create(machine(preset.preset));
      cdev counted(dev);
      auto counts = counted.shared_counts();
      {
        auto drv = kfd::driver<cdev>::try_open(counted);
        REQUIRE_MESSAGE(drv.has_value(), drv.detail());
        auto gpus = drv->topo().gpu_nodes();
        REQUIRE(gpus.size() == 1);
        const kfd::node& gpu = *gpus[0];
        CHECK(gpu.gfx_target_version() == preset.gfx_target_version);
        REQUIRE(drv->try_acquire_vm(gpu).has_value());
        CHECK(drv->try_acquire_vm(gpu).has_value());  // idempotent
        CHECK(counts->render_nodes == 1);

        auto db = kfd::doorbell_pages<cdev>::try_map(drv->ref(), gpu);
        REQUIRE_MESSAGE(db.has_value(), db.detail());
        CHECK(db->slice_size() == 8192);  // SOC15: 8-byte doorbells x 1024 (spec §3.1)
        CHECK(db->pages() == 2);
        CHECK(dev.is_mapped(gpu.gpu_id, db->va().value, 8192));

        kfd::queue_options opt;
        opt.kind = kind;
        opt.ring_size = aq::byte_count(16384);
        auto q = kfd::queue_resources<cdev>::try_create(drv->ref(), gpu, *db, opt);
        REQUIRE_MESSAGE(q.has_value(), q.detail());
        CHECK(counts->queues == 1);
        // the doorbell lies inside the mapped slice, 8-byte aligned, at doorbell_offset & (slice-1)
        const auto off = q->doorbell_offset();
        CHECK((off >> 62) == 3);                       // KFD_MMAP_TYPE_DOORBELL
        CHECK(((off >> 46) & 0xFFFF) == gpu.gpu_id);  // gpu_id << 46
        auto* base = static_cast<char*>(db->host());
        auto* bell = static_cast<char*>(q->doorbell());
        CHECK(bell == base + (off & 8191));
        CHECK((bell - base) % 8 == 0);
        CHECK(q->ring_size() == 16384);
        CHECK(dev.is_mapped(gpu.gpu_id, q->ring().va.value, 16384));
        CHECK(dev.is_mapped(gpu.gpu_id, q->pointers().va.value, 4096));
        if (kfd::is_compute(kind)) {
          const auto c = gpu.cwsr();
          CHECK(q->eop().size.value == c.eop_buffer_size);
          CHECK(q->cwsr().size.value == c.ctx_save_restore_total());
          CHECK(dev.is_mapped(gpu.gpu_id, q->cwsr().va.value, c.ctx_save_restore_total()));
          // per-XCC headers (spec §1.4): DebugOffset = (num_xcc - i) * ctx, DebugSize = debug * num_xcc
          for (std::uint32_t i = 0; i < c.num_xcc; ++i) {
            k::user_context_save_area_header h;
            std::memcpy(&h, static_cast<char*>(q->cwsr().host) + std::uint64_t{i} * c.cwsr_size, sizeof h);
            CHECK(h.debug_offset == (c.num_xcc - i) * c.cwsr_size);
            CHECK(h.debug_size == c.debug_memory_size * c.num_xcc);
          }
          for (const auto& row : spec_rows)
            if (row.preset == preset.preset) {
              CHECK(c.cwsr_size == row.cwsr_size);
              CHECK(c.ctl_stack_size == row.ctl_stack_size);
              CHECK(c.debug_memory_size == row.debug_memory_size);
              CHECK(c.ctx_save_restore_total() == row.total);
            }
        } else {
          CHECK_FALSE(q->eop());
          CHECK_FALSE(q->cwsr());
        }
        // a second queue of the same kind gets another doorbell in the same slice
        auto q2 = kfd::queue_resources<cdev>::try_create(drv->ref(), gpu, *db, opt);
        REQUIRE_MESSAGE(q2.has_value(), q2.detail());
        CHECK(q2->doorbell() != q->doorbell());
        CHECK(q2->queue_id() != q->queue_id());
        CHECK(counts->queues == 2);

        const auto ring_va = q->ring().va.value;
        REQUIRE(q->try_destroy().has_value());
        CHECK(counts->queues == 1);
        CHECK_FALSE(dev.is_mapped(gpu.gpu_id, ring_va, 16384));
      }
      // driver, doorbells, queues all gone
      CHECK(counts->queues == 0);
      CHECK(counts->bos == 0);
      CHECK(counts->gpu_maps == 0);
      CHECK(counts->mapped_bytes == 0);
      CHECK(counts->render_nodes == 0);
      CHECK(counts->calls[0x03] == 2);  // two DESTROY_QUEUE
    }
  }
}

TEST_CASE("wrong sizes reach the kernel checks and come back as ioctl_failed with EINVAL") {
  auto dev = aq::emu::device::create(machine("mi300x"));
  cdev counted(dev);
  auto counts = counted.shared_counts();
  {
    auto drv = kfd::driver<cdev>::open(counted);
    const kfd::node& gpu = *drv.topo().gpu_nodes().at(0);
    drv.try_acquire_vm(gpu).value();
    auto db = kfd::doorbell_pages<cdev>::try_map(drv.ref(), gpu).value();
    const auto c = gpu.cwsr();
    const std::int64_t bos_before = counts->bos;

    auto expect_einval = [&](kfd::queue_options opt, const char* what) {
      CAPTURE(what);
      auto q = kfd::queue_resources<cdev>::try_create(drv.ref(), gpu, db, opt);
      REQUIRE_FALSE(q.has_value());
      CHECK(q.error() == errc::ioctl_failed);
      CHECK_MESSAGE(starts_with(q.detail(), "AMDKFD_IOC_CREATE_QUEUE failed: Invalid argument (EINVAL, -22)"),
                    q.detail());
      // the failed creation released what it had allocated
      CHECK(counts->bos == bos_before);
      CHECK(counts->queues == 0);
    };
    for (auto kind : {kfd::queue_kind::aql, kfd::queue_kind::pm4}) {
      kfd::queue_options opt;
      opt.kind = kind;
      auto short_area = opt;
      short_area.cwsr_allocation_delta = -static_cast<std::int64_t>(aq::page_size);
      expect_einval(short_area, "CWSR allocation one page too small");
      auto small_ctx = opt;
      small_ctx.ctx_save_restore_size = c.cwsr_size - static_cast<std::uint32_t>(aq::page_size);
      expect_einval(small_ctx, "ctx_save_restore_size one page below cwsr_size");
      auto ctl = opt;
      ctl.ctl_stack_size = c.ctl_stack_size + static_cast<std::uint32_t>(aq::page_size);
      expect_einval(ctl, "ctl_stack_size != node value");
      auto ctl_small = opt;
      ctl_small.ctl_stack_size = c.ctl_stack_size - static_cast<std::uint32_t>(aq::page_size);
      expect_einval(ctl_small, "ctl_stack_size one page below the node value");
    }
    kfd::queue_options bad_ring;
    bad_ring.kind = kfd::queue_kind::sdma;
    bad_ring.ring_size = aq::byte_count(3 * 4096);
    expect_einval(bad_ring, "ring size not a power of two");

    // a larger ctx size is accepted (kernel: ctx_save_restore_size >= cwsr_size, spec §1.6)
    kfd::queue_options bigger;
    bigger.ctx_save_restore_size = c.cwsr_size + static_cast<std::uint32_t>(aq::page_size);
    auto q = kfd::queue_resources<cdev>::try_create(drv.ref(), gpu, db, bigger);
    CHECK_MESSAGE(q.has_value(), q.detail());
  }
  CHECK(counts->bos == 0);
  CHECK(counts->queues == 0);
  CHECK(counts->mapped_bytes == 0);
  CHECK(counts->render_nodes == 0);
}

TEST_CASE("an old KFD interface is refused; a 1.11 kernel gets the 88-byte CREATE_QUEUE") {
  SUBCASE("major/minor too old") {
    auto cfg = machine("rx7900xtx");
    cfg.ioctl_minor = 0;
    auto dev = aq::emu::device::create(std::move(cfg));
    auto drv = kfd::driver<cdev>::try_open(cdev(dev));
    REQUIRE_FALSE(drv.has_value());
    CHECK(drv.error() == errc::kfd_version_unsupported);
    CHECK(std::string(drv.detail()).find("1.0") != std::string::npos);
  }
  SUBCASE("1.2 (ambiguous: the GPU-VM ioctls are not guaranteed)") {
    auto cfg = machine("rx7900xtx");
    cfg.ioctl_minor = 2;
    auto dev = aq::emu::device::create(std::move(cfg));
    auto drv = kfd::driver<cdev>::try_open(cdev(dev));
    REQUIRE_FALSE(drv.has_value());
    CHECK(drv.error() == errc::kfd_version_unsupported);
  }
  SUBCASE("1.3 is accepted") {
    auto cfg = machine("rx7900xtx");
    cfg.ioctl_minor = 3;
    auto dev = aq::emu::device::create(std::move(cfg));
    CHECK(kfd::driver<cdev>::try_open(cdev(dev)).has_value());
  }
  SUBCASE("1.11") {
    auto cfg = machine("rx7900xtx");
    cfg.ioctl_minor = 11;
    auto dev = aq::emu::device::create(std::move(cfg));
    auto drv = kfd::driver<cdev>::open(cdev(dev));
    CHECK(drv.version() == kfd::kfd_version{1, 11});
    CHECK(drv.create_queue_request() == k::amdkfd_ioc_create_queue_1_11);
    const kfd::node& gpu = *drv.topo().gpu_nodes().at(0);
    drv.try_acquire_vm(gpu).value();
    auto db = kfd::doorbell_pages<cdev>::try_map(drv.ref(), gpu).value();
    auto q = kfd::queue_resources<cdev>::try_create(drv.ref(), gpu, db, {});
    CHECK_MESSAGE(q.has_value(), q.detail());
  }
}

TEST_CASE("ioctl failures of the memory path name the request; nothing leaks") {
  auto dev = aq::emu::device::create(machine("mi250x"));
  cdev counted(dev);
  auto counts = counted.shared_counts();
  counting_device<aq::emu::device>* handle = nullptr;
  {
    auto drv = kfd::driver<cdev>::open(counted);
    handle = &drv.file();
    const kfd::node& gpu = *drv.topo().gpu_nodes().at(0);
    // no ACQUIRE_VM yet: CREATE_QUEUE's buffers cannot even be allocated (the kernel needs the VM)
    auto early = kfd::buffer<cdev>::try_allocate(drv.ref(), gpu, aq::byte_count(4096), kfd::memory_use::queue);
    REQUIRE_FALSE(early.has_value());
    drv.try_acquire_vm(gpu).value();
    handle->fail_next(0x18, 12);  // MAP_MEMORY_TO_GPU -> ENOMEM
    auto b = kfd::buffer<cdev>::try_allocate(drv.ref(), gpu, aq::byte_count(3 << 20), kfd::memory_use::device);
    REQUIRE_FALSE(b.has_value());
    CHECK(b.error() == errc::ioctl_failed);
    CHECK(starts_with(b.detail(), "AMDKFD_IOC_MAP_MEMORY_TO_GPU failed: Cannot allocate memory (ENOMEM, -12)"));
    CHECK(counts->bos == 0);
    CHECK(counts->mapped_bytes == 0);
    // large allocations are 2 MiB aligned; small ones page aligned
    auto big = kfd::buffer<cdev>::try_allocate(drv.ref(), gpu, aq::byte_count(3 << 20), kfd::memory_use::device);
    REQUIRE(big.has_value());
    CHECK(big->va().aligned(2 << 20));
    CHECK(big->size().value == (3u << 20));
    CHECK(dev.is_mapped(gpu.gpu_id, big->va().value, 3 << 20));
    auto host = kfd::buffer<cdev>::try_allocate(drv.ref(), gpu, aq::byte_count(100), kfd::memory_use::host);
    REQUIRE(host.has_value());
    CHECK(host->va().aligned(4096));
    CHECK(host->host() != nullptr);
    static_cast<char*>(host->host())[99] = 1;  // CPU mapping is writable
    // sub-allocation: many small device allocations share one 2 MiB block
    {
      kfd::vram_pool<cdev> pool(drv.ref(), gpu);
      std::vector<kfd::pooled_buffer<cdev>> small;
      for (int i = 0; i < 64; ++i) small.push_back(pool.try_allocate(aq::byte_count(1000 + i)).value());
      CHECK(pool.block_count() == 1);
      for (std::size_t i = 1; i < small.size(); ++i) {
        CHECK(small[i].va().aligned(256));
        CHECK(dev.is_mapped(gpu.gpu_id, small[i].va().value, small[i].size().value));
      }
      small.erase(small.begin(), small.begin() + 32);
      CHECK(pool.bytes_in_use() > 0);
      small.clear();
      CHECK(pool.bytes_in_use() == 0);
    }
  }
  CHECK(counts->bos == 0);
  CHECK(counts->gpu_maps == 0);
  CHECK(counts->mapped_bytes == 0);
}

TEST_CASE("signal events: page passed once, wait times out, signal wakes, destroy") {
  auto dev = aq::emu::device::create(machine("mi300x"));
  cdev counted(dev);
  auto counts = counted.shared_counts();
  {
    auto drv = kfd::driver<cdev>::open(counted);
    const kfd::node& gpu = *drv.topo().gpu_nodes().at(0);
    drv.try_acquire_vm(gpu).value();
    auto page = kfd::event_page<cdev>::try_create(drv.ref(), gpu);
    REQUIRE_MESSAGE(page.has_value(), page.detail());
    CHECK(page->bo().size().value == 32768);
    auto e1 = kfd::event<cdev>::try_create_signal(drv.ref(), *page);
    REQUIRE_MESSAGE(e1.has_value(), e1.detail());
    CHECK(page->registered());
    auto e2 = kfd::event<cdev>::try_create_signal(drv.ref(), *page);  // no second page (would be EINVAL)
    REQUIRE_MESSAGE(e2.has_value(), e2.detail());
    CHECK(e1->id() != e2->id());
    CHECK(e1->slot_index() == e1->id());  // signal events: slot = id (spec §5.3)
    CHECK(*e1->mailbox() == ~std::uint64_t{0});
    auto w = e1->try_wait(0);
    REQUIRE(w.has_value());
    CHECK_FALSE(*w);
    // as the CP's RELEASE_MEM would: write the mailbox, then interrupt (the kernel ignores an
    // interrupt whose slot still holds the unsignaled value, kfd_events.c)
    *e1->mailbox() = e1->id();
    dev.signal_event(e1->id());
    w = e1->try_wait(1000);
    REQUIRE(w.has_value());
    CHECK(*w);
    REQUIRE(e2->try_set().has_value());
    CHECK(*e2->try_wait(1000));
    CHECK(counts->events == 2);
    REQUIRE(e1->try_destroy().has_value());
    CHECK(counts->events == 1);
  }
  CHECK(counts->events == 0);
  // the registered event page stays with the kernel (it refuses FREE with EPERM, spec §5.2) until
  // the KFD file is closed; its CPU mapping is gone
  CHECK(counts->bos == 1);
  CHECK(counts->calls[0x17] == 0);
  CHECK(counts->mapped_bytes == 0);
}

TEST_CASE("SDMA queue by engine id: valid engines work, an engine past the last is refused naming the engines") {
  auto dev = aq::emu::device::create(machine("mi300x"));
  auto drv = kfd::driver<cdev>::open(cdev(dev));
  const kfd::node& gpu = *drv.topo().gpu_nodes().at(0);
  drv.try_acquire_vm(gpu).value();
  auto db = kfd::doorbell_pages<cdev>::try_map(drv.ref(), gpu).value();
  // spec §6.5 B: MI300X has 2 + 14 SDMA engines; ids >= 16 are out of range (spec §2.4 item 3)
  const auto engines = static_cast<std::uint32_t>(gpu.properties.num_sdma_engines + gpu.properties.num_sdma_xgmi_engines);
  CHECK(engines == 16);
  kfd::queue_options opt;
  opt.kind = kfd::queue_kind::sdma_by_engine;
  opt.sdma_engine_id = engines - 1;
  auto ok_q = kfd::queue_resources<cdev>::try_create(drv.ref(), gpu, db, opt);
  CHECK_MESSAGE(ok_q.has_value(), ok_q.detail());
  opt.sdma_engine_id = engines;
  auto bad = kfd::queue_resources<cdev>::try_create(drv.ref(), gpu, db, opt);
  REQUIRE_FALSE(bad.has_value());
  // Refused before CREATE_QUEUE (which would say a bare EINVAL), with what exists (issue 13).
  CHECK(bad.error() == aq::errc::invalid_argument);
  CHECK(std::string(bad.detail()).find("SDMA engine_id 16 does not exist") != std::string::npos);
  CHECK(std::string(bad.detail()).find("2 PCIe + 14 XGMI SDMA engines (ids 0..15)") != std::string::npos);
}

// The doorbell slice must also be mapped in the GPU VM (libhsakmt maps the doorbell BO to the GPU
// so other agents can ring it), through the kfd-fd mmap at the BO's VA (spec §3.2).
TEST_CASE("the doorbell slice is mapped in the GPU VM") {
  auto dev = aq::emu::device::create(machine("mi300x"));
  auto drv = kfd::driver<cdev>::open(cdev(dev));
  const kfd::node& gpu = *drv.topo().gpu_nodes().at(0);
  drv.try_acquire_vm(gpu).value();
  auto db = kfd::doorbell_pages<cdev>::try_map(drv.ref(), gpu).value();
  CHECK(dev.is_mapped(gpu.gpu_id, db.va().value, 8192));
}

TEST_CASE("two GPUs: ACQUIRE_VM for all, a buffer mapped to the peer, userptr memory, multi-GPU event page") {
  auto dev = aq::emu::device::create(machine("2*rx7900xtx"));
  cdev counted(dev);
  auto counts = counted.shared_counts();
  alignas(4096) static unsigned char host_mem[3 * 4096];
  {
    auto drv = kfd::driver<cdev>::open(counted);
    auto gpus = drv.topo().gpu_nodes();
    REQUIRE(gpus.size() == 2);
    CHECK(gpus[0]->gpu_id != gpus[1]->gpu_id);
    CHECK(gpus[0]->properties.drm_render_minor != gpus[1]->properties.drm_render_minor);
    REQUIRE(drv.try_acquire_all().has_value());
    CHECK(counts->render_nodes == 2);
    const kfd::node& g0 = *gpus[0];
    const kfd::node& g1 = *gpus[1];

    auto b = kfd::buffer<cdev>::try_allocate(drv.ref(), g0, aq::byte_count(1 << 20), kfd::memory_use::host).value();
    CHECK(dev.is_mapped(g0.gpu_id, b.va().value, 1 << 20));
    CHECK_FALSE(dev.is_mapped(g1.gpu_id, b.va().value, 1 << 20));
    REQUIRE(b.try_map_to(g1).has_value());
    CHECK(dev.is_mapped(g1.gpu_id, b.va().value, 1 << 20));
    CHECK(b.mapped_gpus().size() == 2);
    CHECK(counts->gpu_maps == 2);

    auto u = kfd::buffer<cdev>::try_register(drv.ref(), g1, host_mem, aq::byte_count(sizeof host_mem));
    REQUIRE_MESSAGE(u.has_value(), u.detail());
    CHECK(u->va().value == reinterpret_cast<std::uint64_t>(host_mem));
    CHECK(u->host() == host_mem);
    CHECK(dev.is_mapped(g1.gpu_id, u->va().value, sizeof host_mem));
    const std::int64_t mapped_before = counts->mapped_bytes.load();
    u->reset();
    CHECK(counts->mapped_bytes == mapped_before);  // the caller's memory is never munmapped
    host_mem[0] = 1;                               // and still usable

    auto page = kfd::event_page<cdev>::try_create(drv.ref(), g0).value();
    REQUIRE(page.try_map_to(g1).has_value());
    CHECK(dev.is_mapped(g1.gpu_id, page.bo().va().value, 32768));
    auto ev = kfd::event<cdev>::try_create_signal(drv.ref(), page).value();  // registers the page

    kfd::doorbell_pages<cdev> db[2] = {kfd::doorbell_pages<cdev>::try_map(drv.ref(), g0).value(),
                                        kfd::doorbell_pages<cdev>::try_map(drv.ref(), g1).value()};
    auto q0 = kfd::queue_resources<cdev>::try_create(drv.ref(), g0, db[0], {}).value();
    auto q1 = kfd::queue_resources<cdev>::try_create(drv.ref(), g1, db[1], {}).value();
    // each queue's doorbell lies in its own GPU's slice
    CHECK(static_cast<char*>(q0.doorbell()) - static_cast<char*>(db[0].host()) < 8192);
    CHECK(static_cast<char*>(q1.doorbell()) - static_cast<char*>(db[1].host()) < 8192);
    CHECK(((q1.doorbell_offset() >> 46) & 0xFFFF) == g1.gpu_id);
  }
  CHECK(counts->queues == 0);
  CHECK(counts->gpu_maps == 2);  // the registered event page stays mapped on both GPUs (kernel's)
  CHECK(counts->bos == 1);
  CHECK(counts->mapped_bytes == 0);
  CHECK(counts->render_nodes == 0);
}

TEST_CASE("a VA outside the GPUVM aperture is refused before the kernel sees it") {
  auto dev = aq::emu::device::create(machine("rx6900xt"));
  cdev counted(dev);
  auto counts = counted.shared_counts();
  // pretend the kernel reported a GPUVM aperture of [16 MiB, 1 GiB): host mmaps land far above it
  counted.after_ioctl = [](unsigned nr, void* arg) {
    if (nr != 0x14) return;
    auto* a = static_cast<k::get_process_apertures_new_args*>(arg);
    auto* ap = reinterpret_cast<k::process_device_apertures*>(a->kfd_process_device_apertures_ptr);
    for (std::uint32_t i = 0; ap && i < a->num_of_nodes; ++i) ap[i].gpuvm_limit = (1ull << 30) - 1;
  };
  {
    auto drv = kfd::driver<cdev>::open(counted);
    const kfd::node& gpu = *drv.topo().gpu_nodes().at(0);
    REQUIRE(drv.apertures(gpu.gpu_id) != nullptr);
    CHECK(drv.apertures(gpu.gpu_id)->gpuvm_limit == (1ull << 30) - 1);
    drv.try_acquire_vm(gpu).value();
    auto b = kfd::buffer<cdev>::try_allocate(drv.ref(), gpu, aq::byte_count(4096), kfd::memory_use::host);
    REQUIRE_FALSE(b.has_value());
    CHECK(b.error() == errc::out_of_memory);
    CHECK(std::string(b.detail()).find("outside gpu_id") != std::string::npos);
    CHECK(counts->calls[0x16] == 0);  // no ALLOC_MEMORY_OF_GPU was attempted
  }
  CHECK(counts->mapped_bytes == 0);
}

}  // namespace AQ_UNITY_ID
