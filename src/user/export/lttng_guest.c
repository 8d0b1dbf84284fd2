// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * convert --lttng, the guests (lttng_private.h): a kernel trace per VM with
 * guest events, one stream per guest CPU, its scheduling, IRQs, functions
 * and the vmsync events that tie it to the host trace.
 */
#include "export/lttng_private.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "common/errf.h"

static int guest_classes(struct guest *g)
{
	struct guest_classes *c = &g->cls;
	static const char sync_fields[] = "\t\t" HT_TSDL_U32 " _cnt;\n\t\t" HT_TSDL_U64 " _vm_uid;\n";
	static const char fn_fields[] = "\t\t" HT_TSDL_X64 " _ip;\n\t\t" HT_TSDL_X64 " _parent_ip;\n";

	c->sched_switch = ht_lttng_trace_add_class(g->trace, "sched_switch", sched_switch_fields);
	c->sched_wakeup = ht_lttng_trace_add_class(g->trace, "sched_wakeup",
						   "\t\t" HT_TSDL_CHAR " _comm[16];\n\t\t" HT_TSDL_S32 " _tid;\n\t\t" HT_TSDL_S32
						   " _prio;\n\t\t" HT_TSDL_S32 " _target_cpu;\n");
	c->irq_entry = ht_lttng_trace_add_class(g->trace, "irq_handler_entry",
						"\t\t" HT_TSDL_S32 " _irq;\n\t\t" HT_TSDL_STRING " _name;\n");
	c->irq_exit = ht_lttng_trace_add_class(g->trace, "irq_handler_exit",
					       "\t\t" HT_TSDL_S32 " _irq;\n\t\t" HT_TSDL_S32 " _ret;\n");
	/* The project's own: the module's load and unload, with the KASLR anchor. */
	c->module = ht_lttng_trace_add_class(g->trace, "hypertrace_module",
					     "\t\t" HT_TSDL_U64 " _state;\n\t\t" HT_TSDL_X64 " _events;\n\t\t" HT_TSDL_U64
					     " _functions;\n\t\t" HT_TSDL_U64 " _missed;\n\t\t" HT_TSDL_X64
					     " _anchor_addr;\n\t\t" HT_TSDL_STRING " _anchor_name;\n");
	c->gh_guest = ht_lttng_trace_add_class(g->trace, "vmsync_gh_guest", sync_fields);
	c->hg_guest = ht_lttng_trace_add_class(g->trace, "vmsync_hg_guest", sync_fields);
	c->func_other[0] = ht_lttng_trace_add_class(g->trace, "function_entry", fn_fields);
	c->func_other[1] = ht_lttng_trace_add_class(g->trace, "function_exit", fn_fields);
	return c->sched_switch < 0 || c->sched_wakeup < 0 || c->irq_entry < 0 || c->irq_exit < 0 || c->module < 0 ||
			       c->gh_guest < 0 || c->hg_guest < 0 || c->func_other[0] < 0 || c->func_other[1] < 0 ?
		       -ENOMEM :
		       0;
}

/* A directory name from a name the VM's owner chose: letters, digits, '.', '_' and '-' kept, at most 40. */
static void guest_dirname(char *out, size_t len, const char *vm_name, uint32_t pid)
{
	char clean[41];
	size_t n = 0;

	for (const char *s = vm_name ? vm_name : ""; *s && n < sizeof(clean) - 1; s++) {
		unsigned char c = (unsigned char)*s;
		bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
			    c == '-' || (c == '.' && n > 0);

		clean[n] = keep ? (char)c : '_';
		n++;
	}
	clean[n] = '\0';
	/* The pid keeps names unique: two VMs may carry one name. */
	if (n)
		snprintf(out, len, "guest-%s-%u", clean, pid);
	else
		snprintf(out, len, "guest-%u", pid);
}

