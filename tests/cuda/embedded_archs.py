#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks what the CUDA plugin's embedded fatbin holds (no cuobjdump needed).

Usage: embedded_archs.py FATBIN SASS PTX
  SASS and PTX are comma-separated SM numbers ("75,80,110"): every SM in SASS
  must have a cubin in the fatbin, every SM in PTX a PTX entry. Exits 1
  naming what is missing, and prints what the fatbin holds.

The fatbin layout read here (magic 0xBA55ED50, a header whose size is at
byte 6 and payload size at byte 8, then entries of kind 1 = PTX or 2 = ELF
with the SM at byte 28 of each entry header) is the one nvcc writes; the
fake driver (fakecuda_kernels.c) reads it the same way.
"""
import struct
import sys


def entries(data):
    magic, = struct.unpack_from("<I", data, 0)
    if magic != 0xBA55ED50:
        raise SystemExit("not a fatbin: magic %#x" % magic)
    header, = struct.unpack_from("<H", data, 6)
    total = header + struct.unpack_from("<Q", data, 8)[0]
    at = header
    while at + 64 <= total:
        kind, = struct.unpack_from("<H", data, at)
        hsize, = struct.unpack_from("<I", data, at + 4)
        size, = struct.unpack_from("<Q", data, at + 8)
        sm, = struct.unpack_from("<I", data, at + 28)
        if hsize < 64:
            break
        yield ("ptx" if kind == 1 else "sass" if kind == 2 else "?"), sm
        at += hsize + size


def main():
    if len(sys.argv) != 4:
        raise SystemExit(__doc__)
    with open(sys.argv[1], "rb") as f:
        data = f.read()
    found = set(entries(data))
    print("fatbin holds: " + ", ".join(
        "%s sm_%d" % (k, sm) for k, sm in sorted(found)))
    want = [("sass", int(sm)) for sm in sys.argv[2].split(",") if sm]
    want += [("ptx", int(sm)) for sm in sys.argv[3].split(",") if sm]
    missing = sorted(set(w for w in want if w not in found))
    for kind, sm in missing:
        print("missing: %s for sm_%d" % (kind, sm))
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
