// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * hypertrace_guest: offloads a KVM guest kernel's events to the host, one
 * hypercall per event (include/hypertrace/guest.h has the nr values and the
 * argument packing; the host's `hypertrace-bpf report` decodes them).
 *
 *   insmod hypertrace_guest.ko sched_switch=1 sched_wakeup=1 irq=1 \
 *          functions=do_sys_openat2,vfs_read
 *
 * Each parameter registers its probes at load and nothing else: an event
 * kind left off costs nothing. The parameters are read-only once loaded
 * (reload to change them), so probes are only ever registered in init and
 * removed in exit, where the kernel waits for running probes to finish:
 * tracepoint_synchronize_unregister() for tracepoint probes, and
 * unregister_kretprobes() (which leaves a function return still pending in
 * the kernel's own return trampoline, not in this module).
 *
 * Tracepoints are found by name (for_each_kernel_tracepoint): Debian's 6.1
 * exports none of these to modules. Functions are probed with kretprobes:
 * fprobe is not built in Debian's 6.1 kernel (CONFIG_FPROBE is off).
 *
 * Loading refuses outside KVM (CPUID hypervisor signature): on bare metal the
 * hypercall instruction faults, and under another hypervisor it means
 * something else.
 */
#include <linux/interrupt.h>
#include <linux/kernel.h>
#include <linux/kprobes.h>
#include <linux/sched/clock.h>
#include <linux/timekeeping.h>
#include <linux/trace_clock.h>
#include <linux/workqueue.h>
#include <linux/module.h>
#include <linux/printk.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/smp.h>
#include <linux/string.h>
#include <linux/tracepoint.h>
#include <linux/version.h>

#include "hypertrace/guest.h"

#define HT_MAX_FUNCTIONS 64

static bool sched_switch;
module_param(sched_switch, bool, 0444);
MODULE_PARM_DESC(sched_switch, "offload sched_switch (nr 1101)");

static bool sched_wakeup;
module_param(sched_wakeup, bool, 0444);
MODULE_PARM_DESC(sched_wakeup, "offload sched_wakeup (nr 1102)");

static bool irq;
module_param(irq, bool, 0444);
MODULE_PARM_DESC(irq, "offload irq_handler_entry/exit (nr 1103/1104)");

static char *functions[HT_MAX_FUNCTIONS];
static int nr_functions;
module_param_array(functions, charp, &nr_functions, 0444);
MODULE_PARM_DESC(functions, "kernel functions whose entry/exit to offload (nr 1105/1106), comma-separated, at most 64");

static unsigned int clock_ms = 1000;
module_param(clock_ms, uint, 0444);
MODULE_PARM_DESC(clock_ms, "milliseconds between clock pairs (nr 1107; also one at load and at unload): the host maps the guest's clocks onto its own with them; 0: only at load and unload");

static int maxactive = 256;
module_param(maxactive, int, 0444);
MODULE_PARM_DESC(maxactive, "calls of one probed function that may be in flight at once (kretprobe maxactive; more are counted as missed)");

static enum ht_guest_insn insn;

struct tp_probe {
	const char *name;
	void *probe;
	bool *enabled;
	bool ends_a_pair; /* the second event of a pair (an IRQ handler's exit) */
	struct tracepoint *tp;
	bool registered;
};

static void probe_sched_switch(void *data, bool preempt, struct task_struct *prev,
			       struct task_struct *next, unsigned int prev_state)
{
	unsigned int state;

	/* The value ftrace and LTTng report (__trace_sched_switch_state). */
	if (preempt) {
		state = TASK_REPORT_MAX;
	} else {
		state = __task_state_index(prev_state, prev->exit_state);
		state = state ? 1u << (state - 1) : 0;
	}
	ht_guest_emit(insn, HT_GUEST_NR_SCHED_SWITCH,
		      ht_guest_pack_sched_switch(prev->pid, prev->prio, state, next->pid, next->prio,
						 next->comm, smp_processor_id()));
}

static void probe_sched_wakeup(void *data, struct task_struct *p)
{
	ht_guest_emit(insn, HT_GUEST_NR_SCHED_WAKEUP,
		      ht_guest_pack_sched_wakeup(p->pid, p->prio, task_cpu(p), p->comm,
						 smp_processor_id()));
}

static void probe_irq_entry(void *data, int irq_nr, struct irqaction *action)
{
	ht_guest_emit(insn, HT_GUEST_NR_IRQ_ENTRY,
		      ht_guest_pack_irq_entry(irq_nr, action ? action->name : NULL,
					      smp_processor_id()));
}

static void probe_irq_exit(void *data, int irq_nr, struct irqaction *action, int ret)
{
	ht_guest_emit(insn, HT_GUEST_NR_IRQ_EXIT,
		      ht_guest_pack_irq_exit(irq_nr, ret, smp_processor_id()));
}

static struct tp_probe tp_probes[] = {
	{ "sched_switch", probe_sched_switch, &sched_switch },
	{ "sched_wakeup", probe_sched_wakeup, &sched_wakeup },
	{ "irq_handler_entry", probe_irq_entry, &irq },
	{ "irq_handler_exit", probe_irq_exit, &irq, true },
};

static void find_tracepoint(struct tracepoint *tp, void *priv)
{
	for (size_t i = 0; i < ARRAY_SIZE(tp_probes); i++)
		if (!strcmp(tp->name, tp_probes[i].name))
			tp_probes[i].tp = tp;
}

/* Function probes: kretprobe entry and return handlers. */
static struct kretprobe *func_probes;
static struct kretprobe **func_probe_ptrs;

static int func_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct kretprobe *rp = get_kretprobe(ri);

	/* At entry regs->sp points at the return address (x86's rethook reads it there too). */
	ht_guest_emit(insn, HT_GUEST_NR_FUNC_ENTRY,
		      ht_guest_pack_func((unsigned long)rp->kp.addr, *(unsigned long *)regs->sp,
					 current->pid, smp_processor_id()));
	return 0;
}

static int func_exit(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct kretprobe *rp = get_kretprobe(ri);

	ht_guest_emit(insn, HT_GUEST_NR_FUNC_EXIT,
		      ht_guest_pack_func((unsigned long)rp->kp.addr, regs_return_value(regs),
					 current->pid, smp_processor_id()));
	return 0;
}

static unsigned int events_mask(void)
{
	return (sched_switch ? HT_GUEST_EV_SCHED_SWITCH : 0) |
	       (sched_wakeup ? HT_GUEST_EV_SCHED_WAKEUP : 0) | (irq ? HT_GUEST_EV_IRQ : 0) |
	       (nr_functions ? HT_GUEST_EV_FUNCTIONS : 0);
}

static unsigned long missed_total(void)
{
	unsigned long missed = 0;

	for (int i = 0; i < nr_functions; i++)
		missed += func_probes[i].nmissed + func_probes[i].kp.nmissed;
	return missed;
}

/* This module's text: every hypercall it issues is in there (init code calls out to it). */
static void module_text(unsigned long *start, unsigned long *size)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 4, 0)
	*start = (unsigned long)THIS_MODULE->mem[MOD_TEXT].base;
	*size = THIS_MODULE->mem[MOD_TEXT].size;
