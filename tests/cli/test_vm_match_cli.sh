#!/usr/bin/env bash
# Who joins `--vm NAME`, live (record, top) and in a file (report, convert).
# Live, NAME is the whole QEMU guest name, whoever runs the process: when
# processes of several users hold a KVM VM under that name, one line on
# stderr names their uids, and `--vm-user USER|UID` keeps one user's. Two
# names that share their first 63 bytes are two VMs, and a NAME longer than
# 63 bytes finds its VM. A trace file keeps 63 bytes of a name: report and
# convert refuse a longer --vm, saying so (exit 2).
# The VM processes are real: each opens /dev/kvm and creates a KVM VM
# (KVM_CREATE_VM, which needs no VMX/SVM), then, for another user, drops to
# that uid keeping the VM's descriptor.
source "$(dirname "$0")/../lib.sh"

work=$(mktemp -d)
chmod 0755 "$work"
vms=()
cleanup() {
	for p in "${vms[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
cd "$work" || exit 1

long_a=$(printf 'v%.0s' $(seq 70))-one
long_b=$(printf 'v%.0s' $(seq 70))-two
expect_run record_vm_user_without_vm 2 "^hypertrace-bpf record: --vm-user chooses among the processes of --vm NAME: add --vm NAME" -- "$HT" record --vm-user 0
expect_run record_vm_user_unknown 2 "^hypertrace-bpf record: invalid --vm-user 'no-such-user-here': expected a user name of /etc/passwd or a numeric uid" -- "$HT" record --vm web1 --vm-user no-such-user-here
expect_run top_vm_user_without_vm 2 "^hypertrace-bpf top: --vm-user chooses among the processes of --vm NAME" -- "$HT" top --vm-user root
expect_run top_vm_user_unknown 2 "^hypertrace-bpf top: invalid --vm-user '-1'" -- "$HT" top --vm web1 --vm-user=-1
expect_run report_vm_longer_than_a_file_keeps 2 "--vm NAME is 74 bytes: a trace file keeps at most 63 bytes of a VM name \(a longer one is cut between two characters\): give the name as report shows it" -- "$HT" report --vm "$long_a" t.htr
expect_run convert_vm_longer_than_a_file_keeps 2 "--vm NAME is 74 bytes: a trace file keeps at most 63 bytes of a VM name" -- "$HT" convert --vm "$long_a" --chrome t.json t.htr

if [ "$(id -u)" -ne 0 ]; then
	skip vm_match_live "record and top load BPF programs and need root"
	suite_exit
fi
if ! python3 -c 'import os, fcntl; fcntl.ioctl(os.open("/dev/kvm", os.O_RDWR), 0xAE01, 0)' 2>/dev/null; then
	skip vm_match_live "no KVM here (/dev/kvm cannot create a VM)"
	suite_exit
fi
# A 63-byte name is accepted where a file is read (then, with no file, another error).
expect_run report_vm_of_63_bytes_accepted 1 "cannot open|No such file" -- "$HT" report --vm "${long_a:0:63}" no-such.htr

# vm UID NAME: a process run by UID holding a KVM VM, with -name NAME in its arguments; sets vm_pid.
nvms=0
vm() {
	nvms=$((nvms + 1))
	python3 -c '
import fcntl, os, sys, time
kvm = os.open("/dev/kvm", os.O_RDWR)
fcntl.ioctl(kvm, 0xAE01, 0)
uid = int(sys.argv[1])
if uid:
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
print("ready", flush=True)
time.sleep(60)' "$1" -name "$2" >"$work/vm.$nvms" &
	vm_pid=$!
	vms+=("$vm_pid")
	for _ in $(seq 50); do
		[ -s "$work/vm.$nvms" ] && return 0
		sleep 0.1
	done
}
vm 0 web1
root_vm=$vm_pid
vm 65534 web1
nobody_vm=$vm_pid
vm 0 "$long_a"
long_a_vm=$vm_pid
vm 0 "$long_b"
long_b_vm=$vm_pid
sleep 0.3

# record_run NAME ARGS...: record -v for a moment; its stderr in $work/NAME.err.
record_run() {
	local name=$1
	shift
	"$HT" record -v -q -d 0.3 -o "$work/$name.htr" "$@" 2>"$work/$name.err" >/dev/null
}
tracing() { grep -o "tracing process [0-9]* (running at start)" "$work/$1.err" | awk '{ print $3 }' | sort -n | tr '\n' ' '; }
sorted() { printf '%s\n' "$@" | sort -n | tr '\n' ' '; }

warn_re="^hypertrace-bpf: warning: VM 'web1' is run by processes of 2 users \(uids (0, 65534|65534, 0)\): their numbers are merged; to follow one user's only, add --vm-user USER$"
record_run both --vm web1
if grep -Eq "$warn_re" "$work/both.err" && [ "$(grep -c 'warning: VM' "$work/both.err")" = 1 ] &&
	[ "$(tracing both)" = "$(sorted $root_vm $nobody_vm)" ]; then
	pass record_vm_of_two_users_warns_once_with_the_uids
else
	fail record_vm_of_two_users_warns_once_with_the_uids "traced $(tracing both); $(grep -E 'warning|VM' "$work/both.err" | head -n 3 | tr '\n' ' ')"
fi
record_run nobody --vm web1 --vm-user nobody
if ! grep -q warning "$work/nobody.err" && [ "$(tracing nobody)" = "$nobody_vm " ] &&
	grep -q "process $root_vm is run by uid 0, not --vm-user's 65534: not traced" "$work/nobody.err"; then
	pass record_vm_user_keeps_that_users_processes_only
else
	fail record_vm_user_keeps_that_users_processes_only "traced $(tracing nobody) (want $nobody_vm); $(grep -E 'warning|VM' "$work/nobody.err" | head -n 3 | tr '\n' ' ')"
fi
record_run root --vm web1 --vm-user 0
if ! grep -q warning "$work/root.err" && [ "$(tracing root)" = "$root_vm " ]; then
	pass record_vm_user_by_uid
else
	fail record_vm_user_by_uid "traced $(tracing root) (want $root_vm)"
fi
expect_run record_vm_user_with_no_such_vm_waits 0 "no VM with QEMU guest name 'web1' \(-name web1\) of uid 1234 runs yet: it is traced once it starts" -- "$HT" record -q -d 0.3 -o "$work/none.htr" --vm web1 --vm-user 1234

record_run long_a --vm "$long_a"
record_run prefix --vm "${long_a:0:63}"
if [ "$(tracing long_a)" = "$long_a_vm " ] && [ -z "$(tracing prefix)" ] &&
	grep -q "no VM with QEMU guest name '${long_a:0:63}'" "$work/prefix.err"; then
	pass record_vm_matches_a_74_byte_name_whole_not_its_63_byte_prefix
else
	fail record_vm_matches_a_74_byte_name_whole_not_its_63_byte_prefix "$long_a: traced $(tracing long_a) (want $long_a_vm; $long_b_vm shares 70 bytes); its first 63 bytes: traced $(tracing prefix)"
fi

# top: the same rules (its batch mode, one frame).
top_run() {
	local name=$1
	shift
	timeout 20 "$HT" top -b -n 1 -d 0.2 "$@" >"$work/$name.out" 2>"$work/$name.err"
}
top_run top_both --vm web1
top_run top_nobody --vm web1 --vm-user 65534
if grep -Eq "$warn_re" "$work/top_both.err" && ! grep -q warning "$work/top_nobody.err"; then
	pass top_vm_of_two_users_warns_vm_user_chooses
else
	fail top_vm_of_two_users_warns_vm_user_chooses "$(head -n 3 "$work/top_both.err" "$work/top_nobody.err" | tr '\n' ' ')"
fi
suite_exit
