#include "src/load/trace_file.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include <fmt/format.h>
#include <simdjson.h>

#include "src/base/env.h"
#include "src/base/text.h"
#include "src/load/input_text.h"

namespace titan::load {
namespace {

constexpr size_t kMaxTraceLineDepth = 8;

// A row before sorting: its absolute time (ns, any origin) and where it came from.
struct Row {
  int64_t time_ns;
  TraceRequest request;
};

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; };
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

class TraceParser {
 public:
  explicit TraceParser(std::string_view name) : name_(name) {}

  Status Error(Pos pos, std::string_view what) const {
    return InvalidArgumentError(fmt::format("{}:{}:{}: {}", name_, pos.line, pos.column, what));
  }
  Status RangeError(Pos pos, std::string_view what) const {
    return OutOfRangeError(fmt::format("{}:{}:{}: {}", name_, pos.line, pos.column, what));
  }

  Result<std::vector<TraceRequest>> Parse(std::string_view text) {
    if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);
    bool detected = false;
    bool json = false;
    size_t line_number = 0;
    while (!text.empty()) {
      std::string_view line = NextLine(&text);
      ++line_number;
      if (line.size() > kMaxTraceLineBytes) {
        return RangeError({line_number, 1}, fmt::format("line is longer than {} bytes; this is not "
                                                        "a trace file",
                                                        kMaxTraceLineBytes));
      }
      if (line.ends_with('\r')) line.remove_suffix(1);
      if (Trim(line).empty()) continue;
      if (!detected) {
        detected = true;
        json = Trim(line).front() == '{';
        if (!json) {
          TITAN_RETURN_IF_ERROR(ParseCsvHeader(line, line_number));
          continue;
        }
      }
      if (rows_.size() == kMaxTraceRows) {
        return RangeError({line_number, 1},
                          fmt::format("more than {} requests; split the trace", kMaxTraceRows));
      }
      Row row;
      TITAN_ASSIGN_OR_RETURN(Pos time_pos, json ? ParseJsonLine(line, line_number, &row)
                                                : ParseCsvRow(line, line_number, &row));
      TITAN_RETURN_IF_ERROR(CheckTime(row.time_ns, time_pos));
      rows_.push_back(std::move(row));
    }
    if (rows_.empty()) {
      return InvalidArgumentError(fmt::format(
          "{}: no requests in the trace{}", name_,
          detected ? ""
                   : " (the file is empty; expected an Azure LLM inference trace CSV or JSON "
                     "lines)"));
    }
    std::stable_sort(rows_.begin(), rows_.end(),
                     [](const Row& a, const Row& b) { return a.time_ns < b.time_ns; });
    const int64_t origin = rows_.front().time_ns;
    std::vector<TraceRequest> out;
    out.reserve(rows_.size());
    for (Row& row : rows_) {
      row.request.offset_ns = row.time_ns - origin;
      out.push_back(std::move(row.request));
    }
    return out;
  }

 private:
  Status CheckTime(int64_t time_ns, Pos pos) {
    if (rows_.empty()) {
      first_ns_ = latest_ns_ = time_ns;
      return OkStatus();
    }
    if (time_ns > first_ns_ + kMaxTraceSpanNs || time_ns < first_ns_ - kMaxTraceSpanNs) {
      return RangeError(pos, "this time is more than 366 days away from the first request's");
    }
    if (time_ns < latest_ns_ - kMaxBackwardNs) {
      return Error(pos, fmt::format("time goes back by {:.3f} s from an earlier request; a trace "
                                    "must be sorted by time (up to 60 s out of order is accepted)",
                                    static_cast<double>(latest_ns_ - time_ns) / 1e9));
    }
    latest_ns_ = std::max(latest_ns_, time_ns);
    return OkStatus();
  }

  // ---- Azure CSV ----

