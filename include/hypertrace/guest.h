/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Hypertracing from inside a KVM guest: the guest issues one hypercall per
 * event and the host (hypertrace-bpf record) stamps it with the host's clock,
 * so guest and host clocks never need to be synchronised.
 *
 * This header works in guest kernel code (a module) and in guest user space
 * alike: it includes nothing but <linux/types.h> (in the kernel) or
 * <stdint.h>, and hypercall_abi.h beside it (what host and guest agree on:
 * the default nr, the vendor table), and executes CPUID itself.
 *
 * KVM hypercall ABI (x86-64): nr in RAX, a0..a3 in RBX, RCX, RDX, RSI, result
 * in RAX. The instruction is `vmcall` on Intel (VMX) and `vmmcall` on AMD and
 * Hygon (SVM); ht_guest_probe() chooses it once from the CPU vendor. KVM
 * traces the call (kvm_hypercall) before its privilege check, so user space
 * (CPL 3) is traced too and gets -KVM_EPERM (-1) back; the kernel gets
 * -KVM_ENOSYS (-1000) for every nr below, which KVM does not implement.
 *
 * Which nr means what (docs/hypertracing.md has the same table):
 *
 *   0 .. 999        KVM's own hypercalls (KVM_HC_*): never use them
 *   1000            free-form; the default of `record` and guest/hypercall;
 *                   never decoded by the built-in catalog
 *   1001 .. 1099    the user's: describe them in a catalog file
 *   1100 .. 1199    the project's own events (below); a catalog may not
 *                   redefine them. 1100 .. 1149 come from the guest kernel
 *                   only; 1150 .. 1199 from a guest program (boottrace)
 *   1200 .. 2^32-1  the user's: describe them in a catalog file
 *
 * Only nr < 2^32 can be selected by `record --nr`.
 *
 * Argument packing of the project's events. [lo-hi] are bit ranges, bit 0 the
 * least significant; strings are the bytes of the text in memory order
 * (x86 is little-endian: the first character is the low byte of the first
 * argument), NUL-padded, cut at the field's length. Field names follow
 * LTTng's kernel events. cpu_id is the guest CPU (smp_processor_id()) that
 * issued the event.
 *
 *   1100 hypertrace_module   state=a0[0-7] (1 loaded, 0 unloading)
 *                            events=a0[8-15] (HT_GUEST_EV_* bits)
 *                            functions=a0[16-31] (kernel functions probed)
 *                            text_start=a0[32-63] text_size=a1[32-63]:
 *                            the module's text, where every one of its
 *                            hypercalls is; the low 32 bits of its start
 *                            (x86-64 kernel code lives in the top 2 GiB:
 *                            the high 32 bits are all ones); 0 from a
 *                            module older than the range
 *                            missed=a1[0-31] (function probes missed, at
 *                            unload; at most 2^32-1)
 *                            anchor_addr=a2 anchor_name=a3 (8-byte string):
 *                            the run-time address of a kernel symbol, from
 *                            which the host finds the KASLR offset
 *   1101 sched_switch        prev_tid=a0[0-31] next_tid=a0[32-63]
 *                            prev_prio=a1[0-7] next_prio=a1[8-15]
 *                            prev_state=a1[16-31] cpu_id=a1[32-47]
 *                            next_comm=a2-a3 (16-byte string)
 *   1102 sched_wakeup        tid=a0[0-31] prio=a0[32-39] target_cpu=a0[40-55]
 *                            comm=a1-a2 (16-byte string) cpu_id=a3[0-15]
 *   1103 irq_handler_entry   irq=a0[0-31] cpu_id=a0[32-47] name=a1-a3 (24 bytes)
 *   1104 irq_handler_exit    irq=a0[0-31] cpu_id=a0[32-47] ret=a1 (signed)
 *   1105 func_entry          addr=a0 call_site=a1 tid=a2[0-31] cpu_id=a2[32-47]
 *   1106 func_exit           addr=a0 ret=a1 tid=a2[0-31] cpu_id=a2[32-47]
 *   1107 clock_pair          guest_ns=a0 (the guest's local_clock(): the
 *                            clock of its printk, dmesg's times)
 *                            mono_ns=a1 (its CLOCK_MONOTONIC)
 *                            seq=a2[0-31] cpu_id=a2[32-47]
 *                            trace_ns=a3 (trace_clock_local(): ftrace's
 *                            "local" clock, sched_clock, which local_clock
 *                            is offset from): the three read with
 *                            interrupts off right before the hypercall;
 *                            the host's time of its exit makes a clock
 *                            pair of each (docs/hypertracing.md)
 *
 *   The guest's own trace, replayed by guest/boottrace from guest user space
 *   (its boot-time ftrace events: initcalls): one trace_line per line of the
 *   guest's trace text, its text continued by trace_text events; trace_replay
 *   opens and closes a replay and pairs the trace's clock with the host's.
 *
 *   1150 trace_line          guest_ns=a0 (the line's time, ns of the trace's
 *                            own clock) seq=a1[0-31] (the line's number in
 *                            its replay) cpu_id=a1[32-47] length=a1[48-63]
 *                            (the text's bytes, at most HT_GUEST_TRACE_TEXT_MAX)
 *                            tid=a2[0-31] cut=a2[32-39] (1: the line was
 *                            longer, cut at length) text=a3 (its first 8 bytes)
 *   1151 trace_text          seq=a0[0-31] offset=a0[32-47] text=a1-a3 (the
 *                            line's 24 bytes from offset)
 *   1152 trace_replay        run=a0[0-31] what=a0[32-39] (0 sync, 1 begin,
 *                            2 end); a sync right after the guest wrote
 *                            "hypertrace-sync RUN SEQ" to trace_marker,
 *                            seq=a1[0-31]: that line's time and this
 *                            hypercall's exit are a clock pair; an end
 *                            with lines=a2[0-31] unparsed=a2[32-63]
 *                            cut=a3[0-31] lost=a3[32-63] (the trace's own
 *                            overruns and lost events; at most 2^32-1)
 *
 * Only the guest kernel may send 1100 .. 1149: KVM traces a hypercall before
 * its privilege check, so guest user space can issue these nr too. The host
 * decodes them only from a kernel address (the upper half), and once the
 * module's load event gave its text range, only from inside that range;
 * others are counted as forged and never decoded. User markers (1001 ..
 * 1099, 1200 and up) are valid from user space.
 *
 * What is cut, and how (nothing else is): tids are pid_t, 32 bits, kept
 * whole (x86-64 caps pid_max at 2^22). prio is the kernel's task priority as
 * ftrace prints it (0..139, 120 = nice 0) in 8 bits; a deadline task's -1 is
 * sent as 255. prev_state is ftrace's and LTTng's value (one TASK_REPORT bit,
 * 0 for running, 0x100 when the task was preempted) in 16 bits. cpu_id and
 * target_cpu keep 16 bits (Linux's NR_CPUS limit is 8192). comm is the
 * kernel's 16-byte TASK_COMM_LEN, kept whole; an IRQ handler name longer than
 * 24 bytes is cut to 24 (then it has no NUL). The seeds of this design packed
 * prio 8 / state 8 / pid 15 bits plus a 32-bit guest time delta to batch
 * several events into one hypercall; one event per hypercall leaves room to
 * cut nothing that matters, and the host's clock replaces the guest's delta.
 */
#ifndef HYPERTRACE_GUEST_H
#define HYPERTRACE_GUEST_H

#ifdef __KERNEL__
#include <linux/types.h>
typedef u64 ht_u64;
typedef u32 ht_u32;
#else
#include <stdint.h>
typedef uint64_t ht_u64;
typedef uint32_t ht_u32;
#endif
#include "hypercall_abi.h"

/* The nr map above (the default, 1000: HT_DEFAULT_HYPERCALL_NR in hypercall_abi.h). */
#define HT_GUEST_NR_MODULE 1100u
#define HT_GUEST_NR_SCHED_SWITCH 1101u
#define HT_GUEST_NR_SCHED_WAKEUP 1102u
#define HT_GUEST_NR_IRQ_ENTRY 1103u
#define HT_GUEST_NR_IRQ_EXIT 1104u
#define HT_GUEST_NR_FUNC_ENTRY 1105u
#define HT_GUEST_NR_FUNC_EXIT 1106u
#define HT_GUEST_NR_CLOCK_PAIR 1107u
#define HT_GUEST_NR_TRACE_LINE 1150u
#define HT_GUEST_NR_TRACE_TEXT 1151u
#define HT_GUEST_NR_TRACE_REPLAY 1152u

/* trace_replay.what */
#define HT_GUEST_REPLAY_SYNC 0u
#define HT_GUEST_REPLAY_BEGIN 1u
#define HT_GUEST_REPLAY_END 2u
/* A trace line's text is sent up to this many bytes (a longer one is cut, and says so). */
#define HT_GUEST_TRACE_TEXT_MAX 1024u
/* The trace_marker text of a sync: "hypertrace-sync RUN SEQ". */
#define HT_GUEST_SYNC_MARKER "hypertrace-sync"

/* hypertrace_module.events bits: which event kinds the module offloads. */
#define HT_GUEST_EV_SCHED_SWITCH (1u << 0)
#define HT_GUEST_EV_SCHED_WAKEUP (1u << 1)
#define HT_GUEST_EV_IRQ (1u << 2)
#define HT_GUEST_EV_FUNCTIONS (1u << 3)

/* A deadline task's prio (-1) as sent in 8 bits. */
#define HT_GUEST_PRIO_DEADLINE 255u

/* What ht_guest_probe() found. */
enum ht_guest_kind {
	HT_GUEST_NOT_VIRTUAL = 0, /* CPUID hypervisor bit clear: bare metal, do not call */
	HT_GUEST_OTHER_HYPERVISOR, /* a hypervisor whose signature is not KVM's */
	HT_GUEST_KVM_UNKNOWN_VENDOR, /* KVM, but a CPU vendor whose instruction is unknown */
	HT_GUEST_KVM,
};

static inline void ht_guest_cpuid(ht_u32 leaf, ht_u32 *a, ht_u32 *b, ht_u32 *c, ht_u32 *d)
{
	__asm__ volatile("cpuid" : "=a"(*a), "=b"(*b), "=c"(*c), "=d"(*d) : "a"(leaf), "c"(0));
}

/* x86 registers hold four characters of a CPUID string, first one in the low byte. */
static inline int ht_guest_reg_is(ht_u32 reg, const char *four)
{
	return (reg & 0xff) == (ht_u32)(unsigned char)four[0] &&
	       ((reg >> 8) & 0xff) == (ht_u32)(unsigned char)four[1] &&
	       ((reg >> 16) & 0xff) == (ht_u32)(unsigned char)four[2] &&
	       ((reg >> 24) & 0xff) == (ht_u32)(unsigned char)four[3];
}

static inline void ht_guest_reg_text(ht_u32 reg, char *four)
{
	for (int i = 0; i < 4; i++)
		four[i] = (char)(reg >> (8 * i));
}

/*
 * The instruction for the leaf-0 vendor registers (EBX, EDX, ECX order in the
 * string), from the vendor table of hypercall_abi.h: pure, so it can be
 * tested with any vendor's values.
 */
static inline enum ht_guest_insn ht_guest_vendor_insn(ht_u32 ebx, ht_u32 ecx, ht_u32 edx)
{
	char vendor[13];

	ht_guest_reg_text(ebx, vendor);
	ht_guest_reg_text(edx, vendor + 4);
	ht_guest_reg_text(ecx, vendor + 8);
	vendor[12] = '\0';
	return ht_vendor_insn(vendor);
}

/* KVM's signature at leaf 0x40000000 is "KVMKVMKVM\0\0\0" in EBX, ECX, EDX. */
static inline int ht_guest_is_kvm_signature(ht_u32 ebx, ht_u32 ecx, ht_u32 edx)
{
	return ht_guest_reg_is(ebx, "KVMK") && ht_guest_reg_is(ecx, "VMKV") && edx == 0x4d; /* "M\0\0\0" */
}

/*
 * Reads CPUID once: is this a KVM guest, and which instruction to use. The
 * signature leaf is read only when the hypervisor bit (leaf 1 ECX bit 31) is
 * set: on bare metal leaf 0x40000000 returns whatever out-of-range leaves do.
 */
static inline enum ht_guest_kind ht_guest_probe(enum ht_guest_insn *insn)
{
	ht_u32 a, b, c, d, vb, vc, vd;

	*insn = HT_GUEST_INSN_UNKNOWN;
	ht_guest_cpuid(0, &a, &vb, &vc, &vd);
	ht_guest_cpuid(1, &a, &b, &c, &d);
	if (!(c & (1u << 31)))
		return HT_GUEST_NOT_VIRTUAL;
	ht_guest_cpuid(0x40000000u, &a, &b, &c, &d);
	if (!ht_guest_is_kvm_signature(b, c, d))
		return HT_GUEST_OTHER_HYPERVISOR;
	*insn = ht_guest_vendor_insn(vb, vc, vd);
	return *insn == HT_GUEST_INSN_UNKNOWN ? HT_GUEST_KVM_UNKNOWN_VENDOR : HT_GUEST_KVM;
}

/* "memory": the hypervisor may read or write guest memory on the caller's behalf. */
static inline ht_u64 ht_guest_vmcall(ht_u64 nr, ht_u64 a0, ht_u64 a1, ht_u64 a2, ht_u64 a3)
{
	ht_u64 ret;

	__asm__ volatile("vmcall" : "=a"(ret) : "a"(nr), "b"(a0), "c"(a1), "d"(a2), "S"(a3) : "memory");
	return ret;
}

static inline ht_u64 ht_guest_vmmcall(ht_u64 nr, ht_u64 a0, ht_u64 a1, ht_u64 a2, ht_u64 a3)
{
	ht_u64 ret;

	__asm__ volatile("vmmcall" : "=a"(ret) : "a"(nr), "b"(a0), "c"(a1), "d"(a2), "S"(a3) : "memory");
	return ret;
}

/*
 * Issues hypercall nr with insn from ht_guest_probe(). The branch goes the
 * same way every time, so it costs nothing next to the exit. Never call it
 * with HT_GUEST_INSN_UNKNOWN: that is not a KVM guest (or not a known CPU),
 * where the instruction faults or means something else; it returns -1
 * without issuing anything then.
 */
static inline ht_u64 ht_guest_hypercall(enum ht_guest_insn insn, ht_u64 nr, ht_u64 a0, ht_u64 a1,
					ht_u64 a2, ht_u64 a3)
{
	if (insn == HT_GUEST_INSN_VMMCALL)
		return ht_guest_vmmcall(nr, a0, a1, a2, a3);
	if (insn == HT_GUEST_INSN_VMCALL)
		return ht_guest_vmcall(nr, a0, a1, a2, a3);
	return (ht_u64)-1;
}

/*
 * Argument `word` (0 = first) of text of at most len bytes packed as the
 * "strings" rule above: bytes 8*word .. 8*word+7, zero after the first NUL.
 */
static inline ht_u64 ht_guest_text_word(const char *s, unsigned int len, unsigned int word)
{
	ht_u64 v = 0;

	for (unsigned int i = 0; i < len && i < 8 * word + 8 && s[i]; i++)
		if (i >= 8 * word)
			v |= (ht_u64)(unsigned char)s[i] << (8 * (i - 8 * word));
	return v;
}

/* Up to 8 bytes of text as one argument. */
static inline ht_u64 ht_guest_pack_text(const char *s, unsigned int max)
{
	return ht_guest_text_word(s, max, 0);
}

/* The project's events, packed as the table above says. */
struct ht_guest_args {
	ht_u64 a[4];
};

static inline ht_u64 ht_guest_u8_prio(int prio)
{
	return prio < 0 || prio > 254 ? HT_GUEST_PRIO_DEADLINE : (ht_u64)prio;
}

static inline struct ht_guest_args ht_guest_pack_sched_switch(ht_u32 prev_tid, int prev_prio,
							      ht_u32 prev_state, ht_u32 next_tid,
							      int next_prio, const char *next_comm,
							      ht_u32 cpu)
{
	struct ht_guest_args r;

	r.a[0] = (ht_u64)prev_tid | (ht_u64)next_tid << 32;
	r.a[1] = ht_guest_u8_prio(prev_prio) | ht_guest_u8_prio(next_prio) << 8 |
		 (ht_u64)(prev_state & 0xffffu) << 16 | (ht_u64)(cpu & 0xffffu) << 32;
	r.a[2] = ht_guest_text_word(next_comm, 16, 0);
	r.a[3] = ht_guest_text_word(next_comm, 16, 1);
	return r;
}

static inline struct ht_guest_args ht_guest_pack_sched_wakeup(ht_u32 tid, int prio,
							      ht_u32 target_cpu, const char *comm,
							      ht_u32 cpu)
{
	struct ht_guest_args r;

	r.a[0] = (ht_u64)tid | ht_guest_u8_prio(prio) << 32 | (ht_u64)(target_cpu & 0xffffu) << 40;
	r.a[1] = ht_guest_text_word(comm, 16, 0);
	r.a[2] = ht_guest_text_word(comm, 16, 1);
	r.a[3] = cpu & 0xffffu;
	return r;
}

static inline struct ht_guest_args ht_guest_pack_irq_entry(ht_u32 irq, const char *name, ht_u32 cpu)
{
	struct ht_guest_args r;

	r.a[0] = (ht_u64)irq | (ht_u64)(cpu & 0xffffu) << 32;
	r.a[1] = name ? ht_guest_text_word(name, 24, 0) : 0;
	r.a[2] = name ? ht_guest_text_word(name, 24, 1) : 0;
	r.a[3] = name ? ht_guest_text_word(name, 24, 2) : 0;
	return r;
}

static inline struct ht_guest_args ht_guest_pack_irq_exit(ht_u32 irq, int ret, ht_u32 cpu)
{
	struct ht_guest_args r;

	r.a[0] = (ht_u64)irq | (ht_u64)(cpu & 0xffffu) << 32;
	r.a[1] = (ht_u64)(long long)ret;
	r.a[2] = 0;
	r.a[3] = 0;
	return r;
}

/* func_entry (value = call site) and func_exit (value = return value). */
static inline struct ht_guest_args ht_guest_pack_func(ht_u64 addr, ht_u64 value, ht_u32 tid,
						      ht_u32 cpu)
{
	struct ht_guest_args r;

	r.a[0] = addr;
	r.a[1] = value;
	r.a[2] = (ht_u64)tid | (ht_u64)(cpu & 0xffffu) << 32;
	r.a[3] = 0;
	return r;
}

static inline struct ht_guest_args ht_guest_pack_module(unsigned int state, unsigned int events,
							unsigned int functions, ht_u64 missed,
							ht_u64 anchor_addr, const char *anchor_name)
{
	struct ht_guest_args r;

	r.a[0] = (ht_u64)(state & 0xffu) | (ht_u64)(events & 0xffu) << 8 |
		 (ht_u64)(functions & 0xffffu) << 16;
	r.a[1] = missed > 0xffffffffu ? 0xffffffffu : missed;
	r.a[2] = anchor_addr;
	r.a[3] = ht_guest_pack_text(anchor_name, 8);
	return r;
}

/* clock_pair: the guest's clocks (ns), its sequence number and CPU. */
static inline struct ht_guest_args ht_guest_pack_clock_pair(ht_u64 local_ns, ht_u64 mono_ns, ht_u64 trace_ns,
							     ht_u32 seq, ht_u32 cpu)
{
	struct ht_guest_args r;

	r.a[0] = local_ns;
	r.a[1] = mono_ns;
	r.a[2] = (ht_u64)seq | (ht_u64)(cpu & 0xffffu) << 32;
	r.a[3] = trace_ns;
	return r;
}

/* trace_line: a line of the guest's trace, its text's first 8 bytes (len: the text's bytes). */
static inline struct ht_guest_args ht_guest_pack_trace_line(ht_u64 guest_ns, ht_u32 seq, ht_u32 cpu, ht_u32 tid,
							    const char *text, unsigned int len, int cut)
{
	struct ht_guest_args r;

	r.a[0] = guest_ns;
	r.a[1] = (ht_u64)seq | (ht_u64)(cpu & 0xffffu) << 32 | (ht_u64)(len & 0xffffu) << 48;
	r.a[2] = (ht_u64)tid | (ht_u64)(cut ? 1 : 0) << 32;
	r.a[3] = ht_guest_text_word(text, len, 0);
	return r;
}

/* trace_text: the 24 bytes from offset of a line's text of len bytes. */
static inline struct ht_guest_args ht_guest_pack_trace_text(ht_u32 seq, unsigned int offset, const char *text,
							    unsigned int len)
{
	struct ht_guest_args r;
	unsigned int left = offset < len ? len - offset : 0;

	r.a[0] = (ht_u64)seq | (ht_u64)(offset & 0xffffu) << 32;
	for (unsigned int w = 0; w < 3; w++)
		r.a[1 + w] = ht_guest_text_word(text + offset, left, w);
	return r;
}

static inline ht_u64 ht_guest_u32_saturated(ht_u64 v)
{
	return v > 0xffffffffu ? 0xffffffffu : v;
}

/* trace_replay: a sync (seq), the replay's begin, or its end (with its counts). */
static inline struct ht_guest_args ht_guest_pack_trace_replay(ht_u32 run, unsigned int what, ht_u32 seq,
							      ht_u64 lines, ht_u64 unparsed, ht_u64 cut,
							      ht_u64 lost)
{
	struct ht_guest_args r;

	r.a[0] = (ht_u64)run | (ht_u64)(what & 0xffu) << 32;
	r.a[1] = seq;
	r.a[2] = ht_guest_u32_saturated(lines) | ht_guest_u32_saturated(unparsed) << 32;
	r.a[3] = ht_guest_u32_saturated(cut) | ht_guest_u32_saturated(lost) << 32;
	return r;
}

/* Adds the module's text range (start, size in bytes) to its hypertrace_module event. */
static inline struct ht_guest_args ht_guest_module_text(struct ht_guest_args a, ht_u64 text_start,
							ht_u64 text_size)
{
	a.a[0] = (a.a[0] & 0xffffffffu) | (text_start & 0xffffffffu) << 32;
	a.a[1] = (a.a[1] & 0xffffffffu) | (text_size > 0xffffffffu ? 0 : text_size) << 32;
	return a;
}

static inline ht_u64 ht_guest_emit(enum ht_guest_insn insn, ht_u64 nr, struct ht_guest_args a)
{
	return ht_guest_hypercall(insn, nr, a.a[0], a.a[1], a.a[2], a.a[3]);
}

/*
 * User-space markers: an application marks a phase with a hypercall in the
 * user's nr range, described in its catalog file (docs/hypertracing.md), e.g.
 *
 *     static enum ht_guest_insn insn;
 *     if (ht_guest_probe(&insn) != HT_GUEST_KVM) ... not a KVM guest: do not mark
 *     ht_guest_mark(insn, 1200, request_id, bytes, 0, 0);
 *     ht_guest_mark_text(insn, 1201, "startup done");   catalog: 1201 phase name=a0-a3:str
 *
 * From user space KVM answers -KVM_EPERM (-1): the call is traced anyway.
 */
static inline ht_u64 ht_guest_mark(enum ht_guest_insn insn, ht_u32 nr, ht_u64 a0, ht_u64 a1,
				   ht_u64 a2, ht_u64 a3)
{
	return ht_guest_hypercall(insn, nr, a0, a1, a2, a3);
}

/* Up to 32 bytes of text in a0..a3; longer text is cut at 32. */
static inline ht_u64 ht_guest_mark_text(enum ht_guest_insn insn, ht_u32 nr, const char *text)
{
	return ht_guest_hypercall(insn, nr, ht_guest_text_word(text, 32, 0),
				  ht_guest_text_word(text, 32, 1), ht_guest_text_word(text, 32, 2),
				  ht_guest_text_word(text, 32, 3));
}

#endif /* HYPERTRACE_GUEST_H */
