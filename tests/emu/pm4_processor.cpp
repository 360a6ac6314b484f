// emu/pm4_processor.hpp: the emulated MEC running PM4 streams. Expected dwords are the spec's
// (spec/packets.md §1–§2: tinygrad's gfx11 dispatch sequence, header values, field positions);
// expected results are plain loops over the inputs; the AQL comparison runs the same host
// kernel through emu::aql_processor.
#include "pm4_rig.hpp"
#include "waits.hpp"

#include <aqueduct/emu/aql_processor.hpp>

#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <thread>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

using namespace pm4test;
using namespace std::chrono_literals;

namespace {

using aq_test::hi;
using aq_test::lo;
using aq_test::wait_error;
using aq_test::wait_word;

// tinygrad's gfx11 wave32 dispatch (spec/packets.md §2.1 rows 1–12) plus its signal (§2.2),
// written dword by dword from the spec's table. `user` = the COMPUTE_USER_DATA values.
std::vector<std::uint32_t> tinygrad_stream(std::uint64_t code_va, std::uint32_t rsrc1, std::uint32_t rsrc2,
                                           std::vector<std::uint32_t> user, std::uint32_t groups, std::uint32_t block,
                                           std::uint64_t signal_va, std::uint32_t value) {
  std::vector<std::uint32_t> s = {
      0xC0065800, 0, 0xFFFFFFFF, 0xFFFFFFFF, 0, 0, 0, 0x03F0,  // 1 ACQUIRE_MEM, GCR 0x03F0
      0xC0027600, 0x20C, lo(code_va >> 8), hi(code_va >> 8),    // 2 PGM_LO/HI
      0xC0027600, 0x212, rsrc1, rsrc2,                          // 3 RSRC1/RSRC2
      0xC0017600, 0x228, 0,                                     // 4 RSRC3
      0xC0017600, 0x218, 0,                                     // 5 TMPRING_SIZE
      0xC0027600, 0x210, 0, 0,                                  // 6 DISPATCH_SCRATCH_BASE
      0xC0037600, 0x21B, 0, 0, 0,                               // 7 RESTART_X/Y/Z
  };
  s.push_back(0xC0007600 | (static_cast<std::uint32_t>(user.size()) << 16));  // 8 USER_DATA (count = n)
  s.push_back(0x240);
  s.insert(s.end(), user.begin(), user.end());
  const std::vector<std::uint32_t> tail = {
      0xC0017600, 0x215, 0,                                     // 9 RESOURCE_LIMITS
      0xC0087600, 0x204, 0, 0, 0, block, 1, 1, 0, 0,           // 10 START/NUM_THREAD/...
      0xC0031500, groups, 1, 1, 0x8005,                         // 11 DISPATCH_DIRECT, wave32 initiator
      0xC0004600, 0x407,                                        // 12 EVENT_WRITE CS_PARTIAL_FLUSH
      0xC0064900, 0x0070F514, 0x20000000, lo(signal_va), hi(signal_va), value, 0, 0,  // signal
  };
  s.insert(s.end(), tail.begin(), tail.end());
  return s;
}

std::uint32_t load32(const std::uint32_t* p) { return aq_test::load_acquire(p); }

}  // namespace

TEST_CASE("tinygrad's gfx11 dispatch stream, dword for dword from the spec, runs the kernel") {
  rig r;
  r.registry.add("vadd", vadd_kernel);
  r.start();
  constexpr std::uint32_t block = 64, n = 64 * 20;
  vadd_data d(r.vm, n, block);
  kernel_object ko(r.vm, vadd_descriptor(), "vadd");
  auto sig = gpu_alloc<std::uint32_t>(r.vm, 4, 64);
  // RSRC1 = kfdtest's 0x000C0084 with PRIV (tinygrad forces it on gfx11); RSRC2 USER_SGPR 2,
  // TGID_X_EN (spec §1.5 bit positions) = 0x84.
  const auto s = tinygrad_stream(ko.va_ + 256, 0x001C0084, 0x84, {lo(va(d.args.get())), hi(va(d.args.get()))}, n / block,
                                 block, va(sig.get()), 0xC0FFEE);
  const std::uint64_t w = r.push(s);
  REQUIRE(wait_word(sig.get(), 0xC0FFEE));
  CHECK(d.mismatches() == 0);
  CHECK(r.proc->wait_consumed(w, 5000ms));
  CHECK(r.rptr() == s.size());
  CHECK_FALSE(r.proc->has_error());
  CHECK(r.proc->dispatches() == 1);
  CHECK(r.proc->sh_register(0x2E12) == 0x001C0084);
  CHECK(r.proc->sh_register(0x2E40) == lo(va(d.args.get())));
  CHECK(r.proc->sh_register(0x2E07) == block);
}

