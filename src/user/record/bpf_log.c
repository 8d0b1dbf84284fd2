// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * What libbpf and the verifier say while the programs load: libbpf's
 * messages (the last warning kept for the error message), and a verifier
 * log per program, from which the reason of a refused load is taken.
 */
#include "record/bpf_log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/libbpf.h>
#include "common/util.h"

static bool libbpf_verbose;
static char libbpf_last_warning[256];

/* libbpf warnings that never name the cause of a failure. */
static bool warning_is_not_a_cause(const char *line)
{
	static const char *const noise[] = {
		"Failed to bump RLIMIT_MEMLOCK", /* a note: libbpf goes on without it */
		"failed to load object",       /* wraps the cause */
		"failed to load BPF skeleton", /* wraps the cause */
		"-- BEGIN", "-- END",          /* verifier log delimiters (-v shows the log) */
	};

	for (size_t i = 0; i < ARRAY_SIZE(noise); i++)
		if (strstr(line, noise[i]))
			return true;
	return false;
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	/*
	 * Keep the first libbpf warning that names a cause (a verifier rejection,
	 * a missing kernel feature, EPERM) for the one-line error message.
	 */
	if (level == LIBBPF_WARN && !libbpf_last_warning[0] && strncmp(fmt, "libbpf: ", 8) == 0) {
		char line[sizeof(libbpf_last_warning)];
		va_list copy;
		size_t len;

		va_copy(copy, ap);
		vsnprintf(line, sizeof(line), fmt, copy);
		va_end(copy);
		len = strcspn(line, "\n");
		line[len] = '\0';
		if (len && !warning_is_not_a_cause(line))
			memcpy(libbpf_last_warning, line, len + 1);
	}
	if (libbpf_verbose)
		return vfprintf(stderr, fmt, ap);
	return 0;
}

void ht_load_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (!libbpf_last_warning[0])
		vsnprintf(libbpf_last_warning, sizeof(libbpf_last_warning), fmt, ap);
	va_end(ap);
	if (libbpf_verbose) {
		va_start(ap, fmt);
		vfprintf(stderr, fmt, ap);
		fputc('\n', stderr);
		va_end(ap);
	}
}

void ht_libbpf_set_verbose(bool verbose)
{
	libbpf_verbose = verbose;
	libbpf_set_print(libbpf_print);
}

void ht_libbpf_clear_last_warning(void)
{
	libbpf_last_warning[0] = '\0';
}

const char *ht_libbpf_last_warning(void)
{
	return libbpf_last_warning[0] ? libbpf_last_warning : "no reason given by libbpf";
}

/*
 * The verifier's log of each program to load. libbpf asks the kernel for a
 * log only when a load fails (it retries at log level 1), so after a failed
 * load the one non-empty buffer names the program and holds the verifier's
 * reason, without depending on how libbpf words its own messages.
 */
#define HT_VERIFIER_LOG_SIZE (512u << 10)

int ht_verifier_logs_attach(struct ht_verifier_logs *logs, struct bpf_object *obj)
{
	struct bpf_program *prog;
	unsigned int n = 0;

	memset(logs, 0, sizeof(*logs));
	bpf_object__for_each_program(prog, obj)
		n += bpf_program__autoload(prog);
	logs->log = calloc(n ? n : 1, sizeof(*logs->log));
	if (!logs->log)
		return -ENOMEM;
	bpf_object__for_each_program(prog, obj) {
		if (!bpf_program__autoload(prog))
			continue;
		char *buf = calloc(1, HT_VERIFIER_LOG_SIZE);
		if (!buf)
			return -ENOMEM;
		logs->log[logs->n].prog = prog;
		logs->log[logs->n++].buf = buf;
		bpf_program__set_log_buf(prog, buf, HT_VERIFIER_LOG_SIZE);
	}
	return 0;
}

bool ht_verifier_log_reason(const char *log, char *out, size_t outlen)
{
	const char *line = NULL, *p = log;

	while (*p) {
		const char *end = strchrnul(p, '\n');
		if (end > p && strncmp(p, "processed ", 10) && strncmp(p, "verification time", 17) &&
		    strncmp(p, "stack depth", 11))
			line = p;
		p = *end ? end + 1 : end;
	}
	if (!line)
		return false;
	snprintf(out, outlen, "%.*s", (int)(strchrnul(line, '\n') - line), line);
	return true;
}

/* "program NAME: REASON" from the one program whose load failed. */
bool ht_verifier_logs_reason(const struct ht_verifier_logs *logs, char *out, size_t outlen)
{
	char reason[200];

	for (unsigned int i = 0; i < logs->n; i++) {
		if (ht_verifier_log_reason(logs->log[i].buf, reason, sizeof(reason))) {
			snprintf(out, outlen, "program %s: %s", bpf_program__name(logs->log[i].prog), reason);
			return true;
		}
	}
	return false;
}

void ht_verifier_logs_free(struct ht_verifier_logs *logs)
{
	for (unsigned int i = 0; i < logs->n; i++) {
		bpf_program__set_log_buf(logs->log[i].prog, NULL, 0);
		free(logs->log[i].buf);
	}
	free(logs->log);
	logs->log = NULL;
	logs->n = 0;
}

