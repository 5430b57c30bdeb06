#include "src/checkpoint/catalog.h"

#include <algorithm>
#include <chrono>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "src/checkpoint/layout.h"

namespace titan::checkpoint {
namespace {

// Why gc leaves an entry alone (GcReport::skipped). titan writes step directories and regular
// files in them only; anything else was put there by someone else and is not gc's to remove.
constexpr const char* kNotADirectory =
    "not a directory (a symbolic link?): gc does not follow links, left in place; remove it by "
    "hand if it should go";
constexpr const char* kNotAFile =
    "not a regular file (a directory, link or device titan never writes): left in place with "
    "its directory; remove it by hand";

}  // namespace

Result<std::vector<int64_t>> ListCommittedSteps(Storage& storage) {
  TITAN_ASSIGN_OR_RETURN(std::vector<std::string> names, storage.ListDir(""));
  std::vector<int64_t> steps;
  for (const std::string& name : names) {
    int64_t step;
    if (!ParseStepDirName(name, &step)) continue;
    if (storage.FileSize(ManifestPath(step)).ok()) steps.push_back(step);
  }
  std::sort(steps.begin(), steps.end());
  return steps;
}

Result<std::optional<int64_t>> LatestStep(Storage& storage) {
  // The newest committed MANIFEST wins over `latest`: a save killed between renaming its
  // MANIFEST into place and updating `latest` is committed, and `latest` still names the one
  // before (losing a whole interval on restart). `latest` is kept for tools that read it.
  TITAN_ASSIGN_OR_RETURN(std::vector<int64_t> steps, ListCommittedSteps(storage));
  if (steps.empty()) return std::optional<int64_t>();
  return std::optional<int64_t>(steps.back());
}

Result<ManifestFile> ReadManifestFile(Storage& storage, int64_t step) {
  constexpr int kReads = 3;
  std::string path = ManifestPath(step);
  for (int read = 1;; ++read) {
    TITAN_ASSIGN_OR_RETURN(std::string bytes, storage.ReadFile(path, kMaxManifestBytes));
    Result<Manifest> manifest = ParseManifest(bytes, storage.Describe(path));
    if (manifest.ok()) return ManifestFile{std::move(bytes), std::move(manifest).value()};
    if (manifest.status().code() != StatusCode::kDataLoss || read == kReads) {
      return manifest.status();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50 * read));
  }
}

Result<Manifest> ReadManifest(Storage& storage, int64_t step) {
  TITAN_ASSIGN_OR_RETURN(ManifestFile file, ReadManifestFile(storage, step));
  return std::move(file.manifest);
}

