// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * `report --boot`: the boots a recording made with record --boot holds, per
 * VM its phases (boot/boot_timeline.c) as text or CSV, where its boot
 * stopped, and what the file does not tell.
 */
#include "report/report_boot.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "boot/boot_timeline.h"
#include "cli.h"
#include "common/escape.h"
#include "common/hashmap.h"
#include "common/util.h"
#include "common/vcpu_states.h"
#include "decode/guest_symbols.h"
#include "exits/exit_causes.h"
#include "exits/exit_reasons.h"
#include "reading/read_outcome.h"
#include "report/report_initcalls.h"
#include "tracefile/trace_reader.h"
#include "tracefile/wallclock.h"

/* The first hypercall record of each VM process: its guest's first event the host saw. */
struct first_hypercall {
	uint64_t exit_ns;
	uint32_t nr;
};

struct boot_reading {
	struct ht_boot_timelines timelines;
	const struct ht_selection *selection;
	struct ht_reader *reader;
	int error;
	struct ht_hashmap firsts; /* timeline -> struct first_hypercall *: one per VM process, a pid given again included */
	struct ht_guest_traces traces; /* the guests' own traces, replayed (guest/boottrace) */
};

static void take_boot_exit(void *ctx, const struct ht_boot_exit *be)
{
	struct boot_reading *r = ctx;

	if (!ht_selection_match_vm(r->selection, be->host_pid, r->reader))
		return;
	if (!r->error)
		r->error = ht_boot_timelines_add(&r->timelines, be, ht_reader_vm_name(r->reader, be->host_pid));
}

static void note_hypercall(struct boot_reading *r, const struct ht_record *rec)
{
	struct first_hypercall *f;

	if (!ht_selection_match_vm(r->selection, rec->host_pid, r->reader))
		return;
	if (ht_guest_traces_add(&r->traces, rec))
		r->error = -ENOMEM;

	/* The VM process that ran then: the blocks are in time order, so its boot's first entry was read. */
	const struct ht_boot_timeline *t = ht_boot_timelines_at(&r->timelines, rec->host_pid, rec->exit_ns);
	long found;

	if (!t)
		return;
	if (ht_hashmap_find(&r->firsts, (long)t, &found)) {
		f = (struct first_hypercall *)found;
		if (rec->exit_ns < f->exit_ns)
			*f = (struct first_hypercall){ .exit_ns = rec->exit_ns, .nr = rec->nr };
		return;
	}
	f = malloc(sizeof(*f));
	if (!f || ht_hashmap_insert(&r->firsts, (long)t, (long)f, HT_HASHMAP_ADD, NULL, NULL)) {
		free(f);
		r->error = -ENOMEM;
		return;
	}
	*f = (struct first_hypercall){ .exit_ns = rec->exit_ns, .nr = rec->nr };
}

static const struct first_hypercall *first_hypercall_of(const struct boot_reading *r, const struct ht_boot_timeline *t)
{
	long f;

	return ht_hashmap_find(&r->firsts, (long)t, &f) ? (const struct first_hypercall *)f : NULL;
}

static void free_firsts(struct boot_reading *r)
{
	struct ht_hashmap_entry *cur;
	size_t bkt;

	ht_hashmap_for_each(&r->firsts, cur, bkt)
		free(cur->pvalue);
	ht_hashmap_clear(&r->firsts);
}

static double secs(uint64_t ns)
{
	return (double)ns / 1e9;
}

/* "name+0xoff" of a guest address if symbols name it, else its hex. */
static void format_rip(char *buf, size_t len, const struct ht_symtab *syms, uint64_t rip)
{
	char sym[HT_SYM_TEXT_MAX];

	if (syms && ht_symtab_format(syms, rip, sym, sizeof(sym)))
		snprintf(buf, len, "0x%" PRIx64 " %s", rip, sym);
	else
		snprintf(buf, len, "0x%" PRIx64, rip);
}

static void print_mode(FILE *out, uint8_t mode)
{
	if (!(mode & HT_BOOT_MODE_KNOWN))
		fputs("mode ?", out);
	else if (mode & HT_BOOT_MODE_LMA)
		fputs("long mode", out);
	else if (mode & HT_BOOT_MODE_PE)
		fputs(mode & HT_BOOT_MODE_PG ? "protected, paging" : "protected", out);
	else
		fputs("real mode", out);
}

