// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The VMs' boots (record --boot) in the Perfetto export: fed the boot exits
 * as they come (boot/boot_timeline.h), at close each VM's reached phases as
 * slices on a track "boot phases" under the VM's process track, ranked
 * before its other tracks, with how much earlier each may have begun, its
 * exits and its vCPUs' time per state as arguments; and, where the VM's
 * vCPU threads ended (the VM stopped, or its guest crashed), an instant
 * "boot ended" (a pid given to a new VM process: each process's boot in
 * turn on its track). Written at close, after later events of other tracks: the
 * trace processor sorts the packets by time; on its own track each event
 * comes in time order.
 */
#include "export/perfetto_export.h"
#include "export/perfetto_private.h"

#include <stdlib.h>
#include "boot/boot_timeline.h"
#include "common/errf.h"

/* The slices' arguments beside the vCPU states' ("guest_ns", ...). */
enum { BOOT_UNCERTAINTY, BOOT_EXACT, BOOT_EXITS, BOOT_FIRST_RIP, BOOT_FIRST_VCPU, BOOT_PHASE, BOOT_ARGS };
static const char *const boot_args[] = { "start_uncertainty_ns", "start_exact", "exits", "first_rip", "first_vcpu",
					 "phase" };
_Static_assert(ARRAY_SIZE(boot_args) == BOOT_ARGS, "boot_args and its enum disagree");

/* The names the slices use, interned before any of their packets opens (inside one they cannot be). */
struct boot_names {
	uint64_t phase[HT_BOOT_NPHASES], ended;
	uint64_t arg[BOOT_ARGS], state[HT_VCPU_NSTATES];
	char state_name[HT_VCPU_NSTATES][32];
};

int ht_perfetto_add_boot_exit(struct ht_perfetto_export *x, const struct ht_boot_exit *be, struct ht_reader *reader,
			      char *err, size_t errlen)
{
	if (!x->boots) {
		if (!(x->boots = malloc(sizeof(*x->boots))))
			return ht_errf(err, errlen, "out of memory");
		ht_boot_timelines_init(x->boots);
	}
	/* The VM's track before its events, from its boot's start. */
	if (ht_boot_timelines_add(x->boots, be, NULL) || !pf_vm_track(x, be->host_pid, reader, be->exit_ns) || x->raw.oom)
		return ht_errf(err, errlen, "out of memory");
	return x->raw.len >= BUNDLE_BYTES ? pf_flush_bundle(x, err, errlen) : 0;
}

static void intern_names(struct ht_perfetto_export *x, struct boot_names *n)
{
	for (int p = 0; p < HT_BOOT_NPHASES; p++)
		n->phase[p] = pf_intern(x, true, ht_boot_phase_names[p]);
	n->ended = pf_intern(x, true, "boot ended");
	for (int a = 0; a < BOOT_ARGS; a++)
		n->arg[a] = pf_intern(x, false, boot_args[a]);
	for (int s = 0; s < HT_VCPU_NSTATES; s++) {
		snprintf(n->state_name[s], sizeof(n->state_name[s]), "%s_ns", ht_vcpu_state_names[s]);
		n->state[s] = pf_intern(x, false, n->state_name[s]);
	}
}

static void name_field(struct ht_perfetto_export *x, uint64_t iid, const char *name)
{
	if (iid)
		ht_pb_varint(&x->raw, TE_NAME_IID, iid);
	else
		ht_pb_string(&x->raw, TE_NAME, name);
}

/* A debug annotation: an unsigned number (or, with field DA_POINTER, an address) or a string. */
static void boot_arg(struct ht_perfetto_export *x, uint64_t iid, const char *name, int field, uint64_t v,
		     const char *s)
{
	ht_pb_msg a = ht_pb_begin(&x->raw, TE_DEBUG);

	if (iid)
		ht_pb_varint(&x->raw, DA_NAME_IID, iid);
	else
		ht_pb_string(&x->raw, DA_NAME, name);
	if (s)
		ht_pb_string(&x->raw, DA_STRING, s);
	else
		ht_pb_varint(&x->raw, (uint32_t)field, v);
	ht_pb_end(&x->raw, a);
}

