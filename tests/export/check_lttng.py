#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Reads a `convert --lttng` experiment with babeltrace2's Python API (bt2),
as Trace Compass's virtual machine analysis does, and checks it against
`report`'s view of the same trace file.

    check_lttng.py EXPERIMENT REPORT.csv [REPORT.sched] [--switches SWITCHES.csv]

First, Trace Compass's fused virtual machine analysis as its source is
written (fused_view below, each rule with the file and line it follows, in
eclipse-tracecompass/org.eclipse.tracecompass at 14360afb and
eclipse-tracecompass-incubator/org.eclipse.tracecompass.incubator at
63dcfa8e): an experiment whose fused view would stay empty, or place a VM
on no or the wrong host CPU, or give a VM's threads the wrong process,
fails. With --switches (a recording with every switch of vCPU threads), a
thread that leaves a host CPU in the middle of its hypercall must do so by a
recorded switch: records of two threads interleaved on one CPU without one
are physically impossible, and rejected.

- Host and guests are told apart and matched as the VM analysis does: a
  trace with kvm_* events is the host; a guest names its vm_uid in its
  vmsync_*_guest events; the host's vmsync_gh_host of that vm_uid names the
  VM's process (pid context). Every vmsync message of one side has exactly
  one of the other side with the same (vm_uid, cnt), sent no later than it
  is received.
- The host's sched_switch events are the recorded ones (SWITCHES.csv) and
  the ones the export infers or restates (docs/exports.md); only the
  recorded ones count below.
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
- Trace Compass's kernel analysis on each guest stream (SchedSwitchHandler:
  prev_tid's status from prev_state, next_tid running, the CPU's current
  thread next_tid, never compared with prev_tid): a switch from a thread
  that is not the CPU's current one fails (that one would stay running).
  The export's gaps of lost switches (docs/exports.md): each switch into
  or out of the stand-in leaves its thread WAIT_UNKNOWN; the stand-in's
  runs are no task's (the guest part is unknown there); per guest, the
  gaps equal report --csv's broken chains (a prev_tid that is not its
  vCPU's last next_tid), the env's lost_sched_switches and the discarded
  events.
- Each vCPU's preempted time equals, exactly in ns, the sum of its thread's
  switch-out to next switch-in intervals in SWITCHES.csv (report
  --vcpu-switches --csv), from its first hypercall record on (the VM
  analysis knows a vCPU thread from its kvm_x86_* events); split by the sched_switch's prev_state (lttng's
  TASK_REPORT_MAX: preempted; a task state: blocked), the preempted part
  equals the intervals from switch-outs with involuntary=1, the blocked part
  those with involuntary=0. Without --switches the host must have no
  sched_switch of a vCPU thread.
