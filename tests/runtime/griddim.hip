// tests/runtime/griddim.hip — a kernel that reports the grid it was given through the code object
// v5 hidden arguments (hidden_block_count_x/y/z, the first three dwords after the explicit
// arguments, as ockl reads them): each workgroup writes (count_x | count_y << 8 | count_z << 16)
// at its linear index. Built by clang-19 at build time (tests/runtime/CMakeLists.txt) for the
// PM4 DISPATCH_INDIRECT test in gfx_on_emulator.cpp.
#define K extern "C" __attribute__((global))
typedef __attribute__((address_space(4))) const unsigned constant_u32;
K void griddim(unsigned* out) {
  constant_u32* hidden = (constant_u32*)__builtin_amdgcn_implicitarg_ptr();
  const unsigned nx = hidden[0], ny = hidden[1], nz = hidden[2];
  const unsigned bx = __builtin_amdgcn_workgroup_id_x(), by = __builtin_amdgcn_workgroup_id_y(),
                 bz = __builtin_amdgcn_workgroup_id_z();
  if (__builtin_amdgcn_workitem_id_x() == 0 && __builtin_amdgcn_workitem_id_y() == 0)
    out[(bz * ny + by) * nx + bx] = nx | ny << 8 | nz << 16;
}
