#!/usr/bin/env bash
# make-fixtures.sh OUTDIR — builds the code-object test fixtures with Debian's LLVM 19 at test time
# (CTest fixture code.fixtures). Modelled on shared/tools/make-code-objects.sh but smaller (a
# representative set of targets; a few seconds). Also writes the oracle outputs the tests compare
# against: llvm-readelf-19 dumps (*.readelf) and clang-offload-bundler-19 --list (*.list), and
# CCOB v1/v3 files written around a `zstd` CLI frame with the hash from `md5sum` (spec §5.3).
# The line below is read by tests/code/CMakeLists.txt (which registers skips when one is missing),
# by this script's own check and by the setup.coverage test (Debian packages: clang-19,
# clang-tools-19, llvm-19, lld-19, zstd, coreutils, xxd).
# programs: clang-19 clang-offload-bundler-19 llvm-readelf-19 llvm-objcopy-19 ld.lld-19 zstd md5sum xxd
set -euo pipefail
OUT=${1:?usage: make-fixtures.sh OUTDIR}
CLANG=${CLANG:-clang-19}
BUNDLER=${BUNDLER:-clang-offload-bundler-19}
READELF=${READELF:-llvm-readelf-19}
OBJCOPY=${OBJCOPY:-llvm-objcopy-19}
for t in $(sed -n 's/^# programs: //p' "$0"); do
  command -v "$t" >/dev/null || { echo "make-fixtures: missing tool $t (scripts/setup.sh installs it)" >&2; exit 1; }
done
# clang-offload-bundler runs `llvm-objcopy` (unversioned) from its own directory, else from PATH.
# Debian 12 has that name only in /usr/lib/llvm-19/bin (or from the unrelated `llvm` package, some
# other version): call the bundler by its real path so it finds LLVM 19's objcopy beside it.
BUNDLER=$(readlink -f "$(command -v "$BUNDLER")")
rm -rf "$OUT.tmp"
mkdir -p "$OUT.tmp"/{src,elf,bundle,ccob,host}
cd "$OUT.tmp"

cat > src/vadd.cl <<'K'
// Minimal OpenCL C kernels that need no device library (same text as shared/tools/make-code-objects.sh,
// so the spec's measured values for vadd-gfx1100 apply).
__kernel void vadd(__global const float *a, __global const float *b,
                   __global float *c, uint n) {
  uint lid = __builtin_amdgcn_workitem_id_x();
  uint gid = __builtin_amdgcn_workgroup_id_x();
  uint lsz = __builtin_amdgcn_workgroup_size_x();   /* reads implicit kernargs (COv5) */
  uint i = gid * lsz + lid;
  if (i < n) c[i] = a[i] + b[i];
}

