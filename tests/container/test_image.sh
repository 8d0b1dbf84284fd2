#!/usr/bin/env bash
# `make image`: the OCI image built FROM scratch with buildah (nothing
# pulled), read back as the runtime sees it: its one layer holds only the
# static binary (at most 5 MB), its entrypoint and default command are the
# exporter's. Then the image runs under podman exactly as the README says
# (--pid=host, --read-only, --cap-drop=all plus CAP_BPF, CAP_PERFMON and
# CAP_DAC_READ_SEARCH, the seccomp profile `make image` writes, btf and
# tracefs mounted read-only, never --privileged): `record --no-file
# --metrics` serves /metrics, read by curl and `promtool check metrics`.
# Where podman cannot run a container here, the test says so, and runs the
# binary taken out of the image with the same three capabilities (setpriv)
# instead. The Kubernetes DaemonSet is checked to carry the same settings.
# shellcheck source=../lib.sh
source "$(dirname "$0")/../lib.sh"

IMG_DIR=$OUTPUT/image
MAX_BYTES=$((5 * 1024 * 1024))
CAPS=CAP_BPF,CAP_PERFMON,CAP_DAC_READ_SEARCH

if [ "$(id -u)" -ne 0 ]; then
	skip container_image "building and running the image needs root"
	exit 0
fi
for tool in buildah podman curl promtool; do
	if ! command -v $tool >/dev/null; then
		fail container_image "$tool is missing: run tests/install-deps.sh (make deps)"
		suite_exit
	fi
done
work=$(mktemp -d /tmp/ht-image.XXXXXX)
trap 'rm -rf "$work"' EXIT

if ! make -s -C "$TOP" image >"$work/build.log" 2>&1; then
	fail image_builds "$(tail -n 5 "$work/build.log")"
	suite_exit
fi
version=$("$OUTPUT/static/hypertrace-bpf" -V | awk '{ print $2 }')
image=localhost/hypertrace-bpf:$version
storage=(--root "$IMG_DIR/storage" --runroot "$IMG_DIR/run" --storage-driver vfs)
pass image_builds_from_scratch

# The image as the runtime reads it: from the OCI archive, not from the build's storage.
mkdir "$work/oci" && tar -C "$work/oci" -xf "$IMG_DIR/hypertrace-bpf.oci.tar"
python3 - "$work/oci" "$MAX_BYTES" >"$work/inspect.log" 2>&1 <<'PY'
import json, os, sys, tarfile
root, max_bytes = sys.argv[1], int(sys.argv[2])
def blob(digest):
    return os.path.join(root, "blobs", *digest.split(":"))
index = json.load(open(os.path.join(root, "index.json")))
manifest = json.load(open(blob(index["manifests"][0]["digest"])))
config = json.load(open(blob(manifest["config"]["digest"])))
layers = manifest["layers"]
assert len(layers) == 1, f"{len(layers)} layers, want 1 (FROM scratch + one copy)"
with tarfile.open(blob(layers[0]["digest"])) as t:
    files = [m for m in t.getmembers() if m.isfile()]
    names = sorted(m.name.lstrip("./") for m in files)
    assert names == ["usr/bin/hypertrace-bpf"], f"files in the layer: {names}"
    size = files[0].size
    assert files[0].mode & 0o111, "binary not executable"
    assert size <= max_bytes, f"binary is {size} bytes, more than {max_bytes}"
cfg = config["config"]
assert cfg["Entrypoint"] == ["/usr/bin/hypertrace-bpf"], cfg["Entrypoint"]
assert cfg["Cmd"] == ["record", "--no-file", "-q", "--metrics", "0.0.0.0:9470"], cfg["Cmd"]
assert "9470/tcp" in cfg.get("ExposedPorts", {}), cfg.get("ExposedPorts")
assert not cfg.get("User"), "runs as root of the container: capabilities come from --cap-add"
print(f"binary {size} bytes, layer {layers[0]['size']} bytes compressed")
PY
if [ $? -eq 0 ]; then
	pass "image_one_layer_static_binary_only_$(awk '{ print $2 }' "$work/inspect.log")_bytes_at_most_5MB"
else
	fail image_one_layer_static_binary_only "$(tail -n 3 "$work/inspect.log")"
fi
# The binary in the image is static: nothing else is in it to load.
tar -C "$work" -xf "$(ls -S "$work"/oci/blobs/sha256/* | head -1)" usr/bin/hypertrace-bpf 2>/dev/null ||
	tar -C "$work" -xzf "$(ls -S "$work"/oci/blobs/sha256/* | head -1)" usr/bin/hypertrace-bpf
if file "$work/usr/bin/hypertrace-bpf" | grep -q 'statically linked' && "$work/usr/bin/hypertrace-bpf" -V >/dev/null; then
	pass image_binary_static_and_runs
else
	fail image_binary_static_and_runs "$(file "$work/usr/bin/hypertrace-bpf")"