"""
import bisect
import collections
import csv
import os
import re
import sys

import bt2

PREEMPTED, HYPERVISOR, RUNNING, IDLE = "preempted", "hypervisor", "running", "idle"
# lttng-modules' prev_state of a task switched out while still runnable (the kernel's TASK_REPORT_MAX).
TASK_REPORT_MAX = 0x100


def fail(msg):
    print(f"check_lttng: {msg}")
    sys.exit(1)


def events(path, discarded=None):
    for msg in bt2.TraceCollectionMessageIterator(path):
        if type(msg) is bt2._EventMessageConst:
            yield msg
        elif type(msg) is bt2._DiscardedEventsMessageConst and discarded is not None:
            env = msg.stream.trace.environment
            discarded[int(env["vm_uid"]) if "vm_uid" in env else "host"] += msg.count or 0


# The export's stand-in for what ran on a guest CPU while its switches were lost (docs/exports.md): tid
# PID_MAX_LIMIT, which no Linux task has.
STAND_IN_TID = 1 << 22
# lttng-modules' TASK_DEAD as Trace Compass reads prev_state (LinuxValues.TASK_DEAD), and its mask.
TC_TASK_DEAD, TC_TASK_NOLOAD = 64, 1024


def tc_process_status(prev_state):
    """ProcessStatus.getStatusFromKernelState: the status Trace Compass gives a thread switched out."""
    state = prev_state & (TC_TASK_NOLOAD - 1)
    if state == 0:
        return "WAIT_CPU"
    if state & 3:
        return "WAIT_BLOCKED"
    if state & TC_TASK_DEAD:
        return "NOT_ALIVE"
    return "WAIT_UNKNOWN"


def broken_chains(path):
    """report --csv's guest sched_switch rows, in the file's order: per VM and vCPU (the guest trace's
    stream, the CPU Trace Compass reads them on), the switches whose prev_tid is not the last next_tid."""
    last, broken = {}, collections.Counter()
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            if r.get("event") != "sched_switch":
                continue
            fields = dict(re.findall(r'(\w+)=("[^"]*"|\S+)', r.get("fields", "")))
            key = (int(r["host_pid"]), int(r["vcpu_id"]))
            if key in last and last[key] != int(fields["prev_tid"]):
                broken[key[0]] += 1
            last[key] = int(fields["next_tid"])
    return broken


def read_experiment(path, recorded):
    hyp = collections.defaultdict(list)      # (pid, vcpu) -> [(exit, entry)]
    preempt = collections.defaultdict(list)  # (pid, vcpu) -> [(out, in, involuntary)]
    runs = collections.defaultdict(list)     # (vm_uid, cpu) -> [(start, end, tid)]
    sync_host, sync_guest = {}, {}           # (kind, vm_uid, cnt) -> ts
    uid_pid, tid_vcpu, open_exit, out_since, cur, tc_cur = {}, {}, {}, {}, {}, {}
    gaps, lost_env, discarded = collections.Counter(), {}, collections.Counter()
    ends = {}
    guests, host_seen, end = set(), False, None
    for msg in events(path, discarded):
        ev = msg.event
        ts = msg.default_clock_snapshot.value
        env = ev.stream.trace.environment
        hostname = str(env["hostname"])
        if "vm_uid" in env:
            lost_env[int(env["vm_uid"])] = int(env["lost_sched_switches"]) if "lost_sched_switches" in env else 0
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
            if not is_recorded(recorded, ts, ev, p):
                continue
            # The host's scheduling of vCPU threads: the thread out is preempted until it is back.
            if int(p["prev_tid"]) in tid_vcpu:
                state = int(p["prev_state"])
                out_since[int(p["prev_tid"])] = (ts, state in (0, TASK_REPORT_MAX))
            t = int(p["next_tid"])
            if t in out_since and t in tid_vcpu:
                since, involuntary = out_since.pop(t)
                preempt[tid_vcpu[t]].append((since, ts, involuntary))
            continue
        # The statedump, and the boot stream's VM boots and initcalls (tests/export/check_lttng_boot.py checks them).
        if name.startswith(("lttng_statedump_", "hypertrace_boot_", "hypertrace_initcall")) or \
                name == "sched_switch" and hostname == "host":
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
            prev, nxt = int(p["prev_tid"]), int(p["next_tid"])
            # SchedSwitchHandler.handleEvent: prev_tid's status from prev_state, next_tid's RUNNING, the CPU's
            # Current_thread next_tid; it never compares prev_tid with Current_thread (nor resets it at the
            # module's unload): a thread there that is not prev_tid stays RUNNING.
            if (uid, cpu) in tc_cur and tc_cur[(uid, cpu)][1] != prev:
                fail(f"guest {uid} CPU {cpu}: the sched_switch at {ts} is from thread {prev}, the CPU's last switch "
                     f"(at {tc_cur[(uid, cpu)][0]}) put thread {tc_cur[(uid, cpu)][1]} there: Trace Compass keeps "
                     f"it running")
            tc_cur[(uid, cpu)] = (ts, nxt)
            if STAND_IN_TID in (prev, nxt):
                # A gap of lost switches: the task before it, and the stand-in after it, in no known state.
                if tc_process_status(int(p["prev_state"])) != "WAIT_UNKNOWN":
                    fail(f"guest {uid} CPU {cpu}: the switch at {ts} into or out of a gap of lost switches gives "
                         f"thread {prev} status {tc_process_status(int(p['prev_state']))}, not WAIT_UNKNOWN")
                gaps[uid] += prev == STAND_IN_TID
            if (uid, cpu) in cur:
                start, tid = cur[(uid, cpu)]
                if tid == prev and tid != STAND_IN_TID:
                    runs[(uid, cpu)].append((start, ts, tid))
            cur[(uid, cpu)] = (ts, nxt)
            if prev == STAND_IN_TID:
                del cur[(uid, cpu)]  # the gap's end only hands the CPU to the task the next switch is from
        elif name == "hypertrace_module" and int(p["state"]) == 0:
            for (u, c), (start, tid) in list(cur.items()):
                if u == uid:
                    if tid != STAND_IN_TID:
                        runs[(u, c)].append((start, ts, tid))
                    del cur[(u, c)]
            ends[uid] = ts
    if not host_seen:
        fail("no host trace (no kvm_x86_* events)")
    if end is None:
        fail("the host's env has no recording_end_monotonic_ns")
    for (u, c), (start, tid) in cur.items():
        if tid != STAND_IN_TID:
            runs[(u, c)].append((start, end, tid))
    # Each guest's lost switches: the gaps it shows, its env's count, its discarded events (babeltrace2 warns of
    # them, Trace Compass shows them as lost events).
    lost = {u: (gaps[u], lost_env.get(u, 0), discarded[u]) for u in guests}
    return hyp, preempt, runs, sync_host, sync_guest, uid_pid, guests, end, lost


def recorded_switches(path):
    """report --vcpu-switches --csv: {(time_ns, host cpu, tid)} of the recorded switches' threads."""
    out = set()
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            out.add((int(r["time_ns"]), int(r["cpu"]), int(r["host_tid"])))
    return out


