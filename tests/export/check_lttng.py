#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Reads a `convert --lttng` experiment with babeltrace2's Python API (bt2),
as Trace Compass's virtual machine analysis does, and checks it against
`report`'s view of the same trace file.

    check_lttng.py EXPERIMENT REPORT.csv [REPORT.sched] [--switches SWITCHES.csv]

- Host and guests are told apart and matched as the VM analysis does: a
  trace with kvm_* events is the host; a guest names its vm_uid in its
  vmsync_*_guest events; the host's vmsync_gh_host of that vm_uid names the
  VM's process (pid context). Every vmsync message of one side has exactly
  one of the other side with the same (vm_uid, cnt), sent no later than it
  is received.
- The virtual CPU state model: for each vCPU, every instant is in one
  state, by precedence preempted on the host (the host's sched_switch of the
  vCPU thread out, to the one back in: Trace Compass's VM analysis marks the
  vCPU preempted whenever its thread leaves its host CPU, whatever its
  prev_state) > in the hypervisor (kvm_x86_exit to kvm_x86_entry) > guest
  running (a guest task other than the idle one, from the guest's
  sched_switch) > idle; before the first guest sched_switch, and after the
  module's unload, the guest part is unknown. Prints each vCPU's times.
- Each vCPU's time in the hypervisor equals the sum of report --csv's
  total_ns of its records, each guest task's run time per vCPU equals the one
  computed from report --csv's decoded sched_switch rows (a run ends at the
  switch out, the module's unload or the recording's end), exactly in ns;
  and report --sched's run_ms, to its microsecond.
- Each vCPU's preempted time equals, exactly in ns, the sum of its thread's
  switch-out to next switch-in intervals in SWITCHES.csv (report
  --vcpu-switches --csv), from its first hypercall record on (the VM
  analysis knows a vCPU thread from its kvm_x86_* events); split by the sched_switch's prev_state (lttng's
  TASK_REPORT_MAX: preempted; a task state: blocked), the preempted part
  equals the intervals from switch-outs with involuntary=1, the blocked part
  those with involuntary=0. Without --switches the host must have no
  sched_switch of a vCPU thread.
