# The minivm scenarios of the nested end-to-end suites, guest side and host
# side, shared by tests/e2e/test_nested.sh (the kernel of this machine's
# release) and tests/e2e/test_nested_debian13_kernel.sh (Debian 13's 6.12).
#
# Guest side: minivm_guest_* print busybox sh for the nested machine's
# script (minivm_guest_prelude first); each scenario leaves its outputs in
# /out. Host side: the check_* functions read the files that came back, in
# $F, and print PASS:/FAIL: lines (tests/lib.sh) whose names start with
# $CHECK_PREFIX (default: none), so two suites' checks are told apart.
# shellcheck shell=bash
CHECK_PREFIX=${CHECK_PREFIX:-}
CSV_HEADER=exit_ns,wallclock,host_pid,host_tid,vcpu_id,exit_cpu,entry_cpu,isa,exit_reason,nr,a0,a1,a2,a3,guest_rip,exit_to_hcall_ns,hcall_to_entry_ns,total_ns,flags,vm_name,process_name,thread_name

# --- guest side -------------------------------------------------------------------
# rec NAME RECORD-ARGS...: records into /tmp/NAME.htr, then exports the CSV
# and the summary; every exit status goes to /out/NAME.*.rc. MIX: minivm's
# two vCPUs issuing nr 1000, with I/O exits and nr 1001 mixed in.
minivm_guest_prelude() {
	cat <<'EOF'
rec() {
	name=$1
	shift
	timeout 120 hypertrace-bpf record -o /tmp/$name.htr "$@" >/out/$name.out 2>/out/$name.err
	echo $? >/out/$name.rc
	hypertrace-bpf report --csv /tmp/$name.htr >/out/$name.csv 2>>/out/$name.err
	echo $? >/out/$name.csv.rc
	hypertrace-bpf report /tmp/$name.htr >/out/$name.report 2>>/out/$name.err
	echo $? >/out/$name.report.rc
	echo "$name: record status $(cat /out/$name.rc): $(grep '^hypertrace-bpf:' /out/$name.out)"
}
MIX="--vcpus 2 --count 1000 --mix io,other-nr"
EOF
}

# Every BPF configuration of record, loaded and attached on this kernel
# (test_load_matrix, a static binary in the machine's /bin).
minivm_guest_load_matrix() {
	cat <<'EOF'
lm_start=$(date +%s)
timeout 300 test_load_matrix >/out/load_matrix.out 2>&1
echo $? >/out/load_matrix.rc
echo $(($(date +%s) - lm_start)) >/out/load_matrix.secs
EOF
}

# --no-file: histograms kept in BPF; the last "since start" counts must be the
# hypercalls issued (-i 60: the end of CMD draws the only interval).
minivm_guest_nofile() {
	cat <<'EOF'
for g in "" --per-vcpu; do
	name=nofile${g:+_per_vcpu}
	timeout 120 hypertrace-bpf record --no-file $g -i 60 -- minivm $MIX >/out/$name.out 2>/out/$name.err
	echo $? >/out/$name.rc
done
EOF
}

# vmcall: the Intel instruction on this AMD machine, with the raw tracepoints
# on as well so the #UD exit can be seen.
minivm_guest_vmcall() {
	cat <<'EOF'
T=/sys/kernel/tracing
echo 4096 >$T/buffer_size_kb
for e in kvm_exit kvm_hypercall kvm_entry; do echo 1 >$T/events/kvm/$e/enable; done
echo >$T/trace
rec vmcall -- minivm --vcpus 1 --count 50 --insn vmcall
echo 0 >$T/tracing_on
grep -v '^#' $T/trace >/out/vmcall.trace
EOF
}

# --- host side --------------------------------------------------------------------
# rc NAME: exit status the guest recorded in F/NAME ("missing" if none).
rc() { cat "$F/$1" 2>/dev/null || echo missing; }
# tail_of FILE: last lines of FILE on one line, for failure messages.
tail_of() { tail -n 3 "$1" 2>/dev/null | tr '\n' '|'; }

