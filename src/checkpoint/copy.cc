#include "src/checkpoint/copy.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <deque>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "src/base/log.h"
#include "src/checkpoint/catalog.h"
#include "src/checkpoint/commit.h"
#include "src/checkpoint/hash.h"
#include "src/checkpoint/layout.h"
#include "src/checkpoint/manifest.h"

namespace titan::checkpoint {
namespace {

// "step_0000000100/rank_00000-x.data" -> "step_0000000100"; "" for a file in the root.
std::string DirOf(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash);
}

// One byte range of a data file to copy; `hash` is checked when `checked`.
struct Piece {
  uint64_t offset = 0;
  uint64_t size_bytes = 0;
  Hash128 hash;
  bool checked = false;
};

// The file's chunks in offset order, each once, with unchecked pieces filling any gap, up to
// `needed` bytes (what the manifest references; a file may hold more, which is not copied).
std::vector<Piece> PiecesOf(const std::vector<ChunkRef>& chunks, uint64_t needed) {
  std::map<uint64_t, Piece> by_offset;
  for (const ChunkRef& c : chunks) by_offset[c.offset] = {c.offset, c.size_bytes, c.hash, true};
  std::vector<Piece> pieces;
  uint64_t at = 0;
  for (const auto& [offset, piece] : by_offset) {
    if (offset < at) continue;  // overlapping references: covered by the earlier piece
    if (offset > at) pieces.push_back({at, offset - at, {}, false});
    pieces.push_back(piece);
    at = offset + piece.size_bytes;
  }
  if (at < needed) pieces.push_back({at, needed - at, {}, false});
  return pieces;
}

Status CopyFile(Storage& from, Storage& to, const std::string& path,
                const std::vector<Piece>& pieces, const CopyOptions& options) {
  TITAN_ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> in, from.NewRandomAccessFile(path));
  TITAN_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> out, options.cache_destination
                                                                ? to.NewWritableFile(path)
                                                                : to.NewBulkFile(path));
  struct Block {
    Status status;
    std::vector<char> bytes;
  };
  auto read = [&](const Piece& p) {
    Block block;
    block.bytes.resize(p.size_bytes);
    block.status = in->ReadAt(p.offset, p.size_bytes, block.bytes.data());
    if (block.status.ok() && p.checked &&
        !(HashBytes(block.bytes.data(), p.size_bytes) == p.hash)) {
      block.status = DataLossError(fmt::format(
          "{}: the {} bytes at offset {} do not match their checksum in the manifest; the "
          "source is corrupt (titan ckpt verify shows every bad chunk)",
          from.Describe(path), p.size_bytes, p.offset));
    }
    return block;
  };
  std::deque<std::future<Block>> pending;
  size_t next = 0;
  Status failed;
  const size_t read_ahead = static_cast<size_t>(std::max(1, options.read_ahead));
  for (size_t done = 0; done < pieces.size(); ++done) {
    if (options.cancelled && options.cancelled()) {
      failed = CancelledError("the copy was cancelled");
      break;
    }
    while (next < pieces.size() && pending.size() < read_ahead) {
      pending.push_back(std::async(std::launch::async, read, std::cref(pieces[next++])));
    }
    Block block = pending.front().get();
    pending.pop_front();
    if (!block.status.ok()) {
      failed = block.status;
      break;
    }
    if (Status s = out->Append(block.bytes.data(), block.bytes.size()); !s.ok()) {
      failed = s;
      break;
    }
  }
  for (auto& f : pending) f.wait();  // before `in` and the pieces go away
  TITAN_RETURN_IF_ERROR(failed);     // `out` is dropped unsynced: nothing is committed
  TITAN_RETURN_IF_ERROR(out->Sync());
  return out->Close();
}

}  // namespace

