#!/usr/bin/env bash
# record --metrics read by a real Prometheus server (Debian's prometheus),
# on loopback only, with its own config, data directory and port, started
# here and killed at the end. Fed with real records through the real drain
# (metrics_feed: synthetic hypercalls through the BPF handlers, since this
# host cannot run a guest), Prometheus must count exactly the records of the
# trace file, and histogram_quantile() must fall in the log2 bucket of the
# file's exact p50/p99 (from `report`). Then the same with --no-file, and
# the real `record --metrics` scraped in both modes (--no-file with --exits),
# also while 500 slow clients (idle, or trickling a request head) keep
# connecting to it; `promtool check metrics` on its scrapes, and its
# process_* metrics. record --exits too: exit histograms and vCPU waiting of
# synthetic exits at exact times, under a hostile VM name. Every wait is
# bounded.
# shellcheck source=../lib.sh
source "$(dirname "$0")/../lib.sh"

FEED=$OUTPUT/tests/prometheus/metrics_feed
SLOW=$OUTPUT/tests/tools/slow_clients
COUNT=3000

if [ "$(id -u)" -ne 0 ]; then
	skip prometheus "the feeder loads BPF programs and needs root"
	exit 0
fi
if ! command -v prometheus >/dev/null; then
	fail prometheus "prometheus is not installed: run tests/install-deps.sh (make deps)"
	suite_exit
fi

work=$(mktemp -d /tmp/ht-prometheus.XXXXXX)
pids=()
cleanup() {
	touch "$work/stop"
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
	rm -rf "$work"
}
trap cleanup EXIT

# Free loopback ports, chosen by the kernel.
read -r PROM_PORT FILE_PORT NOFILE_PORT REC_PORT RECNF_PORT EXITS_PORT < <(python3 -c '
import socket
socks = [socket.socket() for _ in range(6)]
for s in socks: s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))')

cat >"$work/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: file
    static_configs: [{ targets: ["127.0.0.1:$FILE_PORT"] }]
  - job_name: nofile
    static_configs: [{ targets: ["127.0.0.1:$NOFILE_PORT"] }]
  - job_name: record
    static_configs: [{ targets: ["127.0.0.1:$REC_PORT"] }]
  - job_name: record_nofile
    static_configs: [{ targets: ["127.0.0.1:$RECNF_PORT"] }]
  - job_name: exits
    static_configs: [{ targets: ["127.0.0.1:$EXITS_PORT"] }]
EOF
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/data" \
	--web.listen-address="127.0.0.1:$PROM_PORT" >"$work/prometheus.log" 2>&1 &
pids+=($!)
API=http://127.0.0.1:$PROM_PORT

# wait_for SECONDS CMD...: runs CMD every 0.5 s until it succeeds or SECONDS pass.
wait_for() {
	local n=$(($1 * 2))
	shift
	while [ "$n" -gt 0 ]; do
		"$@" && return 0
		sleep 0.5
		n=$((n - 1))
	done
	return 1
}

# query PROMQL: the value of the first result, or "none".
query() {
	curl -s --max-time 5 --get --data-urlencode "query=$1" "$API/api/v1/query" |
		python3 -c 'import json, sys
try:
    r = json.load(sys.stdin)["data"]["result"]
    print(r[0]["value"][1] if r else "none")
except Exception:
    print("none")'
}

# query_is PROMQL WANT: true when Prometheus answers WANT (after its next scrapes).
query_is() { [ "$(query "$1")" = "$2" ]; }

# in_bucket SECONDS EXACT_NS: SECONDS lies in the log2 bucket holding EXACT_NS,
# i.e. slot k = floor(log2(EXACT_NS)) whose le is (2^(k+1) - 1) ns, the one
# below it (2^k - 1) ns.
in_bucket() {
	python3 -c 'import sys
q, v = float(sys.argv[1]) * 1e9, int(sys.argv[2])
k = v.bit_length() - 1 if v > 1 else 0
lo, hi = (2 ** k - 1 if k else 0), 2 ** (k + 1) - 1
sys.exit(0 if lo - 1e-3 <= q <= hi + 1e-3 else 1)' "$1" "$2"
}

