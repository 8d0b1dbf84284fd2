#!/usr/bin/env bash
# convert --perfetto read back with Perfetto's own message definitions
# (third_party/perfetto/perfetto_trace.proto, a subset of Perfetto's):
#   - protoc --decode=perfetto.protos.Trace (Debian's protobuf-compiler)
#     decodes the file and the packets of every deflated bundle in it;
#   - a python3-protobuf checker: no unknown field, every track described
#     and every name interned before use, timestamps in ns never going back
#     on a track, the vCPU threads' slices equal report --csv record for
#     record, every flow from a guest event to its hypercall's slice, each
#     vCPU thread's "preempted" and "blocked" slices on its off-CPU track
#     equal report --vcpu-switches --csv switch for switch, and the trace
#     processor's import rules, each from its source: the guests' task
#     states (every one the guest module sends) decode as sent, the times
#     are CLOCK_MONOTONIC, tracks show in the order of their vCPU, guest CPU
#     and tid, no pid or tid is read as reused (600 VMs), and every slice end
#     ends its own slice (a trace that starts inside calls, one that lost an
#     exit) (tests/export/check_perfetto.py);
#   - the checker refuses the same trace with each import rule broken
#     (--plant: packets before the sequence is cleared, an unknown iid or
#     track, a guest function's end without its name, an old kernel, the
#     BOOTTIME clock, children without explicit order);
#   - with Perfetto's full merged perfetto_trace.proto of the subset's
#     commit (PERFETTO_PROTO=FILE, else the reference copy beside the
#     project, ../shared/reference/perfetto/, else .cache/perfetto/; skipped
#     only where none exists, and a failure under .ci/run, which sets
#     HT_REQUIRE_REFERENCE=1):
#     the subset is upstream's, field for field (check_perfetto_schema.py),
#     and the trace decodes with upstream's schema, protoc and the checker,
#     without an unknown field;
#   - the vCPU account (record --exits) as six counter tracks per vCPU
#     thread, adding up to its time at every sample and equal to report
#     --vcpu-time --csv; with the switches (record --vcpu-sched), per thread
#     and interval, wait+halted+blocked is exactly the time its off-CPU
#     slices cover, and the switches are a host's (one thread per CPU at a
#     time); an account that contradicts its switches, a switch-in on a CPU
#     the thread then does not leave, two threads on one CPU and an account
#     a ns off are refused (trace_gen account [--contradict], --plant);
#   - the wake-ups of halted vCPU threads (record --wakeups) as slices on a
#     track of each thread, equal to report --latency --csv, selected by
#     --vcpu as report selects them; one a ns off is refused;
#   - a guest sched_switch lost (trace_gen guests --lost-switch) leaves no
#     thread running as the trace processor imports it (PushSchedSwitch's
#     mismatched_sched_switch_tids, the thread states), shows each gap as the
#     stand-in thread after a task left in state Unknown, and is counted in
#     a trace attribute, convert's warning and report --sched; the checker
#     refuses the trace without the gaps' switches;
#   - a VM's boot (record --boot, tests/tools/boot_gen) as slices on a
#     track "boot phases" under its process track, equal report --boot
#     --csv phase for phase;
#   - a guest's initcalls (guest/boottrace, tests/tools/boottrace_gen) as
#     slices on tracks "initcall levels" and "initcalls" under its process
#     track, equal report --initcalls --csv level for level and initcall
#     for initcall; none, and counted, without clock pairs;
#   - the file takes at most 1/6 of the bytes of convert --chrome;
#   - memory stays flat: tests/export/test_perfetto_memory.sh.
# Files and protoc only: tests/run runs it beside the nested-machine suites.
# tests/run: alongside the nested-machine suites
source "$(dirname "$0")/../lib.sh"

GEN=$OUTPUT/tests/tools/trace_gen
PY=/usr/bin/python3
PROTO=$TOP/third_party/perfetto/perfetto_trace.proto

if ! command -v protoc >/dev/null || ! $PY -c 'import google.protobuf' 2>/dev/null; then
	skip perfetto_export "protobuf-compiler and python3-protobuf are not installed: run 'make deps' as root"
	suite_exit
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1

"$GEN" guest g.htr --rounds 40 >/dev/null
"$HT" report --csv g.htr >g.csv
"$HT" report --vcpu-switches --csv g.htr >g.switches.csv
records=$(($(wc -l <g.csv) - 1))
switches=$(($(wc -l <g.switches.csv) - 1))
out=$("$HT" convert --perfetto g.pftrace --guest-symbols g.htr.kallsyms g.htr 2>&1); status=$?
[ $status -eq 0 ] && [ $switches -eq 5 ] &&
	[ "$out" = "hypertrace-bpf: $records of $records records and $switches of $switches switches of vCPU threads converted to g.pftrace" ] &&
	pass perfetto_convert_reports_the_records || fail perfetto_convert_reports_the_records "status $status: $out"