def is_recorded(recorded, ts, ev, p):
    """Whether a host sched_switch is one record --vcpu-sched recorded (else the export inferred or restated it)."""
    cpu = int(ev.packet.context_field["cpu_id"])
    return any((ts, cpu, int(p[k])) in recorded for k in ("prev_tid", "next_tid"))


# ---- Trace Compass's fused virtual machine analysis, as written ----
# TC: eclipse-tracecompass/org.eclipse.tracecompass, TCI: eclipse-tracecompass-incubator/org.eclipse.tracecompass.incubator.
CTF_TRACE = "TC ctf/org.eclipse.tracecompass.tmf.ctf.core/src/org/eclipse/tracecompass/tmf/ctf/core/trace/CtfTmfTrace.java"
LINUX = "TC analysis/org.eclipse.tracecompass.analysis.os.linux.core/src/org/eclipse/tracecompass"
KERNEL_UTILS = LINUX + "/analysis/os/linux/core/kernel/KernelUtils.java"
ACTIVE_TID = LINUX + "/analysis/os/linux/core/tid/ActiveTidStateProvider.java"
PID_ASPECT = LINUX + "/internal/analysis/os/linux/core/kernel/KernelPidAspect.java"
THREAD_INFO = LINUX + "/analysis/os/linux/core/kernel/KernelThreadInformationProvider.java"
STATEDUMP = LINUX + "/internal/analysis/os/linux/core/kernel/handlers/StateDumpHandler.java"
LTTNG_TRACE = ("TC lttng/org.eclipse.tracecompass.lttng2.kernel.core/src/org/eclipse/tracecompass/lttng2/kernel/core/"
               "trace/LttngKernelTrace.java")
VM = ("TCI vm/org.eclipse.tracecompass.incubator.virtual.machine.analysis.core/src/org/eclipse/tracecompass/"
      "incubator/internal/virtual/machine/analysis/core")
