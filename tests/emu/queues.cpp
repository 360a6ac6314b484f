// tests/emu/queues.cpp — CREATE/DESTROY/UPDATE_QUEUE on the emulated device through raw ioctls.
//
// For every preset: allocate and map every buffer of exactly the right size, create AQL, PM4 and
// SDMA queues, locate the doorbell, destroy. Then each kernel 6.12+ check is shown to reject the
// wrong input with the kernel's errno (spec/kfd.md §2.3-§2.6, §8), and the pre-6.12 knob to accept
// what older kernels accepted. Expected sizes come from spec/kfd.md §1.5: the MI300X cwsr_size
// 23203840 / ctl_stack_size 12288 are real KFD sysfs exports; the other rows are the spec's worked
// examples, and the RX 6900 XT row is worked by hand below from the §1.3 formulas.
#include "emu_session.hpp"

#include <aqueduct/kfd/device_file.hpp>

#include <atomic>
#include <string_view>
#include <vector>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

using namespace emu_test;

static_assert(aqueduct::kfd::device_file<emu::device>, "emu::device models kfd::device_file");

namespace {

struct expected_sizes {
  const char* preset;
  std::uint32_t cwsr_size, ctl_stack_size, debug_memory_size;
  std::uint64_t total;  // ALIGN((cwsr_size + debug) * num_xcc, 4096)
  std::uint32_t num_xcc;
};
// RX 6900 XT (gfx1030, 160 SIMDs, 2/CU, 1 XCC): cu 80; waves 80*32 = 2560; per CU 0x40000 + 0x4000 +
// 0x10000 + 0x1000 = 348160; wg_data ALIGN(80*348160) = 27852800; ctl ALIGN(40 + 2560*12 + 8) = 32768,
// GFX10 cap 0x7000 = 28672; cwsr 27881472; debug ALIGN(2560*32, 64) = 81920; total 27963392.
constexpr expected_sizes table[] = {
    {"mi300x", 23203840, 12288, 48640, 186019840, 8},
    {"rx7900xtx", 46047232, 40960, 98304, 46145536, 1},
    {"mi250x", 67170304, 36864, 131072, 67301376, 1},
    {"rx6900xt", 27881472, 28672, 81920, 27963392, 1},
};

emu::machine_config machine(const char* preset) { return emu::machine_config::parse(preset); }

}  // namespace