# protoc decodes the file, then each deflated bundle's packets.
mkdir payloads
# Three off-CPU slices: vCPU 1 blocked, vCPU 0 preempted inside a hypercall, a vCPU of the other VM never back.
if out=$($PY "$TOP/tests/export/check_perfetto.py" "$PROTO" g.pftrace g.csv --payloads payloads \
	--switches g.switches.csv 2>&1) && grep -q " 3 off-CPU slices = report --vcpu-switches --csv (1 never ended)" <<<"$out"; then
	pass perfetto_checker_slices_equal_report_csv
	sed 's/^/  /' <<<"$out"
else
	fail perfetto_checker_slices_equal_report_csv "$out"
fi
# The checker refuses each way of breaking the import rules, planted in the same trace.
refused=0 accepted=
for what in uncleared unknown_iid unreserved_track unnamed_guest_end old_kernel boottime implicit_order; do
	if planted=$($PY "$TOP/tests/export/check_perfetto.py" "$PROTO" g.pftrace g.csv --switches g.switches.csv --plant "$what" 2>&1) ||
		! grep -q '^check_perfetto: ' <<<"$planted" || grep -q 'Traceback' <<<"$planted"; then
		accepted="$accepted $what"
	else
		refused=$((refused + 1))
	fi
done
[ $refused -eq 7 ] && pass perfetto_checker_refuses_broken_import_rules ||
	fail perfetto_checker_refuses_broken_import_rules "accepted (or crashed on):$accepted"
grep -q " 320 guest task states (10 distinct) decode as sent with kernel " <<<"$out" &&
	pass perfetto_guest_task_states_decode_as_the_module_sent_them ||
	fail perfetto_guest_task_states_decode_as_the_module_sent_them "$(grep 'import rules' <<<"$out")"
total=$(sed -n 's/^ *\([0-9]*\) packets (.*/\1/p' <<<"$out")
decoded=0 errors=0
protoc --proto_path="$TOP/third_party/perfetto" --decode=perfetto.protos.Trace perfetto_trace.proto <g.pftrace >outer.txt 2>protoc.err ||
	errors=$((errors + 1))
for b in payloads/bundle-*.pb; do
	if protoc --proto_path="$TOP/third_party/perfetto" --decode=perfetto.protos.Trace perfetto_trace.proto <"$b" >"$b.txt" 2>>protoc.err; then
		decoded=$((decoded + $(grep -c '^packet {' "$b.txt")))
	else
		errors=$((errors + 1))
	fi
