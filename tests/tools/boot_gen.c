// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Writes a trace file of one VM's boot as record --boot writes it (no BPF),
 * for the tests of report --boot. Every time is fixed, so a test knows
 * what the report must say:
 *
 *   boot_gen FILE [--crash] [--hostile-name] [--lost N] [--no-first-entry] [--again]
 *
 * VM process 30000 ("boot1"), vCPU 0 (thread 30001) and vCPU 1 (30002);
 * times from B, 1 ms after the file's start:
 *   vCPU 0  first entry at B, real mode
 *           firmware: 600 I/O exits (port 0x70, then 0x510) every 10 us
 *           from B + 10 us, real mode for the first 300, then protected;
 *           each 1.5 us in KVM and 0.5 us in the VMM
 *           10 CPUID exits at B + 20 ms + k * 10 us, protected
 *           decompressor: 50 I/O exits from B + 30 ms at 0x1000000 + k,
 *           long mode, every 20 us
 *           kernel: 200 MSR exits from B + 40 ms at 0xffffffff81000100 + k,
 *           long mode, every 50 us; the 100th is a HLT halted 3 ms
 *   vCPU 1  first entry at B + 45 ms (real mode): an exit in real mode at
 *           0x99000 and one in long mode at 0x99100 (its trampoline: no
 *           phase), then the kernel at B + 46 ms, then user space: an
 *           exit at 0x7f0000001000 at B + 60 ms, 20 more every 100 us
 *   vCPU 0  user space too, from B + 61 ms: 20 exits at 0x401000
 *   a hypercall record (nr 1000) of vCPU 0 at B + 70 ms
 * --crash: vCPU 0's last exit is a HLT at 0xffffffff81234567 (panic) at
 * B + 80 ms and both threads end at B + 81 ms (no entry after).
 * --again (with --crash): the kernel gives pid 30000 to a new VM process,
 * which boots the same way from B2 = B + 200 ms (its threads 30001 and
 * 30002 again) and sends a hypercall (nr 1001) at B2 + 70 ms and a replay
 * of its own trace (guest/boottrace: its begin, nr 1152) at B2 + 75 ms.
 * Writes FILE.kallsyms (_stext, panic, do_idle) beside it.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "common/parse_number.h"
#include "hypertrace/guest.h"
#include "hypertrace/trace_file.h"
#include "tracefile/trace_writer.h"

#define PID 30000u
#define MAX_RECS 4096
#define US 1000ull
#define MS 1000000ull
#define SVM_IO 0x7b
#define SVM_CPUID 0x72
#define SVM_MSR 0x7c
#define SVM_HLT 0x78
#define REAL HT_BOOT_MODE_KNOWN
#define PROT (HT_BOOT_MODE_KNOWN | HT_BOOT_MODE_PE)
#define LONG (HT_BOOT_MODE_KNOWN | HT_BOOT_MODE_PE | HT_BOOT_MODE_PG | HT_BOOT_MODE_LMA)

#define USAGE "usage: boot_gen FILE [--crash] [--hostile-name] [--lost N] [--no-first-entry] [--again]\n"

static struct ht_record recs[MAX_RECS];
static unsigned int nrecs;

static struct ht_boot_exit *next_rec(uint16_t vcpu)
{
	struct ht_boot_exit *be = (struct ht_boot_exit *)(void *)&recs[nrecs++];

	memset(be, 0, sizeof(*be));
	be->host_pid = PID;
	be->host_tid = PID + 1 + vcpu;
	be->vcpu_id = vcpu;
	be->cpu = vcpu;
	be->isa = HT_ISA_SVM;
	be->flags = HT_REC_F_BOOT_EXIT;
	return be;
}

static void first_entry(uint16_t vcpu, uint64_t at)
{
	struct ht_boot_exit *be = next_rec(vcpu);

	be->exit_ns = be->entry_ns = at;
	be->mode = REAL;
	be->boot_flags = HT_BOOT_F_FIRST_ENTRY;
}

/* An exit at at, dur ns in KVM (and vmm ns in the VMM), with its cause if kind. */
static struct ht_boot_exit *exit_at(uint16_t vcpu, uint64_t at, uint64_t rip, uint32_t reason, uint8_t mode,
				    uint32_t kvm, uint32_t vmm, uint8_t kind, uint64_t value)
{
	struct ht_boot_exit *be = next_rec(vcpu);

	be->exit_ns = at;
	be->entry_ns = at + kvm + vmm;
	be->guest_rip = rip;
	be->reason = reason;
	be->mode = mode;
	be->kvm_ns = kvm;
	be->vmm_ns = vmm;
	if (kind) {
		be->boot_flags |= HT_BOOT_F_CAUSE;
		be->cause_kind = kind;
		be->cause_value = value;
		be->cause_detail = kind == HT_CAUSE_PIO ? HT_CAUSE_DIR_OUT | 1u << 8 : kind == HT_CAUSE_MSR ? HT_CAUSE_DIR_OUT : 0;
	}
	return be;
}

