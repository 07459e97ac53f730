#ifndef COLLECTORD_GLIBC_COMPAT_H
#define COLLECTORD_GLIBC_COMPAT_H

// glibc 2.38's C23 conversions, for a Swift runtime built against glibc 2.38 or later that must
// run on glibc 2.36 (Debian 12). isoc23.c defines glibc's own names for the linker (hidden, so
// nothing outside the binary binds to them); these are the same functions under our names, for
// the tests that compare them with glibc's where glibc has them.

long collectord_isoc23_strtol(const char *nptr, char **endptr, int base);
long long collectord_isoc23_strtoll(const char *nptr, char **endptr, int base);
int collectord_isoc23_vsscanf(const char *s, const char *format, __builtin_va_list ap);

#endif
