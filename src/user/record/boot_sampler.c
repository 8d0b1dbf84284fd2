// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "record/boot_sampler.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include "common/grow.h"

void ht_boot_sampler_init(struct ht_boot_sampler *s, struct ht_tracer *t, struct ht_writer *writer)
{
	memset(s, 0, sizeof(*s));
	s->tracer = t;
	s->writer = writer;
}

static bool process_gone(__u32 pid)
{
	/* EPERM: it exists, it is only another user's. */
	return kill((pid_t)pid, 0) && errno == ESRCH;
}

static int block_add(struct ht_boot_sampler *s, const struct ht_boot_vm_rec *v)
{
	if (HT_GROW(s->block, s->block_cap, s->nblock + 1, 16))
		return -ENOMEM;
	s->block[s->nblock++] = *v;
	return 0;
}

struct read_ctx {
	struct ht_boot_sampler *s;
	int err;
};

/* One VM as BPF has it now: into the block if its numbers moved (or it ended), and kept or let go. */
static void take_vm(void *ctx, __u32 pid, const struct ht_boot_vm *vm)
{
	struct read_ctx *c = ctx;
	struct ht_boot_sampler *s = c->s;
	struct ht_boot_vm_rec now = { .pid = pid, .vm = *vm };
	size_t i = 0;

	while (i < s->nvms && s->vms[i].pid != pid)
		i++;
	bool gone = s->gone ? s->gone(pid) : process_gone(pid);

	if (gone)
		now.flags |= HT_BOOT_VM_F_ENDED;
	if (i == s->nvms) {
		if (HT_GROW(s->vms, s->vms_cap, s->nvms + 1, 16)) {
			c->err = -ENOMEM;
			return;
		}
		s->nvms++;
		s->vms_seen++;
		memset(&s->vms[i], 0, sizeof(s->vms[i]));
		s->vms[i].pid = pid;
	} else if (!gone && !memcmp(&s->vms[i].vm, vm, sizeof(*vm))) {
		return;
	}
	if (block_add(s, &now)) {
		c->err = -ENOMEM;
		return;
	}
	s->vms[i] = now;
}

/* The VMs that ended and are in this block: their sums kept, their BPF entries freed. */
static void let_go_ended(struct ht_boot_sampler *s)
{
	for (size_t i = 0; i < s->nvms;) {
		if (!(s->vms[i].flags & HT_BOOT_VM_F_ENDED)) {
			i++;
			continue;
		}
		s->ended.recorded += s->vms[i].vm.recorded;
		s->ended.over += s->vms[i].vm.over;
		s->ended.lost += s->vms[i].vm.lost;
		ht_tracer_free_boot_vm(s->tracer, s->vms[i].pid);
		s->vms[i] = s->vms[--s->nvms];
	}
}

int ht_boot_sampler_sample(struct ht_boot_sampler *s)
{
	struct read_ctx c = { .s = s };
	__u64 counters[HT_CNT_MAX];
	int ret;

	s->nblock = 0;
	if ((ret = ht_tracer_read_boot_vms(s->tracer, take_vm, &c)))
		return ret;
	if (c.err)
		return c.err;
	if (!ht_tracer_counters(s->tracer, counters) && counters[HT_CNT_BOOT_VMS_FULL] != s->refused) {
		struct ht_boot_vm_rec refused = { .pid = 0, .flags = HT_BOOT_VM_F_REFUSED };

		refused.vm.over = counters[HT_CNT_BOOT_VMS_FULL];
		if (block_add(s, &refused))
			return -ENOMEM;
		s->refused = refused.vm.over;
	}
	if (s->nblock && s->writer) {
		ret = ht_writer_add_block(s->writer, HT_BLOCK_BOOT, s->block, (__u32)(s->nblock * sizeof(*s->block)),
					  (__u32)s->nblock);
		if (ret && !s->write_error)
			s->write_error = ret;
	}
	let_go_ended(s);
	return 0;
}

void ht_boot_sampler_totals(const struct ht_boot_sampler *s, struct ht_boot_vm *sum)
{
	*sum = s->ended;
	for (size_t i = 0; i < s->nvms; i++) {
		sum->recorded += s->vms[i].vm.recorded;
		sum->over += s->vms[i].vm.over;
		sum->lost += s->vms[i].vm.lost;
	}
}

void ht_boot_sampler_free(struct ht_boot_sampler *s)
{
	free(s->vms);
	free(s->block);
	memset(s, 0, sizeof(*s));
}
