// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "record/privileges.h"

#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/capability.h>
#include "common/parse_number.h"
#include "common/util.h"

#ifndef CAP_BPF
#define CAP_BPF 39
#endif
#define CAP_BIT(c) (1ull << (c))

static int cap_get(struct __user_cap_data_struct d[2])
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };

	memset(d, 0, 2 * sizeof(*d));
	return syscall(SYS_capget, &h, d) ? -errno : 0;
}

unsigned long long ht_effective_caps(void)
{
	struct __user_cap_data_struct d[2];

	if (cap_get(d))
		return 0;
	return d[0].effective | (unsigned long long)d[1].effective << 32;
}

static int last_cap(void)
{
	FILE *f = fopen("/proc/sys/kernel/cap_last_cap", "r");
	int n = 63;

	if (f) {
		if (fscanf(f, "%d", &n) != 1)
			n = 63;
		fclose(f);
	}
	return n;
}

int ht_drop_privileges(bool keep_kill)
{
	unsigned long long keep = CAP_BIT(CAP_BPF) | (keep_kill ? CAP_BIT(CAP_KILL) : 0);
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
	struct __user_cap_data_struct d[2];
	int ret;

	if ((ret = cap_get(d)))
		return ret;
	/* The bounding set first: dropping from it needs CAP_SETPCAP, which goes next. */
	if (d[0].effective & CAP_BIT(CAP_SETPCAP))
		for (int c = 0; c <= last_cap(); c++)
			if (!(keep & CAP_BIT(c)))
				prctl(PR_CAPBSET_DROP, c, 0, 0, 0);
	prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	for (int i = 0; i < 2; i++) {
		__u32 k = (__u32)(keep >> (32 * i));

		d[i].permitted &= k;
		d[i].effective = d[i].permitted;
		d[i].inheritable = 0;
	}
	return syscall(SYS_capset, &h, d) ? -errno : 0;
}

static bool parse_id(const char *s, unsigned int *out)
{
	uint64_t v;

	if (!s || !ht_parse_u64(s, 0, UINT32_MAX - 1, &v))
		return false;
	*out = (unsigned int)v;
	return true;
}

int ht_command_user_from_sudo(struct ht_command_user *u, char *err, size_t errlen)
{
	const char *uid_s = getenv("SUDO_UID"), *gid_s = getenv("SUDO_GID");
	unsigned int uid, gid;

	memset(u, 0, sizeof(*u));
	if (!uid_s || geteuid() != 0)
		return 0;
	if (!parse_id(uid_s, &uid) || !parse_id(gid_s, &gid)) {
		snprintf(err, errlen, "SUDO_UID '%s' / SUDO_GID '%s' are not user and group ids: unset them or run it through sudo",
			 uid_s, gid_s ? gid_s : "");
		return -EINVAL;
	}
	if (uid == 0)
		return 0; /* sudo from root: CMD runs as root, as it would without sudo */
	u->set = true;
	u->uid = uid;
	u->gid = gid;
	u->name = getenv("SUDO_USER");
	return 0;
}

/*
 * The groups /etc/group lists name in, plus gid (e.g. kvm, for /dev/kvm).
 * Read directly, not through NSS, which a static binary cannot load.
 */
static size_t groups_of(const char *name, gid_t gid, gid_t *out, size_t max)
{
	FILE *f = name ? fopen("/etc/group", "re") : NULL;
	struct group *g;
	size_t n = 0;

	out[n++] = gid;
	while (f && n < max && (g = fgetgrent(f))) {
		for (char **m = g->gr_mem; *m; m++) {
			if (!strcmp(*m, name) && g->gr_gid != gid) {
				out[n++] = g->gr_gid;
				break;
			}
		}
	}
	if (f)
		fclose(f);
	return n;
}

int ht_command_user_apply(const struct ht_command_user *u, char *err, size_t errlen)
{
	gid_t groups[64];
	size_t n;

	if (!u->set)
		return 0;
	n = groups_of(u->name, u->gid, groups, ARRAY_SIZE(groups));
	if (setgroups(n, groups) || setgid(u->gid) || setuid(u->uid)) {
		snprintf(err, errlen, "cannot run CMD as uid %u gid %u (the sudo caller): %s",
			 (unsigned int)u->uid, (unsigned int)u->gid, strerror(errno));
		return -errno;
	}
	return 0;
}
