#!/usr/bin/env bash
# Nobody takes the exporter's port while the service restarts: the unit as
# `make install-service` installs it (hypertrace-exporter.socket owns the
# listening socket, the service gets it by socket activation), its port set
# by a drop-in as README tells an administrator, booted under a real
# systemd (systemd_root.sh: a Debian 13 root under systemd-nspawn, which
# shares the host's network). An unprivileged process (uid nobody, on the
# same network) tries to bind the port every millisecond on every address of
# either family (127.0.0.1, 0.0.0.0, [::1], [::]), with SO_REUSEADDR and
# with SO_REUSEPORT, and would serve forged metrics once it got one.
# Meanwhile the service is restarted with `systemctl restart` three times
# and crashes twice (SIGSEGV to its main process, restarted by
# Restart=on-failure); then, restarted every 100 ms (a drop-in, so that
# systemd's default start limit of 5 starts in 10 s would be hit), it
# crashes 6 times in a row, and fails to start (a bad HYPERTRACE_OPTIONS)
# over and over for 3 s while scrapes keep coming. Then:
#   - the squatter never binds the port;
#   - after each restart a new main process serves, and each of 5 scrapes
#     is answered by it (its version in hypertrace_build_info and a later
#     process_start_time_seconds than the one before);
#   - after the crashes and the failed starts the socket is still active
#     and the service serves again (no start-limit-hit);
#   - a scraper that runs all along, of 127.0.0.1 and [::1] in turn, is
#     never refused and never forged (a scrape in flight when the old
#     process stops may be cut, and one during failed starts waits:
#     Prometheus tries again at its next interval).
# With a unit that binds the port itself the squatter gets it at the first
# restart, and the service then fails "Address already in use"; with one
# that listens on 127.0.0.1 alone it gets [::1] at once; with the default
# start limit it gets the port at the 6th crash.
# shellcheck source=../lib.sh
source "$(dirname "$0")/../lib.sh"
# shellcheck source=systemd_root.sh
source "$(dirname "$0")/systemd_root.sh"

SUITE_NAME=service_port_squat
STATIC=$OUTPUT/static/hypertrace-bpf
SUITE=trixie
UNIT=hypertrace-exporter

# The squatter runs as nobody: the system's python3, not one under root's home.
SQUAT_PY=/usr/bin/python3
sdroot_preflight $SUITE_NAME "$STATIC" curl python3 setpriv $SQUAT_PY

t_start=$(date +%s)
work=$(mktemp -d /tmp/ht-squat.XXXXXX)
chmod 0755 "$work"
root=$work/root
squatter=
scraper=
cleanup() {
	[ -n "$scraper" ] && kill "$scraper" 2>/dev/null && wait "$scraper" 2>/dev/null
	[ -n "$squatter" ] && kill "$squatter" 2>/dev/null && wait "$squatter" 2>/dev/null
	sdroot_halt
	rm -rf "$work"
}
trap cleanup EXIT

if ! sdroot_unpack $SUITE "$root"; then
	fail service_port_squat_root "$SD_ERR"
	suite_exit
fi
mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
strip -o "$root/usr/bin/hypertrace-bpf" "$STATIC"
if ! make -s -C "$TOP" install-service DESTDIR="$root" PREFIX=/usr >"$work/install.log" 2>&1; then
	fail service_port_squat_install "make install-service: $(cat "$work/install.log")"
	suite_exit
fi
# The port as an administrator changes it: a drop-in for the socket unit.
mkdir -p "$root/etc/systemd/system/$UNIT.socket.d"
printf '[Socket]\nListenStream=\nListenStream=127.0.0.1:%s\nListenStream=[::1]:%s\n' "$port" "$port" \
	>"$root/etc/systemd/system/$UNIT.socket.d/listen.conf"
version=$("$STATIC" -V | awk '{ print $NF; exit }')

if ! sdroot_boot "$root" "$work/console.log"; then
	skip $SUITE_NAME "$SD_ERR; what is proven instead: tests/service/test_unit_security.sh (the units as systemd-analyze reads them)"
	exit 0
fi
prop() { sd_in_ct systemctl show -P "$1" $UNIT.service; }

# scrape FILE [HOST]: /metrics into FILE, answered by the real exporter.
scrape() {
	curl -sf --max-time 5 -g -o "$1" "http://${2:-127.0.0.1}:$port/metrics" &&
		grep -q "^hypertrace_build_info{version=\"$version\"} 1\$" "$1" && ! grep -q forged "$1"
}
start_time() { awk '$1 == "process_start_time_seconds" { print $2 }' "$1"; }
# answered_within SECONDS: the real exporter answers before SECONDS pass.
answered_within() {
	local end=$(( $(date +%s) + $1 ))
	until scrape "$work/metrics.txt"; do
		[ "$(date +%s)" -lt "$end" ] || return 1
		sleep 0.1
	done
}

