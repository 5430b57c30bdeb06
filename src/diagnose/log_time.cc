#include "src/diagnose/log_time.h"

#include <cstring>
#include <ctime>
#include <limits>

namespace titan::diagnose {
namespace {

constexpr int64_t kNs = 1'000'000'000;
constexpr int64_t kYear2000 = 946684800;  // epoch seconds of 2000-01-01T00:00:00Z

class Cursor {
 public:
  Cursor(std::string_view s, size_t at) : s_(s), at_(at) {}
  bool Done() const { return at_ >= s_.size(); }
  char Peek(size_t ahead = 0) const { return at_ + ahead < s_.size() ? s_[at_ + ahead] : '\0'; }
  bool Eat(char c) {
    if (Peek() != c) return false;
    ++at_;
    return true;
  }
  void SkipSpaces() {
    while (Peek() == ' ') ++at_;
  }
  // Exactly `n` digits.
  bool Digits(int n, int* out) {
    int v = 0;
    for (int i = 0; i < n; ++i) {
      char c = Peek(i);
      if (c < '0' || c > '9') return false;
      v = v * 10 + (c - '0');
    }
    at_ += n;
    *out = v;
    return true;
  }
  // 1..max digits.
  int DigitsUpTo(int max, int* out) {
    int v = 0, n = 0;
    while (n < max && Peek() >= '0' && Peek() <= '9') {
      v = v * 10 + (Peek() - '0');
      ++at_;
      ++n;
    }
    *out = v;
    return n;
  }
  // A fraction after '.' or ',' (up to 9 digits kept, more skipped) in ns.
  bool Fraction(int64_t* ns) {
    if (Peek() != '.' && Peek() != ',') return false;
    if (Peek(1) < '0' || Peek(1) > '9') return false;
    ++at_;
    int64_t v = 0;
    int n = 0;
    while (Peek() >= '0' && Peek() <= '9') {
      if (n < 9) {
        v = v * 10 + (Peek() - '0');
        ++n;
      }
      ++at_;
    }
    while (n < 9) {
      v *= 10;
      ++n;
    }
    *ns = v;
    return true;
  }
  // "Jan".."Dec" -> 1..12.
  bool Month(int* out) {
    static constexpr const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                              "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    if (at_ + 3 > s_.size()) return false;
    for (int m = 0; m < 12; ++m) {
      if (std::memcmp(s_.data() + at_, kMonths[m], 3) == 0) {
        at_ += 3;
        *out = m + 1;
        return true;
      }
    }
    return false;
  }
  bool Weekday() {
    static constexpr const char* kDays[] = {"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"};
    if (at_ + 3 > s_.size()) return false;
    for (const char* d : kDays) {
      if (std::memcmp(s_.data() + at_, d, 3) == 0) {
        at_ += 3;
        return true;
      }
    }
    return false;
  }
  // HH:MM:SS
  bool Clock(int* h, int* m, int* s) {
    return Digits(2, h) && Eat(':') && Digits(2, m) && Eat(':') && Digits(2, s) && *h < 24 &&
           *m < 60 && *s < 61;
  }
  size_t at() const { return at_; }