"""
import collections
import csv
import re
import sys

import bt2

PREEMPTED, HYPERVISOR, RUNNING, IDLE = "preempted", "hypervisor", "running", "idle"
# lttng-modules' prev_state of a task switched out while still runnable (the kernel's TASK_REPORT_MAX).
TASK_REPORT_MAX = 0x100


def fail(msg):
    print(f"check_lttng: {msg}")
    sys.exit(1)


def events(path):
    for msg in bt2.TraceCollectionMessageIterator(path):
        if type(msg) is bt2._EventMessageConst:
            yield msg


def read_experiment(path):
    hyp = collections.defaultdict(list)      # (pid, vcpu) -> [(exit, entry)]
    preempt = collections.defaultdict(list)  # (pid, vcpu) -> [(out, in, involuntary)]
    runs = collections.defaultdict(list)     # (vm_uid, cpu) -> [(start, end, tid)]
    sync_host, sync_guest = {}, {}           # (kind, vm_uid, cnt) -> ts
    uid_pid, tid_vcpu, open_exit, out_since, cur = {}, {}, {}, {}, {}
    ends = {}
    guests, host_seen, end = set(), False, None
    for msg in events(path):
        ev = msg.event
        ts = msg.default_clock_snapshot.value
        env = ev.stream.trace.environment
        hostname = str(env["hostname"])
        ctx = ev.common_context_field
        p = ev.payload_field
        name = ev.name
        if end is None and "recording_end_monotonic_ns" in env:
            end = int(env["recording_end_monotonic_ns"])
        if name.startswith("kvm_x86_") or name in ("vmsync_gh_host", "vmsync_hg_host"):
            host_seen = True
            key = (int(ctx["tid"]))
            if name == "kvm_x86_exit":
                if "vcpu_id" in p:
                    tid_vcpu[key] = (int(ctx["pid"]), int(p["vcpu_id"]))
                open_exit[key] = ts
            elif name == "kvm_x86_entry":
                tid_vcpu[key] = (int(ctx["pid"]), int(p["vcpu_id"]))
                if key in open_exit:
                    hyp[tid_vcpu[key]].append((open_exit.pop(key), ts))
            elif name.startswith("vmsync_"):
                k = (name[7:9], int(p["vm_uid"]), int(p["cnt"]))
                if k in sync_host:
                    fail(f"{name} {k} twice on the host")
                sync_host[k] = ts
                uid_pid.setdefault(int(p["vm_uid"]), int(ctx["pid"]))
            continue
        if name == "sched_switch" and hostname == "host":
            # The host's scheduling of vCPU threads: the thread out is preempted until it is back.
            if int(p["prev_tid"]) in tid_vcpu:
                state = int(p["prev_state"])
                out_since[int(p["prev_tid"])] = (ts, state in (0, TASK_REPORT_MAX))
            t = int(p["next_tid"])
            if t in out_since and t in tid_vcpu:
                since, involuntary = out_since.pop(t)
                preempt[tid_vcpu[t]].append((since, ts, involuntary))
            continue
        uid = int(env["vm_uid"])
        guests.add(uid)
        cpu = int(ev.packet.context_field["cpu_id"])
        if name in ("vmsync_gh_guest", "vmsync_hg_guest"):
            k = (name[7:9], int(p["vm_uid"]), int(p["cnt"]))
            if k in sync_guest:
                fail(f"{name} {k} twice in the guest")
            sync_guest[k] = ts
        elif name == "sched_switch":
            if (uid, cpu) in cur:
                start, tid = cur[(uid, cpu)]
                if tid == int(p["prev_tid"]):
                    runs[(uid, cpu)].append((start, ts, tid))
            cur[(uid, cpu)] = (ts, int(p["next_tid"]))
        elif name == "hypertrace_module" and int(p["state"]) == 0:
            for (u, c), (start, tid) in list(cur.items()):
                if u == uid:
                    runs[(u, c)].append((start, ts, tid))
                    del cur[(u, c)]
            ends[uid] = ts
    if not host_seen:
        fail("no host trace (no kvm_x86_* events)")
    if end is None:
        fail("the host's env has no recording_end_monotonic_ns")
    for (u, c), (start, tid) in cur.items():
        runs[(u, c)].append((start, end, tid))
    return hyp, preempt, runs, sync_host, sync_guest, uid_pid, guests, end


def check_sync(sync_host, sync_guest, uid_pid, guests):
    for uid in guests:
        if uid not in uid_pid:
            fail(f"guest vm_uid {uid} has no vmsync_gh_host on the host: the VM analysis cannot find its process")
    n = 0
    for (kind, uid, cnt), ts in sync_guest.items():
        h = sync_host.get((kind, uid, cnt))
        if h is None:
            fail(f"vmsync_{kind}_guest vm_uid {uid} cnt {cnt} has no host counterpart")
        # gh: the guest sends, the host receives; hg: the other way round.
        send, recv = (ts, h) if kind == "gh" else (h, ts)
        if send > recv:
            fail(f"vmsync_{kind} vm_uid {uid} cnt {cnt}: received at {recv} before it was sent at {send}")
        n += 1
    if n != len(sync_host):
        fail(f"{len(sync_host)} vmsync messages on the host, {n} matched in the guests")
    return n


def state_times(hyp, preempt, runs, vm):
    """Per vCPU (pid, vcpu): ns in each state, by precedence, and hypervisor time under each guest state."""
    out = {}
    for key in set(hyp) | set(preempt) | {(vm.get(u), c) for u, c in runs}:
        pid, vcpu = key
        uid = next((u for u, p in vm.items() if p == pid), None)
        marks = []
        for a, b, _ in preempt.get(key, []):
            marks += [(a, 0, +1), (b, 0, -1)]
        for a, b in hyp.get(key, []):
            marks += [(a, 1, +1), (b, 1, -1)]
        for a, b, tid in runs.get((uid, vcpu), []):
            layer = 2 if tid else 3
            marks += [(a, layer, +1), (b, layer, -1)]
        marks.sort()
        depth, times, last = [0, 0, 0, 0], collections.Counter(), None
        for ts, layer, d in marks:
            if last is not None and ts > last:
                top = next((i for i in range(4) if depth[i] > 0), None)
                if top is not None:
                    times[(PREEMPTED, HYPERVISOR, RUNNING, IDLE)[top]] += ts - last
                    # What the guest believed meanwhile (Trace Compass shows both).
                    if top in (0, 1) and depth[2]:
                        times["host while running"] += ts - last
                    elif top in (0, 1) and depth[3]:
                        times["host while idle"] += ts - last
            depth[layer] += d
            last = ts
        out[key] = times
    return out


def expected_from_csv(path, end):
    total = collections.Counter()
    runs = collections.Counter()
    cur = {}
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        total[(int(r["host_pid"]), int(r["vcpu_id"]))] += int(r["total_ns"])
    for r in sorted(rows, key=lambda r: int(r["exit_ns"])):
        ev, fields = r.get("event", ""), dict(re.findall(r'(\w+)=("[^"]*"|\S+)', r.get("fields", "")))
        pid, ts = int(r["host_pid"]), int(r["exit_ns"])
        if ev == "sched_switch":
            cpu = int(fields["cpu_id"])
            if (pid, cpu) in cur and cur[(pid, cpu)][1] == int(fields["prev_tid"]):
                runs[(pid, cpu, cur[(pid, cpu)][1])] += ts - cur[(pid, cpu)][0]
            cur[(pid, cpu)] = (ts, int(fields["next_tid"]))
        elif ev == "hypertrace_module" and fields.get("state") == "0":
            for (p, c) in [k for k in cur if k[0] == pid]:
                runs[(p, c, cur[(p, c)][1])] += ts - cur[(p, c)][0]
                del cur[(p, c)]
    for (p, c), (ts, tid) in cur.items():
        runs[(p, c, tid)] += end - ts
    return total, runs


def expected_switches(path, known_since):
    """report --vcpu-switches --csv: (pid, vcpu) -> [preempted ns, blocked ns], each switch-out to its
    thread's next switch-in (a later switch-out replaces an earlier one whose switch-in was lost).
    Only from the time the VM analysis knows the thread as a vCPU's (known_since: tid -> ns)."""
    out, open_out = collections.defaultdict(lambda: [0, 0]), {}
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            tid, ts = int(r["host_tid"]), int(r["time_ns"])
            if ts < known_since.get(tid, float("inf")):
                continue
            if r["switch"] == "out":
                open_out[tid] = (ts, int(r["involuntary"]))
            elif r["switch"] == "in" and tid in open_out:
                since, involuntary = open_out.pop(tid)
                out[(int(r["host_pid"]), int(r["vcpu_id"]))][0 if involuntary else 1] += ts - since
    return out


