# SPDX-License-Identifier: MIT
"""The accel Python package on this build's CPU plugin, without NumPy or
PyTorch: every function the package exposes. Run by CTest (python_package)
with PYTHONPATH, ACCEL_LIBRARY, ACCEL_CPU_DEVICES=2 and
ACCEL_TEST_PY_KERNELS set."""
import array
import ctypes
import gc
import math
import os
import struct
import sys
import unittest

import accel


def floats(buf, count, offset=0):
    return list(struct.unpack(f"{count}f", buf.read(4 * count, offset)))


class Library(unittest.TestCase):
    def test_version_and_path(self):
        self.assertRegex(accel.version(), r"^\d+\.\d+\.\d+")
        self.assertTrue(os.path.exists(accel.library_path))

    def test_plugin_report(self):
        report = accel.plugin_report()
        cpu = [p for p in report if p["name"] == "cpu"]
        self.assertEqual(len(cpu), 1)
        self.assertEqual(cpu[0]["status"], accel.Status.OK)
        self.assertEqual(cpu[0]["status_name"], "ACCEL_OK")
        self.assertEqual(cpu[0]["stage"], "initialised")
        self.assertEqual(cpu[0]["device_count"], 2)
        self.assertEqual(cpu[0]["abi_version"], 1)
        self.assertGreaterEqual(cpu[0]["abi_minor"], 3)

    def test_devices_and_info_text(self):
        uris = []
        for d in accel.devices():
            uris.append(d.uri)
            d.close()
        self.assertIn("cpu:0", uris)
        self.assertIn("cpu:1", uris)
        text = accel.info_text()
        self.assertIn("cpu:1", text)
        self.assertIn("plugins:", text)

    def test_errors(self):
        with self.assertRaises(accel.AccelError) as cm:
            accel.device("nope:0")
        e = cm.exception
        self.assertEqual(e.status, accel.Status.NOT_FOUND)
        self.assertEqual(int(e.status), 4)
        self.assertEqual(e.status_name, "ACCEL_ERROR_NOT_FOUND")
        self.assertIn("nope", e.message)
        self.assertEqual(e.call, "accel_device_open")
        with self.assertRaises(accel.AccelError) as cm:
            accel.device("bad uri")
        self.assertEqual(cm.exception.status, accel.Status.INVALID_ARGUMENT)


class Devices(unittest.TestCase):
    def setUp(self):
        self.dev = accel.device("cpu:0")

    def tearDown(self):
        self.dev.close()

    def test_properties(self):
        d = self.dev
        self.assertEqual((d.uri, d.backend, d.index), ("cpu:0", "cpu", 0))
        self.assertEqual(repr(d), "accel.Device('cpu:0')")
        info = d.info()
        self.assertEqual(info["uri"], "cpu:0")
        self.assertEqual(info["type"], 1)
        self.assertTrue(info["caps"] & (1 << 8))  # host accessible
        self.assertEqual(len(info["max_grid"]), 3)
        free, total = d.memory()
        self.assertGreater(total, 0)
        self.assertLessEqual(free, total)
        self.assertEqual(d.dlpack_device(), (1, 0))
        with accel.device("cpu:0") as again:
            self.assertEqual(again, d)
            self.assertEqual(hash(again), hash(d))
        self.assertNotEqual(d, accel.device("cpu:1"))
        with self.assertRaises(ValueError):
            again.uri  # closed

    def test_default_device(self):
        d = accel.device()
        # auto: cpu:0 on a machine without GPUs, a GPU on a GPU node (CI's
        # gpu-present stage stands the CUDA and HIP stand-ins in for one).
        self.assertRegex(d.uri, r"^(cpu|cuda|rocm):[0-9]+$")
        d.close()
        d.close()  # idempotent

    def test_memory_statistics(self):
        d = self.dev
        d.reset_peak_memory_stats()
        before = d.memory_stats()["allocated_bytes"]
        b = d.buffer(3000)
        stats = d.memory_stats()
        self.assertGreaterEqual(stats["allocated_bytes"], before + 3000)
        self.assertGreaterEqual(stats["allocated_bytes_peak"],
                                stats["allocated_bytes"])
        self.assertIn("cpu:0", d.memory_summary())
        b.release()
        d.empty_cache()
        self.assertEqual(d.memory_stats()["allocated_bytes"], before)


