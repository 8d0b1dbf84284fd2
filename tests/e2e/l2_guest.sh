# A Linux KVM guest (L2) inside the nested machine, for hypertracing runs:
# Debian's qemu with KVM boots the nested machine's own kernel with a busybox
# initramfs, driven through its serial console. Source after nested.sh.
#
#   L2_FILES=(SRC:DEST ...)  files for the guest's initramfs (DEST relative to /)
#   L2_L1_PROGRAMS=(PATH ...) more programs of the fetched tree for the nested
#                            machine, with their libraries (e.g. usr/bin/perf)
#   L2_MODULES=(NAME ...)    kernel modules of NESTED_EXTRA_MODULES (nested.sh)
#                            that the guest loads at boot (e.g. msr)
#   l2_stage STAGE           NESTED_STAGE_HOOK: stages qemu, its firmware, the
#                            kernel and the guest initramfs into the nested
#                            machine's initramfs (needs $L2_WORK, a scratch dir);
#                            qemu and its firmware are the tree's vmm/ (with
#                            their own libraries) when NESTED_VMM_DIST is set
#   l2_l1_files              prints the files to pass to nested_run for the
#                            nested machine: /bin/l2lib.sh and /bin/l2cmd
#
# In the nested machine's script, `. /bin/l2lib.sh` gives
#   l2_start NAME SMP   boot the guest; sets QPID (its qemu) and CON (console
#                       log, /out/NAME.console); writes /out/NAME.qpid and
#                       /out/NAME.threads (tid, thread name). If the guest does
#                       not come up, appends why to /out/stalls (nested_run
#                       then runs the whole nested machine again: see
#                       nested.sh) and returns 1
#   l2_stop             power it off
#   l2_wait_file FILE SECONDS  wait until FILE exists (a tool has started and
#                       named it), SECONDS at most; status 0 if it does
#   l2_stop_process PID SECONDS  SIGINT to PID (a tool that then finishes its
#                       file), SIGKILL if it has not ended in SECONDS; reaped
#   l2cmd ID COMMAND... run COMMAND in the guest (sh -c), wait for it, exit with
#                       its status; its output is in $CON between
#                       "L2-BEGIN ID" and "L2-END ID STATUS"
# The guest's kernel log goes to a serial port of its own (/out/NAME.kmsg),
# never to the console that carries the commands and their markers: a kernel
# message (a lockup report after a pause of the emulator, say) cannot split a
# marker line and lose a command's end or status.
# shellcheck shell=bash

