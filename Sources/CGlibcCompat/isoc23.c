// The C23 number conversions glibc 2.38 added (__isoc23_strtol, __isoc23_strtoll,
// __isoc23_sscanf), defined here so that a binary whose static Swift runtime was compiled against
// glibc 2.38 or later links against Debian 12's glibc 2.36 and runs there.
//
// Debian's swiftlang builds libswiftCore.a and libswift_Concurrency.a in unstable, where glibc's
// headers turn strtol, strtoll and sscanf into these C23 entry points. The runtime reads its
// environment variables with them and parses /proc/self/maps with sscanf("%p-%p"). Defined in an
// object of the executable, they are found before libc.so.6 when linking, so the binary never
// asks for GLIBC_2.38; hidden, so no shared library binds to them at run time.
//
// They behave as glibc's do. C23 changed one thing in these functions: with base 0 or 2,
// "0b"/"0B" followed by a binary digit starts a binary number. That case is converted here; every
// other input goes to the C99 functions, which glibc implements identically otherwise (the tests
// compare the two on generated inputs where glibc 2.38 is there). sscanf differs only in the %i
// and %b conversions, which no caller in the runtime uses; the shim passes everything to
// vsscanf.

#undef _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <ctype.h>

#include "CGlibcCompat.h"

// Compiled as C23 (or with _GNU_SOURCE), glibc 2.38's headers would map strtol to
// __isoc23_strtol, and these functions would call themselves.
#if defined(__GLIBC_USE) && __GLIBC_USE(C2X_STRTOL)
#error "isoc23.c must be compiled without C23 strtol (no _GNU_SOURCE, C17 or older)"
#endif

// A binary number after "0b", `digits` at its first binary digit: its magnitude through strtoull
// (base 2, where the C99 function knows no prefix), then glibc's rules for sign and overflow
// within [min, max] (ERANGE and the bound it passed). errno is left alone otherwise.
static long long signed_binary(const char *digits, char **endptr, int negative, long long min, long long max) {
    int saved = errno;
    errno = 0;
    unsigned long long magnitude = strtoull(digits, endptr, 2);
    int overflow = errno == ERANGE;
    errno = saved;
    unsigned long long limit = negative ? (unsigned long long)max + 1 : (unsigned long long)max;
    if (overflow || magnitude > limit) {
        errno = ERANGE;
        return negative ? min : max;
    }
    if (negative) return magnitude == limit ? min : -(long long)magnitude;
    return (long long)magnitude;
}

// Where the prefix is, if C23 reads a binary number: after white space and a sign, "0b" or "0B"
// then a binary digit, with base 0 or 2. Returns the first digit, or NULL; sets *negative.
static const char *binary_digits(const char *nptr, int base, int *negative) {
    if (base != 0 && base != 2) return NULL;
    const char *s = nptr;
    while (isspace((unsigned char)*s)) s++;
    *negative = *s == '-';
    if (*s == '-' || *s == '+') s++;
    if (s[0] == '0' && (s[1] == 'b' || s[1] == 'B') && (s[2] == '0' || s[2] == '1')) return s + 2;
    return NULL;
}

long collectord_isoc23_strtol(const char *nptr, char **endptr, int base) {
    int negative = 0;
    const char *digits = binary_digits(nptr, base, &negative);
    if (digits == NULL) return strtol(nptr, endptr, base);
    return (long)signed_binary(digits, endptr, negative, LONG_MIN, LONG_MAX);
}

long long collectord_isoc23_strtoll(const char *nptr, char **endptr, int base) {
    int negative = 0;
    const char *digits = binary_digits(nptr, base, &negative);
    if (digits == NULL) return strtoll(nptr, endptr, base);
    return signed_binary(digits, endptr, negative, LLONG_MIN, LLONG_MAX);
}

int collectord_isoc23_vsscanf(const char *s, const char *format, va_list ap) {
    return vsscanf(s, format, ap);
}

#define HIDDEN __attribute__((visibility("hidden")))

HIDDEN long __isoc23_strtol(const char *nptr, char **endptr, int base) {
    return collectord_isoc23_strtol(nptr, endptr, base);
}

HIDDEN long long __isoc23_strtoll(const char *nptr, char **endptr, int base) {
    return collectord_isoc23_strtoll(nptr, endptr, base);
}

HIDDEN int __isoc23_sscanf(const char *s, const char *format, ...) {
    va_list ap;
    va_start(ap, format);
    int n = collectord_isoc23_vsscanf(s, format, ap);
    va_end(ap);
    return n;
}
