// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "decode/guest_symbols.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "common/errf.h"
#include "common/escape.h"
#include "common/parse_number.h"
#include "common/grow.h"

/* Farther than this past a symbol, an address is in a gap, not in that symbol's function. */
#define HT_SYM_MAX_OFF (1ull << 20)
/* x86-64's module area (MODULES_VADDR): above the kernel image's 1 GiB. */
#define HT_MODULES_VADDR 0xffffffffc0000000ull

/* x86-64's entry point of a syscall: of its aliases, the name a probe of it was given. */
static bool is_x64_syscall(const char *name)
{
	return !strncmp(name, "__x64_sys_", 10);
}

static int cmp_sym(const void *a, const void *b)
{
	const struct ht_sym *x = a, *y = b;

	bool gx = x->type == 'T' || x->type == 'W', gy = y->type == 'T' || y->type == 'W';

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (gx != gy)
		return gx ? -1 : 1;
	if (is_x64_syscall(x->name) != is_x64_syscall(y->name))
		return is_x64_syscall(x->name) ? -1 : 1;
	return strcmp(x->name, y->name);
}

static bool is_code_type(const char *type)
{
	return strlen(type) == 1 && strchr("tTwW", type[0]);
}

int ht_symtab_parse(struct ht_symtab *t, const char *text, const char *origin, char *err,
		    size_t errlen)
{
	size_t cap = 0, lines = 0, zero = 0;
	char *p, *next;

	memset(t, 0, sizeof(*t));
	t->names = strdup(text);
	if (!t->names)
		return ht_errf(err, errlen, "out of memory");
	for (p = t->names; p && *p; p = next) {
		char *save = NULL, *addr_s, *type, *name, *mod;
		uint64_t addr;

		next = strchr(p, '\n');
		if (next)
			*next++ = '\0';
		lines++;
		addr_s = strtok_r(p, " \t", &save);
		type = strtok_r(NULL, " \t", &save);
		name = strtok_r(NULL, " \t", &save);
		mod = strtok_r(NULL, " \t\r", &save);
		if (!addr_s)
			continue;
		if (!type || !name) {
			ht_symtab_free(t);
			return ht_errf(err, errlen, "%s:%zu: expected 'ADDRESS TYPE NAME' (a System.map or /proc/kallsyms copy)",
				    origin, lines);
		}
		char hex[24];
		if (strlen(addr_s) > 16 || snprintf(hex, sizeof(hex), "0x%s", addr_s) < 0 ||
		    !ht_parse_u64(hex, 0, UINT64_MAX, &addr)) {
			char shown[64];

			/* The message first: addr_s lives in the storage freed next. It is the file's: escaped. */
			ht_errf(err, errlen, "%s:%zu: '%s' is not a hexadecimal address (a System.map or /proc/kallsyms copy)",
			     origin, lines, ht_escape(shown, sizeof(shown), addr_s, HT_ESC_TEXT));
			ht_symtab_free(t);
			return -1;
		}
		if (!is_code_type(type))
			continue;
		if (addr == 0) {
			zero++;
			continue;
		}
		/* A module symbol keeps its module, apart from its name: "[mod]" -> "mod". */
		if (mod && mod[0] == '[') {
			mod++;
			if (mod[0] && mod[strlen(mod) - 1] == ']')
				mod[strlen(mod) - 1] = '\0';
		}
		if (HT_GROW(t->syms, cap, t->n + 1, 4096)) {
			ht_symtab_free(t);
			return ht_errf(err, errlen, "out of memory");
		}
		t->syms[t->n].addr = addr;
		t->syms[t->n].name = name;
		t->syms[t->n].type = type[0];
		t->syms[t->n].module = mod && mod[-1] == '[';
		t->syms[t->n].mod = t->syms[t->n].module ? mod : NULL;
		t->n++;
	}
	if (t->n == 0) {
		ht_symtab_free(t);
		if (zero)
			return ht_errf(err, errlen, "%s: every address is 0: copy /proc/kallsyms as root with sysctl kernel.kptr_restrict=1 or 0",
				    origin);
		return ht_errf(err, errlen, "%s: no code symbols (types t/T/w/W): give a System.map or a /proc/kallsyms copy", origin);
	}
	qsort(t->syms, t->n, sizeof(*t->syms), cmp_sym);
	return 0;
}