FUSED = VM + "/fused/handlers/FusedVirtualMachineStateProvider.java"
KVM_MODEL = VM + "/model/qemukvm/QemuKvmVmModel.java"
KVM_ENTRY = VM + "/fused/handlers/KvmEntryHandler.java"
FUSED_SWITCH = VM + "/fused/handlers/SchedSwitchHandler.java"
LXC = VM + "/model/lxc/LxcModel.java"
VM_MODEL_HANDLER = VM + "/model/handlers/QemuKvmEventHandler.java"
# LxcModel.getRequiredEvents (LXC:101-111): the only events the fused analysis handles before the roles gate.
BEFORE_GATE = {"lttng_statedump_process_state", "sched_process_fork"}


class Problems(list):
    def add(self, rule, msg):
        self.append(f"{msg} [{rule}]")


def clock_uuid(clock_class):
    """A CTF 1.8 clock's uuid, as babeltrace2 gives it: a property up to MIP 0
    (babeltrace2 2.0, Debian 12), the clock class's uid from MIP 1 on (2.1,
    Debian 13, where .uuid raises)."""
    if clock_class.graph_mip_version if hasattr(clock_class, "graph_mip_version") else 0:
        return str(clock_class.uid)
    return str(clock_class.uuid)


def host_clock_uuid(path):
    """The clock uuid of the trace with kvm_* events (read from the metadata, before any event)."""
    for d in sorted(os.listdir(path)):
        meta = os.path.join(path, d, "metadata")
        if os.path.isfile(meta):
            text = open(meta, errors="replace").read()
            if 'name = "kvm_x86_entry";' in text:
                return re.search(r'clock \{[^}]*?uuid = "([0-9a-f-]+)"', text)[1]
    return None


def host_prepass(path):
    """What the kernel analyses of the host trace know once built (the fused analysis queries them complete):
    per CPU, the sched_switch times and next_tid (the TID analysis, ACTIVE_TID:76-95, and the kernel analysis'
    CPUs/*/Current_thread that THREAD_INFO:79-94 reads); every thread they know (a sched_switch's prev or next,
    a statedump); each statedump's pid and ppid."""
    switches = collections.defaultdict(list)  # cpu -> [(ts, next_tid)], time order
    known, dump = set(), {}
    host = host_clock_uuid(path)
    for msg in events(path):
        ev = msg.event
        if ev.name not in ("sched_switch", "lttng_statedump_process_state") or \
                clock_uuid(msg.default_clock_snapshot.clock_class) != host:
            continue
        p = ev.payload_field
        ts = msg.default_clock_snapshot.value
        if ev.name == "sched_switch":
            switches[int(ev.packet.context_field["cpu_id"])].append((ts, int(p["next_tid"])))
            known |= {int(p["prev_tid"]), int(p["next_tid"])}
        else:
            dump.setdefault(int(p["tid"]), (ts, int(p["pid"]), int(p["ppid"])))
            known.add(int(p["tid"]))
    return switches, known, dump


def thread_on_cpu(switches, cpu, ts, since=False):
    """The thread the TID analysis puts on cpu at ts (a state set at ts holds at ts), or None; with since,
    (thread, the time of the switch that put it there)."""
    lst = switches.get(cpu, [])
    i = bisect.bisect_right(lst, (ts, float("inf")))
    t = lst[i - 1][1] if i else None
    return (t, lst[i - 1][0] if i else None) if since else t


