// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* A minimal, nonblocking HTTP/1.x server thread for GET /metrics (see metrics_http.h). */
#include "metrics/metrics_http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <linux/capability.h>
#include <linux/securebits.h>
#include "parse.h"
#include "common/util.h"
#include "metrics/socket_activation.h"

#define REQUEST_MAX 8192
/*
 * Kernel send buffer per connection: bounds what a client that stops reading
 * pins in the kernel; the rest of its response waits in our buffer until its
 * deadline closes it.
 */
#define CONN_SNDBUF (64 * 1024)
#define DEFAULT_TIMEOUT_MS 10000
/* A scraper sends its request head at once: 2 s is ample, and bounds what a slow or idle client holds. */
#define DEFAULT_HEAD_TIMEOUT_MS 2000
#define DEFAULT_MAX_CONNS 64
/* Rendered responses held at once: a full registry renders to about 3 MB. */
#define DEFAULT_MAX_RESPONSES 8
/* New connections taken per round of the poll loop: open ones are served between bursts. */
#define ACCEPTS_PER_ROUND 32

/* Who a connection comes from: an IPv4 address (v4-mapped) or an IPv6 /64 (a host has all of it). */
struct client_key {
	unsigned char b[16];
};

struct conn {
	int fd; /* -1: a free slot */
	struct client_key client;
	unsigned long long accepted_ns;
	unsigned long long head_deadline_ns; /* the request head must be in by then */
	unsigned long long deadline_ns;      /* the last byte of the response must be out by then */
	unsigned long long progress_ns;      /* responding: the last time a byte went out */
	char *resp; /* NULL while reading the request */
	size_t resp_len, resp_sent;
	size_t req_len;
	char req[REQUEST_MAX];
};

struct ht_metrics_http {
	int listen_fds[HT_METRICS_MAX_LISTEN], wake_fd;
	unsigned int nlisten;
	uint16_t port;
	unsigned long long timeout_ns, head_timeout_ns;
	unsigned int max_conns, max_per_client, max_responses;
	struct conn *conns; /* max_conns slots */
	unsigned int nconns, nresponses;
	struct ht_metrics_http_stats stats;        /* the HTTP thread's */
	struct ht_metrics_http_stats shared_stats; /* a copy for other threads, under stats_lock */
	pthread_mutex_t stats_lock;
	ht_metrics_body_fn body;
	void *ctx;
	pthread_t thread;
	bool thread_started;
	FILE *log;
};

bool ht_listen_addr_parse(const char *spec, struct ht_listen_addr *out)
{
	char host[64];
	const char *port_s = spec, *colon;
	uint64_t port;

	memset(out, 0, sizeof(*out));
	if (!strcmp(spec, HT_METRICS_FROM_SYSTEMD)) {
		out->from_systemd = true;
		snprintf(out->text, sizeof(out->text), "the socket systemd passed");
		return true;
	}
	snprintf(host, sizeof(host), "%s", HT_METRICS_DEFAULT_ADDR);
	if (spec[0] == '[') { /* [IPv6]:PORT */
		const char *end = strchr(spec, ']');

		if (!end || end[1] != ':' || (size_t)(end - spec - 1) >= sizeof(host))
			return false;
		memcpy(host, spec + 1, (size_t)(end - spec - 1));
		host[end - spec - 1] = '\0';
		port_s = end + 2;
	} else if ((colon = strrchr(spec, ':'))) {
		if ((size_t)(colon - spec) >= sizeof(host) || colon == spec)
			return false;
		memcpy(host, spec, (size_t)(colon - spec));
		host[colon - spec] = '\0';
		port_s = colon + 1;
	}
	if (!ht_parse_u64(port_s, 0, 65535, &port) || port == 0)
		return false;
	struct sockaddr_in *v4 = (struct sockaddr_in *)&out->sa;
	struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&out->sa;
	if (spec[0] != '[' && inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
		v4->sin_family = AF_INET;
		v4->sin_port = htons((uint16_t)port);
		out->len = sizeof(*v4);
		out->scope = v4->sin_addr.s_addr == htonl(INADDR_LOOPBACK) ? HT_LISTEN_LOOPBACK :
			     v4->sin_addr.s_addr == htonl(INADDR_ANY) ? HT_LISTEN_ANY : HT_LISTEN_ONE;
		snprintf(out->text, sizeof(out->text), "%s:%u", host, (unsigned int)port);
	} else if (spec[0] == '[' && inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
		v6->sin6_family = AF_INET6;
		v6->sin6_port = htons((uint16_t)port);
		out->len = sizeof(*v6);
		out->scope = IN6_IS_ADDR_LOOPBACK(&v6->sin6_addr) ? HT_LISTEN_LOOPBACK :
			     IN6_IS_ADDR_UNSPECIFIED(&v6->sin6_addr) ? HT_LISTEN_ANY : HT_LISTEN_ONE;
		snprintf(out->text, sizeof(out->text), "[%s]:%u", host, (unsigned int)port);
	} else {
		return false;
	}
	return true;
}

