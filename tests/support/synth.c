// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "synth.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "record/tracer.h"

#define MAX_EVENT_SIZE HT_SYNTH_MAX_EVENT

static int member_offset(const struct btf *btf, const struct btf_type *t, const char *name)
{
	const struct btf_member *m = btf_members(t);

	for (int i = 0; i < btf_vlen(t); i++, m++) {
		if (!strcmp(btf__name_by_offset(btf, m->name_off), name))
			return (int)(btf_member_bit_offset(t, i) / 8);
	}
	return HT_SYNTH_NO_FIELD;
}

static const struct btf_type *find_struct(struct btf *vmlinux, struct btf **kvm, const char *name,
					  const struct btf **owner)
{
	int id = btf__find_by_name_kind(vmlinux, name, BTF_KIND_STRUCT);

	if (id > 0) {
		*owner = vmlinux;
		return btf__type_by_id(vmlinux, id);
	}
	/* Kernels that build kvm as a module keep the tracepoint types in its BTF. */
	if (!*kvm)
		*kvm = btf__load_module_btf("kvm", vmlinux);
	if (*kvm && (id = btf__find_by_name_kind(*kvm, name, BTF_KIND_STRUCT)) > 0) {
		*owner = *kvm;
		return btf__type_by_id(*kvm, id);
	}
	return NULL;
}

int ht_synth_layout_load(struct ht_synth_layout *l, char *err, size_t errlen)
{
	struct btf *vmlinux = btf__load_vmlinux_btf(), *kvm = NULL;
	const struct btf_type *ex, *hc, *en;
	const struct btf *bex = NULL, *bhc = NULL, *ben = NULL;
	int ret = 0;

	if (!vmlinux) {
		snprintf(err, errlen, "cannot load the kernel BTF");
		return -ENOENT;
	}
	ex = find_struct(vmlinux, &kvm, "trace_event_raw_kvm_exit", &bex);
	hc = find_struct(vmlinux, &kvm, "trace_event_raw_kvm_hypercall", &bhc);
	en = find_struct(vmlinux, &kvm, "trace_event_raw_kvm_entry", &ben);
	if (!ex || !hc || !en) {
		snprintf(err, errlen, "the kernel BTF has no kvm tracepoint types (kvm not loaded?)");
		ret = -ENOENT;
		goto out;
	}
	l->exit_size = ex->size;
	l->hcall_size = hc->size;
	l->entry_size = en->size;
	l->exit_reason = member_offset(bex, ex, "exit_reason");
	l->exit_guest_rip = member_offset(bex, ex, "guest_rip");
	l->exit_isa = member_offset(bex, ex, "isa");
	l->exit_vcpu_id = member_offset(bex, ex, "vcpu_id");
	l->hcall_nr = member_offset(bhc, hc, "nr");
	l->hcall_a[0] = member_offset(bhc, hc, "a0");
	l->hcall_a[1] = member_offset(bhc, hc, "a1");
	l->hcall_a[2] = member_offset(bhc, hc, "a2");
	l->hcall_a[3] = member_offset(bhc, hc, "a3");
	l->entry_vcpu_id = member_offset(ben, en, "vcpu_id");
	l->entry_rip = member_offset(ben, en, "rip");
	{
		const struct btf *b = NULL;
		const struct btf_type *s;

		if ((s = find_struct(vmlinux, &kvm, "trace_event_raw_kvm_pio", &b)) && s->size <= MAX_EVENT_SIZE) {
			l->pio_size = s->size;
			l->pio_rw = member_offset(b, s, "rw");
			l->pio_port = member_offset(b, s, "port");
			l->pio_size_field = member_offset(b, s, "size");
		}
		if ((s = find_struct(vmlinux, &kvm, "trace_event_raw_kvm_mmio", &b)) && s->size <= MAX_EVENT_SIZE) {
			l->mmio_size = s->size;
			l->mmio_type = member_offset(b, s, "type");
			l->mmio_len = member_offset(b, s, "len");
			l->mmio_gpa = member_offset(b, s, "gpa");
		}
		if ((s = find_struct(vmlinux, &kvm, "trace_event_raw_kvm_msr", &b)) && s->size <= MAX_EVENT_SIZE) {
			l->msr_size = s->size;
			l->msr_write = member_offset(b, s, "write");
			l->msr_ecx = member_offset(b, s, "ecx");
		}
		if ((s = find_struct(vmlinux, &kvm, "trace_event_raw_kvm_cpuid", &b)) && s->size <= MAX_EVENT_SIZE) {
			l->cpuid_size = s->size;
			l->cpuid_function = member_offset(b, s, "function");
			l->cpuid_index = member_offset(b, s, "index");
		}
	}
	if (l->exit_size > MAX_EVENT_SIZE || l->hcall_size > MAX_EVENT_SIZE ||
	    l->entry_size > MAX_EVENT_SIZE || l->exit_reason < 0 || l->exit_isa < 0 ||
	    l->exit_guest_rip < 0 || l->hcall_nr < 0 || l->entry_vcpu_id < 0) {
		snprintf(err, errlen, "unexpected kvm tracepoint layout in the kernel BTF");
		ret = -EINVAL;
	}
out:
	btf__free(kvm);
	btf__free(vmlinux);
	return ret;
}

