#!/usr/bin/env bash
# Fuzzes (libFuzzer + ASan + UBSan) for FUZZ_SECONDS in all (60 here; `make
# fuzz` runs longer), split between three targets:
#   fuzz_report.c: the trace file reader, every report mode and every
#     export, from the committed corpus and fresh seeds the real writer
#     writes (plain and compressed);
#   fuzz_blocks (fuzz_report.c with HT_FUZZ_BLOCKS): the same reader with
#     each input's checksums made right again, so mutations reach EXITS
#     blocks (series, vCPU accounts, causes) and vCPU switch records,
#     through the modes that read them (--exits, --causes, --vcpu-time,
#     --vcpu-switches as text, CSV and JSON);
#   fuzz_decode.c: catalog text, symbol-file text, VM names and guest events
#     through the decoding report modes and every export that decodes.
# All three check what each run wrote: every --json line (and the Chrome
# file) strict JSON, every --csv row with the header's columns, nothing a
# terminal interprets (tests/fuzz/output_check.c).
# First replays every input that once failed (tests/fuzz/regressions/,
# tests/fuzz/regressions-blocks/, tests/fuzz/regressions-decode/). A failing input is saved under
# $OUTPUT/fuzz/crashes/: fix it and add the input to the regressions.
# CPU-bound for a fixed time, no port, no verdict on speed: tests/run runs it
# beside the nested-machine suites. The harnesses are built here (make
# fuzz-build; incremental): ahead with --prepare, where the serial suites
# leave a CPU idle, or in its turn.
# tests/run: alongside the nested-machine suites
# tests/run: alongside, long: first in its queue
# tests/run: prepare ahead with --prepare
source "$(dirname "$0")/../lib.sh"
mode=${1:-}
mkdir -p "$OUTPUT" && exec {build_lock}>"$OUTPUT/fuzz-build.lock" && flock "$build_lock" || {
	[ "$mode" = --prepare ] && exit 1
	fail fuzz_harness_built "cannot lock $OUTPUT/fuzz-build.lock"
	suite_exit
}
build_ok=1
make -s -C "$TOP" OUTPUT="$OUTPUT" -j2 fuzz-build >"$OUTPUT/fuzz-build.log" 2>&1 || build_ok=0
[ "$mode" = --prepare ] && exit $((1 - build_ok))
exec {build_lock}>&-
FUZZ=$OUTPUT/fuzz/fuzz_report
FUZZ_DECODE=$OUTPUT/fuzz/fuzz_decode
FUZZ_BLOCKS=$OUTPUT/fuzz/fuzz_blocks
SEEDS=$OUTPUT/fuzz/write_seeds
FUZZ_SECONDS=${FUZZ_SECONDS:-60}
DECODE_SECONDS=$((FUZZ_SECONDS / 3))
BLOCKS_SECONDS=$((FUZZ_SECONDS / 3))
REPORT_SECONDS=$((FUZZ_SECONDS - DECODE_SECONDS - BLOCKS_SECONDS))
# libFuzzer reports leaks itself, per input.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0

if [ $build_ok = 0 ] || [ ! -x "$FUZZ" ] || [ ! -x "$FUZZ_DECODE" ] || [ ! -x "$FUZZ_BLOCKS" ] || [ ! -x "$SEEDS" ]; then
	fail fuzz_harness_built "make fuzz-build failed: $(grep -E 'error|Error' "$OUTPUT/fuzz-build.log" | sed -n 1,3p | tr '\n' ' ')"
	suite_exit
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/seeds" "$work/new" "$work/blocks-new" "$work/decode-seeds" "$work/decode-new"
# -close_fd_mask=2: the reports' own messages on stderr are silenced, libFuzzer's are not.
fuzz_opts=(-close_fd_mask=2 -timeout=10 -rss_limit_mb=2048 -max_len=65536)

if "$SEEDS" "$work/seeds" && [ "$(ls "$work/seeds" | wc -l)" -ge 6 ] &&
	"$OUTPUT/hypertrace-bpf" report "$work/seeds/compressed" | grep -q "^records: 40$" &&
	"$SEEDS" --decode "$work/decode-seeds" && [ "$(ls "$work/decode-seeds" | wc -l)" -ge 2 ]; then
	pass fuzz_seeds_written_by_the_writer
else
	fail fuzz_seeds_written_by_the_writer "write_seeds failed or wrote unreadable files"
fi

