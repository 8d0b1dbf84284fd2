// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "cpuid_info.h"

#include <stdio.h>
#include <string.h>
#include "hypertrace/guest.h"

/* CPUID returns strings as little-endian register contents, four bytes each. */
static void put_reg(char *dst, uint32_t reg)
{
	dst[0] = (char)(reg & 0xff);
	dst[1] = (char)((reg >> 8) & 0xff);
	dst[2] = (char)((reg >> 16) & 0xff);
	dst[3] = (char)((reg >> 24) & 0xff);
}

static uint32_t get_reg(const char *src)
{
	return (uint32_t)(unsigned char)src[0] | (uint32_t)(unsigned char)src[1] << 8 |
	       (uint32_t)(unsigned char)src[2] << 16 | (uint32_t)(unsigned char)src[3] << 24;
}

static void signature_bytes(const struct cpuid_snapshot *c, char out[12])
{
	put_reg(out, c->hv_ebx);
	put_reg(out + 4, c->hv_ecx);
	put_reg(out + 8, c->hv_edx);
}

enum hypervisor_kind cpuid_hypervisor_kind(const struct cpuid_snapshot *c)
{
	if (!(c->leaf1_ecx & CPUID_LEAF1_ECX_HYPERVISOR))
		return HYPERVISOR_NONE;
	return ht_guest_is_kvm_signature(c->hv_ebx, c->hv_ecx, c->hv_edx) ? HYPERVISOR_KVM :
									    HYPERVISOR_OTHER;
}

void cpuid_vendor_string(const struct cpuid_snapshot *c, char out[13])
{
	/* Leaf 0 orders the vendor string EBX, EDX, ECX. */
	put_reg(out, c->vendor_ebx);
	put_reg(out + 4, c->vendor_edx);
	put_reg(out + 8, c->vendor_ecx);
	out[12] = '\0';
}

void cpuid_hypervisor_signature(const struct cpuid_snapshot *c, char out[13])
{
	int len = 12;

	signature_bytes(c, out);
	while (len > 0 && out[len - 1] == '\0')
		len--;
	for (int i = 0; i < len; i++)
		if (out[i] < 0x20 || out[i] > 0x7e)
			out[i] = '?';
	out[len] = '\0';
}

/* The decision the guest header makes for kernel and user code alike. */
enum hypercall_insn cpuid_vendor_hypercall_insn(const struct cpuid_snapshot *c)
{
	switch (ht_guest_vendor_insn(c->vendor_ebx, c->vendor_ecx, c->vendor_edx)) {
	case HT_GUEST_INSN_VMCALL:
		return HYPERCALL_INSN_VMCALL;
	case HT_GUEST_INSN_VMMCALL:
		return HYPERCALL_INSN_VMMCALL;
	default:
		return HYPERCALL_INSN_UNKNOWN;
	}
}

bool cpuid_has_hardware_virtualization(const struct cpuid_snapshot *c)
{
	return (c->leaf1_ecx & CPUID_LEAF1_ECX_VMX) || (c->ext1_ecx & CPUID_EXT1_ECX_SVM);
}

const char *hypercall_insn_name(enum hypercall_insn insn)
{
	switch (insn) {
	case HYPERCALL_INSN_VMCALL:
		return "vmcall";
	case HYPERCALL_INSN_VMMCALL:
		return "vmmcall";
	default:
		return "unknown";
	}
}

enum hypercall_insn hypercall_insn_parse(const char *name)
{
	if (strcmp(name, "vmcall") == 0)
		return HYPERCALL_INSN_VMCALL;
	if (strcmp(name, "vmmcall") == 0)
		return HYPERCALL_INSN_VMMCALL;
	return HYPERCALL_INSN_UNKNOWN;
}

bool hypercall_insn_option(const char *arg, enum hypercall_insn *insn, char *err, size_t err_size)
{
	*insn = hypercall_insn_parse(arg);
	if (*insn == HYPERCALL_INSN_UNKNOWN) {
		snprintf(err, err_size, "invalid --insn '%s': expected vmcall or vmmcall; see --help", arg);
		return false;
	}
	return true;
}

/* Copies up to 12 bytes of a comma-terminated field into a NUL-padded buffer. */
static const char *take_field(const char *p, char out[12])
{
	size_t len = strcspn(p, ",");

	if (len > 12)
		return NULL;
	memset(out, 0, 12);
	memcpy(out, p, len);
	return p + len;
}

bool cpuid_snapshot_from_text(const char *text, struct cpuid_snapshot *c)
{
	char vendor[12], sig[12];
	const char *p = text;
	bool hypervisor;

	memset(c, 0, sizeof(*c));
	p = take_field(p, vendor);
	if (!p || *p != ',')
		return false;
	p++;
	if ((p[0] != '0' && p[0] != '1') || p[1] != ',')
		return false;
	hypervisor = p[0] == '1';
	p = take_field(p + 2, sig);
	if (!p || *p != '\0')
		return false;
	c->vendor_ebx = get_reg(vendor);
	c->vendor_edx = get_reg(vendor + 4);
	c->vendor_ecx = get_reg(vendor + 8);
	c->leaf1_ecx = hypervisor ? CPUID_LEAF1_ECX_HYPERVISOR : 0;
	c->hv_ebx = get_reg(sig);
	c->hv_ecx = get_reg(sig + 4);
	c->hv_edx = get_reg(sig + 8);
	return true;
}