/* The phase's exits by reason, the most frequent first, with their top causes. */
static void print_phase_exits(FILE *out, const struct ht_boot_phase_stats *s)
{
	struct ht_boot_reason_count r[HT_BOOT_TOP_REASONS];
	size_t n = s->nreasons;

	memcpy(r, s->reasons, n * sizeof(r[0]));
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && r[j].count > r[j - 1].count; j--) {
			struct ht_boot_reason_count x = r[j];
			r[j] = r[j - 1];
			r[j - 1] = x;
		}
	for (size_t i = 0; i < n && i < 5; i++) {
		char name[64];

		ht_exit_reason_format(name, sizeof(name), r[i].isa, r[i].reason);
		fprintf(out, "%s%s %" PRIu64, i ? ", " : "", name, r[i].count);
		/* Its most frequent cause, if it has any. */
		const struct ht_boot_cause_count *top = NULL;
		for (size_t c = 0; c < s->ncauses; c++)
			if (s->causes[c].reason == r[i].reason && s->causes[c].isa == r[i].isa &&
			    (!top || s->causes[c].count > top->count))
				top = &s->causes[c];
		if (top) {
			struct ht_exit_cause_key k = { .reason = top->reason, .isa = top->isa, .kind = top->kind,
						       .detail = top->detail, .value = top->value };
			char cause[96];

			ht_exit_cause_format(cause, sizeof(cause), &k);
			fprintf(out, " (most: %s %" PRIu64 ")", cause, top->count);
		}
	}
	if (n > 5 || s->reasons_other)
		fputs(", ...", out);
}

static void print_timeline(FILE *out, const struct ht_boot_timeline *t, const struct boot_reading *r,
			   const struct ht_file_header *h, const struct ht_symtab *syms)
{
	const char *name = t->vm_name;
	char when[64];

	ht_format_wallclock(when, sizeof(when), h, t->start_ns, HT_TIME_ISO);
	fprintf(out, "VM ");
	if (name) {
		fputc('\'', out);
		ht_escape_fputs(out, name, HT_ESC_TEXT);
		fputs("' ", out);
	}
	fprintf(out, "(process %u): booted from %s (%s), %zu vCPUs, %" PRIu64 " boot exits\n", (unsigned int)t->pid,
		when, t->start_exact ? "its first entry, exact" : "its first exit seen: its first entry was not",
		t->nvcpus, t->records);
	fprintf(out, "  %-13s %12s %12s %12s %8s", "phase", "start s", "length s", "start +-", "exits");
	for (int s = 0; s < HT_VCPU_NSTATES; s++)
		fprintf(out, " %9s", ht_vcpu_state_names[s]);
	fputc('\n', out);
	for (int p = 0; p < HT_BOOT_NPHASES; p++) {
		const struct ht_boot_phase_stats *s = &t->phases[p];

		if (!s->reached) {
			fprintf(out, "  %-13s %12s\n", ht_boot_phase_names[p], "not seen");
			continue;
		}
		char unc[32];

		if (p == HT_BOOT_FIRMWARE && t->start_exact)
			snprintf(unc, sizeof(unc), "exact");
		else
			snprintf(unc, sizeof(unc), "%.6f", secs(s->uncertainty_ns));
		fprintf(out, "  %-13s %12.6f %12.6f %12s %8" PRIu64, ht_boot_phase_names[p], secs(s->start_ns - t->start_ns),
			secs(ht_boot_phase_end(t, p) - s->start_ns), unc, s->exits);
		for (int st = 0; st < HT_VCPU_NSTATES; st++)
			fprintf(out, " %9.6f", secs(s->state_ns[st]));
		fputc('\n', out);
	}
	fputs("  (seconds from the VM's first entry; start +-: how much earlier a phase may have begun, the guest ran from its vCPU's entry before the exit that shows it)\n",
	      out);
	for (int p = 0; p < HT_BOOT_NPHASES; p++) {
		const struct ht_boot_phase_stats *s = &t->phases[p];
		char rip[HT_SYM_TEXT_MAX + 32];

		if (!s->reached || !s->exits)
			continue;
		fprintf(out, "  %s: ", ht_boot_phase_names[p]);
		print_phase_exits(out, s);
		if (p != HT_BOOT_FIRMWARE) {
			format_rip(rip, sizeof(rip), syms, s->first_rip);
			fprintf(out, "; shown by vCPU %u's exit at %s", s->first_vcpu, rip);
		}
		fputc('\n', out);
	}
	const struct first_hypercall *fh = first_hypercall_of(r, t);

	if (fh)
		fprintf(out, "  the guest's first hypercall record (nr %u): %.6f s\n", fh->nr, secs(fh->exit_ns - t->start_ns));
	if (t->ended)
		fprintf(out, "  ended: its vCPU threads ended at %.6f s (the VM stopped, or its guest crashed); the last exits:\n",
			secs(t->end_ns - t->start_ns));
	else
		fprintf(out, "  still running at the end of its records (%.6f s); the last exits:\n", secs(t->last_ns - t->start_ns));
	for (size_t i = 0; i < t->nvcpus; i++) {
		const struct ht_boot_vcpu *v = &t->vcpus[i];

		for (unsigned int k = 0; k < v->nlast; k++) {
			const struct ht_boot_last_exit *l = &v->last[(v->nlast_total - v->nlast + k) % HT_BOOT_LAST_EXITS];
			char rip[HT_SYM_TEXT_MAX + 32], reason[64];

			format_rip(rip, sizeof(rip), syms, l->rip);
			ht_exit_reason_format(reason, sizeof(reason), l->isa, l->reason);
			fprintf(out, "    vCPU %u %.6f s %s at %s, ", v->vcpu, secs(l->exit_ns - t->start_ns), reason, rip);
			print_mode(out, l->mode);
			fputc('\n', out);
		}
	}
	if (t->phase < HT_BOOT_USER)
		fprintf(out, "  not reached: %s and later%s\n", ht_boot_phase_names[t->phase + 1],
			t->ended ? "" : " (within the records: a longer --boot-window may show them)");
	const struct ht_guest_trace *g = ht_guest_traces_find(&r->traces, t->pid);
	if (g && ht_boot_timelines_at(&r->timelines, t->pid, g->since_ns) != t) {
		/* One trace is kept per pid, its last replay: this one was another VM process's of the pid. */
		fputs("  no trace of its guest's own kept: the one in the file for its pid is another VM process's\n", out);
	} else if (g) {
		struct ht_initcalls c;

		if (!ht_initcalls_build(g, &c)) {
			ht_print_initcalls(out, g, &c, t->start_ns, "the VM's first entry", "  ");
			ht_initcalls_free(&c);
		}
	} else {
		fputs("  no trace of its guest's own in the file: its initcalls need the guest booted with trace_event=initcall:*, guest/boottrace run in it, and record --nr 1150-1152\n",
		      out);
	}
	if (t->mode_unknown)
		fprintf(out, "  %" PRIu64 " exits without their mode (an entry before them was not seen): their phase is told by their RIP alone\n",
			t->mode_unknown);
	if (t->saturated)
		fprintf(out, "  %" PRIu64 " exits with a part longer than 4.29 s (held at 4.29 s): their phase's times are short by the rest\n",
			t->saturated);
	if (t->vcpus_other)
		fprintf(out, "  %" PRIu64 " exits of vCPUs beyond the first %d: counted nowhere here\n", t->vcpus_other,
			HT_BOOT_MAX_VCPUS);
}

