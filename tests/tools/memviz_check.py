# SPDX-License-Identifier: MIT
"""accel-memviz renders allocator snapshots as well-formed SVG.

Usage: memviz_check.py SNAPSHOT_PROGRAM ACCEL_MEMVIZ WORKDIR

Takes a snapshot of cpu:0 with blocks in every state (memviz_snapshot.c),
draws it, and checks the picture against the JSON: the document parses as
XML, there is one segment rect per segment and one block rect per block
(class "block <state>"), each with a <title> tooltip naming its size, the
blocks of a segment tile its bar, and labels give sizes and streams. Also:
standard input, a live --device snapshot, XML escaping, and the errors
(bad JSON, not a snapshot, usage). Exits 77 (skip) without the inputs.
"""
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

SVG = "{http://www.w3.org/2000/svg}"
STATES = {"active": "allocated", "free": "cached", "pending": "inactive"}


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def run(args, stdin=None, code=0):
    done = subprocess.run(args, input=stdin, capture_output=True)
    if done.returncode != code:
        fail("%s exited %d, expected %d: %s" %
             (" ".join(args), done.returncode, code,
              done.stderr.decode(errors="replace")))
    return done


def check_picture(svg_bytes, snap, where):
    try:
        root = ET.fromstring(svg_bytes)
    except ET.ParseError as e:
        fail("%s: not well-formed XML: %s" % (where, e))
    if root.tag != SVG + "svg":
        fail("%s: root element is %s" % (where, root.tag))
    rects = list(root.iter(SVG + "rect"))
    segments = [r for r in rects if r.get("class") == "segment"]
    blocks = [r for r in rects
              if (r.get("class") or "").split()[:1] == ["block"]]
    want_blocks = sum(len(s["blocks"]) for s in snap["segments"])
    if len(segments) != len(snap["segments"]):
        fail("%s: %d segment rects for %d segments" %
             (where, len(segments), len(snap["segments"])))
    if len(blocks) != want_blocks:
        fail("%s: %d block rects for %d blocks" %
             (where, len(blocks), want_blocks))
    i = 0
    for n, seg in enumerate(snap["segments"]):
        bar = segments[n]
        x0 = float(bar.get("x"))
        width = float(bar.get("width"))
        end = x0
        for blk in seg["blocks"]:
            rect = blocks[i]
            i += 1
            cls = rect.get("class").split()
            if cls[1] != STATES.get(blk["state"], "unknown"):
                fail("%s: block %d drawn as %s, state %s" %
                     (where, i, cls[1], blk["state"]))
            title = rect.find(SVG + "title")
            if title is None or str(blk["size"]) not in title.text:
                fail("%s: block %d lacks a tooltip with its size" % (where, i))
            if blk["stream"] is not None and blk["stream"] not in title.text:
                fail("%s: block %d's tooltip lacks its stream" % (where, i))
            x = float(rect.get("x"))
            if abs(x - end) > 0.01:
                fail("%s: block %d starts at %g, not %g" % (where, i, x, end))
            end = x + float(rect.get("width"))
        if abs(end - (x0 + width)) > 0.01:
            fail("%s: segment %d's blocks end at %g, its bar at %g" %
                 (where, n, end, x0 + width))
    text = " ".join(t.text or "" for t in root.iter(SVG + "text"))
    text += " " + " ".join(t.text or "" for t in root.iter(SVG + "title"))
    return root, text


def main():
    if len(sys.argv) != 4:
        print(__doc__)
        return 2
    program, memviz, work = sys.argv[1:]
    for f in (program, memviz):
        if not os.access(f, os.X_OK):
            print("skip: %s is missing" % f)
            return 77
    os.makedirs(work, exist_ok=True)
    snap_path = os.path.join(work, "snapshot.json")
    svg_path = os.path.join(work, "snapshot.svg")
    run([program, snap_path])
    with open(snap_path, "rb") as f:
        snap_bytes = f.read()
    snap = json.loads(snap_bytes)
    states = {b["state"] for s in snap["segments"] for b in s["blocks"]}
    if not {"active", "free", "pending"} <= states:
        fail("the snapshot lacks a state: %s" % sorted(states))

    run([memviz, snap_path, "-o", svg_path, "--title", "memviz test"])
    with open(svg_path, "rb") as f:
        svg = f.read()
    _, text = check_picture(svg, snap, "file")
    if "memviz test" not in text or "cpu:0" in text.split("memviz test")[0]:
        fail("--title was not used")
    for seg in snap["segments"]:
        if seg["kind"] not in text:
            fail("no label names segment kind %s" % seg["kind"])
        if seg["stream"] is not None and seg["stream"] not in text:
            fail("no label names stream %s" % seg["stream"])
    for words in ("MiB", "KiB", "allocated", "cached", "inactive"):
        if words not in text:
            fail("the labels and tooltips lack '%s'" % words)

    # Standard input gives the same picture (bar width aside).
    same = run([memviz, "-", "--title", "memviz test"], stdin=snap_bytes).stdout
    if same != svg:
        fail("standard input drew another picture than the file")
    wide = run([memviz, "--width", "2000", snap_path]).stdout
    check_picture(wide, snap, "--width 2000")

    # Live: this process's own allocator, empty.
    live = run([memviz, "--device", "cpu:0"]).stdout
    check_picture(live, {"segments": []}, "--device")

    # Escaping: names with XML's special characters.
    odd = {"device": "cpu:0 <&> \"'", "segments": [
        {"size": 4096, "kind": "small", "stream": "a<b&c", "blocks": [
            {"offset": 0, "size": 1024, "requested": 1000,
             "state": "active", "stream": "x&y"},
            {"offset": 1024, "size": 3072, "requested": 0,
             "state": "mystery", "stream": None}]}],
        "future_member": [1, {"nested": True}]}
    odd_bytes = json.dumps(odd).encode()
    _, text = check_picture(run([memviz, "-"], stdin=odd_bytes).stdout, odd,
                            "escaping")
    if "cpu:0 <&> \"'" not in text:
        fail("the device name did not come through escaping")

    # Errors.
    bad = run([memviz, "-"], stdin=snap_bytes[:len(snap_bytes) // 2], code=1)
    if b"at byte" not in bad.stderr:
        fail("a truncated snapshot's error names no offset: %r" % bad.stderr)
    bad = run([memviz, "-"], stdin=b"[1, 2]", code=1)
    if b"not a snapshot" not in bad.stderr:
        fail("a JSON array was not refused as a snapshot: %r" % bad.stderr)
    run([memviz, "-"], stdin=b'{"segments": [{"size": -1}]}', code=1)
    run([memviz, os.path.join(work, "missing.json")], code=1)
    run([memviz], code=2)
    run([memviz, snap_path, "--device", "cpu:0"], code=2)
    run([memviz, "--width", "5", snap_path], code=2)
    run([memviz, "--help"])
    print("ok: %d segments, %d blocks drawn" %
          (len(snap["segments"]),
           sum(len(s["blocks"]) for s in snap["segments"])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