struct guest *lt_guest_of(struct ht_lttng_export *x, const struct ht_record *r, struct ht_reader *reader,
			      char *err, size_t errlen, int *ret)
{
	struct guest *g = ht_id_pair_table_get(x->guests, r->host_pid, 0);
	const char *vm_name = reader ? ht_reader_vm_name(reader, r->host_pid) : NULL;
	char path[4300];

	*ret = 0;
	if (g)
		return g;
	g = calloc(1, sizeof(*g));
	if (!g || !(g->functions = ht_id_pair_table_new()) || !(g->vcpus = ht_id_pair_table_new()) ||
	    ht_id_pair_table_put(x->guests, r->host_pid, 0, g)) {
		if (g) {
			ht_id_pair_table_free(g->functions);
			ht_id_pair_table_free(g->vcpus);
		}
		free(g);
		*ret = ht_errf(err, errlen, "out of memory");
		return NULL;
	}
	g->pid = r->host_pid;
	g->first_ns = UINT64_MAX;
	guest_dirname(g->dirname, sizeof(g->dirname), vm_name, r->host_pid);
	snprintf(path, sizeof(path), "%s/%s", x->dir, g->dirname);
	*ret = ht_lttng_trace_open(x->out.fd, g->dirname, path, false, HT_LTTNG_MAX_GUEST_CPUS, r->exit_ns ^ r->host_pid,
				   &g->trace, err, errlen);
	if (!*ret && (guest_classes(g) || lt_common_env(g->trace, g->dirname) ||
		      ht_lttng_trace_env_str(g->trace, "vm_name", vm_name ? vm_name : "") ||
		      ht_lttng_trace_env_int(g->trace, "vm_pid", r->host_pid) ||
		      ht_lttng_trace_env_int(g->trace, "vm_uid", r->host_pid)))
		*ret = ht_errf(err, errlen, "out of memory");
	return *ret ? NULL : g;
}

/* The event classes of a guest function: NAME_entry and NAME_exit, as LTTng names a kretprobe's. */
static int function_class(struct guest *g, const struct ht_decoder *dec, uint64_t addr, bool exit)
{
	struct fn_class *f = ht_id_pair_table_get(g->functions, (uint32_t)(addr >> 32), (uint32_t)addr);
	char name[300], ev[320];

	if (f)
		return f->id[exit];
	if (g->nfunctions >= MAX_FUNCTIONS)
		return g->cls.func_other[exit];
	if (!ht_decoder_function(dec, addr, name, sizeof(name)))
		snprintf(name, sizeof(name), "func_0x%llx", (unsigned long long)addr);
	f = calloc(1, sizeof(*f));
	if (!f || ht_id_pair_table_put(g->functions, (uint32_t)(addr >> 32), (uint32_t)addr, f)) {
		free(f);
		return -ENOMEM;
	}
	snprintf(ev, sizeof(ev), "%s_entry", name);
	f->id[0] = ht_lttng_trace_add_class(g->trace, ev, "\t\t" HT_TSDL_X64 " _ip;\n\t\t" HT_TSDL_X64 " _parent_ip;\n");
	snprintf(ev, sizeof(ev), "%s_exit", name);
	f->id[1] = ht_lttng_trace_add_class(g->trace, ev, "\t\t" HT_TSDL_X64 " _ip;\n\t\t" HT_TSDL_X64 " _parent_ip;\n");
	g->nfunctions++;
	if (f->id[0] < 0 || f->id[1] < 0)
		return f->id[0] < 0 ? f->id[0] : f->id[1];
	return f->id[exit];
}

static void guest_ctx(struct ht_lttng_export *x, const struct ht_record *r, int64_t tid, uint32_t cpu,
		      struct ht_lttng_ctx *ctx)
{
	memset(ctx, 0, sizeof(*ctx));
	ctx->pid = -1;
	ctx->tid = (int32_t)tid;
	if (tid >= 0)
		ht_guest_task_comm(x->gstate, r->host_pid, (uint32_t)tid, cpu, ctx->procname);
}

/*
 * A guest CPU's number in the guest trace: KVM's vcpu_id of the vCPU it is,
 * which Trace Compass's VM analyses key the vCPU by on the host's side
 * (kvm_x86_entry's vcpu_id) and on the guest's (the trace's CPU). The
 * guest's smp_processor_id() differs where QEMU's APIC IDs have gaps (e.g.
 * sockets of 3 cores: 0, 1, 2, 4). Each hypertraced hypercall carries both:
 * learn the pairs; a CPU not seen making one keeps its number.
 */
static int guest_vcpu_learn(struct guest *g, uint32_t cpu, uint32_t vcpu_id)
{
	struct vcpu_of *v = ht_id_pair_table_get(g->vcpus, 0, cpu);

	if (!v) {
		v = malloc(sizeof(*v));
		if (!v || ht_id_pair_table_put(g->vcpus, 0, cpu, v)) {
			free(v);
			return -ENOMEM;
		}
	}
	v->vcpu_id = vcpu_id;
	return 0;
}

static uint32_t guest_vcpu(struct guest *g, uint32_t cpu)
{
	const struct vcpu_of *v = ht_id_pair_table_get(g->vcpus, 0, cpu);

	return v ? v->vcpu_id : cpu;
}

/* A task as a guest sched_switch names it: its tid, its name and its ftrace prio. */
struct guest_task {
	uint32_t tid;
	const char *comm;
	int32_t prio;
};

