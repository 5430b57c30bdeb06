#include "src/checkpoint/writer.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "src/base/clock.h"
#include "src/base/log.h"
#include "src/checkpoint/commit.h"
#include "src/checkpoint/copy.h"
#include "src/checkpoint/layout.h"
#include "src/checkpoint/parallel_copy.h"
#include "src/checkpoint/planner.h"

namespace titan::checkpoint {

struct CheckpointWriter::Piece {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  std::vector<int64_t> offsets;
  std::vector<int64_t> lengths;
  const char* data;
  uint64_t size_bytes;
};

namespace {

using IndexKey = std::pair<std::pair<uint64_t, uint64_t>, uint64_t>;
IndexKey KeyOf(const Hash128& h, uint64_t size) { return {{h.high, h.low}, size}; }

uint64_t SliceBytes(DType dtype, const std::vector<int64_t>& lengths) {
  return static_cast<uint64_t>(NumElements(lengths)) * DTypeSize(dtype);
}

// Index of `path` in manifest->files, appending it if new.
uint32_t FileIndex(Manifest* manifest, const std::string& path) {
  for (size_t i = 0; i < manifest->files.size(); ++i) {
    if (manifest->files[i] == path) return static_cast<uint32_t>(i);
  }
  manifest->files.push_back(path);
  return static_cast<uint32_t>(manifest->files.size() - 1);
}

TensorEntry* FindOrAddTensor(Manifest* m, const std::string& name, DType dtype,
                             const std::vector<int64_t>& shape) {
  for (TensorEntry& t : m->tensors) {
    if (t.name == name) return &t;
  }
  m->tensors.push_back(TensorEntry{name, dtype, shape, {}});
  return &m->tensors.back();
}

// Merges one rank's done marker into the manifest being built.
Status MergeDone(const Manifest& done, Manifest* merged) {
  for (const TensorEntry& t : done.tensors) {
    TensorEntry* into = FindOrAddTensor(merged, t.name, t.dtype, t.shape);
    if (into->dtype != t.dtype || into->shape != t.shape) {
      return InvalidArgumentError(fmt::format(
          "tensor \"{}\" is {} of shape [{}] on rank {} but {} of shape [{}] on an earlier rank; "
          "every rank must describe a tensor the same way",
          t.name, DTypeName(t.dtype), fmt::join(t.shape, ","), done.rank, DTypeName(into->dtype),
          fmt::join(into->shape, ",")));
    }
    for (const ShardEntry& s : t.shards) {
      bool duplicate = false;
      for (const ShardEntry& existing : into->shards) {
        if (existing.offsets == s.offsets && existing.lengths == s.lengths) duplicate = true;
      }
      if (duplicate) continue;  // the same slice held by several ranks: keep one copy
      ShardEntry copy = s;
      for (ChunkRef& c : copy.chunks) c.file = FileIndex(merged, done.files[c.file]);
      into->shards.push_back(std::move(copy));
    }
  }
  return OkStatus();
}

Status CheckCoverage(const Manifest& m) {
  for (const TensorEntry& t : m.tensors) {
    if (std::optional<std::string> problem = ShardTilingProblem(t)) {
      return FailedPreconditionError(fmt::format(
          "tensor \"{}\" of shape [{}]: the ranks' slices do not tile it ({}); every element "
          "must be saved by exactly one rank's slice (do all ranks pass the same replicated "
          "tensors and their Shard of each sharded one?)",
          t.name, fmt::join(t.shape, ","), *problem));
    }
  }
  return OkStatus();
}

}  // namespace

CheckpointWriter::CheckpointWriter(std::shared_ptr<Storage> storage)
    : storage_(std::move(storage)) {}

CheckpointWriter::~CheckpointWriter() {
  Status status = Wait();
  if (!status.ok()) {
    Log(LogLevel::kError, "checkpoint", "the last checkpoint save failed: {}", status.ToString());
  }
}

Status CheckpointWriter::Wait() {
  if (worker_.joinable()) worker_.join();
  Status status = worker_status_;
  worker_status_ = OkStatus();
  return status;
}

void CheckpointWriter::SeedIndex(const Manifest& manifest) {
  for (const TensorEntry& t : manifest.tensors) {
    for (const ShardEntry& s : t.shards) {
      for (const ChunkRef& c : s.chunks) {
        index_[KeyOf(c.hash, c.size_bytes)] =
            ChunkLocation{manifest.files[c.file], c.offset, c.size_bytes, c.hash};
      }
    }
  }
}

Status CheckpointWriter::Validate(const std::vector<TensorToSave>& tensors,
                                  const SaveOptions& options) const {
  if (options.world_size < 1 || options.rank < 0 || options.rank >= options.world_size) {
    return InvalidArgumentError(
        fmt::format("rank {} is not in [0, world size {})", options.rank, options.world_size));
  }
  if (!IsValidSaveId(options.save_id)) {
    return InvalidArgumentError(
        fmt::format("save id \"{}\" must be 1-32 characters [a-z0-9]", options.save_id));
  }
  if (options.chunk_bytes < 4096 || options.chunk_bytes > kMaxChunkBytes) {
    return InvalidArgumentError("chunk_bytes must be in [4 KiB, 1 GiB]");
  }
  if (!options.items.is_object() || !options.layout.is_object()) {
    return InvalidArgumentError("items and layout must be JSON objects");
  }
  std::set<std::string_view> names;
  for (const TensorToSave& t : tensors) {
    if (t.name.empty() || t.name.size() > 4096) {
      return InvalidArgumentError("tensor names must have 1 to 4096 characters");
    }
    if (!names.insert(t.name).second) {
      return InvalidArgumentError(fmt::format("tensor \"{}\" is given twice", t.name));
    }
    if (t.shape.size() > static_cast<size_t>(kMaxRank) || t.offsets.size() != t.shape.size() ||
        t.lengths.size() != t.shape.size()) {
      return InvalidArgumentError(fmt::format(
          "tensor \"{}\": shape, offsets and lengths must have the same rank (at most {})", t.name,
          kMaxRank));
    }
    for (size_t d = 0; d < t.shape.size(); ++d) {
      if (t.offsets[d] < 0 || t.lengths[d] < 0 || t.offsets[d] + t.lengths[d] > t.shape[d]) {
        return InvalidArgumentError(fmt::format(
            "tensor \"{}\": slice [{} + {}) exceeds the global shape {} in dimension {}", t.name,
            t.offsets[d], t.lengths[d], t.shape[d], d));
      }
      if (t.replicated && (t.offsets[d] != 0 || t.lengths[d] != t.shape[d])) {
        return InvalidArgumentError(fmt::format(
            "tensor \"{}\" is marked replicated but is only a slice of its global shape", t.name));
      }
    }
    if (NumElements(t.shape) < 0) {
      return InvalidArgumentError(fmt::format("tensor \"{}\" is absurdly large", t.name));
    }
    if (t.data == nullptr && SliceBytes(t.dtype, t.lengths) > 0) {
      return InvalidArgumentError(fmt::format("tensor \"{}\" has no data", t.name));
    }
  }
  return OkStatus();
}

Status CheckpointWriter::Save(int64_t step, std::vector<TensorToSave> tensors,
                              SaveOptions options) {
  TITAN_RETURN_IF_ERROR_CTX(Wait(), "the previous checkpoint save failed");
  int64_t start_ns = MonoNowNs();
  save_begun_unix_ns_ = WallNowNs();
  if (step < 0) return InvalidArgumentError(fmt::format("step {} is negative", step));
  if (step > kMaxStep) {
    // Refused here: a step directory of more digits would never be found, and the commit would
    // wait its whole timeout for a checkpoint it cannot see.
    return InvalidArgumentError(
        fmt::format("step {} is larger than the largest checkpoint step {}", step, kMaxStep));
  }
  TITAN_RETURN_IF_ERROR(Validate(tensors, options));

  // Plan the pieces this rank writes.
  pieces_.clear();
  std::vector<PlanInput> replicated;
  std::vector<size_t> replicated_index;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorToSave& t = tensors[i];
    if (t.replicated) {
      replicated.push_back(PlanInput{t.name, t.dtype, t.shape});
      replicated_index.push_back(i);
    } else {
      pieces_.push_back(Piece{t.name, t.dtype, t.shape, t.offsets, t.lengths,
                              static_cast<const char*>(t.data), SliceBytes(t.dtype, t.lengths)});
    }
  }
  for (const PlannedPiece& p :
       PlanReplicated(replicated, options.world_size, 4 * options.chunk_bytes)) {
    if (p.owner != options.rank) continue;
    const TensorToSave& t = tensors[replicated_index[p.input]];
    uint64_t row_bytes =
        t.shape.empty() ? 0 : SliceBytes(t.dtype, t.shape) / std::max<int64_t>(t.shape[0], 1);
    uint64_t begin = t.shape.empty() ? 0 : static_cast<uint64_t>(p.offsets[0]) * row_bytes;
    pieces_.push_back(Piece{t.name, t.dtype, t.shape, p.offsets, p.lengths,
                            static_cast<const char*>(t.data) + begin,
                            SliceBytes(t.dtype, p.lengths)});
  }

