#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Checks a `convert --perfetto` trace with python3-protobuf, through the
message definitions of third_party/perfetto/perfetto_trace.proto (compiled
with protoc into a temporary directory).

    check_perfetto.py PROTO TRACE REPORT.csv [--payloads DIR] [--attribute KEY=VALUE]... [--switches SWITCHES.csv]
                      [--vcpu-time VCPU_TIME.csv] [--account-slack NS] [--boot BOOT.csv]
                      [--initcalls INITCALLS.csv] [--wakeups LATENCY.csv]

- every packet decodes, the deflated bundles (compressed_packets) too, and
  no field is unknown to Perfetto's definitions;
- every track is described (track_descriptor) before an event uses it, and
  every interned name before a packet refers to its iid;
- timestamps are integers (ns) and never go back on a track, nor on an
  ftrace CPU (but for the switch into a gap of lost guest switches,
  written when the gap is found: the trace processor sorts it, below);
- the slices of each vCPU thread's track are report --csv's records, one for
  one: start = exit_ns, duration = total_ns, the two phases nested with
  their durations, and every field of the record in the slice's arguments;
- every flow joins a guest event to the host slice of its hypercall, at the
  same time; the guests' sched_switch ftrace events are the decoded ones;
- the slices of each vCPU thread's off-CPU track (a track under its VM's
  process track, named "... (tid TID)") are the switches of SWITCHES.csv
  (report --vcpu-switches --csv), one for one: "preempted" (involuntary=1)
  or "blocked" from a switch-out to the thread's next switch-in (or its next
  switch-out, the switch-in lost; never ended if none comes), never nested,
  with every field of both switches in the slice's arguments (the name of
  the thread on the other side escaped as report writes it). Without
  --switches there must be none.
- the wake-ups of halted vCPU threads (record --wakeups): each vCPU
  thread's track "vCPU N wake-ups from halts: ... (tid TID)" under its VM's
  process track holds report --latency --csv's (LATENCY.csv) wake-ups of
  that thread, one for one, never nested: named by the class, from wake_ns
  to entry_ns to the ns, with wait_ns, rest_ns, vcpu_id, cpu and the vectors
  report knows in the slice's arguments. Without --wakeups there must be
  none. And the interrupts delivered to them (format 14): each vCPU
  thread's tracks "vCPU N interrupts: ... (tid TID)" and "vCPU N interrupts
  K: ..." (the lanes of overlapping ones) hold LATENCY.csv's irq rows of
  that thread, one for one, none nested: named by the class, from wake_ns
  (the acceptance) to entry_ns, with woken_ns, wait_ns, rest_ns, vector,
  vcpu_id and cpu in the arguments.
- the VMs' boots (record --boot): each VM's track "boot phases" under its
  process track holds report --boot --csv's (BOOT.csv) phases, one for one,
  in order and never nested: the phase's name, start (start_ns) and
  length to the ns, its start's uncertainty, exits and vCPU time per state
  in the slice's arguments; and an instant "boot ended" at the end of the
  last phase where its vCPU threads ended, none where they did not (a pid
  given to a new VM process: each process's boot in turn, each ended
  where its own did). Without --boot there must be no boot track.
- a guest's initcalls (its own boot-time trace, replayed by guest/boottrace):
  each VM's track "initcall levels" under its process track holds report
  --initcalls --csv's (INITCALLS.csv) levels, one for one, in order, never
  nested: the level's name, start (start_ns) and length (length_ns) to the
  ns; its tracks "initcalls", "initcalls 2", ... hold its initcalls that
  returned as slices (never nested or overlapping on a track), named by the
  function and " [module]", from start_ns for length_ns, with the level,
  ret, guest tid and CPU in the arguments, and each initcall without its
  return as an instant "NAME (no return)" at its start_ns. Without
  --initcalls there must be no such track.
- the vCPU account (record --exits): each vCPU thread's counter tracks
  ("vCPU time: guest", kvm, vmm, wait, halted, blocked, in seconds, ranked
  in that order) in a track "vCPU time" under its thread's track, sampled
  together, 0 at the thread's start, never
  going down, and at every sample adding up to the time since the start
  (to the ns); with --vcpu-time, each thread's last sample is report
  --vcpu-time --csv's row, state for state, to the ns;
- the account does not contradict the switches, both as the trace shows
  them (when dev.hypertrace.vcpu_switches_recorded is 1): per thread and
  per interval between two samples, the time off its CPU that its off-CPU
  slices cover is wait + halted + blocked, and the rest guest + kvm + vmm
  (exactly, or within --account-slack NS per interval); and the switches
  are a host's: a thread comes back on the CPU it next leaves, and no two
  vCPU threads are on one CPU at once;
- the trace processor's import rules (src/trace_processor/ of Perfetto at
  the commit third_party/perfetto/perfetto_trace.proto names; each rule
  below cites the file and line it follows): no packet is skipped for its
  sequence's state (cleared before any packet needs it), every interned
  name resolves on its sequence's current generation, every event's track
  is reserved by a descriptor, the guests' task states decode as the guest
  module sent them, the clock is CLOCK_MONOTONIC, the tracks are ordered by
  their rank, no pid or tid is read as reused, and every slice end ends the
  slice it means (import_rules).
- the guests' scheduling as the trace processor imports it (sched_import:
  PushSchedSwitch and the thread states, in the sorter's order): no
  sched_switch whose prev_pid is not its CPU's last next_pid
  (mismatched_sched_switch_tids, which leaves that thread running to the
  end of the trace), no thread left Running on a CPU another runs on; each
  gap of lost guest switches a slice of the export's stand-in thread after
  a task left in a state the UI shows as "Unknown", as many as report
  --csv's sched_switch rows break chains (a prev_tid that is not the last
  next_tid of its VM's guest CPU), and counted in the trace attribute
  dev.hypertrace.lost_guest_switches.
PROTO may be the vendored subset or Perfetto's full merged
perfetto_trace.proto: the checks are the same, and "no unknown field" is
then against every field Perfetto defines.
--payloads DIR writes each deflated bundle's packets there (bundle-N.pb),
for `protoc --decode`. --attribute KEY=VALUE: the trace attribute KEY is
VALUE (an integer or a string); KEY= : the trace has no attribute KEY.
--plant WHAT breaks the decoded trace first, as the export must never write
it (uncleared, unknown_iid, unreserved_track, unnamed_guest_end, old_kernel,
boottime, implicit_order; migrated_while_running, never_off_cpu,
account_off_by_one, wakeup_off_by_one, irq_off_by_one; unclosed_chain, gap_state_known): the checker must then
fail (test_perfetto.sh).
"""
import collections
import csv
import importlib
import os
import re
import subprocess
import sys
import tempfile
import zlib


def fail(msg):
    print(f"check_perfetto: {msg}")
    sys.exit(1)


def load_module(proto):
    d = tempfile.mkdtemp()
    subprocess.run(["protoc", f"--proto_path={os.path.dirname(os.path.abspath(proto))}", f"--python_out={d}",
                    os.path.abspath(proto)], check=True)
    sys.path.insert(0, d)
    return importlib.import_module(os.path.basename(proto)[:-len(".proto")] + "_pb2")


def no_unknown_fields(msg, where):
    if len(msg.UnknownFields()):
        fail(f"{where}: fields unknown to Perfetto's definitions: {[f.field_number for f in msg.UnknownFields()]}")
    for fd, v in msg.ListFields():
        if fd.message_type is None:
            continue
        for m in (v if fd.label == fd.LABEL_REPEATED else [v]):
            no_unknown_fields(m, f"{where}.{fd.name}")


def packets(pb, path, payloads):
    trace = pb.Trace()
    trace.ParseFromString(open(path, "rb").read())
    no_unknown_fields(trace, "trace")
    out, bundles = [], 0
    for p in trace.packet:
        if p.HasField("compressed_packets"):
            raw = zlib.decompress(p.compressed_packets)
            inner = pb.Trace()
            inner.ParseFromString(raw)
            no_unknown_fields(inner, f"bundle {bundles}")
            if payloads:
                open(os.path.join(payloads, f"bundle-{bundles}.pb"), "wb").write(raw)
            bundles += 1
            out.extend(inner.packet)
        else:
            out.append(p)
    return out, bundles


def arg_value(a):
    kind = a.WhichOneof("value")
    return getattr(a, kind) if kind else {d_name: arg_value(d) for d_name, d in []}


def vm_child_track(tracks, td):
    """A named track under a VM's process track (a host pid, below 2^22)."""
    parent = tracks.get(td.parent_uuid) if td.HasField("parent_uuid") else None
    return parent is not None and parent.HasField("process") and parent.process.pid < (1 << 22)


