/* SigV4 cryptography over libcrypto (see aws_sigv4.h). */
#include <string.h>
#include "lazylib.h"
#include "aws_sigv4.h"

static void to_hex(const unsigned char *d, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[d[i] >> 4];
        out[2 * i + 1] = digits[d[i] & 15];
    }
    out[2 * n] = 0;
}

void sigv4_sha256_hex(const void *data, size_t n, char out[SIGV4_HEX_SIZE])
{
    unsigned char md[SHA256_DIGEST_LENGTH];
    SHA256(data, n, md);
    to_hex(md, sizeof md, out);
}

/* out = HMAC-SHA256(key, msg); returns 0 on success */
static int hmac(const unsigned char *key, size_t klen, const void *msg, size_t mlen,
                unsigned char out[SHA256_DIGEST_LENGTH])
{
    unsigned int len = 0;
    if (!HMAC(EVP_sha256(), key, (int)klen, msg, mlen, out, &len) || len != SHA256_DIGEST_LENGTH)
        return -1;
    return 0;
}

int sigv4_signature(const char *secret, size_t secret_len, const char *date8,
                    const char *region, const char *service,
                    const char *sts, size_t sts_len, char out[SIGV4_HEX_SIZE])
{
    unsigned char k1[SHA256_DIGEST_LENGTH], k2[SHA256_DIGEST_LENGTH];
    int rc = -1;
    out[0] = 0;
    /* "AWS4" + secret: the only copy of the secret this unit makes */
    size_t klen = 4 + secret_len;
    unsigned char kbuf[256];
    if (klen > sizeof kbuf) return -1;
    memcpy(kbuf, "AWS4", 4);
    memcpy(kbuf + 4, secret, secret_len);
    if (hmac(kbuf, klen, date8, strlen(date8), k1)) goto done;           /* kDate */
    if (hmac(k1, sizeof k1, region, strlen(region), k2)) goto done;      /* kRegion */
    if (hmac(k2, sizeof k2, service, strlen(service), k1)) goto done;    /* kService */
    if (hmac(k1, sizeof k1, "aws4_request", 12, k2)) goto done;          /* kSigning */
    if (hmac(k2, sizeof k2, sts, sts_len, k1)) goto done;                /* signature */
    to_hex(k1, sizeof k1, out);
    rc = 0;
done:
    OPENSSL_cleanse(kbuf, sizeof kbuf);
    OPENSSL_cleanse(k1, sizeof k1);
    OPENSSL_cleanse(k2, sizeof k2);
    return rc;
}

int sigv4_unreserved(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           c == '-' || c == '.' || c == '_' || c == '~';
}
