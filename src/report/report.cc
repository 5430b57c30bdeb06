#include "src/report/report.h"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <set>
#include <utility>

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "src/base/atomic_file.h"
#include "src/base/command_line.h"
#include "src/report/page.h"
#include "src/report/sections.h"

namespace titan::report {

namespace {

std::string NowIso() {
  const auto now = std::chrono::system_clock::now();
  return fmt::format("{:%Y-%m-%d %H:%M:%S} UTC", std::chrono::floor<std::chrono::seconds>(now));
}

bool IsDirectory(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// Device and inode: one file however it is named (./x, x, a link, a directory holding it).
std::pair<dev_t, ino_t> FileIdentity(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return {0, 0};
  return {st.st_dev, st.st_ino};
}

int DirectoryOrder(InputKind kind) {
  switch (kind) {
    case InputKind::kRunEvents:
    case InputKind::kRunLedger:
      return 0;
    case InputKind::kLoadRun:
    case InputKind::kLoadSweep:
    case InputKind::kGatewayEvents:
      return 1;
    case InputKind::kTraceAnalysis:
      return 2;
    case InputKind::kSim:
      return 3;
    case InputKind::kAgentDump:
      return 4;
  }
  return 5;
}

}  // namespace

std::string Written::Summary() const {
  return fmt::format("wrote {}: {} section(s), {} plot(s), {} KiB", path, sections, plots,
                     (bytes + 1023) / 1024);
}

Result<Written> WriteReport(const std::vector<Input>& inputs,
                            const std::vector<std::string>& skipped, const std::string& out,
                            std::string title) {
  TITAN_ASSIGN_OR_RETURN(Report report, BuildReport(inputs, skipped, std::move(title)));
  const std::string html = RenderHtml(report, NowIso());
  TITAN_RETURN_IF_ERROR(WriteFileAtomically(out, html));
  Written w{out, report.sections.size(), 0, html.size()};
  for (const Section& s : report.sections) w.plots += s.plots();
  return w;
}

Result<Written> WriteReportFromPaths(const std::vector<std::string>& paths, const std::string& out,
                                     std::string title) {
  std::vector<Input> inputs;
  std::vector<std::string> skipped;
  // A file named twice (x ./x, or x and its directory) is one section, not two.
  std::set<std::pair<dev_t, ino_t>> seen;
  auto first_time = [&seen](const std::string& path) {
    const std::pair<dev_t, ino_t> id = FileIdentity(path);
    return id == std::pair<dev_t, ino_t>{0, 0} || seen.insert(id).second;
  };
  for (const std::string& path : paths) {
    if (IsDirectory(path)) {
      const size_t before = skipped.size();
      TITAN_ASSIGN_OR_RETURN(std::vector<Input> found, ReadDirectory(path, &skipped));
      if (found.empty()) {
        return NotFoundError(fmt::format(
            "{}: no titan result in this directory ({} other JSON file(s)); expected what "
            "titan load/trace analyze/sim --json, titan run or titan agent write",
            path, skipped.size() - before));
      }
      // A directory reads as a story: what ran, then what was measured, then the signals.
      std::stable_sort(found.begin(), found.end(), [](const Input& a, const Input& b) {
        return DirectoryOrder(a.kind) < DirectoryOrder(b.kind);
      });
      for (Input& in : found) {
        if (first_time(in.path)) inputs.push_back(std::move(in));
      }
    } else {
      if (!first_time(path)) continue;
      TITAN_ASSIGN_OR_RETURN(Input in, ReadInput(path));
      inputs.push_back(std::move(in));
    }
  }
  return WriteReport(inputs, skipped, out, std::move(title));
}

Result<Written> WriteReportOf(InputKind kind, nlohmann::json doc, std::string label,
                              const std::string& out) {
  std::vector<Input> inputs;
  inputs.push_back(Input{std::move(label), kind, std::move(doc)});
  return WriteReport(inputs, {}, out, "titan report");
}

int ReportCommand(int argc, char** argv) {
  CLI::App app{
      "titan report: one self-contained HTML page with plots of titan results. It opens in any\n"
      "browser without network access (uPlot and the data are inside), prints well, and puts\n"
      "the numbers of every plot beside it as a table.\n\n"
      "Inputs are recognised by their content:\n"
      "  titan load --json / titan load sweep --json    latency distributions, timeline, knee\n"
      "  titan trace analyze --json                     per-rank/per-step breakdown, skew heatmap\n"
      "  titan run events.jsonl and ledger.json         timeline of faults and decisions, goodput\n"
      "  titan agent recorder dump (Perfetto JSON)      signals around each transient\n"
      "  titan gateway --event-log                      sheds, retries, ejections over time\n"
      "  titan sim --json (one scenario or a sweep)     ETTR with confidence bands, intervals\n"
      "  titan predict survival|risk|backtest --json   survival curves, hazard ratios, MTBF,\n"
      "                                                risk ranking, backtest and calibration\n"
      "  titan diagnose --json                          incidents across ranks, the root marked\n"
      "  titan plan demand|training|serving|failures --json   the forecast and its band over\n"
      "                                                the history, backtest scores, the plans\n"
      "  a directory (titan demo's output)              every result found below it, one page\n\n"
      "  titan report run.json -o load.html\n"
      "  titan report /tmp/titan-demo-XXXX -o demo.html\n\n"
      "Exit: 0 written, 1 an input could not be read or drawn (nothing is written), 2 usage",
      "titan report"};
  std::vector<std::string> inputs;
  std::string out = "titan-report.html";
  std::string title = "titan report";
  bool quiet = false;
  app.add_option("inputs", inputs, "titan result files or directories")->required();
  app.add_option("-o,--output", out, "the HTML file to write (atomically)")->capture_default_str();
  app.add_option("--title", title, "the page's title")->capture_default_str();
  app.add_flag("-q,--quiet", quiet, "print nothing on success");
  if (std::optional<int> done = ParseCommandLine(app, argc, argv)) return *done;
  if (Status refused = RefuseOutputThatIsAnInput(out, inputs, "-o"); !refused.ok()) {
    fmt::print(stderr, "report: error: {}\n", refused.message());
    return 2;
  }
  Result<Written> written = WriteReportFromPaths(inputs, out, title);
  if (!written.ok()) {
    fmt::print(stderr, "report: error: {}\n", written.status().message());
    return 1;
  }
  if (!quiet) fmt::print("report: {}\n", written->Summary());
  return 0;
}

}  // namespace titan::report
