// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The tracer: loads the BPF object for the options (one kvm_exit program of
 * the host's ISA, the programs --exits needs), attaches and detaches it, and
 * sets the filters it reads. Its readers are in tracer_read.c, what libbpf
 * and the verifier say in bpf_log.c.
 */
#include "record/tracer_private.h"
#include "common/cpu_vendor.h"
#include "record/attach_targets.h"
#include "record/preflight.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/membarrier.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "common/util.h"

void ht_filters_default(struct ht_filters *f)
{
	memset(f, 0, sizeof(*f));
	f->nr[0] = HT_DEFAULT_HYPERCALL_NR;
	f->nr_count = 1;
}

int ht_rings_prepare(struct bpf_map *rings, unsigned int n, unsigned long bytes, int *fds)
{
	for (unsigned int i = 0; i < n; i++) {
		fds[i] = bpf_map_create(BPF_MAP_TYPE_RINGBUF, "ht_ring", 0, 0, (__u32)bytes, NULL);
		if (fds[i] < 0) {
			int ret = -errno;
			while (i-- > 0)
				close(fds[i]);
			return ret;
		}
	}
	/* The map holds rings of exactly one size: the first is the template the kernel checks the others against. */
	bpf_map__set_max_entries(rings, n);
	bpf_map__set_inner_map_fd(rings, fds[0]);
	return 0;
}

int ht_rings_install(const struct bpf_map *rings, unsigned int n, const int *fds)
{
	for (__u32 i = 0; i < n; i++)
		if (bpf_map_update_elem(bpf_map__fd(rings), &i, &fds[i], BPF_ANY))
			return -errno;
	return 0;
}

/* kvm false: only the sched programs. A program already attached is left as it is. */
static int attach_programs(struct ht_tracer *t, bool kvm, char *err, size_t errlen)
{
	struct {
		struct bpf_program *prog;
		struct bpf_link **link;
		bool kvm;
	} tps[] = {
		/*
		 * sched_switch first: an armed state stays in its CPU's slot only
		 * because every armed thread switched out or in is seen (cpu_states).
		 * Then entry and hypercall: an exit armed before them would be
		 * fused only by them. The exit program, which arms, comes last.
		 */
		{ t->skel->progs.on_sched_switch, &t->skel->links.on_sched_switch, false },
		{ t->skel->progs.on_sched_wakeup, &t->skel->links.on_sched_wakeup, false },
		{ t->skel->progs.on_thread_exit, &t->skel->links.on_thread_exit, false },
		{ t->skel->progs.on_kvm_entry, &t->skel->links.on_kvm_entry, true },
		{ t->skel->progs.on_kvm_userspace_exit, &t->skel->links.on_kvm_userspace_exit, true },
		{ t->skel->progs.on_kvm_halt_poll_ns, &t->skel->links.on_kvm_halt_poll_ns, true },
		{ t->skel->progs.on_kvm_vcpu_wakeup, &t->skel->links.on_kvm_vcpu_wakeup, true },
		{ t->skel->progs.on_kvm_inj_virq, &t->skel->links.on_kvm_inj_virq, true },
		{ t->skel->progs.on_kvm_apic_accept_irq, &t->skel->links.on_kvm_apic_accept_irq, true },
		{ t->skel->progs.on_hrtimer_expire_entry, &t->skel->links.on_hrtimer_expire_entry, true },
		{ t->skel->progs.on_kvm_pio, &t->skel->links.on_kvm_pio, true },
		{ t->skel->progs.on_kvm_mmio, &t->skel->links.on_kvm_mmio, true },
		{ t->skel->progs.on_kvm_msr, &t->skel->links.on_kvm_msr, true },
		{ t->skel->progs.on_kvm_cpuid, &t->skel->links.on_kvm_cpuid, true },
		{ t->skel->progs.on_kvm_hypercall, &t->skel->links.on_kvm_hypercall, true },
		{ t->exit_prog, t->exit_link, true },
	};

	/*
	 * libbpf reads a classic tracepoint's id under tracefs, which a freshly
	 * booted host may not have mounted: mount it here, as record's
	 * preflight does, for every caller (the in-kernel tests, benchmarks).
	 */
	int ret = ht_check_tracefs(&ht_preflight_system_paths, 1, err, errlen);

	if (ret)
		return ret;
	for (size_t i = 0; i < ARRAY_SIZE(tps); i++) {
		if ((tps[i].kvm && !kvm) || *tps[i].link || !bpf_program__autoload(tps[i].prog))
			continue;
		/* libbpf takes the tracepoint from the program's SEC("tp/CATEGORY/NAME") or SEC("tp_btf/NAME"). */
		*tps[i].link = bpf_program__attach(tps[i].prog);
		if (!*tps[i].link) {
			const char *tp;

			ret = -errno;
			tp = bpf_program__section_name(tps[i].prog);

			snprintf(err, errlen, "cannot attach to the %s tracepoint: %s (%s)",
				 strchr(tp, '/') ? strchr(tp, '/') + 1 : tp, strerror(-ret), ht_libbpf_last_warning());
			ht_tracer_detach(t);
			return ret;
		}
	}
	return 0;
}

