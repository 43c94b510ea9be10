# SPDX-License-Identifier: MIT
"""Runs a program with ACCEL_TRACE and checks the timeline it writes.

usage: check_trace.py PROGRAM BACKEND TRACE_FILE [MAX_EVENTS]

Exits 0 when the file is valid JSON with: host-thread spans named after
the API calls, device spans on a "<device> stream N" track that lie inside
their host call windows and in stream order, allocator counters, and
instants for the plugin load and the device selection; 77 when BACKEND has
no usable device here; 1 otherwise. With MAX_EVENTS (ACCEL_TRACE_MAX_EVENTS)
it checks instead that exactly that many events were kept, after the
process_name record, and the rest counted as dropped.
"""
import json
import os
import subprocess
import sys

STREAM_TRACK = 0x40000000
HOST_CALLS = ["accel_buffer_create", "accel_stream_create",
              "accel_event_record", "accel_stream_write_buffer",
              "accel_stream_read_buffer", "accel_stream_synchronize",
              "accel_buffer_release",
              "accel_stream_release"]
DEVICE_OPS = ["accel_stream_write_buffer", "accel_stream_read_buffer"]


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def main():
    program, backend, path = sys.argv[1:4]
    cap = sys.argv[4] if len(sys.argv) > 4 else None
    if os.path.exists(path):
        os.remove(path)
    env = dict(os.environ, ACCEL_TRACE=path, ACCEL_BACKEND=backend)
    if cap is not None:
        env["ACCEL_TRACE_MAX_EVENTS"] = cap
    run = subprocess.run([program], env=env, capture_output=True, text=True,
                         timeout=240)
    print(run.stdout + run.stderr)
    if run.returncode != 0:
        if backend != "cpu:0" and "no usable device" in run.stderr:
            print("SKIP: no %s device here" % backend)
            sys.exit(77)
        fail("the program failed (%d)" % run.returncode)
    with open(path) as f:
        trace = json.load(f)
    events = trace["traceEvents"]
    if "accel_dropped_events" not in trace:
        fail("no dropped-events counter")
    if cap is not None:
        if len(events) != int(cap) + 1 or trace["accel_events"] != int(cap):
            fail("%d events kept with a cap of %s" % (len(events), cap))
        if trace["accel_dropped_events"] < 10:
            fail("only %d events dropped" % trace["accel_dropped_events"])
        print("ok: %s kept, %d dropped" % (cap, trace["accel_dropped_events"]))
        return
    pid = None
    spans = [e for e in events if e["ph"] == "X"]
    host = [e for e in spans if e["tid"] < STREAM_TRACK]
    device = [e for e in spans if e["tid"] >= STREAM_TRACK]
    for e in spans:
        if e["dur"] < 0:
            fail("negative duration: %r" % e)
        pid = pid or e["pid"]
        if e["pid"] != pid:
            fail("two pids: %r" % e)
    names = {e["name"] for e in host}
    for call in HOST_CALLS:
        if call not in names:
            fail("no host span for %s (have %s)" % (call, sorted(names)))
    tracks = {e["tid"]: e["args"]["name"] for e in events
              if e["ph"] == "M" and e["name"] == "thread_name"}
    found = []
    for op in DEVICE_OPS:
        span = [e for e in device if e["name"] == op]
        if len(span) != 1:
            fail("expected one device span for %s, got %r" % (op, span))
        span = span[0]
        label = tracks.get(span["tid"], "")
        if not label.startswith(backend + " stream "):
            fail("device span on track %r, expected '%s stream N'"
                 % (label, backend))
        call = [e for e in host if e["name"] == op][0]
        sync = [e for e in host if e["name"] == "accel_stream_synchronize"
                and e["ts"] >= call["ts"]]
        if not sync:
            fail("no synchronize after %s" % op)
        begin, end = call["ts"], sync[0]["ts"] + sync[0]["dur"]
        if not begin <= span["ts"] <= span["ts"] + span["dur"] <= end:
            fail("%s device span [%s, +%s] outside its host window "
                 "[%s, %s]" % (op, span["ts"], span["dur"], begin, end))
        found.append(span)
    if found[0]["ts"] + found[0]["dur"] > found[1]["ts"]:
        fail("device spans overlap on one in-order stream: %r" % found)
    counters = [e for e in events if e["ph"] == "C"]
    if not any(e["args"].get("allocated", 0) > 0 and "reserved" in e["args"]
               for e in counters):
        fail("no allocator counter with allocated bytes: %r" % counters)
    instants = [e for e in events if e["ph"] == "i"]
    if not any(e["name"] == "plugin load" for e in instants):
        fail("no plugin-load instant")
    if not any(e["name"] == "device selection" and
               e["args"]["detail"] == backend for e in instants):
        fail("no device-selection instant for %s: %r" % (backend, instants))
    print("ok: %d events, %d host spans, %d device spans, %d counters"
          % (len(events), len(host), len(device), len(counters)))


if __name__ == "__main__":
    main()