static void put(void *ev, int off, const void *v, size_t len)
{
	if (off != HT_SYNTH_NO_FIELD)
		memcpy((unsigned char *)ev + off, v, len);
}

static int run(const struct ht_tracer *t, enum ht_synthetic_prog which, void *ev, size_t size)
{
	LIBBPF_OPTS(bpf_test_run_opts, opts, .ctx_in = ev, .ctx_size_in = (__u32)size);
	int ret = bpf_prog_test_run_opts(ht_tracer_synthetic_fd(t, which), &opts);

	if (ret)
		return -errno;
	return opts.retval == 0 ? 0 : -EPROTO;
}

void ht_synth_build_exit(const struct ht_synth_layout *l, void *buf, __u32 isa, __u32 reason,
			 __u64 guest_rip, __u32 vcpu)
{
	unsigned long rip = (unsigned long)guest_rip;

	memset(buf, 0, MAX_EVENT_SIZE);
	put(buf, l->exit_reason, &reason, sizeof(reason));
	put(buf, l->exit_guest_rip, &rip, sizeof(rip));
	put(buf, l->exit_isa, &isa, sizeof(isa));
	put(buf, l->exit_vcpu_id, &vcpu, sizeof(vcpu));
}

void ht_synth_build_hypercall(const struct ht_synth_layout *l, void *buf, __u64 nr, __u64 a0,
			      __u64 a1, __u64 a2, __u64 a3)
{
	unsigned long v[5] = { (unsigned long)nr, (unsigned long)a0, (unsigned long)a1,
			       (unsigned long)a2, (unsigned long)a3 };

	memset(buf, 0, MAX_EVENT_SIZE);
	put(buf, l->hcall_nr, &v[0], sizeof(v[0]));
	for (int i = 0; i < 4; i++)
		put(buf, l->hcall_a[i], &v[i + 1], sizeof(v[0]));
}

void ht_synth_build_entry(const struct ht_synth_layout *l, void *buf, __u32 vcpu, __u64 rip)
{
	unsigned long r = (unsigned long)rip;

	memset(buf, 0, MAX_EVENT_SIZE);
	put(buf, l->entry_vcpu_id, &vcpu, sizeof(vcpu));
	put(buf, l->entry_rip, &r, sizeof(r));
}

int ht_synth_exit(const struct ht_synth_layout *l, const struct ht_tracer *t, __u32 isa,
		  __u32 reason, __u64 guest_rip, __u32 vcpu)
{
	unsigned char ev[MAX_EVENT_SIZE];

	ht_synth_build_exit(l, ev, isa, reason, guest_rip, vcpu);
	return run(t, HT_SYNTH_KVM_EXIT, ev, l->exit_size);
}

int ht_synth_hypercall(const struct ht_synth_layout *l, const struct ht_tracer *t, __u64 nr,
		       __u64 a0, __u64 a1, __u64 a2, __u64 a3)
{
	unsigned char ev[MAX_EVENT_SIZE];

	ht_synth_build_hypercall(l, ev, nr, a0, a1, a2, a3);
	return run(t, HT_SYNTH_KVM_HYPERCALL, ev, l->hcall_size);
}

