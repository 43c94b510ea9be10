# SPDX-License-Identifier: MIT
"""NumPy <-> accel through DLPack on cpu:0: shared memory both ways.
Exits 77 (skipped) without NumPy. NumPy 1.x calls __dlpack__(stream=None)
and takes the legacy "dltensor" capsule; the arrays it makes from DLPack
are read-only, so the shared-memory writes go through accel."""
import gc
import sys
import unittest

try:
    import numpy as np
except ImportError:
    print("numpy is not installed (Debian: python3-numpy); skipped")
    sys.exit(77)
if not hasattr(np, "from_dlpack"):
    print(f"numpy {np.__version__} has no from_dlpack; skipped")
    sys.exit(77)

import accel


class NumpyFromAccel(unittest.TestCase):
    def setUp(self):
        self.dev = accel.device("cpu:0")
        self.s = self.dev.stream()

    def test_shares_memory(self):
        b = self.dev.empty((3, 4), "float32")
        self.s.fill(b, 1.5)
        self.s.synchronize()
        a = np.from_dlpack(b)
        self.assertEqual(a.shape, (3, 4))
        self.assertEqual(a.dtype, np.float32)
        self.assertTrue((a == 1.5).all())
        self.assertEqual(a.ctypes.data, b.address())
        # An accel write is seen by NumPy, without a copy.
        self.s.scale(b, 2.0)
        self.s.synchronize()
        self.assertTrue((a == 3.0).all())
        b.write(np.float32([7.0]).tobytes(), 4 * 5)
        self.assertEqual(a[1, 1], 7.0)

    def test_array_keeps_the_buffer(self):
        b = self.dev.empty(6, "int32")
        b.write(np.arange(6, dtype=np.int32).tobytes())
        a = np.from_dlpack(b)
        b.release()  # the array's DLPack tensor holds its own reference
        gc.collect()
        self.assertEqual(a.tolist(), list(range(6)))
        del a
        gc.collect()

    def test_views_and_dtypes(self):
        b = self.dev.empty(8, "float32")
        self.s.fill(b, 4.0)
        self.s.synchronize()
        tail = np.from_dlpack(b.view("float32", (2, 2), offset=16))
        self.assertEqual(tail.shape, (2, 2))
        self.assertEqual(tail.ctypes.data, b.address(16))
        h = self.dev.empty(4, "float16")
        self.s.fill(h, 0.5)
        self.s.synchronize()
        self.assertEqual(np.from_dlpack(h).dtype, np.float16)
        self.assertTrue((np.from_dlpack(h) == 0.5).all())


class AccelFromNumpy(unittest.TestCase):
    def setUp(self):
        self.dev = accel.device("cpu:0")
        self.s = self.dev.stream()

    def test_accel_op_writes_the_array(self):
        x = np.arange(10, dtype=np.float32)
        w = accel.from_dlpack(x)
        self.assertEqual((w.dtype, w.shape), ("float32", (10,)))
        self.assertEqual(w.address(), x.ctypes.data)
        self.s.scale(w, 3.0)
        self.s.synchronize()
        self.assertEqual(x.tolist(), [3.0 * i for i in range(10)])
        x[0] = 100.0  # and NumPy's writes are the buffer's bytes
        self.assertEqual(np.frombuffer(w.read(4), np.float32)[0], 100.0)
        w.release()

    def test_gemm_on_numpy_memory(self):
        a = np.arange(6, dtype=np.float32).reshape(2, 3)
        b = np.ones((3, 2), dtype=np.float32)
        c = np.zeros((2, 2), dtype=np.float32)
        wa, wb, wc = (accel.from_dlpack(v) for v in (a, b, c))
        self.s.gemm(wa, wb, wc, 2, 2, 3)
        self.s.synchronize()
        np.testing.assert_array_equal(c, a @ b)

    def test_array_outlives_python_reference(self):
        x = np.zeros(4, dtype=np.int32)
        w = accel.from_dlpack(x)
        ref = sys.getrefcount(x)
        del x  # the DLPack tensor keeps the array alive
        gc.collect()
        self.s.fill(w, 9)
        self.s.synchronize()
        self.assertEqual(np.frombuffer(w.read(), np.int32).tolist(), [9] * 4)
        self.assertGreater(ref, 2)
        w.release()

    def test_refused_inputs(self):
        strided = np.arange(16, dtype=np.float32)[::2]
        with self.assertRaises(accel.AccelError) as cm:
            accel.from_dlpack(strided)
        self.assertEqual(cm.exception.status, accel.Status.UNSUPPORTED)
        self.assertIn("not compact", cm.exception.message)
        with self.assertRaises(accel.AccelError) as cm:
            accel.from_dlpack(np.zeros(4, dtype=np.complex64))
        self.assertIn("unsupported dtype", cm.exception.message)
        # Other dtypes come in as raw bytes.
        w = accel.from_dlpack(np.zeros(3, dtype=np.float64))
        self.assertEqual((w.dtype, w.size), (None, 24))
        w.release()

    def test_round_trip(self):
        x = np.arange(5, dtype=np.float32)
        w = accel.from_dlpack(x)
        y = np.from_dlpack(w)
        self.assertEqual(y.ctypes.data, x.ctypes.data)
        w.release()
        x[2] = 42.0
        self.assertEqual(y[2], 42.0)


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    sys.exit(0 if result.wasSuccessful() else 1)