sd_in_ct systemctl enable --now $UNIT.service >"$work/enable.log" 2>&1
if answered_within 10 && [ "$(sd_in_ct systemctl is-active $UNIT.socket)" = active ] &&
	[ "$(sd_in_ct systemctl is-enabled $UNIT.socket)" = enabled ]; then
	pass service_socket_enabled_with_service_and_serves
else
	fail service_socket_enabled_with_service_and_serves "socket $(sd_in_ct systemctl is-active $UNIT.socket)/$(sd_in_ct systemctl is-enabled $UNIT.socket), service $(prop ActiveState): $(tr '\n' ' ' <"$work/enable.log") $(sd_in_ct journalctl -u $UNIT --no-pager -n 5 -o cat | tr '\n' ' ')"
	suite_exit
fi
last_start=$(start_time "$work/metrics.txt")

if scrape "$work/metrics6.txt" '[::1]'; then
	pass service_port_served_on_both_loopbacks
else
	fail service_port_served_on_both_loopbacks "no answer on [::1]:$port"
fi

# The squatter: uid nobody, binds the moment it can, then serves forged metrics.
setpriv --reuid=65534 --regid=65534 --clear-groups --no-new-privs $SQUAT_PY -u - "$port" >"$work/squatter.log" 2>&1 <<'PY' &
import os, socket, sys, time
port = int(sys.argv[1])
print("uid", os.getuid(), flush=True)
tries = 0
addrs = ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET, "0.0.0.0"),
         (socket.AF_INET6, "::1"), (socket.AF_INET6, "::"))
while True:
    for (fam, addr) in addrs:
      for opt in (socket.SO_REUSEADDR, socket.SO_REUSEPORT):
        s = socket.socket(fam)
        if fam == socket.AF_INET6:
            s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        s.setsockopt(socket.SOL_SOCKET, opt, 1)
        try:
            s.bind((addr, port))
            s.listen(64)
        except OSError:
            s.close()
            continue
        print("bound", addr, "after", tries, "tries", flush=True)
        while True:
            c, _ = s.accept()
            c.sendall(b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\n"
                      b"hypertrace_build_info{version=\"forged\"} 1\n")
            c.close()
    tries += 1
    if tries % 1000 == 0:
        print("tries", tries, flush=True)
    time.sleep(0.001)
PY
squatter=$!
# The scraper that runs all along: one line per scrape, its curl status and whether it was forged.
(
	while :; do
		for host in 127.0.0.1 '[::1]'; do
		curl -s --max-time 10 -g -o "$work/bg.txt" "http://$host:$port/metrics"
		st=$?
		grep -q forged "$work/bg.txt" 2>/dev/null && st=forged
		echo "$st"
		rm -f "$work/bg.txt"
		sleep 0.05
		done
	done
) >"$work/scraper.log" 2>&1 &
scraper=$!
for _ in $(seq 50); do
	grep -q '^tries' "$work/squatter.log" && break
	sleep 0.1
done
if grep -q '^uid 65534$' "$work/squatter.log" && grep -q '^tries' "$work/squatter.log"; then
	pass service_port_squatter_unprivileged_polls_bind
else
	fail service_port_squatter_unprivileged_polls_bind "$(tr '\n' ' ' <"$work/squatter.log")"
fi

n=0
for how in restart SEGV restart SEGV restart; do
	n=$((n + 1))
	before=$(prop MainPID)
	if [ $how = restart ]; then
		sd_in_ct systemctl restart $UNIT.service
	elif [ "$before" -gt 0 ]; then
		sd_in_ct sh -c "kill -SEGV $before"
	fi
	after=
	for _ in $(seq 100); do
		after=$(prop MainPID)
		[ "$after" != 0 ] && [ "$after" != "$before" ] && [ "$(prop ActiveState)" = active ] && break
		sleep 0.1
	done
	served=0
	for _ in $(seq 5); do
		answered_within 10 || break
		start=$(start_time "$work/metrics.txt")
		awk -v a="$start" -v b="$last_start" 'BEGIN { exit !(a > b) }' || break
		served=$((served + 1))
	done
	if [ $served = 5 ] && [ "$after" != "$before" ] && ! grep -q '^bound' "$work/squatter.log"; then
		pass "service_port_kept_after_${n}_${how}"
		last_start=$start
	else
		fail "service_port_kept_after_${n}_${how}" "$served/5 scrapes by a new exporter; main pid $before -> $after, state $(prop ActiveState); squatter: $(grep '^bound' "$work/squatter.log"); $(sd_in_ct journalctl -u $UNIT --no-pager -n 3 -o cat | tr '\n' ' ')"
	fi
	# A new process has attached its programs before the next restart, as between real ones.
	sleep 1.5
