// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "record/tracer.h"
#include "common/cpu_vendor.h"
#include "record/preflight.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/membarrier.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "bpf/vcpu_state.h" /* before the skeleton, whose .bss holds the CPU slots */
#include "hypertrace.skel.h"
#include "common/grow.h"
#include "common/util.h"
#include "exits/exit_table.h"

struct ht_tracer {
	struct hypertrace_bpf *skel;
	/* The one kvm_exit program loaded (VMX, SVM or generic) and its synthetic twin. */
	struct bpf_program *exit_prog, *synthetic_exit_prog;
	struct bpf_link **exit_link;
	int stats_fd; /* holds BPF run-time statistics on while open; -1 if not asked */
	int ring_fds[HT_MAX_RINGS]; /* also held by the rings map */
	unsigned int nrings;        /* created and in the map */
	/* --exits: the CPUs' series tables, mapped (PROT_READ), and the sums of a read. */
	struct exit_cache_entry *exit_cache;
	size_t exit_cache_entries, exit_cache_bytes;
	struct vcpu_thread *vcpu_thread_table; /* --exits: the mapping of vcpu_thread_table */
	size_t vcpu_thread_table_bytes;
	struct exit_part *exit_parts; /* a read's parts: see ht_tracer_read_exits */
	size_t exit_parts_cap;
};

static bool libbpf_verbose;
static char libbpf_last_warning[256];

/* libbpf warnings that never name the cause of a failure. */
static bool warning_is_not_a_cause(const char *line)
{
	static const char *const noise[] = {
		"Failed to bump RLIMIT_MEMLOCK", /* a note: libbpf goes on without it */
		"failed to load object",       /* wraps the cause */
		"failed to load BPF skeleton", /* wraps the cause */
		"-- BEGIN", "-- END",          /* verifier log delimiters (-v shows the log) */
	};

	for (size_t i = 0; i < ARRAY_SIZE(noise); i++)
		if (strstr(line, noise[i]))
			return true;
	return false;
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	/*
	 * Keep the first libbpf warning that names a cause (a verifier rejection,
	 * a missing kernel feature, EPERM) for the one-line error message.
	 */
	if (level == LIBBPF_WARN && !libbpf_last_warning[0] && strncmp(fmt, "libbpf: ", 8) == 0) {
		char line[sizeof(libbpf_last_warning)];
		va_list copy;
		size_t len;

		va_copy(copy, ap);
		vsnprintf(line, sizeof(line), fmt, copy);
		va_end(copy);
		len = strcspn(line, "\n");
		line[len] = '\0';
		if (len && !warning_is_not_a_cause(line))
			memcpy(libbpf_last_warning, line, len + 1);
	}
	if (libbpf_verbose)
		return vfprintf(stderr, fmt, ap);
	return 0;
}

void ht_libbpf_set_verbose(bool verbose)
{
	libbpf_verbose = verbose;
	libbpf_set_print(libbpf_print);
}

const char *ht_libbpf_last_warning(void)
{
	return libbpf_last_warning[0] ? libbpf_last_warning : "no reason given by libbpf";
}

/*
 * The verifier's log of each program to load. libbpf asks the kernel for a
 * log only when a load fails (it retries at log level 1), so after a failed
 * load the one non-empty buffer names the program and holds the verifier's
 * reason, without depending on how libbpf words its own messages.
 */
#define HT_VERIFIER_LOG_SIZE (512u << 10)

int ht_verifier_logs_attach(struct ht_verifier_logs *logs, struct bpf_object *obj)
{
	struct bpf_program *prog;
	unsigned int n = 0;

	memset(logs, 0, sizeof(*logs));
	bpf_object__for_each_program(prog, obj)
		n += bpf_program__autoload(prog);
	logs->log = calloc(n ? n : 1, sizeof(*logs->log));
	if (!logs->log)
		return -ENOMEM;
	bpf_object__for_each_program(prog, obj) {
		if (!bpf_program__autoload(prog))
			continue;
		char *buf = calloc(1, HT_VERIFIER_LOG_SIZE);
		if (!buf)
			return -ENOMEM;
		logs->log[logs->n].prog = prog;
		logs->log[logs->n++].buf = buf;
		bpf_program__set_log_buf(prog, buf, HT_VERIFIER_LOG_SIZE);
	}
	return 0;
}