fi

# The DaemonSet: the settings of the podman line.
if python3 - "$TOP/deploy/kubernetes/hypertrace-exporter.yaml" <<'PY'
import sys, yaml
d = yaml.safe_load(open(sys.argv[1]))
assert d["kind"] == "DaemonSet"
spec = d["spec"]["template"]["spec"]
c = spec["containers"][0]
sc = c["securityContext"]
assert spec["hostPID"] is True
assert sc["privileged"] is False and sc["allowPrivilegeEscalation"] is False
assert sc["readOnlyRootFilesystem"] is True
assert sc["capabilities"] == {"drop": ["ALL"], "add": ["BPF", "PERFMON", "DAC_READ_SEARCH"]}, sc["capabilities"]
mounts = {m["mountPath"]: m.get("readOnly") for m in c["volumeMounts"]}
assert mounts == {"/sys/kernel/btf": True, "/sys/kernel/tracing": True}, mounts
assert c["args"][:3] == ["record", "--no-file", "-q"]
PY
then
	pass daemonset_host_pid_three_capabilities_read_only_not_privileged
else
	fail daemonset_host_pid_three_capabilities_read_only_not_privileged "see the assertion above"
fi

mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# The README's run line. Two additions for sandboxes, harmless elsewhere:
# limits no higher than this shell's (podman raises NOFILE and NPROC by
# default, which needs CAP_SYS_RESOURCE), and cgroupfs (no systemd here).
run_args=(--rm --pid=host --network=host --read-only --cap-drop=all --cap-add=$CAPS
	--security-opt seccomp="$IMG_DIR/seccomp.json"
	-v /sys/kernel/btf:/sys/kernel/btf:ro -v /sys/kernel/tracing:/sys/kernel/tracing:ro
	--ulimit nofile=1024:1024 --ulimit nproc=1024:1024)
podman_run() {
	podman "${storage[@]}" --cgroup-manager=cgroupfs run "${run_args[@]}" "$image" \
		record --no-file -q --metrics "127.0.0.1:$port" -d 6 >"$work/run.log" 2>&1 &
	run_pid=$!
}
served() {
	for _ in $(seq 50); do
		curl -sf --max-time 2 -o "$work/metrics.txt" "http://127.0.0.1:$port/metrics" &&
			grep -q '^hypertrace_build_info{' "$work/metrics.txt" && return 0
		kill -0 "$run_pid" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}
podman_run
ran=podman
if ! served; then
	wait "$run_pid"
	# crun refuses a host with cgroup v1 controllers and a v2 hierarchy at once
	# ("hybrid mode"): without the v2 one in a mount namespace of its own, it runs.
	if grep -q 'hybrid mode' "$work/run.log" && mountpoint -q /sys/fs/cgroup/unified; then
		unshare -m --propagation private bash -c "umount /sys/fs/cgroup/unified && exec podman ${storage[*]} --cgroup-manager=cgroupfs run ${run_args[*]} $image record --no-file -q --metrics 127.0.0.1:$port -d 6" >"$work/run.log" 2>&1 &
		run_pid=$!
		ran="podman (cgroup v1 only)"
		served || ran=
	else
		ran=
	fi
fi
if [ -n "$ran" ]; then
	wait "$run_pid"
	st=$?
	if [ $st -eq 0 ] && promtool check metrics <"$work/metrics.txt" >"$work/promtool.log" 2>&1 &&
		grep -q '^hypertrace-bpf: 0 hypercalls, 0 dropped' "$work/run.log"; then
		pass "image_runs_record_metrics_in_$(tr ' ()' '_' <<<"$ran" | tr -s _ | sed 's/_$//')_with_three_capabilities"
	else
		fail image_runs_record_metrics_with_three_capabilities "status $st; $(cat "$work/run.log" "$work/promtool.log" | head -n 5 | tr '\n' ' ')"
	fi
else
	skip image_runs_in_podman "podman cannot run a container here: $(tail -n 2 "$work/run.log" | tr '\n' ' '); proven instead: the image's layer and config above, and its binary run with the same capabilities below"
	setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all,+bpf,+perfmon,+dac_read_search \
		--ambient-caps=-all,+bpf,+perfmon,+dac_read_search --bounding-set=-all,+bpf,+perfmon,+dac_read_search \
		"$work/usr/bin/hypertrace-bpf" record --no-file -q --metrics "127.0.0.1:$port" -d 6 >"$work/run.log" 2>&1 &
	run_pid=$!
	if served && wait "$run_pid" && promtool check metrics <"$work/metrics.txt" >/dev/null 2>&1; then
		pass image_binary_runs_record_metrics_with_three_capabilities
	else
		wait "$run_pid"
		fail image_binary_runs_record_metrics_with_three_capabilities "$(head -n 3 "$work/run.log")"
	fi
fi
suite_exit
