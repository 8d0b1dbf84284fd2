#!/usr/bin/python3
"""Checks a Chrome trace JSON file as Chrome DevTools' trace engine parses it
(check_chrome.mjs) against `hypertrace-bpf report --csv` of the same records:
one slice per hypercall on its vCPU thread's track in its VM process, with the
two phases nested in it, durations to the ns, start times on one clock, args
(64-bit values exact), and process/thread names. The times are also read as
Perfetto reads them, from the text to the ns.

With --boot, it checks instead the VMs' boot phases (record --boot) against
`report --boot --csv` of the same file: per VM a track "boot phases" in its
VM process, a root slice per reached phase with the phase's name, start and
length to the ns (on the hypercall slices' clock) and its numbers as args,
one after the other, and an instant "boot ended" where its vCPU threads
ended, none if they did not (a pid given to a new VM process: each
process's boot in turn, each ended where its own did).

With --initcalls, it checks a guest's initcalls (its own boot-time trace,
replayed by guest/boottrace) against `report --initcalls --csv`: per VM a
track "initcall levels" in its VM process with a root slice per level (its
name, start and length to the ns, on the hypercall slices' clock), and
tracks "initcalls", "initcalls 2", ... with a root slice per initcall that
returned (named by the function and " [module]", start and length to the
ns, level, ret, guest tid and CPU as args; no two on a track overlapping)
and an instant "NAME (no return)" per initcall without its return, at its
start; none of these tracks for a VM the CSV does not have.

usage: check_chrome.py ENGINE_DIR TRACE.json CSV
       check_chrome.py ENGINE_DIR TRACE.json --boot BOOT_CSV
       check_chrome.py ENGINE_DIR TRACE.json --initcalls INITCALLS_CSV
"""
import re
import csv
import decimal
import json
import os
import subprocess
import sys


def check_text_to_the_ns(trace, csv_path):
    """Perfetto reads ts and dur as text, to the ns, dropping further digits:
    read that way, every slice must have the record's times exactly."""
    rows = {}
    with open(csv_path, newline="") as f:
        for row in csv.DictReader(f):
            rows[(int(row["host_tid"]), row["exit_ns"])] = row
    events = json.load(open(trace), parse_float=decimal.Decimal)["traceEvents"]
    ns = lambda text: int(decimal.Decimal(text) * 1000)  # int() truncates, as Perfetto
    errors, offsets = [], set()
    for i, e in enumerate(events):
        if e["ph"] != "X" or "args" not in e:
            continue
        row = rows.get((e["tid"], e["args"]["exit_ns"]))
        if row is None:
            errors.append("text: slice tid %d exit_ns %s not in the CSV" % (e["tid"], e["args"]["exit_ns"]))
            continue
        exit_phase, hcall_phase = events[i + 1], events[i + 2]
        got = (ns(e["dur"]), ns(exit_phase["dur"]), ns(hcall_phase["dur"]),
               ns(hcall_phase["ts"]) - ns(e["ts"]), ns(exit_phase["ts"]) - ns(e["ts"]))
        exp = (int(row["total_ns"]), int(row["exit_to_hcall_ns"]), int(row["hcall_to_entry_ns"]),
               int(row["exit_to_hcall_ns"]), 0)
        if got != exp:
            errors.append("text: slice tid %d exit_ns %s: %s, want %s" % (e["tid"], row["exit_ns"], got, exp))
        offsets.add(ns(e["ts"]) - int(row["exit_ns"]))
    if len(offsets) > 1:
        errors.append("text: slice starts are not exit_ns on one clock")
    return errors


STATES = ("guest", "kvm", "vmm", "wait", "halted", "blocked")