/* A guest sched_switch's payload: from prev, left in prev_state, to next. */
static void put_guest_switch(struct payload *p, const struct guest_task *prev, uint64_t prev_state,
			     const struct guest_task *next)
{
	lt_put_comm(p, prev->comm);
	lt_put_u32(p, prev->tid);
	lt_put_u32(p, (uint32_t)(prev->prio - LTTNG_PRIO_OFFSET));
	lt_put_u64(p, prev_state);
	lt_put_comm(p, next->comm);
	lt_put_u32(p, next->tid);
	lt_put_u32(p, (uint32_t)(next->prio - LTTNG_PRIO_OFFSET));
}

/*
 * The guest event's LTTng payload into p, its class into *id, and the
 * thread it names into *tid (if it names one): 0, 1 for an event LTTng has
 * no class for (nothing to write), or -errno.
 */
static int guest_event_payload(struct ht_lttng_export *x, struct guest *g, const struct ht_record *r,
			       const struct ht_gev *ev, struct payload *p, int *id, int64_t *tid)
{
	char comm[HT_GEV_COMM_LEN + 1];

	switch (ev->kind) {
	case HT_GEV_SCHED_SWITCH: {
		char next[HT_GEV_COMM_LEN + 1];

		*tid = ev->u.sw.prev_tid;
		*id = g->cls.sched_switch;
		ht_guest_task_comm(x->gstate, r->host_pid, ev->u.sw.prev_tid, ev->cpu, comm);
		ht_guest_task_comm(x->gstate, r->host_pid, ev->u.sw.next_tid, ev->cpu, next);
		put_guest_switch(p, &(struct guest_task){ ev->u.sw.prev_tid, comm, ev->u.sw.prev_prio }, ev->u.sw.prev_state,
				 &(struct guest_task){ ev->u.sw.next_tid, ev->u.sw.next_tid ? ev->u.sw.next_comm : next,
						       ev->u.sw.next_prio });
		break;
	}
	case HT_GEV_SCHED_WAKEUP:
		*id = g->cls.sched_wakeup;
		lt_put_comm(p, ev->u.wake.comm);
		lt_put_u32(p, ev->u.wake.tid);
		lt_put_u32(p, (uint32_t)(ev->u.wake.prio - LTTNG_PRIO_OFFSET));
		lt_put_u32(p, guest_vcpu(g, ev->u.wake.target_cpu));
		break;
	case HT_GEV_IRQ_ENTRY:
		*id = g->cls.irq_entry;
		lt_put_u32(p, ev->u.irq.irq);
		lt_put_string(p, ev->u.irq.name);
		break;
	case HT_GEV_IRQ_EXIT:
		*id = g->cls.irq_exit;
		lt_put_u32(p, ev->u.irq.irq);
		lt_put_u32(p, (uint32_t)(int32_t)ev->u.irq.ret); /* irqreturn_t: an int */
		break;
	case HT_GEV_FUNC_ENTRY:
	case HT_GEV_FUNC_EXIT:
		*tid = ev->u.func.tid;
		*id = function_class(g, x->dec, ev->u.func.addr, ev->kind == HT_GEV_FUNC_EXIT);
		if (*id < 0)
			return *id;
		lt_put_u64(p, ev->u.func.addr);
		lt_put_u64(p, ev->u.func.call_site);
		break;
	case HT_GEV_MODULE:
		*id = g->cls.module;
		lt_put_u64(p, ev->u.mod.state);
		lt_put_u64(p, ev->u.mod.events);
		lt_put_u64(p, ev->u.mod.functions);
		lt_put_u64(p, ev->u.mod.missed);
		lt_put_u64(p, ev->u.mod.anchor_addr);
		lt_put_string(p, ev->u.mod.anchor_name);
		break;
	default:
		return 1;
	}
	return 0;
}

/*
 * The stand-in for what ran on a guest CPU while its switches were lost
 * (export/switch_chain.h): tid PID_MAX_LIMIT (2^22 on x86-64), which no
 * Linux task has.
 */
#define STAND_IN_TID (1u << 22)

/*
 * A guest sched_switch that breaks its stream's chain (its prev_tid is not
 * the task the stream's last switch put there: switches were lost in
 * between) would leave that task running in Trace Compass: its
 * SchedSwitchHandler sets the states of prev_tid and next_tid and never
 * looks at the CPU's current thread. Before it, two switches close the
 * chain (docs/exports.md): the task last switched in leaves, in the state
 * Trace Compass reads as WAIT_UNKNOWN, when it was last known there: at
 * its switch-in, or at the guest module's unload after it (the events
 * wait in time order, and it is written after that event); the stand-in
 * holds the CPU until the breaking switch's time, then gives it to that
 * switch's prev_tid.
 */
