#!/usr/bin/env bash
# VMs that come and go, on the stack users run: inside the nested machine
# (tests/e2e/nested.sh), Debian's QEMU with KVM runs a VM named web1 that is
# stopped and started again 10 times (11 QEMU processes, one at a time),
# while three recordings run through all of it:
#   agg  record --no-file --exits --metrics --metrics-grace 20 --vm web1
#        (the service's mode, with --exits)
#   vm   record -o vm.htr --vm web1             (a file: its IDENTITY blocks)
#   all  record -o all.htr --metrics            (the whole host, the default)
# and a live view of it: top -b --vm web1.
# A process that is no VM but has "-name web1" in its arguments (and
# /dev/kvm open) runs all along; the first QEMU runs before the recordings
# start. The guest is tests/e2e/tick_firmware.S: QEMU starts it at once and
# it issues one hypercall per 5 ms timer tick, a0 counting from 0, so the
# whole-host file says when each process made its first hypercall exit and
# which a0 the others began with.
#
# Checks (tests/e2e/vm_lifecycle_verdict.py, on the host): every QEMU
# process is traced by all three; /metrics goes on in the same series, the
# exit metrics too; the file's IDENTITY blocks gain each new process; each
# is traced from within 1 s of its first hypercall exit to its end; the
# impostor is never traced; 20 s after the last QEMU, web1's series are
# gone from agg's /metrics; top shows a row of every QEMU process, and
# never one of the impostor. About 65 s of emulation: QEMU with this guest
# starts in under a second.
#
# Needs `make static` and apt access on the first run. HT_E2E=0 skips it.
set -euo pipefail
export NESTED_TIMEOUT=${NESTED_TIMEOUT:-300}
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/nested.sh"

HT_STATIC=${HT_STATIC:-$OUTPUT/static/hypertrace-bpf}
# One CPU: KVM guests under TCG with two froze (tests/e2e/test_nested_qemu.sh).
# 1 GiB: the initramfs carries qemu and its libraries (~60 MB).
export NESTED_SMP=1 NESTED_MEM=${NESTED_MEM:-1024}
export NESTED_APPEND=${NESTED_APPEND:-tsc=reliable} NESTED_KVM_AMD_PARAMS=${NESTED_KVM_AMD_PARAMS:-npt=0}
export NESTED_STAGE_HOOK=lifecycle_stage
RESTARTS=10

if [ "${HT_E2E:-1}" = 0 ]; then
	skip nested_lifecycle "disabled by HT_E2E=0"
	exit 0
fi
if [ ! -x "$HT_STATIC" ]; then
	fail nested_lifecycle "$HT_STATIC is missing: run 'make static' first"
	suite_exit
fi

work=$(mktemp -d)
trap '[ "${HT_E2E_KEEP:-0}" = 1 ] && echo "  info: kept $work" || rm -rf "$work"' EXIT

if ! { as --32 -o "$work/tick.o" "$TOP/tests/e2e/tick_firmware.S" &&
	ld -m elf_i386 -Ttext=0 --oformat=binary -o "$work/tick.bin" "$work/tick.o"; } 2>"$work/as.log"; then
	fail nested_lifecycle_firmware "cannot assemble tests/e2e/tick_firmware.S: $(tr '\n' ' ' <"$work/as.log")"
	suite_exit
fi

# The nested machine gets qemu with its libraries, the option ROM it loads
# with KVM, and the firmware.
lifecycle_stage() {
	local stage=$1
	nested_stage_program "$stage" usr/bin/qemu-system-x86_64 || return 1
	mkdir -p "$stage/usr/share/qemu" "$stage/fw" &&
		cp -L "$NESTED_ROOT/usr/share/qemu/kvmvapic.bin" "$stage/usr/share/qemu/" &&
		cp "$work/tick.bin" "$stage/fw/tick.bin"
}

cat >"$work/guest.sh" <<EOF
RESTARTS=$RESTARTS
EOF
cat >>"$work/guest.sh" <<'EOF'
say() { echo "L1: $*"; }
ip link set lo up 2>/dev/null
AGG_PORT=9472
ALL_PORT=9473
# agg's --metrics-grace: longer than a restart takes (a few seconds), short
# enough to see web1's series go at the end.
GRACE=20

