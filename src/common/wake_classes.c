// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "common/wake_classes.h"

#include <stdio.h>

const char *const ht_wake_class_names[HT_WAKE_NCLASSES] = {
	[HT_WAKE_TIMER] = "timer",
	[HT_WAKE_VECTOR] = "vector",
	[HT_WAKE_NONE] = "none",
};

const char *const ht_irq_class_names[HT_IRQ_NCLASSES] = {
	[HT_IRQ_TIMER] = "timer",
	[HT_IRQ_IPI] = "ipi",
	[HT_IRQ_DEVICE] = "device",
};

const char *ht_wake_class_name(uint32_t c, char *buf, size_t len)
{
	if (c < HT_WAKE_NCLASSES)
		return ht_wake_class_names[c];
	snprintf(buf, len, "class-%u", c);
	return buf;
}
