/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* What libbpf and the verifier say while the BPF programs load (bpf_log.c). */
#ifndef HT_RECORD_BPF_LOG_H
#define HT_RECORD_BPF_LOG_H

#include <stdbool.h>
#include <stddef.h>

/* Where the libbpf messages go: stderr when verbose, else only the last warning is kept. */
void ht_libbpf_set_verbose(bool verbose);
/*
 * The verifier's reason in a failed program's log: its last line before the
 * statistics ("processed N insns ..."). False if the log holds none.
 */
bool ht_verifier_log_reason(const char *log, char *out, size_t outlen);
/*
 * A log buffer for every program of obj that will load (however many the
 * object has), so that the one that fails names itself. 0 or -ENOMEM; free
 * with ht_verifier_logs_free before the object, whatever was returned.
 */
struct bpf_object;
struct bpf_program;
struct ht_verifier_logs {
	struct {
		struct bpf_program *prog;
		char *buf;
	} *log;
	unsigned int n;
};
int ht_verifier_logs_attach(struct ht_verifier_logs *logs, struct bpf_object *obj);
void ht_verifier_logs_free(struct ht_verifier_logs *logs);
/* libbpf's last warning (not verbose): what a failed load adds to its message. */
const char *ht_libbpf_last_warning(void);
/* A warning of the load's own (not libbpf's), kept and shown as libbpf's are (printf-style, no newline). */
void ht_load_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Forgets it: a load starts with none. */
void ht_libbpf_clear_last_warning(void);
/* "program NAME: REASON" of the one program whose load failed; false if no log names one. */
bool ht_verifier_logs_reason(const struct ht_verifier_logs *logs, char *out, size_t outlen);

#endif