TEST_CASE("a wrong COMPUTE_USER_DATA layout reaches the kernel as a wrong kernarg pointer") {
  rig r;
  r.registry.add("vadd", vadd_kernel);
  r.start();
  constexpr std::uint32_t block = 64, n = 256;
  vadd_data d(r.vm, n, block);
  kernel_object ko(r.vm, vadd_descriptor(), "vadd");
  auto sig = gpu_alloc<std::uint32_t>(r.vm, 4, 64);
  // The kernarg pointer in USER_DATA_2..3 instead of 0..1 (RSRC2 still says 4 user SGPRs, wg id in s4):
  // the "compiled" kernel reads s[0:1] = 0 and faults.
  const auto s = tinygrad_stream(ko.va_ + 256, 0x001C0084, 0x88 /* USER_SGPR 4, TGID_X_EN */,
                                 {0, 0, lo(va(d.args.get())), hi(va(d.args.get()))}, n / block, block, va(sig.get()), 1);
  r.push(s);
  REQUIRE(wait_error(*r.proc));
  const auto e = r.proc->error();
  REQUIRE(e);
  CHECK(e->fault == emu::engine_fault::memory_violation);
  CHECK(e->to_failure() == aq::errc::device_fault);
  CHECK(e->detail.find("DISPATCH_DIRECT") != std::string::npos);
  CHECK(load32(sig.get()) == 0);  // nothing after the faulting dispatch ran
  CHECK(d.c[0] == -1.0f);
}

TEST_CASE("encode -> emulate: pm4_queue<gfx11_priv_target> dispatch, signal, event interrupt, wait, timestamp") {
  rig r;
  r.registry.add("vadd", vadd_kernel);
  r.start();
  auto q = r.make_queue<arch::gfx11_priv_target>();
  constexpr std::uint32_t block = 128, n = 1000;  // last workgroup partial: the kernel bounds-checks
  vadd_data d(r.vm, n, block);
  kernel_object ko(r.vm, vadd_descriptor(), "vadd");
  auto words = gpu_alloc<std::uint64_t>(r.vm, 16, 64);  // [0] signal, [2] gate, [4] mailbox, [6..7] timestamps

  SUBCASE("dispatch with completion value and KFD event interrupt") {
    q->dispatch(vadd_params(ko, d, block), completion(&words[0], 7, false, &words[4], 42));
    auto res = emu::wait_value<std::uint64_t>(&words[4], 42, 5s, r.proc.get(), q->diagnostics());
    REQUIRE(res.has_value());
    CHECK(words[0] == 7);
    CHECK(d.mismatches() == 0);
    CHECK(r.events.ids() == std::vector<std::uint32_t>{42});
    // PRIV was set by the target's policy (spec/kfd.md §4), whatever the descriptor said.
    CHECK((r.proc->sh_register(0x2E12) >> 20 & 1) == 1);
    CHECK(r.proc->sh_register(0x2E12) == (0x000C0084u | (1u << 20)));
  }
  SUBCASE("WAIT_REG_MEM holds the queue until the host writes the value") {
    q->wait(aq::gpu_va(va(&words[2])), 5);
    q->signal(completion(&words[0], 1));
    std::this_thread::sleep_for(20ms);
    CHECK(words[0] == 0);
    std::atomic_ref<std::uint64_t>(words[2]).store(4);
    std::this_thread::sleep_for(10ms);
    CHECK(std::atomic_ref<std::uint64_t>(words[0]).load() == 0);
    std::atomic_ref<std::uint64_t>(words[2]).store(5);
    CHECK(emu::wait_value<std::uint64_t>(&words[0], 1, 5s, r.proc.get(), q->diagnostics()).has_value());
  }
  SUBCASE("timestamps: 64-bit GPU clock, monotonic") {
    q->timestamp(aq::gpu_va(va(&words[6])));
    q->barrier();
    q->timestamp(aq::gpu_va(va(&words[7])));
    q->signal(completion(&words[0], 3, true));
    REQUIRE(emu::wait_value<std::uint64_t>(&words[0], 3, 5s, r.proc.get(), q->diagnostics()).has_value());
    CHECK(words[6] != 0);
    CHECK(words[7] >= words[6]);
  }
  SUBCASE("many commands wrap the ring; every one runs") {
    for (std::uint32_t i = 1; i <= 300; ++i) {
      q->dispatch(vadd_params(ko, d, block), completion(&words[0], i));
    }
    REQUIRE(emu::wait_value<std::uint64_t>(&words[0], 300, 20s, r.proc.get(), q->diagnostics()).has_value());
    CHECK(q->write_pointer() > r.opt.ring_dwords);  // the ring wrapped
    CHECK(d.mismatches() == 0);
    CHECK(r.proc->dispatches() == 300);
  }
  CHECK_FALSE(r.proc->has_error());
}

