/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The names of the classes of a halted vCPU's wake-up (enum ht_wake_class)
 * and of an interrupt delivered to a vCPU (enum ht_irq_class), as every
 * output says them: reports, top, metrics' class label, the exports' slices.
 */
#ifndef HT_COMMON_WAKE_CLASSES_H
#define HT_COMMON_WAKE_CLASSES_H

#include <stddef.h>
#include <stdint.h>
#include "hypertrace/record.h"

/* By enum ht_wake_class: "timer", "vector", "none". */
extern const char *const ht_wake_class_names[HT_WAKE_NCLASSES];
/*
 * A wake-up record's class by its name, or "class-N" in buf (24 bytes are
 * enough) for a number no class has (a file's, so any).
 */
const char *ht_wake_class_name(uint32_t c, char *buf, size_t len);
/* By enum ht_irq_class: "timer", "ipi", "device". */
extern const char *const ht_irq_class_names[HT_IRQ_NCLASSES];
/* An interrupt delivery record's class by its name, or "class-N" in buf, as ht_wake_class_name. */
const char *ht_irq_class_name(uint32_t c, char *buf, size_t len);

#endif
