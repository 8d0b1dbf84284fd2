// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Writes the fuzzer's seed trace files with the real writer, so the seeds
 * follow the format: plain and compressed, with and without a trailer, empty,
 * several vCPUs and nrs, with exit statistics (series, vCPU accounts and
 * causes), with switches of vCPU threads, with wake-ups of halted vCPUs
 * and interrupt deliveries. Usage: write_seeds DIR;
 * write_seeds --decode DIR writes fuzz_decode's seeds instead.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "hypertrace/trace_file.h"
#include "tracefile/trace_writer.h"

/* Seeds of guest events (nr 1100..1106, include/hypertrace/guest.h) instead of nr 1000..1002. */
static int guest_events;

static struct ht_record record(unsigned int i)
{
	if (guest_events)
		/* Plausible packed fields: tids, CPUs, kernel addresses, comm bytes. */
		return (struct ht_record){
			.exit_ns = 5000000000ull + i * 1000ull,
			.a0 = i % 7 == 5 || i % 7 == 6 ? 0xffffffff81003000ull + (i / 14) * 0x400 : (__u64)(i % 5) << 32 | (i + 1) % 5,
			.a1 = (__u64)(i % 2) << 32 | 0x78787878, .a2 = 0x7273776f6b ^ ((__u64)(i % 2) << 32) ^ (i % 5),
			.a3 = 0x30, .guest_rip = 0xffffffffc0a01000ull, .nr = 1100 + i % 7, .exit_reason = 0x81,
			.exit_to_hcall_ns = 150, .hcall_to_entry_ns = 300, .host_pid = 4242, .host_tid = 4300 + i % 2,
			.vcpu_id = (__u16)(i % 2), .isa = HT_ISA_SVM,
		};
	return (struct ht_record){
		.exit_ns = 5000000000ull + i * 1000ull + (i % 5) * 37,
		.a0 = i, .a1 = 0x11, .a2 = ~(__u64)i, .a3 = 0x44,
		.guest_rip = 0x101e, .nr = 1000 + i % 3, .exit_reason = i % 2 ? 0x81 : 18,
		.exit_to_hcall_ns = 150 + i % 97, .hcall_to_entry_ns = 300 + (i * 7919) % 5000,
		.host_pid = 4242 + i % 2, .host_tid = 4300 + i % 4, .vcpu_id = (__u16)(i % 4),
		.exit_cpu = (__u16)(i % 2), .entry_cpu = (__u16)((i + 1) % 2),
		.isa = i % 2 ? HT_ISA_SVM : HT_ISA_VMX,
	};
}

/* start_realtime_ns of the header; 0 in a call means the fixed default. */
static __u64 seed_realtime;
/* Seeds with EXITS blocks (record --exits) next to the records. */
static int with_exits;
/* Seeds with switches of vCPU threads (record --vcpu-sched) among the records. */
static int with_switches;
/* With the exits of a boot (record --boot): a first entry, then one exit after each record. */
static int with_boot;
/* With a wake-up of a halted vCPU and an interrupt delivery (record --wakeups) after each record. */
static int with_wakeups;

/*
 * A switch of the vCPU thread of record i's (out or in) just after it, on
 * its exit CPU; out: preempted on even i, blocked (interruptible) on odd.
 */
static struct ht_record vcpu_switch(const struct ht_record *r, unsigned int i, __u32 kind)
{
	struct ht_vcpu_switch sw = { .time_ns = r->exit_ns + r->exit_to_hcall_ns + r->hcall_to_entry_ns + 10 + kind,
				     .kind = kind, .involuntary = kind == HT_SWITCH_OUT && i % 2 == 0,
				     .prev_state = kind == HT_SWITCH_OUT && i % 2, .other_tid = 77 + i % 3,
				     .other_pid = 77, .host_pid = r->host_pid, .host_tid = r->host_tid,
				     .vcpu_id = r->vcpu_id, .cpu = r->exit_cpu, .flags = HT_REC_F_VCPU_SWITCH };
	struct ht_record out;

	/* A host thread's name: 16 bytes, no NUL, an escape byte in one of them. */
	static const char names[2][17] = { "kw\x1b[31m\xff/1:2-evt", "kworker/1:2-evts" };

