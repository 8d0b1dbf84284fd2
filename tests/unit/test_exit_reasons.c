// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Exit reason names come from the kernel's UAPI headers (VMX_EXIT_REASONS,
 * SVM_EXIT_REASONS) as installed at build time. The running kernel prints
 * the same tables in kvm:kvm_exit's print format: every name of ours must be
 * the name the kernel gives that code (the kernel may know newer reasons).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "exits/exit_reasons.h"
#include "hypertrace/record.h"
#include "test.h"

static void known_codes_have_the_kernels_names(void)
{
	char buf[32];

	ASSERT_STREQ(ht_exit_reason_name(HT_ISA_VMX, 18), "VMCALL", "VMX 18");
	ASSERT_STREQ(ht_exit_reason_name(HT_ISA_VMX, 30), "IO_INSTRUCTION", "VMX 30");
	ASSERT_STREQ(ht_exit_reason_name(HT_ISA_SVM, 0x81), "hypercall", "SVM 0x81");
	ASSERT_STREQ(ht_exit_reason_name(HT_ISA_SVM, 0x78), "hlt", "SVM 0x78");
	ASSERT_STREQ(ht_exit_reason_name(HT_ISA_SVM, 0x40 + 6), "UD excp", "SVM #UD");
	ASSERT_STREQ(ht_exit_reason_name(HT_ISA_SVM, 0xffffffffu), "invalid_guest_state", "SVM_EXIT_ERR");
	CHECK(ht_exit_reason_name(HT_ISA_VMX, 0x4d2) == NULL, "an unknown code has no name");
	ht_exit_reason_format(buf, sizeof(buf), HT_ISA_VMX, 0x4d2);
	ASSERT_STREQ(buf, "0x4d2", "buf");
	ht_exit_reason_format(buf, sizeof(buf), 7, 18);
	ASSERT_STREQ(buf, "0x12", "buf");
}

/* The table of one ISA in the print format: "__print_symbolic(..., { 0, "NAME" }, ...)". */
static const char *isa_table(const char *fmt, unsigned int isa)
{
	const char *vmx = strstr(fmt, "__print_symbolic("), *svm = vmx ? strstr(vmx + 1, "__print_symbolic(") : NULL;

	return isa == HT_ISA_VMX ? vmx : svm;
}

/* The kernel's code of name in a table: its "{ CODE, "NAME" }" entry, CODE possibly "0x040 + 6" or -1. */
static bool kernel_code(const char *table, const char *name, long long *code)
{
	char quoted[64];
	const char *end = strstr(table, "})"), *p;

	snprintf(quoted, sizeof(quoted), ", \"%s\" }", name);
	p = strstr(table, quoted);
	if (!p || (end && p > end))
		return false;
	while (p > table && *p != '{')
		p--;
	char expr[64];
	size_t n = (size_t)(strstr(p, ",") - p - 1);
	snprintf(expr, sizeof(expr), "%.*s", (int)n, p + 1);
	char *plus = strchr(expr, '+');
	*code = strtoll(expr, NULL, 0);
	if (plus)
		*code += strtoll(plus + 1, NULL, 0);
	return true;
}

static void names_match_the_running_kernels_print_format(void)
{
	const char *path = "/sys/kernel/tracing/events/kvm/kvm_exit/format";
	FILE *f = fopen(path, "r");
	char *format = NULL;
	const char *fmt;
	size_t len = 0;

	if (!f)
		SKIP("%s cannot be read (tracefs not mounted, KVM not loaded or not root)", path);
	if (getdelim(&format, &len, '\0', f) < 0) {
		free(format);
		format = NULL;
	}
	fclose(f);
	if (!ASSERT_MSG(format && strstr(format, "print fmt:"), "no print format in %s", path))
		goto cleanup;
	fmt = strstr(format, "print fmt:");
	for (unsigned int isa = HT_ISA_VMX; isa <= HT_ISA_SVM; isa++) {
		size_t n;
		const struct ht_exit_reason *t = ht_exit_reasons(isa, &n);
		const char *table = isa_table(fmt, isa);

		if (!ASSERT_MSG(table != NULL, "no table for ISA %u in the print format", isa))
			goto cleanup;
		if (!ASSERT_MSG(n > 50, "ISA %u: only %zu names", isa, n))
			goto cleanup;
		for (size_t i = 0; i < n; i++) {
			long long code;

			if (!ASSERT_MSG(kernel_code(table, t[i].name, &code), "ISA %u: the kernel has no reason \"%s\"",
					isa, t[i].name))
				goto cleanup;
			if (!ASSERT_MSG((uint32_t)code == t[i].code, "ISA %u: \"%s\" is %#llx in the kernel, %#x here",
					isa, t[i].name, code, t[i].code))
				goto cleanup;
		}
	}
cleanup:
	free(format);
}

int main(void)
{
	RUN(known_codes_have_the_kernels_names);
	RUN(names_match_the_running_kernels_print_format);
	return ht_test_exit_status();
}