bool ht_verifier_log_reason(const char *log, char *out, size_t outlen)
{
	const char *line = NULL, *p = log;

	while (*p) {
		const char *end = strchrnul(p, '\n');
		if (end > p && strncmp(p, "processed ", 10) && strncmp(p, "verification time", 17) &&
		    strncmp(p, "stack depth", 11))
			line = p;
		p = *end ? end + 1 : end;
	}
	if (!line)
		return false;
	snprintf(out, outlen, "%.*s", (int)(strchrnul(line, '\n') - line), line);
	return true;
}

/* "program NAME: REASON" from the one program whose load failed. */
static bool verifier_logs_reason(const struct ht_verifier_logs *logs, char *out, size_t outlen)
{
	char reason[200];

	for (unsigned int i = 0; i < logs->n; i++) {
		if (ht_verifier_log_reason(logs->log[i].buf, reason, sizeof(reason))) {
			snprintf(out, outlen, "program %s: %s", bpf_program__name(logs->log[i].prog), reason);
			return true;
		}
	}
	return false;
}

void ht_verifier_logs_free(struct ht_verifier_logs *logs)
{
	for (unsigned int i = 0; i < logs->n; i++) {
		bpf_program__set_log_buf(logs->log[i].prog, NULL, 0);
		free(logs->log[i].buf);
	}
	free(logs->log);
	logs->log = NULL;
	logs->n = 0;
}

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

