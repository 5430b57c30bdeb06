#include "src/plan/series_csv.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "src/base/csv.h"
#include "src/base/text.h"
#include "src/fleet/time_text.h"

namespace titan::plan {

namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string Join(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// The columns of `value` ("a+b") in `header`, or an error naming what is missing.
Result<std::vector<size_t>> ValueColumns(const std::vector<std::string>& header,
                                         const std::string& value, const std::string& source) {
  std::vector<size_t> columns;
  const std::vector<std::string> names = SplitSum(value);
  if (names.empty()) {
    return InvalidArgumentError(fmt::format(
        "{}: --value '{}' is not a column or a sum of columns (a+b)", source, Excerpt(value)));
  }
  for (const std::string& name : names) {
    auto it = std::find(header.begin(), header.end(), name);
    if (it == header.end()) {
      return InvalidArgumentError(fmt::format("{}: no column '{}'; the columns are: {}", source,
                                              Excerpt(name), Excerpt(Join(header), 400)));
    }
    columns.push_back(static_cast<size_t>(it - header.begin()));
  }
  return columns;
}

bool AllNumbers(const std::vector<std::string>& fields) {
  double v = 0;
  return std::all_of(fields.begin(), fields.end(),
                     [&](const std::string& f) { return ParseDouble(Trim(f), &v); });
}

enum class Layout { kGeneric, kAzureTrace, kLoadTimeline };

Layout LayoutOf(const std::vector<std::string>& header) {
  if (header.size() == 3 && header[0] == "TIMESTAMP" && header[1] == "ContextTokens" &&
      header[2] == "GeneratedTokens") {
    return Layout::kAzureTrace;
  }
  if (header.size() >= 3 && header[0] == "second" && header[1] == "planned" &&
      header[2] == "completed") {
    return Layout::kLoadTimeline;
  }
  return Layout::kGeneric;
}

}  // namespace

Result<RawSeries> ReadSeriesCsv(std::string_view text, const std::string& source,
                                const std::string& value) {
  std::string_view rest = text;
  std::vector<std::string> header, fields;
  int64_t line_number = 0;
  // The first non-empty line.
  while (!rest.empty() && header.empty()) {
    std::string_view line = NextLine(&rest);
    ++line_number;
    if (Trim(line).empty()) continue;
    if (!SplitCsvRecord(line, &header)) {
      return InvalidArgumentError(
          fmt::format("{}:{}: the first line is not a CSV record", source, line_number));
    }
    for (std::string& h : header) h = std::string(Trim(h));
  }
  if (header.empty()) return InvalidArgumentError(fmt::format("{}: the file is empty", source));
  RawSeries out;
  out.source = "csv";
  const Layout layout = LayoutOf(header);
  size_t time_column = 0;
  std::vector<size_t> value_columns;
  bool has_header = true;
  switch (layout) {
    case Layout::kAzureTrace: {
      out.source = "Azure LLM trace";
      out.kind = PointKind::kEvents;
      if (!value.empty()) {
        TITAN_ASSIGN_OR_RETURN(value_columns, ValueColumns(header, value, source));
      }
      out.name = value.empty() ? "requests" : value;
      out.unit = value.empty() ? "requests/s" : "tokens/s";
      break;
    }
    case Layout::kLoadTimeline: {
      out.source = "titan load timeline";
      out.kind = PointKind::kEvents;
      out.wall_clock = false;
      out.name = value.empty() ? "planned" : value;
      TITAN_ASSIGN_OR_RETURN(value_columns, ValueColumns(header, out.name, source));
      out.unit = out.name.find("tokens") != std::string::npos ? "tokens/s" : "requests/s";
      break;
    }
    case Layout::kGeneric: {
      if (AllNumbers(header)) {  // no header: time,value
        has_header = false;
        if (header.size() < 2) {
          return InvalidArgumentError(fmt::format(
              "{}:1: a CSV series needs a time and a value column; the line has {} field", source,
              header.size()));
        }
        std::vector<std::string> names;
        for (size_t i = 0; i < header.size(); ++i) names.push_back(fmt::format("{}", i + 1));
        header = names;
      }
      static constexpr const char* kTimeNames[] = {"time",     "timestamp", "date",
                                                   "datetime", "ds",        "t"};
      for (size_t i = 0; i < header.size(); ++i) {
        const std::string lower = Lower(header[i]);
        if (std::find(std::begin(kTimeNames), std::end(kTimeNames), lower) !=
            std::end(kTimeNames)) {
          time_column = i;
          break;
        }
      }
      std::string expression = value;
      if (expression.empty()) {
        if (header.size() != 2) {
          return InvalidArgumentError(fmt::format(
              "{}: {} columns; name the value with --value COLUMN (or A+B to add columns): {}",
              source, header.size(), Excerpt(Join(header), 400)));
        }
        expression = header[1 - time_column];
      }
      TITAN_ASSIGN_OR_RETURN(value_columns, ValueColumns(header, expression, source));
      out.name = expression;
      break;
    }
  }
  if (!has_header) rest = text;  // the first line is data
  if (!has_header) line_number = 0;
  const size_t needed =
      std::max(time_column, value_columns.empty()
                                ? size_t{0}
                                : *std::max_element(value_columns.begin(), value_columns.end())) +
      1;
  while (!rest.empty()) {
    std::string_view line = NextLine(&rest);
    ++line_number;
    if (Trim(line).empty()) continue;
    auto skip = [&](std::string_view why) {
      out.skips.Skip(fmt::format("{}:{}: {}", source, line_number, why));
    };
    if (!SplitCsvRecord(line, &fields)) {
      skip("not a CSV record (an unclosed quote?)");
      continue;
    }
    if (fields.size() < needed) {
      skip(fmt::format("{} fields, the header has {}", fields.size(), header.size()));
      continue;
    }
    double t = 0;
    if (!fleet::ParseTimeSeconds(fields[time_column], &t)) {
      skip(fmt::format("'{}' is not a time (UTC calendar time or epoch seconds)",
                       Excerpt(fields[time_column])));
      continue;
    }
    double v = value_columns.empty() ? 1 : 0;
    bool ok = true;
    for (size_t c : value_columns) {
      double x = 0;
      if (!ParseDouble(Trim(fields[c]), &x) || !std::isfinite(x)) {
        skip(fmt::format("{} '{}' is not a finite number", header[c], Excerpt(fields[c])));
        ok = false;
        break;
      }
      v += x;
    }
    if (ok) out.points.emplace_back(t, v);
  }
  return out;
}

}  // namespace titan::plan