 private:
  std::string_view s_;
  size_t at_;
};

bool ValidDate(int month, int day) { return month >= 1 && month <= 12 && day >= 1 && day <= 31; }

// Seconds whose nanoseconds fit an int64_t (about +-292 years from the clock's zero): times
// beyond are no time (a log's "9999-12-31" or "[999999999999.0]" would overflow).
bool FitsInNs(int64_t seconds) {
  constexpr int64_t kMaxSeconds = std::numeric_limits<int64_t>::max() / kNs - 1;
  return seconds >= -kMaxSeconds && seconds <= kMaxSeconds;
}

LogTime Wall(int64_t epoch_seconds, int64_t frac_ns) {
  if (!FitsInNs(epoch_seconds)) return {};
  return {ClockKind::kWall, epoch_seconds * kNs + frac_ns};
}
LogTime NoYear(int month, int day, int h, int m, int s, int64_t frac_ns) {
  return {ClockKind::kWallNoYear,
          (EpochSecondsUtc(2000, month, day, h, m, s) - kYear2000) * kNs + frac_ns};
}

// 2025-01-21T04:41:44,283302+00:00 (and ' ' / '_' separators, no zone = UTC).
LogTime TryIso(std::string_view line, size_t at) {
  Cursor c(line, at);
  int y, mo, d, h, mi, s;
  if (!c.Digits(4, &y) || !c.Eat('-') || !c.Digits(2, &mo) || !c.Eat('-') || !c.Digits(2, &d))
    return {};
  if (!ValidDate(mo, d) || y < 1971 || y > 2200) return {};
  if (!c.Eat('T') && !c.Eat(' ') && !c.Eat('_')) return {};
  if (!c.Clock(&h, &mi, &s)) return {};
  int64_t frac = 0;
  c.Fraction(&frac);
  int64_t offset_s = 0;
  if (c.Peek() == 'Z') {
    c.Eat('Z');
  } else if ((c.Peek() == '+' || c.Peek() == '-') && c.Peek(1) >= '0' && c.Peek(1) <= '9') {
    int sign = c.Peek() == '+' ? 1 : -1;
    c.Eat(c.Peek());
    int oh = 0, om = 0;
    if (c.Digits(2, &oh)) {
      c.Eat(':');
      c.Digits(2, &om);
      offset_s = sign * (oh * 3600 + om * 60);
    }
  }
  return Wall(EpochSecondsUtc(y, mo, d, h, mi, s) - offset_s, frac);
}

// 08/13/2020 18:56:31
LogTime TryUsDate(std::string_view line, size_t at) {
  Cursor c(line, at);
  int mo, d, y, h, mi, s;
  if (!c.Digits(2, &mo) || !c.Eat('/') || !c.Digits(2, &d) || !c.Eat('/') || !c.Digits(4, &y))
    return {};
  if (!ValidDate(mo, d) || !c.Eat(' ') || !c.Clock(&h, &mi, &s)) return {};
  int64_t frac = 0;
  c.Fraction(&frac);
  return Wall(EpochSecondsUtc(y, mo, d, h, mi, s), frac);
}

// [Tue Apr  9 01:21:38 2024]  (at points at '[')
LogTime TryCtime(std::string_view line, size_t at) {
  Cursor c(line, at);
  if (!c.Eat('[') || !c.Weekday() || !c.Eat(' ')) return {};
  int mo, d, h, mi, s, y;
  if (!c.Month(&mo)) return {};
  c.SkipSpaces();
  if (c.DigitsUpTo(2, &d) == 0 || !c.Eat(' ') || !c.Clock(&h, &mi, &s) || !c.Eat(' ') ||
      !c.Digits(4, &y) || !c.Eat(']') || !ValidDate(mo, d))
    return {};
  return Wall(EpochSecondsUtc(y, mo, d, h, mi, s), 0);
}

// Apr  9 01:21:38 (syslog), only at the start of the line.
LogTime TrySyslog(std::string_view line, size_t at) {
  Cursor c(line, at);
  int mo, d, h, mi, s;
  if (!c.Month(&mo) || !c.Eat(' ')) return {};
  c.SkipSpaces();
  if (c.DigitsUpTo(2, &d) == 0 || !c.Eat(' ') || !c.Clock(&h, &mi, &s) || !ValidDate(mo, d))
    return {};
  int64_t frac = 0;
  c.Fraction(&frac);
  if (c.Peek() != ' ') return {};
  return NoYear(mo, d, h, mi, s, frac);
}

// E0321 02:07:08.408271 or E321 02:07:08.408271257 (at points at the severity letter).
LogTime TryGlog(std::string_view line, size_t at) {
  Cursor c(line, at);
  char sev = c.Peek();
  if (sev != 'I' && sev != 'W' && sev != 'E' && sev != 'F') return {};
  c.Eat(sev);
  int md = 0;
  int n = c.DigitsUpTo(4, &md);
  if (n < 3 || !c.Eat(' ')) return {};
  int mo = md / 100, d = md % 100, h, mi, s;
  if (!ValidDate(mo, d) || !c.Clock(&h, &mi, &s)) return {};
  int64_t frac = 0;
  c.Fraction(&frac);
  return NoYear(mo, d, h, mi, s, frac);
}

// [856341.770960] (at points at '[').
LogTime TryBoot(std::string_view line, size_t at) {
  Cursor c(line, at);
  if (!c.Eat('[')) return {};
  c.SkipSpaces();
  int64_t seconds = 0;
  int n = 0;
  while (c.Peek() >= '0' && c.Peek() <= '9' && n < 12) {
    seconds = seconds * 10 + (c.Peek() - '0');
    c.Eat(c.Peek());
    ++n;
  }
  int64_t frac = 0;
  if (n == 0 || !c.Fraction(&frac) || !c.Eat(']') || !FitsInNs(seconds)) return {};
  return {ClockKind::kBoot, seconds * kNs + frac};
}

bool IsWordChar(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

}  // namespace

int64_t EpochSecondsUtc(int year, int month, int day, int hour, int minute, int second) {
  // Days from civil (Howard Hinnant's algorithm).
  year -= month <= 2;
  const int64_t era = (year >= 0 ? year : year - 399) / 400;
  const int64_t yoe = year - era * 400;
  const int64_t doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  const int64_t days = era * 146097 + doe - 719468;
  return days * 86400 + hour * 3600 + minute * 60 + second;
}

LogTime ParseLineTime(std::string_view line) {
  const size_t end = std::min(line.size(), kTimeSearchBytes);
  for (size_t i = 0; i < end; ++i) {
    const char ch = line[i];
    if (i > 0 && IsWordChar(line[i - 1]) && ch != '[') continue;
    LogTime t;
    if (ch == '[') {
      if ((t = TryCtime(line, i)).kind != ClockKind::kNone) return t;
      if ((t = TryBoot(line, i)).kind != ClockKind::kNone) return t;
      continue;
    }
    if (ch >= '0' && ch <= '9') {
      if ((t = TryIso(line, i)).kind != ClockKind::kNone) return t;
      if ((t = TryUsDate(line, i)).kind != ClockKind::kNone) return t;
      continue;
    }
    if (ch == 'I' || ch == 'W' || ch == 'E' || ch == 'F') {
      if ((t = TryGlog(line, i)).kind != ClockKind::kNone) return t;
    }
    if (i == 0 && (t = TrySyslog(line, i)).kind != ClockKind::kNone) return t;
  }
  return {};
}

LogTime PlaceInYear(LogTime t, int year) {
  if (t.kind != ClockKind::kWallNoYear) return t;
  const int64_t base = EpochSecondsUtc(year, 1, 1, 0, 0, 0);
  int64_t ns = t.ns;
  // Feb 29 of the reference leap year in a common year: March 1.
  const int64_t feb29 = (EpochSecondsUtc(2000, 3, 1, 0, 0, 0) - kYear2000) * kNs;
  const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  if (!leap && ns >= feb29) ns -= 86400 * kNs;
  return {ClockKind::kWall, base * kNs + ns};
}

int YearOf(const LogTime& t) {
  std::time_t s = static_cast<std::time_t>(t.ns / kNs);
  std::tm tm{};
  gmtime_r(&s, &tm);
  return tm.tm_year + 1900;
}

}  // namespace titan::diagnose
