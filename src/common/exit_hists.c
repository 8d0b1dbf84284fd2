// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "common/exit_hists.h"

#include "common/util.h"

void ht_exit_hist_add(struct ht_exit_hist *sum, const struct ht_exit_hist *h)
{
	if (!h->count)
		return;
	if (!sum->count || h->min_ns < sum->min_ns)
		sum->min_ns = h->min_ns;
	if (h->max_ns > sum->max_ns)
		sum->max_ns = h->max_ns;
	sum->count = ht_sat_add(sum->count, h->count);
	sum->total_ns = ht_sat_add(sum->total_ns, h->total_ns);
	for (int k = 0; k < HT_EXIT_SLOTS; k++)
		sum->slots[k] = ht_sat_add(sum->slots[k], h->slots[k]);
}

void ht_exit_cause_hist_add(struct ht_exit_cause_hist *sum, const struct ht_exit_cause_hist *h)
{
	sum->count = ht_sat_add(sum->count, h->count);
	sum->kvm_ns = ht_sat_add(sum->kvm_ns, h->kvm_ns);
	sum->vmm_count = ht_sat_add(sum->vmm_count, h->vmm_count);
	sum->vmm_ns = ht_sat_add(sum->vmm_ns, h->vmm_ns);
	for (int s = 0; s < HT_EXIT_SLOTS; s++) {
		sum->kvm_slots[s] = ht_sat_add(sum->kvm_slots[s], h->kvm_slots[s]);
		sum->vmm_slots[s] = ht_sat_add(sum->vmm_slots[s], h->vmm_slots[s]);
	}
}
