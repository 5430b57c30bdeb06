#include "src/fleet/read_history.h"

#include <sys/stat.h>

#include <filesystem>

#include <fmt/format.h>

#include "src/base/env.h"
#include "src/fleet/diagnose_source.h"
#include "src/fleet/fleet_jsonl.h"
#include "src/fleet/recorder_source.h"
#include "src/fleet/run_log_source.h"
#include "src/fleet/titan_csv.h"

namespace titan::fleet {

namespace {

struct Source {
  const char* name;
  bool (*looks_like)(std::string_view text);
  void (*read)(std::string_view text, std::string_view source, std::string_view node,
               HistoryBuilder* builder);
};

// A fleet JSONL record has "event" and "time" keys; a run log line has "time_ns" (checked
// first, since its lines have a "time"-like key too).
bool LooksLikeFleetJsonl(std::string_view text) {
  size_t brace = text.find_first_not_of(" \t\r\n");
  while (brace != std::string_view::npos && text[brace] == '#') {
    size_t nl = text.find('\n', brace);
    brace = nl == std::string_view::npos ? nl : text.find_first_not_of(" \t\r\n", nl);
  }
  if (brace == std::string_view::npos || text[brace] != '{') return false;
  std::string_view line = text.substr(brace, text.find('\n', brace) - brace);
  return line.find("\"event\"") != std::string_view::npos &&
         line.find("\"time\"") != std::string_view::npos;
}

// The one list of formats, tried in order.
constexpr Source kSources[] = {
    {"titan run event log", LooksLikeRunLog,
     [](std::string_view t, std::string_view s, std::string_view, HistoryBuilder* b) {
       ReadRunLog(t, s, b);
     }},
    {"fleet history JSONL", LooksLikeFleetJsonl,
     [](std::string_view t, std::string_view s, std::string_view, HistoryBuilder* b) {
       ReadFleetJsonl(t, s, b);
     }},
    {"Titan gc_full.csv", LooksLikeTitanCsv,
     [](std::string_view t, std::string_view s, std::string_view, HistoryBuilder* b) {
       ReadTitanCsv(t, s, b);
     }},
    {"titan diagnose verdict", LooksLikeDiagnoseVerdict,
     [](std::string_view t, std::string_view s, std::string_view, HistoryBuilder* b) {
       ReadDiagnoseVerdict(t, s, b);
     }},
    {"agent recorder CSV dump", LooksLikeRecorderCsv, ReadRecorderCsv},
};

}  // namespace

Status ReadHistoryText(std::string_view text, const std::string& source, const std::string& node,
                       HistoryBuilder* builder) {
  for (const Source& s : kSources) {
    if (s.looks_like(text)) {
      s.read(text, source, node, builder);
      return OkStatus();
    }
  }
  std::string names;
  for (const Source& s : kSources) names += fmt::format("{}{}", names.empty() ? "" : ", ", s.name);
  return InvalidArgumentError(fmt::format(
      "{}: not a fleet history format titan reads ({}); see docs/predict.md", source, names));
}

Result<FleetHistory> ReadHistory(const std::vector<std::string>& specs) {
  HistoryBuilder builder;
  for (const std::string& spec : specs) {
    std::string path = spec, node;
    if (size_t eq = spec.find('='); eq != std::string::npos && eq > 0 && spec.find('/') > eq) {
      node = spec.substr(0, eq);
      path = spec.substr(eq + 1);
    }
    std::vector<std::string> files;
    struct stat st;
    if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
      TITAN_ASSIGN_OR_RETURN(std::vector<std::string> names, Env::ListDir(path));
      for (const std::string& n : names) {
        std::string f = path + "/" + n;
        if (::stat(f.c_str(), &st) == 0 && S_ISREG(st.st_mode)) files.push_back(f);
      }
    } else {
      files.push_back(path);
    }
    for (const std::string& f : files) {
      TITAN_ASSIGN_OR_RETURN(std::string text, Env::ReadFile(f, kMaxHistoryFileBytes));
      std::string stem = std::filesystem::path(f).stem().string();
      TITAN_RETURN_IF_ERROR(ReadHistoryText(text, f, node.empty() ? stem : node, &builder));
    }
  }
  return std::move(builder).Build();
}

}  // namespace titan::fleet
