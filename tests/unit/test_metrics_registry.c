// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The Prometheus exposition of `record --metrics`: exact text for known
 * records, label escaping, the cardinality cap, aggregates, the listen
 * address. tests/unit/metrics_exposition.txt is the expected text.
 */
#include <arpa/inet.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "metrics/metrics_http.h"
#include "metrics/metrics_registry.h"
#include "record/record_options.h"
#include "common/util.h"
#include "test.h"

#define EXPECTED_FILE "tests/unit/metrics_exposition.txt"

/* What a test holds: the registry it feeds, the copy rendered and its text, the log. */
struct fixture {
	struct ht_metrics_registry reg, copy;
	char *text;
	size_t text_len;
	char *log_text;
	size_t log_len;
	FILE *log_out;
};

/* Frees what f holds; a fixture all zero holds nothing. */
static void fixture_free(struct fixture *f)
{
	ht_metrics_registry_free(&f->reg);
	ht_metrics_registry_free(&f->copy);
	free(f->text);
	if (f->log_out)
		fclose(f->log_out);
	free(f->log_text);
}

/* The label of an unnamed VM process, as the exporter makes it. */
static const char *pid_label(uint32_t pid)
{
	static char label[HT_METRICS_VM_LABEL];

	ht_metrics_vm_label(NULL, pid, label);
	return label;
}

static struct ht_record rec(uint32_t pid, uint16_t vcpu, uint32_t nr, uint32_t e2h, uint32_t h2e)
{
	struct ht_record r = { .host_pid = pid, .host_tid = pid + 1, .vcpu_id = vcpu, .nr = nr,
			       .exit_to_hcall_ns = e2h, .hcall_to_entry_ns = h2e };
	return r;
}

/* Renders a copy of fx->reg into fx->text, as the HTTP thread does. 0 or -1. */
static int render(struct fixture *fx)
{
	const struct ht_metrics_registry *r = &fx->reg;
	FILE *f;

	/* A test may render more than once. */
	ht_metrics_registry_free(&fx->copy);
	free(fx->text);
	fx->text = NULL;
	if (ht_metrics_registry_init(&fx->copy, r->max_sets))
		return -1;
	if (r->exits.on && ht_metrics_registry_enable_exits(&fx->copy, r->exits.per_vcpu))
		return -1;
	ht_metrics_registry_copy(&fx->copy, r);
	f = open_memstream(&fx->text, &fx->text_len);
	if (!f)
		return -1;
	int ret = ht_metrics_render(&fx->copy, f);
	fclose(f);
	return ret;
}

static char *read_file(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t len = 0;
	FILE *m;
	int c;

	if (!f)
		return NULL;
	m = open_memstream(&buf, &len);
	while ((c = fgetc(f)) != EOF)
		fputc(c, m);
	fclose(m);
	fclose(f);
	return buf;
}

/* A line of text, exactly (the whole line). */
static bool has_line(const char *t, const char *line)
{
	size_t n = strlen(line);

	for (const char *p = t; (p = strstr(p, line)); p++)
		if ((p == t || p[-1] == '\n') && (p[n] == '\n' || p[n] == '\0'))
			return true;
	return false;
}

static void exposition_of_known_records_is_exact(void)
{
	struct fixture fx = { 0 };
	struct ht_record r[] = {
		rec(200, 1, 1000, 300, 700),  /* exit->entry 1000 ns: bucket le 1.023 us */
		rec(100, 0, 1000, 1024, 0),   /* 1024 ns: the next bucket, le 2.047 us */
		rec(200, 1, 1000, 1, 1),      /* 2 ns */
		rec(100, 0, 1001, 5000, 3000),
	};
	char *want = NULL;

	if (!ASSERT_MSG(ht_metrics_registry_init(&fx.reg, 4) == 0, "init"))
		goto cleanup;
	fx.reg.version = "0.1.0";
	fx.reg.mode = "file";
	fx.reg.exact_sums = true;
	for (size_t i = 0; i < ARRAY_SIZE(r); i++)
		ht_metrics_add_record(&fx.reg, r[i].host_pid, pid_label(r[i].host_pid), &r[i]);
	fx.reg.drops[HT_METRICS_DROP_RINGBUF_FULL] = 7;
	fx.reg.drops[HT_METRICS_DROP_SUPERSEDED] = 2;
	fx.reg.unselected_nr = 3;
	if (!ASSERT_MSG(render(&fx) == 0, "render"))
		goto cleanup;

	want = read_file(EXPECTED_FILE);
	if (!ASSERT_MSG(want != NULL, "cannot read %s", EXPECTED_FILE))
		goto cleanup;
	ASSERT_MSG(strcmp(fx.text, want) == 0, "exposition differs from %s; got:\n%s", EXPECTED_FILE, fx.text);
cleanup:
	free(want);
	fixture_free(&fx);
}

static void label_values_are_escaped(void)
{
	struct fixture fx = { 0 };
	char out[64];

	if (!ASSERT_MSG(ht_metrics_escape_label("a\"b\\c\nd", out, sizeof(out)), "fits"))
		goto cleanup;
	if (!ASSERT_MSG(!strcmp(out, "a\\\"b\\\\c\\nd"), "escaped: %s", out))
		goto cleanup;
	if (!ASSERT_MSG(!ht_metrics_escape_label("\"\"\"", out, 6), "6 bytes cannot hold 3 escaped quotes"))
		goto cleanup;
	if (!ASSERT_MSG(ht_metrics_escape_label("\"\"\"", out, 7) && !strcmp(out, "\\\"\\\"\\\""), "exactly fits: %s", out))
		goto cleanup;

	if (!ASSERT_MSG(ht_metrics_registry_init(&fx.reg, 1) == 0, "init"))
		goto cleanup;
	fx.reg.version = "1.0 \"dev\"\\x\n";
	fx.reg.mode = "file";
	if (!ASSERT_MSG(render(&fx) == 0, "render"))
		goto cleanup;
	ASSERT_MSG(has_line(fx.text, "hypertrace_build_info{version=\"1.0 \\\"dev\\\"\\\\x\\n\"} 1"),
		   "build info:\n%s", fx.text);
cleanup:
	fixture_free(&fx);
}

static uint64_t counter(const char *t, const char *series)
{
	const char *p = t;
	size_t n = strlen(series);

	while ((p = strstr(p, series))) {
		if ((p == t || p[-1] == '\n') && p[n] == ' ')
			return strtoull(p + n + 1, NULL, 10);
		p++;
	}
	return UINT64_MAX;
}

static void label_sets_past_the_cap_are_counted_as_other_with_one_log_line(void)
{
	struct fixture fx = { 0 };
	if (!ASSERT_MSG(ht_metrics_registry_init(&fx.reg, 2) == 0, "init"))
		goto cleanup;
	fx.log_out = open_memstream(&fx.log_text, &fx.log_len);
	fx.reg.log = fx.log_out;
	fx.reg.exact_sums = true;
	for (uint32_t pid = 1; pid <= 5; pid++) {
		struct ht_record r = rec(pid, 0, 1000, 100, 100);

		for (uint32_t i = 0; i < pid; i++)
			ht_metrics_add_record(&fx.reg, r.host_pid, pid_label(r.host_pid), &r);
	}
	if (!ASSERT_EQ(fx.reg.nsets, 2, "value"))
		goto cleanup;
	if (!ASSERT_MSG(render(&fx) == 0, "render"))
		goto cleanup;
	if (!ASSERT_EQ(counter(fx.text, "hypertrace_hypercalls_total{vm=\"pid 1\",vcpu=\"0\",nr=\"1000\"}"), 1, "count"))
		goto cleanup;
	if (!ASSERT_EQ(counter(fx.text, "hypertrace_hypercalls_total{vm=\"pid 2\",vcpu=\"0\",nr=\"1000\"}"), 2, "count"))
		goto cleanup;
	if (!ASSERT_EQ(counter(fx.text, "hypertrace_hypercalls_total{vm=\"other\",vcpu=\"other\",nr=\"other\"}"), 3 + 4 + 5, "count"))
		goto cleanup;
	if (!ASSERT_EQ(counter(fx.text, "hypertrace_metrics_overflow_hypercalls_total"), 12, "count"))
		goto cleanup;
	if (!ASSERT_EQ(counter(fx.text, "hypertrace_hypercall_duration_seconds_count{phase=\"exit_to_entry\",vm=\"other\",vcpu=\"other\",nr=\"other\"}"), 12, "count"))
		goto cleanup;
	if (!ASSERT_MSG(strstr(fx.text, "vm=\"pid 3\"") == NULL, "a set past the cap got its own labels"))
		goto cleanup;
	fflush(fx.log_out);
	if (!ASSERT_MSG(fx.log_len > 0 && strchr(fx.log_text, '\n') == fx.log_text + fx.log_len - 1,
			"want exactly one log line, got: '%s'", fx.log_text))
		goto cleanup;
	ASSERT_MSG(strstr(fx.log_text, "more than 2 label sets") != NULL, "log: %s", fx.log_text);
cleanup:
	fixture_free(&fx);
}

