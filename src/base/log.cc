#include "src/base/log.h"

#include <cstdio>
#include <ctime>
#include <mutex>

#include "src/base/clock.h"

namespace titan {
namespace {
std::atomic<int> g_level{static_cast<int>(LogLevel::kInfo)};
std::mutex g_mutex;

char LevelLetter(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return 'D';
    case LogLevel::kInfo:
      return 'I';
    case LogLevel::kWarning:
      return 'W';
    case LogLevel::kError:
      return 'E';
  }
  return '?';
}
}  // namespace

void SetLogLevel(LogLevel level) { g_level.store(static_cast<int>(level)); }
LogLevel GetLogLevel() { return static_cast<LogLevel>(g_level.load()); }

bool ParseLogLevel(std::string_view text, LogLevel* out) {
  if (text == "debug")
    *out = LogLevel::kDebug;
  else if (text == "info")
    *out = LogLevel::kInfo;
  else if (text == "warning" || text == "warn")
    *out = LogLevel::kWarning;
  else if (text == "error")
    *out = LogLevel::kError;
  else
    return false;
  return true;
}

void LogLine(LogLevel level, std::string_view component, std::string_view message) {
  const int64_t now = WallNowNs();
  const time_t seconds = static_cast<time_t>(now / kNsPerSecond);
  tm utc;
  gmtime_r(&seconds, &utc);
  char stamp[32];
  strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &utc);
  std::lock_guard<std::mutex> lock(g_mutex);
  std::fprintf(stderr, "%s.%03dZ %c %.*s: %.*s\n", stamp, static_cast<int>((now / kNsPerMs) % 1000),
               LevelLetter(level), static_cast<int>(component.size()), component.data(),
               static_cast<int>(message.size()), message.data());
}

bool RateLimitedLog::Admit(uint64_t* suppressed) {
  const int64_t now = MonoNowNs();
  int64_t next = next_allowed_ns_.load(std::memory_order_relaxed);
  if (now < next || !next_allowed_ns_.compare_exchange_strong(next, now + interval_ns_)) {
    suppressed_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  *suppressed = suppressed_.exchange(0, std::memory_order_relaxed);
  return true;
}

}  // namespace titan
