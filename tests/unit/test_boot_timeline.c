// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The boot's phases told from exits (boot/boot_timeline.c): which phase an
 * exit shows, that phases never go back, a firmware in long mode (UEFI),
 * a pid given again to a new VM process, and the bounds that hold whatever
 * a file holds (its reasons, vCPUs and VMs).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "boot/boot_timeline.h"
#include "test.h"

#define LONG (HT_BOOT_MODE_KNOWN | HT_BOOT_MODE_PE | HT_BOOT_MODE_PG | HT_BOOT_MODE_LMA)
#define PROT (HT_BOOT_MODE_KNOWN | HT_BOOT_MODE_PE)

static struct ht_boot_exit exit_of(uint32_t pid, uint16_t vcpu, uint64_t at, uint64_t rip, uint8_t mode, uint32_t reason)
{
	return (struct ht_boot_exit){ .exit_ns = at, .entry_ns = at + 10, .guest_rip = rip, .mode = mode, .reason = reason,
				      .host_pid = pid, .host_tid = pid + 1 + vcpu, .vcpu_id = vcpu, .isa = HT_ISA_SVM,
				      .flags = HT_REC_F_BOOT_EXIT, .kvm_ns = 10 };
}

static struct ht_boot_exit first_entry(uint32_t pid, uint16_t vcpu, uint64_t at)
{
	struct ht_boot_exit be = exit_of(pid, vcpu, at, 0, HT_BOOT_MODE_KNOWN, 0);

	be.entry_ns = at;
	be.kvm_ns = 0;
	be.boot_flags = HT_BOOT_F_FIRST_ENTRY;
	return be;
}

static const struct ht_boot_timeline *only(struct ht_boot_timelines *b)
{
	static const struct ht_boot_timeline **all;
	size_t n;

	free(all);
	all = ht_boot_timelines_sorted(b, &n);
	return n == 1 ? all[0] : NULL;
}

static void an_exit_shows_its_phase_by_rip_and_mode(void)
{
	ASSERT_EQ(ht_boot_phase_of(0xfff0, HT_BOOT_MODE_KNOWN, false), HT_BOOT_FIRMWARE, "real mode");
	ASSERT_EQ(ht_boot_phase_of(0x100000, PROT, false), HT_BOOT_FIRMWARE, "protected mode");
	ASSERT_EQ(ht_boot_phase_of(0x1000000, LONG, false), HT_BOOT_DECOMPRESS, "long mode, lower half");
	ASSERT_EQ(ht_boot_phase_of(0xffffffff81000000ull, LONG, false), HT_BOOT_KERNEL, "upper half");
	ASSERT_EQ(ht_boot_phase_of(0xff11000000000000ull, LONG, true), HT_BOOT_KERNEL, "5-level upper half");
	ASSERT_EQ(ht_boot_phase_of(0x401000, LONG, true), HT_BOOT_USER, "lower half after the kernel");
	ASSERT_EQ(ht_boot_phase_of(0x401000, 0, true), HT_BOOT_FIRMWARE, "mode unknown: the RIP alone says nothing new");
}

/* A reboot inside the process (firmware again after user space) does not take the phases back. */
static void phases_never_go_back(void)
{
	struct ht_boot_timelines b;
	struct ht_boot_exit e[] = {
		first_entry(7, 0, 1000),
		exit_of(7, 0, 2000, 0xfff0, PROT, 1),
		exit_of(7, 0, 3000, 0xffffffff81000000ull, LONG, 2),
		exit_of(7, 0, 4000, 0x401000, LONG, 3),
		exit_of(7, 0, 5000, 0xfff0, HT_BOOT_MODE_KNOWN, 1),
		exit_of(7, 0, 6000, 0x1000000, LONG, 1),
	};

	ht_boot_timelines_init(&b);
	for (size_t i = 0; i < sizeof(e) / sizeof(e[0]); i++)
		ASSERT_OK(ht_boot_timelines_add(&b, &e[i], NULL), "add");
	const struct ht_boot_timeline *t = only(&b);

	if (ASSERT_OK_PTR(t, "one VM")) {
		ASSERT_EQ(t->phase, HT_BOOT_USER, "still user space");
		ASSERT_EQ(t->phases[HT_BOOT_USER].exits, 3, "the later exits are user space's");
		ASSERT_EQ(t->phases[HT_BOOT_DECOMPRESS].reached, false, "no decompressor seen");
		ASSERT_EQ(t->phases[HT_BOOT_KERNEL].uncertainty_ns, 3000 - 2010, "from the entry before");
		ASSERT_EQ(ht_boot_phase_end(t, HT_BOOT_FIRMWARE), 3000, "the firmware ends where the kernel shows");
	}
	ht_boot_timelines_free(&b);
}

