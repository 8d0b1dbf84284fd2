// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A guest CPU's chain of switches as the exports write it: where a lost
 * switch breaks it, what the break says of the task last switched in, and
 * how the guest module's unload bounds what is known of it.
 */
#include <stdint.h>
#include "export/switch_chain.h"
#include "test.h"

#define VM 4242u
#define OTHER_VM 4343u

static void a_cpus_first_switch_starts_its_chain_and_matching_ones_follow_it(void)
{
	struct ht_switch_chain *c = ht_switch_chain_new();
	struct ht_chain_break brk;

	if (!ASSERT_OK_PTR(c, "ht_switch_chain_new"))
		return;
	/* Whatever ran before a CPU's first switch is not in the trace: no break. */
	ASSERT_EQ(ht_switch_chain_follow(c, VM, 0, 77, 100, 120, 1000, &brk), 0, "first switch of CPU 0");
	ASSERT_EQ(ht_switch_chain_follow(c, VM, 0, 100, 0, 120, 2000, &brk), 0, "from the task switched in");
	ASSERT_EQ(ht_switch_chain_follow(c, VM, 0, 0, 101, 120, 3000, &brk), 0, "from the idle task");
	/* Each CPU and each VM has a chain of its own. */
	ASSERT_EQ(ht_switch_chain_follow(c, VM, 1, 5, 6, 120, 3000, &brk), 0, "first switch of CPU 1");
	ASSERT_EQ(ht_switch_chain_follow(c, OTHER_VM, 0, 9, 0, 120, 3000, &brk), 0, "first switch of the other VM");
	ASSERT_EQ(ht_switch_chain_total(c), 0, "no break");
	ht_switch_chain_free(c);
}

static void a_prev_tid_the_cpu_never_switched_in_breaks_the_chain(void)
{
	struct ht_switch_chain *c = ht_switch_chain_new();
	struct ht_chain_break brk = { 0 };

	if (!ASSERT_OK_PTR(c, "ht_switch_chain_new"))
		return;
	ASSERT_EQ(ht_switch_chain_follow(c, VM, 2, 0, 100, 110, 1000, &brk), 0, "switch-in of 100");
	/* 100's switch-out and 101's switch-in were lost. */
	if (ASSERT_EQ(ht_switch_chain_follow(c, VM, 2, 101, 0, 120, 5000, &brk), 1, "101 out breaks the chain")) {
		ASSERT_EQ(brk.last_tid, 100, "the task last switched in");
		ASSERT_EQ(brk.last_prio, 110, "its prio from its switch-in");
		ASSERT_EQ(brk.known_ns, 1000, "known there from its switch-in only");
	}
	/* The breaking switch itself continues the chain. */
	ASSERT_EQ(ht_switch_chain_follow(c, VM, 2, 0, 102, 120, 6000, &brk), 0, "the chain follows the breaking switch");
	ASSERT_EQ(ht_switch_chain_breaks(c, VM), 1, "one break in the VM");
	ASSERT_EQ(ht_switch_chain_breaks(c, OTHER_VM), 0, "none in another");
	ASSERT_EQ(ht_switch_chain_total(c), 1, "one in all");
	ht_switch_chain_free(c);
}

static void the_modules_unload_ends_what_is_known_of_the_tasks_switched_in_before(void)
{
	struct ht_switch_chain *c = ht_switch_chain_new();
	struct ht_chain_break brk = { 0 };

	if (!ASSERT_OK_PTR(c, "ht_switch_chain_new"))
		return;
	ASSERT_EQ(ht_switch_chain_follow(c, VM, 0, 0, 100, 120, 1000, &brk), 0, "100 in on CPU 0");
	ASSERT_EQ(ht_switch_chain_follow(c, VM, 1, 0, 200, 120, 1500, &brk), 0, "200 in on CPU 1");
	ht_switch_chain_stopped(c, OTHER_VM, 1800); /* another VM's unload changes nothing here */
	ht_switch_chain_stopped(c, VM, 2000);
	/* A second unload: the first one already ended what is known. */
	ht_switch_chain_stopped(c, VM, 2500);
	if (ASSERT_EQ(ht_switch_chain_follow(c, VM, 0, 101, 0, 120, 3000, &brk), 1, "break after the reload"))
		ASSERT_EQ(brk.known_ns, 2000, "100 known there until the first unload");
	/* Switched in after the unload: known from that switch-in only. */
	ASSERT_EQ(ht_switch_chain_follow(c, VM, 0, 0, 102, 120, 3500, &brk), 0, "102 in");
	if (ASSERT_EQ(ht_switch_chain_follow(c, VM, 0, 103, 0, 120, 4000, &brk), 1, "102's switch-out lost"))
		ASSERT_EQ(brk.known_ns, 3500, "102 known there from its switch-in only");
	/* A matching switch after the reload follows the chain. */
	ASSERT_EQ(ht_switch_chain_follow(c, VM, 1, 200, 0, 120, 4000, &brk), 0, "200 out after the reload");
	ASSERT_EQ(ht_switch_chain_breaks(c, VM), 2, "two breaks");
	ht_switch_chain_free(c);
}

int main(void)
{
	RUN(a_cpus_first_switch_starts_its_chain_and_matching_ones_follow_it);
	RUN(a_prev_tid_the_cpu_never_switched_in_breaks_the_chain);
	RUN(the_modules_unload_ends_what_is_known_of_the_tasks_switched_in_before);
	return ht_test_exit_status();
}