static unsigned int hypercalls;

/* A hypercall record of vCPU 0 at at (its first argument a0). */
static void hypercall(uint64_t at, uint32_t nr, uint64_t a0)
{
	struct ht_record *hc = &recs[nrecs++];

	memset(hc, 0, sizeof(*hc));
	hc->exit_ns = at;
	hc->nr = nr;
	hc->a0 = a0;
	hc->exit_reason = 0x81;
	hc->isa = HT_ISA_SVM;
	hc->host_pid = PID;
	hc->host_tid = PID + 1;
	hc->hcall_to_entry_ns = 500;
	hypercalls++;
}

static int by_end(const void *a, const void *b)
{
	uint64_t x = ht_record_done_ns(a), y = ht_record_done_ns(b);

	return x < y ? -1 : x > y;
}

static void identity(struct ht_writer *w, uint32_t tid, unsigned int vcpu, uint64_t at, bool hostile)
{
	struct ht_identity id = { .pid = PID, .tid = tid, .first_seen_ns = at };

	snprintf(id.process_name, sizeof(id.process_name), "qemu-system-x86");
	snprintf(id.thread_name, sizeof(id.thread_name), "CPU %u/KVM", vcpu);
	snprintf(id.vm_name, sizeof(id.vm_name), "%s", hostile ? "boot\x1b[31m\"1" : "boot1");
	ht_writer_add_identity(w, &id);
}

static const char kallsyms[] = "ffffffff81000000 T _stext\n"
			       "ffffffff81234500 T panic\n"
			       "ffffffff81300000 T do_idle\n";

static int write_kallsyms(const char *path)
{
	char sympath[4096];
	FILE *f;

	snprintf(sympath, sizeof(sympath), "%s.kallsyms", path);
	f = fopen(sympath, "w");
	if (!f || fputs(kallsyms, f) < 0 || fclose(f)) {
		fprintf(stderr, "boot_gen: cannot write %s\n", sympath);
		return 1;
	}
	return 0;
}

static void play(uint64_t b, bool crash, bool first)
{
	if (first)
		first_entry(0, b);
	for (unsigned int k = 0; k < 600; k++)
		exit_at(0, b + (k + 1) * 10 * US, 0xf0000 + k % 256, SVM_IO, k < 300 ? REAL : PROT, 1500, 500,
			HT_CAUSE_PIO, k < 300 ? 0x70 : 0x510);
	for (unsigned int k = 0; k < 10; k++)
		exit_at(0, b + 20 * MS + k * 10 * US, 0xf1000, SVM_CPUID, PROT, 800, 0, HT_CAUSE_CPUID, k);
	for (unsigned int k = 0; k < 50; k++)
		exit_at(0, b + 30 * MS + k * 20 * US, 0x1000000 + k, SVM_IO, LONG, 1000, 1000, HT_CAUSE_PIO, 0x3f8);
	for (unsigned int k = 0; k < 200; k++) {
		uint64_t at = b + 40 * MS + k * 50 * US;

		if (k == 100) {
			struct ht_boot_exit *h = exit_at(0, at, 0xffffffff81300010ull, SVM_HLT, LONG, 1000, 0, 0, 0);

			h->halted_ns = 3 * MS;
			h->entry_ns += 3 * MS;
			continue;
		}
		if (k > 100 && k < 161)
			continue; /* halted meanwhile */
		exit_at(0, at, 0xffffffff81000100ull + k, SVM_MSR, LONG, 700, 0, HT_CAUSE_MSR, 0xc0000080);
	}
	first_entry(1, b + 45 * MS);
	exit_at(1, b + 45 * MS + 100 * US, 0x99000, SVM_IO, REAL, 1000, 0, HT_CAUSE_PIO, 0x80);
	exit_at(1, b + 45 * MS + 200 * US, 0x99100, SVM_MSR, LONG, 1000, 0, HT_CAUSE_MSR, 0xc0000080);
	exit_at(1, b + 46 * MS, 0xffffffff81000200ull, SVM_MSR, LONG, 1000, 0, HT_CAUSE_MSR, 0x1b);
	for (unsigned int k = 0; k <= 20; k++)
		exit_at(1, b + 60 * MS + k * 100 * US, 0x7f0000001000ull + k, SVM_IO, LONG, 1000, 2000, HT_CAUSE_PIO, 0x3f8);
	for (unsigned int k = 0; k < 20; k++)
		exit_at(0, b + 61 * MS + k * 100 * US, 0x401000 + k, SVM_IO, LONG, 1000, 2000, HT_CAUSE_PIO, 0x3f8);
	if (crash) {
		struct ht_boot_exit *p = exit_at(0, b + 80 * MS, 0xffffffff81234567ull, SVM_HLT, LONG, 0, 0, 0, 0);

		p->entry_ns = b + 81 * MS;
		p->halted_ns = (uint32_t)(p->entry_ns - p->exit_ns);
		p->boot_flags |= HT_BOOT_F_THREAD_END;
		struct ht_boot_exit *q = exit_at(1, b + 79 * MS, 0xffffffff81300020ull, SVM_HLT, LONG, 0, 0, 0, 0);

		q->entry_ns = b + 81 * MS;
		q->halted_ns = (uint32_t)(q->entry_ns - q->exit_ns);
		q->boot_flags |= HT_BOOT_F_THREAD_END;
	}
}