/* UEFI runs its firmware in long mode: firmware and loader are the decompressor's phase then. */
static void a_firmware_in_long_mode_is_before_the_kernel(void)
{
	struct ht_boot_timelines b;
	struct ht_boot_exit e[] = {
		first_entry(9, 0, 1000),
		exit_of(9, 0, 1500, 0xfffffff0, PROT, 1),
		exit_of(9, 0, 2000, 0x7e000000, LONG, 1),
		exit_of(9, 0, 9000, 0xffffffff81000000ull, LONG, 2),
	};

	ht_boot_timelines_init(&b);
	for (size_t i = 0; i < sizeof(e) / sizeof(e[0]); i++)
		ht_boot_timelines_add(&b, &e[i], NULL);
	const struct ht_boot_timeline *t = only(&b);

	if (ASSERT_OK_PTR(t, "one VM")) {
		ASSERT_EQ(t->phases[HT_BOOT_DECOMPRESS].start_ns, 2000, "long mode from 2000");
		ASSERT_EQ(t->phases[HT_BOOT_KERNEL].start_ns, 9000, "the kernel from 9000");
	}
	ht_boot_timelines_free(&b);
}

/*
 * A VM process ends and the kernel gives its pid to a new one: two VMs, each
 * its own boot from its first entry, under the name each had; a vCPU added
 * to a running VM (not the boot vCPU) enters for the first time in the same
 * VM.
 */
static void a_pid_given_again_is_a_vm_of_its_own(void)
{
	struct ht_boot_timelines b;
	struct ht_boot_exit e[] = {
		first_entry(7, 0, 1000),
		exit_of(7, 0, 2000, 0xfff0, PROT, 1),
		exit_of(7, 0, 3000, 0xffffffff81000000ull, LONG, 2),
		exit_of(7, 0, 4000, 0x401000, LONG, 3),
		first_entry(7, 1, 4500), /* hot-plugged */
		exit_of(7, 1, 4600, 0xffffffff81000000ull, LONG, 2),
		exit_of(7, 0, 5000, 0x401000, LONG, 3),
		first_entry(7, 0, 10000), /* the next process of pid 7 */
		exit_of(7, 0, 11000, 0xfff0, PROT, 1),
		exit_of(7, 0, 12000, 0xffffffff81000000ull, LONG, 2),
	};
	const char *names[] = { "first", "first", "first", "first", "first", "first", "first", "second", "second", "second" };
	const struct ht_boot_timeline **all = NULL;
	size_t n = 0;

	e[7].host_tid = e[8].host_tid = e[9].host_tid = 70;
	ht_boot_timelines_init(&b);
	for (size_t i = 0; i < sizeof(e) / sizeof(e[0]); i++)
		if (!ASSERT_OK(ht_boot_timelines_add(&b, &e[i], names[i]), "add"))
			goto cleanup;
	all = ht_boot_timelines_sorted(&b, &n);
	if (!ASSERT_EQ(n, 2, "VMs") || !ASSERT_EQ(ht_boot_timelines_count(&b), 2, "count"))
		goto cleanup;
	ASSERT_EQ(all[0]->start_ns, 1000, "the first process's start");
	ASSERT_STREQ(all[0]->vm_name, "first", "its name");
	ASSERT_EQ(all[0]->phase, HT_BOOT_USER, "it reached user space");
	ASSERT_EQ(all[0]->nvcpus, 2, "its hot-plugged vCPU is its own");
	ASSERT_EQ(all[0]->last_ns, 5010, "its last exit");
	ASSERT_EQ(all[1]->start_ns, 10000, "the second process's start, exact");
	ASSERT_TRUE(all[1]->start_exact, "from its first entry");
	ASSERT_STREQ(all[1]->vm_name, "second", "its own name");
	ASSERT_EQ(all[1]->phases[HT_BOOT_FIRMWARE].exits, 1, "its own firmware");
	ASSERT_EQ(all[1]->phases[HT_BOOT_KERNEL].start_ns, 12000, "its own kernel");
	ASSERT_EQ(all[1]->phase, HT_BOOT_KERNEL, "no user space of the first");
	/* What ran at a time: a hypercall or a guest's trace belongs to the process that ran then. */
	ASSERT_EQ(ht_boot_timelines_at(&b, 7, 999), NULL, "before the first process began");
	ASSERT_EQ(ht_boot_timelines_at(&b, 7, 1000), all[0], "the first, from its start");
	ASSERT_EQ(ht_boot_timelines_at(&b, 7, 9999), all[0], "the first, up to the second's start");
	ASSERT_EQ(ht_boot_timelines_at(&b, 7, 10000), all[1], "the second, from its start");
	ASSERT_EQ(ht_boot_timelines_at(&b, 8, 10000), NULL, "no VM of another pid");
cleanup:
	free(all);
	ht_boot_timelines_free(&b);
}

