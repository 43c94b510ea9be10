// SPDX-License-Identifier: MIT
//
// The OpenCL plugin's own GEMM (gemm.c): row-major
// C[m x n] = alpha * op(A) * op(B) + beta * C for f32, f16 and bf16 inputs
// with f32 accumulation, and C of the input dtype or f32. Used for bf16,
// for f16 without CLBlast's cl_khr_fp16, when CLBlast is missing or fails,
// and with ACCEL_OPENCL_GEMM=kernel. Appended to ops.cl in one program, so
// it reuses its conversions (accel_load, accel_store).
//
// A work-group of GEMM_WG x GEMM_WG items computes a GEMM_T x GEMM_T tile
// of C (GEMM_T = 4 * GEMM_WG), each item a 4 x 4 block of it, strided by
// GEMM_WG so that neighbouring items touch neighbouring elements. Tiles of
// op(A) (GEMM_T x GEMM_WG) and op(B) (GEMM_WG x GEMM_T) are staged in
// local memory, k-major, each item loading 4 elements of each. Every
// output adds its k products in order. With beta == 0, C is never read,
// so a NaN there cannot leak into the result. The third dimension of the
// grid is the batch of a strided-batched GEMM (ABI 1.4): group z computes
// member z, whose A, B and C start `a_stride`, `b_stride` and `c_stride`
// elements after member z - 1's (1 and zeros for a single GEMM).
// ACCEL_GEMM_TS (GEMM_WG)
// comes from the build options (ops.c: 16, or 8 on devices whose
// work-groups are smaller than 256).
#ifndef ACCEL_GEMM_TS
#define ACCEL_GEMM_TS 16
#endif
#define GEMM_WG ACCEL_GEMM_TS
#define GEMM_R 4
#define GEMM_T (GEMM_WG * GEMM_R)

// Offsets and leading dimensions in elements. Item (lc, lr) computes
// C[row0 + lr + i * GEMM_WG][col0 + lc + j * GEMM_WG] for i, j < GEMM_R.
kernel __attribute__((reqd_work_group_size(GEMM_WG, GEMM_WG, 1))) void
accel_gemm(
    ulong m, ulong n, ulong k, global const uchar* a, ulong a_off, ulong lda,
    uint trans_a, global const uchar* b, ulong b_off, ulong ldb, uint trans_b,
    global uchar* c, ulong c_off, ulong ldc, uint ab_dtype, uint c_dtype,
    float alpha, float beta, uint beta_zero, ulong a_stride, ulong b_stride,
    ulong c_stride) {
  local float at[GEMM_WG][GEMM_T + 1];  // [k][row]
  local float bt[GEMM_WG][GEMM_T + 1];  // [k][col]
  uint lc = (uint)get_local_id(0);
  uint lr = (uint)get_local_id(1);
  uint tid = lr * GEMM_WG + lc;
  ulong row0 = get_group_id(1) * GEMM_T;
  ulong col0 = get_group_id(0) * GEMM_T;
  ulong member = get_group_id(2);
  a_off += member * a_stride;
  b_off += member * b_stride;
  c_off += member * c_stride;
  float acc[GEMM_R][GEMM_R];
  for (uint i = 0; i < GEMM_R; i++) {
    for (uint j = 0; j < GEMM_R; j++) acc[i][j] = 0.0f;
  }
  for (ulong t = 0; t < k; t += GEMM_WG) {
    for (uint q = 0; q < GEMM_R; q++) {
      uint e = tid + q * GEMM_WG * GEMM_WG;
      uint am = e / GEMM_WG, ak = e % GEMM_WG;  // A: consecutive items along k
      ulong ra = row0 + am, ka = t + ak;
      float va = 0.0f;
      if (ra < m && ka < k) {
        va = accel_load(a, ab_dtype,
                        a_off + (trans_a ? ka * lda + ra : ra * lda + ka));
      }
      at[ak][am] = va;
      uint bk = e / GEMM_T, bn = e % GEMM_T;  // B: consecutive items along n
      ulong kb = t + bk, cb = col0 + bn;
      float vb = 0.0f;
      if (kb < k && cb < n) {
        vb = accel_load(b, ab_dtype,
                        b_off + (trans_b ? cb * ldb + kb : kb * ldb + cb));
      }
      bt[bk][bn] = vb;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint q = 0; q < GEMM_WG; q++) {
      float av[GEMM_R], bv[GEMM_R];
      for (uint i = 0; i < GEMM_R; i++) av[i] = at[q][lr + i * GEMM_WG];
      for (uint j = 0; j < GEMM_R; j++) bv[j] = bt[q][lc + j * GEMM_WG];
      for (uint i = 0; i < GEMM_R; i++) {
        for (uint j = 0; j < GEMM_R; j++) acc[i][j] += av[i] * bv[j];
      }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  for (uint i = 0; i < GEMM_R; i++) {
    ulong row = row0 + lr + i * GEMM_WG;
    for (uint j = 0; j < GEMM_R; j++) {
      ulong col = col0 + lc + j * GEMM_WG;
      if (row >= m || col >= n) continue;
      ulong idx = c_off + row * ldc + col;
      float r = alpha * acc[i][j];
      if (beta_zero == 0u) r += beta * accel_load(c, c_dtype, idx);
      accel_store(c, c_dtype, idx, r);
    }
  }
}
