# SPDX-License-Identifier: MIT
"""Devices, the plugin load report and memory statistics."""
import ctypes

from . import _lib
from ._lib import api


class Device(_lib.Handle):
    """One accel device ("cpu:0", "cuda:1"). Holds a reference on the C
    handle until close() (release()) or garbage collection."""
    _release = staticmethod(api.device_release)

    @classmethod
    def _retained(cls, handle):
        api.device_retain(handle)
        return cls(handle)

    def close(self):
        self.release()

    def __eq__(self, other):
        return isinstance(other, Device) and other.handle.value == \
            self.handle.value

    def __hash__(self):
        return hash(self.handle.value)

    def __repr__(self):
        return f"accel.Device({self.uri!r})"

    @property
    def uri(self):
        return _lib.text(api.device_uri(self.handle))

    @property
    def backend(self):
        return _lib.text(api.device_backend(self.handle))

    @property
    def index(self):
        return api.device_index(self.handle)

    def info(self):
        """accel_device_query_info as a dict (strings decoded, caps an
        int, uuid bytes, max_grid a tuple)."""
        info = _lib.DeviceInfo()
        info.struct_size = ctypes.sizeof(info)
        api.device_query_info(self.handle, ctypes.byref(info))
        out = {}
        for name, _ in _lib.DeviceInfo._fields_:
            if name == "struct_size":
                continue
            value = getattr(info, name)
            if isinstance(value, bytes):
                value = value.decode(errors="replace")
            elif name == "uuid":
                value = bytes(value)
            elif name == "max_grid":
                value = tuple(value)
            out[name] = value
        return out

    def memory(self):
        """(free, total) bytes."""
        free, total = ctypes.c_uint64(), ctypes.c_uint64()
        api.device_query_memory(self.handle, ctypes.byref(free),
                                ctypes.byref(total))
        return free.value, total.value

    def memory_stats(self):
        """The caching allocator's statistics as a dict."""
        stats = _lib.MemoryStats()
        stats.struct_size = ctypes.sizeof(stats)
        api.device_query_memory_stats(self.handle, ctypes.byref(stats))
        return {name: getattr(stats, name)
                for name in _lib.MEMORY_STAT_FIELDS}

    def memory_summary(self):
        """The human-readable statistics table."""
        length = ctypes.c_size_t()
        api.device_memory_summary(self.handle, None, 0, ctypes.byref(length))
        buf = ctypes.create_string_buffer(length.value + 1)
        api.device_memory_summary(self.handle, buf, len(buf),
                                  ctypes.byref(length))
        return buf.value.decode(errors="replace")

    def empty_cache(self):
        api.device_empty_cache(self.handle)

    def reset_peak_memory_stats(self):
        api.device_reset_peak_memory_stats(self.handle)

    def native_handle(self, kind="device"):
        """The backend's device ("device": a CUdevice or hipDevice_t
        ordinal, a cl_device_id) or context ("context": the primary
        CUcontext, a cl_context) as an int; AccelError UNSUPPORTED where
        the backend has none (the CPU)."""
        from .interop import native_kind
        out = ctypes.c_uint64()
        api.device_query_native(self.handle, native_kind(kind),
                                ctypes.byref(out))
        return out.value

    def host_register(self, data, size=None):
        """Registers host memory (a writable buffer-protocol object, or an
        int address with `size`) for fast copies: an
        accel.HostRegistration, unregistered when it is released."""
        from .interop import HostRegistration
        return HostRegistration(self, data, size)

    def host_registered(self, data, size=None):
        """Whether the memory (as for host_register) lies inside one range
        registered on this device."""
        from .interop import host_range
        address, n, keep = host_range(data, size)
        out = ctypes.c_bool()
        api.host_query_registered(self.handle, address, n, ctypes.byref(out))
        del keep
        return out.value

    def dlpack_device(self):
        """(DLPack device type, id), as __dlpack_device__ returns."""
        t, i = ctypes.c_int32(), ctypes.c_int32()
        api.dlpack_device(self.handle, ctypes.byref(t), ctypes.byref(i))
        return t.value, i.value

    # Factories (the classes live in their own modules).
    def buffer(self, size):
        from .buffer import Buffer
        return Buffer.create(self, size)

    def empty(self, shape, dtype="float32"):
        from .buffer import Buffer
        return Buffer.empty(self, shape, dtype)

    def wrap(self, address, size, release=None):
        from .buffer import Buffer
        return Buffer.wrap(self, address, size, release)

    def stream(self):
        from .stream import Stream
        return Stream(self)

    def event(self, timing=False):
        from .stream import Event
        return Event(self, timing)

    def load_module(self, path):
        from .module import Module
        return Module(self, path)


def device(uri=None):
    """Opens `uri` ("cpu:0"), or the ACCEL_BACKEND default when None."""
    out = ctypes.c_void_p()
    if uri is None:
        api.device_default(ctypes.byref(out))
    else:
        api.device_open(uri.encode(), ctypes.byref(out))
    return Device(out.value)


def devices():
    """Every visible device, in accel's order."""
    count = ctypes.c_uint32()
    api.device_count(ctypes.byref(count))
    out = []
    for i in range(count.value):
        handle = ctypes.c_void_p()
        api.device_get(i, ctypes.byref(handle))
        out.append(Device(handle.value))
    return out


_STAGES = ("found", "opened", "entry", "negotiated", "initialised")
_ORIGINS = ("api", "env", "install_dir")


def plugin_report():
    """The load report, one dict per plugin candidate, as accel-info shows
    it: path, source, origin, stage, status (a Status), status_name,
    message, name, version, abi_version, abi_minor, device_count,
    priority."""
    count = ctypes.c_size_t()
    api.plugin_report_count(ctypes.byref(count))
    out = []
    for i in range(count.value):
        r = _lib.PluginReport()
        r.struct_size = ctypes.sizeof(r)
        api.plugin_report_get(i, ctypes.byref(r))
        try:
            status = _lib.Status(r.status)
        except ValueError:
            status = r.status
        out.append({
            "path": _lib.text(r.path), "source": _lib.text(r.source),
            "origin": _ORIGINS[r.origin] if 0 <= r.origin < 3 else r.origin,
            "stage": _STAGES[r.stage] if 0 <= r.stage < 5 else r.stage,
            "status": status, "status_name": _lib.status_name(r.status),
            "message": _lib.text(r.message), "name": _lib.text(r.name),
            "version": _lib.text(r.version), "abi_version": r.abi_version,
            "abi_minor": r.abi_minor, "device_count": r.device_count,
            "priority": r.priority,
        })
    return out


def info_text():
    """An accel-info style listing: plugins, then devices."""
    lines = [f"accel {version()} ({_lib.library_path})", "plugins:"]
    for p in plugin_report():
        state = "ok" if p["status"] == 0 else p["status_name"]
        lines.append(f"  {p['name'] or '?'} {p['version']} [{state}] "
                     f"{p['device_count']} device(s) {p['path']}"
                     + (f": {p['message']}" if p["message"] else ""))
    lines.append("devices:")
    for d in devices():
        info = d.info()
        lines.append(f"  {d.uri}: {info['name']} ({info['arch']}), "
                     f"{info['total_memory']} bytes")
        d.close()
    return "\n".join(lines)


def version():
    return _lib.text(api.version_string())
