/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * One CTF 1.8 trace laid out as LTTng's kernel tracer writes it
 * (lttng-modules 2.13): a TSDL `metadata` file and one data stream per CPU,
 * `channel0_<cpu>`, whose packet context carries `cpu_id`; events with
 * LTTng's `pid`, `tid` and `procname` contexts; an `env` block with
 * `domain = "kernel"` and `tracer_name = "lttng-modules"`, which is how
 * Trace Compass recognises a kernel trace. Field types are written exactly as
 * lttng-modules writes them (export/lttng_export.c chooses which).
 *
 * A second channel, `statedump_<cpu>`, holds what lttng-modules' statedump
 * writes when a session starts (its own stream instance: readers keep it
 * apart from the CPU's `channel0_<cpu>`). A third, `boot_<cpu>`, the
 * project's own, holds the VMs' boot phases and their guests' initcalls,
 * which are known only at the end, in a time order of their own.
 *
 * The trace's directory, its streams' files and packets, its uuids and its
 * metadata file are the CTF layer's (export/ctf_trace.h, in its LTTng kernel
 * layout), as is streaming: each stream holds one packet in memory; events
 * must come in time order per CPU (an earlier one is raised to the stream's
 * last time and counted). The metadata is written at the end, when every
 * event class and the drop count are known.
 */
#ifndef HT_EXPORT_LTTNG_TRACE_H
#define HT_EXPORT_LTTNG_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* An event's payload, at most (the largest one written is about half of it). */
#define HT_LTTNG_MAX_PAYLOAD 128
/*
 * An event's payload in the boot stream, at most: a guest's initcall and its
 * level, each up to 1024 bytes of its line and escaped whole (4 bytes a byte
 * at most), fit; one packet holds the largest event.
 */
#define HT_LTTNG_MAX_BOOT_PAYLOAD (14 * 1024)
/* LTTng's procname context: the kernel's TASK_COMM_LEN. */
#define HT_LTTNG_COMM_LEN 16

/* TSDL field types, as lttng-modules prints them for x86-64 (unaligned access: align 8 bits). */
#define HT_TSDL_S32 "integer { size = 32; align = 8; signed = 1; encoding = none; base = 10; }"
#define HT_TSDL_U32 "integer { size = 32; align = 8; signed = 0; encoding = none; base = 10; }"
#define HT_TSDL_S64 "integer { size = 64; align = 8; signed = 1; encoding = none; base = 10; }"
#define HT_TSDL_U64 "integer { size = 64; align = 8; signed = 0; encoding = none; base = 10; }"
#define HT_TSDL_X64 "integer { size = 64; align = 8; signed = 0; encoding = none; base = 16; }"
#define HT_TSDL_CHAR "integer { size = 8; align = 8; signed = 1; encoding = UTF8; base = 10; }"
#define HT_TSDL_STRING "string"

struct ht_lttng_trace;

/* The event context of every event: LTTng's pid (host traces only), tid and procname. */
struct ht_lttng_ctx {
	int32_t pid, tid;
	char procname[HT_LTTNG_COMM_LEN + 1];
};

/*
 * Creates subdir (mode 0700) in the directory parent_fd and the trace in it.
 * parent_fd stays the caller's, open while the trace lives: the trace holds
 * no descriptor of its own between writes, so any number of traces can be
 * open at once.
 * path names it in messages. pid_context: events carry `_pid` too.
 * max_streams: CPUs beyond that many are not written (counted). The trace
 * and its clock get uuids of their own (export/ctf_trace.h says why); salt
 * tells traces apart where the kernel gives no random bytes. 0, or -errno
 * with a one-line err.
 */
int ht_lttng_trace_open(int parent_fd, const char *subdir, const char *path, bool pid_context,
			unsigned int max_streams, uint64_t salt, struct ht_lttng_trace **out, char *err,
			size_t errlen);
/*
 * Declares an event class: its name (any text, written as export/tsdl.h
 * says) and its fields, TSDL lines "TYPE _name;" each ending in a newline.
 * Returns its id (0..65534), or -ENOMEM / -ENOSPC (too many classes).
 */
int ht_lttng_trace_add_class(struct ht_lttng_trace *t, const char *name, const char *fields);
/* An env entry: a string (written as export/tsdl.h says) or an integer. */
int ht_lttng_trace_env_str(struct ht_lttng_trace *t, const char *key, const char *value);
int ht_lttng_trace_env_int(struct ht_lttng_trace *t, const char *key, long long value);
/*
 * Appends an event of class id at time ts (ns of the clock) to CPU cpu's
 * stream. Returns 0, 1 when not written (a CPU beyond max_streams), or
 * -errno with err.
 */
int ht_lttng_trace_event(struct ht_lttng_trace *t, uint32_t cpu, uint64_t ts, int id, const struct ht_lttng_ctx *ctx,
			 const void *payload, size_t len, char *err, size_t errlen);
/* The same into CPU cpu's statedump stream (not counted in max_streams). */
int ht_lttng_trace_statedump_event(struct ht_lttng_trace *t, uint32_t cpu, uint64_t ts, int id,
				   const struct ht_lttng_ctx *ctx, const void *payload, size_t len, char *err,
				   size_t errlen);
/* The same into CPU cpu's boot stream (not counted in max_streams); len up to HT_LTTNG_MAX_BOOT_PAYLOAD. */
int ht_lttng_trace_boot_event(struct ht_lttng_trace *t, uint32_t cpu, uint64_t ts, int id,
			      const struct ht_lttng_ctx *ctx, const void *payload, size_t len, char *err,
			      size_t errlen);
/*
 * Writes the last packets (the recording's drops, `discarded`, as a last
 * packet of the lowest CPU's stream at end_ns) and the metadata with the
 * clock's offset from CLOCK_MONOTONIC to wall-clock time. Frees t. 0, or
 * -errno with err.
 */
int ht_lttng_trace_close(struct ht_lttng_trace *t, int64_t clock_offset_ns, uint64_t start_ns, uint64_t end_ns,
			 uint64_t discarded, char *err, size_t errlen);
/* Frees t without finishing it. NULL is fine. */
void ht_lttng_trace_free(struct ht_lttng_trace *t);
/* Events whose time was raised to keep their stream in order; events not written (too many CPUs). */
unsigned long long ht_lttng_trace_reordered(const struct ht_lttng_trace *t);
unsigned long long ht_lttng_trace_dropped(const struct ht_lttng_trace *t);

#endif
