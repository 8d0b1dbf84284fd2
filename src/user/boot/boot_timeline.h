/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A VM's boot told into phases from its exits (record --boot), with nothing
 * in the guest: what KVM shows of each exit, the guest's RIP and mode, is
 * enough to tell the firmware and boot loader (before long mode), the
 * kernel's own 64-bit start before it runs at its link address (the
 * decompressor), the kernel, and user space apart. Fed the boot exits in
 * file order, it keeps per VM what each phase took: its wall time, where
 * its vCPUs' time went, its exits by reason and cause, and each vCPU's last
 * exits (where a boot that stopped stopped). Pure: no I/O.
 *
 * Boundaries. The VM's start is exact (its first vCPU's first entry). A
 * phase begins at the first exit that shows it (on the boot vCPU, the
 * lowest vCPU id seen first; user space on any vCPU that ran the kernel),
 * and the change happened while the guest ran before that exit: at most
 * the time since that vCPU's previous entry earlier, which the phase keeps
 * as its start's uncertainty. Phases never go back (a secondary vCPU's
 * start in real mode is not the firmware again).
 *
 * A pid the kernel gave again to a new VM process is a VM of its own: its
 * boot vCPU's first entry, once that vCPU was seen, begins a new timeline
 * and the earlier one is kept as it ended (QEMU never unplugs the boot
 * vCPU, so its thread enters for the first time once a process).
 *
 * Bounded by its input: each phase names at most HT_BOOT_TOP_REASONS exit
 * reasons and HT_BOOT_TOP_CAUSES causes (the rest counted together), each
 * VM at most HT_BOOT_MAX_VCPUS vCPUs (the rest counted), and at most
 * HT_BOOT_MAX_VMS VMs (the exits of the rest counted): the current ones in a
 * hash map, those whose pid was given again in a list.
 */
#ifndef HT_BOOT_TIMELINE_H
#define HT_BOOT_TIMELINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "common/hashmap.h"
#include "hypertrace/record.h"

enum ht_boot_phase {
	HT_BOOT_FIRMWARE = 0, /* real or protected mode: firmware, option ROMs, boot loader, the kernel's setup */
	HT_BOOT_DECOMPRESS,   /* long mode below the kernel's mapping: the kernel's decompressor (UEFI: firmware too) */
	HT_BOOT_KERNEL,       /* the kernel at its link address (the upper half) */
	HT_BOOT_USER,         /* user space: the lower half again, after the kernel ran */
	HT_BOOT_NPHASES,
};

extern const char *const ht_boot_phase_names[HT_BOOT_NPHASES];

#define HT_BOOT_TOP_REASONS 32
#define HT_BOOT_TOP_CAUSES 64
#define HT_BOOT_MAX_VCPUS 1024
#define HT_BOOT_LAST_EXITS 8
/* Some 11 KB each: a recording follows 256 boots at once, so this is churn of years, or a crafted file. */
#define HT_BOOT_MAX_VMS 4096

struct ht_boot_reason_count {
	uint32_t reason;
	uint8_t isa;
	uint64_t count;
};

struct ht_boot_cause_count {
	uint32_t reason;
	uint8_t isa, kind;
	uint32_t detail;
	uint64_t value;
	uint64_t count;
};

struct ht_boot_phase_stats {
	bool reached;
	uint64_t start_ns;         /* its first exit (the firmware: the VM's first entry) */
	uint64_t uncertainty_ns;   /* it may have begun up to this much before start_ns; 0: exact */
	uint64_t first_rip;        /* the RIP of the exit that showed it */
	uint16_t first_vcpu;
	uint64_t exits;
	uint64_t state_ns[HT_VCPU_NSTATES]; /* its vCPUs' time: guest split at the boundaries, an exit's host part in the phase of its exit */
	struct ht_boot_reason_count reasons[HT_BOOT_TOP_REASONS];
	size_t nreasons;
	uint64_t reasons_other;    /* exits of reasons beyond the first HT_BOOT_TOP_REASONS */
	struct ht_boot_cause_count causes[HT_BOOT_TOP_CAUSES];
	size_t ncauses;
	uint64_t causes_other;     /* exits of causes beyond the first HT_BOOT_TOP_CAUSES */
};

struct ht_boot_last_exit {
	uint64_t exit_ns, rip;
	uint32_t reason;
	uint8_t isa, mode;
};

