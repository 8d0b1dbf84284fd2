// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "record/command.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "cli.h"

/* How long the command has to end after SIGTERM before it gets SIGKILL. */
#define COMMAND_GRACE_MS 5000

static bool is_executable_file(const char *path)
{
	struct stat sb;

	return stat(path, &sb) == 0 && S_ISREG(sb.st_mode) && access(path, X_OK) == 0;
}

int ht_command_find(const char *name, char *err, size_t errlen)
{
	const char *path = getenv("PATH");
	char candidate[4096], default_path[256];

	if (strchr(name, '/')) {
		if (is_executable_file(name))
			return 0;
		snprintf(err, errlen, "cannot run '%s': %s: check the command name and PATH", name,
			 access(name, F_OK) ? strerror(errno) : "not an executable file");
		return -1;
	}
	/* Without PATH, glibc's execvp searches confstr(_CS_PATH): "/bin:/usr/bin". */
	if (!path) {
		size_t n = confstr(_CS_PATH, default_path, sizeof(default_path));
		path = n && n <= sizeof(default_path) ? default_path : "/bin:/usr/bin";
	}
	for (const char *dir = path;; dir++) {
		size_t len = strcspn(dir, ":");

		/* An empty PATH entry means the current directory, as for execvp. */
		if (snprintf(candidate, sizeof(candidate), "%.*s%s%s", (int)len, len ? dir : ".", "/", name) <
			    (int)sizeof(candidate) &&
		    is_executable_file(candidate))
			return 0;
		dir += len;
		if (!*dir)
			break;
	}
	snprintf(err, errlen, "cannot run '%s': not found in PATH: check the command name and PATH", name);
	return -1;
}

int ht_command_start(struct ht_command *c, char **argv, const struct ht_command_user *user, int *gate)
{
	int fds[2], ret;
	pid_t pid;

	c->argv = argv;
	if (pipe2(fds, O_CLOEXEC))
		return -errno;
	pid = fork();
	if (pid == 0) {
		char err[256], byte;

		close(fds[1]);
		while (read(fds[0], &byte, 1) < 0 && errno == EINTR)
			;
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		if (ht_command_user_apply(user, err, sizeof(err))) {
			fprintf(stderr, "hypertrace-bpf: %s\n", err);
			_exit(127);
		}
		execvp(argv[0], argv);
		fprintf(stderr, "hypertrace-bpf: cannot run '%s': %s: check the command name and PATH\n", argv[0],
			strerror(errno));
		_exit(127);
	}
	ret = pid < 0 ? -errno : 0;
	close(fds[0]);
	if (pid < 0) {
		close(fds[1]);
		return ret;
	}
	c->pid = pid;
	*gate = fds[1];
	return 0;
}

bool ht_command_reap(struct ht_command *c)
{
	if (c->pid > 0 && waitpid(c->pid, &c->status, WNOHANG) == c->pid) {
		c->pid = -1;
		c->ended = true;
	}
	return c->ended;
}

void ht_command_stop(struct ht_command *c)
{
	if (c->pid <= 0)
		return;
	kill(c->pid, SIGTERM);
	for (int waited = 0; waited < COMMAND_GRACE_MS && !ht_command_reap(c); waited += 10)
		usleep(10 * 1000);
	if (c->pid > 0) {
		kill(c->pid, SIGKILL);
		waitpid(c->pid, &c->status, 0);
		c->pid = -1;
		return;
	}
	/* Ended by our SIGTERM: the run, not the command, decided the end. */
	if (WIFSIGNALED(c->status) && WTERMSIG(c->status) == SIGTERM)
		c->ended = false;
}

int ht_command_finish(struct ht_command *c)
{
	ht_command_stop(c);
	if (!c->ended)
		return HT_EXIT_OK;
	if (WIFSIGNALED(c->status)) {
		fprintf(stderr, "hypertrace-bpf: '%s' was killed by signal %d\n", c->argv[0], WTERMSIG(c->status));
		return 128 + WTERMSIG(c->status);
	}
	if (WEXITSTATUS(c->status) != 0)
		fprintf(stderr, "hypertrace-bpf: '%s' exited with status %d\n", c->argv[0], WEXITSTATUS(c->status));
	return WEXITSTATUS(c->status);
}