def boot_track(tracks, td):
    """A VM's boot phases: the track of its process named so."""
    return vm_child_track(tracks, td) and td.name == "boot phases"


def initcall_track(tracks, td):
    """A VM's initcall levels, or a lane of its initcalls: tracks of its process named so."""
    return vm_child_track(tracks, td) and re.fullmatch(r"initcall levels|initcalls( [2-9]\d*)?", td.name) is not None


def wakeup_track(tracks, td):
    """A vCPU thread's wake-ups from halts: a track of its VM's process named so, with the thread's tid."""
    return vm_child_track(tracks, td) and re.fullmatch(r"vCPU \d+ wake-ups from halts: .*\(tid \d+\)", td.name,
                                                       re.S) is not None


def irq_track(tracks, td):
    """A lane of the interrupts delivered to a vCPU thread: a track of its VM's process named so, with the thread's tid."""
    return vm_child_track(tracks, td) and re.fullmatch(r"vCPU \d+ interrupts( [2-8])?: .*\(tid \d+\)", td.name,
                                                       re.S) is not None


def off_cpu_track(tracks, td):
    """A vCPU thread's off-CPU track: any other named track under a VM's process track."""
    return vm_child_track(tracks, td) and not boot_track(tracks, td) and not initcall_track(tracks, td) \
        and not wakeup_track(tracks, td) and not irq_track(tracks, td)


def flat_slice(pb, open_slices, e, n, ts, name, argv, many, one, where):
    """A begin or an end on a track whose slices do not nest (open_slices:
    the one open on each such track, by track). At an end, the slice
    (begin, end, name, args); else None. many, one: what its slices are
    called ("wake-up slices", "a wake-up slice"); where: the track."""
    if e.type == pb.TrackEvent.TYPE_SLICE_BEGIN:
        if e.track_uuid in open_slices:
            fail(f"packet {n}: {many} nested on {where}")
        open_slices[e.track_uuid] = (ts, name, argv)
        return None
    if e.track_uuid not in open_slices:
        fail(f"packet {n}: {one} ends on {where} with none open")
    begin, nm, av = open_slices.pop(e.track_uuid)
    return (begin, ts, nm, av)


def latency_rows(csv_path, kind):
    """report --latency --csv's rows of a kind ("wakeup", "irq") as the export's slices are kept: (pid, tid,
    start, end, class, args)."""
    want = []
    if csv_path:
        with open(csv_path, newline="") as f:
            for r in csv.DictReader(f):
                if r["kind"] != kind:
                    continue
                args = {"wait_ns": int(r["wait_ns"]), "rest_ns": int(r["rest_ns"]), "vcpu_id": int(r["vcpu_id"]),
                        "cpu": int(r["cpu"])}
                for k in ("vector", "timer_vector", "woken_ns", "due_ns"):
                    if r[k] != "":
                        args[k] = int(r[k])
                want.append((int(r["host_pid"]), int(r["host_tid"]), int(r["wake_ns"]), int(r["entry_ns"]),
                             r["class"], tuple(sorted(args.items()))))
    return want


def check_latency(slices, csv_path, kind, noun):
    """The wake-up tracks' (kind "wakeup") or interrupt tracks' ("irq") slices against report --latency --csv's
    rows of that kind, one for one; a line for the summary."""
    want = latency_rows(csv_path, kind)
    slices = [w[:5] + (tuple(sorted(w[5].items())),) for w in slices]
    if sorted(slices) != sorted(want):
        got, exp = set(map(repr, slices)), set(map(repr, want))
        fail(f"{noun} slices differ from report --latency --csv: export only {sorted(got - exp)[:3]}, "
             f"report only {sorted(exp - got)[:3]} ({len(slices)} vs {len(want)})")
    classes = collections.Counter(w[4] for w in slices)
    return (f"{len(slices)} {noun} slices = report --latency --csv"
            + (" (" + ", ".join(f"{c} {n}" for c, n in sorted(classes.items())) + ")" if classes else ""))


def check_initcalls(initcalls, csv_path):
    """The initcall tracks' slices and instants against report --initcalls --csv's rows; a line for the summary."""
    want = collections.defaultdict(lambda: ([], []))
    if csv_path:
        with open(csv_path, newline="") as f:
            for r in csv.DictReader(f):
                levels, calls = want[int(r["pid"])]
                if r["kind"] == "level":
                    levels.append((int(r["start_ns"]), int(r["start_ns"]) + int(r["length_ns"]), r["name"], {}))
                    continue
                name = r["name"] + (f" [{r['module']}]" if r["module"] else "")
                args = {"level": r["level"], "guest_tid": int(r["tid"]), "cpu": int(r["cpu"])}
                if r["finished"] == "1":
                    calls.append(("slice", int(r["start_ns"]), int(r["start_ns"]) + int(r["length_ns"]), name,
                                  {**args, "ret": int(r["ret"])}))
                else:
                    calls.append(("instant", int(r["start_ns"]), int(r["start_ns"]), name + " (no return)", args))
    if sorted(initcalls) != sorted(want):
        fail(f"initcall tracks of processes {sorted(initcalls)}, report --initcalls --csv has {sorted(want)}")
    nlevels = ncalls = ninstants = 0
    for pid, (levels, calls, lanes) in initcalls.items():
        want_levels, want_calls = want[pid]
        got_levels = [(ts, end, nm, {}) for ts, end, nm, _ in levels]
        if got_levels != want_levels:
            fail(f"process {pid}: initcall levels {got_levels}, report --initcalls --csv says {want_levels}")
        keep = ("level", "guest_tid", "cpu", "ret")
        got_calls = sorted(((kind, ts, end, nm, {k: av[k] for k in keep if k in av}) for kind, ts, end, nm, av in calls),
                           key=repr)
        if got_calls != sorted(want_calls, key=repr):
            fail(f"process {pid}: initcalls {got_calls}, report --initcalls --csv says {sorted(want_calls, key=repr)}")
        nlevels += len(levels)
        ncalls += sum(1 for c in calls if c[0] == "slice")
        ninstants += sum(1 for c in calls if c[0] == "instant")
    return (f"{nlevels} levels, {ncalls} initcalls and {ninstants} without their return on "
            f"{sum(len(v[2]) for v in initcalls.values())} initcall tracks of {len(initcalls)} VMs "
            f"= report --initcalls --csv")


def check_boots(boots, boot_csv):
    """The boot tracks' slices and instants against report --boot --csv's rows; a line for the summary."""
    want = collections.defaultdict(list)
    if boot_csv:
        with open(boot_csv, newline="") as f:
            for r in csv.DictReader(f):
                want[int(r["pid"])].append(r)
    if sorted(boots) != sorted(want):
        fail(f"boot tracks of processes {sorted(boots)}, report --boot --csv has {sorted(want)}")
    phases = boots_told = 0
    for pid, (slices, instants) in boots.items():
        rows = want[pid]
        got = [(nm, ts, end - ts, av.get("start_uncertainty_ns"), av.get("start_exact"), av.get("exits"),
                [av.get(st + "_ns") for st in STATES], av.get("first_rip"), av.get("first_vcpu"))
               for ts, end, nm, av in slices]
        exp = [(r["phase"], int(r["start_ns"]), int(r["length_ns"]), int(r["start_uncertainty_ns"]),
                int(r["start_exact"]), int(r["exits"]), [int(r[st + "_ns"]) for st in STATES],
                int(r["first_rip"], 16), int(r["first_vcpu"])) for r in rows]
        if got != exp:
            fail(f"process {pid}: boot slices {got}, report --boot --csv says {exp}")
        # A pid given again holds each VM process's boot in turn, each from its firmware: an
        # instant where each that ended did, after its last phase.
        want_instants = []
        for i, (r, s) in enumerate(zip(rows, slices)):
            last_of_its_boot = i + 1 == len(rows) or rows[i + 1]["phase"] == "firmware"
            boots_told += last_of_its_boot
            if r["ended"] == "1" and last_of_its_boot:
                want_instants.append((s[1], "boot ended", {"phase": r["phase"]}))
        if instants != want_instants:
            fail(f"process {pid}: boot instants {instants}, want {want_instants}")
        phases += len(slices)
    return f"{phases} boot phases of {boots_told} VMs = report --boot --csv"


def varint(v):
    out = b""
    while True:
        out += bytes([(v & 0x7f) | (0x80 if v > 0x7f else 0)])
        v >>= 7
        if not v:
            return out