# The views of EXITS blocks are fuzzed and their output checked: on the seed
# of a recording with exits (series, accounts, causes), fuzz_blocks runs
# report --causes as text, CSV and JSON and --vcpu-time --csv, each
# reaching its rows, all checked (HT_FUZZ_LOG names each checked run).
if [ -f "$work/seeds/exits" ] &&
	HT_FUZZ_LOG=$work/runs.log "$FUZZ_BLOCKS" "${fuzz_opts[@]}" "$work/seeds/exits" >"$work/runs.out" 2>&1 &&
	grep -Eqs '^rows ([2-9]|[1-9][0-9]+): report --causes @INPUT@$' "$work/runs.log" &&
	grep -Eqs '^rows ([2-9]|[1-9][0-9]+): report --causes --csv @INPUT@$' "$work/runs.log" &&
	grep -Eqs '^rows [1-9][0-9]*: report --causes --json ' "$work/runs.log" &&
	grep -Eqs '^rows ([2-9]|[1-9][0-9]+): report --vcpu-time --csv ' "$work/runs.log"; then
	pass fuzz_blocks_checks_the_output_of_causes_and_vcpu_time
else
	fail fuzz_blocks_checks_the_output_of_causes_and_vcpu_time "$(cat "$work/runs.log" 2>/dev/null; tail -3 "$work/runs.out")"
fi

# The boot's views too: on the seed of a recording with boot exits and a
# BOOT block, fuzz_blocks runs report --boot as text and CSV, each
# reaching its rows (a VM's phases), all checked.
if [ -f "$work/seeds/boot" ] &&
	HT_FUZZ_LOG=$work/boot-runs.log "$FUZZ_BLOCKS" "${fuzz_opts[@]}" "$work/seeds/boot" >"$work/boot-runs.out" 2>&1 &&
	grep -Eqs '^rows [1-9][0-9]*: report --boot @INPUT@$' "$work/boot-runs.log" &&
	grep -Eqs '^rows ([2-9]|[1-9][0-9]+): report --boot --csv @INPUT@$' "$work/boot-runs.log"; then
	pass fuzz_blocks_checks_the_output_of_report_boot
else
	fail fuzz_blocks_checks_the_output_of_report_boot "$(cat "$work/boot-runs.log" 2>/dev/null; tail -3 "$work/boot-runs.out")"
fi

# replay NAME FUZZER DIR: every input that once failed passes now.
replay() {
	local name=$1 fuzzer=$2 out inputs=("$3"/*)
	[ -e "${inputs[0]}" ] || return 0
	if out=$("$fuzzer" "${fuzz_opts[@]}" "${inputs[@]}" 2>&1); then
		pass "$name"
	else
		fail "$name" "$(grep -aE 'ERROR|SUMMARY|Running|fuzz_' <<<"$out" | tail -5)"
	fi
}
replay fuzz_regression_inputs_pass "$FUZZ" tests/fuzz/regressions
replay fuzz_blocks_regression_inputs_pass "$FUZZ_BLOCKS" tests/fuzz/regressions-blocks
replay fuzz_decode_regression_inputs_pass "$FUZZ_DECODE" tests/fuzz/regressions-decode

# run NAME FUZZER SECONDS CORPUS...: fuzzes; a failing input goes to $OUTPUT/fuzz/crashes/.
run() {
	local name=$1 fuzzer=$2 seconds=$3 log=$work/$1.log status runs
	shift 3
	"$fuzzer" "${fuzz_opts[@]}" -max_total_time="$seconds" -print_final_stats=1 \
		-artifact_prefix="$work/$name-" "$@" >"$log" 2>&1
	status=$?
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
	if [ $status -eq 0 ] && [ "${runs:-0}" -gt 0 ]; then
		pass "${name}_${seconds}s ($runs inputs, $(ls "$1" | wc -l) new in the corpus)"
	else
		mkdir -p "$OUTPUT/fuzz/crashes"
		cp "$work/$name"-* "$OUTPUT/fuzz/crashes/" 2>/dev/null
		fail "${name}_${seconds}s" "status $status, inputs saved in $OUTPUT/fuzz/crashes/: $(grep -aE 'ERROR|SUMMARY|fuzz_decode:' "$log" | head -3)"
	fi
}
run fuzz_reader_and_report_modes "$FUZZ" "$REPORT_SECONDS" "$work/new" tests/fuzz/corpus "$work/seeds"
run fuzz_blocks_exits_and_switches "$FUZZ_BLOCKS" "$BLOCKS_SECONDS" "$work/blocks-new" "$work/seeds"
run fuzz_decode_outputs_checked "$FUZZ_DECODE" "$DECODE_SECONDS" "$work/decode-new" "$work/decode-seeds"
suite_exit