  Status ParseCsvHeader(std::string_view line, size_t line_number) {
    size_t index = 0;
    for (size_t begin = 0; begin <= line.size(); ++index) {
      size_t end = std::min(line.find(',', begin), line.size());
      std::string_view name = Trim(line.substr(begin, end - begin));
      if (name.size() >= 2 && name.front() == '"' && name.back() == '"') {
        name = name.substr(1, name.size() - 2);
      }
      if (EqualsIgnoreCase(name, "TIMESTAMP")) time_column_ = index;
      if (EqualsIgnoreCase(name, "ContextTokens")) input_column_ = index;
      if (EqualsIgnoreCase(name, "GeneratedTokens")) output_column_ = index;
      begin = end + 1;
    }
    columns_ = index;
    if (!time_column_ || !input_column_ || !output_column_) {
      return Error({line_number, 1},
                   fmt::format("unrecognised trace format: expected an Azure LLM inference trace "
                               "CSV with the header TIMESTAMP,ContextTokens,GeneratedTokens, or "
                               "JSON lines like {{\"timestamp\": 27482, \"input_length\": 6955, "
                               "\"output_length\": 52}} or {{\"time_s\": 0.5, \"input_tokens\": "
                               "100, \"output_tokens\": 20}}; got '{}'",
                               Shown(line)));
    }
    return OkStatus();
  }

  Result<Pos> ParseCsvRow(std::string_view line, size_t line_number, Row* row) {
    std::string_view fields[3];
    size_t columns[3] = {0, 0, 0};
    size_t index = 0;
    for (size_t begin = 0; begin <= line.size(); ++index) {
      const size_t end = std::min(line.find(',', begin), line.size());
      std::string_view field = line.substr(begin, end - begin);
      size_t column = begin + 1;
      while (!field.empty() && (field.front() == ' ' || field.front() == '\t')) {
        field.remove_prefix(1);
        ++column;
      }
      field = Trim(field);
      if (field.size() >= 2 && field.front() == '"' && field.back() == '"') {
        field = field.substr(1, field.size() - 2);
        ++column;
      }
      for (int k = 0; k < 3; ++k) {
        const size_t want = k == 0 ? *time_column_ : k == 1 ? *input_column_ : *output_column_;
        if (index == want) {
          fields[k] = field;
          columns[k] = column;
        }
      }
      begin = end + 1;
    }
    if (index != columns_) {
      return Error({line_number, 1}, fmt::format("expected {} comma-separated columns as in the "
                                                 "header, got {}",
                                                 columns_, index));
    }
    const Pos time_pos{line_number, columns[0]};
    TITAN_ASSIGN_OR_RETURN(row->time_ns, ParseTimestamp(fields[0], time_pos));
    TITAN_ASSIGN_OR_RETURN(row->request.input_tokens,
                           ParseTokens(fields[1], {line_number, columns[1]}, "ContextTokens"));
    TITAN_ASSIGN_OR_RETURN(row->request.output_tokens,
                           ParseTokens(fields[2], {line_number, columns[2]}, "GeneratedTokens"));
    return time_pos;
  }

  Result<int64_t> ParseTokens(std::string_view field, Pos pos, std::string_view what) const {
    int64_t value = 0;
    if (!ParseInt64(field, &value)) {
      return Error(pos,
                   fmt::format("expected an integer number of {}, got '{}'", what, Shown(field)));
    }
    if (value < 0 || value > kMaxTraceTokens) {
      return Error(pos, fmt::format("{} must be in [0, {}], got {}", what, kMaxTraceTokens, value));
    }
    return value;
  }

