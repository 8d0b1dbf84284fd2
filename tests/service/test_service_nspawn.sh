#!/usr/bin/env bash
# hypertrace-exporter.service under a real systemd: a Debian 13 root
# (systemd_root.sh: mmdebstrap, cached under .cache/service/) booted with
# systemd-nspawn, the static binary and the unit installed into it with
# `make install-service`, its settings file set to --exits and its socket
# unit to a port (a drop-in).
# Then, through systemctl inside the container:
# start, /metrics answers within 5 s and `promtool check metrics` finds
# nothing wrong in it; the recorder runs as a user of its own with
# no_new_privs, its main thread holds exactly CAP_BPF and its HTTP thread
# none; SIGSEGV and SIGKILL are each followed by a restart that serves
# again; `systemctl stop` ends it with status 0 and no failed state.
# The container gets what BPF needs (tests/service/systemd_root.sh).
# shellcheck source=../lib.sh
source "$(dirname "$0")/../lib.sh"
# shellcheck source=systemd_root.sh
source "$(dirname "$0")/systemd_root.sh"

SUITE_NAME=service_nspawn
STATIC=$OUTPUT/static/hypertrace-bpf
SUITE=trixie
CAP_BPF_MASK=0000008000000000

sdroot_preflight $SUITE_NAME "$STATIC" curl promtool

t_start=$(date +%s)
work=$(mktemp -d /tmp/ht-service.XXXXXX)
root=$work/root
cleanup() {
	sdroot_halt
	rm -rf "$work"
}
trap cleanup EXIT

t0=$(date +%s)
if ! sdroot_unpack $SUITE "$root"; then
	fail service_root "$SD_ERR"
	suite_exit
fi
echo "   root ready in $(( $(date +%s) - t0 )) s"

# The tracepoint ids come from the host's tracefs: mount it if nobody has.
mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
strip -o "$root/usr/bin/hypertrace-bpf" "$STATIC"
if ! make -s -C "$TOP" install-service DESTDIR="$root" PREFIX=/usr >"$work/install.log" 2>&1; then
	fail service_install "make install-service: $(cat "$work/install.log")"
	suite_exit
fi
# The settings file as an administrator would edit it, with every VM exit
# (--exits) too; the port in a drop-in for the socket unit.
sed -i "s|^#HYPERTRACE_OPTIONS=--exits\$|HYPERTRACE_OPTIONS=--exits|" "$root/etc/default/hypertrace-exporter"
mkdir -p "$root/etc/systemd/system/hypertrace-exporter.socket.d"
printf '[Socket]\nListenStream=\nListenStream=127.0.0.1:%s\nListenStream=[::1]:%s\n' "$port" "$port" \
	>"$root/etc/systemd/system/hypertrace-exporter.socket.d/listen.conf"

if ! sdroot_boot "$root" "$work/console.log"; then
	skip $SUITE_NAME "$SD_ERR; what is proven instead: tests/service/test_unit_security.sh (the unit as systemd-analyze reads it)"
	exit 0
fi
pass "service_container_boots_systemd_$(sd_in_ct systemctl --version | awk 'NR == 1 { print $2 }')"

# scrape FILE: /metrics into FILE; true if it answered with the build info.
scrape() { curl -sf --max-time 2 -o "$1" "http://127.0.0.1:$port/metrics" && grep -q '^hypertrace_build_info{' "$1"; }
# answers_within SECONDS: /metrics answers before SECONDS pass; sets waited_ms.
answers_within() {
	local from now
	from=$(date +%s%N)
	while :; do
		scrape "$work/metrics.txt" && break
		now=$(date +%s%N)
		[ $(( (now - from) / 1000000 )) -ge $(( $1 * 1000 )) ] && return 1
		sleep 0.1
	done
	waited_ms=$(( ($(date +%s%N) - from) / 1000000 ))
}
prop() { sd_in_ct systemctl show -P "$1" hypertrace-exporter; }

sd_in_ct systemctl start hypertrace-exporter
if answers_within 5; then
	pass "service_start_metrics_answer_in_${waited_ms}ms_within_5s"
else
	fail service_start_metrics_answer_within_5s "state $(prop ActiveState); $(sd_in_ct journalctl -u hypertrace-exporter --no-pager -n 5 -o cat | tr '\n' ' ')"
	suite_exit
fi
if promtool check metrics <"$work/metrics.txt" >"$work/promtool.log" 2>&1; then
	pass service_scrape_promtool_check_metrics_clean
