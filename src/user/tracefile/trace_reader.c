// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Trace file reader: validates the header, then each block's bounds and CRC32. */
#include "tracefile/trace_reader.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "tracefile/block_codec.h"
#include "tracefile/crc32.h"
#include "tracefile/exits_restarts.h"
#include "common/grow.h"
#include "common/hashmap.h"

#define MAX_BLOCK_SERIES HT_READER_MAX_EXITS_SERIES
#define MAX_BLOCK_THREADS HT_READER_MAX_EXITS_THREADS
/*
 * A series is read from the BPF side while CPUs count into it: each of its
 * parts (one per CPU) may show an exit in its slot whose count, min, max or
 * total has not been written yet. Differences up to one exit per CPU are
 * such a read; more is a damaged or crafted block.
 */
#define TORN_EXITS ((unsigned __int128)HT_MAX_CPUS)

struct ht_reader {
	int fd;
	struct ht_file_header hdr;
	struct ht_read_status st;
	unsigned char *payload; /* current block as stored */
	size_t payload_cap;
	struct ht_record *decoded; /* DELTA_ZLIB blocks, decoded */
	void *scratch;
	size_t decoded_cap;        /* records */
	const struct ht_record *records; /* the current block's records */
	unsigned int count, next; /* records in the block, next to deliver */
	bool done;
	struct ht_identity *ids;  /* from IDENTITY blocks, in file order */
	size_t nids, ids_cap;
	struct ht_hashmap id_index; /* pid << 32 | tid -> its latest identity's index in ids */
	struct ht_hashmap vm_index; /* pid -> the index of its latest identity with a name */
	ht_exits_visitor exits_fn; /* EXITS blocks go here as they are read */
	void *exits_ctx;
	ht_exit_causes_visitor causes_fn; /* and their causes */
	void *causes_ctx;
	ht_switch_visitor switch_fn; /* switches of vCPU threads go here as they are read */
	void *switch_ctx;
	ht_boot_exit_visitor boot_fn; /* and exits of booting VMs */
	void *boot_ctx;
	ht_wakeup_visitor wakeup_fn; /* and wake-ups of halted vCPU threads */
	void *wakeup_ctx;
	ht_irq_visitor irq_fn; /* and interrupt deliveries */
	void *irq_ctx;
	struct ht_boot_vm_rec *boot_vms; /* from BOOT blocks: each VM's latest numbers */
	size_t nboot_vms, boot_vms_cap;
	struct ht_hashmap boot_index; /* pid -> its index in boot_vms */
	unsigned long long exits_blocks;
	__u64 exits_time_ns;       /* the time of the last EXITS block */
	unsigned long long block_at; /* where the block being visited starts */
	struct ht_vcpu_wait_rec *exits_threads; /* a version 3-8 block's thread records, widened */
	struct ht_exits_restarts restarts; /* version 16 on: the keys that started again from zero */
};