	memcpy(sw.other_comm, names[i % 3 != 0], 16);
	memcpy(&out, &sw, sizeof(out));
	return out;
}

/*
 * The boot exit after record r, the i-th: the four threads' exits walk the
 * phases (real mode, long mode low, the kernel, user space), with causes,
 * parts and one of each flag, as record --boot writes them.
 */
static struct ht_record boot_exit(const struct ht_record *r, unsigned int i)
{
	static const __u64 rips[4] = { 0xfff0, 0x1000000, 0xffffffff81000010ull, 0x401000 };
	static const __u8 modes[4] = { HT_BOOT_MODE_KNOWN, HT_BOOT_MODE_KNOWN | HT_BOOT_MODE_LMA,
				       HT_BOOT_MODE_KNOWN | HT_BOOT_MODE_LMA, HT_BOOT_MODE_KNOWN | HT_BOOT_MODE_LMA };
	__u64 done = r->exit_ns + r->exit_to_hcall_ns + r->hcall_to_entry_ns;
	struct ht_boot_exit be = { .exit_ns = done + 5, .entry_ns = done + 9, .guest_rip = rips[(i / 4) % 4],
				   .mode = modes[(i / 4) % 4], .reason = 0x7b, .kvm_ns = 3, .vmm_ns = 1,
				   .host_pid = r->host_pid, .host_tid = r->host_tid, .vcpu_id = r->vcpu_id,
				   .cpu = r->exit_cpu, .isa = HT_ISA_SVM, .flags = HT_REC_F_BOOT_EXIT };
	struct ht_record out;

	if (i < 4) {
		be.boot_flags = HT_BOOT_F_FIRST_ENTRY;
		be.exit_ns = be.entry_ns;
		be.guest_rip = 0;
		be.kvm_ns = be.vmm_ns = 0;
	} else if (i % 3 == 0) {
		be.boot_flags = HT_BOOT_F_CAUSE;
		be.cause_kind = HT_CAUSE_PIO;
		be.cause_value = 0x70 + i % 5;
		be.cause_detail = HT_CAUSE_DIR_OUT | 1u << 8;
	}
	memcpy(&out, &be, sizeof(out));
	return out;
}

/*
 * The wake-up (record --wakeups) after record r, the i-th, on its thread:
 * each class in turn (one no version knows), a vector or none, its wait
 * past its whole once, as a hostile file could have it.
 */
static struct ht_record wakeup_after(const struct ht_record *r, unsigned int i)
{
	__u64 done = r->exit_ns + r->exit_to_hcall_ns + r->hcall_to_entry_ns;
	/* Its timer due before the wake-up, after it (no recording writes that), or none. */
	struct ht_vcpu_wakeup w = { .entry_ns = done + 20, .wake_ns = done + 12,
				    .due_ns = i % 3 == 0 ? done + 7 : i % 3 == 1 ? UINT64_MAX : 0,
				    .wait_ns = i % 5 == 4 ? 99 : i % 3,
				    .vector = i % 4 == 1 ? HT_WAKE_VECTOR_NONE : 236 + i % 20, .timer_vector = 236,
				    .wake_class = i % 4, .host_pid = r->host_pid, .host_tid = r->host_tid,
				    .vcpu_id = r->vcpu_id, .cpu = r->exit_cpu, .flags = HT_REC_F_VCPU_WAKEUP };
	struct ht_record out;

	memcpy(&out, &w, sizeof(out));
	return out;
}

/*
 * The interrupt delivery (record --wakeups, format 14) after that wake-up:
 * accepted before the record's exit (so deliveries overlap), each class in
 * turn (one no version knows), parts past the whole once.
 */
static struct ht_record irq_after(const struct ht_record *r, unsigned int i)
{
	__u64 done = r->exit_ns + r->exit_to_hcall_ns + r->hcall_to_entry_ns;
	struct ht_vcpu_irq d = { .entry_ns = done + 21, .accept_ns = r->exit_ns - 900 - 300 * (i % 4),
				 .woken_ns = i % 2 ? 40 : 0, .wait_ns = i % 5 == 3 ? 1ull << 40 : 7,
				 .vector = i % 6 == 5 ? 300 : 32 + i * 7 % 200, .irq_class = i % 4,
				 .host_pid = r->host_pid, .host_tid = r->host_tid, .vcpu_id = r->vcpu_id, .cpu = r->exit_cpu,
				 .flags = HT_REC_F_VCPU_IRQ };
	struct ht_record out;