else
	fail service_scrape_promtool_check_metrics_clean "$(head -n 5 "$work/promtool.log" | tr '\n' ' ')"
fi
if grep -q '^# TYPE hypertrace_exit_duration_seconds histogram$' "$work/metrics.txt" &&
	grep -q '^hypertrace_exits_lost_total 0$' "$work/metrics.txt"; then
	pass service_with_exits_serves_exit_metrics
else
	fail service_with_exits_serves_exit_metrics "$(grep -E '^(# TYPE )?hypertrace_exit' "$work/metrics.txt" | head -n 3 | tr '\n' ' ')"
fi

# Each task of the recorder: its name and effective capabilities, read inside the container.
# /metrics answers while the programs are still being loaded; the recorder
# drops CAP_PERFMON and CAP_DAC_READ_SEARCH once they are attached, so the
# capabilities (and the HTTP thread, named once it runs) are read until
# that has happened (10 s at most).
main=$(prop MainPID)
for _ in $(seq 20); do
	sd_in_ct sh -c "for t in /proc/$main/task/*; do echo \"\${t##*/} \$(cat \$t/comm) \$(awk '/^CapEff/ { print \$2 }' \$t/status)\"; done" >"$work/tasks"
	main_caps=$(awk -v p="$main" '$1 == p { print $NF }' "$work/tasks")
	http_caps=$(awk '$2 == "ht-metrics-http" { print $NF }' "$work/tasks")
	[ "$main_caps" = $CAP_BPF_MASK ] && [ -n "$http_caps" ] && break
	sleep 0.5
done
sd_in_ct cat "/proc/$main/status" >"$work/status"
if [ "$main_caps" = $CAP_BPF_MASK ] && [ "$http_caps" = 0000000000000000 ]; then
	pass service_main_thread_cap_bpf_only_http_thread_none
else
	fail service_main_thread_cap_bpf_only_http_thread_none "tasks (tid comm CapEff): $(tr '\n' ';' <"$work/tasks")"
fi
uid=$(awk '/^Uid:/ { print $3 }' "$work/status")
if [ "${uid:-0}" -ne 0 ] && grep -q '^NoNewPrivs:[[:space:]]*1' "$work/status" &&
	grep -q '^Seccomp:[[:space:]]*2' "$work/status"; then
	pass service_runs_as_own_user_no_new_privs_seccomp
else
	fail service_runs_as_own_user_no_new_privs_seccomp "$(grep -E '^(Uid|NoNewPrivs|Seccomp):' "$work/status" | tr '\n' ' ')"
fi

# A crash of each kind is followed by a restart that serves again.
restarts=0
for sig in SEGV KILL; do
	before=$(prop MainPID)
	sd_in_ct systemctl kill --kill-whom=main --signal=$sig hypertrace-exporter
	restarts=$((restarts + 1))
	for _ in $(seq 50); do
		[ "$(prop NRestarts)" = $restarts ] && [ "$(prop ActiveState)" = active ] && break
		sleep 0.2
	done
	after=$(prop MainPID)
	if [ "$(prop NRestarts)" = $restarts ] && [ "$after" != "$before" ] && [ "$after" != 0 ] && answers_within 5; then
		pass "service_restarted_after_sig$sig"
	else
		fail "service_restarted_after_sig$sig" "restarts $(prop NRestarts), main pid $before -> $after, state $(prop ActiveState)"
	fi
done

# Stopped while the restarted instance may still be loading its programs
# (/metrics answers from the start): either ending is a clean one.
sd_in_ct systemctl stop hypertrace-exporter
if [ "$(prop ActiveState)" = inactive ] && [ "$(prop Result)" = success ] && [ "$(prop ExecMainStatus)" = 0 ] &&
	! sd_in_ct systemctl -q is-failed hypertrace-exporter &&
	sd_in_ct journalctl -u hypertrace-exporter --no-pager -o cat |
	grep -Eq '^hypertrace-bpf: (0 hypercalls, 0 dropped|stopped before tracing began$)'; then
	pass service_stop_exits_0_not_failed
else
	fail service_stop_exits_0_not_failed "state $(prop ActiveState), result $(prop Result), status $(prop ExecMainStatus); $(sd_in_ct journalctl -u hypertrace-exporter --no-pager -n 3 -o cat | tr '\n' ' ')"
fi
sdroot_halt
echo "   suite time $(( $(date +%s) - t_start )) s"
suite_exit