int ht_synth_entry(const struct ht_synth_layout *l, const struct ht_tracer *t, __u32 vcpu,
		   __u64 rip)
{
	unsigned char ev[MAX_EVENT_SIZE];

	ht_synth_build_entry(l, ev, vcpu, rip);
	return run(t, HT_SYNTH_KVM_ENTRY, ev, l->entry_size);
}

int ht_synth_exit_at(const struct ht_synth_layout *l, const struct ht_tracer *t, __u32 isa, __u32 reason,
		     __u32 vcpu, __u64 now_ns)
{
	struct ht_synth_timed_event ev = { .now_ns = now_ns };

	_Static_assert(sizeof(ev.event) >= MAX_EVENT_SIZE, "event buffer");
	ht_synth_build_exit(l, ev.event, isa, reason, 0x1000, vcpu);
	return run(t, HT_SYNTH_KVM_EXIT_AT, &ev, sizeof(ev));
}

int ht_synth_exit_rip_at(const struct ht_synth_layout *l, const struct ht_tracer *t, __u32 isa, __u32 reason,
			 __u64 guest_rip, __u32 vcpu, __u64 now_ns)
{
	struct ht_synth_timed_event ev = { .now_ns = now_ns };

	ht_synth_build_exit(l, ev.event, isa, reason, guest_rip, vcpu);
	return run(t, HT_SYNTH_KVM_EXIT_AT, &ev, sizeof(ev));
}

int ht_synth_entry_at(const struct ht_synth_layout *l, const struct ht_tracer *t, __u32 vcpu, __u64 now_ns)
{
	struct ht_synth_timed_event ev = { .now_ns = now_ns };

	ht_synth_build_entry(l, ev.event, vcpu, 0x1003);
	return run(t, HT_SYNTH_KVM_ENTRY_AT, &ev, sizeof(ev));
}

int ht_synth_userspace_exit_at(const struct ht_tracer *t, __u32 reason, __u64 now_ns)
{
	struct ht_synth_timed_event ev = { .now_ns = now_ns };

	memcpy(ev.event, &reason, sizeof(reason));
	return run(t, HT_SYNTH_KVM_USERSPACE_EXIT_AT, &ev, sizeof(ev));
}

/* A cause event of size bytes (0: the kernel has none) with up to three fields at their offsets. */
static int run_cause(const struct ht_tracer *t, enum ht_synthetic_prog which, size_t size, int off0, __u64 v0,
		     size_t len0, int off1, __u64 v1, size_t len1, int off2, __u64 v2, size_t len2)
{
	unsigned char ev[MAX_EVENT_SIZE] = { 0 };

	if (!size)
		return -ENOENT;
	/* Little-endian: the low len bytes of each value. */
	put(ev, off0, &v0, len0);
	put(ev, off1, &v1, len1);
	put(ev, off2, &v2, len2);
	return run(t, which, ev, size);
}

int ht_synth_pio(const struct ht_synth_layout *l, const struct ht_tracer *t, __u32 rw, __u32 port, __u32 size)
{
	return run_cause(t, HT_SYNTH_KVM_PIO, l->pio_size, l->pio_rw, rw, 4, l->pio_port, port, 4, l->pio_size_field,
			 size, 4);
}

int ht_synth_mmio(const struct ht_synth_layout *l, const struct ht_tracer *t, __u32 type, __u32 len, __u64 gpa)
{
	return run_cause(t, HT_SYNTH_KVM_MMIO, l->mmio_size, l->mmio_type, type, 4, l->mmio_len, len, 4, l->mmio_gpa,
			 gpa, 8);
}

int ht_synth_msr(const struct ht_synth_layout *l, const struct ht_tracer *t, __u32 write, __u32 ecx)
{
	return run_cause(t, HT_SYNTH_KVM_MSR, l->msr_size, l->msr_write, write, 4, l->msr_ecx, ecx, 4,
			 HT_SYNTH_NO_FIELD, 0, 0);
}

int ht_synth_cpuid(const struct ht_synth_layout *l, const struct ht_tracer *t, __u32 function, __u32 index)
{
	return run_cause(t, HT_SYNTH_KVM_CPUID, l->cpuid_size, l->cpuid_function, function, 4, l->cpuid_index, index,
			 4, HT_SYNTH_NO_FIELD, 0, 0);
}

