#!/usr/bin/env bash
# convert --chrome read back by a real consumer of Chrome trace event JSON:
# Chrome DevTools' trace engine (@paulirish/trace_engine from npm, installed
# into .cache/ by tests/export/install-trace-engine.sh). It must parse the file
# without error, and what it builds (a track per vCPU thread, a slice per
# hypercall with its two phases nested, args, names) must match `report --csv`,
# a boot's phases (record --boot) `report --boot --csv`, and a guest's initcalls
# (guest/boottrace) `report --initcalls --csv`.
# Files only, no port: tests/run runs it beside the nested-machine suites.
# tests/run: alongside the nested-machine suites
source "$(dirname "$0")/../lib.sh"

GEN=$OUTPUT/tests/tools/trace_gen
PY=/usr/bin/python3
ENGINE=$TOP/.cache/trace-engine

if [ "$(id -u)" -ne 0 ]; then
	skip chrome_export "the trace file comes from synthetic events through the BPF handlers, which needs root"
	suite_exit
fi
if ! command -v node >/dev/null || ! "$TOP/tests/export/install-trace-engine.sh"; then
	skip chrome_export "node or the npm package @paulirish/trace_engine could not be installed: run 'make deps' as root"
	suite_exit
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1

if ! out=$("$GEN" synth s.htr 2>&1); then
	fail chrome_synthetic_trace "trace_gen: $out"
	suite_exit
fi
"$HT" report --csv s.htr >s.csv

out=$("$HT" convert --chrome s.json s.htr 2>&1); status=$?
[ $status -eq 0 ] && pass chrome_convert_succeeds || fail chrome_convert_succeeds "status $status: $out"

if out=$($PY "$TOP/tests/export/check_chrome.py" "$ENGINE" s.json s.csv 2>&1); then
	pass chrome_trace_engine_reads_every_hypercall_as_nested_slices
	echo "$out"
else
	fail chrome_trace_engine_reads_every_hypercall_as_nested_slices "$out"
fi