TEST_CASE("the same kernel gives the same result through an AQL queue and a PM4 queue") {
  constexpr std::uint32_t block = 64, n = 777;
  // PM4
  rig r;
  r.registry.add("vadd", vadd_kernel);
  r.start();
  auto q = r.make_queue<arch::gfx11_priv_target>();
  vadd_data pm4_data(r.vm, n, block);
  kernel_object ko(r.vm, vadd_descriptor(), "vadd");
  auto sig = gpu_alloc<std::uint64_t>(r.vm, 2, 64);
  q->dispatch(vadd_params(ko, pm4_data, block), completion(sig.get(), 1));
  REQUIRE(emu::wait_value<std::uint64_t>(sig.get(), 1, 5s, r.proc.get(), q->diagnostics()).has_value());

  // AQL: a kernel dispatch packet (spec/packets.md §5.2) through the AQL rig's engine.
  aq_test::aql_rig a;
  a.registry.add("vadd", vadd_kernel);
  kernel_object ako(a.vm, vadd_descriptor(), "vadd");
  vadd_data aql_data(a.vm, n, block);
  auto signal = aq_test::make_signal(a.vm, 1);
  a.submit(aq_test::dispatch_1d(ako.va_, va(aql_data.args.get()), n, block, va(signal.get())));
  REQUIRE(a.proc->wait_retired(1, 5000ms));
  CHECK(aq_test::load(signal.get()) == 0);

  CHECK(pm4_data.mismatches() == 0);
  CHECK(aql_data.mismatches() == 0);
  CHECK(std::memcmp(pm4_data.c.get(), aql_data.c.get(), n * sizeof(float)) == 0);
}

TEST_CASE("indirect buffers run their packets; PRED_EXEC inside an IB skips what excludes XCC 0") {
  rig r;
  r.start();
  auto ib = gpu_alloc<std::uint32_t>(r.vm, 64, 256);
  auto out = gpu_alloc<std::uint32_t>(r.vm, 8, 64);
  // WRITE_DATA (spec §1.3): COUNT = 2 + ndw, DST_SEL 5 memory, WR_CONFIRM; then PRED_EXEC for
  // XCC mask 0b10 over the next WRITE_DATA (5 dwords), then a WRITE_DATA that runs.
  const std::uint32_t ibd[] = {
      0xC0033700, (5u << 8) | (1u << 20), lo(va(&out[0])), hi(va(&out[0])), 0x11,
      0xC0002300, 5u | (2u << 24),
      0xC0033700, (5u << 8) | (1u << 20), lo(va(&out[1])), hi(va(&out[1])), 0x22,
      0xC0033700, (5u << 8) | (1u << 20), lo(va(&out[2])), hi(va(&out[2])), 0x33,
  };
  std::memcpy(ib.get(), ibd, sizeof ibd);
  // INDIRECT_BUFFER C0023F00: base lo/hi, size | VALID (bit 23).
  r.push({0xC0023F00, lo(va(ib.get())), hi(va(ib.get())), static_cast<std::uint32_t>(std::size(ibd)) | (1u << 23)});
  REQUIRE(wait_word(&out[2], 0x33));
  CHECK(out[0] == 0x11);
  CHECK(out[1] == 0);  // predicated away
  CHECK_FALSE(r.proc->has_error());
  // Outside an IB PRED_EXEC acts as EXEC_COUNT 0 (MEC firmware, spec §1.3): the next packet runs.
  r.push({0xC0002300, 5u | (2u << 24), 0xC0033700, (5u << 8) | (1u << 20), lo(va(&out[3])), hi(va(&out[3])), 0x44});
  CHECK(wait_word(&out[3], 0x44));
}