TEST_CASE("every preset: full AQL, PM4 and SDMA queue lifecycle through raw ioctls") {
  for (const auto& e : table) {
    CAPTURE(e.preset);
    session s(machine(e.preset));
    const auto& g = s.gpu();
    const std::uint32_t gpu = g.gpu_id;

    // sysfs exports what the kernel computes (spec values, not the emulator's)
    const auto props = read_properties(s.dev.sysfs_root() / "nodes" / "1" / "properties");
    CHECK(props.at("cwsr_size") == e.cwsr_size);
    CHECK(props.at("ctl_stack_size") == e.ctl_stack_size);

    k::get_version_args v{};
    REQUIRE(s.dev.ioctl(k::amdkfd_ioc_get_version, &v) == 0);
    CHECK(v.major_version == 1);
    CHECK(v.minor_version == 18);

    REQUIRE(s.acquire() == 0);
    const bo db = s.doorbells(gpu, 8192);  // SOC15: 2 pages (spec/kfd.md §3.1)

    std::vector<emu::queue_info> created, destroyed;
    s.dev.set_queue_hooks({[&](const emu::queue_info& q) { created.push_back(q); }, {},
                           [&](const emu::queue_info& q) { destroyed.push_back(q); }});

    // AQL and PM4 compute queues
    std::vector<std::uint32_t> ids;
    for (std::uint32_t type : {k::queue_type_compute_aql, k::queue_type_compute}) {
      CAPTURE(type);
      auto b = make_compute_buffers(s, gpu, 65536, e.total);
      auto a = compute_args(b, gpu, type, e.cwsr_size, e.ctl_stack_size);
      REQUIRE(s.dev.ioctl(k::amdkfd_ioc_create_queue, &a) == 0);
      ids.push_back(a.queue_id);
      CHECK(k::mmap_type_of(a.doorbell_offset) == (3ull << 62));
      CHECK(k::mmap_gpu_id_of(a.doorbell_offset) == gpu);
      const std::uint64_t in_slice = a.doorbell_offset & (8192 - 1);  // libhsakmt: mask = 8 * 1024 - 1
      CHECK(in_slice % 8 == 0);
      CHECK((a.doorbell_offset & ~std::uint64_t{8191}) == k::make_mmap_offset(k::mmap_type_doorbell, gpu));
      // ring the doorbell through our mapping; the engine's view sees it
      auto* bell = reinterpret_cast<std::atomic<std::uint64_t>*>(db.va + in_slice);
      bell->store(0x1234 + type, std::memory_order_release);
      REQUIRE(!created.empty());
      const auto& q = created.back();
      CHECK(q.queue_id == a.queue_id);
      CHECK(q.type == type);
      CHECK(q.ring_base_address == b.ring.va);
      CHECK(q.ring_size == 65536);
      CHECK(q.doorbell_offset == a.doorbell_offset);
      CHECK(std::atomic_ref<std::uint64_t>(*static_cast<std::uint64_t*>(q.doorbell)).load() == 0x1234 + type);
      CHECK(q.active);
      // queue buffers are pinned while the queue lives (6.12+)
      CHECK(s.unmap(b.ctx, gpu) == -EBUSY);
      CHECK(s.free(b.ring) == -EBUSY);
    }
    CHECK(ids[0] != ids[1]);
    CHECK(created[0].doorbell_offset != created[1].doorbell_offset);

    // SDMA (PCIe engine) and SDMA by engine id (the last engine: XGMI where the part has them)
    for (std::uint32_t type : {k::queue_type_sdma, k::queue_type_sdma_by_eng_id}) {
      CAPTURE(type);
      const bo ring = s.gtt(gpu, 4096), ptrs = s.gtt(gpu, 4096);
      k::create_queue_args a{};
      a.ring_base_address = ring.va;
      a.ring_size = 4096;
      a.read_pointer_address = ptrs.va;
      a.write_pointer_address = ptrs.va + 8;
      a.gpu_id = gpu;
      a.queue_type = type;
      a.queue_percentage = 100;
      a.sdma_engine_id = g.props.num_sdma_engines + g.props.num_sdma_xgmi_engines - 1;
      REQUIRE(s.dev.ioctl(k::amdkfd_ioc_create_queue, &a) == 0);
      ids.push_back(a.queue_id);
      const auto& q = created.back();
      CHECK(q.is_sdma());
      if (type == k::queue_type_sdma_by_eng_id) CHECK(q.sdma_engine == a.sdma_engine_id);
      else CHECK(q.sdma_engine < g.props.num_sdma_engines);
      CHECK(k::mmap_gpu_id_of(a.doorbell_offset) == gpu);
    }
    CHECK(s.dev.queues().size() == 4);

    for (auto id : ids) {
      k::destroy_queue_args d{id, 0};
      CHECK(s.dev.ioctl(k::amdkfd_ioc_destroy_queue, &d) == 0);
    }
    CHECK(destroyed.size() == 4);
    k::destroy_queue_args d{ids[0], 0};
    CHECK(s.dev.ioctl(k::amdkfd_ioc_destroy_queue, &d) == -EINVAL);
    CHECK(s.dev.queues().empty());
  }
}

namespace {
// A device on `preset` with VM acquired and one set of exact compute buffers; `good()` is accepted.
struct fixture {
  const expected_sizes& e;
  session s;
  std::uint32_t gpu;
  queue_buffers b;
  fixture(const expected_sizes& ex, emu::machine_config cfg) : e(ex), s(std::move(cfg)), gpu(s.gpu().gpu_id) {
    REQUIRE(s.acquire() == 0);
    b = make_compute_buffers(s, gpu, 4096, e.total);
  }
  k::create_queue_args good(std::uint32_t type = k::queue_type_compute_aql) const {
    return compute_args(b, gpu, type, e.cwsr_size, e.ctl_stack_size);
  }
  int create(k::create_queue_args& a) { return s.dev.ioctl(k::amdkfd_ioc_create_queue, &a); }
  int destroy(std::uint32_t id) {
    k::destroy_queue_args d{id, 0};
    return s.dev.ioctl(k::amdkfd_ioc_destroy_queue, &d);
  }
};
}  // namespace

