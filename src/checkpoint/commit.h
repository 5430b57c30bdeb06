// The commit point of a checkpoint, one protocol for every path that commits (a save, `titan
// ckpt cp`, the mirror, node-local uploads, a prefetch): nothing is committed before every object
// the MANIFEST names is confirmed, and the MANIFEST is created, not overwritten.
//
//   1. CheckDataFiles: every data file the manifest references exists at the root with at least
//      the bytes the manifest needs (one size query each; on an object store a HEAD: each file
//      was also confirmed by size and ETag when it was written, s3_storage.h).
//   2. CommitManifest: step_N/MANIFEST is created with Storage::CreateFileExclusive. When it
//      exists already:
//        * the same save (save id) committed it: this is a retry whose first answer was lost;
//          done;
//        * an unreadable one (torn, corrupt, hostile) is no checkpoint: replaced;
//        * another save committed it before this one began (`begun_unix_ns`): a job restarted
//          from an older checkpoint saves that step again; replaced, and logged;
//        * another save committed it while this one ran: two jobs write one directory.
//          ALREADY_EXISTS naming both saves; nothing is changed, and the caller's own files
//          stay unreferenced (its cleanup or gc removes them).
// `begun_unix_ns`: when the save began (rank 0's Save call), or for a copy the copied
// checkpoint's own created_unix_ns (a newer checkpoint of a step replaces an older one).
// The times are wall clocks of possibly different machines: a skew larger than the time
// between two saves of one step could make a concurrent writer look like an earlier run.
//
// Thread safety: as the storage's.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "src/base/status.h"
#include "src/checkpoint/manifest.h"
#include "src/checkpoint/storage.h"

namespace titan::checkpoint {

// DATA_LOSS naming the first data file that is missing or shorter than the manifest needs.
Status CheckDataFiles(Storage& root, const Manifest& manifest);

// Creates step_N/MANIFEST with `bytes` (the serialised `manifest`), as above.
Status CommitManifest(Storage& root, const Manifest& manifest, std::string_view bytes,
                      int64_t begun_unix_ns);

}  // namespace titan::checkpoint
