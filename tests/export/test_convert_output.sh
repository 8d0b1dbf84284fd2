#!/usr/bin/env bash
# The files convert writes, as record writes its trace: built under a name
# nobody sees (an unnamed file, a temporary directory next to the CTF one)
# and named only when complete, so a convert stopped by SIGINT or SIGTERM
# leaves neither a truncated export under the final name nor a stray
# temporary, and a rerun succeeds; private (0600, directories 0700) unless
# --mode says otherwise, whatever the umask; --force replaces a file in one
# rename. Input: large trace files from tests/tools/trace_gen (no BPF).
# Files only, no port (its verdicts are counts and ratios of one process's
# peak): tests/run runs it beside the nested-machine suites.
# tests/run: alongside the nested-machine suites
source "$(dirname "$0")/../lib.sh"

GEN=$OUTPUT/tests/tools/trace_gen

work=$(mktemp -d)
trap 'kill -CONT $(jobs -p) 2>/dev/null; kill -9 $(jobs -p) 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
cd "$work" || exit 1

# 1M records convert to CTF in a fraction of a second, 200k to Chrome JSON in about two.
if ! out=$("$GEN" bulk big.htr 1000000 2>&1) || ! out=$("$GEN" bulk chrome.htr 200000 2>&1) ||
	! out=$("$GEN" bulk small.htr 1000 2>&1); then
	fail convert_output_traces "trace_gen: $out"
	suite_exit
