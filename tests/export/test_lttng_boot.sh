#!/usr/bin/env bash
# convert --lttng's VM boots and guest initcalls, read back with babeltrace2
# and its Python API (bt2) and drawn by the project's Trace Compass analysis
# (docs/tracecompass/hypertrace-boot.xml) as Trace Compass replays it:
#   - a VM's boot (record --boot, tests/tools/boot_gen, every time known):
#     its phases as begin and end events in the host trace's boot stream,
#     the analysis' row "boot phases" of the VM's entry equal to report
#     --boot --csv phase for phase (name, start, length, and the events'
#     arguments), an instant where a boot that crashed ended and none for
#     one still running; -p selects the boots too; a pid given to a new VM
#     process holds each process's boot in turn; a hostile VM name
#     escaped as report writes it, no control byte in the trace;
#   - a guest's initcalls (guest/boottrace, tests/tools/boottrace_gen, the
#     export suites' sample tests/export/initcall_trace.sh): rows "initcall
#     levels", "initcalls" and "initcalls 2" equal report --initcalls --csv
#     level for level and initcall for initcall, one without its return an
#     instant event; --nr does not cut them, -p selects them with their VM;
#     none without clock pairs (said on stderr, counted in the host's env);
#   - the checker (tests/export/check_lttng_boot.py) refuses boot and
#     initcall events it was not told of, and an analysis that leaves a
#     slice open;
#   - a trace without boots or initcalls has no boot stream, class or env
#     entry of them;
#   - the analysis is valid against Trace Compass's own schema
#     (xmlDefinition.xsd and the files it includes, from Trace Compass's
#     source: TRACECOMPASS_SRC=DIR, a checkout or a git directory, else
#     ../shared/reference/tracecompass/ or .cache/tracecompass/ holding the
#     .xsd files; skipped, saying so, where none is), and the schema refuses
#     a planted mistake (xmllint, Debian's libxml2-utils).
# Files only, no port, no verdict on time: tests/run runs it beside the
# nested-machine suites.
# tests/run: alongside the nested-machine suites
source "$(dirname "$0")/../lib.sh"

PY=/usr/bin/python3
CHECK=$TOP/tests/export/check_lttng_boot.py
XML=$TOP/docs/tracecompass/hypertrace-boot.xml

if ! command -v babeltrace2 >/dev/null || ! $PY -c 'import bt2' 2>/dev/null; then
	skip lttng_boot_export "babeltrace2 and python3-bt2 are not installed: run 'make deps' as root"
	suite_exit
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1

# No control byte in any string of the boot stream's events (bt2 reads them back as sent). $1: the experiment.
no_control_bytes() {
	$PY - "$1/host" <<'PY'
import sys, bt2
for m in bt2.TraceCollectionMessageIterator(sys.argv[1]):
    if type(m) is bt2._EventMessageConst and m.event.name.startswith(("hypertrace_boot_", "hypertrace_initcall")):
        for k, v in m.event.payload_field.items():
            if isinstance(v, bt2._StringFieldConst) and any(ord(c) < 0x20 or 0x7f <= ord(c) < 0xa0 for c in str(v)):
                sys.exit(f"{m.event.name}: {k} = {str(v)!r}")
PY
}

# babeltrace2 reads the host trace without a warning and the checker agrees with report. $1: test name,
# $2: the experiment, $3: what the checker's summary must say; the checker's options follow.
check_case() {
	local name=$1 exp=$2 want=$3 out
	shift 3
	if [ -z "$(babeltrace2 "$exp/host" 2>&1 >/dev/null)" ] && out=$($PY "$CHECK" "$exp" "$XML" "$@" 2>&1) &&
		grep -qF "$want" <<<"$out"; then
		pass "$name"
		grep -E "boots:|initcalls:|time graph" <<<"$out"
	else
		fail "$name" "${out:-babeltrace2 warned: $(babeltrace2 "$exp/host" 2>&1 >/dev/null | head -c 300)}"
	fi
}

