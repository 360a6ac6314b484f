// examples/pipeline/pipeline.hip — the kernels pipeline dispatches with --gfx, built by clang-19
// for each processor in examples/pipeline/CMakeLists.txt (no HIP headers needed); the same
// arithmetic as pipeline.cpp's host kernels.
#define K extern "C" __attribute__((global))
static __attribute__((device)) unsigned gid() {
  return __builtin_amdgcn_workgroup_id_x() * __builtin_amdgcn_workgroup_size_x() + __builtin_amdgcn_workitem_id_x();
}
K void axpb(unsigned* y, const unsigned* x, unsigned a, unsigned b, unsigned n) {
  const unsigned i = gid();
  if (i < n) y[i] = a * x[i] + b;
}
K void sum(unsigned* out, const unsigned* x, const unsigned* y, unsigned n) {
  const unsigned i = gid();
  if (i < n) out[i] = x[i] + y[i];
}
K void add(unsigned* out, const unsigned* in, unsigned c, unsigned n) {
  const unsigned i = gid();
  if (i < n) out[i] = in[i] + c;
}
