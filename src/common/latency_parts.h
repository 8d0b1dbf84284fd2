/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The parts of a wake-up's or an interrupt delivery's latency, as every
 * output gives them (report --latency, the Perfetto and LTTng exports).
 */
#ifndef HT_COMMON_LATENCY_PARTS_H
#define HT_COMMON_LATENCY_PARTS_H

#include <stdint.h>

struct ht_latency_parts {
	uint64_t total_ns; /* start to end; 0 if the end is before the start */
	uint64_t woken_ns; /* waking the halted thread (0 for a wake-up's own record) */
	uint64_t wait_ns;  /* waiting for a host CPU */
	uint64_t rest_ns;  /* what the others leave: KVM's entry path */
};

/*
 * Each part cut to what the whole leaves, in this order: a record is read
 * from a file, which is input, so a part may claim more than the whole.
 * They always add up to total_ns.
 */
static inline struct ht_latency_parts ht_latency_parts(uint64_t start_ns, uint64_t end_ns, uint64_t woken_ns,
						       uint64_t wait_ns)
{
	struct ht_latency_parts p = { .total_ns = end_ns > start_ns ? end_ns - start_ns : 0 };

	p.woken_ns = woken_ns < p.total_ns ? woken_ns : p.total_ns;
	p.wait_ns = wait_ns < p.total_ns - p.woken_ns ? wait_ns : p.total_ns - p.woken_ns;
	p.rest_ns = p.total_ns - p.woken_ns - p.wait_ns;
	return p;
}

#endif
