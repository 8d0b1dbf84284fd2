// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "export/chrome_boot.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include "boot/boot_timeline.h"
#include "common/vcpu_states.h"
#include "export/chrome_time.h"
#include "export/initcall_spans.h"

struct ht_chrome_boot {
	struct ht_boot_timelines timelines;
};

struct ht_chrome_boot *ht_chrome_boot_new(void)
{
	struct ht_chrome_boot *b = calloc(1, sizeof(*b));

	if (b)
		ht_boot_timelines_init(&b->timelines);
	return b;
}

int ht_chrome_boot_add(struct ht_chrome_boot *b, const struct ht_boot_exit *be)
{
	return ht_boot_timelines_add(&b->timelines, be, NULL);
}

void ht_chrome_boot_free(struct ht_chrome_boot *b)
{
	if (!b)
		return;
	ht_boot_timelines_free(&b->timelines);
	free(b);
}

static void write_phases(const struct ht_boot_timeline *t, FILE *f, ht_chrome_sep_fn sep, void *arg, uint64_t t0)
{
	for (int p = 0; p < HT_BOOT_NPHASES; p++) {
		const struct ht_boot_phase_stats *s = &t->phases[p];
		uint64_t end = ht_boot_phase_end(t, (enum ht_boot_phase)p);
		/* Modulo 2^64 as the records' ts: a crafted file's times must not overflow. */
		__s64 ts = (__s64)(s->start_ns - t0);
		char ts_text[40], dur[40];

		if (!s->reached)
			continue;
		ht_chrome_us_text(ts_text, sizeof(ts_text), ts);
		ht_chrome_dur_text_before(dur, sizeof(dur), ht_chrome_us_value(ts), end - s->start_ns,
					  ht_chrome_us_value((__s64)(end - t0)));
		sep(arg);
		fprintf(f, "{\"ph\":\"X\",\"cat\":\"boot\",\"name\":\"%s\",\"pid\":%u,\"tid\":%u,\"ts\":%s,\"dur\":%s,"
			"\"args\":{\"start_uncertainty_ns\":%" PRIu64 ",\"start_exact\":%d,\"exits\":%" PRIu64,
			ht_boot_phase_names[p], t->pid, HT_CHROME_BOOT_TID, ts_text, dur,
			ht_boot_phase_uncertainty(t, (enum ht_boot_phase)p), p == HT_BOOT_FIRMWARE && t->start_exact,
			s->exits);
		for (int st = 0; st < HT_VCPU_NSTATES; st++)
			fprintf(f, ",\"%s_ns\":%" PRIu64, ht_vcpu_state_names[st], s->state_ns[st]);
		/* 64-bit values as hex strings: JSON numbers are doubles in the viewers. */
		fprintf(f, ",\"first_rip\":\"0x%" PRIx64 "\",\"first_vcpu\":%u}}", s->first_rip, s->first_vcpu);
	}
}

int ht_chrome_boot_write(const struct ht_chrome_boot *b, FILE *f, ht_chrome_sep_fn sep, ht_chrome_name_vm_fn name_vm,
			 void *arg, uint64_t t0)
{
	size_t n;
	const struct ht_boot_timeline **vms = ht_boot_timelines_sorted(&b->timelines, &n);
	char ts[40];
	int ret = 0;

	if (!vms)
		return ht_boot_timelines_count(&b->timelines) ? -ENOMEM : 0;
	for (size_t i = 0; i < n && !ret; i++) {
		const struct ht_boot_timeline *t = vms[i];

		if ((ret = name_vm(arg, t->pid)))
			break;
		sep(arg);
		fprintf(f, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%u,\"tid\":%u,\"args\":{\"name\":\"boot phases\"}}",
			t->pid, HT_CHROME_BOOT_TID);
		/* Above the initcalls' tracks and the vCPU threads, which are sorted by their vCPU id. */
		sep(arg);
		fprintf(f, "{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":%u,\"tid\":%u,\"args\":{\"sort_index\":%d}}",
			t->pid, HT_CHROME_BOOT_TID, HT_INITCALL_RANK_BOOT);
		write_phases(t, f, sep, arg, t0);
		if (t->ended) {
			ht_chrome_us_text(ts, sizeof(ts), (__s64)(t->end_ns - t0));
			sep(arg);
			fprintf(f, "{\"ph\":\"I\",\"s\":\"t\",\"cat\":\"boot\",\"name\":\"boot ended\",\"pid\":%u,\"tid\":%u,"
				"\"ts\":%s,\"args\":{\"phase\":\"%s\"}}",
				t->pid, HT_CHROME_BOOT_TID, ts, ht_boot_phase_names[t->phase]);
		}
	}
	free(vms);
	return ret;
}
