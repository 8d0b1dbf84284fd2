// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "common/vcpu_states.h"

const char *const ht_vcpu_state_names[HT_VCPU_NSTATES] = {
	[HT_VCPU_GUEST] = "guest", [HT_VCPU_KVM] = "kvm",       [HT_VCPU_VMM] = "vmm",
	[HT_VCPU_WAIT] = "wait",   [HT_VCPU_HALTED] = "halted", [HT_VCPU_BLOCKED] = "blocked",
};
