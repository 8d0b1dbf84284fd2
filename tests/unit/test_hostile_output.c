// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * What a guest, a VM owner or a crafted file can make `report` and `convert`
 * print. The trace holds escape sequences, 8-bit controls and invalid UTF-8
 * in every string someone else chooses: guest task names and marker text,
 * QEMU's -name, process and thread names, guest symbol names, the header's
 * strings. Every text mode must show them visibly (\x1b) and keep text in
 * other scripts readable; --json must stay JSON, --csv must keep its columns
 * and neutralise formulas.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include "fixture.h"
#include "hypertrace/guest.h"
#include "common/util.h"
#include "test.h"

static char dir[] = "/tmp/ht-hostile-XXXXXX";
static char trace[300], symbols[300], catalog[300], err[512];

#define PID 500
#define TID 501
#define KERNEL_RIP 0xffffffffc0001000ull /* the guest module's text */
#define SCREEN_CLEAR "\x1b[2J\x1b[H"
#define TITLE "\x1b]0;pwned\x07"
#define HOST_COMM "\x1b[2J\xc2\x9b\xff\xe2\x80\xae" "kworke" /* 16 bytes */

/* A symbol whose name escapes to far more than its length in JSON: control bytes, quotes, invalid UTF-8. */
#define LONG_SYMBOL_ADDR 0xffffffff81007000ull
#define LONG_SYMBOL_UNIT "\x01\"\\\xff\xc3\xa9"
#define LONG_SYMBOL_UNITS 80

static const char symbol_file[] =
	"ffffffff81000000 T _stext\n"
	"ffffffff81003000 T evil\x1b[31m_fn\n"
	"ffffffff81004000 T \xc2\x9b" "31m_c1\n"
	"ffffffff81005000 T =HYPERLINK(\"http://x\",\"y\")\n"
	"ffffffff81006000 T a,b\n"
	"ffffffff81100000 T _printk\n"
	/* The guest module's text, in a module whose name is a formula with an escape sequence. */
	"ffffffffc0001000 t mod_fn\t[=evil\x1b[1m]\n";

static struct ht_record rec(uint32_t nr, struct ht_guest_args a, uint64_t t_us)
{
	struct ht_record r;

	memset(&r, 0, sizeof(r));
	r.nr = nr;
	r.a0 = a.a[0];
	r.a1 = a.a[1];
	r.a2 = a.a[2];
	r.a3 = a.a[3];
	r.host_pid = PID;
	r.host_tid = TID;
	r.isa = HT_ISA_SVM;
	r.exit_reason = 0x81;
	r.guest_rip = KERNEL_RIP;
	r.exit_ns = 1000000000ull + t_us * 1000;
	return r;
}

