/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The reader's side of HT_EXIT_ROW_F_FROM_ZERO (version 16 on): a recorder
 * forgets an ended VM process's rows, and a pid that comes back as a new
 * process has its series and causes written again from zero. Every row of
 * a key after such a restart is handed to the reader's callbacks with the
 * numbers the key had before added, so every consumer sees each key's
 * numbers cumulative since the recording started, never going down, as in
 * files where no pid came back. Its memory follows the file's keys: each
 * one's last numbers as written, and for a key that restarted what it adds.
 */
#ifndef HT_EXITS_RESTARTS_H
#define HT_EXITS_RESTARTS_H

#include <stddef.h>
#include <stdint.h>
#include "common/hashmap.h"
#include "hypertrace/trace_file.h"

struct ht_exits_restarts {
	struct ht_hashmap series; /* ht_exit_key -> struct restart_series */
	struct ht_hashmap causes; /* ht_exit_cause_key -> struct restart_cause */
	uint64_t restarts;        /* rows that started a key again from zero */
};

void ht_exits_restarts_init(struct ht_exits_restarts *r);
void ht_exits_restarts_free(struct ht_exits_restarts *r);
/*
 * One EXITS block's rows, in place: each row's numbers on top of its key's
 * before a restart, the flags cleared. 0 or -ENOMEM.
 */
int ht_exits_restarts_apply(struct ht_exits_restarts *r, struct ht_exit_series_rec *series, size_t nseries,
			    struct ht_exit_cause_rec *causes, size_t ncauses);

#endif
