// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "reading/selection.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "common/util.h"
#include "parse.h"
#include "tracefile/trace_reader.h"

/* What the IDENTITY block's vm_name holds, without its NUL. */
#define HT_FILE_VM_NAME_MAX ((int)sizeof(((struct ht_identity *)0)->vm_name) - 1)

const char ht_selection_help[] =
	"Selection (the same for every mode; records outside it are skipped):\n"
	"  -p, --pid PID        only the VM process PID\n"
	"      --vm NAME        only the VM named NAME (QEMU's -name; else the process\n"
	"                       name), as the file recorded it: at most 63 bytes\n"
	"                       (a longer name is kept cut, as report shows it)\n"
	"      --vcpu N         only vCPU id N\n"
	"  -n, --nr N           only hypercall nr N; repeat for several\n"
	"      --since TIME     only records from TIME on, and\n"
	"      --until TIME     up to TIME (inclusive). TIME is seconds from the\n"
	"                       recording start (e.g. 2.5), or a wall-clock time in\n"
	"                       UTC as the reports print it: 2026-11-22T03:40:01.5Z\n"
	"                       or '2026-11-22 03:40:01.5 UTC'\n";

/* "YYYY-MM-DD[T ]HH:MM:SS[.frac][Z| UTC]" to ns since the epoch. */
static bool parse_wallclock(const char *s, int64_t *out)
{
	struct tm tm = { 0 };
	int n = 0;
	int64_t frac = 0, scale = 100000000;

	if (sscanf(s, "%4d-%2d-%2d%*1[T ]%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
		   &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &n) != 6 || n == 0)
		return false;
	s += n;
	if (*s == '.') {
		s++;
		if (!isdigit((unsigned char)*s))
			return false;
		for (; isdigit((unsigned char)*s); s++) {
			frac += (*s - '0') * scale;
			scale /= 10;
		}
	}
	if (strcmp(s, "Z") && strcmp(s, " UTC") && strcmp(s, ""))
		return false;
	if (tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 ||
	    tm.tm_min > 59 || tm.tm_sec > 60)
		return false;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	time_t t = timegm(&tm);
	/* Nanoseconds since 1970 in 64 signed bits end in 2262. */
	if (t == (time_t)-1 || t < 0 || t > INT64_MAX / 1000000000 - 1)
		return false;
	*out = (int64_t)t * 1000000000 + frac;
	return true;
}

static bool parse_time(const char *arg, struct ht_time_bound *b)
{
	double secs;

	if (ht_parse_seconds(arg, 1e8, &secs)) {
		*b = (struct ht_time_bound){ .on = true, .offset_ns = (int64_t)(secs * 1e9 + 0.5) };
		return true;
	}
	if (parse_wallclock(arg, &b->realtime_ns)) {
		b->on = true;
		b->wallclock = true;
		return true;
	}
	return false;
}

int ht_selection_option(struct ht_selection *s, int opt, const char *arg, char *err, size_t errlen)
{
	uint64_t v;

	switch (opt) {
	case HT_SELECT_OPT_PID:
		if (!ht_parse_u64(arg, 1, INT32_MAX, &v))
			return snprintf(err, errlen, "invalid --pid '%s': expected a process id", arg), -1;
		s->pid_on = true;
		s->pid = (uint32_t)v;
		return 1;
	case HT_SELECT_OPT_VM:
		if (!arg[0])
			return snprintf(err, errlen, "--vm needs a VM name"), -1;
		/* A name the file cannot hold would match nothing: say why instead. */
		if (strlen(arg) > HT_FILE_VM_NAME_MAX)
			return snprintf(err, errlen, "--vm NAME is %zu bytes: a trace file keeps at most %d bytes of a VM name (a longer one is cut between two characters): give the name as report shows it",
					strlen(arg), HT_FILE_VM_NAME_MAX), -1;
		s->vm_name = arg;
		return 1;
	case HT_SELECT_OPT_VCPU:
		if (!ht_parse_u64(arg, 0, UINT16_MAX, &v))
			return snprintf(err, errlen, "invalid --vcpu '%s': expected a vCPU id 0..65535", arg), -1;
		s->vcpu_on = true;
		s->vcpu = (uint16_t)v;
		return 1;
	case HT_SELECT_OPT_NR:
		if (!ht_parse_u64(arg, 0, UINT32_MAX, &v))
			return snprintf(err, errlen, "invalid --nr '%s': expected an integer 0..4294967295", arg), -1;
		if (s->nr_count == HT_SELECT_MAX_NR)
			return snprintf(err, errlen, "too many --nr: at most %d", HT_SELECT_MAX_NR), -1;
		s->nr[s->nr_count++] = (uint32_t)v;
		return 1;
	case HT_SELECT_OPT_SINCE:
	case HT_SELECT_OPT_UNTIL:
		if (!parse_time(arg, opt == HT_SELECT_OPT_SINCE ? &s->since : &s->until))
			return snprintf(err, errlen,
					"invalid --%s '%s': expected seconds from the start (e.g. 2.5) or a UTC time such as 2026-11-22T03:40:01Z",
					opt == HT_SELECT_OPT_SINCE ? "since" : "until", arg), -1;
		return 1;
	}
	return 0;
}

int ht_selection_check(const struct ht_selection *s, char *err, size_t errlen)
{
	/* Only comparable without a file when both bounds are of the same kind. */
	if (s->since.on && s->until.on && s->since.wallclock == s->until.wallclock &&
	    (s->since.wallclock ? s->since.realtime_ns > s->until.realtime_ns :
				  s->since.offset_ns > s->until.offset_ns)) {
		snprintf(err, errlen, "--since is after --until: swap them");
		return -1;
	}
	return 0;
}

