// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The tp_btf programs' attach targets, found in one pass over each kernel
 * BTF. libbpf looks each target up by name on its own, scanning vmlinux's
 * BTF type by type, and for a tracepoint in a module (KVM's, where kvm is
 * a module) every module's BTF after it, each scan starting again at
 * vmlinux's first type: on a Debian 6.1 host in make bench's emulated
 * machine that was a third of `record --exits`' start-up. Here the
 * btf_trace_<name> typedefs of vmlinux are collected once, a module's only
 * when a target is not in vmlinux (the module named like the tracepoint's
 * prefix first: kvm for kvm_entry), and each program's load takes its
 * target from them. Attaching is libbpf's.
 */
#include "record/attach_targets.h"
#include "record/bpf_log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <linux/btf.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "common/grow.h"
#include "common/util.h"

#define TRACE_TYPEDEF_PREFIX "btf_trace_"
/* A kernel BTF larger than this is no BTF (vmlinux's is 5-6 MB). */
#define HT_KERNEL_BTF_MAX (256l << 20)

struct attach_target {
	char *name;    /* the tracepoint's */
	__u32 type_id; /* its btf_trace_ typedef's */
	int btf_fd;    /* its module's BTF object; 0: vmlinux */
};

struct module_btf {
	char name[64];
	__u32 id; /* the kernel's BTF object id */
	int fd;
	bool scanned;
};

/* A kernel BTF as /sys/kernel/btf/NAME has it, read whole. */
struct raw_btf {
	char *data;
	size_t size;
	const char *types, *strs;
	__u32 types_len, strs_len;
};

static void free_btf(struct raw_btf *b)
{
	if (b->data)
		munmap(b->data, b->size);
	b->data = NULL;
}

static struct {
	bool vmlinux_scanned;
	__u32 vmlinux_types;    /* a module's first type id is the next */
	__u32 vmlinux_strs_len; /* a module's string at an offset below is vmlinux's */
	struct btf *parsed;     /* vmlinux's BTF as libbpf parses it, where the walk could not */
	struct attach_target *targets;
	size_t count, cap;
	struct module_btf *modules;
	size_t module_count, module_cap;
	bool modules_listed;
	int vmlinux_fd; /* vmlinux's BTF object, once the modules are listed; -1: none */
	unsigned int copied; /* BTFs copied from their objects (the others were read from sysfs) */
} found;

/* ht_attach_targets_copy_refused's: each BTF is read from sysfs, as where the kernel will not copy it. */
static bool copy_refused;

void ht_attach_targets_copy_refused(bool refused)
{
	copy_refused = refused;
}

unsigned int ht_attach_targets_copied(void)
{
	return found.copied;
}

void ht_attach_targets_forget(void)
{
	for (size_t i = 0; i < found.count; i++)
		free(found.targets[i].name);
	for (size_t i = 0; i < found.module_count; i++)
		close(found.modules[i].fd);
	if (found.modules_listed && found.vmlinux_fd >= 0)
		close(found.vmlinux_fd);
	free(found.targets);
	free(found.modules);
	btf__free(found.parsed);
	memset(&found, 0, sizeof(found));
}

/* b's header against the len bytes read: 0, or -EINVAL (b freed) if they are no BTF. */
static int check_btf(struct raw_btf *b, size_t len)
{
	const struct btf_header *h = (const struct btf_header *)b->data;

	if (len < sizeof(*h) || h->magic != BTF_MAGIC || h->hdr_len > len ||
	    (__u64)h->hdr_len + h->type_off + h->type_len > len || (__u64)h->hdr_len + h->str_off + h->str_len > len) {
		free_btf(b);
		return -EINVAL;
	}
	b->types = b->data + h->hdr_len + h->type_off;
	b->types_len = h->type_len;
	b->strs = b->data + h->hdr_len + h->str_off;
	b->strs_len = h->str_len;
	return 0;
}

/*
 * A buffer of size bytes for b (free with free_btf). Mapped, not malloc'd:
 * glibc would take a freed block this big as its new threshold for
 * mapping, and keep libbpf's own parse of vmlinux that follows in its
 * heap, resident after it is freed.
 */
static int map_btf(struct raw_btf *b, size_t size)
{
	memset(b, 0, sizeof(*b));
	if (size < sizeof(struct btf_header) || size > HT_KERNEL_BTF_MAX)
		return -EINVAL;
	b->data = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (b->data == MAP_FAILED) {
		b->data = NULL;
		return -ENOMEM;
	}
	b->size = size;
	return 0;
}

