// bench/dispatch/user_tu.hpp — the publish styles written as a new user writes them in their OWN
// translation unit (user_tu.cpp, compiled separately): one ordinary function per style, called
// through a pointer, so that what is measured is what the compiler makes of the user's code
// with the queue's headers — not of the benchmark's always-inline fixtures (issue 11: inlining
// decides the result). The in-place HSA sequence is written the same way, in the same TU, with
// the same signature, so both sides pay the same call.
#pragma once

#include <aqueduct/queue/aql_queue.hpp>

#include <cstdint>

namespace bench::user_tu {

using sp_queue = aqueduct::ring::aql_queue_sp<>;
using mp_queue = aqueduct::ring::aql_queue_mp<>;

// What the user dispatches (the same values as bench::dispatch_desc).
struct kernel_info {
  std::uint64_t kernel_object, kernarg_address;
  std::uint32_t grid_x;
  std::uint16_t workgroup_x;
};

// `n` packets per call (a batch rings the doorbell once).
void sp_value(sp_queue& q, const kernel_info& k, std::uint32_t n);
void sp_if(sp_queue& q, const kernel_info& k, std::uint32_t n);
void sp_submit(sp_queue& q, const kernel_info& k, std::uint32_t n);
void mp_value(mp_queue& q, const kernel_info& k, std::uint32_t n);
// The HSA single-producer sequence, fields stored in place (hsa.h types): `queue` is the
// amd_queue_t whose ring, indexes and doorbell it uses.
void hsa_sp(void* amd_queue, std::uint64_t* doorbell, const kernel_info& k, std::uint32_t n);
void hsa_mp(void* amd_queue, std::uint64_t* doorbell, const kernel_info& k, std::uint32_t n);

}  // namespace bench::user_tu
