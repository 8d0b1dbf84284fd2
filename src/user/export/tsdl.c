// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "export/tsdl.h"

void ht_tsdl_string(FILE *f, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fputc('\\', f);
		if (c >= 0x20)
			fputc(c, f);
	}
}
