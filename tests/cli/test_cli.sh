#!/usr/bin/env bash
# Command-line behaviour of hypertrace-bpf: every user error gives one line that
# says what to do, exit 2 for usage errors and 1 for runtime errors; and the
# happy paths of record/report on this host (where no guest runs).
source "$(dirname "$0")/../lib.sh"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1

# --- usage errors: exit 2 ---------------------------------------------------
expect_run no_command 2 "no command given.*--help" -- "$HT"
expect_run unknown_command 2 "unknown command 'fly'" -- "$HT" fly
expect_run record_nr_not_a_number 2 "invalid --nr '12abc'.*see 'hypertrace-bpf record --help'" -- "$HT" record --nr 12abc
expect_run record_nr_negative 2 "invalid --nr '-1'" -- "$HT" record --nr=-1
expect_run record_nr_too_big 2 "invalid --nr '4294967296'" -- "$HT" record --nr 4294967296
expect_run record_too_many_nr 2 "too many --nr: at most 8" -- "$HT" record -n 1 -n 2 -n 3 -n 4 -n 5 -n 6 -n 7 -n 8 -n 9
expect_run record_nr_range_too_wide 2 "too many --nr: at most 8" -- "$HT" record -n 1100-1199
expect_run record_nr_range_backwards 2 "invalid --nr '1152-1150'.*FIRST-LAST" -- "$HT" record -n 1152-1150
expect_run record_bad_exit_reason 2 "invalid --exit-reason 'vmcall'" -- "$HT" record --exit-reason vmcall
expect_run record_pid_zero 2 "invalid --pid '0'" -- "$HT" record -p 0
expect_run record_pid_word 2 "invalid --pid 'qemu'" -- "$HT" record -p qemu
expect_run record_pid_and_vm 2 "-p and --vm both select the VM process" -- "$HT" record -p 1 --vm web1
expect_run record_vm_empty 2 "--vm needs a QEMU guest name" -- "$HT" record --vm ""
# --vm waits for its VM; a process that only carries -name NAME in its arguments is no VM.
python3 -c 'import time; time.sleep(30)' -name no-such-vm-here &
impostor=$!
sleep 0.2
expect_run record_vm_not_running_waits_for_it_impostor_ignored 0 "no VM with QEMU guest name 'no-such-vm-here' .* runs yet: it is traced once it starts" -- "$HT" record --vm no-such-vm-here -d 0.3 -q -o "$work/vm.htr"
kill "$impostor" 2>/dev/null
wait "$impostor" 2>/dev/null
expect_run record_vcpu_too_big 2 "invalid --vcpu '65536'" -- "$HT" record --vcpu 65536
expect_run record_duration_zero 2 "invalid --duration '0'" -- "$HT" record -d 0
expect_run record_duration_unit 2 "invalid --duration '5s'" -- "$HT" record -d 5s
expect_run record_ringbuf_not_power_of_two 2 "invalid --ringbuf-size '3000'" -- "$HT" record --ringbuf-size 3000
expect_run record_unknown_option 2 "unknown option '--frobnicate'" -- "$HT" record --frobnicate
expect_run record_missing_value 2 "option '-o' needs a value" -- "$HT" record -o
expect_run record_empty_output 2 "-o needs a file name" -- "$HT" record -o ""
expect_run record_interval_zero 2 "invalid --interval '0'" -- "$HT" record -i 0
expect_run record_intervals_zero 2 "invalid --intervals '0'" -- "$HT" record --intervals 0
expect_run record_per_vcpu_and_vm 2 "--per-vcpu and --per-vm exclude each other" -- "$HT" record --per-vcpu --per-vm
expect_run record_bad_hist_series 2 "invalid --hist 'latency'" -- "$HT" record --hist latency
expect_run record_no_file_with_output 2 "--no-file writes no trace file: drop -o" -- "$HT" record --no-file -o t.htr
expect_run record_no_file_compress 2 "--no-file writes no trace file" -- "$HT" record --no-file -z
expect_run record_no_file_quiet 2 "--no-file with --quiet would show nothing" -- "$HT" record --no-file -q
expect_run record_bare_number_hints_intervals 2 "unexpected argument '1': for live histograms every SECONDS use -i SECONDS, to stop after N of them --intervals N" -- timeout 10 "$HT" record 1 10
expect_run record_command_needs_dashes 2 "unexpected argument 'sleep': a command to run goes after '--'" -- timeout 10 "$HT" record sleep 1
expect_run record_dashes_taken_as_value_are_not_a_separator 2 "unexpected argument 'true'" -- timeout 10 "$HT" record -o -- true
expect_run record_unknown_short_option_in_a_cluster 2 "unknown option '-Z'" -- timeout 10 "$HT" record -Zq
expect_run record_missing_value_in_a_cluster 2 "option '-o' needs a value" -- timeout 10 "$HT" record -qo
expect_run record_flag_given_a_value 2 "option '--force' takes no value" -- timeout 10 "$HT" record --force=1
expect_run record_quiet_intervals_never_stops 2 "--intervals counts live histograms, which --quiet turns off" -- timeout 10 "$HT" record -q --intervals 3
expect_run record_quiet_drops_interval 2 "-i/--interval only changes the live histograms, which --quiet turns off" -- timeout 10 "$HT" record -q -i 2
expect_run record_quiet_drops_timestamp 2 "-T/--timestamp only changes the live histograms" -- timeout 10 "$HT" record -T -q
expect_run record_quiet_drops_per_vcpu 2 "--per-vcpu only changes the live histograms" -- timeout 10 "$HT" record -q --per-vcpu
expect_run record_quiet_drops_per_vm 2 "--per-vm only changes the live histograms" -- timeout 10 "$HT" record --per-vm --quiet
expect_run record_quiet_drops_hist 2 "--hist only changes the live histograms" -- timeout 10 "$HT" record -q --hist total
expect_run record_no_file_ringbuf_size 2 "--no-file sends no records through the ring buffer: drop --ringbuf-size" -- timeout 10 "$HT" record --no-file -b 1M
expect_run report_group_without_hist 2 "--per-vcpu and --per-vm go with --hist" -- "$HT" report --per-vcpu a.htr
expect_run report_bad_hist_series 2 "invalid --hist 'p99'" -- "$HT" report --hist=p99 a.htr
expect_run report_no_file 2 "no trace file given" -- "$HT" report
expect_run report_two_files 2 "one trace file at a time" -- "$HT" report a.htr b.htr
expect_run report_two_modes 2 "exclude each other" -- "$HT" report --csv --json a.htr
expect_run report_unknown_option 2 "unknown option '--xml'" -- "$HT" report --xml a.htr
expect_run report_bad_since 2 "invalid --since 'yesterday': expected seconds from the start" -- "$HT" report --since yesterday a.htr
expect_run report_since_after_until 2 "--since is after --until: swap them" -- "$HT" report --since 5 --until 2 a.htr
expect_run report_bad_vcpu 2 "invalid --vcpu '65536'" -- "$HT" report --vcpu 65536 a.htr
expect_run convert_no_format 2 "no format given: add --ctf DIR, --lttng DIR, --perfetto FILE or --chrome FILE.json" -- "$HT" convert a.htr
expect_run convert_two_formats 2 "one format at a time" -- "$HT" convert --ctf d --chrome f.json a.htr
expect_run convert_force_with_ctf 2 "--force goes with --chrome" -- "$HT" convert --ctf d -f a.htr
expect_run convert_no_file 2 "no trace file given" -- "$HT" convert --ctf d
expect_run convert_two_files 2 "one trace file at a time" -- "$HT" convert --ctf d a.htr b.htr
expect_run convert_empty_output 2 "--ctf needs a directory name" -- "$HT" convert --ctf "" a.htr
expect_run convert_bad_nr 2 "invalid --nr '12abc'.*see 'hypertrace-bpf convert --help'" -- "$HT" convert --chrome f.json -n 12abc a.htr
expect_run convert_unknown_option 2 "unknown option '--xml'" -- "$HT" convert --xml a.htr

