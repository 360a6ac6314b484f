// queue/pm4_queue.hpp: ring arithmetic, publication and the dwords of each command, without a
// command processor (the emulated one is tested in tests/emu/pm4_processor.cpp). Expected dwords
// are spec/packets.md's (§1.1 headers, §2.1 tinygrad's dispatch, §2.2 signal/wait) and the KFD
// rule "PM4 doorbell = write pointer in dwords" (spec/kfd.md §3.3).
#include <aqueduct/abi/kernel_descriptor.hpp>
#include <aqueduct/queue/pm4_queue.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

namespace aq = aqueduct;
namespace abi = aqueduct::abi;
namespace arch = aqueduct::arch;
using namespace std::chrono_literals;

namespace {

struct counting_doorbell {
  std::vector<std::uint64_t>* log = nullptr;
  void ring(std::uint64_t v) noexcept { log->push_back(v); }
};

template <class Target>
struct fixture {
  std::vector<std::uint32_t> ring;
  std::uint64_t wptr = 0, rptr = 0;
  std::vector<std::uint64_t> doorbells;
  aq::ring::pm4_queue<Target, counting_doorbell> q;
  explicit fixture(std::uint32_t dwords = 1024)
      : ring(dwords, 0xDEADBEEF), q({ring.data(), dwords, &wptr, &rptr}, counting_doorbell{&doorbells}) {}
  void consume() { rptr = wptr; }  // a consumer that keeps up
  std::vector<std::uint32_t> at(std::uint64_t from, std::size_t n) const {
    std::vector<std::uint32_t> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = ring[(from + i) % ring.size()];
    return v;
  }
};

constexpr std::uint64_t sig_va = 0x7F0012345678ull & ~7ull;
constexpr std::uint32_t lo(std::uint64_t v) { return static_cast<std::uint32_t>(v); }
constexpr std::uint32_t hi(std::uint64_t v) { return static_cast<std::uint32_t>(v >> 32); }

aq::ring::pm4_completion completion(std::uint64_t addr, std::uint64_t value, std::uint64_t mailbox = 0, std::uint32_t id = 0) {
  aq::ring::pm4_completion c;
  c.address = aq::gpu_va(addr);
  c.value = value;
  c.event_mailbox = aq::gpu_va(mailbox);
  c.event_id = id;
  return c;
}

abi::kernel_descriptor kd_kernarg_only(bool wave32, std::uint32_t rsrc1) {
  abi::kernel_descriptor kd{};
  kd.kernel_code_entry_byte_offset = 256;
  kd.kernarg_size = 32;
  kd.compute_pgm_rsrc1 = rsrc1;
  kd.compute_pgm_rsrc2 = (2u << 1) | (1u << 7);  // USER_SGPR 2, TGID_X_EN
  kd.kernel_code_properties = static_cast<std::uint16_t>((1u << 3) | (wave32 ? (1u << 10) : 0u));
  return kd;
}

// Finds the SET_SH_REG packet starting at `reg` in [0, n) and returns its first value.
std::uint32_t sh_value(const std::vector<std::uint32_t>& s, std::uint32_t reg, int* count = nullptr) {
  int found = 0;
  std::uint32_t v = 0;
  for (std::size_t at = 0; at < s.size();) {
    const std::uint32_t h = s[at], len = ((h >> 16) & 0x3FFF) + 2;
    if (((h >> 8) & 0xFF) == 0x76 && (s[at + 1] & 0xFFFF) + 0x2C00 == reg) {
      v = s[at + 2];
      ++found;
    }
    at += len;
  }
  if (count) *count = found;
  return v;
}

}  // namespace

