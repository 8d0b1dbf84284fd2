#!/usr/bin/env bash
# deploy/systemd/hypertrace-exporter.service read by systemd's own tools on
# this host (no running systemd needed): `systemd-analyze security
# --offline=yes` must rate its exposure at 2.5 or less, and the settings the
# service relies on must be there as systemd parses them: exactly the three
# capabilities, a user of its own, /proc left visible (VM names are read
# there), the settings file, restart on failure, no socket of its own. And
# its socket unit (systemd-analyze rates services only): the port on both
# loopbacks by default (no IPv6 twin left to another user), passed to the
# service by name, which requires it; no start limit that would end in
# systemd closing the socket.
# shellcheck source=../lib.sh
source "$(dirname "$0")/../lib.sh"

UNIT=$TOP/deploy/systemd/hypertrace-exporter.service
SOCKET=$TOP/deploy/systemd/hypertrace-exporter.socket
MAX_EXPOSURE=2.5

if ! command -v systemd-analyze >/dev/null; then
	fail unit_security "systemd-analyze is missing: run tests/install-deps.sh (make deps)"
	suite_exit
fi

out=$(systemd-analyze security --offline=yes "$UNIT" 2>&1)
exposure=$(sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p' <<<"$out")
if [ -n "$exposure" ] && awk -v e="$exposure" -v m="$MAX_EXPOSURE" 'BEGIN { exit !(e <= m) }'; then
	pass "unit_exposure_${exposure}_at_most_$MAX_EXPOSURE"
else
	fail unit_exposure_at_most_$MAX_EXPOSURE "systemd-analyze says '${exposure:-nothing}': $(tail -n 3 <<<"$out")"
fi

# What systemd makes of the file, one setting per line (comments and continuation as systemd reads them).
setting() { sed -n "s/^$1=//p" "$UNIT"; }
words() { tr ' ' '\n' | sed '/^$/d' | sort | tr '\n' ' '; }
want_caps="CAP_BPF CAP_DAC_READ_SEARCH CAP_PERFMON "
if [ "$(setting CapabilityBoundingSet | words)" = "$want_caps" ] &&
	[ "$(setting AmbientCapabilities | words)" = "$want_caps" ]; then
	pass unit_capabilities_bpf_perfmon_dac_read_search_only
else
	fail unit_capabilities_bpf_perfmon_dac_read_search_only "bounding: $(setting CapabilityBoundingSet); ambient: $(setting AmbientCapabilities)"
fi
# systemd-analyze's own table: the sandboxing lines the service must pass.
missing=
for check in 'User=/DynamicUser=' 'NoNewPrivileges=' 'ProtectSystem=' 'ProtectHome=' 'PrivateTmp=' \
	'RestrictAddressFamilies=~AF_UNIX' 'RestrictAddressFamilies=~AF_NETLINK' 'SystemCallFilter=~@mount' \
	'SystemCallFilter=~@module' 'UMask=' 'CapabilityBoundingSet=~CAP_SYS_ADMIN' 'CapabilityBoundingSet=~CAP_SYS_PTRACE'; do
	grep -Eq "^✓ ${check//[\/\~]/.}" <<<"$out" || missing+=" $check"
done
if [ -z "$missing" ]; then
	pass unit_sandboxing_as_systemd_analyze_reads_it
else
	fail unit_sandboxing_as_systemd_analyze_reads_it "not passed:$missing"
fi
if grep -Eq '^ProtectProc=invisible|^ProcSubset=pid' "$UNIT"; then
	fail unit_proc_of_vms_visible "QEMU's /proc entries must stay visible (VM names): $(grep -E '^Proc' "$UNIT")"
else
	pass unit_proc_of_vms_visible
fi
if [ "$(setting EnvironmentFile)" = "-/etc/default/hypertrace-exporter" ] && [ "$(setting Restart)" = on-failure ] &&
	grep -q '^ExecStart=.* record --no-file -q --metrics systemd $HYPERTRACE_OPTIONS$' "$UNIT"; then
	pass unit_settings_file_and_restart
else
	fail unit_settings_file_and_restart "$(grep -E '^(EnvironmentFile|Restart|ExecStart)=' "$UNIT" | tr '\n' ' ')"
fi
# Restarted however often it fails: no start limit (its default ends in
# start-limit-hit, and systemd then closes the socket), in [Unit] where
# systemd reads it, and a pause of seconds between restarts.
in_section() { sed -n "/^\[$1\]/,/^\[/{s/^$2=//p}" "$UNIT"; }
restart_sec=$(setting RestartSec)
if [ "$(in_section Unit StartLimitIntervalSec)" = 0 ] && [ -z "$(in_section Service StartLimitIntervalSec)" ] &&
	[ "${restart_sec%s}" -ge 5 ] 2>/dev/null; then
	pass unit_restarts_without_start_limit
else
	fail unit_restarts_without_start_limit "$(grep -E '^(StartLimit[A-Za-z]*|RestartSec)=' "$UNIT" | tr '\n' ' ')"
fi
# Every variable the unit reads is documented in the settings file, and only those.
used=$(grep -o '\${\?HYPERTRACE_[A-Z_]*' "$UNIT" | tr -d '${' | sort -u | tr '\n' ' ')
documented=$(grep -o '^#\?HYPERTRACE_[A-Z_]*=' "$TOP/deploy/systemd/hypertrace-exporter.default" | tr -d '#=' | sort -u | tr '\n' ' ')
if [ -n "$used" ] && [ "$used" = "$documented" ]; then
	pass unit_variables_documented_in_settings_file
else
	fail unit_variables_documented_in_settings_file "unit reads '$used', settings file documents '$documented'"
fi

# The port is systemd's: the service takes the socket it passes and can open none itself.
socket_setting() { sed -n "s/^$1=//p" "$SOCKET"; }
fd_name=$(sed -n 's/^#define HT_METRICS_FD_NAME "\(.*\)"$/\1/p' "$TOP/src/user/metrics/socket_activation.h")
if [ "$(socket_setting ListenStream | tr '\n' ' ')" = "127.0.0.1:9470 [::1]:9470 " ] && [ "$(socket_setting Accept)" = no ] &&
	[ -n "$fd_name" ] && [ "$(socket_setting FileDescriptorName)" = "$fd_name" ] &&
	[ "$(socket_setting ReusePort)" = no ] && [ "$(socket_setting WantedBy)" = sockets.target ]; then
	pass unit_socket_both_loopbacks_9470_named_for_record
else
	fail unit_socket_both_loopbacks_9470_named_for_record "$(grep -E '^[A-Z]' "$SOCKET" | tr '\n' ' ') (record looks for '$fd_name')"
fi
if [ "$(setting Requires)" = hypertrace-exporter.socket ] && setting After | grep -qw hypertrace-exporter.socket &&
	[ "$(setting Also)" = hypertrace-exporter.socket ] && [ "$(setting RestrictAddressFamilies)" = none ]; then
	pass unit_service_requires_its_socket_opens_none
else
	fail unit_service_requires_its_socket_opens_none "$(grep -E '^(Requires|After|Also|RestrictAddressFamilies)=' "$UNIT" | tr '\n' ' ')"
fi
# The package installs the same files.
if [ "$(readlink "$TOP/debian/hypertrace-bpf.hypertrace-exporter.service")" = ../deploy/systemd/hypertrace-exporter.service ] &&
	[ "$(readlink "$TOP/debian/hypertrace-bpf.hypertrace-exporter.socket")" = ../deploy/systemd/hypertrace-exporter.socket ]; then
	pass unit_debian_ships_the_same_units
else
	fail unit_debian_ships_the_same_units "$(ls -l "$TOP"/debian/hypertrace-bpf.hypertrace-exporter.* | tr '\n' ' ')"
fi
suite_exit
