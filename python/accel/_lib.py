# SPDX-License-Identifier: MIT
"""Loading libaccel with ctypes, the C types the package uses, and errors.

The library is found in this order: the ACCEL_LIBRARY environment variable
(a path to libaccel.so.1), then beside the package's install location (the
lib directories of the prefix the package was installed under), then
ctypes.util.find_library("accel").
"""
import ctypes
import ctypes.util
import enum
import glob
import os

c_void_p = ctypes.c_void_p
c_size_t = ctypes.c_size_t
c_char_p = ctypes.c_char_p
c_int = ctypes.c_int
c_uint32 = ctypes.c_uint32
c_int32 = ctypes.c_int32
c_uint64 = ctypes.c_uint64
c_int64 = ctypes.c_int64
c_bool = ctypes.c_bool
c_double = ctypes.c_double
c_float = ctypes.c_float
c_uint8 = ctypes.c_uint8


class Status(enum.IntEnum):
    """accel_status_t. Codes are only ever appended: unknown ones are kept
    as plain ints by AccelError."""
    OK = 0
    INVALID_ARGUMENT = 1
    OUT_OF_MEMORY = 2
    OUT_OF_DEVICE_MEMORY = 3
    NOT_FOUND = 4
    UNSUPPORTED = 5
    UNAVAILABLE = 6
    INCOMPATIBLE = 7
    DEVICE_LOST = 8
    BACKEND = 9
    INTERNAL = 10
    NOT_READY = 11
    TIMEOUT = 12


class AccelError(Exception):
    """A failed accel call. `status` is a Status (an int for codes this
    package does not know), `status_name` the C constant name
    ("ACCEL_ERROR_NOT_FOUND"), `message` accel's accel_last_error() text."""

    def __init__(self, status, status_name, message, call=""):
        try:
            status = Status(status)
        except ValueError:
            pass
        self.status = status
        self.status_name = status_name
        self.message = message
        self.call = call
        text = f"{status_name}: {message}" if message else status_name
        super().__init__(f"{call}: {text}" if call else text)


def _candidates():
    env = os.environ.get("ACCEL_LIBRARY")
    if env:
        yield env
        return
    here = os.path.dirname(os.path.abspath(__file__))
    # <prefix>/lib/python3/dist-packages/accel: look in the prefix's lib
    # directories (lib, lib64, lib/<multiarch>) a few levels up.
    d = here
    for _ in range(5):
        d = os.path.dirname(d)
        for pattern in ("lib*/libaccel.so.1", "lib/*/libaccel.so.1",
                        "libaccel.so.1"):
            for path in sorted(glob.glob(os.path.join(d, pattern))):
                yield path
    found = ctypes.util.find_library("accel")
    if found:
        yield found


def _load():
    errors = []
    for path in _candidates():
        try:
            return ctypes.CDLL(path), ctypes.PyDLL(path), path
        except OSError as e:
            errors.append(f"{path}: {e}")
    detail = "; ".join(errors) if errors else "no candidate found"
    raise OSError("accel: cannot load libaccel (set ACCEL_LIBRARY to its "
                  "path): " + detail)


lib, _pylib, library_path = _load()

# Calls that may run Python code (a DLPack deleter of a Python producer, a
# Python release callback) keep the GIL: they go through the PyDLL handle.
buffer_release = _pylib.accel_buffer_release
buffer_release.argtypes = [c_void_p]
buffer_release.restype = None

RELEASE_FN = ctypes.CFUNCTYPE(None, c_void_p)
DELETER_FN = ctypes.CFUNCTYPE(None, c_void_p)


class DeviceInfo(ctypes.Structure):
    _fields_ = [
        ("struct_size", c_uint32), ("type", c_int), ("uri", ctypes.c_char * 48),
        ("backend", ctypes.c_char * 32), ("index", c_uint32),
        ("name", ctypes.c_char * 256), ("vendor", ctypes.c_char * 64),
        ("arch", ctypes.c_char * 64), ("total_memory", c_uint64),
        ("free_memory", c_uint64), ("compute_units", c_uint32),
        ("max_threads_per_block", c_uint32), ("simd_width", c_uint32),
        ("caps", c_uint32), ("uuid", c_uint8 * 16),
        ("pci_bus_id", ctypes.c_char * 32), ("features", ctypes.c_char * 256),
        ("driver_version", ctypes.c_char * 64),
        ("module_target", ctypes.c_char * 64), ("max_alloc_size", c_uint64),
        ("max_shared_mem_bytes", c_uint64),
        ("buffer_offset_alignment", c_uint32), ("max_grid", c_uint32 * 3),
        ("module_formats", ctypes.c_char * 128),
        ("platform", ctypes.c_char * 64),
    ]