TEST_CASE("signal and wait are tinygrad's gfx11 dwords; doorbell = write pointer in dwords") {
  fixture<arch::gfx11_priv_target> f;
  CHECK(f.q.signal(completion(sig_va, 0x1234)) == 8);
  // spec §2.2 signal: RELEASE_MEM dw1 0x0070F514, dw2 0x20000000 (32-bit, no interrupt).
  CHECK(f.at(0, 8) == std::vector<std::uint32_t>{0xC0064900, 0x0070F514, 0x20000000, lo(sig_va), hi(sig_va), 0x1234, 0, 0});
  CHECK(f.wptr == 8);
  CHECK(f.doorbells == std::vector<std::uint64_t>{8});
  CHECK(f.q.wait(aq::gpu_va(sig_va), 9) == 15);
  // spec §2.2 wait: WAIT_REG_MEM dw1 0x15 (memory, >=), ref, mask FFFFFFFF, poll 4.
  CHECK(f.at(8, 7) == std::vector<std::uint32_t>{0xC0053C00, 0x15, lo(sig_va), hi(sig_va), 9, 0xFFFFFFFF, 4});
  CHECK(f.doorbells == std::vector<std::uint64_t>{8, 15});
  CHECK(f.ring[15] == 0xDEADBEEF);  // nothing beyond the write pointer
}

TEST_CASE("a completion with a KFD event adds the interrupt RELEASE_MEM (INT_SEL 2, ctxid = event id)") {
  fixture<arch::gfx11_priv_target> f;
  const std::uint64_t mailbox = 0x7F0000001000;
  f.q.signal(completion(sig_va, 5, mailbox, 77));
  const auto s = f.at(8, 8);
  // dw2 0x22000000 = DATA_SEL 1 | INT_SEL 2 (spec §2.2 KFD timeline signal), data = id, ctxid = id.
  CHECK(s == std::vector<std::uint32_t>{0xC0064900, 0x514, 0x22000000, lo(mailbox), hi(mailbox), 77, 0, 77});
  CHECK(f.wptr == 16);
}

TEST_CASE("dispatch command: ACQUIRE_MEM, registers, DISPATCH_DIRECT, CS_PARTIAL_FLUSH, completion") {
  SUBCASE("gfx11 PRIV target (gfx1100): PRIV forced on") {
    fixture<arch::gfx11_priv_target> f;
    const auto kd = kd_kernarg_only(true, 0x000C0084);
    aq::ring::pm4::dispatch_params p;
    p.kd = &kd;
    p.kd_va = aq::gpu_va(0x10000);
    p.grid = {20, 1, 1};
    p.block = {64, 1, 1};
    p.kernarg = aq::gpu_va(0x7F00AABB0000);
    const std::uint64_t w = f.q.dispatch(p, completion(sig_va, 3));
    const auto s = f.at(0, w);
    // Row 1: ACQUIRE_MEM C0065800 with the pre-dispatch GCR 0x03F0 in dw7.
    CHECK(s[0] == 0xC0065800);
    CHECK(s[7] == 0x03F0);
    CHECK(sh_value(s, 0x2E0C) == (0x10000 + 256) >> 8);  // PGM_LO = (kd_va + entry) >> 8
    CHECK(sh_value(s, 0x2E12) == (0x000C0084 | (1u << 20)));  // PRIV set (spec/kfd.md §4)
    CHECK(sh_value(s, 0x2E40) == 0xAABB0000u);              // USER_DATA_0 = kernarg lo
    // DISPATCH_DIRECT C0031500 gx gy gz 0x8005, then EVENT_WRITE C0004600 0x407.
    const auto dd = std::find(s.begin(), s.end(), 0xC0031500u);
    REQUIRE(dd != s.end());
    CHECK(std::vector<std::uint32_t>(dd, dd + 7) == std::vector<std::uint32_t>{0xC0031500, 20, 1, 1, 0x8005, 0xC0004600, 0x407});
    // Completion last: RELEASE_MEM with the flush/write-back action 0x0070F514.
    CHECK(std::vector<std::uint32_t>(s.end() - 8, s.end()) ==
          std::vector<std::uint32_t>{0xC0064900, 0x0070F514, 0x20000000, lo(sig_va), hi(sig_va), 3, 0, 0});
    CHECK(f.doorbells == std::vector<std::uint64_t>{w});
  }
  SUBCASE("gfx11 target (e.g. gfx1151): PRIV cleared even when the descriptor has it; no completion -> full barrier") {
    fixture<arch::gfx11_target> f;
    const auto kd = kd_kernarg_only(true, 0x000C0084 | (1u << 20));
    aq::ring::pm4::dispatch_params p;
    p.kd = &kd;
    p.kd_va = aq::gpu_va(0x10000);
    p.kernarg = aq::gpu_va(0x20000);
    const std::uint64_t w = f.q.dispatch(p);
    const auto s = f.at(0, w);
    CHECK(sh_value(s, 0x2E12) == 0x000C0084);
    // ACQUIRE_MEM with tinygrad's full barrier GCR 0xC3F1 closes the command (write-back after).
    CHECK(std::vector<std::uint32_t>(s.end() - 8, s.end()) ==
          std::vector<std::uint32_t>{0xC0065800, 0, 0xFFFFFFFF, 0xFFFFFF, 0, 0, 0xA, 0xC3F1});
  }
  SUBCASE("gfx94x target: 7-dword ACQUIRE_MEM (C0055800), RSRC3 at 0x2E2D, wave64 initiator 0x5") {
    fixture<arch::gfx94x_target> f;
    auto kd = kd_kernarg_only(false, 0x000C0084);
    kd.compute_pgm_rsrc3 = 9;
    aq::ring::pm4::dispatch_params p;
    p.kd = &kd;
    p.kd_va = aq::gpu_va(0x10000);
    p.kernarg = aq::gpu_va(0x20000);
    const std::uint64_t w = f.q.dispatch(p, completion(sig_va, 1));
    const auto s = f.at(0, w);
    CHECK(s[0] == 0xC0055800);
    CHECK(sh_value(s, 0x2E2D) == 9);
    CHECK(sh_value(s, 0x2E12) == 0x000C0084);
    const auto dd = std::find(s.begin(), s.end(), 0xC0031500u);
    REQUIRE(dd != s.end());
    CHECK(dd[4] == 0x5);
  }
}