int ht_tracer_load(struct ht_tracer **out, const struct ht_tracer_opts *opts, char *err,
		   size_t errlen)
{
	const struct ht_filters *f = &opts->filters;
	struct ht_tracer *t = NULL;
	struct ht_verifier_logs logs = { .n = 0 };
	struct hypertrace_bpf__rodata *ro;
	struct hypertrace_bpf *sk;
	unsigned long ring_bytes, wakeup_bytes;
	unsigned int nrings;
	int isa, cpus, ret;

	ht_libbpf_set_verbose(opts->verbose);
	libbpf_last_warning[0] = '\0';
	t = calloc(1, sizeof(*t));
	if (!t) {
		snprintf(err, errlen, "out of memory");
		ret = -ENOMEM;
		goto out;
	}
	t->stats_fd = -1;
	t->skel = hypertrace_bpf__open();
	if (!t->skel) {
		ret = -errno;
		snprintf(err, errlen, "cannot open the BPF object: %s (%s)", strerror(-ret),
			 ht_libbpf_last_warning());
		goto out;
	}
	ro = t->skel->rodata;
	for (unsigned int i = 0; i < HT_MAX_SELECTED_NR; i++)
		ro->filter_nr[i] = i < f->nr_count ? f->nr[i] : 0;
	ro->filter_nr_count = f->nr_count;
	ro->filter_exit_reason_on = f->exit_reason_on;
	ro->filter_exit_reason = f->exit_reason;
	isa = opts->isa ? opts->isa : ht_host_isa();
	sk = t->skel;
	ro->prefilter_mask = isa == HT_ISA_VMX ? HT_VMX_EXIT_REASON_MASK : HT_SVM_EXIT_CODE_MASK;
	ro->prefilter_value = f->exit_reason_on ? f->exit_reason :
			      isa == HT_ISA_VMX ? HT_VMX_EXIT_REASON_VMCALL : HT_SVM_EXIT_CODE_VMMCALL;
	if (f->exit_reason_on) {
		t->exit_prog = sk->progs.on_kvm_exit;
		t->synthetic_exit_prog = sk->progs.synthetic_kvm_exit;
		t->exit_link = &sk->links.on_kvm_exit;
	} else if (isa == HT_ISA_VMX) {
		t->exit_prog = sk->progs.on_kvm_exit_vmx;
		t->synthetic_exit_prog = sk->progs.synthetic_kvm_exit_vmx;
		t->exit_link = &sk->links.on_kvm_exit_vmx;
	} else {
		t->exit_prog = sk->progs.on_kvm_exit_svm;
		t->synthetic_exit_prog = sk->progs.synthetic_kvm_exit_svm;
		t->exit_link = &sk->links.on_kvm_exit_svm;
	}
	{
		struct bpf_program *exit_progs[] = { sk->progs.on_kvm_exit, sk->progs.on_kvm_exit_vmx,
						     sk->progs.on_kvm_exit_svm };
		for (size_t i = 0; i < ARRAY_SIZE(exit_progs); i++)
			bpf_program__set_autoload(exit_progs[i], exit_progs[i] == t->exit_prog);
	}
	ro->filter_tgid_on = f->tgid_on;
	ro->filter_vcpu_on = f->vcpu_on;
	ro->filter_vcpu = f->vcpu;
	cpus = libbpf_num_possible_cpus();
	nrings = ht_rings_for(cpus > 0 ? (unsigned int)cpus : 1);
	ring_bytes = ht_ring_bytes_for(opts->ringbuf_bytes, nrings);
	wakeup_bytes = opts->wakeup_bytes;
	if (wakeup_bytes > ht_wakeup_bytes_for(ring_bytes))
		wakeup_bytes = ht_wakeup_bytes_for(ring_bytes);
	ro->wakeup_shift = ht_wakeup_shift_for(wakeup_bytes);
	ro->ring_mask = nrings - 1;
	ro->aggregate_only = opts->aggregate_only;
	ro->aggregate_group_by = opts->group_by;
	ro->aggregate_by_nr = opts->aggregate_by_nr;
	ro->exits_on = opts->exits;
	ro->vcpu_sched_on = opts->exits && opts->vcpu_sched;
	bpf_program__set_autoload(sk->progs.on_sched_wakeup, opts->exits);
	bpf_program__set_autoload(sk->progs.on_kvm_userspace_exit, opts->exits);
	{
		/* The causes of exits: their tracepoints only with --exits. */
		struct bpf_program *causes[] = { sk->progs.on_kvm_pio, sk->progs.on_kvm_mmio, sk->progs.on_kvm_msr,
						 sk->progs.on_kvm_cpuid, sk->progs.synthetic_kvm_pio,
						 sk->progs.synthetic_kvm_mmio, sk->progs.synthetic_kvm_msr,
						 sk->progs.synthetic_kvm_cpuid };
		for (size_t i = 0; i < ARRAY_SIZE(causes); i++)
			bpf_program__set_autoload(causes[i], opts->exits && (i < 4 || opts->synthetic));
	}

	/* Each CPU's table of exit series; one entry if --exits is off (the map must exist). */
	t->exit_cache_entries = opts->exits ? (size_t)(cpus > 0 ? cpus : 1) * HT_EXIT_CACHE_WAYS : 1;
	bpf_map__set_max_entries(sk->maps.exit_cache, (__u32)t->exit_cache_entries);

	if (cpus > HT_MAX_CPUS) {
		snprintf(err, errlen, "this host has %d possible CPUs; hypertrace-bpf keeps a state slot for at most %d",
			 cpus, HT_MAX_CPUS);
		ret = -E2BIG;
		goto out;
	}
	ret = ht_rings_prepare(sk->maps.rings, nrings, ring_bytes, t->ring_fds);
	if (ret) {
		snprintf(err, errlen, "cannot create the ring buffers (%u of %lu bytes): %s: try a smaller --ringbuf-size",
			 nrings, ring_bytes, strerror(-ret));
		goto out;
	}
	t->nrings = nrings;
	/* Production loads only the tracepoint programs; tests and benchmarks add the synthetic ones. */
	{
		struct bpf_program *synthetic_exits[] = { sk->progs.synthetic_kvm_exit, sk->progs.synthetic_kvm_exit_vmx,
							  sk->progs.synthetic_kvm_exit_svm };
		for (size_t i = 0; i < ARRAY_SIZE(synthetic_exits); i++)
			bpf_program__set_autoload(synthetic_exits[i],
						  opts->synthetic && synthetic_exits[i] == t->synthetic_exit_prog);
	}
	bpf_program__set_autoload(t->skel->progs.synthetic_kvm_hypercall, opts->synthetic);
	bpf_program__set_autoload(t->skel->progs.synthetic_kvm_entry, opts->synthetic);
	bpf_program__set_autoload(t->skel->progs.synthetic_fill, opts->synthetic);
	{
		struct bpf_program *synthetic_timed[] = { sk->progs.synthetic_kvm_exit_at, sk->progs.synthetic_kvm_entry_at,
							  sk->progs.synthetic_sched_switch, sk->progs.synthetic_sched_wakeup,
							  sk->progs.synthetic_vcpu_register,
							  sk->progs.synthetic_kvm_userspace_exit_at };
		for (size_t i = 0; i < ARRAY_SIZE(synthetic_timed); i++)
			bpf_program__set_autoload(synthetic_timed[i], opts->synthetic);
	}

	ret = ht_verifier_logs_attach(&logs, t->skel->obj);
	if (!ret)
		ret = hypertrace_bpf__load(t->skel);
	if (ret) {
		char reason[256];

		if (!verifier_logs_reason(&logs, reason, sizeof(reason)))
			snprintf(reason, sizeof(reason), "%s", ht_libbpf_last_warning());
		snprintf(err, errlen, "cannot load the BPF programs: %s (%s): rerun with -v to see the libbpf and verifier log",
			 strerror(-ret), reason);
		goto out;
	}
	/* -p PID: the one process traced from the start (--vm NAME adds its own later). */
	if (f->tgid_on && f->tgid && (ret = ht_tracer_trace_tgid(t, f->tgid, true))) {
		snprintf(err, errlen, "cannot set the VM process filter: %s", strerror(-ret));
		goto out;
	}
	ret = ht_rings_install(sk->maps.rings, t->nrings, t->ring_fds);
	if (ret) {
		snprintf(err, errlen, "cannot install the ring buffers: %s", strerror(-ret));
		goto out;
	}
	if (opts->exits) {
		long page = sysconf(_SC_PAGESIZE);
		size_t bytes = t->exit_cache_entries * sizeof(struct exit_cache_entry);

		bytes = (bytes + (size_t)page - 1) / (size_t)page * (size_t)page;
		void *p = mmap(NULL, bytes, PROT_READ, MAP_SHARED, bpf_map__fd(sk->maps.exit_cache), 0);
		if (p == MAP_FAILED) {
			ret = -errno;
			snprintf(err, errlen, "cannot map the exit tables: %s", strerror(-ret));
			goto out;
		}
		t->exit_cache = p;
		t->exit_cache_bytes = bytes;
		bytes = (sizeof(struct vcpu_thread) * HT_MAX_VCPU_THREADS + (size_t)page - 1) / (size_t)page *
			(size_t)page;
		/* Writable: user space frees the entry of a thread that ended once it has read it. */
		p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, bpf_map__fd(sk->maps.vcpu_thread_table), 0);
		if (p == MAP_FAILED) {
			ret = -errno;
			snprintf(err, errlen, "cannot map the vCPU thread table: %s", strerror(-ret));
			goto out;
		}
		t->vcpu_thread_table = p;
		t->vcpu_thread_table_bytes = bytes;
	}
	/*
	 * Threads that play vCPU threads with synthetic events are switched out
	 * and move between CPUs as real ones do: the sched programs that move
	 * their states with them (see cpu_states) run from the start.
	 */
	if (opts->synthetic && !opts->synthetic_switches_only && (ret = attach_programs(t, false, err, errlen))) {
		goto out;
	}
	*out = t;
	t = NULL;
