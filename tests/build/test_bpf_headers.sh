#!/usr/bin/env bash
# Each BPF header compiles on its own: it includes the layer under it
# (maps.bpf.h <- helpers.bpf.h <- exit_series.bpf.h <- vcpu_account.bpf.h
# <- exit_causes.bpf.h <- exits.bpf.h <- fuse.bpf.h), so none
# depends on names that only the file including it happens to define first.
# Compiled as the object is (clang -target bpf, the build's warnings), less
# -Wunused-function: a layer's subprograms are called from the layers above.
# The check is shown to fail on a header that uses a name from above it.
# Compiles headers, with no port, no BPF program and no verdict a busy
# machine changes: it runs beside the nested-machine suites.
# tests/run: alongside the nested-machine suites
# shellcheck source=tests/lib.sh
source "$(dirname "$0")/../lib.sh"
cd "$TOP" || exit 1

CLANG=${CLANG:-clang}
if ! command -v "$CLANG" >/dev/null; then
	skip bpf_headers_compile_alone "no $CLANG"
	suite_exit
fi

# compile_alone DIR HEADER: the header as the only line of a translation unit.
compile_alone() {
	echo "#include \"$2\"" | "$CLANG" -target bpf -mcpu=v3 -g -O2 -D__TARGET_ARCH_x86 \
		-Wall -Wextra -Werror -Wno-unused-function -I. -Iinclude -I"$1" -fsyntax-only -x c - 2>&1
}

failed=""
for h in src/bpf/*.bpf.h; do
	out=$(compile_alone src/bpf "$(basename "$h")") || failed+="$h: $(echo "$out" | grep -m1 error); "
done
if [ -z "$failed" ]; then
	pass bpf_headers_compile_alone
else
	fail bpf_headers_compile_alone "$failed"
fi

# The check itself: helpers.bpf.h using a name of exits.bpf.h is refused.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp src/bpf/*.h "$work/"
printf 'static __always_inline void planted(void) { exit_slot(0); }\n' >>"$work/helpers.bpf.h"
if ! compile_alone "$work" helpers.bpf.h >/dev/null; then
	pass bpf_header_check_refuses_a_name_from_above
else
	fail bpf_header_check_refuses_a_name_from_above "a planted use of exit_slot in helpers.bpf.h compiled"
fi
suite_exit