Result<GcReport> CollectGarbage(Storage& storage, const RetentionPolicy& policy, bool dry_run,
                                bool newer_uncommitted) {
  GcReport report;
  TITAN_ASSIGN_OR_RETURN(std::vector<int64_t> committed, ListCommittedSteps(storage));
  TITAN_ASSIGN_OR_RETURN(std::optional<int64_t> latest, LatestStep(storage));
  if (!latest && !newer_uncommitted) return report;  // nothing committed: all may be in flight
  // A directory at or above the latest step may be a save in flight: left alone by default.
  auto maybe_in_flight = [&](int64_t step) {
    return !newer_uncommitted && (!latest || step >= *latest);
  };

  // 1. Retention: which committed checkpoints to drop.
  std::set<int64_t> keep;
  if (policy.keep_last <= 0) {
    keep.insert(committed.begin(), committed.end());
  } else {
    size_t n = committed.size();
    for (size_t i = n > static_cast<size_t>(policy.keep_last) ? n - policy.keep_last : 0; i < n;
         ++i) {
      keep.insert(committed[i]);
    }
    if (policy.keep_every > 0) {
      for (int64_t step : committed) {
        if (step % policy.keep_every == 0) keep.insert(step);
      }
    }
  }
  if (latest) keep.insert(*latest);  // never drop what "latest" names
  for (int64_t step : committed) {
    if (keep.count(step)) continue;
    if (storage.KindOf(StepDirName(step)) != Storage::EntryKind::kDirectory) {
      report.skipped.push_back(fmt::format("{}: {}", StepDirName(step), kNotADirectory));
      continue;  // a link to a checkpoint elsewhere: not this directory's to drop
    }
    report.dropped_steps.push_back(step);
  }

  // 2. Files every kept checkpoint references. A manifest we cannot read keeps its whole
  // directory (we cannot tell what it references), and aborts cleanup of referenced files.
  std::set<std::string> referenced;
  for (int64_t step : keep) {
    Result<Manifest> manifest = ReadManifest(storage, step);
    if (!manifest.ok()) {
      return manifest.status().WithContext(fmt::format(
          "gc: cannot tell which files checkpoint {} references, so nothing is removed; run "
          "`titan ckpt verify` on it",
          step));
    }
    referenced.insert(manifest->files.begin(), manifest->files.end());
  }

  // 3. Un-commit dropped checkpoints: MANIFEST first, made durable before any data goes.
  if (!dry_run) {
    for (int64_t step : report.dropped_steps) {
      TITAN_RETURN_IF_ERROR(storage.RemoveFile(ManifestPath(step)));
      TITAN_RETURN_IF_ERROR(storage.SyncDir(StepDirName(step)));
    }
  }
  std::set<int64_t> dropped(report.dropped_steps.begin(), report.dropped_steps.end());

  // 4. Clean directories without a (remaining) MANIFEST below the latest step.
  TITAN_ASSIGN_OR_RETURN(std::vector<std::string> names, storage.ListDir(""));
  for (const std::string& dir : names) {
    int64_t step;
    if (!ParseStepDirName(dir, &step) || maybe_in_flight(step) || keep.count(step)) continue;
    if (!dropped.count(step) && storage.FileSize(ManifestPath(step)).ok()) continue;
    if (storage.KindOf(dir) != Storage::EntryKind::kDirectory) {
      report.skipped.push_back(fmt::format("{}: {}", dir, kNotADirectory));
      continue;
    }
    Result<std::vector<std::string>> files = storage.ListDir(dir);
    if (!files.ok()) continue;
    size_t remaining = files->size();
    for (const std::string& file : *files) {
      std::string path = dir + "/" + file;
      if (file == kManifestName) continue;  // dry run: still there
      if (referenced.count(path)) {
        report.kept_referenced.push_back(path);
        continue;
      }
      Storage::EntryKind kind = storage.KindOf(path);
      if (kind == Storage::EntryKind::kMissing) {  // removed meanwhile (another gc)
        --remaining;
        continue;
      }
      if (kind != Storage::EntryKind::kFile) {
        report.skipped.push_back(fmt::format("{}: {}", path, kNotAFile));
        continue;  // the directory stays too
      }
      uint64_t size = storage.FileSize(path).value_or(0);
      if (!dry_run) {
        // One file that cannot go (permissions, a store's refusal) keeps its directory, not
        // the rest of the cleaning; the next gc tries again.
        if (Status removed = storage.RemoveFile(path); !removed.ok()) {
          report.skipped.push_back(fmt::format("{}: not removed: {}", path, removed.ToString()));
          continue;
        }
      }
      report.removed_files.push_back(path);
      report.removed_bytes += size;
      --remaining;
    }
    if (!dry_run && remaining == 0) {
      if (Status removed = storage.RemoveDir(dir); !removed.ok()) {
        report.skipped.push_back(fmt::format("{}: not removed: {}", dir, removed.ToString()));
      }
    }
  }

  // 5. Incomplete writes (object stores) of the same directories: a kill -9 mid-upload.
  TITAN_ASSIGN_OR_RETURN(std::vector<std::string> incomplete, storage.ListIncompleteWrites());
  for (const std::string& path : incomplete) {
    int64_t step;
    if (!ParseStepDirName(path.substr(0, path.find('/')), &step) || maybe_in_flight(step) ||
        keep.count(step)) {
      continue;
    }
    if (!dry_run) TITAN_RETURN_IF_ERROR(storage.AbortIncompleteWrites(path));
    report.aborted_writes.push_back(path);
  }
  if (!dry_run) TITAN_RETURN_IF_ERROR(storage.SyncDir(""));
  return report;
}

}  // namespace titan::checkpoint