/*
 * The kernel BTF object fd into b, copied by the kernel in one pass. Its
 * sysfs file gives it a page per read(), each page allocated, zeroed and
 * copied twice (a Debian kernel zeroes what it allocates): read that way
 * by record and again by libbpf, vmlinux's was a tenth of record's start
 * in make bench's emulated machine (a profile of it). 0 or -errno.
 */
static int copy_btf(int fd, struct raw_btf *b)
{
	struct bpf_btf_info info = { 0 };
	__u32 len = sizeof(info);
	int ret;

	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return -errno;
	if ((ret = map_btf(b, info.btf_size)))
		return ret;
	memset(&info, 0, sizeof(info));
	info.btf = (__u64)(unsigned long)b->data;
	info.btf_size = (__u32)b->size;
	len = sizeof(info);
	if (bpf_obj_get_info_by_fd(fd, &info, &len) || info.btf_size != b->size) {
		free_btf(b);
		return -EINVAL;
	}
	return check_btf(b, b->size);
}

/*
 * The kernel BTF NAME, whose object is fd (-1: not open), into b (free with
 * free_btf): copied from the object, or read from /sys/kernel/btf/NAME
 * where that is refused. 0 or -errno.
 */
static int read_btf(const char *name, int fd, struct raw_btf *b)
{
	char path[128];
	size_t len = 0;
	struct stat st;
	int ret = 0;

	if (fd >= 0 && !copy_refused && !copy_btf(fd, b)) {
		found.copied++;
		return 0;
	}
	snprintf(path, sizeof(path), "/sys/kernel/btf/%s", name);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -errno;
	/* sysfs gives the BTF's size. */
	if (fstat(fd, &st) || (ret = map_btf(b, st.st_size > 0 ? (size_t)st.st_size : 0))) {
		close(fd);
		return ret ? ret : -errno;
	}
	while (len < b->size) {
		ssize_t n = read(fd, b->data + len, b->size - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			ret = n < 0 ? -errno : -EINVAL;
			break;
		}
		len += (size_t)n;
	}
	close(fd);
	if (ret) {
		free_btf(b);
		return ret;
	}
	return check_btf(b, len);
}

/* What follows a type's struct btf_type, in bytes; -1 for a kind this code does not know. */
static long type_extra(const struct btf_type *t)
{
	__u32 vlen = btf_vlen(t);

	switch (btf_kind(t)) {
	case BTF_KIND_INT:
	case BTF_KIND_VAR:
	case BTF_KIND_DECL_TAG:
		return 4;
	case BTF_KIND_ARRAY:
		return sizeof(struct btf_array);
	case BTF_KIND_STRUCT:
	case BTF_KIND_UNION:
		return (long)vlen * sizeof(struct btf_member);
	case BTF_KIND_ENUM:
		return (long)vlen * sizeof(struct btf_enum);
	case BTF_KIND_ENUM64:
		return (long)vlen * 12; /* struct btf_enum64 */
	case BTF_KIND_FUNC_PROTO:
		return (long)vlen * sizeof(struct btf_param);
	case BTF_KIND_DATASEC:
		return (long)vlen * sizeof(struct btf_var_secinfo);
	case BTF_KIND_PTR:
	case BTF_KIND_FWD:
	case BTF_KIND_TYPEDEF:
	case BTF_KIND_VOLATILE:
	case BTF_KIND_CONST:
	case BTF_KIND_RESTRICT:
	case BTF_KIND_FUNC:
	case BTF_KIND_FLOAT:
	case BTF_KIND_TYPE_TAG:
		return 0;
	default:
		return -1;
	}
}

/*
 * The string at off of b; NULL if it is outside b, or in vmlinux's strings
 * (b a module's: strings_from, vmlinux's length, else 0). A module's
 * btf_trace_ typedef is named in its own strings: a name vmlinux has would
 * be vmlinux's tracepoint, whose typedef the module would not repeat.
 */
static const char *string_at(const struct raw_btf *b, __u32 strings_from, __u32 off)
{
	if (off < strings_from)
		return NULL;
	off -= strings_from;
	return off < b->strs_len && memchr(b->strs + off, '\0', b->strs_len - off) ? b->strs + off : NULL;
}

static int add_target(const char *name, __u32 id, int btf_fd)
{
	if (HT_GROW(found.targets, found.cap, found.count + 1, 256) ||
	    !(found.targets[found.count].name = strdup(name)))
		return -ENOMEM;
	found.targets[found.count].type_id = id;
	found.targets[found.count].btf_fd = btf_fd;
	found.count++;
	return 0;
}

/*
 * The same from libbpf's parse of a BTF, types first on: where the walk
 * met a kind it does not know (a kernel newer than this code), libbpf may.
 */
