/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Strict parsing of unsigned command-line numbers for the guest programs. */
#ifndef GUEST_PARSE_NUMBER_H
#define GUEST_PARSE_NUMBER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Parses a whole string as an unsigned integer: decimal, or hexadecimal with a
 * 0x/0X prefix. Rejects an empty string, signs, blanks, trailing characters,
 * values that overflow 64 bits and values outside [min, max]. A leading zero
 * does not mean octal: "010" is ten, because a user typing a count never
 * means octal. Returns true and stores *out only on success.
 */
bool parse_u64_strict(const char *s, uint64_t min, uint64_t max, uint64_t *out);

/*
 * An option's value: parse_u64_strict, or false with the one-line message
 * "invalid NAME 'ARG': expected an integer from MIN to MAX ...; see --help" in err.
 */
bool parse_u64_option(const char *name, const char *arg, uint64_t min, uint64_t max,
		      uint64_t *out, char *err, size_t err_size);
/* The same for a 32-bit field; max must not exceed UINT32_MAX. */
bool parse_u32_option(const char *name, const char *arg, uint32_t min, uint32_t max,
		      uint32_t *out, char *err, size_t err_size);

#endif
