// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Unit tests of guest/cpuid_info.c: the decision whether a hypercall may be
 * issued, fed with bare-metal, Xen, VMware, Hyper-V and KVM CPUID values.
 */
#include <string.h>

#include "cpuid_info.h"
#include "test.h"
#include "common/cpu_vendor.h"
#include "common/util.h"
#include "hypertrace/record.h"

/* Builds a snapshot the way the CPU reports it: strings in little-endian registers. */
static struct cpuid_snapshot snapshot(const char *vendor, int hypervisor_bit, const char sig[12])
{
	struct cpuid_snapshot c;
	uint32_t r[3];

	memset(&c, 0, sizeof(c));
	memcpy(r, vendor, 12);
	c.vendor_ebx = r[0];
	c.vendor_edx = r[1];
	c.vendor_ecx = r[2];
	c.leaf1_ecx = hypervisor_bit ? CPUID_LEAF1_ECX_HYPERVISOR : 0;
	memcpy(r, sig, 12);
	c.hv_ebx = r[0];
	c.hv_ecx = r[1];
	c.hv_edx = r[2];
	return c;
}

static void test_cpuid_bare_metal_refused(void)
{
	/* Even if leaf 0x40000000 happened to hold KVM's bytes, a clear bit means no hypervisor. */
	struct cpuid_snapshot c = snapshot("GenuineIntel", 0, KVM_CPUID_SIGNATURE);
	struct cpuid_snapshot zero = snapshot("AuthenticAMD", 0, "\0\0\0\0\0\0\0\0\0\0\0\0");

	CHECK(cpuid_hypervisor_kind(&c) == HYPERVISOR_NONE, "bare metal with stale leaf accepted");
	CHECK(cpuid_hypervisor_kind(&zero) == HYPERVISOR_NONE, "bare metal not recognized");
}

static void test_cpuid_other_hypervisors_refused(void)
{
	const char *sigs[] = { "XenVMMXenVMM", "VMwareVMware", "Microsoft Hv", "TCGTCGTCGTCG",
			       " lrpepyh  vr", "KVMKVMKVMKVM", "KVMKVMKV\0\0\0\0" };
	char text[13];

	for (size_t i = 0; i < ARRAY_SIZE(sigs); i++) {
		struct cpuid_snapshot c = snapshot("GenuineIntel", 1, sigs[i]);

		CHECK(cpuid_hypervisor_kind(&c) == HYPERVISOR_OTHER, "signature %zu accepted", i);
	}
	{
		struct cpuid_snapshot c = snapshot("GenuineIntel", 1, "Microsoft Hv");

		cpuid_hypervisor_signature(&c, text);
		CHECK(strcmp(text, "Microsoft Hv") == 0, "signature text '%s'", text);
	}
}

static void test_cpuid_kvm_accepted(void)
{
	struct cpuid_snapshot intel = snapshot("GenuineIntel", 1, KVM_CPUID_SIGNATURE);
	struct cpuid_snapshot amd = snapshot("AuthenticAMD", 1, KVM_CPUID_SIGNATURE);
	char text[13];

	CHECK(cpuid_hypervisor_kind(&intel) == HYPERVISOR_KVM, "KVM on Intel refused");
	CHECK(cpuid_hypervisor_kind(&amd) == HYPERVISOR_KVM, "KVM on AMD refused");
	cpuid_hypervisor_signature(&intel, text);
	CHECK(strcmp(text, "KVMKVMKVM") == 0, "signature text '%s'", text);
}

