// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* systemd's socket activation, the receiving side (see socket_activation.h). */
#include "metrics/socket_activation.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include "common/parse_number.h"

/* More than any socket unit passes; bounds the loops over the passed fds. */
#define MAX_PASSED_FDS 64
#define WHAT_TO_DO "start it through hypertrace-exporter.socket, or give --metrics [ADDR:]PORT"

struct passed {
	char pid[32], fds[32], names[1024];
	bool pid_set, fds_set, names_set;
};

static void copy_var(const char *name, char *buf, size_t len, bool *set)
{
	const char *v = getenv(name);

	*set = v != NULL;
	snprintf(buf, len, "%s", v ? v : "");
}

/* Reads the three variables, then removes them: a child must not take our sockets for its own. */
static void take_environment(struct passed *p)
{
	copy_var("LISTEN_PID", p->pid, sizeof(p->pid), &p->pid_set);
	copy_var("LISTEN_FDS", p->fds, sizeof(p->fds), &p->fds_set);
	copy_var("LISTEN_FDNAMES", p->names, sizeof(p->names), &p->names_set);
	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_FDNAMES");
}

/* Is the i-th name of LISTEN_FDNAMES (':'-separated) want? */
static bool has_name(const char *names, unsigned int i, const char *want)
{
	const char *p = names, *end;
	size_t len;

	for (; i && p; i--) {
		p = strchr(p, ':');
		p = p ? p + 1 : NULL;
	}
	if (!p)
		return false;
	end = strchr(p, ':');
	len = end ? (size_t)(end - p) : strlen(p);
	return len == strlen(want) && !memcmp(p, want, len);
}

/* True if fd is a listening TCP socket (AF_INET or AF_INET6, SOCK_STREAM). */
static bool is_listening_tcp(int fd, char *why, size_t len)
{
	struct sockaddr_storage ss;
	socklen_t sslen = sizeof(ss), ilen = sizeof(int);
	struct stat st;
	int type = 0, listening = 0;

	if (fstat(fd, &st) || !S_ISSOCK(st.st_mode)) {
		snprintf(why, len, "not a socket");
		return false;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &ilen) || type != SOCK_STREAM ||
	    getsockname(fd, (struct sockaddr *)&ss, &sslen) ||
	    (ss.ss_family != AF_INET && ss.ss_family != AF_INET6)) {
		snprintf(why, len, "not a TCP socket");
		return false;
	}
	ilen = sizeof(int);
	if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &ilen) || !listening) {
		snprintf(why, len, "not listening");
		return false;
	}
	return true;
}

int ht_socket_activation_take(int *fds, size_t max, char *err, size_t errlen)
{
	struct passed p;
	uint64_t pid, n;
	char why[64];
	size_t taken = 0;
	int fd, fl;

	take_environment(&p);
	if (!p.fds_set) {
		snprintf(err, errlen, "--metrics systemd: no socket was passed (LISTEN_FDS is not set): %s", WHAT_TO_DO);
		return -1;
	}
	if (!ht_parse_u64(p.fds, 0, MAX_PASSED_FDS, &n) ||
	    !p.pid_set || !ht_parse_u64(p.pid, 1, INT32_MAX, &pid)) {
		snprintf(err, errlen, "--metrics systemd: malformed LISTEN_FDS '%s' or LISTEN_PID '%s': %s",
			 p.fds, p.pid, WHAT_TO_DO);
		return -1;
	}
	/* Meant for another process (a wrapper that did not unset them): not ours to take. */
	if (pid != (uint64_t)getpid()) {
		snprintf(err, errlen, "--metrics systemd: the sockets were passed to process %s, not to this one (%ld): run hypertrace-bpf itself as the service's ExecStart=",
			 p.pid, (long)getpid());
		return -1;
	}
	if (n == 0) {
		snprintf(err, errlen, "--metrics systemd: no socket was passed (LISTEN_FDS=0): %s", WHAT_TO_DO);
		return -1;
	}
	/* Whatever is chosen, none of the passed fds may leak into CMD. */
	for (unsigned int i = 0; i < n; i++) {
		fd = HT_LISTEN_FDS_START + (int)i;
		fl = fcntl(fd, F_GETFD);
		if (fl < 0 || fcntl(fd, F_SETFD, fl | FD_CLOEXEC)) {
			snprintf(err, errlen, "--metrics systemd: LISTEN_FDS=%s but fd %d is not open: %s",
				 p.fds, fd, WHAT_TO_DO);
			return -1;
		}
	}
	/*
	 * The only one, or every one named "metrics": a port's IPv4 and IPv6
	 * sides (ListenStream=127.0.0.1:P and ListenStream=[::1]:P) are two.
	 */
	for (unsigned int i = 0; i < n; i++) {
		fd = HT_LISTEN_FDS_START + (int)i;
		if (n > 1 && !has_name(p.names, i, HT_METRICS_FD_NAME))
			continue;
		if (taken == max) {
			snprintf(err, errlen, "--metrics systemd: more than %zu sockets named '" HT_METRICS_FD_NAME "' were passed: give the socket unit at most %zu ListenStream=",
				 max, max);
			return -1;
		}
		if (!is_listening_tcp(fd, why, sizeof(why))) {
			snprintf(err, errlen, "--metrics systemd: the socket passed as fd %d is %s: the socket unit needs ListenStream=[ADDR:]PORT (TCP) and Accept=no",
				 fd, why);
			return -1;
		}
		/* The server's poll loop accepts until EAGAIN. */
		fl = fcntl(fd, F_GETFL);
		if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK)) {
			snprintf(err, errlen, "--metrics systemd: cannot make fd %d nonblocking: %s", fd, strerror(errno));
			return -1;
		}
		fds[taken++] = fd;
	}
	if (!taken) {
		snprintf(err, errlen, "--metrics systemd: %u sockets were passed and none is named '" HT_METRICS_FD_NAME "' (LISTEN_FDNAMES '%s'): give the socket unit one ListenStream=, or FileDescriptorName=" HT_METRICS_FD_NAME " to the ones to serve",
			 (unsigned int)n, p.names);
		return -1;
	}
	return (int)taken;
}