out:
	ht_verifier_logs_free(&logs); /* before the skeleton its programs belong to */
	ht_tracer_destroy(t);
	return ret;
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
	}
	return -EINVAL;
}

int ht_tracer_counters(const struct ht_tracer *t, __u64 out[HT_CNT_MAX])
{
	int ncpus = libbpf_num_possible_cpus();
	int fd = bpf_map__fd(t->skel->maps.counters);
	__u64 *vals;

	if (ncpus <= 0)
		return -EINVAL;
	vals = calloc((size_t)ncpus, sizeof(*vals));
	if (!vals)
		return -ENOMEM;
	for (__u32 k = 0; k < HT_CNT_MAX; k++) {
		out[k] = 0;
		if (bpf_map_lookup_elem(fd, &k, vals)) {
			int ret = -errno;
			free(vals);
			return ret;
		}
		for (int c = 0; c < ncpus; c++)
			out[k] += vals[c];
	}
	free(vals);
	return 0;
}

int ht_tracer_read_aggregates(const struct ht_tracer *t, ht_agg_fn fn, void *ctx)
{
	int ncpus = libbpf_num_possible_cpus();
	int fd = bpf_map__fd(t->skel->maps.latency_hists);
	struct ht_agg_hist *percpu, sum;
	__u64 key, next;
	int ret = 0;
	bool first = true;

	if (ncpus <= 0)
		return -EINVAL;
	percpu = calloc((size_t)ncpus, sizeof(*percpu));
	if (!percpu)
		return -ENOMEM;
	while (!ret) {
		if (bpf_map_get_next_key(fd, first ? NULL : &key, &next)) {
			ret = errno == ENOENT ? 0 : -errno; /* ENOENT: the last group was read */
			break;
		}
		first = false;
		key = next;
		if (bpf_map_lookup_elem(fd, &key, percpu)) {
			/* Groups are never deleted; a racing lookup miss is harmless. */
			ret = errno == ENOENT ? 0 : -errno;
			continue;
		}
		memset(&sum, 0, sizeof(sum));
		for (int c = 0; c < ncpus; c++)
			for (int s = 0; s < HT_AGG_NSERIES; s++)
				for (int i = 0; i < HT_AGG_SLOTS; i++)
					sum.slots[s][i] += percpu[c].slots[s][i];
		fn(ctx, key, &sum);
	}
	free(percpu);
	return ret;
}