int ht_symtab_load(struct ht_symtab *t, const char *path, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	char *text = NULL;
	size_t len = 0, cap = 0;
	int ret;

	memset(t, 0, sizeof(*t));
	if (!f)
		return ht_errf(err, errlen, "cannot open guest symbols %s: %s", path, strerror(errno));
	for (;;) {
		if (HT_GROW(text, cap, len + 65536, 1 << 20)) {
			free(text);
			fclose(f);
			return ht_errf(err, errlen, "out of memory");
		}
		size_t got = fread(text + len, 1, cap - len - 1, f);

		len += got;
		if (got == 0)
			break;
	}
	if (ferror(f)) {
		ret = ht_errf(err, errlen, "cannot read guest symbols %s: %s", path, strerror(errno));
	} else if (memchr(text, '\0', len)) {
		ret = ht_errf(err, errlen, "%s is not a System.map or kallsyms copy (it holds NUL bytes)", path);
	} else {
		text[len] = '\0';
		ret = ht_symtab_parse(t, text, path, err, errlen);
	}
	free(text);
	fclose(f);
	return ret;
}

void ht_symtab_free(struct ht_symtab *t)
{
	free(t->syms);
	free(t->names);
	memset(t, 0, sizeof(*t));
}

bool ht_symtab_addr_of(const struct ht_symtab *t, const char *name, uint64_t *addr)
{
	/* The kernel's own: a module's symbol of that name is somewhere else in every boot. */
	for (size_t i = 0; i < t->n; i++)
		if (!t->syms[i].module && !strcmp(t->syms[i].name, name)) {
			*addr = t->syms[i].addr;
			return true;
		}
	return false;
}

const struct ht_sym *ht_symtab_lookup(const struct ht_symtab *t, uint64_t addr, uint64_t *off)
{
	bool in_modules = addr >= HT_MODULES_VADDR;
	uint64_t a = in_modules ? addr : addr - t->offset;
	size_t lo = 0, hi = t->n;

	if (!t->n || a < t->syms[0].addr || (in_modules && t->offset != 0))
		return NULL;
	/* The last symbol at or below a. */
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->syms[mid].addr <= a)
			lo = mid;
		else
			hi = mid;
	}
	/*
	 * Of aliases at one address, the first in sort order (global, then by
	 * name): found by a second binary search, not a walk back over them (a
	 * crafted file can give one address a million names).
	 */
	size_t last = lo, first = 0;
	uint64_t at = t->syms[lo].addr;

	hi = lo;
	while (first < hi) {
		size_t mid = first + (hi - first) / 2;

		if (t->syms[mid].addr < at)
			first = mid + 1;
		else
			hi = mid;
	}
	lo = first;
	if (a - t->syms[last].addr > HT_SYM_MAX_OFF || t->syms[lo].module != in_modules)
		return NULL;
	*off = a - t->syms[lo].addr;
	return &t->syms[lo];
}

/*
 * "name+0xoff" into buf (len > 0), or "name" alone at the symbol's start
 * when with_zero is false: a name too long is cut, at a character of UTF-8,
 * never the offset.
 */
static void place_text(const struct ht_sym *s, uint64_t off, bool with_zero, char *buf, size_t len)
{
	char tail[24] = "";
	size_t tail_len, keep;

	if (off || with_zero)
		snprintf(tail, sizeof(tail), "+0x%" PRIx64, off);
	tail_len = strlen(tail);
	if (tail_len >= len) {
		memcpy(buf, tail, len - 1);
		buf[len - 1] = '\0';
		return;
	}
	keep = ht_utf8_prefix(s->name, len - tail_len - 1);
	memcpy(buf, s->name, keep);
	memcpy(buf + keep, tail, tail_len + 1);
}

bool ht_symtab_format_parts(const struct ht_symtab *t, uint64_t addr, char *buf, size_t len, const char **mod)
{
	uint64_t off;
	const struct ht_sym *s = ht_symtab_lookup(t, addr, &off);

	if (!s || !len)
		return false;
	place_text(s, off, true, buf, len);
	*mod = s->mod;
	return true;
}

/* "name+0xoff [module]" (or without "+0x0" when with_zero is false) into buf. */
static bool format(const struct ht_symtab *t, uint64_t addr, bool with_zero, char *buf, size_t len)
{
	uint64_t off;
	const struct ht_sym *s = ht_symtab_lookup(t, addr, &off);
	char module[HT_SYM_MODULE_MAX + 4] = "";
	size_t module_len = 0, n;

	if (!s || !len)
		return false;
	/* One token for the place, then its module, as the kernel prints a module's address. */
	if (s->mod) {
		snprintf(module, sizeof(module), " [%.*s]", (int)ht_utf8_prefix(s->mod, HT_SYM_MODULE_MAX), s->mod);
		module_len = strlen(module);
		if (module_len >= len)
			module_len = 0;
	}
	place_text(s, off, with_zero, buf, len - module_len);
	n = strlen(buf);
	memcpy(buf + n, module, module_len);
	buf[n + module_len] = '\0';
	return true;
}

bool ht_symtab_format(const struct ht_symtab *t, uint64_t addr, char *buf, size_t len)
{
	return format(t, addr, true, buf, len);
}

bool ht_symtab_function(const struct ht_symtab *t, uint64_t addr, char *buf, size_t len)
{
	return format(t, addr, false, buf, len);
}
