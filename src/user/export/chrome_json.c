// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "export/chrome_json.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"
#include "common/escape.h"
#include "export/chrome_boot.h"
#include "export/chrome_guest.h"
#include "export/chrome_initcalls.h"
#include "export/chrome_time.h"
#include "export/id_pair_table.h"
#include "tracefile/output_file.h"
#include "tracefile/wallclock.h"

struct ht_chrome_writer {
	FILE *f;
	struct ht_output out; /* created unnamed, named once complete */
	char path[4096];
	struct ht_file_header hdr;
	struct ht_id_pair_table *threads; /* value: the pid or tid, any non-NULL marker */
	bool first;                      /* no event written yet: no comma before the next */
	struct ht_chrome_guest *guest;   /* decoded guest events, if a decoder was given */
	const struct ht_decoder *dec;    /* that decoder */
	unsigned long long forged;       /* records of the guest module's nr it did not send: not decoded */
	char last_ts[40];                /* the latest record's ts text: where open guest slices end */
	struct ht_chrome_boot *boot;     /* the VMs' boots, from the first boot exit on */
	struct ht_guest_traces *traces;  /* the guests' own traces (their initcalls), from the first record on */
};

static const char *isa_name(__u8 isa)
{
	return isa == HT_ISA_VMX ? "VMX" : isa == HT_ISA_SVM ? "SVM" : "?";
}

int ht_chrome_open(const char *path, bool force, mode_t mode, const struct ht_file_header *h,
		   struct ht_chrome_writer **out, char *err, size_t errlen)
{
	const struct ht_output_spec spec = { .cmd = "convert", .opt = "--chrome", .what = "a JSON file", .force = force };
	struct ht_chrome_writer *w = calloc(1, sizeof(*w));
	int ret, fd;