def size_without(pkts, drop):
    """The bytes of the trace as the export writes it (packets deflated at level 1 in bundles of 512 KiB,
    each a compressed_packets packet) without the packets of the indexes in drop."""
    size, raw = 0, b""

    def bundle(raw):
        z = zlib.compress(raw, 1)
        inner = varint(50 << 3 | 2) + varint(len(z)) + z
        return 1 + len(varint(len(inner))) + len(inner)
    for n, p in enumerate(pkts):
        if n in drop:
            continue
        b = p.SerializeToString()
        raw += b"\x0a" + varint(len(b)) + b
        if len(raw) >= 512 * 1024:
            size, raw = size + bundle(raw), b""
    return size + (bundle(raw) if raw else 0)


def expected_off_cpu(path):
    """The off-CPU slices report --vcpu-switches --csv's rows give: (pid, tid, start, end or None, name, args)."""
    out, open_out = [], {}
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            key, ts = (int(r["host_pid"]), int(r["host_tid"])), int(r["time_ns"])
            if r["switch"] == "out":
                if key in open_out:
                    start, nm, av = open_out.pop(key)
                    out.append(key + (start, ts, nm, av))
                open_out[key] = (ts, "preempted" if r["involuntary"] == "1" else "blocked",
                                 {"cpu": int(r["cpu"]), "prev_state": int(r["prev_state"]),
                                  "next_tid": int(r["other_tid"]), "next_pid": int(r["other_pid"]),
                                  "next_comm": r["other_comm"]})
            elif r["switch"] == "in" and key in open_out:
                start, nm, av = open_out.pop(key)
                out.append(key + (start, ts, nm, {**av, "in_cpu": int(r["cpu"]), "prev_tid": int(r["other_tid"]),
                                                  "prev_pid": int(r["other_pid"]), "prev_comm": r["other_comm"]}))
    return out + [k + (start, None, nm, av) for k, (start, nm, av) in open_out.items()]


# ---- the vCPU account (record --exits) ----

STATES = ["guest", "kvm", "vmm", "wait", "halted", "blocked"]
OFF_CPU_STATES = ("wait", "halted", "blocked")


def ns_of(v):
    """The whole ns a counter's seconds stand for: the export writes the nearest double to ns / 1e9."""
    n = round(v * 1e9)
    for c in (n, n - 1, n + 1):
        if c / 1e9 == v:
            return c
    fail(f"counter value {v!r} is no whole number of ns")


def off_cpu_time(slices, a, b):
    """The time of [a, b] that a thread's off-CPU slices (start, end or None: never ended) cover."""
    return sum(max(0, min(b, end if end is not None else b) - max(a, start)) for start, end in slices)


def check_switches_physical(off_slices):
    """A thread comes back on the CPU it next leaves, and no two vCPU threads are on one CPU at once."""
    by_thread = collections.defaultdict(list)
    for pid, tid, ts, end, _, av in off_slices:
        by_thread[(pid, tid)].append((ts, end, av))
    on_cpu = collections.defaultdict(list)  # cpu -> (from, to, thread)
    for key, sl in by_thread.items():
        sl.sort(key=lambda s: s[0])
        for (ts0, end0, av0), (ts1, _, av1) in zip(sl, sl[1:]):
            if end0 is None or "in_cpu" not in av0:
                continue
            if av0["in_cpu"] != av1["cpu"]:
                fail(f"thread {key}: switched in on CPU {av0['in_cpu']} at {end0}, switched out of CPU "
                     f"{av1['cpu']} at {ts1}: it never ran there")
            on_cpu[av0["in_cpu"]].append((end0, ts1, key))
    for cpu, stretches in on_cpu.items():
        stretches.sort()
        for (f0, t0, k0), (f1, t1, k1) in zip(stretches, stretches[1:]):
            if f1 < t0:
                fail(f"CPU {cpu}: vCPU threads {k0} [{f0}, {t0}] and {k1} [{f1}, {t1}] on it at once")
    return sum(len(v) for v in on_cpu.values())


def check_account(account, off_slices, switches_recorded, vcpu_time_csv, slack):
    """The account's counter tracks as the trace holds them, against the off-CPU slices and report --vcpu-time."""
    off_by_thread = collections.defaultdict(list)
    for pid, tid, ts, end, _, _ in off_slices:
        off_by_thread[(pid, tid)].append((ts, end))
    intervals = worst = samples = 0
    last = {}
    for key, by_state in sorted(account.items()):
        if sorted(by_state) != sorted(STATES):
            fail(f"thread {key}: counter tracks {sorted(by_state)}, want one per state {STATES}")
        times = [ts for ts, _ in by_state["guest"]]
        for st in STATES:
            if [ts for ts, _ in by_state[st]] != times:
                fail(f"thread {key}: the {st} counter is sampled at other times than guest")
        rows = [(ts, [ns_of(by_state[st][i][1]) for st in STATES]) for i, ts in enumerate(times)]
        samples += len(rows)
        start = None
        for i, (ts, v) in enumerate(rows):
            if not any(v):
                start = ts  # the thread's start (or a tid given again: a new thread's)
                continue
            if start is None:
                fail(f"thread {key}: a sample at {ts} before the thread's start (all states 0)")
            if sum(v) != ts - start:
                fail(f"thread {key}: at {ts} the states add up to {sum(v)} ns, the thread's time is {ts - start} ns")
            a, prev = rows[i - 1]
            d = [y - x for x, y in zip(prev, v)]
            if min(d) < 0:
                fail(f"thread {key}: a state's time goes down between {a} and {ts}: {dict(zip(STATES, d))}")
            last[key] = (start, ts, v)
            if not switches_recorded:
                continue
            off = sum(d[STATES.index(st)] for st in OFF_CPU_STATES)
            seen_off = off_cpu_time(off_by_thread[key], a, ts)
            intervals += 1
            worst = max(worst, abs(off - seen_off))
            if abs(off - seen_off) > slack:
                fail(f"thread {key}: [{a}, {ts}]: the account has {off} ns off the CPU (wait+halted+blocked) and "
                     f"{ts - a - off} on it (guest+kvm+vmm); its off-CPU slices cover {seen_off} ns "
                     f"({dict(zip(STATES, d))})")
    if vcpu_time_csv:
        want = collections.defaultdict(dict)
        with open(vcpu_time_csv, newline="") as f:
            for r in csv.DictReader(f):
                k = (int(r["vm_pid"]), int(r["tid"]))
                want[k]["span"] = (int(r["thread_start_ns"]), int(r["to_ns"]))
                want[k][r["state"]] = int(r["ns"])
        got = {k: {"span": (start, ts), **dict(zip(STATES, v))} for k, (start, ts, v) in last.items()}
        if got != dict(want):
            diff = [k for k in set(got) | set(want) if got.get(k) != want.get(k)]
            fail(f"the account's last samples differ from report --vcpu-time --csv for threads {diff[:3]}: "
                 f"{[got.get(k) for k in diff[:1]]} vs {[want.get(k) for k in diff[:1]]}")
    return len(account), samples, intervals, worst


# ---- the trace processor's import rules ----

# BuiltinClock, FtraceClock, ChildTracksOrdering, ThreadOrdering, SequenceFlags values.
MONOTONIC, REALTIME, SEQUENCE_CLOCK = 3, 1, 64
SEQ_INCREMENTAL_STATE_CLEARED, SEQ_NEEDS_INCREMENTAL_STATE = 1, 2
FTRACE_CLOCK_GLOBAL = 2
CHILD_ORDERING_EXPLICIT, THREAD_ORDERING_EXPLICIT = 3, 1

# TaskState's flags (src/trace_processor/types/task_state.h:63-85).
K_PARKED, K_TASK_DEAD, K_WAKE_KILL, K_WAKING, K_NO_LOAD = 0x40, 0x80, 0x100, 0x200, 0x400
K_IDLE, K_PREEMPTED, K_INVALID = 0x4000, 0x8000, 0xffff
# What each prev_state the guest module sends means: TASK_REPORT's bits of
# kernels since 4.14 (R S D T t X Z P I) and TASK_REPORT_MAX, preempted.
MODULE_STATES = {0: 0, 0x1: 0x1, 0x2: 0x2, 0x4: 0x4, 0x8: 0x8, 0x10: 0x10, 0x20: 0x20, 0x40: K_PARKED,
                 0x80: K_IDLE, 0x100: K_PREEMPTED}


def kernel_version(utsname):
    """SystemInfoTracker::SetKernelVersion (system_info_tracker.cc:31-49): (major, minor) or None."""
    if utsname is None or utsname.sysname != "Linux" or not utsname.release:
        return None
    rel = utsname.release
    first = rel.find(".")
    second = rel.find(".", first + 1) if first >= 0 else -1
    major = rel[:first] if first >= 0 else rel
    minor = rel[first + 1:second if second >= 0 else len(rel)] if first >= 0 else ""
    if not major.isdigit() or not minor.isdigit() or not int(major) or not int(minor):
        return None  # base::StringToUInt32 fails, or gives 0 (the importer's `!minor_version`)
    return (int(major), int(minor))