	memcpy(&out, &d, sizeof(out));
	return out;
}

/*
 * An EXITS block of the k-th interval: 3 series, 2 vCPU threads with their
 * accounts and 3 causes (one a hypercall nr past 2^53), cumulative, as a
 * recording writes them; the last one final.
 */
static int add_exits(struct ht_writer *w, unsigned int k, int final)
{
	struct {
		struct ht_exits_header h;
		struct ht_exit_series_rec s[3];
		struct ht_vcpu_wait_rec t[2];
		struct ht_exit_cause_rec c[3];
	} b;

	memset(&b, 0, sizeof(b));
	b.h = (struct ht_exits_header){ .time_ns = 5000000000ull + k * 500000000ull, .nseries = 3, .nthreads = 2,
					.ncauses = 3, .flags = final ? HT_EXITS_F_FINAL : 0 };
	for (unsigned int i = 0; i < 3; i++) {
		struct ht_exit_series_rec *r = &b.s[i];

		r->key = (struct ht_exit_key){ .pid = 4242 + i % 2, .vcpu = (__u16)(i % 2), .isa = i == 2 ? HT_ISA_VMX : HT_ISA_SVM,
					       .reason = i == 2 ? 30 : 0x7b + i };
		r->h.slots[9 + i] = 10 * (k + 1);
		r->h.slots[20] = k;
		r->h.count = 10 * (k + 1) + k;
		r->h.total_ns = r->h.count * 1000;
		r->h.min_ns = 512u << i;
		r->h.max_ns = k ? 1u << 20 : 1023u << i;
		r->in_host_at_end = final ? i : 0;
	}
	for (unsigned int i = 0; i < 2; i++)
		b.t[i].w = (struct ht_vcpu_wait){ .pid = 4242 + i, .tid = 4300 + i, .vcpu = (__u16)i,
						  .pad1 = final && i ? HT_VCPU_WAIT_F_GONE : 0, .wait_ns = 1000000ull * (k + 1),
						  .preempt_count = k, .preempt_ns = 500000ull * k, .voluntary_count = 3 * k,
						  .voluntary_ns = 7000000ull * k };
	for (unsigned int i = 0; i < 2; i++) {
		struct ht_vcpu_account *a = &b.t[i].a;

		/* Every state grows from block to block; they add up to the thread's time. */
		a->start_ns = 4000000000ull + i;
		a->as_of_ns = b.h.time_ns;
		a->state_ns[HT_VCPU_WAIT] = b.t[i].w.wait_ns;
		a->state_ns[HT_VCPU_KVM] = 2000000ull * (k + 1);
		a->state_ns[HT_VCPU_HALTED] = 100000000ull * k;
		a->state_ns[HT_VCPU_GUEST] = a->as_of_ns - a->start_ns - a->state_ns[HT_VCPU_WAIT] -
					     a->state_ns[HT_VCPU_KVM] - a->state_ns[HT_VCPU_HALTED];
	}
	for (unsigned int i = 0; i < 3; i++) {
		struct ht_exit_cause_rec *c = &b.c[i];
		static const __u8 kinds[3] = { HT_CAUSE_PIO, HT_CAUSE_MSR, HT_CAUSE_HYPERCALL };
		static const __u64 values[3] = { 0x3f8, 0x6e0, (1ull << 53) + 1 };

		c->key = (struct ht_exit_cause_key){ .pid = 4242 + i % 2, .reason = i == 0 ? 30 : 0x7b + i,
						     .isa = i == 0 ? HT_ISA_VMX : HT_ISA_SVM, .kind = kinds[i],
						     .detail = i == 0 ? HT_CAUSE_DIR_OUT | 1 << 8 : 0, .value = values[i] };
		c->h.count = c->h.kvm_slots[9] = 10 * (k + 1);
		c->h.kvm_ns = c->h.count * 600;
		c->h.vmm_count = c->h.vmm_slots[18] = i == 0 ? 10 * (k + 1) : 0;
		c->h.vmm_ns = c->h.vmm_count * 300000;
	}
	return ht_writer_add_block(w, HT_BLOCK_EXITS, &b, sizeof(b), 8);
}