static void aggregates_set_cumulative_counts_and_have_no_sum(void)
{
	struct fixture fx = { 0 };
	static struct ht_agg_hist h;

	if (!ASSERT_MSG(ht_metrics_registry_init(&fx.reg, 1) == 0, "init"))
		goto cleanup;
	fx.reg.mode = "no_file";
	h.slots[HT_AGG_TOTAL][10] = 3;       /* 1024..2047 ns */
	h.slots[HT_AGG_EXIT_HCALL][9] = 3;
	h.slots[HT_AGG_HCALL_ENTRY][8] = 3;
	ht_metrics_begin_aggregates(&fx.reg);
	ht_metrics_set_aggregate(&fx.reg, 42, "pid 42", 1, 1000, &h);
	ht_metrics_set_aggregate(&fx.reg, 43, "pid 43", 0, 1000, &h); /* past the cap */
	/* The next read carries the running totals: they replace, not add. */
	h.slots[HT_AGG_TOTAL][10] = 5;
	h.slots[HT_AGG_TOTAL][40] = 1; /* beyond the last bucket: still in +Inf */
	ht_metrics_begin_aggregates(&fx.reg);
	ht_metrics_set_aggregate(&fx.reg, 42, "pid 42", 1, 1000, &h);
	ht_metrics_set_aggregate(&fx.reg, 43, "pid 43", 0, 1000, &h);
	if (!ASSERT_MSG(render(&fx) == 0, "render"))
		goto cleanup;
	if (!ASSERT_EQ(counter(fx.text, "hypertrace_hypercalls_total{vm=\"pid 42\",vcpu=\"1\",nr=\"1000\"}"), 6, "count"))
		goto cleanup;
	if (!ASSERT_EQ(counter(fx.text, "hypertrace_hypercalls_total{vm=\"other\",vcpu=\"other\",nr=\"other\"}"), 6, "count"))
		goto cleanup;
	if (!ASSERT_EQ(counter(fx.text, "hypertrace_metrics_overflow_hypercalls_total"), 6, "count"))
		goto cleanup;
	if (!ASSERT_EQ(counter(fx.text, "hypertrace_hypercall_duration_seconds_bucket{phase=\"exit_to_entry\",vm=\"pid 42\",vcpu=\"1\",nr=\"1000\",le=\"0.000001023\"}"), 0, "count"))
		goto cleanup;
	if (!ASSERT_EQ(counter(fx.text, "hypertrace_hypercall_duration_seconds_bucket{phase=\"exit_to_entry\",vm=\"pid 42\",vcpu=\"1\",nr=\"1000\",le=\"0.000002047\"}"), 5, "count"))
		goto cleanup;
	if (!ASSERT_EQ(counter(fx.text, "hypertrace_hypercall_duration_seconds_bucket{phase=\"exit_to_entry\",vm=\"pid 42\",vcpu=\"1\",nr=\"1000\",le=\"8.589934591\"}"), 5, "count"))
		goto cleanup;
	if (!ASSERT_EQ(counter(fx.text, "hypertrace_hypercall_duration_seconds_bucket{phase=\"exit_to_entry\",vm=\"pid 42\",vcpu=\"1\",nr=\"1000\",le=\"+Inf\"}"), 6, "count"))
		goto cleanup;
	if (!ASSERT_EQ(counter(fx.text, "hypertrace_hypercall_duration_seconds_count{phase=\"hypercall_to_entry\",vm=\"pid 42\",vcpu=\"1\",nr=\"1000\"}"), 3, "count"))
		goto cleanup;
	if (!ASSERT_MSG(strstr(fx.text, "_sum{") == NULL, "the BPF aggregates have no sum, yet a _sum was written"))
		goto cleanup;
	ASSERT_MSG(has_line(fx.text, "hypertrace_build_info{version=\"\"} 1") && has_line(fx.text, "hypertrace_recording_info{mode=\"no_file\"} 1"), "%s", fx.text);
cleanup:
	fixture_free(&fx);
}

/*
 * A VM is one series whatever its processes: a QEMU restarted (a new pid,
 * the same key and name) goes on counting in it; in aggregate mode the
 * groups of its processes add up. A VM dropped after its grace period loses
 * its series, the others keep theirs, and it starts from 0 if it comes back.
 */
static void a_restarted_vm_goes_on_in_its_series_until_dropped(void)
{
	struct fixture fx = { 0 };
	static struct ht_agg_hist h;
	struct ht_record r1 = rec(100, 0, 1000, 100, 100), r2 = rec(200, 0, 1000, 100, 100);
	struct ht_record other = rec(300, 1, 1000, 100, 100);

	if (!ASSERT_MSG(ht_metrics_registry_init(&fx.reg, 8) == 0, "init"))
		goto cleanup;
	ht_metrics_add_record(&fx.reg, 1, "web1", &r1);
	ht_metrics_add_record(&fx.reg, 1, "web1", &r2); /* web1 restarted: process 200 */
	ht_metrics_add_record(&fx.reg, 1, "web1", &r2);
	ht_metrics_add_record(&fx.reg, 2, "db", &other);
	if (!ASSERT_MSG(render(&fx) == 0, "render"))
		goto cleanup;
	if (!ASSERT_EQ(counter(fx.text, "hypertrace_hypercalls_total{vm=\"web1\",vcpu=\"0\",nr=\"1000\"}"), 3, "count"))
		goto cleanup;
	ht_metrics_drop_vm(&fx.reg, 1);
	if (!ASSERT_MSG(render(&fx) == 0, "render"))
		goto cleanup;
	if (!ASSERT_MSG(!strstr(fx.text, "vm=\"web1\""), "web1 still there:\n%s", fx.text))
		goto cleanup;
	if (!ASSERT_EQ(fx.reg.dropped_vm_hypercalls, 3, "value"))
		goto cleanup; /* still counted in record's summary */
	if (!ASSERT_EQ(counter(fx.text, "hypertrace_hypercalls_total{vm=\"db\",vcpu=\"1\",nr=\"1000\"}"), 1, "count"))
		goto cleanup;
	ht_metrics_add_record(&fx.reg, 2, "db", &other); /* the index still finds db */
	ht_metrics_add_record(&fx.reg, 1, "web1", &r1);
	if (!ASSERT_EQ(fx.reg.nsets, 2, "value"))
		goto cleanup;
	if (!ASSERT_MSG(render(&fx) == 0, "render"))
		goto cleanup;
	if (!ASSERT_EQ(counter(fx.text, "hypertrace_hypercalls_total{vm=\"db\",vcpu=\"1\",nr=\"1000\"}"), 2, "count"))
		goto cleanup;
	if (!ASSERT_EQ(counter(fx.text, "hypertrace_hypercalls_total{vm=\"web1\",vcpu=\"0\",nr=\"1000\"}"), 1, "count"))
		goto cleanup;

	/* Aggregates: two processes' cumulative groups of one VM add up, read after read. */
	ht_metrics_registry_free(&fx.reg);
	if (!ASSERT_MSG(ht_metrics_registry_init(&fx.reg, 8) == 0, "init"))
		goto cleanup;
	h.slots[HT_AGG_TOTAL][10] = 3;
	for (int read = 0; read < 2; read++) {
		ht_metrics_begin_aggregates(&fx.reg);
		ht_metrics_set_aggregate(&fx.reg, 1, "web1", 0, 1000, &h);
		ht_metrics_set_aggregate(&fx.reg, 1, "web1", 0, 1000, &h);
	}
	if (!ASSERT_MSG(render(&fx) == 0, "render"))
		goto cleanup;
	ASSERT_EQ(counter(fx.text, "hypertrace_hypercalls_total{vm=\"web1\",vcpu=\"0\",nr=\"1000\"}"), 6, "count");
cleanup:
	fixture_free(&fx);
}