def fused_view(path, recorded):
    """Replays the fused VM analysis over the experiment; returns (problems, numbers)."""
    problems = Problems()
    traces = [d for d in sorted(os.listdir(path)) if os.path.isfile(os.path.join(path, d, "metadata"))]
    switches, known, dump = host_prepass(path)

    def process_of(tid, ts):
        # KernelPidAspect (PID_ASPECT:57-75) answers before the pid context (LTTNG_TRACE:128-137 adds the
        # context aspects after KernelUtils' KERNEL_UTILS:38-40): getProcessId (THREAD_INFO:331-356) gives the
        # statedump's pid from its time on (STATEDUMP:81-90: set only for tid != pid), the tid itself for a
        # thread the kernel analysis knows without one, nothing (then the context) for one it does not know.
        if tid in dump and tid != dump[tid][1]:
            return dump[tid][1] if ts >= dump[tid][0] else None
        return tid if tid in known else None

    host_ids = {}        # trace dir -> host ID
    machines = {}        # host ID -> "host" or ("guest", vm_uid)
    trace_dir = {}       # host ID -> trace dir
    vm_pid = {}          # guest host ID -> the VM process its export names (env vm_pid)
    children = set()     # guest host IDs the host adopted
    tid_vm, tid_vcpu, vcpu_tid, v2p = {}, {}, {}, {}
    fused_thread = {}    # host CPU -> the thread the fused analysis' own sched_switch handling put there
    open_call = {}       # host tid -> (cpu, exit ts): in a hypercall
    gate_ts = None
    n = collections.Counter()
    last_entry = {}      # (vm, vcpu) -> ts of its last kvm_x86_entry
    for msg in events(path):
        ev = msg.event
        ts = msg.default_clock_snapshot.value
        clock = msg.default_clock_snapshot.clock_class
        env = ev.stream.trace.environment
        name, p = ev.name, ev.payload_field
        cpu = int(ev.packet.context_field["cpu_id"])
        # The host ID of a CTF trace is its clock's uuid (CTF_TRACE:136, 469-481).
        hid = clock_uuid(clock)
        tdir = str(env["trace_name"]) if "trace_name" in env else "?"
        if hid in trace_dir and trace_dir[hid] != tdir:
            problems.add(CTF_TRACE + ":469-481", f"traces {trace_dir[hid]} and {tdir} share the clock uuid {hid}: "
                         "Trace Compass takes them for one machine")
            return problems, n
        trace_dir[hid] = tdir
        if "vm_pid" in env:
            vm_pid[hid] = int(env["vm_pid"])
        is_host_trace = machines.get(hid) == "host"
        # Roles (KVM_MODEL:116-153, called for every event until the gate, FUSED:198-199): a trace with a kvm_*
        # event is a host; one with vmsync_gh_guest/vmsync_hg_guest a guest, by its vm_uid.
        if gate_ts is None:
            if name.startswith("kvm_"):
                machines[hid] = "host"
                is_host_trace = True
            elif name in ("vmsync_gh_guest", "vmsync_hg_guest") and hid not in machines:
                machines[hid] = ("guest", int(p["vm_uid"]))
        host_hid = next((h for h, m in machines.items() if m == "host"), None)
        ctx = ev.common_context_field
        if is_host_trace and (name.startswith("kvm_x86_") or name.startswith("vmsync_")):
            # The thread of an event is the TID analysis' (KernelTidAspect first: KERNEL_UTILS:38-40), from
            # sched_switch only (ACTIVE_TID:76-95): it must be the thread the event is of.
            t = thread_on_cpu(switches, cpu, ts)
            if t != int(ctx["tid"]):
                n["wrong thread"] += 1
                if n["wrong thread"] <= 3:
                    problems.add(ACTIVE_TID + ":76-95", f"{name} of thread {int(ctx['tid'])} at {ts} on host CPU {cpu}: "
                                 f"the host's sched_switch events put thread {t} there")
            tid = int(ctx["tid"])
            if name == "kvm_x86_exit":
                open_call[tid] = (cpu, ts)
            elif name == "kvm_x86_entry":
                open_call.pop(tid, None)
        if is_host_trace and name == "sched_switch":
            prev = int(p["prev_tid"])
            # One thread per CPU at a time: with every switch of vCPU threads recorded, a thread in its
            # hypercall leaves its CPU only by a recorded switch.
            if recorded is not None and prev in open_call and open_call[prev][0] == cpu and \
                    int(p["next_tid"]) != prev and not is_recorded(recorded, ts, ev, p):
                n["impossible"] += 1
                if n["impossible"] <= 3:
                    problems.add("physically consistent input", f"thread {prev} is in a hypercall on host CPU {cpu} "
                                 f"since {open_call[prev][1]} when thread {int(p['next_tid'])} has an event there at "
                                 f"{ts}, with no recorded switch between them: records of two threads interleaved "
                                 "on one CPU")
        # The VM model (KVM_MODEL:260-366) sees every event.
        if is_host_trace and name == "vmsync_gh_host":
            t = thread_on_cpu(switches, cpu, ts)  # KVM_MODEL:277-285, the host model's thread on the CPU
            if t is None:
                n["vmsync_gh_host with no thread"] += 1
            elif t not in tid_vm:
                for mh, m in list(machines.items()):
                    if m != "host" and m[1] == int(p["vm_uid"]):
                        children.add(mh)  # KVM_MODEL:301-312
                        tid_vm[t] = mh
                        ppid = dump.get(t, (0, 0, None))[2]  # KVM_MODEL:324-328: the parent's TID too
                        if ppid is not None:
                            tid_vm[ppid] = mh
                        # The VM model's "Process Id" (VM_MODEL_HANDLER:132-143): the pid aspect of the event.
                        pid = process_of(t, ts)
                        pid = pid if pid is not None else int(ctx["pid"])
                        if mh in vm_pid and pid != vm_pid[mh]:
                            problems.add(PID_ASPECT + ":57-75", f"the VM model would show process {pid} for the VM "
                                         f"of pid {vm_pid[mh]} (thread {t})")
        if is_host_trace and name == "kvm_x86_entry":
            t = thread_on_cpu(switches, cpu, ts)  # KVM_MODEL:346: the kernel analysis' thread on the CPU
            if t is not None:
                vm = tid_vm.get(t)
                if vm is None:  # findVmFromParent (KVM_MODEL:168-191)
                    ppid = dump.get(t, (0, 0, None))[2]
                    vm = tid_vm.get(ppid)
                    if vm is not None:
                        tid_vm[t] = vm
                if vm is not None:
                    key = tid_vcpu.get(t)
                    if key is None:  # KVM_MODEL:204-227: bound once, by the entry's vcpu_id
                        key = tid_vcpu[t] = (vm, int(p["vcpu_id"]))
                        if key in vcpu_tid and vcpu_tid[key] != t:
                            problems.add(KVM_MODEL + ":224-225", f"threads {vcpu_tid[key]} and {t} are both bound to "
                                         f"vCPU {key[1]} of {trace_dir[vm]}")
                        vcpu_tid[key] = t
                    v2p[key] = cpu  # KVM_MODEL:360
                    last_entry[key] = ts
        # The roles gate (FUSED:472-500, 225-227): all traces are machines the host knows as itself or its guests.
        if gate_ts is None and host_hid is not None and len(traces) == 1 + len(children):
            gate_ts = ts
        guest = machines.get(hid) not in (None, "host")
        if gate_ts is None:
            if name not in BEFORE_GATE:
                n["guest events before the roles gate" if guest else "host events before the roles gate"] += 1
            continue
        if is_host_trace and name == "sched_switch":
            fused_thread[cpu] = int(p["next_tid"])  # FUSED_SWITCH:116, 131
        elif is_host_trace and name == "kvm_x86_entry":
            t = fused_thread.get(cpu, -1)  # KVM_ENTRY:65-68
            if t != -1 and t in tid_vm and t in tid_vcpu:  # KVM_ENTRY:142-151
                n["kvm_x86_entry placing its VM"] += 1
            elif int(ctx["pid"]) not in vm_pid.values():
                n["kvm_x86_entry of a VM with no guest trace"] += 1
            else:
                n["kvm_x86_entry placing no VM"] += 1
                if n["kvm_x86_entry placing no VM"] <= 3:
                    problems.add(KVM_ENTRY + ":65-68,142-151", f"kvm_x86_entry at {ts} on host CPU {cpu} places no VM "
                                 f"(the fused analysis' thread there: {t})")
        elif guest:
            # A guest event goes to the host CPU of its vCPU (FUSED:233-242): the guest trace's CPU is the vCPU.
            key = (hid, cpu)
            pcpu = v2p.get(key)
            if pcpu is None:
                n["guest events before their vCPU's first kvm_x86_entry"] += 1
                continue
            tid = vcpu_tid.get(key)
            where = next((c for c in switches if thread_on_cpu(switches, c, ts) == tid), None)
            moved = where is not None and thread_on_cpu(switches, where, ts, since=True)[1] > last_entry[key]
            if where is not None and where != pcpu and moved:
                # The analysis moves a vCPU only at a kvm_x86_entry (KVM_MODEL:360); the guest ran on the CPU its
                # thread was switched to by an entry no record shows (only hypercalls' are recorded).
                n["guest events on the host CPU of their last kvm_x86_entry, their thread moved since"] += 1
            elif where is not None and where != pcpu:
                n["guest events on a wrong host CPU"] += 1
                if n["guest events on a wrong host CPU"] <= 3:
                    problems.add(FUSED + ":233-242", f"{name} of vCPU {cpu} of {trace_dir[hid]} at {ts} is placed on "
                                 f"host CPU {pcpu}, its thread {tid} is on {where}")
            else:
                n["guest events placed"] += 1
    if gate_ts is None:
        problems.add(FUSED + ":472-500", f"the roles gate never opens ({len(traces)} traces, the host and "
                     f"{len(children)} guest(s) identified): the fused view is empty")
    elif vm_pid and not n["guest events placed"]:
        problems.add(FUSED + ":233-242", "no guest event is placed on a host CPU: the fused view is empty")
    n["roles gate opens at"] = gate_ts or 0
    return problems, n


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
            # The export numbers a guest CPU by KVM's vcpu_id: the record's.
            cpu = int(r["vcpu_id"])
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


