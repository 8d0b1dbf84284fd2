#!/usr/bin/env bash
# convert --lttng read back as Trace Compass's virtual machine analysis would:
#   - every event it writes that lttng-modules declares has lttng-modules'
#     name, field names and field types for the traced kernel's branch of
#     its #ifs, and so have the pid/tid/procname contexts and the packet
#     context (Debian's lttng-modules-dkms, unpacked, never built:
#     tests/export/check_lttng_modules.py; a changed field is caught);
#   - babeltrace2 reads the host trace and each guest trace with no warning;
#   - a lost guest sched_switch leaves no thread running in Trace Compass's
#     kernel analysis: each gap shown as a stand-in thread after a task left
#     WAIT_UNKNOWN, counted in the guest's env and as discarded events;
#   - memory stays flat: 1 M records and switches convert in the RSS of 100 k;
#   - each wake-up of a halted vCPU thread (record --wakeups) is an event with
#     its parts, equal to report --latency --csv;
#   - Trace Compass's fused VM view is complete, replayed as its analyses are
#     written, with and without record --vcpu-sched, for vcpu_ids with gaps;
#     the checker fails an empty view and rejects an impossible input;
#   - a bt2 checker matches host and guests through their vmsync events and
#     follows the virtual CPU state model: per vCPU, the time in the
#     hypervisor and each guest task's run time equal what report --csv and
#     report --sched say of the same file, its time preempted and blocked on
#     the host (the host's sched_switch of its thread) what report
#     --vcpu-switches --csv says (tests/export/check_lttng.py).
# Inputs: trace_gen's crafted hypertracing trace (two VMs, one named with
# hostile bytes, a vCPU switched out mid-hypercall, switches of vCPU threads
# as record --vcpu-sched writes them), and synthetic events and switches
# through the real BPF handlers (root).
# Files only, no port (its verdicts are counts and ratios of one process's
# peak): tests/run runs it beside the nested-machine suites.
# tests/run: alongside the nested-machine suites
source "$(dirname "$0")/../lib.sh"

GEN=$OUTPUT/tests/tools/trace_gen
PY=/usr/bin/python3

if ! command -v babeltrace2 >/dev/null || ! $PY -c 'import bt2' 2>/dev/null; then
	skip lttng_export "babeltrace2 and python3-bt2 are not installed: run 'make deps' as root"
	suite_exit
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1

if ! out=$("$GEN" guest g.htr --rounds 40 2>&1); then
	fail lttng_guest_trace "trace_gen: $out"
	suite_exit
fi
"$HT" report --csv g.htr >g.csv
"$HT" report --sched g.htr >g.sched
"$HT" report --vcpu-switches --csv g.htr >g.switches.csv
records=$(($(wc -l <g.csv) - 1))
switches=$(($(wc -l <g.switches.csv) - 1))
# One host sched_switch per switch; a vCPU thread switched in for another is one switch of two records.
host_switches=$(awk -F, 'NR > 1 { print $1, $6 }' g.switches.csv | sort -u | wc -l)

out=$("$HT" convert --lttng exp --guest-symbols g.htr.kallsyms g.htr 2>&1); status=$?
if [ $status -eq 0 ] && [ $switches -eq 5 ] && [ $host_switches -eq 4 ] &&
	[ "$out" = "hypertrace-bpf: $records of $records records and $switches of $switches switches of vCPU threads converted to exp" ] &&
	[ "$(cd exp && ls | tr '\n' ' ')" = "guest-vm____31mx-4342 guest-web1-4242 host " ]; then
	pass lttng_experiment_has_a_host_and_a_trace_per_guest
else
	fail lttng_experiment_has_a_host_and_a_trace_per_guest "status $status: $out; $(ls exp 2>&1)"
fi