def task_state(raw, version):
    """TaskState::TaskState (task_state.cc:57-137): the parsed flags of a raw prev_state."""
    raw &= 0xffff
    parsed = raw & 0x3f
    version = version or (4, 4)  # task_state.cc:65
    if version >= (4, 14):  # task_state.cc:73-99
        parsed |= K_PARKED if raw & 0x40 else 0
        parsed |= K_IDLE if raw & 0x80 else 0
        parsed |= K_PREEMPTED if raw & 0x100 else 0
        return K_INVALID if raw & 0xfe00 else parsed
    for bit, flag in ((0x40, K_TASK_DEAD), (0x80, K_WAKE_KILL), (0x100, K_WAKING), (0x200, K_PARKED),
                      (0x400, K_NO_LOAD)):
        parsed |= flag if raw & bit else 0
    if parsed == (0x2 | K_NO_LOAD):
        parsed = K_IDLE
    parsed |= K_PREEMPTED if raw & (0x1000 if version >= (4, 8) else 0x800) else 0
    return parsed


def number_in(name):
    """The number a track is ordered by, from the parts of its name the export writes (a guest task's
    or a host thread's own name, which anyone chooses, is not looked into)."""
    if name == "<switch lost>":
        return -1  # the stand-in for lost guest switches, ranked before its guest kernel's tasks
    for pattern in (r"^vCPU (\d+)[:( ]", r"^guest CPU (\d+) events$", r"\(guest tid (\d+)\)$"):
        m = re.search(pattern, name or "")
        if m:
            return int(m[1])
    return None

# The export's stand-in for what ran on a guest CPU while its switches were lost (docs/exports.md): thread
# (i + 1) * 2^22, tid 0 of a VM's block, which no guest task has (a guest's idle task is thread 0).
GUEST_TID_BITS = 22


def stand_in(tid):
    return tid >= 1 << GUEST_TID_BITS and not tid & ((1 << GUEST_TID_BITS) - 1)


def sched_import(pkts, version):
    """The guests' sched_switch events as the trace processor imports them: in the sorter's order
    (trace_sorter.h, TimestampedEvent: by time, then in the order read), each closes the CPU's pending
    sched slice only when its prev_pid is that slice's thread, else counts mismatched_sched_switch_tids and
    leaves that slice open, shown running to the end of the trace (ftrace_sched_event_tracker.cc,
    PushSchedSwitch); each sets prev_pid's thread state to prev_state's (NULL when invalid: the UI's
    "Unknown") and next_pid's to Running on the CPU (thread_state_tracker.cc, PushSchedSwitchEvent; the idle
    task has none). Fails on a mismatch and on a thread whose last state is Running on a CPU that last ran
    another: both show a thread running to the end of the trace. Returns the sched slices per CPU in time
    order ([ts, end or None, tid, end state]) and the threads whose last state is unknown."""
    evs = []
    for p in pkts:
        if p.WhichOneof("data") == "ftrace_events":
            for ev in p.ftrace_events.event:
                if ev.HasField("sched_switch"):
                    evs.append((ev.timestamp, len(evs), p.ftrace_events.cpu, ev.sched_switch))
    evs.sort(key=lambda e: e[:2])
    pending, slices, last_state = {}, collections.defaultdict(list), {}
    for ts, _, cpu, ss in evs:
        parsed = task_state(ss.prev_state, version)
        state = None if parsed == K_INVALID else parsed
        if cpu in pending:
            last_pid, sl = pending[cpu]
            if ss.prev_pid != last_pid:
                fail(f"CPU {cpu}: the sched_switch at {ts} is from thread {ss.prev_pid}, the CPU's last switch (at "
                     f"{sl[0]}) put thread {last_pid} there: mismatched_sched_switch_tids, and thread {last_pid}'s "
                     f"slice never ends: shown running to the end of the trace")
            sl[1], sl[3] = ts, state
        sl = [ts, None, ss.next_pid, None]
        slices[cpu].append(sl)
        pending[cpu] = (ss.next_pid, sl)
        if ss.prev_pid:
            last_state[ss.prev_pid] = (state, ts, None)
        if ss.next_pid:
            last_state[ss.next_pid] = ("Running", ts, cpu)
    for tid, (state, ts, cpu) in last_state.items():
        if state == "Running" and pending[cpu][0] != tid:
            fail(f"thread {tid}: Running on CPU {cpu} from {ts} to the end of the trace, where thread "
                 f"{pending[cpu][0]} runs")
    return slices, sum(1 for tid, (state, _, _) in last_state.items() if state is None and not stand_in(tid))


def lost_switch_gaps(slices):
    """The gaps of lost switches as the CPU tracks show them: the stand-in's slices, each ended, and each
    after a slice that it ends in state unknown; returns how many."""
    gaps = 0
    for cpu, lst in slices.items():
        for before, sl in zip([None] + lst, lst):
            if not stand_in(sl[2]):
                continue
            gaps += 1
            if before is None or before[1] != sl[0] or before[3] is not None or sl[1] is None:
                fail(f"CPU {cpu}: the gap of lost switches at {sl[0]} does not follow a task left in state unknown "
                     f"there, or never ends ({before}, {sl})")
    return gaps


def broken_chains(rows, vms):
    """report --csv's guest sched_switch rows, in the file's order: per VM and guest CPU that the trace
    shows, the switches whose prev_tid is not the last next_tid (a tid beyond a VM's block as the idle
    task's, as the export writes it)."""
    last, broken = {}, 0
    shown = lambda tid: tid if tid < 1 << GUEST_TID_BITS else 0
    for r in rows:
        if r.get("event") != "sched_switch" or r["host_pid"] not in vms:
            continue
        f = dict(re.findall(r'(\w+)=("[^"]*"|\S+)', r.get("fields", "")))
        cpu = int(f["cpu_id"])
        if cpu >= 128:
            continue  # no ftrace CPU of the trace (docs/exports.md)
        key = (r["host_pid"], cpu)
        broken += key in last and last[key] != shown(int(f["prev_tid"]))
        last[key] = shown(int(f["next_tid"]))
    return broken


