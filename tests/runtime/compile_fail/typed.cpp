// Compile-fail tests for the typed runtime API (runtime/kernel_args.hpp, runtime/queue_kind.hpp).
// Built once per CASE by tests/runtime/CMakeLists.txt with tests/arch/compile_fail/check_compile.cmake:
// CASE 0 is the positive control and must compile; every other case must fail to compile with
// the diagnostic the CMake file expects.
#include <aqueduct/runtime.hpp>

#include <cstddef>
#include <cstdint>

namespace aq = aqueduct;
namespace rt = aqueduct::runtime;

using vadd_kernel = aq::kernel<const float*, const float*, float*, std::uint32_t>;
using scale_kernel = aq::kernel<float*, const int*, float>;

void use(rt::queue& q, aq::pm4_queue& p, aq::sdma_queue& s, const vadd_kernel& vadd, const scale_kernel& scale,
         aq::buffer<float>& a, aq::buffer<float>& b, aq::buffer<float>& c, aq::buffer<int>& ints, std::uint32_t n,
         std::size_t count) {
#if CASE == 0  // control: the declared types, on both compute queues; each ticket on its own queue
  q.wait(q.dispatch(vadd, aq::grid{n}, aq::block{256}, a, b, c, n));
  p.wait(p.dispatch(vadd, aq::grid{n}, aq::block{256}, a, b, c, n));
  q.wait(q.dispatch(scale, aq::grid{n}, aq::block{256}, c, ints, 2.0f));
  s.wait(s.try_copy(a.va(), b.va(), 64).value());
  (void)count;
#elif CASE == 1  // a swapped kernel argument: n and c change places
  q.dispatch(vadd, aq::grid{n}, aq::block{256}, a, b, n, c);
#elif CASE == 2  // swapped buffers of different element types: int* and float* change places
  q.dispatch(scale, aq::grid{n}, aq::block{256}, ints, c, 2.0f);
#elif CASE == 3  // a PM4 ticket waited on an AQL queue
  q.wait(p.dispatch(vadd, aq::grid{n}, aq::block{256}, a, b, c, n));
#elif CASE == 4  // an AQL ticket waited on an SDMA queue
  s.wait(q.dispatch(vadd, aq::grid{n}, aq::block{256}, a, b, c, n));
#elif CASE == 5  // a narrowing argument: a std::size_t for a std::uint32_t parameter
  q.dispatch(vadd, aq::grid{n}, aq::block{256}, a, b, c, count);
#elif CASE == 6  // one argument too few
  p.dispatch(vadd, aq::grid{n}, aq::block{256}, a, b, c);
#endif
}

int main() { return 0; }
