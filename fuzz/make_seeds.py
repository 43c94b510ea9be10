#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes the fuzz targets' seed corpora (fuzz/corpus/<target>/).

The seeds are kept in the repository; run this again only to change them:
    python3 fuzz/make_seeds.py fuzz/corpus
Each image seed is the smallest input that reaches one branch of the
core's sniffer (core/src/image.c) or bundle parser.
"""
import os
import struct
import sys


def elf(machine, flags, is64=True, big=False, abiversion=0, sections=()):
    """An ELF header (+ section headers and .shstrtab for `sections`)."""
    end = ">" if big else "<"
    ident = b"\x7fELF" + bytes([2 if is64 else 1, 2 if big else 1, 1, 0,
                                abiversion]) + bytes(7)
    ehsize, shentsize = (64, 64) if is64 else (52, 40)
    names = b"\0" + b"".join(s.encode() + b"\0" for s in sections) + \
        b".shstrtab\0"
    shnum = len(sections) + 2 if sections else 0
    shoff = ehsize + len(names) if sections else 0
    if is64:
        head = ident + struct.pack(end + "HHIQQQIHHHHHH", 1, machine, 1, 0, 0,
                                   shoff, flags, ehsize, 0, 0, shentsize,
                                   shnum, shnum - 1 if shnum else 0)
    else:
        head = ident + struct.pack(end + "HHIIIIIHHHHHH", 1, machine, 1, 0, 0,
                                   shoff, flags, ehsize, 0, 0, shentsize,
                                   shnum, shnum - 1 if shnum else 0)
    if not sections:
        return head
    table = bytes(shentsize)  # SHT_NULL
    offset = 1
    for name in list(sections) + [".shstrtab"]:
        kind = 3 if name == ".shstrtab" else 1
        if is64:
            table += struct.pack(end + "IIQQQQIIQQ", offset, kind, 0, 0,
                                 ehsize, len(names), 0, 0, 1, 0)
        else:
            table += struct.pack(end + "IIIIIIIIII", offset, kind, 0, 0,
                                 ehsize, len(names), 0, 0, 1, 0)
        offset += len(name) + 1
    return head + names + table


def bundle(entries):
    """A clang offload bundle of (triple, payload) entries."""
    head = b"__CLANG_OFFLOAD_BUNDLE__" + struct.pack("<Q", len(entries))
    table_size = sum(24 + len(t) for t, _ in entries)
    offset = len(head) + table_size
    table, blobs = b"", b""
    for triple, payload in entries:
        table += struct.pack("<QQQ", offset, len(payload),
                             len(triple)) + triple.encode()
        offset += len(payload)
        blobs += payload
    return head + table + blobs


def accel_bundle(entries, version=1):
    """An accel kernel bundle (core/src/bundle.c) of (tag, image) entries."""
    head = b"ACCELBDL" + struct.pack("<II", version, len(entries))
    at = len(head) + 80 * len(entries)
    table, body = b"", b""
    for tag, image in entries:
        at = (at + 63) // 64 * 64
        table += tag.encode().ljust(64, b"\0") + struct.pack("<QQ", at,
                                                              len(image))
        body = body.ljust(at - len(head) - 80 * len(entries), b"\0") + image
        at += len(image)
    return head + table + body


IMAGES = {
    "elf_x86_64": elf(62, 0),
    "elf_x86_64_nv_fatbin": elf(62, 0, sections=[".text", ".nv_fatbin"]),
    "elf_aarch64_be32": elf(183, 0, is64=False, big=True),
    "elf_riscv": elf(243, 0),
    "cubin_sm90": elf(190, 0x5A055A, abiversion=7),
    "cubin_sm100": elf(190, 0x6006402, abiversion=8),
    "amdgpu_gfx90a": elf(224, 0x3F),
    "amdgpu_unknown": elf(224, 0xFE),
    "fatbin": struct.pack("<IHH", 0xBA55ED50, 1, 16) + bytes(8),
    "ptx_sm80": b"// comment\n.version 8.0\n.target sm_80\n"
                b".address_size 64\n",
    "ptx_no_target": b"/* c */ .version 7.0\n",
    "bundle_hip": bundle([("host-x86_64-unknown-linux-gnu", b""),
                          ("hipv4-amdgcn-amd-amdhsa--gfx90a",
                           elf(224, 0x3F))]),
    "bundle_truncated": bundle([("hip-amdgcn-amd-amdhsa--gfx942",
                                 elf(224, 0x4C))])[:40],
    "opencl_c": b"__kernel void add_one(__global float* x) { x[0] += 1; }\n",
    "spirv": struct.pack("<IIIII", 0x07230203, 0x00010000, 0, 8, 0),
    "unknown": b"\x00\x01\x02\x03 not a module",
}
IMAGES["accel_bundle"] = accel_bundle([
    ("elf-x86_64", IMAGES["elf_x86_64"]),
    ("cuda-sm_90", IMAGES["cubin_sm90"]),
    ("amdgcn-gfx90a", IMAGES["amdgpu_gfx90a"]),
    ("opencl-c", IMAGES["opencl_c"]),
    ("spirv", IMAGES["spirv"])])
IMAGES["accel_bundle_ptx"] = accel_bundle([("cuda-ptx-sm_80",
                                             IMAGES["ptx_sm80"])])
BUNDLES = {
    "two": accel_bundle([("elf-x86_64", b"\x7fELF"), ("spirv", b"\3\2")]),
    "one": accel_bundle([("opencl-c", IMAGES["opencl_c"])]),
    "version2": accel_bundle([("spirv", IMAGES["spirv"])], version=2),
    "truncated": accel_bundle([("cuda-fatbin", IMAGES["fatbin"])])[:90],
    "full": IMAGES["accel_bundle"],
}

SPECS = ["auto", "cpu", "cpu:0", "cuda:1", "rocm", "fuzzfx", "fuzzfx:2",
         "fuzzfx:3", "cuda,rocm,fuzzfx,auto", " fuzzfx , auto ", "bogus",
         "fuzzfx:4294967296", "a:b", ",", "opencl:0,cpu"]

VISIBLE = ["0", "0,2", "1, 3", "GPU-8f2b", "-1", "", "0,0,1", "99999999999",
           "cuda:0,rocm:1", "2,x"]


def write(directory, name, data):
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, name), "wb") as f:
        f.write(data)


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "corpus"
    for name, data in IMAGES.items():
        write(os.path.join(root, "image"), name, data)
        # fuzz_module: the first byte picks the fuzz plugin's device.
        write(os.path.join(root, "module"), name + "_0", b"\0" + data)
        write(os.path.join(root, "module"), name + "_1", b"\1" + data)
        write(os.path.join(root, "module"), name + "_2", b"\2" + data)
    for name, data in BUNDLES.items():
        write(os.path.join(root, "bundle"), name, data)
    for i, spec in enumerate(SPECS):
        write(os.path.join(root, "select"), "spec_%02d" % i, spec.encode())
    for i, value in enumerate(VISIBLE):
        write(os.path.join(root, "visible"), "visible_%02d" % i,
              value.encode())


if __name__ == "__main__":
    main()