struct ht_boot_vcpu {
	uint16_t vcpu;
	uint32_t tid;
	uint64_t last_entry_ns;    /* its latest entry: the guest runs from here to its next exit */
	bool ran_kernel;           /* an exit of it at a kernel address was seen */
	bool ended;                /* its thread ended */
	uint64_t exits;
	struct ht_boot_last_exit last[HT_BOOT_LAST_EXITS]; /* a ring: its latest exits */
	unsigned int nlast;        /* exits in last (at most HT_BOOT_LAST_EXITS), the latest at (nlast_total - 1) % 8 */
	uint64_t nlast_total;
};

struct ht_boot_timeline {
	uint32_t pid;
	char *vm_name;             /* the name its process had when its boot began (a pid given again has another); NULL: none */
	uint64_t start_ns;         /* the VM's first entry (or, if that was not seen, its first exit) */
	bool start_exact;          /* start_ns is a first entry */
	uint64_t last_ns;          /* the latest time of any of its boot exits */
	enum ht_boot_phase phase;  /* the latest reached */
	uint16_t boot_vcpu;        /* the vCPU whose exits mark the phases */
	bool boot_vcpu_known;
	struct ht_boot_phase_stats phases[HT_BOOT_NPHASES];
	struct ht_boot_vcpu *vcpus;
	size_t nvcpus, vcpus_cap;
	struct ht_hashmap vcpu_index; /* vCPU id -> its index in vcpus: each exit finds its vCPU at once */
	uint64_t vcpus_other;      /* exits of vCPUs beyond HT_BOOT_MAX_VCPUS */
	uint64_t records, saturated;
	bool ended;                /* a vCPU thread of it ended (the VM stopped, or its guest crashed) */
	uint64_t end_ns;           /* when the last of its threads that ended did */
	uint64_t mode_unknown;     /* exits whose mode was not read */
	const struct ht_boot_timeline *before; /* the timeline its pid had before (a VM process given it earlier), or NULL */
};

struct ht_boot_timelines {
	struct ht_hashmap by_pid;  /* pid -> struct ht_boot_timeline *: each pid's latest VM process */
	struct ht_boot_timeline **earlier; /* VMs whose pid a later VM process was given */
	size_t nearlier, earlier_cap;
	uint64_t vms_other;        /* boot exits of VMs beyond the first HT_BOOT_MAX_VMS: counted, not told */
};

void ht_boot_timelines_init(struct ht_boot_timelines *b);
/*
 * One boot exit, in file order; vm_name (NULL if none) names its process
 * where the exit begins a VM's timeline. 0, or -ENOMEM.
 */
int ht_boot_timelines_add(struct ht_boot_timelines *b, const struct ht_boot_exit *be, const char *vm_name);
/*
 * The timeline of pid's VM process that ran at ns: the latest begun at or
 * before it (a pid given again has several), NULL if none had begun. At
 * most HT_BOOT_AT_STEPS of a pid's earlier VMs are looked at: in a file in
 * time order the one wanted is the latest or the one before it.
 */
#define HT_BOOT_AT_STEPS 64
const struct ht_boot_timeline *ht_boot_timelines_at(const struct ht_boot_timelines *b, uint32_t pid, uint64_t ns);
/* The VMs' number, those of a pid given again included. */
size_t ht_boot_timelines_count(const struct ht_boot_timelines *b);
/* The VMs, sorted by start (then pid); *n of them. The array is the caller's to free(); NULL if none or out of memory. */
const struct ht_boot_timeline **ht_boot_timelines_sorted(const struct ht_boot_timelines *b, size_t *n);
void ht_boot_timelines_free(struct ht_boot_timelines *b);

/* The phase an exit at rip in mode shows, on a vCPU that did (ran_kernel) or did not run the kernel yet. */
enum ht_boot_phase ht_boot_phase_of(uint64_t rip, uint8_t mode, bool ran_kernel);
/* A phase's end: the next phase's start, or (the last reached) the VM's last time. */
uint64_t ht_boot_phase_end(const struct ht_boot_timeline *t, enum ht_boot_phase p);
/* How much before its start a reached phase may have begun: 0 for the firmware from the VM's first entry. */
uint64_t ht_boot_phase_uncertainty(const struct ht_boot_timeline *t, enum ht_boot_phase p);

#endif
