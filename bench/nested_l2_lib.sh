#!/usr/bin/env bash
# Sourced by the make bench items that run a Linux KVM guest in the nested
# machine of tests/e2e (nested_boot_cost, nested_exits_cost,
# nested_hypertrace_cost): the machine they share and the run they share.
# Before sourcing: BENCH_NAME (the script's name in messages) and
# NESTED_TIMEOUT if the default 600 s of the machine's CPU time is not enough.
# Sets TOP, OUTPUT, work (removed at exit) and L2_WORK.
# shellcheck shell=bash
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUTPUT=${OUTPUT:-$TOP/.output}
export NESTED_TIMEOUT=${NESTED_TIMEOUT:-600}
# shellcheck source=tests/e2e/nested.sh
source "$TOP/tests/e2e/nested.sh"
# shellcheck source=tests/e2e/l2_guest.sh
source "$TOP/tests/e2e/l2_guest.sh"
# One emulated CPU: the workloads are one vCPU, and one CPU is faster and
# steadier; the guest's clock reliable, and shadow paging (every guest page
# fault an exit, as on hosts without nested paging).
export NESTED_SMP=1 NESTED_MEM=${NESTED_MEM:-2048}
export NESTED_APPEND="tsc=reliable" NESTED_KVM_AMD_PARAMS="npt=0"
export NESTED_STAGE_HOOK=${NESTED_STAGE_HOOK:-l2_stage}

work=$(mktemp -d)
L2_WORK=$work
trap 'rm -rf "$work"' EXIT

# bench_nested_run KEEP: runs $work/guest.sh in the nested machine with the
# static hypertrace-bpf and the KVM guest's files (nested_run runs it once
# more after an emulation stall); exits with a message if the machine did
# not finish. F is then its files' directory, copied to KEEP if not empty.
bench_nested_run() {
	# shellcheck disable=SC2046 # l2_l1_files prints the files, one word each
	if ! nested_run "$work/out" "$work/guest.sh" "$OUTPUT/static/hypertrace-bpf" $(l2_l1_files) 2>"$work/run.log"; then
		echo "$BENCH_NAME: $NESTED_ERR" >&2
		exit 1
	fi
	F=$work/out/files
	[ -z "$1" ] || cp -r "$F" "$1"
}
