// emu::device's PM4 engines (emu/queue_engine.hpp): the device starts a processor for every PM4
// queue that the kfd/ layer creates on the emulated KFD, exactly as on /dev/kfd, and stops it
// inside DESTROY_QUEUE. Includes the DESIGN.md §4
// case: a pre-6.12 kernel accepts a CWSR area one page short of the node's cwsr_size (spec/kfd.md
// §1.6), and the first preemption that needs the whole area is detected and reported as a hang;
// a 6.12+ kernel refuses the same queue with EINVAL (spec/kfd.md §2.5).
#include "counting_device.hpp"
#include "pm4_rig.hpp"

#include <aqueduct/emu/device.hpp>
#include <aqueduct/kfd/driver.hpp>
#include <aqueduct/kfd/queue_resources.hpp>

#include <doctest/doctest.h>

#include <chrono>
#include <optional>
#include <string>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

using namespace pm4test;
using namespace std::chrono_literals;
namespace kfd = aqueduct::kfd;
using cdev = counting_device<emu::device>;

namespace {

struct host_doorbell {
  std::uint64_t* word = nullptr;
  emu::pm4_processor* proc = nullptr;
  void ring(std::uint64_t v) noexcept {
    std::atomic_ref<std::uint64_t>(*word).store(v, std::memory_order_release);
    proc->ring_doorbell(v);
  }
};

// The emulated machine, the kfd/ driver over it, the hooks, one GPU's doorbell pages.
struct machine {
  emu::device dev;
  cdev file;
  std::optional<kfd::driver<cdev>> drv;
  const kfd::node* gpu = nullptr;
  std::optional<kfd::doorbell_pages<cdev>> doorbells;
  test_vm vm;  // for the test's own host buffers (identity-mapped like the emulator's)

  explicit machine(emu::machine_config cfg, emu::pm4_processor_options opt = {})
      : dev(emu::device::create(std::move(cfg))), file(dev) {
    dev.registry().add("vadd", vadd_kernel);
    auto eo = dev.get_engine_options();
    eo.pm4 = opt;
    dev.set_engine_options(eo);
    drv.emplace(kfd::driver<cdev>::open(file));
    gpu = drv->topo().gpu_nodes().at(0);
    REQUIRE(drv->try_acquire_vm(*gpu).has_value());
    doorbells.emplace(kfd::doorbell_pages<cdev>::try_map(drv->ref(), *gpu).value());
  }
  // The PM4 processor the device runs for `queue_id` (nullptr: none).
  emu::pm4_processor* processor(std::uint32_t queue_id) const {
    auto* e = dev.engine(queue_id);
    return e ? e->pm4() : nullptr;
  }
  std::string attach_error(std::uint32_t queue_id) const {
    auto* e = dev.engine(queue_id);
    auto f = e ? e->fault() : std::nullopt;
    return f ? std::string(f->detail()) : std::string("no engine");
  }
  aq::result<kfd::queue_resources<cdev>> make(kfd::queue_options o) {
    o.kind = kfd::queue_kind::pm4;
    return kfd::queue_resources<cdev>::try_create(drv->ref(), *gpu, *doorbells, o);
  }
  kfd::buffer<cdev> buffer(std::uint64_t bytes) {
    return kfd::buffer<cdev>::try_allocate(drv->ref(), *gpu, aq::byte_count(bytes), kfd::memory_use::host).value();
  }
};

// vadd through a pm4_queue<gfx11_priv_target> over the queue's own memory; returns the wait's result.
aq::result<void> run_vadd(machine& m, kfd::queue_resources<cdev>& res, std::uint32_t groups, std::uint32_t block,
                          std::uint32_t* wrong = nullptr) {
  emu::pm4_processor* proc = m.processor(res.queue_id());
  REQUIRE_MESSAGE(proc != nullptr, m.attach_error(res.queue_id()));
  auto* page = static_cast<std::byte*>(res.pointers().host);
  aq::ring::pm4_queue<arch::gfx11_priv_target, host_doorbell> q(
      {res.ring().as<std::uint32_t>(), res.ring_size() / 4, reinterpret_cast<std::uint64_t*>(page + 64),
       reinterpret_cast<const std::uint64_t*>(page)},
      host_doorbell{static_cast<std::uint64_t*>(res.doorbell()), proc});
  const std::uint32_t n = groups * block;
  auto code = m.buffer(emu::emulated_kernel_object_size);
  emu::write_emulated_kernel_object({static_cast<std::byte*>(code.host()), emu::emulated_kernel_object_size},
                                    vadd_descriptor(), "vadd");
  abi::kernel_descriptor kd;
  std::memcpy(&kd, code.host(), sizeof kd);
  auto data = m.buffer(3ull * n * 4 + 4096);
  auto* f = static_cast<float*>(data.host());
  for (std::uint32_t i = 0; i < n; ++i) {
    f[i] = static_cast<float>(i);
    f[n + i] = 0.25f * static_cast<float>(i) - 7.0f;
    f[2 * n + i] = -1.0f;
  }
  auto* args = reinterpret_cast<vadd_args*>(static_cast<std::byte*>(data.host()) + 3ull * n * 4);
  const std::uint64_t base = data.va().value;
  *args = {base, base + 4ull * n, base + 8ull * n, n, block};
  auto sig = m.buffer(4096);
  qpm4::dispatch_params p;
  p.kd = &kd;
  p.kd_va = code.va();
  p.grid = {groups, 1, 1};
  p.block = {block, 1, 1};
  p.kernarg = aq::gpu_va(base + 12ull * n);
  aq::ring::pm4_completion c;
  c.address = sig.va();
  c.value = 1;
  c.b64 = true;
  q.dispatch(p, c);
  auto r = emu::wait_value<std::uint64_t>(static_cast<std::uint64_t*>(sig.host()), 1, 10s, proc, q.diagnostics());
  if (wrong) {
    *wrong = 0;
    for (std::uint32_t i = 0; i < n; ++i) *wrong += f[2 * n + i] != static_cast<float>(i) + (0.25f * static_cast<float>(i) - 7.0f);
  }
  return r;
}

}  // namespace

