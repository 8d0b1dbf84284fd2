// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Every distinct BPF configuration `record` can produce is loaded on the
 * running kernel, and each distinct set of its programs attached, through the
 * loader `record` uses (ht_tracer_load and ht_tracer_attach). The verifier sees the rodata filters as constants and
 * prunes what they turn off, so each combination is a different program to
 * verify: the kvm_exit program (VMX, SVM as record chooses it, the raw one
 * where the kvm_amd module's BTF is, SVM's classic one, or generic for
 * --exit-reason with either ISA's pre-filter), records or aggregate-only (--no-file) with each
 * grouping (and per nr, for --metrics), the wake-up policy, each of these
 * without and with --exits, records with --vcpu-sched --wakeups and with
 * --boot (alone and with --vcpu-sched --wakeups), and the filters (--nr list, -p, --vcpu): none
 * and all of them everywhere, each alone in both kinds of output.
 *
 * What tells the kvm_exit programs apart (the ISA, the program, the
 * --exit-reason constants) is read by the kvm_exit programs alone: the
 * other programs of a mode and filter set are the same programs with the
 * same constants whichever kvm_exit program is chosen. So they are
 * verified with the VMX row, and the other rows load their kvm_exit
 * program alone (exit_program_only): the matrix took ~190 s in the nested
 * machine with every program of every row. Two checks keep that true: the
 * constants of each such configuration equal its VMX twin's but for the
 * kvm_exit programs' own, and the_kvm_exit_choice_leaves_the_other_programs_alone
 * finds every other program verified to the same code with the other
 * kvm_exit constants.
 *
 * One test per kvm_exit program and mode; a failure names the configuration
 * and the verifier's reason. Needs root and the kvm tracepoints. Also built
 * statically and run inside the nested machine (Debian's kernel, kvm as a
 * module), where it proves the configurations on that kernel too.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>
#include <sys/utsname.h>
#include <bpf/bpf.h>
#include "record/preflight.h"
#include "test.h"
#include <bpf/btf.h>
#include "common/util.h"
#include "record/attach_targets.h"
#include "record/tracer.h"
#include "record/tracer_private.h"

enum exit_prog { PROG_VMX, PROG_SVM, PROG_SVM_CLASSIC, PROG_GENERIC_VMX, PROG_GENERIC_SVM };
static const char *const exit_prog_names[] = { "vmx", "svm", "svm_classic", "generic_vmx", "generic_svm" };

/*
 * The modes: records (and with the kernel's wake-up policy), --no-file with
 * each grouping, --no-file --metrics; each without and with --exits, which
 * adds its code to the kvm_exit, kvm_entry and sched_switch programs (and
 * the sched_wakeup program, and the programs of the exits' causes on
 * kvm_pio, kvm_mmio, kvm_msr and kvm_cpuid) whatever else is on.
 */
enum mode { MODE_RECORDS, MODE_RECORDS_KERNEL_WAKEUP, MODE_AGG, MODE_AGG_PER_VCPU, MODE_AGG_PER_VM,
	    MODE_AGG_METRICS, MODE_RECORDS_EXITS, MODE_RECORDS_KERNEL_WAKEUP_EXITS, MODE_AGG_EXITS,
	    MODE_AGG_PER_VCPU_EXITS, MODE_AGG_PER_VM_EXITS, MODE_AGG_METRICS_EXITS, MODE_RECORDS_VCPU_SCHED,
	    MODE_RECORDS_KERNEL_WAKEUP_VCPU_SCHED, MODE_RECORDS_BOOT, MODE_RECORDS_VCPU_SCHED_BOOT };
static const char *const mode_names[] = { "records", "records_kernel_wakeup", "no_file", "no_file_per_vcpu",
					  "no_file_per_vm", "no_file_metrics", "records_exits",
					  "records_kernel_wakeup_exits", "no_file_exits", "no_file_per_vcpu_exits",
					  "no_file_per_vm_exits", "no_file_metrics_exits", "records_vcpu_sched_wakeups",
					  "records_kernel_wakeup_vcpu_sched_wakeups", "records_boot",
					  "records_vcpu_sched_wakeups_boot" };
#define MODE_FIRST_EXITS MODE_RECORDS_EXITS
/*
 * --vcpu-sched (records only; it implies --exits) adds the switch records to
 * the sched_switch program; --wakeups, on in the same modes, the wake-up
 * records to kvm_entry's vcpu_wake_ended (a global function, verified alone
 * with the filters and the ring's wake-up policy, whatever else is on).
 */
#define MODE_FIRST_VCPU_SCHED MODE_RECORDS_VCPU_SCHED
/* --boot (records only; it implies --exits) adds the boot records to the kvm_entry, kvm_exit and thread-exit programs. */
#define MODE_FIRST_BOOT MODE_RECORDS_BOOT
_Static_assert(MODE_AGG_METRICS_EXITS - MODE_FIRST_EXITS == MODE_AGG_METRICS, "each mode has its --exits twin");

enum filter_set { FILTERS_NONE, FILTER_NR_LIST, FILTER_PID, FILTER_VCPU, FILTERS_ALL, FILTER_SETS };
static const char *const filter_names[] = { "no filter", "--nr x8", "-p/--vm (traced_tgids)", "--vcpu", "all filters" };

static bool kvm_ready;
static unsigned int loads, attaches;

/* The constants each configuration of the VMX row loaded with, by mode and filter set. */
static struct hypertrace_bpf__rodata vmx_rodata[MODE_RECORDS_VCPU_SCHED_BOOT + 1][FILTER_SETS];
static bool vmx_loaded[MODE_RECORDS_VCPU_SCHED_BOOT + 1][FILTER_SETS];

/* Into out, byte for byte (the padding too): the constants but those only the kvm_exit programs read. */
static void others_constants(const struct hypertrace_bpf__rodata *ro, struct hypertrace_bpf__rodata *out)
{
	memcpy(out, ro, sizeof(*out));
	out->prefilter_mask = 0;
	out->prefilter_value = 0;
	out->filter_exit_reason_on = false;
	out->filter_exit_reason = 0;
}

/*
 * Attaching depends only on which programs are loaded (each names its
 * tracepoint), not on the rodata constants a configuration sets, and every
 * detach waits for the kernel (a grace period per tracepoint, tens of
 * milliseconds: 80% of this test's time when every configuration was
 * attached). So every configuration is loaded, and each distinct set of
 * loaded programs is attached once.
 */
#define MAX_PROGRAM_SETS 64
static char attached_sets[MAX_PROGRAM_SETS][1024];
static unsigned int nattached_sets;

/* Whether the tracer's set of loaded programs is new (and then remembers it). */
static bool program_set_is_new(const struct ht_tracer *t)
{
	char set[sizeof(attached_sets[0])] = "";
	size_t used = 0;
	struct bpf_program *p;

	bpf_object__for_each_program(p, t->skel->obj) {
		if (bpf_program__fd(p) < 0)
			continue;
		int n = snprintf(set + used, sizeof(set) - used, "%s ", bpf_program__name(p));
		if (n < 0 || (size_t)n >= sizeof(set) - used)
			return true; /* too long to remember: attach it */
		used += (size_t)n;
	}
	for (unsigned int i = 0; i < nattached_sets; i++)
		if (!strcmp(attached_sets[i], set))
			return false;
	if (nattached_sets < MAX_PROGRAM_SETS)
		memcpy(attached_sets[nattached_sets++], set, sizeof(set));
	return true;
}

static void config_opts(struct ht_tracer_opts *o, enum exit_prog prog, enum mode mode, enum filter_set fs)
{
	memset(o, 0, sizeof(*o));
	ht_filters_default(&o->filters);
	o->isa = prog == PROG_VMX || prog == PROG_GENERIC_VMX ? HT_ISA_VMX : HT_ISA_SVM;
	o->classic_kvm_exit = prog == PROG_SVM_CLASSIC;
	if (prog == PROG_GENERIC_VMX || prog == PROG_GENERIC_SVM) {
		o->filters.exit_reason_on = true;
		o->filters.exit_reason = o->isa == HT_ISA_VMX ? 30 : 0x7b; /* an I/O exit */
	}
	if (fs == FILTER_NR_LIST || fs == FILTERS_ALL) {
		o->filters.nr_count = HT_MAX_SELECTED_NR;
		for (unsigned int i = 0; i < HT_MAX_SELECTED_NR; i++)
			o->filters.nr[i] = 1000 + i;
	}
	if (fs == FILTER_PID || fs == FILTERS_ALL) {
		o->filters.tgid_on = true;
		o->filters.tgid = 1;
	}
	if (fs == FILTER_VCPU || fs == FILTERS_ALL) {
		o->filters.vcpu_on = true;
		o->filters.vcpu = 1;
	}
	/* --exits: every exit's time in the host, the vCPU threads' waiting (and the sched_wakeup program). */
	o->exits = mode >= MODE_FIRST_EXITS;
	o->boot = mode >= MODE_FIRST_BOOT;
	o->boot_window_ns = 60000000000ull;
	o->boot_max_exits = 1000;
	o->vcpu_sched = mode >= MODE_FIRST_VCPU_SCHED && mode != MODE_RECORDS_BOOT;
	o->wakeups = o->vcpu_sched;
	enum mode base = o->boot       ? MODE_RECORDS :
			 o->vcpu_sched ? (enum mode)(mode - MODE_FIRST_VCPU_SCHED) :
			 o->exits      ? (enum mode)(mode - MODE_FIRST_EXITS) :
					 mode;
	/* As record sets them: a small ring for --no-file, the default wake-up threshold. */
	o->aggregate_only = base >= MODE_AGG;
	o->ringbuf_bytes = o->aggregate_only ? 4096 : 1u << 20;
	o->wakeup_bytes = base == MODE_RECORDS_KERNEL_WAKEUP ? 0 : ht_wakeup_bytes_for(o->ringbuf_bytes);
	o->group_by = base == MODE_AGG_PER_VCPU || base == MODE_AGG_METRICS ? HT_AGG_BY_VCPU :
		      base == MODE_AGG_PER_VM ? HT_AGG_BY_VM : HT_AGG_BY_NONE;
	/* --no-file --metrics: per vCPU and per selected nr. */
	o->aggregate_by_nr = base == MODE_AGG_METRICS;
}

static void check_configs(enum exit_prog prog, enum mode mode)
{
	if (!kvm_ready)
		SKIP("the kvm tracepoints are missing (KVM not loaded) or not root");
	/*
	 * No filter and all of them everywhere; each filter alone where it meets
	 * both the records and the aggregate code of the two fixed-ISA programs
	 * (every attach and detach waits for the kernel, ~0.3 s on a busy host).
	 */
	bool singles = (prog == PROG_VMX || prog == PROG_SVM) &&
		       (mode == MODE_RECORDS || mode == MODE_AGG_PER_VCPU || mode == MODE_AGG_METRICS ||
			mode == MODE_RECORDS_EXITS || mode == MODE_AGG_PER_VCPU_EXITS || mode == MODE_AGG_METRICS_EXITS ||
			mode == MODE_RECORDS_VCPU_SCHED || mode == MODE_RECORDS_BOOT);
	for (int fs = 0; fs < FILTER_SETS; fs++) {
		if (!singles && fs != FILTERS_NONE && fs != FILTERS_ALL)
			continue;
		/* SVM's classic program is VMX's handler with SVM's constants: all filters on is enough. */
		if (prog == PROG_SVM_CLASSIC && fs != FILTERS_ALL)
			continue;
		struct ht_tracer_opts o;
		struct ht_tracer *t = NULL;
		char err[1024];

		config_opts(&o, prog, mode, (enum filter_set)fs);
		/* The other programs were verified with the VMX row (see the top of this file). */
		o.exit_program_only = prog != PROG_VMX && vmx_loaded[mode][fs];
		int ret = ht_tracer_load(&t, &o, err, sizeof(err));
		CHECK(ret == 0, "%s, %s, %s: %s", exit_prog_names[prog], mode_names[mode], filter_names[fs], err);
		loads++;
		if (prog == PROG_VMX) {
			memcpy(&vmx_rodata[mode][fs], t->skel->rodata, sizeof(vmx_rodata[mode][fs]));
			vmx_loaded[mode][fs] = true;
		} else if (o.exit_program_only) {
			struct hypertrace_bpf__rodata mine, vmx;

			others_constants(t->skel->rodata, &mine);
			others_constants(&vmx_rodata[mode][fs], &vmx);
			if (memcmp(&mine, &vmx, sizeof(mine))) {
				ht_tracer_destroy(t);
				CHECK(false, "%s, %s, %s: constants other than the kvm_exit programs' differ from the VMX row's: load every program here",
				      exit_prog_names[prog], mode_names[mode], filter_names[fs]);
			}
		}
		/* Destroying detaches; nothing is drained, so no wait for in-flight programs. */
		if (program_set_is_new(t)) {
			ret = ht_tracer_attach(t, err, sizeof(err));
			attaches++;
		}
		ht_tracer_destroy(t);
		CHECK(ret == 0, "%s, %s, %s: %s", exit_prog_names[prog], mode_names[mode], filter_names[fs], err);
	}
}

#define MATRIX_TEST(prog, mode)                                                   \
	static void load_attach_##prog##_##mode(void) { check_configs(PROG_##prog, MODE_##mode); }
#define MATRIX_ROW(prog)                                                          \
	MATRIX_TEST(prog, RECORDS)                                                \
	MATRIX_TEST(prog, RECORDS_KERNEL_WAKEUP)                                  \
	MATRIX_TEST(prog, AGG)                                                    \
	MATRIX_TEST(prog, AGG_PER_VCPU)                                           \
	MATRIX_TEST(prog, AGG_PER_VM)                                             \
	MATRIX_TEST(prog, AGG_METRICS)                                            \
	MATRIX_TEST(prog, RECORDS_EXITS)                                          \
	MATRIX_TEST(prog, RECORDS_KERNEL_WAKEUP_EXITS)                            \
	MATRIX_TEST(prog, AGG_EXITS)                                              \
	MATRIX_TEST(prog, AGG_PER_VCPU_EXITS)                                     \
	MATRIX_TEST(prog, AGG_PER_VM_EXITS)                                       \
	MATRIX_TEST(prog, AGG_METRICS_EXITS)                                      \
	MATRIX_TEST(prog, RECORDS_VCPU_SCHED)                                     \
	MATRIX_TEST(prog, RECORDS_KERNEL_WAKEUP_VCPU_SCHED)                       \
	MATRIX_TEST(prog, RECORDS_BOOT)                                           \
	MATRIX_TEST(prog, RECORDS_VCPU_SCHED_BOOT)
MATRIX_ROW(VMX)
MATRIX_ROW(SVM)
MATRIX_ROW(SVM_CLASSIC)
MATRIX_ROW(GENERIC_VMX)
MATRIX_ROW(GENERIC_SVM)
#define RUN_ROW(prog)                                                             \
	RUN(load_attach_##prog##_RECORDS);                                        \
	RUN(load_attach_##prog##_RECORDS_KERNEL_WAKEUP);                          \
	RUN(load_attach_##prog##_AGG);                                            \
	RUN(load_attach_##prog##_AGG_PER_VCPU);                                   \
	RUN(load_attach_##prog##_AGG_PER_VM);                                     \
	RUN(load_attach_##prog##_AGG_METRICS);                                    \
	RUN(load_attach_##prog##_RECORDS_EXITS);                                  \
	RUN(load_attach_##prog##_RECORDS_KERNEL_WAKEUP_EXITS);                    \
	RUN(load_attach_##prog##_AGG_EXITS);                                      \
	RUN(load_attach_##prog##_AGG_PER_VCPU_EXITS);                             \
	RUN(load_attach_##prog##_AGG_PER_VM_EXITS);                               \
	RUN(load_attach_##prog##_AGG_METRICS_EXITS);                              \
	RUN(load_attach_##prog##_RECORDS_VCPU_SCHED);                             \
	RUN(load_attach_##prog##_RECORDS_KERNEL_WAKEUP_VCPU_SCHED);                \
	RUN(load_attach_##prog##_RECORDS_BOOT);                                   \
	RUN(load_attach_##prog##_RECORDS_VCPU_SCHED_BOOT)

/* The verified code length of each loaded program but the kvm_exit one, by name. */
struct code_lengths {
	char name[24][64];
	__u32 len[24];
	unsigned int n;
};

static int code_lengths_of(const struct ht_tracer *t, struct code_lengths *out)
{
	struct bpf_program *p;

	memset(out, 0, sizeof(*out));
	bpf_object__for_each_program(p, t->skel->obj) {
		struct bpf_prog_info info;
		__u32 len = sizeof(info);

		if (bpf_program__fd(p) < 0 || p == t->exit_prog)
			continue;
		memset(&info, 0, sizeof(info));
		if (bpf_obj_get_info_by_fd(bpf_program__fd(p), &info, &len) || out->n == 24)
			return -1;
		snprintf(out->name[out->n], sizeof(out->name[0]), "%s", bpf_program__name(p));
		out->len[out->n++] = info.xlated_prog_len;
	}
	return 0;
}

/*
 * record finds the tp_btf programs' targets itself, in one pass over each
 * kernel BTF (record/attach_targets.c), where libbpf searches vmlinux and
 * then every module for each program. Each target must be the typedef
 * libbpf's own search finds: in vmlinux, or in the kvm module's BTF (and
 * then named by that module's BTF object); a tracepoint no BTF has is not
 * found. In the nested machine kvm is a module; on a host with kvm built
 * in, every target is vmlinux's.
 */
enum btf_reading { BTF_COPIED, BTF_FROM_SYSFS, BTF_PARSED_BY_LIBBPF };

static void tp_btf_targets_match_libbpfs_search(enum btf_reading how)
{
	bool walk_refused = how == BTF_PARSED_BY_LIBBPF;
	static const char *const tracepoints[] = {
		"kvm_exit",	    "kvm_entry",	"kvm_hypercall", "kvm_userspace_exit", "kvm_pio",
		"kvm_mmio",	    "kvm_msr",		"kvm_cpuid",	 "kvm_vcpu_wakeup",    "kvm_inj_virq",
		"kvm_halt_poll_ns", "sched_switch",	"sched_wakeup",	 "sched_process_exit",
	};
	struct btf *vmlinux = NULL, *kvm = NULL;
	unsigned int in_kvm = 0;
	__u32 id;
	int fd;

	if (!kvm_ready)
		SKIP("the kvm tracepoints are missing (KVM not loaded) or not root");
	ht_attach_targets_forget();
	ht_attach_targets_walk_refused(walk_refused);
	ht_attach_targets_copy_refused(how == BTF_FROM_SYSFS);
	vmlinux = btf__load_vmlinux_btf();
	if (!ASSERT_OK_PTR(vmlinux, "vmlinux's BTF"))
		goto cleanup;
	kvm = btf__load_module_btf("kvm", vmlinux); /* NULL: kvm is built in */
	for (size_t i = 0; i < ARRAY_SIZE(tracepoints); i++) {
		char name[64];
		int want, ret;
		bool module = false;

		snprintf(name, sizeof(name), "btf_trace_%s", tracepoints[i]);
		want = btf__find_by_name_kind(vmlinux, name, BTF_KIND_TYPEDEF);
		if (want < 0 && kvm) {
			want = btf__find_by_name_kind(kvm, name, BTF_KIND_TYPEDEF);
			module = true;
		}
		if (!ASSERT_MSG(want > 0, "libbpf finds no %s in vmlinux%s", name, kvm ? " or kvm" : ""))
			goto cleanup;
		ret = ht_attach_target_of(tracepoints[i], &fd, &id);
		if (!ASSERT_MSG(ret == 0 && id == (__u32)want, "%s: %d, type %u; libbpf's search: type %d", tracepoints[i],
				ret, id, want))
			goto cleanup;
		if (module) {
			struct bpf_btf_info info = { 0 };
			__u32 len = sizeof(info);
			char of[64] = "";

			info.name = (__u64)(unsigned long)of;
			info.name_len = sizeof(of);
			if (!ASSERT_MSG(fd > 0 && !bpf_obj_get_info_by_fd(fd, &info, &len) && !strcmp(of, "kvm"),
					"%s: BTF object fd %d named '%s', want kvm's", tracepoints[i], fd, of))
				goto cleanup;
			in_kvm++;
		} else if (!ASSERT_MSG(fd == 0, "%s: BTF object fd %d, want vmlinux's (0)", tracepoints[i], fd)) {
			goto cleanup;
		}
	}
	ASSERT_MSG(ht_attach_target_of("no_such_tracepoint_anywhere", &fd, &id) == -ESRCH,
		   "a tracepoint no BTF has is found");
	/* vmlinux's and every module's walked BTF copied from its object, or none where that is refused. */
	if (how == BTF_COPIED)
		ASSERT_MSG(ht_attach_targets_copied() >= 1 + (in_kvm > 0), "%u BTFs copied from their objects",
			   ht_attach_targets_copied());
	else
		ASSERT_MSG(ht_attach_targets_copied() == 0, "%u BTFs copied, none wanted", ht_attach_targets_copied());
	printf("    %zu targets as libbpf finds them, %u of them in the kvm module's BTF (%s)\n", ARRAY_SIZE(tracepoints),
	       in_kvm,
	       how == BTF_PARSED_BY_LIBBPF ? "libbpf's parse of the BTFs" :
	       how == BTF_FROM_SYSFS	   ? "one walk of each raw BTF, read from sysfs" :
					     "one walk of each raw BTF, copied from its object");
cleanup:
	ht_attach_targets_forget();
	ht_attach_targets_walk_refused(false);
	ht_attach_targets_copy_refused(false);
	btf__free(kvm);
	btf__free(vmlinux);
}

static void tp_btf_targets_are_the_typedefs_libbpfs_search_finds(void)
{
	tp_btf_targets_match_libbpfs_search(BTF_COPIED);
}

/* Where the kernel will not copy a BTF from its object, its sysfs file gives the same. */
static void tp_btf_targets_from_sysfs_are_the_same(void)
{
	tp_btf_targets_match_libbpfs_search(BTF_FROM_SYSFS);
}

/* Where the walk meets a BTF kind it does not know (a newer kernel's), libbpf's parse finds the same. */
static void tp_btf_targets_without_the_walk_are_the_same(void)
{
	tp_btf_targets_match_libbpfs_search(BTF_PARSED_BY_LIBBPF);
}

/*
 * The shortcut of the other rows (exit_program_only) holds only while no
 * program but the kvm_exit ones reads what tells those apart. A program
 * that did would be verified to other code when it changes: the verifier
 * prunes what a constant turns off. Here every program of the fullest
 * mode, all filters on, is loaded with the VMX program's constants and
 * with the generic SVM one's (--exit-reason: every constant of the kind
 * different), and each program but kvm_exit must come out the same length.
 */
static void the_kvm_exit_choice_leaves_the_other_programs_alone(void)
{
	struct code_lengths vmx, generic;
	struct ht_tracer_opts o;
	struct ht_tracer *t = NULL;
	char err[1024];
	int ret;

	if (!kvm_ready)
		SKIP("the kvm tracepoints are missing (KVM not loaded) or not root");
	config_opts(&o, PROG_VMX, MODE_RECORDS_VCPU_SCHED_BOOT, FILTERS_ALL);
	ret = ht_tracer_load(&t, &o, err, sizeof(err));
	CHECK(ret == 0, "vmx: %s", err);
	ret = code_lengths_of(t, &vmx);
	ht_tracer_destroy(t);
	t = NULL;
	CHECK(ret == 0, "the programs' info");
	config_opts(&o, PROG_GENERIC_SVM, MODE_RECORDS_VCPU_SCHED_BOOT, FILTERS_ALL);
	ret = ht_tracer_load(&t, &o, err, sizeof(err));
	CHECK(ret == 0, "generic_svm: %s", err);
	ret = code_lengths_of(t, &generic);
	ht_tracer_destroy(t);
	CHECK(ret == 0, "the programs' info");
	CHECK(vmx.n == generic.n && vmx.n >= 8, "%u programs loaded with VMX's, %u with generic SVM's", vmx.n, generic.n);
	for (unsigned int i = 0; i < vmx.n; i++)
		CHECK(!strcmp(vmx.name[i], generic.name[i]) && vmx.len[i] == generic.len[i],
		      "%s: %u bytes of code with VMX's constants, %s %u with generic SVM's: it reads the kvm_exit programs' constants, so every row must load it",
		      vmx.name[i], vmx.len[i], generic.name[i], generic.len[i]);
	printf("    %u programs verified to the same code with either kvm_exit program's constants\n", vmx.n);
}

/*
 * Where the kvm_amd module has BTF (an AMD host, or the nested machine), SVM's
 * kvm_exit program is the raw one: loaded, and the classic one not.
 */
static void svm_kvm_exit_is_raw_where_kvm_amd_has_btf(void)
{
	struct ht_tracer_opts o;
	struct ht_tracer *t = NULL;
	char err[1024];

	if (!kvm_ready)
		SKIP("the kvm tracepoints are missing (KVM not loaded) or not root");
	if (!ht_svm_raw_exit_loadable(HT_SYSFS_BTF_DIR))
		SKIP("no kvm_amd module BTF here (" HT_SYSFS_BTF_DIR "/kvm_amd): SVM's raw kvm_exit program cannot load");
	config_opts(&o, PROG_SVM, MODE_RECORDS_EXITS, FILTERS_NONE);
	int ret = ht_tracer_load(&t, &o, err, sizeof(err));
	CHECK(ret == 0, "%s", err);
	bool raw = bpf_program__fd(t->skel->progs.on_kvm_exit_svm_raw) >= 0;
	bool classic = bpf_program__fd(t->skel->progs.on_kvm_exit_svm) >= 0;

	ht_tracer_destroy(t);
	CHECK(raw, "the raw kvm_exit program is not loaded");
	CHECK(!classic, "the classic SVM kvm_exit program is loaded too");
}

/*
 * Where SVM's raw kvm_exit program is expected to load but does not, record
 * loads the classic one and says why. A fake BTF directory with a kvm_amd
 * file makes record expect it on a kernel without kvm_amd's structs.
 */
static void svm_raw_kvm_exit_that_cannot_load_gives_way_to_the_classic_one(void)
{
	char dir[] = "/tmp/ht-btf-XXXXXX", file[64];
	struct ht_tracer_opts o;
	struct ht_tracer *t = NULL;
	char err[1024], why[sizeof(t->exit_fallback)] = "";
	bool raw, classic;
	FILE *f;

	if (!kvm_ready)
		SKIP("the kvm tracepoints are missing (KVM not loaded) or not root");
	if (ht_svm_raw_exit_loadable(HT_SYSFS_BTF_DIR))
		SKIP("the kvm_amd module's BTF is here: SVM's raw kvm_exit program loads (see svm_kvm_exit_is_raw_where_kvm_amd_has_btf)");
	CHECK(mkdtemp(dir) != NULL, "mkdtemp: %s", strerror(errno));
	snprintf(file, sizeof(file), "%s/kvm_amd", dir);
	f = fopen(file, "w");
	if (!ASSERT_MSG(f != NULL, "cannot create %s", file))
		goto cleanup;
	fclose(f);
	config_opts(&o, PROG_SVM, MODE_RECORDS_EXITS, FILTERS_NONE);
	o.btf_dir = dir;
	if (!ASSERT_MSG(ht_tracer_load(&t, &o, err, sizeof(err)) == 0, "%s", err))
		goto cleanup;
	raw = bpf_program__fd(t->skel->progs.on_kvm_exit_svm_raw) >= 0;
	classic = bpf_program__fd(t->skel->progs.on_kvm_exit_svm) >= 0;
	if (ht_tracer_exit_fallback(t))
		snprintf(why, sizeof(why), "%s", ht_tracer_exit_fallback(t));
	if (!ASSERT_MSG(!raw && classic, "kvm_exit programs loaded: raw %d, classic %d (want the classic one only)", raw,
			classic))
		goto cleanup;
	if (ASSERT_MSG(strstr(why, "raw kvm_exit program did not load") && strstr(why, "vcpu_svm"),
		       "the reason given: \"%s\"", why))
		printf("    %s\n", why);
cleanup:
	ht_tracer_destroy(t);
	unlink(file);
	rmdir(dir);
}

int main(void)
{
	char err[512];
	struct utsname u;

	kvm_ready = ht_preflight(err, sizeof(err)) == 0;
	if (!kvm_ready)
		printf("    not loading: %s\n", err);
	RUN_ROW(VMX);
	RUN_ROW(SVM);
	RUN_ROW(SVM_CLASSIC);
	RUN_ROW(GENERIC_VMX);
	RUN_ROW(GENERIC_SVM);
	RUN(the_kvm_exit_choice_leaves_the_other_programs_alone);
	RUN(tp_btf_targets_are_the_typedefs_libbpfs_search_finds);
	RUN(tp_btf_targets_from_sysfs_are_the_same);
	RUN(tp_btf_targets_without_the_walk_are_the_same);
	RUN(svm_kvm_exit_is_raw_where_kvm_amd_has_btf);
	RUN(svm_raw_kvm_exit_that_cannot_load_gives_way_to_the_classic_one);
	if (uname(&u) == 0)
		printf("    %u configurations loaded, their %u sets of programs attached, on Linux %s\n", loads,
		       attaches, u.release);
	return ht_test_exit_status();
}