static void note_usage(struct ht_metrics_http *h)
{
	struct ht_metrics_http_stats *st = &h->stats;

	st->connections = h->nconns;
	st->responses = h->nresponses;
	st->peak_connections = HT_MAX(st->peak_connections, st->connections);
	st->peak_responses = HT_MAX(st->peak_responses, st->responses);
	st->peak_response_bytes = HT_MAX(st->peak_response_bytes, st->response_bytes);
}

static void conn_close(struct ht_metrics_http *h, struct conn *c)
{
	close(c->fd);
	c->fd = -1;
	if (c->resp) {
		h->nresponses--;
		h->stats.response_bytes -= c->resp_len;
		free(c->resp);
		c->resp = NULL;
	}
	h->nconns--;
	note_usage(h);
}

static struct client_key client_key(const struct sockaddr_storage *ss)
{
	struct client_key k = { { 0 } };

	if (ss->ss_family == AF_INET) {
		k.b[10] = k.b[11] = 0xff; /* as ::ffff:a.b.c.d, so a dual-stack socket's IPv4 clients match */
		memcpy(k.b + 12, &((const struct sockaddr_in *)ss)->sin_addr, 4);
	} else if (ss->ss_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)ss)->sin6_addr;

		memcpy(k.b, a, IN6_IS_ADDR_V4MAPPED(a) ? 16 : 8);
	}
	return k;
}

static bool same_client(const struct client_key *a, const struct client_key *b)
{
	return !memcmp(a->b, b->b, sizeof(a->b));
}

static unsigned int connections_of(const struct ht_metrics_http *h, const struct client_key *k)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < h->max_conns; i++)
		n += h->conns[i].fd >= 0 && same_client(&h->conns[i].client, k);
	return n;
}

/*
 * The connection of client k that is worth least: one still waiting for its
 * request head, the oldest first (an idle or trickling client; a scraper
 * sends its head at once); else the response whose client read nothing for
 * the longest. NULL if k has none.
 */
static struct conn *least_worth(struct ht_metrics_http *h, const struct client_key *k)
{
	struct conn *best = NULL;

	for (unsigned int i = 0; i < h->max_conns; i++) {
		struct conn *c = &h->conns[i];

		if (c->fd < 0 || !same_client(&c->client, k))
			continue;
		if (!best || (!c->resp && best->resp) ||
		    (!c->resp && !best->resp && c->accepted_ns < best->accepted_ns) ||
		    (c->resp && best->resp && c->progress_ns < best->progress_ns))
			best = c;
	}
	return best;
}

/*
 * Room for a newcomer from client k, so that nobody waits in the listen
 * backlog behind slow clients: a client at its cap gives up its own least
 * worthy connection; when every slot is taken, the client with the most
 * connections gives up one. NULL: there is a free slot.
 */
