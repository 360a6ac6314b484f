// emu/cwsr.hpp + the PM4 processor's preemption: sizes against the spec's worked examples
// (spec/kfd.md §1.5), the GFX11 PRIV bug (spec/kfd.md §4), undersized areas, on-demand and
// stress preemption. Results are checked against plain loops over the inputs.
#include "pm4_rig.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <thread>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

using namespace pm4test;
using namespace std::chrono_literals;

TEST_CASE("the save model's full-machine sizes are the kernel's (spec/kfd.md §1.5 worked examples)") {
  const auto page = [](std::uint64_t v) { return (v + 4095) / 4096 * 4096; };
  const emu::cwsr_machine nv = emu::cwsr_machine_of(rx7900xtx_node);
  CHECK(nv.cu_count == 96);
  CHECK(nv.wave_capacity == 3072);
  CHECK(page(nv.ctl_bytes(nv.wave_capacity)) == 40960);
  CHECK(page(nv.state_bytes(nv.wave_capacity)) == 46006272);
  const emu::cwsr_machine mi = emu::cwsr_machine_of(mi300x_node);
  CHECK(mi.cu_count == 38);
  CHECK(mi.wave_capacity == 1520);
  CHECK(page(mi.ctl_bytes(mi.wave_capacity)) == 12288);
  CHECK(page(mi.state_bytes(mi.wave_capacity)) == 23191552);

  const emu::cwsr_area good{0x10000, rx7900xtx_cwsr, rx7900xtx_ctl_stack};
  CHECK(emu::check_cwsr_capacity(good, nv).has_value());
  CHECK_FALSE(emu::check_cwsr_capacity({0x10000, rx7900xtx_cwsr, rx7900xtx_ctl_stack - 4096}, nv).has_value());
  CHECK_FALSE(emu::check_cwsr_capacity({0x10000, rx7900xtx_cwsr - 4096, rx7900xtx_ctl_stack}, nv).has_value());
  CHECK_FALSE(emu::check_cwsr_capacity({0, rx7900xtx_cwsr, rx7900xtx_ctl_stack}, nv).has_value());
}

namespace {
// 1-wave workgroups (32 work-items, wave32): the resident set is as many workgroups as the
// machine has wave slots (3072 on the RX 7900 XTX).
constexpr std::uint32_t block32 = 32;
}  // namespace

TEST_CASE("PRIV workaround on gfx1100: 1,000+ preemptions through the CWSR area, results correct") {
  rig_options o;
  o.processor.preemption.every_workgroups = 1;
  rig r(o);
  r.registry.add("vadd", vadd_kernel);
  r.start();
  REQUIRE(r.proc->cwsr_capacity().has_value());
  auto q = r.make_queue<arch::gfx11_priv_target>();  // what visit_family picks for gfx1100
  kernel_object ko(r.vm, vadd_descriptor(), "vadd");
  constexpr std::uint32_t n = block32 * 1030;  // 1030 workgroups: a preemption before each but the first
  vadd_data d(r.vm, n, block32);
  auto sig = gpu_alloc<std::uint64_t>(r.vm, 2, 64);
  submit_vadd(*q, ko, d, block32, va(sig.get()), 1);
  auto res = emu::wait_value<std::uint64_t>(sig.get(), 1, 60s, r.proc.get(), q->diagnostics());
  REQUIRE_MESSAGE(res.has_value(), (res ? std::string() : res.get_failure().describe()));
  CHECK(d.mismatches() == 0);
  const auto st = r.proc->preemption_stats();
  CHECK(st.preemptions >= 1000);
  // The largest save was the full resident set (1029 one-wave workgroups): 12 bytes per wave of
  // control stack on gfx11, inside the node's 40960-byte control stack.
  CHECK(st.max_ctl_bytes == 40 + 1029 * 12 + 8);
  CHECK(st.max_ctl_bytes <= rx7900xtx_ctl_stack);
  abi::kfd::user_context_save_area_header h;
  std::memcpy(&h, r.cwsr.get(), sizeof h);
  CHECK(h.wave_state_offset == rx7900xtx_ctl_stack);
  CHECK(h.control_stack_offset + h.control_stack_size == rx7900xtx_ctl_stack);
  CHECK_FALSE(r.proc->has_error());
}