__kernel void fill(__global int *out, int value) {
  out[__builtin_amdgcn_workitem_id_x()] = value;
}
K
cat > src/features.cl <<'K'
__kernel void lds_reverse(__global float *data) {
  __local float tile[256];
  uint l = __builtin_amdgcn_workitem_id_x();
  uint g = __builtin_amdgcn_workgroup_id_x() * 256 + l;
  tile[l] = data[g];
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
  __builtin_amdgcn_s_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
  data[g] = tile[255 - l];
}
__kernel void scratch_pick(__global int *out, __global const int *idx, int n) {
  volatile int tmp[128];
  for (int i = 0; i < 128; ++i) tmp[i] = i * n;
  uint l = __builtin_amdgcn_workitem_id_x();
  out[l] = tmp[idx[l] & 127];
}
__attribute__((reqd_work_group_size(64, 1, 1)))
__kernel void fixed_wg(__global long *out, long a, char b, short c, double d) {
  out[__builtin_amdgcn_workitem_id_x()] = a + b + c + (long)d;
}
K
cat > src/reloc.cl <<'K'
// Program-scope pointers: lld emits R_AMDGPU_RELATIVE64 (hidden symbols) or ABS64 (-fvisibility=default).
__global int counter = 5;
__global int other[4] = {1, 2, 3, 4};
__global int *__global table[2] = {&counter, &other[2]};
__kernel void bump(__global int *out) {
  uint l = __builtin_amdgcn_workitem_id_x();
  out[l] = *table[l & 1] + counter;
}
K
cat > src/cfill.c <<'K'
__attribute__((amdgpu_kernel)) void cfill(int *out, int v) { out[__builtin_amdgcn_workitem_id_x()] = v; }
K
cat > src/kern.hip <<'K'
#define __global__ __attribute__((global))
extern "C" __global__ void scale(float *x, float s, unsigned n) {
  unsigned i = __builtin_amdgcn_workgroup_id_x() * __builtin_amdgcn_workgroup_size_x() + __builtin_amdgcn_workitem_id_x();
  if (i < n) x[i] *= s;
}
template <typename T> __global__ void add_one(T *x) { x[__builtin_amdgcn_workitem_id_x()] += T(1); }
template __global__ void add_one<int>(int *);
K
cat > src/kern-host.hip <<'K'
struct dim3 { unsigned x, y, z; };
typedef struct ihipStream_t *hipStream_t;
extern "C" int hipLaunchKernel(const void *, dim3, dim3, void **, unsigned long, hipStream_t);
extern "C" int __hipPopCallConfiguration(dim3 *, dim3 *, unsigned long *, hipStream_t *);
#include "kern.hip"
K