TEST_CASE("emu::device: a processor per PM4 queue created through kfd/, stopped inside DESTROY_QUEUE") {
  emu::pm4_processor_options opt;
  opt.preemption.every_workgroups = 5;
  machine m(emu::machine_config::parse("rx7900xtx"), opt);
  kfd::queue_options o;
  o.ring_size = aq::byte_count(16384);
  auto res = m.make(o);
  REQUIRE_MESSAGE(res.has_value(), res.detail());
  emu::pm4_processor* proc = m.processor(res->queue_id());
  REQUIRE(proc != nullptr);
  CHECK(proc->binding().cwsr.ctl_stack_size == 40960);             // spec/kfd.md §1.5, RX 7900 XTX
  CHECK(proc->binding().cwsr.ctx_save_restore_size == 46047232);
  CHECK(proc->cwsr_capacity().has_value());
  std::uint32_t wrong = 1;
  auto r = run_vadd(m, *res, 200, 64, &wrong);
  REQUIRE_MESSAGE(r.has_value(), std::string(r.detail()));
  CHECK(wrong == 0);
  CHECK(proc->preemption_stats().preemptions >= 39);  // before workgroups 5, 10, ..., 195
  const std::uint32_t id = res->queue_id();
  res->reset();  // DESTROY_QUEUE stops and drops the processor
  CHECK(m.processor(id) == nullptr);
}

TEST_CASE("a CWSR area one page short: EINVAL on a 6.12+ kernel; on an older kernel, a hang at the first full preemption") {
  kfd::queue_options o;
  o.ring_size = aq::byte_count(16384);
  o.ctx_save_restore_size = 46047232 - 4096;  // below the node's cwsr_size (spec/kfd.md §1.5)
  SUBCASE("strict kernel refuses the queue") {
    machine m(emu::machine_config::parse("rx7900xtx"));
    auto res = m.make(o);
    REQUIRE_FALSE(res.has_value());
    CHECK(res.get_failure() == aq::errc::ioctl_failed);
  }
  SUBCASE("lenient kernel accepts it; the emulated MEC detects the overflow and hangs") {
    auto cfg = emu::machine_config::parse("rx7900xtx");
    cfg.kernel = emu::kernel_lenient;
    emu::pm4_processor_options opt;
    opt.preemption.every_workgroups = 16;
    machine m(std::move(cfg), opt);
    auto res = m.make(o);
    REQUIRE_MESSAGE(res.has_value(), res.detail());
    emu::pm4_processor* proc = m.processor(res->queue_id());
    REQUIRE(proc != nullptr);
    CHECK_FALSE(proc->cwsr_capacity().has_value());
    // 4096 one-wave workgroups: at the first preemption 3072 waves are resident (a full machine).
    auto r = run_vadd(m, *res, 4096, 32);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.get_failure() == aq::errc::device_hang);
    const std::string text(r.detail());
    CHECK_MESSAGE(text.find("workgroup state") != std::string::npos, text);
    CHECK_MESSAGE(text.find("corrupts memory on the first preemption") != std::string::npos, text);
    CHECK(proc->error()->fault == emu::engine_fault::cwsr_save_failed);
  }
}

}  // namespace AQ_UNITY_ID
