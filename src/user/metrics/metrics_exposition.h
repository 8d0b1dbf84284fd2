/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The pieces of Prometheus' text format that every metrics module writes
 * with (metrics_registry.c, metrics_causes.c): a label's value escaped, a
 * time as seconds. Pure.
 */
#ifndef HT_METRICS_EXPOSITION_H
#define HT_METRICS_EXPOSITION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "common/escape.h"

/*
 * A VM's label value: its QEMU guest name (64 bytes at most) made printable
 * as every output shows it (HT_ESC_TEXT), or "pid N"; NUL included.
 */
#define HT_METRICS_VM_LABEL HT_ESC_SIZE(64)

/*
 * A label value escaped for the text format (\\, \", \n) into out; false if it
 * does not fit, and out then holds no string.
 */
bool ht_metrics_escape_label(const char *value, char *out, size_t outlen);
/* ns as seconds, exactly ("0.000001023", "2", "18446744073.709551615"). */
void ht_metrics_format_seconds(uint64_t ns, char *out, size_t outlen);

#endif
