/* The titan event client for C (and any language with a C FFI).
 *
 * The same events, contract and configuration as the C++ titan::Client (titan_client.h), on
 * the process-wide client: configured from TITAN_AGENT_SOCKET and TITAN_RANK / RANK on first
 * use; each call is one non-blocking sendto() per socket, never blocks, never raises a signal.
 * Every function returns 1 if every configured socket accepted the event at once, 0 if it was
 * dropped (agent down, events disabled; counted by titan_dropped()) or deferred (the agent's
 * queue was full; sent before the next event, see titan_flush()).
 * Thread-safe; fork-safe. Link with the `titan_client_c` library.
 */
#ifndef TITAN_CLIENT_TITAN_CLIENT_C_H_
#define TITAN_CLIENT_TITAN_CLIENT_C_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

int titan_hello(const char* job); /* job may be NULL */
int titan_step_begin(int64_t step);
int titan_step_end(int64_t step);
int titan_checkpoint_begin(int64_t step);
int titan_checkpoint_end(int64_t step, int64_t bytes);
int titan_mark(const char* name); /* name may be NULL; truncated to 23 bytes */
int titan_heartbeat(void);
int titan_goodbye(void);           /* waits at most 20 ms for deferred events */
int titan_flush(void);             /* tries once to send deferred events; returns how many wait */
void titan_set_rank(int32_t rank); /* overrides TITAN_RANK / RANK */
uint64_t titan_dropped(void);      /* datagrams refused, one per event and socket */
uint64_t titan_sent(void);         /* datagrams accepted */

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TITAN_CLIENT_TITAN_CLIENT_C_H_ */