TEST_CASE("commands straddle the ring's end: written modulo the ring, write pointer keeps counting") {
  fixture<arch::gfx11_priv_target> f(256);
  for (int i = 0; i < 36; ++i) {  // 36 waits x 7 dwords = 252
    f.q.wait(aq::gpu_va(sig_va), 1);
    f.consume();
  }
  CHECK(f.wptr == 252);
  f.q.signal(completion(sig_va, 0xABCD));
  CHECK(f.wptr == 260);
  CHECK(f.doorbells.back() == 260);
  CHECK(f.at(252, 8) == std::vector<std::uint32_t>{0xC0064900, 0x0070F514, 0x20000000, lo(sig_va), hi(sig_va), 0xABCD, 0, 0});
  CHECK(f.ring[3] == 0);      // dw7 of the signal, wrapped to slot 3
  CHECK(f.ring[4] == 1);      // slot 4 still holds the first wait's reference: nothing else was touched
}

// try_submit_dwords: a head (e.g. an indirect-buffer packet) and a tail (the completion) written
// as one stream, straddling the ring's end, and longer than half the ring (several claims).
TEST_CASE("try_submit_dwords: head then tail, modulo the ring, in claims of at most half the ring") {
  fixture<arch::gfx11_priv_target> f(256);
  for (int i = 0; i < 35; ++i) {  // 35 waits x 7 dwords = 245: the next stream starts 11 before the end
    f.q.wait(aq::gpu_va(sig_va), 1);
    f.consume();
  }
  REQUIRE(f.wptr == 245);
  std::vector<std::uint32_t> head(20), tail(8);
  for (std::uint32_t i = 0; i < head.size(); ++i) head[i] = 0x1000 + i;
  for (std::uint32_t i = 0; i < tail.size(); ++i) tail[i] = 0x2000 + i;
  std::uint64_t start = 0;
  CHECK(f.q.try_submit_dwords(head, tail, aq::sync::infinite, &start).value() == 273);
  CHECK(start == 245);
  std::vector<std::uint32_t> expect = head;
  expect.insert(expect.end(), tail.begin(), tail.end());
  CHECK(f.at(245, 28) == expect);  // dwords 245..255, then 0..16
  CHECK(f.ring[18] == 1);          // the reference (dw4) of the wait at 14..20: untouched
  f.consume();
  // 300 dwords (head 290, tail 10) in a 256-dword ring: claims of 128, 128, 44, each consumed
  std::vector<std::uint32_t> big(290), end(10);
  for (std::uint32_t i = 0; i < big.size(); ++i) big[i] = 0x3000 + i;
  for (std::uint32_t i = 0; i < end.size(); ++i) end[i] = 0x4000 + i;
  std::vector<std::uint64_t> claims;
  std::vector<std::uint32_t> seen;
  f.doorbells.clear();
  std::thread consumer([&] {  // the CP: takes what each doorbell published
    std::uint64_t r = 273;
    while (r < 573) {
      const std::uint64_t w = std::atomic_ref<std::uint64_t>(f.wptr).load(std::memory_order_acquire);
      for (; r < w; ++r) seen.push_back(f.ring[r % 256]);
      std::atomic_ref<std::uint64_t>(f.rptr).store(r, std::memory_order_release);
    }
  });
  const auto w = f.q.try_submit_dwords(big, end, 1s);
  consumer.join();
  REQUIRE(w.has_value());
  CHECK(*w == 573);
  expect = big;
  expect.insert(expect.end(), end.begin(), end.end());
  CHECK(seen == expect);
  CHECK(f.doorbells == std::vector<std::uint64_t>{401, 529, 573});
}

