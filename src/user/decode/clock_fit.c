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

/* A straight line: host ns = intercept + rate * guest ns. */
struct line {
	bool has_rate;
	long double rate, intercept;
};

/* Least squares over the kept pairs, around the first kept one (x0, y0) so that long double holds every difference exactly. */
static void fit_line(const struct ht_clock_pair *p, size_t n, const bool *keep, struct line *l)
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

	l->has_rate = m >= 2 && var > 0;
	l->rate = l->has_rate ? (sxy - sx * sy / m) / var : 1.0L;
	/* host = y0 + mean(y) + rate * (guest - x0 - mean(x)) */
	l->intercept = y0 + sy / m - l->rate * (x0 + sx / m);
}

static long double residual(const struct line *l, const struct ht_clock_pair *p)
{
	return (long double)p->host_ns - (l->intercept + l->rate * (long double)p->guest_ns);
}

/* The p-th quantile (0..1) of n sorted values. */
static double quantile(const double *v, size_t n, double q)
{
	size_t i = (size_t)ceil(q * (double)n);

	return v[i ? i - 1 : 0];
}

/*
 * The line of the kept pairs of p[0..n) (at least one): fit, refuse what
 * lies far from the others' line, fit again, until nothing more is refused
 * (counted in *refused). r and dev: room for n values.
 */
static void fit_side(const struct ht_clock_pair *p, size_t n, bool *keep, double *r, double *dev, struct line *l,
		     size_t *refused_outlier)
{
	for (int round = 0; round < 8; round++) {
		size_t refused = 0, k = 0;

		fit_line(p, n, keep, l);
		for (size_t i = 0; i < n; i++)
			if (keep[i])
				r[k++] = (double)residual(l, &p[i]);
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
			if (keep[i] && fabs((double)residual(l, &p[i]) - median) > limit) {
				keep[i] = false;
				refused++;
			}
		*refused_outlier += refused;
		if (!refused)
			break;
	}
	/* The line of the pairs kept in the end (the last round may have refused some). */
	fit_line(p, n, keep, l);
}

/* Whether the offset (host less guest) steps from pair a to the later pair b. */
static bool offset_steps(const struct ht_clock_pair *a, const struct ht_clock_pair *b)
{
	long double da = (long double)a->host_ns - (long double)a->guest_ns;
	long double db = (long double)b->host_ns - (long double)b->guest_ns;
	long double interval = fabsl((long double)b->guest_ns - (long double)a->guest_ns);

	return fabsl(db - da) > fmaxl(HT_CLOCK_FIT_STEP_NS, HT_CLOCK_FIT_STEP_PPM * 1e-6L * interval);
}

/* The indices of the kept pairs, in order, into idx: how many. */
static size_t kept_indices(const bool *keep, size_t n, size_t *idx)
{
	size_t m = 0;

	for (size_t i = 0; i < n; i++)
		if (keep[i])
			idx[m++] = i;
	return m;
}

/*
 * Splits the kept pairs (in host order) where their offset steps: the
 * first pair index of each side into starts (starts[return] = n). A pair
 * that steps away from both neighbours while they agree, and sides of
 * fewer than HT_CLOCK_FIT_MIN_SEGMENT pairs, are refused as outliers; if no
 * side is that long, nothing is split (one side: the clock may be stuck).
 * Linear; idx: room for n.
 */
static size_t split_at_steps(const struct ht_clock_pair *p, size_t n, bool *keep, size_t *idx, size_t *starts,
			     size_t *refused_outlier)
{
	size_t m = kept_indices(keep, n, idx), prev, run, longest = 0, nsides = 0;

	if (m == 0) {
		starts[0] = n;
		return 0;
	}
	/* Lone pairs: off, and back to where the pair before was. */
	prev = idx[0];
	for (size_t j = 1; j + 1 < m; j++) {
		if (offset_steps(&p[prev], &p[idx[j]]) && offset_steps(&p[idx[j]], &p[idx[j + 1]]) &&
		    !offset_steps(&p[prev], &p[idx[j + 1]])) {
			keep[idx[j]] = false;
			(*refused_outlier)++;
			continue;
		}
		prev = idx[j];
	}
	m = kept_indices(keep, n, idx);
	for (size_t j = 0; j < m; j = j + run) {
		for (run = 1; j + run < m && !offset_steps(&p[idx[j + run - 1]], &p[idx[j + run]]); run++)
			;
		if (run > longest)
			longest = run;
	}
	if (longest < HT_CLOCK_FIT_MIN_SEGMENT) {
		starts[0] = 0;
		starts[1] = n;
		return 1;
	}
	/* Short sides refused; the sides around one of them may then be one. */
	for (size_t j = 0; j < m; j = j + run) {
		for (run = 1; j + run < m && !offset_steps(&p[idx[j + run - 1]], &p[idx[j + run]]); run++)
			;
		if (run < HT_CLOCK_FIT_MIN_SEGMENT)
			for (size_t i = j; i < j + run; i++) {
				keep[idx[i]] = false;
				(*refused_outlier)++;
			}
	}
	m = kept_indices(keep, n, idx);
	for (size_t j = 0; j < m; j++)
		if (j == 0 || offset_steps(&p[idx[j - 1]], &p[idx[j]]))
			starts[nsides++] = j == 0 ? 0 : idx[j];
	starts[nsides] = n;
	return nsides;
}

