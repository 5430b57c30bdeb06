#include "src/trace/split_analysis.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <iterator>
#include <map>
#include <optional>
#include <thread>

#include <fmt/format.h>

namespace titan::trace {
namespace {

// Reads every file on up to `threads` threads; results in the order of `files`.
std::vector<Result<NodeSummary>> ReadAll(const std::vector<std::string>& files, int threads) {
  std::vector<Result<NodeSummary>> out(files.size(), InternalError("not read"));
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i = next.fetch_add(1); i < files.size(); i = next.fetch_add(1)) {
      out[i] = ReadSummaryFile(files[i]);
    }
  };
  threads = std::clamp<int>(threads, 1, std::max<int>(1, static_cast<int>(files.size())));
  std::vector<std::thread> pool;
  for (int i = 1; i < threads; ++i) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();
  return out;
}

std::string JobName(const std::string& job) {
  return job.empty() ? "(no job id)" : "'" + job + "'";
}

// "FILE (host H)" for messages.
std::string Origin(const std::string& file, const NodeSummary& s) {
  return s.host.empty() ? file : fmt::format("{} (host {})", file, s.host);
}

// The summaries must describe one job, analysed with one set of per-rank options.
Status CheckSameJob(const std::vector<std::string>& files, const std::vector<NodeSummary>& nodes) {
  const NodeSummary& first = nodes.front();
  for (size_t i = 1; i < nodes.size(); ++i) {
    if (nodes[i].job != first.job) {
      return InvalidArgumentError(fmt::format(
          "{} is job {} but {} is job {}: these are summaries of different jobs; analyze one "
          "job's summaries together (summarize sets the job id from --job, else $SLURM_JOB_ID)",
          Origin(files[0], first), JobName(first.job), Origin(files[i], nodes[i]),
          JobName(nodes[i].job)));
    }
    if (!(nodes[i].options == first.options)) {
      return InvalidArgumentError(fmt::format(
          "{} and {} were summarised with different options (--top {} vs {}, --hta-compat {} vs "
          "{}, --hta-kernel-delay-us {} vs {}): summarize every node with the same options",
          files[0], files[i], first.options.top_gaps, nodes[i].options.top_gaps,
          first.options.hta_compat, nodes[i].options.hta_compat,
          first.options.hta.consecutive_kernel_delay_us,
          nodes[i].options.hta.consecutive_kernel_delay_us));
    }
  }
  // The world size where the traces say it (distributedInfo.world_size).
  const RankSummary* sized = nullptr;
  size_t sized_file = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (const RankSummary& r : nodes[i].ranks) {
      if (r.world_size < 0) continue;
      if (sized == nullptr) {
        sized = &r;
        sized_file = i;
      } else if (r.world_size != sized->world_size) {
        return InvalidArgumentError(fmt::format(
            "rank {} in {} has world size {} but rank {} in {} has world size {}: these are "
            "summaries of different jobs; analyze one job's summaries together",
            sized->rank, Origin(files[sized_file], nodes[sized_file]), sized->world_size, r.rank,
            Origin(files[i], nodes[i]), r.world_size));
      }
    }
  }
  return OkStatus();
}

// What the caller asked for must be what the summaries hold.
Status CheckRequestedOptions(const std::string& file, const SummaryFileOptions& have,
                             const MergeOptions& want) {
  if (want.top_gaps && *want.top_gaps != have.top_gaps) {
    return InvalidArgumentError(fmt::format(
        "{} keeps the top {} idle gaps per rank, not {}: pass --top {} to titan trace summarize, "
        "or leave --top out when analyzing summaries",
        file, have.top_gaps, *want.top_gaps, *want.top_gaps));
  }
  if (want.hta_compat && !have.hta_compat) {
    return InvalidArgumentError(fmt::format(
        "{} has no HTA-compatible results: run titan trace summarize with --hta-compat", file));
  }
  if (want.hta_kernel_delay_us &&
      *want.hta_kernel_delay_us != have.hta.consecutive_kernel_delay_us) {
    return InvalidArgumentError(fmt::format(
        "{} was summarised with --hta-kernel-delay-us {}, not {}: pass it to titan trace "
        "summarize, or leave it out when analyzing summaries",
        file, have.hta.consecutive_kernel_delay_us, *want.hta_kernel_delay_us));
  }
  return OkStatus();
}

}  // namespace