# check_record NAME WANT: record exited 0 and printed its one summary line,
# and report exited 0 with "records: WANT" (WANT: extended regex) and
# "dropped: 0".
check_record() {
	local name=$1 want=$2 summary
	if [ "$(rc "$name.rc")" != 0 ]; then
		fail "$CHECK_PREFIX${name}_record" "record exited with status $(rc "$name.rc"): $(tail_of "$F/$name.err")"
		return
	fi
	summary=$(grep -c '^hypertrace-bpf: ' "$F/$name.out" || true)
	if [ "$summary" != 1 ]; then
		fail "$CHECK_PREFIX${name}_record" "want one summary line on stdout, got $summary"
	elif ! grep -Eq "^hypertrace-bpf: $want records, 0 dropped" "$F/$name.out"; then
		fail "$CHECK_PREFIX${name}_record" "summary does not say '$want records, 0 dropped': $(grep '^hypertrace-bpf: ' "$F/$name.out")"
	else
		pass "$CHECK_PREFIX${name}_record"
	fi
	if [ "$(rc "$name.report.rc")" != 0 ]; then
		fail "$CHECK_PREFIX${name}_report" "report exited with status $(rc "$name.report.rc"): $(tail_of "$F/$name.err")"
	elif ! grep -Eqx "records: $want" "$F/$name.report"; then
		fail "$CHECK_PREFIX${name}_report" "want 'records: $want', got '$(grep '^records:' "$F/$name.report" || true)'"
	elif ! grep -Eq '^dropped: 0( |$)' "$F/$name.report"; then
		fail "$CHECK_PREFIX${name}_report" "want 'dropped: 0', got '$(grep '^dropped:' "$F/$name.report" || true)'"
	else
		pass "$CHECK_PREFIX${name}_report"
	fi
}

# csv_verdict FILE ROWS NR VCPUS SEQS: prints nothing if the CSV holds exactly
# ROWS records, all of hypercall NR, vCPU ids in VCPUS (space-separated),
# each (vcpu, sequence) exactly once with sequence a1 in 0..SEQS-1, a0 = the
# vCPU index, the minivm constants in a2/a3, SVM exit 0x81, positive
# latencies adding up, one vCPU thread per vCPU, and per vCPU the sequence
# and exit time increasing in file order; otherwise the first violation.
csv_verdict() {
	awk -F, -v rows="$2" -v nr="$3" -v vcpus="$4" -v seqs="$5" -v header="$CSV_HEADER" '
	function hex(s,   i, c, v) {
		s = tolower(s)
		if (substr(s, 1, 2) != "0x") return -1
		v = 0
		for (i = 3; i <= length(s); i++) {
			c = index("0123456789abcdef", substr(s, i, 1)) - 1
			if (c < 0) return -1
			v = v * 16 + c
		}
		return v
	}
	function bad(msg) { if (!err) err = "line " NR ": " msg }
	BEGIN { split(vcpus, vl, " "); for (i in vl) okv[vl[i]] = 1 }
	NR == 1 { if ($0 != header) err = "header is \"" $0 "\""; for (i = 1; i <= NF; i++) col[$i] = i; next }
	err { next }
	{
		n++
		v = $col["vcpu_id"]; seq = hex($col["a1"])
		if (NF != split(header, h, ",")) bad(NF " fields")
		if (!(v in okv)) bad("vcpu_id " v " not in {" vcpus "}")
		if ($col["isa"] != "SVM") bad("isa " $col["isa"])
		if (hex($col["exit_reason"]) != 129) bad("exit_reason " $col["exit_reason"])
		if ($col["nr"] != nr) bad("nr " $col["nr"])
		if (hex($col["a0"]) != v) bad("a0 " $col["a0"] " for vcpu " v)
		if (seq < 0 || seq >= seqs) bad("a1 " $col["a1"] " out of 0.." seqs - 1)
		if (hex($col["a2"]) != 2728567458) bad("a2 " $col["a2"])
		if (hex($col["a3"]) != 2745410467) bad("a3 " $col["a3"])
		if (hex($col["guest_rip"]) <= 0) bad("guest_rip " $col["guest_rip"])
		e2h = $col["exit_to_hcall_ns"]; h2e = $col["hcall_to_entry_ns"]; tot = $col["total_ns"]
		if (!(e2h > 0 && h2e > 0 && tot > 0)) bad("latency not positive: " e2h "/" h2e "/" tot)
		if (hex($col["flags"]) == 0 && e2h + h2e != tot) bad("total_ns " tot " != " e2h " + " h2e)
		key = v " " seq
		if (key in seen) bad("vcpu " v " sequence " seq " twice")
		seen[key] = 1
		tid = $col["host_tid"]
		if ((v in tidof) && tidof[v] != tid) bad("vcpu " v " on threads " tidof[v] " and " tid)
		tidof[v] = tid
		if ((v in lastseq) && seq <= lastseq[v]) bad("vcpu " v " sequence " seq " after " lastseq[v])
		if ((v in lastns) && $col["exit_ns"] <= lastns[v]) bad("vcpu " v " exit_ns not increasing")
		lastseq[v] = seq; lastns[v] = $col["exit_ns"]
		pids[$col["host_pid"]] = 1
	}
	END {
		if (!err && n != rows) err = n + 0 " records, want " rows
		if (!err) { np = 0; for (p in pids) np++; if (rows > 0 && np != 1) err = np " host pids, want 1" }
		printf "%s", err
	}' "$1"
}

