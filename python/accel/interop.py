# SPDX-License-Identifier: MIT
"""Native handles and host memory registration (<accel/interop.h>).

The handles are the backend's own objects as ints (a CUstream, a cl_mem,
...); they stay accel's: never release them, and do not use them after
the accel object they came from is released. See docs/interop.md.
"""
import ctypes

from ._lib import api

NATIVE_KINDS = {"device": 0, "context": 1}


def native_kind(kind):
    """The accel_native_kind_t of "device" or "context"."""
    try:
        return NATIVE_KINDS[kind]
    except KeyError:
        raise ValueError(f"accel: unknown native kind {kind!r} (one of "
                         f"{', '.join(NATIVE_KINDS)})") from None


def host_range(data, size=None):
    """(address, size, keep) of host memory: a writable buffer-protocol
    object (bytearray, array.array, a C-contiguous NumPy array), whose
    first `size` bytes (default all) are taken, or an int address with
    `size`. `keep` holds the object's buffer export while the range is
    used."""
    if isinstance(data, int):
        if size is None:
            raise TypeError("accel: a raw address needs a size")
        return data, int(size), None
    view = memoryview(data).cast("B")
    if view.readonly:
        raise TypeError("accel: registered host memory must be writable "
                        "(or give an int address and a size)")
    n = len(view) if size is None else int(size)
    if n > len(view):
        raise ValueError(f"accel: {n} bytes asked of a {len(view)}-byte "
                         "object")
    array = (ctypes.c_char * len(view)).from_buffer(view)
    return ctypes.addressof(array), n, (view, array)


class HostRegistration:
    """Host memory registered with a device (accel_host_register): page-
    locked on CUDA and ROCm for fast copies, recorded elsewhere. Keeps the
    object (and the device) alive until unregister(), the end of a `with`
    block, or garbage collection. Synchronise the streams that copy from
    or to the memory before it is unregistered."""

    def __init__(self, device, data, size=None):
        address, n, keep = host_range(data, size)
        api.host_register(device.handle, address, n, 0)
        api.device_retain(device.handle)
        self._device = ctypes.c_void_p(device.handle.value)
        self.address = address
        self.size = n
        self._keep = keep

    @property
    def registered(self):
        return self._device.value is not None

    def unregister(self):
        """Undoes the registration (idempotent)."""
        if self._device.value:
            device, self._device = self._device, ctypes.c_void_p()
            try:
                api.host_unregister(device, self.address)
            finally:
                api.device_release(device)
                self._keep = None

    release = unregister

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.unregister()

    def __del__(self):
        try:
            self.unregister()
        except Exception:
            pass

    def __repr__(self):
        state = "registered" if self.registered else "unregistered"
        return (f"<accel.HostRegistration {self.size} bytes at "
                f"{self.address:#x}, {state}>")