static int collect_parsed(const struct btf *btf, __u32 first, int btf_fd)
{
	const size_t prefix = strlen(TRACE_TYPEDEF_PREFIX);

	for (__u32 id = first; id < btf__type_cnt(btf); id++) {
		const struct btf_type *t = btf__type_by_id(btf, id);
		const char *name = btf_is_typedef(t) ? btf__name_by_offset(btf, t->name_off) : NULL;

		if (name && !strncmp(name, TRACE_TYPEDEF_PREFIX, prefix) && add_target(name + prefix, id, btf_fd))
			return -ENOMEM;
	}
	return 0;
}

/*
 * The btf_trace_ typedefs of b (its first type is id first, its first
 * string offset strings_from), as targets in the BTF object btf_fd.
 * *count (if not NULL): its types. 0 or -errno.
 */
static int collect(const struct raw_btf *b, __u32 first, __u32 strings_from, int btf_fd, __u32 *count)
{
	const size_t prefix = strlen(TRACE_TYPEDEF_PREFIX);
	__u32 id = first, off = 0;

	while (off < b->types_len) {
		const struct btf_type *t = (const struct btf_type *)(b->types + off);
		long extra;
		const char *name;

		if (b->types_len - off < sizeof(*t) || (extra = type_extra(t)) < 0 ||
		    (__u64)b->types_len - off - sizeof(*t) < (__u64)extra)
			return -EINVAL;
		off += sizeof(*t) + (__u32)extra;
		if (btf_kind(t) == BTF_KIND_TYPEDEF && (name = string_at(b, strings_from, t->name_off)) &&
		    !strncmp(name, TRACE_TYPEDEF_PREFIX, prefix) && add_target(name + prefix, id, btf_fd))
			return -ENOMEM;
		id++;
	}
	if (count)
		*count = id - first;
	return 0;
}

static const struct attach_target *known(const char *name)
{
	for (size_t i = 0; i < found.count; i++)
		if (!strcmp(found.targets[i].name, name))
			return &found.targets[i];
	return NULL;
}

/* The kernel's module BTF objects, each with an open fd (a load names it), not yet read; and vmlinux's. */
static void list_modules(void)
{
	__u32 id = 0;

	found.modules_listed = true;
	found.vmlinux_fd = -1;
	while (!bpf_btf_get_next_id(id, &id)) {
		struct bpf_btf_info info = { 0 };
		__u32 len = sizeof(info);
		char name[sizeof(found.modules[0].name)] = "";
		int fd = bpf_btf_get_fd_by_id(id);

		if (fd < 0)
			continue; /* gone since */
		info.name = (__u64)(unsigned long)name;
		info.name_len = sizeof(name);
		bool kernel = !bpf_obj_get_info_by_fd(fd, &info, &len) && info.kernel_btf;
		bool vmlinux = kernel && !strcmp(name, "vmlinux");

		if (vmlinux && found.vmlinux_fd < 0) {
			found.vmlinux_fd = fd;
			continue;
		}
		if (!kernel || vmlinux || HT_GROW(found.modules, found.module_cap, found.module_count + 1, 32)) {
			close(fd);
			continue;
		}
		memcpy(found.modules[found.module_count].name, name, sizeof(name));
		found.modules[found.module_count].name[sizeof(name) - 1] = '\0';
		found.modules[found.module_count].id = id;
		found.modules[found.module_count].fd = fd;
		found.modules[found.module_count].scanned = false;
		found.module_count++;
	}
}

static int scan_module(struct module_btf *m)
{
	struct raw_btf b;
	int ret;

	m->scanned = true;
	if (found.parsed) {
		struct btf *btf = btf__load_from_kernel_by_id_split(m->id, found.parsed);

		if (!btf)
			return -errno;
		ret = collect_parsed(btf, btf__type_cnt(found.parsed), m->fd);
		btf__free(btf);
		return ret;
	}
	if ((ret = read_btf(m->name, m->fd, &b)))
		return ret;
	ret = collect(&b, found.vmlinux_types + 1, found.vmlinux_strs_len, m->fd, NULL);
	free_btf(&b);
	return ret;
}

/* ht_attach_targets_walk_refused's: the walk fails as on a kind it does not know. */
static bool walk_refused;

void ht_attach_targets_walk_refused(bool refused)
{
	walk_refused = refused;
}

/* Is module m the one a tracepoint's name prefixes (kvm for kvm_entry)? */
static bool named_by(const struct module_btf *m, const char *tracepoint)
{
	size_t len = strlen(m->name);

	return !strncmp(tracepoint, m->name, len) && tracepoint[len] == '_';
}