static void print_csv(FILE *out, const struct ht_boot_timeline *t)
{
	const char *name = t->vm_name;

	for (int p = 0; p < HT_BOOT_NPHASES; p++) {
		const struct ht_boot_phase_stats *s = &t->phases[p];

		if (!s->reached)
			continue;
		fprintf(out, "%u,", (unsigned int)t->pid);
		ht_csv_fputs(out, name ? name : "");
		fprintf(out, ",%s,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%d,%" PRIu64, ht_boot_phase_names[p],
			s->start_ns, s->start_ns - t->start_ns, ht_boot_phase_end(t, p) - s->start_ns,
			ht_boot_phase_uncertainty(t, p),
			p == HT_BOOT_FIRMWARE ? t->start_exact : 0, s->exits);
		for (int st = 0; st < HT_VCPU_NSTATES; st++)
			fprintf(out, ",%" PRIu64, s->state_ns[st]);
		fprintf(out, ",0x%" PRIx64 ",%u,%d\n", s->first_rip, s->first_vcpu, t->ended);
	}
}

static int print_boots(const struct ht_report_config *cfg, struct boot_reading *r, const struct ht_file_header *h)
{
	struct ht_symtab syms = { 0 };
	bool have_syms = false;
	size_t n;
	const struct ht_boot_timeline **all = ht_boot_timelines_sorted(&r->timelines, &n);
	char err[256];

	if (cfg->decode.symbols) {
		if (ht_symtab_load(&syms, cfg->decode.symbols, err, sizeof(err))) {
			free(all);
			return ht_runtime_error("%s", err);
		}
		syms.offset = cfg->decode.offset_given ? cfg->decode.offset : 0;
		have_syms = true;
	}
	if (cfg->mode == HT_REPORT_CSV) {
		fputs("pid,vm_name,phase,start_ns,start_from_boot_ns,length_ns,start_uncertainty_ns,start_exact,exits", stdout);
		for (int st = 0; st < HT_VCPU_NSTATES; st++)
			printf(",%s_ns", ht_vcpu_state_names[st]);
		fputs(",first_rip,first_vcpu,ended\n", stdout);
	}
	for (size_t i = 0; i < n; i++) {
		if (cfg->mode == HT_REPORT_CSV)
			print_csv(stdout, all[i]);
		else
			print_timeline(stdout, all[i], r, h, have_syms ? &syms : NULL);
	}
	free(all);
	if (have_syms)
		ht_symtab_free(&syms);
	return HT_EXIT_OK;
}