TEST_CASE("malformed packets stop the queue with a decoded queue error") {
  struct bad_case {
    const char* name;
    std::vector<std::uint32_t> dws;
    emu::engine_fault fault;
    aq::errc code;
    const char* text;
  };
  const std::vector<bad_case> cases = {
      {"unknown opcode 0x2F", {0xC0002F00, 0}, emu::engine_fault::unknown_opcode, aq::errc::queue_error, "opcode 0x2F"},
      {"DISPATCH_DIRECT with COUNT 2", {0xC0021500, 1, 1, 1}, emu::engine_fault::bad_count, aq::errc::queue_error, "DISPATCH_DIRECT"},
      {"RELEASE_MEM with COUNT 5", {0xC0054900, 0x514, 0, 0, 0, 0, 0}, emu::engine_fault::bad_count, aq::errc::queue_error, "RELEASE_MEM"},
      {"header reserved bit 3", {0xC0001008, 0}, emu::engine_fault::reserved_bits, aq::errc::queue_error, "reserved"},
      {"ACQUIRE_MEM dw1 set on gfx11", {0xC0065800, 1, 0xFFFFFFFF, 0xFFFFFF, 0, 0, 0xA, 0x3F0}, emu::engine_fault::reserved_bits,
       aq::errc::queue_error, "ACQUIRE_MEM"},
      {"WAIT_REG_MEM FUNCTION 7", {0xC0053C00, 0x17, 0x1000, 0, 0, 0xFFFFFFFF, 4}, emu::engine_fault::reserved_bits,
       aq::errc::queue_error, "WAIT_REG_MEM"},
      {"RELEASE_MEM INT_SEL 7", {0xC0064900, 0x514, 7u << 24, 0, 0, 0, 0, 0}, emu::engine_fault::reserved_bits,
       aq::errc::queue_error, "INT_SEL"},
      {"INDIRECT_BUFFER without VALID", {0xC0023F00, 0x1000, 0, 4}, emu::engine_fault::reserved_bits, aq::errc::queue_error, "VALID"},
      {"SET_SH_REG leaving the SH window", {0xC0027600, 0x3FF, 1, 2}, emu::engine_fault::bad_register, aq::errc::queue_error,
       "SH window"},
      {"RELEASE_MEM to an unmapped address", {0xC0064900, 0x514, 0x20000000, 0x1000, 0x7F00, 1, 0, 0}, emu::engine_fault::not_mapped,
       aq::errc::device_fault, "not mapped"},
      {"type-0 packet", {0x00000000}, emu::engine_fault::not_type3, aq::errc::queue_error, "type-0"},
      // DISPATCH_INDIRECT and COPY_DATA (PAL's MEC layouts, abi/pm4.hpp).
      {"DISPATCH_INDIRECT with COUNT 3", {0xC0031600, 0x1000, 0, 1, 1}, emu::engine_fault::bad_count, aq::errc::queue_error,
       "DISPATCH_INDIRECT"},
      {"DISPATCH_INDIRECT counts misaligned", {0xC0021600, 0x1002, 0x7F00, 0x8005}, emu::engine_fault::misaligned_address,
       aq::errc::queue_error, "4-byte"},
      {"DISPATCH_INDIRECT counts unmapped", {0xC0021600, 0x1000, 0x10, 0x8005}, emu::engine_fault::not_mapped, aq::errc::device_fault,
       "workgroup counts"},
      {"DISPATCH_INDIRECT without COMPUTE_SHADER_EN", {0xC0021600, 0x1000, 0x10, 0x8004}, emu::engine_fault::bad_dispatch,
       aq::errc::queue_error, "COMPUTE_SHADER_EN"},
      {"COPY_DATA from a register", {0xC0044000, 0x00100200, 0x2E12, 0, 0x1000, 0x10}, emu::engine_fault::unsupported_packet,
       aq::errc::queue_error, "SRC_SEL 0"},
      {"COPY_DATA reserved control bit 4", {0xC0044000, 0x00100212, 0x1000, 0x10, 0x2000, 0x10}, emu::engine_fault::reserved_bits,
       aq::errc::queue_error, "COPY_DATA"},
      {"COPY_DATA 64-bit from a 4-byte-aligned source", {0xC0044000, 0x00110202, 0x1004, 0x10, 0x2000, 0x10},
       emu::engine_fault::misaligned_address, aq::errc::queue_error, "COPY_DATA source"},
      {"COPY_DATA from an unmapped source", {0xC0044000, 0x00100202, 0x1000, 0x10, 0x2000, 0x10}, emu::engine_fault::not_mapped,
       aq::errc::device_fault, "COPY_DATA source"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.name);
    rig r;
    r.start();
    auto out = gpu_alloc<std::uint32_t>(r.vm, 4, 64);
    // A good packet first (WRITE_DATA 1 to out[0]), then the bad one, then one that must not run.
    std::vector<std::uint32_t> s = {0xC0033700, (5u << 8) | (1u << 20), lo(va(&out[0])), hi(va(&out[0])), 1};
    s.insert(s.end(), c.dws.begin(), c.dws.end());
    const std::vector<std::uint32_t> after = {0xC0033700, (5u << 8) | (1u << 20), lo(va(&out[1])), hi(va(&out[1])), 2};
    s.insert(s.end(), after.begin(), after.end());
    r.push(s);
    REQUIRE(wait_error(*r.proc));
    const auto e = r.proc->error();
    REQUIRE(e);
    CHECK(e->fault == c.fault);
    CHECK(e->to_failure() == c.code);
    CHECK(e->position == 5);  // the bad packet's position: after the 5-dword WRITE_DATA
    CHECK(e->write_position == s.size());
    CHECK(e->packet.front() == c.dws.front());
    CHECK_MESSAGE(e->detail.find(c.text) != std::string::npos, e->detail);
    CHECK(out[0] == 1);
    std::this_thread::sleep_for(5ms);
    CHECK(load32(&out[1]) == 0);
    CHECK(r.rptr() == 5);
  }
}

