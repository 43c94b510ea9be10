#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks an accel-bench --json document (and optionally its --plot SVG).

Usage: bench_check.py JSON [--svg FILE] [--suites a,b] [--only a,b]
                           [--cases a,b] [--ok s/c,s/c] [--raw s/c:name,...]
  --svg FILE   FILE must be well-formed XML whose root is <svg>
  --suites     each of these suites has at least one result
  --only       no result comes from any other suite
  --cases      each of these case names has at least one result
  --ok         each of these suite/case pairs has a result that ran (ok)
  --raw        each suite/case has a result that ran with a baseline whose
               name contains `name` (the baseline was measured, not missing)
Structure only: no timing is judged. Exits 1 with a message on failure.
"""
import json
import math
import sys
import xml.dom.minidom


def fail(msg):
    print("bench_check: " + msg)
    sys.exit(1)


def number_or_null(v):
    return v is None or (isinstance(v, (int, float)) and math.isfinite(v))


def check_timing(where, t, ok):
    for key in ("median", "min", "max", "trials", "iterations_per_trial"):
        if key not in t:
            fail("%s lacks %s" % (where, key))
        if not number_or_null(t[key]):
            fail("%s.%s is not a number: %r" % (where, key, t[key]))
    if ok:
        if t["median"] is None or t["trials"] < 1:
            fail("%s: an ok result has no median" % where)
        if not t["min"] <= t["median"] <= t["max"]:
            fail("%s: min <= median <= max does not hold: %r" % (where, t))


def check_result(i, r):
    where = "results[%d] (%s/%s)" % (i, r.get("suite"), r.get("case"))
    for key in ("suite", "case", "size", "unit", "higher_is_better",
                "outcome", "note", "accel", "baseline", "ratio", "budget",
                "within_budget"):
        if key not in r:
            fail("%s lacks %s" % (where, key))
    if r["outcome"] not in ("ok", "skipped", "failed"):
        fail("%s: bad outcome %r" % (where, r["outcome"]))
    if r["outcome"] == "failed":
        fail("%s failed: %s" % (where, r["note"]))
    ok = r["outcome"] == "ok"
    check_timing(where + ".accel", r["accel"], ok)
    if r["baseline"] is not None:
        if not r["baseline"].get("name"):
            fail("%s: baseline has no name" % where)
        check_timing(where + ".baseline", r["baseline"], ok)
    if not number_or_null(r["ratio"]):
        fail("%s: ratio %r" % (where, r["ratio"]))
    if r["budget"] is not None:
        if r["budget"].get("kind") not in ("max_diff", "min_ratio", "max_abs"):
            fail("%s: budget kind %r" % (where, r["budget"]))
    if r["within_budget"] not in (True, False, None):
        fail("%s: within_budget %r" % (where, r["within_budget"]))


def main(argv):
    if len(argv) < 2:
        fail(__doc__)
    opts = {"--svg": None, "--suites": "", "--only": "", "--cases": "",
            "--ok": "", "--raw": ""}
    args = argv[2:]
    while args:
        if args[0] not in opts or len(args) < 2:
            fail("bad arguments: %r" % args)
        opts[args[0]] = args[1]
        args = args[2:]
    with open(argv[1], encoding="utf-8") as f:
        try:
            doc = json.load(f)
        except ValueError as e:
            fail("invalid JSON: %s" % e)
    if doc.get("schema_version") != 1:
        fail("schema_version %r" % doc.get("schema_version"))
    for key in ("tool", "accel_version", "date", "mode", "command_line",
                "machine", "device", "results", "pending", "failures"):
        if key not in doc:
            fail("document lacks %s" % key)
    if not isinstance(doc["command_line"], list) or not doc["command_line"]:
        fail("command_line is not a non-empty list")
    for key in ("cpu_model", "cpu_cores", "kernel"):
        if key not in doc["machine"]:
            fail("machine lacks %s" % key)
    for key in ("uri", "backend", "name", "total_memory_bytes"):
        if key not in doc["device"]:
            fail("device lacks %s" % key)
    if doc["failures"] != 0:
        fail("failures = %r" % doc["failures"])
    for i, r in enumerate(doc["results"]):
        check_result(i, r)
    suites = {r["suite"] for r in doc["results"]}
    cases = {r["case"] for r in doc["results"]}
    for s in filter(None, opts["--suites"].split(",")):
        if s not in suites:
            fail("no result from suite %s (have %s)" % (s, sorted(suites)))
    only = set(filter(None, opts["--only"].split(",")))
    if only and not suites <= only:
        fail("results from unexpected suites %s" % sorted(suites - only))
    for c in filter(None, opts["--cases"].split(",")):
        if c not in cases:
            fail("no result for case %s (have %s)" % (c, sorted(cases)))
    ran = {"%s/%s" % (r["suite"], r["case"]) for r in doc["results"]
           if r["outcome"] == "ok"}
    for c in filter(None, opts["--ok"].split(",")):
        if c not in ran:
            fail("no result for %s ran (ok: %s)" % (c, sorted(ran)))
    for item in filter(None, opts["--raw"].split(",")):
        case, _, name = item.partition(":")
        got = [r["baseline"]["name"] for r in doc["results"]
               if "%s/%s" % (r["suite"], r["case"]) == case
               and r["outcome"] == "ok" and r["baseline"] is not None]
        if not any(name in g for g in got):
            notes = [r["note"] for r in doc["results"]
                     if "%s/%s" % (r["suite"], r["case"]) == case]
            fail("no result for %s with a %s baseline (notes: %s)"
                 % (case, name, notes))
    if opts["--svg"]:
        try:
            svg = xml.dom.minidom.parse(opts["--svg"])
        except Exception as e:  # expat raises several types
            fail("SVG is not well-formed XML: %s" % e)
        if svg.documentElement.tagName != "svg":
            fail("SVG root is <%s>" % svg.documentElement.tagName)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