static int write_seed(const char *dir, const char *name, unsigned int n, unsigned int encoding)
{
	struct ht_trailer t = { .records = n, .ringbuf_drops = 2, .superseded = 1,
				.end_monotonic_ns = 5000000000ull + n * 1000ull + 1,
				.end_realtime_ns = 1795318801000000000ull + n * 1000ull + 1001 };
	struct ht_file_header h;
	struct ht_writer *w;
	char path[512], err[256] = "";

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	/* Fixed identity and clocks: the same seeds on every machine. */
	ht_header_init(&h);
	snprintf(h.kernel_release, sizeof(h.kernel_release), "6.1.0-seed");
	if (with_switches)
		h.filter_flags |= HT_FILTER_F_VCPU_SCHED;
	if (with_boot)
		h.filter_flags |= HT_FILTER_F_BOOT;
	if (with_wakeups)
		h.filter_flags |= HT_FILTER_F_WAKEUPS;
	snprintf(h.cpu_vendor, sizeof(h.cpu_vendor), "AuthenticAMD");
	h.start_realtime_ns = seed_realtime ? seed_realtime : 1795318801000000000ull;
	h.start_monotonic_ns = 4999999000ull;
	h.filter_nr_count = guest_events ? 7 : 3;
	for (unsigned int k = 0; k < h.filter_nr_count; k++)
		h.filter_nr[k] = (guest_events ? 1100 : 1000) + k;
	if (ht_writer_open(path, true, &h, &w, err, sizeof(err)) || ht_writer_set_encoding(w, encoding)) {
		fprintf(stderr, "write_seeds: %s\n", err);
		return 1;
	}
	for (unsigned int i = 0; i < n; i++) {
		struct ht_record r = record(i);

		/* The first record of each of the 4 threads is named (IDENTITY blocks), as record does. */
		if (i < 4) {
			struct ht_identity id = { .first_seen_ns = r.exit_ns, .pid = r.host_pid, .tid = r.host_tid };

			snprintf(id.process_name, sizeof(id.process_name), "qemu-system-x86");
			snprintf(id.thread_name, sizeof(id.thread_name), "CPU %u/KVM", i);
			snprintf(id.vm_name, sizeof(id.vm_name), i % 2 ? "web,1" : "db \"2\"");
			if (ht_writer_add_identity(w, &id))
				return 1;
		}
		if (with_exits && (i == 0 || i == n / 2) && add_exits(w, i ? 1 : 0, 0))
			return 1;
		ht_writer_add(w, &r);
		if (with_switches) {
			/* Each of the 4 threads out after one of its records, back in after its next. */
			struct ht_record sw = vcpu_switch(&r, i, (i / 4) % 2 ? HT_SWITCH_IN : HT_SWITCH_OUT);

			ht_writer_add(w, &sw);
			t.records++;
		}
		if (with_boot) {
			struct ht_record be = boot_exit(&r, i);

			ht_writer_add(w, &be);
			t.records++;
		}
		if (with_wakeups) {
			struct ht_record wk = wakeup_after(&r, i), irq = irq_after(&r, i);

			ht_writer_add(w, &wk);
			ht_writer_add(w, &irq);
			t.records += 2;
		}
		if (i == n / 2)
			ht_writer_flush(w); /* two blocks */
	}
	if (with_boot) {
		/* Each VM's numbers, one of them lost some (report --boot says so). */
		struct ht_boot_vm_rec vms[2] = { { .pid = record(0).host_pid, .vm = { .first_ns = 5000000000ull, .recorded = n / 2, .lost = 1 } },
						 { .pid = 0, .flags = HT_BOOT_VM_F_REFUSED, .vm = { .over = 2 } } };

		if (ht_writer_add_block(w, HT_BLOCK_BOOT, vms, sizeof(vms), 2))
			return 1;
	}
	if (with_exits && add_exits(w, 2, 1))
		return 1;
	return ht_writer_close(w, &t) != 0;
}

