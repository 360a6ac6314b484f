// tests/graph/kernels.hpp — host kernels the graph tests dispatch on the emulated device (they
// follow aq::emu::host_kernel_abi: kernargs, workgroup ids and work-item ids from the registers).
#pragma once

#include <aqueduct/graph.hpp>
#include <aqueduct/runtime.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <thread>

namespace graph_test {

// Whether an error text names `w` (the tests check what a message says, not its whole wording).
inline bool contains(std::string_view s, std::string_view w) { return s.find(w) != std::string_view::npos; }

namespace rt = aqueduct::runtime;
namespace emu = aqueduct::emu;

// axpb(y, x, a, b, n): y[i] = a * x[i] + b (u32 arithmetic) for i < n.
struct axpb_args {
  std::uint64_t y, x;
  std::uint32_t a, b, n;
};
inline void axpb(emu::workgroup_context& ctx) {
  const emu::host_workgroup wg(ctx);
  const auto k = wg.args<axpb_args>();
  wg.for_each_item([&](std::uint64_t i) {
    if (i < k.n) ctx.store<std::uint32_t>(k.y + 4 * i, k.a * ctx.load<std::uint32_t>(k.x + 4 * i) + k.b);
  });
}
// add(out, in, c, n): out[i] = in[i] + c.
struct add_args {
  std::uint64_t out, in;
  std::uint32_t c, n;
};
inline void add(emu::workgroup_context& ctx) {
  const emu::host_workgroup wg(ctx);
  const auto k = wg.args<add_args>();
  wg.for_each_item([&](std::uint64_t i) {
    if (i < k.n) ctx.store<std::uint32_t>(k.out + 4 * i, ctx.load<std::uint32_t>(k.in + 4 * i) + k.c);
  });
}
// store(out, index, value): out[index] = value.
struct store_args {
  std::uint64_t out;
  std::uint32_t index, value;
};
inline void store(emu::workgroup_context& ctx) {
  const emu::host_workgroup wg(ctx);
  const auto k = wg.args<store_args>();
  ctx.store<std::uint32_t>(k.out + 4ull * k.index, k.value);
}
// nothing(): an empty kernel.
inline void nothing(emu::workgroup_context&) {}
// slow_store(out, index, value): out[index] = value after 50 ms (a producer slower than its
// consumer on another queue: a missing edge then shows as a stale value).
inline void slow_store(emu::workgroup_context& ctx) {
  const emu::host_workgroup wg(ctx);
  const auto k = wg.args<store_args>();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ctx.store<std::uint32_t>(k.out + 4ull * k.index, k.value);
}

// put64(word, value): *word = value (a device-side decision for the conditionals).
struct put64_args {
  std::uint64_t word, value;
};
inline void put64(emu::workgroup_context& ctx) {
  const auto k = emu::host_workgroup(ctx).args<put64_args>();
  ctx.store<std::uint64_t>(k.word, k.value);
}
// countdown(word, count): count[0] += 1, *word -= 1 (a WHILE body that ends its loop at 0).
struct countdown_args {
  std::uint64_t word, count;
};
inline void countdown(emu::workgroup_context& ctx) {
  const auto k = emu::host_workgroup(ctx).args<countdown_args>();
  ctx.store<std::uint32_t>(k.count, ctx.load<std::uint32_t>(k.count) + 1);
  ctx.store<std::uint64_t>(k.word, ctx.load<std::uint64_t>(k.word) - 1);
}

using axpb_kernel = rt::kernel<std::uint32_t*, const std::uint32_t*, std::uint32_t, std::uint32_t, std::uint32_t>;
using add_kernel = rt::kernel<std::uint32_t*, const std::uint32_t*, std::uint32_t, std::uint32_t>;
using store_kernel = rt::kernel<std::uint32_t*, std::uint32_t, std::uint32_t>;
using nothing_kernel = rt::kernel<>;
using put64_kernel = rt::kernel<std::uint64_t*, std::uint64_t>;
using countdown_kernel = rt::kernel<std::uint64_t*, std::uint32_t*>;

inline emu::host_code_object kernels() {
  emu::host_code_object c;
  c.kernels.push_back(emu::host_kernel::with_args<std::uint32_t*, const std::uint32_t*, std::uint32_t, std::uint32_t, std::uint32_t>("axpb", axpb));
  c.kernels.push_back(emu::host_kernel::with_args<std::uint32_t*, const std::uint32_t*, std::uint32_t, std::uint32_t>("add", add));
  c.kernels.push_back(emu::host_kernel::with_args<std::uint32_t*, std::uint32_t, std::uint32_t>("store", store));
  c.kernels.push_back(emu::host_kernel::with_args<>("nothing", nothing));
  c.kernels.push_back(emu::host_kernel::with_args<std::uint32_t*, std::uint32_t, std::uint32_t>("slow_store", slow_store));
  c.kernels.push_back(emu::host_kernel::with_args<std::uint64_t*, std::uint64_t>("put64", put64));
  c.kernels.push_back(emu::host_kernel::with_args<std::uint64_t*, std::uint32_t*>("countdown", countdown));
  return c;
}

// Everything a test needs on one emulated GPU: kernels and the three kinds of queue.
struct rig {
  rt::system sys;
  rt::agent gpu;
  rt::executable exe;
  axpb_kernel axpb_k;
  add_kernel add_k;
  store_kernel store_k;
  nothing_kernel nothing_k;
  store_kernel slow_store_k;
  put64_kernel put64_k;
  countdown_kernel countdown_k;
  rt::queue aql;
  rt::pm4_queue pm4;
  rt::sdma_queue sdma;
  explicit rig(const char* machine = "rx7900xtx")
      : rig(rt::system::open({.device = rt::device_choice::emulated, .machine = machine})) {}
  explicit rig(rt::system s)
      : sys(std::move(s)),
        gpu(sys.default_agent()),
        exe(aqueduct::emu::load(gpu, kernels())),
        axpb_k(exe.get_kernel<std::uint32_t*, const std::uint32_t*, std::uint32_t, std::uint32_t, std::uint32_t>("axpb")),
        add_k(exe.get_kernel<std::uint32_t*, const std::uint32_t*, std::uint32_t, std::uint32_t>("add")),
        store_k(exe.get_kernel<std::uint32_t*, std::uint32_t, std::uint32_t>("store")),
        nothing_k(exe.get_kernel<>("nothing")),
        slow_store_k(exe.get_kernel<std::uint32_t*, std::uint32_t, std::uint32_t>("slow_store")),
        put64_k(exe.get_kernel<std::uint64_t*, std::uint64_t>("put64")),
        countdown_k(exe.get_kernel<std::uint64_t*, std::uint32_t*>("countdown")),
        aql(gpu.make_queue(aqueduct::aql)),
        pm4(gpu.make_queue(aqueduct::pm4)),
        sdma(gpu.make_queue(aqueduct::sdma)) {}
  rt::buffer<std::uint32_t> host_buffer(std::uint32_t n, std::uint32_t fill = 0) const {
    auto b = gpu.alloc<std::uint32_t>(n, rt::memory_kind::host);
    std::fill_n(b.data(), n, fill);
    return b;
  }
};

// x -> (AQL) y = a*x + b -> (SDMA) z = y -> (PM4) w = z + c: the three queue kinds in one chain.
struct pipeline {
  rig& r;
  std::uint32_t n;
  rt::buffer<std::uint32_t> x, y, z, w;
  aqueduct::graph::node_id k1{}, cp{}, k2{};
  pipeline(rig& rr, std::uint32_t count, std::uint32_t seed = 0)
      : r(rr), n(count), x(r.host_buffer(n)), y(r.host_buffer(n)), z(r.host_buffer(n)), w(r.host_buffer(n)) {
    for (std::uint32_t i = 0; i < n; ++i) x[i] = (i + seed) * 2654435761u;
  }
  aqueduct::graph::task<void> run(std::uint32_t a, std::uint32_t b, std::uint32_t c) {
    namespace g = aqueduct::graph;
    k1 = co_await g::on(r.aql).dispatch(r.axpb_k, rt::grid{n}, rt::block{64}, y, x, a, b, n).label("scale");
    cp = co_await g::on(r.sdma).copy(z, y).label("move");
    k2 = co_await g::on(r.pm4).dispatch(r.add_k, rt::grid{n}, rt::block{64}, w, z, c, n).label("offset");
  }
  void clear() {
    std::fill_n(y.data(), n, 0u);
    std::fill_n(z.data(), n, 0u);
    std::fill_n(w.data(), n, 0u);
  }
  // Elements of w that are not a * x + b + c (host arithmetic, u32).
  std::uint32_t wrong(std::uint32_t a, std::uint32_t b, std::uint32_t c) const {
    std::uint32_t bad = 0;
    for (std::uint32_t i = 0; i < n; ++i) bad += w[i] != a * x[i] + b + c;
    return bad;
  }
};

}  // namespace graph_test