/* Series of exit_hists read per system call. */
#define EXIT_READ_BATCH 256

/* The parts of a read, one per (series, CPU), kept for the next read. */
struct exit_part {
	struct ht_exit_key key;
	struct ht_exit_hist h;
};

static int add_exit_part(struct exit_part **parts, size_t *n, size_t *cap, const struct ht_exit_key *key,
			 const struct ht_exit_hist *h)
{
	if (!h->count)
		return 0;
	if (HT_GROW(*parts, *cap, *n + 1, 256))
		return -ENOMEM;
	(*parts)[*n].key = *key;
	(*parts)[*n].h = *h;
	(*n)++;
	return 0;
}

static int cmp_parts(const void *a, const void *b)
{
	return ht_exit_key_cmp(&((const struct exit_part *)a)->key, &((const struct exit_part *)b)->key);
}

int ht_tracer_read_exits(struct ht_tracer *t, ht_exit_fn fn, void *ctx)
{
	int ncpus = libbpf_num_possible_cpus();
	int fd = bpf_map__fd(t->skel->maps.exit_hists);
	struct ht_exit_hist *percpu;
	struct ht_exit_key *keys;
	size_t n = 0;
	bool first = true;
	int ret = 0;

	if (ncpus <= 0)
		return -EINVAL;
	percpu = calloc((size_t)ncpus * EXIT_READ_BATCH, sizeof(*percpu));
	keys = calloc(EXIT_READ_BATCH, sizeof(*keys));
	if (!percpu || !keys) {
		free(percpu);
		free(keys);
		return -ENOMEM;
	}
	/* Each CPU's table; an entry another CPU is taking right now is read once its key is whole. */
	for (size_t i = 0; t->exit_cache && i < t->exit_cache_entries && !ret; i++) {
		const struct exit_cache_entry *e = &t->exit_cache[i];

		if (!__atomic_load_n(&e->used, __ATOMIC_ACQUIRE))
			continue;
		struct ht_exit_key k = e->key;
		struct ht_exit_hist h = e->h;
		ret = add_exit_part(&t->exit_parts, &n, &t->exit_parts_cap, &k, &h);
	}
	/* The series that found no entry in their CPU's table: a batch of them per system call. */
	__u32 batch = 0, count = EXIT_READ_BATCH;
	bool more = !ret;
	while (more && !ret) {
		count = EXIT_READ_BATCH;
		int err = bpf_map_lookup_batch(fd, first ? NULL : &batch, &batch, keys, percpu, &count, NULL);
		if (err && errno != ENOENT) {
			ret = -errno;
			break;
		}
		more = !err;
		first = false;
		for (__u32 k = 0; k < count && !ret; k++)
			for (int c = 0; c < ncpus && !ret; c++)
				ret = add_exit_part(&t->exit_parts, &n, &t->exit_parts_cap, &keys[k],
						    &percpu[(size_t)k * (size_t)ncpus + (size_t)c]);
	}
	free(percpu);
	free(keys);
	if (ret)
		return ret;
	/* Sorted by series, the parts of one series next to each other: summed in one pass. */
	if (n)
		qsort(t->exit_parts, n, sizeof(*t->exit_parts), cmp_parts);
	for (size_t i = 0; i < n;) {
		struct ht_exit_series sum = { .key = t->exit_parts[i].key, .minmax_exact = true };

		for (; i < n && !cmp_parts(&t->exit_parts[i], &sum); i++) {
			struct ht_exit_series part = { .key = sum.key, .minmax_exact = true, .h = t->exit_parts[i].h };
			ht_exit_series_add(&sum, &part);
		}
		fn(ctx, &sum.key, &sum.h);
	}
	return 0;
}