def import_rules(pb, pkts):
    """Follows the trace processor's importer over the packets; fails on what it would read other than meant."""
    version, utsname_seen, defaults_clock, snapshot = None, False, {}, None
    descriptors, pids, tids = {}, {}, {}
    stacks = collections.defaultdict(list)
    states, unpaired, lost_exits, unknown = collections.Counter(), 0, 0, 0
    valid = set()                                 # sequences whose incremental state is valid
    interned = collections.defaultdict(dict)      # (sequence, InternedData field) -> iid -> name
    for n, p in enumerate(pkts):
        seq = p.trusted_packet_sequence_id if p.HasField("trusted_packet_sequence_id") else 0
        flags = p.sequence_flags
        # proto_trace_reader.cc:340-347: a cleared state starts a new generation: no interned name and no
        # defaults carry over (packet_sequence_state_builder.h:58-63; state is invalid until the first clear,
        # packet_sequence_state_builder.h:74).
        legacy_cleared = "incremental_state_cleared" in p.DESCRIPTOR.fields_by_name and p.incremental_state_cleared
        if legacy_cleared or flags & SEQ_INCREMENTAL_STATE_CLEARED:
            if not seq:
                fail(f"packet {n}: incremental state cleared outside a sequence (proto_trace_reader.cc:593-599)")
            valid.add(seq)
            defaults_clock.pop(seq, None)
            for key in [k for k in interned if k[0] == seq]:
                del interned[key]
        # proto_trace_reader.cc:398-425: a packet that needs incremental state on a sequence whose state is
        # not valid (not cleared yet) is skipped whole.
        if flags & SEQ_NEEDS_INCREMENTAL_STATE and seq not in valid:
            fail(f"packet {n}: needs the incremental state of sequence {seq}, not cleared yet: skipped")
        # proto_trace_reader.cc:340-353: the defaults of a sequence, read after its state is cleared.
        if p.HasField("trace_packet_defaults"):
            if not seq:
                fail(f"packet {n}: trace_packet_defaults outside a sequence (proto_trace_reader.cc:676-680 drops them)")
            defaults_clock[seq] = p.trace_packet_defaults.timestamp_clock_id
        # proto_trace_reader.cc:688-713: interned data needs a sequence whose state is valid, else it is skipped.
        if p.HasField("interned_data"):
            if not seq or seq not in valid:
                fail(f"packet {n}: interned data outside a valid sequence: skipped")
            for e in p.interned_data.event_names:
                interned[(seq, "event_names")][e.iid] = e.name
            for e in p.interned_data.debug_annotation_names:
                interned[(seq, "debug_annotation_names")][e.iid] = e.name
        data = p.WhichOneof("data")
        if data == "clock_snapshot":
            cs = p.clock_snapshot
            clocks = {c.clock_id: c.timestamp for c in cs.clocks}
            # proto_trace_reader.cc:740-762: sequence clocks need the packet's sequence; the primary clock is trace time.
            if SEQUENCE_CLOCK in clocks and seq != 1:
                fail(f"packet {n}: a sequence clock declared outside sequence 1")
            if cs.primary_trace_clock != MONOTONIC or MONOTONIC not in clocks or REALTIME not in clocks or \
                    clocks.get(SEQUENCE_CLOCK) != clocks[MONOTONIC]:
                fail(f"packet {n}: the clock snapshot does not make CLOCK_MONOTONIC the trace's time: {clocks}")
            snapshot = clocks
        elif data == "system_info":
            # system_probes_module.cc:50 (read at tokenization, in file order), system_probes_parser.cc:976.
            utsname_seen = True
            version = kernel_version(p.system_info.utsname if p.system_info.HasField("utsname") else None)
        if p.HasField("timestamp") and data != "clock_snapshot":
            # proto_trace_reader.cc:486-488: a packet's clock, else its sequence's default (the export names
            # no clock per packet: the subset has no such field, and an unknown field fails above).
            clock = defaults_clock.get(seq)
            if clock != MONOTONIC:
                fail(f"packet {n}: a timestamp on clock {clock}, not CLOCK_MONOTONIC (sequence {seq})")
            if snapshot is None:
                fail(f"packet {n}: a timestamp before the clock snapshot")
        if data == "track_event":
            e = p.track_event
            counter_track = e.track_uuid in descriptors and descriptors[e.track_uuid].HasField("counter")
            # track_event_tokenizer.cc:544-581: a TYPE_COUNTER event needs a value and a track described as a
            # counter (track_event_tracker.cc:620-633), else it is dropped; the importer parses an event on
            # a counter track as a counter only when it is one (track_event_event_importer.h:212-214).
            if (e.type == pb.TrackEvent.TYPE_COUNTER) != counter_track:
                fail(f"packet {n}: an event of type {e.type} on {'a' if counter_track else 'no'} counter track")
            if counter_track and not e.HasField("double_counter_value"):
                fail(f"packet {n}: a counter event without a value: dropped")
        if data == "track_descriptor":
            d = p.track_descriptor
            # track_event_tokenizer.cc:302-373, track_event_tracker.cc:372-377 and 484-500: a counter track
            # (no thread or process of its own) whose ancestor is a thread's track is that thread's
            # (thread_counter_track_event); its unit is unit_name.
            if d.HasField("counter"):
                up = d
                while up is not None and not up.HasField("thread"):
                    up = descriptors.get(up.parent_uuid) if up.HasField("parent_uuid") else None
                if d.HasField("process") or up is None or up is d:
                    fail(f"packet {n}: counter track {d.name!r} is not under a described thread's track")
                if d.counter.unit_name != "s":
                    fail(f"packet {n}: counter track {d.name!r} in {d.counter.unit_name!r}, not seconds")
            if d.uuid == 0:
                # track_event_tracker.cc:268-277: thread order is read from the root track only.
                if descriptors:
                    fail(f"packet {n}: the root track is described after other tracks")
                if d.thread_ordering != THREAD_ORDERING_EXPLICIT:
                    fail(f"packet {n}: the root track does not ask for explicit thread order")
            elif 0 not in descriptors:
                fail(f"packet {n}: a track described before the root track")
            descriptors[d.uuid] = d
            # track_event_tracker.cc:340-361 and 310-325: a pid or tid described again is read as reused.
            if d.HasField("process"):
                if d.process.pid in pids:
                    fail(f"packet {n}: pid {d.process.pid} of {d.process.process_name!r} is "
                         f"{pids[d.process.pid]!r}'s too: read as pid reuse")
                pids[d.process.pid] = d.process.process_name
            if d.HasField("thread"):
                if d.thread.tid in tids:
                    fail(f"packet {n}: tid {d.thread.tid} described twice: read as tid reuse")
                tids[d.thread.tid] = d.thread.thread_name
        elif data == "ftrace_events":
            b = p.ftrace_events
            # ftrace_tokenizer.cc:144-151, 481-502: unspecified is BOOTTIME; global is sequence clock 64.
            if b.ftrace_clock != FTRACE_CLOCK_GLOBAL or seq != 1 or snapshot is None:
                fail(f"packet {n}: ftrace events not on the sequence clock the snapshot declares CLOCK_MONOTONIC")
            for ev in b.event:
                if not ev.HasField("sched_switch"):
                    continue
                if not utsname_seen:
                    fail(f"packet {n}: a sched_switch before the system is declared: decoded as a 4.4 kernel's")
                raw = ev.sched_switch.prev_state
                want = MODULE_STATES.get(raw)
                # ftrace_sched_event_tracker.cc:312-316: decoded with the declared kernel version.
                got = task_state(raw, version)
                if stand_in(ev.sched_switch.prev_pid) or stand_in(ev.sched_switch.next_pid):
                    # A gap of lost switches: the task leaving it, or the one leaving for it, in a state the
                    # importer stores as NULL (TaskStateToStringId: invalid), which the UI shows as "Unknown".
                    if got != K_INVALID:
                        fail(f"packet {n}: a switch of a lost-switch gap leaves its task in state {got:#x}, "
                             f"not unknown (prev_state {raw:#x})")
                    unknown += 1
                    continue
                if want is None or got != want:
                    fail(f"packet {n}: prev_state {raw:#x} decodes as {got:#x} with kernel {version}, "
                         f"the guest module means {want if want is None else hex(want)}")
                states[raw] += 1
        elif data == "track_event":
            e = p.track_event
            # track_event_event_importer.h:314-325: a name_iid is looked up in the sequence's current
            # generation; one not defined there gives no name.
            name = None
            if e.HasField("name_iid"):
                name = interned[(seq, "event_names")].get(e.name_iid)
                if name is None:
                    fail(f"packet {n}: event name iid {e.name_iid} not interned on sequence {seq}: no name")
            elif e.HasField("name"):
                name = e.name
            for a in e.debug_annotations:
                if a.HasField("name_iid") and a.name_iid not in interned[(seq, "debug_annotation_names")]:
                    fail(f"packet {n}: annotation name iid {a.name_iid} not interned on sequence {seq}")
            # track_event_event_importer.h:349-356: an event on a uuid no descriptor reserved is an error.
            td = descriptors.get(e.track_uuid)
            if td is None:
                fail(f"packet {n}: an event on track {e.track_uuid:#x}, which no descriptor reserved")
            # Slices begin and end per track, whatever its kind (host vCPU threads, guest tasks, off-CPU tracks).
            guest_task = td.HasField("thread") and td.thread.pid >= (1 << 22)
            label = td.thread.thread_name if td.HasField("thread") else td.name
            st = stacks[e.track_uuid]
            if e.type == pb.TrackEvent.TYPE_SLICE_BEGIN:
                st.append(name)
            elif e.type == pb.TrackEvent.TYPE_SLICE_END:
                # slice_tracker.cc:271-288: an end with a name ends the innermost open slice of that name;
                # none: dropped with its flow (slice_tracker.cc:185, track_event_event_importer.h:847).
                match = [i for i in range(len(st)) if name is None or st[i] is None or st[i] == name]
                if not match:
                    fail(f"packet {n}: a slice end on {label!r} matches no open slice: dropped")
                if match[-1] != len(st) - 1:
                    fail(f"packet {n}: a slice end on {label!r} ends {st[match[-1]]} "
                         f"over {st[match[-1] + 1:]}: another slice's end")
                if guest_task and name is None:
                    fail(f"packet {n}: a guest function's end without its name")
                st.pop()
            elif e.type == pb.TrackEvent.TYPE_INSTANT and guest_task:
                unpaired += 1
    # Lost exits: ends named "exit": "lost" (interned names are resolved by the caller's check; count the flagged).
    for p in pkts:
        if p.WhichOneof("data") == "track_event":
            lost_exits += sum(1 for a in p.track_event.debug_annotations
                              if a.HasField("string_value") and a.string_value == "lost")
    # track_event_tokenizer.cc:146-160: a parent orders its children by rank only when it asks for EXPLICIT.
    children = collections.defaultdict(list)
    for d in descriptors.values():
        if d.HasField("parent_uuid"):
            children[d.parent_uuid].append(d)
    for parent, kids in children.items():
        if descriptors[parent].child_ordering != CHILD_ORDERING_EXPLICIT:
            fail(f"track {parent:#x}: children ordered by rank but the parent does not ask for EXPLICIT order")
    # The order shown: threads of a process and named children by rank; it must be the numeric order.
    groups = collections.defaultdict(list)
    for d in descriptors.values():
        if d.HasField("thread"):
            groups[("threads", d.thread.pid)].append((d.sibling_order_rank, d.thread.thread_name))
        elif d.HasField("parent_uuid"):
            groups[("children", d.parent_uuid)].append((d.sibling_order_rank, d.name))
    ordered = 0
    for key, members in groups.items():
        shown = [nm for _, nm in sorted(members, key=lambda m: m[0])]
        numbers = [number_in(nm) for nm in shown]
        if None not in numbers and numbers != sorted(numbers):
            fail(f"{key}: tracks shown as {shown}: not in numeric order")
        ordered += len(members) > 1
    return (f"{sum(states.values())} guest task states ({len(states)} distinct) decode as sent with kernel "
            f"{'.'.join(map(str, version)) if version else 'undeclared'}, {len(pids)} processes and {len(tids)} "
            f"threads unique, {ordered} groups of tracks in rank order, {unpaired} unpaired guest calls, "
            f"{lost_exits} lost exits, {unknown} switches of lost-switch gaps in state unknown")


