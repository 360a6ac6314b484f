// hello_vadd.hip — the vector addition hello_dispatch runs as machine code (--gfx), built by
// Debian's clang-19 for each emulated GPU (examples/hello_dispatch/CMakeLists.txt):
//   clang-19 -x hip --cuda-device-only -nogpulib -nogpuinc --no-gpu-bundle-output \
//            --offload-arch=gfx1100 -O3 hello_vadd.hip -o hello_vadd-gfx1100.co
#define K extern "C" __attribute__((global))
K void vadd(const float* a, const float* b, float* c, unsigned n) {
  const unsigned i = __builtin_amdgcn_workgroup_id_x() * __builtin_amdgcn_workgroup_size_x() + __builtin_amdgcn_workitem_id_x();
  if (i < n) c[i] = a[i] + b[i];
}
// The latency loop's kernel: the same parameters, no work.
K void empty(const float*, const float*, float*, unsigned) {}