class PluginReport(ctypes.Structure):
    _fields_ = [
        ("struct_size", c_uint32), ("path", c_char_p), ("source", c_char_p),
        ("origin", c_int), ("stage", c_int), ("status", c_int),
        ("message", c_char_p), ("name", c_char_p), ("version", c_char_p),
        ("abi_version", c_uint32), ("device_count", c_uint32),
        ("priority", c_int32), ("abi_minor", c_uint32),
    ]


MEMORY_STAT_FIELDS = (
    "allocated_bytes", "allocated_bytes_peak", "reserved_bytes",
    "reserved_bytes_peak", "active_blocks", "active_blocks_peak",
    "requested_bytes", "raw_allocs", "raw_frees", "cache_hits",
    "cache_misses", "oom_retries", "ooms", "inactive_split_bytes")


class MemoryStats(ctypes.Structure):
    _fields_ = [("struct_size", c_uint32)] + [
        (name, c_uint64) for name in MEMORY_STAT_FIELDS]


class Gemm(ctypes.Structure):
    _fields_ = [
        ("struct_size", c_uint32), ("a_dtype", c_int), ("b_dtype", c_int),
        ("c_dtype", c_int), ("trans_a", c_bool), ("trans_b", c_bool),
        ("flags", c_uint32), ("m", c_size_t), ("n", c_size_t),
        ("k", c_size_t), ("alpha", c_double), ("beta", c_double),
        ("a", c_void_p), ("a_offset", c_size_t), ("lda", c_size_t),
        ("b", c_void_p), ("b_offset", c_size_t), ("ldb", c_size_t),
        ("c", c_void_p), ("c_offset", c_size_t), ("ldc", c_size_t),
    ]


class KernelArg(ctypes.Structure):
    _fields_ = [("kind", c_int), ("size", c_uint32), ("value", c_void_p),
                ("buffer", c_void_p), ("offset", c_size_t)]


class LaunchConfig(ctypes.Structure):
    _fields_ = [("struct_size", c_uint32), ("grid", c_uint32 * 3),
                ("block", c_uint32 * 3), ("shared_mem_bytes", c_uint32)]