#else
	*start = (unsigned long)THIS_MODULE->core_layout.base;
	*size = THIS_MODULE->core_layout.text_size;
#endif
}

/*
 * The module event: which events are on, the run-time address of an
 * exported kernel function, so the host can find the KASLR offset against
 * the guest's System.map, and the module's text, so the host can tell its
 * events from the same nr issued by anyone else in the guest. noinline:
 * its hypercall must stay in the module's text, not in init code.
 */
static noinline void emit_module_event(unsigned int state, unsigned long missed)
{
	unsigned long start, size;

	module_text(&start, &size);
	ht_guest_emit(insn, HT_GUEST_NR_MODULE,
		      ht_guest_module_text(ht_guest_pack_module(state, events_mask(), nr_functions, missed,
								(unsigned long)&_printk, "_printk"),
					   start, size));
}

/*
 * A clock pair: the guest's clocks, read with interrupts off right before
 * the hypercall, so nothing of the guest's runs between the read and the
 * exit whose host time pairs with it. The reads are statements of their
 * own, in a fixed order: as arguments of one call their order was the
 * compiler's (ftrace's clock first), and the reads after a clock's add
 * their time to its pairs. ftrace's clock is read last, nearest the exit:
 * the host places each ftrace event before its own hypercall's exit to
 * within the fit's residual; CLOCK_MONOTONIC (pvclock), the costliest read,
 * first. noinline: its hypercall stays in the module's text.
 */