static void ended_instant(struct ht_perfetto_export *x, struct track *tr, uint64_t uuid,
			  const struct ht_boot_timeline *t, const struct boot_names *n)
{
	ht_pb_msg pkt, e = pf_track_event_begin(x, tr, uuid, t->end_ns, INSTANT, &pkt);

	name_field(x, n->ended, "boot ended");
	boot_arg(x, n->arg[BOOT_PHASE], boot_args[BOOT_PHASE], 0, 0, ht_boot_phase_names[t->phase]);
	pf_track_event_end(x, e, pkt);
}

static void write_boot(struct ht_perfetto_export *x, const struct ht_boot_timeline *t, const struct boot_names *n)
{
	uint64_t uuid = pf_track_uuid(TRACK_BOOT, t->pid, 0);
	bool is_new, ended_written = !t->ended;
	struct track *tr = pf_track_of(x, uuid, &is_new);
	ht_pb_msg pkt, e;

	if (!tr)
		return;
	/*
	 * Ranked before the initcalls' and the off-CPU tracks, which are ranked by their vCPU id. Described
	 * once: a pid given to a new VM process has each process's boot in turn on it.
	 */
	if (is_new)
		pf_describe_named(x, uuid, pf_track_uuid(TRACK_VM, t->pid, 0), "boot phases", HT_INITCALL_RANK_BOOT,
				  t->start_ns);
	for (int p = 0; p < HT_BOOT_NPHASES; p++) {
		const struct ht_boot_phase_stats *s = &t->phases[p];
		uint64_t end = ht_boot_phase_end(t, (enum ht_boot_phase)p);

		if (!s->reached)
			continue;
		e = pf_track_event_begin(x, tr, uuid, s->start_ns, SLICE_BEGIN, &pkt);
		name_field(x, n->phase[p], ht_boot_phase_names[p]);
		boot_arg(x, n->arg[BOOT_UNCERTAINTY], boot_args[BOOT_UNCERTAINTY], DA_UINT,
			 ht_boot_phase_uncertainty(t, (enum ht_boot_phase)p), NULL);
		boot_arg(x, n->arg[BOOT_EXACT], boot_args[BOOT_EXACT], DA_UINT, p == HT_BOOT_FIRMWARE && t->start_exact,
			 NULL);
		boot_arg(x, n->arg[BOOT_EXITS], boot_args[BOOT_EXITS], DA_UINT, s->exits, NULL);
		for (int st = 0; st < HT_VCPU_NSTATES; st++)
			boot_arg(x, n->state[st], n->state_name[st], DA_UINT, s->state_ns[st], NULL);
		boot_arg(x, n->arg[BOOT_FIRST_RIP], boot_args[BOOT_FIRST_RIP], DA_POINTER, s->first_rip, NULL);
		boot_arg(x, n->arg[BOOT_FIRST_VCPU], boot_args[BOOT_FIRST_VCPU], DA_UINT, s->first_vcpu, NULL);
		pf_track_event_end(x, e, pkt);
		/* Where a thread ended inside the phase (others ran on): there, in time order on the track. */
		if (!ended_written && t->end_ns < end) {
			ended_instant(x, tr, uuid, t, n);
			ended_written = true;
		}
		e = pf_track_event_begin(x, tr, uuid, end, SLICE_END, &pkt);
		pf_track_event_end(x, e, pkt);
	}
	if (!ended_written)
		ended_instant(x, tr, uuid, t, n);
}

int pf_write_boots(struct ht_perfetto_export *x, char *err, size_t errlen)
{
	struct boot_names names;
	const struct ht_boot_timeline **vms;
	size_t n;
	int ret = 0;

	if (!x->boots || !ht_boot_timelines_count(x->boots))
		return 0;
	if (!(vms = ht_boot_timelines_sorted(x->boots, &n)))
		return ht_errf(err, errlen, "out of memory");
	intern_names(x, &names);
	for (size_t i = 0; i < n && !ret; i++) {
		write_boot(x, vms[i], &names);
		if (x->failed || x->raw.oom)
			ret = ht_errf(err, errlen, "out of memory");
		else if (x->raw.len >= BUNDLE_BYTES)
			ret = pf_flush_bundle(x, err, errlen);
	}
	free(vms);
	return ret;
}
