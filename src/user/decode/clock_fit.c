// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "decode/clock_fit.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int by_host_time(const void *a, const void *b)
{
	const struct ht_clock_pair *x = a, *y = b;

	if (x->host_ns != y->host_ns)
		return x->host_ns < y->host_ns ? -1 : 1;
	return x->guest_ns < y->guest_ns ? -1 : x->guest_ns > y->guest_ns;
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/*
 * keep[i] true for the longest run of pairs (in host order) whose guest
 * times do not go back: patience sorting, O(n log n). Returns how many.
 */
static size_t longest_in_order(const struct ht_clock_pair *p, size_t n, bool *keep)
{
	size_t *tail = malloc(n * sizeof(*tail)), *prev = malloc(n * sizeof(*prev)), len = 0;

	if (!tail || !prev) {
		free(tail);
		free(prev);
		return SIZE_MAX;
	}
	for (size_t i = 0; i < n; i++) {
		/* The first run whose last guest time is above this one's (non-decreasing runs). */
		size_t lo = 0, hi = len;

		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (p[tail[mid]].guest_ns <= p[i].guest_ns)
				lo = mid + 1;
			else
				hi = mid;
		}
		prev[i] = lo ? tail[lo - 1] : SIZE_MAX;
		tail[lo] = i;
		if (lo == len)
			len++;
	}
	memset(keep, 0, n * sizeof(*keep));
	for (size_t i = len ? tail[len - 1] : SIZE_MAX; i != SIZE_MAX; i = prev[i])
		keep[i] = true;
	free(tail);
	free(prev);
	return len;
}

/* Least squares over the kept pairs, around the first kept one (x0, y0) so that long double holds every difference exactly. */
static void fit_line(const struct ht_clock_pair *p, size_t n, const bool *keep, struct ht_clock_fit *f)
{
	long double x0 = 0, y0 = 0, sx = 0, sy = 0, sxx = 0, sxy = 0, m = 0;
	bool first = true;

	for (size_t i = 0; i < n; i++) {
		if (!keep[i])
			continue;
		if (first) {
			x0 = p[i].guest_ns;
			y0 = p[i].host_ns;
			first = false;
		}
		long double x = (long double)p[i].guest_ns - x0, y = (long double)p[i].host_ns - y0;

		sx += x;
		sy += y;
		sxx += x * x;
		sxy += x * y;
		m++;
	}
	long double var = sxx - sx * sx / m;

	f->has_rate = m >= 2 && var > 0;
	f->rate = f->has_rate ? (sxy - sx * sy / m) / var : 1.0L;
	/* host = y0 + mean(y) + rate * (guest - x0 - mean(x)) */
	f->intercept = y0 + sy / m - f->rate * (x0 + sx / m);
}

static long double residual(const struct ht_clock_fit *f, const struct ht_clock_pair *p)
{
	return (long double)p->host_ns - (f->intercept + f->rate * (long double)p->guest_ns);
}

/* The p-th quantile (0..1) of n sorted values. */
static double quantile(const double *v, size_t n, double q)
{
	size_t i = (size_t)ceil(q * (double)n);

	return v[i ? i - 1 : 0];
}

int ht_clock_fit(struct ht_clock_pair *pairs, size_t n, struct ht_clock_fit *f)
{
	bool *keep = NULL;
	double *r = NULL, *dev = NULL;
	size_t used, k = 0;
	int ret = -1;

	memset(f, 0, sizeof(*f));
	f->pairs = n;
	f->rate = 1.0L;
	if (n == 0)
		return 0;
	qsort(pairs, n, sizeof(*pairs), by_host_time);
	keep = malloc(n * sizeof(*keep));
	r = malloc(n * sizeof(*r));
	dev = malloc(n * sizeof(*dev));
	if (!keep || !r || !dev || (used = longest_in_order(pairs, n, keep)) == SIZE_MAX)
		goto out;
	f->refused_order = n - used;
	/* Fit, refuse what lies far from the others' line, fit again: until nothing more is refused. */
	for (int round = 0; round < 8; round++) {
		size_t refused = 0;

		k = 0;
		fit_line(pairs, n, keep, f);
		for (size_t i = 0; i < n; i++)
			if (keep[i])
				r[k++] = (double)residual(f, &pairs[i]);
		if (k < 3)
			break;
		memcpy(dev, r, k * sizeof(*dev));
		qsort(dev, k, sizeof(*dev), by_value);
		double median = quantile(dev, k, 0.5), limit;

		for (size_t i = 0; i < k; i++)
			dev[i] = fabs(r[i] - median);
		qsort(dev, k, sizeof(*dev), by_value);
		limit = fmax(HT_CLOCK_FIT_OUTLIER_MADS * quantile(dev, k, 0.5), HT_CLOCK_FIT_MIN_OUTLIER_NS);

		for (size_t i = 0; i < n; i++)
			if (keep[i] && fabs((double)residual(f, &pairs[i]) - median) > limit) {
				keep[i] = false;
				refused++;
			}
		f->refused_outlier += refused;
		if (!refused)
			break;
	}
	/* The line of the pairs kept in the end (the last round may have refused some). */
	fit_line(pairs, n, keep, f);
	k = 0;
	for (size_t i = 0; i < n; i++)
		if (keep[i])
			dev[k++] = fabs((double)residual(f, &pairs[i]));
	qsort(dev, k, sizeof(*dev), by_value);
	f->used = k;
	f->residual_p50 = quantile(dev, k, 0.5);
	f->residual_p99 = quantile(dev, k, 0.99);
	f->residual_max = dev[k - 1];
	ret = 0;
out:
	free(keep);
	free(r);
	free(dev);
	return ret;
}

uint64_t ht_clock_fit_map(const struct ht_clock_fit *f, uint64_t guest_ns)
{
	long double host = f->intercept + f->rate * (long double)guest_ns;

	if (!(host > 0))
		return 0;
	if (host >= 18446744073709551615.0L)
		return UINT64_MAX;
	return (uint64_t)(host + 0.5L);
}

double ht_clock_fit_ppm(const struct ht_clock_fit *f)
{
	return (double)((f->rate - 1.0L) * 1e6L);
}
