/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * record --exits in user space: once per interval, read the BPF exit
 * histograms and vCPU threads into a cumulative table, write what changed
 * as an EXITS block (with the identities of new VM processes and threads
 * before it), and keep the interval's difference for the live view. Its
 * cost per interval follows the number of series and threads, never the
 * exit rate: the kernel counted the exits already.
 */
#ifndef HT_EXIT_SAMPLER_H
#define HT_EXIT_SAMPLER_H

#include <stdbool.h>
#include "exits/exit_table.h"
#include "record/tracer.h"
#include "record/vm_ends.h"
#include "record/vm_identity.h"
#include "tracefile/trace_writer.h"

/* A VM process whose share refused new entries: its excess so far (struct ht_vm_share), over its pid's processes. */
struct ht_vm_excess {
	__u32 pid;
	__u64 series_over, causes_over, threads_over; /* base + the live process's */
	__u64 base_series, base_causes, base_threads; /* of the ended processes of this pid */
};

/* A VM process whose BPF entries were freed, and when: its rows go keep_ended_ns later. */
struct ht_ended_vm {
	__u32 pid;
	unsigned long long freed_ns;
};

struct ht_exit_sampler {
	struct ht_tracer *tracer;       /* not owned */
	struct ht_writer *writer;       /* NULL: no file (--no-file); not owned */
	struct ht_thread_set *named;    /* (pid, tid) whose IDENTITY is written; owned */
	const char *proc;               /* "/proc" (tests: a fake tree) */
	struct ht_exit_table total;     /* cumulative since start */
	struct ht_exit_table last;      /* total at the previous sample */
	struct ht_exit_table interval;  /* total - last */
	struct ht_vm_ends ends;         /* VM processes that ended: their BPF entries freed after their last read */
	struct ht_vm_excess *excess;    /* by pid, in the order they first went past their share */
	size_t nexcess, excess_cap;
	/*
	 * Ended VM processes' rows go from total (and last, and what names
	 * them) keep_ended_ns after their entries were freed, once may_forget
	 * (NULL: at once) agrees: the file has their last numbers, and months
	 * of VM churn must not grow the recording. A pid that comes back after
	 * is a new process whose rows count from zero (the file says so:
	 * HT_EXIT_ROW_F_FROM_ZERO). ULLONG_MAX (the default): kept.
	 */
	unsigned long long keep_ended_ns;
	bool (*may_forget)(void *ctx, __u32 pid); /* e.g. not while the metrics still show its VM */
	void *may_forget_ctx;
	struct ht_ended_vm *ended;      /* freed, in the order they were */
	size_t nended, ended_cap;
	struct ht_exit_forgotten forgotten; /* what the forgotten rows held: the recording's totals keep it */
	struct ht_vm_excess excess_forgotten; /* the forgotten VMs' excess, summed (pid 0) */
	size_t nexcess_forgotten;             /* how many VMs that is */
	unsigned long long start_ns, last_ns, interval_ns; /* interval_ns: length of the last interval */
	int write_error;                /* -errno of the first block that could not be queued */
	/* The recording's -p and --vcpu: BPF follows every vCPU thread's waiting, these keep the selected ones. */
	const struct ht_filters *filters; /* NULL: all */
};

/* writer may be NULL. 0 or -ENOMEM. */
int ht_exit_sampler_init(struct ht_exit_sampler *s, struct ht_tracer *t, struct ht_writer *writer,
			 unsigned long long now_ns);
/*
 * Reads the BPF maps and ends an interval at now_ns: total, interval. With
 * final (after ht_tracer_detach) it also counts the exits still in the host
 * and writes the final block. A VM process that had ended before the read
 * has its last numbers in it: its BPF entries are freed after it (not at
 * the final one: the tracer goes). 0 or -errno.
 */
int ht_exit_sampler_sample(struct ht_exit_sampler *s, unsigned long long now_ns, bool final);
void ht_exit_sampler_free(struct ht_exit_sampler *s);

#endif