# A VM's boot: phases as the analysis' states, the instant where it crashed, none for one still running.
BOOT_GEN=$OUTPUT/tests/tools/boot_gen
if "$BOOT_GEN" boot.htr --crash >/dev/null && "$BOOT_GEN" up.htr >/dev/null && "$BOOT_GEN" hostile.htr --hostile-name >/dev/null &&
	"$BOOT_GEN" again.htr --again >/dev/null; then
	for f in boot up hostile again; do
		"$HT" report --boot --csv $f.htr >$f.csv && "$HT" convert --lttng $f-exp $f.htr >/dev/null 2>&1
	done
	check_case lttng_boot_phases_equal_report_boot boot-exp "boots: 4 boot phases of 1 VMs = report --boot --csv" --boot boot.csv
	if babeltrace2 boot-exp/host | grep -q "hypertrace_boot_ended: .* vm_pid = 30000, .*phase = \"user space\"" &&
		! babeltrace2 up-exp/host | grep -q hypertrace_boot_ended; then
		pass lttng_boot_ended_only_where_the_vm_stopped
	else
		fail lttng_boot_ended_only_where_the_vm_stopped "$(babeltrace2 boot-exp/host up-exp/host | grep -c hypertrace_boot_ended) boot ended events"
	fi
	check_case lttng_boot_still_running_equal_report_boot up-exp "boots: 4 boot phases of 1 VMs = report --boot --csv" --boot up.csv
	# A pid given to a new VM process: each process's boot in turn on the VM's row, the first ended.
	check_case lttng_boot_of_a_pid_given_again_is_each_processs_in_turn again-exp "boots: 8 boot phases of 2 VMs = report --boot --csv" --boot again.csv
	# The VM's name as report shows it: the escape byte as text, never raw in the trace's files.
	check_case lttng_boot_hostile_vm_name_escaped hostile-exp "boots: 4 boot phases of 1 VMs" --boot hostile.csv
	if ! no_control_bytes hostile-exp || ! babeltrace2 hostile-exp/host | grep -qF 'vm = "VM boot\\x1b[31m\"1 (pid 30000)"'; then
		fail lttng_boot_hostile_vm_name_has_no_control_byte "$(babeltrace2 hostile-exp/host | grep -m1 phase_begin | cat -v)"
	else
		pass lttng_boot_hostile_vm_name_has_no_control_byte
	fi
	"$HT" report --boot --csv -p 1 boot.htr >sel.csv 2>/dev/null
	"$HT" convert --lttng sel-exp -p 1 boot.htr >/dev/null 2>&1
	check_case lttng_boot_selected_with_its_vm sel-exp "boots: 0 boot phases of 0 VMs" --boot sel.csv
	if out=$($PY "$CHECK" boot-exp "$XML" 2>&1) ||
		! grep -q "^check_lttng_boot: boot events of VMs \[30000\] (ended \[30000\]), report --boot --csv has \[\]" <<<"$out"; then
		fail lttng_boot_checker_refuses_boot_phases_it_was_not_told "$out"
	else
		pass lttng_boot_checker_refuses_boot_phases_it_was_not_told
	fi
	# An analysis whose end of a phase leaves the phase on its row: the replay sees it.
	sed '/eventName="hypertrace_boot_phase_end"/,/<\/eventHandler>/s/value="boot phases"/value="boot phase"/' "$XML" >broken.xml
	if out=$($PY "$CHECK" boot-exp broken.xml --boot boot.csv 2>&1) ||
		! grep -q "still holds 'user space' at the end of the trace" <<<"$out"; then
		fail lttng_boot_checker_refuses_an_analysis_that_leaves_a_slice_open "$out"
	else
		pass lttng_boot_checker_refuses_an_analysis_that_leaves_a_slice_open
	fi
else
	fail lttng_boot_phases_equal_report_boot "boot_gen failed"
fi

# A guest's initcalls: levels and initcalls as the analysis' states, equal report --initcalls --csv to the ns.
source "$TOP/tests/export/initcall_trace.sh"
BT_GEN=$OUTPUT/tests/tools/boottrace_gen
initcall_trace ic.txt
if "$BT_GEN" ic.htr ic.txt >/dev/null && "$BT_GEN" ic_nosync.htr ic.txt --syncs 0 >/dev/null &&
	"$HT" report --initcalls --csv ic.htr >ic.csv 2>/dev/null; then
	ic_want="initcalls: 4 levels, 7 initcalls and 1 without their return on 3 rows of 1 VMs = report --initcalls --csv"
	for sel in "" "--nr 1152"; do
		rm -rf ic-exp
		# shellcheck disable=SC2086
		"$HT" convert --lttng ic-exp $sel ic.htr >/dev/null 2>&1
		check_case "lttng_initcalls_equal_report_initcalls [$sel]" ic-exp "$ic_want" --initcalls ic.csv
	done
	# The guest's names as report shows them: the escape byte as text.
	if ! no_control_bytes ic-exp ||
		! babeltrace2 ic-exp/host | grep -qF 'name = "evil_\\x1b[31m\"x_init", level = "core"'; then
		fail lttng_initcall_names_escaped "$(babeltrace2 ic-exp/host | grep -a evil | cat -v)"
	else
		pass lttng_initcall_names_escaped
	fi
	if out=$($PY "$CHECK" ic-exp "$XML" 2>&1) ||
		! grep -q "^check_lttng_boot: initcall events of VMs \[7100\], report --initcalls --csv has \[\]" <<<"$out"; then
		fail lttng_boot_checker_refuses_initcalls_it_was_not_told "$out"
	else
		pass lttng_boot_checker_refuses_initcalls_it_was_not_told
	fi
	rm -rf sel-exp
	"$HT" convert --lttng sel-exp -p 1 ic.htr >/dev/null 2>&1
	check_case lttng_initcalls_go_with_their_vm sel-exp "Trace Compass's time graph: 0 VM entries"
	out=$("$HT" convert --lttng nosync-exp ic_nosync.htr 2>&1)
	if grep -q "^hypertrace-bpf: warning: the guest trace of 1 VMs has initcalls but no clock pair .*the host trace's env counts them (initcall_vms_without_clock, initcalls_not_drawn)$" <<<"$out" &&
		grep -q "^	initcall_vms_without_clock = 1;$" nosync-exp/host/metadata && [ ! -e nosync-exp/host/boot_0 ]; then
		pass lttng_initcalls_without_clock_pairs_counted_not_written
	else
		fail lttng_initcalls_without_clock_pairs_counted_not_written "$out; $(ls nosync-exp/host)"
	fi
