// `titan trace`: analyse PyTorch profiler traces of many ranks, in one process or split across
// nodes (summarize per node, then analyze the summaries); merge agent telemetry into them.
#include "src/trace/trace_command.h"

#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "src/base/atomic_file.h"
#include "src/base/command_line.h"
#include "src/base/text.h"
#include "src/report/report.h"
#include "src/trace/analyze.h"
#include "src/trace/importers/event_batch.h"
#include "src/trace/merge.h"
#include "src/trace/report.h"
#include "src/trace/split_analysis.h"

namespace titan {

namespace {

// Whether `files` are all node summaries (true) or all traces (false); a mix is a usage error.
Result<bool> AllSummaries(const std::vector<std::string>& files) {
  const std::string* a_summary = nullptr;
  const std::string* a_trace = nullptr;
  for (const std::string& f : files) (trace::LooksLikeSummaryFile(f) ? a_summary : a_trace) = &f;
  if (a_summary != nullptr && a_trace != nullptr) {
    return InvalidArgumentError(fmt::format(
        "{} is a node summary but {} is a trace: analyze either traces or summaries (run titan "
        "trace summarize on the traces first)",
        *a_summary, *a_trace));
  }
  return a_summary != nullptr;
}

// `titan trace summarize`: writes the node summary; 1 when a file failed (its error is in the
// summary too, so analyze reports it) or no rank could be analysed.
int Summarize(const std::vector<std::string>& paths, const std::string& out, const std::string& job,
              bool hta_compat, int threads, trace::AnalyzeOptions options) {
  Result<std::vector<std::string>> files = trace::ExpandTracePaths(paths);
  if (!files.ok()) {
    std::fprintf(stderr, "titan trace summarize: %s\n",
                 std::string(files.status().message()).c_str());
    return 1;
  }
  if (Status refused = RefuseOutputThatIsAnInput(out, *files, "-o"); !refused.ok()) {
    std::fprintf(stderr, "titan trace summarize: %s\n", std::string(refused.message()).c_str());
    return kExitUsageError;
  }
  for (const std::string& f : *files) {
    if (trace::LooksLikeSummaryFile(f)) {
      std::fprintf(stderr,
                   "titan trace summarize: %s is already a summary: pass the trace files; "
                   "summaries go to titan trace analyze\n",
                   f.c_str());
      return kExitUsageError;
    }
  }
  options.hta_compat = hta_compat;
  options.threads = threads;
  char host[256] = {};
  if (::gethostname(host, sizeof(host) - 1) != 0) host[0] = '\0';
  trace::NodeSummary node = trace::SummarizeTraces(*files, options, job, host);
  for (const std::string& e : node.errors) {
    std::fprintf(stderr, "titan trace summarize: %s\n", e.c_str());
  }
  Result<uint64_t> written = trace::WriteSummaryFile(out, node);
  if (!written.ok()) {
    std::fprintf(stderr, "titan trace summarize: %s\n",
                 std::string(written.status().message()).c_str());
    return 1;
  }
  uint64_t input_bytes = 0, calls = 0;
  for (const trace::RankSummary& r : node.ranks) {
    input_bytes += r.input_bytes;
    calls += r.collectives.size();
  }
  std::fprintf(out == "-" ? stderr : stdout,
               "wrote %s: %zu rank(s), %llu collective calls, %s summarising %s of trace JSON "
               "(%.2f s)\n",
               out.c_str(), node.ranks.size(), static_cast<unsigned long long>(calls),
               FormatBytes(*written).c_str(), FormatBytes(input_bytes).c_str(), node.seconds);
  return node.errors.empty() && !node.ranks.empty() ? 0 : 1;
}

}  // namespace

int TraceCommand(int argc, char** argv) {
  CLI::App app{"titan trace: where the time goes per step and per rank in PyTorch profiler traces"};
  app.require_subcommand(1);

  std::vector<std::string> paths;
  bool hta_compat = false, json = false, full = false;
  std::string csv_dir, report_path;
  int threads = std::max(1u, std::min(2u, std::thread::hardware_concurrency()));
  trace::AnalyzeOptions options;
  CLI::App* analyze = app.add_subcommand(
      "analyze",
      "analyse trace files (.json, .json.gz) or directories of per-rank traces, or the node "
      "summaries that titan trace summarize wrote (the same result as analysing their traces)");
  analyze->add_option("paths", paths, "trace files or directories, or summary files")->required();
  analyze->add_flag("--hta-compat", hta_compat,
                    "also compute Holistic Trace Analysis' tables with HTA's definitions");
  analyze->add_flag("--json", json, "print one JSON object instead of the summary");
  analyze->add_flag("--full", full,
                    "print every row of every table (per rank, per step, each kept idle gap); "
                    "by default the text summarises across ranks and shows the largest rows");
  analyze->add_option("--csv", csv_dir, "write the tables as CSV files into this directory");
  analyze->add_option("--report", report_path,
                      "one self-contained HTML page with the plots (titan report)");
  analyze->add_option("--threads", threads, "ranks analysed at once (memory grows with it)")
      ->check(CLI::Range(1, 256));
  CLI::Option* rank_option =
      analyze
          ->add_option("--rank", options.rank_rule.forced,
                       "the rank of the one trace file given (default: its distributedInfo.rank, "
                       "else 0)")
          ->check(CLI::Range(0, INT32_MAX));
  CLI::Option* top_option =
      analyze->add_option("--top", options.summary.top_gaps, "idle gaps to show per rank")
          ->check(CLI::Range(0, 1000));
  CLI::Option* delay_option =
      analyze->add_option("--hta-kernel-delay-us", options.hta.consecutive_kernel_delay_us,
                          "HTA's threshold between kernel wait and other idle time");

  std::vector<std::string> summarize_paths;
  std::string summary_path, job;
  if (const char* slurm_job = std::getenv("SLURM_JOB_ID")) job = slurm_job;
  CLI::App* summarize = app.add_subcommand(
      "summarize",
      "analyse the ranks whose traces are on this node into a compact summary file; then "
      "titan trace analyze SUMMARY... gives the result of analysing all the traces at once");
  summarize->add_option("paths", summarize_paths, "trace files or directories")->required();
  summarize->add_option("-o,--out", summary_path, "the summary file to write (atomically)")
      ->required();
  summarize->add_option("--job", job,
                        "job id recorded in the summary; analyze refuses summaries of different "
                        "jobs (default: $SLURM_JOB_ID, else none)");
  summarize->add_flag("--hta-compat", hta_compat,
                      "also keep Holistic Trace Analysis' per-rank tables (for analyze "
                      "--hta-compat)");
  summarize->add_option("--threads", threads, "ranks analysed at once (memory grows with it)")
      ->check(CLI::Range(1, 256));
  summarize->add_option("--top", options.summary.top_gaps, "idle gaps to keep per rank")
      ->check(CLI::Range(0, 1000));
  summarize->add_option("--hta-kernel-delay-us", options.hta.consecutive_kernel_delay_us,
                        "HTA's threshold between kernel wait and other idle time");

  std::vector<std::string> merge_paths;
  std::string agent_dump, out_path;
  CLI::App* merge = app.add_subcommand(
      "merge", "write one Perfetto/Chrome trace with the ranks' traces and titan agent counters");
  merge->add_option("paths", merge_paths, "trace files or directories")->required();
  merge->add_option("--agent", agent_dump, "the titan agent flight-recorder dump (Chrome JSON)");
  merge->add_option("-o,--out", out_path, "output file (.json)")->required();

  if (std::optional<int> done = ParseCommandLine(app, argc, argv)) return *done;

  if (*summarize)
    return Summarize(summarize_paths, summary_path, job, hta_compat, threads, options);
  if (*analyze) {
    Result<std::vector<std::string>> files = trace::ExpandTracePaths(paths);
    if (!files.ok()) {
      std::fprintf(stderr, "titan trace: %s\n", std::string(files.status().message()).c_str());
      return 1;
    }
    if (Status refused = RefuseOutputThatIsAnInput(report_path, *files, "--report");
        !refused.ok()) {
      std::fprintf(stderr, "titan trace: %s\n", std::string(refused.message()).c_str());
      return kExitUsageError;
    }
    options.hta_compat = hta_compat;
    options.threads = threads;
    Result<bool> summaries = AllSummaries(*files);
    if (!summaries.ok()) {
      std::fprintf(stderr, "titan trace: %s\n", std::string(summaries.status().message()).c_str());
      return kExitUsageError;
    }
    if (rank_option->count() > 0 && (*summaries || files->size() != 1)) {
      const std::string given =
          *summaries ? "summaries are" : fmt::format("{} files are", files->size());
      std::fprintf(stderr,
                   "titan trace: --rank names the rank of one trace file, but %s given: pass "
                   "one trace file, or name the ranks in the traces or file names (rank3.json)\n",
                   given.c_str());
      return kExitUsageError;
    }
    options.rank_rule.single_file = files->size() == 1;
    trace::AnalysisResult result;
    if (*summaries) {
      trace::MergeOptions merge_options;
      merge_options.threads = threads;
      merge_options.top_collectives = options.top_collectives;
      merge_options.hta_compat = hta_compat;
      if (top_option->count() > 0) merge_options.top_gaps = options.summary.top_gaps;
      if (delay_option->count() > 0) {
        merge_options.hta_kernel_delay_us = options.hta.consecutive_kernel_delay_us;
      }
      Result<trace::AnalysisResult> merged = trace::AnalyzeSummaries(*files, merge_options);
      if (!merged.ok()) {
        std::fprintf(stderr, "titan trace: %s\n", std::string(merged.status().message()).c_str());
        return 1;
      }
      result = std::move(merged).value();
    } else {
      result = trace::AnalyzeTraces(*files, options);
    }
    trace::PrintErrors(result.errors, "titan trace: ", trace::kTextErrors, stderr);
    trace::PrintErrors(result.warnings, "titan trace: warning: ", trace::kTextErrors, stderr);
    const std::string result_json =
        json || !report_path.empty() ? trace::JsonReport(result, hta_compat) : "";
    if (json) {
      std::printf("%s\n", result_json.c_str());
    } else {
      trace::PrintTextReport(result, {.hta_compat = hta_compat, .full = full}, stdout);
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