class Buffers(unittest.TestCase):
    def setUp(self):
        self.dev = accel.device("cpu:0")

    def test_bytes(self):
        b = self.dev.buffer(16)
        self.assertEqual(b.size, 16)
        self.assertIsNone(b.dtype)
        self.assertEqual(b.nbytes, 16)
        b.fill(0xAB)
        self.assertEqual(b.read(), b"\xab" * 16)
        b.write(b"hello", 3)
        self.assertEqual(b.read(5, 3), b"hello")
        b.fill(0, 8, 8)
        self.assertEqual(b.read(8, 8), b"\0" * 8)
        c = self.dev.buffer(16)
        c.copy_from(b)
        self.assertEqual(c.read(), b.read())
        c.copy_from(b, 2, dst_offset=10, src_offset=3)
        self.assertEqual(c.read(2, 10), b"he")
        self.assertEqual(b.device.uri, "cpu:0")
        self.assertEqual(b.address(4) - b.address(), 4)
        with self.assertRaises(accel.AccelError) as cm:
            b.write(b"x" * 17)
        self.assertEqual(cm.exception.status, accel.Status.INVALID_ARGUMENT)
        self.assertIn("outside", str(cm.exception))
        with b:
            pass
        with self.assertRaises(ValueError):
            b.size
        b.release()  # idempotent

    def test_typed_views(self):
        b = self.dev.empty((2, 3), "f32")
        self.assertEqual((b.dtype, b.shape, b.nbytes), ("float32", (2, 3),
                                                         24))
        v = b.view("int32", (2,), offset=8)
        self.assertEqual((v.dtype, v.shape, v.offset), ("int32", (2,), 8))
        b.release()
        v.write(struct.pack("2i", 5, 6), 8)  # the view keeps the memory
        self.assertEqual(struct.unpack("2i", v.read(8, 8)), (5, 6))
        self.assertIn("dtype=int32", repr(v))
        with self.assertRaises(ValueError):
            self.dev.empty(4, "float64")

    def test_wrap_release_called_once(self):
        host = (ctypes.c_float * 8)()
        calls = []
        b = self.dev.wrap(ctypes.addressof(host), ctypes.sizeof(host),
                          lambda: calls.append(1))
        v = b.view("float32", (8,))
        s = self.dev.stream()
        s.fill(v, 4.0)
        s.release()
        b.release()
        self.assertEqual(calls, [])
        v.release()  # the last reference: waits for the fill, then releases
        self.assertEqual(calls, [1])
        self.assertEqual(host[7], 4.0)
        gc.collect()
        self.assertEqual(calls, [1])
        with self.assertRaises(accel.AccelError) as cm:
            self.dev.wrap(0, 8)
        self.assertEqual(cm.exception.status, accel.Status.INVALID_ARGUMENT)

    def test_dlpack_between_accel_buffers(self):
        b = self.dev.empty(8, "float32")
        self.assertEqual(b.__dlpack_device__(), (1, 0))
        s = self.dev.stream()
        s.fill(b, 2.0)
        s.synchronize()
        w = accel.from_dlpack(b)  # a "dltensor_versioned" capsule
        self.assertEqual((w.dtype, w.shape), ("float32", (8,)))
        self.assertEqual(w.address(), b.address())
        s.fill(w, 3.0)
        s.synchronize()
        self.assertEqual(floats(b, 8), [3.0] * 8)
        cap = b.__dlpack__()
        w2 = accel.from_dlpack(cap)
        with self.assertRaises(BufferError):
            accel.from_dlpack(cap)  # already consumed
        w2.release()
        versioned = b.__dlpack__(max_version=(1, 0))
        self.assertIn("dltensor_versioned", repr(versioned))
        self.assertIn('"dltensor"', repr(b.__dlpack__(max_version=(0, 8))))
        w3 = accel.from_dlpack(versioned)  # a versioned capsule, directly
        self.assertEqual((w3.dtype, w3.shape), ("float32", (8,)))
        self.assertEqual(w3.address(), b.address())
        self.assertIn("used_dltensor_versioned", repr(versioned))
        with self.assertRaises(BufferError):
            accel.from_dlpack(versioned)  # already consumed
        w3.release()
        unused = b.__dlpack__(max_version=(1, 2))
        del unused, versioned, cap  # unconsumed: the destructor runs the
        gc.collect()                # deleter
        with self.assertRaises(BufferError):
            self.dev.buffer(8).__dlpack__()  # no dtype
        with self.assertRaises(BufferError):
            b.__dlpack__(copy=True)
        with self.assertRaises(BufferError):
            b.__dlpack__(dl_device=(2, 0))
        w.release()
        b.release()