/* The tracer with its skeleton opened, not yet loaded. */
static int open_tracer(struct ht_tracer **out, char *err, size_t errlen)
{
	struct ht_tracer *t = calloc(1, sizeof(*t));
	int ret;

	*out = t;
	if (!t) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	t->stats_fd = -1;
	/* Before the object is opened: libbpf takes a section's handler at open. */
	ret = ht_attach_targets_register();
	if (ret) {
		snprintf(err, errlen, "cannot register the tp_btf programs' handler with libbpf: %s", strerror(-ret));
		return ret;
	}
	t->skel = hypertrace_bpf__open();
	if (!t->skel) {
		ret = -errno;
		snprintf(err, errlen, "cannot open the BPF object: %s (%s)", strerror(-ret), ht_libbpf_last_warning());
		return ret;
	}
	return 0;
}

/*
 * The one kvm_exit program loaded: the generic one for --exit-reason, else
 * the ISA's; on SVM the raw one where the caller found it loadable (it
 * spares the kernel the event record per exit, see hypertrace.bpf.c).
 */
static void choose_exit_program(struct ht_tracer *t, int isa, bool by_reason, bool svm_raw)
{
	struct hypertrace_bpf *sk = t->skel;
	struct bpf_program *exit_progs[] = { sk->progs.on_kvm_exit, sk->progs.on_kvm_exit_vmx,
					     sk->progs.on_kvm_exit_svm, sk->progs.on_kvm_exit_svm_raw };

	if (by_reason) {
		t->exit_prog = sk->progs.on_kvm_exit;
		t->synthetic_exit_prog = sk->progs.synthetic_kvm_exit;
		t->exit_link = &sk->links.on_kvm_exit;
	} else if (isa == HT_ISA_VMX) {
		t->exit_prog = sk->progs.on_kvm_exit_vmx;
		t->synthetic_exit_prog = sk->progs.synthetic_kvm_exit_vmx;
		t->exit_link = &sk->links.on_kvm_exit_vmx;
	} else if (svm_raw) {
		t->exit_prog = sk->progs.on_kvm_exit_svm_raw;
		t->synthetic_exit_prog = sk->progs.synthetic_kvm_exit_svm; /* the same handler, from a laid-out record */
		t->exit_link = &sk->links.on_kvm_exit_svm_raw;
	} else {
		t->exit_prog = sk->progs.on_kvm_exit_svm;
		t->synthetic_exit_prog = sk->progs.synthetic_kvm_exit_svm;
		t->exit_link = &sk->links.on_kvm_exit_svm;
	}
	for (size_t i = 0; i < ARRAY_SIZE(exit_progs); i++)
		bpf_program__set_autoload(exit_progs[i], exit_progs[i] == t->exit_prog);
}

