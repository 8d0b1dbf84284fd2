#!/usr/bin/env bash
# make bench, items 3 and 4, on REAL kvm events in the nested machine of
# tests/e2e (QEMU software emulation, kvm-amd inside; see tests/e2e/nested.sh).
#  3. Bytes per traced hypercall on disk: hypertrace-bpf's file (plain and
#     --compress) against what ftrace stores for the same hypercalls with its
#     best stateless filters (kvm_exit exit_reason, kvm_hypercall nr == 1000,
#     every kvm_entry, which it cannot filter), from ftrace's own per-CPU
#     buffer statistics, on minivm with ten other exits per hypercall.
#  4. BPF run time per program (kernel bpf_stats) and minivm's guest-side
#     hypercall round trip with tracing off and on. Software-emulated: printed
#     for information, no target.
# Prints result lines "NESTED key value" for bench/run.
set -euo pipefail
TOP=$(cd "$(dirname "$0")/.." && pwd)
OUTPUT=${OUTPUT:-$TOP/.output}
source "$TOP/tests/e2e/nested.sh"
export NESTED_SMP=1 # one vCPU: the workload is one thread; one emulated CPU is faster and steadier

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cat >"$work/guest.sh" <<'GUEST'
T=/sys/kernel/tracing
W="--vcpus 1 --count 5000 --mix io --mix-per-call 10 --timeout 120"
# 3a. ftrace, best stateless filters (SVM: the hypercall exit is 0x81 = 129).
echo 32768 >$T/buffer_size_kb
echo 'exit_reason == 129' >$T/events/kvm/kvm_exit/filter
echo 'nr == 1000' >$T/events/kvm/kvm_hypercall/filter
for e in kvm_exit kvm_hypercall kvm_entry; do echo 1 >$T/events/kvm/$e/enable; done
echo >$T/trace
minivm $W >/out/ftrace_minivm.out 2>&1
echo 0 >$T/tracing_on
cat $T/per_cpu/cpu*/stats >/out/ftrace.stats
grep -c 'kvm_hypercall:' $T/trace >/out/ftrace.hypercalls || true
for e in kvm_exit kvm_hypercall kvm_entry; do echo 0 >$T/events/kvm/$e/enable; echo 0 >$T/events/kvm/$e/filter; done
echo >$T/trace
echo 1 >$T/tracing_on
# 3b. hypertrace-bpf, plain and compressed, same workload.
hypertrace-bpf record -q -o /tmp/plain.htr -- minivm $W >/out/plain.out 2>&1
hypertrace-bpf record -q -z -o /tmp/z.htr -- minivm $W >/out/z.out 2>&1
wc -c </tmp/plain.htr >/out/plain.size
wc -c </tmp/z.htr >/out/z.size
hypertrace-bpf report /tmp/plain.htr | grep '^records:' >/out/plain.records
hypertrace-bpf report /tmp/z.htr | grep '^records:' >/out/z.records
# 4. bpf_stats and the guest round trip, tracing off then on (no mix: hypercalls only).
R="--vcpus 1 --count 20000 --timeout 120"
minivm $R >/out/rt_off.out 2>&1
hypertrace-bpf record -q --bpf-stats -o /tmp/rt.htr -- minivm $R >/out/rt_on.out 2>&1
minivm $R >/out/rt_off2.out 2>&1
GUEST

nested_fetch 2>"$work/fetch.log" || { echo "nested_bench: cannot fetch the nested machine: $NESTED_ERR" >&2; exit 1; }
if ! nested_run "$work/out" "$work/guest.sh" "$OUTPUT/static/hypertrace-bpf" "$OUTPUT/guest/minivm" 2>"$work/run.log"; then
	echo "nested_bench: $NESTED_ERR" >&2
	exit 1
fi
F=$work/out/files
num() { tr -dc '0-9' <"$1"; }
ftrace_bytes=$(awk '/^bytes:/ { s += $2 } END { print s + 0 }' "$F/ftrace.stats")
ftrace_overrun=$(awk '/^overrun:/ { s += $2 } END { print s + 0 }' "$F/ftrace.stats")
ftrace_entries=$(awk '/^entries:/ { s += $2 } END { print s + 0 }' "$F/ftrace.stats")
echo "NESTED ftrace_bytes $ftrace_bytes"
echo "NESTED ftrace_entries $ftrace_entries"
echo "NESTED ftrace_overrun $ftrace_overrun"
echo "NESTED ftrace_hypercalls $(num "$F/ftrace.hypercalls")"
echo "NESTED plain_bytes $(num "$F/plain.size")"
echo "NESTED plain_records $(num "$F/plain.records")"
echo "NESTED z_bytes $(num "$F/z.size")"
echo "NESTED z_records $(num "$F/z.records")"
grep '^hypertrace-bpf: bpf-stats' "$F/rt_on.out" | sed 's/^hypertrace-bpf: bpf-stats \([a-z_]*\): \([0-9]*\) runs, \([0-9]*\) ns.*/NESTED bpfstats_\1 \2 \3/'
rate() { sed -n 's/.*hypercalls_per_second=\([0-9]*\).*/\1/p' "$F/$1" | tail -n 1; }
echo "NESTED rate_off $(rate rt_off.out)"
echo "NESTED rate_on $(rate rt_on.out)"
echo "NESTED rate_off2 $(rate rt_off2.out)"
