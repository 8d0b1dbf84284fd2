#!/usr/bin/env bash
# make bench can load what it measures: bench_hotpath loads the production
# object's programs in four instances (without --exits, with it, and the
# switch pair's two) and sets them up, measuring nothing; bench_producers
# (section 2b) loads its object, which includes them, and its rings. A
# program this host cannot load once left section 1 with no figure, and
# SVM's raw kvm_exit program section 2b on a host without kvm_amd's BTF,
# and only make bench saw it.
# shellcheck source=../lib.sh
source "$(dirname "$0")/../lib.sh"

BENCH=$OUTPUT/bench/bench_hotpath
if [ "$(id -u)" -ne 0 ]; then
	skip bench_hotpath_sets_up_every_instance "bench_hotpath loads BPF programs and needs root"
	skip bench_producers_sets_up "bench_producers loads BPF programs and needs root"
	exit 0
fi
out=$("$BENCH" --setup-only 2>&1)
rc=$?
if [ $rc -eq 0 ] && [ "$out" = "bench_hotpath: every instance is loaded and set up" ]; then
	pass bench_hotpath_sets_up_every_instance
else
	fail bench_hotpath_sets_up_every_instance "exit $rc: $(tail -n 3 <<<"$out" | tr '\n' '|')"
fi
out=$("$OUTPUT/bench/bench_producers" --setup-only 2>&1)
rc=$?
if [ $rc -eq 0 ] && [ "$out" = "bench_producers: the programs are loaded and the rings set up" ]; then
	pass bench_producers_sets_up
else
	fail bench_producers_sets_up "exit $rc: $(tail -n 3 <<<"$out" | tr '\n' '|')"
fi
suite_exit