static noinline void emit_clock_pair(void)
{
	static u32 seq;
	unsigned long flags;
	u64 mono, local, trace;

	local_irq_save(flags);
	mono = ktime_get_mono_fast_ns();
	local = local_clock();
	trace = trace_clock_local();
	ht_guest_emit(insn, HT_GUEST_NR_CLOCK_PAIR,
		      ht_guest_pack_clock_pair(local, mono, trace, seq++, smp_processor_id()));
	local_irq_restore(flags);
}

static void clock_pair_work_fn(struct work_struct *work);
static DECLARE_DELAYED_WORK(clock_pair_work, clock_pair_work_fn);

static void clock_pair_work_fn(struct work_struct *work)
{
	emit_clock_pair();
	schedule_delayed_work(&clock_pair_work, msecs_to_jiffies(clock_ms));
}

/*
 * Pairs (an IRQ handler's entry and exit) are kept whole at both ends: the
 * ends of pairs are registered first and removed last, with a wait between
 * (tracepoint_synchronize_unregister: every handler running at the time has
 * returned, through its exit's tracepoint). So every entry sent has its
 * exit sent too, even for an interrupt that straddles a load or an unload;
 * only an exit whose entry came before the load is sent alone. (Registered
 * entry first, an interrupt in its handler at the load was sent as an entry
 * without its exit: seen once in the nested test.)
 */
static void unregister_tracepoints(void)
{
	bool any = false;

	for (int ends = 0; ends <= 1; ends++) {
		if (ends && any)
			tracepoint_synchronize_unregister();
		for (size_t i = 0; i < ARRAY_SIZE(tp_probes); i++) {
			if (!tp_probes[i].registered || tp_probes[i].ends_a_pair != ends)
				continue;
			tracepoint_probe_unregister(tp_probes[i].tp, tp_probes[i].probe, NULL);
			tp_probes[i].registered = false;
			any = true;
		}
	}
	/* No probe of ours runs any more once this returns: the module text may go. */
	if (any)
		tracepoint_synchronize_unregister();
}

/* One probe, if its parameter is on: 0, or why not (said in the kernel log). */
static int register_tracepoint(struct tp_probe *t)
{
	int err;

	if (!*t->enabled)
		return 0;
	if (!t->tp) {
		pr_err("hypertrace_guest: this kernel has no tracepoint %s: load without that parameter\n", t->name);
		return -ENOENT;
	}
	err = tracepoint_probe_register(t->tp, t->probe, NULL);
	if (err) {
		pr_err("hypertrace_guest: cannot attach to tracepoint %s (error %d)\n", t->name, err);
		return err;
	}
	t->registered = true;
	return 0;
}

static int register_tracepoints(void)
{
	bool any_end = false;
	int err;

	for_each_kernel_tracepoint(find_tracepoint, NULL);
	for (int ends = 1; ends >= 0; ends--) {
		if (!ends && any_end)
			tracepoint_synchronize_unregister();
		for (size_t i = 0; i < ARRAY_SIZE(tp_probes); i++) {
			if (tp_probes[i].ends_a_pair != ends)
				continue;
			err = register_tracepoint(&tp_probes[i]);
			if (err)
				return err;
			any_end |= ends && tp_probes[i].registered;
		}
	}
	return 0;
}