if ! wait_for 30 curl -sf --max-time 2 -o /dev/null "$API/-/ready"; then
	fail prometheus_starts "not ready after 30 s: $(tail -5 "$work/prometheus.log")"
	suite_exit
fi
pass prometheus_starts

# --- file mode: records through the drain into a trace file and the metrics --
"$FEED" "$FILE_PORT" "$COUNT" "$work/ready.file" "$work/stop" --file "$work/t.htr" \
	2>"$work/feed.file.log" &
pids+=($!)
"$FEED" "$NOFILE_PORT" "$COUNT" "$work/ready.nofile" "$work/stop" --no-file \
	2>"$work/feed.nofile.log" &
pids+=($!)
if ! wait_for 60 test -s "$work/ready.file" || ! wait_for 60 test -s "$work/ready.nofile"; then
	fail metrics_feed_ready "the feeders did not finish: $(cat "$work"/feed.*.log)"
	suite_exit
fi

summary=$("$HT" report "$work/t.htr")
records=$(awk '/^records:/ { print $2 }' <<<"$summary")
read -r p50 p99 < <(awk '/total \(exit->entry\)/ { print $5, $6 }' <<<"$summary")
sum_file='sum(hypertrace_hypercalls_total{job="file"})'
if [ "$records" = "$COUNT" ] && wait_for 30 query_is "$sum_file" "$records"; then
	pass prometheus_sum_equals_records_in_file
else
	fail prometheus_sum_equals_records_in_file "file has '$records' records (fired $COUNT), Prometheus says $(query "$sum_file")"
fi
for q in 50 99; do
	exact=$p50
	[ $q = 99 ] && exact=$p99
	got=$(query "histogram_quantile(0.$q, sum by (le) (hypertrace_hypercall_duration_seconds_bucket{job=\"file\",phase=\"exit_to_entry\"}))")
	if [ "$got" != none ] && in_bucket "$got" "$exact"; then
		pass "prometheus_p${q}_in_bucket_of_exact_p${q}"
	else
		fail "prometheus_p${q}_in_bucket_of_exact_p${q}" "histogram_quantile gives $got s, the file's exact p$q is $exact ns"
	fi
done
# The sum series is exact in file mode: Prometheus' mean against report's.
avg=$(awk '/total \(exit->entry\)/ { print $4 }' <<<"$summary")
got=$(query 'sum(hypertrace_hypercall_duration_seconds_sum{job="file",phase="exit_to_entry"}) / sum(hypertrace_hypercall_duration_seconds_count{job="file",phase="exit_to_entry"})')
if python3 -c 'import sys; sys.exit(0 if abs(float(sys.argv[1]) * 1e9 - float(sys.argv[2])) <= 1 else 1)' "$got" "$avg" 2>/dev/null; then
	pass prometheus_mean_equals_report_mean
else
	fail prometheus_mean_equals_report_mean "Prometheus: $got s, report: $avg ns"
fi

# --- --no-file: the BPF aggregates ------------------------------------------
fired=$(awk '/^fired/ { print $2 }' "$work/ready.nofile")
dropped=$(awk '/^dropped/ { print $2 }' "$work/ready.nofile")
p99_high=$(awk '/^p99_high_ns/ { print $2 }' "$work/ready.nofile")
sum_nofile='sum(hypertrace_hypercalls_total{job="nofile"})'
if [ "$dropped" = 0 ] && wait_for 30 query_is "$sum_nofile" "$fired"; then
	pass prometheus_no_file_sum_equals_hypercalls
else
	fail prometheus_no_file_sum_equals_hypercalls "fired $fired, dropped $dropped, Prometheus says $(query "$sum_nofile")"
fi
got=$(query 'histogram_quantile(0.99, sum by (le) (hypertrace_hypercall_duration_seconds_bucket{job="nofile",phase="exit_to_entry"}))')
if [ "$got" != none ] && in_bucket "$got" "$p99_high"; then
	pass prometheus_no_file_p99_in_bucket_of_bpf_p99
else
	fail prometheus_no_file_p99_in_bucket_of_bpf_p99 "histogram_quantile gives $got s, the BPF histogram's p99 bucket ends at $p99_high ns"
fi

