#include "src/plan/read_series.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <fmt/format.h>

#include "src/base/text.h"
#include "src/plan/series_csv.h"
#include "src/plan/series_json.h"
#include "src/plan/series_jsonl.h"

namespace titan::plan {

Result<RawSeries> ReadSeriesText(std::string_view text, const std::string& source,
                                 const std::string& value) {
  const std::string_view start = Trim(text.substr(0, 4096));
  if (start.empty()) return InvalidArgumentError(fmt::format("{}: the file is empty", source));
  // The one list of readers, by what the content starts with.
  if (start[0] == '{' || start[0] == '[') {
    if (LooksLikeJsonDocument(text)) return ReadSeriesJson(text, source, value);
    return ReadSeriesJsonl(text, source, value);
  }
  if (start.find(',') != std::string_view::npos) return ReadSeriesCsv(text, source, value);
  return InvalidArgumentError(fmt::format(
      "{}: not a series titan plan reads (tried CSV with a header, JSON lines of time and "
      "value, a Prometheus range query's JSON, titan load --json); it starts with '{}'",
      source, Excerpt(start, 60)));
}

Result<RawSeries> ReadSeriesFile(const std::string& path, const std::string& value) {
  const bool standard_input = path == "-";
  FILE* file = standard_input ? stdin : std::fopen(path.c_str(), "rb");
  if (file == nullptr) return ErrnoError(errno, fmt::format("opening {}", path));
  std::string text;
  char buffer[1 << 16];
  size_t n;
  bool too_large = false;
  while (!too_large && (n = std::fread(buffer, 1, sizeof buffer, file)) > 0) {
    text.append(buffer, n);
    too_large = text.size() > kMaxSeriesFileBytes;
  }
  const int read_errno = std::ferror(file) ? errno : 0;
  if (!standard_input) std::fclose(file);
  if (too_large) {
    return InvalidArgumentError(
        fmt::format("{}: over {} (aggregate a series that large before planning from it)", path,
                    FormatBytes(kMaxSeriesFileBytes)));
  }
  if (read_errno != 0) return ErrnoError(read_errno, fmt::format("reading {}", path));
  return ReadSeriesText(text, standard_input ? "stdin" : path, value);
}

}  // namespace titan::plan