/* The hypercalls of the set (vm_key, vcpu, nr) in r, or -1 if it has no set. */
static long long set_count(const struct ht_metrics_registry *r, uint32_t vm_key, uint16_t vcpu, uint32_t nr)
{
	for (size_t i = 0; i < r->nsets; i++)
		if (r->sets[i].vm_key == vm_key && r->sets[i].vcpu == vcpu && r->sets[i].nr == nr)
			return (long long)r->sets[i].hypercalls;
	return -1;
}

/*
 * Dropping a VM whose sets lie between other VMs' moves the others down:
 * each must still be found (its count goes on, no second set is made), and
 * a dropped VM that comes back starts new sets.
 */
static void dropping_a_vm_keeps_every_other_set_findable(void)
{
	struct fixture fx = { 0 };

	if (!ASSERT_MSG(ht_metrics_registry_init(&fx.reg, 64) == 0, "init"))
		goto cleanup;
	/* 4 VMs x 4 vCPUs x 2 nrs, the VMs' sets interleaved. */
	for (uint16_t vcpu = 0; vcpu < 4; vcpu++)
		for (uint32_t nr = 1000; nr < 1002; nr++)
			for (uint32_t vm = 1; vm <= 4; vm++) {
				struct ht_record r = rec(100 * vm, vcpu, nr, 100, 100);

				ht_metrics_add_record(&fx.reg, vm, pid_label(100 * vm), &r);
			}
	if (!ASSERT_EQ(fx.reg.nsets, 32, "sets"))
		goto cleanup;
	ht_metrics_drop_vm(&fx.reg, 2);
	if (!ASSERT_EQ(fx.reg.nsets, 24, "sets after dropping VM 2") ||
	    !ASSERT_EQ(fx.reg.dropped_vm_hypercalls, 8, "dropped hypercalls"))
		goto cleanup;
	for (uint32_t vm = 1; vm <= 4; vm++)
		for (uint16_t vcpu = 0; vcpu < 4; vcpu++)
			for (uint32_t nr = 1000; nr < 1002; nr++) {
				struct ht_record r = rec(100 * vm, vcpu, nr, 100, 100);

				ht_metrics_add_record(&fx.reg, vm, pid_label(100 * vm), &r);
			}
	if (!ASSERT_EQ(fx.reg.nsets, 32, "sets once VM 2 is back"))
		goto cleanup;
	for (uint32_t vm = 1; vm <= 4; vm++)
		for (uint16_t vcpu = 0; vcpu < 4; vcpu++)
			for (uint32_t nr = 1000; nr < 1002; nr++)
				if (!ASSERT_MSG(set_count(&fx.reg, vm, vcpu, nr) == (vm == 2 ? 1 : 2),
						"VM %u vCPU %u nr %u: %lld hypercalls", vm, vcpu, nr,
						set_count(&fx.reg, vm, vcpu, nr)))
					goto cleanup;
	ht_metrics_drop_vm(&fx.reg, 1);
	ht_metrics_drop_vm(&fx.reg, 3);
	for (uint16_t vcpu = 0; vcpu < 4; vcpu++) {
		struct ht_record r = rec(400, vcpu, 1001, 100, 100);

		ht_metrics_add_record(&fx.reg, 4, pid_label(400), &r);
	}
	if (!ASSERT_EQ(fx.reg.nsets, 16, "sets of VMs 2 and 4"))
		goto cleanup;
	for (uint16_t vcpu = 0; vcpu < 4; vcpu++)
		if (!ASSERT_EQ(set_count(&fx.reg, 4, vcpu, 1001), 3, "VM 4's nr 1001") ||
		    !ASSERT_EQ(set_count(&fx.reg, 4, vcpu, 1000), 2, "VM 4's nr 1000") ||
		    !ASSERT_EQ(set_count(&fx.reg, 2, vcpu, 1000), 1, "VM 2's nr 1000"))
			goto cleanup;
cleanup:
	fixture_free(&fx);
}

/* A VM owner chooses the name: the label is the name as every output shows it (valid UTF-8 stays, the rest as \xNN). */
static void vm_labels_are_printable_and_bounded(void)
{
	char label[HT_METRICS_VM_LABEL], long_name[200];

	ht_metrics_vm_label("web1", 7, label);
	ASSERT_STREQ(label, "web1", "label");
	ht_metrics_vm_label("", 4242, label);
	ASSERT_STREQ(label, "pid 4242", "label");
	ht_metrics_vm_label("a\x1b[31m\xff\xc3\xa9\"q", 1, label);
	ASSERT_STREQ(label, "a\\x1b[31m\\xff\xc3\xa9\"q", "label");
	memset(long_name, '\x01', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = '\0';
	ht_metrics_vm_label(long_name, 1, label);
	CHECK(strlen(label) < HT_METRICS_VM_LABEL && strlen(label) % 4 == 0, "cut at a whole escape: %zu", strlen(label));
}

static void seconds_are_written_exactly(void)
{
	static const struct { uint64_t ns; const char *s; } cases[] = {
		{ 0, "0" }, { 1, "0.000000001" }, { 1023, "0.000001023" }, { 2000000000, "2" },
		{ 1500000000, "1.5" }, { 8589934591ull, "8.589934591" },
		{ UINT64_MAX, "18446744073.709551615" },
	};
	char buf[32];

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		ht_metrics_format_seconds(cases[i].ns, buf, sizeof(buf));
		ASSERT_STREQ(buf, cases[i].s, "buf");
	}
}

