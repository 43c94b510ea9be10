# SPDX-License-Identifier: MIT
"""Streams, events, the built-in ops (GEMM, activations, bias-add and
strided-batched GEMM included) and kernel launches."""
import ctypes

from . import _lib
from ._lib import api
from .buffer import DTYPES, dtype_name


def _dt(dtype, *buffers):
    """The accel dtype code: `dtype`, else the first buffer's dtype."""
    if dtype is None:
        for b in buffers:
            if b is not None and b.dtype is not None:
                dtype = b.dtype
                break
        else:
            dtype = "float32"
    return DTYPES[dtype_name(dtype)]


# accel_activation_t (<accel/ops_nn.h>).
ACTIVATIONS = {"relu": 0, "gelu": 1, "silu": 2}


def _count(count, *buffers):
    if count is not None:
        return count
    import math
    b = buffers[0]
    if b.shape is None:
        raise ValueError("accel: give `count` or a typed buffer")
    return math.prod(b.shape)


class Event(_lib.Handle):
    """accel_event_t; `timing=True` lets elapsed_ms() measure."""
    _release = staticmethod(api.event_release)

    def __init__(self, device, timing=False):
        out = ctypes.c_void_p()
        api.event_create(device.handle, 1 if timing else 0, ctypes.byref(out))
        super().__init__(out.value)

    def record(self, stream):
        api.event_record(self.handle, stream.handle)

    def synchronize(self):
        api.event_synchronize(self.handle)

    def query(self):
        done = ctypes.c_bool()
        api.event_query(self.handle, ctypes.byref(done))
        return done.value

    def elapsed_ms(self, end):
        """Milliseconds from this event to `end`."""
        ms = ctypes.c_float()
        api.event_elapsed_ms(self.handle, end.handle, ctypes.byref(ms))
        return ms.value

    def native_handle(self):
        """The backend event as an int (CUevent, hipEvent_t; OpenCL: the
        cl_event of the latest record, 0 before one); AccelError
        UNSUPPORTED on the CPU."""
        out = ctypes.c_uint64()
        api.event_query_native(self.handle, ctypes.byref(out))
        return out.value