NodeSummary SummarizeTraces(const std::vector<std::string>& files, const AnalyzeOptions& options,
                            std::string job, std::string host) {
  AnalysisResult result = AnalyzeRanks(files, options);
  NodeSummary node;
  node.job = std::move(job);
  node.host = std::move(host);
  node.seconds = result.seconds;
  node.options.top_gaps = options.summary.top_gaps;
  node.options.hta_compat = options.hta_compat;
  node.options.hta = options.hta;
  node.errors = std::move(result.errors);
  node.ranks = std::move(result.ranks);
  node.hta = std::move(result.hta);
  return node;
}

Result<AnalysisResult> AnalyzeSummaries(const std::vector<std::string>& files,
                                        const MergeOptions& options) {
  auto start = std::chrono::steady_clock::now();
  if (files.empty()) return InvalidArgumentError("no summary files given");
  std::vector<NodeSummary> nodes;
  std::vector<std::string> failures;
  for (Result<NodeSummary>& r : ReadAll(files, options.threads)) {
    if (r.ok()) {
      nodes.push_back(std::move(r).value());
    } else {
      failures.emplace_back(r.status().message());
    }
  }
  if (!failures.empty()) {
    const size_t shown = std::min<size_t>(failures.size(), 5);
    std::string message =
        fmt::format("{} of {} summaries cannot be used:", failures.size(), files.size());
    for (size_t i = 0; i < shown; ++i) message += "\n  " + failures[i];
    if (shown < failures.size())
      message += fmt::format("\n  ... and {} more", failures.size() - shown);
    return InvalidArgumentError(message);
  }
  TITAN_RETURN_IF_ERROR(CheckSameJob(files, nodes));
  TITAN_RETURN_IF_ERROR(CheckRequestedOptions(files[0], nodes[0].options, options));

  std::map<int, size_t> file_of;  // rank -> index of the summary that has it
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (const RankSummary& r : nodes[i].ranks) {
      auto [it, inserted] = file_of.emplace(r.rank, i);
      if (inserted) continue;
      const NodeSummary& other = nodes[it->second];
      auto other_rank = std::find_if(other.ranks.begin(), other.ranks.end(),
                                     [&](const RankSummary& o) { return o.rank == r.rank; });
      return AlreadyExistsError(fmt::format(
          "rank {} is in two summaries: {} (trace {}) and {} (trace {}); each rank must be "
          "summarised on one node only: remove the stale summary or summarize that node again",
          r.rank, Origin(files[it->second], other), other_rank->path, Origin(files[i], nodes[i]),
          r.path));
    }
  }

  // As AnalyzeRanks fills it for the files node by node: errors in file order, ranks sorted.
  AnalysisResult result;
  for (NodeSummary& node : nodes) {
    result.errors.insert(result.errors.end(), node.errors.begin(), node.errors.end());
    for (RankSummary& r : node.ranks) {
      result.input_bytes += r.input_bytes;
      result.ranks.push_back(std::move(r));
    }
    if (options.hta_compat) {
      std::move(node.hta.begin(), node.hta.end(), std::back_inserter(result.hta));
    }
  }
  std::sort(result.ranks.begin(), result.ranks.end(),
            [](const RankSummary& a, const RankSummary& b) { return a.rank < b.rank; });
  if (std::optional<std::string> missing = MissingRanks(result.ranks, files.size())) {
    result.warnings.push_back(*missing);
  }
  std::sort(result.hta.begin(), result.hta.end(),
            [](const HtaRankResult& a, const HtaRankResult& b) { return a.rank < b.rank; });
  result.cross = AnalyseAcrossRanks(result.ranks, options.top_collectives);
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace titan::trace