Result<CopyReport> CopyDataFiles(Storage& from, const Manifest& manifest, Storage& to,
                                 const CopyOptions& options,
                                 const std::function<bool(const std::string&)>& select) {
  std::vector<std::vector<ChunkRef>> chunks(manifest.files.size());
  std::vector<uint64_t> needed(manifest.files.size(), 0);
  for (const TensorEntry& t : manifest.tensors) {
    for (const ShardEntry& s : t.shards) {
      for (const ChunkRef& c : s.chunks) {
        chunks[c.file].push_back(c);
        needed[c.file] = std::max(needed[c.file], c.offset + c.size_bytes);
      }
    }
  }
  std::vector<size_t> picked;
  uint64_t total = 0;
  for (size_t i = 0; i < manifest.files.size(); ++i) {
    if (select && !select(manifest.files[i])) continue;
    picked.push_back(i);
    total += needed[i];
  }

  CopyReport report;
  std::mutex mu;
  Status first_error;
  std::atomic<size_t> next_file{0};
  auto worker = [&] {
    while (true) {
      size_t next = next_file.fetch_add(1);
      if (next >= picked.size()) return;
      size_t i = picked[next];
      {
        std::lock_guard<std::mutex> lock(mu);
        if (!first_error.ok()) return;
      }
      const std::string& path = manifest.files[i];
      Result<uint64_t> present = to.FileSize(path);
      bool skip = present.ok() && *present >= needed[i];
      Status status;
      if (!skip) {
        status = to.CreateDir(DirOf(path));
        if (status.ok()) {
          status = CopyFile(from, to, path, PiecesOf(chunks[i], needed[i]), options);
        }
      }
      std::lock_guard<std::mutex> lock(mu);
      if (!status.ok()) {
        if (first_error.ok()) first_error = status.WithContext("copying " + from.Describe(path));
        return;
      }
      if (skip) {
        ++report.files_present;
      } else {
        ++report.files_copied;
        report.copied_bytes += needed[i];
      }
      if (options.on_progress) options.on_progress(report.copied_bytes, total);
    }
  };
  std::vector<std::thread> threads;
  size_t n = std::min<size_t>(std::max(1, options.files_in_parallel), picked.size());
  for (size_t t = 1; t < n; ++t) threads.emplace_back(worker);
  worker();
  for (std::thread& t : threads) t.join();
  TITAN_RETURN_IF_ERROR(first_error);
  std::set<std::string> dirs;
  for (size_t i : picked) dirs.insert(DirOf(manifest.files[i]));
  for (const std::string& dir : dirs) TITAN_RETURN_IF_ERROR(to.SyncDir(dir));
  return report;
}

void LowerThreadPriorityForCopy() {
  constexpr int kCopyNice = 10;
  if (::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), kCopyNice) != 0) {
    Log(LogLevel::kDebug, "checkpoint", "could not lower a copy thread's priority: errno {}",
        errno);
  }
}

Result<CopyReport> CopyCheckpoint(Storage& from, int64_t step, Storage& to,
                                  const CopyOptions& options) {
  TITAN_ASSIGN_OR_RETURN(ManifestFile source, ReadManifestFile(from, step));
  const Manifest& manifest = source.manifest;
  TITAN_ASSIGN_OR_RETURN(CopyReport report, CopyDataFiles(from, manifest, to, options));

  // The commit protocol of a save (commit.h): every file confirmed, then MANIFEST created.
  TITAN_RETURN_IF_ERROR(to.CreateDir(StepDirName(step)));
  TITAN_RETURN_IF_ERROR(CheckDataFiles(to, manifest));
  TITAN_RETURN_IF_ERROR(CommitManifest(to, manifest, source.bytes, manifest.created_unix_ns));
  TITAN_RETURN_IF_ERROR(to.SyncDir(StepDirName(step)));
  TITAN_ASSIGN_OR_RETURN(std::optional<int64_t> latest, LatestStep(to));
  if (!latest || *latest <= step) {
    TITAN_RETURN_IF_ERROR(to.WriteFileAtomic(std::string(kLatestFile), StepDirName(step) + "\n"));
    TITAN_RETURN_IF_ERROR(to.SyncDir(""));
    report.moved_latest = true;
  }
  return report;
}

}  // namespace titan::checkpoint