int ht_synth_switch(const struct ht_tracer *t, __u32 prev_tid, __u32 prev_tgid, __u32 next_tid,
		    __u32 next_tgid, bool prev_involuntary, __u64 now_ns)
{
	struct ht_synth_switch a = { .prev_tid = prev_tid, .prev_tgid = prev_tgid, .next_tid = next_tid,
				     .next_tgid = next_tgid, .prev_involuntary = prev_involuntary, .now_ns = now_ns,
				     /* A blocked thread as the kernel says it: TASK_INTERRUPTIBLE. */
				     .prev_state = prev_involuntary ? 0 : 1 };

	/* Names that say whose they are: "t<tid>". */
	snprintf(a.prev_comm, sizeof(a.prev_comm), "t%u", prev_tid);
	snprintf(a.next_comm, sizeof(a.next_comm), "t%u", next_tid);
	return run(t, HT_SYNTH_SCHED_SWITCH, &a, sizeof(a));
}

int ht_synth_wakeup(const struct ht_tracer *t, __u32 tid, __u64 now_ns)
{
	struct ht_synth_wakeup a = { .tid = tid, .now_ns = now_ns };

	return run(t, HT_SYNTH_SCHED_WAKEUP, &a, sizeof(a));
}

int ht_synth_timer_expires(const struct ht_tracer *t, __u32 tid, __u64 due_ns)
{
	struct ht_synth_wakeup a = { .tid = tid, .now_ns = due_ns };

	return run(t, HT_SYNTH_TIMER_EXPIRES, &a, sizeof(a));
}

int ht_synth_halt(const struct ht_tracer *t, __u32 tid, __u64 ns, bool waited, bool poll_changed, __u32 poll_new,
		  __u32 poll_old)
{
	struct ht_synth_halt a = {
		.tid = tid, .waited = waited, .ns = ns, .poll_changed = poll_changed, .poll_new = poll_new, .poll_old = poll_old,
	};

	return run(t, HT_SYNTH_KVM_HALT, &a, sizeof(a));
}

int ht_synth_halt_at(const struct ht_tracer *t, __u32 tid, __u64 ns, bool waited, __u64 now_ns)
{
	struct ht_synth_halt a = { .tid = tid, .waited = waited, .ns = ns, .now_ns = now_ns };

	return run(t, HT_SYNTH_KVM_HALT, &a, sizeof(a));
}

int ht_synth_inj_virq(const struct ht_tracer *t, __u32 tid, __u32 vector)
{
	struct ht_synth_inj_virq a = { .tid = tid, .vector = vector };

	return run(t, HT_SYNTH_KVM_INJ_VIRQ, &a, sizeof(a));
}

int ht_synth_accept_irq(const struct ht_tracer *t, __u32 sender_tgid, __u32 sender_tid, __u32 apicid, __u32 dm,
			__u32 tm, __u32 vector, __u64 now_ns)
{
	struct ht_synth_accept_irq a = { .sender_tgid = sender_tgid, .sender_tid = sender_tid, .apicid = apicid,
					 .dm = dm, .tm = tm, .vector = vector, .now_ns = now_ns };

	return run(t, HT_SYNTH_KVM_APIC_ACCEPT_IRQ, &a, sizeof(a));
}

int ht_synth_register(const struct ht_tracer *t, __u32 tid, __u32 tgid, __u32 vcpu, bool running, __u64 now_ns)
{
	struct ht_synth_register a = { .tid = tid, .tgid = tgid, .vcpu = vcpu, .running = running, .now_ns = now_ns };

	return run(t, HT_SYNTH_VCPU_REGISTER, &a, sizeof(a));
}

int ht_synth_unpreempted(void)
{
	struct sched_param low_rt = { .sched_priority = 1 };

	return sched_setscheduler(0, SCHED_FIFO, &low_rt) ? -errno : 0;
}

int ht_synth_hold_cpu(void)
{
	cpu_set_t one;
	int cpu = sched_getcpu();

	if (cpu < 0)
		return -errno;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	if (sched_setaffinity(0, sizeof(one), &one))
		return -errno;
	return ht_synth_unpreempted();
}
