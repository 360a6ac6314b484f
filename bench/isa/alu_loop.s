// bench/isa/alu_loop.s — an arithmetic loop for the interpreter's speed (bench_isa): 8 VALU
// operations and 3 scalar loop-control instructions per iteration, 20,000 iterations.
  s_mov_b32 s2, 20000
.Lloop:
  v_fma_f32 v1, v1, v2, v3
  v_mul_f32 v2, v2, v1
  v_add_f32 v3, v3, v2
  v_add_nc_u32 v4, v4, v5
  v_xor_b32 v5, v5, v4
  v_lshlrev_b32 v6, 3, v4
  v_fmac_f32 v7, v1, v2
  v_max_f32 v8, v7, v3
  s_add_u32 s2, s2, -1
  s_cmp_lg_u32 s2, 0
  s_cbranch_scc1 .Lloop
  s_endpgm
