/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Least privilege for `record`: once the BPF programs are attached it keeps
 * only the capabilities the rest of the run needs, and CMD runs with the
 * credentials of the user who called sudo.
 */
#ifndef HT_PRIVILEGES_H
#define HT_PRIVILEGES_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Who CMD runs as: the sudo caller's identity, or (not set) this process's own. */
struct ht_command_user {
	bool set;
	uid_t uid;
	gid_t gid;
	const char *name; /* SUDO_USER, for the supplementary groups; may be NULL */
};

/*
 * Reads SUDO_UID/SUDO_GID/SUDO_USER when this process runs as root under
 * sudo for another user. 0, or -EINVAL with a message if they are malformed.
 */
int ht_command_user_from_sudo(struct ht_command_user *u, char *err, size_t errlen);
/* In CMD's child, before exec: takes on u's groups, gid and uid (which clears every capability). */
int ht_command_user_apply(const struct ht_command_user *u, char *err, size_t errlen);

/*
 * Drops every capability but those the rest of a recording needs: CAP_BPF
 * (bpf() on the loaded maps and programs: counters, aggregates, statistics;
 * kernels before 6.5 check it for every bpf() command) and CAP_KILL if CMD
 * runs as another user (to stop it). The trace file is named, chowned and
 * given its mode before: from here on it is written through its descriptor. The --metrics listener is bound before,
 * and its thread drops every capability itself. Also drops them from the
 * bounding set, so no later exec can regain them. Applies to the calling
 * thread (capabilities are per thread): a thread started later inherits the
 * reduced set. 0 or -errno.
 */
int ht_drop_privileges(bool keep_kill);
/* The effective capability set of the calling thread (bit n: capability n); 0 if it cannot be read. */
unsigned long long ht_effective_caps(void);

#endif