static void setup(void)
{
	struct ht_identity id = { .pid = PID, .tid = TID };
	struct ht_file_header h;
	struct ht_record r[16];
	const uint32_t nrs[] = { 1000, 1100, 1101, 1102, 1105, 1106, 1201 };
	size_t n = 0;

	snprintf(trace, sizeof(trace), "%s/hostile.htr", dir);
	snprintf(symbols, sizeof(symbols), "%s/kallsyms", dir);
	snprintf(catalog, sizeof(catalog), "%s/app.cat", dir);
	/* A VM owner's names: an OSC title, text in another script, a byte that is no UTF-8. */
	snprintf(id.vm_name, sizeof(id.vm_name), "%s网站\xff", TITLE);
	snprintf(id.process_name, sizeof(id.process_name), "q\x1b[2J");
	snprintf(id.thread_name, sizeof(id.thread_name), "CPU 0/\x9b" "31m");
	memset(&h, 0, sizeof(h));
	h.start_monotonic_ns = 1000000000ull;
	h.filter_nr_count = ARRAY_SIZE(nrs);
	memcpy(h.filter_nr, nrs, sizeof(nrs));
	snprintf(h.kernel_release, sizeof(h.kernel_release), "6.1\x1b[5m");
	snprintf(h.cpu_vendor, sizeof(h.cpu_vendor), "Auth\x1b[8m");
	/* A guest's strings: task names, marker text, and calls into a symbol named with escapes. */
	r[n++] = rec(HT_GUEST_NR_MODULE, ht_guest_pack_module(1, 0xf, 1, 0, 0xffffffff81100000ull, "_printk"), 1);
	r[n++] = rec(HT_GUEST_NR_SCHED_SWITCH, ht_guest_pack_sched_switch(0, 120, 0, 42, 120, SCREEN_CLEAR, 0), 2);
	r[n++] = rec(HT_GUEST_NR_SCHED_WAKEUP, ht_guest_pack_sched_wakeup(43, 120, 0, TITLE "ab", 0), 3);
	r[n++] = rec(HT_GUEST_NR_FUNC_ENTRY, ht_guest_pack_func(0xffffffff81003000ull, 0, 42, 0), 4);
	r[n++] = rec(HT_GUEST_NR_FUNC_ENTRY, ht_guest_pack_func(0xffffffff81004000ull, 0, 42, 0), 5);
	r[n++] = rec(HT_GUEST_NR_FUNC_EXIT, ht_guest_pack_func(0xffffffff81004000ull, 0, 42, 0), 6);
	r[n++] = rec(HT_GUEST_NR_FUNC_EXIT, ht_guest_pack_func(0xffffffff81003000ull, 0, 42, 0), 7);
	r[n++] = rec(HT_GUEST_NR_SCHED_SWITCH, ht_guest_pack_sched_switch(42, 120, 1, 0, 120, "idle\xe2\x80\xae", 0), 8);
	r[n++] = rec(1201, (struct ht_guest_args){ { ht_guest_text_word("\x1b[5mblink\xff", 32, 0),
						     ht_guest_text_word("\x1b[5mblink\xff", 32, 1), 0, 0 } }, 9);
	r[n] = rec(1000, (struct ht_guest_args){ { 1, 2, 3, 4 } }, 10);
	r[n++].guest_rip = 0xffffffff81005010ull; /* rip_sym: the formula-named symbol */
	/* A user event whose four addresses all name the long symbol: a big fields object. */
	r[n++] = rec(1202, (struct ht_guest_args){ { LONG_SYMBOL_ADDR + 1, LONG_SYMBOL_ADDR + 2, LONG_SYMBOL_ADDR + 3,
						     LONG_SYMBOL_ADDR + 4 } }, 11);
	r[n] = rec(1000, (struct ht_guest_args){ { 0, 0, 0, 0 } }, 12);
	r[n++].guest_rip = LONG_SYMBOL_ADDR + 0x10;
	h.filter_nr[h.filter_nr_count++] = 1202;

	static const char cat[] = "1201 phase name=a0-a3:str\n1202 four a=a0:sym b=a1:sym c=a2:sym d=a3:sym\n";
	char syms[sizeof(symbol_file) + LONG_SYMBOL_UNITS * sizeof(LONG_SYMBOL_UNIT) + 64];
	int len = snprintf(syms, sizeof(syms), "%sffffffff81007000 T ", symbol_file);
	for (int i = 0; i < LONG_SYMBOL_UNITS; i++)
		len += snprintf(syms + len, sizeof(syms) - (size_t)len, "%s", LONG_SYMBOL_UNIT);
	len += snprintf(syms + len, sizeof(syms) - (size_t)len, "_end\nffffffff81008000 T after_long\n");
	/* Another VM whose owner chose spreadsheet formulas for names, and a symbol with a comma. */
	struct ht_identity ids[2] = { id, { .pid = PID + 100, .tid = TID + 100 } };
	snprintf(ids[1].vm_name, sizeof(ids[1].vm_name), "=HYPERLINK(\"http://x\",\"y\")");
	snprintf(ids[1].process_name, sizeof(ids[1].process_name), "+cmd|' /C calc'");
	snprintf(ids[1].thread_name, sizeof(ids[1].thread_name), "@SUM(A1)");
	r[n] = rec(1000, (struct ht_guest_args){ { 0, 0, 0, 0 } }, 13);
	r[n].host_pid = PID + 100;
	r[n].host_tid = TID + 100;
	r[n++].guest_rip = 0xffffffff81006008ull; /* rip_sym: the symbol named "a,b" */
	r[n] = rec(1000, (struct ht_guest_args){ { 0, 0, 0, 0 } }, 14);
	r[n].host_pid = PID + 100;
	r[n].host_tid = TID + 100;
	r[n++].guest_rip = 0xffffffff81005000ull; /* rip_sym: "=HYPERLINK(...)" */
	/*
	 * The host's switches of the vCPU thread (record --vcpu-sched): out for a
	 * host thread whose name (the kernel's comm, 16 bytes, no NUL) clears the
	 * screen and holds a C1 control, a byte that is no UTF-8 and a bidi
	 * override, and back in.
	 */
	for (uint32_t kind = HT_SWITCH_OUT; kind <= HT_SWITCH_IN; kind++) {
		struct ht_vcpu_switch sw = { .time_ns = 1000000000ull + (14 + kind) * 1000, .kind = kind,
					     .involuntary = kind == HT_SWITCH_OUT, .other_tid = 77, .other_pid = 77,
					     .host_pid = PID, .host_tid = TID, .flags = HT_REC_F_VCPU_SWITCH };

		memcpy(sw.other_comm, HOST_COMM, 16);
		memcpy(&r[n++], &sw, sizeof(sw));
	}
	if (ht_test_write_trace(trace, &h, ids, 2, r, n, NULL, 0, err, sizeof(err)) ||
	    ht_test_write_file(symbols, syms, (size_t)len) || ht_test_write_text(catalog, cat))
		printf("    setup: %s\n", err);
}

