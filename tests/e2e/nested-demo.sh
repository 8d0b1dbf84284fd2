#!/usr/bin/env bash
# Shows hypertrace-bpf recording real hypercalls on a host whose /dev/kvm
# cannot run a guest: boots a nested machine under QEMU software emulation
# (tests/e2e/nested.sh) with KVM inside, records minivm there and prints
# minivm's output, the recording summary and the report.
#
# Usage: tests/e2e/nested-demo.sh [MINIVM-OPTIONS...]
#   default options: --vcpus 2 --count 1000 --mix io,other-nr
# Needs `make static` first; the first run downloads qemu, a kernel and
# busybox into .cache/nested/ (about 20 s); later runs take about 10 s.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/nested.sh"

output=${OUTPUT:-$NESTED_TOP/.output}
ht=$output/static/hypertrace-bpf
minivm=$output/guest/minivm
for f in "$ht" "$minivm"; do
	if [ ! -x "$f" ]; then
		echo "nested-demo: $f is missing: run 'make static' first" >&2
		exit 1
	fi
done
[ $# -gt 0 ] || set -- --vcpus 2 --count 1000 --mix io,other-nr

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The options go into the guest script single-quoted, so they arrive as given.
args=
for a in "$@"; do args+=" '${a//\'/\'\\\'\'}'"; done
cat >"$work/guest.sh" <<EOF
echo "# hypertrace-bpf record -i 0.5 -o /tmp/demo.htr -- minivm ${*//\"/}"
hypertrace-bpf record -i 0.5 -o /tmp/demo.htr -- minivm$args || exit
echo
echo "# hypertrace-bpf report /tmp/demo.htr"
hypertrace-bpf report /tmp/demo.htr || exit
echo
echo "# hypertrace-bpf report --hist=total --per-vcpu /tmp/demo.htr"
hypertrace-bpf report --hist=total --per-vcpu /tmp/demo.htr || exit
echo
echo "# hypertrace-bpf report --dump /tmp/demo.htr | sed -n 1,5p"
hypertrace-bpf report --dump /tmp/demo.htr | sed -n 1,5p
EOF

echo "nested-demo: preparing qemu, kernel and busybox in ${NESTED_CACHE/#$NESTED_TOP\//}" >&2
nested_fetch || exit 1
echo "nested-demo: booting an emulated AMD machine with KVM inside (about 10 s)..." >&2
nested_run "$work/out" "$work/guest.sh" "$ht" "$minivm" || exit 1
cat "$work/out/stdout"
status=$(cat "$work/out/status")
echo "nested-demo: guest kernel $(cat "$NESTED_ROOT/kernel/release"), $NESTED_SMP emulated CPUs, qemu ran $(cat "$work/out/qemu_seconds") s" >&2
if [ "$status" != 0 ]; then
	echo "nested-demo: the recording in the nested machine failed (exit status $status)" >&2
	exit 1
fi
