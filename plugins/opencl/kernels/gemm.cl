// SPDX-License-Identifier: MIT
//
// The OpenCL plugin's own GEMM (gemm.c): row-major
// C[m x n] = alpha * op(A) * op(B) + beta * C for f32, f16 and bf16 inputs
// with f32 accumulation, and C of the input dtype or f32. Used for bf16,
// for f16 without CLBlast's cl_khr_fp16, when CLBlast is missing or fails,
// and with ACCEL_OPENCL_GEMM=kernel. Appended to ops.cl in one program, so
// it reuses its conversions (accel_load, accel_store).
//
// Each work-group computes one ACCEL_GEMM_TS x ACCEL_GEMM_TS tile of C,
// staging tiles of op(A) and op(B) in local memory. With beta == 0, C is
// never read, so a NaN there cannot leak into the result.
// ACCEL_GEMM_TS comes from the build options (ops.c: 16, or 8 on devices
// whose work-groups are smaller than 256).
#ifndef ACCEL_GEMM_TS
#define ACCEL_GEMM_TS 16
#endif
#define TS ACCEL_GEMM_TS

// Offsets and leading dimensions in elements. Work-item (c, r) of the
// group computes C[group_r * TS + r][group_c * TS + c].
kernel __attribute__((reqd_work_group_size(TS, TS, 1))) void accel_gemm(
    ulong m, ulong n, ulong k, global const uchar* a, ulong a_off, ulong lda,
    uint trans_a, global const uchar* b, ulong b_off, ulong ldb, uint trans_b,
    global uchar* c, ulong c_off, ulong ldc, uint ab_dtype, uint c_dtype,
    float alpha, float beta, uint beta_zero) {
  local float at[TS][TS + 1];
  local float bt[TS][TS + 1];
  uint lc = (uint)get_local_id(0);
  uint lr = (uint)get_local_id(1);
  ulong row = get_group_id(1) * TS + lr;
  ulong col = get_group_id(0) * TS + lc;
  float acc = 0.0f;
  for (ulong t = 0; t < k; t += TS) {
    ulong ka = t + lc;  // A tile element (row, ka)
    float va = 0.0f;
    if (row < m && ka < k) {
      ulong i = trans_a ? ka * lda + row : row * lda + ka;
      va = accel_load(a, ab_dtype, a_off + i);
    }
    ulong kb = t + lr;  // B tile element (kb, col)
    float vb = 0.0f;
    if (kb < k && col < n) {
      ulong i = trans_b ? col * ldb + kb : kb * ldb + col;
      vb = accel_load(b, ab_dtype, b_off + i);
    }
    at[lr][lc] = va;
    bt[lr][lc] = vb;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint q = 0; q < TS; q++) acc += at[lr][q] * bt[q][lc];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (row < m && col < n) {
    ulong i = c_off + row * ldc + col;
    float r = alpha * acc;
    if (beta_zero == 0u) r += beta * accel_load(c, c_dtype, i);
    accel_store(c, c_dtype, i, r);
  }
}
