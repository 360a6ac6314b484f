// tests/runtime/host_kernels.hpp — host kernels the runtime tests dispatch on the emulator.
// Each follows aq::emu::host_kernel_abi: it finds the dispatch packet, its kernargs and its
// workgroup id in the initial SGPRs and its work-item ids in v0, as compiled code would.
#pragma once

#include <aqueduct/runtime.hpp>

#include <algorithm>
#include <cstdint>

namespace rt_test {

namespace rt = aqueduct::runtime;
namespace emu = aqueduct::emu;

// vadd(a, b, c, n): c[i] = a[i] + b[i] for i < n. Kernarg layout of (u64, u64, u64, u32).
struct vadd_args {
  std::uint64_t a, b, c;
  std::uint32_t n;
};
inline void vadd(emu::workgroup_context& ctx) {
  const emu::host_workgroup wg(ctx);
  const auto args = wg.args<vadd_args>();
  wg.for_each_wave([&](std::uint64_t first, std::uint32_t lanes) {
    if (first >= args.n) return;
    const auto n = static_cast<std::uint32_t>(std::min<std::uint64_t>(lanes, args.n - first));
    const float* a = ctx.ptr<const float>(args.a + first * 4, n);
    const float* b = ctx.ptr<const float>(args.b + first * 4, n);
    float* c = ctx.ptr<float>(args.c + first * 4, n, true);
    for (std::uint32_t i = 0; i < n; ++i) c[i] = a[i] + b[i];
  });
}

// store(out, index, value): out[index] = value (one work-item). For ordering tests.
struct store_args {
  std::uint64_t out;
  std::uint32_t index;
  std::uint32_t value;
};
inline void store(emu::workgroup_context& ctx) {
  const emu::host_workgroup wg(ctx);
  const auto a = wg.args<store_args>();
  ctx.store<std::uint32_t>(a.out + 4ull * a.index, a.value);
}

// copy_add(out, in, index, add): out[index] = in[index - 1] + add — reads what an earlier
// dispatch wrote, so a missing dependency shows as a wrong value.
struct chain_args {
  std::uint64_t data;
  std::uint32_t index;
  std::uint32_t add;
};
inline void chain(emu::workgroup_context& ctx) {
  const emu::host_workgroup wg(ctx);
  const auto a = wg.args<chain_args>();
  const auto prev = ctx.load<std::uint32_t>(a.data + 4ull * (a.index - 1));
  ctx.store<std::uint32_t>(a.data + 4ull * a.index, prev + a.add);
}

// nothing(): an empty kernel (latency, ring tests).
inline void nothing(emu::workgroup_context&) {}

// The kernels' parameter lists as typed kernels (executable::get_kernel<...>).
using vadd_kernel = rt::kernel<const float*, const float*, float*, std::uint32_t>;
using store_kernel = rt::kernel<std::uint32_t*, std::uint32_t, std::uint32_t>;
template <class K>
struct typed_lookup;
template <class... P>
struct typed_lookup<rt::kernel<P...>> {
  static rt::kernel<P...> get(const rt::executable& exe, std::string_view name) { return exe.get_kernel<P...>(name); }
};
template <class K>
K get(const rt::executable& exe, std::string_view name) {
  return typed_lookup<K>::get(exe, name);
}

inline emu::host_code_object test_kernels() {
  emu::host_code_object c;
  c.kernels.push_back(emu::host_kernel::with_args<const float*, const float*, float*, std::uint32_t>("vadd", vadd));
  c.kernels.push_back(emu::host_kernel::with_args<std::uint32_t*, std::uint32_t, std::uint32_t>("store", store));
  c.kernels.push_back(emu::host_kernel::with_args<std::uint32_t*, std::uint32_t, std::uint32_t>("chain", chain));
  c.kernels.push_back(emu::host_kernel::with_args<>("nothing", nothing));
  return c;
}

}  // namespace rt_test
