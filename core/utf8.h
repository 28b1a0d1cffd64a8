/* UTF-8 as Go's utf8.DecodeRune judges it, the one reading of it: no
 * overlong forms, no surrogates, nothing past U+10FFFF.  For the escaping
 * of outside text (escape.c), the JSON fluence writes (json_write.c), the
 * JSON it scans (jscan.c) and the values it writes into manifests. */
#ifndef FLUENCE_UTF8_H
#define FLUENCE_UTF8_H
#include <stddef.h>

/* The length of the well-formed sequence at s (n > 0 bytes left) and its
 * code point in *cp, or 0 when there is none there. */
size_t utf8_decode(const unsigned char *s, size_t n, unsigned *cp);
/* Is s (len bytes) well-formed UTF-8 throughout?  ASCII goes 8 bytes at a
 * time. */
int utf8_valid(const char *s, size_t len);

#endif
