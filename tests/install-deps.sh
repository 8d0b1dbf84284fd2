#!/usr/bin/env bash
# Installs the Debian 12 packages hypertrace-bpf needs to build and test, if
# missing, then the npm package the Chrome trace export test reads its output
# with (tests/export/install-trace-engine.sh, into .cache/). Needs root
# (apt-get). Guest kernel, busybox and qemu for the nested end-to-end test are
# NOT installed: tests/e2e fetches them into .cache/.
# libclang-rt-14-dev holds libFuzzer (tests/fuzz); time is GNU time (peak RSS).
set -eu
cd "$(dirname "$0")/.."
# prometheus and curl: the real Prometheus server that tests/prometheus scrapes record --metrics with.
# babeltrace2, python3-bt2: the CTF export test reads the export with them.
pkgs=(make gcc clang llvm libbpf-dev bpftool libelf-dev zlib1g-dev tmux python3 util-linux prometheus curl time
	libclang-rt-14-dev e2fsprogs babeltrace2 python3-bt2)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
# node and npm for the Chrome trace export test: Debian's, unless some other node is installed.
command -v node >/dev/null || missing+=(nodejs)
command -v npm >/dev/null || missing+=(npm)
if [ ${#missing[@]} -gt 0 ]; then
	if [ "$(id -u)" -ne 0 ]; then
		echo "hypertrace-bpf: missing packages: ${missing[*]}; run as root (sudo) so they can be installed with apt-get" >&2
		exit 1
	fi
	echo "installing: ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
	# The tests start their own Prometheus (private config, data and port on
	# 127.0.0.1). The package's service would scrape this host on :9090 for
	# nothing: if this install brought it and systemd started it, stop it.
	if [[ " ${missing[*]} " == *" prometheus "* ]] && [ -d /run/systemd/system ]; then
		systemctl disable --now prometheus.service >/dev/null 2>&1 || true
	fi
fi
tests/export/install-trace-engine.sh
