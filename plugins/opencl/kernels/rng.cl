// SPDX-License-Identifier: MIT
//
// op_rng (plugin.h, ABI 1.3): counter-based random fills. Appended to the
// built-in program after <accel/philox.h> (see CMakeLists.txt), whose
// element code it runs, so the bytes equal every other backend's. Each
// work item writes whole Philox blocks (four elements), grid-stride.
// `first` is the element index of dst[0] within the buffer (the byte
// offset divided by the element size), so no sub-buffer is needed.

__kernel void accel_rng(__global uchar* dst, ulong first, ulong count,
                        uint distribution, uint dtype, ulong seed,
                        ulong offset, float a, float b) {
  ulong blocks = (count + 3) / 4;
  for (ulong k = get_global_id(0); k < blocks; k += get_global_size(0)) {
    accel_philox_block_t block = accel_philox_at(seed, offset, k);
    for (uint j = 0; j < 4u && k * 4 + j < count; j++) {
      uint v = accel_philox_element(block, j, distribution, dtype, a, b);
      ulong i = first + k * 4 + j;
      if (dtype == ACCEL_PHILOX_F16 || dtype == ACCEL_PHILOX_BF16) {
        ((__global ushort*)dst)[i] = (ushort)v;
      } else {
        ((__global uint*)dst)[i] = v;
      }
    }
  }
}
