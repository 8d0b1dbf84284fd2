#!/usr/bin/env bash
# record --metrics on the command line: a malformed [ADDR:]PORT is a usage
# error (exit 2), a port already taken or an address not of this host a
# runtime error (exit 1) that leaves no trace file; each says what to do in
# one line. `--metrics systemd` without a socket passed (or one for another
# process, or not listening) is a runtime error too; with one, it serves on
# it, and CMD inherits neither the socket nor the variables. Loopback only.
source "$(dirname "$0")/../lib.sh"

work=$(mktemp -d)
holder=
cleanup() {
	[ -n "$holder" ] && kill "$holder" 2>/dev/null && wait "$holder" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
cd "$work" || exit 1

for bad in 0 65536 abc 127.0.0.1: ::1:9470 localhost:9470 '[::1]' 1.2.3:80; do
	expect_run "record_metrics_bad_spec_${bad//[^a-z0-9]/_}" 2 \
		"^hypertrace-bpf record: invalid --metrics '[^']+': expected \[ADDR:\]PORT .*see 'hypertrace-bpf record --help'$" \
		-- "$HT" record --metrics "$bad"
done
expect_run record_metrics_grace_without_metrics 2 "--metrics-grace only changes what --metrics serves" -- "$HT" record --metrics-grace 5
expect_run record_metrics_grace_too_short 2 "invalid --metrics-grace .0.5." -- "$HT" record --metrics 9470 --metrics-grace 0.5
expect_run record_metrics_missing_port 2 "option '--metrics' needs a value" -- "$HT" record --metrics

if [ "$(id -u)" -ne 0 ]; then
	skip record_metrics_address_in_use "record loads BPF programs and needs root"
	suite_exit
fi

# A port some other process listens on, for as long as this suite runs (at most 60 s).
exec 3< <(exec python3 -c '
import socket, sys, time
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(1)
print(s.getsockname()[1], flush=True)
time.sleep(60)')
holder=$!
read -r -t 10 port <&3
if [ -z "$port" ]; then
	fail record_metrics_address_in_use "could not take a port to test with"
	suite_exit
fi
expect_run record_metrics_address_in_use 1 \
	"^hypertrace-bpf: cannot listen on 127\.0\.0\.1:$port for --metrics: Address already in use: choose another port$" \
	-- "$HT" record -o in-use.htr -d 5 --metrics "$port"
[ -e in-use.htr ] && fail record_metrics_address_in_use_leaves_no_file "in-use.htr was created" ||
	pass record_metrics_address_in_use_leaves_no_file
# 192.0.2.1 (TEST-NET-1) is on no interface here: bind fails, nothing is sent.
expect_run record_metrics_foreign_address 1 \
	"cannot listen on 192\.0\.2\.1:9470 for --metrics: Cannot assign requested address: give an address of this host" \
	-- "$HT" record --no-file -d 5 --metrics 192.0.2.1:9470

# --metrics systemd: the listening socket systemd passes (socket activation).
# Without one, or with one meant for another process or not listening, a
# runtime error (exit 1) that says what to do.
expect_run record_metrics_systemd_without_socket 1 \
	"^hypertrace-bpf: --metrics systemd: no socket was passed \(LISTEN_FDS is not set\): start it through hypertrace-exporter\.socket, or give --metrics \[ADDR:\]PORT$" \
	-- env -u LISTEN_FDS -u LISTEN_PID "$HT" record --no-file -q -d 5 --metrics systemd
expect_run record_metrics_systemd_other_process 1 \
	"^hypertrace-bpf: --metrics systemd: the sockets were passed to process 1, not to this one \([0-9]+\): run hypertrace-bpf itself" \
	-- env LISTEN_PID=1 LISTEN_FDS=1 "$HT" record --no-file -q -d 5 --metrics systemd
# activate PORT CMD...: runs CMD as systemd would, with a socket listening on 127.0.0.1:PORT as fd 3.
activate() {
	python3 - "$@" <<'PY'
import os, socket, sys
port = int(sys.argv[1])
s = socket.socket()
s.bind(("127.0.0.1", port))
s.listen(16)
os.dup2(s.fileno(), 3, inheritable=True)
os.environ.update(LISTEN_PID=str(os.getpid()), LISTEN_FDS="1", LISTEN_FDNAMES="metrics")
os.execvp(sys.argv[2], sys.argv[2:])
PY
}
expect_run record_metrics_systemd_socket_not_listening 1 \
	"^hypertrace-bpf: --metrics systemd: the socket passed as fd 3 is not a socket: the socket unit needs ListenStream=\[ADDR:\]PORT \(TCP\) and Accept=no$" \
	-- env LISTEN_FDS=1 sh -c 'export LISTEN_PID=$$; exec "$@" 3<"$0"' "$work" "$HT" record --no-file -q -d 5 --metrics systemd
# The socket passed is served; CMD inherits neither the variables nor the fd.
port3=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
activate "$port3" "$HT" record --no-file -q --metrics systemd -- sh -c \
	'env | grep "^LISTEN_"; [ -e /proc/$$/fd/3 ] && echo "fd 3 inherited"; curl -sf --max-time 5 "http://127.0.0.1:$0/metrics"' \
	"$port3" >"$work/activated.out" 2>"$work/activated.err"
status=$?
if [ $status -eq 0 ] && grep -q '^hypertrace_build_info{' "$work/activated.out" &&
	! grep -Eq '^LISTEN_|^fd 3 inherited' "$work/activated.out"; then
	pass record_metrics_systemd_serves_passed_socket_cmd_inherits_nothing
else
	fail record_metrics_systemd_serves_passed_socket_cmd_inherits_nothing "status $status: $(grep -Ev '^(#|hypertrace_|process_)' "$work/activated.out" | head -n 5 | tr '\n' ' ') $(head -n 3 "$work/activated.err" | tr '\n' ' ')"
fi

# A fleet host: --no-file -q --metrics draws nothing and ends with its one summary line.
free_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
out=$("$HT" record --no-file -q -d 0.5 --metrics "$free_port" 2>&1); status=$?
if [ $status -eq 0 ] && [ "$(wc -l <<<"$out")" = 1 ] &&
	grep -Eq '^hypertrace-bpf: 0 hypercalls, 0 dropped, .*aggregate only: no trace file\)$' <<<"$out"; then
	pass record_no_file_quiet_with_metrics
else
	fail record_no_file_quiet_with_metrics "status $status: $out"
fi

# Stopped the moment its metrics port listens, before its programs are
# loaded (a service manager stopping a service that is starting): a clean
# end, status 0, and no file (nothing was traced). The checker starts record itself, so the stop
# follows the listen by well under a millisecond.
port2=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
python3 - "$port2" "$HT" record -q -o "$work/early-stop.htr" --force --metrics "$port2" -d 30 \
	>"$work/early-stop.out" 2>&1 <<'PY'
import signal, socket, subprocess, sys, time
port = int(sys.argv[1])
rec = subprocess.Popen(sys.argv[2:])
for _ in range(200000):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        break
    except OSError:
        if rec.poll() is not None:
            break
rec.send_signal(signal.SIGTERM)
sys.exit(rec.wait())
PY
status=$?
if [ $status -eq 0 ] && [ ! -e "$work/early-stop.htr" ] &&
	grep -q "stopped before tracing began: no trace file written" "$work/early-stop.out"; then
	pass record_stopped_while_loading_ends_cleanly
else
	fail record_stopped_while_loading_ends_cleanly "status $status: $(cat "$work/early-stop.out")"
fi

suite_exit
