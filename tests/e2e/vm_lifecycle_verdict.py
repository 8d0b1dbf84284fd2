#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Checks what tests/e2e/test_nested_lifecycle.sh brought back from the
nested machine; prints one PASS:/FAIL: line per check.

Usage: vm_lifecycle_verdict.py FILES_DIR VM_CSV ALL_CSV RESTARTS

FILES_DIR holds what the nested machine's script left: problems (what went
wrong on the way, if anything), qemu.pids ("I PID"
for QEMU number I of the VM web1), impostor.pid, agg<I>.prom (the --no-file
--exits --metrics --vm web1 recording's /metrics after QEMU I stopped),
agg_end.prom (the same past its grace period after the last QEMU), all.prom,
the recordings' .out/.err/.rc and the trace files vm.htr (--vm web1) and
all.htr (whole host). VM_CSV and ALL_CSV are `report --csv` of those files.
The guest issues hypercall nr 1000 with a0 = 0, 1, 2, ... every 5 ms from its
start, so the whole-host file tells when each QEMU made its first hypercall
exit, and a0 tells where another recording began.
"""
import csv
import os
import re
import struct
import sys

VM = "web1"
PICKUP_LIMIT_NS = 1_000_000_000
MIN_PER_VM = 100  # the script stops a QEMU once agg has counted this many of its hypercalls

files, vm_csv, all_csv, restarts = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])


def verdict(name, problems):
    if problems:
        print(f"FAIL: lifecycle_{name}: " + "; ".join(problems[:4]) + (f" (+{len(problems) - 4} more)" if len(problems) > 4 else ""))
    else:
        print(f"PASS: lifecycle_{name}")


def text(name, default=""):
    try:
        with open(os.path.join(files, name), encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return default


def records(path):
    """{pid: {a0: exit_ns}} of the nr-1000 rows of a report --csv, and the rows' names by pid."""
    by_pid, names = {}, {}
    try:
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                if row["nr"] != "1000":
                    continue
                pid = int(row["host_pid"])
                a0 = int(row["a0"], 0)
                by_pid.setdefault(pid, {})[a0] = int(row["exit_ns"])
                names.setdefault(pid, set()).add((row["vm_name"], row["process_name"], row["thread_name"]))
    except (OSError, KeyError, ValueError) as e:
        print(f"info: cannot read {path}: {e}")
    return by_pid, names


def identities(path):
    """The IDENTITY entries of a trace file, in file order: (first_seen_ns, pid, tid, process, thread, vm)."""
    out = []
    try:
        data = open(path, "rb").read()
    except OSError:
        return out
    if data[:8] != b"HYPTRACE":
        return out
    off = struct.unpack_from("<I", data, 12)[0]
    cstr = lambda b: b.split(b"\0", 1)[0].decode("utf-8", "replace")
    while off + 24 <= len(data):
        magic, typ, _enc, plen, count, _raw, _crc = struct.unpack_from("<IHHIIII", data, off)
        if magic != 0x4B425448:
            break
        if typ == 3:
            for i in range(count):
                e = off + 24 + i * 112
                seen, pid, tid = struct.unpack_from("<QII", data, e)
                out.append((seen, pid, tid, cstr(data[e + 16:e + 32]), cstr(data[e + 32:e + 48]), cstr(data[e + 48:e + 112])))
        off += 24 + plen
    return out


LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def samples(prom):
    """[(metric, {label: value}, value)] of a text exposition."""
    out = []
    for line in prom.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.match(r"^(\w+)(?:\{(.*)\})? (\S+)$", line)
        if m:
            out.append((m.group(1), dict(LABEL.findall(m.group(2) or "")), float(m.group(3))))
    return out


def traced_lines(err):
    """{pid: why} from record -v's "VM 'web1': tracing process PID (WHY)" lines."""
    return {int(p): why for p, why in re.findall(r"VM '" + VM + r"': tracing process (\d+) \(([^)]*)\)", err)}


qemu = {}
for line in text("qemu.pids").splitlines():
    i, pid = line.split()
    qemu[int(i)] = int(pid)
impostor = int(text("impostor.pid", "0").strip() or 0)
order = [qemu[i] for i in sorted(qemu)]
all_recs, all_names = records(all_csv)
vm_recs, vm_names = records(vm_csv)

# --- every QEMU ran, and the three recordings ended well ---------------------------
p = []
if sorted(qemu) != list(range(restarts + 1)) or len(set(order)) != len(order):
    p.append(f"QEMU processes {qemu}, want {restarts + 1} distinct pids")
for r, unit in (("agg", "hypercalls"), ("vm", "records"), ("all", "records")):
    rc = text(f"{r}.rc").strip()
    summary = re.search(r"^hypertrace-bpf: (\d+) " + unit + r", (\d+) dropped", text(f"{r}.out"), re.M)
    if rc != "0":
        p.append(f"record {r} ended with status {rc or 'missing'}: {text(r + '.err')[-300:]!r}")
    elif not summary or summary.group(2) != "0":
        p.append(f"record {r}'s summary: {summary.group(0) if summary else 'none'} (want 0 dropped)")
p += text("problems").splitlines()
verdict(f"vm_started_{restarts + 1}_times_three_recordings_ended_0_dropped", p)

# --- the whole-host recording: each process from its first hypercall exit ----------
p = []
for i, pid in enumerate(order):
    got = all_recs.get(pid, {})
    a0s = sorted(got)
    if len(a0s) < MIN_PER_VM:
        p.append(f"QEMU {i} (pid {pid}): {len(a0s)} records")
        continue
    # QEMU 0 ran before the recordings started; the others from a0 = 0.
    if a0s != list(range(a0s[0], a0s[0] + len(a0s))) or (i > 0 and a0s[0] != 0):
        p.append(f"QEMU {i} (pid {pid}): a0 from {a0s[0]} to {a0s[-1]} in {len(a0s)} records, want 0, 1, 2, ...")
    if all_names.get(pid) != {(VM, "qemu-system-x86", "CPU 0/KVM")}:
        p.append(f"QEMU {i} (pid {pid}): names {all_names.get(pid)}")
others = sorted(set(all_recs) - set(order))
if others:
    p.append(f"records of other processes: {others}")
verdict("whole_host_traces_every_process_from_its_first_exit", p)

# --- IDENTITY blocks: each new process named as it comes ---------------------------
for r in ("vm", "all"):
    p = []
    ids = identities(os.path.join(files, f"{r}.htr"))
    pids = [e[1] for e in ids]
    if pids != order:
        p.append(f"{r}.htr names processes {pids}, want the QEMUs in the order they ran {order}")
    for seen, pid, tid, proc, thread, vm in ids:
        if (vm, proc, thread) != (VM, "qemu-system-x86", "CPU 0/KVM"):
            p.append(f"pid {pid} tid {tid}: vm {vm!r} process {proc!r} thread {thread!r}")
    if impostor in pids:
        p.append(f"the impostor {impostor} is named")
    verdict(f"{r}_file_identity_gains_each_new_process", p)

# --- the --vm file: each process from its pick-up to its end ----------------------
p, lat_vm = [], []
for i, pid in enumerate(order):
    want, got = all_recs.get(pid, {}), sorted(vm_recs.get(pid, {}))
    if not got:
        p.append(f"QEMU {i} (pid {pid}) not traced")
        continue
    first = got[0]
    if i > 0:
        tail = [a for a in sorted(want) if a >= first]
        if got != tail:
            p.append(f"QEMU {i}: a0 {got[0]}..{got[-1]} ({len(got)}), want {tail[:1]}..{tail[-1:]} ({len(tail)}) as the whole-host file from there")
        elif 0 in want:
            lat_vm.append(want[first] - want[0])
    elif got != list(range(first, first + len(got))) or got[-1] != max(want, default=-1):
        p.append(f"QEMU 0: a0 {got[0]}..{got[-1]} ({len(got)}), not whole to its end {max(want, default=-1)}")
    if vm_names.get(pid) != {(VM, "qemu-system-x86", "CPU 0/KVM")}:
        p.append(f"QEMU {i}: names {vm_names.get(pid)}")
if set(vm_recs) - set(order):
    p.append(f"records of other processes: {sorted(set(vm_recs) - set(order))}")
verdict("vm_file_traces_each_process_from_pickup_to_its_end", p)
slow = [f"QEMU {i + 1}: {ns / 1e9:.3f} s" for i, ns in enumerate(lat_vm) if ns > PICKUP_LIMIT_NS]
if len(lat_vm) != restarts:
    slow.append(f"{len(lat_vm)} pick-ups measured, want {restarts}")
if lat_vm:
    print(f"info: --vm file: traced {min(lat_vm) / 1e6:.0f}-{max(lat_vm) / 1e6:.0f} ms after the first hypercall exit")
verdict(f"vm_file_picks_up_each_restart_within_1s_of_its_first_exit", slow)

# --- agg's /metrics: one series that goes on ---------------------------------------
p, values, exits, lat_agg = [], [], [], []
for i in range(restarts + 1):
    prom = text(f"agg{i}.prom")
    if not prom:
        p.append(f"no scrape after QEMU {i}")
        values.append(None)
        continue
    s = samples(prom)
    series = [(lab, v) for name, lab, v in s if name == "hypertrace_hypercalls_total"]
    if [lab for lab, _ in series] != [{"vm": VM, "vcpu": "0", "nr": "1000"}]:
        p.append(f"after QEMU {i}: hypertrace_hypercalls_total series {[lab for lab, _ in series]}")
    strangers = sorted({lab["vm"] for _, lab, _ in s if "vm" in lab and lab["vm"] != VM})
    if strangers:
        p.append(f"after QEMU {i}: series of vm {strangers}")
    values.append(sum(v for _, v in series))
    # --exits: web1's exits in series of their own name (checked above) that grow too.
    exits.append(sum(v for name, lab, v in s if name == "hypertrace_exit_duration_seconds_count" and lab.get("vm") == VM))
    if i and exits[-1] <= exits[-2]:
        p.append(f"after QEMU {i}: {exits[-1]:.0f} exits, not more than {exits[-2]:.0f} before it")
for i in range(1, len(values)):
    if values[i] is not None and values[i - 1] is not None and not values[i] > values[i - 1]:
        p.append(f"after QEMU {i}: {values[i]:.0f} hypercalls, not more than {values[i - 1]:.0f} before it")
final = re.search(r"^hypertrace-bpf: (\d+) hypercalls", text("agg.out"), re.M)
if values and values[-1] is not None and (not final or int(final.group(1)) != values[-1]):
    p.append(f"last scrape {values[-1]:.0f}, summary {final.group(0) if final else 'none'}")
print("info: agg's web1 count after each QEMU: " + " ".join("-" if v is None else f"{v:.0f}" for v in values))
print("info: agg's web1 exits after each QEMU: " + " ".join(f"{v:.0f}" for v in exits))
verdict(f"metrics_same_series_goes_on_through_{restarts}_restarts", p)

# Each QEMU's share of the count is the end of its hypercalls: where it
# began says when agg picked the process up.
p = []
for i in range(1, len(values)):
    if values[i] is None or values[i - 1] is None or i >= len(order):
        continue
    want = all_recs.get(order[i], {})
    counted = int(values[i] - values[i - 1])
    a0s = sorted(want)
    if not a0s or counted > len(a0s) or counted < MIN_PER_VM:
        p.append(f"QEMU {i}: agg counted {counted} of {len(a0s)} hypercalls")
        continue
    first = a0s[len(a0s) - counted]
    lat_agg.append(want[first] - want[a0s[0]])
    if lat_agg[-1] > PICKUP_LIMIT_NS:
        p.append(f"QEMU {i}: counted from {lat_agg[-1] / 1e9:.3f} s after its first hypercall exit")
if len(lat_agg) != restarts:
    p.append(f"{len(lat_agg)} pick-ups measured, want {restarts}")
if lat_agg:
    print(f"info: --no-file --metrics --vm: counting {min(lat_agg) / 1e6:.0f}-{max(lat_agg) / 1e6:.0f} ms after the first hypercall exit")
verdict("metrics_pick_up_each_restart_within_1s_of_its_first_exit", p)

# --- past the grace period, web1's series are gone ---------------------------------
p = []
s = samples(text("agg_end.prom"))
left = sorted({name for name, lab, _ in s if lab.get("vm") == VM})
if not s:
    p.append("no scrape after the grace period")
elif left:
    p.append(f"web1 still in {left}")
elif not any(name == "hypertrace_build_info" for name, _, _ in s):
    p.append("the scrape has no hypertrace_build_info")
verdict("metrics_of_an_ended_vm_go_after_the_grace_period", p)

# --- the whole host's /metrics: the same, and equal to its file --------------------
p = []
s = samples(text("all.prom"))
series = [(lab, v) for name, lab, v in s if name == "hypertrace_hypercalls_total"]
total = sum(len(v) for v in all_recs.values())
if [lab for lab, _ in series] != [{"vm": VM, "vcpu": "0", "nr": "1000"}]:
    p.append(f"hypertrace_hypercalls_total series {[lab for lab, _ in series]}")
elif series[0][1] != total:
    p.append(f"web1 counted {series[0][1]:.0f}, the file holds {total}")
verdict("whole_host_metrics_one_series_for_all_processes", p)

# --- what the followers said, and the impostor -------------------------------------
p = []
for r, first in (("agg", "its first exit"), ("vm", "its first hypercall exit")):  # agg runs with --exits
    lines = traced_lines(text(f"{r}.err"))
    want = {order[0]: "running at start", **{pid: first for pid in order[1:]}}
    if lines != want:
        p.append(f"record {r} traced {lines}, want {want}")
    if impostor in lines:
        p.append(f"record {r} traced the impostor {impostor}")
if not impostor:
    p.append("no impostor pid")
verdict("process_with_name_in_arguments_but_no_vm_ignored", p)
