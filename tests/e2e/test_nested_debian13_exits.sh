#!/usr/bin/env bash
# tests/e2e/test_nested_exits.sh on a Debian 13 host: the nested machine
# boots Debian 13's kernel (6.12) and runs its KVM guests with Debian 13's
# QEMU 10 (NESTED_KERNEL_DIST and NESTED_VMM_DIST, tests/e2e/nested.sh:
# both come through a private apt configuration; the emulator stays this
# machine's QEMU). Every check of that suite, each named debian13_exits_*:
# the causes, counts and times of the exits against perf, the vCPU account
# against schedstat, perf's task-clock and the scheduler's own events, the
# switch records, the Perfetto export, top.
#
# Needs `make static` and, on the first run, Debian's archive (the kernel
# package and QEMU 10 with its libraries, about 150 MB, into the nested
# cache). HT_E2E=0 skips it.
# tests/run: prepare ahead with --prepare
export NESTED_KERNEL_DIST=trixie NESTED_VMM_DIST=trixie CHECK_PREFIX=debian13_exits_
exec bash "$(dirname "$0")/test_nested_exits.sh" "$@"