TEST_CASE("without PRIV (forced by using the unaffected target's encoder), gfx1100 hangs at the first preemption") {
  rig_options o;
  o.processor.preemption.every_workgroups = 8;
  SUBCASE("preempted: the queue stops; the wait reports device_hang with rptr/wptr and the stalled packet") {
    rig r(o);
    r.registry.add("vadd", vadd_kernel);
    r.start();
    auto q = r.make_queue<arch::gfx11_target>();  // clears PRIV: wrong for gfx1100
    kernel_object ko(r.vm, vadd_descriptor(), "vadd");
    vadd_data d(r.vm, block32 * 64, block32);
    auto sig = gpu_alloc<std::uint64_t>(r.vm, 2, 64);
    const std::uint64_t w = submit_vadd(*q, ko, d, block32, va(sig.get()), 1);
    CHECK_FALSE(r.proc->wait_consumed(w, 300ms));  // no progress
    auto res = emu::wait_value<std::uint64_t>(sig.get(), 1, 2s, r.proc.get(), q->diagnostics());
    REQUIRE_FALSE(res.has_value());
    CHECK(res.get_failure() == aq::errc::device_hang);
    const std::string text(res.get_failure().detail());
    CHECK_MESSAGE(text.find("PRIV") != std::string::npos, text);
    CHECK_MESSAGE(text.find("packet at rptr: DISPATCH_DIRECT") != std::string::npos, text);
    CHECK_MESSAGE(text.find("wptr " + std::to_string(w)) != std::string::npos, text);
    CHECK(r.proc->error()->fault == emu::engine_fault::cwsr_hang_without_priv);
    CHECK(sig[0] == 0);
    // Workgroups 0..7 ran before the preemption; the rest never did.
    int done = 0;
    for (std::uint32_t i = 0; i < d.n; ++i) done += d.c[i] != -1.0f;
    CHECK(done == 8 * static_cast<int>(block32));
  }
  SUBCASE("never preempted: the same dispatch completes (the bug needs a preemption)") {
    o.processor.preemption.every_workgroups = 0;
    rig r(o);
    r.registry.add("vadd", vadd_kernel);
    r.start();
    auto q = r.make_queue<arch::gfx11_target>();
    kernel_object ko(r.vm, vadd_descriptor(), "vadd");
    vadd_data d(r.vm, block32 * 64, block32);
    auto sig = gpu_alloc<std::uint64_t>(r.vm, 2, 64);
    submit_vadd(*q, ko, d, block32, va(sig.get()), 1);
    REQUIRE(emu::wait_value<std::uint64_t>(sig.get(), 1, 5s, r.proc.get(), q->diagnostics()).has_value());
    CHECK(d.mismatches() == 0);
  }
  SUBCASE("test-only hook: the PRIV target's stream with PRIV cleared hangs the same way") {
    rig r(o);
    r.registry.add("vadd", vadd_kernel);
    r.start();
    auto q = r.make_queue<arch::gfx11_priv_target>();
    kernel_object ko(r.vm, vadd_descriptor(), "vadd");
    vadd_data d(r.vm, block32 * 64, block32);
    auto sig = gpu_alloc<std::uint64_t>(r.vm, 2, 64);
    submit_vadd(*q, ko, d, block32, va(sig.get()), 1, false);
    auto res = emu::wait_value<std::uint64_t>(sig.get(), 1, 2s, r.proc.get(), q->diagnostics());
    REQUIRE_FALSE(res.has_value());
    CHECK(res.get_failure() == aq::errc::device_hang);
  }
}

TEST_CASE("an undersized CWSR area (a pre-6.12 kernel accepted it) is detected and reported as a hang") {
  struct c {
    const char* name;
    std::uint32_t ctl, ctx;
    std::uint64_t mapped;
    const char* text;
  };
  for (const c& k : {c{"control stack one page short", rx7900xtx_ctl_stack - 4096, rx7900xtx_cwsr, 0, "control stack"},
                     c{"save area one page short", rx7900xtx_ctl_stack, rx7900xtx_cwsr - 4096, 0, "workgroup state"},
                     c{"area not fully mapped", rx7900xtx_ctl_stack, rx7900xtx_cwsr, rx7900xtx_cwsr / 2, "not fully mapped"}}) {
    CAPTURE(k.name);
    rig_options o;
    o.ctl_stack_size = k.ctl;
    o.ctx_save_restore_size = k.ctx;
    o.cwsr_mapped_bytes = k.mapped;
    o.processor.preemption.every_workgroups = 16;
    rig r(o);
    r.registry.add("vadd", vadd_kernel);
    r.start();
    if (k.mapped == 0) CHECK_FALSE(r.proc->cwsr_capacity().has_value());  // proved too small up front
    auto q = r.make_queue<arch::gfx11_priv_target>();
    kernel_object ko(r.vm, vadd_descriptor(), "vadd");
    // 4096 one-wave workgroups: at the first preemption the machine is full (3072 waves resident).
    vadd_data d(r.vm, block32 * 4096, block32);
    auto sig = gpu_alloc<std::uint64_t>(r.vm, 2, 64);
    submit_vadd(*q, ko, d, block32, va(sig.get()), 1);
    auto res = emu::wait_value<std::uint64_t>(sig.get(), 1, 5s, r.proc.get(), q->diagnostics());
    REQUIRE_FALSE(res.has_value());
    CHECK(res.get_failure() == aq::errc::device_hang);
    const std::string text(res.get_failure().detail());
    CHECK_MESSAGE(text.find(k.text) != std::string::npos, text);
    CHECK(r.proc->error()->fault == emu::engine_fault::cwsr_save_failed);
    CHECK(r.proc->preemption_stats().preemptions == 0);
  }
}