# --help and --version are not errors
for cmd in "" record report convert; do
	out=$("$HT" $cmd --help 2>&1); status=$?
	if [ $status -eq 0 ] && grep -q "EXAMPLES:" <<<"$out"; then pass "help_${cmd:-main}"; else fail "help_${cmd:-main}" "status $status"; fi
done

for v in -V --version; do
	out=$("$HT" record $v 2>&1); status=$?
	[ $status -eq 0 ] && [[ $out =~ ^hypertrace-bpf\ [0-9]+\.[0-9]+\.[0-9]+$ ]] && pass "record_version_$v" || fail "record_version_$v" "status $status: $out"
done
"$HT" record --help | grep -q -- "-c is a cgroup in libbpf-tools" && pass record_help_explains_c_is_vcpu || fail record_help_explains_c_is_vcpu "no word on -c in --help"
for cmd in report convert; do
	out=$("$HT" $cmd -V 2>&1); status=$?
	[ $status -eq 0 ] && grep -Eq "^hypertrace-bpf [0-9]+\.[0-9]+\.[0-9]+$" <<<"$out" \
		&& pass "version_$cmd" || fail "version_$cmd" "status $status: $out"
done

# --- report and convert on bad input: exit 1 --------------------------------
expect_run convert_missing_file 1 "cannot open missing.htr: No such file" -- "$HT" convert --ctf d missing.htr
expect_run report_missing_file 1 "cannot open missing.htr: No such file" -- "$HT" report missing.htr
: >empty.htr
expect_run report_empty_file 1 "empty.htr is empty: not a hypertrace-bpf trace file" -- "$HT" report empty.htr
head -c 4096 /bin/sh >foreign.htr
expect_run report_foreign_file 1 "not a hypertrace-bpf trace file" -- "$HT" report foreign.htr