def check_boot(parsed, boot_csv):
    """The boot phases as the engine read them, against report --boot --csv."""
    want = {}
    with open(boot_csv, newline="") as f:
        for row in csv.DictReader(f):
            want.setdefault(int(row["pid"]), []).append(row)
    errors, offsets, phases, boots = [], set(), 0, 0
    # The hypercall slices' clock: their start is exit_ns shifted by the recording's start.
    for thread in parsed["threads"]:
        for e in thread["entries"]:
            if e["name"].startswith("hypercall ") and e["args"] and "exit_ns" in e["args"]:
                offsets.add(round(e["ts"] * 1000) - int(e["args"]["exit_ns"]))
    tracks = [t for t in parsed["threads"] if t["name"] == "boot phases"]
    if sorted(t["pid"] for t in tracks) != sorted(want):
        errors.append("boot tracks of processes %s, report --boot --csv has %s"
                      % (sorted(t["pid"] for t in tracks), sorted(want)))
    for t in tracks:
        rows = want.get(t["pid"], [])
        slices = [e for e in t["entries"] if e["name"] != "boot ended"]
        ended = [e for e in t["entries"] if e["name"] == "boot ended"]
        got = [(e["name"], round(e["ts"] * 1000), round(e["dur"] * 1000), e["parent"],
                e["args"]["start_uncertainty_ns"], e["args"]["exits"],
                [e["args"][s + "_ns"] for s in STATES]) for e in slices]
        exp = [(r["phase"], int(r["start_ns"]), int(r["length_ns"]), None, int(r["start_uncertainty_ns"]),
                int(r["exits"]), [int(r[s + "_ns"]) for s in STATES]) for r in rows]
        # Starts on one clock: each slice's ts less its phase's start_ns is the hypercalls' shift.
        for g, r in zip(got, rows):
            offsets.add(g[1] - int(r["start_ns"]))
        if len(offsets) > 1 or [g[:1] + g[2:] for g in got] != [x[:1] + x[2:] for x in exp]:
            errors.append("process %d: boot slices %s, want %s (starts less start_ns: %s)"
                          % (t["pid"], got, exp, sorted(offsets)))
        phases += len(slices)
        # A pid given to a new VM process holds each process's boot in turn, each from its firmware:
        # an instant at the end of the last phase of each that ended.
        want_ended = [(round((s["ts"] + s["dur"]) * 1000), r["phase"]) for i, (s, r) in enumerate(zip(slices, rows))
                      if r["ended"] == "1" and (i + 1 == len(rows) or rows[i + 1]["phase"] == "firmware")]
        boots += sum(r["phase"] == "firmware" for r in rows)
        if [(round(e["ts"] * 1000), e["args"]["phase"]) for e in ended] != want_ended:
            errors.append("process %d: boot ended %s, report --boot --csv says %s"
                          % (t["pid"], [(e["ts"], e["args"]) for e in ended], want_ended))
        if parsed["processNames"].get(str(t["pid"])) != "VM process %d" % t["pid"]:
            errors.append("process %d named %r" % (t["pid"], parsed["processNames"].get(str(t["pid"]))))
    if parsed["warnings"]:
        errors.append("trace engine warnings: %s" % parsed["warnings"])
    for e in errors[:10]:
        print("    " + e)
    if errors:
        return 1
    print("    the trace engine read %d boot phases of %d VMs, all match report --boot --csv" % (phases, boots))
    return 0


def shown(name):
    """A name as report escapes it for text (HT_ESC_TEXT, common/escape.h), from the valid UTF-8 the JSON held."""
    out = []
    for ch in name:
        o = ord(ch)
        if o < 0x20 or o == 0x7f:
            out.append("\\x%02x" % o)
        elif ch == "\\":
            out.append("\\\\")
        elif 0x80 <= o <= 0x9f or o in (0x061c, 0x200e, 0x200f, 0x2028, 0x2029) or 0x202a <= o <= 0x202e \
                or 0x2066 <= o <= 0x2069:
            out.append("\\u%04x" % o)
        else:
            out.append(ch)
    return "".join(out)


