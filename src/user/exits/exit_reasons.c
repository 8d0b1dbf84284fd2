// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "exits/exit_reasons.h"

#include <stdio.h>
/* asm/kvm.h first: SVM_EXIT_REASONS names exception vectors (DE_VECTOR, ...) defined there. */
#include <asm/kvm.h>
#include <asm/svm.h>
#include <asm/vmx.h>
#include "hypertrace/record.h"
#include "common/util.h"

/* The headers' own tables, entry for entry; SVM codes are kept as kvm_exit's u32 field holds them. */
static const struct ht_exit_reason vmx_reasons[] = { VMX_EXIT_REASONS };
static const struct ht_exit_reason svm_reasons[] = { SVM_EXIT_REASONS };

const struct ht_exit_reason *ht_exit_reasons(unsigned int isa, size_t *n)
{
	if (isa == HT_ISA_VMX) {
		*n = ARRAY_SIZE(vmx_reasons);
		return vmx_reasons;
	}
	if (isa == HT_ISA_SVM) {
		*n = ARRAY_SIZE(svm_reasons);
		return svm_reasons;
	}
	*n = 0;
	return NULL;
}

const char *ht_exit_reason_name(unsigned int isa, uint32_t reason)
{
	size_t n;
	const struct ht_exit_reason *t = ht_exit_reasons(isa, &n);

	for (size_t i = 0; i < n; i++)
		if (t[i].code == reason)
			return t[i].name;
	return NULL;
}

void ht_exit_reason_format(char *buf, size_t len, unsigned int isa, uint32_t reason)
{
	const char *name = ht_exit_reason_name(isa, reason);

	if (name)
		snprintf(buf, len, "%s", name);
	else
		snprintf(buf, len, "0x%x", reason);
}

const char *ht_isa_name(unsigned int isa)
{
	return isa == HT_ISA_VMX ? "VMX" : isa == HT_ISA_SVM ? "SVM" : "?";
}
