/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The HTTP side of `record --metrics`: one thread that serves GET /metrics.
 *
 * It never holds up the drain: the drain thread only publishes snapshots
 * (metrics_exporter.c), and this thread renders a response per request from
 * the latest one. Sockets are nonblocking, each connection has a deadline
 * (a client that connects and never sends or never reads is closed when it
 * passes), and connections are capped, so a slow or hostile client costs
 * this thread a slot and bounded memory, and the drain nothing.
 */
#ifndef HT_METRICS_HTTP_H
#define HT_METRICS_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>

/* Where to listen: [ADDR:]PORT, ADDR an IPv4 address or a bracketed IPv6 one. */
struct ht_listen_addr {
	struct sockaddr_storage sa;
	socklen_t len;
	char text[96]; /* as the user wrote it, for messages: "127.0.0.1:9464" */
};

#define HT_METRICS_DEFAULT_ADDR "127.0.0.1"

/* Parses "[ADDR:]PORT" (PORT 1..65535). False if malformed. */
bool ht_listen_addr_parse(const char *spec, struct ht_listen_addr *out);

/* Writes the body of GET /metrics into out; called on the HTTP thread. 0 or -errno. */
typedef int (*ht_metrics_body_fn)(void *ctx, FILE *out);

struct ht_metrics_http_opts {
	int timeout_ms;        /* per connection, from accept to the last byte sent; 0: 10 s */
	unsigned int max_conns; /* 0: 16 */
};

struct ht_metrics_http;

/*
 * Binds and listens (so "address in use" is known at once), then starts the
 * thread. 0, or -errno with a one-line reason in err.
 */
int ht_metrics_http_start(struct ht_metrics_http **out, const struct ht_listen_addr *addr,
			  const struct ht_metrics_http_opts *opts, ht_metrics_body_fn body, void *ctx,
			  char *err, size_t errlen);
/* The port actually bound (useful when PORT was 0 in tests). */
uint16_t ht_metrics_http_port(const struct ht_metrics_http *h);
/* Stops the thread, closes every connection. NULL is fine. */
void ht_metrics_http_stop(struct ht_metrics_http *h);

#endif