# --- record --exits: exit histograms and vCPU waiting, the VM named hostilely --
# exits_feed (tests/tools): synthetic exits at exact times through the real
# handlers and sampler. Its name has a quote, a backslash, a newline, an
# escape sequence and a byte that is not UTF-8: Prometheus must accept the
# scrape and give back the name made visible.
EXITS_NAME=$'we"b\\1\n\e[31m\xff'
"$OUTPUT/tests/tools/exits_feed" "$work/ready.exits" "$work/stop" --metrics "$EXITS_PORT" -name "$EXITS_NAME" \
	2>"$work/feed.exits.log" &
pids+=($!)
if ! wait_for 60 test -s "$work/ready.exits"; then
	fail exits_feed_ready "$(cat "$work/feed.exits.log")"
elif wait_for 30 query_is 'sum(hypertrace_exit_duration_seconds_count{job="exits"})' 1320 &&
	query_is 'sum(hypertrace_exit_duration_seconds_count{job="exits",reason="io"})' 1000 &&
	query_is 'sum(hypertrace_exit_duration_seconds_count{job="exits",reason="npf"})' 300 &&
	query_is 'sum(hypertrace_exit_duration_seconds_sum{job="exits",reason="hlt"})' 0.04; then
	pass prometheus_exit_counts_and_sums_per_reason
else
	fail prometheus_exit_counts_and_sums_per_reason "count $(query 'sum(hypertrace_exit_duration_seconds_count{job="exits"})'), io $(query 'sum(hypertrace_exit_duration_seconds_count{job="exits",reason="io"})'); $(cat "$work/feed.exits.log")"
fi
# The io exits spend 1000, 2000, ... 10000 ns, 100 each: the exact p50 is 5000 ns.
got=$(query 'histogram_quantile(0.5, sum by (le) (hypertrace_exit_duration_seconds_bucket{job="exits",reason="io"}))')
if [ "$got" != none ] && in_bucket "$got" 5000; then
	pass prometheus_exit_p50_in_bucket_of_exact_p50
else
	fail prometheus_exit_p50_in_bucket_of_exact_p50 "histogram_quantile gives $got s, the exact p50 is 5000 ns"
fi
if query_is 'hypertrace_vcpu_wait_seconds_total{job="exits",vcpu="2"}' 0.005 &&
	query_is 'hypertrace_vcpu_preemptions_total{job="exits",vcpu="2"}' 3; then
	pass prometheus_vcpu_wait_and_preemptions
else
	fail prometheus_vcpu_wait_and_preemptions "wait $(query 'hypertrace_vcpu_wait_seconds_total{job="exits",vcpu="2"}'), preemptions $(query 'hypertrace_vcpu_preemptions_total{job="exits",vcpu="2"}')"
fi
vm=$(curl -s --max-time 5 --get --data-urlencode 'query=count by (vm) (hypertrace_exit_duration_seconds_count{job="exits"})' "$API/api/v1/query" |
	python3 -c 'import json, sys; r = json.load(sys.stdin)["data"]["result"]; print(r[0]["metric"]["vm"] if len(r) == 1 else "%d label values" % len(r))' 2>&1)
want_vm='we"b\\1\x0a\x1b[31m\xff'
[ "$vm" = "$want_vm" ] && pass prometheus_vm_label_is_the_name_made_visible ||
	fail prometheus_vm_label_is_the_name_made_visible "vm label '$vm', want '$want_vm'"

# --- the real record --metrics, both modes (no guest here: zero hypercalls) --
"$HT" record -q -o "$work/rec.htr" -d 90 --metrics "127.0.0.1:$REC_PORT" >"$work/rec.log" 2>&1 &
rec_pid=$!
pids+=($rec_pid)
"$HT" record --no-file -q --exits -d 90 --metrics "$RECNF_PORT" >"$work/recnf.log" 2>&1 &
recnf_pid=$!
pids+=($recnf_pid)
if wait_for 30 query_is 'hypertrace_recording_info{job="record",mode="file"}' 1 &&
	wait_for 30 query_is 'sum(hypertrace_dropped_hypercalls_total{job="record"})' 0; then
	pass prometheus_scrapes_record
else
	fail prometheus_scrapes_record "up: $(query 'up{job="record"}'); $(cat "$work/rec.log")"