/* The target of tracepoint name: 0, or -errno (-ESRCH: no kernel BTF has it). */
static int find_target(const char *name, const struct attach_target **out)
{
	int ret;

	if (!found.vmlinux_scanned) {
		struct raw_btf b;

		if (walk_refused) {
			ret = -EINVAL;
		} else {
			if (!found.modules_listed)
				list_modules();
			if ((ret = read_btf("vmlinux", found.vmlinux_fd, &b)))
				return ret;
			/* Its types and strings are counted, not kept: a module's ids and strings follow them. */
			ret = collect(&b, 1, 0, 0, &found.vmlinux_types);
			found.vmlinux_strs_len = b.strs_len;
			free_btf(&b);
		}
		if (ret == -EINVAL) {
			/* A kind the walk does not know: libbpf's parse, for vmlinux and the modules. */
			for (size_t i = 0; i < found.count; i++)
				free(found.targets[i].name);
			found.count = 0;
			if (!(found.parsed = btf__load_vmlinux_btf()))
				return -errno;
			ret = collect_parsed(found.parsed, 1, 0);
		}
		if (ret)
			return ret;
		found.vmlinux_scanned = true;
	}
	if ((*out = known(name)))
		return 0;
	if (!found.modules_listed)
		list_modules();
	/* The module the name suggests first, then the others in the kernel's order. */
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < found.module_count; i++) {
			struct module_btf *m = &found.modules[i];

			if (m->scanned || named_by(m, name) != (pass == 0))
				continue;
			if ((ret = scan_module(m)) && ret != -ENOENT)
				return ret;
			if ((*out = known(name)))
				return 0;
		}
	return -ESRCH;
}

/* The tracepoint a tp_btf program attaches to (its section's NAME), NULL if it is none. */
static const char *tracepoint_of(const struct bpf_program *prog)
{
	const char *sec = bpf_program__section_name(prog), *name = strchr(sec, '/');

	return !strncmp(sec, "tp_btf/", 7) && name && name[1] ? name + 1 : NULL;
}

int ht_attach_target_of(const char *tracepoint, int *btf_fd, __u32 *type_id)
{
	const struct attach_target *t;
	int ret = find_target(tracepoint, &t);

	if (!ret) {
		*btf_fd = t->btf_fd;
		*type_id = t->type_id;
	}
	return ret;
}

static void not_found(const char *tracepoint, int err)
{
	ht_load_warn("cannot find the %s tracepoint in the kernel's BTF (vmlinux's or a module's): %s", tracepoint,
		     strerror(-err));
}

int ht_attach_targets_find(const struct bpf_object *obj)
{
	struct bpf_program *prog;
	const struct attach_target *t;
	int ret;

	bpf_object__for_each_program(prog, obj) {
		const char *name = tracepoint_of(prog);

		if (name && bpf_program__autoload(prog) && (ret = find_target(name, &t))) {
			not_found(name, ret);
			return ret;
		}
	}
	return 0;
}

/* libbpf's prog_prepare_load_fn for SEC("tp_btf/NAME"): the target into the load's attributes. */
static int prepare_tp_btf(struct bpf_program *prog, struct bpf_prog_load_opts *opts, long cookie)
{
	const char *name = tracepoint_of(prog);
	const struct attach_target *t = NULL;
	int ret;

	(void)cookie;
	if (!name) {
		ht_load_warn("program %s: no tracepoint in its section %s", bpf_program__name(prog),
			     bpf_program__section_name(prog));
		return -EINVAL;
	}
	if ((ret = find_target(name, &t))) {
		not_found(name, ret);
		return ret;
	}
	opts->attach_btf_obj_fd = t->btf_fd;
	opts->attach_btf_id = t->type_id;
	return 0;
}

static int attach_tp_btf(const struct bpf_program *prog, long cookie, struct bpf_link **link)
{
	(void)cookie;
	*link = bpf_program__attach_trace(prog);
	return *link ? 0 : -errno;
}

int ht_attach_targets_register(void)
{
	static int handler;
	LIBBPF_OPTS(libbpf_prog_handler_opts, opts, .prog_prepare_load_fn = prepare_tp_btf,
		    .prog_attach_fn = attach_tp_btf);

	if (handler > 0)
		return 0;
	/* A custom handler is looked up before libbpf's own: this one replaces its "tp_btf+". */
	handler = libbpf_register_prog_handler("tp_btf+", BPF_PROG_TYPE_TRACING, BPF_TRACE_RAW_TP, &opts);
	return handler > 0 ? 0 : handler;
}