/* Runs `hypertrace-bpf ARGS` (stdout and stderr); the output, or NULL. */
static char *run_ht(const char *args, size_t *len, int *status)
{
	char cmd[2048];

	snprintf(cmd, sizeof(cmd), "%s %s 2>&1", ht_test_bin(), args);
	return ht_test_run(cmd, len, status);
}

static bool safe_or_say(const char *what, const char *s, size_t len)
{
	size_t bad;

	if (ht_test_terminal_safe(s, len, &bad))
		return true;
	printf("    %s: unsafe byte 0x%02x at %zu, after: %.*s\n", what, (unsigned char)s[bad], bad,
	       (int)(bad < 60 ? bad : 60), s + (bad < 60 ? 0 : bad - 60));
	return false;
}

/* `report MODE [--catalog app.cat] [--guest-symbols kallsyms --kaslr-offset 0] hostile.htr`, 2>&1. */
static char *report(const char *mode, bool with_catalog, bool with_symbols, size_t *len, int *status)
{
	char args[1200];

	snprintf(args, sizeof(args), "report %s%s%s%s%s%s %s", mode, with_catalog ? " --catalog " : "",
		 with_catalog ? catalog : "", with_symbols ? " --guest-symbols " : "", with_symbols ? symbols : "",
		 with_symbols ? " --kaslr-offset 0" : "", trace);
	return run_ht(args, len, status);
}

static void every_text_mode_shows_foreign_control_bytes_visibly(void)
{
	static const struct { const char *mode; bool catalog, symbols; } modes[] = {
		{ "", false, false },
		{ "--dump", true, true },
		{ "--hist --per-vcpu", false, false },
		{ "--hist --per-vm", false, false },
		{ "--sched", false, false },
		{ "--graph", false, true },
		{ "--csv", true, true },
	};
	size_t len;
	int status;

	for (size_t i = 0; i < ARRAY_SIZE(modes); i++) {
		char *out = report(modes[i].mode, modes[i].catalog, modes[i].symbols, &len, &status);
		bool ok = ASSERT_MSG(out && WIFEXITED(status) && WEXITSTATUS(status) == 0, "report %s: status %d: %s",
				     modes[i].mode, status, out ? out : "") &&
			  ASSERT_MSG(safe_or_say(modes[i].mode, out, len), "report %s writes raw control bytes",
				     modes[i].mode) &&
			  ASSERT_MSG(strstr(out, "\\x1b"), "report %s shows no \\x1b:\n%s", modes[i].mode, out);

		free(out);
		if (!ok)
			return;
	}
}

