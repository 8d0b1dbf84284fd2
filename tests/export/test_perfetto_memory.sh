#!/usr/bin/env bash
# convert --perfetto's memory stays flat: 4 M records and as many switches of
# vCPU threads (off-CPU slices) convert in the RSS of 400 k of each, within
# 10% and 1 MiB (allocator noise). A converter that kept as little as a byte
# per record or switch fails it. The 100 M case is in `make bench`
# (bench/perfetto_memory.sh).
# One process's peak against another's of the same run: tests/run runs it
# beside the nested-machine suites.
# tests/run: alongside the nested-machine suites
source "$(dirname "$0")/../lib.sh"

GEN=$OUTPUT/tests/tools/trace_gen
PY=/usr/bin/python3

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1

if "$GEN" bulk small.htr 400000 --switches 2>/dev/null && "$GEN" bulk large.htr 4000000 --switches 2>/dev/null; then
	r1=$(peak_rss_kib "$OUTPUT/hypertrace-bpf" convert --perfetto small.pftrace small.htr)
	r10=$(peak_rss_kib "$OUTPUT/hypertrace-bpf" convert --perfetto large.pftrace large.htr)
	echo "    max RSS: 400 k records and switches $r1 KiB, 4 M $r10 KiB ($(($(stat -c %s large.pftrace) / 1048576)) MiB written)"
	if [ "$r1" -gt 0 ] && [ "$r10" -gt 0 ] && [ $((r10 * 10)) -le $((r1 * 11 + 10240)) ]; then
		pass perfetto_memory_flat_from_400k_to_4M_records
	else
		fail perfetto_memory_flat_from_400k_to_4M_records "max RSS $r1 KiB for 400 k, $r10 KiB for 4 M"
	fi
else
	fail perfetto_memory_flat_from_400k_to_4M_records "trace_gen bulk failed"
fi
suite_exit