fi
chmod 600 ./*.htr

# convert_stopped ARGS...: execs `convert ARGS` stopped (SIGSTOP) before it
# begins, with SIGINT at its default (a script's background job starts with
# it ignored; convert must die of it as from a terminal): run it with &,
# then stop_midway lets it go (the job is the process: exec, so $! is its
# pid). A CTF conversion of big.htr takes about half a second, less than
# Python takes to start: started running, it was over before stop_midway
# looked, and its checks never ran.
convert_stopped() {
	exec python3 -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.kill(os.getpid(), signal.SIGSTOP); os.execv(sys.argv[1], sys.argv[1:])' \
		"$HT" convert "$@"
}

# stop_midway PID INPUT: continues PID (convert_stopped), then stops it
# (SIGSTOP) once it has written 256 KiB, so the export is under way and
# unfinished. Prints "stopped", or "finished" if
# the process ended first, or had already read all of INPUT when the stop
# took effect and its temporary directory (.htr-PID-*.tmp, CTF and LTTng)
# is gone (then it may have named its output: it is let go on). The
# machine was too fast to catch it. A CTF conversion reads its whole input
# in a fraction of a second: its temporary, still there, says it is not
# named yet.
stop_midway() {
	python3 - "$1" "$2" <<'PY'
import os, signal, sys, time
pid, size, end = int(sys.argv[1]), os.path.getsize(sys.argv[2]), time.monotonic() + 30
def io(key):
    return int(open(f"/proc/{pid}/io").read().split(key + ": ")[1].split()[0])
def state():
    return open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
# Stopped before it began (convert_stopped): let it go, now that this looks.
while time.monotonic() < end and state() != "T":
    time.sleep(0.001)
os.kill(pid, signal.SIGCONT)
while time.monotonic() < end:
    try:
        if io("wchar") >= 256 * 1024:
            os.kill(pid, signal.SIGSTOP)
            st = ""
            while st not in ("T", "Z", "X"):
                st = state()
            unnamed = any(n.startswith(f".htr-{pid}-") and n.endswith(".tmp") for n in os.listdir("."))
            if st == "T" and (io("rchar") < size or unnamed):
                print("stopped")
                sys.exit(0)
            os.kill(pid, signal.SIGCONT)
            break
    except (OSError, IndexError):
        break
print("finished")
PY
}

# killed_midway NAME SIGNAL OUTPUT ARGS...: runs `convert ARGS`, stops it mid-way,
# sends SIGNAL and checks that it dies of it, leaving no OUTPUT and nothing
# else new in the directory.
killed_midway() {
	local name=$1 sig=$2 output=$3 pid state status before after visible
	shift 3
	before=$(ls -A)
	convert_stopped "$@" >"$name.log" 2>&1 &
	pid=$!
	state=$(stop_midway $pid "${@: -1}")
	if [ "$state" != stopped ]; then
		wait $pid
		# Its finished output goes: the checks after this one want the directory as it was.
		rm -rf "$output"
		skip "$name" "convert finished before it could be stopped: nothing to check"
		return
	fi
	# While it is stopped mid-way, the final name does not exist yet.
	[ -e "$output" ] && visible=yes || visible=no
	kill -"$sig" $pid
	kill -CONT $pid
	wait $pid
	status=$?
	after=$(ls -A | grep -vx "$name.log")
	if [ "$visible" = no ] && [ $status -eq $((128 + $(kill -l "$sig"))) ] && [ ! -e "$output" ] && [ "$after" = "$before" ] &&
		grep -q "convert stopped by SIG$sig: nothing written to" "$name.log"; then
		pass "$name"
	else
		fail "$name" "visible mid-way: $visible, status $status, left: $(ls -la); $(cat "$name.log")"
	fi
}

killed_midway chrome_killed_by_sigint_leaves_nothing INT big.json --chrome big.json chrome.htr
killed_midway chrome_killed_by_sigterm_leaves_nothing TERM big.json --chrome big.json chrome.htr
killed_midway ctf_killed_by_sigterm_leaves_nothing TERM big-ctf --ctf big-ctf big.htr
killed_midway ctf_killed_by_sigint_leaves_nothing INT big-ctf --ctf big-ctf big.htr
killed_midway lttng_killed_by_sigint_leaves_nothing INT big-lttng --lttng big-lttng big.htr
killed_midway perfetto_killed_by_sigterm_leaves_nothing TERM big.pftrace --perfetto big.pftrace big.htr
# A killed run over an old file leaves the old file as it was.
echo old >kept.json
killed_midway chrome_killed_with_force_keeps_the_old_file TERM no-such-name --chrome kept.json --force chrome.htr
[ "$(cat kept.json)" = old ] && pass chrome_killed_with_force_leaves_the_old_file_intact \
	|| fail chrome_killed_with_force_leaves_the_old_file_intact "$(head -c 100 kept.json)"

# Nothing in the way of a rerun.
if out=$("$HT" convert --chrome big.json chrome.htr 2>&1) && tail -c 3 big.json | grep -q '}}' &&
	out=$("$HT" convert --ctf big-ctf big.htr 2>&1) && [ -s big-ctf/metadata ]; then
	pass convert_after_a_killed_run_succeeds
else
	fail convert_after_a_killed_run_succeeds "$out"
fi
left=$(ls -A | grep -v -e '\.htr$' -e '\.log$' -e '^big\.json$' -e '^big-ctf$' -e '^kept\.json$')
[ -z "$left" ] && pass convert_leaves_no_temporary || fail convert_leaves_no_temporary "$left"

# --- a failed conversion leaves nothing; a killed one's temporary goes later ---
cp small.htr cut.htr
truncate -s $(($(stat -c %s small.htr) - 100)) cut.htr
for f in chrome perfetto ctf lttng; do
	before=$(ls -A)
	out=$("$HT" convert --$f "cut-$f" cut.htr 2>&1); status=$?
	after=$(ls -A)
	if [ $status -eq 1 ] && grep -q "cut.htr is damaged" <<<"$out" && grep -q "nothing written to cut-$f" <<<"$out" &&
		[ ! -e "cut-$f" ] && [ "$after" = "$before" ]; then
		pass "${f}_of_a_damaged_input_leaves_nothing"
	else
		fail "${f}_of_a_damaged_input_leaves_nothing" "status $status: $out; left: $(ls -A)"
	fi
done

# SIGKILL: nothing can run, the temporary directory stays; the next conversion into the directory removes it.
convert_stopped --lttng killed-lttng big.htr >/dev/null 2>&1 &
pid=$!
if [ "$(stop_midway $pid big.htr)" = stopped ]; then
	kill -9 $pid
	wait $pid 2>/dev/null
	stale=$(ls -A | grep -x "\.htr-$pid-[0-9a-f]*\.tmp")
	out=$("$HT" convert --lttng killed-lttng small.htr 2>&1); status=$?
	if [ -n "$stale" ] && [ $status -eq 0 ] && [ -s killed-lttng/host/metadata ] && [ ! -e "$stale" ]; then
		pass lttng_killed_by_sigkill_is_cleaned_up_by_the_next_conversion
	else
		fail lttng_killed_by_sigkill_is_cleaned_up_by_the_next_conversion "stale '$stale', status $status: $out; $(ls -A)"
	fi
else
	wait $pid
	skip lttng_killed_by_sigkill_is_cleaned_up_by_the_next_conversion "convert finished before it could be stopped"
fi

# Never another running conversion's: one stopped mid-way keeps its directory while others
# start beside it, and finishes; nor one whose pid lives, or whose lock is held (another pid namespace).
convert_stopped --ctf running-ctf big.htr >running.log 2>&1 &
pid=$!
if [ "$(stop_midway $pid big.htr)" = stopped ]; then
	ours=$(ls -A | grep -x "\.htr-$pid-[0-9a-f]*\.tmp")
	true &
	dead=$!
	wait $dead
	mkdir ".htr-$$-0123456789abcdef.tmp" ".htr-$dead-0123456789abcdef.tmp" ".htr-$dead-fedcba9876543210.tmp"
	flock ".htr-$dead-fedcba9876543210.tmp" sleep 60 &
	holder=$!
	sleep 0.2
	"$HT" convert --ctf beside-ctf small.htr >/dev/null 2>&1
	"$HT" convert --lttng beside-lttng small.htr >/dev/null 2>&1
	kept=$(ls -A | grep '^\.htr-' | sort | tr '\n' ' ')
	want=$(printf '%s\n' "$ours" ".htr-$$-0123456789abcdef.tmp" ".htr-$dead-fedcba9876543210.tmp" | sort | tr '\n' ' ')
	kill -CONT $pid
	wait $pid
	status=$?
	kill $holder 2>/dev/null
	wait $holder 2>/dev/null
	if [ -n "$ours" ] && [ "$kept" = "$want" ] && [ $status -eq 0 ] && [ -s running-ctf/metadata ] && [ -s beside-ctf/metadata ]; then
		pass convert_never_removes_a_running_conversions_directory
	else
		fail convert_never_removes_a_running_conversions_directory "kept '$kept', want '$want', status $status: $(cat running.log)"
	fi
	rm -rf ".htr-$$-0123456789abcdef.tmp" ".htr-$dead-fedcba9876543210.tmp"
else
	wait $pid
	skip convert_never_removes_a_running_conversions_directory "convert finished before it could be stopped"
fi

# --- modes ----------------------------------------------------------------------
modes() { # FILE or DIR: its mode, then the modes of the files in it
	stat -c %a "$1"
	[ -d "$1" ] && find "$1" -mindepth 1 -printf '%m\n' | sort -u
}
(umask 022 && "$HT" convert --chrome m.json small.htr >/dev/null 2>&1 && "$HT" convert --ctf m-ctf small.htr >/dev/null 2>&1 &&
	"$HT" convert --lttng m-lttng small.htr >/dev/null 2>&1)
[ "$(modes m.json)" = 600 ] && [ "$(modes m-ctf | tr '\n' ' ')" = "700 600 " ] && [ "$(modes m-lttng | tr '\n' ' ')" = "700 600 700 " ] &&
	pass exports_are_private_by_default \
	|| fail exports_are_private_by_default "chrome $(modes m.json), ctf $(modes m-ctf | tr '\n' ' '), lttng $(modes m-lttng | tr '\n' ' ')"
(umask 077 && "$HT" convert --mode 0644 --chrome m2.json small.htr >/dev/null 2>&1 &&
	"$HT" convert --mode 640 --ctf m2-ctf small.htr >/dev/null 2>&1 && "$HT" convert --mode 640 --lttng m2-lttng small.htr >/dev/null 2>&1)
[ "$(modes m2.json)" = 644 ] && [ "$(modes m2-ctf | tr '\n' ' ')" = "750 640 " ] && [ "$(modes m2-lttng | tr '\n' ' ')" = "750 640 750 " ] &&
	pass mode_option_sets_the_export_modes \
	|| fail mode_option_sets_the_export_modes "chrome $(modes m2.json), ctf $(modes m2-ctf | tr '\n' ' '), lttng $(modes m2-lttng | tr '\n' ' ')"

expect_run convert_mode_refuses_world_writable 2 "invalid --mode '0646': refused bits 0002 \(writable by every user" -- \
	"$HT" convert --mode 0646 --chrome w.json small.htr
expect_run convert_mode_refuses_executable_bits 2 "invalid --mode '0755': refused bits 0111 \(executable: the file is data, not a program\)" -- \
	"$HT" convert --mode 0755 --ctf w-ctf small.htr
[ ! -e w.json ] && [ ! -e w-ctf ] && pass a_refused_mode_writes_nothing || fail a_refused_mode_writes_nothing "$(ls -la)"

# --- --force: a new file in one rename, never a write into the old one ----------
echo old >f.json
ln f.json f-other-name
old_inode=$(stat -c %i f.json)
out=$("$HT" convert --force --chrome f.json small.htr 2>&1); status=$?
if [ $status -eq 0 ] && [ "$(stat -c %i f.json)" != "$old_inode" ] && [ "$(cat f-other-name)" = old ] &&
	[ "$(stat -c %a f.json)" = 600 ] && python3 -c 'import json, sys; json.load(open(sys.argv[1]))' f.json; then
	pass chrome_force_replaces_the_file_in_one_rename
else
	fail chrome_force_replaces_the_file_in_one_rename "status $status, inode $old_inode -> $(stat -c %i f.json): $out"
fi
ln -s m.json link.json
expect_run chrome_refuses_a_symlink 1 "link.json is a symbolic link: convert does not write through links" -- \
	"$HT" convert --force --chrome link.json small.htr
mkdir empty-ctf
ln -s empty-ctf link-ctf
expect_run ctf_refuses_a_symlink 1 "link-ctf is a symbolic link: convert does not write through links" -- \
	"$HT" convert --ctf link-ctf small.htr
"$HT" convert --ctf empty-ctf small.htr >/dev/null 2>&1 && [ -s empty-ctf/metadata ] && pass ctf_fills_an_empty_directory \
	|| fail ctf_fills_an_empty_directory "$(ls -la empty-ctf)"

suite_exit
