#!/usr/bin/env bash
# convert --ctf read back by the real CTF reader, babeltrace2: its CLI reads the
# trace with no warning, and its Python API (bt2) finds every field of every
# event, the timestamps, the drops and the env block equal to what
# `report --csv` and `report` say of the same trace file. The trace files come
# from synthetic events run through the real BPF handlers and the real drain.
# Files only, no port: tests/run runs it beside the nested-machine suites.
# tests/run: alongside the nested-machine suites
source "$(dirname "$0")/../lib.sh"

GEN=$OUTPUT/tests/tools/trace_gen
# Debian's python3 carries bt2 (python3-bt2), whatever python3 comes first in PATH.
PY=/usr/bin/python3
CHECK=$TOP/tests/export/check_ctf.py

if [ "$(id -u)" -ne 0 ]; then
	skip ctf_export "the trace files come from synthetic events through the BPF handlers, which needs root"
	suite_exit
fi
if ! command -v babeltrace2 >/dev/null || ! $PY -c 'import bt2' 2>/dev/null; then
	skip ctf_export "babeltrace2 and python3-bt2 are not installed: run 'make deps' as root"
	suite_exit
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1

# 3 vCPU threads x 1500 hypercalls: 4500 records in two blocks of the file.
if ! out=$("$GEN" synth s.htr --calls 1500 2>&1); then
	fail ctf_synthetic_trace "trace_gen: $out"
	suite_exit
fi
"$HT" report --csv s.htr >s.csv
records=$(($(wc -l <s.csv) - 1))

out=$("$HT" convert --ctf s-ctf s.htr 2>&1); status=$?
if [ $status -eq 0 ] && [ "$out" = "hypertrace-bpf: $records of $records records converted to s-ctf" ]; then
	pass ctf_convert_reports_the_records
else
	fail ctf_convert_reports_the_records "status $status: $out"
fi

babeltrace2 s-ctf >bt.out 2>bt.err; status=$?
if [ $status -eq 0 ] && [ ! -s bt.err ] && [ "$(wc -l <bt.out)" -eq "$records" ] && [ "$records" -eq 4500 ]; then
	pass ctf_babeltrace2_reads_every_event_without_warning
else
	fail ctf_babeltrace2_reads_every_event_without_warning "status $status, $(wc -l <bt.out) of $records events: $(head -c 600 bt.err)"
fi

summary=$("$HT" report s.htr)
start=$(sed -n 's/^start: \(.*\) UTC$/\1/p' <<<"$summary")
end=$(sed -n 's/^end:   \(.*\) UTC$/\1/p' <<<"$summary")
vendor=$(sed -n 's/.*, CPU \(.*\)$/\1/p' <<<"$summary")
if out=$($PY "$CHECK" s-ctf s.csv --dropped 0 --env host_kernel_release="$(uname -r)" \
	--env cpu_vendor="$vendor" --env filter_nr=1000,1001 --env filter_pid=any --env filter_vcpu=any \
	--env recording_records="$records" --env events="$records" --env dropped=0 \
	--env read_status=complete --env selection="all records" --env trace_file=s.htr 2>&1); then
	pass ctf_every_field_and_timestamp_match_report_csv
else
	fail ctf_every_field_and_timestamp_match_report_csv "$out"
fi

# Start and end in env are the recording's, as report prints them (to the microsecond there).
env_start=$(sed -n 's/^\trecording_start = "\(.*\)";$/\1/p' s-ctf/metadata | tr T ' ' | cut -c1-26)
env_end=$(sed -n 's/^\trecording_end = "\(.*\)";$/\1/p' s-ctf/metadata | tr T ' ' | cut -c1-26)
if [ -n "$start" ] && [ "$env_start" = "$start" ] && [ "$env_end" = "$end" ]; then
	pass ctf_env_has_recording_start_and_end
else
	fail ctf_env_has_recording_start_and_end "env $env_start .. $env_end, report $start .. $end"
fi

