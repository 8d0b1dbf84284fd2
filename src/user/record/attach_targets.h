/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Where the tp_btf programs attach: the kernel's BTF id of each
 * tracepoint's btf_trace_<name> typedef, and the BTF object (vmlinux or a
 * module) that has it, found in one pass over each BTF.
 */
#ifndef HT_RECORD_ATTACH_TARGETS_H
#define HT_RECORD_ATTACH_TARGETS_H

/*
 * Takes over libbpf's SEC("tp_btf/NAME") handling for every BPF object the
 * process opens from now on (once: later calls do nothing); the programs
 * are loaded and attached as libbpf would. 0 or -errno.
 */
int ht_attach_targets_register(void);

/*
 * Finds the targets of obj's tp_btf programs that will load, before it is
 * loaded: the kernel's BTFs are read then, not on top of what libbpf holds
 * while it loads (its own parse of vmlinux's). 0 or -errno; a program whose
 * target is found at its load otherwise.
 */
struct bpf_object;
int ht_attach_targets_find(const struct bpf_object *obj);

/*
 * The target of a tracepoint: the BTF object that has its btf_trace_
 * typedef (*btf_fd, 0 for vmlinux; valid until ht_attach_targets_forget)
 * and the typedef's id. 0 or -errno (-ESRCH: no kernel BTF has it).
 */
#include <linux/types.h>
int ht_attach_target_of(const char *tracepoint, int *btf_fd, __u32 *type_id);

/*
 * For the tests of the fallback: from the next search on, the walk of the
 * raw BTF fails as on a kind it does not know, and libbpf's parse is used.
 */
#include <stdbool.h>
void ht_attach_targets_walk_refused(bool refused);
/*
 * For the tests of the other fallback: from the next read on, each BTF is
 * read from /sys/kernel/btf as where the kernel refuses to copy it from
 * its object; and how many were copied since the last forget.
 */
void ht_attach_targets_copy_refused(bool refused);
unsigned int ht_attach_targets_copied(void);

/*
 * Forgets the targets found so far and closes the module BTFs they hold:
 * before an object is loaded, as a module may have been unloaded or loaded
 * again since the last one.
 */
void ht_attach_targets_forget(void);

#endif /* HT_RECORD_ATTACH_TARGETS_H */
