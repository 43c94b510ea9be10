# SPDX-License-Identifier: MIT
"""Modules (accel_module_create_from_file) and their kernels."""
import ctypes
import os

from . import _lib
from ._lib import api


class Module(_lib.Handle):
    """A module loaded on `device` from the file at `path` (a CPU shared
    object, a cubin/fatbin, a code object, a kernel bundle, ...)."""
    _release = staticmethod(api.module_release)

    def __init__(self, device, path):
        out = ctypes.c_void_p()
        api.module_create_from_file(device.handle, os.fsencode(path),
                                    ctypes.byref(out))
        super().__init__(out.value)

    def kernel(self, name):
        out = ctypes.c_void_p()
        api.kernel_create(self.handle, name.encode(), ctypes.byref(out))
        return Kernel(out.value, name)


class Kernel(_lib.Handle):
    """A kernel of a Module (keeps the module loaded). Launch it with
    Stream.launch(kernel, grid, block, args)."""
    _release = staticmethod(api.kernel_release)

    def __init__(self, handle, name):
        super().__init__(handle)
        self.name = name
