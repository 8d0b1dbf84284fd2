# Tells an emulation stall from a failure in the kernel logs of a machine
# that runs under QEMU's software emulation (the nested machine, or a KVM
# guest inside it). Source it; tests/e2e/nested.sh does.
#
#   stall_verdict [--idle FILE] CPUS LOG...
#       LOGs are kernel logs (consoles, dmesg dumps, with or without a prefix
#       before the "[  12.345678]" timestamp) of ONE machine with CPUS
#       virtual CPUs; a message found in several of them counts once.
#       --idle FILE: the machine's own idle time per vCPU over a stretch of
#       its uptime, from its /proc/stat (below): lines "window T0 T1" (the
#       uptimes, in seconds, at its two readings) and "idle CPU SECONDS".
#       Prints one line:
#         "stall: WHAT"    every lockup or RCU stall report in them is what a
#                          pause of the whole machine gives
#         "failure: WHAT"  a report no pause explains
#         "pause: WHAT"    only halted vCPUs woken late (below)
#         nothing          no report of either kind
#
# Why a pause looks like a lockup: the soft lockup and RCU stall detectors
# measure wall-clock time, which goes on while the emulator does not run the
# machine (QEMU's TCG under host load, or not delivering an interrupt until
# another one comes). When the machine runs again, every vCPU that was busy
# finds itself "stuck" since the pause began: one report per vCPU, at the
# same moment, with the same duration. Idle vCPUs mostly report nothing
# (waking from idle touches the watchdog), so a pause is recognised this way
# only while every vCPU is busy; the other pauses are recognised by the
# harness itself (tests/e2e/nested.sh: heartbeat, silence watchdog).
#
# A halted vCPU woken late ran no code while "stuck": its timer interrupt
# came late (seen: CPU#0 of a KVM guest, idle, "stuck for 168s" while its
# other vCPU and the nested machine ran on, under a host twice as slow as
# usual). It counts toward a burst that names every vCPU (a pause of the whole
# machine finds idle vCPUs halted); a burst of such reports alone is "pause",
# neither a stall (nothing to run again) nor a failure. Two things tell it:
#  - Measured (--idle): the vCPU's idle time over the window. A vCPU really
#    stuck for D s of the window's W s was idle for at most W - D s of it
#    (the kernel counts a halt's whole length as idle when it ends, however
#    late the interrupt that ends it); idle time above that, by more than
#    2 s (idle_slack: readings in 10 ms ticks, taken around the commands),
#    means it was halted for all but a few seconds of its "stuck" time. This
#    holds whatever the report's registers show: the late interrupt's
#    handler, a softirq or a switch to another task may run before the
#    watchdog's timer. Only the part of the stuck time inside the window
#    counts, and only where that part is at least 20 s (threshold: the soft
#    lockup detector's default; the guests here report after 120 s).
#  - Without a measurement, the report itself: the idle task (swapper/N) at
#    the instruction that waits for an interrupt (the safe_halt family,
#    default_idle, mwait_idle), or at the softirqs of the interrupt that woke
#    it (the task's RIP, printed after them, at the halt). A real hang of a
#    vCPU is never at its halt instruction with interrupts reaching it.
#
# A pause: a soft lockup burst (reports within BURST seconds of the first)
# naming every vCPU, whose durations differ by at most a fifth of the
# shortest plus 2 s. Each vCPU's watchdog is touched every threshold/5 s, so
# at one moment the "stuck since" of two vCPUs differ by at most that, and
# every reported duration is at least the threshold. Likewise an RCU stall
# burst whose reports name every vCPU as stalled.
# A failure: anything else of the kind, i.e. a lockup or RCU stall of some
# vCPUs only, lockups with diverging durations, and any BUG (other than the
# soft lockup's "BUG: soft lockup"), Oops, WARNING, kernel panic, general
# protection fault, hard lockup or hung task. A failure anywhere in the logs
# outweighs a pause: such a run is never retried.
#
# What no log can tell: a deadlock of every vCPU at once that lasts, and a
# lockup on a machine with one vCPU, read like a pause. The harness retries a
# stall once; a failure of that kind happens again and fails the second run.
# shellcheck shell=bash

