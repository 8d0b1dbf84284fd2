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

if [ "$(id -u)" -ne 0 ]; then
	skip bench_hotpath_sets_up_every_instance "bench_hotpath loads BPF programs and needs root"
	skip bench_producers_sets_up "bench_producers loads BPF programs and needs root"
	exit 0
fi
# sets_up CHECK PROGRAM WANT: PROGRAM --setup-only exits 0 and says WANT.
sets_up() {
	local out rc
	out=$("$OUTPUT/bench/$2" --setup-only 2>&1)
	rc=$?
	if [ $rc -eq 0 ] && [ "$out" = "$3" ]; then
		pass "$1"
	else
		fail "$1" "exit $rc: $(tail -n 3 <<<"$out" | tr '\n' '|')"
	fi
}
sets_up bench_hotpath_sets_up_every_instance bench_hotpath "bench_hotpath: every instance is loaded and set up"
sets_up bench_producers_sets_up bench_producers "bench_producers: the programs are loaded and the rings set up"
suite_exit
