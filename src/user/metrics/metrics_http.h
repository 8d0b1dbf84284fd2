/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The HTTP side of `record --metrics`: one thread that serves GET /metrics.
 *
 * It never holds up the drain: the drain thread only publishes snapshots
 * (metrics_exporter.c), and this thread renders a response per request from
 * the latest one. One poll loop over nonblocking sockets. Whatever clients
 * do, a scrape is answered at once and memory stays bounded:
 *   - the request head must arrive within 2 s of the connect, the response
 *     be sent within 10 s; a head longer than 8 KiB is refused;
 *   - 64 connection slots, at most a quarter of them per client (an IPv4
 *     address, an IPv6 /64); the server always accepts, and a newcomer
 *     takes the slot of its client's least worthy connection when that
 *     client is at its cap, else of the busiest client's when all are
 *     taken: first one still waiting for its head (oldest first), then the
 *     response whose client has read nothing for longest;
 *   - at most 8 rendered responses (a full registry is about 3 MB) at once,
 *     the stalest one giving way to a new request.
 * So a slow or hostile client costs this thread a slot for a bounded time and
 * bounded memory, and the drain nothing.
 */
#ifndef HT_METRICS_HTTP_H
#define HT_METRICS_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>

/*
 * Where to listen: [ADDR:]PORT, ADDR an IPv4 address or a bracketed IPv6 one;
 * or "systemd": the listening sockets systemd passed (socket_activation.h),
 * which stay bound while the recorder restarts.
 *
 * A port has a twin in the other address family: a process listening on
 * 127.0.0.1:P leaves [::1]:P to any local user (IPV6_V6ONLY), and a scraper
 * of "localhost" may go there first. So the loopback forms (PORT alone,
 * 127.0.0.1:P, [::1]:P) listen on both loopbacks, and the forms of every
 * address (0.0.0.0:P, [::]:P) on one dual-stack socket, [::]:P with
 * IPV6_V6ONLY off. On a host without IPv6 each keeps its IPv4 socket alone,
 * and says so.
 */
enum ht_listen_scope {
	HT_LISTEN_ONE,      /* the one address given (another host's address has no twin here) */
	HT_LISTEN_LOOPBACK, /* 127.0.0.1:P and [::1]:P */
	HT_LISTEN_ANY,      /* [::]:P dual-stack (0.0.0.0:P without IPv6) */
};

struct ht_listen_addr {
	struct sockaddr_storage sa; /* as written */
	socklen_t len;
	enum ht_listen_scope scope;
	bool from_systemd; /* "systemd": sa, len and scope unused */
	char text[96]; /* as the user wrote it, for messages: "127.0.0.1:9464" */
};

#define HT_METRICS_DEFAULT_ADDR "127.0.0.1"
#define HT_METRICS_FROM_SYSTEMD "systemd"
/* Listening sockets one server serves at most (bound, or passed by systemd). */
#define HT_METRICS_MAX_LISTEN 16

/* Parses "[ADDR:]PORT" (PORT 1..65535) or "systemd". False if malformed. */
bool ht_listen_addr_parse(const char *spec, struct ht_listen_addr *out);

/* Writes the body of GET /metrics into out; called on the HTTP thread. 0 or -errno. */
typedef int (*ht_metrics_body_fn)(void *ctx, FILE *out);

struct ht_metrics_http_opts {
	int timeout_ms;              /* per connection, from accept to the last byte sent; 0: 10 s */
	int head_timeout_ms;         /* from accept to the end of the request head; 0: 2 s */
	unsigned int max_conns;      /* connection slots; 0: 64 */
	unsigned int max_per_client; /* slots one client address may hold; 0: max_conns / 4 */
	unsigned int max_responses;  /* rendered responses held at once; 0: 8 */
	FILE *log;                   /* one-line notices (no IPv6 here: IPv4 only); NULL: none */
};

/* What the server holds, for tests: now, and the most at any time. */
struct ht_metrics_http_stats {
	unsigned int connections, peak_connections;
	unsigned int responses, peak_responses;              /* rendered, being sent */
	unsigned long long response_bytes, peak_response_bytes;
	unsigned long long accepted;
	unsigned long long evicted;   /* closed to make room for a newcomer or a new response */
	unsigned long long timed_out; /* closed at a deadline */
};

struct ht_metrics_http;

/*
 * Binds and listens (so "address in use" is known at once: on either
 * family's socket it is an error, the twin left to another process being
 * what it prevents), or takes the sockets systemd passed, then starts the
 * thread. 0, or a negative errno with
 * a one-line reason in err.
 */
int ht_metrics_http_start(struct ht_metrics_http **out, const struct ht_listen_addr *addr,
			  const struct ht_metrics_http_opts *opts, ht_metrics_body_fn body, void *ctx,
			  char *err, size_t errlen);
/* The port actually bound (of the first socket; useful when PORT was 0 in tests). */
uint16_t ht_metrics_http_port(const struct ht_metrics_http *h);
/* A copy of the server's counts, as of its last poll round (any thread). */
void ht_metrics_http_stats(struct ht_metrics_http *h, struct ht_metrics_http_stats *out);
/* Stops the thread, closes every connection. NULL is fine. */
void ht_metrics_http_stop(struct ht_metrics_http *h);

#endif
