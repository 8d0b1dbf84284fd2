/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The whole guest of a QEMU VM for tests that start and stop VMs often: a
 * 64 KiB firmware image for `qemu-system-x86_64 -bios`, no BIOS and no
 * kernel, so QEMU with KVM runs it as soon as it starts. It issues one
 * hypercall (nr 1000, vmmcall: the nested machine is AMD) per tick of the
 * PIT at about 200 Hz, a0 counting from 0, and halts in between: a VM that
 * keeps issuing hypercalls at a steady pace until it is killed, whatever the
 * speed of the machine under it.
 *
 * Real mode. QEMU maps the image just below 4 GiB (the CPU starts at its
 * last 16 bytes) and, for an image of 64 KiB, also at 0xF0000, i.e. segment
 * 0xF000 with offsets equal to offsets in the image: linked at address 0.
 * KVM's in-kernel PIT and 8259 PIC tick it. A BIOS would set the LAPIC's
 * LINT0 to ExtINT for the PIC's interrupts to reach the CPU; with the LAPIC
 * out of reach of real mode (0xFEE00000), it is switched off instead (its
 * global enable in IA32_APIC_BASE): with no LAPIC, the PIC's interrupts go
 * straight to the CPU.
 *
 * Build: as --32 -o f.o tick_firmware.S && ld -m elf_i386 -Ttext=0
 *        --oformat=binary -o f.bin f.o
 */
	.code16
	.text
	.globl _start

	/* PIT input clock 1193182 Hz / 5966 = 200 Hz; another rate with
	 * `as --defsym PIT_DIVISOR=N` (at most 65535: 18.2 Hz). */
	.ifndef PIT_DIVISOR
	.equ PIT_DIVISOR, 5966
	.endif
	.equ TICK_VECTOR, 8 /* IRQ 0, with the master PIC's vectors at 8 */
	.equ HYPERCALL_NR, 1000

_start:
	cli
	xor %ax, %ax
	mov %ax, %ds
	mov %ax, %ss
	mov $0x7000, %sp
	/* The interrupt vector table at 0: the tick's handler. */
	movw $tick, (TICK_VECTOR * 4)
	movw $0xf000, (TICK_VECTOR * 4 + 2)
	/* IA32_APIC_BASE: clear the global enable (bit 11). */
	mov $0x1b, %ecx
	rdmsr
	and $0xfffff7ff, %eax
	wrmsr
	/* Master 8259: ICW1 (edge, ICW4 follows), ICW2 (vectors 8-15), ICW3 (slave on IRQ 2), ICW4 (8086). */
	mov $0x11, %al
	out %al, $0x20
	mov $TICK_VECTOR, %al
	out %al, $0x21
	mov $0x04, %al
	out %al, $0x21
	mov $0x01, %al
	out %al, $0x21
	/* Only IRQ 0; the slave masked whole. */
	mov $0xfe, %al
	out %al, $0x21
	mov $0xff, %al
	out %al, $0xa1
	/* PIT channel 0: rate generator, low then high byte of the divisor. */
	mov $0x34, %al
	out %al, $0x43
	mov $(PIT_DIVISOR & 0xff), %al
	out %al, $0x40
	mov $(PIT_DIVISOR >> 8), %al
	out %al, $0x40

	xor %ebx, %ebx /* a0: the hypercall's sequence number */
	xor %ecx, %ecx /* a1..a3: 0 */
	xor %edx, %edx
	xor %esi, %esi
next:
	sti
	hlt /* until the tick (sti lets hlt start before any interrupt is taken) */
	cli
	mov $HYPERCALL_NR, %eax
	vmmcall /* KVM answers -KVM_ENOSYS in eax; nothing else changes */
	inc %ebx
	jmp next

tick:
	push %ax
	mov $0x20, %al /* end of interrupt */
	out %al, $0x20
	pop %ax
	iret

	/* The reset vector: the CPU's first instruction, 16 bytes before the end. */
	.org 0xfff0
	ljmp $0xf000, $_start
	.org 0x10000