/*
 * A whole copy of a vcpu_thread_table entry, read while BPF programs may
 * write it (see vcpu_thread in vcpu_state.h): its states add up to its time
 * minus its start in a copy taken between two writes, and not in one taken
 * half-way, which is copied again. false if the entry is no thread's. A
 * write lasts a few instructions, so a second copy finds it done; the bound
 * only keeps a broken writer from hanging the reader.
 */
static bool copy_vcpu_thread(const struct vcpu_thread *e, struct vcpu_thread *out)
{
	for (int tries = 0; tries < 1000000; tries++) {
		__u64 sum = 0;

		if (__atomic_load_n(&e->in_use, __ATOMIC_ACQUIRE) != VCPU_ENTRY_READY)
			return false;
		memcpy(out, e, sizeof(*out));
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		for (int k = 0; k < HT_VCPU_NSTATES; k++)
			sum += out->state_ns[k];
		if (sum == vcpu_thread_time(out->since_state) - out->start_ns)
			return __atomic_load_n(&e->in_use, __ATOMIC_RELAXED) == VCPU_ENTRY_READY;
	}
	return false;
}

/* An exit open in a CPU's slot: the thread's guest state ended at exit_ns (see guest_until_exit). */
struct open_exit {
	__u32 tid;
	__u64 exit_ns;
};

static int cmp_open_exit(const void *a, const void *b)
{
	const struct open_exit *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return (x->exit_ns > y->exit_ns) - (x->exit_ns < y->exit_ns);
}

/* The open exits of every CPU's slot now, sorted by thread; their number. */
static size_t snapshot_open_exits(const struct ht_tracer *t, struct open_exit *out)
{
	int ncpus = libbpf_num_possible_cpus();
	size_t n = 0;

	for (int cpu = 0; cpu < ncpus && cpu < HT_MAX_CPUS; cpu++) {
		const struct vcpu_state *slot = &t->skel->bss->cpu_states[cpu];

		/* BPF writes exit_ns before it sets exit_open (exit_begin). */
		if (!__atomic_load_n(&slot->exit_open, __ATOMIC_ACQUIRE))
			continue;
		out[n].exit_ns = __atomic_load_n(&slot->exit_ns, __ATOMIC_RELAXED);
		out[n].tid = (__u32)__atomic_load_n(&slot->owner, __ATOMIC_RELAXED);
		n++;
	}
	qsort(out, n, sizeof(*out), cmp_open_exit);
	return n;
}

/* The open exit of tid in a snapshot, or NULL. */
static const struct open_exit *open_exit_of(const struct open_exit *v, size_t n, __u32 tid)
{
	struct open_exit key = { .tid = tid };
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid].tid < tid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && v[lo].tid == key.tid ? &v[lo] : NULL;
}

/* A thread as one read sees it, before it is handed on. */
struct thread_read {
	struct ht_vcpu_wait w;
	struct ht_vcpu_account a;
	bool gone;
	size_t idx;
};

/*
 * One read of every thread's account up to now: the state current in a copy
 * runs up to now (or up to its start, if later); a running thread whose
 * guest state an open exit ended (the BPF side writes that at the exit's end:
 * guest_until_exit) is in guest until the exit and in kvm from there. Its
 * threads into out; their number.
 */
