// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "common/errf.h"

#include <stdarg.h>
#include <stdio.h>

int ht_errf(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

int ht_errf_status(char *err, size_t errlen, int status, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return status;
}