def check_initcalls(parsed, csv_path):
    """The initcall tracks as the engine read them, against report --initcalls --csv."""
    levels, calls = {}, {}
    with open(csv_path, newline="") as f:
        for r in csv.DictReader(f):
            pid = int(r["pid"])
            levels.setdefault(pid, [])
            calls.setdefault(pid, [])
            if r["kind"] == "level":
                levels[pid].append((r["name"], int(r["start_ns"]), int(r["length_ns"])))
                continue
            name = r["name"] + (" [%s]" % r["module"] if r["module"] else "")
            args = {"level": r["level"], "guest_tid": int(r["tid"]), "cpu": int(r["cpu"])}
            if r["finished"] == "1":
                calls[pid].append(("slice", name, int(r["start_ns"]), int(r["length_ns"]),
                                   dict(args, ret=int(r["ret"]))))
            else:
                calls[pid].append(("instant", name + " (no return)", int(r["start_ns"]), 0, args))
    errors, offsets = [], set()
    # The hypercall slices' clock: their start is exit_ns shifted by the recording's start.
    for thread in parsed["threads"]:
        for e in thread["entries"]:
            if e["name"].startswith("hypercall ") and e["args"] and "exit_ns" in e["args"]:
                offsets.add(round(e["ts"] * 1000) - int(e["args"]["exit_ns"]))
    if len(offsets) != 1:
        errors.append("no single clock of the hypercall slices to put the initcalls on: %s" % sorted(offsets))
    shift = offsets.pop() if len(offsets) == 1 else 0
    ns = lambda us: round(us * 1000)
    tracks = [t for t in parsed["threads"] if re.fullmatch(r"initcall levels|initcalls( [2-9]\d*)?", t["name"] or "")]
    got_pids = sorted({t["pid"] for t in tracks})
    want_pids = sorted(p for p in levels if levels[p] or calls[p])
    if got_pids != want_pids:
        errors.append("initcall tracks of processes %s, report --initcalls --csv has %s" % (got_pids, want_pids))
    nlevels = ncalls = ninstants = 0
    for pid in got_pids:
        got_levels, got_calls = [], []
        for t in (t for t in tracks if t["pid"] == pid):
            last_end = None
            for e in sorted(t["entries"], key=lambda e: e["ts"]):
                start, dur = ns(e["ts"]) - shift, ns(e.get("dur") or 0)
                if e["parent"] is not None:
                    errors.append("process %d: %r nested in %r on track %r" % (pid, e["name"], e["parent"], t["name"]))
                if last_end is not None and start < last_end:
                    errors.append("process %d: %r overlaps the slice before it on track %r" % (pid, e["name"], t["name"]))
                last_end = start + dur
                if t["name"] == "initcall levels":
                    got_levels.append((shown(e["name"]), start, dur))
                    continue
                a = e["args"] or {}
                kind = "instant" if e.get("dur") is None else "slice"
                args = {k: (shown(a[k]) if k == "level" else a[k]) for k in ("level", "guest_tid", "cpu", "ret")
                        if k in a}
                got_calls.append((kind, shown(e["name"]), start, dur, args))
        if got_levels != levels.get(pid, []):
            errors.append("process %d: levels %s, report --initcalls --csv says %s" % (pid, got_levels, levels.get(pid)))
        if sorted(got_calls, key=repr) != sorted(calls.get(pid, []), key=repr):
            errors.append("process %d: initcalls %s, report --initcalls --csv says %s"
                          % (pid, sorted(got_calls, key=repr), sorted(calls.get(pid, []), key=repr)))
        nlevels += len(got_levels)
        ncalls += sum(1 for c in got_calls if c[0] == "slice")
        ninstants += sum(1 for c in got_calls if c[0] == "instant")
    if parsed["warnings"]:
        errors.append("trace engine warnings: %s" % parsed["warnings"])
    for e in errors[:10]:
        print("    " + e)
    if errors:
        return 1
    print("    the trace engine read %d initcall levels, %d initcalls and %d without their return on %d tracks of "
          "%d VMs, all match report --initcalls --csv" % (nlevels, ncalls, ninstants, len(tracks), len(got_pids)))
    return 0


