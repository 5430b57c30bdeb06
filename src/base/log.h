// Minimal leveled logging to stderr: "2026-11-30T04:40:01.123Z W agent: message".
// Thread safety: every call is safe from any thread; lines are never interleaved.
// LogEveryN-style rate limiting is provided by RateLimitedLog for hot paths fed by outside
// input (a flood of bad datagrams must not flood the log).
#pragma once

#include <atomic>
#include <cstdint>
#include <string_view>

#include <fmt/format.h>

namespace titan {

enum class LogLevel : int { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

void SetLogLevel(LogLevel level);
LogLevel GetLogLevel();
// Parses "debug", "info", "warning", "error"; false if unknown.
bool ParseLogLevel(std::string_view text, LogLevel* out);
void LogLine(LogLevel level, std::string_view component, std::string_view message);

template <typename... Args>
void Log(LogLevel level, std::string_view component, fmt::format_string<Args...> format,
         Args&&... args) {
  if (level < GetLogLevel()) return;
  LogLine(level, component, fmt::format(format, std::forward<Args>(args)...));
}

// Allows at most one line per `interval_ns` (monotonic); counts what it suppressed and reports
// the count with the next line it lets through. Thread-safe.
class RateLimitedLog {
 public:
  explicit RateLimitedLog(int64_t interval_ns) : interval_ns_(interval_ns) {}
  template <typename... Args>
  void Log(LogLevel level, std::string_view component, fmt::format_string<Args...> format,
           Args&&... args) {
    uint64_t suppressed = 0;
    if (!Admit(&suppressed)) return;
    std::string message = fmt::format(format, std::forward<Args>(args)...);
    if (suppressed > 0) message += fmt::format(" ({} similar lines suppressed)", suppressed);
    LogLine(level, component, message);
  }

 private:
  bool Admit(uint64_t* suppressed);
  const int64_t interval_ns_;
  std::atomic<int64_t> next_allowed_ns_{0};
  std::atomic<uint64_t> suppressed_{0};
};

}  // namespace titan