/* Reads exactly len bytes unless the file ends first; returns bytes read or -errno. */
static ssize_t read_full(int fd, void *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = read(fd, (unsigned char *)buf + got, len - got);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

int ht_reader_open(const char *path, struct ht_reader **out, char *err, size_t errlen)
{
	struct ht_reader *r;
	struct stat sb;
	ssize_t n;
	int ret;

	r = calloc(1, sizeof(*r));
	if (!r) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	ht_hashmap_init(&r->boot_index, ht_hash_long, ht_equal_long, NULL);
	ht_hashmap_init(&r->id_index, ht_hash_long, ht_equal_long, NULL);
	ht_hashmap_init(&r->vm_index, ht_hash_long, ht_equal_long, NULL);
	ht_exits_restarts_init(&r->restarts);
	/* O_NONBLOCK: opening a FIFO must not wait for a writer that may never come. */
	r->fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (r->fd < 0) {
		ret = -errno;
		snprintf(err, errlen, "cannot open %s: %s", path, strerror(-ret));
		free(r);
		return ret;
	}
	if (fstat(r->fd, &sb) != 0) {
		ret = -errno;
		snprintf(err, errlen, "cannot read %s: %s", path, strerror(-ret));
		close(r->fd);
		free(r);
		return ret;
	}
	if (!S_ISREG(sb.st_mode)) {
		snprintf(err, errlen, "%s is %s, not a trace file: give the path of a regular file", path,
			 S_ISDIR(sb.st_mode) ? "a directory" : S_ISFIFO(sb.st_mode) ? "a FIFO" :
			 S_ISCHR(sb.st_mode) ? "a character device" : S_ISBLK(sb.st_mode) ? "a block device" :
			 S_ISSOCK(sb.st_mode) ? "a socket" : "a special file");
		close(r->fd);
		free(r);
		return -EINVAL;
	}
	r->st.file_bytes = (unsigned long long)sb.st_size;
	n = read_full(r->fd, &r->hdr, sizeof(r->hdr));
	ret = -EINVAL;
	if (n < 0) {
		ret = (int)n;
		snprintf(err, errlen, "cannot read %s: %s", path, strerror(-ret));
	} else if (n == 0) {
		snprintf(err, errlen, "%s is empty: not a hypertrace-bpf trace file", path);
	} else if ((size_t)n < sizeof(HT_FILE_MAGIC) - 1 ||
		   memcmp(r->hdr.magic, HT_FILE_MAGIC, sizeof(r->hdr.magic)) != 0) {
		snprintf(err, errlen, "%s is not a hypertrace-bpf trace file (bad magic)", path);
	} else if ((size_t)n < sizeof(r->hdr)) {
		snprintf(err, errlen, "%s is truncated inside its header (%zd of %zu bytes): nothing to read",
			 path, n, sizeof(r->hdr));
	} else if (r->hdr.version > HT_FILE_VERSION) {
		snprintf(err, errlen, "%s has trace format version %u, newer than this hypertrace-bpf reads (%u): upgrade hypertrace-bpf",
			 path, r->hdr.version, HT_FILE_VERSION);
	} else if (r->hdr.version == 0 ||
		   r->hdr.header_crc32 != ht_crc32(0, &r->hdr,
						       offsetof(struct ht_file_header, header_crc32))) {
		snprintf(err, errlen, "%s has a damaged header (checksum mismatch): the file is corrupt", path);
	} else if (r->hdr.header_size != HT_FILE_HEADER_SIZE ||
		   r->hdr.record_size != sizeof(struct ht_record)) {
		snprintf(err, errlen, "%s has header size %u / record size %u, expected %u / %zu: the file is corrupt",
			 path, r->hdr.header_size, r->hdr.record_size, HT_FILE_HEADER_SIZE,
			 sizeof(struct ht_record));
	} else {
		r->st.good_bytes = sizeof(r->hdr);
		/* Strings end within their fields whatever a crafted header holds. */
		r->hdr.kernel_release[sizeof(r->hdr.kernel_release) - 1] = '\0';
		r->hdr.cpu_vendor[sizeof(r->hdr.cpu_vendor) - 1] = '\0';
		*out = r;
		return 0;
	}
	close(r->fd);
	free(r);
	return ret;
}

const struct ht_file_header *ht_reader_header(const struct ht_reader *r)
{
	return &r->hdr;
}

const struct ht_read_status *ht_reader_status(const struct ht_reader *r)
{
	return &r->st;
}

__attribute__((format(printf, 3, 4)))
static void stop(struct ht_reader *r, bool damaged, const char *fmt, ...)
{
	va_list ap;

	r->done = true;
	r->st.damaged = damaged;
	va_start(ap, fmt);
	vsnprintf(r->st.reason, sizeof(r->st.reason), fmt, ap);
	va_end(ap);
}

/*
 * Appends the identities of the IDENTITY block in r->payload; false if out
 * of memory. Each costs its 112 bytes of the file: memory follows the file.
 * A thread or process named again (its id came back as a new one) is
 * found by its latest identity from then on.
 */
static bool keep_identities(struct ht_reader *r, __u32 n)
{
	if (n == 0)
		return true;
	if (HT_GROW(r->ids, r->ids_cap, r->nids + n, 16))
		return false;
	memcpy(r->ids + r->nids, r->payload, (size_t)n * sizeof(*r->ids));
	for (size_t i = r->nids, end = r->nids + n; i < end; i++) {
		struct ht_identity *id = &r->ids[i];

		/* Strings from the file: always terminated here. */
		id->process_name[sizeof(id->process_name) - 1] = '\0';
		id->thread_name[sizeof(id->thread_name) - 1] = '\0';
		id->vm_name[sizeof(id->vm_name) - 1] = '\0';
		if (ht_hashmap_insert(&r->id_index, (long)((__u64)id->pid << 32 | id->tid), (long)i, HT_HASHMAP_SET, NULL,
				      NULL) ||
		    ((id->vm_name[0] || id->process_name[0]) &&
		     ht_hashmap_insert(&r->vm_index, (long)id->pid, (long)i, HT_HASHMAP_SET, NULL, NULL)))
			return false;
		r->nids++;
	}
	return true;
}

const struct ht_identity *ht_reader_identity(struct ht_reader *r, __u32 pid, __u32 tid)
{
	long i;

	return ht_hashmap_find(&r->id_index, (long)((__u64)pid << 32 | tid), &i) ? &r->ids[i] : NULL;
}

const char *ht_reader_vm_name(void *reader, __u32 pid)
{
	struct ht_reader *r = reader;
	long i;

	if (!ht_hashmap_find(&r->vm_index, (long)pid, &i))
		return NULL;
	return r->ids[i].vm_name[0] ? r->ids[i].vm_name : r->ids[i].process_name;
}

const char *ht_reader_thread_name(void *reader, __u32 pid, __u32 tid)
{
	const struct ht_identity *id = ht_reader_identity(reader, pid, tid);

	return id && id->thread_name[0] ? id->thread_name : NULL;
}

/* The numbers of one series as a recording can write them (see TORN_EXITS); else why not into why. */
static bool series_ok(const struct ht_exit_series_rec *rec, char *why, size_t len)
{
	const struct ht_exit_hist *h = &rec->h;
	unsigned __int128 slots = 0, count = h->count;
	int low = -1, high = -1;

	for (int k = 0; k < HT_EXIT_SLOTS; k++) {
		slots += h->slots[k];
		if (h->slots[k]) {
			low = low < 0 ? k : low;
			high = k;
		}
	}
	if (slots > count + TORN_EXITS || count > slots + TORN_EXITS) {
		snprintf(why, len, "a series counts %llu exits but its buckets hold %.0f", (unsigned long long)h->count,
			 (double)slots);
		return false;
	}
	if (h->count && h->min_ns > h->max_ns) {
		snprintf(why, len, "a series' shortest exit (%llu ns) is longer than its longest (%llu ns)",
			 (unsigned long long)h->min_ns, (unsigned long long)h->max_ns);
		return false;
	}
	/* Every exit counted lies in a bucket: the total is within count times the bounds of the outer ones. */
	unsigned __int128 most = high < 0 ? 0 : (count + TORN_EXITS) * (high >= HT_EXIT_SLOTS - 1 ? UINT64_MAX : (2ull << high) - 1);
	unsigned __int128 least = low <= 0 || count <= TORN_EXITS ? 0 : (count - TORN_EXITS) * (1ull << low);
	if (h->total_ns > most || h->total_ns < least) {
		snprintf(why, len, "a series' time in the host (%llu ns) does not fit its %llu exits in buckets %d to %d",
			 (unsigned long long)h->total_ns, (unsigned long long)h->count, low, high);
		return false;
	}
	return true;
}

/* The highest bucket of slots that holds an exit; -1 if none does. */
static int highest_slot(const __u64 slots[HT_EXIT_SLOTS])
{
	for (int k = HT_EXIT_SLOTS; k-- > 0;)
		if (slots[k])
			return k;
	return -1;
}

/*
 * Every exit of a histogram lies in a bucket, so its summed time is at most
 * its count (plus the torn exits of a read) times the upper bound of its
 * highest bucket.
 */
static unsigned __int128 most_time(__u64 count, int high)
{
	return high < 0 ? 0 : ((unsigned __int128)count + TORN_EXITS) * (high >= HT_EXIT_SLOTS - 1 ? UINT64_MAX : (2ull << high) - 1);
}

/* A cause's numbers as a recording can write them: its buckets hold its exits and their time (see TORN_EXITS). */
static bool cause_ok(const struct ht_exit_cause_rec *rec, char *why, size_t len)
{
	const struct ht_exit_cause_hist *h = &rec->h;
	unsigned __int128 kvm = 0, vmm = 0;
	int kvm_high = highest_slot(h->kvm_slots), vmm_high = highest_slot(h->vmm_slots);

	for (int k = 0; k < HT_EXIT_SLOTS; k++) {
		kvm += h->kvm_slots[k];
		vmm += h->vmm_slots[k];
	}
	if (kvm > h->count + TORN_EXITS || h->count > kvm + TORN_EXITS || vmm > h->vmm_count + TORN_EXITS ||
	    h->vmm_count > vmm + TORN_EXITS || h->vmm_count > h->count + TORN_EXITS) {
		snprintf(why, len, "a cause counts %llu exits (%llu to user space) but its buckets hold %.0f (%.0f)",
			 (unsigned long long)h->count, (unsigned long long)h->vmm_count, (double)kvm, (double)vmm);
		return false;
	}
	if (h->kvm_ns > most_time(h->count, kvm_high) || h->vmm_ns > most_time(h->vmm_count, vmm_high)) {
		bool kvm_over = h->kvm_ns > most_time(h->count, kvm_high);

		snprintf(why, len, "a cause's time in %s (%llu ns) does not fit its %llu exits in buckets up to %d",
			 kvm_over ? "KVM" : "the VMM", (unsigned long long)(kvm_over ? h->kvm_ns : h->vmm_ns),
			 (unsigned long long)(kvm_over ? h->count : h->vmm_count), kvm_over ? kvm_high : vmm_high);
		return false;
	}
	if (rec->key.kind == HT_CAUSE_NONE || rec->key.kind >= HT_CAUSE_NKINDS) {
		snprintf(why, len, "a cause of kind %u, which no recording writes", (unsigned int)rec->key.kind);
		return false;
	}
	return true;
}

/*
 * A vCPU thread's account as a recording writes it (version 5 on): it ends
 * no earlier than it starts, and its states add up to its time exactly
 * (include/hypertrace/trace_file.h). Older records have no account (zero).
 */
static bool account_ok(const struct ht_vcpu_wait_rec *rec, char *why, size_t len)
{
	const struct ht_vcpu_account *a = &rec->a;
	unsigned __int128 sum = 0;

	if (a->as_of_ns < a->start_ns) {
		snprintf(why, len, "the account of vCPU thread %u ends (%llu ns) before it starts (%llu ns)", rec->w.tid,
			 (unsigned long long)a->as_of_ns, (unsigned long long)a->start_ns);
		return false;
	}
	for (int k = 0; k < HT_VCPU_NSTATES; k++)
		sum += a->state_ns[k];
	if (sum != a->as_of_ns - a->start_ns) {
		snprintf(why, len, "the states of vCPU thread %u add up to %.0f ns, not to its %llu ns from start to as_of",
			 rec->w.tid, (double)sum, (unsigned long long)(a->as_of_ns - a->start_ns));
		return false;
	}
	return true;
}

/* A vCPU thread's halts as a recording counts them (version 9 on): each kind is a part of the halts. */
static bool halts_ok(const struct ht_vcpu_wait_rec *rec, char *why, size_t len)
{
	const struct ht_vcpu_halts *h = &rec->h;

	if (h->caught > h->polled || (unsigned __int128)h->polled + h->poll_unknown > h->halts ||
	    (unsigned __int128)h->caught + h->slept > h->halts || h->slept_poll_ns > h->slept_ns) {
		snprintf(why, len,
			 "the halts of vCPU thread %u do not add up: %llu halts, %llu polled, %u not known, %llu caught, %llu slept (%llu ns, %llu of it polling)",
			 rec->w.tid, (unsigned long long)h->halts, (unsigned long long)h->polled, h->poll_unknown,
			 (unsigned long long)h->caught, (unsigned long long)h->slept, (unsigned long long)h->slept_ns,
			 (unsigned long long)h->slept_poll_ns);
		return false;
	}
	for (int c = 0; c < HT_WAKE_NCLASSES; c++) {
		const struct ht_vcpu_wake_hist *k = &h->wake.c[c];

		if (k->wait_ns > k->total_ns || k->max_ns > k->total_ns) {
			snprintf(why, len, "the wake-ups of vCPU thread %u do not add up: %llu ns waiting and %llu ns the longest of %llu ns",
				 rec->w.tid, (unsigned long long)k->wait_ns, (unsigned long long)k->max_ns,
				 (unsigned long long)k->total_ns);
			return false;
		}
	}
	return true;
}

/*
 * A vCPU thread's interrupts as a recording counts them (version 13 on):
 * each class's parts within its time, and no more endings (delivered,
 * overlapped, stale) than acceptances. Older records have none (zero).
 */
static bool irqs_ok(const struct ht_vcpu_wait_rec *rec, char *why, size_t len)
{
	const struct ht_vcpu_irqs *i = &rec->i;
	unsigned __int128 ended = (unsigned __int128)i->overlapped + i->stale;

	for (int c = 0; c < HT_IRQ_NCLASSES; c++) {
		const struct ht_vcpu_wake_hist *k = &i->c[c];

		if ((unsigned __int128)k->wait_ns + i->woken_ns[c] > k->total_ns || k->max_ns > k->total_ns) {
			snprintf(why, len,
				 "the interrupts of vCPU thread %u do not add up: %llu ns waiting, %llu ns waking and %llu ns the longest of %llu ns",
				 rec->w.tid, (unsigned long long)k->wait_ns, (unsigned long long)i->woken_ns[c],
				 (unsigned long long)k->max_ns, (unsigned long long)k->total_ns);
			return false;
		}
		for (int s = 0; s < HT_WAKE_SLOTS; s++)
			ended += k->slots[s];
	}
	if (ended > i->accepted) {
		snprintf(why, len, "vCPU thread %u has more interrupts delivered, overlapped and stale (%.0f) than accepted (%llu)",
			 rec->w.tid, (double)ended, (unsigned long long)i->accepted);
		return false;
	}
	return true;
}

/*
 * A vCPU thread's timer wake-ups from their due time (version 15 on): the
 * firing and the wait within each one's time. Older records have none.
 */
static bool timer_due_ok(const struct ht_vcpu_wait_rec *rec, char *why, size_t len)
{
	const struct ht_vcpu_timer_due *d = &rec->due;

	if ((unsigned __int128)d->h.wait_ns + d->fire_ns > d->h.total_ns || d->h.max_ns > d->h.total_ns) {
		snprintf(why, len,
			 "the timer wake-ups of vCPU thread %u do not add up: %llu ns firing, %llu ns waiting and %llu ns the longest of %llu ns",
			 rec->w.tid, (unsigned long long)d->fire_ns, (unsigned long long)d->h.wait_ns,
			 (unsigned long long)d->h.max_ns, (unsigned long long)d->h.total_ns);
		return false;
	}
	return true;
}

/* What a reader must not take from an EXITS block whose CRC is right: time going back, impossible series or accounts. */
static bool exits_block_ok(const struct ht_reader *r, const struct ht_exits_header *eh, const unsigned char *p,
			   const unsigned char *threads, size_t thread_rec, char *why, size_t len)
{
	if (eh->time_ns < r->hdr.start_monotonic_ns || eh->time_ns < r->exits_time_ns) {
		snprintf(why, len, "its time (%llu ns) is before the %s", (unsigned long long)eh->time_ns,
			 eh->time_ns < r->hdr.start_monotonic_ns ? "recording's start" : "block before");
		return false;
	}
	for (__u32 i = 0; i < eh->nseries; i++) {
		struct ht_exit_series_rec rec;

		memcpy(&rec, p + (size_t)i * sizeof(rec), sizeof(rec));
		if (!series_ok(&rec, why, len))
			return false;
	}
	for (__u32 i = 0; r->hdr.version >= 5 && i < eh->nthreads; i++) {
		struct ht_vcpu_wait_rec rec = { 0 };

		memcpy(&rec, threads + (size_t)i * thread_rec, thread_rec);
		if (!account_ok(&rec, why, len) || !halts_ok(&rec, why, len) || !irqs_ok(&rec, why, len) ||
		    !timer_due_ok(&rec, why, len))
			return false;
	}
	return true;
}

/* The block's causes, after its series and threads (version 6 on). */
static bool causes_ok(const struct ht_exits_header *eh, const unsigned char *causes, char *why, size_t len)
{
	for (__u32 i = 0; i < eh->ncauses; i++) {
		struct ht_exit_cause_rec rec;

		memcpy(&rec, causes + (size_t)i * sizeof(rec), sizeof(rec));
		if (!cause_ok(&rec, why, len))
			return false;
	}
	return true;
}

/* Whether a block header is one this reader knows, with sizes that agree. */
static bool block_header_ok(const struct ht_block_header *bh)
{
	bool raw = bh->encoding == HT_ENCODING_RAW;

	if (bh->magic != HT_BLOCK_MAGIC ||
	    (!raw && (bh->encoding != HT_ENCODING_DELTA_ZLIB || bh->type != HT_BLOCK_RECORDS)) ||
	    bh->payload_len > HT_BLOCK_MAX_PAYLOAD || bh->raw_len > HT_BLOCK_MAX_PAYLOAD ||
	    (raw && bh->raw_len != bh->payload_len))
		return false;
	switch (bh->type) {
	case HT_BLOCK_RECORDS:
		return (__u64)bh->item_count * sizeof(struct ht_record) == bh->raw_len;
	case HT_BLOCK_TRAILER:
		return bh->payload_len == sizeof(struct ht_trailer);
	case HT_BLOCK_IDENTITY:
		return (__u64)bh->item_count * sizeof(struct ht_identity) == bh->payload_len;
	case HT_BLOCK_EXITS:
		return bh->payload_len >= HT_EXITS_HEADER_V5_SIZE;
	case HT_BLOCK_BOOT:
		return (__u64)bh->item_count * sizeof(struct ht_boot_vm_rec) == bh->payload_len;
	default:
		return false;
	}
}

/*
 * A BOOT block: each VM's numbers replace its earlier ones. They are
 * cumulative, so a VM's going down is a damaged or crafted block; after a
 * row that says the VM ended, its pid is a new process (the pid came back),
 * a VM of its own. The table grows by at most the block's items, and a
 * lookup is a hash probe: time and memory bounded by the file's size.
 */
static bool keep_boot_vms(struct ht_reader *r, const struct ht_block_header *bh, unsigned long long at)
{
	const unsigned char *in = r->payload;

	for (__u32 i = 0; i < bh->item_count; i++) {
		struct ht_boot_vm_rec v;
		long k;

		memcpy(&v, in + (size_t)i * sizeof(v), sizeof(v));
		if (ht_hashmap_find(&r->boot_index, v.pid, &k) && !(r->boot_vms[k].flags & HT_BOOT_VM_F_ENDED)) {
			const struct ht_boot_vm *old = &r->boot_vms[k].vm;

			if (v.vm.recorded < old->recorded || v.vm.over < old->over || v.vm.lost < old->lost) {
				stop(r, true, "a BOOT block at byte %llu has numbers of VM process %u below its earlier ones",
				     at, (unsigned int)v.pid);
				return false;
			}
		} else {
			k = (long)r->nboot_vms;
			if (HT_GROW(r->boot_vms, r->boot_vms_cap, r->nboot_vms + 1, 16) ||
			    ht_hashmap_insert(&r->boot_index, v.pid, k, HT_HASHMAP_SET, NULL, NULL)) {
				stop(r, true, "out of memory for the booting VMs at byte %llu", at);
				return false;
			}
			r->nboot_vms++;
		}
		r->boot_vms[k] = v;
	}
	return true;
}

/* The end of the file, where a block header would start: whether it ends as a recording does. */
static void end_of_blocks(struct ht_reader *r, unsigned long long at)
{
	/* Records of every kind: each takes one place in a RECORDS block. */
	unsigned long long read_so_far =
		r->st.records + r->st.vcpu_switches + r->st.boot_exits + r->st.vcpu_wakeups + r->st.vcpu_irqs;

	if (!r->st.has_trailer)
		stop(r, false, "no trailer after byte %llu: the recording did not end cleanly", at);
	else if (r->st.trailer.records != read_so_far)
		/* Every block checked out, so blocks were removed, added or the trailer replaced. */
		stop(r, true, "the trailer counts %llu records but the file holds %llu: the file was altered",
		     (unsigned long long)r->st.trailer.records, read_so_far);
	else
		r->done = true;
}

/* The block's payload, read whole and checked against its CRC32. */
static bool read_payload(struct ht_reader *r, const struct ht_block_header *bh, unsigned long long at)
{
	ssize_t n;

	if (bh->payload_len > r->payload_cap) {
		unsigned char *p = realloc(r->payload, bh->payload_len);

		if (!p) {
			stop(r, true, "out of memory for the block at byte %llu", at);
			return false;
		}
		r->payload = p;
		r->payload_cap = bh->payload_len;
	}
	n = read_full(r->fd, r->payload, bh->payload_len);
	if (n < 0 || (size_t)n < bh->payload_len) {
		stop(r, true, "block at byte %llu is truncated (%llu payload bytes missing)", at,
		     bh->payload_len - (unsigned long long)(n < 0 ? 0 : n));
		return false;
	}
	if (ht_crc32(0, r->payload, bh->payload_len) != bh->crc32) {
		stop(r, true, "block at byte %llu fails its CRC32 check", at);
		return false;
	}
	return true;
}

/* An EXITS block in the payload: checked, widened to this version's thread records, handed to the callbacks. */
static bool load_exits_block(struct ht_reader *r, const struct ht_block_header *bh, unsigned long long at)
{
	struct ht_exits_header eh = { 0 };
	/*
	 * Thread records grew in versions 5 (the account), 9 (the halts), 10
	 * (their wake-ups), 12 (the slept ones' polling), 13 (the interrupts)
	 * and 15 (the timer wake-ups from their due time); older ones are read
	 * into the new layout.
	 */
	size_t thread_rec = r->hdr.version >= 15  ? sizeof(struct ht_vcpu_wait_rec)
			    : r->hdr.version >= 13 ? HT_VCPU_WAIT_REC_V14_SIZE
			    : r->hdr.version >= 12 ? HT_VCPU_WAIT_REC_V12_SIZE
			    : r->hdr.version >= 10 ? HT_VCPU_WAIT_REC_V11_SIZE
			    : r->hdr.version >= 9 ? HT_VCPU_WAIT_REC_V9_SIZE
			    : r->hdr.version >= 5 ? HT_VCPU_WAIT_REC_V8_SIZE
						  : HT_VCPU_WAIT_REC_V4_SIZE;
	/* The header grew in version 6 (lost_causes; the causes follow the threads) and 7 (causes_not_theirs). */
	size_t header = r->hdr.version >= 7   ? sizeof(eh)
			: r->hdr.version >= 6 ? HT_EXITS_HEADER_V6_SIZE
					      : HT_EXITS_HEADER_V5_SIZE;
	char why[160];

	if (bh->payload_len < header) {
		stop(r, true, "exits block at byte %llu does not add up", at);
		return false;
	}
	memcpy(&eh, r->payload, header);
	if (r->hdr.version < 6)
		eh.ncauses = 0; /* reserved, 0 */
	if ((__u64)eh.nseries + eh.nthreads + eh.ncauses != bh->item_count ||
	    header + (__u64)eh.nseries * sizeof(struct ht_exit_series_rec) + (__u64)eh.nthreads * thread_rec +
			    (__u64)eh.ncauses * sizeof(struct ht_exit_cause_rec) != bh->payload_len) {
		stop(r, true, "exits block at byte %llu does not add up", at);
		return false;
	}
	if (eh.nseries > MAX_BLOCK_SERIES || eh.nthreads > MAX_BLOCK_THREADS || eh.ncauses > HT_READER_MAX_EXITS_CAUSES) {
		stop(r, true, "exits block at byte %llu holds %u series, %u vCPU threads and %u causes, more than the %u, %u and %u a recording can hold: the file is corrupt",
		     at, eh.nseries, eh.nthreads, eh.ncauses, MAX_BLOCK_SERIES, MAX_BLOCK_THREADS,
		     HT_READER_MAX_EXITS_CAUSES);
		return false;
	}
	unsigned char *series = r->payload + header;
	const unsigned char *threads = series + (size_t)eh.nseries * sizeof(struct ht_exit_series_rec);
	unsigned char *causes = series + (size_t)eh.nseries * sizeof(struct ht_exit_series_rec) +
				(size_t)eh.nthreads * thread_rec;

	if (!exits_block_ok(r, &eh, series, threads, thread_rec, why, sizeof(why)) || !causes_ok(&eh, causes, why, sizeof(why))) {
		stop(r, true, "exits block at byte %llu: %s: the file is corrupt", at, why);
		return false;
	}
	r->exits_time_ns = eh.time_ns;
	/* Checked as written; handed on top of what a key had before it started again from zero. */
	if (r->hdr.version >= 16 &&
	    ht_exits_restarts_apply(&r->restarts, (struct ht_exit_series_rec *)series, eh.nseries,
				    (struct ht_exit_cause_rec *)causes, eh.ncauses)) {
		stop(r, true, "out of memory for the exits block at byte %llu", at);
		return false;
	}
	if (thread_rec != sizeof(struct ht_vcpu_wait_rec) && eh.nthreads) {
		struct ht_vcpu_wait_rec *widened = calloc(eh.nthreads, sizeof(*widened));

		if (!widened) {
			stop(r, true, "out of memory for the exits block at byte %llu", at);
			return false;
		}
		for (__u32 i = 0; i < eh.nthreads; i++) {
			memcpy(&widened[i].w, threads + (size_t)i * thread_rec, thread_rec);
			if (thread_rec < HT_VCPU_WAIT_REC_V9_SIZE)
				widened[i].h.poll_ns = HT_HALT_POLL_NS_UNKNOWN; /* none recorded */
			if (thread_rec < HT_VCPU_WAIT_REC_V12_SIZE)
				widened[i].w.pad1 |= HT_VCPU_WAIT_F_NO_SLEPT_POLL;
			if (thread_rec < HT_VCPU_WAIT_REC_V14_SIZE)
				widened[i].w.pad1 |= HT_VCPU_WAIT_F_NO_IRQS;
			widened[i].w.pad1 |= HT_VCPU_WAIT_F_NO_TIMER_DUE;
		}
		free(r->exits_threads);
		r->exits_threads = widened;
		threads = (const unsigned char *)widened;
	}
	r->exits_blocks++;
	r->block_at = at;
	if (r->exits_fn)
		r->exits_fn(r->exits_ctx, &eh, (const struct ht_exit_series_rec *)series,
			    (const struct ht_vcpu_wait_rec *)threads);
	if (r->causes_fn && eh.ncauses)
		r->causes_fn(r->causes_ctx, &eh, (const struct ht_exit_cause_rec *)causes);
	return true;
}

/* A RECORDS block in the payload: r->records points at its records, decoded if compressed. */
static bool load_records_block(struct ht_reader *r, const struct ht_block_header *bh, unsigned long long at)
{
	r->records = (const struct ht_record *)r->payload;
	if (bh->encoding == HT_ENCODING_RAW)
		return true;
	if (bh->item_count > r->decoded_cap) {
		free(r->decoded);
		free(r->scratch);
		r->decoded = malloc(bh->raw_len);
		r->scratch = malloc(bh->raw_len);
		r->decoded_cap = r->decoded && r->scratch ? bh->item_count : 0;
		if (!r->decoded_cap) {
			stop(r, true, "out of memory for the block at byte %llu", at);
			return false;
		}
	}
	if (ht_block_decode(r->payload, bh->payload_len, bh->item_count, r->decoded, r->scratch)) {
		stop(r, true, "compressed block at byte %llu does not decode", at);
		return false;
	}
	r->records = r->decoded;
	return true;
}

/* Loads the next records block (reading the other blocks on the way); returns false when reading is over. */
static bool load_block(struct ht_reader *r)
{
	struct ht_block_header bh;
	unsigned long long at = r->st.good_bytes;
	ssize_t n;

	for (;;) {
		n = read_full(r->fd, &bh, sizeof(bh));
		if (n == 0) {
			end_of_blocks(r, at);
			return false;
		}
		if (n < 0 || (size_t)n < sizeof(bh)) {
			stop(r, true, "truncated block header at byte %llu", at);
			return false;
		}
		if (!block_header_ok(&bh)) {
			stop(r, true, "bad block header at byte %llu", at);
			return false;
		}
		if (r->st.has_trailer) {
			stop(r, true, "data after the trailer at byte %llu", at);
			return false;
		}
		if (!read_payload(r, &bh, at))
			return false;
		switch (bh.type) {
		case HT_BLOCK_TRAILER:
			memcpy(&r->st.trailer, r->payload, sizeof(r->st.trailer));
			r->st.has_trailer = true;
			break;
		case HT_BLOCK_EXITS:
			if (!load_exits_block(r, &bh, at))
				return false;
			break;
		case HT_BLOCK_BOOT:
			if (!keep_boot_vms(r, &bh, at))
				return false;
			break;
		case HT_BLOCK_IDENTITY:
			if (!keep_identities(r, bh.item_count)) {
				stop(r, true, "out of memory for the identities at byte %llu", at);
				return false;
			}
			break;
		default: /* HT_BLOCK_RECORDS */
			if (!load_records_block(r, &bh, at))
				return false;
		}
		/* Only a block that is whole, checked and decoded counts as read. */
		at += sizeof(bh) + bh.payload_len;
		r->st.good_bytes = at;
		if (bh.type != HT_BLOCK_RECORDS || bh.item_count == 0)
			continue;
		r->count = bh.item_count;
		r->next = 0;
		return true;
	}
}

/*
 * A record that is not a hypercall's (its flags say which kind takes the
 * record's place): counted, and handed to its visitor if one is set (a
 * copy as its own type: the block's bytes are read as records). False for
 * a hypercall's record.
 */
static bool visit_other_record(struct ht_reader *r, const struct ht_record *item)
{
	union {
		struct ht_boot_exit boot;
		struct ht_vcpu_wakeup wakeup;
		struct ht_vcpu_irq irq;
		struct ht_vcpu_switch sw;
	} as;
	bool boot = item->flags & HT_REC_F_BOOT_EXIT, wakeup = !boot && (item->flags & HT_REC_F_VCPU_WAKEUP);
	bool irq = !boot && !wakeup && (item->flags & HT_REC_F_VCPU_IRQ);

	if (!boot && !wakeup && !irq && !(item->flags & HT_REC_F_VCPU_SWITCH))
		return false;
	if (boot)
		r->st.boot_exits++;
	else if (wakeup)
		r->st.vcpu_wakeups++;
	else if (irq)
		r->st.vcpu_irqs++;
	else
		r->st.vcpu_switches++;
	if (boot ? !r->boot_fn : wakeup ? !r->wakeup_fn : irq ? !r->irq_fn : !r->switch_fn)
		return true;
	memcpy(&as, item, sizeof(*item));
	if (boot)
		r->boot_fn(r->boot_ctx, &as.boot);
	else if (wakeup)
		r->wakeup_fn(r->wakeup_ctx, &as.wakeup);
	else if (irq)
		r->irq_fn(r->irq_ctx, &as.irq);
	else
		r->switch_fn(r->switch_ctx, &as.sw);
	return true;
}

int ht_reader_next(struct ht_reader *r, struct ht_record *rec)
{
	for (;;) {
		if (r->next == r->count) {
			if (r->done || !load_block(r))
				return 0;
			continue;
		}
		const struct ht_record *item = &r->records[r->next++];

		if (visit_other_record(r, item))
			continue;
		memcpy(rec, item, sizeof(*rec));
		r->st.records++;
		return 1;
	}
}

void ht_reader_set_boot_exit_visitor(struct ht_reader *r, ht_boot_exit_visitor fn, void *ctx)
{
	r->boot_fn = fn;
	r->boot_ctx = ctx;
}

const struct ht_boot_vm_rec *ht_reader_boot_vms(const struct ht_reader *r, size_t *n)
{
	*n = r->nboot_vms;
	return r->boot_vms;
}

void ht_reader_set_wakeup_visitor(struct ht_reader *r, ht_wakeup_visitor fn, void *ctx)
{
	r->wakeup_fn = fn;
	r->wakeup_ctx = ctx;
}

void ht_reader_set_irq_visitor(struct ht_reader *r, ht_irq_visitor fn, void *ctx)
{
	r->irq_fn = fn;
	r->irq_ctx = ctx;
}

void ht_reader_set_switch_visitor(struct ht_reader *r, ht_switch_visitor fn, void *ctx)
{
	r->switch_fn = fn;
	r->switch_ctx = ctx;
}

void ht_reader_set_exits_visitor(struct ht_reader *r, ht_exits_visitor fn, void *ctx)
{
	r->exits_fn = fn;
	r->exits_ctx = ctx;
}

void ht_reader_set_exit_causes_visitor(struct ht_reader *r, ht_exit_causes_visitor fn, void *ctx)
{
	r->causes_fn = fn;
	r->causes_ctx = ctx;
}

unsigned long long ht_reader_block_at(const struct ht_reader *r)
{
	return r->block_at;
}

unsigned long long ht_reader_exits_blocks(const struct ht_reader *r)
{
	return r->exits_blocks;
}

void ht_reader_close(struct ht_reader *r)
{
	if (!r)
		return;
	close(r->fd);
	free(r->payload);
	free(r->exits_threads);
	free(r->decoded);
	free(r->scratch);
	free(r->ids);
	free(r->boot_vms);
	ht_hashmap_clear(&r->boot_index);
	ht_hashmap_clear(&r->id_index);
	ht_hashmap_clear(&r->vm_index);
	ht_exits_restarts_free(&r->restarts);
	free(r);
}