class LegacyProducer:
    """A producer from before DLPack 1.0 (NumPy 1.x, PyTorch 1.x): its
    __dlpack__ takes no max_version."""

    def __init__(self, buf):
        self.buf = buf

    def __dlpack__(self, stream=None):
        return self.buf.__dlpack__(stream=stream)


class Interop(unittest.TestCase):
    """<accel/interop.h>: native handles and host registration."""

    def setUp(self):
        self.dev = accel.device("cpu:0")

    def tearDown(self):
        self.dev.close()

    def test_from_dlpack_of_a_legacy_producer(self):
        b = self.dev.empty(4, "int32")
        s = self.dev.stream()
        s.fill(b, 7)
        s.synchronize()
        w = accel.from_dlpack(LegacyProducer(b))
        self.assertEqual((w.dtype, w.shape), ("int32", (4,)))
        self.assertEqual(struct.unpack("4i", w.read(16)), (7, 7, 7, 7))
        with self.assertRaises(BufferError):
            accel.from_dlpack(object())  # neither a producer nor a capsule
        w.release()
        b.release()

    def test_native_handles_on_the_cpu(self):
        b = self.dev.empty(16, "float32")
        handle, offset = b.native_handle()
        self.assertEqual(handle + offset, b.address())
        v = b.view("float32", (4,), 32)  # a view shares the allocation
        self.assertEqual(v.native_handle(), (handle, offset))
        for kind in ("device", "context"):
            with self.assertRaises(accel.AccelError) as cm:
                self.dev.native_handle(kind)
            self.assertEqual(cm.exception.status, accel.Status.UNSUPPORTED)
            self.assertIn(f"no native {kind} object", cm.exception.message)
        self.assertEqual(accel.NATIVE_KINDS, {"device": 0, "context": 1})
        with self.assertRaises(ValueError):
            self.dev.native_handle("stream")
        s = self.dev.stream()
        e = s.record()
        for obj in (s, e):
            with self.assertRaises(accel.AccelError) as cm:
                obj.native_handle()
            self.assertEqual(cm.exception.status, accel.Status.UNSUPPORTED)
            self.assertEqual(cm.exception.call.split("_")[-1], "native")
        e.synchronize()
        v.release()
        b.release()

    def test_host_register(self):
        data = bytearray(range(256)) * 16
        with self.dev.host_register(data) as reg:
            self.assertTrue(reg.registered)
            self.assertEqual(reg.size, len(data))
            self.assertIn("registered", repr(reg))
            self.assertTrue(self.dev.host_registered(data))
            self.assertTrue(self.dev.host_registered(reg.address + 10, 10))
            self.assertFalse(self.dev.host_registered(reg.address + 10,
                                                      len(data)))
            # Overlap: the same memory again is refused.
            with self.assertRaises(accel.AccelError) as cm:
                self.dev.host_register(reg.address + 1, 8)
            self.assertEqual(cm.exception.status,
                             accel.Status.INVALID_ARGUMENT)
            # Copies through registered memory, both ways.
            b = self.dev.buffer(2048)
            s = self.dev.stream()
            s.write(b, memoryview(data)[:2048])
            s.read_into(b, memoryview(data)[2048:4096])
            s.synchronize()
            self.assertEqual(data[2048:4096], data[:2048])
            b.release()
        self.assertFalse(reg.registered)
        self.assertIn("unregistered", repr(reg))
        reg.unregister()  # idempotent
        self.assertFalse(self.dev.host_registered(data))
        # The first `size` bytes only, then garbage collection unregisters.
        arr = array.array("f", [0.0] * 64)
        reg = self.dev.host_register(arr, 128)
        self.assertTrue(self.dev.host_registered(arr, 128))
        self.assertFalse(self.dev.host_registered(arr))
        del reg
        gc.collect()
        self.assertFalse(self.dev.host_registered(arr, 4))
        # Refused: read-only memory, a raw address without size, too many
        # bytes, and (in C) flags and unknown pointers.
        with self.assertRaises(TypeError):
            self.dev.host_register(b"read-only")
        with self.assertRaises(TypeError):
            self.dev.host_register(1234)
        with self.assertRaises(ValueError):
            self.dev.host_register(bytearray(8), 9)
        with self.assertRaises(accel.AccelError) as cm:
            self.dev.host_register(bytearray(0))
        self.assertEqual(cm.exception.status, accel.Status.INVALID_ARGUMENT)

    def test_native_handles_on_opencl(self):
        try:
            dev = accel.device("opencl:0")
        except accel.AccelError:
            self.skipTest("no OpenCL device")
        try:
            s = dev.stream()
            b = dev.buffer(256)
            e = dev.event()
            self.assertEqual(e.native_handle(), 0)  # never recorded
            e.record(s)
            handles = [dev.native_handle("device"),
                       dev.native_handle("context"), s.native_handle(),
                       e.native_handle(), b.native_handle()[0]]
            self.assertTrue(all(isinstance(h, int) and h for h in handles))
            self.assertEqual(dev.native_handle("context"), handles[1])
            self.assertEqual(s.native_handle(), handles[2])
            with self.assertRaises(accel.AccelError) as cm:
                b.address()  # a cl_mem has no address
            self.assertEqual(cm.exception.status, accel.Status.UNSUPPORTED)
            e.synchronize()
            for obj in (e, b, s):
                obj.release()
        finally:
            dev.close()

    def test_registration_outlives_the_device_object(self):
        data = bytearray(4096)
        dev = accel.device("cpu:1")
        reg = dev.host_register(data)
        dev.close()  # the registration holds its own reference
        again = accel.device("cpu:1")
        self.assertTrue(again.host_registered(data))
        reg.release()
        self.assertFalse(again.host_registered(data))
        again.close()