CL=(-target amdgcn-amd-amdhsa -nogpulib -x cl -cl-std=CL2.0 -O2)
# Compiles run in the background, at most JOBS at once (default: the number of CPUs).
JOBS=${JOBS:-$(nproc)}
pids=()
throttle() { if ((${#pids[@]} >= JOBS)); then wait "${pids[0]}"; pids=("${pids[@]:1}"); fi; }
co() { "$CLANG" "${CL[@]}" "$@" 2>/dev/null & pids+=($!); throttle; }
waitall() { for p in "${pids[@]}"; do wait "$p"; done; pids=(); }
# processors (default features, v5)
for cpu in gfx900 gfx902 gfx906 gfx908 gfx90a gfx942 gfx1010 gfx1012 gfx1030 gfx1031 gfx1100 gfx1101 gfx1102 gfx1103 gfx1151 gfx1200; do
  co -mcpu=$cpu src/vadd.cl -o elf/vadd-$cpu.hsaco
done
waitall
# target-ID features
for tid in gfx900:xnack+ gfx900:xnack- gfx906:sramecc+ gfx906:sramecc- gfx90a:xnack+ gfx90a:xnack- gfx90a:sramecc+:xnack- \
           gfx942:sramecc-:xnack- gfx1010:xnack+; do
  co -mcpu=$tid src/vadd.cl -o elf/vadd-$(echo "$tid" | tr ':+' '_p').hsaco
done
# code object versions
for v in 4 6; do for cpu in gfx90a gfx1100; do co -mcpu=$cpu -mcode-object-version=$v src/vadd.cl -o elf/vadd-$cpu-cov$v.hsaco; done; done
waitall
# generic targets (v6 only)
for cpu in gfx9-generic gfx9-generic:xnack+ gfx10-1-generic gfx10-3-generic gfx11-generic gfx12-generic; do
  co -mcpu=$cpu -mcode-object-version=6 src/vadd.cl -o elf/vadd-$(echo "$cpu" | tr ':+' '_p').hsaco
done
co -mcpu=gfx1100 -mwavefrontsize64 src/vadd.cl -o elf/vadd-gfx1100-w64.hsaco
co -mcpu=gfx1100 src/features.cl -o elf/features-gfx1100.hsaco
co -mcpu=gfx90a src/features.cl -o elf/features-gfx90a.hsaco
co -mcpu=gfx942 -mllvm -amdgpu-kernarg-preload-count=4 src/vadd.cl -o elf/vadd-gfx942-preload.hsaco
co -mcpu=gfx1100 -c src/vadd.cl -o elf/vadd-gfx1100.o
co -mcpu=gfx1100 src/reloc.cl -o elf/reloc-gfx1100.hsaco
co -mcpu=gfx90a -fvisibility=default src/reloc.cl -o elf/reloc-abs64-gfx90a.hsaco
"$CLANG" -target amdgcn-amd-amdhsa -mcpu=gfx1100 -nogpulib -O2 -x c src/cfill.c -o elf/cfill-hidden-gfx1100.hsaco &
pids+=($!); throttle
waitall

# HIP driver output (device-only bundles, CCOB) and host objects with .hip_fatbin
HIP=(-x hip -nogpulib -nogpuinc --cuda-device-only -O2 -cuid=aqf)
"$CLANG" "${HIP[@]}" --offload-arch=gfx1030 --offload-arch=gfx1100 src/kern.hip -o bundle/hip-gfx1030-gfx1100.hipfb & pids+=($!); throttle
"$CLANG" "${HIP[@]}" --offload-compress --offload-arch=gfx1030 --offload-arch=gfx1100 src/kern.hip -o ccob/hip-gfx1030-gfx1100.hipfb & pids+=($!); throttle
(cd src && "$CLANG" -x hip -nogpulib -nogpuinc -O2 -cuid=aqf -c --offload-arch=gfx1030 --offload-arch=gfx1100 kern-host.hip -o ../host/kern-host.o) & pids+=($!); throttle
(cd src && "$CLANG" -x hip -nogpulib -nogpuinc -O2 -cuid=aqf -c --offload-compress --offload-arch=gfx1030 --offload-arch=gfx1100 \
  kern-host.hip -o ../host/kern-host-compressed.o) & pids+=($!); throttle
waitall
"$OBJCOPY" --dump-section .hip_fatbin=host/kern-host.hip_fatbin host/kern-host.o

le() { printf "%0$(($2 * 2))x" "$1" | fold -w2 | tac | tr -d '\n'; }  # little-endian hex of $1 in $2 bytes

# clang-offload-bundler (type=bc when there is no host entry: type=o segfaults in clang 19)
D=hipv4-amdgcn-amd-amdhsa-
HOST=host-x86_64-unknown-linux-gnu
"$BUNDLER" --type=bc --targets=$D-gfx1030,$D-gfx1100,$D-gfx90a:xnack- \
  --input=elf/vadd-gfx1030.hsaco --input=elf/vadd-gfx1100.hsaco --input=elf/vadd-gfx90a_xnack-.hsaco --output=bundle/nohost-align1.co
"$BUNDLER" --type=o --bundle-align=4096 --targets=$HOST,$D-gfx1030,$D-gfx1100,$D-gfx90a:xnack- \
  --input=/dev/null --input=elf/vadd-gfx1030.hsaco --input=elf/vadd-gfx1100.hsaco --input=elf/vadd-gfx90a_xnack-.hsaco \
  --output=bundle/host-align4096.co
"$BUNDLER" --type=o --bundle-align=4096 --targets=$HOST,$D-gfx10-3-generic,$D-gfx11-generic,$D-gfx1100,$D-gfx9-generic:xnack+ \
  --input=/dev/null --input=elf/vadd-gfx10-3-generic.hsaco --input=elf/vadd-gfx11-generic.hsaco \
  --input=elf/vadd-gfx1100.hsaco --input=elf/vadd-gfx9-generic_xnackp.hsaco --output=bundle/generic.co
# a "many targets" bundle for selection: families, features, gfx11 variants
"$BUNDLER" --type=bc \
  --targets=$D-gfx900,$D-gfx906:sramecc+,$D-gfx90a:xnack+,$D-gfx90a:sramecc+:xnack-,$D-gfx942:sramecc-:xnack-,$D-gfx1010,$D-gfx1030,$D-gfx1100,$D-gfx1102,$D-gfx1200 \
  --input=elf/vadd-gfx900.hsaco --input=elf/vadd-gfx906_srameccp.hsaco --input=elf/vadd-gfx90a_xnackp.hsaco \
  --input=elf/vadd-gfx90a_srameccp_xnack-.hsaco --input=elf/vadd-gfx942_sramecc-_xnack-.hsaco \
  --input=elf/vadd-gfx1010.hsaco --input=elf/vadd-gfx1030.hsaco --input=elf/vadd-gfx1100.hsaco --input=elf/vadd-gfx1102.hsaco \
  --input=elf/vadd-gfx1200.hsaco --output=bundle/many.co
"$BUNDLER" --type=o --targets=$HOST,openmp-amdgcn-amd-amdhsa--gfx1100 --input=/dev/null --input=elf/vadd-gfx1100.hsaco \
  --output=bundle/openmp-gfx1100.co
"$BUNDLER" --type=o --bundle-align=4096 --targets=$HOST,$D-gfx1030,$D-gfx1100,$D-gfx90a:xnack- \
  --input=/dev/null --input=elf/vadd-gfx1030.hsaco --input=elf/vadd-gfx1100.hsaco --input=elf/vadd-gfx90a_xnack-.hsaco \
  --output=ccob/host-align4096.co --compress
"$BUNDLER" --type=bc --targets=$D-gfx900,$D-gfx1030,$D-gfx1100 --compress --compression-level=19 \
  --input=elf/vadd-gfx900.hsaco --input=elf/vadd-gfx1030.hsaco --input=elf/vadd-gfx1100.hsaco --output=ccob/nohost-l19.co

# Two entries the bundler refuses to combine ("conflicting targets"): gfx90a (any) before
# gfx90a:sramecc+:xnack-. Written by hand in the documented layout (spec §5.1), to test that the
# pinned entry is preferred (Comgr 5.2.3 takes the first compatible one).
a=elf/vadd-gfx90a.hsaco; b=elf/vadd-gfx90a_srameccp_xnack-.hsaco
ida=${D}-gfx90a; idb=${D}-gfx90a:sramecc+:xnack-
hdr=$((24 + 8 + 24 * 2 + ${#ida} + ${#idb}))
sa=$(stat -c %s $a); sb=$(stat -c %s $b)
{ printf '__CLANG_OFFLOAD_BUNDLE__'
  echo "$(le 2 8)$(le $hdr 8)$(le $sa 8)$(le ${#ida} 8)" | xxd -r -p; printf '%s' "$ida"
  echo "$(le $((hdr + sa)) 8)$(le $sb 8)$(le ${#idb} 8)" | xxd -r -p; printf '%s' "$idb"
  cat $a $b; } > bundle/handmade-any-then-pinned.co

# CCOB v1 and v3 around a zstd CLI frame of bundle/host-align4096.co; hash = md5sum's first 8 bytes
payload=bundle/host-align4096.co
usize=$(stat -c %s $payload)
hash=$(md5sum < $payload | cut -c1-16)
zstd -q -c -19 < $payload > ccob/payload.zst
csize=$(stat -c %s ccob/payload.zst)
{ printf 'CCOB' ; echo "$(le 1 2)$(le 1 2)$(le "$usize" 4)$hash" | xxd -r -p; cat ccob/payload.zst; } > ccob/v1-zstd.co
{ printf 'CCOB' ; echo "$(le 3 2)$(le 1 2)$(le $((32 + csize)) 8)$(le "$usize" 8)$hash" | xxd -r -p; cat ccob/payload.zst; } > ccob/v3-zstd.co
echo "$hash" > ccob/payload.md5

# oracle outputs
for f in elf/*.hsaco elf/*.o; do "$READELF" -h -S -l -r --dyn-syms --symbols --notes "$f" > "$f.readelf" 2>&1; done
for f in bundle/*.co bundle/*.hipfb ccob/*.co ccob/*.hipfb; do
  "$BUNDLER" --list --type=o --input="$f" > "$f.list" 2>&1 || echo "LIST FAILED" >> "$f.list"
done
cd / && rm -rf "$OUT" && mv "$OUT.tmp" "$OUT"
echo "make-fixtures: $(find "$OUT" -type f | wc -l) files in $OUT"
