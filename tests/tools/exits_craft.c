// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Test driver: trace files whose EXITS blocks a recording could not write,
 * or could only at its limits, with right CRCs, for what report --exits
 * must refuse or must read in time linear in their size.
 *
 * Usage: exits_craft FILE SHAPE [N]
 *   big N       one block of N series and N/2 vCPU threads (at most the
 *               16384 a block can hold), in reverse key
 *               order: half the series in one VM (every reason its own),
 *               half one series per VM, and the threads spread over those VMs
 *   threads N   one block of N vCPU threads of one VM, no series
 *   blocks N    N blocks of one new series and one new vCPU thread each,
 *               each below all the ones before (in key and tid order)
 *   slots       a series whose buckets hold far fewer exits than its count
 *   minmax      a series whose min is above its max
 *   total       a series whose time in the host is beyond its buckets
 *   down        two blocks, the second's series counting fewer exits
 *   backwards   two blocks, the second's time before the first's
 *   wrap        two series of 2^63 exits each (right on their own): sums must not wrap
 *   causes      three blocks of a VM's I/O, MSR and CPUID exits with their
 *               causes, as a recording writes them (one second apart)
 *   cause_slots a cause whose buckets hold fewer exits than its count
 *   cause_down  two blocks, the second's cause counting fewer exits
 *   cause_time  a cause whose time in KVM is beyond its buckets
 *   vmm_time    a cause whose time in the VMM is beyond its buckets
 *   account_sum a vCPU thread whose states do not add up to its time
 *               (their sum wraps to it in 64 bits)
 *   account_back a vCPU thread whose account ends before it starts
 *   account_down two blocks, the second's account of a thread lower
 *   lost_down   two blocks, the second's count of lost exits lower
 *   past_2_53   a thread first seen after 2^53 ns (104 days of uptime) and a
 *               hypercall cause of nr 2^64 - 59: values JSON must keep exact
 *   tid_reuse   vCPU 0 of a VM had two threads of one thread id (the first
 *               ended), vCPU 1 one thread
 *   account_wrap two vCPU threads of a VM, each right, whose states' sums
 *               pass 2^64
 *   halts       two blocks, 1 s apart, of two vCPU threads' halts: vCPU 0's
 *               polling known at the end (200000, then 400000 ns), vCPU 1's
 *               never (tests/cli/test_halts_cli.sh has the numbers)
 *   wakeups     the wake-up records of VM 1000 (record --wakeups), its name
 *               hostile: vCPU 0 (thread 2000) 100 of the timer's, the i-th
 *               (i + 1) us long of which 10 i ns waiting, its timer due
 *               (i % 4 + 1) us before it but every tenth's (none); vCPU 1 (thread
 *               2001) 10 of vector 253, 5 us of which 1 us waiting, and one
 *               of a class no recording writes (7), 200 us; then an EXITS
 *               block whose halts counted 105 and 11 of them: 5 not in the
 *               file; and interrupt deliveries, 9 counted and 8 in the file
 *               (tests/cli/test_latency_cli.sh has the numbers)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "hypertrace/trace_file.h"
#include "tracefile/trace_writer.h"

static const __u64 T0 = 1000000000ull;
/* The exits lost so far that the next block's header counts (lost_down). */
static __u64 lost_so_far;

/* n exits of ns each: a series as BPF counts it. */
static void series_of(struct ht_exit_series_rec *s, __u32 pid, __u16 vcpu, __u32 reason, __u64 n, __u64 ns)
{
	unsigned int k = 0;

	memset(s, 0, sizeof(*s));
	s->key = (struct ht_exit_key){ .pid = pid, .vcpu = vcpu, .isa = HT_ISA_SVM, .reason = reason };
	while (k < HT_EXIT_SLOTS - 1 && ns >> (k + 1))
		k++;
	s->h.count = n;
	s->h.total_ns = n * ns;
	s->h.min_ns = s->h.max_ns = ns;
	s->h.slots[k] = n;
}

