# A Debian root with systemd in it, for booting under systemd-nspawn: made
# once with mmdebstrap (minbase plus systemd, systemd-sysv and dbus) and
# kept as a tar under .cache/service/ (ignored by git); each boot unpacks a
# fresh copy, since a boot writes into its root.
#   sdroot_tar SUITE          makes the tar if missing; sets SD_TAR
#   sdroot_unpack SUITE DIR   a fresh root in DIR
#   sdroot_boot DIR LOG       boots DIR with systemd-nspawn in the background
#                             (its console in LOG) and waits until systemd is
#                             up; sets SD_NSPAWN_PID and SD_CT_PID
#   sd_in_ct CMD...           runs CMD in the booted container
#   sdroot_halt               powers the container off (killed if it does not
#                             stop); nothing if none runs
#   sdroot_preflight NAME STATIC TOOL...  a suite's start: skips it (exit 0)
#                             without root, fails it (suite_exit) when a TOOL
#                             or the static binary STATIC is missing
# On failure: non-zero, the reason in SD_ERR. SERVICE_CACHE overrides the
# cache directory.
#
# What the container needs for BPF to load in it (each an nspawn option):
#   --capability=CAP_BPF,CAP_PERFMON   nspawn's default bounding set lacks
#       both; without them a unit's AmbientCapabilities cannot be granted
#       (CAP_DAC_READ_SEARCH is in the default set);
#   --system-call-filter='bpf perf_event_open'   nspawn's own seccomp
#       filter refuses both system calls otherwise (record then says
#       "bpf() system call is not permitted");
#   --bind-ro=/sys/kernel/tracing   nspawn mounts a fresh /sys without
#       tracefs, and systemd's sys-kernel-tracing.mount skips itself in a
#       container (ConditionCapability=CAP_SYS_RAWIO): the host's tracefs,
#       read-only, plays its part (the caller mounts it on the host);
#   no --private-users (nspawn's default): capabilities in a user namespace
#       do not count for bpf() and perf_event_open().
# /sys/kernel/btf needs nothing: nspawn's /sys is the host's sysfs, read-only.
# No --private-network either: the container shares the host's network, so
# the host's tools reach its services on 127.0.0.1.
# shellcheck shell=bash

SD_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SERVICE_CACHE=${SERVICE_CACHE:-$SD_TOP/.cache/service}
SD_ERR=
SD_NSPAWN_PID=
SD_CT_PID=

sdroot_preflight() {
	local name=$1 static=$2 tool
	shift 2
	if [ "$(id -u)" -ne 0 ]; then
		skip "$name" "booting a container and loading BPF need root"
		exit 0
	fi
	for tool in systemd-nspawn nsenter "$@"; do
		command -v "$tool" >/dev/null && continue
		fail "$name" "$tool is missing: run tests/install-deps.sh (make deps)"
		suite_exit
	done
	if [ ! -x "$static" ]; then
		fail "$name" "$static is missing: run make static"
		suite_exit
	fi
}

sdroot_tar() {
	local suite=$1 log lock rc=0
	SD_TAR=$SERVICE_CACHE/$suite-systemd.tar
	[ -f "$SD_TAR" ] && return 0
	command -v mmdebstrap >/dev/null || { SD_ERR="mmdebstrap is missing: run tests/install-deps.sh (make deps)"; return 1; }
	mkdir -p "$SERVICE_CACHE" || { SD_ERR="cannot create $SERVICE_CACHE"; return 1; }
	# One mmdebstrap at a time (a suite's and one made ahead by tests/run):
	# the second waits and finds the tar.
	exec {lock}>"$SERVICE_CACHE/$suite-systemd.lock" && flock "$lock" || { SD_ERR="cannot lock $SERVICE_CACHE/$suite-systemd.lock"; return 1; }
	if [ ! -f "$SD_TAR" ]; then
		log=$SERVICE_CACHE/$suite-systemd.log
		# A root tar straight from mmdebstrap: no unpacked tree to clean up on failure.
		if mmdebstrap --variant=minbase --include=systemd,systemd-sysv,dbus --format=tar \
			"$suite" "$SD_TAR.tmp" >"$log" 2>&1; then
			mv "$SD_TAR.tmp" "$SD_TAR" || { SD_ERR="cannot write $SD_TAR"; rc=1; }
		else
			rm -f "$SD_TAR.tmp"
			SD_ERR="mmdebstrap $suite failed: $(tail -n 2 "$log" | tr '\n' ' ')"
			rc=1
		fi
	fi
	exec {lock}>&-
	return $rc
}

sdroot_unpack() {
	local suite=$1 dir=$2
	sdroot_tar "$suite" || return 1
	mkdir -p "$dir" && tar -C "$dir" -xf "$SD_TAR" || { SD_ERR="cannot unpack $SD_TAR into $dir"; return 1; }
}

sdroot_boot() {
	local root=$1 log=$2 state=
	SD_CT_PID=
	systemd-nspawn --register=no --keep-unit --quiet -b -D "$root" \
		--capability=CAP_BPF,CAP_PERFMON --system-call-filter='bpf perf_event_open' \
		--bind-ro=/sys/kernel/tracing >"$log" 2>&1 </dev/null &
	SD_NSPAWN_PID=$!
	for _ in $(seq 100); do
		SD_CT_PID=$(pgrep -P "$SD_NSPAWN_PID" -x systemd) && break
		sleep 0.2
	done
	# systemctl fails until systemd listens; then --wait waits for the boot's end.
	for _ in $(seq 100); do
		[ -n "$SD_CT_PID" ] || break
		state=$(sd_in_ct timeout 60 systemctl is-system-running --wait 2>/dev/null)
		[ -z "$state" ] || break
		sleep 0.2
	done
	if [ "$state" != running ] && [ "$state" != degraded ]; then
		SD_ERR="systemd did not boot in systemd-nspawn here (state '${state:-none}': $(tail -n 3 "$log" | tr '\n' ' '))"
		return 1
	fi
}

sd_in_ct() { nsenter -t "$SD_CT_PID" -m -u -i -p -n -- "$@"; }

# A poweroff first; nspawn's own shutdown on SIGTERM if that did not end it
# in 30 s, SIGKILL 20 s later.
sdroot_halt() {
	local sig
	[ -n "$SD_NSPAWN_PID" ] && kill -0 "$SD_NSPAWN_PID" 2>/dev/null || return 0
	[ -n "$SD_CT_PID" ] && sd_in_ct systemctl poweroff 2>/dev/null
	for sig in TERM KILL; do
		for _ in $(seq 60); do kill -0 "$SD_NSPAWN_PID" 2>/dev/null || break; sleep 0.5; done
		kill -0 "$SD_NSPAWN_PID" 2>/dev/null || break
		kill -$sig "$SD_NSPAWN_PID" 2>/dev/null
	done
	wait "$SD_NSPAWN_PID" 2>/dev/null
	SD_NSPAWN_PID=
}