# check_csv NAME ROWS NR VCPUS SEQS
check_csv() {
	local name=$1 verdict
	if [ "$(rc "$name.csv.rc")" != 0 ]; then
		fail "$CHECK_PREFIX${name}_csv" "report --csv exited with status $(rc "$name.csv.rc")"
		return
	fi
	verdict=$(csv_verdict "$F/$name.csv" "$2" "$3" "$4" "$5" 2>&1) || verdict=${verdict:-awk failed on $name.csv}
	if [ -n "$verdict" ]; then fail "$CHECK_PREFIX${name}_csv" "$verdict"; else pass "$CHECK_PREFIX${name}_csv"; fi
}

# minivm_total NAME: the "minivm: total" line minivm printed under record.
minivm_total() { grep -h '^minivm: total' "$F/$1" 2>/dev/null || true; }

# check_issued NAME WANT: minivm says it issued WANT hypercalls of its nr,
# all returning -KVM_ENOSYS (so the events really happened in that run).
check_issued() {
	local name=$1 want=$2 total
	total=$(minivm_total "$name.out")
	if ! grep -q "hypercalls=$want " <<<"$total"; then
		fail "$CHECK_PREFIX${name}_issued" "minivm did not report $want hypercalls: '${total:-no output}'"
	elif grep '^minivm: vcpu=' "$F/$name.out" | grep -v 'ret=-1000 ret_mismatches=0 ' >/dev/null; then
		fail "$CHECK_PREFIX${name}_issued" "a hypercall returned something other than -1000 (-KVM_ENOSYS)"
	else
		pass "$CHECK_PREFIX${name}_issued"
	fi
}