static void listen_address_is_port_or_addr_and_port(void)
{
	static const char *const bad[] = { "0", "65536", "abc", "", ":9470", "1.2.3:9470",
					   "::1:9470", "[::1]", "[::1]9470", "localhost:9470",
					   "9470 ", "127.0.0.1:", "[127.0.0.1]:9470", "Systemd",
					   "systemd:3", "fd:3", "systemd " };
	struct ht_listen_addr a;
	const struct sockaddr_in *v4 = (const struct sockaddr_in *)&a.sa;
	const struct sockaddr_in6 *v6 = (const struct sockaddr_in6 *)&a.sa;

	CHECK(ht_listen_addr_parse("9470", &a), "port only");
	CHECK(v4->sin_family == AF_INET && ntohs(v4->sin_port) == 9470 &&
	      v4->sin_addr.s_addr == htonl(INADDR_LOOPBACK), "port only listens on 127.0.0.1");
	ASSERT_STREQ(a.text, "127.0.0.1:9470", "a.text");
	CHECK(ht_listen_addr_parse("0.0.0.0:65535", &a) && v4->sin_addr.s_addr == 0 &&
	      ntohs(v4->sin_port) == 65535, "0.0.0.0:65535");
	CHECK(ht_listen_addr_parse("[::1]:1", &a) && v6->sin6_family == AF_INET6 &&
	      ntohs(v6->sin6_port) == 1 && !strcmp(a.text, "[::1]:1"), "[::1]:1");
	CHECK(!a.from_systemd, "an address is not the socket systemd passes");
	/* Which sockets each form listens on: the loopback forms on both loopbacks, the wildcards dual-stack. */
	static const struct { const char *spec; enum ht_listen_scope scope; } scopes[] = {
		{ "9470", HT_LISTEN_LOOPBACK },        { "127.0.0.1:9470", HT_LISTEN_LOOPBACK },
		{ "[::1]:9470", HT_LISTEN_LOOPBACK },  { "0.0.0.0:9470", HT_LISTEN_ANY },
		{ "[::]:9470", HT_LISTEN_ANY },        { "10.1.2.3:9470", HT_LISTEN_ONE },
		{ "127.0.0.2:9470", HT_LISTEN_ONE },   { "[fe80::1]:9470", HT_LISTEN_ONE },
	};
	for (size_t i = 0; i < ARRAY_SIZE(scopes); i++)
		CHECK(ht_listen_addr_parse(scopes[i].spec, &a) && a.scope == scopes[i].scope, "%s: scope %d",
		      scopes[i].spec, (int)a.scope);
	CHECK(ht_listen_addr_parse("systemd", &a) && a.from_systemd, "systemd: the socket systemd passes");
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		CHECK(!ht_listen_addr_parse(bad[i], &a), "'%s' accepted", bad[i]);

	char *argv[] = { "record", "--metrics", "10.1.2.3:9470", NULL };
	struct ht_record_config cfg;
	CHECK(ht_record_parse(3, argv, &cfg) == -1 && cfg.metrics, "record --metrics accepted");
	ASSERT_STREQ(cfg.metrics_addr.text, "10.1.2.3:9470", "cfg.metrics_addr.text");
}

/* The exit metrics of a table: pid 100 named with every byte a label must not carry raw. */
static const char *hostile_name(void *ctx, uint32_t pid)
{
	(void)ctx;
	return pid == 100 ? "we\"b\\1\n\x1b[2J\xff" : NULL;
}

static void fill_exit_table(struct ht_exit_table *t)
{
	struct ht_exit_key k1 = { .pid = 100, .vcpu = 0, .isa = HT_ISA_SVM, .reason = 0x7b };
	struct ht_exit_key k2 = { .pid = 100, .vcpu = 1, .isa = HT_ISA_SVM, .reason = 0x7b };
	struct ht_exit_key k3 = { .pid = 200, .vcpu = 0, .isa = HT_ISA_VMX, .reason = 0x4d2 };
	struct ht_exit_hist h = { .count = 3, .total_ns = 3000, .min_ns = 1000, .max_ns = 1000 };
	struct ht_vcpu_wait w = { .pid = 100, .tid = 101, .vcpu = 0, .wait_ns = 1500000000, .preempt_count = 4 };
	struct ht_vcpu_account a = { .start_ns = 1, .as_of_ns = 1 + 4000000000ull };
	struct ht_vcpu_wait w2 = { .pid = 100, .tid = 102, .vcpu = 1 };
	struct ht_vcpu_account a2 = { .start_ns = 2, .as_of_ns = 2 + 250000000 };

	h.slots[9] = 3;
	ht_exit_table_init(t);
	ht_exit_table_set_series(t, &k1, &h);
	h.slots[9] = 1;
	h.slots[HT_EXIT_SLOTS - 1] = 1; /* the open-ended last slot: only in +Inf */
	h.count = 2;
	h.total_ns = 1000 + (1ull << 40);
	ht_exit_table_set_series(t, &k2, &h);
	ht_exit_table_set_series(t, &k3, &h);
	a.state_ns[HT_VCPU_GUEST] = 2000000000;
	a.state_ns[HT_VCPU_WAIT] = 1500000000;
	a.state_ns[HT_VCPU_HALTED] = 500000000;
	a2.state_ns[HT_VCPU_VMM] = 250000000;
	/* vCPU 0's halts: 10, 6 polled, 4 caught in 80 us, 5 slept in 3 s (of it 250 us polling), 1 neither. */
	struct ht_vcpu_halts hl = { .halts = 10, .polled = 6, .caught = 4, .caught_ns = 80000, .slept = 5,
				    .slept_ns = 3000000000ull, .poll_ns = 200000, .slept_poll_ns = 250000 };

	ht_exit_table_set_thread(t, &w, &a, &hl, false);
	ht_exit_table_set_thread(t, &w2, &a2, NULL, false);
	t->lost_series_full = 5;
}

