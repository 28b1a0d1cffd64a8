/* Fluxion's libreapi_cli as an optional matcher backend (FLUENCE_FLUXION_LIB). */
#ifndef FLUENCE_MATCH_REAPI_H
#define FLUENCE_MATCH_REAPI_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "match_dfu.h"

typedef struct mreapi mreapi;

/* dlopen lib, initialize it with the JGF text, the policy and the match
 * format (MFMT_*); NULL + a one-line message in err. */
mreapi *mr_open(const char *lib, const char *graph_text, const char *policy, int format, char *err, size_t errlen);
void mr_free(mreapi *r);
/* op: MOP_*; fills res like m_match */
void mr_run(mreapi *r, int op, const char *jobspec, mresult *res);
int mr_cancel(mreapi *r, int64_t jobid, unsigned visits[2]);
int mr_info(mreapi *r, int64_t jobid, char *state, size_t n, int64_t *at, bool *reserved);
int64_t mr_next_jobid(const mreapi *r);
void mr_rewind(mreapi *r, int64_t jobid);

#endif
