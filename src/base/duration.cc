#include "src/base/duration.h"

#include <cmath>

#include <fmt/format.h>

#include "src/base/text.h"

namespace titan {
namespace {

bool ParseNonNegative(std::string_view text, double* out_ns) {
  struct Unit {
    std::string_view suffix;
    double ns;
  };
  // "ms"/"us"/"ns" before "s" and "m", so that "10ms" is not read as 10m + "s".
  static constexpr Unit kUnits[] = {{"ms", 1e6}, {"us", 1e3},   {"ns", 1},     {"s", 1e9},
                                    {"m", 60e9}, {"h", 3600e9}, {"d", 86400e9}};
  double scale = 1e9;
  for (const Unit& unit : kUnits) {
    if (text.size() > unit.suffix.size() && text.ends_with(unit.suffix)) {
      text.remove_suffix(unit.suffix.size());
      scale = unit.ns;
      break;
    }
  }
  double value = 0;
  if (!ParseDouble(text, &value) || !std::isfinite(value) || value < 0 || value * scale > 9.2e18) {
    return false;
  }
  *out_ns = value * scale;
  return true;
}

}  // namespace

bool ParseDurationNs(std::string_view text, int64_t* out_ns) {
  double ns = 0;
  if (!ParseNonNegative(text, &ns) || static_cast<int64_t>(ns) <= 0) return false;
  *out_ns = static_cast<int64_t>(ns);
  return true;
}

bool ParseDurationOrZeroNs(std::string_view text, int64_t* out_ns) {
  double ns = 0;
  if (!ParseNonNegative(text, &ns)) return false;
  *out_ns = static_cast<int64_t>(ns);
  return true;
}

std::string FormatDuration(int64_t ns) {
  struct Unit {
    const char* suffix;
    int64_t ns;
  };
  static constexpr Unit kUnits[] = {
      {"h", 3'600'000'000'000}, {"m", 60'000'000'000}, {"s", 1'000'000'000},
      {"ms", 1'000'000},        {"us", 1'000},         {"ns", 1}};
  for (const Unit& unit : kUnits) {
    if (ns != 0 && ns % unit.ns == 0) return fmt::format("{}{}", ns / unit.ns, unit.suffix);
  }
  for (const Unit& unit : kUnits) {
    if (std::abs(ns) >= unit.ns) {
      return fmt::format("{:g}{}", static_cast<double>(ns) / static_cast<double>(unit.ns),
                         unit.suffix);
    }
  }
  return "0s";
}

std::string FormatDurationShort(int64_t ns) {
  const double abs_ns = std::abs(static_cast<double>(ns));
  if (ns == 0) return "0";
  if (abs_ns >= 86400e9) return fmt::format("{:.1f}d", ns / 86400e9);
  if (abs_ns >= 3600e9) return fmt::format("{:.1f}h", ns / 3600e9);
  if (abs_ns >= 10e9) return fmt::format("{:.1f}s", ns / 1e9);
  if (abs_ns >= 1e6) return fmt::format("{:.1f}ms", ns / 1e6);
  return fmt::format("{:.0f}us", ns / 1e3);
}

}  // namespace titan