TEST_CASE("kernel 6.12+ checks reject with the kernel's errno; pre-6.12 accepts the size checks") {
  for (const auto& e : table) {
    CAPTURE(e.preset);
    for (bool strict : {true, false}) {
      CAPTURE(strict);
      auto cfg = machine(e.preset);
      cfg.kernel = strict ? emu::kernel_strict : emu::kernel_lenient;
      fixture f(e, cfg);
      // a CWSR area one page too small: its mapping is not ALIGN((ctx+debug)*xcc, PAGE)
      bo small_ctx = f.s.gtt(f.gpu, e.total - 4096);
      // an area of exactly ALIGN((size + debug) * xcc) for a ctx size one page below cwsr_size, so
      // that only the ">= cwsr_size" check can reject it
      const std::uint64_t under_total = ((std::uint64_t{e.cwsr_size} - 4096 + e.debug_memory_size) * e.num_xcc + 4095) / 4096 * 4096;
      static std::uint64_t under_area;
      under_area = f.s.gtt(f.gpu, under_total).va;
      const bo unmapped{f.s.reserve(4096), 4096, 0, 0};  // VA never allocated
      const bo other = f.s.gtt(f.gpu, 8192);
      // GFX11+ (MES): the wptr BO must be a mapped page of this GPU on every kernel with MES
      const bool mes = f.s.gpu().props.gfx_target_version >= 110000;
      struct mutation {
        const char* what;
        int strict_errno;
        void (*apply)(k::create_queue_args&, const expected_sizes&, std::uint64_t, std::uint64_t, std::uint64_t);
      };
      const mutation ms[] = {
          {"ctx area one page too small", -EINVAL,
           [](auto& a, auto&, std::uint64_t small, std::uint64_t, std::uint64_t) { a.ctx_save_restore_address = small; }},
          {"ctx_save_restore_size below cwsr_size", -EINVAL,
           [](auto& a, auto& x, std::uint64_t, std::uint64_t, std::uint64_t) {
             a.ctx_save_restore_size = x.cwsr_size - 4096;
             a.ctx_save_restore_address = under_area;
           }},
          {"ctl_stack_size one page more than the node's", -EINVAL,
           [](auto& a, auto& x, std::uint64_t, std::uint64_t, std::uint64_t) { a.ctl_stack_size = x.ctl_stack_size + 4096; }},
          {"ctl_stack_size one page less", -EINVAL,
           [](auto& a, auto& x, std::uint64_t, std::uint64_t, std::uint64_t) { a.ctl_stack_size = x.ctl_stack_size - 4096; }},
          {"unmapped rptr", -EINVAL,
           [](auto& a, auto&, std::uint64_t, std::uint64_t un, std::uint64_t) { a.read_pointer_address = un; }},
          {"unmapped wptr", -EINVAL,
           [](auto& a, auto&, std::uint64_t, std::uint64_t un, std::uint64_t) { a.write_pointer_address = un + 8; }},
          {"ring mapping larger than ring_size", -EINVAL,
           [](auto& a, auto&, std::uint64_t, std::uint64_t, std::uint64_t o) { a.ring_base_address = o; a.ring_size = 4096; }},
          {"rptr in a two-page BO", -EINVAL,
           [](auto& a, auto&, std::uint64_t, std::uint64_t, std::uint64_t o) { a.read_pointer_address = o; }},
          {"eop_buffer_size not the node's", -EINVAL,
           [](auto& a, auto&, std::uint64_t, std::uint64_t, std::uint64_t) { a.eop_buffer_size = 8192; }},
          {"ctx address not at the start of its mapping", -EINVAL,
           [](auto& a, auto&, std::uint64_t, std::uint64_t, std::uint64_t) { a.ctx_save_restore_address += 4096; }},
      };
      for (const auto& m : ms) {
        CAPTURE(m.what);
        auto a = f.good();
        m.apply(a, e, small_ctx.va, unmapped.va, other.va);
        const int r = f.create(a);
        const bool mes_rejects = mes && std::string_view(m.what) == "unmapped wptr";
        CHECK(r == (strict || mes_rejects ? m.strict_errno : 0));
        if (r == 0) CHECK(f.destroy(a.queue_id) == 0);
      }
      // Checks every kernel makes (set_queue_properties_from_user, spec/kfd.md §2.3).
      auto a = f.good();
      a.ring_size = 3000;
      CHECK(f.create(a) == -EINVAL);  // not a power of two
      a = f.good();
      a.queue_percentage = 101;
      CHECK(f.create(a) == -EINVAL);
      a = f.good();
      a.queue_percentage = 100 | (3 << 8);  // bits 15:8 are pm4_target_xcc, not the percentage
      REQUIRE(f.create(a) == 0);
      CHECK(f.destroy(a.queue_id) == 0);
      a = f.good();
      a.queue_priority = 16;
      CHECK(f.create(a) == -EINVAL);
      a = f.good();
      a.queue_type = 5;
      CHECK(f.create(a) == -524);  // -ENOTSUPP, kernel-internal
      a = f.good();
      a.read_pointer_address = 1ull << 47;  // beyond the user address limit
      CHECK(f.create(a) == -EFAULT);
      a = f.good();
      a.gpu_id = f.gpu ^ 0x8000;  // no such GPU
      CHECK(f.create(a) == -EINVAL);
      a = f.good(k::queue_type_sdma_by_eng_id);
      a.sdma_engine_id = f.s.gpu().props.num_sdma_engines + f.s.gpu().props.num_sdma_xgmi_engines;
      CHECK(f.create(a) == -EINVAL);
      // a ring smaller than 1024 is raised to 1024 and the caller sees it (IOWR copy-out)
      a = f.good();
      a.ring_size = 256;
      REQUIRE(f.create(a) == 0);
      CHECK(a.ring_size == 1024);
      CHECK(f.destroy(a.queue_id) == 0);
      a = f.good();
      a.ring_size = 0;
      REQUIRE(f.create(a) == 0);
      CHECK(a.ring_size == 1024);
      CHECK(f.destroy(a.queue_id) == 0);
    }
  }
}