/* Whatever a file holds: 40 reasons name 32, 2000 vCPUs keep 1024; the rest is counted. */
static void a_hostile_file_is_bounded_and_counted(void)
{
	struct ht_boot_timelines b;

	ht_boot_timelines_init(&b);
	for (uint32_t r = 0; r < 40; r++) {
		struct ht_boot_exit e = exit_of(5, 0, 1000 + r, 0xfff0, PROT, r);

		ht_boot_timelines_add(&b, &e, NULL);
	}
	for (uint16_t v = 1; v < 2000; v++) {
		struct ht_boot_exit e = exit_of(5, v, 5000 + v, 0xfff0, PROT, 1);

		ht_boot_timelines_add(&b, &e, NULL);
	}
	const struct ht_boot_timeline *t = only(&b);

	if (ASSERT_OK_PTR(t, "one VM")) {
		ASSERT_EQ(t->phases[HT_BOOT_FIRMWARE].nreasons, HT_BOOT_TOP_REASONS, "named reasons");
		ASSERT_EQ(t->phases[HT_BOOT_FIRMWARE].reasons_other, 8, "the rest");
		ASSERT_EQ(t->nvcpus, HT_BOOT_MAX_VCPUS, "vCPUs kept");
		ASSERT_EQ(t->vcpus_other, 2000 - HT_BOOT_MAX_VCPUS, "exits of the others");
		ASSERT_EQ(t->start_exact, false, "no first entry: not exact");
	}
	ht_boot_timelines_free(&b);
	only(&b); /* frees the last array */
}

/* A file of more VMs than a report keeps: the first HT_BOOT_MAX_VMS, the others' exits counted. */
static void more_vms_than_kept_are_counted(void)
{
	struct ht_boot_timelines b;

	ht_boot_timelines_init(&b);
	for (uint32_t pid = 1; pid <= HT_BOOT_MAX_VMS + 10; pid++) {
		struct ht_boot_exit e[] = { first_entry(pid, 0, 1000 + pid), exit_of(pid, 0, 2000 + pid, 0xfff0, PROT, 1) };

		for (int i = 0; i < 2; i++)
			if (!ASSERT_OK(ht_boot_timelines_add(&b, &e[i], NULL), "add"))
				goto cleanup;
	}
	ASSERT_EQ(ht_boot_timelines_count(&b), HT_BOOT_MAX_VMS, "VMs kept");
	ASSERT_EQ(b.vms_other, 20, "the others' exits, counted");
cleanup:
	ht_boot_timelines_free(&b);
}

int main(void)
{
	RUN(an_exit_shows_its_phase_by_rip_and_mode);
	RUN(phases_never_go_back);
	RUN(a_firmware_in_long_mode_is_before_the_kernel);
	RUN(a_pid_given_again_is_a_vm_of_its_own);
	RUN(a_hostile_file_is_bounded_and_counted);
	RUN(more_vms_than_kept_are_counted);
	return ht_test_exit_status();
}