static size_t read_accounts(const struct ht_tracer *t, __u64 now, const struct open_exit *open, size_t nopen,
			    struct thread_read *out)
{
	struct vcpu_thread v;
	size_t n = 0;

	for (size_t i = 0; i < HT_MAX_VCPU_THREADS; i++) {
		if (!copy_vcpu_thread(&t->vcpu_thread_table[i], &v))
			continue;
		__u64 since = vcpu_thread_time(v.since_state);
		__u32 state = v.since_state & VCPU_STATE_MASK;
		struct thread_read *r = &out[n++];
		const struct open_exit *e;

		memset(r, 0, sizeof(*r));
		r->w = v.stat;
		r->idx = i;
		r->gone = v.since_state & VCPU_GONE;
		r->a.start_ns = v.start_ns;
		r->a.as_of_ns = since;
		for (int k = 0; k < HT_VCPU_NSTATES; k++)
			r->a.state_ns[k] = v.state_ns[k];
		if (r->gone || state >= HT_VCPU_NSTATES || now <= since)
			goto done;
		if (state == HT_VCPU_GUEST && (e = open_exit_of(open, nopen, v.stat.tid)) && e->exit_ns >= since &&
		    e->exit_ns < now) {
			r->a.state_ns[HT_VCPU_GUEST] += e->exit_ns - since;
			r->a.state_ns[HT_VCPU_KVM] += now - e->exit_ns;
		} else {
			r->a.state_ns[state] += now - since;
		}
		r->a.as_of_ns = now;
done:
		r->w.wait_ns = r->a.state_ns[HT_VCPU_WAIT];
	}
	return n;
}

/* An exit opened before now that the first snapshot did not see open: the read may have missed a split. */
static bool missed_an_exit(const struct open_exit *before, size_t nbefore, const struct open_exit *after, size_t nafter,
			   __u64 now)
{
	for (size_t i = 0; i < nafter; i++) {
		const struct open_exit *b = open_exit_of(before, nbefore, after[i].tid);

		if (after[i].exit_ns < now && (!b || b->exit_ns != after[i].exit_ns))
			return true;
	}
	return false;
}

int ht_tracer_read_exit_causes(const struct ht_tracer *t, ht_exit_cause_fn fn, void *ctx)
{
	int ncpus = libbpf_num_possible_cpus();
	int fd = bpf_map__fd(t->skel->maps.exit_causes);
	struct ht_exit_cause_key *keys = NULL;
	struct ht_exit_cause_hist *percpu = NULL;
	__u32 batch = 0, count;
	bool first = true, more = true;
	int ret = 0;

	if (ncpus <= 0)
		return -EINVAL;
	percpu = calloc((size_t)ncpus * EXIT_READ_BATCH, sizeof(*percpu));
	keys = calloc(EXIT_READ_BATCH, sizeof(*keys));
	if (!percpu || !keys) {
		ret = -ENOMEM;
		goto out;
	}
	/* Causes are never deleted while the tracer lives: a batch walk sees each once. */
	while (more) {
		count = EXIT_READ_BATCH;
		int err = bpf_map_lookup_batch(fd, first ? NULL : &batch, &batch, keys, percpu, &count, NULL);
		if (err && errno != ENOENT) {
			ret = -errno;
			goto out;
		}
		more = !err;
		first = false;
		for (__u32 k = 0; k < count; k++) {
			struct ht_exit_cause_hist sum = { 0 };

			for (int c = 0; c < ncpus; c++) {
				const struct ht_exit_cause_hist *h = &percpu[(size_t)k * (size_t)ncpus + (size_t)c];

				sum.count += h->count;
				sum.kvm_ns = ht_sat_add(sum.kvm_ns, h->kvm_ns);
				sum.vmm_count += h->vmm_count;
				sum.vmm_ns = ht_sat_add(sum.vmm_ns, h->vmm_ns);
				for (int s = 0; s < HT_EXIT_SLOTS; s++) {
					sum.kvm_slots[s] += h->kvm_slots[s];
					sum.vmm_slots[s] += h->vmm_slots[s];
				}
			}
			if (sum.count)
				fn(ctx, &keys[k], &sum);
		}
	}
out:
	free(percpu);
	free(keys);
	return ret;
}