/* The line that maps guest_ns: its side's (see the header), or the one line of a fit with no sides recorded. */
static const struct ht_clock_segment *side_of(const struct ht_clock_fit *f, uint64_t guest_ns)
{
	size_t lo = 0, hi = f->nsegments;

	if (f->nsegments < 2)
		return NULL;
	/* The last side whose first guest time is at or before guest_ns (else the first). */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (f->segments[mid].guest_first <= guest_ns)
			lo = mid + 1;
		else
			hi = mid;
	}
	size_t s = lo ? lo - 1 : 0;

	if (s + 1 < f->nsegments && guest_ns > f->segments[s].guest_last &&
	    f->segments[s + 1].guest_first - guest_ns < guest_ns - f->segments[s].guest_last)
		s++;
	return &f->segments[s];
}

int ht_clock_fit(struct ht_clock_pair *pairs, size_t n, struct ht_clock_fit *f)
{
	bool *keep = NULL;
	double *r = NULL, *dev = NULL, *res = NULL;
	size_t used, k = 0, *idx = NULL, *starts = NULL, nsides, main_side = 0;
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
	res = malloc(n * sizeof(*res));
	idx = malloc(n * sizeof(*idx));
	starts = malloc((n + 1) * sizeof(*starts));
	if (!keep || !r || !dev || !res || !idx || !starts || (used = longest_in_order(pairs, n, keep)) == SIZE_MAX)
		goto out;
	f->refused_order = n - used;
	nsides = split_at_steps(pairs, n, keep, idx, starts, &f->refused_outlier);
	if (nsides > HT_CLOCK_FIT_MAX_SEGMENTS) {
		for (size_t i = starts[HT_CLOCK_FIT_MAX_SEGMENTS]; i < n; i++)
			if (keep[i]) {
				keep[i] = false;
				f->refused_segments++;
			}
		nsides = HT_CLOCK_FIT_MAX_SEGMENTS;
		starts[nsides] = n;
	}
	for (size_t s = 0; s < nsides; s++) {
		const struct ht_clock_pair *p = pairs + starts[s];
		size_t len = starts[s + 1] - starts[s], side_used = 0;
		struct ht_clock_segment *seg = &f->segments[f->nsegments];
		struct line l;

		if (!kept_indices(keep + starts[s], len, idx))
			continue;
		fit_side(p, len, keep + starts[s], r, dev, &l, &f->refused_outlier);
		for (size_t i = 0; i < len; i++) {
			if (!keep[starts[s] + i])
				continue;
			if (!side_used++) {
				seg->guest_first = p[i].guest_ns;
				seg->host_first = p[i].host_ns;
			}
			seg->guest_last = p[i].guest_ns;
			/* Every used pair's residual from its side's line, all sides together. */
			res[k++] = fabs((double)residual(&l, &p[i]));
		}
		seg->used = side_used;
		seg->has_rate = l.has_rate;
		seg->rate = l.rate;
		seg->intercept = l.intercept;
		if (f->nsegments) {
			/* The offset (host less guest) by this side's line at its first pair, less the side before's at its last. */
			const struct ht_clock_segment *before = seg - 1;
			long double g = (long double)seg->guest_first, gb = (long double)before->guest_last;

			seg->step_ns = (double)((seg->intercept + (seg->rate - 1.0L) * g) -
						(before->intercept + (before->rate - 1.0L) * gb));
			f->max_step_ns = fmax(f->max_step_ns, fabs(seg->step_ns));
		}
		if (side_used > f->segments[main_side].used)
			main_side = f->nsegments;
		f->nsegments++;
	}
	if (!k) { /* not reached: a side keeps its median pair */
		ret = 0;
		goto out;
	}
	qsort(res, k, sizeof(*res), by_value);
	f->used = k;
	f->main_segment = main_side;
	f->has_rate = f->segments[main_side].has_rate;
	f->rate = f->segments[main_side].rate;
	f->intercept = f->segments[main_side].intercept;
	f->residual_p50 = quantile(res, k, 0.5);
	f->residual_p99 = quantile(res, k, 0.99);
	f->residual_max = res[k - 1];
	ret = 0;
out:
	free(keep);
	free(r);
	free(dev);
	free(res);
	free(idx);
	free(starts);
	return ret;
}

uint64_t ht_clock_fit_map(const struct ht_clock_fit *f, uint64_t guest_ns)
{
	const struct ht_clock_segment *side = side_of(f, guest_ns);
	long double host = side ? side->intercept + side->rate * (long double)guest_ns :
				  f->intercept + f->rate * (long double)guest_ns;

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