done
# protoc shows a field it does not know by its number ("12345: ..."): there must be none.
unknown=$(cat outer.txt payloads/*.txt | grep -cE '^ *[0-9]+: ' || true)
if [ $errors -eq 0 ] && [ -n "$total" ] && [ "$decoded" -eq "$total" ] && [ "$unknown" -eq 0 ] && [ ! -s protoc.err ]; then
	pass perfetto_protoc_decodes_every_packet
else
	fail perfetto_protoc_decodes_every_packet "$errors failures, $decoded of ${total:-?} packets, $unknown unknown fields: $(head -c 300 protoc.err)"
fi

# Perfetto's full merged schema (protos/perfetto/trace/perfetto_trace.proto at
# the commit the subset names; 682 KB, so not vendored): the subset's every
# message, field and enum value is upstream's, and the trace decodes with it
# (protoc and the checker) without a field Perfetto does not define.
UPSTREAM_SHA256=c43d1658360a80a144a2d7a0a6e58a70795b0051f4e333db9d17834eab4a7a1a
upstream=${PERFETTO_PROTO:-}
if [ -z "$upstream" ]; then
	for f in "$TOP/../shared/reference/perfetto/perfetto_trace.proto" "$TOP/.cache/perfetto/perfetto_trace.proto"; do
		[ -f "$f" ] && { upstream=$f; break; }
	done
fi
if [ ! -f "$upstream" ]; then
	why="Perfetto's merged perfetto_trace.proto (the commit third_party/perfetto/perfetto_trace.proto names) is in neither ../shared/reference/perfetto/ nor .cache/perfetto/: put it there or set PERFETTO_PROTO=FILE"
	# CI has the reference beside the project: there its absence is a failure.
	if [ "${HT_REQUIRE_REFERENCE:-0}" = 1 ]; then
		fail perfetto_subset_is_upstreams_schema "$why"
		fail perfetto_upstream_schema_decodes_every_packet "$why"
	else
		skip perfetto_subset_is_upstreams_schema "$why"
		skip perfetto_upstream_schema_decodes_every_packet "$why"
	fi
elif [ "$(sha256sum <"$upstream" | cut -d' ' -f1)" != "$UPSTREAM_SHA256" ]; then
	fail perfetto_subset_is_upstreams_schema "$upstream is not the merged perfetto_trace.proto of the subset's commit (sha256 $UPSTREAM_SHA256)"
else
	out=$($PY "$TOP/tests/export/check_perfetto_schema.py" "$PROTO" "$upstream" 2>&1) &&
		pass perfetto_subset_is_upstreams_schema || fail perfetto_subset_is_upstreams_schema "$out"
	sed 's/^/  /' <<<"$out" | grep -v ': OK$'
	mkdir up && cp "$upstream" up/perfetto_trace.proto
	errors=0 unknown=0
	for b in g.pftrace payloads/bundle-*.pb; do
		if protoc --proto_path=up --decode=perfetto.protos.Trace perfetto_trace.proto <"$b" >up/decoded.txt 2>>up/protoc.err; then
			unknown=$((unknown + $(grep -cE '^ *[0-9]+: ' up/decoded.txt || true)))
		else
			errors=$((errors + 1))
		fi
	done
	if [ $errors -eq 0 ] && [ $unknown -eq 0 ] && [ ! -s up/protoc.err ] &&
		out=$($PY "$TOP/tests/export/check_perfetto.py" up/perfetto_trace.proto g.pftrace g.csv --switches g.switches.csv 2>&1); then
		pass perfetto_upstream_schema_decodes_every_packet
	else
		fail perfetto_upstream_schema_decodes_every_packet "$errors protoc failures, $unknown unknown fields: $(head -c 300 up/protoc.err) $out"
	fi
fi

# Foreign names escaped as report shows them (a backslash as \\, the escape
# byte as \x1b, invalid UTF-8 as \xNN; protoc's text quotes each backslash
# once more): a VM's, a guest task's, a host thread's that ran instead of a vCPU.
if grep -qF 'process_name: "VM vm\"\\\\\\x1b[31mx (pid 4342)"' payloads/bundle-0.pb.txt &&
	grep -q 'next_comm: "worker-101"' payloads/*.txt && grep -qF 'next_comm: "\\x1bw-101"' payloads/*.txt &&
	! grep -q "$(printf '\033')" payloads/*.txt && grep -q 'name: "iterate_supers"' payloads/*.txt &&
	grep -qF 'name: "vCPU 0 off its host CPU: CPU 0/KVM (tid 4243)"' payloads/*.txt &&
	grep -qF 'string_value: "kw\\x1b[31m\\xff/1:2-evt"' payloads/*.txt; then
	pass perfetto_names_escaped_and_symbolized
else
	fail perfetto_names_escaped_and_symbolized "$(grep -h 'process_name' payloads/*.txt | sort -u | head -5)"
fi

# The clock the times are on: CLOCK_MONOTONIC, declared as the sequence's default and the trace's own time.
if grep -q 'timestamp_clock_id: 3' payloads/bundle-0.pb.txt && grep -q 'primary_trace_clock: BUILTIN_CLOCK_MONOTONIC' payloads/bundle-0.pb.txt &&
	grep -q 'ftrace_clock: FTRACE_CLOCK_GLOBAL' payloads/*.txt && grep -q 'sysname: "Linux"' payloads/bundle-0.pb.txt; then
	pass perfetto_declares_its_clock_and_system
else
	fail perfetto_declares_its_clock_and_system "$(head -40 payloads/bundle-0.pb.txt)"
fi

# guests_case NAME WANT ARGS...: trace_gen guests ARGS, converted and checked; the checker's import rules say WANT.
guests_case() {
	local name=$1 want=$2 out status
	shift 2
	rm -f c.htr c.htr.kallsyms c.csv c.pftrace
	"$GEN" guests c.htr "$@" >/dev/null && "$HT" report --csv c.htr >c.csv 2>/dev/null
	out=$("$HT" convert --perfetto c.pftrace --guest-symbols c.htr.kallsyms c.htr 2>&1); status=$?
	if [ $status -eq 0 ] && out=$($PY "$TOP/tests/export/check_perfetto.py" "$PROTO" c.pftrace c.csv 2>&1) &&
		grep -q "$want" <<<"$out"; then
		pass "$name"
	else
		fail "$name" "status $status: $out"
	fi
}
# vCPU and guest CPU 10 after 2: the rank orders the tracks only where the parent asks for it.
guests_case perfetto_tracks_in_vcpu_order "48 threads unique, 6 groups of tracks in rank order" 2 --vcpus 12
# Past 511 VMs with guest events: no guest kernel takes another's pid.
guests_case perfetto_600_vms_no_pid_read_as_reused "1111 processes and 1111 threads unique" 600
# The recording starts inside two calls per VM: their exits stay, as instants with their flows.
guests_case perfetto_exits_of_calls_entered_before_the_recording_kept "6 unpaired guest calls, 0 lost exits" 3 --inside-calls
# An exit lost per VM: the caller's exit ends the lost call first, then its own.
guests_case perfetto_lost_exit_never_closes_another_call "0 unpaired guest calls, 3 lost exits" 3 --lost-exit

# Lost guest switches (trace_gen guests --lost-switch): on each of 3 VMs a task's switch out and the
# next task's in are lost, so the CPU's next switch is from a task it never switched in (twice dropped
# by the guest's buffer, once across a reload of the guest module). Perfetto's importer would count
# mismatched_sched_switch_tids and leave the first task's slice open: running to the end of the trace.
"$GEN" guests l.htr 3 --lost-switch >/dev/null
"$HT" report --csv l.htr >l.csv
"$HT" report --sched l.htr >l.sched
lost_out=$("$HT" convert --perfetto l.pftrace --guest-symbols l.htr.kallsyms l.htr 2>&1); lost_status=$?
lost_chk=$($PY "$TOP/tests/export/check_perfetto.py" "$PROTO" l.pftrace l.csv \
	--attribute dev.hypertrace.lost_guest_switches=3 2>&1); lost_chk_status=$?
# (1) As the checker imports it (PushSchedSwitch in the sorter's order, the thread states): no
# mismatch, no thread left running.
if [ $lost_status -eq 0 ] && [ $lost_chk_status -eq 0 ] &&
	grep -q " 0 mismatched_sched_switch_tids, no thread left running; " <<<"$lost_chk"; then
	pass perfetto_lost_guest_switch_leaves_no_thread_running
	grep 'guest scheduling as imported' <<<"$lost_chk"
else
	fail perfetto_lost_guest_switch_leaves_no_thread_running "status $lost_status: $lost_out $lost_chk"
fi
# (2) Each gap is the stand-in's slice on its CPU, after the task before it is left in a state the UI
# shows as Unknown (both switches of each gap decode as invalid: a NULL state), one per broken chain.
if [ $lost_chk_status -eq 0 ] &&
	grep -q "; 3 gaps of lost switches shown unknown = report --csv's broken chains = dev.hypertrace.lost_guest_switches, 3 tasks left in state unknown" <<<"$lost_chk" &&
	grep -q ", 6 switches of lost-switch gaps in state unknown$" <<<"$lost_chk"; then
	pass perfetto_lost_guest_switch_gap_shown_unknown
else
	fail perfetto_lost_guest_switch_gap_shown_unknown "$lost_chk"
fi
# (3) Counted where the user sees it: a trace attribute (the UI's Info and Stats page), convert's
# warning, and report --sched's gaps (which ends a run at the module's unload: the reload is no gap there).
if [ $lost_status -eq 0 ] && [ $lost_chk_status -eq 0 ] &&
	$PY "$TOP/tests/export/check_perfetto.py" "$PROTO" g.pftrace g.csv --switches g.switches.csv \
		--attribute dev.hypertrace.lost_guest_switches= >/dev/null 2>&1 &&
	grep -q '^hypertrace-bpf: warning: 3 guest sched_switch events were lost (.*): each gap is the thread "<switch lost>" on its CPU, the task before it in state Unknown; the trace counts them (attribute dev.hypertrace.lost_guest_switches)$' <<<"$lost_out" &&
	grep -q "^guest scheduling: 6 sched_switch events on 3 vCPU(s), 2 gap(s) (switches missing from the trace)$" l.sched; then
	pass perfetto_lost_guest_switch_counted_where_the_user_sees_it
else
	fail perfetto_lost_guest_switch_counted_where_the_user_sees_it "$lost_out; $(head -1 l.sched)"
fi
# The checker refuses the trace without the gaps' switches (what the export wrote before it closed
# broken chains) and with the task before a gap left in a known state.
if ! out=$($PY "$TOP/tests/export/check_perfetto.py" "$PROTO" l.pftrace l.csv --plant unclosed_chain 2>&1) &&
	grep -q "^check_perfetto: CPU [0-9]*: the sched_switch at [0-9]* is from thread .*: mismatched_sched_switch_tids, and thread [0-9]*'s slice never ends: shown running to the end of the trace$" <<<"$out" &&
	! out2=$($PY "$TOP/tests/export/check_perfetto.py" "$PROTO" l.pftrace l.csv --plant gap_state_known 2>&1) &&
	grep -q "^check_perfetto: packet [0-9]*: a switch of a lost-switch gap leaves its task in state 0x1, not unknown" <<<"$out2"; then
	pass perfetto_checker_refuses_a_lost_switch_left_open
else
	fail perfetto_checker_refuses_a_lost_switch_left_open "$out / ${out2:-}"
fi

# The vCPU account (record --exits) as counter tracks of each vCPU thread, and the switches
# (record --vcpu-sched) it must agree with: 3 vCPU threads on 2 host CPUs, one thread per CPU at
# a time, an EXITS block every 730 us (trace_gen account). From the exported trace alone, per
# thread and interval, wait+halted+blocked is the time its off-CPU slices cover, to the ns; the
# last samples are report --vcpu-time --csv's.
"$GEN" account a.htr >/dev/null
"$HT" report --csv a.htr >a.csv
"$HT" report --vcpu-switches --csv a.htr >a.switches.csv
"$HT" report --vcpu-time --csv a.htr >a.vcpu-time.csv
out=$("$HT" convert --perfetto a.pftrace a.htr 2>&1); status=$?
if [ $status -eq 0 ] && out=$($PY "$TOP/tests/export/check_perfetto.py" "$PROTO" a.pftrace a.csv --switches a.switches.csv \
	--vcpu-time a.vcpu-time.csv --attribute dev.hypertrace.vcpu_switches_recorded=1 2>&1) &&
	grep -q "vCPU account: 3 threads, 87 samples of 6 states adding up to each thread's time, 84 intervals whose wait+halted+blocked is the off-CPU slices' time (largest difference 0 ns), 76 on-CPU stretches, one thread per CPU at a time, last samples = report --vcpu-time --csv" <<<"$out"; then
	pass perfetto_vcpu_account_agrees_with_the_switches
	grep 'vCPU account' <<<"$out"
else
	fail perfetto_vcpu_account_agrees_with_the_switches "status $status: $out"
fi
# Selected as the switches are: --vcpu 1 keeps that thread's account and switches, nothing of the others.
"$HT" report --csv --vcpu 1 a.htr >v.csv
"$HT" report --vcpu-switches --csv --vcpu 1 a.htr >v.switches.csv
"$HT" report --vcpu-time --csv --vcpu 1 a.htr >v.vcpu-time.csv
if "$HT" convert --perfetto v.pftrace --vcpu 1 a.htr >/dev/null 2>&1 &&
	out=$($PY "$TOP/tests/export/check_perfetto.py" "$PROTO" v.pftrace v.csv --switches v.switches.csv \
		--vcpu-time v.vcpu-time.csv 2>&1) &&
	grep -q "vCPU account: 1 threads, 29 samples .* 28 intervals .* (largest difference 0 ns)" <<<"$out"; then
	pass perfetto_vcpu_account_selected_by_vcpu
else
	fail perfetto_vcpu_account_selected_by_vcpu "$out"
fi
# The same host, but its account says vCPU 0 ran in KVM while its switches say it waited off its CPU.
"$GEN" account x.htr --contradict >/dev/null
"$HT" report --csv x.htr >x.csv
"$HT" report --vcpu-switches --csv x.htr >x.switches.csv
if out=$("$HT" convert --perfetto x.pftrace x.htr 2>&1) &&
	! out=$($PY "$TOP/tests/export/check_perfetto.py" "$PROTO" x.pftrace x.csv --switches x.switches.csv 2>&1) &&
	grep -q "^check_perfetto: thread (5000, 5001): .* the account has 0 ns off the CPU (wait+halted+blocked) and 730000 on it (guest+kvm+vmm); its off-CPU slices cover 300000 ns" <<<"$out"; then
	pass perfetto_checker_refuses_an_account_that_contradicts_the_switches
else
	fail perfetto_checker_refuses_an_account_that_contradicts_the_switches "$out"
fi
# The checker refuses a host no machine runs and an account that does not add up, planted in the good trace.
refused=0 accepted=
for plant in "migrated_while_running:it never ran there" "never_off_cpu:on it at once" \
	"account_off_by_one:the states add up to 730001 ns, the thread's time is 730000 ns"; do
	if ! out=$($PY "$TOP/tests/export/check_perfetto.py" "$PROTO" a.pftrace a.csv --switches a.switches.csv \
		--plant "${plant%%:*}" 2>&1) && grep -q "^check_perfetto: .*${plant#*:}" <<<"$out"; then
		refused=$((refused + 1))
	else
		accepted="$accepted ${plant%%:*} ($out)"
	fi
done
[ $refused -eq 3 ] && pass perfetto_checker_refuses_impossible_switches_and_accounts ||
	fail perfetto_checker_refuses_impossible_switches_and_accounts "accepted:$accepted"
# The trace says whether the switches were recorded (then a thread without off-CPU slices stayed on
# its CPU): trace_gen guest's were; test_exits_exports.sh checks a recording without --vcpu-sched.
if out=$($PY "$TOP/tests/export/check_perfetto.py" "$PROTO" g.pftrace g.csv --switches g.switches.csv \
	--attribute dev.hypertrace.vcpu_switches_recorded=1 2>&1); then
	pass perfetto_declares_whether_switches_were_recorded
else
	fail perfetto_declares_whether_switches_were_recorded "$out"
fi

# The wake-ups of halted vCPU threads (record --wakeups; tests/tools/exits_craft wakeups: 111 of
# one VM's two threads, 100 timer, 10 vector and one of a class no recording writes): each a slice
# from its wake-up to its entry on its thread's track "vCPU N wake-ups from halts", named by its
# class (the unknown one by its number), its parts and vectors in its arguments, equal to report
# --latency --csv one for one; --vcpu selects them as report does. The checker refuses an end 1 ns
# off, and the wake-ups where it is told there are none.
"$OUTPUT/tests/tools/exits_craft" w.htr wakeups >/dev/null
"$HT" report --csv w.htr >w.csv
"$HT" report --latency --csv w.htr >w.latency.csv
"$HT" report --latency --csv --vcpu 1 w.htr >w1.latency.csv
wakeups=$(grep -c ',wakeup,,[0-9]*$' w.latency.csv)
irqs=$(grep -c ',irq,[0-9]*,[0-9]*$' w.latency.csv)
if out=$("$HT" convert --perfetto w.pftrace w.htr 2>&1) &&
	[ "$out" = "hypertrace-bpf: 0 of 0 records, $wakeups of $wakeups wake-ups of halted vCPUs and $irqs of $irqs interrupt deliveries converted to w.pftrace" ] &&
	out=$($PY "$TOP/tests/export/check_perfetto.py" "$PROTO" w.pftrace w.csv --wakeups w.latency.csv 2>&1) &&
	grep -q "^  wake-ups: 111 wake-up slices = report --latency --csv (class-7 1, timer 100, vector 10)$" <<<"$out"; then
	pass perfetto_wake_ups_equal_report_latency
	grep 'wake-ups:' <<<"$out"
else
	fail perfetto_wake_ups_equal_report_latency "$out"
fi
# The interrupt deliveries (format 14) the same way, on the threads' interrupt tracks: vCPU 1's
# device interrupt was accepted while its second IPI waited, so it is on "vCPU 1 interrupts 2",
# and vCPU 0's class-9 one comes in the file after its later timer ones (a crafted order), so it
# is on "vCPU 0 interrupts 2": 4 tracks. --vcpu 1 leaves 3; an export without vCPU 0's, or one
# a delivery's start a ns early, is refused.
if grep -q "^  interrupts: 8 interrupt delivery slices = report --latency --csv (class-9 1, device 1, ipi 2, timer 4) on 4 tracks$" <<<"$out" &&
	"$HT" convert --perfetto w.pftrace --force --vcpu 1 w.htr 2>&1 | grep -q " and 3 of 8 interrupt deliveries converted" &&
	! out2=$($PY "$TOP/tests/export/check_perfetto.py" "$PROTO" w.pftrace w.csv --wakeups w.latency.csv 2>&1) &&
	"$HT" convert --perfetto w.pftrace --force w.htr 2>/dev/null &&
	! out2=$($PY "$TOP/tests/export/check_perfetto.py" "$PROTO" w.pftrace w.csv --wakeups w.latency.csv \
		--plant irq_off_by_one 2>&1) && grep -q "^check_perfetto: interrupt delivery slices differ from report --latency --csv" <<<"$out2"; then
	pass perfetto_interrupt_deliveries_equal_report_latency
	grep 'interrupts:' <<<"$out"
else
	fail perfetto_interrupt_deliveries_equal_report_latency "$out"
fi
if "$HT" convert --perfetto w1.pftrace --vcpu 1 w.htr >/dev/null 2>&1 &&
	out=$($PY "$TOP/tests/export/check_perfetto.py" "$PROTO" w1.pftrace w.csv --wakeups w1.latency.csv 2>&1) &&
	grep -q "^  wake-ups: [1-9][0-9]* wake-up slices = report --latency --csv" <<<"$out" &&
	[ "$(grep -o '[0-9]* wake-up slices' <<<"$out" | cut -d' ' -f1)" -lt "$wakeups" ]; then
	pass perfetto_wake_ups_selected_by_vcpu
else
	fail perfetto_wake_ups_selected_by_vcpu "$out"
fi
if ! out=$($PY "$TOP/tests/export/check_perfetto.py" "$PROTO" w.pftrace w.csv --wakeups w.latency.csv \
	--plant wakeup_off_by_one 2>&1) && grep -q "^check_perfetto: wake-up slices differ from report --latency --csv" <<<"$out" &&
	! out2=$($PY "$TOP/tests/export/check_perfetto.py" "$PROTO" w.pftrace w.csv 2>&1) &&
	grep -q "^check_perfetto: wake-up slices differ from report --latency --csv: .* (111 vs 0)$" <<<"$out2"; then
	pass perfetto_checker_refuses_wake_ups_not_in_the_file
else
	fail perfetto_checker_refuses_wake_ups_not_in_the_file "$out / ${out2:-}"
fi

# A recording of a VM's boot (record --boot; tests/tools/boot_gen, every time known): its phases
# as slices on a track "boot phases" under its process track equal report --boot --csv, with an
# instant where a boot that crashed ended and none for one still running; -p selects the boots
# too; a pid given to a new VM process holds each process's boot in turn on its track. The traces
# above (no boot exits) have no boot track: the checker refuses one without --boot.
BOOT_GEN=$OUTPUT/tests/tools/boot_gen
boot_case() {
	local name=$1 htr=$2 want=$3 out
	shift 3
	if "$HT" report --boot --csv "$@" "$htr" >boot.csv 2>/dev/null && "$HT" report --csv "$@" "$htr" >boot.rec.csv &&
		"$HT" convert --perfetto boot.pftrace --force "$@" "$htr" >/dev/null 2>&1 &&
		out=$($PY "$TOP/tests/export/check_perfetto.py" "$PROTO" boot.pftrace boot.rec.csv --boot boot.csv 2>&1) &&
		grep -q "boots: $want = report --boot --csv" <<<"$out"; then
		pass "$name"
	else
		fail "$name" "$out"
	fi
}
if "$BOOT_GEN" boot.htr --crash >/dev/null && "$BOOT_GEN" up.htr >/dev/null && "$BOOT_GEN" again.htr --again >/dev/null; then
	boot_case perfetto_boot_phases_equal_report_boot boot.htr "4 boot phases of 1 VMs"
	boot_case perfetto_boot_of_a_pid_given_again_is_each_processs_in_turn again.htr "8 boot phases of 2 VMs"
	boot_case perfetto_boot_still_running_has_no_end up.htr "4 boot phases of 1 VMs"
	boot_case perfetto_boot_selected_with_its_vm boot.htr "0 boot phases of 0 VMs" -p 1
	"$HT" convert --perfetto boot.pftrace --force boot.htr >/dev/null 2>&1
	"$HT" report --csv boot.htr >boot.rec.csv
	if out=$($PY "$TOP/tests/export/check_perfetto.py" "$PROTO" boot.pftrace boot.rec.csv 2>&1) ||
		! grep -q "^check_perfetto: boot tracks of processes \[30000\], report --boot --csv has \[\]" <<<"$out"; then
		fail perfetto_checker_refuses_boot_phases_it_was_not_told "$out"
	else
		pass perfetto_checker_refuses_boot_phases_it_was_not_told
	fi
else
	fail perfetto_boot_phases_equal_report_boot "boot_gen failed"
fi

# A guest's initcalls (its boot-time trace replayed by guest/boottrace; tests/tools/boottrace_gen,
# its clock known): levels and initcalls on tracks under its process track equal report
# --initcalls --csv to the ns, never nested nor overlapping on a track (one that overlaps another
# on a second track), one without its return an instant; its VM selects it (-p), --nr does not
# cut it. A guest trace without clock pairs draws none: said on stderr, counted in an attribute.
# The checker refuses initcall tracks it was not told of.
source "$TOP/tests/export/initcall_trace.sh"
BT_GEN=$OUTPUT/tests/tools/boottrace_gen
initcall_trace ic.txt
if "$BT_GEN" ic.htr ic.txt >/dev/null && "$BT_GEN" ic_nosync.htr ic.txt --syncs 0 >/dev/null &&
	"$HT" report --initcalls --csv ic.htr >ic.csv 2>/dev/null; then
	ic_want="initcalls: 4 levels, 7 initcalls and 1 without their return on 3 initcall tracks of 1 VMs = report --initcalls --csv"
	for sel in "" "--nr 1152"; do
		# shellcheck disable=SC2086
		if "$HT" report --csv $sel ic.htr >ic.rec.csv && "$HT" convert --perfetto ic.pftrace --force $sel ic.htr >/dev/null 2>&1 &&
			out=$($PY "$TOP/tests/export/check_perfetto.py" "$PROTO" ic.pftrace ic.rec.csv --initcalls ic.csv 2>&1) &&
			grep -q "$ic_want" <<<"$out"; then
			pass "perfetto_initcalls_equal_report_initcalls [$sel]"
			grep "initcalls:" <<<"$out"
		else
			fail "perfetto_initcalls_equal_report_initcalls [$sel]" "$out"
		fi
	done
	"$HT" convert --perfetto ic.pftrace --force ic.htr >/dev/null 2>&1
	"$HT" report --csv ic.htr >ic.rec.csv
	if out=$($PY "$TOP/tests/export/check_perfetto.py" "$PROTO" ic.pftrace ic.rec.csv 2>&1) ||
		! grep -q "^check_perfetto: initcall tracks of processes \[7100\], report --initcalls --csv has \[\]" <<<"$out"; then
		fail perfetto_checker_refuses_initcalls_it_was_not_told "$out"
	else
		pass perfetto_checker_refuses_initcalls_it_was_not_told
	fi
	if "$HT" report --csv -p 1 ic.htr >ic.rec.csv && "$HT" convert --perfetto ic.pftrace --force -p 1 ic.htr >/dev/null 2>&1 &&
		out=$($PY "$TOP/tests/export/check_perfetto.py" "$PROTO" ic.pftrace ic.rec.csv 2>&1); then
		pass perfetto_initcalls_go_with_their_vm
	else
		fail perfetto_initcalls_go_with_their_vm "$out"
	fi
	"$HT" report --csv ic_nosync.htr >ic.rec.csv
	if err=$("$HT" convert --perfetto ic.pftrace --force ic_nosync.htr 2>&1) &&
		grep -q "the guest trace of 1 VMs has initcalls but no clock pair" <<<"$err" &&
		out=$($PY "$TOP/tests/export/check_perfetto.py" "$PROTO" ic.pftrace ic.rec.csv \
			--attribute dev.hypertrace.initcall_vms_without_clock=1 --attribute dev.hypertrace.initcalls_not_drawn= 2>&1); then
		pass perfetto_initcalls_without_clock_pairs_are_not_drawn_and_counted
	else
		fail perfetto_initcalls_without_clock_pairs_are_not_drawn_and_counted "$err $out"
	fi
else
	fail perfetto_initcalls_equal_report_initcalls "boottrace_gen or report --initcalls failed"
fi

# Size: at most 1/6 of the Chrome JSON of the same trace.
"$HT" convert --chrome g.json --guest-symbols g.htr.kallsyms g.htr >/dev/null 2>&1
pf=$(stat -c %s g.pftrace) js=$(stat -c %s g.json)
[ $((pf * 6)) -le "$js" ] && pass perfetto_guest_trace_is_a_sixth_of_chrome_json \
	|| fail perfetto_guest_trace_is_a_sixth_of_chrome_json "$pf bytes, Chrome JSON $js"
echo "    guest trace: $pf bytes, Chrome JSON $js bytes"

if [ "$(id -u)" -eq 0 ]; then
	gen_out=$("$GEN" synth s.htr --calls 1000 --exits --vcpu-sched 2>&1) || fail perfetto_trace_gen_of_bpf_records "$gen_out"
	"$HT" report --csv s.htr >s.csv
	"$HT" report --vcpu-switches --csv s.htr >s.switches.csv
	"$HT" report --vcpu-time --csv s.htr >s.vcpu-time.csv
	"$HT" convert --perfetto s.pftrace s.htr >/dev/null 2>&1
	"$HT" convert --chrome s.json s.htr >/dev/null 2>&1
	pf=$(stat -c %s s.pftrace) js=$(stat -c %s s.json)
	# The account the BPF handlers kept agrees with the switches they recorded, to the ns.
	if out=$($PY "$TOP/tests/export/check_perfetto.py" "$PROTO" s.pftrace s.csv --switches s.switches.csv \
		--vcpu-time s.vcpu-time.csv 2>&1) &&
		grep -q " 6 off-CPU slices = report --vcpu-switches" <<<"$out" && [ $((pf * 6)) -le "$js" ] &&
		grep -q "off-CPU slices' time (largest difference 0 ns), .* last samples = report --vcpu-time --csv" <<<"$out"; then
		pass perfetto_bpf_records_equal_report_csv_in_a_sixth_of_chrome
	else
		fail perfetto_bpf_records_equal_report_csv_in_a_sixth_of_chrome "$pf bytes, Chrome JSON $js: $out"
	fi
	echo "    records of the BPF handlers: $pf bytes, Chrome JSON $js bytes"
	grep 'vCPU account' <<<"$out" | sed 's/^/  /'
else
	skip perfetto_bpf_records_equal_report_csv_in_a_sixth_of_chrome "synthetic events through the BPF handlers need root"
fi

# Errors: one line, usage 2, runtime 1.
echo old >old.pftrace
expect_run perfetto_refuses_an_existing_file 1 "old.pftrace already exists: use --force" -- \
	"$HT" convert --perfetto old.pftrace g.htr
expect_run perfetto_needs_a_file_name 2 "--perfetto needs a file name" -- "$HT" convert --perfetto "" g.htr
expect_run perfetto_one_format_at_a_time 2 "one format at a time" -- "$HT" convert --perfetto a.pftrace --chrome a.json g.htr
if "$HT" convert --force --perfetto old.pftrace g.htr >/dev/null 2>&1 && [ "$(head -c 3 old.pftrace)" != old ] &&
	[ "$(stat -c %a old.pftrace)" = 600 ]; then
	pass perfetto_force_replaces_privately
else
	fail perfetto_force_replaces_privately "$(stat -c '%a %s' old.pftrace)"
fi

suite_exit
