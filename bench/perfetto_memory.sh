#!/usr/bin/env bash
# make bench: convert --perfetto streams. The maximum RSS of converting 100 M
# records (a compressed trace file of about 1 GB; about 4 GB of Perfetto trace
# written) against that of 1 M records, measured in the same run. Prints a
# TARGET line. Needs about 6 GB free in OUTPUT's file system and a few
# minutes; tests/export/test_perfetto.sh checks 1 M against 10 M in make test.
set -uo pipefail
cd "$(dirname "$0")/.."
OUTPUT=${OUTPUT:-.output}
N=${PERFETTO_BENCH_RECORDS:-100000000}
work=$(mktemp -d "$OUTPUT/perfetto-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT

rss() { # max RSS in KiB of a command, and its seconds
	/usr/bin/python3 -c '
import resource, subprocess, sys, time
t = time.monotonic()
r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss if r.returncode == 0 else -1, round(time.monotonic() - t, 1))' "$@"
}
"$OUTPUT/tests/tools/trace_gen" bulk "$work/small.htr" 1000000 --compress >/dev/null &&
	"$OUTPUT/tests/tools/trace_gen" bulk "$work/big.htr" "$N" --compress >/dev/null || { echo "trace_gen failed"; exit 1; }
read -r small small_s < <(rss "$OUTPUT/hypertrace-bpf" convert --perfetto "$work/small.pftrace" "$work/small.htr")
rm -f "$work/small.pftrace"
read -r big big_s < <(rss "$OUTPUT/hypertrace-bpf" convert --perfetto "$work/big.pftrace" "$work/big.htr")
echo "convert --perfetto: 1 M records: max RSS $small KiB ($small_s s); $((N / 1000000)) M records: max RSS $big KiB ($big_s s, $(($(stat -c %s "$work/big.pftrace" 2>/dev/null || echo 0) / 1048576)) MiB written)"
awk -v a="$small" -v b="$big" -v n="$((N / 1000000))" 'BEGIN {
	ok = (a > 0 && b > 0 && b <= 1.10 * a)
	ratio = (a > 0) ? b / a : 0
	what = "perfetto export max RSS, large file vs 1 M records"
	printf "TARGET %-52s %6.2fx  (limit 1.10x; %d M records)  %s\n", what, ratio, n, (ok ? "met" : "NOT MET")
}'