def exit_has_vcpu(exp):
    """Whether the host's kvm_x86_exit names its vCPU (kernels 5.10 and newer): then the analysis knows a
    vCPU thread from its first exit, else from its first entry."""
    return "_vcpu_id;" in open(exp + "/host/metadata").read().split('name = "kvm_x86_exit";')[1].split("};")[0]


def vcpu_threads_known(path, at_exit):
    """report --csv: tid -> the time its first record names it as a vCPU's thread (its kvm_x86_* events):
    a switch before that is no vCPU's to the VM analysis, which learns vCPU threads from those events."""
    known = {}
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            t = int(r["exit_ns"]) + (0 if at_exit else int(r["total_ns"]))
            tid = int(r["host_tid"])
            known[tid] = min(known.get(tid, t), t)
    return known


def sched_report(path):
    """report --sched: (pid, vcpu, tid) -> run_ms text."""
    out, key = {}, None
    for line in open(path):
        m = re.match(r"vCPU (\d+) of VM pid (\d+):", line)
        if m:
            key = (int(m[2]), int(m[1]))
            continue
        if line.startswith("VM pid"):
            key = None
            continue
        m = re.match(r"\s+(\d+)\s+.*?\s+(\d+)\s+(\d+\.\d{3})\s+\d+\.\d%$", line.rstrip())
        if key and m:
            out[key + (int(m[1]),)] = m[3]
    return out


