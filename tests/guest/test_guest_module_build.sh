#!/usr/bin/env bash
# The hypertracing guest module builds out of tree against the guest kernel's
# own headers (Debian's linux-headers for the kernel the nested tests boot),
# with no warning and no unresolved symbol, for that exact kernel release,
# with the documented parameters. Loading it is tested in the nested machine.
source "$(dirname "$0")/../lib.sh"
source "$TOP/tests/guest_kernel.sh"
cd "$TOP" || exit 1

expect_run guest_module_without_kdir_is_a_usage_error 2 'give KDIR=' -- make -s guest-module KDIR=
expect_run guest_module_with_a_wrong_kdir_is_a_usage_error 2 'has no Makefile' -- make -s guest-module KDIR=/nonexistent

if ! guest_kernel_fetch; then
	fail guest_module_headers_fetched "$GK_ERR"
	suite_exit
fi
log=$(mktemp)
trap 'rm -f "$log"' EXIT
ko=$OUTPUT/guest/module/hypertrace_guest.ko
rm -f "$ko"
if ! make guest-module KDIR="$GK_KDIR" V=1 >"$log" 2>&1; then
	fail guest_module_builds_against_guest_headers "make guest-module failed: $(grep -E 'error|Error' "$log" | head -n 3 | tr '\n' ' ')"
	suite_exit
fi
if [ ! -s "$ko" ]; then
	fail guest_module_builds_against_guest_headers "no $ko after make guest-module"
	suite_exit
fi
pass guest_module_builds_against_guest_headers

if grep -E 'warning:|undefined!' "$log" >/dev/null; then
	fail guest_module_builds_without_warnings "$(grep -E 'warning:|undefined!' "$log" | head -n 3 | tr '\n' ' ')"
else
	pass guest_module_builds_without_warnings
fi

modinfo=$(objcopy -O binary --only-section=.modinfo "$ko" /dev/stdout | tr '\0' '\n')
vermagic=$(sed -n 's/^vermagic=\([^ ]*\).*/\1/p' <<<"$modinfo")
if [ "$vermagic" = "$GK_RELEASE" ]; then
	pass guest_module_vermagic_is_the_guest_release
else
	fail guest_module_vermagic_is_the_guest_release "vermagic '$vermagic', want '$GK_RELEASE'"
fi
params=$(sed -n 's/^parmtype=\([^:]*\):.*/\1/p' <<<"$modinfo" | sort | tr '\n' ' ')
if [ "$params" = "clock_ms functions irq maxactive sched_switch sched_wakeup " ]; then
	pass guest_module_has_the_documented_parameters
else
	fail guest_module_has_the_documented_parameters "parameters '$params'"
fi
# GPL-compatible: tracepoint_probe_register and register_kretprobe are GPL-only exports.
if grep -qx 'license=Dual BSD/GPL' <<<"$modinfo"; then
	pass guest_module_license_allows_gpl_symbols
else
	fail guest_module_license_allows_gpl_symbols "$(grep '^license=' <<<"$modinfo")"
fi
suite_exit
