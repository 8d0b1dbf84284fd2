#!/usr/bin/env bash
# deploy/prometheus/hypertrace.rules.yml as Prometheus reads it: `promtool
# check rules` (syntax, names), then `promtool test rules` on
# rules_test.yml: input series as record --metrics exports them, the
# recorded per-VM rates and p50/p99 latencies, and each alert pending,
# firing or silent at the expected times with its labels and text.
# shellcheck source=../lib.sh
source "$(dirname "$0")/../lib.sh"

RULES=$TOP/deploy/prometheus/hypertrace.rules.yml
if ! command -v promtool >/dev/null; then
	fail prometheus_rules "promtool is missing: run tests/install-deps.sh (make deps)"
	suite_exit
fi
if out=$(promtool check rules "$RULES" 2>&1); then
	pass "promtool_check_rules_$(grep -o '[0-9]* rules found' <<<"$out" | tr ' ' '_')"
else
	fail promtool_check_rules "$out"
fi
if out=$(cd "$TOP/tests/prometheus" && promtool test rules rules_test.yml 2>&1); then
	pass promtool_test_rules_recorded_values_and_alerts
else
	fail promtool_test_rules_recorded_values_and_alerts "$(head -c 2000 <<<"$out")"
fi
suite_exit