TEST_CASE("no ACQUIRE_VM on the GPU: -ESRCH; 88-byte (KFD 1.11) create_queue still works") {
  const auto& e = table[1];
  session s(machine("2*rx7900xtx"));
  REQUIRE(s.acquire(0) == 0);
  auto b = make_compute_buffers(s, s.gpu(0).gpu_id, 4096, e.total);
  auto a = compute_args(b, s.gpu(1).gpu_id, k::queue_type_compute_aql, e.cwsr_size, e.ctl_stack_size);
  CHECK(s.dev.ioctl(k::amdkfd_ioc_create_queue, &a) == -ESRCH);
  // GPU 0 with the pre-1.17 request size: sdma_engine_id reads as 0, struct is 88 bytes
  a.gpu_id = s.gpu(0).gpu_id;
  CHECK(s.dev.ioctl(k::amdkfd_ioc_create_queue_1_11, &a) == 0);
  CHECK(s.dev.gpus()[0].gpu_id != s.dev.gpus()[1].gpu_id);
}

TEST_CASE("queue limits, SDMA exhaustion and fault injection") {
  const auto& e = table[1];  // rx7900xtx: 2 SDMA engines
  auto cfg = machine("rx7900xtx");
  cfg.max_queues_per_process = 2;
  cfg.sdma_queues_per_engine = 1;
  int fault = 0;
  cfg.queue_create_fault = [&](const k::create_queue_args&) { return fault; };
  fixture f(e, cfg);
  CHECK(read_properties(f.s.dev.sysfs_root() / "nodes/1/properties").at("num_sdma_queues_per_engine") == 1);
  auto sdma = [&] {
    k::create_queue_args a{};
    a.ring_base_address = f.b.ring.va;
    a.ring_size = 4096;
    a.read_pointer_address = f.b.ptrs.va;
    a.write_pointer_address = f.b.ptrs.va + 8;
    a.gpu_id = f.gpu;
    a.queue_type = k::queue_type_sdma;
    a.queue_percentage = 100;
    return a;
  };
  auto a1 = sdma(), a2 = sdma(), a3 = sdma();
  REQUIRE(f.create(a1) == 0);
  REQUIRE(f.create(a2) == 0);
  CHECK(f.create(a3) == -ENOSPC);  // third queue of the process on this GPU
  CHECK(f.destroy(a2.queue_id) == 0);
  fault = -EIO;
  CHECK(f.create(a3) == -EIO);
  fault = 0;
  auto cfg2 = machine("rx7900xtx");
  cfg2.sdma_queues_per_engine = 1;
  fixture g(e, cfg2);
  std::vector<k::create_queue_args> qs(3);
  for (auto& q : qs) {
    q = k::create_queue_args{};
    q.ring_base_address = g.b.ring.va;
    q.ring_size = 4096;
    q.read_pointer_address = g.b.ptrs.va;
    q.write_pointer_address = g.b.ptrs.va + 8;
    q.gpu_id = g.gpu;
    q.queue_type = k::queue_type_sdma;
    q.queue_percentage = 100;
  }
  CHECK(g.create(qs[0]) == 0);
  CHECK(g.create(qs[1]) == 0);
  CHECK(g.create(qs[2]) == -ENOMEM);  // 2 engines x 1 queue
}

