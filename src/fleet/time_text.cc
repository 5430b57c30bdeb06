#include "src/fleet/time_text.h"

#include <cmath>
#include <cstdint>

#include <fmt/format.h>

#include "src/base/text.h"

namespace titan::fleet {

namespace {

// Howard Hinnant's days_from_civil / civil_from_days.
int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

void CivilFromDays(int64_t z, int* y, int* m, int* d) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const unsigned doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t yy = static_cast<int64_t>(yoe) + era * 400;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  *d = static_cast<int>(doy - (153 * mp + 2) / 5 + 1);
  *m = static_cast<int>(mp < 10 ? mp + 3 : mp - 9);
  *y = static_cast<int>(yy + (*m <= 2));
}

// Reads exactly `n` digits at *pos.
bool Digits(std::string_view s, size_t* pos, size_t n, int* out) {
  if (*pos + n > s.size()) return false;
  int v = 0;
  for (size_t i = 0; i < n; ++i) {
    char c = s[*pos + i];
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  *pos += n;
  *out = v;
  return true;
}

int DaysInMonth(int y, int m) {
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  return m == 2 && leap ? 29 : kDays[m - 1];
}

}  // namespace

double CivilToSeconds(int year, int month, int day) {
  return static_cast<double>(
             DaysFromCivil(year, static_cast<unsigned>(month), static_cast<unsigned>(day))) *
         86400.0;
}

void SecondsToCivil(double seconds, int* year, int* month, int* day) {
  CivilFromDays(static_cast<int64_t>(std::floor(seconds / 86400.0)), year, month, day);
}

bool ParseTimeSeconds(std::string_view text, double* seconds) {
  text = Trim(text);
  if (text.size() < 10 || text[4] != '-') {
    double v = 0;
    if (!ParseDouble(text, &v) || !std::isfinite(v) || std::fabs(v) > 1e12) return false;
    *seconds = v;
    return true;
  }
  size_t p = 0;
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0;
  if (!Digits(text, &p, 4, &y) || text[p++] != '-' || !Digits(text, &p, 2, &mo) ||
      p >= text.size() || text[p++] != '-' || !Digits(text, &p, 2, &d)) {
    return false;
  }
  if (y < 1900 || mo < 1 || mo > 12 || d < 1 || d > DaysInMonth(y, mo)) return false;
  double frac = 0;
  int offset_s = 0;
  if (p < text.size()) {
    if (text[p] != ' ' && text[p] != 'T') return false;
    ++p;
    if (!Digits(text, &p, 2, &h) || p >= text.size() || text[p++] != ':' ||
        !Digits(text, &p, 2, &mi)) {
      return false;
    }
    if (p < text.size() && text[p] == ':') {
      ++p;
      if (!Digits(text, &p, 2, &s)) return false;
      if (p < text.size() && text[p] == '.') {
        size_t start = p;
        ++p;
        while (p < text.size() && text[p] >= '0' && text[p] <= '9') ++p;
        if (p == start + 1 || !ParseDouble(text.substr(start, p - start), &frac)) return false;
      }
    }
    if (h > 23 || mi > 59 || s > 60) return false;
    if (p < text.size() && text[p] == 'Z') {
      ++p;
    } else if (p < text.size() && (text[p] == '+' || text[p] == '-')) {
      int sign = text[p++] == '-' ? -1 : 1, oh = 0, om = 0;
      if (!Digits(text, &p, 2, &oh)) return false;
      if (p < text.size() && text[p] == ':') ++p;
      if (!Digits(text, &p, 2, &om) || oh > 23 || om > 59) return false;
      offset_s = sign * (oh * 3600 + om * 60);
    }
    if (p != text.size()) return false;
  }
  *seconds = CivilToSeconds(y, mo, d) + h * 3600.0 + mi * 60.0 + s + frac - offset_s;
  return true;
}

std::string FormatTime(double seconds) {
  int y = 0, m = 0, d = 0;
  SecondsToCivil(seconds, &y, &m, &d);
  int64_t in_day = static_cast<int64_t>(std::floor(seconds - CivilToSeconds(y, m, d)));
  return fmt::format("{:04d}-{:02d}-{:02d}T{:02d}:{:02d}:{:02d}Z", y, m, d, in_day / 3600,
                     in_day / 60 % 60, in_day % 60);
}

std::string FormatDate(double seconds) {
  int y = 0, m = 0, d = 0;
  SecondsToCivil(seconds, &y, &m, &d);
  return fmt::format("{:04d}-{:02d}-{:02d}", y, m, d);
}

}  // namespace titan::fleet
