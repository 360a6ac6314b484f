// tests/emu/isa/kernels/corpus.hip — kernels the ISA interpreter must run as clang-19 builds
// them (-O2/-O3, wave32/wave64). Built at build time by tests/runtime/CMakeLists.txt; checked
// against host references by tests/runtime/isa_kernels.cpp.
#define K extern "C" __attribute__((global))
static __attribute__((device)) unsigned gid() {
  return __builtin_amdgcn_workgroup_id_x() * __builtin_amdgcn_workgroup_size_x() + __builtin_amdgcn_workitem_id_x();
}
K void vadd(const float* a, const float* b, float* c, unsigned n) {
  unsigned i = gid();
  if (i < n) c[i] = a[i] + b[i];
}
K void saxpy(float s, const float* x, float* y, unsigned n) {
  unsigned i = gid();
  if (i < n) y[i] = __builtin_fmaf(s, x[i], y[i]);
}
K void gridstride(const int* a, int* b, unsigned n, unsigned stride) {
  for (unsigned i = gid(); i < n; i += stride) b[i] = a[i] * 3 + (a[i] >> 2);
}
K void reduce(const unsigned* in, unsigned* out, unsigned n) {
  __attribute__((shared)) unsigned tmp[256];
  unsigned t = __builtin_amdgcn_workitem_id_x(), i = gid();
  tmp[t] = i < n ? in[i] : 0;
  __builtin_amdgcn_s_barrier();
  for (unsigned s = __builtin_amdgcn_workgroup_size_x() / 2; s > 0; s >>= 1) {
    if (t < s) tmp[t] += tmp[t + s];
    __builtin_amdgcn_s_barrier();
  }
  if (t == 0) out[__builtin_amdgcn_workgroup_id_x()] = tmp[0];
}
K void atomics(const unsigned* in, unsigned* sum, unsigned n) {
  unsigned i = gid();
  if (i < n) __atomic_fetch_add(sum, in[i], __ATOMIC_RELAXED);
}
K void hash(const unsigned* in, unsigned* out, unsigned n) {
  unsigned i = gid();
  if (i >= n) return;
  unsigned x = in[i];
  for (int r = 0; r < 4; ++r) {
    x ^= x >> 16; x *= 0x7feb352dU; x ^= x >> 15; x *= 0x846ca68bU; x ^= x >> 16; x = (x << 5) | (x >> 27);
  }
  out[i] = x + __builtin_popcount(x) + __builtin_clz(x | 1);
}
K void divergent(const unsigned* in, unsigned* out, unsigned n) {
  unsigned i = gid();
  if (i >= n) return;
  unsigned x = in[i], steps = 0;
  while (x != 1 && steps < 1000) { x = (x & 1) ? 3 * x + 1 : x / 2; ++steps; }
  out[i] = steps;
}
K void fmath(const float* a, float* out, unsigned n) {
  unsigned i = gid();
  if (i >= n) return;
  float x = a[i];
  out[i] = __builtin_sqrtf(x * x + 1.0f) / (x + 3.0f) + __builtin_fmaf(x, 0.5f, -1.0f);
}
K void ptr64(const long long* a, long long* out, unsigned n, long long k) {
  unsigned i = gid();
  if (i >= n) return;
  out[i] = a[n - 1 - i] * k + (long long)i;
}
K void trap(unsigned* out) {
  if (gid() == 5) __builtin_trap();
  out[gid()] = 1;
}
