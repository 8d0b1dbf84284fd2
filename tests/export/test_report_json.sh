#!/usr/bin/env bash
# report --json keeps 64-bit values exact for JSON readers that hold numbers in
# doubles (JavaScript, jq, most others): a0..a3 and guest_rip are hex strings,
# exit_ns a decimal string. Checked with two real JSON parsers, Python's json
# and node's JSON.parse, on values above 2^53 (kernel addresses).
source "$(dirname "$0")/../lib.sh"

PY=/usr/bin/python3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1

# Records written with the trace file writer: a0 = 0xffffffff81234000 + i, a1 = i, a3 = ~i.
"$OUTPUT/tests/tools/trace_gen" bulk b.htr 100 || { fail report_json_input "trace_gen bulk failed"; suite_exit; }
"$HT" report --json b.htr >b.jsonl
"$HT" report --csv b.htr >b.csv

if out=$($PY - <<'PY' 2>&1
import csv, json
rows = list(csv.DictReader(open("b.csv")))
objs = [json.loads(line) for line in open("b.jsonl")]
assert len(objs) == len(rows) == 100, (len(objs), len(rows))
for i, (o, r) in enumerate(zip(objs, rows)):
    a0 = int(o["a0"], 16)
    assert a0 == 0xffffffff81234000 + i and a0 == int(r["a0"], 16), (i, o["a0"])
    # The value is one a double cannot hold: as a JSON number it would have changed.
    assert float(a0) != a0 or a0 % 2048 == 0, a0
    assert int(o["a3"], 16) == (~i) & 0xffffffffffffffff
    assert int(o["guest_rip"], 16) == int(r["guest_rip"], 16)
    assert int(o["exit_ns"]) == int(r["exit_ns"])
PY
); then
	pass report_json_64bit_values_survive_python_json
else
	fail report_json_64bit_values_survive_python_json "$out"
fi

if ! command -v node >/dev/null; then
	skip report_json_64bit_values_survive_javascript "node is not installed: run 'make deps' as root"
elif out=$(node -e '
const lines = require("fs").readFileSync("b.jsonl", "utf8").trim().split("\n");
lines.forEach((line, i) => {
  const o = JSON.parse(line);
  const a0 = BigInt(o.a0);
  if (a0 !== 0xffffffff81234000n + BigInt(i)) throw new Error(`record ${i}: a0 ${o.a0}`);
  if (BigInt(o.a3) !== ((~BigInt(i)) & 0xffffffffffffffffn)) throw new Error(`record ${i}: a3 ${o.a3}`);
});
// What a number would have done: 2^64 - 2 read as a JSON number comes back changed.
if (BigInt(JSON.parse("18446744073709551614")) === 18446744073709551614n) throw new Error("no precision loss?");
' 2>&1); then
	pass report_json_64bit_values_survive_javascript
else
	fail report_json_64bit_values_survive_javascript "$out"
fi

suite_exit