TEST_CASE("a full ring is detected before writing: queue_full with the queue described") {
  fixture<arch::gfx11_priv_target> f(256);
  for (int i = 0; i < 36; ++i) f.q.wait(aq::gpu_va(sig_va), 1);  // 252 dwords, no consumer
  const auto before = f.ring;
  auto r = f.q.try_reserve(8, 2ms);
  REQUIRE_FALSE(r.has_value());
  CHECK(r.get_failure() == aq::errc::queue_full);
  const std::string text(r.get_failure().detail());
  CHECK_MESSAGE(text.find("rptr 0, wptr 252") != std::string::npos, text);
  CHECK_MESSAGE(text.find("packet at rptr: WAIT_REG_MEM") != std::string::npos, text);
  CHECK(f.ring == before);
  CHECK(f.wptr == 252);
  f.rptr = 7;  // the CP consumed one wait: 12 dwords do not fit yet (252 + 12 - 7 > 256) ...
  CHECK_FALSE(f.q.try_reserve(12).has_value());
  f.rptr = 14;  // ... now they do
  CHECK(f.q.try_reserve(12).has_value());
}

TEST_CASE("abandoned reservations are given back; unused dwords too; nothing is published") {
  fixture<arch::gfx11_priv_target> f;
  {
    auto r = f.q.reserve(40);
    r.wait(aq::gpu_va(sig_va), 1);
    CHECK(r.used() == 7);
  }  // dropped without commit
  CHECK(f.wptr == 0);
  CHECK(f.doorbells.empty());
  {
    auto r = f.q.reserve(40);
    r.wait(aq::gpu_va(sig_va), 2);
    CHECK(r.commit() == 7);  // 33 unused dwords given back
  }
  CHECK(f.wptr == 7);
  CHECK(f.doorbells == std::vector<std::uint64_t>{7});
  f.q.signal(completion(sig_va, 1));
  CHECK(f.wptr == 15);
  CHECK(f.ring[7] == 0xC0064900);  // the next command starts right after the committed one
  std::string d;
  f.q.describe(d);
  CHECK_MESSAGE(d.find("gfx11+pm4-priv") != std::string::npos, d);
}