# waitfor SECONDS CMD...: runs CMD every 0.2 s until it succeeds, for at
# most SECONDS of this machine's running time (a turn that took over 5 s was
# a pause of the emulator, not time the machine ran).
waitfor() {
	limit=$1
	shift
	waited=0
	prev=$(date +%s)
	until "$@"; do
		now=$(date +%s)
		[ $((now - prev)) -gt 5 ] || waited=$((waited + now - prev))
		prev=$now
		[ $waited -lt "$limit" ] || return 1
		sleep 0.2
	done
}
# gone PID: PID has ended (a zombie waiting for wait counts as ended).
gone() { [ ! -e /proc/$1/stat ] || [ "$(cut -d' ' -f3 /proc/$1/stat)" = Z ]; }
holds_kvm_vm() { ls -l /proc/$1/fd 2>/dev/null | grep 'anon_inode:kvm-vm' >/dev/null; }
started() { grep -q 'tracing; stop with Ctrl-C' /tmp/$1.err; }
# web1_count FILE: web1's hypercalls in a scrape.
web1_count() { sed -n 's/^hypertrace_hypercalls_total{vm="web1",.*} \([0-9]*\)$/\1/p' "$1" | awk '{ s += $1 } END { print s + 0 }'; }
# (busybox 1.35's wget -T segfaults: timeout instead.)
scrape() { timeout 10 wget -q -O "$2" "http://127.0.0.1:$1/metrics"; }
# top_shows PID: a frame of top has a row of process PID of web1.
top_shows() { grep -Eq "^ *$1 +web1 " /out/top.txt; }
# counted_at_least N: the agg recording counts N of web1's hypercalls or more.
counted_at_least() { scrape $AGG_PORT /tmp/now.prom && [ "$(web1_count /tmp/now.prom)" -ge "$1" ]; }

# vm_start I: QEMU number I of the VM web1.
vm_start() {
	qemu-system-x86_64 -name web1,debug-threads=on -enable-kvm -cpu host -smp 1 -m 16 \
		-bios /fw/tick.bin -L /usr/share/qemu -nodefaults -display none -no-reboot \
		</dev/null >/out/qemu$1.log 2>&1 &
	QPID=$!
	echo "$1 $QPID" >>/out/qemu.pids
}
vm_stop() {
	kill $QPID
	wait $QPID
}
# stop_rec NAME PID: stops a recording as Ctrl-C does; its status in NAME.rc.
stop_rec() {
	kill -INT $2
	if ! waitfor 60 gone $2; then
		echo "record $1 did not stop within 60 s of SIGINT" >>/out/problems
		kill -KILL $2
	fi
	wait $2
	echo $? >/out/$1.rc
}

# Not a VM: "-name web1" in its arguments and /dev/kvm open, but no KVM VM.
mkfifo /tmp/never
# Its output is not the script's: /init waits for every writer of that to end.
sh -c 'exec 3</dev/kvm; read x </tmp/never' impostor -name web1 </dev/null >/dev/null 2>&1 &
IMPOSTOR=$!
echo $IMPOSTOR >/out/impostor.pid

# setup_failed WHY: ends the script, leaving nothing running.
setup_failed() {
	echo "$*" >>/out/setup_failed
	kill $QPID $IMPOSTOR $AGG $VMREC $ALL $TOPV 2>/dev/null
	exit 1
}
started_or_gone() { started $1 || gone $2; }

vm_start 0
waitfor 60 holds_kvm_vm $QPID || setup_failed "QEMU 0 holds no KVM VM after 60 s: $(tail -n 3 /out/qemu0.log | tr '\n' '|')"
# -v: each says when it starts tracing a process.
hypertrace-bpf record -v -q --no-file --exits --metrics 127.0.0.1:$AGG_PORT --metrics-grace $GRACE --vm web1 \
	>/out/agg.out 2>/tmp/agg.err &
