# SPDX-License-Identifier: MIT
"""PyTorch <-> accel through DLPack on cuda:0: device memory shared both
ways, with each side's work finished before the other reads. Exits 77
(skipped) without PyTorch, without a CUDA build of it that sees a GPU, or
without an accel cuda:0 (the plugin, the driver, a device)."""
import gc
import sys
import unittest

try:
    import torch
    import torch.utils.dlpack
except ImportError:
    print("torch is not installed; skipped")
    sys.exit(77)

if not torch.cuda.is_available():
    print("this PyTorch sees no CUDA GPU; skipped")
    sys.exit(77)

import accel
from test_torch import check_tensor_freed_after_buffer

try:
    DEV = accel.device("cuda:0")
except accel.AccelError as e:
    print(f"accel has no cuda:0 ({e}); skipped")
    sys.exit(77)


class TorchFromAccel(unittest.TestCase):
    def setUp(self):
        self.s = DEV.stream()

    def test_device_and_address(self):
        b = DEV.empty((3, 5), "float32")
        self.assertEqual(b.__dlpack_device__()[0], 2)  # kDLCUDA
        self.s.fill(b, 1.5)
        self.s.synchronize()
        t = torch.from_dlpack(b)
        self.assertEqual(t.device.type, "cuda")
        self.assertEqual(t.device.index, 0)
        self.assertEqual(t.data_ptr(), b.address())
        self.assertEqual(tuple(t.shape), (3, 5))
        self.assertEqual(t.sum().item(), 1.5 * 15)
        t[2, 4] = 7.0  # a torch write is the buffer's...
        torch.cuda.synchronize()
        self.s.scale(b, 2.0)  # ...and an accel write is the tensor's
        self.s.synchronize()
        self.assertEqual(t[2, 4].item(), 14.0)
        self.assertEqual(t[0, 0].item(), 3.0)
        b.release()
        gc.collect()
        self.assertEqual(t.sum().item(), 3.0 * 14 + 14.0)  # kept alive

    def test_dtypes(self):
        for name, want in (("float16", torch.float16),
                           ("bfloat16", torch.bfloat16),
                           ("int32", torch.int32)):
            b = DEV.empty(8, name)
            self.s.fill(b, 3)
            self.s.synchronize()
            t = torch.from_dlpack(b)
            self.assertEqual(t.dtype, want)
            self.assertEqual(t.cpu().tolist(), [3] * 8)


class AccelFromTorch(unittest.TestCase):
    def setUp(self):
        self.s = DEV.stream()

    def test_accel_op_writes_the_tensor(self):
        t = torch.arange(1024, dtype=torch.float32, device="cuda")
        torch.cuda.synchronize()
        w = accel.from_dlpack(t)
        self.assertEqual(w.address(), t.data_ptr())
        self.assertEqual(w.device.uri, "cuda:0")
        self.s.axpy(w, w, 1.0)  # w = 2w
        self.s.synchronize()
        self.assertTrue(torch.equal(
            t, 2 * torch.arange(1024, dtype=torch.float32, device="cuda")))
        w.release()

    def test_gemm_matches_torch(self):
        torch.manual_seed(1)
        a = torch.randn(64, 48, device="cuda")
        b = torch.randn(48, 32, device="cuda")
        c = torch.zeros(64, 32, device="cuda")
        torch.cuda.synchronize()
        wa, wb, wc = (accel.from_dlpack(v) for v in (a, b, c))
        self.s.gemm(wa, wb, wc, 64, 32, 48)
        self.s.synchronize()
        # Both sides in full f32 (no TF32): accel's default, and torch's
        # float64 product is the reference.
        want = (a.double() @ b.double()).float()
        self.assertTrue(torch.allclose(c, want, rtol=1e-5, atol=1e-4),
                        (c - want).abs().max().item())
        for w in (wa, wb, wc):
            w.release()

    def test_tensor_freed_after_buffer(self):
        check_tensor_freed_after_buffer(
            self, self.s, lambda: torch.ones(1 << 20, device="cuda"),
            torch.cuda.synchronize)


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    sys.exit(0 if result.wasSuccessful() else 1)
