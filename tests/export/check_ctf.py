#!/usr/bin/python3
"""Reads a CTF trace with babeltrace2's Python API (bt2) and checks it against
`hypertrace-bpf report --csv` of the same records: every field of every event,
the timestamps (raw clock value = exit_ns, ns from origin = wall-clock), the
discarded events and the env block.

usage: check_ctf.py DIR CSV [--dropped N] [--env KEY=VALUE]...
Prints what differs and exits 1, or prints a one-line summary and exits 0.
"""
import csv
import datetime
import sys

import bt2

ISA = {"VMX": 1, "SVM": 2}


def wallclock_ns(iso):
    """2026-11-22T03:40:01.123456789Z -> ns since the epoch, exactly."""
    date, frac = iso.rstrip("Z").split(".")
    secs = datetime.datetime.strptime(date, "%Y-%m-%dT%H:%M:%S").replace(
        tzinfo=datetime.timezone.utc).timestamp()
    return int(secs) * 1_000_000_000 + int(frac)


def expected_events(csv_path):
    want = {}
    with open(csv_path, newline="") as f:
        for row in csv.DictReader(f):
            key = (int(row["host_tid"]), int(row["exit_ns"]))
            want[key] = {
                "pid": int(row["host_pid"]),
                "tid": int(row["host_tid"]),
                "nr": int(row["nr"]),
                "a0": int(row["a0"], 16),
                "a1": int(row["a1"], 16),
                "a2": int(row["a2"], 16),
                "a3": int(row["a3"], 16),
                "guest_rip": int(row["guest_rip"], 16),
                "vcpu_id": int(row["vcpu_id"]),
                "exit_reason": int(row["exit_reason"], 16),
                "isa": ISA.get(row["isa"], 0),
                "exit_to_hcall_ns": int(row["exit_to_hcall_ns"]),
                "hcall_to_entry_ns": int(row["hcall_to_entry_ns"]),
                "exit_cpu": int(row["exit_cpu"]),
                "entry_cpu": int(row["entry_cpu"]),
                "flags": int(row["flags"], 16),
                "wallclock_ns": wallclock_ns(row["wallclock"]),
            }
    return want


def main():
    ctf_dir, csv_path = sys.argv[1], sys.argv[2]
    want_dropped, want_env = None, {}
    args = sys.argv[3:]
    while args:
        if args[0] == "--dropped":
            want_dropped = int(args[1])
        elif args[0] == "--env":
            key, _, value = args[1].partition("=")
            want_env[key] = value
        args = args[2:]

    want = expected_events(csv_path)
    errors = []
    seen = 0
    dropped = 0
    env = None
    last_ts = {}
    for msg in bt2.TraceCollectionMessageIterator(ctf_dir):
        if type(msg) is bt2._StreamBeginningMessageConst and env is None:
            env = {k: v for k, v in msg.stream.trace.environment.items()}
        elif type(msg) is bt2._DiscardedEventsMessageConst:
            dropped += msg.count
        elif type(msg) is bt2._EventMessageConst:
            ev = msg.event
            if ev.name != "hypercall":
                errors.append("event named %r" % ev.name)
                continue
            clock = msg.default_clock_snapshot
            got = {name: int(ev.payload_field[name]) for name in ev.payload_field}
            got["pid"] = int(ev.common_context_field["pid"])
            got["tid"] = int(ev.common_context_field["tid"])
            got["wallclock_ns"] = clock.ns_from_origin
            key = (got["tid"], clock.value)  # the raw clock value is exit_ns
            exp = want.pop(key, None)
            if exp is None:
                errors.append("event tid %d exit_ns %d not in the CSV" % key)
                continue
            if got != exp:
                diff = {k: (got.get(k), exp.get(k)) for k in set(got) | set(exp) if got.get(k) != exp.get(k)}
                errors.append("event tid %d exit_ns %d differs (got, want): %s" % (key + (diff,)))
            if clock.value < last_ts.get(msg.event.stream.id, 0):
                errors.append("stream %d goes back in time" % msg.event.stream.id)
            last_ts[msg.event.stream.id] = clock.value
            seen += 1
    if want:
        errors.append("%d CSV records have no event, e.g. %s" % (len(want), next(iter(want))))
    if want_dropped is not None and dropped != want_dropped:
        errors.append("discarded events %d, want %d" % (dropped, want_dropped))
    for key, value in want_env.items():
        got = None if env is None else env.get(key)
        if str(got) != value:
            errors.append("env %s = %r, want %r" % (key, got, value))
    for e in errors[:10]:
        print("    " + e)
    if errors:
        return 1
    print("    %d events match the CSV field by field, %d discarded, env checked (%d keys)"
          % (seen, dropped, len(want_env)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
