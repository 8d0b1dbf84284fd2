// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "common/small_file.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

ssize_t ht_read_small_file(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t got = 0;

	if (fd < 0)
		return -1;
	while (got < cap - 1) {
		ssize_t n = read(fd, buf + got, cap - 1 - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	buf[got] = '\0';
	return (ssize_t)got;
}
