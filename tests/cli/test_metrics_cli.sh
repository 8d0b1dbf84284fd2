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
# One server, one address: a second --metrics (one left in a service's
# options) must not silently move it off the socket systemd holds.
expect_run record_metrics_given_twice 2 \
	"^hypertrace-bpf record: --metrics given twice \('systemd', then '127\.0\.0\.1:9470'\): give it once .*see 'hypertrace-bpf record --help'$" \
	-- "$HT" record --no-file -q -d 5 --metrics systemd --metrics 127.0.0.1:9470

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

# The port's twin in the other address family: while record --metrics
# serves, a process of uid nobody (what any local user can do) binds none
# of the port's addresses, on either family, with SO_REUSEADDR or
# SO_REUSEPORT, so scrapes of localhost (::1 first on Debian) or of any
# address reach the exporter. squat PORT: one line per address tried,
# "ADDR ERRNO-NAME" or "ADDR bound".
squat() {
	setpriv --reuid=65534 --regid=65534 --clear-groups --no-new-privs /usr/bin/python3 - "$1" <<'PY'
import errno, socket, sys
port = int(sys.argv[1])
for fam, addr, v6only in ((socket.AF_INET, "127.0.0.1", 0), (socket.AF_INET, "0.0.0.0", 0),
                          (socket.AF_INET6, "::1", 1), (socket.AF_INET6, "::", 1), (socket.AF_INET6, "::", 0)):
    for opt in (socket.SO_REUSEADDR, socket.SO_REUSEPORT):
        s = socket.socket(fam)
        if fam == socket.AF_INET6:
            s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, v6only)
        s.setsockopt(socket.SOL_SOCKET, opt, 1)
        try:
            s.bind((addr, port))
            s.listen(1)
            print(addr, "bound", flush=True)
        except OSError as e:
            print(addr, errno.errorcode.get(e.errno, e.errno), flush=True)
        s.close()
PY
}
# serving_then PORT SPEC CHECK: record --metrics SPEC in the background, once it answers on 127.0.0.1:PORT runs CHECK, then stops it.
serving_then() {
	local port=$1 spec=$2 check=$3 rec st=0
	"$HT" record --no-file -q -d 30 --metrics "$spec" >"$work/serving.out" 2>&1 &
	rec=$!
	for _ in $(seq 100); do
		curl -sf --max-time 1 -o /dev/null "http://127.0.0.1:$port/metrics" && break
		sleep 0.1
	done
	$check "$port" "$rec" || st=1
	kill -INT "$rec" 2>/dev/null
	wait "$rec"
	return $st
}
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# twin_kept PORT: nobody binds nothing, and both loopbacks answer with the exporter's metrics.
twin_kept() {
	squat "$1" >"$work/squat.out" 2>&1
	[ "$(grep -c ' EADDRINUSE$' "$work/squat.out")" = 10 ] &&
		curl -sf --max-time 2 "http://127.0.0.1:$1/metrics" | grep -q '^hypertrace_build_info{' &&
		curl -sf --max-time 2 -g "http://[::1]:$1/metrics" | grep -q '^hypertrace_build_info{'
}
if [ ! -e /proc/net/if_inet6 ]; then
	skip record_metrics_port_twin_kept_from_nobody "no IPv6 on this host"