// ---- dispatch templates (queue/pm4_dispatch_template.hpp, issue 11) ----------------------------
namespace {

// A gfx11 dispatch command written out from spec/packets.md §2.1–2.2 (tinygrad's exec + signal,
// PACKET3 headers and SH register offsets as literals), for a kernel whose user SGPRs are the
// dispatch pointer and the kernarg pointer (4 SGPRs), and a completion value to `signal`
// (64-bit: DATA_SEL 2, else 32-bit: DATA_SEL 1). Nothing here calls the encoder.
struct gfx11_dispatch {
  std::uint64_t kd_va = 0x7F0000010000, entry_offset = 256;
  std::uint32_t rsrc1 = 0x60AF0000, rsrc2 = 0x9C, rsrc3 = 0, lds_bytes = 0;
  std::uint32_t block = 64, gx = 4, gy = 1, gz = 1;
  bool wave32 = false;
  std::uint64_t dispatch_ptr = 0x7F0000030000, kernarg = 0x7F0000020000;
  std::uint64_t signal = 0x7F0000040000, value = 1;
  bool b64 = false;
  std::vector<std::uint32_t> dwords() const {
    const std::uint64_t pgm = (kd_va + entry_offset) >> 8;
    const std::uint32_t lds = (lds_bytes + 511) / 512;
    return {
        0xC0065800, 0, 0xFFFFFFFF, 0x00FFFFFF, 0, 0, 0xA, 0x3F0,       // ACQUIRE_MEM, GCR 0x3F0
        0xC0027600, 0x20C, lo(pgm), hi(pgm),                           // COMPUTE_PGM_LO/HI
        0xC0027600, 0x212, rsrc1, (rsrc2 & ~(0x1FFu << 15)) | (lds << 15),  // RSRC1, RSRC2 (LDS_SIZE)
        0xC0017600, 0x228, rsrc3,                                      // RSRC3
        0xC0017600, 0x218, 0,                                          // TMPRING_SIZE
        0xC0027600, 0x210, 0, 0,                                       // DISPATCH_SCRATCH_BASE
        0xC0037600, 0x21B, 0, 0, 0,                                    // RESTART_X/Y/Z
        0xC0047600, 0x240, lo(dispatch_ptr), hi(dispatch_ptr), lo(kernarg), hi(kernarg),  // USER_DATA_0..3
        0xC0017600, 0x215, 0,                                          // RESOURCE_LIMITS
        0xC0087600, 0x204, 0, 0, 0, block, 1, 1, 0, 0,                 // START_X..Z, NUM_THREAD_X..Z
        0xC0031500, gx, gy, gz, wave32 ? 0x8005u : 0x5u,               // DISPATCH_DIRECT
        0xC0004600, 0x407,                                             // EVENT_WRITE CS_PARTIAL_FLUSH
        0xC0064900, 0x0070F514, b64 ? 0x40000000u : 0x20000000u, lo(signal), hi(signal), lo(value),
        b64 ? hi(value) : 0u, 0};                                      // RELEASE_MEM
  }
  abi::kernel_descriptor kd() const {
    abi::kernel_descriptor d{};
    d.kernel_code_entry_byte_offset = static_cast<std::int64_t>(entry_offset);
    d.compute_pgm_rsrc1 = rsrc1;
    d.compute_pgm_rsrc2 = rsrc2;
    d.compute_pgm_rsrc3 = rsrc3;
    d.group_segment_fixed_size = lds_bytes;
    d.kernel_code_properties = static_cast<std::uint16_t>((1u << 1) | (1u << 3) | (wave32 ? (1u << 10) : 0u));  // dispatch ptr, kernarg ptr
    return d;
  }
  aq::ring::pm4::dispatch_params params(const abi::kernel_descriptor& d) const {
    aq::ring::pm4::dispatch_params p;
    p.kd = &d;
    p.kd_va = aq::gpu_va(kd_va);
    p.grid = {gx, gy, gz};
    p.block = {block, 1, 1};
    p.dispatch_ptr = aq::gpu_va(dispatch_ptr);
    p.kernarg = aq::gpu_va(kernarg);
    return p;
  }
  aq::ring::pm4_completion completion() const {
    aq::ring::pm4_completion c;
    c.address = aq::gpu_va(signal);
    c.value = value;
    c.b64 = b64;
    return c;
  }
  aq::ring::pm4::dispatch_patch patch() const {
    return {.grid = {gx, gy, gz}, .kernarg = aq::gpu_va(kernarg), .dispatch_ptr = aq::gpu_va(dispatch_ptr),
            .completion_address = aq::gpu_va(signal), .completion_value = value};
  }
};

}  // namespace

