/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The one parser of unsigned numbers on command lines, for the host tool and
 * the guest programs alike: a hypercall nr typed on both sides must mean the
 * same number.
 */
#ifndef HT_COMMON_PARSE_NUMBER_H
#define HT_COMMON_PARSE_NUMBER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Parses a whole string as an unsigned integer: decimal, or hexadecimal with a
 * 0x/0X prefix. Rejects an empty string, signs, blanks, trailing characters,
 * values that overflow 64 bits and values outside [min, max]. A leading zero
 * does not mean octal: "010" is ten, because nobody typing a count or a
 * hypercall nr means octal. Returns true and stores *out only on success.
 */
bool ht_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out);

/*
 * An option's value: ht_parse_u64, or false with the one-line message
 * "invalid NAME 'ARG': expected an integer from MIN to MAX ...; see --help" in err.
 */
bool ht_parse_u64_option(const char *name, const char *arg, uint64_t min, uint64_t max,
			 uint64_t *out, char *err, size_t err_size);
/* The same for a 32-bit field; max must not exceed UINT32_MAX. */
bool ht_parse_u32_option(const char *name, const char *arg, uint32_t min, uint32_t max,
			 uint32_t *out, char *err, size_t err_size);

#endif