/* A copy of DIR/name without its last `cut` bytes: a recording that did not end cleanly. */
static int write_cut(const char *dir, const char *name, long cut, const char *suffix)
{
	char path[512], out[512];
	static char buf[1 << 20];
	FILE *f;
	size_t len;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	snprintf(out, sizeof(out), "%s/%s-%s", dir, name, suffix);
	f = fopen(path, "rb");
	if (!f)
		return 1;
	len = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	if ((long)len <= cut || !(f = fopen(out, "wb")))
		return 1;
	len -= (size_t)cut;
	return (fwrite(buf, 1, len, f) != len) | (fclose(f) != 0);
}

/*
 * Seeds of fuzz_decode (its input layout is in fuzz_decode.c): a catalog,
 * a symbol file, a VM thread's names and guest events, once plain and once
 * with the strings and names a hostile guest or VM owner would choose.
 */
static int write_decode_seed(const char *dir, const char *name, bool hostile, bool switches)
{
	static const char catalog[] = "# the user's events\n1201 phase name=a0-a3:str\n"
				      "1202 four a=a0:sym b=a1:x c=a2[0-15]:s d=a3[8-31]:str\n";
	static const char symbols[] = "ffffffff81000000 T _stext\nffffffff81003000 T vfs_read\n"
				      "ffffffff81003400 t vfs_write\nffffffff81003400 T __x64_vfs_write\n"
				      "ffffffff81100000 T _printk\nffffffffc0a00000 t probe\t[hypertrace_guest]\n"
				      "ffffffff81200000 T e\x1b[2J\xff,=x\n";
	const uint64_t text = 0xffffffffc0a00000ull, rip = text + 0x1234;
	struct ht_record r[16];
	char names[96] = { 0 }, path[512];
	size_t n = 0;
	FILE *f;

	const char *thread = hostile ? "CPU 0/\x1b]0;t\x07" : "CPU 0/KVM";
	const char *vm = hostile ? "=web\xe7\xbd\x91\xff\xc2\x9b" : "web1";

	memcpy(names, "qemu-system-x86", 15);
	memcpy(names + 16, thread, strlen(thread));
	memcpy(names + 32, vm, strlen(vm));
#define EV(nr_, a0_, a1_, a2_, a3_, rip_)                                                                   \
	r[n] = (struct ht_record){ .exit_ns = 1000001000ull + n * 1000, .nr = nr_, .a0 = a0_, .a1 = a1_,     \
				   .a2 = a2_, .a3 = a3_, .guest_rip = rip_, .host_pid = 4242, .host_tid = 4243, \
				   .isa = HT_ISA_SVM, .exit_reason = 0x81, .exit_to_hcall_ns = 100,             \
				   .hcall_to_entry_ns = 200 };                                                  \
	n++
	/* Loaded, with its text range, and _printk 0x2c000000 past the map's. */
	EV(1100, 1 | 0xf << 8 | 1 << 16 | (text & 0xffffffffu) << 32, 0x6000ull << 32, 0xffffffff81100000ull + 0x2c000000,
	   0x6b746e6972705f, rip);
	EV(1101, 0 | 42ull << 32, 120 | 120 << 8, hostile ? 0x485b1b4a325b1bull : 0x6873ull, 0, rip);
	EV(1102, 42 | 120ull << 32, hostile ? 0x9bc2ff0a0d09ull : 0x6873ull, 0, 1, rip);
	EV(1105, 0xffffffff81003000ull + 0x2c000000, 0xffffffff81003400ull + 0x2c000000, 42, 0, rip);
	EV(1106, 0xffffffff81003000ull + 0x2c000000, 7, 42, 0, rip);
	EV(1103, 11, 0x30797474ull, 0, 0, rip);
	EV(1201, hostile ? 0x5b1b22ff5c2c3dull : 0x746f6f62ull, 0, 0, 0, 0x401000);
	EV(1202, 0xffffffff81200000ull + 0x2c000000, 0xdead, 0xffff, hostile ? 0x2c22ff00ull : 0x4142ull << 8, 0x401003);
	EV(1101, 42, 0, 0x6c697665ull, 0, 0x401006); /* forged: from user space */
	EV(1100, 0, 5, 0xffffffff81100000ull + 0x2c000000, 0x6b746e6972705f, rip);
#undef EV
	/*
	 * Switches of the vCPU thread (record --vcpu-sched; flags bit 7): a lone
	 * switch-in, preempted for a host thread whose name a terminal would
	 * interpret and back, blocked and never back; a kind no version knows.
	 */
	for (unsigned int k = 0; switches && k < 5; k++) {
		static const __u32 kinds[5] = { HT_SWITCH_IN, HT_SWITCH_OUT, HT_SWITCH_IN, HT_SWITCH_OUT, 7 };
		struct ht_vcpu_switch sw = { .time_ns = 1000001000ull + n * 1000, .kind = kinds[k],
					     .involuntary = k == 1, .prev_state = k == 3 ? 0x402 : 0,
					     .other_tid = 100 + k, .other_pid = 100, .host_pid = 4242, .host_tid = 4243,
					     .cpu = (__u16)(k % 2), .flags = HT_REC_F_VCPU_SWITCH };

		/* 16 bytes, no NUL: controls, a C1 control, invalid UTF-8, a quote and a backslash. */
		static const char names[2][17] = { "kworker/0:1", "\x1b]0;t\x07\xc2\x9b\xff\\\",\n\r\x7fx" };

		memcpy(sw.other_comm, names[hostile], 16);
		memcpy(&r[n++], &sw, sizeof(sw));
	}
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f)
		return 1;
	uint8_t lens[4] = { sizeof(catalog) - 1, 0, (sizeof(symbols) - 1) & 0xff, (sizeof(symbols) - 1) >> 8 };
	fwrite(lens, 1, 4, f);
	fwrite(catalog, 1, sizeof(catalog) - 1, f);
	fwrite(symbols, 1, sizeof(symbols) - 1, f);
	fwrite(names, 1, sizeof(names), f);
	fwrite(r, sizeof(r[0]), n, f);
	return fclose(f) != 0;
}