static struct conn *slot_victim(struct ht_metrics_http *h, const struct client_key *k)
{
	const struct client_key *from = k;
	unsigned int most = 0;

	if (connections_of(h, k) < h->max_per_client) {
		if (h->nconns < h->max_conns)
			return NULL;
		for (unsigned int i = 0; i < h->max_conns; i++) {
			unsigned int n = connections_of(h, &h->conns[i].client);

			if (n > most) {
				most = n;
				from = &h->conns[i].client;
			}
		}
	}
	return least_worth(h, from);
}

/* At the cap of rendered responses: the one whose client read nothing for the longest, other than keep. */
static struct conn *response_victim(struct ht_metrics_http *h, const struct conn *keep)
{
	struct conn *best = NULL;

	for (unsigned int i = 0; i < h->max_conns; i++) {
		struct conn *c = &h->conns[i];

		if (c->fd >= 0 && c->resp && c != keep && (!best || c->progress_ns < best->progress_ns))
			best = c;
	}
	return best;
}

static bool conn_step(struct ht_metrics_http *h, struct conn *c, short revents);

/*
 * The connection to close for a newcomer from client k, or NULL when a slot
 * is free. A victim still waiting for its head is read once more first: in
 * a burst of accepts, a scraper accepted a moment ago may have sent its head
 * since, and is answered instead of closed (its slot freed, or kept while
 * its response goes out, and the next least worthy chosen). Each pass turns
 * one waiting connection into a response or a free slot: at most max_conns.
 */
static struct conn *make_room(struct ht_metrics_http *h, const struct client_key *k)
{
	for (unsigned int pass = 0; pass <= h->max_conns; pass++) {
		struct conn *c = slot_victim(h, k);

		if (!c || c->resp)
			return c;
		if (!conn_step(h, c, POLLIN)) {
			conn_close(h, c);
			return NULL;
		}
		if (!c->resp)
			return c;
	}
	return slot_victim(h, k);
}

static void accept_some(struct ht_metrics_http *h, int listen_fd)
{
	for (int k = 0; k < ACCEPTS_PER_ROUND; k++) {
		struct sockaddr_storage ss;
		socklen_t sslen = sizeof(ss);
		int fd = accept4(listen_fd, (struct sockaddr *)&ss, &sslen, SOCK_NONBLOCK | SOCK_CLOEXEC);
		int sndbuf = CONN_SNDBUF;
		struct client_key key;
		struct conn *c = NULL;

		if (fd < 0)
			return; /* EAGAIN, or a connection reset before we took it */
		key = client_key(&ss);
		c = make_room(h, &key);
		if (c) {
			conn_close(h, c);
			h->stats.evicted++;
		}
		for (unsigned int i = 0; i < h->max_conns; i++) {
			if (h->conns[i].fd < 0) {
				c = &h->conns[i];
				break;
			}
		}
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
		c->fd = fd;
		c->client = key;
		c->accepted_ns = c->progress_ns = ht_monotonic_ns();
		c->head_deadline_ns = c->accepted_ns + h->head_timeout_ns;
		c->deadline_ns = c->accepted_ns + h->timeout_ns;
		c->req_len = 0;
		h->nconns++;
		h->stats.accepted++;
		note_usage(h);
		/* A scraper's request is usually in already: answer it before anyone can take its slot. */
		if (!conn_step(h, c, POLLIN))
			conn_close(h, c);
	}
}

static int respond(struct conn *c, const char *status, const char *type, const char *body,
		   size_t body_len, bool head)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return -ENOMEM;
	fprintf(f, "HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n",
		status, type, body_len);
	if (!head && body_len)
		fwrite(body, 1, body_len, f);
	if (fclose(f) || !buf) {
		free(buf);
		return -ENOMEM;
	}
	c->resp = buf;
	c->resp_len = len;
	c->resp_sent = 0;
	return 0;
}