  stats_ = SaveStats{};
  stats_.step = step;
  if (options.async) {
    uint64_t total = 0;
    for (const Piece& p : pieces_) total += p.size_bytes;
    if (total > staging_bytes_) {
      staging_.reset(new char[total]);
      staging_bytes_ = total;
    }
    uint64_t at = 0;
    std::vector<CopySpan> copies;
    copies.reserve(pieces_.size());
    for (Piece& p : pieces_) {
      copies.push_back(CopySpan{staging_.get() + at, p.data, p.size_bytes});
      p.data = staging_.get() + at;
      at += p.size_bytes;
    }
    ParallelCopy(copies, options.staging_threads);
    stats_.staged_bytes = total;
    stats_.blocking_ns = MonoNowNs() - start_ns;
    worker_ = std::thread([this, step, options = std::move(options)] {
      worker_status_ = WriteAndCommit(step, pieces_, options);
    });
    return OkStatus();
  }
  Status status = WriteAndCommit(step, pieces_, options);
  stats_.blocking_ns = MonoNowNs() - start_ns;
  return status;
}

Status CheckpointWriter::WriteAndCommit(int64_t step, const std::vector<Piece>& pieces,
                                        const SaveOptions& options) {
  std::string where = commit_root().Describe(StepDirName(step));
  Manifest done;
  int64_t write_start_ns = MonoNowNs();
  Status status = WriteRankData(step, pieces, options, &done);
  stats_.write_ns = MonoNowNs() - write_start_ns;
  if (!status.ok()) {
    // Give back the space (a full disk is the usual cause); nothing references this file.
    storage_->RemoveFile(DataFilePath(step, options.rank, options.save_id)).IgnoreError();
    index_.clear();  // what the index points to may not exist: the next save is a full one
    return status.WithContext(fmt::format("saving checkpoint {} (rank {})", where, options.rank));
  }
  if (commit_store_) {
    PruneLocal(options.rank, options.retention.keep_last > 0 ? options.retention.keep_last : 2);
  }
  if (options.rank != 0) {
    if (on_saved_) on_saved_(stats_);
    return OkStatus();
  }
  int64_t commit_start_ns = MonoNowNs();
  status = Commit(step, options);
  stats_.commit_ns = MonoNowNs() - commit_start_ns;
  if (!status.ok()) {
    index_.clear();
    RemoveUncommitted(step, options.save_id);
    return status.WithContext(fmt::format("committing checkpoint {}", where));
  }
  stats_.committed = true;
  if (on_saved_) on_saved_(stats_);
  if (mirror_) mirror_->Submit(step, options.retention);
  if (options.retention.keep_last > 0) {
    Result<GcReport> gc = CollectGarbage(commit_root(), options.retention, /*dry_run=*/false);
    if (!gc.ok()) {
      Log(LogLevel::kWarning, "checkpoint",
          "retention after step {} failed (checkpoint is "
          "committed): {}",
          step, gc.status().ToString());
    } else {
      for (const std::string& why : gc->skipped) {
        Log(LogLevel::kWarning, "checkpoint", "retention after step {}: {}", step, why);
      }
    }
  }
  return OkStatus();
}

