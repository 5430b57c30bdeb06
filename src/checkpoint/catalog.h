// What a checkpoint root holds: committed checkpoints, "latest", retention and garbage
// collection. A checkpoint is committed exactly when step_N/MANIFEST exists; "latest" names the
// newest commit and is only ever rewritten (atomically) after a commit.
//
// Reference-aware cleanup: a checkpoint that is dropped loses its MANIFEST first (so it is never
// half-visible); its data files are removed only when no remaining manifest references them
// (incremental checkpoints reference chunks of older ones), otherwise they stay until the last
// referencing checkpoint is gone.
// Thread safety: functions are safe to call concurrently on different roots. Only one process
// (rank 0 of the job, or `titan ckpt gc`) should apply retention to a root at a time.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "src/base/status.h"
#include "src/checkpoint/manifest.h"
#include "src/checkpoint/storage.h"

namespace titan::checkpoint {

// Steps that have a MANIFEST, ascending. The manifests are not parsed here.
Result<std::vector<int64_t>> ListCommittedSteps(Storage& storage);

// The step "latest" names if that checkpoint is committed, else the newest committed step;
// nullopt when there is none.
Result<std::optional<int64_t>> LatestStep(Storage& storage);

// Reads and validates step_N/MANIFEST. A read that does not parse as a whole manifest (cut
// short or garbled by the store or the network: DATA_LOSS) is read again, up to 3 reads 50 and
// 100 ms apart, before its DATA_LOSS is returned.
Result<Manifest> ReadManifest(Storage& storage, int64_t step);
// The same, with the bytes read (a copy commits them verbatim).
struct ManifestFile {
  std::string bytes;
  Manifest manifest;
};
Result<ManifestFile> ReadManifestFile(Storage& storage, int64_t step);

struct RetentionPolicy {
  int keep_last = 0;   // keep the newest K committed checkpoints; 0: keep all
  int keep_every = 0;  // also keep steps divisible by N; 0: none
};

struct GcReport {
  std::vector<int64_t> dropped_steps;      // checkpoints un-committed by retention
  std::vector<std::string> removed_files;  // paths relative to the root
  uint64_t removed_bytes = 0;
  std::vector<std::string> kept_referenced;  // files of dropped checkpoints still referenced
  std::vector<std::string> aborted_writes;   // incomplete uploads removed (object stores)
  // "path: why" of each entry gc would have cleaned but left alone: a step directory that is a
  // symbolic link, anything but a regular file inside one (Storage::KindOf), or a file the
  // storage refused to remove. Not errors: the rest is cleaned, so one stray entry cannot stop
  // retention for good.
  std::vector<std::string> skipped;
};

// Applies `policy` (which may keep everything) and then removes what is unreferenced: data
// files of dropped checkpoints that no committed manifest references, stale "done" markers and
// temporary files, directories left empty, and (object stores) incomplete uploads there. Only
// directories without a MANIFEST and with a step below the latest committed one are cleaned (newer
// ones may be saves in flight), unless `newer_uncommitted`: then also those above it (what a save
// killed before its commit leaves; only when no job is saving to this root). With dry_run
// nothing is changed and the report says what would be removed.
Result<GcReport> CollectGarbage(Storage& storage, const RetentionPolicy& policy, bool dry_run,
                                bool newer_uncommitted = false);

}  // namespace titan::checkpoint
