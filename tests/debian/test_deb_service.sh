#!/usr/bin/env bash
# The exporter service as the hypertrace-bpf package ships it, under a real
# systemd: the package is installed with apt into a Debian 13 root that has
# systemd (tests/service/systemd_root.sh) while no systemd runs there, as an
# installer does, and the root is then booted with systemd-nspawn. The unit
# is installed and disabled, installing started nothing, its settings file
# /etc/default/hypertrace-exporter is a conffile and the Prometheus rules
# are in place; once the administrator sets a port (a drop-in for
# hypertrace-exporter.socket), `systemctl enable --now hypertrace-exporter`
# enables the socket too and serves /metrics within 5 s, and `systemctl
# stop` ends it with status 0. An upgrade from a package without the socket
# unit (the service enabled, its socket not) enables the socket.
# Its root (mmdebstrap, shared with tests/service; --prepare makes only
# that) is made ahead, beside the host's serial suites: a download.
# tests/run: prepare ahead with --prepare
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/service/systemd_root.sh
source "$TOP/tests/service/systemd_root.sh"
cd "$TOP" || exit 1
SUITE=trixie
if [ "${1:-}" = --prepare ]; then
	[ "$(id -u)" -eq 0 ] || exit 0
	sdroot_tar $SUITE
	exit
fi
UNIT=hypertrace-exporter.service

if [ "$(id -u)" -ne 0 ]; then
	skip deb_service "needs root (systemd-nspawn, BPF)"
	exit 0
fi
for tool in systemd-nspawn nsenter curl; do
	command -v "$tool" >/dev/null || { fail deb_service "$tool is missing: run tests/install-deps.sh (make deps)"; suite_exit; }
done
version=$(dpkg-parsechangelog -l debian/changelog -S Version)
deb=$OUTPUT/deb/hypertrace-bpf_${version}_amd64.deb
if [ ! -s "$deb" ] && ! make deb >"$OUTPUT/deb.log" 2>&1; then
	fail deb_service "make deb failed: $(tail -n 3 "$OUTPUT/deb.log")"
	suite_exit
fi

work=$(mktemp -d /tmp/ht-deb-service.XXXXXX)
root=$work/root
cleanup() {
	sdroot_halt
	rm -rf "$work"
}
trap cleanup EXIT
if ! sdroot_unpack $SUITE "$root"; then
	fail deb_service_root "$SD_ERR"
	suite_exit
fi

# Installed as on a machine being set up: systemd does not run in the root.
cp "$deb" "$root/srv/"
if systemd-nspawn --register=no --keep-unit --quiet -D "$root" --setenv=DEBIAN_FRONTEND=noninteractive \
	sh -c "apt-get update -qq && apt-get install -y -qq --no-install-recommends /srv/$(basename "$deb")" \
	>"$work/install.log" 2>&1 </dev/null; then
	pass deb_service_package_installs_with_apt
else
	fail deb_service_package_installs_with_apt "$(tail -n 5 "$work/install.log" | tr '\n' ' ')"
	suite_exit
fi
rm -f "$root/srv/$(basename "$deb")"

conffiles=$(chroot "$root" dpkg-query -W -f='${Conffiles}' hypertrace-bpf)
if grep -q '^ /etc/default/hypertrace-exporter ' <<<"$conffiles" &&
	[ -s "$root/usr/share/hypertrace-bpf/prometheus/hypertrace.rules.yml" ]; then
	pass deb_service_settings_file_is_a_conffile_rules_installed
else
	fail deb_service_settings_file_is_a_conffile_rules_installed "conffiles: $(tr '\n' ' ' <<<"$conffiles")"
fi

mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing
if ! sdroot_boot "$root" "$work/console.log"; then
	skip deb_service_under_systemd "$SD_ERR; what is proven instead: the package's files above"
	suite_exit
