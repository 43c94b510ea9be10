# SPDX-License-Identifier: MIT
"""Buffers, wrapping memory owned elsewhere, and DLPack both ways.

A Buffer is a reference to an accel buffer plus a typed view of it (dtype,
shape, byte offset) used by __dlpack__ and the ops. Views share the C
buffer (each holds its own reference).
"""
import ctypes
import math

from . import _lib
from ._lib import api
from .device import Device

DTYPES = {"float32": 0, "float16": 1, "bfloat16": 2, "int32": 3}
_ALIASES = {"f32": "float32", "f16": "float16", "bf16": "bfloat16",
            "i32": "int32", "float": "float32", "half": "float16"}
_SIZES = {"float32": 4, "float16": 2, "bfloat16": 2, "int32": 4}
# DLPack (code, bits) of the accel dtypes.
_DL_DTYPES = {(2, 32): "float32", (2, 16): "float16", (4, 16): "bfloat16",
              (0, 32): "int32"}


def dtype_name(dtype):
    """The canonical name ("float32") of a name, alias or accel code."""
    if isinstance(dtype, int):
        for name, code in DTYPES.items():
            if code == dtype:
                return name
    else:
        name = str(dtype)
        name = name.rsplit(".", 1)[-1]  # numpy.float32 / torch.float32
        name = _ALIASES.get(name, name)
        if name in DTYPES:
            return name
    raise ValueError(f"accel: unknown dtype {dtype!r} (one of "
                     f"{', '.join(DTYPES)})")


# --- PyCapsule through the C API ---------------------------------------
_py = ctypes.pythonapi
_py.PyCapsule_New.restype = ctypes.py_object
_py.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p,
                              ctypes.c_void_p]
_py.PyCapsule_GetPointer.restype = ctypes.c_void_p
_py.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_py.PyCapsule_SetName.restype = ctypes.c_int
_py.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]
_py.PyCapsule_IsValid.restype = ctypes.c_int
_py.PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]
# The destructor gets the dying capsule: take it as a raw pointer (making
# it a py_object would revive it), through functions declared so.
_IsValidRaw = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p,
                                ctypes.c_char_p)(("PyCapsule_IsValid", _py))
_GetPointerRaw = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p,
                                   ctypes.c_char_p)(
                                       ("PyCapsule_GetPointer", _py))

_NAME = b"dltensor"
_NAME_V = b"dltensor_versioned"
_USED = b"used_dltensor"
_USED_V = b"used_dltensor_versioned"
# DLManagedTensor: the deleter follows the 48-byte DLTensor and manager_ctx;
# DLManagedTensorVersioned: version (8), manager_ctx (8), then the deleter.
_DELETER_OFFSET = {False: 56, True: 16}


def _call_deleter(managed, versioned):
    fn = ctypes.c_void_p.from_address(managed + _DELETER_OFFSET[versioned])
    if fn.value:
        _lib.DELETER_FN(fn.value)(managed)


def _make_destructor(name, versioned):
    @ctypes.CFUNCTYPE(None, ctypes.c_void_p)
    def destructor(capsule):
        # Renamed ("used_...") by a consumer that took ownership: nothing.
        if _IsValidRaw(capsule, name):
            managed = _GetPointerRaw(capsule, name)
            if managed:
                _call_deleter(managed, versioned)
    return destructor


_DESTRUCTORS = {False: _make_destructor(_NAME, False),
                True: _make_destructor(_NAME_V, True)}


def _capsule(managed, versioned):
    name = _NAME_V if versioned else _NAME
    destructor = ctypes.cast(_DESTRUCTORS[versioned], ctypes.c_void_p)
    return _py.PyCapsule_New(managed, name, destructor)


