// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The contexts of the timed synthetic programs are defined twice: in
 * tracer.h for the tests that fill them, in hypertrace.bpf.c for the
 * programs that read them. The BPF object's BTF says how the programs lay
 * them out: every member must be where user space writes it.
 */
#include <stddef.h>
#include <string.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "bpf/vcpu_state.h" /* before the skeleton, whose .bss holds the CPU slots */
#include "hypertrace.skel.h"
#include "common/util.h"
#include "record/tracer.h"
#include "test.h"

struct member {
	const char *name;
	size_t offset, size;
};
#define MEMBER(type, m) { #m, offsetof(struct type, m), sizeof(((struct type *)0)->m) }

struct context {
	const char *user, *bpf; /* the struct's names in tracer.h and in hypertrace.bpf.c */
	size_t size;
	const struct member *members;
	size_t nmembers;
};

static const struct member timed_event[] = {
	MEMBER(ht_synth_timed_event, now_ns),
	MEMBER(ht_synth_timed_event, pad),
	MEMBER(ht_synth_timed_event, event),
};
static const struct member switch_args[] = {
	MEMBER(ht_synth_switch, prev_tid),   MEMBER(ht_synth_switch, prev_tgid),
	MEMBER(ht_synth_switch, next_tid),   MEMBER(ht_synth_switch, next_tgid),
	MEMBER(ht_synth_switch, prev_involuntary), MEMBER(ht_synth_switch, pad),
	MEMBER(ht_synth_switch, now_ns),     MEMBER(ht_synth_switch, prev_state),
	MEMBER(ht_synth_switch, prev_comm),  MEMBER(ht_synth_switch, next_comm),
};
static const struct member wakeup_args[] = {
	MEMBER(ht_synth_wakeup, tid),
	MEMBER(ht_synth_wakeup, pad),
	MEMBER(ht_synth_wakeup, now_ns),
};
static const struct member register_args[] = {
	MEMBER(ht_synth_register, tid),  MEMBER(ht_synth_register, tgid),
	MEMBER(ht_synth_register, vcpu), MEMBER(ht_synth_register, running),
	MEMBER(ht_synth_register, now_ns),
};

static const struct context contexts[] = {
	{ "ht_synth_timed_event", "synthetic_timed_event", sizeof(struct ht_synth_timed_event), timed_event,
	  ARRAY_SIZE(timed_event) },
	{ "ht_synth_switch", "synthetic_switch_args", sizeof(struct ht_synth_switch), switch_args,
	  ARRAY_SIZE(switch_args) },
	{ "ht_synth_wakeup", "synthetic_wakeup_args", sizeof(struct ht_synth_wakeup), wakeup_args,
	  ARRAY_SIZE(wakeup_args) },
	{ "ht_synth_register", "synthetic_register_args", sizeof(struct ht_synth_register), register_args,
	  ARRAY_SIZE(register_args) },
};

/* The BTF member of t called name, or NULL. */
static const struct btf_member *member_of(const struct btf *btf, const struct btf_type *t, const char *name)
{
	const struct btf_member *m = btf_members(t);

	for (unsigned short i = 0; i < btf_vlen(t); i++, m++)
		if (!strcmp(btf__name_by_offset(btf, m->name_off), name))
			return m;
	return NULL;
}

static void the_programs_read_each_member_where_user_space_writes_it(void)
{
	struct hypertrace_bpf *skel = hypertrace_bpf__open();
	const struct btf *btf;

	if (!ASSERT_OK_PTR(skel, "hypertrace_bpf__open"))
		return;
	btf = bpf_object__btf(skel->obj);
	if (!ASSERT_OK_PTR(btf, "the object's BTF"))
		goto cleanup;
	for (size_t i = 0; i < ARRAY_SIZE(contexts); i++) {
		const struct context *c = &contexts[i];
		int id = btf__find_by_name_kind(btf, c->bpf, BTF_KIND_STRUCT);
		const struct btf_type *t = id > 0 ? btf__type_by_id(btf, (__u32)id) : NULL;

		if (!ASSERT_MSG(t, "struct %s is not in the BPF object", c->bpf))
			goto cleanup;
		if (!ASSERT_MSG(t->size == c->size, "struct %s: %u bytes, struct %s: %zu", c->bpf, t->size, c->user,
				c->size))
			goto cleanup;
		if (!ASSERT_MSG(btf_vlen(t) == c->nmembers, "struct %s: %u members, struct %s: %zu", c->bpf,
				btf_vlen(t), c->user, c->nmembers))
			goto cleanup;
		for (size_t k = 0; k < c->nmembers; k++) {
			const struct member *u = &c->members[k];
			const struct btf_member *m = member_of(btf, t, u->name);

			if (!ASSERT_MSG(m, "struct %s has no %s", c->bpf, u->name))
				goto cleanup;
			if (!ASSERT_MSG(btf_member_bit_offset(t, (__u32)(m - btf_members(t))) == 8 * u->offset &&
						btf__resolve_size(btf, m->type) == (__s64)u->size,
					"%s.%s: at byte %u, %lld bytes; %s.%s: at %zu, %zu bytes", c->bpf, u->name,
					btf_member_bit_offset(t, (__u32)(m - btf_members(t))) / 8,
					(long long)btf__resolve_size(btf, m->type), c->user, u->name, u->offset, u->size))
				goto cleanup;
		}
	}
cleanup:
	hypertrace_bpf__destroy(skel);
}

int main(void)
{
	RUN(the_programs_read_each_member_where_user_space_writes_it);
	return ht_test_exit_status();
}