TEST_CASE("a prebuilt dispatch template writes the spec's dwords, patched per dispatch") {
  using T = arch::gfx11_target;
  fixture<T> f;
  gfx11_dispatch d;
  const auto kd = d.kd();
  const aq::ring::pm4::dispatch_template<T> t(d.params(kd), d.completion());
  CHECK(t.size() == 65);
  CHECK(std::vector<std::uint32_t>(t.dwords().begin(), t.dwords().end()) == d.dwords());
  // Three dispatches with different grids, arguments, dispatch packets and completion values.
  std::uint64_t w = 0;
  for (std::uint32_t i = 0; i < 3; ++i) {
    gfx11_dispatch e = d;
    e.gx = 7 + i, e.gy = 2, e.gz = 3 + i;
    e.kernarg = 0x7F0000050000 + 0x100 * i + (std::uint64_t{i} << 32);  // both halves change
    e.dispatch_ptr = 0x7F0000060000 + 0x40 * i + (std::uint64_t{i} << 33);
    e.signal = 0x7F0000070000 + 8 * i + (std::uint64_t{i} << 34);
    e.value = 0x100 + i;
    const auto r = f.q.try_dispatch(t, e.patch());
    REQUIRE(r.has_value());
    CHECK(*r == w + 65);
    CHECK(f.at(w, 65) == e.dwords());
    w = *r;
  }
  CHECK(f.wptr == 195);
  CHECK(f.doorbells == std::vector<std::uint64_t>{65, 130, 195});
  CHECK(f.ring[195] == 0xDEADBEEF);  // nothing beyond the write pointer
}

TEST_CASE("try_dispatch(params) rebuilds its template whenever anything but the patched fields changes") {
  using T = arch::gfx11_target;
  fixture<T> f(4096);
  std::uint64_t w = 0;
  // Each step changes one thing; every command must equal the spec's dwords for its inputs.
  std::vector<gfx11_dispatch> steps(9);
  steps[1].gx = 99, steps[1].kernarg = 0x7F00000A0000, steps[1].value = 5;  // patched fields only
  steps[2] = steps[1], steps[2].block = 128;                                   // NUM_THREAD_X
  steps[3] = steps[2], steps[3].rsrc1 = 0x60AF0041;                            // another kernel's RSRC1
  steps[4] = steps[3], steps[4].lds_bytes = 4096;                              // LDS in RSRC2
  steps[5] = steps[4], steps[5].kd_va = 0x7F0000110000;                        // program address
  steps[6] = steps[5], steps[6].b64 = true, steps[6].value = 0x1234567890ull;  // 64-bit completion
  steps[7] = steps[6], steps[7].wave32 = true;                                 // initiator 0x8005
  steps[8] = steps[0];                                                         // back to the first
  for (const gfx11_dispatch& s : steps) {
    const auto kd = s.kd();
    const auto r = f.q.try_dispatch(s.params(kd), s.completion());
    REQUIRE(r.has_value());
    CHECK(f.at(w, *r - w) == s.dwords());
    w = *r;
  }
  // Same descriptor object, contents changed in place: rebuilt too.
  gfx11_dispatch s;
  auto kd = s.kd();
  f.q.dispatch(s.params(kd), s.completion());
  w = f.wptr;
  kd.compute_pgm_rsrc2 = s.rsrc2 = 0x8C;
  f.q.dispatch(s.params(kd), s.completion());
  CHECK(f.at(w, 65) == s.dwords());
}

