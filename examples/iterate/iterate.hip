// examples/iterate/iterate.hip — the kernels iterate dispatches with --gfx, built by clang-19 for
// each processor in examples/iterate/CMakeLists.txt (no HIP headers needed): the same float
// operations, in the same order, as iterate.cpp's host kernels and host Jacobi, so every x[i]
// must come out bit for bit the same.
#define K extern "C" __attribute__((global))
static __attribute__((device)) float sweep_row(const float* x, const float* b, unsigned i, unsigned n) {
  const float left = i > 0 ? x[i - 1] : 0.0f;
  const float right = i + 1 < n ? x[i + 1] : 0.0f;
  return (b[i] + left + right) * 0.25f;
}
K void sweep(float* out, const float* in, const float* b, unsigned n) {
  const unsigned i = __builtin_amdgcn_workgroup_id_x() * __builtin_amdgcn_workgroup_size_x() + __builtin_amdgcn_workitem_id_x();
  if (i < n) out[i] = sweep_row(in, b, i, n);
}
// word = max |now - before| > tol; iterations += 1 (one work-item).
K void check(unsigned long long* word, unsigned* iterations, const float* now, const float* before, unsigned n, float tol) {
  float change = 0.0f;
  for (unsigned i = 0; i < n; ++i) {
    const float d = __builtin_fabsf(now[i] - before[i]);
    change = change < d ? d : change;  // std::max(change, d)
  }
  *word = change > tol ? 1 : 0;
  *iterations += 1;
}
K void start(unsigned long long* word, unsigned* iterations) {
  *word = 1;
  *iterations = 0;
}
