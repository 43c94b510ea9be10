# SPDX-License-Identifier: MIT
"""accel for Python: a ctypes binding of libaccel (no compiled code).

    import accel, numpy as np
    dev = accel.device("cpu:0")
    buf = dev.empty((4, 4), "float32")
    s = dev.stream(); s.fill(buf, 1.5); s.synchronize()
    a = np.from_dlpack(buf)          # shares buf's memory
    b = accel.from_dlpack(np.ones(16, np.float32))   # and the other way

See docs/interop.md. Set ACCEL_LIBRARY to pick a libaccel.so.1.
"""
from ._lib import AccelError, Status, library_path
from .buffer import DTYPES, Buffer, from_dlpack
from .device import (Device, device, devices, info_text, plugin_report,
                     version)
from .interop import NATIVE_KINDS, HostRegistration
from .module import Kernel, Module
from .stream import Event, Stream

__all__ = [
    "AccelError", "Status", "library_path", "DTYPES", "Buffer",
    "from_dlpack", "Device", "device", "devices", "info_text",
    "plugin_report", "version", "Kernel", "Module", "Event", "Stream",
    "NATIVE_KINDS", "HostRegistration",
]