P = ctypes.POINTER
_SIGNATURES = {
    # name: (restype, argtypes); restype c_int means accel_status_t.
    "accel_last_error": (c_char_p, []),
    "accel_status_string": (c_char_p, [c_int]),
    "accel_version_string": (c_char_p, []),
    "accel_plugin_report_count": (c_int, [P(c_size_t)]),
    "accel_plugin_report_get": (c_int, [c_size_t, P(PluginReport)]),
    "accel_device_count": (c_int, [P(c_uint32)]),
    "accel_device_get": (c_int, [c_uint32, P(c_void_p)]),
    "accel_device_open": (c_int, [c_char_p, P(c_void_p)]),
    "accel_device_default": (c_int, [P(c_void_p)]),
    "accel_device_retain": (None, [c_void_p]),
    "accel_device_release": (None, [c_void_p]),
    "accel_device_uri": (c_char_p, [c_void_p]),
    "accel_device_backend": (c_char_p, [c_void_p]),
    "accel_device_index": (c_uint32, [c_void_p]),
    "accel_device_query_info": (c_int, [c_void_p, P(DeviceInfo)]),
    "accel_device_query_memory": (c_int, [c_void_p, P(c_uint64), P(c_uint64)]),
    "accel_device_query_memory_stats": (c_int, [c_void_p, P(MemoryStats)]),
    "accel_device_memory_summary": (c_int, [c_void_p, c_char_p, c_size_t,
                                            P(c_size_t)]),
    "accel_device_empty_cache": (c_int, [c_void_p]),
    "accel_device_reset_peak_memory_stats": (c_int, [c_void_p]),
    "accel_buffer_create": (c_int, [c_void_p, c_size_t, P(c_void_p)]),
    "accel_buffer_wrap": (c_int, [c_void_p, c_uint64, c_size_t, RELEASE_FN,
                                  c_void_p, P(c_void_p)]),
    "accel_buffer_retain": (None, [c_void_p]),
    "accel_buffer_size": (c_size_t, [c_void_p]),
    "accel_buffer_device": (c_void_p, [c_void_p]),
    "accel_buffer_query_address": (c_int, [c_void_p, c_size_t, P(c_uint64)]),
    "accel_buffer_write": (c_int, [c_void_p, c_size_t, c_void_p, c_size_t]),
    "accel_buffer_read": (c_int, [c_void_p, c_size_t, c_void_p, c_size_t]),
    "accel_buffer_copy": (c_int, [c_void_p, c_size_t, c_void_p, c_size_t,
                                  c_size_t]),
    "accel_buffer_fill": (c_int, [c_void_p, c_size_t, c_uint8, c_size_t]),
    "accel_buffer_record_stream": (c_int, [c_void_p, c_void_p]),
    "accel_buffer_to_dlpack": (c_int, [c_void_p, c_size_t, c_int, c_int32,
                                       P(c_int64), P(c_int64), c_bool,
                                       P(c_void_p)]),
    "accel_buffer_from_dlpack": (c_int, [c_void_p, c_bool, c_void_p,
                                         P(c_void_p)]),
    "accel_dlpack_device": (c_int, [c_void_p, P(c_int32), P(c_int32)]),
    # <accel/interop.h>
    "accel_device_query_native": (c_int, [c_void_p, c_int, P(c_uint64)]),
    "accel_stream_query_native": (c_int, [c_void_p, P(c_uint64)]),
    "accel_event_query_native": (c_int, [c_void_p, P(c_uint64)]),
    "accel_buffer_query_native": (c_int, [c_void_p, P(c_uint64),
                                          P(c_size_t)]),
    "accel_host_register": (c_int, [c_void_p, c_void_p, c_size_t, c_uint32]),
    "accel_host_unregister": (c_int, [c_void_p, c_void_p]),
    "accel_host_query_registered": (c_int, [c_void_p, c_void_p, c_size_t,
                                            P(c_bool)]),
    "accel_stream_create": (c_int, [c_void_p, c_uint32, P(c_void_p)]),
    "accel_stream_release": (None, [c_void_p]),
    "accel_stream_device": (c_void_p, [c_void_p]),
    "accel_stream_synchronize": (c_int, [c_void_p]),
    "accel_stream_query": (c_int, [c_void_p, P(c_bool)]),
    "accel_stream_wait_event": (c_int, [c_void_p, c_void_p]),
    "accel_stream_write_buffer": (c_int, [c_void_p, c_void_p, c_size_t,
                                          c_void_p, c_size_t]),
    "accel_stream_read_buffer": (c_int, [c_void_p, c_void_p, c_size_t,
                                         c_void_p, c_size_t]),
    "accel_stream_copy_buffer": (c_int, [c_void_p, c_void_p, c_size_t,
                                         c_void_p, c_size_t, c_size_t]),
    "accel_stream_fill_buffer": (c_int, [c_void_p, c_void_p, c_size_t,
                                         c_uint8, c_size_t]),
    "accel_event_create": (c_int, [c_void_p, c_uint32, P(c_void_p)]),
    "accel_event_release": (None, [c_void_p]),
    "accel_event_record": (c_int, [c_void_p, c_void_p]),
    "accel_event_synchronize": (c_int, [c_void_p]),
    "accel_event_query": (c_int, [c_void_p, P(c_bool)]),
    "accel_event_elapsed_ms": (c_int, [c_void_p, c_void_p, P(c_float)]),
    "accel_dtype_size": (c_size_t, [c_int]),
    "accel_op_fill": (c_int, [c_void_p, c_void_p, c_size_t, c_int, c_size_t,
                              c_double]),
    "accel_op_cast": (c_int, [c_void_p, c_void_p, c_size_t, c_int, c_void_p,
                              c_size_t, c_int, c_size_t]),
    "accel_op_scale": (c_int, [c_void_p, c_void_p, c_size_t, c_int, c_size_t,
                               c_double]),
    "accel_op_axpy": (c_int, [c_void_p, c_void_p, c_size_t, c_void_p,
                              c_size_t, c_int, c_size_t, c_double]),
    "accel_op_add": (c_int, [c_void_p, c_void_p, c_size_t, c_void_p,
                             c_size_t, c_void_p, c_size_t, c_int, c_size_t]),
    "accel_op_mul": (c_int, [c_void_p, c_void_p, c_size_t, c_void_p,
                             c_size_t, c_void_p, c_size_t, c_int, c_size_t]),
    "accel_op_sum": (c_int, [c_void_p, c_void_p, c_size_t, c_void_p,
                             c_size_t, c_int, c_size_t]),
    "accel_gemm_init": (None, [P(Gemm)]),
    "accel_op_gemm": (c_int, [c_void_p, P(Gemm)]),
    # <accel/ops_nn.h>
    "accel_activation_name": (c_char_p, [c_int]),
    "accel_op_activation": (c_int, [c_void_p, c_void_p, c_size_t, c_void_p,
                                    c_size_t, c_int, c_size_t, c_int]),
    "accel_op_bias_add": (c_int, [c_void_p, c_void_p, c_size_t, c_void_p,
                                  c_size_t, c_int, c_size_t, c_size_t]),
    "accel_op_gemm_strided_batched": (c_int, [c_void_p, P(Gemm), c_size_t,
                                              c_size_t, c_size_t,
                                              c_size_t]),
    "accel_module_create_from_file": (c_int, [c_void_p, c_char_p,
                                              P(c_void_p)]),
    "accel_module_release": (None, [c_void_p]),
    "accel_kernel_create": (c_int, [c_void_p, c_char_p, P(c_void_p)]),
    "accel_kernel_release": (None, [c_void_p]),
    "accel_launch_config_init": (None, [P(LaunchConfig)]),
    "accel_kernel_launch": (c_int, [c_void_p, c_void_p, P(LaunchConfig),
                                    c_size_t, P(KernelArg)]),
}