# The file is one JSON object whose metadata names the recording.
if out=$($PY -c '
import json, sys
m = json.load(open("s.json"))["metadata"]
assert m["tracer"] == "hypertrace-bpf" and m["read_status"] == "complete", m
assert m["dropped"] == 0 and m["filter_nr"] == "1000,1001", m
' 2>&1); then
	pass chrome_metadata_names_the_recording
else
	fail chrome_metadata_names_the_recording "$out"
fi

# A recording of a VM's boot (record --boot; tests/tools/boot_gen, every time known): each VM's
# phases on a track of its own, as the trace engine reads them, equal report --boot --csv; a boot
# that crashed ends with an instant, one still running does not; -p selects the boots too; a pid
# given to a new VM process holds each process's boot in turn on its track.
BOOT_GEN=$OUTPUT/tests/tools/boot_gen
if "$BOOT_GEN" boot.htr --crash >/dev/null && "$BOOT_GEN" up.htr >/dev/null && "$BOOT_GEN" again.htr --again >/dev/null; then
	boot_case() {
		local name=$1 htr=$2 out
		shift 2
		if "$HT" report --boot --csv "$@" "$htr" >boot.csv 2>/dev/null &&
			"$HT" convert --chrome boot.json --force "$@" "$htr" >/dev/null 2>&1 &&
			out=$($PY "$TOP/tests/export/check_chrome.py" "$ENGINE" boot.json --boot boot.csv 2>&1); then
			pass "$name"
			echo "$out"
		else
			fail "$name" "$out"
		fi
	}
	boot_case chrome_boot_phases_equal_report_boot boot.htr
	boot_case chrome_boot_still_running_has_no_end up.htr
	boot_case chrome_boot_of_a_pid_given_again_is_each_processs_in_turn again.htr
	boot_case chrome_boot_selected_with_its_vm boot.htr -p 1
else
	fail chrome_boot_phases_equal_report_boot "boot_gen failed"
fi

# A guest's initcalls (its boot-time trace replayed by guest/boottrace; tests/tools/boottrace_gen,
# its clock known): levels and initcalls on tracks of the VM's own, as the trace engine reads them,
# equal report --initcalls --csv to the ns; one that overlaps another on a second track, one
# without its return an instant. Its VM selects it (-p), --nr does not cut it. A guest trace
# without clock pairs draws none: said on stderr, counted in the metadata.
source "$TOP/tests/export/initcall_trace.sh"
BT_GEN=$OUTPUT/tests/tools/boottrace_gen
initcall_trace ic.txt
if "$BT_GEN" ic.htr ic.txt >/dev/null && "$BT_GEN" ic_nosync.htr ic.txt --syncs 0 >/dev/null &&
	"$HT" report --initcalls --csv ic.htr >ic.csv 2>/dev/null; then
	ic_want="read 4 initcall levels, 7 initcalls and 1 without their return on 3 tracks of 1 VMs"
	for sel in "" "--nr 1152"; do
		# shellcheck disable=SC2086
		if out=$("$HT" convert --chrome ic.json --force $sel ic.htr 2>&1) &&
			out=$($PY "$TOP/tests/export/check_chrome.py" "$ENGINE" ic.json --initcalls ic.csv 2>&1) &&
			grep -q "$ic_want" <<<"$out"; then
			pass "chrome_initcalls_equal_report_initcalls [$sel]"
			echo "$out"
		else
			fail "chrome_initcalls_equal_report_initcalls [$sel]" "$out"
		fi
	done
	if "$HT" convert --chrome ic.json --force -p 1 ic.htr >/dev/null 2>&1 && ! grep -q '"cat":"initcall"' ic.json; then
		pass chrome_initcalls_go_with_their_vm
	else
		fail chrome_initcalls_go_with_their_vm "$(grep -c '"cat":"initcall"' ic.json) initcall events with -p 1"
	fi
	out=$("$HT" convert --chrome ic.json --force ic_nosync.htr 2>&1)
	if grep -q "the guest trace of 1 VMs has initcalls but no clock pair" <<<"$out" &&
		! grep -q '"cat":"initcall"' ic.json &&
		$PY -c 'import json, sys; m = json.load(open("ic.json"))["metadata"]; sys.exit(m.get("initcall_vms_without_clock") != 1)'; then
		pass chrome_initcalls_without_clock_pairs_are_not_drawn_and_counted
	else
		fail chrome_initcalls_without_clock_pairs_are_not_drawn_and_counted "$out"
	fi
else
	fail chrome_initcalls_equal_report_initcalls "boottrace_gen or report --initcalls failed"
fi

expect_run chrome_refuses_to_overwrite 1 "s.json already exists: use --force" -- "$HT" convert --chrome s.json s.htr
out=$("$HT" convert --chrome s.json --force --vcpu 2 s.htr 2>&1) && "$HT" report --csv --vcpu 2 s.htr >sel.csv \
	&& out=$($PY "$TOP/tests/export/check_chrome.py" "$ENGINE" s.json sel.csv 2>&1) \
	&& pass chrome_selection_matches_report_selection || fail chrome_selection_matches_report_selection "$out"

# A damaged file: exit 1 with the reason, and, as any failed conversion, nothing written.
"$GEN" synth m.htr --calls 1500 >/dev/null 2>&1
truncate -s $((256 + 24 + 4096 * 80 + 24 + 1000)) m.htr
out=$("$HT" convert --chrome m.json m.htr 2>&1); status=$?
if [ $status -eq 1 ] && grep -q "m.htr is damaged: read 4096 records" <<<"$out" &&
	grep -q "nothing written to m.json: the input is damaged" <<<"$out" && [ ! -e m.json ]; then
	pass chrome_damaged_file_is_an_error_that_writes_nothing
else
	fail chrome_damaged_file_is_an_error_that_writes_nothing "status $status: $out; $(ls -A)"
fi

# Streaming: 2 M records (6 M slices, ~1 GB of JSON) with memory flat; the file ends as a
# whole JSON object. (The CTF test converts 5 M; here the output alone takes the time.)
n=2000000
if "$GEN" bulk big.htr $n 2>/dev/null; then
	rss_kib=$(peak_rss_kib "$OUTPUT/hypertrace-bpf" convert --chrome big.json big.htr)
	slices=$(grep -c '^{"ph":"X"' big.json)
	if [ "$rss_kib" -gt 0 ] && [ "$rss_kib" -lt 32768 ] && [ "$slices" -eq $((3 * n)) ] \
		&& tail -n 1 big.json | $PY -c 'import json, sys; json.loads("{" + sys.stdin.read())'; then
		pass chrome_memory_stays_flat_for_2M_records
	else
		fail chrome_memory_stays_flat_for_2M_records "max RSS ${rss_kib} KiB, $slices slices"
	fi
	echo "    2M records: $(($(stat -c %s big.json) / 1048576)) MiB of JSON, max RSS ${rss_kib} KiB"
	rm -f big.htr big.json
else
	fail chrome_memory_stays_flat_for_2M_records "trace_gen bulk failed"
fi

suite_exit
