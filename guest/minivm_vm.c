// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "minivm_vm.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include "common/util.h"

/* Where VMX keeps the real-mode TSS KVM needs without unrestricted guest: above our memory. */
#define MINIVM_TSS_ADDR 0xfffbd000ul

static const char *const exit_reason_names[] = {
	[KVM_EXIT_UNKNOWN] = "UNKNOWN",
	[KVM_EXIT_EXCEPTION] = "EXCEPTION",
	[KVM_EXIT_IO] = "IO",
	[KVM_EXIT_HYPERCALL] = "HYPERCALL",
	[KVM_EXIT_DEBUG] = "DEBUG",
	[KVM_EXIT_HLT] = "HLT",
	[KVM_EXIT_MMIO] = "MMIO",
	[KVM_EXIT_IRQ_WINDOW_OPEN] = "IRQ_WINDOW_OPEN",
	[KVM_EXIT_SHUTDOWN] = "SHUTDOWN",
	[KVM_EXIT_FAIL_ENTRY] = "FAIL_ENTRY",
	[KVM_EXIT_INTR] = "INTR",
	[KVM_EXIT_SET_TPR] = "SET_TPR",
	[KVM_EXIT_TPR_ACCESS] = "TPR_ACCESS",
	[KVM_EXIT_NMI] = "NMI",
	[KVM_EXIT_INTERNAL_ERROR] = "INTERNAL_ERROR",
	[KVM_EXIT_SYSTEM_EVENT] = "SYSTEM_EVENT",
	[KVM_EXIT_X86_RDMSR] = "X86_RDMSR",
	[KVM_EXIT_X86_WRMSR] = "X86_WRMSR",
};

static const char *exit_reason_name(uint32_t reason)
{
	if (reason < ARRAY_SIZE(exit_reason_names) &&
	    exit_reason_names[reason])
		return exit_reason_names[reason];
	return "?";
}

int minivm_vm_open(struct minivm_vm *vm, const char *path, char *err, size_t err_size)
{
	int version;

	memset(vm, 0, sizeof(*vm));
	vm->kvm_fd = vm->vm_fd = -1;
	vm->kvm_fd = open(path, O_RDWR | O_CLOEXEC);
	if (vm->kvm_fd < 0) {
		int e = errno;

		snprintf(err, err_size, "cannot open %s: %s; %s", path, strerror(e),
			 e == EACCES || e == EPERM ? "run as root or as a member of the kvm group"
						   : "load kvm_intel or kvm_amd (modprobe)");
		return -1;
	}
	version = ioctl(vm->kvm_fd, KVM_GET_API_VERSION, 0);
	if (version < 0) {
		snprintf(err, err_size, "%s is not a KVM device (KVM_GET_API_VERSION: %s)", path,
			 strerror(errno));
		return -1;
	}
	if (version != KVM_API_VERSION) {
		snprintf(err, err_size, "%s speaks KVM API version %d, minivm needs %d", path,
			 version, KVM_API_VERSION);
		return -1;
	}
	return 0;
}

/* Real mode at CS:IP = 0:MINIVM_CODE_ADDR, DS on the vCPU's result slot, EDI = index. */
static int setup_vcpu_registers(struct minivm_vcpu *v, char *err, size_t err_size)
{
	uint32_t slot = MINIVM_SLOT_BASE + v->index * MINIVM_SLOT_SIZE;
	struct kvm_sregs sregs;
	struct kvm_regs regs;

	if (ioctl(v->fd, KVM_GET_SREGS, &sregs) < 0) {
		snprintf(err, err_size, "KVM_GET_SREGS on vcpu %u failed: %s", v->index,
			 strerror(errno));
		return -1;
	}
	/* A new vCPU starts at the reset vector F000:FFF0 with CS base 0xffff0000. */
	sregs.cs.base = 0;
	sregs.cs.selector = 0;
	sregs.ds.base = slot;
	sregs.ds.selector = (uint16_t)(slot >> 4);
	if (ioctl(v->fd, KVM_SET_SREGS, &sregs) < 0) {
		snprintf(err, err_size, "KVM_SET_SREGS on vcpu %u failed: %s", v->index,
			 strerror(errno));
		return -1;
	}
	memset(&regs, 0, sizeof(regs));
	regs.rip = MINIVM_CODE_ADDR;
	regs.rflags = 0x2; /* bit 1 is reserved and must be set; IF clear: no interrupts */
	regs.rdi = v->index;
	if (ioctl(v->fd, KVM_SET_REGS, &regs) < 0) {
		snprintf(err, err_size, "KVM_SET_REGS on vcpu %u failed: %s", v->index,
			 strerror(errno));
		return -1;
	}
	return 0;
}