/* What the BPF programs read as constants: the filters, the rings, the modes. */
static void set_rodata(struct hypertrace_bpf__rodata *ro, const struct ht_tracer_opts *opts, int isa,
		       unsigned int nrings, unsigned long ring_bytes, unsigned int vcpu_threads)
{
	const struct ht_filters *f = &opts->filters;
	unsigned long wakeup_bytes = opts->wakeup_bytes;

	for (unsigned int i = 0; i < HT_MAX_SELECTED_NR; i++)
		ro->filter_nr[i] = i < f->nr_count ? f->nr[i] : 0;
	ro->filter_nr_count = f->nr_count;
	ro->filter_exit_reason_on = f->exit_reason_on;
	ro->filter_exit_reason = f->exit_reason;
	ro->prefilter_mask = isa == HT_ISA_VMX ? HT_VMX_EXIT_REASON_MASK : HT_SVM_EXIT_CODE_MASK;
	ro->prefilter_value = f->exit_reason_on ? f->exit_reason :
			      isa == HT_ISA_VMX ? HT_VMX_EXIT_REASON_VMCALL : HT_SVM_EXIT_CODE_VMMCALL;
	ro->filter_tgid_on = f->tgid_on;
	ro->filter_vcpu_on = f->vcpu_on;
	ro->filter_vcpu = f->vcpu;
	if (wakeup_bytes > ht_wakeup_bytes_for(ring_bytes))
		wakeup_bytes = ht_wakeup_bytes_for(ring_bytes);
	ro->wakeup_shift = ht_wakeup_shift_for(wakeup_bytes);
	ro->ring_mask = nrings - 1;
	ro->aggregate_only = opts->aggregate_only;
	ro->aggregate_group_by = opts->group_by;
	ro->aggregate_by_nr = opts->aggregate_by_nr;
	ro->exits_on = opts->exits;
	ro->vcpu_sched_on = opts->exits && opts->vcpu_sched;
	ro->wakeups_on = opts->exits && opts->wakeups;
	ro->boot_on = opts->exits && opts->boot;
	ro->boot_since_ns = opts->boot_since_ns;
	ro->boot_window_ns = opts->boot_window_ns;
	ro->boot_max_exits = opts->boot_max_exits;
	ro->vcpu_thread_mask = vcpu_threads - 1;
}

/*
 * Which of the other programs load: --exits' own (the wakeups, the returns
 * to the VMM, the halts, their polling, their wake-ups' interrupts and timers,
 * the causes of exits); the synthetic twins only for tests and
 * benchmarks, production loads only the tracepoint programs.
 */
static void choose_programs(struct ht_tracer *t, const struct ht_tracer_opts *opts)
{
	struct hypertrace_bpf *sk = t->skel;
	struct bpf_program *causes[] = { sk->progs.on_kvm_pio, sk->progs.on_kvm_mmio, sk->progs.on_kvm_msr,
					 sk->progs.on_kvm_cpuid };
	struct bpf_program *synthetic_causes[] = { sk->progs.synthetic_kvm_pio, sk->progs.synthetic_kvm_mmio,
						   sk->progs.synthetic_kvm_msr, sk->progs.synthetic_kvm_cpuid };
	struct bpf_program *synthetic_exits[] = { sk->progs.synthetic_kvm_exit, sk->progs.synthetic_kvm_exit_vmx,
						  sk->progs.synthetic_kvm_exit_svm };
	struct bpf_program *synthetic[] = { sk->progs.synthetic_kvm_hypercall, sk->progs.synthetic_kvm_entry,
					    sk->progs.synthetic_fill, sk->progs.synthetic_kvm_exit_at,
					    sk->progs.synthetic_kvm_entry_at, sk->progs.synthetic_sched_switch,
					    sk->progs.synthetic_sched_wakeup, sk->progs.synthetic_vcpu_register, sk->progs.synthetic_kvm_halt,
					    sk->progs.synthetic_kvm_userspace_exit_at, sk->progs.synthetic_kvm_inj_virq,
					    sk->progs.synthetic_kvm_apic_accept_irq, sk->progs.synthetic_timer_expires };

	bpf_program__set_autoload(sk->progs.on_sched_wakeup, opts->exits);
	bpf_program__set_autoload(sk->progs.on_kvm_userspace_exit, opts->exits);
	bpf_program__set_autoload(sk->progs.on_kvm_halt_poll_ns, opts->exits);
	bpf_program__set_autoload(sk->progs.on_kvm_vcpu_wakeup, opts->exits);
	bpf_program__set_autoload(sk->progs.on_kvm_inj_virq, opts->exits);
	bpf_program__set_autoload(sk->progs.on_kvm_apic_accept_irq, opts->exits);
	bpf_program__set_autoload(sk->progs.on_hrtimer_expire_entry, opts->exits);
	for (size_t i = 0; i < ARRAY_SIZE(causes); i++) {
		bpf_program__set_autoload(causes[i], opts->exits);
		bpf_program__set_autoload(synthetic_causes[i], opts->exits && opts->synthetic);
	}
	for (size_t i = 0; i < ARRAY_SIZE(synthetic_exits); i++)
		bpf_program__set_autoload(synthetic_exits[i], opts->synthetic && synthetic_exits[i] == t->synthetic_exit_prog);
	for (size_t i = 0; i < ARRAY_SIZE(synthetic); i++)
		bpf_program__set_autoload(synthetic[i], opts->synthetic);
	if (opts->exit_program_only) {
		struct bpf_program *p;

		bpf_object__for_each_program(p, sk->obj)
			bpf_program__set_autoload(p, p == t->exit_prog);
	}
}