static int respond_metrics(struct ht_metrics_http *h, struct conn *c, bool head)
{
	char *body = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&body, &len);
	int ret;

	if (!f)
		return -ENOMEM;
	ret = h->body(h->ctx, f);
	if (fclose(f) && !ret)
		ret = -ENOMEM;
	if (ret)
		ret = respond(c, "500 Internal Server Error", "text/plain; charset=utf-8",
			      "cannot render the metrics\n", 26, head);
	else
		ret = respond(c, "200 OK", "text/plain; version=0.0.4; charset=utf-8", body, len, head);
	free(body);
	return ret;
}

/* A whole request head is in c->req: answer it. */
static int handle_request(struct ht_metrics_http *h, struct conn *c)
{
	static const char index_page[] = "hypertrace-bpf: metrics at /metrics\n";
	char method[8], target[256];
	bool head;

	c->req[c->req_len] = '\0';
	if (sscanf(c->req, "%7s %255s HTTP/", method, target) != 2)
		return respond(c, "400 Bad Request", "text/plain", "bad request\n", 12, false);
	head = !strcmp(method, "HEAD");
	if (!head && strcmp(method, "GET"))
		return respond(c, "405 Method Not Allowed", "text/plain", "only GET\n", 9, false);
	/* Prometheus may add a query string (e.g. from params in its scrape config). */
	target[strcspn(target, "?")] = '\0';
	if (!strcmp(target, "/metrics"))
		return respond_metrics(h, c, head);
	if (!strcmp(target, "/"))
		return respond(c, "200 OK", "text/plain; charset=utf-8", index_page,
			       sizeof(index_page) - 1, head);
	return respond(c, "404 Not Found", "text/plain", "not found: see /metrics\n", 24, head);
}

/* Moves one connection along. False when it is finished (or broken) and must be closed. */
static bool conn_step(struct ht_metrics_http *h, struct conn *c, short revents)
{
	if (revents & (POLLERR | POLLNVAL))
		return false;
	if (!c->resp) {
		size_t from = c->req_len > 3 ? c->req_len - 3 : 0;
		ssize_t n = recv(c->fd, c->req + c->req_len, sizeof(c->req) - 1 - c->req_len, 0);

		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
			return false;
		if (n > 0)
			c->req_len += (size_t)n;
		c->req[c->req_len] = '\0';
		/* Only the new bytes (and the 3 before them) can end the head: a trickle costs no rescans. */
		if (!strstr(c->req + from, "\r\n\r\n") && !strstr(c->req + from, "\n\n")) {
			if (c->req_len == sizeof(c->req) - 1)
				return false; /* a request head this long is not a scrape */
			return true;
		}
		if (h->nresponses >= h->max_responses) {
			struct conn *v = response_victim(h, c);

			if (v) {
				conn_close(h, v);
				h->stats.evicted++;
			}
		}
		if (handle_request(h, c))
			return false;
		h->nresponses++;
		h->stats.response_bytes += c->resp_len;
		c->progress_ns = ht_monotonic_ns();
		note_usage(h);
	}
	while (c->resp_sent < c->resp_len) {
		ssize_t n = send(c->fd, c->resp + c->resp_sent, c->resp_len - c->resp_sent, MSG_NOSIGNAL);

		if (n < 0)
			return errno == EAGAIN || errno == EINTR;
		c->resp_sent += (size_t)n;
		c->progress_ns = ht_monotonic_ns();
	}
	return false; /* all sent: Connection: close */
}

