// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Hostile HTTP clients against a metrics port, for the shell suites:
 *
 *   slow_clients PORT N READYFILE STOPFILE
 *
 * keeps N connections from 127.0.0.2 to 127.0.0.1:PORT (half idle, half trickling a
 * request head that never ends; reopened a second after the server closes
 * them: tests/support/slow_clients.h) until STOPFILE exists, at most 300 s.
 * Once every client has been connected (or after 20 s), it writes its counts
 * to READYFILE; at the end it prints them on stdout.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "common/parse_number.h"
#include "common/util.h"
#include "slow_clients.h"

static void print_stats(FILE *f, const struct ht_slow_clients_stats *st)
{
	fprintf(f, "connected %u\never_connected %u\nopened %llu\nclosed_by_server %llu\nbytes_sent %llu\n",
		st->connected, st->ever_connected, st->opened, st->closed_by_server, st->bytes_sent);
}

int main(int argc, char **argv)
{
	struct ht_slow_clients *s;
	struct ht_slow_clients_stats st;
	uint64_t port, n;
	bool ready = false;

	if (argc != 5 || !ht_parse_u64(argv[1], 0, 65535, &port) || !ht_parse_u64(argv[2], 0, 4096, &n) || !n) {
		fprintf(stderr, "usage: slow_clients PORT N READYFILE STOPFILE\n");
		return 2;
	}
	if (ht_slow_clients_start(&s, (uint16_t)port, (unsigned int)n)) {
		perror("slow_clients");
		return 1;
	}
	unsigned long long start = ht_monotonic_ns();
	for (;;) {
		unsigned long long elapsed = ht_monotonic_ns() - start;

		usleep(100000);
		if (access(argv[4], F_OK) == 0 || elapsed > 300000000000ull)
			break;
		ht_slow_clients_stats(s, &st);
		if (!ready && (st.ever_connected == n || elapsed > 20000000000ull)) {
			char tmp[4096];
			FILE *f;

			/* Written whole, then renamed: the suite never reads half a file. */
			snprintf(tmp, sizeof(tmp), "%s.tmp", argv[3]);
			f = fopen(tmp, "w");
			if (f) {
				print_stats(f, &st);
				if (fclose(f) == 0)
					rename(tmp, argv[3]);
			}
			ready = true;
		}
	}
	ht_slow_clients_stats(s, &st);
	ht_slow_clients_stop(s);
	print_stats(stdout, &st);
	return 0;
}