class Streams(unittest.TestCase):
    def setUp(self):
        self.dev = accel.device("cpu:0")
        self.s = self.dev.stream()

    def test_transfers_and_events(self):
        s = self.s
        b = self.dev.buffer(64)
        data = array.array("f", range(16))
        s.write(b, data)
        out = bytearray(64)
        s.read_into(b, out)
        c = self.dev.buffer(64)
        s.write(c, b"\x07" * 8, offset=56)  # read-only bytes are copied
        s.copy(c, b, 24, dst_offset=32)
        s.fill_bytes(c, 0, 32)
        start = s.record(timing=True)
        s.fill_bytes(b, 1)
        end = s.record(timing=True)
        s.synchronize()
        self.assertTrue(s.query())
        self.assertEqual(array.array("f", bytes(out)).tolist(), data.tolist())
        self.assertEqual(c.read(32, 32), data.tobytes()[:24] + b"\x07" * 8)
        with self.assertRaises(TypeError):
            s.read_into(b, b"immutable")
        end.synchronize()
        self.assertTrue(end.query())
        self.assertGreaterEqual(start.elapsed_ms(end), 0.0)
        other = self.dev.stream()
        ev = self.dev.event()
        ev.record(s)
        other.wait_event(ev)
        other.synchronize()
        b.record_stream(other)
        with self.assertRaises(accel.AccelError) as cm:
            ev.elapsed_ms(end)  # no timing
        self.assertEqual(cm.exception.status, accel.Status.INVALID_ARGUMENT)

    def test_ops(self):
        s = self.s
        x = self.dev.empty(4, "float32")
        y = self.dev.empty(4, "float32")
        z = self.dev.empty(4, "float32")
        out = self.dev.empty(1, "float32")
        s.fill(x, 2.0)
        s.fill(y, 3.0)
        s.scale(x, 2.0)          # x = 4
        s.axpy(y, x, 0.5)        # y = 5
        s.add(z, x, y)           # z = 9
        s.mul(z, z, x)           # z = 36
        s.sum(out, z)            # 144
        i = self.dev.empty(4, "int32")
        s.cast(i, z)
        h = self.dev.empty(4, "float16")
        s.fill(h, 1.5)
        s.synchronize()
        self.assertEqual(floats(x, 4), [4.0] * 4)
        self.assertEqual(floats(y, 4), [5.0] * 4)
        self.assertEqual(floats(z, 4), [36.0] * 4)
        self.assertEqual(floats(out, 1), [144.0])
        self.assertEqual(struct.unpack("4i", i.read()), (36,) * 4)
        self.assertEqual(struct.unpack("4e", h.read()), (1.5,) * 4)
        s.fill(x, 1.0, count=2)  # explicit count
        s.synchronize()
        self.assertEqual(floats(x, 4), [1.0, 1.0, 4.0, 4.0])
        with self.assertRaises(accel.AccelError) as cm:
            s.fill(x, 1.0, count=5)
        self.assertEqual(cm.exception.status, accel.Status.INVALID_ARGUMENT)

    def test_gemm(self):
        s = self.s
        a = self.dev.empty((2, 3), "float32")
        b = self.dev.empty((3, 2), "float32")
        c = self.dev.empty((2, 2), "float32")
        a.write(struct.pack("6f", 1, 2, 3, 4, 5, 6))
        b.write(struct.pack("6f", 1, 0, 0, 1, 1, 1))
        s.gemm(a, b, c, 2, 2, 3)
        s.synchronize()
        self.assertEqual(floats(c, 4), [4.0, 5.0, 10.0, 11.0])
        s.gemm(a, b, c, 2, 2, 3, alpha=2.0, beta=1.0)
        s.synchronize()
        self.assertEqual(floats(c, 4), [12.0, 15.0, 30.0, 33.0])
        with self.assertRaises(accel.AccelError):
            s.gemm(a, b, c, 3, 2, 3)  # A too small

    def test_activations(self):
        s = self.s
        x = self.dev.empty(4, "float32")
        y = self.dev.empty(4, "float32")
        x.write(struct.pack("4f", -2.0, -0.5, 0.0, 3.0))
        s.relu(y, x)
        s.synchronize()
        self.assertEqual(floats(y, 4), [0.0, 0.0, 0.0, 3.0])
        s.gelu(y, x)
        s.synchronize()
        want = [v * (1 + math.erf(v / math.sqrt(2))) / 2
                for v in (-2.0, -0.5, 0.0, 3.0)]
        for got, w in zip(floats(y, 4), want):
            self.assertAlmostEqual(got, w, places=5)
        s.silu(x)  # in place
        s.synchronize()
        want = [v / (1 + math.exp(-v)) for v in (-2.0, -0.5, 0.0, 3.0)]
        for got, w in zip(floats(x, 4), want):
            self.assertAlmostEqual(got, w, places=5)
        s.activation("relu", x, count=2)
        s.synchronize()
        self.assertEqual(floats(x, 2), [0.0, 0.0])
        with self.assertRaises(ValueError):
            s.activation("tanh", x)
        i = self.dev.empty(4, "int32")
        with self.assertRaises(accel.AccelError) as cm:
            s.relu(i)  # float dtypes only
        self.assertEqual(cm.exception.status, accel.Status.INVALID_ARGUMENT)

    def test_bias_add(self):
        s = self.s
        y = self.dev.empty((2, 3), "float32")
        bias = self.dev.empty(3, "float32")
        y.write(struct.pack("6f", 1, 2, 3, 4, 5, 6))
        bias.write(struct.pack("3f", 10, 20, 30))
        s.bias_add(y, bias)
        s.synchronize()
        self.assertEqual(floats(y, 6), [11, 22, 33, 14, 25, 36])
        s.bias_add(y, bias, rows=1, cols=3)
        s.synchronize()
        self.assertEqual(floats(y, 6), [21, 42, 63, 14, 25, 36])
        with self.assertRaises(accel.AccelError) as cm:
            s.bias_add(y, bias, rows=3, cols=3)  # y too small
        self.assertEqual(cm.exception.status, accel.Status.INVALID_ARGUMENT)

    def test_gemm_strided_batched(self):
        s = self.s
        a = self.dev.empty((2, 2, 2), "float32")  # [[i 0] [0 i]], i = 1, 2
        b = self.dev.empty((2, 2), "float32")     # shared: stride 0
        c = self.dev.empty((2, 2, 2), "float32")
        a.write(struct.pack("8f", 1, 0, 0, 1, 2, 0, 0, 2))
        b.write(struct.pack("4f", 1, 2, 3, 4))
        s.gemm_strided_batched(a, b, c, 2, 2, 2, 2, 4, 0, 4)
        s.synchronize()
        self.assertEqual(floats(c, 8), [1, 2, 3, 4, 2, 4, 6, 8])
        with self.assertRaises(accel.AccelError) as cm:
            s.gemm_strided_batched(a, b, c, 2, 2, 2, 2, 4, 0, 0)  # C shared
        self.assertEqual(cm.exception.status, accel.Status.INVALID_ARGUMENT)

    def test_module_launch(self):
        path = os.environ.get("ACCEL_TEST_PY_KERNELS")
        if not path:
            self.skipTest("ACCEL_TEST_PY_KERNELS is not set")
        module = self.dev.load_module(path)
        kernel = module.kernel("py_axpb")
        self.assertEqual(kernel.name, "py_axpb")
        x = self.dev.empty(10, "float32")
        x.write(struct.pack("10f", *range(10)))
        s = self.s
        s.launch(kernel, (3,), (1,),
                 [x, ctypes.c_float(2.0), ctypes.c_uint32(10)])
        s.launch(kernel, (1,), args=[(x, 4), struct.pack("f", 1.0),
                                     ctypes.c_uint32(1)])
        s.synchronize()
        want = [2.0 * i + 1.0 for i in range(10)]
        want[1] += 1.0  # the second launch: x[1] = 1 * x[1] + 1
        self.assertEqual(floats(x, 10), want)
        with self.assertRaises(TypeError):
            s.launch(kernel, (1,), args=[1.5])
        with self.assertRaises(accel.AccelError) as cm:
            module.kernel("missing")
        self.assertEqual(cm.exception.status, accel.Status.NOT_FOUND)
        kernel.release()
        module.release()
        with self.assertRaises(accel.AccelError):
            self.dev.load_module("/nonexistent/module.so")


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    sys.exit(0 if result.wasSuccessful() else 1)