/* The numbers the BOOT blocks give: what a recording could not keep. */
static void print_losses(const struct ht_reader *reader)
{
	size_t n;
	const struct ht_boot_vm_rec *vms = ht_reader_boot_vms(reader, &n);

	for (size_t i = 0; i < n; i++) {
		if (vms[i].flags & HT_BOOT_VM_F_REFUSED) {
			if (vms[i].vm.over)
				fprintf(stderr, "hypertrace-bpf: %" PRIu64 " VMs that started were not followed: too many boots at once\n",
					(uint64_t)vms[i].vm.over);
			continue;
		}
		if (vms[i].vm.lost)
			fprintf(stderr, "hypertrace-bpf: VM process %u: %" PRIu64 " boot exits lost (ring buffer full): its times and counts are short by them\n",
				(unsigned int)vms[i].pid, (uint64_t)vms[i].vm.lost);
		if (vms[i].vm.over)
			fprintf(stderr, "hypertrace-bpf: VM process %u: %" PRIu64 " exits past the bound of boot exits a VM: not recorded\n",
				(unsigned int)vms[i].pid, (uint64_t)vms[i].vm.over);
	}
}

int ht_report_boot(struct ht_report_config *cfg)
{
	struct boot_reading r = { .selection = &cfg->selection };
	const struct ht_file_header *h = NULL;
	const struct ht_read_status *st = NULL;
	struct ht_record rec;
	char err[512];
	int status;

	ht_boot_timelines_init(&r.timelines);
	ht_hashmap_init(&r.firsts, ht_hash_long, ht_equal_long, NULL);
	ht_guest_traces_init(&r.traces);
	if (ht_reader_open(cfg->path, &r.reader, err, sizeof(err))) {
		status = ht_runtime_error("%s", err);
		goto out;
	}
	h = ht_reader_header(r.reader);
	if (ht_selection_resolve(&cfg->selection, h, err, sizeof(err))) {
		status = ht_usage_error("report", "%s", err);
		goto out;
	}
	ht_reader_set_boot_exit_visitor(r.reader, take_boot_exit, &r);
	while (ht_reader_next(r.reader, &rec) == 1)
		note_hypercall(&r, &rec);
	if (r.error || ht_guest_traces_finish(&r.traces)) {
		status = ht_runtime_error("out of memory for the boots of %s", cfg->path);
		goto out;
	}
	st = ht_reader_status(r.reader);
	if (!st->boot_exits && !st->damaged && !(h->filter_flags & HT_FILTER_F_BOOT)) {
		status = ht_runtime_error("%s has no boot exits: it was recorded without --boot (record --boot -o FILE, then start the VM)",
					  cfg->path);
		goto out;
	}
	if ((status = print_boots(cfg, &r, h)) != HT_EXIT_OK)
		goto out;
	if (!st->boot_exits && !st->damaged)
		fprintf(stderr, "hypertrace-bpf: %s holds no boot: no VM started while it was recorded\n", cfg->path);
	fflush(stdout);
	print_losses(r.reader);
	if (r.timelines.vms_other)
		fprintf(stderr, "hypertrace-bpf: %" PRIu64 " boot exits of VMs beyond the first %d in %s: not shown (select one with -p or --vm)\n",
			r.timelines.vms_other, HT_BOOT_MAX_VMS, cfg->path);
	status = ht_report_read_outcome(cfg->path, st);
out:
	ht_reader_close(r.reader);
	ht_boot_timelines_free(&r.timelines);
	free_firsts(&r);
	ht_guest_traces_free(&r.traces);
	return status;
}
