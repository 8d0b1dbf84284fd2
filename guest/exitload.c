// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * exitload: makes a KVM guest exit, a chosen number of times, for one chosen
 * cause, from the guest's user space (as root), so that the host's exit
 * counts, causes and times can be checked against a known workload:
 *
 *   exitload cpuid COUNT [LEAF]   CPUID: always intercepted, handled in KVM
 *   exitload pio PORT COUNT       OUT to an I/O port (0x80: QEMU answers in
 *                                 its user space, KVM_EXIT_IO)
 *   exitload mmio FILE COUNT      32-bit reads at offset 0 of a PCI BAR mapped
 *                                 from sysfs (e.g. QEMU's edu device's
 *                                 resource0: KVM_EXIT_MMIO)
 *   exitload msr INDEX COUNT      RDMSR of INDEX through /dev/cpu/0/msr (the
 *                                 msr module; e.g. 0x1b, IA32_APICBASE: KVM
 *                                 intercepts and answers it in the kernel)
 *
 * Prints "exitload: MODE COUNT exits in SECONDS s" on success. Exit status 2
 * for a bad command line, 1 when the guest refuses the access.
 */
#include <cpuid.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "common/parse_number.h"

#define USAGE                                                                            \
	"usage: exitload cpuid COUNT [LEAF] | exitload pio PORT COUNT | exitload mmio FILE " \
	"COUNT | exitload msr INDEX COUNT (see guest/README.md)\n"
/* Enough for a long run, small enough that a typo cannot hang a guest for days. */
#define EXITLOAD_MAX_COUNT 100000000ull

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int usage_error(const char *what, const char *arg)
{
	fprintf(stderr, "exitload: invalid %s '%s'; " USAGE, what, arg);
	return 2;
}

static void cpuid_loop(uint64_t count, unsigned int leaf)
{
	unsigned int eax, ebx, ecx, edx;

	for (uint64_t i = 0; i < count; i++)
		__cpuid_count(leaf, 0, eax, ebx, ecx, edx);
	/* The results are not used: the instruction's exit is the point. */
	(void)eax, (void)ebx, (void)ecx, (void)edx;
}

/*
 * Through /dev/port: the kernel issues each OUT, so no I/O permission bitmap
 * is involved (under emulated nested SVM a user-space OUT allowed by ioperm
 * was seen to fault instead of exiting). One write, one OUT, one exit.
 */
static int pio_loop(uint64_t count, unsigned int port)
{
	unsigned char zero = 0;
	int fd = open("/dev/port", O_WRONLY);

	if (fd < 0) {
		fprintf(stderr, "exitload: /dev/port: %s: run as root in the guest (mknod /dev/port c 1 4)\n",
			strerror(errno));
		return 1;
	}
	for (uint64_t i = 0; i < count; i++) {
		if (pwrite(fd, &zero, 1, (off_t)port) != 1) {
			fprintf(stderr, "exitload: OUT to port 0x%x: %s\n", port, strerror(errno));
			close(fd);
			return 1;
		}
	}
	close(fd);
	return 0;
}

static int mmio_loop(uint64_t count, const char *path)
{
	long page = sysconf(_SC_PAGESIZE);
	volatile uint32_t *reg;
	volatile uint32_t sink;
	int fd = open(path, O_RDWR | O_SYNC);

	if (fd < 0) {
		fprintf(stderr, "exitload: %s: %s: give a PCI BAR's sysfs resource file\n", path,
			strerror(errno));
		return 1;
	}
	reg = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (reg == MAP_FAILED) {
		fprintf(stderr, "exitload: cannot map %s: %s: give a memory BAR's resource file\n",
			path, strerror(errno));
		return 1;
	}
	for (uint64_t i = 0; i < count; i++)
		sink = reg[0];
	(void)sink;
	munmap((void *)reg, (size_t)page);
	return 0;
}

/*
 * Through the msr module: the guest kernel issues each RDMSR (on CPU 0, the
 * file's), which user space cannot. One read, one RDMSR, one exit.
 */
static int msr_loop(uint64_t count, uint32_t index)
{
	uint64_t value;
	int fd = open("/dev/cpu/0/msr", O_RDONLY);

	if (fd < 0) {
		fprintf(stderr,
			"exitload: /dev/cpu/0/msr: %s: run as root in the guest, with the msr module "
			"loaded (modprobe msr)\n",
			strerror(errno));
		return 1;
	}
	for (uint64_t i = 0; i < count; i++) {
		if (pread(fd, &value, sizeof(value), (off_t)index) != (ssize_t)sizeof(value)) {
			fprintf(stderr, "exitload: RDMSR 0x%x: %s: the guest cannot read this MSR\n", index,
				strerror(errno));
			close(fd);
			return 1;
		}
	}
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	uint64_t count, value = 0;
	const char *mode = argc > 1 ? argv[1] : "";
	double start;
	int err = 0;

	if (!strcmp(mode, "cpuid") && (argc == 3 || argc == 4)) {
		if (!ht_parse_u64(argv[2], 1, EXITLOAD_MAX_COUNT, &count))
			return usage_error("COUNT", argv[2]);
		if (argc == 4 && !ht_parse_u64(argv[3], 0, UINT32_MAX, &value))
			return usage_error("LEAF", argv[3]);
		start = now_s();
		cpuid_loop(count, (unsigned int)value);
	} else if (!strcmp(mode, "pio") && argc == 4) {
		if (!ht_parse_u64(argv[2], 0, 0xffff, &value))
			return usage_error("PORT", argv[2]);
		if (!ht_parse_u64(argv[3], 1, EXITLOAD_MAX_COUNT, &count))
			return usage_error("COUNT", argv[3]);
		start = now_s();
		err = pio_loop(count, (unsigned int)value);
	} else if (!strcmp(mode, "mmio") && argc == 4) {
		if (!ht_parse_u64(argv[3], 1, EXITLOAD_MAX_COUNT, &count))
			return usage_error("COUNT", argv[3]);
		start = now_s();
		err = mmio_loop(count, argv[2]);
	} else if (!strcmp(mode, "msr") && argc == 4) {
		if (!ht_parse_u64(argv[2], 0, UINT32_MAX, &value))
			return usage_error("INDEX", argv[2]);
		if (!ht_parse_u64(argv[3], 1, EXITLOAD_MAX_COUNT, &count))
			return usage_error("COUNT", argv[3]);
		start = now_s();
		err = msr_loop(count, (uint32_t)value);
	} else {
		fputs("exitload: " USAGE, stderr);
		return 2;
	}
	if (err)
		return err;
	printf("exitload: %s %llu exits in %.3f s\n", mode, (unsigned long long)count,
	       now_s() - start);
	return 0;
}