/*
 * The bound on the file's monotonic clock, saturated at both ends: the
 * header's clock anchors are the file's (a crafted one chooses them), so
 * no sum here may overflow.
 */
static uint64_t bound_to_monotonic(const struct ht_time_bound *b, const struct ht_file_header *h)
{
	uint64_t start = h->start_monotonic_ns;
	int64_t delta = b->offset_ns;

	if (b->wallclock && __builtin_sub_overflow(b->realtime_ns, (int64_t)h->start_realtime_ns, &delta))
		delta = b->realtime_ns >= 0 ? INT64_MAX : INT64_MIN;
	if (delta >= 0)
		return UINT64_MAX - start < (uint64_t)delta ? UINT64_MAX : start + (uint64_t)delta;
	uint64_t back = 0 - (uint64_t)delta;
	return back > start ? 0 : start - back;
}

int ht_selection_resolve(struct ht_selection *s, const struct ht_file_header *h, char *err, size_t errlen)
{
	s->from_ns = s->since.on ? bound_to_monotonic(&s->since, h) : 0;
	s->to_ns = s->until.on ? bound_to_monotonic(&s->until, h) : UINT64_MAX;
	if (s->from_ns > s->to_ns) {
		snprintf(err, errlen, "--since is after --until in this recording: swap them");
		return -1;
	}
	return 0;
}

bool ht_selection_active(const struct ht_selection *s)
{
	return s->vm_name || s->pid_on || s->vcpu_on || s->nr_count || s->since.on || s->until.on;
}

bool ht_selection_match_vm(const struct ht_selection *s, uint32_t pid, void *names)
{
	if (s->pid_on && pid != s->pid)
		return false;
	if (s->vm_name) {
		/* A record's identity precedes it in the file: the name is known by now if recorded. */
		const char *vm = names ? ht_reader_vm_name(names, pid) : NULL;

		if (!vm || strcmp(vm, s->vm_name))
			return false;
	}
	return true;
}

/* Process, VM, vCPU and time: what a hypercall record, a switch and a wake-up all have, at the same places. */
static bool match_where(const struct ht_selection *s, const struct ht_record *r, void *names)
{
	if (!ht_selection_match_vm(s, r->host_pid, names))
		return false;
	if (s->vcpu_on && r->vcpu_id != s->vcpu)
		return false;
	return r->exit_ns >= s->from_ns && r->exit_ns <= s->to_ns;
}

/*
 * A record of another kind in a record's place (80 bytes): its time, VM
 * and vCPU are where a record's are (record.h asserts it for each kind).
 */
static bool match_in_place(const struct ht_selection *s, const void *in_place, void *names)
{
	struct ht_record r;

	memcpy(&r, in_place, sizeof(r));
	return match_where(s, &r, names);
}

bool ht_selection_match_switch(const struct ht_selection *s, const struct ht_vcpu_switch *sw, void *names)
{
	return match_in_place(s, sw, names);
}

bool ht_selection_match_wakeup(const struct ht_selection *s, const struct ht_vcpu_wakeup *w, void *names)
{
	return match_in_place(s, w, names);
}

bool ht_selection_match_irq(const struct ht_selection *s, const struct ht_vcpu_irq *d, void *names)
{
	return match_in_place(s, d, names);
}

bool ht_selection_match(const struct ht_selection *s, const struct ht_record *r, void *names)
{
	if (!match_where(s, r, names))
		return false;
	if (!s->nr_count)
		return true;
	for (unsigned int i = 0; i < s->nr_count; i++)
		if (r->nr == s->nr[i])
			return true;
	return false;
}

static void describe_bound(char *buf, size_t len, const char *name, const struct ht_time_bound *b)
{
	if (b->wallclock) {
		time_t t = (time_t)(b->realtime_ns / 1000000000);
		struct tm tm;
		char date[32];

		gmtime_r(&t, &tm);
		strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S", &tm);
		snprintf(buf, len, "%s %s.%09lldZ", name, date, (long long)(b->realtime_ns % 1000000000));
	} else {
		snprintf(buf, len, "%s +%.9g s", name, (double)b->offset_ns / 1e9);
	}
}

void ht_selection_describe(const struct ht_selection *s, char *buf, size_t len)
{
	size_t used = 0;
	char part[96];

#define APPEND(...)                                                                      \
	do {                                                                             \
		int n_ = snprintf(buf + used, len - used, __VA_ARGS__);                  \
		if (n_ > 0)                                                              \
			used = HT_MIN(len - 1, used + (size_t)n_);                       \
	} while (0)
	buf[0] = '\0';
	if (s->vm_name)
		APPEND("vm %s", s->vm_name);
	if (s->pid_on)
		APPEND("%spid %u", used ? ", " : "", s->pid);
	if (s->vcpu_on)
		APPEND("%svcpu %u", used ? ", " : "", s->vcpu);
	for (unsigned int i = 0; i < s->nr_count; i++)
		APPEND("%s%u", i ? "," : used ? ", nr " : "nr ", s->nr[i]);
	if (s->since.on) {
		describe_bound(part, sizeof(part), "since", &s->since);
		APPEND("%s%s", used ? ", " : "", part);
	}
	if (s->until.on) {
		describe_bound(part, sizeof(part), "until", &s->until);
		APPEND("%s%s", used ? ", " : "", part);
	}
	if (!used)
		APPEND("all records");
#undef APPEND
}
