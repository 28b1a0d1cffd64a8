/* YAML scalars as kubectl reads them, and the JSON text kubectl sends.
 *
 * kubectl turns YAML into JSON with sigs.k8s.io/yaml over its fork of
 * go-yaml v2 (YAML 1.1-ish: 0777 is octal, yes/on/y are booleans, 1_000 and
 * 0b101 are integers, .inf is refused), decodes that JSON into an
 * unstructured object (integers that fit int64 stay integers, every other
 * number becomes a float64) and encodes it again for the API server.  This
 * unit reproduces each step for one scalar: yk_resolve is go-yaml v2's
 * resolve() with its tag checks, yk_json_number the number text that comes
 * out at the end, yk_key the string a mapping key becomes.  Each answer was
 * found by experiment with kubectl v1.32 (spec/fixtures/yaml-kubectl/). */
#ifndef FLUENCE_YAML_KUBECTL_H
#define FLUENCE_YAML_KUBECTL_H
#include <stddef.h>

/* a scalar's tag, from libyaml's event (YK_TAG_OTHER: "!", "!foo", !!seq ...) */
enum { YK_TAG_NONE, YK_TAG_STR, YK_TAG_INT, YK_TAG_FLOAT, YK_TAG_BOOL, YK_TAG_NULL,
       YK_TAG_TIMESTAMP, YK_TAG_BINARY, YK_TAG_MERGE, YK_TAG_OTHER };

enum { YK_NULL, YK_BOOL, YK_INT, YK_UINT, YK_FLOAT, YK_STR, YK_BINARY, YK_ERROR };

struct yk_value {
    int kind;
    int b;                  /* YK_BOOL */
    long long i;            /* YK_INT */
    unsigned long long u;   /* YK_UINT: above LLONG_MAX */
    double d;               /* YK_FLOAT (may be infinite or NaN) */
    char err[160];          /* YK_ERROR: go-yaml's message ("cannot decode ...") */
};

int yk_tag(const char *tag);

/* Resolves scalar s (len bytes, NUL-terminated) written plain (1) or quoted
 * or as a block (0), with tag class tag.  YK_STR and YK_BINARY leave the
 * text to the caller (a binary is s in base64). */
void yk_resolve(const char *s, size_t len, int plain, int tag, struct yk_value *v);

/* The number kubectl sends for v (YK_INT, YK_UINT or YK_FLOAT) into buf;
 * 0 when JSON cannot carry it (infinity, NaN: kubectl refuses the file). */
int yk_json_number(const struct yk_value *v, char buf[40]);

/* The mapping key kubectl makes of v into buf (a string key is the caller's
 * text): 1 when done, 0 for a key kubectl refuses (null, an unsigned 64-bit
 * integer), with why in buf. */
int yk_key(const struct yk_value *v, char buf[80]);

/* Go's base64.StdEncoding.DecodeString (line breaks skipped): the decoded
 * length, or (size_t)-1 when s is not valid base64.  out holds len bytes. */
size_t yk_base64(const char *s, size_t len, char *out);

#endif