TEST_CASE("COPY_DATA copies one or two dwords (memory or immediate source) in queue order") {
  rig r;
  r.start();
  auto mem = gpu_alloc<std::uint32_t>(r.vm, 16, 64);
  for (int i = 0; i < 16; ++i) mem[i] = 0;
  mem[0] = 0x11111111u;
  mem[2] = 0x22222222u;
  mem[3] = 0x33333333u;
  const auto at = [&](int i) { return va(&mem[i]); };
  // Control dwords from PAL's PM4_MEC_COPY_DATA: SRC_SEL [3:0], DST_SEL [11:8], COUNT_SEL [16], WR_CONFIRM [20].
  const std::uint64_t w = r.push({0xC0044000, 0x00100202, lo(at(0)), hi(at(0)), lo(at(8)), hi(at(8)),       // 32 bits: mem[0] -> mem[8]
          0xC0044000, 0x00110202, lo(at(2)), hi(at(2)), lo(at(10)), hi(at(10)),     // 64 bits: mem[2..3] -> mem[10..11]
          0xC0044000, 0x00100205, 0xABCD1234u, 0, lo(at(12)), hi(at(12)),          // immediate 32 bits -> mem[12]
          0xC0044000, 0x00110205, 0x01020304u, 0x05060708u, lo(at(14)), hi(at(14)),  // immediate 64 bits -> mem[14..15]
          0xC0044000, 0x00100202, lo(at(8)), hi(at(8)), lo(at(9)), hi(at(9))});     // reads what the first wrote
  REQUIRE(r.proc->wait_consumed(w, 5000ms));
  CHECK(load32(&mem[8]) == 0x11111111u);
  CHECK(load32(&mem[10]) == 0x22222222u);
  CHECK(load32(&mem[11]) == 0x33333333u);
  CHECK(load32(&mem[12]) == 0xABCD1234u);
  CHECK(load32(&mem[13]) == 0u);
  CHECK(load32(&mem[14]) == 0x01020304u);
  CHECK(load32(&mem[15]) == 0x05060708u);
  CHECK(load32(&mem[9]) == 0x11111111u);
  CHECK_FALSE(r.proc->has_error());
}