// Every input the cache compares (queue/pm4_dispatch_template.hpp: the descriptor, 16 bytes at a
// time, the 64-bit inputs, the 32-bit ones two to a word, the completion form) changed one at a
// time: each command must equal a template built from scratch for its inputs (no cache), and must
// differ from the command before it, so a cache that missed the change would be caught. The
// descriptor enables every user SGPR source, so each of them reaches the dwords.
TEST_CASE("try_dispatch(params) rebuilds its template when any compared input changes") {
  using T = arch::gfx11_target;
  namespace kcp = abi::kernel_code_properties;
  fixture<T> f(4096), ref(4096);
  abi::kernel_descriptor kd = kd_kernarg_only(false, 0x60AF0000);
  kd.kernel_code_properties = static_cast<std::uint16_t>(
      kcp::enable_sgpr_private_segment_buffer::set(0, 1) | kcp::enable_sgpr_dispatch_ptr::set(0, 1) | kcp::enable_sgpr_queue_ptr::set(0, 1) |
      kcp::enable_sgpr_kernarg_segment_ptr::set(0, 1) | kcp::enable_sgpr_dispatch_id::set(0, 1) | kcp::enable_sgpr_flat_scratch_init::set(0, 1));
  kd.compute_pgm_rsrc2 = (14u << 1) | (1u << 7);  // USER_SGPR 14
  aq::ring::pm4::dispatch_params p;
  p.kd = &kd;
  p.kd_va = aq::gpu_va(0x7F0000010000);
  p.grid = {4, 2, 1};
  p.block = {64, 2, 1};
  p.dispatch_ptr = aq::gpu_va(0x7F0000030000);
  p.kernarg = aq::gpu_va(0x7F0000020000);
  // The descriptor asks for the scratch V# and the queue pointer: give them (the encoder asserts
  // on missing ones, which a build with assertions enabled — the asan preset — checks).
  p.private_segment_buffer = {0x00100000u, 0x7F00u, 0xFFFFFFFFu, 0x20C14000u};
  p.queue_ptr = aq::gpu_va(0x7F0000040000);
  p.scratch_base = aq::gpu_va(0x7F0000800000);
  p.scratch_waves = 32;
  p.scratch_bytes_per_wave = 1024;
  aq::ring::pm4_completion c = completion(sig_va, 1);
  struct step {
    const char* what;
    void (*change)(abi::kernel_descriptor&, aq::ring::pm4::dispatch_params&, aq::ring::pm4_completion&);
  };
  const step steps[] = {
      {"first", [](auto&, auto&, auto&) {}},
      {"descriptor bytes 0-15 (group segment size)", [](auto& k, auto&, auto&) { k.group_segment_fixed_size = 1024; }},
      {"descriptor bytes 16-31 (entry offset)", [](auto& k, auto&, auto&) { k.kernel_code_entry_byte_offset = 512; }},
      {"descriptor bytes 32-47 (rsrc3)", [](auto& k, auto&, auto&) { k.compute_pgm_rsrc3 = 0x10; }},
      {"descriptor bytes 48-63 (rsrc1)", [](auto& k, auto&, auto&) { k.compute_pgm_rsrc1 = 0x60AF0041; }},
      {"kd_va", [](auto&, auto& q, auto&) { q.kd_va = aq::gpu_va(0x7F0000110000); }},
      {"block x", [](auto&, auto& q, auto&) { q.block[0] = 128; }},
      {"block y", [](auto&, auto& q, auto&) { q.block[1] = 4; }},
      {"block z", [](auto&, auto& q, auto&) { q.block[2] = 2; }},
      {"private segment buffer 0", [](auto&, auto& q, auto&) { q.private_segment_buffer[0] = 0x11; }},
      {"private segment buffer 1", [](auto&, auto& q, auto&) { q.private_segment_buffer[1] = 0x22; }},
      {"private segment buffer 2", [](auto&, auto& q, auto&) { q.private_segment_buffer[2] = 0x33; }},
      {"private segment buffer 3", [](auto&, auto& q, auto&) { q.private_segment_buffer[3] = 0x44; }},
      {"queue_ptr", [](auto&, auto& q, auto&) { q.queue_ptr = aq::gpu_va(0x7F0000900000); }},
      {"dispatch_id", [](auto&, auto& q, auto&) { q.dispatch_id = 0x500000007ull; }},
      {"flat scratch init 0", [](auto&, auto& q, auto&) { q.flat_scratch_init[0] = 0x55; }},
      {"flat scratch init 1", [](auto&, auto& q, auto&) { q.flat_scratch_init[1] = 0x66; }},
      {"dynamic LDS", [](auto&, auto& q, auto&) { q.dynamic_lds_bytes = 2048; }},
      {"scratch base", [](auto&, auto& q, auto&) { q.scratch_base = aq::gpu_va(0x7F0000A00000); }},
      {"scratch waves", [](auto&, auto& q, auto&) { q.scratch_waves = 64; }},
      {"scratch bytes per wave", [](auto&, auto& q, auto&) { q.scratch_bytes_per_wave = 4096; }},
      {"waves per SH", [](auto&, auto& q, auto&) { q.waves_per_sh = 8; }},
      {"64-bit completion", [](auto&, auto&, auto& d) { d.b64 = true; }},
      {"event mailbox", [](auto&, auto&, auto& d) { d.event_mailbox = aq::gpu_va(0x7F0000B00000); }},
      {"event id", [](auto&, auto&, auto& d) { d.event_id = 9; }},
      {"no completion address", [](auto&, auto&, auto& d) { d.address = aq::gpu_va(0), d.b64 = false; }},
  };
  std::vector<std::uint32_t> before;
  std::uint64_t w = 0;
  for (const step& s : steps) {
    INFO(s.what);
    s.change(kd, p, c);
    const aq::ring::pm4::dispatch_template<T> fresh(p, c);
    const std::uint64_t rw = ref.wptr;
    REQUIRE(ref.q.try_dispatch(fresh, {.grid = p.grid, .kernarg = p.kernarg, .dispatch_ptr = p.dispatch_ptr,
                                       .completion_address = c.address, .completion_value = c.value})
                .has_value());
    const std::vector<std::uint32_t> expected = ref.at(rw, ref.wptr - rw);
    CHECK(expected != before);  // the change reaches the command
    const auto r = f.q.try_dispatch(p, c);
    REQUIRE(r.has_value());
    CHECK(f.at(w, *r - w) == expected);
    w = *r;
    before = expected;
    f.consume();
    ref.consume();
  }
}

