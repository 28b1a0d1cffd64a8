/* A jobspec read as Fluxion v0.54 reads it (match_jobspec_fluxion.c), for
 * answers such as resource-query's. */
#ifndef FLUENCE_MATCH_JOBSPEC_FLUXION_H
#define FLUENCE_MATCH_JOBSPEC_FLUXION_H
#include <stdbool.h>
#include <stddef.h>
#include "match_jobspec.h"

/* known(kctx, type) tells the resource types Fluxion knows.  NULL +
 * Fluxion's message. */
mjobspec *mj_parse_fluxion(const char *text, size_t len, bool (*known)(void *, const char *), void *kctx, char *err,
                           size_t errlen);

#endif
