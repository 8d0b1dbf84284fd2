#!/usr/bin/env bash
# bench/run's verdicts, with every section's program replaced by a stub: a
# target whose section fails or prints nothing is NOT MEASURED with the
# reason and fails the run; a verdict the list does not know fails it too;
# and bench/run's list of targets is the one the real benchmarks print.
# Runs bench/run on stubs, with no port, no BPF program and no verdict a
# busy machine changes: it runs beside the nested-machine suites.
# tests/run: alongside the nested-machine suites
source "$(dirname "$0")/../lib.sh"
cd "$TOP" || exit 1

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The targets bench/run knows, "SECTION|NAME" per line.
awk '/^TARGETS=\(/ { on = 1; next } on && /^\)/ { exit } on { gsub(/^[ \t]*"|"[ \t]*$/, ""); print }' bench/run >"$work/targets"
[ -s "$work/targets" ] || { fail bench_run_lists_its_targets "no TARGETS list in bench/run"; suite_exit; }

# Each list entry is a verdict a real benchmark prints, and each verdict a
# benchmark prints is in the list.
missing=
while IFS='|' read -r _ name; do
	grep -rqF -- "\"$name\"" bench/*.c bench/*.sh bench/run || missing="$missing [$name]"
done <"$work/targets"
printed=$(grep -ohE 'verdict\("[^"]+"' bench/*.c | sed 's/^verdict("//; s/"$//')
while IFS= read -r name; do
	[ -n "$name" ] && ! grep -qF -- "|$name" "$work/targets" && missing="$missing [unlisted: $name]"
done <<<"$printed"
[ -z "$missing" ] && pass targets_listed_are_the_ones_the_benchmarks_print ||
	fail targets_listed_are_the_ones_the_benchmarks_print "$missing"

# Stubs: section ID prints its targets as met, unless STUB_<ID> says
# fail (exit 1 with an error), silent (exit 0, no verdict), notmet or extra.
mkdir -p "$work/out/bench" "$work/scripts"
stub() { # FILE SECTION
	cat >"$1" <<EOF
#!/usr/bin/env bash
mode=\${STUB_$2:-ok}
case \$mode in
fail) echo "${1##*/}: cannot attach to the syscalls/sys_enter_getppid tracepoint: No such file or directory" >&2; exit 1 ;;
silent) echo "measuring nothing"; exit 0 ;;
esac
while IFS='|' read -r id name; do
	[ "\$id" = "$2" ] || continue
	v=met; [ \$mode = notmet ] && v="NOT MET"
	printf 'TARGET %-52s %6.2fx  (limit 1.10x)  %s\n' "\$name" 1.00 "\$v"
done <"$work/targets"
[ \$mode = extra ] && printf 'TARGET %-52s %6.2fx  (limit 1.10x)  met\n' "a verdict nobody listed" 1.00
exit 0
EOF
	chmod +x "$1"
}
stub "$work/out/bench/bench_hotpath" 1
stub "$work/out/bench/bench_exits" 1b
stub "$work/out/bench/bench_drain" 2
stub "$work/out/bench/bench_producers" 2b
stub "$work/scripts/perfetto_memory.sh" 4b
stub "$work/scripts/nested_exits_cost.sh" 6
stub "$work/scripts/nested_idle_cost.sh" 6b
stub "$work/scripts/nested_boot_cost.sh" 7
cat >"$work/scripts/nested_bench.sh" <<EOF
#!/usr/bin/env bash
[ "\${STUB_3:-ok}" = fail ] && { echo "nested_bench: the emulated machine stalled twice in a row" >&2; exit 1; }
printf 'NESTED %s %s\n' ftrace_bytes 800000 ftrace_hypercalls 5000 ftrace_overrun 0 ftrace_entries 10000 \
	plain_bytes 400000 plain_records 5000 z_bytes 40000 z_records 5000 rate_off 1000 rate_on 900 rate_off2 1000
EOF
echo 'echo "cost table"' >"$work/scripts/nested_hypertrace_cost.sh"

run_bench() { # NAME=VALUE... : bench/run with the stubs; output in $work/out.log, status in $status
	env "$@" OUTPUT="$work/out" BENCH_SCRIPTS="$work/scripts" bash bench/run >"$work/out.log" 2>&1
	status=$?
	targets=$(sed -n '/^== Targets ==/,$p' "$work/out.log")
}
nlisted=$(wc -l <"$work/targets")

run_bench
nmet=$(grep -c ' met$' <<<"$targets")
[ $status = 0 ] && [ "$nmet" = "$nlisted" ] && ! grep -q 'NOT MEASURED' <<<"$targets" &&
	pass every_target_measured_and_met_exits_0 ||
	fail every_target_measured_and_met_exits_0 "status $status, $nmet of $nlisted met: $(tr '\n' '|' <<<"$targets")"

run_bench STUB_1=fail
n1=$(grep -c '^1|' "$work/targets")
nm=$(grep -c 'NOT MEASURED (bench_hotpath exited 1: bench_hotpath: cannot attach to the syscalls/sys_enter_getppid tracepoint' <<<"$targets")
[ $status = 1 ] && [ "$nm" = "$n1" ] && [ "$(grep -c ' met$' <<<"$targets")" = $((nlisted - n1)) ] &&
	pass failed_section_targets_are_not_measured_with_the_reason_and_exit_1 ||
	fail failed_section_targets_are_not_measured_with_the_reason_and_exit_1 "status $status, $nm of $n1 NOT MEASURED with the reason: $(tr '\n' '|' <<<"$targets")"

run_bench STUB_2b=silent
[ $status = 1 ] && grep -q 'ring cost per record, producers on 2 CPUs vs 1 *NOT MEASURED (section 2b printed no verdict for it)' <<<"$targets" &&
	pass section_without_a_verdict_is_not_measured_and_exit_1 ||
	fail section_without_a_verdict_is_not_measured_and_exit_1 "status $status: $(tr '\n' '|' <<<"$targets")"

run_bench STUB_3=fail
[ $status = 1 ] && grep -q 'bytes per hypercall vs ftrace (--compress) *NOT MEASURED (nested_bench.sh exited 1: nested_bench: the emulated machine stalled twice in a row)' <<<"$targets" &&
	pass failed_nested_run_is_not_measured_and_exit_1 ||
	fail failed_nested_run_is_not_measured_and_exit_1 "status $status: $(tr '\n' '|' <<<"$targets")"

run_bench STUB_2=extra
[ $status = 1 ] && grep -q "a verdict nobody listed.*not in bench/run's list of targets" <<<"$targets" &&
	pass unlisted_verdict_exits_1 || fail unlisted_verdict_exits_1 "status $status: $(tr '\n' '|' <<<"$targets")"

run_bench STUB_4b=notmet
[ $status = 1 ] && grep -q 'perfetto export max RSS.*NOT MET' <<<"$targets" &&
	pass target_not_met_exits_1 || fail target_not_met_exits_1 "status $status: $(tr '\n' '|' <<<"$targets")"

suite_exit
