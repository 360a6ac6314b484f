// The shader copy's kernels for real GPUs (include/aqueduct/runtime/shader_copy.hpp): the same
// arguments and the same work as the emulator's host kernels of that header.
//   aqueduct_copy_bytes   {dst, src, bytes, chunk}   workgroup i copies [i*chunk, min((i+1)*chunk, bytes))
//   aqueduct_fill_dwords  {dst, bytes, chunk, value} workgroup i stores `value` in every dword of
//                                                    the same range (dst, bytes, chunk dword multiples)
// 64 work-items per workgroup (runtime::shader_copy_block). Built for every shipped target by
// scripts/gen-shader-copy-code.sh into include/aqueduct/runtime/detail/shader_copy_code.hpp; no
// device library, only clang builtins. Ranges never overlap (the runtime refuses that first).
#define BLOCK 64

__kernel void aqueduct_copy_bytes(__global uchar* dst, __global const uchar* src, ulong bytes, ulong chunk) {
  const ulong off = (ulong)__builtin_amdgcn_workgroup_id_x() * chunk;
  if (off >= bytes) return;
  const ulong n = chunk < bytes - off ? chunk : bytes - off;
  const uint lane = __builtin_amdgcn_workitem_id_x();
  __global uchar* d = dst + off;
  __global const uchar* s = src + off;
  ulong done = 0;
  if ((((ulong)d | (ulong)s) & 15) == 0) {  // both 16-byte aligned: 16 bytes per work-item and step
    const ulong n16 = n >> 4;
    for (ulong k = lane; k < n16; k += BLOCK) ((__global uint4*)d)[k] = ((__global const uint4*)s)[k];
    done = n16 << 4;
  }
  for (ulong k = done + lane; k < n; k += BLOCK) d[k] = s[k];  // the rest (or all of it, unaligned) byte by byte
}

__kernel void aqueduct_fill_dwords(__global uint* dst, ulong bytes, ulong chunk, uint value) {
  const ulong off = (ulong)__builtin_amdgcn_workgroup_id_x() * chunk;
  if (off >= bytes) return;
  const ulong n = (chunk < bytes - off ? chunk : bytes - off) >> 2;  // dwords
  const uint lane = __builtin_amdgcn_workitem_id_x();
  __global uint* d = dst + (off >> 2);
  ulong done = 0;
  if (((ulong)d & 15) == 0) {  // 16-byte aligned: four dwords per work-item and step
    const uint4 v = (uint4)(value);
    const ulong n4 = n >> 2;
    for (ulong k = lane; k < n4; k += BLOCK) ((__global uint4*)d)[k] = v;
    done = n4 << 2;
  }
  for (ulong k = done + lane; k < n; k += BLOCK) d[k] = value;
}
