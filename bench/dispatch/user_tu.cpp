// bench/dispatch/user_tu.cpp — see user_tu.hpp. Written the way the README and docs/queues.md
// show it, with nothing but the public headers and hsa.h.
#include "user_tu.hpp"

#include <aqueduct/queue/aql_packets.hpp>

#include <hsa/amd_hsa_queue.h>
#include <hsa/hsa.h>

namespace bench::user_tu {

namespace q = aqueduct::ring;

static q::kernel_dispatch describe(const kernel_info& k) {
  return {.kernel_object = aqueduct::gpu_va(k.kernel_object),
          .kernarg_address = aqueduct::gpu_va(k.kernarg_address),
          .grid = {k.grid_x, 1, 1},
          .workgroup = {k.workgroup_x, 1, 1},
          .segments = {}};
}

void sp_value(sp_queue& queue, const kernel_info& k, std::uint32_t n) {
  auto r = queue.try_reserve(n).value();
  for (std::uint32_t i = 0; i < n; ++i) r.write(i, q::make_packet(describe(k)));
  r.publish();
}

void sp_if(sp_queue& queue, const kernel_info& k, std::uint32_t n) {
  if (auto r = queue.try_reserve(n)) {
    for (std::uint32_t i = 0; i < n; ++i) r->write(i, q::make_packet(describe(k)));
    r->publish();
  }
}

void sp_submit(sp_queue& queue, const kernel_info& k, std::uint32_t n) {
  for (std::uint32_t i = 0; i < n; ++i) queue.submit(q::make_packet(describe(k)));
}

void mp_value(mp_queue& queue, const kernel_info& k, std::uint32_t n) {
  auto r = queue.try_reserve(n).value();
  for (std::uint32_t i = 0; i < n; ++i) r.write(i, q::make_packet(describe(k)));
  r.publish();
}

static void fill(hsa_kernel_dispatch_packet_t* p, const kernel_info& k) {
  p->workgroup_size_x = k.workgroup_x;
  p->workgroup_size_y = 1;
  p->workgroup_size_z = 1;
  p->reserved0 = 0;
  p->grid_size_x = k.grid_x;
  p->grid_size_y = 1;
  p->grid_size_z = 1;
  p->private_segment_size = 0;
  p->group_segment_size = 0;
  p->kernel_object = k.kernel_object;
  p->kernarg_address = reinterpret_cast<void*>(k.kernarg_address);
  p->reserved2 = 0;
  p->completion_signal.handle = 0;
}
static constexpr std::uint32_t header_setup =
    ((HSA_PACKET_TYPE_KERNEL_DISPATCH << HSA_PACKET_HEADER_TYPE) | (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE) |
     (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE)) |
    ((1u << HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS) << 16);

void hsa_sp(void* amd_queue, std::uint64_t* doorbell, const kernel_info& k, std::uint32_t n) {
  auto& aq = *static_cast<amd_queue_t*>(amd_queue);
  const std::uint32_t size = aq.hsa_queue.size;
  const std::uint64_t first = __atomic_load_n(&aq.write_dispatch_id, __ATOMIC_RELAXED);
  while (first + n - __atomic_load_n(&aq.read_dispatch_id, __ATOMIC_ACQUIRE) > size) {
  }
  auto* base = static_cast<hsa_kernel_dispatch_packet_t*>(aq.hsa_queue.base_address);
  for (std::uint32_t i = 0; i < n; ++i) {
    hsa_kernel_dispatch_packet_t* p = base + ((first + i) & (size - 1));
    fill(p, k);
    __atomic_store_n(reinterpret_cast<std::uint32_t*>(p), header_setup, __ATOMIC_RELEASE);
  }
  __atomic_store_n(&aq.write_dispatch_id, first + n, __ATOMIC_RELEASE);
  __atomic_store_n(doorbell, first + n - 1, __ATOMIC_RELEASE);
}

void hsa_mp(void* amd_queue, std::uint64_t* doorbell, const kernel_info& k, std::uint32_t n) {
  auto& aq = *static_cast<amd_queue_t*>(amd_queue);
  const std::uint32_t size = aq.hsa_queue.size;
  const std::uint64_t first = __atomic_fetch_add(&aq.write_dispatch_id, n, __ATOMIC_RELAXED);
  while (first + n - __atomic_load_n(&aq.read_dispatch_id, __ATOMIC_ACQUIRE) > size) {
  }
  auto* base = static_cast<hsa_kernel_dispatch_packet_t*>(aq.hsa_queue.base_address);
  for (std::uint32_t i = 0; i < n; ++i) {
    hsa_kernel_dispatch_packet_t* p = base + ((first + i) & (size - 1));
    fill(p, k);
    __atomic_store_n(reinterpret_cast<std::uint32_t*>(p), header_setup, __ATOMIC_RELEASE);
  }
  __atomic_store_n(doorbell, first + n - 1, __ATOMIC_RELEASE);
}

}  // namespace bench::user_tu