static int add(struct ht_writer *w, __u64 time_ns, const struct ht_exit_series_rec *s, __u32 ns,
	       const struct ht_vcpu_wait_rec *t, __u32 nt)
{
	size_t len = sizeof(struct ht_exits_header) + (size_t)ns * sizeof(*s) + (size_t)nt * sizeof(*t);
	unsigned char *b = calloc(1, len);
	struct ht_exits_header h = { .time_ns = time_ns, .nseries = ns, .nthreads = nt, .lost_series_full = lost_so_far };

	if (!b)
		return -1;
	memcpy(b, &h, sizeof(h));
	if (ns)
		memcpy(b + sizeof(h), s, (size_t)ns * sizeof(*s));
	if (nt)
		memcpy(b + sizeof(h) + (size_t)ns * sizeof(*s), t, (size_t)nt * sizeof(*t));
	int ret = ht_writer_add_block(w, HT_BLOCK_EXITS, b, (__u32)len, ns + nt);
	free(b);
	return ret;
}

/* n exits of a cause, kvm_ns each in KVM, and vmm of them then vmm_ns in the VMM. */
static struct ht_exit_cause_rec cause_of(__u32 reason, __u8 kind, __u64 value, __u32 detail, __u64 n, __u64 kvm_ns,
					 __u64 vmm, __u64 vmm_ns)
{
	struct ht_exit_cause_rec c = { .key = { .pid = 1000, .reason = reason, .isa = HT_ISA_VMX, .kind = kind,
						.detail = detail, .value = value } };
	unsigned int k = 0, j = 0;

	while (k < HT_EXIT_SLOTS - 1 && kvm_ns >> (k + 1))
		k++;
	while (j < HT_EXIT_SLOTS - 1 && vmm_ns >> (j + 1))
		j++;
	c.h.count = n;
	c.h.kvm_ns = n * kvm_ns;
	c.h.kvm_slots[k] = n;
	c.h.vmm_count = vmm;
	c.h.vmm_ns = vmm * vmm_ns;
	c.h.vmm_slots[j] = vmm;
	return c;
}

/* A block of series and causes (no threads). */
static int add_causes(struct ht_writer *w, __u64 time_ns, const struct ht_exit_series_rec *s, __u32 ns,
		      const struct ht_exit_cause_rec *c, __u32 nc)
{
	size_t len = sizeof(struct ht_exits_header) + (size_t)ns * sizeof(*s) + (size_t)nc * sizeof(*c);
	unsigned char *b = calloc(1, len);
	struct ht_exits_header h = { .time_ns = time_ns, .nseries = ns, .ncauses = nc };

	if (!b)
		return -1;
	memcpy(b, &h, sizeof(h));
	if (ns)
		memcpy(b + sizeof(h), s, (size_t)ns * sizeof(*s));
	memcpy(b + sizeof(h) + (size_t)ns * sizeof(*s), c, (size_t)nc * sizeof(*c));
	int ret = ht_writer_add_block(w, HT_BLOCK_EXITS, b, (__u32)len, ns + nc);
	free(b);
	return ret;
}

/*
 * VM 1000's exits over three seconds: I/O (30) to port 0x80 out (from user
 * space: 400 ns in KVM, 300000 in the VMM) and 0x3f8 in, wrmsr (32) of the
 * TSC deadline, cpuid (10) leaf 0xd.1; one block a second, cumulative.
 */
