#!/usr/bin/env bash
# The main job (`sudo make demo`): shows hypertrace-bpf recording real
# hypercalls with their latencies. Where this machine's KVM can run a guest
# (the CPU has VMX or SVM), it records the minivm test VM right here; where it
# cannot (e.g. inside a cloud VM without nested virtualization), it runs the
# same recording inside a nested machine under QEMU software emulation.
set -euo pipefail
cd "$(dirname "$0")/.."
OUTPUT=${OUTPUT:-.output}
HT=$OUTPUT/hypertrace-bpf
MINIVM=$OUTPUT/guest/minivm
MIX=(--vcpus 2 --count 1000 --mix io,other-nr)

if [ -c /dev/kvm ] && grep -qwE 'vmx|svm' /proc/cpuinfo; then
	echo "demo: this machine's KVM can run guests: recording minivm here"
	out=$(mktemp -d)
	trap 'rm -rf "$out"' EXIT
	echo "# hypertrace-bpf record -i 0.5 -o demo.htr -- minivm ${MIX[*]}"
	"$HT" record -i 0.5 -o "$out/demo.htr" -- "$MINIVM" "${MIX[@]}"
	echo
	echo "# hypertrace-bpf report demo.htr"
	"$HT" report "$out/demo.htr"
	echo
	echo "# hypertrace-bpf report --dump demo.htr | sed -n 1,5p"
	"$HT" report --dump "$out/demo.htr" | sed -n 1,5p
else
	echo "demo: this machine's CPU has no VMX/SVM for KVM guests: recording inside a nested machine"
	tests/e2e/nested-demo.sh "${MIX[@]}"
fi