static void names_in_other_scripts_stay_readable(void)
{
	size_t len;
	int status;
	char *out = report("", false, false, &len, &status);

	if (!ASSERT_MSG(out && strstr(out, "\\x1b]0;pwned\\x07网站\\xff"), "VM name in the summary:\n%s", out ? out : "") ||
	    !ASSERT_MSG(strstr(out, "CPU 0/\\x9b31m"), "thread name in the summary:\n%s", out) ||
	    !ASSERT_MSG(strstr(out, "host kernel 6.1\\x1b[5m, CPU Auth\\x1b[8m"), "header strings:\n%s", out))
		goto cleanup;
	free(out);
	out = report("--dump", false, false, &len, &status);
	if (!ASSERT_MSG(out && strstr(out, "(vm \\x1b]0;pwned\\x07网站\\xff) tid 501 (CPU 0/\\x9b31m)"), "--dump:\n%s",
			out ? out : ""))
		goto cleanup;
	free(out);
	out = report("--sched", false, false, &len, &status);
	if (!ASSERT_MSG(out && strstr(out, "\\x1b[2J\\x1b[H") && strstr(out, "idle\\u202e"), "--sched:\n%s",
			out ? out : ""))
		goto cleanup;
	free(out);
	out = report("--graph", false, true, &len, &status);
	ASSERT_MSG(out && strstr(out, "evil\\x1b[31m_fn() {") && strstr(out, "\\u009b31m_c1();"), "--graph:\n%s",
		   out ? out : "");
cleanup:
	free(out);
}

static void errors_quoting_a_symbol_file_show_its_bytes_escaped(void)
{
	char path[320], args[700];
	size_t len;
	int status;

	snprintf(path, sizeof(path), "%s/bad.map", dir);
	CHECK(ht_test_write_file(path, "\x1b[2Jzz T x\n", 11) == 0, "write");
	snprintf(args, sizeof(args), "report --dump --guest-symbols %s %s", path, trace);
	char *out = run_ht(args, &len, &status);
	if (ASSERT_MSG(out && WEXITSTATUS(status) == 1 && strstr(out, "'\\x1b[2Jzz' is not a hexadecimal address"),
		       "status %d: %s", status, out ? out : ""))
		ASSERT_MSG(safe_or_say("error", out, len), "raw bytes in the error");
	free(out);
}

/*
 * Python's json reads every line (--json) or the whole file (Chrome) with
 * strict UTF-8 decoding, and finds the hostile strings whole: names with
 * their valid text exact and each invalid byte as its code point, the long
 * symbol escaped and never cut mid-escape (its offset is there).
 */