  // "YYYY-MM-DD HH:MM:SS[.fraction]" -> ns since 1970-01-01 00:00:00 (no time zone).
  Result<int64_t> ParseTimestamp(std::string_view s, Pos pos) const {
    auto fail = [&] {
      return Error(pos, fmt::format("expected a TIMESTAMP like 2023-11-16 18:15:46.6805900, got "
                                    "'{}'",
                                    Shown(s)));
    };
    auto digits = [&](size_t at, size_t n, int64_t* out) {
      if (at + n > s.size()) return false;
      *out = 0;
      for (size_t i = at; i < at + n; ++i) {
        if (s[i] < '0' || s[i] > '9') return false;
        *out = *out * 10 + (s[i] - '0');
      }
      return true;
    };
    int64_t year, month, day, hour, minute, second;
    if (s.size() < 19 || !digits(0, 4, &year) || s[4] != '-' || !digits(5, 2, &month) ||
        s[7] != '-' || !digits(8, 2, &day) || (s[10] != ' ' && s[10] != 'T') ||
        !digits(11, 2, &hour) || s[13] != ':' || !digits(14, 2, &minute) || s[16] != ':' ||
        !digits(17, 2, &second)) {
      return fail();
    }
    int64_t fraction_ns = 0;
    if (s.size() > 19) {
      const size_t n = s.size() - 20;
      if (s[19] != '.' || n > 9 || (n > 0 && !digits(20, n, &fraction_ns))) return fail();
      for (size_t i = n; i < 9; ++i) fraction_ns *= 10;
    }
    static constexpr int kDays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    if (year < 1970 || year > 2200 || month < 1 || month > 12 || day < 1 ||
        day > kDays[month - 1] || (month == 2 && day == 29 && !leap) || hour > 23 || minute > 59 ||
        second > 60) {
      return Error(pos, fmt::format("TIMESTAMP '{}' is not a valid date and time between 1970 and "
                                    "2200",
                                    Shown(s)));
    }
    // Days from civil (H. Hinnant), for years >= 1970.
    const int64_t y = year - (month <= 2 ? 1 : 0);
    const int64_t era = y / 400;
    const int64_t yoe = y - era * 400;
    const int64_t doy = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1;
    const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    const int64_t days = era * 146097 + doe - 719468;
    return ((days * 24 + hour) * 60 + minute) * 60 * int64_t{1'000'000'000} +
           second * int64_t{1'000'000'000} + fraction_ns;
  }

  // ---- JSON lines ----

  // The column of the value of "key" in `line` (1-based), for errors; 1 when not found.
  static size_t ValueColumn(std::string_view line, std::string_view key) {
    const size_t at = FindKey(line, key);
    if (at == std::string_view::npos) return 1;
    size_t i = at + key.size() + 2;
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == ':')) ++i;
    return i + 1;
  }

  // One of `keys` (aliases) in `object`; errors if both are present. nullopt if neither is.
  Result<std::optional<std::pair<std::string_view, simdjson::dom::element>>> Lookup(
      simdjson::dom::object object, std::string_view line, Pos at, std::string_view a,
      std::string_view b) const {
    std::optional<std::pair<std::string_view, simdjson::dom::element>> found;
    for (std::string_view key : {a, b}) {
      simdjson::dom::element value;
      if (object.at_key(key).get(value) != simdjson::SUCCESS) continue;
      if (found) {
        return Error({at.line, ValueColumn(line, key)},
                     fmt::format("both \"{}\" and \"{}\" given; use one", a, b));
      }
      found.emplace(key, value);
    }
    return found;
  }

  Result<int64_t> JsonTokens(simdjson::dom::object object, std::string_view line, Pos at,
                             std::string_view a, std::string_view b) const {
    TITAN_ASSIGN_OR_RETURN(auto found, Lookup(object, line, at, a, b));
    if (!found) {
      return Error(at, fmt::format("missing \"{}\" (or \"{}\"): the number of tokens", a, b));
    }
    const Pos pos{at.line, ValueColumn(line, found->first)};
    int64_t value = 0;
    if (found->second.get_int64().get(value) != simdjson::SUCCESS) {
      return Error(pos, fmt::format("expected an integer number of tokens for \"{}\", got {}",
                                    found->first, Shown(simdjson::minify(found->second))));
    }
    if (value < 0 || value > kMaxTraceTokens) {
      return Error(pos, fmt::format("\"{}\" must be in [0, {}], got {}", found->first,
                                    kMaxTraceTokens, value));
    }
    return value;
  }