# One stream per CPU, cpu_id in its packets, as LTTng's kernel channels, and
# the statedump's channel on the host; a guest's CPUs are numbered by KVM's
# vcpu_id (the second VM's are 0 and 2, its guest's CPUs 0 and 1).
streams=$(cd exp && ls host | tr '\n' ' ' && ls guest-web1-4242 | tr '\n' ' ' && ls guest-vm____31mx-4342 | tr '\n' ' ')
[ "$streams" = "channel0_0 channel0_1 channel0_2 channel0_3 metadata statedump_0 channel0_0 channel0_1 metadata channel0_0 channel0_2 metadata " ] &&
	pass lttng_one_stream_per_cpu_guest_cpus_by_vcpu_id || fail lttng_one_stream_per_cpu_guest_cpus_by_vcpu_id "$streams"

# The host's env counts the sched_switch events the export adds (docs/exports.md).
env_int() { sed -n "s/^\t$2 = \([0-9]*\);\$/\1/p" "$1/host/metadata"; }
inferred=$(env_int exp inferred_sched_switches)
restated=$(env_int exp restated_sched_switches)

# babeltrace2 reads each trace with no warning; every record is on the host,
# every guest event in its guest.
warnings=0
for t in exp/host exp/guest-*; do
	babeltrace2 "$t" >"$work/bt.out" 2>"$work/bt.err" || warnings=$((warnings + 1000))
	warnings=$((warnings + $(wc -l <"$work/bt.err")))
	count[${#count[@]}]=$(wc -l <"$work/bt.out")
done
guest_events=$(awk -F, 'NR > 1 && $23 != "" && $23 != "\"\"" { n++ } END { print n + 0 }' g.csv)
# Besides: the statedump (one per host thread: four vCPU threads and the one running instead of a vCPU).
host_want=$((3 * records + 2 * guest_events + host_switches + inferred + restated + 5))
guest_want=$((3 * guest_events))
if [ $warnings -eq 0 ] && [ "${count[0]}" -eq $host_want ] && [ $((count[1] + count[2])) -eq $guest_want ]; then
	pass lttng_babeltrace2_reads_host_and_guests_without_warning
else
	fail lttng_babeltrace2_reads_host_and_guests_without_warning "$warnings warning lines; host ${count[0]} events (want $host_want), guests $((count[1] + count[2])) (want $guest_want)"
fi

# What LTTng's kernel tracer declares, for the traced host's kernel.
release=$(sed -n 's/^\tkernel_release = "\(.*\)";$/\1/p' exp/host/metadata)
if ! src=$("$TOP/tests/export/fetch-lttng-modules.sh" 2>&1); then
	fail lttng_events_are_lttng_modules_events "cannot unpack Debian's lttng-modules-dkms: $src"
elif out=$($PY "$TOP/tests/export/check_lttng_modules.py" "$src" "$release" exp/*/metadata 2>&1) &&
	grep -q '^0 differences$' <<<"$out"; then
	pass lttng_events_are_lttng_modules_events
	grep -E "^(lttng|not declared)" <<<"$out" | sed 's/^/    /'
else
	fail lttng_events_are_lttng_modules_events "$out"
fi
# The comparison sees a difference when there is one.
if [ -n "${src:-}" ] && [ -d "$src" ]; then
	sed 's/ _prev_prio;/ _prev_priority;/' exp/guest-web1-4242/metadata >changed.metadata
	out=$($PY "$TOP/tests/export/check_lttng_modules.py" "$src" "$release" changed.metadata 2>&1)
	[ $? -eq 1 ] && grep -q "DIFFERENT: sched_switch" <<<"$out" && pass lttng_modules_check_sees_a_changed_field \
		|| fail lttng_modules_check_sees_a_changed_field "$out"
	# The host's sched_switch is compared too.
	sed 's/ _next_tid;/ _next_pid;/' exp/host/metadata >changed-host.metadata
	out=$($PY "$TOP/tests/export/check_lttng_modules.py" "$src" "$release" changed-host.metadata 2>&1)
	[ $? -eq 1 ] && grep -q "DIFFERENT: sched_switch" <<<"$out" && pass lttng_modules_check_sees_a_changed_host_sched_switch \
		|| fail lttng_modules_check_sees_a_changed_host_sched_switch "$out"
fi

# The VM analysis' view: vmsync pairs, the vCPU state model, equal to report.
if out=$($PY "$TOP/tests/export/check_lttng.py" exp g.csv g.sched --switches g.switches.csv 2>&1) &&
	grep -q "vCPU 0 of VM pid 4242: .* (off its host CPU: [1-9][0-9]* preempted, 0 blocked)" <<<"$out" &&
	grep -q "vCPU 1 of VM pid 4242: .* (off its host CPU: 0 preempted, [1-9][0-9]* blocked)" <<<"$out"; then
	pass lttng_vcpu_states_equal_report
	sed 's/^/  /' <<<"$out"
else
	fail lttng_vcpu_states_equal_report "$out"
fi

# Trace Compass's fused VM view (the checker replays its analyses as
# written): the roles gate opens, every kvm_x86_entry after it places its VM,
# guest events are placed on their vCPU's host CPU, and the VM model's
# process is the VM's pid, with --vcpu-sched's switches (above) and without
# (a default recording, whose vcpu_ids have gaps: 0,1,2,4 and 0,2).
fused_ok() { grep -q "kvm_x86_entry placing its VM [1-9]" <<<"$1" && ! grep -q "placing no VM" <<<"$1" && grep -q "check_lttng: OK" <<<"$1"; }
if fused_ok "$out" && grep -q "guest events placed [1-9]" <<<"$out"; then
	pass lttng_fused_view_with_vcpu_sched
else
	fail lttng_fused_view_with_vcpu_sched "$out"
fi
for spec in "1 --vcpus 4 --vcpu-ids 0,1,2,4" "2 --vcpus 2 --vcpu-ids 0,2"; do
	rm -rf d.htr d-exp
	"$GEN" guests d.htr $spec >/dev/null && "$HT" convert --lttng d-exp d.htr >/dev/null 2>&1 &&
		"$HT" report --csv d.htr >d.csv && "$HT" report --sched d.htr >d.sched
	ids=$(echo "$spec" | sed 's/.*--vcpu-ids //')
	streams=$(ls d-exp/guest-vm0-20000 | grep channel0_ | sed 's/channel0_//' | sort -n | paste -sd,)
	if out=$($PY "$TOP/tests/export/check_lttng.py" d-exp d.csv d.sched 2>&1) && fused_ok "$out" &&
		[ "$streams" = "$ids" ] && [ -z "$(babeltrace2 d-exp 2>&1 >/dev/null)" ]; then
		pass "lttng_fused_view_default_mode_vcpu_ids_$ids"
	else
		fail "lttng_fused_view_default_mode_vcpu_ids_$ids" "guest streams $streams; $out"
	fi
done
# Lost guest switches (trace_gen guests --lost-switch: on each of 3 VMs the
# next switch is from a task its CPU never switched in, once across a reload
# of the module). Trace Compass's SchedSwitchHandler never compares prev_tid
# with the CPU's thread: the task last switched in would stay running. The
# checker follows it: no thread left running, each gap the stand-in's after a
# task left WAIT_UNKNOWN, as many as report --csv's broken chains, each
# guest's env and discarded events (babeltrace2 warns of them) saying as much;
# the task runs still equal report --sched's.
rm -rf l.htr l-exp
"$GEN" guests l.htr 3 --lost-switch >/dev/null && "$HT" report --csv l.htr >l.csv && "$HT" report --sched l.htr >l.sched
out=$("$HT" convert --lttng l-exp l.htr 2>&1); status=$?
bt_warnings=$(babeltrace2 l-exp 2>&1 >/dev/null | grep -c "WARNING: Tracer discarded 1 event between .* in trace \"guest-vm[0-9]-[0-9]*/")
if [ $status -eq 0 ] &&
	grep -q '^hypertrace-bpf: warning: 3 guest sched_switch events were lost (.*): each gap is the thread "<switch lost>" on its CPU, the task before it in state WAIT_UNKNOWN; each guest trace counts them in its env (lost_sched_switches) and as discarded events$' <<<"$out" &&
	[ "$bt_warnings" -eq 3 ] && [ "$(sed -n 's/^\tlost_sched_switches = \([0-9]*\);$/\1/p' l-exp/guest-vm*/metadata | paste -sd+)" = "1+1+1" ] &&
	chk=$($PY "$TOP/tests/export/check_lttng.py" l-exp l.csv l.sched 2>&1) && fused_ok "$chk" &&
	grep -q "Trace Compass's threads: no thread left running; 3 gaps of lost switches shown as the stand-in after a task left WAIT_UNKNOWN = report --csv's broken chains = the guests' lost_sched_switches = their discarded events" <<<"$chk"; then
	pass lttng_lost_guest_switch_closed_for_trace_compass
	grep "Trace Compass's threads" <<<"$chk"
else
	fail lttng_lost_guest_switch_closed_for_trace_compass "status $status, $bt_warnings discarded warnings: $out ${chk:-}"
fi

# Each VM's first vmsync_gh_host is followed by each host CPU's thread
# restated (a sched_switch from it to itself): the fused analysis drops
# everything before its roles gate, and the second VM's link opens it.
if [ "$(env_int d-exp restated_sched_switches)" -gt 0 ]; then
	pass lttng_threads_restated_at_each_vm_link
else
	fail lttng_threads_restated_at_each_vm_link "$(grep _sched_switches d-exp/host/metadata)"
fi

# The checker fails on an empty fused view: a trace that is not the host or
# a guest of the export (here a copy of the host, one more trace of the same
# machine) keeps the roles gate closed.
cp -r exp extra && cp -r extra/host extra/host-copy
out=$($PY "$TOP/tests/export/check_lttng.py" extra g.csv g.sched --switches g.switches.csv 2>&1)
[ $? -eq 1 ] && grep -q "the roles gate never opens.*the fused view is empty" <<<"$out" && pass lttng_checker_fails_an_empty_fused_view \
	|| fail lttng_checker_fails_an_empty_fused_view "$out"
rm -rf extra

# The checker rejects records no host can run: two VMs' vCPU threads
# interleaved on one host CPU with no switch between them.
"$GEN" guest i.htr --rounds 4 --impossible >/dev/null && "$HT" convert --lttng i-exp i.htr >/dev/null 2>&1 &&
	"$HT" report --csv i.htr >i.csv && "$HT" report --vcpu-switches --csv i.htr >i.switches.csv
out=$($PY "$TOP/tests/export/check_lttng.py" i-exp i.csv --switches i.switches.csv 2>&1)
[ $? -eq 1 ] && grep -q "records of two threads interleaved on one CPU \[physically consistent input\]" <<<"$out" &&
	pass lttng_checker_rejects_an_impossible_input || fail lttng_checker_rejects_an_impossible_input "$out"

# A name the VM's owner chose: a safe directory name; in env as the CTF
# export writes env strings (quote and backslash escaped, control bytes dropped).
if grep -qF "$(printf '\tvm_name = "vm\\"\\\\[31mx";')" exp/guest-vm____31mx-4342/metadata &&
	babeltrace2 --output-format=ctf-metadata exp/guest-vm____31mx-4342 >/dev/null 2>&1; then
	pass lttng_hostile_vm_name_escaped
else
	fail lttng_hostile_vm_name_escaped "$(grep vm_name exp/guest-*/metadata | cat -v)"
fi

# Task names a guest chose, kept as sent (as lttng-modules keeps a comm):
# babeltrace2 shows the escape byte as \e, never raw; bt2 reads the bytes back exactly.
if babeltrace2 exp/guest-vm____31mx-4342 >bt-hostile.out 2>&1 && grep -q 'next_comm = "\\ew-101"' bt-hostile.out &&
	! grep -q "$(printf '\033')" bt-hostile.out &&
	$PY - exp/guest-vm____31mx-4342 <<'PY'
import sys, bt2
names = {str(m.event.payload_field["next_comm"]) for m in bt2.TraceCollectionMessageIterator(sys.argv[1])
         if type(m) is bt2._EventMessageConst and m.event.name == "sched_switch"}
assert "\x1bw-101" in names, names
PY
then
	pass lttng_guest_task_names_kept
else
	fail lttng_guest_task_names_kept "$(grep -m1 -o 'next_comm = "[^"]*"' bt-hostile.out | cat -v)"
fi

# The host's switches: each at its time on its host CPU, the vCPU thread
# prev when it leaves and next when it comes back, named as its identity
# says; the other thread's name as the kernel gave it (an escape byte shown
# \e by babeltrace2, the bytes back exactly through bt2).
babeltrace2 exp/host 2>&1 | grep -a ' sched_switch: ' >bt-host-switches.out
if [ "$(wc -l <bt-host-switches.out)" -eq $((4 + inferred + restated)) ] &&
	LC_ALL=C grep -aq '{ cpu_id = 0 }, { pid = 4242, tid = 4243, procname = "CPU 0/KVM" }, { prev_comm = "CPU 0/KVM", prev_tid = 4243, prev_prio = 20, prev_state = 256, next_comm = "CPU 1/KVM", next_tid = 4244, next_prio = 20 }' bt-host-switches.out &&
	LC_ALL=C grep -aq '{ cpu_id = 1 }, { pid = 4242, tid = 4244, procname = "CPU 1/KVM" }, { prev_comm = "CPU 1/KVM", prev_tid = 4244, prev_prio = 20, prev_state = 1, next_comm = "kw\\e\[31m.*", next_tid = 77, next_prio = 20 }' bt-host-switches.out &&
	LC_ALL=C grep -aq '{ cpu_id = 1 }, { pid = 77, tid = 77, procname = "kw\\e\[31m.*prev_tid = 77, prev_prio = 20, prev_state = 0, next_comm = "CPU 0/KVM", next_tid = 4243' bt-host-switches.out &&
	! grep -q "$(printf '\033')" bt-host-switches.out &&
	$PY - exp/host <<'PY'
import sys, bt2
names = {str(m.event.payload_field["next_comm"]) for m in bt2.TraceCollectionMessageIterator(sys.argv[1])
         if type(m) is bt2._EventMessageConst and m.event.name == "sched_switch"}
assert "kw\x1b[31m\udcff/1:2-evt" in names, names
PY
then
	pass lttng_host_sched_switch_of_vcpu_threads
else
	fail lttng_host_sched_switch_of_vcpu_threads "$(cat -v bt-host-switches.out)"
fi

# Guest functions as LTTng names kretprobe events, named by --guest-symbols.
fn=$(babeltrace2 exp/guest-web1-4242 | grep -c ' iterate_supers_exit: .* ip = 0xFFFFFFFF9A3B1000, parent_ip = 0xFFFFFFFF9A3AC07A }$')
[ "$fn" -gt 0 ] && pass lttng_function_exit_carries_its_call_site || fail lttng_function_exit_carries_its_call_site "$fn"

# Host records from synthetic events through the BPF handlers (root).
if [ "$(id -u)" -eq 0 ]; then
	out=$("$GEN" synth s.htr --calls 500 --exits --vcpu-sched 2>&1)
	gen=$?
	"$HT" report --csv s.htr >s.csv
	"$HT" report --vcpu-switches --csv s.htr >s.switches.csv
	if [ $gen = 0 ] && "$HT" convert --lttng s-exp s.htr >/dev/null 2>&1 && [ -z "$(babeltrace2 s-exp/host 2>&1 >/dev/null)" ] &&
		[ "$(wc -l <s.switches.csv)" -eq 13 ] &&
		out=$($PY "$TOP/tests/export/check_lttng.py" s-exp s.csv --switches s.switches.csv 2>&1); then
		pass lttng_host_of_bpf_records_equals_report
	else
		fail lttng_host_of_bpf_records_equals_report "$out"
	fi
else
	skip lttng_host_of_bpf_records_equals_report "synthetic events through the BPF handlers need root"
fi

# Memory stays flat: 1 M records and 1 M switches of vCPU threads (the
# host's sched_switch) convert in the RSS of 100 k of each.
if "$GEN" bulk m1.htr 100000 --switches 2>/dev/null && "$GEN" bulk m10.htr 1000000 --switches 2>/dev/null; then
	r1=$(peak_rss_kib "$OUTPUT/hypertrace-bpf" convert --lttng m1-exp m1.htr)
	r10=$(peak_rss_kib "$OUTPUT/hypertrace-bpf" convert --lttng m10-exp m10.htr)
	events=$(babeltrace2 m10-exp/host 2>/dev/null | grep -c ' sched_switch: ')
	added=$(($(env_int m10-exp inferred_sched_switches) + $(env_int m10-exp restated_sched_switches)))
	echo "    max RSS: 100 k records and switches $r1 KiB, 1 M $r10 KiB ($events host sched_switch events)"
	# Flat: within 10% and 1 MiB of the smaller case (allocator noise).
	if [ "$r1" -gt 0 ] && [ "$r10" -gt 0 ] && [ $((r10 * 10)) -le $((r1 * 11 + 10240)) ] && [ "$events" -eq $((1000000 + added)) ]; then
		pass lttng_memory_flat_with_switches_from_100k_to_1M
	else
		fail lttng_memory_flat_with_switches_from_100k_to_1M "max RSS $r1 KiB for 100 k, $r10 KiB for 1 M; $events sched_switch events ($added added)"
	fi
	rm -rf m1.* m10.* m1-exp m10-exp
else
	fail lttng_memory_flat_with_switches_from_100k_to_1M "trace_gen bulk failed"
fi

# More guest VMs than the process may open files: the experiment holds a
# trace per guest, and none of them keeps a descriptor open between writes.
if "$GEN" guests many.htr 300 >/dev/null; then
	out=$(ulimit -n 100 && "$HT" convert --lttng many many.htr 2>&1); status=$?
	traces=$(find many -mindepth 1 -maxdepth 1 -type d 2>/dev/null | wc -l)
	metadata=$(find many -mindepth 2 -maxdepth 2 -name metadata 2>/dev/null | wc -l)
	if [ $status -eq 0 ] && [ "$traces" -eq 301 ] && [ "$metadata" -eq 301 ] &&
		babeltrace2 many/guest-vm299-20598 2>&1 | grep -q ' sched_switch: '; then
		pass lttng_more_guests_than_open_files
	else
		fail lttng_more_guests_than_open_files "status $status, $traces traces, $metadata metadata files: $out"
	fi
	rm -rf many many.htr many.htr.kallsyms
else
	fail lttng_more_guests_than_open_files "trace_gen guests failed"
fi

# The wake-ups of halted vCPU threads (record --wakeups; tests/tools/exits_craft wakeups: 111 of
# one VM's two threads, 100 timer, 10 vector and one of a class no recording writes): each a
# hypertrace_vcpu_wakeup event of the host trace at its entry, on its CPU, in its thread's
# context, with its start, length, parts, vectors and class, equal to report --latency --csv one
# for one (read back with bt2); the interrupt deliveries (8: timer, ipi, device and a class no
# recording writes, with parts past the whole) the same as hypertrace_vcpu_irq events, with their
# acceptance, length, parts (waking, wait, rest), vector, a timer's due time and class; babeltrace2 reads the trace
# with no warning.
if "$OUTPUT/tests/tools/exits_craft" w.htr wakeups >/dev/null && "$HT" report --latency --csv w.htr >w.latency.csv; then
	wakeups=$(grep -c ',wakeup,,[0-9]*$' w.latency.csv)
	irqs=$(grep -c ',irq,[0-9]*,[0-9]*$' w.latency.csv)
	out=$("$HT" convert --lttng wexp w.htr 2>&1); status=$?
	if [ $status -eq 0 ] && [ "$wakeups" -eq 111 ] && [ "$irqs" -eq 8 ] &&
		[ "$out" = "hypertrace-bpf: 0 of 0 records, $wakeups of $wakeups wake-ups of halted vCPUs and $irqs of $irqs interrupt deliveries converted to wexp" ] &&
		! babeltrace2 wexp/host 2>&1 >/dev/null | grep -q . &&
		out=$($PY - wexp/host w.latency.csv <<'PY' 2>&1
import bt2, collections, csv, sys
got = {'wakeup': [], 'irq': []}
for m in bt2.TraceCollectionMessageIterator(sys.argv[1]):
    if type(m) is not bt2._EventMessageConst or m.event.name not in ('hypertrace_vcpu_wakeup', 'hypertrace_vcpu_irq'):
        continue
    e, f = m.event, m.event.payload_field
    vec = lambda k: '' if int(f[k]) == -1 else str(int(f[k]))
    who = (int(e.common_context_field['pid']) if 'pid' in e.common_context_field else None,
           int(e.common_context_field['tid']) if 'tid' in e.common_context_field else int(e['tid']),
           int(f['vcpu_id']), int(e.packet.context_field['cpu_id']))
    if m.event.name == 'hypertrace_vcpu_wakeup':
        got['wakeup'].append(who + (int(f['wake_ts']), m.default_clock_snapshot.value, int(f['latency']), int(f['wait']),
                                    int(f['rest']), vec('vector'), vec('timer_vector'), int(f['due_ts']),
                                    str(f['class'])))
    else:
        got['irq'].append(who + (int(f['accept_ts']), m.default_clock_snapshot.value, int(f['latency']), int(f['woken']),
                                 int(f['wait']), int(f['rest']), str(int(f['vector'])), int(f['due_ts']), str(f['class'])))
want = {'wakeup': [], 'irq': []}
for r in csv.DictReader(open(sys.argv[2], newline='')):
    start, entry, wait, rest = (int(r[k]) for k in ('wake_ns', 'entry_ns', 'wait_ns', 'rest_ns'))
    who = (int(r['host_pid']), int(r['host_tid']), int(r['vcpu_id']), int(r['cpu']), start, entry, entry - start)
    if r['kind'] == 'wakeup':
        want['wakeup'].append(who + (wait, rest, r['vector'], r['timer_vector'], int(r['due_ns'] or 0), r['class']))
    else:
        want['irq'].append(who + (int(r['woken_ns']), wait, rest, r['vector'], int(r['due_ns'] or 0), r['class']))
for k in got:
    if sorted(got[k]) != sorted(want[k]):
        print('%s differ: export only %s, report only %s (%d vs %d)' % (k, sorted(set(got[k]) - set(want[k]))[:2],
              sorted(set(want[k]) - set(got[k]))[:2], len(got[k]), len(want[k])))
        sys.exit(1)
print('; '.join('%d %s events = report --latency --csv (%s)' % (len(got[k]), k, ', '.join(
    '%s %d' % kv for kv in sorted(collections.Counter(g[-1] for g in got[k]).items()))) for k in got))
PY
); then
		pass lttng_wake_ups_and_interrupt_deliveries_equal_report_latency
		echo "  info: $out"
	else
		fail lttng_wake_ups_and_interrupt_deliveries_equal_report_latency "status $status: $out"
	fi
else
	fail lttng_wake_ups_and_interrupt_deliveries_equal_report_latency "exits_craft wakeups or report --latency --csv failed"
fi

# Errors: one line, usage 2, runtime 1; nothing left behind.
mkdir full && touch full/x
expect_run lttng_refuses_a_non_empty_directory 1 "full is not empty: give a new or empty directory|full.*not empty" -- \
	"$HT" convert --lttng full g.htr
expect_run lttng_force_is_a_usage_error 2 "--force goes with --chrome or --perfetto: --lttng writes only into a new or empty directory" -- \
	"$HT" convert --lttng new --force g.htr
expect_run lttng_needs_a_directory 2 "--lttng needs a directory name" -- "$HT" convert --lttng "" g.htr
[ ! -e new ] && [ "$(ls full)" = x ] && pass lttng_errors_leave_nothing || fail lttng_errors_leave_nothing "$(ls -la)"

suite_exit