done

# Failures in a row: restarted every 100 ms, so that systemd's default
# start limit (5 starts in 10 s) would be hit at once. 6 crashes, each as
# soon as the new process runs.
mkdir -p "$root/etc/systemd/system/$UNIT.service.d"
printf '[Service]\nRestartSec=100ms\n' >"$root/etc/systemd/system/$UNIT.service.d/fast-restart.conf"
sd_in_ct systemctl daemon-reload
restarts=$(prop NRestarts)
t_burst=$(date +%s%N)
for _ in $(seq 6); do
	before=$(prop MainPID)
	# No main process (the service failed): nothing to crash ("kill 0" would signal this test).
	[ "$before" -gt 0 ] || break
	sd_in_ct sh -c "kill -SEGV $before"
	for _ in $(seq 100); do
		after=$(prop MainPID)
		[ "$after" != 0 ] && [ "$after" != "$before" ] && break
		sleep 0.02
	done
done
echo "   6 crashes in $(( ($(date +%s%N) - t_burst) / 1000000 )) ms"
crashed=$(( $(prop NRestarts) - restarts ))
if [ "$crashed" -ge 6 ] && [ "$(sd_in_ct systemctl is-active $UNIT.socket)" = active ] && answered_within 10 &&
	! grep -q '^bound' "$work/squatter.log"; then
	pass "service_port_kept_through_${crashed}_crashes_in_a_row"
else
	fail service_port_kept_through_6_crashes_in_a_row "$crashed restarts; socket $(sd_in_ct systemctl is-active $UNIT.socket), service $(prop ActiveState)/$(prop Result); squatter: $(grep '^bound' "$work/squatter.log"); $(sd_in_ct journalctl -u $UNIT.socket -u $UNIT --no-pager -n 3 -o cat | tr '\n' ' ')"
fi
# Starts that fail (options refused: exit 2) over and over for 3 s, scrapes
# arriving meanwhile; then the options are mended and it serves again.
echo 'HYPERTRACE_OPTIONS=--metrics 9' >>"$root/etc/default/hypertrace-exporter"
sd_in_ct systemctl restart $UNIT.service
sleep 3
failed=$(prop NRestarts) # counted from the manual restart on
socket_state=$(sd_in_ct systemctl is-active $UNIT.socket)
sed -i '$d' "$root/etc/default/hypertrace-exporter"
if [ "$failed" -ge 6 ] && [ "$socket_state" = active ] && answered_within 10 &&
	! grep -q '^bound' "$work/squatter.log"; then
	pass "service_port_kept_through_${failed}_failed_starts"
else
	fail service_port_kept_through_failed_starts "$failed restarts; socket $socket_state, service $(prop ActiveState)/$(prop Result); squatter: $(grep '^bound' "$work/squatter.log"); $(sd_in_ct journalctl -u $UNIT.socket -u $UNIT --no-pager -n 3 -o cat | tr '\n' ' ')"
fi
kill "$scraper" && wait "$scraper" 2>/dev/null
scraper=
tries=$(awk '$1 == "tries" { t = $2 } END { print t + 0 }' "$work/squatter.log")
if ! grep -q '^bound' "$work/squatter.log" && [ "$tries" -ge 1000 ]; then
	pass "service_port_never_squatted_in_${tries}_binds"
else
	fail service_port_never_squatted "$(grep -v '^tries' "$work/squatter.log" | tr '\n' ' ') ($tries tries)"
fi
total=$(wc -l <"$work/scraper.log")
refused=$(grep -c '^7$' "$work/scraper.log")
forged=$(grep -c '^forged$' "$work/scraper.log")
answered=$(grep -c '^0$' "$work/scraper.log")
if [ "$refused" = 0 ] && [ "$forged" = 0 ] && [ "$answered" -gt 0 ]; then
	pass "service_port_scrapes_never_refused_or_forged_${answered}_of_${total}_answered"
else
	fail service_port_scrapes_never_refused_or_forged "$total scrapes: $answered answered, $refused refused, $forged forged; others: $(grep -Ev '^(0|7|forged)$' "$work/scraper.log" | sort | uniq -c | tr '\n' ' ')"
fi
sdroot_halt
echo "   suite time $(( $(date +%s) - t_start )) s"
suite_exit