  Result<Pos> ParseJsonLine(std::string_view line, size_t line_number, Row* row) {
    if (!parser_allocated_) {
      if (parser_.allocate(4096, kMaxTraceLineDepth) != simdjson::SUCCESS) {
        return InternalError("allocating a JSON parser");
      }
      parser_allocated_ = true;
    }
    const size_t first = line.find_first_not_of(" \t");
    const Pos start{line_number, first + 1};
    simdjson::dom::element root;
    if (auto error = parser_.parse(line.data(), line.size()).get(root)) {
      return Error(start, fmt::format("expected one JSON object per line: {}",
                                      simdjson::error_message(error)));
    }
    simdjson::dom::object object;
    if (root.get_object().get(object) != simdjson::SUCCESS) {
      return Error(start, "expected one JSON object per line");
    }
    // Time: "timestamp" (ms, mooncake) or "time_s" (seconds, titan).
    TITAN_ASSIGN_OR_RETURN(auto time, Lookup(object, line, start, "timestamp", "time_s"));
    if (!time) {
      return Error(start,
                   "missing \"timestamp\" (ms) or \"time_s\" (seconds): the request's "
                   "send time");
    }
    const bool ms = time->first == "timestamp";
    const Pos time_pos{line_number, ValueColumn(line, time->first)};
    const double max_value = ms ? 9e12 : 9e9;  // ns must fit in int64
    int64_t integer = 0;
    double number = 0;
    if (time->second.get_int64().get(integer) == simdjson::SUCCESS) {
      if (integer < 0 || static_cast<double>(integer) > max_value) {
        return RangeError(time_pos, fmt::format("\"{}\" must be in [0, {:g}], got {}", time->first,
                                                max_value, integer));
      }
      row->time_ns = integer * (ms ? 1'000'000 : 1'000'000'000);
    } else if (time->second.get_double().get(number) == simdjson::SUCCESS) {
      if (!(number >= 0) || number > max_value) {
        return RangeError(time_pos, fmt::format("\"{}\" must be in [0, {:g}], got {}", time->first,
                                                max_value, number));
      }
      row->time_ns = std::llround(number * (ms ? 1e6 : 1e9));
    } else {
      return Error(time_pos, fmt::format("expected a number for \"{}\" ({}), got {}", time->first,
                                         ms ? "milliseconds" : "seconds",
                                         Shown(simdjson::minify(time->second))));
    }
    TITAN_ASSIGN_OR_RETURN(row->request.input_tokens,
                           JsonTokens(object, line, start, "input_length", "input_tokens"));
    TITAN_ASSIGN_OR_RETURN(row->request.output_tokens,
                           JsonTokens(object, line, start, "output_length", "output_tokens"));
    simdjson::dom::element ids;
    if (object.at_key("hash_ids").get(ids) == simdjson::SUCCESS) {
      const Pos pos{line_number, ValueColumn(line, "hash_ids")};
      simdjson::dom::array array;
      if (ids.get_array().get(array) != simdjson::SUCCESS) {
        return Error(pos, "expected \"hash_ids\" to be an array of non-negative integers");
      }
      row->request.hash_ids.reserve(array.size());
      for (simdjson::dom::element id : array) {
        uint64_t value = 0;
        if (id.get_uint64().get(value) != simdjson::SUCCESS) {
          return Error(pos, fmt::format("expected \"hash_ids\" to hold non-negative integers, got "
                                        "{}",
                                        Shown(simdjson::minify(id))));
        }
        row->request.hash_ids.push_back(value);
      }
    }
    return time_pos;
  }

  const std::string_view name_;
  std::vector<Row> rows_;
  int64_t first_ns_ = 0;
  int64_t latest_ns_ = 0;
  // CSV columns by header.
  std::optional<size_t> time_column_, input_column_, output_column_;
  size_t columns_ = 0;
  simdjson::dom::parser parser_;
  bool parser_allocated_ = false;
};

}  // namespace

Result<std::vector<TraceRequest>> ParseTrace(std::string_view text, std::string_view name) {
  return TraceParser(name).Parse(text);
}

Result<std::vector<TraceRequest>> ReadTraceFile(const std::string& path) {
  TITAN_ASSIGN_OR_RETURN(std::string text, Env::ReadFile(path, kMaxTraceFileBytes));
  return ParseTrace(text, path);
}

}  // namespace titan::load