TEST_CASE("UPDATE_QUEUE and ioctl plumbing") {
  const auto& e = table[0];
  fixture f(e, machine("mi300x"));
  auto a = f.good();
  REQUIRE(f.create(a) == 0);
  std::vector<emu::queue_info> updated;
  f.s.dev.set_queue_hooks({{}, [&](const emu::queue_info& q) { updated.push_back(q); }, {}});
  k::update_queue_args u{};
  u.queue_id = a.queue_id;
  u.ring_base_address = f.b.ring.va;
  u.ring_size = 4096;
  u.queue_percentage = 50;
  u.queue_priority = 3;
  CHECK(f.s.dev.ioctl(k::amdkfd_ioc_update_queue, &u) == 0);
  REQUIRE(updated.size() == 1);
  CHECK(updated[0].queue_percentage == 50);
  u.queue_priority = 16;
  CHECK(f.s.dev.ioctl(k::amdkfd_ioc_update_queue, &u) == -EINVAL);
  u.queue_priority = 3;
  u.queue_id = 999;
  CHECK(f.s.dev.ioctl(k::amdkfd_ioc_update_queue, &u) == -EFAULT);
  // unknown nr: -ENOTTY; the type byte is not checked by the kernel, only the nr
  k::get_version_args v{};
  CHECK(f.s.dev.ioctl(k::io(0x60), &v) == -ENOTTY);
  CHECK(f.s.dev.ioctl(k::io(0x00), &v) == -ENOTTY);
  CHECK(f.s.dev.ioctl(k::amdkfd_ioc_get_version, nullptr) == -EFAULT);
}

TEST_CASE("ioctl_minor knob: a KFD 1.11 kernel has no engine-id queues and no 1.13+ ioctls") {
  const auto& e = table[1];
  auto cfg = machine("rx7900xtx");
  cfg.ioctl_minor = 11;
  fixture f(e, cfg);
  k::get_version_args v{};
  REQUIRE(f.s.dev.ioctl(k::amdkfd_ioc_get_version, &v) == 0);
  CHECK(v.minor_version == 11);
  auto a = f.good(k::queue_type_sdma_by_eng_id);
  CHECK(f.create(a) == -524);
  k::runtime_enable_args r{};
  CHECK(f.s.dev.ioctl(k::amdkfd_ioc_runtime_enable, &r) == -ENOTTY);  // COMMAND_END 0x24 in 1.11
  a = f.good();
  CHECK(f.s.dev.ioctl(k::amdkfd_ioc_create_queue_1_11, &a) == 0);
}

TEST_CASE("GFX11 MES: the wptr BO is one page of this GPU, on pre-6.12 kernels too") {
  const auto& e = table[1];
  for (bool strict : {false, true}) {
  CAPTURE(strict);
  auto cfg = machine("2*rx7900xtx");
  cfg.kernel = strict ? emu::kernel_strict : emu::kernel_lenient;
  session s(std::move(cfg));
  REQUIRE(s.acquire(0) == 0);
  REQUIRE(s.acquire(1) == 0);
  const std::uint32_t g0 = s.gpu(0).gpu_id, g1 = s.gpu(1).gpu_id;
  auto b = make_compute_buffers(s, g0, 4096, e.total);
  auto a = compute_args(b, g0, k::queue_type_compute_aql, e.cwsr_size, e.ctl_stack_size);
  const bo two_pages = s.gtt(g0, 8192);
  a.write_pointer_address = two_pages.va;
  CHECK(s.dev.ioctl(k::amdkfd_ioc_create_queue, &a) == -EINVAL);
  bo peer = s.gtt(g1, 4096);
  REQUIRE(s.map(peer, g0) == 0);  // GPU 1's memory in GPU 0's VM
  a.write_pointer_address = peer.va;
  CHECK(s.dev.ioctl(k::amdkfd_ioc_create_queue, &a) == -EINVAL);
  a.write_pointer_address = b.ptrs.va + 0x38;
  CHECK(s.dev.ioctl(k::amdkfd_ioc_create_queue, &a) == 0);
  }
}

}  // namespace AQ_UNITY_ID
