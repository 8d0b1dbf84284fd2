#!/usr/bin/env bash
# Fuzzes the trace file reader, every report mode and both exports (fuzz_report.c,
# libFuzzer + ASan + UBSan) for FUZZ_SECONDS (60 here; `make fuzz` runs longer),
# starting from the committed corpus and from fresh seeds the real writer
# writes (plain and compressed). First replays every input that once failed
# (tests/fuzz/regressions/). A crash is saved under $OUTPUT/fuzz/crashes/: fix
# it and add the input to tests/fuzz/regressions/.
source "$(dirname "$0")/../lib.sh"
FUZZ=$OUTPUT/fuzz/fuzz_report
SEEDS=$OUTPUT/fuzz/write_seeds
FUZZ_SECONDS=${FUZZ_SECONDS:-60}
# libFuzzer reports leaks itself, per input.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0

if [ ! -x "$FUZZ" ] || [ ! -x "$SEEDS" ]; then
	fail fuzz_harness_built "$FUZZ or $SEEDS is missing: run make tests-build"
	suite_exit
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/seeds" "$work/new"
# -close_fd_mask=2: the reports' own messages on stderr are silenced, libFuzzer's are not.
fuzz_opts=(-close_fd_mask=2 -timeout=10 -rss_limit_mb=2048 -max_len=65536)

if "$SEEDS" "$work/seeds" && [ "$(ls "$work/seeds" | wc -l)" -ge 6 ] &&
	"$OUTPUT/hypertrace-bpf" report "$work/seeds/compressed" | grep -q "^records: 40$"; then
	pass fuzz_seeds_written_by_the_writer
else
	fail fuzz_seeds_written_by_the_writer "write_seeds failed or wrote unreadable files"
fi

regressions=(tests/fuzz/regressions/*)
if [ -e "${regressions[0]}" ]; then
	if out=$("$FUZZ" "${fuzz_opts[@]}" "${regressions[@]}" 2>&1); then
		pass fuzz_regression_inputs_pass
	else
		fail fuzz_regression_inputs_pass "$(grep -E 'ERROR|SUMMARY|Running' <<<"$out" | tail -5)"
	fi
fi

"$FUZZ" "${fuzz_opts[@]}" -max_total_time="$FUZZ_SECONDS" -print_final_stats=1 \
	-artifact_prefix="$work/" "$work/new" tests/fuzz/corpus "$work/seeds" >"$work/log" 2>&1
status=$?
runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log")
if [ $status -eq 0 ] && [ "${runs:-0}" -gt 0 ]; then
	pass "fuzz_reader_and_report_modes_${FUZZ_SECONDS}s ($runs inputs, $(ls "$work/new" | wc -l) new in the corpus)"
else
	mkdir -p "$OUTPUT/fuzz/crashes"
	cp "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-* "$OUTPUT/fuzz/crashes/" 2>/dev/null
	fail "fuzz_reader_and_report_modes_${FUZZ_SECONDS}s" "status $status, inputs saved in $OUTPUT/fuzz/crashes/: $(grep -E 'ERROR|SUMMARY' "$work/log" | head -3)"
fi
suite_exit