/*
 * The thread that talks to the network needs no capability: its sockets are
 * bound already. Capabilities, the bounding set and the securebits are per
 * thread, so it drops them for itself at once, whatever the recorder (which
 * started it, as root with every capability when run by hand) keeps for
 * BPF: an execve() from this thread would otherwise regain every capability
 * as uid 0. So, in this order:
 *   - its bounding set emptied, and the securebits NOROOT (uid 0 gains no
 *     capability at execve) locked: both need CAP_SETPCAP, dropped last;
 *     without it (the service, which has no CAP_SETPCAP and runs as a user
 *     of its own with no_new_privs) there is nothing they would protect;
 *   - no_new_privs: no setuid bit or file capability counts at execve;
 *   - its ambient, inheritable, permitted and effective sets emptied.
 * Best effort: each step that the kernel refuses leaves the next ones to do
 * their part.
 */
static void drop_thread_capabilities(void)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
	struct __user_cap_data_struct none[2];
	int bits;

	for (int c = 0; c < 64; c++)
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) && errno == EINVAL)
			break; /* past the kernel's last capability (or no CAP_SETPCAP: EPERM, tried each) */
	bits = prctl(PR_GET_SECUREBITS, 0, 0, 0, 0);
	if (bits >= 0)
		prctl(PR_SET_SECUREBITS, (unsigned long)bits | SECBIT_NOROOT | SECBIT_NOROOT_LOCKED, 0, 0, 0);
	prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
	prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	memset(none, 0, sizeof(none));
	syscall(SYS_capset, &hdr, none);
}

static unsigned long long conn_deadline(const struct conn *c)
{
	return c->resp ? c->deadline_ns : HT_MIN(c->head_deadline_ns, c->deadline_ns);
}

static void *serve(void *arg)
{
	struct ht_metrics_http *h = arg;
	struct pollfd *pfd;

	drop_thread_capabilities();
	/* Named, so that /proc/PID/task/TID/comm tells this thread from the recorder's. */
	pthread_setname_np(pthread_self(), "ht-metrics-http");
	/* The wake fd, the listening sockets, then one per connection slot. */
	const unsigned int first = 1 + h->nlisten;
	pfd = calloc(h->max_conns + first, sizeof(*pfd));

	if (!pfd)
		return NULL;
	for (;;) {
		unsigned long long now = ht_monotonic_ns(), next = now + 1000000000ull;

		pfd[0] = (struct pollfd){ .fd = h->wake_fd, .events = POLLIN };
		/* Always listening: a newcomer takes a free slot or a less worthy connection's. */
		for (unsigned int l = 0; l < h->nlisten; l++)
			pfd[1 + l] = (struct pollfd){ .fd = h->listen_fds[l], .events = POLLIN };
		for (unsigned int i = 0; i < h->max_conns; i++) {
			struct conn *c = &h->conns[i];

			pfd[first + i] = (struct pollfd){ .fd = c->fd, .events = c->resp ? POLLOUT : POLLIN };
			if (c->fd >= 0)
				next = HT_MIN(next, conn_deadline(c));
		}
		int timeout_ms = next > now ? (int)((next - now + 999999) / 1000000) : 0;
		if (poll(pfd, h->max_conns + first, timeout_ms) < 0 && errno != EINTR)
			break;
		if (pfd[0].revents)
			break; /* stop */
		/* Slots stay where they are: a connection closed here is skipped, not moved. */
		now = ht_monotonic_ns();
		for (unsigned int i = 0; i < h->max_conns; i++) {
			struct conn *c = &h->conns[i];
			short rev = pfd[first + i].revents;

			if (c->fd < 0)
				continue;
			if (rev && !conn_step(h, c, rev)) {
				conn_close(h, c);
			} else if (now >= conn_deadline(c)) {
				conn_close(h, c);
				h->stats.timed_out++;
			}
		}
		for (unsigned int l = 0; l < h->nlisten; l++)
			if (pfd[1 + l].revents)
				accept_some(h, h->listen_fds[l]);
		pthread_mutex_lock(&h->stats_lock);
		h->shared_stats = h->stats;
		pthread_mutex_unlock(&h->stats_lock);
	}
	free(pfd);
	return NULL;
}

