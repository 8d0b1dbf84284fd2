/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * minivm's use of the KVM API: open the device, create a VM with one memory
 * region holding the payload, create vCPUs in real mode, run each on its own
 * thread until the payload's done exit.
 */
#ifndef GUEST_MINIVM_VM_H
#define GUEST_MINIVM_VM_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "minivm_payload.h"

/* What one vCPU did, filled by its thread. */
struct minivm_vcpu_result {
	atomic_uint_least64_t io_exits;  /* OUTs to MINIVM_PORT_MIX */
	atomic_uint_least64_t hlt_exits; /* KVM_EXIT_HLT */
	/* Valid once done: read from the guest's registers and result slot. */
	bool done;
	uint32_t hypercalls; /* EBP at the done exit */
	uint32_t first_ret, ret_mismatches, other_hypercalls, other_ret;
	char error[256]; /* non-empty if the vCPU stopped on an error */
};

struct minivm_vcpu {
	int fd;
	unsigned int index;
	struct kvm_run *run;
	size_t run_size;
	uint8_t *mem; /* the VM's memory, for reading the result slot */
	struct minivm_vcpu_result result;
};

struct minivm_vm {
	int kvm_fd, vm_fd;
	uint8_t *mem;
	struct minivm_vcpu vcpus[MINIVM_MAX_VCPUS];
	unsigned int nvcpus;
};

/* Opens the KVM device and checks its API version. Returns -1 with err set. */
int minivm_vm_open(struct minivm_vm *vm, const char *path, char *err, size_t err_size);

/* Creates the VM, loads code at MINIVM_CODE_ADDR and creates nvcpus vCPUs. */
int minivm_vm_create(struct minivm_vm *vm, const uint8_t *code, size_t code_len,
		     unsigned int nvcpus, char *err, size_t err_size);

/*
 * Runs every vCPU on its own thread and waits for all of them. Returns 0 if
 * all reached the done exit, -1 otherwise (the vCPUs' error fields say why;
 * err holds the first). *elapsed_ns is the wall time from starting the first
 * thread to joining the last.
 */
int minivm_vm_run(struct minivm_vm *vm, uint64_t *elapsed_ns, char *err, size_t err_size);

/* Releases everything; safe on a partly set up VM. */
void minivm_vm_close(struct minivm_vm *vm);

#endif
