#include "src/base/clock.h"

#include <cerrno>
#include <ctime>

namespace titan {
namespace {
int64_t Read(clockid_t id) {
  timespec ts;
  clock_gettime(id, &ts);
  return static_cast<int64_t>(ts.tv_sec) * kNsPerSecond + ts.tv_nsec;
}
}  // namespace

int64_t WallNowNs() { return Read(CLOCK_REALTIME); }
int64_t MonoNowNs() { return Read(CLOCK_MONOTONIC); }

void SleepUntilMonoNs(int64_t deadline_ns) {
  timespec ts{static_cast<time_t>(deadline_ns / kNsPerSecond),
              static_cast<long>(deadline_ns % kNsPerSecond)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
  }
}

}  // namespace titan