stall_verdict() {
	local cpus idle=
	if [ "${1:-}" = --idle ]; then
		[ -r "${2:-}" ] || { echo "stall_verdict: --idle needs a readable file, not '${2:-}'" >&2; return 2; }
		# One line for awk: "T0 T1 CPU:SECONDS ...".
		idle=$(awk '$1 == "window" && NF == 3 { w = $2 " " $3 } $1 == "idle" && NF == 3 { c = c " " $2 ":" $3 }
			END { if (w != "" && c != "") print w c }' "$2")
		[ -n "$idle" ] || { echo "stall_verdict: $2 has no 'window T0 T1' and 'idle CPU SECONDS' lines" >&2; return 2; }
		shift 2
	fi
	cpus=$1
	shift
	[[ $cpus =~ ^[1-9][0-9]*$ ]] || { echo "stall_verdict: CPUS must be a positive number, not '$cpus'" >&2; return 2; }
	[ $# -gt 0 ] || return 0
	cat -- "$@" 2>/dev/null | tr -d '\r' | awk -v cpus="$cpus" -v burst=10 -v idle="$idle" -v idle_slack=2 -v threshold=20 '
	BEGIN {
		n = split(idle, f, " ")
		if (n >= 3) { w0 = f[1] + 0; w1 = f[2] + 0; measured = 1 }
		for (i = 3; i <= n; i++) { split(f[i], p, ":"); idle_of[p[1] + 0] = p[2] + 0 }
	}
	# Whether the vCPU of a report at ts, stuck d s, was halted for its stuck
	# time inside the window, by its measured idle time (see the top).
	function idle_says_halted(cpu, ts, d,   from, inside) {
		if (!measured || ts < w0 || ts > w1 || !(cpu in idle_of)) return 0
		from = ts - d < w0 ? w0 : ts - d
		inside = ts - from
		return inside >= threshold && idle_of[cpu] > (w1 - w0) - inside + idle_slack
	}
	# The kernel timestamp of the line (-1 if none) and the message after it.
	function split_line(line,   p) {
		if (match(line, /\[ *[0-9]+\.[0-9]+\]/)) {
			ts = substr(line, RSTART + 1, RLENGTH - 2) + 0
			msg = substr(line, RSTART + RLENGTH)
		} else {
			ts = -1
			msg = line
		}
		sub(/^[ \t]+/, "", msg)
	}
	function failure(what) { if (fail == "") fail = what }
	{
		split_line($0)
		# The same kernel message from two logs (console and a dmesg dump).
		if (ts >= 0) { if ((ts, msg) in seen) next; seen[ts, msg] = 1 }
	}
	msg ~ /soft lockup - CPU#[0-9]+ stuck for [0-9]+s!/ {
		s = substr(msg, index(msg, "CPU#") + 4)
		cpu = s + 0
		d = substr(s, index(s, "stuck for ") + 10) + 0
		n_sl++; sl_ts[n_sl] = ts; sl_cpu[n_sl] = cpu; sl_dur[n_sl] = d
		# Whether its vCPU ran no code: the idle task (here), at the halt
		# instruction (its RIP, below).
		sl_halted[n_sl] = idle_says_halted(cpu, ts, d)
		rip_of = msg ~ /\[swapper\/[0-9]+:0\]/ ? n_sl : -n_sl
		rip_softirq = 0
		next
	}
	# The report'"'"'s registers: the first RIP after it is where its vCPU was;
	# or, if that is the softirqs run on leaving an interrupt, the task'"'"'s RIP
	# the report prints after the interrupt'"'"'s stack (the vCPU woke from its
	# halt for the late interrupt, and the watchdog fired in its softirqs).
	rip_of && msg ~ /^RIP: [0-9a-f]+:/ {
		if (rip_of > 0 && msg ~ /^RIP: [0-9a-f]+:([a-z_]*safe_halt|default_idle|mwait_idle|amd_e400_idle)\+/) {
			sl_halted[rip_of] = 1
		} else if (rip_of > 0 && !rip_softirq && msg ~ /^RIP: [0-9a-f]+:(handle_softirqs|__do_softirq)\+/) {
			rip_softirq = 1
			next
		}
		rip_of = 0
		next
	}
	# RCU: a header, then one line per stalled CPU ("rcu: \t1-...!: (...").
	msg ~ /rcu_[a-z_]+ (self-)?detected stalls? on/ {
		n_rcu++; rcu_ts[n_rcu] = ts; rcu_cpus[n_rcu] = " "
		rcu_what[n_rcu] = msg
		next
	}
	n_rcu && match(msg, /rcu:[ \t]+[0-9]+-/) {
		cpu = substr(msg, RSTART + 4) + 0
		if (index(rcu_cpus[n_rcu], " " cpu " ") == 0) rcu_cpus[n_rcu] = rcu_cpus[n_rcu] cpu " "
		next
	}
	msg ~ /BUG: / && msg !~ /BUG: soft lockup/ { failure(msg); next }
	msg ~ /kernel BUG at|Oops|WARNING: |Kernel panic|general protection fault|hard LOCKUP|blocked for more than [0-9]+ seconds/ { failure(msg); next }
	END {
		if (fail != "") { print "failure: " fail; exit }
		# Soft lockups in time order (insertion sort: a handful of reports).
		for (i = 2; i <= n_sl; i++)
			for (j = i; j > 1 && sl_ts[j] < sl_ts[j - 1]; j--) {
				t = sl_ts[j]; sl_ts[j] = sl_ts[j - 1]; sl_ts[j - 1] = t
				t = sl_cpu[j]; sl_cpu[j] = sl_cpu[j - 1]; sl_cpu[j - 1] = t
				t = sl_dur[j]; sl_dur[j] = sl_dur[j - 1]; sl_dur[j - 1] = t
				t = sl_halted[j]; sl_halted[j] = sl_halted[j - 1]; sl_halted[j - 1] = t
			}
		for (i = 1; i <= n_sl; i = j) {
			split("", named); nnamed = 0; bad_cpu = 0; lo = hi = sl_dur[i]; who = ""; busy = 0
			for (j = i; j <= n_sl && (sl_ts[i] < 0 ? sl_ts[j] < 0 : sl_ts[j] - sl_ts[i] <= burst); j++) {
				c = sl_cpu[j]
				if (!sl_halted[j]) busy = 1
				if (!(c in named) && c < cpus) { named[c] = 1; nnamed++ }
				if (c >= cpus) bad_cpu = 1
				who = who (who == "" ? "" : ",") c
				if (sl_dur[j] < lo) lo = sl_dur[j]
				if (sl_dur[j] > hi) hi = sl_dur[j]
			}
			at = sl_ts[i] < 0 ? "" : sprintf(" at %.0f s", sl_ts[i])
			if (!busy && !bad_cpu) {
				late = late (late == "" ? "" : "; ") sprintf("vCPU(s) %s halted, woken after %s s%s: an interrupt delivered late", who, lo == hi ? lo : lo "-" hi, at)
			} else if (nnamed < cpus || bad_cpu) {
				failure(sprintf("soft lockup on CPU#%s of %d vCPU(s)%s (stuck %d s): not the whole machine", who, cpus, at, hi))
			} else if (hi - lo > lo / 5 + 2) {
				failure(sprintf("soft lockups on every vCPU%s stuck %d-%d s: durations too far apart for one pause", at, lo, hi))
			} else {
				stall = stall (stall == "" ? "" : "; ") sprintf("soft lockup on all %d vCPU(s)%s, stuck %s s", cpus, at, lo == hi ? lo : lo "-" hi)
			}
		}
		# RCU stall reports: a burst is the reports within burst seconds.
		for (i = 1; i <= n_rcu; i = j) {
			all = " "; split("", named); nnamed = 0
			for (j = i; j <= n_rcu && (rcu_ts[i] < 0 ? rcu_ts[j] < 0 : rcu_ts[j] - rcu_ts[i] <= burst); j++) {
				m = split(rcu_cpus[j], l, " ")
				for (k = 1; k <= m; k++) if (!(l[k] in named) && l[k] < cpus) { named[l[k]] = 1; nnamed++; all = all l[k] " " }
			}
			at = rcu_ts[i] < 0 ? "" : sprintf(" at %.0f s", rcu_ts[i])
			if (nnamed < cpus) failure(sprintf("RCU stall on CPU(s)%sof %d vCPU(s)%s: not the whole machine (%s)", all, cpus, at, rcu_what[i]))
			else stall = stall (stall == "" ? "" : "; ") sprintf("RCU stall on all %d vCPU(s)%s", cpus, at)
		}
		if (fail != "") print "failure: " fail
		else if (stall != "") print "stall: " stall
		else if (late != "") print "pause: " late
	}'
}
