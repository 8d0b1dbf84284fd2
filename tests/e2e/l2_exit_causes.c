// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Guest workload of the nested exits test (tests/e2e/test_nested_exits.sh),
 * run as root in the KVM guest: exits of known causes, a given number of
 * each.
 *
 *   l2_exit_causes outb N        N writes of a byte to I/O port 0x80 (QEMU
 *                                handles the port in user space), each an
 *                                outb of the guest kernel: a write of one
 *                                byte at offset 0x80 of /dev/port (an outb
 *                                from user space after ioperm() faults
 *                                under the nested machine's emulation)
 *   l2_exit_causes cpuid N LEAF  N CPUID instructions of leaf LEAF (KVM
 *                                handles them itself)
 *
 * Built statically by the test, with the host's compiler.
 */
#include <cpuid.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	unsigned long n = argc > 2 ? strtoul(argv[2], NULL, 0) : 0;

	if (argc > 2 && !strcmp(argv[1], "outb")) {
		int fd = open("/dev/port", O_WRONLY);
		const char zero = 0;

		if (fd < 0) {
			perror("l2_exit_causes: /dev/port");
			return 1;
		}
		for (unsigned long i = 0; i < n; i++) {
			if (pwrite(fd, &zero, 1, 0x80) != 1) {
				perror("l2_exit_causes: write to port 0x80");
				return 1;
			}
		}
		close(fd);
	} else if (argc > 3 && !strcmp(argv[1], "cpuid")) {
		unsigned int leaf = (unsigned int)strtoul(argv[3], NULL, 0), a, b, c, d;

		for (unsigned long i = 0; i < n; i++)
			__cpuid_count(leaf, 0, a, b, c, d);
		(void)a, (void)b, (void)c, (void)d;
	} else {
		fprintf(stderr, "usage: l2_exit_causes outb N | cpuid N LEAF\n");
		return 2;
	}
	printf("l2_exit_causes %s %lu done\n", argv[1], n);
	return 0;
}
