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

/* A class by its name in names (n of them), or "class-N" in buf for a number none has. */
static const char *class_name(const char *const *names, uint32_t n, uint32_t c, char *buf, size_t len)
{
	if (c < n)
		return names[c];
	snprintf(buf, len, "class-%u", c);
	return buf;
}

const char *ht_wake_class_name(uint32_t c, char *buf, size_t len)
{
	return class_name(ht_wake_class_names, HT_WAKE_NCLASSES, c, buf, len);
}

const char *ht_irq_class_name(uint32_t c, char *buf, size_t len)
{
	return class_name(ht_irq_class_names, HT_IRQ_NCLASSES, c, buf, len);
}