static int causes(struct ht_writer *w)
{
	struct ht_exit_series_rec s[3];
	struct ht_exit_cause_rec c[4];
	int ret = 0;

	for (__u64 t = 1; t <= 3 && !ret; t++) {
		series_of(&s[0], 1000, 0, 30, 110 * t, 1000);
		series_of(&s[1], 1000, 0, 32, 20 * t, 1000);
		series_of(&s[2], 1000, 0, 10, 3 * t, 1000);
		s[0].key.isa = s[1].key.isa = s[2].key.isa = HT_ISA_VMX;
		c[0] = cause_of(30, HT_CAUSE_PIO, 0x80, HT_CAUSE_DIR_OUT | 1 << 8, 100 * t, 400, 100 * t, 300000);
		c[1] = cause_of(30, HT_CAUSE_PIO, 0x3f8, HT_CAUSE_DIR_IN | 1 << 8, 10 * t, 3000, 0, 0);
		c[2] = cause_of(32, HT_CAUSE_MSR, 0x6e0, HT_CAUSE_DIR_OUT, 20 * t, 600, 0, 0);
		c[3] = cause_of(10, HT_CAUSE_CPUID, 0xd, 1, 3 * t, 200, 0, 0);
		ret = add_causes(w, T0 + t * 1000000000ull, s, 3, c, 4);
	}
	return ret;
}

/* A vCPU thread of VM 1000 first seen at start, its account up to as_of (guest and kvm; the rest 0). */
static struct ht_vcpu_wait_rec thread_of(__u32 tid, __u64 start, __u64 as_of, __u64 guest, __u64 kvm)
{
	struct ht_vcpu_wait_rec t = { .w = { .pid = 1000, .tid = tid, .vcpu = (__u16)(tid % 2) },
				      .a = { .start_ns = start, .as_of_ns = as_of } };

	t.a.state_ns[HT_VCPU_GUEST] = guest;
	t.a.state_ns[HT_VCPU_KVM] = kvm;
	return t;
}

/*
 * Two blocks, 1 s apart, of two vCPU threads' interrupts (tests/cli/
 * test_irqs_cli.sh has the numbers): vCPU 0's grow, vCPU 1 has none.
 */
static int irqs(struct ht_writer *w, struct ht_exit_series_rec *s)
{
	struct ht_vcpu_wait_rec t[2] = { thread_of(2000, T0, T0 + 1000000000ull, 900000000ull, 100000000ull),
					 thread_of(2001, T0, T0 + 1000000000ull, 900000000ull, 100000000ull) };
	struct ht_vcpu_irqs *i = &t[0].i;
	int ret;

	/* IPIs: 2 of 3 us (slot 11), 2 us of it waking; the timer's 4 of 2 us (slot 10). */
	i->c[HT_IRQ_IPI] = (struct ht_vcpu_wake_hist){ .total_ns = 6000, .max_ns = 3000, .slots = { [11] = 2 } };
	i->woken_ns[HT_IRQ_IPI] = 2000;
	i->c[HT_IRQ_TIMER] = (struct ht_vcpu_wake_hist){ .total_ns = 8000, .max_ns = 2000, .slots = { [10] = 4 } };
	i->accepted = 8;
	i->overlapped = 1;
	i->level = 1;
	ret = add(w, T0 + 1000000000ull, s, 2, t, 2);
	t[0] = thread_of(2000, T0, T0 + 2000000000ull, 1800000000ull, 200000000ull);
	t[1] = thread_of(2001, T0, T0 + 2000000000ull, 1800000000ull, 200000000ull);
	/*
	 * Then IPIs 2 of 100 us more (slot 16), 100 us of them waiting; a
	 * device's of 50 us (slot 15); the timer's 6 more of 2 us.
	 */
	i->c[HT_IRQ_IPI] = (struct ht_vcpu_wake_hist){ .total_ns = 206000, .wait_ns = 100000, .max_ns = 100000,
						       .slots = { [11] = 2, [16] = 2 } };
	i->woken_ns[HT_IRQ_IPI] = 2000;
	i->c[HT_IRQ_DEVICE] = (struct ht_vcpu_wake_hist){ .total_ns = 50000, .max_ns = 50000, .slots = { [15] = 1 } };
	i->c[HT_IRQ_TIMER] = (struct ht_vcpu_wake_hist){ .total_ns = 20000, .max_ns = 2000, .slots = { [10] = 10 } };
	i->accepted = 20;
	i->overlapped = 2;
	i->stale = 1;
	i->level = 3;
	return ret | add(w, T0 + 2000000000ull, s, 2, t, 2);
}

