/* The cryptographic half of AWS Signature Version 4, with no Lua in sight:
 * SHA-256 of a payload or canonical request, and the signature itself
 * (HMAC-SHA256 over the string to sign, keyed by the key derived
 * "AWS4"+secret -> date -> region -> service -> "aws4_request").
 *
 * Every intermediate key lives on the stack and is wiped with
 * OPENSSL_cleanse before returning; callers own (and wipe) the secret. */
#ifndef FLUENCE_AWS_SIGV4_H
#define FLUENCE_AWS_SIGV4_H
#include <stddef.h>

#define SIGV4_HEX_SIZE 65   /* 64 lowercase hex digits + NUL */

/* out = lowercase hex SHA-256 of data[0..n) */
void sigv4_sha256_hex(const void *data, size_t n, char out[SIGV4_HEX_SIZE]);

/* out = lowercase hex HMAC-SHA256(signing key, sts); date8 is "YYYYMMDD".
 * Returns 0, or -1 if libcrypto failed (out is then empty). */
int sigv4_signature(const char *secret, size_t secret_len, const char *date8,
                    const char *region, const char *service,
                    const char *sts, size_t sts_len, char out[SIGV4_HEX_SIZE]);

/* RFC 3986 unreserved characters: A-Z a-z 0-9 - . _ ~ (never percent-encoded). */
int sigv4_unreserved(unsigned char c);

#endif
