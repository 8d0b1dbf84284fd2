/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The pieces of Prometheus' text format that every metrics module writes
 * with (metrics_registry.c, metrics_causes.c, process_metrics.c): a label's
 * value escaped, a time as seconds, a family's HELP and TYPE lines, a
 * counter without labels, a histogram's samples, and the order a labelled
 * family's sets are written in (the sets kept, then the "other" set past
 * their cap). Pure.
 */
#ifndef HT_METRICS_EXPOSITION_H
#define HT_METRICS_EXPOSITION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
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

/* "# HELP name help" and "# TYPE name type": the head of a family, before its samples. */
void ht_metrics_family(FILE *out, const char *name, const char *type, const char *help);
/* A counter without labels: its head and its one sample. */
void ht_metrics_counter(FILE *out, const char *name, const char *help, uint64_t value);

/*
 * One label set's samples of histogram name (labels without braces):
 * name_bucket with le at upper_ns(k) of each of the nbounded finite
 * buckets, counted cumulatively, then le="+Inf" with count (every
 * observation, the open-ended last bucket's too), name_sum (unless sum_ns
 * is NULL: a sum that could not be kept exact is left out) and name_count.
 */
void ht_metrics_histogram(FILE *out, const char *name, const char *labels, const uint64_t *buckets,
			  unsigned int nbounded, uint64_t (*upper_ns)(unsigned int k), uint64_t count,
			  const uint64_t *sum_ns);

/* Writes the samples of one label set: other says it is the "other" set. */
typedef void (*ht_metrics_set_writer)(FILE *out, const void *set, bool other, void *ctx);
/*
 * A labelled family's sets in the order they are written: each of the n
 * sets (size bytes apart from sets), then other when other_used (something
 * was counted past the cap).
 */
void ht_metrics_each_set(FILE *out, const void *sets, size_t n, size_t size, const void *other, bool other_used,
			 ht_metrics_set_writer write, void *ctx);

#endif