def guest_cpu_vcpu(path):
    """report --csv: (pid, guest CPU) -> vcpu_id, from the records of the guest's events."""
    out = {}
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            m = re.search(r"\bcpu_id=(\d+)", r.get("fields", ""))
            if r.get("event") and m:
                out[(int(r["host_pid"]), int(m[1]))] = int(r["vcpu_id"])
    return out


def sched_report(path, cpu_vcpu):
    """report --sched: (pid, vcpu_id, tid) -> run_ms text (report numbers a vCPU by the guest's CPU)."""
    out, key = {}, None
    for line in open(path):
        m = re.match(r"vCPU (\d+) of VM pid (\d+):", line)
        if m:
            key = (int(m[2]), cpu_vcpu.get((int(m[2]), int(m[1])), int(m[1])))
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
    recorded = recorded_switches(switches_csv) if switches_csv else None
    problems, numbers = fused_view(sys.argv[1], recorded)
    print("  Trace Compass's fused VM analysis: " + ", ".join(f"{k} {v}" for k, v in sorted(numbers.items())))
    if problems:
        fail("; ".join(problems))
    hyp, preempt, runs, sync_host, sync_guest, uid_pid, guests, end, lost = read_experiment(sys.argv[1],
                                                                                            recorded or set())
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
        report = sched_report(sys.argv[3], guest_cpu_vcpu(sys.argv[2]))
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
    want_lost = broken_chains(sys.argv[2])
    for uid, (gaps, env_count, dropped) in sorted(lost.items()):
        want = want_lost.get(uid_pid.get(uid), 0)
        if gaps != want or env_count != want or (dropped or 0) != want:
            problems.append(f"guest {uid}: {gaps} gaps of lost switches shown, {env_count} in its env "
                            f"(lost_sched_switches), {dropped} discarded events; report --csv's sched_switch rows "
                            f"break {want} chains")
    print(f"  Trace Compass's threads: no thread left running; {sum(g for g, _, _ in lost.values())} gaps of lost "
          f"switches shown as the stand-in after a task left WAIT_UNKNOWN = report --csv's broken chains = the "
          f"guests' lost_sched_switches = their discarded events")
    print(f"  {matched} vmsync messages matched between host and {len(guests)} guest(s)")
    if problems:
        fail("; ".join(problems))
    print("check_lttng: OK")


if __name__ == "__main__":
    main()