fi
if wait_for 30 query_is 'hypertrace_recording_info{job="record_nofile",mode="no_file"}' 1 &&
	wait_for 30 query_is 'hypertrace_exits_lost_total{job="record_nofile"}' 0; then
	pass prometheus_scrapes_record_no_file
else
	fail prometheus_scrapes_record_no_file "up: $(query 'up{job="record_nofile"}'); $(cat "$work/recnf.log")"
fi

# Prometheus' own linter on a scrape of each: names, types, HELP, histograms.
for port in "$REC_PORT" "$RECNF_PORT"; do
	if curl -sf --max-time 5 "http://127.0.0.1:$port/metrics" >"$work/scrape.$port" &&
		promtool check metrics <"$work/scrape.$port" >"$work/promtool.$port" 2>&1; then
		pass "promtool_check_metrics_clean_$([ "$port" = "$REC_PORT" ] && echo file || echo no_file)"
	else
		fail promtool_check_metrics_clean "port $port: $(head -n 5 "$work/promtool.$port" 2>/dev/null | tr '\n' ' ')"
	fi
done
# The standard process metrics, as Prometheus stored them: the recorder's own numbers.
start=$(query 'process_start_time_seconds{job="record"}')
rss=$(query 'process_resident_memory_bytes{job="record"}')
fds=$(query 'process_open_fds{job="record"}')
maxfds=$(query 'process_max_fds{job="record"}')
cpu=$(query 'process_cpu_seconds_total{job="record"}')
if python3 -c 'import sys, time
start, rss, fds, maxfds, cpu = (float(v) for v in sys.argv[1:])
sys.exit(0 if time.time() - 120 < start <= time.time() and rss > 1e6 and 3 <= fds <= maxfds and cpu >= 0 else 1)' \
	"$start" "$rss" "$fds" "$maxfds" "$cpu" 2>/dev/null; then
	pass prometheus_process_metrics_of_record
else
	fail prometheus_process_metrics_of_record "start $start, rss $rss, fds $fds/$maxfds, cpu $cpu"
fi

# 500 clients that connect and send nothing, or trickle a request head that
# never ends, reconnecting when closed. Prometheus (scrape timeout 1 s) must
# still scrape record every second: every scrape of the last 4 s up, and
# each within the timeout.
"$SLOW" "$REC_PORT" 500 "$work/slow.ready" "$work/slow.stop" >"$work/slow.log" 2>&1 &
pids+=($!)
slow_pid=$!
if wait_for 30 test -s "$work/slow.ready"; then
	sleep 5
	up_min=$(query 'min_over_time(up{job="record"}[4s])')
	up_n=$(query 'count_over_time(up{job="record"}[4s])')
	dur_max=$(query 'max_over_time(scrape_duration_seconds{job="record"}[4s])')
	if [ "$up_min" = 1 ] && [ "${up_n:-0}" != none ] && [ "${up_n%.*}" -ge 3 ] &&
		python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) < 1 else 1)' "$dur_max" 2>/dev/null; then
		pass prometheus_scrapes_record_next_to_500_slow_clients
	else
		fail prometheus_scrapes_record_next_to_500_slow_clients "last 4 s: min up $up_min over $up_n scrapes, longest scrape $dur_max s; clients: $(tr '\n' ' ' <"$work/slow.ready")"
	fi
else
	fail prometheus_scrapes_record_next_to_500_slow_clients "the slow clients did not start: $(cat "$work/slow.log")"
fi
touch "$work/slow.stop"
wait "$slow_pid"
kill -INT "$rec_pid" "$recnf_pid"
wait "$rec_pid"
st1=$?
wait "$recnf_pid"
st2=$?
if [ $st1 -eq 0 ] && [ $st2 -eq 0 ] && grep -q "^hypertrace-bpf: 0 records, 0 dropped" "$work/rec.log" &&
	grep -q "^hypertrace-bpf: 0 hypercalls, 0 dropped" "$work/recnf.log"; then
	pass record_metrics_stops_cleanly
else
	fail record_metrics_stops_cleanly "status $st1/$st2: $(cat "$work/rec.log" "$work/recnf.log")"
fi

suite_exit
