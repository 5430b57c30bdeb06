#include "src/diagnose/diagnose.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <thread>

#include <fmt/format.h>

#include "src/base/env.h"
#include "src/diagnose/flight_recorder.h"

namespace titan::diagnose {
namespace {

namespace fs = std::filesystem;

// Walks `dir` (no symbolic links followed: no loops), adding regular files; stops at `room`.
void Walk(const std::string& dir, int64_t room, std::vector<std::string>* out, bool* cut,
          std::vector<std::string>* notes) {
  std::error_code ec;
  fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec);
  if (ec) {
    notes->push_back(fmt::format("{}: {}", dir, ec.message()));
    return;
  }
  std::vector<std::string> found;
  for (; it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) {
      notes->push_back(fmt::format("{}: {} (the rest of it was not walked)", dir, ec.message()));
      break;
    }
    std::error_code type_ec;
    if (!it->is_regular_file(type_ec) || it->is_symlink(type_ec)) continue;
    if (static_cast<int64_t>(found.size()) >= room) {
      *cut = true;
      break;
    }
    found.push_back(it->path().string());
  }
  std::sort(found.begin(), found.end());
  out->insert(out->end(), found.begin(), found.end());
}

}  // namespace

Result<std::vector<std::string>> CollectInputs(const std::vector<std::string>& paths,
                                               int64_t max_files, std::vector<std::string>* notes) {
  std::vector<std::string> files;
  bool cut = false;
  for (const std::string& path : paths) {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) {
      return ErrnoError(errno, fmt::format("{}: cannot read it", path));
    }
    const int64_t room = max_files - static_cast<int64_t>(files.size());
    if (room <= 0) {
      cut = true;
      break;
    }
    if (S_ISDIR(st.st_mode)) {
      Walk(path, room, &files, &cut, notes);
    } else {
      files.push_back(path);  // a FIFO or device given by name is refused by its reader
    }
  }
  if (cut) {
    notes->push_back(fmt::format(
        "more than {} files: the rest were not read (--max-files); point titan diagnose at "
        "fewer files, or run `titan diagnose --summarize` on each node",
        max_files));
  }
  return files;
}

SourceOutput ReadLogFile(const std::string& path, const ReadLimits& limits) {
  SourceOutput out;
  out.file.path = path;
  auto fd = OpenRegularFile(path, "log");
  if (!fd.ok()) {
    out.file.error = std::string(fd.status().message());
    return out;
  }
  struct stat st;
  if (::fstat(*fd, &st) != 0) {
    out.file.error = fmt::format("{}: {}", path, strerror(errno));
    ::close(*fd);
    return out;
  }
  out.file.bytes = st.st_size;
  std::string head(static_cast<size_t>(std::min<int64_t>(st.st_size, kSniffBytes)), '\0');
  ssize_t n = head.empty() ? 0 : ::pread(*fd, head.data(), head.size(), 0);
  head.resize(n > 0 ? static_cast<size_t>(n) : 0);
  FileHead fh{path, head, st.st_size};
  const LogSource* best = nullptr;
  int best_score = 0;
  for (const LogSource* s : LogSources()) {
    int score = s->Sniff(fh);
    if (score > best_score) {
      best = s;
      best_score = score;
    }
  }
  if (best == nullptr) {
    out.file.kind = "unknown";
    out.file.notes.push_back("binary data of no format titan reads");
  } else {
    Status read = best->Read(*fd, fh, limits, &out);
    if (!read.ok()) {
      out.file.error = std::string(read.message());
      out.findings.clear();
    }
  }
  ::close(*fd);
  out.file.findings = static_cast<int64_t>(out.findings.size());
  return out;
}

namespace {

// Summaries stand for the files they summarised.
void Flatten(std::vector<SourceOutput>* outputs, std::vector<SourceOutput>* flat) {
  for (SourceOutput& o : *outputs) {
    std::vector<SourceOutput> inner = std::move(o.summarized);
    const bool summary = !inner.empty();
    flat->push_back(std::move(o));
    if (summary) Flatten(&inner, flat);
  }
}

}  // namespace

Diagnosis DiagnoseOutputs(std::vector<SourceOutput> outputs, const IncidentOptions& options) {
  Diagnosis d;
  std::vector<SourceOutput> flat;
  Flatten(&outputs, &flat);
  // Findings in file-path order, each file's in its own order: the same order whether the files
  // were read here or summarised on their nodes.
  std::vector<size_t> by_path(flat.size());
  for (size_t i = 0; i < flat.size(); ++i) by_path[i] = i;
  std::stable_sort(by_path.begin(), by_path.end(),
                   [&](size_t a, size_t b) { return flat[a].file.path < flat[b].file.path; });
  std::vector<Finding> findings;
  Facts facts;
  std::vector<FlightRecord> records;
  int64_t order = 0;
  for (size_t i : by_path) {
    SourceOutput& o = flat[i];
    for (Finding& f : o.findings) {
      f.order = order++;
      findings.push_back(std::move(f));
    }
    facts.rank_gpus.insert(facts.rank_gpus.end(), o.rank_gpus.begin(), o.rank_gpus.end());
    facts.pid_ranks.insert(facts.pid_ranks.end(), o.pid_ranks.begin(), o.pid_ranks.end());
    for (FlightRecord& r : o.flight_records) records.push_back(std::move(r));
  }
  for (SourceOutput& o : flat) d.files.push_back(std::move(o.file));
  if (!records.empty()) {
    for (Finding& f : AnalyzeFlightRecords(records)) {
      f.order = order++;
      findings.push_back(std::move(f));
    }
  }
  d.incidents = BuildIncidents(std::move(findings), facts, options);
  return d;
}

Result<Diagnosis> Diagnose(const std::vector<std::string>& paths, const DiagnoseOptions& options) {
  std::vector<std::string> notes;
  TITAN_ASSIGN_OR_RETURN(std::vector<std::string> files,
                         CollectInputs(paths, options.max_files, &notes));
  std::vector<SourceOutput> outputs(files.size());
  const size_t threads = std::max<size_t>(
      1, std::min<size_t>(files.size(), options.threads > 0
                                            ? static_cast<size_t>(options.threads)
                                            : std::max(1u, std::thread::hardware_concurrency())));
  std::atomic<size_t> next{0}, done{0};
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < files.size();) {
      outputs[i] = ReadLogFile(files[i], options.limits);
      done.fetch_add(1);
    }
  };
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(work);
  if (options.progress) {
    std::thread reporter([&] {
      while (done.load() < files.size()) {
        usleep(200'000);
        options.progress(done.load(), files.size());
      }
    });
    work();
    for (std::thread& t : pool) t.join();
    reporter.join();
  } else {
    work();
    for (std::thread& t : pool) t.join();
  }
  Diagnosis d = DiagnoseOutputs(std::move(outputs), options.incidents);
  d.notes = std::move(notes);
  return d;
}

}  // namespace titan::diagnose
