// `titan trace`: analyse PyTorch profiler traces of many ranks; merge agent telemetry into them.
#include <unistd.h>

#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>

#include "src/base/command_line.h"
#include "src/report/report.h"
#include "src/trace/analyze.h"
#include "src/trace/importers/event_batch.h"
#include "src/trace/merge.h"
#include "src/trace/report.h"

namespace titan {

int TraceCommand(int argc, char** argv) {
  CLI::App app{"titan trace: where the time goes per step and per rank in PyTorch profiler traces"};
  app.require_subcommand(1);

  std::vector<std::string> paths;
  bool hta_compat = false, json = false;
  std::string csv_dir, report_path;
  int threads = std::max(1u, std::min(2u, std::thread::hardware_concurrency()));
  trace::AnalyzeOptions options;
  CLI::App* analyze = app.add_subcommand(
      "analyze", "analyse trace files (.json, .json.gz) or directories of per-rank traces");
  analyze->add_option("paths", paths, "trace files or directories")->required();
  analyze->add_flag("--hta-compat", hta_compat,
                    "also compute Holistic Trace Analysis' tables with HTA's definitions");
  analyze->add_flag("--json", json, "print one JSON object instead of the summary");
  analyze->add_option("--csv", csv_dir, "write the tables as CSV files into this directory");
  analyze->add_option("--report", report_path,
                      "one self-contained HTML page with the plots (titan report)");
  analyze->add_option("--threads", threads, "ranks analysed at once (memory grows with it)")
      ->check(CLI::Range(1, 256));
  analyze->add_option("--top", options.summary.top_gaps, "idle gaps to show per rank")
      ->check(CLI::Range(0, 1000));
  analyze->add_option("--hta-kernel-delay-us", options.hta.consecutive_kernel_delay_us,
                      "HTA's threshold between kernel wait and other idle time");

  std::vector<std::string> merge_paths;
  std::string agent_dump, out_path;
  CLI::App* merge = app.add_subcommand(
      "merge", "write one Perfetto/Chrome trace with the ranks' traces and titan agent counters");
  merge->add_option("paths", merge_paths, "trace files or directories")->required();
  merge->add_option("--agent", agent_dump, "the titan agent flight-recorder dump (Chrome JSON)");
  merge->add_option("-o,--out", out_path, "output file (.json)")->required();

  if (std::optional<int> done = ParseCommandLine(app, argc, argv)) return *done;

  if (*analyze) {
    Result<std::vector<std::string>> files = trace::ExpandTracePaths(paths);
    if (!files.ok()) {
      std::fprintf(stderr, "titan trace: %s\n", std::string(files.status().message()).c_str());
      return 1;
    }
    options.hta_compat = hta_compat;
    options.threads = threads;
    trace::AnalysisResult result = trace::AnalyzeTraces(*files, options);
    for (const std::string& e : result.errors) std::fprintf(stderr, "titan trace: %s\n", e.c_str());
    const std::string result_json =
        json || !report_path.empty() ? trace::JsonReport(result, hta_compat) : "";
    if (json) {
      std::printf("%s\n", result_json.c_str());
    } else {
      trace::PrintTextReport(result, hta_compat, stdout);
    }
    if (!report_path.empty() && !result.ranks.empty()) {
      Result<report::Written> w =
          report::WriteReportOf(report::InputKind::kTraceAnalysis,
                                nlohmann::json::parse(result_json), "this analysis", report_path);
      if (!w.ok()) {
        std::fprintf(stderr, "titan trace: %s\n", std::string(w.status().message()).c_str());
        return 1;
      }
      std::fprintf(stderr, "titan trace: %s\n", w->Summary().c_str());
    }
    if (!csv_dir.empty()) {
      Status s = trace::WriteCsvReport(result, hta_compat, csv_dir);
      if (!s.ok()) {
        std::fprintf(stderr, "titan trace: %s\n", std::string(s.message()).c_str());
        return 1;
      }
    }
    if (result.ranks.empty()) return 1;
    return result.errors.empty() ? 0 : 1;
  }
  Result<std::vector<std::string>> files = trace::ExpandTracePaths(merge_paths);
  if (!files.ok()) {
    std::fprintf(stderr, "titan trace merge: %s\n", std::string(files.status().message()).c_str());
    return 1;
  }
  Result<trace::MergeStats> stats = trace::MergeTelemetry(*files, agent_dump, out_path);
  if (!stats.ok()) {
    std::fprintf(stderr, "titan trace merge: %s\n", std::string(stats.status().message()).c_str());
    return 1;
  }
  for (const std::string& w : stats->warnings) std::fprintf(stderr, "warning: %s\n", w.c_str());
  std::printf("wrote %s: %llu rank events, %llu agent counter events (open in ui.perfetto.dev)\n",
              out_path.c_str(), static_cast<unsigned long long>(stats->rank_events),
              static_cast<unsigned long long>(stats->agent_events));
  return 0;
}

}  // namespace titan