Status CheckpointWriter::WriteRankData(int64_t step, const std::vector<Piece>& pieces,
                                       const SaveOptions& options, Manifest* done) {
  TITAN_RETURN_IF_ERROR(storage_->CreateDir(StepDirName(step)));
  done->kind = "rank_done";
  done->step = step;
  done->world_size = options.world_size;
  done->rank = options.rank;
  done->save_id = options.save_id;
  done->created_unix_ns = WallNowNs();
  done->items = options.items;
  if (options.rank == 0) done->layout = options.layout;
  std::string data_path = DataFilePath(step, options.rank, options.save_id);
  std::unique_ptr<WritableFile> file;
  std::map<IndexKey, ChunkLocation> new_index;
  for (const Piece& p : pieces) {
    TensorEntry* t = FindOrAddTensor(done, p.name, p.dtype, p.shape);
    ShardEntry shard{p.offsets, p.lengths, {}};
    for (uint64_t at = 0; at < p.size_bytes; at += options.chunk_bytes) {
      uint64_t size = std::min(options.chunk_bytes, p.size_bytes - at);
      Hash128 hash = HashBytes(p.data + at, size);
      IndexKey key = KeyOf(hash, size);
      ChunkLocation location;
      bool reuse = false;
      if (options.incremental) {
        auto found = index_.find(key);
        if (found != index_.end()) {
          location = found->second;
          reuse = true;
        } else if (auto same = new_index.find(key); same != new_index.end()) {
          location = same->second;  // identical chunks within this save
          reuse = true;
        }
      }
      if (reuse) {
        stats_.referenced_bytes += size;
      } else {
        if (!file) {
          TITAN_ASSIGN_OR_RETURN(file, storage_->NewBulkFile(data_path));
        }
        location = ChunkLocation{data_path, file->size_bytes(), size, hash};
        TITAN_RETURN_IF_ERROR(file->Append(p.data + at, size));
        stats_.written_bytes += size;
      }
      new_index[key] = location;
      shard.chunks.push_back(ChunkRef{FileIndex(done, location.path), location.offset, size, hash});
    }
    t->shards.push_back(std::move(shard));
  }
  if (file) {
    TITAN_RETURN_IF_ERROR(file->Sync());
    TITAN_RETURN_IF_ERROR(file->Close());
  }
  if (commit_store_) {
    TITAN_RETURN_IF_ERROR(Upload(*done, options));
    TITAN_RETURN_IF_ERROR(commit_store_->CreateDir(StepDirName(step)));
  }
  TITAN_RETURN_IF_ERROR(
      commit_root().WriteFileAtomic(DonePath(step, options.rank), SerializeManifest(*done)));
  index_ = std::move(new_index);
  return OkStatus();
}