# --- report on a file written by the trace file writer ----------------------
# 1000 records 250 ns apart, the first 1 us after the start, 4 vCPUs in turn.
"$OUTPUT/tests/tools/trace_gen" bulk w.htr 1000
out=$("$HT" report --hist total w.htr 2>&1); status=$?
if [ $status -eq 0 ] && grep -q "since start: 1000 hypercalls" <<<"$out" && grep -q "exit->entry" <<<"$out" \
	&& ! grep -q "exit->hypercall" <<<"$out"; then
	pass report_hist_series_as_record_takes_it
else
	fail report_hist_series_as_record_takes_it "status $status: $out"
fi
# --since/--until: seconds from the start (inclusive); records at 1000 + 250 i ns.
n=$("$HT" report --csv --since 0.00005 --until 0.0001 w.htr | tail -n +2 | wc -l)
[ "$n" -eq 201 ] && pass report_since_until_in_seconds || fail report_since_until_in_seconds "$n records, want 201"
first=$("$HT" report --csv w.htr | sed -n '2p' | cut -d, -f2)
n=$("$HT" report --csv --vcpu 1 --since "$first" w.htr | tail -n +2 | wc -l)
[ "$n" -eq 250 ] && pass report_vcpu_and_wallclock_since || fail report_vcpu_and_wallclock_since "$n records, want 250 (since $first)"
out=$("$HT" report -p 4242 --vcpu 3 w.htr 2>&1)
grep -q "^selection: pid 4242, vcpu 3 " <<<"$out" && grep -q "^records: 250$" <<<"$out" \
	&& pass report_summary_of_a_selection || fail report_summary_of_a_selection "$out"
