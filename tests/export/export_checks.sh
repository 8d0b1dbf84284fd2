# Shell helper for suites that have a trace file of their own (e.g. the nested
# end-to-end run on real KVM exits): converts it to CTF and to Chrome trace
# JSON and reads both back with their real readers, checking every record
# against `report --csv`. Sourced after tests/lib.sh.
# shellcheck shell=bash

# check_exports NAME HTR: PASS/FAIL NAME_ctf_export_matches, NAME_chrome_export_matches
# (SKIP when a reader is not installed). Uses the host build $OUTPUT/hypertrace-bpf.
check_exports() {
	local name=$1 htr=$2 dir out dropped
	local py=/usr/bin/python3 ht=$OUTPUT/hypertrace-bpf engine=$TOP/.cache/trace-engine
	dir=$(mktemp -d)
	"$ht" report --csv "$htr" >"$dir/t.csv" 2>/dev/null || true
	dropped=$("$ht" report "$htr" 2>/dev/null | sed -n 's/^dropped: \([0-9]*\) .*/\1/p') || true
	if ! command -v babeltrace2 >/dev/null || ! $py -c 'import bt2' 2>/dev/null; then
		skip "${name}_ctf_export_matches" "babeltrace2 and python3-bt2 are not installed: run 'make deps' as root"
	elif out=$("$ht" convert --ctf "$dir/ctf" "$htr" 2>&1) &&
		out=$($py "$TOP/tests/export/check_ctf.py" "$dir/ctf" "$dir/t.csv" ${dropped:+--dropped "$dropped"} 2>&1); then
		pass "${name}_ctf_export_matches"
		echo "$out"
	else
		fail "${name}_ctf_export_matches" "$out"
	fi
	if ! command -v node >/dev/null || ! "$TOP/tests/export/install-trace-engine.sh" >/dev/null 2>&1; then
		skip "${name}_chrome_export_matches" "node or the npm package @paulirish/trace_engine is not installed: run 'make deps' as root"
	elif out=$("$ht" convert --chrome "$dir/t.json" "$htr" 2>&1) &&
		out=$($py "$TOP/tests/export/check_chrome.py" "$engine" "$dir/t.json" "$dir/t.csv" 2>&1); then
		pass "${name}_chrome_export_matches"
		echo "$out"
	else
		fail "${name}_chrome_export_matches" "$out"
	fi
	rm -rf "$dir"
}
