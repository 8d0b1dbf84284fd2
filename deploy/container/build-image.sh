#!/usr/bin/env bash
# Builds the OCI image of hypertrace-bpf FROM scratch with buildah: the
# static binary, stripped, as its only file; nothing is pulled. Writes the
# image as an OCI archive (load it with `podman load -i`) and the seccomp
# profile it runs with (seccomp-profile.py). `make image` calls it.
#   build-image.sh STATIC_BINARY OUTPUT_DIR
# The image goes into a private container storage under OUTPUT_DIR/storage
# (vfs driver: works where overlay mounts do not, e.g. inside a container),
# tagged localhost/hypertrace-bpf:VERSION.
set -euo pipefail
bin=$1 out=$2
here=$(cd "$(dirname "$0")" && pwd)
command -v buildah >/dev/null || { echo "make image: buildah is missing: apt-get install buildah (or run make deps)" >&2; exit 1; }
mkdir -p "$out"
storage=(--root "$out/storage" --runroot "$out/run" --storage-driver vfs)
version=$("$bin" -V | awk '{ print $2 }')
image=localhost/hypertrace-bpf:$version
strip -o "$out/hypertrace-bpf" "$bin"
ctr=$(buildah "${storage[@]}" from scratch)
trap 'buildah "${storage[@]}" rm "$ctr" >/dev/null 2>&1 || true' EXIT
buildah "${storage[@]}" copy --chmod 0755 "$ctr" "$out/hypertrace-bpf" /usr/bin/hypertrace-bpf >/dev/null
# The fleet exporter by default; any other command line replaces CMD.
buildah "${storage[@]}" config \
	--entrypoint '["/usr/bin/hypertrace-bpf"]' \
	--cmd 'record --no-file -q --metrics 0.0.0.0:9470' \
	--port 9470/tcp \
	--label org.opencontainers.image.title=hypertrace-bpf \
	--label org.opencontainers.image.version="$version" \
	--label org.opencontainers.image.description="KVM hypercall tracer: Prometheus exporter of hypercall latencies" \
	"$ctr"
buildah "${storage[@]}" commit -q --format oci --rm "$ctr" "$image" >/dev/null
trap - EXIT
rm -f "$out/hypertrace-bpf.oci.tar"
buildah "${storage[@]}" push -q "$image" "oci-archive:$out/hypertrace-bpf.oci.tar:$image"
python3 "$here/seccomp-profile.py" /usr/share/containers/seccomp.json "$out/seccomp.json"
echo "$image: $out/hypertrace-bpf.oci.tar ($(du -k "$out/hypertrace-bpf.oci.tar" | cut -f1) KiB), seccomp profile $out/seccomp.json"
