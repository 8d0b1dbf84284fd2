#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Reads the host trace of a `convert --lttng` experiment with babeltrace2's
Python API (bt2), replays the Trace Compass data-driven analysis the project
ships (docs/tracecompass/hypertrace-boot.xml) over its events, and checks the
time graph it gives against `report`'s view of the same trace file.

    check_lttng_boot.py EXPERIMENT ANALYSIS.xml [--boot BOOT.csv] [--initcalls INITCALLS.csv]

- The replay follows Trace Compass's XML state provider as its source is
  written (eclipse-tracecompass/org.eclipse.tracecompass at 14360afb): each
  event runs the stateChanges of every eventHandler of its name, in order; a
  path is built from constant, eventField and location stateAttributes; a
  value is null, a constant or an event field (the field's name without the
  leading underscore, CtfTmfEventField:87). The state system keeps what
  TransientState.processStateChange (TransientState.java:315-344) keeps: a
  change to the value an attribute holds does nothing; otherwise the interval
  [start, t - 1] of the value held, if it started before t, and the new value
  from t; two changes at one time leave the last. Anything else in the
  analysis (conditions, future times, stacks, scripts) fails the check: the
  replay would not be Trace Compass's.
- The time graph view (timeGraphView) is replayed as XmlTimeGraphDataProvider
  and XmlTimeGraphEntryModel build it: an entry per attribute its path
  matches ("*" any name), named by the first non-null value of its name
  attribute, one row per display attribute, a state per non-null interval.
- Each VM's row "boot phases" holds report --boot --csv's phases (BOOT.csv),
  one for one, in order: name, start (start_ns) and length to the ns; its
  row "initcall levels" report --initcalls --csv's levels (INITCALLS.csv);
  its rows "initcalls", "initcalls 2", ... together its initcalls that
  returned, named by the function and " [module]". The VM's entry is named
  as Perfetto names its process ("VM NAME (pid N)", the name escaped as
  report writes it). A slice of no length is no state in Trace Compass: it
  is checked by its events only.
- The events themselves: each slice's begin and end events, paired on its
  VM and track, carry the slice's arguments as Perfetto's do: a phase's
  start uncertainty, exactness, exits, vCPU time per state, first RIP and
  vCPU; a level's initcalls and guest tid; an initcall's level, guest tid,
  CPU and (its end) ret. An instant hypertrace_boot_ended at the end of the
  last phase of a VM whose vCPU threads ended (none where they did not; a
  pid given to a new VM process: each process's boot in turn), and
  a hypertrace_initcall_no_return "NAME (no return)" at the start of each
  initcall without its return.
- Without --boot (--initcalls) there must be no boot (initcall) events.

Times are the trace clock's values (CLOCK_MONOTONIC, as report's start_ns);
Trace Compass adds the clock's offset to every one alike.
"""
import collections
import csv
import fnmatch
import os
import sys
import xml.etree.ElementTree as ET

import bt2

STATES = ("guest", "kvm", "vmm", "wait", "halted", "blocked")


def fail(msg):
    print(f"check_lttng_boot: {msg}")
    sys.exit(1)


def value_of(field):
    """A bt2 field as Python: integers and strings."""
    if isinstance(field, bt2._StringFieldConst):
        return str(field)
    return int(field)


def read_events(host):
    """The host trace's boot stream events: [(ts, name, {field: value})], in the trace's order."""
    out = []
    for msg in bt2.TraceCollectionMessageIterator(host):
        if type(msg) is not bt2._EventMessageConst:
            continue
        ev = msg.event
        if not ev.name.startswith(("hypertrace_boot_", "hypertrace_initcall")):
            continue
        fields = {k: value_of(v) for k, v in ev.payload_field.items()}
        out.append((msg.default_clock_snapshot.value, ev.name, fields))
    return out


class Analysis:
    """The XML's state provider and time graph view, as far as the replay supports them."""

    def __init__(self, path):
        root = ET.parse(path).getroot()
        providers = root.findall("stateProvider")
        views = root.findall("timeGraphView")
        if len(providers) != 1 or len(views) != 1:
            fail(f"{path}: {len(providers)} state providers and {len(views)} time graph views, the replay takes one of each")
        self.provider, self.view = providers[0], views[0]
        analysis = [a.get("id") for a in self.view.findall("head/analysis")]
        if analysis != [self.provider.get("id")]:
            fail(f"the view reads analyses {analysis}, the state provider is {self.provider.get('id')}")
        self.locations = {loc.get("id"): list(loc) for loc in self.provider.findall("location")}
        self.handlers = collections.defaultdict(list)
        for h in self.provider.findall("eventHandler"):
            self.handlers[h.get("eventName")].append(h)
        for child in self.provider:
            if child.tag not in ("head", "location", "eventHandler"):
                fail(f"<{child.tag}> in the state provider: the replay does not follow it")

    def changes(self, name, fields):
        """The (path, value) changes an event makes, in order."""
        out = []
        for pattern, handlers in self.handlers.items():
            # TmfXmlEventHandler: an eventName ending in "*" matches by prefix, else exactly.
            if not (name == pattern or (pattern.endswith("*") and name.startswith(pattern[:-1]))):
                continue
            for h in handlers:
                for sc in h.findall("stateChange"):
                    tags = [c.tag for c in sc]
                    if set(tags) - {"stateAttribute", "stateValue"} or tags.count("stateValue") != 1:
                        fail(f"a stateChange of {pattern} with {tags}: the replay follows only path = value")
                    path = []
                    for a in sc.findall("stateAttribute"):
                        path += self.attribute(a, fields)
                    out.append((tuple(path), self.value(sc.find("stateValue"), fields)))
        return out

    def attribute(self, a, fields):
        kind, v = a.get("type"), a.get("value")
        if kind == "constant":
            return [v]
        if kind == "eventField":
            if v not in fields:
                fail(f"an attribute names field {v}, which the event has not")
            return [str(fields[v])]
        if kind == "location":
            return [p for sub in self.locations[v] for p in self.attribute(sub, fields)]
        fail(f"a stateAttribute of type {kind}: the replay does not follow it")

    @staticmethod
    def value(sv, fields):
        if any(sv.get(k) for k in ("increment", "update", "stack", "forcedType", "mappingGroup")) or len(sv):
            fail(f"a stateValue with {sv.attrib} {[c.tag for c in sv]}: the replay does not follow it")
        kind, v = sv.get("type"), sv.get("value")
        if kind == "null":
            return None
        if kind == "string":
            return v
        if kind in ("int", "long"):
            return int(v)
        if kind == "eventField":
            if v not in fields:
                fail(f"a value names field {v}, which the event has not")
            return fields[v]
        fail(f"a stateValue of type {kind}: the replay does not follow it")