l2_init() {
	cat <<'EOF'
#!/bin/busybox sh
/bin/busybox mount -t devtmpfs dev /dev
exec </dev/ttyS0 >/dev/ttyS0 2>&1
/bin/busybox --install -s
mount -t proc proc /proc
mount -t sysfs sys /sys
for m in /lib/modules/*.ko; do
	[ -e "$m" ] && insmod "$m"
done
stty -echo
echo "L2-READY cpus=$(nproc)"
while read -r id cmd; do
	echo "L2-BEGIN $id"
	sh -c "$cmd"
	echo "L2-END $id $?"
done
poweroff -f
EOF
}

l2_stage() {
	local stage=$1 l2=$L2_WORK/l2 f src dest vmm=$NESTED_ROOT
	if [ -n "${NESTED_VMM_DIST:-}" ]; then
		# Another release's QEMU (nested.sh): its libraries go in last.
		vmm=$NESTED_ROOT/vmm
		nested_stage_program "$stage" ${L2_L1_PROGRAMS[@]+"${L2_L1_PROGRAMS[@]}"} && nested_stage_vmm "$stage" || return 1
	else
		nested_stage_program "$stage" usr/bin/qemu-system-x86_64 ${L2_L1_PROGRAMS[@]+"${L2_L1_PROGRAMS[@]}"} || return 1
	fi
	mkdir -p "$stage/usr/share/qemu" "$stage/l2" || return 1
	for f in usr/share/seabios/bios-256k.bin usr/share/qemu/kvmvapic.bin usr/share/qemu/linuxboot_dma.bin; do
		cp -L "$vmm/$f" "$stage/usr/share/qemu/" || { NESTED_ERR="no $f in the fetched tree"; return 1; }
	done
	cp "$NESTED_ROOT/kernel/vmlinuz" "$stage/l2/vmlinuz" || return 1
	# busybox --install -s links applets into all four bin directories: each
	# one missing costs an error line per applet on the console at every boot.
	rm -rf "$l2" && mkdir -p "$l2"/{bin,sbin,usr/bin,usr/sbin,dev,proc,sys} || return 1
	cp "$NESTED_ROOT/busybox" "$l2/bin/" || return 1
	for f in "${L2_FILES[@]}"; do
		src=${f%%:*}
		dest=${f#*:}
		mkdir -p "$l2/$(dirname "$dest")" && cp "$src" "$l2/$dest" || { NESTED_ERR="cannot stage $src"; return 1; }
	done
	for f in ${L2_MODULES[@]+"${L2_MODULES[@]}"}; do
		nested_extra_module "$f" && mkdir -p "$l2/lib/modules" && cp "$NESTED_MODULE_FILE" "$l2/lib/modules/" || return 1
	done
	l2_init >"$l2/init"
	chmod 755 "$l2/init"
	(cd "$l2" && find . | "$NESTED_ROOT/busybox" cpio -o -H newc >"$stage/l2/initrd.cpio" 2>/dev/null) ||
		{ NESTED_ERR="cannot pack the guest's initramfs"; return 1; }
}

l2_l1_files() {
	cat >"$L2_WORK/l2cmd" <<'EOF'
#!/bin/sh
# l2cmd ID COMMAND...: runs COMMAND in the KVM guest whose console is $CON and
# waits for its end, 1500 turns of 0.2 s at most (about 300 s of this
# machine's running time: a pause of the emulator stops the count too);
# exits with COMMAND's status.
id=$1
shift
echo "$id $*" >/tmp/l2.in
i=0
while ! grep -q "L2-END $id " "$CON"; do
	i=$((i + 1))
	[ $i -le 1500 ] || { echo "l2cmd: no end of '$id' from the guest" >&2; exit 124; }
	# Progress on the nested machine's console, whatever our stdout is.
	[ $((i % 50)) = 0 ] && echo "L1: guest command $id running ($((i / 5)) s)" >/dev/console 2>/dev/null
	sleep 0.2
done
exit "$(tr -d '\r' <"$CON" | sed -n "s/^L2-END $id \([0-9]*\)$/\1/p")"
EOF
	{
		# The lockup detectors of the nested machine's kernel, in the guest's
		# too: it runs under the same emulation (see nested.sh).
		echo "L2_DETECTORS='$NESTED_DETECTORS'"
		# A guest boot's cost under this emulation is its exits: pci=noearly
		# skips the early PCI scans (two AGP aperture searches, 2 port
		# accesses per device slot: 9.5 s), noreplace-smp keeps the lock
		# prefixes a 1-vCPU guest would patch out one text_poke at a time
		# (the core kernel's and each module's: 17 s). A 1-vCPU guest came up
		# in 33 s instead of 60; the exits suite took 331 s instead of 442.
		echo "L2_FAST_BOOT='pci=noearly noreplace-smp'"
		cat <<'EOF'
say() { echo "L1: $*"; }
# l2_boot NAME SMP: starts qemu with a KVM guest and waits for its /init, for
# (L2_APPEND: more of the guest kernel's command line; L2_POLL: seconds
# between two looks for L2-READY, 0.5 unless a benchmark times the boot)
# (SMP is -smp's value, and may go on with options that complete the
# topology, e.g. "-device host-x86_64-cpu,socket-id=1,...")
# 120 s of this machine's own running time; sets QPID (the qemu process) and
# CON (its console log). While waiting it says so every 20 s.
l2_boot() {
	CON=/out/$1.console
	export CON
	rm -f /tmp/l2.in
	mkfifo /tmp/l2.in
	: >"$CON"
	# shellcheck disable=SC2086 # SMP's words are options
	qemu-system-x86_64 -name "$1,debug-threads=on" -enable-kvm -cpu host -smp $2 -m 256 \
		-kernel /l2/vmlinuz -initrd /l2/initrd.cpio -L /usr/share/qemu \
		-append "console=ttyS1 rdinit=/init panic=-1 mitigations=off quiet $L2_FAST_BOOT $L2_DETECTORS ${L2_APPEND:-}" \
		-nodefaults -display none -serial stdio -serial "file:/out/$1.kmsg" -no-reboot \
		</tmp/l2.in >"$CON" 2>&1 &
	QPID=$!
	# Holding the FIFO open keeps qemu's stdin from reaching end of file
	# (read-write: an open that cannot block, even if qemu died at once).
	exec 3<>/tmp/l2.in
	# The deadline counts only the time this machine ran: a turn of this loop
	# (0.5 s) that took over 5 s was a pause of the emulator, in which the
	# guest did not boot either. A guest that does not boot still fails after
	# 120 s of running time.
	waited=0
	prev=$(date +%s)
	last=0
	while ! grep -q L2-READY "$CON"; do
		now=$(date +%s)
		[ $((now - prev)) -gt 5 ] || waited=$((waited + now - prev))
		prev=$now
		if [ $waited -ge 120 ] || ! kill -0 $QPID 2>/dev/null; then
			why="the KVM guest $1 (L2) did not boot"
			if kill -0 $QPID 2>/dev/null; then why="$why in $waited s"; else why="$why: its qemu exited"; fi
			why="$why; console: $(tail -n 2 "$CON" | tr -d '\r' | tr '\n' '|') kernel: $(tail -n 2 "/out/$1.kmsg" 2>/dev/null | tr -d '\r' | tr '\n' '|')"
			say "$why"
			echo "$why" >>/out/stalls
			return 1
		fi
		if [ $((waited - last)) -ge 20 ]; then
			last=$waited
			say "waiting for guest $1 ($waited s): $(tail -n 1 "$CON" | tr -d '\r')"
		fi
		sleep "${L2_POLL:-0.5}"
	done
}
# l2_start NAME SMP: l2_boot, then writes NAME.qpid and NAME.threads (tid,
# thread name). A guest that did not come up is not booted again here: the
# line in /out/stalls makes nested_run run the whole nested machine again.
l2_start() {
	if ! l2_boot "$1" "$2"; then
		l2_stop
		return 1
	fi
	echo $QPID >/out/$1.qpid
	for t in /proc/$QPID/task/*; do echo "${t##*/} $(cat $t/comm)"; done >/out/$1.threads
	say "guest $1 ready: qemu pid $QPID"
}
l2_stop() {
	kill $QPID 2>/dev/null
	wait $QPID
	exec 3>&-
}
l2_wait_file() {
	i=0
	while [ ! -e "$1" ] && [ $i -lt $(($2 * 10)) ]; do sleep 0.1; i=$((i + 1)); done
	[ -e "$1" ]
}
l2_stop_process() {
	kill -INT $1 2>/dev/null
	i=0
	while kill -0 $1 2>/dev/null && [ $i -lt $(($2 * 10)) ]; do sleep 0.1; i=$((i + 1)); done
	kill -KILL $1 2>/dev/null
	wait $1
}
EOF
	} >"$L2_WORK/l2lib.sh"
	chmod 755 "$L2_WORK/l2cmd"
	echo "$L2_WORK/l2cmd" "$L2_WORK/l2lib.sh"
}

# l2_output CONSOLE ID: what the guest printed for command ID.
l2_output() {
	# awk reads to the end: a reader that stops early would fail the pipe (pipefail).
	tr -d '\r' <"$1" 2>/dev/null | awk -v id="$2" '$0 == "L2-BEGIN " id { on = 1; next }
		on && $0 ~ "^L2-END " id " " { on = 0; done = 1 } on && !done { print }'
}

# l2_status CONSOLE ID: the exit status of command ID in the guest.
l2_status() { tr -d '\r' <"$1" 2>/dev/null | sed -n "s/^L2-END $2 \([0-9]*\)$/\1/p"; }
