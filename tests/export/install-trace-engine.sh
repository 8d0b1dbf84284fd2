#!/usr/bin/env bash
# Installs Chrome DevTools' trace engine (@paulirish/trace_engine, the version
# pinned by tests/export/trace-engine/package-lock.json) from npm into
# .cache/trace-engine, where the Chrome trace export test finds it. Does nothing
# if that version is there already. Needs node and npm (tests/install-deps.sh).
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
src=$top/tests/export/trace-engine
dest=$top/.cache/trace-engine
if [ -f "$dest/node_modules/@paulirish/trace_engine/package.json" ] &&
	cmp -s "$src/package-lock.json" "$dest/package-lock.json"; then
	exit 0
fi
if ! command -v npm >/dev/null; then
	echo "hypertrace-bpf: npm is missing: run 'make deps' as root to install nodejs and npm" >&2
	exit 1
fi
mkdir -p "$dest"
cp "$src/package.json" "$src/package-lock.json" "$dest/"
cd "$dest"
npm ci --no-audit --no-fund --loglevel=error >/dev/null