else
	for form in port:PORT v4_loopback:127.0.0.1:PORT 'v6_loopback:[::1]:PORT' v4_any:0.0.0.0:PORT 'v6_any:[::]:PORT'; do
		p=$(free_port)
		spec=${form#*:}
		name=record_metrics_port_twin_kept_from_nobody_${form%%:*}
		if serving_then "$p" "${spec/PORT/$p}" twin_kept; then
			pass "$name"
		else
			fail "$name" "uid nobody: $(tr '\n' ',' <"$work/squat.out"); record: $(head -n 3 "$work/serving.out" | tr '\n' ' ')"
		fi
	done
fi

# Without IPv6 (a network namespace whose loopback has none) the loopback
# forms listen on 127.0.0.1 alone and say so in one line: never a failure
# to start.
p=$(free_port)
out=$(unshare -n sh -c 'ip link set lo up && sysctl -qw net.ipv6.conf.lo.disable_ipv6=1 && exec "$@"' sh \
	"$HT" record --no-file -q -d 0.5 --metrics "$p" 2>&1); status=$?
if [ $status -eq 0 ] && grep -Eq "^hypertrace-bpf: no IPv6 on this host \(.*\): --metrics listens on 127\.0\.0\.1:$p only$" <<<"$out"; then
	pass record_metrics_without_ipv6_listens_on_ipv4_and_says_so
else
	fail record_metrics_without_ipv6_listens_on_ipv4_and_says_so "status $status: $out"
fi

# The HTTP thread of a manual (root) record --metrics: no capability, an
# empty bounding set, no_new_privs, so that an execve() from it regains
# nothing though it runs as uid 0; the main thread keeps CAP_BPF (the
# recording goes on) and no no_new_privs (CMD may still run setuid tools).
# threads_checked PORT PID: writes each task's comm, CapPrm, CapEff, CapBnd and NoNewPrivs to tasks.
threads_checked() {
	local t
	for _ in $(seq 50); do
		: >"$work/tasks"
		for t in /proc/"$2"/task/*; do
			echo "$(cat "$t/comm") $(awk '$1 ~ /^(CapPrm|CapEff|CapBnd|NoNewPrivs):$/ { printf "%s ", $2 }' "$t/status")" >>"$work/tasks"
		done
		grep -q '^hypertrace-bpf 0000008000000000 ' "$work/tasks" && break
		sleep 0.1
	done
	grep -qx 'ht-metrics-http 0000000000000000 0000000000000000 0000000000000000 1 ' "$work/tasks" &&
		grep -qx 'hypertrace-bpf 0000008000000000 0000008000000000 0000008000000000 0 ' "$work/tasks"
}
p=$(free_port)
if serving_then "$p" "$p" threads_checked && grep -q '^hypertrace-bpf: 0 hypercalls' "$work/serving.out"; then
	pass record_metrics_http_thread_no_caps_empty_bounding_set_no_new_privs
else
	fail record_metrics_http_thread_no_caps_empty_bounding_set_no_new_privs "tasks (comm CapPrm CapEff CapBnd NoNewPrivs): $(tr '\n' ';' <"$work/tasks") record: $(tr '\n' ' ' <"$work/serving.out")"
fi

# --metrics systemd: the listening socket systemd passes (socket activation).
# Without one, or with one meant for another process or not listening, a
# runtime error (exit 1) that says what to do.
expect_run record_metrics_systemd_without_socket 1 \
	"^hypertrace-bpf: --metrics systemd: no socket was passed \(LISTEN_FDS is not set\): start it through hypertrace-exporter\.socket, or give --metrics \[ADDR:\]PORT$" \
	-- env -u LISTEN_FDS -u LISTEN_PID "$HT" record --no-file -q -d 5 --metrics systemd
expect_run record_metrics_systemd_other_process 1 \
	"^hypertrace-bpf: --metrics systemd: the sockets were passed to process 1, not to this one \([0-9]+\): run hypertrace-bpf itself" \
	-- env LISTEN_PID=1 LISTEN_FDS=1 "$HT" record --no-file -q -d 5 --metrics systemd
# activate PORT CMD...: runs CMD as systemd would, with a socket listening
# on 127.0.0.1:PORT as fd 3; ACTIVATE_V6=1: and one on [::1]:PORT as fd 4,
# both named metrics, as the shipped socket unit passes them; then fd 5,
# a socket of another name, which is not served.
activate() {
	python3 - "$@" <<'PY'
import os, socket, sys
port = int(sys.argv[1])
socks = [socket.socket()]
socks[0].bind(("127.0.0.1", port))
names = ["metrics"]
if os.environ.get("ACTIVATE_V6") == "1":
    v6 = socket.socket(socket.AF_INET6)
    v6.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
    v6.bind(("::1", port))
    other = socket.socket()
    other.bind(("127.0.0.1", 0))
    socks += [v6, other]
    names += ["metrics", "other"]
for i, s in enumerate(socks):
    s.listen(16)
    os.dup2(s.fileno(), 3 + i, inheritable=True)
os.environ.update(LISTEN_PID=str(os.getpid()), LISTEN_FDS=str(len(socks)), LISTEN_FDNAMES=":".join(names))
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
# A socket unit that listens on 127.0.0.1 alone (an older drop-in) is
# served, with a one-line warning that names the line to add.
if grep -Eq "^hypertrace-bpf: warning: --metrics systemd: the socket unit listens on 127\.0\.0\.1:$port3 but not on \[::1\]:$port3, .*: add ListenStream=\[::1\]:$port3 to it$" "$work/activated.err"; then
	pass record_metrics_systemd_ipv4_loopback_alone_warns_of_its_twin
else
	fail record_metrics_systemd_ipv4_loopback_alone_warns_of_its_twin "$(tr '\n' ' ' <"$work/activated.err")"
fi
# Both loopbacks passed, named metrics (ListenStream=127.0.0.1:P and
# ListenStream=[::1]:P): each is served, no warning; the socket of another
# name is left alone.
port4=$(free_port)
ACTIVATE_V6=1 activate "$port4" "$HT" record --no-file -q --metrics systemd -- sh -c \
	'curl -sf --max-time 5 "http://127.0.0.1:$0/metrics" && curl -sf --max-time 5 -g "http://[::1]:$0/metrics"' \
	"$port4" >"$work/activated2.out" 2>"$work/activated2.err"
status=$?
if [ $status -eq 0 ] && [ "$(grep -c '^hypertrace_build_info{' "$work/activated2.out")" = 2 ] &&
	! grep -q warning "$work/activated2.err"; then
	pass record_metrics_systemd_serves_every_socket_named_metrics
else
	fail record_metrics_systemd_serves_every_socket_named_metrics "status $status: $(grep -c '^hypertrace_build_info{' "$work/activated2.out") of 2 scrapes answered; $(head -n 3 "$work/activated2.err" | tr '\n' ' ')"
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