else
	fail "lttng_initcalls_equal_report_initcalls []" "boottrace_gen failed"
fi

# A trace without boots or initcalls: the host trace as it was before them.
if "$OUTPUT/tests/tools/trace_gen" guest g.htr --rounds 4 >/dev/null && "$HT" convert --lttng g-exp g.htr >/dev/null 2>&1 &&
	[ "$(ls g-exp/host | tr '\n' ' ')" = "channel0_0 channel0_1 channel0_2 channel0_3 metadata statedump_0 " ] &&
	! grep -qE "hypertrace_boot|hypertrace_initcall|initcall" g-exp/host/metadata; then
	pass lttng_trace_without_boots_has_no_boot_stream
else
	fail lttng_trace_without_boots_has_no_boot_stream "$(ls g-exp/host); $(grep -c initcall g-exp/host/metadata) initcall lines"
fi

# Trace Compass's schema: its xmlDefinition.xsd includes five more .xsd files beside it.
XSD_PATH=tmf/org.eclipse.tracecompass.tmf.analysis.xml.core/src/org/eclipse/tracecompass/tmf/analysis/xml/core/module
XSDS="xmlDefinition xmlCommon xmlStateProvider xmlPatternStateProvider xmlView xmlCallstack"
xsd_dir=
mkdir xsd
if [ -n "${TRACECOMPASS_SRC:-}" ] && [ -f "$TRACECOMPASS_SRC/$XSD_PATH/xmlDefinition.xsd" ]; then
	xsd_dir=$TRACECOMPASS_SRC/$XSD_PATH
elif [ -n "${TRACECOMPASS_SRC:-}" ] && git --git-dir="$TRACECOMPASS_SRC" cat-file -e "HEAD:$XSD_PATH/xmlDefinition.xsd" 2>/dev/null; then
	for f in $XSDS; do
		git --git-dir="$TRACECOMPASS_SRC" show "HEAD:$XSD_PATH/$f.xsd" >"xsd/$f.xsd" || break
	done
	xsd_dir=$work/xsd
else
	for d in "$TOP/../shared/reference/tracecompass" "$TOP/.cache/tracecompass"; do
		[ -f "$d/xmlDefinition.xsd" ] && { xsd_dir=$d; break; }
	done
fi
if ! command -v xmllint >/dev/null; then
	skip lttng_boot_analysis_is_valid_trace_compass_xml "xmllint is not installed (libxml2-utils): run 'make deps' as root"
elif [ -z "$xsd_dir" ]; then
	skip lttng_boot_analysis_is_valid_trace_compass_xml "Trace Compass's xmlDefinition.xsd is in none of TRACECOMPASS_SRC (a checkout or git directory of Trace Compass's source), ../shared/reference/tracecompass/, .cache/tracecompass/"
else
	if out=$(xmllint --noout --schema "$xsd_dir/xmlDefinition.xsd" "$XML" 2>&1); then
		pass lttng_boot_analysis_is_valid_trace_compass_xml
	else
		fail lttng_boot_analysis_is_valid_trace_compass_xml "$out"
	fi
	# The schema sees a mistake: a state value of a type Trace Compass does not know.
	sed '0,/<stateValue type="null" \/>/s//<stateValue type="nothing" \/>/' "$XML" >planted.xml
	if ! out=$(xmllint --noout --schema "$xsd_dir/xmlDefinition.xsd" planted.xml 2>&1) && grep -q "nothing" <<<"$out"; then
		pass lttng_boot_schema_refuses_a_planted_mistake
	else
		fail lttng_boot_schema_refuses_a_planted_mistake "$out"
	fi
fi

suite_exit