/*
 * One wake-up record (record --wakeups) of VM 1000's thread tid, vCPU tid % 2, ns long of which wait ns waiting;
 * its timer due at due (0: none).
 */
static void add_wakeup(struct ht_writer *w, __u32 tid, __u64 at, __u64 due, __u64 ns, __u64 wait, __u32 wake_class,
		       __u32 vector)
{
	struct ht_vcpu_wakeup u = { .entry_ns = at + ns, .wake_ns = at, .due_ns = due, .wait_ns = wait, .vector = vector,
				    .timer_vector = 236, .wake_class = wake_class, .host_pid = 1000, .host_tid = tid,
				    .vcpu_id = (__u16)(tid % 2), .cpu = 1, .flags = HT_REC_F_VCPU_WAKEUP };
	struct ht_record r;

	memcpy(&r, &u, sizeof(r));
	ht_writer_add(w, &r);
}

/*
 * One interrupt delivery record (record --wakeups) of VM 1000's thread tid, vCPU tid % 2, accepted at at, ns long;
 * a timer's due at due (0: not known).
 */
static void add_irq(struct ht_writer *w, __u32 tid, __u64 at, __u64 due, __u64 ns, __u64 woken, __u64 wait,
		    __u32 irq_class, __u32 vector)
{
	struct ht_vcpu_irq d = { .entry_ns = at + ns, .accept_ns = at, .due_ns = due, .woken_ns = woken, .wait_ns = wait,
				 .vector = vector, .irq_class = irq_class, .host_pid = 1000, .host_tid = tid,
				 .vcpu_id = (__u16)(tid % 2), .cpu = 1, .flags = HT_REC_F_VCPU_IRQ };
	struct ht_record r;

	memcpy(&r, &d, sizeof(r));
	ht_writer_add(w, &r);
}