def replay(analysis, events):
    """TransientState.processStateChange over every change: {path: [(start, end_excl, value)]} of non-null values."""
    ongoing, intervals = {}, collections.defaultdict(list)
    for ts, name, fields in events:
        for path, value in analysis.changes(name, fields):
            start, held = ongoing.get(path, (None, None))
            if path in ongoing and held == value:
                continue
            if start is None or start < ts:
                if held is not None:
                    intervals[path].append((start, ts, held))
                ongoing[path] = (ts, value)
            else:
                ongoing[path] = (start, value)
    for path, (start, held) in ongoing.items():
        if held is not None and path[-1] != "name":
            fail(f"attribute {'/'.join(path)} still holds {held!r} at the end of the trace: a slice that never ends")
        if held is not None:
            intervals[path].append((start, None, held))
    return intervals


def time_graph(view, intervals):
    """The view's entries: {entry name: {row name: [(start, end_excl, label)]}}."""
    attrs = set(intervals)

    def match(prefix, pattern):
        depth = len(prefix) + len(pattern.split("/"))
        return sorted({p[:depth] for p in attrs if len(p) >= depth and p[:len(prefix)] == prefix and
                       all(fnmatch.fnmatchcase(n, g) for n, g in zip(p[len(prefix):depth], pattern.split("/")))})

    out = {}
    for top in view.findall("entry"):
        for base in match((), top.get("path")):
            name_el = top.find("name")
            label = "/".join(base)
            if name_el is not None:
                if name_el.get("type") != "constant":
                    fail("an entry named other than by a constant attribute: the replay does not follow it")
                named = intervals.get(base + (name_el.get("value"),), [])
                label = str(named[0][2]) if named else label
            rows = {}
            for child in top.findall("entry"):
                if child.find("display") is None or child.find("display").get("type") != "self":
                    fail("a row displayed other than by itself: the replay does not follow it")
                for row in match(base, child.get("path")):
                    rows[row[-1]] = [(a, b, v) for a, b, v in intervals[row]]
            if label in out:
                fail(f"two entries are named {label!r}")
            out[label] = rows
    return out