static void test_cpuid_vendor_picks_instruction(void)
{
	struct cpuid_snapshot intel = snapshot("GenuineIntel", 1, KVM_CPUID_SIGNATURE);
	struct cpuid_snapshot amd = snapshot("AuthenticAMD", 1, KVM_CPUID_SIGNATURE);
	struct cpuid_snapshot hygon = snapshot("HygonGenuine", 1, KVM_CPUID_SIGNATURE);
	struct cpuid_snapshot via = snapshot("CentaurHauls", 1, KVM_CPUID_SIGNATURE);
	char vendor[13];

	CHECK(cpuid_vendor_hypercall_insn(&intel) == HYPERCALL_INSN_VMCALL, "Intel");
	CHECK(cpuid_vendor_hypercall_insn(&amd) == HYPERCALL_INSN_VMMCALL, "AMD");
	CHECK(cpuid_vendor_hypercall_insn(&hygon) == HYPERCALL_INSN_VMMCALL, "Hygon");
	CHECK(cpuid_vendor_hypercall_insn(&via) == HYPERCALL_INSN_UNKNOWN, "Centaur");
	cpuid_vendor_string(&amd, vendor);
	CHECK(strcmp(vendor, "AuthenticAMD") == 0, "vendor '%s'", vendor);
	/* The host reads the same table: vmcall is VMX's, vmmcall SVM's; whole strings only. */
	CHECK(ht_vendor_isa("GenuineIntel") == HT_ISA_VMX, "host: Intel");
	CHECK(ht_vendor_isa("AuthenticAMD") == HT_ISA_SVM && ht_vendor_isa("HygonGenuine") == HT_ISA_SVM, "host: AMD, Hygon");
	CHECK(ht_vendor_isa("CentaurHauls") == 0 && ht_vendor_isa("Genuine") == 0 &&
		      ht_vendor_isa("GenuineIntelX") == 0 && ht_vendor_isa("") == 0,
	      "host: an unknown vendor or a prefix taken for a known one");
}

static void test_cpuid_hardware_virtualization(void)
{
	struct cpuid_snapshot c;

	memset(&c, 0, sizeof(c));
	c.leaf1_ecx = CPUID_LEAF1_ECX_HYPERVISOR;
	CHECK(!cpuid_has_hardware_virtualization(&c), "no VMX/SVM reported as present");
	c.leaf1_ecx |= CPUID_LEAF1_ECX_VMX;
	CHECK(cpuid_has_hardware_virtualization(&c), "VMX not seen");
	c.leaf1_ecx = 0;
	c.ext1_ecx = CPUID_EXT1_ECX_SVM;
	CHECK(cpuid_has_hardware_virtualization(&c), "SVM not seen");
}

static void test_cpuid_insn_names(void)
{
	CHECK(hypercall_insn_parse("vmcall") == HYPERCALL_INSN_VMCALL, "vmcall");
	CHECK(hypercall_insn_parse("vmmcall") == HYPERCALL_INSN_VMMCALL, "vmmcall");
	CHECK(hypercall_insn_parse("VMCALL") == HYPERCALL_INSN_UNKNOWN, "case matters");
	CHECK(hypercall_insn_parse("") == HYPERCALL_INSN_UNKNOWN, "empty");
	CHECK(strcmp(hypercall_insn_name(HYPERCALL_INSN_VMMCALL), "vmmcall") == 0, "name");
}

/* The text form behind the hypercall program's test hook. */
static void test_cpuid_snapshot_from_text(void)
{
	struct cpuid_snapshot c, want = snapshot("GenuineIntel", 1, KVM_CPUID_SIGNATURE);
	const char *bad[] = { "", "GenuineIntel", "GenuineIntel,1", "GenuineIntel,2,KVM",
			      "GenuineIntelX,1,KVM", "GenuineIntel,1,KVMKVMKVMKVMK",
			      "GenuineIntel,1,KVM,x", "GenuineIntel,,KVM" };

	CHECK(cpuid_snapshot_from_text("GenuineIntel,1,KVMKVMKVM", &c), "valid text rejected");
	CHECK(memcmp(&c, &want, sizeof(c)) == 0, "snapshot differs from the CPU's layout");
	CHECK(cpuid_snapshot_from_text("AuthenticAMD,0,", &c), "bare-metal text rejected");
	CHECK(cpuid_hypervisor_kind(&c) == HYPERVISOR_NONE, "bare-metal text not bare metal");
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		CHECK(!cpuid_snapshot_from_text(bad[i], &c), "accepted '%s'", bad[i]);
}

int main(void)
{
	RUN(test_cpuid_bare_metal_refused);
	RUN(test_cpuid_other_hypervisors_refused);
	RUN(test_cpuid_kvm_accepted);
	RUN(test_cpuid_vendor_picks_instruction);
	RUN(test_cpuid_hardware_virtualization);
	RUN(test_cpuid_insn_names);
	RUN(test_cpuid_snapshot_from_text);
	return ht_test_exit_status();
}
