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

# check_kernel_exports NAME HTR [SYMBOLS]: convert --lttng and --perfetto of a
# trace file of guest events, read back as tests/export/test_lttng.sh and
# test_perfetto.sh do (lttng-modules' declarations for the traced kernel,
# babeltrace2 with no warning, the vCPU state model against report, its
# preempted time against report --vcpu-switches; protoc and the Perfetto
# checker against report --csv and --vcpu-switches, a sixth of the Chrome JSON
# without the off-CPU slices, which the Chrome JSON does not have).
# PASS/FAIL NAME_lttng_export_matches, NAME_perfetto_export_matches; ONLY
# "perfetto" checks that export alone (a recording without --vcpu-sched,
# whose LTTng export check_lttng.py checks without --switches).
check_kernel_exports() {
	local name=$1 htr=$2 syms=${3:-} only=${4:-} dir out src release total decoded pf js t
	local py=/usr/bin/python3 ht=$OUTPUT/hypertrace-bpf proto=$TOP/third_party/perfetto/perfetto_trace.proto
	local symopt=()
	[ -n "$syms" ] && symopt=(--guest-symbols "$syms")
	dir=$(mktemp -d)
	"$ht" report --csv "${symopt[@]}" "$htr" >"$dir/t.csv" 2>/dev/null || true
	"$ht" report --sched "$htr" >"$dir/t.sched" 2>/dev/null || true
	# The switches of vCPU threads (record --vcpu-sched); only the CSV header for a file without them.
	"$ht" report --vcpu-switches --csv "$htr" >"$dir/t.switches.csv" 2>/dev/null || true
	if [ "$only" = perfetto ]; then
		:
	elif ! command -v babeltrace2 >/dev/null || ! $py -c 'import bt2' 2>/dev/null; then
		skip "${name}_lttng_export_matches" "babeltrace2 and python3-bt2 are not installed: run 'make deps' as root"
	elif ! src=$("$TOP/tests/export/fetch-lttng-modules.sh" 2>&1); then
		fail "${name}_lttng_export_matches" "cannot unpack Debian's lttng-modules-dkms: $src"
	elif out=$("$ht" convert --lttng "$dir/exp" "${symopt[@]}" "$htr" 2>&1) &&
		release=$(sed -n 's/^\tkernel_release = "\(.*\)";$/\1/p' "$dir/exp/host/metadata") &&
		out=$($py "$TOP/tests/export/check_lttng_modules.py" "$src" "$release" "$dir"/exp/*/metadata 2>&1) &&
		out="$out"$'\n'$(for t in "$dir"/exp/*/; do babeltrace2 "$t" 2>&1 >/dev/null; done) &&
		! grep -qiE "warning|error" <<<"$(for t in "$dir"/exp/*/; do babeltrace2 "$t" 2>&1 >/dev/null; done)" &&
		out=$($py "$TOP/tests/export/check_lttng.py" "$dir/exp" "$dir/t.csv" "$dir/t.sched" --switches "$dir/t.switches.csv" 2>&1); then
		pass "${name}_lttng_export_matches"
		echo "  lttng-modules $release: 0 differences; $(ls "$dir/exp" | tr '\n' ' ')"
		echo "$out"
	else
		fail "${name}_lttng_export_matches" "$out"
	fi
	if ! command -v protoc >/dev/null || ! $py -c 'import google.protobuf' 2>/dev/null; then
		skip "${name}_perfetto_export_matches" "protobuf-compiler and python3-protobuf are not installed: run 'make deps' as root"
	elif mkdir "$dir/payloads" && out=$("$ht" convert --perfetto "$dir/t.pftrace" "${symopt[@]}" "$htr" 2>&1) &&
		out=$($py "$TOP/tests/export/check_perfetto.py" "$proto" "$dir/t.pftrace" "$dir/t.csv" --payloads "$dir/payloads" \
			--switches "$dir/t.switches.csv" 2>&1) &&
		total=$(sed -n 's/^ *\([0-9]*\) packets (.*/\1/p' <<<"$out") &&
		decoded=$(for b in "$dir"/payloads/*.pb; do
			protoc --proto_path="$TOP/third_party/perfetto" --decode=perfetto.protos.Trace perfetto_trace.proto <"$b" || echo FAILED
		done | grep -c '^packet {') && [ "$decoded" = "$total" ] &&
		"$ht" convert --chrome "$dir/t.json" "${symopt[@]}" "$htr" >/dev/null 2>&1 &&
		pf=$(stat -c %s "$dir/t.pftrace") && js=$(stat -c %s "$dir/t.json") &&
		pf_records=$(sed -n 's/^ *\([0-9]*\) bytes without the off-CPU tracks and the account$/\1/p' <<<"$out") &&
		[ $((${pf_records:-$pf} * 6)) -le "$js" ]; then
		pass "${name}_perfetto_export_matches"
		echo "$out"
		echo "  protoc decoded $decoded packets; $pf bytes (${pf_records:-$pf} without the off-CPU tracks and the account, which Chrome's JSON has no counterpart of), Chrome JSON $js bytes"
	else
		fail "${name}_perfetto_export_matches" "${out:-} (decoded ${decoded:-?} of ${total:-?} packets, ${pf:-?} bytes vs Chrome ${js:-?})"
	fi
	rm -rf "$dir"
}
