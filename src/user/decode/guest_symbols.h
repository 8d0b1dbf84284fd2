/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Guest kernel symbols: a System.map or a copy of the guest's /proc/kallsyms
 * ("ADDRESS TYPE NAME [\t[module]]" lines), and the KASLR offset between the
 * addresses in that file and the guest's run-time addresses. A kallsyms copy
 * already holds run-time addresses (offset 0, as long as the guest has not
 * rebooted); a System.map holds link-time ones.
 */
#ifndef HT_DECODE_GUEST_SYMBOLS_H
#define HT_DECODE_GUEST_SYMBOLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ht_sym {
	uint64_t addr; /* as in the file */
	const char *name;
	char type;     /* t, T, w or W: upper case is global */
	bool module;   /* a module's ("name [mod]" in kallsyms) */
	const char *mod; /* that module's name, without brackets (NULL: the kernel's) */
};

struct ht_symtab {
	struct ht_sym *syms; /* code symbols, sorted by address */
	size_t n;
	char *names;         /* storage of every name */
	uint64_t offset;     /* run-time address - file address (KASLR), mod 2^64 */
};

/* Loads code symbols (types t, T, w, W) from path. Returns 0, or -1 with a one-line message. */
int ht_symtab_load(struct ht_symtab *t, const char *path, char *err, size_t errlen);
/* The same from text in memory (tests). */
int ht_symtab_parse(struct ht_symtab *t, const char *text, const char *origin, char *err,
		    size_t errlen);
void ht_symtab_free(struct ht_symtab *t);
/* The file address of a symbol by name; false if absent. */
bool ht_symtab_addr_of(const struct ht_symtab *t, const char *name, uint64_t *addr);
/*
 * The symbol holding run-time address addr (the offset applied): the nearest
 * symbol at or below it, with *off the distance. Of aliases at one address
 * (a syscall wrapper and the function inlined into it, _stext and _text), a
 * global symbol is preferred, then x86-64's own syscall entry (__x64_sys_*,
 * what a probe of a syscall names: a syscall without arguments has its
 * __ia32_sys_* alias at the same address), then the first by name. No
 * symbol is farther than 1 MiB below an address (no kernel function is that
 * long: the address is in a gap). Addresses in the module area (0xffffffffc0000000 and up on
 * x86-64) are looked up among module symbols without the offset, and only
 * when the offset is 0: modules load at their own random addresses, so only
 * a kallsyms copy from the guest's current boot names them. NULL below the first
 * symbol, or farther than max_off past the last one (addresses past the end
 * of the kernel text are not code of the last symbol).
 */
const struct ht_sym *ht_symtab_lookup(const struct ht_symtab *t, uint64_t addr, uint64_t *off);
/* A buffer that holds any "name+0xoff [module]" whole: longer names are cut (at a character), the offset never. */
#define HT_SYM_TEXT_MAX 512
/* A module's name in that text, at most (MODULE_NAME_LEN - 1 on 64-bit): a longer one is cut. */
#define HT_SYM_MODULE_MAX 55

/*
 * "name+0xoff" into buf -- "name+0xoff [module]" for a module's symbol --
 * or false (buf untouched) when addr is no symbol's.
 */
bool ht_symtab_format(const struct ht_symtab *t, uint64_t addr, char *buf, size_t len);
/* The same with the module apart: "name+0xoff" into buf, *mod the module or NULL. */
bool ht_symtab_format_parts(const struct ht_symtab *t, uint64_t addr, char *buf, size_t len, const char **mod);
/*
 * A function's name where a call is shown (a graph line, a slice, an event
 * class): as ht_symtab_format without the "+0x0" of an address at the
 * function's start, where a probe sits ("vfs_read", "kvm_foo [kvm]").
 */
bool ht_symtab_function(const struct ht_symtab *t, uint64_t addr, char *buf, size_t len);

#endif