def plant(pb, pkts, what):
    """Breaks the decoded trace as the export must never write it, for the checker to show it refuses it."""
    def first(test):
        for p in pkts:
            if test(p):
                return p
        fail(f"--plant {what}: nothing to break in this trace")
    events = lambda test: first(lambda p: p.WhichOneof("data") == "track_event" and test(p.track_event))
    if what == "uncleared":
        first(lambda p: p.sequence_flags & SEQ_INCREMENTAL_STATE_CLEARED).sequence_flags = SEQ_NEEDS_INCREMENTAL_STATE
    elif what == "unknown_iid":
        events(lambda e: e.HasField("name_iid")).track_event.name_iid = 1 << 40
    elif what == "unreserved_track":
        events(lambda e: True).track_event.track_uuid = 0xdead
    elif what == "unnamed_guest_end":
        guest = {p.track_descriptor.uuid for p in pkts if p.WhichOneof("data") == "track_descriptor"
                 and p.track_descriptor.thread.pid >= (1 << 22)}
        e = events(lambda e: e.track_uuid in guest and e.type == pb.TrackEvent.TYPE_SLICE_END).track_event
        e.ClearField("name_iid")
        e.ClearField("name")
    elif what == "old_kernel":
        first(lambda p: p.WhichOneof("data") == "system_info").system_info.utsname.release = "4.4.0"
    elif what == "boottime":
        first(lambda p: p.HasField("trace_packet_defaults")).trace_packet_defaults.timestamp_clock_id = 6
    elif what == "migrated_while_running":
        # A switch-in moved to another CPU: the thread would leave a CPU it never ran on.
        iid = next(e.iid for p in pkts if p.HasField("interned_data") for e in p.interned_data.debug_annotation_names
                   if e.name == "in_cpu")
        e = events(lambda e: e.type == pb.TrackEvent.TYPE_SLICE_END and
                   any(a.name_iid == iid for a in e.debug_annotations)).track_event
        next(a for a in e.debug_annotations if a.name_iid == iid).uint_value += 1
    elif what == "never_off_cpu":
        # The first off-CPU track's slices cut to nothing: its thread would share its CPU with the others.
        off = first(lambda p: p.WhichOneof("data") == "track_descriptor" and p.track_descriptor.name.startswith("vCPU ")
                    and " off its host CPU" in p.track_descriptor.name).track_descriptor.uuid
        begin = None
        for p in pkts:
            if p.WhichOneof("data") == "track_event" and p.track_event.track_uuid == off:
                if p.track_event.type == pb.TrackEvent.TYPE_SLICE_BEGIN:
                    begin = p.timestamp
                elif begin is not None:
                    p.timestamp = begin
    elif what == "wakeup_off_by_one":
        # One wake-up's end a ns later: it would run its guest after the entry that did.
        wake = {p.track_descriptor.uuid for p in pkts if p.WhichOneof("data") == "track_descriptor"
                and " wake-ups from halts: " in p.track_descriptor.name}
        first(lambda p: p.WhichOneof("data") == "track_event" and p.track_event.track_uuid in wake and
              p.track_event.type == pb.TrackEvent.TYPE_SLICE_END).timestamp += 1
    elif what == "irq_off_by_one":
        # One interrupt delivery's acceptance a ns earlier: it would be timed from before KVM took it.
        lanes = {p.track_descriptor.uuid for p in pkts if p.WhichOneof("data") == "track_descriptor"
                 and re.search(r"^vCPU \d+ interrupts( \d)?: ", p.track_descriptor.name)}
        first(lambda p: p.WhichOneof("data") == "track_event" and p.track_event.track_uuid in lanes and
              p.track_event.type == pb.TrackEvent.TYPE_SLICE_BEGIN).timestamp -= 1
    elif what == "account_off_by_one":
        # One sample of one state a ns more: that thread's states no longer add up to its time.
        e = events(lambda e: e.type == pb.TrackEvent.TYPE_COUNTER and e.double_counter_value > 0).track_event
        e.double_counter_value = (round(e.double_counter_value * 1e9) + 1) / 1e9
    elif what == "unclosed_chain":
        # The gaps' switches left out, as the export wrote lost switches before it closed broken chains.
        found = False
        for p in pkts:
            if p.WhichOneof("data") != "ftrace_events":
                continue
            evs = p.ftrace_events.event
            keep = [e for e in evs if not e.HasField("sched_switch") or not
                    (stand_in(e.sched_switch.prev_pid) or stand_in(e.sched_switch.next_pid))]
            if len(keep) != len(evs):
                found = True
                kept = [type(e)() for e in keep]
                for k, e in zip(kept, keep):
                    k.CopyFrom(e)
                del evs[:]
                evs.extend(kept)
        if not found:
            fail(f"--plant {what}: nothing to break in this trace")
    elif what == "gap_state_known":
        # The task before a gap left as if it had blocked (S): the gap would read as its sleep.
        first(lambda p: p.WhichOneof("data") == "ftrace_events" and any(
            e.HasField("sched_switch") and stand_in(e.sched_switch.next_pid) for e in p.ftrace_events.event))
        for p in pkts:
            if p.WhichOneof("data") == "ftrace_events":
                for e in p.ftrace_events.event:
                    if e.HasField("sched_switch") and stand_in(e.sched_switch.next_pid):
                        e.sched_switch.prev_state = 0x1
    elif what == "implicit_order":
        first(lambda p: p.WhichOneof("data") == "track_descriptor" and p.track_descriptor.child_ordering) \
            .track_descriptor.ClearField("child_ordering")
    else:
        sys.exit(f"--plant {what}: unknown")