/* The maps sized by the host's CPUs: each CPU's table of exit series, and the rings, created here. */
static int size_cpu_maps(struct ht_tracer *t, const struct ht_tracer_opts *opts, int cpus, unsigned int nrings,
			 unsigned long ring_bytes, char *err, size_t errlen)
{
	int ret;

	/* One entry if --exits is off (the map must exist). */
	t->exit_cache_entries = opts->exits ? (size_t)(cpus > 0 ? cpus : 1) * HT_EXIT_CACHE_WAYS : 1;
	bpf_map__set_max_entries(t->skel->maps.exit_cache, (__u32)t->exit_cache_entries);
	/* --boot's tables: one entry each if it is off (the maps must exist). */
	bpf_map__set_max_entries(t->skel->maps.boot_threads, opts->exits && opts->boot ? t->vcpu_threads : 1);
	bpf_map__set_max_entries(t->skel->maps.boot_vms, opts->exits && opts->boot ? HT_MAX_BOOT_VMS : 1);
	/* Aggregate-only mode's groups: 1024 per-CPU histograms, 1.5 KB each, preallocated. */
	if (!opts->aggregate_only)
		bpf_map__set_max_entries(t->skel->maps.latency_hists, 1);
	/*
	 * --exits' preallocated tables: one entry each if it is off, else one
	 * a vCPU thread (the VMs' shares keep their size). They are kernel
	 * memory, zeroed when they are created, that a recording of hypercalls
	 * alone would never touch.
	 */
	struct bpf_map *per_thread[HT_VCPU_THREAD_MAPS];

	ht_tracer_vcpu_thread_maps(t->skel, per_thread);
	for (size_t i = 0; i < ARRAY_SIZE(per_thread); i++)
		bpf_map__set_max_entries(per_thread[i], opts->exits ? t->vcpu_threads : 1);
	if (!opts->exits)
		bpf_map__set_max_entries(t->skel->maps.vm_shares, 1);
	if (cpus > HT_MAX_CPUS) {
		snprintf(err, errlen, "this host has %d possible CPUs; hypertrace-bpf keeps a state slot for at most %d",
			 cpus, HT_MAX_CPUS);
		return -E2BIG;
	}
	ret = ht_rings_prepare(t->skel->maps.rings, nrings, ring_bytes, t->ring_fds);
	if (ret) {
		snprintf(err, errlen, "cannot create the ring buffers (%u of %lu bytes): %s: try a smaller --ringbuf-size",
			 nrings, ring_bytes, strerror(-ret));
		return ret;
	}
	t->nrings = nrings;
	return 0;
}