/* Is there IPv6 on this host? The kernel lists its addresses there only if it has it (ipv6.disable=1: none). */
static bool host_has_ipv6(void)
{
	return access("/proc/net/if_inet6", F_OK) == 0;
}

/*
 * One listening socket on sa, added to h's. v6only: IPV6_V6ONLY of an
 * AF_INET6 socket, set either way rather than left to the
 * net.ipv6.bindv6only sysctl. 0 or -errno (nothing added); the reason in
 * err only if report.
 */
static int listen_on(struct ht_metrics_http *h, const struct sockaddr *sa, socklen_t len, bool v6only,
		     const char *text, bool report, char *err, size_t errlen)
{
	int one = 1, v6 = v6only, fd, e;

	fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		e = errno;
		if (report)
			snprintf(err, errlen, "cannot set up the metrics server: %s", strerror(e));
		return -e;
	}
	/* A restarted recorder must get its port back at once, not after TIME_WAIT. */
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if ((sa->sa_family == AF_INET6 && setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6, sizeof(v6))) ||
	    bind(fd, sa, len) || listen(fd, SOMAXCONN)) {
		e = errno;
		close(fd);
		if (report)
			snprintf(err, errlen, "cannot listen on %s for --metrics: %s: %s", text, strerror(e),
				 e == EADDRINUSE ? "choose another port" :
				 e == EADDRNOTAVAIL ? "give an address of this host, or only a port for 127.0.0.1 and ::1" :
				 e == EACCES ? "choose a port above 1023 or run as root" : "check the address");
		return -e;
	}
	h->listen_fds[h->nlisten++] = fd;
	return 0;
}

/* The IPv6 side is missing (no IPv6 here): fine, said once. True if e means that. */
static bool no_ipv6(struct ht_metrics_http *h, int e, const char *listens_on)
{
	if (e != -EAFNOSUPPORT && e != -EADDRNOTAVAIL && host_has_ipv6())
		return false;
	if (h->log)
		fprintf(h->log, "hypertrace-bpf: no IPv6 on this host (%s): --metrics listens on %s only\n",
			strerror(-e), listens_on);
	return true;
}

/* The sockets of [ADDR:]PORT (see struct ht_listen_addr), bound and listening. 0 or -errno, the reason in err. */
static int bind_sockets(struct ht_metrics_http *h, const struct ht_listen_addr *addr, char *err, size_t errlen)
{
	uint16_t port = addr->sa.ss_family == AF_INET6 ? ((const struct sockaddr_in6 *)&addr->sa)->sin6_port :
							 ((const struct sockaddr_in *)&addr->sa)->sin_port;
	struct sockaddr_in v4 = { .sin_family = AF_INET, .sin_port = port };
	struct sockaddr_in6 v6 = { .sin6_family = AF_INET6, .sin6_port = port };
	unsigned int p = ntohs(port);
	char t4[32], t6[32];
	int ret;

	switch (addr->scope) {
	case HT_LISTEN_ONE:
		return listen_on(h, (const struct sockaddr *)&addr->sa, addr->len, true, addr->text, true, err, errlen);
	case HT_LISTEN_ANY:
		/* One dual-stack socket: nobody can take either family's side of the port. */
		snprintf(t6, sizeof(t6), "[::]:%u", p);
		snprintf(t4, sizeof(t4), "0.0.0.0:%u", p);
		ret = listen_on(h, (const struct sockaddr *)&v6, sizeof(v6), false, t6, true, err, errlen);
		if (ret && no_ipv6(h, ret, t4))
			ret = listen_on(h, (const struct sockaddr *)&v4, sizeof(v4), false, t4, true, err, errlen);
		return ret;
	case HT_LISTEN_LOOPBACK:
		break;
	}
	/* Both loopbacks, the one written first (its errors read as they always did). */
	v4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	v6.sin6_addr = in6addr_loopback;
	snprintf(t4, sizeof(t4), "127.0.0.1:%u", p);
	snprintf(t6, sizeof(t6), "[::1]:%u", p);
	if (addr->sa.ss_family == AF_INET6) {
		ret = listen_on(h, (const struct sockaddr *)&v6, sizeof(v6), true, t6, true, err, errlen);
		return ret ? ret : listen_on(h, (const struct sockaddr *)&v4, sizeof(v4), false, t4, true, err, errlen);
	}
	ret = listen_on(h, (const struct sockaddr *)&v4, sizeof(v4), false, t4, true, err, errlen);
	if (ret)
		return ret;
	ret = listen_on(h, (const struct sockaddr *)&v6, sizeof(v6), true, t6, false, err, errlen);
	if (ret && no_ipv6(h, ret, t4))
		return 0;
	if (ret)
		snprintf(err, errlen, "cannot listen on %s for --metrics, the IPv6 twin of %s where scrapes of localhost may go: %s: choose another port, or stop the process that listens there",
			 t6, t4, strerror(-ret));
	return ret;
}

