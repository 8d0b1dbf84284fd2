/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Reads a trace file block by block. It stops at the first damaged or
 * truncated block and reports how much it read and where it stopped; every
 * record before that point is still delivered.
 */
#ifndef HT_TRACE_READER_H
#define HT_TRACE_READER_H

#include <stdbool.h>
#include <stddef.h>
#include "hypertrace/limits.h"
#include "hypertrace/trace_file.h"

struct ht_reader;

struct ht_read_status {
	bool has_trailer;              /* the recording ended cleanly */
	bool damaged;                  /* stopped at a bad or truncated block */
	unsigned long long records;    /* hypercall records delivered so far */
	unsigned long long vcpu_switches; /* switch records of vCPU threads read so far (record --vcpu-sched) */
	unsigned long long boot_exits; /* exits of booting VMs read so far (record --boot) */
	unsigned long long vcpu_wakeups; /* wake-ups of halted vCPU threads read so far (record --wakeups) */
	unsigned long long vcpu_irqs;  /* interrupt deliveries read so far (record --wakeups, version 14 on) */
	unsigned long long good_bytes; /* end offset of the last whole block */
	unsigned long long file_bytes;
	char reason[192];              /* why reading stopped early, if it did */
	struct ht_trailer trailer;     /* valid if has_trailer */
};

/*
 * Opens PATH and validates its header. Returns 0, or -errno / -EINVAL with a
 * one-line message for the user in err (missing file, empty file, not a
 * trace file, a newer format version, damaged header).
 */
int ht_reader_open(const char *path, struct ht_reader **out, char *err, size_t errlen);
const struct ht_file_header *ht_reader_header(const struct ht_reader *r);
/*
 * 1: *rec filled with the next hypercall record; 0: no more records (see
 * ht_reader_status for why). The switch records of vCPU threads between
 * them go to the switch visitor, if one is set, as they are passed.
 */
int ht_reader_next(struct ht_reader *r, struct ht_record *rec);
/* Switches of vCPU threads (record --vcpu-sched), in file order, interleaved with ht_reader_next's records. */
typedef void (*ht_switch_visitor)(void *ctx, const struct ht_vcpu_switch *sw);
void ht_reader_set_switch_visitor(struct ht_reader *r, ht_switch_visitor fn, void *ctx);
/* Wake-ups of halted vCPU threads (record --wakeups), in file order, interleaved with ht_reader_next's records. */
typedef void (*ht_wakeup_visitor)(void *ctx, const struct ht_vcpu_wakeup *w);
void ht_reader_set_wakeup_visitor(struct ht_reader *r, ht_wakeup_visitor fn, void *ctx);
/* Interrupt deliveries to vCPU threads (record --wakeups, version 14 on), the same way. */
typedef void (*ht_irq_visitor)(void *ctx, const struct ht_vcpu_irq *d);
void ht_reader_set_irq_visitor(struct ht_reader *r, ht_irq_visitor fn, void *ctx);
/* Exits of booting VMs (record --boot), in file order, interleaved with ht_reader_next's records. */
typedef void (*ht_boot_exit_visitor)(void *ctx, const struct ht_boot_exit *be);
void ht_reader_set_boot_exit_visitor(struct ht_reader *r, ht_boot_exit_visitor fn, void *ctx);
/*
 * The booting VMs' numbers from the BOOT blocks read so far (each VM's
 * latest; pid 0: the VMs refused), *n of them; NULL if none.
 */
const struct ht_boot_vm_rec *ht_reader_boot_vms(const struct ht_reader *r, size_t *n);
const struct ht_read_status *ht_reader_status(const struct ht_reader *r);
/*
 * The identity of thread tid of process pid from the IDENTITY blocks read so
 * far (they precede their thread's records), or NULL: files written before
 * identities were recorded have none.
 */
const struct ht_identity *ht_reader_identity(struct ht_reader *r, __u32 pid, __u32 tid);
/* The QEMU guest name of process pid (else its process name), or NULL; reader: a struct ht_reader. */
const char *ht_reader_vm_name(void *reader, __u32 pid);
/* The name of thread tid of process pid ("CPU 1/KVM"), or NULL; reader: a struct ht_reader. */
const char *ht_reader_thread_name(void *reader, __u32 pid, __u32 tid);
/*
 * EXITS blocks (record --exits): fn is called for each one as reading
 * passes it (ht_reader_next), with its header, its series and its threads
 * (pointers valid during the call only). The payload's counts (at most
 * what a recording can hold), its time, each series' numbers and each
 * thread's account (its states add up to its time) are checked
 * (docs/trace-format.md); the numbers are the file's. That they never go
 * down between blocks is the visitor's to check: it keeps them.
 */
/*
 * What one EXITS block can hold, as the BPF side can produce it (the
 * reader's bound, docs/trace-format.md): every series of its series map and
 * of the cache of each of up to HT_MAX_CPUS CPUs; every vCPU thread of its
 * map, and as many that ended since the block before. More is a crafted
 * file.
 */
#define HT_READER_MAX_EXITS_SERIES (HT_EXIT_MAX_SERIES + HT_MAX_CPUS * HT_EXIT_CACHE_WAYS)
#define HT_READER_MAX_EXITS_THREADS (2u * HT_MAX_VCPU_THREADS)
/* Causes: every one the BPF map can hold (it never forgets one while a recording runs). */
#define HT_READER_MAX_EXITS_CAUSES HT_EXIT_MAX_CAUSES

typedef void (*ht_exits_visitor)(void *ctx, const struct ht_exits_header *h, const struct ht_exit_series_rec *series,
				 const struct ht_vcpu_wait_rec *threads);
void ht_reader_set_exits_visitor(struct ht_reader *r, ht_exits_visitor fn, void *ctx);
/*
 * The causes of exits an EXITS block holds (version 6 on): fn is called
 * after the block's exits visitor, if the block has any (pointer valid
 * during the call only). Each cause's counts and times are checked against
 * its buckets.
 */
typedef void (*ht_exit_causes_visitor)(void *ctx, const struct ht_exits_header *h,
				       const struct ht_exit_cause_rec *causes);
void ht_reader_set_exit_causes_visitor(struct ht_reader *r, ht_exit_causes_visitor fn, void *ctx);
/* For a visitor's messages: the byte where the block it is given starts. */
unsigned long long ht_reader_block_at(const struct ht_reader *r);
/* EXITS blocks read so far. */
unsigned long long ht_reader_exits_blocks(const struct ht_reader *r);
void ht_reader_close(struct ht_reader *r);

#endif
