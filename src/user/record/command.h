/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * `record -- CMD`: the command run under a recording. It is looked up before
 * anything is loaded, starts once tracing has, and ends the run when it ends;
 * a run that ends first stops it (SIGTERM, then SIGKILL).
 */
#ifndef HT_RECORD_COMMAND_H
#define HT_RECORD_COMMAND_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include "record/privileges.h"

struct ht_command {
	char **argv; /* NULL-terminated; argv[0] names it in messages */
	pid_t pid;   /* while it runs, else -1 (also before it starts) */
	int status;  /* its waitpid status once it ended */
	bool ended;  /* ended by itself, not by the SIGTERM that stopping sends */
};

/*
 * Finds the program name as execvp will (PATH, or without it the C library's
 * default), so that a misspelt command costs no BPF load and leaves no trace
 * file. 0, or -1 with the reason in err.
 */
int ht_command_find(const char *name, char *err, size_t errlen);
/*
 * Forks argv, which waits until *gate is closed: the caller drops its
 * privileges in between, so it never runs beside a fully privileged
 * recorder. Under sudo it takes on the caller's identity (user) first.
 * 0, or -errno.
 */
int ht_command_start(struct ht_command *c, char **argv, const struct ht_command_user *user, int *gate);
/* Collects its status if it has ended; true if it has. */
bool ht_command_reap(struct ht_command *c);
/* The run ends while it runs: SIGTERM, then SIGKILL after a grace time. */
void ht_command_stop(struct ht_command *c);
/* Stops it if it runs; the run's exit status: its own when it ended the run (said if not 0), else 0. */
int ht_command_finish(struct ht_command *c);

#endif