/* Does one of h's sockets listen on port (network order) on IPv6, on :: or, if loopback, ::1? */
static bool has_ipv6_side(const struct ht_metrics_http *h, uint16_t port, bool loopback)
{
	for (unsigned int l = 0; l < h->nlisten; l++) {
		struct sockaddr_in6 a;
		socklen_t len = sizeof(a);

		if (getsockname(h->listen_fds[l], (struct sockaddr *)&a, &len) || a.sin6_family != AF_INET6 ||
		    a.sin6_port != port)
			continue;
		if (IN6_IS_ADDR_UNSPECIFIED(&a.sin6_addr) || (loopback && IN6_IS_ADDR_LOOPBACK(&a.sin6_addr)))
			return true;
	}
	return false;
}

/*
 * A socket unit that listens on 127.0.0.1:P or 0.0.0.0:P alone (an older
 * drop-in) leaves the port's IPv6 side to any local user: said once, with
 * the line to add. Serving goes on.
 */
static void warn_of_missing_twin(const struct ht_metrics_http *h)
{
	for (unsigned int l = 0; h->log && host_has_ipv6() && l < h->nlisten; l++) {
		struct sockaddr_in a;
		socklen_t len = sizeof(a);
		bool loopback;

		if (getsockname(h->listen_fds[l], (struct sockaddr *)&a, &len) || a.sin_family != AF_INET)
			continue;
		loopback = a.sin_addr.s_addr == htonl(INADDR_LOOPBACK);
		if ((!loopback && a.sin_addr.s_addr != htonl(INADDR_ANY)) || has_ipv6_side(h, a.sin_port, loopback))
			continue;
		if (loopback)
			fprintf(h->log, "hypertrace-bpf: warning: --metrics systemd: the socket unit listens on 127.0.0.1:%u but not on [::1]:%u, where any local user can listen and answer scrapes of localhost in the exporter's name: add ListenStream=[::1]:%u to it\n",
				ntohs(a.sin_port), ntohs(a.sin_port), ntohs(a.sin_port));
		else
			fprintf(h->log, "hypertrace-bpf: warning: --metrics systemd: the socket unit listens on 0.0.0.0:%u but not on [::]:%u, where any local user can listen and answer scrapes in the exporter's name: give it ListenStream=%u instead (IPv6 and IPv4)\n",
				ntohs(a.sin_port), ntohs(a.sin_port), ntohs(a.sin_port));
		return;
	}
}

/* The listening sockets systemd passed: they stay bound while we restart. */
static int take_passed_sockets(struct ht_metrics_http *h, char *err, size_t errlen)
{
	int n = ht_socket_activation_take(h->listen_fds, HT_METRICS_MAX_LISTEN, err, errlen);

	if (n < 0)
		return -EBADF;
	h->nlisten = (unsigned int)n;
	warn_of_missing_twin(h);
	return 0;
}