int minivm_vm_create(struct minivm_vm *vm, const uint8_t *code, size_t code_len,
		     unsigned int nvcpus, char *err, size_t err_size)
{
	struct kvm_userspace_memory_region region;
	int run_size;

	if (code_len > MINIVM_CODE_MAX || nvcpus == 0 || nvcpus > MINIVM_MAX_VCPUS) {
		snprintf(err, err_size, "internal error: %zu bytes of code or %u vCPUs do not fit",
			 code_len, nvcpus);
		return -1;
	}
	vm->vm_fd = ioctl(vm->kvm_fd, KVM_CREATE_VM, 0);
	if (vm->vm_fd < 0) {
		snprintf(err, err_size, "KVM_CREATE_VM failed: %s", strerror(errno));
		return -1;
	}
	if (ioctl(vm->kvm_fd, KVM_CHECK_EXTENSION, KVM_CAP_SET_TSS_ADDR) > 0 &&
	    ioctl(vm->vm_fd, KVM_SET_TSS_ADDR, MINIVM_TSS_ADDR) < 0) {
		snprintf(err, err_size, "KVM_SET_TSS_ADDR failed: %s", strerror(errno));
		return -1;
	}
	vm->mem = mmap(NULL, MINIVM_MEM_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);
	if (vm->mem == MAP_FAILED) {
		vm->mem = NULL;
		snprintf(err, err_size, "cannot map %u bytes of guest memory: %s", MINIVM_MEM_SIZE,
			 strerror(errno));
		return -1;
	}
	memcpy(vm->mem + MINIVM_CODE_ADDR, code, code_len);
	region = (struct kvm_userspace_memory_region){
		.slot = 0,
		.guest_phys_addr = 0,
		.memory_size = MINIVM_MEM_SIZE,
		.userspace_addr = (uintptr_t)vm->mem,
	};
	if (ioctl(vm->vm_fd, KVM_SET_USER_MEMORY_REGION, &region) < 0) {
		snprintf(err, err_size, "KVM_SET_USER_MEMORY_REGION failed: %s", strerror(errno));
		return -1;
	}
	run_size = ioctl(vm->kvm_fd, KVM_GET_VCPU_MMAP_SIZE, 0);
	if (run_size < (int)sizeof(struct kvm_run)) {
		snprintf(err, err_size, "KVM_GET_VCPU_MMAP_SIZE failed: %s",
			 run_size < 0 ? strerror(errno) : "too small");
		return -1;
	}
	for (unsigned int i = 0; i < nvcpus; i++) {
		struct minivm_vcpu *v = &vm->vcpus[i];

		v->index = i;
		v->mem = vm->mem;
		v->fd = ioctl(vm->vm_fd, KVM_CREATE_VCPU, i);
		if (v->fd < 0) {
			snprintf(err, err_size, "KVM_CREATE_VCPU %u failed: %s", i, strerror(errno));
			return -1;
		}
		vm->nvcpus = i + 1;
		v->run_size = (size_t)run_size;
		v->run = mmap(NULL, v->run_size, PROT_READ | PROT_WRITE, MAP_SHARED, v->fd, 0);
		if (v->run == MAP_FAILED) {
			v->run = NULL;
			snprintf(err, err_size, "cannot map kvm_run of vcpu %u: %s", i,
				 strerror(errno));
			return -1;
		}
		if (setup_vcpu_registers(v, err, err_size) < 0)
			return -1;
	}
	return 0;
}

static uint32_t slot_u32(const struct minivm_vcpu *v, uint32_t offset)
{
	uint32_t value;

	memcpy(&value, v->mem + MINIVM_SLOT_BASE + v->index * MINIVM_SLOT_SIZE + offset,
	       sizeof(value));
	return value;
}

/* The payload reached its done exit: collect what it issued. */
static void collect_results(struct minivm_vcpu *v)
{
	struct minivm_vcpu_result *r = &v->result;
	struct kvm_regs regs;

	if (ioctl(v->fd, KVM_GET_REGS, &regs) < 0) {
		snprintf(r->error, sizeof(r->error), "vcpu %u: KVM_GET_REGS failed: %s", v->index,
			 strerror(errno));
		return;
	}
	r->hypercalls = (uint32_t)regs.rbp;
	r->first_ret = slot_u32(v, MINIVM_SLOT_FIRST_RET);
	r->ret_mismatches = slot_u32(v, MINIVM_SLOT_RET_MISMATCHES);
	r->other_hypercalls = slot_u32(v, MINIVM_SLOT_OTHER_COUNT);
	r->other_ret = slot_u32(v, MINIVM_SLOT_OTHER_RET);
	r->done = true;
}