def vm_label(pid, name):
    return f"VM {name} (pid {pid})" if name else f"VM process {pid}"


def paired(events, begin, end, key):
    """Begin and end events paired on their VM and track: [(start, end, begin fields, end fields)] per VM."""
    open_, out = {}, collections.defaultdict(list)
    for ts, name, f in events:
        if name == begin:
            k = (f["vm_pid"],) + key(f)
            if k in open_:
                fail(f"{name} at {ts} on {k} while the slice begun at {open_[k][0]} is open")
            open_[k] = (ts, f)
        elif name == end:
            k = (f["vm_pid"],) + key(f)
            if k not in open_:
                fail(f"{name} at {ts} on {k} with no slice open")
            start, bf = open_.pop(k)
            out[f["vm_pid"]].append((start, ts, bf, f))
    if open_:
        fail(f"slices begun and never ended: {sorted(open_)}")
    return out


def check_boots(events, rows, graph):
    """The phases' events and rows against report --boot --csv; a summary."""
    want = collections.defaultdict(list)
    for r in rows:
        want[int(r["pid"])].append(r)
    slices = paired(events, "hypertrace_boot_phase_begin", "hypertrace_boot_phase_end", lambda f: ())
    ended = collections.defaultdict(list)
    for ts, name, f in events:
        if name == "hypertrace_boot_ended":
            ended[f["vm_pid"]].append((ts, f["vm"], f["phase"]))
    if sorted(slices) != sorted(want) or set(ended) - set(want):
        fail(f"boot events of VMs {sorted(slices)} (ended {sorted(ended)}), report --boot --csv has {sorted(want)}")
    phases = 0
    for pid, rs in want.items():
        label = vm_label(pid, rs[0]["vm_name"])
        got = [(b["phase"], e["phase"], b["vm"], start, end - start, b["start_uncertainty_ns"], b["start_exact"],
                b["exits"], [b[s + "_ns"] for s in STATES], b["first_rip"], b["first_vcpu"])
               for start, end, b, e in slices[pid]]
        exp = [(r["phase"], r["phase"], label, int(r["start_ns"]), int(r["length_ns"]), int(r["start_uncertainty_ns"]),
                int(r["start_exact"]), int(r["exits"]), [int(r[s + "_ns"]) for s in STATES], int(r["first_rip"], 16),
                int(r["first_vcpu"])) for r in rs]
        if got != exp:
            fail(f"VM {pid}: boot phase events {got}, report --boot --csv says {exp}")
        # A pid given to a new VM process holds each process's boot in turn, each from its firmware.
        want_ended = [(int(r["start_ns"]) + int(r["length_ns"]), label, r["phase"]) for i, r in enumerate(rs)
                      if r["ended"] == "1" and (i + 1 == len(rs) or rs[i + 1]["phase"] == "firmware")]
        if ended.get(pid, []) != want_ended:
            fail(f"VM {pid}: boot ended {ended.get(pid, [])}, want {want_ended}")
        row = graph.get(label, {}).get("boot phases", [])
        exp_row = [(int(r["start_ns"]), int(r["start_ns"]) + int(r["length_ns"]), r["phase"]) for r in rs
                   if int(r["length_ns"])]
        if row != exp_row:
            fail(f"Trace Compass's row 'boot phases' of {label!r}: {row}, report --boot --csv says {exp_row}")
        phases += len(rs)
    boots_told = sum(r["phase"] == "firmware" for r in rows)  # each VM process's boot begins with its firmware
    return f"{phases} boot phases of {boots_told} VMs = report --boot --csv, as states of their rows and as events"