class Buffer(_lib.Handle):
    """An accel buffer (or a typed view of one)."""
    # Through the PyDLL handle: the last release may run a Python
    # producer's DLPack deleter or a wrap release callback.
    _release = staticmethod(_lib.buffer_release)

    def __init__(self, handle, dtype=None, shape=None, offset=0):
        super().__init__(handle)
        size = api.buffer_size(self._handle)
        self.dtype = dtype_name(dtype) if dtype is not None else None
        self.offset = offset
        if shape is None and self.dtype is not None:
            shape = ((size - offset) // _SIZES[self.dtype],)
        self.shape = tuple(int(s) for s in shape) if shape is not None \
            else None

    # -- creation --
    @classmethod
    def create(cls, device, size):
        out = ctypes.c_void_p()
        api.buffer_create(device.handle, size, ctypes.byref(out))
        return cls(out.value)

    @classmethod
    def empty(cls, device, shape, dtype="float32"):
        dtype = dtype_name(dtype)
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        size = max(1, math.prod(shape)) * _SIZES[dtype]
        b = cls.create(device, size)
        b.dtype, b.shape = dtype, shape
        return b

    @classmethod
    def wrap(cls, device, address, size, release=None):
        """accel_buffer_wrap: `size` bytes at device address `address`,
        owned by the caller; `release()` (optional) is called once after
        the last reference is gone and the streams using it finished."""
        out = ctypes.c_void_p()
        cb = _lib.RELEASE_FN()
        _FIRED.clear()  # callbacks that already ran (never freed mid-call)
        if release is not None:
            def fire(_user_data):
                try:
                    release()
                finally:
                    _FIRED.append(_KEEP.pop(id(fire), None))
            cb = _lib.RELEASE_FN(fire)
            _KEEP[id(fire)] = cb
        try:
            api.buffer_wrap(device.handle, address, size, cb, None,
                            ctypes.byref(out))
        except Exception:
            if release is not None:
                _KEEP.pop(id(fire), None)
            raise
        return cls(out.value)

    def view(self, dtype, shape=None, offset=0):
        """A typed view sharing the memory (a new reference)."""
        api.buffer_retain(self.handle)
        return Buffer(self.handle.value, dtype, shape, offset)

    def __repr__(self):
        return (f"accel.Buffer({self.size} bytes on {self.device.uri}, "
                f"dtype={self.dtype}, shape={self.shape})")

    # -- properties and synchronous transfers --
    @property
    def size(self):
        return api.buffer_size(self.handle)

    @property
    def nbytes(self):
        if self.dtype is None:
            return self.size - self.offset
        return math.prod(self.shape) * _SIZES[self.dtype]

    @property
    def device(self):
        return Device._retained(api.buffer_device(self.handle))

    def address(self, offset=0):
        out = ctypes.c_uint64()
        api.buffer_query_address(self.handle, offset, ctypes.byref(out))
        return out.value

    def write(self, data, offset=0):
        """Copies a bytes-like object (bytes, numpy array, ...) in."""
        src, size = _lib.host_bytes(data)
        api.buffer_write(self.handle, offset, src, size)

    def read(self, size=None, offset=0):
        """Copies `size` bytes (default: to the end) out as bytes."""
        if size is None:
            size = self.size - offset
        out = ctypes.create_string_buffer(size)
        api.buffer_read(self.handle, offset, out, size)
        return out.raw

    def fill(self, value, offset=0, size=None):
        """Sets bytes to `value` (0..255)."""
        if size is None:
            size = self.size - offset
        api.buffer_fill(self.handle, offset, value, size)

    def copy_from(self, src, size=None, dst_offset=0, src_offset=0):
        if size is None:
            size = min(self.size - dst_offset, src.size - src_offset)
        api.buffer_copy(self.handle, dst_offset, src.handle, src_offset, size)

    def record_stream(self, stream):
        api.buffer_record_stream(self.handle, stream.handle)

    def native_handle(self):
        """(allocation, byte offset): the backend allocation holding the
        buffer (a host pointer on the CPU, a CUdeviceptr, a HIP pointer,
        a cl_mem) and where the buffer starts in it."""
        handle, offset = ctypes.c_uint64(), ctypes.c_size_t()
        api.buffer_query_native(self.handle, ctypes.byref(handle),
                                ctypes.byref(offset))
        return handle.value, offset.value

    # -- DLPack --
    def __dlpack_device__(self):
        return self.device.dlpack_device()

    def __dlpack__(self, stream=None, max_version=None, dl_device=None,
                   copy=None):
        """A PyCapsule holding a DLManagedTensor ("dltensor"), or with
        max_version >= (1, 0) a DLManagedTensorVersioned
        ("dltensor_versioned"). The memory is shared, never copied
        (copy=True is refused). accel work on the buffer must be finished
        (synchronise its streams first): `stream` is accepted and ignored
        because accel streams are not the consumer's."""
        del stream
        if copy:
            raise BufferError("accel: __dlpack__ never copies")
        if dl_device is not None and tuple(dl_device) != \
                self.__dlpack_device__():
            raise BufferError("accel: cannot export to another device")
        if self.dtype is None:
            raise BufferError("accel: give the buffer a dtype first "
                              "(buffer.view(dtype, shape))")
        versioned = max_version is not None and max_version[0] >= 1
        ndim = len(self.shape)
        shape = (ctypes.c_int64 * max(ndim, 1))(*self.shape)
        out = ctypes.c_void_p()
        api.buffer_to_dlpack(self.handle, self.offset, DTYPES[self.dtype],
                             ndim, shape, None, versioned, ctypes.byref(out))
        try:
            return _capsule(out.value, versioned)
        except Exception:
            _call_deleter(out.value, versioned)
            raise


_KEEP = {}  # release callbacks of wrapped buffers, until called
_FIRED = []  # called ones, dropped at the next wrap


def _tensor_view(managed, versioned):
    """(dtype or None, shape) of a managed tensor."""
    base = managed + (32 if versioned else 0)
    ndim = ctypes.c_int32.from_address(base + 16).value
    code = ctypes.c_uint8.from_address(base + 20).value
    bits = ctypes.c_uint8.from_address(base + 21).value
    shape_ptr = ctypes.c_void_p.from_address(base + 24).value
    shape = tuple((ctypes.c_int64 * ndim).from_address(shape_ptr)) \
        if ndim > 0 else ()
    return _DL_DTYPES.get((code, bits)), shape


def from_dlpack(obj, device=None):
    """Adopts `obj` (anything with __dlpack__: a numpy array, a torch
    tensor, an accel Buffer) or a "dltensor" / "dltensor_versioned"
    capsule as an accel Buffer, without copying. A producer that speaks
    DLPack 1.x hands over a versioned tensor; one from before (NumPy 1.x,
    PyTorch 1.x, whose __dlpack__ takes no max_version) the legacy one.
    The producer's memory stays alive until the Buffer and every view of
    it are released."""
    if hasattr(obj, "__dlpack__"):
        try:
            capsule = obj.__dlpack__(max_version=(1, 0))
        except TypeError:  # a producer from before DLPack 1.0
            capsule = obj.__dlpack__()
    else:
        capsule = obj
    if _py.PyCapsule_IsValid(capsule, _NAME_V):
        versioned, name, used = True, _NAME_V, _USED_V
    elif _py.PyCapsule_IsValid(capsule, _NAME):
        versioned, name, used = False, _NAME, _USED
    else:
        raise BufferError("accel: not an unused \"dltensor\" or "
                          "\"dltensor_versioned\" capsule")
    managed = _py.PyCapsule_GetPointer(capsule, name)
    dtype, shape = _tensor_view(managed, versioned)
    out = ctypes.c_void_p()
    dev = device.handle if device is not None else None
    api.buffer_from_dlpack(managed, versioned, dev, ctypes.byref(out))
    # accel owns the tensor now: its deleter runs with the buffer's release.
    _py.PyCapsule_SetName(capsule, used)
    return Buffer(out.value, dtype, shape if dtype is not None else None)