Status CheckpointWriter::Upload(const Manifest& done, const SaveOptions& options) {
  // Every file the marker references, not only this save's: the store must hold what an
  // incremental save references, and files it already holds are skipped after one size check.
  // On a thread of its own at the copy's lower priority (the mirror's too), as it yields the
  // CPU to training.
  Result<CopyReport> copied = InternalError("the upload thread did not run");
  std::thread upload([&] {
    LowerThreadPriorityForCopy();
    copied = CopyDataFiles(*storage_, done, *commit_store_);
  });
  upload.join();
  if (!copied.ok()) {
    return copied.status().WithContext(
        fmt::format("uploading rank {}'s data to {}", options.rank, commit_store_->Describe("")));
  }
  return OkStatus();
}

void CheckpointWriter::PruneLocal(int rank, int keep) {
  Result<std::vector<std::string>> names = storage_->ListDir("");
  if (!names.ok()) return;
  std::vector<int64_t> steps;
  for (const std::string& name : *names) {
    int64_t step = 0;
    if (ParseStepDirName(name, &step)) steps.push_back(step);
  }
  std::sort(steps.rbegin(), steps.rend());
  for (size_t i = static_cast<size_t>(keep); i < steps.size(); ++i) {
    std::string dir = StepDirName(steps[i]);
    Result<std::vector<std::string>> files = storage_->ListDir(dir);
    if (!files.ok()) continue;
    for (const std::string& file : *files) {
      if (DataFileRank(file) != rank) continue;  // another rank of this node prunes its own
      Status removed = storage_->RemoveFile(dir + "/" + file);
      if (!removed.ok()) {
        Log(LogLevel::kWarning, "checkpoint", "pruning the local cache: {}", removed.ToString());
      }
    }
    storage_->RemoveDir(dir).IgnoreError();  // not empty while other ranks' files remain
  }
}