static const char json_check[] =
	"import json, sys\n"
	"mode, path = sys.argv[1], sys.argv[2]\n"
	"raw = open(path, 'rb').read()\n"
	"text = raw.decode('utf-8')  # strict: invalid UTF-8 raises\n"
	"unit = '\\x01\"\\\\\\xff\\u00e9'\n"
	"def long_symbol(s, off):\n"
	"    assert s.startswith(unit * 3) and s.endswith('+0x%x' % off), repr(s[-40:])\n"
	"if mode == 'lines':\n"
	"    recs = [json.loads(l) for l in text.splitlines()]\n"
	"    assert len(recs) == 14, len(recs)\n"
	"    assert recs[0]['vm_name'] == '\\x1b]0;pwned\\x07\\u7f51\\u7ad9\\xff', repr(recs[0]['vm_name'])\n"
	"    assert recs[0]['process_name'] == 'q\\x1b[2J' and recs[0]['thread_name'] == 'CPU 0/\\x9b31m'\n"
	"    assert recs[0]['rip_sym'] == 'mod_fn+0x0' and recs[0]['rip_module'] == '=evil\\x1b[1m', recs[0]\n"
	"    four = [r for r in recs if r['nr'] == 1202][0]['fields']\n"
	"    for k, off in (('a', 1), ('b', 2), ('c', 3), ('d', 4)): long_symbol(four[k + '_sym'], off)\n"
	"    long_symbol([r for r in recs if r['guest_rip'] == '0xffffffff81007010'][0]['rip_sym'], 0x10)\n"
	"    sw = [r for r in recs if r['nr'] == 1101][0]['fields']\n"
	"    assert sw['next_comm'] == '\\x1b[2J\\x1b[H', repr(sw['next_comm'])\n"
	"else:\n"
	"    d = json.loads(text)\n"
	"    four = [e for e in d['traceEvents'] if e.get('name') == 'four'][0]['args']\n"
	"    long_symbol(four['a_sym'], 1)\n"
	"    assert d['metadata']['host_kernel_release'] == '6.1\\x1b[5m'\n"
	"    names = [e['name'] for e in d['traceEvents'] if e.get('cat') == 'guest_sched' and e['ph'] == 'B']\n"
	"    assert names[0] == '\\x1b[2J\\x1b[H (42)', repr(names)\n"
	"print('ok')\n";

static void json_outputs_parse_strictly_whatever_the_input(void)
{
	char script[320], cmd[1600];
	size_t len;
	int status;

	snprintf(script, sizeof(script), "%s/check.py", dir);
	CHECK(ht_test_write_text(script, json_check) == 0, "write");
	snprintf(cmd, sizeof(cmd), "%s report --json --catalog %s --guest-symbols %s --kaslr-offset 0 %s >%s/t.jsonl 2>&1 && "
		 "python3 %s lines %s/t.jsonl 2>&1", ht_test_bin(), catalog, symbols, trace, dir, script, dir);
	char *out = ht_test_run(cmd, &len, &status);
	bool ok = ASSERT_MSG(out && status == 0 && !strcmp(out, "ok\n"), "report --json: %s", out ? out : "");
	free(out);
	if (!ok)
		return;
	snprintf(cmd, sizeof(cmd), "%s convert --chrome %s/t.json --catalog %s --guest-symbols %s --kaslr-offset 0 %s >/dev/null 2>&1 && "
		 "python3 %s whole %s/t.json 2>&1", ht_test_bin(), dir, catalog, symbols, trace, script, dir);
	out = ht_test_run(cmd, &len, &status);
	ASSERT_MSG(out && status == 0 && !strcmp(out, "ok\n"), "convert --chrome: %s", out ? out : "");
	free(out);
}

/*
 * Python's csv reads every row with the header's 26 columns (a symbol or a
 * name with a comma shifts nothing), every text field is quoted, and no
 * cell starts with = + - or @: a spreadsheet shows text, runs no formula.
 */
