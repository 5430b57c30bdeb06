// The C API (titan_client_c.h) over the process-wide titan::Client.
#include "src/client/titan_client_c.h"

#include <string_view>

#include "src/client/titan_client.h"

namespace {
titan::Client& C() { return titan::Client::Default(); }
std::string_view OrEmpty(const char* text) {
  return text != nullptr ? std::string_view(text) : std::string_view();
}
}  // namespace

extern "C" {
int titan_hello(const char* job) { return C().Hello(OrEmpty(job)); }
int titan_step_begin(int64_t step) { return C().StepBegin(step); }
int titan_step_end(int64_t step) { return C().StepEnd(step); }
int titan_checkpoint_begin(int64_t step) { return C().CheckpointBegin(step); }
int titan_checkpoint_end(int64_t step, int64_t bytes) { return C().CheckpointEnd(step, bytes); }
int titan_mark(const char* name) { return C().Mark(OrEmpty(name)); }
int titan_heartbeat(void) { return C().Heartbeat(); }
int titan_goodbye(void) { return C().Goodbye(); }
int titan_flush(void) { return C().Flush(); }
void titan_set_rank(int32_t rank) { C().SetRank(rank); }
uint64_t titan_dropped(void) { return C().dropped(); }
uint64_t titan_sent(void) { return C().sent(); }
}