/* Loads the chosen programs; a failure names the program and the verifier's reason. */
static int load_programs(struct ht_tracer *t, char *err, size_t errlen)
{
	struct ht_verifier_logs logs = { .n = 0 };
	int ret = ht_verifier_logs_attach(&logs, t->skel->obj);

	if (!ret)
		ret = ht_attach_targets_find(t->skel->obj);
	if (!ret)
		ret = hypertrace_bpf__load(t->skel);
	/* The loaded programs hold their targets' BTFs: the next load looks again (a module may come and go). */
	ht_attach_targets_forget();
	if (ret) {
		char reason[256];

		if (!ht_verifier_logs_reason(&logs, reason, sizeof(reason)))
			snprintf(reason, sizeof(reason), "%s", ht_libbpf_last_warning());
		snprintf(err, errlen, "cannot load the BPF programs: %s (%s): rerun with -v to see the libbpf and verifier log",
			 strerror(-ret), reason);
	}
	ht_verifier_logs_free(&logs); /* before the skeleton its programs belong to */
	return ret;
}

static size_t whole_pages(size_t bytes)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	return (bytes + page - 1) / page * page;
}

/* The whole of map's data, mapped into *out; what names it in a failure's message. 0 or -errno. */
static int map_table(const struct bpf_map *map, size_t bytes, int prot, const char *what, void **out, char *err,
		     size_t errlen)
{
	void *p = mmap(NULL, bytes, prot, MAP_SHARED, bpf_map__fd(map), 0);
	int ret;

	if (p == MAP_FAILED) {
		ret = -errno;
		snprintf(err, errlen, "cannot map the %s: %s", what, strerror(-ret));
		return ret;
	}
	*out = p;
	return 0;
}

/* --exits: the CPUs' tables of exit series and the vCPU threads' table, mapped for the readers. */
static int map_exit_tables(struct ht_tracer *t, char *err, size_t errlen)
{
	void *p = NULL;
	int ret;

	t->exit_cache_bytes = whole_pages(t->exit_cache_entries * sizeof(struct exit_cache_entry));
	/* Writable: user space frees the entries of a VM that ended once it has read them (tracer_free.c). */
	if ((ret = map_table(t->skel->maps.exit_cache, t->exit_cache_bytes, PROT_READ | PROT_WRITE, "exit tables", &p,
			     err, errlen)))
		return ret;
	t->exit_cache = p;
	t->vcpu_thread_table_bytes = whole_pages(sizeof(struct vcpu_thread) * t->vcpu_threads);
	/* Writable: user space frees the entry of a thread that ended once it has read it. */
	if ((ret = map_table(t->skel->maps.vcpu_thread_table, t->vcpu_thread_table_bytes, PROT_READ | PROT_WRITE,
			     "vCPU thread table", &p, err, errlen)))
		return ret;
	t->vcpu_thread_table = p;
	/* Writable: user space clears an entry's mark before it frees the entry. */
	if ((ret = map_table(t->skel->maps.vcpu_thread_used, whole_pages(sizeof(struct vcpu_thread_used)),
			     PROT_READ | PROT_WRITE, "vCPU thread marks", &p, err, errlen)))
		return ret;
	t->vcpu_thread_used = p;
	return 0;
}