TEST_CASE("COMPUTE_PGM_RSRC1.PRIV on an unaffected part (gfx1151) hangs the queue at the dispatch") {
  rig_options o;
  o.node = gfx1151_node;
  o.simd_arrays_per_engine = 1;
  o.ctl_stack_size = 0;  // no CWSR area needed here
  o.ctx_save_restore_size = 0;
  rig r(o);
  r.registry.add("vadd", vadd_kernel);
  r.start();
  auto q = r.make_queue<arch::gfx11_target>();  // what visit_family picks for gfx1151
  constexpr std::uint32_t block = 64, n = 512;
  vadd_data d(r.vm, n, block);
  kernel_object ko(r.vm, vadd_descriptor(), "vadd");
  auto sig = gpu_alloc<std::uint64_t>(r.vm, 2, 64);
  SUBCASE("the typed encoder leaves PRIV clear: the dispatch runs") {
    submit_vadd(*q, ko, d, block, va(sig.get()), 1);
    REQUIRE(emu::wait_value<std::uint64_t>(sig.get(), 1, 5s, r.proc.get(), q->diagnostics()).has_value());
    CHECK(d.mismatches() == 0);
    CHECK((r.proc->sh_register(0x2E12) >> 20 & 1) == 0);
  }
  SUBCASE("forced PRIV (test-only hook): device_hang, reported with the packet") {
    submit_vadd(*q, ko, d, block, va(sig.get()), 1, true);
    auto res = emu::wait_value<std::uint64_t>(sig.get(), 1, 5s, r.proc.get(), q->diagnostics());
    REQUIRE_FALSE(res.has_value());
    CHECK(res.get_failure() == aq::errc::device_hang);
    const std::string text(res.get_failure().detail());
    CHECK(text.find("PRIV") != std::string::npos);
    CHECK(text.find("DISPATCH_DIRECT") != std::string::npos);
    CHECK(text.find("rptr") != std::string::npos);
    CHECK(r.proc->error()->fault == emu::engine_fault::priv_on_unaffected_part);
    CHECK(d.c[0] == -1.0f);
  }
}

// queue_wakeup: a doorbell rung while the processor is deciding to sleep is never lost (no idle
// spin, a 10 s idle poll: only the doorbell wakes it in time; a lost one fails a 5 s wait). As
// the AQL test: the producer spins on the read pointer, then waits 0 to ~2 us.
TEST_CASE("no PM4 doorbell is lost while the processor goes to sleep (no idle spin, 10 s idle poll)") {
  rig_options o;
  o.processor.idle_spin = std::chrono::microseconds(0);
  o.processor.idle_poll = std::chrono::microseconds(10'000'000);
  rig r(o);
  r.start();
  auto mem = gpu_alloc<std::uint32_t>(r.vm, 4, 64);
  mem[0] = 0;
  const std::uint64_t before = r.proc->sleeps();
  constexpr std::uint32_t rounds = 100000;
  for (std::uint32_t i = 1; i <= rounds; ++i) {
    aq_test::spin_iterations(i % 97 * 8);
    // COPY_DATA immediate 32 bits -> mem[0]
    const std::uint64_t end = r.push({0xC0044000, 0x00100205, i, 0, lo(va(&mem[0])), hi(va(&mem[0]))});
    REQUIRE(aq_test::spin_until([&] { return r.proc->read_pointer() >= end; }));
    REQUIRE(load32(&mem[0]) == i);
  }
  CHECK(r.proc->sleeps() - before >= rounds / 4);
  CHECK_FALSE(r.proc->has_error());
}

// pm4_processor_options::idle_spin: after the ring runs dry the processor polls the write pointer
// before it sleeps, so a submission that follows within the spin finds it awake (its doorbell
// wakes nobody). Submissions 1 ms apart: with a 10 s spin the thread never sleeps between them;
// with none it sleeps after each.
TEST_CASE("the PM4 processor polls for idle_spin after its ring runs dry: close submissions find it awake") {
  for (const auto spin : {std::chrono::microseconds(10'000'000), std::chrono::microseconds(0)}) {
    CAPTURE(spin.count());
    rig_options o;
    o.processor.idle_spin = spin;
    rig r(o);
    r.start();
    auto mem = gpu_alloc<std::uint32_t>(r.vm, 4, 64);
    mem[0] = 0;
    const auto copy_imm = [&](std::uint32_t v) {  // COPY_DATA immediate 32 bits -> mem[0]
      return r.push({0xC0044000, 0x00100205, v, 0, lo(va(&mem[0])), hi(va(&mem[0]))});
    };
    REQUIRE(r.proc->wait_consumed(copy_imm(1), 5000ms));
    const std::uint64_t before = r.proc->sleeps();
    constexpr std::uint32_t rounds = 50;
    for (std::uint32_t i = 2; i < 2 + rounds; ++i) {
      std::this_thread::sleep_for(1ms);
      REQUIRE(r.proc->wait_consumed(copy_imm(i), 5000ms));
      REQUIRE(load32(&mem[0]) == i);
    }
    const std::uint64_t slept = r.proc->sleeps() - before;
    if (spin.count() != 0)
      CHECK(slept == 0);
    else
      CHECK(slept >= rounds / 2);  // each 1 ms gap finds it asleep (some may find it still looking)
    CHECK_FALSE(r.proc->has_error());
  }
}

}  // namespace AQ_UNITY_ID
