/* The progress line on stderr (see progress.c): one updating status line
 * shown on a terminal once an operation has run for a second.  Lua sets the
 * text (fluence.log -> fluence.progress); C redraws it while a transfer
 * blocks, so the line moves even when one provider call takes seconds. */
#ifndef FLUENCE_PROGRESS_H
#define FLUENCE_PROGRESS_H

/* Called from a transfer loop (libcurl's progress callback): redraws the
 * line with "waiting for HOST, N s" (at most once a second).  Cheap when
 * there is nothing to draw.  host may be NULL. */
void fluence_progress_waiting(const char *host, double seconds);

/* Is a progress line due now (an operation running for over a second on a
 * terminal)?  Lets callers skip work (finding the host) otherwise. */
int fluence_progress_due(void);

/* Erases the line and ends the operation (before an error message). */
void fluence_progress_clear(void);

#endif