static const char csv_check[] =
	"import csv, sys\n"
	"lines = open(sys.argv[1], newline='', encoding='utf-8').read().splitlines()\n"
	"rows = list(csv.reader(lines))\n"
	"head = rows[0]\n"
	"assert len(head) == 26 and head[-4:] == ['event', 'fields', 'rip_sym', 'rip_module'], head\n"
	"assert len(rows) == 15, len(rows)\n"
	"for line, row in zip(lines[1:], rows[1:]):\n"
	"    assert len(row) == 26, (len(row), line)\n"
	"    text = [row[i] for i in (19, 20, 21, 22, 23, 24, 25)]\n"
	"    assert line.endswith(','.join('\"' + t.replace('\"', '\"\"') + '\"' for t in text)), line\n"
	"    for cell in row:\n"
	"        assert cell[:1] not in ('=', '+', '-', '@'), (cell, line)\n"
	"evil = [r for r in rows if r[2] == '600']\n"
	"assert [r[19:22] for r in evil] == [[\"'=HYPERLINK(\\\"http://x\\\",\\\"y\\\")\", \"'+cmd|' /C calc'\", \"'@SUM(A1)\"]] * 2, evil\n"
	"assert [r[24] for r in evil] == ['a,b+0x8', \"'=HYPERLINK(\\\"http://x\\\",\\\"y\\\")+0x0\"], evil\n"
	"assert rows[1][24:26] == ['mod_fn+0x0', \"'=evil\\\\x1b[1m\"], rows[1]\n"
	"print('ok')\n";

static void csv_keeps_its_columns_and_neutralises_formulas(void)
{
	char script[320], cmd[1600];
	size_t len;
	int status;

	snprintf(script, sizeof(script), "%s/check_csv.py", dir);
	CHECK(ht_test_write_text(script, csv_check) == 0, "write");
	snprintf(cmd, sizeof(cmd), "%s report --csv --catalog %s --guest-symbols %s --kaslr-offset 0 %s >%s/t.csv 2>&1 && "
		 "python3 %s %s/t.csv 2>&1", ht_test_bin(), catalog, symbols, trace, dir, script, dir);
	char *out = ht_test_run(cmd, &len, &status);
	ASSERT_MSG(out && status == 0 && !strcmp(out, "ok\n"), "report --csv: %s", out ? out : "");
	free(out);
}

/* babeltrace2 reads the CTF export of the hostile trace: every event, the header's strings in env. */
static void ctf_of_hostile_strings_reads_in_babeltrace2(void)
{
	char cmd[1600];
	size_t len;
	int status;

	snprintf(cmd, sizeof(cmd), "%s convert --ctf %s/ctf --catalog %s --guest-symbols %s --kaslr-offset 0 %s >/dev/null 2>&1 && "
		 "babeltrace2 %s/ctf 2>&1", ht_test_bin(), dir, catalog, symbols, trace, dir);
	char *out = ht_test_run(cmd, &len, &status);
	size_t lines = 0;

	if (!ASSERT_MSG(out && status == 0, "status %d: %s", status, out ? out : ""))
		goto cleanup;
	for (char *p = out; (p = strchr(p, '\n')); p++)
		lines++;
	ASSERT_MSG(lines == 14 && strstr(out, "] (+") && strstr(out, "four: ") && strstr(out, "sched_switch: "),
		   "%zu events:\n%s", lines, out);
cleanup:
	free(out);
}

/*
 * The LTTng export of the hostile trace: babeltrace2 reads the host's and
 * the guest's traces with no warning; bt2 finds every string as the CTF
 * export keeps them (docs/exports.md): in the data streams the bytes as sent
 * (a comm's escape sequences, a thread name's lone 0x9b), in the metadata
 * TSDL literals without control characters (the VM's name, the header's
 * strings, event classes named after the hostile symbols).
 */