TEST_CASE("a template dispatch straddles the ring's end; a full ring fails before writing") {
  using T = arch::gfx11_target;
  fixture<T> f(256);
  gfx11_dispatch d;
  const auto kd = d.kd();
  const aq::ring::pm4::dispatch_template<T> t(d.params(kd), d.completion());
  for (int i = 0; i < 3; ++i) REQUIRE(f.q.try_dispatch(t, d.patch()).has_value());  // 195 dwords
  f.consume();
  d.gx = 42, d.value = 77;
  REQUIRE(f.q.try_dispatch(t, d.patch()).value() == 260);  // dwords 195..259: wraps at 256
  CHECK(f.at(195, 65) == d.dwords());
  CHECK(f.doorbells.back() == 260);
  // No consumer: 260 - 195 = 65 dwords in flight, 256 - 65 = 191 free: two more fit, the third not.
  REQUIRE(f.q.try_dispatch(t, d.patch()).has_value());
  REQUIRE(f.q.try_dispatch(t, d.patch()).has_value());
  const auto before = f.ring;
  const auto doorbells = f.doorbells.size();
  const auto r = f.q.try_dispatch(t, d.patch(), 1ms);
  REQUIRE_FALSE(r.has_value());
  CHECK(r.get_failure() == aq::errc::queue_full);
  CHECK(f.ring == before);
  CHECK(f.wptr == 390);
  CHECK(f.doorbells.size() == doorbells);
}

}  // namespace AQ_UNITY_ID