fi
prop() { sd_in_ct systemctl show -P "$1" $UNIT; }
enabled=$(sd_in_ct systemctl is-enabled $UNIT 2>&1)
socket_enabled=$(sd_in_ct systemctl is-enabled hypertrace-exporter.socket 2>&1)
socket_state=$(sd_in_ct systemctl show -P ActiveState hypertrace-exporter.socket)
if [ "$enabled" = disabled ] && [ "$(prop ActiveState)" = inactive ] && [ "$(prop ExecMainPID)" = 0 ] &&
	[[ $(prop FragmentPath) == */lib/systemd/system/$UNIT ]] &&
	[ "$socket_enabled" = disabled ] && [ "$socket_state" = inactive ]; then
	pass deb_service_unit_installed_disabled_not_started
else
	fail deb_service_unit_installed_disabled_not_started "is-enabled '$enabled', state $(prop ActiveState), main pid $(prop ExecMainPID), unit file '$(prop FragmentPath)'; socket '$socket_enabled', $socket_state"
fi

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p "$root/etc/systemd/system/hypertrace-exporter.socket.d"
printf '[Socket]\nListenStream=\nListenStream=127.0.0.1:%s\nListenStream=[::1]:%s\n' "$port" "$port" \
	>"$root/etc/systemd/system/hypertrace-exporter.socket.d/listen.conf"
sd_in_ct systemctl daemon-reload
sd_in_ct systemctl enable --now $UNIT >"$work/enable.log" 2>&1
answered=
for _ in $(seq 50); do
	if curl -sf --max-time 2 -o "$work/metrics.txt" "http://127.0.0.1:$port/metrics" &&
		grep -q '^hypertrace_build_info{version="'"${version%%-*}"'"} 1$' "$work/metrics.txt"; then
		answered=1
		break
	fi
	sleep 0.1
done
if [ -n "$answered" ] && [ "$(sd_in_ct systemctl is-enabled $UNIT 2>&1)" = enabled ] &&
	[ "$(sd_in_ct systemctl is-enabled hypertrace-exporter.socket 2>&1)" = enabled ]; then
	pass deb_service_enable_now_serves_metrics_within_5s
else
	fail deb_service_enable_now_serves_metrics_within_5s "state $(prop ActiveState): $(tr '\n' ' ' <"$work/enable.log") $(sd_in_ct journalctl -u $UNIT --no-pager -n 5 -o cat | tr '\n' ' ')"
fi

# Stopped once tracing runs (it then holds only CAP_BPF): SIGTERM before the
# recorder's handlers are in place ends it by the signal.
for _ in $(seq 50); do
	[ "$(sd_in_ct awk '/^CapEff/ { print $2 }' /proc/"$(prop MainPID)"/status 2>/dev/null)" = 0000008000000000 ] && break
	sleep 0.1
done
sd_in_ct systemctl stop $UNIT
if [ "$(prop ActiveState)" = inactive ] && [ "$(prop Result)" = success ] && [ "$(prop ExecMainStatus)" = 0 ]; then
	pass deb_service_stop_exits_0
else
	fail deb_service_stop_exits_0 "state $(prop ActiveState), result $(prop Result), status $(prop ExecMainStatus)"
fi

# An upgrade from a package without the socket unit: the service enabled,
# its socket not (what such a package left); the new postinst enables the
# socket, which holds the port at boot and through restarts.
sd_in_ct systemctl disable hypertrace-exporter.socket >/dev/null 2>&1
before=$(sd_in_ct systemctl is-enabled hypertrace-exporter.socket 2>&1)
sd_in_ct env DPKG_MAINTSCRIPT_PACKAGE=hypertrace-bpf DPKG_MAINTSCRIPT_NAME=postinst \
	/var/lib/dpkg/info/hypertrace-bpf.postinst configure 0.0.9 >"$work/postinst.log" 2>&1
if [ "$before" = disabled ] && [ "$(sd_in_ct systemctl is-enabled $UNIT 2>&1)" = enabled ] &&
	[ "$(sd_in_ct systemctl is-enabled hypertrace-exporter.socket 2>&1)" = enabled ]; then
	pass deb_service_upgrade_enables_the_socket_of_an_enabled_service
else
	fail deb_service_upgrade_enables_the_socket_of_an_enabled_service "socket before: $before, after: $(sd_in_ct systemctl is-enabled hypertrace-exporter.socket 2>&1); $(tr '\n' ' ' <"$work/postinst.log")"
fi
suite_exit
