// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "top/top_run.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>
#include "cli.h"
#include "record/exit_sampler.h"
#include "record/vm_identity.h"
#include "common/util.h"

static volatile sig_atomic_t stop_requested, resized;

static void on_stop(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static void on_winch(int sig)
{
	(void)sig;
	resized = 1;
}

/* The terminal as top found it, restored however top ends. */
static struct termios saved_termios;
static bool termios_saved, screen_taken;

static void restore_terminal(void)
{
	if (screen_taken) {
		/* Cursor back, the screen as it was (the alternate screen left). */
		fputs("\033[?25h\033[?1049l", stdout);
		fflush(stdout);
		screen_taken = false;
	}
	if (termios_saved) {
		tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved_termios);
		termios_saved = false;
	}
}

/* Keys one at a time, no echo; the alternate screen, no cursor. */
static void take_terminal(void)
{
	struct termios raw;

	if (isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &saved_termios) == 0) {
		termios_saved = true;
		raw = saved_termios;
		raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
		raw.c_cc[VMIN] = 0;
		raw.c_cc[VTIME] = 0;
		tcsetattr(STDIN_FILENO, TCSAFLUSH, &raw);
	}
	fputs("\033[?1049h\033[?25l", stdout);
	screen_taken = true;
	atexit(restore_terminal);
}

struct top {
	const struct ht_top_opts *o;
	struct ht_exit_sampler sampler;
	struct ht_vm_names names;
	struct ht_top_view_opts view;
	bool terminal, sampled;
};

static bool alive(void *ctx, uint32_t pid)
{
	struct top *t = ctx;
	char path[64];

	snprintf(path, sizeof(path), "%s/%u", t->names.proc, pid);
	return access(path, F_OK) == 0;
}

static const char *vm_name(void *ctx, uint32_t pid)
{
	struct top *t = ctx;

	return ht_vm_names_lookup(&t->names, pid);
}

static const char *thread_name(void *ctx, uint32_t pid, uint32_t tid)
{
	struct top *t = ctx;

	return ht_vm_names_thread(&t->names, pid, tid);
}

static void draw(struct top *t)
{
	static const struct ht_exit_table empty;
	struct winsize ws;
	char *buf = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&buf, &len);

	if (!mem)
		return;
	t->view.now = time(NULL);
	t->view.interval_ns = t->sampled ? t->sampler.interval_ns : 0;
	if (t->terminal && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col) {
		t->view.width = ws.ws_col;
		t->view.height = ws.ws_row;
	}
	ht_top_view_write(mem, t->sampled ? &t->sampler.interval : &empty, &t->sampler.total, &t->view);
	fclose(mem);
	if (t->terminal) {
		/* In place: home, each line cleared first, the rest of the screen cleared; no last newline (no scroll). */
		fputs("\033[H", stdout);
		for (char *line = buf, *nl; line && *line; line = nl ? nl + 1 : NULL) {
			nl = strchr(line, '\n');
			fprintf(stdout, "\033[K%.*s%s", nl ? (int)(nl - line) : (int)strlen(line), line,
				nl && nl[1] ? "\n" : "");
		}
		fputs("\033[J", stdout);
	} else {
		fputs(buf, stdout);
		fputc('\n', stdout);
	}
	fflush(stdout);
	free(buf);
}

/* A key: false to quit. */
static bool key(struct top *t, char c)
{
	switch (c) {
	case 'q':
	case 'Q':
		return false;
	case 'v':
		t->view.vcpus = !t->view.vcpus;
		break;
	case 'r':
		t->view.reasons = !t->view.reasons;
		break;
	case 's':
		t->view.sort = (t->view.sort + 1) % HT_TOP_NSORTS;
		break;
	default:
		return true;
	}
	draw(t);
	return true;
}

int ht_top_run(const struct ht_top_opts *o, struct ht_tracer *tracer)
{
	struct top t = { .o = o, .names = { .proc = o->proc ? o->proc : "/proc" } };
	unsigned long long interval_ns = (unsigned long long)(o->interval_s * 1e9);
	unsigned int frames = 0;
	struct sigaction stop = { .sa_handler = on_stop }, winch = { .sa_handler = on_winch };

	t.terminal = !o->batch && isatty(STDOUT_FILENO);
	t.view = (struct ht_top_view_opts){ .sort = o->sort, .vcpus = o->vcpus, .reasons = o->reasons,
					    .terminal = t.terminal, .alive = alive, .vm_name = vm_name,
					    .thread_name = thread_name, .ctx = &t };
	if (ht_exit_sampler_init(&t.sampler, tracer, NULL, ht_monotonic_ns()))
		return ht_runtime_error("out of memory");
	t.sampler.filters = o->filters;
	sigaction(SIGINT, &stop, NULL);
	sigaction(SIGTERM, &stop, NULL);
	sigaction(SIGHUP, &stop, NULL);
	sigaction(SIGWINCH, &winch, NULL);
	if (t.terminal) {
		take_terminal();
		draw(&t); /* at once: the header, and the VMs known so far */
	}
	if (o->follow && t.terminal)
		o->follow->log = NULL; /* the screen is the view's: a message would scroll it */
	unsigned long long next = ht_monotonic_ns() + interval_ns;
	bool running = true;
	while (running && !stop_requested) {
		unsigned long long now = ht_monotonic_ns();
		if (o->follow)
			ht_vm_follower_tick(o->follow, now);
		if (now >= next) {
			if (ht_exit_sampler_sample(&t.sampler, now, false) == 0)
				t.sampled = true;
			draw(&t);
			next = now + interval_ns;
			if (o->iterations && ++frames >= o->iterations)
				break;
			continue;
		}
		if (resized) {
			resized = 0;
			draw(&t);
		}
		struct pollfd in = { .fd = STDIN_FILENO, .events = POLLIN };
		int ms = (int)((next - now) / 1000000ull) + 1;
		const int follow_ms = (int)(HT_VM_FOLLOW_INTERVAL_NS / 1000000ull);
		/* A VM's new process is taken on between frames too: within a follow interval of its first exit. */
		if (o->follow && ms > follow_ms)
			ms = follow_ms;
		if (termios_saved && poll(&in, 1, ms) > 0) {
			char c;
			while (running && read(STDIN_FILENO, &c, 1) == 1)
				running = key(&t, c);
		} else if (!termios_saved) {
			struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };
			nanosleep(&ts, NULL);
		}
	}
	restore_terminal();
	ht_exit_sampler_free(&t.sampler);
	return HT_EXIT_OK;
}