/* ht_tracer_load with the kvm_exit program decided: SVM's raw one or not. */
static int load_tracer(struct ht_tracer **out, const struct ht_tracer_opts *opts, int isa, bool svm_raw, char *err,
		       size_t errlen)
{
	const struct ht_filters *f = &opts->filters;
	struct ht_tracer *t = NULL;
	unsigned long ring_bytes;
	unsigned int nrings;
	int cpus, ret;

	ht_libbpf_clear_last_warning();
	if ((ret = open_tracer(&t, err, errlen)))
		goto out;
	cpus = libbpf_num_possible_cpus();
	nrings = ht_rings_for(cpus > 0 ? (unsigned int)cpus : 1);
	ring_bytes = ht_ring_bytes_for(opts->ringbuf_bytes, nrings);
	t->vcpu_threads = !opts->exits	       ? 1 :
			  opts->vcpu_threads ? ht_vcpu_threads_round(opts->vcpu_threads) :
					       ht_vcpu_threads_for(cpus > 0 ? (unsigned int)cpus : 1);
	set_rodata(t->skel->rodata, opts, isa, nrings, ring_bytes, t->vcpu_threads);
	choose_exit_program(t, isa, f->exit_reason_on, svm_raw);
	choose_programs(t, opts);
	if ((ret = size_cpu_maps(t, opts, cpus, nrings, ring_bytes, err, errlen)) ||
	    (ret = load_programs(t, err, errlen)))
		goto out;
	/* -p PID: the one process traced from the start (--vm NAME adds its own later). */
	if (f->tgid_on && f->tgid && (ret = ht_tracer_trace_tgid(t, f->tgid, true))) {
		snprintf(err, errlen, "cannot set the VM process filter: %s", strerror(-ret));
		goto out;
	}
	if ((ret = ht_rings_install(t->skel->maps.rings, t->nrings, t->ring_fds))) {
		snprintf(err, errlen, "cannot install the ring buffers: %s", strerror(-ret));
		goto out;
	}
	if (opts->exits && (ret = map_exit_tables(t, err, errlen)))
		goto out;
	/*
	 * Threads that play vCPU threads with synthetic events are switched out
	 * and move between CPUs as real ones do: the sched programs that move
	 * their states with them (see cpu_states) run from the start.
	 */
	if (opts->synthetic && !opts->synthetic_switches_only && (ret = attach_programs(t, false, err, errlen)))
		goto out;
	*out = t;
	t = NULL;
out:
	ht_tracer_destroy(t);
	return ret;
}

unsigned int ht_tracer_vcpu_threads(const struct ht_tracer *t)
{
	return t->vcpu_threads;
}

int ht_tracer_load(struct ht_tracer **out, const struct ht_tracer_opts *opts, char *err, size_t errlen)
{
	int isa = opts->isa ? opts->isa : ht_host_isa();
	bool svm_raw = isa == HT_ISA_SVM && !opts->filters.exit_reason_on && !opts->classic_kvm_exit &&
		       ht_svm_raw_exit_loadable(opts->btf_dir ? opts->btf_dir : HT_SYSFS_BTF_DIR);
	char raw_err[256];
	int ret;

	ht_libbpf_set_verbose(opts->verbose);
	ret = load_tracer(out, opts, isa, svm_raw, err, errlen);
	if (!ret || !svm_raw)
		return ret;
	/*
	 * The raw program refused (a kvm_amd whose structs CO-RE cannot
	 * match, or a verifier that will not take it): the classic one does
	 * the same work from the event's record. Whatever else failed fails
	 * again, and its message is the classic load's.
	 */
	snprintf(raw_err, sizeof(raw_err), "%s", err);
	ret = load_tracer(out, opts, isa, false, err, errlen);
	if (!ret)
		snprintf((*out)->exit_fallback, sizeof((*out)->exit_fallback),
			 "SVM's raw kvm_exit program did not load, so the classic one is used (each exit costs the kernel an event record): %s",
			 raw_err);
	return ret;
}

const char *ht_tracer_exit_fallback(const struct ht_tracer *t)
{
	return t->exit_fallback[0] ? t->exit_fallback : NULL;
}

int ht_tracer_attach(struct ht_tracer *t, char *err, size_t errlen)
{
	return attach_programs(t, true, err, errlen);
}

void ht_tracer_detach(struct ht_tracer *t)
{
	/*
	 * The kvm programs first: while they run, every switch must still be
	 * seen (an armed or open exit's state moves with its thread).
	 */
	struct bpf_link **kvm_links[] = { t->exit_link, &t->skel->links.on_kvm_hypercall,
					  &t->skel->links.on_kvm_entry };
	for (size_t i = 0; i < ARRAY_SIZE(kvm_links); i++) {
		bpf_link__destroy(*kvm_links[i]);
		*kvm_links[i] = NULL;
	}
	hypertrace_bpf__detach(t->skel);
	/*
	 * A tracepoint program that started before the detach may still be
	 * running on another CPU. Tracepoint programs run inside an RCU read-side
	 * section, and MEMBARRIER_CMD_GLOBAL waits for an RCU grace period
	 * (synchronize_rcu), so after it every such record is submitted.
	 */
	if (syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0) != 0)
		usleep(50 * 1000); /* nohz_full kernels refuse it: a grace period is far shorter */
}