# check_mix_recording NAME: `rec NAME -v -- minivm $MIX`: every hypercall
# issued is recorded exactly, and the KVM types were relocated against the
# modules' BTF.
check_mix_recording() {
	local name=$1 t overlap missing_rel=
	check_issued "$name" 2000
	check_record "$name" 2000
	check_csv "$name" 2000 1000 "0 1" 1000
	# Concurrency actually exercised: how often one vCPU's exit->entry window
	# was open while the other vCPU's record started (information only).
	if [ "$(rc "$name.csv.rc")" = 0 ]; then
		overlap=$(awk -F, 'NR > 1 { s[NR] = $1; e[NR] = $1 + $18; v[NR] = $5 }
			END { for (i in s) { m++; for (j in s) if (v[i] != v[j] && s[j] >= s[i] && s[j] <= e[i]) { n++; break } }
			      printf "%d of %d", n, m }' "$F/$name.csv" || true)
		echo "  info: $name: records whose window contained an exit of the other vCPU: $overlap"
	fi
	# The BPF programs were relocated against the modules' BTF (Debian builds
	# KVM as modules): SVM's raw kvm_exit program reads struct vcpu_svm and
	# the VMCB, which only kvm_amd's has. The struct kvm_vcpu the raw
	# programs read is in the kernel's own BTF too (6.1's and 6.12's: the
	# same build, the same layout), where libbpf looks first; either will do.
	grep -Eq "struct vcpu_svm in \[kvm_amd\]" "$F/$name.err" || missing_rel+=" vcpu_svm"
	grep -Eq "struct vmcb in \[kvm_amd\]" "$F/$name.err" || missing_rel+=" vmcb"
	grep -Eq "struct kvm_vcpu in \[(kvm|vmlinux)\]" "$F/$name.err" || missing_rel+=" kvm_vcpu"
	echo "  info: $name: struct kvm_vcpu relocated against the BTF of $(grep -Eo 'struct kvm_vcpu in \[[a-z_]+\]' "$F/$name.err" | sed -n '1s/.* in //p')"
	if [ -z "$missing_rel" ]; then
		pass "$CHECK_PREFIX${name}_core_kvm_module_btf"
	else
		fail "$CHECK_PREFIX${name}_core_kvm_module_btf" "record -v shows no CO-RE relocation against the KVM modules' BTF for:$missing_rel"
	fi
}

# check_vmcall: minivm_guest_vmcall.
# Observed with Debian's 6.1 kernel: the first vmcall takes a "UD excp" exit
# (0x46) with no kvm_hypercall event; KVM rewrites the instruction to vmmcall
# and re-enters at the same RIP, which then exits as a normal hypercall
# (0x81 + kvm_hypercall + kvm_entry). Later calls are plain vmmcall. So all
# M hypercalls are recorded, every one with exit_reason 0x81; the #UD exit
# itself is not.
check_vmcall() {
	check_issued vmcall 50
	check_record vmcall 50
	check_csv vmcall 50 1000 0 50
	local trace=$F/vmcall.trace ud hc ud_rip hc_rip
	ud=$(grep -c 'kvm_exit: .*reason UD excp' "$trace" || true)
	hc=$(grep -c 'kvm_hypercall: nr 0x3e8 ' "$trace" || true)
	ud_rip=$(grep -m1 'kvm_exit: .*reason UD excp' "$trace" | sed -n 's/.* rip \(0x[0-9a-f]*\).*/\1/p')
	hc_rip=$(grep -m1 'kvm_exit: .*reason hypercall' "$trace" | sed -n 's/.* rip \(0x[0-9a-f]*\).*/\1/p')
	if [ "$ud" = 1 ] && [ "$hc" = 50 ] && [ -n "$ud_rip" ] && [ "$ud_rip" = "$hc_rip" ]; then
		pass "${CHECK_PREFIX}vmcall_ud_then_rewritten"
	else
		fail "${CHECK_PREFIX}vmcall_ud_then_rewritten" "raw tracepoints: $ud #UD exits (want 1), $hc kvm_hypercall (want 50), #UD rip ${ud_rip:-none}, first hypercall exit rip ${hc_rip:-none}"
	fi
	# The records' guest RIP is the one the kvm_exit event shows for the same
	# exits: SVM's raw kvm_exit program reads it from the vCPU, not the event.
	local rec_rips trace_rips
	rec_rips=$(awk -F, 'NR > 1 { print tolower($15) }' "$F/vmcall.csv" 2>/dev/null | sed 's/^0x0*//' | sort -u | tr '\n' ' ')
	trace_rips=$(grep 'kvm_exit: .*reason hypercall' "$trace" | sed -n 's/.* rip 0x0*\([0-9a-f]*\).*/\1/p' | sort -u | tr '\n' ' ')
	if [ -n "$rec_rips" ] && [ "$rec_rips" = "$trace_rips" ]; then
		pass "${CHECK_PREFIX}vmcall_guest_rip_is_the_exits"
	else
		fail "${CHECK_PREFIX}vmcall_guest_rip_is_the_exits" "records' guest_rip {${rec_rips:-none}} != kvm_exit's rip {${trace_rips:-none}} (hex)"
	fi
}

# check_nofile: minivm_guest_nofile: the BPF histograms count every hypercall.
# The 6.1 verifier rejected the aggregate program once; record must load it and
# its last cumulative frame must count the 2000 hypercalls minivm issued.
check_nofile() {
	local since groups
	if [ "$(rc nofile.rc)" != 0 ]; then
		fail "${CHECK_PREFIX}nofile_record" "record --no-file exited with status $(rc nofile.rc): $(tail_of "$F/nofile.err")"
	else
		since=$(sed -n 's/^since start: \([0-9]*\) hypercalls.*/\1/p' "$F/nofile.out" | tail -n 1)
		if [ "$since" = 2000 ]; then
			pass "${CHECK_PREFIX}nofile_live_counts_equal_hypercalls_issued"
		else
			fail "${CHECK_PREFIX}nofile_live_counts_equal_hypercalls_issued" "last 'since start' count '${since:-none}', want 2000"
		fi
	fi
	if [ "$(rc nofile_per_vcpu.rc)" != 0 ]; then
		fail "${CHECK_PREFIX}nofile_per_vcpu_record" "record --no-file --per-vcpu exited with status $(rc nofile_per_vcpu.rc): $(tail_of "$F/nofile_per_vcpu.err")"
	else
		# The groups of the last cumulative frame: vcpu 0 and vcpu 1, 1000 each.
		# Drawn after minivm exited, so /proc has no name left to show for it.
		groups=$(sed -n 's/^since start: .*/--/p; s/^vcpu \([0-9]*\) (pid [0-9]*\(, vm [^)]*\)\{0,1\}): \([0-9]*\) hypercalls.*/\1=\3/p' "$F/nofile_per_vcpu.out" |
			awk '$0 == "--" { g = ""; next } { g = g $0 " " } END { print g }')
		if [ "$groups" = "0=1000 1=1000 " ]; then
			pass "${CHECK_PREFIX}nofile_per_vcpu_counts_equal_hypercalls_issued"
		else
			fail "${CHECK_PREFIX}nofile_per_vcpu_counts_equal_hypercalls_issued" "per-vCPU counts '${groups:-none}', want '0=1000 1=1000'"
		fi
	fi
}

# check_load_matrix PREFIX LABEL: the load matrix's PASS/FAIL lines, renamed
# with PREFIX so they are told apart from the host's, and its count as an
# info line about LABEL.
check_load_matrix() {
	local prefix=$1 label=$2
	if [ -s "$F/load_matrix.out" ]; then
		sed -n "s/^\(PASS\|FAIL\|SKIP\): /\1: $prefix/p" "$F/load_matrix.out"
		grep -q '^FAIL: ' "$F/load_matrix.out" && SUITE_FAILED=1
		grep '^    [0-9]* configurations' "$F/load_matrix.out" |
			sed "s/^ */  info: $label: /; s/\$/ in $(cat "$F/load_matrix.secs" 2>/dev/null || echo ?) s/"
		if [ "$(rc load_matrix.rc)" != 0 ] && ! grep -q '^FAIL: ' "$F/load_matrix.out"; then
			fail "${prefix}load_matrix" "exited with status $(rc load_matrix.rc): $(tail_of "$F/load_matrix.out")"
		fi
	else
		fail "${prefix}load_matrix" "no output (status $(rc load_matrix.rc))"
	fi
}
