# SPDX-License-Identifier: MIT
"""PyTorch <-> accel through DLPack on cpu:0: shared memory both ways.
Exits 77 (skipped) without PyTorch. torch 1.13 calls __dlpack__() and
takes the legacy "dltensor" capsule."""
import gc
import sys
import unittest

try:
    import torch
    import torch.utils.dlpack
except ImportError:
    print("torch is not installed (Debian: python3-torch); skipped")
    sys.exit(77)

import accel


def check_tensor_freed_after_buffer(case, stream, make, ready=None):
    """Adopts a ones-filled tensor from make() (after ready(), which
    finishes torch's work), drops the only Python reference to it, then
    fills the buffer with 2 through `stream` and reads it back through
    DLPack: accel must keep the tensor's memory alive."""
    t = make()
    if ready is not None:
        ready()
    n = t.numel()
    w = accel.from_dlpack(t)
    del t
    gc.collect()
    stream.fill(w, 2.0)
    stream.synchronize()
    back = torch.from_dlpack(w)
    case.assertEqual(back.sum().item(), 2.0 * n)
    w.release()
    del back
    gc.collect()


class TorchFromAccel(unittest.TestCase):
    def setUp(self):
        self.dev = accel.device("cpu:0")
        self.s = self.dev.stream()

    def test_shares_memory_both_directions(self):
        b = self.dev.empty((2, 3), "float32")
        self.s.fill(b, 1.0)
        self.s.synchronize()
        t = torch.from_dlpack(b)
        self.assertEqual(tuple(t.shape), (2, 3))
        self.assertEqual(t.dtype, torch.float32)
        self.assertEqual(t.data_ptr(), b.address())
        t[1, 2] = 5.0  # a torch write is the buffer's
        self.s.scale(b, 2.0)  # and an accel write is the tensor's
        self.s.synchronize()
        self.assertEqual(t.tolist(), [[2.0, 2.0, 2.0], [2.0, 2.0, 10.0]])
        b.release()
        gc.collect()
        self.assertEqual(t.sum().item(), 20.0)  # the tensor keeps it

    def test_dtypes(self):
        for name, want in (("int32", torch.int32),
                           ("bfloat16", torch.bfloat16),
                           ("float16", torch.float16)):
            b = self.dev.empty(4, name)
            self.s.fill(b, 3)
            self.s.synchronize()
            t = torch.from_dlpack(b)
            self.assertEqual(t.dtype, want)
            self.assertEqual(t.tolist(), [3] * 4)

    def test_capsule_api(self):
        b = self.dev.empty(4, "float32")
        t = torch.utils.dlpack.from_dlpack(b.__dlpack__())
        self.assertEqual(t.data_ptr(), b.address())


class AccelFromTorch(unittest.TestCase):
    def setUp(self):
        self.dev = accel.device("cpu:0")
        self.s = self.dev.stream()

    def test_accel_op_writes_the_tensor(self):
        t = torch.arange(8, dtype=torch.float32)
        w = accel.from_dlpack(t)
        self.assertEqual(w.address(), t.data_ptr())
        self.s.axpy(w, w, 1.0)  # w = 2w
        self.s.synchronize()
        self.assertEqual(t.tolist(), [2.0 * i for i in range(8)])
        w.release()

    def test_bf16_and_gemm(self):
        a = torch.randn(4, 5)
        b = torch.randn(5, 3)
        c = torch.zeros(4, 3)
        wa, wb, wc = (accel.from_dlpack(v) for v in (a, b, c))
        self.s.gemm(wa, wb, wc, 4, 3, 5)
        self.s.synchronize()
        self.assertTrue(torch.allclose(c, a @ b, atol=1e-5))
        h = torch.zeros(6, dtype=torch.bfloat16)
        wh = accel.from_dlpack(h)
        self.assertEqual(wh.dtype, "bfloat16")
        self.s.fill(wh, 1.25)
        self.s.synchronize()
        self.assertEqual(h.tolist(), [1.25] * 6)

    def test_refuses_views(self):
        t = torch.arange(12, dtype=torch.float32).reshape(3, 4).t()
        with self.assertRaises(accel.AccelError) as cm:
            accel.from_dlpack(t)
        self.assertEqual(cm.exception.status, accel.Status.UNSUPPORTED)
        w = accel.from_dlpack(t.contiguous())
        w.release()

    def test_tensor_freed_after_buffer(self):
        check_tensor_freed_after_buffer(self, self.s,
                                        lambda: torch.ones(1 << 16))


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    sys.exit(0 if result.wasSuccessful() else 1)