static int wakeups(struct ht_writer *w)
{
	struct ht_identity id = { .first_seen_ns = T0, .pid = 1000, .tid = 2000, .process_name = "qemu-system-x86",
				  .thread_name = "CPU 0/KVM", .vm_name = "web\"1\n\x1b[31m" };
	struct ht_vcpu_wait_rec t[2] = { thread_of(2000, T0, T0, 0, 0), thread_of(2001, T0, T0, 0, 0) };
	int ret = ht_writer_add_identity(w, &id);

	for (__u64 i = 0; i < 100; i++)
		add_wakeup(w, 2000, T0 + i * 1000000, i % 10 == 9 ? 0 : T0 + i * 1000000 - (i % 4 + 1) * 1000, (i + 1) * 1000,
			   i * 10, HT_WAKE_TIMER, 236);
	for (__u64 i = 0; i < 10; i++)
		add_wakeup(w, 2001, T0 + i * 1000000 + 500000, 0, 5000, 1000, HT_WAKE_VECTOR, 253);
	add_wakeup(w, 2001, T0 + 200000000, 0, 200000, 0, 7, 65);
	/*
	 * Interrupt deliveries: vCPU 0 four of its timer, (i + 1) * 2 us long of
	 * which i * 100 ns waiting, the first three due (i + 1) * 500 ns before
	 * their acceptance, the last's due time not known, and one of class 9
	 * with a vector past 255 and
	 * parts past its whole (no recording writes either); vCPU 1 two IPIs
	 * and a device's, accepted while the second IPI waited (they overlap).
	 */
	for (__u64 i = 0; i < 4; i++)
		add_irq(w, 2000, T0 + i * 1000000 + 100, i < 3 ? T0 + i * 1000000 + 100 - (i + 1) * 500 : 0, (i + 1) * 2000,
			0, i * 100, HT_IRQ_TIMER, 236);
	add_irq(w, 2000, T0 + 900000, 0, 1000, 5000, 7000, 9, 300);
	add_irq(w, 2001, T0 + 600000, 0, 10000, 3000, 2000, HT_IRQ_IPI, 251);
	add_irq(w, 2001, T0 + 700000, 0, 20000, 5000, 1000, HT_IRQ_IPI, 251);
	add_irq(w, 2001, T0 + 690000, 0, 50000, 0, 0, HT_IRQ_DEVICE, 35);
	/* The recording's own count: 5 of vCPU 0's timer wake-ups more than the file holds (lost). */
	t[0].a.as_of_ns = t[1].a.as_of_ns = T0;
	t[0].h = (struct ht_vcpu_halts){ .halts = 105, .slept = 105, .slept_ns = 105000000ull };
	t[0].h.wake.c[HT_WAKE_TIMER] = (struct ht_vcpu_wake_hist){ .total_ns = 105 * 100000ull, .max_ns = 100000,
								   .slots = { [16] = 105 } };
	t[1].h = (struct ht_vcpu_halts){ .halts = 11, .slept = 11, .slept_ns = 11000000ull };
	t[1].h.wake.c[HT_WAKE_VECTOR] = (struct ht_vcpu_wake_hist){ .total_ns = 11 * 5000ull, .max_ns = 5000,
								    .slots = { [12] = 11 } };
	/* And its count of the interrupts it timed: vCPU 0's six timer ones, one more than the file holds. */
	t[0].i.accepted = 6;
	t[0].i.c[HT_IRQ_TIMER] = (struct ht_vcpu_wake_hist){ .total_ns = 22000, .max_ns = 8000, .slots = { [11] = 3, [12] = 3 } };
	t[1].i.accepted = 3;
	t[1].i.c[HT_IRQ_IPI] = (struct ht_vcpu_wake_hist){ .total_ns = 30000, .wait_ns = 3000, .max_ns = 20000,
							   .slots = { [13] = 1, [14] = 1 } };
	t[1].i.woken_ns[HT_IRQ_IPI] = 8000;
	t[1].i.c[HT_IRQ_DEVICE] = (struct ht_vcpu_wake_hist){ .total_ns = 50000, .max_ns = 50000, .slots = { [15] = 1 } };
	return ret ?: add(w, T0 + 300000000ull, NULL, 0, t, 2);
}

static int big(struct ht_writer *w, __u32 n, __u32 nt)
{
	struct ht_exit_series_rec *s = calloc(n + 1, sizeof(*s));
	struct ht_vcpu_wait_rec *t = calloc(nt + 1, sizeof(*t));
	__u32 half = n / 2 ? n / 2 : 1;
	int ret = -1;

	if (!s || !t)
		goto out;
	for (__u32 i = 0; i < n; i++) {
		__u32 j = n - 1 - i; /* reverse order: every insertion would land in front */

		if (j < n / 2)
			series_of(&s[i], 1000, (__u16)(j % 4), j, 1 + j % 7, 1000 + j);
		else
			series_of(&s[i], 100000 + j, 0, 0x7b, 3, 2000);
	}
	for (__u32 i = 0; i < nt; i++) {
		__u32 j = nt - 1 - i;

		t[i].w = (struct ht_vcpu_wait){ .pid = 100000 + half + j % half, .tid = 5000000 + j, .vcpu = 0,
						.wait_ns = 10, .preempt_count = 1, .preempt_ns = 10 };
	}
	ret = add(w, T0 + 1000000000ull, s, n, t, nt);
out:
	free(s);
	free(t);
	return ret;
}