TEST_CASE("preemption on demand: the saved state is what resumes (an edited save changes the result)") {
  rig r;
  auto q = r.make_queue<arch::gfx11_priv_target>();
  kernel_object ko(r.vm, vadd_descriptor(), "vadd");
  constexpr std::uint32_t groups = 16;
  vadd_data d(r.vm, block32 * groups, block32);
  vadd_data other(r.vm, block32 * groups, block32);  // another kernarg block with its own arrays
  std::atomic<int> ran{0};
  r.registry.add("vadd", [&](emu::workgroup_context& wg) {
    vadd_kernel(wg);
    if (ran.fetch_add(1) == 3) r.proc_raw->request_preemption();  // served before workgroup 4
  });
  r.start();
  auto sig = gpu_alloc<std::uint64_t>(r.vm, 2, 64);
  submit_vadd(*q, ko, d, block32, va(sig.get()), 1);
  REQUIRE(r.proc->wait_preempted(5000ms));
  CHECK(ran.load() == 4);
  // The area now holds the 12 resident workgroups 4..15 (one wave each): control stack of
  // 12 * 12 + 8 bytes below ctl_stack_size, records from ctl_stack_size up.
  abi::kfd::user_context_save_area_header h;
  std::memcpy(&h, r.cwsr.get(), sizeof h);
  CHECK(h.control_stack_size == 12 * 12 + 8);
  CHECK(h.control_stack_offset == rx7900xtx_ctl_stack - (12 * 12 + 8));
  CHECK(h.wave_state_offset == rx7900xtx_ctl_stack);
  // First record = workgroup 4's wave: point its kernarg SGPRs s[0:1] at the other block.
  std::byte* rec = r.cwsr.get() + rx7900xtx_ctl_stack;
  emu::cwsr_wave_record_head head;
  std::memcpy(&head, rec, sizeof head);
  REQUIRE(head.magic == emu::cwsr_wave_magic);
  CHECK(head.workgroup == 4);
  CHECK(head.sgpr_count == 3);  // kernarg lo/hi + workgroup id X
  const std::uint64_t alt = va(other.args.get());
  std::uint32_t s01[2] = {static_cast<std::uint32_t>(alt), static_cast<std::uint32_t>(alt >> 32)};
  std::memcpy(rec + sizeof head, s01, sizeof s01);
  r.proc->resume();
  REQUIRE(emu::wait_value<std::uint64_t>(sig.get(), 1, 5s, r.proc.get(), q->diagnostics()).has_value());
  // Workgroup 4 computed into `other`; everything else into `d`.
  for (std::uint32_t i = 0; i < d.n; ++i) {
    const bool wg4 = i / block32 == 4;
    const float want = static_cast<float>(i) + (0.25f * static_cast<float>(i) - 7.0f);
    CHECK(d.c[i] == (wg4 ? -1.0f : want));
    CHECK(other.c[i] == (wg4 ? want : -1.0f));
  }
  CHECK(r.proc->preemption_stats().preemptions == 1);
}

TEST_CASE("stress knob: preemption on a timer while a dispatch runs") {
  rig_options o;
  o.processor.preemption.interval = 200us;
  rig r(o);
  r.registry.add("slow_vadd", [](emu::workgroup_context& wg) {
    vadd_kernel(wg);
    std::this_thread::sleep_for(50us);
  });
  r.start();
  auto q = r.make_queue<arch::gfx11_priv_target>();
  kernel_object ko(r.vm, vadd_descriptor(), "slow_vadd");
  vadd_data d(r.vm, 64 * 256, 64);
  auto sig = gpu_alloc<std::uint64_t>(r.vm, 2, 64);
  submit_vadd(*q, ko, d, 64, va(sig.get()), 1);
  REQUIRE(emu::wait_value<std::uint64_t>(sig.get(), 1, 20s, r.proc.get(), q->diagnostics()).has_value());
  CHECK(d.mismatches() == 0);
  CHECK(r.proc->preemption_stats().preemptions >= 3);  // >= 256 * 50 us of work, a preemption every 200 us
  CHECK(r.proc->preemption_stats().waves_saved > 0);
}

}  // namespace AQ_UNITY_ID