# A selection of more records than the summary keeps (2^18): its exact percentiles
# read the file again, and must skip the unselected records again.
"$OUTPUT/tests/tools/trace_gen" bulk wide.htr 1100000 --wide
want=$("$HT" report --csv --vcpu 1 wide.htr | /usr/bin/python3 -c '
import csv, sys
rows = list(csv.DictReader(sys.stdin))
for key in ("exit_to_hcall_ns", "hcall_to_entry_ns", "total_ns"):
    v = sorted(int(r[key]) for r in rows)
    rank = lambda p: max((int(p * 1000 + 0.5) * len(v) + 99999) // 100000, 1)
    print(len(v), v[rank(50) - 1], v[rank(99) - 1])')
got=$("$HT" report --vcpu 1 wide.htr 2>&1 | awk -v n="$("$HT" report --vcpu 1 wide.htr | sed -n "s/^records: //p")" \
	'/^  (exit->hypercall|hypercall->entry|total) / { print n, $(NF-2), $(NF-1) }')
if [ -n "$want" ] && [ "$got" = "$want" ] && [ "$(head -c 7 <<<"$want")" = "275000 " ]; then
	pass report_summary_percentiles_of_a_large_selection
else
	fail report_summary_percentiles_of_a_large_selection "got '$got', want '$want'"
fi
rm -f wide.htr
mkdir full && touch full/x
expect_run convert_ctf_into_non_empty_directory 1 "full is not empty: give a new or empty directory" -- "$HT" convert --ctf full w.htr

# --- runtime errors of record: exit 1 ---------------------------------------
# Not root: the unprivileged user gets told to use sudo.
cp "$HT" "$work/ht" && chmod 755 "$work" "$work/ht"
expect_run record_not_root 1 "needs root.*run it with sudo" -- setpriv --reuid=65534 --regid=65534 --clear-groups "$work/ht" record -o "$work/x.htr"
# CMD is looked up before anything else: even before the privilege check.
expect_run record_command_checked_before_loading 1 "cannot run 'no-such-command-xyz': not found in PATH" -- \
	setpriv --reuid=65534 --regid=65534 --clear-groups "$work/ht" record -o "$work/x.htr" -- no-such-command-xyz
expect_run record_command_not_executable 1 "cannot run './exists.txt': not an executable file" -- \
	bash -c "touch exists.txt && exec '$HT' record -o '$work/x.htr' -- ./exists.txt"

# Root of a user namespace (a rootless container) has no BPF rights on the host.
if unshare -U -r true 2>/dev/null; then
	expect_run record_in_user_namespace 1 "running in a user namespace.*run it as root on the host" -- unshare -U -r "$work/ht" record -o "$work/y.htr"
else
	skip record_in_user_namespace "this kernel does not let this user create a user namespace"
fi

if [ "$(id -u)" -ne 0 ]; then
	skip record_on_this_host "the remaining record tests load BPF programs and need root"
	suite_exit
fi

expect_run record_unwritable_output 1 "cannot create /nonexistent-dir/t.htr.*choose a writable path with -o" -- "$HT" record -o /nonexistent-dir/t.htr -d 0.1
touch exists.htr
expect_run record_existing_output 1 "exists.htr already exists: use --force" -- "$HT" record -o exists.htr -d 0.1
[ -s exists.htr ] && fail record_existing_output_untouched "file was written" || pass record_existing_output_untouched

# tracefs: if it is not mounted, record mounts it; if it cannot, it says how.
# debugfs goes too where it is mounted (trace-cmd, for one, mounts it): its
# tracing directory automounts tracefs on access, with no capability.
if command -v unshare >/dev/null; then
	out=$(unshare -m bash -c "umount /sys/kernel/tracing 2>/dev/null; umount /sys/kernel/debug/tracing 2>/dev/null; umount /sys/kernel/debug 2>/dev/null; '$HT' record -o mounted.htr -d 0.2" 2>&1)
	if [ $? -eq 0 ] && grep -q "0 records" <<<"$out"; then pass record_mounts_tracefs; else fail record_mounts_tracefs "$out"; fi
	expect_run record_tracefs_unmountable 1 "tracefs is not mounted and could not be mounted: run 'mount -t tracefs" -- \
		unshare -m bash -c "umount /sys/kernel/tracing 2>/dev/null; umount /sys/kernel/debug/tracing 2>/dev/null; umount /sys/kernel/debug 2>/dev/null; exec setpriv --inh-caps=-sys_admin --bounding-set=-sys_admin '$HT' record -o t.htr -d 0.2"
else
	skip record_mounts_tracefs "unshare (util-linux) is not installed"
fi

# The main job on this host: nothing runs a guest, so 0 records, cleanly.
rm -f hypertrace.htr # in case a usage-error test above wrongly recorded into it
out=$("$HT" record -d 1 2>&1); status=$?
if [ $status -eq 0 ] && grep -Eq "^hypertrace-bpf: 0 records, 0 dropped, .* written to hypertrace.htr$" <<<"$out"; then
	pass record_one_second_reports_zero_records
else
	fail record_one_second_reports_zero_records "status $status: $out"
fi
out=$("$HT" report hypertrace.htr 2>&1); status=$?
if [ $status -eq 0 ] && grep -q "^records: 0$" <<<"$out" && grep -q "^dropped: 0 " <<<"$out"; then
	pass report_reads_the_recording
else
	fail report_reads_the_recording "status $status: $out"
fi
# A non-root user with CAP_BPF and CAP_PERFMON: what is missing is read access to
# tracefs (mode 0700 root), where libbpf reads the tracepoint ids; it is named.
mkdir -m 777 caps
as_nobody_with() { setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps="$1" --ambient-caps="$1" "${@:2}"; }
if as_nobody_with +bpf,+perfmon test -x /sys/kernel/tracing/events; then
	skip record_cap_bpf_perfmon_names_what_is_missing "tracefs is open to every user on this host"
else
	expect_run record_cap_bpf_perfmon_names_what_is_missing 1 "tracefs \(/sys/kernel/tracing\) is not readable by uid 65534: .*add CAP_DAC_READ_SEARCH to CAP_BPF and CAP_PERFMON" -- \
		as_nobody_with +bpf,+perfmon "$work/ht" record -q -o "$work/caps/a.htr" -d 0.2
fi
out=$(as_nobody_with +bpf,+perfmon,+dac_read_search "$work/ht" record -q -o "$work/caps/b.htr" -d 0.2 2>&1); status=$?
[ $status -eq 0 ] && grep -q "^hypertrace-bpf: 0 records, 0 dropped" <<<"$out" \
	&& pass record_works_with_cap_bpf_perfmon_dac_read_search || fail record_works_with_cap_bpf_perfmon_dac_read_search "status $status: $out"

# After attaching, record keeps only CAP_CHOWN, CAP_DAC_OVERRIDE and CAP_BPF
# (bits 0, 1, 39), and still drains and finishes the file.
out=$("$HT" record -q -o caps1.htr -- sh -c 'grep CapEff /proc/$PPID/status' 2>&1); status=$?
if [ $status -eq 0 ] && grep -q "^CapEff:.0000008000000000$" <<<"$out" && grep -q "^hypertrace-bpf: 0 records" <<<"$out"; then
	pass record_keeps_only_the_capabilities_it_needs_after_attaching
else
	fail record_keeps_only_the_capabilities_it_needs_after_attaching "status $status: $out"
fi
# Under sudo, CMD runs as the caller with no capability; record also keeps CAP_KILL (bit 5) to stop it.
out=$(SUDO_UID=65534 SUDO_GID=65534 SUDO_USER=nobody "$HT" record -q -o caps2.htr -- \
	sh -c 'echo "uid $(id -u) gid $(id -g)"; grep CapEff /proc/self/status; grep CapEff /proc/$PPID/status' 2>&1); status=$?
if [ $status -eq 0 ] && [ "$(head -3 <<<"$out")" = "$(printf 'uid 65534 gid 65534\nCapEff:\t0000000000000000\nCapEff:\t0000008000000020')" ]; then
	pass record_runs_the_command_as_the_sudo_caller
else
	fail record_runs_the_command_as_the_sudo_caller "status $status: $out"
fi
# Every thread: the --metrics HTTP thread, which faces the network, holds no capability at all.
port=$((20000 + RANDOM % 20000))
out=$("$HT" record -q -o caps5.htr --metrics "127.0.0.1:$port" -- \
	sh -c 'for t in /proc/$PPID/task/*; do grep CapEff "$t/status"; done' 2>&1); status=$?
if [ $status -eq 0 ] && [ "$(grep -c '^CapEff:.0000008000000000$' <<<"$out")" -eq 1 ] \
	&& [ "$(grep -c '^CapEff:.0000000000000000$' <<<"$out")" -eq 1 ] && [ "$(grep -c '^CapEff:' <<<"$out")" -eq 2 ]; then
	pass record_every_thread_drops_capabilities
else
	fail record_every_thread_drops_capabilities "status $status: $out"
fi
out=$(SUDO_UID=65534 SUDO_GID=65534 SUDO_USER=nobody timeout 20 "$HT" record -q -o caps3.htr -d 0.3 -- sleep 30 2>&1); status=$?
[ $status -eq 0 ] && pass record_stops_a_command_running_as_the_sudo_caller || fail record_stops_a_command_running_as_the_sudo_caller "status $status: $out"
expect_run record_malformed_sudo_uid 1 "SUDO_UID 'bob' / SUDO_GID '1' are not user and group ids" -- env SUDO_UID=bob SUDO_GID=1 "$HT" record -q -o caps4.htr -- true

out=$("$HT" report --csv hypertrace.htr 2>&1)
[ "$out" = "exit_ns,wallclock,host_pid,host_tid,vcpu_id,exit_cpu,entry_cpu,isa,exit_reason,nr,a0,a1,a2,a3,guest_rip,exit_to_hcall_ns,hcall_to_entry_ns,total_ns,flags,vm_name,process_name,thread_name" ] \
	&& pass report_csv_header || fail report_csv_header "$out"

# Live histograms: plain blocks when stdout is not a terminal, one per interval, then the total.
out=$("$HT" record -o live.htr -i 0.3 --intervals 3 -T 2>&1); status=$?
if [ $status -eq 0 ] && [ "$(grep -c ' interval [0-9]*: 0 hypercalls' <<<"$out")" -eq 3 ] \
	&& grep -q "since start: 0 hypercalls" <<<"$out" && ! grep -q $'\033' <<<"$out"; then
	pass record_live_plain_blocks_per_interval
else
	fail record_live_plain_blocks_per_interval "status $status: $out"
fi
out=$("$HT" record -q -o quiet.htr -d 0.5 2>&1)
[ "$(wc -l <<<"$out")" -eq 1 ] && pass record_quiet_prints_only_the_summary || fail record_quiet_prints_only_the_summary "$out"
out=$("$HT" record --no-file --per-vm -i 0.2 --intervals 2 2>&1); status=$?
if [ $status -eq 0 ] && grep -q "aggregate only: no trace file" <<<"$out" && [ "$(grep -c 'interval [0-9]*:' <<<"$out")" -eq 2 ]; then
	pass record_no_file_aggregates_in_bpf
else
	fail record_no_file_aggregates_in_bpf "status $status: $out"
fi
out=$("$HT" report --hist live.htr 2>&1) && grep -q "since start: 0 hypercalls" <<<"$out" \
	&& pass report_hist_reads_a_file || fail report_hist_reads_a_file "$out"

out=$("$HT" record -z -q -o compressed.htr -d 0.3 2>&1) && "$HT" report compressed.htr 2>&1 | grep -q "^records: 0$" \
	&& pass record_compress_writes_a_readable_file || fail record_compress_writes_a_readable_file "$out"

# Ctrl-C ends a recording cleanly: summary, exit 0, a file with its trailer.
"$HT" record -o sigint.htr >sigint.out 2>&1 &
pid=$!
sleep 1.5
kill -INT $pid
wait $pid; status=$?
if [ $status -eq 0 ] && grep -q "0 records, 0 dropped" sigint.out && "$HT" report sigint.htr 2>&1 | grep -q "^end: "; then
	pass record_stops_cleanly_on_sigint
else
	fail record_stops_cleanly_on_sigint "status $status: $(cat sigint.out)"
fi

# CMD: the recording ends when it exits, and its failure is reported.
out=$("$HT" record -o cmd.htr -- sleep 0.3 2>&1); status=$?
[ $status -eq 0 ] && grep -q "0 records" <<<"$out" && pass record_stops_when_command_exits || fail record_stops_when_command_exits "status $status: $out"
expect_run record_command_not_found 1 "cannot run 'no-such-command-xyz'.*check the command name" -- "$HT" record -o cmd2.htr -- no-such-command-xyz
[ -e cmd2.htr ] && fail record_command_not_found_leaves_no_file "cmd2.htr exists" || pass record_command_not_found_leaves_no_file
expect_run record_command_fails 1 "'false' exited with status 1" -- "$HT" record -o cmd3.htr -- false
expect_run record_exit_status_is_the_commands 7 "'sh' exited with status 7" -- "$HT" record -q -o cmd4.htr -- sh -c 'exit 7'
expect_run record_command_killed_by_a_signal 137 "'sh' was killed by signal 9" -- "$HT" record -q -o cmd5.htr -- sh -c 'kill -KILL $$'
# CMD ends by itself while -d ends the run (it ignores the SIGTERM that stopping
# sends, and exits 3 a second later): its status is not lost.
expect_run record_command_status_kept_when_duration_ends_too 3 "'sh' exited with status 3" -- \
	"$HT" record -q -d 0.5 -o cmd6.htr -- sh -c 'trap "" TERM; sleep 1.5; exit 3'
# Stopped by -d while CMD runs: CMD gets SIGTERM and the run is a success.
out=$("$HT" record -q -d 0.3 -o cmd7.htr -- sleep 30 2>&1); status=$?
[ $status -eq 0 ] && grep -q "0 records" <<<"$out" && pass record_duration_stops_the_command || fail record_duration_stops_the_command "status $status: $out"

# Without PATH, CMD is looked up where glibc's execvp looks, confstr(_CS_PATH):
# /bin:/usr/bin (musl's default adds /usr/local/bin). A command only in
# /usr/local/bin (a tmpfs of a private mount namespace) is refused before
# anything loads, and execvp itself does not find it either (env, status 127).
out=$(unshare -m --propagation private sh -c '
	mount -t tmpfs -o mode=755 tmpfs /usr/local/bin || exit 99
	printf "#!/bin/sh\nexit 0\n" >/usr/local/bin/ht-only-in-local-bin && chmod 755 /usr/local/bin/ht-only-in-local-bin || exit 99
	env -u PATH ht-only-in-local-bin 2>/dev/null; echo "execvp status $?"
	env -u PATH "$0" record -q -o "$1" -- ht-only-in-local-bin 2>&1; echo "record status $?"' "$HT" "$work/nopath.htr" 2>&1)
if [ "$out" = "execvp status 127
hypertrace-bpf: cannot run 'ht-only-in-local-bin': not found in PATH: check the command name and PATH
record status 1" ] && [ ! -e nopath.htr ]; then
	pass record_without_path_looks_where_execvp_does
else
	fail record_without_path_looks_where_execvp_does "$out"
fi
# ... and a command in /usr/bin is found there, and run.
expect_run record_without_path_runs_a_command_of_usr_bin 5 "'sh' exited with status 5" -- \
	env -u PATH "$HT" record -q -o nopath2.htr -- sh -c 'exit 5'

# --vm lists /proc once tracing is set up: a /proc it cannot list (a private
# mount namespace's tmpfs of mode 000, for root without CAP_DAC_OVERRIDE and
# CAP_DAC_READ_SEARCH) ends the run with one line, status 1, no trace file.
# The plain binary: the sanitizers read /proc themselves.
out=$(unshare -m --propagation private sh -c '
	mount -t tmpfs -o mode=000 tmpfs /proc || exit 99
	exec setpriv --inh-caps=-dac_override,-dac_read_search --bounding-set=-dac_override,-dac_read_search \
		"$0" record --vm ht-test-vm -d 5 -q -o "$1"' "$OUTPUT/hypertrace-bpf" "$work/noproc.htr" 2>&1); status=$?
if [ $status -eq 1 ] && [ "$out" = "hypertrace-bpf: cannot list /proc: Permission denied" ] && [ ! -e noproc.htr ]; then
	pass record_vm_follower_cannot_start
else
	fail record_vm_follower_cannot_start "status $status: $out"
fi

# -v shows libbpf's own log (the place to read a verifier log).
out=$("$HT" record -v -o verbose.htr -d 0.2 2>&1)
grep -q "^libbpf: " <<<"$out" && pass record_verbose_shows_libbpf_log || fail record_verbose_shows_libbpf_log "$out"

suite_exit