# One stream per vCPU thread, plus the recording's own (drops).
streams=$(cd s-ctf && ls | grep -c '^pid[0-9]*_vcpu[0-9]*_tid[0-9]*$')
[ "$streams" -eq 3 ] && [ -f s-ctf/recording ] && pass ctf_one_stream_per_vcpu_thread \
	|| fail ctf_one_stream_per_vcpu_thread "$(ls s-ctf)"

# Drops: a one-page ring buffer overflows; babeltrace2 counts them as discarded events.
"$GEN" synth d.htr --drops >/dev/null 2>&1
dropped=$("$HT" report d.htr | sed -n 's/^dropped: \([0-9]*\) .*/\1/p')
"$HT" report --csv d.htr >d.csv
"$HT" convert --ctf d-ctf d.htr 2>/dev/null
if [ "${dropped:-0}" -gt 0 ] && out=$($PY "$CHECK" d-ctf d.csv --dropped "$dropped" \
	--env dropped="$dropped" --env dropped_ringbuf_full="$dropped" 2>&1); then
	pass ctf_drops_are_discarded_events
else
	fail ctf_drops_are_discarded_events "dropped ${dropped:-?}: $out"
fi
# ...and its CLI says so (the one warning a trace with drops must give).
err=$(babeltrace2 d-ctf 2>&1 >/dev/null)
grep -q "Tracer discarded $dropped events" <<<"$err" && pass ctf_babeltrace2_warns_of_drops \
	|| fail ctf_babeltrace2_warns_of_drops "$err"

# Selection: the same records as report selects.
"$HT" report --csv --vcpu 1 -n 1001 s.htr >sel.csv
"$HT" convert --ctf sel-ctf --vcpu 1 -n 1001 s.htr 2>/dev/null
if [ "$(wc -l <sel.csv)" -gt 1 ] && out=$($PY "$CHECK" sel-ctf sel.csv --env selection="vcpu 1, nr 1001" 2>&1); then
	pass ctf_selection_matches_report_selection
else
	fail ctf_selection_matches_report_selection "$out"
fi

# A damaged file: a clear error, exit 1, and, as any failed conversion, nothing written.
cp s.htr cut.htr
truncate -s $((256 + 24 + 4096 * 80 + 24 + 1000)) cut.htr
out=$("$HT" convert --ctf cut-ctf cut.htr 2>&1); status=$?
if [ $status -eq 1 ] && grep -q "cut.htr is damaged: read 4096 records, stopped at byte $((256 + 24 + 4096 * 80))" <<<"$out"; then
	pass ctf_damaged_file_is_a_clear_error
else
	fail ctf_damaged_file_is_a_clear_error "status $status: $out"
fi
left=$(ls -A | grep -e '^cut-ctf' -e '^\.htr-')
[ -z "$left" ] && pass ctf_damaged_file_writes_nothing || fail ctf_damaged_file_writes_nothing "$left"

# Streaming: memory stays flat. 5 M records (400 MB) convert within a few MB.
n=5000000
if "$GEN" bulk big.htr $n 2>/dev/null; then
	size_kib=$(($(stat -c %s big.htr) / 1024))
	rss_kib=$(peak_rss_kib "$OUTPUT/hypertrace-bpf" convert --ctf big-ctf big.htr)
	events=$(babeltrace2 big-ctf -c sink.utils.counter 2>&1 | tail -9 | sed -n 's/^ *\([0-9]*\) Event messages$/\1/p')
	# 32 MiB: the binary and libc, plus one 16 KiB packet per stream; 1/12 of the input.
	if [ "$rss_kib" -gt 0 ] && [ "$rss_kib" -lt 32768 ] && [ "$events" = "$n" ]; then
		pass ctf_memory_stays_flat_for_5M_records
	else
		fail ctf_memory_stays_flat_for_5M_records "max RSS ${rss_kib} KiB for a ${size_kib} KiB file, $events events"
	fi
	echo "    5M records: ${size_kib} KiB in, max RSS ${rss_kib} KiB"
	rm -rf big.htr big-ctf
else
	fail ctf_memory_stays_flat_for_5M_records "trace_gen bulk failed"
fi

suite_exit
