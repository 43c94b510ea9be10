# SPDX-License-Identifier: MIT
"""Validates accel-info --json output (schema_version 1) and checks facts.

Usage: info_check_json.py FILE [CHECK...]

The whole schema is checked every time: every key documented in
docs/accel-info.md, with its JSON type, and nothing else. CHECKs:
  device=ID                 a device with this id is listed
  no_device=ID              no device with this id is listed
  devices=N                 exactly N devices
  selected=ID               selected.device is ID ("null" for null)
  selected=auto             selected.device is what `auto` must pick here:
                            a GPU device when any is listed (a GPU node),
                            else cpu:0
  selected_error~TEXT       selected.error contains TEXT
  backend_env=VALUE         selected.backend_env is VALUE ("null" for null)
  plugin:FILE:KEY=VALUE     the plugin whose path ends in /FILE has KEY
                            equal to VALUE (compared as a string)
  plugin:FILE:KEY~TEXT      ... KEY contains TEXT
  plugin:FILE:KEY/REGEX     ... KEY matches REGEX (re.search)
  error:FILE~TEXT           an errors[] entry for that plugin contains TEXT
  error~TEXT                some errors[] message contains TEXT
  errors=N                  exactly N errors
  search_origin=ORIGIN      some search_path entry has this origin
Exits 0 if everything holds, 1 with a message otherwise.
"""
import json
import re
import sys

STATES = {"ok", "unavailable", "failed", "crashed", "timed_out", "excluded",
          "shadowed"}
STAGES = {"found", "opened", "entry", "negotiated", "initialised"}
ORIGINS = {"api", "env", "install_dir"}
STR, INT, NULLSTR = "string", "integer", "string or null"

TOP = {"schema_version": INT, "accel_version": STR,
       "plugin_abi_version": INT, "plugins": list, "devices": list,
       "selected": dict, "search_path": list, "errors": list,
       "hidden_devices": list, "comm_engines": list}
PLUGIN = {"name": NULLSTR, "path": STR, "source": NULLSTR, "origin": STR,
          "version": NULLSTR, "abi_version": INT, "abi_minor": INT,
          "stage": STR, "state": STR,
          "status": STR, "message": STR, "device_count": INT,
          "priority": INT}
DEVICE = {"id": STR, "backend": STR, "index": INT, "type": STR, "name": STR,
          "vendor": STR, "arch": STR, "total_memory_bytes": INT,
          "free_memory_bytes": INT, "compute_units": INT,
          "max_threads_per_block": INT, "simd_width": INT,
          "capabilities": list, "features": STR, "uuid": NULLSTR,
          "pci_bus_id": NULLSTR, "driver_version": STR,
          "module_target": STR, "module_formats": list,
          "max_alloc_size_bytes": INT}
SELECTED = {"device": NULLSTR, "backend_env": NULLSTR, "status": NULLSTR,
            "error": NULLSTR}
SEARCH = {"path": STR, "origin": STR}
ERROR = {"plugin": NULLSTR, "message": STR}
ENGINE = {"name": STR, "path": STR, "status": STR, "message": STR}


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def check_type(where, value, kind):
    ok = {
        STR: isinstance(value, str),
        NULLSTR: value is None or isinstance(value, str),
        # bool is an int in Python; JSON true is not a number.
        INT: isinstance(value, int) and not isinstance(value, bool),
        list: isinstance(value, list),
        dict: isinstance(value, dict),
    }[kind]
    if not ok:
        fail("%s: %r is not of type %s" % (where, value, kind))


def check_object(where, obj, spec):
    check_type(where, obj, dict)
    if set(obj) != set(spec):
        fail("%s: keys %s, want %s" % (where, sorted(obj), sorted(spec)))
    for key, kind in spec.items():
        check_type(where + "." + key, obj[key], kind)