def main():
    args = sys.argv[1:]
    switches_csv, switches = None, None
    if "--switches" in args:
        i = args.index("--switches")
        switches_csv = args[i + 1]
        del args[i:i + 2]
    if len(args) not in (2, 3):
        sys.exit(__doc__)
    sys.argv[1:] = args
    hyp, preempt, runs, sync_host, sync_guest, uid_pid, guests, end = read_experiment(sys.argv[1])
    matched = check_sync(sync_host, sync_guest, uid_pid, guests)
    times = state_times(hyp, preempt, runs, uid_pid)
    want_hyp, want_runs = expected_from_csv(sys.argv[2], end)
    if switches_csv:
        switches = expected_switches(switches_csv, vcpu_threads_known(sys.argv[2], exit_has_vcpu(sys.argv[1])))
    problems = []
    for key in sorted(set(want_hyp) | {k for k in times if k[0] is not None}):
        got = sum(b - a for a, b in hyp.get(key, []))
        if got != want_hyp.get(key, 0):
            problems.append(f"vCPU {key}: {got} ns in the hypervisor, report --csv sums {want_hyp.get(key, 0)}")
    got_runs = collections.Counter()
    for (uid, cpu), lst in runs.items():
        for a, b, tid in lst:
            got_runs[(uid_pid[uid], cpu, tid)] += b - a
    if got_runs != want_runs:
        diff = {k: (got_runs.get(k), want_runs.get(k)) for k in set(got_runs) | set(want_runs)
                if got_runs.get(k) != want_runs.get(k)}
        problems.append(f"guest task run times differ from report --csv's (ns, export vs report): {diff}")
    if len(sys.argv) == 4:
        report = sched_report(sys.argv[3])
        mine = {k: f"{v / 1e6:.3f}" for k, v in got_runs.items()}
        if report != mine or not report:
            problems.append(f"report --sched run_ms {report} differ from the export's {mine}")
    if switches is None and preempt:
        problems.append(f"the host has sched_switch events of vCPU threads {sorted(preempt)}: give --switches")
    for key in sorted(set(switches or {}) | {k for k in preempt if k[0] is not None}):
        got = [sum(b - a for a, b, inv in preempt.get(key, []) if inv == want_inv) for want_inv in (True, False)]
        want = list((switches or {}).get(key, [0, 0]))
        if got != want:
            problems.append(f"vCPU {key}: off its host CPU {got[0]} ns preempted and {got[1]} ns blocked, "
                            f"report --vcpu-switches --csv gives {want[0]} and {want[1]}")
        if times.get(key, collections.Counter())[PREEMPTED] != sum(want):
            problems.append(f"vCPU {key}: the state model's preempted time {times.get(key, {}).get(PREEMPTED, 0)} ns "
                            f"is not its thread's time off its host CPU, {sum(want)} ns")
    for key in sorted(k for k in times if k[0] is not None):
        t = times[key]
        span = sum(t[s] for s in (PREEMPTED, HYPERVISOR, RUNNING, IDLE))
        running = sum(v for (p, c, tid), v in got_runs.items() if (p, c) == key and tid)
        idle = sum(v for (p, c, tid), v in got_runs.items() if (p, c) == key and not tid)
        # The guest's own view is the model's running/idle plus the host's time (hypervisor, preempted) under it.
        if t[RUNNING] + t["host while running"] != running or t[IDLE] + t["host while idle"] != idle:
            problems.append(f"vCPU {key}: the state model's guest time does not add up to its task runs")
        inv = sum(b - a for a, b, i in preempt.get(key, []) if i)
        print(f"  vCPU {key[1]} of VM pid {key[0]}: running {t[RUNNING]} ns, hypervisor {t[HYPERVISOR]} ns, "
              f"preempted {t[PREEMPTED]} ns (off its host CPU: {inv} preempted, {t[PREEMPTED] - inv} blocked), "
              f"idle {t[IDLE]} ns ({span} ns with a known state)")
    print(f"  {matched} vmsync messages matched between host and {len(guests)} guest(s)")
    if problems:
        fail("; ".join(problems))
    print("check_lttng: OK")


if __name__ == "__main__":
    main()
