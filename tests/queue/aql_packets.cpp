// queue/aql_packets.hpp builders, checked byte for byte against packets filled in through
// Debian's hsa.h / hsa_ext_amd.h (ROCm 5.2.3) types and macros — the expected values never come
// from aqueduct's own encoders.
#include <aqueduct/queue/aql_packets.hpp>

#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>

#include <doctest/doctest.h>

#include <cstring>
#include <string>

namespace AQ_UNITY_ID {  // this file's own namespace: tests/CMakeLists.txt builds a layer as one unit

namespace q = aqueduct::ring;
namespace abi = aqueduct::abi;
using aqueduct::gpu_va;

namespace {
template <class A, class B>
bool same_bytes(const A& a, const B& b) {
  static_assert(sizeof(A) == 64 && sizeof(B) == 64);
  return std::memcmp(&a, &b, 64) == 0;
}
constexpr std::uint16_t hsa_header(unsigned type, bool barrier, unsigned acq, unsigned rel) {
  return static_cast<std::uint16_t>((type << HSA_PACKET_HEADER_TYPE) | ((barrier ? 1u : 0u) << HSA_PACKET_HEADER_BARRIER) |
                                    (acq << HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE) |
                                    (rel << HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE));
}
}  // namespace

TEST_CASE("kernel dispatch matches hsa_kernel_dispatch_packet_t") {
  const auto p = q::make_packet(q::kernel_dispatch{.kernel_object = gpu_va(0x7f0000001000),
                                                   .kernarg_address = gpu_va(0x7f0000002000),
                                                   .grid = {1024, 8, 1},
                                                   .workgroup = {64, 4, 1},
                                                   .segments = {.group_segment_size = 4096, .private_segment_size = 16},
                                                   .completion_signal = 0x7f0000003000,
                                                   .dimensions = 0,
                                                   .barrier = true,
                                                   .scopes = {abi::fence_scope::system, abi::fence_scope::agent}});
  hsa_kernel_dispatch_packet_t h{};
  h.header = hsa_header(HSA_PACKET_TYPE_KERNEL_DISPATCH, true, HSA_FENCE_SCOPE_SYSTEM, HSA_FENCE_SCOPE_AGENT);
  h.setup = 2 << HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS;  // y > 1: two dimensions
  h.workgroup_size_x = 64;
  h.workgroup_size_y = 4;
  h.workgroup_size_z = 1;
  h.grid_size_x = 1024;
  h.grid_size_y = 8;
  h.grid_size_z = 1;
  h.private_segment_size = 16;
  h.group_segment_size = 4096;
  h.kernel_object = 0x7f0000001000;
  h.kernarg_address = reinterpret_cast<void*>(0x7f0000002000);
  h.completion_signal.handle = 0x7f0000003000;
  CHECK(same_bytes(p, h));
  // header|setup as the one u32 the queue publishes.
  CHECK(q::header_dword(p) == (static_cast<std::uint32_t>(h.header) | static_cast<std::uint32_t>(h.setup) << 16));
}

TEST_CASE("dispatch dimensions: inferred from the sizes, or given") {
  auto setup = [](q::grid_size g, q::workgroup_size w, unsigned dims) {
    q::kernel_dispatch d;
    d.grid = g;
    d.workgroup = w;
    d.dimensions = dims;
    return q::make_packet(d).setup;
  };
  CHECK(setup({256, 1, 1}, {}, 0) == 1);
  CHECK(setup({256, 1, 2}, {}, 0) == 3);
  CHECK(setup({256, 1, 1}, {1, 2, 1}, 0) == 2);
  CHECK(setup({256, 1, 1}, {}, 3) == 3);
  // Default fences: system acquire and release (0x1402 for a dispatch without barrier).
  CHECK(q::make_packet(q::kernel_dispatch{}).header ==
        hsa_header(HSA_PACKET_TYPE_KERNEL_DISPATCH, false, HSA_FENCE_SCOPE_SYSTEM, HSA_FENCE_SCOPE_SYSTEM));
}

TEST_CASE("segment sizes come from the kernel descriptor plus dynamic LDS") {
  abi::kernel_descriptor kd{};
  kd.group_segment_fixed_size = 1024;
  kd.private_segment_fixed_size = 48;
  const auto s = q::segments_of(kd, 512);
  CHECK(s.group_segment_size == 1536);
  CHECK(s.private_segment_size == 48);
}

TEST_CASE("barrier-AND / barrier-OR match hsa_barrier_{and,or}_packet_t") {
  const auto a = q::make_packet(q::barrier_and{.deps = q::dependencies({0x1000, 0x2000, 0x3000}),
                                               .completion_signal = 0x4000,
                                               .barrier = true,
                                               .scopes = q::fences::agent()});
  hsa_barrier_and_packet_t ha{};
  ha.header = hsa_header(HSA_PACKET_TYPE_BARRIER_AND, true, HSA_FENCE_SCOPE_AGENT, HSA_FENCE_SCOPE_AGENT);
  ha.dep_signal[0].handle = 0x1000;
  ha.dep_signal[1].handle = 0x2000;
  ha.dep_signal[2].handle = 0x3000;
  ha.completion_signal.handle = 0x4000;
  CHECK(same_bytes(a, ha));

  const auto o = q::make_packet(q::barrier_or{.deps = q::dependencies({0x1000, 0, 0, 0, 0x5000}), .scopes = q::fences::none()});
  hsa_barrier_or_packet_t ho{};
  ho.header = hsa_header(HSA_PACKET_TYPE_BARRIER_OR, false, HSA_FENCE_SCOPE_NONE, HSA_FENCE_SCOPE_NONE);
  ho.dep_signal[0].handle = 0x1000;
  ho.dep_signal[4].handle = 0x5000;
  CHECK(same_bytes(o, ho));
}

TEST_CASE("AMD barrier-value matches hsa_amd_barrier_value_packet_t") {
  const auto v = q::make_packet(q::barrier_value{.signal = 0xA000,
                                                 .cond = abi::signal_condition::lt,
                                                 .value = 5,
                                                 .mask = 0xFF,
                                                 .completion_signal = 0xB000,
                                                 .barrier = false,
                                                 .scopes = q::fences::system()});
  hsa_amd_barrier_value_packet_t h{};
  h.header.header = hsa_header(HSA_PACKET_TYPE_VENDOR_SPECIFIC, false, HSA_FENCE_SCOPE_SYSTEM, HSA_FENCE_SCOPE_SYSTEM);
  h.header.AmdFormat = HSA_AMD_PACKET_TYPE_BARRIER_VALUE;
  h.signal.handle = 0xA000;
  h.value = 5;
  h.mask = 0xFF;
  h.cond = HSA_SIGNAL_CONDITION_LT;
  h.completion_signal.handle = 0xB000;
  CHECK(same_bytes(v, h));
}

TEST_CASE("the no-op filler is a barrier-AND with nothing to wait for and no fences") {
  const auto n = q::nop_packet();
  hsa_barrier_and_packet_t h{};
  h.header = hsa_header(HSA_PACKET_TYPE_BARRIER_AND, false, HSA_FENCE_SCOPE_NONE, HSA_FENCE_SCOPE_NONE);
  CHECK(same_bytes(n, h));
  CHECK(q::header_dword(n) == 3);
}

TEST_CASE("describe_packet decodes every field a person needs") {
  abi::aql_slot s;
  const auto p = q::make_packet(q::kernel_dispatch{.kernel_object = gpu_va(0xabc000),
                                                   .kernarg_address = gpu_va(0xdef000),
                                                   .grid = {4096, 1, 1},
                                                   .workgroup = {256, 1, 1},
                                                   .segments = {},
                                                   .completion_signal = 0x5150});
  std::memcpy(s.bytes, &p, 64);
  std::string out;
  q::describe_packet(s, out);
  CHECK(out == "KERNEL_DISPATCH (header 0x1402) barrier=0 acquire=system release=system dims=1 grid=4096x1x1 "
               "workgroup=256x1x1 private=0 group=0 kernel_object=0xabc000 kernarg=0xdef000 completion_signal=0x5150");
  const auto v = q::make_packet(q::barrier_value{.signal = 0x10, .cond = abi::signal_condition::gte, .value = -1});
  std::memcpy(s.bytes, &v, 64);
  out.clear();
  q::describe_packet(s, out);
  CHECK(out.find("VENDOR_SPECIFIC") == 0);
  CHECK(out.find("AMD_BARRIER_VALUE signal=0x10 cond=3 value=-1 mask=0xffffffffffffffff") != std::string::npos);
}

}  // namespace AQ_UNITY_ID
