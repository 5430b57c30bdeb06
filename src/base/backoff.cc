#include "src/base/backoff.h"

#include <time.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>

#include "src/base/clock.h"
#include "src/base/text.h"

namespace titan {

Backoff::Backoff(int64_t first_ns, int64_t max_ns)
    : first_ns_(std::max<int64_t>(first_ns, 1)),
      max_ns_(std::max(max_ns, first_ns_)),
      step_ns_(first_ns_),
      random_(std::random_device{}()) {}

int64_t Backoff::Next() {
  int64_t step = step_ns_;
  step_ns_ = step > max_ns_ / 2 ? max_ns_ : step * 2;
  return std::uniform_int_distribution<int64_t>(step / 2, step)(random_);
}

bool SleepUnlessStopped(int64_t ns, const std::atomic<bool>* stop) {
  int64_t end_ns = MonoNowNs() + ns;
  while (true) {
    if (stop != nullptr && stop->load(std::memory_order_relaxed)) return false;
    int64_t left_ns = end_ns - MonoNowNs();
    if (left_ns <= 0) return true;
    std::this_thread::sleep_for(
        std::chrono::nanoseconds(std::min<int64_t>(left_ns, 50 * kNsPerMs)));
  }
}

std::optional<int64_t> ParseRetryAfter(std::string_view value, int64_t now_unix_ns) {
  value = Trim(value);
  if (value.empty()) return std::nullopt;
  if (value.find_first_not_of("0123456789") == std::string_view::npos) {
    uint64_t seconds = 0;
    if (!ParseUint64(value, &seconds)) return std::nullopt;
    // Over a day is no throttling hint; callers cap far lower anyway.
    return static_cast<int64_t>(std::min<uint64_t>(seconds, 86'400)) * kNsPerSecond;
  }
  // IMF-fixdate, the one form RFC 9110 requires senders to use.
  std::string text(value);
  struct tm tm = {};
  const char* end = ::strptime(text.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &tm);
  if (end == nullptr || *end != '\0') return std::nullopt;
  time_t at = ::timegm(&tm);
  if (at == static_cast<time_t>(-1)) return std::nullopt;
  int64_t delay_ns = (static_cast<int64_t>(at) - now_unix_ns / kNsPerSecond) * kNsPerSecond;
  return std::clamp<int64_t>(delay_ns, 0, 86'400 * kNsPerSecond);
}

}  // namespace titan
