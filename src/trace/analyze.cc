#include "src/trace/analyze.h"

#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "src/base/env.h"
#include "src/trace/importers/importer.h"

namespace titan::trace {

Result<std::vector<std::string>> ExpandTracePaths(const std::vector<std::string>& paths) {
  std::vector<std::string> files;
  for (const std::string& path : paths) {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0)
      return ErrnoError(errno, fmt::format("trace path {}", path));
    if (!S_ISDIR(st.st_mode)) {
      files.push_back(path);
      continue;
    }
    TITAN_ASSIGN_OR_RETURN(std::vector<std::string> names, Env::ListDir(path));
    size_t before = files.size();
    for (const std::string& name : names) {
      if (name.ends_with(".json") || name.ends_with(".json.gz")) {
        files.push_back(path + (path.ends_with("/") ? "" : "/") + name);
      }
    }
    if (files.size() == before) {
      return NotFoundError(fmt::format(
          "directory {} has no trace files (*.json, *.json.gz); pass the directory that "
          "torch.profiler wrote, or the files themselves",
          path));
    }
  }
  if (files.empty()) return InvalidArgumentError("no trace files given");
  return files;
}

AnalysisResult AnalyzeTraces(const std::vector<std::string>& files, const AnalyzeOptions& options) {
  auto start = std::chrono::steady_clock::now();
  AnalysisResult result = AnalyzeRanks(files, options);
  if (std::optional<std::string> missing = MissingRanks(result.ranks, files.size())) {
    result.warnings.push_back(*missing);
  }
  result.cross = AnalyseAcrossRanks(result.ranks, options.top_collectives);
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

std::optional<std::string> MissingRanks(const std::vector<RankSummary>& ranks, size_t files) {
  int world = -1;
  for (const RankSummary& r : ranks) world = std::max(world, r.world_size);
  if (world < 0) return std::nullopt;
  std::string list;
  int missing = 0, shown = 0;
  int next = 0;                       // the lowest rank not yet accounted for
  auto gap = [&](int from, int to) {  // [from, to) missing
    if (from >= to) return;
    missing += to - from;
    if (++shown > 10) return;
    list += list.empty() ? "" : ", ";
    list += to - from == 1 ? std::to_string(from) : fmt::format("{}-{}", from, to - 1);
  };
  for (const RankSummary& r : ranks) {
    if (r.rank >= world) continue;  // refused when read; kept out of the count anyway
    gap(next, r.rank);
    next = std::max(next, r.rank + 1);
  }
  gap(next, world);
  if (missing == 0) return std::nullopt;
  return fmt::format(
      "{} {}{} of world size {} {} in none of the {} files analysed: the results cover the "
      "ranks analysed only; analyze every rank's trace (or every node's summary) together to "
      "see them all",
      missing == 1 ? "rank" : "ranks", list, shown > 10 ? ", ..." : "", world,
      missing == 1 ? "is" : fmt::format("({}) are", missing), files);
}

AnalysisResult AnalyzeRanks(const std::vector<std::string>& files, const AnalyzeOptions& options) {
  auto start = std::chrono::steady_clock::now();
  struct Slot {
    std::optional<RankSummary> summary;
    std::optional<HtaRankResult> hta;
    std::string error;
  };
  std::vector<Slot> slots(files.size());
  std::atomic<size_t> next{0};
  // Fewer files than threads: each file's events are parsed on its share of them, beside the
  // thread that reads it (which mostly waits for them).
  const ImportOptions import_options{.parse_threads =
                                         options.threads > static_cast<int>(files.size())
                                             ? options.threads / static_cast<int>(files.size())
                                             : 0};
  auto worker = [&] {
    while (true) {
      size_t i = next.fetch_add(1);
      if (i >= files.size()) return;
      Result<RankTrace> trace = ImportTraceFile(files[i], options.rank_rule, import_options);
      if (!trace.ok()) {
        slots[i].error = std::string(trace.status().message());
        continue;
      }
      slots[i].summary = SummariseRank(*trace, options.summary);
      if (options.hta_compat) slots[i].hta = ComputeHtaRank(*trace, options.hta);
    }  // the RankTrace is freed here: only summaries stay
  };
  int threads =
      std::clamp<int>(options.threads, 1, std::max<int>(1, static_cast<int>(files.size())));
  std::vector<std::thread> pool;
  for (int i = 1; i < threads; ++i) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();

  AnalysisResult result;
  std::map<int, size_t> seen;  // rank -> slot
  for (size_t i = 0; i < slots.size(); ++i) {
    Slot& slot = slots[i];
    if (!slot.error.empty()) {
      result.errors.push_back(slot.error);
      continue;
    }
    int rank = slot.summary->rank;
    auto [it, inserted] = seen.emplace(rank, i);
    if (!inserted) {
      result.errors.push_back(fmt::format(
          "{}: rank {} is given twice (also {}); this file is skipped: pass one trace per rank",
          files[i], rank, files[it->second]));
      continue;
    }
    result.input_bytes += slot.summary->input_bytes;
    result.ranks.push_back(std::move(*slot.summary));
    if (slot.hta) result.hta.push_back(std::move(*slot.hta));
  }
  std::sort(result.ranks.begin(), result.ranks.end(),
            [](const RankSummary& a, const RankSummary& b) { return a.rank < b.rank; });
  std::sort(result.hta.begin(), result.hta.end(),
            [](const HtaRankResult& a, const HtaRankResult& b) { return a.rank < b.rank; });
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace titan::trace
