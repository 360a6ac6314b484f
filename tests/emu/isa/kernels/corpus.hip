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
// Tiled matmul C = A * B (n x n, row-major) with 16x16 LDS tiles on a 2-D grid of 16x16 blocks.
K void matmul(const float* A, const float* B, float* C, unsigned n) {
  __attribute__((shared)) float ta[16][16], tb[16][16];
  unsigned tx = __builtin_amdgcn_workitem_id_x(), ty = __builtin_amdgcn_workitem_id_y();
  unsigned row = __builtin_amdgcn_workgroup_id_y() * 16 + ty, col = __builtin_amdgcn_workgroup_id_x() * 16 + tx;
  float acc = 0.0f;
  for (unsigned t = 0; t < n; t += 16) {
    ta[ty][tx] = (row < n && t + tx < n) ? A[row * n + t + tx] : 0.0f;
    tb[ty][tx] = (col < n && t + ty < n) ? B[(t + ty) * n + col] : 0.0f;
    __builtin_amdgcn_s_barrier();
    for (unsigned k = 0; k < 16; ++k) acc = __builtin_fmaf(ta[ty][k], tb[k][tx], acc);
    __builtin_amdgcn_s_barrier();
  }
  if (row < n && col < n) C[row * n + col] = acc;
}
// fp64: sqrt, division, fma and a double -> long long -> double round trip.
K void dmath(const double* a, double* out, unsigned n) {
  unsigned i = gid();
  if (i >= n) return;
  double x = a[i];
  out[i] = __builtin_sqrt(x * x + 1.0) / (x + 3.0) + __builtin_fma(x, 0.5, -1.0) + (double)(long long)(x * 7.0);
}
// Half precision: scalar _Float16 (fma, compare/select, conversion to float) and packed half2.
typedef _Float16 half2 __attribute__((ext_vector_type(2)));
K void half(const _Float16* a, const _Float16* b, _Float16* out, float* fout, unsigned n) {
  unsigned i = gid();
  if (i >= n) return;
  _Float16 x = a[i], y = b[i];
  _Float16 r = x * y + (_Float16)1.5f;
  r = r > x ? r : x;
  r = r - y / (_Float16)4.0f;
  out[i] = r;
  fout[i] = (float)x + (float)y * (float)r;
}
K void half2k(const half2* a, const half2* b, half2* out, unsigned n) {
  unsigned i = gid();
  if (i >= n) return;
  half2 x = a[i], y = b[i];
  half2 r = x * y + x;
  out[i] = r - y;
}
// A private array the compiler keeps in scratch (volatile: it cannot live in registers).
K void privarr(const unsigned* in, unsigned* out, unsigned n) {
  unsigned i = gid();
  if (i >= n) return;
  volatile unsigned buf[64];
  for (unsigned k = 0; k < 64; ++k) buf[k] = in[i] * k + (k ^ i);
  unsigned s = 0;
  for (unsigned k = 0; k < 64; ++k) s += buf[(k * 7 + i) & 63];
  out[i] = s;
}
// An instruction the interpreter does not implement (a graphics op): the dispatch must end with
// a queue error that names it.
K void unsupported(float* out) {
  float x = out[0];
  __asm__ volatile("v_cubeid_f32 %0, %0, %0, %0" : "+v"(x));
  out[0] = x;
}
// A private array indexed by data, not volatile: it lives in scratch and is reached with
// scratch_* (gfx942, gfx11) or buffer_* through the private segment buffer V# (gfx90a).
K void spill(const unsigned* in, unsigned* out, unsigned n) {
  unsigned i = gid();
  if (i >= n) return;
  unsigned priv[64];
  for (unsigned k = 0; k < 64; ++k) priv[k] = in[i] * k + (k ^ i);
  unsigned acc = 0;
  for (unsigned k = 0; k < 64; ++k) acc += priv[(k * 7 + (in[i] >> (k & 15))) & 63];
  out[i] = acc;
}
// Uniform (kernel-argument) integer division and float math: gfx12 computes these on the scalar
// unit (s_cvt_f32_u32, s_mul_f32, s_fmaak_f32, s_cmp_gt_f32, s_max_num_f32, s_floor_f32 ...).
// Explicit fmas: no contraction left for the compiler to choose.
K void uniform(const unsigned* in, unsigned* out, float* fout, unsigned n, unsigned d, float s, float t) {
  unsigned i = gid();
  if (i >= n) return;
  out[i] = in[i] / d + in[i] % (d + 3) + (unsigned)(int)(s * t);
  const float u = __builtin_fmaf(s, t, 1.5f);
  const float v = __builtin_fminf(s, t) - __builtin_fmaxf(u, 2.0f);
  const float q = __builtin_floorf(s) + __builtin_ceilf(t) + __builtin_truncf(u) + __builtin_rintf(v);
  fout[i] = __builtin_fmaf((float)in[i], s > t ? u : v, q) + (float)(int)t + (float)(unsigned)s;
}
// Uniform half precision (kernel-argument _Float16): gfx12 computes it on the scalar unit
// (s_fmac_f16, s_min_num_f16, s_max_num_f16, s_sub_f16, s_floor/ceil/trunc/rndne_f16,
// s_cmp_gt_f16, s_cvt_f32_f16, s_cvt_f16_f32), the other targets on the VALU.
K void uniform16(const _Float16* in, _Float16* out, float* fout, _Float16 s, _Float16 t, float a, unsigned n) {
#pragma clang fp contract(off)
  unsigned i = gid();
  if (i >= n) return;
  const _Float16 u = __builtin_fmaf16(s, t, (_Float16)1.0f);
  const _Float16 v = __builtin_fminf16(s, t) - __builtin_fmaxf16(u, (_Float16)2.0f);
  const _Float16 q = __builtin_floorf16(s) + __builtin_ceilf16(t) + __builtin_truncf16(u) + __builtin_rintf16(v);
  const _Float16 w = s > t ? u : v;
  out[i] = in[i] * w + q;
  fout[i] = (float)in[i] + (float)q * a + (float)(_Float16)a;
}
// Cross-lane shuffles as HIP's __shfl_xor / __shfl write them (ds_bpermute_b32 with lane * 4):
// a butterfly sum over each 32-lane group and a rotate by one lane within it. Groups of 32 keep
// the result the same on every target and wave size (gfx11 wave64 permutes within each half).
K void shfl(const unsigned* in, unsigned* out, unsigned n) {
  const unsigned i = gid();
  const unsigned lane = __builtin_amdgcn_mbcnt_hi(~0u, __builtin_amdgcn_mbcnt_lo(~0u, 0u));  // in the wave
  const unsigned x = i < n ? in[i] : 0u;
  unsigned v = x;
  for (unsigned m = 1; m < 32; m <<= 1) v += (unsigned)__builtin_amdgcn_ds_bpermute((int)((lane ^ m) << 2), (int)v);
  const unsigned r = (unsigned)__builtin_amdgcn_ds_bpermute((int)((((lane + 1) & 31u) | (lane & ~31u)) << 2), (int)x);
  if (i < n) out[i] = v * 3u + r;
}
// float2/float4 arithmetic: CDNA (gfx90a/gfx942) computes it with packed f32 (v_pk_fma_f32,
// v_pk_mul_f32, v_pk_add_f32 with op_sel_hi and neg_lo/neg_hi), RDNA one lane-dword at a time.
// Contraction off and explicit fmas: the host reference rounds exactly as written.
typedef float vf2 __attribute__((ext_vector_type(2)));
typedef float vf4 __attribute__((ext_vector_type(4)));
K void vec2(const vf2* a, const vf2* b, vf2* c, vf4* d, float s, unsigned n) {
#pragma clang fp contract(off)
  unsigned i = gid();
  if (i >= n) return;
  const vf2 x = a[i], y = b[i];
  const vf2 r = __builtin_elementwise_fma(x, y, (vf2){s, s}) * x + (vf2){0.5f, -2.0f} - y;
  c[i] = r;
  const vf4 w = {x.x, y.y, r.x, s};
  d[i] = __builtin_elementwise_fma(w, (vf4){x.y, r.y, y.x, x.x}, (vf4){1.0f, 2.0f, 3.0f, 4.0f}) * s;
}
// Calls that are not inlined: s_getpc_b64 + s_add_u32/s_addc_u32 (a PC-relative address),
// s_swappc_b64 into the callee, s_setpc_b64 back, the callee's frame and spills on the stack
// in scratch (s32/s33 on RDNA and gfx942, the private segment buffer on gfx90a).
__attribute__((noinline, device)) unsigned callee(unsigned x, unsigned y) {
  unsigned a[8];
  for (int k = 0; k < 8; ++k) a[k] = x * k + y;
  unsigned s = 0;
  for (int k = 0; k < 8; ++k) s += a[(k * 3 + x) & 7];
  return s;
}
__attribute__((noinline, device)) unsigned outer(unsigned x, unsigned y) {
  unsigned b[4] = {x, y, x ^ y, x + y};
  return callee(b[x & 3], b[y & 3]) * 3 + b[(x >> 2) & 3];
}
K void calls(const unsigned* in, unsigned* out, unsigned n) {
  unsigned i = gid();
  if (i < n) out[i] = callee(in[i], i) + outer(in[i] * 5u, i);
}
// Buffer loads and stores through a V# (clang-19's __builtin_amdgcn_make_buffer_rsrc and
// raw_buffer_load/store, as Triton and rocPRIM use buffer_load_b128): num_records = `limit`
// bytes of `in` (past it a load reads 0, per dword of a b128), and the store's V# covers all of
// `out` but its last two dwords (stores there are dropped). Word 3: gfx9 DATA_FORMAT 32; gfx11/
// gfx12 OOB_SELECT 3 (raw: offset + size > num_records is out of range), FORMAT 4 (32_UINT,
// ignored by untyped access).
#if defined(__gfx942__) || defined(__gfx90a__)
#define AQ_BUF_WORD3 0x00020000
#else
#define AQ_BUF_WORD3 0x30004000
#endif
typedef unsigned vu4 __attribute__((ext_vector_type(4)));
K void bufrsrc(const unsigned* in, unsigned* out, unsigned n, unsigned limit) {
  const unsigned i = gid();
  __amdgpu_buffer_rsrc_t r = __builtin_amdgcn_make_buffer_rsrc((void*)in, 0, (int)limit, AQ_BUF_WORD3);
  __amdgpu_buffer_rsrc_t w = __builtin_amdgcn_make_buffer_rsrc((void*)out, 0, (int)(n * 4 - 8), AQ_BUF_WORD3);
  const unsigned v = __builtin_amdgcn_raw_buffer_load_b32(r, (int)(i * 4), 0, 0);
  const vu4 q = __builtin_amdgcn_raw_buffer_load_b128(r, (int)(i * 4 + 4), 0, 0);
  const unsigned char b = __builtin_amdgcn_raw_buffer_load_b8(r, (int)(i * 4 + 1), 0, 0);
  if (i < n) __builtin_amdgcn_raw_buffer_store_b32(v * 3u + q.x + q.y * 5u + q.z * 7u + q.w * 11u + b, w, (int)(i * 4), 0, 0);
}
#define RLX __ATOMIC_RELAXED
#define WG __HIP_MEMORY_SCOPE_WORKGROUP
// LDS atomics as HIP code writes them on __shared__ data (atomicAdd/Sub/Min/Max/And/Or/Xor/Inc/
// Exch, float and 64-bit atomics, a float max by a CAS loop), results used and not. Every output
// is independent of the order in which lanes and waves reach the atomics (tickets are checked as
// permutations, the exchanged values as a multiset).
K void ldsatomic(const unsigned* in, unsigned* out, unsigned long long* out64, float* outf, unsigned n) {
  __attribute__((shared)) unsigned u[8];
  __attribute__((shared)) int s[2];
  __attribute__((shared)) unsigned long long q[5];
  __attribute__((shared)) float fl[2];
  const unsigned t = __builtin_amdgcn_workitem_id_x(), i = gid();
  if (t == 0) {
    u[0] = 0, u[1] = 1000, u[2] = ~0u, u[3] = 0, u[4] = 0, u[5] = 0x5A5A5A5Au, u[6] = 7, u[7] = 0;
    s[0] = 0x7FFFFFFF, s[1] = (int)0x80000000;
    q[0] = 0, q[1] = 1ull << 40, q[2] = ~0ull, q[3] = 0, q[4] = 0;
    fl[0] = 0.0f, fl[1] = -1e30f;
  }
  __builtin_amdgcn_s_barrier();
  if (i < n) {
    const unsigned x = in[i];
    const unsigned tk = __hip_atomic_fetch_add(&u[0], 1u, RLX, WG);          // a ticket 0..k-1
    const unsigned dn = __hip_atomic_fetch_sub(&u[1], 1u, RLX, WG);          // 1000..1000-k+1
    __hip_atomic_fetch_and(&u[2], x | 0x00FF00FFu, RLX, WG);
    __hip_atomic_fetch_or(&u[3], x & 0x0F0F0F0Fu, RLX, WG);
    __hip_atomic_fetch_xor(&u[4], x, RLX, WG);
    const unsigned ex = __hip_atomic_exchange(&u[5], x, RLX, WG);
    const unsigned inc = __builtin_amdgcn_atomic_inc32(&u[6], 0xFFFFFFFFu, RLX, "workgroup");  // 7..7+k-1
    __hip_atomic_fetch_max(&u[7], x, RLX, WG);
    __hip_atomic_fetch_min(&s[0], (int)x, RLX, WG);
    const int mx = __hip_atomic_fetch_max(&s[1], (int)x, RLX, WG);
    const unsigned long long big = __hip_atomic_fetch_add(&q[0], (unsigned long long)x << 20, RLX, WG);
    const unsigned long long tk64 = __hip_atomic_fetch_sub(&q[1], 1ull << 33, RLX, WG);
    __hip_atomic_fetch_min(&q[2], (unsigned long long)x << 31 | t, RLX, WG);
    __hip_atomic_fetch_max(&q[3], (unsigned long long)x << 31 | t, RLX, WG);
    __hip_atomic_fetch_or(&q[4], 1ull << (x & 63), RLX, WG);
    __hip_atomic_fetch_add(&fl[0], (float)(x & 0xFFu), RLX, WG);
    const float fv = (float)(int)(x % 2001u) - 1000.0f;
    float cur = __hip_atomic_load(&fl[1], RLX, WG);
    while (cur < fv && !__hip_atomic_compare_exchange_strong(&fl[1], &cur, fv, RLX, RLX, WG)) {}
    out[i] = tk | (1000u - dn) << 8 | (inc - 7u) << 16;
    out64[i] = tk64 >> 33 ^ (unsigned long long)ex << 32;
    outf[i] = (float)(mx == (int)0x80000000 ? 1 : 0) + (float)(big >> 63);
  }
  __builtin_amdgcn_s_barrier();
  if (t == 0) {
    const unsigned g = __builtin_amdgcn_workgroup_id_x();
    out[n + 8 * g] = u[2], out[n + 8 * g + 1] = u[3], out[n + 8 * g + 2] = u[4], out[n + 8 * g + 3] = u[5];
    out[n + 8 * g + 4] = u[7], out[n + 8 * g + 5] = (unsigned)s[0], out[n + 8 * g + 6] = (unsigned)s[1], out[n + 8 * g + 7] = u[6];
    out64[n + 4 * g] = q[0], out64[n + 4 * g + 1] = q[2], out64[n + 4 * g + 2] = q[3], out64[n + 4 * g + 3] = q[4];
    outf[n + 2 * g] = fl[0], outf[n + 2 * g + 1] = fl[1];
  }
}
// DPP as rocPRIM-style scans write it (__builtin_amdgcn_update_dpp / mov_dpp): an inclusive
// prefix sum within each 16-lane row by row_shr:1/2/4/8 (clang-19 folds each into
// v_add_u32_dpp / v_add_nc_u32_dpp ... bound_ctrl:1), then row_mirror. Every target (DPP16 on
// gfx11/gfx12).
K void dppscan(const unsigned* in, unsigned* out, unsigned n) {
  const unsigned i = gid();
  unsigned x = i < n ? in[i] : 0u;
  x += (unsigned)__builtin_amdgcn_update_dpp(0, (int)x, 0x111, 0xF, 0xF, false);  // row_shr:1
  x += (unsigned)__builtin_amdgcn_update_dpp(0, (int)x, 0x112, 0xF, 0xF, false);  // row_shr:2
  x += (unsigned)__builtin_amdgcn_update_dpp(0, (int)x, 0x114, 0xF, 0xF, false);  // row_shr:4
  x += (unsigned)__builtin_amdgcn_update_dpp(0, (int)x, 0x118, 0xF, 0xF, false);  // row_shr:8
  const unsigned m = (unsigned)__builtin_amdgcn_mov_dpp((int)x, 0x140, 0xF, 0xF, true);  // row_mirror
  // The mirrored lane's id: past n it is inactive on AQL (reads 0) but launched on PM4 queues
  // (whole workgroups), so count it as 0 either way.
  const unsigned j = (i & ~15u) | (15u - (i & 15u));
  if (i < n) out[i] = x * 7u + (j < n ? m : 0u);
}
#if !defined(__gfx942__) && !defined(__gfx90a__)
// gfx10+ DPP: a butterfly row sum by row_xmask:1/2/4/8, row_share:5 (every lane reads lane 5 of
// its row) and DPP8 (__builtin_amdgcn_mov_dpp8: each group of 8 lanes reversed). bound_ctrl off:
// an inactive source leaves `old` (0) in place.
K void dppreduce(const unsigned* in, unsigned* out, unsigned n) {
  const unsigned i = gid();
  const unsigned v = i < n ? in[i] : 0u;
  unsigned x = v;
  x += (unsigned)__builtin_amdgcn_update_dpp(0, (int)x, 0x161, 0xF, 0xF, false);  // row_xmask:1
  x += (unsigned)__builtin_amdgcn_update_dpp(0, (int)x, 0x162, 0xF, 0xF, false);  // row_xmask:2
  x += (unsigned)__builtin_amdgcn_update_dpp(0, (int)x, 0x164, 0xF, 0xF, false);  // row_xmask:4
  x += (unsigned)__builtin_amdgcn_update_dpp(0, (int)x, 0x168, 0xF, 0xF, false);  // row_xmask:8
  const unsigned s = (unsigned)__builtin_amdgcn_update_dpp(0, (int)v, 0x155, 0xF, 0xF, false);  // row_share:5
  const unsigned r = (unsigned)__builtin_amdgcn_mov_dpp8((int)v, 07u | 06u << 3 | 05u << 6 | 04u << 9 | 03u << 12 | 02u << 15 | 01u << 18);
  if (i < n) out[i] = x * 3u + s * 5u + r;
}
#endif
// Recursion (metadata .uses_dynamic_stack: private_segment_fixed_size covers one frame): the
// runtime must size private memory as CLR does (runtime::dispatch_private_segment_size).
__attribute__((noinline, device)) unsigned rec(unsigned x, unsigned d) {
  volatile unsigned a[4] = {x, x * 3u, x ^ d, d};
  if (d == 0) return a[0] + a[3];
  return rec(a[1] + 1u, d - 1) * 5u + a[(x + d) & 3];
}
K void recurse(const unsigned* in, unsigned* out, unsigned n) {
  const unsigned i = gid();
  if (i < n) out[i] = rec(in[i], in[i] % 12u);
}
#if defined(__gfx942__) || defined(__gfx90a__)
// A matrix-core (MFMA) instruction, which the interpreter does not model: the dispatch must end
// with a queue error naming it (tests/runtime/isa_kernels.cpp).
typedef float mfma_f4 __attribute__((ext_vector_type(4)));
K void mfma(float* io) {
  const unsigned l = __builtin_amdgcn_workitem_id_x();
  mfma_f4 c = {io[l], io[l + 64], io[l + 128], io[l + 192]};
  c = __builtin_amdgcn_mfma_f32_4x4x1f32(io[l], io[l + 1], c, 0, 0, 0);
  io[l] = c[0] + c[1] + c[2] + c[3];
}
#endif
// The hidden (implicit) kernel arguments as the kernel reads them: the 256 bytes at
// __builtin_amdgcn_implicitarg_ptr() (code object v5: clang-19 then lists every hidden argument
// a HIP kernel may use, hidden_queue_ptr included), and two fields of the hsa_queue_t the hidden
// queue pointer points at (size at byte 24, features at byte 4; null on a PM4 queue).
K void implicit(unsigned* out) {
  const unsigned i = gid();
  if (__builtin_amdgcn_workgroup_id_y() != 0 || __builtin_amdgcn_workitem_id_y() != 0) return;
  const unsigned* ia = (const unsigned*)__builtin_amdgcn_implicitarg_ptr();
  if (i < 64) out[i] = ia[i];
  if (i == 0) {
    const unsigned* q = *(const unsigned* const*)(ia + 50);
    out[64] = q ? q[6] : 0xFFFFFFFFu;
    out[65] = q ? q[1] : 0xFFFFFFFFu;
  }
}
// Dynamic LDS (HIP's extern __shared__, sized by the dispatch): every word written and read back
// reversed across the workgroup, and the kernel's hidden_dynamic_lds_size (implicit byte 120).
extern __attribute__((shared)) unsigned dynlds_words[];
K void dynlds(unsigned* out, unsigned* lds_size, unsigned words) {
  const unsigned t = __builtin_amdgcn_workitem_id_x(), gs = __builtin_amdgcn_workgroup_size_x();
  for (unsigned k = t; k < words; k += gs) dynlds_words[k] = k * 3u + 1u;
  __builtin_amdgcn_s_barrier();
  unsigned s = 0;
  for (unsigned k = t; k < words; k += gs) s += dynlds_words[words - 1 - k] * (k + 1u);
  out[__builtin_amdgcn_workgroup_id_x() * gs + t] = s;
  if (t == 0) lds_size[__builtin_amdgcn_workgroup_id_x()] = ((const unsigned*)__builtin_amdgcn_implicitarg_ptr())[30];
}
// Spins until *flag is set, which nothing does: the per-dispatch instruction budget must end it.
K void spin(const volatile unsigned* flag, unsigned* out) {
  while (*flag == 0) {}
  out[gid()] = 1;
}
// A word llvm-mc-19 does not decode on any of the four targets ("invalid instruction encoding"
// for 0xBE80FF80: SOP1 opcode 0xFF): the dispatch must end naming it illegal, with its PC.
K void illegal(unsigned* out) {
  out[gid()] = 1;
  asm volatile(".long 0xBE80FF80");
}
// LDS through a generic (flat) pointer: the callee is not inlined, so it gets a flat address in
// the shared aperture (src_shared_base) and accesses LDS with flat_load/flat_store.
__attribute__((noinline, device)) void flat_bump(unsigned* p, unsigned v) { *p = *p * 3u + v; }
K void flatlds(const unsigned* in, unsigned* out, unsigned n) {
  __attribute__((shared)) unsigned s[64];
  const unsigned t = __builtin_amdgcn_workitem_id_x(), i = gid();
  s[t] = i < n ? in[i] : 0u;
  __builtin_amdgcn_s_barrier();
  flat_bump(&s[t ^ 1u], t ^ 1u);  // each word by its pair partner
  __builtin_amdgcn_s_barrier();
  if (i < n) out[i] = s[t];
}