def check_initcalls(events, rows, graph):
    """The levels' and initcalls' events and rows against report --initcalls --csv; a summary."""
    want = collections.defaultdict(lambda: ([], [], []))
    names = {}
    for r in rows:
        pid = int(r["pid"])
        names[pid] = r["vm_name"]
        levels, calls, instants = want[pid]
        start = int(r["start_ns"])
        if r["kind"] == "level":
            levels.append((start, start + int(r["length_ns"]), r["name"], int(r["initcalls"]), int(r["tid"])))
            continue
        name = r["name"] + (f" [{r['module']}]" if r["module"] else "")
        if r["finished"] == "1":
            calls.append((start, start + int(r["length_ns"]), name, r["level"], int(r["tid"]), int(r["cpu"]),
                          int(r["ret"])))
        else:
            instants.append((start, name + " (no return)", r["level"], int(r["tid"]), int(r["cpu"])))
    lv = paired(events, "hypertrace_initcall_level_begin", "hypertrace_initcall_level_end", lambda f: ())
    ic = paired(events, "hypertrace_initcall_begin", "hypertrace_initcall_end", lambda f: (f["track"],))
    nr = collections.defaultdict(list)
    for ts, name, f in events:
        if name == "hypertrace_initcall_no_return":
            nr[f["vm_pid"]].append((ts, f["name"], f["level"], f["guest_tid"], f["cpu"]))
    if sorted(set(lv) | set(ic) | set(nr)) != sorted(want):
        fail(f"initcall events of VMs {sorted(set(lv) | set(ic) | set(nr))}, report --initcalls --csv has {sorted(want)}")
    nlevels = ncalls = ninstants = 0
    tracks = set()
    for pid, (levels, calls, instants) in want.items():
        label = vm_label(pid, names[pid])
        got_levels = [(s, e, b["level"], b["initcalls"], b["guest_tid"]) for s, e, b, ef in lv[pid]
                      if b["level"] == ef["level"] and b["vm"] == label]
        if got_levels != levels:
            fail(f"VM {pid}: level events {lv[pid]}, report --initcalls --csv says {levels}")
        got_calls = sorted((s, e, b["name"], b["level"], b["guest_tid"], b["cpu"], ef["ret"]) for s, e, b, ef in ic[pid]
                           if b["name"] == ef["name"] and b["vm"] == label)
        if got_calls != sorted(calls):
            fail(f"VM {pid}: initcall events {ic[pid]}, report --initcalls --csv says {sorted(calls)}")
        if sorted(nr[pid]) != sorted(instants):
            fail(f"VM {pid}: initcalls without their return {nr[pid]}, report --initcalls --csv says {instants}")
        rows_of = graph.get(label, {})
        exp_levels = [(s, e, n) for s, e, n, _, _ in levels if e > s]
        if rows_of.get("initcall levels", []) != exp_levels:
            fail(f"Trace Compass's row 'initcall levels' of {label!r}: {rows_of.get('initcall levels')}, "
                 f"report --initcalls --csv says {exp_levels}")
        lanes = sorted(r for r in rows_of if r == "initcalls" or r.startswith("initcalls "))
        got_rows = sorted(st for r in lanes for st in rows_of[r])
        exp_rows = sorted((s, e, n) for s, e, n, *_ in calls if e > s)
        if got_rows != exp_rows:
            fail(f"Trace Compass's rows {lanes} of {label!r}: {got_rows}, report --initcalls --csv says {exp_rows}")
        tracks |= {(pid, r) for r in lanes}
        if "initcall levels" in rows_of:
            tracks.add((pid, "initcall levels"))
        nlevels += len(levels)
        ncalls += len(calls)
        ninstants += len(instants)
    return (f"{nlevels} levels, {ncalls} initcalls and {ninstants} without their return on {len(tracks)} rows of "
            f"{len(want)} VMs = report --initcalls --csv, as states of their rows and as events")


def read_csv(path):
    if not path:
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def main():
    args = sys.argv[1:]
    opts = {}
    for opt in ("--boot", "--initcalls"):
        if opt in args:
            i = args.index(opt)
            opts[opt] = args[i + 1]
            del args[i:i + 2]
    if len(args) != 2:
        sys.exit(__doc__)
    exp, xml = args
    events = read_events(os.path.join(exp, "host"))
    analysis = Analysis(xml)
    intervals = replay(analysis, events)
    graph = time_graph(analysis.view, intervals)
    print(f"  Trace Compass's time graph: {len(graph)} VM entries, "
          f"{sum(len(r) for r in graph.values())} rows, {sum(len(s) for r in graph.values() for s in r.values())} states")
    boot = check_boots(events, read_csv(opts.get("--boot")), graph)
    initcalls = check_initcalls(events, read_csv(opts.get("--initcalls")), graph)
    # Every row is one of the checked ones.
    for label, rows in graph.items():
        for row in rows:
            if row not in ("boot phases", "initcall levels") and not (row == "initcalls" or row.startswith("initcalls ")):
                fail(f"entry {label!r} has a row {row!r} nothing checks")
    if "--boot" in opts:
        print(f"  boots: {boot}")
    if "--initcalls" in opts:
        print(f"  initcalls: {initcalls}")
    print("check_lttng_boot: OK")


if __name__ == "__main__":
    main()
