#include "src/metrics/text_parse.h"

#include <cmath>
#include <limits>

#include "src/base/text.h"

namespace titan {
namespace {

bool IsNameStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
}
bool IsNameChar(char c) { return IsNameStart(c) || (c >= '0' && c <= '9'); }

bool ParseValue(std::string_view text, double* out) {
  if (text == "+Inf" || text == "Inf") {
    *out = std::numeric_limits<double>::infinity();
  } else if (text == "-Inf") {
    *out = -std::numeric_limits<double>::infinity();
  } else if (text == "NaN") {
    *out = std::numeric_limits<double>::quiet_NaN();
  } else {
    return ParseDouble(text, out);
  }
  return true;
}

// Parses one sample line; false if malformed.
bool ParseLine(std::string_view line, PrometheusSample* sample) {
  size_t i = 0;
  if (line.empty() || !IsNameStart(line[0])) return false;
  while (i < line.size() && IsNameChar(line[i])) ++i;
  sample->name = line.substr(0, i);
  sample->labels = {};
  if (i < line.size() && line[i] == '{') {
    size_t start = ++i;
    bool quoted = false;
    for (; i < line.size(); ++i) {
      char c = line[i];
      if (quoted) {
        if (c == '\\') {
          ++i;  // skip the escaped character
        } else if (c == '"') {
          quoted = false;
        }
      } else if (c == '"') {
        quoted = true;
      } else if (c == '}') {
        break;
      }
    }
    if (i >= line.size()) return false;  // no closing brace
    sample->labels = line.substr(start, i - start);
    ++i;
  }
  std::string_view rest = line.substr(i);
  if (rest.empty() || (rest[0] != ' ' && rest[0] != '\t')) return false;
  std::string_view value = NextField(&rest);
  if (!ParseValue(value, &sample->value)) return false;
  std::string_view timestamp = NextField(&rest);
  if (!timestamp.empty()) {
    double ignored = 0;
    if (!ParseDouble(timestamp, &ignored) || !NextField(&rest).empty()) return false;
  }
  return true;
}

}  // namespace

TextParseStats ParsePrometheusText(std::string_view text,
                                   const std::function<void(const PrometheusSample&)>& on_sample) {
  TextParseStats stats;
  uint64_t line_number = 0;
  while (!text.empty()) {
    std::string_view line = NextLine(&text);
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    line = Trim(line);
    if (line.empty() || line[0] == '#') continue;
    PrometheusSample sample;
    if (!ParseLine(line, &sample)) {
      if (stats.malformed_lines++ == 0) stats.first_malformed_line = line_number;
      continue;
    }
    ++stats.samples;
    on_sample(sample);
  }
  return stats;
}

}  // namespace titan