const int *ht_tracer_ring_fds(const struct ht_tracer *t, unsigned int *n)
{
	*n = t->nrings;
	return t->ring_fds;
}

int ht_tracer_synthetic_fd(const struct ht_tracer *t, enum ht_synthetic_prog which)
{
	switch (which) {
	case HT_SYNTH_KVM_EXIT:
		return bpf_program__fd(t->synthetic_exit_prog);
	case HT_SYNTH_KVM_HYPERCALL:
		return bpf_program__fd(t->skel->progs.synthetic_kvm_hypercall);
	case HT_SYNTH_KVM_ENTRY:
		return bpf_program__fd(t->skel->progs.synthetic_kvm_entry);
	case HT_SYNTH_FILL:
		return bpf_program__fd(t->skel->progs.synthetic_fill);
	case HT_SYNTH_KVM_EXIT_AT:
		return bpf_program__fd(t->skel->progs.synthetic_kvm_exit_at);
	case HT_SYNTH_KVM_ENTRY_AT:
		return bpf_program__fd(t->skel->progs.synthetic_kvm_entry_at);
	case HT_SYNTH_SCHED_SWITCH:
		return bpf_program__fd(t->skel->progs.synthetic_sched_switch);
	case HT_SYNTH_SCHED_WAKEUP:
		return bpf_program__fd(t->skel->progs.synthetic_sched_wakeup);
	case HT_SYNTH_VCPU_REGISTER:
		return bpf_program__fd(t->skel->progs.synthetic_vcpu_register);
	case HT_SYNTH_KVM_HALT:
		return bpf_program__fd(t->skel->progs.synthetic_kvm_halt);
	case HT_SYNTH_KVM_USERSPACE_EXIT_AT:
		return bpf_program__fd(t->skel->progs.synthetic_kvm_userspace_exit_at);
	case HT_SYNTH_KVM_PIO:
		return bpf_program__fd(t->skel->progs.synthetic_kvm_pio);
	case HT_SYNTH_KVM_MMIO:
		return bpf_program__fd(t->skel->progs.synthetic_kvm_mmio);
	case HT_SYNTH_KVM_MSR:
		return bpf_program__fd(t->skel->progs.synthetic_kvm_msr);
	case HT_SYNTH_KVM_CPUID:
		return bpf_program__fd(t->skel->progs.synthetic_kvm_cpuid);
	case HT_SYNTH_KVM_INJ_VIRQ:
		return bpf_program__fd(t->skel->progs.synthetic_kvm_inj_virq);
	case HT_SYNTH_KVM_APIC_ACCEPT_IRQ:
		return bpf_program__fd(t->skel->progs.synthetic_kvm_apic_accept_irq);
	case HT_SYNTH_TIMER_EXPIRES:
		return bpf_program__fd(t->skel->progs.synthetic_timer_expires);
	}
	return -EINVAL;
}

int ht_tracer_trace_tgid(struct ht_tracer *t, __u32 tgid, bool on)
{
	int fd = bpf_map__fd(t->skel->maps.traced_tgids);
	__u8 one = 1;

	if (!on)
		return bpf_map_delete_elem(fd, &tgid) && errno != ENOENT ? -errno : 0;
	return bpf_map_update_elem(fd, &tgid, &one, BPF_ANY) ? -errno : 0;
}

bool ht_tracer_tgid_traced(const struct ht_tracer *t, __u32 tgid)
{
	__u8 v;

	return bpf_map_lookup_elem(bpf_map__fd(t->skel->maps.traced_tgids), &tgid, &v) == 0;
}

int ht_tracer_vm_candidates(const struct ht_tracer *t, ht_tgid_fn fn, void *ctx)
{
	int fd = bpf_map__fd(t->skel->maps.vm_candidates);
	__u32 key, next;
	__u8 value, looked = 1;
	bool first = true;
	int n = 0;

	while (bpf_map_get_next_key(fd, first ? NULL : &key, &next) == 0) {
		first = false;
		key = next;
		if (bpf_map_lookup_elem(fd, &key, &value))
			continue; /* gone meanwhile (LRU, or forgotten) */
		if (value == 0) {
			bpf_map_update_elem(fd, &key, &looked, BPF_EXIST);
			n++;
		}
		fn(ctx, key, value == 0);
	}
	return n;
}

