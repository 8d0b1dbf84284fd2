// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Writes trace files for the export tests.
 *
 *   trace_gen synth FILE [--calls N] [--drops]   N (default 300) hypercalls
 *       on each of 3 vCPU threads (2 nr values, 64-bit arguments above 2^53)
 *       run through the real BPF handlers as synthetic events, drained by the
 *       real recording into FILE. --drops: 100 calls each into a one-page ring
 *       buffer that overflows, so the trailer counts drops. Needs root.
 *   trace_gen bulk FILE N [--wide]   N records of 4 vCPU threads written with
 *       the trace file writer (no BPF): a large input for memory tests.
 *       --wide: latencies spread over 4 us .. 1 ms, higher on higher vCPUs,
 *       so percentiles fall in wide histogram buckets.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "common/parse_number.h"
#include "record/recording.h"
#include "record/tracer.h"
#include "synth.h"
#include "tracefile/trace_writer.h"

#define THREADS 3
#define CALLS_PER_THREAD 300
#define KERNEL_ADDRESS 0xffffffff81234000ull /* above 2^53: exact only as a string in JSON */

static struct ht_synth_layout layout;
static struct ht_tracer *tracer;
static unsigned int calls_per_thread = CALLS_PER_THREAD;
static int thread_errors;

static void *vcpu_thread(void *arg)
{
	__u32 vcpu = (__u32)(unsigned long)arg;
	int err = 0;

	for (__u64 i = 0; i < calls_per_thread; i++) {
		__u64 rip = 0x7f0000001000ull + vcpu * 0x100 + (i % 4);
		err |= ht_synth_exit(&layout, tracer, HT_ISA_SVM, HT_SVM_EXIT_CODE_VMMCALL, rip, vcpu);
		err |= ht_synth_hypercall(&layout, tracer, i % 5 ? 1000 : 1001, KERNEL_ADDRESS + i,
					  i, (__u64)vcpu << 32 | i, ~i);
		err |= ht_synth_entry(&layout, tracer, vcpu, rip + 3);
	}
	if (err)
		__atomic_fetch_add(&thread_errors, 1, __ATOMIC_RELAXED);
	return NULL;
}

static int synth(const char *path, bool drops)
{
	struct ht_tracer_opts o = { .isa = HT_ISA_SVM, .synthetic = true,
				    .ringbuf_bytes = drops ? 4096 : HT_DEFAULT_RINGBUF_BYTES };
	struct ht_file_header hdr;
	struct ht_recording rec;
	struct ht_trailer trailer;
	struct ht_writer *w;
	pthread_t th[THREADS];
	char err[512];
	int ret;

	ht_filters_default(&o.filters);
	o.filters.nr[1] = 1001;
	o.filters.nr_count = 2;
	if ((ret = ht_synth_layout_load(&layout, err, sizeof(err))) ||
	    (ret = ht_tracer_load(&tracer, &o, err, sizeof(err)))) {
		fprintf(stderr, "trace_gen: %s\n", err);
		return 1;
	}
	ht_header_init(&hdr);
	hdr.filter_nr_count = 2;
	hdr.filter_nr[0] = 1000;
	hdr.filter_nr[1] = 1001;
	hdr.ringbuf_bytes = (__u32)o.ringbuf_bytes;
	if (ht_writer_open(path, true, &hdr, &w, err, sizeof(err)) || ht_recording_init(&rec, tracer, w)) {
		fprintf(stderr, "trace_gen: %s\n", err);
		return 1;
	}
	if (drops)
		calls_per_thread = 100; /* 46 records fit in one page: the rest is dropped */
	for (unsigned long i = 0; i < THREADS; i++)
		pthread_create(&th[i], NULL, vcpu_thread, (void *)i);
	for (int i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	ret = ht_recording_finish(&rec, &trailer);
	ht_tracer_destroy(tracer);
	if (ret || thread_errors) {
		fprintf(stderr, "trace_gen: recording failed: %s\n", ret ? strerror(-ret) : "a synthetic event failed");
		return 1;
	}
	printf("%llu records, %llu dropped\n", (unsigned long long)trailer.records,
	       (unsigned long long)ht_trailer_lost(&trailer));
	return 0;
}

static int bulk(const char *path, uint64_t n, bool wide)
{
	struct ht_file_header hdr;
	struct ht_trailer t = { 0 };
	struct ht_writer *w;
	char err[512];

	ht_header_init(&hdr);
	if (ht_writer_open(path, true, &hdr, &w, err, sizeof(err))) {
		fprintf(stderr, "trace_gen: %s\n", err);
		return 1;
	}
	for (uint64_t i = 0; i < n; i++) {
		struct ht_record r = {
			.exit_ns = hdr.start_monotonic_ns + 1000 + i * 250,
			.guest_rip = 0x7f0000001000ull + i % 4,
			.a0 = KERNEL_ADDRESS + i, .a1 = i, .a2 = i * 3, .a3 = ~i,
			.nr = 1000, .exit_reason = HT_SVM_EXIT_CODE_VMMCALL,
			.exit_to_hcall_ns = 100 + i % 50, .hcall_to_entry_ns = 80 + i % 30,
			.host_pid = 4242, .host_tid = 4243 + (__u32)(i % 4), .vcpu_id = (__u16)(i % 4),
			.exit_cpu = (__u16)(i % 2), .entry_cpu = (__u16)(i % 2), .isa = HT_ISA_SVM,
		};
		if (wide) {
			/* A scrambled spread per vCPU, the ranges of the vCPUs overlapping. */
			uint64_t spread = (i * 2654435761u) % 250000;
			r.exit_to_hcall_ns = (__u32)(4096 + r.vcpu_id * 100000 + spread);
			r.hcall_to_entry_ns = (__u32)(4096 + (spread * 7) % 500000);
		}
		ht_writer_add(w, &r);
	}
	t.records = n;
	t.end_monotonic_ns = hdr.start_monotonic_ns + 1000 + n * 250;
	t.end_realtime_ns = hdr.start_realtime_ns + 1000 + n * 250;
	if (ht_writer_close(w, &t)) {
		fprintf(stderr, "trace_gen: cannot write %s\n", path);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	uint64_t n;

	if (argc >= 3 && !strcmp(argv[1], "synth")) {
		bool drops = false;
		for (int i = 3; i < argc; i++) {
			if (!strcmp(argv[i], "--drops"))
				drops = true;
			else if (!strcmp(argv[i], "--calls") && i + 1 < argc && ht_parse_u64(argv[i + 1], 1, 100000, &n))
				calls_per_thread = (unsigned int)n, i++;
			else
				goto usage;
		}
		return synth(argv[2], drops);
	}
	if ((argc == 4 || (argc == 5 && !strcmp(argv[4], "--wide"))) && !strcmp(argv[1], "bulk") &&
	    ht_parse_u64(argv[3], 1, UINT64_MAX, &n))
		return bulk(argv[2], n, argc == 5);
usage:
	fprintf(stderr, "usage: trace_gen synth FILE [--calls N] [--drops] | trace_gen bulk FILE N [--wide]\n");
	return 2;
}