int main(int argc, char **argv)
{
	bool crash = false, hostile = false, first = true, again = false;
	uint64_t lost = 0;
	struct ht_file_header hdr;
	struct ht_trailer t = { 0 };
	struct ht_writer *w;
	char err[512];

	if (argc < 2) {
		fprintf(stderr, USAGE);
		return 2;
	}
	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--crash"))
			crash = true;
		else if (!strcmp(argv[i], "--hostile-name"))
			hostile = true;
		else if (!strcmp(argv[i], "--no-first-entry"))
			first = false;
		else if (!strcmp(argv[i], "--again"))
			again = crash = true;
		else if (!strcmp(argv[i], "--lost") && i + 1 < argc && ht_parse_u64(argv[i + 1], 1, 1000000, &lost))
			i++;
		else {
			fprintf(stderr, USAGE);
			return 2;
		}
	}
	ht_header_init(&hdr);
	hdr.filter_flags |= HT_FILTER_F_BOOT;
	if (again) {
		/* Recorded with --nr 1000,1001,1150-1152: the hypercalls and the guest's trace. */
		static const uint32_t nrs[] = { 1000, 1001, HT_GUEST_NR_TRACE_LINE, HT_GUEST_NR_TRACE_TEXT,
						HT_GUEST_NR_TRACE_REPLAY };

		hdr.filter_nr_count = sizeof(nrs) / sizeof(nrs[0]);
		memcpy(hdr.filter_nr, nrs, sizeof(nrs));
	}
	if (ht_writer_open(argv[1], true, &hdr, &w, err, sizeof(err))) {
		fprintf(stderr, "boot_gen: %s\n", err);
		return 1;
	}
	uint64_t b = hdr.start_monotonic_ns + MS;

	play(b, crash, first);
	/* The guest module's first event. */
	hypercall(b + 70 * MS, 1000, 0);
	if (again) {
		play(b + 200 * MS, false, true);
		hypercall(b + 270 * MS, 1001, 0);
		hypercall(b + 275 * MS, HT_GUEST_NR_TRACE_REPLAY, 1 | (uint64_t)HT_GUEST_REPLAY_BEGIN << 32);
	}
	qsort(recs, nrecs, sizeof(recs[0]), by_end);
	identity(w, PID + 1, 0, b, hostile);
	identity(w, PID + 2, 1, b + 45 * MS, hostile);
	for (unsigned int i = 0; i < nrecs; i++)
		ht_writer_add(w, &recs[i]);
	struct ht_boot_vm_rec vm = { .pid = PID, .vm = { .first_ns = b, .recorded = nrecs - hypercalls, .lost = lost } };

	if (crash)
		vm.flags |= HT_BOOT_VM_F_ENDED;
	ht_writer_add_block(w, HT_BLOCK_BOOT, &vm, sizeof(vm), 1);
	t.records = nrecs;
	t.end_monotonic_ns = b + 100 * MS;
	t.end_realtime_ns = hdr.start_realtime_ns + (t.end_monotonic_ns - hdr.start_monotonic_ns);
	if (ht_writer_close(w, &t)) {
		fprintf(stderr, "boot_gen: cannot write %s\n", argv[1]);
		return 1;
	}
	printf("%u records\n", nrecs);
	return write_kallsyms(argv[1]);
}
