#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Reads a `convert --lttng` experiment with babeltrace2's Python API (bt2),
as Trace Compass's virtual machine analysis does, and checks it against
`report`'s view of the same trace file.

    check_lttng.py EXPERIMENT REPORT.csv [REPORT.sched]

- Host and guests are told apart and matched as the VM analysis does: a
  trace with kvm_* events is the host; a guest names its vm_uid in its
  vmsync_*_guest events; the host's vmsync_gh_host of that vm_uid names the
  VM's process (pid context). Every vmsync message of one side has exactly
  one of the other side with the same (vm_uid, cnt), sent no later than it
  is received.
- The virtual CPU state model: for each vCPU, every instant is in one
  state, by precedence preempted on the host (the host's sched_switch of the
  vCPU thread) > in the hypervisor (kvm_x86_exit to kvm_x86_entry) > guest
  running (a guest task other than the idle one, from the guest's
  sched_switch) > idle; before the first guest sched_switch, and after the
  module's unload, the guest part is unknown. Prints each vCPU's times.
- Each vCPU's time in the hypervisor equals the sum of report --csv's
  total_ns of its records, each guest task's run time per vCPU equals the one
  computed from report --csv's decoded sched_switch rows (a run ends at the
  switch out, the module's unload or the recording's end), exactly in ns;
  and report --sched's run_ms, to its microsecond.
"""
import collections
import csv
import re
import sys

import bt2

PREEMPTED, HYPERVISOR, RUNNING, IDLE = "preempted", "hypervisor", "running", "idle"


def fail(msg):
    print(f"check_lttng: {msg}")
    sys.exit(1)


def events(path):
    for msg in bt2.TraceCollectionMessageIterator(path):
        if type(msg) is bt2._EventMessageConst:
            yield msg


def read_experiment(path):
    hyp = collections.defaultdict(list)      # (pid, vcpu) -> [(exit, entry)]
    preempt = collections.defaultdict(list)  # (pid, vcpu) -> [(out, in)]
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
                out_since[int(p["prev_tid"])] = ts
            t = int(p["next_tid"])
            if t in out_since and t in tid_vcpu:
                preempt[tid_vcpu[t]].append((out_since.pop(t), ts))
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
        for a, b in preempt.get(key, []):
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
                    if top == 1 and depth[2]:
                        times["hypervisor while running"] += ts - last
                    elif top == 1 and depth[3]:
                        times["hypervisor while idle"] += ts - last
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
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    hyp, preempt, runs, sync_host, sync_guest, uid_pid, guests, end = read_experiment(sys.argv[1])
    matched = check_sync(sync_host, sync_guest, uid_pid, guests)
    times = state_times(hyp, preempt, runs, uid_pid)
    want_hyp, want_runs = expected_from_csv(sys.argv[2], end)
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
    for key in sorted(k for k in times if k[0] is not None):
        t = times[key]
        span = sum(t[s] for s in (PREEMPTED, HYPERVISOR, RUNNING, IDLE))
        running = sum(v for (p, c, tid), v in got_runs.items() if (p, c) == key and tid)
        idle = sum(v for (p, c, tid), v in got_runs.items() if (p, c) == key and not tid)
        # The guest's own view is the model's running/idle plus the hypervisor time spent under it.
        if t[RUNNING] + t["hypervisor while running"] != running or t[IDLE] + t["hypervisor while idle"] != idle:
            problems.append(f"vCPU {key}: the state model's guest time does not add up to its task runs")
        print(f"  vCPU {key[1]} of VM pid {key[0]}: running {t[RUNNING]} ns, hypervisor {t[HYPERVISOR]} ns, "
              f"preempted {t[PREEMPTED]} ns, idle {t[IDLE]} ns ({span} ns with a known state)")
    print(f"  {matched} vmsync messages matched between host and {len(guests)} guest(s)")
    if problems:
        fail("; ".join(problems))
    print("check_lttng: OK")


if __name__ == "__main__":
    main()