void ht_tracer_forget_candidate(const struct ht_tracer *t, __u32 tgid)
{
	bpf_map_delete_elem(bpf_map__fd(t->skel->maps.vm_candidates), &tgid);
}

int ht_tracer_forget_vm(const struct ht_tracer *t, __u32 tgid)
{
	int fd = bpf_map__fd(t->skel->maps.latency_hists);
	__u64 key, next, doomed[64];
	unsigned int n, total = 0;

	/* Collected first, then deleted: deleting while walking could skip keys. */
	do {
		bool first = true;

		n = 0;
		while (n < ARRAY_SIZE(doomed) && bpf_map_get_next_key(fd, first ? NULL : &key, &next) == 0) {
			first = false;
			key = next;
			if ((__u32)(key >> 32) == tgid)
				doomed[n++] = key;
		}
		for (unsigned int i = 0; i < n; i++)
			bpf_map_delete_elem(fd, &doomed[i]);
		total += n;
	} while (n == ARRAY_SIZE(doomed));
	return (int)total;
}

int ht_tracer_enable_stats(struct ht_tracer *t)
{
	/* Counting costs two clock reads per run; only while this fd is open (BPF_ENABLE_STATS). */
	t->stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
	return t->stats_fd < 0 ? -errno : 0;
}

int ht_tracer_prog_stats(const struct ht_tracer *t, struct ht_prog_stats out[HT_MAX_TRACEPOINT_PROGS])
{
	struct bpf_program *prog;
	int n = 0;

	bpf_object__for_each_program(prog, t->skel->obj) {
		const char *sec = bpf_program__section_name(prog), *name = strrchr(sec, '/');
		struct bpf_prog_info info;
		__u32 len = sizeof(info);

		/* The tracepoints' programs this configuration loaded (not the tests' syscall ones). */
		if (bpf_program__fd(prog) < 0 || !name || (strncmp(sec, "tp/", 3) && strncmp(sec, "tp_btf/", 7)))
			continue;
		if (n == HT_MAX_TRACEPOINT_PROGS)
			return -E2BIG;
		memset(&info, 0, sizeof(info));
		if (bpf_obj_get_info_by_fd(bpf_program__fd(prog), &info, &len))
			return -errno;
		out[n].tracepoint = name + 1;
		out[n].run_cnt = info.run_cnt;
		out[n].run_time_ns = info.run_time_ns;
		out[n].verified_insns = info.verified_insns;
		n++;
	}
	return n;
}

__u64 ht_tracer_armed_threads(const struct ht_tracer *t)
{
	__u64 armed = ht_tracer_parked_states(t);

	for (unsigned int cpu = 0; cpu < HT_MAX_CPUS; cpu++)
		if (__atomic_load_n(&t->skel->bss->cpu_states[cpu].phase, __ATOMIC_RELAXED) != PHASE_IDLE)
			armed++;
	return armed;
}

__u64 ht_tracer_parked_states(const struct ht_tracer *t)
{
	return __atomic_load_n(&t->skel->bss->armed_moved, __ATOMIC_RELAXED);
}

void ht_tracer_destroy(struct ht_tracer *t)
{
	if (!t)
		return;
	if (t->stats_fd >= 0)
		close(t->stats_fd);
	if (t->exit_cache)
		munmap(t->exit_cache, t->exit_cache_bytes);
	if (t->vcpu_thread_table)
		munmap(t->vcpu_thread_table, t->vcpu_thread_table_bytes);
	if (t->vcpu_thread_used)
		munmap(t->vcpu_thread_used, whole_pages(sizeof(struct vcpu_thread_used)));
	free(t->exit_parts);
	free(t->batch_keys);
	free(t->batch_values);
	for (unsigned int i = 0; i < t->nrings; i++)
		close(t->ring_fds[i]);
	hypertrace_bpf__destroy(t->skel);
	free(t);
}