	if (!w || !(w->threads = ht_id_pair_table_new())) {
		free(w);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	ret = ht_output_create(&w->out, path, &spec, err, errlen);
	if (!ret)
		ret = ht_output_set_access(&w->out, mode, (uid_t)-1, (gid_t)-1, err, errlen);
	/* The stream has a descriptor of its own: the output's stays for publishing. */
	if (!ret && ((fd = dup(w->out.fd)) < 0 || !(w->f = fdopen(fd, "w")))) {
		ret = -errno;
		if (fd >= 0)
			close(fd);
		snprintf(err, errlen, "cannot write %s: %s", path, strerror(-ret));
	}
	if (ret) {
		ht_output_release(&w->out);
		ht_id_pair_table_free(w->threads);
		free(w);
		return ret;
	}
	snprintf(w->path, sizeof(w->path), "%s", path);
	w->hdr = *h;
	w->first = true;
	/* "ns": the viewers show durations in ns, the unit the records have. */
	fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n", w->f);
	*out = w;
	return 0;
}

static void free_traces(struct ht_guest_traces *t)
{
	if (t)
		ht_guest_traces_free(t);
	free(t);
}

void ht_chrome_abandon(struct ht_chrome_writer *w)
{
	if (!w)
		return;
	if (w->guest)
		ht_chrome_guest_free(w->guest);
	fclose(w->f);
	ht_output_release(&w->out);
	ht_id_pair_table_free(w->threads);
	ht_chrome_boot_free(w->boot);
	free_traces(w->traces);
	free(w);
}

static void separator(struct ht_chrome_writer *w)
{
	if (!w->first)
		fputs(",\n", w->f);
	w->first = false;
}

static char marker; /* the value of w->threads' entries: any non-NULL */

/* The process name event the first time a VM process appears (a vCPU thread's or its boot's). */
static int name_process(struct ht_chrome_writer *w, uint32_t pid)
{
	/* tid 0 stands for the process itself: a vCPU thread is never tid 0. */
	if (ht_id_pair_table_get(w->threads, pid, 0))
		return 0;
	if (ht_id_pair_table_put(w->threads, pid, 0, &marker))
		return -ENOMEM;
	separator(w);
	fprintf(w->f, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%u,\"tid\":%u,\"args\":{\"name\":\"VM process %u\"}}",
		pid, pid, pid);
	return 0;
}

/* Process and thread name events the first time a vCPU thread appears. */
static int name_thread(struct ht_chrome_writer *w, const struct ht_record *r)
{
	if (ht_id_pair_table_get(w->threads, r->host_pid, r->host_tid))
		return 0;
	if (name_process(w, r->host_pid))
		return -ENOMEM;
	if (ht_id_pair_table_put(w->threads, r->host_pid, r->host_tid, &marker))
		return -ENOMEM;
	separator(w);
	fprintf(w->f, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%u,\"tid\":%u,\"args\":{\"name\":\"vCPU %u (tid %u)\"}}",
		r->host_pid, r->host_tid, r->vcpu_id, r->host_tid);
	separator(w);
	fprintf(w->f, "{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":%u,\"tid\":%u,\"args\":{\"sort_index\":%u}}",
		r->host_pid, r->host_tid, r->vcpu_id);
	return 0;
}

/* Opens a complete event; ts and dur are texts (see ht_chrome_add). */
static void slice(struct ht_chrome_writer *w, const struct ht_record *r, const char *name,
		  const char *ts, const char *dur)
{
	separator(w);
	fprintf(w->f, "{\"ph\":\"X\",\"cat\":\"hypercall\",\"name\":\"%s\",\"pid\":%u,\"tid\":%u,\"ts\":%s,\"dur\":%s",
		name, r->host_pid, r->host_tid, ts, dur);
}

/*
 * The text of ns as microseconds, whose double must be at least min: the
 * exact "12.345" if its double is, else the double just above min, written in
 * full ("12.345000000000002"). Such a double exceeds the exact value by less
 * than a ns, so readers that take the text to the ns (Perfetto drops the
 * digits beyond) and readers that round the double (DevTools) get the same ns.
 */
static double time_text(char *buf, size_t len, __s64 ns, double min)
{
	double v = ht_chrome_us_value(ns);

	if (v >= min) {
		ht_chrome_us_text(buf, len, ns);
		return v;
	}
	/* min is a few ulps above v at most: it comes from sums of these very texts. */
	for (int i = 0; i < 8 && v < min; i++)
		v = nextafter(v, INFINITY);
	snprintf(buf, len, "%.17g", v);
	return v;
}

/*
 * A duration's text: exact, or longer by less than a ns so that start + dur,
 * as a reader adds them in doubles, reaches min.
 */
static void dur_text(char *buf, size_t len, double start, __u64 ns, double min)
{
	double d = ht_chrome_us_value((__s64)ns);

	if (start + d >= min) {
		ht_chrome_us_text(buf, len, (__s64)ns);
		return;
	}
	d = min - start; /* exact when start and min are close (Sterbenz) */
	for (int i = 0; i < 8 && start + d < min; i++)
		d = nextafter(d, INFINITY);
	snprintf(buf, len, "%.17g", d);
}

static void separator_cb(void *w)
{
	separator(w);
}

int ht_chrome_decode(struct ht_chrome_writer *w, const struct ht_decoder *dec)
{
	w->dec = dec;
	w->guest = ht_chrome_guest_new(dec);
	return w->guest ? 0 : -ENOMEM;
}

int ht_chrome_add(struct ht_chrome_writer *w, const struct ht_record *r, char *err, size_t errlen)
{
	__s64 ts = (__s64)(r->exit_ns - w->hdr.start_monotonic_ns);
	/* Modulo 2^64 as ts is: a crafted record's times must not overflow it. */
	__s64 phase_ts = (__s64)((__u64)ts + r->exit_to_hcall_ns);
	__u64 total = (__u64)r->exit_to_hcall_ns + r->hcall_to_entry_ns;
	char name[32], ts_text[40], phase_ts_text[40], dur_total[40], dur_exit[40], dur_hcall[40];

	if (name_thread(w, r)) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	/*
	 * Readers nest slices by comparing ts + dur in doubles (DevTools), where
	 * the first phase may end an ulp after the second starts, or the second
	 * an ulp after the hypercall ends; they then refuse to nest it. So the
	 * second phase starts, and the hypercall ends, that much later: by less
	 * than a ns (time_text).
	 */
	double start = ht_chrome_us_value(ts);
	double exit_end = start + ht_chrome_us_value(r->exit_to_hcall_ns);
	double phase_start = time_text(phase_ts_text, sizeof(phase_ts_text), phase_ts, exit_end);
	double phase_end = phase_start + ht_chrome_us_value(r->hcall_to_entry_ns);
	ht_chrome_us_text(ts_text, sizeof(ts_text), ts);
	ht_chrome_us_text(dur_exit, sizeof(dur_exit), r->exit_to_hcall_ns);
	ht_chrome_us_text(dur_hcall, sizeof(dur_hcall), r->hcall_to_entry_ns);
	dur_text(dur_total, sizeof(dur_total), start, total, phase_end);

	/* The whole round trip, named by nr so viewers colour each nr alike. */
	snprintf(name, sizeof(name), "hypercall %u", r->nr);
	slice(w, r, name, ts_text, dur_total);
	/* 64-bit values as hex strings: JSON numbers are doubles in the viewers. */
	fprintf(w->f, ",\"args\":{\"nr\":%u,\"a0\":\"0x%llx\",\"a1\":\"0x%llx\",\"a2\":\"0x%llx\",\"a3\":\"0x%llx\","
		"\"rip\":\"0x%llx\",\"reason\":\"0x%x\",\"isa\":\"%s\",\"vcpu_id\":%u,\"exit_cpu\":%u,\"entry_cpu\":%u,"
		"\"exit_ns\":\"%llu\",\"flags\":%u}}",
		r->nr, (unsigned long long)r->a0, (unsigned long long)r->a1, (unsigned long long)r->a2,
		(unsigned long long)r->a3, (unsigned long long)r->guest_rip, r->exit_reason, isa_name(r->isa),
		r->vcpu_id, r->exit_cpu, r->entry_cpu, (unsigned long long)r->exit_ns, r->flags);
	/* The two phases, nested in it, one after the other. */
	slice(w, r, "exit->hypercall", ts_text, dur_exit);
	fputc('}', w->f);
	slice(w, r, "hypercall->entry", phase_ts_text, dur_hcall);
	fputc('}', w->f);
	if (w->guest) {
		/* A forged one is the hypercall slice alone: ht_decoder_event gives it no event. */
		w->forged += ht_decoder_forged(w->dec, r);
		if (ht_chrome_guest_add(w->guest, w->f, separator_cb, w, r, ts_text)) {
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
		snprintf(w->last_ts, sizeof(w->last_ts), "%s", ts_text);
	}
	if (ferror(w->f)) {
		snprintf(err, errlen, "cannot write %s: %s", w->path, strerror(errno));
		return -EIO;
	}
	return 0;
}

int ht_chrome_add_boot_exit(struct ht_chrome_writer *w, const struct ht_boot_exit *be, char *err, size_t errlen)
{
	if ((!w->boot && !(w->boot = ht_chrome_boot_new())) || ht_chrome_boot_add(w->boot, be)) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	return 0;
}

int ht_chrome_add_guest_trace(struct ht_chrome_writer *w, const struct ht_record *r, char *err, size_t errlen)
{
	if (!w->traces) {
		if (!(w->traces = malloc(sizeof(*w->traces)))) {
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
		ht_guest_traces_init(w->traces);
	}
	if (ht_guest_traces_add(w->traces, r)) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	return 0;
}

static int name_vm_cb(void *w, uint32_t pid)
{
	return name_process(w, pid);
}

/* A JSON string member: valid JSON whatever v holds (a crafted file chooses the header's strings). */
static void put_string(FILE *f, const char *key, const char *v)
{
	fprintf(f, ",\"%s\":\"", key);
	ht_escape_fputs(f, v, HT_ESC_JSON);
	fputc('"', f);
}

int ht_chrome_close(struct ht_chrome_writer *w, const struct ht_read_status *st, const char *source,
		    const char *selection, struct ht_initcall_counts *initcalls, char *err, size_t errlen)
{
	const struct ht_file_header *h = &w->hdr;
	struct ht_initcall_counts drawn = { 0 };
	char buf[256];
	size_t used = 0;
	int ret = 0;

	if (w->guest) {
		ht_chrome_guest_finish(w->guest, w->f, separator_cb, w, w->last_ts[0] ? w->last_ts : "0");
		ht_chrome_guest_free(w->guest);
	}
	if (w->boot && ht_chrome_boot_write(w->boot, w->f, separator_cb, name_vm_cb, w, h->start_monotonic_ns)) {
		snprintf(err, errlen, "out of memory");
		ret = -ENOMEM;
	}
	if (!ret && w->traces &&
	    ht_chrome_initcalls_write(w->traces, w->f, separator_cb, name_vm_cb, w, h->start_monotonic_ns, &drawn)) {
		snprintf(err, errlen, "out of memory");
		ret = -ENOMEM;
	}
	fputs("\n],\n\"metadata\":{\"tracer\":\"hypertrace-bpf\"", w->f);
	put_string(w->f, "tracer_version", HT_VERSION);
	put_string(w->f, "trace_file", source);
	put_string(w->f, "host_kernel_release", h->kernel_release);
	put_string(w->f, "cpu_vendor", h->cpu_vendor);
	for (__u32 i = 0; i < h->filter_nr_count && i < HT_MAX_SELECTED_NR; i++)
		used += (size_t)snprintf(buf + used, sizeof(buf) - used, "%s%u", i ? "," : "", h->filter_nr[i]);
	put_string(w->f, "filter_nr", buf);
	ht_format_wallclock(buf, sizeof(buf), h, h->start_monotonic_ns, HT_TIME_ISO);
	/* ts 0 is this instant: the viewers' times are relative to it. */
	put_string(w->f, "recording_start", buf);
	if (st->has_trailer) {
		const struct ht_trailer *t = &st->trailer;
		ht_format_wallclock(buf, sizeof(buf), h, t->end_monotonic_ns, HT_TIME_ISO);
		put_string(w->f, "recording_end", buf);
		fprintf(w->f, ",\"dropped\":%llu,\"dropped_ringbuf_full\":%llu,\"dropped_no_thread_state\":%llu,"
			"\"dropped_superseded\":%llu,\"dropped_not_written\":%llu",
			(unsigned long long)ht_trailer_lost(t), (unsigned long long)t->ringbuf_drops,
			(unsigned long long)t->state_alloc_fail, (unsigned long long)t->superseded,
			(unsigned long long)t->not_written);
	}
	if (w->forged)
		fprintf(w->f, ",\"forged_guest_events\":%llu", w->forged);
	/* Initcalls not drawn: of guests whose trace has no clock pair, and those that fit no track. */
	if (drawn.vms_without_clock)
		fprintf(w->f, ",\"initcall_vms_without_clock\":%llu", drawn.vms_without_clock);
	if (drawn.not_drawn)
		fprintf(w->f, ",\"initcalls_not_drawn\":%llu", drawn.not_drawn);
	put_string(w->f, "selection", selection);
	put_string(w->f, "read_status", st->has_trailer && !st->damaged ? "complete" : st->reason);
	fputs("}}\n", w->f);
	if (ferror(w->f) | fflush(w->f)) {
		snprintf(err, errlen, "cannot write %s: %s", w->path, strerror(errno));
		ret = -EIO;
	}
	if (fclose(w->f) && !ret) {
		snprintf(err, errlen, "cannot write %s: %s", w->path, strerror(errno));
		ret = -EIO;
	}
	/* On disk before it has its name: a crash leaves the old file or the whole new one. */
	if (!ret && fsync(w->out.fd)) {
		snprintf(err, errlen, "cannot write %s: %s", w->path, strerror(errno));
		ret = -EIO;
	}
	if (!ret)
		ret = ht_output_publish(&w->out, err, errlen);
	ht_output_release(&w->out);
	ht_id_pair_table_free(w->threads);
	ht_chrome_boot_free(w->boot);
	free_traces(w->traces);
	if (initcalls)
		*initcalls = drawn;
	free(w);
	return ret;
}
