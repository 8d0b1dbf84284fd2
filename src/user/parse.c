// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "parse.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool ht_parse_seconds(const char *s, double max, double *out)
{
	double v;
	char *end;

	if (!s || !(isdigit((unsigned char)s[0]) || s[0] == '.'))
		return false;
	errno = 0;
	v = strtod(s, &end);
	if (errno || *end || !isfinite(v) || v < 0 || v > max)
		return false;
	*out = v;
	return true;
}

bool ht_parse_size(const char *s, uint64_t *out)
{
	char num[32];
	size_t len;
	unsigned int shift = 0;
	uint64_t v;

	if (!s)
		return false;
	len = strlen(s);
	if (len == 0 || len >= sizeof(num))
		return false;
	memcpy(num, s, len + 1);
	switch (num[len - 1]) {
	case 'k': case 'K': shift = 10; break;
	case 'm': case 'M': shift = 20; break;
	case 'g': case 'G': shift = 30; break;
	}
	if (shift)
		num[len - 1] = '\0';
	if (!ht_parse_u64(num, 0, UINT64_MAX >> shift, &v))
		return false;
	*out = v << shift;
	return true;
}

bool ht_parse_mode(const char *s, unsigned int *out, char *err, size_t errlen)
{
	unsigned int v = 0, writable, exec;
	const char *p = s;
	char bits[160] = "";

	for (; *p && p - s < 4 && *p >= '0' && *p <= '7'; p++)
		v = v * 8 + (unsigned int)(*p - '0');
	if (!*s || *p || v > 0777) {
		snprintf(err, errlen, "invalid --mode '%s': expected an octal file mode such as 0600 or 0640", s);
		return false;
	}
	/*
	 * A trace or export that every user may write can be altered behind the
	 * operator's back (records forged, a report misled); nothing the tools
	 * write is a program.
	 */
	writable = v & 0002;
	exec = v & 0111;
	if (writable)
		snprintf(bits, sizeof(bits), "0002 (writable by every user: anyone could alter the file)%s",
			 exec ? " and " : "");
	if (exec)
		snprintf(bits + strlen(bits), sizeof(bits) - strlen(bits),
			 "%04o (executable: the file is data, not a program)", exec);
	if (bits[0]) {
		snprintf(err, errlen, "invalid --mode '%s': refused bits %s; use a mode such as 0600 or 0640", s, bits);
		return false;
	}
	*out = v;
	return true;
}

bool ht_parse_user(const char *s, uid_t *uid)
{
	struct passwd *pw;
	uint64_t v;
	FILE *f;

	/* (uid_t)-1 means "no change" to the kernel: never a user. */
	if (ht_parse_u64(s, 0, UINT32_MAX - 1, &v)) {
		*uid = (uid_t)v;
		return true;
	}
	if (!s[0] || !(f = fopen("/etc/passwd", "re")))
		return false;
	while ((pw = fgetpwent(f)))
		if (!strcmp(pw->pw_name, s))
			break;
	if (pw)
		*uid = pw->pw_uid;
	fclose(f);
	return pw != NULL;
}
