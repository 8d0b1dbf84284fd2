#!/usr/bin/env bash
# Every export of a file recorded with --exits (format 3, EXITS blocks between
# the record blocks and a final one before the trailer): each convert
# succeeds with every record, and the real readers (babeltrace2 for CTF and
# the LTTng experiment, protoc for Perfetto, Chrome DevTools' trace engine)
# find exactly what `report --csv` says of the same file. The EXITS blocks
# are the exit statistics, not events: no export but Perfetto shows them
# (the vCPU threads' account as counter tracks, equal to report --vcpu-time
# --csv), none trips on them. The file comes from synthetic hypercalls through the real BPF
# handlers with --exits on, drained and sampled as record does it.
# shellcheck source=../lib.sh
# Files only, no port: tests/run runs it beside the nested-machine suites.
# tests/run: alongside the nested-machine suites
source "$(dirname "$0")/../lib.sh"

GEN=$OUTPUT/tests/tools/trace_gen
PY=/usr/bin/python3
PROTO=$TOP/third_party/perfetto/perfetto_trace.proto
ENGINE=$TOP/.cache/trace-engine

if [ "$(id -u)" -ne 0 ]; then
	skip exits_exports "the trace file comes from synthetic events through the BPF handlers, which needs root"
	suite_exit
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1

# 3 vCPU threads x 500 hypercalls, an EXITS block after the first 250 of each.
if ! out=$("$GEN" synth s.htr --exits --calls 500 2>&1); then
	fail exits_exports_synthetic_trace "trace_gen: $out"
	suite_exit
fi
"$HT" report --csv s.htr >s.csv
records=$(($(wc -l <s.csv) - 1))
# The file holds both: every hypercall as a record, and as an exit (SVM 0x81) in the exit statistics.
exits=$("$HT" report --exits --csv s.htr | awk -F, 'NR > 1 && $5 == 129 { n += $7 } END { print n + 0 }')
if [ "$records" -eq 1500 ] && [ "$exits" -eq 1500 ]; then
	pass exits_exports_file_has_records_and_exit_statistics
else
	fail exits_exports_file_has_records_and_exit_statistics "$records records, $exits hypercall exits; want 1500 of each"
fi

converted() { # NAME OUTPUT CONVERT-ARGS...: convert says every record went out
	local name=$1 dest=$2 out status
	shift 2
	out=$("$HT" convert "$@" s.htr 2>&1); status=$?
	if [ $status -eq 0 ] && [ "$out" = "hypertrace-bpf: $records of $records records converted to $dest" ]; then
		pass "exits_exports_${name}_converts_every_record"
		return 0
	fi
	fail "exits_exports_${name}_converts_every_record" "status $status: $out"
	return 1
}

if ! command -v babeltrace2 >/dev/null || ! $PY -c 'import bt2' 2>/dev/null; then
	skip exits_exports_ctf_lttng "babeltrace2 and python3-bt2 are not installed: run 'make deps' as root"
else
	if converted ctf s-ctf --ctf s-ctf; then
		babeltrace2 s-ctf >bt.out 2>bt.err; status=$?
		if [ $status -eq 0 ] && [ ! -s bt.err ] && out=$($PY "$TOP/tests/export/check_ctf.py" s-ctf s.csv --dropped 0 2>&1); then
			pass exits_exports_ctf_read_by_babeltrace2_equals_report
		else
			fail exits_exports_ctf_read_by_babeltrace2_equals_report "status $status: $(head -c 600 bt.err) $out"
		fi
	fi
	if converted lttng s-exp --lttng s-exp; then
		if [ -z "$(babeltrace2 s-exp/host 2>&1 >/dev/null)" ] && out=$($PY "$TOP/tests/export/check_lttng.py" s-exp s.csv 2>&1); then
			pass exits_exports_lttng_read_by_babeltrace2_equals_report
		else
			fail exits_exports_lttng_read_by_babeltrace2_equals_report "$out"
		fi
	fi
fi

if ! command -v protoc >/dev/null || ! $PY -c 'import google.protobuf' 2>/dev/null; then
	skip exits_exports_perfetto "protobuf-compiler and python3-protobuf are not installed: run 'make deps' as root"
elif converted perfetto s.pftrace --perfetto s.pftrace; then
	"$HT" report --vcpu-time --csv s.htr >s.vcpu-time.csv
	# The vCPU account the BPF handlers kept, as counter tracks: report --vcpu-time's, adding up.
	if out=$($PY "$TOP/tests/export/check_perfetto.py" "$PROTO" s.pftrace s.csv --vcpu-time s.vcpu-time.csv \
		--attribute dev.hypertrace.vcpu_switches_recorded=0 2>&1) &&
		grep -q "vCPU account: 6 threads, .* switches not recorded, last samples = report --vcpu-time --csv" <<<"$out"; then
		pass exits_exports_perfetto_read_by_protoc_equals_report
	else
		fail exits_exports_perfetto_read_by_protoc_equals_report "$out"
	fi
fi

if ! command -v node >/dev/null || ! "$TOP/tests/export/install-trace-engine.sh" >/dev/null 2>&1; then
	skip exits_exports_chrome "node or the npm package @paulirish/trace_engine could not be installed: run 'make deps' as root"
elif converted chrome s.json --chrome s.json; then
	if out=$($PY "$TOP/tests/export/check_chrome.py" "$ENGINE" s.json s.csv 2>&1); then
		pass exits_exports_chrome_read_by_the_trace_engine_equals_report
	else
		fail exits_exports_chrome_read_by_the_trace_engine_equals_report "$out"
	fi
fi
suite_exit
