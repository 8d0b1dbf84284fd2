// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The sampler's look for ended VM processes (record/vm_ends.c) before each
 * read of BPF: every VM process of the rows is looked at, once a read,
 * however its cause rows interleave with other VMs' (they come in the order
 * they arrived); an ended one is found once, a freed one not looked at.
 * The look is kill(pid, 0) in record: one a VM a second, not one a row.
 */
#include <stdbool.h>
#include <string.h>
#include "exits/exit_causes.h"
#include "exits/exit_table.h"
#include "record/vm_ends.h"
#include "test.h"

#define NVMS 20
#define CAUSES_PER_VM 5

static unsigned int looks[NVMS + 1];
static __u32 ended_pid; /* the one process that ended (0: none) */

static bool pretend_ended(__u32 pid)
{
	if (pid <= NVMS)
		looks[pid]++;
	return pid == ended_pid;
}

/* 20 VMs (pids 1..20), two series each, and five causes each interleaved: 1 2 .. 20 1 2 .. 20 .. */
static bool fill(struct ht_exit_table *t)
{
	for (__u32 pid = 1; pid <= NVMS; pid++)
		for (__u32 reason = 1; reason <= 2; reason++) {
			struct ht_exit_key k = { .pid = pid, .isa = HT_ISA_SVM, .reason = reason };

			if (!ht_exit_table_series(t, &k, true))
				return false;
		}
	for (__u32 round = 0; round < CAUSES_PER_VM; round++)
		for (__u32 pid = 1; pid <= NVMS; pid++) {
			struct ht_exit_cause_key k = { .pid = pid, .isa = HT_ISA_SVM, .reason = 0x7b, .value = round };

			if (!ht_exit_causes_row(&t->causes, &k, true))
				return false;
		}
	return true;
}

static bool each_looked_at(unsigned int times)
{
	for (__u32 pid = 1; pid <= NVMS; pid++)
		if (looks[pid] != times)
			return false;
	return true;
}

static void every_vm_is_looked_at_once_a_read_however_its_causes_interleave(void)
{
	struct ht_exit_table t;
	struct ht_vm_ends e;

	ht_exit_table_init(&t);
	ht_vm_ends_init(&e);
	e.ended = pretend_ended;
	memset(looks, 0, sizeof(looks));
	ended_pid = 0;
	if (!ASSERT_MSG(fill(&t), "out of memory"))
		goto cleanup;
	if (!ASSERT_EQ(ht_vm_ends_find(&e, &t), 0, "value") || !ASSERT_EQ(e.nending, 0, "value"))
		goto cleanup;
	/* Rows interleaved 5 times over: one look each, not one per change of pid from row to row. */
	if (!ASSERT_MSG(each_looked_at(1), "pid 1 looked at %u times, pid 20 %u", looks[1], looks[NVMS]))
		goto cleanup;
	/* The next read looks again: a process may end at any time. */
	ended_pid = 7;
	if (!ASSERT_EQ(ht_vm_ends_find(&e, &t), 0, "value") || !ASSERT_EQ(e.nending, 1, "value") ||
	    !ASSERT_EQ(e.ending[0], 7, "value"))
		goto cleanup;
	ASSERT_MSG(each_looked_at(2), "pid 1 looked at %u times, pid 20 %u", looks[1], looks[NVMS]);
cleanup:
	ht_vm_ends_free(&e);
	ht_exit_table_free(&t);
}

int main(void)
{
	RUN(every_vm_is_looked_at_once_a_read_however_its_causes_interleave);
	return ht_test_exit_status();
}
