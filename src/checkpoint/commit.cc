#include "src/checkpoint/commit.h"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "src/base/log.h"
#include "src/checkpoint/catalog.h"
#include "src/checkpoint/layout.h"

namespace titan::checkpoint {
namespace {

std::string Rfc3339(int64_t unix_ns) {
  time_t seconds = static_cast<time_t>(unix_ns / 1'000'000'000);
  struct tm tm = {};
  gmtime_r(&seconds, &tm);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

}  // namespace

Status CheckDataFiles(Storage& root, const Manifest& manifest) {
  std::vector<uint64_t> needed(manifest.files.size(), 0);
  for (const TensorEntry& t : manifest.tensors) {
    for (const ShardEntry& s : t.shards) {
      for (const ChunkRef& c : s.chunks) {
        needed[c.file] = std::max(needed[c.file], c.offset + c.size_bytes);
      }
    }
  }
  for (size_t i = 0; i < manifest.files.size(); ++i) {
    Result<uint64_t> size = root.FileSize(manifest.files[i]);
    if (!size.ok() || *size < needed[i]) {
      return DataLossError(fmt::format(
          "data file {} is {} (needs {} bytes); the checkpoint cannot be committed. If it "
          "belongs to an older checkpoint that was deleted, save again (the next save is full)",
          root.Describe(manifest.files[i]),
          size.ok() ? fmt::format("only {} bytes", *size) : std::string("missing"), needed[i]));
    }
  }
  return OkStatus();
}

Status CommitManifest(Storage& root, const Manifest& manifest, std::string_view bytes,
                      int64_t begun_unix_ns) {
  const std::string path = ManifestPath(manifest.step);
  Status created = root.CreateFileExclusive(path, bytes);
  if (created.code() != StatusCode::kAlreadyExists) return created;
  Result<Manifest> existing = ReadManifest(root, manifest.step);
  if (existing.ok() && existing->save_id == manifest.save_id) return OkStatus();
  if (existing.ok() && existing->created_unix_ns >= begun_unix_ns) {
    return AlreadyExistsError(fmt::format(
        "{} was committed by save {} at {}, after this one ({}) began at {}: two writers of one "
        "step (two jobs saving to one directory, or a copy of an older checkpoint over a newer "
        "one). Nothing of this save was committed; give each job its own directory",
        root.Describe(path), existing->save_id, Rfc3339(existing->created_unix_ns),
        manifest.save_id, Rfc3339(begun_unix_ns)));
  }
  Log(LogLevel::kWarning, "checkpoint", "replacing {}: {}", root.Describe(path),
      existing.ok() ? fmt::format("it is save {} of {}, from before this save began (a job "
                                  "restarted from an older checkpoint saves this step again)",
                                  existing->save_id, Rfc3339(existing->created_unix_ns))
                    : fmt::format("it cannot be read ({})", existing.status().message()));
  return root.WriteFileAtomic(path, bytes);
}

}  // namespace titan::checkpoint
