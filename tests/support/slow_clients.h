/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Hostile HTTP clients for the metrics server tests: N connections to a
 * loopback port, half of them idle (connect, never send), half trickling a
 * request head that never ends (one byte every 500 ms). A connection the
 * server closes is opened again a second later, so the server faces N
 * clients for as long as they run, as it would from an attacker. One thread
 * drives them all with non-blocking sockets; every wait is bounded.
 */
#ifndef HT_SLOW_CLIENTS_H
#define HT_SLOW_CLIENTS_H

#include <stdint.h>

struct ht_slow_clients;

struct ht_slow_clients_stats {
	unsigned int connected;          /* connections established now (from the clients' side) */
	unsigned int ever_connected;     /* clients that have been connected at least once */
	unsigned long long opened;       /* connections established in all */
	unsigned long long closed_by_server;
	unsigned long long bytes_sent;
};

/*
 * The clients' own address, 127.0.0.2: not the scraper's (127.0.0.1). The
 * server's fairness is per client address, which is what stands between an
 * attacker and Prometheus on another host; connections that share the
 * scraper's address compete with its own for the same 16 slots.
 */
#define HT_SLOW_CLIENTS_ADDR 0x7f000002u

/* Starts n clients (n <= 4096) from 127.0.0.2 against 127.0.0.1:port. 0 or -errno. */
int ht_slow_clients_start(struct ht_slow_clients **out, uint16_t port, unsigned int n);
void ht_slow_clients_stats(struct ht_slow_clients *s, struct ht_slow_clients_stats *st);
/* Stops the thread and closes every connection. NULL is fine. */
void ht_slow_clients_stop(struct ht_slow_clients *s);

#endif
