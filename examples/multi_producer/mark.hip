// examples/multi_producer/mark.hip — the kernel multi_producer dispatches with --gfx, built by
// clang-19 for each processor in examples/multi_producer/CMakeLists.txt (no HIP headers needed):
// cells[index] = value, by the first work-item.
extern "C" __attribute__((global)) void mark(unsigned* cells, unsigned index, unsigned value) {
  if (__builtin_amdgcn_workitem_id_x() == 0) cells[index] = value;
}