def main():
    args = sys.argv[1:]
    planted = None
    if "--plant" in args:
        i = args.index("--plant")
        planted = args[i + 1]
        del args[i:i + 2]
    payloads = None
    if "--payloads" in args:
        i = args.index("--payloads")
        payloads = args[i + 1]
        del args[i:i + 2]
    vcpu_time_csv, slack = None, 0
    if "--vcpu-time" in args:
        i = args.index("--vcpu-time")
        vcpu_time_csv = args[i + 1]
        del args[i:i + 2]
    if "--account-slack" in args:
        i = args.index("--account-slack")
        slack = int(args[i + 1])
        del args[i:i + 2]
    initcalls_csv = None
    if "--initcalls" in args:
        i = args.index("--initcalls")
        initcalls_csv = args[i + 1]
        del args[i:i + 2]
    boot_csv = None
    if "--boot" in args:
        i = args.index("--boot")
        boot_csv = args[i + 1]
        del args[i:i + 2]
    wakeups_csv = None
    if "--wakeups" in args:
        i = args.index("--wakeups")
        wakeups_csv = args[i + 1]
        del args[i:i + 2]
    switches_csv = None
    if "--switches" in args:
        i = args.index("--switches")
        switches_csv = args[i + 1]
        del args[i:i + 2]
    want_attrs = {}
    while "--attribute" in args:
        i = args.index("--attribute")
        key, _, value = args[i + 1].partition("=")
        want_attrs[key] = value
        del args[i:i + 2]
    if len(args) != 3:
        sys.exit(__doc__)
    pb = load_module(args[0])
    pkts, bundles = packets(pb, args[1], payloads)
    if planted:
        plant(pb, pkts, planted)
    tracks, names, arg_names = {}, {}, {}
    last_ts, last_cpu_ts = {}, {}
    stacks = collections.defaultdict(list)
    slices = []                    # (pid, tid, ts, dur, name, args, phases)
    off_open, off_key, off_slices = {}, {}, []  # off-CPU tracks: the open slice, the thread; (pid, tid, ts, end, name, args)
    boots, boot_open = {}, {}      # VM pid -> ([(ts, end, name, args)], [(ts, name, args)]); track -> open slice
    initcalls, initcall_open = {}, {}  # VM pid -> (levels, [(kind, ts, end, name, args)], {lane names}); track -> open
    wakeups, wakeup_open = [], {}  # [(pid, tid, ts, end, name, args)]; track -> open slice
    irqs, irq_open = [], {}        # the same, of the interrupt deliveries
    irq_lanes = set()              # the names of the interrupt tracks with a slice
    off_packets = set()            # indexes of the off-CPU, wake-up and account packets (descriptors and events)
    flows_out, flows_in = {}, {}   # flow id -> ts
    counters = {}                  # counter track uuid -> ((pid, tid), state)
    account = collections.defaultdict(lambda: collections.defaultdict(list))  # (pid, tid) -> state -> [(ts, s)]
    switches, calls = 0, 0
    attrs = {}
    for n, p in enumerate(pkts):
        if p.HasField("trace_attributes"):
            for a in p.trace_attributes.attribute:
                kind = a.WhichOneof("value")
                attrs[a.key] = str(getattr(a, kind)) if kind else ""
        if p.HasField("interned_data"):
            for e in p.interned_data.event_names:
                names[e.iid] = e.name
            for e in p.interned_data.debug_annotation_names:
                arg_names[e.iid] = e.name
        data = p.WhichOneof("data")
        if data == "track_descriptor":
            d = p.track_descriptor
            if d.uuid in tracks:
                fail(f"packet {n}: track {d.uuid} described twice")
            tracks[d.uuid] = d
            if off_cpu_track(tracks, d) or wakeup_track(tracks, d) or irq_track(tracks, d):
                off_packets.add(n)
            if d.name == "vCPU time" and not d.HasField("counter"):
                # The group of a vCPU thread's account: under the thread's track, its children by rank.
                parent = tracks.get(d.parent_uuid)
                if parent is None or not parent.HasField("thread") or parent.thread.pid >= (1 << 22):
                    fail(f"packet {n}: the account's group is not under a vCPU thread's track")
                off_packets.add(n)
            if d.HasField("counter"):
                off_packets.add(n)
                m = re.fullmatch(r"vCPU time: (\w+)", d.name)
                group = tracks.get(d.parent_uuid)
                parent = tracks.get(group.parent_uuid) if group is not None and group.name == "vCPU time" else None
                if not m or m[1] not in STATES or parent is None or not parent.HasField("thread") or \
                        parent.thread.pid >= (1 << 22):
                    fail(f"packet {n}: counter track {d.name!r} is not in a vCPU thread's account group")
                if d.sibling_order_rank != STATES.index(m[1]):
                    fail(f"packet {n}: counter track {d.name!r} ranked {d.sibling_order_rank}")
                counters[d.uuid] = ((parent.thread.pid, parent.thread.tid), m[1])
        elif data == "track_event":
            e = p.track_event
            if e.track_uuid not in tracks:
                fail(f"packet {n}: track {e.track_uuid:#x} used before it is described")
            if p.trusted_packet_sequence_id != 1:
                fail(f"packet {n}: a track event outside the interning sequence")
            if e.track_uuid in last_ts and p.timestamp < last_ts[e.track_uuid]:
                fail(f"packet {n}: time goes back on track {e.track_uuid:#x}: {p.timestamp} < {last_ts[e.track_uuid]}")
            last_ts[e.track_uuid] = p.timestamp
            name = None
            if e.HasField("name_iid"):
                if e.name_iid not in names:
                    fail(f"packet {n}: event name iid {e.name_iid} used before it is interned")
                name = names[e.name_iid]
            elif e.HasField("name"):
                name = e.name
            argv = {}
            for a in e.debug_annotations:
                key = arg_names.get(a.name_iid) if a.HasField("name_iid") else a.name
                if key is None:
                    fail(f"packet {n}: annotation name iid {a.name_iid} used before it is interned")
                for d in a.dict_entries:
                    if d.HasField("name_iid") and d.name_iid not in arg_names:
                        fail(f"packet {n}: annotation name iid {d.name_iid} used before it is interned")
                kind = a.WhichOneof("value")
                argv[key] = getattr(a, kind) if kind else {arg_names[d.name_iid]: getattr(d, d.WhichOneof("value"))
                                                           for d in a.dict_entries}
            for f in e.flow_ids:
                flows_out[f] = p.timestamp
            for f in e.terminating_flow_ids:
                flows_in[f] = p.timestamp
            td = tracks[e.track_uuid]
            if e.track_uuid in counters:
                off_packets.add(n)
                key, state = counters[e.track_uuid]
                account[key][state].append((p.timestamp, e.double_counter_value))
            elif td.HasField("thread") and td.thread.pid < (1 << 22):  # a vCPU thread: the host's slices
                st = stacks[e.track_uuid]
                if e.type == pb.TrackEvent.TYPE_SLICE_BEGIN:
                    st.append([p.timestamp, name, argv, []])
                elif e.type == pb.TrackEvent.TYPE_SLICE_END:
                    if not st:
                        fail(f"packet {n}: a slice ends on track {e.track_uuid:#x} with none open")
                    ts, nm, av, kids = st.pop()
                    if st:
                        st[-1][3].append((nm, ts, p.timestamp - ts))
                    else:
                        slices.append((td.thread.pid, td.thread.tid, ts, p.timestamp - ts, nm, av, kids))
            elif td.HasField("thread") and e.type == pb.TrackEvent.TYPE_SLICE_BEGIN:
                calls += 1
            elif boot_track(tracks, td):
                pid = tracks[td.parent_uuid].process.pid
                slices_of, instants_of = boots.setdefault(pid, ([], []))
                if e.type in (pb.TrackEvent.TYPE_SLICE_BEGIN, pb.TrackEvent.TYPE_SLICE_END):
                    s = flat_slice(pb, boot_open, e, n, p.timestamp, name, argv, "boot phases", "a boot phase",
                                   f"the boot track of process {pid}")
                    if s:
                        slices_of.append(s)
                elif e.type == pb.TrackEvent.TYPE_INSTANT:
                    instants_of.append((p.timestamp, name, argv))
                else:
                    fail(f"packet {n}: an event of type {e.type} on the boot track of process {pid}")
            elif initcall_track(tracks, td):
                pid = tracks[td.parent_uuid].process.pid
                ic_levels, ic_calls, ic_lanes = initcalls.setdefault(pid, ([], [], set()))
                ic_lanes.add(td.name)
                if e.type in (pb.TrackEvent.TYPE_SLICE_BEGIN, pb.TrackEvent.TYPE_SLICE_END):
                    s = flat_slice(pb, initcall_open, e, n, p.timestamp, name, argv, "initcall slices",
                                   "an initcall slice", f"track {td.name!r} of process {pid}")
                    if s and td.name == "initcall levels":
                        ic_levels.append(s)
                    elif s:
                        ic_calls.append(("slice",) + s)
                elif e.type == pb.TrackEvent.TYPE_INSTANT and td.name != "initcall levels":
                    ic_calls.append(("instant", p.timestamp, p.timestamp, name, argv))
                else:
                    fail(f"packet {n}: an event of type {e.type} on initcall track {td.name!r} of process {pid}")
            elif wakeup_track(tracks, td) or irq_track(tracks, td):
                off_packets.add(n)
                key = (tracks[td.parent_uuid].process.pid, int(re.search(r"\(tid (\d+)\)$", td.name)[1]))
                kept, open_slices, noun = (wakeups, wakeup_open, "wake-up") if wakeup_track(tracks, td) else \
                    (irqs, irq_open, "interrupt delivery")
                if e.type in (pb.TrackEvent.TYPE_SLICE_BEGIN, pb.TrackEvent.TYPE_SLICE_END):
                    s = flat_slice(pb, open_slices, e, n, p.timestamp, name, argv, f"{noun} slices",
                                   f"a {noun} slice", f"track {td.name!r}")
                    if s:
                        kept.append(key + s)
                        if kept is irqs:
                            irq_lanes.add(td.name)
                else:
                    fail(f"packet {n}: an event of type {e.type} on {noun} track {td.name!r}")
            elif off_cpu_track(tracks, td):
                off_packets.add(n)
                m = re.search(r"\(tid (\d+)\)$", td.name)
                if not m:
                    fail(f"packet {n}: off-CPU track {td.name!r} does not name its thread")
                key = (tracks[td.parent_uuid].process.pid, int(m[1]))
                if e.type in (pb.TrackEvent.TYPE_SLICE_BEGIN, pb.TrackEvent.TYPE_SLICE_END):
                    off_key[e.track_uuid] = key
                    s = flat_slice(pb, off_open, e, n, p.timestamp, name, argv, "off-CPU slices",
                                   "an off-CPU slice", f"track {td.name!r}")
                    if s:
                        # The end's arguments (the switch-in's) join the begin's.
                        begin, end, nm, av = s
                        off_slices.append(key + (begin, end, nm, {**av, **argv}))
                else:
                    fail(f"packet {n}: an event of type {e.type} on off-CPU track {td.name!r}")
        elif data == "ftrace_events":
            b = p.ftrace_events
            for ev in b.event:
                # The switch into a gap of lost switches is written when the gap is found, back at the time
                # the gap starts (the sorter orders it, sched_import); nothing else goes back.
                if ev.HasField("sched_switch") and stand_in(ev.sched_switch.next_pid):
                    continue
                if ev.timestamp < last_cpu_ts.get(b.cpu, 0):
                    fail(f"packet {n}: time goes back on ftrace CPU {b.cpu}")
                last_cpu_ts[b.cpu] = ev.timestamp
                switches += ev.HasField("sched_switch") and not stand_in(ev.sched_switch.prev_pid)
    for st in stacks.values():
        if st:
            fail(f"{len(st)} slices never end")
    if boot_open:
        fail(f"{len(boot_open)} boot phases never end")
    boot_summary = check_boots(boots, boot_csv)
    if initcall_open:
        fail(f"{len(initcall_open)} initcall slices never end")
    initcall_summary = check_initcalls(initcalls, initcalls_csv)
    if wakeup_open or irq_open:
        fail(f"{len(wakeup_open)} wake-up and {len(irq_open)} interrupt delivery slices never end")
    wakeup_summary = check_latency(wakeups, wakeups_csv, "wakeup", "wake-up")
    irq_summary = check_latency(irqs, wakeups_csv, "irq", "interrupt delivery") + f" on {len(irq_lanes)} tracks"
    rules = import_rules(pb, pkts)
    with open(args[2], newline="") as f:
        rows = list(csv.DictReader(f))
    # The export gives ftrace CPUs to the first 8 VMs with guest events, in file order (docs/exports.md).
    ftrace_vms = []
    for r in rows:
        if r.get("event") and 1100 <= int(r["nr"]) <= 1199 and r["host_pid"] not in ftrace_vms:
            ftrace_vms.append(r["host_pid"])
    ftrace_vms = set(ftrace_vms[:8])
    # The guests' scheduling as the trace processor imports it: no thread left running, each gap of lost
    # switches shown unknown, as many as report --csv's broken chains, and counted in an attribute.
    utsname = next((p.system_info.utsname for p in pkts if p.WhichOneof("data") == "system_info"), None)
    sched_slices, unknown_tasks = sched_import(pkts, kernel_version(utsname))
    gaps, want_gaps = lost_switch_gaps(sched_slices), broken_chains(rows, ftrace_vms)
    counted = int(attrs.get("dev.hypertrace.lost_guest_switches", "0"))
    if gaps != want_gaps or counted != want_gaps:
        fail(f"{gaps} gaps of lost guest switches on the CPU tracks and {counted} counted "
             f"(dev.hypertrace.lost_guest_switches); report --csv's sched_switch rows break {want_gaps} chains")
    rows.sort(key=lambda r: (int(r["exit_ns"]), int(r["host_tid"])))
    slices.sort(key=lambda s: (s[2], s[1]))
    if len(rows) != len(slices):
        fail(f"{len(slices)} hypercall slices, report --csv has {len(rows)} records")
    for r, s in zip(rows, slices):
        pid, tid, ts, dur, name, av, kids = s
        want = {"nr": int(r["nr"]), "a0": int(r["a0"], 16), "a1": int(r["a1"], 16), "a2": int(r["a2"], 16),
                "a3": int(r["a3"], 16), "guest_rip": int(r["guest_rip"], 16), "exit_reason": int(r["exit_reason"], 16),
                "isa": r["isa"], "vcpu_id": int(r["vcpu_id"]), "exit_cpu": int(r["exit_cpu"]),
                "entry_cpu": int(r["entry_cpu"]), "flags": int(r["flags"], 16)}
        got = {k: av.get(k) for k in want}
        phases = [("exit->hypercall", ts, int(r["exit_to_hcall_ns"])),
                  ("hypercall->entry", ts + int(r["exit_to_hcall_ns"]), int(r["hcall_to_entry_ns"]))]
        ev = r.get("event") or ""
        if (pid, tid, ts, dur) != (int(r["host_pid"]), int(r["host_tid"]), int(r["exit_ns"]), int(r["total_ns"])) \
                or got != want or kids != phases or not (name == f"hypercall {r['nr']}" or (ev and name.startswith(ev))):
            fail(f"slice {s[:5]} {got} {kids} is not the record {r}")
    if set(flows_out) != set(flows_in):
        fail(f"{len(set(flows_out) ^ set(flows_in))} flows have only one end")
    for f, ts in flows_out.items():
        if flows_in[f] != ts:
            fail(f"flow {f}: the guest event at {ts}, its hypercall at {flows_in[f]}")
    want_switches = sum(1 for r in rows if r.get("event") == "sched_switch" and r["host_pid"] in ftrace_vms)
    if switches != want_switches:
        fail(f"{switches} guest sched_switch ftrace events, report --csv decodes {want_switches}")
    for track, (ts, nm, av) in off_open.items():
        off_slices.append(off_key[track] + (ts, None, nm, av))
    switches_recorded = attrs.get("dev.hypertrace.vcpu_switches_recorded") == "1"
    on_stretches = check_switches_physical(off_slices) if switches_recorded else 0
    threads, samples, intervals, worst = check_account(account, off_slices, switches_recorded, vcpu_time_csv, slack)
    want_off = expected_off_cpu(switches_csv) if switches_csv else []
    if sorted(off_slices, key=repr) != sorted(want_off, key=repr):
        got, want = set(map(repr, off_slices)), set(map(repr, want_off))
        fail(f"off-CPU slices differ from report --vcpu-switches --csv: export only {sorted(got - want)[:3]}, "
             f"report only {sorted(want - got)[:3]} ({len(off_slices)} vs {len(want_off)})")
    for key, value in want_attrs.items():
        if (value == "" and key in attrs) or (value != "" and attrs.get(key) != value):
            fail(f"trace attribute {key}: {attrs.get(key, '(none)')}, want {value or '(none)'}")
    if off_packets:
        # Chrome's JSON has no switches, wake-ups or account: the size to compare with it is the trace's without them.
        print(f"  {size_without(pkts, off_packets)} bytes without the off-CPU tracks and the account")
    print(f"  {len(pkts)} packets ({bundles} deflated bundles), {len(tracks)} tracks, {len(slices)} hypercall "
          f"slices = report --csv, {len(flows_in)} flows, {switches} guest sched_switch, {calls} guest calls, "
          f"{len(off_slices)} off-CPU slices = report --vcpu-switches --csv "
          f"({sum(1 for s in off_slices if s[3] is None)} never ended)")
    print(f"  vCPU account: {threads} threads, {samples} samples of 6 states adding up to each thread's time"
          + (f", {intervals} intervals whose wait+halted+blocked is the off-CPU slices' time (largest difference "
             f"{worst} ns), {on_stretches} on-CPU stretches, one thread per CPU at a time"
             if switches_recorded else ", switches not recorded")
          + (", last samples = report --vcpu-time --csv" if vcpu_time_csv else ""))
    print(f"  import rules: {rules}")
    if boot_csv:
        print(f"  boots: {boot_summary}")
    if initcalls_csv:
        print(f"  initcalls: {initcall_summary}")
    if wakeups_csv:
        print(f"  wake-ups: {wakeup_summary}")
        print(f"  interrupts: {irq_summary}")
    print(f"  guest scheduling as imported: {sum(map(len, sched_slices.values()))} sched slices on "
          f"{len(sched_slices)} CPUs, 0 mismatched_sched_switch_tids, no thread left running; {gaps} gaps of lost "
          f"switches shown unknown = report --csv's broken chains = dev.hypertrace.lost_guest_switches, "
          f"{unknown_tasks} tasks left in state unknown")
    print("check_perfetto: OK")


if __name__ == "__main__":
    main()