static void exit_metrics_are_histograms_by_vm_and_reason_with_escaped_labels(void)
{
	struct fixture fx = { 0 };
	struct ht_exit_table t;
	const char *vm = "vm=\"we\\\"b\\\\\\\\1\\\\x0a\\\\x1b[2J\\\\xff\"";
	char line[512];

	fill_exit_table(&t);
	if (!ASSERT_MSG(ht_metrics_registry_init(&fx.reg, 4) == 0 && ht_metrics_registry_enable_exits(&fx.reg, false) == 0, "init"))
		goto cleanup;
	ht_metrics_set_exits(&fx.reg, &t, hostile_name, NULL);
	if (!ASSERT_MSG(render(&fx) == 0, "render"))
		goto cleanup;
	/* vCPUs of one VM and reason are one label set; the unnamed VM is "pid N", its unknown reason a number. */
	snprintf(line, sizeof(line), "hypertrace_exit_duration_seconds_bucket{%s,reason=\"io\",le=\"0.000001023\"} 4", vm);
	if (!ASSERT_MSG(has_line(fx.text, line), "no line '%s' in:\n%s", line, fx.text))
		goto cleanup;
	snprintf(line, sizeof(line), "hypertrace_exit_duration_seconds_bucket{%s,reason=\"io\",le=\"274.877906943\"} 4", vm);
	if (!ASSERT_MSG(has_line(fx.text, line), "no line '%s'", line))
		goto cleanup;
	snprintf(line, sizeof(line), "hypertrace_exit_duration_seconds_bucket{%s,reason=\"io\",le=\"+Inf\"} 5", vm);
	if (!ASSERT_MSG(has_line(fx.text, line), "no line '%s'", line))
		goto cleanup;
	snprintf(line, sizeof(line), "hypertrace_exit_duration_seconds_count{%s,reason=\"io\"} 5", vm);
	if (!ASSERT_MSG(has_line(fx.text, line), "no line '%s'", line))
		goto cleanup;
	snprintf(line, sizeof(line), "hypertrace_exit_duration_seconds_sum{%s,reason=\"io\"} 1099.511631776", vm);
	if (!ASSERT_MSG(has_line(fx.text, line), "no line '%s'", line))
		goto cleanup;
	if (!ASSERT_MSG(has_line(fx.text, "hypertrace_exit_duration_seconds_count{vm=\"pid 200\",reason=\"0x4d2\"} 2"), "unnamed VM"))
		goto cleanup;
	snprintf(line, sizeof(line), "hypertrace_vcpu_wait_seconds_total{%s,vcpu=\"0\"} 1.5", vm);
	if (!ASSERT_MSG(has_line(fx.text, line), "no line '%s'", line))
		goto cleanup;
	snprintf(line, sizeof(line), "hypertrace_vcpu_preemptions_total{%s,vcpu=\"0\"} 4", vm);
	if (!ASSERT_MSG(has_line(fx.text, line), "no line '%s'", line))
		goto cleanup;
	if (!ASSERT_MSG(has_line(fx.text, "hypertrace_exits_lost_total 5"), "lost"))
		goto cleanup;
	/* The halts by how they ended, with their time, and those polled. */
	static const char *const halt_lines[] = {
		"hypertrace_vcpu_halts_total{%s,vcpu=\"0\",end=\"caught\"} 4",
		"hypertrace_vcpu_halts_total{%s,vcpu=\"0\",end=\"slept\"} 5",
		"hypertrace_vcpu_halts_total{%s,vcpu=\"0\",end=\"neither\"} 1",
		"hypertrace_vcpu_halts_polled_total{%s,vcpu=\"0\"} 6",
		"hypertrace_vcpu_halt_seconds_total{%s,vcpu=\"0\",end=\"caught\"} 0.00008",
		"hypertrace_vcpu_halt_seconds_total{%s,vcpu=\"0\",end=\"slept\"} 3",
		"hypertrace_vcpu_halt_poll_lost_seconds_total{%s,vcpu=\"0\"} 0.00025",
	};
	for (size_t i = 0; i < ARRAY_SIZE(halt_lines); i++) {
		snprintf(line, sizeof(line), halt_lines[i], vm);
		if (!ASSERT_MSG(has_line(fx.text, line), "no line '%s' in:\n%s", line, fx.text))
			goto cleanup;
	}
	/* Where the time went, by VM and state: the VM's two vCPU threads summed, every state said. */
	static const struct { const char *state, *secs; } want[] = {
		{ "guest", "2" }, { "kvm", "0" }, { "vmm", "0.25" }, { "wait", "1.5" }, { "halted", "0.5" }, { "blocked", "0" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(want); i++) {
		snprintf(line, sizeof(line), "hypertrace_vcpu_seconds_total{%s,state=\"%s\"} %s", vm, want[i].state,
			 want[i].secs);
		if (!ASSERT_MSG(has_line(fx.text, line), "no line '%s' in:\n%s", line, fx.text))
			goto cleanup;
	}
	if (!ASSERT_MSG(has_line(fx.text, "# TYPE hypertrace_exit_duration_seconds histogram"), "type"))
		goto cleanup;
	/* Nothing of the name reaches the text raw: no control byte, no invalid UTF-8. */
	for (const unsigned char *p = (const unsigned char *)fx.text; *p; p++)
		if (!ASSERT_MSG(*p == '\n' || (*p >= 0x20 && *p < 0x7f), "byte 0x%02x in the exposition", *p))
			goto cleanup;
cleanup:
	ht_exit_table_free(&t);
	fixture_free(&fx);
}

static void exit_metrics_by_vcpu_on_request_and_capped(void)
{
	struct fixture fx = { 0 };
	struct ht_exit_hist h = { .count = 1, .total_ns = 10, .min_ns = 10, .max_ns = 10 };
	struct ht_exit_table t;

	fill_exit_table(&t);
	if (!ASSERT_MSG(ht_metrics_registry_init(&fx.reg, 4) == 0 && ht_metrics_registry_enable_exits(&fx.reg, true) == 0, "init"))
		goto cleanup;
	ht_metrics_set_exits(&fx.reg, &t, NULL, NULL);
	if (!ASSERT_MSG(render(&fx) == 0, "render"))
		goto cleanup;
	if (!ASSERT_MSG(has_line(fx.text, "hypertrace_exit_duration_seconds_count{vm=\"pid 100\",reason=\"io\",vcpu=\"0\"} 3"), "vcpu 0:\n%s", fx.text))
		goto cleanup;
	if (!ASSERT_MSG(has_line(fx.text, "hypertrace_exit_duration_seconds_count{vm=\"pid 100\",reason=\"io\",vcpu=\"1\"} 2"), "vcpu 1"))
		goto cleanup;
	free(fx.text);
	fx.text = NULL;
	ht_metrics_registry_free(&fx.copy);
	/* More label sets than the cap: the rest under "other", counted, sums kept. */
	h.slots[3] = 1;
	for (uint32_t pid = 1000; pid < 1000 + HT_METRICS_MAX_EXIT_SETS + 10; pid++) {
		struct ht_exit_key k = { .pid = pid, .isa = HT_ISA_SVM, .reason = 0x78 };
		ht_exit_table_set_series(&t, &k, &h);
	}
	ht_metrics_set_exits(&fx.reg, &t, NULL, NULL);
	if (!ASSERT_MSG(render(&fx) == 0, "render"))
		goto cleanup;
	if (!ASSERT_MSG(has_line(fx.text, "hypertrace_exit_metrics_overflow_exits_total 13"), "overflow: %s", strstr(fx.text, "overflow_exits") ?: "none"))
		goto cleanup;
	ASSERT_MSG(has_line(fx.text, "hypertrace_exit_duration_seconds_count{vm=\"other\",reason=\"other\",vcpu=\"other\"} 13"), "other");
cleanup:
	ht_exit_table_free(&t);
	fixture_free(&fx);
}

/* The exit label sets of VM label vm: their number, and the exits of its own reason="other" set. */
static size_t exit_sets_of(const struct ht_metrics_registry *r, const char *vm, uint64_t *other_exits)
{
	size_t n = 0;

	*other_exits = 0;
	for (size_t i = 0; i < r->exits.nsets; i++) {
		if (strcmp(r->exits.sets[i].vm, vm))
			continue;
		n++;
		if (!strcmp(r->exits.sets[i].reason, "other") && r->exits.sets[i].vcpu == HT_METRICS_VCPU_OTHER)
			*other_exits = r->exits.sets[i].count;
	}
	return n;
}

/*
 * Per vCPU, seven VMs of 64 vCPUs x 3 reasons (192 series each) before an
 * eighth of 16 x 6: each of the seven keeps to its share of the exit label
 * sets, its series past it in its own reason="other",vcpu="other" set,
 * counted; the eighth has a set for each of its series.
 */
static void a_vms_exit_sets_beyond_its_share_go_to_its_own_other(void)
{
	const uint32_t hostile = HT_METRICS_MAX_EXIT_SETS / HT_METRICS_EXIT_SETS_PER_VM - 1;
	struct ht_exit_hist h = { .count = 1, .total_ns = 10, .min_ns = 10, .max_ns = 10 };
	struct fixture fx = { 0 };
	struct ht_exit_table t;
	uint64_t other;
	size_t bad = 0;
	char vm[32];

	ht_exit_table_init(&t);
	h.slots[3] = 1;
	for (uint32_t pid = 1; pid <= hostile + 1; pid++)
		for (uint16_t vcpu = 0; vcpu < (pid <= hostile ? 64 : 16); vcpu++)
			for (uint32_t reason = 1; reason <= (pid <= hostile ? 3u : 6u); reason++) {
				struct ht_exit_key k = { .pid = pid, .vcpu = vcpu, .isa = HT_ISA_VMX, .reason = reason };

				if (!ASSERT_OK(ht_exit_table_set_series(&t, &k, &h), "series"))
					goto cleanup;
			}
	if (!ASSERT_MSG(ht_metrics_registry_init(&fx.reg, 4) == 0 && ht_metrics_registry_enable_exits(&fx.reg, true) == 0, "init"))
		goto cleanup;
	ht_metrics_set_exits(&fx.reg, &t, NULL, NULL);
	for (uint32_t pid = 1; pid <= hostile; pid++) {
		snprintf(vm, sizeof(vm), "pid %u", pid);
		bad += exit_sets_of(&fx.reg, vm, &other) != HT_METRICS_EXIT_SETS_PER_VM ||
		       other != 64 * 3 - (HT_METRICS_EXIT_SETS_PER_VM - 1);
	}
	if (!ASSERT_EQ(bad, 0, "VMs not held to their share"))
		goto cleanup;
	snprintf(vm, sizeof(vm), "pid %u", hostile + 1);
	if (!ASSERT_EQ(exit_sets_of(&fx.reg, vm, &other), 16 * 6, "the eighth VM's sets") ||
	    !ASSERT_EQ(other, 0, "the eighth VM's other") || !ASSERT_MSG(render(&fx) == 0, "render"))
		goto cleanup;
	if (ASSERT_MSG(has_line(fx.text, "hypertrace_exit_metrics_overflow_exits_total 0"), "nothing in everyone's other") &&
	    ASSERT_MSG(has_line(fx.text, "hypertrace_exit_duration_seconds_count{vm=\"pid 1\",reason=\"other\",vcpu=\"other\"} 65"),
		       "the first VM's own other"))
		ASSERT_EQ(fx.reg.exits.vm_overflow_exits, hostile * 65, "the VMs' excess");
cleanup:
	ht_exit_table_free(&t);
	fixture_free(&fx);
}

/* A VM gone past the grace period (the exporter says so with ht_metrics_vm_skip): none of its exit metrics. */
static const char *pid_100_dropped(void *ctx, uint32_t pid)
{
	(void)ctx;
	return pid == 100 ? ht_metrics_vm_skip : NULL;
}

static void exit_metrics_leave_out_a_dropped_vm(void)
{
	struct fixture fx = { 0 };
	struct ht_exit_table t;

	fill_exit_table(&t);
	if (!ASSERT_MSG(ht_metrics_registry_init(&fx.reg, 4) == 0 && ht_metrics_registry_enable_exits(&fx.reg, false) == 0, "init"))
		goto cleanup;
	ht_metrics_set_exits(&fx.reg, &t, pid_100_dropped, NULL);
	if (!ASSERT_MSG(render(&fx) == 0, "render"))
		goto cleanup;
	if (!ASSERT_MSG(has_line(fx.text, "hypertrace_exit_duration_seconds_count{vm=\"pid 200\",reason=\"0x4d2\"} 2"), "the other VM:\n%s", fx.text))
		goto cleanup;
	if (!ASSERT_MSG(!strstr(fx.text, "pid 100") && !strstr(fx.text, "reason=\"io\"") && !strstr(fx.text, "hypertrace_vcpu_wait_seconds_total{"),
			"the dropped VM's series or vCPUs:\n%s", fx.text))
		goto cleanup;
	ASSERT_MSG(has_line(fx.text, "hypertrace_exit_metrics_overflow_exits_total 0"), "no overflow");
cleanup:
	ht_exit_table_free(&t);
	fixture_free(&fx);
}

/* The exit metrics of t, rendered into fx (4 sets, no vcpu label), hold every line of want. */
static bool renders_exits_with(struct fixture *fx, const struct ht_exit_table *t, const char *const *want, size_t n)
{
	if (!ASSERT_MSG(ht_metrics_registry_init(&fx->reg, 4) == 0 && ht_metrics_registry_enable_exits(&fx->reg, false) == 0,
			"init"))
		return false;
	ht_metrics_set_exits(&fx->reg, t, NULL, NULL);
	if (!ASSERT_MSG(render(fx) == 0, "render"))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!ASSERT_MSG(has_line(fx->text, want[i]), "no line '%s' in:\n%s", want[i], fx->text))
			return false;
	return true;
}