int main(int argc, char **argv)
{
	struct ht_exit_series_rec s[2];
	struct ht_file_header hdr;
	struct ht_trailer trailer;
	struct ht_writer *w;
	char err[512];
	int ret = 0;

	if (argc < 3) {
		fprintf(stderr, "usage: exits_craft FILE big|threads|blocks|slots|minmax|total|down|backwards|wrap|causes|cause_slots|cause_down|cause_time|vmm_time|account_sum|account_back|account_down|lost_down|past_2_53|tid_reuse|account_wrap|halts|irqs|wakeups [N]\n");
		return 2;
	}
	const char *shape = argv[2];
	unsigned long n = argc > 3 ? strtoul(argv[3], NULL, 10) : 0;
	ht_header_init(&hdr);
	hdr.start_monotonic_ns = T0;
	if (ht_writer_open(argv[1], true, &hdr, &w, err, sizeof(err))) {
		fprintf(stderr, "exits_craft: %s\n", err);
		return 1;
	}
	series_of(&s[0], 1000, 0, 0x7b, 5, 1000);
	series_of(&s[1], 1000, 1, 0x78, 5, 1000);
	if (!strcmp(shape, "big")) {
		ret = big(w, (__u32)n, (__u32)(n / 2 < 2 * HT_MAX_VCPU_THREADS ? n / 2 : 2 * HT_MAX_VCPU_THREADS));
	} else if (!strcmp(shape, "threads")) {
		ret = big(w, 0, (__u32)n);
	} else if (!strcmp(shape, "blocks")) {
		for (unsigned long i = 0; i < n && !ret; i++) {
			struct ht_vcpu_wait_rec t = { .w = { .pid = 1000, .tid = (__u32)(10000000 - i), .wait_ns = 10 } };

			series_of(&s[0], 1000, (__u16)((n - i) / 65536), (__u32)(n - i), 1, 1000);
			ret = add(w, T0 + 1 + i, s, 1, &t, 1);
		}
	} else if (!strcmp(shape, "slots")) {
		s[0].h.count = UINT64_MAX;
		ret = add(w, T0 + 1, s, 1, NULL, 0);
	} else if (!strcmp(shape, "minmax")) {
		s[0].h.min_ns = 1023;
		s[0].h.max_ns = 513;
		ret = add(w, T0 + 1, s, 1, NULL, 0);
	} else if (!strcmp(shape, "total")) {
		s[0].h.total_ns = UINT64_MAX - 1;
		ret = add(w, T0 + 1, s, 1, NULL, 0);
	} else if (!strcmp(shape, "down")) {
		ret = add(w, T0 + 1, s, 2, NULL, 0);
		series_of(&s[0], 1000, 0, 0x7b, 4, 1000);
		ret |= add(w, T0 + 2, s, 1, NULL, 0);
	} else if (!strcmp(shape, "backwards")) {
		ret = add(w, T0 + 10, s, 1, NULL, 0);
		ret |= add(w, T0 + 5, s, 1, NULL, 0);
	} else if (!strcmp(shape, "causes")) {
		ret = causes(w);
	} else if (!strcmp(shape, "cause_slots")) {
		struct ht_exit_cause_rec c = cause_of(30, HT_CAUSE_PIO, 0x80, 1, 10, 400, 0, 0);

		c.h.count = 100000; /* beyond what torn reads of 1024 CPUs explain */
		ret = add_causes(w, T0 + 1, s, 1, &c, 1);
	} else if (!strcmp(shape, "cause_down")) {
		struct ht_exit_cause_rec c = cause_of(30, HT_CAUSE_PIO, 0x80, 1, 10, 400, 0, 0);

		ret = add_causes(w, T0 + 1, s, 1, &c, 1);
		c = cause_of(30, HT_CAUSE_PIO, 0x80, 1, 9, 400, 0, 0);
		ret |= add_causes(w, T0 + 2, s, 1, &c, 1);
	} else if (!strcmp(shape, "cause_time") || !strcmp(shape, "vmm_time")) {
		/* 10 exits of 400 ns in KVM (bucket 8, at most 511 ns each), 10 of 300000 in the VMM. */
		struct ht_exit_cause_rec c = cause_of(30, HT_CAUSE_PIO, 0x80, 1, 10, 400, 10, 300000);

		if (!strcmp(shape, "cause_time"))
			c.h.kvm_ns = UINT64_MAX;
		else
			c.h.vmm_ns = UINT64_MAX - 1;
		ret = add_causes(w, T0 + 1, s, 1, &c, 1);
	} else if (!strcmp(shape, "account_sum")) {
		/* 10 ns of time; guest + kvm wrap to 10 in 64 bits. */
		struct ht_vcpu_wait_rec t = thread_of(2000, T0, T0 + 10, UINT64_MAX, 11);

		ret = add(w, T0 + 10, s, 1, &t, 1);
	} else if (!strcmp(shape, "account_back")) {
		struct ht_vcpu_wait_rec t = thread_of(2000, T0 + 10, T0, 0, 0);

		ret = add(w, T0 + 10, s, 1, &t, 1);
	} else if (!strcmp(shape, "account_down")) {
		struct ht_vcpu_wait_rec t = thread_of(2000, T0, T0 + 1000, 800, 200);

		ret = add(w, T0 + 1000, s, 1, &t, 1);
		t = thread_of(2000, T0, T0 + 900, 700, 200); /* right on its own, less than the block before */
		ret |= add(w, T0 + 2000, s, 1, &t, 1);
	} else if (!strcmp(shape, "past_2_53")) {
		const __u64 start = (1ull << 53) + 1;
		struct ht_vcpu_wait_rec t = thread_of(2000, start, start + 1000, 600, 400);
		struct ht_exit_cause_rec c = cause_of(18, HT_CAUSE_HYPERCALL, UINT64_MAX - 58, 0, 3, 700, 0, 0);
		size_t len = sizeof(struct ht_exits_header) + sizeof(s[0]) + sizeof(t) + sizeof(c);
		struct ht_exits_header h = { .time_ns = start + 1000, .nseries = 1, .nthreads = 1, .ncauses = 1 };
		unsigned char b[sizeof(h) + sizeof(s[0]) + sizeof(t) + sizeof(c)];

		memcpy(b, &h, sizeof(h));
		memcpy(b + sizeof(h), &s[0], sizeof(s[0]));
		memcpy(b + sizeof(h) + sizeof(s[0]), &t, sizeof(t));
		memcpy(b + sizeof(h) + sizeof(s[0]) + sizeof(t), &c, sizeof(c));
		ret = ht_writer_add_block(w, HT_BLOCK_EXITS, b, (__u32)len, 3);
	} else if (!strcmp(shape, "tid_reuse")) {
		struct ht_vcpu_wait_rec t[3] = {
			thread_of(2000, T0, T0 + 400000000ull, 300000000ull, 100000000ull),
			thread_of(2000, T0 + 500000000ull, T0 + 1000000000ull, 400000000ull, 100000000ull),
			thread_of(2001, T0, T0 + 1000000000ull, 900000000ull, 100000000ull),
		};

		t[0].w.pad1 = HT_VCPU_WAIT_F_GONE;
		ret = add(w, T0 + 1000000000ull, s, 2, t, 3);
	} else if (!strcmp(shape, "halts")) {
		struct ht_vcpu_wait_rec t[2] = { thread_of(2000, T0, T0 + 1000000000ull, 900000000ull, 100000000ull),
						 thread_of(2001, T0, T0 + 1000000000ull, 900000000ull, 100000000ull) };

		t[0].h = (struct ht_vcpu_halts){ .halts = 10, .polled = 8, .caught = 6, .caught_ns = 6 * 20000ull,
						 .slept = 4, .slept_ns = 4 * 1000000ull, .poll_ns = 200000, .poll_unknown = 2,
						 .slept_poll_ns = 4 * 50000ull };
		t[1].h = (struct ht_vcpu_halts){ .halts = 3, .slept = 3, .slept_ns = 3000, .poll_ns = HT_HALT_POLL_NS_UNKNOWN,
						 .poll_unknown = 3 };
		/* vCPU 0's wake-ups: the timer's 2 of 20 us (slot 14) and 2 of 100 us (slot 16), 1 reblocked. */
		t[0].h.wake.c[HT_WAKE_TIMER] = (struct ht_vcpu_wake_hist){ .total_ns = 240000, .wait_ns = 60000,
									   .max_ns = 100000, .slots = { [14] = 2, [16] = 2 } };
		t[0].h.wake.reblocked = 1;
		/* 3 of them with their timer's due time: 25 us (slot 14) twice and 110 us (slot 16) from due to guest. */
		t[0].due = (struct ht_vcpu_timer_due){ .h = { .total_ns = 160000, .wait_ns = 30000, .max_ns = 110000,
							      .slots = { [14] = 2, [16] = 1 } },
						       .fire_ns = 12000 };
		ret = add(w, T0 + 1000000000ull, s, 2, t, 2);
		t[0] = thread_of(2000, T0, T0 + 2000000000ull, 1800000000ull, 200000000ull);
		t[1] = thread_of(2001, T0, T0 + 2000000000ull, 1800000000ull, 200000000ull);
		t[0].h = (struct ht_vcpu_halts){ .halts = 30, .polled = 28, .caught = 20, .caught_ns = 20 * 20000ull,
						 .slept = 10, .slept_ns = 10 * 1000000ull, .poll_ns = 400000, .poll_unknown = 2,
						 .slept_poll_ns = 10 * 50000ull };
		t[1].h = (struct ht_vcpu_halts){ .halts = 3, .slept = 3, .slept_ns = 3000, .poll_ns = HT_HALT_POLL_NS_UNKNOWN,
						 .poll_unknown = 3 };
		/* Then 6 and 4 of the timer's, 2 of 1.5 ms of another vector (slot 20), 3 reblocked. */
		t[0].h.wake.c[HT_WAKE_TIMER] = (struct ht_vcpu_wake_hist){ .total_ns = 520000, .wait_ns = 130000,
									   .max_ns = 100000, .slots = { [14] = 6, [16] = 4 } };
		t[0].h.wake.c[HT_WAKE_VECTOR] = (struct ht_vcpu_wake_hist){ .total_ns = 3000000, .wait_ns = 2000000,
									    .max_ns = 1600000, .slots = { [20] = 2 } };
		t[0].h.wake.reblocked = 3;
		/* Then 5 and 3 with their due time. */
		t[0].due = (struct ht_vcpu_timer_due){ .h = { .total_ns = 455000, .wait_ns = 100000, .max_ns = 110000,
							      .slots = { [14] = 5, [16] = 3 } },
						       .fire_ns = 32000 };
		ret |= add(w, T0 + 2000000000ull, s, 2, t, 2);
	} else if (!strcmp(shape, "irqs")) {
		ret = irqs(w, s);
	} else if (!strcmp(shape, "wakeups")) {
		ret = wakeups(w);
	} else if (!strcmp(shape, "lost_down")) {
		lost_so_far = 7;
		ret = add(w, T0 + 1, s, 1, NULL, 0);
		lost_so_far = 6;
		ret |= add(w, T0 + 2, s, 1, NULL, 0);
	} else if (!strcmp(shape, "account_wrap")) {
		struct ht_vcpu_wait_rec t[2] = { thread_of(2000, 0, 1ull << 63, 1ull << 63, 0),
						 thread_of(2001, 0, 1ull << 63, 1ull << 63, 0) };

		ret = add(w, T0 + 1, s, 1, t, 2);
	} else if (!strcmp(shape, "wrap")) {
		series_of(&s[0], 1000, 0, 0x7b, 1ull << 63, 0);
		series_of(&s[1], 1000, 1, 0x7b, 1ull << 63, 0);
		ret = add(w, T0 + 1, s, 2, NULL, 0);
	} else {
		fprintf(stderr, "exits_craft: unknown shape %s\n", shape);
		ht_writer_abandon(w);
		return 2;
	}
	if (ret) {
		fprintf(stderr, "exits_craft: the block could not be queued\n");
		ht_writer_abandon(w);
		return 1;
	}
	return ht_writer_close(w, &trailer) ? 1 : 0;
}