static const char lttng_check[] =
	"import glob, sys, bt2\n"
	"exp = sys.argv[1]\n"
	"guests = glob.glob(exp + '/guest-*')\n"
	"assert len(guests) == 1 and guests[0].endswith('-500'), guests\n"
	"env, names, comms, procnames, hypercalls = {}, set(), set(), set(), 0\n"
	"for t in (exp + '/host', guests[0]):\n"
	"    for m in bt2.TraceCollectionMessageIterator(t):\n"
	"        if type(m) is bt2._StreamBeginningMessageConst:\n"
	"            env[t] = {k: str(v) for k, v in m.stream.trace.environment.items()}\n"
	"        elif type(m) is bt2._EventMessageConst:\n"
	"            e = m.event\n"
	"            names.add(e.name)\n"
	"            hypercalls += e.name == 'kvm_x86_hypercall'\n"
	"            procnames.add(str(e.common_context_field['procname']))\n"
	"            for k in ('next_comm', 'prev_comm', 'comm'):\n"
	"                if k in e.payload_field:\n"
	"                    comms.add(str(e.payload_field[k]))\n"
	"g, h = env[guests[0]], env[exp + '/host']\n"
	"assert g['vm_name'] == ']0;pwned\\u7f51\\u7ad9\\udcff', repr(g['vm_name'])\n"
	"assert h['kernel_release'] == '6.1[5m' and h['cpu_vendor'] == 'Auth[8m', h\n"
	"assert hypercalls == 14, hypercalls\n"
	"assert {'evil[31m_fn_entry', 'evil[31m_fn_exit', '\\x9b31m_c1_entry'} <= names, names\n"
	"assert {'\\x1b[2J\\x1b[H', '\\x1b]0;pwned\\x07ab', '\\x1b[2J\\x9b\\udcff\\u202ekworke'} <= comms, comms\n"
	"assert 'CPU 0/\\udc9b31m' in procnames and '\\x1b[2J\\x1b[H' in procnames, procnames\n"
	"assert '\\x1b[2J\\x9b\\udcff\\u202ekworke' in procnames, procnames  # the host thread a vCPU replaced\n"
	"print('ok')\n";

static void lttng_of_hostile_strings_reads_in_babeltrace2_and_bt2(void)
{
	char script[320], cmd[2000];
	size_t len;
	int status;

	snprintf(script, sizeof(script), "%s/lttng_check.py", dir);
	CHECK(ht_test_write_text(script, lttng_check) == 0, "write");
	snprintf(cmd, sizeof(cmd),
		 "%s convert --lttng %s/lttng --catalog %s --guest-symbols %s --kaslr-offset 0 %s >/dev/null 2>&1 && "
		 "for t in %s/lttng/*/; do babeltrace2 \"$t\" 2>&1 >/dev/null || echo \"babeltrace2 failed on $t\"; done && "
		 "/usr/bin/python3 %s %s/lttng 2>&1",
		 ht_test_bin(), dir, catalog, symbols, trace, dir, script, dir);
	char *out = ht_test_run(cmd, &len, &status);
	ASSERT_MSG(out && status == 0 && !strcmp(out, "ok\n"), "status %d: %s", status, out ? out : "");
	free(out);
}

/*
 * The Perfetto export of the hostile trace: python3-protobuf reads every
 * packet; every string is valid UTF-8 (strictly) with nothing a terminal or
 * a browser would act on (controls, C1, bidi overrides, line separators),
 * and each hostile name is there escaped as report shows it, whole (the
 * long symbol with its offset). check_perfetto.py finds the slices equal to
 * report --csv (the off-CPU ones to report --vcpu-switches --csv), and
 * protoc decodes every bundle.
 */