/* A vCPU thread of VM pid with its halts (NULL: none) into t; its tid names it. 0 or -ENOMEM. */
static int set_vcpu_thread(struct ht_exit_table *t, uint32_t pid, uint32_t tid, uint16_t vcpu,
			   const struct ht_vcpu_halts *h)
{
	struct ht_vcpu_wait w = { .pid = pid, .tid = tid, .vcpu = vcpu };
	struct ht_vcpu_account a = { .start_ns = tid, .as_of_ns = tid };

	return ht_exit_table_set_thread(t, &w, &a, h, false);
}

/* The lines of t that begin with prefix. */
static size_t lines_with(const char *t, const char *prefix)
{
	size_t n = 0, len = strlen(prefix);

	for (const char *p = t; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		n += !strncmp(p, prefix, len);
	return n;
}

/*
 * Two threads of vCPU 2 of pid 300, their wake-ups summed per class:
 * timer 3 in slot 9 (512..1023 ns) and 1 in slot 20, vector 1 in slot 12,
 * none 1 in the open-ended last slot (40 s), reblocked 1 + 2.
 */
static void fill_wakeup_table(struct ht_exit_table *t)
{
	struct ht_vcpu_halts a = { .halts = 3, .slept = 3 }, b = { .halts = 4, .slept = 4 };

	a.wake.c[HT_WAKE_TIMER].slots[9] = 2;
	a.wake.c[HT_WAKE_TIMER].total_ns = 1500;
	a.wake.c[HT_WAKE_TIMER].wait_ns = 200;
	a.wake.c[HT_WAKE_VECTOR].slots[12] = 1;
	a.wake.c[HT_WAKE_VECTOR].total_ns = 5000;
	a.wake.reblocked = 1;
	b.wake.c[HT_WAKE_TIMER].slots[9] = 1;
	b.wake.c[HT_WAKE_TIMER].slots[20] = 1;
	b.wake.c[HT_WAKE_TIMER].total_ns = 1000 + 1500000;
	b.wake.c[HT_WAKE_TIMER].wait_ns = 1000000;
	b.wake.c[HT_WAKE_NONE].slots[HT_WAKE_SLOTS - 1] = 1;
	b.wake.c[HT_WAKE_NONE].total_ns = 40000000000ull;
	b.wake.reblocked = 2;
	ht_exit_table_init(t);
	set_vcpu_thread(t, 300, 301, 2, &a);
	set_vcpu_thread(t, 300, 302, 2, &b);
	set_vcpu_thread(t, 300, 303, 3, NULL); /* a vCPU that never woke from a halt */
}

static void wakeups_are_histograms_by_vcpu_and_class_summed_over_threads(void)
{
	static const char *const want[] = {
		"# TYPE hypertrace_vcpu_wakeup_seconds histogram",
		"hypertrace_vcpu_wakeup_seconds_bucket{vm=\"pid 300\",vcpu=\"2\",class=\"timer\",le=\"0.000000001\"} 0",
		"hypertrace_vcpu_wakeup_seconds_bucket{vm=\"pid 300\",vcpu=\"2\",class=\"timer\",le=\"0.000000511\"} 0",
		"hypertrace_vcpu_wakeup_seconds_bucket{vm=\"pid 300\",vcpu=\"2\",class=\"timer\",le=\"0.000001023\"} 3",
		"hypertrace_vcpu_wakeup_seconds_bucket{vm=\"pid 300\",vcpu=\"2\",class=\"timer\",le=\"0.001048575\"} 3",
		"hypertrace_vcpu_wakeup_seconds_bucket{vm=\"pid 300\",vcpu=\"2\",class=\"timer\",le=\"0.002097151\"} 4",
		"hypertrace_vcpu_wakeup_seconds_bucket{vm=\"pid 300\",vcpu=\"2\",class=\"timer\",le=\"34.359738367\"} 4",
		"hypertrace_vcpu_wakeup_seconds_bucket{vm=\"pid 300\",vcpu=\"2\",class=\"timer\",le=\"+Inf\"} 4",
		"hypertrace_vcpu_wakeup_seconds_sum{vm=\"pid 300\",vcpu=\"2\",class=\"timer\"} 0.0015025",
		"hypertrace_vcpu_wakeup_seconds_count{vm=\"pid 300\",vcpu=\"2\",class=\"timer\"} 4",
		"hypertrace_vcpu_wakeup_seconds_bucket{vm=\"pid 300\",vcpu=\"2\",class=\"vector\",le=\"0.000004095\"} 0",
		"hypertrace_vcpu_wakeup_seconds_bucket{vm=\"pid 300\",vcpu=\"2\",class=\"vector\",le=\"0.000008191\"} 1",
		"hypertrace_vcpu_wakeup_seconds_sum{vm=\"pid 300\",vcpu=\"2\",class=\"vector\"} 0.000005",
		"hypertrace_vcpu_wakeup_seconds_count{vm=\"pid 300\",vcpu=\"2\",class=\"vector\"} 1",
		/* The open-ended last slot: in +Inf only. */
		"hypertrace_vcpu_wakeup_seconds_bucket{vm=\"pid 300\",vcpu=\"2\",class=\"none\",le=\"34.359738367\"} 0",
		"hypertrace_vcpu_wakeup_seconds_bucket{vm=\"pid 300\",vcpu=\"2\",class=\"none\",le=\"+Inf\"} 1",
		"hypertrace_vcpu_wakeup_seconds_sum{vm=\"pid 300\",vcpu=\"2\",class=\"none\"} 40",
		"hypertrace_vcpu_wakeup_seconds_count{vm=\"pid 300\",vcpu=\"2\",class=\"none\"} 1",
		"# TYPE hypertrace_vcpu_wakeup_wait_seconds_total counter",
		"hypertrace_vcpu_wakeup_wait_seconds_total{vm=\"pid 300\",vcpu=\"2\",class=\"timer\"} 0.0010002",
		"hypertrace_vcpu_wakeup_wait_seconds_total{vm=\"pid 300\",vcpu=\"2\",class=\"vector\"} 0",
		"hypertrace_vcpu_wakeup_wait_seconds_total{vm=\"pid 300\",vcpu=\"2\",class=\"none\"} 0",
		"# TYPE hypertrace_vcpu_wakeups_reblocked_total counter",
		"hypertrace_vcpu_wakeups_reblocked_total{vm=\"pid 300\",vcpu=\"2\"} 3",
		"hypertrace_vcpu_wakeups_reblocked_total{vm=\"pid 300\",vcpu=\"3\"} 0",
	};
	struct fixture fx = { 0 };
	struct ht_exit_table t;

	fill_wakeup_table(&t);
	if (!renders_exits_with(&fx, &t, want, ARRAY_SIZE(want)))
		goto cleanup;
	/* Every slot's upper edge but the open-ended last one's, then +Inf. */
	if (!ASSERT_EQ(lines_with(fx.text, "hypertrace_vcpu_wakeup_seconds_bucket{vm=\"pid 300\",vcpu=\"2\",class=\"none\","),
		       HT_WAKE_SLOTS, "buckets of a class"))
		goto cleanup;
	ASSERT_EQ(lines_with(fx.text, "hypertrace_vcpu_wakeup_seconds_bucket{vm=\"pid 300\",vcpu=\"3\","), 0,
		  "buckets of a vCPU that never woke from a halt");
	ASSERT_EQ(lines_with(fx.text, "hypertrace_vcpu_wakeup_wait_seconds_total{vm=\"pid 300\",vcpu=\"3\","), 0,
		  "wait of a vCPU that never woke from a halt");
cleanup:
	ht_exit_table_free(&t);
	fixture_free(&fx);
}

/*
 * The timer wake-ups from their due time of two threads of vCPU 2 of pid
 * 300, summed into one histogram (2 in slot 14, 1 in slot 16) with its
 * firing and waiting parts; vCPU 3 had none and has no series.
 */
static void timer_dues_are_one_histogram_per_vcpu_with_their_parts(void)
{
	static const char *const want[] = {
		"# TYPE hypertrace_vcpu_timer_due_seconds histogram",
		"hypertrace_vcpu_timer_due_seconds_bucket{vm=\"pid 300\",vcpu=\"2\",le=\"0.000016383\"} 0",
		"hypertrace_vcpu_timer_due_seconds_bucket{vm=\"pid 300\",vcpu=\"2\",le=\"0.000032767\"} 2",
		"hypertrace_vcpu_timer_due_seconds_bucket{vm=\"pid 300\",vcpu=\"2\",le=\"0.000065535\"} 2",
		"hypertrace_vcpu_timer_due_seconds_bucket{vm=\"pid 300\",vcpu=\"2\",le=\"0.000131071\"} 3",
		"hypertrace_vcpu_timer_due_seconds_bucket{vm=\"pid 300\",vcpu=\"2\",le=\"+Inf\"} 3",
		"hypertrace_vcpu_timer_due_seconds_sum{vm=\"pid 300\",vcpu=\"2\"} 0.00016",
		"hypertrace_vcpu_timer_due_seconds_count{vm=\"pid 300\",vcpu=\"2\"} 3",
		"# TYPE hypertrace_vcpu_timer_due_part_seconds_total counter",
		"hypertrace_vcpu_timer_due_part_seconds_total{vm=\"pid 300\",vcpu=\"2\",part=\"fire\"} 0.000012",
		"hypertrace_vcpu_timer_due_part_seconds_total{vm=\"pid 300\",vcpu=\"2\",part=\"wait\"} 0.00003",
	};
	struct fixture fx = { 0 };
	struct ht_exit_table t;
	struct ht_vcpu_thread_row *a, *b;

	fill_wakeup_table(&t);
	a = ht_exit_table_thread(&t, 301, 301, false);
	b = ht_exit_table_thread(&t, 302, 302, false);
	if (!ASSERT_OK_PTR(a, "thread 301") || !ASSERT_OK_PTR(b, "thread 302"))
		goto cleanup;
	a->due = (struct ht_vcpu_timer_due){ .h = { .total_ns = 50000, .wait_ns = 10000, .slots = { [14] = 2 } },
					     .fire_ns = 8000 };
	b->due = (struct ht_vcpu_timer_due){ .h = { .total_ns = 110000, .wait_ns = 20000, .slots = { [16] = 1 } },
					     .fire_ns = 4000 };
	if (!renders_exits_with(&fx, &t, want, ARRAY_SIZE(want)))
		goto cleanup;
	ASSERT_EQ(lines_with(fx.text, "hypertrace_vcpu_timer_due_seconds_bucket{vm=\"pid 300\",vcpu=\"2\","), HT_WAKE_SLOTS,
		  "buckets: every slot's upper edge but the last's, then +Inf");
	ASSERT_EQ(lines_with(fx.text, "hypertrace_vcpu_timer_due_seconds_bucket{vm=\"pid 300\",vcpu=\"3\","), 0,
		  "buckets of a vCPU with no timer wake-up from its due time");
	ASSERT_EQ(lines_with(fx.text, "hypertrace_vcpu_timer_due_part_seconds_total{vm=\"pid 300\",vcpu=\"3\","), 0,
		  "parts of a vCPU with no timer wake-up from its due time");
cleanup:
	ht_exit_table_free(&t);
	fixture_free(&fx);
}

/*
 * Two threads of vCPU 1 of pid 400, their interrupts summed per class (ipi
 * 1 + 2 in slot 11, device 1 in slot 20) with their untimed counts; vCPU
 * 2 accepted none and has no series; vCPU 3 only a level-triggered one,
 * and every series of its own from then on, empty ones too.
 */
static void irqs_are_histograms_by_vcpu_and_class_summed_over_threads(void)
{
	static const char *const want[] = {
		"# TYPE hypertrace_vcpu_irq_seconds histogram",
		"hypertrace_vcpu_irq_seconds_bucket{vm=\"pid 400\",vcpu=\"1\",class=\"ipi\",le=\"0.000002047\"} 0",
		"hypertrace_vcpu_irq_seconds_bucket{vm=\"pid 400\",vcpu=\"1\",class=\"ipi\",le=\"0.000004095\"} 3",
		"hypertrace_vcpu_irq_seconds_sum{vm=\"pid 400\",vcpu=\"1\",class=\"ipi\"} 0.000009",
		"hypertrace_vcpu_irq_seconds_count{vm=\"pid 400\",vcpu=\"1\",class=\"ipi\"} 3",
		"hypertrace_vcpu_irq_seconds_bucket{vm=\"pid 400\",vcpu=\"1\",class=\"device\",le=\"0.002097151\"} 1",
		"hypertrace_vcpu_irq_seconds_count{vm=\"pid 400\",vcpu=\"1\",class=\"device\"} 1",
		"hypertrace_vcpu_irq_seconds_count{vm=\"pid 400\",vcpu=\"1\",class=\"timer\"} 0",
		"hypertrace_vcpu_irq_seconds_count{vm=\"pid 400\",vcpu=\"3\",class=\"timer\"} 0",
		"# TYPE hypertrace_vcpu_irq_wait_seconds_total counter",
		"hypertrace_vcpu_irq_wait_seconds_total{vm=\"pid 400\",vcpu=\"1\",class=\"ipi\"} 0.000003",
		"hypertrace_vcpu_irq_wait_seconds_total{vm=\"pid 400\",vcpu=\"1\",class=\"device\"} 0",
		"# TYPE hypertrace_vcpu_irqs_untimed_total counter",
		"hypertrace_vcpu_irqs_untimed_total{vm=\"pid 400\",vcpu=\"1\",reason=\"overlapped\"} 7",
		"hypertrace_vcpu_irqs_untimed_total{vm=\"pid 400\",vcpu=\"1\",reason=\"stale\"} 1",
		"hypertrace_vcpu_irqs_untimed_total{vm=\"pid 400\",vcpu=\"1\",reason=\"level\"} 0",
		"hypertrace_vcpu_irqs_untimed_total{vm=\"pid 400\",vcpu=\"3\",reason=\"level\"} 1",
	};
	struct ht_vcpu_irqs a = { .accepted = 5, .overlapped = 3 }, b = { .accepted = 8, .overlapped = 4, .stale = 1 },
			    c = { .level = 1 };
	struct fixture fx = { 0 };
	struct ht_exit_table t;
	uint32_t tids[] = { 401, 402, 403, 404 };
	const struct ht_vcpu_irqs *of[] = { &a, &b, NULL, &c };
	uint16_t vcpus[] = { 1, 1, 2, 3 };

	a.c[HT_IRQ_IPI] = (struct ht_vcpu_wake_hist){ .total_ns = 3000, .wait_ns = 1000, .max_ns = 3000, .slots = { [11] = 1 } };
	b.c[HT_IRQ_IPI] = (struct ht_vcpu_wake_hist){ .total_ns = 6000, .wait_ns = 2000, .max_ns = 3000, .slots = { [11] = 2 } };
	b.c[HT_IRQ_DEVICE] = (struct ht_vcpu_wake_hist){ .total_ns = 1500000, .max_ns = 1500000, .slots = { [20] = 1 } };
	ht_exit_table_init(&t);
	for (size_t i = 0; i < ARRAY_SIZE(tids); i++) {
		struct ht_vcpu_thread_row *row;

		if (!ASSERT_OK(set_vcpu_thread(&t, 400, tids[i], vcpus[i], NULL), "thread") ||
		    !ASSERT_OK_PTR(row = ht_exit_table_thread(&t, tids[i], tids[i], false), "its row"))
			goto cleanup;
		if (of[i])
			row->irqs = *of[i];
	}
	if (!renders_exits_with(&fx, &t, want, ARRAY_SIZE(want)))
		goto cleanup;
	ASSERT_EQ(lines_with(fx.text, "hypertrace_vcpu_irq_seconds_bucket{vm=\"pid 400\",vcpu=\"1\",class=\"ipi\","),
		  HT_WAKE_SLOTS, "buckets of a class");
	ASSERT_EQ(lines_with(fx.text, "hypertrace_vcpu_irq_seconds_bucket{vm=\"pid 400\",vcpu=\"2\","), 0,
		  "buckets of a vCPU that accepted none");
	ASSERT_EQ(lines_with(fx.text, "hypertrace_vcpu_irqs_untimed_total{vm=\"pid 400\",vcpu=\"2\","), 0,
		  "untimed of a vCPU that accepted none");
cleanup:
	ht_exit_table_free(&t);
	fixture_free(&fx);
}

/* The wake-ups of vCPUs past the cap of vCPU sets are summed under vm="other",vcpu="other". */
static void wakeups_past_the_vcpu_cap_are_summed_under_other(void)
{
	struct ht_vcpu_halts h = { .halts = 1, .slept = 1 };
	struct fixture fx = { 0 };
	struct ht_exit_table t;

	h.wake.c[HT_WAKE_VECTOR].slots[10] = 1;
	h.wake.c[HT_WAKE_VECTOR].total_ns = 1500;
	h.wake.c[HT_WAKE_VECTOR].wait_ns = 700;
	h.wake.reblocked = 1;
	ht_exit_table_init(&t);
	for (uint16_t vcpu = 0; vcpu < HT_METRICS_MAX_VCPU_SETS + 2; vcpu++)
		if (!ASSERT_OK(set_vcpu_thread(&t, 500, 1000 + vcpu, vcpu, vcpu < HT_METRICS_MAX_VCPU_SETS ? NULL : &h),
			       "thread"))
			goto cleanup;
	if (!ASSERT_MSG(ht_metrics_registry_init(&fx.reg, 4) == 0 && ht_metrics_registry_enable_exits(&fx.reg, false) == 0, "init"))
		goto cleanup;
	ht_metrics_set_exits(&fx.reg, &t, NULL, NULL);
	if (!ASSERT_MSG(render(&fx) == 0, "render"))
		goto cleanup;
	static const char *const want[] = {
		"hypertrace_vcpu_wakeup_seconds_bucket{vm=\"other\",vcpu=\"other\",class=\"vector\",le=\"0.000001023\"} 0",
		"hypertrace_vcpu_wakeup_seconds_bucket{vm=\"other\",vcpu=\"other\",class=\"vector\",le=\"0.000002047\"} 2",
		"hypertrace_vcpu_wakeup_seconds_sum{vm=\"other\",vcpu=\"other\",class=\"vector\"} 0.000003",
		"hypertrace_vcpu_wakeup_seconds_count{vm=\"other\",vcpu=\"other\",class=\"vector\"} 2",
		"hypertrace_vcpu_wakeup_seconds_count{vm=\"other\",vcpu=\"other\",class=\"timer\"} 0",
		"hypertrace_vcpu_wakeup_wait_seconds_total{vm=\"other\",vcpu=\"other\",class=\"vector\"} 0.0000014",
		"hypertrace_vcpu_wakeups_reblocked_total{vm=\"other\",vcpu=\"other\"} 2",
		"hypertrace_vcpu_wakeups_reblocked_total{vm=\"pid 500\",vcpu=\"1023\"} 0",
	};
	for (size_t i = 0; i < ARRAY_SIZE(want); i++)
		if (!ASSERT_MSG(has_line(fx.text, want[i]), "no line '%s'", want[i]))
			goto cleanup;
	ASSERT_EQ(lines_with(fx.text, "hypertrace_vcpu_wakeup_seconds_count{vm=\"pid 500\","), 0,
		  "histograms of vCPUs that never woke from a halt");
cleanup:
	ht_exit_table_free(&t);
	fixture_free(&fx);
}

int main(void)
{
	RUN(exposition_of_known_records_is_exact);
	RUN(label_values_are_escaped);
	RUN(label_sets_past_the_cap_are_counted_as_other_with_one_log_line);
	RUN(aggregates_set_cumulative_counts_and_have_no_sum);
	RUN(a_restarted_vm_goes_on_in_its_series_until_dropped);
	RUN(dropping_a_vm_keeps_every_other_set_findable);
	RUN(vm_labels_are_printable_and_bounded);
	RUN(seconds_are_written_exactly);
	RUN(listen_address_is_port_or_addr_and_port);
	RUN(exit_metrics_are_histograms_by_vm_and_reason_with_escaped_labels);
	RUN(exit_metrics_by_vcpu_on_request_and_capped);
	RUN(a_vms_exit_sets_beyond_its_share_go_to_its_own_other);
	RUN(exit_metrics_leave_out_a_dropped_vm);
	RUN(wakeups_are_histograms_by_vcpu_and_class_summed_over_threads);
	RUN(irqs_are_histograms_by_vcpu_and_class_summed_over_threads);
	RUN(timer_dues_are_one_histogram_per_vcpu_with_their_parts);
	RUN(wakeups_past_the_vcpu_cap_are_summed_under_other);
	return ht_test_exit_status();
}