static int follow_chain(struct ht_lttng_export *x, struct guest *g, const struct ht_record *r, const struct ht_gev *ev)
{
	char last_comm[HT_GEV_COMM_LEN + 1], prev_comm[HT_GEV_COMM_LEN + 1];
	struct ht_lttng_ctx ctx;
	struct ht_chain_break brk;
	struct payload p = { .len = 0 };
	uint64_t at;
	int ret;

	/* Keyed by the stream the switch is written to, the CPU Trace Compass reads it on. */
	ret = ht_switch_chain_follow(x->chain, r->host_pid, r->vcpu_id, ev->u.sw.prev_tid, ev->u.sw.next_tid,
				     ev->u.sw.next_prio, r->exit_ns, &brk);
	if (ret <= 0)
		return ret;
	at = brk.known_ns < r->exit_ns ? brk.known_ns : r->exit_ns;
	ht_guest_task_comm(x->gstate, r->host_pid, brk.last_tid, ev->cpu, last_comm);
	ht_guest_task_comm(x->gstate, r->host_pid, ev->u.sw.prev_tid, ev->cpu, prev_comm);
	const struct guest_task last = { brk.last_tid, last_comm, brk.last_prio };
	const struct guest_task gap = { STAND_IN_TID, HT_CHAIN_UNKNOWN_COMM, HT_CHAIN_UNKNOWN_PRIO };
	const struct guest_task into = { ev->u.sw.prev_tid, prev_comm, ev->u.sw.prev_prio };

	put_guest_switch(&p, &last, HT_CHAIN_UNKNOWN_STATE, &gap);
	guest_ctx(x, r, brk.last_tid, ev->cpu, &ctx);
	if ((ret = lt_push(x, g->trace, r->vcpu_id, at, g->cls.sched_switch, &ctx, &p)))
		return ret;
	p.len = 0;
	put_guest_switch(&p, &gap, HT_CHAIN_UNKNOWN_STATE, &into);
	ctx.tid = (int32_t)STAND_IN_TID;
	snprintf(ctx.procname, sizeof(ctx.procname), "%s", HT_CHAIN_UNKNOWN_COMM);
	return lt_push(x, g->trace, r->vcpu_id, r->exit_ns, g->cls.sched_switch, &ctx, &p);
}

/* The guest side of a hypertraced hypercall: the event, then the vmsync pair. */
int lt_guest_events(struct ht_lttng_export *x, struct guest *g, const struct ht_record *r,
			const struct ht_gev *ev, int64_t task_before, uint64_t entry_ns)
{
	struct payload p = { .len = 0 };
	struct ht_lttng_ctx ctx;
	int64_t tid = task_before;
	int id = 0, ret;
	/* The event's CPU made this hypercall: the record's vCPU is the one it runs on. */
	uint32_t vcpu = r->vcpu_id;

	if (guest_vcpu_learn(g, ev->cpu, r->vcpu_id))
		return -ENOMEM;
	if (ev->kind == HT_GEV_SCHED_SWITCH && (ret = follow_chain(x, g, r, ev)))
		return ret;
	if (ev->kind == HT_GEV_MODULE && ev->u.mod.state == 0)
		ht_switch_chain_stopped(x->chain, r->host_pid, r->exit_ns);
	if ((ret = guest_event_payload(x, g, r, ev, &p, &id, &tid)))
		return ret < 0 ? ret : 0;
	guest_ctx(x, r, tid, ev->cpu, &ctx);
	if ((ret = lt_push(x, g->trace, vcpu, r->exit_ns, id, &ctx, &p)))
		return ret;
	/* What the guest's vmsync module traces around its hypercall: the message out, then the answer in. */
	p.len = 0;
	lt_put_u32(&p, g->cnt);
	lt_put_u64(&p, g->pid);
	if ((ret = lt_push(x, g->trace, vcpu, r->exit_ns, g->cls.gh_guest, &ctx, &p)))
		return ret;
	p.len = 0;
	lt_put_u32(&p, g->cnt + 1);
	lt_put_u64(&p, g->pid);
	if (r->exit_ns < g->first_ns)
		g->first_ns = r->exit_ns;
	if (entry_ns > g->last_ns)
		g->last_ns = entry_ns;
	return lt_push(x, g->trace, vcpu, entry_ns, g->cls.hg_guest, &ctx, &p);
}