int main(int argc, char **argv)
{
	/* The trailer is one block: a 24-byte block header and the 64-byte trailer. */
	const long trailer_block = sizeof(struct ht_block_header) + sizeof(struct ht_trailer);
	const char *dir = argv[1];

	if (argc == 3 && !strcmp(argv[1], "--decode"))
		return write_decode_seed(argv[2], "decode-plain", false, false) |
		       write_decode_seed(argv[2], "decode-hostile", true, false) |
		       write_decode_seed(argv[2], "decode-vcpu-switches", true, true);
	if (argc != 2) {
		fprintf(stderr, "usage: write_seeds DIR | write_seeds --decode DIR\n");
		return 2;
	}
	int ret = write_seed(dir, "plain", 12, HT_ENCODING_RAW) |
		  write_seed(dir, "compressed", 40, HT_ENCODING_DELTA_ZLIB) |
		  write_seed(dir, "empty", 0, HT_ENCODING_RAW) |
		  write_cut(dir, "plain", trailer_block, "no-trailer") |
		  write_cut(dir, "plain", trailer_block + 100, "cut-in-a-block") |
		  write_cut(dir, "compressed", trailer_block, "no-trailer");

	guest_events = 1;
	ret |= write_seed(dir, "guest-events", 42, HT_ENCODING_RAW);
	guest_events = 0;
	with_exits = 1;
	ret |= write_seed(dir, "exits", 10, HT_ENCODING_RAW);
	with_exits = 0;
	with_switches = 1;
	ret |= write_seed(dir, "vcpu-switches", 12, HT_ENCODING_DELTA_ZLIB);
	/* Raw: fuzz_blocks' mutations reach the switch records themselves, and the EXITS blocks beside them. */
	with_exits = 1;
	ret |= write_seed(dir, "exits-and-switches", 12, HT_ENCODING_RAW);
	with_exits = 0;
	with_switches = 0;
	/* Raw too: the boot exits and the BOOT block are what fuzz_blocks mutates. */
	with_boot = 1;
	ret |= write_seed(dir, "boot", 16, HT_ENCODING_RAW);
	with_boot = 0;
	with_exits = with_wakeups = 1;
	ret |= write_seed(dir, "wakeups", 12, HT_ENCODING_RAW);
	with_exits = with_wakeups = 0;
	/* Wall-clock times past 2262: a signed 64-bit sum of the clocks overflows. */
	seed_realtime = INT64_MAX;
	return ret | write_seed(dir, "clocks-past-int64", 3, HT_ENCODING_RAW);
}