AGG=$!
hypertrace-bpf record -v -q -b 1M -o /tmp/vm.htr --vm web1 >/out/vm.out 2>/tmp/vm.err &
VMREC=$!
hypertrace-bpf record -v -q -b 1M -o /tmp/all.htr --metrics 127.0.0.1:$ALL_PORT >/out/all.out 2>/tmp/all.err &
ALL=$!
# Plain tables every 0.5 s; -v: it says when it takes a process on.
hypertrace-bpf top -v -b -d 0.5 --vm web1 >/out/top.txt 2>/tmp/top.err &
TOPV=$!
for r in agg:$AGG vm:$VMREC all:$ALL; do
	waitfor 120 started_or_gone ${r%:*} ${r#*:}
	started ${r%:*} ||
		setup_failed "record ${r%:*} did not start: $(grep -v '^libbpf: ' /tmp/${r%:*}.err | tail -n 2 | tr '\n' '|')"
done
say "recording; QEMU 0 is pid $QPID"

# Each QEMU runs until agg has counted 100 of its hypercalls (or 20 s) and
# top has shown it (or 20 s more: a loaded machine once ended a QEMU before
# top's next frame), then stops; 1.5 s later (the counts are published
# every 0.25 s) agg's /metrics is kept, and the next QEMU starts.
prev=0
i=0
while :; do
	if ! waitfor 20 counted_at_least $((prev + 100)); then
		echo "$i" >>/out/timeouts
		[ "$(wc -l </out/timeouts)" -lt 2 ] || { vm_stop; say "agg missed two VMs: giving up"; break; }
	fi
	waitfor 20 top_shows $QPID || say "top shows no row of QEMU $i (pid $QPID) after 20 s"
	vm_stop
	sleep 1.5
	scrape $AGG_PORT /out/agg$i.prom || echo "scrape $i failed" >>/out/timeouts
	prev=$(web1_count /out/agg$i.prom)
	say "QEMU $i stopped; agg has counted $prev"
	i=$((i + 1))
	[ $i -le $RESTARTS ] || break
	vm_start $i
done

stopped_at=$(cut -d. -f1 /proc/uptime)
scrape $ALL_PORT /out/all.prom || echo "the whole-host recording's scrape failed" >>/out/problems
for r in vm:$VMREC all:$ALL top:$TOPV; do
	say "stopping ${r%:*}"
	stop_rec ${r%:*} ${r#*:}
done
# web1 has not run for the grace period (and a check, 1 s, and a publish): its series are gone.
past_grace() { [ "$(cut -d. -f1 /proc/uptime)" -ge $((stopped_at + GRACE + 3)) ]; }
waitfor $((GRACE + 30)) past_grace
scrape $AGG_PORT /out/agg_end.prom || echo "the last scrape of agg failed" >>/out/problems
stop_rec agg $AGG
say "recordings stopped"
kill $IMPOSTOR
# What record said, without libbpf's debug output.
for r in agg vm all top; do grep -v '^libbpf: ' /tmp/$r.err >/out/$r.err; done
cp /tmp/vm.htr /tmp/all.htr /out/
EOF

start=$(date +%s)
if ! nested_fetch 2>"$work/fetch.log"; then
	fail nested_lifecycle_boot "cannot fetch qemu/kernel/busybox: $NESTED_ERR"
	suite_exit
fi
out=$work/out
if ! nested_run "$out" "$work/guest.sh" "$HT_STATIC" 2>"$work/run.log"; then
	fail nested_lifecycle_boot "$NESTED_ERR"
	suite_exit
fi
F=$out/files
if [ -s "$F/setup_failed" ]; then
	fail nested_lifecycle_boot "$(tr '\n' ' ' <"$F/setup_failed") (script status $(cat "$out/status"))"
	suite_exit
fi
pass nested_lifecycle_boot
echo "  info: qemu run $(cat "$out/qemu_seconds") s in all ($(($(date +%s) - start)) s with fetch/validate), script exit status $(cat "$out/status"), $NESTED_KICKS console kicks"
[ ! -s "$F/timeouts" ] || echo "  info: cycles that timed out: $(tr '\n' ' ' <"$F/timeouts")"

# The files' records, read on the host by the same reader users have.
for r in vm all; do
	if ! "$HT_STATIC" report --csv "$F/$r.htr" >"$work/$r.csv" 2>"$work/$r.csv.err"; then
		fail "nested_lifecycle_${r}_report" "report --csv $r.htr: $(tail -n 2 "$work/$r.csv.err" | tr '\n' ' ')"
	fi
done
# top --vm follows the VM as record does: a row of every QEMU process (from
# the frames of 0.5 s while it ran), none of the impostor, and a clean end.
missing=
while read -r n qpid; do
	grep -Eq "^ *$qpid +web1 " "$F/top.txt" ||
		missing="$missing QEMU $n (pid $qpid, $(grep -c "tracing process $qpid " "$F/top.err") times taken on)"
done <"$F/qemu.pids"
impostor=$(cat "$F/impostor.pid")
if [ -z "$missing" ] && ! grep -Eq "^ *$impostor " "$F/top.txt" && [ "$(cat "$F/top.rc")" = 0 ]; then
	pass nested_lifecycle_top_follows_every_qemu_process
else
	fail nested_lifecycle_top_follows_every_qemu_process \
		"no row of:${missing:- (none missing)}; status $(cat "$F/top.rc"); $(grep -c '^ *PID' "$F/top.txt") frames; $(tail -n 3 "$F/top.err" | tr '\n' ' ')"
fi
# It prints the PASS:/FAIL: lines itself.
vrc=0
python3 "$TOP/tests/e2e/vm_lifecycle_verdict.py" "$F" "$work/vm.csv" "$work/all.csv" "$RESTARTS" >"$work/verdict" 2>&1 || vrc=$?
cat "$work/verdict"
if grep -q '^FAIL: ' "$work/verdict"; then
	SUITE_FAILED=1
elif [ "$vrc" != 0 ] || ! grep -q '^PASS: ' "$work/verdict"; then
	fail nested_lifecycle_verdict "the verdict script ended with status $vrc: $(tail -n 3 "$work/verdict" | tr '\n' ' ')"
fi
suite_exit