void CheckpointWriter::RemoveUncommitted(int64_t step, const std::string& save_id) {
  Storage& root = commit_root();
  // Another save's MANIFEST (two jobs in one directory): only this save's data files go.
  bool others_committed = false;
  if (root.FileSize(ManifestPath(step)).ok()) {
    Result<Manifest> committed = ReadManifest(root, step);
    if (!committed.ok() || committed->save_id == save_id) return;  // committed after all
    others_committed = true;
  }
  std::string dir = StepDirName(step);
  Result<std::vector<std::string>> files = root.ListDir(dir);
  if (!files.ok()) return;
  for (const std::string& file : *files) {
    if (others_committed && file.find("-" + save_id + ".data") == std::string::npos) continue;
    Status removed = root.RemoveFile(dir + "/" + file);
    if (!removed.ok()) {
      Log(LogLevel::kWarning, "checkpoint", "cleaning up the failed save: {}", removed.ToString());
    }
  }
  root.RemoveDir(dir).IgnoreError();  // not empty if another rank is still writing
}

Status CheckpointWriter::Commit(int64_t step, const SaveOptions& options) {
  Storage& root = commit_root();
  int64_t deadline_ns =
      MonoNowNs() + static_cast<int64_t>(options.commit_timeout_seconds * kNsPerSecond);
  Manifest merged;
  merged.step = step;
  merged.world_size = options.world_size;
  merged.save_id = options.save_id;
  merged.created_unix_ns = WallNowNs();
  merged.items = options.items;
  merged.layout = options.layout;
  int64_t sleep_us = 1000;
  for (int rank = 0; rank < options.world_size; ++rank) {
    std::string path = DonePath(step, rank);
    while (true) {
      Result<std::string> bytes = root.ReadFile(path, kMaxManifestBytes);
      if (bytes.ok()) {
        Result<Manifest> done = ParseManifest(*bytes, root.Describe(path));
        if (done.ok() && done->kind == "rank_done" && done->save_id == options.save_id &&
            done->step == step && done->rank == rank && done->world_size == options.world_size) {
          TITAN_RETURN_IF_ERROR(MergeDone(*done, &merged));
          merged.rank_items.push_back(done->items);
          break;
        }
        // A marker of an earlier, interrupted attempt at this step: wait for the new one.
      }
      if (MonoNowNs() > deadline_ns) {
        return DeadlineExceededError(fmt::format(
            "rank {} did not finish its part of save {} within {} s (no {} with this save id); "
            "is that rank alive and saving the same step?",
            rank, options.save_id, options.commit_timeout_seconds, root.Describe(path)));
      }
      std::this_thread::sleep_for(std::chrono::microseconds(sleep_us));
      sleep_us = std::min<int64_t>(sleep_us * 2, 50'000);
    }
  }
  TITAN_RETURN_IF_ERROR(CheckCoverage(merged));
  // Every referenced byte must exist (files of earlier checkpoints may have been removed).
  TITAN_RETURN_IF_ERROR(CheckDataFiles(root, merged));
  TITAN_RETURN_IF_ERROR(
      CommitManifest(root, merged, SerializeManifest(merged), save_begun_unix_ns_));
  TITAN_RETURN_IF_ERROR(root.WriteFileAtomic(std::string(kLatestFile), StepDirName(step) + "\n"));
  for (int rank = 0; rank < options.world_size; ++rank) {
    root.RemoveFile(DonePath(step, rank)).IgnoreError();
  }
  return OkStatus();
}

}  // namespace titan::checkpoint