class Stream(_lib.Handle):
    """An in-order queue of work on one device. Ops take Buffers; offsets
    are bytes, counts elements (default: the buffer's whole typed view)."""
    _release = staticmethod(api.stream_release)

    def __init__(self, device):
        out = ctypes.c_void_p()
        api.stream_create(device.handle, 0, ctypes.byref(out))
        super().__init__(out.value)

    def synchronize(self):
        api.stream_synchronize(self.handle)
        self._keep = []  # host memory of finished writes

    def query(self):
        done = ctypes.c_bool()
        api.stream_query(self.handle, ctypes.byref(done))
        return done.value

    def wait_event(self, event):
        api.stream_wait_event(self.handle, event.handle)

    def native_handle(self):
        """The backend queue accel enqueues this stream's work on, as an
        int (CUstream, hipStream_t, cl_command_queue); AccelError
        UNSUPPORTED on the CPU."""
        out = ctypes.c_uint64()
        api.stream_query_native(self.handle, ctypes.byref(out))
        return out.value

    def record(self, timing=False):
        """A new event, recorded at the current end of this stream."""
        from .device import Device
        device = Device._retained(api.stream_device(self.handle))
        try:
            event = Event(device, timing)
        finally:
            device.close()
        event.record(self)
        return event

    # -- transfers; host memory must stay alive until synchronize() --
    def write(self, dst, data, offset=0):
        src, size = _lib.host_bytes(data)
        self._keep = getattr(self, "_keep", []) + [src]
        api.stream_write_buffer(self.handle, dst.handle, offset, src, size)

    def read_into(self, src, out, offset=0):
        dst, size = _lib.host_bytes(out, writable=True)
        api.stream_read_buffer(self.handle, src.handle, offset, dst, size)

    def copy(self, dst, src, size, dst_offset=0, src_offset=0):
        api.stream_copy_buffer(self.handle, dst.handle, dst_offset,
                               src.handle, src_offset, size)

    def fill_bytes(self, dst, value, size=None, offset=0):
        if size is None:
            size = dst.size - offset
        api.stream_fill_buffer(self.handle, dst.handle, offset, value, size)

    # -- built-in ops --
    def fill(self, dst, value, count=None, dtype=None):
        api.op_fill(self.handle, dst.handle, dst.offset, _dt(dtype, dst),
                    _count(count, dst), value)

    def cast(self, dst, src, count=None, dst_dtype=None, src_dtype=None):
        api.op_cast(self.handle, dst.handle, dst.offset, _dt(dst_dtype, dst),
                    src.handle, src.offset, _dt(src_dtype, src),
                    _count(count, dst))

    def scale(self, x, alpha, count=None, dtype=None):
        api.op_scale(self.handle, x.handle, x.offset, _dt(dtype, x),
                     _count(count, x), alpha)

    def axpy(self, y, x, alpha, count=None, dtype=None):
        api.op_axpy(self.handle, y.handle, y.offset, x.handle, x.offset,
                    _dt(dtype, y, x), _count(count, y), alpha)

    def add(self, z, x, y, count=None, dtype=None):
        api.op_add(self.handle, z.handle, z.offset, x.handle, x.offset,
                   y.handle, y.offset, _dt(dtype, z, x), _count(count, z))

    def mul(self, z, x, y, count=None, dtype=None):
        api.op_mul(self.handle, z.handle, z.offset, x.handle, x.offset,
                   y.handle, y.offset, _dt(dtype, z, x), _count(count, z))

    def sum(self, out, x, count=None, dtype=None):
        api.op_sum(self.handle, out.handle, out.offset, x.handle, x.offset,
                   _dt(dtype, x, out), _count(count, x))

    # -- neural-network ops (<accel/ops_nn.h>) --
    def activation(self, name, dst, src=None, count=None, dtype=None):
        """dst = act(src) element-wise (accel_op_activation), `name` one of
        "relu", "gelu" (exact erf form), "silu"; float dtypes. Without
        `src` it runs in place on `dst`."""
        if name not in ACTIVATIONS:
            raise ValueError(f"accel: unknown activation {name!r} (one of "
                             f"{', '.join(ACTIVATIONS)})")
        src = dst if src is None else src
        api.op_activation(self.handle, dst.handle, dst.offset, src.handle,
                          src.offset, _dt(dtype, dst, src),
                          _count(count, dst), ACTIVATIONS[name])

    def relu(self, dst, src=None, count=None, dtype=None):
        self.activation("relu", dst, src, count, dtype)

    def gelu(self, dst, src=None, count=None, dtype=None):
        self.activation("gelu", dst, src, count, dtype)

    def silu(self, dst, src=None, count=None, dtype=None):
        self.activation("silu", dst, src, count, dtype)

    def bias_add(self, y, bias, rows=None, cols=None, dtype=None):
        """y[r, c] += bias[c] for a row-major rows x cols `y`
        (accel_op_bias_add). rows and cols default to a 2-D typed y's
        shape."""
        if rows is None or cols is None:
            if y.shape is None or len(y.shape) != 2:
                raise ValueError("accel: give rows and cols or a 2-D y")
            rows, cols = y.shape
        api.op_bias_add(self.handle, y.handle, y.offset, bias.handle,
                        bias.offset, _dt(dtype, y, bias), rows, cols)

    def _gemm_struct(self, a, b, c, m, n, k, alpha, beta, trans_a, trans_b,
                     dtype, c_dtype, lda, ldb, ldc):
        g = _lib.Gemm()
        api.gemm_init(ctypes.byref(g))
        g.a_dtype = g.b_dtype = _dt(dtype, a, b)
        g.c_dtype = _dt(c_dtype, c) if c_dtype or c.dtype else g.a_dtype
        g.trans_a, g.trans_b = trans_a, trans_b
        g.m, g.n, g.k, g.alpha, g.beta = m, n, k, alpha, beta
        g.a, g.a_offset, g.lda = a.handle.value, a.offset, lda
        g.b, g.b_offset, g.ldb = b.handle.value, b.offset, ldb
        g.c, g.c_offset, g.ldc = c.handle.value, c.offset, ldc
        return g

    def gemm_strided_batched(self, a, b, c, m, n, k, batch, stride_a,
                             stride_b, stride_c, alpha=1.0, beta=0.0,
                             trans_a=False, trans_b=False, dtype=None,
                             c_dtype=None, lda=0, ldb=0, ldc=0):
        """`batch` GEMMs as gemm() (accel_op_gemm_strided_batched): member
        i's A, B and C start stride_a, stride_b and stride_c elements after
        member i - 1's; a stride of 0 shares A or B."""
        g = self._gemm_struct(a, b, c, m, n, k, alpha, beta, trans_a,
                              trans_b, dtype, c_dtype, lda, ldb, ldc)
        api.op_gemm_strided_batched(self.handle, ctypes.byref(g), batch,
                                    stride_a, stride_b, stride_c)

    def gemm(self, a, b, c, m, n, k, alpha=1.0, beta=0.0, trans_a=False,
             trans_b=False, dtype=None, c_dtype=None, lda=0, ldb=0, ldc=0):
        """C = alpha * op(A) @ op(B) + beta * C, row-major (accel_op_gemm).
        Leading dimensions of 0 mean packed."""
        g = self._gemm_struct(a, b, c, m, n, k, alpha, beta, trans_a,
                              trans_b, dtype, c_dtype, lda, ldb, ldc)
        api.op_gemm(self.handle, ctypes.byref(g))

    def launch(self, kernel, grid, block=(1, 1, 1), args=(),
               shared_mem_bytes=0):
        """Enqueues `kernel`. `args`: Buffers (offset 0 of the view's
        byte offset), (Buffer, byte_offset) pairs, ctypes scalars
        (ctypes.c_float(2.0)) or bytes, copied at launch."""
        config = _lib.LaunchConfig()
        api.launch_config_init(ctypes.byref(config))
        grid = tuple(grid) + (1,) * (3 - len(grid))
        block = tuple(block) + (1,) * (3 - len(block))
        config.grid[:] = grid
        config.block[:] = block
        config.shared_mem_bytes = shared_mem_bytes
        from .buffer import Buffer
        arr = (_lib.KernelArg * max(1, len(args)))()
        keep = []
        for i, arg in enumerate(args):
            if isinstance(arg, tuple) and len(arg) == 2 and \
                    isinstance(arg[0], Buffer):
                arr[i].kind, arr[i].buffer = 1, arg[0].handle.value
                arr[i].offset = arg[0].offset + arg[1]
            elif isinstance(arg, Buffer):
                arr[i].kind, arr[i].buffer = 1, arg.handle.value
                arr[i].offset = arg.offset
            else:
                if isinstance(arg, (bytes, bytearray)):
                    arg = ctypes.create_string_buffer(bytes(arg), len(arg))
                elif not isinstance(arg, ctypes._SimpleCData):
                    raise TypeError("accel: a kernel argument is a Buffer, "
                                    "(Buffer, offset), a ctypes scalar or "
                                    f"bytes, not {type(arg).__name__}")
                keep.append(arg)
                arr[i].kind, arr[i].size = 0, ctypes.sizeof(arg)
                arr[i].value = ctypes.addressof(arg)
        api.kernel_launch(kernel.handle, self.handle, ctypes.byref(config),
                          len(args), arr)