int ht_metrics_http_start(struct ht_metrics_http **out, const struct ht_listen_addr *addr,
			  const struct ht_metrics_http_opts *opts, ht_metrics_body_fn body, void *ctx,
			  char *err, size_t errlen)
{
	struct ht_metrics_http *h = calloc(1, sizeof(*h));
	struct sockaddr_storage bound;
	socklen_t blen = sizeof(bound);
	sigset_t all, old;
	int ret;

	if (!h) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	h->wake_fd = -1;
	h->log = opts ? opts->log : NULL;
	h->body = body;
	h->ctx = ctx;
	pthread_mutex_init(&h->stats_lock, NULL);
	h->timeout_ns = (unsigned long long)(opts && opts->timeout_ms ? opts->timeout_ms : DEFAULT_TIMEOUT_MS) * 1000000ull;
	h->head_timeout_ns = (unsigned long long)(opts && opts->head_timeout_ms ? opts->head_timeout_ms :
						  DEFAULT_HEAD_TIMEOUT_MS) * 1000000ull;
	h->max_conns = opts && opts->max_conns ? opts->max_conns : DEFAULT_MAX_CONNS;
	h->max_per_client = opts && opts->max_per_client ? opts->max_per_client : h->max_conns / 4;
	h->max_per_client = HT_MAX(h->max_per_client, 1u);
	h->max_responses = opts && opts->max_responses ? opts->max_responses : DEFAULT_MAX_RESPONSES;
	h->conns = calloc(h->max_conns, sizeof(*h->conns));
	for (unsigned int i = 0; h->conns && i < h->max_conns; i++)
		h->conns[i].fd = -1;
	h->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (!h->conns || h->wake_fd < 0) {
		ret = -errno;
		snprintf(err, errlen, "cannot set up the metrics server: %s", strerror(errno));
		goto fail;
	}
	ret = addr->from_systemd ? take_passed_sockets(h, err, errlen) : bind_sockets(h, addr, err, errlen);
	if (ret)
		goto fail;
	if (getsockname(h->listen_fds[0], (struct sockaddr *)&bound, &blen) == 0)
		h->port = ntohs(bound.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&bound)->sin6_port :
							    ((struct sockaddr_in *)&bound)->sin_port);
	/* Signals (Ctrl-C) stay with the thread that drains. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = -pthread_create(&h->thread, NULL, serve, h);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret) {
		snprintf(err, errlen, "cannot start the metrics server thread: %s", strerror(-ret));
		goto fail;
	}
	h->thread_started = true;
	*out = h;
	return 0;
fail:
	ht_metrics_http_stop(h);
	return ret;
}

uint16_t ht_metrics_http_port(const struct ht_metrics_http *h)
{
	return h->port;
}

void ht_metrics_http_stop(struct ht_metrics_http *h)
{
	if (!h)
		return;
	if (h->thread_started) {
		uint64_t one = 1;
		/* An eventfd write fails only when the counter would overflow: never here. */
		ssize_t n = write(h->wake_fd, &one, sizeof(one));

		(void)n;
		pthread_join(h->thread, NULL);
	}
	for (unsigned int i = 0; h->conns && i < h->max_conns; i++)
		if (h->conns[i].fd >= 0)
			conn_close(h, &h->conns[i]);
	for (unsigned int l = 0; l < h->nlisten; l++)
		close(h->listen_fds[l]);
	if (h->wake_fd >= 0)
		close(h->wake_fd);
	pthread_mutex_destroy(&h->stats_lock);
	free(h->conns);
	free(h);
}

void ht_metrics_http_stats(struct ht_metrics_http *h, struct ht_metrics_http_stats *out)
{
	pthread_mutex_lock(&h->stats_lock);
	*out = h->shared_stats;
	pthread_mutex_unlock(&h->stats_lock);
}