/* Describes an exit minivm does not expect, with what KVM says about it. */
static void describe_unexpected_exit(struct minivm_vcpu *v)
{
	struct kvm_run *run = v->run;
	struct minivm_vcpu_result *r = &v->result;
	struct kvm_regs regs;
	unsigned long long rip = 0;

	if (ioctl(v->fd, KVM_GET_REGS, &regs) == 0)
		rip = regs.rip;
	switch (run->exit_reason) {
	case KVM_EXIT_FAIL_ENTRY:
		snprintf(r->error, sizeof(r->error),
			 "vcpu %u: the CPU refused to enter the guest (KVM_EXIT_FAIL_ENTRY, hardware "
			 "reason 0x%llx): KVM cannot run a guest here",
			 v->index, (unsigned long long)run->fail_entry.hardware_entry_failure_reason);
		break;
	case KVM_EXIT_INTERNAL_ERROR:
		snprintf(r->error, sizeof(r->error),
			 "vcpu %u: KVM internal error, suberror %u, at rip 0x%llx", v->index,
			 run->internal.suberror, rip);
		break;
	case KVM_EXIT_SHUTDOWN:
		snprintf(r->error, sizeof(r->error),
			 "vcpu %u: guest shut down (triple fault) at rip 0x%llx", v->index, rip);
		break;
	case KVM_EXIT_IO:
		snprintf(r->error, sizeof(r->error),
			 "vcpu %u: unexpected %s of %u byte(s) at port 0x%x, rip 0x%llx", v->index,
			 run->io.direction == KVM_EXIT_IO_OUT ? "OUT" : "IN", run->io.size,
			 run->io.port, rip);
		break;
	default:
		snprintf(r->error, sizeof(r->error),
			 "vcpu %u: unexpected exit reason %u (KVM_EXIT_%s) at rip 0x%llx", v->index,
			 run->exit_reason, exit_reason_name(run->exit_reason), rip);
		break;
	}
}

static void *vcpu_thread(void *arg)
{
	struct minivm_vcpu *v = arg;
	struct kvm_run *run = v->run;
	struct minivm_vcpu_result *r = &v->result;

	for (;;) {
		if (ioctl(v->fd, KVM_RUN, 0) < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			snprintf(r->error, sizeof(r->error),
				 "vcpu %u: KVM_RUN failed: %s: KVM cannot run a guest here", v->index,
				 strerror(errno));
			return NULL;
		}
		if (run->exit_reason == KVM_EXIT_IO && run->io.direction == KVM_EXIT_IO_OUT &&
		    run->io.size == 1 && run->io.count == 1) {
			if (run->io.port == MINIVM_PORT_MIX) {
				atomic_fetch_add_explicit(&r->io_exits, 1, memory_order_relaxed);
				continue;
			}
			if (run->io.port == MINIVM_PORT_DONE) {
				collect_results(v);
				return NULL;
			}
		}
		if (run->exit_reason == KVM_EXIT_HLT) {
			/* KVM already stepped past the HLT; running again resumes after it. */
			atomic_fetch_add_explicit(&r->hlt_exits, 1, memory_order_relaxed);
			continue;
		}
		if (run->exit_reason == KVM_EXIT_INTR)
			continue;
		describe_unexpected_exit(v);
		return NULL;
	}
}

int minivm_vm_run(struct minivm_vm *vm, uint64_t *elapsed_ns, char *err, size_t err_size)
{
	pthread_t threads[MINIVM_MAX_VCPUS];
	unsigned int started = 0;
	uint64_t start;
	int rc = 0;

	start = ht_monotonic_ns();
	for (; started < vm->nvcpus; started++) {
		int e = pthread_create(&threads[started], NULL, vcpu_thread, &vm->vcpus[started]);

		if (e) {
			snprintf(err, err_size, "cannot start the thread of vcpu %u: %s", started,
				 strerror(e));
			rc = -1;
			break;
		}
	}
	for (unsigned int i = 0; i < started; i++)
		pthread_join(threads[i], NULL);
	*elapsed_ns = ht_monotonic_ns() - start;
	if (rc < 0)
		return rc;
	for (unsigned int i = 0; i < vm->nvcpus; i++) {
		const struct minivm_vcpu_result *r = &vm->vcpus[i].result;

		if (!r->done) {
			snprintf(err, err_size, "%s", r->error[0] ? r->error : "vcpu did not finish");
			return -1;
		}
	}
	return 0;
}

void minivm_vm_close(struct minivm_vm *vm)
{
	for (unsigned int i = 0; i < vm->nvcpus; i++) {
		if (vm->vcpus[i].run)
			munmap(vm->vcpus[i].run, vm->vcpus[i].run_size);
		if (vm->vcpus[i].fd >= 0)
			close(vm->vcpus[i].fd);
	}
	vm->nvcpus = 0;
	if (vm->mem)
		munmap(vm->mem, MINIVM_MEM_SIZE);
	vm->mem = NULL;
	if (vm->vm_fd >= 0)
		close(vm->vm_fd);
	if (vm->kvm_fd >= 0)
		close(vm->kvm_fd);
	vm->vm_fd = vm->kvm_fd = -1;
}