static void free_functions(void)
{
	kfree(func_probe_ptrs);
	kfree(func_probes);
	func_probe_ptrs = NULL;
	func_probes = NULL;
}

static int register_functions(void)
{
	int err;

	if (!nr_functions)
		return 0;
	func_probes = kcalloc(nr_functions, sizeof(*func_probes), GFP_KERNEL);
	func_probe_ptrs = kcalloc(nr_functions, sizeof(*func_probe_ptrs), GFP_KERNEL);
	if (!func_probes || !func_probe_ptrs) {
		free_functions();
		return -ENOMEM;
	}
	for (int i = 0; i < nr_functions; i++) {
		struct kretprobe *rp = &func_probes[i];

		rp->kp.symbol_name = functions[i];
		rp->entry_handler = func_entry;
		rp->handler = func_exit;
		rp->maxactive = maxactive;
		func_probe_ptrs[i] = rp;
		/* One at a time, to name the function the kernel refuses. */
		err = register_kretprobe(rp);
		if (err) {
			pr_err("hypertrace_guest: cannot probe function '%s' (error %d): check the name in /proc/kallsyms; it must not be inlined, notrace or on the kprobe blacklist\n",
			       functions[i], err);
			if (i)
				unregister_kretprobes(func_probe_ptrs, i);
			free_functions();
			return err;
		}
	}
	return 0;
}

static int __init hypertrace_guest_init(void)
{
	int err;

	switch (ht_guest_probe(&insn)) {
	case HT_GUEST_KVM:
		break;
	case HT_GUEST_NOT_VIRTUAL:
		pr_err("hypertrace_guest: not running under a hypervisor: load this module only in a KVM guest\n");
		return -ENODEV;
	case HT_GUEST_OTHER_HYPERVISOR:
		pr_err("hypertrace_guest: the hypervisor is not KVM (CPUID signature): load this module only in a KVM guest\n");
		return -ENODEV;
	default:
		pr_err("hypertrace_guest: unknown CPU vendor: cannot choose vmcall or vmmcall\n");
		return -ENODEV;
	}
	if (maxactive < 1) {
		pr_err("hypertrace_guest: maxactive=%d: give a positive number\n", maxactive);
		return -EINVAL;
	}
	/* Announce first: the host can symbolize the events that follow. */
	emit_module_event(1, 0);
	err = register_functions();
	if (err) {
		/* The host sees every load end, even a failed one. */
		emit_module_event(0, 0);
		return err;
	}
	err = register_tracepoints();
	if (err) {
		unregister_tracepoints();
		if (nr_functions)
			unregister_kretprobes(func_probe_ptrs, nr_functions);
		free_functions();
		emit_module_event(0, 0);
		return err;
	}
	emit_clock_pair();
	if (clock_ms)
		schedule_delayed_work(&clock_pair_work, msecs_to_jiffies(clock_ms));
	pr_info("hypertrace_guest: offloading events 0x%x, %d function(s), with %s\n", events_mask(),
		nr_functions, insn == HT_GUEST_INSN_VMMCALL ? "vmmcall" : "vmcall");
	return 0;
}

static void __exit hypertrace_guest_exit(void)
{
	unsigned long missed;

	/* No clock pair's work runs or is queued once this returns: the module text may go. */
	cancel_delayed_work_sync(&clock_pair_work);
	emit_clock_pair();
	unregister_tracepoints();
	if (nr_functions)
		unregister_kretprobes(func_probe_ptrs, nr_functions);
	missed = nr_functions ? missed_total() : 0;
	free_functions();
	emit_module_event(0, missed);
	if (missed)
		pr_warn("hypertrace_guest: %lu function call(s) not offloaded: more than maxactive=%d in flight; reload with a larger maxactive\n",
			missed, maxactive);
}

module_init(hypertrace_guest_init);
module_exit(hypertrace_guest_exit);
MODULE_DESCRIPTION("Offload guest kernel events to the KVM host through hypercalls");
MODULE_LICENSE("Dual BSD/GPL");
