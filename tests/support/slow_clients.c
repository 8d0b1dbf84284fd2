// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "slow_clients.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>
#include "common/util.h"

#define MAX_CLIENTS 4096
#define TICK_MS 50
#define TRICKLE_EVERY_NS 500000000ull
#define RECONNECT_AFTER_NS 1000000000ull

/* A request head that never ends: the request line, then one header line forever. */
static const char head_start[] = "GET /metrics HTTP/1.1\r\nX-Slow: ";

enum client_state { CLOSED, CONNECTING, OPEN };

struct client {
	int fd;
	enum client_state state;
	bool trickles, was_connected;
	size_t sent; /* bytes of the endless head sent on this connection */
	unsigned long long next_ns; /* CLOSED: when to reconnect; OPEN and trickling: next byte */
};

struct ht_slow_clients {
	uint16_t port;
	unsigned int n;
	struct client *c;
	struct pollfd *pfd;
	pthread_t thread;
	pthread_mutex_t lock; /* guards the stats */
	struct ht_slow_clients_stats stats;
	volatile int stop;
};

static void client_close(struct ht_slow_clients *s, struct client *c, bool by_server,
			 unsigned long long now)
{
	if (c->fd >= 0)
		close(c->fd);
	pthread_mutex_lock(&s->lock);
	if (c->state == OPEN) {
		s->stats.connected--;
		if (by_server)
			s->stats.closed_by_server++;
	}
	pthread_mutex_unlock(&s->lock);
	c->fd = -1;
	c->state = CLOSED;
	c->next_ns = now + RECONNECT_AFTER_NS;
}

static void client_connect(struct ht_slow_clients *s, struct client *c, unsigned long long now)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(s->port),
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct sockaddr_in from = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(HT_SLOW_CLIENTS_ADDR) };

	c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	c->sent = 0;
	if (c->fd < 0) {
		c->next_ns = now + RECONNECT_AFTER_NS;
		return;
	}
	if (bind(c->fd, (struct sockaddr *)&from, sizeof(from)) ||
	    (connect(c->fd, (struct sockaddr *)&sin, sizeof(sin)) && errno != EINPROGRESS)) {
		close(c->fd);
		c->fd = -1;
		c->next_ns = now + RECONNECT_AFTER_NS;
		return;
	}
	c->state = CONNECTING;
}

static void client_opened(struct ht_slow_clients *s, struct client *c, unsigned long long now)
{
	c->state = OPEN;
	c->next_ns = now;
	pthread_mutex_lock(&s->lock);
	s->stats.connected++;
	s->stats.opened++;
	if (!c->was_connected)
		s->stats.ever_connected++;
	pthread_mutex_unlock(&s->lock);
	c->was_connected = true;
}

/* One more byte of the endless head. */
static void trickle(struct ht_slow_clients *s, struct client *c, unsigned long long now)
{
	char b = c->sent < sizeof(head_start) - 1 ? head_start[c->sent] : 'a';

	if (send(c->fd, &b, 1, MSG_NOSIGNAL | MSG_DONTWAIT) == 1) {
		c->sent++;
		pthread_mutex_lock(&s->lock);
		s->stats.bytes_sent++;
		pthread_mutex_unlock(&s->lock);
	} else if (errno != EAGAIN) {
		client_close(s, c, true, now);
		return;
	}
	c->next_ns = now + TRICKLE_EVERY_NS;
}

static void *drive(void *arg)
{
	struct ht_slow_clients *s = arg;

	while (!s->stop) {
		unsigned long long now = ht_monotonic_ns();

		for (unsigned int i = 0; i < s->n; i++) {
			struct client *c = &s->c[i];

			if (c->state == CLOSED && now >= c->next_ns)
				client_connect(s, c, now);
			if (c->state == OPEN && c->trickles && now >= c->next_ns)
				trickle(s, c, now);
			s->pfd[i] = (struct pollfd){ .fd = c->state == CLOSED ? -1 : c->fd,
						     .events = c->state == CONNECTING ? POLLOUT : POLLIN };
		}
		if (poll(s->pfd, s->n, TICK_MS) < 0 && errno != EINTR)
			break;
		now = ht_monotonic_ns();
		for (unsigned int i = 0; i < s->n; i++) {
			struct client *c = &s->c[i];
			short rev = s->pfd[i].revents;
			char buf[256];
			int err = 0;
			socklen_t len = sizeof(err);

			if (!rev || c->state == CLOSED)
				continue;
			if (c->state == CONNECTING) {
				if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0)
					client_opened(s, c, now);
				else
					client_close(s, c, false, now);
				continue;
			}
			/* Open: the server may only close it (or answer it, which ends in a close). */
			ssize_t n = recv(c->fd, buf, sizeof(buf), MSG_DONTWAIT);
			if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
				client_close(s, c, true, now);
		}
	}
	return NULL;
}

int ht_slow_clients_start(struct ht_slow_clients **out, uint16_t port, unsigned int n)
{
	struct ht_slow_clients *s;
	struct rlimit rl;
	int ret;

	if (n == 0 || n > MAX_CLIENTS)
		return -EINVAL;
	/* n sockets besides what the process holds: raise the soft limit as far as allowed. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->port = port;
	s->n = n;
	s->c = calloc(n, sizeof(*s->c));
	s->pfd = calloc(n, sizeof(*s->pfd));
	if (!s->c || !s->pfd) {
		free(s->c);
		free(s->pfd);
		free(s);
		return -ENOMEM;
	}
	for (unsigned int i = 0; i < n; i++)
		s->c[i] = (struct client){ .fd = -1, .state = CLOSED, .trickles = i % 2 == 1 };
	pthread_mutex_init(&s->lock, NULL);
	ret = -pthread_create(&s->thread, NULL, drive, s);
	if (ret) {
		pthread_mutex_destroy(&s->lock);
		free(s->c);
		free(s->pfd);
		free(s);
		return ret;
	}
	*out = s;
	return 0;
}

void ht_slow_clients_stats(struct ht_slow_clients *s, struct ht_slow_clients_stats *st)
{
	pthread_mutex_lock(&s->lock);
	*st = s->stats;
	pthread_mutex_unlock(&s->lock);
}

void ht_slow_clients_stop(struct ht_slow_clients *s)
{
	if (!s)
		return;
	s->stop = 1;
	pthread_join(s->thread, NULL);
	for (unsigned int i = 0; i < s->n; i++)
		if (s->c[i].fd >= 0)
			close(s->c[i].fd);
	pthread_mutex_destroy(&s->lock);
	free(s->c);
	free(s->pfd);
	free(s);
}
