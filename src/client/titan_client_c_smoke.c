/* Compiled as C (not C++) to prove titan_client_c.h is a plain-C header; called from
 * event_receiver_test.cc. Sends one event of every kind and returns how many were accepted. */
#include "src/client/titan_client_c.h"

int titan_client_c_smoke(void) {
  int accepted = 0;
  titan_set_rank(11);
  accepted += titan_hello("c-job");
  accepted += titan_step_begin(1);
  accepted += titan_step_end(1);
  accepted += titan_checkpoint_begin(2);
  accepted += titan_checkpoint_end(2, 4096);
  accepted += titan_mark("c-mark");
  accepted += titan_heartbeat();
  accepted += titan_goodbye();
  accepted += titan_flush() == 0 ? 0 : 100; /* nothing may be left deferred */
  return accepted;
}