int ht_tracer_read_vcpu_waits(const struct ht_tracer *t, ht_vcpu_wait_fn fn, void *ctx)
{
	struct open_exit before[HT_MAX_CPUS], after[HT_MAX_CPUS];
	struct thread_read *reads;
	size_t n = 0;

	if (!t->vcpu_thread_table)
		return 0;
	reads = calloc(HT_MAX_VCPU_THREADS, sizeof(*reads));
	if (!reads)
		return -ENOMEM;
	/*
	 * The time of the read is taken before anything is copied: a state
	 * current in a copy began before the copy and lasted at least until
	 * it, so crediting it up to max(now, its start) never credits time a
	 * later read takes back (each state's time only grows). The open exits
	 * are read before the threads and again after: one that opened before
	 * now and was not seen the first time is read again (a few
	 * nanoseconds' window of a write not yet seen; tries are bounded).
	 */
	for (int tries = 0; tries < 100; tries++) {
		__u64 now = ht_monotonic_ns();
		size_t nbefore = snapshot_open_exits(t, before);

		n = read_accounts(t, now, before, nbefore, reads);
		if (!missed_an_exit(before, nbefore, after, snapshot_open_exits(t, after), now))
			break;
	}
	for (size_t i = 0; i < n; i++) {
		fn(ctx, &reads[i].w, &reads[i].a, reads[i].gone);
		/* Read once with its last numbers: its entry is free for another thread. */
		if (reads[i].gone)
			__atomic_store_n(&t->vcpu_thread_table[reads[i].idx].in_use, VCPU_ENTRY_FREE, __ATOMIC_RELEASE);
	}
	free(reads);
	return 0;
}

int ht_tracer_read_open_exits(const struct ht_tracer *t, ht_open_exit_fn fn, void *ctx)
{
	struct vcpu_thread v;

	for (unsigned int cpu = 0; cpu < HT_MAX_CPUS; cpu++) {
		const struct vcpu_state *slot = &t->skel->bss->cpu_states[cpu];

		if (!slot->exit_open)
			continue;
		struct ht_exit_key k = { .pid = (__u32)(slot->owner >> 32), .vcpu = slot->exit_vcpu,
					 .isa = slot->exit_isa, .reason = slot->exit_reason };
		fn(ctx, &k);
	}
	for (size_t i = 0; t->vcpu_thread_table && i < HT_MAX_VCPU_THREADS; i++) {
		if (!copy_vcpu_thread(&t->vcpu_thread_table[i], &v) || !v.exit_open || (v.since_state & VCPU_GONE))
			continue;
		struct ht_exit_key k = { .pid = v.stat.pid, .vcpu = v.stat.vcpu, .isa = v.exit_isa,
					 .reason = v.exit_reason };
		fn(ctx, &k);
	}
	return 0;
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

int ht_tracer_prog_stats(const struct ht_tracer *t, struct ht_prog_stats out[HT_HYPERCALL_TRACEPOINTS])
{
	struct bpf_program *progs[HT_HYPERCALL_TRACEPOINTS] = { t->exit_prog, t->skel->progs.on_kvm_hypercall,
								t->skel->progs.on_kvm_entry };
	static const char *const names[HT_HYPERCALL_TRACEPOINTS] = { "kvm_exit", "kvm_hypercall", "kvm_entry" };

	for (int i = 0; i < HT_HYPERCALL_TRACEPOINTS; i++) {
		struct bpf_prog_info info;
		__u32 len = sizeof(info);

		memset(&info, 0, sizeof(info));
		if (bpf_obj_get_info_by_fd(bpf_program__fd(progs[i]), &info, &len))
			return -errno;
		out[i].tracepoint = names[i];
		out[i].run_cnt = info.run_cnt;
		out[i].run_time_ns = info.run_time_ns;
	}
	return 0;
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
	free(t->exit_parts);
	for (unsigned int i = 0; i < t->nrings; i++)
		close(t->ring_fds[i]);
	hypertrace_bpf__destroy(t->skel);
	free(t);
}
