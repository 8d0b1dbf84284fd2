/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The one decoder of the project's guest kernel events (nr 1100-1106,
 * include/hypertrace/guest.h): a record into one struct of named values,
 * for every reader of them (the scheduling summary, the function graph,
 * which records the guest module sent, and the exports). Where each field
 * sits is read from the built-in catalog (decode/catalog.c), the one
 * definition of the layout: each field is looked up by name once, when the
 * decoder is made, and every record is then read through the indexes kept.
 *
 * It reads what the record says and nothing else: it does not tell a
 * forged record from the module's own (decode/guest_origin.h).
 */
#ifndef HT_DECODE_GUEST_EVENT_H
#define HT_DECODE_GUEST_EVENT_H

#include <stdbool.h>
#include <stdint.h>
#include "decode/catalog.h"
#include "hypertrace/record.h"

enum ht_gev_kind {
	HT_GEV_NONE = 0, /* not one of the project's guest events */
	HT_GEV_MODULE,
	HT_GEV_SCHED_SWITCH,
	HT_GEV_SCHED_WAKEUP,
	HT_GEV_IRQ_ENTRY,
	HT_GEV_IRQ_EXIT,
	HT_GEV_FUNC_ENTRY,
	HT_GEV_FUNC_EXIT,
	HT_GEV_KINDS
};

/* The distinct field names of the project's events (state, prev_tid, cpu_id, ...). */
#define HT_GEV_FIELD_NAMES 24

/* A guest function call still open in its task: the function and where it was called from. */
struct ht_gev_call {
	uint64_t addr, site;
};

/* Task names as the kernel keeps them: TASK_COMM_LEN bytes, NUL-terminated here. */
#define HT_GEV_COMM_LEN 16
/* The module's KASLR anchor: an 8-byte string. */
#define HT_GEV_ANCHOR_LEN 8

struct ht_gev {
	enum ht_gev_kind kind;
	/*
	 * The guest CPU that sent it. The module's event names none: 0 here;
	 * a reader that follows the vCPUs gives it the one its vCPU last named.
	 */
	uint32_t cpu;
	union {
		struct {
			uint32_t prev_tid, next_tid, prev_state;
			int32_t prev_prio, next_prio; /* as ftrace prints them: 0..139, -1 deadline */
			char next_comm[HT_GEV_COMM_LEN + 1];
		} sw;
		struct {
			uint32_t tid, target_cpu;
			int32_t prio;
			char comm[HT_GEV_COMM_LEN + 1];
		} wake;
		struct {
			uint32_t irq;
			int64_t ret;
			char name[33];
		} irq;
		struct {
			/*
			 * Entry: where it was called from. Exit: the record does
			 * not say (0 here); a reader that follows the open calls
			 * gives it the call site of the entry it closes.
			 */
			uint64_t addr, call_site;
			uint64_t ret;
			uint32_t tid;
			/*
			 * What a reader that follows each task's open calls
			 * (export/guest_state.h) found; false and none here.
			 * Entry: the call is remembered as open (not beyond the
			 * depth kept). Exit: it closes a call open in its task
			 * (else it was entered before the recording, or beyond
			 * that depth).
			 */
			bool matched;
			/*
			 * Exit: the calls opened after the one it closes, whose
			 * exits were lost (they close with it), innermost last.
			 */
			uint32_t nlost;
			const struct ht_gev_call *lost;
		} func;
		struct {
			uint32_t state;     /* 1 loaded, 0 unloading */
			uint32_t events;    /* HT_GUEST_EV_* bits */
			uint32_t functions; /* kernel functions probed */
			uint64_t text_start; /* the low 32 bits of the module's text, 0 from an older module */
			uint64_t text_size;
			uint64_t missed;    /* function probes missed, at unload */
			uint64_t anchor_addr;
			char anchor_name[HT_GEV_ANCHOR_LEN + 1];
		} mod;
	} u;
};

/*
 * The built-in catalog's description of each kind, and where each of its
 * fields is in it (-1: the kind has no such field). Plain data: it holds no
 * memory, needs no freeing and may be copied.
 */
struct ht_gev_decoder {
	struct ht_event_desc desc[HT_GEV_KINDS];
	int8_t field[HT_GEV_KINDS][HT_GEV_FIELD_NAMES];
};

/* Reads the built-in catalog and finds every field once. 0, or -1 when out of memory. */
int ht_gev_decoder_init(struct ht_gev_decoder *g);
/* Which of the project's events nr is (HT_GEV_NONE for any other). */
enum ht_gev_kind ht_gev_kind_of(uint32_t nr);
/* Decodes r into ev (zeroed first; ev->kind HT_GEV_NONE when r is no project event). */
void ht_gev_decode(const struct ht_gev_decoder *g, const struct ht_record *r, struct ht_gev *ev);

#endif