class _Api:
    """The C functions; each status-returning one raises AccelError."""


api = _Api()


def _checked(name, fn):
    def call(*args):
        status = fn(*args)
        if status != 0:
            raise error(status, name)
        return status
    call.__name__ = name
    return call


for _name, (_res, _args) in _SIGNATURES.items():
    _fn = getattr(lib, _name)
    _fn.restype = _res
    _fn.argtypes = _args
    _short = _name[len("accel_"):]
    setattr(api, _short, _checked(_name, _fn) if _res is c_int else _fn)


def status_name(status):
    return lib.accel_status_string(int(status)).decode()


def error(status, call=""):
    """An AccelError for `status` with the thread's accel_last_error()."""
    message = (lib.accel_last_error() or b"").decode(errors="replace")
    return AccelError(status, status_name(status), message, call)


def text(b):
    return b.decode(errors="replace") if b else ""


def host_bytes(data, writable=False):
    """A ctypes char array over the bytes of a buffer-protocol object
    (bytes, bytearray, array.array, a NumPy array), and its length. A
    read-only object is copied first unless `writable` is required."""
    view = memoryview(data).cast("B")
    if view.readonly:
        if writable:
            raise TypeError("accel: the destination is read-only")
        view = memoryview(bytearray(view))
    return (ctypes.c_char * len(view)).from_buffer(view), len(view)


class Handle:
    """A reference to a C handle, dropped by release() (idempotent), on
    garbage collection or at the end of a `with` block. Subclasses set
    `_release` to the C release function."""
    _release = None

    def __init__(self, handle):
        self._handle = ctypes.c_void_p(handle)

    @property
    def handle(self):
        if not self._handle.value:
            raise ValueError(f"accel: the {type(self).__name__} was "
                             "released")
        return self._handle

    def release(self):
        if self._handle.value:
            type(self)._release(self._handle)
            self._handle = ctypes.c_void_p()

    def __del__(self):
        try:
            self.release()
        except Exception:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()
