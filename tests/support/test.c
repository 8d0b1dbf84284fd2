// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "test.h"

int ht_test_failed;
int ht_test_skipped;
int ht_suite_failures;
const char *ht_test_current = "";
ht_test_fn ht_test_cleanup;

void ht_run_test(const char *name, ht_test_fn fn)
{
	ht_test_current = name;
	ht_test_failed = 0;
	ht_test_skipped = 0;
	fflush(stdout);
	fn();
	if (ht_test_cleanup)
		ht_test_cleanup();
	if (ht_test_skipped)
		return;
	if (ht_test_failed) {
		printf("FAIL: %s\n", name);
		ht_suite_failures++;
	} else {
		printf("PASS: %s\n", name);
	}
	fflush(stdout);
}

int ht_test_exit_status(void)
{
	return ht_suite_failures ? 1 : 0;
}