static const char perfetto_check[] =
	"import sys\n"
	"sys.path.insert(0, 'tests/export')\n"
	"import check_perfetto\n"
	"pb = check_perfetto.load_module('third_party/perfetto/perfetto_trace.proto')\n"
	"pkts, bundles = check_perfetto.packets(pb, sys.argv[1], None)\n"
	"strings = []\n"
	"def walk(m):\n"
	"    for fd, v in m.ListFields():\n"
	"        for x in (v if fd.label == fd.LABEL_REPEATED else [v]):\n"
	"            if fd.message_type is not None:\n"
	"                walk(x)\n"
	"            elif fd.type == fd.TYPE_STRING:\n"
	"                x.encode('utf-8')  # strict: a surrogate (an invalid byte let through) raises\n"
	"                strings.append(x)\n"
	"for p in pkts:\n"
	"    walk(p)\n"
	"def unsafe(c):\n"
	"    o = ord(c)\n"
	"    return o < 0x20 or 0x7f <= o <= 0x9f or 0x202a <= o <= 0x202e or 0x2066 <= o <= 0x2069 or o in (0x2028, 0x2029)\n"
	"bad = [s for s in strings if any(unsafe(c) for c in s)]\n"
	"assert not bad, bad[:3]\n"
	"want = ['VM \\\\x1b]0;pwned\\\\x07\\u7f51\\u7ad9\\\\xff (pid 500)', 'vCPU 0: CPU 0/\\\\x9b31m',\n"
	"        'VM =HYPERLINK(\"http://x\",\"y\") (pid 600)', '\\\\x1b[2J\\\\x1b[H', 'evil\\\\x1b[31m_fn', '\\\\u009b31m_c1',\n"
	"        '\\\\x1b[5mblink\\\\xff', 'idle\\\\u202e', '6.1\\\\x1b[5m', 'Auth\\\\x1b[8m',\n"
	"        '\\\\x1b[2J\\\\u009b\\\\xff\\\\u202ekworke', 'vCPU 0 off its host CPU: CPU 0/\\\\x9b31m (tid 501)']\n"
	"missing = [w for w in want if w not in strings]\n"
	"assert not missing, missing\n"
	"unit = '\\\\x01\"\\\\\\\\\\\\xff\\u00e9'\n"
	"long_syms = [s for s in strings if s.startswith(unit * 3)]\n"
	"assert long_syms and all(s.endswith(('+0x1', '+0x2', '+0x3', '+0x4')) for s in long_syms), long_syms[:1]\n"
	"print('ok')\n";

static void perfetto_of_hostile_strings_is_valid_utf8_escaped(void)
{
	char script[320], cmd[6000];
	size_t len;
	int status;

	snprintf(script, sizeof(script), "%s/perfetto_check.py", dir);
	CHECK(ht_test_write_text(script, perfetto_check) == 0, "write");
	snprintf(cmd, sizeof(cmd),
		 "%s convert --perfetto %s/t.pftrace --catalog %s --guest-symbols %s --kaslr-offset 0 %s >/dev/null 2>&1 && "
		 "%s report --csv --catalog %s --guest-symbols %s --kaslr-offset 0 %s >%s/p.csv && mkdir %s/pb && "
		 "%s report --vcpu-switches --csv %s >%s/sw.csv && "
		 "/usr/bin/python3 tests/export/check_perfetto.py third_party/perfetto/perfetto_trace.proto %s/t.pftrace "
		 "%s/p.csv --payloads %s/pb --switches %s/sw.csv >/dev/null 2>&1 && "
		 "protoc --proto_path=third_party/perfetto --decode=perfetto.protos.Trace perfetto_trace.proto "
		 "<%s/pb/bundle-0.pb >/dev/null 2>%s/protoc.err && ! test -s %s/protoc.err && "
		 "/usr/bin/python3 %s %s/t.pftrace 2>&1",
		 ht_test_bin(), dir, catalog, symbols, trace, ht_test_bin(), catalog, symbols, trace, dir, dir,
		 ht_test_bin(), trace, dir, dir, dir, dir, dir, dir, dir, dir, script, dir);
	char *out = ht_test_run(cmd, &len, &status);
	ASSERT_MSG(out && status == 0 && !strcmp(out, "ok\n"), "status %d: %s", status, out ? out : "");
	free(out);
}

int main(void)
{
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	setup();
	RUN(every_text_mode_shows_foreign_control_bytes_visibly);
	RUN(names_in_other_scripts_stay_readable);
	RUN(errors_quoting_a_symbol_file_show_its_bytes_escaped);
	RUN(json_outputs_parse_strictly_whatever_the_input);
	RUN(csv_keeps_its_columns_and_neutralises_formulas);
	RUN(ctf_of_hostile_strings_reads_in_babeltrace2);
	RUN(lttng_of_hostile_strings_reads_in_babeltrace2_and_bt2);
	RUN(perfetto_of_hostile_strings_is_valid_utf8_escaped);
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", dir);
	return ht_test_exit_status();
}