def check_schema(doc):
    check_object("top", doc, TOP)
    if doc["schema_version"] != 1:
        fail("schema_version is %r" % doc["schema_version"])
    if not re.fullmatch(r"\d+\.\d+\.\d+", doc["accel_version"]):
        fail("accel_version %r" % doc["accel_version"])
    for i, p in enumerate(doc["plugins"]):
        where = "plugins[%d]" % i
        check_object(where, p, PLUGIN)
        if p["state"] not in STATES or p["stage"] not in STAGES:
            fail("%s: state %r stage %r" % (where, p["state"], p["stage"]))
        if p["state"] == "ok" and p["abi_version"] == 1 and \
                not 0 <= p["abi_minor"] <= 99:
            fail("%s: abi_minor %r" % (where, p["abi_minor"]))
        if p["origin"] not in ORIGINS:
            fail("%s: origin %r" % (where, p["origin"]))
        if not p["status"].startswith("ACCEL_"):
            fail("%s: status %r" % (where, p["status"]))
        if (p["state"] == "ok") != (p["status"] == "ACCEL_OK"):
            fail("%s: state %r vs status %r" % (where, p["state"],
                                                 p["status"]))
    for i, d in enumerate(doc["devices"]):
        where = "devices[%d]" % i
        check_object(where, d, DEVICE)
        if d["id"] != "%s:%d" % (d["backend"], d["index"]):
            fail("%s: id %r vs backend/index" % (where, d["id"]))
        if d["type"] not in {"cpu", "gpu", "other"}:
            fail("%s: type %r" % (where, d["type"]))
        if d["free_memory_bytes"] > d["total_memory_bytes"]:
            fail("%s: free > total memory" % where)
        for c in d["capabilities"]:
            check_type(where + ".capabilities[]", c, STR)
        for f in d["module_formats"]:
            check_type(where + ".module_formats[]", f, STR)
            if not f or " " in f:
                fail("%s: module format %r" % (where, f))
        if d["max_alloc_size_bytes"] < 0:
            fail("%s: max_alloc_size_bytes %r" % (where,
                                                  d["max_alloc_size_bytes"]))
        if d["type"] == "cpu" and d["backend"] == "cpu" and \
                not d["module_target"].startswith("elf-"):
            fail("%s: cpu module_target %r" % (where, d["module_target"]))
        if d["uuid"] is not None and not re.fullmatch(r"[0-9a-f]{32}",
                                                      d["uuid"]):
            fail("%s: uuid %r" % (where, d["uuid"]))
    check_object("selected", doc["selected"], SELECTED)
    if (doc["selected"]["device"] is None) == (doc["selected"]["error"] is
                                               None):
        fail("selected: exactly one of device and error must be set")
    for i, s in enumerate(doc["search_path"]):
        check_object("search_path[%d]" % i, s, SEARCH)
        if s["origin"] not in ORIGINS:
            fail("search_path[%d]: origin %r" % (i, s["origin"]))
    for i, e in enumerate(doc["comm_engines"]):
        check_object("comm_engines[%d]" % i, e, ENGINE)
        if not e["status"].startswith("ACCEL_"):
            fail("comm_engines[%d]: status %r" % (i, e["status"]))
    for i, e in enumerate(doc["errors"]):
        check_object("errors[%d]" % i, e, ERROR)
    # Every failed, crashed or timed-out plugin is also an error.
    bad = {p["path"] for p in doc["plugins"]
           if p["state"] in {"failed", "crashed", "timed_out"}}
    listed = {e["plugin"] for e in doc["errors"]}
    if not bad <= listed:
        fail("plugins %s failed but are not in errors" % sorted(bad - listed))


def find_plugin(doc, name):
    found = [p for p in doc["plugins"]
             if p["path"] == name or p["path"].endswith("/" + name)]
    if len(found) != 1:
        fail("want one plugin %r, found %d in %s" %
             (name, len(found), [p["path"] for p in doc["plugins"]]))
    return found[0]


def as_text(value):
    return "null" if value is None else str(value)


def compare(what, value, op, want):
    text = as_text(value)
    ok = {"=": text == want, "~": want in text,
          "/": re.search(want, text) is not None}[op]
    if not ok:
        fail("%s is %r; want %s %r" % (what, value, op, want))


def run_check(doc, check):
    ids = [d["id"] for d in doc["devices"]]
    m = re.fullmatch(r"plugin:([^:]+):(\w+)([=~/])(.*)", check, re.S)
    if m:
        p = find_plugin(doc, m.group(1))
        if m.group(2) not in p:
            fail("no plugin key %r" % m.group(2))
        compare("%s.%s" % (m.group(1), m.group(2)), p[m.group(2)],
                m.group(3), m.group(4))
        return
    m = re.fullmatch(r"error:([^~]+)~(.*)", check, re.S)
    if m:
        path = find_plugin(doc, m.group(1))["path"]
        msgs = [e["message"] for e in doc["errors"] if e["plugin"] == path]
        if not any(m.group(2) in x for x in msgs):
            fail("no error for %s containing %r in %r" %
                 (m.group(1), m.group(2), msgs))
        return
    key, op, want = re.fullmatch(r"(\w+)([=~])(.*)", check, re.S).groups()
    if key == "device":
        if want not in ids:
            fail("device %r not in %r" % (want, ids))
    elif key == "no_device":
        if want in ids:
            fail("device %r listed" % want)
    elif key == "devices":
        compare("device count", len(ids), "=", want)
    elif key == "selected" and op == "=" and want == "auto":
        gpus = [d["id"] for d in doc["devices"] if d["type"] == "gpu"]
        got = doc["selected"]["device"]
        if (gpus and got not in gpus) or (not gpus and got != "cpu:0"):
            fail("selected.device is %r; auto must pick %s" %
                 (got, "one of %r" % gpus if gpus else "cpu:0"))
    elif key == "selected":
        compare("selected.device", doc["selected"]["device"], op, want)
    elif key == "selected_error":
        compare("selected.error", doc["selected"]["error"], op, want)
    elif key == "backend_env":
        compare("selected.backend_env", doc["selected"]["backend_env"], op,
                want)
    elif key == "error":
        msgs = [e["message"] for e in doc["errors"]]
        if not any(want in x for x in msgs):
            fail("no error containing %r in %r" % (want, msgs))
    elif key == "errors":
        compare("error count", len(doc["errors"]), "=", want)
    elif key == "search_origin":
        if want not in [s["origin"] for s in doc["search_path"]]:
            fail("no search_path origin %r" % want)
    else:
        fail("unknown check %r" % check)


def main():
    with open(sys.argv[1], "rb") as f:
        raw = f.read()
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        fail("not valid JSON: %s\n%s" % (e, raw[:2000]))
    check_schema(doc)
    for check in sys.argv[2:]:
        run_check(doc, check)
    print("json ok: %d plugins, %d devices, %d checks" %
          (len(doc["plugins"]), len(doc["devices"]), len(sys.argv) - 2))


if __name__ == "__main__":
    main()