def main():
    engine_dir, trace, csv_path = sys.argv[1:4]
    mjs = os.path.join(os.path.dirname(os.path.abspath(__file__)), "check_chrome.mjs")
    run = subprocess.run(["node", mjs, engine_dir, trace], capture_output=True, text=True)
    if run.returncode != 0:
        print("    the trace engine failed: " + run.stderr.strip()[-800:])
        return 1
    parsed = json.loads(run.stdout)
    if csv_path == "--boot":
        return check_boot(parsed, sys.argv[4])
    if csv_path == "--initcalls":
        return check_initcalls(parsed, sys.argv[4])

    want = {}
    with open(csv_path, newline="") as f:
        for row in csv.DictReader(f):
            want[(int(row["host_tid"]), int(row["exit_ns"]))] = row
    errors = []
    offsets = set()
    slices = 0
    for thread in parsed["threads"]:
        tid = thread["tid"]
        entries = thread["entries"]
        for i, e in enumerate(entries):
            if not e["name"].startswith("hypercall "):
                continue
            slices += 1
            args = e["args"] or {}
            row = want.pop((tid, int(args.get("exit_ns", -1))), None)
            if row is None:
                errors.append("slice tid %d exit_ns %s not in the CSV" % (tid, args.get("exit_ns")))
                continue
            exp = {
                "name": "hypercall " + row["nr"],
                "pid": int(row["host_pid"]),
                "thread": "vCPU %s (tid %s)" % (row["vcpu_id"], row["host_tid"]),
                "dur_ns": int(row["total_ns"]),
                "a0": int(row["a0"], 16), "a1": int(row["a1"], 16),
                "a2": int(row["a2"], 16), "a3": int(row["a3"], 16),
                "rip": int(row["guest_rip"], 16), "reason": int(row["exit_reason"], 16),
                "nr": int(row["nr"]), "isa": row["isa"],
                "phases": [("exit->hypercall", int(row["exit_to_hcall_ns"])),
                           ("hypercall->entry", int(row["hcall_to_entry_ns"]))],
            }
            got = {
                "name": e["name"], "pid": thread["pid"], "thread": thread["name"],
                "dur_ns": round(e["dur"] * 1000),
                "a0": int(args["a0"], 16), "a1": int(args["a1"], 16),
                "a2": int(args["a2"], 16), "a3": int(args["a3"], 16),
                "rip": int(args["rip"], 16), "reason": int(args["reason"], 16),
                "nr": args["nr"], "isa": args["isa"],
                # The engine keeps the file's order: the two phases follow their slice.
                "phases": [(c["name"], round(c["dur"] * 1000)) for c in entries[i + 1:i + 3]
                           if c["parent"] == e["name"]],
            }
            if got != exp:
                diff = {k: (got[k], exp[k]) for k in exp if got[k] != exp[k]}
                errors.append("slice tid %d exit_ns %s differs (got, want): %s" % (tid, args["exit_ns"], diff))
            # Every start is exit_ns on one shifted clock, to the ns.
            offsets.add(round(e["ts"] * 1000) - int(row["exit_ns"]))
            if len(entries) > i + 2 and round(entries[i + 2]["ts"] * 1000) != \
                    round(e["ts"] * 1000) + int(row["exit_to_hcall_ns"]):
                errors.append("hypercall->entry of tid %d exit_ns %s does not start at the hypercall"
                              % (tid, args["exit_ns"]))
    if want:
        errors.append("%d CSV records have no slice" % len(want))
    errors += check_text_to_the_ns(trace, csv_path)
    if len(offsets) > 1:
        errors.append("slice starts are not exit_ns on one clock: %d offsets" % len(offsets))
    pids = {t["pid"] for t in parsed["threads"]}
    for pid in pids:
        if parsed["processNames"].get(str(pid)) != "VM process %d" % pid:
            errors.append("process %d named %r" % (pid, parsed["processNames"].get(str(pid))))
    if parsed["warnings"]:
        errors.append("trace engine warnings: %s" % parsed["warnings"])
    for e in errors[:10]:
        print("    " + e)
    if errors:
        return 1
    print("    the trace engine read %d hypercall slices on %d vCPU tracks, all match the CSV"
          % (slices, len(parsed["threads"])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
